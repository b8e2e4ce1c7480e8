#!/usr/bin/env bash
# The drop-in front-ends against the real clients that speak their protocols, on loopback:
# Debian's `pollinate` (Ubuntu's boot-time Pollen client) in its test mode against POST
# /pollen of the release binary, which exits 0 only when the challenge's answer matched; and,
# as a negative control, against a route that does not speak Pollen.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/drbgd
port=$((20000 + RANDOM % 20000))
api=127.0.0.1:$port
admin=127.0.0.1:$((port + 1))
log=$(mktemp)
out=$(mktemp)
DRBGD__POLLEN__ENABLED=true "$bin" serve --listen "$api" --admin-listen "$admin" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -f "$log" "$out"' EXIT
for _ in $(seq 100); do curl -fsS "http://$admin/readyz" >/dev/null 2>&1 && break; sleep 0.1; done

echo "--- pollinate --testing --strict against POST /pollen"
pollinate --testing --strict --server "http://$api/pollen" </dev/null >"$out"
bytes=$(wc -c <"$out")
[ "$bytes" -eq 64 ] || { echo "pollinate printed $bytes bytes, not the 64-byte seed"; exit 1; }
echo "pollinate: challenge answered, a 64-byte seed received"
grep -q 'route="/pollen".*status=200' "$log" || { echo "no access line for /pollen"; cat "$log"; exit 1; }

echo "--- negative control: pollinate against a route that does not answer Pollen's challenge"
if pollinate --testing --strict --server "http://$api/bits" </dev/null >/dev/null 2>&1; then
  echo "pollinate accepted a server that did not answer its challenge"; exit 1
fi
echo "pollinate refused it, as it must"
