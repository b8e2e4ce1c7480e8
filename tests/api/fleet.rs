//! Quotas across replicas with a real Redis (`redis-server`, started here on a free port; each
//! test is skipped with a printed reason when it is not installed): one global bucket for
//! two in-process replicas, each failure mode, recovery, garbage at a key, leases given back
//! at shutdown, deployments kept apart by their prefix, and the configuration errors.
//!
//! The tests run on the multi-threaded runtime, as the server does: on the test's one thread,
//! the exchanges a request starts in the background would wait behind the test's own loop of
//! requests, which no server sees.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use drbgd::config::Settings;

use crate::helpers::{TestApp, assert_problem, eventually, spawn_with};

const WEB: &str = "web-example-key";
const BATCH: &str = "batch-example-key";

/// A `redis-server` of this test's own, killed when dropped.
struct Redis {
    child: Option<Child>,
    port: u16,
    auth: Option<String>,
}

impl Redis {
    fn start() -> Option<Redis> {
        let port = TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
        let mut redis = Redis { child: None, port, auth: None };
        if !redis.restart() {
            // CI sets DRBGD_REQUIRE_REDIS: there a missing server is a failure, not a skip.
            assert!(std::env::var_os("DRBGD_REQUIRE_REDIS").is_none(), "redis-server is required");
            eprintln!("SKIPPED: redis-server is not installed (apt-get install redis-server)");
            return None;
        }
        Some(redis)
    }

    /// (Re)starts the server on its port; false when there is no redis-server.
    fn restart(&mut self) -> bool {
        self.restart_with(&[])
    }

    fn restart_with(&mut self, extra: &[&str]) -> bool {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(child) = child else { return false };
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if self.cmd(&["PING"]).is_some_and(|r| r.contains("PONG")) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server did not answer on {}", self.port);
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A command through a plain TCP connection (RESP inline), its reply's text.
    fn cmd(&self, args: &[&str]) -> Option<String> {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        let mut req = self
            .auth
            .as_ref()
            .map_or(String::new(), |pw| format!("*2\r\n$4\r\nAUTH\r\n${}\r\n{pw}\r\n", pw.len()));
        req.push_str(&format!("*{}\r\n", args.len()));
        for a in args {
            req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(req.as_bytes()).ok()?;
        let mut buf = vec![0u8; 65536];
        let mut n = s.read(&mut buf).ok()?;
        if self.auth.is_some() {
            // +OK for AUTH, then the reply (in one read or two).
            while !String::from_utf8_lossy(&buf[..n]).trim_start_matches("+OK\r\n").contains("\r\n") {
                n += s.read(&mut buf[n..]).ok()?;
            }
            return Some(String::from_utf8_lossy(&buf[..n]).trim_start_matches("+OK\r\n").to_string());
        }
        Some(String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}

fn settings(url: &str, prefix: &str, on_failure: &str, rate: u32, burst: u32) -> Settings {
    let overrides = serde_json::json!({
        "server": { "listen": "127.0.0.1:0", "admin_listen": "127.0.0.1:0" },
        "drbg": { "shards": 2 },
        "quota": { "store": "redis", "url": url, "prefix": prefix, "on_store_failure": on_failure },
        "callers": { "web": { "quota": { "requests_per_second": rate, "burst": burst } } },
    });
    Settings::load(Some("config/examples/callers.toml".as_ref()), overrides).expect("settings load")
}

async fn replica(settings: Settings) -> TestApp {
    spawn_with(settings, Arc::new(drbgd::drbg::entropy::OsEntropy)).await
}

async fn status(app: &TestApp, key: &str, path: &str) -> u16 {
    app.client.get(app.url(path)).bearer_auth(key).send().await.unwrap().status().as_u16()
}

/// Spends `key`'s bucket on `app` through `/token`: requests until `want` are served (a
/// refusal waits 10 ms, as the lease is refilled by the replica's store task, which a loaded
/// machine may run late), then until 0.2 s pass with none served; 3 s at most. Returns how
/// many were served and the seconds that took (what the bucket may have refilled meanwhile).
async fn spend(app: &TestApp, key: &str, want: u32) -> (u32, f64) {
    let start = Instant::now();
    let (mut served, mut last_served) = (0, Instant::now());
    while start.elapsed() < Duration::from_secs(3) {
        if status(app, key, "/token").await == 200 {
            served += 1;
            last_served = Instant::now();
        } else if served >= want && last_served.elapsed() >= Duration::from_millis(200) {
            break;
        } else {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    (served, start.elapsed().as_secs_f64())
}

/// Whole tokens a bucket refilling at 1/s may add in `secs`: at most one more than the whole
/// seconds (a fraction was already there), at least the whole seconds less one.
fn refill(secs: f64) -> (u32, u32) {
    ((secs.floor() as u32).saturating_sub(1), secs.ceil() as u32 + 1)
}

async fn usage(app: &TestApp) -> serde_json::Value {
    app.client.get(app.url("/usage")).bearer_auth(WEB).send().await.unwrap().json().await.unwrap()
}

async fn metric(app: &TestApp, line_start: &str) -> f64 {
    let text = app.client.get(format!("{}/metrics", app.admin)).send().await.unwrap().text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(line_start).map(|v| v.trim().parse::<f64>().unwrap()))
        .unwrap_or_else(|| panic!("no {line_start} in /metrics"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_share_one_bucket() {
    let Some(redis) = Redis::start() else { return };
    // 1 request/s, burst 20: what the two serve in a moment is the burst, not twice it.
    let (a, b) = tokio::join!(
        replica(settings(&redis.url(), "t1", "local", 1, 20)),
        replica(settings(&redis.url(), "t1", "local", 1, 20))
    );
    assert_eq!(usage(&a).await["quota"]["scope"], "global");
    // Each knows of the other (a heartbeat a second): each one's credit is its half.
    for app in [&a, &b] {
        let both = || async { metric(app, "drbgd_quota_store_replicas ").await == 2.0 };
        assert!(eventually(Duration::from_secs(3), both).await);
    }
    let mut grpc = drbgd::grpc::pb::randomness_service_client::RandomnessServiceClient::connect(b.url(""))
        .await
        .unwrap();
    let mut request = tonic::Request::new(drbgd::grpc::pb::GetUsageRequest {});
    request.metadata_mut().insert("authorization", format!("Bearer {WEB}").parse().unwrap());
    assert_eq!(grpc.get_usage(request).await.unwrap().into_inner().quota_scope, "global");
    // All to one replica until it refuses, then the other: one bucket of 20 for both (each
    // counting alone would serve 20 more on the second).
    let (first, secs) = spend(&a, WEB, 19).await;
    let mut second = 0;
    for _ in 0..20 {
        second += u32::from(status(&b, WEB, "/token").await == 200);
    }
    // The burst plus a token or two of refill at 1/s; the second serves no more than its share
    // of a bucket it takes as full until the store first answers it (10; the bound in
    // src/callers/quota/lease.rs), where counting alone it would serve 20.
    assert!(
        (19..=21 + refill(secs).1).contains(&first),
        "the first replica served {first} of a burst of 20 in {secs:.2} s"
    );
    assert!(second <= 10, "the second served {second} more: the bucket is not shared");
    // Another caller is not limited by web's bucket.
    for _ in 0..30 {
        assert_eq!(status(&b, BATCH, "/token").await, 200);
    }
    // Both replicas are counted in the store.
    assert!(
        eventually(Duration::from_secs(3), || async {
            metric(&a, "drbgd_quota_store_replicas ").await == 2.0
        })
        .await
    );
    // The key is the caller's hash-tagged bucket under the deployment's prefix; nothing else
    // about the caller is stored.
    let keys = redis.cmd(&["KEYS", "t1:*"]).unwrap();
    assert!(keys.contains("t1:{web}:requests") && keys.contains("t1:replicas"), "{keys}");
    assert!(!keys.contains("batch"), "{keys}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployments_with_different_prefixes_never_share_a_bucket() {
    let Some(redis) = Redis::start() else { return };
    let a = replica(settings(&redis.url(), "blue", "local", 1, 5)).await;
    let b = replica(settings(&redis.url(), "green", "local", 1, 5)).await;
    for (app, name) in [(&a, "blue"), (&b, "green")] {
        // Served beyond what the refill could have added: the whole burst of its own bucket
        // (one shared with the other deployment, already spent, would leave it the refill and
        // at most its credit before the store first answers it).
        let (n, secs) = spend(app, WEB, 5).await;
        let (least, most) = refill(secs);
        assert!(n >= 5 + least && n <= 5 + most, "{name}'s bucket is its own: {n} served in {secs:.2} s");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_failure_mode_when_the_store_goes_away_and_recovery() {
    let Some(mut redis) = Redis::start() else { return };
    // Two replicas of one deployment under `local`: each enforces half of a burst of 20.
    let local = replica(settings(&redis.url(), "f", "local", 1, 20)).await;
    let _local_peer = replica(settings(&redis.url(), "f", "local", 1, 20)).await;
    assert!(
        eventually(Duration::from_secs(3), || async {
            metric(&local, "drbgd_quota_store_replicas ").await == 2.0
        })
        .await
    );
    let open = replica(settings(&redis.url(), "f2", "open", 1, 1)).await;
    let closed = replica(settings(&redis.url(), "f3", "closed", 1000, 1000)).await;
    for app in [&local, &open, &closed] {
        assert_eq!(status(app, WEB, "/token").await, 200);
    }
    redis.kill();
    // Until a call fails a replica goes by what it last knew: a 200 or a 429 (closed: a 503
    // once it has seen the store go).
    for app in [&local, &open, &closed] {
        let s = status(app, WEB, "/token").await;
        assert!(s == 200 || s == 429 || (s == 503 && std::ptr::eq(app, &closed)), "{s}");
    }
    // Each replica sees the store down within a heartbeat.
    for app in [&local, &open, &closed] {
        let down = || async { metric(app, "drbgd_quota_store_up ").await == 0.0 };
        assert!(eventually(Duration::from_secs(2), down).await, "the store is seen down");
    }
    // Every request is answered (no hang, no 5xx but closed's 503) while the store is gone;
    // under `local` this replica's share of the burst: 20 / 2 replicas.
    let mut served = 0;
    for _ in 0..20 {
        let s = status(&local, WEB, "/token").await;
        assert!(s == 200 || s == 429, "local fallback answered {s}");
        served += u32::from(s == 200);
        assert_eq!(status(&open, WEB, "/token").await, 200, "open admits");
    }
    // (9: the request above already met the fallback, when a heartbeat saw the store go first.)
    assert!((9..=12).contains(&served), "half the burst on this replica: {served}");
    let mut refused = 0;
    for _ in 0..5 {
        let r = closed.client.get(closed.url("/token")).bearer_auth(WEB).send().await.unwrap();
        if r.status() == 503 {
            assert_problem(r, 503, "quota_store_unavailable").await;
            refused += 1;
        }
    }
    assert_eq!(refused, 5, "closed refuses quota'd requests once the store is seen down");
    // A caller without a quota is not affected, even under `closed`.
    assert_eq!(status(&closed, BATCH, "/token").await, 200);
    // Readiness does not depend on the store.
    let ready = closed.client.get(format!("{}/readyz", closed.admin)).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    assert_eq!(usage(&local).await["quota"]["scope"], "replica_share");
    assert_eq!(metric(&local, "drbgd_quota_store_up ").await, 0.0);

    // The store comes back: global again within 2 s, without a restart.
    redis.restart();
    let back = Instant::now();
    for app in [&local, &open, &closed] {
        assert!(
            eventually(Duration::from_secs(2), || async { usage(app).await["quota"]["scope"] == "global" })
                .await,
            "global again within 2 s"
        );
    }
    assert!(back.elapsed() < Duration::from_secs(2));
    assert_eq!(status(&closed, WEB, "/token").await, 200);
    // Global again means the store's bucket decides: a fresh one (the restarted store lost its
    // keys) of 20, shared by the pair, whatever this replica spent while falling back. (The
    // replica took the level as empty when its exchange failed: it is refused until its first
    // exchange since answers.)
    let first = || async { status(&local, WEB, "/token").await == 200 };
    assert!(eventually(Duration::from_secs(2), first).await);
    // web refills at 1/s: the burst, plus a token a second while it is spent.
    let (more, secs) = spend(&local, WEB, 17).await;
    let served = 1 + more;
    assert!(
        (18..=23 + refill(secs).1).contains(&served),
        "the global burst of 20 again: {served} in {secs:.2} s"
    );
    assert!(redis.cmd(&["EXISTS", "f:{web}:requests"]).unwrap().contains(":1"));
    assert!(metric(&local, "drbgd_quota_store_fallback_seconds_total ").await > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_at_a_key_sets_that_caller_aside_not_the_store() {
    let Some(redis) = Redis::start() else { return };
    let mut with = settings(&redis.url(), "g", "local", 1, 20);
    with.callers.get_mut("batch").unwrap().quota.requests_per_second = 1;
    with.callers.get_mut("batch").unwrap().quota.burst = 5;
    let app = replica(with).await;
    // A key of another type at web's bucket.
    redis.cmd(&["SET", "g:{web}:requests", "not a bucket"]).unwrap();
    for _ in 0..3 {
        let s = status(&app, WEB, "/token").await;
        assert!(s == 200 || s == 429, "{s}");
    }
    let errors = "drbgd_quota_store_errors_total{op=\"exchange\",reason=\"reply\"} ";
    assert!(eventually(Duration::from_secs(2), || async { metric(&app, errors).await >= 1.0 }).await);
    // web meets the fallback (this replica's share: the whole burst, it is alone) ...
    assert_eq!(usage(&app).await["quota"]["scope"], "replica_share");
    // ... while the store stays up and batch's bucket stays global: 5 of 10.
    assert_eq!(metric(&app, "drbgd_quota_store_up ").await, 1.0);
    // batch refills at 1/s: the burst, plus a token a second while it is spent.
    let (served, secs) = spend(&app, BATCH, 5).await;
    assert!((5..=5 + refill(secs).1).contains(&served), "batch's global burst of 5: {served} in {secs:.2} s");
    assert!(redis.cmd(&["EXISTS", "g:{batch}:requests"]).unwrap().contains(":1"));
    // A hash that is not a bucket is garbage too; once the key is sound again, web is global.
    redis.cmd(&["DEL", "g:{web}:requests"]).unwrap();
    redis.cmd(&["HSET", "g:{web}:requests", "tokens", "lots", "at", "yesterday"]).unwrap();
    // The bucket set aside is read again by the first request after BROKEN: that request finds
    // the hash, garbage too (requests before it are served from this replica's share).
    let set_aside_for = drbgd::callers::quota::lease::BROKEN + Duration::from_secs(2);
    let read_again = || async {
        status(&app, WEB, "/token").await;
        metric(&app, errors).await >= 2.0
    };
    assert!(eventually(set_aside_for, read_again).await, "web set aside for longer than BROKEN");
    // Once the key is sound again, web is global after the next BROKEN.
    redis.cmd(&["DEL", "g:{web}:requests"]).unwrap();
    let global_again = || async {
        status(&app, WEB, "/token").await;
        usage(&app).await["quota"]["scope"] == "global"
    };
    assert!(eventually(set_aside_for, global_again).await, "web set aside for longer than BROKEN");
}

/// A bucket whose time is ahead of the store's clock (as after the store's clock is stepped
/// back, or a failover to a store whose clock lags) refills from now on, not after the step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_ahead_of_the_store_clock_refills_from_now() {
    let Some(redis) = Redis::start() else { return };
    let app = replica(settings(&redis.url(), "c", "local", 20, 5)).await;
    let time = redis.cmd(&["TIME"]).unwrap();
    let secs: u64 = time.lines().nth(2).unwrap().parse().unwrap();
    let hour_ahead = format!("{}", (secs + 3600) * 1_000_000);
    redis.cmd(&["HSET", "c:{web}:requests", "tokens", "0", "at", &hour_ahead]).unwrap();
    // Empty now; at 20/s a token is back within 50 ms of the first exchange.
    status(&app, WEB, "/token").await;
    let refilled =
        eventually(Duration::from_secs(2), || async { status(&app, WEB, "/token").await == 200 }).await;
    assert!(refilled, "the bucket refills from the store's now");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_go_back_to_the_store_at_shutdown() {
    let Some(redis) = Redis::start() else { return };
    // A large burst and a rate of 1/s: the bucket refills by about a token over the test, so
    // the level rising by more than that is the lease coming back.
    let mut app = replica(settings(&redis.url(), "s", "local", 1, 10_000)).await;
    for _ in 0..200 {
        assert_eq!(status(&app, WEB, "/token").await, 200);
    }
    let level = |redis: &Redis| {
        let reply = redis.cmd(&["HGET", "s:{web}:requests", "tokens"]).unwrap();
        reply.lines().nth(1).unwrap().parse::<f64>().unwrap()
    };
    let before = level(&redis);
    app.stop();
    app.handle.take().unwrap().await.unwrap().unwrap();
    let after = level(&redis);
    assert!(after > before + 10.0, "the unspent lease went back: {before} -> {after}");
    assert!(after <= 10_000.0 - 200.0 + 5.0, "what was spent stays spent: {after}");
    // Its replica left the set.
    assert_eq!(redis.cmd(&["ZCARD", "s:replicas"]).unwrap().trim(), ":0");
}

/// A store unreachable at start-up is a fallback, not a failure to start. Under `local` the
/// replica has seen no other replica: it divides by `quota.replicas`, or with none said
/// refuses quota'd requests as `closed` does (dividing by itself alone, each replica started
/// during an outage would serve the caller's whole rate).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_store_at_start_up_is_a_fallback_not_a_failure() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("redis://127.0.0.1:{port}");
    let mut of_two = settings(&url, "u", "local", 5, 5);
    of_two.quota.replicas = 2;
    let app = replica(of_two).await;
    let mut served = 0;
    for _ in 0..10 {
        let s = status(&app, WEB, "/token").await;
        assert!(s == 200 || s == 429, "{s}");
        served += u32::from(s == 200);
    }
    // Half the rate and burst: 2.5, and 2.5 a second while the requests last.
    assert!((2..=4).contains(&served), "this replica's share of a fleet of two: {served}");
    assert_eq!(usage(&app).await["quota"]["scope"], "replica_share");

    let unknown = replica(settings(&url, "u", "local", 5, 5)).await;
    for _ in 0..3 {
        let r = unknown.client.get(unknown.url("/token")).bearer_auth(WEB).send().await.unwrap();
        assert_problem(r, 503, "quota_store_unavailable").await;
    }
    assert_eq!(usage(&unknown).await["quota"]["scope"], "unavailable");
    // A caller without a quota is served.
    assert_eq!(status(&unknown, BATCH, "/token").await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_password_comes_from_its_file() {
    let Some(mut redis) = Redis::start() else { return };
    redis.kill();
    redis.auth = Some("s3cret-pass".into());
    redis.restart_with(&["--requirepass", "s3cret-pass"]);
    let dir = std::env::temp_dir().join(format!("drbgd-redis-pw-{}", redis.port));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("password");
    std::fs::write(&file, "s3cret-pass\n").unwrap();
    let mut with = settings(&redis.url(), "p", "closed", 1000, 1000);
    with.quota.password_file = Some(file.clone());
    // A store on loopback: the password may go in clear (refused at start-up without this).
    with.quota.allow_plaintext_password = true;
    let app = replica(with).await;
    assert_eq!(status(&app, WEB, "/token").await, 200);
    assert_eq!(usage(&app).await["quota"]["scope"], "global");
    // Without it the store refuses this replica: the fallback, not a crash.
    let without = replica(settings(&redis.url(), "p", "closed", 1000, 1000)).await;
    let r = without.client.get(without.url("/token")).bearer_auth(WEB).send().await.unwrap();
    assert_problem(r, 503, "quota_store_unavailable").await;
    // The first request may be served on credit while its lease is taken from the store.
    let leased = || async { redis.cmd(&["KEYS", "p:*"]).unwrap().contains("p:{web}:requests") };
    assert!(eventually(Duration::from_secs(3), leased).await, "{:?}", redis.cmd(&["KEYS", "p:*"]));
    std::fs::remove_dir_all(dir).unwrap();
}

/// `rediss://` to a redis-server with a certificate from a private CA (`quota.ca_file`);
/// without the CA the store is never trusted (the fallback, never an unverified connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_over_tls_with_a_private_ca() {
    if Redis::start().is_none() {
        return;
    }
    let ca = crate::callers_mtls::Ca::new("store");
    let (_, _, cert, key) = ca.leaf(&["localhost"], &[], "redis");
    let dir = std::env::temp_dir().join(format!("drbgd-redis-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in [("ca.pem", &ca.pem), ("cert.pem", &cert), ("key.pem", &key)] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let mut child = Command::new("redis-server")
        .args(["--port", "0", "--tls-port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
        .args(["--tls-cert-file", &path("cert.pem"), "--tls-key-file", &path("key.pem")])
        .args(["--tls-ca-cert-file", &path("ca.pem"), "--tls-auth-clients", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let url = format!("rediss://localhost:{port}");
    let mut trusted = settings(&url, "tls", "closed", 1000, 1000);
    trusted.quota.ca_file = Some(dir.join("ca.pem"));
    let app = replica(trusted).await;
    assert_eq!(usage(&app).await["quota"]["scope"], "global");
    assert_eq!(status(&app, WEB, "/token").await, 200);
    let untrusted = replica(settings(&url, "tls", "closed", 1000, 1000)).await;
    assert_eq!(usage(&untrusted).await["quota"]["scope"], "unavailable");
    assert_eq!(status(&untrusted, WEB, "/token").await, 503);
    let _ = child.kill();
    let _ = child.wait();
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn configuration_errors_name_the_key() {
    let load = |quota: serde_json::Value| {
        let overrides = serde_json::json!({ "quota": quota });
        Settings::load(None, overrides).map(drop).unwrap_err().to_string()
    };
    let e = load(serde_json::json!({ "store": "redis", "url": "http://example.org" }));
    assert!(e.contains("quota.url"), "{e}");
    let e = load(serde_json::json!({ "store": "redis", "url": "redis://:hunter2@127.0.0.1:6379" }));
    assert!(e.contains("quota.url") && e.contains("password") && !e.contains("hunter2"), "{e}");
    let e = load(
        serde_json::json!({ "store": "redis", "url": "redis://127.0.0.1", "password_file": "/nonexistent/pw" }),
    );
    assert!(e.contains("quota.password_file"), "{e}");
    let e = load(serde_json::json!({ "store": "redis", "url": "redis://127.0.0.1", "prefix": "a{b}" }));
    assert!(e.contains("quota.prefix"), "{e}");
    let e = load(serde_json::json!({ "store": "redis", "url": "redis://127.0.0.1", "timeout_ms": 0 }));
    assert!(e.contains("quota.timeout_ms"), "{e}");
    let e = load(serde_json::json!({ "store": "redis", "url": "rediss://127.0.0.1/#insecure" }));
    assert!(e.contains("quota.url") && e.contains("insecure"), "{e}");
    let e =
        load(serde_json::json!({ "store": "redis", "url": "redis://127.0.0.1", "ca_file": "/etc/hostname" }));
    assert!(e.contains("quota.ca_file"), "{e}");
    // A password in the URL is refused even with the local store (it would be printed).
    let e = load(serde_json::json!({ "store": "local", "url": "redis://:hunter2@127.0.0.1" }));
    assert!(e.contains("quota.url") && !e.contains("hunter2"), "{e}");
    let e = load(serde_json::json!({ "store": "redis", "url": "redis://127.0.0.1", "replicas": 10_001 }));
    assert!(e.contains("quota.replicas"), "{e}");

    // A password over plain redis:// (it would cross the network in clear) only with the
    // opt-in; over rediss:// without.
    let dir = std::env::temp_dir().join(format!("drbgd-redis-plain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("password");
    std::fs::write(&file, "hunter2\n").unwrap();
    let file = file.to_string_lossy().into_owned();
    let e = load(serde_json::json!({ "store": "redis", "url": "redis://127.0.0.1", "password_file": file }));
    assert!(e.contains("quota.allow_plaintext_password") && e.contains("rediss://"), "{e}");
    assert!(!e.contains("hunter2"), "{e}");
    let loads =
        |quota: serde_json::Value| Settings::load(None, serde_json::json!({ "quota": quota })).map(drop);
    let plain = serde_json::json!({
        "store": "redis", "url": "redis://127.0.0.1", "password_file": file, "allow_plaintext_password": true,
    });
    loads(plain).unwrap();
    loads(serde_json::json!({ "store": "redis", "url": "rediss://127.0.0.1", "password_file": file }))
        .unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}
