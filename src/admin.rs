//! The admin listener: `/metrics` (Prometheus text), `/livez` (the process runs), `/readyz`
//! (every shard seeded, self-tests passed, not shutting down; its body names the approved-only
//! mode when it is on, and a failed self-test's algorithm and test when one failed).

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::error::ApiError;
use crate::state::AppState;

/// The admin router.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/livez", get(livez))
        .route("/readyz", get(readyz))
        .fallback(|| async { ApiError::NotFound })
        .layer(tower_http::set_header::SetResponseHeaderLayer::overriding(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        ))
        .with_state(state)
}

async fn metrics(State(state): State<AppState>) -> Response {
    state.check_ready();
    let mut response = state.metrics.render().into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    response
}

async fn livez() -> &'static str {
    "ok\n"
}

async fn readyz(State(state): State<AppState>) -> Response {
    if state.check_ready() {
        let body = if state.service.rules().approved_only {
            "ready (approved-only: SP 800-90A mechanisms only)\n"
        } else {
            "ready\n"
        };
        (StatusCode::OK, body).into_response()
    } else if let Some(detail) = state.readiness.self_test_reason() {
        ApiError::SelfTestFailed { detail }.into_response()
    } else {
        ApiError::NotReady.into_response()
    }
}
