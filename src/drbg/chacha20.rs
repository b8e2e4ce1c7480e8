//! The `chacha20` generator: RustCrypto's zeroizing ChaCha20 (20 rounds, 64-bit counter, a
//! zero 64-bit nonce: the same keystream as rand_chacha's `ChaCha20Rng`) behind fast key
//! erasure.
//!
//! The keystream comes from the crate's cipher core (`ChaCha20LegacyCore::write_keystream_blocks`)
//! rather than its RNG: the RNG runs the 4-block AVX2 backend on every x86 CPU, the cipher core
//! runs 16 blocks at a time on AVX-512 (built with `--cfg chacha20_avx512`, which
//! `.cargo/config.toml` sets for every build of this repository) and 4 on AVX2 elsewhere. On
//! AVX2 without AVX-512, runs of eight whole blocks come from [`avx2`] instead, eight blocks per
//! step as OpenSSL does there; the crate's core keeps the block counter and writes the rest.
//! Whole blocks are written straight into the caller's buffer; a partial block's unused bytes
//! are kept (and wiped on rekey), so the keystream is one contiguous stream however it is cut
//! into calls. (The RNG dropped the rest of a partly used 4-byte word between calls, so where
//! a request ended mid-word the bytes after it differ from earlier releases: not a change of
//! the keystream, of where each byte is taken from it.)

use chacha20::ChaCha20LegacyCore;
use chacha20::cipher::array::Array;
use chacha20::cipher::consts::U64;
use chacha20::cipher::{KeyIvInit, StreamCipherCore};
use zeroize::Zeroize;

use super::algorithm_id::Algorithm;
use super::fast_key_erasure::{FastKeyErasure, KEY_LEN, KeystreamCore};

#[cfg(target_arch = "x86_64")]
pub mod avx2;

/// The `chacha20` generator.
pub type ChaCha20Drbg = FastKeyErasure<ChaChaCore>;

/// ChaCha20 block length.
const BLOCK: usize = 64;

/// ChaCha20 keystream keyed with the seed. The crate zeroizes its state on drop (`zeroize`
/// feature); the unused tail of the last block is wiped here.
///
/// # Security
/// `new` takes the key by reference into the crate's state; the callers' own key buffers are
/// wiped (`fast_key_erasure.rs`). Register spills are the residue Rust cannot reach, as in every zeroizing
/// RustCrypto type.
pub struct ChaChaCore {
    core: ChaCha20LegacyCore,
    /// The eight-block AVX2 keystream, where chosen ([`avx2::chosen`]) at keying.
    #[cfg(target_arch = "x86_64")]
    wide: Option<avx2::Keystream8>,
    /// The last block generated, of which `block[used..]` is not handed out yet.
    block: [u8; BLOCK],
    used: usize,
}

impl Drop for ChaChaCore {
    fn drop(&mut self) {
        self.block.zeroize();
    }
}

impl ChaChaCore {
    fn keyed(key: &[u8; KEY_LEN]) -> ChaCha20LegacyCore {
        ChaCha20LegacyCore::new(key.into(), &[0u8; 8].into())
    }
}

#[cfg(target_arch = "x86_64")]
impl ChaChaCore {
    fn wide(key: &[u8; KEY_LEN]) -> Option<avx2::Keystream8> {
        if avx2::chosen() { avx2::Keystream8::new(key) } else { None }
    }

    /// Writes the whole eight-block steps of `out` on the AVX2 path (if chosen), moves the
    /// crate core's counter past them, and returns the rest of `out`.
    #[inline]
    fn wide_blocks<'a>(&mut self, out: &'a mut [u8]) -> &'a mut [u8] {
        let Some(wide) = &self.wide else { return out };
        if out.len() < avx2::STEP_BYTES {
            return out;
        }
        let counter = self.core.get_block_pos();
        let written = wide.blocks(counter, out);
        self.core.set_block_pos(counter.wrapping_add(written));
        let bytes = usize::try_from(written).expect("fits: at most out.len() / 64") * BLOCK;
        &mut out[bytes..]
    }
}

impl KeystreamCore for ChaChaCore {
    const ALGORITHM: Algorithm = Algorithm::ChaCha20;
    const INSTANTIATE_CONTEXT: &'static str = "drbgd 2026-11 chacha20 instantiate";
    const RESEED_CONTEXT: &'static str = "drbgd 2026-11 chacha20 reseed";

    fn from_key(key: &[u8; KEY_LEN]) -> Self {
        ChaChaCore {
            core: Self::keyed(key),
            #[cfg(target_arch = "x86_64")]
            wide: Self::wide(key),
            block: [0; BLOCK],
            used: BLOCK,
        }
    }

    fn rekey(&mut self, key: &[u8; KEY_LEN]) {
        self.core = Self::keyed(key);
        #[cfg(target_arch = "x86_64")]
        {
            self.wide = Self::wide(key);
        }
        self.block.zeroize();
        self.used = BLOCK;
    }

    #[inline]
    fn keystream(&mut self, out: &mut [u8]) {
        // What is left of the last block first.
        let take = out.len().min(BLOCK - self.used);
        let (head, out) = out.split_at_mut(take);
        head.copy_from_slice(&self.block[self.used..self.used + take]);
        self.block[self.used..self.used + take].zeroize();
        self.used += take;
        // Whole blocks straight into `out`: runs of eight on the AVX2 path first.
        #[cfg(target_arch = "x86_64")]
        let out = self.wide_blocks(out);
        let (blocks, tail) = Array::<u8, U64>::slice_as_chunks_mut(out);
        self.core.write_keystream_blocks(blocks);
        // A partial block: generate one, keep the rest.
        if !tail.is_empty() {
            let block: &mut Array<u8, U64> = (&mut self.block).into();
            self.core.write_keystream_block(block);
            tail.copy_from_slice(&self.block[..tail.len()]);
            self.block[..tail.len()].zeroize();
            self.used = tail.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand_core::{Rng, SeedableRng};

    proptest! {
        /// However the calls cut it (empty calls, a few bytes, exact and odd block multiples,
        /// across a leftover), the keystream is the one contiguous stream: rand_chacha's
        /// `ChaCha20Rng` filled in one call (the 16-block AVX-512 backend runs where the CPU
        /// has it, the 4-block AVX2 one elsewhere).
        ///
        /// Both ways of writing whole blocks are forced in turn: the crate's core alone, and
        /// the eight-block AVX2 steps with the core for the rest (where the CPU has AVX2).
        #[test]
        fn any_split_gives_the_contiguous_stream(
            key in any::<[u8; 32]>(),
            cuts in proptest::collection::vec(0usize..2100, 1..24),
            wide in any::<bool>(),
        ) {
            let total: usize = cuts.iter().sum();
            let mut reference = vec![0u8; total];
            chacha20::ChaCha20Rng::from_seed(key).fill_bytes(&mut reference);
            let mut core = ChaChaCore::from_key(&key);
            #[cfg(target_arch = "x86_64")]
            {
                core.wide = if wide { avx2::Keystream8::new(&key) } else { None };
            }
            let mut ours = Vec::with_capacity(total);
            for cut in cuts {
                let mut piece = vec![0u8; cut];
                core.keystream(&mut piece);
                ours.extend_from_slice(&piece);
            }
            prop_assert_eq!(ours, reference);
        }
    }
}
