#!/usr/bin/env bash
# The container image, built and run for real with podman (issue 27, parts 1 and 2):
#
# 1. `podman build` of the Dockerfile as it is, with the registry's base images replaced by
#    local stand-ins of the same names built from Debian packages (no registry is reachable
#    here), tagged localhost/drbgd:ci. Then the image is run read-only: non-root (uid 65532),
#    no shell, /readyz 200 on a published port, real /token and /bits requests with
#    Cache-Control: no-store, the image's own HEALTHCHECK, SIGTERM drained to exit 0 within the
#    Deployment's terminationGracePeriodSeconds, `drbgd selftest`, and the image's size.
# 2. The dev overlay's Deployment + ConfigMap, through the test overlay .ci/podman-overlay
#    (image localhost/drbgd:ci, ports on 127.0.0.1, the httpGet liveness probe as the image's
#    exec healthcheck), run by `podman kube play`: /token over HTTP, GetToken over gRPC,
#    /readyz polled to 200, the manifests' uid and read-only root in force, and the ConfigMap's
#    shutdown delay seen on SIGTERM (/readyz 503 while the listeners still serve, then exit 0).
#
# Runs as root on Debian 12 with podman, runc, catatonit, uidmap and mmdebstrap installed
# (.ci/run installs them), kustomize and grpcurl on PATH, and the Rust toolchain that
# rust-toolchain.toml names. Idempotent: the stand-in base images are built once and reused
# (rebuilt when their recipe version below changes); the image build reuses podman's layer
# cache and, read-only through an overlay mount, the host's cargo registry.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
export CONTAINERS_CONF="$repo/.ci/containers.conf"

image=localhost/drbgd:ci
ctr=drbgd-ci
# The names the Dockerfile's FROM lines use (`rust:${RUST_VERSION}-slim-bookworm` is Docker
# Hub's docker.io/library/rust), and the recipe version of our stand-ins for them.
rust_version=$(sed -n 's/^ARG RUST_VERSION=//p' Dockerfile)
builder_base=docker.io/library/rust:${rust_version}-slim-bookworm
runtime_base=gcr.io/distroless/cc-debian12:nonroot
standin_recipe=1
pod_yaml_dir=$(mktemp -d)
work=$(mktemp -d)

fail() { echo "FAIL: $*" >&2; exit 1; }
proved() { echo "ok: $*"; }
cleanup() {
  set +e
  podman rm -f -t 0 "$ctr" >/dev/null 2>&1
  [ -f "$pod_yaml_dir/pod.yaml" ] && (cd "$pod_yaml_dir" && podman kube down pod.yaml >/dev/null 2>&1)
  [ -n "${pod:-}" ] && podman pod rm -f -t 0 "$pod" >/dev/null 2>&1
  [ -n "${secret:-}" ] && podman secret rm "$secret" >/dev/null 2>&1
  rm -rf "$pod_yaml_dir" "$work"
}
trap cleanup EXIT
for tool in podman mmdebstrap kustomize grpcurl curl; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (.ci/run installs it)"
done

# --- stand-in base images --------------------------------------------------------------------

standin_ok() {
  [ "$(podman image inspect --format '{{index .Labels "ci.drbgd.standin"}}' "$1" 2>/dev/null)" = "$standin_recipe" ]
}

# rust:<version>-slim-bookworm: a bookworm minbase with what the official image adds (gcc,
# libc6-dev, ca-certificates) and the machine's own toolchain, installed the official image's
# way: rustup in /usr/local/cargo/bin with its proxies, the toolchain in /usr/local/rustup
# under the name rustup-init gives it, as the default.
if standin_ok "$builder_base"; then
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
for base in "$builder_base" "$runtime_base"; do
  standin_ok "$base" || fail "stand-in $base was not built"
done

# --- 1. podman build of the Dockerfile as it is ------------------------------------------------

# --network host: `cargo install cargo-chef` reads the crate registry. The machine's CA bundle
# is mounted read-only for the build's RUN steps (a TLS-intercepting proxy's CA, where there is
# one); the host's cargo registry likewise, through an overlay (`:O`: writes are discarded), so
# dependencies are not downloaded again. Neither is in any layer of the image.
build_mounts=(-v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro)
[ -d "$HOME/.cargo/registry" ] && build_mounts+=(-v "$HOME/.cargo/registry:/usr/local/cargo/registry:O")
t0=$SECONDS
nice -n 19 podman build --pull=never --format docker --network host "${build_mounts[@]}" \
  -t "$image" . >"$work/build.log" 2>&1 || { tail -50 "$work/build.log"; fail "podman build of the Dockerfile"; }
grep -E '^\[[0-9]/[0-9]\] STEP|Using cache|Finished' "$work/build.log" | sed 's/^/  /' | cut -c1-120
proved "podman build --pull=never --format docker of the Dockerfile as it is: $image ($((SECONDS - t0)) s)"

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
echo "container checks OK"
