//! The Rust DRBG benchmarking study's own constructions, measured in the same run as drbgd's
//! generators so the speed-up is a ratio, not a cross-machine comparison:
//! a fresh AES-256-CTR instance per call keyed through BLAKE3, rand_chacha's ChaCha20Rng, and a
//! keyed BLAKE3 XOF over a counter.

use ctr::cipher::{KeyIvInit, StreamCipher};
use rand_core::{Rng, SeedableRng};

type Generate = Box<dyn FnMut(&mut [u8])>;

/// The three baselines, labelled `study-<alg>`.
pub fn all() -> Vec<(&'static str, Generate)> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).expect("OS entropy for the baseline seeds");
    let mut counter = 0u64;
    let aes: Generate = Box::new(move |buf: &mut [u8]| {
        counter += 1;
        let mut material = seed.to_vec();
        material.extend_from_slice(&counter.to_le_bytes());
        let key = blake3::derive_key("drbg study aes-256-ctr key", &material);
        let mut cipher = ctr::Ctr128BE::<aes::Aes256>::new(&key.into(), &[0u8; 16].into());
        buf.fill(0);
        cipher.apply_keystream(buf);
    });
    let mut chacha = rand_chacha::ChaCha20Rng::from_seed(seed);
    let chacha: Generate = Box::new(move |buf: &mut [u8]| chacha.fill_bytes(buf));
    let key = blake3::derive_key("drbg study blake3 key", &seed);
    let mut xof_counter = 0u64;
    let blake: Generate = Box::new(move |buf: &mut [u8]| {
        xof_counter += 1;
        blake3::Hasher::new_keyed(&key).update(&xof_counter.to_le_bytes()).finalize_xof().fill(buf);
    });
    vec![("study-aes256ctr", aes), ("study-chacha20", chacha), ("study-blake3", blake)]
}
