"""The prod pod's tickets and kept results, in its PostgreSQL (.ci/container.sh, part 3), as a
client of prod meets them: over HTTPS (the test CA), with the test API key.

- Two tickets made (201); the first used by a draw: 200, a receipt naming it, and the header
  naming its successor. The same request again (its members in another order) is the kept answer
  byte for byte; another draw under it is 409 `ticket_used` naming the serial.
- Without credentials, `GET /tickets/{id}` shows it used, with the answer as sent; the caller's
  `GET /results/{serial}` gives the same bytes; the database holds that one result, those bytes,
  and the ticket used once; every session of the pod's (from the bridge's network) is TLS.
- The database stopped (scripts/postgres.sh stop): a draw under the second ticket is 503
  `store_unavailable`, a lookup 503; draws without a ticket are served and /readyz stays 200.
  Restarted: the ticket is still unused (nothing was kept), then used (polled while the pod's
  pool reconnects), once, by the same container process (no restart in between).

Usage: python3 .ci/prod_tickets.py API CA PG_DIR PG_URL PSQL CONTAINER SUBNET  (the key in $CI_API_KEY)
"""

import json
import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

API, CA, PG_DIR, PG_URL, PSQL, CONTAINER, SUBNET = sys.argv[1:8]
ADMIN = "http://127.0.0.1:28444"
KEY = os.environ["CI_API_KEY"]
TLS = ssl.create_default_context(cafile=CA)


def http(method, path, body=None, auth=True):
    """(status, headers, body bytes) of one request."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(API + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if auth:
        request.add_header("Authorization", f"Bearer {KEY}")
    try:
        with urllib.request.urlopen(request, context=TLS, timeout=30) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def sql(query, **values):
    """One value from the database, as the pod reaches it (the password from PG_DIR's file);
    `values` bound as psql variables (`:'name'` in the query), never spliced into it."""
    with open(os.path.join(PG_DIR, "password")) as f:
        env = dict(os.environ, PGPASSWORD=f.read().strip())
    args = [PSQL, "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", PG_URL]
    for name, value in values.items():
        args += ["-v", f"{name}={value}"]
    # psql expands variables in what it reads, not in -c: the query on standard input.
    out = subprocess.run(args, input=query, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def postgres(command):
    out = subprocess.run(["bash", "scripts/postgres.sh", command, PG_DIR], capture_output=True, text=True)
    assert out.returncode == 0, f"postgres.sh {command}: {out.stdout}{out.stderr}"


def container():
    """The pod's container: its process id and restart count."""
    out = subprocess.run(["podman", "inspect", "--format", "{{.State.Pid}} {{.RestartCount}}", CONTAINER],
                         capture_output=True, text=True, check=True)
    return out.stdout.split()


def ready():
    with urllib.request.urlopen(ADMIN + "/readyz", timeout=10) as r:
        return r.status


def used_once(first):
    request = {"min": 1, "max": 90, "count": 6, "ticket": first}
    status, headers, answer = http("POST", "/int", request)
    assert status == 200, (status, answer[:300])
    assert headers.get("cache-control") == "no-store", headers
    random = json.loads(answer)["random"]
    serial, successor = random["serial"], headers["drbgd-next-ticket"]
    assert random["ticket"] == first and len(random["data"]) == 6, random
    status, _, again = http("POST", "/int", dict(reversed(list(request.items()))))
    assert status == 200 and again == answer, "the same request again: not the kept answer byte for byte"
    status, _, body = http("POST", "/int", dict(request, max=89))
    assert status == 409 and json.loads(body)["code"] == "ticket_used" and serial in body.decode(), (status, body)
    status, _, view = http("GET", f"/tickets/{first}", auth=False)
    shown = json.loads(view)
    assert status == 200 and shown["used_at"] and shown["serial"] == serial and shown["next_ticket"] == successor, shown
    assert view.endswith(b',"result":' + answer + b"}"), "the public lookup does not show the answer as sent"
    status, _, kept = http("GET", f"/results/{serial}")
    assert status == 200 and kept == answer, "GET /results/{serial}: not the answer as sent"
    assert sql("SELECT encode(body, 'hex') FROM drbgd_results WHERE ticket_id = :'t'", t=first) == answer.hex()
    assert sql("SELECT count(*) FROM drbgd_results") == "1"
    assert sql("SELECT serial FROM drbgd_tickets WHERE id = :'t' AND used_ms IS NOT NULL", t=first) == serial
    assert sql("SELECT previous_id FROM drbgd_tickets WHERE id = :'t' AND used_ms IS NULL", t=successor) == first
    # The pod's sessions (from the bridge's network; not this one) are TLS, every one.
    sessions = sql("SELECT count(*) || ' ' || coalesce(bool_and(s.ssl)::text, 'none') FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) "
                   "WHERE a.usename = 'drbgd' AND a.client_addr <<= :'net'::inet AND a.pid <> pg_backend_pid()",
                   net=SUBNET)
    count, tls = sessions.split()
    assert int(count) >= 1 and tls == "true", f"the pod's sessions: {sessions}"
    return serial


def through_an_outage(second):
    request = {"min": 1, "max": 90, "count": 6, "ticket": second}
    before = container()
    postgres("stop")
    status, _, body = http("POST", "/int", request)
    assert status == 503 and json.loads(body)["code"] == "store_unavailable", (status, body[:300])
    assert http("GET", f"/tickets/{second}", auth=False)[0] == 503, "a lookup with the database down"
    # The rest of drbgd serves on, and stays in its Services.
    status, _, token = http("GET", "/token")
    assert status == 200 and len(token) == 43, (status, token[:100])
    assert ready() == 200, "/readyz with the database down"
    postgres("restart")
    # The refused use kept nothing: the ticket is unused.
    assert sql("SELECT count(*) FROM drbgd_tickets WHERE id = :'t' AND used_ms IS NULL", t=second) == "1"
    deadline, status = time.monotonic() + 30, 0
    while time.monotonic() < deadline:
        status, headers, answer = http("POST", "/int", request)
        if status == 200:
            break
        assert status in (503, 429), (status, answer[:300])
        # 429: the test caller's quota (1/s); 503: the pool not reconnected yet.
        time.sleep(float(headers.get("retry-after", "0.5")) if status == 429 else 0.5)
    assert status == 200, "the ticket kept no use through the outage, yet is not usable after it"
    serial = json.loads(answer)["random"]["serial"]
    assert sql("SELECT count(*) FROM drbgd_results WHERE ticket_id = :'t'", t=second) == "1"
    assert sql("SELECT count(*) FROM drbgd_results") == "2"
    assert container() == before, f"the container restarted during the outage: {before} -> {container()}"
    return serial


def main():
    status, _, body = http("POST", "/tickets", {"n": 2, "show_result": True})
    assert status == 201, (status, body[:300])
    first, second = (t["ticket_id"] for t in json.loads(body)["tickets"])
    status, _, _ = http("POST", "/tickets", {"n": 1}, auth=False)
    assert status == 401, f"creating tickets without a key: {status}"
    serial = used_once(first)
    print(f"  ticket {first}: used once (serial {serial}); the same request again the kept answer byte for "
          "byte, another 409 ticket_used; shown without credentials, by GET /results, and in drbgd_results as sent")
    serial = through_an_outage(second)
    print(f"  database stopped: a draw under {second} 503 store_unavailable, a lookup 503, /token 200, /readyz 200; "
          f"restarted: the ticket still unused, then used once (serial {serial}), the same container process")


if __name__ == "__main__":
    main()
