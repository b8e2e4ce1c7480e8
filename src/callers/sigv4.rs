//! Verifying an AWS Signature Version 4 (the KMS front-end's credential): the canonical
//! request is rebuilt from what the client says it signed (`SignedHeaders`), the string to sign
//! from it, and the signature recomputed with the caller's secret and compared in constant
//! time. The key derivation and the HMAC are `aws-sigv4`'s own (`sign::v4`); that crate signs
//! but has no verifier, so the canonical request is built here, after AWS's "Create a canonical
//! request" steps (and cross-checked against botocore's signer in `tests/api/kms.rs`).
//!
//! Refused: a missing, repeated or malformed `Authorization`, a repeated `X-Amz-Date`,
//! `X-Amz-Content-Sha256` or `Host`, temporary credentials (`X-Amz-Security-Token`: drbgd issues
//! none), a scope for another service, region (of `[kms] regions`) or date, a host that is not
//! one of `[kms] hosts` (when set), a request dated more than [`MAX_SKEW`] from this server's
//! clock (AWS's window), an unsigned `host` or `x-amz-date`, a signed header that is absent, a
//! wrong signature. As at AWS, a request may be replayed within the window by whoever saw it
//! (serve KMS over TLS), and, with `[kms] hosts` unset, one signed for another endpoint with the
//! same key and region too. A signing key is derived only for a configured region (one or two)
//! and a date within the window, so the secret is copied (by `aws-sigv4`) a few times a day at
//! most.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use axum::http::HeaderMap;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::error::ApiError;

/// How far a request's `X-Amz-Date` may be from this server's clock, either way (AWS's own).
pub const MAX_SKEW: Duration = Duration::from_secs(15 * 60);

/// The only algorithm SigV4 has (SigV4a, ECDSA, is not accepted).
const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// Characters AWS leaves unencoded in canonical URIs and query strings.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// Headers a signed request carries at most once, with the names refusals give them. A request
/// has one date, one payload hash and one host: AWS's canonical form would sign a repeated one
/// as its values joined by commas, while the checks here read the first, so which one the
/// signature vouches for would be ambiguous.
const SINGLE: [(&str, &str); 3] =
    [("x-amz-date", "X-Amz-Date"), ("x-amz-content-sha256", "X-Amz-Content-Sha256"), ("host", "Host")];

/// Temporary (STS) credentials' session token, which clients send and sign beside the access
/// key (botocore's signer, `aws-sigv4`'s). drbgd issues none, so none is valid.
const SECURITY_TOKEN: &str = "x-amz-security-token";

/// What this server serves signed requests for: `[kms] regions` and `[kms] hosts`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Audience {
    /// The regions a signature's scope may name (one or two).
    pub regions: Vec<String>,
    /// The hosts (`host[:port]`, as clients sign their endpoint's) a signature may name,
    /// compared without regard to ASCII case; empty: any host.
    pub hosts: Vec<String>,
}

/// What a signed request offers: its head (the body's hash is taken by [`SignedRequest::verify`]).
/// Its `Debug` shows the header names only (the values hold the signature).
#[derive(Clone, Copy)]
pub struct SignedRequest<'a> {
    /// `POST`.
    pub method: &'a str,
    /// The path as sent.
    pub path: &'a str,
    /// The query as sent (no `?`).
    pub query: &'a str,
    /// The `:authority` of an HTTP/2 request (which has no `Host` header).
    pub authority: Option<&'a str>,
    /// The headers.
    pub headers: &'a HeaderMap,
}

impl std::fmt::Debug for SignedRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignedRequest")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The parts of a SigV4 `Authorization` header (its `Debug` leaves the signature out).
#[derive(PartialEq, Eq)]
pub struct Authorization<'a> {
    /// The access key id: names the caller.
    pub key_id: &'a str,
    date: &'a str,
    region: &'a str,
    service: &'a str,
    signed_headers: &'a str,
    signature: &'a str,
}

impl std::fmt::Debug for Authorization<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorization")
            .field("key_id", &self.key_id)
            .field("region", &self.region)
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
}

fn refused(code: &'static str, detail: impl Into<String>) -> ApiError {
    ApiError::BadSignature { code, detail: detail.into() }
}

/// A request with temporary credentials, refused as KMS refuses a session token it does not
/// know (`UnrecognizedClientException`, in AWS's words).
fn security_token_refused() -> ApiError {
    refused(
        "unrecognized_client",
        "the security token included in the request is invalid: drbgd issues no temporary credentials",
    )
}

impl<'a> SignedRequest<'a> {
    /// The signed parts of a request's head.
    pub fn of(method: &'a axum::http::Method, uri: &'a axum::http::Uri, headers: &'a HeaderMap) -> Self {
        SignedRequest {
            method: method.as_str(),
            path: uri.path(),
            query: uri.query().unwrap_or(""),
            authority: uri.authority().map(|a| a.as_str()),
            headers,
        }
    }

    /// The `Authorization` header's parts, checked for form (not yet for the signature).
    ///
    /// # Errors
    /// 401 `missing_signature` (no header), `incomplete_signature` (malformed, or repeated).
    pub fn authorization(&self) -> Result<Authorization<'a>, ApiError> {
        let value = self.headers.get(axum::http::header::AUTHORIZATION);
        let value =
            value.ok_or_else(|| refused("missing_signature", "the request is not signed (AWS SigV4)"))?;
        if self.repeated(axum::http::header::AUTHORIZATION.as_str()) {
            return Err(repeated_refused("Authorization"));
        }
        let incomplete =
            |what: &str| refused("incomplete_signature", format!("the Authorization header {what}"));
        let value = value.to_str().map_err(|_| incomplete("is not ASCII"))?;
        let rest = value
            .strip_prefix(ALGORITHM)
            .and_then(|r| r.strip_prefix(' '))
            .ok_or_else(|| incomplete("is not AWS4-HMAC-SHA256"))?;
        let (mut credential, mut signed_headers, mut signature) = (None, None, None);
        for part in rest.split(',').map(str::trim) {
            let (name, v) = part.split_once('=').ok_or_else(|| incomplete("has a part without '='"))?;
            let slot = match name {
                "Credential" => &mut credential,
                "SignedHeaders" => &mut signed_headers,
                "Signature" => &mut signature,
                _ => return Err(incomplete("has an unknown part")),
            };
            if slot.replace(v).is_some() {
                return Err(incomplete("repeats a part"));
            }
        }
        let (Some(credential), Some(signed_headers), Some(signature)) =
            (credential, signed_headers, signature)
        else {
            return Err(incomplete("needs Credential, SignedHeaders and Signature"));
        };
        let scope: Vec<&str> = credential.split('/').collect();
        let [key_id, date, region, service, "aws4_request"] = scope[..] else {
            return Err(incomplete(
                "has a Credential that is not <key>/<date>/<region>/<service>/aws4_request",
            ));
        };
        if key_id.is_empty() || region.is_empty() || date.len() != 8 {
            return Err(incomplete("has an incomplete Credential"));
        }
        Ok(Authorization { key_id, date, region, service, signed_headers, signature })
    }

    /// What can be checked before the body: no `X-Amz-Date`, `X-Amz-Content-Sha256` or `Host`
    /// repeated, no security token, the scope names `kms` and one of `served.regions`, the host is one of
    /// `served.hosts` (when set), `X-Amz-Date` is well formed, the scope's date, and within
    /// [`MAX_SKEW`] of `now`. Returns the request's time.
    ///
    /// # Errors
    /// 401 `incomplete_signature`, `unrecognized_client` (a security token),
    /// `signature_expired` or `invalid_signature`.
    pub fn check_head(
        &self,
        auth: &Authorization<'_>,
        served: &Audience,
        now: SystemTime,
    ) -> Result<SystemTime, ApiError> {
        if let Some((_, shown)) = SINGLE.iter().find(|(name, _)| self.repeated(name)) {
            return Err(repeated_refused(shown));
        }
        if self.headers.contains_key(SECURITY_TOKEN) {
            return Err(security_token_refused());
        }
        if auth.service != "kms" {
            return Err(refused("invalid_signature", "the credential is scoped to another service than kms"));
        }
        if !served.regions.iter().any(|r| r == auth.region) {
            return Err(refused(
                "invalid_signature",
                format!("this server does not serve region {:?}", auth.region),
            ));
        }
        self.check_host(&served.hosts)?;
        let amz_date = self
            .header("x-amz-date")
            .ok_or_else(|| refused("incomplete_signature", "the request needs an X-Amz-Date header"))?;
        let at = parse_amz_date(amz_date)
            .ok_or_else(|| refused("incomplete_signature", "X-Amz-Date is not YYYYMMDD'T'HHMMSS'Z'"))?;
        if &amz_date[..8] != auth.date {
            return Err(refused("invalid_signature", "the credential's date is not X-Amz-Date's"));
        }
        let skew = now.duration_since(at).unwrap_or_else(|e| e.duration());
        if skew > MAX_SKEW {
            return Err(refused(
                "signature_expired",
                format!("the request is dated {amz_date}, more than 15 minutes from this server's clock"),
            ));
        }
        Ok(at)
    }

    /// Checks the signature of this request with `body`, `secret` being the access key's, as
    /// of `now` (and [`SignedRequest::check_head`] first).
    ///
    /// # Errors
    /// 401 `incomplete_signature`, `unrecognized_client` (a security token),
    /// `signature_expired` or `invalid_signature`.
    pub fn verify(
        &self,
        auth: &Authorization<'_>,
        served: &Audience,
        secret: &SigningSecret,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), ApiError> {
        let at = self.check_head(auth, served, now)?;
        let amz_date = self.header("x-amz-date").unwrap_or_default();
        let canonical = self.canonical_request(auth.signed_headers, body)?;
        let string_to_sign = format!(
            "{ALGORITHM}\n{amz_date}\n{}/{}/{}/aws4_request\n{}",
            auth.date,
            auth.region,
            auth.service,
            data_encoding::HEXLOWER.encode(&Sha256::digest(canonical.as_bytes()))
        );
        let expected = secret.sign(at, auth.date, auth.region, string_to_sign.as_bytes());
        if expected.as_bytes().ct_eq(auth.signature.as_bytes()).into() {
            Ok(())
        } else {
            Err(refused(
                "invalid_signature",
                "the request signature we calculated does not match the signature you provided",
            ))
        }
    }

    /// A header's (first) value as text; `None` if it is absent or not text.
    fn header(&self, name: &str) -> Option<&'a str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Whether header `name` comes more than once.
    fn repeated(&self, name: &str) -> bool {
        self.headers.get_all(name).iter().nth(1).is_some()
    }

    /// The host the request is signed for, as the canonical request takes it: the `Host`
    /// header, or an HTTP/2 request's `:authority` when it has none (as `aws-sigv4` and
    /// botocore's signer sign the endpoint's `host[:port]`, the default port left out). `None`
    /// if there is neither, or the header is not text.
    fn signed_host(&self) -> Option<&'a str> {
        match self.headers.get(axum::http::header::HOST) {
            Some(value) => value.to_str().ok().map(str::trim),
            None => self.authority,
        }
    }

    /// With `hosts` set, the signed host must be one of them (without regard to ASCII case): a
    /// request signed for another endpoint with the same key is not served here.
    fn check_host(&self, hosts: &[String]) -> Result<(), ApiError> {
        if hosts.is_empty() {
            return Ok(());
        }
        let Some(host) = self.signed_host() else {
            return Err(refused(
                "invalid_signature",
                "the request names no host (Host, or HTTP/2's :authority) this server serves",
            ));
        };
        if hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            Ok(())
        } else {
            Err(refused(
                "invalid_signature",
                format!("the request is signed for host {host:?}, which this server does not serve"),
            ))
        }
    }

    fn canonical_request(&self, signed_headers: &str, body: &[u8]) -> Result<String, ApiError> {
        let names: Vec<&str> = signed_headers.split(';').collect();
        let sorted = names.windows(2).all(|w| w[0] < w[1]);
        let lowercase = names.iter().all(|n| !n.is_empty() && !n.bytes().any(|b| b.is_ascii_uppercase()));
        if !sorted || !lowercase || !names.contains(&"host") || !names.contains(&"x-amz-date") {
            return Err(refused(
                "incomplete_signature",
                "SignedHeaders must be sorted, lowercase, and include host and x-amz-date",
            ));
        }
        let mut out = String::with_capacity(512);
        out.push_str(self.method);
        out.push('\n');
        out.push_str(&canonical_path(self.path));
        out.push('\n');
        out.push_str(&canonical_query(self.query));
        out.push('\n');
        for name in &names {
            let values: Vec<String> = self
                .headers
                .get_all(*name)
                .iter()
                .map(|v| v.to_str().map(|s| s.split_whitespace().collect::<Vec<_>>().join(" ")))
                .collect::<Result<_, _>>()
                .map_err(|_| refused("invalid_signature", "a signed header is not text"))?;
            let value = match (values.is_empty(), *name) {
                (false, _) => values.join(","),
                (true, "host") if self.authority.is_some() => self.authority.unwrap_or_default().to_string(),
                (true, _) => {
                    return Err(refused("invalid_signature", format!("the signed header {name} is absent")));
                }
            };
            out.push_str(name);
            out.push(':');
            out.push_str(&value);
            out.push('\n');
        }
        out.push('\n');
        out.push_str(signed_headers);
        out.push('\n');
        let payload = data_encoding::HEXLOWER.encode(&Sha256::digest(body));
        if let Some(claimed) = self.header("x-amz-content-sha256")
            && claimed != payload
        {
            return Err(refused("invalid_signature", "x-amz-content-sha256 is not the body's SHA-256"));
        }
        out.push_str(&payload);
        Ok(out)
    }
}

/// A header that came more than once, refused as a malformed signature.
fn repeated_refused(shown: &str) -> ApiError {
    refused("incomplete_signature", format!("the request has more than one {shown} header"))
}

/// A path as AWS services other than S3 sign it: each segment decoded, then encoded twice.
fn canonical_path(path: &str) -> String {
    if path.is_empty() || path == "/" {
        return "/".to_string();
    }
    let segments = path.split('/').map(|s| {
        let decoded = percent_decode_str(s).collect::<Vec<u8>>();
        let once = percent_encoding::percent_encode(&decoded, UNRESERVED).to_string();
        utf8_percent_encode(&once, UNRESERVED).to_string()
    });
    segments.collect::<Vec<_>>().join("/")
}

/// A query string as signed: each name and value decoded and encoded again, sorted.
fn canonical_query(query: &str) -> String {
    let encode = |s: &str| {
        let decoded = percent_decode_str(s).collect::<Vec<u8>>();
        percent_encoding::percent_encode(&decoded, UNRESERVED).to_string()
    };
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (encode(k), encode(v))
        })
        .collect();
    pairs.sort();
    pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&")
}

/// `YYYYMMDDTHHMMSSZ` as a time.
fn parse_amz_date(s: &str) -> Option<SystemTime> {
    let format = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let at = time::PrimitiveDateTime::parse(s, format).ok()?.assume_utc();
    let seconds = u64::try_from(at.unix_timestamp()).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(seconds))
}

/// An access key's secret, held in memory that is wiped when it goes (a reload, the end), and
/// the signing keys last derived from it (one a day per region, as AWS's are; the last
/// `DERIVED` kept, for requests either side of midnight and a few regions), so a request
/// costs one HMAC and the secret is copied only when a day starts: `aws-sigv4` formats
/// `"AWS4" + secret` into a string of its own, which is not wiped.
pub struct SigningSecret {
    secret: Zeroizing<String>,
    derived: Mutex<Vec<Derived>>,
}

/// Signing keys kept per secret.
const DERIVED: usize = 4;

struct Derived {
    date: String,
    region: String,
    key: Zeroizing<Vec<u8>>,
}

impl std::fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningSecret(..)")
    }
}

impl SigningSecret {
    /// The secret access key `secret`.
    pub fn new(secret: Zeroizing<String>) -> Self {
        SigningSecret { secret, derived: Mutex::new(Vec::with_capacity(DERIVED)) }
    }

    /// The hex signature of `string_to_sign` for a request dated `at` (`date`, its day as the
    /// scope names it, checked equal) in `region`.
    fn sign(&self, at: SystemTime, date: &str, region: &str, string_to_sign: &[u8]) -> Zeroizing<String> {
        use aws_sigv4::sign::v4::{calculate_signature, generate_signing_key};
        let mut derived = self.derived.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let i = match derived.iter().position(|d| d.date == date && d.region == region) {
            Some(i) => i,
            None => {
                if derived.len() == DERIVED {
                    derived.remove(0);
                }
                let key =
                    Zeroizing::new(generate_signing_key(&self.secret, at, region, "kms").as_ref().to_vec());
                derived.push(Derived { date: date.to_string(), region: region.to_string(), key });
                derived.len() - 1
            }
        };
        Zeroizing::new(calculate_signature(&derived[i].key[..], string_to_sign))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    /// AWS's published worked example of SigV4 (the IAM `ListUsers` GET of 2015-08-30 in
    /// us-east-1, from the "Signature Version 4 signing process" guide): our canonical request
    /// hashes to the published value, and aws-sigv4's key and signature are the published ones.
    #[test]
    fn aws_documented_example_signs_as_published() {
        // From AWS's "Create a signed AWS API request" example (IAM, us-east-1, 20150830).
        let mut headers = HeaderMap::new();
        headers.insert(
            "content-type",
            HeaderValue::from_static("application/x-www-form-urlencoded; charset=utf-8"),
        );
        headers.insert("host", HeaderValue::from_static("iam.amazonaws.com"));
        headers.insert("x-amz-date", HeaderValue::from_static("20150830T123600Z"));
        let request = SignedRequest {
            method: "GET",
            path: "/",
            query: "Action=ListUsers&Version=2010-05-08",
            authority: None,
            headers: &headers,
        };
        let canonical = request.canonical_request("content-type;host;x-amz-date", b"").unwrap();
        assert_eq!(
            data_encoding::HEXLOWER.encode(&Sha256::digest(canonical.as_bytes())),
            "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59"
        );
        let at = parse_amz_date("20150830T123600Z").unwrap();
        let key = aws_sigv4::sign::v4::generate_signing_key(
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            at,
            "us-east-1",
            "iam",
        );
        assert_eq!(
            data_encoding::HEXLOWER.encode(key.as_ref()),
            "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9"
        );
        let sts = "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/iam/aws4_request\n\
                   f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59";
        assert_eq!(
            aws_sigv4::sign::v4::calculate_signature(key, sts.as_bytes()),
            "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
        );
    }

    #[test]
    fn authorization_header_is_parsed_strictly() {
        let with = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert("authorization", HeaderValue::from_static(value));
            headers
        };
        let ok = with(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261126/us-east-1/kms/aws4_request, \
             SignedHeaders=host;x-amz-date, Signature=abcd",
        );
        let r = SignedRequest { method: "POST", path: "/", query: "", authority: None, headers: &ok };
        let auth = r.authorization().unwrap();
        assert_eq!((auth.key_id, auth.region, auth.service), ("AKIDEXAMPLE", "us-east-1", "kms"));
        for bad in [
            "Bearer x",
            "AWS4-HMAC-SHA256 Credential=AKID/20261126/us-east-1/kms/aws4_request, Signature=ab",
            "AWS4-HMAC-SHA256 Credential=AKID/2026112/us-east-1/kms/aws4_request, SignedHeaders=host, Signature=ab",
            "AWS4-HMAC-SHA256 Credential=AKID/20261126/us-east-1/kms, SignedHeaders=host, Signature=ab",
            "AWS4-HMAC-SHA256 Credential=a/20261126/r/kms/aws4_request, Credential=b, SignedHeaders=h, Signature=s",
        ] {
            let h = with(bad);
            let r = SignedRequest { method: "POST", path: "/", query: "", authority: None, headers: &h };
            assert_eq!(r.authorization().unwrap_err().code(), "incomplete_signature", "{bad}");
        }
        let none = HeaderMap::new();
        let r = SignedRequest { method: "POST", path: "/", query: "", authority: None, headers: &none };
        assert_eq!(r.authorization().unwrap_err().code(), "missing_signature");
    }

    /// The head of a well-formed request dated 2026-11-26 06:15:00 UTC, scoped to
    /// us-east-1, with `extra` headers appended (so a name given again is repeated).
    fn head(extra: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            "authorization",
            HeaderValue::from_static(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261126/us-east-1/kms/aws4_request, \
                 SignedHeaders=host;x-amz-date, Signature=abcd",
            ),
        );
        headers.insert("x-amz-date", HeaderValue::from_static("20261126T061500Z"));
        for &(name, value) in extra {
            headers.append(name, HeaderValue::from_static(value));
        }
        headers
    }

    /// The request's time in [`head`].
    fn head_time() -> SystemTime {
        parse_amz_date("20261126T061500Z").unwrap()
    }

    /// Serving us-east-1 and `hosts`.
    fn serving(hosts: &[&str]) -> Audience {
        Audience { regions: vec!["us-east-1".into()], hosts: hosts.iter().map(|h| (*h).to_owned()).collect() }
    }

    /// The `Authorization` header's parse, then `check_head` of `headers` (with `authority`)
    /// against `hosts`, as of the request's time.
    fn check(headers: &HeaderMap, authority: Option<&str>, hosts: &[&str]) -> Result<(), ApiError> {
        let request = SignedRequest { method: "POST", path: "/", query: "", authority, headers };
        let auth = request.authorization()?;
        request.check_head(&auth, &serving(hosts), head_time()).map(drop)
    }

    /// [`check`]'s code.
    fn checked(headers: &HeaderMap, authority: Option<&str>, hosts: &[&str]) -> Result<(), &'static str> {
        check(headers, authority, hosts).map_err(|e| e.code())
    }

    #[test]
    fn hosts_listed_are_served_and_others_refused() {
        let served = ["127.0.0.1:8080", "KMS.example"];
        let at = |host: &'static str| head(&[("host", host)]);
        // Matched as signed (the port included), without regard to ASCII case.
        assert_eq!(checked(&at("127.0.0.1:8080"), None, &served), Ok(()));
        assert_eq!(checked(&at("kms.example"), None, &served), Ok(()));
        for other in ["127.0.0.1", "127.0.0.1:8081", "kms.example:443", "kms.example.evil", "evil"] {
            assert_eq!(checked(&at(other), None, &served), Err("invalid_signature"), "{other}");
        }
        let detail = check(&at("evil"), None, &served).unwrap_err().to_string();
        assert!(detail.contains("\"evil\"") && detail.contains("does not serve"), "{detail}");
    }

    #[test]
    fn an_http2_authority_is_the_host_when_there_is_no_host_header() {
        let served = ["kms.example:8443"];
        assert_eq!(checked(&head(&[]), Some("kms.example:8443"), &served), Ok(()));
        assert_eq!(checked(&head(&[]), Some("other.example:8443"), &served), Err("invalid_signature"));
        // A Host header is what is signed when there is one, as the canonical request takes it.
        let with_host = head(&[("host", "other.example:8443")]);
        assert_eq!(checked(&with_host, Some("kms.example:8443"), &served), Err("invalid_signature"));
        // Neither: no host to serve.
        assert_eq!(checked(&head(&[]), None, &served), Err("invalid_signature"));
    }

    #[test]
    fn no_hosts_listed_serves_any_host() {
        assert_eq!(checked(&head(&[("host", "anything.example:1")]), None, &[]), Ok(()));
        assert_eq!(checked(&head(&[]), Some("elsewhere"), &[]), Ok(()));
        assert_eq!(checked(&head(&[]), None, &[]), Ok(()), "the signature's check refuses it later");
    }

    #[test]
    fn repeated_signing_headers_are_refused_before_the_body() {
        let host = ("host", "kms.example");
        let (sha_a, sha_b) = (("x-amz-content-sha256", "a"), ("x-amz-content-sha256", "b"));
        let repeated = [
            ("Authorization", head(&[host, ("authorization", "garbage")])),
            ("X-Amz-Date", head(&[host, ("x-amz-date", "20261126T061500Z")])),
            ("X-Amz-Content-Sha256", head(&[host, sha_a, sha_b])),
            ("Host", head(&[host, host])),
        ];
        for (shown, headers) in &repeated {
            let refusal = check(headers, None, &[]).unwrap_err();
            assert_eq!(refusal.code(), "incomplete_signature", "{shown}");
            let detail = refusal.to_string();
            assert!(detail.contains(&format!("more than one {shown} header")), "{detail}");
        }
        // Once each is fine.
        let once = head(&[host, sha_a]);
        assert_eq!(checked(&once, None, &["kms.example"]), Ok(()));
    }

    #[test]
    fn a_security_token_is_refused_as_an_unrecognized_client() {
        let headers = head(&[("host", "kms.example"), ("x-amz-security-token", "FwoGZXIvYXdzEXAMPLE")]);
        assert_eq!(checked(&headers, None, &["kms.example"]), Err("unrecognized_client"));
        let refusal = check(&headers, None, &[]).unwrap_err();
        assert_eq!(refusal.code(), "unrecognized_client");
        assert_eq!(refusal.status(), axum::http::StatusCode::UNAUTHORIZED);
        assert!(refusal.to_string().contains("security token included in the request is invalid"));
        // The signature's check refuses it as well (it runs the head's checks first).
        let request =
            SignedRequest { method: "POST", path: "/", query: "", authority: None, headers: &headers };
        let auth = request.authorization().unwrap();
        let secret = SigningSecret::new(Zeroizing::new("secret".to_owned()));
        let verified = request.verify(&auth, &serving(&[]), &secret, b"", head_time());
        assert_eq!(verified.unwrap_err().code(), "unrecognized_client");
    }

    #[test]
    fn amz_dates_parse_and_others_do_not() {
        let at = parse_amz_date("20261126T061500Z").unwrap();
        assert_eq!(at.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(), 1_795_673_700);
        for bad in ["20261126T061500", "2026-11-26T06:15:00Z", "20261326T061500Z", ""] {
            assert!(parse_amz_date(bad).is_none(), "{bad}");
        }
    }
}
