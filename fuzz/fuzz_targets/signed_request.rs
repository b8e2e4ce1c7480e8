//! Arbitrary signed requests (the KMS front-end's AWS SigV4): an `Authorization` header, an
//! `X-Amz-Date`, other headers (some repeated, a security token at times), a path, a query, a
//! body and a served host from the input, through the head's checks and the verification: an
//! answer, never a panic, and never a pass (that would take an HMAC-SHA256 under a key the
//! input does not hold).
// libFuzzer's main; built as a test (`cargo test --all-targets`), libtest's, with no tests.
#![cfg_attr(not(test), no_main)]

use std::time::{Duration, SystemTime};

use drbgd::callers::sigv4::{Audience, SignedRequest, SigningSecret};
use libfuzzer_sys::fuzz_target;

/// Headers a repeated value may be appended to (the first byte of the field picks one).
const REPEATABLE: [&str; 5] =
    ["authorization", "x-amz-date", "x-amz-content-sha256", "host", "x-amz-security-token"];

fuzz_target!(|data: &[u8]| {
    // Fields separated by NUL: authorization, x-amz-date, a signed header's value, path, query,
    // body, a `[kms] hosts` entry (none if empty), and a header's second value (its first byte
    // names the header, of REPEATABLE).
    let mut fields = data.split(|&b| b == 0);
    let mut next = || fields.next().unwrap_or_default();
    let (auth, date, value, path, query, body) = (next(), next(), next(), next(), next(), next());
    let (served_host, again) = (next(), next());
    let mut headers = http::HeaderMap::new();
    for (name, value) in [("authorization", auth), ("x-amz-date", date), ("x-amz-target", value)] {
        if let Ok(value) = http::HeaderValue::from_bytes(value) {
            headers.insert(name, value);
        }
    }
    // No Host header when the value is empty: the authority is the host then (HTTP/2).
    if !value.is_empty()
        && let Ok(value) = http::HeaderValue::from_bytes(value)
    {
        headers.insert("host", value);
    }
    if let Some((&which, rest)) = again.split_first()
        && let Ok(value) = http::HeaderValue::from_bytes(rest)
    {
        headers.append(REPEATABLE[usize::from(which) % REPEATABLE.len()], value);
    }
    let path = String::from_utf8_lossy(path);
    let query = String::from_utf8_lossy(query);
    let request = SignedRequest {
        method: "POST",
        path: &path,
        query: &query,
        authority: Some("drbgd.internal"),
        headers: &headers,
    };
    let Ok(authorization) = request.authorization() else { return };
    let hosts = if served_host.is_empty() {
        Vec::new()
    } else {
        vec!["drbgd.internal".to_owned(), String::from_utf8_lossy(served_host).into_owned()]
    };
    let served = Audience { regions: vec!["us-east-1".to_owned()], hosts };
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_673_700);
    let _ = request.check_head(&authorization, &served, now);
    let secret = SigningSecret::new(zeroize::Zeroizing::new("fuzz-secret".to_owned()));
    let verified = request.verify(&authorization, &served, &secret, body, now);
    assert!(verified.is_err(), "a signature verified without its secret");
});
