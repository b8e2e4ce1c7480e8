#!/usr/bin/env bash
# The container image, built and run for real with podman:
#
# 1. `podman build` with the registry's base images replaced by local stand-ins of the same
#    names built from Debian packages (no registry is reachable here), tagged
#    localhost/drbgd:ci: of the Dockerfile as it is (no argument), or, in CI (`--prebuilt BIN`),
#    of the Dockerfile's runtime stage around the release binary CI built (below). Then the
#    image is run read-only: non-root (uid 65532), no shell, /readyz 200 on a published port,
#    real /token and /bits requests with Cache-Control: no-store, the image's own HEALTHCHECK,
#    SIGTERM drained to exit 0 within the Deployment's terminationGracePeriodSeconds, `drbgd
#    selftest`, and the image's size.
# 2. The dev overlay's Deployment + ConfigMap, through the test overlay .ci/podman-overlay
#    (image localhost/drbgd:ci, ports on 127.0.0.1, the httpGet liveness probe as the image's
#    exec healthcheck), run by `podman kube play`: /token over HTTP, GetToken over gRPC,
#    /readyz polled to 200, the manifests' uid and read-only root in force, and the ConfigMap's
#    shutdown delay seen on SIGTERM (/readyz 503 while the listeners still serve, then exit 0).
# 3. The prod overlay's Deployment + ConfigMap, through the test overlay .ci/podman-overlay-prod
#    (as for dev, plus prod's five Secrets made at run time: a throwaway CA and server
#    certificate, a random API key's digest, the URL and password of a redis-server started on
#    the host for the quota store, the URL, password and CA of a PostgreSQL server started on
#    the host for tickets and kept results, and a receipt signing key), run by `podman kube
#    play`: /readyz polled to 200, /token over HTTPS with the key 200 (without it 401), GetToken
#    over gRPC with TLS, /usage's quota scope `global` with the caller's bucket and the replica
#    set under prod's key prefix in the store, a ticket used once (its retry answered the kept
#    receipt byte for byte, another use 409, the public lookup showing it, the rows in
#    PostgreSQL), a stopped database refusing ticketed draws with 503 and the ticket then used
#    after its restart, SIGTERM leaving the replica set and exiting 0.
#
# Usage: .ci/container.sh                   the Dockerfile built as it is (builder stages too)
#        .ci/container.sh --prebuilt BIN    CI: the runtime stage around BIN, then 1-3 as above
#        .ci/container.sh --standins-only   only the runtime base's stand-in (CI, in the background)
#        .ci/container.sh --check-alignment only the checks that BIN is the builder stage's binary
#
# --prebuilt: the binary is compiled once, by .ci/run's release build, not a second time inside
# podman. The image is the Dockerfile's own runtime stage, word for word but for its one line
# `COPY --from=builder /drbgd /drbgd`, which becomes `COPY drbgd /drbgd` from a build context
# holding BIN and the files the runtime stage copies. That proves the runtime stage: its base,
# its files and their modes, its user, environment, ports, HEALTHCHECK, entrypoint, and that
# this binary runs in it (glibc of the runtime base, read-only root, no shell). It does not run
# the builder stages (cargo-chef's install, the cook, the image's own compile); instead the
# alignment checks (also run first thing in CI) hold that their compile is this run's: the
# builder's `RUN cargo build ... && cp <path> /drbgd` is .ci/run's release command and binary
# path ($DRBGD_RELEASE_BUILD, $DRBGD_BIN), the cook uses the same profile, the builder image's
# Rust (ARG RUST_VERSION) is rust-toolchain.toml's and this machine's, and no compiler flag
# reaches this run's build from outside the repository (environment, cargo config files above
# it). Running the script with no argument still builds the whole Dockerfile.
#
# Runs as root on Debian 12 with podman, runc, catatonit, uidmap, mmdebstrap, redis-server,
# postgresql and openssl installed (.ci/run installs them), kustomize and grpcurl on PATH, and the Rust toolchain that
# rust-toolchain.toml names. Idempotent: the stand-in base images are built once and reused
# (rebuilt when their recipe version below changes); the image build reuses podman's layer
# cache and, read-only through an overlay mount, the host's cargo registry.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
export CONTAINERS_CONF="$repo/.ci/containers.conf"

mode=full prebuilt_bin=
case ${1:-} in
  "") ;;
  --prebuilt) mode=prebuilt; prebuilt_bin=${2:?--prebuilt needs the binary}; shift ;;
  --standins-only) mode=standins ;;
  --check-alignment) mode=align ;;
  *) echo "usage: .ci/container.sh [--prebuilt BIN | --standins-only | --check-alignment]" >&2; exit 2 ;;
esac

image=localhost/drbgd:ci
ctr=drbgd-ci
# The names the Dockerfile's FROM lines use (`rust:${RUST_VERSION}-slim-bookworm` is Docker
# Hub's docker.io/library/rust), and the recipe version of our stand-ins for them.
rust_version=$(sed -n 's/^ARG RUST_VERSION=//p' Dockerfile)
builder_base=docker.io/library/rust:${rust_version}-slim-bookworm
runtime_base=gcr.io/distroless/cc-debian12:nonroot
standin_recipe=1

fail() { echo "FAIL: $*" >&2; exit 1; }
proved() { echo "ok: $*"; }

# --- the builder stage's binary is CI's release binary ------------------------------------------

# .ci/run's release build and the path of its binary (exported by .ci/run; these defaults are
# its values, for a run of this script by hand).
release_cmd=${DRBGD_RELEASE_BUILD:-cargo build --release --locked --bin drbgd}
release_bin=${DRBGD_BIN:-target/release/drbgd}
check_alignment() {
  local channel joined cook profile profile_env
  channel=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' rust-toolchain.toml)
  [ -n "$rust_version" ] || fail "no ARG RUST_VERSION= in the Dockerfile"
  [ "$channel" = "$rust_version" ] || fail "rust-toolchain.toml's channel $channel is not the Dockerfile's RUST_VERSION $rust_version"
  rustc --version | grep -q "^rustc $rust_version " || fail "the machine's rustc is not $rust_version: $(rustc --version)"
  proved "Rust $rust_version: the Dockerfile's RUST_VERSION, rust-toolchain.toml's channel and this machine's rustc"
  # The Dockerfile with its continuation lines joined and runs of spaces squeezed.
  joined=$(sed -e ':a' -e '/\\$/{N;s/\\\n//;ta}' Dockerfile | tr -s ' ')
  grep -qxF "RUN $release_cmd && cp $release_bin /drbgd" <<<"$joined" \
    || fail "the Dockerfile's builder has no \`RUN $release_cmd && cp $release_bin /drbgd\` (.ci/run's release build and binary: change both together)"
  case " $release_cmd " in
    *" --release "*) profile=--release ;;
    *" --profile "*) profile="--profile $(sed 's/.* --profile \([^ ]*\).*/\1/' <<<"$release_cmd")" ;;
    *) fail "the release build names no profile: $release_cmd" ;;
  esac
  cook=$(grep -m1 '^RUN cargo chef cook ' <<<"$joined") || fail "no \`RUN cargo chef cook\` in the Dockerfile"
  [[ " $cook " == *" $profile "* ]] || fail "the Dockerfile's cook is not $profile: $cook"
  proved "the Dockerfile's builder compiles as CI does: RUN $release_cmd && cp $release_bin /drbgd (cook: $profile)"
  # Nothing from outside the repository changes this run's compile: no flags in the
  # environment, no build settings in a cargo config file above the checkout or in CARGO_HOME.
  profile_env=$(tr 'a-z-' 'A-Z_' <<<"${profile#--profile }"); [ "$profile" = --release ] && profile_env=RELEASE
  if env | grep -E "^(RUSTFLAGS|CARGO_ENCODED_RUSTFLAGS|CARGO_BUILD_(RUSTFLAGS|RUSTC|RUSTC_WRAPPER|RUSTC_WORKSPACE_WRAPPER|TARGET)|RUSTC|RUSTC_WRAPPER|RUSTC_WORKSPACE_WRAPPER|CARGO_PROFILE_${profile_env}_[A-Z_]*|CARGO_TARGET_[A-Z0-9_]*_(RUSTFLAGS|LINKER))=" >&2; then
    fail "the environment above changes the release build, which the Dockerfile's builder would not see"
  fi
  local dir=$repo f configs=()
  while [ "$dir" != / ]; do
    dir=$(dirname "$dir")
    configs+=("$dir/.cargo/config" "$dir/.cargo/config.toml")
  done
  configs+=("${CARGO_HOME:-$HOME/.cargo}/config" "${CARGO_HOME:-$HOME/.cargo}/config.toml")
  for f in "${configs[@]}"; do
    [ -f "$f" ] && grep -qE '^ *\[ *(build|target|profile)|rustflags' "$f" && fail "$f sets build options the Dockerfile's builder would not see"
  done
  # The runtime stage (the last) takes the binary by this one line, which --prebuilt replaces.
  [ "$(sed -n '/^FROM .* AS runtime$/,$p' Dockerfile | grep -c '^FROM ')" = 1 ] \
    || fail "the Dockerfile's last stage is not \`FROM ... AS runtime\`"
  [ "$(sed -n '/^FROM .* AS runtime$/,$p' Dockerfile | grep -cx 'COPY --from=builder /drbgd /drbgd')" = 1 ] \
    || fail "the runtime stage does not take the binary by exactly one \`COPY --from=builder /drbgd /drbgd\`"
  if sed -n '/^FROM .* AS runtime$/,$p' Dockerfile | grep -- '--from=' | grep -vx 'COPY --from=builder /drbgd /drbgd'; then
    fail "the runtime stage copies more from other stages than /drbgd, which --prebuilt does not reproduce"
  fi
  proved "nothing outside the repository sets compiler flags; the runtime stage, the last, takes /drbgd by one COPY --from=builder"
}
if [ "$mode" = align ]; then check_alignment; exit 0; fi

pod_yaml_dir=$(mktemp -d)
work=$(mktemp -d)
pg_dir=  # the prod pod's PostgreSQL (part 3), stopped and removed by cleanup

cleanup() {
  set +e
  podman rm -f -t 0 "$ctr" >/dev/null 2>&1
  [ -f "$pod_yaml_dir/pod.yaml" ] && (cd "$pod_yaml_dir" && podman kube down pod.yaml >/dev/null 2>&1)
  [ -n "${pod:-}" ] && podman pod rm -f -t 0 "$pod" >/dev/null 2>&1
  [ -n "${secret:-}" ] && podman secret rm "$secret" >/dev/null 2>&1
  # The prod pod's: pod, Secrets and their volumes, ConfigMap volume, redis-server, key files.
  [ -n "${prod_yaml_dir:-}" ] && [ -f "$prod_yaml_dir/prod.yaml" ] && (cd "$prod_yaml_dir" && podman kube down prod.yaml >/dev/null 2>&1)
  if [ -n "${prod_pod:-}" ]; then
    podman pod rm -f -t 0 "$prod_pod" >/dev/null 2>&1
    for s in "${prod_secret_names[@]}" ${prod_cm_volumes:-}; do
      podman secret rm "$s" >/dev/null 2>&1; podman volume rm -f "$s" >/dev/null 2>&1
    done
  fi
  [ -s "$work/redis.pid" ] && kill "$(cat "$work/redis.pid")" 2>/dev/null
  if [ -n "${pg_dir:-}" ]; then
    [ -e "$pg_dir/data/postmaster.pid" ] && bash "$repo/scripts/postgres.sh" stop "$pg_dir" >/dev/null 2>&1
    rm -rf "$pg_dir"
  fi
  rm -rf "$repo/.ci/podman-overlay-prod/secrets" "${prod_yaml_dir:-}" "$pod_yaml_dir" "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
tools=(podman mmdebstrap)
[ "$mode" = standins ] || tools+=(kustomize grpcurl curl redis-server redis-cli openssl)
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (.ci/run installs it)"
done

# --- stand-in base images --------------------------------------------------------------------

standin_ok() {
  [ "$(podman image inspect --format '{{index .Labels "ci.drbgd.standin"}}' "$1" 2>/dev/null)" = "$standin_recipe" ]
}

# rust:<version>-slim-bookworm: a bookworm minbase with what the official image adds (gcc,
# libc6-dev, ca-certificates) and the machine's own toolchain, installed the official image's
# way: rustup in /usr/local/cargo/bin with its proxies, the toolchain in /usr/local/rustup
# under the name rustup-init gives it, as the default. Only the full build's builder stages run
# on it (--prebuilt and --standins-only need the runtime base alone).
if [ "$mode" != full ]; then
  :
elif standin_ok "$builder_base"; then
  echo "stand-in $builder_base present (recipe $standin_recipe): reused"
else
  sysroot=$(realpath "$(rustc --print sysroot)")
  rustc --version | grep -q "^rustc $rust_version " || fail "the machine's rustc is not $rust_version: $(rustc --version)"
  rustup_bin=$(realpath "$(command -v rustup)")
  triple=$(rustc -vV | sed -n 's/^host: //p')
  tc="usr/local/rustup/toolchains/$rust_version-$triple"
  echo "building stand-in $builder_base: bookworm minbase + gcc libc6-dev ca-certificates + $sysroot"
  nice -n 19 mmdebstrap --quiet --variant=minbase --include=ca-certificates,gcc,libc6-dev \
    --skip=output/dev \
    --customize-hook="mkdir -p \"\$1/$tc\" \"\$1/usr/local/cargo/bin\"" \
    --customize-hook="tar -C '$sysroot' --exclude=./share/doc -cf - . | tar -C \"\$1/$tc\" -xf -" \
    --customize-hook="sed -i '/^rust-docs-/d' \"\$1/$tc/lib/rustlib/components\"" \
    --customize-hook="install -m 0755 '$rustup_bin' \"\$1/usr/local/cargo/bin/rustup\"" \
    --customize-hook="cd \"\$1/usr/local/cargo/bin\" && for p in cargo cargo-clippy cargo-fmt clippy-driver rust-gdb rust-gdbgui rust-lldb rustc rustdoc rustfmt; do ln rustup \$p; done" \
    --customize-hook="printf 'version = \"12\"\ndefault_toolchain = \"%s\"\nprofile = \"minimal\"\n' '$rust_version-$triple' >\"\$1/usr/local/rustup/settings.toml\"" \
    --customize-hook="chmod -R a+w \"\$1/usr/local/rustup\" \"\$1/usr/local/cargo\"" \
    bookworm "$work/builder.tar"
  podman import --quiet \
    --change "ENV RUSTUP_HOME=/usr/local/rustup" --change "ENV CARGO_HOME=/usr/local/cargo" \
    --change "ENV PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --change "ENV RUST_VERSION=$rust_version" --change "LABEL ci.drbgd.standin=$standin_recipe" \
    --change 'CMD ["bash"]' "$work/builder.tar" "$builder_base" >/dev/null
  rm -f "$work/builder.tar"
  podman run --rm --network none "$builder_base" cargo --version
fi

# gcr.io/distroless/cc-debian12:nonroot: extracted (not installed: no maintainer scripts, no
# dpkg, no shell) libc6, libgcc-s1, ca-certificates (bundle concatenated as
# update-ca-certificates does), tzdata and netbase, with distroless's users (root, nobody,
# nonroot 65532), /home/nonroot and /tmp; every executable the packages' dependencies brought
# (openssl, debconf, perl) removed. Config as distroless's: user 65532, workdir /home/nonroot.
if standin_ok "$runtime_base"; then
  echo "stand-in $runtime_base present (recipe $standin_recipe): reused"
else
  echo "building stand-in $runtime_base: libc6 libgcc-s1 ca-certificates tzdata netbase, extracted"
  rt="$work/runtime-root"
  nice -n 19 mmdebstrap --quiet --variant=extract --include=libc6,libgcc-s1,ca-certificates,tzdata,netbase \
    --skip=output/dev bookworm "$rt"
  # (the extract variant runs no customize hooks: the root is finished here)
  cat "$rt"/usr/share/ca-certificates/*/*.crt >"$rt/etc/ssl/certs/ca-certificates.crt"
  rm -rf "$rt"/usr/bin "$rt"/usr/sbin "$rt"/bin "$rt"/sbin "$rt"/usr/share/perl* "$rt"/usr/lib/x86_64-linux-gnu/perl* \
    "$rt"/usr/share/debconf "$rt"/etc/apt "$rt"/var/lib/apt "$rt"/var/cache/apt "$rt"/var/cache/debconf \
    "$rt"/usr/share/doc "$rt"/usr/share/man "$rt"/usr/share/locale "$rt"/usr/lib/ssl/misc
  printf '%s\n' root:x:0:0:root:/root:/sbin/nologin nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin \
    nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin >"$rt/etc/passwd"
  printf '%s\n' root:x:0: nobody:x:65534: nonroot:x:65532: >"$rt/etc/group"
  mkdir -p "$rt/root" "$rt/home/nonroot" "$rt/tmp"
  chown 65532:65532 "$rt/home/nonroot"; chmod 0700 "$rt/root"; chmod 1777 "$rt/tmp"
  chmod 0644 "$rt/etc/hostname" "$rt/etc/resolv.conf"
  if find "$rt" -type f -perm -u+x ! -name '*.so*' | grep -q .; then
    find "$rt" -type f -perm -u+x ! -name '*.so*'; fail "the runtime stand-in holds executables"
  fi
  tar -C "$rt" -cf - . | podman import --quiet --change "USER 65532" --change "WORKDIR /home/nonroot" \
    --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt" \
    --change "LABEL ci.drbgd.standin=$standin_recipe" - "$runtime_base" >/dev/null
  rm -rf "$rt"
fi
bases=("$runtime_base")
[ "$mode" != full ] || bases+=("$builder_base")
for base in "${bases[@]}"; do
  standin_ok "$base" || fail "stand-in $base was not built"
done
if [ "$mode" = standins ]; then echo "stand-ins ready: ${bases[*]}"; exit 0; fi

# --- 1. podman build: the Dockerfile as it is, or its runtime stage around CI's binary --------

t0=$SECONDS
if [ "$mode" = prebuilt ]; then
  check_alignment
  [ -x "$prebuilt_bin" ] || fail "$prebuilt_bin is not an executable (.ci/run's release build makes it)"
  [ "$prebuilt_bin" -ef "$release_bin" ] || fail "$prebuilt_bin is not $release_bin, the release build's binary that the checks above are about"
  # The Dockerfile's lines before its first FROM (syntax line, global ARGs), then its runtime
  # stage with the builder's binary taken from the build context instead.
  sed -n '/^FROM .* AS runtime$/,$p' Dockerfile >"$work/runtime.stage"
  sed -n '1,/^FROM /p' Dockerfile | sed '$d' >"$work/Dockerfile.prebuilt"
  sed 's|^COPY --from=builder /drbgd /drbgd$|COPY drbgd /drbgd|' "$work/runtime.stage" >"$work/runtime.prebuilt"
  cat "$work/runtime.prebuilt" >>"$work/Dockerfile.prebuilt"
  changed=$(diff "$work/runtime.stage" "$work/runtime.prebuilt" | grep -c '^[<>]' || true)
  [ "$changed" = 2 ] || fail "the prebuilt runtime stage differs from the Dockerfile's in more than its COPY --from=builder line"
  diff "$work/runtime.stage" "$work/runtime.prebuilt" | sed 's/^/  /' || true
  # The build context: the binary, and every file the runtime stage copies from the context
  # (COPY lines without --from; their last word is the destination).
  ctx="$work/context"
  mkdir -p "$ctx"
  install -m 0755 "$prebuilt_bin" "$ctx/drbgd"
  while read -r -a words; do
    srcs=()
    for w in "${words[@]:1:${#words[@]}-2}"; do [[ "$w" == --* ]] || srcs+=("$w"); done
    for src in "${srcs[@]}"; do
      [ "$src" = drbgd ] && continue
      [ -e "$src" ] || fail "the runtime stage copies $src, which is not in the repository"
      cp -a --parents "$src" "$ctx/"
    done
  done < <(grep -E '^COPY ' "$work/runtime.prebuilt" | grep -v -- '--from=')
  echo "build context: $(cd "$ctx" && find . -type f | sort | xargs)"
  nice -n 19 podman build --pull=never --format docker --network none -f "$work/Dockerfile.prebuilt" \
    -t "$image" "$ctx" >"$work/build.log" 2>&1 || { tail -50 "$work/build.log"; fail "podman build of the Dockerfile's runtime stage"; }
  grep -E '^(\[[0-9]+/[0-9]+\] )?STEP|Using cache' "$work/build.log" | sed 's/^/  /' | cut -c1-120
  proved "podman build --pull=never --format docker of the Dockerfile's runtime stage, only its COPY --from=builder line taking $prebuilt_bin (.ci/run's release build) instead: $image ($((SECONDS - t0)) s)"
else
  # --network host: `cargo install cargo-chef` reads the crate registry. The machine's CA bundle
  # is mounted read-only for the build's RUN steps (a TLS-intercepting proxy's CA, where there
  # is one); the host's cargo registry likewise, through an overlay (`:O`: writes are
  # discarded), so dependencies are not downloaded again. Neither is in any layer of the image.
  build_mounts=(-v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro)
  [ -d "$HOME/.cargo/registry" ] && build_mounts+=(-v "$HOME/.cargo/registry:/usr/local/cargo/registry:O")
  nice -n 19 podman build --pull=never --format docker --network host "${build_mounts[@]}" \
    -t "$image" . >"$work/build.log" 2>&1 || { tail -50 "$work/build.log"; fail "podman build of the Dockerfile"; }
  grep -E '^\[[0-9]/[0-9]\] STEP|Using cache|Finished' "$work/build.log" | sed 's/^/  /' | cut -c1-120
  proved "podman build --pull=never --format docker of the Dockerfile as it is: $image ($((SECONDS - t0)) s)"
fi
# The layer cache, bounded to one build: every untagged image this build neither made nor took
# from the cache (earlier builds' layers, ~3 GB each) is removed.
used=$(grep -oE '^--> (Using cache )?[0-9a-f]{12,64}' "$work/build.log" | grep -oE '[0-9a-f]{12,64}$' | cut -c1-12 | sort -u || true)
# Removing a leaf can leave its parent a leaf: repeat until a pass removes nothing. (podman rmi
# also takes an untagged parent left without children, so a used layer whose only children
# were old leaves goes too: the next build remakes it. Tagged images always stay.)
prune_unused() {
  local pruned=0 before=-1 id
  while [ "$pruned" -ne "$before" ]; do
    before=$pruned
    for id in $(podman images -a -q --no-trunc --filter dangling=true | sed 's/^sha256://' | cut -c1-12 | sort -u); do
      grep -qx "$id" <<<"$used" && continue
      podman rmi "$id" >/dev/null 2>&1 && pruned=$((pruned + 1))
    done
  done
  echo "$pruned"
}
pruned=$(prune_unused)
echo "layer cache: $(wc -l <<<"$used") images of this build kept, $pruned older ones removed"

size=$(podman image inspect --format '{{.Size}}' "$image")
echo "image size: $size bytes ($((size / 1024 / 1024)) MiB)"
[ "$(podman image inspect --format '{{.Config.User}}' "$image")" = "65532:65532" ] || fail "the image's USER is not 65532:65532"
hc=$(podman image inspect --format '{{json .Config.Healthcheck.Test}}' "$image")
[ "$hc" = '["CMD","/drbgd","healthcheck"]' ] || fail "the image's HEALTHCHECK is $hc"

# --- 1. the image run: read-only, non-root, no shell, served, healthy, drained ----------------

grace=$(sed -n 's/^ *terminationGracePeriodSeconds: *//p' k8s/base/deployment.yaml)
[[ "$grace" =~ ^[0-9]+$ ]] || fail "no terminationGracePeriodSeconds in k8s/base/deployment.yaml"
port=$((20000 + RANDOM % 10000))
podman rm -f -t 0 "$ctr" >/dev/null 2>&1 || true
# --read-only-tmpfs=false: no writable /tmp or /run either, as readOnlyRootFilesystem gives.
podman run -d --name "$ctr" --read-only --read-only-tmpfs=false \
  -p "127.0.0.1:$port:8080" -p "127.0.0.1:$((port + 1)):8081" "$image" >/dev/null 2>"$work/run.err" \
  || { cat "$work/run.err"; fail "podman run $image"; }
status=000
for _ in $(seq 100); do
  status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((port + 1))/readyz" || true)
  [ "$status" = 200 ] && break
  sleep 0.1
done
[ "$status" = 200 ] || { podman logs "$ctr" | tail -20; fail "/readyz answered $status from the published port"; }
proved "/readyz 200 from the host on 127.0.0.1:$((port + 1)) (published admin port)"

pid=$(podman inspect --format '{{.State.Pid}}' "$ctr")
uids=$(awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/$pid/status")
[ "$uids" = "65532 65532 65532 65532" ] || fail "the server runs as uids $uids"
top=$(podman top "$ctr" user huser group hgroup | tail -n +2 | xargs)
[ "$top" = "nonroot 65532 nonroot 65532" ] || fail "podman top shows user/group $top, not nonroot (65532)"
root_opts=$(awk '$5 == "/" {print $6}' "/proc/$pid/mountinfo")
[[ "$root_opts" =~ (^|,)ro(,|$) ]] || fail "the root filesystem is mounted $root_opts"
if awk '$5 ~ /^\/(tmp|run|var\/tmp)$/' "/proc/$pid/mountinfo" | grep -q .; then fail "a writable tmpfs is mounted"; fi
proved "runs as uid/gid 65532 (/proc/$pid/status; podman top user huser group hgroup: $top), root filesystem mounted read-only ($root_opts)"

podman export -o "$work/fs.tar" "$ctr"
tar -tf "$work/fs.tar" >"$work/fs.list"
if grep -E '(^|/)(sh|bash|dash|ash|busybox)$' "$work/fs.list"; then fail "the image holds a shell"; fi
rc=0; podman run --rm --entrypoint /bin/sh "$image" -c true >"$work/sh.out" 2>&1 || rc=$?
[ "$rc" = 127 ] && grep -q 'stat /bin/sh: no such file or directory' "$work/sh.out" \
  || { cat "$work/sh.out"; fail "podman run --entrypoint /bin/sh: exit $rc, not 127 with /bin/sh missing"; }
proved "no shell: none among the image's $(grep -vc '/$' "$work/fs.list") files, and podman run --entrypoint /bin/sh exits 127: stat /bin/sh: no such file or directory"

body=$(curl -fsS -D "$work/token.h" "http://127.0.0.1:$port/token")
[[ "$body" =~ ^[A-Za-z0-9_-]{43}$ ]] || fail "GET /token: not a 32-byte base64url token"
grep -qi '^cache-control: no-store' "$work/token.h" || fail "GET /token: no Cache-Control: no-store"
body=$(curl -fsS -D "$work/bits.h" "http://127.0.0.1:$port/bits?n=256")
[[ "$body" =~ ^[0-9a-f]{64}$ ]] || fail "GET /bits?n=256: not 64 hex digits"
grep -qi '^cache-control: no-store' "$work/bits.h" || fail "GET /bits?n=256: no Cache-Control: no-store"
proved "GET /token (43 base64url chars) and /bits?n=256 (64 hex digits) on 127.0.0.1:$port, both Cache-Control: no-store"

podman healthcheck run "$ctr" >"$work/hc.out" 2>&1 || { cat "$work/hc.out"; fail "the image's HEALTHCHECK failed"; }
proved "the image's HEALTHCHECK ($hc) passes: podman healthcheck run $ctr exits 0"

t1=$(date +%s%N)
podman stop -t "$grace" "$ctr" >/dev/null 2>&1 || fail "podman stop"
took=$((($(date +%s%N) - t1) / 1000000))
code=$(podman inspect --format '{{.State.ExitCode}}' "$ctr")
[ "$code" = 0 ] || { podman logs "$ctr" | tail -20; fail "exit code $code after SIGTERM"; }
[ "$took" -lt $((grace * 1000)) ] || fail "SIGTERM took $took ms, terminationGracePeriodSeconds is $grace"
proved "SIGTERM (podman stop -t $grace): drained and exited 0 in $took ms, within terminationGracePeriodSeconds $grace (the image's defaults: no shutdown delay; the pod below has the ConfigMap's)"
podman rm -f -t 0 "$ctr" >/dev/null 2>&1

podman run --rm --read-only --read-only-tmpfs=false --network none "$image" selftest >"$work/selftest.out" 2>"$work/selftest.err" \
  || { cat "$work/selftest.out" "$work/selftest.err"; fail "drbgd selftest in the image"; }
sed 's/^/  /' "$work/selftest.out"
proved "drbgd selftest runs in the image (read-only, no network): $(grep -c ': ok' "$work/selftest.out") algorithms ok"

# --- 2. the dev overlay's pod with podman kube play ---------------------------------------------

kustomize build .ci/podman-overlay >"$pod_yaml_dir/pod.yaml"
kustomize build k8s/overlays/dev >"$work/dev.yaml"
# The test overlay changes only what podman cannot run; everything else of dev's Deployment
# (security context, mounted ConfigMap, env, resources, probes) reaches kube play unchanged.
python3 - "$work/dev.yaml" "$pod_yaml_dir/pod.yaml" <<'PY'
import sys, yaml
dev, pod = ({d["kind"]: d for d in yaml.safe_load_all(open(p)) if d} for p in sys.argv[1:])
a, b = dev["Deployment"]["spec"]["template"]["spec"], pod["Deployment"]["spec"]["template"]["spec"]
ca, cb = a["containers"][0], b["containers"][0]
assert cb["image"] == "localhost/drbgd:ci", cb["image"]
assert "livenessProbe" in ca and "livenessProbe" not in cb
for p in cb["ports"]:
    assert p.pop("hostIP") == "127.0.0.1" and p.pop("hostPort")
vb = {v["name"]: v for v in b["volumes"]}
assert vb["api-keys"]["secret"]["secretName"] == pod["Secret"]["metadata"]["name"]
vb["api-keys"]["secret"]["secretName"] = "drbgd-api-keys"
for k in ("image", "livenessProbe"):
    ca.pop(k); cb.pop(k, None)
assert a == b, "the test overlay changes more of the Deployment than image, hostPort/hostIP, livenessProbe, the Secret's name"
assert dev["ConfigMap"] == pod["ConfigMap"]
sc = b["securityContext"]
print(f"  kept: pod securityContext {sc}, container securityContext {cb['securityContext']}")
PY
proved "the test overlay = dev with only: image, hostPort+hostIP 127.0.0.1, livenessProbe removed, the optional Secret supplied"

pod=drbgd-pod-0
pctr=$pod-drbgd
secret=$(python3 -c 'import sys, yaml; print(*[d["metadata"]["name"] for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Secret"])' "$pod_yaml_dir/pod.yaml")
hports=$(python3 -c 'import sys, yaml; d=[d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Deployment"][0]; print(*[p["hostPort"] for p in d["spec"]["template"]["spec"]["containers"][0]["ports"]])' "$pod_yaml_dir/pod.yaml")
read -r api_port admin_port <<<"$hports"
# A pod left by an interrupted run goes first, by name.
podman pod rm -f "$pod" >/dev/null 2>&1 || true
podman secret rm "$secret" >/dev/null 2>&1 || true
for p in $api_port $admin_port; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then fail "127.0.0.1:$p (a hostPort of .ci/podman-overlay) is in use"; fi
done
(cd "$pod_yaml_dir" && podman kube play --build=false pod.yaml >"$work/play.out" 2>&1) \
  || { cat "$work/play.out"; fail "podman kube play of the dev overlay"; }
t1=$(date +%s%N)
status=000
for _ in $(seq 300); do
  status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$admin_port/readyz" || true)
  [ "$status" = 200 ] && break
  sleep 0.1
done
[ "$status" = 200 ] || { podman logs "$pctr" | tail -20; fail "the pod's /readyz answered $status"; }
proved "kube play: pod $pod up, /readyz polled to 200 on 127.0.0.1:$admin_port after $((($(date +%s%N) - t1) / 1000000)) ms"

pid=$(podman inspect --format '{{.State.Pid}}' "$pctr")
uids=$(awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/$pid/status")
[ "$uids" = "65532 65532 65532 65532" ] || fail "the pod's container runs as uids $uids"
[[ "$(awk '$5 == "/" {print $6}' "/proc/$pid/mountinfo")" =~ (^|,)ro(,|$) ]] || fail "the pod's root filesystem is writable"
[ "$(awk '/^NoNewPrivs:/ {print $2}' "/proc/$pid/status")" = 1 ] || fail "privilege escalation is possible"
[ "$(awk '/^CapBnd:/ {print $2}' "/proc/$pid/status")" = 0000000000000000 ] || fail "capabilities are left"
[[ "$(awk '$5 == "/etc/drbgd/config" {print $6}' "/proc/$pid/mountinfo")" =~ (^|,)ro(,|$) ]] || fail "the ConfigMap is not mounted read-only at /etc/drbgd/config"
cmp -s "/proc/$pid/root/etc/drbgd/config/drbgd.toml" k8s/base/drbgd.toml || fail "the mounted drbgd.toml differs from k8s/base/drbgd.toml"
tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- '--config /etc/drbgd/config/drbgd.toml' || fail "not started with the manifest's args"
limits=$(python3 -c 'import sys, yaml; d = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Deployment"][0]; l = d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]; print(int(l["memory"].removesuffix("Mi")) << 20, int(float(l["cpu"]) * 1e9))' "$pod_yaml_dir/pod.yaml")
[ "$(podman inspect --format '{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}}' "$pctr")" = "$limits" ] \
  || fail "the pod's memory/CPU limits are not the manifest's ($limits)"
proved "the manifests' security context in force: uid/gid 65532, read-only root, no_new_privs, no capabilities; memory and CPU limits ($limits bytes, nanocpus); the ConfigMap's drbgd.toml mounted read-only and given by --config"

body=$(curl -fsS -D "$work/ptoken.h" "http://127.0.0.1:$api_port/token")
[[ "$body" =~ ^[A-Za-z0-9_-]{43}$ ]] || fail "the pod's GET /token: not a 32-byte base64url token"
grep -qi '^cache-control: no-store' "$work/ptoken.h" || fail "the pod's GET /token: no Cache-Control: no-store"
reply=$(grpcurl -plaintext -import-path proto -proto drbgd/v1/randomness.proto -d '{"bytes": 16, "format": "FORMAT_HEX"}' \
  "127.0.0.1:$api_port" drbgd.v1.RandomnessService/GetToken)
shape=$(python3 -c 'import json, re, sys; d = json.loads(sys.argv[1]); assert re.fullmatch("[0-9a-f]{32}", d["token"]), "token"; print({k: (f"<{len(v)} hex digits>" if k == "token" else v) for k, v in d.items()})' "$reply") \
  || fail "GetToken answered something else"
proved "the pod answers GET /token (Cache-Control: no-store) and gRPC GetToken on 127.0.0.1:$api_port: $shape"
podman exec "$pctr" /drbgd healthcheck || fail "the liveness check (/drbgd healthcheck, GET /livez) failed inside the pod"
proved "the liveness probe's check, /livez on the admin port, run inside the pod's container (podman exec /drbgd healthcheck)"

# SIGTERM with the ConfigMap's settings: /readyz turns 503 at once while the listeners keep
# serving for shutdown_delay_ms, then the drain, exit 0, all within terminationGracePeriodSeconds
# (kube play does not carry that field over: podman stop is given it).
delay_ms=$(python3 -c 'import tomllib; print(tomllib.load(open("k8s/base/drbgd.toml", "rb"))["server"]["shutdown_delay_ms"])')
t1=$(date +%s%N)
podman stop -t "$grace" "$pctr" >/dev/null 2>&1 &
stop_pid=$!
for _ in $(seq 50); do
  status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$admin_port/readyz" || true)
  [ "$status" = 503 ] && break
  sleep 0.1
done
[ "$status" = 503 ] || fail "/readyz did not turn 503 after SIGTERM (answered $status)"
t503=$((($(date +%s%N) - t1) / 1000000))
curl -fsS -o /dev/null "http://127.0.0.1:$api_port/token" || fail "GET /token refused during the shutdown delay"
wait "$stop_pid" || true
took=$((($(date +%s%N) - t1) / 1000000))
code=$(podman inspect --format '{{.State.ExitCode}}' "$pctr")
[ "$code" = 0 ] || { podman logs "$pctr" | tail -20; fail "the pod's container exited $code after SIGTERM"; }
[ "$took" -ge "$delay_ms" ] || fail "exited after $took ms, before the shutdown delay of $delay_ms ms"
[ "$took" -lt $((grace * 1000)) ] || fail "SIGTERM took $took ms, terminationGracePeriodSeconds is $grace"
proved "pod SIGTERM: /readyz 503 after $t503 ms, /token still served in the delay, exit 0 after $took ms (delay $delay_ms ms, grace $grace s)"

(cd "$pod_yaml_dir" && podman kube down pod.yaml >/dev/null 2>&1) || fail "podman kube down"
podman secret rm "$secret" >/dev/null
! podman pod exists "$pod" || fail "pod $pod left behind"

# --- 3. the prod overlay's pod with podman kube play ---------------------------------------------

# prod needs its five Secrets, the shared quota store and the tickets' database. All are made
# here and go when the script exits: a throwaway CA and a server certificate for 127.0.0.1 (as
# cert-manager's drbgd-tls: ECDSA P-256, serverAuth, with ca.crt), a random API key of which only
# the SHA-256 digest is written, a redis-server with a random password on the host, a PostgreSQL
# server (scripts/postgres.sh: TLS from a CA of its own, a random password) and an Ed25519
# receipt key. The pod has its own network namespace on kube play's network
# (podman-default-kube-network): redis-server and PostgreSQL listen on that bridge's host
# address, which the stores' Secrets' URLs name (PostgreSQL admits the bridge's network over TLS
# only).
t_prod=$SECONDS
prod_dir=.ci/podman-overlay-prod
prod_secrets=$prod_dir/secrets
prod_pod=drbgd-pod-0
prod_ctr=$prod_pod-drbgd
prod_secret_names=(drbgd-tls drbgd-api-keys drbgd-quota-store drbgd-results-store drbgd-receipt-key)
redis_port=26379 pg_port=25432
prod_yaml_dir=$(mktemp -d)
command -v redis-server >/dev/null && command -v redis-cli >/dev/null && command -v openssl >/dev/null \
  && compgen -G '/usr/lib/postgresql/*/bin/pg_ctl' >/dev/null \
  || fail "redis-server, redis-cli, postgresql and openssl are needed for the prod pod (.ci/run installs them)"
kube_net=podman-default-kube-network
podman network exists "$kube_net" || fail "no podman network $kube_net (the dev pod's kube play above makes it)"
gw=$(podman network inspect --format '{{range .Subnets}}{{.Gateway}}{{end}}' "$kube_net")
[[ "$gw" =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "no IPv4 gateway on podman network $kube_net ($gw)"
subnet=$(podman network inspect --format '{{range .Subnets}}{{.Subnet}}{{end}}' "$kube_net")
[[ "$subnet" =~ ^[0-9.]+/[0-9]+$ ]] || fail "no IPv4 subnet on podman network $kube_net ($subnet)"
# Left by an interrupted run: the pod and Secrets go by name; a redis-server still on the port is
# an error (its password is gone with that run).
podman pod rm -f -t 0 "$prod_pod" >/dev/null 2>&1 || true
for s in "${prod_secret_names[@]}"; do
  podman secret rm "$s" >/dev/null 2>&1 || true
  podman volume rm -f "$s" >/dev/null 2>&1 || true
done
for p in 28443 28444; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then fail "127.0.0.1:$p (a hostPort of $prod_dir) is in use"; fi
done

rm -rf "$prod_secrets"
mkdir -m 0700 "$prod_secrets"
(
  cd "$prod_secrets"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=drbgd-ci-ca \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
    -keyout ca.key -out ca.crt 2>/dev/null
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=drbgd.drbgd.svc \
    -keyout tls.key -out tls.csr 2>/dev/null
  printf '%s\n' basicConstraints=critical,CA:FALSE keyUsage=critical,digitalSignature extendedKeyUsage=serverAuth \
    subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:drbgd.drbgd.svc,DNS:drbgd-headless.drbgd.svc >tls.ext
  openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile tls.ext -out tls.crt 2>/dev/null
  rm -f ca.key ca.srl tls.csr tls.ext
) || fail "openssl: the test CA and server certificate"
api_key=$(openssl rand -base64 32 | tr '+/' '-_' | tr -d '=\n')
printf 'ci %s\n' "$(printf %s "$api_key" | sha256sum | cut -d' ' -f1)" >"$prod_secrets/api-keys.sha256"
redis_pass=$(openssl rand -hex 24)
printf %s "$redis_pass" >"$prod_secrets/quota-password"
printf %s "redis://$gw:$redis_port" >"$prod_secrets/quota-url"
# The tickets' database: its own server (the API tests' is on loopback only), run as the
# postgres user, so in a directory of its own outside this script's private one.
# One left by a killed run (its directory's pattern is this script's) is stopped and removed.
for d in "${TMPDIR:-/tmp}"/drbgd-ci-pod-postgres.*; do
  [ -e "$d/data/postmaster.pid" ] && bash scripts/postgres.sh stop "$d" >/dev/null 2>&1
  rm -rf "$d"
done
for p in "$gw:$pg_port" "127.0.0.1:$pg_port"; do
  if (exec 3<>"/dev/tcp/${p%:*}/${p#*:}") 2>/dev/null; then fail "$p (the test database's port) is in use (ss -ltnp)"; fi
done
pg_dir=$(mktemp -d "${TMPDIR:-/tmp}/drbgd-ci-pod-postgres.XXXXXX")
bash scripts/postgres.sh start "$pg_dir" "$pg_port" "$gw" "$subnet" >/dev/null || { cat "$pg_dir/server.log" 2>/dev/null; fail "PostgreSQL on $gw:$pg_port"; }
printf %s "postgresql://drbgd@$gw:$pg_port/drbgd?sslmode=require" >"$prod_secrets/results-url"
cp "$pg_dir/password" "$prod_secrets/results-password"
cp "$pg_dir/ca.crt" "$prod_secrets/results-ca.crt"
openssl genpkey -algorithm ed25519 -out "$prod_secrets/signing.pem" 2>/dev/null || fail "openssl: the receipt signing key"
# psql over the bridge, as the pod connects: TLS, the server's certificate checked for $gw.
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
pg_tls_url="postgresql://drbgd@$gw:$pg_port/drbgd?sslmode=verify-full&sslrootcert=$pg_dir/ca.crt"
psql_drbgd() { PGPASSWORD=$(cat "$pg_dir/password") "$pg_bin/psql" -X -A -t -q -v ON_ERROR_STOP=1 "$pg_tls_url" -c "$1"; }
kustomize build "$prod_dir" >"$work/prod-full.yaml"
kustomize build k8s/overlays/prod >"$work/prod.yaml"
cp "$prod_secrets/ca.crt" "$work/ca.crt"
rm -rf "$prod_secrets"  # held by the rendered Secrets now, in the script's temporary directory

python3 - "$work/prod.yaml" "$work/prod-full.yaml" <<'PY'
import base64, sys, yaml
prod, pod = ({(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(open(p)) if d} for p in sys.argv[1:])
a, b = prod["Deployment", "drbgd"]["spec"]["template"]["spec"], pod["Deployment", "drbgd"]["spec"]["template"]["spec"]
ca, cb = a["containers"][0], b["containers"][0]
assert cb["image"] == "localhost/drbgd:ci", cb["image"]
assert "livenessProbe" in ca and "livenessProbe" not in cb
for p in cb["ports"]:
    assert p.pop("hostIP") == "127.0.0.1" and p.pop("hostPort")
ea, eb = ({e["name"]: e for e in c.pop("env")} for c in (ca, cb))
# podman 4.3 cannot resolve a secretKeyRef to a Secret of the YAML: the url comes from a
# ConfigMap of the same file (the Secret keeps it too).
assert ea["DRBGD__QUOTA__URL"]["valueFrom"] == {"secretKeyRef": {"name": "drbgd-quota-store", "key": "url"}}
urls = {}
for var, store in (("QUOTA", "quota"), ("RESULTS", "results")):
    var, secret, cm = f"DRBGD__{var}__URL", f"drbgd-{store}-store", f"drbgd-ci-{store}-url"
    assert ea[var]["valueFrom"] == {"secretKeyRef": {"name": secret, "key": "url"}}
    assert eb[var]["valueFrom"] == {"configMapKeyRef": {"name": cm, "key": "url"}}
    urls[store] = pod["ConfigMap", cm]["data"]["url"]
    assert base64.b64decode(pod["Secret", secret]["data"]["url"]).decode() == urls[store]
    eb[var] = ea[var]
    del pod["ConfigMap", cm]
assert ea["DRBGD__RESULTS__STORE"]["value"] == "postgres" and ea["DRBGD__TICKETS__ENABLED"]["value"] == "true"
extra = sorted(set(eb) - set(ea))
assert extra == ["DRBGD__CALLERS__CI__QUOTA__BURST", "DRBGD__CALLERS__CI__QUOTA__REQUESTS_PER_SECOND",
                 "DRBGD__QUOTA__ALLOW_PLAINTEXT_PASSWORD"], extra
for k in extra:
    del eb[k]
assert ea == eb, "the test overlay changes more of prod's env"
for k in ("image", "livenessProbe"):
    ca.pop(k); cb.pop(k, None)
assert a == b, "the test overlay changes more of prod's Deployment than image, hostPort/hostIP, livenessProbe, env"
secrets = {n for k, n in pod if k == "Secret"}
assert {k: v for k, v in pod.items() if k[0] != "Secret"} == prod, "the test overlay changes more than the Deployment and Secrets"
mounted = {v["secret"]["secretName"] for v in b["volumes"] if "secret" in v}
assert secrets == mounted == {"drbgd-tls", "drbgd-api-keys", "drbgd-quota-store", "drbgd-results-store", "drbgd-receipt-key"}, (secrets, mounted)
assert pod["Secret", "drbgd-tls"]["type"] == "kubernetes.io/tls"
print(f"  Secrets supplied: {sorted(secrets)} (the names prod's Deployment uses); urls {urls} (ConfigMaps drbgd-ci-*-url, as in the Secrets)")
PY
proved "the prod test overlay = prod with only: image, hostPort+hostIP 127.0.0.1, livenessProbe removed, its five Secrets supplied, DRBGD__QUOTA__URL and DRBGD__RESULTS__URL from ConfigMaps (not secretKeyRef), the ci caller's quota and the plain redis:// password allowed (env)"

# podman 4.3's Secret volumes write each `data` value as kube play stored it, still
# base64-encoded (pkg/specgen/generate/kube/volume.go reads data as strings), and ignore
# `stringData` and `items` (containers/podman#16269 and #16625, fixed in 4.4). So the Secrets go
# to podman beforehand, by name, with their decoded values as `data` (what those volumes write
# out), and the stream kube play reads holds no Secret (it would replace them).
python3 - "$work/prod-full.yaml" "$prod_yaml_dir/prod.yaml" "$work" <<'PY'
import base64, os, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
for d in docs:
    if d["kind"] == "Secret":
        d["data"] = {k: base64.b64decode(v).decode() for k, v in d["data"].items()}
        fd = os.open(os.path.join(sys.argv[3], f"secret-{d['metadata']['name']}.yaml"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(d, f)
open(sys.argv[2], "w").write(yaml.safe_dump_all([d for d in docs if d["kind"] != "Secret"]))
PY
prod_cm_volumes=$(python3 -c 'import sys, yaml; d = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Deployment"][0]; print(*[v["configMap"]["name"] for v in d["spec"]["template"]["spec"]["volumes"] if "configMap" in v])' "$prod_yaml_dir/prod.yaml")
for s in "${prod_secret_names[@]}"; do
  podman secret create "$s" "$work/secret-$s.yaml" >/dev/null || fail "podman secret create $s"
  rm -f "$work/secret-$s.yaml"
done

# The quota store: redis-server on kube play's bridge address, password required, no disk.
if (exec 3<>"/dev/tcp/$gw/$redis_port") 2>/dev/null; then
  fail "$gw:$redis_port (the test quota store's port) is in use: a redis-server left by a killed run? (ss -ltnp)"
fi
redis-server --bind "$gw" --port "$redis_port" --requirepass "$redis_pass" --save '' --appendonly no \
  --daemonize yes --pidfile "$work/redis.pid" --logfile "$work/redis.log" --dir "$work" \
  || fail "redis-server on $gw:$redis_port"
rcli() { REDISCLI_AUTH=$redis_pass redis-cli --no-auth-warning -h "$gw" -p "$redis_port" "$@"; }
for _ in $(seq 50); do [ "$(rcli ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done
[ "$(rcli ping)" = PONG ] || { cat "$work/redis.log"; fail "redis-server does not answer on $gw:$redis_port"; }
redis_pid=$(cat "$work/redis.pid")
[[ "$(redis-cli -h "$gw" -p "$redis_port" ping 2>&1)" =~ NOAUTH ]] || fail "the test quota store answers without its password"
proved "quota store: redis-server $(redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/') (pid $redis_pid) on $gw:$redis_port (the host's address on $kube_net), password required (NOAUTH without it)"
[ "$(psql_drbgd 'SHOW ssl')" = on ] || fail "the test database does not answer over TLS on $gw:$pg_port"
# From the bridge's network without TLS: no pg_hba.conf line admits it.
plain=$(PGPASSWORD=$(cat "$pg_dir/password") "$pg_bin/psql" -X -A -t -q "postgresql://drbgd@$gw:$pg_port/drbgd?sslmode=disable" -c 'SELECT 1' 2>&1) \
  && fail "the test database admits a plaintext connection from $subnet"
[[ "$plain" == *"no pg_hba.conf entry"* ]] || fail "a plaintext connection was refused, but not by pg_hba.conf: $plain"
proved "tickets' database: PostgreSQL $(psql_drbgd 'SHOW server_version' | cut -d' ' -f1) on $gw:$pg_port, TLS verified (CA $pg_dir/ca.crt, name $gw); a plaintext connection from $subnet refused (no pg_hba.conf entry)"

(cd "$prod_yaml_dir" && podman kube play --build=false prod.yaml >"$work/prod-play.out" 2>&1) \
  || { cat "$work/prod-play.out"; fail "podman kube play of the prod overlay"; }
t1=$(date +%s%N)
status=000
for _ in $(seq 300); do
  status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:28444/readyz" || true)
  [ "$status" = 200 ] && break
  sleep 0.1
done
[ "$status" = 200 ] || { podman logs "$prod_ctr" | tail -20; fail "the prod pod's /readyz answered $status"; }
proved "kube play: prod pod $prod_pod up, /readyz polled to 200 on 127.0.0.1:28444 (plain HTTP admin port) after $((($(date +%s%N) - t1) / 1000000)) ms"

pid=$(podman inspect --format '{{.State.Pid}}' "$prod_ctr")
uids=$(awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/$pid/status")
[ "$uids" = "65532 65532 65532 65532" ] || fail "the prod pod's container runs as uids $uids"
[[ "$(awk '$5 == "/" {print $6}' "/proc/$pid/mountinfo")" =~ (^|,)ro(,|$) ]] || fail "the prod pod's root filesystem is writable"
for m in /etc/drbgd/tls /etc/drbgd/keys /etc/drbgd/quota /etc/drbgd/results /etc/drbgd/receipts; do
  [[ "$(awk -v m="$m" '$5 == m {print $6}' "/proc/$pid/mountinfo")" =~ (^|,)ro(,|$) ]] || fail "$m is not mounted read-only"
done
limits=$(python3 -c 'import sys, yaml; d = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Deployment"][0]; l = d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]; print(int(l["memory"].removesuffix("Mi")) << 20, int(float(l["cpu"]) * 1e9))' "$prod_yaml_dir/prod.yaml")
[ "$(podman inspect --format '{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}}' "$prod_ctr")" = "$limits" ] \
  || fail "the prod pod's memory/CPU limits are not the manifest's ($limits)"
tr '\0' '\n' <"/proc/$pid/environ" | grep -qx "DRBGD__QUOTA__URL=redis://$gw:$redis_port" \
  || fail "DRBGD__QUOTA__URL is not the Secret's url"
tr '\0' '\n' <"/proc/$pid/environ" | grep -qx "DRBGD__RESULTS__URL=postgresql://drbgd@$gw:$pg_port/drbgd?sslmode=require" \
  || fail "DRBGD__RESULTS__URL is not the Secret's url"
if tr '\0' '\n' <"/proc/$pid/environ" | grep -qF -e "$redis_pass" -e "$(cat "$pg_dir/password")"; then fail "a store's password is in the environment"; fi
proved "prod pod: uid/gid 65532, read-only root, the five Secrets mounted read-only at /etc/drbgd/{tls,keys,quota,results,receipts}, DRBGD__QUOTA__URL and DRBGD__RESULTS__URL the Secrets' urls (the passwords only in the mounted files), limits $limits"

api=https://127.0.0.1:28443
body=$(curl -sS --cacert "$work/ca.crt" -H "Authorization: Bearer $api_key" -D "$work/prod-token.h" -o "$work/prod-token.b" -w '%{http_code} %{ssl_verify_result} %{http_version}' "$api/token") \
  || fail "GET $api/token with the test key (TLS)"
read -r status verify http_version <<<"$body"
[ "$status" = 200 ] && [ "$verify" = 0 ] || fail "GET /token with the test key: HTTP $status, certificate verification $verify"
[[ "$(cat "$work/prod-token.b")" =~ ^[A-Za-z0-9_-]{43}$ ]] || fail "the prod pod's GET /token: not a 32-byte base64url token"
grep -qi '^cache-control: no-store' "$work/prod-token.h" || fail "the prod pod's GET /token: no Cache-Control: no-store"
ratelimit=$(grep -i '^ratelimit:' "$work/prod-token.h" | tr -d '\r') || fail "the prod pod's GET /token for the quota'd caller: no RateLimit field"
status=$(curl -sS --cacert "$work/ca.crt" -o "$work/prod-401.b" -w '%{http_code}' "$api/token") || fail "GET $api/token without a key"
[ "$status" = 401 ] || fail "GET /token without a key answered $status, not 401"
status=$(curl -sS --cacert "$work/ca.crt" -o /dev/null -w '%{http_code}' -H "Authorization: Bearer not-$api_key" "$api/token") || fail "GET $api/token with a wrong key"
[ "$status" = 401 ] || fail "GET /token with a wrong key answered $status, not 401"
if curl -s -o /dev/null "http://127.0.0.1:28443/token"; then fail "the API port answers plain HTTP"; fi
proved "prod pod over TLS (CA verified, HTTP/$http_version) on 127.0.0.1:28443: GET /token with the key 200, Cache-Control: no-store, $ratelimit; without a key 401, with a wrong key 401; plain HTTP refused"

grpc=(grpcurl -cacert "$work/ca.crt" -import-path proto -proto drbgd/v1/randomness.proto -d '{"bytes": 16, "format": "FORMAT_HEX"}')
reply=$("${grpc[@]}" -H "authorization: Bearer $api_key" 127.0.0.1:28443 drbgd.v1.RandomnessService/GetToken) \
  || fail "gRPC GetToken over TLS with the test key"
shape=$(python3 -c 'import json, re, sys; d = json.loads(sys.argv[1]); assert re.fullmatch("[0-9a-f]{32}", d["token"]), "token"; print({k: (f"<{len(v)} hex digits>" if k == "token" else v) for k, v in d.items()})' "$reply") \
  || fail "the prod pod's GetToken answered something else"
rc=0; "${grpc[@]}" 127.0.0.1:28443 drbgd.v1.RandomnessService/GetToken >"$work/prod-grpc401.out" 2>&1 || rc=$?
grep -q 'Code: Unauthenticated' "$work/prod-grpc401.out" || { cat "$work/prod-grpc401.out"; fail "GetToken without a key: not UNAUTHENTICATED (exit $rc)"; }
proved "prod pod: gRPC GetToken over TLS (h2 by ALPN, CA verified) with the key: $shape; without a key: Unauthenticated"

# Ten more requests of the caller: its bucket (100, refilled at 1/s) is then ten seconds or more
# from full, so its key stays in the store (it expires when the bucket would be full).
for _ in $(seq 10); do
  curl -fsS --cacert "$work/ca.crt" -H "Authorization: Bearer $api_key" -o /dev/null "$api/token" || fail "GET /token with the test key"
done
usage=$(curl -fsS --cacert "$work/ca.crt" -H "Authorization: Bearer $api_key" "$api/usage") || fail "GET /usage with the test key"
keys=$(rcli --scan --pattern 'drbgd-prod:*' | sort | xargs)
summary=$(python3 -c '
import json, sys
u = json.loads(sys.argv[1]); q = u["quota"]; r = q["requests"]
assert u["caller"] == "ci", u["caller"]
assert q["scope"] == "global", q["scope"]
assert r and r["per_second"] == 1 and r["burst"] == 100 and r["remaining"] <= 90, r
print("caller ci, scope", q["scope"], "requests", r)' "$usage") || fail "GET /usage: $usage"
[[ " $keys " == *" drbgd-prod:{ci}:requests "* && " $keys " == *" drbgd-prod:replicas "* ]] \
  || fail "the store holds not the ci caller's bucket and the replica set under drbgd-prod: ($keys)"
[ -z "$(rcli --scan | grep -v '^drbgd-prod:')" ] || fail "keys outside the prefix drbgd-prod in the store: $(rcli --scan | xargs)"
members=$(rcli zcard drbgd-prod:replicas)
[ "$members" = 1 ] || fail "the replica set holds $members members, not 1"
bucket="$(rcli hgetall 'drbgd-prod:{ci}:requests' | xargs), expires in $(rcli pttl 'drbgd-prod:{ci}:requests') ms"
proved "/usage: $summary; redis-cli --scan: $keys (bucket: $bucket; 1 replica), nothing outside the prefix"

# Tickets in the fleet's database, as prod keeps them: used once, kept, shown, and through a
# database outage (stopped and restarted under the running pod).
CI_API_KEY=$api_key python3 .ci/prod_tickets.py "$api" "$work/ca.crt" "$pg_dir" "$pg_tls_url" "$pg_bin/psql" "$prod_ctr" "$subnet" \
  || { podman logs "$prod_ctr" 2>&1 | tail -20; fail "the prod pod's tickets in PostgreSQL"; }
proved "prod pod: tickets and kept results in PostgreSQL on $gw:$pg_port (as above)"

# SIGTERM: the replica leaves the store's replica set and exits 0 within the grace period.
t1=$(date +%s%N)
podman stop -t "$grace" "$prod_ctr" >/dev/null 2>&1 || fail "podman stop of the prod pod's container"
took=$((($(date +%s%N) - t1) / 1000000))
code=$(podman inspect --format '{{.State.ExitCode}}' "$prod_ctr")
[ "$code" = 0 ] || { podman logs "$prod_ctr" | tail -20; fail "the prod pod's container exited $code after SIGTERM"; }
[ "$took" -lt $((grace * 1000)) ] || fail "SIGTERM took $took ms, terminationGracePeriodSeconds is $grace"
[ "$(rcli zcard drbgd-prod:replicas)" = 0 ] || fail "the stopped replica is still in the store's replica set"
proved "prod pod SIGTERM: exit 0 after $took ms (grace $grace s), and it left the store's replica set"

(cd "$prod_yaml_dir" && podman kube down prod.yaml >/dev/null 2>&1) || fail "podman kube down (prod)"
# kube down (4.3) leaves the volumes kube play made: the Secrets' (holding the test key and
# certificate) and the ConfigMap's go by name.
for v in $prod_cm_volumes; do podman volume rm -f "$v" >/dev/null; done
for s in "${prod_secret_names[@]}"; do podman secret rm "$s" >/dev/null && podman volume rm "$s" >/dev/null; done
kill "$redis_pid" && for _ in $(seq 50); do kill -0 "$redis_pid" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$redis_pid" 2>/dev/null || fail "redis-server $redis_pid did not stop"
bash scripts/postgres.sh stop "$pg_dir" || fail "PostgreSQL (the prod pod's) did not stop"
[ ! -e "$pg_dir/data/postmaster.pid" ] || fail "PostgreSQL (the prod pod's) left its pid file"
rm -rf "$pg_dir"
! podman pod exists "$prod_pod" || fail "pod $prod_pod left behind"
proved "prod part: $((SECONDS - t_prod)) s"
echo "container checks OK"
