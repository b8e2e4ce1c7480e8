//! `[tickets]`: single-use tickets and the signed results kept for them (docs/tickets.md); where
//! they live is `[results]`'s.

use serde::{Deserialize, Serialize};

use super::error::ConfigError;

/// `[tickets]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TicketsSettings {
    /// Serve `/tickets`, `/results` and ticketed draws (`"ticket"` in a random endpoint's POST
    /// body). Needs `[receipts] enabled` (a ticketed draw is answered with a receipt) and
    /// `[auth] enabled` (a ticket is its caller's).
    pub enabled: bool,
    /// Seconds an unused ticket stays usable (410 `ticket_expired` after); 0: for ever.
    pub ttl_seconds: u64,
    /// Most unused tickets one caller holds at once (`POST /tickets` beyond: 409
    /// `too_many_tickets`).
    pub max_unused: u32,
}

impl Default for TicketsSettings {
    /// Off; no expiry; 1,000 unused tickets.
    fn default() -> Self {
        TicketsSettings { enabled: false, ttl_seconds: 0, max_unused: 1000 }
    }
}

impl TicketsSettings {
    /// The keys' ranges, and what tickets need: receipts on (`receipts_enabled`) and callers
    /// named by their credentials (`auth_enabled`): with auth off everyone is `anonymous`, and
    /// anyone could use, list or reveal anyone's tickets.
    ///
    /// # Errors
    /// The first invalid key.
    pub fn validate(&self, receipts_enabled: bool, auth_enabled: bool) -> Result<(), ConfigError> {
        let invalid = |key: &'static str, why: &str| Err(ConfigError::Invalid { key, reason: why.into() });
        if !self.enabled {
            return Ok(());
        }
        if !receipts_enabled {
            return invalid(
                "tickets.enabled",
                "a ticketed draw is answered with a receipt: needs receipts.enabled",
            );
        }
        if !auth_enabled {
            return invalid(
                "tickets.enabled",
                "tickets are their callers': needs auth.enabled (with auth off everyone is anonymous)",
            );
        }
        if self.max_unused == 0 {
            return invalid("tickets.max_unused", "must be at least 1");
        }
        Ok(())
    }
}
