//! Strict query parsing: unknown or repeated parameters are errors, numbers must be numbers,
//! and every failure names the parameter and a stable code.

use std::collections::BTreeMap;

use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::request::Parts;

use crate::error::ApiError;
use crate::service::Encoding;

/// The query string as a map.
#[derive(Debug, Default)]
pub struct Params(BTreeMap<String, String>);

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let mut map = BTreeMap::new();
        let query = parts.uri.query().unwrap_or("");
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            if map.insert(key.to_string(), value.to_string()).is_some() {
                return Err(ApiError::invalid(
                    "duplicate_parameter",
                    &key,
                    format!("{key} is given more than once"),
                ));
            }
        }
        Ok(Params(map))
    }
}

impl Params {
    /// A map from explicit pairs (the JSON body of `POST /bits`).
    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, String)>) -> Self {
        Params(pairs.into_iter().collect())
    }

    /// Rejects any parameter not in `allowed`.
    ///
    /// # Errors
    /// `unknown_parameter`.
    pub fn allow(&self, allowed: &[&str]) -> Result<&Self, ApiError> {
        match self.0.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(k) => Err(ApiError::invalid(
                "unknown_parameter",
                k,
                format!("unknown parameter {k:?}; expected one of {}", allowed.join(", ")),
            )),
            None => Ok(self),
        }
    }

    /// The raw value.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// An unsigned integer, if present.
    ///
    /// # Errors
    /// `code` when present but not a non-negative integer.
    pub fn u64(&self, key: &str, code: &'static str) -> Result<Option<u64>, ApiError> {
        self.get(key)
            .map(|v| {
                v.trim().parse::<u64>().map_err(|_| {
                    ApiError::invalid(code, key, format!("{key} must be a positive integer, got {v:?}"))
                })
            })
            .transpose()
    }

    /// A signed 64-bit integer, if present.
    ///
    /// # Errors
    /// `invalid_integer` when present but not an i64.
    pub fn i64(&self, key: &str) -> Result<Option<i64>, ApiError> {
        self.get(key)
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
    pub fn flag(&self, key: &str) -> Result<bool, ApiError> {
        match self.get(key) {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(_) => Err(ApiError::invalid("invalid_boolean", key, format!("{key} must be true or false"))),
        }
    }
}

/// The output encoding: `format` if given, else the `Accept` header, else hex.
///
/// # Errors
/// `unknown_format` for a `format` outside `allowed`.
pub fn choose_format(
    format: Option<&str>,
    headers: &HeaderMap,
    allowed: &[Encoding],
) -> Result<Encoding, ApiError> {
    if let Some(name) = format {
        return Encoding::parse(name).filter(|e| allowed.contains(e)).ok_or_else(|| {
            let names: Vec<&str> = allowed.iter().map(|e| e.name()).collect();
            ApiError::invalid(
                "unknown_format",
                "format",
                format!("format must be one of {}", names.join(", ")),
            )
        });
    }
    Ok(from_accept(headers).filter(|e| allowed.contains(e)).unwrap_or(allowed[0]))
}

/// The most preferred supported media type of the `Accept` header (q-values honoured).
fn from_accept(headers: &HeaderMap) -> Option<Encoding> {
    let accept = headers.get(axum::http::header::ACCEPT)?.to_str().ok()?;
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
pub fn wants_json(headers: &HeaderMap) -> bool {
    from_accept(headers) == Some(Encoding::Json)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(axum::http::header::ACCEPT, v.parse().unwrap());
        h
    }

    #[test]
    fn accept_negotiation_honours_q() {
        let all = [Encoding::Hex, Encoding::Binary, Encoding::Json];
        assert_eq!(choose_format(None, &HeaderMap::new(), &all).unwrap(), Encoding::Hex);
        assert_eq!(choose_format(None, &accept("application/octet-stream"), &all).unwrap(), Encoding::Binary);
        assert_eq!(
            choose_format(None, &accept("text/plain;q=0.5, application/json"), &all).unwrap(),
            Encoding::Json
        );
        assert_eq!(choose_format(None, &accept("image/png"), &all).unwrap(), Encoding::Hex);
        assert_eq!(
            choose_format(Some("BINARY"), &accept("application/json"), &all).unwrap(),
            Encoding::Binary
        );
        assert_eq!(
            choose_format(Some("morse"), &HeaderMap::new(), &all).unwrap_err().code(),
            "unknown_format"
        );
    }
}
