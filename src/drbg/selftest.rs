//! Start-up self-tests: per algorithm one known-answer test of the primitive (the
//! `known_answer_test` of its [`AlgorithmInfo`](super::AlgorithmInfo) row, defined here) and one
//! seeded round trip of the full mechanism. Any failure means drbgd must not serve.

use data_encoding::HEXLOWER;

use super::chacha20::ChaCha20Drbg;
use super::ctr_drbg::{CtrDrbg, CtrKeySize};
use super::hash_drbg::{HashSha256Drbg, HashSha512Drbg};
use super::hmac_drbg::{HmacSha256Drbg, HmacSha512Drbg};
use super::randen::RandenCore;
use super::{Algorithm, Drbg, WithMechanism};

/// A failed self-test.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{alg} self-test failed: {what}")]
pub struct SelfTestError {
    /// The algorithm that failed.
    pub alg: Algorithm,
    /// Which test failed.
    pub what: &'static str,
}

/// An SP 800-90A known answer, from a CAVP no_reseed record without personalization string or
/// additional input: entropy, nonce, and the second Generate's output (512 bits for CTR_DRBG,
/// 1024 for SHA-256, 2048 for SHA-512).
struct DrbgKat {
    entropy: &'static str,
    nonce: &'static str,
    returned: &'static str,
}

/// NIST CAVP CTR_DRBG.rsp (no_reseed), `[AES-256 use df]`, first group, COUNT = 0.
const AES256_KAT: DrbgKat = DrbgKat {
    entropy: "36401940fa8b1fba91a1661f211d78a0b9389a74e5bccfece8d766af1a6d3b14",
    nonce: "496f25b0f1301b4f501be30380a137eb",
    returned: "5862eb38bd558dd978a696e6df164782ddd887e7e9a6c9f3f1fbafb78941b535\
               a64912dfd224c6dc7454e5250b3d97165e16260c2faf1cc7735cb75fb4f07e1d",
};

/// NIST CAVP CTR_DRBG.rsp (no_reseed), `[AES-192 use df]`, group without inputs, COUNT = 0
/// (OpenSSL's copy, tests/data/ctr_drbg_aes192_df.txt).
const AES192_KAT: DrbgKat = DrbgKat {
    entropy: "4d5be91999c1dc6ae2e5f6deb563b125bc8439e85f2576fc",
    nonce: "11e1c2d4d4f73b9c457fcaa06f4af22e",
    returned: "53c2c0237edf9425842ab91c63723616e98bb6c12d16bf8087772d0a080d289f\
               8b4f35dfdaef5b11cd588814c6bc01dc7e23b9bdd39c0aee7407f71054a7c9aa",
};

/// NIST CAVP CTR_DRBG.rsp (no_reseed), `[AES-128 use df]`, first group, COUNT = 0.
const AES128_KAT: DrbgKat = DrbgKat {
    entropy: "890eb067acf7382eff80b0c73bc872c6",
    nonce: "aad471ef3ef1d203",
    returned: "a5514ed7095f64f3d0d3a5760394ab42062f373a25072a6ea6bcfd8489e94af6\
               cf18659fea22ed1ca0a9e33f718b115ee536b12809c31b72b08ddd8be1910fa3",
};

/// NIST CAVP Hash_DRBG.rsp (no_reseed), `[SHA-256]`, first group (no personalization string, no
/// additional input), COUNT = 0: tests/data/hash_drbg_no_reseed.rsp, line 4112 (its group's header at 4104).
const HASH_SHA256_KAT: DrbgKat = DrbgKat {
    entropy: "a65ad0f345db4e0effe875c3a2e71f42c7129d620ff5c119a9ef55f05185e0fb",
    nonce: "8581f9317517276e06e9607ddbcbcc2e",
    returned: "d3e160c35b99f340b2628264d1751060e0045da383ff57a57d73a673d2b8d80d\
               aaf6a6c35a91bb4579d73fd0c8fed111b0391306828adfed528f018121b3febd\
               c343e797b87dbb63db1333ded9d1ece177cfa6b71fe8ab1da46624ed6415e51c\
               cde2c7ca86e283990eeaeb91120415528b2295910281b02dd431f4c9f70427df",
};

/// NIST CAVP Hash_DRBG.rsp (no_reseed), `[SHA-512]`, first group (no personalization string, no
/// additional input), COUNT = 0: tests/data/hash_drbg_no_reseed.rsp, line 8208 (its group's header at 8200).
const HASH_SHA512_KAT: DrbgKat = DrbgKat {
    entropy: "6b50a7d8f8a55d7a3df8bb40bcc3b722d8708de67fda010b03c4c84d72096f8c",
    nonce: "3ec649cc6256d9fa31db7a2904aaf025",
    returned: "95b7f17e9802d3577392c6a9c08083b67dd1292265b5f42d237f1c55bb9b10bf\
               cfd82c77a378b8266a0099143b3c2d64611eeeb69acdc055957c139e8b190c7a\
               06955f2c797c2778de940396a501f40e91396acf8d7e45ebdbb53bbf8c975230\
               d2f0ff9106c76119ae498e7fbc03d90f8e4c51627aed5c8d4263d5d2b978873a\
               0de596ee6dc7f7c29e37eee8b34c90dd1cf6a9ddb22b4cbd086b14b35de93da2\
               d5cb1806698cbd7bbb67bfe3d31fd2d1dbd2a1e058a3eb99d7e51f1a938eed5e\
               1c1de23a6b4345d3191409f92f39b3670d8dbfb635d8e6a36932d81033d1448d\
               63b403ddf88e121b6e819ac381226c1321e4b08644f6727c368c5a9f7a4b3ee2",
};

/// NIST CAVP HMAC_DRBG.rsp (no_reseed), `[SHA-256]`, first group (no personalization string, no
/// additional input), COUNT = 0: tests/data/hmac_drbg_no_reseed.rsp, line 4112 (its group's header at 4104).
const HMAC_SHA256_KAT: DrbgKat = DrbgKat {
    entropy: "ca851911349384bffe89de1cbdc46e6831e44d34a4fb935ee285dd14b71a7488",
    nonce: "659ba96c601dc69fc902940805ec0ca8",
    returned: "e528e9abf2dece54d47c7e75e5fe302149f817ea9fb4bee6f4199697d04d5b89\
               d54fbb978a15b5c443c9ec21036d2460b6f73ebad0dc2aba6e624abf07745bc1\
               07694bb7547bb0995f70de25d6b29e2d3011bb19d27676c07162c8b5ccde0668\
               961df86803482cb37ed6d5c0bb8d50cf1f50d476aa0458bdaba806f48be9dcb8",
};

/// NIST CAVP HMAC_DRBG.rsp (no_reseed), `[SHA-512]`, first group (no personalization string, no
/// additional input), COUNT = 0: tests/data/hmac_drbg_no_reseed.rsp, line 8208 (its group's header at 8200).
const HMAC_SHA512_KAT: DrbgKat = DrbgKat {
    entropy: "35049f389a33c0ecb1293238fd951f8ffd517dfde06041d32945b3e26914ba15",
    nonce: "f7328760be6168e6aa9fb54784989a11",
    returned: "e76491b0260aacfded01ad39fbf1a66a88284caa5123368a2ad9330ee48335e3\
               c9c9ba90e6cbc9429962d60c1a6661edcfaa31d972b8264b9d4562cf18494128\
               a092c17a8da6f3113e8a7edfcd4427082bd390675e9662408144971717303d8d\
               c352c9e8b95e7f35fa2ac9f549b292bc7c4bc7f01ee0a577859ef6e82d79ef23\
               892d167c140d22aac32b64ccdfeee2730528a38763b24227f91ac3ffe47fb115\
               38e435307e77481802b0f613f370ffb0dbeab774fe1efbb1a80d01154a9459e7\
               3ad361108bbc86b0914f095136cbe634555ce0bb263618dc5c367291ce082551\
               8987154fe9ecb052b3f0a256fcc30cc14572531c9628973639beda456f2bddf6",
};

/// RFC 8439 appendix A.1 test vector #1: all-zero key and nonce, block 0.
const CHACHA_A1_1: &str = "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7\
                           da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586";

/// Official BLAKE3 test vectors: keyed_hash of the empty input under
/// "whats the Elvish word for friend" (first 32 bytes).
const BLAKE3_KEYED_EMPTY: &str = "92b2b75604ed3c761f9d6f62392c8a9227ad0ea3f09573e783f1498a4ed60d26";
const BLAKE3_KEY: &[u8; 32] = b"whats the Elvish word for friend";

/// Abseil randen_test.cc: Generate on the all-zero state, first 32 bytes of the result.
const RANDEN_ZERO_GENERATE: &str = "eed3e60e0934656cc633539d9b2b4e047739434e134fc1c3ee1004d97cf4a9dd";

/// The result of one algorithm's self-tests.
pub fn run(alg: Algorithm) -> Result<(), SelfTestError> {
    let fail = |what| SelfTestError { alg, what };
    if !(alg.info().known_answer_test)() {
        return Err(fail("known-answer test"));
    }
    if !alg.with_mechanism(RoundTrip) {
        return Err(fail("seeded round trip"));
    }
    Ok(())
}

/// Runs every algorithm's self-tests.
///
/// # Errors
/// The first failure.
pub fn run_all() -> Result<(), SelfTestError> {
    Algorithm::ALL.into_iter().try_for_each(run)
}

/// AES-256 CTR_DRBG against [`AES256_KAT`].
pub(super) fn aes256ctr_known_answer() -> bool {
    ctr_kat::<aes::Aes256Enc>(&AES256_KAT)
}

/// AES-192 CTR_DRBG against [`AES192_KAT`].
pub(super) fn aes192ctr_known_answer() -> bool {
    ctr_kat::<aes::Aes192Enc>(&AES192_KAT)
}

/// AES-128 CTR_DRBG against [`AES128_KAT`].
pub(super) fn aes128ctr_known_answer() -> bool {
    ctr_kat::<aes::Aes128Enc>(&AES128_KAT)
}

/// Hash_DRBG over SHA-256 against [`HASH_SHA256_KAT`].
pub(super) fn hash_sha256_known_answer() -> bool {
    drbg_kat::<HashSha256Drbg>(&HASH_SHA256_KAT)
}

/// Hash_DRBG over SHA-512 against [`HASH_SHA512_KAT`].
pub(super) fn hash_sha512_known_answer() -> bool {
    drbg_kat::<HashSha512Drbg>(&HASH_SHA512_KAT)
}

/// HMAC_DRBG over SHA-256 against [`HMAC_SHA256_KAT`].
pub(super) fn hmac_sha256_known_answer() -> bool {
    drbg_kat::<HmacSha256Drbg>(&HMAC_SHA256_KAT)
}

/// HMAC_DRBG over SHA-512 against [`HMAC_SHA512_KAT`].
pub(super) fn hmac_sha512_known_answer() -> bool {
    drbg_kat::<HmacSha512Drbg>(&HMAC_SHA512_KAT)
}

/// Keyed BLAKE3 of the empty input against [`BLAKE3_KEYED_EMPTY`].
pub(super) fn blake3_known_answer() -> bool {
    hex(blake3::keyed_hash(BLAKE3_KEY, b"").as_bytes()) == BLAKE3_KEYED_EMPTY
}

/// The Randen permutation of the zero state against [`RANDEN_ZERO_GENERATE`].
pub(super) fn randen_known_answer() -> bool {
    let mut core = RandenCore::from_state([0u8; 256]);
    core.generate();
    hex(&core.state()[..32]) == RANDEN_ZERO_GENERATE
}

/// The ChaCha20 block function against [`CHACHA_A1_1`], and the production generator's first
/// output against the same keystream.
pub(super) fn chacha20_known_answer() -> bool {
    use rand_core::Rng;
    let mut out = [0u8; 64];
    // The production generator's first key is used as-is for its first keystream batch,
    // whose first 32 bytes become the next key; the rest is output.
    let mut core =
        <super::chacha20::ChaChaCore as super::fast_key_erasure::KeystreamCore>::from_key(&[0u8; 32]);
    super::fast_key_erasure::KeystreamCore::keystream(&mut core, &mut out);
    let mut drbg = ChaCha20Drbg::new(&[0u8; 32]);
    let mut first = [0u8; 32];
    drbg.fill_bytes(&mut first);
    hex(&out) == CHACHA_A1_1 && first[..] == out[32..] && chacha_avx2_agrees()
}

/// Where runs of eight blocks take drbgd's AVX2 keystream (`chacha20::avx2::chosen`), its
/// first block of the zero key must be [`CHACHA_A1_1`] and two steps across the 32-bit counter
/// carry must equal the crate's core: the answer above runs the crate's core only.
#[cfg(target_arch = "x86_64")]
fn chacha_avx2_agrees() -> bool {
    use super::chacha20::avx2;
    use chacha20::cipher::{KeyIvInit, StreamCipherCore, array::Array};
    if !avx2::chosen() {
        return true;
    }
    let Some(wide) = avx2::Keystream8::new(&[0; 32]) else { return false };
    let mut ours = [0u8; 2 * avx2::STEP_BYTES];
    wide.blocks(0, &mut ours[..avx2::STEP_BYTES]);
    if hex(&ours[..64]) != CHACHA_A1_1 {
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
fn chacha_avx2_agrees() -> bool {
    true
}

fn ctr_kat<C: CtrKeySize>(kat: &DrbgKat) -> bool {
    drbg_kat::<CtrDrbg<C>>(kat) && batches_agree::<C>() && own_keystream_agrees::<C>()
}

/// The CAVP procedure for a no_reseed record, through the [`Drbg`] trait the pool drives:
/// instantiate, generate twice, the second output compared with the record's.
fn drbg_kat<G: Drbg>(kat: &DrbgKat) -> bool {
    let decode = |s: &str| HEXLOWER.decode(s.as_bytes());
    let (Ok(entropy), Ok(nonce), Ok(returned)) =
        (decode(kat.entropy), decode(kat.nonce), decode(kat.returned))
    else {
        return false;
    };
    let mut drbg = G::instantiate(&entropy, &nonce, &[]);
    let mut out = vec![0u8; returned.len()];
    let ok = drbg.generate(&mut out, &[]).is_ok() && drbg.generate(&mut out, &[]).is_ok();
    ok && out == returned
}

/// Large requests run their counter blocks through `ctr_drbg::ctr_keystream` (a whole batch,
/// then the blocks after it, in one pass through the `aes` crate's backend), which the CAVP
/// answers above do not reach: its blocks for a fixed key and counters across the 64-bit carry
/// must equal the crate's one-block encryption.
fn batches_agree<C: CtrKeySize>() -> bool {
    let Ok(cipher) = <C as aes::cipher::KeyInit>::new_from_slice(&fixed_key::<C>()) else { return false };
    let start = u128::from(u64::MAX - 40);
    let mut run = [aes::Block::default(); 69];
    let (batch, after) = run.split_at_mut(64);
    super::ctr_drbg::ctr_keystream(&cipher, start, batch, after) == start + 69
        && are_counters(&cipher, start, aes::Block::slice_as_flattened(&run))
}

/// Where large requests take one of drbgd's own keystream loops (`ctr_drbg::x86::chosen`),
/// its blocks must equal the `aes` crate's: the CAVP answers above run the small-request path
/// only.
#[cfg(target_arch = "x86_64")]
fn own_keystream_agrees<C: CtrKeySize>() -> bool {
    super::ctr_drbg::x86::chosen().is_none_or(own_path_agrees::<C>)
}

/// `path`'s blocks for a fixed key and counters across the 64-bit carry (a whole step, single
/// registers and a single block, on the fast and the carrying counter paths) against the
/// `aes` crate's one-block encryption.
#[cfg(target_arch = "x86_64")]
fn own_path_agrees<C: CtrKeySize>(path: super::ctr_drbg::x86::Path) -> bool {
    let key = fixed_key::<C>();
    let Some(mut keys) = super::ctr_drbg::x86::RoundKeys::new(path) else { return false };
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

/// The seeded round trip, for any mechanism.
struct RoundTrip;

impl WithMechanism for RoundTrip {
    type Output = bool;

    fn run<G: Drbg>(self) -> bool {
        round_trip::<G>()
    }
}

/// Same seed → same output; another seed → other output; never all zero.
fn round_trip<G: Drbg>() -> bool {
    let mut a = G::instantiate(&[1u8; 48][..G::ENTROPY_LEN], &[2u8; 16][..G::NONCE_LEN], b"selftest");
    let mut b = G::instantiate(&[1u8; 48][..G::ENTROPY_LEN], &[2u8; 16][..G::NONCE_LEN], b"selftest");
    let mut c = G::instantiate(&[3u8; 48][..G::ENTROPY_LEN], &[2u8; 16][..G::NONCE_LEN], b"selftest");
    let (mut x, mut y, mut z) = ([0u8; 64], [0u8; 64], [0u8; 64]);
    let ok =
        a.generate(&mut x, &[]).is_ok() && b.generate(&mut y, &[]).is_ok() && c.generate(&mut z, &[]).is_ok();
    ok && x == y && x != z && x != [0u8; 64]
}

#[cfg(test)]
mod tests {
    #[test]
    fn all_pass() {
        super::run_all().unwrap();
    }

    /// The start-up check of drbgd's own keystream loops passes on each path the CPU can
    /// run, whatever its class (the path is passed in: no process-wide choice is touched).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_own_keystreams_are_checked_at_start_up() {
        use crate::drbg::ctr_drbg::x86::Path;
        for path in Path::ALL {
            if !path.supported() {
                eprintln!("SKIPPED ({path:?}): this CPU lacks its features");
                continue;
            }
            assert!(super::own_path_agrees::<aes::Aes128Enc>(path), "{path:?}");
            assert!(super::own_path_agrees::<aes::Aes192Enc>(path), "{path:?}");
            assert!(super::own_path_agrees::<aes::Aes256Enc>(path), "{path:?}");
        }
    }

    /// The start-up check of the eight-block AVX2 ChaCha20 keystream runs (and passes)
    /// wherever the CPU has AVX2, AVX-512 or not.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx2_chacha20_keystream_is_checked_at_start_up() {
        use crate::drbg::chacha20::avx2;
        if !avx2::supported() {
            eprintln!("SKIPPED: this CPU lacks AVX2");
            return;
        }
        avx2::set_use(avx2::Use::Always);
        assert!(super::chacha_avx2_agrees());
        avx2::set_use(avx2::Use::Auto);
    }
}
