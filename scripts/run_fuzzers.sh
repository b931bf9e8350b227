#!/usr/bin/env bash
# Runs every libFuzzer binary (*_fuzzer) in BUILD_DIR for SECONDS each.
#
#   scripts/run_fuzzers.sh BUILD_DIR [SECONDS]     (default 30)
#
# Each fuzzer starts from a temporary copy of fuzz/corpus/<name>/ (so the repository's seed
# corpus is never modified) and runs with -max_total_time=SECONDS. Crash, leak, timeout and
# out-of-memory reproducers are kept in BUILD_DIR/fuzz-artifacts/<name>/. The script fails
# (exit 1) if any fuzzer fails, printing the tail of its log; it also fails when BUILD_DIR
# holds no fuzzer.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 BUILD_DIR [SECONDS]" >&2
  exit 2
fi
build_dir=$1
seconds=${2:-30}
if ! [[ $seconds =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "$0: SECONDS must be a positive integer, got '$seconds'" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)

fuzzers=()
for f in "$build_dir"/*_fuzzer; do
  [[ -f $f && -x $f ]] && fuzzers+=("$f")
done
if ((${#fuzzers[@]} == 0)); then
  echo "$0: no *_fuzzer binaries in $build_dir (configure with -DSLUICE_BUILD_FUZZ=ON)" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT

failed=()
for fuzzer in "${fuzzers[@]}"; do
  name=$(basename "$fuzzer")
  corpus="$work/$name/corpus"
  artifacts="$build_dir/fuzz-artifacts/$name"
  log="$work/$name/log"
  mkdir -p "$corpus" "$artifacts"
  seeds="$root/fuzz/corpus/$name"
  if [[ -d $seeds ]]; then
    cp -R "$seeds/." "$corpus/"
  fi
  echo "==== $name: ${seconds}s, $(find "$corpus" -type f | wc -l) seed inputs"
  if ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
     "$fuzzer" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2560 \
       -artifact_prefix="$artifacts/" -print_final_stats=1 "$corpus" >"$log" 2>&1; then
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)' "$log" || true
    echo "---- $name: ok"
  else
    echo "---- $name: FAILED (artifacts in $artifacts)"
    tail -n 60 "$log"
    failed+=("$name")
  fi
done

if ((${#failed[@]} > 0)); then
  echo "fuzzers failed: ${failed[*]}" >&2
  exit 1
fi
echo "all ${#fuzzers[@]} fuzzers passed"
