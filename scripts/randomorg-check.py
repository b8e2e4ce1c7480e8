#!/usr/bin/env python3
"""RANDOM.ORG's official Python client, rdoclient 1.5.0, against drbgd's RANDOM.ORG door.

The client is unchanged but for where it connects: its URL is a literal
(https://api.random.org/json-rpc/4/invoke), so `requests.post` is wrapped to send the same
request to drbgd instead (and to keep each raw answer, whose `random` bytes the signature
covers). Against `drbgd serve --config config/examples/drop-in.toml` (its example keys):

- every Basic and Signed method, getUsage (get_requests_left/get_bits_left), getResult;
- tickets: created, used once, the identical retry refused (422), revealed, read back
  (get_ticket), listed by type; another key's ticket refused (421);
- verify_signature: true for a served object, false with one value changed; the RSA
  signature also checked here with Python's `cryptography` and with `openssl dgst -sha512
  -verify`, over the answer's bytes, with the key from GET /json-rpc/4/public-key;
- RANDOM.ORG's errors as the client raises them (a wrong key, each parameter error's code);
- the values' distributions: integers, sequences, fractions and strings by chi-square,
  Gaussians by Kolmogorov-Smirnov (each at alpha 1e-4; each test also shown to refuse a
  biased sample);
- last, the 402 of a spent daily allowance, on its own key (randomorg-lean, 3 a day).

usage: randomorg-check.py URL        (URL: http://host:port of drbgd)
"""
import base64
import calendar
import collections
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile
import uuid

import requests
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from rdoclient import rdoclient as rdo

KEY = "randomorg-example-key-0001"
LEAN = "randomorg-example-lean-0002"
RANDOM_ORG = "https://api.random.org/json-rpc/4/invoke"

url = sys.argv[1].rstrip("/")
answers = []
real_post = requests.post


def post(target, **kwargs):
    """rdoclient's one call to the network, sent to drbgd; the raw answer kept."""
    assert target == RANDOM_ORG, target
    response = real_post(url + "/json-rpc/4/invoke", **kwargs)
    assert response.headers["Cache-Control"] == "no-store", response.headers
    answers.append(response.text)
    return response


rdo.requests.post = post
public_pem = requests.get(url + "/json-rpc/4/public-key").content
public_key = serialization.load_pem_public_key(public_pem)
assert public_key.key_size == 4096, public_key.key_size


def signed_bytes(text):
    """The `random` member of a raw answer, byte for byte: what the signature covers."""
    start = text.index('"random":') + len('"random":')
    _, end = json.JSONDecoder().raw_decode(text, start)
    return text[start:end].encode()


def check_locally(signed):
    """The last answer's signature checked with `cryptography` and with openssl."""
    message = signed_bytes(answers[-1])
    assert json.loads(message) == signed["random"], "the bytes are the random object"
    signature = base64.b64decode(signed["signature"])
    public_key.verify(signature, message, padding.PKCS1v15(), hashes.SHA512())
    with tempfile.TemporaryDirectory() as d:
        paths = {name: os.path.join(d, name) for name in ("pub.pem", "msg", "sig")}
        for name, content in (("pub.pem", public_pem), ("msg", message), ("sig", signature)):
            with open(paths[name], "wb") as f:
                f.write(content)
        run = lambda msg: subprocess.run(  # noqa: E731
            ["openssl", "dgst", "-sha512", "-verify", paths["pub.pem"], "-signature", paths["sig"], msg],
            capture_output=True, text=True)
        ok = run(paths["msg"])
        assert ok.returncode == 0 and "Verified OK" in ok.stdout, ok
        with open(paths["msg"], "ab") as f:
            f.write(b" ")
        assert run(paths["msg"]).returncode != 0, "openssl refuses changed bytes"
    return message


def raises(kind, call, code=None):
    """`call` raises `kind` (with `Error <code>` in its message when given)."""
    try:
        call()
    except kind as e:
        assert code is None or f"Error {code}:" in str(e), (code, e)
        return str(e)
    raise AssertionError(f"no {kind.__name__} (code {code})")


def chi_square(counts, expected):
    return sum((c - e) ** 2 / e for c, e in zip(counts, expected))


# Chi-square's critical values at alpha 1e-4, by degrees of freedom.
CHI2_1E4 = {5: 25.74, 9: 33.72, 15: 42.58}


def uniform_ok(values, domain):
    """Chi-square of `values` against the uniform distribution on `domain` (a list)."""
    counts = collections.Counter(values)
    assert set(counts) <= set(domain), set(counts) - set(domain)
    n = len(values)
    statistic = chi_square([counts[v] for v in domain], [n / len(domain)] * len(domain))
    return statistic < CHI2_1E4[len(domain) - 1], statistic


def normal_ok(values, mean, sd):
    """Kolmogorov-Smirnov of `values` against N(mean, sd), at alpha 1e-4."""
    xs = sorted(values)
    n = len(xs)
    cdf = lambda x: 0.5 * (1 + math.erf((x - mean) / (sd * math.sqrt(2))))  # noqa: E731
    d = max(max((i + 1) / n - cdf(x), cdf(x) - i / n) for i, x in enumerate(xs))
    critical = math.sqrt(-math.log(1e-4 / 2) / 2) / math.sqrt(n)
    return d < critical, d


client = rdo.RandomOrgClient(KEY, blocking_timeout=60.0, http_timeout=30.0)

print("--- Basic methods")
dice = client.generate_integers(5, 1, 6)
assert len(dice) == 5 and all(1 <= d <= 6 for d in dice), dice
hexes = client.generate_integers(5, 0, 255, base=16)
assert all(isinstance(h, str) and 0 <= int(h, 16) <= 255 for h in hexes), hexes
seqs = client.generate_integer_sequences(2, [5, 1], 1, [69, 26], replacement=False)
assert [len(s) for s in seqs] == [5, 1] and len(set(seqs[0])) == 5, seqs
fractions = client.generate_decimal_fractions(10, 4)
assert all(0 <= f < 1 and round(f, 4) == f for f in fractions), fractions
gaussians = client.generate_gaussians(10, 100, 15, 5)
assert len(gaussians) == 10 and all(isinstance(g, float) for g in gaussians)
strings = client.generate_strings(5, 8, "abcdefé")
assert all(len(s) == 8 and set(s) <= set("abcdefé") for s in strings), strings
uuids = client.generate_UUIDs(3)
assert all(isinstance(u, uuid.UUID) and u.version == 4 for u in uuids), uuids
blobs = client.generate_blobs(2, 64, format="hex")
assert all(len(b) == 16 and int(b, 16) >= 0 for b in blobs), blobs
blobs = client.generate_blobs(1, 128)
assert len(base64.b64decode(blobs[0])) == 16
print(f"getUsage: {client.get_requests_left()} requests and {client.get_bits_left()} bits left")

print("--- Signed methods, each checked by the server and locally")
user_data = {"draw": "weekly lottery", "week": 49}
lotto = client.generate_signed_integers(6, 1, 49, replacement=False, user_data=user_data)
assert lotto["random"]["userData"] == user_data and len(set(lotto["data"])) == 6, lotto
message = check_locally(lotto)
assert json.dumps(lotto["random"], separators=(",", ":"), ensure_ascii=False).encode() == message, \
    "an integer draw re-encodes to the signed bytes"
assert client.verify_signature(lotto["random"], lotto["signature"]) is True
changed = json.loads(json.dumps(lotto["random"]))
changed["data"][0] = changed["data"][0] % 49 + 1
assert client.verify_signature(changed, lotto["signature"]) is False
signed_calls = [
    lambda: client.generate_signed_integer_sequences(3, 4, 0, 9),
    lambda: client.generate_signed_decimal_fractions(5, 6),
    lambda: client.generate_signed_gaussians(5, 0, 1, 6),
    lambda: client.generate_signed_strings(4, 10, "0123456789abcdef"),
    lambda: client.generate_signed_UUIDs(2),
    lambda: client.generate_signed_blobs(2, 256),
]
for make in signed_calls:
    signed = make()
    check_locally(signed)
    assert client.verify_signature(signed["random"], signed["signature"]) is True, signed["random"]["method"]
    print(f"{signed['random']['method']}: serial {signed['random']['serialNumber']}, verified three ways")

kept = client.get_result(lotto["random"]["serialNumber"])
assert kept["random"] == lotto["random"] and kept["signature"] == lotto["signature"], kept
print(f"getResult({lotto['random']['serialNumber']}): the kept answer")

print("--- Tickets")
ticket = client.create_tickets(1, False)[0]["ticketId"]
first = client.generate_signed_integers(3, 1, 100, ticket_id=ticket)
assert first["random"]["ticketData"]["ticketId"] == ticket, first["random"]
check_locally(first)
raises(rdo.RandomOrgTicketAlreadyUsedError, lambda: client.generate_signed_integers(3, 1, 100, ticket_id=ticket), 422)
shown = client.get_ticket(ticket)
assert shown["usedTime"] and "result" not in shown, shown
raises(rdo.RandomOrgTicketNonExistentError, lambda: client.get_ticket("ffffffffffffffff"), 420)
follow = shown["nextTicketId"]
second = client.generate_signed_integers(3, 1, 100, ticket_id=follow)
assert second["random"]["ticketData"]["previousTicketId"] == ticket
revealed = client.reveal_tickets(follow)
assert revealed == {"ticketCount": 2}, revealed
shown = client.get_ticket(ticket)
assert shown["showResult"] is True and shown["result"]["random"] == first["random"], shown
unused = client.create_tickets(1, True)[0]["ticketId"]
raises(rdo.RandomOrgTicketNotYetUsedError, lambda: client.reveal_tickets(unused), 426)
assert client.get_ticket(unused)["result"] is None
heads = client.list_tickets("head")
assert any(t["ticketId"] == ticket for t in heads), heads
assert any(t["ticketId"] == unused for t in client.list_tickets("singleton"))
lean = rdo.RandomOrgClient(LEAN, blocking_timeout=60.0, http_timeout=30.0, serialized=False)
raises(rdo.RandomOrgTicketAPIKeyMismatchError, lambda: lean.generate_signed_UUIDs(1, ticket_id=unused), 421)
print(f"ticket {ticket}: used once, 422 again, revealed with its successor, read back")

print("--- RANDOM.ORG's errors")
stranger = rdo.RandomOrgClient("not-a-key", blocking_timeout=60.0, http_timeout=30.0)
raises(rdo.RandomOrgKeyNonExistentError, lambda: stranger.generate_integers(1, 1, 6), 400)
for code, call in [
    (202, lambda: client.generate_integers(100_000, 1, 6)),
    (300, lambda: client.generate_integers(1, 10, 0)),
    (301, lambda: client.generate_integers(20, 0, 9, replacement=False)),
    (201, lambda: client.generate_integers(1, 0, 9, base=7)),
    (203, lambda: client.generate_integer_sequences(3, [1, 2, 3, 4], 1, 6)),
    (204, lambda: client.generate_integer_sequences(4, [1], 1, 6)),
    (201, lambda: client.generate_integers(1, 0, 9, pregenerated_randomization={"date": "2020-01-01"})),
    (425, lambda: client.generate_signed_integers(1, 1, 6, license_data={"maxPayout": {"currency": "USD", "amount": 1}})),
    (303, lambda: client.get_result(12345)),
]:
    raises((ValueError, rdo.RandomOrgLicenseDataNotAllowedError), call, code)
print("a wrong key 400; 201, 202, 203, 204, 300, 301, 303, 425 as documented")

print("--- Distributions")
ints = client.generate_integers(10_000, 1, 10)
ok, stat = uniform_ok(ints, list(range(1, 11)))
assert ok, f"integers: chi-square {stat}"
assert not uniform_ok([min(v, 9) for v in ints], list(range(1, 11)))[0], "a biased sample is refused"
firsts = [s[0] for s in client.generate_integer_sequences(1000, 10, 1, 10, replacement=False)]
ok, stat2 = uniform_ok(firsts, list(range(1, 11)))
assert ok, f"sequences' first values: chi-square {stat2}"
fractions = client.generate_decimal_fractions(10_000, 2)
assert all(round(f, 2) == f for f in fractions), "two decimal places"
ok, stat3 = uniform_ok([int(f * 10) for f in fractions], list(range(10)))
assert ok, f"fractions' first digit: chi-square {stat3}"
gaussians = client.generate_gaussians(5000, 50, 5, 8)
ok, d = normal_ok(gaussians, 50, 5)
assert ok, f"Gaussians: KS D {d}"
# The control: a mean off by 0.3 deviations (D about 0.12, against 0.031 allowed at n 5000).
assert not normal_ok([g + 1.5 for g in gaussians], 50, 5)[0], "a shifted sample is refused"
assert all(float(f"{g:.7e}") == g for g in gaussians), "8 significant digits"
letters = "".join(client.generate_strings(1000, 16, "0123456789abcdef"))
ok, stat4 = uniform_ok(list(letters), list("0123456789abcdef"))
assert ok, f"strings' characters: chi-square {stat4}"
print(f"chi-square: integers {stat:.1f}, sequences {stat2:.1f}, fractions {stat3:.1f}, strings {stat4:.1f}; "
      f"Gaussians KS D {d:.4f} (n 5000); biased controls refused")

print("--- the daily allowance, last, on its own key")
for _ in range(3):
    lean.generate_integers(1, 1, 6)
today = datetime.datetime.now(datetime.timezone.utc)
last_day = today.day == calendar.monthrange(today.year, today.month)[1]
try:
    lean.generate_integers(1, 1, 6)
    raise AssertionError("a fourth request of a 3-a-day key was served")
except rdo.RandomOrgInsufficientRequestsError as e:
    assert "Error 402:" in str(e), e
    print(f"the fourth request: {e}")
except ValueError as e:
    # rdoclient 1.5.0 computes midnight as `day + 1`, which fails on a month's last day.
    assert last_day and "day is out of range" in str(e), e
    print(f"402 answered; rdoclient's own midnight arithmetic failed on a month's last day: {e}")
print(f"OK: {len(answers)} answers")
