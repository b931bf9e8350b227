#!/usr/bin/env bash
# Runs every benchmark binary in BUILD_DIR, writing JSON to bench/results/<name>.json.
# Usage: scripts/run_benchmarks.sh BUILD_DIR [REPETITIONS]
set -euo pipefail
build="${1:-build}"
reps="${2:-5}"
out="bench/results"
mkdir -p "$out"
shopt -s nullglob
for bin in "$build"/*_bench; do
  name=$(basename "$bin")
  echo "[bench] $name (${reps} repetitions, medians reported)"
  "$bin" --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
         --benchmark_out="$out/$name.json" --benchmark_out_format=json \
         --benchmark_counters_tabular=true
done
echo "[bench] results in $out/"
