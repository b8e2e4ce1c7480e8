//! The call pipeline of the API port, for REST and gRPC alike: one typed tower layer
//! ([`PipelineLayer`], `pipeline/layer.rs`) in front of the router, below both transports. It
//! owns the types the endpoint table above it is written in (`pipeline/endpoint.rs`: the
//! HTTP layer writes the table, one [`Endpoint`] a row), and reads the rows as plain data: each
//! row's guard, with the front-end's own way of reading its caller's credentials, its charge,
//! the writer of its errors, and its handler, which it calls once for a GET answered at once.
//! It also owns what every endpoint reads its parameters with (`pipeline/params.rs`). For each
//! request, in this order:
//!
//! 1. **Observe** (`pipeline/observe.rs`): a request id (the caller's `X-Request-Id` or a new
//!    one), the route or gRPC method, the start time.
//! 2. **Authorize from the head** (`pipeline/admit.rs`): the guard of the route's row (or of
//!    the row listing the gRPC method) names the caller as the row's front-end reads
//!    credentials (a bearer key or client certificate, Vault's token, an AWS SigV4 signature's
//!    head) and checks its policy's routes, before any body is read and before the request takes any
//!    shared capacity. Unknown or refused callers are answered at once (401/403; gRPC
//!    `UNAUTHENTICATED` / `PERMISSION_DENIED`). `/openapi.json`, the receipts' `/keys` and
//!    `/verify`, the beacon's routes, gRPC health and reflection are public.
//! 3. **The server's cap** on requests in progress (`server.concurrency_limit`; public
//!    requests have a small cap of their own, `PUBLIC_CONCURRENCY`): past it, 503 `overloaded`
//!    with `Retry-After` at once, never a queue; the caller's quota untouched. With
//!    `log.audit` on and the log sink backlogged, 503 `audit_unavailable` instead. Every
//!    request without credentials (public routes, `anonymous` on an open route) first takes a
//!    place of its peer's (`server.peer_*`: 429 `peer_concurrency_limited` /
//!    `peer_rate_limited`), so one address cannot take the pool others share. A signed request
//!    (KMS's), whose proof is in its body, takes no shared place at all until it is verified:
//!    only its connection's one place for a signed body.
//! 4. **The caller's quota**: an in-flight place and a request token (429).
//! 5. **Run** (`pipeline/layer.rs`): a GET of a route that answers at once goes straight to its
//!    handler ([`Endpoint::answer`]: the one hand-over to the endpoint); the rest to the
//!    router (tonic for gRPC), with the
//!    admission in the request's extensions and the body under a read deadline
//!    (`server.body_read_timeout_ms`, `pipeline/deadline.rs`). The response's headers are due
//!    within `server.request_timeout_ms` (503 `timeout`; streamed bodies go on). Once the
//!    endpoint has parsed its parameters, the rest of the caller's policy (algorithm, size,
//!    prediction resistance, receipt: one function, `callers::Policy::check`) is applied to
//!    the draw by the service before anything is generated.
//! 6. **Record** (`pipeline/observe.rs`): metrics, one access line and (with `log.audit`) one
//!    audit line for every request, refused, shed, timed out, panicked and abandoned ones
//!    included, for gRPC as for REST, from the [`Report`] the endpoint hands over
//!    (`pipeline/report.rs`); `no-store` (but on the beacon's public rounds and chain info,
//!    which name their own `Cache-Control`), the request id and the caller's rate-limit fields
//!    (`pipeline/ratelimit.rs`) on every response.
//!
//! Panics anywhere below or in here become a 500 problem+json (a gRPC `INTERNAL`), never a
//! dropped connection. The cap is one atomic counter and the timer is armed only for a request
//! that is not answered on its first poll (tower's `load_shed` + `concurrency_limit` and
//! `timeout` allocate per request; measured in benches/README.md). The pipeline also owns what
//! every response of the port is built on: the header map sized for it (`pipeline/response.rs`)
//! and errors as problem+json or a gRPC status (`pipeline/problem.rs`).

mod admit;
mod deadline;
mod endpoint;
mod layer;
mod observe;
pub mod params;
mod problem;
mod ratelimit;
mod report;
mod response;

pub use admit::PeerGate;
pub use deadline::BodyTimeout;
pub use endpoint::{
    Availability, Charge, CheckHead, Credentials, Describe, Doc, Endpoint, Endpoints, GET, GET_POST,
    GRPC_SERVICE_PREFIX, Guard, Handler, MAX_ENDPOINTS, RandomFn, ReadKey, Render, Verb, bearer,
};
pub use layer::{Pipeline, PipelineFuture, PipelineLayer};
pub use observe::X_REQUEST_ID;
pub use problem::grpc_error;
pub use ratelimit::{RATELIMIT, RATELIMIT_POLICY, current_field, policy_field};
pub use report::{Answer, Report, Served};
pub use response::{response, response_with};
