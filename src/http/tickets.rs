//! Tickets over HTTP (with `[tickets] enabled`; what a ticket is and proves: [`crate::tickets`],
//! docs/tickets.md):
//!
//! - `POST /tickets` `{"n": 1..50, "show_result": false}`: new tickets (201); each counts as
//!   one request of the caller's quota; a cap on the unused ones a caller holds.
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

use axum::Json;
use axum::body::Body;
use axum::extract::{Extension, Path, Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use serde::Serialize;

use super::body::json_params;
use crate::callers::Admission;
use crate::error::ApiError;
use crate::pipeline::params::{Accept, Param, Params};
use crate::pipeline::{self, Answer, Endpoint, RandomFn, Report};
use crate::receipts::TicketStamp;
use crate::state::AppState;
use crate::tickets::{self, Lookup, MAX_PER_CREATE, MAX_PER_PAGE, Ticket, TicketKind, Tickets, Use};

/// The header naming the ticket a draw's use created: the next of its chain.
pub const NEXT_TICKET: HeaderName = HeaderName::from_static("drbgd-next-ticket");

/// The tickets of `state`, or 404 when they are off (the router serves no ticket route then;
/// a ticketed draw is 400).
fn of(state: &AppState) -> Result<&Tickets, ApiError> {
    state.tickets.as_deref().ok_or(ApiError::NotFound)
}

/// The caller a ticket is held for: one named by its credentials (tickets need auth on; the
/// caller `anonymous`, of the routes open without credentials, holds none).
fn holder(admission: &Admission) -> Result<&str, ApiError> {
    match admission.caller.name() {
        crate::callers::registry::ANONYMOUS => Err(ApiError::forbidden(
            "tickets_need_a_caller",
            "a ticket is its caller's: call with your credentials".to_string(),
        )),
        name => Ok(name),
    }
}

/// `id` from a path, if it is a ticket id.
fn ticket_id(id: &str) -> Result<&str, ApiError> {
    match tickets::valid_id(id) {
        true => Ok(id),
        // Not echoed: it is whatever the path held.
        false => Err(ApiError::Missing {
            code: "ticket_not_found",
            detail: "no such ticket (an id is a UUIDv7)".into(),
        }),
    }
}

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
    ticketed(endpoint, respond, state, admission, accept, params).await.unwrap_or_else(|e| {
        refused(state, &e);
        Answer::from(e)
    })
}

/// Counts a ticket call's refusal by its code.
fn refused(state: &AppState, e: &ApiError) {
    if let Some(tickets) = state.tickets.as_deref() {
        tickets.series().refusals.with_label_values(&[e.code()]).inc();
    }
}

async fn ticketed(
    endpoint: &'static Endpoint,
    respond: RandomFn,
    state: &AppState,
    admission: &Admission,
    accept: Accept<'_>,
    params: Params<'static>,
) -> Result<Answer, ApiError> {
    let tickets = state.tickets.as_deref().ok_or_else(|| {
        ApiError::invalid(
            "tickets_disabled",
            "ticket",
            "this server keeps no tickets ([tickets] enabled is off)",
        )
    })?;
    if !endpoint.guard.route.is_some_and(crate::route::Route::takes_tickets) {
        return Err(ApiError::invalid(
            "ticket_not_allowed",
            "ticket",
            "a ticket's result may be shown to others: tokens and nonces are secrets, drawn without one",
        ));
    }
    let id = params.get(Param::Ticket).unwrap_or_default().to_owned();
    if !tickets::valid_id(&id) {
        return Err(ApiError::invalid("invalid_ticket", "ticket", "ticket must be a ticket id (a UUIDv7)"));
    }
    let caller = holder(admission)?;
    let digest = tickets::request_digest(caller, endpoint.label, params.pairs());
    let _held = tickets.hold(&id).await;
    let ticket = match tickets.lookup(caller, &id).await? {
        Lookup::Unused(ticket) => ticket,
        used @ Lookup::Used { .. } => return again(tickets, used, &digest, &id),
    };
    let params = params.with_stamp(TicketStamp { id: id.clone(), previous: ticket.previous_id });
    let answer = respond(state, admission, accept, &params)?;
    let serial = answer.report.serial.clone().ok_or(ApiError::Internal)?;
    let (mut parts, body) = answer.response.into_parts();
    let result = axum::body::to_bytes(body, usize::MAX).await.map_err(|_| ApiError::Internal)?;
    let next_id = tickets::new_id(&state.service, tickets::now_ms())?;
    let used = Use {
        id: id.clone(),
        caller: caller.to_owned(),
        digest: digest.clone(),
        serial,
        result: result.to_vec(),
        next_id,
    };
    let next = used.next_id.clone();
    match tickets.settle(used).await? {
        true => {
            parts.headers.insert(NEXT_TICKET, header(&next));
            let response = Response::from_parts(parts, Body::from(result));
            Ok(Answer { response, report: Report { ticket: Some(id), ..answer.report } })
        }
        // Used in between by another replica (or process of the same file): what it kept
        // decides.
        false => again(tickets, tickets.lookup(caller, &id).await?, &digest, &id),
    }
}

/// A used ticket asked for again: its stored answer for the same request, 409 for another.
fn again(tickets: &Tickets, used: Lookup, digest: &[u8], id: &str) -> Result<Answer, ApiError> {
    let Lookup::Used { digest: theirs, serial, result, next_id } = used else {
        // Unused after a use that kept nothing: the store failed to keep it.
        return Err(ApiError::StoreUnavailable);
    };
    if theirs != digest {
        return Err(ApiError::Conflict {
            code: "ticket_used",
            detail: format!("ticket {id} was used by another request: its receipt is serial {serial}"),
        });
    }
    let Some(result) = result else {
        return Err(ApiError::Gone {
            code: "result_expired",
            detail: format!(
                "ticket {id}'s result (serial {serial}) is past its retention ([results] retention_days)"
            ),
        });
    };
    tickets.series().events.with_label_values(&["replayed"]).inc();
    let mut response = pipeline::response(Body::from(result), "application/json");
    if let Some(next) = next_id {
        response.headers_mut().insert(NEXT_TICKET, header(&next));
    }
    let report = Report { serial: Some(serial), ticket: Some(id.to_owned()), ..Report::default() };
    Ok(Answer { response, report })
}

/// A ticket id as a header value (ids are ASCII).
fn header(id: &str) -> HeaderValue {
    HeaderValue::from_str(id).unwrap_or(HeaderValue::from_static(""))
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
    let tickets = of(&state)?;
    let params = json_params(body).await?;
    params.allow_only(crate::pipeline::params::TICKETS)?;
    let n = params.u64(Param::N)?.unwrap_or(1);
    if !(1..=u64::from(MAX_PER_CREATE)).contains(&n) {
        return Err(ApiError::invalid("invalid_count", "n", format!("n must be in 1..={MAX_PER_CREATE}")));
    }
    let show_result = params.flag(Param::ShowResult)?;
    let caller = holder(&admission)?;
    admission.caller.take_requests(n - 1)?;
    let now = tickets::now_ms();
    let ids = (0..n).map(|_| tickets::new_id(&state.service, now)).collect::<Result<Vec<_>, _>>()?;
    let created = tickets.create(caller, ids, show_result).await.inspect_err(|e| refused(&state, e))?;
    let views: Vec<View> = created.iter().map(|t| View::of(tickets, t)).collect();
    Ok((StatusCode::CREATED, Json(Page { tickets: views, next_after: None })).into_response())
}

/// `GET /tickets?type=&after=&limit=`: the caller's tickets of one kind, a page.
async fn list(
    State(state): State<AppState>,
    Extension(admission): Extension<Admission>,
    request: Request,
) -> Result<Response, ApiError> {
    let (parts, _) = request.into_parts();
    let tickets = of(&state)?;
    let params = Params::of(&parts)?;
    params.allow_only(&[Param::Type, Param::After, Param::Limit])?;
    let kind = params.get(Param::Type).unwrap_or("singleton");
    let kind = TicketKind::named(kind)
        .ok_or_else(|| ApiError::invalid("invalid_type", "type", "type must be singleton, head or tail"))?;
    let limit = params.u64(Param::Limit)?.unwrap_or(100);
    if !(1..=u64::from(MAX_PER_PAGE)).contains(&limit) {
        return Err(ApiError::invalid(
            "invalid_limit",
            "limit",
            format!("limit must be in 1..={MAX_PER_PAGE}"),
        ));
    }
    let after = params.get(Param::After).unwrap_or("");
    let page = tickets.list(holder(&admission)?, kind, after, limit as u32).await?;
    let next_after = (page.len() as u64 == limit).then(|| page.last().map(|t| t.id.clone())).flatten();
    let views = page.iter().map(|t| View::of(tickets, t)).collect();
    Ok(Json(Page { tickets: views, next_after }).into_response())
}

/// `GET /tickets/{id}`: public. The ticket, and its answer (`result`: null while unused) when
/// shown or revealed; no `result` member when hidden.
async fn show(State(state): State<AppState>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let tickets = of(&state)?;
    let ticket = tickets.get(ticket_id(&id)?).await?.ok_or_else(|| tickets::not_found(&id))?;
    Ok(json_with_result(&View::of(tickets, &ticket), &ticket))
}

/// `POST /tickets/{id}/reveal`: `{"revealed": n}`.
async fn reveal(
    State(state): State<AppState>,
    Extension(admission): Extension<Admission>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let tickets = of(&state)?;
    let caller = holder(&admission)?;
    let revealed = tickets.reveal(caller, ticket_id(&id)?).await.inspect_err(|e| refused(&state, e))?;
    Ok(Json(serde_json::json!({ "revealed": revealed })).into_response())
}

/// `GET /results/{serial}`: the kept answer, byte for byte, to its caller.
async fn result(
    State(state): State<AppState>,
    Extension(admission): Extension<Admission>,
    Path(serial): Path<String>,
) -> Result<Response, ApiError> {
    let tickets = of(&state)?;
    let missing = || ApiError::Missing {
        code: "result_not_found",
        detail: "no such kept result of this caller".into(),
    };
    if uuid::Uuid::try_parse(&serial).is_err() {
        return Err(missing());
    }
    let body = tickets.result(holder(&admission)?, &serial).await?.ok_or_else(missing)?;
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
}

impl View {
    fn of(tickets: &Tickets, t: &Ticket) -> View {
        let time = |ms: i64| crate::receipts::sign::rfc3339_millis(u64::try_from(ms).unwrap_or(0));
        View {
            ticket_id: t.id.clone(),
            caller_hash: tickets.caller_hash(&t.caller),
            show_result: t.show_result,
            revealed: t.revealed,
            created_at: time(t.created_ms),
            expires_at: t.expires_ms.map(time),
            used_at: t.used_ms.map(time),
            serial: t.serial.clone(),
            previous_ticket: t.previous_id.clone(),
            next_ticket: t.next_id.clone(),
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
            .additional_properties(Some(AdditionalProperties::FreeForm(false)));
        let body = RequestBodyBuilder::new()
            .required(Some(Required::True))
            .content("application/json", content(body.into()));
        let create = d
            .op("postTickets", "New single-use tickets: each counts as one request of your quota")
            .request_body(Some(body.build()))
            .response("201", json("The tickets created"));
        let create =
            create.response("409", problem("Over the unused tickets a caller may hold (too_many_tickets)"));
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
