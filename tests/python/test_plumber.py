"""sluice.plumber from Python: the GIL-bound case, the one-liner, saved traces."""
import time

import numpy as np

import sluice
from sluice.data import Dataset


def slow_py(x):
    end = time.thread_time() + 0.0003  # 300 us of this thread's CPU, holding the GIL
    while time.thread_time() < end:
        pass
    return x


def test_python_map_is_gil_bound():
    ds = Dataset.range(10**9).map(slow_py).map(lambda x: x + 1).batch(4)
    report = sluice.plumber.diagnose(ds, seconds=0.6, warmup=0.1, cores=2,
                                     cpu_availability=1)  # as if the machine were idle
    top = report.bottlenecks[0]
    assert top["kind"] == "gil", report.text
    assert "GIL" in top["text"]
    assert "slow_py" in top["text"], report.text
    # One core for every Python function together: 4 x 300 us per batch at least.
    assert report.predicted_rate < 1e6 / 1200 * 1.3, report.text
    gil_nodes = [n for n in report.json["nodes"] if n["gil"]]
    assert len(gil_nodes) == 2 and all(n["parallelism"] == 0 for n in gil_nodes)


def test_optimize_keeps_elements():
    def build():
        return (Dataset.range(300).map(lambda x: x * 2).shuffle(50, seed=3)
                .batch(8))
    ds = build()
    fast = sluice.plumber.optimize(ds, seconds=0.3, warmup=0.05, cores=2)
    assert isinstance(fast, Dataset)
    a = [np.asarray(b) for b in ds]
    b = [np.asarray(b) for b in fast]
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_saved_trace_round_trip(tmp_path):
    path = str(tmp_path / "run.trace")
    ds = Dataset.range(10**9).batch(16)
    report = sluice.plumber.diagnose(ds, seconds=0.2, warmup=0.05, save_trace=path)
    again = sluice.plumber.diagnose_trace(path)
    assert again.dataset is None
    assert again.json["measured_rate"] == report.json["measured_rate"]
    assert "data-charts-rendered" in again.html
    try:
        sluice.plumber.diagnose_trace(str(tmp_path / "missing.trace"))
    except sluice.NotFoundError as e:
        assert "missing.trace" in str(e)
    else:
        raise AssertionError("no error for a missing trace")
