#!/usr/bin/env bash
# What does a signed receipt cost? Requests/s of /token and /bits?n=256 with and without
# receipt=true, on one server (config/examples/verifiable.toml, one shard, pinned to core 0;
# wrk -t1 -c32 on core 1), each pair measured back to back, the order alternating by round; a
# row's ratio is the median of its pairs' ratios (min-max beside it), and so is its cost of a
# receipt: 1/(requests/s with receipt) - 1/(requests/s plain), in µs of the server's one core.
#
# Usage: scripts/receipt-bench.sh [rounds=5] [seconds=2]
# Env:   DRBGD=path (default target/release/drbgd, built if absent).
# Needs: wrk, taskset.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
secs=${2:-2}
drbgd=${DRBGD:-target/release/drbgd}
[ -x "$drbgd" ] || cargo build --release --locked --bin drbgd
out=$(mktemp -d)
api=127.0.0.1:28180 admin=127.0.0.1:28181
# The access log at info as in http-bench.sh, and the audit line the example turns on.
taskset -c 0 "$drbgd" serve --config config/examples/verifiable.toml --listen "$api" --admin-listen "$admin" \
  --shards 1 >"$out/drbgd.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 100); do curl -fsS "http://$admin/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "http://$api/token?receipt=true" | grep -q '"signature"' || { echo "no receipt served"; exit 1; }

rps() { taskset -c 1 wrk -t1 -c32 -d"${secs}s" "$1" | awk '/Requests\/sec/ {printf "%d", $2}'; }
for round in $(seq "$rounds"); do
  for path in "/token" "/bits?n=256"; do
    sep='?'; [[ $path == *'?'* ]] && sep='&'
    if (( round % 2 )); then
      plain=$(rps "http://$api$path"); signed=$(rps "http://$api$path${sep}receipt=true")
    else
      signed=$(rps "http://$api$path${sep}receipt=true"); plain=$(rps "http://$api$path")
    fi
    echo "$path $plain $signed" >>"$out/results"
  done
done
python3 - "$out/results" "$rounds" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    path, plain, signed = line.split()
    rows.setdefault(path, []).append((float(plain), float(signed)))
med = statistics.median
print(f"| route | requests/s plain | with receipt=true | ratio, paired (median of {sys.argv[2]}; min-max) "
      "| µs of one core per receipt beyond the plain request, paired (median; min-max) |")
print("|---|---|---|---|---|")
for path, pairs in rows.items():
    ratios = [s / p for p, s in pairs]
    extra = [1e6 / s - 1e6 / p for p, s in pairs]
    print(f"| {path} | {med(p for p, _ in pairs):,.0f} | {med(s for _, s in pairs):,.0f} | "
          f"{med(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}) | "
          f"{med(extra):.1f} ({min(extra):.1f}-{max(extra):.1f}) |")
PY
