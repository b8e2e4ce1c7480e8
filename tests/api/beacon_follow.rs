//! The beacon following a drand network (`[beacon] source = "drand"`), against upstreams that
//! speak drand's HTTP API: a drbgd serving its own key's chain (period 1 s) is the network, seen
//! through a gate in front of it that passes its answers on, stops answering (the network
//! halted, or every node down), forges rounds (re-signed with another key: valid points, wrong
//! signatures) or describes another chain. What a real drand network adds (its DKG, threshold
//! signing, the chained scheme's vectors) is checked by `scripts/drand-network.sh` and the unit
//! tests of `beacon/scheme.rs` and `beacon/upstream.rs`.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use drbgd::beacon::{SignedRound, Signer};
use drbgd::config::Settings;
use drbgd::config::beacon::BeaconSource;
use drbgd::drbg::entropy::OsEntropy;
use http_body_util::Full;
use hyper::body::Bytes;
use serde_json::Value;

use crate::helpers::{TestApp, assert_problem, eventually, spawn_with, test_settings};

const EXAMPLE_PUBLIC_KEY: &str = "81ef98fb75fff9705e51d57870319ce0eb94b07601ddc5747fe13807c1429008090c5436cb2d68b6e6bf2e9d8ca428da109154aedc9bf7764f5bf9a41dbc24815b594b647246540964692ab3294c83327193c4b3bbf6ecdb7cac469c1a6f9b10";

pub(crate) const PASS: u8 = 0;
const DOWN: u8 = 1;
const FORGE: u8 = 2;
const OTHER_CHAIN: u8 = 3;
/// Rounds a hundred ahead of the one asked, signed with the chain's own key: valid, and early.
const AHEAD: u8 = 4;
/// Rounds never answered (the connection held open).
const HANG: u8 = 5;
/// Rounds answered with a redirect to the honest network.
const REDIRECT: u8 = 6;
/// Rounds answered with the real round padded past 16 KiB of spaces (valid JSON, too big).
const HUGE: u8 = 7;

pub(crate) fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// The network: drbgd's example key, a round a second from `genesis`.
pub(crate) async fn network(genesis: u64) -> TestApp {
    let overrides = serde_json::json!({
        "server": { "listen": "127.0.0.1:0", "admin_listen": "127.0.0.1:0" },
        "drbg": { "shards": 2 },
        "beacon": { "period_s": 1, "genesis_time": genesis, "chain_hash": "" },
    });
    let settings = Settings::load(Some("config/examples/verifiable.toml".as_ref()), overrides).unwrap();
    spawn_with(settings, Arc::new(OsEntropy)).await
}

/// A gate in front of `target` (a base URL), doing what its mode says; its base URL.
pub(crate) struct Gate {
    pub(crate) base: String,
    mode: Arc<AtomicU8>,
}

impl Gate {
    pub(crate) async fn new(target: String, mode: u8) -> Gate {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let mode = Arc::new(AtomicU8::new(mode));
        let (shared, target) = (mode.clone(), Arc::new(target));
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let (mode, target, client) = (shared.clone(), target.clone(), client.clone());
                tokio::spawn(async move {
                    let service =
                        hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                            let (mode, target, client) = (mode.clone(), target.clone(), client.clone());
                            async move {
                                let path = request.uri().path().to_string();
                                Ok::<_, Infallible>(
                                    answer(mode.load(Ordering::Relaxed), &client, &target, &path).await,
                                )
                            }
                        });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
        });
        Gate { base, mode }
    }

    fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::Relaxed);
    }
}

async fn answer(
    mode: u8,
    client: &reqwest::Client,
    target: &str,
    path: &str,
) -> hyper::Response<Full<Bytes>> {
    let reply = |status: u16, body: Vec<u8>| {
        hyper::Response::builder().status(status).body(Full::new(Bytes::from(body))).unwrap()
    };
    if mode == DOWN {
        return reply(503, b"down".to_vec());
    }
    let round_path = path.contains("/public/");
    if mode == HANG && round_path {
        std::future::pending::<()>().await;
    }
    if mode == REDIRECT && round_path {
        let mut r = reply(302, Vec::new());
        r.headers_mut().insert("location", format!("{target}{path}").parse().unwrap());
        return r;
    }
    let r = client.get(format!("{target}{path}")).send().await.unwrap();
    let status = r.status().as_u16();
    let body = r.bytes().await.unwrap().to_vec();
    if status != 200 {
        return reply(status, body);
    }
    let mut v: Value = serde_json::from_slice(&body).unwrap();
    if mode == FORGE && v.get("signature").is_some() {
        // Another key's signature of the same round: a valid point, the wrong signer; its
        // randomness made to match, so that only the signature gives it away.
        let round = v["round"].as_u64().unwrap();
        let forged = SignedRound::new(round, &Signer::from_key_material(&[9; 32]).unwrap().sign(round), None);
        return reply(200, forged.json.to_vec());
    }
    if mode == AHEAD && v.get("signature").is_some() {
        // No round asked by number (so that only `latest`, a hundred ahead, is taken if any).
        if !path.ends_with("/latest") {
            return reply(404, b"no such round".to_vec());
        }
        let round = v["round"].as_u64().unwrap() + 100;
        let key = Signer::from_key_text(include_str!("../../config/examples/beacon-example.key")).unwrap();
        return reply(200, SignedRound::new(round, &key.sign(round), None).json.to_vec());
    }
    if mode == HUGE && v.get("signature").is_some() {
        let mut padded = body.clone();
        padded.extend(std::iter::repeat_n(b' ', 17 * 1024));
        return reply(200, padded);
    }
    if mode == OTHER_CHAIN && v.get("period").is_some() {
        v["period"] = 2.into();
        return reply(200, serde_json::to_vec(&v).unwrap());
    }
    reply(200, body)
}

/// A network since two seconds ago, one gate in `mode` in front of it, and drbgd following that
/// gate alone.
async fn behind_one_gate(mode: u8) -> (TestApp, Gate, TestApp) {
    let net = network(unix_now() - 2).await;
    let gate = Gate::new(format!("{}/beacon", net.api), mode).await;
    let app = spawn_with(following(&[&gate], &chain_hash(&net).await), Arc::new(OsEntropy)).await;
    (net, gate, app)
}

/// drbgd following `upstreams` (base URLs) for the chain `chain_hash` of the example key.
pub(crate) fn following(upstreams: &[&Gate], chain_hash: &str) -> Settings {
    let mut s = test_settings();
    s.beacon.enabled = true;
    s.beacon.source = BeaconSource::Drand;
    s.beacon.upstreams = upstreams.iter().map(|g| g.base.clone()).collect();
    s.beacon.allow_http = true;
    s.beacon.chain_hash = chain_hash.to_string();
    s.beacon.public_key = EXAMPLE_PUBLIC_KEY.to_string();
    s.beacon.upstream_timeout_ms = 500;
    // The tests poll the public routes from one address faster than a client would.
    s.server.peer_requests_per_second = 1000.0;
    s.server.peer_burst = 1000;
    s
}

pub(crate) async fn chain_hash(network: &TestApp) -> String {
    let info: Value = network.get("/beacon/info").await.json().await.unwrap();
    info["hash"].as_str().unwrap().to_string()
}

pub(crate) async fn latest(app: &TestApp) -> Option<u64> {
    let r = app.get("/beacon/public/latest").await;
    if r.status() != 200 {
        return None;
    }
    r.json::<Value>().await.unwrap()["round"].as_u64()
}

fn counted(metrics: &str, upstream: &str, outcome: &str) -> u64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("drbgd_beacon_upstream_rounds_total{"))
        .filter(|l| {
            l.contains(&format!("upstream=\"{upstream}\"")) && l.contains(&format!("outcome=\"{outcome}\""))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

async fn metrics(app: &TestApp) -> String {
    app.client.get(format!("{}/metrics", app.admin)).send().await.unwrap().text().await.unwrap()
}

#[tokio::test]
async fn verified_rounds_are_served_byte_for_byte_and_a_forger_is_passed_over() {
    let net = network(unix_now() - 2).await;
    let target = format!("{}/beacon", net.api);
    let (forger, honest) = (Gate::new(target.clone(), FORGE).await, Gate::new(target, PASS).await);
    let app = spawn_with(following(&[&forger, &honest], &chain_hash(&net).await), Arc::new(OsEntropy)).await;
    assert!(
        eventually(Duration::from_secs(5), || async { latest(&app).await.is_some_and(|r| r >= 3) }).await
    );
    let round = latest(&app).await.unwrap();
    let ours = app.get(&format!("/beacon/public/{round}")).await;
    assert_eq!(ours.headers()["cache-control"], "public, max-age=604800, immutable");
    // The same values, rendered as a drand node renders them (its own key's chain, the
    // network here, renders them in the relays' order: scripts/drand-network.sh compares real
    // nodes' bytes).
    let theirs: Value = net.get(&format!("/beacon/public/{round}")).await.json().await.unwrap();
    let ours = ours.bytes().await.unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&ours).unwrap(),
        theirs,
        "round {round} as the network serves it"
    );
    let (signature, randomness) =
        (theirs["signature"].as_str().unwrap(), theirs["randomness"].as_str().unwrap());
    let node_order = format!(r#"{{"round":{round},"signature":"{signature}","randomness":"{randomness}"}}"#);
    assert_eq!(ours, node_order.as_bytes());
    // /info: the network's, the same chain.
    let info: Value = app.get("/beacon/info").await.json().await.unwrap();
    assert_eq!(info, net.get("/beacon/info").await.json::<Value>().await.unwrap());
    // An old round, never kept: fetched from the network on demand, verified, the same bytes.
    let first = app.get("/beacon/public/1").await.bytes().await.unwrap();
    let first: Value = serde_json::from_slice(&first).unwrap();
    assert_eq!(first, net.get("/beacon/public/1").await.json::<Value>().await.unwrap());
    // The next round is waited for, and comes.
    let next = app.get(&format!("/beacon/public/{}", latest(&app).await.unwrap() + 1)).await;
    assert_eq!(next.status(), 200);
    let health = app.get("/beacon/health").await;
    assert_eq!(health.status(), 200);
    let health: Value = health.json().await.unwrap();
    assert!(health["current"].as_u64().unwrap() + 1 >= health["expected"].as_u64().unwrap(), "{health}");
    let m = metrics(&app).await;
    assert!(counted(&m, &forger.base, "invalid") >= 1, "the forger's rounds refused:\n{m}");
    assert_eq!(counted(&m, &forger.base, "verified"), 0);
    assert!(counted(&m, &honest.base, "verified") >= 1);
}

#[tokio::test]
async fn a_valid_round_ahead_of_the_clock_is_never_taken() {
    // Its `latest` is a round a hundred ahead, signed with the chain's key; it has no other.
    let (_net, early, app) = behind_one_gate(AHEAD).await;
    assert_eq!(app.get("/beacon/info").await.status(), 200);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_problem(app.get("/beacon/public/latest").await, 503, "beacon_unavailable").await;
    let health: Value = app.get("/beacon/health").await.json().await.unwrap();
    assert_eq!(health["current"], 0, "a round ahead of the clock was taken: {health}");
    let m = metrics(&app).await;
    assert!(counted(&m, &early.base, "invalid") >= 1, "{m}");
    assert_eq!(counted(&m, &early.base, "verified"), 0);
}

#[tokio::test]
async fn a_round_no_upstream_verifies_is_never_served() {
    let (_net, forger, app) = behind_one_gate(FORGE).await;
    // Its /info is the chain's (it passes /info on), so the chain is known...
    assert_eq!(app.get("/beacon/info").await.status(), 200);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // ...but no round of it verifies: none is served, old or latest.
    assert_problem(app.get("/beacon/public/latest").await, 503, "beacon_unavailable").await;
    assert_problem(app.get("/beacon/public/1").await, 503, "beacon_unavailable").await;
    let health = app.get("/beacon/health").await;
    assert_eq!(health.status(), 503);
    assert_eq!(health.json::<Value>().await.unwrap()["current"], 0);
    // drbgd itself serves on.
    assert_eq!(app.get("/bits?n=64").await.status(), 200);
    assert!(counted(&metrics(&app).await, &forger.base, "invalid") >= 1);
}

#[tokio::test]
async fn an_upstream_of_another_chain_is_refused_and_alone_stops_start_up() {
    let net = network(unix_now() - 2).await;
    let target = format!("{}/beacon", net.api);
    let hash = chain_hash(&net).await;
    let liar = Gate::new(target.clone(), OTHER_CHAIN).await;
    let refused = drbgd::app::App::build_with_entropy(following(&[&liar], &hash), Arc::new(OsEntropy)).await;
    let why = format!("{:#}", refused.err().expect("start-up refused"));
    assert!(why.contains("none with the pinned chain"), "{why}");
    // Pinned to a chain the upstreams do not serve (their /info under it: 404): refused too.
    let honest = Gate::new(target.clone(), PASS).await;
    let unknown = "ab".repeat(32);
    let refused =
        drbgd::app::App::build_with_entropy(following(&[&honest], &unknown), Arc::new(OsEntropy)).await;
    assert!(format!("{:#}", refused.err().expect("start-up refused")).contains("none with the pinned chain"));
    // Beside an honest one: refused by name, the honest one followed.
    let app = spawn_with(following(&[&liar, &honest], &hash), Arc::new(OsEntropy)).await;
    assert!(eventually(Duration::from_secs(5), || async { latest(&app).await.is_some() }).await);
    assert_eq!(counted(&metrics(&app).await, &liar.base, "refused"), 1);
    assert_eq!(counted(&metrics(&app).await, &liar.base, "verified"), 0);
}

#[tokio::test]
async fn a_halted_network_keeps_its_last_round_and_is_caught_up_with() {
    let net = network(unix_now() - 2).await;
    let gate = Gate::new(format!("{}/beacon", net.api), PASS).await;
    let mut settings = following(&[&gate], &chain_hash(&net).await);
    settings.server.request_timeout_ms = 1500;
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    assert!(eventually(Duration::from_secs(5), || async { latest(&app).await.is_some() }).await);
    gate.set(DOWN);
    let stalled = latest(&app).await.unwrap();
    // Three periods later: the last verified round still served, /health says behind.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(latest(&app).await.unwrap() <= stalled + 1);
    let health = app.get("/beacon/health").await;
    assert_eq!(health.status(), 503);
    let health: Value = health.json().await.unwrap();
    assert!(health["expected"].as_u64().unwrap() >= health["current"].as_u64().unwrap() + 2, "{health}");
    // The clock's round (what drand-client asks for) is waited for within the request's time,
    // then 425 with Retry-After; an older one the network never made is 503, not served.
    let expected = health["expected"].as_u64().unwrap();
    let start = std::time::Instant::now();
    let r = app.get(&format!("/beacon/public/{}", expected + 1)).await;
    assert_eq!(r.status(), 425);
    assert!(r.headers().contains_key("retry-after"));
    assert!(start.elapsed() >= Duration::from_millis(500), "waited for: {:?}", start.elapsed());
    let never_made = latest(&app).await.unwrap() + 1;
    assert!(never_made < expected);
    let start = std::time::Instant::now();
    assert_problem(app.get(&format!("/beacon/public/{never_made}")).await, 503, "beacon_unavailable").await;
    assert!(start.elapsed() < Duration::from_millis(500), "not waited for: {:?}", start.elapsed());
    // An old round it kept is still served; one it never kept and cannot fetch is 503.
    assert_eq!(app.get(&format!("/beacon/public/{stalled}")).await.status(), 200);
    assert_problem(app.get("/beacon/public/1").await, 503, "beacon_unavailable").await;
    // drbgd serves on, and stays ready.
    assert_eq!(app.get("/bits?n=64").await.status(), 200);
    let ready = app.client.get(format!("{}/readyz", app.admin)).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    assert!(
        metrics(&app).await.lines().any(|l| l.starts_with("drbgd_beacon_lag_rounds ") && !l.ends_with(" 0"))
    );
    // Back: caught up to the clock's round at once, not round by round.
    gate.set(PASS);
    assert!(
        eventually(Duration::from_secs(5), || async { app.get("/beacon/health").await.status() == 200 })
            .await
    );
    assert!(latest(&app).await.unwrap() >= stalled + 3);
}

#[tokio::test]
async fn with_every_upstream_down_at_start_it_starts_and_follows_once_one_answers() {
    let (_net, gate, app) = behind_one_gate(DOWN).await;
    assert_problem(app.get("/beacon/info").await, 503, "beacon_unavailable").await;
    assert_problem(app.get("/beacon/public/latest").await, 503, "beacon_unavailable").await;
    assert_eq!(app.get("/bits?n=64").await.status(), 200);
    gate.set(PASS);
    assert!(eventually(Duration::from_secs(5), || async { latest(&app).await.is_some() }).await);
}

#[tokio::test]
async fn before_genesis_rounds_are_too_early() {
    let net = network(unix_now() + 60).await;
    let gate = Gate::new(format!("{}/beacon", net.api), PASS).await;
    let app = spawn_with(following(&[&gate], &chain_hash(&net).await), Arc::new(OsEntropy)).await;
    let r = app.get("/beacon/public/latest").await;
    assert_eq!(r.status(), 425);
    let retry: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((55..=61).contains(&retry), "{retry}");
    assert_eq!(app.get("/beacon/public/5").await.status(), 425);
}

#[test]
fn following_needs_pins_and_https_unless_told() {
    let mut s = test_settings();
    s.beacon.enabled = true;
    s.beacon.source = BeaconSource::Drand;
    let e = |s: &Settings| s.validate().unwrap_err().to_string();
    assert!(e(&s).contains("beacon.upstreams"), "{}", e(&s));
    s.beacon.upstreams = vec!["http://127.0.0.1:1".into()];
    assert!(e(&s).contains("allow_http"), "{}", e(&s));
    s.beacon.upstreams = vec!["https://user:pw@relay.example".into()];
    assert!(e(&s).contains("no credentials"), "{}", e(&s));
    s.beacon.upstreams = vec!["https://api.drand.sh".into()];
    assert!(e(&s).contains("beacon.chain_hash"), "{}", e(&s));
    s.beacon.chain_hash = "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971".into();
    assert!(e(&s).contains("beacon.public_key"), "{}", e(&s));
    s.beacon.public_key = EXAMPLE_PUBLIC_KEY.into();
    s.validate().unwrap();
    // A chain URL (the base with the chain hash, as drand-client takes it) is not a base.
    s.beacon.upstreams =
        vec!["https://api.drand.sh/52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971".into()];
    assert!(e(&s).contains("without the chain hash"), "{}", e(&s));
    s.beacon.upstreams = vec!["https://api.drand.sh".into(), "https://api.drand.sh/".into()];
    assert!(e(&s).contains("twice"), "{}", e(&s));
    s.beacon.upstreams = vec!["https://relay.example/drand".into(), "https://relay.example/drand/".into()];
    assert!(e(&s).contains("twice"), "{}", e(&s));
    // Asked as the URL parser writes them, without a final `/`.
    s.beacon.upstreams = vec!["HTTPS://Relay.Example:443/drand/".into(), "https://[::1]:8443".into()];
    assert_eq!(s.beacon.upstream_bases(), ["https://relay.example/drand", "https://[::1]:8443"]);
    s.beacon.upstreams = vec!["https://api.drand.sh/relay/".into(), "https://[::1]:8443".into()];
    s.validate().unwrap();
    s.beacon.upstream_timeout_ms = s.server.request_timeout_ms;
    assert!(e(&s).contains("beacon.upstream_timeout_ms"), "{}", e(&s));
    s.beacon.upstream_timeout_ms = 2000;
    s.beacon.secret_key_file = "config/examples/beacon-example.key".into();
    assert!(e(&s).contains("beacon.secret_key_file"), "{}", e(&s));
    s.beacon.secret_key_file = Default::default();
    // A followed network's rounds are not drbgd's generators' output: allowed in approved-only mode.
    s.drbg.approved_only = true;
    s.drbg.default_alg = drbgd::drbg::Algorithm::Aes256Ctr;
    s.drbg.enabled = vec![drbgd::drbg::Algorithm::Aes256Ctr];
    s.validate().unwrap();
}

/// `config/examples/follow-drand.toml` follows quicknet, pinned to its published hash and key
/// (the values `beacon/chain.rs`'s tests derive its hash from).
#[test]
fn the_example_follows_quicknet_pinned() {
    let s =
        Settings::load(Some("config/examples/follow-drand.toml".as_ref()), serde_json::json!({})).unwrap();
    s.validate().unwrap();
    assert!(s.beacon.enabled && s.beacon.source == BeaconSource::Drand);
    assert_eq!(s.beacon.chain_hash, "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971");
    assert_eq!(s.beacon.public_key, drbgd::beacon::key::QUICKNET_PUBLIC_KEY);
    assert!(s.beacon.upstreams.iter().all(|u| u.starts_with("https://")) && !s.beacon.allow_http);
}

/// Upstreams that hang, redirect, or send a body past 16 KiB: each passed over for the honest
/// one (the hanging one within `upstream_timeout_ms`, then resting), none of their answers taken.
#[tokio::test]
async fn hanging_redirecting_and_oversized_upstreams_are_passed_over() {
    let net = network(unix_now() - 2).await;
    let target = format!("{}/beacon", net.api);
    let hang = Gate::new(target.clone(), HANG).await;
    let redirect = Gate::new(target.clone(), REDIRECT).await;
    let huge = Gate::new(target.clone(), HUGE).await;
    let honest = Gate::new(target, PASS).await;
    let app = spawn_with(
        following(&[&hang, &redirect, &huge, &honest], &chain_hash(&net).await),
        Arc::new(OsEntropy),
    )
    .await;
    assert!(eventually(Duration::from_secs(5), || async { latest(&app).await.is_some() }).await);
    // Rounds keep coming from the honest one (a hanging upstream rests after its timeout).
    let first = latest(&app).await.unwrap();
    assert!(eventually(Duration::from_secs(5), || async { latest(&app).await.unwrap() >= first + 2 }).await);
    let m = metrics(&app).await;
    for (gate, what) in [(&hang, "hanging"), (&redirect, "redirecting"), (&huge, "oversized")] {
        assert!(counted(&m, &gate.base, "unavailable") >= 1, "the {what} upstream:\n{m}");
        assert_eq!(counted(&m, &gate.base, "verified"), 0, "the {what} upstream's answer was taken");
    }
    assert!(counted(&m, &honest.base, "verified") >= 2);
}
