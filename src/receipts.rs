//! Signed receipts: values a caller can prove it was given, checkable offline by anyone with
//! standard tools. With `receipt=true` a random endpoint answers `{"random": {...},
//! "signature": "..."}`: `random` says what was served (the endpoint, its parameters, the
//! output), to whom, when, under which serial and key; the signature is Ed25519 over the RFC
//! 8785 (JCS) canonical JSON of `random`. What a receipt proves and what it does not:
//! docs/verifiable.md.
//!
//! This module owns the receipts' domain, for every transport (it knows nothing of HTTP):
//!
//! - [`keys`]: the keys, read from PKCS#8 PEM files (the first signs, the rest verify), the
//!   signing key held by AWS-LC (which signs), cleansed when replaced; key ids.
//! - [`random`]: the `random` object of each endpoint's output, numbers JSON carries exactly.
//! - [`sign`]: the serial (a UUIDv7), the time, the canonical JSON and its signature.
//! - [`verify`]: a receipt checked against a set of keys, with the reason when it fails.
//! - [`jwks`]: the keys as an RFC 8037 JWK set (`GET /keys`), and read back (`drbgd verify`).
//! - [`strict_json`]: JSON whose objects name each member once, for what signatures cover.
//!
//! [`Receipts`] is the handle the state holds: the settings, the key ring in force (replaced
//! whole on reload, as the callers' registry is), the checks of a request that asks for a
//! receipt, and the issuing of one.

pub mod jwks;
pub mod keys;
pub mod random;
pub mod sign;
pub mod strict_json;
pub mod verify;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

pub use keys::{KeyRing, PublicKey};
pub use random::Random;
pub use sign::{Receipt, TicketStamp};

use crate::callers::Caller;
use crate::config::ReceiptsSettings;
use crate::error::ApiError;
use crate::service::Service;

/// The most bytes of a receipt's `user_data` (UTF-8): the caller's own note (a draw's name, an
/// experiment's id), not a place for documents.
pub const USER_DATA_MAX: usize = 1024;

/// The receipts of this server: whether it issues them, up to what size, and the keys in force.
pub struct Receipts {
    enabled: bool,
    max_output_bytes: u64,
    ring: RwLock<Arc<KeyRing>>,
    /// Held from reading the settings to putting their keys in force (see
    /// [`Receipts::reload_from`]).
    reloading: Mutex<()>,
    /// The last serial issued, as a number: serials of one process strictly increase, even
    /// within a millisecond (RFC 9562's monotonic random, method 2).
    last_serial: Mutex<u128>,
    /// The shape of the receipts this server issues: `POST /verify` reads no body beyond it.
    shape: strict_json::Shape,
    /// Where `POST /verify`'s checks run: off the async workers, on half the cores at most.
    lane: verify::Lane,
}

/// Shows the key ids, never a key.
impl std::fmt::Debug for Receipts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receipts")
            .field("enabled", &self.enabled)
            .field("max_output_bytes", &self.max_output_bytes)
            .field("keys", &*self.keys())
            .finish()
    }
}

/// A request's receipt, allowed: the caller's string to put in it, the ticket it names (a
/// ticketed draw's), and the largest output it may cover.
#[derive(Debug, Clone)]
pub struct Ask {
    user_data: Option<String>,
    ticket: Option<TicketStamp>,
    max_output_bytes: u64,
}

impl Ask {
    /// 400 `receipt_too_large` when `bytes` of raw output are more than a receipt covers.
    ///
    /// # Errors
    /// As above; nothing was generated.
    pub fn check_size(&self, bytes: u64) -> Result<(), ApiError> {
        if bytes > self.max_output_bytes {
            return Err(ApiError::invalid(
                "receipt_too_large",
                "receipt",
                format!(
                    "a receipt covers at most {} bytes of output ([receipts] max_output_bytes), not {bytes}",
                    self.max_output_bytes
                ),
            ));
        }
        Ok(())
    }

    /// The caller's string, if it gave one.
    pub fn user_data(&self) -> Option<&str> {
        self.user_data.as_deref()
    }

    /// The ticket the receipt names, for a ticketed draw.
    pub fn ticket(&self) -> Option<&TicketStamp> {
        self.ticket.as_ref()
    }
}

impl Receipts {
    /// The receipts of `settings`, their key files read (a warning logged for each key file
    /// others may read); the lists they cover hold at most `max_count` items
    /// (`limits.max_count`).
    ///
    /// # Errors
    /// A key file that cannot be read or is no Ed25519 key ([`KeyRing::load`]).
    pub fn from_settings(settings: &ReceiptsSettings, max_count: usize) -> anyhow::Result<Self> {
        let ring = load(settings)?;
        if !ring.public_keys().is_empty() {
            tracing::info!(
                key_ids = ring.ids().join(","),
                signs = ring.signing_key_id(),
                "receipt keys loaded"
            );
        }
        Ok(Receipts {
            enabled: settings.enabled,
            max_output_bytes: settings.max_output_bytes,
            ring: RwLock::new(Arc::new(ring)),
            reloading: Mutex::new(()),
            last_serial: Mutex::new(0),
            shape: verify::receipt_shape(max_count),
            lane: verify::Lane::half_the_cores(),
        })
    }

    /// `text` checked as a receipt against the keys in force: read to the shape of this
    /// server's receipts, canonicalised and its signature checked off the async workers, in
    /// this server's [`verify::Lane`].
    ///
    /// # Errors
    /// 400 `invalid_receipt` ([`verify::Malformed`]); 503 `overloaded` when the lane had no
    /// place within its wait.
    pub async fn check(&self, text: impl AsRef<[u8]> + Send + 'static) -> Result<verify::Verdict, ApiError> {
        let (ring, shape) = (self.keys(), self.shape);
        let checked = self
            .lane
            .run(move || verify::verify_json(text.as_ref(), shape, |id| ring.find(id).map(|k| k.key)))
            .await
            .ok_or(ApiError::Overloaded)?;
        checked.map_err(|malformed| ApiError::invalid("invalid_receipt", "body", malformed.to_string()))
    }

    /// The lane anyone's signature checks run in (half the cores at most): `/verify`'s, and the
    /// RANDOM.ORG door's `verifySignature`, which share it.
    pub fn lane(&self) -> &verify::Lane {
        &self.lane
    }

    /// Reads the settings with `read` and puts the keys of their `signing_keys` in force, both
    /// under the reload lock (of two reloads at once, the later read is put in force later).
    /// `enabled` and `max_output_bytes` change with a restart only (a change is warned of).
    ///
    /// # Errors
    /// Those of `read` and [`KeyRing::load`], or no key to sign with while receipts are on;
    /// the keys in force then stay.
    pub fn reload_from(&self, read: impl FnOnce() -> anyhow::Result<ReceiptsSettings>) -> anyhow::Result<()> {
        let _one_at_a_time = self.reloading.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh = read()?;
        if fresh.enabled != self.enabled || fresh.max_output_bytes != self.max_output_bytes {
            tracing::warn!(
                "[receipts] enabled and max_output_bytes change with a restart; only the keys are reloaded"
            );
        }
        let ring = load(&fresh)?;
        anyhow::ensure!(
            !self.enabled || ring.signing_key_id().is_some(),
            "receipts are enabled and receipts.signing_keys names no key to sign with; the keys in force stay"
        );
        tracing::info!(
            key_ids = ring.ids().join(","),
            signs = ring.signing_key_id(),
            "receipt keys reloaded"
        );
        *self.ring.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(ring);
        Ok(())
    }

    /// The key ring in force.
    pub fn keys(&self) -> Arc<KeyRing> {
        self.ring.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The key files in force (for the reload watcher).
    pub fn files(&self) -> Vec<PathBuf> {
        self.keys().files().to_vec()
    }

    /// Whether `receipt=true` is served.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The most raw output bytes one receipt covers.
    pub fn max_output_bytes(&self) -> u64 {
        self.max_output_bytes
    }

    /// The largest receipt this server issues, as JSON: `max_output_bytes` of output written
    /// as ASCII bits (8 bytes a byte, the widest format), and room for the rest (a
    /// `user_data` written with JSON escapes, the parameters, serial, time and signature). The
    /// cap of `POST /verify`'s body.
    pub fn max_receipt_bytes(&self) -> usize {
        usize::try_from(self.max_output_bytes.saturating_mul(8))
            .unwrap_or(usize::MAX)
            .saturating_add(16 * 1024)
    }

    /// The receipt a request asks for: `None` without `receipt=true` or a `ticket` (a
    /// ticketed draw's receipt names it). An empty `user_data` is none.
    ///
    /// Whether the caller's policy allows receipts is its policy's to say, with the rest of
    /// the draw ([`crate::callers::Policy::check`]).
    ///
    /// # Errors
    /// 400 `user_data_without_receipt`, `receipts_disabled`, `user_data_too_large`.
    pub fn ask(
        &self,
        receipt: bool,
        user_data: Option<&str>,
        ticket: Option<&TicketStamp>,
    ) -> Result<Option<Ask>, ApiError> {
        let user_data = user_data.filter(|d| !d.is_empty());
        let receipt = receipt || ticket.is_some();
        if !receipt {
            return match user_data {
                Some(_) => Err(ApiError::invalid(
                    "user_data_without_receipt",
                    "user_data",
                    "user_data is written into a receipt: ask for one with receipt=true",
                )),
                None => Ok(None),
            };
        }
        if !self.enabled {
            return Err(ApiError::invalid(
                "receipts_disabled",
                "receipt",
                "this server issues no receipts ([receipts] enabled is off)",
            ));
        }
        if let Some(data) = user_data
            && data.len() > USER_DATA_MAX
        {
            return Err(ApiError::invalid(
                "user_data_too_large",
                "user_data",
                format!("user_data must be at most {USER_DATA_MAX} bytes (UTF-8), not {}", data.len()),
            ));
        }
        Ok(Some(Ask {
            user_data: user_data.map(str::to_owned),
            ticket: ticket.cloned(),
            max_output_bytes: self.max_output_bytes,
        }))
    }

    /// Signs `random` for `caller`: a serial (its random part drawn from `service`'s
    /// generator), the time, the caller's name, its `user_data` and the signing key's id are
    /// added, and the whole signed.
    ///
    /// # Errors
    /// 503 `entropy_unavailable` or `generator_failed` (no serial could be drawn); 500 when no
    /// key signs (never while receipts are on: start-up and reloads refuse that).
    pub fn issue(
        &self,
        service: &Service,
        caller: &Caller,
        ask: &Ask,
        random: Random,
    ) -> Result<Receipt, ApiError> {
        // The caller's policy was applied to the draw before anything was generated
        // (`Policy::check`, with the request's receipt). A caller it refuses receipts reaching
        // here is a handler that did not mark its request as receipted: refused, not signed.
        if !caller.policy.receipts {
            tracing::error!(
                "a receipt asked for a caller whose policy refuses them; refused (a wiring fault)"
            );
            return Err(ApiError::Internal);
        }
        let ring = self.keys();
        let mut serial_random = [0u8; sign::SERIAL_RANDOM_BYTES];
        service.fill_own(&mut serial_random)?;
        let stamp = {
            let mut last = self.last_serial.lock().unwrap_or_else(PoisonError::into_inner);
            sign::Stamp::new(std::time::SystemTime::now(), &serial_random).after(&mut last)
        };
        sign::sign(&ring, random, &stamp, caller.name(), (ask.user_data(), ask.ticket()))
    }
}

/// The key ring of `settings`, each warning logged.
fn load(settings: &ReceiptsSettings) -> anyhow::Result<KeyRing> {
    let (ring, warnings) = KeyRing::load(&settings.signing_keys)?;
    for w in warnings {
        tracing::warn!("{w}");
    }
    Ok(ring)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipts(enabled: bool) -> Receipts {
        Receipts {
            enabled,
            max_output_bytes: 64,
            ring: RwLock::new(Arc::new(KeyRing::default())),
            reloading: Mutex::new(()),
            last_serial: Mutex::new(0),
            shape: verify::receipt_shape(10),
            lane: verify::Lane::new(1, verify::LANE_WAIT),
        }
    }

    #[test]
    fn each_refusal_has_its_code() {
        let code = |r: Result<Option<Ask>, ApiError>| r.unwrap_err().code();
        let on = receipts(true);
        assert!(on.ask(false, None, None).unwrap().is_none());
        assert!(on.ask(false, Some(""), None).unwrap().is_none(), "an empty user_data is none");
        assert_eq!(code(on.ask(false, Some("x"), None)), "user_data_without_receipt");
        assert_eq!(code(receipts(false).ask(true, None, None)), "receipts_disabled");
        let long = "é".repeat(USER_DATA_MAX / 2 + 1);
        assert_eq!(code(on.ask(true, Some(&long), None)), "user_data_too_large");
        let ask = on.ask(true, Some(&"x".repeat(USER_DATA_MAX)), None).unwrap().unwrap();
        assert_eq!(ask.user_data().map(str::len), Some(USER_DATA_MAX));
        assert!(ask.check_size(64).is_ok());
        assert_eq!(ask.check_size(65).unwrap_err().code(), "receipt_too_large");
    }
}
