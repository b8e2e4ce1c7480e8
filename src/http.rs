//! The HTTP API: the router and its one tower stack. Every endpoint is a row of the registry
//! (the table in `route.rs`, read into rows by `http/registry.rs`), from which the router, the
//! guards and the OpenAPI document are derived. Handlers live in `http/*`, grouped by
//! resource; they only translate between HTTP and [`crate::service`].

mod beacon;
mod deadline;
mod endpoint;
mod front;
mod kms;
pub(crate) mod meta;
pub mod openapi;
mod params;
mod pollen;
mod problem;
mod random;
mod receipt;
mod registry;
mod values;
mod vault;

use axum::Router;
use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;
use tower::Layer;

use crate::drbg::Algorithm;
use crate::error::ApiError;
use crate::state::AppState;

pub use crate::route::{Endpoint, ROUTES};
pub use registry::Dialect;

/// Response header naming the algorithm that produced the output.
pub const X_DRBG_ALG: HeaderName = HeaderName::from_static("x-drbg-alg");
/// Response header with the number of bits served.
pub const X_DRBG_BITS: HeaderName = HeaderName::from_static("x-drbg-bits");

/// The API: its router, and whether the front layer may call the router's GET endpoints
/// directly (see [`Endpoint`]); a router of any other making (a test's) is served as it is.
pub struct Api {
    router: Router,
    direct: bool,
}

impl From<Router> for Api {
    fn from(router: Router) -> Self {
        Api { router, direct: false }
    }
}

/// The API: the REST routes and the gRPC services. Callers are admitted in front of it
/// ([`service`]): every route but `/openapi.json`, `/keys`, `/verify`, the beacon's, gRPC
/// health and reflection needs one (`anonymous` when auth is off).
pub fn router(state: AppState, grpc: Router) -> Api {
    let mut router = Router::new();
    // Every row the configuration serves, at each of its paths.
    for endpoint in Endpoint::ALL {
        if endpoint.enabled(&state) {
            for path in endpoint.paths() {
                router = router.route(path, endpoint.method_router());
            }
        }
    }
    let router = router
        // A 405 as problem+json on every route (added after all of them); axum keeps Allow.
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
        // gRPC callers are admitted by the front layer too, by method (see `grpc_guard`).
        .merge(grpc)
        .fallback(not_found);
    Api { router, direct: true }
}

/// The API port's service: the router behind the call pipeline (`http/front.rs`: observe,
/// authorize from the head, the server's cap, the caller's quota, run, record), applied to
/// the router as a whole so that the cap on requests in progress is shared by every route
/// and both transports.
pub fn service(state: &AppState, api: impl Into<Api>) -> ApiService {
    let Api { router, direct } = api.into();
    front::FrontLayer::new(state.clone(), direct).layer(router)
}

/// The type of [`service`].
pub type ApiService = front::Front<Router>;

async fn not_found() -> ApiError {
    ApiError::NotFound
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

/// What a response served, for the metrics and the access log.
#[derive(Debug, Clone, Copy)]
pub struct ServedOutput {
    /// The generator.
    pub alg: Algorithm,
    /// Random bits served (0 where the count is not a number of bits, as for `/int`).
    pub n_bits: u64,
}

/// What the front layer records of a response (metrics, access and audit lines): what was
/// served, the error's code. Endpoints hand it over beside their response
/// ([`RecordedResponse`]); anything else that answers
/// (the router's HEAD and POST routes and its fallbacks, an error rendered below the front
/// layer, the front layer's own refusals) leaves it in the response's extensions. Never read
/// back from the headers.
#[derive(Debug, Clone, Default)]
pub struct Record {
    /// What was served (`None`: nothing generated).
    pub served: Option<ServedOutput>,
    /// The response's owner writes its access and audit lines when it ends (a gRPC stream,
    /// whose status is known only then), not the front layer at its headers.
    pub recorded_at_end: bool,
    /// The error's machine code.
    pub code: Option<&'static str>,
    /// The caller the endpoint named itself, after the head (a signed request's, whose
    /// signature covers its body), and when: the records and rate-limit fields name it.
    pub named: Option<(std::sync::Arc<crate::callers::Caller>, tokio::time::Instant)>,
    /// The serial of the signed receipt served, for the audit line.
    pub serial: Option<String>,
    /// The response's `Cache-Control` in place of `no-store` (and without `Pragma`): only the
    /// beacon's rounds and chain info set it, public values the same for every client, which
    /// proxies and clients may keep (a past round for ever, the latest until the next).
    pub cache_control: Option<HeaderValue>,
}

impl Record {
    /// The record of `response`, added if it has none yet.
    pub fn of<B>(response: &mut axum::http::Response<B>) -> &mut Record {
        response.extensions_mut().get_or_insert_default()
    }
}

/// An endpoint's response and its [`Record`], side by side: the front layer takes the record
/// of an endpoint it calls directly as it is, without a type map for it in the response
/// (measured: about 700 instructions a request); through the router, it goes into the
/// response's extensions.
#[derive(Debug)]
pub struct RecordedResponse {
    /// The response.
    pub response: Response,
    /// What it records.
    pub record: Record,
}

impl From<Response> for RecordedResponse {
    fn from(response: Response) -> Self {
        RecordedResponse { response, record: Record::default() }
    }
}

impl From<ApiError> for RecordedResponse {
    fn from(error: ApiError) -> Self {
        RecordedResponse {
            record: Record { code: Some(error.code()), ..Record::default() },
            response: error.render(),
        }
    }
}

impl axum::response::IntoResponse for RecordedResponse {
    fn into_response(self) -> Response {
        let mut response = self.response;
        response.extensions_mut().insert(self.record);
        response
    }
}

/// A response of `body` as `content_type`, its header map sized up front for every header
/// the handlers and the front layer add: the content type, `X-Drbg-Alg`, `X-Drbg-Bits`,
/// `Cache-Control`, `Pragma` and `X-Request-Id` (one allocation, small enough for the
/// allocator's thread cache; a map grown on the way rehashes its entries). A caller with a
/// rate quota gets two headers more (`RateLimit-Policy`, `RateLimit`) and its map grows once:
/// room for them on every response would take the map out of that cache for everyone.
pub fn response(body: axum::body::Body, content_type: &'static str) -> Response {
    response_with(body, content_type, 0)
}

/// [`response`] with room for `extra` headers more.
pub fn response_with(body: axum::body::Body, content_type: &'static str, extra: usize) -> Response {
    let mut response = Response::new(body);
    let mut headers = axum::http::HeaderMap::with_capacity(6 + extra);
    headers.insert(axum::http::header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    *response.headers_mut() = headers;
    response
}

/// A body of random output (or a secret) whose memory is wiped when the transport drops its
/// last reference to it. hyper's own write buffers, TLS records and the kernel's socket
/// buffers are copies out of reach (docs/security.md, "Where random output is wiped").
pub fn wiped(output: Vec<u8>) -> axum::body::Body {
    axum::body::Body::from(bytes::Bytes::from_owner(crate::service::wiped::Wiped(output)))
}

/// A body of `pieces` joined, holding random output, in a buffer sized exactly (one that grew
/// would leave a copy of the output behind, unwiped) and wiped as [`wiped`] says: the JSON
/// envelopes of the drop-in front-ends around their encoded output.
pub fn wiped_joined(pieces: &[&[u8]]) -> axum::body::Body {
    let mut joined = Vec::with_capacity(pieces.iter().map(|p| p.len()).sum());
    for piece in pieces {
        joined.extend_from_slice(piece);
    }
    wiped(joined)
}

/// The content type of plain-text values.
pub const TEXT: &str = "text/plain; charset=utf-8";

/// `X-Drbg-Bits`: the counts served most (a token, a nonce, a UUID, small `/bits`) as static
/// values, without the allocation a formatted value costs.
fn bits_value(n_bits: u64) -> HeaderValue {
    match n_bits {
        96 => HeaderValue::from_static("96"),
        122 => HeaderValue::from_static("122"),
        128 => HeaderValue::from_static("128"),
        256 => HeaderValue::from_static("256"),
        512 => HeaderValue::from_static("512"),
        1024 => HeaderValue::from_static("1024"),
        n => HeaderValue::from(n),
    }
}

/// The answer of a response that served `n_bits` from `alg`: the `X-Drbg-Alg` / `X-Drbg-Bits`
/// headers set, what was served recorded.
pub fn served(mut response: Response, alg: Algorithm, n_bits: u64) -> RecordedResponse {
    let h = response.headers_mut();
    h.insert(X_DRBG_ALG, HeaderValue::from_static(alg.name()));
    if n_bits > 0 {
        h.insert(X_DRBG_BITS, bits_value(n_bits));
    }
    RecordedResponse {
        response,
        record: Record { served: Some(ServedOutput { alg, n_bits }), ..Record::default() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_values_read_as_the_number() {
        for n in (1..5000).chain([u64::MAX]) {
            assert_eq!(bits_value(n), n.to_string().as_str(), "{n}");
        }
    }
}
