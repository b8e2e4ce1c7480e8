#!/usr/bin/env python3
"""The trust endpoints' doors, attacked as an attacker would, each against the release binary
started here on loopback with the configuration the door is about:

1. verify: worst-case `POST /verify` bodies (the receipt-sized body that costs drbgd the most
   CPU of those tried, measured here one at a time first, each answered as it must be) from
   three addresses (127.0.0.2-4, a process each), each at its per-peer limit
   (`server.peer_requests_per_second`, 10/s), for SECONDS, against
   config/examples/verifiable.toml. Meanwhile another address times sequential
   `GET /bits?n=256`; the same client is timed for SECONDS without the attack first. Must hold:
   drbgd's CPU time (from /proc, in clock ticks) over the attack, less what the timed client
   alone cost it, at most one core; and the GET's p99 within 10 ms of the baseline's.
2. streams: with auth off (the default: everyone is `anonymous`), 100 HTTP/1.1
   `GET /bits?n=10^8` streams from 127.0.0.2 and 25 from each of 127.0.0.3-5, whose client
   reads 64 bytes of each every 7.5 s (a small receive buffer, so they stall at once). Must
   hold: a `GET /bits?n=10^7` from 127.0.0.9 completes in under 5 s. Control, so the attack
   is known to bite: the same request from 127.0.0.2 does not complete in those 5 s (it waits
   in its own address's share).
3. proxy: a dual-stack listener (`[::]:port`, IPv4 peers seen as ::ffff:a.b.c.d) with
   `trusted_proxies = ["127.0.0.1"]`: 40 requests at once from the proxy (127.0.0.1), each with
   another client in X-Forwarded-For, to the public `GET /keys`. Must hold: all 40 served, as
   40 peers. Control: the same from 127.0.0.2, a peer not trusted, is one peer (some 429).

usage: scripts/trust-attacks.py DRBGD_BIN [verify|streams|proxy ...] [--seconds S]
       -> exit 1 on the first door that gives way; one summary line per door
"""
import argparse
import http.client
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICKS = os.sysconf("SC_CLK_TCK")


def fail(what):
    sys.exit(f"FAILED: {what}")


def free_port(family=socket.AF_INET, host="127.0.0.1"):
    with socket.socket(family) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class Server:
    """A drbgd serving `args` on free ports, ready; stopped on exit of the with block."""

    def __init__(self, binary, *args, listen_host="127.0.0.1", config_text=None):
        family = socket.AF_INET6 if ":" in listen_host else socket.AF_INET
        self.port, admin = free_port(family, listen_host), free_port()
        listen = f"[{listen_host}]:{self.port}" if ":" in listen_host else f"{listen_host}:{self.port}"
        self.config = None
        if config_text is not None:
            self.config = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
            self.config.write(config_text)
            self.config.close()
            args = ("--config", self.config.name) + args
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([binary, "serve", "--listen", listen, "--admin-listen", f"127.0.0.1:{admin}", *args],
                                     cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(200):
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{admin}/readyz", timeout=1).status == 200:
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        self.log.seek(0)
        fail(f"drbgd did not become ready:\n{self.log.read().decode(errors='replace')[-2000:]}")

    def peak_rss_mib(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def cpu_seconds(self):
        fields = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        if self.config:
            os.unlink(self.config.name)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.stop()


def connect(port, source, timeout=10):
    """An HTTP/1.1 connection to 127.0.0.1:port from `source` (an address of 127.0.0.0/8)."""
    return http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))


def request(conn, method, path, body=None, headers=None):
    conn.request(method, path, body=body, headers=headers or {})
    r = conn.getresponse()
    return r.status, r.read()


# --- 1. verify -------------------------------------------------------------------------------

def tiny_members(key_id, sig, room):
    """As many one-digit members as fit in `room` bytes, after a real key_id: the body that cost
    ~44 ms and ~22 MiB a request when it was read whole."""
    members, size, i = {"key_id": key_id}, 200, 0
    while size < room:
        members[f"m{i}"] = 0
        size += len(f"m{i}") + 5
        i += 1
    return json.dumps({"random": members, "signature": sig}, separators=(",", ":")).encode()


def worst_bodies(receipt, limit):
    """Receipt-shaped bodies just under the server's cap (`limit` bytes), each with the real
    key_id and a signature of the right length, so every check runs to the end; and the
    status each must be answered with."""
    random, sig = receipt["random"], receipt["signature"]
    room = limit - 512

    def body(data, ascii_only=False):
        return json.dumps({"random": {**random, "data": data}, "signature": sig}, ensure_ascii=ascii_only).encode()

    return {
        "one long string": (body("7" * room), 200),
        "escapes (\\u0001, 6 bytes each)": (body("\u0001" * (room // 6)), 200),
        "escaped non-ASCII (\\u00e9)": (body("\u00e9" * (room // 6), ascii_only=True), 200),
        "a list at limits.max_count": (body(["7" * (room // 1000 - 4)] * 1000), 200),
        "tiny members": (tiny_members(random["key_id"], sig, room), 400),
    }


def cost_of(server, body, n):
    """drbgd's CPU seconds per body, over n sequential POSTs from 127.0.0.5 (and the answers)."""
    conn, statuses = connect(server.port, "127.0.0.5"), set()
    t0 = server.cpu_seconds()
    for _ in range(n):
        status, _ = request(conn, "POST", "/verify", body, {"content-type": "application/json"})
        statuses.add(status)
        time.sleep(0.11)  # under the per-peer rate
    return (server.cpu_seconds() - t0) / n, statuses


def time_bits(port, source, seconds):
    """Latencies (ms) of sequential GET /bits?n=256 from `source` for `seconds`."""
    conn, lat = connect(port, source), []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t = time.perf_counter()
        status, _ = request(conn, "GET", "/bits?n=256")
        lat.append((time.perf_counter() - t) * 1000)
        if status != 200:
            fail(f"GET /bits answered {status}")
    return lat


def p99(lat):
    return statistics.quantiles(lat, n=100)[98]


def attacker(port, source, body, rate, seconds, results):
    """A process of its own (no GIL shared with the timed client): POSTs `body` from `source`
    at `rate` per second, over as many connections as its per-peer places (8), for `seconds`;
    puts its statuses' counts on `results`."""
    stop, counts, lock = threading.Event(), {}, threading.Lock()

    def one(offset):
        conn = None
        next_at = time.monotonic() + offset
        while not stop.is_set():
            stop.wait(max(0.0, next_at - time.monotonic()))
            next_at += 8 / rate
            try:
                conn = conn or connect(port, source)
                status, _ = request(conn, "POST", "/verify", body, {"content-type": "application/json"})
            except (OSError, http.client.HTTPException):
                conn, status = None, "error"
            with lock:
                counts[status] = counts.get(status, 0) + 1
    threads = [threading.Thread(target=one, args=(i / rate,), daemon=True) for i in range(8)]
    for t in threads:
        t.start()
    stop.wait(seconds)
    stop.set()
    for t in threads:
        t.join(15)
    results.put(counts)


def over_the_cap(port, limit):
    """The status of a POST /verify of one byte more than `limit` (the answer may come, and the
    connection close, before the whole body is sent)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as probe:
        probe.sendall(f"POST /verify HTTP/1.1\r\nHost: drbgd\r\nContent-Length: {limit + 1}\r\n\r\n".encode())
        try:
            probe.sendall(b" " * (limit + 1))
        except OSError:
            pass
        return int(probe.recv(64).split(b" ")[1])


def door_verify(binary, seconds, cost_requests=20):
    with Server(binary, "--config", "config/examples/verifiable.toml") as server:
        conn = connect(server.port, "127.0.0.5")
        _, text = request(conn, "GET", "/bits?n=256&receipt=true")
        receipt = json.loads(text)
        # The cap: the largest receipt this server issues, the example's max_output_bytes (64 KiB)
        # as ASCII bits and 16 KiB more (`Receipts::max_receipt_bytes`); checked by its 413.
        limit = 65536 * 8 + 16 * 1024
        if over_the_cap(server.port, limit) != 413:
            fail("a body one byte over the cap was not answered 413")
        costs = {}
        for name, (body, expected) in worst_bodies(receipt, limit).items():
            per, statuses = cost_of(server, body, cost_requests)
            print(f"  /verify body '{name}' ({len(body):,} bytes): {per * 1000:.2f} ms of CPU each, answered {sorted(statuses)}")
            if statuses != {expected}:
                fail(f"/verify body '{name}' answered {sorted(statuses)}, not {expected}")
            costs[name] = (per, body)
        name, (per, body) = max(costs.items(), key=lambda kv: kv[1][0])
        print(f"  worst: '{name}', {per * 1000:.2f} ms of drbgd's CPU per body ({len(body):,} bytes)")
        c0 = server.cpu_seconds()
        base = time_bits(server.port, "127.0.0.6", seconds)
        alone = (server.cpu_seconds() - c0) / seconds
        results = multiprocessing.Queue()
        attackers = [multiprocessing.Process(target=attacker, args=(server.port, src, body, 10.0, seconds + 1, results))
                     for src in ("127.0.0.2", "127.0.0.3", "127.0.0.4")]
        for a in attackers:
            a.start()
        time.sleep(0.5)
        c0, w0 = server.cpu_seconds(), time.monotonic()
        attacked = time_bits(server.port, "127.0.0.6", seconds)
        cores = (server.cpu_seconds() - c0) / (time.monotonic() - w0) - alone
        counts = {}
        for _ in attackers:
            for k, v in results.get(timeout=60).items():
                counts[k] = counts.get(k, 0) + v
        for a in attackers:
            a.join(15)
        peak = server.peak_rss_mib()
    print(f"verify: {counts.get(200, 0)} worst-case bodies checked from 3 addresses in {seconds + 1:.0f} s "
          f"(answers {dict(sorted(counts.items(), key=str))}); the attack took {cores:.2f} core of drbgd's "
          f"(beyond the {alone:.2f} the timed client alone took); GET /bits p99 {p99(base):.2f} ms alone, "
          f"{p99(attacked):.2f} ms under attack (median {statistics.median(base):.2f} / "
          f"{statistics.median(attacked):.2f} ms); peak RSS {peak:.0f} MiB")
    if cores > 1.0:
        fail(f"/verify flood took {cores:.2f} cores of drbgd's, more than one")
    if p99(attacked) > p99(base) + 10:
        fail(f"GET /bits p99 {p99(attacked):.2f} ms under attack, more than 10 ms over {p99(base):.2f}")
    if counts.get(200, 0) < seconds * 3 * 5:
        fail(f"the attack did not run at its rate: {counts}")


# --- 2. streams ------------------------------------------------------------------------------

def slow_stream(port, source):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /bits?n=100000000&format=binary HTTP/1.1\r\nHost: drbgd\r\n\r\n")
    return s


def drip(socks, stop):
    """Reads 64 bytes of one stream every 7.5 s / streams: of each every 7.5 s."""
    i = 0
    while not stop.wait(7.5 / len(socks)):
        s = socks[i % len(socks)]
        s.settimeout(0.01)
        try:
            s.recv(64)
        except OSError:
            pass
        i += 1


def fetch_time(port, source, limit):
    """Seconds to read all of GET /bits?n=10^7 (answered 200, 1,250,000 bytes of body) from
    `source`, or None past `limit` seconds; and the bytes after the head read by then."""
    s = socket.socket()
    s.bind((source, 0))
    start, head, got = time.monotonic(), b"", 0
    try:
        s.settimeout(limit)
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /bits?n=10000000&format=binary HTTP/1.1\r\nHost: drbgd\r\nConnection: close\r\n\r\n")
        while time.monotonic() - start < limit:
            s.settimeout(max(0.01, limit - (time.monotonic() - start)))
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            if head is not None:
                head += chunk
                if b"\r\n\r\n" not in head:
                    continue
                head, chunk = head.split(b"\r\n\r\n", 1)
                if not head.startswith(b"HTTP/1.1 200"):
                    fail(f"GET /bits from {source} answered {head.splitlines()[0]!r}")
                head = None
            got += len(chunk)
    except OSError:
        pass
    finally:
        s.close()
    # (The body is chunked: its data and the chunks' framing, so at least 1,250,000 bytes.)
    return (time.monotonic() - start if got >= 1_250_000 else None), got


def door_streams(binary, _seconds):
    flooders = {"127.0.0.2": 100, "127.0.0.3": 25, "127.0.0.4": 25, "127.0.0.5": 25}
    with Server(binary) as server:
        socks = [slow_stream(server.port, src) for src, n in flooders.items() for _ in range(n)]
        stop = threading.Event()
        dripper = threading.Thread(target=drip, args=(socks, stop), daemon=True)
        dripper.start()
        time.sleep(3)
        other, got_other = fetch_time(server.port, "127.0.0.9", 5.0)
        same, got_same = fetch_time(server.port, "127.0.0.2", 5.0)
        stop.set()
        for s in socks:
            s.close()
    print(f"streams: 100 slow streams from 127.0.0.2, 25 from each of 127.0.0.3-5; GET /bits?n=10^7 from "
          f"127.0.0.9 {'in %.3f s' % other if other else 'NOT done in 5 s (%d bytes)' % got_other}; "
          f"control from 127.0.0.2 itself {'in %.3f s' % same if same else 'not done in 5 s (%d bytes)' % got_same}")
    if other is None or other >= 5.0:
        fail("another address's stream was starved by four addresses' slow streams")
    if same is not None:
        fail("control: the flooding address's own stream was served, so the attack did not hold its share")


# --- 3. proxy --------------------------------------------------------------------------------

def forwarded_burst(port, source, n=40):
    """n requests at once to GET /keys from `source`, each forwarded for another client."""
    statuses, lock = [], threading.Lock()

    def one(i):
        try:
            conn = connect(port, source)
            status, _ = request(conn, "GET", "/keys", headers={"x-forwarded-for": f"203.0.113.{i + 1}"})
        except OSError:
            status = "error"
        with lock:
            statuses.append(status)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return statuses


def door_proxy(binary, _seconds):
    config = '[server]\ntrusted_proxies = ["127.0.0.1"]\n'
    with Server(binary, listen_host="::", config_text=config) as server:
        trusted = forwarded_burst(server.port, "127.0.0.1")
        untrusted = forwarded_burst(server.port, "127.0.0.2")
    served = trusted.count(200)
    control = untrusted.count(200)
    print(f"proxy: dual-stack listener, trusted_proxies = [\"127.0.0.1\"]: {served} of 40 forwarded clients "
          f"served from the proxy; control from an untrusted peer: {control} of 40 (the rest 429)")
    if served != 40:
        fail(f"only {served} of 40 forwarded clients served: the proxy was not recognised")
    if control >= 40:
        fail("control: 40 requests from one untrusted peer were all served, so the limit never bit")


DOORS = {"verify": door_verify, "streams": door_streams, "proxy": door_proxy}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary")
    parser.add_argument("doors", nargs="*", metavar="DOOR", help=", ".join(DOORS))
    parser.add_argument("--seconds", type=float, default=8.0, help="each phase of the verify door (8)")
    parser.add_argument("--cost-requests", type=int, default=20,
                        help="POSTs per body when measuring each body's CPU cost (20; CPU time is counted in ticks)")
    args = parser.parse_args()
    unknown = set(args.doors) - set(DOORS)
    if unknown:
        parser.error(f"no door {sorted(unknown)}: {', '.join(DOORS)}")
    for door in args.doors or DOORS:
        if door == "verify":
            door_verify(os.path.abspath(args.binary), args.seconds, args.cost_requests)
        else:
            DOORS[door](os.path.abspath(args.binary), args.seconds)
    print("trust doors: OK")


if __name__ == "__main__":
    main()
