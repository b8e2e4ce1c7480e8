//! Test-only: SP 800-90A mechanisms with a fault in their state update, to show that the
//! start-up self-tests catch it and name the tests that did. No switch in the production code:
//! the fault is a wrapper around the mechanism, built only in tests, flipping one bit of V
//! after every Generate through a `#[cfg(test)]` method of the mechanism.

use super::{Report, sp800_90a, vectors};
use crate::drbg::ctr_drbg::{Aes128CtrDrbg, Aes192CtrDrbg, Aes256CtrDrbg, CtrDrbg};
use crate::drbg::hash_drbg::{HashDrbg, HashSha256Drbg, HashSha512Drbg};
use crate::drbg::hmac_drbg::{HmacDrbg, HmacSha256Drbg, HmacSha512Drbg};
use crate::drbg::{Algorithm, ApprovedDrbg, Drbg, ReseedRequired};

/// A mechanism whose working state can be hit by a one-bit fault.
pub(crate) trait FlipV {
    /// Flips one bit of V.
    fn flip(&mut self);
}

impl<C> FlipV for CtrDrbg<C> {
    fn flip(&mut self) {
        self.flip_v_bit();
    }
}

impl<D> FlipV for HashDrbg<D> {
    fn flip(&mut self) {
        self.flip_v_bit();
    }
}

impl<D: hmac::EagerHash> FlipV for HmacDrbg<D> {
    fn flip(&mut self) {
        self.flip_v_bit();
    }
}

/// `G` with one bit of V flipped after every Generate that ran (and so updated the state).
#[derive(Debug)]
pub(crate) struct Mutant<G>(G);

impl<G: ApprovedDrbg + FlipV> Drbg for Mutant<G> {
    const ALGORITHM: Algorithm = G::ALGORITHM;
    const ENTROPY_LEN: usize = G::ENTROPY_LEN;
    const NONCE_LEN: usize = G::NONCE_LEN;

    fn instantiate(entropy: &[u8], nonce: &[u8], personalization: &[u8]) -> Self {
        Mutant(G::instantiate(entropy, nonce, personalization))
    }

    fn reseed(&mut self, entropy: &[u8], additional: &[u8]) {
        self.0.reseed(entropy, additional);
    }

    fn generate(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), ReseedRequired> {
        let generated = self.0.generate(out, additional);
        if generated.is_ok() {
            self.0.flip();
        }
        generated
    }
}

impl<G: ApprovedDrbg + FlipV> ApprovedDrbg for Mutant<G> {
    fn set_reseed_interval(&mut self, requests: u64) {
        self.0.set_reseed_interval(requests);
    }

    fn uninstantiate(&mut self) {
        self.0.uninstantiate();
    }

    fn is_zeroized(&self) -> bool {
        self.0.is_zeroized()
    }
}

/// The SP 800-90A self-tests of `alg`'s mechanism with the fault.
///
/// # Panics
/// If `alg` is not an SP 800-90A mechanism.
pub(crate) fn mutated(alg: Algorithm) -> Report {
    let outcomes = match alg {
        Algorithm::Aes128Ctr => sp800_90a::run::<Mutant<Aes128CtrDrbg>>(&vectors::AES128),
        Algorithm::Aes192Ctr => sp800_90a::run::<Mutant<Aes192CtrDrbg>>(&vectors::AES192),
        Algorithm::Aes256Ctr => sp800_90a::run::<Mutant<Aes256CtrDrbg>>(&vectors::AES256),
        Algorithm::HashSha256 => sp800_90a::run::<Mutant<HashSha256Drbg>>(&vectors::HASH_SHA256),
        Algorithm::HashSha512 => sp800_90a::run::<Mutant<HashSha512Drbg>>(&vectors::HASH_SHA512),
        Algorithm::HmacSha256 => sp800_90a::run::<Mutant<HmacSha256Drbg>>(&vectors::HMAC_SHA256),
        Algorithm::HmacSha512 => sp800_90a::run::<Mutant<HmacSha512Drbg>>(&vectors::HMAC_SHA512),
        other => panic!("{other} is not an SP 800-90A mechanism"),
    };
    Report { alg, outcomes }
}

/// `G` whose Uninstantiate and reseed interval do nothing: the faults the tests of those two
/// must catch.
#[derive(Debug)]
pub(crate) struct Careless<G>(G);

impl<G: ApprovedDrbg> Drbg for Careless<G> {
    const ALGORITHM: Algorithm = G::ALGORITHM;
    const ENTROPY_LEN: usize = G::ENTROPY_LEN;
    const NONCE_LEN: usize = G::NONCE_LEN;

    fn instantiate(entropy: &[u8], nonce: &[u8], personalization: &[u8]) -> Self {
        Careless(G::instantiate(entropy, nonce, personalization))
    }

    fn reseed(&mut self, entropy: &[u8], additional: &[u8]) {
        self.0.reseed(entropy, additional);
    }

    fn generate(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), ReseedRequired> {
        self.0.generate(out, additional)
    }
}

impl<G: ApprovedDrbg> ApprovedDrbg for Careless<G> {
    fn set_reseed_interval(&mut self, _: u64) {}

    fn uninstantiate(&mut self) {}

    fn is_zeroized(&self) -> bool {
        self.0.is_zeroized()
    }
}

/// `G` whose reseed brings an uninstantiated instance back (instantiating it afresh from the
/// reseed's entropy input): the fault the uninstantiate test's reseed must catch.
#[derive(Debug)]
pub(crate) struct Revived<G>(G);

impl<G: ApprovedDrbg> Drbg for Revived<G> {
    const ALGORITHM: Algorithm = G::ALGORITHM;
    const ENTROPY_LEN: usize = G::ENTROPY_LEN;
    const NONCE_LEN: usize = G::NONCE_LEN;

    fn instantiate(entropy: &[u8], nonce: &[u8], personalization: &[u8]) -> Self {
        Revived(G::instantiate(entropy, nonce, personalization))
    }

    fn reseed(&mut self, entropy: &[u8], additional: &[u8]) {
        if self.0.is_zeroized() {
            self.0 = G::instantiate(entropy, &[0u8; 16][..G::NONCE_LEN], additional);
        } else {
            self.0.reseed(entropy, additional);
        }
    }

    fn generate(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), ReseedRequired> {
        self.0.generate(out, additional)
    }
}

impl<G: ApprovedDrbg> ApprovedDrbg for Revived<G> {
    fn set_reseed_interval(&mut self, requests: u64) {
        self.0.set_reseed_interval(requests);
    }

    fn uninstantiate(&mut self) {
        self.0.uninstantiate();
    }

    fn is_zeroized(&self) -> bool {
        self.0.is_zeroized()
    }
}
