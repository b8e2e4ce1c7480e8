#!/usr/bin/env bash
# What does a refused request cost? Requests/s of served and refused calls of the example
# callers (config/examples/callers.toml, audit log on), drbgd pinned to core 0 with one shard,
# wrk -t1 -c32 pinned to core 1, alternating over rounds (the cost of named callers: per-caller
# policy, quotas and the audit trail).
#
# Usage: scripts/caller-bench.sh [rounds=2] [seconds=8]
# Env:   DRBGD=path (default target/release/drbgd, built if absent). Needs wrk, taskset.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
secs=${2:-8}
drbgd=${DRBGD:-target/release/drbgd}
[ -x "$drbgd" ] || cargo build --release --locked --bin drbgd
log=$(mktemp)
taskset -c 0 "$drbgd" serve --config config/examples/callers.toml --listen 127.0.0.1:39001 \
  --admin-listen 127.0.0.1:39002 --shards 1 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do curl -fsS http://127.0.0.1:39002/readyz >/dev/null 2>&1 && break; sleep 0.1; done
run() { # path key label
  taskset -c 1 wrk -t1 -c32 -d"${secs}s" -H "Authorization: Bearer $2" "http://127.0.0.1:39001$1" |
    awk -v n="$3" '/Non-2xx/ {bad = $NF} /Requests\/sec/ {rps = $2} /requests in/ {all = $1}
      END {printf "%-40s %10.0f req/s  (%d of %d not 2xx)\n", n, rps, bad, all}'
}
for round in $(seq "$rounds"); do
  echo "round $round"
  run /token batch-example-key "batch /token, served (200)"
  run /token web-example-key "web /token, over quota (429)"
  run "/int?max=6" web-example-key "web /int, route_not_allowed (403)"
  run /token not-a-key "unknown key (401)"
done
