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
use axum::response::IntoResponse;
use axum::routing::{MethodRouter, get};

use super::admit::admitted;
use super::{Answer, meta, openapi, random, values};
use crate::callers::Route;
use crate::state::AppState;

/// Every API route template, in the order of [`Endpoint::ALL`] (also the bounded set of
/// `route` label values, with `unmatched`).
pub const ROUTES: &[&str] =
    &["/bits", "/bytes", "/token", "/nonce", "/uuid", "/int", "/algorithms", "/usage", "/openapi.json"];

/// Who may call an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// Anyone, unadmitted (the contract).
    Public,
    /// Any admitted caller: an in-flight place, no route permission, no request token
    /// (metadata).
    Caller,
    /// A caller admitted to this random-output route.
    Route(Route),
}

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

    /// Who may call it, named here for each endpoint (never derived from its path, so that no
    /// random-output endpoint can fall back to a laxer guard).
    pub fn guard(self) -> Guard {
        match self {
            Endpoint::Bits => Guard::Route(Route::Bits),
            Endpoint::Bytes => Guard::Route(Route::Bytes),
            Endpoint::Token => Guard::Route(Route::Token),
            Endpoint::Nonce => Guard::Route(Route::Nonce),
            Endpoint::Uuid => Guard::Route(Route::Uuid),
            Endpoint::Int => Guard::Route(Route::Int),
            Endpoint::Algorithms | Endpoint::Usage => Guard::Caller,
            Endpoint::OpenApi => Guard::Public,
        }
    }

    /// The response to a GET of this endpoint (errors as problem+json), its caller admitted
    /// first as [`Endpoint::guard`] says.
    pub fn answer(self, state: &AppState, parts: &Parts) -> Answer {
        let route = match self.guard() {
            Guard::Public => return openapi::get(state).into(),
            Guard::Caller => None,
            Guard::Route(route) => Some(route),
        };
        admitted(state, route, parts, |admission| match self {
            Endpoint::Bits => random::get_bits(state, admission, parts),
            Endpoint::Bytes => random::get_bytes(state, admission, parts),
            Endpoint::Token => values::token(state, admission, parts),
            Endpoint::Nonce => values::nonce(state, admission, parts),
            Endpoint::Uuid => values::uuid(state, admission, parts),
            Endpoint::Int => values::int(state, admission, parts),
            Endpoint::Algorithms => Ok(meta::algorithms(state).into()),
            Endpoint::Usage => Ok(meta::usage(admission).into()),
            // Never reached (public: answered above, unadmitted); here for an exhaustive match.
            Endpoint::OpenApi => Ok(openapi::get(state).into()),
        })
    }

    /// The endpoint as the router's method router for its path (`POST /bits` added).
    pub fn method_router(self) -> MethodRouter<AppState> {
        let method = get(move |State(state): State<AppState>, request: Request| {
            std::future::ready(self.answer(&state, &request.into_parts().0).into_response())
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
        // Each random-output endpoint is guarded by the route of its own path, and every
        // route has its endpoint; the others are metadata, but for the public contract.
        for e in Endpoint::ALL {
            match e.guard() {
                Guard::Route(route) => assert_eq!(route.path(), e.path()),
                Guard::Caller => assert!(matches!(e, Endpoint::Algorithms | Endpoint::Usage), "{e:?}"),
                Guard::Public => assert_eq!(e, Endpoint::OpenApi),
            }
        }
        for r in Route::ALL {
            assert!(Endpoint::ALL.iter().any(|e| e.guard() == Guard::Route(r)), "{r:?}");
        }
    }
}
