#!/usr/bin/env python3
"""Signed receipts checked with no drbgd code: the release binary serves
config/examples/verifiable.toml on loopback, and each receipt (GET /bits?n=256, a POST, an /int
with bounds beyond 2^53, a gRPC GetBits through grpcurl) is verified

  - with Python's `cryptography` against the key GET /keys publishes (a JWK), after re-serialising
    `random` canonically (for these receipts, which hold only strings, small integers and
    booleans, json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False) is RFC 8785);
  - with `openssl pkeyutl -verify -pubin -inkey pub.pem -rawin -in random.jcs -sigfile sig.bin`;
  - by POST /verify, and by `drbgd verify FILE --jwks URL` (and `--key pub.pem`);

and the same receipt with one byte of its output changed fails all four.

usage: scripts/receipt-check.py [BINARY]     (default: $DRBGD_BIN, else target/release/drbgd)
Needs python3 with `cryptography`, openssl 3, and grpcurl for the gRPC case (skipped without).
"""
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = "config/examples/verifiable.toml"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def http(method, url, body=None, headers=None):
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if body is not None:
        request.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def canonical(random):
    return json.dumps(random, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class Checker:
    def __init__(self, binary, api, work):
        self.binary, self.api, self.work = binary, api, work
        status, _, body = http("GET", f"http://{api}/keys")
        assert status == 200, (status, body)
        keys = json.loads(body)["keys"]
        assert len(keys) == 1 and keys[0]["kty"] == "OKP" and keys[0]["crv"] == "Ed25519", keys
        self.kid = keys[0]["kid"]
        self.key = Ed25519PublicKey.from_public_bytes(b64url(keys[0]["x"]))
        self.pub_pem = os.path.join(work, "pub.pem")
        with open(self.pub_pem, "wb") as f:
            f.write(self.key.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
        self.count = 0

    def file(self, name, suffix):
        """A path in the work directory for the check `name` (which may hold '/', '?', spaces)."""
        return os.path.join(self.work, "".join(c if c.isalnum() else "_" for c in name) + suffix)

    def python_verifies(self, receipt):
        try:
            self.key.verify(b64url(receipt["signature"]), canonical(receipt["random"]))
            return True
        except InvalidSignature:
            return False

    def openssl_verifies(self, receipt, name):
        jcs, sig = self.file(name, ".jcs"), self.file(name, ".sig")
        with open(jcs, "wb") as f:
            f.write(canonical(receipt["random"]))
        with open(sig, "wb") as f:
            f.write(b64url(receipt["signature"]))
        out = subprocess.run(
            ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", self.pub_pem, "-rawin", "-in", jcs, "-sigfile", sig],
            capture_output=True, text=True)
        return out.returncode == 0 and "Signature Verified Successfully" in out.stdout

    def server_verifies(self, receipt):
        status, _, body = http("POST", f"http://{self.api}/verify", receipt)
        assert status == 200, (status, body)
        return json.loads(body)

    def cli_verifies(self, receipt, name):
        path = self.file(name, ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(receipt, f, ensure_ascii=False)
        results = []
        for keys in (["--jwks", f"http://{self.api}/keys"], ["--key", self.pub_pem]):
            out = subprocess.run([self.binary, "verify", path, *keys], capture_output=True, text=True)
            results.append(out.returncode == 0)
            if out.returncode != 0:
                assert "invalid: signature_mismatch" in out.stderr, out.stderr
        assert results[0] == results[1], results
        return results[0]

    def check(self, name, receipt):
        """The receipt passes all four checks; with one byte of output changed it fails all four."""
        random = receipt["random"]
        assert random["key_id"] == self.kid, random
        assert self.python_verifies(receipt), f"{name}: cryptography"
        assert self.openssl_verifies(receipt, name), f"{name}: openssl"
        verdict = self.server_verifies(receipt)
        assert verdict == {"valid": True, "key_id": self.kid, "serial": random["serial"]}, verdict
        assert self.cli_verifies(receipt, name), f"{name}: drbgd verify"
        changed = json.loads(json.dumps(receipt))
        data = changed["random"]["data"]
        if isinstance(data, list):
            data[0] = ("1" if data[0][0] != "1" else "2") + data[0][1:]
        else:
            changed["random"]["data"] = ("0" if data[0] != "0" else "1") + data[1:]
        assert not self.python_verifies(changed), f"{name}: cryptography took a changed byte"
        assert not self.openssl_verifies(changed, name + "-changed"), f"{name}: openssl took a changed byte"
        verdict = self.server_verifies(changed)
        assert verdict["valid"] is False and verdict["reason"] == "signature_mismatch", verdict
        assert not self.cli_verifies(changed, name + "-changed"), f"{name}: drbgd verify took a changed byte"
        self.count += 1
        print(f"{name}: verified by cryptography, openssl, /verify, drbgd verify; a changed byte fails all four")


def served_receipt(status, headers, body):
    assert status == 200, (status, body)
    assert headers.get("Content-Type", headers.get("content-type")) == "application/json", headers
    receipt = json.loads(body)
    # The served text is {"random": <the canonical JSON signed>, "signature": ...}.
    assert body.startswith(b'{"random":' + canonical(receipt["random"]) + b',"signature":"'), body[:200]
    return receipt


def main():
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("DRBGD_BIN", "target/release/drbgd"))
    os.chdir(ROOT)
    port = free_port()
    api, admin = f"127.0.0.1:{port}", f"127.0.0.1:{free_port()}"
    work = tempfile.mkdtemp(prefix="drbgd-receipts-")
    log = open(os.path.join(work, "drbgd.log"), "w")
    command = [binary, "serve", "--config", CONFIG, "--listen", api, "--admin-listen", admin, "--log-format", "json"]
    # Each receipt is checked against GET /keys several times (Python, drbgd verify, each with a
    # changed byte): more than a peer's default public rate (10/s, burst 20) in a moment, which
    # this check is not about.
    env = dict(os.environ, DRBGD__SERVER__PEER_REQUESTS_PER_SECOND="1000", DRBGD__SERVER__PEER_BURST="1000")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        for _ in range(200):
            try:
                if http("GET", f"http://{admin}/readyz")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.05)
        else:
            raise SystemExit(f"drbgd did not get ready; its log: {open(log.name).read()}")
        c = Checker(binary, api, work)
        receipt = served_receipt(*http("GET", f"http://{api}/bits?n=256&receipt=true"))
        assert receipt["random"]["n"] == 256 and len(bytes.fromhex(receipt["random"]["data"])) == 32, receipt
        c.check("GET /bits?n=256", receipt)
        body = {"n": 256, "format": "base64url", "receipt": True, "user_data": "tirage n°7 — \"A\""}
        c.check("POST /bits", served_receipt(*http("POST", f"http://{api}/bits", body)))
        path = "/int?min=-9223372036854775808&max=9223372036854775807&count=4&receipt=true"
        receipt = served_receipt(*http("GET", f"http://{api}{path}"))
        assert receipt["random"]["min"] == "-9223372036854775808" and receipt["random"]["max"] == "9223372036854775807"
        assert all(isinstance(v, str) for v in receipt["random"]["data"]), receipt
        c.check("GET /int beyond 2^53", receipt)
        receipt = served_receipt(*http("GET", f"http://{api}/sequence?min=1&max=52&receipt=true"))
        assert sorted(int(v) for v in receipt["random"]["data"]) == list(range(1, 53)), receipt
        c.check("GET /sequence (a shuffled deck)", receipt)
        if shutil.which("grpcurl"):
            out = subprocess.run(["grpcurl", "-plaintext", "-d", json.dumps({"n": 256, "receipt": True}), api,
                                  "drbgd.v1.RandomnessService/GetBits"], capture_output=True, text=True, check=True)
            reply = json.loads(out.stdout)
            random = json.loads(reply["receiptJson"])
            assert canonical(random) == reply["receiptJson"].encode(), "receipt_json is the canonical text"
            assert base64.b64decode(random["data"]) == base64.b64decode(reply["data"]), "it covers the reply"
            c.check("gRPC GetBits", {"random": random, "signature": reply["receiptSignature"]})
        else:
            print("grpcurl not found: the gRPC receipt is not checked here (tests/api/receipts.rs checks it)")
        server.terminate()
        server.wait(timeout=30)
        audit = [json.loads(line) for line in open(log.name) if "drbgd::audit" in line and line.startswith("{")]
        serials = [a["serial"] for a in audit if a.get("serial")]
        assert len(serials) >= c.count, f"each receipt's serial in its audit line: {serials}"
        print(f"{c.count} receipts checked; their serials are in the audit lines")
        print(f"{c.count} passed, 0 failed")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
