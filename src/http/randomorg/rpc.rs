//! What the door's methods share with its framing: the path, what a method answers, and
//! drbgd's errors as RANDOM.ORG's codes.

use axum::http::StatusCode;

use crate::error::ApiError;
use crate::pipeline::Served;
use crate::randomorg::RpcError;

/// The path.
pub const PATH: &str = "/json-rpc/4/invoke";

/// What a method answers.
pub type Done = Result<Reply, RpcError>;

/// A method's answer: its `result`'s bytes, and what the records say of it.
#[derive(Debug, Default)]
pub struct Reply {
    /// The `result` member.
    pub result: Vec<u8>,
    /// What it drew.
    pub served: Option<Served>,
    /// A signed result's serial number.
    pub serial: Option<String>,
    /// The ticket it used.
    pub ticket: Option<String>,
}

impl From<Vec<u8>> for Reply {
    fn from(result: Vec<u8>) -> Reply {
        Reply { result, ..Reply::default() }
    }
}

/// drbgd's error as RANDOM.ORG's code: a key no caller has 400, a policy's refusal 404, a rate
/// 429 −32001 (the time to wait), any 503 101 (offline: retry later).
pub fn rpc_error(error: &ApiError) -> RpcError {
    match error {
        ApiError::Unauthorized => RpcError::key_does_not_exist(),
        ApiError::Forbidden { .. } => RpcError::not_for_method(&error.to_string()),
        ApiError::RateLimited { .. } => RpcError::rate_limited(error.retry_after().unwrap_or(1) * 1000),
        ApiError::Internal => RpcError::internal(),
        _ if error.status() == StatusCode::SERVICE_UNAVAILABLE => RpcError::offline(error.code()),
        _ => RpcError::illegal(error.param().unwrap_or("params")),
    }
}
