#!/usr/bin/env python3
"""Tickets through a crash: the release binary serves config/examples/verifiable.toml with
[tickets] and auth on (an SQLite file in a temporary directory); 16 clients use tickets as fast as they
can, each ticket once (and some twice, the same request: a retry); the server is killed with
SIGKILL mid-stream, then started again on the same file. Afterwards:

  - every answer a client received (a 200 with a receipt) is found, byte for byte, by
    GET /results/{serial}, and GET /tickets/{id} shows its ticket used with that serial;
  - every ticket no client got an answer for is either used with one result (the commit made
    it, its answer was lost with the connection) or unused; using it now works once;
  - a used ticket answers its request again with the first answer's bytes (a second draw would
    differ), and refuses any other (409).

usage: scripts/ticket-crash.py [BINARY]   (default: $DRBGD_BIN, else target/release/drbgd)
"""
import hashlib
from http.client import HTTPException
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"authorization": f"Bearer {KEY}"})
    if body is not None:
        request.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


KEY = "ticket-crash-key"


def config(work, path):
    """config/examples/verifiable.toml with auth on (one caller, KEY) and tickets in `path`."""
    text = open("config/examples/verifiable.toml").read()
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    # verifiable.toml's [auth] is off: on here.
    assert "[auth]\nenabled = false" in text, "verifiable.toml's [auth] moved"
    text = text.replace("[auth]\nenabled = false", "[auth]\nenabled = true")
    text += f"""
[callers.crash]
key_sha256 = ["{digest}"]

[tickets]
enabled = true
path = "{path}"
max_unused = 100000
"""
    name = os.path.join(work, "tickets.toml")
    with open(name, "w") as f:
        f.write(text)
    return name


def start(binary, api, admin, path):
    work = os.path.dirname(path)
    env = dict(os.environ, DRBGD__SERVER__PEER_REQUESTS_PER_SECOND="100000", DRBGD__SERVER__PEER_BURST="100000")
    log = open(os.path.join(work, "drbgd.log"), "ab")
    server = subprocess.Popen([binary, "serve", "--config", config(work, path), "--listen", api,
                               "--admin-listen", admin], env=env, stdout=log, stderr=log)
    for _ in range(200):
        try:
            with urllib.request.urlopen(f"http://{admin}/readyz", timeout=1):
                return server
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"drbgd did not get ready: {open(log.name).read()[-2000:]}")


def main():
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("DRBGD_BIN", "target/release/drbgd"))
    os.chdir(ROOT)
    work = tempfile.mkdtemp(prefix="drbgd-ticket-crash-")
    path = os.path.join(work, "tickets.sqlite3")
    api, admin = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    server = start(binary, api, admin, path)
    tickets = []
    for _ in range(120):
        status, _, body = http("POST", f"http://{api}/tickets", {"n": 50})
        assert status == 201, body
        tickets += [t["ticket_id"] for t in json.loads(body)["tickets"]]
    received = {}  # ticket -> (request, answer bytes)
    problems = []  # what a client saw that it should not have (a thread's assert would be lost)
    lock = threading.Lock()
    stop = threading.Event()

    def client(mine):
        for i, ticket in enumerate(mine):
            if stop.is_set():
                return
            request = {"min": 1, "max": 1000000, "count": 5, "ticket": ticket}
            for _attempt in range(2 if i % 5 == 0 else 1):  # every fifth: a retry, the same request
                try:
                    status, _, body = http("POST", f"http://{api}/int", request)
                except (OSError, HTTPException):
                    return  # the server is gone
                with lock:
                    if status != 200:
                        problems.append(f"{ticket}: {status} {body[:200]!r}")
                    elif ticket in received and received[ticket][1] != body:
                        problems.append(f"{ticket}: a retry got other bytes")
                    else:
                        received[ticket] = (request, body)

    threads = [threading.Thread(target=client, args=(tickets[k::16],)) for k in range(16)]
    for t in threads:
        t.start()
    # Killed mid-stream: once a thousand answers are in (or after 20 s).
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with lock:
            if len(received) >= 1000:
                break
        time.sleep(0.01)
    server.send_signal(signal.SIGKILL)
    server.wait()
    stop.set()
    for t in threads:
        t.join()
    assert not problems, f"before the kill: {problems[:5]}"
    assert received, "no answer before the kill"
    server = start(binary, api, admin, path)
    try:
        check(api, tickets, received)
    finally:
        server.terminate()
        server.wait()


def check(api, tickets, received):
    used, unused = 0, 0
    for ticket in tickets:
        status, _, body = http("GET", f"http://{api}/tickets/{ticket}")
        assert status == 200, body
        view = json.loads(body)
        if ticket in received:
            request, answer = received[ticket]
            serial = json.loads(answer)["random"]["serial"]
            assert view["used_at"] and view["serial"] == serial, (ticket, view)
            status, _, kept = http("GET", f"http://{api}/results/{serial}")
            assert status == 200 and kept == answer, f"the answer of {ticket} was not kept as sent"
            status, _, again = http("POST", f"http://{api}/int", request)
            assert status == 200 and again == answer, "a retry after the restart is the first answer"
            other = dict(request, count=6)
            status, _, _ = http("POST", f"http://{api}/int", other)
            assert status == 409, f"another use of a used ticket: {status}"
            used += 1
        elif view["used_at"]:
            # Committed, its answer lost with the connection: kept all the same, once.
            status, _, kept = http("GET", f"http://{api}/results/{view['serial']}")
            assert status == 200 and json.loads(kept)["random"]["ticket"] == ticket, ticket
            used += 1
        else:
            request = {"min": 1, "max": 1000000, "count": 5, "ticket": ticket}
            status, _, body = http("POST", f"http://{api}/int", request)
            assert status == 200, f"an unused ticket is still usable: {status} {body[:200]}"
            unused += 1
    print(f"ticket crash: {len(received)} answers received before SIGKILL, all kept byte for byte and given "
          f"again to their request; {used} tickets used once, {unused} unused and usable after the restart")


if __name__ == "__main__":
    main()
