//! The rate-limit fields of draft-ietf-httpapi-ratelimit-headers-09 (March 2025): every
//! response to a caller with a rate quota carries `RateLimit-Policy` (the policies: fixed) and
//! `RateLimit` (what is left now). Both are Structured Field lists with one item per policy:
//!
//! ```text
//! RateLimit-Policy: "requests";q=50;w=1;qu="requests";drbgd-burst=10, "bytes";q=65536;w=1;qu="content-bytes";drbgd-burst=65536
//! RateLimit: "requests";r=7;t=1, "bytes";r=60000;t=1
//! ```
//!
//! `q` per `w` seconds is the sustained rate; `drbgd-burst` (a service-specific parameter, as
//! the draft allows) is the bucket size, the most `r` can be; `r` is what may be spent now and
//! `t` the seconds until the bucket is full again. The byte policy counts raw random bytes
//! before encoding (a hex body is twice as long). The in-flight cap is not advertised.
//!
//! The pipeline renders both on every response to such a caller (HTTP headers, or a gRPC
//! call's metadata) from the caller's plain data: its quota and what is left of its buckets.
//! The callers' domain holds no header values.

use std::fmt::Write;
use tokio::time::Instant;

use axum::http::HeaderValue;

use crate::callers::Caller;
use crate::callers::quota::{Kind, Quota, Rate, seconds_to_full};

/// `RateLimit-Policy`.
pub const RATELIMIT_POLICY: &str = "ratelimit-policy";
/// `RateLimit`.
pub const RATELIMIT: &str = "ratelimit";

fn policies(quota: &Quota) -> impl Iterator<Item = (Kind, &'static str, Rate)> {
    [(Kind::Requests, "requests", quota.requests), (Kind::Bytes, "content-bytes", quota.bytes)]
        .into_iter()
        .filter_map(|(kind, unit, rate)| rate.map(|r| (kind, unit, r)))
}

/// The `RateLimit-Policy` value of `quota`, if it limits a rate.
pub fn policy_field(quota: &Quota) -> Option<HeaderValue> {
    let mut value = String::new();
    for (kind, unit, rate) in policies(quota) {
        let name = kind.name();
        if !value.is_empty() {
            value.push_str(", ");
        }
        let _ =
            write!(value, "\"{name}\";q={};w=1;qu=\"{unit}\";drbgd-burst={}", rate.per_second, rate.burst);
    }
    (!value.is_empty()).then(|| HeaderValue::from_str(&value).ok()).flatten()
}

/// The `RateLimit` value for `caller` at `now`, if it has a rate quota.
pub fn current_field(caller: &Caller, now: Instant) -> Option<HeaderValue> {
    let mut value = String::new();
    for (kind, _, rate) in policies(&caller.quota) {
        let name = kind.name();
        let tokens = caller.remaining(kind, rate, now);
        if !value.is_empty() {
            value.push_str(", ");
        }
        let _ = write!(
            value,
            "\"{name}\";r={};t={}",
            tokens.max(0.0).floor() as u64,
            seconds_to_full(rate, tokens)
        );
    }
    (!value.is_empty()).then(|| HeaderValue::from_str(&value).ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_list_each_limited_policy() {
        let q = Quota {
            requests: Some(Rate { per_second: 50.0, burst: 10.0 }),
            bytes: Some(Rate { per_second: 65536.0, burst: 65536.0 }),
            max_in_flight: None,
        };
        assert_eq!(
            policy_field(&q).unwrap(),
            "\"requests\";q=50;w=1;qu=\"requests\";drbgd-burst=10, \
             \"bytes\";q=65536;w=1;qu=\"content-bytes\";drbgd-burst=65536"
        );
        let only_requests = Quota { bytes: None, ..q };
        assert_eq!(
            policy_field(&only_requests).unwrap(),
            "\"requests\";q=50;w=1;qu=\"requests\";drbgd-burst=10"
        );
        assert!(policy_field(&Quota::default()).is_none());
    }
}
