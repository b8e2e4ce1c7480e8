//! `drbg.approved_only`: the SP 800-90A mechanisms only, as the API, gRPC and the admin port
//! show it.

use std::sync::Arc;

use drbgd::config::Settings;
use drbgd::drbg::entropy::OsEntropy;
use drbgd::grpc::pb::randomness_service_client::RandomnessServiceClient as RandomnessClient;
use drbgd::grpc::pb::{Algorithm, GetBitsRequest};

use crate::helpers::{assert_problem, spawn_app, spawn_with};

/// `approved_only` alone, as `drbgd serve --approved-only` sets it: no `default_alg` or
/// `enabled` named.
fn approved_only() -> Settings {
    let overrides = serde_json::json!({
        "server": { "listen": "127.0.0.1:0", "admin_listen": "127.0.0.1:0" },
        "drbg": { "shards": 2, "approved_only": true },
    });
    Settings::load(None, overrides).expect("approved_only alone loads")
}

#[tokio::test]
async fn approved_only_serves_the_sp800_90a_mechanisms_only() {
    let app = spawn_with(approved_only(), Arc::new(OsEntropy)).await;
    for alg in ["chacha20", "blake3", "randen", "CHACHA"] {
        let body =
            assert_problem(app.get(&format!("/bits?n=8&alg={alg}")).await, 400, "alg_not_approved").await;
        assert_eq!(body["param"], "alg", "{alg}");
    }
    assert_problem(app.get("/bits?n=8&alg=rc4").await, 400, "unknown_alg").await;
    let r = app.get("/bits?n=64").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-drbg-alg"], "aes256ctr", "the default follows approved_only");
    let r = app.get("/token?alg=hmac_sha512").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-drbg-alg"], "hmac_sha512");

    let doc: serde_json::Value = app.get("/algorithms").await.json().await.unwrap();
    assert_eq!(doc["default"], "aes256ctr");
    assert_eq!(doc["approved_only"], true);
    let algorithms = doc["algorithms"].as_array().unwrap();
    assert_eq!(algorithms.len(), drbgd::drbg::Algorithm::COUNT);
    for entry in algorithms {
        let approved = entry["approved"].as_bool().unwrap_or_else(|| panic!("no approved: {entry}"));
        assert_eq!(entry["enabled"].as_bool(), Some(approved), "{entry}");
        assert_eq!(entry["served"].as_bool(), Some(approved), "{entry}");
        assert_eq!(entry["self_test"], "passed", "{entry}");
    }
    assert_eq!(algorithms.iter().filter(|e| e["approved"] == true).count(), 7);

    let mut grpc = RandomnessClient::connect(app.api.clone()).await.expect("grpc connects");
    let bits = |alg: Algorithm| GetBitsRequest {
        n: 8,
        alg: alg as i32,
        prediction_resistance: false,
        ..Default::default()
    };
    let status = grpc.get_bits(bits(Algorithm::Chacha20)).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert!(status.message().starts_with("alg_not_approved"), "{}", status.message());
    let reply = grpc.get_bits(bits(Algorithm::Unspecified)).await.unwrap().into_inner();
    assert_eq!(reply.alg, Algorithm::Aes256ctr as i32);

    let readyz = app.client.get(format!("{}/readyz", app.admin)).send().await.unwrap();
    assert_eq!(readyz.status(), 200);
    assert!(readyz.text().await.unwrap().contains("approved-only"));
    let metrics =
        app.client.get(format!("{}/metrics", app.admin)).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("drbgd_approved_only 1"), "{metrics}");
}

#[tokio::test]
async fn without_it_every_entry_still_says_whether_it_is_approved() {
    let app = spawn_app().await;
    let doc: serde_json::Value = app.get("/algorithms").await.json().await.unwrap();
    assert_eq!(doc["default"], "chacha20");
    assert_eq!(doc["approved_only"], false);
    let approved = |name: &str| {
        doc["algorithms"].as_array().unwrap().iter().find(|e| e["name"] == name).unwrap()["approved"].clone()
    };
    assert_eq!(approved("chacha20"), false);
    assert_eq!(approved("hash_sha256"), true);
    let readyz = app.client.get(format!("{}/readyz", app.admin)).send().await.unwrap();
    assert_eq!(readyz.text().await.unwrap(), "ready\n");
    let metrics =
        app.client.get(format!("{}/metrics", app.admin)).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("drbgd_approved_only 0"), "{metrics}");
}
