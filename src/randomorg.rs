//! RANDOM.ORG's JSON-RPC API, Release 4, as drbgd serves it (`[randomorg] enabled`): the Basic
//! and Signed methods, tickets and kept results, for the official clients (rdoclient and its
//! siblings) pointed at drbgd. This module owns the API's domain: its methods and their
//! parameters (`request.rs`, `params.rs`), its error codes (`error.rs`), the values and the
//! bits RANDOM.ORG counts for them (`values.rs`), the signed `random` object's bytes
//! (`canonical.rs`), the RSA key (`signer.rs`), and here each caller's daily allowance and
//! the lane signatures are made in. The HTTP door and its JSON-RPC framing are
//! `http/randomorg.rs`'s; tickets and kept results are [`crate::tickets`]'.

pub mod canonical;
pub mod envelope;
pub mod error;
pub mod params;
pub mod request;
pub mod signer;
pub mod values;

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use crate::config::{Allowance, RandomOrgSettings};
use crate::receipts::verify::Lane;
pub use error::RpcError;
pub use signer::Signer;

/// The door's state: its signing key, the lane it signs in, each caller's use today.
#[derive(Debug)]
pub struct RandomOrg {
    signer: Option<Signer>,
    /// Where signatures are made: half the cores at most, off the async workers (anyone's
    /// `verifySignature` runs in the receipts' public lane, `/verify`'s: the checks nobody
    /// signs for take half the cores at most, together, and never hold up a signed draw).
    signing: Lane,
    /// Every caller's daily allowances but those of `callers`.
    allowance: Allowance,
    /// Callers' own.
    callers: HashMap<String, Allowance>,
    /// Per caller: the UTC day (days since 1970) and the requests and bits used on it.
    days: Mutex<HashMap<String, (i64, u64, u64)>>,
    /// When the door was opened, Unix milliseconds (`getUsage`'s `creationTime`).
    created_ms: i64,
}

/// What a caller has left today, after a request: `None` where no allowance is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Left {
    /// Requests left.
    pub requests: Option<u64>,
    /// Bits left.
    pub bits: Option<u64>,
}

impl RandomOrg {
    /// The door of `settings`, its key read.
    ///
    /// # Errors
    /// The signing key cannot be read.
    pub fn open(settings: &RandomOrgSettings) -> anyhow::Result<RandomOrg> {
        let signer = settings.signing_key.as_deref().map(Signer::load).transpose()?;
        let allowance =
            Allowance { requests_per_day: settings.requests_per_day, bits_per_day: settings.bits_per_day };
        let callers = settings.callers.iter().map(|(name, a)| (name.clone(), *a)).collect();
        Ok(RandomOrg::new(signer, allowance, callers))
    }

    /// The door with `signer` and these daily allowances: `allowance` for every caller but
    /// those of `callers`.
    pub fn new(
        signer: Option<Signer>,
        allowance: Allowance,
        callers: HashMap<String, Allowance>,
    ) -> RandomOrg {
        RandomOrg {
            signer,
            signing: Lane::half_the_cores(),
            allowance,
            callers,
            days: Mutex::new(HashMap::new()),
            created_ms: crate::tickets::now_ms(),
        }
    }

    /// When the door was opened, Unix milliseconds.
    pub fn created_ms(&self) -> i64 {
        self.created_ms
    }

    /// The signing key, if one is configured.
    pub fn signer(&self) -> Option<&Signer> {
        self.signer.as_ref()
    }

    /// The lane signatures are made in (off the async workers, half the cores at most).
    pub fn signing(&self) -> &Lane {
        &self.signing
    }

    /// Takes one request and `bits` of `caller`'s allowances for `day` (UTC days since 1970);
    /// what is left then.
    ///
    /// # Errors
    /// 402 when no request is left today, 403 when fewer than `bits` are: nothing is taken.
    pub fn spend(&self, caller: &str, bits: u64, day: i64) -> Result<Left, RpcError> {
        let mut days = self.days.lock().unwrap_or_else(PoisonError::into_inner);
        if days.len() > 100_000 {
            days.retain(|_, used| used.0 == day);
        }
        let used = days.entry(caller.to_owned()).or_insert((day, 0, 0));
        if used.0 != day {
            *used = (day, 0, 0);
        }
        let allowance = self.allowance_of(caller);
        let requests_left = allowance.requests_per_day.saturating_sub(used.1);
        let bits_left = allowance.bits_per_day.saturating_sub(used.2);
        if allowance.requests_per_day > 0 && requests_left == 0 {
            return Err(RpcError::requests_spent(1, 0));
        }
        if allowance.bits_per_day > 0 && bits > bits_left {
            return Err(RpcError::bits_spent(bits, bits_left));
        }
        used.1 += 1;
        used.2 += bits;
        Ok(Self::left_of(allowance, *used))
    }

    /// Gives back what [`RandomOrg::spend`] took for a request that drew nothing.
    pub fn refund(&self, caller: &str, bits: u64, day: i64) {
        let mut days = self.days.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(used) = days.get_mut(caller).filter(|u| u.0 == day) {
            used.1 = used.1.saturating_sub(1);
            used.2 = used.2.saturating_sub(bits);
        }
    }

    /// What `caller` has left on `day`, without taking any.
    pub fn left(&self, caller: &str, day: i64) -> Left {
        let days = self.days.lock().unwrap_or_else(PoisonError::into_inner);
        let used = days.get(caller).copied().filter(|u| u.0 == day).unwrap_or((day, 0, 0));
        Self::left_of(self.allowance_of(caller), used)
    }

    /// `caller`'s daily allowances.
    fn allowance_of(&self, caller: &str) -> Allowance {
        self.callers.get(caller).copied().unwrap_or(self.allowance)
    }

    fn left_of(allowance: Allowance, (_, requests, bits): (i64, u64, u64)) -> Left {
        let (r, b) = (allowance.requests_per_day, allowance.bits_per_day);
        Left {
            requests: (r > 0).then(|| r.saturating_sub(requests)),
            bits: (b > 0).then(|| b.saturating_sub(bits)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowances_are_a_day_long_and_refuse_without_taking() {
        let lean = Allowance { requests_per_day: 1, bits_per_day: 0 };
        let door = RandomOrg::new(
            None,
            Allowance { requests_per_day: 2, bits_per_day: 100 },
            HashMap::from([("c".to_owned(), lean)]),
        );
        assert_eq!(door.spend("a", 60, 10), Ok(Left { requests: Some(1), bits: Some(40) }));
        assert_eq!(door.spend("a", 41, 10).unwrap_err().code, 403);
        assert_eq!(door.left("a", 10), Left { requests: Some(1), bits: Some(40) }, "a refusal takes nothing");
        assert_eq!(door.spend("a", 40, 10), Ok(Left { requests: Some(0), bits: Some(0) }));
        let spent = door.spend("a", 0, 10).unwrap_err();
        assert_eq!((spent.code, spent.data.clone()), (402, serde_json::json!([1, 0])));
        assert_eq!(door.spend("b", 0, 10).unwrap().requests, Some(1), "each caller its own");
        assert_eq!(door.spend("a", 0, 11).unwrap().requests, Some(1), "a new day");
        assert_eq!(door.spend("c", 10_000, 10), Ok(Left { requests: Some(0), bits: None }), "c's own");
        assert_eq!(door.spend("c", 0, 10).unwrap_err().code, 402);
        let open = RandomOrg::new(None, Allowance::default(), HashMap::new());
        assert_eq!(open.spend("a", u64::MAX, 1), Ok(Left { requests: None, bits: None }));
    }
}
