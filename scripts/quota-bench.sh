#!/usr/bin/env bash
# What does a shared quota store cost on the request path? Requests/s of a quota'd GET /token
# with the buckets in Redis (`[quota] store = "redis"`) against the same caller with the local
# store, in one run, alternating which goes first, and the Redis commands per 1,000 admitted
# requests (INFO commandstats around the Redis rounds).
#
# Both servers are pinned to core 0 (one shard, auth on, the caller `bench` with a quota far
# above what one core serves, so every request is admitted and charged), redis-server and
# wrk (-t1 -c32) to core 1. A row's ratio is the median over the rounds of the pair ratios.
#
# Usage: scripts/quota-bench.sh [rounds=5] [seconds=3]
# Needs: wrk, redis-server, redis-cli (Debian), taskset.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
secs=${2:-3}
drbgd=${DRBGD:-target/release/drbgd}
[ -x "$drbgd" ] || cargo build --release --locked --bin drbgd
out=$(mktemp -d)
rport=26379
key=bench-key
digest=$(printf %s "$key" | sha256sum | cut -d' ' -f1)
cat >"$out/bench.toml" <<EOF
[auth]
enabled = true
[callers.bench]
key_sha256 = ["$digest"]
[callers.bench.quota]
requests_per_second = 10000000
burst = 10000000
EOF
taskset -c 1 redis-server --port $rport --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
rpid=$!
for _ in $(seq 50); do redis-cli -p $rport ping >/dev/null 2>&1 && break; sleep 0.1; done
common=(--config "$out/bench.toml" --shards 1)
DRBGD__QUOTA__STORE=local taskset -c 0 "$drbgd" serve "${common[@]}" --listen 127.0.0.1:28180 \
  --admin-listen 127.0.0.1:28181 >"$out/local.log" 2>&1 &
lpid=$!
DRBGD__QUOTA__STORE=redis DRBGD__QUOTA__URL=redis://127.0.0.1:$rport DRBGD__QUOTA__PREFIX=bench \
  taskset -c 0 "$drbgd" serve "${common[@]}" --listen 127.0.0.1:28280 --admin-listen 127.0.0.1:28281 \
  >"$out/redis.log" 2>&1 &
spid=$!
trap 'kill $lpid $spid $rpid 2>/dev/null || true; rm -rf "$out"' EXIT
for port in 28181 28281; do
  for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
done
curl -fsS -H "Authorization: Bearer $key" http://127.0.0.1:28280/usage | grep -q '"scope":"global"' ||
  { echo "the redis-store server is not global"; cat "$out/redis.log"; exit 1; }

# Requests/s and non-2xx responses of one wrk run.
run() {
  local text
  text=$(taskset -c 1 wrk -t1 -c32 -d"${secs}s" -H "Authorization: Bearer $key" "$1" 2>&1)
  local rps non2xx total
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$text")
  total=$(awk '/requests in/ {print $1}' <<<"$text")
  non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$text")
  echo "$rps ${total:-0} ${non2xx:-0}"
}
# Commands the store ran (each script's inner commands included), and script calls (round trips).
commands() { redis-cli -p $rport info commandstats | awk -F'[=,:]' '/^cmdstat_/ && !/info|config/ {n += $3} END {print n}'; }
calls() { redis-cli -p $rport info commandstats | awk -F'[=,:]' '/^cmdstat_eval/ {n += $3} END {print n + 0}'; }

local_rps=() redis_rps=() ratios=() cmds=0 trips=0 admitted=0 refused=0
for r in $(seq "$rounds"); do
  order=(local redis)
  ((r % 2 == 0)) && order=(redis local)
  for which in "${order[@]}"; do
    if [ "$which" = local ]; then
      read -r rps _ bad < <(run http://127.0.0.1:28180/token)
      local_rps+=("$rps")
    else
      before=$(commands) before_calls=$(calls)
      read -r rps total bad < <(run http://127.0.0.1:28280/token)
      after=$(commands) after_calls=$(calls)
      redis_rps+=("$rps")
      cmds=$((cmds + after - before)) trips=$((trips + after_calls - before_calls))
      admitted=$((admitted + total - bad))
    fi
    refused=$((refused + bad))
  done
  ratios+=("$(awk -v a="${redis_rps[-1]}" -v b="${local_rps[-1]}" 'BEGIN {printf "%.3f", a / b}')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "rounds: $rounds x ${secs}s, wrk -t1 -c32, servers on core 0, redis-server and wrk on core 1"
printf '%-28s %10s\n' "quota'd /token, local store" "$(median "${local_rps[@]}") req/s"
printf '%-28s %10s\n' "quota'd /token, redis store" "$(median "${redis_rps[@]}") req/s"
echo "ratio redis/local (median of pairs): $(median "${ratios[@]}") (pairs: ${ratios[*]})"
per1000() { awk -v c="$1" -v a="$admitted" 'BEGIN {printf "%.3f", a ? 1000 * c / a : 0}'; }
echo "admitted requests in the redis rounds: $admitted"
echo "redis script calls (round trips: lease exchanges and heartbeats): $trips = $(per1000 $trips) per 1,000 admitted"
echo "redis commands (INFO commandstats, each script's inner commands included): $cmds = $(per1000 $cmds) per 1,000"
echo "refused (non-2xx) responses in all rounds: $refused"
