#!/usr/bin/env python3
"""PyPI drand-verify 0.2.1 (noislabs' drand-verify, Rust, through PyO3) against drbgd's beacon:
`verify_bls_unchained_g1_rfc9380` accepts the rounds drand-client verified (given as JSON), the
current and the one before as the server serves them now, and refuses each as another round.

usage: beacon-check.py BASE_URL PUBLIC_KEY [ROUNDS_JSON]
  BASE_URL: the beacon's root, e.g. http://127.0.0.1:8080/beacon
  ROUNDS_JSON: a JSON list of rounds ({"round", "randomness", "signature"}), e.g. the
  `verified-rounds` line of scripts/beacon-check.js
"""
import json
import sys
import urllib.request

import drand_verify


def get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def check(round_, public_key):
    r, signature = round_["round"], round_["signature"]
    randomness = drand_verify.verify_bls_unchained_g1_rfc9380(r, signature, public_key)
    assert randomness == round_["randomness"], f"round {r}: randomness {round_['randomness']} != {randomness}"
    try:
        drand_verify.verify_bls_unchained_g1_rfc9380(r + 1, signature, public_key)
    except ValueError:
        pass
    else:
        raise AssertionError(f"round {r}'s signature verified as round {r + 1}")
    return r


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    base, public_key = sys.argv[1], sys.argv[2]
    rounds = json.loads(sys.argv[3]) if len(sys.argv) > 3 else []
    latest = get(f"{base}/public/latest")
    rounds += [latest, get(f"{base}/public/{latest['round'] - 1}")]
    checked = [check(r, public_key) for r in rounds]
    print(f"drand-verify 0.2.1: rounds {checked} verified (and refused as the next round)")


if __name__ == "__main__":
    main()
