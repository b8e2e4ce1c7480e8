//! `GET /algorithms` and `GET /openapi.json`.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::drbg::Algorithm;
use crate::state::AppState;

/// The OpenAPI 3 document of the HTTP API (checked against the router by the API tests and
/// by schemathesis in CI).
pub const OPENAPI_JSON: &str = include_str!("openapi.json");

/// `GET /algorithms`: what each generator is, its standard, strength and current settings.
pub async fn algorithms(State(state): State<AppState>) -> Json<Value> {
    let list: Vec<Value> = Algorithm::ALL.into_iter().map(|alg| describe(&state, alg)).collect();
    Json(json!({ "default": state.default_alg.name(), "algorithms": list }))
}

fn describe(state: &AppState, alg: Algorithm) -> Value {
    let info = alg.info();
    let policy = state.settings.policy(alg);
    json!({
        "name": info.name,
        "aliases": info.aliases,
        "enabled": state.enabled.contains(&alg),
        "standard": info.standard,
        "construction": info.construction,
        "security_strength_bits": info.security_strength_bits,
        "backtracking_resistance": true,
        "prediction_resistance": "on request (pr=true reseeds from the OS before generating)",
        "rekey_after_bytes": policy.rekey_after_bytes,
        "rekey_after_seconds": policy.rekey_after_seconds,
        "rekey_jitter": policy.jitter,
        "shards": state.pool.shard_count(),
    })
}

/// `GET /openapi.json`.
pub async fn openapi() -> Response {
    let mut response = OPENAPI_JSON.into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
