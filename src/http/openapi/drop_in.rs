//! The drop-in front-ends' operations in the OpenAPI document (each registry row's `openapi`
//! column; documented for those the configuration serves): Vault's random paths (token in
//! `X-Vault-Token`) and KMS `GenerateRandom` (signed with AWS SigV4, which OpenAPI cannot
//! express beyond naming the header), with the schemas and security schemes they name. Their
//! errors are their services' own shapes, not problem+json. `/pollen` is described with the
//! native routes.

use utoipa::openapi::path::{HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn, PathItemBuilder};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{Components, PathItem, Required};

use super::describe::{Describe, content, json_response};
use crate::http::{kms, vault};

fn string(description: &str) -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String).description(Some(description))
}

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
                    .maximum(Some(vault::MAX_BYTES))
                    .default(Some(32.into()))
                    .description(Some("Random bytes to return")),
            )
            .property(
                "format",
                string("Encoding of random_bytes")
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

/// KMS's `POST /`.
pub(crate) fn kms(_: &Describe<'_>, components: &mut Components) -> PathItem {
    kms_components(components);
    let body = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property(
            "NumberOfBytes",
            ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1)).maximum(Some(kms::MAX_BYTES)),
        )
        .required("NumberOfBytes");
    let target = ParameterBuilder::new()
        .name("X-Amz-Target")
        .parameter_in(ParameterIn::Header)
        .required(Required::True)
        .schema(Some(string("The operation").enum_values(Some(["TrentService.GenerateRandom"]))))
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

/// The schemas and security scheme Vault's operations name.
fn vault_components(components: &mut Components) {
    let data =
        ObjectBuilder::new().schema_type(Type::Object).property("random_bytes", string("hex or base64"));
    let random = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("data", data)
        .property(
            "warnings",
            utoipa::openapi::schema::ArrayBuilder::new()
                .schema_type(utoipa::openapi::schema::SchemaType::from_iter([Type::Array, Type::Null]))
                .items(string("")),
        )
        .property("request_id", string(""))
        .property("lease_id", string(""))
        .required("data");
    let errors = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("errors", utoipa::openapi::schema::ArrayBuilder::new().items(string("")))
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

/// The schemas and security scheme KMS's operation names.
fn kms_components(components: &mut Components) {
    let random = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("Plaintext", string("base64"))
        .required("Plaintext");
    let error = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("__type", string("The exception"))
        .property("message", string(""))
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
