//! The local quota store (`[quota] store = "local"`): each caller's buckets in this process,
//! so quotas are per instance. Nothing to reach, keep or give back.

use futures_util::future::BoxFuture;
use tokio::time::Instant;

use super::state::QuotaState;
use super::store::{Holders, Owner, QuotaStore};
use super::types::{Kind, Rate, Refusal};

/// Buckets in this process.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalStore;

impl QuotaStore for LocalStore {
    fn take(&self, owner: Owner<'_>, kind: Kind, rate: Rate, cost: f64, now: Instant) -> Result<(), Refusal> {
        owner.state.bucket(kind).take(rate, cost, now).map(drop).map_err(Refusal::Wait)
    }

    fn remaining(&self, state: &QuotaState, kind: Kind, rate: Rate, now: Instant) -> f64 {
        state.bucket(kind).peek(rate, now)
    }

    fn scope(&self, _state: &QuotaState) -> &'static str {
        "instance"
    }

    fn join(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }

    fn keep<'a>(&'a self, _holders: &'a Holders<'a>) -> BoxFuture<'a, ()> {
        Box::pin(std::future::ready(()))
    }

    fn leave<'a>(&'a self, _holders: &'a Holders<'a>) -> BoxFuture<'a, ()> {
        Box::pin(std::future::ready(()))
    }
}
