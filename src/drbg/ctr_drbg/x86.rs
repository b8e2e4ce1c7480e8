//! CTR_DRBG's keystream on x86 through drbgd's own AES counter-mode loop, where the `aes`
//! crate's backends fall short of the CPU:
//!
//! - **VAES-256** (two blocks per register), for CPUs with VAES and AVX2 but no AVX-512 state
//!   (AMD Zen 3, Intel client parts). The `aes` crate (0.9) selects its VAES backend through
//!   `cpufeatures` 0.3, which reports `vaes` only when the OS has enabled AVX-512 (zmm) state
//!   (RustCrypto/utils #1510, fix #1528 not released), so there it runs AES-NI, about half of
//!   OpenSSL's AES-CTR speed.
//! - **AES-NI** (one block per register), for CPUs with AES-NI and AVX but no VAES: Intel
//!   Xeons and client parts before Ice Lake, AMD before Zen 3. The crate's AES-NI backend
//!   interleaves its parallel blocks two at a time in SSE encoding: on a Cascade Lake Xeon,
//!   perf put 97 % of an `aes256ctr` Generate in it, at 0.70x OpenSSL's aes-256-ctr; eight
//!   blocks in flight here run at OpenSSL's speed (docs/generators.md). Measured on Cascade
//!   Lake only; the others take it by the same reasoning.
//!
//! Where AVX-512 and VAES are both on, the crate's own VAES-512 backend is faster and this
//! module is not used.
//!
//! What it is: FIPS 197's KeyExpansion with SubWord from AES-NI's `aeskeygenassist` (constant
//! time; four words per step for AES-128 and AES-256, word by word for AES-192), and one
//! counter-mode loop, generic over the register ([`Lanes`]): eight registers in flight (enough
//! to hide `aesenc`'s latency), the counters built in vector registers and byte-swapped to SP
//! 800-90A's big-endian V. Checked block for block against the `aes` crate on both paths
//! (property test: keys of every size, counters across both 64-bit carries, every length),
//! against FIPS 197's examples, and through OpenSSL's large-Generate CTR-DRBG records
//! (`tests/kat.rs`; the CAVP records' 64-byte outputs take the small-request path).
//!
//! Its `unsafe` is the standard library's intrinsics: `target_feature` functions entered only
//! once the CPU is known to have every feature they enable ([`RoundKeys::new`] returns `None`
//! otherwise), and unaligned loads and stores within the slices given. The path large
//! Generates take is also checked at start-up against the `aes` crate (`selftest.rs`). The
//! round keys are expanded in place (the DRBG never moves a keyed schedule; a move would leave
//! a copy) and wiped on drop; like the `aes` crate's backends, the loop leaves what the
//! compiler spills of counters and round keys on the stack.

use core::arch::x86_64::{
    __m128i, __m256i, _mm_add_epi64, _mm_aesenc_si128, _mm_aesenclast_si128, _mm_aeskeygenassist_si128,
    _mm_cvtsi128_si32, _mm_loadu_si128, _mm_set_epi32, _mm_set_epi64x, _mm_set1_epi32, _mm_setr_epi8,
    _mm_shuffle_epi8, _mm_shuffle_epi32, _mm_slli_si128, _mm_storeu_si128, _mm_xor_si128, _mm256_add_epi64,
    _mm256_aesenc_epi128, _mm256_aesenclast_epi128, _mm256_broadcastsi128_si256, _mm256_loadu_si256,
    _mm256_set_epi64x, _mm256_setr_epi8, _mm256_shuffle_epi8, _mm256_storeu_si256, _mm256_xor_si256,
};
use std::sync::atomic::{AtomicU8, Ordering};

use zeroize::Zeroize;

/// Registers in flight per step: 16 blocks on VAES-256, 8 on AES-NI.
const STEP_REGS: usize = 8;

/// One of drbgd's own keystream loops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// VAES on 256-bit registers, two blocks each.
    Vaes256,
    /// AES-NI on 128-bit registers, one block each.
    AesNi,
}

impl Path {
    /// Both paths.
    pub const ALL: [Path; 2] = [Path::Vaes256, Path::AesNi];

    /// Whether the CPU can run this path: every feature its `target_feature` entry point
    /// enables (for the compiler `avx` implies SSE3 to SSE4.2; CPUID reports each alone).
    pub fn supported(self) -> bool {
        use std::arch::is_x86_feature_detected as has;
        let base =
            has!("aes") && has!("sse3") && has!("ssse3") && has!("sse4.1") && has!("sse4.2") && has!("avx");
        base && match self {
            Path::Vaes256 => has!("vaes") && has!("avx2"),
            Path::AesNi => true,
        }
    }
}

/// Which keystream large Generates take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keystream {
    /// By the CPU (the default; see [`chosen`]).
    Auto,
    /// The `aes` crate's backend.
    Crate,
    /// This path of ours where the CPU can run it, the crate's backend elsewhere.
    Own(Path),
}

static KEYSTREAM: AtomicU8 = AtomicU8::new(0);

/// Chooses the keystream from now on (process-wide, read at each large Generate; for tests
/// and benchmarks).
pub fn set_keystream(choice: Keystream) {
    let code = match choice {
        Keystream::Auto => 0,
        Keystream::Crate => 1,
        Keystream::Own(Path::Vaes256) => 2,
        Keystream::Own(Path::AesNi) => 3,
    };
    KEYSTREAM.store(code, Ordering::Relaxed);
}

/// The path large Generates take now, if one of ours. By default VAES-256 where the CPU has
/// VAES and AVX2 but no AVX-512, AES-NI where it has AES-NI and AVX but not the crate's
/// VAES-512 (AVX-512 and VAES), and none (the `aes` crate's backend) otherwise.
pub fn chosen() -> Option<Path> {
    let auto = || {
        use std::arch::is_x86_feature_detected as has;
        let (avx512, vaes) = (has!("avx512f"), has!("vaes"));
        if !avx512 && Path::Vaes256.supported() {
            Some(Path::Vaes256)
        } else if !(avx512 && vaes) && Path::AesNi.supported() {
            Some(Path::AesNi)
        } else {
            None
        }
    };
    match KEYSTREAM.load(Ordering::Relaxed) {
        0 => auto(),
        2 => Some(Path::Vaes256).filter(|p| p.supported()),
        3 => Some(Path::AesNi).filter(|p| p.supported()),
        _ => None,
    }
}

/// An expanded AES key (10, 12 or 14 rounds) for one path, wiped on drop.
pub struct RoundKeys {
    keys: [[u8; 16]; 15],
    rounds: usize,
    path: Path,
}

impl Drop for RoundKeys {
    fn drop(&mut self) {
        self.keys.as_flattened_mut().zeroize();
    }
}

impl RoundKeys {
    /// An empty schedule for `path`, or `None` when the CPU cannot run the path. It is keyed
    /// in place ([`RoundKeys::expand`]): expanded where it stays, the round keys are never
    /// copied by a move.
    pub fn new(path: Path) -> Option<Self> {
        path.supported().then_some(RoundKeys { keys: [[0; 16]; 15], rounds: 0, path })
    }

    /// Expands a 16-, 24- or 32-byte key into this schedule.
    ///
    /// # Panics
    /// On a key of another length.
    pub fn expand(&mut self, key: &[u8]) -> &Self {
        self.keys.as_flattened_mut().zeroize();
        self.rounds = match key.len() {
            16 => 10,
            24 => 12,
            32 => 14,
            n => panic!("an AES key is 16, 24 or 32 bytes, not {n}"),
        };
        // SAFETY: AES-NI and SSE2 are present (every path needs them; `new` checked).
        unsafe { expand(key, self) };
        self
    }

    /// Writes E(K, ctr + 1), E(K, ctr + 2), ... (each counter big-endian, wrapping at 2^128)
    /// into the whole blocks of `out` and returns the last counter used (`ctr` when `out`
    /// holds no whole block). A partial last block is left untouched.
    pub fn ctr(&self, ctr: u128, out: &mut [u8]) -> u128 {
        assert!(self.rounds > 0, "the round keys are expanded before use");
        // SAFETY: a `RoundKeys` exists only where its path's `supported()` held.
        unsafe {
            match self.path {
                Path::Vaes256 => ctr_vaes256(self, ctr, out),
                Path::AesNi => ctr_aesni(self, ctr, out),
            }
        }
    }
}

#[target_feature(enable = "vaes,avx2,aes")]
unsafe fn ctr_vaes256(keys: &RoundKeys, ctr: u128, out: &mut [u8]) -> u128 {
    // SAFETY: the caller's CPU has this path's features, which `__m256i`'s `Lanes` needs.
    unsafe { ctr_blocks::<__m256i>(keys, ctr, out) }
}

#[target_feature(enable = "aes,avx")]
unsafe fn ctr_aesni(keys: &RoundKeys, ctr: u128, out: &mut [u8]) -> u128 {
    // SAFETY: the caller's CPU has this path's features, which `__m128i`'s `Lanes` needs.
    unsafe { ctr_blocks::<__m128i>(keys, ctr, out) }
}

/// FIPS 197 section 5.2's round constants Rcon[i] (the byte in the word's lowest byte).
const RCON: [u32; 10] = [0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x1b, 0x36];

/// FIPS 197 KeyExpansion, with SubWord (and RotWord) from `aeskeygenassist`: four words per
/// step for AES-128 and AES-256 (13 `aeskeygenassist` on AES-256's chain, where word by word
/// took 52 and cost 2.5 % of a 64 KiB Generate), word by word for AES-192.
#[target_feature(enable = "aes,sse2")]
unsafe fn expand(key: &[u8], out: &mut RoundKeys) {
    // SAFETY: `key` holds 16 bytes here (32 below); `loadu` has no alignment requirement.
    let load = |at: usize| unsafe { _mm_loadu_si128(key[at..at + 16].as_ptr().cast::<__m128i>()) };
    let mut store = |r: usize, x: __m128i| {
        // SAFETY: `out.keys[r]` is 16 writable bytes; `storeu` has no alignment requirement.
        unsafe { _mm_storeu_si128(out.keys[r].as_mut_ptr().cast::<__m128i>(), x) }
    };
    match key.len() {
        16 => {
            let mut k = load(0);
            store(0, k);
            for (r, rcon) in RCON.iter().enumerate() {
                k = next_words(k, rot_sub_last(k, *rcon));
                store(r + 1, k);
            }
        }
        32 => {
            let (mut even, mut odd) = (load(0), load(16));
            store(0, even);
            store(1, odd);
            for (i, rcon) in RCON.iter().take(7).enumerate() {
                even = next_words(even, rot_sub_last(odd, *rcon));
                store(2 * i + 2, even);
                if i < 6 {
                    odd = next_words(odd, sub_last(even));
                    store(2 * i + 3, odd);
                }
            }
        }
        _ => expand_words(key, out),
    }
}

/// The four words after `k` (a round key's words w[i-Nk..i-Nk+4] for AES-128, every other
/// round key for AES-256): w[j] = w[j-Nk] XOR w[j-1], the first XOR `t` (in every lane), so
/// each new word is the XOR of `t` and the words of `k` up to its own.
#[inline]
#[target_feature(enable = "sse2")]
fn next_words(k: __m128i, t: __m128i) -> __m128i {
    let k = _mm_xor_si128(k, _mm_slli_si128::<4>(k));
    let k = _mm_xor_si128(k, _mm_slli_si128::<8>(k));
    _mm_xor_si128(k, t)
}

/// RotWord(SubWord(last word of `k`)) XOR Rcon in every lane: `aeskeygenassist` puts it in
/// dword 3 (with a zero round constant, XORed here so the constant need not be an immediate).
#[inline]
#[target_feature(enable = "aes,sse2")]
fn rot_sub_last(k: __m128i, rcon: u32) -> __m128i {
    let t = _mm_shuffle_epi32::<0xff>(_mm_aeskeygenassist_si128::<0>(k));
    _mm_xor_si128(t, _mm_set1_epi32(rcon as i32))
}

/// SubWord(last word of `k`) in every lane (AES-256's middle step): dword 2 of
/// `aeskeygenassist`.
#[inline]
#[target_feature(enable = "aes,sse2")]
fn sub_last(k: __m128i) -> __m128i {
    _mm_shuffle_epi32::<0xaa>(_mm_aeskeygenassist_si128::<0>(k))
}

/// FIPS 197 KeyExpansion word by word (AES-192, whose six-word steps do not fit a register).
#[target_feature(enable = "aes,sse2")]
fn expand_words(key: &[u8], out: &mut RoundKeys) {
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
        let assist = || _mm_aeskeygenassist_si128::<0>(_mm_set_epi32(0, 0, prev as i32, 0));
        let t = if i % nk == 0 {
            (_mm_cvtsi128_si32(_mm_shuffle_epi32::<0x55>(assist())) as u32) ^ RCON[i / nk - 1]
        } else if nk > 6 && i % nk == 4 {
            _mm_cvtsi128_si32(assist()) as u32
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

/// A register of counter blocks, one or two AES blocks wide: what the loop below needs of it.
/// Every method is `#[inline(always)]`, so it is compiled into the path's `target_feature`
/// entry point (`ctr_vaes256`, `ctr_aesni`), the pattern of the `memchr` crate's generic
/// vector code.
///
/// # Safety
/// Callers run on a CPU with the implementing path's features.
trait Lanes: Copy {
    /// AES blocks per register.
    const BLOCKS: usize;
    /// The round key in every lane.
    unsafe fn key(k: &[u8; 16]) -> Self;
    /// Lanes `(lo + 1, hi)`, `(lo + 2, hi)`, ... as little-endian qword pairs (not yet swapped).
    unsafe fn first(hi: u64, lo: u64) -> Self;
    /// `first` with `by` added to each lane's low qword, each lane byte-reversed into the
    /// big-endian counter SP 800-90A encrypts.
    unsafe fn advanced(first: Self, by: u64) -> Self;
    /// `16 * BLOCKS` bytes from `p`.
    unsafe fn load(p: *const u8) -> Self;
    /// `16 * BLOCKS` bytes to `p`.
    unsafe fn store(self, p: *mut u8);
    unsafe fn xor(self, k: Self) -> Self;
    unsafe fn enc(self, k: Self) -> Self;
    unsafe fn enc_last(self, k: Self) -> Self;
}

impl Lanes for __m128i {
    const BLOCKS: usize = 1;
    #[inline(always)]
    unsafe fn key(k: &[u8; 16]) -> Self {
        // SAFETY: `k` is 16 readable bytes; `loadu` has no alignment requirement.
        unsafe { _mm_loadu_si128(k.as_ptr().cast::<__m128i>()) }
    }
    #[inline(always)]
    unsafe fn first(hi: u64, lo: u64) -> Self {
        // SAFETY: the CPU has this path's features (the caller's contract).
        unsafe { _mm_set_epi64x(hi as i64, lo.wrapping_add(1) as i64) }
    }
    #[inline(always)]
    unsafe fn advanced(first: Self, by: u64) -> Self {
        // SAFETY: the CPU has this path's features (the caller's contract).
        unsafe {
            let swap = _mm_setr_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
            _mm_shuffle_epi8(_mm_add_epi64(first, _mm_set_epi64x(0, by as i64)), swap)
        }
    }
    #[inline(always)]
    unsafe fn load(p: *const u8) -> Self {
        // SAFETY: the caller gives 16 readable bytes.
        unsafe { _mm_loadu_si128(p.cast::<__m128i>()) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut u8) {
        // SAFETY: the caller gives 16 writable bytes.
        unsafe { _mm_storeu_si128(p.cast::<__m128i>(), self) }
    }
    #[inline(always)]
    unsafe fn xor(self, k: Self) -> Self {
        // SAFETY: the CPU has this path's features (the caller's contract).
        unsafe { _mm_xor_si128(self, k) }
    }
    #[inline(always)]
    unsafe fn enc(self, k: Self) -> Self {
        // SAFETY: the CPU has this path's features (the caller's contract).
        unsafe { _mm_aesenc_si128(self, k) }
    }
    #[inline(always)]
    unsafe fn enc_last(self, k: Self) -> Self {
        // SAFETY: the CPU has this path's features (the caller's contract).
        unsafe { _mm_aesenclast_si128(self, k) }
    }
}

impl Lanes for __m256i {
    const BLOCKS: usize = 2;
    #[inline(always)]
    unsafe fn key(k: &[u8; 16]) -> Self {
        // SAFETY: `k` is 16 readable bytes; `loadu` has no alignment requirement; AVX2.
        unsafe { _mm256_broadcastsi128_si256(_mm_loadu_si128(k.as_ptr().cast::<__m128i>())) }
    }
    #[inline(always)]
    unsafe fn first(hi: u64, lo: u64) -> Self {
        // SAFETY: the CPU has this path's features (the caller's contract).
        unsafe {
            _mm256_set_epi64x(hi as i64, lo.wrapping_add(2) as i64, hi as i64, lo.wrapping_add(1) as i64)
        }
    }
    #[inline(always)]
    unsafe fn advanced(first: Self, by: u64) -> Self {
        // SAFETY: the CPU has this path's features (the caller's contract).
        unsafe {
            let swap = _mm256_setr_epi8(
                15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5,
                4, 3, 2, 1, 0,
            );
            let by = by as i64;
            _mm256_shuffle_epi8(_mm256_add_epi64(first, _mm256_set_epi64x(0, by, 0, by)), swap)
        }
    }
    #[inline(always)]
    unsafe fn load(p: *const u8) -> Self {
        // SAFETY: the caller gives 32 readable bytes.
        unsafe { _mm256_loadu_si256(p.cast::<__m256i>()) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut u8) {
        // SAFETY: the caller gives 32 writable bytes.
        unsafe { _mm256_storeu_si256(p.cast::<__m256i>(), self) }
    }
    #[inline(always)]
    unsafe fn xor(self, k: Self) -> Self {
        // SAFETY: the CPU has this path's features (the caller's contract).
        unsafe { _mm256_xor_si256(self, k) }
    }
    #[inline(always)]
    unsafe fn enc(self, k: Self) -> Self {
        // SAFETY: the CPU has this path's features (the caller's contract).
        unsafe { _mm256_aesenc_epi128(self, k) }
    }
    #[inline(always)]
    unsafe fn enc_last(self, k: Self) -> Self {
        // SAFETY: the CPU has this path's features (the caller's contract).
        unsafe { _mm256_aesenclast_epi128(self, k) }
    }
}

/// Encrypts the counter blocks of `regs` in place. The rounds stay a loop (the round count is
/// read at run time): with them unrolled, LLVM ran the blocks one after another to save
/// registers (16 on AES-NI's encoding), and the step lost its overlap.
#[inline(always)]
unsafe fn encrypt<L: Lanes, const N: usize>(keys: &RoundKeys, regs: &mut [L; N]) {
    // SAFETY: the CPU has this path's features (the caller's contract).
    unsafe {
        let k0 = L::key(&keys.keys[0]);
        for x in regs.iter_mut() {
            *x = x.xor(k0);
        }
        for k in &keys.keys[1..keys.rounds] {
            let k = L::key(k);
            for x in regs.iter_mut() {
                *x = x.enc(k);
            }
        }
        let last = L::key(&keys.keys[keys.rounds]);
        for x in regs.iter_mut() {
            *x = x.enc_last(last);
        }
    }
}

/// Counter blocks `base + 1 ..` as N registers, for any `base`: a step whose low half would
/// wrap takes the slow path (once in 2^60 steps), carries across the 64-bit halves included.
/// The counters (V) are wiped from the stack.
#[inline(always)]
unsafe fn counters<L: Lanes, const N: usize>(base: u128) -> [L; N] {
    let (lo, hi) = (base as u64, (base >> 64) as u64);
    if lo.checked_add((N * L::BLOCKS) as u64).is_some() {
        // SAFETY: the CPU has this path's features (the caller's contract).
        let first = unsafe { L::first(hi, lo) };
        // SAFETY: the CPU has this path's features (the caller's contract).
        return core::array::from_fn(|j| unsafe { L::advanced(first, (j * L::BLOCKS) as u64) });
    }
    let mut bytes = [[0u8; 32]; N];
    for (j, reg) in bytes.iter_mut().enumerate() {
        for (lane, block) in reg.chunks_exact_mut(16).take(L::BLOCKS).enumerate() {
            block.copy_from_slice(&base.wrapping_add((j * L::BLOCKS + lane + 1) as u128).to_be_bytes());
        }
    }
    // SAFETY: each `reg` is 32 readable bytes, of which `L::load` reads `16 * L::BLOCKS`.
    let regs = core::array::from_fn(|j| unsafe { L::load(bytes[j].as_ptr()) });
    bytes.zeroize();
    regs
}

/// One step of `N` registers into `out` (exactly `16 * L::BLOCKS * N` bytes).
#[inline(always)]
unsafe fn step<L: Lanes, const N: usize>(keys: &RoundKeys, base: u128, out: &mut [u8]) {
    let width = 16 * L::BLOCKS;
    debug_assert_eq!(out.len(), width * N);
    // SAFETY: the CPU has this path's features (the caller's contract).
    let mut regs = unsafe { counters::<L, N>(base) };
    // SAFETY: the CPU has this path's features (the caller's contract).
    unsafe { encrypt(keys, &mut regs) };
    for (j, x) in regs.iter().enumerate() {
        // SAFETY: `out` holds `width * N` bytes, so bytes `width * j ..` + `width` are writable.
        unsafe { x.store(out.as_mut_ptr().add(width * j)) };
    }
}

/// [`RoundKeys::ctr`] on registers `L`: whole steps, then single registers, then (VAES-256)
/// a last block alone.
#[inline(always)]
unsafe fn ctr_blocks<L: Lanes>(keys: &RoundKeys, mut ctr: u128, out: &mut [u8]) -> u128 {
    let width = 16 * L::BLOCKS;
    let whole = out.len() / 16 * 16;
    let (body, _) = out.split_at_mut(whole);
    let mut steps = body.chunks_exact_mut(STEP_REGS * width);
    for chunk in &mut steps {
        // SAFETY: the CPU has this path's features (the caller's contract).
        unsafe { step::<L, STEP_REGS>(keys, ctr, chunk) };
        ctr = ctr.wrapping_add((STEP_REGS * L::BLOCKS) as u128);
    }
    let rest = steps.into_remainder();
    let mut regs = rest.chunks_exact_mut(width);
    for reg in &mut regs {
        // SAFETY: the CPU has this path's features (the caller's contract).
        unsafe { step::<L, 1>(keys, ctr, reg) };
        ctr = ctr.wrapping_add(L::BLOCKS as u128);
    }
    let last = regs.into_remainder();
    if !last.is_empty() {
        // Fewer whole blocks than a register holds: a register's worth, the rest dropped.
        let mut staged = [0u8; 32];
        // SAFETY: the CPU has this path's features (the caller's contract).
        unsafe { step::<L, 1>(keys, ctr, &mut staged[..width]) };
        last.copy_from_slice(&staged[..last.len()]);
        staged.zeroize();
        ctr = ctr.wrapping_add((last.len() / 16) as u128);
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

    /// The paths this CPU can run; prints the others as skipped.
    fn runnable() -> Vec<Path> {
        Path::ALL
            .into_iter()
            .filter(|p| {
                p.supported() || {
                    eprintln!("SKIPPED ({p:?}): this CPU lacks its features");
                    false
                }
            })
            .collect()
    }

    /// FIPS 197 appendix C's example vectors, one block each key size.
    #[test]
    fn fips_197_examples() {
        let plain: u128 = 0x00112233445566778899aabbccddeeff;
        let cases: [(&str, &str); 3] = [
            ("000102030405060708090a0b0c0d0e0f", "69c4e0d86a7b0430d8cdb78070b4c55a"),
            ("000102030405060708090a0b0c0d0e0f1011121314151617", "dda97ca4864cdfe06eaf70a0ec0d7191"),
            (
                "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
                "8ea2b7ca516745bfeafc49904b496089",
            ),
        ];
        for path in runnable() {
            for (key, want) in cases {
                let key = data_encoding::HEXLOWER.decode(key.as_bytes()).unwrap();
                let mut keys = RoundKeys::new(path).unwrap();
                keys.expand(&key);
                let mut out = [0u8; 16];
                // ctr + 1 = the plaintext.
                assert_eq!(keys.ctr(plain - 1, &mut out), plain);
                assert_eq!(
                    data_encoding::HEXLOWER.encode(&out),
                    want,
                    "{path:?}, key of {} bytes",
                    key.len()
                );
            }
        }
    }

    proptest! {
        /// Block for block the `aes` crate's encryption of the same counters on each path,
        /// whatever the key size, the length (steps, single registers, a single block, a partial
        /// block left alone) and the counter, across the 64-bit carry and the 128-bit wrap.
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
            let blocks = len / 16;
            let want = reference(&key, ctr, blocks);
            for path in Path::ALL.into_iter().filter(|p| p.supported()) {
                let mut keys = RoundKeys::new(path).unwrap();
                keys.expand(&key);
                let mut out = vec![0xa5u8; len];
                let end = keys.ctr(ctr, &mut out);
                prop_assert_eq!(end, ctr.wrapping_add(blocks as u128));
                prop_assert_eq!(&out[..16 * blocks], &want[..], "{:?}", path);
                prop_assert!(out[16 * blocks..].iter().all(|&b| b == 0xa5), "a partial block is left alone");
            }
        }
    }
}
