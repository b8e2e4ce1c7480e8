//! A drand network's answers as its HTTP API serves them (`/{chainhash}/info`,
//! `/{chainhash}/public/{round}`; the same on a v2 node's public listener and on drand's
//! relays), read and checked here, with no I/O ([`super::follow`] asks):
//!
//! - **`/info`** is accepted only when it names the pinned chain: its public key is the pinned
//!   one, its scheme one drbgd verifies, and the chain hash recomputed from its own values
//!   (period, genesis time, key, group hash, beacon id: [`super::chain::chain_hash`]) is the
//!   pinned hash, as is the `hash` it states. The pinned hash so covers every value drbgd then
//!   uses (the schedule, the scheme's key), and an upstream of another chain, or one that lies
//!   about this one, is refused by name.
//! - **A round** is accepted only when its signature verifies under the chain's key
//!   ([`super::scheme::Verifier`]) for the round asked, after its `previous_signature` on a
//!   chained scheme (a previous signature of the scheme's length: an empty one would make the
//!   chained message the unchained one's), in compressed form (a second encoding of the same
//!   point would hash to a second randomness), not ahead of the clock's next round (a valid
//!   round early is still early), and its stated `randomness` is SHA-256 of the signature. What
//!   is kept and served is rendered from the verified values ([`SignedRound::in_order`]), as a
//!   drand v2 node renders it, whichever upstream answered: never the upstream's bytes, and the
//!   same bytes on every replica.
//!
//! The scheme is `/info`'s word, which drand's chain hash does not cover; but the pinned key's
//! length names the one scheme of the two drbgd verifies that has a key of that group (96 bytes:
//! `bls-unchained-g1-rfc9380`; 48: `pedersen-bls-chained`), and a key of the other is refused.

use serde::Deserialize;

use super::chain::{Chain, ChainParams, chain_hash};
use super::round::{Order, SignedRound};
use super::scheme::{Scheme, Verifier};

/// What drbgd is told to follow (`[beacon]`'s `chain_hash` and `public_key`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pins {
    /// The chain hash.
    pub chain_hash: [u8; 32],
    /// The network's public key, compressed.
    pub public_key: Vec<u8>,
}

/// Why an upstream's `/info` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InfoError {
    /// Not drand's `/info` JSON.
    #[error("not a drand /info body ({0})")]
    Malformed(String),
    /// A scheme drbgd does not verify.
    #[error("scheme {0:?} is not one drbgd verifies (bls-unchained-g1-rfc9380, pedersen-bls-chained)")]
    Scheme(String),
    /// Another public key than the pinned one.
    #[error("its public key is not beacon.public_key")]
    PublicKey,
    /// Its values give another chain hash than the pinned one, or it states another.
    #[error("its values make chain {computed}, not beacon.chain_hash (it states {stated})")]
    ChainHash {
        /// The hash its values give.
        computed: String,
        /// The hash it states.
        stated: String,
    },
    /// A period or genesis time drbgd cannot schedule.
    #[error("period {period} s or genesis time {genesis_time} out of range")]
    Schedule {
        /// Seconds between rounds.
        period: u64,
        /// Unix seconds of round 1.
        genesis_time: i64,
    },
    /// The pinned key is not a point of the scheme's key group.
    #[error("beacon.public_key is not a {0} public key")]
    NotAKey(&'static str),
}

/// Why a round from an upstream was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoundError {
    /// Not drand's round JSON.
    #[error("not a drand round body ({0})")]
    Malformed(String),
    /// Another round than the one asked for.
    #[error("round {got} where round {asked} was asked for")]
    OtherRound {
        /// Asked for.
        asked: u64,
        /// Given.
        got: u64,
    },
    /// A chained scheme's round without its previous signature.
    #[error("no previous_signature (the chained scheme signs it)")]
    NoPrevious,
    /// The signature does not verify.
    #[error("round {0}'s signature does not verify under the chain's key")]
    BadSignature(u64),
    /// A round the clock says is not due yet.
    #[error("round {round} is ahead of the clock (round {latest} at most)")]
    Ahead {
        /// The round given.
        round: u64,
        /// The latest round the clock allows.
        latest: u64,
    },
    /// The stated randomness is not SHA-256 of the signature.
    #[error("round {0}'s randomness is not SHA-256 of its signature")]
    BadRandomness(u64),
}

#[derive(Deserialize)]
struct RemoteInfo {
    public_key: String,
    period: u64,
    genesis_time: i64,
    hash: String,
    #[serde(rename = "groupHash")]
    group_hash: String,
    #[serde(rename = "schemeID")]
    scheme_id: String,
    #[serde(default)]
    metadata: Option<RemoteMetadata>,
}

#[derive(Deserialize)]
struct RemoteMetadata {
    #[serde(rename = "beaconID", default)]
    beacon_id: String,
}

#[derive(Deserialize)]
struct RemoteRound {
    round: u64,
    #[serde(default)]
    randomness: Option<String>,
    signature: String,
    #[serde(default)]
    previous_signature: Option<String>,
}

fn unhex(text: &str, what: &str) -> Result<Vec<u8>, String> {
    const_hex::decode(text).map_err(|_| format!("{what} is not hex"))
}

/// The chain an upstream's `/info` body describes, and its verifier, if it is the pinned
/// chain (see the module documentation).
///
/// # Errors
/// What is wrong with it.
pub fn check_info(body: &[u8], pins: &Pins) -> Result<(Chain, Verifier), InfoError> {
    let info: RemoteInfo = serde_json::from_slice(body).map_err(|e| InfoError::Malformed(e.to_string()))?;
    let scheme = Scheme::from_id(&info.scheme_id).ok_or_else(|| InfoError::Scheme(info.scheme_id.clone()))?;
    let public_key = unhex(&info.public_key, "public_key").map_err(InfoError::Malformed)?;
    if public_key != pins.public_key {
        return Err(InfoError::PublicKey);
    }
    let group_hash: [u8; 32] = unhex(&info.group_hash, "groupHash")
        .map_err(InfoError::Malformed)?
        .try_into()
        .map_err(|_| InfoError::Malformed("groupHash is not 32 bytes".into()))?;
    let schedule_error = || InfoError::Schedule { period: info.period, genesis_time: info.genesis_time };
    let period_s =
        u32::try_from(info.period).ok().filter(|p| (1..=86_400).contains(p)).ok_or_else(schedule_error)?;
    let genesis_time = u64::try_from(info.genesis_time).ok().filter(|g| *g > 0).ok_or_else(schedule_error)?;
    let beacon_id = info.metadata.map(|m| m.beacon_id).unwrap_or_default();
    let computed = chain_hash(period_s, info.genesis_time, &public_key, &group_hash, &beacon_id);
    if computed != pins.chain_hash || !info.hash.eq_ignore_ascii_case(&const_hex::encode(pins.chain_hash)) {
        return Err(InfoError::ChainHash { computed: const_hex::encode(computed), stated: info.hash });
    }
    let verifier = Verifier::new(scheme, &public_key).ok_or(InfoError::NotAKey(scheme.id()))?;
    let beacon_id =
        if beacon_id.is_empty() { super::round::DEFAULT_BEACON_ID.to_string() } else { beacon_id };
    let chain = Chain::new(scheme, public_key, group_hash, ChainParams { period_s, genesis_time, beacon_id });
    debug_assert_eq!(chain.hash(), &pins.chain_hash);
    Ok((chain, verifier))
}

/// The round of `chain` an upstream's round body holds, verified (see the module
/// documentation); `asked`: the round asked for (`None`: the latest, any round); `not_after`: the latest round
/// the clock allows (the round after the clock's current one: a round further ahead is refused
/// even if it verifies, so that a clock behind the network's, or a network's colluding
/// signers, never make drbgd serve a round before its time).
///
/// # Errors
/// What is wrong with it.
pub fn check_round(
    body: &[u8],
    chain: &Chain,
    verifier: &Verifier,
    asked: Option<u64>,
    not_after: Option<u64>,
) -> Result<SignedRound, RoundError> {
    let remote: RemoteRound =
        serde_json::from_slice(body).map_err(|e| RoundError::Malformed(e.to_string()))?;
    if let Some(asked) = asked.filter(|a| *a != remote.round) {
        return Err(RoundError::OtherRound { asked, got: remote.round });
    }
    let signature = unhex(&remote.signature, "signature").map_err(RoundError::Malformed)?;
    let previous = match (verifier.scheme().chained(), &remote.previous_signature) {
        (true, Some(p)) => Some(unhex(p, "previous_signature").map_err(RoundError::Malformed)?),
        (true, None) => return Err(RoundError::NoPrevious),
        (false, _) => None,
    };
    // A chained round 1 follows the chain's genesis seed, its group hash: no other.
    if remote.round == 1 && previous.as_deref().is_some_and(|p| p != chain.group_hash()) {
        return Err(RoundError::BadSignature(1));
    }
    if !verifier.verify(remote.round, previous.as_deref().unwrap_or_default(), &signature) {
        return Err(RoundError::BadSignature(remote.round));
    }
    if let Some(latest) = not_after.filter(|l| remote.round > *l) {
        return Err(RoundError::Ahead { round: remote.round, latest });
    }
    // Rendered as a drand v2 node renders it, whichever upstream answered: every replica serves
    // one round as the same bytes, and they are the network's nodes' own.
    let signed = SignedRound::in_order(remote.round, &signature, previous.as_deref(), Order::Node);
    if remote.randomness.is_some_and(|r| !r.eq_ignore_ascii_case(&const_hex::encode(signed.randomness))) {
        return Err(RoundError::BadRandomness(remote.round));
    }
    Ok(signed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// League of Entropy mainnet's `/info` (`https://drand.cloudflare.com/info`) and its round
    /// 72785 with its previous signature (noislabs' drand-verify tests).
    pub(crate) const MAINNET_INFO: &str = r#"{"public_key":"868f005eb8e6e4ca0a47c8a77ceaa5309a47978a7c71bc5cce96366b5d7a569937c529eeda66c7293784a9402801af31","period":30,"genesis_time":1595431050,"hash":"8990e7a9aaed2ffed73dbd7092123d6f289930540d7651336225dc172e51b2ce","groupHash":"176f93498eac9ca337150b46d21dd58673ea4e3581185f869672e59fa4cb390a","schemeID":"pedersen-bls-chained","metadata":{"beaconID":"default"}}"#;
    const MAINNET_72785: &str = r#"{"round":72785,"signature":"82f5d3d2de4db19d40a6980e8aa37842a0e55d1df06bd68bddc8d60002e8e959eb9cfa368b3c1b77d18f02a54fe047b80f0989315f83b12a74fd8679c4f12aae86eaf6ab5690b34f1fddd50ee3cc6f6cdf59e95526d5a5d82aaa84fa6f181e42","previous_signature":"a609e19a03c2fcc559e8dae14900aaefe517cb55c840f6e69bc8e4f66c8d18e8a609685d9917efbfb0c37f058c2de88f13d297c7e19e0ab24813079efe57a182554ff054c7638153f9b26a60e7111f71a0ff63d9571704905d3ca6df0b031747"}"#;

    fn pins() -> Pins {
        let info: serde_json::Value = serde_json::from_str(MAINNET_INFO).unwrap();
        Pins {
            chain_hash: const_hex::decode_to_array(info["hash"].as_str().unwrap()).unwrap(),
            public_key: const_hex::decode(info["public_key"].as_str().unwrap()).unwrap(),
        }
    }

    fn edited(body: &str, key: &str, value: serde_json::Value) -> Vec<u8> {
        let mut v: serde_json::Value = serde_json::from_str(body).unwrap();
        v[key] = value;
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn the_pinned_chains_info_is_accepted_and_reserved_as_drand_serves_it() {
        let (chain, verifier) = check_info(MAINNET_INFO.as_bytes(), &pins()).unwrap();
        assert_eq!(chain.hash_hex(), "8990e7a9aaed2ffed73dbd7092123d6f289930540d7651336225dc172e51b2ce");
        assert_eq!(verifier.scheme(), Scheme::PedersenBlsChained);
        assert_eq!((chain.schedule().period_s, chain.schedule().genesis_time), (30, 1_595_431_050));
        let ours: serde_json::Value = serde_json::from_slice(chain.info_json()).unwrap();
        assert_eq!(ours, serde_json::from_str::<serde_json::Value>(MAINNET_INFO).unwrap());
    }

    #[test]
    fn an_info_of_another_chain_or_lying_about_this_one_is_refused() {
        let p = pins();
        let other_period = edited(MAINNET_INFO, "period", 3.into());
        assert!(matches!(check_info(&other_period, &p), Err(InfoError::ChainHash { .. })));
        let other_genesis = edited(MAINNET_INFO, "genesis_time", 1_595_431_051.into());
        assert!(matches!(check_info(&other_genesis, &p), Err(InfoError::ChainHash { .. })));
        let other_group = edited(MAINNET_INFO, "groupHash", "00".repeat(32).into());
        assert!(matches!(check_info(&other_group, &p), Err(InfoError::ChainHash { .. })));
        let stated = edited(MAINNET_INFO, "hash", "00".repeat(32).into());
        assert!(matches!(check_info(&stated, &p), Err(InfoError::ChainHash { .. })));
        let other_key = edited(MAINNET_INFO, "public_key", super::super::key::QUICKNET_PUBLIC_KEY.into());
        assert_eq!(check_info(&other_key, &p).err(), Some(InfoError::PublicKey));
        let scheme = edited(MAINNET_INFO, "schemeID", "bls-unchained-on-g1".into());
        assert!(matches!(check_info(&scheme, &p), Err(InfoError::Scheme(_))));
        assert!(matches!(check_info(b"<html>", &p), Err(InfoError::Malformed(_))));
    }

    #[test]
    fn a_published_chained_round_verifies_and_is_rendered_with_its_previous_signature() {
        let (chain, verifier) = check_info(MAINNET_INFO.as_bytes(), &pins()).unwrap();
        let round = check_round(MAINNET_72785.as_bytes(), &chain, &verifier, Some(72785), None).unwrap();
        let served: serde_json::Value = serde_json::from_slice(&round.json).unwrap();
        let published: serde_json::Value = serde_json::from_str(MAINNET_72785).unwrap();
        assert_eq!(served["signature"], published["signature"]);
        assert_eq!(served["previous_signature"], published["previous_signature"]);
        let keys: Vec<&str> = served.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 4, "{keys:?}");
        // drand-client checks the randomness is SHA-256 of the signature.
        use sha2::Digest;
        let sig = const_hex::decode(published["signature"].as_str().unwrap()).unwrap();
        assert_eq!(served["randomness"], const_hex::encode(sha2::Sha256::digest(sig)));
        assert_eq!(check_round(MAINNET_72785.as_bytes(), &chain, &verifier, None, None).unwrap(), round);
    }

    #[test]
    fn a_round_is_rendered_as_a_node_renders_it_and_never_after_the_clocks_next() {
        let (chain, verifier) = check_info(MAINNET_INFO.as_bytes(), &pins()).unwrap();
        let round = check_round(MAINNET_72785.as_bytes(), &chain, &verifier, Some(72785), None).unwrap();
        // Rendered as a drand node renders it, whatever the upstream's order.
        let node =
            SignedRound::in_order(round.round, &round.signature, round.previous.as_deref(), Order::Node);
        assert_eq!(round.json, node.json);
        let prefix = br#"{"round":72785,"signature":"82f5"#;
        assert!(node.json.starts_with(prefix), "{:?}", node.json);
        let relay = SignedRound::new(round.round, &round.signature, round.previous.as_deref());
        assert_ne!(relay.json, node.json);
        assert_eq!(check_round(&relay.json, &chain, &verifier, None, None).unwrap().json, node.json);
        // Not after the clock's next round, even verified.
        assert_eq!(
            check_round(MAINNET_72785.as_bytes(), &chain, &verifier, None, Some(72784)).err(),
            Some(RoundError::Ahead { round: 72785, latest: 72784 })
        );
        assert!(check_round(MAINNET_72785.as_bytes(), &chain, &verifier, None, Some(72785)).is_ok());
    }

    /// Mainnet's round 1, whose previous signature is the genesis seed (its group hash), as
    /// `https://drand.cloudflare.com/public/1` serves it.
    #[test]
    fn a_chained_round_1_follows_the_genesis_seed_and_no_other() {
        let (chain, verifier) = check_info(MAINNET_INFO.as_bytes(), &pins()).unwrap();
        let round_1 = serde_json::json!({
            "round": 1,
            "signature": "8d61d9100567de44682506aea1a7a6fa6e5491cd27a0a0ed349ef6910ac5ac20ff7bc3e09d7c046566c9f7f3c6f3b10104990e7cb424998203d8f7de586fb7fa5f60045417a432684f85093b06ca91c769f0e7ca19268375e659c2a2352b4655",
            "previous_signature": "176f93498eac9ca337150b46d21dd58673ea4e3581185f869672e59fa4cb390a",
        });
        let body = serde_json::to_vec(&round_1).unwrap();
        let round = check_round(&body, &chain, &verifier, Some(1), None).unwrap();
        assert_eq!(round.previous.as_deref(), Some(&chain.group_hash()[..]));
        let mut other = round_1.clone();
        other["previous_signature"] = "00".repeat(32).into();
        let body = serde_json::to_vec(&other).unwrap();
        assert_eq!(
            check_round(&body, &chain, &verifier, Some(1), None).err(),
            Some(RoundError::BadSignature(1))
        );
    }

    #[test]
    fn a_forged_or_misplaced_round_is_refused() {
        let (chain, verifier) = check_info(MAINNET_INFO.as_bytes(), &pins()).unwrap();
        let body = MAINNET_72785.as_bytes();
        assert_eq!(
            check_round(body, &chain, &verifier, Some(72786), None).err(),
            Some(RoundError::OtherRound { asked: 72786, got: 72785 })
        );
        let renumbered = edited(MAINNET_72785, "round", 72786.into());
        assert_eq!(
            check_round(&renumbered, &chain, &verifier, None, None).err(),
            Some(RoundError::BadSignature(72786))
        );
        let mut v: serde_json::Value = serde_json::from_str(MAINNET_72785).unwrap();
        v.as_object_mut().unwrap().remove("previous_signature");
        assert_eq!(
            check_round(&serde_json::to_vec(&v).unwrap(), &chain, &verifier, None, None).err(),
            Some(RoundError::NoPrevious)
        );
        let wrong_previous = edited(MAINNET_72785, "previous_signature", "a6".repeat(96).into());
        assert_eq!(
            check_round(&wrong_previous, &chain, &verifier, None, None).err(),
            Some(RoundError::BadSignature(72785))
        );
        // An empty previous signature would make the chained message the unchained one's.
        let empty_previous = edited(MAINNET_72785, "previous_signature", "".into());
        assert_eq!(
            check_round(&empty_previous, &chain, &verifier, None, None).err(),
            Some(RoundError::BadSignature(72785))
        );
        let wrong_randomness = edited(MAINNET_72785, "randomness", "00".repeat(32).into());
        assert_eq!(
            check_round(&wrong_randomness, &chain, &verifier, None, None).err(),
            Some(RoundError::BadRandomness(72785))
        );
    }
}
