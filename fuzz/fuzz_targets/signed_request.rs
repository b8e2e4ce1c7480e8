//! Arbitrary signed requests (the KMS front-end's AWS SigV4): an `Authorization` header, an
//! `X-Amz-Date`, other headers, a path, a query and a body from the input, through the head's
//! checks and the verification: an answer, never a panic, and never a pass (that would take an
//! HMAC-SHA256 under a key the input does not hold).
#![no_main]

use std::time::{Duration, SystemTime};

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Fields separated by NUL: authorization, x-amz-date, a signed header's value, path, query, body.
    let mut fields = data.split(|&b| b == 0);
    let mut next = || fields.next().unwrap_or_default();
    let (auth, date, value, path, query, body) = (next(), next(), next(), next(), next(), next());
    let mut headers = http::HeaderMap::new();
    for (name, value) in
        [("authorization", auth), ("x-amz-date", date), ("x-amz-target", value), ("host", value)]
    {
        if let Ok(value) = http::HeaderValue::from_bytes(value) {
            headers.insert(name, value);
        }
    }
    let path = String::from_utf8_lossy(path);
    let query = String::from_utf8_lossy(query);
    let request = drbgd::callers::sigv4::SignedRequest {
        method: "POST",
        path: &path,
        query: &query,
        authority: Some("drbgd.internal"),
        headers: &headers,
    };
    let Ok(authorization) = request.authorization() else { return };
    let regions = ["us-east-1".to_owned()];
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_673_700);
    let _ = request.check_head(&authorization, &regions, now);
    let secret = drbgd::callers::sigv4::SigningSecret::new(zeroize::Zeroizing::new("fuzz-secret".to_owned()));
    let verified = request.verify(&authorization, &regions, &secret, body, now);
    assert!(verified.is_err(), "a signature verified without its secret");
});
