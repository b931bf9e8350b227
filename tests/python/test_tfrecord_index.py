"""TFRecord offset indexes from Python and the CLI: sluice.io.build_tfrecord_index and
`sluice index` make TFRecordDataset serve rows, so global_shuffle and shuffle(len) run over
it as an index shuffle; a corrupt index fails with DataLossError naming the file."""
import subprocess

import pytest

import sluice
from sluice.data import TFRecordDataset
from conftest import BUILD_DIR


def write(path, records):
    with sluice.io.TFRecordWriter(str(path)) as w:
        for r in records:
            w.write(r)


def records(ds):
    return [bytes(x) for x in ds.as_numpy_iterator()]


def test_python_index_enables_global_shuffle(tmp_path):
    files = [tmp_path / f"part-{k}" for k in range(2)]
    want = []
    for k, f in enumerate(files):
        recs = [b"r%d-%d" % (k, i) for i in range(50 + k)]
        write(f, recs)
        want += recs
    with pytest.raises(sluice.InvalidArgumentError, match="TFRecord"):
        TFRecordDataset([str(f) for f in files]).global_shuffle(seed=1)
    assert sluice.io.build_tfrecord_index([str(f) for f in files]) == [50, 51]
    ds = TFRecordDataset([str(f) for f in files])
    assert len(ds) == 101
    got = records(ds.global_shuffle(seed=1))
    assert got != want and sorted(got) == sorted(want)
    assert sorted(records(ds.shuffle(101, seed=2))) == sorted(want)
    assert records(ds.skip(10).take(5)) == want[10:15]
    assert sorted(records(ds.skip(10).take(5).global_shuffle(seed=3))) == sorted(want[10:15])


def test_cli_index_and_corrupt_index(tmp_path):
    f = tmp_path / "a.tfrecord"
    write(f, [b"x" * i for i in range(1, 21)])
    out = subprocess.run([str(BUILD_DIR / "sluice"), "index", str(f)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "20 records" in out.stdout
    check = subprocess.run([str(BUILD_DIR / "sluice"), "index", "--check", str(f)],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr
    assert len(TFRecordDataset(str(f))) == 20
    index = tmp_path / "a.tfrecord.index"
    b = bytearray(index.read_bytes())
    b[50] ^= 0xFF
    index.write_bytes(bytes(b))
    with pytest.raises(sluice.DataLossError, match="a.tfrecord.index"):
        TFRecordDataset(str(f))
    bad = subprocess.run([str(BUILD_DIR / "sluice"), "index", "--check", str(f)],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "a.tfrecord.index" in bad.stderr
