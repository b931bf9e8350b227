"""The same pipelines built with the Python API and with the C++ API (the helper
sluice_py_parity_helper) produce the same elements, byte for byte."""
import os
import struct
import subprocess
import zlib

import numpy as np
import pytest

import sluice
from sluice.data import AUTOTUNE, Dataset
from conftest import BUILD_DIR, FASHION, SOURCE_DIR

HELPER = BUILD_DIR / "sluice_py_parity_helper"


def crc(v):
    if isinstance(v, bytes):
        v = np.array(v, dtype=object)
    a = np.asarray(v)
    if a.dtype == object:
        c = 0
        for s in a.ravel():
            c = zlib.crc32(struct.pack("<Q", len(s)), c)
            c = zlib.crc32(s, c)
        return c
    return zlib.crc32(np.ascontiguousarray(a).tobytes())


def shape_str(v):
    a = np.asarray(v)
    return "[" + ", ".join(str(d) for d in a.shape) + "]"


def dtype_str(v):
    a = np.asarray(v) if not isinstance(v, bytes) else np.array(v, dtype=object)
    return "string" if a.dtype == object else a.dtype.name


def lines(ds):
    out = []
    for i, e in enumerate(ds):
        if isinstance(e, dict):
            items = list(e.items())
        elif isinstance(e, tuple):
            items = [(str(k), v) for k, v in enumerate(e)]
        else:
            items = [("0", e)]
        for name, v in items:
            out.append("%d %s %s %s %08x" % (i, name, dtype_str(v), shape_str(v), crc(v)))
    return out


def cpp_lines(name):
    if not HELPER.exists():
        pytest.skip("parity helper not built: %s" % HELPER)
    r = subprocess.run([str(HELPER), name, str(SOURCE_DIR)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_range_shuffle_batch():
    ds = Dataset.range(0, 100, 3).shuffle(10, seed=5).batch(7)
    assert lines(ds) == cpp_lines("range")


@pytest.mark.skipif(not FASHION.exists(), reason="dataset-fashion-mnist not installed")
def test_fashion_mnist_pipeline():
    ds = (Dataset.zip(Dataset.idx(FASHION / "t10k-images-idx3-ubyte.gz"),
                      Dataset.idx(FASHION / "t10k-labels-idx1-ubyte.gz"))
          .take(2000).shuffle(2000, seed=42)
          .map(sluice.expand_dims(-1))
          .map_and_batch(sluice.image.normalize(mean=0.2860, std=0.3530, layout="CHW"), 256,
                         AUTOTUNE)
          .map(sluice.cast(np.int64, components=[1])))
    got = lines(ds)
    assert len(got) == 16  # 8 batches x 2 components
    assert got == cpp_lines("fashion")


@pytest.mark.skipif(not (SOURCE_DIR / "data/imagenet/tfrecord").exists(), reason="no data")
def test_imagenet_records_decode_resize():
    features = {"image/encoded": sluice.io.FixedLenFeature([], "string"),
                "image/class/label": sluice.io.FixedLenFeature([], "int64")}
    ds = (sluice.data.TFRecordDataset(
              str(SOURCE_DIR / "data/imagenet/tfrecord/train-00000-of-00008"))
          .take(12).map(sluice.io.parse_example(features))
          .map(sluice.image.decode_jpeg(channels=3), num_parallel_calls=2)
          .map(sluice.image.resize([32, 32])).batch(4))
    assert lines(ds) == cpp_lines("imagenet")


@pytest.mark.skipif(not (SOURCE_DIR / "data/text").exists(), reason="no data")
def test_text_tokenize_padded_batch():
    ds = (sluice.data.TFRecordDataset(str(SOURCE_DIR / "data/text/text-00000-of-00008"))
          .take(64).map(sluice.text.tokenize(SOURCE_DIR / "data/text/vocab.txt"))
          .padded_batch(8))
    assert lines(ds) == cpp_lines("text")
