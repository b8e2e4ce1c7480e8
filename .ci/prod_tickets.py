"""The prod pod's tickets and kept results, in its PostgreSQL (.ci/container.sh, part 3), as a
client of prod meets them: over HTTPS (the test CA), with the test API key.

- Two tickets made (201); the first used by a draw: 200, a receipt naming it, and the header
  naming its successor. The same request again (its members in another order) is the kept answer
  byte for byte; another draw under it is 409 `ticket_used` naming the serial.
- Without credentials, `GET /tickets/{id}` shows it used, with the answer as sent; the caller's
  `GET /results/{serial}` gives the same bytes; the database holds that one result, those bytes,
  and the ticket used once.
- The database stopped (scripts/postgres.sh stop): a draw under the second ticket is 503
  `store_unavailable` and nothing is kept. Restarted: the same ticket is used (polled while the
  pod's pool reconnects), once.

Usage: python3 .ci/prod_tickets.py API CA PG_DIR PG_URL PSQL  (the key in $CI_API_KEY)
"""

import json
import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

API, CA, PG_DIR, PG_URL, PSQL = sys.argv[1:6]
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


def sql(query):
    """One value from the database, as the pod reaches it (the password from PG_DIR's file)."""
    with open(os.path.join(PG_DIR, "password")) as f:
        env = dict(os.environ, PGPASSWORD=f.read().strip())
    out = subprocess.run([PSQL, "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", PG_URL, "-c", query],
                         env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def postgres(command):
    subprocess.run(["bash", "scripts/postgres.sh", command, PG_DIR], check=True, capture_output=True)


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
    assert sql(f"SELECT encode(body, 'hex') FROM drbgd_results WHERE ticket_id = '{first}'") == answer.hex()
    assert sql("SELECT count(*) FROM drbgd_results") == "1"
    assert sql(f"SELECT serial FROM drbgd_tickets WHERE id = '{first}' AND used_ms IS NOT NULL") == serial
    assert sql(f"SELECT previous_id FROM drbgd_tickets WHERE id = '{successor}' AND used_ms IS NULL") == first
    return serial


def through_an_outage(second):
    request = {"min": 1, "max": 90, "count": 6, "ticket": second}
    postgres("stop")
    status, _, body = http("POST", "/int", request)
    assert status == 503 and json.loads(body)["code"] == "store_unavailable", (status, body[:300])
    assert http("GET", f"/tickets/{second}", auth=False)[0] == 503, "a lookup with the database down"
    postgres("restart")
    deadline, status = time.monotonic() + 30, 0
    while time.monotonic() < deadline:
        status, _, answer = http("POST", "/int", request)
        if status == 200:
            break
        assert status == 503, (status, answer[:300])
        time.sleep(0.2)
    assert status == 200, "the ticket kept no use through the outage, yet is not usable after it"
    serial = json.loads(answer)["random"]["serial"]
    assert sql(f"SELECT count(*) FROM drbgd_results WHERE ticket_id = '{second}'") == "1"
    assert sql("SELECT count(*) FROM drbgd_results") == "2"
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
    print(f"  database stopped: a draw under {second} 503 store_unavailable, nothing kept; "
          f"restarted: the ticket used once (serial {serial})")


if __name__ == "__main__":
    main()
