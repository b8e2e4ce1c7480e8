//! Single-use tickets and the signed results kept for them, in RANDOM.ORG's model (its Signed
//! API, Release 4: `createTickets`, `revealTickets`, `listTickets`, `getTicket`): a caller
//! creates tickets before it draws; a draw under a ticket uses it once, and its receipt names
//! it; anyone holding the id can look the ticket up, and see its result once the caller chose
//! to show it (at creation) or revealed it later. A draw nobody can redo: a caller that asked a
//! hundred times would show a hundred used tickets.
//!
//! Chains form as RANDOM.ORG's do: using a ticket creates its successor (`next`), whose
//! `previous` is the used ticket, so one caller's draws under a chain show no gap. A receipt
//! signs the ticket's id and its `previous` (fixed when the ticket was created), never its
//! successor.
//!
//! This module owns the domain and its rules (who may use or reveal which ticket, expiry, the
//! cap on unused tickets, the digest that tells a retry from another draw); the file it keeps
//! them in is `tickets/sqlite.rs`'s. Ids are UUIDv7 (RFC 9562) with 74 random bits from
//! drbgd's own generator, as receipt serials are: an id shows when its ticket was created.

pub mod sqlite;
mod ticket;

pub use ticket::{Ticket, TicketKind};

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256, Sha512};

use crate::config::tickets::TicketsSettings;
use crate::error::ApiError;
use crate::service::Service;
use sqlite::{Sqlite, StoreError};

/// Most tickets one `POST /tickets` creates (RANDOM.ORG's `n`: 1 to 50).
pub const MAX_PER_CREATE: u32 = 50;
/// Most tickets one page of `GET /tickets` lists.
pub const MAX_PER_PAGE: u32 = 1000;

/// What a ticket is, for a draw about to use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// Unused: the draw may go on.
    Unused(Ticket),
    /// Used already, by a request of this digest, answered with this.
    Used {
        /// The digest of the request that used it.
        digest: Vec<u8>,
        /// Its receipt's serial.
        serial: String,
        /// Its answer, byte for byte.
        result: Vec<u8>,
        /// The ticket its use created.
        next_id: Option<String>,
    },
}

/// A used ticket's draw, to keep with it.
#[derive(Debug, Clone)]
pub struct Use {
    /// The ticket.
    pub id: String,
    /// Its caller.
    pub caller: String,
    /// The request's digest ([`request_digest`]).
    pub digest: Vec<u8>,
    /// The receipt's serial.
    pub serial: String,
    /// The answer, byte for byte.
    pub result: Vec<u8>,
    /// The successor's id.
    pub next_id: String,
}

/// The tickets of this server: the store, the settings, the key of callers' hashes, and one
/// lock a ticket in use.
pub struct Tickets {
    store: Sqlite,
    settings: TicketsSettings,
    /// The store's own secret: callers' hashes are keyed with it ([`Tickets::caller_hash`]).
    hash_key: zeroize::Zeroizing<Vec<u8>>,
    /// The tickets in use, by id (entries no draw holds are swept as the map grows).
    held: Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>,
    /// The map's size that triggers the next sweep.
    sweep_at: std::sync::atomic::AtomicUsize,
}

/// Shows the settings, never a ticket.
impl std::fmt::Debug for Tickets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tickets").field("settings", &self.settings).finish_non_exhaustive()
    }
}

impl From<StoreError> for ApiError {
    fn from(_: StoreError) -> Self {
        ApiError::StoreUnavailable
    }
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A new ticket id: a UUIDv7 of `now_ms` with 74 random bits from `service`'s generator.
///
/// # Errors
/// 503 when the generator refuses.
pub fn new_id(service: &Service, now_ms: i64) -> Result<String, ApiError> {
    let mut random = [0u8; 10];
    service.fill_own(&mut random)?;
    let ms = u64::try_from(now_ms).unwrap_or(0);
    Ok(uuid::Builder::from_unix_timestamp_millis(ms, &random).into_uuid().to_string())
}

/// Whether `id` is a ticket id as this server writes them (hyphenated lowercase UUIDv7).
pub fn valid_id(id: &str) -> bool {
    uuid::Uuid::try_parse(id).is_ok_and(|u| u.get_version_num() == 7 && u.to_string() == id)
}

/// What makes two draws the same request: the caller, the endpoint, and every parameter as
/// sent (but the ticket), in name order, each length-prefixed. Defaults the server fills in
/// later are not in it, so a reload that changes one turns no retry into a refusal.
pub fn request_digest<'a>(
    caller: &str,
    endpoint: &str,
    params: impl Iterator<Item = (&'a str, &'a str)>,
) -> Vec<u8> {
    let mut pairs: Vec<(&str, &str)> = params.filter(|(name, _)| *name != "ticket").collect();
    pairs.sort_unstable();
    let mut hash = Sha256::new();
    for field in [caller, endpoint].into_iter().chain(pairs.iter().flat_map(|(k, v)| [*k, *v])) {
        hash.update((field.len() as u64).to_be_bytes());
        hash.update(field.as_bytes());
    }
    hash.finalize().to_vec()
}

impl Tickets {
    /// The tickets of `settings`, their file opened (created 0600 with its schema).
    ///
    /// # Errors
    /// The file cannot be opened or created.
    pub fn open(settings: &TicketsSettings, service: &Service) -> anyhow::Result<Tickets> {
        let mut fresh = zeroize::Zeroizing::new([0u8; 32]);
        service.fill_own(&mut *fresh).map_err(|e| anyhow::anyhow!("no key for callers' hashes: {e}"))?;
        let (store, key) = Sqlite::open(std::path::Path::new(&settings.path), &*fresh)?;
        Ok(Tickets {
            store,
            settings: settings.clone(),
            hash_key: zeroize::Zeroizing::new(key),
            held: Mutex::new(HashMap::new()),
            sweep_at: std::sync::atomic::AtomicUsize::new(1024),
        })
    }

    /// How a ticket shows its caller: base64 of the HMAC-SHA-512 of its name keyed with the
    /// store's own secret (as RANDOM.ORG's `hashedApiKey` shows a key): the same for one
    /// caller's every ticket, and no dictionary of callers' names reverses it. (A result shown
    /// or revealed is its receipt, which names its caller.)
    pub fn caller_hash(&self, caller: &str) -> String {
        use hmac::{KeyInit, Mac};
        let Ok(mut mac) = hmac::Hmac::<Sha512>::new_from_slice(&self.hash_key) else { return String::new() };
        mac.update(caller.as_bytes());
        data_encoding::BASE64.encode(&mac.finalize().into_bytes())
    }

    /// Holds ticket `id` for a draw: concurrent uses of one ticket are taken one after the
    /// other, so an identical request waits for the first one's stored answer instead of
    /// drawing. (A chain cannot fork anyway: a ticket is used, and its one successor made, by
    /// one conditional update; uses of different tickets go on side by side, and their commits
    /// are grouped.)
    pub async fn hold(&self, id: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut chains = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            if chains.len() >= self.sweep_at.load(std::sync::atomic::Ordering::Relaxed) {
                chains.retain(|_, lock| lock.strong_count() > 0);
                self.sweep_at.store((2 * chains.len()).max(1024), std::sync::atomic::Ordering::Relaxed);
            }
            match chains.get(id).and_then(Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    let lock = Arc::new(tokio::sync::Mutex::new(()));
                    chains.insert(id.to_owned(), Arc::downgrade(&lock));
                    lock
                }
            }
        };
        lock.lock_owned().await
    }

    /// When a ticket created at `now` expires (none without `ttl_seconds`).
    fn expiry(&self, now: i64) -> Option<i64> {
        let ttl = i64::try_from(self.settings.ttl_seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
        (ttl > 0).then(|| now.saturating_add(ttl))
    }

    /// `ids.len()` new tickets for `caller`, unless it would hold more than `max_unused`
    /// unused ones (counted and inserted in one transaction).
    ///
    /// # Errors
    /// 409 `too_many_tickets`; 503 `store_unavailable`.
    pub async fn create(
        &self,
        caller: &str,
        ids: Vec<String>,
        show_result: bool,
    ) -> Result<Vec<Ticket>, ApiError> {
        let now = now_ms();
        let expires_ms = self.expiry(now);
        let tickets: Vec<Ticket> =
            ids.into_iter().map(|id| Ticket::new(id, caller, show_result, now, expires_ms)).collect();
        let (max, owner, rows) = (u64::from(self.settings.max_unused), caller.to_owned(), tickets.clone());
        let held = self
            .store
            .call(move |c| {
                let held = sqlite::unused(c, &owner, now)?;
                if held + rows.len() as u64 > max {
                    return Ok(Some(held));
                }
                rows.iter().try_for_each(|t| sqlite::insert(c, t))?;
                Ok(None)
            })
            .await?;
        match held {
            Some(held) => Err(ApiError::Conflict {
                code: "too_many_tickets",
                detail: format!(
                    "this caller holds {held} unused tickets; at most {max} ([tickets] max_unused)"
                ),
            }),
            None => Ok(tickets),
        }
    }

    /// The ticket `id` as a draw of `caller` finds it.
    ///
    /// # Errors
    /// 404 `ticket_not_found`, 403 `ticket_not_yours`, 410 `ticket_expired`; 503.
    pub async fn lookup(&self, caller: &str, id: &str) -> Result<Lookup, ApiError> {
        let key = id.to_owned();
        let found =
            self.store.call(move |c| Ok((sqlite::ticket(c, &key)?, sqlite::digest(c, &key)?))).await?;
        let (Some(ticket), digest) = found else { return Err(not_found(id)) };
        if ticket.caller != caller {
            return Err(ApiError::forbidden("ticket_not_yours", format!("ticket {id} is another caller's")));
        }
        if ticket.used_ms.is_some() {
            // A use is its digest, serial and answer, kept in one commit: one without them is a
            // store that is not whole, and nothing is drawn under it.
            let (Some(serial), Some(result), Some(digest)) = (ticket.serial, ticket.result, digest) else {
                tracing::error!(ticket = id, "a used ticket without its kept answer");
                return Err(ApiError::StoreUnavailable);
            };
            return Ok(Lookup::Used { digest, serial, result, next_id: ticket.next_id });
        }
        if ticket.expires_ms.is_some_and(|at| at <= now_ms()) {
            return Err(ApiError::Gone {
                code: "ticket_expired",
                detail: format!("ticket {id} expired unused"),
            });
        }
        Ok(Lookup::Unused(ticket))
    }

    /// Keeps `used`: the ticket marked used with its digest and serial, its answer stored, its
    /// successor created, all in one transaction, committed before this returns. `None`: the
    /// ticket was used already (by a request that got there first) or expired in the meantime
    /// (what [`Tickets::lookup`] finds now); nothing of `used` was kept.
    ///
    /// # Errors
    /// 503 `store_unavailable`: nothing was kept, the ticket is unused.
    pub async fn settle(&self, used: Use) -> Result<Option<()>, ApiError> {
        let now = now_ms();
        let expires_ms = self.expiry(now);
        self.store
            .call(move |c| {
                // Unused, the caller's, and not expired (a draw that crossed its expiry keeps
                // nothing: the ticket is then found expired).
                let marked = c.execute(
                    "UPDATE tickets SET used_ms = ?2, digest = ?3, serial = ?4, next_id = ?5 \
                     WHERE id = ?1 AND caller = ?6 AND used_ms IS NULL AND (expires_ms IS NULL OR expires_ms > ?2)",
                    rusqlite::params![used.id, now, used.digest, used.serial, used.next_id, used.caller],
                )?;
                if marked == 0 {
                    return Ok(None);
                }
                c.execute(
                    "INSERT INTO results (serial, caller, ticket_id, created_ms, body) VALUES (?1, ?2, ?3, ?4, ?5)",
                    rusqlite::params![used.serial, used.caller, used.id, now, used.result],
                )?;
                c.execute(
                    "INSERT INTO tickets (id, caller, show_result, created_ms, expires_ms, previous_id) \
                     SELECT ?1, caller, show_result, ?2, ?3, id FROM tickets WHERE id = ?4",
                    rusqlite::params![used.next_id, now, expires_ms, used.id],
                )?;
                Ok(Some(()))
            })
            .await
            .map_err(ApiError::from)
    }

    /// The ticket `id`, for anyone.
    ///
    /// # Errors
    /// 503.
    pub async fn get(&self, id: &str) -> Result<Option<Ticket>, ApiError> {
        let key = id.to_owned();
        Ok(self.store.call(move |c| sqlite::ticket(c, &key)).await?)
    }

    /// Reveals `caller`'s used ticket `id` and its predecessors: their results become anyone's
    /// to see. How many were revealed now (those shown from creation, or revealed before, are
    /// not counted).
    ///
    /// # Errors
    /// 404, 403 as [`Tickets::lookup`]; 409 `ticket_unused`; 503.
    pub async fn reveal(&self, caller: &str, id: &str) -> Result<u64, ApiError> {
        let ticket = self.get(id).await?.ok_or_else(|| not_found(id))?;
        if ticket.caller != caller {
            return Err(ApiError::forbidden("ticket_not_yours", format!("ticket {id} is another caller's")));
        }
        if ticket.used_ms.is_none() {
            return Err(ApiError::Conflict {
                code: "ticket_unused",
                detail: format!("ticket {id} is not used yet: there is no result to reveal"),
            });
        }
        let key = id.to_owned();
        Ok(self
            .store
            .call(move |c| {
                c.execute(
                    "WITH RECURSIVE chain(id) AS (SELECT ?1 UNION SELECT t.previous_id FROM tickets t \
                     JOIN chain ON t.id = chain.id WHERE t.previous_id IS NOT NULL) \
                     UPDATE tickets SET revealed = 1 WHERE id IN chain AND used_ms IS NOT NULL \
                     AND show_result = 0 AND revealed = 0",
                    [key],
                )
            })
            .await? as u64)
    }

    /// `caller`'s tickets of `kind`, ids after `after`, `limit` of them at most.
    ///
    /// # Errors
    /// 503.
    pub async fn list(
        &self,
        caller: &str,
        kind: TicketKind,
        after: &str,
        limit: u32,
    ) -> Result<Vec<Ticket>, ApiError> {
        let (owner, after) = (caller.to_owned(), after.to_owned());
        Ok(self.store.call(move |c| sqlite::list(c, &owner, kind, &after, limit)).await?)
    }

    /// The kept answer of serial `serial`, for its caller only (another's is not found).
    ///
    /// # Errors
    /// 503.
    pub async fn result(&self, caller: &str, serial: &str) -> Result<Option<Vec<u8>>, ApiError> {
        let (owner, key) = (caller.to_owned(), serial.to_owned());
        Ok(self
            .store
            .call(move |c| {
                use rusqlite::OptionalExtension;
                c.query_row("SELECT body FROM results WHERE serial = ?1 AND caller = ?2", [key, owner], |r| {
                    r.get(0)
                })
                .optional()
            })
            .await?)
    }
}

/// 404 `ticket_not_found`.
pub fn not_found(id: &str) -> ApiError {
    ApiError::Missing { code: "ticket_not_found", detail: format!("no ticket {id}") }
}
