"""The profiler: spans per operator and per element, batch wait and delay, counters.

    import sluice
    with sluice.profiler.trace("out.json") as t:      # Chrome/Perfetto trace
        for batch in ds:                               # any iterator made in the block
            ...
    print(t.text)                                      # summary per operator
    t.summary["batches"]["delay"]["p50_ns"]

Options: ``sample=N`` records 1 in N elements per operator, ``batches_only=True`` only
batch production and consumption, ``counters=True`` perf_event_open counters per
operator (software always; hardware where the machine exposes them), ``summary_json``
and ``html`` write the summary as JSON and as an HTML page.

Stock PyTorch DataLoader pipelines: ``sluice.profiler.torch`` (imported on first use).
See docs/profiler.md.
"""

import contextlib
import importlib.util
import json
import os
import sys

from . import _sluice

__all__ = ["trace", "Trace", "export", "perf_counters", "hardware_unavailable_reason",
           "torch"]


class Trace:
    """What a finished ``trace`` block recorded: ``text`` and ``summary`` (a dict)."""

    def __init__(self, path):
        self.path = path
        self.text = None
        self.summary = None


@contextlib.contextmanager
def trace(path, *, sample=1, batches_only=False, counters=False, summary_json=None,
          html=None):
    """Profiles every sluice iterator created inside the block; writes ``path``."""
    if sample < 1:
        raise ValueError("sluice.profiler.trace: sample must be >= 1")
    session = _sluice._ProfilerSession(
        path or "", "batches" if batches_only else "all", int(sample), bool(counters),
        summary_json or "", html or "")
    t = Trace(path)
    try:
        yield t
    finally:
        text, js = session.stop()
        t.text, t.summary = text, json.loads(js)


def export(event_paths, trace=None, summary_json=None, html=None):
    """Merges event files (e.g. of DataLoader workers) into a trace; returns (text, dict)."""
    text, js = _sluice._profiler_export(list(event_paths), trace or "", summary_json or "",
                                        html or "")
    return text, json.loads(js)


def perf_counters():
    """The calling thread's perf_event_open counters now (cumulative, a dict)."""
    return _sluice.perf_counters()


def hardware_unavailable_reason():
    """Why hardware counters are unavailable here ('' when they are available)."""
    return _sluice.perf_hardware_unavailable_reason()


# sluice.profiler.torch, loaded on first attribute access (torch is a heavy import).
_spec = importlib.util.spec_from_file_location(
    __name__ + ".torch", os.path.join(os.path.dirname(os.path.realpath(__file__)),
                                      "profiler_torch.py"))
_spec.loader = importlib.util.LazyLoader(_spec.loader)
torch = importlib.util.module_from_spec(_spec)
sys.modules[__name__ + ".torch"] = torch
_spec.loader.exec_module(torch)
