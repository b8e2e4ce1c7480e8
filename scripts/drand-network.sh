#!/usr/bin/env bash
# drbgd following a real drand network, on loopback: three drand v2.1.8 nodes (built with
# `go install -tags conn_insecure github.com/drand/drand/v2/cmd/drand@v2.1.8`: the tag lets them
# talk plain gRPC to each other) run a distributed key generation (threshold 2, period 3 s,
# quicknet's scheme bls-unchained-g1-rfc9380) and produce rounds; drbgd follows them
# (`[beacon] source = "drand"`, the three nodes' public listeners as upstreams, the network's
# chain hash and key pinned). Then:
# - drbgd's /beacon/info is the network's, and its rounds are the nodes' byte for byte;
# - drand-client 1.4.2 and tlock-js 0.9.0 (scripts/beacon-check.js), pinned to the network's
#   own chain hash and key, verify rounds fetched through drbgd and open a tlock ciphertext at
#   its round; PyPI drand-verify 0.2.1 accepts them (scripts/beacon-check.py);
# - one node killed: rounds keep coming (two of three sign);
# - two killed (below the threshold, the network halts): drbgd serves the last verified round,
#   /beacon/health is 503 with current < expected - 1, /bits and /readyz still 200;
# - both restarted: the network catches up, and drbgd with it (/beacon/health 200).
# Then draws bound to a round (scripts/round-draw-check.py): a drbgd with tickets binds tickets to
# a round three ahead; 425 before it; after it, each receipt's round checked with drand-verify
# against a node's own and its values recomputed by docs/verifiable.md's Python block; a changed
# parameter fails that check, POST /verify and `drbgd verify --beacon-info`.
# Also the chained scheme: a fake upstream (scripts/drand-fake-upstream.py) serving League of
# Entropy mainnet's published /info and round 72785 (pedersen-bls-chained): drbgd serves it
# verified (drand-client and drand-verify accept it through drbgd), passes over an upstream
# that serves it with a flipped signature, and never serves it from that one alone.
#
# usage: scripts/drand-network.sh [DRBGD_BIN]   (drand on PATH or $DRAND_BIN; node with
#        scripts/beacon-clients/node_modules; python3 with drand-verify==0.2.1)
set -euo pipefail
bin=$(realpath "${1:-${DRBGD_BIN:-target/release/drbgd}}")
cd "$(dirname "$0")/.."
drand=${DRAND_BIN:-$(command -v drand || true)}
[ -x "$drand" ] || { echo "no drand binary (go install -tags conn_insecure github.com/drand/drand/v2/cmd/drand@v2.1.8)"; exit 2; }
[ -d scripts/beacon-clients/node_modules ] || { echo "no scripts/beacon-clients/node_modules: npm ci there first"; exit 2; }
t0=$SECONDS
dir=$(mktemp -d)
# Below Linux's ephemeral ports (32768 and up): a client socket (or one in TIME_WAIT) holding one
# of ours would make a node fail to bind.
base=$((21000 + RANDOM % 11000))
pids=()
node_pid=()
cleanup() {
  local pid
  for pid in "${pids[@]}" "${node_pid[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$dir"/*.log; do echo "--- $f"; tail -15 "$f"; done; exit 1; }
priv() { echo "127.0.0.1:$((base + $1 * 10))"; }
pub() { echo "127.0.0.1:$((base + $1 * 10 + 1))"; }
ctl() { echo "$((base + $1 * 10 + 2))"; }
met() { echo "127.0.0.1:$((base + $1 * 10 + 3))"; }
start_node() {
  "$drand" start --folder "$dir/node$1" --id default --private-listen "$(priv "$1")" --public-listen "$(pub "$1")" \
    --control "$(ctl "$1")" --metrics "$(met "$1")" >>"$dir/node$1.log" 2>&1 &
  node_pid[$1]=$!
}
get() { curl -fsS --max-time 5 "$1"; }

echo "--- three drand nodes, a DKG (threshold 2, period 3 s, bls-unchained-g1-rfc9380)"
for i in 1 2 3; do
  "$drand" generate-keypair --folder "$dir/node$i" --id default --scheme bls-unchained-g1-rfc9380 "$(priv "$i")" \
    >"$dir/keygen$i.log" 2>&1 || fail "drand generate-keypair $i"
  start_node "$i"
done
for i in 1 2 3; do
  for _ in $(seq 100); do "$drand" util check --id default "$(priv "$i")" >/dev/null 2>&1 && break; sleep 0.1; done
done
"$drand" dkg generate-proposal --id default --control "$(ctl 1)" --joiner "$(priv 1)" --joiner "$(priv 2)" \
  --joiner "$(priv 3)" --out "$dir/proposal.toml" >"$dir/dkg.log" 2>&1 || fail "dkg generate-proposal"
"$drand" dkg init --id default --control "$(ctl 1)" --proposal "$dir/proposal.toml" --threshold 2 --period 3s \
  --scheme bls-unchained-g1-rfc9380 --catchup-period 1s --genesis-delay 10s --timeout 5m >>"$dir/dkg.log" 2>&1 \
  || fail "dkg init"
for i in 2 3; do "$drand" dkg join --id default --control "$(ctl "$i")" >>"$dir/dkg.log" 2>&1 || fail "dkg join $i"; done
"$drand" dkg execute --id default --control "$(ctl 1)" >>"$dir/dkg.log" 2>&1 || fail "dkg execute"
info=
for _ in $(seq 300); do
  info=$(get "http://$(pub 1)/info" 2>/dev/null) && [ -n "$info" ] && break
  sleep 0.1
done
[ -n "$info" ] || fail "node 1 serves no /info after the DKG"
read -r hash public_key genesis < <(python3 -c 'import json, sys; i = json.loads(sys.argv[1]); print(i["hash"], i["public_key"], i["genesis_time"])' "$info")
echo "chain $hash, genesis $genesis ($((genesis - $(date +%s))) s from now)"
for _ in $(seq 300); do
  r=$(get "http://$(pub 1)/$hash/public/latest" 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin).get("round", 0))' 2>/dev/null || echo 0)
  [ "${r:-0}" -ge 1 ] && break
  sleep 0.2
done
[ "${r:-0}" -ge 1 ] || fail "the network produced no round"
echo "the network's first round came $(($(date +%s) - genesis)) s after genesis; $((SECONDS - t0)) s since the start"

echo "--- drbgd following the three nodes"
api=127.0.0.1:$((base + 51)) admin=127.0.0.1:$((base + 52))
upstreams="[\"http://$(pub 1)\",\"http://$(pub 2)\",\"http://$(pub 3)\"]"
DRBGD__BEACON__ENABLED=true DRBGD__BEACON__SOURCE=drand DRBGD__BEACON__UPSTREAMS="$upstreams" \
  DRBGD__BEACON__ALLOW_HTTP=true DRBGD__BEACON__CHAIN_HASH="$hash" DRBGD__BEACON__PUBLIC_KEY="$public_key" \
  DRBGD__BEACON__UPSTREAM_TIMEOUT_MS=1000 \
  "$bin" serve --listen "$api" --admin-listen "$admin" >"$dir/drbgd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do get "http://$admin/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
for _ in $(seq 100); do [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$api/beacon/health")" = 200 ] && break; sleep 0.1; done
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://$api/beacon/health")" = 200 ] || fail "drbgd's /beacon/health is not 200"
python3 - "$(get "http://$api/beacon/info")" "$info" <<'PY' || fail "drbgd's /beacon/info is not the network's"
import json, sys
ours, theirs = (json.loads(a) for a in sys.argv[1:])
assert ours == theirs, (ours, theirs)
PY
round_of() { get "http://$api/beacon/public/latest" | python3 -c 'import json, sys; print(json.load(sys.stdin)["round"])'; }
# Round 2 at least: the clients below check the current round and the one before it.
for _ in $(seq 100); do [ "$(round_of)" -ge 2 ] && break; sleep 0.2; done
latest=$(round_of)
for r in 1 "$latest"; do
  ours=$(get "http://$api/beacon/public/$r") theirs=$(get "http://$(pub 2)/$hash/public/$r")
  [ "$ours" = "$theirs" ] || fail "round $r: drbgd $ours, node 2 $theirs"
done
echo "drbgd: /beacon/info the network's; rounds 1 and $latest the nodes' byte for byte"

echo "--- drand-client and tlock-js through drbgd, pinned to the network"
NODE_PATH="$PWD/scripts/beacon-clients/node_modules" node scripts/beacon-check.js "http://$api/beacon" "$hash" "$public_key" \
  | tee "$dir/node.out" || fail "beacon-check.js"
rounds=$(sed -n 's/^verified-rounds //p' "$dir/node.out")
python3 scripts/beacon-check.py "http://$api/beacon" "$public_key" "$rounds" || fail "drand-verify"

echo "--- one node killed: rounds keep coming"
kill -KILL "${node_pid[3]}"; wait "${node_pid[3]}" 2>/dev/null || true
before=$(round_of)
sleep 7
after=$(round_of)
[ "$after" -ge $((before + 2)) ] || fail "with two of three nodes, rounds $before -> $after in 7 s"
echo "rounds $before -> $after in 7 s with node 3 down"

echo "--- two killed (below the threshold): the network halts; drbgd keeps the last round"
kill -KILL "${node_pid[2]}"; wait "${node_pid[2]}" 2>/dev/null || true
sleep 8
stalled=$(round_of)
health=$(curl -s -w ' %{http_code}' "http://$api/beacon/health")
python3 - "$health" <<'PY' || fail "/beacon/health while halted: $health"
import json, sys
body, status = sys.argv[1].rsplit(" ", 1)
h = json.loads(body)
assert status == "503" and h["current"] + 1 < h["expected"], (status, h)
PY
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://$api/bits?n=64")" = 200 ] || fail "/bits while the network halts"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://$admin/readyz")" = 200 ] || fail "/readyz while the network halts"
lag=$(get "http://$admin/metrics" | sed -n 's/^drbgd_beacon_lag_rounds //p')
echo "halted: latest $stalled, /beacon/health $health, /bits 200, /readyz 200, drbgd_beacon_lag_rounds $lag"

echo "--- both restarted: the network catches up, and drbgd with it"
start_node 2
start_node 3
ok=
for _ in $(seq 300); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$api/beacon/health")" = 200 ] && { ok=1; break; }
  sleep 0.2
done
[ -n "$ok" ] || fail "drbgd did not catch up within 60 s of the nodes' restart"
echo "caught up: latest $(round_of), /beacon/health 200"
invalid=$(get "http://$admin/metrics" | awk '/^drbgd_beacon_upstream_rounds_total\{.*outcome="invalid"/ {n += $NF} END {print n + 0}')
[ "$invalid" = 0 ] || fail "a real node's round counted invalid ($invalid)"

echo "--- draws bound to a round: 425 before it, then values drand-verify and the docs' Python recompute"
python3 scripts/round-draw-check.py "$bin" "$dir" "http://$(pub 1)" "$hash" "$public_key" "$upstreams" || fail "round-bound draws"

echo "--- the chained scheme: League of Entropy mainnet's published round, through a fake upstream"
python3 scripts/drand-fake-upstream.py check "$bin" "$dir" || fail "the chained scheme"
echo "drand network checks OK in $((SECONDS - t0)) s"
