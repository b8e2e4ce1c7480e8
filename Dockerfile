# syntax=docker/dockerfile:1
# drbgd container image: multi-stage, dependencies cached apart from the source, minimal
# non-root runtime. Build: docker build -t drbgd:0.1.0 .
#
# CPU features: the binary is built for the default x86-64 target and picks AES-NI / VAES /
# AVX2 / AVX-512 paths at run time, so the image runs on any x86-64 server.

# Base images: pinned by tag only for now. Pin each by digest with the tag kept in a comment, e.g.
#   FROM rust:1.95.0-slim-bookworm@sha256:<digest> AS chef   # rust:1.95.0-slim-bookworm
# taking the multi-arch index digest from `docker buildx imagetools inspect <image:tag>` (or
# `crane digest <image:tag>`); none was reachable where this file was last edited.
ARG RUST_VERSION=1.95.0

FROM rust:${RUST_VERSION}-slim-bookworm AS chef
RUN cargo install cargo-chef --locked --version 0.1.78
WORKDIR /src

FROM chef AS planner
COPY . .
RUN cargo chef prepare --recipe-path recipe.json

FROM chef AS builder
COPY --from=planner /src/recipe.json recipe.json
# The build's rustflags (the chacha20 crate's AVX-512 backend) apply to the dependencies too.
COPY .cargo .cargo
# Dependencies only: this layer is reused until Cargo.lock changes.
RUN cargo chef cook --release --locked --recipe-path recipe.json
COPY . .
# CI's release build is this command and this path (.ci/run; .ci/container.sh fails when they
# differ, and when the cook's profile is not the build's), since CI runs the runtime stage
# below on the binary it built, not on this stage's.
RUN cargo build --release --locked --bin drbgd \
    && cp target/release/drbgd /drbgd

# distroless/cc: glibc and libgcc only, no shell, non-root (uid 65532). The last stage; CI
# (.ci/container.sh --prebuilt) builds it as it is but for the line `COPY --from=builder
# /drbgd /drbgd`, which takes CI's release binary from the build context instead; so it keeps
# that line as it is and copies nothing else from another stage.
FROM gcr.io/distroless/cc-debian12:nonroot AS runtime
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="drbgd" \
      org.opencontainers.image.description="Randomness service: sharded, fork-safe, self-testing DRBGs over HTTP and gRPC" \
      org.opencontainers.image.source="https://example.invalid/drbgd" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="MIT OR Apache-2.0"
COPY --from=builder /drbgd /drbgd
COPY config/default.toml /etc/drbgd/default.toml
USER 65532:65532
# In a container the listeners must face the pod network; everything else is the embedded
# default (identical to /etc/drbgd/default.toml, shipped for reference and overlays).
ENV DRBGD__SERVER__LISTEN=0.0.0.0:8080 \
    DRBGD__SERVER__ADMIN_LISTEN=0.0.0.0:8081 \
    DRBGD__LOG__FORMAT=json
EXPOSE 8080 8081
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["/drbgd", "healthcheck"]
ENTRYPOINT ["/drbgd"]
CMD ["serve"]
