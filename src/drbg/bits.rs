//! Bit strings as the Rust DRBG benchmarking study packs them, and fast counting of ones.
//!
//! A request for `n` bits is `ceil(n/8)` bytes; bit 0 is the most significant bit of byte 0
//! and the unused low bits of the last byte are zero.

use multiversion::multiversion;

/// Bytes needed to hold `n_bits` packed bits.
pub const fn byte_len(n_bits: u64) -> u64 {
    n_bits.div_ceil(8)
}

/// Zeroes the unused low bits of the last byte so `buf` holds exactly `n_bits` bits.
///
/// # Panics
/// If `buf.len() != byte_len(n_bits)`.
pub fn mask_tail(buf: &mut [u8], n_bits: u64) {
    assert_eq!(buf.len() as u64, byte_len(n_bits), "buffer length must be ceil(n/8)");
    let used = (n_bits % 8) as u32;
    if used != 0
        && let Some(last) = buf.last_mut()
    {
        *last &= 0xffu8 << (8 - used);
    }
}

/// Number of one bits in `buf`, using hardware popcount (AVX-512's VPOPCNTQ, eight words per
/// instruction, or AVX2, where present) chosen at run time, so the binary still runs on any
/// x86-64.
#[multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512vpopcntdq+avx2+popcnt",
    "x86_64+avx2+popcnt",
    "x86_64+popcnt",
    "aarch64+neon"
))]
pub fn count_ones(buf: &[u8]) -> u64 {
    let (words, tail) = buf.as_chunks::<8>();
    let mut total = 0u64;
    for w in words {
        total += u64::from(u64::from_ne_bytes(*w).count_ones());
    }
    for b in tail {
        total += u64::from(b.count_ones());
    }
    total
}

/// Number of ones among the first `n_bits` bits of `buf` (MSB-first), ignoring any bits past
/// `n_bits` even if they are set.
///
/// # Panics
/// If `buf` holds fewer than `n_bits` bits.
pub fn count_ones_in_bits(buf: &[u8], n_bits: u64) -> u64 {
    let full = (n_bits / 8) as usize;
    let rem = (n_bits % 8) as u32;
    let mut ones = count_ones(&buf[..full]);
    if rem != 0 {
        ones += u64::from((buf[full] & (0xffu8 << (8 - rem))).count_ones());
    }
    ones
}

/// Writes the first `n_bits` bits of `buf` as ASCII `'0'`/`'1'`, MSB first, into `out`.
///
/// # Panics
/// If `buf` holds fewer than `n_bits` bits or `out.len() != n_bits`.
pub fn write_ascii_bits(buf: &[u8], n_bits: usize, out: &mut [u8]) {
    assert_eq!(out.len(), n_bits, "output must hold one byte per bit");
    for (i, slot) in out.iter_mut().enumerate() {
        let bit = (buf[i / 8] >> (7 - (i % 8))) & 1;
        *slot = b'0' + bit;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive_ones(buf: &[u8], n: u64) -> u64 {
        (0..n).filter(|&i| (buf[(i / 8) as usize] >> (7 - (i % 8))) & 1 == 1).count() as u64
    }

    #[test]
    fn byte_len_rounds_up() {
        assert_eq!(byte_len(0), 0);
        assert_eq!(byte_len(1), 1);
        assert_eq!(byte_len(8), 1);
        assert_eq!(byte_len(9), 2);
        assert_eq!(byte_len(10_000_000), 1_250_000);
    }

    #[test]
    fn mask_keeps_msb_first_bits() {
        let mut b = [0xff, 0xff];
        mask_tail(&mut b, 11);
        assert_eq!(b, [0xff, 0b1110_0000]);
    }

    proptest! {
        #[test]
        fn count_matches_naive(buf in proptest::collection::vec(any::<u8>(), 0..600), cut in 0u64..8) {
            let n = (buf.len() as u64 * 8).saturating_sub(cut);
            prop_assert_eq!(count_ones_in_bits(&buf, n), naive_ones(&buf, n));
            prop_assert_eq!(count_ones(&buf), naive_ones(&buf, buf.len() as u64 * 8));
        }

        #[test]
        fn masking_zeroes_only_unused_bits(mut buf in proptest::collection::vec(any::<u8>(), 1..64), cut in 0u64..8) {
            let n = buf.len() as u64 * 8 - cut;
            let before = count_ones_in_bits(&buf, n);
            mask_tail(&mut buf, n);
            prop_assert_eq!(count_ones(&buf), before);
            let spare = buf[buf.len() - 1] & ((1u16 << cut) - 1) as u8;
            prop_assert_eq!(spare, 0);
        }

        #[test]
        fn ascii_bits_round_trip(buf in proptest::collection::vec(any::<u8>(), 1..64), cut in 0usize..8) {
            let n = buf.len() * 8 - cut;
            let mut ascii = vec![0u8; n];
            write_ascii_bits(&buf, n, &mut ascii);
            prop_assert!(ascii.iter().all(|c| *c == b'0' || *c == b'1'));
            let ones = ascii.iter().filter(|c| **c == b'1').count() as u64;
            prop_assert_eq!(ones, count_ones_in_bits(&buf, n as u64));
        }
    }
}
