//! Hostile clients, as an attacker would be one, against the real application: HTTP/2 streams
//! without bodies and without credentials, oversize gRPC messages, a trickled request body, a
//! client that only answers pings, a client that stops reading. What they may not do: hold
//! any capacity an authorized caller needs, make the server buffer much, or keep a connection
//! for ever.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use drbgd::config::Settings;
use drbgd::grpc::pb::GetTokenRequest;
use drbgd::grpc::pb::randomness_service_client::RandomnessServiceClient as RandomnessClient;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{TestApp, assert_problem, eventually, spawn_binary, spawn_with, test_settings};

const EXAMPLE: &str = "config/examples/callers.toml";

fn example() -> Settings {
    let free = serde_json::json!({
        "server": { "listen": "127.0.0.1:0", "admin_listen": "127.0.0.1:0" },
        "drbg": { "shards": 2 },
    });
    Settings::load(Some(EXAMPLE.as_ref()), free).expect("the example loads")
}

async fn spawn(settings: Settings) -> TestApp {
    spawn_with(settings, Arc::new(drbgd::drbg::entropy::OsEntropy)).await
}

fn addr(api: &str) -> String {
    api.trim_start_matches("http://").to_string()
}

/// An HTTP/2 connection of the `h2` crate (prior knowledge, no TLS), its driver spawned; the
/// handle ends when the server closes the connection.
async fn h2_connect(api: &str) -> (h2::client::SendRequest<Bytes>, tokio::task::JoinHandle<()>) {
    let tcp = TcpStream::connect(addr(api)).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    (client, driver)
}

/// A gRPC call's head, with no body sent (the stream stays open from our side).
fn grpc_head(api: &str, method: &str, key: Option<&str>) -> http::Request<()> {
    let mut request = http::Request::post(format!("{api}/drbgd.v1.RandomnessService/{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(key) = key {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    request.body(()).unwrap()
}

/// The gRPC status of a trailers-only response (0 when the headers carry none).
fn grpc_status(response: &http::Response<h2::RecvStream>) -> u32 {
    response
        .headers()
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_without_bodies_or_credentials_take_nothing_from_authorized_callers() {
    let binary = spawn_binary(&["--config", EXAMPLE]).await;
    let api = format!("http://{}", binary.api);
    // Audit lines of refused calls (caller `unknown`, UNAUTHENTICATED), counted as they come.
    let mut lines = binary.lines;
    let (refused_tx, mut refused) = tokio::sync::watch::channel(0);
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("drbgd::audit")
                && line.contains("\"caller\":\"unknown\"")
                && line.contains("\"status\":16")
            {
                refused_tx.send_modify(|n| *n += 1);
            }
        }
    });
    // Six connections of 100 streams (the server's cap per connection), each a gRPC call's
    // head with no key and no body: more than the default cap of 512 requests in progress,
    // which they held full until the request timeout when callers were admitted after the
    // body. And a seventh whose 100 streams each send a 3 MiB message.
    let mut held = Vec::new();
    let mut answers = Vec::new();
    // Two more connections of public health checks without bodies: they take places of the
    // public requests' own small cap, never the callers'.
    let mut health = Vec::new();
    for _ in 0..2 {
        let (client, _driver) = h2_connect(&api).await;
        let mut client = client.ready().await.unwrap();
        for _ in 0..100 {
            client = client.ready().await.unwrap();
            let head = http::Request::post(format!("{api}/grpc.health.v1.Health/Check"))
                .header("content-type", "application/grpc")
                .header("te", "trailers")
                .body(())
                .unwrap();
            let (response, body) = client.send_request(head, false).unwrap();
            held.push(body);
            health.push(response);
        }
    }
    for connection in 0..7 {
        let (client, _driver) = h2_connect(&api).await;
        let mut client = client.ready().await.unwrap();
        for _ in 0..100 {
            client = client.ready().await.unwrap();
            let (response, mut body) = client.send_request(grpc_head(&api, "GetBits", None), false).unwrap();
            if connection == 6 {
                let mut message = vec![0u8; 3 << 20];
                message[1..5].copy_from_slice(&((3u32 << 20) - 5).to_be_bytes());
                // Refused from the head, the stream may be gone before its message.
                let _ = body.send_data(Bytes::from(message), false);
            }
            held.push(body);
            answers.push(response);
        }
        // The connection stays open while a stream of it is held; the handle may go.
        drop(client);
    }
    // Meanwhile an authorized caller, over REST and gRPC: never refused.
    let http = reqwest::Client::new();
    let mut grpc = RandomnessClient::connect(api.clone()).await.unwrap();
    for _ in 0..20 {
        let token = http.get(format!("{api}/token")).bearer_auth("batch-example-key").send().await.unwrap();
        assert_eq!(token.status(), 200);
        let mut request = tonic::Request::new(GetTokenRequest::default());
        request.metadata_mut().insert("authorization", "Bearer batch-example-key".parse().unwrap());
        grpc.get_token(request).await.expect("an authorized GetToken");
    }
    // Every unauthenticated stream was answered at once, UNAUTHENTICATED, its body unread.
    let started = Instant::now();
    let answers_len = answers.len();
    for answer in answers {
        let response =
            tokio::time::timeout(Duration::from_secs(10), answer).await.expect("answered").unwrap();
        assert_eq!(grpc_status(&response), 16, "UNAUTHENTICATED");
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(answers_len, 700);
    // The health checks without a message: each answered (refused at the public cap, or an
    // error at the public body deadline), none left hanging.
    for answer in health {
        tokio::time::timeout(Duration::from_secs(10), answer).await.expect("answered").unwrap();
    }
    // ...and each left its line: one audit line per refused call, caller `unknown`.
    let all = tokio::time::timeout(Duration::from_secs(10), refused.wait_for(|n| *n >= 700)).await.is_ok();
    assert!(all, "one audit line per refused stream: {}", *refused.borrow());
    // The server's peak RSS: the messages were never buffered.
    let status = std::fs::read_to_string(format!("/proc/{}/status", binary.child.id().unwrap())).unwrap();
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    assert!(peak_kib < 64 * 1024, "peak RSS {peak_kib} KiB");
    eprintln!("peak RSS under attack: {peak_kib} KiB");
    drop(held);
    drop(binary.child);
}

#[tokio::test]
async fn a_grpc_message_longer_than_any_request_is_refused_from_its_length_prefix() {
    let app = spawn(test_settings()).await;
    let (client, _driver) = h2_connect(&app.api).await;
    let mut client = client.ready().await.unwrap();
    let (response, mut body) = client.send_request(grpc_head(&app.api, "GetBits", None), false).unwrap();
    // A 3 MiB message announced, 16 KiB of it sent: refused on the prefix, never buffered.
    let mut frame = vec![0u8];
    frame.extend_from_slice(&(3u32 << 20).to_be_bytes());
    frame.extend_from_slice(&[0u8; 16 * 1024]);
    body.send_data(Bytes::from(frame), false).unwrap();
    let response = tokio::time::timeout(Duration::from_secs(5), response).await.unwrap().unwrap();
    let mut trailers_or_head = grpc_status(&response);
    if trailers_or_head == 0 {
        let mut stream = response.into_body();
        while stream.data().await.is_some() {}
        let trailers = stream.trailers().await.unwrap().unwrap_or_default();
        trailers_or_head = trailers.get("grpc-status").unwrap().to_str().unwrap().parse().unwrap();
    }
    assert_eq!(trailers_or_head, 11, "OUT_OF_RANGE");
}

#[tokio::test]
async fn a_trickled_body_is_answered_at_the_body_deadline() {
    let mut settings = test_settings();
    settings.server.body_read_timeout_ms = 300;
    let app = spawn(settings).await;
    let mut tcp = TcpStream::connect(addr(&app.api)).await.unwrap();
    let head = "POST /bits HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 40\r\n\r\n{\"n\":";
    tcp.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut answer))
        .await
        .expect("answered")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("invalid_body") && answer.contains("body read timeout"), "{answer}");
    assert!(started.elapsed() >= Duration::from_millis(250), "not before the deadline");
}

#[tokio::test]
async fn a_post_body_larger_than_any_request_is_refused() {
    let app = spawn(test_settings()).await;
    let body = format!("{{\"n\": 8, \"pad\": \"{}\"}}", "x".repeat(8192));
    let response = app.client.post(app.url("/bits")).body(body).send().await.unwrap();
    let problem = assert_problem(response, 400, "invalid_body").await;
    assert!(problem["detail"].as_str().unwrap().contains("at most"), "{problem}");
}

#[tokio::test]
async fn an_http2_client_that_only_pings_is_closed_when_idle() {
    let mut settings = test_settings();
    settings.server.http2_idle_timeout_ms = 400;
    let app = spawn(settings).await;
    let tcp = TcpStream::connect(addr(&app.api)).await.unwrap();
    let (client, mut connection) = h2::client::handshake(tcp).await.unwrap();
    let mut ping_pong = connection.ping_pong().expect("a ping handle");
    let driver = tokio::spawn(connection);
    // One request, answered: the connection is HTTP/2 and has carried a request.
    let mut client = client.ready().await.unwrap();
    let request = http::Request::get(app.url("/openapi.json")).body(()).unwrap();
    let (response, _) = client.send_request(request, true).unwrap();
    assert_eq!(response.await.unwrap().status(), 200);
    let served = Instant::now();
    // Then only pings, every 50 ms, each answered: not enough to keep the connection.
    let pinging = tokio::spawn(async move {
        while ping_pong.ping(h2::Ping::opaque()).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let closed = tokio::time::timeout(Duration::from_secs(5), driver).await;
    assert!(closed.is_ok(), "closed within 5 s (idle timeout 400 ms)");
    let after = served.elapsed();
    assert!(after >= Duration::from_millis(400), "not before the idle timeout: {after:?}");
    assert!(
        after < Duration::from_millis(400 * 5 / 4 + 1500),
        "within 1.25 periods and the close grace: {after:?}"
    );
    pinging.abort();
    drop(client);
}

#[tokio::test]
async fn an_http2_connection_with_a_stream_open_is_not_idle() {
    let mut settings = test_settings();
    settings.server.http2_idle_timeout_ms = 200;
    let app = spawn(settings).await;
    let (client, driver) = h2_connect(&app.api).await;
    let mut client = client.ready().await.unwrap();
    // A 10^8-bit body, read slowly but steadily: the stream is open for well past the idle
    // timeout, and the connection must stay.
    let request = http::Request::get(app.url("/bits?n=100000000&format=binary")).body(()).unwrap();
    let (response, _) = client.send_request(request, true).unwrap();
    let mut body = response.await.unwrap().into_body();
    let mut total = 0;
    let started = Instant::now();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        total += chunk.len();
        let _ = body.flow_control().release_capacity(chunk.len());
        if started.elapsed() < Duration::from_millis(800) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    assert_eq!(total, 12_500_000);
    assert!(!driver.is_finished());
}

#[tokio::test]
async fn a_health_watch_waiting_for_a_change_is_not_a_stalled_response() {
    let mut settings = test_settings();
    settings.server.write_timeout_ms = 300;
    settings.server.http2_idle_timeout_ms = 300;
    let app = spawn(settings).await;
    let (client, driver) = h2_connect(&app.api).await;
    let mut client = client.ready().await.unwrap();
    let head = http::Request::post(app.url("/grpc.health.v1.Health/Watch"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (response, mut request) = client.send_request(head, false).unwrap();
    // HealthCheckRequest { service: "" }: an empty message.
    request.send_data(Bytes::from_static(&[0, 0, 0, 0, 0]), true).unwrap();
    let response = response.await.unwrap();
    assert_eq!(grpc_status(&response), 0);
    let mut body = response.into_body();
    let first = body.data().await.expect("the first status").unwrap();
    let _ = body.flow_control().release_capacity(first.len());
    // The stream now waits for readiness to change: its client reads, nothing is stuck. Five
    // write timeouts later, the connection and the stream are still there.
    let next = tokio::time::timeout(Duration::from_millis(1500), body.data()).await;
    assert!(next.is_err(), "no new status while readiness holds: {next:?}");
    assert!(!driver.is_finished(), "the connection was closed under a waiting Watch");
}

#[tokio::test]
async fn a_client_that_stops_reading_is_cut_and_its_place_given_back() {
    let mut settings = example();
    settings.server.write_timeout_ms = 400;
    let app = spawn(settings).await;
    let in_flight = || {
        let registry = app.state.callers.registry();
        registry.callers().iter().find(|c| c.name() == "batch").unwrap().quota_state().in_flight()
    };
    let mut tcp = TcpStream::connect(addr(&app.api)).await.unwrap();
    let head = "GET /bits?n=100000000&format=binary HTTP/1.1\r\nhost: x\r\nauthorization: Bearer batch-example-key\r\n\r\n";
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut first = vec![0u8; 1024];
    let n = tcp.read(&mut first).await.unwrap();
    assert!(first[..n].starts_with(b"HTTP/1.1 200"));
    // Stop reading: the buffers fill, the body stalls, the connection is cut.
    let cut = async {
        while in_flight() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), cut)
        .await
        .expect("the caller's place given back within 5 s");
    // Reading again finds the connection closed short of the 12.5 MB.
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut rest)).await.expect("closed");
    assert!(n + rest.len() < 12_500_000, "cut short: {}", n + rest.len());
}

#[tokio::test]
async fn a_request_the_server_sheds_costs_the_caller_no_token() {
    let mut settings = example();
    settings.server.concurrency_limit = 1;
    let app = spawn(settings).await;
    // The one place, held by a batch call whose body never comes.
    let mut hold = TcpStream::connect(addr(&app.api)).await.unwrap();
    let head = "POST /bits HTTP/1.1\r\nhost: x\r\nauthorization: Bearer batch-example-key\r\ncontent-length: 40\r\n\r\n";
    hold.write_all(head.as_bytes()).await.unwrap();
    let shed = async {
        loop {
            let r = app.client.get(app.url("/token")).bearer_auth("web-example-key").send().await.unwrap();
            if r.status() == 503 {
                return r;
            }
        }
    };
    let first =
        tokio::time::timeout(Duration::from_secs(5), shed).await.expect("shed once the place is held");
    assert_problem(first, 503, "overloaded").await;
    for _ in 0..15 {
        let r = app.client.get(app.url("/token")).bearer_auth("web-example-key").send().await.unwrap();
        assert_problem(r, 503, "overloaded").await;
    }
    drop(hold);
    // web's burst is 10 (at 50/s): all of it is still there after 16 requests shed. A 503
    // while the held place is being given back is retried; a 429 would mean tokens burned.
    let mut served = 0;
    for _ in 0..100 {
        let r = app.client.get(app.url("/token")).bearer_auth("web-example-key").send().await.unwrap();
        match r.status().as_u16() {
            200 => served += 1,
            503 => continue,
            other => panic!("{other} after {served} served: tokens were burned"),
        }
        if served == 10 {
            break;
        }
    }
    assert_eq!(served, 10, "the burst is whole");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_log_sink_never_blocks_the_service_and_nothing_is_served_unaudited() {
    // The example (audit lines on) at trace level, so that each request logs a lot.
    let dir = std::env::temp_dir().join(format!("drbgd-stalled-log-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("callers.toml");
    let text = std::fs::read_to_string(EXAMPLE).unwrap();
    let edited = text.replacen("audit = true", "audit = true\nlevel = \"trace\"", 1);
    assert_ne!(edited, text);
    std::fs::write(&config, edited).unwrap();
    let binary = spawn_binary(&["--config", config.to_str().unwrap()]).await;
    // Its stderr is never read again (the pipe stays open): the log sink has stalled.
    let _unread = binary.lines;
    let client = reqwest::Client::new();
    let api = format!("http://{}", binary.api);
    let mut refused = None;
    for i in 0..20_000 {
        let r = client.get(format!("{api}/token")).bearer_auth("batch-example-key").send().await.unwrap();
        match r.status().as_u16() {
            200 => {}
            503 => {
                refused = Some((i, r.json::<serde_json::Value>().await.unwrap()));
                break;
            }
            other => panic!("{other}"),
        }
    }
    let (served, problem) = refused.expect("audited requests refused once the log backs up");
    assert_eq!(problem["code"], "audit_unavailable", "{problem}");
    assert!(served > 10, "{served} served before");
    // The admin port answers at once: no worker thread waits on the log.
    let mut latencies = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let r = client.get(format!("http://{}/livez", binary.admin)).send().await.unwrap();
        assert_eq!(r.status(), 200);
        latencies.push(started.elapsed());
    }
    latencies.sort();
    assert!(latencies[2] < Duration::from_millis(100), "{latencies:?}");
    // More requests while the sink is stalled: refused at once, their lines dropped (and
    // counted) once the queue is full.
    let dropped = || async {
        let metrics = client.get(format!("http://{}/metrics", binary.admin)).send().await.unwrap();
        let text = metrics.text().await.unwrap();
        let line = text.lines().find_map(|l| l.strip_prefix("drbgd_log_lines_dropped_total "));
        line.expect("the dropped-lines counter").parse::<f64>().unwrap()
    };
    let mut rounds = 0;
    while dropped().await == 0.0 {
        rounds += 1;
        assert!(rounds < 100, "no line dropped after {rounds} rounds");
        for _ in 0..100 {
            let r = client.get(format!("{api}/token")).bearer_auth("batch-example-key").send().await.unwrap();
            assert_eq!(r.status(), 503);
        }
    }
    drop(binary.child);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn public_streams_have_a_cap_of_their_own_and_health_checks_still_pass() {
    // The pool's own cap, from one peer given room past its share (the per-peer limits come
    // first otherwise: tests/api/doors.rs).
    let mut settings = test_settings();
    settings.server.peer_max_in_flight = 100;
    settings.server.peer_max_streams = 100;
    settings.server.peer_burst = 1000;
    let app = spawn(settings).await;
    let (client, _driver) = h2_connect(&app.api).await;
    let mut client = client.ready().await.unwrap();
    let call = |client: &mut h2::client::SendRequest<Bytes>, method: &str| {
        let head = http::Request::post(app.url(&format!("/grpc.health.v1.Health/{method}")))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .unwrap();
        let (response, mut body) = client.send_request(head, false).unwrap();
        body.send_data(Bytes::from_static(&[0, 0, 0, 0, 0]), true).unwrap();
        response
    };
    // Sixteen Watch streams held open (the public streams' cap): each answered and kept.
    let mut watches = Vec::new();
    for _ in 0..16 {
        client = client.ready().await.unwrap();
        let response = call(&mut client, "Watch").await.unwrap();
        assert_eq!(grpc_status(&response), 0);
        watches.push(response);
    }
    // A seventeenth is refused at once, RESOURCE_EXHAUSTED...
    client = client.ready().await.unwrap();
    let refused = call(&mut client, "Watch").await.unwrap();
    assert_eq!(grpc_status(&refused), 8, "RESOURCE_EXHAUSTED");
    // ...while a health check, public but no stream, still passes.
    client = client.ready().await.unwrap();
    let check = call(&mut client, "Check").await.unwrap();
    assert_eq!(check.status(), 200);
    let mut body = check.into_body();
    let message = body.data().await.expect("a reply").unwrap();
    assert_eq!(message[5..], [8, 1], "SERVING");
    // A Watch's place comes back when it ends.
    drop(watches);
    let again = async {
        loop {
            client = client.clone().ready().await.unwrap();
            let response = call(&mut client, "Watch").await.unwrap();
            if grpc_status(&response) == 0 {
                return;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), again).await.expect("a place given back");
}

#[tokio::test]
async fn idle_http2_clients_at_the_connection_cap_lock_no_one_out_past_the_idle_timeout() {
    let mut settings = test_settings();
    settings.server.max_connections = 4;
    settings.server.http2_idle_timeout_ms = 400;
    let app = spawn(settings).await;
    // Four HTTP/2 clients take every connection: each asks once, then only answers pings.
    let mut idle = Vec::new();
    for _ in 0..4 {
        let (client, driver) = h2_connect(&app.api).await;
        let mut client = client.ready().await.unwrap();
        let request = http::Request::get(app.url("/openapi.json")).body(()).unwrap();
        let (response, _) = client.send_request(request, true).unwrap();
        assert_eq!(response.await.unwrap().status(), 200);
        idle.push((client, driver));
    }
    // A fifth waits in the backlog until an idle one is closed, then is served.
    let started = Instant::now();
    let response =
        tokio::time::timeout(Duration::from_secs(10), app.client.get(app.url("/openapi.json")).send())
            .await
            .expect("served within 10 s")
            .unwrap();
    assert_eq!(response.status(), 200);
    let waited = started.elapsed();
    assert!(waited < Duration::from_millis(400 * 5 / 4 + 1500), "locked out for {waited:?}");
    drop(idle);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_health_and_reflection_calls_each_leave_a_line() {
    let binary = spawn_binary(&["--config", EXAMPLE]).await;
    let api = format!("http://{}", binary.api);
    let mut lines = binary.lines;
    let (seen_tx, mut seen) = tokio::sync::watch::channel(Vec::<String>::new());
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("drbgd::audit") {
                seen_tx.send_modify(|l| l.push(line));
            }
        }
    });
    // A call abandoned before its answer: a POST whose body never comes, then the client
    // resets the stream (HTTP/2 RST_STREAM).
    let (client, _driver) = h2_connect(&api).await;
    let mut client = client.ready().await.unwrap();
    let head = http::Request::post(format!("{api}/bits"))
        .header("x-request-id", "abandoned-1")
        .header("authorization", "Bearer batch-example-key")
        .header("content-length", "40")
        .body(())
        .unwrap();
    let (response, mut body) = client.send_request(head, false).unwrap();
    // The reset once the server has the call (its caller admitted, waiting for the body): the
    // only API request in flight.
    let metrics = format!("http://{}/metrics", binary.admin);
    let scraper = reqwest::Client::new();
    let called = || async {
        let text = scraper.get(&metrics).send().await.unwrap().text().await.unwrap();
        text.lines().any(|l| l.strip_prefix("drbgd_requests_in_flight ").is_some_and(|v| v.trim() != "0"))
    };
    assert!(eventually(Duration::from_secs(5), called).await, "the call reached the server");
    body.send_reset(h2::Reason::CANCEL);
    drop((response, body));
    // A health check and a reflection lookup, public, over HTTP/2.
    let (client, _driver) = h2_connect(&api).await;
    let mut client = client.ready().await.unwrap();
    for (path, id, message) in [
        ("/grpc.health.v1.Health/Check", "health-1", vec![0u8, 0, 0, 0, 0]),
        // ServerReflectionRequest { list_services: "" } (field 7).
        (
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
            "reflection-1",
            vec![0, 0, 0, 0, 2, 0x3a, 0],
        ),
    ] {
        let head = http::Request::post(format!("{api}{path}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("x-request-id", id)
            .body(())
            .unwrap();
        client = client.ready().await.unwrap();
        let (response, mut body) = client.send_request(head, false).unwrap();
        body.send_data(Bytes::from(message), true).unwrap();
        let mut stream = response.await.unwrap().into_body();
        while stream.data().await.is_some() {}
    }
    let wanted = ["abandoned-1", "health-1", "reflection-1"];
    let all = tokio::time::timeout(
        Duration::from_secs(10),
        seen.wait_for(|l| wanted.iter().all(|id| l.iter().any(|line| line.contains(id)))),
    )
    .await
    .is_ok();
    let lines = seen.borrow().clone();
    assert!(all, "{lines:#?}");
    let line = |id: &str| {
        let found: Vec<&String> =
            lines.iter().filter(|l| l.contains(&format!("\"request_id\":\"{id}\""))).collect();
        assert_eq!(found.len(), 1, "exactly one line for {id}: {found:?}");
        serde_json::from_str::<serde_json::Value>(found[0]).unwrap()
    };
    let abandoned = line("abandoned-1");
    assert_eq!(
        (abandoned["status"].as_u64(), abandoned["code"].as_str()),
        (Some(499), Some("client_closed"))
    );
    assert_eq!(abandoned["caller"], "batch");
    let health = line("health-1");
    assert_eq!((health["route"].as_str(), health["transport"].as_str()), (Some("grpc.health"), Some("grpc")));
    assert_eq!(health["caller"], "");
    let reflection = line("reflection-1");
    assert_eq!(reflection["route"], "grpc.reflection");
    drop(binary.child);
}
