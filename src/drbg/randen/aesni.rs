//! The Randen permutation on x86-64 with AES-NI, all sixteen blocks kept in vector registers.
//!
//! The portable path (`aes::hazmat::cipher_round_par`) stores and reloads the state around
//! every AES round, which costs more than the rounds themselves; Randen's speed depends on
//! keeping the state in registers, as Abseil's `randen_hwaes` does. This file and `fork.rs` are
//! drbgd's only `unsafe`: calling a `target_feature` function once the CPU is known to have the
//! feature, and unaligned 16-byte loads and stores through references.

use core::arch::x86_64::{__m128i, _mm_aesenc_si128, _mm_loadu_si128, _mm_storeu_si128};

use aes::hazmat::Block8;

use crate::drbg::randen_keys::{ROUNDS, SHUFFLE};

/// Runs the permutation with AES-NI and returns `true`, or returns `false` (state untouched)
/// when the CPU lacks AES-NI.
pub(super) fn permute(state: &mut [u128; 16], keys: &[Block8; ROUNDS]) -> bool {
    if !std::arch::is_x86_feature_detected!("aes") {
        return false;
    }
    // SAFETY: the only requirement of `permute_aesni` is a CPU with AES-NI, checked above.
    unsafe { permute_aesni(state, keys) };
    true
}

/// Loads a 16-byte value (a state word or a round-key block).
#[inline(always)]
fn load<T: Copy>(x: &T) -> __m128i {
    const { assert!(size_of::<T>() == 16) };
    // SAFETY: `x` is valid for reading its 16 bytes; `loadu` has no alignment requirement.
    unsafe { _mm_loadu_si128(core::ptr::from_ref(x).cast()) }
}

#[inline(always)]
fn store(x: &mut u128, v: __m128i) {
    // SAFETY: `x` is valid for writing 16 bytes; `storeu` has no alignment requirement.
    unsafe { _mm_storeu_si128(core::ptr::from_mut(x).cast(), v) }
}

/// 17 rounds of: odd block `2j+1` ^= AES round(AES round(block `2j`) ^ key), for the eight
/// pairs, then the block shuffle (register renaming once unrolled).
#[target_feature(enable = "aes")]
fn permute_aesni(state: &mut [u128; 16], keys: &[Block8; ROUNDS]) {
    let mut b: [__m128i; 16] = core::array::from_fn(|i| load(&state[i]));
    for round_keys in keys {
        for j in 0..8 {
            let f = _mm_aesenc_si128(b[2 * j], load(&round_keys[j]));
            b[2 * j + 1] = _mm_aesenc_si128(f, b[2 * j + 1]);
        }
        b = core::array::from_fn(|i| b[SHUFFLE[i]]);
    }
    for (s, v) in state.iter_mut().zip(b) {
        store(s, v);
    }
}
