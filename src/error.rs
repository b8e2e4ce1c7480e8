//! The API's one error type. Each variant documents its HTTP status; the gRPC mapping sits
//! beside the HTTP one so both transports say the same thing with the same machine code.
//! Bodies of 5xx errors reveal nothing internal.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::drbg::DrbgError;

/// An error answered to a client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// 400: a parameter is malformed or out of range.
    #[error("{detail}")]
    InvalidParameter {
        /// Stable machine code (`invalid_n`, `unknown_alg`, `unknown_format`, ...).
        code: &'static str,
        /// The offending parameter.
        param: String,
        /// A human sentence.
        detail: String,
    },
    /// 413: `n` exceeds the configured maximum.
    #[error("{detail}")]
    TooLarge {
        /// The offending parameter.
        param: &'static str,
        /// A human sentence.
        detail: String,
    },
    /// 401: missing or wrong bearer API key.
    #[error("a valid bearer API key is required")]
    Unauthorized,
    /// 403: the caller is known but its policy does not allow this (`route_not_allowed`,
    /// `alg_not_allowed`, `n_not_allowed`, `pr_not_allowed`), a verified client certificate
    /// names no caller and no key came with it (`unknown_client`), or a key and a certificate
    /// name different callers (`credentials_conflict`).
    #[error("{detail}")]
    Forbidden {
        /// Stable machine code.
        code: &'static str,
        /// A human sentence.
        detail: String,
    },
    /// 429 + Retry-After: over the caller's quota (`rate_limited`) or its share of the
    /// concurrency limit (`concurrency_limited`); nothing was generated.
    #[error("{detail}")]
    RateLimited {
        /// Stable machine code.
        code: &'static str,
        /// Whole seconds until a retry can pass.
        retry_after: u64,
        /// A human sentence.
        detail: String,
    },
    /// 503 + Retry-After: the concurrency limit is reached; the request was not started.
    #[error("the server is at its concurrency limit; retry shortly")]
    Overloaded,
    /// 503 + Retry-After: audit lines are on and the log sink is not keeping up, so the
    /// request was not started (it would have been served unaudited).
    #[error("the audit log is not keeping up; the request was not served")]
    AuditUnavailable,
    /// 503: the response was not ready within the request timeout.
    #[error("the request timed out")]
    Timeout,
    /// 503 + Retry-After: the OS entropy source failed, so no generator may serve.
    #[error("the entropy source is unavailable; no output is served from an unseeded generator")]
    EntropyUnavailable,
    /// 503: the generator failed its continuous health test and is being re-instantiated.
    #[error("the generator failed a health test; retry")]
    GeneratorFailed,
    /// 503: the service is starting or shutting down.
    #[error("the service is not ready")]
    NotReady,
    /// 499 (nginx's "client closed request"): the client went away while its request body was
    /// being read. Never seen by the client; it names the outcome in the records.
    #[error("the client closed the request before its body was received")]
    ClientClosed,
    /// 404: no such route.
    #[error("no such resource")]
    NotFound,
    /// 405: the route exists but not with this method.
    #[error("method not allowed on this resource")]
    MethodNotAllowed,
    /// 500: an internal fault (a caught panic). Nothing about it is revealed.
    #[error("internal error")]
    Internal,
}

impl ApiError {
    /// A 400 for parameter `param`.
    pub fn invalid(code: &'static str, param: &str, detail: impl Into<String>) -> Self {
        ApiError::InvalidParameter { code, param: param.to_string(), detail: detail.into() }
    }

    /// A 403 with `code`.
    pub fn forbidden(code: &'static str, detail: String) -> Self {
        ApiError::Forbidden { code, detail }
    }

    /// A 429 with `code`, retry after `retry_after` seconds.
    pub fn rate_limited(code: &'static str, retry_after: u64, detail: String) -> Self {
        ApiError::RateLimited { code, retry_after, detail }
    }

    /// The stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::InvalidParameter { code, .. }
            | ApiError::Forbidden { code, .. }
            | ApiError::RateLimited { code, .. } => code,
            ApiError::TooLarge { .. } => "n_too_large",
            ApiError::Unauthorized => "unauthorized",
            ApiError::Overloaded => "overloaded",
            ApiError::Timeout => "timeout",
            ApiError::AuditUnavailable => "audit_unavailable",
            ApiError::EntropyUnavailable => "entropy_unavailable",
            ApiError::GeneratorFailed => "generator_failed",
            ApiError::NotReady => "not_ready",
            ApiError::NotFound => "not_found",
            ApiError::ClientClosed => "client_closed",
            ApiError::MethodNotAllowed => "method_not_allowed",
            ApiError::Internal => "internal",
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::InvalidParameter { .. } => StatusCode::BAD_REQUEST,
            ApiError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden { .. } => StatusCode::FORBIDDEN,
            ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::ClientClosed => StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Overloaded
            | ApiError::AuditUnavailable
            | ApiError::Timeout
            | ApiError::EntropyUnavailable
            | ApiError::GeneratorFailed
            | ApiError::NotReady => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The gRPC status code for the same condition.
    pub fn grpc_code(&self) -> tonic::Code {
        match self {
            ApiError::InvalidParameter { .. } => tonic::Code::InvalidArgument,
            ApiError::TooLarge { .. } | ApiError::Overloaded | ApiError::RateLimited { .. } => {
                tonic::Code::ResourceExhausted
            }
            ApiError::Unauthorized => tonic::Code::Unauthenticated,
            ApiError::Forbidden { .. } => tonic::Code::PermissionDenied,
            ApiError::NotFound => tonic::Code::NotFound,
            ApiError::ClientClosed => tonic::Code::Cancelled,
            ApiError::MethodNotAllowed => tonic::Code::Unimplemented,
            ApiError::Internal => tonic::Code::Internal,
            ApiError::Timeout => tonic::Code::DeadlineExceeded,
            ApiError::EntropyUnavailable
            | ApiError::GeneratorFailed
            | ApiError::NotReady
            | ApiError::AuditUnavailable => tonic::Code::Unavailable,
        }
    }

    /// The offending parameter, if any.
    pub fn param(&self) -> Option<&str> {
        match self {
            ApiError::InvalidParameter { param, .. } => Some(param),
            ApiError::TooLarge { param, .. } => Some(param),
            _ => None,
        }
    }

    /// Seconds a client should wait before retrying (`Retry-After`), for 503s and 429s.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            ApiError::RateLimited { retry_after, .. } => Some(*retry_after),
            _ if self.status() == StatusCode::SERVICE_UNAVAILABLE => Some(1),
            _ => None,
        }
    }

    /// The gRPC status: message `"<code>: <sentence>"`, so the machine code survives, and
    /// the `retry-after` metadata (seconds) where HTTP would send `Retry-After`. The error
    /// rides along as the status's source, for the records of whoever renders it.
    pub fn to_status(&self) -> tonic::Status {
        let mut status = tonic::Status::new(self.grpc_code(), format!("{}: {self}", self.code()));
        if let Some(secs) = self.retry_after() {
            status.metadata_mut().insert("retry-after", secs.into());
        }
        status.set_source(std::sync::Arc::new(self.clone()));
        status
    }
}

/// A gRPC status code's name (`INVALID_ARGUMENT`): the bounded `code` label of gRPC
/// latencies, and the code recorded for statuses tonic answers itself.
pub fn grpc_code_name(code: tonic::Code) -> &'static str {
    match code {
        tonic::Code::Ok => "OK",
        tonic::Code::InvalidArgument => "INVALID_ARGUMENT",
        tonic::Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        tonic::Code::Unavailable => "UNAVAILABLE",
        tonic::Code::Unauthenticated => "UNAUTHENTICATED",
        tonic::Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        tonic::Code::Cancelled => "CANCELLED",
        tonic::Code::Internal => "INTERNAL",
        tonic::Code::PermissionDenied => "PERMISSION_DENIED",
        tonic::Code::NotFound => "NOT_FOUND",
        tonic::Code::Unimplemented => "UNIMPLEMENTED",
        tonic::Code::FailedPrecondition => "FAILED_PRECONDITION",
        tonic::Code::AlreadyExists => "ALREADY_EXISTS",
        tonic::Code::Aborted => "ABORTED",
        tonic::Code::OutOfRange => "OUT_OF_RANGE",
        tonic::Code::DataLoss => "DATA_LOSS",
        tonic::Code::Unknown => "UNKNOWN",
    }
}

impl From<DrbgError> for ApiError {
    fn from(e: DrbgError) -> Self {
        match e {
            DrbgError::EntropyUnavailable => ApiError::EntropyUnavailable,
            DrbgError::HealthTestFailed => ApiError::GeneratorFailed,
        }
    }
}

impl IntoResponse for ApiError {
    /// [`ApiError::render`], its code recorded for the front layer (see
    /// [`crate::http::Outcome`]).
    fn into_response(self) -> Response {
        let mut response = self.render();
        crate::http::Outcome::of(&mut response).code = Some(self.code());
        response
    }
}

impl ApiError {
    /// RFC 9457 `application/problem+json` with `code` and, where relevant, `param`.
    pub fn render(&self) -> Response {
        let status = self.status();
        // Serializing to memory fails only if a `Display` does, which none of ours does.
        let body = serde_json::to_vec(&Problem { error: self, status }).unwrap_or_default();
        // Room for every header an error gets: it has no X-Drbg-Alg or -Bits, and at most one of
        // Retry-After, WWW-Authenticate and (from the router) Allow; a 429 for the request rate
        // also gets the caller's two rate-limit fields (see `crate::http::response`).
        let extra = if matches!(self, ApiError::RateLimited { .. }) { 2 } else { 0 };
        let mut response = crate::http::response_with(body.into(), "application/problem+json", extra);
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
        map.serialize_entry("detail", &Collected(format_args!("{error}")))?;
        if let Some(param) = error.param() {
            map.serialize_entry("param", param)?;
        }
        map.serialize_entry("status", &status.as_u16())?;
        map.serialize_entry("title", status.canonical_reason().unwrap_or("error"))?;
        map.serialize_entry(
            "type",
            &Collected(format_args!("https://drbgd.invalid/problems/{}", error.code())),
        )?;
        map.end()
    }
}

/// A `Display` value serialized as a JSON string without a `String` in between.
struct Collected<'a>(std::fmt::Arguments<'a>);

impl serde::Serialize for Collected<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            ApiError::NotFound,
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
