//! `GET /bits`, `POST /bits` and `GET /bytes`: random output in any encoding, streamed when
//! large. Parse into a typed request, call the service, encode.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::Value;

use super::admit::Admitted;
use super::params::{Params, choose_format};
use super::served;
use crate::callers::Admission;
use crate::error::ApiError;
use crate::service::{BitsOutput, BitsRequest, BytesRequest};
use crate::state::AppState;

const PARAMS: &[&str] = &["n", "alg", "format", "pr"];

/// `GET /bits?n=&alg=&format=&pr=`.
pub async fn get_bits(
    State(state): State<AppState>,
    axum::Extension(admission): Admitted,
    headers: HeaderMap,
    params: Params,
) -> Result<Response, ApiError> {
    respond(&state, &admission, bits_request(&state, &headers, &params)?)
}

/// `POST /bits` with `{"n": 256, "alg": "...", "format": "...", "pr": false}`.
pub async fn post_bits(
    State(state): State<AppState>,
    axum::Extension(admission): Admitted,
    headers: HeaderMap,
    body: Result<Json<Value>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body.map_err(|e| ApiError::invalid("invalid_body", "body", e.body_text()))?;
    respond(&state, &admission, bits_request(&state, &headers, &Params::from_json(&body)?)?)
}

/// `GET /bytes?n=&alg=&format=&pr=`: the same, counted in bytes.
pub async fn get_bytes(
    State(state): State<AppState>,
    axum::Extension(admission): Admitted,
    headers: HeaderMap,
    params: Params,
) -> Result<Response, ApiError> {
    params.allow(PARAMS)?;
    let format = choose_format(params.get("format"), &headers)?;
    let (n, alg, pr) = (params.u64("n", "invalid_n")?, params.get("alg"), params.flag("pr")?);
    respond(&state, &admission, BytesRequest::new(state.service.rules(), n, alg, format, pr)?.into_bits())
}

/// The bits request of a query string or JSON body.
fn bits_request(state: &AppState, headers: &HeaderMap, params: &Params) -> Result<BitsRequest, ApiError> {
    params.allow(PARAMS)?;
    let format = choose_format(params.get("format"), headers)?;
    let (n, alg, pr) = (params.u64("n", "invalid_n")?, params.get("alg"), params.flag("pr")?);
    BitsRequest::new(state.service.rules(), n, alg, format, pr)
}

fn respond(state: &AppState, admission: &Admission, req: BitsRequest) -> Result<Response, ApiError> {
    let mut response = match state.service.bits(&admission.caller, req)? {
        BitsOutput::Whole(generated) => {
            let start = std::time::Instant::now();
            let body = generated.render(&req);
            let timing = format!(
                "gen;dur={:.3};desc=\"generate\", enc;dur={:.3};desc=\"encode\"",
                generated.generate_time.as_secs_f64() * 1e3,
                start.elapsed().as_secs_f64() * 1e3
            );
            let mut response = body.into_response();
            if let Ok(v) = HeaderValue::from_str(&timing) {
                response.headers_mut().insert("server-timing", v);
            }
            response
        }
        BitsOutput::Stream { first, rest } => {
            // The admission travels with the body: the caller's in-flight place is held
            // until the last chunk is sent or the client goes away, as for gRPC streams.
            let held = (rest, admission.clone());
            let rest = futures_util::stream::try_unfold(held, |(mut chunks, admission)| async move {
                match chunks.next_chunk() {
                    Ok(Some(chunk)) => Ok(Some((chunk.encoded, (chunks, admission)))),
                    Ok(None) => Ok(None),
                    Err(e) => {
                        tracing::warn!(
                            code = e.code(),
                            "aborting a streamed response: generator refused mid-stream"
                        );
                        Err(std::io::Error::other(e.code()))
                    }
                }
            });
            Body::from_stream(futures_util::stream::iter([Ok(first)]).chain(rest)).into_response()
        }
    };
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(req.format().content_type()));
    Ok(served(response, req.alg(), req.n_bits()))
}
