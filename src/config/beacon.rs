//! `[beacon]`: the drand-compatible randomness beacon (`GET /beacon/...`, docs/verifiable.md).
//! Off by default; on, it needs a secret key file (`drbgd beacon keygen`) and a genesis time.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// The longest period accepted: a day.
pub const MAX_PERIOD_S: u32 = 86_400;

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
        }
    }
}

impl BeaconSettings {
    /// Checks the section, with the beacon on only (as `[receipts]`: a server that never turns
    /// it on keeps any values). `drbg.approved_only`, which refuses the beacon, is checked with
    /// the other approved-only rules (`Settings::validate`).
    ///
    /// # Errors
    /// The first invalid key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, reason: &str| Err(ConfigError::Invalid { key, reason: reason.to_string() });
        if !self.enabled {
            return Ok(());
        }
        if !(1..=MAX_PERIOD_S).contains(&self.period_s) {
            return invalid("beacon.period_s", "must be in 1..=86400 (a day)");
        }
        let id_byte = |b: u8| b.is_ascii_alphanumeric() || b"._-".contains(&b);
        if !(1..=64).contains(&self.beacon_id.len()) || !self.beacon_id.bytes().all(id_byte) {
            return invalid("beacon.beacon_id", "1 to 64 of A-Z, a-z, 0-9, '.', '_' and '-'");
        }
        if self.secret_key_file.as_os_str().is_empty() {
            return invalid(
                "beacon.secret_key_file",
                "the beacon needs a secret key file (drbgd beacon keygen --out FILE)",
            );
        }
        if self.genesis_time == 0 || i64::try_from(self.genesis_time).is_err() {
            return invalid(
                "beacon.genesis_time",
                "the beacon needs a genesis time: Unix seconds at which round 1 is due",
            );
        }
        Ok(())
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
