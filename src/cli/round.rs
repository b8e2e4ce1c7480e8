//! `drbgd verify --beacon-info`: a receipt of a draw bound to a beacon round checked end to end,
//! offline but for the chain's `/info`: the chain it names (the `/info` given must hash to the
//! receipt's `chain_hash`, which pins the network's key and schedule), the round's BLS signature
//! under that key, its randomness, and the values, recomputed with the derivation
//! ([`crate::tickets::bound`]).

use anyhow::{Context, bail, ensure};
use serde_json::Value;

use crate::beacon::upstream::{Pins, check_info, check_round};
use crate::tickets::bound::{self, Derived, Draw};

/// What a checked round-bound receipt says, for the verdict line.
#[derive(Debug)]
pub struct Checked {
    /// The round.
    pub round: u64,
    /// The chain, hex.
    pub chain_hash: String,
    /// The ticket, its caller, its label.
    pub ticket: String,
    /// Its caller.
    pub caller: String,
    /// What the draw was for.
    pub label: String,
    /// When its commitment was signed.
    pub committed_at: String,
}

/// Checks `receipt` (`{"random": ..., "signature": ...}`, its own signature checked already)
/// against the chain of `info` (a drand `/info` body), pinned by `chain_hash` (hex) when given:
/// the round verified, committed to before it was due, its values the derivation's.
///
/// # Errors
/// What does not hold, named.
pub fn check(receipt: &[u8], info: &[u8], chain_hash: Option<&str>) -> anyhow::Result<Checked> {
    let receipt: Value = serde_json::from_slice(receipt).context("not JSON")?;
    let r = &receipt["random"];
    let text = |name: &str| r[name].as_str().with_context(|| format!("the receipt has no {name}"));
    if let Some(pinned) = chain_hash {
        ensure!(pinned.eq_ignore_ascii_case(text("chain_hash")?), "the receipt's chain is not --chain-hash");
    }
    let pins = Pins { chain_hash: hex32(text("chain_hash")?)?, public_key: info_key(info)? };
    let (chain, verifier) =
        check_info(info, &pins).context("--beacon-info is not the chain the receipt names")?;
    let round = r["round"].as_u64().context("the receipt has no round")?;
    let due = chain.schedule().due_at(round).context("the round is beyond the chain's clock")?;
    let committed = text("committed_at")?;
    let committed_s = time::OffsetDateTime::parse(committed, &time::format_description::well_known::Rfc3339)
        .context("committed_at is not an RFC 3339 time")?
        .unix_timestamp();
    ensure!(
        u64::try_from(committed_s).is_ok_and(|c| c < due),
        "the draw was committed at {committed}, not before round {round} was due"
    );
    let mut body = serde_json::json!({"round": round, "signature": text("round_signature")?});
    if let Some(previous) = r["round_previous_signature"].as_str() {
        body["previous_signature"] = previous.into();
    }
    let signed = check_round(body.to_string().as_bytes(), &chain, &verifier, Some(round), None)
        .context("the round's signature")?;
    ensure!(
        const_hex::encode(signed.randomness) == text("round_randomness")?,
        "round_randomness is not the round's"
    );
    values(r, &signed.randomness)?;
    Ok(Checked {
        round,
        chain_hash: chain.hash_hex().to_owned(),
        ticket: text("ticket")?.to_owned(),
        caller: text("caller")?.to_owned(),
        label: text("label")?.to_owned(),
        committed_at: committed.to_owned(),
    })
}

/// 32 bytes of hex.
fn hex32(text: &str) -> anyhow::Result<[u8; 32]> {
    const_hex::decode(text).ok().and_then(|h| h.try_into().ok()).context("chain_hash is not 32 bytes of hex")
}

/// The public key an `/info` body states.
fn info_key(info: &[u8]) -> anyhow::Result<Vec<u8>> {
    let info: Value = serde_json::from_slice(info).context("--beacon-info: not JSON")?;
    info["public_key"]
        .as_str()
        .and_then(|k| const_hex::decode(k).ok())
        .context("--beacon-info: no public_key")
}

/// Whether `r`'s `data` is its draw's derivation from `randomness` (its size checked first: a
/// receipt says how much it holds).
fn values(r: &Value, randomness: &[u8; 32]) -> anyhow::Result<()> {
    let draw = draw_of(r)?;
    let held = match (&r["data"], draw) {
        (Value::String(hex), Draw::Bits { n }) => hex.len() as u64 == n / 4,
        (Value::Array(items), Draw::Int { count, .. } | Draw::Sequence { count, .. }) => {
            items.len() as u64 == count
        }
        _ => false,
    };
    ensure!(held, "data does not hold what the draw's parameters say");
    let ticket = r["ticket"].as_str().context("the receipt has no ticket")?;
    let derived = bound::derive(randomness, ticket, &draw).map_err(|e| anyhow::anyhow!("{e}"))?;
    let expected = match derived {
        Derived::Bytes(bytes) => Value::from(const_hex::encode(bytes)),
        Derived::Values(values) => values.iter().map(ToString::to_string).collect(),
    };
    match r["data"] == expected {
        true => Ok(()),
        false => bail!("the values are not those of the round's derivation ({})", bound::DERIVATION),
    }
}

/// The draw a receipt names: its endpoint and parameters as the receipt types them.
fn draw_of(r: &Value) -> anyhow::Result<Draw> {
    ensure!(r["alg"] == bound::DERIVATION, "alg is not {}", bound::DERIVATION);
    let endpoint = r["endpoint"].as_str().unwrap_or_default();
    Draw::of_receipt(endpoint, r)
        .with_context(|| format!("not a draw of /int, /sequence or /bits with its parameters: {endpoint:?}"))
}
