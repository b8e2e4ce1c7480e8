//! drbgd: a networked randomness service.
//!
//! # Layout
//! - [`drbg`]: the generators, their seeding, reseeding, fork safety and the shard pool. No
//!   I/O except the OS entropy source; knows nothing of HTTP.
//! - [`beacon`]: a drand-compatible randomness beacon (BLS signatures of rounds by the clock,
//!   verifiable by drand's clients); no I/O, nothing of HTTP.
//! - [`service`]: a validated request becomes output (shared by HTTP and gRPC).
//! - [`receipts`]: signed receipts of output (keys, canonical JSON, Ed25519 signing and
//!   verification, the JWK set), for both transports and the command line.
//! - [`pipeline`]: the call pipeline both transports go through (observe, admit from the
//!   request's head, caps, deadlines, records), below them: it reads the endpoints through the
//!   registry's rows ([`pipeline::Endpoints`]) and names neither transport.
//! - [`http`]: the HTTP API (router, the registry's rows, handlers per resource, the drop-in
//!   front-ends for Vault, AWS KMS and Pollen clients, each with its way of reading credentials).
//! - [`grpc`]: the gRPC API, health and reflection, on the API port.
//! - [`admin`]: `/metrics`, `/livez`, `/readyz` on their own listener.
//! - [`metrics`]: the Prometheus series as one typed struct.
//! - [`memory`]: gives freed heap memory back to the OS after a burst.
//! - [`error`]: the API error enum and its HTTP / gRPC mappings.
//! - [`route`]: the endpoint registry's table, below everything that reads its names (policy
//!   routes, metric labels); `http` reads the rest of each row.
//! - [`callers`]: who is asking (bearer key, client certificate or AWS SigV4 signature), their
//!   policy and quota.
//! - [`peer_key`]: a peer as per-peer limits count it (the callers' limits, the beacon's
//!   waiters).
//! - [`config`]: layered, validated settings.
//! - [`app`], [`server`], [`shutdown`], [`state`]: wiring, the connection loop, signals, shared
//!   state.
//! - [`tls`]: optional rustls for the API listener, with client certificates (reloadable).
//! - [`tls_client`]: TLS as drbgd's clients speak it (`drbgd verify --jwks`, the PostgreSQL store).
//! - [`reload`]: reloads callers and TLS on SIGHUP and when their files change.
//! - [`vmgenid`]: reseeds every generator when the VM is cloned or restored from a snapshot.
//! - [`cli`], [`telemetry`]: the command line and logging.
//!
//! The source experiments (the DRBG study's CSV and figures, the rekey study) are a separate
//! binary in the workspace, `drbgd-study` (`study/`), so the server links none of their crates.

pub mod admin;
pub mod app;
pub mod beacon;
pub mod callers;
pub mod cli;
pub mod config;
pub mod drbg;
pub mod error;
pub mod grpc;
pub mod http;
pub mod memory;
pub mod metrics;
pub mod peer_key;
pub mod pipeline;
pub mod randomorg;
pub mod receipts;
pub mod reload;
pub mod route;
pub mod secret_file;
pub mod server;
pub mod service;
pub mod shutdown;
pub mod state;
pub mod telemetry;
pub mod tickets;
pub mod tls;
pub mod tls_client;
pub mod vmgenid;
