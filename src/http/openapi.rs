//! `GET /openapi.json`, generated at start-up from the typed requests' rules and the response
//! types: the configured limits (`n`, `bytes`, `count` maxima), every enabled algorithm with
//! every alias it accepts, the formats of [`Encoding`] and [`SecretFormat`], the receipt
//! parameters and answer (when `[receipts]` is on), the bearer security scheme on every
//! operation that needs it (when auth is on), and the problem+json error schema. The paths are those of [`super::ROUTES`], the router's own list; an API test
//! calls every documented operation and checks that nothing undocumented is routed.
//!
//! utoipa builds the document: its `ToSchema` derive describes the response structs the
//! handlers serialize (so the schema is the code), and its builder API takes the run-time
//! values (limits, enabled algorithms, auth) that attribute macros cannot.

mod beacon;
mod drop_in;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::openapi::path::{HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{
    ComponentsBuilder, ContentBuilder, InfoBuilder, OneOfBuilder, OpenApi, OpenApiBuilder, PathItem,
    PathsBuilder, Ref, Required, ResponseBuilder, Schema,
};
use utoipa::{PartialSchema, ToSchema};

use super::params::{self, Param};
use crate::route::Route;
use crate::service::request::{
    DEFAULT_COUNT, DEFAULT_NONCE_BYTES, DEFAULT_TOKEN_BYTES, DEFAULT_UUID_VERSION,
};
use crate::service::{Encoding, Rules, SecretFormat};

/// An RFC 9457 problem: every error response of the API.
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// A URI naming the problem type (`https://drbgd.invalid/problems/<code>`).
    #[serde(rename = "type")]
    pub kind: String,
    /// The HTTP reason phrase.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// The stable machine code (`invalid_n`, `entropy_unavailable`, ...).
    pub code: String,
    /// A human sentence.
    pub detail: String,
    /// The offending parameter, where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
}

/// `format=json` for bits: the data in hex and the count of ones.
#[derive(Debug, Serialize, ToSchema)]
pub struct BitsJson {
    /// The generator.
    pub alg: String,
    /// Bits.
    pub n: u64,
    /// Always `hex`.
    pub encoding: String,
    /// `ceil(n/8)` bytes in lowercase hex.
    #[schema(pattern = "^[0-9a-f]*$")]
    pub data: String,
    /// Ones among the n bits.
    pub ones: u64,
}

/// A token or nonce as JSON (`Accept: application/json`).
#[derive(Debug, Serialize, ToSchema)]
pub struct SecretJson {
    /// The encoded value.
    pub value: String,
    /// Random bytes it encodes.
    pub bytes: u64,
    /// Its encoding.
    pub format: String,
    /// The generator.
    pub alg: String,
}

/// UUIDs as JSON.
#[derive(Debug, Serialize, ToSchema)]
pub struct UuidsJson {
    /// The UUIDs.
    #[schema(inline, value_type = Vec<UuidString>)]
    pub uuids: Vec<String>,
    /// 4 or 7.
    pub version: u8,
    /// The generator.
    pub alg: String,
}

/// A hyphenated lowercase UUID.
#[derive(Debug, ToSchema)]
#[schema(value_type = String, format = "uuid")]
pub struct UuidString(pub String);

/// Integers as JSON.
#[derive(Debug, Serialize, ToSchema)]
pub struct IntsJson {
    /// The values, each in `[min, max]`.
    pub values: Vec<i64>,
    /// The lower bound.
    pub min: i64,
    /// The upper bound.
    pub max: i64,
    /// The generator.
    pub alg: String,
}

/// A signed receipt (`receipt=true`, with `[receipts]` on): what was served, to whom and when,
/// and its signature. See `GET /keys`, `POST /verify` and docs/verifiable.md.
#[derive(Debug, Serialize, ToSchema)]
pub struct Receipt {
    /// The endpoint, its parameters (defaults applied), the output as `data` (a string, or a
    /// list of strings for `/uuid` and `/int`; binary output as base64, `data_encoding` saying
    /// so), `serial` (a UUIDv7), `issued_at` (RFC 3339, UTC, milliseconds), `caller`,
    /// `user_data` (if given) and `key_id`. Integers beyond ±(2^53 - 1) are strings. Its RFC 8785
    /// (JCS) canonical JSON, exactly as served, is what `signature` signs.
    #[schema(value_type = Object)]
    pub random: serde_json::Value,
    /// The Ed25519 signature of `random`'s canonical JSON, base64url without padding.
    pub signature: String,
}

/// The receipts' verification keys (`GET /keys`): an RFC 7517 JWK set.
#[derive(Debug, Serialize, ToSchema)]
pub struct Jwks {
    /// The keys in force, the signing key first.
    pub keys: Vec<Jwk>,
}

/// An Ed25519 public key as an RFC 8037 JWK.
#[derive(Debug, Serialize, ToSchema)]
pub struct Jwk {
    /// `OKP`.
    pub kty: String,
    /// `Ed25519`.
    pub crv: String,
    /// The raw 32-byte public key, base64url without padding.
    pub x: String,
    /// The key id: a receipt's `key_id`.
    pub kid: String,
    /// `sig`.
    #[serde(rename = "use")]
    pub usage: String,
    /// `EdDSA`.
    pub alg: String,
}

/// `POST /verify`'s answer for a well-formed receipt.
#[derive(Debug, Serialize, ToSchema)]
pub struct Verdict {
    /// Whether the signature verifies with the key `key_id` names.
    pub valid: bool,
    /// Why not: `unknown_key`, `malformed_signature`, `inexact_number` or `signature_mismatch`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The receipt's `key_id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// The receipt's `serial`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
}

/// The paths that need no credentials (and the beacon's, under [`beacon::PREFIX`]): their
/// answers carry no caller's rate-limit fields.
const PUBLIC_PATHS: [&str; 3] = ["/openapi.json", "/keys", "/verify"];

/// The document for `rules`, with the bearer scheme applied when `auth` is on, the receipt
/// parameters and answers when receipts are served (`receipts`: the most output bytes one
/// covers), the beacon's paths when it is on (`beacon`), and the drop-in front-ends' paths for
/// the routes `serves`.
pub fn document(
    rules: &Rules,
    auth: bool,
    receipts: Option<u64>,
    beacon: bool,
    serves: impl Fn(Route) -> bool,
) -> OpenApi {
    let d = Describe { rules, auth, receipts };
    let bits_responses = |op: OperationBuilder| {
        let ok = ResponseBuilder::new()
            .description("OK; streamed above the configured threshold")
            .content("text/plain", content(string_schema()))
            .content("application/octet-stream", content(binary_schema()))
            .content("application/json", content(d.json_or_receipt("BitsJson")));
        d.errors(op.response("200", ok.build()), &["400", "403", "429", "503"])
    };
    let bits_context = Context { n: Some((rules.max_bits, "Number of bits.")), ..Context::default() };
    let get_bits = bits_responses(
        d.op("getBits", "n random bits (packed MSB-first)")
            .parameters(Some(d.query(params::BITS, &bits_context))),
    );
    let post_bits = bits_responses(
        d.op("postBits", "n random bits, parameters in a JSON body")
            .request_body(Some(d.body(params::BITS, &bits_context))),
    );
    let bytes_context = Context { n: Some((rules.max_bits / 8, "Number of bytes.")), ..Context::default() };
    let get_bytes = bits_responses(
        d.op("getBytes", "n random bytes").parameters(Some(d.query(params::BITS, &bytes_context))),
    );
    let post_bytes = bits_responses(
        d.op("postBytes", "n random bytes, parameters in a JSON body")
            .request_body(Some(d.body(params::BITS, &bytes_context))),
    );
    // A random-output route's GET and POST: the same parameters in the query or a JSON body.
    let get_and_post = |id: &str, summary: &str, list: &[Param], context: &Context, schema: &str| {
        let ok = |op: OperationBuilder| {
            d.errors(op.response("200", d.text_or_json(schema)), &["400", "403", "429", "503"])
        };
        let get = ok(d.op(&format!("get{id}"), summary).parameters(Some(d.query(list, context))));
        let post = ok(d
            .op(&format!("post{id}"), &format!("{summary}, parameters in a JSON body"))
            .request_body(Some(d.body(list, context))));
        utoipa::openapi::path::PathItemBuilder::new()
            .operation(HttpMethod::Get, get.build())
            .operation(HttpMethod::Post, post.build())
            .build()
    };
    let secret_context = |default_bytes: u64, default_format: SecretFormat| Context {
        secret: Some((default_bytes, default_format)),
        ..Context::default()
    };
    let token = get_and_post(
        "Token",
        "A token for sessions, API keys, CSRF",
        params::SECRET,
        &secret_context(DEFAULT_TOKEN_BYTES, crate::service::request::DEFAULT_TOKEN_FORMAT),
        "SecretJson",
    );
    let nonce = get_and_post(
        "Nonce",
        "A nonce (12 bytes for AES-GCM/ChaCha20-Poly1305, 24 for XChaCha)",
        params::SECRET,
        &secret_context(DEFAULT_NONCE_BYTES, crate::service::request::DEFAULT_NONCE_FORMAT),
        "SecretJson",
    );
    let uuid = get_and_post("Uuids", "RFC 9562 UUIDs", params::UUID, &Context::default(), "UuidsJson");
    let int = get_and_post(
        "Ints",
        "Uniform integers in [min, max] without modulo bias",
        params::INT,
        &Context::default(),
        "IntsJson",
    );
    let algorithms = d.errors(
        d.op("getAlgorithms", "The generators and their settings").response(
            "200",
            ResponseBuilder::new()
                .description("OK")
                .content("application/json", content(ObjectBuilder::new().schema_type(Type::Object).into()))
                .build(),
        ),
        &["403", "429", "503"],
    );
    let usage = d.errors(
        d.op("getUsage", "The calling caller's policy, remaining quota and counters (this instance)")
            .response(
                "200",
                ResponseBuilder::new()
                    .description("OK")
                    .content("application/json", content(Ref::from_schema_name("Usage").into()))
                    .build(),
            ),
        &["403", "429", "503"],
    );
    let pollen_op = d.errors(
        d.op("postPollen", "The Pollen protocol: a VM's boot seed (Ubuntu's pollinate)")
            .request_body(Some(
                RequestBodyBuilder::new()
                    .content(
                        "application/x-www-form-urlencoded",
                        content(
                            ObjectBuilder::new()
                                .schema_type(Type::Object)
                                .property(
                                    "challenge",
                                    ObjectBuilder::new()
                                        .schema_type(Type::String)
                                        .min_length(Some(1))
                                        .max_length(Some(1024))
                                        .pattern(Some("^[!-~]+$"))
                                        .description(Some(
                                            "Any printable ASCII; pollinate sends a SHA-512 in hex",
                                        )),
                                )
                                .required("challenge")
                                .additional_properties(Some(
                                    utoipa::openapi::schema::AdditionalProperties::FreeForm(false),
                                ))
                                .into(),
                        ),
                    )
                    .required(Some(Required::True))
                    .build(),
            ))
            .response(
                "200",
                ResponseBuilder::new()
                    .description(
                        "Two lines: the hex SHA-512 of the challenge as sent, and 64 bytes of output in hex",
                    )
                    .content("text/plain", content(ObjectBuilder::new().schema_type(Type::String).into()))
                    .build(),
            ),
        &["400", "403", "429", "503"],
    );
    let openapi = OperationBuilder::new()
        .operation_id(Some("getOpenapi"))
        .summary(Some("This document (public, also with auth on)"))
        .response(
            "200",
            ResponseBuilder::new()
                .description("OK")
                .content("application/json", content(ObjectBuilder::new().schema_type(Type::Object).into()))
                .build(),
        )
        .response("503", problem("Service unavailable"));
    let both = |get: OperationBuilder, post: OperationBuilder| {
        utoipa::openapi::path::PathItemBuilder::new()
            .operation(HttpMethod::Get, get.build())
            .operation(HttpMethod::Post, post.build())
            .build()
    };
    let paths = PathsBuilder::new()
        .path("/bits", both(get_bits, post_bits))
        .path("/bytes", both(get_bytes, post_bytes))
        .path("/token", token)
        .path("/nonce", nonce)
        .path("/uuid", uuid)
        .path("/int", int)
        .path("/algorithms", PathItem::new(HttpMethod::Get, algorithms.build()))
        .path("/usage", PathItem::new(HttpMethod::Get, usage.build()))
        .path("/openapi.json", PathItem::new(HttpMethod::Get, openapi.build()))
        .path("/keys", PathItem::new(HttpMethod::Get, keys_operation().build()))
        .path("/verify", PathItem::new(HttpMethod::Post, verify_operation().build()));
    let paths = if serves(Route::Pollen) {
        paths.path("/pollen", PathItem::new(HttpMethod::Post, pollen_op.build()))
    } else {
        paths
    };
    let paths = if beacon { beacon::add(paths) } else { paths };
    let mut components = ComponentsBuilder::new()
        .schema("Problem", Problem::schema())
        .schema("BitsJson", BitsJson::schema())
        .schema("SecretJson", SecretJson::schema())
        .schema("UuidsJson", UuidsJson::schema())
        .schema("IntsJson", IntsJson::schema())
        .schema("Receipt", Receipt::schema())
        .schema("Jwks", Jwks::schema())
        .schema("Jwk", Jwk::schema())
        .schema("Verdict", Verdict::schema())
        .schema("Usage", crate::callers::Usage::schema())
        .schema("PolicyUsage", crate::callers::PolicyUsage::schema())
        .schema("QuotaUsage", crate::callers::QuotaUsage::schema())
        .schema("BucketUsage", crate::callers::BucketUsage::schema())
        .schema("Counters", crate::callers::Counters::schema());
    if auth {
        let mut bearer = Http::new(HttpAuthScheme::Bearer);
        bearer.description = Some("An API key; the server stores only its SHA-256.".into());
        components = components.security_scheme("bearer", SecurityScheme::Http(bearer));
    }
    let (paths, components) = drop_in::add(paths, components, serves(Route::Vault), serves(Route::Kms));
    let mut document = OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("drbgd")
                .version(env!("CARGO_PKG_VERSION"))
                .description(Some(if beacon {
                    "Random bits, bytes, tokens, nonces, UUIDs and integers from sharded, fork-safe, self-testing DRBGs, and a drand-compatible randomness beacon (/beacon). Every response carries Cache-Control: no-store, except the beacon's rounds and chain info: public and the same for every client, they name their own. Limits and algorithms are this server's configuration."
                } else {
                    "Random bits, bytes, tokens, nonces, UUIDs and integers from sharded, fork-safe, self-testing DRBGs. Every response carries Cache-Control: no-store. Limits and algorithms are this server's configuration."
                })),
        )
        .paths(paths)
        .components(Some(components.build()))
        .build();
    // Every admitted route's answers carry the caller's rate-limit fields, successes included.
    for (path, item) in &mut document.paths.paths {
        if PUBLIC_PATHS.contains(&path.as_str()) || path.starts_with(beacon::PREFIX) {
            continue;
        }
        for op in [&mut item.get, &mut item.post].into_iter().flatten() {
            if let Some(utoipa::openapi::RefOr::T(ok)) = op.responses.responses.get_mut("200") {
                *ok = with_rate_limit_fields(std::mem::take(ok));
            }
        }
    }
    document
}

/// `GET /keys`: public, like the contract.
fn keys_operation() -> OperationBuilder {
    OperationBuilder::new()
        .operation_id(Some("getKeys"))
        .summary(Some(
            "The receipts' verification keys: an RFC 8037 JWK set, the signing key first (public, also with auth on)",
        ))
        .response("200", json_response("OK", "application/json", "Jwks"))
        .response("429", peer_limited())
        .response("503", problem("Service unavailable"))
}

/// `POST /verify`: public, like the contract.
fn verify_operation() -> OperationBuilder {
    let receipt = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property(
            "random",
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .description(Some("The receipt's random object, as served (any member order and spacing)")),
        )
        .property(
            "signature",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some("The Ed25519 signature, base64url without padding")),
        )
        .required("random")
        .required("signature")
        .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false)));
    OperationBuilder::new()
        .operation_id(Some("postVerify"))
        .summary(Some(
            "Checks a receipt against the keys in force: 200 with valid true, or false and the reason (public, also with auth on)",
        ))
        .request_body(Some(
            RequestBodyBuilder::new()
                .required(Some(Required::True))
                .content("application/json", content(receipt.into()))
                .build(),
        ))
        .response("200", json_response("The verdict", "application/json", "Verdict"))
        .response("400", problem("Not a receipt (invalid_receipt), or a body that could not be read (invalid_body)"))
        .response("413", problem("Larger than any receipt this server issues (body_too_large)"))
        .response("429", peer_limited())
        .response("503", problem("Service unavailable"))
}

/// A public route's 429: over its address's share (the receipts' routes and the beacon's).
fn peer_limited() -> utoipa::openapi::Response {
    let mut r = problem(
        "Over this address's share of requests without credentials (peer_rate_limited, peer_concurrency_limited); retry after Retry-After seconds",
    );
    r.headers.insert("Retry-After".into(), header("Whole seconds to wait."));
    r
}

/// `GET /openapi.json`: the document rendered at start-up.
pub fn get(state: &crate::state::AppState) -> Response {
    let mut response = state.openapi.clone().into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// What a route's parameters are described with: `n`'s maximum and sentence (`/bits`,
/// `/bytes`), a secret's default size and format (`/token`, `/nonce`).
#[derive(Default)]
struct Context {
    n: Option<(u64, &'static str)>,
    secret: Option<(u64, SecretFormat)>,
}

/// Builds operations for one configuration.
struct Describe<'a> {
    rules: &'a Rules,
    auth: bool,
    /// With receipts served: the most output bytes one covers.
    receipts: Option<u64>,
}

impl Describe<'_> {
    /// An operation, with the bearer scheme and its 401 when auth is on.
    fn op(&self, id: &str, summary: &str) -> OperationBuilder {
        let op = OperationBuilder::new().operation_id(Some(id)).summary(Some(summary));
        if self.auth {
            op.security(SecurityRequirement::new("bearer", Vec::<String>::new()))
                .response("401", problem("A valid bearer API key is required"))
        } else {
            op
        }
    }

    fn errors(&self, mut op: OperationBuilder, codes: &[&str]) -> OperationBuilder {
        for code in codes {
            let response = match *code {
                "400" => problem(
                    "Invalid parameter, n above the configured limit (n_too_large), or a receipt refused (receipts_disabled, receipt_too_large, user_data_too_large, user_data_without_receipt)",
                ),
                "403" => with_rate_limit_fields(problem(
                    "Outside the caller's policy (route_not_allowed, alg_not_allowed, n_not_allowed, pr_not_allowed, receipts_not_allowed), a trusted client certificate naming no caller and no key (unknown_client), or a key and a certificate naming different callers (credentials_conflict)",
                )),
                "429" => {
                    let mut r = with_rate_limit_fields(problem(
                        "Over the caller's quota (rate_limited) or its share of the concurrency limit (concurrency_limited); retry after Retry-After seconds",
                    ));
                    r.headers.insert("Retry-After".into(), header("Whole seconds to wait."));
                    r
                }
                _ => problem(
                    "Unavailable: overloaded, timed out, entropy source down, generator failed or not ready (Retry-After)",
                ),
            };
            op = op.response(*code, response);
        }
        op
    }

    fn param(
        &self,
        name: &str,
        required: bool,
        description: &str,
        schema: Schema,
    ) -> utoipa::openapi::path::Parameter {
        ParameterBuilder::new()
            .name(name)
            .parameter_in(ParameterIn::Query)
            .required(if required { Required::True } else { Required::False })
            .description(Some(description))
            .schema(Some(schema))
            .build()
    }

    fn integer_param(
        &self,
        name: &str,
        required: bool,
        description: &str,
        min: u64,
        max: u64,
        default: Option<u64>,
    ) -> utoipa::openapi::path::Parameter {
        let schema = ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(min as f64))
            .maximum(Some(max as f64))
            .default(default.map(Into::into));
        self.param(name, required, description, schema.into())
    }

    fn enum_param(
        &self,
        name: &str,
        description: &str,
        values: Vec<&'static str>,
    ) -> utoipa::openapi::path::Parameter {
        let schema = ObjectBuilder::new().schema_type(Type::String).enum_values(Some(values));
        self.param(name, false, description, schema.into())
    }

    fn bool_param(&self, name: &str, description: &str) -> utoipa::openapi::path::Parameter {
        self.param(name, false, description, ObjectBuilder::new().schema_type(Type::Boolean).into())
    }

    /// Every name and alias of every enabled algorithm (the server compares them ignoring case).
    fn alg_names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self.rules.enabled.iter().map(|a| a.name()).collect();
        names.extend(self.rules.enabled.iter().flat_map(|a| a.info().aliases.iter().copied()));
        names
    }

    /// The receipt parameters every random-output route takes, when receipts are served.
    fn receipt_params(&self) -> &'static [Param] {
        if self.receipts.is_some() { params::RECEIPT } else { &[] }
    }

    /// The query parameters of a route, `list` (its handler's own) and the receipt's,
    /// described for `context`.
    fn query(&self, list: &[Param], context: &Context) -> Vec<utoipa::openapi::path::Parameter> {
        list.iter().chain(self.receipt_params()).map(|&p| self.describe(p, context)).collect()
    }

    /// A route's POST body: the members of `list` (and the receipt's), each of its JSON type;
    /// `n`, `min` and `max` required, no other member.
    fn body(&self, list: &[Param], context: &Context) -> utoipa::openapi::request_body::RequestBody {
        let mut body = ObjectBuilder::new().schema_type(Type::Object);
        for &param in list.iter().chain(self.receipt_params()) {
            body = body.property(param.name(), self.member(param, context));
        }
        for &param in list.iter().filter(|p| matches!(p, Param::N | Param::Min | Param::Max)) {
            body = body.required(param.name());
        }
        let body =
            body.additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false)));
        RequestBodyBuilder::new()
            .required(Some(Required::True))
            .content("application/json", content(body.into()))
            .build()
    }

    /// A body member's schema: the query parameter's, but for the integers' bounds, which may
    /// also be strings of decimal digits (a bound beyond 2^53 that a client's JSON numbers
    /// cannot carry).
    fn member(&self, param: Param, context: &Context) -> utoipa::openapi::RefOr<Schema> {
        match param {
            Param::Min | Param::Max => OneOfBuilder::new()
                .item(
                    ObjectBuilder::new()
                        .schema_type(Type::Integer)
                        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64))),
                )
                .item(ObjectBuilder::new().schema_type(Type::String).pattern(Some("^-?[0-9]+$")))
                .description(Some(if param == Param::Min {
                    "Lower bound (inclusive): an integer, or a string of decimal digits."
                } else {
                    "Upper bound (inclusive), at least min: an integer, or a string of decimal digits."
                }))
                .into(),
            _ => self.describe(param, context).schema.unwrap_or_else(|| ObjectBuilder::new().into()),
        }
    }

    /// The JSON answer of a route: `schema`, or with receipts served also a [`Receipt`].
    fn json_or_receipt(&self, schema: &str) -> utoipa::openapi::RefOr<Schema> {
        match self.receipts {
            Some(_) => OneOfBuilder::new()
                .item(Ref::from_schema_name(schema))
                .item(Ref::from_schema_name("Receipt"))
                .into(),
            None => Ref::from_schema_name(schema).into(),
        }
    }

    fn describe(&self, param: Param, context: &Context) -> utoipa::openapi::path::Parameter {
        let (name, rules) = (param.name(), self.rules);
        let int64 = || -> Schema {
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                .into()
        };
        match (param, context.secret) {
            (Param::N, _) => {
                let (max, doc) = context.n.unwrap_or((rules.max_bits, "Number of bits."));
                self.integer_param(name, true, doc, 1, max, None)
            }
            (Param::Alg, _) => self.alg_param(),
            (Param::Format, None) => self.enum_param(
                name,
                "Output encoding; absent: chosen from Accept, else hex.",
                Encoding::ALL.map(Encoding::name).to_vec(),
            ),
            (Param::Format, Some((_, default))) => {
                let mut formats = SecretFormat::ALL.map(SecretFormat::name).to_vec();
                formats.sort_by_key(|f| *f != default.name());
                self.enum_param(name, &format!("Encoding (default {}).", default.name()), formats)
            }
            (Param::Pr, _) => {
                self.bool_param(name, "Prediction resistance: reseed from the OS before generating.")
            }
            (Param::Bytes, secret) => {
                let default = secret.map(|(bytes, _)| bytes);
                self.integer_param(name, false, "Random bytes.", 1, rules.max_token_bytes, default)
            }
            (Param::Count, _) => {
                self.integer_param(name, false, "How many.", 1, rules.max_count, Some(DEFAULT_COUNT))
            }
            (Param::Version, _) => self.param(
                name,
                false,
                "4 (random) or 7 (Unix time + random).",
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .enum_values(Some([4, 7]))
                    .default(Some(DEFAULT_UUID_VERSION.into()))
                    .into(),
            ),
            (Param::Min, _) => self.param(name, true, "Lower bound (inclusive).", int64()),
            (Param::Max, _) => self.param(
                name,
                true,
                "Upper bound (inclusive); at least min (else 400 invalid_range).",
                int64(),
            ),
            (Param::Receipt, _) => self.bool_param(
                name,
                &format!(
                    "Answer a signed receipt instead (application/json: random, signature; see /keys, /verify); \
                     output of at most {} bytes.",
                    self.receipts.unwrap_or_default()
                ),
            ),
            (Param::UserData, _) => self.param(
                name,
                false,
                "Your own string in the receipt: at most 1024 bytes of UTF-8, with receipt=true only.",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .max_length(Some(crate::receipts::USER_DATA_MAX))
                    .into(),
            ),
        }
    }

    fn alg_param(&self) -> utoipa::openapi::path::Parameter {
        let approved: Vec<&str> =
            self.rules.enabled.iter().filter(|a| a.approved()).map(|a| a.name()).collect();
        let mode =
            if self.rules.approved_only { " This server serves approved mechanisms only." } else { "" };
        let description = format!(
            "Generator (any case); default {}. NIST SP 800-90A (approved): {}; the others are not approved \
             (GET /algorithms: `approved`).{mode}",
            self.rules.default_alg.name(),
            if approved.is_empty() { "none enabled".to_owned() } else { approved.join(", ") },
        );
        let schema = ObjectBuilder::new().schema_type(Type::String).enum_values(Some(self.alg_names()));
        self.param(Param::Alg.name(), false, &description, schema.into())
    }

    fn text_or_json(&self, schema: &str) -> utoipa::openapi::Response {
        ResponseBuilder::new()
            .description("OK: one value per line, or JSON with Accept: application/json (or a receipt)")
            .content("text/plain", content(string_schema()))
            .content("application/json", content(self.json_or_receipt(schema)))
            .build()
    }
}

/// A response header described by `description` (a string).
fn header(description: &str) -> utoipa::openapi::header::Header {
    utoipa::openapi::header::HeaderBuilder::new()
        .schema(ObjectBuilder::new().schema_type(Type::String))
        .description(Some(description))
        .build()
}

/// `response` with the draft-ietf-httpapi-ratelimit-headers-09 fields (sent to callers with a
/// rate quota).
fn with_rate_limit_fields(mut response: utoipa::openapi::Response) -> utoipa::openapi::Response {
    response.headers.insert(
        "RateLimit-Policy".into(),
        header("The caller's quota policies, e.g. \"requests\";q=50;w=1;qu=\"requests\";drbgd-burst=10 (callers with a rate quota)."),
    );
    response.headers.insert(
        "RateLimit".into(),
        header("What is left now, e.g. \"requests\";r=7;t=1 (callers with a rate quota)."),
    );
    response
}

fn problem(description: &str) -> utoipa::openapi::Response {
    json_response(description, "application/problem+json", "Problem")
}

/// A response of `media`, its body the component schema named `schema`.
fn json_response(description: &str, media: &str, schema: &str) -> utoipa::openapi::Response {
    ResponseBuilder::new()
        .description(description)
        .content(media, content(Ref::from_schema_name(schema).into()))
        .build()
}

fn content(schema: utoipa::openapi::RefOr<Schema>) -> utoipa::openapi::Content {
    ContentBuilder::new().schema(Some(schema)).build()
}

fn string_schema() -> utoipa::openapi::RefOr<Schema> {
    ObjectBuilder::new().schema_type(Type::String).into()
}

fn binary_schema() -> utoipa::openapi::RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
        .into()
}
