#!/usr/bin/env python3
"""Tickets through a crash: the release binary serves config/examples/verifiable.toml with
[tickets] and auth on; 16 clients use tickets as fast as they can, each ticket once (and some
twice, the same request: a retry), and mid-stream:

  - SQLite (an embedded file in a temporary directory): the server is killed with SIGKILL, then
    started again on the same file;
  - PostgreSQL (--postgres DIR: a server scripts/postgres.sh started in DIR): two replicas on one
    database, the clients spread over both; one replica is killed with SIGKILL and the database
    itself is killed (SIGKILL of its postmaster and every backend) and restarted while the other
    replica serves on (answering 503 store_unavailable while the database is down: a client
    then draws under the same ticket with *another* request, which a ticket left used by the
    refused one would answer 409; or 503 store_outcome_unknown for a use whose answer was lost
    with the database: the same request again), then the killed replica is started again.

Afterwards:

  - every answer a client received (a 200 with a receipt) is found, byte for byte, by
    GET /results/{serial}, and GET /tickets/{id} shows its ticket used with that serial;
  - every ticket no client got an answer for is either used with one result (the commit made
    it, its answer was lost with the connection) or unused; using it now works once;
  - a used ticket answers its request again with the first answer's bytes (a second draw would
    differ), and refuses any other (409);
  - a chain of three uses, the last revealed: GET /tickets/{id} without credentials shows each
    result, whose signature verifies with `openssl pkeyutl` against the key of GET /keys, over
    the very bytes kept;
  - in the store (read with sqlite3 or psql): no chain forks (two tickets with one
    predecessor), every used ticket has its one result, under its serial and naming it, and
    every result belongs to a used ticket.

usage: scripts/ticket-crash.py [--postgres DIR] [BINARY]   (default: $DRBGD_BIN, else
target/release/drbgd)
"""
import base64
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


def http(method, url, body=None, auth=True):
    data = None if body is None else json.dumps(body).encode()
    headers = {"authorization": f"Bearer {KEY}"} if auth else {}
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    if body is not None:
        request.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


KEY = "ticket-crash-key"


def config(work, store):
    """config/examples/verifiable.toml with auth on (one caller, KEY) and tickets in `store`'s
    [results]."""
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
max_unused = 100000

[results]
{store}
"""
    name = os.path.join(work, "tickets.toml")
    with open(name, "w") as f:
        f.write(text)
    return name


def start(binary, api, admin, work, store):
    env = dict(os.environ, DRBGD__SERVER__PEER_REQUESTS_PER_SECOND="100000", DRBGD__SERVER__PEER_BURST="100000")
    log = open(os.path.join(work, "drbgd.log"), "ab")
    server = subprocess.Popen([binary, "serve", "--config", config(work, store), "--listen", api,
                               "--admin-listen", admin], env=env, stdout=log, stderr=log)
    for _ in range(200):
        try:
            with urllib.request.urlopen(f"http://{admin}/readyz", timeout=1):
                return server
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"drbgd did not get ready: {open(log.name).read()[-2000:]}")


class Postgres:
    """The database of a server scripts/postgres.sh started in `dir`: a fresh database of this
    run's, and the server killed and restarted on demand."""

    def __init__(self, dir):
        self.dir, self.port = dir, open(os.path.join(dir, "port")).read().strip()
        self.name = f"drbgd_crash_{os.getpid()}"
        self.psql("postgres", f"CREATE DATABASE {self.name}")

    def psql(self, db, sql):
        env = dict(os.environ, PGPASSWORD=open(os.path.join(self.dir, "password")).read().strip())
        return subprocess.run(["psql", "-h", "127.0.0.1", "-p", self.port, "-U", "drbgd", "-At", "-v",
                               "ON_ERROR_STOP=1", "-c", sql, db], env=env, check=True, capture_output=True,
                              text=True).stdout

    def store(self):
        return (f'store = "postgres"\nurl = "postgresql://drbgd@127.0.0.1:{self.port}/{self.name}"\n'
                f'password_file = "{self.dir}/password"\nallow_plaintext_password = true\ntimeout_ms = 2000')

    def crash(self):
        subprocess.run(["bash", "scripts/postgres.sh", "kill", self.dir], check=True)
        time.sleep(1)
        subprocess.run(["bash", "scripts/postgres.sh", "restart", self.dir], check=True)

    def faults(self):
        return self.psql(self.name, FAULTS.format(t="drbgd_tickets", r="drbgd_results")).strip()


def main():
    args = sys.argv[1:]
    postgres = None
    if args[:1] == ["--postgres"]:
        postgres, args = Postgres(args[1]), args[2:]
    binary = os.path.abspath(args[0] if args else os.environ.get("DRBGD_BIN", "target/release/drbgd"))
    os.chdir(ROOT)
    work = tempfile.mkdtemp(prefix="drbgd-ticket-crash-")
    path = os.path.join(work, "tickets.sqlite3")
    store = postgres.store() if postgres else f'path = "{path}"'
    replicas = 2 if postgres else 1
    apis = [(f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}") for _ in range(replicas)]
    servers = [start(binary, api, admin, work, store) for api, admin in apis]
    # Whatever ends the script (a failed check too), no server outlives it.
    import atexit
    atexit.register(lambda: [s.kill() for s in servers if s.poll() is None])
    api = apis[-1][0]
    tickets = []
    for _ in range(120):
        status, _, body = http("POST", f"http://{api}/tickets", {"n": 50})
        assert status == 201, body
        tickets += [t["ticket_id"] for t in json.loads(body)["tickets"]]
    received = {}  # ticket -> (request, answer bytes)
    problems = []  # what a client saw that it should not have (a thread's assert would be lost)
    outage = threading.Event()  # the database is down: 503 store_unavailable is the answer then
    refused, unknown = [0], [0]
    lock = threading.Lock()
    stop = threading.Event()

    def client(k, mine):
        target = apis[k % replicas][0]
        for i, ticket in enumerate(mine):
            if stop.is_set():
                return
            request = {"min": 1, "max": 1000000, "count": 5, "ticket": ticket}
            attempts = 2 if i % 5 == 0 else 1  # every fifth: a retry, the same request
            while attempts > 0:
                try:
                    status, _, body = http("POST", f"http://{target}/int", request)
                except (OSError, HTTPException):
                    return  # the server is gone
                if status == 503 and outage.is_set() and b"store_unavailable" in body:
                    # The database is down: nothing was kept, so the ticket is still unused and
                    # takes another request (a use kept behind the 503 would answer that 409).
                    with lock:
                        refused[0] += 1
                        # (Unless an earlier attempt's answer came: a retry refused before it
                        # reached the ticket says nothing of it.)
                        if ticket not in received:
                            request = dict(request, count=request["count"] % 9 + 1)
                    time.sleep(0.05)
                    continue
                if status == 503 and outage.is_set() and b"store_outcome_unknown" in body:
                    # Its answer lost with the database, and the database not back in time: the
                    # same request again, as the answer says (the kept draw, or a first one).
                    with lock:
                        unknown[0] += 1
                    time.sleep(0.05)
                    continue
                attempts -= 1
                with lock:
                    if status != 200:
                        problems.append(f"{ticket}: {status} {body[:200]!r}")
                    elif ticket in received and received[ticket][1] != body:
                        problems.append(f"{ticket}: a retry got other bytes")
                    else:
                        received[ticket] = (request, body)

    threads = [threading.Thread(target=client, args=(k, tickets[k::16])) for k in range(16)]
    for t in threads:
        t.start()
    # Killed mid-stream: once a thousand answers are in (or after 20 s).
    wait_for(received, lock, 1000)
    servers[0].send_signal(signal.SIGKILL)
    servers[0].wait()
    if postgres:
        # The other replica serves on; then the database crashes under it and comes back.
        wait_for(received, lock, len(received) + 300)
        outage.set()
        postgres.crash()
        wait_for(received, lock, len(received) + 300)
        outage.clear()
    stop.set()
    for t in threads:
        t.join()
    assert not problems, f"before the kill: {problems[:5]}"
    assert received, "no answer before the kill"
    servers[0] = start(binary, *apis[0], work, store)
    try:
        check(apis[0][0], tickets, received)
        chain_verifies(apis[0][0], work)
        faults = postgres.faults() if postgres else sqlite_faults(path)
        assert faults == "0|0|0|0", f"chain forks|used without their result|results naming another|orphan results: {faults}"
        if postgres:
            print(f"  on PostgreSQL: two replicas, one killed, the database killed and restarted "
                  f"({refused[0]} draws answered 503 store_unavailable while it was down, {unknown[0]} "
                  f"store_outcome_unknown)")
    finally:
        for server in servers:
            server.terminate()
            server.wait()
    kept = open(os.path.join(work, "drbgd.log")).read().count("not acknowledged was found kept")
    print(f"  uses whose answer was lost and that were read back kept: {kept}")
    import shutil
    shutil.rmtree(work)  # (kept, with the servers' log, when a check fails)


def chain_verifies(api, work):
    """Three uses of one chain, the last revealed: each result, shown to anyone, verifies with
    openssl over the bytes kept (the signed `random` is the kept answer's, byte for byte)."""
    status, _, body = http("POST", f"http://{api}/tickets", {"n": 1})
    ticket = json.loads(body)["tickets"][0]["ticket_id"]
    chain = []
    for _ in range(3):
        status, headers, body = http("POST", f"http://{api}/int", {"min": 1, "max": 90, "count": 5, "ticket": ticket})
        assert status == 200, body
        chain.append(ticket)
        ticket = {k.lower(): v for k, v in headers.items()}["drbgd-next-ticket"]
    status, _, body = http("POST", f"http://{api}/tickets/{chain[-1]}/reveal", {})
    assert status == 200 and json.loads(body)["revealed"] == 3, body
    status, _, body = http("GET", f"http://{api}/keys", auth=False)
    x = base64.urlsafe_b64decode(json.loads(body)["keys"][0]["x"] + "==")
    der = bytes.fromhex("302a300506032b6570032100") + x  # SubjectPublicKeyInfo of an Ed25519 key
    pem = os.path.join(work, "receipts.pub.pem")
    with open(pem, "w") as f:
        f.write("-----BEGIN PUBLIC KEY-----\n" + base64.b64encode(der).decode() + "\n-----END PUBLIC KEY-----\n")
    for i, used in enumerate(chain):
        status, _, view = http("GET", f"http://{api}/tickets/{used}", auth=False)
        assert status == 200, view
        kept = view[view.index(b',"result":') + len(b',"result":'):-1]  # the kept answer, as sent
        random = kept[len(b'{"random":'):kept.rindex(b',"signature":"')]
        signature = json.loads(kept)["signature"]
        assert json.loads(random)["ticket"] == used and json.loads(random).get("previous_ticket") == (chain[i - 1] if i else None)
        jcs, sig = os.path.join(work, f"chain{i}.jcs"), os.path.join(work, f"chain{i}.sig")
        with open(jcs, "wb") as f:
            f.write(random)
        with open(sig, "wb") as f:
            f.write(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)))
        out = subprocess.run(["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", pem, "-rawin", "-in", jcs,
                              "-sigfile", sig], capture_output=True, text=True)
        assert out.returncode == 0 and "Signature Verified Successfully" in out.stdout, out
    # And a changed byte does not (the check can fail).
    with open(jcs, "r+b") as f:
        f.seek(len(random) // 2)
        byte = f.read(1)
        f.seek(len(random) // 2)
        f.write(bytes([byte[0] ^ 1]))
    out = subprocess.run(["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", pem, "-rawin", "-in", jcs,
                          "-sigfile", sig], capture_output=True, text=True)
    assert out.returncode != 0, "openssl verified a changed byte"
    print("  a chain of three uses, the last revealed: each result shown without credentials verifies with "
          "openssl (a changed byte does not)")


def wait_for(received, lock, count, seconds=20):
    """Until `count` answers are in (or `seconds` passed)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with lock:
            if len(received) >= count:
                return
        time.sleep(0.01)


# What must never be in the store: chain forks (two tickets with one predecessor), a used
# ticket without its result, a result under a ticket's serial that names another ticket, a result
# whose ticket is not used.
FAULTS = """SELECT
 (SELECT count(*) FROM (SELECT previous_id FROM {t} WHERE previous_id IS NOT NULL
   GROUP BY previous_id HAVING count(*) > 1) f),
 (SELECT count(*) FROM {t} t WHERE t.used_ms IS NOT NULL AND NOT EXISTS
   (SELECT 1 FROM {r} r WHERE r.serial = t.serial AND r.ticket_id = t.id)),
 (SELECT count(*) FROM {t} t JOIN {r} r ON r.serial = t.serial WHERE r.ticket_id <> t.id),
 (SELECT count(*) FROM {r} r WHERE NOT EXISTS
   (SELECT 1 FROM {t} t WHERE t.id = r.ticket_id AND t.used_ms IS NOT NULL AND t.serial = r.serial))"""


def sqlite_faults(path):
    import sqlite3
    with sqlite3.connect(path) as db:
        row = db.execute(FAULTS.format(t="tickets", r="results")).fetchone()
    return "|".join(str(n) for n in row)


def check(api, tickets, received):
    """Every ticket as the store keeps it after the crash (8 at a time)."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(8) as pool:
        kinds = list(pool.map(lambda ticket: check_one(api, ticket, received.get(ticket)), tickets))
    used, unused = kinds.count("used"), kinds.count("unused")
    print(f"ticket crash: {len(received)} answers received before SIGKILL, all kept byte for byte and given "
          f"again to their request; {used} tickets used once, {unused} unused and usable after the restart")


def check_one(api, ticket, got):
    """`ticket` as kept: its answer as received (`got`: its request and answer), or used once
    without an answer received, or unused and usable now."""
    status, _, body = http("GET", f"http://{api}/tickets/{ticket}")
    assert status == 200, body
    view = json.loads(body)
    if got:
        request, answer = got
        serial = json.loads(answer)["random"]["serial"]
        assert view["used_at"] and view["serial"] == serial, (ticket, view)
        status, _, kept = http("GET", f"http://{api}/results/{serial}")
        assert status == 200 and kept == answer, f"the answer of {ticket} was not kept as sent"
        status, _, again = http("POST", f"http://{api}/int", request)
        assert status == 200 and again == answer, "a retry after the restart is the first answer"
        other = dict(request, max=request["max"] - 1)
        status, _, _ = http("POST", f"http://{api}/int", other)
        assert status == 409, f"another use of a used ticket: {status}"
        return "used"
    if view["used_at"]:
        # Committed, its answer lost with the connection: kept all the same, once.
        status, _, kept = http("GET", f"http://{api}/results/{view['serial']}")
        assert status == 200 and json.loads(kept)["random"]["ticket"] == ticket, ticket
        return "used"
    request = {"min": 1, "max": 1000000, "count": 5, "ticket": ticket}
    status, _, body = http("POST", f"http://{api}/int", request)
    assert status == 200, f"an unused ticket is still usable: {status} {body[:200]}"
    return "unused"


if __name__ == "__main__":
    main()
