//! The tickets' calls as both transports make them (REST's handlers in `http/tickets.rs`,
//! gRPC's in `grpc/tickets.rs`): their arguments checked, the caller that holds tickets named,
//! the domain's answer ([`crate::tickets`]), refusals counted by code. Each transport reads its
//! own arguments and renders the answer its way.

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;

use super::bound;
use crate::callers::Admission;
use crate::error::ApiError;
use crate::pipeline::params::{Accept, Param, Params};
use crate::pipeline::{self, Answer, Endpoint, RandomFn, Report};
use crate::receipts::TicketStamp;
use crate::state::AppState;
use crate::tickets::{self, Kept, Lookup, MAX_PER_CREATE, MAX_PER_PAGE, Ticket, TicketKind, Tickets, Use};

/// The header naming the ticket a draw's use created: the next of its chain.
pub const NEXT_TICKET: HeaderName = HeaderName::from_static("drbgd-next-ticket");

/// The tickets of `state`, or 404 `tickets_disabled` when they are off (REST then serves no
/// ticket route, so only gRPC's methods, which exist whatever the settings, meet it; a
/// ticketed draw is 400).
pub fn of(state: &AppState) -> Result<&Tickets, ApiError> {
    state.tickets.as_deref().ok_or_else(|| ApiError::Missing {
        code: "tickets_disabled",
        detail: "this server keeps no tickets ([tickets] enabled is off)".into(),
    })
}

/// The caller a ticket is held for: one named by its credentials (tickets need auth on; the
/// caller `anonymous`, of the routes open without credentials, holds none).
pub fn holder(admission: &Admission) -> Result<&str, ApiError> {
    match admission.caller.name() {
        crate::callers::registry::ANONYMOUS => Err(ApiError::forbidden(
            "tickets_need_a_caller",
            "a ticket is its caller's: call with your credentials".to_string(),
        )),
        name => Ok(name),
    }
}

/// `id` from a path, if it is a ticket id.
pub fn ticket_id(id: &str) -> Result<&str, ApiError> {
    match tickets::valid_id(id) {
        true => Ok(id),
        // Not echoed: it is whatever the path held.
        false => Err(ApiError::Missing {
            code: "ticket_not_found",
            detail: "no such ticket (an id is a UUIDv7)".into(),
        }),
    }
}

/// Counts a ticket call's refusal by its code.
pub fn refused(state: &AppState, e: &ApiError) {
    if let Some(tickets) = state.tickets.as_deref() {
        tickets.series().refusals.with_label_values(&[e.code()]).inc();
    }
}

/// The draw of a random endpoint's POST that names a ticket (`params`' `ticket`): the ticket
/// held (concurrent uses of it wait) and resolved, the endpoint's own answer (`respond`) drawn
/// with a receipt naming it, kept with the ticket's use in one commit, then answered with the
/// [`NEXT_TICKET`] header; or the kept answer of the same request again. REST's POST and gRPC's
/// messages with a `ticket` (as their REST body: one digest) both come here. A refusal is
/// counted by its code.
///
/// # Errors
/// Every refusal of a ticketed draw (docs/tickets.md).
pub async fn use_ticket(
    endpoint: &'static Endpoint,
    respond: RandomFn,
    state: &AppState,
    admission: &Admission,
    accept: Accept<'_>,
    params: Params<'static>,
) -> Result<Answer, ApiError> {
    ticketed(endpoint, respond, state, admission, accept, params).await.inspect_err(|e| refused(state, e))
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
    let id = params.get(Param::Ticket).unwrap_or_default().to_owned();
    if !endpoint.guard.route.is_some_and(crate::route::Route::takes_tickets) {
        return Err(not_allowed(tickets, admission, &id).await);
    }
    if !tickets::valid_id(&id) {
        return Err(ApiError::invalid("invalid_ticket", "ticket", "ticket must be a ticket id (a UUIDv7)"));
    }
    let caller = holder(admission)?;
    let digest = tickets::request_digest(caller, endpoint.label, params.pairs());
    let _held = tickets.hold(caller, &id).await;
    let ticket = match tickets.lookup(caller, &id).await? {
        Lookup::Unused(ticket) => ticket,
        used @ Lookup::Used { .. } => return again(tickets, used, &digest, &id),
    };
    let params = params.with_stamp(TicketStamp { id: id.clone(), previous: ticket.previous_id.clone() });
    let answer = match &ticket.bound {
        Some(bound) => bound::draw(state, admission, endpoint, &params, &ticket, bound).await?,
        None => respond(state, admission, accept, &params)?,
    };
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

/// The refusal of ticket `id` on an endpoint that takes none (`/token`, `/nonce`, whose values
/// are secrets): `round_draw_not_allowed` for a ticket of the caller's bound to a round (its
/// values would be public), `ticket_not_allowed` for any other.
async fn not_allowed(tickets: &Tickets, admission: &Admission, id: &str) -> ApiError {
    let caller = admission.caller.name();
    let found = match tickets::valid_id(id) {
        true => tickets.get(id).await.ok().flatten(),
        false => None,
    };
    let bound = found.is_some_and(|t| t.caller == caller && t.bound.is_some());
    match bound {
        true => ApiError::invalid(
            "round_draw_not_allowed",
            "ticket",
            "a draw bound to a round is public once the round is out: tokens and nonces are secrets, never bound",
        ),
        false => ticket_not_allowed(),
    }
}

/// 400 `ticket_not_allowed`: a ticket on an endpoint of secrets (`/token`, `/nonce`).
pub fn ticket_not_allowed() -> ApiError {
    ApiError::invalid(
        "ticket_not_allowed",
        "ticket",
        "a ticket's result may be shown to others: tokens and nonces are secrets, drawn without one",
    )
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

/// The store that keeps every receipt of `endpoint` (`[results] keep_all`), if this one does:
/// none for the endpoints of secrets (`/token`, `/nonce`), whose receipts are never kept.
pub fn keeping<'a>(state: &'a AppState, endpoint: &Endpoint) -> Option<&'a Tickets> {
    let takes = endpoint.guard.route.is_some_and(crate::route::Route::takes_tickets);
    state.tickets.as_deref().filter(|t| takes && t.keeps_all())
}

/// `answer`, a receipt drawn without a ticket, kept first when `[results] keep_all` says so
/// (`result`: the answer as REST sends it, `{"random": ..., "signature": ...}`): an answer the
/// store could not keep is not sent (503), nor is its serial.
///
/// # Errors
/// 503 `store_unavailable`, `store_full`.
pub async fn keep(
    tickets: &Tickets,
    admission: &Admission,
    serial: &str,
    result: Vec<u8>,
) -> Result<(), ApiError> {
    let kept = Kept { serial: serial.to_owned(), caller: admission.caller.name().to_owned(), result };
    tickets.keep(kept).await
}

/// A REST answer of `endpoint`, kept first if it is a receipt drawn without a ticket and
/// `[results] keep_all` says so ([`keep`]).
pub async fn kept(endpoint: &Endpoint, state: &AppState, admission: &Admission, answer: Answer) -> Answer {
    let Some(tickets) = keeping(state, endpoint) else { return answer };
    let Some(serial) = answer.report.serial.clone().filter(|_| answer.report.ticket.is_none()) else {
        return answer;
    };
    let (parts, body) = answer.response.into_parts();
    let Ok(result) = axum::body::to_bytes(body, usize::MAX).await else { return ApiError::Internal.into() };
    match keep(tickets, admission, &serial, result.to_vec()).await {
        Ok(()) => Answer { response: Response::from_parts(parts, Body::from(result)), report: answer.report },
        Err(e) => e.into(),
    }
}

/// `n` (1..=50) new tickets of the caller's, each one request of its quota (the call's own
/// was taken at admission).
///
/// # Errors
/// 400 `invalid_count`; 403 `tickets_need_a_caller`; 429; 409 `too_many_tickets`; 503.
pub async fn create(
    state: &AppState,
    admission: &Admission,
    n: u64,
    show_result: bool,
    bind: Option<bound::Bind<'_>>,
) -> Result<Vec<Ticket>, ApiError> {
    let tickets = of(state)?;
    if !(1..=u64::from(MAX_PER_CREATE)).contains(&n) {
        return Err(ApiError::invalid("invalid_count", "n", format!("n must be in 1..={MAX_PER_CREATE}")));
    }
    let caller = holder(admission)?;
    if bind.is_some() && n != 1 {
        return Err(ApiError::invalid(
            "invalid_count",
            "n",
            "a ticket bound to a round is made alone (n = 1): one label, one draw",
        ));
    }
    let binding = bind.map(|b| bound::binding(state, admission, b)).transpose()?;
    admission.caller.take_requests(n - 1)?;
    let now = tickets::now_ms();
    let ids = (0..n).map(|_| tickets::new_id(&state.service, now)).collect::<Result<Vec<_>, _>>()?;
    let mut fresh = tickets.fresh(caller, ids, show_result);
    if let Some(binding) = &binding {
        for ticket in &mut fresh {
            ticket.bound = Some(bound::commit(state, admission, ticket, binding)?);
        }
    }
    tickets.create(fresh).await.inspect_err(|e| refused(state, e))
}

/// A page of the caller's tickets of `kind` (`singleton`, `head`, `tail`), ids after `after`,
/// `limit` (1..=1000) at most, and the `after` of the next page when this one is full.
///
/// # Errors
/// 400 `invalid_type`, `invalid_limit`; 403; 503.
pub async fn list(
    state: &AppState,
    admission: &Admission,
    kind: &str,
    after: &str,
    limit: u64,
) -> Result<(Vec<Ticket>, Option<String>), ApiError> {
    let tickets = of(state)?;
    let kind = TicketKind::named(kind)
        .ok_or_else(|| ApiError::invalid("invalid_type", "type", "type must be singleton, head or tail"))?;
    if !(1..=u64::from(MAX_PER_PAGE)).contains(&limit) {
        return Err(ApiError::invalid(
            "invalid_limit",
            "limit",
            format!("limit must be in 1..={MAX_PER_PAGE}"),
        ));
    }
    let page = tickets.list(holder(admission)?, kind, after, limit as u32).await?;
    let next_after = (page.len() as u64 == limit).then(|| page.last().map(|t| t.id.clone())).flatten();
    Ok((page, next_after))
}

/// The ticket `id`, for anyone.
///
/// # Errors
/// 404 `ticket_not_found`; 503.
pub async fn show(state: &AppState, id: &str) -> Result<Ticket, ApiError> {
    let tickets = of(state)?;
    tickets.get_public(ticket_id(id)?).await?.ok_or_else(|| tickets::not_found(id))
}

/// Reveals the caller's used ticket `id` and its predecessors: how many now.
///
/// # Errors
/// 403, 404, 409 `ticket_unused`; 503.
pub async fn reveal(state: &AppState, admission: &Admission, id: &str) -> Result<u64, ApiError> {
    let tickets = of(state)?;
    let caller = holder(admission)?;
    tickets.reveal(caller, ticket_id(id)?).await.inspect_err(|e| refused(state, e))
}

/// The caller's kept answer of serial `serial`, byte for byte.
///
/// # Errors
/// 404 `result_not_found` (another caller's too); 403; 503.
pub async fn result(state: &AppState, admission: &Admission, serial: &str) -> Result<Vec<u8>, ApiError> {
    let tickets = of(state)?;
    let missing = || ApiError::Missing {
        code: "result_not_found",
        detail: "no such kept result of this caller".into(),
    };
    // A receipt's serial (a UUID), or a RANDOM.ORG-form result's (a decimal integer).
    let decimal = !serial.is_empty() && serial.len() <= 20 && serial.bytes().all(|b| b.is_ascii_digit());
    if uuid::Uuid::try_parse(serial).is_err() && !decimal {
        return Err(missing());
    }
    tickets.result(holder(admission)?, serial).await?.ok_or_else(missing)
}
