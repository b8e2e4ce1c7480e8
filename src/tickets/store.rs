//! The tickets' store interface: what the domain ([`super::Tickets`]) asks of the place tickets
//! and kept results live. Two implementations: [`super::sqlite::Sqlite`] (`[results] store =
//! "sqlite"`, the embedded default: one file, one replica) and [`super::postgres::Postgres`]
//! (`"postgres"`: one database shared by a fleet). A new store is one more implementation of
//! [`TicketStore`], and a `results.store` value that opens it.
//!
//! Every write is one transaction, committed before its future resolves `Ok`; a future that
//! resolves [`StoreError`] (or is dropped at its deadline) kept nothing, or (a lost
//! acknowledgement: the store's answer to a commit never came) may have kept it, which the
//! domain reads back ([`TicketStore::settled`]) before it answers.
//! Redis is not a store for this: a ticket used on a primary that fails before it persists
//! could be used again.

use futures_util::future::BoxFuture;

use super::ticket::{Ticket, TicketKind};

/// The least serial number a store opened now gives: now in Unix microseconds (a store's
/// counter starts from at least this, so that a new or restored store never repeats a number
/// an older one gave under the same key; at a million signatures a second at most, a counter
/// never runs ahead of the clock).
pub fn serials_floor() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// The store did not do the job, or cannot say whether it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// Not done: unreachable, its queue full, or the store refused or rolled the job back.
    #[error("the tickets' store is unavailable")]
    Unavailable,
    /// Perhaps done: the job reached the store and its answer was lost (a connection that
    /// broke, a deadline that passed while it ran).
    #[error("the tickets' store did not say whether the job was done")]
    Unknown,
}

/// Why new tickets were not created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The caller would hold more unused tickets than allowed: how many it holds.
    TooMany(u64),
    /// The caller has a ticket bound to a round under this label already.
    LabelTaken(String),
}

/// A used ticket's draw, to keep with it.
#[derive(Debug, Clone)]
pub struct Use {
    /// The ticket.
    pub id: String,
    /// Its caller.
    pub caller: String,
    /// The request's digest ([`super::request_digest`]).
    pub digest: Vec<u8>,
    /// The receipt's serial.
    pub serial: String,
    /// The answer, byte for byte.
    pub result: Vec<u8>,
    /// The successor's id.
    pub next_id: String,
}

/// A signed answer kept without a ticket (`[results] keep_all`).
#[derive(Debug, Clone)]
pub struct Kept {
    /// The receipt's serial.
    pub serial: String,
    /// Its caller.
    pub caller: String,
    /// The answer, as REST sends it.
    pub result: Vec<u8>,
}

/// Where tickets and kept results live. Times are Unix milliseconds, given by the caller.
pub trait TicketStore: Send + Sync + std::fmt::Debug {
    /// Inserts `tickets` (all of one caller's) unless the caller would then hold more than
    /// `max_unused` unused, unexpired ones at `now`, or already has a bound ticket of one of
    /// their labels (of any age, used or not): `Some` refused (nothing inserted), `None`
    /// inserted.
    fn create(
        &self,
        tickets: Vec<Ticket>,
        max_unused: u64,
        now: i64,
    ) -> BoxFuture<'_, Result<Option<Refused>, StoreError>>;

    /// The ticket `id`, with its use's digest and its kept result, if any.
    fn find(&self, id: String) -> BoxFuture<'_, Result<Option<Ticket>, StoreError>>;

    /// Marks `used.id` used (only if unused, the caller's, and unexpired at `now`), keeps its
    /// result and creates its successor (expiring at `next_expires`), in one transaction:
    /// `true` kept, `false` nothing kept (used or expired already).
    fn settle(
        &self,
        used: Use,
        now: i64,
        next_expires: Option<i64>,
    ) -> BoxFuture<'_, Result<bool, StoreError>>;

    /// The ticket `id` as [`TicketStore::find`] reads it, once any use of it still in progress
    /// (one whose answer was lost or whose deadline passed) has ended: what it kept decides.
    fn settled(&self, id: String) -> BoxFuture<'_, Result<Option<Ticket>, StoreError>>;

    /// Keeps a signed answer drawn without a ticket, at `now`.
    fn keep(&self, kept: Kept, now: i64) -> BoxFuture<'_, Result<(), StoreError>>;

    /// Marks used ticket `id` and its predecessors revealed: how many were not shown before.
    fn reveal(&self, id: String) -> BoxFuture<'_, Result<u64, StoreError>>;

    /// `caller`'s tickets of `kind` with ids after `after`, by id, `limit` at most, without
    /// their results.
    fn list(
        &self,
        caller: String,
        kind: TicketKind,
        after: String,
        limit: u32,
    ) -> BoxFuture<'_, Result<Vec<Ticket>, StoreError>>;

    /// The kept answer of `serial`, if it is `caller`'s.
    fn result(&self, caller: String, serial: String) -> BoxFuture<'_, Result<Option<Vec<u8>>, StoreError>>;

    /// A new serial number for a RANDOM.ORG-form signed result: one more than the last any
    /// replica of this store took (1 first), so that no two results share one.
    fn next_serial(&self) -> BoxFuture<'_, Result<u64, StoreError>>;

    /// Deletes up to `batch` kept results created before `before`: how many were deleted.
    fn sweep(&self, before: i64, batch: u32) -> BoxFuture<'_, Result<u64, StoreError>>;

    /// The bytes the store's tickets and results take.
    fn size(&self) -> BoxFuture<'_, Result<u64, StoreError>>;
}
