//! The operations of drbgd's own endpoints (each registry row's `openapi` column): the
//! random-output routes (GET with a query, POST with the same parameters as a JSON body),
//! the metadata, the contract, the receipts' keys and verifier, and `/pollen`.

use utoipa::openapi::path::{HttpMethod, OperationBuilder, PathItemBuilder};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{Components, PathItem, Ref, Required, ResponseBuilder};

use super::describe::{
    Context, Describe, binary_schema, content, json_response, peer_limited, problem, string_schema,
};
use crate::http::params::{self, Param};
use crate::service::SecretFormat;
use crate::service::request::{
    DEFAULT_NONCE_BYTES, DEFAULT_NONCE_FORMAT, DEFAULT_TOKEN_BYTES, DEFAULT_TOKEN_FORMAT,
};

/// The errors of every random-output operation.
const RANDOM_ERRORS: &[&str] = &["400", "403", "429", "503"];

/// The errors of every metadata operation.
const METADATA_ERRORS: &[&str] = &["403", "429", "503"];

/// `/bits`: GET and POST.
pub(crate) fn bits(d: &Describe<'_>, _: &mut Components) -> PathItem {
    let context = Context { n: Some((d.rules.max_bits, "Number of bits.")), ..Context::default() };
    packed(
        d,
        "Bits",
        ["n random bits (packed MSB-first)", "n random bits, parameters in a JSON body"],
        &context,
    )
}

/// `/bytes`: GET and POST.
pub(crate) fn bytes(d: &Describe<'_>, _: &mut Components) -> PathItem {
    let context = Context { n: Some((d.rules.max_bits / 8, "Number of bytes.")), ..Context::default() };
    packed(d, "Bytes", ["n random bytes", "n random bytes, parameters in a JSON body"], &context)
}

/// `/bits` or `/bytes` (`get{id}`, `post{id}`, each with its summary): the output in any
/// encoding, or a receipt.
fn packed(d: &Describe<'_>, id: &str, [get, post]: [&str; 2], context: &Context) -> PathItem {
    let responses = |op: OperationBuilder| {
        let ok = ResponseBuilder::new()
            .description("OK; streamed above the configured threshold")
            .content("text/plain", content(string_schema()))
            .content("application/octet-stream", content(binary_schema()))
            .content("application/json", content(d.json_or_receipt("BitsJson")));
        d.errors(op.response("200", ok.build()), RANDOM_ERRORS)
    };
    let get = responses(d.op(&format!("get{id}"), get).parameters(Some(d.query(params::BITS, context))));
    let post = responses(d.op(&format!("post{id}"), post).request_body(Some(d.body(params::BITS, context))));
    get_and_post(get, post)
}

/// `/token`: GET and POST.
pub(crate) fn token(d: &Describe<'_>, _: &mut Components) -> PathItem {
    let context = secret(DEFAULT_TOKEN_BYTES, DEFAULT_TOKEN_FORMAT);
    values(d, "Token", "A token for sessions, API keys, CSRF", params::SECRET, &context, "SecretJson")
}

/// `/nonce`: GET and POST.
pub(crate) fn nonce(d: &Describe<'_>, _: &mut Components) -> PathItem {
    let context = secret(DEFAULT_NONCE_BYTES, DEFAULT_NONCE_FORMAT);
    let summary = "A nonce (12 bytes for AES-GCM/ChaCha20-Poly1305, 24 for XChaCha)";
    values(d, "Nonce", summary, params::SECRET, &context, "SecretJson")
}

/// `/uuid`: GET and POST.
pub(crate) fn uuid(d: &Describe<'_>, _: &mut Components) -> PathItem {
    values(d, "Uuids", "RFC 9562 UUIDs", params::UUID, &Context::default(), "UuidsJson")
}

/// `/int`: GET and POST.
pub(crate) fn int(d: &Describe<'_>, _: &mut Components) -> PathItem {
    let summary = "Uniform integers in [min, max] without modulo bias";
    values(d, "Ints", summary, params::INT, &Context::default(), "IntsJson")
}

/// The parameters' context of a secret (`/token`, `/nonce`): its default size and format.
fn secret(default_bytes: u64, default_format: SecretFormat) -> Context {
    Context { secret: Some((default_bytes, default_format)), ..Context::default() }
}

/// A small-value route's GET and POST (`get{id}`, `post{id}`): the same parameters, `list`
/// described for `context`, in the query or a JSON body; the values as text or as `schema`.
fn values(
    d: &Describe<'_>,
    id: &str,
    summary: &str,
    list: &[Param],
    context: &Context,
    schema: &str,
) -> PathItem {
    let ok = |op: OperationBuilder| d.errors(op.response("200", d.text_or_json(schema)), RANDOM_ERRORS);
    let get = ok(d.op(&format!("get{id}"), summary).parameters(Some(d.query(list, context))));
    let post = ok(d
        .op(&format!("post{id}"), &format!("{summary}, parameters in a JSON body"))
        .request_body(Some(d.body(list, context))));
    get_and_post(get, post)
}

/// A path item of a GET and a POST.
fn get_and_post(get: OperationBuilder, post: OperationBuilder) -> PathItem {
    PathItemBuilder::new()
        .operation(HttpMethod::Get, get.build())
        .operation(HttpMethod::Post, post.build())
        .build()
}

/// A 200 of a JSON body of `schema`.
fn json_ok(schema: impl Into<utoipa::openapi::RefOr<utoipa::openapi::Schema>>) -> utoipa::openapi::Response {
    ResponseBuilder::new().description("OK").content("application/json", content(schema.into())).build()
}

/// `GET /algorithms`.
pub(crate) fn algorithms(d: &Describe<'_>, _: &mut Components) -> PathItem {
    let op = d.op("getAlgorithms", "The generators and their settings");
    let op = d
        .errors(op.response("200", json_ok(ObjectBuilder::new().schema_type(Type::Object))), METADATA_ERRORS);
    PathItem::new(HttpMethod::Get, op.build())
}

/// `GET /usage`.
pub(crate) fn usage(d: &Describe<'_>, _: &mut Components) -> PathItem {
    let op = d.op("getUsage", "The calling caller's policy, remaining quota and counters (this instance)");
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

/// `POST /pollen`.
pub(crate) fn pollen(d: &Describe<'_>, _: &mut Components) -> PathItem {
    let op = d.errors(
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
        RANDOM_ERRORS,
    );
    PathItem::new(HttpMethod::Post, op.build())
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

/// `GET /keys`: public, like the contract.
pub(crate) fn keys(_: &Describe<'_>, _: &mut Components) -> PathItem {
    let op = OperationBuilder::new()
        .operation_id(Some("getKeys"))
        .summary(Some(
            "The receipts' verification keys: an RFC 8037 JWK set, the signing key first (public, also with auth on)",
        ))
        .response("200", json_response("OK", "application/json", "Jwks"))
        .response("429", peer_limited())
        .response("503", problem("Service unavailable"));
    PathItem::new(HttpMethod::Get, op.build())
}

/// `POST /verify`: public, like the contract. The body's shape is what the server reads
/// (`receipts::verify::receipt_shape`: three levels deep, 64 members an object): `random`'s
/// members are scalars, lists of scalars or objects of scalars. (The bound on all the values
/// together, lists' items included, is not a schema's to say; the body's size bounds it too.)
pub(crate) fn verify(_: &Describe<'_>, _: &mut Components) -> PathItem {
    use utoipa::openapi::schema::{AdditionalProperties, ArrayBuilder, OneOfBuilder, Schema, SchemaType};
    let scalar = || -> Schema {
        let types = SchemaType::from_iter([Type::String, Type::Number, Type::Boolean, Type::Null]);
        ObjectBuilder::new().schema_type(types).into()
    };
    let of_scalars = AdditionalProperties::RefOr(utoipa::openapi::RefOr::T(scalar()));
    let object_of_scalars = ObjectBuilder::new()
        .schema_type(Type::Object)
        .max_properties(Some(64))
        .additional_properties(Some(of_scalars));
    let member = OneOfBuilder::new()
        .item(scalar())
        .item(ArrayBuilder::new().items(utoipa::openapi::RefOr::T(scalar())))
        .item(object_of_scalars);
    let receipt = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property(
            "random",
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .max_properties(Some(64))
                .additional_properties(Some(AdditionalProperties::RefOr(utoipa::openapi::RefOr::T(
                    member.into(),
                ))))
                .description(Some(
                    "The receipt's random object, as served (any member order and spacing): at most 64 \
                     members, each a string, number, boolean or null, or a list or object of them",
                )),
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
    let op = OperationBuilder::new()
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
        .response("503", problem("Service unavailable"));
    PathItem::new(HttpMethod::Post, op.build())
}
