//! The admission layer of the API routes: names the caller (bearer key or verified client
//! certificate), applies its route policy, in-flight cap and request rate, hands the
//! [`Admission`] to the handler, and puts the rate-limit fields on the response. Metadata
//! routes (`/algorithms`, `/usage`) need no route permission and no request token (a caller
//! held at its rate can still read its usage), but take an in-flight place like any call.
//!
//! A typed tower layer, applied to each route with the route it guards named explicitly (a
//! path the policy does not know is never mistaken for a metadata route): no boxed future and
//! no cloned service per request, which an axum `from_fn` middleware costs.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::Request;
use axum::http::{HeaderName, header};
use axum::response::{IntoResponse, Response};
use pin_project_lite::pin_project;
use tower::{Layer, Service};

use super::Outcome;
use crate::callers::headers::{RATELIMIT, RATELIMIT_POLICY, current_field};
use crate::callers::{Admission, Caller, ClientIdentity, Denied, Route};
use crate::state::AppState;

/// The admitted caller of a request, for handlers.
pub type Admitted = axum::Extension<Admission>;

/// Builds [`Admit`] services for one route.
#[derive(Clone, Debug)]
pub struct AdmitLayer {
    state: AppState,
    /// The random-output route guarded, `None` for a metadata route (a caller and an
    /// in-flight place; no route permission, no request token).
    route: Option<Route>,
}

impl AdmitLayer {
    /// Admission to a random-output route, against the callers in `state` (reloadable).
    pub fn route(state: &AppState, route: Route) -> Self {
        AdmitLayer { state: state.clone(), route: Some(route) }
    }

    /// Admission to a metadata route (`/algorithms`, `/usage`).
    pub fn metadata(state: &AppState) -> Self {
        AdmitLayer { state: state.clone(), route: None }
    }
}

impl<S> Layer<S> for AdmitLayer {
    type Service = Admit<S>;

    fn layer(&self, inner: S) -> Admit<S> {
        Admit { inner, state: self.state.clone(), route: self.route }
    }
}

/// Admits or refuses (401/403/429 problem+json), then serves. See the module documentation.
#[derive(Clone, Debug)]
pub struct Admit<S> {
    inner: S,
    state: AppState,
    route: Option<Route>,
}

impl<S> Service<Request> for Admit<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = AdmitFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let bearer = request.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes());
        let client = request.extensions().get::<Arc<ClientIdentity>>().map(|c| &**c);
        match self.state.callers.admit(bearer, client, self.route) {
            Err(Denied { caller, error, at }) => {
                let mut response = error.into_response();
                match caller {
                    Some(caller) => finish(&mut response, &caller, at),
                    None => {
                        Outcome::of(&mut response).caller = Some(crate::callers::registry::UNKNOWN.into());
                    }
                }
                AdmitFuture { state: State::Refused { response: Some(response) } }
            }
            Ok(admission) => {
                // Held here until the response (headers) is ready: the caller's in-flight place.
                request.extensions_mut().insert(admission.clone());
                AdmitFuture { state: State::Admitted { future: self.inner.call(request), admission } }
            }
        }
    }
}

pin_project! {
    /// The response future of [`Admit`].
    pub struct AdmitFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Admitted { #[pin] future: F, admission: Admission },
        Refused { response: Option<Response> },
    }
}

impl<F: Future<Output = Result<Response, Infallible>>> Future for AdmitFuture<F> {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Admitted { future, admission } => {
                let Ok(mut response) = std::task::ready!(future.poll(cx));
                finish(&mut response, &admission.caller, admission.at);
                Poll::Ready(Ok(response))
            }
            StateProj::Refused { response } => {
                // Polled again after its end (a contract breach): an error, not a panic.
                Poll::Ready(Ok(response
                    .take()
                    .unwrap_or_else(|| crate::error::ApiError::Internal.into_response())))
            }
        }
    }
}

/// Names the caller for the log and adds the rate-limit fields (as of `at`, the admission
/// decision) if it has a rate quota.
fn finish(response: &mut Response, caller: &Caller, at: Instant) {
    if let Some(policy) = &caller.policy_field {
        let headers = response.headers_mut();
        headers.insert(HeaderName::from_static(RATELIMIT_POLICY), policy.clone());
        if let Some(now) = current_field(caller, at) {
            headers.insert(HeaderName::from_static(RATELIMIT), now);
        }
    }
    Outcome::of(response).caller = Some(caller.name_arc());
}
