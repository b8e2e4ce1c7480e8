#!/usr/bin/env bash
# A throwaway PostgreSQL (Debian's `postgresql` package) for the tickets' checks: a cluster in
# DIR, run as the `postgres` user (the server refuses root), listening on 127.0.0.1:PORT (and on
# ADDR:PORT for clients in the network CLIENTS, over TLS only, when given: a pod on podman's
# bridge), TLS on (a throwaway CA in DIR/ca.crt signs the server's certificate, for 127.0.0.1,
# localhost and ADDR),
# with a role `drbgd` (password in DIR/password, scram-sha-256; the superuser's, another, in
# DIR/superuser.password; it may create databases, as the
# API tests do, one per test) owning a database `drbgd`.
#
# Usage: scripts/postgres.sh start DIR PORT [ADDR CLIENTS]   (prints the results.url to use)
#        scripts/postgres.sh stop DIR         (fast shutdown)
#        scripts/postgres.sh kill DIR         (SIGKILL of the postmaster and every backend: a crash)
#        scripts/postgres.sh restart DIR      (after stop or kill)
set -euo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/pg_ctl" ] || { echo "no PostgreSQL server (apt-get install postgresql)"; exit 1; }
cmd=$1 dir=$(realpath -m "$2")
# The server's user may not enter the caller's working directory (a private temporary one).
cd /
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case $cmd in
start)
  port=$3 addr=${4:-} clients=${5:-}
  [ -z "$addr" ] || [ -n "$clients" ] || { echo "postgres.sh: ADDR needs CLIENTS (a CIDR)"; exit 2; }
  listen=127.0.0.1 san=IP:127.0.0.1,DNS:localhost
  [ -z "$addr" ] || { listen="127.0.0.1,$addr"; san="$san,IP:$addr"; }
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  # Two passwords: the superuser's (DIR/superuser.password, never handed out) and drbgd's
  # (DIR/password, which the checks give to drbgd, a pod's Secret among them).
  head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$dir/password.tmp"
  head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$dir/superuser.password"
  chmod 600 "$dir/password.tmp" "$dir/superuser.password"
  [ "$(id -u)" = 0 ] && chown postgres "$dir/password.tmp" "$dir/superuser.password"
  as_pg "$bin/initdb" -D "$dir/data" -U postgres -A scram-sha-256 --pwfile="$dir/superuser.password" >"$dir/initdb.log" 2>&1
  # TLS: a CA of this cluster's own (its key thrown away) and the server's certificate.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=drbgd-test-postgres-ca \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
    -keyout "$dir/data/server.key" -out "$dir/server.csr" 2>/dev/null
  printf '%s\n' basicConstraints=critical,CA:FALSE keyUsage=critical,digitalSignature extendedKeyUsage=serverAuth \
    subjectAltName=$san >"$dir/server.ext"
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial -days 2 \
    -extfile "$dir/server.ext" -out "$dir/data/server.crt" 2>/dev/null
  rm -f "$dir/ca.key" "$dir/ca.srl" "$dir/server.csr" "$dir/server.ext"
  chmod 600 "$dir/data/server.key"
  [ "$(id -u)" = 0 ] && chown postgres "$dir/data/server.key" "$dir/data/server.crt"
  cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '$listen'
port = $port
unix_socket_directories = '$dir'
max_connections = 200
fsync = on
synchronous_commit = on
ssl = on
ssl_cert_file = 'server.crt'
ssl_key_file = 'server.key'
CONF
  # initdb's pg_hba.conf admits loopback only; CLIENTS may log in as drbgd, over TLS only.
  [ -z "$clients" ] || printf 'hostssl drbgd drbgd %s scram-sha-256\n' "$clients" >>"$dir/data/pg_hba.conf"
  as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null
  # The statements on standard input: the password stays off command lines.
  printf "CREATE ROLE drbgd LOGIN CREATEDB PASSWORD '%s';\nCREATE DATABASE drbgd OWNER drbgd;\n" "$(cat "$dir/password.tmp")" |
    PGPASSWORD=$(cat "$dir/superuser.password") as_pg "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -q -v ON_ERROR_STOP=1 postgres
  mv "$dir/password.tmp" "$dir/password"
  echo "$port" >"$dir/port"
  echo "postgresql://drbgd@127.0.0.1:$port/drbgd"
  ;;
stop) as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null ;;
kill)
  # The postmaster and its backends at once (a machine's crash, as far as the clients see): a
  # backend left alive would still finish and acknowledge the commit it was in.
  pid=$(head -1 "$dir/data/postmaster.pid")
  pgrep -P "$pid" >"$dir/killed" || true
  echo "$pid" >>"$dir/killed"
  kill -KILL $(cat "$dir/killed") 2>/dev/null || true
  ;;
restart)
  # After `kill`, the processes killed are gone (or zombies nobody reaps, in a container
  # without an init, which PostgreSQL would take for a live postmaster): then the pid and socket
  # lock files they left are removed.
  if [ -e "$dir/killed" ]; then
    for _ in $(seq 100); do
      alive=0
      for p in $(cat "$dir/killed"); do
        state=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null || true)
        [ -z "$state" ] || [ "$state" = Z ] || alive=1
      done
      [ "$alive" = 0 ] && break
      sleep 0.1
    done
    [ "$alive" = 0 ] || { echo "postgres.sh: the killed processes did not end"; exit 1; }
    rm -f "$dir/killed" "$dir/data/postmaster.pid" "$dir"/.s.PGSQL.*.lock
  fi
  as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null
  ;;
*) echo "usage: $0 start DIR PORT [ADDR CLIENTS] | stop DIR | kill DIR | restart DIR"; exit 2 ;;
esac
