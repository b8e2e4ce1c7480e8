#!/usr/bin/env bash
# RUSTC_WRAPPER for scripts/fuzz.sh: coverage instrumentation for drbgd's own code only.
#
# cargo-fuzz puts its instrumentation in RUSTFLAGS, so every crate of the fuzz build gets it:
# SanitizerCoverage with comparison tracing, and one codegen unit. That makes the fuzz build the
# costliest compile CI runs (about 300 crates, each instrumented and optimized as one unit),
# while libFuzzer's guidance only needs the code under test instrumented. So a crate from a
# registry or a git checkout is compiled without those flags (with the profile's codegen units),
# and drbgd, the fuzz targets and any other path crate keep them all. libFuzzer still runs every
# dependency's code; it is just not steered by its branches (hyper, h2, serde_json and the rest
# are fuzzed upstream, in OSS-Fuzz). FUZZ_INSTRUMENT=all (scripts/fuzz.sh) skips this wrapper.
set -euo pipefail
rustc=$1
shift
dependency=
for arg in "$@"; do
  case $arg in
    */registry/src/* | */git/checkouts/*) dependency=1; break ;;
  esac
done
[ -n "$dependency" ] || exec "$rustc" "$@"
args=()
for arg in "$@"; do
  case $arg in
    -Cpasses=sancov-module | -Cllvm-args=-sanitizer-coverage-* | -Cllvm-args=-simplifycfg-branch-fold-threshold=0 | -Ccodegen-units=1) ;;
    *) args+=("$arg") ;;
  esac
done
exec "$rustc" "${args[@]}"
