//! Fail-closed behaviour of every route, request ids, the shutdown delay, connection age, and
//! reloads of the TLS certificate and the API keys file without a restart.

use std::sync::Arc;
use std::time::Duration;

use drbgd::drbg::entropy::{OsEntropy, ScriptedEntropy};
use sha2::Digest;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{
    Binary, assert_problem, eventually, spawn_app, spawn_binary, spawn_with, test_settings,
};

/// Every route, as (method, path, takes pr).
const ROUTES: &[(&str, &str, bool)] = &[
    ("GET", "/bits?n=256", true),
    ("GET", "/bits?n=1000000&format=binary", true),
    ("GET", "/bytes?n=32", true),
    ("GET", "/token", false),
    ("GET", "/nonce", false),
    ("GET", "/uuid?count=3", false),
    ("GET", "/int?min=1&max=6&count=10", false),
    ("GET", "/sequence?min=1&max=52", false),
    ("GET", "/algorithms", false),
    ("GET", "/openapi.json", false),
];

#[tokio::test]
async fn every_route_answers_during_an_entropy_outage() {
    let entropy = Arc::new(ScriptedEntropy::default());
    let mut settings = test_settings();
    settings.drbg.shards = 1;
    let app = spawn_with(settings, entropy.clone()).await;
    entropy.set_failing(true);
    for &(method, path, takes_pr) in ROUTES {
        for pr in [false, true].into_iter().filter(|pr| !pr || takes_pr) {
            let url = if pr { app.url(&format!("{path}&pr=true")) } else { app.url(path) };
            let request = app.client.request(method.parse().unwrap(), url).send();
            let r = tokio::time::timeout(Duration::from_secs(5), request)
                .await
                .unwrap_or_else(|_| panic!("{path} pr={pr} hung"))
                .unwrap();
            let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
            assert!(!id.is_empty());
            let status = r.status().as_u16();
            assert!(!(pr && status == 200), "{path}: prediction-resistant output served in an outage");
            if status != 200 {
                assert_problem(r, 503, "entropy_unavailable").await;
            }
        }
    }
    // The pr=true calls left the (single) chacha20 generator waiting for a reseed: /int now
    // draws through the same fallible call as /bits and answers 503 at once (it used to spin).
    let r = tokio::time::timeout(Duration::from_secs(5), app.get("/int?min=1&max=6&count=1000"))
        .await
        .expect("/int must answer, not loop");
    assert_problem(r, 503, "entropy_unavailable").await;
    let r = tokio::time::timeout(Duration::from_secs(5), app.get("/sequence?min=1&max=1000"))
        .await
        .expect("/sequence must answer, not loop");
    assert_problem(r, 503, "entropy_unavailable").await;
    let readyz = app.client.get(format!("{}/readyz", app.admin)).send().await.unwrap();
    assert_eq!(readyz.status(), 503);
    entropy.set_failing(false);
    let readyz = app.client.get(format!("{}/readyz", app.admin)).send().await.unwrap();
    assert_eq!(readyz.status(), 200, "heals without a restart");
    assert_eq!(app.get("/int?min=1&max=6&count=1000").await.status(), 200);
}

#[tokio::test]
async fn readiness_reports_an_outage_before_any_reseed_is_due() {
    let entropy = Arc::new(ScriptedEntropy::default());
    let app = spawn_with(test_settings(), entropy.clone()).await;
    let readyz = format!("{}/readyz", app.admin);
    assert_eq!(app.client.get(&readyz).send().await.unwrap().status(), 200);
    entropy.set_failing(true);
    // A successful probe is trusted for at most a second.
    let started = std::time::Instant::now();
    assert!(
        eventually(Duration::from_secs(5), || async {
            app.client.get(&readyz).send().await.unwrap().status() == 503
        })
        .await
    );
    assert!(started.elapsed() < Duration::from_millis(1500), "{:?}", started.elapsed());
    entropy.set_failing(false);
    assert_eq!(app.client.get(&readyz).send().await.unwrap().status(), 200, "a failed probe is not cached");
}

#[tokio::test]
async fn request_ids_are_made_without_the_os_and_kept_when_given() {
    let app = spawn_app().await;
    let a = app.get("/token").await.headers()["x-request-id"].to_str().unwrap().to_owned();
    let b = app.get("/nope").await.headers()["x-request-id"].to_str().unwrap().to_owned();
    let (prefix_a, count_a) = a.split_once('-').unwrap();
    let (prefix_b, count_b) = b.split_once('-').unwrap();
    assert_eq!(prefix_a.len(), 16);
    assert_eq!(prefix_a, prefix_b, "one prefix per process");
    assert!(u64::from_str_radix(count_b, 16).unwrap() > u64::from_str_radix(count_a, 16).unwrap());
    let r = app.client.get(app.url("/token")).header("x-request-id", "mine-42").send().await.unwrap();
    assert_eq!(r.headers()["x-request-id"], "mine-42");
}

/// One HTTP/1.1 request on an open connection; returns the response head (lowercase).
async fn request_on(stream: &mut tokio::net::TcpStream, path: &str) -> String {
    let req = format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n");
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    // Bounded: a server that neither answers nor closes fails the test instead of hanging it.
    let n = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut buf))
        .await
        .expect("an answer")
        .unwrap();
    let text = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
    text.split("\r\n\r\n").next().unwrap_or("").to_owned()
}

/// Whether the server closed `stream` (EOF within 3 s).
async fn closed_by_server(stream: &mut tokio::net::TcpStream) -> bool {
    let mut buf = [0u8; 64];
    matches!(tokio::time::timeout(Duration::from_secs(3), stream.read(&mut buf)).await, Ok(Ok(0)))
}

#[tokio::test]
async fn shutdown_delay_keeps_accepting_while_not_ready() {
    let mut settings = test_settings();
    settings.server.shutdown_delay_ms = 1500;
    let mut app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let addr = app.api.trim_start_matches("http://").to_string();
    let mut kept = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = request_on(&mut kept, "/token").await;
    assert!(head.starts_with("http/1.1 200") && !head.contains("connection: close"), "{head}");
    let started = std::time::Instant::now();
    app.stop();
    // Not ready at once: well within the 1.5 s delay. The stop task turns unready and wakes
    // the connections in one poll, so on this one-thread runtime the kept connection has been
    // asked to move by the time /readyz answers 503.
    let readyz = format!("{}/readyz", app.admin);
    let unready = || async { app.client.get(&readyz).send().await.unwrap().status() == 503 };
    assert!(eventually(Duration::from_millis(500), unready).await, "not ready at once");
    // A kept-alive connection is served once more, told to close, and closed: its client
    // moves while this instance still accepts.
    let head = request_on(&mut kept, "/token").await;
    assert!(head.starts_with("http/1.1 200") && head.contains("connection: close"), "{head}");
    assert!(closed_by_server(&mut kept).await);
    // During the delay: new connections are accepted and served.
    let mut served = 0;
    while started.elapsed() < Duration::from_millis(1200) {
        let mut fresh = tokio::net::TcpStream::connect(&addr).await.expect("accepting during the delay");
        assert!(request_on(&mut fresh, "/bits?n=64").await.starts_with("http/1.1 200"));
        served += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(served >= 5, "{served}");
    app.handle.take().unwrap().await.unwrap().unwrap();
    assert!(started.elapsed() >= Duration::from_millis(1500), "the drain waited for the delay");
    assert!(tokio::net::TcpStream::connect(&addr).await.is_err(), "closed after the drain");
}

#[tokio::test]
async fn connections_are_asked_to_close_at_their_maximum_age() {
    let mut settings = test_settings();
    settings.server.max_connection_age_ms = 300;
    settings.server.drain_timeout_ms = 1000;
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let addr = app.api.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    assert!(!request_on(&mut stream, "/token").await.contains("connection: close"));
    // The age runs on tokio's clock: 400 ms pass without waiting for them.
    tokio::time::pause();
    tokio::time::advance(Duration::from_millis(400)).await;
    tokio::time::resume();
    // Past its age (300 ms ± 10 %): the next response says close, and the server closes.
    let head = request_on(&mut stream, "/token").await;
    assert!(head.starts_with("http/1.1 200") && head.contains("connection: close"), "{head}");
    assert!(closed_by_server(&mut stream).await);
    // An idle aged connection is dropped once the grace period (the drain timeout) has passed.
    let mut idle = tokio::net::TcpStream::connect(&addr).await.unwrap();
    assert!(request_on(&mut idle, "/token").await.starts_with("http/1.1 200"));
    let mut buf = [0u8; 8];
    let eof = tokio::time::timeout(Duration::from_secs(4), idle.read(&mut buf)).await;
    assert_eq!(eof.expect("dropped after age + grace").unwrap(), 0);
    assert_eq!(app.get("/token").await.status(), 200, "new connections are served");
}

/// Whether the server closes `stream` within `within` (EOF or reset), reading and dropping
/// whatever else it sends.
async fn closed_within(stream: &mut tokio::net::TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

/// Starts a request head on `stream` and sends one more header line every 100 ms, never the
/// blank line that ends it; the task returns when the server closed the connection (`None`
/// if it never did in 3 s). The receiver counts the lines sent (the request line included).
fn trickle_head(
    mut stream: tokio::net::TcpStream,
) -> (tokio::task::JoinHandle<Option<tokio::time::Instant>>, tokio::sync::watch::Receiver<u32>) {
    let (sent_tx, sent) = tokio::sync::watch::channel(0u32);
    let task = tokio::spawn(async move {
        stream.write_all(b"GET /token HTTP/1.1\r\n").await.ok()?;
        sent_tx.send_replace(1);
        for i in 0..30 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if stream.write_all(format!("X-Slow-{i}: 1\r\n").as_bytes()).await.is_err()
                || closed_within(&mut stream, Duration::from_millis(1)).await
            {
                return Some(tokio::time::Instant::now());
            }
            sent_tx.send_replace(i + 2);
        }
        None
    });
    (task, sent)
}

/// The header-read deadline (the connection's own, checked once per period): a connection
/// that sends nothing, one that trickles a request head and never ends it, and an idle
/// keep-alive connection are each closed within one to two periods; a response that takes
/// several periods to send (its client reads slowly) is not cut.
#[tokio::test]
async fn header_read_deadline_closes_idle_connections_but_not_long_responses() {
    let mut settings = test_settings();
    settings.server.header_read_timeout_ms = 300;
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let addr = app.api.trim_start_matches("http://").to_string();
    let started = tokio::time::Instant::now();

    let mut silent = tokio::net::TcpStream::connect(&addr).await.unwrap();
    // Fewer than the 24 bytes of the HTTP/2 preface, which hyper-util reads with no deadline.
    let mut half_preface = tokio::net::TcpStream::connect(&addr).await.unwrap();
    half_preface.write_all(b"PRI * HTTP/2.0\r\n").await.unwrap();
    let (trickler, _) = trickle_head(tokio::net::TcpStream::connect(&addr).await.unwrap());
    let mut kept = tokio::net::TcpStream::connect(&addr).await.unwrap();
    assert!(request_on(&mut kept, "/token").await.starts_with("http/1.1 200"));
    let mut slow = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let bytes = 8_000_000usize;
    let path = format!("/bits?n={}&format=binary", bytes * 8);
    slow.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()).await.unwrap();

    assert!(!closed_within(&mut silent, Duration::from_millis(250)).await, "not before one period");
    assert!(closed_within(&mut silent, Duration::from_millis(1500)).await, "a silent connection is closed");
    assert!(closed_within(&mut half_preface, Duration::from_millis(1500)).await, "half a preface too");
    assert!(closed_within(&mut kept, Duration::from_millis(1500)).await, "an idle keep-alive one too");
    let trickle_closed = trickler.await.unwrap().expect("a trickled head is closed");
    assert!(trickle_closed - started < Duration::from_millis(1500), "{:?}", trickle_closed - started);

    // Meanwhile the slow reader takes its response over more than four periods, whole.
    let mut response = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    let reading = tokio::time::Instant::now();
    while reading.elapsed() < Duration::from_millis(1300) {
        let n = slow.read(&mut buf).await.unwrap();
        assert!(n > 0, "cut after {} bytes", response.len());
        response.extend_from_slice(&buf[..n]);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let head_end = response.windows(4).position(|w| w == b"\r\n\r\n").expect("a head") + 4;
    assert!(response.len() - head_end < bytes, "the body was still being sent");
    // The rest, until the server closes the connection (idle again once the body is sent).
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut rest)).await.unwrap().unwrap();
    let head = String::from_utf8_lossy(&response[..head_end]).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert_eq!(response.len() - head_end + rest.len(), bytes, "the whole body arrived");
}

/// At shutdown, a connection that trickles a request head is closed by the header-read
/// deadline, not kept open until the drain deadline.
#[tokio::test]
async fn header_read_deadline_holds_during_the_drain() {
    let mut settings = test_settings();
    settings.server.header_read_timeout_ms = 300;
    settings.server.drain_timeout_ms = 10_000;
    let mut app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let addr = app.api.trim_start_matches("http://").to_string();
    let (trickler, mut sent) = trickle_head(tokio::net::TcpStream::connect(&addr).await.unwrap());
    // Trickling when the shutdown starts: the request line and a header line are sent.
    let trickling = tokio::time::timeout(Duration::from_secs(5), sent.wait_for(|&lines| lines >= 2));
    assert!(trickling.await.is_ok_and(|seen| seen.is_ok()), "the trickler sent a header line");
    let started = std::time::Instant::now();
    app.stop();
    app.handle.take().unwrap().await.unwrap().unwrap();
    assert!(started.elapsed() < Duration::from_secs(4), "stopped after {:?}", started.elapsed());
    assert!(trickler.await.unwrap().is_some(), "the trickling connection was closed");
}

/// A CA and a leaf for "localhost" signed by it, as PEM (cert, key), plus the CA's DER.
fn issue(name: &str) -> (String, String, rustls_pki_types::CertificateDer<'static>) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, format!("{name} CA"));
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    (leaf.pem(), leaf_key.serialize_pem(), ca.der().clone())
}

/// A TLS client trusting only `ca`.
fn connector(ca: &rustls_pki_types::CertificateDer<'static>) -> tokio_rustls::TlsConnector {
    use tokio_rustls::rustls::{ClientConfig, RootCertStore, crypto::aws_lc_rs};
    let mut roots = RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let config = ClientConfig::builder_with_provider(Arc::new(aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

type Tls = tokio_rustls::client::TlsStream<tokio::net::TcpStream>;

async fn handshake(addr: &str, ca: &rustls_pki_types::CertificateDer<'static>) -> std::io::Result<Tls> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    connector(ca).connect(name, tcp).await
}

async fn tls_get(stream: &mut Tls, path: &str) -> String {
    let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    // Bounded: a server that neither answers nor closes fails the test instead of hanging it.
    let n = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut buf))
        .await
        .expect("an answer")
        .unwrap();
    String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or("").to_owned()
}

async fn reloads(app: &crate::helpers::TestApp, what: &str, result: &str) -> u64 {
    let text = app.client.get(format!("{}/metrics", app.admin)).send().await.unwrap().text().await.unwrap();
    let prefix = format!("drbgd_reloads_total{{result=\"{result}\",what=\"{what}\"}} ");
    text.lines().find_map(|l| l.strip_prefix(&prefix)).map_or(0, |v| v.parse().unwrap())
}

#[tokio::test]
async fn tls_certificate_reloads_without_dropping_connections() {
    let (cert_a, key_a, ca_a) = issue("a");
    let (cert_b, key_b, ca_b) = issue("b");
    let dir = std::env::temp_dir().join(format!("drbgd-tls-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert_path, key_path) = (dir.join("tls.crt"), dir.join("tls.key"));
    std::fs::write(&cert_path, &cert_a).unwrap();
    std::fs::write(&key_path, &key_a).unwrap();
    let mut settings = test_settings();
    settings.tls.enabled = true;
    settings.tls.cert_file = cert_path.display().to_string();
    settings.tls.key_file = key_path.display().to_string();
    settings.server.reload_interval_ms = 50;
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let addr = app.api.trim_start_matches("http://").to_string();

    let mut old = handshake(&addr, &ca_a).await.expect("certificate A");
    assert!(tls_get(&mut old, "/token").await.contains("200"));
    assert!(handshake(&addr, &ca_b).await.is_err(), "B is not served yet");

    // Rotate as Kubernetes does: both files change in place.
    std::fs::write(&key_path, &key_b).unwrap();
    std::fs::write(&cert_path, &cert_b).unwrap();
    assert!(
        eventually(Duration::from_secs(5), || async { handshake(&addr, &ca_b).await.is_ok() }).await,
        "B served after reload"
    );
    assert!(handshake(&addr, &ca_a).await.is_err(), "A no longer served to new connections");
    assert!(tls_get(&mut old, "/token").await.contains("200"), "the open connection was not dropped");
    assert!(reloads(&app, "tls", "ok").await >= 1);

    // An invalid file is refused; B stays in force.
    let errors = reloads(&app, "tls", "error").await;
    std::fs::write(&cert_path, "not a certificate").unwrap();
    assert!(
        eventually(Duration::from_secs(5), || async { reloads(&app, "tls", "error").await > errors }).await
    );
    let mut again = handshake(&addr, &ca_b).await.expect("B still served after a bad reload");
    assert!(tls_get(&mut again, "/token").await.contains("200"));
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn api_keys_file_reloads_and_a_bad_file_keeps_the_old_keys() {
    let hex = |key: &[u8]| data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(key));
    let dir = std::env::temp_dir().join(format!("drbgd-keys-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("api_keys");
    std::fs::write(&file, format!("# keys\n{}\n", hex(b"first"))).unwrap();
    let mut settings = test_settings();
    settings.auth.enabled = true;
    settings.auth.api_keys_file = Some(file.clone());
    settings.server.reload_interval_ms = 50;
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let status = |key: &'static str| {
        let request = app.client.get(app.url("/token")).bearer_auth(key).send();
        async move { request.await.unwrap().status().as_u16() }
    };
    assert_eq!((status("first").await, status("second").await), (200, 401));
    std::fs::write(&file, format!("{}\n", hex(b"second"))).unwrap();
    assert!(
        eventually(Duration::from_secs(5), || async { status("second").await == 200 }).await,
        "new key accepted"
    );
    assert_eq!(status("first").await, 401, "revoked key refused");
    let errors = reloads(&app, "callers", "error").await;
    std::fs::write(&file, "not-a-digest\n").unwrap();
    assert!(
        eventually(Duration::from_secs(5), || async { reloads(&app, "callers", "error").await > errors })
            .await
    );
    assert_eq!(status("second").await, 200, "the previous keys stay after a bad file");
    // Emptying the file revokes every key (start-up would refuse it; a reload accepts it).
    std::fs::write(&file, "# all revoked\n").unwrap();
    assert!(
        eventually(Duration::from_secs(5), || async { status("second").await == 401 }).await,
        "every key revoked"
    );
    std::fs::remove_dir_all(&dir).ok();
}

async fn boom() -> &'static str {
    panic!("boom")
}

/// A panic in a handler (or anything below the pipeline) is a 500 problem+json with
/// `no-store` and the request id, counted and logged like any answer; the in-flight gauge is
/// back where it was. A body that panics while streaming cuts that response only.
#[tokio::test]
async fn a_panicking_handler_is_a_500_with_every_header_and_nothing_leaks() {
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;
    let app = drbgd::app::App::build(test_settings()).await.unwrap();
    let state = app.state().clone();
    let router = axum::Router::new()
        .route("/token", axum::routing::get(boom))
        .route("/nonce", axum::routing::get(|| async { "fine" }));
    let errors = || state.metrics.errors.with_label_values(&["internal"]).get();
    let before = errors();
    let service = drbgd::http::service(&state, router);
    let request = Request::get("/token").header("x-request-id", "panic-1").body(Body::empty()).unwrap();
    let response = service.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), 500);
    assert_eq!(response.headers()["cache-control"], "no-store");
    assert_eq!(response.headers()["x-request-id"], "panic-1");
    assert_eq!(response.headers()["content-type"], "application/problem+json");
    assert_eq!(errors(), before + 1);
    assert_eq!(state.metrics.in_flight.get(), 0);
    // The service (and whatever it shares) still answers.
    let response = service.oneshot(Request::get("/nonce").body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(response.status(), 200);
}

/// Connections whose handshake the kernel finished before the listener closes are served under
/// the drain, not reset with the listener: eight clients connect and send a request before the
/// server runs, and it is told to stop before it starts. Its accept loop races the stop for
/// each (a random pick between two ready branches) and takes some; the rest are in the queue
/// when the loop ends. Each client gets its answer (without taking the queue, all eight would
/// need to win both races).
#[tokio::test]
async fn connections_queued_when_the_listener_closes_are_served() {
    use drbgd::server::{Phase, ServeOptions, serve};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let mut clients = Vec::new();
    for _ in 0..8 {
        let mut client = tokio::net::TcpStream::connect(address).await.unwrap();
        client.write_all(b"GET /x HTTP/1.1\r\nhost: test\r\n\r\n").await.unwrap();
        clients.push(client);
    }
    let (_phase, stopped) = tokio::sync::watch::channel(Phase::Stopped);
    let router = axum::Router::new().route("/x", axum::routing::get(|| async { "served" }));
    let options = ServeOptions {
        max_connections: 64,
        header_read_timeout: Duration::from_secs(5),
        drain_timeout: Duration::from_secs(5),
        max_connection_age: None,
        write_timeout: Duration::from_secs(30),
        http2_idle_timeout: Duration::from_secs(20),
        http2_max_concurrent_streams: 100,
    };
    let server = tokio::spawn(serve(listener, router, options, None, stopped));
    let answers = async {
        for mut client in clients {
            let mut answer = String::new();
            client.read_to_string(&mut answer).await.unwrap();
            assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("served"), "{answer:?}");
        }
        server.await.unwrap()
    };
    let drained = tokio::time::timeout(Duration::from_secs(20), answers).await.expect("answered in time");
    assert!(drained, "drained within the deadline");
}

/// A GET answered by its endpoint directly runs when its response future is first polled,
/// not when the service is called (HTTP/2 calls the service on the connection's task and
/// spawns only the future): a future dropped unpolled generates and charges nothing.
#[tokio::test]
async fn a_direct_endpoint_runs_on_the_first_poll_not_in_the_call() {
    use axum::body::Body;
    use axum::http::Request;
    use tower::Service;
    let app = drbgd::app::App::build(test_settings()).await.unwrap();
    let state = app.state().clone();
    let mut service = drbgd::http::service(&state, drbgd::http::router(state.clone(), axum::Router::new()));
    let served = || state.metrics.output_bytes.with_label_values(&["chacha20"]).get();
    let token = || Request::get("/token?alg=chacha20").body(Body::empty()).unwrap();
    let before = served();
    let future = service.call(token());
    assert_eq!(served(), before, "generated when called");
    drop(future);
    assert_eq!(served(), before);
    let response = service.call(token()).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(served(), before + 32);
}

/// The real binary, default config: every request gets exactly one access line, and the
/// batching log writer has written all of them by the time the process exits on SIGTERM (the
/// last ones are still queued when the signal arrives).
#[tokio::test]
async fn every_request_has_its_access_line_and_none_is_lost_at_exit() {
    let Binary { mut child, lines, log, api, .. } = spawn_binary(&["--shards", "1"]).await;
    let (connections, each) = (8, 250);
    let tasks: Vec<_> = (0..connections)
        .map(|c| {
            let api = api.clone();
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                for i in 0..each {
                    let r = client
                        .get(format!("http://{api}/token"))
                        .header("x-request-id", format!("exit-test-{c}-{i}"))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), 200);
                }
            })
        })
        .collect();
    // stderr is not read meanwhile: the pipe fills and the writer waits on it, so most lines
    // are still queued when the signal comes (about 0.5 MB: under the queue's 4 MiB, so the
    // requests never wait for room; the timeout turns a stall into a failure, not a hang).
    tokio::time::timeout(Duration::from_secs(60), async {
        for task in tasks {
            task.await.unwrap();
        }
    })
    .await
    .expect("2,000 requests within a minute");
    let pid = i32::try_from(child.id().unwrap()).unwrap();
    // SAFETY: kill(2) with a pid we spawned and still own (not yet waited for); no memory
    // is touched.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let mut rest = String::new();
    tokio::time::timeout(Duration::from_secs(30), lines.into_inner().read_to_string(&mut rest))
        .await
        .unwrap()
        .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status}");
    let text = log.join("\n") + "\n" + &rest;
    let mut ids: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("drbgd::access"))
        .map(|l| l.split("request_id=\"").nth(1).unwrap().split('"').next().unwrap())
        .collect();
    assert_eq!(ids.len(), connections * each, "one access line per request");
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), connections * each, "each request's own line");
    assert!(text.lines().last().unwrap().contains("stopped"), "the last line is the shutdown's: {text:.300}");
}
