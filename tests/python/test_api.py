"""The tf.data-shaped Python API: sources, transformations, structure, options, kernels."""
import gzip

import numpy as np
import pytest

import sluice
from sluice.data import AUTOTUNE, Dataset
from conftest import FASHION, SOURCE_DIR, need


def test_range_and_structure():
    assert list(Dataset.range(5)) == [0, 1, 2, 3, 4]
    assert list(Dataset.range(2, 10, 3).as_numpy_iterator()) == [2, 5, 8]
    x = next(iter(Dataset.range(1)))
    assert isinstance(x, np.int64)
    assert Dataset.range(7).cardinality() == 7
    assert Dataset.range(7).repeat().cardinality() == sluice.data.INFINITE_CARDINALITY
    assert len(Dataset.range(7).batch(2)) == 4
    spec = Dataset.range(3).batch(2).element_spec
    assert spec.dtype == "int64" and spec.shape == (None,)


def test_from_tensor_slices_dict_tuple_strings():
    images = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    labels = np.array([3, 1, 4, 1])
    out = list(Dataset.from_tensor_slices({"image": images, "label": labels}))
    assert [sorted(e) for e in out] == [["image", "label"]] * 4
    np.testing.assert_array_equal(out[2]["image"], images[2])
    assert out[3]["label"] == 1
    pairs = list(Dataset.from_tensor_slices((images, labels)).batch(3))
    assert isinstance(pairs[0], tuple) and pairs[0][0].shape == (3, 2, 3)
    np.testing.assert_array_equal(pairs[1][1], labels[3:])
    words = list(Dataset.from_tensor_slices(["a", "bb", "ccc"]))
    assert words == [b"a", b"bb", b"ccc"]
    batch = next(iter(Dataset.from_tensor_slices(["a", "bb", "ccc"]).batch(3)))
    assert batch.dtype == object and list(batch) == [b"a", b"bb", b"ccc"]
    spec = Dataset.from_tensor_slices({"image": images, "label": labels}).element_spec
    assert spec["image"].shape == (2, 3) and spec["image"].dtype == "float32"


def test_transformations_match_python():
    ds = (Dataset.range(100).filter(sluice.compare("greater_equal", 10)).skip(5)
          .take(50).shard(2, 1).batch(4, drop_remainder=True))
    expected = list(range(15, 65))[1::2]
    got = np.concatenate(list(ds)).tolist()
    assert got == expected[:len(expected) // 4 * 4]
    assert list(Dataset.range(3).concatenate(Dataset.range(2))) == [0, 1, 2, 0, 1]
    z = list(Dataset.zip(Dataset.range(3), Dataset.range(10, 13)))
    assert [tuple(map(int, t)) for t in z] == [(0, 10), (1, 11), (2, 12)]
    e = list(Dataset.range(5, 8).enumerate())
    assert [tuple(map(int, t)) for t in e] == [(0, 5), (1, 6), (2, 7)]
    assert sorted(Dataset.range(50).shuffle(50, seed=1)) == list(range(50))
    assert list(Dataset.range(50).shuffle(50, seed=1)) == list(Dataset.range(50).shuffle(50, seed=1))
    assert list(Dataset.range(50).shuffle(50, seed=1)) != list(range(50))
    u = list(Dataset.range(6).batch(4).unbatch())
    assert u == list(range(6))
    w = list(Dataset.range(5).cache().repeat(2))
    assert w == [0, 1, 2, 3, 4] * 2
    pb = list(Dataset.from_tensor_slices(np.arange(3)).map(lambda x: np.arange(x + 1))
              .padded_batch(3))
    np.testing.assert_array_equal(pb[0], [[0, 0, 0], [0, 1, 0], [0, 1, 2]])


def test_parallel_map_kernels_and_prefetch():
    ds = (Dataset.range(1000).map(sluice.cast("float32"), num_parallel_calls=AUTOTUNE,
                                  deterministic=True)
          .batch(100, num_parallel_calls=2).prefetch(AUTOTUNE))
    out = np.concatenate(list(ds))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.arange(1000, dtype=np.float32))


def test_interleave_with_python_function():
    ds = Dataset.range(3).interleave(
        lambda x: Dataset.range(int(x) * 10, int(x) * 10 + 3), cycle_length=3, block_length=1)
    assert list(ds) == [0, 10, 20, 1, 11, 21, 2, 12, 22]
    par = Dataset.range(3).interleave(
        lambda x: Dataset.range(int(x) * 10, int(x) * 10 + 3), cycle_length=3,
        num_parallel_calls=2, deterministic=True)
    assert list(par) == [0, 10, 20, 1, 11, 21, 2, 12, 22]


def test_options_roundtrip():
    o = sluice.data.Options()
    o.deterministic = False
    o.autotune.cpu_budget = 2
    o.autotune.ram_budget = 1 << 28
    o.optimization.map_fusion = False
    ds = Dataset.range(10).with_options(o)
    back = ds.options()
    assert back.deterministic is False
    assert back.autotune.cpu_budget == 2 and back.autotune.ram_budget == 1 << 28
    assert back.optimization.map_fusion is False
    assert back.optimization.inject_prefetch is None
    assert back == o
    assert list(ds.map(lambda x: x + 1)) == list(range(1, 11))
    with pytest.raises(AttributeError):
        o.autotune.cpu_budgett = 3


def test_kernel_objects():
    names = sluice.kernel_names()
    for k in ["decode_jpeg", "normalize", "parse_example", "tokenize", "cast"]:
        assert k in names
    f = sluice.image.normalize(mean=0.5, std=0.25, layout="HWC")
    assert f.serializable and not f.stateful and f.name == "normalize"
    img = np.full((2, 2, 1), 255, np.uint8)
    np.testing.assert_allclose(f(img), np.full((2, 2, 1), 2.0, np.float32))
    with pytest.raises(sluice.NotFoundError, match="no_such_kernel"):
        sluice.kernel("no_such_kernel")
    with pytest.raises(sluice.InvalidArgumentError, match="normalize"):
        sluice.kernel("normalize", mean="x", std=1.0)
    with pytest.raises(ValueError):  # InvalidArgumentError is a ValueError
        sluice.image.normalize(mean=[0.1] * 9, std=1.0)


@need(SOURCE_DIR / "data/imagenet/train")
def test_decode_jpeg_matches_pil():
    from PIL import Image
    files = sorted((SOURCE_DIR / "data/imagenet/train").glob("*/*.JPEG"))[:3]
    ds = (sluice.data.Dataset.from_tensor_slices([str(f) for f in files])
          .map(sluice.io.read_file()).map(sluice.image.decode_jpeg(channels=3)))
    for f, img in zip(files, ds):
        ref = np.asarray(Image.open(f).convert("RGB"))
        np.testing.assert_array_equal(img, ref)


@need(SOURCE_DIR / "data/imagenet/tfrecord")
def test_tfrecord_parse_example_and_list_files():
    pattern = str(SOURCE_DIR / "data/imagenet/tfrecord/train-*")
    files = list(Dataset.list_files(pattern, shuffle=False))
    assert len(files) == 8 and files == sorted(files)
    features = {"image/encoded": sluice.io.FixedLenFeature([], "string"),
                "image/class/label": sluice.io.FixedLenFeature([], np.int64)}
    ds = (sluice.data.TFRecordDataset([f.decode() for f in files], num_parallel_reads=4)
          .map(sluice.io.parse_example(features)).take(5))
    for e in ds:
        assert e["image/encoded"][:2] == b"\xff\xd8"
        assert 0 <= e["image/class/label"] < 100


def test_text_line_dataset(tmp_path):
    p = tmp_path / "a.txt"
    p.write_text("one two\nthree\n\nfour five six\n")
    assert list(sluice.data.TextLineDataset(str(p))) == [b"one two", b"three", b"", b"four five six"]
    gz = tmp_path / "b.txt.gz"
    with gzip.open(gz, "wt") as f:
        f.write("x\ny\n")
    assert list(sluice.data.TextLineDataset([gz], compression_type="GZIP")) == [b"x", b"y"]


@need(FASHION)
def test_idx_matches_file():
    with gzip.open(FASHION / "t10k-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read()[8:], np.uint8)
    got = np.concatenate(list(Dataset.idx(FASHION / "t10k-labels-idx1-ubyte.gz").batch(1000)))
    np.testing.assert_array_equal(got, labels)


def test_reduce_and_scan():
    assert Dataset.range(10).reduce(np.int64(0), lambda s, x: s + x) == 45
    sc = list(Dataset.range(4).scan(np.int64(0), lambda s, x: (s + x, s + x)))
    assert sc == [0, 1, 3, 6]
