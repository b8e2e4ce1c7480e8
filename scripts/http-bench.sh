#!/usr/bin/env bash
# What does the stack cost? Requests/s of drbgd's routes against a bare axum route on the same
# machine, in one run, alternating the order over several rounds (the request-path budget:
# small responses within 20 % of a bare axum route).
#
# Each server is pinned to core 0 (drbgd with one shard, default config: access log at info,
# written to a file), the load generator to core 1: wrk -t1 -c32 for HTTP, ghz for gRPC.
#
# Paired runs: the machine's speed drifts by tens of percent within a minute (other tenants), so
# every row is measured right after (or, every other round, right before) its group's baseline,
# and its ratio is taken within that pair. A row's ratio is the median over the rounds of its
# pair ratios (min–max beside it); requests/s are medians over the rounds.
#
# Usage: scripts/http-bench.sh [rounds=5] [seconds=2]
# Env:   DRBGD=path (default target/release/drbgd, built if absent), BARE=path (the example),
#        ONLY=regex (only the rows whose name matches, e.g. ONLY='token|bits\?').
# Needs: wrk (Debian), ghz (go install github.com/bojand/ghz/cmd/ghz@v0.120.0), taskset.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
secs=${2:-2}
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

# name | group | url (HTTP) or "grpc:<method>:<json>"; the first row of each group is its baseline
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

declare -A baseline baseline_name  # group -> its baseline's url, name
for row in "${rows[@]}"; do
  IFS='|' read -r name group url <<<"$row"
  [ -n "${baseline[$group]:-}" ] || { baseline[$group]=$url; baseline_name[$group]=$name; }
done

if [ -n "${ONLY:-}" ]; then  # a subset: rows whose name matches the regex ONLY (baselines run anyway)
  mapfile -t rows < <(printf '%s\n' "${rows[@]}" | awk -F'|' -v only="$ONLY" '$1 ~ only')
fi

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
    [ "$url" = "${baseline[$group]}" ] && continue
    if (( round % 2 == 1 )); then
      b=$(measure "${baseline[$group]}"); r=$(measure "$url")
    else
      r=$(measure "$url"); b=$(measure "${baseline[$group]}")
    fi
    # name|baseline's name|row rps|generator ms (bulk /bits rows)|baseline rps of the pair
    IFS=' ' read -r rps gen <<<"$r"
    echo "$name|${baseline_name[$group]}|$rps|${gen:-}|${b%% *}" >>"$out/results"
  done
  echo "round $round done" >&2
done

python3 - "$out/results" "$rounds" <<'PY'
import statistics, sys
rows, order, base = {}, [], {}
for line in open(sys.argv[1]):
    name, group, rps, gen, b = line.rstrip("\n").split("|")
    if name not in rows:
        order.append(name)
    rps, b = float(rps or 0), float(b or 0)
    r = rows.setdefault(name, {"group": group, "rps": [], "ratio": [], "gen": [], "ideal": []})
    r["rps"].append(rps)
    r["ratio"].append(rps / b if b else float("nan"))
    base.setdefault(group, []).append(b)
    if gen:
        # The best a stream can do: generating the bytes, then sending a constant body of
        # that size (the bare route's time per response in the same pair), one after the other.
        g_ms = float(gen)
        r["gen"].append(g_ms)
        r["ideal"].append(rps / (1e3 / (g_ms + 1e3 / b)) if b else float("nan"))
med = statistics.median
print(f"| route | requests/s (median of {sys.argv[2]}) | ratio to the baseline, paired (median; min–max) | vs generation + constant body |")
print("|---|---|---|---|")
for group, values in base.items():
    print(f"| {group} (baseline) | {med(values):,.0f} | 1.00× | |")
    for name in [n for n in order if rows[n]["group"] == group]:
        r = rows[name]
        ceiling = ""
        if r["gen"]:
            ceiling = f"{med(r['ideal']):.2f}× (gen {med(r['gen']):.2f} ms)"
        ratio = f"{med(r['ratio']):.2f}× ({min(r['ratio']):.2f}–{max(r['ratio']):.2f})"
        print(f"| {name} | {med(r['rps']):,.0f} | {ratio} | {ceiling} |")
PY
echo "access log lines written: $(wc -l <"$out/drbgd.log")"
