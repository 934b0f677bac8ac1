#!/usr/bin/env bash
# Builds the fuzz targets with clang and runs each for SECONDS (default 60)
# over a copy of the kept seeds, all at once (sharing the cores: the wall
# time stays SECONDS). Exits non-zero
# on any crash or sanitizer report; the reproducer is kept under $BUILD/crashes.
#   tests/fuzz/run.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build-fuzz}
seconds=${2:-60}
CXX=${RUCCL_FUZZ_CXX:-clang++} cmake -S "$here" -B "$build" -G Ninja >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)"
mkdir -p "$build/crashes"
targets="fuzz_wire_header fuzz_fingerprint fuzz_agree fuzz_lean fuzz_bundle"
pids=()
for target in $targets; do
  work="$build/corpus/$target"
  rm -rf "$work" && mkdir -p "$work"
  "$build/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$build/crashes/$target-" -print_final_stats=1 \
      "$work" "$here/corpus/$target" >"$build/$target.log" 2>&1 &
  pids+=($!)
done
status=0
i=0
for target in $targets; do
  if wait "${pids[$i]}"; then
    echo "$target: $(grep -E '^stat::number_of_executed_units' "$build/$target.log" | awk '{print $2}') runs, no failure"
  else
    echo "$target: FAILED (log: $build/$target.log)"; tail -40 "$build/$target.log"; status=1
  fi
  i=$((i + 1))
done
exit $status
