//! `drbgd verify --beacon-info`: a receipt of a draw bound to a beacon round checked end to end,
//! offline but for the chain's `/info`: the chain it names (the `/info` given must hash to the
//! receipt's `chain_hash`, which pins the network's key and schedule), the round's BLS signature
//! under that key, its randomness, and the values, recomputed with the derivation
//! ([`crate::tickets::bound`]).

use anyhow::{Context, bail, ensure};
use serde_json::Value;

use crate::beacon::upstream::{Pins, check_info, check_round};
use crate::tickets::bound::{self, Derived, Draw};

/// Checks `receipt` (`{"random": ..., "signature": ...}`, its own signature checked already)
/// against the chain of `info` (a drand `/info` body): the round verified.
///
/// # Errors
/// What does not hold, named.
pub fn check(receipt: &[u8], info: &[u8]) -> anyhow::Result<u64> {
    let receipt: Value = serde_json::from_slice(receipt).context("not JSON")?;
    let r = &receipt["random"];
    let text = |name: &str| r[name].as_str().with_context(|| format!("the receipt has no {name}"));
    let chain_hash: [u8; 32] = const_hex::decode(text("chain_hash")?)
        .ok()
        .and_then(|h| h.try_into().ok())
        .context("chain_hash is not 32 bytes of hex")?;
    let info_json: Value = serde_json::from_slice(info).context("--beacon-info: not JSON")?;
    let public_key = info_json["public_key"].as_str().and_then(|k| const_hex::decode(k).ok());
    let pins = Pins { chain_hash, public_key: public_key.context("--beacon-info: no public_key")? };
    let (chain, verifier) =
        check_info(info, &pins).context("--beacon-info is not the chain the receipt names")?;
    let round = r["round"].as_u64().context("the receipt has no round")?;
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
    let draw = draw_of(r)?;
    let derived =
        bound::derive(&signed.randomness, text("ticket")?, &draw).map_err(|e| anyhow::anyhow!("{e}"))?;
    let expected = match derived {
        Derived::Bytes(bytes) => Value::from(const_hex::encode(bytes)),
        Derived::Values(values) => values.iter().map(ToString::to_string).collect(),
    };
    if r["data"] != expected {
        bail!("the values are not those of round {round}'s derivation ({})", bound::DERIVATION);
    }
    Ok(round)
}

/// The draw a receipt names: its endpoint and parameters as the receipt types them.
fn draw_of(r: &Value) -> anyhow::Result<Draw> {
    ensure!(r["alg"] == bound::DERIVATION, "alg is not {}", bound::DERIVATION);
    let endpoint = r["endpoint"].as_str().unwrap_or_default();
    Draw::of_receipt(endpoint, r)
        .with_context(|| format!("not a draw of /int, /sequence or /bits with its parameters: {endpoint:?}"))
}
