//! The gRPC API through a tonic client: every method, its errors, health and auth.

use std::sync::Arc;

use drbgd::drbg::bits;
use drbgd::grpc::pb::randomness_service_client::RandomnessServiceClient as RandomnessClient;
use drbgd::grpc::pb::{
    Algorithm, Format, GetBitsRequest, GetBytesRequest, GetIntsRequest, GetNonceRequest, GetTokenRequest,
    GetUuidsRequest, StreamBitsRequest,
};
use futures_util::StreamExt;
use sha2::Digest;
use tonic::Code;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};

use crate::helpers::{TestApp, spawn_app, spawn_with, test_settings};

/// A client with tonic's defaults: in particular the 4 MiB receive limit every default gRPC
/// client applies. Every documented maximum must fit it.
async fn client(app: &TestApp) -> RandomnessClient<tonic::transport::Channel> {
    RandomnessClient::connect(app.api.clone()).await.expect("grpc connects")
}

fn assert_status(result: Result<impl std::fmt::Debug, tonic::Status>, code: Code, machine: &str) {
    let status = result.expect_err("must fail");
    assert_eq!(status.code(), code, "{status:?}");
    assert!(status.message().starts_with(&format!("{machine}: ")), "{status:?}");
}

#[tokio::test]
async fn unary_methods_return_valid_output() {
    let app = spawn_app().await;
    let mut c = client(&app).await;
    let cases = [
        (1u64, Algorithm::Chacha20),
        (13, Algorithm::Aes256ctr),
        (4096, Algorithm::Blake3),
        (drbgd::grpc::MAX_UNARY_BITS, Algorithm::Unspecified),
    ];
    for (n, alg) in cases {
        let r = c
            .get_bits(GetBitsRequest {
                n,
                alg: alg as i32,
                prediction_resistance: n == 13,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.n, n);
        assert_eq!(r.data.len() as u64, bits::byte_len(n));
        assert_eq!(r.ones, bits::count_ones_in_bits(&r.data, n));
        assert_eq!(bits::count_ones(&r.data), r.ones, "unused bits are zero");
        let expected = if alg == Algorithm::Unspecified { Algorithm::Chacha20 } else { alg };
        assert_eq!(r.alg, expected as i32, "unspecified means the server's default");
    }
    let r = c
        .get_bytes(GetBytesRequest {
            n: 33,
            alg: Algorithm::Blake3 as i32,
            prediction_resistance: false,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(r.get_ref().data.len(), 33);
    let t = c
        .get_token(GetTokenRequest { bytes: 0, format: 0, alg: 0, ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(data_encoding::BASE64URL_NOPAD.decode(t.token.as_bytes()).unwrap().len(), 32);
    assert_eq!(t.format, Format::Base64url as i32);
    let t = c
        .get_token(GetTokenRequest { bytes: 16, format: Format::Hex as i32, alg: 0, ..Default::default() })
        .await
        .unwrap();
    assert_eq!(t.get_ref().token.len(), 32);
    // GetNonce: 12 bytes of hex by default, as GET /nonce.
    let nonce = c
        .get_nonce(GetNonceRequest { bytes: 0, format: 0, alg: 0, ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((nonce.nonce.len(), nonce.format), (24, Format::Hex as i32));
    let nonce = c
        .get_nonce(GetNonceRequest { bytes: 24, format: Format::Base64 as i32, alg: 0, ..Default::default() })
        .await
        .unwrap();
    assert_eq!(data_encoding::BASE64.decode(nonce.get_ref().nonce.as_bytes()).unwrap().len(), 24);
    let u = c
        .get_uuids(GetUuidsRequest { count: 10, version: 7, alg: 0, ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(u.uuids.len(), 10);
    assert!(u.uuids.iter().all(|id| id.as_bytes()[14] == b'7'));
    let i = c
        .get_ints(GetIntsRequest {
            min: -3,
            max: 3,
            count: 500,
            alg: Algorithm::Aes256ctr as i32,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(i.values.len(), 500);
    assert!(i.values.iter().all(|v| (-3..=3).contains(v)));
}

#[tokio::test]
async fn documented_maxima_fit_a_default_client() {
    let app = spawn_app().await;
    let mut c = client(&app).await;
    let max_bytes = drbgd::grpc::MAX_UNARY_BITS / 8;
    let r = c
        .get_bytes(GetBytesRequest {
            n: max_bytes,
            alg: Algorithm::Aes256ctr as i32,
            prediction_resistance: false,
            ..Default::default()
        })
        .await;
    assert_eq!(r.unwrap().into_inner().data.len() as u64, max_bytes);
    let r = c.get_bytes(GetBytesRequest {
        n: max_bytes + 1,
        alg: 0,
        prediction_resistance: false,
        ..Default::default()
    });
    assert_status(r.await, Code::InvalidArgument, "n_too_large");
    let r =
        c.get_uuids(GetUuidsRequest { count: 1000, version: 7, alg: 0, ..Default::default() }).await.unwrap();
    assert_eq!(r.into_inner().uuids.len(), 1000);
    let r = c.get_ints(GetIntsRequest {
        min: i64::MIN,
        max: i64::MAX,
        count: 1000,
        alg: 0,
        ..Default::default()
    });
    assert_eq!(r.await.unwrap().into_inner().values.len(), 1000);
    let r = c
        .get_token(GetTokenRequest { bytes: 1024, format: Format::Hex as i32, alg: 0, ..Default::default() })
        .await;
    assert_eq!(r.unwrap().into_inner().token.len(), 2048);
    // A chunk size above 1 MiB is clamped to it: 3 MiB arrive as chunks of at most 1 MiB.
    let n = 3u64 << 23;
    let request = StreamBitsRequest { n, alg: 0, chunk_bytes: u32::MAX, prediction_resistance: false };
    let mut stream = c.stream_bits(request).await.unwrap().into_inner();
    let (mut total, mut largest) = (0u64, 0usize);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        largest = largest.max(chunk.data.len());
        total += chunk.n_bits;
    }
    assert_eq!(total, n);
    assert!(largest <= drbgd::grpc::MAX_STREAM_CHUNK_BYTES && largest > 1 << 19, "{largest}");
}

#[tokio::test]
async fn errors_map_to_grpc_codes_with_machine_codes() {
    let app = spawn_app().await;
    let mut c = client(&app).await;
    let bits =
        |n: u64, alg: i32| GetBitsRequest { n, alg, prediction_resistance: false, ..Default::default() };
    assert_status(c.get_bits(bits(0, 0)).await, Code::InvalidArgument, "invalid_n");
    assert_status(
        c.get_bits(bits(drbgd::grpc::MAX_UNARY_BITS + 1, 0)).await,
        Code::InvalidArgument,
        "n_too_large",
    );
    assert_status(c.get_bits(bits(8, 77)).await, Code::InvalidArgument, "unknown_alg");
    let r = c.get_token(GetTokenRequest { bytes: 2000, format: 0, alg: 0, ..Default::default() }).await;
    assert_status(r, Code::InvalidArgument, "invalid_bytes");
    let r = c.get_token(GetTokenRequest { bytes: 8, format: 99, alg: 0, ..Default::default() }).await;
    assert_status(r, Code::InvalidArgument, "unknown_format");
    let r = c.get_uuids(GetUuidsRequest { count: 5000, version: 4, alg: 0, ..Default::default() }).await;
    assert_status(r, Code::InvalidArgument, "invalid_count");
    let r = c.get_ints(GetIntsRequest { min: 5, max: 1, count: 1, alg: 0, ..Default::default() }).await;
    assert_status(r, Code::InvalidArgument, "invalid_range");
    let r = c
        .stream_bits(StreamBitsRequest {
            n: 100_000_001,
            alg: 0,
            chunk_bytes: 0,
            prediction_resistance: false,
        })
        .await;
    assert_status(r, Code::InvalidArgument, "n_too_large");
}

#[tokio::test]
async fn stream_bits_delivers_exactly_n_and_stops_on_cancel() {
    let app = spawn_app().await;
    let mut c = client(&app).await;
    let n = 10_000_003u64;
    let req = StreamBitsRequest {
        n,
        alg: Algorithm::Aes256ctr as i32,
        chunk_bytes: 65_536,
        prediction_resistance: false,
    };
    let mut stream = c.stream_bits(req).await.unwrap().into_inner();
    let (mut total_bits, mut bytes, mut chunks, mut expected_offset) = (0u64, 0u64, 0, 0u64);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        assert_eq!(chunk.offset_bits, expected_offset);
        assert_eq!(chunk.ones, bits::count_ones(&chunk.data));
        expected_offset += chunk.n_bits;
        total_bits += chunk.n_bits;
        bytes += chunk.data.len() as u64;
        chunks += 1;
    }
    assert_eq!(total_bits, n);
    assert_eq!(bytes, bits::byte_len(n));
    assert!(chunks > 10, "{chunks} chunks");
    // Cancel after the first chunk: the server stops (the next call still works at once).
    let req = StreamBitsRequest { n: 100_000_000, alg: 0, chunk_bytes: 0, prediction_resistance: false };
    let mut stream = c.stream_bits(req).await.unwrap().into_inner();
    assert!(stream.next().await.unwrap().is_ok());
    drop(stream);
    let r =
        c.get_bits(GetBitsRequest { n: 8, alg: 0, prediction_resistance: false, ..Default::default() }).await;
    assert!(r.is_ok());
}

#[tokio::test]
async fn health_follows_readiness_and_auth_is_enforced() {
    let mut settings = test_settings();
    settings.auth.enabled = true;
    settings.auth.api_key_sha256 = vec![data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(b"k3y"))];
    let mut app = spawn_with(settings, Arc::new(drbgd::drbg::entropy::OsEntropy)).await;
    let mut c = client(&app).await;
    let req = || GetBitsRequest { n: 8, alg: 0, prediction_resistance: false, ..Default::default() };
    assert_status(c.get_bits(req()).await, Code::Unauthenticated, "unauthorized");
    let mut authed = tonic::Request::new(req());
    authed.metadata_mut().insert("authorization", "Bearer k3y".parse().unwrap());
    assert!(c.get_bits(authed).await.is_ok());

    let channel = tonic::transport::Endpoint::from_shared(app.api.clone()).unwrap().connect().await.unwrap();
    let mut health = HealthClient::new(channel);
    let check = |service: &str| HealthCheckRequest { service: service.into() };
    let mut serving = false;
    for _ in 0..100 {
        let status = health.check(check("drbgd.v1.RandomnessService")).await.map(|r| r.into_inner().status);
        if status.is_ok_and(|s| s == ServingStatus::Serving as i32) {
            serving = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(serving, "health reports SERVING once ready");
    let mut watch = health.watch(check("")).await.unwrap().into_inner();
    assert_eq!(watch.next().await.unwrap().unwrap().status, ServingStatus::Serving as i32);
    app.stop();
    let next = tokio::time::timeout(std::time::Duration::from_secs(5), watch.next()).await;
    let status = next.expect("health changes on shutdown").map(|r| r.map(|r| r.status));
    assert!(
        matches!(status, Some(Ok(s)) if s == ServingStatus::NotServing as i32)
            || !matches!(status, Some(Ok(_))),
        "{status:?}"
    );
}

/// Every `drbgd_*` series named by the Grafana dashboards and the alert rules exists in a live
/// `/metrics` after HTTP, gRPC and error traffic (the quota store's series in that of a replica
/// configured with a shared store, here an unreachable one).
#[tokio::test]
async fn dashboards_and_rules_only_use_exported_series() {
    let app = spawn_app().await;
    app.get("/bits?n=4096").await.bytes().await.unwrap();
    app.get("/bits?n=0").await.bytes().await.unwrap();
    let mut c = client(&app).await;
    c.get_bits(GetBitsRequest { n: 64, alg: 0, prediction_resistance: false, ..Default::default() })
        .await
        .unwrap();
    let mut with_store = crate::helpers::test_settings();
    with_store.quota.store = drbgd::config::quota::StoreKind::Redis;
    with_store.quota.url = "redis://127.0.0.1:9".into();
    let fleet =
        crate::helpers::spawn_with(with_store, std::sync::Arc::new(drbgd::drbg::entropy::OsEntropy)).await;
    let scrape = |admin: String| {
        let client = app.client.clone();
        async move { client.get(format!("{admin}/metrics")).send().await.unwrap().text().await.unwrap() }
    };
    // Tickets on (their store's series), and a beacon following a drand network (its
    // upstream unreachable: the series are exported all the same).
    let tickets_dir = crate::tickets::dir("series");
    let tickets = crate::helpers::spawn_with(
        crate::tickets::ticket_settings(&tickets_dir),
        std::sync::Arc::new(drbgd::drbg::entropy::OsEntropy),
    )
    .await;
    // A ticket refused (unknown): the refusals' series by code.
    let refused = tickets
        .client
        .post(tickets.url("/int"))
        .bearer_auth("alice-key")
        .json(&serde_json::json!({"min": 1, "max": 6, "ticket": "01a24949-c3e5-74af-9d49-2c2f1dbf2f0d"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 404);
    let mut following = crate::helpers::test_settings();
    following.beacon.enabled = true;
    following.beacon.source = drbgd::config::beacon::BeaconSource::Drand;
    following.beacon.upstreams = vec!["http://127.0.0.1:9".into()];
    following.beacon.allow_http = true;
    following.beacon.chain_hash = "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971".into();
    following.beacon.public_key = drbgd::beacon::key::QUICKNET_PUBLIC_KEY.into();
    following.beacon.upstream_timeout_ms = 200;
    let follower =
        crate::helpers::spawn_with(following, std::sync::Arc::new(drbgd::drbg::entropy::OsEntropy)).await;
    let alone = scrape(app.admin.clone()).await;
    assert!(!alone.contains("drbgd_quota_store"), "a replica without a shared store exports no store series");
    assert!(!alone.contains("drbgd_results_store"), "a replica without tickets exports no store series");
    assert!(!alone.contains("drbgd_beacon_"), "a replica not following a network exports no beacon series");
    let metrics = alone
        + &scrape(fleet.admin.clone()).await
        + &scrape(tickets.admin.clone()).await
        + &scrape(follower.admin.clone()).await;
    let _ = std::fs::remove_dir_all(&tickets_dir);
    let root = env!("CARGO_MANIFEST_DIR");
    let mut names = std::collections::BTreeSet::new();
    let files = [
        "deploy/grafana/dashboards/drbgd.json",
        "deploy/grafana/dashboards/k6.json",
        "deploy/prometheus/rules.yml",
    ];
    for file in files {
        let text = std::fs::read_to_string(format!("{root}/{file}")).unwrap();
        for (i, _) in text.match_indices("drbgd_") {
            if text[..i].ends_with("k6_") {
                continue; // k6's own metrics (remote-written by the load tests)
            }
            let name: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            names.insert(name);
        }
    }
    assert!(names.len() >= 12, "{names:?}");
    for name in &names {
        let exported =
            metrics.lines().any(|l| l.strip_prefix(name.as_str()).is_some_and(|r| r.starts_with(['{', ' '])));
        assert!(exported, "{name} is used by a dashboard or rule but not exported");
    }
}
