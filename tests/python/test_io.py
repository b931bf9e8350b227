"""sluice.io.TFRecordWriter (tf.io.TFRecordWriter) and sluice.io.serialize_example:
round trips through sluice.data.TFRecordDataset, the framing bytes, errors."""
import gzip
import struct
import zlib

import numpy as np
import pytest

import sluice
from sluice.data import TFRecordDataset


def _crc_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


_CRC_TABLE = _crc_table()


def _crc32c(data):
    """CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), one byte at a time:
    independent of sluice's (hardware or slicing-by-8) one."""
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked_crc(data):
    crc = _crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _frame(record):
    """TensorFlow's framing: uint64 length, masked crc of it, data, masked crc of data."""
    length = struct.pack("<Q", len(record))
    return (length + struct.pack("<I", _masked_crc(length)) + record
            + struct.pack("<I", _masked_crc(record)))


def test_crc32c_reference():
    assert _crc32c(b"123456789") == 0xE3069283  # the standard check value


def test_bytes_equal_tensorflow_framing(tmp_path):
    path = tmp_path / "r.tfrecord"
    records = [b"abc", b"", bytes(range(256))]
    with sluice.io.TFRecordWriter(path) as w:
        for r in records:
            w.write(r)
    data = path.read_bytes()
    assert data == b"".join(_frame(r) for r in records)
    # The first record's 23 bytes, spelled out: length 3, masked crcs.
    assert data[:8] == b"\x03\x00\x00\x00\x00\x00\x00\x00"
    assert len(data) == sum(16 + len(r) for r in records)


@pytest.mark.parametrize("options,name", [
    (None, ""), ("", ""), ("GZIP", "GZIP"), ("ZLIB", "ZLIB"),
    (sluice.io.TFRecordOptions(compression_type="GZIP"), "GZIP"),
    (sluice.io.TFRecordOptions("ZLIB"), "ZLIB"), (sluice.io.TFRecordOptions(), "")])
def test_round_trip(tmp_path, options, name):
    path = str(tmp_path / "r.tfrecord")
    big = np.random.default_rng(1).integers(0, 256, 300 << 10, dtype=np.uint8).tobytes()
    records = [b"first", b"", big, "text \u00e9", bytearray(b"ba"), memoryview(b"mv")]
    w = sluice.io.TFRecordWriter(path, options)
    for r in records:
        w.write(r)
    w.close()
    want = [r.encode() if isinstance(r, str) else bytes(r) for r in records]
    assert list(TFRecordDataset(path, compression_type=name)) == want
    raw = open(path, "rb").read()
    framed = b"".join(_frame(r) for r in want)
    if name == "GZIP":
        assert gzip.decompress(raw) == framed
    elif name == "ZLIB":
        assert zlib.decompress(raw) == framed
    else:
        assert raw == framed


def test_context_manager_closes_and_close_is_idempotent(tmp_path):
    path = tmp_path / "r.gz"
    with sluice.io.TFRecordWriter(str(path), "GZIP") as w:
        w.write(b"x")
    assert gzip.decompress(path.read_bytes()) == _frame(b"x")  # the gzip stream is complete
    w.close()
    w.close()
    with pytest.raises(sluice.FailedPreconditionError, match="after Close"):
        w.write(b"late")
    with pytest.raises(sluice.FailedPreconditionError):
        w.flush()
    # An exception in the block still closes the file.
    with pytest.raises(RuntimeError):
        with sluice.io.TFRecordWriter(str(path), "GZIP") as w2:
            w2.write(b"y")
            raise RuntimeError("boom")
    assert list(TFRecordDataset(str(path), compression_type="GZIP")) == [b"y"]


def test_flush_makes_records_visible(tmp_path):
    path = str(tmp_path / "r")
    w = sluice.io.TFRecordWriter(path)
    w.write(b"a")
    w.write(b"b")
    w.flush()
    assert list(TFRecordDataset(path)) == [b"a", b"b"]
    w.close()


def test_errors_name_the_file(tmp_path):
    with pytest.raises(sluice.NotFoundError, match="/nonexistent-dir/x.tfrecord"):
        sluice.io.TFRecordWriter("/nonexistent-dir/x.tfrecord")
    with pytest.raises(sluice.InvalidArgumentError, match="LZ4"):
        sluice.io.TFRecordWriter(str(tmp_path / "r"), "LZ4")
    with pytest.raises(TypeError):
        sluice.io.TFRecordWriter(str(tmp_path / "r"), 3)
    w = sluice.io.TFRecordWriter(str(tmp_path / "r"))
    with pytest.raises(TypeError):
        w.write(12)


def test_serialize_example_parses_back(tmp_path):
    path = str(tmp_path / "ex.tfrecord")
    with sluice.io.TFRecordWriter(path) as w:
        for i in range(5):
            w.write(sluice.io.serialize_example({
                "x": [3 * i, 3 * i + 1, 3 * i + 2],
                "label": i,
                "w": np.array([0.5, i], dtype=np.float64),
                "name": "n%d" % i,
                "flag": True,
                "tags": [b"a", "b"],
            }))
    features = {"x": sluice.io.FixedLenFeature([3], "int64"),
                "label": sluice.io.FixedLenFeature([], np.int64),
                "w": sluice.io.FixedLenFeature([2], np.float32),
                "name": sluice.io.FixedLenFeature([], "string"),
                "flag": sluice.io.FixedLenFeature([], "int64"),
                "tags": sluice.io.VarLenFeature("string")}
    got = list(TFRecordDataset(path).map(sluice.io.parse_example(features)))
    assert len(got) == 5
    assert list(got[4]["x"]) == [12, 13, 14]
    assert got[4]["label"] == 4
    np.testing.assert_array_equal(got[4]["w"], np.array([0.5, 4], np.float32))
    assert got[4]["name"] == b"n4" and got[4]["flag"] == 1
    assert list(got[0]["tags"]) == [b"a", b"b"]


def test_serialize_example_is_deterministic_and_checks_types():
    a = sluice.io.serialize_example({"b": 1, "a": [1.5]})
    b = sluice.io.serialize_example({"a": 1.5, "b": np.int64(1)})
    assert a == b and isinstance(a, bytes)
    # A hand-encoded Example: features { feature { key: "k" value { int64_list { value: 1 }}}}
    feature = b"\x1a\x03\x0a\x01\x01"  # Feature: int64_list (3), packed value 1
    entry = b"\x0a\x01k" + b"\x12" + bytes([len(feature)]) + feature
    features = b"\x0a" + bytes([len(entry)]) + entry
    assert sluice.io.serialize_example({"k": 1}) == b"\x0a" + bytes([len(features)]) + features
    with pytest.raises(ValueError, match="empty list"):
        sluice.io.serialize_example({"k": []})
    assert sluice.io.serialize_example({"k": np.array([], np.int64)})
    with pytest.raises(TypeError, match="mixes"):
        sluice.io.serialize_example({"k": [1, b"x"]})
    with pytest.raises(TypeError):
        sluice.io.serialize_example({"k": np.array([1 + 2j])})
    with pytest.raises(ValueError, match="int64"):
        sluice.io.serialize_example({"k": np.array([2**63], np.uint64)})
