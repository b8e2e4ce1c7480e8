#!/usr/bin/env bash
# loadtest/run.sh SCENARIO [BASE_URL]
# Runs a k6 scenario (smoke, tokens, bulk, mixed, stress, soak, spike, grpc, baseline, quotas;
# tickets needs a server with [tickets] on: scripts/ticket-bench.sh starts one and runs it)
# and writes the summary JSON and the web dashboard's HTML report under loadtest/results/.
# Installs k6 if absent (pinned, built with Go: a few minutes the first time). Without BASE_URL it
# builds and starts a local drbgd on free ports and stops it afterwards:
#   DRBGD_BIN=path     run that binary instead of building target/release/drbgd
#                      (e.g. DRBGD_BIN=target/debug/drbgd: no release build; figures differ)
#   DRBGD_CONFIG=file  start it with --config file (DRBGD_CONFIG= for the built-in defaults);
#                      default: the built-in defaults, except for the quotas scenario, which
#                      needs config/examples/callers.toml
# Extra k6 arguments go in K6_ARGS, e.g. K6_ARGS="-o experimental-prometheus-rw".
# Every run is tagged testid=<scenario>-<UTC time> (or $TESTID): all its metrics carry the tag,
# so the Grafana "k6 load tests (drbgd)" dashboard's testid variable selects one run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
scenario=${1:?usage: loadtest/run.sh SCENARIO [BASE_URL]}
base_url=${2:-}
script="$here/scenarios/$scenario.js"
[ -f "$script" ] || { echo "no scenario $scenario (see $here/scenarios)"; exit 2; }

export PATH="$PATH:$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin"
if ! command -v k6 >/dev/null; then
  echo "installing k6 v1.8.1 (go install; a few minutes)"
  go install go.k6.io/k6@v1.8.1
fi

pid=""
cleanup() { [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; }
trap cleanup EXIT
# Scenarios that need a particular server configuration when run.sh starts drbgd itself.
default_config() {
  case "$1" in
    quotas) echo "$(cd "$here/.." && pwd)/config/examples/callers.toml" ;;
  esac
}
if [ -z "$base_url" ]; then
  mkdir -p "$here/results"
  if [ -n "${DRBGD_BIN:-}" ]; then
    bin=$DRBGD_BIN
  else
    (cd "$here/.." && cargo build --release --locked --bin drbgd)
    bin="$here/../target/release/drbgd"
  fi
  [ -x "$bin" ] || { echo "no drbgd binary at $bin"; exit 2; }
  config=${DRBGD_CONFIG-$(default_config "$scenario")}
  config_args=()
  if [ -n "$config" ]; then
    [ -f "$config" ] || { echo "no config file $config"; exit 2; }
    config_args=(--config "$config")
  fi
  port=$((30000 + RANDOM % 10000))
  log="$here/results/drbgd-$$.log"
  echo "drbgd:   $bin${config:+ --config $config} (log: $log)"
  "$bin" serve ${config_args[@]+"${config_args[@]}"} --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$((port + 1))" \
    >"$log" 2>&1 &
  pid=$!
  base_url="http://127.0.0.1:$port"
  export ADMIN_URL="http://127.0.0.1:$((port + 1))"
  ready=""
  for _ in $(seq 100); do
    curl -fsS "$ADMIN_URL/readyz" >/dev/null 2>&1 && { ready=1; break; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$ready" ] || { echo "drbgd did not become ready; its log:"; tail -n 20 "$log"; exit 2; }
fi

mkdir -p "$here/results"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
testid=${TESTID:-$scenario-$stamp}
export BASE_URL="$base_url"
export K6_WEB_DASHBOARD=true K6_WEB_DASHBOARD_OPEN=false K6_WEB_DASHBOARD_PERIOD=1s
export K6_WEB_DASHBOARD_PORT=${K6_WEB_DASHBOARD_PORT:-$((40000 + RANDOM % 10000))}
export K6_WEB_DASHBOARD_EXPORT="$here/results/$scenario-$stamp.html"
echo "testid:  $testid"
# shellcheck disable=SC2086
k6 run --quiet --tag "testid=$testid" --summary-trend-stats "avg,min,med,max,p(90),p(95),p(99)" \
  --summary-export "$here/results/$scenario-$stamp.json" ${K6_ARGS:-} "$script"
echo "testid:  $testid"
echo "summary: $here/results/$scenario-$stamp.json"
echo "report:  $K6_WEB_DASHBOARD_EXPORT"
