//! Start-up self-tests: what runs for each algorithm before it may serve, and their report.
//!
//! Every algorithm gets the tests of its row of the table ([`AlgorithmInfo::self_tests`], each
//! defined in `suites`) and a seeded round trip of the full mechanism. For the SP 800-90A mechanisms
//! (CTR_DRBG, Hash_DRBG, HMAC_DRBG) those are the known-answer tests FIPS 140-3 IG 10.3.A asks
//! of a DRBG and the health tests of SP 800-90A 11.3, on one CAVP record per family
//! (`sp800_90a`): instantiate and generate, reseed, prediction resistance, uninstantiate, and
//! the error paths (the reseed counter limit, generate before instantiate); CTR_DRBG adds its
//! keystream paths. The other generators get a known answer of their primitive (`primitives`).
//!
//! [`run`] reports every test by name; the app withholds an algorithm with a failed test and
//! stays unready (`app.rs`), and the command line refuses to generate from one.
//!
//! [`AlgorithmInfo::self_tests`]: super::AlgorithmInfo::self_tests

pub(super) mod outcome;
mod primitives;
mod sp800_90a;
pub(super) mod suites;
mod vectors;

#[cfg(test)]
pub(crate) mod mutation;

pub use outcome::Outcome;

use super::algorithm::WithMechanism;
use super::algorithm_id::Algorithm;
use super::generator::Drbg;

/// A failed self-test.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{alg} self-test failed: {what}")]
pub struct SelfTestError {
    /// The algorithm that failed.
    pub alg: Algorithm,
    /// Which test failed.
    pub what: &'static str,
}

/// One algorithm's self-tests, in the order they ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The algorithm tested.
    pub alg: Algorithm,
    /// Every test's result.
    pub outcomes: Vec<Outcome>,
}

impl Report {
    /// Whether every test passed.
    pub fn passed(&self) -> bool {
        self.outcomes.iter().all(|o| o.passed)
    }

    /// The tests that failed.
    pub fn failures(&self) -> Vec<SelfTestError> {
        let failed = self.outcomes.iter().filter(|o| !o.passed);
        failed.map(|o| SelfTestError { alg: self.alg, what: o.name }).collect()
    }

    /// `Ok` if every test passed.
    ///
    /// # Errors
    /// The first test that failed.
    pub fn check(&self) -> Result<(), SelfTestError> {
        self.failures().into_iter().next().map_or(Ok(()), Err)
    }
}

/// Runs one algorithm's self-tests, every one of them whatever the others gave.
pub fn run(alg: Algorithm) -> Report {
    let mut outcomes = (alg.info().self_tests)();
    outcomes.push(Outcome::of("seeded round trip", alg.with_mechanism(RoundTrip)));
    Report { alg, outcomes }
}

/// Runs every algorithm's self-tests.
///
/// # Errors
/// The first failure.
pub fn run_all() -> Result<(), SelfTestError> {
    Algorithm::ALL.into_iter().try_for_each(|alg| run(alg).check())
}

/// The seeded round trip, for any mechanism.
struct RoundTrip;

impl WithMechanism for RoundTrip {
    type Output = bool;

    fn run<G: Drbg>(self) -> bool {
        round_trip::<G>()
    }
}

/// Same seed → same output; another seed → other output; never all zero.
fn round_trip<G: Drbg>() -> bool {
    let mut a = G::instantiate(&[1u8; 48][..G::ENTROPY_LEN], &[2u8; 16][..G::NONCE_LEN], b"selftest");
    let mut b = G::instantiate(&[1u8; 48][..G::ENTROPY_LEN], &[2u8; 16][..G::NONCE_LEN], b"selftest");
    let mut c = G::instantiate(&[3u8; 48][..G::ENTROPY_LEN], &[2u8; 16][..G::NONCE_LEN], b"selftest");
    let (mut x, mut y, mut z) = ([0u8; 64], [0u8; 64], [0u8; 64]);
    let ok =
        a.generate(&mut x, &[]).is_ok() && b.generate(&mut y, &[]).is_ok() && c.generate(&mut z, &[]).is_ok();
    ok && x == y && x != z && x != [0u8; 64]
}

#[cfg(test)]
mod tests;
