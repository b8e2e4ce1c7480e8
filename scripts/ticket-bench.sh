#!/usr/bin/env bash
# Ticketed draws against plain receipts: the release binary with config/examples/verifiable.toml,
# auth and [tickets] on (an SQLite file in a temporary directory), pinned to core 0; k6's tickets
# scenario (loadtest/scenarios/tickets.js: 32 clients, POST /int with receipt=true, then the
# same under a fresh ticket each) on core 1. Prints each kind's draws/s and latency p50/p99.
#
# Usage: scripts/ticket-bench.sh [seconds=10]
# Env:   DRBGD=path (default target/release/drbgd).   Needs: k6, taskset.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
drbgd=${DRBGD:-target/release/drbgd}
export PATH="$PATH:$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin"
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
key=ticket-bench-key
digest=$(printf %s "$key" | sha256sum | cut -d' ' -f1)
cat config/examples/verifiable.toml |
  python3 -c 'import sys; t = sys.stdin.read(); print(t.replace("[auth]\nenabled = false", "[auth]\nenabled = true"))' \
    >"$work/bench.toml"
cat >>"$work/bench.toml" <<TOML
[callers.bench]
key_sha256 = ["$digest"]

[tickets]
enabled = true
path = "$work/tickets.sqlite3"
max_unused = 1000000
TOML
api=127.0.0.1:28190 admin=127.0.0.1:28191
DRBGD__LOG__AUDIT=false taskset -c 0 "$drbgd" serve --config "$work/bench.toml" --listen "$api" --admin-listen "$admin" \
  --shards 1 >"$work/drbgd.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -fsS "http://$admin/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
taskset -c 1 k6 run -q -e BASE_URL="http://$api" -e API_KEY="$key" -e SECONDS="$secs" \
  --summary-export "$work/summary.json" loadtest/scenarios/tickets.js >"$work/k6.log" 2>&1 || { cat "$work/k6.log"; exit 1; }
python3 - "$work/summary.json" "$secs" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["metrics"]
secs = float(sys.argv[2])
print("| POST /int (count=5), 32 clients | draws/s | latency p50 | p99 |")
print("|---|---|---|---|")
for kind in ("plain", "ticketed"):
    n = m[f"http_reqs{{kind:{kind}}}"]["count"]
    d = m[f"http_req_duration{{kind:{kind}}}"]
    label = "with receipt=true" if kind == "plain" else "under a fresh ticket (receipt, kept in SQLite)"
    print(f"| {label} | {n / secs:,.0f} | {d['p(50)']:.2f} ms | {d['p(99)']:.2f} ms |")
PY
