//! Admin endpoints, readiness during shutdown, load shedding, auth, entropy failure, metrics
//! label bounds and the OpenAPI document.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use drbgd::drbg::entropy::ScriptedEntropy;
use futures_util::StreamExt;
use sha2::Digest;

use crate::helpers::{assert_problem, spawn_app, spawn_with, test_settings};

#[tokio::test]
async fn liveness_readiness_and_metrics() {
    let app = spawn_app().await;
    assert_eq!(app.client.get(format!("{}/livez", app.admin)).send().await.unwrap().status(), 200);
    assert_eq!(app.client.get(format!("{}/readyz", app.admin)).send().await.unwrap().status(), 200);
    app.get("/bits?n=4096&alg=blake3").await.bytes().await.unwrap();
    let text = app.client.get(format!("{}/metrics", app.admin)).send().await.unwrap().text().await.unwrap();
    for series in [
        "drbgd_http_request_duration_seconds_bucket{alg=\"blake3\",route=\"/bits\",status=\"200\"",
        "drbgd_output_bias_zscore_count{alg=\"blake3\"} 1",
        "drbgd_bias_observations_total{alg=\"blake3\"} 4096",
        "drbgd_reseeds_total{alg=\"chacha20\",reason=\"startup\"} 2",
        "drbgd_shards 2",
        "drbgd_ready 1",
        "drbgd_build_info{",
    ] {
        assert!(text.contains(series), "missing {series}");
    }
}

#[tokio::test]
async fn labels_stay_bounded_whatever_the_client_sends() {
    let app = spawn_app().await;
    for i in 0..40 {
        app.get(&format!("/random/path/{i}?n={i}")).await;
        app.get(&format!("/bits?n=8&alg=alg{i}")).await;
        app.get(&format!("/bits?n=8&format=f{i}&x{i}=1")).await;
    }
    let text = app.client.get(format!("{}/metrics", app.admin)).send().await.unwrap().text().await.unwrap();
    let routes: std::collections::BTreeSet<&str> = text
        .lines()
        .filter(|l| l.starts_with("drbgd_http_request_duration_seconds_count"))
        .filter_map(|l| l.split("route=\"").nth(1)?.split('"').next())
        .collect();
    let allowed: Vec<&str> = drbgd::http::ENDPOINTS.iter().map(|e| e.label).chain(["unmatched"]).collect();
    assert!(routes.iter().all(|r| allowed.contains(r)), "{routes:?}");
    assert!(!text.contains("alg=\"alg"), "client-chosen alg values must not become labels");
    assert!(text.lines().filter(|l| l.starts_with("drbgd_http_request_duration_seconds_count")).count() <= 6);
}

#[tokio::test]
async fn shutdown_turns_unready_and_finishes_in_flight_streams() {
    let mut app = spawn_app().await;
    let n = 100_000_000u64;
    let response = app.get(&format!("/bits?n={n}&format=binary")).await;
    let mut body = response.bytes_stream();
    let mut received = body.next().await.unwrap().unwrap().len();
    app.stop();
    let readyz = format!("{}/readyz", app.admin);
    let mut unready = false;
    for _ in 0..200 {
        if app.client.get(&readyz).send().await.unwrap().status() == 503 {
            unready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(unready, "/readyz must turn 503 once shutdown starts");
    while let Some(chunk) = body.next().await {
        received += chunk.expect("in-flight stream completes").len();
    }
    assert_eq!(received as u64, n / 8, "no request in flight is cut");
    let result = app.handle.take().unwrap().await.unwrap();
    assert!(result.is_ok());
    assert!(reqwest::get(app.url("/livez")).await.is_err(), "listener closed after the drain");
}

#[tokio::test]
async fn overload_is_shed_with_503_and_retry_after() {
    let mut settings = test_settings();
    settings.server.concurrency_limit = 1;
    let app = spawn_with(settings, Arc::new(drbgd::drbg::entropy::OsEntropy)).await;
    // A POST whose body never arrives holds the only slot inside the handler.
    let addr = app.api.trim_start_matches("http://").to_string();
    let mut stalled = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        stalled,
        "POST /bits HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{{"
    )
    .unwrap();
    for _ in 0..400 {
        if app.state.metrics.in_flight.get() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(app.state.metrics.in_flight.get(), 1);
    let r = app.get("/bits?n=8").await;
    assert_eq!(r.headers()["retry-after"], "1");
    assert_problem(r, 503, "overloaded").await;
    // A gRPC call shed the same way gets a gRPC status it can read, not an HTTP 503.
    let mut grpc =
        drbgd::grpc::pb::randomness_service_client::RandomnessServiceClient::connect(app.api.clone())
            .await
            .unwrap();
    let shed = grpc.get_token(drbgd::grpc::pb::GetTokenRequest::default()).await.unwrap_err();
    assert_eq!(shed.code(), tonic::Code::ResourceExhausted, "{shed:?}");
    assert!(shed.message().starts_with("overloaded"), "{shed:?}");
    assert_eq!(shed.metadata().get("retry-after").unwrap(), "1");
    assert_eq!(app.state.metrics.errors.with_label_values(&["overloaded"]).get(), 2, "both counted once");
    drop(stalled);
    let mut ok = false;
    for _ in 0..400 {
        if app.get("/bits?n=8").await.status() == 200 {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(ok, "serves again once the slot is free");
    let _ = stalled_read_nothing();
}

/// A request not answered in `server.request_timeout_ms` gets a 503 `timeout` (the timer is
/// armed only for requests that wait), and its place under the cap is given back.
#[tokio::test]
async fn a_request_past_its_timeout_is_a_503_and_frees_its_place() {
    let mut settings = test_settings();
    settings.server.concurrency_limit = 1;
    settings.server.request_timeout_ms = 300;
    let app = spawn_with(settings, Arc::new(drbgd::drbg::entropy::OsEntropy)).await;
    let addr = app.api.trim_start_matches("http://").to_string();
    let started = std::time::Instant::now();
    let answer = tokio::task::spawn_blocking(move || {
        // A body that never arrives keeps the handler waiting.
        let mut stalled = std::net::TcpStream::connect(&addr).unwrap();
        write!(
            stalled,
            "POST /bits HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{{"
        )
        .unwrap();
        stalled.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut answer = vec![0u8; 4096];
        let n = stalled.read(&mut answer).unwrap();
        answer.truncate(n);
        String::from_utf8_lossy(&answer).into_owned()
    })
    .await
    .unwrap();
    let waited = started.elapsed();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("\"code\":\"timeout\""), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("cache-control: no-store"), "{answer}");
    assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(5), "{waited:?}");
    assert_eq!(app.state.metrics.in_flight.get(), 0);
    assert_eq!(app.state.metrics.errors.with_label_values(&["timeout"]).get(), 1);
    // The only place under the cap is free again.
    assert_eq!(app.get("/bits?n=8").await.status(), 200);
}

fn stalled_read_nothing() -> usize {
    let mut empty: &[u8] = &[];
    let mut buf = [0u8; 1];
    empty.read(&mut buf).unwrap_or(0)
}

#[tokio::test]
async fn auth_requires_a_configured_key() {
    let mut settings = test_settings();
    settings.auth.enabled = true;
    settings.auth.api_key_sha256 = vec![data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(b"k3y"))];
    let app = spawn_with(settings, Arc::new(drbgd::drbg::entropy::OsEntropy)).await;
    let r = app.get("/bits?n=8").await;
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    assert_problem(r, 401, "unauthorized").await;
    let r = app.client.get(app.url("/uuid")).bearer_auth("wrong").send().await.unwrap();
    assert_problem(r, 401, "unauthorized").await;
    let r = app.client.get(app.url("/uuid")).bearer_auth("k3y").send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(app.get("/openapi.json").await.status(), 200, "the API description stays public");
    // Off by default.
    let open = spawn_app().await;
    assert_eq!(open.get("/bits?n=8").await.status(), 200);
}

#[tokio::test]
async fn entropy_failure_fails_closed_and_recovers() {
    let entropy = Arc::new(ScriptedEntropy::default());
    let app = spawn_with(test_settings(), entropy.clone()).await;
    assert_eq!(app.get("/bits?n=64").await.status(), 200);
    entropy.set_failing(true);
    let r = app.get("/bits?n=64&pr=true").await;
    assert_eq!(r.headers()["retry-after"], "1");
    assert_problem(r, 503, "entropy_unavailable").await;
    assert_eq!(app.client.get(format!("{}/readyz", app.admin)).send().await.unwrap().status(), 503);
    let text = app.client.get(format!("{}/metrics", app.admin)).send().await.unwrap().text().await.unwrap();
    assert!(text.contains("drbgd_entropy_failures_total"));
    assert!(!text.contains("drbgd_entropy_failures_total 0"));
    entropy.set_failing(false);
    assert_eq!(app.client.get(format!("{}/readyz", app.admin)).send().await.unwrap().status(), 200);
    assert_eq!(app.get("/bits?n=64&pr=true").await.status(), 200);
}

#[tokio::test]
async fn startup_refuses_without_entropy() {
    let failing: Arc<dyn drbgd::drbg::entropy::EntropySource> = Arc::new(ScriptedEntropy::failing());
    let err = drbgd::app::App::build_with_entropy(test_settings(), failing).await.err().expect("must refuse");
    assert!(format!("{err:#}").contains("cannot seed"), "{err:#}");
}

#[tokio::test]
async fn openapi_documents_exactly_the_routes() {
    // The drop-in front-ends, the beacon and tickets (off by default) are documented and served
    // only when on.
    for on in [false, true] {
        let mut settings = test_settings();
        (settings.pollen.enabled, settings.vault.enabled, settings.kms.enabled) = (on, on, on);
        settings.randomorg.enabled = on;
        if on {
            settings.beacon.enabled = true;
            settings.beacon.secret_key_file = "config/examples/beacon-example.key".into();
            settings.beacon.genesis_time = 1_767_225_600;
            // Tickets, with what they need: receipts and auth.
            settings.receipts.enabled = true;
            settings.receipts.signing_keys = vec!["config/examples/receipt-example-key.pem".into()];
            settings.auth.enabled = true;
            let key = drbgd::config::callers::CallerSettings {
                key_sha256: vec!["ab".repeat(32)],
                ..Default::default()
            };
            settings.callers.insert("web".into(), key);
            settings.tickets.enabled = true;
            let dir = std::env::temp_dir().join(format!("drbgd-openapi-tickets-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            settings.results.path = dir.join("tickets.sqlite3").display().to_string();
        }
        let app = spawn_with(settings, Arc::new(drbgd::drbg::entropy::OsEntropy)).await;
        documents_exactly_the_routes(&app, on).await;
    }
}

async fn documents_exactly_the_routes(app: &crate::helpers::TestApp, drop_ins: bool) {
    use drbgd::pipeline::Availability;
    let doc: serde_json::Value = app.get("/openapi.json").await.json().await.unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    let paths: std::collections::BTreeSet<&str> =
        doc["paths"].as_object().unwrap().keys().map(String::as_str).collect();
    // Each endpoint's first path (a drop-in's or the beacon's only while it is on): Vault's path
    // forms with a source or a count after them, and the beacon's under a chain hash, are
    // described in their operations' summaries.
    let routes: std::collections::BTreeSet<&str> = drbgd::http::ENDPOINTS
        .iter()
        .filter(|e| drop_ins || e.availability == Availability::Always)
        .map(|e| e.paths[0])
        .collect();
    assert_eq!(paths, routes);
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            let r = app
                .client
                .request(method.to_uppercase().parse().unwrap(), app.url(path))
                .send()
                .await
                .unwrap();
            assert_ne!(r.status(), 405, "{method} {path} is documented but not served");
            // A route's own 404 names what is missing (`ticket_not_found` for `{id}` itself);
            // the router's, for a path it does not serve, is `not_found`.
            if r.status() == 404 {
                let problem: serde_json::Value = r.json().await.unwrap();
                assert_ne!(problem["code"], "not_found", "{method} {path} is documented but not served");
            }
        }
    }
}

/// The document says what this server's configuration says: its limits, its enabled
/// algorithms with every alias, and the bearer scheme on every operation behind auth.
#[tokio::test]
async fn openapi_follows_the_configuration() {
    let mut settings = test_settings();
    settings.limits.max_bits = 5000;
    settings.limits.max_count = 7;
    settings.auth.enabled = true;
    settings.auth.api_key_sha256 = vec![data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(b"k"))];
    let enabled = [drbgd::drbg::Algorithm::Aes256Ctr, drbgd::drbg::Algorithm::Blake3];
    settings.drbg.enabled = enabled.to_vec();
    settings.drbg.default_alg = drbgd::drbg::Algorithm::Blake3;
    let app = spawn_with(settings, Arc::new(drbgd::drbg::entropy::OsEntropy)).await;
    let doc: serde_json::Value = app.get("/openapi.json").await.json().await.unwrap();
    let param = |path: &str, name: &str| {
        doc["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(param("/bits", "n")["schema"]["maximum"].as_f64(), Some(5000.0));
    assert_eq!(param("/bytes", "n")["schema"]["maximum"].as_f64(), Some(625.0));
    assert_eq!(param("/uuid", "count")["schema"]["maximum"].as_f64(), Some(7.0));
    let algs: Vec<String> = param("/token", "alg")["schema"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().into())
        .collect();
    for alg in enabled {
        assert!(algs.contains(&alg.name().to_string()));
        for alias in alg.info().aliases {
            assert!(algs.contains(&alias.to_string()), "alias {alias} missing");
            // ...and the server accepts what the document offers.
            let r = app
                .client
                .get(app.url(&format!("/token?alg={alias}")))
                .bearer_auth("k")
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "alias {alias}");
        }
    }
    assert!(!algs.contains(&"chacha20".to_string()), "disabled algorithms are not offered");
    assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let secured =
                op["security"].as_array().is_some_and(|s| s.iter().any(|r| r.get("bearer").is_some()));
            // The contract and the receipts' keys and check hold no secret: public.
            let public = ["/openapi.json", "/keys", "/verify"].contains(&path.as_str());
            assert_eq!(secured, !public, "{method} {path}");
            if secured {
                assert!(op["responses"]["401"].is_object(), "{method} {path} documents its 401");
            }
        }
    }
    // Problem+json is the schema of every error.
    assert!(doc["components"]["schemas"]["Problem"]["properties"]["code"].is_object());
}

/// `GET /version` names the server and its version, never cached; like `/algorithms`, it is
/// metadata: any authenticated caller (no route permission needed); without a key, 401 with auth on.
#[tokio::test]
async fn version_names_the_server_and_its_version() {
    let app = spawn_app().await;
    let r = app.get("/version").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-store");
    assert_eq!(r.headers()["content-type"], "application/json");
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body, serde_json::json!({ "name": "drbgd", "version": env!("CARGO_PKG_VERSION") }));

    let mut settings = test_settings();
    settings.auth.enabled = true;
    settings.auth.api_key_sha256 = vec![data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(b"k"))];
    let app = spawn_with(settings, Arc::new(drbgd::drbg::entropy::OsEntropy)).await;
    assert_problem(app.get("/version").await, 401, "unauthorized").await;
    let r = app.client.get(app.url("/version")).bearer_auth("k").send().await.unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn tls_serves_the_api_with_the_configured_certificate() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls::{ClientConfig, RootCertStore, crypto::aws_lc_rs};

    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let dir = std::env::temp_dir().join(format!("drbgd-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).unwrap();
    let mut settings = test_settings();
    settings.tls.enabled = true;
    settings.tls.cert_file = cert_path.display().to_string();
    settings.tls.key_file = key_path.display().to_string();
    let app = spawn_with(settings, Arc::new(drbgd::drbg::entropy::OsEntropy)).await;
    let addr = app.api.trim_start_matches("http://").to_string();

    let mut roots = RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let config = ClientConfig::builder_with_provider(Arc::new(aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp).await.expect("TLS handshake with the configured certificate");
    tls.write_all(b"GET /bits?n=64 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").await.unwrap();
    let mut response = String::new();
    tls.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.to_ascii_lowercase().contains("cache-control: no-store"));
    assert!(response.trim_end().ends_with(|c: char| c.is_ascii_hexdigit()));
    // Plain HTTP on the TLS port gets no HTTP answer.
    assert!(reqwest::get(app.url("/bits?n=8")).await.is_err());
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn tls_with_missing_files_refuses_to_start() {
    let mut settings = test_settings();
    settings.tls.enabled = true;
    settings.tls.cert_file = "/nonexistent/cert.pem".into();
    settings.tls.key_file = "/nonexistent/key.pem".into();
    let err = drbgd::app::App::build(settings).await.err().expect("must refuse");
    assert!(format!("{err:#}").contains("tls.cert_file"), "{err:#}");
}
