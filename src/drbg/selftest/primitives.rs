//! Known answers of the non-SP 800-90A generators' primitives (ChaCha20, keyed BLAKE3, Randen)
//! and the checks of CTR_DRBG's keystream paths for large requests, which the CAVP records
//! (one small Generate each) do not reach.

use data_encoding::HEXLOWER;

use super::outcome::Outcome;
use super::vectors;
use crate::drbg::chacha20::{ChaCha20Drbg, ChaChaCore};
use crate::drbg::ctr_drbg::CtrKeySize;
use crate::drbg::fast_key_erasure::KeystreamCore;
use crate::drbg::randen::RandenCore;

/// CTR_DRBG's keystream paths for key size `C`: the `aes` crate's batches, and drbgd's own
/// loops where one is chosen.
pub(super) fn ctr_keystreams<C: CtrKeySize>() -> [Outcome; 2] {
    [
        Outcome::of("keystream batches", batches_agree::<C>()),
        Outcome::of("own keystream loops", own_keystream_agrees::<C>()),
    ]
}

/// Keyed BLAKE3 of the empty input against [`vectors::BLAKE3_KEYED_EMPTY`].
pub(super) fn blake3_known_answer() -> bool {
    hex(blake3::keyed_hash(vectors::BLAKE3_KEY, b"").as_bytes()) == vectors::BLAKE3_KEYED_EMPTY
}

/// The Randen permutation of the zero state against [`vectors::RANDEN_ZERO_GENERATE`].
pub(super) fn randen_known_answer() -> bool {
    let mut core = RandenCore::from_state([0u8; 256]);
    core.generate();
    hex(&core.state()[..32]) == vectors::RANDEN_ZERO_GENERATE
}

/// The ChaCha20 block function against [`vectors::CHACHA_A1_1`], and the production generator's
/// first output against the same keystream.
pub(super) fn chacha20_known_answer() -> bool {
    use rand_core::Rng;
    let mut out = [0u8; 64];
    // The production generator's first key is used as-is for its first keystream batch,
    // whose first 32 bytes become the next key; the rest is output.
    let mut core = <ChaChaCore as KeystreamCore>::from_key(&[0u8; 32]);
    KeystreamCore::keystream(&mut core, &mut out);
    let mut drbg = ChaCha20Drbg::new(&[0u8; 32]);
    let mut first = [0u8; 32];
    drbg.fill_bytes(&mut first);
    hex(&out) == vectors::CHACHA_A1_1 && first[..] == out[32..] && chacha_avx2_agrees()
}

/// Where runs of eight blocks take drbgd's AVX2 keystream (`chacha20::avx2::chosen`), its
/// first block of the zero key must be [`vectors::CHACHA_A1_1`] and two steps across the 32-bit
/// counter carry must equal the crate's core: the answer above runs the crate's core only.
#[cfg(target_arch = "x86_64")]
pub(super) fn chacha_avx2_agrees() -> bool {
    use crate::drbg::chacha20::avx2;
    use chacha20::cipher::{KeyIvInit, StreamCipherCore, array::Array};
    if !avx2::chosen() {
        return true;
    }
    let Some(wide) = avx2::Keystream8::new(&[0; 32]) else { return false };
    let mut ours = [0u8; 2 * avx2::STEP_BYTES];
    wide.blocks(0, &mut ours[..avx2::STEP_BYTES]);
    if hex(&ours[..64]) != vectors::CHACHA_A1_1 {
        return false;
    }
    let start = u64::from(u32::MAX) - 3;
    wide.blocks(start, &mut ours);
    let mut core = chacha20::ChaCha20LegacyCore::new(&[0; 32].into(), &[0; 8].into());
    core.set_block_pos(start);
    let mut theirs = [0u8; 2 * avx2::STEP_BYTES];
    core.write_keystream_blocks(Array::slice_as_chunks_mut(&mut theirs).0);
    ours == theirs
}

#[cfg(not(target_arch = "x86_64"))]
pub(super) fn chacha_avx2_agrees() -> bool {
    true
}

/// Large requests run their counter blocks through `ctr_drbg::ctr_keystream` (a whole batch,
/// then the blocks after it, in one pass through the `aes` crate's backend), which the CAVP
/// answers (small requests) do not reach: its blocks for a fixed key and counters across the
/// 64-bit carry must equal the crate's one-block encryption.
fn batches_agree<C: CtrKeySize>() -> bool {
    let Ok(cipher) = <C as aes::cipher::KeyInit>::new_from_slice(&fixed_key::<C>()) else { return false };
    let start = u128::from(u64::MAX - 40);
    let mut run = [aes::Block::default(); 69];
    let (batch, after) = run.split_at_mut(64);
    crate::drbg::ctr_drbg::ctr_keystream(&cipher, start, batch, after) == start + 69
        && are_counters(&cipher, start, aes::Block::slice_as_flattened(&run))
}

/// Where large requests take one of drbgd's own keystream loops (`ctr_drbg::x86::chosen`),
/// its blocks must equal the `aes` crate's: the CAVP answers run the small-request path only.
#[cfg(target_arch = "x86_64")]
fn own_keystream_agrees<C: CtrKeySize>() -> bool {
    crate::drbg::ctr_drbg::x86::chosen().is_none_or(own_path_agrees::<C>)
}

/// `path`'s blocks for a fixed key and counters across the 64-bit carry (a whole step, single
/// registers and a single block, on the fast and the carrying counter paths) against the
/// `aes` crate's one-block encryption.
#[cfg(target_arch = "x86_64")]
pub(super) fn own_path_agrees<C: CtrKeySize>(path: crate::drbg::ctr_drbg::x86::Path) -> bool {
    let key = fixed_key::<C>();
    let Some(mut keys) = crate::drbg::ctr_drbg::x86::RoundKeys::new(path) else { return false };
    let Ok(cipher) = <C as aes::cipher::KeyInit>::new_from_slice(&key) else { return false };
    let start = u128::from(u64::MAX - 10);
    let mut ours = [0u8; 19 * 16];
    keys.expand(&key).ctr(start, &mut ours) == start + 19 && are_counters(&cipher, start, &ours)
}

/// A fixed key of `C`'s length for the keystream checks.
fn fixed_key<C: CtrKeySize>() -> Vec<u8> {
    let key_len = <C as aes::cipher::KeySizeUser>::key_size();
    (0..key_len as u8).map(|i| i.wrapping_mul(37) ^ 0x5c).collect()
}

/// Whether `blocks` are E(start + 1), E(start + 2), ... under `cipher`, one block at a time.
fn are_counters<C: CtrKeySize>(cipher: &C, start: u128, blocks: &[u8]) -> bool {
    blocks.chunks_exact(16).enumerate().all(|(i, block)| {
        let mut b = aes::Block::from((start + 1 + i as u128).to_be_bytes());
        aes::cipher::BlockCipherEncrypt::encrypt_block(cipher, &mut b);
        b[..] == *block
    })
}

#[cfg(not(target_arch = "x86_64"))]
fn own_keystream_agrees<C: CtrKeySize>() -> bool {
    true
}

fn hex(bytes: &[u8]) -> String {
    HEXLOWER.encode(bytes)
}
