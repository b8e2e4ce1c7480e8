//! Arbitrary HTTP requests through the API's call pipeline (admission, routing, query strings
//! and JSON bodies into typed requests, the endpoints, the error mapping): no panic, every
//! response `no-store` with a request id, no 500.
//!
//! Input: a method byte, then the request target (path and query) up to the first newline,
//! then header lines (`name: value`) up to an empty line, then the body.
// libFuzzer's main; built as a test (`cargo test --all-targets`), libtest's, with no tests.
#![cfg_attr(not(test), no_main)]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

const METHODS: [&str; 6] = ["GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS"];

fuzz_target!(|data: &[u8]| {
    let Some((&method, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let (target, rest) = text.split_once('\n').unwrap_or((&text, ""));
    let (head, body) = rest.split_once("\n\n").unwrap_or((rest, ""));
    let mut request =
        http::Request::builder().method(METHODS[usize::from(method) % METHODS.len()]).uri(target);
    for line in head.lines() {
        if let Some((name, value)) = line.split_once(':') {
            request = request.header(name.trim(), value.trim());
        }
    }
    let Ok(request) = request.body(http_body_util::Full::new(Bytes::from(body.to_string()))) else { return };
    drbgd_fuzz::call(request, 1 << 20);
});
