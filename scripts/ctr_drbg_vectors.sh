#!/usr/bin/env bash
# Regenerates tests/data/ctr_drbg_openssl.txt: large-Generate CTR_DRBG known answers from
# OpenSSL 3's EVP_RAND "CTR-DRBG" (an implementation independent of ours), checked by
# tests/kat.rs. Needs a C compiler and OpenSSL 3 headers (Debian: libssl-dev).
# Usage: scripts/ctr_drbg_vectors.sh [output file]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-tests/data/ctr_drbg_openssl.txt}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -std=c99 -O2 -Wall -Wextra -Werror -o "$tmp/ctr_drbg_vectors" scripts/ctr_drbg_vectors.c -lcrypto
# The harness checks itself (NIST CAVP records, input use, request splitting) before it writes;
# the file is replaced only if it succeeds.
"$tmp/ctr_drbg_vectors" > "$tmp/out.txt"
mv "$tmp/out.txt" "$out"
echo "wrote $out ($(grep -c '^COUNT' "$out") records)"
