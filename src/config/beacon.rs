//! `[beacon]`: the drand-compatible randomness beacon (`GET /beacon/...`, docs/verifiable.md).
//! Off by default; on, it needs a secret key file (`drbgd beacon keygen`) and a genesis time.
//! The chain's checks ([`BeaconSettings::validate_chain`]) are also what `drbgd beacon keygen`
//! and `drbgd beacon info` run before they compute a chain hash.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::error::ConfigError;

/// The longest period accepted: a day.
pub const MAX_PERIOD_S: u32 = 86_400;

/// The latest genesis time accepted, in Unix seconds (the year 5138): a larger value is
/// almost surely milliseconds, which would put round 1 millennia ahead.
pub const MAX_GENESIS_TIME: u64 = 100_000_000_000;

/// `[beacon]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct BeaconSettings {
    /// Serve the beacon's routes.
    pub enabled: bool,
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
        if self.secret_key_file.as_os_str().is_empty() {
            return invalid(
                "beacon.secret_key_file",
                "the beacon needs a secret key file (drbgd beacon keygen --out FILE)",
            );
        }
        self.validate_chain()
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

fn invalid(key: &'static str, reason: &str) -> Result<(), ConfigError> {
    Err(ConfigError::Invalid { key, reason: reason.to_string() })
}
