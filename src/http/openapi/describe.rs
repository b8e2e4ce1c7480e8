//! The pieces every operation of the OpenAPI document is built from: [`Describe`] (one
//! endpoint's operations under one configuration: its parameters, bodies, answers, errors and
//! security), and the shared responses and schemas. The operations themselves are written
//! beside their handlers, and named by their rows of the table (`http.rs`).

use utoipa::openapi::path::{HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn, PathItemBuilder};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{ContentBuilder, OneOfBuilder, PathItem, Ref, Required, ResponseBuilder, Schema};

use crate::pipeline::Describe;
use crate::pipeline::params::{self, Param};
use crate::service::request::{DEFAULT_COUNT, DEFAULT_UUID_VERSION};
use crate::service::{Encoding, SecretFormat};

/// What a route's parameters are described with: `n`'s maximum and sentence (`/bits`,
/// `/bytes`), a secret's default size and format (`/token`, `/nonce`), `count`'s default and
/// sentence where they are not [`DEFAULT_COUNT`] and "How many.".
#[derive(Default)]
pub(crate) struct Context {
    /// `n`'s maximum and sentence.
    pub(crate) n: Option<(u64, &'static str)>,
    /// A secret's default size and format.
    pub(crate) secret: Option<(u64, SecretFormat)>,
    /// `count`'s default (none: none to show) and sentence.
    pub(crate) count: Option<(Option<u64>, &'static str)>,
}

/// The builders of an endpoint's operations for one configuration (the pipeline's
/// [`Describe`] holds what the document shows of the endpoint under it; the builders are the
/// document's, so they are written here).
impl Describe<'_> {
    /// An operation, with the bearer scheme and its 401 when auth is on.
    pub(crate) fn op(&self, id: &str, summary: &str) -> OperationBuilder {
        let op = OperationBuilder::new().operation_id(Some(id)).summary(Some(summary));
        if self.auth {
            op.security(SecurityRequirement::new("bearer", Vec::<String>::new()))
                .response("401", problem("A valid bearer API key is required"))
        } else {
            op
        }
    }

    /// `op` with the problem+json responses of `codes` (400, 403, 429, 503).
    pub(crate) fn errors(&self, mut op: OperationBuilder, codes: &[&str]) -> OperationBuilder {
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
    /// described for `context` (a ticket is a POST's: not in a query).
    pub(crate) fn query(&self, list: &[Param], context: &Context) -> Vec<utoipa::openapi::path::Parameter> {
        let receipt = self.receipt_params().iter().filter(|p| **p != Param::Ticket);
        list.iter().chain(receipt).map(|&p| self.describe(p, context)).collect()
    }

    /// A route's POST body: the members of `list` (and the receipt's), each of its JSON type;
    /// `n`, `min` and `max` required, no other member.
    pub(crate) fn body(
        &self,
        list: &[Param],
        context: &Context,
    ) -> utoipa::openapi::request_body::RequestBody {
        let mut body = ObjectBuilder::new().schema_type(Type::Object);
        let receipt = self.receipt_params().iter().filter(|p| **p != Param::Ticket || self.tickets);
        for &param in list.iter().chain(receipt) {
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
    pub(crate) fn json_or_receipt(&self, schema: &str) -> utoipa::openapi::RefOr<Schema> {
        match self.receipts {
            Some(_) => OneOfBuilder::new()
                .item(Ref::from_schema_name(schema))
                .item(Ref::from_schema_name("Receipt"))
                .into(),
            None => Ref::from_schema_name(schema).into(),
        }
    }

    /// A parameter of the tickets' own routes (`/tickets`).
    fn describe_tickets_param(&self, param: Param) -> utoipa::openapi::path::Parameter {
        let name = param.name();
        match param {
            Param::ShowResult => {
                self.bool_param(name, "Whether anyone may see the tickets' results once used.")
            }
            Param::Type => self.enum_param(
                name,
                "The tickets' place in their chains.",
                vec!["singleton", "head", "tail"],
            ),
            Param::After => self.param(
                name,
                false,
                "The id this page starts after.",
                ObjectBuilder::new().schema_type(Type::String).into(),
            ),
            Param::Limit => self.integer_param(
                name,
                false,
                "Most tickets on the page.",
                1,
                u64::from(crate::tickets::MAX_PER_PAGE),
                Some(100),
            ),
            _ => self.param(name, false, "", ObjectBuilder::new().into()),
        }
    }

    /// `param` as a query parameter, with no route's context.
    pub(crate) fn describe_param(&self, param: Param) -> utoipa::openapi::path::Parameter {
        self.describe(param, &Context::default())
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
                let (default, doc) = context.count.unwrap_or((Some(DEFAULT_COUNT), "How many."));
                self.integer_param(name, false, doc, 1, rules.max_count, default)
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
            (Param::ShowResult | Param::Type | Param::After | Param::Limit | Param::Round | Param::Label, _) => {
                self.describe_tickets_param(param)
            }
            (Param::Ticket, _) => self.param(
                name,
                false,
                "A ticket of yours (POST /tickets), used once by this draw: its receipt names it, and the same request again answers the same receipt (a POST's body member only).",
                ObjectBuilder::new().schema_type(Type::String).pattern(Some("^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")).into(),
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

    /// A 200 of one value per line, or `schema` (or a receipt) as JSON.
    pub(crate) fn text_or_json(&self, schema: &str) -> utoipa::openapi::Response {
        ResponseBuilder::new()
            .description("OK: one value per line, or JSON with Accept: application/json (or a receipt)")
            .content("text/plain", content(string_schema()))
            .content("application/json", content(self.json_or_receipt(schema)))
            .build()
    }
}

/// A response header described by `description` (a string).
pub(crate) fn header(description: &str) -> utoipa::openapi::header::Header {
    utoipa::openapi::header::HeaderBuilder::new()
        .schema(ObjectBuilder::new().schema_type(Type::String))
        .description(Some(description))
        .build()
}

/// `response` with the draft-ietf-httpapi-ratelimit-headers-09 fields (sent to callers with a
/// rate quota).
pub(crate) fn with_rate_limit_fields(mut response: utoipa::openapi::Response) -> utoipa::openapi::Response {
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

/// A problem+json response.
pub(crate) fn problem(description: &str) -> utoipa::openapi::Response {
    json_response(description, "application/problem+json", "Problem")
}

/// A response of `media`, its body the component schema named `schema`.
pub(crate) fn json_response(description: &str, media: &str, schema: &str) -> utoipa::openapi::Response {
    ResponseBuilder::new()
        .description(description)
        .content(media, content(Ref::from_schema_name(schema).into()))
        .build()
}

/// Content of `schema`.
pub(crate) fn content(schema: utoipa::openapi::RefOr<Schema>) -> utoipa::openapi::Content {
    ContentBuilder::new().schema(Some(schema)).build()
}

/// A string.
pub(crate) fn string_schema() -> utoipa::openapi::RefOr<Schema> {
    ObjectBuilder::new().schema_type(Type::String).into()
}

/// Bytes.
pub(crate) fn binary_schema() -> utoipa::openapi::RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
        .into()
}

/// A public route's 429: over its address's share (the receipts' routes and the beacon's).
pub(crate) fn peer_limited() -> utoipa::openapi::Response {
    let mut r = problem(
        "Over this address's share of requests without credentials (peer_rate_limited, peer_concurrency_limited); retry after Retry-After seconds",
    );
    r.headers.insert("Retry-After".into(), header("Whole seconds to wait."));
    r
}

/// The errors of every random-output operation.
pub(crate) const RANDOM_ERRORS: &[&str] = &["400", "403", "429", "503"];

/// The errors of every metadata operation.
pub(crate) const METADATA_ERRORS: &[&str] = &["403", "429", "503"];

/// A path item of a GET and a POST; with tickets served on the endpoint (`d.tickets`), the
/// POST's answers to a draw under a ticket too.
pub(crate) fn get_and_post(d: &Describe<'_>, get: OperationBuilder, mut post: OperationBuilder) -> PathItem {
    if d.tickets {
        post = post
            .response("404", problem("No such ticket (ticket_not_found)"))
            .response("409", problem("The ticket was used by another request (ticket_used; the detail names its serial), or is bound to a round for another draw (ticket_bound_elsewhere, ticket_bound_to_other_params)"))
            .response(
                "425",
                problem("The ticket is bound to a beacon round not out yet (too_early, with Retry-After): its draw is due then"),
            )
            .response(
                "410",
                problem("The ticket expired unused (ticket_expired), or its kept result passed its retention (result_expired)"),
            )
            .response(
                "503",
                problem("Unavailable: as for every draw, or the tickets' store unavailable (store_unavailable: nothing kept, the ticket unused), full (store_full), or not saying whether this draw was kept (store_outcome_unknown: send the same request again), or the followed drand network behind a bound ticket's round (beacon_unavailable)"),
            );
    }
    PathItemBuilder::new()
        .operation(HttpMethod::Get, get.build())
        .operation(HttpMethod::Post, post.build())
        .build()
}

/// A 200 of a JSON body of `schema`.
pub(crate) fn json_ok(
    schema: impl Into<utoipa::openapi::RefOr<utoipa::openapi::Schema>>,
) -> utoipa::openapi::Response {
    ResponseBuilder::new().description("OK").content("application/json", content(schema.into())).build()
}

/// A string schema described by `description`.
pub(crate) fn described_string(description: &str) -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String).description(Some(description))
}
