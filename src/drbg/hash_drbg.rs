//! NIST SP 800-90A Rev. 1 Hash_DRBG (section 10.1.1) over any SHA-1 or SHA-2 hash, with its
//! derivation function Hash_df (10.3.1): the mechanism alone, with no entropy source and no I/O.
//!
//! This module owns the working state (V, C and the reseed counter, 10.1.1.1), the three
//! algorithms that change it (instantiate 10.1.1.2, reseed 10.1.1.3, generate 10.1.1.4), Hashgen,
//! Hash_df, and the table 2 limits (10.1): seedlen, the reseed interval and the request size.
//!
//! V and C are seedlen bits: 440 for hashes of up to 256 output bits, 888 for SHA-384 and
//! SHA-512. Every `+` of 10.1.1.4 is on big-endian seedlen-bit integers mod 2^seedlen, done in
//! place on the byte arrays. Each Generate ends with `V = V + Hash(0x03 || V) + C +
//! reseed_counter` (10.1.1.4 steps 4-5), so its output cannot be recomputed from the state that
//! follows: that is the mechanism's backtracking resistance. Outputs longer than
//! [`MAX_BYTES_PER_REQUEST`] are produced as several Generate calls, never refused, as
//! [`super::ctr_drbg`] does.
//!
//! An instance exists only once instantiated ([`HashDrbg::instantiate`] is its one
//! constructor), so "generate before instantiate" cannot be written; after
//! [`HashDrbg::uninstantiate`] (which drop runs) it refuses to generate.
//!
//! drbgd serves it over SHA-256 and SHA-512 (`hash_sha256`, `hash_sha512`) through the
//! [`Drbg`] trait; the other hashes are for the CAVP tests only.

use std::fmt;
use std::marker::PhantomData;

use sha2::digest::{Digest, Output};
use zeroize::Zeroize;

use super::algorithm_id::Algorithm;
use super::generator::{ApprovedDrbg, Drbg, ReseedRequired};

/// The largest seedlen in bytes (SP 800-90A 10.1 table 2: 888 bits, SHA-384 and SHA-512).
const MAX_SEED_LEN: usize = 888 / 8;
/// SP 800-90A 10.1 table 2: max_number_of_bits_per_request = 2^19 bits.
pub const MAX_BYTES_PER_REQUEST: usize = (1 << 19) / 8;
/// SP 800-90A 10.1 table 2: reseed_interval at most 2^48 requests.
pub const RESEED_INTERVAL: u64 = 1 << 48;

/// seedlen in bytes for a hash of `out_len` bytes (SP 800-90A 10.1 table 2): 440 bits for
/// SHA-1, SHA-224, SHA-512/224, SHA-256 and SHA-512/256; 888 bits for SHA-384 and SHA-512.
pub const fn seed_len_for(out_len: usize) -> usize {
    if out_len > 32 { 888 / 8 } else { 440 / 8 }
}

/// The highest security strength in bits that a hash of `out_len` bytes supports in Hash_DRBG
/// and HMAC_DRBG (SP 800-90A 10.1 table 2, from SP 800-57 Part 1): 128 for SHA-1, 192 for
/// SHA-224 and SHA-512/224, 256 for the others.
pub const fn security_strength_bits_for(out_len: usize) -> usize {
    match out_len {
        0..=20 => 128,
        21..=28 => 192,
        _ => 256,
    }
}

/// Hash_DRBG over SHA-256, the `hash_sha256` mechanism.
pub type HashSha256Drbg = HashDrbg<sha2::Sha256>;
/// Hash_DRBG over SHA-512, the `hash_sha512` mechanism.
pub type HashSha512Drbg = HashDrbg<sha2::Sha512>;

/// The service algorithm of each hash Hash_DRBG is served with (its security strength comes
/// with it).
pub trait HashDrbgHash: Digest + 'static {
    /// The service algorithm of this hash.
    const ALGORITHM: Algorithm;
}

impl HashDrbgHash for sha2::Sha256 {
    const ALGORITHM: Algorithm = Algorithm::HashSha256;
}

impl HashDrbgHash for sha2::Sha512 {
    const ALGORITHM: Algorithm = Algorithm::HashSha512;
}

/// A Hash_DRBG instance over hash `D` (SHA-1, SHA-224, SHA-256, SHA-384, SHA-512,
/// SHA-512/224 or SHA-512/256).
pub struct HashDrbg<D> {
    /// V, its first seedlen bytes used.
    v: [u8; MAX_SEED_LEN],
    /// C, its first seedlen bytes used.
    c: [u8; MAX_SEED_LEN],
    /// 1 after (re)seeding, one more per Generate; 0 only once uninstantiated.
    reseed_counter: u64,
    /// Generate refuses once `reseed_counter` exceeds this (at most [`RESEED_INTERVAL`]).
    reseed_interval: u64,
    hash: PhantomData<fn() -> D>,
}

impl<D> fmt::Debug for HashDrbg<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HashDrbg")
            .field("hash", &std::any::type_name::<D>())
            .field("reseed_counter", &self.reseed_counter)
            .finish_non_exhaustive()
    }
}

impl<D> Drop for HashDrbg<D> {
    fn drop(&mut self) {
        self.uninstantiate();
    }
}

impl<D> HashDrbg<D> {
    /// Uninstantiate (SP 800-90A 9.4): V, C and the reseed counter zeroized in place (what drop
    /// runs). Generate then refuses for good, a reseed doing nothing; the instance is there to
    /// be dropped.
    pub fn uninstantiate(&mut self) {
        self.v.zeroize();
        self.c.zeroize();
        self.reseed_counter = 0;
    }

    /// Whether the state reads as uninstantiated: V, C and the reseed counter all zero.
    pub fn is_zeroized(&self) -> bool {
        self.reseed_counter == 0 && self.v.iter().chain(&self.c).all(|b| *b == 0)
    }
}

impl<D: Digest> HashDrbg<D> {
    /// outlen in bytes.
    fn out_len() -> usize {
        <D as Digest>::output_size()
    }

    /// seedlen in bytes (SP 800-90A 10.1 table 2).
    pub fn seed_len() -> usize {
        seed_len_for(Self::out_len())
    }

    /// The highest security strength in bits this hash supports (SP 800-90A 10.1 table 2).
    pub fn security_strength_bits() -> usize {
        security_strength_bits_for(Self::out_len())
    }

    /// Hash_DRBG_Instantiate_algorithm (10.1.1.2): `V = Hash_df(entropy || nonce ||
    /// personalization)`, `C = Hash_df(0x00 || V)`, reseed_counter = 1.
    ///
    /// The entropy input and nonce are the caller's to size (SP 800-90A 8.6.7, 9.1): at least
    /// [`Self::security_strength_bits`] of entropy, and a nonce of half that.
    pub fn instantiate(entropy: &[u8], nonce: &[u8], personalization: &[u8]) -> Self {
        let mut drbg = HashDrbg {
            v: [0; MAX_SEED_LEN],
            c: [0; MAX_SEED_LEN],
            reseed_counter: 1,
            reseed_interval: RESEED_INTERVAL,
            hash: PhantomData,
        };
        hash_df::<D>(&[entropy, nonce, personalization], &mut drbg.v[..Self::seed_len()]);
        drbg.derive_c();
        drbg
    }

    /// Hash_DRBG_Reseed_algorithm (10.1.1.3): `V = Hash_df(0x01 || V || entropy ||
    /// additional)`, `C = Hash_df(0x00 || V)`, reseed_counter = 1. Does nothing once
    /// [`Self::uninstantiate`] has run (SP 800-90A 9.2 step 1: an invalid state is not
    /// reseeded), so Generate stays refused.
    pub fn reseed(&mut self, entropy: &[u8], additional: &[u8]) {
        if self.reseed_counter == 0 {
            return;
        }
        let n = Self::seed_len();
        let mut seed = [0u8; MAX_SEED_LEN];
        hash_df::<D>(&[&[0x01], &self.v[..n], entropy, additional], &mut seed[..n]);
        self.v[..n].copy_from_slice(&seed[..n]);
        seed.zeroize();
        self.derive_c();
        self.reseed_counter = 1;
    }

    /// Lowers the reseed interval below table 2's [`RESEED_INTERVAL`] (SP 800-90A lets an
    /// implementation choose any up to it): once `requests` Generate calls have been made since
    /// the last (re)seed, [`Self::generate`] refuses until [`Self::reseed`].
    ///
    /// # Panics
    /// If `requests` is 0 or above [`RESEED_INTERVAL`].
    pub fn set_reseed_interval(&mut self, requests: u64) {
        assert!((1..=RESEED_INTERVAL).contains(&requests), "the reseed interval is 1 to 2^48 requests");
        self.reseed_interval = requests;
    }

    /// Hash_DRBG_Generate_algorithm (10.1.1.4) for any length: outputs longer than
    /// [`MAX_BYTES_PER_REQUEST`] are split into several Generate calls, each ending with its own
    /// state update. The additional input (if any) is given to every call; an empty one is the
    /// standard's Null.
    ///
    /// # Errors
    /// [`ReseedRequired`] once the reseed counter exceeds the reseed interval (10.1.1.4 step 1),
    /// or after [`Self::uninstantiate`]; the output of any Generate call made before the refusal
    /// stays in `out`, and the refused one writes nothing.
    pub fn generate(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), ReseedRequired> {
        let mut chunks = out.chunks_mut(MAX_BYTES_PER_REQUEST);
        // A zero-length request still runs one Generate (and its state update), as the standard does.
        let first: &mut [u8] = chunks.next().unwrap_or_default();
        self.generate_one(first, additional)?;
        for chunk in chunks {
            self.generate_one(chunk, additional)?;
        }
        Ok(())
    }

    /// One Generate call of 10.1.1.4, `out` at most [`MAX_BYTES_PER_REQUEST`] bytes.
    fn generate_one(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), ReseedRequired> {
        // Counter 0: uninstantiated (no (re)seed leaves it there).
        if self.reseed_counter == 0 || self.reseed_counter > self.reseed_interval {
            return Err(ReseedRequired);
        }
        let n = Self::seed_len();
        if !additional.is_empty() {
            // Step 2: w = Hash(0x02 || V || additional_input), V = V + w.
            let mut w = hash::<D>(&[&[0x02], &self.v[..n], additional]);
            add_mod(&mut self.v[..n], &w);
            w.as_mut_slice().zeroize();
        }
        self.hashgen(out);
        // Steps 4-5: H = Hash(0x03 || V), V = V + H + C + reseed_counter.
        let mut h = hash::<D>(&[&[0x03], &self.v[..n]]);
        let v = &mut self.v[..n];
        add_mod(v, &h);
        add_mod(v, &self.c[..n]);
        add_mod(v, &self.reseed_counter.to_be_bytes());
        h.as_mut_slice().zeroize();
        self.reseed_counter += 1;
        Ok(())
    }

    /// Hashgen (10.1.1.4): `out` is the leftmost bytes of `Hash(data) || Hash(data + 1) || ...`
    /// where data starts as a copy of V (V itself is unchanged). Whole outputs are hashed
    /// straight into `out`; data is one stack copy incremented in place.
    fn hashgen(&self, out: &mut [u8]) {
        let n = Self::seed_len();
        let mut copy = self.v;
        let data = &mut copy[..n];
        let (blocks, tail) = <Output<D>>::slice_as_chunks_mut(out);
        for block in blocks {
            D::new_with_prefix(&*data).finalize_into(block);
            increment(data);
        }
        if !tail.is_empty() {
            let mut last = D::digest(&*data);
            tail.copy_from_slice(&last[..tail.len()]);
            last.as_mut_slice().zeroize();
        }
        copy.zeroize();
    }

    /// `C = Hash_df(0x00 || V)` (10.1.1.2 step 4, 10.1.1.3 step 4).
    fn derive_c(&mut self) {
        let n = Self::seed_len();
        hash_df::<D>(&[&[0x00], &self.v[..n]], &mut self.c[..n]);
    }
}

impl<D: HashDrbgHash> Drbg for HashDrbg<D> {
    const ALGORITHM: Algorithm = D::ALGORITHM;
    /// SP 800-90A 8.6.7, 10.1.1.2: entropy of the security strength (256 bits for SHA-256 and
    /// SHA-512), at instantiate and at every reseed.
    const ENTROPY_LEN: usize = D::ALGORITHM.security_strength_bits() as usize / 8;
    /// SP 800-90A 8.6.7: a nonce of half the security strength.
    const NONCE_LEN: usize = Self::ENTROPY_LEN / 2;

    fn instantiate(entropy: &[u8], nonce: &[u8], personalization: &[u8]) -> Self {
        HashDrbg::instantiate(entropy, nonce, personalization)
    }

    fn reseed(&mut self, entropy: &[u8], additional: &[u8]) {
        HashDrbg::reseed(self, entropy, additional);
    }

    fn generate(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), ReseedRequired> {
        HashDrbg::generate(self, out, additional)
    }
}

impl<D: HashDrbgHash> ApprovedDrbg for HashDrbg<D> {
    fn set_reseed_interval(&mut self, requests: u64) {
        HashDrbg::set_reseed_interval(self, requests);
    }

    fn uninstantiate(&mut self) {
        HashDrbg::uninstantiate(self);
    }

    fn is_zeroized(&self) -> bool {
        HashDrbg::is_zeroized(self)
    }
}

#[cfg(test)]
impl<D> HashDrbg<D> {
    /// Flips the lowest bit of V's first byte: a fault in the state update, for the
    /// self-tests' mutation test.
    pub(crate) fn flip_v_bit(&mut self) {
        self.v[0] ^= 1;
    }
}

/// `Hash(inputs[0] || inputs[1] || ...)`.
fn hash<D: Digest>(inputs: &[&[u8]]) -> Output<D> {
    let mut h = D::new();
    for input in inputs {
        h.update(input);
    }
    h.finalize()
}

/// Hash_df (10.3.1) of the concatenation of `inputs`, writing `out.len()` bytes (whole bytes
/// only, at most 255 hash outputs): `Hash(counter || no_of_bits_to_return || input)` for
/// counter = 1, 2, ... (one byte; no_of_bits_to_return a 32-bit big-endian integer), the last
/// one cut to length.
fn hash_df<D: Digest>(inputs: &[&[u8]], out: &mut [u8]) {
    let bits = u32::try_from(out.len() * 8).expect("Hash_df returns fewer than 2^32 bits").to_be_bytes();
    for (counter, chunk) in (1u8..).zip(out.chunks_mut(<D as Digest>::output_size())) {
        let mut h = D::new();
        h.update([counter]);
        h.update(bits);
        for input in inputs {
            h.update(input);
        }
        let mut block = h.finalize();
        chunk.copy_from_slice(&block[..chunk.len()]);
        block.as_mut_slice().zeroize();
    }
}

/// `x = (x + y) mod 2^(8 * x.len())`, both big-endian, `y` no longer than `x` (its bytes
/// line up with `x`'s last ones). Every byte of `x` is visited, whatever the carries.
fn add_mod(x: &mut [u8], y: &[u8]) {
    assert!(y.len() <= x.len(), "the addend is no longer than seedlen");
    let (high, low) = x.split_at_mut(x.len() - y.len());
    let mut carry = 0u16;
    for (a, b) in low.iter_mut().rev().zip(y.iter().rev()) {
        let sum = u16::from(*a) + u16::from(*b) + carry;
        *a = sum as u8;
        carry = sum >> 8;
    }
    for a in high.iter_mut().rev() {
        let sum = u16::from(*a) + carry;
        *a = sum as u8;
        carry = sum >> 8;
    }
}

/// `data = data + 1 mod 2^(8 * data.len())` (Hashgen step 4.3), `data` at least 8 bytes: the low
/// 64 bits as one word, the carry out of them (once in 2^64 calls) through the bytes above.
fn increment(data: &mut [u8]) {
    let (high, low) = data.split_at_mut(data.len() - 8);
    let word = u64::from_be_bytes(<[u8; 8]>::try_from(&low[..]).expect("8 bytes"));
    let (sum, carry) = word.overflowing_add(1);
    low.copy_from_slice(&sum.to_be_bytes());
    if carry {
        add_mod(high, &[1]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        data_encoding::HEXLOWER.decode(s.as_bytes()).unwrap()
    }

    /// NIST CAVP Hash_DRBG.rsp (CAVS 14.3, drbgvectors_pr_false), `[SHA-256]`,
    /// PersonalizationStringLen = 256, AdditionalInputLen = 256, COUNT = 0: instantiate, reseed,
    /// generate twice, the second output compared.
    #[test]
    fn cavp_sha256_pr_false_count0() {
        let mut d = HashDrbg::<sha2::Sha256>::instantiate(
            &hex("6c623aea73bc8a59e28c6cd9c7c7ec8ca2e75190bd5dcae5978cf0c199c23f4f"),
            &hex("e55db067a0ed537e66886b7cda02f772"),
            &hex("1e59d798810083d1ff848e90b25c9927e3dfb55a0888b0339566a9f9ca7542dc"),
        );
        d.reseed(
            &hex("9ab40164744c7d00c78b4196f6f917ec33d70030a0812cd4606c5a25387568a9"),
            &hex("4e8bead7cbba7a7bc9ae1e1617222c4139661347599950e7225d1e2faa5d57f5"),
        );
        let mut out = [0u8; 128];
        d.generate(&mut out, &hex("dcb22a5d9f149858636f3ede2253e419816fb7b1103194451ed6a573a8fe6271"))
            .unwrap();
        d.generate(&mut out, &hex("8f9d5c78cdabc32e71ac3b3c49239caddf96053250f4fd92056efbd0be487d36"))
            .unwrap();
        let expected = hex(concat!(
            "6e98a3b1f686f6ffa79355c9d8a5ab7f93312159d52659a2298315f10007c71a",
            "dabc0b5ccb4164c0949fbdb221b43acdb62bed3099596f2d7bd5d0048173dd23",
            "60a543b234ab61a441ddb9299af84ca45c6e618fd521366dbf509d4ec06174da",
            "924361d642b107e5564ac1b32340dd2f3158bf4c00bcb4dcf12c6d67af4b74ee",
        ));
        assert_eq!(out[..], expected[..]);
    }

    /// NIST CAVP Hash_DRBG.rsp (CAVS 14.3, drbgvectors_no_reseed), `[SHA-512]` (seedlen 888),
    /// PersonalizationStringLen = 256, AdditionalInputLen = 256, COUNT = 0.
    #[test]
    fn cavp_sha512_no_reseed_count0() {
        let mut d = HashDrbg::<sha2::Sha512>::instantiate(
            &hex("31e8d6fbdc9026b0708405c20b558fcc0a107f3fdc836fe056f020df30d9dc57"),
            &hex("2b8bbab9b486abb659c4ae8ff5978e22"),
            &hex("949eb753762869aa5ea0ce725523595f9bc9b219735113e71feab228d0872c38"),
        );
        let mut out = [0u8; 256];
        d.generate(&mut out, &hex("88f1180d4ef564315280a9692f107ed9c0639d79bb7040dfc3b7d58bf24ef8f5"))
            .unwrap();
        d.generate(&mut out, &hex("f4fc8a26e0ad181838f1399fe5b8a4b86670e92ab92b2c4daf3913470724d3f2"))
            .unwrap();
        let expected = hex(concat!(
            "10509641332a4d72a3c5936512c37cb9ab9874693902ee4c76e963675627ef86",
            "aa2e7d7029a152b800072fc53eeb6b41d12f481cde99b467dac3486836f6e146",
            "e9a79d3fb90d9b26f213ddbfac590ca083ed83fde4924395d25b645b96a6983e",
            "65fd662cae66112ebfa990f09b86b01270b7f0ef35f183eb01ffcbd7d5ec6adc",
            "4839cf3814dac858e013c6d79528ef273dd83724ccdc82b73dc63698fcf8ef09",
            "24f27b6a49d6d38f0ce261aa5a0a88779e47a413c29e1d7d20e4ab914bbabd5e",
            "6e0241cf53263a8efa321b4a632eb062b255c0ce5a0833114161dd073dd03796",
            "7a1f03daf2dd7e927b801b40e62f26c0872ea100132807650232126aa8f29d70",
        ));
        assert_eq!(out[..], expected[..]);
    }

    #[test]
    fn seedlen_follows_table_2() {
        assert_eq!(HashDrbg::<sha2::Sha224>::seed_len(), 55);
        assert_eq!(HashDrbg::<sha2::Sha256>::seed_len(), 55);
        assert_eq!(HashDrbg::<sha2::Sha512_224>::seed_len(), 55);
        assert_eq!(HashDrbg::<sha2::Sha512_256>::seed_len(), 55);
        assert_eq!(HashDrbg::<sha2::Sha384>::seed_len(), 111);
        assert_eq!(HashDrbg::<sha2::Sha512>::seed_len(), 111);
        assert_eq!(seed_len_for(20), 55, "SHA-1");
        assert_eq!(HashDrbg::<sha2::Sha256>::security_strength_bits(), 256);
        assert_eq!(HashDrbg::<sha2::Sha512_224>::security_strength_bits(), 192);
        assert_eq!(security_strength_bits_for(20), 128, "SHA-1");
    }

    /// `add_mod` and `increment` against u128 arithmetic on 16-byte numbers: carries across
    /// every byte, the wrap at 2^128, and addends of every length up to 16 bytes.
    #[test]
    fn additions_are_big_endian_mod_2_to_the_length() {
        let values =
            [0u128, 1, 0xff, u128::from(u64::MAX), u128::from(u64::MAX) + 1, u128::MAX - 1, u128::MAX];
        let addends =
            [0u128, 1, 0x1ff, u128::from(u64::MAX), u128::MAX, 0x8000_0000_0000_0000_0000_0000_0000_0001];
        for x in values {
            for y in addends {
                for len in 0..=16 {
                    let y = if len == 16 { y } else { y & ((1u128 << (8 * len)) - 1) };
                    let mut got = x.to_be_bytes();
                    add_mod(&mut got, &y.to_be_bytes()[16 - len..]);
                    assert_eq!(u128::from_be_bytes(got), x.wrapping_add(y), "{x:#x} + {y:#x} ({len} bytes)");
                }
            }
            let mut got = x.to_be_bytes();
            increment(&mut got);
            assert_eq!(u128::from_be_bytes(got), x.wrapping_add(1), "{x:#x} + 1");
        }
    }

    /// A seedlen-long all-ones V wraps to zero, the carry crossing the 64-bit word of `increment`.
    #[test]
    fn increment_wraps_at_seedlen() {
        let mut v = [0xffu8; 55];
        increment(&mut v);
        assert_eq!(v, [0u8; 55]);
        let mut v = [0u8; 55];
        v[46] = 0x12;
        v[47..].fill(0xff);
        increment(&mut v);
        assert_eq!(v[46], 0x13);
        assert!(v[47..].iter().all(|&b| b == 0));
    }

    /// Hashgen's output for lengths around whole hash outputs is the prefix of the longest one.
    #[test]
    fn hashgen_cuts_the_last_block() {
        let d = HashDrbg::<sha2::Sha256>::instantiate(&[7u8; 32], &[1u8; 16], b"p");
        let mut long = [0u8; 97];
        d.hashgen(&mut long);
        for len in [0, 1, 31, 32, 33, 64, 96] {
            let mut out = vec![0u8; len];
            d.hashgen(&mut out);
            assert_eq!(out[..], long[..len], "len {len}");
        }
    }

    /// Generate is refused once the reseed counter passes the interval (10.1.1.4 step 1), and
    /// works again after a reseed. (A Generate before instantiate cannot be written: the only
    /// constructor is `instantiate`.)
    #[test]
    fn reseed_interval_is_enforced() {
        let mut d = HashDrbg::<sha2::Sha256>::instantiate(&[7u8; 32], &[1u8; 16], b"");
        d.set_reseed_interval(2);
        let mut out = [0u8; 16];
        d.generate(&mut out, &[]).unwrap();
        d.generate(&mut out, b"add").unwrap();
        let before = out;
        assert_eq!(d.generate(&mut out, &[]), Err(ReseedRequired));
        assert_eq!(out, before, "a refused Generate writes nothing");
        d.reseed(&[9u8; 32], &[]);
        assert!(d.generate(&mut out, &[]).is_ok());
        d.reseed_counter = RESEED_INTERVAL + 1;
        d.reseed_interval = RESEED_INTERVAL;
        assert_eq!(d.generate(&mut out, &[]), Err(ReseedRequired), "table 2's 2^48");
    }

    #[test]
    fn uninstantiate_zeroizes_and_refuses() {
        let mut d = HashDrbg::<sha2::Sha512>::instantiate(&[7u8; 32], &[1u8; 16], b"p");
        assert!(!d.is_zeroized());
        d.uninstantiate();
        assert!(d.is_zeroized());
        let mut out = [0x5au8; 16];
        assert_eq!(d.generate(&mut out, b"add"), Err(ReseedRequired));
        assert_eq!(out, [0x5au8; 16], "nothing written");
        d.reseed(&[9u8; 32], b"add");
        assert!(d.is_zeroized(), "a reseed leaves an uninstantiated state as it is");
        assert_eq!(d.generate(&mut out, &[]), Err(ReseedRequired));
        assert_eq!(out, [0x5au8; 16]);
    }

    #[test]
    #[should_panic(expected = "1 to 2^48")]
    fn reseed_interval_cannot_exceed_table_2() {
        let mut d = HashDrbg::<sha2::Sha256>::instantiate(&[7u8; 32], &[1u8; 16], b"");
        d.set_reseed_interval(RESEED_INTERVAL + 1);
    }

    #[test]
    fn large_requests_are_split_not_refused() {
        let mut a = HashDrbg::<sha2::Sha512>::instantiate(&[7u8; 32], &[1u8; 16], b"");
        let mut b = HashDrbg::<sha2::Sha512>::instantiate(&[7u8; 32], &[1u8; 16], b"");
        let mut big = vec![0u8; MAX_BYTES_PER_REQUEST + 100];
        a.generate(&mut big, b"x").unwrap();
        let mut first = vec![0u8; MAX_BYTES_PER_REQUEST];
        let mut second = vec![0u8; 100];
        b.generate(&mut first, b"x").unwrap();
        b.generate(&mut second, b"x").unwrap();
        assert_eq!(&big[..MAX_BYTES_PER_REQUEST], &first[..]);
        assert_eq!(&big[MAX_BYTES_PER_REQUEST..], &second[..]);
        assert_eq!(a.reseed_counter, 3);
    }

    /// The served hashes: the table's strength is the mechanism's, and the entropy input and
    /// nonce the pool draws are that strength and half of it.
    #[test]
    fn served_hashes_take_their_strength_from_the_table() {
        assert_eq!(HashSha256Drbg::security_strength_bits(), 256);
        assert_eq!(HashSha512Drbg::security_strength_bits(), 256);
        assert_eq!(Algorithm::HashSha256.security_strength_bits(), 256);
        assert_eq!(Algorithm::HashSha512.security_strength_bits(), 256);
        assert_eq!((<HashSha256Drbg as Drbg>::ENTROPY_LEN, <HashSha256Drbg as Drbg>::NONCE_LEN), (32, 16));
        assert_eq!((<HashSha512Drbg as Drbg>::ENTROPY_LEN, <HashSha512Drbg as Drbg>::NONCE_LEN), (32, 16));
    }

    #[test]
    fn debug_shows_no_state() {
        let d = HashDrbg::<sha2::Sha384>::instantiate(&[7u8; 32], &[1u8; 16], b"p");
        let s = format!("{d:?}");
        assert!(s.starts_with("HashDrbg { hash: ") && s.contains("Sha384"), "{s}");
        assert!(s.ends_with("reseed_counter: 1, .. }"), "only the hash and the counter: {s}");
    }
}
