//! Tickets bound to a beacon round, as both transports' calls make and use them (what they are
//! and the derivation: [`crate::tickets::bound`]; docs/verifiable.md):
//!
//! - created with `"round": R`, `"label"` and `"draw": {"endpoint": "/int", "min": 1, "max":
//!   6, "count": 5}` (`POST /tickets`, one ticket): R checked against the followed drand network
//!   (the round after the next at the earliest, within a year), the label (one bound ticket a
//!   label per caller, ever: the store keeps that), the draw against the endpoint's own rules
//!   and the caller's policy, and the ticket's commitment signed with the receipts' key and
//!   stored with it;
//! - used by the draw's endpoint (`POST /int {"ticket": id}`, the parameters absent or the
//!   committed ones): the commitment verified first (its signature, what it commits to, its
//!   time before R), 425 with `Retry-After` until R is verified, then the derivation's values
//!   in a receipt that carries the round, its signature (and previous signature, chained), its
//!   randomness, the chain hash, the label and the derivation's name.

use std::time::Duration;

use crate::beacon::{Beacon, Refusal, SignedRound, wall_clock};
use crate::callers::{Admission, Draw as Charge};
use crate::drbg::Algorithm;
use crate::error::ApiError;
use crate::http::receipt;
use crate::http::sequence::SequenceRequest;
use crate::pipeline::params::{Param, Params};
use crate::pipeline::{Answer, Endpoint};
use crate::receipts::random::{Field, integer, integer_u64};
use crate::receipts::{Random, TicketStamp};
use crate::route::Route;
use crate::service::{BitsRequest, Encoding, IntRequest};
use crate::state::AppState;
use crate::tickets::bound::{self, DERIVATION, Derived, Draw};
use crate::tickets::{Bound, Ticket};

/// How far ahead a ticket may be bound: a round due within a year.
const MAX_AHEAD: Duration = Duration::from_secs(366 * 24 * 3600);

/// What new tickets are bound to (`POST /tickets`' `round`, `draw` and `label`), as asked.
#[derive(Debug, Clone, Copy)]
pub struct Bind<'a> {
    /// The round.
    pub round: u64,
    /// The draw: `endpoint` and its parameters.
    pub draw: &'a serde_json::Value,
    /// What it is for.
    pub label: Option<&'a str>,
}

/// How long a bound ticket must stay usable after its round is due, at least.
const DRAW_WITHIN_MS: i64 = 3600 * 1000;

/// Most bytes of a label.
const MAX_LABEL: usize = 128;

/// A binding asked for at creation, checked: the round, the draw, the label, the chain.
#[derive(Debug, Clone)]
pub struct Binding {
    round: u64,
    draw: Draw,
    label: String,
    chain_hash: String,
    /// When the round is due, Unix milliseconds.
    due_ms: i64,
}

/// The beacon a bound ticket's round comes from: a followed drand network.
fn followed(state: &AppState) -> Result<&Beacon, ApiError> {
    state.beacon.as_deref().filter(|b| b.follows()).ok_or_else(|| {
        ApiError::invalid(
            "round_needs_drand",
            "round",
            "a draw is bound to a round of a drand network this server follows ([beacon] source = \"drand\"): \
             the key-based beacon's holder could compute its rounds in advance",
        )
    })
}

/// What a bound draw is charged as: HMAC_DRBG (SHA-256) output with a receipt.
fn charge(draw: &Draw) -> Charge {
    Charge {
        alg: Algorithm::HmacSha256,
        n_bits: draw.output_bytes().saturating_mul(8),
        pr: false,
        receipt: true,
    }
}

/// The binding of `bind` (its draw a JSON object: `endpoint` and its parameters) for a new
/// ticket of `admission`'s caller.
///
/// # Errors
/// 400 `round_needs_drand`, `round_draw_not_approved`, `round_not_future`, `round_too_far`,
/// `invalid_label`, `invalid_draw`, `round_draw_not_allowed`, the endpoint's own codes,
/// `receipts_disabled`; 403 from the caller's policy; 503 `beacon_unavailable` while the
/// network's chain is not known.
pub fn binding(state: &AppState, admission: &Admission, bind: Bind<'_>) -> Result<Binding, ApiError> {
    let Bind { round, draw, label } = bind;
    approved_only(state)?;
    let label = label.filter(|l| valid_label(l)).ok_or_else(|| {
        ApiError::invalid(
            "invalid_label",
            "label",
            format!(
                "a ticket bound to a round needs a label saying what its draw is for: 1 to {MAX_LABEL} printable \
                 ASCII characters, no space at either end or twice in a row (a caller's label names one bound \
                 ticket, ever, whatever its case)"
            ),
        )
    })?;
    let beacon = followed(state)?;
    let chain = beacon.chain().ok_or(ApiError::BeaconUnavailable)?;
    let now = wall_clock();
    let out = chain.schedule().round_at(now).max(beacon.latest_verified().map_or(0, |r| r.round));
    // The next round is refused too: the commitment is signed and stored before its round is
    // due, with a period to spare.
    if round <= out + 1 {
        return Err(ApiError::invalid(
            "round_not_future",
            "round",
            format!("round {round} is out or due within a period; the first allowed is {}", out + 2),
        ));
    }
    let until = chain.schedule().until(round, now);
    if until > MAX_AHEAD {
        return Err(ApiError::invalid("round_too_far", "round", "round must be due within a year"));
    }
    let draw = read_draw(state, draw)?;
    state.receipts.ask(true, None, None)?.ok_or(ApiError::Internal)?.check_size(draw.output_bytes())?;
    admission.caller.policy.check(&charge(&draw))?;
    let due_ms = i64::try_from((now + until).as_millis()).unwrap_or(i64::MAX);
    Ok(Binding { round, draw, label: label.to_owned(), chain_hash: chain.hash_hex().to_owned(), due_ms })
}

/// Whether `label` is one: printable ASCII, 1 to [`MAX_LABEL`] of them, no space at either end
/// or twice in a row. So a label reads one way: no look-alike characters, invisible spaces or
/// direction marks make a second label that reads as the first (and the stores compare labels
/// without their case).
fn valid_label(label: &str) -> bool {
    (1..=MAX_LABEL).contains(&label.len())
        && label.bytes().all(|b| (0x20..0x7f).contains(&b))
        && !label.starts_with(' ')
        && !label.ends_with(' ')
        && !label.contains("  ")
}

/// 400 `round_draw_not_approved` in approved-only mode.
fn approved_only(state: &AppState) -> Result<(), ApiError> {
    match state.service.rules().approved_only {
        true => Err(ApiError::invalid(
            "round_draw_not_approved",
            "round",
            "a draw bound to a round is a public derivation, not an SP 800-90A instance: this server serves \
             approved mechanisms only ([drbg] approved_only)",
        )),
        false => Ok(()),
    }
}

/// The draw of a creation's `draw` member.
fn read_draw(state: &AppState, draw: &serde_json::Value) -> Result<Draw, ApiError> {
    let invalid = || {
        ApiError::invalid(
            "invalid_draw",
            "draw",
            "draw must be an object naming its endpoint and parameters: {\"endpoint\": \"/int\", \"min\": 1, ...}",
        )
    };
    let endpoint = draw.get("endpoint").and_then(serde_json::Value::as_str).ok_or_else(invalid)?;
    draw_of(state, endpoint, &Params::from_json(draw)?, &["endpoint"])
}

/// The draw of `endpoint` with `params`' parameters (those named in `besides` aside), read and
/// checked by the endpoint's own request (its defaults applied, its codes); no `alg`, `format`
/// or `pr`: the derivation fixes the generator.
///
/// # Errors
/// 400 `round_draw_not_allowed` (another endpoint, or a parameter it does not take), `invalid_n`
/// (bits not whole bytes), and the endpoint's own codes.
fn draw_of(
    state: &AppState,
    endpoint: &str,
    params: &Params<'_>,
    besides: &[&str],
) -> Result<Draw, ApiError> {
    let not_allowed = |detail: String| ApiError::invalid("round_draw_not_allowed", "draw", detail);
    let route = Route::named(endpoint).filter(|r| matches!(r, Route::Int | Route::Sequence | Route::Bits));
    let Some(route) = route else {
        return Err(not_allowed(format!(
            "a draw bound to a round is one of /int, /sequence, /bits (its values are public once the round is out), not {endpoint:?}"
        )));
    };
    let takes: &[Param] =
        if route == Route::Bits { &[Param::N] } else { &[Param::Min, Param::Max, Param::Count] };
    let taken = |name: &str| besides.contains(&name) || takes.iter().any(|p| p.name() == name);
    if let Some((name, _)) = params.pairs().find(|(name, _)| !taken(name)) {
        let names: Vec<&str> = takes.iter().map(|p| p.name()).collect();
        return Err(not_allowed(format!(
            "{endpoint} bound to a round takes {}, not {name:?} (the derivation fixes the generator)",
            names.join(", ")
        )));
    }
    let rules = state.service.rules();
    let (min, max, count) = (params.i64(Param::Min)?, params.i64(Param::Max)?, params.u64(Param::Count)?);
    Ok(match route {
        Route::Int => {
            let req = IntRequest::new(rules, min, max, count, None)?;
            Draw::Int { min: req.min(), max: req.max(), count: req.count() as u64 }
        }
        Route::Sequence => {
            let req = SequenceRequest::new(rules, min, max, count, None)?;
            let (min, max) = req.bounds();
            Draw::Sequence { min, max, count: req.count() as u64 }
        }
        _ => {
            let req = BitsRequest::new(rules, params.u64(Param::N)?, None, Encoding::Hex, false)?;
            if req.n_bits() % 8 != 0 {
                return Err(ApiError::invalid(
                    "invalid_n",
                    "n",
                    "n bound to a round must be a multiple of 8",
                ));
            }
            Draw::Bits { n: req.n_bits() }
        }
    })
}

/// `ticket`'s binding to `binding`: its commitment (the round, the chain, the draw, the ticket)
/// signed with the receipts' key, `{"random": ..., "signature": ...}` as receipts are.
///
/// # Errors
/// 400 `round_after_expiry` (the ticket would expire before the round); 503 when nothing
/// could be signed.
pub fn commit(
    state: &AppState,
    admission: &Admission,
    ticket: &Ticket,
    binding: &Binding,
) -> Result<Bound, ApiError> {
    // An hour to draw it once its round is out: a ticket that expired unused would leave its
    // label spent and no draw.
    if ticket.expires_ms.is_some_and(|at| at <= binding.due_ms.saturating_add(DRAW_WITHIN_MS)) {
        return Err(ApiError::invalid(
            "round_after_expiry",
            "round",
            format!(
                "round {} is due less than an hour before the ticket expires ([tickets] ttl_seconds)",
                binding.round
            ),
        ));
    }
    let stamp = TicketStamp { id: ticket.id.clone(), previous: None };
    let ask = state.receipts.ask(true, None, Some(&stamp))?.ok_or(ApiError::Internal)?;
    let random = with_draw(Random::default(), &binding.draw)
        .with("endpoint", Field::Name(Route::Tickets.name()))
        .with("alg", Field::Name(DERIVATION))
        .with("draw_endpoint", Field::Name(binding.draw.route().name()))
        .with("round", integer_u64(binding.round))
        .with("label", binding.label.as_str())
        .with("chain_hash", binding.chain_hash.as_str());
    let signed = state.receipts.issue(&state.service, &admission.caller, &ask, random)?;
    let commitment =
        format!("{{\"random\":{},\"signature\":\"{}\"}}", signed.json(), signed.signature()).into_bytes();
    Ok(Bound {
        round: binding.round,
        draw: binding.draw.to_stored(),
        commitment,
        label: binding.label.clone(),
    })
}

/// `random` with `draw`'s parameters, typed as the endpoint's receipts type them.
fn with_draw(random: Random, draw: &Draw) -> Random {
    match *draw {
        Draw::Bits { n } => random.with("n", integer_u64(n)),
        Draw::Int { min, max, count } | Draw::Sequence { min, max, count } => {
            random.with("min", integer(min)).with("max", integer(max)).with("count", integer_u64(count))
        }
    }
}

/// What a bound ticket's commitment says: the chain, and when it was made (its `issued_at`, and
/// the same in Unix milliseconds); `None` unless its signature verifies with a
/// receipt key in force and it commits to what the ticket's columns hold (the ticket, its
/// caller, the label, the round, the draw): a store whose columns and signed commitment
/// disagree, or whose commitment was not signed here, is not whole, and nothing is drawn under
/// it.
fn committed(state: &AppState, ticket: &Ticket, bound: &Bound, draw: &Draw) -> Option<Commitment> {
    let ring = state.receipts.keys();
    let shape = crate::receipts::strict_json::Shape::ANY;
    let verdict =
        crate::receipts::verify::verify_json(&bound.commitment, shape, |id| ring.find(id).map(|k| k.key));
    if let Some(reason) = verdict.ok()?.failure {
        // `unknown_key`: the key that signed it was taken out of receipts.signing_keys.
        tracing::error!(
            ticket = ticket.id,
            reason = reason.code(),
            "a bound ticket's commitment does not verify"
        );
        return None;
    }
    let value: serde_json::Value = serde_json::from_slice(&bound.commitment).ok()?;
    let random = value.get("random")?;
    let text = |name: &str| random.get(name)?.as_str().map(str::to_owned);
    let endpoint = text("draw_endpoint")?;
    let same = text("ticket")? == ticket.id
        && text("caller")? == ticket.caller
        && text("label")? == bound.label
        && random.get("round")?.as_u64()? == bound.round
        && Draw::of_receipt(&endpoint, random) == Some(*draw);
    // The time it states and signs (the serial's may run ahead of it after a clock step back).
    let issued =
        time::OffsetDateTime::parse(&text("issued_at")?, &time::format_description::well_known::Rfc3339)
            .ok()?;
    let issued_ms = u64::try_from(issued.unix_timestamp_nanos() / 1_000_000).ok()?;
    same.then_some(Commitment { chain_hash: text("chain_hash")?, issued_at: text("issued_at")?, issued_ms })
}

/// A bound ticket's verified commitment, as the draw uses it.
struct Commitment {
    chain_hash: String,
    issued_at: String,
    issued_ms: u64,
}

/// The draw of `endpoint` under `ticket`, bound to `bound`: its values once the round is
/// verified, in a receipt naming the round (`params` holds the ticket's stamp).
///
/// # Errors
/// 409 `ticket_bound_elsewhere`, `ticket_bound_to_other_params`; 425 until the round is out;
/// 503 `beacon_unavailable`; 503 `store_unavailable` for a binding that does not read; the
/// caller's policy and quota.
pub async fn draw(
    state: &AppState,
    admission: &Admission,
    endpoint: &Endpoint,
    params: &Params<'_>,
    ticket: &Ticket,
    bound: &Bound,
) -> Result<Answer, ApiError> {
    let draw = Draw::from_stored(&bound.draw);
    let Some((draw, commitment)) = draw.and_then(|d| Some((d, committed(state, ticket, bound, &d)?))) else {
        tracing::error!(ticket = ticket.id, "a bound ticket whose draw or commitment does not read");
        return Err(ApiError::StoreUnavailable);
    };
    if endpoint.guard.route != Some(draw.route()) {
        return Err(ApiError::Conflict {
            code: "ticket_bound_elsewhere",
            detail: format!("ticket {} is bound to a draw of {}", ticket.id, draw.route().name()),
        });
    }
    same_params(state, &draw, params)?;
    approved_only(state)?;
    let beacon = followed(state).map_err(|_| ApiError::BeaconUnavailable)?;
    let chain = beacon.chain().ok_or(ApiError::BeaconUnavailable)?;
    if chain.hash_hex() != commitment.chain_hash {
        tracing::error!(ticket = ticket.id, "the chain followed now is not the one a bound ticket names");
        return Err(ApiError::BeaconUnavailable);
    }
    let due_ms = chain.schedule().due_at(bound.round).map_or(u64::MAX, |s| s.saturating_mul(1000));
    if commitment.issued_ms >= due_ms {
        tracing::error!(ticket = ticket.id, "a bound ticket whose commitment is not older than its round");
        return Err(ApiError::StoreUnavailable);
    }
    let signed =
        beacon.signed_in_turn(bound.round, wall_clock()).await.map_err(|r| refused(r, bound.round))?;
    let derived = bound::derive(&signed.randomness, &ticket.id, &draw)?;
    let random =
        with_round(drawn(state, &draw, derived)?, &signed, &commitment.chain_hash, &commitment.issued_at)
            .with("label", bound.label.as_str());
    let ask = receipt::ask(state, params)?.ok_or(ApiError::Internal)?;
    // Charged once the answer is made: a refusal above costs the caller nothing.
    let charged = charge(&draw);
    admission.caller.permit(&charged, charged.n_bits / 8)?;
    receipt::respond(state, admission, &ask, random, Algorithm::HmacSha256, 0)
}

/// 409 `ticket_bound_to_other_params` unless `params` give no parameter of the draw, or the
/// committed ones.
fn same_params(state: &AppState, draw: &Draw, params: &Params<'_>) -> Result<(), ApiError> {
    let besides = ["ticket", "receipt", "user_data"];
    if params.pairs().all(|(name, _)| besides.contains(&name)) {
        return Ok(());
    }
    let asked = draw_of(state, draw.route().name(), params, &besides)?;
    match asked == *draw {
        true => Ok(()),
        false => Err(ApiError::Conflict {
            code: "ticket_bound_to_other_params",
            detail: "this ticket's draw was fixed at its creation with other parameters (leave them out)"
                .into(),
        }),
    }
}

/// The error of a round not served now.
fn refused(refusal: Refusal, round: u64) -> ApiError {
    match refusal {
        Refusal::NotDue { wait, .. } => {
            let secs = crate::http::beacon::retry_secs(wait);
            ApiError::TooEarly {
                retry_after: secs,
                detail: format!("round {round} is not out (verified) yet: this draw is due in {secs} s"),
            }
        }
        Refusal::Busy => ApiError::Overloaded,
        Refusal::NoRound | Refusal::Unavailable => ApiError::BeaconUnavailable,
    }
}

/// The `random` object of `draw`'s derived values.
fn drawn(state: &AppState, draw: &Draw, derived: Derived) -> Result<Random, ApiError> {
    let random = match (*draw, derived) {
        (Draw::Bits { n }, Derived::Bytes(bytes)) => {
            let req = BitsRequest::new(state.service.rules(), Some(n), None, Encoding::Hex, false)?;
            Random::bits(Route::Bits, &req, &bytes)
        }
        (Draw::Int { min, max, .. }, Derived::Values(values)) => {
            Random::integers(Route::Int, Algorithm::HmacSha256, (min, max), &values)
        }
        (Draw::Sequence { min, max, .. }, Derived::Values(values)) => {
            Random::integers(Route::Sequence, Algorithm::HmacSha256, (min, max), &values)
        }
        _ => return Err(ApiError::Internal),
    };
    Ok(random.with("alg", Field::Name(DERIVATION)))
}

/// `random` with the round it was derived from: enough to check it offline against the chain.
fn with_round(random: Random, signed: &SignedRound, chain_hash: &str, committed_at: &str) -> Random {
    let random = random
        .with("round", integer_u64(signed.round))
        .with("round_signature", const_hex::encode(&signed.signature))
        .with("round_randomness", const_hex::encode(signed.randomness))
        .with("chain_hash", chain_hash)
        .with("committed_at", committed_at);
    match &signed.previous {
        Some(previous) => random.with("round_previous_signature", const_hex::encode(previous)),
        None => random,
    }
}
