#!/usr/bin/env bash
# A/B: requests/s of one route on two drbgd binaries (a change and the same code with a piece
# reverted, say), in one run. Each round serves A then B (B then A every other round), each
# pinned to core 0 with one shard and the default config (access log at info, to a file), and
# measures it with wrk -t1 -c32 pinned to core 1; a round's ratio is B's requests/s over A's
# from the same round, and the result is the median of the rounds' ratios (min-max beside it).
#
# Usage: scripts/ab-bench.sh A B [rounds=7] [seconds=3] [path=/token]
# Needs: wrk (Debian), taskset.
set -euo pipefail
a=$1 b=$2 rounds=${3:-7} secs=${4:-3} path=${5:-/token}
api=127.0.0.1:28180 admin=127.0.0.1:28181
out=$(mktemp -d)
trap 'pkill -f "admin-listen $admin" 2>/dev/null || true; rm -rf "$out"' EXIT

rps() {
  taskset -c 0 "$1" serve --listen "$api" --admin-listen "$admin" --shards 1 >"$out/log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do curl -fsS "http://$admin/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
  taskset -c 1 wrk -t1 -c32 -d1s "http://$api$path" >/dev/null # warm-up
  taskset -c 1 wrk -t1 -c32 -d"${secs}s" "http://$api$path" | awk '/^Requests\/sec/ {print $2}'
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

ratios=()
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then ra=$(rps "$a"); rb=$(rps "$b"); else rb=$(rps "$b"); ra=$(rps "$a"); fi
  ratio=$(python3 -c "print(f'{$rb / $ra:.3f}')")
  ratios+=("$ratio")
  echo "round $r: A $ra  B $rb  B/A $ratio"
done
python3 - "${ratios[@]}" <<'PY'
import statistics, sys
r = sorted(float(x) for x in sys.argv[1:])
print(f"B/A median {statistics.median(r):.3f} (min {r[0]:.3f}, max {r[-1]:.3f}, {len(r)} rounds)")
PY
