#!/usr/bin/env bash
# Two builds of drbgd, generator against generator: `drbgd generate` of BYTES (default 1 GiB)
# per algorithm, one core (taskset -c 0), A and B alternating within each round (A first in odd
# rounds, B first in even ones); prints each one's median GB/s over ROUNDS (default 5) and the
# ratio B/A. For build settings (the release profile's LTO and codegen units, a compiler
# upgrade) where cipher-bench.sh's OpenSSL reference would only add noise.
#
# Usage: scripts/binary-compare.sh A B [rounds=5] [bytes=1073741824] [algs="aes256ctr ..."]
set -euo pipefail
a=$1 b=$2
rounds=${3:-5}
bytes=${4:-1073741824}
algs=${5:-"aes256ctr aes128ctr chacha20 blake3 randen hash_sha256 hmac_sha256"}
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
rate() {
  local start end
  start=$(date +%s.%N)
  taskset -c 0 "$1" generate --alg "$2" --bytes "$bytes" >/dev/null
  end=$(date +%s.%N)
  awk -v n="$bytes" -v s="$start" -v e="$end" 'BEGIN {printf "%.3f", n / (e - s) / 1e9}'
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
declare -A ra rb
for r in $(seq "$rounds"); do
  for alg in $algs; do
    if ((r % 2)); then
      x=$(rate "$a" "$alg"); y=$(rate "$b" "$alg")
    else
      y=$(rate "$b" "$alg"); x=$(rate "$a" "$alg")
    fi
    ra[$alg]="${ra[$alg]:-} $x" rb[$alg]="${rb[$alg]:-} $y"
  done
done
printf '%-12s %10s %10s %8s\n' alg "A GB/s" "B GB/s" "B/A"
for alg in $algs; do
  # shellcheck disable=SC2086
  x=$(median ${ra[$alg]}) y=$(median ${rb[$alg]})
  printf '%-12s %10s %10s %8s\n' "$alg" "$x" "$y" "$(awk -v x="$x" -v y="$y" 'BEGIN {printf "%.3f", y / x}')"
done
