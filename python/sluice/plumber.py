"""The bottleneck doctor (docs/doctor.md): trace a pipeline for a few seconds, find what
bounds it (CPU, a sequential operator, the GIL, the disk, memory, the consumer), plan
parallelism, a cache and prefetching with a linear program, and rewrite it.

    import sluice
    ds = sluice.plumber.optimize(ds)          # the one-liner: same elements, faster

    report = sluice.plumber.diagnose(ds)      # or look first
    print(report.text)                        # ranked bottlenecks in plain words
    report.bottlenecks[0]["kind"]             # "cpu", "gil", "disk", "memory", ...
    open("report.html", "w").write(report.html)
    fast = report.dataset                     # the rewritten pipeline

A Python function in a map holds the GIL: it runs on one core whatever its
num_parallel_calls, and the doctor plans it so (and says so when it is the bottleneck).
"""

import json as _json

from . import _sluice
from . import data as _data

__all__ = ["optimize", "diagnose", "diagnose_trace", "measure", "Report"]


def _native(ds):
    return ds._ds if hasattr(ds, "_ds") else ds


def _wrap(native, like):
    return _data.Dataset(native) if isinstance(like, _data.Dataset) else native


class Report:
    """A diagnosis: ``text`` (for people), ``json`` (a dict), ``html`` (a self-contained
    page with charts), ``bottlenecks`` (ranked, tightest first), ``predicted_rate``
    (root elements/s after the plan) and ``dataset`` (the rewritten pipeline, or None
    for a report made from a saved trace)."""

    def __init__(self, d, like=None):
        self.text = d["text"]
        self.json = _json.loads(d["json"])
        self.html = d["html"]
        self.dataset = _wrap(d["dataset"], like) if "dataset" in d else None

    @property
    def bottlenecks(self):
        return self.json["bottlenecks"]

    @property
    def predicted_rate(self):
        return self.json["predicted_rate"]

    @property
    def measured_rate(self):
        return self.json["measured_rate"]

    def __str__(self):
        return self.text

    def __repr__(self):
        top = self.bottlenecks[0]["kind"] if self.bottlenecks else "none"
        return f"<sluice.plumber.Report bottleneck={top} predicted={self.predicted_rate:.4g}/s>"


def optimize(ds, seconds=2.0, warmup=0.3, cores=0, ram_budget=0):
    """``ds`` traced for ``seconds`` and rewritten: parallelism, a cache where it fits and
    pays, a prefetch. The result yields the same elements. ``cores``/``ram_budget`` (bytes)
    default to the machine's and the pipeline's."""
    return _wrap(_sluice.plumber_optimize(_native(ds), float(seconds), float(warmup),
                                          int(cores), int(ram_budget)), ds)


def diagnose(ds, seconds=2.0, warmup=0.3, cores=0, ram_budget=0, save_trace="",
             cpu_availability=0):
    """Traces ``ds`` and returns its Report (optionally saving the trace file, which
    ``diagnose_trace`` and ``sluice plumber --trace`` read later). ``cpu_availability``:
    the share of the cores to plan for (0: what the trace measured; 1: an idle machine)."""
    d = _sluice.plumber_diagnose(_native(ds), float(seconds), float(warmup), int(cores),
                                 int(ram_budget), str(save_trace), float(cpu_availability))
    return Report(d, ds)


def diagnose_trace(path, cores=0, ram_budget=0):
    """The Report of a saved trace file (no rewritten dataset)."""
    return Report(_sluice.plumber_diagnose_trace(str(path), int(cores), int(ram_budget)))


def measure(ds, seconds=2.0, warmup=0.5, cores=0):
    """Root elements per second of ``ds`` over ``seconds`` after ``warmup``."""
    return _sluice.plumber_measure(_native(ds), float(seconds), float(warmup), int(cores))
