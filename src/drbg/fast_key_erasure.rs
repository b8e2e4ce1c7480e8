//! Fast key erasure over a keystream core (the arc4random / Bernstein construction), shared by
//! the ChaCha20 and BLAKE3 generators.
//!
//! Small requests are served from a buffer of keystream. The moment the buffer is refilled,
//! its first [`KEY_LEN`] bytes become the core's next key and are wiped, and every byte handed
//! out is wiped from the buffer as it leaves. Requests larger than the buffer are written
//! straight into the caller's memory (no copy) and followed by a rekey from fresh keystream.
//! Either way, once a call returns, the state holds no key that produced, and no copy of,
//! any byte already returned: a state captured later reveals no earlier output (backtracking
//! resistance, as in Google's Randen).

use std::fmt;

use zeroize::Zeroize;

use super::algorithm_id::Algorithm;
use super::generator::{Drbg, ReseedRequired};

/// Key length of every keystream core, in bytes.
pub const KEY_LEN: usize = 32;

/// Buffered keystream per refill: 1 KiB (arc4random uses 16 ChaCha blocks). A 32-byte token
/// costs a copy plus 1/32 of a refill; larger buffers only add state to wipe.
pub const BUF_LEN: usize = 1024;

/// A stream of pseudorandom bytes under a 32-byte key.
pub trait KeystreamCore: Send + 'static {
    /// The algorithm this core implements.
    const ALGORITHM: Algorithm;
    /// BLAKE3 `derive_key` context for instantiation keys (generator-specific).
    const INSTANTIATE_CONTEXT: &'static str;
    /// BLAKE3 `derive_key` context for reseed keys.
    const RESEED_CONTEXT: &'static str;
    /// A core keyed with `key`.
    fn from_key(key: &[u8; KEY_LEN]) -> Self;
    /// Replaces the key (and wipes the previous key and any buffered keystream).
    fn rekey(&mut self, key: &[u8; KEY_LEN]);
    /// Writes the next `out.len()` keystream bytes.
    fn keystream(&mut self, out: &mut [u8]);
}

/// A keystream core behind a fast-key-erasure buffer.
pub struct FastKeyErasure<C> {
    core: C,
    buf: [u8; BUF_LEN],
    /// Bytes of `buf` already consumed (wiped); `BUF_LEN` means empty.
    pos: usize,
}

impl<C: KeystreamCore> fmt::Debug for FastKeyErasure<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(C::ALGORITHM.name()).field("buffered", &(BUF_LEN - self.pos)).finish_non_exhaustive()
    }
}

impl<C> Drop for FastKeyErasure<C> {
    fn drop(&mut self) {
        self.buf.zeroize();
    }
}

impl<C: KeystreamCore> FastKeyErasure<C> {
    /// A generator whose first key is `key`.
    pub fn new(key: &[u8; KEY_LEN]) -> Self {
        FastKeyErasure { core: C::from_key(key), buf: [0u8; BUF_LEN], pos: BUF_LEN }
    }

    /// Fills `out` and leaves the state with no trace of it.
    pub fn fill(&mut self, out: &mut [u8]) {
        let avail = BUF_LEN - self.pos;
        if out.len() <= avail {
            self.take(out);
            return;
        }
        let (head, rest) = out.split_at_mut(avail);
        self.take(head);
        if rest.len() > BUF_LEN - KEY_LEN {
            // More than one refill would hold: straight into the caller's memory.
            self.core.keystream(rest);
            self.rekey_from_keystream();
        } else {
            self.refill();
            self.take(rest);
        }
    }

    /// Draws `KEY_LEN` bytes that are never output and makes them the new key. Also empties
    /// the buffer, so the next output depends on the new key only.
    pub fn rekey_from_keystream(&mut self) {
        let mut key = [0u8; KEY_LEN];
        self.core.keystream(&mut key);
        self.core.rekey(&key);
        key.zeroize();
        self.buf[self.pos..].zeroize();
        self.pos = BUF_LEN;
    }

    /// Replaces the key with `key` (reseed) and drops buffered keystream.
    pub fn rekey(&mut self, key: &[u8; KEY_LEN]) {
        self.core.rekey(key);
        self.buf[self.pos..].zeroize();
        self.pos = BUF_LEN;
    }

    /// Copies buffered keystream to `out`, wiping what it copied.
    #[inline]
    fn take(&mut self, out: &mut [u8]) {
        let end = self.pos + out.len();
        let src = &mut self.buf[self.pos..end];
        out.copy_from_slice(src);
        src.zeroize();
        self.pos = end;
    }

    #[cold]
    fn refill(&mut self) {
        self.core.keystream(&mut self.buf);
        let mut key = [0u8; KEY_LEN];
        key.copy_from_slice(&self.buf[..KEY_LEN]);
        self.core.rekey(&key);
        key.zeroize();
        self.buf[..KEY_LEN].zeroize();
        self.pos = KEY_LEN;
    }
}

/// Key derivation for the keystream generators: BLAKE3 `derive_key` under `context` over the
/// length-prefixed inputs, so `("ab", "c")` and `("a", "bc")` never give the same key.
pub fn derive_key(context: &str, inputs: &[&[u8]]) -> [u8; KEY_LEN] {
    let mut hasher = blake3::Hasher::new_derive_key(context);
    for input in inputs {
        hasher.update(&(input.len() as u64).to_le_bytes());
        hasher.update(input);
    }
    let mut hash = hasher.finalize();
    let key = *hash.as_bytes();
    hash.zeroize();
    hasher.zeroize();
    key
}

impl<C: KeystreamCore> Drbg for FastKeyErasure<C> {
    const ALGORITHM: Algorithm = C::ALGORITHM;
    /// 256 bits: the key size.
    const ENTROPY_LEN: usize = KEY_LEN;
    /// 128 bits, as for CTR_DRBG (SP 800-90A 8.6.7: half the security strength).
    const NONCE_LEN: usize = 16;

    fn instantiate(entropy: &[u8], nonce: &[u8], personalization: &[u8]) -> Self {
        let mut key = derive_key(C::INSTANTIATE_CONTEXT, &[entropy, nonce, personalization]);
        let drbg = FastKeyErasure::new(&key);
        key.zeroize();
        drbg
    }

    /// The new key is derived from 32 bytes of current keystream (never output), the entropy
    /// input and the additional input.
    fn reseed(&mut self, entropy: &[u8], additional: &[u8]) {
        let mut old = [0u8; KEY_LEN];
        self.fill(&mut old);
        let mut key = derive_key(C::RESEED_CONTEXT, &[&old, entropy, additional]);
        self.rekey(&key);
        key.zeroize();
        old.zeroize();
    }

    /// Additional input, when given, is mixed in by a reseed without entropy first.
    fn generate(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), ReseedRequired> {
        if !additional.is_empty() {
            self.reseed(&[], additional);
        }
        self.fill(out);
        Ok(())
    }
}

impl<C: KeystreamCore> rand_core::TryRng for FastKeyErasure<C> {
    type Error = core::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        let mut b = [0u8; 4];
        self.fill(&mut b);
        Ok(u32::from_le_bytes(b))
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        let mut b = [0u8; 8];
        self.fill(&mut b);
        Ok(u64::from_le_bytes(b))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        self.fill(dst);
        Ok(())
    }
}

impl<C: KeystreamCore> rand_core::TryCryptoRng for FastKeyErasure<C> {}

/// `from_seed` uses the seed as the first key, unchanged (tests against reference keystreams
/// and the CLI's documented `--seed`).
impl<C: KeystreamCore> rand_core::SeedableRng for FastKeyErasure<C> {
    type Seed = [u8; KEY_LEN];

    fn from_seed(seed: Self::Seed) -> Self {
        FastKeyErasure::new(&seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drbg::chacha20::ChaCha20Drbg;

    #[test]
    fn every_request_size_around_the_buffer_works() {
        let mut drbg = ChaCha20Drbg::new(&[1u8; KEY_LEN]);
        let mut seen = std::collections::HashSet::new();
        for len in (0..=2 * BUF_LEN + 40).chain([BUF_LEN - KEY_LEN, BUF_LEN - KEY_LEN + 1, 70_000]) {
            let mut out = vec![0u8; len];
            drbg.fill(&mut out);
            if len >= 16 {
                assert!(seen.insert(out[..16].to_vec()), "repeated output at len {len}");
            }
        }
    }
}
