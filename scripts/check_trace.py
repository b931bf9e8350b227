#!/usr/bin/env python3
"""Validates a Chrome Trace Event JSON file (the profiler's, docs/profiler.md).

Checks: the file is the JSON Object Format with a traceEvents list; every event has a
known phase, pid, tid and a non-negative ts; every slice ("X", non-negative dur) and
flow end sits on a thread named by a thread_name metadata event; every flow id has
exactly one start ("s") and one finish ("f"); timestamps of slices and flows never go
backwards on a thread (in file order).

  scripts/check_trace.py trace.json [--min-slices N] [--min-flows N]
      [--require-name NAME ...] [--require-counter NAME ...]

Prints a one-line JSON summary; exits 1 with the reasons when the trace is invalid.
"""
import argparse
import collections
import json
import sys


def check(path, min_slices=0, min_flows=0, require_names=(), require_counters=()):
    errors = []
    with open(path) as f:
        doc = json.load(f)
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        return {"errors": ["no traceEvents list"]}
    named = set()
    last = {}
    flows = collections.defaultdict(lambda: [0, 0])
    names = collections.Counter()
    counters = collections.Counter()
    slices = 0
    for i, e in enumerate(events):
        ph = e.get("ph")
        if ph not in ("X", "s", "f", "C", "M"):
            errors.append(f"event {i}: unknown phase {ph!r}")
            continue
        if "pid" not in e or "tid" not in e:
            errors.append(f"event {i}: no pid/tid")
            continue
        track = (e["pid"], e["tid"])
        if ph == "M":
            if e.get("name") == "thread_name":
                named.add(track)
            continue
        ts = e.get("ts")
        if not isinstance(ts, (int, float)) or ts < 0:
            errors.append(f"event {i}: bad ts {ts!r}")
            continue
        if ph == "C":
            counters[e.get("name")] += 1
            continue
        if track not in named:
            errors.append(f"event {i}: on track {track} with no thread_name")
        if ts < last.get(track, 0):
            errors.append(f"event {i}: ts {ts} before {last[track]} on thread {track}")
        last[track] = ts
        if ph == "X":
            slices += 1
            names[e.get("name")] += 1
            if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
                errors.append(f"event {i}: bad dur")
        else:
            flows[e.get("id")][0 if ph == "s" else 1] += 1
    for fid, (s, f) in flows.items():
        if s != 1 or f != 1:
            errors.append(f"flow {fid}: {s} starts, {f} finishes")
    if slices < min_slices:
        errors.append(f"{slices} slices, expected at least {min_slices}")
    if len(flows) < min_flows:
        errors.append(f"{len(flows)} flows, expected at least {min_flows}")
    for n in require_names:
        if names[n] == 0:
            errors.append(f"no slice named {n!r}")
    for n in require_counters:
        if counters[n] == 0:
            errors.append(f"no counter track {n!r}")
    return {"slices": slices, "flows": len(flows), "threads": len(named),
            "counters": sorted(k for k in counters if k), "errors": errors[:20]}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--min-slices", type=int, default=0)
    p.add_argument("--min-flows", type=int, default=0)
    p.add_argument("--require-name", action="append", default=[])
    p.add_argument("--require-counter", action="append", default=[])
    a = p.parse_args()
    r = check(a.trace, a.min_slices, a.min_flows, a.require_name, a.require_counter)
    print(json.dumps(r))
    sys.exit(1 if r["errors"] else 0)


if __name__ == "__main__":
    main()
