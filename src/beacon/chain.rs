//! A chain's public parameters and its identity, as drand defines them.
//!
//! **The chain hash** is drand's (`common/chain/info.go`, `Info.Hash`): SHA-256 of the period
//! (seconds, `u32` big-endian) ‖ the genesis time (`i64` big-endian) ‖ the public key
//! (compressed) ‖ the group hash ‖ the beacon id, the id only when it is not `default`.
//! quicknet's values give its published hash, `52db9ba7…e971` (a unit test).
//!
//! **The group hash** is where one signer differs from drand: drand's is the hash of its
//! group file (its nodes, threshold and distributed key), fixed at the group's genesis. drbgd's
//! own key has no group, so by its convention the group hash is SHA-256 of the compressed public
//! key. Clients only carry it (in `/info` as `groupHash`) and hash it into the chain hash; none
//! checks it against anything else. So the chain hash of drbgd's key depends on the key, the
//! period, the genesis time and the id alone, and a new key is a new chain. A drand network's
//! chain ([`Chain::new`] with its `/info`'s values) keeps the network's group hash.

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::clock::Schedule;
use super::key::Signer;
use super::round::DEFAULT_BEACON_ID;
use super::scheme::Scheme;

/// What the operator chooses of a chain besides its key (`[beacon]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainParams {
    /// Seconds between rounds.
    pub period_s: u32,
    /// Unix seconds at which round 1 is due.
    pub genesis_time: u64,
    /// The beacon id (`metadata.beaconID`; hashed into the chain hash unless `default`).
    pub beacon_id: String,
}

/// A chain: its scheme, public key and parameters, its hash and its `/info` body, computed once.
#[derive(Debug)]
pub struct Chain {
    scheme: Scheme,
    public_key: Vec<u8>,
    group_hash: [u8; 32],
    hash: [u8; 32],
    hash_hex: String,
    schedule: Schedule,
    beacon_id: String,
    info: bytes::Bytes,
}

impl Chain {
    /// The chain of drbgd's own key `signer` with `params` (its scheme
    /// `bls-unchained-g1-rfc9380`, its group hash by drbgd's convention).
    pub fn of_signer(signer: &Signer, params: ChainParams) -> Self {
        let public_key = signer.public_key();
        let group_hash = group_hash(&public_key);
        Chain::new(Scheme::UnchainedG1Rfc9380, public_key.to_vec(), group_hash, params)
    }

    /// The chain of `scheme` under `public_key` (compressed), with `group_hash` and `params`.
    pub fn new(scheme: Scheme, public_key: Vec<u8>, group_hash: [u8; 32], params: ChainParams) -> Self {
        // Validated with the settings (or read from a verified /info) to fit: a genesis in
        // i64's range.
        let genesis = i64::try_from(params.genesis_time).unwrap_or(i64::MAX);
        let hash = chain_hash(params.period_s, genesis, &public_key, &group_hash, &params.beacon_id);
        let hash_hex = const_hex::encode(hash);
        let info = {
            let info = Info {
                public_key: const_hex::encode(&public_key),
                period: params.period_s,
                genesis_time: params.genesis_time,
                hash: hash_hex.clone(),
                group_hash: const_hex::encode(group_hash),
                scheme_id: scheme.id(),
                metadata: Metadata { beacon_id: &params.beacon_id },
            };
            // Serializing plain strings and numbers to memory cannot fail.
            bytes::Bytes::from(serde_json::to_vec(&info).unwrap_or_default())
        };
        let schedule = Schedule { genesis_time: params.genesis_time, period_s: params.period_s };
        Chain { scheme, public_key, group_hash, hash, hash_hex, schedule, beacon_id: params.beacon_id, info }
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The public key, compressed.
    pub fn public_key(&self) -> &[u8] {
        &self.public_key
    }

    /// The group hash (drbgd's convention for its own key: see the module documentation).
    pub fn group_hash(&self) -> &[u8; 32] {
        &self.group_hash
    }

    /// The chain hash.
    pub fn hash(&self) -> &[u8; 32] {
        &self.hash
    }

    /// The chain hash in lowercase hex, as paths and `/info` carry it.
    pub fn hash_hex(&self) -> &str {
        &self.hash_hex
    }

    /// The chain's clock.
    pub fn schedule(&self) -> Schedule {
        self.schedule
    }

    /// The beacon id.
    pub fn beacon_id(&self) -> &str {
        &self.beacon_id
    }

    /// The `/info` body: `public_key`, `period`, `genesis_time`, `hash`, `groupHash`,
    /// `schemeID` and `metadata.beaconID`, as drand's HTTP relays serve it (the shape
    /// drand-client and tlock-js read).
    pub fn info_json(&self) -> &bytes::Bytes {
        &self.info
    }

    /// Whether a path's chain segment names this chain: its hash in hex, either case.
    pub fn is_named_by(&self, segment: &str) -> bool {
        segment.eq_ignore_ascii_case(&self.hash_hex)
    }
}

/// drbgd's group hash of a chain with public key `public_key`: SHA-256 of the key.
pub fn group_hash(public_key: &[u8]) -> [u8; 32] {
    Sha256::digest(public_key).into()
}

/// The chain hash as drand computes it (see the module documentation).
pub fn chain_hash(
    period_s: u32,
    genesis_time: i64,
    public_key: &[u8],
    group_hash: &[u8],
    beacon_id: &str,
) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(period_s.to_be_bytes());
    h.update(genesis_time.to_be_bytes());
    h.update(public_key);
    h.update(group_hash);
    // drand leaves the default id out, for the chains that predate ids.
    if !(beacon_id.is_empty() || beacon_id == DEFAULT_BEACON_ID) {
        h.update(beacon_id.as_bytes());
    }
    h.finalize().into()
}

/// `/info`, field for field (the order is drand's relays').
#[derive(Serialize)]
struct Info<'a> {
    public_key: String,
    period: u32,
    genesis_time: u64,
    hash: String,
    #[serde(rename = "groupHash")]
    group_hash: String,
    #[serde(rename = "schemeID")]
    scheme_id: &'a str,
    metadata: Metadata<'a>,
}

#[derive(Serialize)]
struct Metadata<'a> {
    #[serde(rename = "beaconID")]
    beacon_id: &'a str,
}
