#!/usr/bin/env bash
# Stream memory under many concurrent streams: h2load opens CONNS HTTP/2 connections (default
# 1000) with one 10^7-bit binary /bits stream each (1.25 MB, h2load advertising a 1 GiB window),
# against the release binary with its default configuration; prints the server's peak RSS
# (VmHWM) during the run, then its RSS each 5 s until two samples in a row are under
# SETTLE_MIB (default 32), for a minute at most. Exits 1 when the peak is over LIMIT_MIB
# (default 128) or the RSS is not back under SETTLE_MIB to stay within a minute of the run.
#
# Usage: scripts/stream-memory.sh [conns=1000]
# Env:   DRBGD=path (default target/release/drbgd), LIMIT_MIB, SETTLE_MIB, EXTRA (more flags
#        for `drbgd serve`, e.g. "--config FILE").
set -euo pipefail
cd "$(dirname "$0")/.."
conns=${1:-1000}
drbgd=${DRBGD:-target/release/drbgd}
limit=${LIMIT_MIB:-128}
settle=${SETTLE_MIB:-32}
api=127.0.0.1:28180 admin=127.0.0.1:28181
[ -x "$drbgd" ] || { echo "no $drbgd: cargo build --release first"; exit 2; }
command -v h2load >/dev/null || { echo "h2load: apt-get install nghttp2-client"; exit 2; }
ulimit -n 65536 2>/dev/null || true
# shellcheck disable=SC2086 # EXTRA is a list of flags
"$drbgd" serve --listen "$api" --admin-listen "$admin" ${EXTRA:-} 2>/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -fsS "http://$admin/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
kib() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$pid/status"; }
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); before: RSS $(($(kib VmRSS) / 1024)) MiB"
h2load -n "$conns" -c "$conns" -m 1 "http://$api/bits?n=10000000&format=binary" | grep -E '^(finished|requests|status codes|traffic):'
peak=$(($(kib VmHWM) / 1024))
echo "peak RSS during the run: $peak MiB (limit $limit)"
rss=0 under=0
for t in 5 10 15 20 25 30 35 40 45 50 55 60; do
  sleep 5
  rss=$(($(kib VmRSS) / 1024))
  echo "RSS ${t} s after: $rss MiB"
  if [ "$rss" -le "$settle" ]; then under=$((under + 1)); else under=0; fi
  [ "$under" -lt 2 ] || break
done
[ "$peak" -le "$limit" ] || { echo "FAILED: peak $peak MiB > $limit MiB"; exit 1; }
[ "$under" -ge 2 ] || { echo "FAILED: RSS a minute later $rss MiB, not under $settle MiB twice in a row"; exit 1; }
echo "stream memory: OK"
