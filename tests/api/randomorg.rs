//! The RANDOM.ORG door (`POST /json-rpc/4/invoke`): JSON-RPC framing and RANDOM.ORG's codes,
//! the Basic and Signed methods, signatures checked with nothing of drbgd's (AWS-LC's
//! verifier over the bytes of the answer), tickets used once (an identical retry 422, the
//! result back through `getResult` and `getTicket`), the daily allowances. The signed
//! results' store on SQLite and, with `DRBGD_TEST_POSTGRES_URL`, PostgreSQL. The official
//! Python client drives it in `scripts/randomorg-check.py`.

use std::sync::{Arc, OnceLock};

use drbgd::config::Settings;
use drbgd::drbg::entropy::OsEntropy;
use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_with, test_settings};
use crate::tickets::{Store, on_both_stores, settings_on};

/// The callers' keys (`alice` and `bob`, as the tickets' tests name them).
const ALICE: &str = "alice-key";
const BOB: &str = "bob-key";

/// One RSA key for every test of the binary (4,096 bits take a second to make).
fn key_file() -> &'static std::path::Path {
    static KEY: OnceLock<std::path::PathBuf> = OnceLock::new();
    KEY.get_or_init(|| {
        let (pem, _) = drbgd::randomorg::Signer::generate().unwrap();
        let dir = std::env::temp_dir().join(format!("drbgd-randomorg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("randomorg.pem");
        std::fs::write(&path, pem.as_bytes()).unwrap();
        path
    })
}

fn with_door(mut settings: Settings) -> Settings {
    settings.randomorg.enabled = true;
    settings.randomorg.signing_key = Some(key_file().to_owned());
    settings
}

/// A server with the door and tickets in `store` (`None`: no PostgreSQL server here).
async fn spawn(store: Store, tag: &str) -> Option<TestApp> {
    Some(spawn_with(with_door(settings_on(store, tag).await?), Arc::new(OsEntropy)).await)
}

/// A JSON-RPC call: the raw body and its JSON.
async fn call(app: &TestApp, method: &str, params: Value) -> (String, Value) {
    let body = json!({"jsonrpc": "2.0", "method": method, "params": params, "id": "c0ffee"});
    let r = app.client.post(app.url("/json-rpc/4/invoke")).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-store");
    let text = r.text().await.unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["jsonrpc"], "2.0");
    assert_eq!(value["id"], "c0ffee");
    (text, value)
}

/// `method`'s result, which must not be an error.
async fn result(app: &TestApp, method: &str, params: Value) -> (String, Value) {
    let (text, value) = call(app, method, params).await;
    assert!(value.get("error").is_none(), "{method}: {text}");
    (text, value["result"].clone())
}

/// `method`'s error code.
async fn error(app: &TestApp, method: &str, params: Value) -> i64 {
    let (text, value) = call(app, method, params).await;
    value["error"]["code"].as_i64().unwrap_or_else(|| panic!("{method}: no error in {text}"))
}

/// The bytes of the `random` member in a raw answer: what the signature covers.
fn signed_bytes(text: &str) -> &str {
    let start = text.find(r#""random":"#).unwrap() + r#""random":"#.len();
    let end = text.find(r#","signature":"#).unwrap();
    &text[start..end]
}

/// Whether `signature` verifies over `message` with the PEM public key, by AWS-LC's verifier
/// (RSA, PKCS #1 v1.5, SHA-512).
fn verifies(public_pem: &str, message: &[u8], signature: &str) -> bool {
    use aws_lc_rs::signature::{RSA_PKCS1_2048_8192_SHA512, UnparsedPublicKey};
    let der: String = public_pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let spki = data_encoding::BASE64.decode(der.as_bytes()).unwrap();
    let signature = data_encoding::BASE64.decode(signature.as_bytes()).unwrap();
    UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA512, spki).verify(message, &signature).is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn basic_methods_answer_randomorgs_shapes() {
    let Some(app) = spawn(Store::Sqlite, "ro_basic").await else { return };
    let (_, r) = result(&app, "generateIntegers", json!({"apiKey": ALICE, "n": 6, "min": 1, "max": 6, "replacement": null, "base": null, "pregeneratedRandomization": null})).await;
    let data = r["random"]["data"].as_array().unwrap();
    assert_eq!(data.len(), 6);
    assert!(data.iter().all(|v| (1..=6).contains(&v.as_i64().unwrap())));
    assert!(r["random"]["completionTime"].as_str().unwrap().ends_with('Z'));
    assert_eq!(r["bitsUsed"], 16, "round(6 log2 6)");
    for field in ["bitsLeft", "requestsLeft", "advisoryDelay"] {
        assert!(r[field].is_u64(), "{field}: {r}");
    }
    let (_, r) =
        result(&app, "generateIntegers", json!({"apiKey": ALICE, "n": 4, "min": 0, "max": 255, "base": 16}))
            .await;
    assert!(
        r["random"]["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v.as_str().is_some_and(|s| u8::from_str_radix(s, 16).is_ok()))
    );
    let (_, r) = result(
        &app,
        "generateIntegerSequences",
        json!({"apiKey": ALICE, "n": 2, "length": [5, 1], "min": 1, "max": [69, 26], "replacement": false}),
    )
    .await;
    assert_eq!(r["bitsUsed"], 36, "RANDOM.ORG's own example");
    let seqs = r["random"]["data"].as_array().unwrap();
    assert_eq!((seqs[0].as_array().unwrap().len(), seqs[1].as_array().unwrap().len()), (5, 1));
    let (_, r) =
        result(&app, "generateDecimalFractions", json!({"apiKey": ALICE, "n": 5, "decimalPlaces": 4})).await;
    assert!(
        r["random"]["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v.as_f64().is_some_and(|x| (0.0..1.0).contains(&x)))
    );
    let (_, r) = result(
        &app,
        "generateGaussians",
        json!({"apiKey": ALICE, "n": 3, "mean": 100, "standardDeviation": 15, "significantDigits": 4}),
    )
    .await;
    assert_eq!(r["random"]["data"].as_array().unwrap().len(), 3);
    let (_, r) =
        result(&app, "generateStrings", json!({"apiKey": ALICE, "n": 3, "length": 8, "characters": "abcé"}))
            .await;
    assert!(
        r["random"]["data"].as_array().unwrap().iter().all(|v| v
            .as_str()
            .unwrap()
            .chars()
            .all(|c| "abcé".contains(c)))
    );
    let (_, r) = result(&app, "generateUUIDs", json!({"apiKey": ALICE, "n": 2})).await;
    assert_eq!(r["bitsUsed"], 244);
    let (_, r) =
        result(&app, "generateBlobs", json!({"apiKey": ALICE, "n": 1, "size": 64, "format": "hex"})).await;
    assert_eq!(r["random"]["data"][0].as_str().unwrap().len(), 16);
    let (_, usage) = result(&app, "getUsage", json!({"apiKey": ALICE})).await;
    assert_eq!(usage["status"], "running");
    assert!(usage["totalRequests"].as_u64().unwrap() >= 9, "{usage}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn framing_and_parameter_errors_have_randomorgs_codes() {
    let Some(app) = spawn(Store::Sqlite, "ro_errors").await else { return };
    let raw = |body: &'static str, content_type: &'static str| {
        app.client.post(app.url("/json-rpc/4/invoke")).header("content-type", content_type).body(body).send()
    };
    let code_of = |v: Value| v["error"]["code"].as_i64().unwrap();
    // A JSON body's answer: HTTP 200 and the JSON-RPC object in it.
    let rpc = async |body: &'static str| {
        let r = raw(body, "application/json").await.unwrap();
        assert_eq!(r.status(), 200, "{body}");
        r.json::<Value>().await.unwrap()
    };
    assert_eq!(code_of(rpc("{not json").await), -32700);
    let r = rpc(r#"[{"jsonrpc":"2.0","method":"getUsage","id":1}]"#).await;
    assert_eq!(code_of(r), -32600, "no batches");
    let r = rpc(r#"{"method":"getUsage","id":7}"#).await;
    assert_eq!((code_of(r.clone()), r["id"].clone()), (-32600, json!(7)), "jsonrpc missing, id echoed");
    let r = rpc(r#"{"jsonrpc":"2.0","method":"getUsage","params":{"apiKey":"a","apiKey":"b"},"id":1}"#).await;
    assert_eq!(code_of(r), -32600, "a member named twice");
    let r = raw(
        r#"{"jsonrpc":"2.0","method":"generateUUIDs","params":{"apiKey":"alice-key","n":1}}"#,
        "application/json",
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 204, "a notification: no answer, nothing drawn");
    let r = raw(r#"{"jsonrpc":"2.0","method":"getUsage","id":1}"#, "text/plain").await.unwrap();
    assert_eq!(r.status(), 415);
    let r = app.client.get(app.url("/json-rpc/4/invoke")).send().await.unwrap();
    assert_eq!((r.status().as_u16(), r.headers()["allow"].to_str().unwrap()), (405, "POST"));
    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"getUsage","params":{{"apiKey":"{}"}},"id":1}}"#,
        "k".repeat(600 * 1024)
    );
    let r = app
        .client
        .post(app.url("/json-rpc/4/invoke"))
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    assert_eq!(error(&app, "fooBar", json!({"apiKey": ALICE})).await, -32601);
    assert_eq!(
        error(&app, "generateStrings", json!({"apiKey": ALICE, "n": 1, "length": 2, "chars": "ab"})).await,
        -32602
    );
    assert_eq!(
        error(&app, "generateIntegers", json!({"apiKey": "nobody", "n": 1, "min": 1, "max": 6})).await,
        400
    );
    for (params, code) in [
        (json!({"n": 100_000, "min": 1, "max": 6}), 202),
        (json!({"n": 1, "min": 10, "max": 0}), 300),
        (json!({"n": 20, "min": 0, "max": 9, "replacement": false}), 301),
        (json!({"n": 1, "min": 0, "max": 9, "base": 7}), 201),
        (json!({"n": "1", "min": 0, "max": 9}), 200),
        (json!({"n": 1, "min": 0, "max": 9, "pregeneratedRandomization": {"id": "x"}}), 201),
    ] {
        let mut params = params;
        params["apiKey"] = json!(ALICE);
        assert_eq!(error(&app, "generateIntegers", params.clone()).await, code, "{params}");
    }
    assert_eq!(
        error(
            &app,
            "generateIntegerSequences",
            json!({"apiKey": ALICE, "n": 3, "length": [1, 2, 3, 4], "min": 1, "max": 6})
        )
        .await,
        203
    );
    assert_eq!(
        error(
            &app,
            "generateIntegerSequences",
            json!({"apiKey": ALICE, "n": 4, "length": [1], "min": 1, "max": 6})
        )
        .await,
        204
    );
    assert_eq!(error(&app, "generateSignedIntegers", json!({"apiKey": ALICE, "n": 1, "min": 1, "max": 6, "licenseData": {"maxPayout": {"currency": "USD", "amount": 1}}})).await, 425);
    let long = "x".repeat(1001);
    assert_eq!(
        error(
            &app,
            "generateSignedIntegers",
            json!({"apiKey": ALICE, "n": 1, "min": 1, "max": 6, "userData": long})
        )
        .await,
        203
    );
    assert_eq!(error(&app, "getResult", json!({"apiKey": ALICE, "serialNumber": 12345})).await, 303);
    assert_eq!(error(&app, "listTickets", json!({"apiKey": ALICE, "ticketType": "all"})).await, 201);
}

async fn signed_results_verify_and_tickets_are_used_once(store: Store) {
    let Some(settings) = settings_on(store, "ro_signed").await else { return };
    let settings = with_door(settings);
    let app = spawn_with(settings.clone(), Arc::new(OsEntropy)).await;
    // A second replica on the same store: serial numbers are the store's, one sequence for both.
    let other = spawn_with(settings, Arc::new(OsEntropy)).await;
    let mut serials = Vec::new();
    for replica in [&app, &other, &app, &other] {
        let (_, r) = result(replica, "generateSignedUUIDs", json!({"apiKey": BOB, "n": 1})).await;
        serials.push(r["random"]["serialNumber"].as_u64().unwrap());
    }
    assert!(serials.windows(2).all(|w| w[1] == w[0] + 1), "one increasing sequence: {serials:?}");
    // From at least the time in microseconds the store opened: a new or restored store never
    // repeats a number the key signed before.
    assert!(serials[0] > 1_700_000_000_000_000, "{serials:?}");
    let public = app.get("/json-rpc/4/public-key").await.text().await.unwrap();
    assert!(public.starts_with("-----BEGIN PUBLIC KEY-----"), "{public}");
    let user_data = json!({"draw": "weekly", "week": 49});
    let (text, r) = result(&app, "generateSignedIntegers", json!({"apiKey": ALICE, "n": 5, "min": 1, "max": 49, "replacement": false, "userData": user_data, "ticketId": null})).await;
    let random = &r["random"];
    assert_eq!(random["method"], "generateSignedIntegers");
    let hashed = data_encoding::BASE64.encode(&<sha2::Sha512 as sha2::Digest>::digest(ALICE.as_bytes()));
    assert_eq!(random["hashedApiKey"], hashed.as_str());
    assert_eq!(random["userData"], user_data);
    assert_eq!((random["base"].clone(), random["ticketData"].clone()), (json!(10), Value::Null));
    let signature = r["signature"].as_str().unwrap();
    assert!(verifies(&public, signed_bytes(&text).as_bytes(), signature), "the answer's bytes verify");
    assert!(!verifies(&public, signed_bytes(&text).replace("weekly", "daily").as_bytes(), signature));
    let (_, v) = result(&app, "verifySignature", json!({"random": random, "signature": signature})).await;
    assert_eq!(v, json!({"authenticity": true}));
    let mut changed = random.clone();
    changed["data"][0] = json!(random["data"][0].as_i64().unwrap() % 49 + 1);
    let (_, v) = result(&app, "verifySignature", json!({"random": changed, "signature": signature})).await;
    assert_eq!(v, json!({"authenticity": false}));
    // getResult: the answer as it was kept, byte for byte.
    let serial = random["serialNumber"].as_u64().unwrap();
    let (again, _) = result(&app, "getResult", json!({"apiKey": ALICE, "serialNumber": serial})).await;
    assert_eq!(again.replace(r#""id":"c0ffee""#, ""), text.replace(r#""id":"c0ffee""#, ""));
    assert_eq!(
        error(&app, "getResult", json!({"apiKey": BOB, "serialNumber": serial})).await,
        303,
        "another caller's"
    );
    // The same kept result at drbgd's own door, to its caller.
    let rest =
        app.client.get(app.url(&format!("/results/{serial}"))).bearer_auth(ALICE).send().await.unwrap();
    assert_eq!(rest.status(), 200);
    let rest: Value = rest.json().await.unwrap();
    assert_eq!(rest["random"], *random);
    // A ticket: used once, its retry 422, read back through getTicket and getResult.
    let (_, made) =
        result(&app, "createTickets", json!({"apiKey": ALICE, "n": 2, "showResult": false})).await;
    let made = made.as_array().unwrap();
    assert_eq!(made.len(), 2);
    let ticket = made[0]["ticketId"].as_str().unwrap().to_owned();
    let (_, t) = result(&app, "getTicket", json!({"ticketId": ticket})).await;
    assert!(t["usedTime"].is_null() && t.get("result").is_none(), "{t}");
    assert_eq!(error(&app, "revealTickets", json!({"apiKey": ALICE, "ticketId": ticket})).await, 426);
    assert_eq!(
        error(&app, "generateSignedUUIDs", json!({"apiKey": BOB, "n": 1, "ticketId": ticket})).await,
        421
    );
    let draw = json!({"apiKey": ALICE, "n": 1, "ticketId": ticket});
    let (text, r) = result(&app, "generateSignedUUIDs", draw.clone()).await;
    let ticket_data = &r["random"]["ticketData"];
    assert_eq!(ticket_data["ticketId"], ticket.as_str());
    assert!(ticket_data["previousTicketId"].is_null());
    let next = ticket_data["nextTicketId"].as_str().unwrap().to_owned();
    assert!(verifies(&public, signed_bytes(&text).as_bytes(), r["signature"].as_str().unwrap()));
    assert_eq!(error(&app, "generateSignedUUIDs", draw).await, 422, "an identical retry too");
    assert_eq!(
        error(
            &app,
            "generateSignedUUIDs",
            json!({"apiKey": ALICE, "n": 1, "ticketId": "0190a0b0-0000-7000-8000-000000000000"})
        )
        .await,
        420
    );
    let (_, t) = result(&app, "getTicket", json!({"ticketId": ticket})).await;
    assert_eq!((t["nextTicketId"].as_str(), t["showResult"].clone()), (Some(next.as_str()), json!(false)));
    assert!(t.get("result").is_none(), "not shown before it is revealed");
    let (_, n) = result(&app, "revealTickets", json!({"apiKey": ALICE, "ticketId": ticket})).await;
    assert_eq!(n, json!({"ticketCount": 1}));
    let (_, t) = result(&app, "getTicket", json!({"ticketId": ticket})).await;
    assert_eq!(t["result"], r, "the kept result, once revealed");
    assert_eq!(t["serialNumber"], r["random"]["serialNumber"]);
    let (_, heads) = result(&app, "listTickets", json!({"apiKey": ALICE, "ticketType": "head"})).await;
    assert!(heads.as_array().unwrap().iter().any(|t| t["ticketId"] == ticket.as_str()));
    let (_, tails) = result(&app, "listTickets", json!({"apiKey": ALICE, "ticketType": "tail"})).await;
    assert!(tails.as_array().unwrap().iter().any(|t| t["ticketId"] == next.as_str()));
    // The same ticket at drbgd's own door: one ticket whichever door made it.
    let rest = app.get(&format!("/tickets/{ticket}")).await;
    assert_eq!(rest.status(), 200);
}

on_both_stores!(
    signed_results_verify_and_tickets_are_used_once,
    signed_results_verify_and_tickets_are_used_once_sqlite,
    signed_results_verify_and_tickets_are_used_once_postgres
);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_spent_daily_allowance_is_402_and_the_bits_403() {
    let Some(mut settings) = settings_on(Store::Sqlite, "ro_daily").await else { return };
    settings = with_door(settings);
    settings.randomorg.requests_per_day = 3;
    settings.randomorg.bits_per_day = 100;
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let ask = json!({"apiKey": ALICE, "n": 10, "min": 1, "max": 6});
    let (_, r) = result(&app, "generateIntegers", ask.clone()).await;
    assert_eq!((r["requestsLeft"].clone(), r["bitsLeft"].clone()), (json!(2), json!(74)));
    assert_eq!(
        error(&app, "generateBlobs", json!({"apiKey": ALICE, "n": 1, "size": 128})).await,
        403,
        "74 bits left"
    );
    result(&app, "generateIntegers", ask.clone()).await;
    result(&app, "generateIntegers", ask.clone()).await;
    let (_, e) = call(&app, "generateIntegers", ask).await;
    assert_eq!(e["error"]["code"], 402, "{e}");
    assert_eq!(e["error"]["data"], json!([1, 0]));
    let (_, r) = result(&app, "generateIntegers", json!({"apiKey": BOB, "n": 1, "min": 1, "max": 6})).await;
    assert_eq!(r["requestsLeft"], 2, "bob's own day");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn off_by_default_and_signed_needs_a_key() {
    let app = spawn_with(test_settings(), Arc::new(OsEntropy)).await;
    let r = app
        .client
        .post(app.url("/json-rpc/4/invoke"))
        .json(&json!({"jsonrpc": "2.0", "method": "getUsage", "id": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let Some(mut settings) = settings_on(Store::Sqlite, "ro_nokey").await else { return };
    settings.randomorg.enabled = true;
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    assert_eq!(error(&app, "generateSignedUUIDs", json!({"apiKey": ALICE, "n": 1})).await, 404);
    result(&app, "generateUUIDs", json!({"apiKey": ALICE, "n": 1})).await;
    assert_eq!(app.get("/json-rpc/4/public-key").await.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_public_methods_are_held_to_the_per_peer_limits() {
    let Some(mut settings) = settings_on(Store::Sqlite, "ro_peers").await else { return };
    settings = with_door(settings);
    (settings.server.peer_requests_per_second, settings.server.peer_burst) = (0.5, 2);
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let check = json!({"random": {"method": "generateSignedUUIDs"}, "signature": "AA=="});
    let mut codes = Vec::new();
    for _ in 0..4 {
        let (_, v) = call(&app, "verifySignature", check.clone()).await;
        codes.push(v["error"]["code"].as_i64().unwrap_or(0));
    }
    assert_eq!(codes, [0, 0, -32001, -32001], "a burst of two, then the address waits");
    // A caller's methods are its quota's, not the address's.
    result(&app, "generateUUIDs", json!({"apiKey": ALICE, "n": 1})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn approved_only_draws_from_an_sp800_90a_generator() {
    let Some(mut settings) = settings_on(Store::Sqlite, "ro_approved").await else { return };
    settings = with_door(settings);
    settings.drbg.approved_only = true;
    settings.drbg.default_alg = drbgd::drbg::Algorithm::Aes256Ctr;
    settings.drbg.enabled.retain(|a| a.approved());
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    for method in ["generateIntegers", "generateSignedIntegers"] {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": {"apiKey": ALICE, "n": 3, "min": 1, "max": 6}, "id": 1});
        let r = app.client.post(app.url("/json-rpc/4/invoke")).json(&body).send().await.unwrap();
        let alg = r.headers()["x-drbg-alg"].to_str().unwrap().to_owned();
        let value: Value = r.json().await.unwrap();
        assert!(value.get("result").is_some(), "{value}");
        let alg = drbgd::drbg::Algorithm::from_name(&alg).unwrap();
        assert!(alg.approved(), "{method} drew from {alg}");
    }
}

#[test]
fn keygen_randomorg_writes_a_private_key_the_server_reads() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("drbgd-keygen-ro-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ro.pem");
    let run = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_drbgd"))
            .args(["keygen", "randomorg", "--out"])
            .arg(&path)
            .output()
            .unwrap()
    };
    let out = run();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let public = String::from_utf8(out.stdout).unwrap();
    assert!(public.starts_with("-----BEGIN PUBLIC KEY-----"), "{public}");
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    let signer = drbgd::randomorg::Signer::load(&path).unwrap();
    assert_eq!(signer.public_pem(), public, "the printed key is the file's");
    let written = std::fs::read(&path).unwrap();
    assert!(!run().status.success(), "an existing file is never overwritten");
    assert_eq!(std::fs::read(&path).unwrap(), written);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_quota_shows_as_requests_left_and_advisory_delay() {
    let Some(mut settings) = settings_on(Store::Sqlite, "ro_quota").await else { return };
    settings = with_door(settings);
    let bob = settings.callers.get_mut("bob").unwrap();
    (bob.quota.requests_per_second, bob.quota.burst) = (1, 2);
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let ask = json!({"apiKey": BOB, "n": 1, "min": 1, "max": 6});
    let (_, r) = result(&app, "generateIntegers", ask.clone()).await;
    assert_eq!((r["requestsLeft"].clone(), r["advisoryDelay"].clone()), (json!(1), json!(0)), "{r}");
    let (_, r) = result(&app, "generateIntegers", ask.clone()).await;
    assert_eq!((r["requestsLeft"].clone(), r["advisoryDelay"].clone()), (json!(0), json!(1000)), "{r}");
    assert!(r["bitsLeft"].as_u64().unwrap() > 0, "no byte quota: unlimited");
    let (_, e) = call(&app, "generateIntegers", ask).await;
    assert_eq!(e["error"]["code"], -32001, "{e}");
}
