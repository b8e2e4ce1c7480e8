//! Tickets over gRPC: the ticket calls (`CreateTickets`, `ListTickets`, `GetTicket`,
//! `RevealTicket`, `GetResult`) as REST's (`http/tickets/calls.rs`), and the draws that use a
//! ticket (`ticket` in `GetBits`, `GetBytes`, `GetUuids`, `GetInts`, `GetSequence`).
//!
//! A ticketed draw is the REST endpoint's ticketed POST, the message written as its JSON body
//! ([`Draw`]: the fields a client set, under REST's names): one digest for both transports, so
//! a retry over either answers the one kept draw, and one kept answer, REST's body. The reply is
//! read back from that answer's receipt (its `random` and signature), the same for a first use
//! and a retry.

use serde_json::{Map, Value};
use tonic::{Request, Response};

use super::call::{alg_name, caller, pb, wire_alg};
use crate::callers::Admission;
use crate::drbg::Algorithm;
use crate::error::ApiError;
use crate::http::tickets::{NEXT_TICKET, calls};
use crate::pipeline::params::{Accept, Params};
use crate::pipeline::{Handler, Report};
use crate::state::AppState;
use crate::tickets::Ticket;

/// A draw's message as its REST POST body: the fields a client set (proto3's zero is unset,
/// but for the bounds an integer draw always has), under REST's names.
#[derive(Debug, Default)]
pub struct Draw(Map<String, Value>);

impl Draw {
    /// `name`: `value`, always.
    #[must_use]
    pub fn with(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.0.insert(name.to_owned(), value.into());
        self
    }

    /// `name`: `value` unless it is `value`'s zero (unset in proto3).
    #[must_use]
    pub fn set<V: Into<Value> + Default + PartialEq>(self, name: &str, value: V) -> Self {
        if value == V::default() { self } else { self.with(name, value) }
    }

    /// `alg` by name, unless unspecified.
    ///
    /// # Errors
    /// `unknown_alg`.
    pub fn alg(self, wire: i32) -> Result<Self, ApiError> {
        Ok(match alg_name(wire)? {
            Some(name) => self.with("alg", name),
            None => self,
        })
    }

    /// The receipt fields every ticketed draw's message has (`receipt`, `user_data`) and its
    /// ticket.
    #[must_use]
    pub fn receipt(self, receipt: bool, user_data: &str, ticket: &str) -> Self {
        self.set("receipt", receipt).set("user_data", user_data.to_owned()).with("ticket", ticket.to_owned())
    }
}

/// A ticketed draw's answer, as its receipt says it: what the reply is built from.
#[derive(Debug)]
pub struct Drawn {
    /// The receipt's `random`, parsed.
    pub random: Value,
    /// The receipt's `random` as signed, byte for byte.
    pub receipt_json: String,
    /// Its signature.
    pub signature: String,
    /// The ticket its use created.
    pub next_ticket: String,
    report: Report,
}

/// The draw of gRPC `method` under `draw`'s ticket, as its REST endpoint's POST with `draw` as
/// its body.
///
/// # Errors
/// Every refusal of a ticketed draw, as REST's.
pub async fn draw(
    state: &AppState,
    admission: &Admission,
    method: &str,
    draw: Draw,
) -> Result<Drawn, ApiError> {
    let endpoint =
        crate::http::ENDPOINTS.iter().find(|e| e.grpc.contains(&method)).ok_or(ApiError::Internal)?;
    let Handler::Random(respond) = endpoint.handler else { return Err(ApiError::Internal) };
    let params = Params::from_json(&Value::Object(draw.0))?;
    let answer = calls::use_ticket(endpoint, respond, state, admission, Accept::default(), params).await?;
    let next =
        answer.response.headers().get(NEXT_TICKET).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let body = axum::body::to_bytes(answer.response.into_body(), usize::MAX)
        .await
        .map_err(|_| ApiError::Internal)?;
    Drawn::read(&body, next, answer.report)
}

impl Drawn {
    /// The answer `body` (`{"random": {...}, "signature": "..."}` as REST sends it).
    fn read(body: &[u8], next_ticket: String, report: Report) -> Result<Drawn, ApiError> {
        const HEAD: &str = "{\"random\":";
        const SIGNATURE: &str = ",\"signature\":\"";
        let text = std::str::from_utf8(body).map_err(|_| ApiError::Internal)?;
        // A signature is base64url: the last `,"signature":"` starts it (inside `random`, a
        // quote is escaped).
        let at = text.rfind(SIGNATURE).filter(|_| text.starts_with(HEAD) && text.ends_with("\"}"));
        let at = at.ok_or(ApiError::Internal)?;
        let receipt_json = text[HEAD.len()..at].to_owned();
        let signature = text[at + SIGNATURE.len()..text.len() - 2].to_owned();
        let random = serde_json::from_str(&receipt_json).map_err(|_| ApiError::Internal)?;
        Ok(Drawn { random, receipt_json, signature, next_ticket, report })
    }

    /// The generator, as a wire enum.
    ///
    /// A draw bound to a beacon round names its derivation (`drbgd-round-v1`), which is HMAC_DRBG
    /// (SHA-256) seeded from the round: that mechanism is its wire value, and `receipt_json`
    /// says the rest.
    pub fn alg(&self) -> Result<(Algorithm, i32), ApiError> {
        let named = self.random["alg"].as_str();
        let alg = match named {
            Some(crate::tickets::bound::DERIVATION) => Some(Algorithm::HmacSha256),
            _ => named.and_then(Algorithm::from_name),
        };
        let alg = alg.ok_or(ApiError::Internal)?;
        Ok((alg, wire_alg(alg)))
    }

    /// `data`, a list of strings.
    pub fn texts(&self) -> Result<Vec<String>, ApiError> {
        let list = self.random["data"].as_array().ok_or(ApiError::Internal)?;
        list.iter().map(|v| v.as_str().map(str::to_owned).ok_or(ApiError::Internal)).collect()
    }

    /// `data`, a list of decimal integers.
    pub fn integers(&self) -> Result<Vec<i64>, ApiError> {
        self.texts()?.iter().map(|v| v.parse().map_err(|_| ApiError::Internal)).collect()
    }

    /// An integer member.
    pub fn integer(&self, name: &str) -> Result<u64, ApiError> {
        self.random[name].as_u64().ok_or(ApiError::Internal)
    }

    /// `data`, the packed output of `/bits` or `/bytes`, decoded from its text (`data_encoding`,
    /// else `format`, names it).
    pub fn packed(&self) -> Result<Vec<u8>, ApiError> {
        let encoding = self.random.get("data_encoding").unwrap_or(&self.random["format"]);
        let encoding = match encoding.as_str() {
            Some("hex") => &data_encoding::HEXLOWER_PERMISSIVE,
            Some("base64") => &data_encoding::BASE64,
            Some("base64url") => &data_encoding::BASE64URL_NOPAD,
            _ => return Err(ApiError::Internal),
        };
        let data = self.random["data"].as_str().ok_or(ApiError::Internal)?;
        encoding.decode(data.as_bytes()).map_err(|_| ApiError::Internal)
    }

    /// `reply`, recorded for the pipeline's lines as this draw was (what it served, its
    /// receipt's serial and its ticket).
    pub fn respond<T>(self, reply: T) -> Response<T> {
        let mut response = Response::new(reply);
        response.extensions_mut().insert(self.report);
        response
    }
}

/// The store that keeps every receipt of gRPC `method` (`[results] keep_all`), if it does.
pub fn keeping<'a>(state: &'a AppState, method: &str) -> Option<&'a crate::tickets::Tickets> {
    state.tickets.as_deref().filter(|t| t.keeps_all())?;
    let endpoint = crate::http::ENDPOINTS.iter().find(|e| e.grpc.contains(&method))?;
    calls::keeping(state, endpoint)
}

/// A reply that may carry a receipt.
pub trait Receipted {
    /// Its receipt as REST answers it, `{"random": <receipt_json>, "signature": "<...>"}`.
    fn kept_form(&self) -> Vec<u8>;
}

macro_rules! receipted {
    ($($reply:ty),*) => {$(
        impl Receipted for $reply {
            fn kept_form(&self) -> Vec<u8> {
                format!("{{\"random\":{},\"signature\":\"{}\"}}", self.receipt_json, self.receipt_signature).into_bytes()
            }
        }
    )*};
}
receipted!(
    pb::GetBitsResponse,
    pb::GetBytesResponse,
    pb::GetUuidsResponse,
    pb::GetIntsResponse,
    pb::GetSequenceResponse
);

/// A call's answer, or the domain's refusal (the adapter records and renders it).
pub type Answered<T> = Result<Response<T>, ApiError>;

/// A ticket as a message (times RFC 3339 UTC, empty for none), its caller as `caller_hash`; its
/// kept answer when shown and `read` (a page or a creation reads none: `GetTicket` gives it).
fn message(caller_hash: &str, t: &Ticket, read: bool) -> pb::Ticket {
    let time = |ms: i64| crate::receipts::sign::rfc3339_millis(u64::try_from(ms).unwrap_or(0));
    let shown = read && t.shows_result() && t.used_ms.is_some();
    pb::Ticket {
        ticket_id: t.id.clone(),
        caller_hash: caller_hash.to_owned(),
        show_result: t.show_result,
        revealed: t.revealed,
        created_at: time(t.created_ms),
        expires_at: t.expires_ms.map(time).unwrap_or_default(),
        used_at: t.used_ms.map(time).unwrap_or_default(),
        serial: t.serial.clone().unwrap_or_default(),
        previous_ticket: t.previous_id.clone().unwrap_or_default(),
        next_ticket: t.next_id.clone().unwrap_or_default(),
        result_json: match (&t.result, shown) {
            (Some(result), true) => String::from_utf8_lossy(result).into_owned(),
            _ => String::new(),
        },
        result_expired: shown && t.result.is_none(),
    }
}

/// `CreateTickets`.
pub async fn create(
    state: &AppState,
    request: Request<pb::CreateTicketsRequest>,
) -> Answered<pb::CreateTicketsResponse> {
    let admission = caller(&request)?;
    let r = request.into_inner();
    let n = if r.n == 0 { 1 } else { u64::from(r.n) };
    let created = calls::create(state, &admission, n, r.show_result, None).await?;
    // One caller's tickets: its hash made once.
    let hash = calls::of(state)?.caller_hash(admission.caller.name());
    let tickets = created.iter().map(|t| message(&hash, t, false)).collect();
    Ok(Response::new(pb::CreateTicketsResponse { tickets }))
}

/// `ListTickets`.
pub async fn list(
    state: &AppState,
    request: Request<pb::ListTicketsRequest>,
) -> Answered<pb::ListTicketsResponse> {
    let admission = caller(&request)?;
    let r = request.into_inner();
    let kind = if r.r#type.is_empty() { "singleton" } else { r.r#type.as_str() };
    let limit = if r.limit == 0 { 100 } else { u64::from(r.limit) };
    let (page, next_after) = calls::list(state, &admission, kind, &r.after, limit).await?;
    let hash = calls::of(state)?.caller_hash(admission.caller.name());
    let tickets = page.iter().map(|t| message(&hash, t, false)).collect();
    Ok(Response::new(pb::ListTicketsResponse { tickets, next_after: next_after.unwrap_or_default() }))
}

/// `GetTicket`: public.
pub async fn get(
    state: &AppState,
    request: Request<pb::GetTicketRequest>,
) -> Answered<pb::GetTicketResponse> {
    let ticket = calls::show(state, &request.get_ref().ticket_id).await?;
    let hash = calls::of(state)?.caller_hash(&ticket.caller);
    Ok(Response::new(pb::GetTicketResponse { ticket: Some(message(&hash, &ticket, true)) }))
}

/// `RevealTicket`.
pub async fn reveal(
    state: &AppState,
    request: Request<pb::RevealTicketRequest>,
) -> Answered<pb::RevealTicketResponse> {
    let admission = caller(&request)?;
    let revealed = calls::reveal(state, &admission, &request.get_ref().ticket_id).await?;
    Ok(Response::new(pb::RevealTicketResponse { revealed }))
}

/// `GetResult`.
pub async fn result(
    state: &AppState,
    request: Request<pb::GetResultRequest>,
) -> Answered<pb::GetResultResponse> {
    let admission = caller(&request)?;
    let body = calls::result(state, &admission, &request.get_ref().serial).await?;
    let result_json = String::from_utf8(body).map_err(|_| ApiError::Internal)?;
    Ok(Response::new(pb::GetResultResponse { result_json }))
}
