//! The API's GET endpoints, one per route of [`ROUTES`] (same order): each a plain function
//! from the request's head to its response, behind the caller admission of the route it
//! serves. Every GET endpoint answers without waiting (the generators are in-process; a large
//! output streams from its body), so none needs a future of its own.
//!
//! The router serves them (and a HEAD, which it answers without the body), and the front layer
//! calls them directly for a GET of a route's exact path: the same function, without the
//! router's path match, method dispatch, boxed service and boxed future, extractors and the
//! request extension that handed the admission on (measured in benches/README.md).

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::response::Response;
use axum::routing::{MethodRouter, get};

use super::admit::admitted;
use super::{meta, openapi, random, values};
use crate::callers::Route;
use crate::state::AppState;

/// Every API route template, in the order of [`Endpoint::ALL`] (also the bounded set of
/// `route` label values, with `unmatched`).
pub const ROUTES: &[&str] =
    &["/bits", "/bytes", "/token", "/nonce", "/uuid", "/int", "/algorithms", "/usage", "/openapi.json"];

/// A GET endpoint of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/bits`.
    Bits,
    /// `/bytes`.
    Bytes,
    /// `/token`.
    Token,
    /// `/nonce`.
    Nonce,
    /// `/uuid`.
    Uuid,
    /// `/int`.
    Int,
    /// `/algorithms` (metadata: a caller, no route permission).
    Algorithms,
    /// `/usage` (metadata).
    Usage,
    /// `/openapi.json` (public: the contract).
    OpenApi,
}

impl Endpoint {
    /// Every endpoint, in the order of [`ROUTES`].
    pub const ALL: [Endpoint; 9] = [
        Endpoint::Bits,
        Endpoint::Bytes,
        Endpoint::Token,
        Endpoint::Nonce,
        Endpoint::Uuid,
        Endpoint::Int,
        Endpoint::Algorithms,
        Endpoint::Usage,
        Endpoint::OpenApi,
    ];

    /// The endpoint at `index` of [`ROUTES`].
    pub fn at(index: usize) -> Option<Endpoint> {
        Endpoint::ALL.get(index).copied()
    }

    /// Its path.
    pub fn path(self) -> &'static str {
        ROUTES[self as usize]
    }

    /// The response to a GET of this endpoint (errors as problem+json).
    pub fn answer(self, state: &AppState, parts: &Parts) -> Response {
        let (s, p) = (state, parts);
        match self {
            Endpoint::Bits => admitted(s, Some(Route::Bits), p, |a| random::get_bits(s, a, p)),
            Endpoint::Bytes => admitted(s, Some(Route::Bytes), p, |a| random::get_bytes(s, a, p)),
            Endpoint::Token => admitted(s, Some(Route::Token), p, |a| values::token(s, a, p)),
            Endpoint::Nonce => admitted(s, Some(Route::Nonce), p, |a| values::nonce(s, a, p)),
            Endpoint::Uuid => admitted(s, Some(Route::Uuid), p, |a| values::uuid(s, a, p)),
            Endpoint::Int => admitted(s, Some(Route::Int), p, |a| values::int(s, a, p)),
            Endpoint::Algorithms => admitted(s, None, p, |_| Ok(meta::algorithms(s))),
            Endpoint::Usage => admitted(s, None, p, |a| Ok(meta::usage(a))),
            Endpoint::OpenApi => openapi::get(s),
        }
    }

    /// The endpoint as the router's method router for its path (`POST /bits` added).
    pub fn method_router(self) -> MethodRouter<AppState> {
        let method = get(move |State(state): State<AppState>, request: Request| {
            std::future::ready(self.answer(&state, &request.into_parts().0))
        });
        match self {
            Endpoint::Bits => method.post(random::post_bits),
            _ => method,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_and_routes_line_up() {
        assert_eq!(Endpoint::ALL.len(), ROUTES.len());
        for (i, e) in Endpoint::ALL.into_iter().enumerate() {
            assert_eq!(e as usize, i);
            assert_eq!(Endpoint::at(i), Some(e));
        }
        assert_eq!(Endpoint::at(ROUTES.len()), None);
        for r in Route::ALL {
            assert!(Endpoint::ALL.iter().any(|e| e.path() == r.path()), "{r:?}");
        }
    }
}
