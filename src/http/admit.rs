//! The admission layer of the API routes: names the caller (bearer key or verified client
//! certificate), applies its route policy, in-flight cap and request rate, hands the
//! [`Admission`] to the handler, and puts the rate-limit fields on the response. Metadata
//! routes (`/algorithms`, `/usage`) need a caller but no route permission and no quota.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::callers::headers::{RATELIMIT, RATELIMIT_POLICY, current_field};
use crate::callers::{Admission, Caller, ClientIdentity, Denied, Route};
use crate::state::AppState;

/// The caller's name, left in the response's extensions for the access log and audit line.
#[derive(Debug, Clone)]
pub struct CallerName(pub Arc<str>);

/// Middleware: admit or refuse (401/403/429 problem+json), then serve.
pub async fn admit(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().and_then(|m| Route::from_path(m.as_str()));
    let bearer = request.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes());
    let client = request.extensions().get::<Arc<ClientIdentity>>().map(|c| &**c);
    match state.callers.admit(bearer, client, route) {
        Err(Denied { caller, error, at }) => {
            let mut response = error.into_response();
            match caller {
                Some(caller) => finish(&mut response, &caller, at),
                None => {
                    response.extensions_mut().insert(CallerName(crate::callers::registry::UNKNOWN.into()));
                }
            }
            response
        }
        Ok(admission) => {
            // Held here until the response (headers) is ready: the caller's in-flight place.
            request.extensions_mut().insert(admission.clone());
            let mut response = next.run(request).await;
            finish(&mut response, &admission.caller, admission.at);
            response
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
    response.extensions_mut().insert(CallerName(caller.name_arc()));
}

/// The admitted caller of a request, for handlers.
pub type Admitted = axum::Extension<Admission>;
