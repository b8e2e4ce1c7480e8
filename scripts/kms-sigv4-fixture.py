#!/usr/bin/env python3
"""Writes tests/data/kms_botocore_signed.json: GenerateRandom requests exactly as boto3 signs and
sends them (captured before sending, at a fixed time), for the SigV4 verifier's cross-check
against botocore's own signer (tests/api/kms.rs). Run again only to refresh the fixture:

    python3 scripts/kms-sigv4-fixture.py > tests/data/kms_botocore_signed.json
"""
import datetime
import json
import sys
from unittest import mock

import boto3
import botocore
from botocore.config import Config

AT = datetime.datetime(2026, 11, 26, 6, 15, 0)
captured = []


def capture(request, **_):
    headers = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in request.headers.items()}
    url = botocore.compat.urlsplit(request.url)
    headers.setdefault("Host", url.netloc)  # urllib3 adds it when sending
    body = request.body.decode() if isinstance(request.body, bytes) else (request.body or "")
    captured.append({"method": request.method, "path": url.path or "/", "query": url.query,
                     "headers": headers, "body": body})
    # A canned answer: nothing is sent.
    return botocore.awsrequest.AWSResponse(request.url, 200, {}, mock.Mock(content=b'{"Plaintext":"AAAA"}',
                                                                           stream=lambda: iter([])))


def client(endpoint, region):
    kms = boto3.client("kms", endpoint_url=endpoint, region_name=region,
                       aws_access_key_id="AKIAEXAMPLEDRBGD0001",
                       aws_secret_access_key="drbgd-example-secret-key-0001",
                       config=Config(retries={"max_attempts": 1}))
    kms.meta.events.register("before-send", capture)
    return kms


with mock.patch("botocore.auth.get_current_datetime", return_value=AT):
    client("http://127.0.0.1:8080", "us-east-1").generate_random(NumberOfBytes=32)
    client("http://drbgd.internal:8080", "eu-west-3").generate_random(NumberOfBytes=1024)
    client("https://kms.example", "us-east-1").generate_random(NumberOfBytes=1)

json.dump({"botocore": botocore.__version__, "now": AT.strftime("%Y%m%dT%H%M%SZ"),
           "secret": "drbgd-example-secret-key-0001", "requests": captured}, sys.stdout, indent=1)
print()
