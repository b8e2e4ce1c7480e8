//! Admission to the API routes: names the caller (bearer key or verified client certificate),
//! applies its route policy, in-flight cap and request rate, and puts the rate-limit fields on
//! the response. Metadata routes (`/algorithms`, `/usage`) need no route permission and no
//! request token (a caller held at its rate can still read its usage), but take an in-flight
//! place like any call.
//!
//! Plain functions over the request's head, called by each endpoint with the route it guards
//! named explicitly (a path the policy does not know is never mistaken for a metadata route):
//! no layer, no boxed future, and no request extension to hand the admission on.

use std::sync::Arc;
use std::time::Instant;

use axum::http::request::Parts;
use axum::http::{HeaderName, header};

use super::Answer;
use crate::callers::headers::{RATELIMIT, RATELIMIT_POLICY, current_field};
use crate::callers::{Admission, Caller, ClientIdentity, Denied, Route};
use crate::error::ApiError;
use crate::state::AppState;

/// Answers a request of `parts` with `answer` if its caller is admitted to `route` (`None`:
/// a metadata route), else with the refusal. The caller's in-flight place is held until
/// `answer` returns (a streamed body takes its own clone of the admission).
pub fn admitted(
    state: &AppState,
    route: Option<Route>,
    parts: &Parts,
    answer: impl FnOnce(&Admission) -> Result<Answer, ApiError>,
) -> Answer {
    match admit(state, route, parts) {
        Ok(admission) => finish(answer(&admission).unwrap_or_else(Answer::from), &admission),
        Err(denied) => refusal(denied),
    }
}

/// Admits the caller of a request of `parts` to `route` (`None`: a metadata route).
///
/// # Errors
/// [`Denied`]: answer it with [`refusal`].
pub fn admit(state: &AppState, route: Option<Route>, parts: &Parts) -> Result<Admission, Denied> {
    let bearer = parts.headers.get(header::AUTHORIZATION).map(|v| v.as_bytes());
    let client = parts.extensions.get::<Arc<ClientIdentity>>().map(|c| &**c);
    state.callers.admit(bearer, client, route)
}

/// The answer to a refused request: 401/403/429 problem+json, with the caller named for the
/// records (`unknown` when the credentials named none) and its rate-limit fields.
pub fn refusal(Denied { caller, error, at }: Denied) -> Answer {
    let mut answer = Answer::from(error);
    match caller {
        Some(caller) => name(&mut answer, &caller, at),
        None => answer.outcome.caller = Some(crate::callers::registry::UNKNOWN.into()),
    }
    answer
}

/// The answer to an admitted request, its caller named and its rate-limit fields added.
pub fn finish(mut answer: Answer, admission: &Admission) -> Answer {
    name(&mut answer, &admission.caller, admission.at);
    answer
}

/// Names the caller for the log and adds the rate-limit fields (as of `at`, the admission
/// decision) if it has a rate quota.
fn name(answer: &mut Answer, caller: &Caller, at: Instant) {
    if let Some(policy) = &caller.policy_field {
        let headers = answer.response.headers_mut();
        headers.insert(HeaderName::from_static(RATELIMIT_POLICY), policy.clone());
        if let Some(now) = current_field(caller, at) {
            headers.insert(HeaderName::from_static(RATELIMIT), now);
        }
    }
    answer.outcome.caller = Some(caller.name_arc());
}
