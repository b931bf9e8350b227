#!/usr/bin/python3
"""Handoff and overhead figures of two builds, alternated round by round.

On a noisy machine (a small VM whose speed swings 20-30% from minute to minute) a figure
only means something beside another build's, measured in the same minutes. This runs
`handoff_bench` (Prefetch(64) and ParallelMap(identity, 2), ns per element) and
`overhead_bench` (defaults and as built, lambda and kernel, ns per element per operator)
of build A, then build B, `--rounds` times, and reports min / median / max of each and the
median of the paired ratios B/A.

  /usr/bin/python3 bench/alternate_builds.py --before /path/to/old/build --after build \
      --rounds 6 --out /tmp/alternate.json
"""
import argparse
import json
import statistics
import subprocess
import sys

HANDOFF = {"BM_Prefetch/min_time:1.000/real_time": "prefetch_64",
           "BM_ParallelMap/min_time:1.000/real_time": "parallel_map_identity_2"}
OVERHEAD = {"BM_Overhead/kernel:0/mode:0": "lambda_defaults",
            "BM_Overhead/kernel:0/mode:1": "lambda_as_built",
            "BM_Overhead/kernel:1/mode:0": "kernel_defaults",
            "BM_Overhead/kernel:1/mode:1": "kernel_as_built"}


def run(binary, bench_filter, min_time):
    out = subprocess.run([binary, f"--benchmark_min_time={min_time}",
                          f"--benchmark_filter={bench_filter}", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["benchmarks"]


def measure(build, min_time):
    figures = {}
    for b in run(f"{build}/handoff_bench", "BM_Prefetch/|BM_ParallelMap/", min_time):
        if b["name"] in HANDOFF:
            figures[HANDOFF[b["name"]]] = b["ns_per_element"]
    for b in run(f"{build}/overhead_bench", "mode:[01]/", min_time):
        for prefix, key in OVERHEAD.items():
            if b["name"].startswith(prefix + "/"):
                figures[key] = b["ns_per_element_per_op"]
    return figures


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("--before", required=True, help="build directory A")
    p.add_argument("--after", required=True, help="build directory B")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--min-time", type=float, default=0.3)
    p.add_argument("--out", help="JSON file for the results")
    args = p.parse_args()
    rounds = {"before": [], "after": []}
    for r in range(args.rounds):
        for side in ("before", "after"):
            f = measure(getattr(args, side), args.min_time)
            rounds[side].append(f)
            print(f"round {r + 1}/{args.rounds} {side}: " +
                  " ".join(f"{k}={v:.1f}" for k, v in f.items()), flush=True)
    summary = {}
    for key in list(HANDOFF.values()) + list(OVERHEAD.values()):
        row = {}
        for side in ("before", "after"):
            values = [f[key] for f in rounds[side] if key in f]
            row[side] = {"min": min(values), "median": statistics.median(values),
                         "max": max(values)}
        ratios = [a[key] / b[key] for a, b in zip(rounds["after"], rounds["before"])]
        row["paired_after_over_before_median"] = statistics.median(ratios)
        summary[key] = row
        print(f"{key:26s} before {row['before']['min']:7.1f} {row['before']['median']:7.1f} "
              f"{row['before']['max']:7.1f} | after {row['after']['min']:7.1f} "
              f"{row['after']['median']:7.1f} {row['after']['max']:7.1f} | paired "
              f"{row['paired_after_over_before_median']:.2f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"before": args.before, "after": args.after, "rounds": rounds,
                       "summary": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
