//! RANDOM.ORG's JSON-RPC API, Release 4 (with `[randomorg] enabled`): `POST
//! /json-rpc/4/invoke`, as RANDOM.ORG's official clients call `api.random.org`, and its public
//! key at `GET /json-rpc/4/public-key`. The transport is here: the body (`application/json`,
//! else 415; over 512 KiB, 413) read into one request ([`Envelope`]), a notification (no `id`)
//! answered 204 and not run, every answer and error a JSON-RPC object in HTTP 200 as
//! RANDOM.ORG sends them. The methods are `randomorg/generate.rs`'s (Basic and Signed draws)
//! and `randomorg/keep.rs`'s (tickets, kept results, signatures, usage), over
//! [`crate::randomorg`]'s domain.
//!
//! The caller is named in the body (`apiKey`: a caller's key, as a bearer key), so the row's
//! guard is a signed one: the pipeline holds the request under its connection's place for a
//! signed body, the handler admits the caller the key names ([`Callers::admit`], route
//! `/json-rpc/4/invoke`), or, for `getTicket` and `verifySignature`, which name none, takes
//! the peer's place under the per-peer limits ([`PeerGate`]).

mod generate;
mod keep;
mod rpc;

pub use rpc::PATH;
use rpc::{Done, Reply, rpc_error};

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method as HttpMethod, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use serde_json::Value;

use crate::callers::{Admission, Callers, ClientIdentity, Denied, Key, Route};
use crate::error::ApiError;
use crate::pipeline::{self, PeerGate};
use crate::randomorg::RpcError;
use crate::randomorg::envelope::Envelope;
use crate::randomorg::params::Params;
use crate::randomorg::request::Method;
use crate::state::AppState;

/// The largest body read: a `verifySignature` of the largest signed result (a 1 Mbit blob in
/// base64) with room to spare.
const MAX_BODY: usize = 512 * 1024;

/// The content type of requests and answers.
const JSON: &str = "application/json";

/// The handler.
pub async fn post(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(body) => body,
        Err(e) if super::body::too_large(&e) => {
            return error_response(&ApiError::BodyTooLarge { limit: MAX_BODY });
        }
        Err(e) => return error_response(&super::body::body_error(&e, MAX_BODY)),
    };
    let call = match read(&state, body).await {
        Ok(call) => call,
        Err((error, id)) => return answer(&id, Err(error), None),
    };
    let Some(id) = call.id.clone() else {
        // A notification: JSON-RPC answers none, and a draw nobody sees is not made.
        return StatusCode::NO_CONTENT.into_response();
    };
    let Some(method) = Method::named(&call.method) else {
        return answer(&id, Err(RpcError::method_not_found()), None);
    };
    let allowed = method.allowed();
    let params = match Params::of(call.params.as_ref(), &allowed) {
        Ok(params) => params,
        Err(error) => return answer(&id, Err(error), None),
    };
    let client = parts.extensions.get::<Arc<ClientIdentity>>().map(|c| &**c);
    let gate = parts.extensions.get::<PeerGate>();
    let (result, named) = match method.keyed() {
        true => match admit(&state, &params, client) {
            Ok((admission, key)) => {
                let named = Some((admission.caller.clone(), admission.at));
                (keyed(&state, method, &params, &admission, key).await, named)
            }
            Err(error) => (Err(error), None),
        },
        // Its parameters handed over whole: `verifySignature` moves its `random` into the lane.
        false => (public(&state, method, call.params, gate).await, None),
    };
    let (result, reply) = match result {
        Ok(Reply { result, served, serial, ticket }) => (Ok(result), (served, serial, ticket)),
        Err(e) => (Err(e), (None, None, None)),
    };
    let mut response = answer(&id, result, reply.0);
    let report = pipeline::Report::of(&mut response);
    (report.named, report.serial, report.ticket) = (named, reply.1, reply.2);
    response
}

/// The request in `body`: read at once when small (every generating call's is), in the public
/// lane (`/verify`'s: half the cores at most) when it is larger, before anything names its
/// caller: a flood of large bodies (a `verifySignature`'s may be 512 KiB) from anyone takes
/// at most those cores, and the calls of small bodies never wait for them.
async fn read(state: &AppState, body: bytes::Bytes) -> Result<Envelope, (RpcError, Value)> {
    if body.len() <= INLINE_BODY {
        return Envelope::read(&body);
    }
    let read = state.receipts.lane().run(move || Envelope::read(&body)).await;
    read.unwrap_or_else(|| Err((RpcError::offline("overloaded"), Value::Null)))
}

/// The largest body read on the async workers (a few hundred microseconds of parsing at most).
const INLINE_BODY: usize = 64 * 1024;

/// A keyed method, for its admitted caller.
async fn keyed(
    state: &AppState,
    method: Method,
    params: &Params<'_>,
    admission: &Admission,
    key: &str,
) -> Done {
    match method {
        Method::Generate { kind, signed } => {
            generate::generate(state, admission, key, kind, signed, params).await
        }
        Method::GetUsage => keep::usage(state, admission).map(Reply::from),
        Method::GetResult => keep::result(state, admission, params).await.map(Reply::from),
        Method::CreateTickets => keep::create(state, admission, params).await.map(Reply::from),
        Method::RevealTickets => keep::reveal(state, admission, params).await.map(Reply::from),
        Method::ListTickets => keep::list(state, admission, params).await.map(Reply::from),
        Method::GetTicket | Method::VerifySignature => Err(RpcError::internal()),
    }
}

/// A method anyone may call, under the peer's place (its parameters checked already).
async fn public(state: &AppState, method: Method, params: Option<Value>, gate: Option<&PeerGate>) -> Done {
    let _place = match gate.map(PeerGate::enter) {
        Some(Ok(place)) => place,
        Some(Err(e)) => return Err(rpc_error(&e)),
        None => return Err(RpcError::internal()),
    };
    match method {
        Method::GetTicket => {
            let allowed = method.allowed();
            keep::ticket(state, &Params::of(params.as_ref(), &allowed)?).await.map(Reply::from)
        }
        Method::VerifySignature => keep::verify(state, params).await.map(Reply::from),
        _ => Err(RpcError::internal()),
    }
}

/// The caller `apiKey` names, admitted to the route.
fn admit<'a>(
    state: &AppState,
    params: &Params<'a>,
    client: Option<&ClientIdentity>,
) -> Result<(Admission, &'a str), RpcError> {
    let key = params.string("apiKey")?;
    let admitted = state.callers.admit(Some(Key::Raw(key.as_bytes())), client, Some(Route::RandomOrg));
    admitted.map(|a| (a, key)).map_err(|Denied { error, .. }| rpc_error(&error))
}

/// The JSON-RPC response: `{"jsonrpc":"2.0","result":…,"id":…}` or its error, HTTP 200.
fn answer(id: &Value, result: Result<Vec<u8>, RpcError>, served: Option<pipeline::Served>) -> Response {
    let id = id.to_string();
    let (body, code) = match &result {
        Ok(result) => (
            [br#"{"jsonrpc":"2.0","result":"#.as_slice(), result, b",\"id\":", id.as_bytes(), b"}"].concat(),
            None,
        ),
        Err(error) => {
            let text = format!(r#"{{"jsonrpc":"2.0","error":{},"id":{id}}}"#, error.to_json());
            (text.into_bytes(), Some(error_code(error.code)))
        }
    };
    let response = pipeline::response(body.into(), JSON);
    // What was drawn, in the `X-Drbg-*` headers and the records, as every endpoint's.
    let mut response = match served {
        Some(served) => super::respond::served(response, served.alg, served.n_bits).into_response(),
        None => response,
    };
    pipeline::Report::of(&mut response).code = code;
    response
}

/// A stable name of a JSON-RPC error's code, for the records.
fn error_code(code: i64) -> &'static str {
    match code {
        -32700 => "rpc_parse_error",
        -32600 => "rpc_invalid_request",
        -32601 => "rpc_method_not_found",
        -32602 => "rpc_invalid_params",
        -32001 => "rate_limited",
        101 => "service_offline",
        303 => "not_found",
        200..=204 | 300..=307 => "invalid_parameter",
        400 | 401 => "unknown_key",
        402 | 403 => "allowance_spent",
        404 | 405 => "forbidden",
        424 | 425 => "license_data_refused",
        420..=426 => "ticket_refused",
        _ => "rpc_error",
    }
}

/// The pipeline's own refusals and the transport's (405, 413, 415, 503 with `Retry-After`) in
/// their HTTP status, with a JSON-RPC error body.
pub fn error_response(error: &ApiError) -> Response {
    let status = match error.code() {
        "unsupported_media_type" => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        _ => error.status(),
    };
    let rpc = match status {
        StatusCode::PAYLOAD_TOO_LARGE
        | StatusCode::UNSUPPORTED_MEDIA_TYPE
        | StatusCode::METHOD_NOT_ALLOWED => RpcError::invalid_request(&error.to_string()),
        _ => rpc_error(error),
    };
    let mut response = answer(&Value::Null, Err(rpc), None);
    *response.status_mut() = status;
    if let Some(secs) = error.retry_after() {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    pipeline::Report::of(&mut response).code = Some(error.code());
    response
}

/// `GET /json-rpc/4/public-key`: the door's RSA public key, SPKI PEM (404 without one).
pub fn public_key(state: &AppState) -> Response {
    let pem = state.randomorg.as_ref().and_then(|door| door.signer()).map(|s| s.public_pem().to_owned());
    let Some(pem) = pem else {
        return ApiError::Missing {
            code: "no_signing_key",
            detail: "this server has no RANDOM.ORG signing key ([randomorg] signing_key)".into(),
        }
        .into_response();
    };
    pipeline::response(pem.into(), "application/x-pem-file")
}

/// Its method router: `POST`, 405 for the rest.
pub fn router() -> MethodRouter<AppState> {
    axum::routing::post(post).fallback(method_not_allowed)
}

/// 405 with `Allow`, as RANDOM.ORG's transport answers a GET.
pub async fn method_not_allowed() -> Response {
    let mut response = error_response(&ApiError::MethodNotAllowed);
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

/// The head of a call: `application/json` (RANDOM.ORG accepts no other type; 415), before
/// the body is read.
///
/// # Errors
/// 415, as `unknown`'s.
pub(crate) fn json_head(
    callers: &Callers,
    _: &HttpMethod,
    _: &Uri,
    headers: &HeaderMap,
) -> Result<(), Denied> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(JSON));
    match json {
        true => Ok(()),
        false => Err(callers.unknown(ApiError::invalid(
            "unsupported_media_type",
            "Content-Type",
            "a JSON-RPC request is application/json",
        ))),
    }
}

/// The OpenAPI operation: one POST whose body and answer are JSON-RPC 2.0 (the methods are
/// docs/drop-in.md's).
pub(crate) mod doc {
    use utoipa::openapi::path::{HttpMethod, OperationBuilder};
    use utoipa::openapi::request_body::RequestBodyBuilder;
    use utoipa::openapi::{Components, PathItem};

    use crate::http::openapi::describe::{content, described_string, json_response};
    use crate::pipeline::Describe;

    /// `GET /json-rpc/4/public-key`.
    pub(crate) fn public_key(_: &Describe<'_>, _: &mut Components) -> PathItem {
        let pem = described_string("The RSA public key, SPKI PEM");
        let ok = utoipa::openapi::ResponseBuilder::new()
            .description("The key RANDOM.ORG-form signatures (RSA, SHA-512, PKCS #1 v1.5) verify with")
            .content("application/x-pem-file", content(pem.into()))
            .build();
        let op = OperationBuilder::new()
            .operation_id(Some("randomOrgPublicKey"))
            .summary(Some("The RANDOM.ORG door's signing key (public)"))
            .response("200", ok)
            .build();
        PathItem::new(HttpMethod::Get, op)
    }

    /// `POST /json-rpc/4/invoke`.
    pub(crate) fn invoke(_: &Describe<'_>, components: &mut Components) -> PathItem {
        let response = utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::Object)
            .description(Some(
                "{\"jsonrpc\": \"2.0\", \"result\" or \"error\": {code, message, data}, \"id\"}",
            ));
        components.schemas.insert("RandomOrgResponse".to_owned(), response.into());
        let body = described_string(
            "A JSON-RPC 2.0 request object: jsonrpc, method, params (apiKey and the method's), id",
        );
        let op = OperationBuilder::new()
            .operation_id(Some("randomOrgInvoke"))
            .summary(Some(
                "RANDOM.ORG's JSON-RPC API, Release 4: Basic and Signed methods, tickets (docs/drop-in.md)",
            ))
            .request_body(Some(
                RequestBodyBuilder::new().content("application/json", content(body.into())).build(),
            ))
            .response(
                "200",
                json_response("A JSON-RPC response or error object", "application/json", "RandomOrgResponse"),
            )
            .response(
                "204",
                utoipa::openapi::ResponseBuilder::new().description("A notification: nothing run").build(),
            )
            .build();
        PathItem::new(HttpMethod::Post, op)
    }
}
