#!/usr/bin/env python3
"""The Vault and AWS KMS drop-ins against the clients teams already run, offline, on loopback:
hvac (Vault's Python client) and boto3 (the AWS SDK for Python), against the release binary
serving config/examples/drop-in.toml at the URL given. Prints what each received; exits
non-zero on the first surprise."""
import base64
import collections
import concurrent.futures
import sys

import boto3
import botocore.exceptions
import hvac
from botocore.config import Config

url = sys.argv[1]


def check(condition, what):
    if not condition:
        sys.exit(f"FAILED: {what}")


# --- Vault: hvac, the token names the caller vault-app.
vault = hvac.Client(url=url, token="vault-example-token")
for fmt in ("hex", "base64"):
    r = vault.secrets.transit.generate_random_bytes(n_bytes=32, output_format=fmt)
    value = r["data"]["random_bytes"]
    raw = bytes.fromhex(value) if fmt == "hex" else base64.b64decode(value, validate=True)
    check(len(raw) == 32, f"transit/random {fmt}: {r}")
    print(f"hvac transit.generate_random_bytes(32, {fmt}): {value}")
for fmt in ("hex", "base64"):
    r = vault.adapter.post("/v1/sys/tools/random", json={"bytes": 32, "format": fmt})
    value = r["data"]["random_bytes"]
    check(len(bytes.fromhex(value) if fmt == "hex" else base64.b64decode(value)) == 32, f"sys/tools/random: {r}")
    print(f"hvac adapter.post(/v1/sys/tools/random, {fmt}): {value}")
for token in ("wrong-token", ""):
    try:
        hvac.Client(url=url, token=token).secrets.transit.generate_random_bytes(n_bytes=32)
        sys.exit(f"FAILED: token {token!r} was accepted")
    except hvac.exceptions.Forbidden as e:
        print(f"hvac with token {token!r}: refused, {type(e).__name__}: {e}")
try:
    vault.secrets.transit.generate_random_bytes(n_bytes=200000)
    sys.exit("FAILED: 200000 bytes accepted")
except hvac.exceptions.InvalidRequest as e:
    print(f"hvac asking for 200000 bytes: refused, InvalidRequest: {e}")


# --- AWS KMS: boto3, the access key names the caller kms-app (50/s, burst 10).
def kms(secret="drbgd-example-secret-key-0001", pool=10):
    return boto3.client("kms", endpoint_url=url, region_name="us-east-1",
                        aws_access_key_id="AKIAEXAMPLEDRBGD0001", aws_secret_access_key=secret,
                        config=Config(retries={"max_attempts": 1}, max_pool_connections=pool))


r = kms().generate_random(NumberOfBytes=32)
check(len(r["Plaintext"]) == 32, f"GenerateRandom: {r}")
print(f"boto3 kms.generate_random(NumberOfBytes=32): {r['Plaintext'].hex()}")


def error_of(call):
    try:
        call()
        return None
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]


wrong = error_of(lambda: kms(secret="not-the-secret").generate_random(NumberOfBytes=32))
check(wrong == ("InvalidSignatureException", 400), f"a wrong secret: {wrong}")
print(f"boto3 with a wrong secret: refused, {wrong}")
big = error_of(lambda: kms().generate_random(NumberOfBytes=1025))
check(big == ("ValidationException", 400), f"1025 bytes: {big}")
print(f"boto3 asking for 1025 bytes: refused, {big}")

client = kms(pool=20)
with concurrent.futures.ThreadPoolExecutor(20) as pool:
    outcomes = list(pool.map(lambda _: error_of(lambda: client.generate_random(NumberOfBytes=8)), range(200)))
counts = collections.Counter("ok" if o is None else o[0] for o in outcomes)
print(f"boto3, 200 calls on 20 threads against 50/s burst 10: {dict(counts)}")
check(counts["ThrottlingException"] > 0 and counts["ok"] > 0, "the quota answered ThrottlingException")
check(set(counts) <= {"ok", "ThrottlingException"}, "nothing but served or throttled")
