//! Strict query parsing: unknown or repeated parameters are errors, numbers must be numbers,
//! and every failure names the parameter and a stable code. The parameters themselves are
//! written once, here ([`Param`] and each route's list), for the handlers that read them and
//! the OpenAPI document that describes them. A POST's JSON body becomes the same parameters
//! ([`Params::from_json`]).

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
    /// Answer with a signed receipt.
    Receipt,
    /// The caller's own string in the receipt.
    UserData,
    /// The ticket a draw uses (a POST's body member only; implies a receipt).
    Ticket,
    /// Whether anyone may see new tickets' results (`POST /tickets`).
    ShowResult,
    /// A kind of ticket (`GET /tickets`: singleton, head, tail).
    Type,
    /// The id a page of tickets starts after (`GET /tickets`).
    After,
    /// Most items on a page (`GET /tickets`).
    Limit,
    /// The beacon round new tickets' draws are bound to (`POST /tickets`).
    Round,
    /// What a ticket bound to a round is for (`POST /tickets`): one ticket a label.
    Label,
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
            Param::Receipt => "receipt",
            Param::UserData => "user_data",
            Param::Ticket => "ticket",
            Param::ShowResult => "show_result",
            Param::Type => "type",
            Param::After => "after",
            Param::Limit => "limit",
            Param::Round => "round",
            Param::Label => "label",
        }
    }

    /// The parameter named `name`.
    fn named(name: &str) -> Option<Param> {
        [BITS, SECRET, UUID, INT, RECEIPT, TICKETS].into_iter().flatten().copied().find(|p| p.name() == name)
    }

    /// The error code of a value that is not a number of the right kind.
    const fn invalid_code(self) -> &'static str {
        match self {
            Param::N => "invalid_n",
            Param::Bytes => "invalid_bytes",
            Param::Count => "invalid_count",
            Param::Version => "invalid_version",
            Param::Pr | Param::Receipt => "invalid_boolean",
            Param::Min | Param::Max | Param::Alg | Param::Format => "invalid_integer",
            Param::UserData | Param::Ticket | Param::Type | Param::After => "invalid_body",
            Param::ShowResult => "invalid_boolean",
            Param::Limit => "invalid_limit",
            Param::Round => "invalid_round",
            Param::Label => "invalid_label",
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
/// The parameters every random-output route takes besides its own: a signed receipt
/// (`receipt=true`), the caller's string in it, and the ticket a draw uses (which the routes
/// whose values are secret refuse: their results would be shown to others).
pub const RECEIPT: &[Param] = &[Param::Receipt, Param::UserData, Param::Ticket];

/// The members of `POST /tickets`'s body.
pub const TICKETS: &[Param] = &[Param::N, Param::ShowResult, Param::Round, Param::Label];

/// The most query parameters a request may give.
pub const MAX_PARAMS: usize = 16;

/// The query string's parameters, in order, borrowed from the request where no escape had
/// to be decoded (a handful at most: a list, not a map, held inline up to [`INLINE_PARAMS`]
/// so the usual query costs no allocation).
#[derive(Debug)]
pub struct Params<'a> {
    pairs: SmallVec<[(Cow<'a, str>, Cow<'a, str>); INLINE_PARAMS]>,
    /// The ticket of a ticketed draw as its store resolved it (its id and predecessor): set
    /// by the draw that holds it, for the receipt to sign.
    stamp: Option<Box<crate::receipts::TicketStamp>>,
}

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
        let mut params = Params { pairs: SmallVec::new(), stamp: None };
        if query.bytes().any(|b| b == b'%' || b == b'+') {
            // Escapes that decode to no UTF-8 text are refused, not replaced by U+FFFD (a
            // receipt's user_data would sign what the caller never sent).
            if percent_encoding::percent_decode_str(query).decode_utf8().is_err() {
                return Err(ApiError::invalid(
                    "invalid_encoding",
                    "query",
                    "the query's %-escapes do not decode to UTF-8 text",
                ));
            }
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
        if self.pairs.len() == MAX_PARAMS {
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
        self.pairs.push((key, value));
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
    /// The members of a JSON object body (a random-output endpoint's POST) as parameters, each
    /// of its JSON type: `n`, `bytes`, `count` and `version` non-negative integers, `min` and
    /// `max` integers (or strings of decimal digits, for bounds beyond 2^53 that a client's
    /// JSON numbers cannot carry), `pr` and `receipt` booleans, the others strings.
    ///
    /// # Errors
    /// `invalid_body` for a body that is not an object or a member of the wrong type, the
    /// member's own code for a number of the wrong kind (`invalid_n`, `invalid_bytes`, ...)
    /// or a boolean that is none (`invalid_boolean`).
    pub fn from_json(body: &serde_json::Value) -> Result<Params<'static>, ApiError> {
        let object = body
            .as_object()
            .ok_or_else(|| ApiError::invalid("invalid_body", "body", "the body must be a JSON object"))?;
        let mut params = SmallVec::with_capacity(object.len());
        for (key, value) in object {
            let text = json_member(key, value)?;
            params.push((Cow::Owned(key.clone()), Cow::Owned(text)));
        }
        Ok(Params { pairs: params, stamp: None })
    }

    /// Rejects any parameter not in `allowed` or [`RECEIPT`] (every random-output route's).
    ///
    /// # Errors
    /// `unknown_parameter`, naming the first unknown one in alphabetical order (the same
    /// for a query and a JSON body).
    pub fn allow(&self, allowed: &[Param]) -> Result<&Self, ApiError> {
        let known = |k: &str| allowed.iter().chain(RECEIPT).any(|p| p.name() == k);
        match self.pairs.iter().map(|(k, _)| k).filter(|k| !known(k)).min() {
            Some(k) => {
                let names: Vec<&str> = allowed.iter().chain(RECEIPT).map(|p| p.name()).collect();
                Err(ApiError::invalid(
                    "unknown_parameter",
                    k,
                    format!("unknown parameter {k:?}; expected one of {}", names.join(", ")),
                ))
            }
            None => Ok(self),
        }
    }

    /// Every parameter as sent, name and value, in the order given.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_ref(), v.as_ref()))
    }

    /// The ticket of a ticketed draw, resolved by its store ([`Params::with_stamp`]).
    pub fn stamp(&self) -> Option<&crate::receipts::TicketStamp> {
        self.stamp.as_deref()
    }

    /// These parameters with the ticket `stamp` resolved: what the draw that holds the ticket
    /// hands the endpoint, whose receipt then names it.
    #[must_use]
    pub fn with_stamp(mut self, stamp: crate::receipts::TicketStamp) -> Self {
        self.stamp = Some(Box::new(stamp));
        self
    }

    /// Rejects any parameter not in `allowed` (and no other: a route that is no draw's).
    ///
    /// # Errors
    /// `unknown_parameter`, naming the first unknown one in alphabetical order.
    pub fn allow_only(&self, allowed: &[Param]) -> Result<&Self, ApiError> {
        match self.pairs.iter().map(|(k, _)| k).filter(|k| !allowed.iter().any(|p| p.name() == *k)).min() {
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
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_ref())
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

/// A JSON body's member as the text of its parameter, checked against the parameter's JSON
/// type (a member that names no parameter must be a string: `allow` names it then).
fn json_member(key: &str, value: &serde_json::Value) -> Result<String, ApiError> {
    use serde_json::Value;
    let param = Param::named(key);
    let wrong = |param: Param, what: &str| {
        let code =
            if param == Param::Alg || param == Param::Format { "invalid_body" } else { param.invalid_code() };
        Err(ApiError::invalid(code, key, format!("{key} must be {what}")))
    };
    match (param, value) {
        (Some(p @ (Param::N | Param::Bytes | Param::Count | Param::Version | Param::Round)), value) => {
            match json_integer(value) {
                Some(n) if n >= 0 => Ok(n.to_string()),
                _ => wrong(p, "a positive integer"),
            }
        }
        (Some(p @ (Param::Min | Param::Max)), Value::String(s)) if !decimal(s) => {
            wrong(p, "an integer (a number, or a string of decimal digits)")
        }
        (Some(Param::Min | Param::Max), Value::String(s)) => Ok(s.clone()),
        (Some(p @ (Param::Min | Param::Max)), value) => match json_integer(value) {
            Some(n) => Ok(n.to_string()),
            None => wrong(p, "an integer (a number, or a string of decimal digits)"),
        },
        (Some(p @ (Param::Pr | Param::Receipt | Param::ShowResult)), value) => match value {
            Value::Bool(b) => Ok(b.to_string()),
            _ => wrong(p, "true or false"),
        },
        (_, Value::String(s)) => Ok(s.clone()),
        (Some(p), _) => wrong(p, "a string"),
        (None, _) => Err(ApiError::invalid("invalid_body", key, format!("{key} must be a string"))),
    }
}

/// A JSON number that is an integer, as an `i128` (every `i64` and `u64`). JSON has one number
/// type: 1116.0 is the integer 1116 (as JSON Schema says), up to 2^53 where doubles are exact.
fn json_integer(value: &serde_json::Value) -> Option<i128> {
    let number = value.as_number()?;
    if let Some(n) = number.as_i64() {
        return Some(i128::from(n));
    }
    if let Some(n) = number.as_u64() {
        return Some(i128::from(n));
    }
    let f = number.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15).then_some(f as i128)
}

/// Whether `s` is an integer in decimal digits, with an optional minus sign.
fn decimal(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
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
        assert_eq!(bad(serde_json::json!({"n": "8"})), "invalid_n");
        assert_eq!(Params::from_json(&serde_json::json!({"n": 1116.0})).unwrap().get(Param::N), Some("1116"));
        assert_eq!(bad(serde_json::json!({"pr": "yes"})), "invalid_boolean");
        assert_eq!(bad(serde_json::json!({"pr": "true"})), "invalid_boolean");
        assert_eq!(bad(serde_json::json!({"receipt": 1})), "invalid_boolean");
        assert_eq!(bad(serde_json::json!({"alg": 3})), "invalid_body");
        assert_eq!(bad(serde_json::json!({"user_data": 3})), "invalid_body");
        assert_eq!(bad(serde_json::json!({"bytes": "32"})), "invalid_bytes");
        assert_eq!(bad(serde_json::json!({"min": "+5"})), "invalid_integer");
        assert_eq!(bad(serde_json::json!({"max": 1.5})), "invalid_integer");
        // Bounds beyond 2^53, as numbers (serde_json reads them exactly) or digit strings.
        let p = Params::from_json(&serde_json::json!({
            "min": i64::MIN, "max": "9223372036854775807", "count": 3, "receipt": true, "user_data": "draw 7"
        }))
        .unwrap();
        assert_eq!(p.i64(Param::Min).unwrap(), Some(i64::MIN));
        assert_eq!(p.i64(Param::Max).unwrap(), Some(i64::MAX));
        assert_eq!(p.u64(Param::Count).unwrap(), Some(3));
        assert!(p.flag(Param::Receipt).unwrap());
        assert_eq!(p.get(Param::UserData), Some("draw 7"));
    }
}
