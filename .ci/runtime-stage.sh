#!/usr/bin/env bash
# The runtime stage without any container engine: take the binary built as the Dockerfile
# builds it (cargo build --release --locked --bin drbgd; .ci/container.sh checks that the two
# commands are the same), assemble a root holding only what the runtime stage holds (the
# binary, its default config, and the glibc/libgcc libraries that distroless/cc provides),
# chroot into it as uid 65532 with the image's environment, and serve /bits from it.
#
# DRBGD_BIN: the binary (.ci/run passes its release build's, already built). Unset, the script
# builds target/release/drbgd itself.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${DRBGD_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --locked --bin drbgd
  bin=target/release/drbgd
fi
[ -x "$bin" ] || { echo "$bin is not an executable"; exit 1; }
root=$(mktemp -d)
chroot_bin=$(command -v chroot)
chmod 0755 "$root"
trap 'kill "${pid:-0}" 2>/dev/null || true; rm -rf "$root"' EXIT

install -D -m 0755 "$bin" "$root/drbgd"
install -D -m 0644 config/default.toml "$root/etc/drbgd/default.toml"
# The shared libraries the binary needs: exactly what distroless/cc supplies.
for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
  install -D "$lib" "$root$lib"
done
echo "runtime root:"; (cd "$root" && find . -type f | sort)
if [ -e "$root/bin/sh" ]; then echo "the runtime root must hold no shell"; exit 1; fi

port=$((20000 + RANDOM % 10000))
env -i DRBGD__SERVER__LISTEN=127.0.0.1:$port DRBGD__SERVER__ADMIN_LISTEN=127.0.0.1:$((port + 1)) \
  DRBGD__LOG__FORMAT=json \
  "$chroot_bin" --userspec=65532:65532 "$root" /drbgd serve >"$root.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$((port + 1))/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
body=$(curl -fsS -D "$root.headers" "http://127.0.0.1:$port/bits?n=128&format=hex")
[[ "$body" =~ ^[0-9a-f]{32}$ ]] || { echo "bad /bits body: $body"; cat "$root.log"; exit 1; }
grep -qi '^cache-control: no-store' "$root.headers"
# The image's HEALTHCHECK command, run inside the root as well.
chroot --userspec=65532:65532 "$root" /drbgd healthcheck --admin "127.0.0.1:$((port + 1))"
owner=$(ps -o uid= -p "$pid" | tr -d ' ')
[ "$owner" = "65532" ] || { echo "server runs as uid $owner, expected 65532"; exit 1; }
kill -TERM "$pid"; wait "$pid"
echo "runtime stage OK: served /bits as uid 65532 from a root of $(cd "$root" && find . -type f | wc -l) files"
rm -f "$root.log" "$root.headers"
