//! Each algorithm's start-up self-tests, one function per row of the table
//! ([`crate::drbg::AlgorithmInfo::self_tests`]): the SP 800-90A tests (`sp800_90a`), CTR_DRBG's
//! keystream paths and the other generators' known answers (`primitives`).

use super::outcome::Outcome;
use super::{primitives, sp800_90a, vectors};
use crate::drbg::ctr_drbg::{Aes128CtrDrbg, Aes192CtrDrbg, Aes256CtrDrbg};
use crate::drbg::hash_drbg::{HashSha256Drbg, HashSha512Drbg};
use crate::drbg::hmac_drbg::{HmacSha256Drbg, HmacSha512Drbg};

/// CTR_DRBG over AES-256: the SP 800-90A tests and the keystream paths.
pub(crate) fn aes256ctr() -> Vec<Outcome> {
    let mut outcomes = sp800_90a::run::<Aes256CtrDrbg>(&vectors::AES256);
    outcomes.extend(primitives::ctr_keystreams::<aes::Aes256Enc>());
    outcomes
}

/// CTR_DRBG over AES-192: the SP 800-90A tests and the keystream paths.
pub(crate) fn aes192ctr() -> Vec<Outcome> {
    let mut outcomes = sp800_90a::run::<Aes192CtrDrbg>(&vectors::AES192);
    outcomes.extend(primitives::ctr_keystreams::<aes::Aes192Enc>());
    outcomes
}

/// CTR_DRBG over AES-128: the SP 800-90A tests and the keystream paths.
pub(crate) fn aes128ctr() -> Vec<Outcome> {
    let mut outcomes = sp800_90a::run::<Aes128CtrDrbg>(&vectors::AES128);
    outcomes.extend(primitives::ctr_keystreams::<aes::Aes128Enc>());
    outcomes
}

/// Hash_DRBG over SHA-256: the SP 800-90A tests.
pub(crate) fn hash_sha256() -> Vec<Outcome> {
    sp800_90a::run::<HashSha256Drbg>(&vectors::HASH_SHA256)
}

/// Hash_DRBG over SHA-512: the SP 800-90A tests.
pub(crate) fn hash_sha512() -> Vec<Outcome> {
    sp800_90a::run::<HashSha512Drbg>(&vectors::HASH_SHA512)
}

/// HMAC_DRBG over SHA-256: the SP 800-90A tests.
pub(crate) fn hmac_sha256() -> Vec<Outcome> {
    sp800_90a::run::<HmacSha256Drbg>(&vectors::HMAC_SHA256)
}

/// HMAC_DRBG over SHA-512: the SP 800-90A tests.
pub(crate) fn hmac_sha512() -> Vec<Outcome> {
    sp800_90a::run::<HmacSha512Drbg>(&vectors::HMAC_SHA512)
}

/// ChaCha20: the block function's known answer (and the production generator's first output).
pub(crate) fn chacha20() -> Vec<Outcome> {
    vec![Outcome::of("known answer", primitives::chacha20_known_answer())]
}

/// Keyed BLAKE3: its known answer.
pub(crate) fn blake3() -> Vec<Outcome> {
    vec![Outcome::of("known answer", primitives::blake3_known_answer())]
}

/// Randen: the permutation's known answer.
pub(crate) fn randen() -> Vec<Outcome> {
    vec![Outcome::of("known answer", primitives::randen_known_answer())]
}
