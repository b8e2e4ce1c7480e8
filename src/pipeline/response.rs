//! A response's header map, sized up front for every header the handlers and the pipeline add
//! to it: what every response of the API port is built on, errors included.

use axum::http::HeaderValue;
use axum::response::Response;

/// A response of `body` as `content_type`, its header map sized up front for every header
/// the handlers and the pipeline add: the content type, `X-Drbg-Alg`, `X-Drbg-Bits`,
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
