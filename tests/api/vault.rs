//! Vault's random API drop-in (`/v1/sys/tools/random`, `/v1/transit/random`): Vault's
//! envelope, parameters, limits and errors, the token as a caller's credential, and that the
//! caller's policy and quota apply.

use std::sync::Arc;

use drbgd::drbg::entropy::OsEntropy;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::helpers::{assert_problem, spawn_app, spawn_with, test_settings};

const TOKEN: &str = "vault-test-token";

async fn vault(
    api: &str,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
    body: Value,
) -> (u16, Value) {
    let mut request = reqwest::Client::new().request(method, format!("{api}{path}")).json(&body);
    if let Some(token) = token {
        request = request.header("x-vault-token", token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    assert_eq!(response.headers()["cache-control"], "no-store");
    assert_eq!(response.headers()["content-type"], "application/json");
    (status, response.json().await.unwrap())
}

fn settings() -> drbgd::config::Settings {
    let mut settings = test_settings();
    settings.vault.enabled = true;
    settings.auth.enabled = true;
    let digest = |key: &str| data_encoding::HEXLOWER.encode(&Sha256::digest(key.as_bytes()));
    let mut app =
        drbgd::config::callers::CallerSettings { key_sha256: vec![digest(TOKEN)], ..Default::default() };
    app.policy.routes = Some(vec![drbgd::callers::Route::Vault]);
    app.quota.requests_per_second = 1;
    app.quota.burst = 12;
    settings.callers.insert("vault-app".into(), app);
    let mut web = drbgd::config::callers::CallerSettings {
        key_sha256: vec![digest("web-test-key")],
        ..Default::default()
    };
    web.policy.routes = Some(vec![drbgd::callers::Route::Token]);
    settings.callers.insert("web".into(), web);
    settings
}

#[tokio::test]
async fn answers_as_vault_for_the_tokens_caller() {
    let app = spawn_with(settings(), Arc::new(OsEntropy)).await;
    let post = reqwest::Method::POST;
    let (status, body) = vault(
        &app.api,
        post.clone(),
        "/v1/sys/tools/random",
        Some(TOKEN),
        json!({"bytes": 16, "format": "hex"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let random = body["data"]["random_bytes"].as_str().unwrap();
    assert_eq!(random.len(), 32);
    assert!(random.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    for field in ["request_id", "lease_id", "renewable", "lease_duration", "wrap_info", "warnings", "auth"] {
        assert!(body.get(field).is_some(), "Vault's envelope has {field}: {body}");
    }
    // Vault's defaults (32 bytes, base64), PUT as POST, the transit path and path parameters.
    let (status, body) =
        vault(&app.api, reqwest::Method::PUT, "/v1/transit/random", Some(TOKEN), json!({})).await;
    assert_eq!(status, 200);
    let decoded =
        data_encoding::BASE64.decode(body["data"]["random_bytes"].as_str().unwrap().as_bytes()).unwrap();
    assert_eq!(decoded.len(), 32);
    let (_, body) =
        vault(&app.api, post.clone(), "/v1/transit/random/48", Some(TOKEN), json!({"format": "hex"})).await;
    assert_eq!(body["data"]["random_bytes"].as_str().unwrap().len(), 96);
    let (_, body) =
        vault(&app.api, post.clone(), "/v1/sys/tools/random/seal/8", Some(TOKEN), json!({})).await;
    assert_eq!(body["warnings"][0], "no seal/entropy augmentation available, using platform entropy source");
    // A bearer key names the caller too.
    let response = reqwest::Client::new()
        .post(format!("{}/v1/sys/tools/random", app.api))
        .header("authorization", format!("Bearer {TOKEN}"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    // Vault's errors: bad input 400, a missing or wrong token and a policy refusal 403.
    let errors = |body: &Value| {
        body["errors"].as_array().unwrap().iter().map(|e| e.as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    for (bytes, message) in
        [(0, "\"bytes\" cannot be less than 1"), (131_073, "\"bytes\" should be less than 131072")]
    {
        let (status, body) =
            vault(&app.api, post.clone(), "/v1/sys/tools/random", Some(TOKEN), json!({"bytes": bytes})).await;
        assert_eq!((status, errors(&body)), (400, vec![message.to_owned()]));
    }
    let (status, body) =
        vault(&app.api, post.clone(), "/v1/sys/tools/random/hsm/8", Some(TOKEN), json!({})).await;
    assert_eq!(status, 400);
    assert!(errors(&body)[0].starts_with("unsupported entropy source \"hsm\""), "{body}");
    for token in [None, Some("wrong-token"), Some("web-test-key")] {
        let (status, body) = vault(&app.api, post.clone(), "/v1/transit/random", token, json!({})).await;
        assert_eq!(status, 403, "{token:?}");
        assert!(errors(&body)[0].starts_with("permission denied"), "{body}");
    }
    // The other methods: Vault's 405, with Allow.
    let response = reqwest::Client::new()
        .get(format!("{}/v1/sys/tools/random", app.api))
        .header("x-vault-token", TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    assert_eq!(response.headers()["allow"], "POST,PUT");
    assert_eq!(response.json::<Value>().await.unwrap(), json!({"errors": []}));
    // The token is a credential on Vault's paths only.
    let response = reqwest::Client::new()
        .get(format!("{}/token", app.api))
        .header("x-vault-token", "web-test-key")
        .send()
        .await
        .unwrap();
    assert_problem(response, 401, "unauthorized").await;

    // The caller's quota: Vault's 429 with Retry-After once its burst is spent.
    let mut last = (0, Value::Null);
    for _ in 0..20 {
        last = vault(&app.api, post.clone(), "/v1/sys/tools/random", Some(TOKEN), json!({"bytes": 1})).await;
        if last.0 == 429 {
            break;
        }
    }
    assert_eq!(last.0, 429, "{}", last.1);
    assert!(errors(&last.1)[0].starts_with("rate limit quota exceeded"), "{}", last.1);

    // Recorded under its own labels.
    let metrics = reqwest::get(format!("{}/metrics", app.admin)).await.unwrap().text().await.unwrap();
    for label in ["/v1/sys/tools/random", "/v1/transit/random"] {
        assert!(crate::helpers::http_requests(&metrics, label, Some("200")) > 0, "{label}: {metrics}");
    }
    assert!(
        metrics.contains(r#"drbgd_caller_denials_total{caller="web",code="route_not_allowed"} 1"#),
        "{metrics}"
    );

    // A token revoked by a reload is refused from the next request on.
    let mut revoked = settings();
    revoked.callers.get_mut("vault-app").unwrap().key_sha256.clear();
    app.state.callers.reload(&revoked).unwrap();
    let (status, body) = vault(&app.api, post, "/v1/transit/random", Some(TOKEN), json!({})).await;
    assert_eq!((status, errors(&body)), (403, vec!["permission denied".to_owned()]));
}

#[tokio::test]
async fn off_by_default() {
    let app = spawn_app().await;
    let response = reqwest::Client::new()
        .post(format!("{}/v1/sys/tools/random", app.api))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_problem(response, 404, "not_found").await;
    let response = reqwest::Client::new()
        .post(format!("{}/", app.api))
        .header("x-amz-target", "TrentService.GenerateRandom")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_problem(response, 404, "not_found").await;
    let usage: Value = app.get("/usage").await.json().await.unwrap();
    let routes = usage["policy"]["routes"].as_array().unwrap();
    assert!(!routes.contains(&json!("/v1/sys/tools/random")) && !routes.contains(&json!("kms")), "{usage}");
}

/// A path the router matches with an empty parameter (`//`) is guarded as the router's
/// handler is: Vault's 403 "permission denied" without a token, served with one (the pipeline decides the
/// endpoint with the router's own matcher).
#[tokio::test]
async fn an_empty_segment_is_guarded_as_the_router_matches_it() {
    let app = spawn_with(settings(), Arc::new(OsEntropy)).await;
    let post = reqwest::Method::POST;
    let path = "/v1/sys/tools/random//16";
    let (status, body) = vault(&app.api, post.clone(), path, None, json!({})).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["errors"][0].as_str().is_some_and(|e| e.starts_with("permission denied")),
        "Vault's error envelope: {body}"
    );
    let (status, body) = vault(&app.api, post, path, Some(TOKEN), json!({"format": "hex"})).await;
    assert_eq!(status, 200, "{body}");
}
