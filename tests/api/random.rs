//! /bits and /bytes: every format round trip, headers, errors, streaming.

use drbgd::drbg::bits;

use crate::helpers::{assert_problem, spawn_app};

fn decode(format: &str, body: &[u8], n: u64) -> Vec<u8> {
    let text = std::str::from_utf8(body).unwrap_or("");
    match format {
        "binary" => body.to_vec(),
        "hex" => data_encoding::HEXLOWER.decode(text.as_bytes()).expect("lowercase hex"),
        "base64" => data_encoding::BASE64.decode(text.as_bytes()).expect("base64"),
        "base64url" => data_encoding::BASE64URL_NOPAD.decode(text.as_bytes()).expect("base64url"),
        "bits" => {
            assert_eq!(text.len() as u64, n, "one character per bit");
            assert!(text.bytes().all(|c| c == b'0' || c == b'1'), "alphabet");
            let mut out = vec![0u8; bits::byte_len(n) as usize];
            for (i, c) in text.bytes().enumerate() {
                out[i / 8] |= (c - b'0') << (7 - i % 8);
            }
            out
        }
        other => panic!("format {other}"),
    }
}

#[tokio::test]
async fn bits_round_trip_in_every_format() {
    let app = spawn_app().await;
    for format in ["hex", "binary", "base64", "base64url", "bits"] {
        for n in [1u64, 7, 8, 9, 256, 1001, 65_536 * 8 + 5] {
            let r = app.get(&format!("/bits?n={n}&format={format}&alg=blake3")).await;
            assert_eq!(r.status(), 200);
            assert_eq!(r.headers()["x-drbg-alg"], "blake3");
            assert_eq!(r.headers()["x-drbg-bits"], n.to_string().as_str());
            let data = decode(format, &r.bytes().await.unwrap(), n);
            assert_eq!(data.len() as u64, bits::byte_len(n), "{format} n={n}");
            if n % 8 != 0 {
                let spare = data[data.len() - 1] & ((1u8 << (8 - n % 8)) - 1);
                assert_eq!(spare, 0, "{format} n={n}: unused bits must be zero");
            }
        }
    }
}

#[tokio::test]
async fn json_format_counts_the_ones() {
    let app = spawn_app().await;
    for n in [5u64, 1000, 600_000] {
        let r = app.get(&format!("/bits?n={n}&format=json")).await;
        assert_eq!(r.headers()["content-type"], "application/json");
        let v: serde_json::Value = r.json().await.unwrap();
        let data = data_encoding::HEXLOWER.decode(v["data"].as_str().unwrap().as_bytes()).unwrap();
        assert_eq!(v["n"], n);
        assert_eq!(v["alg"], "chacha20");
        assert_eq!(v["ones"].as_u64().unwrap(), bits::count_ones_in_bits(&data, n));
        assert_eq!(data.len() as u64, bits::byte_len(n));
    }
}

#[tokio::test]
async fn aliases_accept_negotiation_and_post() {
    let app = spawn_app().await;
    let r = app.get("/bits?n=64&alg=AES").await;
    assert_eq!(r.headers()["x-drbg-alg"], "aes256ctr");
    assert_eq!(r.headers()["content-type"], "text/plain; charset=utf-8");
    let r = app
        .client
        .get(app.url("/bits?n=64"))
        .header("accept", "application/octet-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["content-type"], "application/octet-stream");
    assert_eq!(r.bytes().await.unwrap().len(), 8);
    let r = app.client.get(app.url("/bits?n=64")).header("accept", "application/json").send().await.unwrap();
    assert_eq!(r.headers()["content-type"], "application/json");
    let r = app
        .client
        .post(app.url("/bits"))
        .json(&serde_json::json!({"n": 12, "alg": "chacha", "format": "bits", "pr": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-drbg-alg"], "chacha20");
    assert_eq!(r.text().await.unwrap().len(), 12);
    let r = app.get("/bytes?n=33&format=binary&alg=blake3").await;
    assert_eq!(r.headers()["x-drbg-bits"], "264");
    assert_eq!(r.bytes().await.unwrap().len(), 33);
}

#[tokio::test]
async fn headers_on_success_and_error() {
    let app = spawn_app().await;
    let r = app.client.get(app.url("/bits?n=256")).header("x-request-id", "abc-123").send().await.unwrap();
    assert_eq!(r.headers()["cache-control"], "no-store");
    assert_eq!(r.headers()["pragma"], "no-cache");
    assert_eq!(r.headers()["x-request-id"], "abc-123");
    let timing = r.headers()["server-timing"].to_str().unwrap().to_owned();
    assert!(timing.starts_with("gen;dur=") && timing.ends_with("desc=\"encode\""), "{timing}");
    // The header's text shares the body's buffer: the body is the output alone.
    let body = r.text().await.unwrap();
    assert!(body.len() == 64 && body.bytes().all(|b| b.is_ascii_hexdigit()), "{body}");
    for (query, format) in
        [("n=7&format=bits", "bits"), ("n=4000&format=json", "json"), ("n=1000&format=base64", "base64")]
    {
        let r = app.get(&format!("/bits?{query}")).await;
        let timing = r.headers()["server-timing"].to_str().unwrap().to_owned();
        assert!(timing.starts_with("gen;dur=") && timing.ends_with("desc=\"encode\""), "{format}: {timing}");
        let body = r.text().await.unwrap();
        assert!(!body.contains("dur="), "{format}: {body}");
        match format {
            "bits" => assert!(body.len() == 7 && body.bytes().all(|b| b == b'0' || b == b'1'), "{body}"),
            "json" => assert_eq!(serde_json::from_str::<serde_json::Value>(&body).unwrap()["n"], 4000),
            _ => assert_eq!(body.len(), 168, "{body}"),
        }
    }
    let r = app.get("/bits?n=0").await;
    assert!(r.headers().contains_key("x-request-id"));
    assert_eq!(r.headers()["pragma"], "no-cache");
    assert_problem(r, 400, "invalid_n").await;
    let r = app.get("/no/such/path").await;
    assert_eq!(r.headers()["cache-control"], "no-store");
    assert_problem(r, 404, "not_found").await;
    // A 405 is problem+json and keeps axum's Allow header.
    let r = app.client.delete(app.url("/bits")).send().await.unwrap();
    assert_eq!(r.headers()["allow"], "GET,HEAD,POST");
    assert_problem(r, 405, "method_not_allowed").await;
    let r = app.client.delete(app.url("/token")).send().await.unwrap();
    assert_eq!(r.headers()["allow"], "GET,HEAD,POST");
    let r = app.client.post(app.url("/openapi.json")).send().await.unwrap();
    assert_eq!(r.headers()["allow"], "GET,HEAD");
    assert_problem(r, 405, "method_not_allowed").await;
}

#[tokio::test]
async fn every_error_case_has_its_status_and_code() {
    let app = spawn_app().await;
    let cases: &[(&str, u16, &str, Option<&str>)] = &[
        ("/bits", 400, "invalid_n", Some("n")),
        ("/bits?n=", 400, "invalid_n", Some("n")),
        ("/bits?n=-5", 400, "invalid_n", Some("n")),
        ("/bits?n=1.5", 400, "invalid_n", Some("n")),
        ("/bits?n=99999999999999999999999", 400, "invalid_n", Some("n")),
        ("/bits?n=0", 400, "invalid_n", Some("n")),
        ("/bits?n=100000001", 400, "n_too_large", Some("n")),
        ("/bytes?n=12500001", 400, "n_too_large", Some("n")),
        ("/bits?n=8&alg=rc4", 400, "unknown_alg", Some("alg")),
        ("/uuid?alg=", 400, "unknown_alg", Some("alg")),
        ("/bits?n=8&format=morse", 400, "unknown_format", Some("format")),
        ("/bits?n=8&pr=maybe", 400, "invalid_boolean", Some("pr")),
        ("/bytes?n=2&pr=", 400, "invalid_boolean", Some("pr")),
        ("/bits?n=8&size=3", 400, "unknown_parameter", Some("size")),
        ("/bits?n=8&n=9", 400, "duplicate_parameter", Some("n")),
        // The first unknown one alphabetically, whatever the order (as for a JSON body).
        ("/bits?n=8&zeta=1&beta=2", 400, "unknown_parameter", Some("beta")),
        (
            "/bits?a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9&j=10&k=11&l=12&m=13&n=14&o=15&p=16",
            400,
            "unknown_parameter",
            Some("a"),
        ),
        (
            "/bits?a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9&j=10&k=11&l=12&m=13&n=14&o=15&p=16&q=17",
            400,
            "too_many_parameters",
            Some("query"),
        ),
        ("/token?bytes=0", 400, "invalid_bytes", Some("bytes")),
        ("/token?bytes=1025", 400, "invalid_bytes", Some("bytes")),
        ("/token?format=base58", 400, "unknown_format", Some("format")),
        ("/nonce?bytes=x", 400, "invalid_bytes", Some("bytes")),
        ("/uuid?count=0", 400, "invalid_count", Some("count")),
        ("/uuid?count=1001", 400, "invalid_count", Some("count")),
        ("/uuid?version=1", 400, "invalid_version", Some("version")),
        ("/int?min=5", 400, "invalid_integer", Some("max")),
        ("/int?min=5&max=1", 400, "invalid_range", Some("min")),
        ("/int?min=0&max=9223372036854775808", 400, "invalid_integer", Some("max")),
    ];
    for (path, status, code, param) in cases {
        let body = assert_problem(app.get(path).await, *status, code).await;
        assert_eq!(body["param"].as_str(), *param, "{path}");
    }
    let r = app
        .client
        .post(app.url("/bits"))
        .header("content-type", "application/json")
        .body("{nope")
        .send()
        .await
        .unwrap();
    assert_problem(r, 400, "invalid_body").await;
    let r = app.client.post(app.url("/bits")).json(&serde_json::json!({"n": [1]})).send().await.unwrap();
    assert_problem(r, 400, "invalid_n").await;
    let r = app
        .client
        .post(app.url("/bits"))
        .json(&serde_json::json!({"n": 8, "pr": "yes"}))
        .send()
        .await
        .unwrap();
    assert_problem(r, 400, "invalid_boolean").await;
    let r =
        app.client.post(app.url("/bits")).json(&serde_json::json!({"n": 8, "alg": 3})).send().await.unwrap();
    assert_problem(r, 400, "invalid_body").await;
    let r = app.client.post(app.url("/bits")).json(&serde_json::json!([8])).send().await.unwrap();
    assert_problem(r, 400, "invalid_body").await;
    let r = app.client.delete(app.url("/bits")).send().await.unwrap();
    assert_problem(r, 405, "method_not_allowed").await;
}

#[tokio::test]
async fn large_responses_stream_with_exact_length() {
    let app = spawn_app().await;
    let n = 10_000_000u64;
    let r = app.get(&format!("/bits?n={n}&format=hex&alg=aes256ctr")).await;
    assert_eq!(r.status(), 200);
    // Streamed chunk by chunk, yet with its exact length known in advance (no chunked framing).
    assert_eq!(r.headers()["content-length"], (2 * bits::byte_len(n)).to_string().as_str());
    assert_eq!(r.headers()["cache-control"], "no-store");
    let body = r.bytes().await.unwrap();
    assert_eq!(body.len() as u64, 2 * bits::byte_len(n));
    let n = 1_000_003u64;
    for format in ["base64", "bits", "binary"] {
        let body = app.get(&format!("/bits?n={n}&format={format}")).await.bytes().await.unwrap();
        let data = decode(format, &body, n);
        assert_eq!(data.len() as u64, bits::byte_len(n), "{format}");
        assert_eq!(data[data.len() - 1] & 0x1f, 0, "{format}: masked tail");
    }
    // HEAD: the same length, no body (and no generation beyond the first chunk).
    let head = app.client.head(app.url(&format!("/bits?n={n}&format=binary"))).send().await.unwrap();
    assert_eq!(head.status(), 200);
    assert_eq!(head.headers()["content-length"], bits::byte_len(n).to_string().as_str());
    assert_eq!(head.headers()["cache-control"], "no-store");
    assert!(head.bytes().await.unwrap().is_empty());
    // JSON ends with the count of ones, so its length is not known before the bits are.
    let r = app.get(&format!("/bits?n={n}&format=json")).await;
    assert!(r.headers().get("content-length").is_none());
    let v: serde_json::Value = r.json().await.unwrap();
    let data = data_encoding::HEXLOWER.decode(v["data"].as_str().unwrap().as_bytes()).unwrap();
    assert_eq!(v["ones"].as_u64().unwrap(), bits::count_ones_in_bits(&data, n));
}

/// A GET of a route's exact path is answered by its endpoint directly, anything else by the
/// router, which serves the same endpoints: a HEAD (the router's) answers every route with the
/// status and headers of its GET (the pipeline's), and a caller refused on one path is
/// refused on the other.
#[tokio::test]
async fn the_router_and_the_direct_path_answer_alike() {
    let app = spawn_app().await;
    // Every GET endpoint (the drop-ins' are off, and answer POST only).
    let endpoints = drbgd::http::ENDPOINTS.iter().filter(|e| e.serves_get());
    for path in endpoints.map(|e| e.paths[0]) {
        let get = app.get(path).await;
        let head = app.client.head(app.url(path)).send().await.unwrap();
        assert_eq!(get.status(), head.status(), "{path}");
        let names = |r: &reqwest::Response| {
            let mut names: Vec<String> = r.headers().keys().map(|k| k.to_string()).collect();
            names.sort();
            names
        };
        assert_eq!(names(&get), names(&head), "{path}");
        for name in ["content-type", "cache-control", "pragma", "x-drbg-alg", "x-drbg-bits"] {
            assert_eq!(get.headers().get(name), head.headers().get(name), "{path} {name}");
        }
        assert_eq!(head.bytes().await.unwrap().len(), 0, "{path}");
        assert!(!get.bytes().await.unwrap().is_empty(), "{path}");
    }
}

/// REST over HTTP/2 (h2c, prior knowledge), many requests at once on one client (one
/// connection): every stream is answered whole, with the pipeline's headers, and each
/// output is its own.
#[tokio::test]
async fn rest_over_http2_answers_many_streams_on_one_connection() {
    let app = spawn_app().await;
    let client = reqwest::Client::builder().http2_prior_knowledge().build().unwrap();
    let requests = (0..64).map(|i| {
        let path = if i % 2 == 0 { "/token" } else { "/bits?n=4096&format=hex" };
        client.get(app.url(path)).send()
    });
    let mut seen = std::collections::HashSet::new();
    for response in futures_util::future::join_all(requests).await {
        let response = response.unwrap();
        assert_eq!(response.version(), reqwest::Version::HTTP_2);
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["cache-control"], "no-store");
        assert!(response.headers().contains_key("x-request-id"));
        let body = response.text().await.unwrap();
        assert!(body.len() == 43 || body.len() == 1024, "{}", body.len());
        assert!(seen.insert(body));
    }
    assert_eq!(seen.len(), 64);
}
