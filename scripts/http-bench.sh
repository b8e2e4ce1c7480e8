#!/usr/bin/env bash
# What does the stack cost? Requests/s of drbgd's routes against a bare axum route on the same
# machine, in one run, alternating the order over several rounds (issue 13).
#
# Each server is pinned to core 0 (drbgd with one shard, default config: access log at info,
# written to a file), the load generator to core 1: wrk -t1 -c32 for HTTP, ghz for gRPC. Prints
# the median requests/s per row over the rounds and its ratio to the baseline of its group.
#
# Usage: scripts/http-bench.sh [rounds=3] [seconds=5]
# Env:   DRBGD=path (default target/release/drbgd, built if absent), BARE=path (the example).
# Needs: wrk (Debian), ghz (go install github.com/bojand/ghz/cmd/ghz@v0.120.0), taskset.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-5}
export PATH="$PATH:$(go env GOPATH 2>/dev/null)/bin"
drbgd=${DRBGD:-target/release/drbgd}
bare=${BARE:-target/release/examples/bare_axum}
[ -x "$drbgd" ] || cargo build --release --locked --bin drbgd
[ -x "$bare" ] || cargo build --release --locked --example bare_axum
out=$(mktemp -d)
api=127.0.0.1:28080 admin=127.0.0.1:28081 base=127.0.0.1:29000

taskset -c 0 "$drbgd" serve --listen "$api" --admin-listen "$admin" --shards 1 >"$out/drbgd.log" 2>&1 &
dpid=$!
taskset -c 0 "$bare" "$base" >/dev/null 2>&1 &
bpid=$!
trap 'kill $dpid $bpid 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 100); do curl -fsS "http://$admin/readyz" >/dev/null 2>&1 && curl -fsS "http://$base/const32" >/dev/null 2>&1 && break; sleep 0.1; done

# name | group | url (HTTP) or "grpc:<method>:<json>"
rows=(
  "bare 32 B|small|http://$base/const32"
  "admin /livez|small|http://$admin/livez"
  "/bits?n=256|small|http://$api/bits?n=256"
  "/token|small|http://$api/token"
  "/uuid|small|http://$api/uuid"
  "/int|small|http://$api/int?min=1&max=6"
  "404|small|http://$api/nope"
  "bare 1.25 MB|bulk|http://$base/const1250k"
)
for alg in aes256ctr aes128ctr randen chacha20 blake3; do
  rows+=("/bits 10^7 binary $alg|bulk|http://$api/bits?n=10000000&format=binary&alg=$alg")
done
rows+=(
  "gRPC Health/Check|grpc|grpc:grpc.health.v1.Health/Check:{}"
  "gRPC GetToken|grpc|grpc:drbgd.v1.RandomnessService/GetToken:{}"
  "gRPC GetBits n=256|grpc|grpc:drbgd.v1.RandomnessService/GetBits:{\"n\":256}"
)

gen_seconds() { # alg -> drbgd_generate_duration_seconds_sum for it
  curl -fsS "http://$admin/metrics" |
    awk -v a="alg=\"$1\"" 'index($0, "drbgd_generate_duration_seconds_sum{" a) == 1 {s = $2} END {print s + 0}'
}

measure() { # url -> "requests/s generator-ms-per-response" (the latter for /bits?...alg= rows)
  local url=$1
  if [[ $url == grpc:* ]]; then
    local rest=${url#grpc:}
    local method=${rest%%:*} data=${rest#*:}
    taskset -c 1 ghz --insecure --async -c 32 --connections 4 -z "${secs}s" --call "$method" -d "$data" \
      --format json "$api" 2>/dev/null | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["rps"]))'
  else
    local alg="" before=0
    [[ $url == *"alg="* && $url == "http://$api"* ]] && alg=${url##*alg=} && before=$(gen_seconds "$alg")
    taskset -c 1 wrk -t1 -c32 -d"${secs}s" "$url" >"$out/wrk"
    local rps requests
    rps=$(awk '/Requests\/sec/ {printf "%d", $2}' "$out/wrk")
    requests=$(awk '/requests in/ {print $1}' "$out/wrk")
    if [ -n "$alg" ]; then
      python3 -c "import sys; print($rps, ($(gen_seconds "$alg") - $before) / max($requests, 1) * 1e3)"
    else
      echo "$rps"
    fi
  fi
}

for round in $(seq "$rounds"); do
  order=("${rows[@]}")
  if (( round % 2 == 0 )); then  # alternate the order, so drift and heat do not favour one side
    mapfile -t order < <(printf '%s\n' "${rows[@]}" | tac)
  fi
  for row in "${order[@]}"; do
    IFS='|' read -r name group url <<<"$row"
    echo "$name|$group|$(measure "$url" | tr ' ' '|')" >>"$out/results"
  done
  echo "round $round done" >&2
done

python3 - "$out/results" "$rounds" <<'PY'
import statistics, sys
rows, gen, order = {}, {}, []
for line in open(sys.argv[1]):
    name, group, rps, *g = line.rstrip("\n").split("|")
    if name not in rows:
        order.append(name)
    rows.setdefault(name, (group, []))[1].append(int(float(rps or 0)))
    if g:
        gen.setdefault(name, []).append(float(g[0]))
baseline = {"small": "bare 32 B", "bulk": "bare 1.25 MB", "grpc": "gRPC Health/Check"}
med = lambda name: statistics.median(rows[name][1])
print(f"| route | requests/s (median of {sys.argv[2]}; min–max) | ratio to baseline | vs generation + constant body |")
print("|---|---|---|---|")
for name in order:
    group, values = rows[name]
    base = med(baseline[group]) or float("nan")
    ceiling = ""
    if name in gen:
        # The best a stream can do: generating the bytes, then sending a constant body of
        # that size (the bare route's time per response), one after the other.
        g_ms = statistics.median(gen[name])
        ideal = 1e3 / (g_ms + 1e3 / base)
        ceiling = f"{med(name) / ideal:.2f}× of {ideal:,.0f}/s (gen {g_ms:.2f} ms)"
    print(f"| {name} | {med(name):,.0f} ({min(values):,}–{max(values):,}) | {med(name) / base:.2f}× {baseline[group]} | {ceiling} |")
PY
echo "access log lines written: $(wc -l <"$out/drbgd.log")"
