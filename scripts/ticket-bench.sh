#!/usr/bin/env bash
# Ticketed draws against plain receipts: the release binary with config/examples/verifiable.toml,
# auth and [tickets] on (an SQLite file in a temporary directory), pinned to core 0; k6's tickets
# scenario (loadtest/scenarios/tickets.js: 32 clients, POST /int with receipt=true, then the
# same under a fresh ticket each) on core 1. Prints each kind's draws/s and latency p50/p99, and
# the store's own latency (drbgd_results_store_duration_seconds{op="settle"}: a use's commit)
# p50/p99 from the histogram's buckets.
# With --postgres DIR: the tickets in PostgreSQL (a server scripts/postgres.sh started in DIR;
# a database of this run's), whose server runs unpinned beside them.
#
# Usage: scripts/ticket-bench.sh [--postgres DIR] [seconds=10]
# Env:   DRBGD=path (default target/release/drbgd).   Needs: k6, taskset.
set -euo pipefail
cd "$(dirname "$0")/.."
pg_dir=
if [ "${1:-}" = --postgres ]; then pg_dir=$2; shift 2; fi
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
max_unused = 1000000
TOML
if [ -n "$pg_dir" ]; then
  db=drbgd_bench_$$ port=$(cat "$pg_dir/port")
  PGPASSWORD=$(cat "$pg_dir/password") psql -h 127.0.0.1 -p "$port" -U drbgd -q -c "CREATE DATABASE $db" drbgd
  printf '[results]\nstore = "postgres"\nurl = "postgresql://drbgd@127.0.0.1:%s/%s"\npassword_file = "%s"\nallow_plaintext_password = true\n' \
    "$port" "$db" "$pg_dir/password" >>"$work/bench.toml"
  store=PostgreSQL
else
  printf '[results]\npath = "%s"\n' "$work/tickets.sqlite3" >>"$work/bench.toml"
  store=SQLite
fi
api=127.0.0.1:28190 admin=127.0.0.1:28191
DRBGD__LOG__AUDIT=false taskset -c 0 "$drbgd" serve --config "$work/bench.toml" --listen "$api" --admin-listen "$admin" \
  --shards 1 >"$work/drbgd.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -fsS "http://$admin/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
taskset -c 1 k6 run -q -e BASE_URL="http://$api" -e API_KEY="$key" -e SECONDS="$secs" \
  --summary-export "$work/summary.json" loadtest/scenarios/tickets.js >"$work/k6.log" 2>&1 || { cat "$work/k6.log"; exit 1; }
curl -fsS "http://$admin/metrics" >"$work/metrics.txt"
python3 - "$work/summary.json" "$secs" "$store" "$work/metrics.txt" <<'PY'
import json, re, sys
m = json.load(open(sys.argv[1]))["metrics"]
secs, store = float(sys.argv[2]), sys.argv[3]
print("| POST /int (count=5), 32 clients | draws/s | latency p50 | p99 |")
print("|---|---|---|---|")
for kind in ("plain", "ticketed"):
    n = m[f"http_reqs{{kind:{kind}}}"]["count"]
    d = m[f"http_req_duration{{kind:{kind}}}"]
    label = "with receipt=true" if kind == "plain" else f"under a fresh ticket (receipt, kept in {store})"
    print(f"| {label} | {n / secs:,.0f} | {d['p(50)']:.2f} ms | {d['p(99)']:.2f} ms |")
buckets = []
for line in open(sys.argv[4]):
    b = re.match(r'drbgd_results_store_duration_seconds_bucket\{op="settle",le="([^"]+)"\} (\d+)', line)
    if b:
        buckets.append((float(b.group(1)), int(b.group(2))))
total = buckets[-1][1]
def quantile(q):
    return next(le for le, n in buckets if n >= q * total)
print(f"{store} store, a use's commit (op=settle, {total:,} calls): p50 <= {quantile(0.5) * 1000:g} ms, "
      f"p99 <= {quantile(0.99) * 1000:g} ms (histogram bucket bounds)")
PY
