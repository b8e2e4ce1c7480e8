//! CTR_DRBG's keystream with VAES on 256-bit registers (two AES blocks per register), for CPUs
//! that have VAES and AVX2 but no AVX-512 state (AMD Zen 3, Intel client parts). Why it is ours:
//! the `aes` crate (0.9) selects its VAES backend through `cpufeatures` 0.3, which reports
//! `vaes` only when the OS has enabled AVX-512 (zmm) state (RustCrypto/utils #1510, fix #1528
//! not released), so on those CPUs it runs eight blocks of AES-NI at a time, about half of
//! OpenSSL's AES-CTR speed there. Where AVX-512 is on, the `aes` crate's own VAES-512 backend
//! is used and this module is not.
//!
//! What it is: FIPS 197's KeyExpansion word by word, SubWord from AES-NI's `aeskeygenassist`
//! (constant time, every key size), and a counter-mode loop over sixteen blocks in eight
//! registers (enough in flight to hide `vaesenc`'s latency), the counters built in vector
//! registers and byte-swapped to SP 800-90A's big-endian V. Checked block for block against
//! the `aes` crate (property test: keys of every size, counters across both 64-bit carries,
//! every length) and through every CAVP record of the DRBG on this path.
//!
//! Its `unsafe` is the standard library's intrinsics: `target_feature` functions entered only
//! once the CPU is known to have the features ([`RoundKeys::new`] returns `None` otherwise),
//! and unaligned loads and stores within the slices given. Every large Generate on this path is
//! also checked at start-up against the `aes` crate (`selftest.rs`).

use core::arch::x86_64::{
    __m128i, __m256i, _mm_aeskeygenassist_si128, _mm_cvtsi128_si32, _mm_loadu_si128, _mm_set_epi32,
    _mm_shuffle_epi32, _mm256_add_epi64, _mm256_aesenc_epi128, _mm256_aesenclast_epi128,
    _mm256_broadcastsi128_si256, _mm256_set_epi64x, _mm256_setr_epi8, _mm256_shuffle_epi8,
    _mm256_storeu_si256, _mm256_xor_si256,
};

use zeroize::Zeroize;

/// Blocks per step: eight registers of two.
const STEP_BLOCKS: usize = 16;

pub use crate::drbg::simd_path::Use;

static USE: crate::drbg::simd_path::Choice = crate::drbg::simd_path::Choice::new();

/// Chooses when the DRBG uses this path (process-wide; for tests and benchmarks).
pub fn set_use(choice: Use) {
    USE.set(choice);
}

/// Whether the CPU can run this path.
pub fn supported() -> bool {
    std::arch::is_x86_feature_detected!("vaes")
        && std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("aes")
}

/// Whether the DRBG should use this path now: by default where the CPU has no AVX-512 (with
/// it, the `aes` crate takes its own VAES-512 backend).
pub fn chosen() -> bool {
    USE.take(supported(), || !std::arch::is_x86_feature_detected!("avx512f"))
}

/// An expanded AES key (10, 12 or 14 rounds), wiped on drop.
pub struct RoundKeys {
    keys: [[u8; 16]; 15],
    rounds: usize,
}

impl Drop for RoundKeys {
    fn drop(&mut self) {
        self.keys.zeroize();
    }
}

impl RoundKeys {
    /// The schedule of a 16-, 24- or 32-byte key, or `None` when the CPU lacks VAES, AVX2 or
    /// AES-NI (or the key has another length).
    pub fn new(key: &[u8]) -> Option<Self> {
        let rounds = match key.len() {
            16 => 10,
            24 => 12,
            32 => 14,
            _ => return None,
        };
        if !supported() {
            return None;
        }
        let mut keys = RoundKeys { keys: [[0; 16]; 15], rounds };
        // SAFETY: AES-NI and SSE2 are present (checked by `supported`).
        unsafe { expand(key, &mut keys) };
        Some(keys)
    }

    /// Writes E(K, ctr + 1), E(K, ctr + 2), ... (each counter big-endian, wrapping at 2^128)
    /// into the whole blocks of `out` and returns the last counter used (`ctr` when `out`
    /// holds no whole block). A partial last block is left untouched.
    pub fn ctr(&self, ctr: u128, out: &mut [u8]) -> u128 {
        // SAFETY: a `RoundKeys` exists only where `supported()` held: VAES, AVX2, AES-NI.
        unsafe { ctr_blocks(self, ctr, out) }
    }
}

/// FIPS 197 KeyExpansion, with SubWord (and RotWord) from `aeskeygenassist`.
#[target_feature(enable = "aes,sse2")]
unsafe fn expand(key: &[u8], out: &mut RoundKeys) {
    const RCON: [u32; 10] = [0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x1b, 0x36];
    let nk = key.len() / 4;
    let total = 4 * (out.rounds + 1);
    let mut w = [0u32; 60];
    for (i, word) in key.chunks_exact(4).enumerate() {
        w[i] = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
    }
    for i in nk..total {
        let prev = w[i - 1];
        // `aeskeygenassist` of `prev` in dword 1: dword 0 is SubWord(prev), dword 1
        // RotWord(SubWord(prev)) (= SubWord(RotWord(prev))) with a zero round constant.
        let assist = _mm_aeskeygenassist_si128::<0>(_mm_set_epi32(0, 0, prev as i32, 0));
        let t = if i % nk == 0 {
            (_mm_cvtsi128_si32(_mm_shuffle_epi32::<0x55>(assist)) as u32) ^ RCON[i / nk - 1]
        } else if nk > 6 && i % nk == 4 {
            _mm_cvtsi128_si32(assist) as u32
        } else {
            prev
        };
        w[i] = w[i - nk] ^ t;
    }
    for (r, block) in out.keys.iter_mut().take(out.rounds + 1).enumerate() {
        for (j, word) in w[4 * r..4 * r + 4].iter().enumerate() {
            block[4 * j..4 * j + 4].copy_from_slice(&word.to_le_bytes());
        }
    }
    w.zeroize();
}

/// The round key `r` in both lanes of a register.
#[inline]
#[target_feature(enable = "vaes,avx2,aes")]
fn round_key(keys: &RoundKeys, r: usize) -> __m256i {
    // SAFETY: `keys.keys[r]` is 16 readable bytes; `loadu` has no alignment requirement.
    _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(keys.keys[r].as_ptr().cast::<__m128i>()) })
}

/// Encrypts the counter blocks of `regs` in place (each register two blocks).
#[inline]
#[target_feature(enable = "vaes,avx2,aes")]
fn encrypt<const N: usize>(keys: &RoundKeys, regs: &mut [__m256i; N]) {
    let k0 = round_key(keys, 0);
    for x in regs.iter_mut() {
        *x = _mm256_xor_si256(*x, k0);
    }
    for r in 1..keys.rounds {
        let k = round_key(keys, r);
        for x in regs.iter_mut() {
            *x = _mm256_aesenc_epi128(*x, k);
        }
    }
    let last = round_key(keys, keys.rounds);
    for x in regs.iter_mut() {
        *x = _mm256_aesenclast_epi128(*x, last);
    }
}

/// Counter blocks `base + 1 .. base + 2N` (low 64 bits not wrapping) as N registers, each
/// 128-bit lane the big-endian counter.
#[inline]
#[target_feature(enable = "vaes,avx2,aes")]
fn counters<const N: usize>(base: u128) -> [__m256i; N] {
    let (lo, hi) = (base as u64, (base >> 64) as u64);
    // Lanes hold (low qword, high qword) little-endian; reversing each lane's 16 bytes makes the
    // big-endian counter SP 800-90A encrypts.
    let swap = _mm256_setr_epi8(
        15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2,
        1, 0,
    );
    let first = _mm256_set_epi64x(hi as i64, lo.wrapping_add(2) as i64, hi as i64, lo.wrapping_add(1) as i64);
    let mut regs = [first; N];
    for (j, r) in regs.iter_mut().enumerate() {
        let step = 2 * j as i64;
        *r = _mm256_shuffle_epi8(_mm256_add_epi64(first, _mm256_set_epi64x(0, step, 0, step)), swap);
    }
    regs
}

/// Counter blocks for any `base`, carries across the 64-bit halves included (the slow path of
/// a step whose low half wraps: once in 2^60 steps). The counters (V) are wiped from the stack.
#[inline]
#[target_feature(enable = "vaes,avx2,aes")]
fn counters_wrapping<const N: usize>(base: u128) -> [__m256i; N] {
    let mut bytes = [[0u8; 32]; N];
    for (j, pair) in bytes.iter_mut().enumerate() {
        let a = base.wrapping_add(2 * j as u128 + 1);
        pair[..16].copy_from_slice(&a.to_be_bytes());
        pair[16..].copy_from_slice(&a.wrapping_add(1).to_be_bytes());
    }
    // SAFETY: each `pair` is 32 readable bytes; `loadu` has no alignment requirement.
    let regs =
        bytes.map(|pair| unsafe { core::arch::x86_64::_mm256_loadu_si256(pair.as_ptr().cast::<__m256i>()) });
    bytes.zeroize();
    regs
}

/// One step of `2N` blocks into `out` (exactly `32 N` bytes).
#[inline]
#[target_feature(enable = "vaes,avx2,aes")]
fn step<const N: usize>(keys: &RoundKeys, base: u128, out: &mut [u8]) {
    debug_assert_eq!(out.len(), 32 * N);
    let wraps = (base as u64).checked_add(2 * N as u64).is_none();
    let mut regs = if wraps { counters_wrapping::<N>(base) } else { counters::<N>(base) };
    encrypt(keys, &mut regs);
    for (j, x) in regs.iter().enumerate() {
        // SAFETY: `out` holds `32 N` bytes, so bytes `32 j .. 32 j + 32` are writable;
        // `storeu` has no alignment requirement.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(32 * j).cast::<__m256i>(), *x) };
    }
}

#[target_feature(enable = "vaes,avx2,aes")]
unsafe fn ctr_blocks(keys: &RoundKeys, mut ctr: u128, out: &mut [u8]) -> u128 {
    let whole = out.len() / 16 * 16;
    let (body, _) = out.split_at_mut(whole);
    let mut steps = body.chunks_exact_mut(STEP_BLOCKS * 16);
    for chunk in &mut steps {
        step::<8>(keys, ctr, chunk);
        ctr = ctr.wrapping_add(STEP_BLOCKS as u128);
    }
    let rest = steps.into_remainder();
    let mut pairs = rest.chunks_exact_mut(32);
    for pair in &mut pairs {
        step::<1>(keys, ctr, pair);
        ctr = ctr.wrapping_add(2);
    }
    let last = pairs.into_remainder();
    if !last.is_empty() {
        // One block: a pair, its first half kept.
        let mut pair = [0u8; 32];
        step::<1>(keys, ctr, &mut pair);
        last.copy_from_slice(&pair[..16]);
        pair.zeroize();
        ctr = ctr.wrapping_add(1);
    }
    ctr
}

#[cfg(test)]
mod tests {
    use aes::cipher::{BlockCipherEncrypt, KeyInit};
    use proptest::prelude::*;

    use super::*;

    /// The `aes` crate's CTR blocks, as SP 800-90A's keystream counts them.
    fn reference(key: &[u8], ctr: u128, blocks: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 * blocks);
        let mut v = ctr;
        let mut one = |enc: &dyn Fn(&mut aes::Block)| {
            v = v.wrapping_add(1);
            let mut b = aes::Block::from(v.to_be_bytes());
            enc(&mut b);
            out.extend_from_slice(&b);
        };
        match key.len() {
            16 => {
                let c = aes::Aes128Enc::new_from_slice(key).unwrap();
                (0..blocks).for_each(|_| one(&|b| c.encrypt_block(b)));
            }
            24 => {
                let c = aes::Aes192Enc::new_from_slice(key).unwrap();
                (0..blocks).for_each(|_| one(&|b| c.encrypt_block(b)));
            }
            _ => {
                let c = aes::Aes256Enc::new_from_slice(key).unwrap();
                (0..blocks).for_each(|_| one(&|b| c.encrypt_block(b)));
            }
        }
        out
    }

    fn skip() -> bool {
        if supported() {
            return false;
        }
        eprintln!("SKIPPED: this CPU lacks VAES, AVX2 or AES-NI");
        true
    }

    /// FIPS 197 appendix C's example vectors, one block each key size.
    #[test]
    fn fips_197_examples() {
        if skip() {
            return;
        }
        let plain: u128 = 0x00112233445566778899aabbccddeeff;
        let cases: [(&str, &str); 3] = [
            ("000102030405060708090a0b0c0d0e0f", "69c4e0d86a7b0430d8cdb78070b4c55a"),
            ("000102030405060708090a0b0c0d0e0f1011121314151617", "dda97ca4864cdfe06eaf70a0ec0d7191"),
            (
                "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
                "8ea2b7ca516745bfeafc49904b496089",
            ),
        ];
        for (key, want) in cases {
            let key = data_encoding::HEXLOWER.decode(key.as_bytes()).unwrap();
            let keys = RoundKeys::new(&key).unwrap();
            let mut out = [0u8; 16];
            // ctr + 1 = the plaintext.
            assert_eq!(keys.ctr(plain - 1, &mut out), plain);
            assert_eq!(data_encoding::HEXLOWER.encode(&out), want, "key of {} bytes", key.len());
        }
    }

    proptest! {
        /// Block for block the `aes` crate's encryption of the same counters, whatever the key
        /// size, the length (steps, pairs, a single block, a partial block left alone) and the
        /// counter, across the 64-bit carry and the 128-bit wrap.
        #[test]
        fn same_blocks_as_the_aes_crate(
            key in prop::sample::select(vec![16usize, 24, 32]).prop_flat_map(|n| prop::collection::vec(any::<u8>(), n)),
            len in 0usize..1200,
            ctr in prop_oneof![
                any::<u128>(),
                (0u64..40).prop_map(|d| u128::from(u64::MAX - d)),
                (0u64..40).prop_map(|d| u128::MAX - u128::from(d)),
            ],
        ) {
            if !supported() {
                return Ok(());
            }
            let keys = RoundKeys::new(&key).unwrap();
            let mut out = vec![0xa5u8; len];
            let end = keys.ctr(ctr, &mut out);
            let blocks = len / 16;
            prop_assert_eq!(end, ctr.wrapping_add(blocks as u128));
            prop_assert_eq!(&out[..16 * blocks], &reference(&key, ctr, blocks)[..]);
            prop_assert!(out[16 * blocks..].iter().all(|&b| b == 0xa5), "a partial block is left alone");
        }
    }
}
