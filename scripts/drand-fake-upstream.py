#!/usr/bin/env python3
"""The chained scheme (drand's default, `pedersen-bls-chained`) through drbgd, with drand's own
clients: League of Entropy mainnet's published `/info` and round 72785 (with its previous
signature; the vectors of noislabs' drand-verify tests) served by fake upstreams that speak
drand's HTTP API, as `/public/latest` too (they have no other round).

- drbgd following [a forger, an honest one]: the forger serves round 72785 with mainnet round 1's
  signature (a valid G2 point, the wrong signature); drbgd passes it over (counted invalid) and
  serves the honest one's round, verified: npm drand-client 1.4.2 pinned to mainnet's chain
  hash and key fetches and verifies it through drbgd, and PyPI drand-verify 0.2.1's
  `verify_pedersen_bls_chained` accepts it.
- drbgd following the forger alone: no round is ever served (latest 503, round 72785 503).

usage: drand-fake-upstream.py check DRBGD_BIN WORKDIR
"""
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import drand_verify

INFO = {
    "public_key": "868f005eb8e6e4ca0a47c8a77ceaa5309a47978a7c71bc5cce96366b5d7a569937c529eeda66c7293784a9402801af31",
    "period": 30,
    "genesis_time": 1595431050,
    "hash": "8990e7a9aaed2ffed73dbd7092123d6f289930540d7651336225dc172e51b2ce",
    "groupHash": "176f93498eac9ca337150b46d21dd58673ea4e3581185f869672e59fa4cb390a",
    "schemeID": "pedersen-bls-chained",
    "metadata": {"beaconID": "default"},
}
ROUND = {
    "round": 72785,
    "signature": "82f5d3d2de4db19d40a6980e8aa37842a0e55d1df06bd68bddc8d60002e8e959eb9cfa368b3c1b77d18f02a54fe047b80f0989315f83b12a74fd8679c4f12aae86eaf6ab5690b34f1fddd50ee3cc6f6cdf59e95526d5a5d82aaa84fa6f181e42",
    "previous_signature": "a609e19a03c2fcc559e8dae14900aaefe517cb55c840f6e69bc8e4f66c8d18e8a609685d9917efbfb0c37f058c2de88f13d297c7e19e0ab24813079efe57a182554ff054c7638153f9b26a60e7111f71a0ff63d9571704905d3ca6df0b031747",
}
# Mainnet's round 1 signature: a valid point on G2, not round 72785's.
OTHER_SIGNATURE = "8d61d9100567de44682506aea1a7a6fa6e5491cd27a0a0ed349ef6910ac5ac20ff7bc3e09d7c046566c9f7f3c6f3b10104990e7cb424998203d8f7de586fb7fa5f60045417a432684f85093b06ca91c769f0e7ca19268375e659c2a2352b4655"
# Round 1 itself: its previous signature is the genesis seed, the group hash.
ROUND_1 = {"round": 1, "signature": OTHER_SIGNATURE, "previous_signature": INFO["groupHash"]}


def upstream(forged):
    """A fake upstream on a free port: its base URL."""
    body_round = dict(ROUND, signature=OTHER_SIGNATURE) if forged else ROUND

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            path = self.path.split("?")[0].removeprefix("/" + INFO["hash"])
            body = {"/info": INFO, "/public/latest": body_round, "/public/72785": body_round,
                    "/public/1": ROUND_1}.get(path)
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps(body or {"error": "no such round"}).encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(binary, workdir, name, upstreams):
    api, admin = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    env = dict(os.environ, DRBGD__BEACON__ENABLED="true", DRBGD__BEACON__SOURCE="drand",
               DRBGD__BEACON__UPSTREAMS=json.dumps(upstreams), DRBGD__BEACON__ALLOW_HTTP="true",
               DRBGD__BEACON__CHAIN_HASH=INFO["hash"], DRBGD__BEACON__PUBLIC_KEY=INFO["public_key"])
    log = open(os.path.join(workdir, f"drbgd-{name}.log"), "w")
    process = subprocess.Popen([binary, "serve", "--listen", api, "--admin-listen", admin], env=env,
                               stdout=log, stderr=subprocess.STDOUT)
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://{admin}/readyz", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    return process, f"http://{api}", f"http://{admin}"


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def until(check, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


def main():
    if len(sys.argv) != 4 or sys.argv[1] != "check":
        raise SystemExit(__doc__)
    binary, workdir = sys.argv[2], sys.argv[3]
    forger, honest = upstream(True), upstream(False)
    processes = []
    try:
        both, base, admin = serve(binary, workdir, "both", [forger, honest])
        processes.append(both)
        assert until(lambda: get(f"{base}/beacon/public/latest")[0] == 200), "no verified round through drbgd"
        status, body = get(f"{base}/beacon/public/72785")
        served = json.loads(body)
        assert status == 200 and served["signature"] == ROUND["signature"], served
        assert served["previous_signature"] == ROUND["previous_signature"], served
        randomness = drand_verify.verify_pedersen_bls_chained(72785, served["previous_signature"], served["signature"],
                                                              INFO["public_key"])
        assert randomness == served["randomness"], (randomness, served)
        script = """
const drand = require('drand-client')
const [base, chainHash, publicKey] = process.argv.slice(1)
const options = {...drand.defaultChainOptions, disableBeaconVerification: false, noCache: true,
                 chainVerificationParams: {chainHash, publicKey}}
const client = new drand.HttpChainClient(new drand.HttpCachingChain(`${base}/${chainHash}`, options), options)
drand.fetchBeacon(client, 72785).then((b) => {
  if (b.round !== 72785 || !b.previous_signature) throw new Error(JSON.stringify(b))
  console.log('drand-client 1.4.2: mainnet round 72785 (pedersen-bls-chained) verified through drbgd')
}).catch((e) => { console.error(e); process.exit(1) })
"""
        env = dict(os.environ, NODE_PATH=os.path.abspath("scripts/beacon-clients/node_modules"))
        out = subprocess.run(["node", "-e", script, f"{base}/beacon", INFO["hash"], INFO["public_key"]], env=env,
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        print(out.stdout.strip())
        status, body = get(f"{base}/beacon/public/1")
        first = json.loads(body)
        assert status == 200 and first["previous_signature"] == INFO["groupHash"], (status, first)
        assert drand_verify.verify_pedersen_bls_chained(1, first["previous_signature"], first["signature"],
                                                        INFO["public_key"]) == first["randomness"]
        print("  round 1 (after the genesis seed) served verified; drand-verify accepts it")
        metrics = get(f"{admin}/metrics")[1].decode()
        invalid = [l for l in metrics.splitlines() if l.startswith("drbgd_beacon_upstream_rounds_total{")
                   and f'upstream="{forger}"' in l and 'outcome="invalid"' in l]
        assert invalid and int(invalid[0].rsplit(" ", 1)[1]) >= 1, metrics
        print(f"  drand-verify 0.2.1: verify_pedersen_bls_chained accepts it; the forger passed over ({invalid[0]})")

        alone, base, _ = serve(binary, workdir, "forger", [forger])
        processes.append(alone)
        time.sleep(1.5)
        assert get(f"{base}/beacon/public/latest")[0] == 503
        assert get(f"{base}/beacon/public/72785")[0] == 503
        print("  the forger alone: no round served (latest 503, round 72785 503)")
    finally:
        for p in processes:
            p.kill()


if __name__ == "__main__":
    main()
