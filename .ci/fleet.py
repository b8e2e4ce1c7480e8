#!/usr/bin/env python3
"""The fleet test: three drbgd replicas sharing a real redis-server for quotas, behind a real
HAProxy (round robin, health checks on /readyz), each replica and the store in a network
namespace of its own (veth pairs, routed by the host) so that store traffic crosses a network
and a partition is a link going down. Without `ip netns` (not root) everything runs on
loopback instead, and says so.

Scenarios (the `web` caller of config/examples/fleet.toml: 50 requests/s, burst 10), each with
`web` at 6x its rate through the balancer for T seconds and `batch` (no quota) beside it:
  global     the store up: web served within +-10 % of rate*T + burst; batch all 200
  store-kill redis-server killed 2 s in: no 5xx, web within +-25 % (quota.on_store_failure =
             local); redis back: every replica global again within 2 s
  store-stop redis-server stopped (SIGSTOP: a slow store) 2 s in for 3 s: no 5xx, +-25 %
  partition  the store's link down 2 s in for 3 s: no 5xx, +-25 %
  replica    one replica SIGKILLed 3 s in: no 5xx, web within +-10 %
  cold-start redis-server killed, then the killed replica started again while it is down (it has
             never reached the store, so has seen no other replica: it divides by quota.replicas,
             3 in fleet.toml); web at 6x its rate through all three for 4 s: served at most
             rate*4+burst + 10 %, and the new replica took its part of the load

usage: .ci/fleet.py target/release/drbgd [SECONDS]
"""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

BINARY = sys.argv[1] if len(sys.argv) > 1 else "target/release/drbgd"
T = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
RATE, BURST, DEMAND = 50, 10, 6
WEB = "web-example-key"
BATCH = "batch-example-key"
REPLICAS = 3
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sh(*args, check=True):
    return subprocess.run(args, check=check, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Net:
    """Namespaces dq-r1..3 and dq-store, each on a veth pair to the host (10.77.<i>.0/24)."""

    def __init__(self):
        self.netns = os.geteuid() == 0 and shutil.which("ip") is not None
        if self.netns:
            try:
                self._up()
            except subprocess.CalledProcessError as e:
                print(f"ip netns unavailable ({e.stdout.strip()}): running on loopback")
                self.down()
                self.netns = False
        print("network:", "a namespace per replica and for the store" if self.netns else "loopback")

    def names(self):
        return [(f"dq-r{i}", i) for i in range(1, REPLICAS + 1)] + [("dq-store", 9)]

    def _up(self):
        self.down()
        sh("sysctl", "-qw", "net.ipv4.ip_forward=1")
        for ns, i in self.names():
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", f"dqh{i}", "type", "veth", "peer", "name", f"dqn{i}")
            sh("ip", "link", "set", f"dqn{i}", "netns", ns)
            sh("ip", "addr", "add", f"10.77.{i}.1/24", "dev", f"dqh{i}")
            sh("ip", "link", "set", f"dqh{i}", "up")
            for cmd in (
                ["ip", "addr", "add", f"10.77.{i}.2/24", "dev", f"dqn{i}"],
                ["ip", "link", "set", f"dqn{i}", "up"],
                ["ip", "link", "set", "lo", "up"],
                ["ip", "route", "add", "default", "via", f"10.77.{i}.1"],
            ):
                sh("ip", "netns", "exec", ns, *cmd)

    def down(self):
        for ns, i in self.names():
            sh("ip", "link", "del", f"dqh{i}", check=False)
            sh("ip", "netns", "del", ns, check=False)

    def addr(self, i):
        return f"10.77.{i}.2" if self.netns else "127.0.0.1"

    def run(self, i, args, **kw):
        prefix = ["ip", "netns", "exec", f"dq-r{i}" if i != 9 else "dq-store"] if self.netns else []
        return subprocess.Popen(prefix + args, **kw)

    def partition(self, on):
        sh("ip", "link", "set", "dqh9", "down" if on else "up")
        if not on:
            sh("ip", "route", "replace", "10.77.9.0/24", "dev", "dqh9")


class Fleet:
    def __init__(self, net, workdir):
        self.net, self.dir = net, workdir
        self.store_port = 6379 if net.netns else free_port()
        self.ports = [(8080, 8081) if net.netns else (free_port(), free_port()) for _ in range(REPLICAS)]
        self.redis = None
        self.replicas = [None] * REPLICAS
        self.lb_port = free_port()
        self.haproxy = None

    def start_redis(self):
        self.redis = self.net.run(
            9,
            ["redis-server", "--port", str(self.store_port), "--bind", self.net.addr(9), "--save", "",
             "--appendonly", "no", "--protected-mode", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        wait_tcp(self.net.addr(9), self.store_port)

    def start_replica(self, k, store="redis"):
        api, admin = self.ports[k]
        addr = self.net.addr(k + 1)
        env = dict(os.environ, RUST_LOG="warn",
                   DRBGD__SERVER__LISTEN=f"{addr}:{api}", DRBGD__SERVER__ADMIN_LISTEN=f"{addr}:{admin}",
                   DRBGD__QUOTA__URL=f"redis://{self.net.addr(9)}:{self.store_port}",
                   DRBGD__QUOTA__PREFIX="fleet-ci", DRBGD__DRBG__INSTANCE=f"replica-{k + 1}",
                   DRBGD__QUOTA__STORE=store,
                   DRBGD__DRBG__SHARDS="1", DRBGD__LOG__AUDIT="false")
        log = open(os.path.join(self.dir, f"replica-{k + 1}.log"), "w")
        self.replicas[k] = self.net.run(k + 1, [BINARY, "serve", "--config", os.path.join(ROOT, "config/examples/fleet.toml")],
                                        env=env, stdout=log, stderr=log)
        wait_http(addr, admin, "/readyz")

    def start_haproxy(self):
        servers = "\n".join(
            f"  server r{k + 1} {self.net.addr(k + 1)}:{self.ports[k][0]} check port {self.ports[k][1]}"
            for k in range(REPLICAS))
        cfg = f"""global
  maxconn 2000
defaults
  mode http
  timeout connect 1s
  timeout client 30s
  timeout server 10s
  retries 3
  option redispatch
  # Connection failures only (a replica killed mid-request): a 5xx from a replica reaches the
  # client and fails the test, never retried into a 200 elsewhere.
  retry-on conn-failure empty-response
frontend fe
  bind 127.0.0.1:{self.lb_port}
  default_backend drbgd
backend drbgd
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
  default-server inter 250ms fall 2 rise 2
{servers}
"""
        path = os.path.join(self.dir, "haproxy.cfg")
        with open(path, "w") as f:
            f.write(cfg)
        self.haproxy = subprocess.Popen(["haproxy", "-f", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_tcp("127.0.0.1", self.lb_port)
        deadline = time.time() + 10
        while time.time() < deadline:  # every server up in HAProxy's eyes
            if get("127.0.0.1", self.lb_port, "/algorithms", BATCH)[0] == 200:
                break
            time.sleep(0.1)

    def usage_scope(self, k):
        status, body = get(self.net.addr(k + 1), self.ports[k][0], "/usage", WEB)
        return json.loads(body)["quota"]["scope"] if status == 200 else None

    def web_counters(self, k):
        """web's requests on replica k and those refused (its /usage counters)."""
        _, body = get(self.net.addr(k + 1), self.ports[k][0], "/usage", WEB)
        counters = json.loads(body)["counters"]
        return counters["requests"], sum(counters["denied"].values())

    def store_errors(self):
        """Failed store calls by reason, summed over the live replicas (the faults were seen)."""
        total = {}
        for k in range(REPLICAS):
            if self.replicas[k].poll() is not None:
                continue
            _, body = get(self.net.addr(k + 1), self.ports[k][1], "/metrics", None)
            for line in body.decode().splitlines():
                if line.startswith("drbgd_quota_store_errors_total{"):
                    reason = line.split('reason="')[1].split('"')[0]
                    total[reason] = total.get(reason, 0) + int(float(line.rsplit(" ", 1)[1]))
        return total

    def stop(self):
        for p in [self.haproxy, self.redis] + self.replicas:
            if p and p.poll() is None:
                p.kill()
                p.wait()


def wait_tcp(host, port, within=10):
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {host}:{port}")


def wait_http(host, port, path, within=15):
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            if get(host, port, path, None)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise SystemExit(f"{host}:{port}{path} never answered 200")


def get(host, port, path, key):
    c = http.client.HTTPConnection(host, port, timeout=5)
    try:
        c.request("GET", path, headers={"Authorization": f"Bearer {key}"} if key else {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def load(port, key, rate, seconds, statuses, workers=6):
    """`rate` requests/s of GET /token for `seconds`, spread over keep-alive connections."""
    start = time.monotonic() + 0.05
    lock = threading.Lock()

    def worker(w):
        conn = None
        k = w
        while True:
            due = start + k / rate
            if due >= start + seconds:
                return
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/token", headers={"Authorization": f"Bearer {key}"})
                r = conn.getresponse()
                r.read()
                status = r.status
            except (OSError, http.client.HTTPException) as e:
                status = f"error:{type(e).__name__}"
                conn = None
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
            k += workers

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    return threads


def scenario(fleet, name, tolerance, fault=None, judged=True, seconds=None, at_most=False):
    """web at DEMAND times its rate and batch beside it for `seconds` (T): web's served count
    within +-tolerance of its contract, rate*seconds+burst (at_most: no more than tolerance
    above it), no status but 200 and 429, batch all 200."""
    seconds = T if seconds is None else seconds
    web, batch = {}, {}
    threads = (load(fleet.lb_port, WEB, RATE * DEMAND, seconds, web)
               + load(fleet.lb_port, BATCH, 50, seconds, batch, workers=2))
    if fault:
        fault()
    for t in threads:
        t.join()
    expected = RATE * seconds + BURST
    served = web.get(200, 0)
    bad = {s: n for s, n in list(web.items()) + list(batch.items()) if s not in (200, 429)}
    within = served <= (1 + tolerance) * expected if at_most else abs(served - expected) <= tolerance * expected
    ok = within and not bad and batch.get(200, 0) == sum(batch.values())
    if not judged:
        print(f"{name:11} web served {served:4} of {sum(web.values()):4} (rate*T+burst = {expected:.0f}, "
              f"{served / expected:.2f}x): each replica counts alone (not judged: the comparison)")
        return True
    errors = fleet.store_errors()
    print(f"{name:11} web served {served:4} of {sum(web.values()):4} (rate*T+burst = {expected:.0f}, "
          f"{100 * (served - expected) / expected:+.1f} %, allowed {'+' if at_most else '+-'}{100 * tolerance:.0f} %), "
          f"429 {web.get(429, 0)}, other {bad or 'none'}; batch {batch.get(200, 0)}/{sum(batch.values())} 200"
          f"  {'ok' if ok else 'FAIL'}")
    print(f"{'':11} store errors so far (all replicas): {errors}")
    return ok


def cold_start(fleet):
    """The store down, then a replica started: it has never reached the store, so it has seen no
    other replica and divides the caller's rate by quota.replicas (dividing by itself alone, it
    served the whole rate on top of the others' shares). The fleet serves the contract + 10 %
    at most, and the new replica took part."""
    fleet.redis.kill()
    fleet.redis.wait()
    k = REPLICAS - 1
    if fleet.replicas[k].poll() is None:
        fleet.replicas[k].kill()
    fleet.replicas[k].wait()
    old = [i for i in range(REPLICAS) if i != k]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(fleet.usage_scope(i) != "replica_share" for i in old):
        time.sleep(0.05)
    fleet.start_replica(k)
    scope = fleet.usage_scope(k)
    time.sleep(1.5)  # HAProxy sees the replica up again (rise 2, every 250 ms)
    before = fleet.web_counters(k)
    ok = scenario(fleet, "cold-start", 0.10, seconds=4, at_most=True)
    after = fleet.web_counters(k)
    # (Less the /usage call that read the counters after: it counts as one of web's requests.)
    reached, refused = after[0] - before[0] - 1, after[1] - before[1]
    took_part = reached >= 20 and scope == "replica_share"
    print(f"{'':11} the replica started with the store down: scope {scope}, {reached} web requests reached "
          f"it, {reached - refused} served  {'ok' if took_part else 'FAIL'}")
    return ok and took_part


def main():
    for tool in ("redis-server", "haproxy"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is not installed")
    workdir = tempfile.mkdtemp(prefix="drbgd-fleet-")
    net = Net()
    fleet = Fleet(net, workdir)
    results = []
    try:
        fleet.start_redis()
        for k in range(REPLICAS):
            fleet.start_replica(k)
        fleet.start_haproxy()
        print(f"{REPLICAS} replicas, redis-server, HAProxy round robin; web at {DEMAND}x its {RATE}/s for {T:.0f} s each")

        results.append(scenario(fleet, "global", 0.10))
        time.sleep(1)

        def kill_store():
            time.sleep(2)
            fleet.redis.kill()
            fleet.redis.wait()
        results.append(scenario(fleet, "store-kill", 0.25, kill_store))
        fleet.start_redis()
        back = time.monotonic()
        pending = set(range(REPLICAS))
        while pending and time.monotonic() - back < 5:
            pending = {k for k in pending if fleet.usage_scope(k) != "global"}
            time.sleep(0.05)
        took = time.monotonic() - back
        print(f"{'recovery':11} every replica global again {took:.2f} s after redis-server came back  "
              f"{'ok' if not pending and took <= 2 else 'FAIL'}")
        results.append(not pending and took <= 2)
        time.sleep(1)

        def stop_store():
            time.sleep(2)
            fleet.redis.send_signal(signal.SIGSTOP)
            time.sleep(3)
            fleet.redis.send_signal(signal.SIGCONT)
        results.append(scenario(fleet, "store-stop", 0.25, stop_store))
        time.sleep(2)

        if net.netns:
            def partition():
                time.sleep(2)
                net.partition(True)
                time.sleep(3)
                net.partition(False)
            results.append(scenario(fleet, "partition", 0.25, partition))
            time.sleep(2)

        def kill_replica():
            time.sleep(3)
            fleet.replicas[REPLICAS - 1].kill()
        results.append(scenario(fleet, "replica", 0.10, kill_replica))
        results.append(cold_start(fleet))

        # The comparison: the same fleet with quota.store = "local".
        for k in range(REPLICAS):
            if fleet.replicas[k].poll() is None:
                fleet.replicas[k].kill()
                fleet.replicas[k].wait()
            fleet.start_replica(k, store="local")
        time.sleep(1)  # HAProxy sees every replica up again
        scenario(fleet, "local store", 0, judged=False)
    finally:
        fleet.stop()
        if net.netns:
            net.down()
    if not all(results):
        for f in sorted(os.listdir(workdir)):
            if f.endswith(".log"):
                print(f"--- {f} (last lines)")
                with open(os.path.join(workdir, f)) as fh:
                    print("".join(fh.readlines()[-15:]))
        raise SystemExit("fleet test failed")
    shutil.rmtree(workdir, ignore_errors=True)
    print("fleet test ok")


if __name__ == "__main__":
    main()
