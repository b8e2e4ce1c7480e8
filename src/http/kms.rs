//! AWS KMS `GenerateRandom` (with `[kms] enabled`): `POST /` with `X-Amz-Target:
//! TrentService.GenerateRandom` and the JSON body `{"NumberOfBytes": n}`, answered
//! `{"Plaintext": "<base64>"}`, as every AWS SDK and the AWS CLI call it with an endpoint URL.
//!
//! The caller is the owner of the access key that signed the request (AWS SigV4, checked by
//! `callers::sigv4` against the caller's secret). The signature covers the body, so this
//! endpoint admits the caller itself once the (small, bounded) body is read: the pipeline
//! first checks what the head shows (a known access key, the scope, the date) and holds the
//! request under its own cap until then (its row's identity is `SigV4`), and records the caller this
//! endpoint names. The answer (at most 1,024 bytes) is made at once, without a place under the
//! server's cap of its own. Errors are KMS's: `{"__type": …, "message": …}` with KMS's types
//! (`ValidationException`, `ThrottlingException`, `AccessDeniedException`,
//! `UnrecognizedClientException`, `InvalidSignatureException`, `UnknownOperationException`…).

use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;

use super::respond::{self, served};
use crate::callers::sigv4::SignedRequest;
use crate::callers::{Authorized, ClientIdentity, Denied, Route};
use crate::error::ApiError;
use crate::pipeline::{self, Answer};
use crate::service::{BytesRequest, Encoding};
use crate::state::AppState;

/// The one operation served.
const TARGET: &str = "TrentService.GenerateRandom";

/// KMS's bounds on `NumberOfBytes`.
pub const MAX_BYTES: u64 = 1024;

/// The largest body read: `{"NumberOfBytes": n}` and KMS's optional fields fit in far less.
const MAX_BODY: usize = 8 * 1024;

/// The AWS JSON protocol's content type.
const CONTENT_TYPE: &str = "application/x-amz-json-1.1";

/// The handler.
pub async fn post(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let target = parts.headers.get("x-amz-target").and_then(|v| v.to_str().ok());
    // Refusals before the signature is checked are `unknown`'s, as the pipeline's are.
    let refuse = |error: ApiError| answer_error(&state.callers.unknown(error).error, None);
    if target != Some(TARGET) {
        return refuse(unknown_operation());
    }
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(body) => body,
        Err(e) => return refuse(super::body::body_error(&e, MAX_BODY)),
    };
    let signed = SignedRequest::of(&parts.method, &parts.uri, &parts.headers);
    let client = parts.extensions.get::<Arc<ClientIdentity>>().map(|c| &**c);
    let admitted = state
        .callers
        .authorize_signed(&signed, client, &body, SystemTime::now(), Route::Kms)
        .and_then(Authorized::enter);
    let admission = match admitted {
        Ok(admission) => admission,
        Err(Denied { caller, error, at }) => return answer_error(&error, caller.map(|c| (c, at))),
    };
    let named = Some((admission.caller.clone(), admission.at));
    let rendered = number_of_bytes(&parts.headers, &body).and_then(|n| {
        let req =
            BytesRequest::new(state.service.rules(), Some(n), None, Encoding::Base64, false)?.into_bits();
        let rendered = state.service.rendered(&admission.caller, &req)?;
        Ok((req, rendered))
    });
    let (req, rendered) = match rendered {
        Ok(done) => done,
        Err(error) => return answer_error(&error, named),
    };
    let body = respond::wiped_joined(&[br#"{"Plaintext":""#, &rendered.body, br#""}"#]);
    let mut answer: Answer = served(pipeline::response(body, CONTENT_TYPE), req.alg(), req.n_bits());
    answer.report.named = named;
    answer.into_response()
}

/// Its method router: `POST`, KMS's 405 for the rest.
pub fn router() -> MethodRouter<AppState> {
    axum::routing::post(post).fallback(method_not_allowed)
}

/// 405 for the other methods, with `Allow`.
pub async fn method_not_allowed() -> Response {
    let mut response = answer_error(&ApiError::MethodNotAllowed, None);
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

fn unknown_operation() -> ApiError {
    ApiError::invalid("unknown_operation", "X-Amz-Target", format!("the only operation served is {TARGET}"))
}

fn validation(detail: impl Into<String>) -> ApiError {
    ApiError::invalid("invalid_kms_request", "body", detail)
}

/// The body's `NumberOfBytes`, within KMS's bounds. `CustomKeyStoreId` (drbgd has no custom key
/// stores) and `Recipient` (a Nitro enclave's attestation, which drbgd cannot encrypt to) are
/// refused; other members are ignored.
fn number_of_bytes(headers: &axum::http::HeaderMap, body: &[u8]) -> Result<u64, ApiError> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-amz-json-1.") || v.starts_with("application/json"));
    if !json {
        return Err(ApiError::invalid(
            "serialization",
            "Content-Type",
            format!("the body must be {CONTENT_TYPE}"),
        ));
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Body {
        number_of_bytes: Option<serde_json::Value>,
        custom_key_store_id: Option<serde_json::Value>,
        recipient: Option<serde_json::Value>,
    }
    let body: Body = serde_json::from_slice(if body.is_empty() { b"{}" } else { body })
        .map_err(|_| ApiError::invalid("serialization", "body", "the body is not a JSON object"))?;
    if body.custom_key_store_id.is_some() {
        return Err(ApiError::invalid(
            "custom_key_store_not_found",
            "CustomKeyStoreId",
            "no custom key store exists",
        ));
    }
    if body.recipient.is_some() {
        return Err(validation("Recipient (an enclave attestation) is not supported"));
    }
    let n = match body.number_of_bytes {
        None => return Err(validation("NumberOfBytes is required")),
        Some(serde_json::Value::Number(n)) => n.as_i64(),
        Some(_) => None,
    };
    let n = n.ok_or_else(|| {
        ApiError::invalid("serialization", "NumberOfBytes", "NumberOfBytes must be an integer")
    })?;
    if !(1..=MAX_BYTES as i64).contains(&n) {
        let bound = if n < 1 { "greater than or equal to 1" } else { "less than or equal to 1024" };
        return Err(validation(format!(
            "1 validation error detected: Value '{n}' at 'numberOfBytes' failed to satisfy constraint: Member must have value {bound}"
        )));
    }
    Ok(n as u64)
}

/// KMS's exception type and HTTP status for an error.
fn exception(error: &ApiError) -> (&'static str, StatusCode) {
    let bad = StatusCode::BAD_REQUEST;
    match (error, error.code()) {
        (_, "missing_signature") => ("MissingAuthenticationTokenException", bad),
        (_, "incomplete_signature") => ("IncompleteSignatureException", bad),
        (_, "invalid_signature" | "signature_expired") => ("InvalidSignatureException", bad),
        (_, "unrecognized_client") => ("UnrecognizedClientException", bad),
        (_, "unknown_operation") => ("UnknownOperationException", bad),
        (_, "serialization") => ("SerializationException", bad),
        (_, "custom_key_store_not_found") => ("CustomKeyStoreNotFoundException", bad),
        (ApiError::Forbidden { .. } | ApiError::Unauthorized, _) => ("AccessDeniedException", bad),
        (ApiError::RateLimited { .. }, _) => ("ThrottlingException", bad),
        (ApiError::InvalidParameter { .. } | ApiError::TooLarge { .. }, _) => ("ValidationException", bad),
        (ApiError::MethodNotAllowed | ApiError::NotFound, _) => ("UnknownOperationException", error.status()),
        (ApiError::Internal, _) => ("KMSInternalException", StatusCode::INTERNAL_SERVER_ERROR),
        (ApiError::ClientClosed, _) => ("KMSInternalException", error.status()),
        // Every 503 of drbgd's (overloaded, entropy, not ready, timeout): retry later.
        _ => ("DependencyTimeoutException", StatusCode::SERVICE_UNAVAILABLE),
    }
}

/// An error as KMS writes one (AWS JSON 1.1): `{"__type": …, "message": …}`, with
/// `x-amzn-ErrorType` and `Retry-After` where drbgd sends it.
pub fn error_response(error: &ApiError) -> Response {
    let (kind, status) = exception(error);
    let body = serde_json::json!({ "__type": kind, "message": error.to_string() });
    let mut response = pipeline::response_with(body.to_string().into(), CONTENT_TYPE, 3);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert("x-amzn-errortype", HeaderValue::from_static(kind));
    if let Some(secs) = error.retry_after() {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

/// [`error_response`] recorded for the pipeline: its code, and the caller when the
/// signature named one.
fn answer_error(
    error: &ApiError,
    named: Option<(std::sync::Arc<crate::callers::Caller>, tokio::time::Instant)>,
) -> Response {
    let mut response = error_response(error);
    let outcome = pipeline::Report::of(&mut response);
    outcome.code = Some(error.code());
    outcome.named = named;
    response
}

/// The OpenAPI operations of KMS `GenerateRandom` (signed with AWS SigV4, which OpenAPI cannot express beyond naming the header; AWS JSON's error shape): each row's `doc` column (`http.rs`), built from the
/// pieces of `http/openapi/describe.rs`.
pub(crate) mod doc {
    use crate::pipeline::Describe;
    use utoipa::openapi::path::{HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn};
    use utoipa::openapi::request_body::RequestBodyBuilder;
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
    use utoipa::openapi::{Components, PathItem, Required};

    use crate::http::openapi::describe::{content, described_string, json_response};

    /// KMS's `POST /`.
    pub(crate) fn kms(_: &Describe<'_>, components: &mut Components) -> PathItem {
        kms_components(components);
        let body = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property(
                "NumberOfBytes",
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(1))
                    .maximum(Some(crate::http::kms::MAX_BYTES)),
            )
            .required("NumberOfBytes");
        let target = ParameterBuilder::new()
            .name("X-Amz-Target")
            .parameter_in(ParameterIn::Header)
            .required(Required::True)
            .schema(Some(
                described_string("The operation").enum_values(Some(["TrentService.GenerateRandom"])),
            ))
            .build();
        let op = OperationBuilder::new()
            .operation_id(Some("kmsGenerateRandom"))
            .summary(Some("AWS KMS GenerateRandom (every AWS SDK, the AWS CLI), signed with AWS SigV4"))
            .security(SecurityRequirement::new("awsSigV4", Vec::<String>::new()))
            .parameter(target)
            .request_body(Some(
                RequestBodyBuilder::new().content("application/x-amz-json-1.1", content(body.into())).build(),
            ))
            .response("200", json_response("The random bytes", "application/x-amz-json-1.1", "KmsGenerateRandom"))
            .response(
                "400",
                json_response(
                    "KMS's errors: ValidationException, ThrottlingException, AccessDeniedException, InvalidSignatureException, UnrecognizedClientException, UnknownOperationException…",
                    "application/x-amz-json-1.1",
                    "KmsError",
                ),
            )
            .response("503", json_response("DependencyTimeoutException (Retry-After)", "application/x-amz-json-1.1", "KmsError"))
            .build();
        PathItem::new(HttpMethod::Post, op)
    }

    /// The schemas and security scheme KMS's operation names.
    fn kms_components(components: &mut Components) {
        let random = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("Plaintext", described_string("base64"))
            .required("Plaintext");
        let error = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("__type", described_string("The exception"))
            .property("message", described_string(""))
            .required("__type");
        components.schemas.insert("KmsGenerateRandom".to_owned(), random.into());
        components.schemas.insert("KmsError".to_owned(), error.into());
        components.add_security_scheme(
            "awsSigV4",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "Authorization",
                "AWS Signature Version 4 with a caller's access key (host and x-amz-date signed)",
            ))),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(content_type: &'static str, body: &str) -> Result<u64, (&'static str, String)> {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        number_of_bytes(&headers, body.as_bytes()).map_err(|e| (exception(&e).0, e.to_string()))
    }

    #[test]
    fn number_of_bytes_within_kms_bounds() {
        assert_eq!(n(CONTENT_TYPE, r#"{"NumberOfBytes": 32}"#), Ok(32));
        assert_eq!(n(CONTENT_TYPE, r#"{"NumberOfBytes": 1024, "Other": 1}"#), Ok(1024));
        for (body, kind) in [
            (r#"{"NumberOfBytes": 0}"#, "ValidationException"),
            (r#"{"NumberOfBytes": 1025}"#, "ValidationException"),
            (r#"{}"#, "ValidationException"),
            (r#"{"NumberOfBytes": "32"}"#, "SerializationException"),
            (r#"{"NumberOfBytes": 32, "CustomKeyStoreId": "cks-1"}"#, "CustomKeyStoreNotFoundException"),
            (r#"{"NumberOfBytes": 32, "Recipient": {}}"#, "ValidationException"),
            ("[", "SerializationException"),
        ] {
            assert_eq!(n(CONTENT_TYPE, body).unwrap_err().0, kind, "{body}");
        }
        let (_, message) = n(CONTENT_TYPE, r#"{"NumberOfBytes": 0}"#).unwrap_err();
        assert!(message.contains("Member must have value greater than or equal to 1"), "{message}");
        assert_eq!(n("text/plain", r#"{"NumberOfBytes": 32}"#).unwrap_err().0, "SerializationException");
    }

    #[tokio::test]
    async fn errors_are_kms_shaped() {
        let limited = ApiError::rate_limited("rate_limited", 1, "slow down".into());
        let response = error_response(&limited);
        assert_eq!(response.status(), 400);
        assert_eq!(response.headers()[header::CONTENT_TYPE], CONTENT_TYPE);
        assert_eq!(response.headers()["x-amzn-errortype"], "ThrottlingException");
        let bytes = axum::body::to_bytes(response.into_body(), 1024).await.unwrap();
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(json["__type"], "ThrottlingException");
        assert_eq!(json["message"], "slow down");
        assert_eq!(
            exception(&ApiError::Overloaded),
            ("DependencyTimeoutException", StatusCode::SERVICE_UNAVAILABLE)
        );
        let expired = ApiError::BadSignature { code: "signature_expired", detail: String::new() };
        assert_eq!(exception(&expired).0, "InvalidSignatureException");
    }
}
