//! `/sequence` and `GetSequence`: distinct values of the range in random order over REST (GET
//! and POST) and gRPC, each refusal with its code, the policy route, and receipts that verify
//! with nothing of drbgd's.

use std::sync::Arc;

use drbgd::drbg::entropy::OsEntropy;
use drbgd::grpc::pb::GetSequenceRequest;
use drbgd::grpc::pb::randomness_service_client::RandomnessServiceClient;
use ed25519_dalek::{Signature, VerifyingKey};
use serde_json::{Value, json};

use crate::helpers::{assert_problem, spawn_app, spawn_with, test_settings};

/// The values of a text answer, one per line.
async fn lines(r: reqwest::Response) -> Vec<i64> {
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-store");
    r.text().await.unwrap().lines().map(|l| l.parse().unwrap()).collect()
}

fn sorted(mut values: Vec<i64>) -> Vec<i64> {
    values.sort_unstable();
    values
}

#[tokio::test]
async fn a_shuffle_a_draw_and_a_post_answer_distinct_values_of_the_range() {
    let app = spawn_app().await;
    // Without a count, the whole range: a deck of 52, shuffled.
    let deck = lines(app.get("/sequence?min=1&max=52").await).await;
    assert_eq!(sorted(deck.clone()), (1..=52).collect::<Vec<_>>());
    assert_ne!(deck, (1..=52).collect::<Vec<_>>(), "shuffled (1 in 52! to fail)");
    // A lottery draw: 6 of 49, distinct.
    let draw = lines(app.get("/sequence?min=1&max=49&count=6").await).await;
    let mut distinct = sorted(draw.clone());
    distinct.dedup();
    assert_eq!(distinct.len(), 6);
    assert!(draw.iter().all(|v| (1..=49).contains(v)));
    // The widest range, as JSON.
    let r = app
        .client
        .get(app.url("/sequence?min=-9223372036854775808&max=9223372036854775807&count=3"))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    let alg = r.headers()["x-drbg-alg"].to_str().unwrap().to_owned();
    let body: Value = r.json().await.unwrap();
    assert_eq!((body["count"].as_u64(), body["values"].as_array().map(Vec::len)), (Some(3), Some(3)));
    assert_eq!((body["min"].as_i64(), body["alg"].as_str()), (Some(i64::MIN), Some(alg.as_str())));
    // A POST with the same parameters as a JSON body (bounds as strings beyond 2^53 too).
    let r = app
        .client
        .post(app.url("/sequence"))
        .json(&json!({"min": "-5", "max": 4, "count": 10, "alg": "chacha20"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["x-drbg-alg"], "chacha20");
    assert_eq!(sorted(lines(r).await), (-5..=4).collect::<Vec<_>>());
}

#[tokio::test]
async fn each_refusal_has_its_code() {
    let app = spawn_app().await;
    for (path, status, code) in [
        ("/sequence?max=6", 400, "invalid_integer"),
        ("/sequence?min=1", 400, "invalid_integer"),
        ("/sequence?min=6&max=1", 400, "invalid_range"),
        ("/sequence?min=1&max=6&count=0", 400, "invalid_count"),
        ("/sequence?min=1&max=6&count=7", 400, "count_exceeds_range"),
        ("/sequence?min=0&max=9223372036854775807", 400, "invalid_count"),
        ("/sequence?min=1&max=6&count=x", 400, "invalid_count"),
        ("/sequence?min=1&max=6&n=3", 400, "unknown_parameter"),
        ("/sequence?min=1&max=6&alg=nope", 400, "unknown_alg"),
        ("/sequence?min=1&max=6&receipt=true", 400, "receipts_disabled"),
    ] {
        assert_problem(app.get(path).await, status, code).await;
    }
    let r = app.client.post(app.url("/sequence")).json(&json!({"min": 1, "max": 6, "count": -1})).send();
    assert_problem(r.await.unwrap(), 400, "invalid_count").await;
}

#[tokio::test]
async fn the_policy_route_guards_it() {
    let app = crate::callers::spawn_example().await;
    // `web` may call the routes its policy lists, which `/sequence` is not among.
    let r = crate::callers::get(&app, "web-example-key", "/sequence?min=1&max=6").await;
    assert_problem(r, 403, "route_not_allowed").await;
    let r = crate::callers::get(&app, "batch-example-key", "/sequence?min=1&max=6").await;
    assert_eq!(sorted(lines(r).await), (1..=6).collect::<Vec<_>>());
}

#[tokio::test]
async fn grpc_draws_the_same_and_refuses_with_the_same_codes() {
    let app = spawn_app().await;
    let mut client = RandomnessServiceClient::connect(app.api.clone()).await.unwrap();
    let reply = client
        .get_sequence(GetSequenceRequest { min: 10, max: 19, ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(sorted(reply.values), (10..=19).collect::<Vec<_>>());
    let status = client
        .get_sequence(GetSequenceRequest { min: 1, max: 6, count: 7, ..Default::default() })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert!(status.message().contains("count"), "{}", status.message());
}

/// A receipt of a sequence verifies with the published key (RFC 8785 and Ed25519, nothing of
/// drbgd's), names the endpoint and every parameter, and is refused before anything is drawn
/// when it would cover more than the receipts' limit.
#[tokio::test]
async fn receipts_cover_the_sequence_and_verify() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("drbgd-sequence-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (pem, _) = drbgd::receipts::keys::private_pem(&[9; 32]).unwrap();
    let path = dir.join("signing.pem");
    std::fs::write(&path, pem.as_bytes()).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut settings = test_settings();
    settings.receipts.enabled = true;
    settings.receipts.signing_keys = vec![path.display().to_string()];
    settings.receipts.max_output_bytes = 64;
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let keys: Value = app.get("/keys").await.json().await.unwrap();
    let x = data_encoding::BASE64URL_NOPAD.decode(keys["keys"][0]["x"].as_str().unwrap().as_bytes()).unwrap();
    let key = VerifyingKey::from_bytes(&x.try_into().unwrap()).unwrap();
    let verifies = |receipt: &Value| {
        let canonical = serde_json_canonicalizer::to_vec(&receipt["random"]).unwrap();
        let sig = data_encoding::BASE64URL_NOPAD.decode(receipt["signature"].as_str().unwrap().as_bytes());
        key.verify_strict(&canonical, &Signature::from_slice(&sig.unwrap()).unwrap()).is_ok()
    };

    let receipt: Value = app.get("/sequence?min=1&max=8&receipt=true").await.json().await.unwrap();
    assert!(verifies(&receipt), "{receipt}");
    let random = &receipt["random"];
    assert_eq!((random["endpoint"].as_str(), random["min"].as_i64()), (Some("/sequence"), Some(1)));
    assert_eq!((random["max"].as_i64(), random["count"].as_i64()), (Some(8), Some(8)));
    let data: Vec<i64> =
        random["data"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().parse().unwrap()).collect();
    assert_eq!(sorted(data), (1..=8).collect::<Vec<_>>());
    // Changing the drawn order breaks the signature.
    let mut forged = receipt.clone();
    forged["random"]["data"].as_array_mut().unwrap().swap(0, 1);
    assert!(!verifies(&forged));
    // Nine values are 72 bytes of output, more than a receipt here covers.
    assert_problem(app.get("/sequence?min=1&max=9&receipt=true").await, 400, "receipt_too_large").await;

    // gRPC's receipt is the same object, signed alike.
    let mut client = RandomnessServiceClient::connect(app.api.clone()).await.unwrap();
    let reply = client
        .get_sequence(GetSequenceRequest { min: 1, max: 4, receipt: true, ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    let receipt = json!({
        "random": serde_json::from_str::<Value>(&reply.receipt_json).unwrap(),
        "signature": reply.receipt_signature,
    });
    assert!(verifies(&receipt));
    let data: Vec<String> = reply.values.iter().map(ToString::to_string).collect();
    assert_eq!(receipt["random"]["data"], json!(data));
}
