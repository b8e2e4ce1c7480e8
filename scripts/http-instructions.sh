#!/usr/bin/env bash
# Instructions per request: the user-space cost of one request through drbgd's stack against the
# bare axum route, counted by valgrind (callgrind), so the figure does not move with the other
# tenants of a shared machine the way requests/s does (the request-path budget; see
# benches/README.md).
#
# Each server runs under callgrind on its own; a keep-alive client sends N1, then (in a second
# run) N2 sequential requests, and the difference of the two totals divided by N2 - N1 is the
# cost of one request (start-up and shutdown cancel out). Kernel time (the socket's syscalls) is
# not counted: it is about the same for both servers, one read and one write per request.
#
# Usage: scripts/http-instructions.sh [N1=1000] [N2=4000] [path...]
#        (default paths: /token /bits?n=256 /uuid /int?min=1&max=6 /nope)
# Env:   DRBGD=path (default target/release/drbgd), BARE=path (the bare_axum example).
# Needs: valgrind (Debian), python3.
set -euo pipefail
cd "$(dirname "$0")/.."
n1=${1:-1000}
n2=${2:-4000}
shift $(($# < 2 ? $# : 2))
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(/token "/bits?n=256" /uuid "/int?min=1&max=6" /nope)
drbgd=${DRBGD:-target/release/drbgd}
bare=${BARE:-target/release/examples/bare_axum}
[ -x "$drbgd" ] || cargo build --release --locked --bin drbgd
[ -x "$bare" ] || cargo build --release --locked --example bare_axum
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
port=28390

client() { # path n: n sequential GETs on one keep-alive connection
  python3 - "$port" "$1" "$2" <<'PY'
import http.client, sys
port, path, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = http.client.HTTPConnection("127.0.0.1", port)
for _ in range(n):
    c.request("GET", path)
    r = c.getresponse()
    r.read()
PY
}

total() { # server path n -> instructions of the whole run
  local server=$1 path=$2 n=$3 out="$work/cg.$3"
  rm -f "$out"*
  if [ "$server" = bare ]; then
    valgrind --tool=callgrind --callgrind-out-file="$out" "$bare" "127.0.0.1:$port" >/dev/null 2>"$work/vg.err" &
  else
    valgrind --tool=callgrind --callgrind-out-file="$out" "$drbgd" serve --listen "127.0.0.1:$port" \
      --admin-listen "127.0.0.1:$((port + 1))" --shards 1 >/dev/null 2>"$work/vg.err" &
  fi
  local pid=$!
  for _ in $(seq 300); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/x")" != 000 ] && break
    sleep 0.2
  done
  client "$path" "$n"
  callgrind_control -d "$pid" >/dev/null 2>&1 # the bare server has no graceful exit: dump, then kill
  sleep 0.5
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  cat "$out"* | awk '/^summary:/ {s += $2} END {printf "%.0f\n", s}'
}

per_request() { # server path
  local a b
  a=$(total "$1" "$2" "$n1")
  b=$(total "$1" "$2" "$n2")
  echo $(((b - a) / (n2 - n1)))
}

base=$(per_request bare /const32)
echo "| route | instructions per request | ratio to the bare route |"
echo "|---|---|---|"
echo "| bare 32 B | $base | 1.00× |"
for path in "${paths[@]}"; do
  n=$(per_request drbgd "$path")
  python3 -c "print(f'| {\"$path\"} | {$n} | {$n / $base:.2f}× |')"
done
