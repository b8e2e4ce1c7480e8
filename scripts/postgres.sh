#!/usr/bin/env bash
# A throwaway PostgreSQL (Debian's `postgresql` package) for the tickets' checks: a cluster in
# DIR, run as the `postgres` user (the server refuses root), listening on 127.0.0.1:PORT only,
# with a role `drbgd` (password in DIR/password, scram-sha-256; it may create databases, as the
# API tests do, one per test) owning a database `drbgd`.
#
# Usage: scripts/postgres.sh start DIR PORT   (prints the results.url to use)
#        scripts/postgres.sh stop DIR         (fast shutdown)
#        scripts/postgres.sh kill DIR         (SIGKILL of the postmaster: a crash)
#        scripts/postgres.sh restart DIR      (after stop or kill)
set -euo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/pg_ctl" ] || { echo "no PostgreSQL server (apt-get install postgresql)"; exit 1; }
cmd=$1 dir=$2
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case $cmd in
start)
  port=$3
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$dir/password.tmp"
  [ "$(id -u)" = 0 ] && chown postgres "$dir/password.tmp"
  as_pg "$bin/initdb" -D "$dir/data" -U postgres -A scram-sha-256 --pwfile="$dir/password.tmp" >"$dir/initdb.log" 2>&1
  cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 200
fsync = on
synchronous_commit = on
CONF
  as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null
  PGPASSWORD=$(cat "$dir/password.tmp") as_pg "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -q -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE drbgd LOGIN CREATEDB PASSWORD '$(cat "$dir/password.tmp")'" -c "CREATE DATABASE drbgd OWNER drbgd" postgres
  chmod 600 "$dir/password.tmp"; mv "$dir/password.tmp" "$dir/password"
  echo "$port" >"$dir/port"
  echo "postgresql://drbgd@127.0.0.1:$port/drbgd"
  ;;
stop) as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null ;;
kill) kill -KILL "$(head -1 "$dir/data/postmaster.pid")" ;;
restart)
  # After a SIGKILL the backends see their postmaster gone and exit (the start waits for them);
  # its pid and socket lock files stay behind, and are removed.
  for _ in $(seq 50); do pgrep -u postgres >/dev/null || break; sleep 0.1; done
  rm -f "$dir/data/postmaster.pid" "$dir"/.s.PGSQL.*.lock
  as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null
  ;;
*) echo "usage: $0 start DIR PORT | stop DIR | kill DIR | restart DIR"; exit 2 ;;
esac
