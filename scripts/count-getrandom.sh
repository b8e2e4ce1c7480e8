#!/usr/bin/env bash
# Counts getrandom(2) calls of a running drbgd while it serves 10,000 /token and 10,000
# /bits?n=256 requests (the fail-closed requirement: outside reseeds, serving must not call the
# OS, not even for request ids). strace -c
# attaches to every thread of the running process (-f) and traces getrandom only. Besides
# reseeds, the only other caller is the readiness probe of the entropy source (at most once a
# second, from the gRPC health follower); no request makes one.
# Usage: scripts/count-getrandom.sh [path/to/drbgd]
set -euo pipefail
bin=${1:-target/release/drbgd}
port=$((20000 + RANDOM % 12000))
"$bin" serve --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$((port + 1))" >/dev/null 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$((port + 1))/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
out=$(mktemp)
strace -f -c -e trace=getrandom -p "$pid" -o "$out" &
spid=$!
sleep 1
start=$SECONDS
python3 - "$port" <<'PY'
import http.client, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
for path in ["/token", "/bits?n=256"]:
    for _ in range(10000):
        conn.request("GET", path)
        r = conn.getresponse(); r.read()
        assert r.status == 200, r.status
print("served 10,000 /token and 10,000 /bits?n=256")
PY
kill -INT "$spid"; wait "$spid" || true
reseeds=$(curl -fsS "http://127.0.0.1:$((port + 1))/metrics" | awk '/^drbgd_reseeds_total/ && !/reason="startup"/ {s += $2} END {print s + 0}')
calls=$(awk '$NF == "getrandom" {print $4}' "$out")
echo "getrandom calls while serving 20,000 requests in $((SECONDS - start)) s: ${calls:-0}" \
  "(reseeds since start-up: $reseeds; the rest are readiness probes of the entropy source, at most one a second)"
cat "$out"
