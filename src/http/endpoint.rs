//! Calling an endpoint's handler, as its registry row says (`http/registry.rs`): a plain
//! function from the request's head and its caller's admission to its response for the GETs
//! that answer at once, the same random-output handler for a POST's JSON body, and the
//! router's own method router for the rest. The front layer admits the caller a guard asks
//! for before anything else runs (see [`crate::pipeline`]). Every GET endpoint but the beacon's
//! answers without waiting (the generators are in-process; a large output streams from its
//! body), so none needs a future of its own; the beacon's may wait for the next round, and are
//! the router's futures ([`Endpoint::answers_at_once`]).
//!
//! The router serves them (and a HEAD, which it answers without the body), and the front layer
//! calls those that answer at once directly for a GET of a route's exact path: the same
//! function, without the router's path match, method dispatch, boxed service and boxed future,
//! extractors and the request extension that handed the admission on (measured in
//! benches/README.md). It reaches them through [`Rows`], the registry as the pipeline reads it
//! ([`Endpoints`]): each row's gate, limits, error dialect and this dispatch.

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::response::IntoResponse;
use axum::routing::{MethodRouter, get};

use super::body::json_params;
use super::params::{Accept, Param, Params};
use super::registry::{Handler, Identity, RandomFn, grpc_guard};
use crate::callers::Admission;
use crate::error::ApiError;
use crate::pipeline::{Endpoints, Entry, Gate, RecordedResponse};
use crate::route::Endpoint;
use crate::state::AppState;

impl Endpoint {
    /// The response to a GET of this endpoint (errors as problem+json), for a caller admitted as
    /// its guard says (`None` only for a public endpoint). Only for the endpoints that
    /// [answer at once](Endpoint::answers_at_once).
    pub fn answer(self, state: &AppState, admission: Option<&Admission>, parts: &Parts) -> RecordedResponse {
        let row = self.row();
        // The front layer admits before it calls; a guarded endpoint reached without an
        // admission is a wiring fault, never served.
        if row.identity != Identity::Public && admission.is_none() {
            return ApiError::Internal.into();
        }
        match (row.handler, admission) {
            (Handler::Get(of_state), _) => of_state(state).into(),
            (Handler::OfCaller(of_caller), Some(admission)) => of_caller(admission).into(),
            (Handler::Random(respond), Some(admission)) => {
                random_get(respond, row.receipt, state, admission, parts)
            }
            // A caller's handler on a public row (the registry's test refuses one), or the
            // router's own, which the front layer never calls here.
            (Handler::OfCaller(_) | Handler::Random(_), None) | (Handler::Router(_), _) => {
                ApiError::Internal.into()
            }
        }
    }

    /// The endpoint as the router's method router for its paths: a GET (and HEAD) of an
    /// endpoint that answers at once, with a POST of a JSON body for a random-output one; the
    /// row's own method router for the rest. The admission the front layer made travels in the
    /// request's extensions.
    pub fn method_router(self) -> MethodRouter<AppState> {
        let handler = self.row().handler;
        if let Handler::Router(router) = handler {
            return router();
        }
        let method = get(move |State(state): State<AppState>, request: Request| {
            let (parts, _body) = request.into_parts();
            let admission = parts.extensions.get::<Admission>();
            std::future::ready(self.answer(&state, admission, &parts).into_response())
        });
        match handler {
            Handler::Random(respond) => method
                .post(move |State(state): State<AppState>, request: Request| post(respond, state, request)),
            Handler::Get(_) | Handler::OfCaller(_) | Handler::Router(_) => method,
        }
    }
}

/// The registry as the call pipeline reads it: for each row, its gate (the identity's
/// credentials as its front-end reads them, the policy route), its limits, the writer of its
/// dialect, and its handler for the GETs it answers at once.
#[derive(Debug)]
pub(crate) struct Rows;

impl Endpoints for Rows {
    fn served(&self, path: &str, state: &AppState) -> Option<Endpoint> {
        Endpoint::of_path(path).filter(|e| e.enabled(state))
    }

    fn entry(&self, endpoint: Endpoint) -> Entry {
        let row = endpoint.row();
        Entry {
            gate: endpoint.guard().gate(),
            limits: row.limits,
            errors: row.errors.renderer(),
            direct: endpoint.serves_get() && endpoint.answers_at_once(),
        }
    }

    fn grpc_method(&self, path: &str) -> Option<(&'static str, Gate)> {
        grpc_guard(path).map(|(name, guard)| (name, guard.gate()))
    }

    fn answer(
        &self,
        endpoint: Endpoint,
        state: &AppState,
        admission: Option<&Admission>,
        parts: &Parts,
    ) -> RecordedResponse {
        endpoint.answer(state, admission, parts)
    }
}

/// A GET of a random-output endpoint: its parameters from the query string.
fn random_get(
    respond: RandomFn,
    receipt: bool,
    state: &AppState,
    admission: &Admission,
    parts: &Parts,
) -> RecordedResponse {
    let answer = Params::of(parts).and_then(|params| {
        // HEAD leaves out the body: a receipt would be signed and audited unseen.
        if receipt && parts.method == axum::http::Method::HEAD && params.flag(Param::Receipt)? {
            return Err(ApiError::invalid(
                "receipt_on_head",
                "receipt",
                "a receipt is in the body, which HEAD leaves out: ask with GET",
            ));
        }
        respond(state, admission, Accept::of(&parts.headers), &params)
    });
    answer.unwrap_or_else(RecordedResponse::from)
}

/// A POST of a random-output endpoint: its parameters as a JSON body (`{"n": 256, ...}`),
/// read once the caller was admitted from the head (the front layer), under the server's
/// body deadline, at most [`super::body::MAX_JSON_BODY`] bytes of it.
async fn post(respond: RandomFn, state: AppState, request: Request) -> axum::response::Response {
    let (parts, body) = request.into_parts();
    let Some(admission) = parts.extensions.get::<Admission>().cloned() else {
        return RecordedResponse::from(ApiError::Internal).into_response();
    };
    let answer = match json_params(body).await {
        Ok(params) => respond(&state, &admission, Accept::of(&parts.headers), &params),
        Err(e) => Err(e),
    };
    answer.unwrap_or_else(RecordedResponse::from).into_response()
}
