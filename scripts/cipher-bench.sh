#!/usr/bin/env bash
# Are the generators at the cipher's limit? One core each (taskset -c 0), the same run,
# alternating: `drbgd generate` of BYTES (default 1 GiB) per algorithm against OpenSSL's own
# speed for the same cipher (`openssl speed -elapsed -evp ... -bytes 16384`) and, for BLAKE3,
# against a raw BLAKE3 XOF reader (examples/raw_keystream.rs). Prints the CPU's class (AVX-512
# or not, VAES or not) with the ratios; median of ROUNDS (default 3).
#
# WITHOUT_AVX512=1 measures, on an AVX-512 host, the paths a CPU without AVX-512 takes: drbgd
# with `generate --without-avx512` (VAES-256 CTR_DRBG, or AES-NI where the CPU lacks VAES;
# eight-block AVX2 ChaCha20) against OpenSSL with AVX512F and AVX512VL masked
# (OPENSSL_ia32cap, see its man page), so both run their AVX2 code. BLAKE3's reference keeps its AVX-512 path either way.
#
# Usage: [WITHOUT_AVX512=1] scripts/cipher-bench.sh [rounds=3] [bytes=1073741824]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
bytes=${2:-1073741824}
drbgd=${DRBGD:-target/release/drbgd}
raw=target/release/examples/raw_keystream
[ -x "$drbgd" ] || cargo build --release --locked --bin drbgd
[ -x "$raw" ] || cargo build --release --locked --example raw_keystream
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { [[ " $flags " == *" $1 "* ]] && echo yes || echo no; }
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') (family $(grep -m1 'cpu family' /proc/cpuinfo | awk '{print $4}'))"
echo "class: avx512f=$(has avx512f) vaes=$(has vaes) avx2=$(has avx2) aes=$(has aes)"
extra=()
if [ "${WITHOUT_AVX512:-0}" = 1 ]; then
  extra=(--without-avx512)
  # Bit 64+16 is AVX512F, 64+31 AVX512VL (OPENSSL_ia32cap(3)).
  export OPENSSL_ia32cap=":~0x80010000"
  echo "paths: as without AVX-512 (drbgd --without-avx512; OPENSSL_ia32cap=$OPENSSL_ia32cap)"
fi

# GB/s of a command writing $bytes to stdout.
rate() {
  local start end
  start=$(date +%s.%N)
  taskset -c 0 "$@" >/dev/null
  end=$(date +%s.%N)
  awk -v b="$bytes" -v s="$start" -v e="$end" 'BEGIN {printf "%.3f", b / (e - s) / 1e9}'
}
# GB/s of `openssl speed` for an EVP cipher at 16 KiB blocks.
openssl_rate() {
  taskset -c 0 openssl speed -elapsed -seconds 2 -bytes 16384 -evp "$1" 2>/dev/null |
    awk -v c="$1" 'tolower($1) == tolower(c) {v = $NF; sub(/k$/, "", v); printf "%.3f", v * 1000 / 1e9}'
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

declare -A ours theirs
for r in $(seq "$rounds"); do
  for pair in "aes256ctr:aes-256-ctr" "aes128ctr:aes-128-ctr" "chacha20:chacha20" "blake3:raw"; do
    alg=${pair%%:*} ref=${pair#*:}
    ref_rate() { if [ "$ref" = raw ]; then rate "$raw" blake3 "$bytes"; else openssl_rate "$ref"; fi; }
    if ((r % 2)); then
      a=$(rate "$drbgd" generate "${extra[@]}" --alg "$alg" --bytes "$bytes"); b=$(ref_rate)
    else
      b=$(ref_rate); a=$(rate "$drbgd" generate "${extra[@]}" --alg "$alg" --bytes "$bytes")
    fi
    ours[$alg]="${ours[$alg]:-} $a" theirs[$alg]="${theirs[$alg]:-} $b"
  done
done
printf '%-10s %12s %14s %8s %s\n' alg "drbgd GB/s" "reference GB/s" ratio reference
for pair in "aes256ctr:openssl aes-256-ctr:1.0" "aes128ctr:openssl aes-128-ctr:1.0" "chacha20:openssl chacha20:0.9" "blake3:raw BLAKE3 XOF:0.95"; do
  IFS=: read -r alg ref target <<<"$pair"
  # shellcheck disable=SC2086
  a=$(median ${ours[$alg]}) b=$(median ${theirs[$alg]})
  ratio=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", a / b}')
  printf '%-10s %12s %14s %8s %s (target >= %s)\n' "$alg" "$a" "$b" "${ratio}x" "$ref" "$target"
done
