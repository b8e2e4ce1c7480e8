#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets/) in turn for SECONDS each, with cargo-fuzz, new
# inputs kept in fuzz/corpus-local/<target> (not committed) beside the committed seeds in
# fuzz/corpus/<target>; prints each target's executions, coverage and crashes. The hour the
# hostile-clients work asks for: `scripts/fuzz.sh 450` (9 targets).
#
# Usage: scripts/fuzz.sh [seconds=60] [target...]
#        scripts/fuzz.sh --build-only    (builds every target as the runs do, runs none: CI builds
#                                        them in the background, then runs them later)
# Env:   SANITIZER=none (default; works on the stable toolchain) or address (ASan: nightly,
#        `cargo +nightly fuzz`, a build of its own); KEEP_GOING=1 goes on to the next target
#        after a crash (the exit status is still 1); SEED=n fixes libFuzzer's random seed
#        (CI: the same mutations every run, so a failure is one to reproduce, not a fluke);
#        JOBS=n runs n targets at once (CI: 2, one per core).
# Needs: cargo-fuzz (`cargo install --locked cargo-fuzz@0.13.2`).
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=
if [ "${1:-}" = --build-only ]; then build_only=1; shift; fi
secs=${1:-60}
shift || true
sanitizer=${SANITIZER:-none}
cargo=(cargo)
[ "$sanitizer" = none ] || cargo=(cargo +nightly)
# -O: release mode without debug assertions; cargo-fuzz then compiles every crate with one
# codegen unit (its `--codegen-units N` compiles faster, the targets then run up to ~3x slower)
# and line tables only (its own `--config profile.release.debug`).
"${cargo[@]}" fuzz build -O --sanitizer "$sanitizer"
[ -z "$build_only" ] || exit 0
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo fuzz list)
# The binaries `cargo fuzz run` would start (it would re-check the build first, ~20 s a target).
triple=$(rustc -vV | sed -n 's/^host: //p')
bin_dir=fuzz/target/$triple/release
# JOBS targets at once (libFuzzer runs one thread: two fill two cores), each for SECONDS.
jobs=${JOBS:-1}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
run_one() {
  local t=$1
  mkdir -p "fuzz/corpus-local/$t" "fuzz/artifacts/$t"
  status=0
  "$bin_dir/$t" -artifact_prefix="fuzz/artifacts/$t/" -max_total_time="$secs" -print_final_stats=1 \
    -rss_limit_mb=2048 ${SEED:+-seed="$SEED"} "fuzz/corpus-local/$t" "fuzz/corpus/$t" >"$logs/$t.log" 2>&1 || status=$?
  echo "$status" >"$logs/$t.status"
}
report() {
  local t=$1 log=$logs/$1.log status runs cov ft
  status=$(cat "$logs/$t.status")
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo '?')
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || echo '?')
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || echo '?')
  printf '%-16s %8ss  executions %10s  coverage %6s  features %6s  exit %s\n' "$t" "$secs" "$runs" "$cov" "$ft" "$status"
  if [ "$status" -ne 0 ]; then
    grep -E 'panicked|ERROR|SUMMARY|Test unit written' "$log" | head -20 ||
      tail -n 20 "$log"  # no crash: a binary that did not start, say
    failed=1
  fi
}
for ((i = 0; i < ${#targets[@]}; i += jobs)); do
  batch=("${targets[@]:i:jobs}")
  for t in "${batch[@]}"; do run_one "$t" & done
  wait
  for t in "${batch[@]}"; do report "$t"; done
  if [ -n "${failed:-}" ] && [ -z "${KEEP_GOING:-}" ]; then exit 1; fi
done
exit "${failed:-0}"
