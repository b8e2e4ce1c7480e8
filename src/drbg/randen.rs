//! The `randen` generator: Google's Randen (seed 002), a sponge over a 16-branch generalized
//! Feistel permutation whose round function is two AES rounds (`aes::hazmat::cipher_round`,
//! AES-NI where available). Fast and backtracking-resistant, but not a NIST design.
//!
//! [`RandenCore`] is Abseil's engine exactly (checked against its goldens). drbgd's generator
//! adds what a service needs: seeding through BLAKE3 from entropy, nonce and personalization,
//! and wiping every byte it hands out, so a captured state holds no past output.

use std::fmt;

use aes::Block;
use aes::hazmat::{Block8, cipher_round_par};
use zeroize::Zeroize;

use super::randen_keys::ROUND_KEYS;
use super::{Algorithm, Drbg, ReseedRequired};

/// State bytes: 16 blocks of 16.
pub const STATE_LEN: usize = 256;
/// The capacity (inner) part: block 0, never output.
pub const CAPACITY: usize = 16;
const ROUNDS: usize = 17;
/// The Feistel block shuffle: new[i] = old[SHUFFLE[i]].
const SHUFFLE: [usize; 16] = [7, 2, 13, 4, 11, 8, 3, 6, 15, 0, 9, 10, 1, 14, 5, 12];
/// BLAKE3 contexts for the 240-byte absorb inputs.
const INSTANTIATE_CONTEXT: &str = "drbgd 2026-11 randen instantiate";
const RESEED_CONTEXT: &str = "drbgd 2026-11 randen reseed";

/// Abseil's Randen engine: the 256-byte state and the read position within it.
#[derive(Clone)]
pub struct RandenCore {
    state: [u8; STATE_LEN],
    next: usize,
}

impl Drop for RandenCore {
    fn drop(&mut self) {
        self.state.zeroize();
    }
}

impl RandenCore {
    /// An engine whose state is `state`, with the output buffer marked exhausted.
    pub fn from_state(state: [u8; STATE_LEN]) -> Self {
        RandenCore { state, next: STATE_LEN }
    }

    /// The engine at a given state and read position (bytes), as Abseil deserializes it.
    pub fn from_state_at(state: [u8; STATE_LEN], next: usize) -> Self {
        RandenCore { state, next: next.clamp(CAPACITY, STATE_LEN) }
    }

    /// The current state (tests).
    pub fn state(&self) -> &[u8; STATE_LEN] {
        &self.state
    }

    /// Generate: permute the whole state and feed the previous capacity block forward.
    pub fn generate(&mut self) {
        let mut prev = [0u8; CAPACITY];
        prev.copy_from_slice(&self.state[..CAPACITY]);
        permute(&mut self.state);
        for (s, p) in self.state[..CAPACITY].iter_mut().zip(prev) {
            *s ^= p;
        }
        prev.zeroize();
    }

    /// Absorb: XOR 240 bytes into the rate part (the capacity is untouched).
    pub fn absorb(&mut self, seed: &[u8; STATE_LEN - CAPACITY]) {
        for (s, x) in self.state[CAPACITY..].iter_mut().zip(seed) {
            *s ^= x;
        }
    }

    /// The engine's next `N` output bytes (Abseil's little-endian u32/u64 sequence), without
    /// wiping them: the golden-vector behaviour.
    pub fn next_bytes<const N: usize>(&mut self) -> [u8; N] {
        if self.next + N > STATE_LEN {
            self.generate();
            self.next = CAPACITY;
        }
        let mut out = [0u8; N];
        out.copy_from_slice(&self.state[self.next..self.next + N]);
        self.next += N;
        out
    }

    /// Fills `out` from the rate part, wiping each byte handed out; a fresh Generate follows
    /// whenever the rate is used up.
    pub fn fill_wiping(&mut self, out: &mut [u8]) {
        let mut done = 0;
        while done < out.len() {
            if self.next == STATE_LEN {
                self.generate();
                self.next = CAPACITY;
            }
            let take = (STATE_LEN - self.next).min(out.len() - done);
            let src = &mut self.state[self.next..self.next + take];
            out[done..done + take].copy_from_slice(src);
            src.zeroize();
            self.next += take;
            done += take;
        }
    }
}

/// The Randen permutation: 17 rounds of eight 2-round AES Feistel functions and a block
/// shuffle. The eight functions of a round are independent, so each AES round runs on all
/// eight at once (`cipher_round_par`: one AES-NI pipeline fill instead of eight).
fn permute(state: &mut [u8; STATE_LEN]) {
    let mut blocks = [Block::default(); 16];
    for (b, chunk) in blocks.iter_mut().zip(state.chunks_exact(16)) {
        b.copy_from_slice(chunk);
    }
    let mut even = Block8::default();
    let mut keys = Block8::default();
    let mut odd = Block8::default();
    for round in 0..ROUNDS {
        for j in 0..8 {
            even[j] = blocks[2 * j];
            odd[j] = blocks[2 * j + 1];
            let at = 16 * (8 * round + j);
            keys[j].copy_from_slice(&ROUND_KEYS[at..at + 16]);
        }
        cipher_round_par(&mut even, &keys);
        cipher_round_par(&mut even, &odd);
        for j in 0..8 {
            blocks[2 * j + 1] = even[j];
        }
        let old = blocks;
        for (i, &from) in SHUFFLE.iter().enumerate() {
            blocks[i] = old[from];
        }
    }
    for (chunk, b) in state.chunks_exact_mut(16).zip(blocks.iter_mut()) {
        chunk.copy_from_slice(b);
        b.zeroize();
    }
    for b in even.iter_mut().chain(odd.iter_mut()) {
        b.zeroize();
    }
}

fn derive_seed(context: &str, inputs: &[&[u8]]) -> [u8; STATE_LEN - CAPACITY] {
    let mut hasher = blake3::Hasher::new_derive_key(context);
    for input in inputs {
        hasher.update(&(input.len() as u64).to_le_bytes());
        hasher.update(input);
    }
    let mut seed = [0u8; STATE_LEN - CAPACITY];
    hasher.finalize_xof().fill(&mut seed);
    hasher.zeroize();
    seed
}

/// The `randen` generator.
pub struct RandenDrbg(RandenCore);

impl fmt::Debug for RandenDrbg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("randen").finish_non_exhaustive()
    }
}

impl Drbg for RandenDrbg {
    const ALGORITHM: Algorithm = Algorithm::Randen;
    /// 256 bits.
    const ENTROPY_LEN: usize = 32;
    /// 128 bits.
    const NONCE_LEN: usize = 16;

    fn instantiate(entropy: &[u8], nonce: &[u8], personalization: &[u8]) -> Self {
        let mut seed = derive_seed(INSTANTIATE_CONTEXT, &[entropy, nonce, personalization]);
        let mut core = RandenCore::from_state([0u8; STATE_LEN]);
        core.absorb(&seed);
        seed.zeroize();
        RandenDrbg(core)
    }

    /// Absorbs the derived seed into the rate and runs Generate, so the new state depends on
    /// both the old one and the entropy.
    fn reseed(&mut self, entropy: &[u8], additional: &[u8]) {
        let mut seed = derive_seed(RESEED_CONTEXT, &[entropy, additional]);
        self.0.absorb(&seed);
        self.0.generate();
        self.0.next = CAPACITY;
        seed.zeroize();
    }

    /// Backtracking resistance: handed-out bytes are wiped from the state, and each Generate's
    /// feed-forward of the capacity block makes earlier states unrecoverable without guessing
    /// 128 secret bits.
    fn generate(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), ReseedRequired> {
        if !additional.is_empty() {
            self.reseed(&[], additional);
        }
        self.0.fill_wiping(out);
        Ok(())
    }
}

impl rand_core::TryRng for RandenDrbg {
    type Error = core::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        let mut b = [0u8; 4];
        self.0.fill_wiping(&mut b);
        Ok(u32::from_le_bytes(b))
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        let mut b = [0u8; 8];
        self.0.fill_wiping(&mut b);
        Ok(u64::from_le_bytes(b))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        self.0.fill_wiping(dst);
        Ok(())
    }
}

impl rand_core::TryCryptoRng for RandenDrbg {}
