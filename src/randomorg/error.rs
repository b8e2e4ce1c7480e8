//! RANDOM.ORG's errors as its JSON-RPC API (Release 4) returns them: `{"code", "message",
//! "data"}` inside a JSON-RPC response of HTTP 200. The codes are JSON-RPC's own (−32700 …
//! −32603), RANDOM.ORG's (100 … 500, 32000; its "Error Codes and Messages" page) and, for what
//! RANDOM.ORG has no code for, one of JSON-RPC's implementation-defined server errors (−32001
//! … −32099). Messages carry no trailing period, as RANDOM.ORG's live answers do; `data` holds
//! the message's arguments in order, or `null`.

use serde_json::{Value, json};

/// One JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The code.
    pub code: i64,
    /// The message, its arguments filled in.
    pub message: String,
    /// The arguments, or `null`.
    pub data: Value,
}

/// A parameter's number in a message, as RANDOM.ORG writes one (an integer without a
/// fraction).
fn num(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 { json!(value as i64) } else { json!(value) }
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>, data: Value) -> RpcError {
        RpcError { code, message: message.into(), data }
    }

    /// −32700: the body is not JSON.
    pub fn parse() -> RpcError {
        RpcError::new(-32700, "Parse error", Value::Null)
    }

    /// −32600: not a JSON-RPC 2.0 request object (a batch too: Release 4 serves none).
    pub fn invalid_request(why: &str) -> RpcError {
        RpcError::new(-32600, "Invalid Request", json!([why]))
    }

    /// −32601.
    pub fn method_not_found() -> RpcError {
        RpcError::new(-32601, "Method not found", Value::Null)
    }

    /// −32602: a required parameter missing, or one the method does not take (`name`).
    pub fn invalid_params(name: &str) -> RpcError {
        RpcError::new(-32602, "Invalid params", json!([name]))
    }

    /// −32603.
    pub fn internal() -> RpcError {
        RpcError::new(-32603, "Internal error", Value::Null)
    }

    /// −32001: the caller's short-window rate is spent (drbgd's quota; no RANDOM.ORG code):
    /// retry after `retry_ms`.
    pub fn rate_limited(retry_ms: u64) -> RpcError {
        RpcError::new(
            -32001,
            format!("Server error: this API key's request rate is spent; retry in {retry_ms} ms"),
            json!([retry_ms]),
        )
    }

    /// 101: drbgd cannot serve now (its generator, self-test, store or capacity: HTTP 503
    /// elsewhere); `why` says which.
    pub fn offline(why: &str) -> RpcError {
        RpcError::new(101, format!("Service offline; please try again later ({why})"), json!([why]))
    }

    /// 200: a parameter of the wrong type or form.
    pub fn malformed(name: &str) -> RpcError {
        RpcError::new(200, format!("Parameter '{name}' is malformed"), json!([name]))
    }

    /// 201: a parameter whose value is not one of those allowed.
    pub fn illegal(name: &str) -> RpcError {
        RpcError::new(201, format!("Parameter '{name}' has illegal value"), json!([name]))
    }

    /// 202: a number outside `[low, high]`.
    pub fn out_of_range(name: &str, low: f64, high: f64) -> RpcError {
        RpcError::new(
            202,
            format!("Parameter '{name}' is out of range; allowable values are [{low},{high}]"),
            json!([name, num(low), num(high)]),
        )
    }

    /// 203: an array or string longer than `max`.
    pub fn too_long(name: &str, len: usize, max: usize) -> RpcError {
        RpcError::new(
            203,
            format!("Parameter '{name}' has length {len}, which is too long; maximum length is {max}"),
            json!([name, len, max]),
        )
    }

    /// 204: an array or string shorter than `min`.
    pub fn too_short(name: &str, len: usize, min: usize) -> RpcError {
        RpcError::new(
            204,
            format!("Parameter '{name}' has length {len}, which is too short; minimum length is {min}"),
            json!([name, len, min]),
        )
    }

    /// 300: `low` above `high`.
    pub fn must_be_less(low: &str, high: &str) -> RpcError {
        RpcError::new(
            300,
            format!("Parameter '{low}' must be less than parameter '{high}'"),
            json!([low, high]),
        )
    }

    /// 301: more distinct values asked for than the domain holds.
    pub fn domain_too_small(requested: u64, domain: u64) -> RpcError {
        RpcError::new(
            301,
            format!(
                "You requested {requested} values without replacement but the domain you specified only contains {domain}"
            ),
            json!([requested, domain]),
        )
    }

    /// 303: no such resource (`getResult`'s serial).
    pub fn not_found(name: &str) -> RpcError {
        RpcError::new(303, format!("The resource identified by '{name}' was not found"), json!([name]))
    }

    /// 304: the result would be larger than `max` bits.
    pub fn too_big(size: u64, max: u64) -> RpcError {
        RpcError::new(
            304,
            format!("The resulting data's size would be {size}, which exceeds the maximum of {max}"),
            json!([size, max]),
        )
    }

    /// 400: no caller has this key.
    pub fn key_does_not_exist() -> RpcError {
        RpcError::new(400, "The API key you specified does not exist", Value::Null)
    }

    /// 402: the daily request allowance is spent.
    pub fn requests_spent(required: u64, left: u64) -> RpcError {
        RpcError::new(
            402,
            format!("The operation requires {required} requests, but the API key only has {left} left"),
            json!([required, left]),
        )
    }

    /// 403: the daily bit allowance is spent.
    pub fn bits_spent(required: u64, left: u64) -> RpcError {
        RpcError::new(
            403,
            format!("The operation requires {required} bits, but the API key only has {left} left"),
            json!([required, left]),
        )
    }

    /// 404: the key's caller may not call this method (its policy, or what this server serves).
    pub fn not_for_method(why: &str) -> RpcError {
        RpcError::new(
            404,
            format!("The API key you specified is not valid for the method you requested ({why})"),
            json!([why]),
        )
    }

    /// 420.
    pub fn no_such_ticket() -> RpcError {
        RpcError::new(420, "The ticket you specified does not exist", Value::Null)
    }

    /// 421.
    pub fn ticket_of_another_key() -> RpcError {
        RpcError::new(
            421,
            "The ticket you specified exists but is not for the API key you specified",
            Value::Null,
        )
    }

    /// 422: used once already, by this request or another.
    pub fn ticket_used() -> RpcError {
        RpcError::new(422, "The ticket you specified has already been used", Value::Null)
    }

    /// 423: the caller holds its most unused tickets.
    pub fn too_many_tickets(held: &str) -> RpcError {
        RpcError::new(
            423,
            format!(
                "The maximum number of singleton tickets available for your API key has been reached ({held})"
            ),
            json!([held]),
        )
    }

    /// 425: `licenseData` given (drbgd licenses nothing).
    pub fn license_data_not_allowed() -> RpcError {
        RpcError::new(425, "Your API key does not support the use of the licenseData parameter", Value::Null)
    }

    /// 426: a ticket revealed before it was used.
    pub fn ticket_unused() -> RpcError {
        RpcError::new(426, "The ticket you specified has not yet been used", Value::Null)
    }

    /// The error object, `{"code", "message", "data"}` in RANDOM.ORG's order.
    pub fn to_json(&self) -> String {
        let message = Value::String(self.message.clone());
        format!(r#"{{"code":{},"message":{message},"data":{}}}"#, self.code, self.data)
    }
}
