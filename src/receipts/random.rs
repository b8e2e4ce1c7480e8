//! A receipt's `random` object before it is stamped and signed: the endpoint, the generator,
//! every request parameter in its canonical typed form (defaults applied), and the output as
//! `data`. The same for REST and gRPC, so both transports' receipts read and verify alike.
//!
//! Only strings, booleans and integers within ±(2^53 − 1) are written as JSON values: any
//! language's JSON parser reads them exactly, and for them RFC 8785's canonical form is
//! Python's `json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`. An
//! integer beyond that range is a string of its decimal digits; `/int`'s values are always
//! strings (one type for the list); binary output is base64 (`data_encoding` says so).

use serde_json::{Map, Value};
use zeroize::Zeroize;

use crate::route::Route;
use crate::service::{BitsRequest, Encoding, Ints, Secret, Uuids};

/// The largest integer every JSON reader takes exactly (JavaScript's
/// `Number.MAX_SAFE_INTEGER`, 2^53 − 1).
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// The fields of a `random` object so far (wiped when dropped: `data` is random output).
#[derive(Default)]
pub struct Random {
    fields: Map<String, Value>,
}

/// Shows the fields' names, never their values (`data` is random output).
impl std::fmt::Debug for Random {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Random").field("fields", &self.fields.keys().collect::<Vec<_>>()).finish()
    }
}

impl Drop for Random {
    fn drop(&mut self) {
        for value in self.fields.values_mut() {
            wipe(value);
        }
    }
}

impl Random {
    /// The fields every receipt starts with: the endpoint's path and the generator's name.
    fn new(route: Route, alg: crate::drbg::Algorithm) -> Self {
        Random::default().with("endpoint", route.path()).with("alg", alg.name())
    }

    fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.fields.insert(key.to_owned(), value.into());
        self
    }

    /// `/bits` or `/bytes` (`route`): `n` (bits, or bytes for `/bytes`), `format`, `pr`, and
    /// `raw` (the packed output) in the request's format; binary as base64 and JSON's as hex,
    /// with `data_encoding` naming that.
    pub fn bits(route: Route, req: &BitsRequest, raw: &[u8]) -> Self {
        let n = if route == Route::Bytes { req.byte_len() } else { req.n_bits() };
        let (written, data_encoding) = match req.format() {
            Encoding::Binary => (Encoding::Base64, Some("base64")),
            Encoding::Json => (Encoding::Hex, Some("hex")),
            format => (format, None),
        };
        let mut text = Vec::with_capacity(raw.len() * written.expansion() + 4);
        written.encode_into(raw, req.n_bits(), &mut text);
        // Every text encoding is ASCII.
        let data = String::from_utf8(text).unwrap_or_default();
        let random = Random::new(route, req.alg())
            .with("n", integer_u64(n))
            .with("format", req.format().name())
            .with("pr", req.pr())
            .with("data", data);
        match data_encoding {
            Some(encoding) => random.with("data_encoding", encoding),
            None => random,
        }
    }

    /// `/token` or `/nonce` (`route`): `bytes`, `format`, and the encoded value.
    pub fn secret(route: Route, secret: &Secret) -> Self {
        Random::new(route, secret.alg)
            .with("bytes", integer_u64(secret.bytes))
            .with("format", secret.format.name())
            .with("data", secret.value.as_str())
    }

    /// `/uuid`: `count`, `version`, and the UUIDs (hyphenated lowercase).
    pub fn uuids(out: &Uuids) -> Self {
        let data: Vec<Value> = out.uuids.iter().map(|u| Value::String(u.to_string())).collect();
        Random::new(Route::Uuid, out.alg)
            .with("count", integer_u64(out.uuids.len() as u64))
            .with("version", out.version)
            .with("data", data)
    }

    /// `/int`: `min`, `max`, `count`, and the values as decimal strings.
    pub fn ints(out: &Ints) -> Self {
        let data: Vec<Value> = out.values.iter().map(|v| Value::String(v.to_string())).collect();
        Random::new(Route::Int, out.alg)
            .with("min", integer(out.min))
            .with("max", integer(out.max))
            .with("count", integer_u64(out.values.len() as u64))
            .with("data", data)
    }

    /// The fields, taken out (the caller wipes them: see [`wipe`]).
    pub(super) fn take(mut self) -> Map<String, Value> {
        std::mem::take(&mut self.fields)
    }
}

/// `n` as a JSON number where every reader takes it exactly, else as a decimal string.
pub fn integer(n: i64) -> Value {
    if (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&n) {
        Value::from(n)
    } else {
        Value::String(n.to_string())
    }
}

/// [`integer`] of an unsigned number.
pub fn integer_u64(n: u64) -> Value {
    i64::try_from(n).map_or_else(|_| Value::String(n.to_string()), integer)
}

/// Wipes the strings of `value` (random output), in place.
pub fn wipe(value: &mut Value) {
    match value {
        Value::String(s) => s.zeroize(),
        Value::Array(items) => items.iter_mut().for_each(wipe),
        Value::Object(fields) => fields.values_mut().for_each(wipe),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;
    use crate::drbg::Algorithm;
    use crate::service::{BytesRequest, Rules};

    #[test]
    fn integers_beyond_2_53_are_strings() {
        assert_eq!(integer(MAX_SAFE_INTEGER), serde_json::json!(9_007_199_254_740_991_i64));
        assert_eq!(integer(-MAX_SAFE_INTEGER), serde_json::json!(-9_007_199_254_740_991_i64));
        assert_eq!(integer(MAX_SAFE_INTEGER + 1), "9007199254740992");
        assert_eq!(integer(i64::MIN), "-9223372036854775808");
        assert_eq!(integer_u64(u64::MAX), "18446744073709551615");
        assert_eq!(integer_u64(256), 256);
        let ints = Ints { values: vec![i64::MIN, 0, 6], min: i64::MIN, max: 6, alg: Algorithm::ChaCha20 };
        let fields = Random::ints(&ints).take();
        assert_eq!(fields["min"], "-9223372036854775808");
        assert_eq!(fields["max"], 6);
        assert_eq!(fields["count"], 3);
        assert_eq!(fields["data"], serde_json::json!(["-9223372036854775808", "0", "6"]));
        assert_eq!(fields["endpoint"], "/int");
    }

    #[test]
    fn binary_output_is_base64_and_says_so() {
        let rules = Rules::from_settings(&Settings::defaults());
        let raw = [0xffu8, 0x00, 0xa5];
        let req = BytesRequest::new(&rules, Some(3), None, Encoding::Binary, false).unwrap().into_bits();
        let fields = Random::bits(Route::Bytes, &req, &raw).take();
        assert_eq!(fields["n"], 3, "/bytes counts bytes");
        assert_eq!(fields["format"], "binary");
        assert_eq!(fields["data"], "/wCl");
        assert_eq!(fields["data_encoding"], "base64");
        assert_eq!(fields["pr"], false);
        let req = BitsRequest::new(&rules, Some(20), None, Encoding::Bits, false).unwrap();
        let fields = Random::bits(Route::Bits, &req, &raw).take();
        assert_eq!(fields["data"], "11111111000000001010");
        assert_eq!(fields["n"], 20);
        assert!(fields.get("data_encoding").is_none());
    }
}
