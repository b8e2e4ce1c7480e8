//! What the fuzz targets share: one drbgd application per process (the shipped example's
//! callers, auth on), built once in a current-thread runtime whose clock is paused, so that
//! every deadline a target runs into passes at once instead of in real seconds.

use std::sync::{Arc, OnceLock};

use drbgd::config::Settings;
use drbgd::http::ApiService;
use drbgd::state::AppState;

/// The example's keys: the fuzzer finds the way past admission through them (they are in the
/// seed corpora).
pub const BATCH_KEY: &str = "batch-example-key";

/// The application under test.
pub struct Api {
    /// Its runtime (paused clock).
    pub rt: tokio::runtime::Runtime,
    /// The API port's service: the call pipeline over REST and gRPC.
    pub service: ApiService,
    /// Its state.
    pub state: AppState,
    /// The settings it runs with.
    pub settings: Settings,
}

/// The settings: the shipped example (two callers, auth on), audit off, small limits so that
/// no input makes a target generate megabytes.
pub fn settings() -> Settings {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../config/examples/callers.toml");
    let overrides = serde_json::json!({
        "server": { "listen": "127.0.0.1:0", "admin_listen": "127.0.0.1:0" },
        "drbg": { "shards": 1 },
        "limits": { "max_bits": 100_000 },
        "log": { "audit": false },
    });
    Settings::load(Some(example.as_ref()), overrides).expect("the example loads")
}

/// The one application of this process.
pub fn api() -> &'static Api {
    static API: OnceLock<Api> = OnceLock::new();
    API.get_or_init(|| {
        let rt =
            tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
        let settings = settings();
        let state = rt.block_on(async {
            let entropy = Arc::new(drbgd::drbg::entropy::OsEntropy);
            let app = drbgd::app::App::build_with_entropy(settings.clone(), entropy).await.expect("builds");
            app.state().clone()
        });
        let service = rt.block_on(async {
            let grpc = drbgd::grpc::router(state.clone());
            drbgd::http::service(&state, drbgd::http::router(state.clone(), grpc))
        });
        Api { rt, service, state, settings }
    })
}

/// Calls the API with `request` and reads at most `limit` bytes of the response's body;
/// checks what every response must carry, and that the request gave back every place it took
/// (the callers' in-flight counts are 0 once its response is dropped). The trailers, if any
/// were read, are added to the returned head's headers (a gRPC stream's status).
///
/// # Panics
/// On a 500 (a panic caught in the request path), a response without `no-store` or a request
/// id, or a place not given back: a bug the fuzzer found.
pub fn call(request: http::Request<http_body_util::Full<bytes::Bytes>>, limit: usize) -> http::Response<()> {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let api = api();
    api.rt.block_on(async {
        let response = api.service.clone().oneshot(request).await.unwrap_or_else(|e| match e {});
        assert_ne!(response.status(), 500, "a panic in the request path");
        assert_eq!(response.headers()["cache-control"], "no-store");
        assert!(response.headers().contains_key("x-request-id"));
        let (mut parts, mut body) = response.into_parts();
        let mut read = 0;
        while read < limit {
            match body.frame().await {
                Some(Ok(frame)) => match frame.into_trailers() {
                    Ok(trailers) => parts.headers.extend(trailers),
                    Err(frame) => read += frame.data_ref().map_or(0, |d| d.len()),
                },
                _ => break,
            }
        }
        drop(body);
        for caller in api.state.callers.registry().callers() {
            assert_eq!(caller.quota_state().in_flight(), 0, "{} holds a place", caller.name());
        }
        http::Response::from_parts(parts, ())
    })
}
