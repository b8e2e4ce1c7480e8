#!/usr/bin/env bash
# Checks against the running release binary, by real clients: promtool on a live /metrics,
# grpcurl through reflection, schemathesis against /openapi.json, the k6 smoke scenarios
# (HTTP and gRPC), and a graceful SIGTERM exit.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/drbgd
port=$((20000 + RANDOM % 12000))
api=127.0.0.1:$port
admin=127.0.0.1:$((port + 1))
log=$(mktemp)
"$bin" serve --listen "$api" --admin-listen "$admin" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
# Up to 30 s (a machine busy with the steps beside it starts the server slower); if it is not
# ready then, its log says why (a port taken, a failed self-test).
for _ in $(seq 300); do curl -fsS "http://$admin/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "http://$admin/readyz" || { echo "drbgd not ready on $admin; its log:"; cat "$log"; exit 1; }

echo "--- traffic, then promtool check metrics on the live /metrics"
for alg in chacha20 aes256ctr blake3 randen aes128ctr aes192ctr hash_sha256 hash_sha512 hmac_sha256 hmac_sha512; do curl -fsS "http://$api/bits?n=4096&alg=$alg" >/dev/null; done
curl -sS "http://$api/bits?n=0" >/dev/null
curl -fsS "http://$api/uuid?count=5" >/dev/null
grpcurl -plaintext -d '{"n": 64}' "$api" drbgd.v1.RandomnessService/GetBits >/dev/null
curl -fsS "http://$admin/metrics" | promtool check metrics
echo "promtool: no problems"

echo "--- grpcurl through reflection"
services=$(grpcurl -plaintext "$api" list)
echo "$services"
grep -qx drbgd.v1.RandomnessService <<<"$services"
grep -qx grpc.health.v1.Health <<<"$services"
grpcurl -plaintext "$api" describe drbgd.v1.RandomnessService | grep -q 'rpc StreamBits'
reply=$(grpcurl -plaintext -d '{"n": 256, "alg": "ALGORITHM_AES256CTR"}' "$api" drbgd.v1.RandomnessService/GetBits)
python3 - "$reply" <<'PY'
import base64, json, sys
r = json.loads(sys.argv[1])
data = base64.b64decode(r["data"])
assert r["n"] == "256" and r["alg"] == "ALGORITHM_AES256CTR" and len(data) == 32, r
assert int(r["ones"]) == sum(bin(b).count("1") for b in data), r
print("GetBits: 256 bits, ones", r["ones"])
PY
grpcurl -plaintext -d '{"service": "drbgd.v1.RandomnessService"}' "$api" grpc.health.v1.Health/Check | grep -q '"SERVING"'
echo "health: SERVING"

echo "--- the documented maximum of every unary method with grpcurl's default 4 MiB receive limit"
python3 - "$api" <<'PY'
import base64, json, subprocess, sys
api = sys.argv[1]
def call(method, body):
    out = subprocess.run(["grpcurl", "-plaintext", "-d", json.dumps(body), api, f"drbgd.v1.RandomnessService/{method}"],
                         capture_output=True, text=True)
    assert out.returncode == 0, (method, out.stderr)
    return json.loads(out.stdout)
r = call("GetBits", {"n": 1 << 24})
assert len(base64.b64decode(r["data"])) == 1 << 21, "GetBits max"
r = call("GetBytes", {"n": 1 << 21})
assert len(base64.b64decode(r["data"])) == 1 << 21, "GetBytes max"
assert len(call("GetUuids", {"count": 1000})["uuids"]) == 1000
assert len(call("GetInts", {"min": "-9223372036854775808", "max": "9223372036854775807", "count": 1000})["values"]) == 1000
seq = [int(v) for v in call("GetSequence", {"min": "-9223372036854775808", "max": "9223372036854775807", "count": 1000})["values"]]
assert len(set(seq)) == 1000, "GetSequence: 1000 distinct values"
deck = [int(v) for v in call("GetSequence", {"min": 1, "max": 52})["values"]]
assert sorted(deck) == list(range(1, 53)), "GetSequence without count: the whole range, shuffled"
assert len(call("GetToken", {"bytes": 1024, "format": "FORMAT_HEX"})["token"]) == 2048
assert len(call("GetNonce", {"bytes": 1024})["nonce"]) == 2048
over = subprocess.run(["grpcurl", "-plaintext", "-d", json.dumps({"n": (1 << 24) + 1}), api, "drbgd.v1.RandomnessService/GetBits"],
                      capture_output=True, text=True)
assert "InvalidArgument" in over.stderr and "n_too_large" in over.stderr, over.stderr
over = subprocess.run(["grpcurl", "-plaintext", "-d", json.dumps({"min": 1, "max": 6, "count": 7}), api,
                       "drbgd.v1.RandomnessService/GetSequence"], capture_output=True, text=True)
assert "InvalidArgument" in over.stderr and "count_exceeds_range" in over.stderr, over.stderr
print("unary maxima: GetBits 2^24 bits, GetBytes 2 MiB, 1000 UUIDs, 1000 ints, 1000 distinct sequence values, 1024-byte token and nonce: all fit")
PY

echo "--- buf lint (STANDARD) of the proto"
(cd proto && buf lint)
echo "buf lint: clean"

echo "--- schemathesis against /openapi.json (no 5xx, no schema violation)"
schemathesis --config-file .ci/schemathesis.toml run "http://$api/openapi.json" --max-examples 50 --no-color

echo "--- k6 smoke (HTTP and gRPC) with thresholds"
loadtest/run.sh smoke "http://$api"
GRPC_ADDR=$api loadtest/run.sh grpc "http://$api"

echo "--- SIGTERM: not ready, drain, exit 0"
kill -TERM "$pid"
wait "$pid"
echo "drbgd exited 0 after SIGTERM"
trap - EXIT
