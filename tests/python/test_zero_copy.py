"""Elements reach numpy without a copy: the array's base is the sluice buffer holder,
views of one element share memory, and iterating big batches does not allocate their size
in Python-visible memory."""
import gc
import tracemalloc

import numpy as np
import pytest

import sluice
from sluice.data import Dataset

ROWS, COLS = 256, 1024  # 1 MiB float32 batches


def big_batches(n):
    # Each batch is made by sluice (batch copies rows into a fresh sluice buffer).
    row = np.arange(COLS, dtype=np.float32)
    return Dataset.from_tensors(row).repeat(n * ROWS).batch(ROWS)


def test_base_is_sluice_buffer():
    arr = next(iter(big_batches(1)))
    assert arr.shape == (ROWS, COLS) and arr.dtype == np.float32
    assert isinstance(arr.base, sluice.Tensor)
    assert arr.base.data_ptr == arr.ctypes.data
    assert arr.base.shape == (ROWS, COLS) and arr.base.dtype == "float32"
    assert not arr.flags.writeable and not arr.flags.owndata
    with pytest.raises(ValueError):
        arr[0, 0] = 1  # read-only: buffers may be shared (cache, from_tensors)


def test_views_share_memory():
    arr = next(iter(big_batches(1)))
    holder = arr.base
    again = np.asarray(holder)            # buffer protocol: a second view
    mv = memoryview(holder)
    assert np.shares_memory(arr, again)
    assert mv.readonly and mv.nbytes == ROWS * COLS * 4
    before = holder.buffer_use_count
    views = [holder.numpy() for _ in range(3)]
    assert holder.buffer_use_count == before + 3  # each view holds one buffer reference
    assert all(np.shares_memory(v, arr) for v in views)
    del views
    gc.collect()
    assert holder.buffer_use_count == before


def test_array_outlives_iterator_and_dataset():
    it = iter(Dataset.from_tensor_slices(np.arange(10, dtype=np.int32) * 7).batch(10))
    arr = next(it)
    del it
    gc.collect()
    np.testing.assert_array_equal(arr, np.arange(10) * 7)


def test_no_copy_per_batch_memory():
    n = 40
    tracemalloc.start()
    try:
        base_now, _ = tracemalloc.get_traced_memory()
        kept = [b for b in big_batches(n)]       # keeps every batch alive: 40 MiB of data
        now, peak = tracemalloc.get_traced_memory()
        assert len(kept) == n and kept[-1].nbytes == ROWS * COLS * 4
        grown = now - base_now
        # numpy registers its own data allocations with tracemalloc: had the batches been
        # copied into numpy memory, `grown` would be >= n MiB. A few KB per batch is the
        # array objects themselves.
        assert grown < n * 16 * 1024, grown
        copies = [np.array(b) for b in kept[:4]]  # the control: real copies are seen
        after_copy, _ = tracemalloc.get_traced_memory()
        assert after_copy - now >= 4 * ROWS * COLS * 4
        del copies
    finally:
        tracemalloc.stop()


def test_scalars_and_strings_come_out_as_values():
    x = next(iter(Dataset.from_tensors((np.int32(3), b"abc"))))
    assert x == (3, b"abc") and isinstance(x[0], np.int32)


def test_tensor_roundtrip_into_pipeline():
    t = sluice.Tensor(np.arange(6, dtype=np.int16).reshape(2, 3))
    assert t.dtype == "int16" and t.shape == (2, 3)
    out = next(iter(Dataset.from_tensors(t)))
    np.testing.assert_array_equal(out, np.arange(6).reshape(2, 3))
