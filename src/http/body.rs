//! Reading request bodies: a body's read error as the API answers it (too large, not received
//! within the body read timeout, the client gone), and the JSON parameters of every
//! random-output POST.

use axum::body::Body;

use crate::error::ApiError;
use crate::pipeline::BodyTimeout;
use crate::pipeline::params::Params;

/// Most bytes of a random-output POST's JSON body: its members with room to spare, and a
/// `user_data` of 1 KiB written with JSON escapes (up to six bytes a byte).
pub const MAX_JSON_BODY: usize = 8192;

/// The parameters of a random-output POST's JSON body (`{"n": 256, "alg": "...", ...}`), read
/// under the server's body deadline, at most [`MAX_JSON_BODY`] bytes of it.
///
/// # Errors
/// `invalid_body` (unreadable, too large, not JSON, not an object, a member of the wrong type),
/// a member's own code ([`Params::from_json`]); 499 when the client went away.
pub async fn json_params(body: Body) -> Result<Params<'static>, ApiError> {
    Params::from_json(&json_body(body).await?)
}

/// A POST's JSON body as it came, under the same deadline and cap as [`json_params`].
///
/// # Errors
/// As [`json_params`], but for the members' own codes.
pub async fn json_body(body: Body) -> Result<serde_json::Value, ApiError> {
    let bytes = axum::body::to_bytes(body, MAX_JSON_BODY).await.map_err(|e| body_error(&e, MAX_JSON_BODY))?;
    // A member given twice is refused, as a query parameter given twice is.
    crate::receipts::strict_json::from_slice(&bytes).map_err(|e| {
        ApiError::invalid("invalid_body", "body", format!("the body is not JSON of distinct members: {e}"))
    })
}

/// Whether a body could not be read because it is over its cap.
pub(super) fn too_large(error: &axum::Error) -> bool {
    std::iter::successors(Some(error as &(dyn std::error::Error + 'static)), |e| e.source())
        .any(|e| e.is::<http_body_util::LengthLimitError>())
}

/// The error of a body that could not be read: too large (over `limit` bytes), or not
/// received in time.
pub(super) fn body_error(error: &axum::Error, limit: usize) -> ApiError {
    if too_large(error) {
        return ApiError::invalid("invalid_body", "body", format!("the body must be at most {limit} bytes"));
    }
    if BodyTimeout::caused(error) {
        return ApiError::invalid(
            "invalid_body",
            "body",
            "the body was not received within the body read timeout",
        );
    }
    if client_went_away(error) {
        return ApiError::ClientClosed;
    }
    ApiError::invalid("invalid_body", "body", "the body could not be read")
}

/// Whether a body error is its client going away: an HTTP/2 stream it reset (CANCEL), or an
/// HTTP/1 connection it closed before the body's end. Anything else (a malformed chunk, a
/// protocol error) is the body's fault: 400.
fn client_went_away(error: &axum::Error) -> bool {
    std::iter::successors(Some(error as &(dyn std::error::Error + 'static)), |e| e.source()).any(|e| {
        e.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_incomplete_message)
            || e.downcast_ref::<h2::Error>().is_some_and(|h2| h2.reason() == Some(h2::Reason::CANCEL))
    })
}
