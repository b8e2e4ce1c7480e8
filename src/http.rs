//! The HTTP API: the router, and the registry's rows it is built from. Every endpoint is a row
//! of the registry (the table in `route.rs`, read into rows by `http/registry.rs`), from which
//! the router, the guards, each front-end's way of reading credentials (`http/credentials.rs`)
//! and the OpenAPI document are derived. Handlers live in `http/*`, grouped by resource; they
//! only translate between HTTP and [`crate::service`]. In front of the router is the call
//! pipeline both transports share ([`crate::pipeline`]), which reads the rows through
//! `endpoint::Rows`.

mod beacon;
mod body;
mod credentials;
mod endpoint;
mod kms;
pub(crate) mod meta;
pub mod openapi;
mod params;
mod pollen;
mod random;
mod receipt;
mod registry;
mod respond;
mod values;
mod vault;

use axum::Router;
use tower::Layer;

use crate::error::ApiError;
use crate::pipeline::{Front, FrontLayer};
use crate::state::AppState;

pub use crate::route::{Endpoint, ROUTES};
pub use registry::Dialect;
pub use respond::{TEXT, X_DRBG_ALG, X_DRBG_BITS, served, wiped, wiped_joined};

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
    registry::build_matcher();
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

/// The API port's service: the router behind the call pipeline ([`crate::pipeline`]: observe,
/// authorize from the head, the server's cap, the caller's quota, run, record), which reads
/// each route's row from the registry, applied to the router as a whole so that the cap on
/// requests in progress is shared by every route and both transports.
pub fn service(state: &AppState, api: impl Into<Api>) -> ApiService {
    let Api { router, direct } = api.into();
    FrontLayer::new(state.clone(), &endpoint::Rows, direct).layer(router)
}

/// The type of [`service`].
pub type ApiService = Front<Router>;

async fn not_found() -> ApiError {
    ApiError::NotFound
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
