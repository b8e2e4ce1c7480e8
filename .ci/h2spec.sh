#!/usr/bin/env bash
# HTTP/2 conformance (h2spec 2.2.1) of the API port, against a bare axum server on the same
# hyper (examples/bare_axum_h2.rs) as the baseline: three runs each, since some results vary
# with timing. Fails if a test fails in every drbgd run but passes in every bare run (drbgd's
# own connection code broke it). The tests that fail in both are hyper's, named in
# docs/security.md.
#
# The baseline may be the example as `cargo test` builds it (CI: the dev profile, dependencies
# at opt-level 2, with debug assertions and overflow checks) rather than a release build: its
# own code is a few lines, all of the HTTP/2 handling is hyper's and h2's, optimized either
# way, and what debug assertions change there is that an internal error panics (the
# connection's task, printed on stderr) where a release build logs it and drops the
# connection. A baseline panic would fail its test and so excuse the same failure in drbgd;
# the script therefore fails when the baseline printed a panic (a release baseline panicking
# is a broken baseline too).
#
# Usage: .ci/h2spec.sh [runs=3]   Needs: h2spec on PATH, the drbgd binary ($DRBGD_BIN,
# default target/release/drbgd) and the baseline ($BARE_BIN, default
# target/release/examples/bare_axum_h2: `cargo build --release --example bare_axum_h2`).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
drbgd_bin=${DRBGD_BIN:-target/release/drbgd}
bare_bin=${BARE_BIN:-target/release/examples/bare_axum_h2}
for b in "$drbgd_bin" "$bare_bin"; do [ -x "$b" ] || { echo "$b is not an executable"; exit 1; }; done
out=$(mktemp -d)
port=$((21000 + RANDOM % 11000))
"$drbgd_bin" serve --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$((port + 1))" >"$out/drbgd.log" 2>&1 &
dpid=$!
"$bare_bin" "127.0.0.1:$((port + 2))" >"$out/bare.log" 2>&1 &
bpid=$!
trap 'kill $dpid $bpid 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$((port + 1))/readyz" >/dev/null 2>&1 && curl -fsS "http://127.0.0.1:$((port + 2))/" >/dev/null 2>&1 && break
  sleep 0.1
done
# The failed tests of one run, one "section name" a line (h2spec's JUnit report).
failed() {
  python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    if case.find("failure") is not None or case.find("error") is not None:
        parts = [case.get(k) for k in ("package", "classname", "name")]
        print(" ".join(p for p in parts if p and p != "None"))
PY
}
for run in $(seq "$runs"); do
  for who in drbgd bare; do
    # drbgd's POST /bits reads the whole body before it answers (400 for h2spec's), as the
    # bare server's POST / does: frames sent after the headers meet an open stream on both,
    # instead of racing a response that ends the stream first.
    p=$port path=/bits
    [ "$who" = bare ] && p=$((port + 2)) path=/
    h2spec -h 127.0.0.1 -p "$p" -P "$path" -o 2 -j "$out/$who-$run.xml" >"$out/$who-$run.txt" 2>&1 || true
    failed "$out/$who-$run.xml" | sort >"$out/$who-$run.failed"
    printf '%s run %s: %s\n' "$who" "$run" "$(tail -n 3 "$out/$who-$run.txt" | grep -E 'tests, .* passed' || echo '(no summary)')"
  done
done
# in every drbgd run, and passing in every bare run
sort "$out"/drbgd-*.failed | uniq -c | awk -v n="$runs" '$1 == n { $1 = ""; sub(/^ /, ""); print }' >"$out/drbgd.always"
cat "$out"/bare-*.failed | sort -u >"$out/bare.ever"
comm -23 "$out/drbgd.always" "$out/bare.ever" >"$out/ours"
echo "--- failing in some bare run (hyper's, not drbgd's):"
cat "$out/bare.ever"
echo "--- failing in some drbgd run:"
cat "$out"/drbgd-*.failed | sort -u
if grep -q 'panicked at' "$out/bare.log"; then
  echo "--- FAIL: the bare baseline ($bare_bin) panicked, so its failures excuse nothing:"
  grep -A3 'panicked at' "$out/bare.log" | head -40
  exit 1
fi
if [ -s "$out/ours" ]; then
  echo "--- FAIL: failing in every drbgd run and in no bare run:"
  cat "$out/ours"
  exit 1
fi
echo "h2spec: nothing fails in drbgd that passes in the bare server"
