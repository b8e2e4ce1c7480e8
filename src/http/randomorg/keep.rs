//! The RANDOM.ORG door's methods beyond a draw, over drbgd's tickets and kept results (one
//! ticket whichever door made it; [`crate::tickets`]): `createTickets`, `revealTickets`,
//! `listTickets`, `getTicket`, `getResult`, `verifySignature`, `getUsage`; and what the draws
//! share with them: the usage fields of a result (`bitsLeft`, `requestsLeft`,
//! `advisoryDelay`), times as RANDOM.ORG writes them, the key's hash, signing in the lane.
//!
//! A ticket reads here in RANDOM.ORG's form (`ticketId`, `hashedApiKey`: the store's keyed
//! hash of its caller, as `GET /tickets/{id}` shows it; `showResult`, `creationTime`,
//! `usedTime`, `serialNumber`, `expirationTime`, `previousTicketId`, `nextTicketId`, and
//! `result` when shown), its result as the door that used it kept it: a RANDOM.ORG result
//! with its RSA signature, or a drbgd receipt with its Ed25519 one.

use std::sync::Arc;

use serde_json::Value;

use super::rpc::rpc_error;
use crate::callers::{Admission, Kind};

use crate::error::ApiError;
use crate::http::tickets::calls;
use crate::randomorg::params::Params;
use crate::randomorg::{self, RandomOrg, RpcError, Signer, canonical};
use crate::state::AppState;
use crate::tickets::{Ticket, TicketKind, Tickets};

/// `requestsLeft` and `bitsLeft` of a caller with neither a daily allowance nor a quota: the
/// largest integer every JSON reader holds exactly (2^53 − 1).
const UNLIMITED: u64 = (1 << 53) - 1;

/// RANDOM.ORG's most tickets one `listTickets` returns.
const MAX_LISTED: u32 = 2000;

/// The door.
pub fn door(state: &AppState) -> Result<&Arc<RandomOrg>, RpcError> {
    state.randomorg.as_ref().ok_or_else(RpcError::internal)
}

/// The door's signing key, which signed results and their checks need.
///
/// # Errors
/// 404 (not for this method) when the door has none.
pub fn signer(door: &RandomOrg) -> Result<&Signer, RpcError> {
    door.signer()
        .ok_or_else(|| RpcError::not_for_method("this server has no signing key ([randomorg] signing_key)"))
}

/// The tickets' store, which the Signed API and tickets need.
pub fn store(state: &AppState) -> Result<&Tickets, RpcError> {
    state
        .tickets
        .as_deref()
        .ok_or_else(|| RpcError::not_for_method("the Signed API keeps its results: [tickets] enabled is off"))
}

/// The caller's name, if it may hold tickets and kept results (a named caller: with auth off
/// everyone is `anonymous`, who holds none; 404).
pub fn holder(admission: &Admission) -> Result<&str, RpcError> {
    calls::holder(admission).map_err(ticket_error)
}

/// Today, in UTC days since 1970.
pub fn today() -> i64 {
    crate::tickets::now_ms().div_euclid(86_400_000)
}

/// Unix milliseconds as RANDOM.ORG writes a time: `2026-12-06 10:00:00Z`.
pub fn time_of(ms: i64) -> String {
    let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]Z");
    time::OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000))
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_default()
}

/// RANDOM.ORG's `hashedApiKey`: base64 of the SHA-512 of the key.
pub fn hashed_key(key: &str) -> String {
    use sha2::Digest;
    data_encoding::BASE64.encode(&sha2::Sha512::digest(key.as_bytes()))
}

/// The signature (base64) of `random` with the door's key, made in its lane.
///
/// # Errors
/// 101 when the lane had no place in time; −32603 when signing failed.
pub async fn sign(door: &Arc<RandomOrg>, random: Vec<u8>) -> Result<String, RpcError> {
    let signer = door.clone();
    match door.signing().run(move || signer.signer().map(|s| s.sign(&random))).await {
        Some(Some(Ok(signature))) => Ok(data_encoding::BASE64.encode(&signature)),
        None => Err(RpcError::offline("overloaded")),
        Some(_) => Err(RpcError::internal()),
    }
}

/// A result's usage fields.
#[derive(Debug, Clone, Copy)]
pub struct Left {
    requests: u64,
    bits: u64,
    advisory_ms: u64,
}

/// What the caller has left (its daily allowance where the door sets one, else its quota's
/// buckets now), and the delay its next request should wait: the time of one request token
/// when its request bucket is empty, else none.
pub fn left(admission: &Admission, allowance: randomorg::Left) -> Left {
    let (caller, now) = (&admission.caller, tokio::time::Instant::now());
    // A bucket's rate and what it holds now, if the caller has one.
    let bucket = |kind: Kind| {
        caller.quota.rate(kind).map(|rate| (rate, caller.remaining(kind, rate, now).max(0.0).floor() as u64))
    };
    let requests = bucket(Kind::Requests);
    let advisory_ms = requests
        .filter(|(_, left)| *left == 0)
        .map_or(0, |(rate, _)| (1000.0 / rate.per_second).ceil().clamp(0.0, 86_400_000.0) as u64);
    Left {
        requests: allowance.requests.or(requests.map(|(_, left)| left)).unwrap_or(UNLIMITED),
        bits: allowance
            .bits
            .or(bucket(Kind::Bytes).map(|(_, left)| left.saturating_mul(8)))
            .unwrap_or(UNLIMITED),
        advisory_ms,
    }
}

/// A JSON array of `items`, each already JSON.
fn array(items: &[Vec<u8>]) -> Vec<u8> {
    [b"[".as_slice(), &items.join(&b","[..]), b"]"].concat()
}

/// A generating method's `result`: `random`, the signature and cost of a signed one, then
/// `bitsUsed`, `bitsLeft`, `requestsLeft`, `advisoryDelay`, in RANDOM.ORG's order.
pub fn with_usage(random: &[u8], signature: Option<&str>, bits_used: u64, left: Left) -> Vec<u8> {
    let signed = signature.map_or(String::new(), |s| format!(r#","signature":"{s}","cost":0"#));
    let usage = format!(
        r#"{signed},"bitsUsed":{bits_used},"bitsLeft":{},"requestsLeft":{},"advisoryDelay":{}}}"#,
        left.bits, left.requests, left.advisory_ms
    );
    [br#"{"random":"#.as_slice(), random, usage.as_bytes()].concat()
}

/// A tickets call's refusal as RANDOM.ORG's code.
pub fn ticket_error(error: ApiError) -> RpcError {
    match error.code() {
        "ticket_not_found" | "ticket_expired" => RpcError::no_such_ticket(),
        "ticket_not_yours" => RpcError::ticket_of_another_key(),
        "ticket_unused" => RpcError::ticket_unused(),
        "too_many_tickets" => RpcError::too_many_tickets(&error.to_string()),
        "tickets_need_a_caller" => RpcError::not_for_method(&error.to_string()),
        _ => rpc_error(&error),
    }
}

/// `getUsage`.
pub fn usage(state: &AppState, admission: &Admission) -> Result<Vec<u8>, RpcError> {
    let door = door(state)?;
    let left = left(admission, door.left(admission.caller.name(), today()));
    let counters = admission.caller.usage().counters;
    Ok(format!(
        r#"{{"status":"running","creationTime":"{}","bitsLeft":{},"requestsLeft":{},"totalBits":{},"totalRequests":{}}}"#,
        time_of(door.created_ms()),
        left.bits,
        left.requests,
        counters.output_bytes.saturating_mul(8),
        counters.requests
    )
    .into_bytes())
}

/// `getResult`: a signed result of the caller's, kept as it was answered.
pub async fn result(
    state: &AppState,
    admission: &Admission,
    params: &Params<'_>,
) -> Result<Vec<u8>, RpcError> {
    let serial = params.int("serialNumber", 0, i64::MAX)?;
    store(state)?;
    calls::result(state, admission, &serial.to_string()).await.map_err(|e| match e.code() {
        "result_not_found" => RpcError::not_found("serialNumber"),
        _ => ticket_error(e),
    })
}

/// `createTickets`: `n` (1 to 50) new tickets.
pub async fn create(
    state: &AppState,
    admission: &Admission,
    params: &Params<'_>,
) -> Result<Vec<u8>, RpcError> {
    let n = params.int("n", 1, i64::from(crate::tickets::MAX_PER_CREATE))?;
    let show =
        params.required("showResult").and_then(|v| crate::randomorg::params::boolean(v, "showResult"))?;
    store(state)?;
    let made = calls::create(state, admission, n as u64, show, None).await.map_err(ticket_error)?;
    let objects: Vec<Vec<u8>> = made
        .iter()
        .map(|t| {
            let created = Value::from(time_of(t.created_ms));
            let id = Value::from(t.id.as_str());
            canonical::write([
                ("ticketId", &id),
                ("creationTime", &created),
                ("previousTicketId", &Value::Null),
                ("nextTicketId", &Value::Null),
            ])
        })
        .collect();
    Ok(array(&objects))
}

/// `revealTickets`: a used ticket and its predecessors shown: how many now.
pub async fn reveal(
    state: &AppState,
    admission: &Admission,
    params: &Params<'_>,
) -> Result<Vec<u8>, RpcError> {
    let id = params.string("ticketId")?;
    store(state)?;
    let count = calls::reveal(state, admission, id).await.map_err(ticket_error)?;
    Ok(format!(r#"{{"ticketCount":{count}}}"#).into_bytes())
}

/// `listTickets`: the caller's tickets of a type, 2,000 at most.
pub async fn list(state: &AppState, admission: &Admission, params: &Params<'_>) -> Result<Vec<u8>, RpcError> {
    let kind =
        TicketKind::named(params.string("ticketType")?).ok_or_else(|| RpcError::illegal("ticketType"))?;
    let tickets = store(state)?;
    let page = tickets.list(holder(admission)?, kind, "", MAX_LISTED).await.map_err(|e| rpc_error(&e))?;
    let objects: Vec<Vec<u8>> = page.iter().map(|t| ticket_object(tickets, t, false)).collect();
    Ok(array(&objects))
}

/// `getTicket` (anyone): the ticket, with its result once shown.
pub async fn ticket(state: &AppState, params: &Params<'_>) -> Result<Vec<u8>, RpcError> {
    let id = params.string("ticketId")?;
    let tickets = store(state)?;
    let found = calls::show(state, id).await.map_err(ticket_error)?;
    Ok(ticket_object(tickets, &found, true))
}

/// A ticket in RANDOM.ORG's form; with `result` (its kept answer, `null` until used) when it
/// is shown and `with_result`.
fn ticket_object(tickets: &Tickets, t: &Ticket, with_result: bool) -> Vec<u8> {
    let time = |ms: Option<i64>| ms.map_or(Value::Null, |ms| Value::from(time_of(ms)));
    let serial = t
        .serial
        .as_deref()
        .map_or(Value::Null, |s| s.parse::<u64>().map_or_else(|_| Value::from(s), Value::from));
    let fields = [
        ("ticketId", Value::from(t.id.as_str())),
        ("hashedApiKey", Value::from(tickets.caller_hash(&t.caller))),
        ("showResult", Value::Bool(t.shows_result())),
        ("creationTime", time(Some(t.created_ms))),
        ("usedTime", time(t.used_ms)),
        ("serialNumber", serial),
        ("expirationTime", time(t.expires_ms)),
        ("previousTicketId", t.previous_id.as_deref().map_or(Value::Null, Value::from)),
        ("nextTicketId", t.next_id.as_deref().map_or(Value::Null, Value::from)),
    ];
    let mut out = canonical::write(fields.iter().map(|(k, v)| (*k, v)));
    if with_result && t.shows_result() {
        let kept = t.result.as_deref().filter(|r| serde_json::from_slice::<serde::de::IgnoredAny>(r).is_ok());
        out.pop();
        out.extend_from_slice(b",\"result\":");
        out.extend_from_slice(kept.unwrap_or(b"null"));
        out.push(b'}');
    }
    out
}

/// `verifySignature` (anyone): whether `signature` is the door key's over `random` as it
/// serialises canonically. `params` (checked to name nothing else already) is taken whole, so
/// that `random` moves into the lane that re-encodes and checks it.
pub async fn verify(state: &AppState, params: Option<Value>) -> Result<Vec<u8>, RpcError> {
    let door = door(state)?;
    let mut params = match params {
        Some(Value::Object(params)) => params,
        _ => serde_json::Map::new(),
    };
    let random = match params.remove("random") {
        Some(Value::Object(random)) => random,
        None | Some(Value::Null) => return Err(RpcError::invalid_params("random")),
        Some(_) => return Err(RpcError::malformed("random")),
    };
    let signature = match params.remove("signature") {
        Some(Value::String(signature)) => signature,
        None | Some(Value::Null) => return Err(RpcError::invalid_params("signature")),
        Some(_) => return Err(RpcError::malformed("signature")),
    };
    signer(door)?;
    let Ok(signature) = data_encoding::BASE64.decode(signature.as_bytes()) else {
        return Ok(br#"{"authenticity":false}"#.to_vec());
    };
    // Re-encoded and checked in the public lane: a `random` of 10,000 values takes a while.
    let verifier = door.clone();
    let check = move || {
        let bytes = canonical::canonical(&random);
        bytes.is_some_and(|b| verifier.signer().is_some_and(|s| s.verify(&b, &signature)))
    };
    let authentic = state.receipts.lane().run(check).await;
    let authentic = authentic.ok_or_else(|| RpcError::offline("overloaded"))?;
    Ok(format!(r#"{{"authenticity":{authentic}}}"#).into_bytes())
}
