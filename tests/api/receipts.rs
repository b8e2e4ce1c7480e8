//! Signed receipts: a receipt verifies against the published keys with nothing of drbgd's
//! (ed25519-dalek and an RFC 8785 canonicaliser), any change makes it fail, `/verify` says so,
//! every refusal has its code, gRPC's receipts verify as REST's, keys reload, and `/keys` and
//! `/verify` need no credentials.

use std::path::PathBuf;
use std::sync::Arc;

use drbgd::config::Settings;
use drbgd::drbg::entropy::OsEntropy;
use ed25519_dalek::{Signature, VerifyingKey};
use serde_json::{Value, json};
use sha2::Digest;

use crate::helpers::{TestApp, assert_problem, spawn_app, spawn_with, test_settings};

/// A fresh directory for one test's key files.
fn key_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("drbgd-receipts-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes an Ed25519 key of 32 `seed` bytes as PKCS#8 PEM (mode 0600) into `dir`; its key id.
fn write_key(dir: &std::path::Path, name: &str, seed: u8) -> (PathBuf, String) {
    use std::os::unix::fs::PermissionsExt;
    let (pem, public) = drbgd::receipts::keys::private_pem(&[seed; 32]).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, pem.as_bytes()).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    (path, public.id)
}

/// Test settings with receipts on, signed by a key of `seed`.
fn receipt_settings(tag: &str, seed: u8) -> Settings {
    let (path, _) = write_key(&key_dir(tag), "signing.pem", seed);
    let mut settings = test_settings();
    settings.receipts.enabled = true;
    settings.receipts.signing_keys = vec![path.display().to_string()];
    settings
}

async fn spawn_receipts(tag: &str) -> TestApp {
    spawn_with(receipt_settings(tag, 7), Arc::new(OsEntropy)).await
}

/// The verification keys `GET /keys` publishes, by key id, read as any JOSE library would.
async fn published_keys(app: &TestApp) -> Vec<(String, VerifyingKey)> {
    let r = app.get("/keys").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    let set: Value = r.json().await.unwrap();
    set["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            assert_eq!((k["kty"].as_str(), k["crv"].as_str()), (Some("OKP"), Some("Ed25519")), "{k}");
            assert_eq!((k["use"].as_str(), k["alg"].as_str()), (Some("sig"), Some("EdDSA")), "{k}");
            let x = data_encoding::BASE64URL_NOPAD.decode(k["x"].as_str().unwrap().as_bytes()).unwrap();
            let key = VerifyingKey::from_bytes(&x.try_into().unwrap()).unwrap();
            // The key id is the SHA-256 of the raw public key, its first 16 hex digits.
            let digest = data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(key.as_bytes()));
            let id = digest[..16].to_string();
            assert_eq!(k["kid"], id.as_str());
            (id, key)
        })
        .collect()
}

/// Checks `receipt` (the answer's JSON) as a verifier with no drbgd code would: re-canonicalise
/// `random` (RFC 8785), verify the signature with the key `random.key_id` names.
fn verifies(receipt: &Value, keys: &[(String, VerifyingKey)]) -> bool {
    let canonical = serde_json_canonicalizer::to_vec(&receipt["random"]).unwrap();
    let Some((_, key)) = keys.iter().find(|(id, _)| receipt["random"]["key_id"] == id.as_str()) else {
        return false;
    };
    let Ok(signature) =
        data_encoding::BASE64URL_NOPAD.decode(receipt["signature"].as_str().unwrap().as_bytes())
    else {
        return false;
    };
    let Ok(signature) = Signature::from_slice(&signature) else { return false };
    key.verify_strict(&canonical, &signature).is_ok()
}

/// A receipt's answer: JSON, not cached, its `random` exactly the canonical JSON signed.
async fn receipt_of(r: reqwest::Response) -> Value {
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    assert_eq!(r.headers()["cache-control"], "no-store");
    let text = r.text().await.unwrap();
    let receipt: Value = serde_json::from_str(&text).unwrap();
    let canonical = serde_json_canonicalizer::to_string(&receipt["random"]).unwrap();
    assert!(text.starts_with(&format!("{{\"random\":{canonical},\"signature\":\"")), "{text}");
    receipt
}

/// `POST /verify` of `receipt` (no credentials).
async fn verify(app: &TestApp, receipt: &Value) -> Value {
    let r = app.client.post(app.url("/verify")).json(receipt).send().await.unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

/// `receipt` with one character of its output changed.
fn one_byte_changed(receipt: &Value) -> Value {
    let mut changed = receipt.clone();
    let data = changed["random"]["data"].as_str().unwrap().to_string();
    let first = if data.starts_with('0') { "1" } else { "0" };
    changed["random"]["data"] = format!("{first}{}", &data[1..]).into();
    changed
}

#[tokio::test]
async fn a_bits_receipt_verifies_against_the_published_keys_and_a_changed_byte_does_not() {
    let app = spawn_receipts("bits").await;
    let keys = published_keys(&app).await;
    assert_eq!(keys.len(), 1);
    let r = app.get("/bits?n=256&receipt=true&user_data=audit%20sample%2042").await;
    assert_eq!(r.headers()["x-drbg-alg"], "chacha20");
    assert_eq!(r.headers()["x-drbg-bits"], "256");
    let receipt = receipt_of(r).await;
    let random = &receipt["random"];
    assert_eq!(random["endpoint"], "/bits");
    assert_eq!(random["alg"], "chacha20");
    assert_eq!(
        (random["n"].as_u64(), random["format"].as_str(), random["pr"].as_bool()),
        (Some(256), Some("hex"), Some(false))
    );
    let data = data_encoding::HEXLOWER.decode(random["data"].as_str().unwrap().as_bytes()).unwrap();
    assert_eq!(data.len(), 32);
    assert_eq!(random["caller"], "anonymous");
    assert_eq!(random["user_data"], "audit sample 42");
    assert_eq!(random["key_id"], keys[0].0.as_str());
    let serial = uuid::Uuid::parse_str(random["serial"].as_str().unwrap()).unwrap();
    assert_eq!(serial.get_version_num(), 7, "a UUIDv7");
    let issued_at = random["issued_at"].as_str().unwrap();
    assert!(
        issued_at.len() == 24 && issued_at.ends_with('Z') && issued_at.as_bytes()[19] == b'.',
        "{issued_at}"
    );
    assert!(verifies(&receipt, &keys));
    let answer = verify(&app, &receipt).await;
    assert_eq!(answer, json!({"valid": true, "key_id": keys[0].0, "serial": serial.to_string()}));

    let changed = one_byte_changed(&receipt);
    assert!(!verifies(&changed, &keys));
    let answer = verify(&app, &changed).await;
    assert_eq!(
        (answer["valid"].as_bool(), answer["reason"].as_str()),
        (Some(false), Some("signature_mismatch"))
    );
    // Serials differ from one receipt to the next; the times follow each other.
    let next = receipt_of(app.get("/bits?n=256&receipt=true").await).await;
    assert_ne!(next["random"]["serial"], random["serial"]);
    assert!(next["random"].get("user_data").is_none(), "absent unless given");
    assert!(next["random"]["issued_at"].as_str() >= random["issued_at"].as_str());
}

#[tokio::test]
async fn post_receipts_of_every_value_endpoint_verify() {
    let app = spawn_receipts("post").await;
    let keys = published_keys(&app).await;
    let post = |path: &'static str, body: Value| app.client.post(app.url(path)).json(&body).send();
    let token = receipt_of(
        post(
            "/token",
            json!({"bytes": 16, "format": "hex", "receipt": true, "user_data": "tirage n°7 \"A\""}),
        )
        .await
        .unwrap(),
    )
    .await;
    let random = &token["random"];
    assert_eq!((random["endpoint"].as_str(), random["bytes"].as_u64()), (Some("/token"), Some(16)));
    assert_eq!(random["data"].as_str().map(str::len), Some(32));
    assert_eq!(random["user_data"], "tirage n°7 \"A\"");
    assert!(verifies(&token, &keys));
    assert_eq!(verify(&app, &token).await["valid"], true);
    assert_eq!(verify(&app, &one_byte_changed(&token)).await["valid"], false);
    // Binary output is carried as base64, and says so.
    let bytes =
        receipt_of(post("/bytes", json!({"n": 48, "format": "binary", "receipt": true})).await.unwrap())
            .await;
    assert_eq!(
        (bytes["random"]["n"].as_u64(), bytes["random"]["format"].as_str()),
        (Some(48), Some("binary"))
    );
    assert_eq!(bytes["random"]["data_encoding"], "base64");
    let raw = data_encoding::BASE64.decode(bytes["random"]["data"].as_str().unwrap().as_bytes()).unwrap();
    assert_eq!(raw.len(), 48);
    assert!(verifies(&bytes, &keys));
    let uuids =
        receipt_of(post("/uuid", json!({"count": 3, "version": 7, "receipt": true})).await.unwrap()).await;
    assert_eq!(uuids["random"]["data"].as_array().map(Vec::len), Some(3));
    assert!(verifies(&uuids, &keys));
    let nonce = receipt_of(app.get("/nonce?receipt=true").await).await;
    assert_eq!(
        (nonce["random"]["bytes"].as_u64(), nonce["random"]["format"].as_str()),
        (Some(12), Some("hex"))
    );
    assert!(verifies(&nonce, &keys));
    // Without receipt=true a POST answers as the GET does.
    let plain = post("/token", json!({"bytes": 8, "format": "hex"})).await.unwrap();
    assert_eq!(plain.text().await.unwrap().len(), 16);
}

#[tokio::test]
async fn int_bounds_beyond_2_53_are_strings_and_small_ones_numbers() {
    let app = spawn_receipts("int").await;
    let keys = published_keys(&app).await;
    let path = "/int?min=-9223372036854775808&max=9223372036854775807&count=5&receipt=true";
    let receipt = receipt_of(app.get(path).await).await;
    let random = &receipt["random"];
    assert_eq!(random["min"], "-9223372036854775808");
    assert_eq!(random["max"], "9223372036854775807");
    assert_eq!(random["count"], 5);
    let values = random["data"].as_array().unwrap();
    assert_eq!(values.len(), 5);
    assert!(values.iter().all(|v| v.as_str().is_some_and(|s| s.parse::<i64>().is_ok())), "{values:?}");
    assert!(verifies(&receipt, &keys));
    assert_eq!(verify(&app, &receipt).await["valid"], true);
    // The same through a JSON body, a bound as a string of digits.
    let body = json!({"min": "9007199254740993", "max": 9_007_199_254_740_999_i64, "receipt": true});
    let r = app.client.post(app.url("/int")).json(&body).send().await.unwrap();
    let receipt = receipt_of(r).await;
    assert_eq!(
        (receipt["random"]["min"].as_str(), receipt["random"]["max"].as_str()),
        (Some("9007199254740993"), Some("9007199254740999"))
    );
    assert!(verifies(&receipt, &keys));
    let small = receipt_of(app.get("/int?min=1&max=6&count=3&receipt=true").await).await;
    assert_eq!((small["random"]["min"].as_i64(), small["random"]["max"].as_i64()), (Some(1), Some(6)));
    assert!(verifies(&small, &keys));
}

#[tokio::test]
async fn each_refusal_has_its_code() {
    // Receipts off (the default).
    let off = spawn_app().await;
    assert_problem(off.get("/bits?n=8&receipt=true").await, 400, "receipts_disabled").await;
    assert_eq!(off.get("/bits?n=8&receipt=false").await.status(), 200);
    assert_eq!(published_keys(&off).await.len(), 0, "no keys, none published");

    let app = spawn_receipts("refusals").await;
    // Over the stream threshold (64 KiB of output): 600,000 bits are 75,000 bytes.
    let body = assert_problem(app.get("/bits?n=600000&receipt=true").await, 400, "receipt_too_large").await;
    assert_eq!(body["param"], "receipt");
    assert_problem(app.get("/bytes?n=65537&receipt=true").await, 400, "receipt_too_large").await;
    assert_eq!(app.get("/bytes?n=65536&receipt=true").await.status(), 200);
    let long = "a".repeat(1025);
    let r = app.get(&format!("/token?receipt=true&user_data={long}")).await;
    assert_problem(r, 400, "user_data_too_large").await;
    assert_eq!(app.get(&format!("/token?receipt=true&user_data={}", &long[1..])).await.status(), 200);
    assert_problem(app.get("/token?user_data=note").await, 400, "user_data_without_receipt").await;
    assert_problem(app.get("/token?receipt=yes").await, 400, "invalid_boolean").await;
    // user_data escapes that are no UTF-8 are refused, not signed as U+FFFD.
    assert_problem(app.get("/token?receipt=true&user_data=%FF").await, 400, "invalid_encoding").await;
    // HEAD leaves out the body a receipt is in.
    let r = app.client.head(app.url("/token?receipt=true")).send().await.unwrap();
    assert_eq!(r.status(), 400);
    // A POST body naming a member twice is refused, as a repeated query parameter is.
    let r = app
        .client
        .post(app.url("/token"))
        .body(r#"{"receipt": false, "receipt": true}"#)
        .send()
        .await
        .unwrap();
    assert_problem(r, 400, "invalid_body").await;
    let r = app.client.post(app.url("/token")).json(&json!({"receipt": "true"})).send().await.unwrap();
    assert_problem(r, 400, "invalid_boolean").await;

    // /verify: a body that is no receipt is a problem, not a verdict; one over the cap is 413.
    for body in [
        "{nope",
        "[]",
        r#"{"random": 5, "signature": "x"}"#,
        r#"{"random": {}, "signature": "x", "more": 1}"#,
        // A member twice: readers differ on which counts.
        r#"{"random": {"data": "FAKE", "data": "REAL"}, "signature": "x"}"#,
    ] {
        let r = app.client.post(app.url("/verify")).body(body).send().await.unwrap();
        assert_problem(r, 400, "invalid_receipt").await;
    }
    // The cap: 8 bytes of JSON a byte of output (ASCII bits), and 16 KiB for the rest.
    let cap = 65_536 * 8 + 16 * 1024;
    let huge = format!("{{\"random\": {{\"data\": \"{}\"}}, \"signature\": \"x\"}}", "0".repeat(cap + 1000));
    let r = app.client.post(app.url("/verify")).body(huge).send().await.unwrap();
    assert_problem(r, 413, "body_too_large").await;
    let unknown = json!({"random": {"key_id": "0000000000000000", "serial": "s"}, "signature": "AAAA"});
    let answer = verify(&app, &unknown).await;
    assert_eq!(
        answer,
        json!({"valid": false, "reason": "unknown_key", "key_id": "0000000000000000", "serial": "s"})
    );
    // A number drbgd never signs: invalid whatever the signature.
    let inexact = json!({"random": {"key_id": "0000000000000000", "n": 256.0}, "signature": "AAAA"});
    assert_eq!(verify(&app, &inexact).await["reason"], "inexact_number");
    assert_eq!(app.client.get(app.url("/verify")).send().await.unwrap().status(), 405);
}

#[tokio::test]
async fn keys_and_verify_are_public_and_a_policy_may_refuse_receipts() {
    let mut settings = receipt_settings("auth", 9);
    settings.auth.enabled = true;
    let digest = |key: &[u8]| data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(key));
    let caller = |key: &[u8], receipts: bool| {
        let mut table =
            drbgd::config::callers::CallerSettings { key_sha256: vec![digest(key)], ..Default::default() };
        table.policy.receipts = receipts;
        table
    };
    settings.callers.insert("web".into(), caller(b"web-key", true));
    settings.callers.insert("batch".into(), caller(b"batch-key", false));
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let as_caller = |key: &str, path: &str| app.client.get(app.url(path)).bearer_auth(key).send();
    assert_problem(app.get("/bits?n=256&receipt=true").await, 401, "unauthorized").await;
    let receipt = receipt_of(as_caller("web-key", "/bits?n=256&receipt=true").await.unwrap()).await;
    assert_eq!(receipt["random"]["caller"], "web");
    // No credentials: the keys and the check are public.
    let keys = published_keys(&app).await;
    assert!(verifies(&receipt, &keys));
    assert_eq!(verify(&app, &receipt).await["valid"], true);
    // A caller whose policy refuses receipts: 403 on every random endpoint, REST and gRPC,
    // counted; its plain requests are served.
    let paths = [
        "/bits?n=8",
        "/bytes?n=1",
        "/token?",
        "/nonce?",
        "/uuid?",
        "/int?min=1&max=6",
        "/sequence?min=1&max=6",
    ];
    for path in paths {
        let r = as_caller("batch-key", &format!("{path}&receipt=true")).await.unwrap();
        assert_problem(r, 403, "receipts_not_allowed").await;
        assert_eq!(as_caller("batch-key", path).await.unwrap().status(), 200, "{path}");
    }
    let denied = refused_receipts_over_grpc(&app, "batch-key").await;
    let usage: Value = as_caller("batch-key", "/usage").await.unwrap().json().await.unwrap();
    assert_eq!(usage["policy"]["receipts"], false);
    assert_eq!(usage["counters"]["denied"]["receipts_not_allowed"], (paths.len() + denied) as u64);
}

/// Every unary gRPC method asked for a receipt by `key`'s caller, whose policy refuses them:
/// each is `PERMISSION_DENIED`. How many were asked.
async fn refused_receipts_over_grpc(app: &TestApp, key: &str) -> usize {
    use drbgd::grpc::pb::randomness_service_client::RandomnessServiceClient;
    use drbgd::grpc::pb::*;
    use tonic::Code;
    let mut c = RandomnessServiceClient::connect(app.api.clone()).await.unwrap();
    use crate::callers::with_key;
    let codes = [
        c.get_bits(with_key(key, GetBitsRequest { n: 8, receipt: true, ..Default::default() }))
            .await
            .map(drop),
        c.get_bytes(with_key(key, GetBytesRequest { n: 1, receipt: true, ..Default::default() }))
            .await
            .map(drop),
        c.get_token(with_key(key, GetTokenRequest { receipt: true, ..Default::default() })).await.map(drop),
        c.get_nonce(with_key(key, GetNonceRequest { receipt: true, ..Default::default() })).await.map(drop),
        c.get_uuids(with_key(key, GetUuidsRequest { receipt: true, ..Default::default() })).await.map(drop),
        c.get_ints(with_key(key, GetIntsRequest { max: 6, receipt: true, ..Default::default() }))
            .await
            .map(drop),
        c.get_sequence(with_key(key, GetSequenceRequest { max: 6, receipt: true, ..Default::default() }))
            .await
            .map(drop),
    ];
    for (i, result) in codes.iter().enumerate() {
        let status = result.as_ref().unwrap_err();
        assert_eq!(status.code(), Code::PermissionDenied, "method {i}: {status:?}");
    }
    codes.len()
}

#[tokio::test]
async fn a_grpc_receipt_verifies_as_a_rest_one() {
    use drbgd::grpc::pb::randomness_service_client::RandomnessServiceClient;
    use drbgd::grpc::pb::{GetBitsRequest, GetIntsRequest};
    let app = spawn_receipts("grpc").await;
    let keys = published_keys(&app).await;
    let mut client = RandomnessServiceClient::connect(app.api.clone()).await.unwrap();
    let request = GetBitsRequest { n: 256, receipt: true, user_data: "grpc".into(), ..Default::default() };
    let reply = client.get_bits(request).await.unwrap().into_inner();
    let random: Value = serde_json::from_str(&reply.receipt_json).unwrap();
    assert_eq!(
        serde_json_canonicalizer::to_string(&random).unwrap(),
        reply.receipt_json,
        "the JCS text itself"
    );
    assert_eq!((random["endpoint"].as_str(), random["format"].as_str()), (Some("/bits"), Some("binary")));
    let data = data_encoding::BASE64.decode(random["data"].as_str().unwrap().as_bytes()).unwrap();
    assert_eq!(data, reply.data, "the receipt covers the reply's output");
    let receipt = json!({"random": random, "signature": reply.receipt_signature});
    assert!(verifies(&receipt, &keys));
    assert_eq!(verify(&app, &receipt).await["valid"], true);
    assert_eq!(verify(&app, &one_byte_changed(&receipt)).await["valid"], false);
    let request =
        GetIntsRequest { min: i64::MIN, max: i64::MAX, count: 3, receipt: true, ..Default::default() };
    let reply = client.get_ints(request).await.unwrap().into_inner();
    let random: Value = serde_json::from_str(&reply.receipt_json).unwrap();
    assert_eq!(random["min"], "-9223372036854775808");
    let strings: Vec<String> = reply.values.iter().map(ToString::to_string).collect();
    assert_eq!(random["data"], json!(strings));
    assert!(verifies(&json!({"random": random, "signature": reply.receipt_signature}), &keys));
    // Without receipt, no receipt fields; user_data alone is refused.
    let plain = client.get_bits(GetBitsRequest { n: 8, ..Default::default() }).await.unwrap().into_inner();
    assert!(plain.receipt_json.is_empty() && plain.receipt_signature.is_empty());
    let refused = client.get_bits(GetBitsRequest { n: 8, user_data: "x".into(), ..Default::default() }).await;
    let status = refused.unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert!(status.message().starts_with("user_data_without_receipt: "), "{status:?}");
}

#[tokio::test]
async fn keys_reload_and_older_receipts_still_verify() {
    let dir = key_dir("reload");
    let (signing, first_id) = write_key(&dir, "signing.pem", 11);
    let mut settings = test_settings();
    settings.receipts.enabled = true;
    settings.receipts.signing_keys =
        vec![signing.display().to_string(), dir.join("previous.pem").display().to_string()];
    // The second key's file exists from the start: a retired key, kept for its receipts.
    write_key(&dir, "previous.pem", 12);
    let app = drbgd::app::App::build(settings).await.unwrap();
    let reloader = app.reloader();
    let app = crate::helpers::run(app);
    let old = receipt_of(app.get("/token?receipt=true").await).await;
    assert_eq!(old["random"]["key_id"], first_id.as_str());
    // Rotation in place: the new key first, the old one second.
    std::fs::rename(signing, dir.join("previous.pem")).unwrap();
    let (_, new_id) = write_key(&dir, "signing.pem", 13);
    assert!(reloader.reload_all());
    let keys = published_keys(&app).await;
    assert_eq!(
        keys.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
        [new_id.as_str(), first_id.as_str()]
    );
    let new = receipt_of(app.get("/token?receipt=true").await).await;
    assert_eq!(new["random"]["key_id"], new_id.as_str());
    assert!(verifies(&new, &keys) && verifies(&old, &keys), "the old receipt verifies with the kept key");
    assert_eq!(verify(&app, &old).await["valid"], true);
    // A key file that is no key: the reload fails, the keys in force stay.
    std::fs::write(dir.join("signing.pem"), "not a key").unwrap();
    assert!(!reloader.reload_all());
    assert_eq!(published_keys(&app).await.len(), 2);
    assert_eq!(receipt_of(app.get("/token?receipt=true").await).await["random"]["key_id"], new_id.as_str());
}

#[tokio::test]
async fn the_laptop_example_serves_verifiable_receipts() {
    let overrides = json!({"server": {"listen": "127.0.0.1:0", "admin_listen": "127.0.0.1:0"}});
    let path = std::path::Path::new("config/examples/verifiable.toml");
    let settings = Settings::load(Some(path), overrides).unwrap();
    assert!(settings.receipts.enabled && !settings.auth.enabled);
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let keys = published_keys(&app).await;
    assert_eq!(keys.len(), 1);
    let receipt = receipt_of(app.get("/bits?n=256&receipt=true").await).await;
    assert!(verifies(&receipt, &keys));
}
