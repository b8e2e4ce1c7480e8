//! The service handle's data: what every transport holds and what an output stream
//! ([`super::output::Chunks`]) keeps to go on generating. Its methods are in `service.rs`; this
//! file names only what the handle holds.

use std::sync::Arc;

use super::budget::StreamBudget;
use super::buffers::Buffers;
use super::request::Rules;
use crate::drbg::Pool;
use crate::metrics::Metrics;

/// The service handle: clone-cheap, shared by every transport.
#[derive(Clone)]
pub struct Service(pub(super) Arc<Inner>);

pub(super) struct Inner {
    pub(super) pool: Arc<Pool>,
    /// Recycled chunk buffers of streamed output.
    pub(super) buffers: Arc<Buffers>,
    /// The stream budget their chunks are generated under.
    pub(super) budget: StreamBudget,
    pub(super) metrics: Arc<Metrics>,
    pub(super) rules: Rules,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").field("rules", &self.0.rules).finish_non_exhaustive()
    }
}
