//! Tickets over HTTP (with `[tickets] enabled`; what a ticket is and proves: [`crate::tickets`],
//! docs/tickets.md):
//!
//! - `POST /tickets` `{"n": 1..50, "show_result": false}`: new tickets (201); each counts as
//!   one request of the caller's quota; a cap on the unused ones a caller holds. With `"round"`,
//!   `"label"` and `"draw"`, one ticket bound to a beacon round ([`bound`]).
//! - `GET /tickets?type=singleton|head|tail&after=&limit=`: the caller's own, by id, a page at a
//!   time.
//! - `GET /tickets/{id}`: anyone's (public, per-peer limits): the ticket, when it was used, and
//!   its answer once shown or revealed; the caller as a hash, never by name.
//! - `POST /tickets/{id}/reveal`: the caller reveals a used ticket and its predecessors.
//! - `GET /results/{serial}`: a ticketed draw's kept answer, to its caller, byte for byte.
//!
//! And the draw that uses a ticket ([`draw`]): a random endpoint's POST with `"ticket"` in its
//! body. The same request again (the same digest: [`crate::tickets::request_digest`]) answers
//! the stored answer byte for byte, any other use is 409 `ticket_used`; the answer is committed
//! before it is sent, and a store that cannot commit is 503 `store_unavailable` with the ticket
//! left unused.

pub mod bound;
pub mod calls;

use axum::Json;
use axum::body::Body;
use axum::extract::{Extension, Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use serde::Serialize;

use super::body::json_body;
use crate::callers::Admission;
use crate::error::ApiError;
use crate::pipeline::params::{Accept, Param, Params};
use crate::pipeline::{self, Answer, Endpoint, RandomFn};
use crate::state::AppState;
use crate::tickets::Ticket;
pub use calls::NEXT_TICKET;

/// The draw of a random endpoint's POST that names a ticket: the ticket held (concurrent uses of
/// it wait) and resolved, the endpoint's own answer drawn with a receipt naming it, kept with
/// the ticket's use in one commit, then sent.
pub async fn draw(
    endpoint: &'static Endpoint,
    respond: RandomFn,
    state: &AppState,
    admission: &Admission,
    accept: Accept<'_>,
    params: Params<'static>,
) -> Answer {
    calls::use_ticket(endpoint, respond, state, admission, accept, params).await.unwrap_or_else(Answer::from)
}

/// `/tickets`: `POST` creates, `GET` lists.
pub fn router() -> MethodRouter<AppState> {
    axum::routing::post(create).get(list)
}

/// `/tickets/{id}`: `GET`, public.
pub fn ticket_router() -> MethodRouter<AppState> {
    axum::routing::get(show)
}

/// `/tickets/{id}/reveal`: `POST`.
pub fn reveal_router() -> MethodRouter<AppState> {
    axum::routing::post(reveal)
}

/// `/results/{serial}`: `GET`.
pub fn result_router() -> MethodRouter<AppState> {
    axum::routing::get(result)
}

/// `POST /tickets` `{"n": 1..50, "show_result": false}`: 201 `{"tickets": [...]}`.
async fn create(
    State(state): State<AppState>,
    Extension(admission): Extension<Admission>,
    body: Body,
) -> Result<Response, ApiError> {
    let mut body = json_body(body).await?;
    // The draw new tickets are bound to: an object of its own (its parameters' names are the
    // endpoint's, `n` among them).
    let draw = body.as_object_mut().and_then(|members| members.remove("draw"));
    let params = Params::from_json(&body)?;
    params.allow_only(crate::pipeline::params::TICKETS)?;
    let n = params.u64(Param::N)?.unwrap_or(1);
    let bind = match (params.u64(Param::Round)?, &draw, params.get(Param::Label)) {
        (Some(round), Some(draw), label) => Some(bound::Bind { round, draw, label }),
        (None, None, None) => None,
        (Some(_), None, _) => {
            return Err(ApiError::invalid(
                "invalid_draw",
                "draw",
                "a ticket bound to a round names its draw",
            ));
        }
        (None, _, _) => {
            return Err(ApiError::invalid(
                "invalid_round",
                "round",
                "a ticket's draw and label are bound to a round",
            ));
        }
    };
    let created = calls::create(&state, &admission, n, params.flag(Param::ShowResult)?, bind).await?;
    // One caller's tickets: its hash made once.
    let hash = calls::of(&state)?.caller_hash(admission.caller.name());
    let views: Vec<View> = created.iter().map(|t| View::of(&hash, t)).collect();
    Ok((StatusCode::CREATED, Json(Page { tickets: views, next_after: None })).into_response())
}

/// `GET /tickets?type=&after=&limit=`: the caller's tickets of one kind, a page.
async fn list(
    State(state): State<AppState>,
    Extension(admission): Extension<Admission>,
    request: Request,
) -> Result<Response, ApiError> {
    let (parts, _) = request.into_parts();
    let params = Params::of(&parts)?;
    params.allow_only(&[Param::Type, Param::After, Param::Limit])?;
    let kind = params.get(Param::Type).unwrap_or("singleton");
    let (after, limit) = (params.get(Param::After).unwrap_or(""), params.u64(Param::Limit)?.unwrap_or(100));
    let (page, next_after) = calls::list(&state, &admission, kind, after, limit).await?;
    let hash = calls::of(&state)?.caller_hash(admission.caller.name());
    let views = page.iter().map(|t| View::of(&hash, t)).collect();
    Ok(Json(Page { tickets: views, next_after }).into_response())
}

/// `GET /tickets/{id}`: public. The ticket, and its answer (`result`: null while unused) when
/// shown or revealed; no `result` member when hidden.
async fn show(State(state): State<AppState>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let ticket = calls::show(&state, &id).await?;
    let hash = calls::of(&state)?.caller_hash(&ticket.caller);
    let mut view = View::of(&hash, &ticket);
    // A bound ticket's commitment names its caller and its draw, its round when the draw is
    // due: shown as its result is.
    if !ticket.shows_result() {
        view.commitment = None;
        view.round = None;
    }
    Ok(json_with_result(&view, &ticket))
}

/// `POST /tickets/{id}/reveal`: `{"revealed": n}`.
async fn reveal(
    State(state): State<AppState>,
    Extension(admission): Extension<Admission>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let revealed = calls::reveal(&state, &admission, &id).await?;
    Ok(Json(serde_json::json!({ "revealed": revealed })).into_response())
}

/// `GET /results/{serial}`: the kept answer, byte for byte, to its caller.
async fn result(
    State(state): State<AppState>,
    Extension(admission): Extension<Admission>,
    Path(serial): Path<String>,
) -> Result<Response, ApiError> {
    let body = calls::result(&state, &admission, &serial).await?;
    Ok(pipeline::response(Body::from(body), "application/json"))
}

/// A page of tickets.
#[derive(Serialize)]
struct Page {
    tickets: Vec<View>,
    /// The `after` of the next page, when this one is full.
    next_after: Option<String>,
}

/// A ticket as shown (RANDOM.ORG's fields, in this API's names; times RFC 3339 UTC).
#[derive(Serialize)]
struct View {
    ticket_id: String,
    caller_hash: String,
    show_result: bool,
    revealed: bool,
    created_at: String,
    expires_at: Option<String>,
    used_at: Option<String>,
    serial: Option<String>,
    previous_ticket: Option<String>,
    next_ticket: Option<String>,
    /// The beacon round its draw is bound to, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    round: Option<u64>,
    /// Its signed commitment (a bound ticket's), as signed: `{"random": ..., "signature": ...}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    commitment: Option<Box<serde_json::value::RawValue>>,
}

impl View {
    /// Ticket `t`, its caller shown as `caller_hash` ([`crate::tickets::Tickets::caller_hash`]).
    fn of(caller_hash: &str, t: &Ticket) -> View {
        let time = |ms: i64| crate::receipts::sign::rfc3339_millis(u64::try_from(ms).unwrap_or(0));
        View {
            ticket_id: t.id.clone(),
            caller_hash: caller_hash.to_owned(),
            show_result: t.show_result,
            revealed: t.revealed,
            created_at: time(t.created_ms),
            expires_at: t.expires_ms.map(time),
            used_at: t.used_ms.map(time),
            serial: t.serial.clone(),
            previous_ticket: t.previous_id.clone(),
            next_ticket: t.next_id.clone(),
            round: t.bound.as_ref().map(|b| b.round),
            commitment: t.bound.as_ref().and_then(|b| {
                let text = String::from_utf8(b.commitment.clone()).ok()?;
                serde_json::value::RawValue::from_string(text).ok()
            }),
        }
    }
}

/// `view` as JSON, with a `result` member when the ticket shows it: its stored answer as it was
/// sent (byte for byte, so that its receipt verifies as served), or null while unused; and
/// `result_expired: true` for a used ticket whose result was swept past its retention.
fn json_with_result(view: &View, ticket: &Ticket) -> Response {
    let mut body = serde_json::to_vec(view).unwrap_or_default();
    if ticket.shows_result() && body.last() == Some(&b'}') {
        body.pop();
        body.extend_from_slice(b",\"result\":");
        match &ticket.result {
            Some(result) => body.extend_from_slice(result),
            None => body.extend_from_slice(b"null"),
        }
        if ticket.used_ms.is_some() && ticket.result.is_none() {
            body.extend_from_slice(b",\"result_expired\":true");
        }
        body.push(b'}');
    }
    pipeline::response(Body::from(body), "application/json")
}

/// The OpenAPI operations of the tickets' routes: each row's `doc` column (`http.rs`).
pub(crate) mod doc {
    use utoipa::openapi::path::{
        HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn, PathItemBuilder,
    };
    use utoipa::openapi::request_body::RequestBodyBuilder;
    use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Type};
    use utoipa::openapi::{Components, PathItem, Required, ResponseBuilder};

    use crate::http::openapi::describe::{content, peer_limited, problem};
    use crate::pipeline::Describe;

    /// An object of any members, described.
    fn object(description: &str) -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        ObjectBuilder::new().schema_type(Type::Object).description(Some(description)).into()
    }

    /// A JSON answer of `description`.
    fn json(description: &str) -> utoipa::openapi::Response {
        ResponseBuilder::new()
            .description(description)
            .content("application/json", content(object(description)))
            .build()
    }

    /// A path parameter `name`.
    fn in_path(name: &str, description: &str) -> utoipa::openapi::path::Parameter {
        ParameterBuilder::new()
            .name(name)
            .parameter_in(ParameterIn::Path)
            .required(Required::True)
            .description(Some(description))
            .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
            .build()
    }

    /// `/tickets`: `POST` creates, `GET` lists.
    pub(crate) fn tickets(d: &Describe<'_>, _: &mut Components) -> PathItem {
        let body = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property(
                "n",
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(1))
                    .maximum(Some(crate::tickets::MAX_PER_CREATE))
                    .default(Some(1.into())),
            )
            .property(
                "show_result",
                ObjectBuilder::new().schema_type(Type::Boolean).default(Some(false.into())),
            )
            .property(
                "round",
                ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1)).description(Some(
                    "A round of the followed drand network not out yet: the tickets' draw is bound to it \
                     (with draw; docs/verifiable.md)",
                )),
            )
            .property(
                "label",
                ObjectBuilder::new().schema_type(Type::String).min_length(Some(1)).max_length(Some(128)).description(
                    Some("What the draw bound to round is for: one ticket a label, ever, per caller (required with round)"),
                ),
            )
            .property(
                "draw",
                ObjectBuilder::new().schema_type(Type::Object).description(Some(
                    "The draw bound to round: endpoint (/int, /sequence or /bits) and its parameters",
                )),
            )
            .additional_properties(Some(AdditionalProperties::FreeForm(false)));
        let body = RequestBodyBuilder::new()
            .required(Some(Required::True))
            .content("application/json", content(body.into()));
        let create = d
            .op("postTickets", "New single-use tickets: each counts as one request of your quota")
            .request_body(Some(body.build()))
            .response("201", json("The tickets created"));
        let create =
            create.response("409", problem("Over the unused tickets a caller may hold (too_many_tickets), or a bound ticket of this label exists (label_taken)"));
        let create = d.errors(create, &["400", "403", "429", "503"]);
        let params = vec![
            d.describe_param(crate::pipeline::params::Param::Type),
            d.describe_param(crate::pipeline::params::Param::After),
            d.describe_param(crate::pipeline::params::Param::Limit),
        ];
        let list = d
            .op("getTickets", "Your tickets of one kind, a page")
            .parameters(Some(params))
            .response("200", json("A page: tickets, and next_after when the page is full"));
        let list = d.errors(list, &["400", "403", "429", "503"]);
        PathItemBuilder::new()
            .operation(HttpMethod::Post, create.build())
            .operation(HttpMethod::Get, list.build())
            .build()
    }

    /// `GET /tickets/{id}`: public.
    pub(crate) fn ticket(_: &Describe<'_>, _: &mut Components) -> PathItem {
        let op = OperationBuilder::new()
            .operation_id(Some("getTicket"))
            .summary(Some("A ticket, and its signed result once shown or revealed (public)"))
            .parameter(in_path("id", "The ticket's id"))
            .response("200", json("The ticket"))
            .response("404", problem("No such ticket (ticket_not_found)"))
            .response("429", peer_limited())
            .response("503", problem("Service unavailable (store_unavailable)"));
        PathItem::new(HttpMethod::Get, op.build())
    }

    /// `POST /tickets/{id}/reveal`.
    pub(crate) fn reveal(d: &Describe<'_>, _: &mut Components) -> PathItem {
        let op = d
            .op("revealTicket", "Reveals your used ticket and its predecessors to anyone")
            .parameter(in_path("id", "The ticket's id"))
            .response("200", json("How many were revealed now: revealed"))
            .response("404", problem("No such ticket (ticket_not_found)"))
            .response("409", problem("Not used yet (ticket_unused)"));
        PathItem::new(HttpMethod::Post, d.errors(op, &["403", "429", "503"]).build())
    }

    /// `GET /results/{serial}`.
    pub(crate) fn result(d: &Describe<'_>, _: &mut Components) -> PathItem {
        let op = d
            .op("getResult", "A ticketed draw's answer, as it was sent, by its receipt's serial")
            .parameter(in_path("serial", "The receipt's serial"))
            .response("200", json("The answer: random and signature"))
            .response("404", problem("No such kept result of yours (result_not_found)"));
        PathItem::new(HttpMethod::Get, d.errors(op, &["403", "429", "503"]).build())
    }
}
