//! ChaCha20 keystream eight blocks at a time on AVX2, wherever the `chacha20` crate would not
//! run its sixteen-block AVX-512 backend (CPUs without AVX512F and AVX512VL, or builds
//! without `--cfg chacha20_avx512`). Why it is ours:
//! the `chacha20` crate (0.10) runs four blocks per step on AVX2 (two per register), about
//! half of OpenSSL's ChaCha20 speed there; OpenSSL's AVX2 code runs eight, each register
//! holding one state word of eight blocks. Where the crate's sixteen-block backend runs, it
//! is used and this module is not.
//!
//! What it is: RFC 8439's block function (the original 64-bit counter and 64-bit nonce layout,
//! nonce zero, as `ChaCha20LegacyCore`) with the state "vertical": register `i` holds word `i`
//! of eight consecutive blocks, so a quarter round is twelve vector operations on eight blocks
//! (four of them interleaved) and the 16- and 8-bit rotations are byte shuffles. After the rounds an 8×8 transpose of
//! 32-bit words turns each half of the state back into eight blocks' bytes. Checked against the
//! RFC 8439 and original-layout test vectors and, block for block, against the crate's keystream
//! (property test: random keys, counters across the 32-bit word carry, every length).
//!
//! Its `unsafe` is the standard library's intrinsics: a `target_feature` function entered only
//! once the CPU is known to have AVX2 ([`Keystream8::new`] returns `None` otherwise), and
//! unaligned stores within the 512-byte chunk given.

use core::arch::x86_64::{
    __m256i, _mm256_add_epi32, _mm256_or_si256, _mm256_permute2x128_si256, _mm256_set1_epi32,
    _mm256_setr_epi8, _mm256_setr_epi32, _mm256_shuffle_epi8, _mm256_slli_epi32, _mm256_srli_epi32,
    _mm256_storeu_si256, _mm256_unpackhi_epi32, _mm256_unpackhi_epi64, _mm256_unpacklo_epi32,
    _mm256_unpacklo_epi64, _mm256_xor_si256,
};

use zeroize::Zeroize;

/// Blocks per step.
pub const STEP_BLOCKS: usize = 8;
/// Bytes per step.
pub const STEP_BYTES: usize = STEP_BLOCKS * 64;

/// "expand 32-byte k".
const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

pub use crate::drbg::simd_path::Use;

static USE: crate::drbg::simd_path::Choice = crate::drbg::simd_path::Choice::new();

/// Chooses when the generator uses this path (process-wide; for tests and benchmarks).
pub fn set_use(choice: Use) {
    USE.set(choice);
}

/// Whether the CPU can run this path.
pub fn supported() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// Whether the generator should use this path now: by default wherever the crate would not
/// run its sixteen-block backend (built with `--cfg chacha20_avx512`, taken on CPUs with
/// AVX512F and AVX512VL); otherwise the crate's four-block AVX2 code would.
pub fn chosen() -> bool {
    USE.take(supported(), || {
        let crate_wide = cfg!(chacha20_avx512)
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vl");
        !crate_wide
    })
}

/// A ChaCha20 key in words, wiped on drop.
pub struct Keystream8 {
    key: [u32; 8],
}

impl Drop for Keystream8 {
    fn drop(&mut self) {
        self.key.zeroize();
    }
}

impl Keystream8 {
    /// The key's words, or `None` when the CPU lacks AVX2.
    pub fn new(key: &[u8; 32]) -> Option<Self> {
        if !supported() {
            return None;
        }
        let mut words = [0u32; 8];
        for (word, bytes) in words.iter_mut().zip(key.chunks_exact(4)) {
            *word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        Some(Keystream8 { key: words })
    }

    /// Writes blocks `counter`, `counter + 1`, ... (the 64-bit block counter wrapping) into
    /// the whole 512-byte steps of `out` and returns the number of blocks written. Bytes past
    /// the last whole step are left untouched.
    pub fn blocks(&self, counter: u64, out: &mut [u8]) -> u64 {
        let mut written = 0u64;
        for step in out.chunks_exact_mut(STEP_BYTES) {
            let step: &mut [u8; STEP_BYTES] = step.try_into().expect("a whole step");
            // SAFETY: a `Keystream8` exists only where `supported()` held: AVX2.
            unsafe { eight_blocks(&self.key, counter.wrapping_add(written), step) };
            written += STEP_BLOCKS as u64;
        }
        written
    }
}

/// `x <<< 16` and `x <<< 8` in each 32-bit lane, as byte shuffles' masks.
#[inline]
#[target_feature(enable = "avx2")]
fn rotations() -> (__m256i, __m256i) {
    (
        _mm256_setr_epi8(
            2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14,
            15, 12, 13,
        ),
        _mm256_setr_epi8(
            3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14, 3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15,
            12, 13, 14,
        ),
    )
}

/// Four quarter rounds (RFC 8439 section 2.1) on eight blocks at once, interleaved step by
/// step so the four independent chains are side by side for the scheduler. A macro: the
/// indices must be constants for the state to stay in registers.
macro_rules! quarters {
    ($x:ident, $rot16:ident, $rot8:ident, $([$a:literal, $b:literal, $c:literal, $d:literal]),+) => {
        $( $x[$a] = _mm256_add_epi32($x[$a], $x[$b]); )+
        $( $x[$d] = _mm256_shuffle_epi8(_mm256_xor_si256($x[$d], $x[$a]), $rot16); )+
        $( $x[$c] = _mm256_add_epi32($x[$c], $x[$d]); )+
        $(
            let t = _mm256_xor_si256($x[$b], $x[$c]);
            $x[$b] = _mm256_or_si256(_mm256_slli_epi32::<12>(t), _mm256_srli_epi32::<20>(t));
        )+
        $( $x[$a] = _mm256_add_epi32($x[$a], $x[$b]); )+
        $( $x[$d] = _mm256_shuffle_epi8(_mm256_xor_si256($x[$d], $x[$a]), $rot8); )+
        $( $x[$c] = _mm256_add_epi32($x[$c], $x[$d]); )+
        $(
            let t = _mm256_xor_si256($x[$b], $x[$c]);
            $x[$b] = _mm256_or_si256(_mm256_slli_epi32::<7>(t), _mm256_srli_epi32::<25>(t));
        )+
    };
}

/// Blocks `counter .. counter + 8` into `out`.
#[target_feature(enable = "avx2")]
unsafe fn eight_blocks(key: &[u32; 8], counter: u64, out: &mut [u8; STEP_BYTES]) {
    // Opaque to the optimizer: with the masks known, LLVM rewrites the 16-bit rotation as two
    // word shuffles and moves the 8-bit one's shuffle through the XOR before it (two shuffles),
    // fourteen operations per quarter round instead of twelve (measured: 15 % slower).
    let (rot16, rot8) = std::hint::black_box(rotations());
    let lane = |j: u64| counter.wrapping_add(j);
    #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
    let (low, high) = {
        let low = |j| lane(j) as u32 as i32;
        let high = |j| (lane(j) >> 32) as u32 as i32;
        (
            _mm256_setr_epi32(low(0), low(1), low(2), low(3), low(4), low(5), low(6), low(7)),
            _mm256_setr_epi32(high(0), high(1), high(2), high(3), high(4), high(5), high(6), high(7)),
        )
    };
    #[allow(clippy::cast_possible_wrap)]
    let splat = |w: u32| _mm256_set1_epi32(w as i32);
    let input = [
        splat(SIGMA[0]),
        splat(SIGMA[1]),
        splat(SIGMA[2]),
        splat(SIGMA[3]),
        splat(key[0]),
        splat(key[1]),
        splat(key[2]),
        splat(key[3]),
        splat(key[4]),
        splat(key[5]),
        splat(key[6]),
        splat(key[7]),
        low,
        high,
        splat(0),
        splat(0),
    ];
    let mut x = input;
    for _ in 0..10 {
        quarters!(x, rot16, rot8, [0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]);
        quarters!(x, rot16, rot8, [0, 5, 10, 15], [1, 6, 11, 12], [2, 7, 8, 13], [3, 4, 9, 14]);
    }
    for (word, start) in x.iter_mut().zip(input) {
        *word = _mm256_add_epi32(*word, start);
    }
    // Words 0..8 are the first 32 bytes of each block, words 8..16 the second.
    for half in 0..2 {
        let rows = transpose(&x[half * 8..half * 8 + 8]);
        for (block, row) in rows.into_iter().enumerate() {
            let at = block * 64 + half * 32;
            // SAFETY: `at + 32 <= 7 * 64 + 32 + 32 = STEP_BYTES`; unaligned store.
            unsafe { _mm256_storeu_si256(out[at..at + 32].as_mut_ptr().cast(), row) };
        }
    }
}

/// The 8×8 transpose of 32-bit words: `rows[j]` holds lane `j` of `x[0..8]`, in order.
#[inline]
#[target_feature(enable = "avx2")]
fn transpose(x: &[__m256i]) -> [__m256i; 8] {
    // Within each 128-bit half (blocks 0..4 low, 4..8 high): pairs, then quads.
    let t = [
        _mm256_unpacklo_epi32(x[0], x[1]),
        _mm256_unpackhi_epi32(x[0], x[1]),
        _mm256_unpacklo_epi32(x[2], x[3]),
        _mm256_unpackhi_epi32(x[2], x[3]),
        _mm256_unpacklo_epi32(x[4], x[5]),
        _mm256_unpackhi_epi32(x[4], x[5]),
        _mm256_unpacklo_epi32(x[6], x[7]),
        _mm256_unpackhi_epi32(x[6], x[7]),
    ];
    // `q[k]`: words 0..4 (k < 4) or 4..8 of blocks k % 4 (low half) and k % 4 + 4 (high).
    let q = [
        _mm256_unpacklo_epi64(t[0], t[2]),
        _mm256_unpackhi_epi64(t[0], t[2]),
        _mm256_unpacklo_epi64(t[1], t[3]),
        _mm256_unpackhi_epi64(t[1], t[3]),
        _mm256_unpacklo_epi64(t[4], t[6]),
        _mm256_unpackhi_epi64(t[4], t[6]),
        _mm256_unpacklo_epi64(t[5], t[7]),
        _mm256_unpackhi_epi64(t[5], t[7]),
    ];
    let mut rows = [q[0]; 8];
    for k in 0..4 {
        rows[k] = _mm256_permute2x128_si256::<0x20>(q[k], q[k + 4]);
        rows[k + 4] = _mm256_permute2x128_si256::<0x31>(q[k], q[k + 4]);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use chacha20::ChaCha20LegacyCore;
    use chacha20::cipher::{KeyIvInit, StreamCipherCore};
    use proptest::prelude::*;

    fn crate_keystream(key: &[u8; 32], counter: u64, len: usize) -> Vec<u8> {
        let mut core = ChaCha20LegacyCore::new(key.into(), &[0u8; 8].into());
        core.set_block_pos(counter);
        let mut out = vec![0u8; len];
        let (blocks, _) = chacha20::cipher::array::Array::slice_as_chunks_mut(&mut out);
        core.write_keystream_blocks(blocks);
        out
    }

    /// RFC 8439 appendix A.1's block vectors whose 96-bit nonce is zero: with a zero nonce the
    /// IETF layout's words 12..16 are the original layout's 64-bit counter and zero nonce, so
    /// these are blocks of this keystream (tests/data/chacha20.json).
    #[test]
    fn rfc8439_zero_nonce_blocks() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/chacha20.json");
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let text = |c: &serde_json::Value, k: &str| c[k].as_str().unwrap().to_owned();
        let mut checked = 0;
        for case in v["rfc8439"]["block_A_1"].as_array().unwrap() {
            if text(case, "nonce").bytes().any(|b| b != b'0') {
                continue;
            }
            let key: [u8; 32] =
                data_encoding::HEXLOWER.decode(text(case, "key").as_bytes()).unwrap().try_into().unwrap();
            let Some(ks) = Keystream8::new(&key) else {
                eprintln!("skipped: this CPU has no AVX2");
                return;
            };
            let mut out = [0u8; STEP_BYTES];
            ks.blocks(case["counter"].as_u64().unwrap(), &mut out);
            assert_eq!(
                data_encoding::HEXLOWER.encode(&out[..64]),
                text(case, "keystream_block"),
                "{}",
                text(case, "name")
            );
            checked += 1;
        }
        assert_eq!(checked, 4, "A.1 test vectors 1 to 4");
    }

    proptest! {
        /// Block for block the crate's keystream, from random counters including ones whose
        /// eight lanes cross the 32-bit word carry and the 64-bit wrap.
        #[test]
        fn agrees_with_the_crate(
            key in any::<[u8; 32]>(),
            counter in prop_oneof![any::<u64>(), (0u64..16).prop_map(|d| u64::from(u32::MAX) - d)],
            steps in 0usize..5,
            extra in 0usize..STEP_BYTES,
        ) {
            let Some(ks) = Keystream8::new(&key) else { return Ok(()) };
            let len = steps * STEP_BYTES;
            let mut out = vec![0xa5u8; len + extra];
            prop_assert_eq!(ks.blocks(counter, &mut out), (steps * STEP_BLOCKS) as u64);
            if counter.checked_add((steps * STEP_BLOCKS) as u64).is_some() {
                prop_assert_eq!(&out[..len], &crate_keystream(&key, counter, len)[..]);
            }
            prop_assert!(out[len..].iter().all(|&b| b == 0xa5), "the tail is left alone");
        }
    }
}
