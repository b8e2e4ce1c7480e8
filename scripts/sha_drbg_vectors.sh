#!/usr/bin/env bash
# Regenerates tests/data/sha_drbg_openssl.txt: Hash_DRBG and HMAC_DRBG known answers (every hash
# drbgd's mechanisms take, Generates from 1 byte to 64 KiB + 100) from OpenSSL 3's EVP_RAND
# "HASH-DRBG" and "HMAC-DRBG" (an implementation independent of ours), checked by tests/kat.rs.
# Needs a C compiler and OpenSSL 3 headers (Debian: libssl-dev).
# Usage: scripts/sha_drbg_vectors.sh [output file]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-tests/data/sha_drbg_openssl.txt}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -std=c99 -O2 -Wall -Wextra -Werror -o "$tmp/sha_drbg_vectors" scripts/sha_drbg_vectors.c -lcrypto
# The harness checks itself (NIST CAVP records, input use, request splitting, 0-byte requests)
# before it writes; the file is replaced only if it succeeds.
"$tmp/sha_drbg_vectors" > "$tmp/out.txt"
mv "$tmp/out.txt" "$out"
echo "wrote $out ($(grep -c '^COUNT' "$out") records)"
