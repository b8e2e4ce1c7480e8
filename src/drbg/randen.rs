//! The `randen` generator: Google's Randen, a sponge over a 16-branch generalized
//! Feistel permutation whose round function is two AES rounds. Fast and backtracking-resistant,
//! but not a NIST design. On x86-64 with AES-NI the permutation runs with the whole state in
//! vector registers ([`aesni`]); elsewhere through the `aes` crate's round function
//! (`aes::hazmat::cipher_round_par`, which uses ARMv8 or AES-NI instructions when present).
//!
//! [`RandenCore`] is Abseil's engine exactly (checked against its goldens). drbgd's generator
//! adds what a service needs: seeding through BLAKE3 from entropy, nonce and personalization,
//! and wiping every byte it hands out, so a captured state holds no past output.

use std::fmt;

use aes::cipher::array::Array;
use aes::hazmat::{Block8, cipher_round_par};
use zeroize::Zeroize;

use super::algorithm_id::Algorithm;
use super::generator::{Drbg, ReseedRequired};
use super::randen_keys::{ROUND_KEYS, ROUNDS, SHUFFLE};

#[cfg(target_arch = "x86_64")]
mod aesni;

/// State bytes: 16 blocks of 16.
pub const STATE_LEN: usize = 256;
/// The capacity (inner) part: block 0, never output.
pub const CAPACITY: usize = 16;
/// BLAKE3 contexts for the 240-byte absorb inputs.
const INSTANTIATE_CONTEXT: &str = "drbgd 2026-11 randen instantiate";
const RESEED_CONTEXT: &str = "drbgd 2026-11 randen reseed";

/// Abseil's Randen engine: the 256-byte state (sixteen little-endian 128-bit blocks, so
/// wiping a block is one store) and the read position within it in bytes.
#[derive(Clone)]
pub struct RandenCore {
    state: [u128; 16],
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
        let mut blocks = [0u128; 16];
        for (b, chunk) in blocks.iter_mut().zip(state.chunks_exact(16)) {
            *b = le_word(chunk);
        }
        RandenCore { state: blocks, next: STATE_LEN }
    }

    /// The engine at a given state and read position (bytes), as Abseil deserializes it.
    pub fn from_state_at(state: [u8; STATE_LEN], next: usize) -> Self {
        RandenCore { next: next.clamp(CAPACITY, STATE_LEN), ..Self::from_state(state) }
    }

    /// A copy of the current state as bytes (tests).
    pub fn state(&self) -> [u8; STATE_LEN] {
        let mut out = [0u8; STATE_LEN];
        for (chunk, b) in out.chunks_exact_mut(16).zip(&self.state) {
            chunk.copy_from_slice(&b.to_le_bytes());
        }
        out
    }

    /// Generate: permute the whole state and feed the previous capacity block forward.
    pub fn generate(&mut self) {
        let prev = self.state[0];
        permute(&mut self.state);
        self.state[0] ^= prev;
    }

    /// Absorb: XOR 240 bytes into the rate part (the capacity is untouched).
    pub fn absorb(&mut self, seed: &[u8; STATE_LEN - CAPACITY]) {
        for (s, x) in self.state[1..].iter_mut().zip(seed.chunks_exact(16)) {
            *s ^= le_word(x);
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
        self.copy_out(&mut out);
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
            let first = self.next / 16;
            let take = (STATE_LEN - self.next).min(out.len() - done);
            self.copy_out(&mut out[done..done + take]);
            let last = self.next / 16;
            // Whole blocks handed out are wiped with one store each; a partly read block has
            // its read bytes cleared and is wiped when its last byte goes.
            self.state[first..last].zeroize();
            if !self.next.is_multiple_of(16) {
                self.state[last] &= u128::MAX << (8 * (self.next % 16));
            }
            done += take;
        }
    }

    /// Copies the next `out.len()` bytes (at most to the end of the state) and advances:
    /// the rest of a partly read block, whole blocks, then the start of one more.
    fn copy_out(&mut self, out: &mut [u8]) {
        let offset = self.next % 16;
        let head = if offset == 0 { 0 } else { (16 - offset).min(out.len()) };
        let (head_out, rest) = out.split_at_mut(head);
        if head > 0 {
            head_out.copy_from_slice(&self.state[self.next / 16].to_le_bytes()[offset..offset + head]);
            self.next += head;
        }
        let whole = rest.len() / 16;
        let mut chunks = rest.chunks_exact_mut(16);
        for (chunk, block) in (&mut chunks).zip(&self.state[self.next / 16..]) {
            chunk.copy_from_slice(&block.to_le_bytes());
        }
        self.next += 16 * whole;
        let tail = chunks.into_remainder();
        if !tail.is_empty() {
            tail.copy_from_slice(&self.state[self.next / 16].to_le_bytes()[..tail.len()]);
            self.next += tail.len();
        }
    }
}

/// A 16-byte chunk as the little-endian word the state holds.
fn le_word(chunk: &[u8]) -> u128 {
    u128::from_le_bytes(chunk.try_into().expect("16-byte chunk"))
}

/// Eight AES blocks: one half of the Feistel state. Zeroized with a single volatile store.
#[derive(Clone, Copy, Default)]
struct Lanes(Block8);

impl zeroize::DefaultIsZeroes for Lanes {}

/// The round keys as eight-block lanes, one per round, built from the embedded table at compile
/// time; both permutation paths read them.
/// Cache-line aligned: the AES-NI path loads every key once per permutation, and a key that
/// straddles two lines costs a split load (measured: 12 % slower unaligned).
static KEYS: AlignedKeys = AlignedKeys(key_lanes());

#[repr(align(64))]
struct AlignedKeys([Block8; ROUNDS]);

const fn key_lanes() -> [Block8; ROUNDS] {
    let mut keys: [Block8; ROUNDS] = [Array([Array([0u8; 16]); 8]); ROUNDS];
    let mut at = 0;
    while at < ROUND_KEYS.len() {
        keys[at / 128].0[at % 128 / 16].0[at % 16] = ROUND_KEYS[at];
        at += 1;
    }
    keys
}

/// Where each lane of the next round comes from: Randen's block shuffle sends every odd block
/// to an even position and every even block to an odd one, so new even lane `k` is updated odd
/// lane `TO_EVEN[k]` and new odd lane `k` is even lane `TO_ODD[k]`.
const TO_EVEN: [usize; 8] = lane_sources(0);
const TO_ODD: [usize; 8] = lane_sources(1);

const fn lane_sources(parity: usize) -> [usize; 8] {
    let mut out = [0; 8];
    let mut k = 0;
    while k < 8 {
        out[k] = SHUFFLE[2 * k + parity] / 2;
        k += 1;
    }
    out
}

/// `to[k] = from[sources[k]]`, block by block (16-byte moves, which the following AES loads
/// can forward from).
#[inline(always)]
fn gather(to: &mut Block8, from: &Block8, sources: &[usize; 8]) {
    for (t, &i) in to.iter_mut().zip(sources) {
        t.copy_from_slice(&from[i]);
    }
}

/// The Randen permutation: AES-NI with the state in registers where the CPU has it, else the
/// portable lanes below.
fn permute(state: &mut [u128; 16]) {
    #[cfg(target_arch = "x86_64")]
    if aesni::permute(state, &KEYS.0) {
        return;
    }
    permute_portable(state);
}

/// The portable Randen permutation: 17 rounds of eight 2-round AES Feistel functions and a
/// block shuffle. The state is held as even and odd lanes, so each AES round runs on all eight
/// functions at once (`cipher_round_par`: one AES-NI pipeline fill instead of eight) and the
/// shuffle is two gathers. The working lanes are wiped at the end: any round's state would
/// give back the previous state by running the (public) permutation backwards.
fn permute_portable(state: &mut [u128; 16]) {
    let lane = |parity: usize| Array(core::array::from_fn(|j| Array(state[2 * j + parity].to_le_bytes())));
    let (mut even, mut odd, mut f) = (Lanes(lane(0)), Lanes(lane(1)), Lanes::default());
    for keys in &KEYS.0 {
        f.0 = even.0;
        cipher_round_par(&mut f.0, keys);
        cipher_round_par(&mut f.0, &odd.0);
        gather(&mut odd.0, &even.0, &TO_ODD);
        gather(&mut even.0, &f.0, &TO_EVEN);
    }
    for j in 0..8 {
        state[2 * j] = u128::from_le_bytes(even.0[j].0);
        state[2 * j + 1] = u128::from_le_bytes(odd.0[j].0);
    }
    even.zeroize();
    odd.zeroize();
    f.zeroize();
}

fn derive_seed(context: &str, inputs: &[&[u8]]) -> [u8; STATE_LEN - CAPACITY] {
    let mut hasher = blake3::Hasher::new_derive_key(context);
    for input in inputs {
        hasher.update(&(input.len() as u64).to_le_bytes());
        hasher.update(input);
    }
    let mut seed = [0u8; STATE_LEN - CAPACITY];
    // The reader holds the root chaining value: it could rebuild the whole seed, so it is
    // bound and wiped, not left as a temporary.
    let mut reader = hasher.finalize_xof();
    reader.fill(&mut seed);
    reader.zeroize();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Abseil randen_test.cc: Generate on the all-zero state, first 32 bytes of the result.
    const ZERO_STATE_GENERATE: &str = "eed3e60e0934656cc633539d9b2b4e047739434e134fc1c3ee1004d97cf4a9dd";

    /// The goldens in tests/kat.rs exercise whichever path the CPU selects; this pins the
    /// portable one to the golden and to the accelerated one over a chain of states.
    #[test]
    fn portable_and_accelerated_permutations_agree() {
        let mut zero = [0u128; 16];
        permute_portable(&mut zero);
        let bytes: Vec<u8> = zero[..2].iter().flat_map(|b| b.to_le_bytes()).collect();
        assert_eq!(data_encoding::HEXLOWER.encode(&bytes), ZERO_STATE_GENERATE);

        let mut x = [0u128; 16];
        for step in 0..64u128 {
            let (mut portable, mut dispatched) = (x, x);
            permute_portable(&mut portable);
            permute(&mut dispatched);
            assert_eq!(portable, dispatched, "step {step}");
            x = portable;
            x[(step % 16) as usize] ^= step.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834);
        }
    }

    #[test]
    fn partial_reads_wipe_exactly_what_was_read() {
        let mut core = RandenCore::from_state([0u8; STATE_LEN]);
        let mut reference = core.clone();
        let mut all = [0u8; 600];
        reference.fill_wiping(&mut all);
        let mut got = Vec::new();
        for n in [3usize, 13, 16, 29, 1, 240, 250, 45] {
            let mut part = vec![0u8; n];
            core.fill_wiping(&mut part);
            let state = core.state();
            let read = core.next;
            assert!(state[CAPACITY..read].iter().all(|b| *b == 0), "read bytes wiped after {n}");
            got.extend(part);
        }
        assert_eq!(got, all[..got.len()]);
    }
}
