//! `GET /algorithms`, `GET /usage`, `GET /version` and `GET /openapi.json`: the metadata
//! answered from the state or the caller's admission alone.

use axum::Json;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::callers::Admission;
use crate::drbg::Algorithm;
use crate::state::AppState;

/// `GET /algorithms`: what each generator is, its standard (and whether SP 800-90A approves
/// it), strength and current settings, whether its start-up self-tests passed and it is served,
/// and whether only approved ones are served.
pub fn algorithms(state: &AppState) -> Response {
    let list: Vec<Value> = Algorithm::ALL.into_iter().map(|alg| describe(state, alg)).collect();
    let rules = state.service.rules();
    Json(json!({
        "default": rules.default_alg.name(),
        "approved_only": rules.approved_only,
        "algorithms": list,
    }))
    .into_response()
}

fn describe(state: &AppState, alg: Algorithm) -> Value {
    let info = alg.info();
    let policy = state.settings.policy(alg);
    let rules = state.service.rules();
    let tested = !state.readiness.self_test_failures.iter().any(|f| f.alg == alg);
    json!({
        "name": info.name,
        "aliases": info.aliases,
        "enabled": rules.enabled.contains(&alg),
        "served": tested && rules.algorithm(Some(alg.name())).is_ok(),
        "self_test": if tested { "passed" } else { "failed" },
        "standard": info.standard,
        "approved": info.approved,
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

/// `GET /usage`: the calling caller's policy, what is left of its quota and its counters (on
/// this instance).
pub fn usage(admission: &Admission) -> Response {
    Json(admission.caller.usage()).into_response()
}

/// `GET /version`: the server's name and version, `{"name": "drbgd", "version": "x.y.z"}`.
pub fn version(_state: &AppState) -> Response {
    Json(json!({ "name": "drbgd", "version": env!("CARGO_PKG_VERSION") })).into_response()
}

/// `GET /openapi.json`: the document rendered at start-up (`http/openapi.rs`).
pub fn openapi(state: &AppState) -> Response {
    let mut response = state.openapi.clone().into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The OpenAPI operations of the metadata and the contract: each row's `doc` column (`http.rs`), built from the
/// pieces of `http/openapi/describe.rs`.
pub(crate) mod doc {
    use crate::pipeline::Describe;
    use utoipa::openapi::path::{HttpMethod, OperationBuilder};

    use utoipa::openapi::schema::{ObjectBuilder, Type};
    use utoipa::openapi::{Components, PathItem, Ref};

    use crate::http::openapi::describe::problem;

    use crate::http::openapi::describe::{METADATA_ERRORS, json_ok};

    /// `GET /algorithms`.
    pub(crate) fn algorithms(d: &Describe<'_>, _: &mut Components) -> PathItem {
        let op = d.op("getAlgorithms", "The generators and their settings");
        let op = d.errors(
            op.response("200", json_ok(ObjectBuilder::new().schema_type(Type::Object))),
            METADATA_ERRORS,
        );
        PathItem::new(HttpMethod::Get, op.build())
    }

    /// `GET /usage`.
    pub(crate) fn usage(d: &Describe<'_>, _: &mut Components) -> PathItem {
        let op =
            d.op("getUsage", "The calling caller's policy, remaining quota and counters (this instance)");
        let op = d.errors(op.response("200", json_ok(Ref::from_schema_name("Usage"))), METADATA_ERRORS);
        PathItem::new(HttpMethod::Get, op.build())
    }

    /// `GET /version`.
    pub(crate) fn version(d: &Describe<'_>, _: &mut Components) -> PathItem {
        let string =
            |description: &str| ObjectBuilder::new().schema_type(Type::String).description(Some(description));
        let body = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("name", string("Always drbgd"))
            .property("version", string("The server's version (semantic versioning)"))
            .required("name")
            .required("version");
        let op = d.op("getVersion", "The server's name and version");
        PathItem::new(HttpMethod::Get, d.errors(op.response("200", json_ok(body)), METADATA_ERRORS).build())
    }

    /// `GET /openapi.json`: public.
    pub(crate) fn openapi(_: &Describe<'_>, _: &mut Components) -> PathItem {
        let op = OperationBuilder::new()
            .operation_id(Some("getOpenapi"))
            .summary(Some("This document (public, also with auth on)"))
            .response("200", json_ok(ObjectBuilder::new().schema_type(Type::Object)))
            .response("503", problem("Service unavailable"));
        PathItem::new(HttpMethod::Get, op.build())
    }
}
