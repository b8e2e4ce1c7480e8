//! The `chacha20` generator: RustCrypto's zeroizing ChaCha20 RNG (20 rounds, 64-bit counter,
//! stream 0: the same keystream as rand_chacha's `ChaCha20Rng`) behind fast key erasure.

use chacha20::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};

use super::Algorithm;
use super::fke::{FastKeyErasure, KEY_LEN, KeystreamCore};

/// The `chacha20` generator.
pub type ChaCha20Drbg = FastKeyErasure<ChaChaCore>;

/// ChaCha20 keystream: `chacha20::ChaCha20Rng` keyed with the seed. The crate zeroizes it on
/// drop (`zeroize` feature), and every rekey drops the previous one.
///
/// # Security
/// `from_seed` takes the key by value: the copy made for that call lives in the callee's
/// frame (or registers) and cannot be wiped from here. The callers' own key buffers are
/// wiped (`fke.rs`); such argument copies and register spills are the residue Rust cannot
/// reach, as in every zeroizing RustCrypto type.
pub struct ChaChaCore(ChaCha20Rng);

impl KeystreamCore for ChaChaCore {
    const ALGORITHM: Algorithm = Algorithm::ChaCha20;
    const INSTANTIATE_CONTEXT: &'static str = "drbgd 2026-11 chacha20 instantiate";
    const RESEED_CONTEXT: &'static str = "drbgd 2026-11 chacha20 reseed";

    fn from_key(key: &[u8; KEY_LEN]) -> Self {
        ChaChaCore(ChaCha20Rng::from_seed(*key))
    }

    fn rekey(&mut self, key: &[u8; KEY_LEN]) {
        self.0 = ChaCha20Rng::from_seed(*key);
    }

    #[inline]
    fn keystream(&mut self, out: &mut [u8]) {
        self.0.fill_bytes(out);
    }
}
