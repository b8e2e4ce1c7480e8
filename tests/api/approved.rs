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

/// `drbgd keygen receipt`, `drbgd beacon keygen` and `drbgd generate` under
/// `DRBGD__DRBG__APPROVED_ONLY=true` (or `--approved-only`): the approved default (aes256ctr)
/// when no `--alg` is given, a refusal naming the setting for one that is not approved or for
/// a seed, and no beacon key (a server so configured refuses the beacon).
#[test]
fn approved_only_reaches_the_key_and_output_commands() {
    let dir = std::env::temp_dir().join(format!("drbgd-approved-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let run = |approved: bool, args: &[&str]| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_drbgd"));
        command.args(args).env_remove("DRBGD_CONFIG");
        if approved {
            command.env("DRBGD__DRBG__APPROVED_ONLY", "true");
        }
        command.output().unwrap()
    };
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let refused = |out: std::process::Output| {
        assert!(!out.status.success());
        let error = String::from_utf8(out.stderr).unwrap();
        assert!(error.contains("approved_only"), "the refusal names the setting: {error}");
        error
    };

    // generate: served from an approved mechanism, chacha20 and blake3 refused, and so is a
    // caller's seed (no approved instantiation); `--approved-only` as the environment.
    let out = run(true, &["generate", "--bytes", "16", "--format", "hex"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout.len(), 33);
    refused(run(true, &["generate", "--alg", "chacha20", "--bytes", "4"]));
    refused(run(false, &["generate", "--alg", "chacha20", "--bytes", "4", "--approved-only"]));
    refused(run(true, &["generate", "--alg", "aes256ctr", "--bytes", "4", "--seed", "00"]));
    assert!(run(true, &["generate", "--alg", "hmac_sha256", "--bytes", "4"]).status.success());
    assert!(run(false, &["generate", "--alg", "blake3", "--bytes", "4", "--seed", "00"]).status.success());
    // An algorithm the configuration does not enable is refused, as the server refuses it.
    let mut only_aes = std::process::Command::new(env!("CARGO_BIN_EXE_drbgd"));
    only_aes
        .args(["generate", "--alg", "hash_sha256", "--bytes", "4"])
        .env("DRBGD__DRBG__ENABLED", "[\"aes256ctr\"]");
    let out = only_aes.env("DRBGD__DRBG__DEFAULT_ALG", "aes256ctr").output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("drbg.enabled"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // keygen receipt: drawn from the approved default, or refused for chacha20 (no file left).
    let out = run(true, &["keygen", "receipt", "--out", &path("r1.pem")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("aes256ctr"), "it says what drew the key");
    let error = refused(run(true, &["keygen", "receipt", "--out", &path("r2.pem"), "--alg", "chacha20"]));
    assert!(error.contains("aes256ctr"), "the refusal lists what is approved: {error}");
    assert!(!dir.join("r2.pem").exists());
    let out = run(false, &["keygen", "receipt", "--out", &path("r3.pem")]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("chacha20"));
    let out = run(false, &["keygen", "receipt", "--out", &path("r4.pem"), "--approved-only"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("aes256ctr"), "--approved-only as the environment");

    // beacon keygen: refused, with or without --alg; without the setting it makes a key.
    refused(run(true, &["beacon", "keygen", "--out", &path("b1.key")]));
    refused(run(true, &["keygen", "beacon", "--out", &path("b2.key"), "--alg", "aes256ctr"]));
    assert!(!dir.join("b1.key").exists() && !dir.join("b2.key").exists());
    assert!(run(false, &["beacon", "keygen", "--out", &path("b3.key")]).status.success());
    let _ = std::fs::remove_dir_all(&dir);
}
