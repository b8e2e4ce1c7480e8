//! JSON-RPC 2.0's framing of a RANDOM.ORG request: the body read strictly (a member named
//! twice, a shape past [`SHAPE`], is an invalid request), one request object with `jsonrpc:
//! "2.0"`, a method name, `params` and an `id` (none: a notification), nothing else. Release 4
//! serves no batches.

use serde_json::Value;

use super::error::RpcError;
use crate::receipts::strict_json::{self, Shape};

/// The shape a body may have: the envelope, `params`, a `random` object and a `userData` a
/// few levels deep; values enough for 10,000 values and 1,000 sequences' parameters.
pub const SHAPE: Shape = Shape { depth: 12, members: 64, values: 40_000 };

/// A request as JSON-RPC frames it.
pub struct Envelope {
    /// `None`: a notification.
    pub id: Option<Value>,
    /// The method's name.
    pub method: String,
    /// The parameters, if any.
    pub params: Option<Value>,
}

impl Envelope {
    /// The request in `body`, or the error to answer and the `id` to answer it with.
    ///
    /// # Errors
    /// −32700 for a body that is no JSON; −32600 for anything but one request object.
    pub fn read(body: &[u8]) -> Result<Envelope, (RpcError, Value)> {
        let value = strict_json::from_slice_shaped(body, SHAPE).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => (RpcError::invalid_request(&e.to_string()), Value::Null),
            _ => (RpcError::parse(), Value::Null),
        })?;
        let mut object = match value {
            Value::Object(object) => object,
            Value::Array(_) => {
                return Err((RpcError::invalid_request("batch requests are not served"), Value::Null));
            }
            _ => return Err((RpcError::invalid_request("a request is a JSON object"), Value::Null)),
        };
        let id = object.remove("id");
        let echoed = match &id {
            Some(v @ (Value::String(_) | Value::Number(_) | Value::Null)) => v.clone(),
            None => Value::Null,
            Some(_) => {
                return Err((
                    RpcError::invalid_request("id must be a string, a number or null"),
                    Value::Null,
                ));
            }
        };
        let invalid = |why: &str| Err((RpcError::invalid_request(why), echoed.clone()));
        if object.remove("jsonrpc").as_ref().and_then(Value::as_str) != Some("2.0") {
            return invalid("jsonrpc must be \"2.0\"");
        }
        let Some(Value::String(method)) = object.remove("method") else {
            return invalid("method must be a string");
        };
        let params = object.remove("params");
        if let Some(other) = object.keys().next() {
            let shown: String = other.chars().take(64).collect();
            return invalid(&format!("a request has no member {shown:?}"));
        }
        Ok(Envelope { id, method, params })
    }
}
