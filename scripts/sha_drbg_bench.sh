#!/usr/bin/env bash
# Hash_DRBG and HMAC_DRBG against OpenSSL 3's same mechanisms: one core each (taskset -c 0), the
# same run, alternating, `drbgd generate --alg A --bytes BYTES` (default 256 MiB) against
# scripts/sha_drbg_bench.c writing the same amount in Generates of 64 KiB (OpenSSL's
# max_request, SP 800-90A's 2^19 bits). Prints the CPU's class (SHA extensions, AVX2) with the
# ratios; median of ROUNDS (default 3). Needs a C compiler and OpenSSL 3 headers (libssl-dev).
#
# Usage: scripts/sha_drbg_bench.sh [rounds=3] [bytes=268435456]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
bytes=${2:-268435456}
drbgd=${DRBGD:-target/release/drbgd}
[ -x "$drbgd" ] || cargo build --release --locked --bin drbgd
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -std=c99 -O2 -Wall -Wextra -Werror -o "$tmp/ref" scripts/sha_drbg_bench.c -lcrypto
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { [[ " $flags " == *" $1 "* ]] && echo yes || echo no; }
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') (family $(grep -m1 'cpu family' /proc/cpuinfo | awk '{print $4}'), model $(grep -m1 '^model[[:space:]]' /proc/cpuinfo | awk '{print $3}'))"
echo "class: sha_ni=$(has sha_ni) avx2=$(has avx2) avx512f=$(has avx512f); $(openssl version)"

# GB/s of a command writing $bytes to stdout.
rate() {
  local start end
  start=$(date +%s.%N)
  taskset -c 0 "$@" >/dev/null
  end=$(date +%s.%N)
  awk -v b="$bytes" -v s="$start" -v e="$end" 'BEGIN {printf "%.3f", b / (e - s) / 1e9}'
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

pairs=("hash_sha256:HASH-DRBG:SHA2-256" "hash_sha512:HASH-DRBG:SHA2-512" "hmac_sha256:HMAC-DRBG:SHA2-256" "hmac_sha512:HMAC-DRBG:SHA2-512")
declare -A ours theirs
for r in $(seq "$rounds"); do
  for pair in "${pairs[@]}"; do
    IFS=: read -r alg mech digest <<<"$pair"
    if ((r % 2)); then
      a=$(rate "$drbgd" generate --alg "$alg" --bytes "$bytes"); b=$(rate "$tmp/ref" "$mech" "$digest" "$bytes")
    else
      b=$(rate "$tmp/ref" "$mech" "$digest" "$bytes"); a=$(rate "$drbgd" generate --alg "$alg" --bytes "$bytes")
    fi
    ours[$alg]="${ours[$alg]:-} $a" theirs[$alg]="${theirs[$alg]:-} $b"
  done
done
printf '%-12s %11s %13s %7s\n' alg "drbgd GB/s" "OpenSSL GB/s" ratio
for pair in "${pairs[@]}"; do
  IFS=: read -r alg mech digest <<<"$pair"
  # shellcheck disable=SC2086
  a=$(median ${ours[$alg]}) b=$(median ${theirs[$alg]})
  printf '%-12s %11s %13s %6.2fx  (%s %s)\n' "$alg" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {print a / b}')" "$mech" "$digest"
done
