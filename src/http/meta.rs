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
    const CTR: &str = "Update step after every Generate; at most 2^19 bits per internal Generate";
    let (standard, construction, aliases) = match alg {
        Algorithm::Aes256Ctr => (
            "NIST SP 800-90A Rev. 1 CTR_DRBG (10.2.1) with AES-256 and the derivation function",
            CTR,
            vec!["aes", "aes256", "ctr_drbg", "ctr-drbg"],
        ),
        Algorithm::Aes192Ctr => (
            "NIST SP 800-90A Rev. 1 CTR_DRBG (10.2.1) with AES-192 and the derivation function",
            CTR,
            vec!["aes192", "aes-192-ctr"],
        ),
        Algorithm::Aes128Ctr => (
            "NIST SP 800-90A Rev. 1 CTR_DRBG (10.2.1) with AES-128 and the derivation function",
            CTR,
            vec!["aes128", "aes-128-ctr"],
        ),
        Algorithm::ChaCha20 => (
            "ChaCha20 (RFC 8439 block function, 20 rounds); not a NIST DRBG",
            "fast key erasure: each 1 KiB keystream batch yields the next key",
            vec!["chacha"],
        ),
        Algorithm::Blake3 => (
            "keyed BLAKE3 XOF (BLAKE3 specification); not a NIST DRBG",
            "fast key erasure over a keyed hash of a 64-bit counter",
            vec!["blake3-xof", "blake3_xof"],
        ),
        Algorithm::Randen => (
            "Randen (Google, arXiv:1810.02227; Abseil's engine); not a NIST DRBG",
            "sponge over a 16-branch Feistel permutation of 2-round AES functions; handed-out bytes wiped",
            vec![],
        ),
    };
    let policy = state.settings.policy(alg);
    json!({
        "name": alg.name(),
        "aliases": aliases,
        "enabled": state.enabled.contains(&alg),
        "standard": standard,
        "construction": construction,
        "security_strength_bits": alg.security_strength_bits(),
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
