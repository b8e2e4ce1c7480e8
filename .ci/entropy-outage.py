#!/usr/bin/env python3
"""Entropy outage at the OS boundary (fail closed without dropping anyone: every call gets a
complete answer, a 503 when it cannot be served safely, and no suspect output is served).

Starts the real release binary, waits for /readyz, then makes the kernel's getrandom(2) fail
with EIO for every thread of the process (strace attached from outside: -f follows threads,
`inject=getrandom:error=EIO`). While the fault is on, it calls every route of both transports
with and without X-Request-Id, and with and without prediction resistance where the route takes
it, and asserts:
  - every call completes within 2 s (no dropped connection, no hang);
  - no prediction-resistant output is served;
  - every non-200 is a 503 problem+json (HTTP) or UNAVAILABLE (gRPC);
  - /readyz is 503;
then removes the fault (strace detaches) and asserts the service heals to 200, serves pr=true
again without a restart, and never logged a panic. Prints the per-route table (markdown).

Usage: entropy-outage.py path/to/drbgd
"""
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/drbgd"
PORT = 20000 + random.randrange(12000)  # below the ephemeral ports (32768+)
API, ADMIN = f"127.0.0.1:{PORT}", f"127.0.0.1:{PORT + 1}"
DEADLINE_S = 2.0

# (name, method, path, body, takes_pr)
HTTP_ROUTES = [
    ("GET /bits", "GET", "/bits?n=256", None, True),
    ("GET /bits (streamed)", "GET", "/bits?n=1000000&format=binary", None, True),
    ("POST /bits", "POST", "/bits", {"n": 256}, True),
    ("GET /bytes", "GET", "/bytes?n=32", None, True),
    ("GET /token", "GET", "/token", None, False),
    ("GET /nonce", "GET", "/nonce", None, False),
    ("GET /uuid", "GET", "/uuid?count=3", None, False),
    ("GET /int", "GET", "/int?min=1&max=6&count=10", None, False),
    ("GET /sequence", "GET", "/sequence?min=1&max=52", None, False),
    ("GET /algorithms", "GET", "/algorithms", None, False),
    ("GET /openapi.json", "GET", "/openapi.json", None, False),
    ("GET /nope (404)", "GET", "/nope", None, False),
]
# (name, method, request, pr field or None)
GRPC_METHODS = [
    ("GetBits", "drbgd.v1.RandomnessService/GetBits", {"n": 256}, "prediction_resistance"),
    ("StreamBits", "drbgd.v1.RandomnessService/StreamBits", {"n": 100000}, "prediction_resistance"),
    ("GetBytes", "drbgd.v1.RandomnessService/GetBytes", {"n": 32}, "prediction_resistance"),
    ("GetToken", "drbgd.v1.RandomnessService/GetToken", {}, None),
    ("GetNonce", "drbgd.v1.RandomnessService/GetNonce", {}, None),
    ("GetUuids", "drbgd.v1.RandomnessService/GetUuids", {"count": 3}, None),
    ("GetInts", "drbgd.v1.RandomnessService/GetInts", {"min": 1, "max": 6, "count": 10}, None),
    ("GetSequence", "drbgd.v1.RandomnessService/GetSequence", {"min": 1, "max": 52}, None),
    ("Health/Check", "grpc.health.v1.Health/Check", {}, None),
]


def readyz():
    try:
        with urllib.request.urlopen(f"http://{ADMIN}/readyz", timeout=2) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def call_http(method, path, body, pr, request_id):
    url = f"http://{API}{path}"
    if pr:
        if body is not None:
            body = dict(body, pr=True)
        else:
            url += ("&" if "?" in path else "?") + "pr=true"
    args = ["curl", "-sS", "-o", "-", "-D", "-", "--max-time", str(DEADLINE_S), "-X", method, url]
    if body is not None:
        args += ["-H", "content-type: application/json", "--data", json.dumps(body)]
    if request_id:
        args += ["-H", f"x-request-id: {request_id}"]
    start = time.monotonic()
    p = subprocess.run(args, capture_output=True)
    elapsed = time.monotonic() - start
    if p.returncode != 0:
        return {"ok": False, "status": 0, "elapsed": elapsed, "why": p.stderr.decode(errors="replace").strip()}
    head, _, payload = p.stdout.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
    return {"ok": True, "status": status, "elapsed": elapsed, "headers": headers, "body": payload}


def call_grpc(method, request, request_id):
    args = ["grpcurl", "-plaintext", "-max-time", str(DEADLINE_S), "-d", json.dumps(request)]
    if request_id:
        args += ["-H", f"x-request-id: {request_id}"]
    args += [API, method]
    start = time.monotonic()
    p = subprocess.run(args, capture_output=True)
    elapsed = time.monotonic() - start
    err = p.stderr.decode(errors="replace")
    code = "OK" if p.returncode == 0 else "?"
    for line in err.splitlines():
        if line.strip().startswith("Code:"):
            code = line.split(":", 1)[1].strip()
    return {"ok": p.returncode == 0 or code != "?", "code": code, "elapsed": elapsed, "why": err.strip()[:200],
            "out": p.stdout}


def tracer_attached(pid):
    tids = os.listdir(f"/proc/{pid}/task")
    for tid in tids:
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            tracer = next(l for l in f if l.startswith("TracerPid:")).split()[1]
        if tracer == "0":
            return False
    return True


def main():
    log = tempfile.NamedTemporaryFile(prefix="drbgd-outage-", suffix=".log", delete=False)
    # grpcurl reads the service's descriptor by reflection (public, under each peer's rate:
    # 10/s, burst 20, by default) for every call it makes: more in a moment than that rate,
    # which this check is not about.
    env = dict(os.environ, DRBGD__SERVER__PEER_REQUESTS_PER_SECOND="1000", DRBGD__SERVER__PEER_BURST="1000")
    server = subprocess.Popen([BIN, "serve", "--listen", API, "--admin-listen", ADMIN],
                              stdout=log, stderr=subprocess.STDOUT, env=env)
    failures = []
    strace = None
    try:
        for _ in range(200):
            if readyz() == 200:
                break
            time.sleep(0.05)
        assert readyz() == 200, "server never became ready"
        # Warm every worker thread's std state before the fault (the fault is for getrandom
        # calls made by drbgd, not by thread-local initialisation of std or the runtime).
        for _ in range(20):
            call_http("GET", "/token", None, False, None)

        strace_log = tempfile.NamedTemporaryFile(prefix="strace-", suffix=".log", delete=False)
        strace = subprocess.Popen(["strace", "-f", "-qq", "-p", str(server.pid), "-e", "trace=getrandom",
                                   "-e", "inject=getrandom:error=EIO", "-o", strace_log.name],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(200):
            if tracer_attached(server.pid):
                break
            time.sleep(0.05)
        assert tracer_attached(server.pid), "strace did not attach to every thread"
        time.sleep(0.3)

        rows = []
        for name, method, path, body, takes_pr in HTTP_ROUTES:
            for pr in ([False, True] if takes_pr else [False]):
                for rid in [None, "outage-test-id-1"]:
                    r = call_http(method, path, body, pr, rid)
                    problems = []
                    if not r["ok"]:
                        problems.append(f"no response: {r['why']}")
                    if r["elapsed"] > DEADLINE_S:
                        problems.append(f"took {r['elapsed']:.2f}s")
                    if r["ok"]:
                        if pr and r["status"] == 200:
                            problems.append("served prediction-resistant output")
                        if r["status"] not in (200, 503) and not (name.endswith("(404)") and r["status"] == 404):
                            problems.append(f"status {r['status']}")
                        if r["status"] != 200 and "problem+json" not in r["headers"].get("content-type", ""):
                            problems.append("error is not problem+json")
                        if r["headers"].get("cache-control") != "no-store":
                            problems.append("no Cache-Control: no-store")
                        got_id = r["headers"].get("x-request-id", "")
                        if not got_id or (rid and got_id != rid):
                            problems.append(f"x-request-id {got_id!r}")
                    code = ""
                    if r["ok"] and r["status"] != 200:
                        try:
                            code = json.loads(r["body"]).get("code", "")
                        except ValueError:
                            code = "?"
                    rows.append(("HTTP", name, "yes" if pr else "no", "yes" if rid else "no",
                                 str(r["status"]) + (f" {code}" if code else ""), f"{r['elapsed'] * 1000:.0f}",
                                 "; ".join(problems) or "ok"))
                    failures += [f"{name} pr={pr} id={bool(rid)}: {p}" for p in problems]
        for name, method, request, pr_field in GRPC_METHODS:
            for pr in ([False, True] if pr_field else [False]):
                for rid in [None, "outage-test-id-2"]:
                    req = dict(request, **({pr_field: True} if pr else {}))
                    r = call_grpc(method, req, rid)
                    problems = []
                    if not r["ok"]:
                        problems.append(f"no status: {r['why']}")
                    if r["elapsed"] > DEADLINE_S:
                        problems.append(f"took {r['elapsed']:.2f}s")
                    if pr and r["code"] == "OK":
                        problems.append("served prediction-resistant output")
                    if r["code"] not in ("OK", "Unavailable"):
                        problems.append(f"code {r['code']}")
                    if name == "Health/Check" and r["code"] == "OK" and b"NOT_SERVING" not in r["out"]:
                        problems.append("health says SERVING during the outage")
                    rows.append(("gRPC", name, "yes" if pr else "no", "yes" if rid else "no", r["code"],
                                 f"{r['elapsed'] * 1000:.0f}", "; ".join(problems) or "ok"))
                    failures += [f"{name} pr={pr} id={bool(rid)}: {p}" for p in problems]

        ready_during = readyz()
        if ready_during != 503:
            failures.append(f"/readyz during the outage: {ready_during}")

        strace.send_signal(signal.SIGINT)
        strace.wait(timeout=10)
        healed_after = None
        start = time.monotonic()
        while time.monotonic() - start < 10:
            if readyz() == 200:
                healed_after = time.monotonic() - start
                break
            time.sleep(0.1)
        if healed_after is None:
            failures.append("did not heal to ready within 10 s")
        after = call_http("GET", "/bits?n=256&pr=true", None, False, None)
        if not after["ok"] or after["status"] != 200:
            failures.append(f"pr=true after healing: {after.get('status')}")
        injected = sum(1 for l in open(strace_log.name) if "getrandom(" in l)

        print("| transport | route | pr | X-Request-Id | result | ms | check |")
        print("|---|---|---|---|---|---|---|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
        print(f"\n/readyz during the outage: {ready_during}; healed to 200 {healed_after:.2f} s after the "
              f"fault was removed; pr=true afterwards: {after.get('status')}; getrandom calls failed by the "
              f"fault: {injected}" if healed_after is not None else "")
    finally:
        if strace and strace.poll() is None:
            strace.send_signal(signal.SIGINT)
            strace.wait(timeout=10)
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
    text = open(log.name, errors="replace").read()
    if "panicked" in text or "panic" in text.lower():
        failures.append("a panic line in the log")
    if server.returncode != 0:
        failures.append(f"exit code {server.returncode} after SIGTERM")
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        print("\n--- server log (tail)\n" + "\n".join(text.splitlines()[-30:]))
        sys.exit(1)
    print("entropy outage: every call answered, no pr output served, healed without restart, no panic")


if __name__ == "__main__":
    main()
