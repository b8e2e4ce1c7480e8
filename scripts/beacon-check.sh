#!/usr/bin/env bash
# drand's own clients against drbgd's beacon, offline, on loopback: two replicas of the release
# binary serving config/examples/verifiable.toml (the example key, auth off), then
# - npm drand-client 1.4.2 and tlock-js 0.9.0 (scripts/beacon-check.js): the current round and
#   the one before fetched and verified with the chain hash and public key pinned,
#   /public/latest agreeing; a message timelocked to two periods ahead, not decryptable before,
#   decrypted after;
# - PyPI drand-verify 0.2.1 (scripts/beacon-check.py): the same rounds accepted;
# - the two replicas answer the same round with identical bytes; rounds 3 and 100 periods ahead
#   get 425 Too Early.
# Needs node with scripts/beacon-clients/node_modules (`npm ci` there) and python3 with
# drand-verify==0.2.1; .ci/run installs both.
#
# usage: scripts/beacon-check.sh [DRBGD_BIN]   (default: $DRBGD_BIN, else target/release/drbgd;
#        .ci/run passes the release binary, as to scripts/receipt-check.py)
set -euo pipefail
bin=$(realpath "${1:-${DRBGD_BIN:-target/release/drbgd}}")
cd "$(dirname "$0")/.."
config=config/examples/verifiable.toml
# The example chain, as its file's comments and docs/verifiable.md name it.
hash=8d61d591412d3946ebf8feba1bfe9665544c8af2929ce61d7d9679752fcddb29
public_key=81ef98fb75fff9705e51d57870319ce0eb94b07601ddc5747fe13807c1429008090c5436cb2d68b6e6bf2e9d8ca428da109154aedc9bf7764f5bf9a41dbc24815b594b647246540964692ab3294c83327193c4b3bbf6ecdb7cac469c1a6f9b10
[ -d scripts/beacon-clients/node_modules ] || { echo "no scripts/beacon-clients/node_modules: npm ci there first"; exit 2; }

# Below Linux's ephemeral ports (32768 and up), where a client socket may hold one.
port=$((20000 + RANDOM % 12000))
a=127.0.0.1:$port
b=127.0.0.1:$((port + 2))
logs=$(mktemp -d)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$logs"
}
trap cleanup EXIT
# The example key's file is 0644 in a checkout (git keeps no other modes): drbgd warns, and serves.
"$bin" serve --config "$config" --listen "$a" --admin-listen "127.0.0.1:$((port + 1))" >"$logs/a.log" 2>&1 &
pids+=($!)
"$bin" serve --config "$config" --listen "$b" --admin-listen "127.0.0.1:$((port + 3))" >"$logs/b.log" 2>&1 &
pids+=($!)
for admin in "127.0.0.1:$((port + 1))" "127.0.0.1:$((port + 3))"; do
  for _ in $(seq 100); do curl -fsS "http://$admin/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -fsS "http://$admin/readyz" >/dev/null || { echo "drbgd at $admin never became ready"; cat "$logs"/*.log; exit 1; }
done

echo "--- /beacon/info names the example chain"
info=$(curl -fsS "http://$a/beacon/info")
echo "$info"
python3 - "$info" "$hash" "$public_key" <<'PY'
import json, sys
info, hash_, public_key = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
assert info["hash"] == hash_ and info["public_key"] == public_key, info
assert info["schemeID"] == "bls-unchained-g1-rfc9380" and info["period"] == 3, info
PY

echo "--- drand-client 1.4.2 and tlock-js 0.9.0"
NODE_PATH="$PWD/scripts/beacon-clients/node_modules" node scripts/beacon-check.js "http://$a/beacon" "$hash" "$public_key" \
  | tee "$logs/node.out"
rounds=$(sed -n 's/^verified-rounds //p' "$logs/node.out")
[ -n "$rounds" ] || { echo "beacon-check.js printed no verified rounds"; exit 1; }

echo "--- drand-verify 0.2.1"
python3 scripts/beacon-check.py "http://$a/beacon" "$public_key" "$rounds"

echo "--- two replicas, one key: the same bytes"
round=$(curl -fsS "http://$a/beacon/public/latest" | python3 -c 'import json, sys; print(json.load(sys.stdin)["round"])')
for r in "$round" 1 123456; do
  cmp <(curl -fsS "http://$a/beacon/public/$r") <(curl -fsS "http://$b/beacon/public/$r") \
    || { echo "round $r differs between the replicas"; exit 1; }
done
echo "rounds $round, 1 and 123456: identical on both replicas"

echo "--- rounds ahead: 425 Too Early"
for ahead in 3 100; do
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://$a/beacon/public/$((round + ahead))")
  [ "$code" = 425 ] || { echo "round $((round + ahead)) ($ahead periods ahead): $code, not 425"; exit 1; }
done
echo "rounds 3 and 100 periods ahead: 425"
echo "beacon checks passed"
