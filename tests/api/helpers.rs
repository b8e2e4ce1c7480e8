//! Spawns the real application on 127.0.0.1:0 (API and admin) for each test.

use std::sync::Arc;
use std::time::{Duration, Instant};

use drbgd::app::App;
use drbgd::config::Settings;
use drbgd::drbg::entropy::{EntropySource, OsEntropy};
use drbgd::state::AppState;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub struct TestApp {
    pub api: String,
    pub admin: String,
    pub client: reqwest::Client,
    pub state: AppState,
    stop: Option<oneshot::Sender<()>>,
    pub handle: Option<JoinHandle<anyhow::Result<()>>>,
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.api)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.expect("request")
    }

    /// Starts the shutdown sequence (as SIGTERM would).
    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub fn test_settings() -> Settings {
    let mut s = Settings::defaults();
    s.server.listen = "127.0.0.1:0".parse().unwrap();
    s.server.admin_listen = "127.0.0.1:0".parse().unwrap();
    s.drbg.shards = 2;
    s
}

pub async fn spawn_app() -> TestApp {
    spawn_with(test_settings(), Arc::new(OsEntropy)).await
}

pub async fn spawn_with(settings: Settings, entropy: Arc<dyn EntropySource>) -> TestApp {
    run(App::build_with_entropy(settings, entropy).await.expect("app builds"))
}

/// Runs a built app until the test stops it.
pub fn run(app: App) -> TestApp {
    let api = format!("http://{}", app.api_addr());
    let admin = format!("http://{}", app.admin_addr());
    let state = app.state().clone();
    let (tx, rx) = oneshot::channel::<()>();
    let handle = tokio::spawn(app.run_until_stopped(async {
        let _ = rx.await;
    }));
    TestApp { api, admin, client: reqwest::Client::new(), state, stop: Some(tx), handle: Some(handle) }
}

/// Requests of REST route `route` (answered `status`, if given) in
/// `drbgd_http_request_duration_seconds`, summed over its other labels.
pub fn http_requests(metrics: &str, route: &str, status: Option<&str>) -> u64 {
    let (route, status) = (format!("route=\"{route}\""), status.map(|s| format!("status=\"{s}\"")));
    metrics
        .lines()
        .filter(|l| l.starts_with("drbgd_http_request_duration_seconds_count{") && l.contains(&route))
        .filter(|l| status.as_ref().is_none_or(|s| l.contains(s.as_str())))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// Polls `check` every 20 ms until it holds, for at most `within` of real time (what it waits
/// for is done by another task, thread or process); whether it came to hold. `check` runs at
/// least once, and once more at the deadline.
pub async fn eventually<F: std::future::Future<Output = bool>>(
    within: Duration,
    mut check: impl FnMut() -> F,
) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Checks an RFC 9457 body and its code.
pub async fn assert_problem(response: reqwest::Response, status: u16, code: &str) -> serde_json::Value {
    assert_eq!(response.status().as_u16(), status, "status for {code}");
    assert_eq!(response.headers()["content-type"], "application/problem+json");
    assert_eq!(response.headers()["cache-control"], "no-store");
    let body: serde_json::Value = response.json().await.expect("problem json");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["status"], status);
    assert!(body["detail"].as_str().is_some_and(|d| !d.is_empty()));
    body
}

/// The real binary, `drbgd serve` with `args` and both listeners on ports of its choosing,
/// stderr piped and `RUST_LOG` unset: started, its addresses read from its "serving" line.
pub struct Binary {
    pub child: tokio::process::Child,
    /// The rest of its stderr, after the serving line.
    pub lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStderr>>,
    /// The lines up to and including the serving line.
    pub log: Vec<String>,
    pub api: String,
    pub admin: String,
}

pub async fn spawn_binary(args: &[&str]) -> Binary {
    spawn_binary_with_env(args, &[]).await
}

/// [`spawn_binary`] with these environment variables set (and the `OTEL_*` ones of the test's
/// own environment removed).
pub async fn spawn_binary_with_env(args: &[&str], env: &[(&str, &str)]) -> Binary {
    use tokio::io::AsyncBufReadExt;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_drbgd"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("OTEL_")) {
        command.env_remove(key);
    }
    let mut child = command
        .args(["serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"])
        .args(args)
        .envs(env.iter().copied())
        .env_remove("RUST_LOG")
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log = Vec::new();
    loop {
        let line = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
            .await
            .expect("a serving line within 30 s")
            .unwrap()
            .unwrap_or_else(|| panic!("drbgd exited before serving: {log:?}"));
        log.push(line.clone());
        if let Some(rest) = line.split("api=").nth(1) {
            let mut words = rest.split_whitespace();
            let api = words.next().unwrap().to_string();
            let admin = words.next().unwrap().trim_start_matches("admin=").to_string();
            return Binary { child, lines, log, api, admin };
        }
    }
}
