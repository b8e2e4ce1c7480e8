//! `[beacon]`: the drand-compatible randomness beacon (`GET /beacon/...`, docs/verifiable.md).
//! Off by default. On, its rounds are signed with drbgd's own key (`source = "key"`, the
//! default: a secret key file from `drbgd beacon keygen` and a genesis time), or followed from
//! a drand network (`source = "drand"`: its upstreams, and its chain hash and public key
//! pinned). The chain's checks ([`BeaconSettings::validate_chain`]) are also what `drbgd beacon
//! keygen` and `drbgd beacon info` run before they compute a chain hash.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::error::ConfigError;

/// The longest period accepted: a day.
pub const MAX_PERIOD_S: u32 = 86_400;

/// The latest genesis time accepted, in Unix seconds (the year 5138): a larger value is
/// almost surely milliseconds, which would put round 1 millennia ahead.
pub const MAX_GENESIS_TIME: u64 = 100_000_000_000;

/// The most upstreams a followed network may have.
pub const MAX_UPSTREAMS: usize = 16;

/// Where the beacon's rounds come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BeaconSource {
    /// drbgd's own key signs them.
    Key,
    /// A drand network makes them; drbgd verifies and serves them.
    Drand,
}

/// `[beacon]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct BeaconSettings {
    /// Serve the beacon's routes.
    pub enabled: bool,
    /// Where the rounds come from.
    pub source: BeaconSource,
    /// `source = "drand"`: the network's nodes' or relays' HTTP API base URLs.
    pub upstreams: Vec<String>,
    /// `source = "drand"`: the network's public key (hex), pinned.
    pub public_key: String,
    /// `source = "drand"`: accept `http://` upstreams (rounds are verified either way; the
    /// opt-in says that a network path may see which rounds are asked).
    pub allow_http: bool,
    /// `source = "drand"`: the CAs an `https://` upstream's certificate chains to (PEM); empty:
    /// the Mozilla roots.
    pub ca_file: PathBuf,
    /// `source = "drand"`: each request to an upstream, at most.
    pub upstream_timeout_ms: u64,
    /// The secret key's file (`drbgd beacon keygen --out FILE`): read once at start-up. Empty:
    /// none (refused while `enabled`).
    pub secret_key_file: PathBuf,
    /// Seconds between rounds (drand's quicknet: 3).
    pub period_s: u32,
    /// Unix seconds at which round 1 is due; 0: not set (refused while `enabled`).
    pub genesis_time: u64,
    /// The beacon id (`metadata.beaconID` in `/info`), hashed into the chain hash unless it is
    /// `default`, as drand does.
    pub beacon_id: String,
    /// The chain hash the key and the values above must give (64 hex digits), so that the key
    /// never serves another schedule; empty: not pinned.
    pub chain_hash: String,
}

impl Default for BeaconSettings {
    /// Off; quicknet's period; no key, no genesis time; drand's default id.
    fn default() -> Self {
        BeaconSettings {
            enabled: false,
            source: BeaconSource::Key,
            upstreams: Vec::new(),
            public_key: String::new(),
            allow_http: false,
            ca_file: PathBuf::new(),
            upstream_timeout_ms: 2000,
            secret_key_file: PathBuf::new(),
            period_s: 3,
            genesis_time: 0,
            beacon_id: crate::beacon::DEFAULT_BEACON_ID.to_string(),
            chain_hash: String::new(),
        }
    }
}

impl BeaconSettings {
    /// Checks the section, with the beacon on only (as `[receipts]`: a server that never turns
    /// it on keeps any values): a key file, then the chain's values
    /// ([`BeaconSettings::validate_chain`]). `drbg.approved_only`, which refuses the beacon, is
    /// checked with the other approved-only rules (`Settings::validate`).
    ///
    /// # Errors
    /// The first invalid key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !self.enabled {
            return Ok(());
        }
        if self.source == BeaconSource::Drand {
            return self.validate_followed();
        }
        if self.secret_key_file.as_os_str().is_empty() {
            return invalid(
                "beacon.secret_key_file",
                "the beacon needs a secret key file (drbgd beacon keygen --out FILE)",
            );
        }
        self.validate_chain()
    }

    /// Checks `source = "drand"`'s keys: no key of drbgd's own, one to [`MAX_UPSTREAMS`]
    /// upstreams (`https://`, or `http://` with `allow_http`; no credentials, query or
    /// fragment), the chain hash and public key pinned, a sane timeout. `period_s`,
    /// `genesis_time` and `beacon_id` are the network's (its `/info`, checked against the
    /// pinned hash), not read.
    ///
    /// # Errors
    /// The first invalid key.
    fn validate_followed(&self) -> Result<(), ConfigError> {
        if !self.secret_key_file.as_os_str().is_empty() {
            return invalid(
                "beacon.secret_key_file",
                "a followed drand network's rounds are its own: drbgd signs nothing (leave it empty)",
            );
        }
        if !(1..=MAX_UPSTREAMS).contains(&self.upstreams.len()) {
            return invalid("beacon.upstreams", "one to 16 drand nodes' or relays' base URLs");
        }
        for (i, upstream) in self.upstreams.iter().enumerate() {
            self.check_upstream(upstream)?;
            if self.upstreams[..i].iter().any(|other| base_of(other) == base_of(upstream)) {
                return invalid("beacon.upstreams", "an upstream is listed twice");
            }
        }
        let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
        if !hex(&self.chain_hash, 64) {
            return invalid(
                "beacon.chain_hash",
                "following a drand network needs its chain hash pinned (64 hex digits, its /info's `hash`)",
            );
        }
        if !(hex(&self.public_key, 96) || hex(&self.public_key, 192)) {
            return invalid(
                "beacon.public_key",
                "following a drand network needs its public key pinned (its /info's `public_key`: 96 or 192 hex digits)",
            );
        }
        if !(100..=60_000).contains(&self.upstream_timeout_ms) {
            return invalid("beacon.upstream_timeout_ms", "must be in 100..=60000");
        }
        Ok(())
    }

    fn check_upstream(&self, upstream: &str) -> Result<(), ConfigError> {
        let refuse = |why: &str| {
            Err(ConfigError::Invalid { key: "beacon.upstreams", reason: format!("{upstream:?}: {why}") })
        };
        let Ok(url) = url::Url::parse(upstream) else { return refuse("not a URL") };
        match url.scheme() {
            "https" => {}
            "http" if self.allow_http => {}
            "http" => return refuse("http:// only with beacon.allow_http = true"),
            _ => return refuse("https:// (or http:// with beacon.allow_http)"),
        }
        if url.host_str().is_none_or(str::is_empty) {
            return refuse("no host");
        }
        if !url.username().is_empty()
            || url.password().is_some()
            || url.query().is_some()
            || url.fragment().is_some()
        {
            return refuse("a base URL: no credentials, query or fragment");
        }
        // drbgd appends /{chainhash}/...: a base that already ends in a chain hash (as
        // drand-client's chain URLs do) would ask /{hash}/{hash}/info.
        let last = url.path_segments().and_then(|mut s| s.rfind(|seg| !seg.is_empty())).unwrap_or_default();
        if last.len() == 64 && last.bytes().all(|b| b.is_ascii_hexdigit()) {
            return refuse("the node's or relay's base URL, without the chain hash (drbgd adds it)");
        }
        Ok(())
    }

    /// The upstreams' base URLs as drbgd asks them: parsed and written back by the URL parser,
    /// without a final `/` (validated: each parses).
    pub fn upstream_bases(&self) -> Vec<String> {
        self.upstreams.iter().map(|u| base_of(u).unwrap_or_else(|| u.clone())).collect()
    }

    /// The pins of a followed network (validated: 32 bytes of hash and a key's bytes).
    pub fn pins(&self) -> Option<crate::beacon::upstream::Pins> {
        Some(crate::beacon::upstream::Pins {
            chain_hash: const_hex::decode_to_array(&self.chain_hash).ok()?,
            public_key: const_hex::decode(&self.public_key).ok()?,
        })
    }

    /// Checks what makes the chain besides its key: the period, the id, the genesis time (set,
    /// in Unix seconds) and the pinned chain hash's form, whether the beacon is on or not.
    ///
    /// # Errors
    /// The first invalid key.
    pub fn validate_chain(&self) -> Result<(), ConfigError> {
        if !(1..=MAX_PERIOD_S).contains(&self.period_s) {
            return invalid("beacon.period_s", "must be in 1..=86400 (a day)");
        }
        let id_byte = |b: u8| b.is_ascii_alphanumeric() || b"._-".contains(&b);
        if !(1..=64).contains(&self.beacon_id.len()) || !self.beacon_id.bytes().all(id_byte) {
            return invalid("beacon.beacon_id", "1 to 64 of A-Z, a-z, 0-9, '.', '_' and '-'");
        }
        if self.genesis_time == 0 {
            return invalid(
                "beacon.genesis_time",
                "the beacon needs a genesis time: Unix seconds at which round 1 is due",
            );
        }
        if self.genesis_time > MAX_GENESIS_TIME {
            return invalid(
                "beacon.genesis_time",
                "must be Unix seconds (at most 10^11; this looks like milliseconds)",
            );
        }
        let hex = |s: &str| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
        if !(self.chain_hash.is_empty() || hex(&self.chain_hash)) {
            return invalid(
                "beacon.chain_hash",
                "must be 64 hex digits (drbgd beacon info prints it), or empty",
            );
        }
        Ok(())
    }

    /// Checks the chain hash the key and these values give, `computed` (lowercase hex),
    /// against the pinned one, if any.
    ///
    /// # Errors
    /// `beacon.chain_hash` names another chain: both hashes named.
    pub fn check_chain_hash(&self, computed: &str) -> Result<(), ConfigError> {
        if self.chain_hash.is_empty() || self.chain_hash.eq_ignore_ascii_case(computed) {
            return Ok(());
        }
        Err(ConfigError::Invalid {
            key: "beacon.chain_hash",
            reason: format!(
                "pins chain {}, but the key with period_s {}, genesis_time {} and beacon_id {:?} is chain {computed}; \
                 a key must never serve another schedule (put back the pinned values, or rotate to a new key)",
                self.chain_hash, self.period_s, self.genesis_time, self.beacon_id
            ),
        })
    }

    /// The chain's public parameters (with the key, they make the chain).
    pub fn chain_params(&self) -> crate::beacon::ChainParams {
        crate::beacon::ChainParams {
            period_s: self.period_s,
            genesis_time: self.genesis_time,
            beacon_id: self.beacon_id.clone(),
        }
    }
}

/// An upstream's base URL as drbgd asks it (see [`BeaconSettings::upstream_bases`]).
fn base_of(upstream: &str) -> Option<String> {
    url::Url::parse(upstream).ok().map(|u| u.as_str().trim_end_matches('/').to_string())
}

fn invalid(key: &'static str, reason: &str) -> Result<(), ConfigError> {
    Err(ConfigError::Invalid { key, reason: reason.to_string() })
}
