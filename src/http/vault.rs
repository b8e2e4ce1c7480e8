//! Vault's random API (with `[vault] enabled`): `POST` or `PUT /v1/sys/tools/random[/source][/bytes]`
//! and the same under `/v1/transit/random`, as hvac, the Vault CLI and Terraform's vault
//! provider call them. The caller is admitted by the pipeline from `X-Vault-Token` (or a
//! bearer key), as any other (policy route `/v1/sys/tools/random` for both paths); this
//! adapter reads Vault's parameters into a byte request of the service and writes Vault's
//! answer, `{"data": {"random_bytes": …}}` in Vault's envelope, and Vault's `{"errors": […]}`.
//!
//! Parameters are read as Vault's `HandleRandomAPI` (`sdk/helper/random`) reads them: `bytes`
//! (default 32) and `format` (`base64`, the default, or `hex`) from the JSON body, `source` from
//! the path (Vault's router sets the path's captures over the body's fields), and a number in
//! the path's last segment as the byte count. The limits
//! are that function's before its `drbg` field (1 to 128 KiB; later releases allow 10 MiB);
//! the server's own `limits.max_bits` and the caller's policy apply as well. Every source
//! (`platform`, `seal`, `all`) is drbgd's default generator, seeded from the OS: drbgd has no
//! seal, so `seal` carries Vault's own warning for a Vault without seal entropy.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;

use super::respond::{self, served};
use crate::callers::Admission;
use crate::error::ApiError;
use crate::pipeline::{self, Answer};
use crate::service::{BytesRequest, Encoding};
use crate::state::AppState;

/// The most bytes a request may ask for (Vault's `APIMaxBytes` before the `drbg` field).
pub const MAX_BYTES: u64 = 128 * 1024;

/// The largest body read (Vault's parameters fit in far less).
const MAX_BODY: usize = 16 * 1024;

/// Vault's path to random bytes (`sys/tools/random`), also the route's name.
pub const SYS_PATH: &str = "/v1/sys/tools/random";
/// Vault's other path to the same thing (`transit/random`).
pub const TRANSIT_PATH: &str = "/v1/transit/random";

/// The method router of both paths: `POST` and `PUT`, Vault's 405 for the rest.
pub fn router() -> MethodRouter<AppState> {
    axum::routing::post(post).put(post).fallback(method_not_allowed)
}

/// The handler of both paths and both methods.
pub async fn post(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Some(admission) = parts.extensions.get::<Admission>().cloned() else {
        return answer_error(&ApiError::Internal);
    };
    let params = match axum::body::to_bytes(body, MAX_BODY).await {
        Err(e) => Err(super::body::body_error(&e, MAX_BODY)),
        Ok(bytes) => Params::read(parts.uri.path(), &bytes),
    };
    match params.and_then(|p| answer(&state, &admission, &p)) {
        Ok(answer) => answer.into_response(),
        Err(error) => answer_error(&error),
    }
}

/// 405 for the other methods, as Vault's `{"errors": []}` with `Allow`.
pub async fn method_not_allowed() -> Response {
    let mut response = answer_error(&ApiError::MethodNotAllowed);
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST,PUT"));
    response
}

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
struct Params {
    bytes: u64,
    hex: bool,
    /// `seal`: answered with Vault's warning.
    seal: bool,
}

/// A string field: absent is `None`; anything but a string (`null` included) is refused.
fn text<'a>(field: &str, value: Option<&'a serde_json::Value>) -> Result<Option<&'a str>, ApiError> {
    match value {
        None => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s)),
        Some(other) => {
            Err(bad(format!("error converting input {other} for field {field:?}: expected a string")))
        }
    }
}

fn bad(detail: impl Into<String>) -> ApiError {
    ApiError::invalid("invalid_vault_request", "body", detail)
}

impl Params {
    fn read(path: &str, body: &[u8]) -> Result<Params, ApiError> {
        let body: serde_json::Map<String, serde_json::Value> = if body.iter().all(u8::is_ascii_whitespace) {
            serde_json::Map::new()
        } else {
            serde_json::from_slice(body).map_err(|e| bad(format!("failed to parse JSON input: {e}")))?
        };
        let rest =
            [SYS_PATH, TRANSIT_PATH].into_iter().find_map(|p| path.strip_prefix(p)).unwrap_or_default();
        let mut segments = rest.split('/').skip(1);
        let (path_source, url_bytes) = (segments.next(), segments.next());
        // Vault's router sets each path capture over the body's field of the same name, an
        // absent segment as "": a `source` in the body is never read.
        let format = text("format", body.get("format"))?;
        let source = path_source.unwrap_or_default();
        let field_bytes = || match body.get("bytes") {
            None => Ok(32),
            // A JSON number with no fraction, as Vault's field decoder takes it (`32.0` is 32).
            Some(serde_json::Value::Number(n)) => n
                .as_i64()
                .or_else(|| {
                    n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 2f64.powi(53)).map(|f| f as i64)
                })
                .ok_or_else(|| bad(format!("error converting input {n} for field \"bytes\""))),
            Some(serde_json::Value::String(s)) => atoi(s).map_err(|_| {
                bad(format!("error converting input {s} for field \"bytes\": cannot parse '{s}' as int"))
            }),
            Some(other) => Err(bad(format!("error converting input {other} for field \"bytes\""))),
        };
        let url_count = |s: &str| {
            atoi(s).map_err(|_| {
                bad(format!("error parsing url-set byte count: strconv.Atoi: parsing {s:?}: invalid syntax"))
            })
        };
        // Vault's order: one path segment that is no source is the byte count.
        let (source, bytes) = match (source, url_bytes) {
            ("", _) => ("platform", field_bytes()?),
            (s, None) if valid_source(s) => (s, field_bytes()?),
            (s, None) => ("platform", url_count(s)?),
            (s, Some(n)) => (s, url_count(n)?),
        };
        if bytes < 1 {
            return Err(bad("\"bytes\" cannot be less than 1"));
        }
        if bytes > MAX_BYTES as i64 {
            return Err(bad(format!("\"bytes\" should be less than {MAX_BYTES}")));
        }
        let hex = match format.unwrap_or("base64") {
            "hex" => true,
            "base64" => false,
            other => {
                return Err(bad(format!(
                    "unsupported encoding format {other:?}; must be \"hex\" or \"base64\""
                )));
            }
        };
        if !valid_source(source) {
            return Err(bad(format!(
                "unsupported entropy source {source:?}; must be \"platform\" or \"seal\", or \"all\""
            )));
        }
        Ok(Params { bytes: bytes as u64, hex, seal: source == "seal" })
    }
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits.
fn atoi(s: &str) -> Result<i64, std::num::ParseIntError> {
    s.parse::<i64>()
}

fn valid_source(s: &str) -> bool {
    matches!(s, "" | "platform" | "seal" | "all")
}

fn answer(state: &AppState, admission: &Admission, params: &Params) -> Result<Answer, ApiError> {
    let format = if params.hex { Encoding::Hex } else { Encoding::Base64 };
    let req = BytesRequest::new(state.service.rules(), Some(params.bytes), None, format, false)?.into_bits();
    let rendered = state.service.rendered(&admission.caller, &req)?;
    let warnings: &[u8] = if params.seal {
        br#"["no seal/entropy augmentation available, using platform entropy source"]"#
    } else {
        b"null"
    };
    let body = respond::wiped_joined(&[
        br#"{"request_id":"","lease_id":"","renewable":false,"lease_duration":0,"data":{"random_bytes":""#,
        &rendered.body,
        br#""},"wrap_info":null,"warnings":"#,
        warnings,
        br#","auth":null,"mount_type":""}"#,
    ]);
    let response = pipeline::response(body, "application/json");
    Ok(served(response, req.alg(), req.n_bits()))
}

/// An error as Vault writes one: `{"errors": [...]}`, with Vault's statuses: 403 `permission
/// denied` for a missing or wrong token and for a policy refusal, 429 for a rate limit, 400 for
/// bad input; `Retry-After` where drbgd sends it.
pub fn error_response(error: &ApiError) -> Response {
    let (status, message) = match error {
        ApiError::Unauthorized | ApiError::BadSignature { .. } => {
            (StatusCode::FORBIDDEN, Some("permission denied".to_string()))
        }
        ApiError::Forbidden { .. } => (StatusCode::FORBIDDEN, Some(format!("permission denied: {error}"))),
        ApiError::RateLimited { .. } => {
            (StatusCode::TOO_MANY_REQUESTS, Some(format!("rate limit quota exceeded: {error}")))
        }
        ApiError::NotFound | ApiError::MethodNotAllowed => (error.status(), None),
        _ => (error.status(), Some(error.to_string())),
    };
    let body = serde_json::json!({ "errors": message.into_iter().collect::<Vec<_>>() });
    let mut response = pipeline::response_with(body.to_string().into(), "application/json", 2);
    *response.status_mut() = status;
    if let Some(secs) = error.retry_after() {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

/// [`error_response`] with its code recorded for the pipeline.
fn answer_error(error: &ApiError) -> Response {
    let mut response = error_response(error);
    pipeline::Report::of(&mut response).code = Some(error.code());
    response
}

/// The OpenAPI operations of Vault's two paths (token in `X-Vault-Token`; Vault's own error shapes): each row's `doc` column (`http.rs`), built from the
/// pieces of `http/openapi/describe.rs`.
pub(crate) mod doc {
    use crate::pipeline::Describe;
    use utoipa::openapi::path::{HttpMethod, OperationBuilder, PathItemBuilder};
    use utoipa::openapi::request_body::RequestBodyBuilder;
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
    use utoipa::openapi::{Components, PathItem};

    use crate::http::openapi::describe::{content, described_string, json_response};

    /// `/v1/sys/tools/random`: `POST` and `PUT`.
    pub(crate) fn vault_sys(_: &Describe<'_>, components: &mut Components) -> PathItem {
        vault_components(components);
        vault_item("vaultSysToolsRandom")
    }

    /// `/v1/transit/random`: `POST` and `PUT`.
    pub(crate) fn vault_transit(_: &Describe<'_>, components: &mut Components) -> PathItem {
        vault_components(components);
        vault_item("vaultTransitRandom")
    }

    /// One of Vault's paths, its operations named `{name}Post` and `{name}Put`.
    fn vault_item(name: &str) -> PathItem {
        let body = || {
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .property(
                    "bytes",
                    ObjectBuilder::new()
                        .schema_type(Type::Integer)
                        .minimum(Some(1))
                        .maximum(Some(crate::http::vault::MAX_BYTES))
                        .default(Some(32.into()))
                        .description(Some("Random bytes to return")),
                )
                .property(
                    "format",
                    described_string("Encoding of random_bytes")
                        .enum_values(Some(["base64", "hex"]))
                        .default(Some("base64".into())),
                )
                .build()
        };
        let op = |id: &str| {
            OperationBuilder::new()
                .operation_id(Some(id))
                .summary(Some(
                    "Vault's random bytes (hvac, the Vault CLI); also /{bytes}, /{source} and /{source}/{bytes} after \
                     the path, source platform, seal or all (each drbgd's default generator; seal adds Vault's warning \
                     that it has no seal)",
                ))
                .security(SecurityRequirement::new("vaultToken", Vec::<String>::new()))
                .request_body(Some(
                    RequestBodyBuilder::new().content("application/json", content(body().into())).build(),
                ))
                .response("200", json_response("Vault's envelope with data.random_bytes", "application/json", "VaultRandom"))
                .response("400", json_response("Bad parameters", "application/json", "VaultErrors"))
                .response(
                    "403",
                    json_response("A missing or wrong token, or outside the caller's policy", "application/json", "VaultErrors"),
                )
                .response("429", json_response("Over the caller's quota (Retry-After)", "application/json", "VaultErrors"))
                .response("503", json_response("Unavailable (Retry-After)", "application/json", "VaultErrors"))
                .build()
        };
        PathItemBuilder::new()
            .operation(HttpMethod::Post, op(&format!("{name}Post")))
            .operation(HttpMethod::Put, op(&format!("{name}Put")))
            .build()
    }

    /// The schemas and security scheme Vault's operations name.
    fn vault_components(components: &mut Components) {
        let data = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("random_bytes", described_string("hex or base64"));
        let random = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("data", data)
            .property(
                "warnings",
                utoipa::openapi::schema::ArrayBuilder::new()
                    .schema_type(utoipa::openapi::schema::SchemaType::from_iter([Type::Array, Type::Null]))
                    .items(described_string("")),
            )
            .property("request_id", described_string(""))
            .property("lease_id", described_string(""))
            .required("data");
        let errors = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("errors", utoipa::openapi::schema::ArrayBuilder::new().items(described_string("")))
            .required("errors");
        components.schemas.insert("VaultRandom".to_owned(), random.into());
        components.schemas.insert("VaultErrors".to_owned(), errors.into());
        components.add_security_scheme(
            "vaultToken",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-Vault-Token",
                "A key of a caller, as a Vault token (Authorization: Bearer works too)",
            ))),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &str, body: &str) -> Result<Params, String> {
        Params::read(path, body.as_bytes()).map_err(|e| e.to_string())
    }

    #[test]
    fn parameters_are_read_as_vault_reads_them() {
        let p = |bytes, hex, seal| Ok(Params { bytes, hex, seal });
        let sys = "/v1/sys/tools/random";
        assert_eq!(read(sys, ""), p(32, false, false));
        assert_eq!(read(sys, r#"{"bytes": 16, "format": "hex"}"#), p(16, true, false));
        assert_eq!(read(sys, r#"{"bytes": "16"}"#), p(16, false, false));
        assert_eq!(read("/v1/transit/random/64", "{}"), p(64, false, false));
        assert_eq!(read("/v1/sys/tools/random/seal", r#"{"bytes": 8}"#), p(8, false, true));
        assert_eq!(read("/v1/sys/tools/random/all/24", r#"{"format": "hex"}"#), p(24, true, false));
        // As Vault: the body's `source` is never read (the path's capture, "" when absent,
        // is set over it), and unknown fields are ignored.
        assert_eq!(read(sys, r#"{"source": "seal", "unknown": 1}"#), p(32, false, false));
        assert_eq!(read(sys, r#"{"source": "hsm"}"#), p(32, false, false));
        assert_eq!(read(sys, r#"{"bytes": 131072}"#), p(131_072, false, false));
        assert_eq!(read(sys, r#"{"bytes": 16.0}"#), p(16, false, false));
        for (path, body, message) in [
            (sys, r#"{"bytes": 0}"#, "\"bytes\" cannot be less than 1"),
            (sys, r#"{"bytes": 131073}"#, "\"bytes\" should be less than 131072"),
            (
                sys,
                r#"{"format": "base32"}"#,
                "unsupported encoding format \"base32\"; must be \"hex\" or \"base64\"",
            ),
            ("/v1/sys/tools/random/hsm/8", "", "unsupported entropy source \"hsm\""),
            ("/v1/sys/tools/random/x", "", "error parsing url-set byte count"),
            ("/v1/sys/tools/random/all/x", "", "error parsing url-set byte count"),
            (sys, r#"{"bytes": 1.5}"#, "error converting input 1.5 for field \"bytes\""),
            (sys, r#"{"bytes": "x"}"#, "error converting input x for field \"bytes\""),
            (sys, "[", "failed to parse JSON input"),
            (sys, r#"{"format": null}"#, "error converting input null for field \"format\""),
            (sys, "[1]", "failed to parse JSON input"),
            (sys, r#"{"format": 1}"#, "error converting input 1 for field \"format\""),
        ] {
            let error = read(path, body).unwrap_err();
            assert!(error.starts_with(message), "{path} {body}: {error}");
        }
    }

    #[tokio::test]
    async fn errors_are_vault_shaped() {
        let cases = [
            (ApiError::Unauthorized, 403, r#"{"errors":["permission denied"]}"#),
            (ApiError::MethodNotAllowed, 405, r#"{"errors":[]}"#),
            (
                bad("\"bytes\" cannot be less than 1"),
                400,
                r#"{"errors":["\"bytes\" cannot be less than 1"]}"#,
            ),
        ];
        for (error, status, body) in cases {
            let response = error_response(&error);
            assert_eq!(response.status(), status);
            assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
            let bytes = axum::body::to_bytes(response.into_body(), 1024).await.unwrap();
            assert_eq!(std::str::from_utf8(&bytes).unwrap(), body);
        }
        let limited = ApiError::rate_limited("rate_limited", 2, "slow down".into());
        let response = error_response(&limited);
        assert_eq!(response.status(), 429);
        assert_eq!(response.headers()[header::RETRY_AFTER], "2");
    }
}
