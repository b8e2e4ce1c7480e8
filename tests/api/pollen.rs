//! `POST /pollen`, the Pollen protocol's drop-in: the answer's shape, its checks, and that it
//! goes through the same admission, policy and records as every route.

use std::sync::Arc;

use drbgd::drbg::entropy::OsEntropy;
use sha2::{Digest, Sha256, Sha512};

use crate::helpers::{assert_problem, spawn_app, spawn_with, test_settings};

fn hex(bytes: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(bytes)
}

async fn post(api: &str, body: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{api}/pollen"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("authorization", "Bearer pollen-test-key")
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn answers_the_challenge_and_a_fresh_seed_as_pollen_does() {
    let mut settings = test_settings();
    settings.pollen.enabled = true;
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    // pollinate's challenge: the hex SHA-512 of random bytes, hashed again as its characters.
    let challenge = hex(&Sha512::digest(b"some boot-time bytes"));
    let mut seeds = Vec::new();
    for _ in 0..2 {
        let response = post(&app.api, &format!("challenge={challenge}")).await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["cache-control"], "no-store");
        assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/plain"));
        let body = response.text().await.unwrap();
        let lines: Vec<&str> = body.split_terminator('\n').collect();
        assert_eq!(lines.len(), 2, "{body:?}");
        assert_eq!(lines[0], hex(&Sha512::digest(challenge.as_bytes())), "SHA-512 of the challenge as sent");
        assert_eq!(lines[1].len(), 128, "64 bytes in hex");
        assert!(lines[1].bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert!(body.ends_with('\n'));
        seeds.push(lines[1].to_owned());
    }
    assert_ne!(seeds[0], seeds[1], "fresh output each time");

    // No challenge is answered as the empty one (pollinate --no-challenge, whose curl would
    // seed from a 400's body; Canonical's server answers 400), and other fields (pollinate's
    // tag) are ignored.
    let body = post(&app.api, "").await.text().await.unwrap();
    assert_eq!(body.lines().next().unwrap(), hex(&Sha512::digest(b"")));
    let body = post(&app.api, &format!("tag=vm-1&challenge={challenge}")).await.text().await.unwrap();
    assert_eq!(body.lines().next().unwrap(), hex(&Sha512::digest(challenge.as_bytes())));

    // Bad input: a clear error, nothing generated.
    assert_problem(post(&app.api, "challenge=a&challenge=b").await, 400, "invalid_challenge").await;
    assert_problem(post(&app.api, "challenge=a%0Ab").await, 400, "invalid_challenge").await;
    assert_problem(
        post(&app.api, &format!("challenge={}", "a".repeat(1025))).await,
        400,
        "invalid_challenge",
    )
    .await;
    assert_problem(post(&app.api, &format!("challenge={}", "a".repeat(5000))).await, 400, "invalid_body")
        .await;
    let get = app.get("/pollen").await;
    assert_eq!(get.headers()["allow"], "POST", "the router's 405, also for a GET");
    assert_problem(get, 405, "method_not_allowed").await;

    // Recorded under its own route label, and described in the contract.
    let metrics = reqwest::get(format!("{}/metrics", app.admin)).await.unwrap().text().await.unwrap();
    assert_eq!(crate::helpers::http_requests(&metrics, "/pollen", Some("200")), 4, "{metrics}");
    let doc: serde_json::Value = app.get("/openapi.json").await.json().await.unwrap();
    assert_eq!(doc["paths"]["/pollen"]["post"]["operationId"], "postPollen");
}

#[tokio::test]
async fn off_by_default() {
    let app = spawn_app().await;
    // Not among the routes an open policy lists while it is not served.
    let usage: serde_json::Value = app.get("/usage").await.json().await.unwrap();
    let routes = usage["policy"]["routes"].as_array().unwrap();
    assert!(
        routes.contains(&serde_json::json!("/int")) && !routes.contains(&serde_json::json!("/pollen")),
        "{usage}"
    );
    let challenge = "ab".repeat(64);
    assert_problem(post(&app.api, &format!("challenge={challenge}")).await, 404, "not_found").await;
    let doc: serde_json::Value = app.get("/openapi.json").await.json().await.unwrap();
    assert!(doc["paths"]["/pollen"].is_null());
}

#[tokio::test]
async fn the_callers_policy_and_credentials_apply() {
    let mut settings = test_settings();
    settings.pollen.enabled = true;
    settings.auth.enabled = true;
    let digest = hex(&Sha256::digest(b"pollen-test-key"));
    let mut vm = drbgd::config::callers::CallerSettings { key_sha256: vec![digest], ..Default::default() };
    vm.policy.routes = Some(vec![drbgd::callers::Route::Token]);
    settings.callers.insert("vm".into(), vm);
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let challenge = "ab".repeat(64);
    // /usage lists the routes a policy allows: /pollen only where the server serves it.
    let usage: serde_json::Value = reqwest::Client::new()
        .get(format!("{}/usage", app.api))
        .header("authorization", "Bearer pollen-test-key")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(usage["policy"]["routes"], serde_json::json!(["/token"]), "{usage}");
    // Its key names a caller whose policy leaves /pollen out.
    assert_problem(post(&app.api, &format!("challenge={challenge}")).await, 403, "route_not_allowed").await;
    // No key: refused before the body is read.
    let response = reqwest::Client::new()
        .post(format!("{}/pollen", app.api))
        .body(format!("challenge={challenge}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
}

/// Auth on, `/pollen` open to requests without credentials, and a keyed caller `batch`
/// (`pollen-test-key`).
fn anonymous_seeding() -> drbgd::config::Settings {
    let mut settings = test_settings();
    settings.pollen.enabled = true;
    settings.pollen.anonymous = true;
    settings.auth.enabled = true;
    let digest = hex(&Sha256::digest(b"pollen-test-key"));
    settings.callers.insert(
        "batch".into(),
        drbgd::config::callers::CallerSettings { key_sha256: vec![digest], ..Default::default() },
    );
    settings
}

#[tokio::test]
async fn with_auth_on_anonymous_callers_may_seed_when_allowed() {
    let mut settings = anonymous_seeding();
    let mut anonymous = drbgd::config::callers::CallerSettings::default();
    anonymous.quota.requests_per_second = 1;
    anonymous.quota.burst = 2;
    settings.callers.insert("anonymous".into(), anonymous);
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let anonymous_post = || {
        reqwest::Client::new()
            .post(format!("{}/pollen", app.api))
            .body(format!("challenge={}", "ab".repeat(64)))
            .send()
    };
    assert_eq!(anonymous_post().await.unwrap().status(), 200, "pollinate sends no credentials");
    assert_eq!(anonymous_post().await.unwrap().status(), 200);
    // `anonymous`'s own quota, and nothing else open to it.
    assert_problem(anonymous_post().await.unwrap(), 429, "rate_limited").await;
    assert_problem(app.get("/token").await, 401, "unauthorized").await;
    // A wrong key is refused, never taken for anonymous.
    let response = reqwest::Client::new()
        .post(format!("{}/pollen", app.api))
        .header("authorization", "Bearer wrong")
        .body("challenge=ab")
        .send()
        .await
        .unwrap();
    assert_problem(response, 401, "unauthorized").await;
    assert_eq!(post(&app.api, "challenge=ab").await.status(), 200, "a named caller as before");
}

/// Requests without credentials that `[pollen] anonymous` lets in take public places and a
/// public body deadline, never the places of callers with credentials: heads whose bodies never
/// come, more than the server's whole cap, leave a keyed caller served.
#[tokio::test]
async fn anonymous_seeds_take_no_place_a_keyed_caller_needs() {
    use tokio::io::AsyncWriteExt;
    let mut settings = anonymous_seeding();
    settings.server.concurrency_limit = 4;
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let addr = app.api.trim_start_matches("http://").to_owned();
    let mut held = Vec::new();
    for _ in 0..6 {
        let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let head = "POST /pollen HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-www-form-urlencoded\r\n\
                    content-length: 200\r\n\r\nchallenge=";
        stream.write_all(head.as_bytes()).await.unwrap();
        held.push(stream);
    }
    // The heads are in: as many as the public cap (4, the server's cap here) hold their places,
    // the others were refused at once.
    let in_flight = || async {
        let metrics = reqwest::get(format!("{}/metrics", app.admin)).await.unwrap().text().await.unwrap();
        let line = metrics.lines().find(|l| l.starts_with("drbgd_requests_in_flight ")).unwrap().to_owned();
        line.rsplit(' ').next().unwrap().parse::<i64>().unwrap()
    };
    for _ in 0..500 {
        if in_flight().await >= 4 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(in_flight().await >= 4);
    let response = reqwest::Client::new()
        .get(format!("{}/token", app.api))
        .header("authorization", "Bearer pollen-test-key")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "the keyed caller has its places");
    drop(held);
}
