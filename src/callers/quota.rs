//! Per-caller quotas: two token buckets (requests and raw random bytes) and a cap on requests
//! in progress, kept by a quota store. Each file names only those below it in this list:
//!
//! - [`types`]: the plain data every other file shares ([`Kind`], [`Rate`], [`Quota`],
//!   [`Refusal`]).
//! - [`bucket`]: a token bucket in this process.
//! - [`lease`]: a replica's lease on a bucket in a shared store (the decisions alone).
//! - [`state`]: a caller's buckets, leases and requests in progress, kept across reloads.
//! - [`store`]: the [`QuotaStore`] interface.
//! - [`local`], [`redis_store`]: its two implementations, `[quota] store = "local"` and
//!   `"redis"`.
//!
//! This file re-exports what the rest of the crate uses, and nothing below names it.

pub mod bucket;
pub mod lease;
pub mod local;
pub mod redis_store;
pub mod state;
pub mod store;
pub mod types;

pub use bucket::Bucket;
pub use local::LocalStore;
pub use redis_store::RedisStore;
pub use state::{InFlight, QuotaState};
pub use store::{Holder, Owner, QuotaStore};
pub use types::{Kind, Quota, Rate, Refusal, Wait, seconds_to_full};
