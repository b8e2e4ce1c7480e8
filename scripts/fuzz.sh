#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets/) in turn for SECONDS each, with libFuzzer, new
# inputs kept in fuzz/corpus-local/<target> (not committed) beside the committed seeds in
# fuzz/corpus/<target>; prints each target's executions, coverage and crashes. The hour the
# hostile-clients work asks for: `scripts/fuzz.sh 450` (9 targets).
#
# Usage: scripts/fuzz.sh [seconds=60] [target...]
#        scripts/fuzz.sh --build-only    (builds every target as the runs do, runs none)
#        scripts/fuzz.sh --list          (prints the targets' names, one a line)
# Env:   SANITIZER=none (default) or address. `none` builds the targets on the stable toolchain
#        with cargo, in the workspace's target/ and the test build's profile (dev): its
#        dependencies are the ones `cargo test --workspace` compiled, not compiled again, and
#        fuzz/instrument gives drbgd's own code (the server's library and the targets) libFuzzer's
#        coverage instrumentation at opt-level 3 (CI: benches/README.md, "Fuzz build").
#        `address` is cargo-fuzz on the nightly toolchain (`cargo +nightly fuzz build -O -s
#        address`, without fat LTO): every crate instrumented and under ASan, a build of all the
#        dependencies of its own, for long runs. KEEP_GOING=1 goes on to the next target after a
#        crash (the exit status is still 1); SEED=n fixes libFuzzer's random seed (CI: the same
#        mutations every run, so a failure is one to reproduce, not a fluke); JOBS=n runs n
#        targets at once (CI: 2, one per core).
# Needs: for SANITIZER=address, cargo-fuzz (`cargo install --locked cargo-fuzz@0.13.2`).
set -euo pipefail
cd "$(dirname "$0")/.."
# The targets: fuzz/Cargo.toml's bins.
mapfile -t all_targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | tail -n +2)
if [ "${1:-}" = --list ]; then printf '%s\n' "${all_targets[@]}"; exit 0; fi
build_only=
if [ "${1:-}" = --build-only ]; then build_only=1; shift; fi
secs=${1:-60}
shift || true
sanitizer=${SANITIZER:-none}
if [ "$sanitizer" = none ]; then
  # One `--example` of the server's makes this invocation resolve features as `cargo test
  # --workspace` does (dev-dependencies included), so every dependency is the test build's
  # artifact; fuzz/instrument leaves that example, a plain binary, uninstrumented.
  bin_args=(); for t in "${all_targets[@]}"; do bin_args+=(--bin "$t"); done
  # Cargo hashes the wrapper's path into what it builds, not its content: run a copy whose path
  # names its content, so that a changed wrapper rebuilds what it instruments.
  wrapper=$PWD/target/fuzz-instrument/$(sha256sum fuzz/instrument | cut -c1-16)/instrument
  [ -x "$wrapper" ] || install -D -m 0755 fuzz/instrument "$wrapper"
  RUSTC_WORKSPACE_WRAPPER=$wrapper cargo build --locked --workspace "${bin_args[@]}" --example bare_axum_h2
  bin_dir=target/debug
else
  # -O: cargo-fuzz's release mode (one codegen unit, line tables), everything instrumented;
  # without the workspace's fat LTO (its release profile's), which would link each target
  # from one whole-program module.
  CARGO_PROFILE_RELEASE_LTO=false cargo +nightly fuzz build -O --sanitizer "$sanitizer"
  bin_dir=target/$(rustc -vV | sed -n 's/^host: //p')/release
fi
[ -z "$build_only" ] || exit 0
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
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
