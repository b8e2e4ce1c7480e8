//! The quota-store interface: where callers' buckets are kept, how a request takes from them,
//! and what the store does with its own time (start-up, upkeep, shutdown). Two implementations:
//! [`super::local::LocalStore`] (`[quota] store = "local"`: this process's buckets) and
//! [`super::redis_store::RedisStore`] (`"redis"`: the fleet's buckets, leased). A new store is
//! one more implementation of [`QuotaStore`], and a `quota.store` value that builds it.
//!
//! A caller's [`QuotaState`] is the store's to use: its local buckets and its leases live
//! there, kept across reloads with the caller.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio::time::Instant;

use super::state::QuotaState;
use super::types::{Kind, Quota, Rate, Refusal};

/// Whose buckets: a caller's name (its keys in a shared store) and its quota state.
#[derive(Debug, Clone, Copy)]
pub struct Owner<'a> {
    /// The caller's name.
    pub name: &'a Arc<str>,
    /// The caller's quota state.
    pub state: &'a Arc<QuotaState>,
}

/// One caller's buckets as a store's upkeep sees them: the caller's name, its state and its
/// limits (only limited buckets are kept).
#[derive(Debug, Clone)]
pub struct Holder {
    /// The caller's name.
    pub name: Arc<str>,
    /// The caller's quota state.
    pub state: Arc<QuotaState>,
    /// The caller's limits.
    pub quota: Quota,
}

/// Every caller's buckets in force now (read again on each use: a reload changes them).
pub type Holders<'a> = dyn Fn() -> Vec<Holder> + Send + Sync + 'a;

/// Where callers' buckets are kept.
pub trait QuotaStore: Send + Sync + std::fmt::Debug {
    /// Takes `cost` from the `kind` bucket of `owner` (limited by `rate`) at `now`.
    ///
    /// # Errors
    /// [`Refusal`]; nothing is taken.
    fn take(&self, owner: Owner<'_>, kind: Kind, rate: Rate, cost: f64, now: Instant) -> Result<(), Refusal>;

    /// What is left in the `kind` bucket of `state` (limited by `rate`) at `now`, as this
    /// replica knows it.
    fn remaining(&self, state: &QuotaState, kind: Kind, rate: Rate, now: Instant) -> f64;

    /// Where the buckets of `state` are kept now: `instance` (this process), `global` (a
    /// shared store), or while a shared store is down `replica_share`, `unlimited` or
    /// `unavailable` (the `scope` of `/usage`).
    fn scope(&self, state: &QuotaState) -> &'static str;

    /// At start-up, before the first request: what the store needs first (a shared store is
    /// reached, within a deadline).
    fn join(&self) -> BoxFuture<'_, ()>;

    /// For ever, while serving: the store's upkeep of the buckets of `holders` (ends at once
    /// when there is none to do).
    fn keep<'a>(&'a self, holders: &'a Holders<'a>) -> BoxFuture<'a, ()>;

    /// At shutdown, after the drain: what the store owes before the process ends (a shared
    /// store is given back the unspent tokens of `holders`).
    fn leave<'a>(&'a self, holders: &'a Holders<'a>) -> BoxFuture<'a, ()>;
}
