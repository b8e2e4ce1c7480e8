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
//! cap on unused tickets, the digest that tells a retry from another draw, retention and the
//! store's size bound); where they are kept is a [`store::TicketStore`]'s (SQLite by default,
//! PostgreSQL for a fleet). Ids are UUIDv7 (RFC 9562) with 74 random bits from drbgd's own
//! generator, as receipt serials are: an id shows when its ticket was created.

pub mod bound;
mod holds;
pub mod postgres;
pub mod sqlite;
pub mod store;
mod ticket;

pub use holds::Held;
pub use store::{Kept, Refused, StoreError, TicketStore, Use};
pub use ticket::{Bound, Ticket, TicketKind};

use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256, Sha512};

use crate::config::results::{ResultsSettings, ResultsStore};
use crate::config::tickets::TicketsSettings;
use crate::error::ApiError;
use crate::metrics::TicketSeries;
use crate::service::Service;

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
        /// Its answer, byte for byte (none once swept past its retention).
        result: Option<Vec<u8>>,
        /// The ticket its use created.
        next_id: Option<String>,
    },
}

/// Kept results deleted by one sweep call at most (a sweep is a loop of them).
const SWEEP_BATCH: u32 = 1000;
/// How often the store's size is measured (and the sweep runs every [`SWEEP_EVERY`] of them).
const MEASURE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);
/// Anyone's lookups in progress at once, at most (and at most half the PostgreSQL pool).
const PUBLIC_LOOKUPS: usize = 8;
/// Measurements between sweeps (a minute).
const SWEEP_EVERY: u32 = 12;

/// The tickets of this server: the store, the settings, the key of callers' hashes, and one
/// lock a caller's ticket in use.
pub struct Tickets {
    store: Box<dyn TicketStore>,
    settings: TicketsSettings,
    results: ResultsSettings,
    series: TicketSeries,
    /// The store held `results.max_bytes` or more when last measured.
    full: std::sync::atomic::AtomicBool,
    /// Places for anyone's lookups (`GET /tickets/{id}`, `GetTicket`), a share of the store's
    /// connections: a flood of public lookups leaves the callers' draws their own.
    public: tokio::sync::Semaphore,
    /// The store's own secret: callers' hashes are keyed with it ([`Tickets::caller_hash`]).
    hash_key: zeroize::Zeroizing<Vec<u8>>,
    /// The tickets draws are using in this process.
    held: holds::Holds,
}

/// Shows the settings, never a ticket.
impl std::fmt::Debug for Tickets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tickets")
            .field("settings", &self.settings)
            .field("store", &self.store)
            .finish_non_exhaustive()
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
/// sent, in name order, each length-prefixed. Defaults the server fills in later are not in
/// it, so a reload that changes one turns no retry into a refusal. Left out: the ticket itself,
/// `receipt` (a ticket implies one), and a `false` flag or an empty string, which say what
/// their absence says and which gRPC cannot tell from it (proto3's zero is unset): so a REST
/// body and a gRPC message of one draw digest alike.
pub fn request_digest<'a>(
    caller: &str,
    endpoint: &str,
    params: impl Iterator<Item = (&'a str, &'a str)>,
) -> Vec<u8> {
    let said = |(name, value): &(&str, &str)| {
        !matches!(*name, "ticket" | "receipt") && !matches!(*value, "false" | "")
    };
    let mut pairs: Vec<(&str, &str)> = params.filter(said).collect();
    pairs.sort_unstable();
    let mut hash = Sha256::new();
    for field in [caller, endpoint].into_iter().chain(pairs.iter().flat_map(|(k, v)| [*k, *v])) {
        hash.update((field.len() as u64).to_be_bytes());
        hash.update(field.as_bytes());
    }
    hash.finalize().to_vec()
}

impl Tickets {
    /// The tickets of `settings`, kept where `results` says (a SQLite file created 0600 with
    /// its schema, or a PostgreSQL database whose schema is created or checked now).
    ///
    /// # Errors
    /// The store cannot be opened, reached within its deadline, or its schema made.
    pub async fn open(
        settings: &TicketsSettings,
        results: &ResultsSettings,
        service: &Service,
        series: TicketSeries,
    ) -> anyhow::Result<Tickets> {
        let mut fresh = zeroize::Zeroizing::new([0u8; 32]);
        service.fill_own(&mut *fresh).map_err(|e| anyhow::anyhow!("no key for callers' hashes: {e}"))?;
        let (store, key): (Box<dyn TicketStore>, Vec<u8>) = match results.store {
            ResultsStore::Sqlite => {
                let (store, key) = sqlite::Sqlite::open(std::path::Path::new(&results.path), &*fresh)?;
                (Box::new(store), key)
            }
            ResultsStore::Postgres => {
                let (store, key) = postgres::Postgres::open(results, &*fresh).await?;
                (Box::new(store), key)
            }
        };
        Ok(Tickets {
            store,
            settings: settings.clone(),
            results: results.clone(),
            series,
            full: std::sync::atomic::AtomicBool::new(false),
            public: tokio::sync::Semaphore::new(PUBLIC_LOOKUPS.min(results.pool_size as usize / 2).max(1)),
            hash_key: zeroize::Zeroizing::new(key),
            held: holds::Holds::default(),
        })
    }

    /// The series this counts in.
    pub fn series(&self) -> &TicketSeries {
        &self.series
    }

    /// `call`, timed as store operation `op` and bounded by `results.timeout_ms`.
    async fn timed<T>(
        &self,
        op: &'static str,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        self.timed_within(op, std::time::Duration::from_millis(self.results.timeout_ms), call).await
    }

    /// `call`, timed as store operation `op` and bounded by `deadline`.
    async fn timed_within<T>(
        &self,
        op: &'static str,
        deadline: std::time::Duration,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let start = std::time::Instant::now();
        // Past its deadline a call may still be done (dropped mid-flight).
        let done = tokio::time::timeout(deadline, call).await.unwrap_or(Err(StoreError::Unknown));
        self.series.duration.with_label_values(&[op]).observe(start.elapsed().as_secs_f64());
        if done.is_err() {
            self.series.errors.with_label_values(&[op]).inc();
        }
        done
    }

    /// 503 `store_full` while the store holds `results.max_bytes` or more.
    pub fn room(&self) -> Result<(), ApiError> {
        match self.full.load(std::sync::atomic::Ordering::Relaxed) {
            true => Err(ApiError::StoreFull),
            false => Ok(()),
        }
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

    /// Holds ticket `id` for a draw of `caller`'s: its other uses in this process wait until
    /// this one is settled, and an identical request gets its stored answer instead of drawing;
    /// another caller naming the id does not wait for it.
    pub async fn hold(&self, caller: &str, id: &str) -> Held {
        self.held.hold(caller, id).await
    }

    /// When a ticket created at `now` expires (none without `ttl_seconds`).
    fn expiry(&self, now: i64) -> Option<i64> {
        let ttl = i64::try_from(self.settings.ttl_seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
        (ttl > 0).then(|| now.saturating_add(ttl))
    }

    /// New, unused tickets of `caller`'s with ids `ids`, created now (not stored yet:
    /// [`Tickets::create`] stores them).
    pub fn fresh(&self, caller: &str, ids: Vec<String>, show_result: bool) -> Vec<Ticket> {
        let now = now_ms();
        let expires_ms = self.expiry(now);
        ids.into_iter().map(|id| Ticket::new(id, caller, show_result, now, expires_ms)).collect()
    }

    /// Stores `tickets` (new, all of one caller's: [`Tickets::fresh`]), unless the caller would
    /// hold more than `max_unused` unused ones (counted and inserted in one transaction).
    ///
    /// # Errors
    /// 409 `too_many_tickets`, `label_taken`; 503 `store_unavailable`, `store_full`.
    pub async fn create(&self, tickets: Vec<Ticket>) -> Result<Vec<Ticket>, ApiError> {
        self.room()?;
        let now = now_ms();
        let max = u64::from(self.settings.max_unused);
        match self.timed("create", self.store.create(tickets.clone(), max, now)).await? {
            Some(Refused::TooMany(held)) => Err(ApiError::Conflict {
                code: "too_many_tickets",
                detail: format!(
                    "this caller holds {held} unused tickets; at most {max} ([tickets] max_unused)"
                ),
            }),
            Some(Refused::LabelTaken(label)) => Err(ApiError::Conflict {
                code: "label_taken",
                detail: format!(
                    "this caller has a ticket bound to a round under the label {label:?} already: a label names one draw"
                ),
            }),
            None => {
                self.series.events.with_label_values(&["created"]).inc_by(tickets.len() as u64);
                Ok(tickets)
            }
        }
    }

    /// The ticket `id` as a draw of `caller` finds it.
    ///
    /// # Errors
    /// 404 `ticket_not_found`, 403 `ticket_not_yours`, 410 `ticket_expired`; 503.
    pub async fn lookup(&self, caller: &str, id: &str) -> Result<Lookup, ApiError> {
        let ticket = self.timed("find", self.store.find(id.to_owned())).await?;
        let Some(ticket) = ticket else { return Err(not_found(id)) };
        if ticket.caller != caller {
            return Err(ApiError::forbidden("ticket_not_yours", format!("ticket {id} is another caller's")));
        }
        if ticket.used_ms.is_some() {
            // A use is its digest, serial and answer, kept in one commit: one without its digest
            // or serial is a store that is not whole, and nothing is drawn under it. (Its answer
            // alone goes, with its retention.)
            let (Some(serial), Some(digest)) = (ticket.serial, ticket.digest) else {
                tracing::error!(ticket = id, "a used ticket without its digest or serial");
                return Err(ApiError::StoreUnavailable);
            };
            return Ok(Lookup::Used { digest, serial, result: ticket.result, next_id: ticket.next_id });
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
    /// successor created, all in one transaction, committed before this returns. `false`: the
    /// ticket was used already (by a request that got there first, here or on another replica)
    /// or expired in the meantime (what [`Tickets::lookup`] finds now); nothing of `used` was
    /// kept. When the store's answer is lost (a failure, or no answer within twice
    /// `results.timeout_ms`, past the store's own bound on the statement), the ticket is read
    /// back once any use of it in progress has ended: kept with this serial is kept, used by
    /// another request is `false`, unused (or still unreadable) is 503.
    ///
    /// # Errors
    /// 503 `store_unavailable` (nothing of `used` is kept as far as this server can tell),
    /// `store_full`.
    pub async fn settle(&self, used: Use) -> Result<bool, ApiError> {
        self.room()?;
        let now = now_ms();
        let expires_ms = self.expiry(now);
        let (id, serial) = (used.id.clone(), used.serial.clone());
        let wait = std::time::Duration::from_millis(2 * self.results.timeout_ms + 1000);
        let kept = match self.timed_within("settle", wait, self.store.settle(used, now, expires_ms)).await {
            Ok(kept) => kept,
            Err(StoreError::Unavailable) => return Err(ApiError::StoreUnavailable),
            Err(StoreError::Unknown) => self.read_back(&id, &serial).await?,
        };
        if kept {
            self.series.events.with_label_values(&["used"]).inc();
        }
        Ok(kept)
    }

    /// Whether the use of `id` whose answer was lost kept `serial`, read back once any use of it
    /// in progress has ended (and again, for twice `results.timeout_ms`, while the store cannot
    /// be read: a database restarting): `true` kept, `false` used by another request.
    ///
    /// # Errors
    /// 503 `store_unavailable`: not kept, the ticket unused; `store_outcome_unknown`: the store
    /// could not be read in time.
    async fn read_back(&self, id: &str, serial: &str) -> Result<bool, ApiError> {
        let until =
            tokio::time::Instant::now() + std::time::Duration::from_millis(2 * self.results.timeout_ms);
        loop {
            match self.timed("settled", self.store.settled(id.to_owned())).await {
                Ok(Some(t)) if t.serial.as_deref() == Some(serial) => {
                    tracing::warn!(ticket = id, "a use whose commit was not acknowledged was found kept");
                    return Ok(true);
                }
                Ok(Some(t)) if t.used_ms.is_some() => return Ok(false),
                Ok(_) => return Err(ApiError::StoreUnavailable),
                Err(_) if tokio::time::Instant::now() < until => {
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                Err(_) => {
                    tracing::error!(
                        ticket = id,
                        "whether a use was kept is unknown: the store cannot be read"
                    );
                    return Err(ApiError::StoreOutcomeUnknown);
                }
            }
        }
    }

    /// A new serial number for a RANDOM.ORG-form signed result, unique in this store (every
    /// replica's): one more than the last.
    ///
    /// # Errors
    /// 503 `store_unavailable`.
    pub async fn next_serial(&self) -> Result<u64, ApiError> {
        Ok(self.timed("serial", self.store.next_serial()).await?)
    }

    /// Whether every receipt is kept (`[results] keep_all`).
    pub fn keeps_all(&self) -> bool {
        self.results.keep_all
    }

    /// Keeps a receipt drawn without a ticket (`[results] keep_all`), committed before this
    /// returns: the receipt is not answered otherwise.
    ///
    /// # Errors
    /// 503 `store_unavailable` (also for an answer lost: the receipt is not sent, and its
    /// serial, if kept, is never handed out), `store_full`.
    pub async fn keep(&self, kept: Kept) -> Result<(), ApiError> {
        self.room()?;
        self.timed("keep", self.store.keep(kept, now_ms())).await?;
        self.series.kept.inc();
        Ok(())
    }

    /// The ticket `id`, looked up for anyone (no caller: under the public lookups' places, 503
    /// `overloaded` at once when none is free).
    ///
    /// # Errors
    /// 503.
    pub async fn get_public(&self, id: &str) -> Result<Option<Ticket>, ApiError> {
        let _place = self.public.try_acquire().map_err(|_| ApiError::Overloaded)?;
        self.get(id).await
    }

    /// The ticket `id`.
    ///
    /// # Errors
    /// 503.
    pub async fn get(&self, id: &str) -> Result<Option<Ticket>, ApiError> {
        Ok(self.timed("find", self.store.find(id.to_owned())).await?)
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
        Ok(self.timed("reveal", self.store.reveal(id.to_owned())).await?)
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
        let call = self.store.list(caller.to_owned(), kind, after.to_owned(), limit);
        Ok(self.timed("list", call).await?)
    }

    /// The kept answer of serial `serial`, for its caller only (another's is not found).
    ///
    /// # Errors
    /// 503.
    pub async fn result(&self, caller: &str, serial: &str) -> Result<Option<Vec<u8>>, ApiError> {
        Ok(self.timed("result", self.store.result(caller.to_owned(), serial.to_owned())).await?)
    }

    /// For ever, while serving: the store's size measured every few seconds (past
    /// `results.max_bytes`, writes are refused until it is back under), and results past their
    /// retention swept every minute, a batch at a time.
    pub async fn upkeep(&self) {
        let mut tick = tokio::time::interval(MEASURE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        for round in 0u32.. {
            tick.tick().await;
            if round % SWEEP_EVERY == 0 {
                self.sweep().await;
            }
            self.measure().await;
        }
    }

    /// Measures the store's size, and whether it is full.
    pub async fn measure(&self) {
        let Ok(bytes) = self.timed("size", self.store.size()).await else { return };
        let full = bytes >= self.results.max_bytes;
        if full != self.full.swap(full, std::sync::atomic::Ordering::Relaxed) && full {
            tracing::error!(
                bytes,
                max_bytes = self.results.max_bytes,
                "the tickets' store is full: new tickets and ticketed draws are refused (503 store_full)"
            );
        }
        self.series.bytes.set(i64::try_from(bytes).unwrap_or(i64::MAX));
        self.series.full.set(i64::from(full));
    }

    /// Deletes the results past their retention, a batch at a time: how many.
    pub async fn sweep(&self) -> u64 {
        self.sweep_before(now_ms().saturating_sub(self.results.retention_ms())).await
    }

    /// Deletes the results kept before `before` (Unix milliseconds), a batch at a time: how many.
    pub async fn sweep_before(&self, before: i64) -> u64 {
        let mut swept = 0;
        while let Ok(n) = self.timed("sweep", self.store.sweep(before, SWEEP_BATCH)).await {
            swept += n;
            self.series.swept.inc_by(n);
            if n < u64::from(SWEEP_BATCH) {
                break;
            }
        }
        swept
    }
}

/// 404 `ticket_not_found`.
pub fn not_found(id: &str) -> ApiError {
    ApiError::Missing { code: "ticket_not_found", detail: format!("no ticket {id}") }
}
