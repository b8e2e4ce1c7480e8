//! Strict query parsing: unknown or repeated parameters are errors, numbers must be numbers,
//! and every failure names the parameter and a stable code. The parameters themselves are
//! written once, here ([`Param`] and each route's list), for the handlers that read them and
//! the OpenAPI document that describes them.

use std::borrow::Cow;

use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use smallvec::SmallVec;

use crate::error::ApiError;
use crate::service::Encoding;

/// A query parameter of the API (and a member of `POST /bits`'s body).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    /// How many bits (`/bits`) or bytes (`/bytes`).
    N,
    /// The generator.
    Alg,
    /// The output encoding.
    Format,
    /// Prediction resistance.
    Pr,
    /// How many random bytes in a token or nonce.
    Bytes,
    /// How many UUIDs or integers.
    Count,
    /// The UUID version.
    Version,
    /// The integers' lower bound.
    Min,
    /// The integers' upper bound.
    Max,
}

impl Param {
    /// Its name in the query.
    pub const fn name(self) -> &'static str {
        match self {
            Param::N => "n",
            Param::Alg => "alg",
            Param::Format => "format",
            Param::Pr => "pr",
            Param::Bytes => "bytes",
            Param::Count => "count",
            Param::Version => "version",
            Param::Min => "min",
            Param::Max => "max",
        }
    }

    /// The error code of a value that is not a number of the right kind.
    const fn invalid_code(self) -> &'static str {
        match self {
            Param::N => "invalid_n",
            Param::Bytes => "invalid_bytes",
            Param::Count => "invalid_count",
            Param::Version => "invalid_version",
            Param::Pr => "invalid_boolean",
            Param::Min | Param::Max | Param::Alg | Param::Format => "invalid_integer",
        }
    }
}

/// The parameters of `/bits` and `/bytes` (and the members of `POST /bits`'s body).
pub const BITS: &[Param] = &[Param::N, Param::Alg, Param::Format, Param::Pr];
/// The parameters of `/token` and `/nonce`.
pub const SECRET: &[Param] = &[Param::Bytes, Param::Format, Param::Alg];
/// The parameters of `/uuid`.
pub const UUID: &[Param] = &[Param::Count, Param::Version, Param::Alg];
/// The parameters of `/int`.
pub const INT: &[Param] = &[Param::Min, Param::Max, Param::Count, Param::Alg];

/// The most query parameters a request may give.
pub const MAX_PARAMS: usize = 16;

/// The query string's parameters, in order, borrowed from the request where no escape had
/// to be decoded (a handful at most: a list, not a map, held inline up to [`INLINE_PARAMS`]
/// so the usual query costs no allocation).
#[derive(Debug)]
pub struct Params<'a>(SmallVec<[(Cow<'a, str>, Cow<'a, str>); INLINE_PARAMS]>);

/// Parameters held without an allocation: the most any route takes.
const INLINE_PARAMS: usize = 4;
const _: () = assert!(
    BITS.len() <= INLINE_PARAMS
        && SECRET.len() <= INLINE_PARAMS
        && UUID.len() <= INLINE_PARAMS
        && INT.len() <= INLINE_PARAMS
);

impl<'a> Params<'a> {
    /// The parameters of the request's query string.
    ///
    /// # Errors
    /// `duplicate_parameter`, `too_many_parameters` (more than [`MAX_PARAMS`]).
    pub fn of(parts: &'a Parts) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        let mut params = Params(SmallVec::new());
        if query.bytes().any(|b| b == b'%' || b == b'+') {
            for (key, value) in form_urlencoded::parse(query.as_bytes()) {
                params.add(key, value)?;
            }
        } else {
            // Nothing to decode: the pairs as `form_urlencoded::parse` would split them,
            // borrowed (its decoding costs ~500 instructions a request for no change).
            for (key, value) in plain_pairs(query) {
                params.add(Cow::Borrowed(key), Cow::Borrowed(value))?;
            }
        }
        Ok(params)
    }

    fn add(&mut self, key: Cow<'a, str>, value: Cow<'a, str>) -> Result<(), ApiError> {
        // No route takes more than a few; the bound keeps the duplicate check (a scan of the
        // list) from costing the square of a 64 KiB query's thousands of keys.
        if self.0.len() == MAX_PARAMS {
            return Err(ApiError::invalid(
                "too_many_parameters",
                "query",
                format!("at most {MAX_PARAMS} query parameters"),
            ));
        }
        if self.value(&key).is_some() {
            return Err(ApiError::invalid(
                "duplicate_parameter",
                &key,
                format!("{key} is given more than once"),
            ));
        }
        self.0.push((key, value));
        Ok(())
    }
}

/// The `key=value` pairs of a query with no `%` escape and no `+`, split as
/// `application/x-www-form-urlencoded` parsing splits them: on `&`, empty pieces skipped, at
/// the first `=` (a piece without one is a key with an empty value).
fn plain_pairs(query: &str) -> impl Iterator<Item = (&str, &str)> {
    query
        .split('&')
        .filter(|piece| !piece.is_empty())
        .map(|piece| piece.split_once('=').unwrap_or((piece, "")))
}

impl Params<'_> {
    /// The members of a JSON object body (`POST /bits`) as parameters: `n` must be a
    /// non-negative integer, `pr` a boolean, the others strings.
    ///
    /// # Errors
    /// `invalid_body` for a body that is not an object or a member of the wrong type,
    /// `invalid_n`, `invalid_boolean`.
    pub fn from_json(body: &serde_json::Value) -> Result<Params<'static>, ApiError> {
        use serde_json::Value;
        let object = body
            .as_object()
            .ok_or_else(|| ApiError::invalid("invalid_body", "body", "the body must be a JSON object"))?;
        let mut params = SmallVec::with_capacity(object.len());
        for (key, value) in object {
            let (n, pr) = (Param::N.name(), Param::Pr.name());
            let text = match (key.as_str(), value) {
                (k, Value::Number(v)) if k == n && v.is_u64() => v.to_string(),
                // JSON has one number type: 1116.0 is the integer 1116 (as JSON Schema says).
                (k, Value::Number(v))
                    if k == n
                        && v.as_f64().is_some_and(|f| {
                            f.fract() == 0.0 && (0.0..9.007_199_254_740_992e15).contains(&f)
                        }) =>
                {
                    (v.as_f64().unwrap_or_default() as u64).to_string()
                }
                (k, _) if k == n => {
                    return Err(ApiError::invalid("invalid_n", n, "n must be a positive integer"));
                }
                (k, Value::Bool(b)) if k == pr => b.to_string(),
                (k, _) if k == pr => {
                    return Err(ApiError::invalid("invalid_boolean", pr, "pr must be true or false"));
                }
                (_, Value::String(s)) => s.clone(),
                _ => return Err(ApiError::invalid("invalid_body", key, format!("{key} must be a string"))),
            };
            params.push((Cow::Owned(key.clone()), Cow::Owned(text)));
        }
        Ok(Params(params))
    }

    /// Rejects any parameter not in `allowed`.
    ///
    /// # Errors
    /// `unknown_parameter`, naming the first unknown one in alphabetical order (the same
    /// for a query and a JSON body).
    pub fn allow(&self, allowed: &[Param]) -> Result<&Self, ApiError> {
        let known = |k: &str| allowed.iter().any(|p| p.name() == k);
        match self.0.iter().map(|(k, _)| k).filter(|k| !known(k)).min() {
            Some(k) => {
                let names: Vec<&str> = allowed.iter().map(|p| p.name()).collect();
                Err(ApiError::invalid(
                    "unknown_parameter",
                    k,
                    format!("unknown parameter {k:?}; expected one of {}", names.join(", ")),
                ))
            }
            None => Ok(self),
        }
    }

    /// The raw value of `param`.
    pub fn get(&self, param: Param) -> Option<&str> {
        self.value(param.name())
    }

    fn value(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_ref())
    }

    /// An unsigned integer, if present.
    ///
    /// # Errors
    /// The parameter's `invalid_*` code when present but not a non-negative integer.
    pub fn u64(&self, param: Param) -> Result<Option<u64>, ApiError> {
        let key = param.name();
        self.get(param)
            .map(|v| {
                v.trim().parse::<u64>().map_err(|_| {
                    ApiError::invalid(
                        param.invalid_code(),
                        key,
                        format!("{key} must be a positive integer, got {v:?}"),
                    )
                })
            })
            .transpose()
    }

    /// A signed 64-bit integer, if present.
    ///
    /// # Errors
    /// `invalid_integer` when present but not an i64.
    pub fn i64(&self, param: Param) -> Result<Option<i64>, ApiError> {
        let key = param.name();
        self.get(param)
            .map(|v| {
                v.trim().parse::<i64>().map_err(|_| {
                    ApiError::invalid(
                        "invalid_integer",
                        key,
                        format!("{key} must be a 64-bit signed integer"),
                    )
                })
            })
            .transpose()
    }

    /// A boolean, exactly `true` or `false` as OpenAPI serializes it; absent means false.
    ///
    /// # Errors
    /// `invalid_boolean` for anything else, the empty string included.
    pub fn flag(&self, param: Param) -> Result<bool, ApiError> {
        let key = param.name();
        match self.get(param) {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(_) => Err(ApiError::invalid("invalid_boolean", key, format!("{key} must be true or false"))),
        }
    }
}

/// The request's `Accept` header.
#[derive(Debug, Default, Clone, Copy)]
pub struct Accept<'a>(Option<&'a HeaderValue>);

impl<'a> Accept<'a> {
    /// The `Accept` header of `headers`.
    pub fn of(headers: &'a HeaderMap) -> Self {
        Accept(headers.get(axum::http::header::ACCEPT))
    }
}

impl<'a> From<Option<&'a HeaderValue>> for Accept<'a> {
    fn from(value: Option<&'a HeaderValue>) -> Self {
        Accept(value)
    }
}

/// The encoding of random bits: `format` if given, else the `Accept` header, else hex.
///
/// # Errors
/// `unknown_format` for a `format` that is no bits encoding.
pub fn choose_format(format: Option<&str>, accept: Accept<'_>) -> Result<Encoding, ApiError> {
    if let Some(name) = format {
        return Encoding::parse(name).ok_or_else(|| {
            let names: Vec<&str> = Encoding::ALL.iter().map(|e| e.name()).collect();
            ApiError::invalid(
                "unknown_format",
                "format",
                format!("format must be one of {}", names.join(", ")),
            )
        });
    }
    Ok(from_accept(accept).unwrap_or(Encoding::ALL[0]))
}

/// The most preferred supported media type of the `Accept` header (q-values honoured).
fn from_accept(accept: Accept<'_>) -> Option<Encoding> {
    let accept = accept.0?.to_str().ok()?;
    let mut ranges: Vec<(f32, usize, Encoding)> = accept
        .split(',')
        .enumerate()
        .filter_map(|(i, part)| {
            let mut pieces = part.split(';');
            let media = pieces.next()?.trim().to_ascii_lowercase();
            let q = pieces
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            let encoding = match media.as_str() {
                "application/octet-stream" => Encoding::Binary,
                "application/json" => Encoding::Json,
                "text/plain" => Encoding::Hex,
                _ => return None,
            };
            (q > 0.0).then_some((q, i, encoding))
        })
        .collect();
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    ranges.first().map(|r| r.2)
}

/// Whether the client prefers JSON over text (for the small-value endpoints).
pub fn wants_json(accept: Accept<'_>) -> bool {
    from_accept(accept) == Some(Encoding::Json)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(v: &str) -> HeaderValue {
        v.parse().unwrap()
    }

    proptest::proptest! {
        /// The undecoded split is `form_urlencoded::parse` wherever it is taken: queries of
        /// `&`, `=` and letters, with empty pieces, bare keys and repeated `=`.
        #[test]
        fn plain_pairs_split_as_form_urlencoded(query in "[a-c&=]{0,24}") {
            let ours: Vec<(String, String)> =
                plain_pairs(&query).map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
            let theirs: Vec<(String, String)> =
                form_urlencoded::parse(query.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
            proptest::prop_assert_eq!(ours, theirs);
        }
    }

    #[test]
    fn escaped_queries_are_decoded() {
        let parts = |q: &str| axum::http::Request::get(format!("/bits?{q}")).body(()).unwrap().into_parts().0;
        let p = parts("n=2%35%36&alg=chacha%32%30&format=a+b");
        let params = Params::of(&p).unwrap();
        assert_eq!(params.get(Param::N), Some("256"));
        assert_eq!(params.get(Param::Alg), Some("chacha20"));
        assert_eq!(params.get(Param::Format), Some("a b"));
        let p = parts("n=1&&alg=&n=2");
        let Err(e) = Params::of(&p) else { panic!("a duplicate n was taken") };
        assert!(format!("{e:?}").contains("duplicate_parameter"), "{e:?}");
    }

    #[test]
    fn accept_negotiation_honours_q() {
        assert_eq!(choose_format(None, Accept::default()).unwrap(), Encoding::Hex);
        assert_eq!(
            choose_format(None, Accept(Some(&value("application/octet-stream")))).unwrap(),
            Encoding::Binary
        );
        assert_eq!(
            choose_format(None, Accept(Some(&value("text/plain;q=0.5, application/json")))).unwrap(),
            Encoding::Json
        );
        assert_eq!(choose_format(None, Accept(Some(&value("image/png")))).unwrap(), Encoding::Hex);
        assert_eq!(
            choose_format(Some("BINARY"), Accept(Some(&value("application/json")))).unwrap(),
            Encoding::Binary
        );
        assert_eq!(choose_format(Some("morse"), Accept::default()).unwrap_err().code(), "unknown_format");
    }

    #[test]
    fn json_bodies_become_typed_parameters() {
        let p = Params::from_json(&serde_json::json!({"n": 8, "pr": true, "alg": "aes"})).unwrap();
        assert_eq!(
            (p.get(Param::N), p.flag(Param::Pr).unwrap(), p.get(Param::Alg)),
            (Some("8"), true, Some("aes"))
        );
        let bad = |v| Params::from_json(&v).unwrap_err().code();
        assert_eq!(bad(serde_json::json!([1])), "invalid_body");
        assert_eq!(bad(serde_json::json!({"n": -1})), "invalid_n");
        assert_eq!(bad(serde_json::json!({"n": 1.5})), "invalid_n");
        assert_eq!(Params::from_json(&serde_json::json!({"n": 1116.0})).unwrap().get(Param::N), Some("1116"));
        assert_eq!(bad(serde_json::json!({"pr": "yes"})), "invalid_boolean");
        assert_eq!(bad(serde_json::json!({"alg": 3})), "invalid_body");
    }
}
