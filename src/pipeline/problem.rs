//! Errors as responses: RFC 9457 `application/problem+json` bodies with the error's machine
//! code, serialized straight from the error (no intermediate JSON tree), and the headers each
//! error calls for (`Retry-After`, `WWW-Authenticate`); and an error as a gRPC call's
//! trailers-only response. The pipeline answers its own refusals with these where the route's
//! row of the endpoint table names no dialect of its own.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

use super::response::response_with;
use crate::error::ApiError;

impl ApiError {
    /// RFC 9457 `application/problem+json` with `code` and, where relevant, `param`.
    pub fn render(&self) -> Response {
        let status = self.status();
        // Serializing to memory fails only if a `Display` does, which none of ours does.
        let body = serde_json::to_vec(&Problem { error: self, status }).unwrap_or_default();
        // Room for every header an error gets: it has no X-Drbg-Alg or -Bits, and at most one of
        // Retry-After, WWW-Authenticate and (from the router) Allow; a 429 for the request rate
        // also gets the caller's two rate-limit fields (see `response`).
        let extra = if matches!(self, ApiError::RateLimited { .. }) { 2 } else { 0 };
        let mut response = response_with(body.into(), "application/problem+json", extra);
        *response.status_mut() = status;
        let headers = response.headers_mut();
        if let Some(secs) = self.retry_after() {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if matches!(self, ApiError::Unauthorized) {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// `error` as a gRPC call's trailers-only response (`grpc-status`, `grpc-message` and, where
/// drbgd sends one, `retry-after`), as tonic writes the error's [`ApiError::to_status`].
pub fn grpc_error(error: &ApiError) -> Response {
    error.to_status().into_http::<axum::body::Body>()
}

/// The problem+json body of an error, serialized straight from it (no intermediate JSON tree
/// or strings): the members in alphabetical order, `param` only where there is one.
struct Problem<'a> {
    error: &'a ApiError,
    status: StatusCode,
}

impl serde::Serialize for Problem<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (error, status) = (self.error, self.status);
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("code", error.code())?;
        map.serialize_entry("detail", &DisplayAsString(format_args!("{error}")))?;
        if let Some(param) = error.param() {
            map.serialize_entry("param", param)?;
        }
        map.serialize_entry("status", &status.as_u16())?;
        map.serialize_entry("title", status.canonical_reason().unwrap_or("error"))?;
        map.serialize_entry(
            "type",
            &DisplayAsString(format_args!("https://drbgd.invalid/problems/{}", error.code())),
        )?;
        map.end()
    }
}

/// A `Display` value serialized as a JSON string without a `String` in between.
struct DisplayAsString<'a>(std::fmt::Arguments<'a>);

impl serde::Serialize for DisplayAsString<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::header;

    /// The body as the `serde_json::json!` tree it replaced wrote it.
    fn as_the_json_tree_wrote_it(error: &ApiError) -> String {
        let status = error.status();
        let mut body = serde_json::json!({
            "type": format!("https://drbgd.invalid/problems/{}", error.code()),
            "title": status.canonical_reason().unwrap_or("error"),
            "status": status.as_u16(),
            "code": error.code(),
            "detail": error.to_string(),
        });
        if let Some(param) = error.param() {
            body["param"] = serde_json::json!(param);
        }
        body.to_string()
    }

    #[tokio::test]
    async fn problem_bodies_are_byte_for_byte_the_json_trees() {
        let nasty = "q\"uote \\ back\u{1}ctl\n\t\u{7f}\u{2028} caf\u{e9} \u{1F600} </script>";
        let errors = [
            ApiError::invalid("unknown_parameter", nasty, format!("unknown parameter {nasty:?}; {nasty}")),
            ApiError::TooLarge { param: "n", detail: "n must be at most 100000000".into() },
            ApiError::Unauthorized,
            ApiError::forbidden("route_not_allowed", nasty.to_string()),
            ApiError::rate_limited("rate_limited", 3, nasty.to_string()),
            ApiError::Overloaded,
            ApiError::AuditUnavailable,
            ApiError::Timeout,
            ApiError::EntropyUnavailable,
            ApiError::GeneratorFailed,
            ApiError::NotReady,
            ApiError::SelfTestFailed { detail: nasty.to_string() },
            ApiError::NotFound,
            ApiError::TooEarly { retry_after: 7, detail: nasty.to_string() },
            ApiError::ClientClosed,
            ApiError::MethodNotAllowed,
            ApiError::Internal,
        ];
        for error in errors {
            let response = error.render();
            assert_eq!(response.status(), error.status());
            assert_eq!(response.headers()[header::CONTENT_TYPE], "application/problem+json");
            let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
            assert_eq!(std::str::from_utf8(&body).unwrap(), as_the_json_tree_wrote_it(&error), "{error:?}");
        }
    }
}
