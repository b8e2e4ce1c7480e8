//! The ceilings `scripts/cipher-bench.sh` compares drbgd's generators with: the bare crates'
//! keystreams written to stdout in 384 KiB pieces, as `drbgd generate` writes (a BLAKE3 XOF
//! reader, the `chacha20` cipher's keystream, the `aes` crate in CTR mode through `ctr`).
//!
//! `chacha20-avx2` is drbgd's own eight-block AVX2 keystream alone (`drbg::chacha20::avx2`),
//! and `aes256ctr-own`, `aes128ctr-own` the CTR_DRBG's own AES loop (`drbg::ctr_drbg::x86`),
//! without the generator around them: the one this CPU's large Generates take, or on a host
//! with AVX-512 and VAES the one `drbgd generate --without-avx512` takes.
//!
//! usage: raw_keystream blake3|chacha20|chacha20-avx2|aes256ctr|aes128ctr|aes256ctr-own|aes128ctr-own BYTES > /dev/null

use std::io::Write;

use aes::cipher::{KeyIvInit, StreamCipher};

/// Fills a buffer with keystream.
type Fill = Box<dyn FnMut(&mut [u8])>;

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_default();
    let total: u64 = args.next().and_then(|n| n.parse().ok()).expect("usage: raw_keystream ALG BYTES");
    let mut buf = vec![0u8; 384 * 1024];
    let mut out = std::io::stdout().lock();
    let mut fill: Fill = match which.as_str() {
        "blake3" => {
            let mut reader = blake3::Hasher::new_keyed(&[7; 32]).finalize_xof();
            Box::new(move |b: &mut [u8]| reader.fill(b))
        }
        "chacha20" => {
            let mut c = chacha20::ChaCha20::new(&[7; 32].into(), &[0; 12].into());
            Box::new(move |b: &mut [u8]| c.apply_keystream(b))
        }
        "chacha20-avx2" => {
            let ks = drbgd::drbg::chacha20::avx2::Keystream8::new(&[7; 32]).expect("AVX2");
            let mut counter = 0;
            Box::new(move |b: &mut [u8]| counter += ks.blocks(counter, b))
        }
        "aes256ctr" => {
            let mut c = ctr::Ctr128BE::<aes::Aes256>::new(&[7; 32].into(), &[0; 16].into());
            Box::new(move |b: &mut [u8]| c.apply_keystream(b))
        }
        "aes128ctr" => {
            let mut c = ctr::Ctr128BE::<aes::Aes128>::new(&[7; 16].into(), &[0; 16].into());
            Box::new(move |b: &mut [u8]| c.apply_keystream(b))
        }
        #[cfg(target_arch = "x86_64")]
        own @ ("aes256ctr-own" | "aes128ctr-own") => {
            use drbgd::drbg::ctr_drbg::x86::{Path, RoundKeys};
            let key = if own.starts_with("aes256") { &[7u8; 32][..] } else { &[7u8; 16][..] };
            // The path the DRBG takes here, else (an AVX-512 and VAES host) the one a CPU
            // without AVX-512 takes, as `drbgd generate --without-avx512` does.
            let path = drbgd::drbg::ctr_drbg::x86::chosen()
                .or_else(|| Path::ALL.into_iter().find(|p| p.supported()))
                .expect("this CPU runs none of drbgd's own AES loops");
            let mut keys = RoundKeys::new(path).expect("a supported path");
            keys.expand(key);
            let mut counter = 0u128;
            Box::new(move |b: &mut [u8]| counter = keys.ctr(counter, b))
        }
        other => panic!("unknown keystream {other:?}"),
    };
    let mut left = total;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        // The ciphers XOR their keystream into the buffer (what `openssl speed` times too); the
        // bytes are not the keystream itself after the first piece, the time is the same.
        fill(&mut buf[..n]);
        out.write_all(&buf[..n]).expect("stdout");
        left -= n as u64;
    }
}
