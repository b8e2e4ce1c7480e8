//! The choice between a generator's own SIMD keystream and its crate's backend, where drbgd
//! has one of its own (`chacha20/avx2.rs`; CTR_DRBG, with two, chooses in `ctr_drbg/x86.rs`):
//! the path decides for itself by default, and tests and benchmarks force either one on any
//! CPU that can run it.
//! Process-wide; read when a generator is keyed or generates, so a change applies from then on.

use std::sync::atomic::{AtomicU8, Ordering};

/// When a generator takes its own SIMD path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Where the path's own rule says (the default; see its `chosen`).
    Auto,
    /// Never: the crate's backend everywhere.
    Never,
    /// Wherever the CPU can run it (tests of the path on any host).
    Always,
}

/// A process-wide [`Use`], [`Use::Auto`] at start.
#[derive(Debug)]
pub struct Choice(AtomicU8);

impl Default for Choice {
    fn default() -> Self {
        Choice::new()
    }
}

impl Choice {
    /// [`Use::Auto`].
    pub const fn new() -> Self {
        Choice(AtomicU8::new(Use::Auto as u8))
    }

    /// Chooses from now on.
    pub fn set(&self, choice: Use) {
        self.0.store(choice as u8, Ordering::Relaxed);
    }

    /// Whether to take the path: never where the CPU cannot (`supported` false); otherwise as
    /// chosen, `auto` deciding by default.
    pub fn take(&self, supported: bool, auto: impl FnOnce() -> bool) -> bool {
        supported
            && match self.0.load(Ordering::Relaxed) {
                x if x == Use::Auto as u8 => auto(),
                x => x == Use::Always as u8,
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_bounds_every_choice_and_auto_defers_to_the_path() {
        let choice = Choice::new();
        assert!(choice.take(true, || true) && !choice.take(true, || false), "auto asks the path");
        choice.set(Use::Always);
        assert!(choice.take(true, || false) && !choice.take(false, || true));
        choice.set(Use::Never);
        assert!(!choice.take(true, || true));
    }
}
