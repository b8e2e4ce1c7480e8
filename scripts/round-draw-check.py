#!/usr/bin/env python3
"""Draws bound to a round of a real drand network, checked independently (run by
scripts/drand-network.sh once its three nodes make rounds):

    round-draw-check.py DRBGD_BIN DIR NODE_BASE CHAIN_HASH PUBLIC_KEY UPSTREAMS_JSON

A drbgd with tickets, receipts and one caller follows the network. Tickets bound to a round three
ahead (/int, /sequence, /bits) get signed commitments (POST /verify says valid); their draws are
425 before the round and /token refuses a bound ticket; then each receipt's round is fetched from
a drand node directly and checked with PyPI drand-verify, and its values recomputed by the Python
block of docs/verifiable.md ("Draws bound to a round", executed as written); a receipt whose
max was changed fails both that check and POST /verify; `drbgd verify --beacon-info` passes the
receipt against the node's /info and refuses the changed one.
"""
import hashlib
import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

KEY = "round-draw-ci-key"


def call(method, url, body=None, key=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def doc_check():
    """The Python block after `<!-- round-draw-check -->` in docs/verifiable.md, executed."""
    text = pathlib.Path("docs/verifiable.md").read_text()
    block = text.split("<!-- round-draw-check -->", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    scope = {}
    exec(compile(block, "docs/verifiable.md", "exec"), scope)
    return scope


def start(bin_, dir_, upstreams, chain_hash, public_key):
    subprocess.run([bin_, "keygen", "receipt", "--out", f"{dir_}/round-receipt.pem"], check=True, capture_output=True)
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    pathlib.Path(f"{dir_}/round.toml").write_text(f"""
[auth]
enabled = true
[callers.ci]
key_sha256 = ["{digest}"]
[receipts]
enabled = true
signing_keys = ["{dir_}/round-receipt.pem"]
[tickets]
enabled = true
[results]
path = "{dir_}/round-tickets.sqlite3"
[beacon]
enabled = true
source = "drand"
upstreams = {upstreams}
allow_http = true
chain_hash = "{chain_hash}"
public_key = "{public_key}"
upstream_timeout_ms = 1000
""")
    api, admin = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    log = open(f"{dir_}/round-drbgd.log", "w")
    env = dict(os.environ, DRBGD_CONFIG=f"{dir_}/round.toml")
    server = subprocess.Popen([bin_, "serve", "--listen", api, "--admin-listen", admin], env=env, stdout=log, stderr=log)
    for _ in range(200):
        try:
            if call("GET", f"http://{api}/beacon/health")[0] == 200:
                return server, f"http://{api}"
        except OSError:
            pass
        time.sleep(0.1)
    server.kill()
    raise SystemExit(f"the ticketed drbgd did not follow the network: {pathlib.Path(dir_, 'round-drbgd.log').read_text()[-2000:]}")


def bound_tickets(api, round_):
    draws = [{"endpoint": "/int", "min": 1, "max": 6, "count": 5}, {"endpoint": "/sequence", "min": 1, "max": 52, "count": 5},
             {"endpoint": "/bits", "n": 256}]
    tickets = []
    for draw in draws:
        status, _, body = call("POST", f"{api}/tickets", {"round": round_, "label": f"ci {draw['endpoint']} {round_}", "show_result": True, "draw": draw}, KEY)
        assert status == 201, (status, body)
        ticket = json.loads(body)["tickets"][0]
        verdict = json.loads(call("POST", f"{api}/verify", ticket["commitment"])[2])
        assert verdict["valid"] is True, verdict
        assert ticket["commitment"]["random"]["round"] == round_
        tickets.append((draw["endpoint"], ticket["ticket_id"]))
    return tickets


def main():
    bin_, dir_, node, chain_hash, public_key, upstreams = sys.argv[1:7]
    scope = doc_check()
    server, api = start(bin_, dir_, upstreams, chain_hash, public_key)
    try:
        latest = json.loads(call("GET", f"{api}/beacon/public/latest")[2])["round"]
        round_ = latest + 3
        tickets = bound_tickets(api, round_)
        status, headers, body = call("POST", f"{api}/int", {"ticket": tickets[0][1]}, KEY)
        assert status == 425 and "retry-after" in headers, (status, body, headers)
        status, _, body = call("POST", f"{api}/token", {"ticket": tickets[0][1]}, KEY)
        assert status == 400 and json.loads(body)["code"] == "round_draw_not_allowed", (status, body)
        deadline = time.time() + 30
        while call("POST", f"{api}/int", {"ticket": tickets[0][1]}, KEY)[0] == 425 and time.time() < deadline:
            time.sleep(0.5)
        theirs = json.loads(call("GET", f"{node}/{chain_hash}/public/{round_}")[2])
        for endpoint, ticket in tickets:
            status, _, body = call("POST", f"{api}{endpoint}", {"ticket": ticket}, KEY)
            assert status == 200, (endpoint, status, body)
            receipt = json.loads(body)
            assert receipt["random"]["round_signature"] == theirs["signature"], "not the node's round"
            scope["check"](receipt, public_key)
            changed = json.loads(body)
            key = "n" if endpoint == "/bits" else "max"
            changed["random"][key] += 8
            try:
                scope["check"](changed, public_key)
            except AssertionError:
                pass
            else:
                raise AssertionError(f"{endpoint}: a changed parameter passed the check")
            assert json.loads(call("POST", f"{api}/verify", changed)[2])["valid"] is False
            cli(bin_, dir_, api, node, chain_hash, receipt, changed)
            print(f"{endpoint}: round {round_}'s values {receipt['random']['data']} recomputed; the changed receipt refused")
    finally:
        server.kill()
        server.wait()


def cli(bin_, dir_, api, node, chain_hash, receipt, changed):
    for name, answer, ok in [("receipt", receipt, True), ("changed", changed, False)]:
        path = pathlib.Path(dir_, f"round-{name}.json")
        path.write_text(json.dumps(answer))
        done = subprocess.run([bin_, "verify", str(path), "--jwks", f"{api}/keys", "--beacon-info", f"{node}/{chain_hash}/info",
                               "--chain-hash", chain_hash], capture_output=True, text=True)
        assert (done.returncode == 0) == ok, (name, done.stdout, done.stderr)


if __name__ == "__main__":
    main()
