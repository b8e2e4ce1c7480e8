//! Named callers over HTTP and gRPC with the shipped example (config/examples/callers.toml):
//! 401, 403 with each code, 429 with Retry-After and the rate-limit fields, /usage, the
//! `caller` label, the audit trail. Their configuration and its reloads are in
//! `callers_config.rs`, client certificates in `callers_mtls.rs`.

use std::sync::Arc;
use std::time::Duration;

use drbgd::config::Settings;
use drbgd::grpc::pb::randomness_service_client::RandomnessServiceClient as RandomnessClient;
use drbgd::grpc::pb::{
    Algorithm, GetBitsRequest, GetBytesRequest, GetIntsRequest, GetTokenRequest, GetUsageRequest,
    StreamBitsRequest,
};
use tonic::Code;

use crate::helpers::{Binary, TestApp, assert_problem, spawn_binary, spawn_with};

pub(crate) const EXAMPLE: &str = "config/examples/callers.toml";

pub(crate) fn on_free_ports() -> serde_json::Value {
    serde_json::json!({ "server": { "listen": "127.0.0.1:0", "admin_listen": "127.0.0.1:0" }, "drbg": { "shards": 2 } })
}

pub(crate) fn example() -> Settings {
    Settings::load(Some(EXAMPLE.as_ref()), on_free_ports()).expect("the example loads")
}

pub(crate) async fn spawn_example() -> TestApp {
    spawn_with(example(), Arc::new(drbgd::drbg::entropy::OsEntropy)).await
}

pub(crate) async fn get(app: &TestApp, key: &str, path: &str) -> reqwest::Response {
    app.client.get(app.url(path)).bearer_auth(key).send().await.unwrap()
}

fn parse_ratelimit(value: &str) -> (u64, u64) {
    // "requests";r=7;t=1
    let item = value.split(", ").find(|i| i.starts_with("\"requests\"")).expect("a requests item");
    let param = |name: &str| {
        item.split(';').find_map(|p| p.strip_prefix(&format!("{name}="))).unwrap().parse::<u64>().unwrap()
    };
    (param("r"), param("t"))
}

#[tokio::test]
async fn the_example_callers_get_their_policies_over_http() {
    let app = spawn_example().await;
    // No key, a wrong key: 401 (and counted under `unknown`).
    assert_problem(app.get("/token").await, 401, "unauthorized").await;
    assert_problem(get(&app, "nope", "/token").await, 401, "unauthorized").await;

    // batch: everything, no rate-limit fields.
    for path in
        ["/int?min=1&max=6", "/bits?n=100000&alg=aes256ctr&pr=true", "/bytes?n=16&alg=blake3", "/uuid"]
    {
        let r = get(&app, "batch-example-key", path).await;
        assert_eq!(r.status(), 200, "{path}");
        assert!(r.headers().get("ratelimit").is_none() && r.headers().get("ratelimit-policy").is_none());
    }

    // web: each rule with its code.
    let cases = [
        ("/int?min=1&max=6", "route_not_allowed"),
        ("/bytes?n=16", "route_not_allowed"),
        ("/bits?n=256&alg=aes256ctr", "alg_not_allowed"),
        ("/token?alg=blake3", "alg_not_allowed"),
        ("/bits?n=4097", "n_not_allowed"),
        ("/token?bytes=513", "n_not_allowed"),
        ("/bits?n=256&pr=true", "pr_not_allowed"),
    ];
    for (path, code) in cases {
        let r = get(&app, "web-example-key", path).await;
        assert!(r.headers().contains_key("ratelimit-policy"), "{path}: quota fields on refusals too");
        assert_problem(r, 403, code).await;
    }
    let r = get(&app, "web-example-key", "/bits?n=4096&format=hex").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["ratelimit-policy"], "\"requests\";q=50;w=1;qu=\"requests\";drbgd-burst=10");
    assert_eq!(r.text().await.unwrap().len(), 1024);

    // /usage: the caller, its policy and its denials so far.
    let usage: serde_json::Value = get(&app, "web-example-key", "/usage").await.json().await.unwrap();
    assert_eq!(usage["caller"], "web");
    assert_eq!(usage["policy"]["algs"], serde_json::json!(["chacha20"]));
    assert_eq!(usage["policy"]["routes"], serde_json::json!(["/bits", "/token", "/nonce", "/uuid"]));
    assert_eq!(usage["policy"]["max_bits"], 4096);
    assert_eq!(usage["policy"]["pr"], false);
    assert_eq!(usage["quota"]["scope"], "instance");
    assert_eq!(usage["quota"]["requests"]["per_second"], 50);
    assert_eq!(usage["quota"]["requests"]["burst"], 10);
    assert_eq!(usage["quota"]["bytes"], serde_json::Value::Null);
    assert_eq!(usage["counters"]["denied"]["route_not_allowed"], 2);
    assert_eq!(usage["counters"]["denied"]["alg_not_allowed"], 2);
    assert_eq!(usage["counters"]["denied"]["n_not_allowed"], 2);
    assert_eq!(usage["counters"]["denied"]["pr_not_allowed"], 1);
    assert_eq!(usage["counters"]["output_bytes"], 512);
    let batch: serde_json::Value = get(&app, "batch-example-key", "/usage").await.json().await.unwrap();
    assert_eq!(batch["caller"], "batch");
    assert_eq!(batch["quota"]["requests"], serde_json::Value::Null);

    // The caller label, bounded: the configured names and `unknown`.
    let metrics =
        app.client.get(format!("{}/metrics", app.admin)).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("drbgd_caller_requests_total{caller=\"web\"}"), "{metrics}");
    assert!(metrics.contains("drbgd_caller_output_bytes_total{caller=\"batch\"}"));
    assert!(metrics.contains("drbgd_caller_denials_total{caller=\"unknown\",code=\"unauthorized\"} 2"));
    // Requests "admitted or denied": the two 401s are requests of `unknown` too.
    assert!(metrics.contains("drbgd_caller_requests_total{caller=\"unknown\"} 2"), "{metrics}");
    assert!(metrics.contains("drbgd_caller_denials_total{caller=\"web\",code=\"n_not_allowed\"} 2"));
    let callers: std::collections::BTreeSet<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("drbgd_caller_"))
        .filter_map(|l| l.split("caller=\"").nth(1)?.split('"').next())
        .collect();
    assert!(callers.iter().all(|c| ["web", "batch", "anonymous", "unknown"].contains(c)), "{callers:?}");
}

#[tokio::test]
async fn over_quota_is_429_with_retry_after_and_the_rate_limit_fields() {
    let app = spawn_example().await;
    // A burst of 10; the refill (50/s) may add a token or two while these run.
    let mut ok = 0;
    let mut limited = None;
    for _ in 0..40 {
        let r = get(&app, "web-example-key", "/token").await;
        if r.status() == 429 {
            limited = Some(r);
            break;
        }
        assert_eq!(r.status(), 200);
        let (remaining, _) = parse_ratelimit(r.headers()["ratelimit"].to_str().unwrap());
        assert!(remaining <= 10);
        ok += 1;
    }
    assert!((10..40).contains(&ok), "{ok} served before the first 429");
    let r = limited.expect("a 429 within 40 requests");
    let retry: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(retry >= 1, "{retry}");
    let (remaining, reset) = parse_ratelimit(r.headers()["ratelimit"].to_str().unwrap());
    assert_eq!(remaining, 0);
    assert!(reset >= 1);
    assert_problem(r, 429, "rate_limited").await;
    // Other callers are not affected, and the limited one gets in again after the wait.
    assert_eq!(get(&app, "batch-example-key", "/token").await.status(), 200);
    // The buckets run on tokio's clock: a quarter of a second passes without waiting for it.
    tokio::time::pause();
    tokio::time::advance(Duration::from_millis(250)).await;
    tokio::time::resume();
    assert_eq!(get(&app, "web-example-key", "/token").await.status(), 200);
    let usage: serde_json::Value = get(&app, "web-example-key", "/usage").await.json().await.unwrap();
    assert!(usage["counters"]["denied"]["rate_limited"].as_u64().unwrap() >= 1);
}

/// A caller's share of the concurrency limit holds for streamed responses until their last
/// byte (or the client leaving), over HTTP and gRPC.
#[tokio::test]
async fn a_stream_holds_its_callers_in_flight_place_to_the_end() {
    let mut s = example();
    s.callers.get_mut("batch").unwrap().quota.max_in_flight = 1;
    let app = spawn_with(s, Arc::new(drbgd::drbg::entropy::OsEntropy)).await;
    let freed = || async {
        for _ in 0..100 {
            if get(&app, "batch-example-key", "/token").await.status() == 200 {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    };
    // 10^8 bits (12.5 MB), streamed; the client reads the head only, so the body waits.
    let stream = get(&app, "batch-example-key", "/bits?n=100000000&format=binary").await;
    assert_eq!(stream.status(), 200);
    let r = get(&app, "batch-example-key", "/token").await;
    assert!(r.headers()["retry-after"].to_str().unwrap().parse::<u64>().unwrap() >= 1);
    let body = assert_problem(r, 429, "concurrency_limited").await;
    assert!(body["detail"].as_str().unwrap().contains("1 requests in progress"), "{body}");
    // A metadata route needs no route permission but takes an in-flight place like any other.
    assert_problem(get(&app, "batch-example-key", "/usage").await, 429, "concurrency_limited").await;
    assert_eq!(get(&app, "web-example-key", "/token").await.status(), 200, "web has its own share");
    drop(stream); // the client goes away: the stream ends, and its place with it
    assert!(freed().await, "the place was not given back after the client left");

    // The same over gRPC.
    let mut c = RandomnessClient::connect(app.api.clone()).await.unwrap();
    let req = drbgd::grpc::pb::StreamBitsRequest {
        n: 100_000_000,
        alg: 0,
        chunk_bytes: 0,
        prediction_resistance: false,
    };
    let stream = c.stream_bits(with_key("batch-example-key", req)).await.unwrap();
    let status = c.get_token(with_key("batch-example-key", GetTokenRequest::default())).await.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted);
    assert!(status.message().starts_with("concurrency_limited: "), "{status:?}");
    drop(stream);
    assert!(freed().await, "the gRPC stream's place was not given back");
}

/// The metadata routes take no request token: a caller held at its rate still reads its own
/// usage (HTTP and gRPC), with the rate-limit fields saying it is at zero, and its denials.
#[tokio::test]
async fn metadata_routes_answer_a_caller_held_at_its_rate() {
    // web refills at 1/s here, not the example's 50/s: the assertions after the burst is spent
    // take milliseconds, and at 50/s a slow machine (or build) got a token back before the last.
    let (dir, app) = spawn_edited("held-at-rate", |text| {
        let edited = text.replace("requests_per_second = 50", "requests_per_second = 1");
        assert_ne!(edited, text, "the example changed: the edit no longer applies");
        edited
    })
    .await;
    let mut c = RandomnessClient::connect(app.api.clone()).await.unwrap();
    // A burst of 10 at 1/s: /token is refused well within 40 calls.
    let mut limited = false;
    for _ in 0..40 {
        if get(&app, "web-example-key", "/token").await.status() == 429 {
            limited = true;
            break;
        }
    }
    assert!(limited, "no 429 within 40 calls of a caller limited to 10");
    for path in ["/usage", "/algorithms", "/usage"] {
        let r = get(&app, "web-example-key", path).await;
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(parse_ratelimit(r.headers()["ratelimit"].to_str().unwrap()).0, 0, "{path}");
    }
    let usage = c.get_usage(with_key("web-example-key", GetUsageRequest {})).await.unwrap().into_inner();
    assert!(format!("{usage:?}").contains("rate_limited"), "{usage:?}");
    let usage: serde_json::Value = get(&app, "web-example-key", "/usage").await.json().await.unwrap();
    assert!(usage["counters"]["denied"]["rate_limited"].as_u64().unwrap() >= 1, "{usage}");
    // Still held: the next random request is refused.
    assert_problem(get(&app, "web-example-key", "/token").await, 429, "rate_limited").await;
    std::fs::remove_dir_all(&dir).ok();
}

/// A REST request that claims to be gRPC (by its content type) is still measured, counted and
/// logged as the REST request it is: the label cannot be used to pass unrecorded.
#[tokio::test]
async fn a_rest_request_claiming_grpc_is_still_observed() {
    let app = spawn_example().await;
    let r = app
        .client
        .get(app.url("/token"))
        .bearer_auth("batch-example-key")
        .header("content-type", "application/grpc")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let metrics =
        app.client.get(format!("{}/metrics", app.admin)).send().await.unwrap().text().await.unwrap();
    assert_eq!(crate::helpers::http_requests(&metrics, "/token", None), 1, "{metrics}");
}

pub(crate) fn with_key<T>(key: &str, msg: T) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.metadata_mut().insert("authorization", format!("Bearer {key}").parse().unwrap());
    r
}

#[tokio::test]
async fn grpc_callers_get_the_same_answers() {
    let app = spawn_example().await;
    let mut c = RandomnessClient::connect(app.api.clone()).await.unwrap();
    let bits = |n, alg: Algorithm, pr| GetBitsRequest {
        n,
        alg: alg as i32,
        prediction_resistance: pr,
        ..Default::default()
    };
    let status = c.get_bits(bits(8, Algorithm::Unspecified, false)).await.unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    let denied = [
        (bits(256, Algorithm::Blake3, false), "alg_not_allowed"),
        (bits(4097, Algorithm::Unspecified, false), "n_not_allowed"),
        (bits(256, Algorithm::Unspecified, true), "pr_not_allowed"),
    ];
    for (msg, code) in denied {
        let status = c.get_bits(with_key("web-example-key", msg)).await.unwrap_err();
        assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
        assert!(status.message().starts_with(&format!("{code}: ")), "{status:?}");
        assert!(status.metadata().get("ratelimit-policy").is_some());
    }
    let ints = GetIntsRequest { min: 1, max: 6, count: 1, alg: 0, ..Default::default() };
    let status = c.get_ints(with_key("web-example-key", ints.clone())).await.unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    assert!(status.message().starts_with("route_not_allowed: "));
    assert!(c.get_ints(with_key("batch-example-key", ints)).await.is_ok());

    let usage = c.get_usage(with_key("web-example-key", GetUsageRequest {})).await.unwrap().into_inner();
    assert_eq!(usage.caller, "web");
    assert_eq!(usage.allowed_algorithms, [Algorithm::Chacha20 as i32]);
    assert_eq!(usage.max_bits, 4096);
    assert_eq!(usage.requests.unwrap().burst, 10);
    assert_eq!(usage.denied["alg_not_allowed"], 1);

    // Over quota: RESOURCE_EXHAUSTED with retry-after and ratelimit metadata.
    let token = GetTokenRequest::default();
    let mut exhausted = None;
    for _ in 0..40 {
        match c.get_token(with_key("web-example-key", token.clone())).await {
            Ok(reply) => assert!(reply.metadata().get("ratelimit").is_some()),
            Err(status) => {
                exhausted = Some(status);
                break;
            }
        }
    }
    let status = exhausted.expect("RESOURCE_EXHAUSTED within 40 calls");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(status.message().starts_with("rate_limited: "), "{status:?}");
    let retry: u64 = status.metadata().get("retry-after").unwrap().to_str().unwrap().parse().unwrap();
    assert!(retry >= 1);
    assert!(status.metadata().get("ratelimit").is_some());
    assert!(c.get_token(with_key("batch-example-key", token)).await.is_ok(), "batch is not limited");
    // On the 429 the bucket is shown as it was when it refused: nothing left.
    let ratelimit = status.metadata().get("ratelimit").unwrap().to_str().unwrap();
    assert_eq!(parse_ratelimit(ratelimit).0, 0, "{ratelimit}");

    // Each refusal is in the latency series under its own code, not folded into UNKNOWN.
    let metrics =
        app.client.get(format!("{}/metrics", app.admin)).send().await.unwrap().text().await.unwrap();
    for code in ["UNAUTHENTICATED", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED"] {
        assert!(metrics.contains(&format!("code=\"{code}\"")), "{code} missing");
    }
    assert!(!metrics.contains("code=\"UNKNOWN\""));
}

/// The real binary with the shipped example and nothing else: it starts, names callers in the
/// access log, and writes one JSON audit line per request without output or keys.
#[tokio::test]
async fn the_binary_serves_the_example_and_writes_the_audit_trail() {
    let Binary { mut child, mut lines, mut log, api, .. } = spawn_binary(&["--config", EXAMPLE]).await;
    let client = reqwest::Client::new();
    let token = client
        .get(format!("http://{api}/token"))
        .bearer_auth("web-example-key")
        .header("x-request-id", "audit-test-1")
        .send()
        .await
        .unwrap();
    assert_eq!(token.status(), 200);
    let value = token.text().await.unwrap();
    let denied = client
        .get(format!("http://{api}/int?max=6"))
        .bearer_auth("web-example-key")
        .header("x-request-id", "audit-test-2")
        .send()
        .await
        .unwrap();
    assert_eq!(denied.status(), 403);
    let nobody = client
        .get(format!("http://{api}/token"))
        .bearer_auth("guess")
        .header("x-request-id", "audit-test-3")
        .send()
        .await
        .unwrap();
    assert_eq!(nobody.status(), 401);
    // A gRPC stream the client cancels after its first message still gets its audit line.
    let mut grpc = RandomnessClient::connect(format!("http://{api}")).await.unwrap();
    let req = drbgd::grpc::pb::StreamBitsRequest {
        n: 100_000_000,
        alg: 0,
        chunk_bytes: 0,
        prediction_resistance: false,
    };
    let mut req = with_key("batch-example-key", req);
    req.metadata_mut().insert("x-request-id", "audit-test-4".parse().unwrap());
    let mut stream = grpc.stream_bits(req).await.unwrap().into_inner();
    assert!(stream.message().await.unwrap().is_some());
    drop(stream);
    drop(grpc);
    // The server sees the cancellation and writes that stream's audit line (a line reaches
    // stderr within the log writer's linger).
    let cancelled = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let audited = line.contains("drbgd::audit") && line.contains("audit-test-4");
            log.push(line);
            if audited {
                return true;
            }
        }
        false
    };
    let cancelled = tokio::time::timeout(Duration::from_secs(10), cancelled).await;
    assert_eq!(cancelled, Ok(true), "the cancelled stream's audit line within 10 s: {log:?}");
    // SIGTERM: the log is flushed at exit.
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGTERM) };
    while let Ok(Some(line)) = lines.next_line().await {
        log.push(line);
    }
    assert!(child.wait().await.unwrap().success());
    let text = log.join("\n");
    assert!(!text.contains(&value), "output never logged");
    assert!(!text.contains("web-example-key") && !text.contains("guess"), "keys never logged");
    let audit: Vec<serde_json::Value> = log
        .iter()
        .filter(|l| l.contains("drbgd::audit"))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(audit.len(), 4, "{text}");
    let line =
        |id: &str| audit.iter().find(|a| a["request_id"] == id).unwrap_or_else(|| panic!("{id}: {text}"));
    let ok = line("audit-test-1");
    assert_eq!(
        (ok["caller"].as_str(), ok["route"].as_str(), ok["alg"].as_str()),
        (Some("web"), Some("/token"), Some("chacha20"))
    );
    assert_eq!(
        (ok["n"].as_u64(), ok["status"].as_u64(), ok["transport"].as_str()),
        (Some(256), Some(200), Some("http"))
    );
    let d = line("audit-test-2");
    assert_eq!(
        (d["caller"].as_str(), d["status"].as_u64(), d["code"].as_str()),
        (Some("web"), Some(403), Some("route_not_allowed"))
    );
    let u = line("audit-test-3");
    assert_eq!((u["caller"].as_str(), u["status"].as_u64()), (Some("unknown"), Some(401)));
    let c = line("audit-test-4");
    assert_eq!(
        (c["caller"].as_str(), c["route"].as_str(), c["status"].as_u64(), c["code"].as_str()),
        (Some("batch"), Some("StreamBits"), Some(1), Some("cancelled"))
    );
    // The access log (text) names the caller too.
    assert!(
        log.iter().any(|l| l.contains("drbgd::access")
            && l.contains("caller=\"web\"")
            && l.contains("audit-test-1")),
        "{text}"
    );
}

/// The example with `[callers.web]` changed as `edit` says, written to `path`.
pub(crate) fn write_config(path: &std::path::Path, edit: impl Fn(String) -> String) {
    let text = std::fs::read_to_string(EXAMPLE).unwrap();
    std::fs::write(path, edit(text)).unwrap();
}

/// A fresh directory for one test's files (named by `tag`).
pub(crate) fn temp_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "drbgd-callers-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The example edited by `edit`, written to a fresh directory, loaded as a file (as the
/// binary would) and served.
pub(crate) async fn spawn_edited(
    tag: &str,
    edit: impl Fn(String) -> String,
) -> (std::path::PathBuf, TestApp) {
    let dir = temp_dir(tag);
    let file = dir.join("callers.toml");
    write_config(&file, edit);
    let settings = Settings::load(Some(&file), on_free_ports()).expect("the edited example loads");
    (dir, spawn_with(settings, Arc::new(drbgd::drbg::entropy::OsEntropy)).await)
}

/// web may also call `/bytes` (so its bit limit, not its routes, decides), with room for the
/// requests of one test in its burst.
fn web_with_bytes(text: String) -> String {
    let edited = text
        .replace(
            "routes = [\"/token\", \"/nonce\", \"/uuid\", \"/bits\"]",
            "routes = [\"/token\", \"/nonce\", \"/uuid\", \"/bits\", \"/bytes\"]",
        )
        .replace("burst = 10\n", "burst = 1000\n");
    assert_ne!(edited, text, "the example changed: the edit no longer applies");
    assert!(edited.contains("\"/bytes\"]") && edited.contains("burst = 1000"));
    edited
}

/// The policy over HTTP for `/bytes` (n in bytes, the limit in bits) and the JSON body of
/// `POST /bits`, each rule with its code.
#[tokio::test]
async fn the_policy_applies_to_bytes_and_to_json_bodies() {
    let (dir, app) = spawn_edited("shapes", web_with_bytes).await;
    let web = "web-example-key";
    // max_bits = 4096: 512 bytes fit exactly, 513 do not.
    let r = get(&app, web, "/bytes?n=512&format=hex").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap().len(), 1024);
    let body = assert_problem(get(&app, web, "/bytes?n=513").await, 403, "n_not_allowed").await;
    assert!(body["detail"].as_str().unwrap().contains("4104"), "{body}");
    assert_problem(get(&app, web, "/bytes?n=16&alg=blake3").await, 403, "alg_not_allowed").await;
    assert_problem(get(&app, web, "/bytes?n=16&pr=true").await, 403, "pr_not_allowed").await;

    // POST /bits with a JSON body: the same rules as the query string.
    let post =
        |body: serde_json::Value| app.client.post(app.url("/bits")).bearer_auth(web).json(&body).send();
    let r = post(serde_json::json!({ "n": 256, "format": "hex" })).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap().len(), 64);
    assert_problem(post(serde_json::json!({ "n": 8192 })).await.unwrap(), 403, "n_not_allowed").await;
    assert_problem(post(serde_json::json!({ "n": 4097 })).await.unwrap(), 403, "n_not_allowed").await;
    assert_problem(
        post(serde_json::json!({ "n": 256, "alg": "aes" })).await.unwrap(),
        403,
        "alg_not_allowed",
    )
    .await;
    assert_problem(post(serde_json::json!({ "n": 256, "pr": true })).await.unwrap(), 403, "pr_not_allowed")
        .await;
    // batch (pr allowed, no limit of its own) gets all of them.
    let r = app
        .client
        .post(app.url("/bits"))
        .bearer_auth("batch-example-key")
        .json(&serde_json::json!({ "n": 8192, "alg": "aes", "pr": true }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    let usage: serde_json::Value = get(&app, web, "/usage").await.json().await.unwrap();
    assert_eq!(
        usage["policy"]["routes"],
        serde_json::json!(["/bits", "/bytes", "/token", "/nonce", "/uuid"])
    );
    assert_eq!(usage["counters"]["denied"]["n_not_allowed"], 3, "{usage}");
    assert_eq!(usage["counters"]["denied"]["alg_not_allowed"], 2, "{usage}");
    assert_eq!(usage["counters"]["denied"]["pr_not_allowed"], 2, "{usage}");
    assert_eq!(usage["counters"]["output_bytes"], 512 + 32, "{usage}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `msg` as the caller `web`.
fn web<T>(msg: T) -> tonic::Request<T> {
    with_key("web-example-key", msg)
}

/// The gRPC status of a refused call: PERMISSION_DENIED and `code` first in its message.
#[track_caller]
fn assert_denied(status: &tonic::Status, code: &str) {
    assert_eq!(status.code(), Code::PermissionDenied, "{code}: {status:?}");
    assert!(status.message().starts_with(&format!("{code}: ")), "{code}: {status:?}");
}

/// `GetBytes`, `GetBits` and `StreamBits` beyond web's n, with an algorithm it may not use and
/// with prediction resistance: PERMISSION_DENIED with the code; a route it may not call too.
#[tokio::test]
async fn grpc_checks_the_policy_of_every_random_output_method() {
    let (dir, app) = spawn_edited("grpc-shapes", web_with_bytes).await;
    let mut c = RandomnessClient::connect(app.api.clone()).await.unwrap();
    let bytes = |n, alg: Algorithm, pr| GetBytesRequest {
        n,
        alg: alg as i32,
        prediction_resistance: pr,
        ..Default::default()
    };
    let bits = |n, alg: Algorithm, pr| GetBitsRequest {
        n,
        alg: alg as i32,
        prediction_resistance: pr,
        ..Default::default()
    };
    let stream = |n, alg: Algorithm, pr| StreamBitsRequest {
        n,
        alg: alg as i32,
        chunk_bytes: 0,
        prediction_resistance: pr,
    };

    let ok = c.get_bytes(web(bytes(512, Algorithm::Unspecified, false))).await.unwrap().into_inner();
    assert_eq!(ok.data.len(), 512);
    for (msg, code) in [
        (bytes(513, Algorithm::Unspecified, false), "n_not_allowed"),
        (bytes(16, Algorithm::Aes256ctr, false), "alg_not_allowed"),
        (bytes(16, Algorithm::Unspecified, true), "pr_not_allowed"),
    ] {
        assert_denied(&c.get_bytes(web(msg)).await.unwrap_err(), code);
    }
    for (msg, code) in [
        (bits(8192, Algorithm::Unspecified, false), "n_not_allowed"),
        (bits(256, Algorithm::Aes256ctr, false), "alg_not_allowed"),
        (bits(256, Algorithm::Chacha20, true), "pr_not_allowed"),
    ] {
        assert_denied(&c.get_bits(web(msg)).await.unwrap_err(), code);
    }
    // StreamBits: refused before the first message, not part-way through.
    let mut ok = c.stream_bits(web(stream(4096, Algorithm::Chacha20, false))).await.unwrap().into_inner();
    let mut streamed = 0;
    while let Some(chunk) = ok.message().await.unwrap() {
        streamed += chunk.data.len();
    }
    assert_eq!(streamed, 512);
    for (msg, code) in [
        (stream(4097, Algorithm::Unspecified, false), "n_not_allowed"),
        (stream(100_000_000, Algorithm::Unspecified, false), "n_not_allowed"),
        (stream(256, Algorithm::Blake3, false), "alg_not_allowed"),
        (stream(256, Algorithm::Unspecified, true), "pr_not_allowed"),
    ] {
        assert_denied(&c.stream_bits(web(msg)).await.unwrap_err(), code);
    }
    // Routes: web may not call GetInts (here) nor GetBytes (in the example as shipped).
    let ints = GetIntsRequest { min: 1, max: 6, count: 1, alg: 0, ..Default::default() };
    assert_denied(&c.get_ints(web(ints)).await.unwrap_err(), "route_not_allowed");
    let usage = c.get_usage(web(GetUsageRequest {})).await.unwrap().into_inner();
    assert_eq!(usage.denied["n_not_allowed"], 4);
    assert_eq!(usage.denied["alg_not_allowed"], 3);
    assert_eq!(usage.denied["pr_not_allowed"], 3);
    assert_eq!(usage.denied["route_not_allowed"], 1);
    std::fs::remove_dir_all(&dir).ok();

    let shipped = spawn_example().await;
    let mut c = RandomnessClient::connect(shipped.api.clone()).await.unwrap();
    let status = c.get_bytes(web(bytes(16, Algorithm::Unspecified, false))).await.unwrap_err();
    assert_denied(&status, "route_not_allowed");
    assert!(
        c.get_bytes(with_key("batch-example-key", bytes(16, Algorithm::Unspecified, false))).await.is_ok()
    );
}

/// A byte quota (`bytes_per_second`, `bytes_burst`): over it, 429 `rate_limited` with
/// Retry-After and the `"bytes"` rate-limit fields, nothing left.
#[tokio::test]
async fn over_the_byte_quota_is_429_naming_the_bytes_policy() {
    // batch: no request limit, 64 bytes at once and 8 per second after; a request of the whole
    // burst leaves it empty for 1/8 s, so the next one is refused with nothing left.
    let (dir, app) = spawn_edited("bytes", |t| {
        t.replace(
            "# batch-example-key\n",
            "# batch-example-key\n\n[callers.batch.quota]\nbytes_per_second = 8\nbytes_burst = 64\n",
        )
    })
    .await;
    let batch = "batch-example-key";
    let policy = "\"bytes\";q=8;w=1;qu=\"content-bytes\";drbgd-burst=64";
    let mut ok = 0;
    let mut limited = None;
    for _ in 0..10 {
        let r = get(&app, batch, "/bytes?n=64").await;
        assert_eq!(r.headers()["ratelimit-policy"], policy);
        if r.status() == 429 {
            limited = Some(r);
            break;
        }
        assert_eq!(r.status(), 200);
        ok += 1;
    }
    assert!((1..10).contains(&ok), "{ok} served before the first 429");
    let r = limited.expect("a 429 within 10 requests of 64 bytes at 8 bytes/s");
    let retry: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(retry >= 1, "{retry}");
    let ratelimit = r.headers()["ratelimit"].to_str().unwrap().to_string();
    let item =
        ratelimit.split(", ").find(|i| i.starts_with("\"bytes\"")).unwrap_or_else(|| panic!("{ratelimit}"));
    assert!(item.split(';').any(|p| p == "r=0"), "{ratelimit}");
    let t: u64 = item.split(';').find_map(|p| p.strip_prefix("t=")).unwrap().parse().unwrap();
    assert!(t >= 1, "{ratelimit}");
    assert!(!ratelimit.contains("\"requests\""), "batch has no request quota: {ratelimit}");
    let body = assert_problem(r, 429, "rate_limited").await;
    assert!(body["detail"].as_str().unwrap().contains("bytes"), "{body}");
    // Bytes, not requests: a request for no random output still passes, and web is unaffected.
    assert_eq!(get(&app, batch, "/usage").await.status(), 200);
    assert_eq!(get(&app, "web-example-key", "/token").await.status(), 200);
    let usage: serde_json::Value = get(&app, batch, "/usage").await.json().await.unwrap();
    assert_eq!(usage["quota"]["bytes"]["per_second"], 8, "{usage}");
    assert_eq!(usage["quota"]["bytes"]["burst"], 64, "{usage}");
    assert!(usage["counters"]["denied"]["rate_limited"].as_u64().unwrap() >= 1, "{usage}");
    std::fs::remove_dir_all(&dir).ok();
}
