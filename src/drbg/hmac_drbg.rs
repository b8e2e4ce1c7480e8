//! NIST SP 800-90A Rev. 1 HMAC_DRBG (section 10.1.2) over any SHA-1 or SHA-2 hash: the
//! mechanism alone, with no entropy source and no I/O.
//!
//! This module owns the working state (Key, V and the reseed counter, 10.1.2.1), HMAC_DRBG_Update
//! (10.1.2.2) and the three algorithms built on it (instantiate 10.1.2.3, reseed 10.1.2.4,
//! generate 10.1.2.5), with the table 2 limits of 10.1 (the reseed interval and the request
//! size, shared with [`super::hash_drbg`]).
//!
//! Key is held only as an HMAC instance keyed with it: the hash states after the inner and the
//! outer padded key block. Every `HMAC(Key, ·)` clones that instance instead of keying again,
//! so an output block of a Generate costs the two compressions of its own message, not four.
//! Each Generate ends with an Update that replaces Key and V (10.1.2.5 step 6), so its output
//! cannot be recomputed from the state that follows: that is the mechanism's backtracking
//! resistance. Outputs longer than [`MAX_BYTES_PER_REQUEST`] are produced as several Generate
//! calls, never refused, as [`super::ctr_drbg`] does.
//!
//! An instance exists only once instantiated ([`HmacDrbg::instantiate`] is its one
//! constructor), so "generate before instantiate" cannot be written; after
//! [`HmacDrbg::uninstantiate`] (which drop runs) it refuses to generate.
//!
//! drbgd serves it over SHA-256 and SHA-512 (`hmac_sha256`, `hmac_sha512`) through the
//! [`Drbg`] trait; the other hashes are for the CAVP tests only.

use std::fmt;

use hmac::digest::{FixedOutput, Output, OutputSizeUser};
use hmac::{EagerHash, Hmac, KeyInit, Mac};
use zeroize::Zeroize;

use super::algorithm_id::Algorithm;
use super::generator::{ApprovedDrbg, Drbg, ReseedRequired};
use super::hash_drbg::security_strength_bits_for;
pub use super::hash_drbg::{MAX_BYTES_PER_REQUEST, RESEED_INTERVAL};

/// An outlen-byte value: V, or a new Key.
type Block<D> = Output<Hmac<D>>;

/// HMAC_DRBG over SHA-256, the `hmac_sha256` mechanism.
pub type HmacSha256Drbg = HmacDrbg<sha2::Sha256>;
/// HMAC_DRBG over SHA-512, the `hmac_sha512` mechanism.
pub type HmacSha512Drbg = HmacDrbg<sha2::Sha512>;

/// The service algorithm of each hash HMAC_DRBG is served with (its security strength comes
/// with it).
pub trait HmacDrbgHash: EagerHash + 'static {
    /// The service algorithm of this hash.
    const ALGORITHM: Algorithm;
}

impl HmacDrbgHash for sha2::Sha256 {
    const ALGORITHM: Algorithm = Algorithm::HmacSha256;
}

impl HmacDrbgHash for sha2::Sha512 {
    const ALGORITHM: Algorithm = Algorithm::HmacSha512;
}

/// An HMAC_DRBG instance over hash `D` (SHA-1, SHA-224, SHA-256, SHA-384, SHA-512,
/// SHA-512/224 or SHA-512/256).
pub struct HmacDrbg<D: EagerHash> {
    /// HMAC keyed with Key (Key itself is not kept).
    mac: Hmac<D>,
    v: Block<D>,
    /// 1 after (re)seeding, one more per Generate; 0 only once uninstantiated.
    reseed_counter: u64,
    /// Generate refuses once `reseed_counter` exceeds this (at most [`RESEED_INTERVAL`]).
    reseed_interval: u64,
}

impl<D: EagerHash> fmt::Debug for HmacDrbg<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HmacDrbg")
            .field("hash", &std::any::type_name::<D>())
            .field("reseed_counter", &self.reseed_counter)
            .finish_non_exhaustive()
    }
}

impl<D: EagerHash> Drop for HmacDrbg<D> {
    fn drop(&mut self) {
        self.uninstantiate();
    }
}

impl<D: EagerHash> HmacDrbg<D> {
    /// outlen in bytes.
    fn out_len() -> usize {
        <Hmac<D> as OutputSizeUser>::output_size()
    }

    /// The highest security strength in bits this hash supports (SP 800-90A 10.1 table 2).
    pub fn security_strength_bits() -> usize {
        security_strength_bits_for(Self::out_len())
    }

    /// HMAC_DRBG_Instantiate_algorithm (10.1.2.3): Key = outlen 0x00 bytes, V = outlen 0x01
    /// bytes, then `Update(entropy || nonce || personalization)`, reseed_counter = 1.
    ///
    /// The entropy input and nonce are the caller's to size (SP 800-90A 8.6.7, 9.1): at least
    /// [`Self::security_strength_bits`] of entropy, and a nonce of half that.
    pub fn instantiate(entropy: &[u8], nonce: &[u8], personalization: &[u8]) -> Self {
        let mut v = Block::<D>::default();
        v.fill(0x01);
        let mut drbg = HmacDrbg {
            mac: keyed::<D>(&Block::<D>::default()),
            v,
            reseed_counter: 1,
            reseed_interval: RESEED_INTERVAL,
        };
        drbg.update(&[entropy, nonce, personalization]);
        drbg
    }

    /// HMAC_DRBG_Reseed_algorithm (10.1.2.4): `Update(entropy || additional)`,
    /// reseed_counter = 1. Does nothing once [`Self::uninstantiate`] has run (SP 800-90A 9.2
    /// step 1: an invalid state is not reseeded), so Generate stays refused.
    pub fn reseed(&mut self, entropy: &[u8], additional: &[u8]) {
        if self.reseed_counter == 0 {
            return;
        }
        self.update(&[entropy, additional]);
        self.reseed_counter = 1;
    }

    /// Uninstantiate (SP 800-90A 9.4), what drop runs: V and the reseed counter zeroized in
    /// place, and the HMAC instance keyed with Key replaced by one keyed with the all-zero key
    /// (the hash states of the old one are wiped by the hash crate's own Drop, sha2 and sha1
    /// `zeroize`). Generate then refuses for good, a reseed doing nothing; the instance is there
    /// to be dropped.
    pub fn uninstantiate(&mut self) {
        self.mac = keyed::<D>(&Block::<D>::default());
        self.v.as_mut_slice().zeroize();
        self.reseed_counter = 0;
    }

    /// Whether the state reads as uninstantiated: V and the reseed counter zero, and the HMAC
    /// instance keyed with the all-zero key (probed: its tag of the empty message).
    pub fn is_zeroized(&self) -> bool {
        let (mut ours, mut zero_key) = (Block::<D>::default(), Block::<D>::default());
        FixedOutput::finalize_into(self.mac.clone(), &mut ours);
        FixedOutput::finalize_into(keyed::<D>(&Block::<D>::default()), &mut zero_key);
        self.reseed_counter == 0 && self.v.iter().all(|b| *b == 0) && ours == zero_key
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

    /// HMAC_DRBG_Generate_algorithm (10.1.2.5) for any length: outputs longer than
    /// [`MAX_BYTES_PER_REQUEST`] are split into several Generate calls, each ending with its own
    /// Update. The additional input (if any) is given to every call; an empty one is the
    /// standard's Null.
    ///
    /// # Errors
    /// [`ReseedRequired`] once the reseed counter exceeds the reseed interval (10.1.2.5 step 1),
    /// or after [`Self::uninstantiate`]; the output of any Generate call made before the refusal
    /// stays in `out`, and the refused one writes nothing.
    pub fn generate(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), ReseedRequired> {
        let mut chunks = out.chunks_mut(MAX_BYTES_PER_REQUEST);
        // A zero-length request still runs one Generate (and its Update), as the standard does.
        let first: &mut [u8] = chunks.next().unwrap_or_default();
        self.generate_one(first, additional)?;
        for chunk in chunks {
            self.generate_one(chunk, additional)?;
        }
        Ok(())
    }

    /// One Generate call of 10.1.2.5, `out` at most [`MAX_BYTES_PER_REQUEST`] bytes.
    fn generate_one(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), ReseedRequired> {
        // Counter 0: uninstantiated (no (re)seed leaves it there).
        if self.reseed_counter == 0 || self.reseed_counter > self.reseed_interval {
            return Err(ReseedRequired);
        }
        if !additional.is_empty() {
            self.update(&[additional]);
        }
        // Steps 3-5: V = HMAC(Key, V), appended until there are enough bytes, the last cut.
        for block in out.chunks_mut(Self::out_len()) {
            self.next_v();
            block.copy_from_slice(&self.v[..block.len()]);
        }
        // Step 6 runs whether or not there is additional input (only its first half if not).
        self.update(&[additional]);
        self.reseed_counter += 1;
        Ok(())
    }

    /// HMAC_DRBG_Update (10.1.2.2) with provided_data the concatenation of `provided`: the
    /// second round only where provided_data is not Null (empty).
    fn update(&mut self, provided: &[&[u8]]) {
        self.update_round(0x00, provided);
        if provided.iter().any(|p| !p.is_empty()) {
            self.update_round(0x01, provided);
        }
    }

    /// One round of 10.1.2.2: `Key = HMAC(Key, V || round || provided)`, then `V = HMAC(Key, V)`.
    fn update_round(&mut self, round: u8, provided: &[&[u8]]) {
        let mut mac = self.mac.clone();
        Mac::update(&mut mac, &self.v);
        Mac::update(&mut mac, &[round]);
        for p in provided {
            Mac::update(&mut mac, p);
        }
        let mut key = Block::<D>::default();
        FixedOutput::finalize_into(mac, &mut key);
        self.mac = keyed::<D>(&key);
        key.as_mut_slice().zeroize();
        self.next_v();
    }

    /// `V = HMAC(Key, V)`, from a clone of the keyed instance.
    fn next_v(&mut self) {
        let mut mac = self.mac.clone();
        Mac::update(&mut mac, &self.v);
        FixedOutput::finalize_into(mac, &mut self.v);
    }
}

/// `Send` is asked of the instance, not proven from `D`: whether the keyed hash states are `Send`
/// depends on the hash's block-level core (it is for every SHA-2).
impl<D: HmacDrbgHash> Drbg for HmacDrbg<D>
where
    HmacDrbg<D>: Send,
{
    const ALGORITHM: Algorithm = D::ALGORITHM;
    /// SP 800-90A 8.6.7, 10.1.2.3: entropy of the security strength (256 bits for SHA-256 and
    /// SHA-512), at instantiate and at every reseed.
    const ENTROPY_LEN: usize = D::ALGORITHM.security_strength_bits() as usize / 8;
    /// SP 800-90A 8.6.7: a nonce of half the security strength.
    const NONCE_LEN: usize = Self::ENTROPY_LEN / 2;

    fn instantiate(entropy: &[u8], nonce: &[u8], personalization: &[u8]) -> Self {
        HmacDrbg::instantiate(entropy, nonce, personalization)
    }

    fn reseed(&mut self, entropy: &[u8], additional: &[u8]) {
        HmacDrbg::reseed(self, entropy, additional);
    }

    fn generate(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), ReseedRequired> {
        HmacDrbg::generate(self, out, additional)
    }
}

impl<D: HmacDrbgHash> ApprovedDrbg for HmacDrbg<D>
where
    HmacDrbg<D>: Send,
{
    fn set_reseed_interval(&mut self, requests: u64) {
        HmacDrbg::set_reseed_interval(self, requests);
    }

    fn uninstantiate(&mut self) {
        HmacDrbg::uninstantiate(self);
    }

    fn is_zeroized(&self) -> bool {
        HmacDrbg::is_zeroized(self)
    }
}

#[cfg(test)]
impl<D: EagerHash> HmacDrbg<D> {
    /// Flips the lowest bit of V's first byte: a fault in the state update, for the
    /// self-tests' mutation test.
    pub(crate) fn flip_v_bit(&mut self) {
        self.v[0] ^= 1;
    }
}

/// HMAC over `D` keyed with `key`.
fn keyed<D: EagerHash>(key: &[u8]) -> Hmac<D> {
    <Hmac<D> as KeyInit>::new_from_slice(key).expect("HMAC takes keys of any length")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        data_encoding::HEXLOWER.decode(s.as_bytes()).unwrap()
    }

    /// NIST CAVP HMAC_DRBG.rsp (CAVS 14.3, drbgvectors_pr_false), `[SHA-256]`,
    /// PersonalizationStringLen = 256, AdditionalInputLen = 256, COUNT = 0: instantiate, reseed,
    /// generate twice, the second output compared.
    #[test]
    fn cavp_sha256_pr_false_count0() {
        let mut d = HmacDrbg::<sha2::Sha256>::instantiate(
            &hex("cdb0d9117cc6dbc9ef9dcb06a97579841d72dc18b2d46a1cb61e314012bdf416"),
            &hex("d0c0d01d156016d0eb6b7e9c7c3c8da8"),
            &hex("6f0fb9eab3f9ea7ab0a719bfa879bf0aaed683307fda0c6d73ce018b6e34faaa"),
        );
        d.reseed(
            &hex("8ec6f7d5a8e2e88f43986f70b86e050d07c84b931bcf18e601c5a3eee3064c82"),
            &hex("1ab4ca9014fa98a55938316de8ba5a68c629b0741bdd058c4d70c91cda5099b3"),
        );
        let mut out = [0u8; 128];
        d.generate(&mut out, &hex("16e2d0721b58d839a122852abd3bf2c942a31c84d82fca74211871880d7162ff"))
            .unwrap();
        d.generate(&mut out, &hex("53686f042a7b087d5d2eca0d2a96de131f275ed7151189f7ca52deaa78b79fb2"))
            .unwrap();
        let expected = hex(concat!(
            "dda04a2ca7b8147af1548f5d086591ca4fd951a345ce52b3cd49d47e84aa31a1",
            "83e31fbc42a1ff1d95afec7143c8008c97bc2a9c091df0a763848391f68cb4a3",
            "66ad89857ac725a53b303ddea767be8dc5f605b1b95f6d24c9f06be65a973a08",
            "9320b3cc42569dcfd4b92b62a993785b0301b3fc452445656fce22664827b88f",
        ));
        assert_eq!(out[..], expected[..]);
    }

    /// NIST CAVP HMAC_DRBG.rsp (CAVS 14.3, drbgvectors_no_reseed), `[SHA-512]`,
    /// PersonalizationStringLen = 256, AdditionalInputLen = 256, COUNT = 0.
    #[test]
    fn cavp_sha512_no_reseed_count0() {
        let mut d = HmacDrbg::<sha2::Sha512>::instantiate(
            &hex("e97a4631d0a08d549cde8af9a1aae058e3e9585575a726c76a27bc62bed18a4b"),
            &hex("227221d5fe5a5db9810f9afe56a3ee78"),
            &hex("94084b11d55e0f9c2ef577741753af66ad7a25b28524b50ea970105c3545e97d"),
        );
        let mut out = [0u8; 256];
        d.generate(&mut out, &hex("24c81d4773938371b906cf4801957ac22f87432b9c8a84bc5ac04ad5b1cc3f57"))
            .unwrap();
        d.generate(&mut out, &hex("c8c878451e2b76577c36393ca253888c1038885bbfdacd8539615a611e2ac00b"))
            .unwrap();
        let expected = hex(concat!(
            "761422dea283262998c0ffffefc77de2d395c818b9cf1ac2bcd1153235e0d8b6",
            "3199c51e195135a75f1f87b454484ecc560c532c7ba5923c9490a423c1774534",
            "59d81efc38ce2939226043cb733062eae303a009b48ee0cf3c7e40abe2b57a70",
            "a6062c669a9fbff20b4c94b4ecbc5f744a80d7be8134359581d441da921737b1",
            "329470b214f3e679fb7ad48baf046bac59a36b5770806cdef28cc4a8fd0e049b",
            "924c3c9216e00ba63c2ff771d66b7520dd33a85382a84b622717e594e447c919",
            "926a5b2e94d490ee626da9df587fed674067917963fd51d383e55730c17a1245",
            "55e2e46e1395c9920d07dae4d67ffee5c759b6a326eec6d7b3ba6dee012e4807",
        ));
        assert_eq!(out[..], expected[..]);
    }

    /// The cloned keyed instance gives what keying HMAC afresh gives: V after instantiate
    /// written out from 10.1.2.2 with a new HMAC per step.
    #[test]
    fn update_matches_the_standard_read_literally() {
        fn hmac(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
            let mut m = keyed::<sha2::Sha256>(key);
            for p in parts {
                Mac::update(&mut m, p);
            }
            m.finalize().into_bytes().to_vec()
        }
        let seed: &[u8] = b"entropy-nonce-personalization";
        let (k, v) = (vec![0u8; 32], vec![1u8; 32]);
        let k = hmac(&k, &[&v, &[0x00], seed]);
        let v = hmac(&k, &[&v]);
        let k = hmac(&k, &[&v, &[0x01], seed]);
        let v = hmac(&k, &[&v]);
        let d = HmacDrbg::<sha2::Sha256>::instantiate(b"entropy-", b"nonce-", b"personalization");
        assert_eq!(d.v[..], v[..]);
        let mut probe = d.mac.clone();
        Mac::update(&mut probe, b"x");
        assert_eq!(
            probe.finalize().into_bytes()[..],
            hmac(&k, &[b"x"])[..],
            "the instance is keyed with Key"
        );
    }

    /// Generate is refused once the reseed counter passes the interval (10.1.2.5 step 1), and
    /// works again after a reseed. (A Generate before instantiate cannot be written: the only
    /// constructor is `instantiate`.)
    #[test]
    fn reseed_interval_is_enforced() {
        let mut d = HmacDrbg::<sha2::Sha256>::instantiate(&[7u8; 32], &[1u8; 16], b"");
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
        let mut d = HmacDrbg::<sha2::Sha512>::instantiate(&[7u8; 32], &[1u8; 16], b"p");
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
    fn reseed_interval_cannot_be_zero() {
        let mut d = HmacDrbg::<sha2::Sha256>::instantiate(&[7u8; 32], &[1u8; 16], b"");
        d.set_reseed_interval(0);
    }

    #[test]
    fn large_requests_are_split_not_refused() {
        let mut a = HmacDrbg::<sha2::Sha512>::instantiate(&[7u8; 32], &[1u8; 16], b"");
        let mut b = HmacDrbg::<sha2::Sha512>::instantiate(&[7u8; 32], &[1u8; 16], b"");
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

    #[test]
    fn security_strength_follows_table_2() {
        assert_eq!(HmacDrbg::<sha2::Sha224>::security_strength_bits(), 192);
        assert_eq!(HmacDrbg::<sha2::Sha512_256>::security_strength_bits(), 256);
        assert_eq!(HmacDrbg::<sha2::Sha384>::security_strength_bits(), 256);
    }

    /// The served hashes: the table's strength is the mechanism's, and the entropy input and
    /// nonce the pool draws are that strength and half of it.
    #[test]
    fn served_hashes_take_their_strength_from_the_table() {
        assert_eq!(HmacSha256Drbg::security_strength_bits(), 256);
        assert_eq!(HmacSha512Drbg::security_strength_bits(), 256);
        assert_eq!(Algorithm::HmacSha256.security_strength_bits(), 256);
        assert_eq!(Algorithm::HmacSha512.security_strength_bits(), 256);
        assert_eq!((<HmacSha256Drbg as Drbg>::ENTROPY_LEN, <HmacSha256Drbg as Drbg>::NONCE_LEN), (32, 16));
        assert_eq!((<HmacSha512Drbg as Drbg>::ENTROPY_LEN, <HmacSha512Drbg as Drbg>::NONCE_LEN), (32, 16));
    }

    #[test]
    fn debug_shows_no_state() {
        let d = HmacDrbg::<sha2::Sha256>::instantiate(&[7u8; 32], &[1u8; 16], b"p");
        let s = format!("{d:?}");
        assert!(s.starts_with("HmacDrbg { hash: ") && s.contains("Sha256"), "{s}");
        assert!(s.ends_with("reseed_counter: 1, .. }"), "only the hash and the counter: {s}");
    }
}
