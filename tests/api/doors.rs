//! The doors beside the main API, attacked as an attacker would with the drop-in example
//! (`config/examples/drop-in.toml`): anonymous routes flooded from one address while another
//! address is served, `X-Forwarded-For` read only from a trusted proxy, and stream memory held
//! to its budget however many streams are open.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use drbgd::config::Settings;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpSocket;

use crate::helpers::{TestApp, eventually, spawn_with};

const DROP_IN: &str = "config/examples/drop-in.toml";

fn drop_in(extra: serde_json::Value) -> Settings {
    let mut overrides = serde_json::json!({
        // The per-peer limits this file's figures assume (the defaults are higher).
        "server": {
            "listen": "127.0.0.1:0", "admin_listen": "127.0.0.1:0",
            "peer_max_in_flight": 4, "peer_requests_per_second": 2.0, "peer_burst": 4,
        },
        "drbg": { "shards": 2 },
        "log": { "audit": false },
        // The example's tickets' store, one of this test process's own (not the working
        // directory's).
        "results": { "path": std::env::temp_dir().join(format!("drbgd-doors-{}-{}.sqlite3", std::process::id(), rand_suffix())).display().to_string() },
    });
    merge(&mut overrides, extra);
    Settings::load(Some(DROP_IN.as_ref()), overrides).expect("the drop-in example loads")
}

/// A number no other settings of this process had: one store file each.
fn rand_suffix() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn merge(into: &mut serde_json::Value, from: serde_json::Value) {
    match (into, from) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(serde_json::Value::Null), v);
            }
        }
        (slot, value) => *slot = value,
    }
}

async fn spawn(settings: Settings) -> TestApp {
    spawn_with(settings, Arc::new(drbgd::drbg::entropy::OsEntropy)).await
}

/// A client whose connections come from `from` (127.0.0.1 and 127.0.0.2 are two peers on
/// one loopback interface).
fn client_from(from: &str) -> reqwest::Client {
    let from: IpAddr = from.parse().unwrap();
    reqwest::Client::builder().local_address(from).build().unwrap()
}

async fn pollen(client: &reqwest::Client, app: &TestApp) -> reqwest::Response {
    client
        .post(app.url("/pollen"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("challenge=abc")
        .send()
        .await
        .unwrap()
}

/// Opens a `POST /pollen` from `from` that announces a body and never sends it: it holds its
/// places until the public body deadline.
async fn slow_pollen(app: &TestApp, from: &str) -> tokio::net::TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    let addr = app.api.trim_start_matches("http://").parse().unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    stream
        .write_all(
            b"POST /pollen HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-www-form-urlencoded\r\ncontent-length: 100\r\n\r\nchal",
        )
        .await
        .unwrap();
    stream
}

#[tokio::test]
async fn a_flooding_peer_leaves_the_anonymous_pool_to_others() {
    let app = spawn(drop_in(serde_json::json!({}))).await;
    let (flooder, other) = (client_from("127.0.0.1"), client_from("127.0.0.2"));
    // Eight slow bodies from one address: the anonymous caller's 8 places, before. Now the
    // peer's share (4) is all it gets; the rest are refused at once, as its own.
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(slow_pollen(&app, "127.0.0.1").await);
    }
    // The server has taken them: the peer's 4 places held (in flight until their bodies'
    // deadline), the other four refused.
    let held_places = || async { app.state.metrics.in_flight.get() >= 4 };
    assert!(eventually(Duration::from_secs(5), held_places).await, "the peer's places taken");
    let refused = pollen(&flooder, &app).await;
    assert_eq!(refused.status(), 429);
    let body: serde_json::Value = refused.json().await.unwrap();
    assert!(
        ["peer_concurrency_limited", "peer_rate_limited"].contains(&body["code"].as_str().unwrap()),
        "{body}"
    );
    // Meanwhile another address is served.
    let served = pollen(&other, &app).await;
    assert_eq!(served.status(), 200, "{:?}", served.text().await);
    drop(held);

    // One address at full speed: within its rate, the anonymous rate is left to others.
    let flood = {
        let (flooder, url) = (flooder.clone(), app.url("/pollen"));
        tokio::spawn(async move {
            let mut codes = std::collections::BTreeMap::<u16, u32>::new();
            let end = tokio::time::Instant::now() + Duration::from_secs(3);
            while tokio::time::Instant::now() < end {
                let response = flooder
                    .post(&url)
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body("challenge=abc")
                    .send()
                    .await
                    .unwrap();
                *codes.entry(response.status().as_u16()).or_default() += 1;
            }
            codes
        })
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut other_codes = Vec::new();
    for _ in 0..3 {
        other_codes.push(pollen(&other, &app).await.status().as_u16());
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let codes = flood.await.unwrap();
    assert_eq!(other_codes, [200, 200, 200], "the second peer while the first floods");
    // The flooder got its burst and rate (4 + 2/s over 3 s, and a little slack), no more.
    let served = codes.get(&200).copied().unwrap_or(0);
    assert!((4..=12).contains(&served), "the flooder was served {served}: {codes:?}");
    assert!(codes.get(&429).copied().unwrap_or(0) > 10, "{codes:?}");
}

#[tokio::test]
async fn forwarded_for_names_the_peer_only_behind_a_trusted_proxy() {
    let trusting = drop_in(serde_json::json!({ "server": { "trusted_proxies": ["127.0.0.1/32"] } }));
    let app = spawn(trusting).await;
    let proxy = client_from("127.0.0.1");
    let via = |client: &'static str| {
        proxy
            .post(app.url("/pollen"))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("x-forwarded-for", client)
            .body("challenge=abc")
    };
    // Client 198.51.100.1 behind the proxy spends its burst (4)...
    for _ in 0..4 {
        assert_eq!(via("198.51.100.1").send().await.unwrap().status(), 200);
    }
    assert_eq!(via("198.51.100.1").send().await.unwrap().status(), 429);
    // ...while another client behind the same proxy is its own peer.
    assert_eq!(via("198.51.100.2").send().await.unwrap().status(), 200);
    // A forged hop before the client's is the client's to write, not a way out.
    assert_eq!(via("203.0.113.7, 198.51.100.1").send().await.unwrap().status(), 429);

    // From an untrusted peer the header is ignored: 127.0.0.2 is the peer, whatever it says.
    let direct = client_from("127.0.0.2");
    let mut codes = Vec::new();
    for i in 0..6 {
        let response = direct
            .post(app.url("/pollen"))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("x-forwarded-for", format!("192.0.2.{i}"))
            .body("challenge=abc")
            .send()
            .await
            .unwrap();
        codes.push(response.status().as_u16());
    }
    assert_eq!(codes, [200, 200, 200, 200, 429, 429]);
}

#[tokio::test]
async fn an_untrusted_proxy_list_entry_is_a_configuration_error() {
    let overrides = serde_json::json!({ "server": { "trusted_proxies": ["10.0.0.0/40"] } });
    let error = Settings::load(None, overrides).map(drop).unwrap_err().to_string();
    assert!(error.contains("server.trusted_proxies"), "{error}");
}

/// A stream that its client never reads, from `from`: a small receive window, so the server's
/// chunk stays with it (and its permit of the stream budget held).
async fn unread_stream(app: &TestApp, from: &str) -> tokio::net::TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    let addr = app.api.trim_start_matches("http://").parse().unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let head = "GET /bits?n=100000000&format=binary HTTP/1.1\r\nHost: drbgd\r\n\r\n";
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
}

/// With auth off everyone is `anonymous`, and its streams take their peer's share of the
/// stream budget (a sixteenth): one address's unread streams hold its own share only, and the
/// next address is served at once. The budget here is sixteen chunks, so a peer's share is one.
#[tokio::test]
async fn anonymous_streams_hold_their_peer_s_share_only() {
    let chunk = 49_152;
    let budget = 16 * drbgd::service::budget::chunk_cost(chunk);
    let mut settings = crate::helpers::test_settings();
    settings.limits.stream_chunk_bytes = chunk;
    settings.limits.stream_buffer_bytes = budget;
    let app = spawn(settings).await;
    let _held = [unread_stream(&app, "127.0.0.2").await, unread_stream(&app, "127.0.0.2").await];
    let url = app.url("/bits?n=10000000&format=binary");
    // The flooding address's own next stream waits in its share...
    let flooder = client_from("127.0.0.2");
    let waiting = eventually(Duration::from_secs(5), || async {
        let r = flooder.get(&url).send().await.unwrap();
        assert_eq!(r.status(), 200);
        tokio::time::timeout(Duration::from_millis(500), r.bytes()).await.is_err()
    })
    .await;
    assert!(waiting, "the flooding address's unread streams never held its share");
    // ...while another address is served whole.
    let body = tokio::time::timeout(Duration::from_secs(5), async {
        client_from("127.0.0.3").get(&url).send().await.unwrap().bytes().await.unwrap()
    })
    .await
    .expect("another address's stream is served");
    assert_eq!(body.len(), 1_250_000);
}
