#!/usr/bin/env python3
"""The KMS drop-in's door, attacked as an attacker would, with boto3 as the caller under attack,
against a drbgd serving config/examples/drop-in.toml at URL:

1. Slow signed heads: CONNS connections (default 70) send a head that passes every check made
   before the body (a real access key id, today's scope, X-Amz-Date) with `Content-Length: 8000`
   and one byte of body, and are opened again every 1.9 s (just inside the 2 s body deadline),
   for SECONDS (default 20). Meanwhile a correctly signed boto3 client calls GenerateRandom
   CALLS times (default 10), evenly spread: every call must be served.
2. A session token (temporary credentials, which drbgd does not issue): boto3 with
   aws_session_token must get UnrecognizedClientException.
3. Two Authorization headers (a good one, then garbage): refused.

usage: scripts/kms-attacks.py URL [SECONDS] [CONNS] [CALLS]   -> exit 1 on the first surprise
"""
import socket
import sys
import threading
import time
import urllib.parse

import boto3
import botocore.exceptions
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

KEY_ID, SECRET = "AKIAEXAMPLEDRBGD0001", "drbgd-example-secret-key-0001"
url = sys.argv[1]
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
conns = int(sys.argv[3]) if len(sys.argv) > 3 else 70
calls = int(sys.argv[4]) if len(sys.argv) > 4 else 10
host = urllib.parse.urlsplit(url).netloc
addr = (urllib.parse.urlsplit(url).hostname, urllib.parse.urlsplit(url).port)


def fail(what):
    sys.exit(f"FAILED: {what}")


def kms(**extra):
    return boto3.client("kms", endpoint_url=url, region_name="us-east-1", aws_access_key_id=KEY_ID,
                        aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}), **extra)


def slow_heads(stop):
    amz = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    head = (f"POST / HTTP/1.1\r\nHost: {host}\r\nX-Amz-Date: {amz}\r\n"
            "X-Amz-Target: TrentService.GenerateRandom\r\nContent-Type: application/x-amz-json-1.1\r\n"
            "Content-Length: 8000\r\n"
            f"Authorization: AWS4-HMAC-SHA256 Credential={KEY_ID}/{amz[:8]}/us-east-1/kms/aws4_request, "
            "SignedHeaders=host;x-amz-date, Signature=00\r\n\r\n{").encode()
    while not stop.is_set():
        held = []
        for _ in range(conns):
            try:
                s = socket.create_connection(addr, timeout=2)
                s.sendall(head)
                held.append(s)
            except OSError:
                pass
        stop.wait(1.9)
        for s in held:
            s.close()


stop = threading.Event()
attacker = threading.Thread(target=slow_heads, args=(stop,), daemon=True)
attacker.start()
time.sleep(0.5)
client, served, outcomes = kms(), 0, []
start = time.monotonic()
for i in range(calls):
    time.sleep(max(0.0, start + i * seconds / calls - time.monotonic()))
    try:
        r = client.generate_random(NumberOfBytes=32)
        served += len(r["Plaintext"]) == 32
        outcomes.append("200")
    except botocore.exceptions.ClientError as e:
        outcomes.append(e.response["Error"]["Code"])
stop.set()
attacker.join()
print(f"slow signed heads ({conns} connections re-opened every 1.9 s, {seconds:.0f} s): "
      f"boto3 served {served} of {calls}: {outcomes}")
if served != calls:
    fail("a correctly signed caller was refused under the slow-heads attack")

try:
    kms(aws_session_token="FwoGZXIvYXdzEBogus").generate_random(NumberOfBytes=32)
    fail("a session token was accepted")
except botocore.exceptions.ClientError as e:
    code = e.response["Error"]["Code"]
    print(f"boto3 with a session token: {code}")
    if code != "UnrecognizedClientException":
        fail(f"a session token got {code}")

request = AWSRequest(method="POST", url=url + "/", data=b'{"NumberOfBytes": 32}',
                     headers={"X-Amz-Target": "TrentService.GenerateRandom",
                              "Content-Type": "application/x-amz-json-1.1"})
SigV4Auth(Credentials(KEY_ID, SECRET), "kms", "us-east-1").add_auth(request)
raw = "".join(f"{k}: {v}\r\n" for k, v in request.headers.items())
raw += "Authorization: garbage\r\n"
with socket.create_connection(addr) as s:
    s.sendall(f"POST / HTTP/1.1\r\nHost: {host}\r\n{raw}Content-Length: 21\r\nConnection: close\r\n\r\n".encode()
              + b'{"NumberOfBytes": 32}')
    reply = b""
    while chunk := s.recv(65536):
        reply += chunk
status = reply.split(b"\r\n", 1)[0].decode()
print(f"two Authorization headers (good, then garbage): {status}")
if " 200 " in status:
    fail("a repeated Authorization header was served")
print("KMS attacks: OK")
