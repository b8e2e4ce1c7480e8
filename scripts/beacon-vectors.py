#!/usr/bin/env python3
"""The beacon's test vectors, computed by implementations that share no code with drbgd: py_ecc
(pure Python BLS12-381, hash-to-curve per RFC 9380) signs, PyPI drand-verify (Rust, noislabs'
drand-verify on the zkcrypto bls12_381 crate) checks every signature. The numbers in
src/beacon/tests.rs, config/examples/verifiable.toml and docs/verifiable.md come from here.

    python3 -m pip install py_ecc==8.0.0 drand-verify==0.2.1
    python3 scripts/beacon-vectors.py config/examples/beacon-example.key 3 1767225600 example 1 2 1000

usage: beacon-vectors.py KEY_FILE PERIOD_S GENESIS_TIME BEACON_ID ROUND...
  KEY_FILE: drbgd's key file (comment lines start with '#'; the first other line is the secret
  scalar, 32 bytes big-endian, in hex).

Also checks the chain-hash formula on quicknet's published values, and a published quicknet
round with drand-verify (the same vectors as the unit tests).
"""
import hashlib
import sys

import drand_verify
from py_ecc.bls.g2_primitives import G1_to_pubkey, G2_to_signature, curve_order
from py_ecc.bls.hash_to_curve import hash_to_G1
from py_ecc.optimized_bls12_381 import G2, multiply

DST = b"BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_"
QUICKNET_PK = bytes.fromhex(
    "83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d"
    "1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a"
)
QUICKNET_GROUP_HASH = bytes.fromhex("f477d5c89f21a17c863a7f937c6a6d15859414d2be09cd448d4279af331c5d3e")
QUICKNET_HASH = "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971"
# https://api3.drand.sh/52db9ba7.../public/123, as drand-verify's own tests have it.
QUICKNET_ROUND = (123, "b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482e26cd02df835d3546d23c4b13e0dfc92")


def chain_hash(period_s, genesis, public_key, group_hash, beacon_id):
    """drand's common/chain/info.go Hash(): the id only when it is not the default one."""
    h = hashlib.sha256()
    h.update(period_s.to_bytes(4, "big"))
    h.update(genesis.to_bytes(8, "big", signed=True))
    h.update(public_key)
    h.update(group_hash)
    if beacon_id not in ("", "default"):
        h.update(beacon_id.encode())
    return h.hexdigest()


def read_key(path):
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if line and not line.startswith("#"):
            sk = int(line, 16)
            assert 0 < sk < curve_order and len(line) == 64, "not a BLS12-381 secret scalar"
            return sk
    raise SystemExit(f"{path}: no key line")


def main():
    if len(sys.argv) < 6:
        raise SystemExit(__doc__)
    assert chain_hash(3, 1692803367, QUICKNET_PK, QUICKNET_GROUP_HASH, "quicknet") == QUICKNET_HASH
    rnd, sig = QUICKNET_ROUND
    assert drand_verify.verify_bls_unchained_g1_rfc9380(rnd, sig, QUICKNET_PK.hex()) == hashlib.sha256(
        bytes.fromhex(sig)
    ).hexdigest()
    print(f"quicknet: chain hash and round {rnd} check")

    sk = read_key(sys.argv[1])
    period, genesis, beacon_id = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    pk = G2_to_signature(multiply(G2, sk))
    group_hash = hashlib.sha256(pk).digest()  # drbgd's convention (docs/verifiable.md)
    print(f"public_key  {pk.hex()}")
    print(f"groupHash   {group_hash.hex()}")
    print(f"hash        {chain_hash(period, genesis, pk, group_hash, beacon_id)}")
    for arg in sys.argv[5:]:
        r = int(arg)
        message = hashlib.sha256(r.to_bytes(8, "big")).digest()
        signature = G1_to_pubkey(multiply(hash_to_G1(message, DST, hashlib.sha256), sk))
        randomness = hashlib.sha256(signature).hexdigest()
        assert drand_verify.verify_bls_unchained_g1_rfc9380(r, signature.hex(), pk.hex()) == randomness
        print(f"round {r}: signature {signature.hex()} randomness {randomness}")


if __name__ == "__main__":
    main()
