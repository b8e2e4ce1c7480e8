//! The API's one error type. Each variant documents its HTTP status and its gRPC code, so both
//! transports say the same thing with the same machine code. Its HTTP body (problem+json) is
//! rendered by the HTTP module; bodies of 5xx errors reveal nothing internal.

use axum::http::StatusCode;

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
    /// 400: `n` exceeds the configured maximum (a query asking for too much output is a bad
    /// request, not a request whose own content is too large: not 413).
    #[error("{detail}")]
    TooLarge {
        /// The offending parameter.
        param: &'static str,
        /// A human sentence.
        detail: String,
    },
    /// 413: a request body over its route's cap (`body_too_large`; `POST /verify`, whose cap
    /// is the largest receipt this server issues).
    #[error("the body must be at most {limit} bytes")]
    BodyTooLarge {
        /// The cap, in bytes.
        limit: usize,
    },
    /// 401: missing or wrong bearer API key.
    #[error("a valid bearer API key is required")]
    Unauthorized,
    /// 401: a signed request (the KMS front-end's AWS SigV4) whose signature is missing
    /// (`missing_signature`), malformed (`incomplete_signature`), too old or too new
    /// (`signature_expired`), wrong (`invalid_signature`), or by an unknown access key
    /// (`unrecognized_client`).
    #[error("{detail}")]
    BadSignature {
        /// Stable machine code.
        code: &'static str,
        /// A human sentence.
        detail: String,
    },
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
    /// 503 + Retry-After: the shared quota store cannot be reached and
    /// `quota.on_store_failure = "closed"`; the quota'd request was not started.
    #[error("the quota store is unavailable; the request was not served")]
    QuotaStoreUnavailable,
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
    /// 503 (`selftest_failed`): an algorithm failed a start-up self-test, so this process does
    /// not serve it (a request for it) or is never ready (`/readyz`, which names the algorithms
    /// and tests).
    #[error("{detail}")]
    SelfTestFailed {
        /// A human sentence.
        detail: String,
    },
    /// 499 (nginx's "client closed request"): the client went away while its request body was
    /// being read (an HTTP/2 stream it reset, an HTTP/1 connection it closed mid-body). It
    /// names the outcome in the records; a client that only half-closed its connection may
    /// still read it.
    #[error("the client closed the request before its body was received")]
    ClientClosed,
    /// 425 Too Early + Retry-After: a beacon round that is not due and further ahead than the
    /// next one (which is waited for), or any round before the chain's genesis (`too_early`).
    #[error("{detail}")]
    TooEarly {
        /// Whole seconds until it is due.
        retry_after: u64,
        /// A human sentence.
        detail: String,
    },
    /// 404: no such route.
    #[error("no such resource")]
    NotFound,
    /// 404 with a code of its own: no such ticket, no such kept result (the route exists).
    #[error("{detail}")]
    Missing {
        /// The stable machine code.
        code: &'static str,
        /// A human sentence.
        detail: String,
    },
    /// 409: the request conflicts with what is stored (a ticket used by another request, a
    /// reveal of a ticket not used yet).
    #[error("{detail}")]
    Conflict {
        /// The stable machine code.
        code: &'static str,
        /// A human sentence.
        detail: String,
    },
    /// 410: it existed and is gone for good (a ticket past its expiry).
    #[error("{detail}")]
    Gone {
        /// The stable machine code.
        code: &'static str,
        /// A human sentence.
        detail: String,
    },
    /// 503: the beacon follows a drand network and has no verified copy of what is asked: the
    /// network's chain (no upstream has answered yet), any round yet, or an old round no
    /// upstream gave verified.
    #[error(
        "the followed drand network's round is not available here yet (no upstream gave a verified copy)"
    )]
    BeaconUnavailable,
    /// 503: the store that must hold a result (the tickets') could not; nothing was kept.
    #[error("the store that keeps tickets and results is unavailable; nothing was kept")]
    StoreUnavailable,
    /// 503: the store that must hold a result holds `results.max_bytes` already; nothing was
    /// kept.
    #[error("the store that keeps tickets and results is full ([results] max_bytes); nothing was kept")]
    StoreFull,
    /// 503: the store that must hold a result did not say whether it kept this one (its answer
    /// was lost, and it could not be asked again in time): the same request again answers the
    /// kept result, or draws if none was kept.
    #[error(
        "the store that keeps tickets and results did not say whether this draw was kept: send the same request \
         again (it answers the kept draw, or draws if none was kept)"
    )]
    StoreOutcomeUnknown,
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
            | ApiError::Missing { code, .. }
            | ApiError::Conflict { code, .. }
            | ApiError::Gone { code, .. }
            | ApiError::Forbidden { code, .. }
            | ApiError::BadSignature { code, .. }
            | ApiError::RateLimited { code, .. } => code,
            ApiError::TooLarge { .. } => "n_too_large",
            ApiError::BodyTooLarge { .. } => "body_too_large",
            ApiError::Unauthorized => "unauthorized",
            ApiError::Overloaded => "overloaded",
            ApiError::Timeout => "timeout",
            ApiError::AuditUnavailable => "audit_unavailable",
            ApiError::QuotaStoreUnavailable => "quota_store_unavailable",
            ApiError::StoreUnavailable => "store_unavailable",
            ApiError::StoreFull => "store_full",
            ApiError::StoreOutcomeUnknown => "store_outcome_unknown",
            ApiError::BeaconUnavailable => "beacon_unavailable",
            ApiError::EntropyUnavailable => "entropy_unavailable",
            ApiError::GeneratorFailed => "generator_failed",
            ApiError::NotReady => "not_ready",
            ApiError::SelfTestFailed { .. } => "selftest_failed",
            ApiError::NotFound => "not_found",
            ApiError::TooEarly { .. } => "too_early",
            ApiError::ClientClosed => "client_closed",
            ApiError::MethodNotAllowed => "method_not_allowed",
            ApiError::Internal => "internal",
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::InvalidParameter { .. } => StatusCode::BAD_REQUEST,
            ApiError::TooLarge { .. } => StatusCode::BAD_REQUEST,
            ApiError::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Unauthorized | ApiError::BadSignature { .. } => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden { .. } => StatusCode::FORBIDDEN,
            ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::NotFound | ApiError::Missing { .. } => StatusCode::NOT_FOUND,
            ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::Gone { .. } => StatusCode::GONE,
            ApiError::TooEarly { .. } => StatusCode::TOO_EARLY,
            ApiError::ClientClosed => StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Overloaded
            | ApiError::AuditUnavailable
            | ApiError::QuotaStoreUnavailable
            | ApiError::StoreUnavailable
            | ApiError::StoreFull
            | ApiError::StoreOutcomeUnknown
            | ApiError::BeaconUnavailable
            | ApiError::Timeout
            | ApiError::EntropyUnavailable
            | ApiError::GeneratorFailed
            | ApiError::NotReady
            | ApiError::SelfTestFailed { .. } => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The gRPC status code for the same condition.
    pub fn grpc_code(&self) -> tonic::Code {
        match self {
            ApiError::InvalidParameter { .. } | ApiError::TooLarge { .. } => tonic::Code::InvalidArgument,
            // (REST only: gRPC's own message cap answers OUT_OF_RANGE too.)
            ApiError::BodyTooLarge { .. } => tonic::Code::OutOfRange,
            ApiError::Overloaded | ApiError::RateLimited { .. } => tonic::Code::ResourceExhausted,
            ApiError::Unauthorized | ApiError::BadSignature { .. } => tonic::Code::Unauthenticated,
            ApiError::Forbidden { .. } => tonic::Code::PermissionDenied,
            ApiError::NotFound | ApiError::Missing { .. } => tonic::Code::NotFound,
            ApiError::Conflict { .. } => tonic::Code::AlreadyExists,
            ApiError::TooEarly { .. } | ApiError::Gone { .. } => tonic::Code::FailedPrecondition,
            ApiError::ClientClosed => tonic::Code::Cancelled,
            ApiError::MethodNotAllowed => tonic::Code::Unimplemented,
            ApiError::Internal => tonic::Code::Internal,
            ApiError::Timeout => tonic::Code::DeadlineExceeded,
            ApiError::EntropyUnavailable
            | ApiError::GeneratorFailed
            | ApiError::NotReady
            | ApiError::SelfTestFailed { .. }
            | ApiError::AuditUnavailable
            | ApiError::StoreUnavailable
            | ApiError::StoreFull
            | ApiError::StoreOutcomeUnknown
            | ApiError::BeaconUnavailable
            | ApiError::QuotaStoreUnavailable => tonic::Code::Unavailable,
        }
    }

    /// The offending parameter, if any.
    pub fn param(&self) -> Option<&str> {
        match self {
            ApiError::InvalidParameter { param, .. } => Some(param),
            ApiError::TooLarge { param, .. } => Some(param),
            ApiError::BodyTooLarge { .. } => Some("body"),
            _ => None,
        }
    }

    /// Seconds a client should wait before retrying (`Retry-After`), for 503s, 429s and 425s.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            ApiError::RateLimited { retry_after, .. } | ApiError::TooEarly { retry_after, .. } => {
                Some(*retry_after)
            }
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
            DrbgError::SelfTestFailed(alg) => ApiError::SelfTestFailed {
                detail: format!("{alg} failed a start-up self-test and is not served by this server"),
            },
        }
    }
}
