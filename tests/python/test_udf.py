"""Python callables as map / filter / interleave functions."""
import threading

import numpy as np
import pytest

import sluice
from sluice.data import AUTOTUNE, Dataset


def test_map_filter_structures():
    ds = Dataset.range(10).map(lambda x: (x, x * x)).filter(lambda x, y: y % 2 == 0)
    assert [(int(a), int(b)) for a, b in ds] == [(i, i * i) for i in range(0, 10, 2)]
    d = Dataset.range(3).map(lambda x: {"x": x, "s": str(x).encode()})
    assert [(int(e["x"]), e["s"]) for e in d] == [(0, b"0"), (1, b"1"), (2, b"2")]
    d2 = Dataset.from_tensor_slices({"a": np.arange(3)}).map(lambda e: e["a"] * 2)
    assert list(d2) == [0, 2, 4]


def test_udf_sees_numpy_views():
    seen = []

    def f(batch):
        seen.append((type(batch), batch.flags.writeable, type(batch.base)))
        return batch.sum()

    ds = Dataset.range(8).batch(4).map(f)
    del seen[:]  # the calls that inferred f's output spec (docs/python.md)
    assert list(ds) == [6, 22]
    assert seen[0] == (np.ndarray, False, sluice.Tensor)


def test_udf_marked_stateful_and_not_serializable():
    f = sluice._sluice.py_map_function(lambda x: x)
    assert f.stateful and not f.serializable
    p = sluice._sluice.py_predicate(lambda x: True)
    assert p.stateful and not p.serializable


def test_parallel_map_with_udf_keeps_order_and_runs_with_gil():
    active = []
    lock = threading.Lock()
    overlap = [0]

    def f(x):
        with lock:
            active.append(1)
            overlap[0] = max(overlap[0], len(active))
        s = int(x) * 3
        with lock:
            active.pop()
        return s

    out = list(Dataset.range(200).map(f, num_parallel_calls=AUTOTUNE, deterministic=True))
    assert out == [3 * i for i in range(200)]
    assert overlap[0] == 1  # the GIL: one call at a time


def test_udf_exception_surfaces_with_cause():
    def bad(x):
        if x == 3:
            raise ZeroDivisionError("boom at 3")
        return x

    it = iter(Dataset.range(5).map(bad))
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(sluice.InvalidArgumentError) as e:
        next(it)
    assert "boom at 3" in str(e.value) and "ZeroDivisionError" in str(e.value)
    assert "bad" in str(e.value)  # the function's name
    assert isinstance(e.value.__cause__, ZeroDivisionError)
    assert next(it) == 4  # map goes on after a failed element


def test_udf_returning_wrong_type():
    with pytest.raises(sluice.Error, match="lambda"):
        list(Dataset.range(2).map(lambda x: object()))


def test_ignore_errors_skips_failed_udf_elements():
    ds = Dataset.range(6).map(lambda x: x if x % 2 else 1 // 0).ignore_errors()
    assert list(ds) == [1, 3, 5]


def test_flat_map_and_group_by_window():
    ds = Dataset.range(3).flat_map(lambda x: Dataset.range(int(x)))
    assert list(ds) == [0, 0, 1]
    with pytest.raises(sluice.Error, match="Dataset"):
        list(Dataset.range(2).flat_map(lambda x: 5))
