//! The beacon as drand's clients see it (`config/examples/verifiable.toml`, the example key):
//! `/info`'s shape and the example chain's hash, past rounds as an independent implementation
//! signs them (py_ecc, checked by drand-verify: `scripts/beacon-vectors.py`), the latest round
//! and its cache lifetime, two replicas answering the same bytes, rounds ahead refused with 425
//! and the next one waited for, public with auth on, off by default, refused with the
//! approved-only mode. drand's own clients run against the binary in `scripts/beacon-check.sh`.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use drbgd::config::Settings;
use drbgd::drbg::entropy::OsEntropy;
use serde_json::Value;

use crate::helpers::{TestApp, assert_problem, spawn_app, spawn_with};

const VERIFIABLE: &str = "config/examples/verifiable.toml";
const EXAMPLE_HASH: &str = "8d61d591412d3946ebf8feba1bfe9665544c8af2929ce61d7d9679752fcddb29";
const EXAMPLE_PUBLIC_KEY: &str = "81ef98fb75fff9705e51d57870319ce0eb94b07601ddc5747fe13807c1429008090c5436cb2d68b6e6bf2e9d8ca428da109154aedc9bf7764f5bf9a41dbc24815b594b647246540964692ab3294c83327193c4b3bbf6ecdb7cac469c1a6f9b10";
const QUICKNET_HASH: &str = "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971";
/// Round 1 of the example chain, as py_ecc signs it.
const ROUND_1: &str = r#"{"round":1,"randomness":"b06df0b61f9ba8e45d2f7f1aa58263805084081a1c3de63127ae8eec75b14ca9","signature":"803182729da77586d88d368842df382b299059a9977182b6485437e1a968904a274e7e426fae602df7f8b0036c84b25c"}"#;
const IMMUTABLE: &str = "public, max-age=604800, immutable";

/// The example file, on free ports, with `edit` applied to its settings.
fn verifiable(edit: impl FnOnce(&mut Settings)) -> Settings {
    let overrides = serde_json::json!({
        "server": { "listen": "127.0.0.1:0", "admin_listen": "127.0.0.1:0" },
        "drbg": { "shards": 2 },
    });
    let mut settings = Settings::load(Some(VERIFIABLE.as_ref()), overrides).expect("the example loads");
    edit(&mut settings);
    settings
}

async fn spawn(settings: Settings) -> TestApp {
    spawn_with(settings, Arc::new(OsEntropy)).await
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

async fn json(app: &TestApp, path: &str) -> Value {
    let r = app.get(path).await;
    assert_eq!(r.status(), 200, "{path}");
    r.json().await.unwrap()
}

async fn latest_round(app: &TestApp) -> u64 {
    json(app, "/beacon/public/latest").await["round"].as_u64().unwrap()
}

#[tokio::test]
async fn info_has_drands_shape_and_names_the_example_chain() {
    let app = spawn(verifiable(|_| {})).await;
    let r = app.get("/beacon/info").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    assert_eq!(r.headers()["cache-control"], "public, max-age=300");
    assert_eq!(r.headers()["access-control-allow-origin"], "*");
    assert!(r.headers().get("pragma").is_none());
    let info: Value = r.json().await.unwrap();
    assert_eq!(
        info,
        serde_json::json!({
            "public_key": EXAMPLE_PUBLIC_KEY,
            "period": 3,
            "genesis_time": 1_767_225_600u64,
            "hash": EXAMPLE_HASH,
            "groupHash": "1080a192f0756ed4af3039eb2136d35eecb5da4af51df809aecb9756812409d9",
            "schemeID": "bls-unchained-g1-rfc9380",
            "metadata": { "beaconID": "example" },
        })
    );
    // Under the chain's hash: the same, kept for a week; another chain's hash is none of ours.
    let r = app.get(&format!("/beacon/{EXAMPLE_HASH}/info")).await;
    assert_eq!(r.headers()["cache-control"], IMMUTABLE);
    assert_eq!(r.json::<Value>().await.unwrap(), info);
    assert_eq!(app.get(&format!("/beacon/{QUICKNET_HASH}/info")).await.status(), 404);
    assert_eq!(json(&app, "/beacon/chains").await, serde_json::json!([EXAMPLE_HASH]));
    let health = app.get("/beacon/health").await;
    assert_eq!(health.status(), 200);
    assert_eq!(health.headers()["cache-control"], "no-store");
    let health: Value = health.json().await.unwrap();
    assert!(health["current"].as_u64().unwrap() > 1);
    assert!(health["expected"].as_u64().unwrap() >= health["current"].as_u64().unwrap());
}

#[tokio::test]
async fn past_rounds_are_an_independent_implementations_bytes_and_immutable() {
    let app = spawn(verifiable(|_| {})).await;
    let under_the_hash = format!("/beacon/{EXAMPLE_HASH}/public/1");
    for path in ["/beacon/public/1", "/beacon/public/1?1767225600123", under_the_hash.as_str()] {
        let r = app.get(path).await;
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(r.headers()["cache-control"], IMMUTABLE, "{path}");
        assert!(r.headers().get("pragma").is_none(), "{path}");
        assert_eq!(r.text().await.unwrap(), ROUND_1, "{path}: the query string is ignored");
    }
    let round: Value = json(&app, "/beacon/public/1000").await;
    assert_eq!(
        round["signature"],
        "8306f135e259e3941967b4460f80db94f392fc71f4e81fa23cf9acbeebe050c10ad6ab07b033f1305859191524e10f3e"
    );
    assert_eq!(round.as_object().unwrap().len(), 3, "round, randomness, signature: nothing else");
    assert_problem(app.get("/beacon/public/abc").await, 400, "invalid_round").await;
    assert_problem(app.get("/beacon/public/-1").await, 400, "invalid_round").await;
    assert_eq!(app.get(&format!("/beacon/{QUICKNET_HASH}/public/1")).await.status(), 404);
}

#[tokio::test]
async fn the_latest_round_is_the_clocks_and_kept_until_the_next() {
    let app = spawn(verifiable(|_| {})).await;
    let expected = (unix_now() - 1_767_225_600) / 3 + 1;
    let r = app.get("/beacon/public/latest?1").await;
    assert_eq!(r.status(), 200);
    let cache = r.headers()["cache-control"].to_str().unwrap().to_owned();
    let max_age: u64 = cache.strip_prefix("public, max-age=").unwrap().parse().unwrap();
    assert!(max_age <= 3, "{cache}: at most the time until the next round");
    let round = r.json::<Value>().await.unwrap()["round"].as_u64().unwrap();
    assert!((expected..=expected + 1).contains(&round), "{round} vs {expected}");
    // Round 0 is the latest, as drand's relays read it.
    let zero = json(&app, "/beacon/public/0").await["round"].as_u64().unwrap();
    assert!((round..=round + 1).contains(&zero));
}

#[tokio::test]
async fn two_replicas_with_one_key_answer_identical_bytes() {
    let (a, b) = (spawn(verifiable(|_| {})).await, spawn(verifiable(|_| {})).await);
    for path in ["/beacon/public/1234", "/beacon/info"] {
        let (x, y) = (a.get(path).await.bytes().await.unwrap(), b.get(path).await.bytes().await.unwrap());
        assert_eq!(x, y, "{path}");
    }
    // The latest of one is the same round's bytes on the other.
    let latest = a.get("/beacon/public/latest").await.bytes().await.unwrap();
    let round = serde_json::from_slice::<Value>(&latest).unwrap()["round"].as_u64().unwrap();
    assert_eq!(b.get(&format!("/beacon/public/{round}")).await.bytes().await.unwrap(), latest);
}

#[tokio::test]
async fn rounds_ahead_are_too_early_and_the_next_is_waited_for() {
    let app = spawn(verifiable(|_| {})).await;
    let current = latest_round(&app).await;
    // Three periods ahead and a hundred: 425 with the time until due (a round boundary passing
    // meanwhile leaves both further than the next).
    for ahead in [3, 100] {
        let r = app.get(&format!("/beacon/public/{}", current + ahead)).await;
        let retry: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=3 * ahead + 3).contains(&retry), "{ahead}: retry after {retry}");
        // Errors too, so that a browser's drand-client reads them.
        assert_eq!(r.headers()["access-control-allow-origin"], "*");
        assert_problem(r, 425, "too_early").await;
    }
    let r = app.get(&format!("/beacon/public/{}", u64::MAX)).await;
    assert_eq!(r.headers()["retry-after"], "86400", "at most a day");
    assert_problem(r, 425, "too_early").await;
    let r = app.get(&format!("/beacon/{QUICKNET_HASH}/info")).await;
    assert_eq!(r.headers()["access-control-allow-origin"], "*");
    assert_eq!(r.status(), 404);
    // The next: answered once due, within a period.
    let start = Instant::now();
    let next = json(&app, &format!("/beacon/public/{}", current + 1)).await;
    assert_eq!(next["round"].as_u64(), Some(current + 1));
    assert!(start.elapsed() < Duration::from_millis(3500), "{:?}", start.elapsed());
    assert!(latest_round(&app).await > current, "it was due when answered");
}

#[tokio::test]
async fn before_genesis_there_is_no_round_yet() {
    let genesis = unix_now() + 3600;
    let app = spawn(verifiable(|s| {
        s.beacon.genesis_time = genesis;
        // Another genesis is another chain: the example's pin is not its.
        s.beacon.chain_hash.clear();
    }))
    .await;
    assert_problem(app.get("/beacon/public/latest").await, 425, "too_early").await;
    // Round 1 is the next, but an hour away: not waited for.
    assert_problem(app.get("/beacon/public/1").await, 425, "too_early").await;
    assert_eq!(json(&app, "/beacon/health").await, serde_json::json!({ "current": 0, "expected": 0 }));
    assert_eq!(json(&app, "/beacon/info").await["genesis_time"].as_u64(), Some(genesis));
}

#[tokio::test]
async fn the_beacon_is_public_with_auth_on_under_the_per_peer_limits() {
    use sha2::Digest;
    let app = spawn(verifiable(|s| {
        s.auth.enabled = true;
        s.auth.api_key_sha256 = vec![data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(b"k"))];
        (s.server.peer_requests_per_second, s.server.peer_burst) = (1.0, 3);
    }))
    .await;
    assert_eq!(app.get("/bits?n=8").await.status(), 401, "the rest still needs a key");
    assert_eq!(app.get("/beacon/public/1").await.text().await.unwrap(), ROUND_1);
    let mut limited = false;
    for _ in 0..6 {
        let r = app.get("/beacon/public/1").await;
        if r.status() == 429 {
            assert_problem(r, 429, "peer_rate_limited").await;
            limited = true;
            break;
        }
    }
    assert!(limited, "a peer's requests without credentials are limited on the beacon's routes too");
}

#[tokio::test]
async fn off_by_default_and_refused_with_approved_only() {
    let app = spawn_app().await;
    assert_eq!(app.get("/beacon/info").await.status(), 404);
    assert_eq!(app.get("/beacon/public/latest").await.status(), 404);
    let doc: Value = app.get("/openapi.json").await.json().await.unwrap();
    assert!(doc["paths"].get("/beacon/info").is_none());

    // `serve --approved-only` sets drbg.approved_only as this does: the settings do not load.
    let overrides = serde_json::json!({
        "server": { "listen": "127.0.0.1:0", "admin_listen": "127.0.0.1:0" },
        "drbg": { "approved_only": true },
    });
    let error = Settings::load(Some(VERIFIABLE.as_ref()), overrides).expect_err("refused at start-up");
    assert!(error.to_string().contains("beacon.enabled"), "{error}");
}

#[tokio::test]
async fn a_missing_or_bad_key_stops_start_up() {
    let settings = verifiable(|s| s.beacon.secret_key_file = "config/examples/no-such.key".into());
    let error = drbgd::app::App::build(settings).await.err().expect("refused at start-up");
    assert!(format!("{error:#}").contains("beacon.secret_key_file"), "{error:#}");
    let settings = verifiable(|s| s.beacon.secret_key_file = "config/examples/callers.toml".into());
    let error = drbgd::app::App::build(settings).await.err().expect("refused at start-up");
    assert!(format!("{error:#}").contains("beacon.secret_key_file"), "{error:#}");
    // The example file is pinned to its chain: the same key on another genesis, period or id
    // is refused, naming both hashes (a copy with its genesis moved would otherwise serve the
    // example chain's future rounds today).
    assert_eq!(verifiable(|_| ()).beacon.chain_hash, EXAMPLE_HASH, "the example is pinned");
    for edit in [
        (|s: &mut Settings| s.beacon.genesis_time -= 3) as fn(&mut Settings),
        |s| s.beacon.period_s = 30,
        |s| s.beacon.beacon_id = "another".into(),
    ] {
        let error = drbgd::app::App::build(verifiable(edit)).await.err().expect("refused at start-up");
        let error = format!("{error:#}");
        assert!(error.contains("beacon.chain_hash") && error.contains(EXAMPLE_HASH), "{error}");
    }
    let pinned = verifiable(|s| s.beacon.chain_hash = EXAMPLE_HASH.to_uppercase());
    drbgd::app::App::build(pinned).await.expect("the pinned chain starts");
}

#[tokio::test]
async fn the_openapi_document_lists_the_beacon_as_public() {
    let app = spawn(verifiable(|s| {
        s.auth.enabled = true;
        s.auth.api_key_sha256 = vec!["00".repeat(32)];
    }))
    .await;
    let doc: Value = app.get("/openapi.json").await.json().await.unwrap();
    for path in [
        "/beacon/info",
        "/beacon/public/latest",
        "/beacon/public/{round}",
        "/beacon/chains",
        "/beacon/health",
    ] {
        let op = &doc["paths"][path]["get"];
        assert!(op.is_object(), "{path}");
        assert!(op.get("security").is_none_or(|s| s.as_array().is_some_and(Vec::is_empty)), "{path}");
    }
}

#[tokio::test]
async fn keygen_writes_a_private_key_once_and_prints_the_chain_it_serves() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("drbgd-beacon-keygen-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let run =
        |args: &[&str]| std::process::Command::new(env!("CARGO_BIN_EXE_drbgd")).args(args).output().unwrap();
    let key = dir.join("beacon.key");
    let keygen = ["beacon", "keygen", "--out", key.to_str().unwrap(), "--config", VERIFIABLE];
    let out = run(&keygen);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    let written = std::fs::read(&key).unwrap();
    // Never over an existing file.
    let again = run(&keygen);
    assert!(!again.status.success());
    assert_eq!(std::fs::read(&key).unwrap(), written, "the key is untouched");
    // What it printed is the chain a server with this key serves.
    let app = spawn(verifiable(|s| {
        s.beacon.secret_key_file = key.clone();
        // A new key is a new chain: the example's pin is not its.
        s.beacon.chain_hash.clear();
    }))
    .await;
    let info = json(&app, "/beacon/info").await;
    assert!(printed.contains(&format!("public key: {}", info["public_key"].as_str().unwrap())), "{printed}");
    assert!(printed.contains(&format!("chain hash: {}", info["hash"].as_str().unwrap())), "{printed}");
    assert_ne!(info["hash"], EXAMPLE_HASH);
    // A second key is another key.
    let other = dir.join("other.key");
    assert!(run(&["beacon", "keygen", "--out", other.to_str().unwrap()]).status.success());
    assert_ne!(std::fs::read(&other).unwrap(), written);
    // `beacon info` prints the configured chain's /info.
    let out = run(&["beacon", "info", "--config", VERIFIABLE]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["hash"], EXAMPLE_HASH);
    let _ = std::fs::remove_dir_all(&dir);
}
