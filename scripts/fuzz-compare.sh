#!/usr/bin/env bash
# Compares two builds of the fuzz targets: each target of both runs at once (one per core),
# SECONDS each, from the committed seeds with the same libFuzzer seed; prints each one's
# executions, and how much of drbgd's own code the corpus each run grew reaches, measured by
# replaying both corpora through OWN (a build whose instrumentation is drbgd's code alone,
# scripts/fuzz.sh's default), so the two counts are of the same thing.
#
# Usage: scripts/fuzz-compare.sh OTHER_DIR OWN_DIR [seconds=20]
#   e.g. OTHER_DIR=target/x86_64-unknown-linux-gnu/release (`cargo fuzz build -O -s none`:
#   every crate instrumented), OWN_DIR=target/debug (`scripts/fuzz.sh --build-only`).
set -euo pipefail
cd "$(dirname "$0")/.."
other=${1:?usage: scripts/fuzz-compare.sh OTHER_DIR OWN_DIR [seconds]} own=${2:?own build dir} secs=${3:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mapfile -t targets < <(bash scripts/fuzz.sh --list)
execs() { grep -oE 'number_of_executed_units: *[0-9]+' "$1" | grep -oE '[0-9]+$'; }
# Edges of drbgd's code (OWN's instrumentation) that a corpus reaches, with nothing mutated.
reach() { "$own/$1" -runs=0 "$2" "fuzz/corpus/$1" 2>&1 | grep -oE 'INITED cov: [0-9]+' | grep -oE '[0-9]+$'; }
printf '%-16s %12s %12s %7s   %s\n' target "other execs" "own execs" ratio "drbgd edges reached: other / own"
for t in "${targets[@]}"; do
  mkdir -p "$work/other-$t" "$work/own-$t"
  for side in other own; do
    dir=$other; [ "$side" = own ] && dir=$own
    "$dir/$t" -max_total_time="$secs" -seed=1 -rss_limit_mb=2048 -print_final_stats=1 \
      "$work/$side-$t" "fuzz/corpus/$t" >"$work/$side-$t.log" 2>&1 &
  done
  wait
  a=$(execs "$work/other-$t.log") b=$(execs "$work/own-$t.log")
  printf '%-16s %12s %12s %7s   %s / %s\n' "$t" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", b / a}')" \
    "$(reach "$t" "$work/other-$t")" "$(reach "$t" "$work/own-$t")"
done
