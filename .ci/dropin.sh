#!/usr/bin/env bash
# The drop-in front-ends against the real clients that speak their protocols, offline, on
# loopback, the release binary serving config/examples/drop-in.toml (auth on):
# - Debian's `pollinate` (Ubuntu's boot-time Pollen client) in its test mode against POST
#   /pollen without credentials, which exits 0 only when the challenge's answer matched; and, as
#   a negative control, against a route that does not speak Pollen;
# - hvac (Vault) and boto3 (AWS KMS), .ci/dropin_clients.py, and the KMS door's attacks
#   (scripts/kms-attacks.py);
# - the AWS CLI (v1), with the example access key and with a wrong one;
# - RANDOM.ORG's official Python client, rdoclient 1.5.0 (scripts/randomorg-check.py): every
#   Basic and Signed method, tickets, signatures checked three ways, the values' distributions,
#   the 402 of a spent daily allowance.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/drbgd
port=$((20000 + RANDOM % 12000))
api=127.0.0.1:$port
admin=127.0.0.1:$((port + 1))
log=$(mktemp)
out=$(mktemp)
# The example's tickets' store (the RANDOM.ORG door keeps its signed results), a file of this run's.
store=$(mktemp -d)
DRBGD__RESULTS__PATH="$store/tickets.sqlite3" \
  "$bin" serve --config config/examples/drop-in.toml --listen "$api" --admin-listen "$admin" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$log" "$out" "$out.err" "$store"' EXIT
for _ in $(seq 300); do curl -fsS "http://$admin/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
# A server that is not up (a port taken, a slow start) is said, with its log: not left for the
# first client to fail on without a word.
curl -fsS "http://$admin/readyz" >/dev/null 2>&1 || { echo "drbgd not ready on $admin within 30 s:"; cat "$log"; exit 1; }

echo "--- pollinate --testing --strict against POST /pollen"
pollinate --testing --strict --server "http://$api/pollen" </dev/null >"$out" 2>"$out.err" \
  || { echo "pollinate failed (exit $?):"; cat "$out.err"; tail -20 "$log"; exit 1; }
bytes=$(wc -c <"$out")
[ "$bytes" -eq 64 ] || { echo "pollinate printed $bytes bytes, not the 64-byte seed"; exit 1; }
echo "pollinate: challenge answered, a 64-byte seed received"
grep -q 'caller="anonymous".*route="/pollen".*status=200' "$log" || { echo "no access line for /pollen"; cat "$log"; exit 1; }

echo "--- negative control: pollinate against a route that does not answer Pollen's challenge"
if pollinate --testing --strict --server "http://$api/bits" </dev/null >/dev/null 2>&1; then
  echo "pollinate accepted a server that did not answer its challenge"; exit 1
fi
echo "pollinate refused it, as it must"

echo "--- hvac and boto3"
python3 .ci/dropin_clients.py "http://$api"
echo "--- the KMS door attacked: slow signed heads for 10 s while boto3 is served, a session token, a repeated Authorization"
python3 scripts/kms-attacks.py "http://$api" 10 70 10

echo "--- the AWS CLI"
aws_cli() {
  env AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_ACCESS_KEY_ID=AKIAEXAMPLEDRBGD0001 "$@" \
    aws kms generate-random --number-of-bytes 32 --endpoint-url "http://$api" --region us-east-1 --output json
}
aws_cli AWS_SECRET_ACCESS_KEY=drbgd-example-secret-key-0001 >"$out"
cat "$out"
python3 -c 'import base64, json, sys; assert len(base64.b64decode(json.load(open(sys.argv[1]))["Plaintext"])) == 32' "$out"
if aws_cli AWS_SECRET_ACCESS_KEY=not-the-secret >"$out" 2>&1; then
  echo "the AWS CLI was served with a wrong secret"; exit 1
fi
grep -q InvalidSignatureException "$out" || { cat "$out"; exit 1; }
echo "the AWS CLI with a wrong secret: refused ($(grep -o 'InvalidSignatureException' "$out"))"

echo "--- RANDOM.ORG's rdoclient 1.5.0 (its URL redirected here)"
python3 scripts/randomorg-check.py "http://$api"

echo "--- the records: each front-end's label and caller, and no secret in the log"
grep -q 'caller="randomorg-app".*route="/json-rpc/4/invoke".*status=200' "$log"
grep -q 'caller="randomorg-lean".*route="/json-rpc/4/invoke".*code="allowance_spent"' "$log"
grep -q 'caller="vault-app".*route="/v1/transit/random".*status=200' "$log"
grep -q 'caller="vault-app".*route="/v1/sys/tools/random".*status=200' "$log"
grep -q 'caller="kms-app".*route="kms".*status=200' "$log"
if grep -E -q 'vault-example-token|drbgd-example-secret-key|Signature=|randomorg-example-key-0001|randomorg-example-lean-0002' "$log"; then
  echo "a credential reached the log"; exit 1
fi
echo "labels and callers recorded; no credential in the log"
