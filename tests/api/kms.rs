//! The AWS KMS `GenerateRandom` drop-in: its SigV4 verification cross-checked against
//! botocore's signer (requests boto3 signed, captured by `scripts/kms-sigv4-fixture.py`) and
//! the AWS Rust SDK's (`aws-sigv4`, signing live requests here), KMS's shapes and errors, and
//! the caller's policy, quota and records.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use drbgd::callers::sigv4::{Audience, SignedRequest, SigningSecret};
use drbgd::drbg::entropy::OsEntropy;
use serde_json::Value;

use crate::helpers::{spawn_binary_with_env, spawn_with, test_settings};

const KEY_ID: &str = "AKIAEXAMPLEDRBGD0001";
const SECRET: &str = "drbgd-example-secret-key-0001";
const JSON: &str = "application/x-amz-json-1.1";
const TARGET: &str = "TrentService.GenerateRandom";

fn fixture() -> Value {
    serde_json::from_str(include_str!("../data/kms_botocore_signed.json")).unwrap()
}

fn amz_time(s: &str) -> SystemTime {
    let at = time::PrimitiveDateTime::parse(
        s,
        time::macros::format_description!("[year][month][day]T[hour][minute][second]Z"),
    )
    .unwrap()
    .assume_utc();
    SystemTime::UNIX_EPOCH + Duration::from_secs(at.unix_timestamp() as u64)
}

/// Verifies one captured request, with `edit` applied to its headers and body first.
fn verify(
    request: &Value,
    secret: &str,
    now: SystemTime,
    edit: impl FnOnce(&mut http::HeaderMap, &mut String),
) -> Result<(), String> {
    let mut headers = http::HeaderMap::new();
    for (name, value) in request["headers"].as_object().unwrap() {
        headers.append(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.as_str().unwrap().parse().unwrap(),
        );
    }
    let mut body = request["body"].as_str().unwrap().to_owned();
    edit(&mut headers, &mut body);
    let signed = SignedRequest {
        method: request["method"].as_str().unwrap(),
        path: request["path"].as_str().unwrap(),
        query: request["query"].as_str().unwrap(),
        authority: None,
        headers: &headers,
    };
    let secret = SigningSecret::new(zeroize::Zeroizing::new(secret.to_owned()));
    let auth = signed.authorization().map_err(|e| e.code().to_owned())?;
    let served =
        Audience { regions: vec!["us-east-1".to_owned(), "eu-west-3".to_owned()], hosts: Vec::new() };
    signed.verify(&auth, &served, &secret, body.as_bytes(), now).map_err(|e| e.code().to_owned())
}

#[test]
fn botocore_signatures_verify_and_nothing_else_does() {
    let fixture = fixture();
    let now = amz_time(fixture["now"].as_str().unwrap());
    let requests = fixture["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 3, "three regions and hosts");
    let invalid = Err("invalid_signature".to_owned());
    for request in requests {
        assert_eq!(verify(request, SECRET, now, |_, _| {}), Ok(()), "as boto3 sent it");
        // Within AWS's 15 minutes either way, and not beyond.
        assert_eq!(verify(request, SECRET, now + Duration::from_secs(899), |_, _| {}), Ok(()));
        assert_eq!(verify(request, SECRET, now - Duration::from_secs(899), |_, _| {}), Ok(()));
        let late = verify(request, SECRET, now + Duration::from_secs(901), |_, _| {});
        assert_eq!(late, Err("signature_expired".to_owned()));
        let early = verify(request, SECRET, now - Duration::from_secs(901), |_, _| {});
        assert_eq!(early, Err("signature_expired".to_owned()));
        // The secret, the body and every signed header are covered.
        assert_eq!(verify(request, "another-secret", now, |_, _| {}), invalid);
        assert_eq!(verify(request, SECRET, now, |_, b| *b = b.replace("}", " }")), invalid);
        for name in ["host", "x-amz-target", "content-type", "x-amz-date"] {
            let tampered = verify(request, SECRET, now, |h, _| {
                let value = format!("{}x", h[name].to_str().unwrap());
                h.insert(name, value.parse().unwrap());
            });
            assert!(tampered.is_err(), "{name} changed");
        }
        // A region this server does not serve.
        let elsewhere = verify(request, SECRET, now, |h, _| {
            let auth = h["authorization"]
                .to_str()
                .unwrap()
                .replace("/us-east-1/", "/ap-south-1/")
                .replace("/eu-west-3/", "/ap-south-1/");
            h.insert("authorization", auth.parse().unwrap());
        });
        assert_eq!(elsewhere, invalid);
        // A header it did not sign may change (proxies add and rewrite those).
        let unsigned = verify(request, SECRET, now, |h, _| {
            h.insert("user-agent", "curl/8".parse().unwrap());
            h.insert("x-forwarded-for", "10.0.0.1".parse().unwrap());
        });
        assert_eq!(unsigned, Ok(()));
        // A signature that leaves host out is refused, even if it would verify.
        let no_host = verify(request, SECRET, now, |h, _| {
            let auth = h["authorization"].to_str().unwrap().replace("content-type;host;", "content-type;");
            h.insert("authorization", auth.parse().unwrap());
        });
        assert_eq!(no_host, Err("incomplete_signature".to_owned()));
    }
}

/// Headers of a `GenerateRandom` call to `url` signed by the AWS Rust SDK's signer at `at`.
fn sign(
    url: &str,
    target: &str,
    body: &str,
    key_id: &str,
    secret: &str,
    at: SystemTime,
) -> Vec<(String, String)> {
    let credentials = aws_credential_types::Credentials::new(key_id, secret, None, None, "test");
    sign_with(url, target, body, credentials, at)
}

/// [`sign`] with `credentials`, a session token's included (the SDK then sends and signs
/// `X-Amz-Security-Token`, as botocore does).
fn sign_with(
    url: &str,
    target: &str,
    body: &str,
    credentials: aws_credential_types::Credentials,
    at: SystemTime,
) -> Vec<(String, String)> {
    use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
    let identity = credentials.into();
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region("us-east-1")
        .name("kms")
        .time(at)
        .settings(SigningSettings::default())
        .build()
        .unwrap()
        .into();
    let headers = [("content-type", JSON), ("x-amz-target", target)];
    let signable =
        SignableRequest::new("POST", url, headers.into_iter(), SignableBody::Bytes(body.as_bytes())).unwrap();
    let (instructions, _) = sign(signable, &params).unwrap().into_parts();
    let mut all: Vec<(String, String)> =
        headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    all.extend(instructions.headers().map(|(k, v)| (k.to_string(), v.to_string())));
    all
}

async fn call(api: &str, body: &str, key_id: &str, secret: &str) -> (u16, Value, http::HeaderMap) {
    call_at(api, body, key_id, secret, SystemTime::now()).await
}

async fn call_at(
    api: &str,
    body: &str,
    key_id: &str,
    secret: &str,
    at: SystemTime,
) -> (u16, Value, http::HeaderMap) {
    call_target(api, TARGET, body, key_id, secret, at).await
}

async fn call_target(
    api: &str,
    target: &str,
    body: &str,
    key_id: &str,
    secret: &str,
    at: SystemTime,
) -> (u16, Value, http::HeaderMap) {
    let url = format!("{api}/");
    send(&reqwest::Client::new(), api, &sign(&url, target, body, key_id, secret, at), body).await
}

/// Posts `body` with `headers` to `{api}/` (a header given twice is sent twice).
async fn send(
    client: &reqwest::Client,
    api: &str,
    headers: &[(String, String)],
    body: &str,
) -> (u16, Value, http::HeaderMap) {
    let mut request = client.post(format!("{api}/")).body(body.to_owned());
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    (status, response.json().await.unwrap(), headers)
}

fn kms_settings(dir: &std::path::Path) -> drbgd::config::Settings {
    kms_settings_with(dir, true)
}

/// The test's callers; `write`: the secret files written first.
fn kms_settings_with(dir: &std::path::Path, write: bool) -> drbgd::config::Settings {
    let mut settings = test_settings();
    settings.kms.enabled = true;
    settings.auth.enabled = true;
    let secret_file = dir.join("kms.secret");
    if write {
        std::fs::write(&secret_file, format!("{SECRET}\n")).unwrap();
    }
    let aws_access_keys = vec![drbgd::config::callers::AwsAccessKey { id: KEY_ID.into(), secret_file }];
    let mut app = drbgd::config::callers::CallerSettings { aws_access_keys, ..Default::default() };
    app.policy.routes = Some(vec![drbgd::callers::Route::Kms]);
    app.quota.requests_per_second = 1;
    app.quota.burst = 3;
    settings.callers.insert("kms-app".into(), app);
    let mut other = drbgd::config::callers::CallerSettings::default();
    let other_secret = dir.join("other.secret");
    if write {
        std::fs::write(&other_secret, "other-secret\n").unwrap();
    }
    other.aws_access_keys = vec![drbgd::config::callers::AwsAccessKey {
        id: "AKIAEXAMPLEDRBGD0002".into(),
        secret_file: other_secret,
    }];
    other.policy.routes = Some(vec![drbgd::callers::Route::Token]);
    settings.callers.insert("token-only".into(), other);
    settings
}

#[tokio::test]
async fn generate_random_answers_as_kms_and_refuses_as_kms() {
    let dir = std::env::temp_dir().join(format!("drbgd-kms-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let app = spawn_with(kms_settings(&dir), Arc::new(OsEntropy)).await;
    let (status, body, headers) = call(&app.api, r#"{"NumberOfBytes": 32}"#, KEY_ID, SECRET).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers["content-type"], JSON);
    assert_eq!(headers["cache-control"], "no-store");
    let plaintext = data_encoding::BASE64.decode(body["Plaintext"].as_str().unwrap().as_bytes()).unwrap();
    assert_eq!(plaintext.len(), 32);
    assert_eq!(body.as_object().unwrap().len(), 1, "{body}");

    let refused = |expected: &'static str| {
        move |(status, body, headers): (u16, Value, http::HeaderMap)| {
            assert_eq!((status, body["__type"].as_str().unwrap()), (400, expected), "{body}");
            assert_eq!(headers["content-type"], JSON);
            assert_eq!(headers["x-amzn-errortype"], expected);
            assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()));
        }
    };
    refused("ValidationException")(call(&app.api, r#"{"NumberOfBytes": 0}"#, KEY_ID, SECRET).await);
    refused("ValidationException")(call(&app.api, r#"{"NumberOfBytes": 1025}"#, KEY_ID, SECRET).await);
    refused("InvalidSignatureException")(call(&app.api, r#"{"NumberOfBytes": 8}"#, KEY_ID, "wrong").await);
    refused("UnrecognizedClientException")(
        call(&app.api, r#"{"NumberOfBytes": 8}"#, "AKIAEXAMPLEDRBGD0009", SECRET).await,
    );
    let stale = SystemTime::now() - Duration::from_secs(16 * 60);
    refused("InvalidSignatureException")(
        call_at(&app.api, r#"{"NumberOfBytes": 8}"#, KEY_ID, SECRET, stale).await,
    );
    // The other caller's policy leaves kms out.
    refused("AccessDeniedException")(
        call(&app.api, r#"{"NumberOfBytes": 8}"#, "AKIAEXAMPLEDRBGD0002", "other-secret").await,
    );
    // Not signed at all; another operation.
    let unsigned = app
        .client
        .post(format!("{}/", app.api))
        .header("content-type", JSON)
        .header("x-amz-target", TARGET)
        .body(r#"{"NumberOfBytes": 8}"#)
        .send()
        .await
        .unwrap();
    let (status, headers) = (unsigned.status().as_u16(), unsigned.headers().clone());
    refused("MissingAuthenticationTokenException")((status, unsigned.json().await.unwrap(), headers));
    let other_op =
        call_target(&app.api, "TrentService.Encrypt", "{}", KEY_ID, SECRET, SystemTime::now()).await;
    refused("UnknownOperationException")(other_op);

    // The caller's quota: a burst of 3 was spent above by its own signed calls (a request
    // another key or a bad signature made cost it nothing); now it is throttled.
    let mut codes = Vec::new();
    for _ in 0..4 {
        let (status, body, _) = call(&app.api, r#"{"NumberOfBytes": 8}"#, KEY_ID, SECRET).await;
        codes.push(if status == 200 { "ok".to_owned() } else { body["__type"].as_str().unwrap().to_owned() });
    }
    assert!(codes.contains(&"ThrottlingException".to_owned()), "{codes:?}");
    let kms_app =
        app.state.callers.registry().callers().iter().find(|c| c.name() == "kms-app").cloned().unwrap();
    assert_eq!(kms_app.requests(), 3 + 4, "only the requests its key signed: {codes:?}");

    // A rotated secret applies at the next reload; one that cannot be read revokes its key alone.
    std::fs::write(dir.join("kms.secret"), "rotated-secret\n").unwrap();
    let settings = kms_settings_with(&dir, false);
    app.state.callers.reload(&settings).unwrap();
    assert_eq!(app.state.callers.registry().secret_files().len(), 2, "both files watched");
    let (status, body, _) = call(&app.api, r#"{"NumberOfBytes": 8}"#, KEY_ID, "rotated-secret").await;
    assert!(status == 200 || body["__type"] == "ThrottlingException", "{body}");
    let (_, body, _) = call(&app.api, r#"{"NumberOfBytes": 8}"#, KEY_ID, SECRET).await;
    assert_eq!(body["__type"], "InvalidSignatureException");
    std::fs::remove_file(dir.join("kms.secret")).unwrap();
    app.state.callers.reload(&settings).unwrap();
    let (_, body, _) = call(&app.api, r#"{"NumberOfBytes": 8}"#, KEY_ID, "rotated-secret").await;
    assert_eq!(body["__type"], "UnrecognizedClientException", "revoked while its file is gone");
    let (_, body, _) =
        call(&app.api, r#"{"NumberOfBytes": 8}"#, "AKIAEXAMPLEDRBGD0002", "other-secret").await;
    assert_eq!(body["__type"], "AccessDeniedException", "the other key still names its caller");
    std::fs::remove_dir_all(&dir).ok();
}

/// The headers of a call signed by `key_id` for `https://{host}/` (so for `host`, as the SDK
/// and botocore sign an endpoint on the scheme's default port), with `host` as `Host`.
fn signed_for(host: &str, body: &str, key_id: &str, secret: &str) -> Vec<(String, String)> {
    let mut headers = sign(&format!("https://{host}/"), TARGET, body, key_id, secret, SystemTime::now());
    headers.push(("host".to_owned(), host.to_owned()));
    headers
}

/// A KMS-shaped refusal of `kind`, whose message contains `says`.
fn assert_refused((status, body, headers): (u16, Value, http::HeaderMap), kind: &str, says: &str) {
    assert_eq!((status, body["__type"].as_str()), (400, Some(kind)), "{body}");
    assert_eq!(headers["x-amzn-errortype"], kind);
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains(says), "{kind}: {message:?} does not say {says:?}");
}

#[tokio::test]
async fn other_hosts_repeated_headers_and_session_tokens_are_refused_as_kms() {
    let dir = std::env::temp_dir().join(format!("drbgd-kms-hosts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut settings = kms_settings(&dir);
    settings.kms.hosts = vec!["KMS.example".into()];
    let app = spawn_with(settings.clone(), Arc::new(OsEntropy)).await;
    let client = reqwest::Client::new();
    let body = r#"{"NumberOfBytes": 8}"#;

    // Signed for a listed host (compared without regard to case) and sent with it: served.
    let listed = signed_for("kms.example", body, KEY_ID, SECRET);
    let (status, answer, _) = send(&client, &app.api, &listed, body).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer["Plaintext"].is_string(), "{answer}");
    // Signed for, and sent with, another host; or the address the client dialled, unlisted.
    let elsewhere = signed_for("elsewhere.example", body, KEY_ID, SECRET);
    let refusal = send(&client, &app.api, &elsewhere, body).await;
    assert_refused(refusal, "InvalidSignatureException", "\"elsewhere.example\"");
    let dialled = app.api.trim_start_matches("http://").to_owned();
    let refusal = call(&app.api, body, KEY_ID, SECRET).await;
    assert_refused(refusal, "InvalidSignatureException", &dialled);

    // Two Authorization headers, the good one first: refused, not the first one read.
    let mut twice = signed_for("kms.example", body, KEY_ID, SECRET);
    twice.push(("authorization".to_owned(), "garbage".to_owned()));
    let refusal = send(&client, &app.api, &twice, body).await;
    assert_refused(refusal, "IncompleteSignatureException", "more than one Authorization header");

    // Temporary credentials (a session token, signed as boto3 signs it): drbgd issues none.
    let credentials = aws_credential_types::Credentials::new(
        KEY_ID,
        SECRET,
        Some("FwoGZXIvYXdzEXAMPLESESSIONTOKEN".to_owned()),
        None,
        "test",
    );
    let mut with_token = sign_with("https://kms.example/", TARGET, body, credentials, SystemTime::now());
    assert!(with_token.iter().any(|(name, _)| name == "x-amz-security-token"), "{with_token:?}");
    with_token.push(("host".to_owned(), "kms.example".to_owned()));
    let refusal = send(&client, &app.api, &with_token, body).await;
    let says = "security token included in the request is invalid";
    assert_refused(refusal, "UnrecognizedClientException", says);

    // HTTP/2 has no Host header: its :authority is the host. Unlisted, then listed.
    let h2 = reqwest::Client::builder().http2_prior_knowledge().build().unwrap();
    let url = format!("{}/", app.api);
    let by_authority = || sign(&url, TARGET, body, KEY_ID, SECRET, SystemTime::now());
    let refusal = send(&h2, &app.api, &by_authority(), body).await;
    assert_refused(refusal, "InvalidSignatureException", &dialled);
    settings.kms.hosts.push(dialled);
    app.state.callers.reload(&settings).unwrap();
    let (status, answer, _) = send(&h2, &app.api, &by_authority(), body).await;
    assert_eq!(status, 200, "{answer}");
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn the_binary_records_the_caller_and_logs_no_secret() {
    let store = std::env::temp_dir().join(format!("drbgd-kms-binary-{}.sqlite3", std::process::id()));
    let store = store.display().to_string();
    let mut binary = spawn_binary_with_env(
        &["--config", "config/examples/drop-in.toml"],
        &[("DRBGD__RESULTS__PATH", &store)],
    )
    .await;
    let api = format!("http://{}", binary.api);
    let (status, body, _) = call(&api, r#"{"NumberOfBytes": 32}"#, KEY_ID, SECRET).await;
    assert_eq!(status, 200, "{body}");
    let plaintext = body["Plaintext"].as_str().unwrap().to_owned();
    let (status, _, _) = call(&api, r#"{"NumberOfBytes": 32}"#, KEY_ID, "wrong").await;
    assert_eq!(status, 400);
    let metrics =
        reqwest::get(format!("http://{}/metrics", binary.admin)).await.unwrap().text().await.unwrap();
    assert!(metrics.contains(r#"drbgd_caller_requests_total{caller="kms-app"} 1"#), "{metrics}");
    assert_eq!(crate::helpers::http_requests(&metrics, "kms", Some("200")), 1, "{metrics}");
    // SIGTERM: drbgd flushes its log as it exits, and the read below ends with it.
    let pid = binary.child.id().unwrap() as libc::pid_t;
    // SAFETY: kill(2) on the child this test spawned and still owns.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let mut log = binary.log.join("\n");
    while let Ok(Some(line)) = binary.lines.next_line().await {
        log.push_str(&line);
        log.push('\n');
    }
    assert!(log.contains(r#""caller":"kms-app","route":"kms""#), "an audit line names the caller: {log}");
    assert!(log.contains(r#""caller":"unknown","route":"kms""#), "the bad signature is nobody's: {log}");
    for secret in [SECRET, plaintext.as_str(), "Signature="] {
        assert!(!log.contains(secret), "{secret} in the log");
    }
}

/// The attack of a client that knows an access key id (they are not secret) but not its
/// secret: 70 connections send a head that passes every check before the body, announce an
/// 8,000-byte body and send one byte of it, and are opened again as the body deadline closes
/// them. Before, those heads held the places every signed request shared, and correctly
/// signed calls were refused 503; now each holds only its own connection's place.
#[tokio::test]
async fn unverified_signed_heads_hold_no_place_a_verified_caller_needs() {
    let dir = std::env::temp_dir().join(format!("drbgd-kms-slow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut settings = kms_settings(&dir);
    let app_caller = settings.callers.get_mut("kms-app").unwrap();
    app_caller.quota.requests_per_second = 100;
    app_caller.quota.burst = 100;
    let app = spawn_with(settings, Arc::new(OsEntropy)).await;
    let addr = app.api.trim_start_matches("http://").to_owned();
    let now = time::OffsetDateTime::now_utc();
    let amz_date = format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second()
    );
    let head = format!(
        "POST / HTTP/1.1\r\nhost: {addr}\r\nx-amz-date: {amz_date}\r\nx-amz-target: {TARGET}\r\n\
         content-type: {JSON}\r\ncontent-length: 8000\r\nauthorization: AWS4-HMAC-SHA256 \
         Credential={KEY_ID}/{}/us-east-1/kms/aws4_request, SignedHeaders=host;x-amz-date, \
         Signature=00\r\n\r\n{{",
        &amz_date[..8]
    );
    let attack = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        loop {
            let mut held = Vec::new();
            for _ in 0..70 {
                if let Ok(mut tcp) = tokio::net::TcpStream::connect(&addr).await
                    && tcp.write_all(head.as_bytes()).await.is_ok()
                {
                    held.push(tcp);
                }
            }
            tokio::time::sleep(Duration::from_millis(1900)).await;
            drop(held);
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut statuses = Vec::new();
    for _ in 0..10 {
        let (status, body, _) = call(&app.api, r#"{"NumberOfBytes": 32}"#, KEY_ID, SECRET).await;
        statuses.push((status, body["__type"].as_str().unwrap_or("").to_owned()));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    attack.abort();
    assert!(statuses.iter().all(|(s, _)| *s == 200), "the signed caller under attack: {statuses:?}");
}
