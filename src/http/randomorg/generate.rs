//! The generating methods: `generate*` (Basic) and `generateSigned*` (Signed). Both read the
//! parameters and draw the values alike (`crate::randomorg::request`, `values`) from the
//! caller's default generator, under its policy (route `/json-rpc/4/invoke`), byte quota
//! (the words drawn), the door's daily allowances (`bitsUsed`) and the pool's self-tests. A Signed result is then signed with the door's RSA key off the async workers,
//! and kept before it is answered (with its ticket's use, when it names one: a ticket is used
//! once, an identical retry too is 422, and the lost answer comes back through `getResult`),
//! under a serial number the store gives. A draw that is not answered takes nothing of the
//! day's allowance.

use serde_json::{Map, Value};

use super::keep::{self, ticket_error};
use super::rpc::{Done, Reply, rpc_error};
use crate::callers::{Admission, Draw};
use crate::pipeline::Served;
use crate::randomorg::params::Params;
use crate::randomorg::request::{self, Kind, Request};
use crate::randomorg::{RpcError, canonical, values};
use crate::state::AppState;
use crate::tickets::{self, Kept, Lookup, Ticket, Tickets, Use};

/// The most characters `userData` takes, as JSON (RANDOM.ORG's bound).
const MAX_USER_DATA: usize = 1000;

/// The `license` of every signed result: drbgd's values are licensed by whoever runs it.
fn license() -> Value {
    serde_json::json!({
        "type": "drbgd",
        "text": "Random values drawn by a drbgd server and signed with its operator's key, not RANDOM.ORG's",
        "infoUrl": null
    })
}

/// A generating method of `kind`, Basic or Signed, for the admitted caller.
pub async fn generate(
    state: &AppState,
    admission: &Admission,
    key: &str,
    kind: Kind,
    signed: bool,
    params: &Params<'_>,
) -> Done {
    let req = request::read(kind, params)?;
    if !signed {
        let drawn = draw(state, admission, &req, false)?;
        let random = canonical::write([
            ("data", &drawn.data),
            ("completionTime", &Value::from(keep::time_of(tickets::now_ms()))),
        ]);
        let result = keep::with_usage(&random, None, drawn.bits, drawn.left);
        return Ok(Reply { result, served: Some(drawn.served), ..Reply::default() });
    }
    let door = keep::door(state)?;
    let tickets = keep::store(state)?;
    keep::signer(door)?;
    let extra = Extra::read(params)?;
    // A full store would refuse the result after it was signed: refused before the draw.
    tickets.room().map_err(|e| rpc_error(&e))?;
    let held = match &extra.ticket {
        Some(id) => Some(hold(tickets, admission, id).await?),
        None => None,
    };
    let drawn = draw(state, admission, &req, true)?;
    let call = Call { state, admission, key, kind, req: &req, extra: &extra, params: *params };
    call.signed_and_kept(held, drawn).await
}

/// A Signed call, its parameters read.
struct Call<'a> {
    state: &'a AppState,
    admission: &'a Admission,
    key: &'a str,
    kind: Kind,
    req: &'a Request,
    extra: &'a Extra,
    params: Params<'a>,
}

impl Call<'_> {
    /// A signed result of `drawn`, kept (with its ticket's use) before it is answered. A draw
    /// not signed, or whose ticket another use took first, gives back the day's allowance it
    /// took; one whose store write failed does not (it may have been kept, and its result read
    /// back through `getResult`).
    async fn signed_and_kept(&self, held: Option<(tickets::Held, Ticket)>, drawn: Drawn) -> Done {
        let (door, tickets) = (keep::door(self.state)?, keep::store(self.state)?);
        let refund = |e: RpcError| {
            door.refund(self.admission.caller.name(), drawn.bits, drawn.day);
            e
        };
        let serial = tickets.next_serial().await.map_err(|e| refund(rpc_error(&e)))?;
        let ticket = held.as_ref().map(|(_, t)| t);
        let ((random, signature), next) = self.sign(drawn.data, ticket, serial).await.map_err(refund)?;
        let result = keep::with_usage(&random, Some(&signature), drawn.bits, drawn.left);
        let ticket = held.as_ref().map(|(_, t)| t.id.clone());
        match held {
            Some((_guard, ticket)) => {
                let settled =
                    settle(tickets, self.admission, &self.params, &ticket, serial, next, &result).await;
                // Another use of the ticket, or its expiry, came first: nothing kept.
                settled.map_err(|e| if matches!(e.code, 420 | 422) { refund(e) } else { e })?;
            }
            None => {
                let caller = self.admission.caller.name().to_owned();
                let kept = Kept { serial: serial.to_string(), caller, result: result.clone() };
                tickets.keep(kept).await.map_err(|e| rpc_error(&e))?;
            }
        }
        Ok(Reply { result, served: Some(drawn.served), serial: Some(serial.to_string()), ticket })
    }

    /// The `random` object's bytes and their signature (base64), and the ticket its use makes
    /// next.
    async fn sign(
        &self,
        data: Value,
        ticket: Option<&Ticket>,
        serial: u64,
    ) -> Result<((Vec<u8>, String), Option<String>), RpcError> {
        let now = tickets::now_ms();
        let next = match ticket {
            Some(_) => Some(tickets::new_id(&self.state.service, now).map_err(|e| rpc_error(&e))?),
            None => None,
        };
        let ticket_data = ticket.map_or(Value::Null, |t| {
            serde_json::json!({ "ticketId": t.id, "previousTicketId": t.previous_id, "nextTicketId": next })
        });
        let mut echo: Map<String, Value> =
            self.req.echo.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
        echo.insert("method".into(), Value::from(self.kind.names().1));
        echo.insert("hashedApiKey".into(), Value::from(keep::hashed_key(self.key)));
        echo.insert("data".into(), data);
        echo.insert("license".into(), license());
        echo.insert("licenseData".into(), Value::Null);
        echo.insert("userData".into(), self.extra.user_data.clone());
        echo.insert("ticketData".into(), ticket_data);
        echo.insert("completionTime".into(), Value::from(keep::time_of(now)));
        echo.insert("serialNumber".into(), Value::from(serial));
        let random = canonical::canonical(&echo).ok_or_else(RpcError::internal)?;
        let signature = keep::sign(keep::door(self.state)?, random.clone()).await?;
        Ok(((random, signature), next))
    }
}

/// What a draw made: its values, what it served, the bits RANDOM.ORG counts for it, what the
/// caller has left, and the day its allowance was taken from.
struct Drawn {
    data: Value,
    served: Served,
    bits: u64,
    left: keep::Left,
    day: i64,
}

/// `req`'s values from the caller's default generator, the day's allowance and the quota
/// taken: the quota for the words the draw takes at least (64 bits each; a redrawn rejection
/// is not charged, as `/int` charges), the allowance for RANDOM.ORG's `bitsUsed`; a `signed`
/// draw needs a policy that allows receipts (a signature is one).
fn draw(state: &AppState, admission: &Admission, req: &Request, signed: bool) -> Result<Drawn, RpcError> {
    let door = keep::door(state)?;
    let bits = values::bits_used(&req.spec);
    let day = keep::today();
    let caller = admission.caller.name();
    let allowance = door.spend(caller, bits, day)?;
    let alg = state.service.rules().default_alg;
    let n_bits = values::drawn_bits(&req.spec);
    let draw = Draw { alg, n_bits, pr: false, receipt: signed };
    let drawn = state
        .service
        .draw_words(&admission.caller, &draw, |words| values::draw(&req.spec, &mut || words.next_u64()));
    match drawn {
        Ok(data) => {
            let left = keep::left(admission, allowance);
            Ok(Drawn { data, served: Served { alg, n_bits }, bits, left, day })
        }
        Err(e) => {
            door.refund(caller, bits, day);
            Err(rpc_error(&e))
        }
    }
}

/// The Signed API's own parameters.
struct Extra {
    user_data: Value,
    ticket: Option<String>,
}

impl Extra {
    fn read(params: &Params<'_>) -> Result<Extra, RpcError> {
        if params.get("licenseData").is_some() {
            return Err(RpcError::license_data_not_allowed());
        }
        let user_data = params.get("userData").cloned().unwrap_or(Value::Null);
        let len = user_data.to_string().chars().count();
        if len > MAX_USER_DATA {
            return Err(RpcError::too_long("userData", len, MAX_USER_DATA));
        }
        let ticket = params
            .get("ticketId")
            .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| RpcError::malformed("ticketId")));
        Ok(Extra { user_data, ticket: ticket.transpose()? })
    }
}

/// Ticket `id` held for this draw and found unused: the caller's, unbound.
async fn hold(
    tickets: &Tickets,
    admission: &Admission,
    id: &str,
) -> Result<(tickets::Held, Ticket), RpcError> {
    if !tickets::valid_id(id) {
        return Err(RpcError::no_such_ticket());
    }
    let caller = keep::holder(admission)?;
    let guard = tickets.hold(caller, id).await;
    match tickets.lookup(caller, id).await.map_err(ticket_error)? {
        Lookup::Used { .. } => Err(RpcError::ticket_used()),
        // A ticket bound to a beacon round draws its values from the round, at its own endpoint.
        Lookup::Unused(ticket) if ticket.bound.is_some() => Err(RpcError::illegal("ticketId")),
        Lookup::Unused(ticket) => Ok((guard, ticket)),
    }
}

/// The use of `ticket` kept with `result`, its successor `next` made; 422 when another use
/// got there first.
async fn settle(
    tickets: &Tickets,
    admission: &Admission,
    params: &Params<'_>,
    ticket: &Ticket,
    serial: u64,
    next: Option<String>,
    result: &[u8],
) -> Result<(), RpcError> {
    let caller = keep::holder(admission)?;
    let pairs: Vec<(String, String)> =
        params.pairs().filter(|(k, _)| *k != "apiKey").map(|(k, v)| (k.to_owned(), v.to_string())).collect();
    let digest = tickets::request_digest(
        caller,
        super::rpc::PATH,
        pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    );
    let used = Use {
        id: ticket.id.clone(),
        caller: caller.to_owned(),
        digest,
        serial: serial.to_string(),
        result: result.to_vec(),
        next_id: next.unwrap_or_default(),
    };
    match tickets.settle(used).await.map_err(|e| rpc_error(&e))? {
        true => Ok(()),
        // Used by another request in between (422), or expired (420): what the store says now.
        false => match tickets.lookup(caller, &ticket.id).await.map_err(ticket_error)? {
            Lookup::Used { .. } => Err(RpcError::ticket_used()),
            Lookup::Unused(_) => Err(rpc_error(&crate::error::ApiError::StoreUnavailable)),
        },
    }
}
