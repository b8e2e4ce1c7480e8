//! Spawns the real application on 127.0.0.1:0 (API and admin) for each test.

use std::sync::Arc;

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
