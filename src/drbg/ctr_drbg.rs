//! NIST SP 800-90A Rev. 1 CTR_DRBG (section 10.2.1) over any AES key size, with or without
//! the block-cipher derivation function.
//!
//! A Generate is one run of counter blocks through the cipher: the output's whole blocks are
//! encrypted in place in the caller's buffer (no intermediate copy), then its last partial
//! block and the Update's blocks. The Update, which ends every Generate, replaces Key and V:
//! that is the mechanism's backtracking resistance. Outputs longer than
//! [`MAX_BYTES_PER_REQUEST`] are produced as several Generate calls, never refused.
//!
//! An instance exists only once instantiated ([`CtrDrbg::new`] is its one constructor), so
//! "generate before instantiate" cannot be written; after [`CtrDrbg::uninstantiate`] it refuses
//! to generate.

use std::fmt;

use aes::cipher::array::Array;
use aes::cipher::consts::U16;
use aes::cipher::{
    BlockCipherEncBackend, BlockCipherEncClosure, BlockCipherEncrypt, BlockSizeUser, KeyInit, KeySizeUser,
};
use zeroize::Zeroize;

use super::algorithm_id::Algorithm;
use super::generator::{ApprovedDrbg, Drbg, ReseedRequired};

#[cfg(target_arch = "x86_64")]
pub mod x86;

/// AES block length in bytes (outlen).
const BLOCK_LEN: usize = 16;
/// Largest seedlen (AES-256: 32-byte key + 16-byte block).
const MAX_SEED_LEN: usize = 48;
/// SP 800-90A table 3: max_number_of_bits_per_request = 2^19 bits for AES.
pub const MAX_BYTES_PER_REQUEST: usize = (1 << 19) / 8;
/// SP 800-90A table 3: reseed_interval at most 2^48 requests.
pub const RESEED_INTERVAL: u64 = 1 << 48;
/// Outputs up to this many bytes (tokens, nonces, UUIDs) are encrypted with their Update blocks
/// as one batch in a stack buffer, on the `aes` crate's backend even where one of drbgd's own
/// keystream loops is chosen (its own key schedule would cost more than it saves).
const SMALL_REQUEST: usize = 256;
/// Counter blocks written, then encrypted, at a time: 1 KiB stays in L1 between the counter
/// write and the encryption, and is a whole number of the parallel blocks of both backends
/// the `aes` crate picks on x86 today (8 for AES-NI, 64 for VAES-512). Its 30-block VAES-256
/// backend is not picked with cpufeatures 0.3.1 (see `x86.rs`); once it is, where drbgd's own
/// VAES-256 path is not chosen, a batch ends with four blocks encrypted one at a time.
const BATCH_BLOCKS: usize = 64;

/// CTR_DRBG over AES-256, the `aes256ctr` mechanism (use df).
pub type Aes256CtrDrbg = CtrDrbg<aes::Aes256Enc>;
/// CTR_DRBG over AES-192, the `aes192ctr` mechanism (use df).
pub type Aes192CtrDrbg = CtrDrbg<aes::Aes192Enc>;
/// CTR_DRBG over AES-128, the `aes128ctr` mechanism (use df).
pub type Aes128CtrDrbg = CtrDrbg<aes::Aes128Enc>;

/// The service algorithm of each key size (its security strength comes with it).
pub trait CtrKeySize: AesCipher + 'static {
    /// The service algorithm of this key size.
    const ALGORITHM: Algorithm;
}

impl CtrKeySize for aes::Aes128Enc {
    const ALGORITHM: Algorithm = Algorithm::Aes128Ctr;
}

impl CtrKeySize for aes::Aes192Enc {
    const ALGORITHM: Algorithm = Algorithm::Aes192Ctr;
}

impl CtrKeySize for aes::Aes256Enc {
    const ALGORITHM: Algorithm = Algorithm::Aes256Ctr;
}

/// Security strength in bytes (SP 800-90A table 3: the key length).
const fn strength_bytes(alg: Algorithm) -> usize {
    alg.security_strength_bits() as usize / 8
}

/// A CTR_DRBG instance over block cipher `C` (AES-128, -192 or -256).
pub struct CtrDrbg<C> {
    cipher: C,
    /// The key `cipher` was made from (keylen bytes used), for drbgd's own keystream loops'
    /// schedule ([`x86`]).
    key: [u8; 32],
    v: u128,
    /// 1 after (re)seeding, one more per Generate; 0 only once uninstantiated.
    reseed_counter: u64,
    /// Generate refuses once `reseed_counter` exceeds this (at most [`RESEED_INTERVAL`]).
    reseed_interval: u64,
    use_df: bool,
}

/// The cipher bound: an AES with 128-bit blocks that can be keyed from bytes.
pub trait AesCipher: KeyInit + BlockCipherEncrypt + BlockSizeUser<BlockSize = U16> + Send {}
impl<C: KeyInit + BlockCipherEncrypt + BlockSizeUser<BlockSize = U16> + Send> AesCipher for C {}

impl<C> fmt::Debug for CtrDrbg<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CtrDrbg")
            .field("use_df", &self.use_df)
            .field("reseed_counter", &self.reseed_counter)
            .finish_non_exhaustive()
    }
}

impl<C> Drop for CtrDrbg<C> {
    fn drop(&mut self) {
        // The cipher zeroizes its round keys on drop (aes `zeroize` feature).
        self.wipe();
    }
}

impl<C> CtrDrbg<C> {
    /// Zeroizes Key's bytes, V and the reseed counter in place (drop, and
    /// [`CtrDrbg::uninstantiate`]).
    fn wipe(&mut self) {
        self.v.zeroize();
        self.key.zeroize();
        self.reseed_counter = 0;
    }
}

impl<C: AesCipher> CtrDrbg<C> {
    /// keylen in bytes.
    fn key_len() -> usize {
        <C as KeySizeUser>::key_size()
    }

    /// seedlen in bytes = keylen + outlen.
    fn seed_len() -> usize {
        Self::key_len() + BLOCK_LEN
    }

    fn keyed(key: &[u8]) -> C {
        C::new_from_slice(key).expect("key slice has the cipher's key length")
    }

    /// CTR_DRBG_Instantiate_algorithm (10.2.1.3.2 with df, 10.2.1.3.1 without).
    ///
    /// Without df the nonce must be empty, and `entropy` exactly seedlen bytes.
    ///
    /// # Panics
    /// Without df, if `entropy` is not seedlen bytes or `personalization` is longer.
    pub fn new(entropy: &[u8], nonce: &[u8], personalization: &[u8], use_df: bool) -> Self {
        let mut seed = [0u8; MAX_SEED_LEN];
        let seed = &mut seed[..Self::seed_len()];
        if use_df {
            block_cipher_df::<C>(&[entropy, nonce, personalization], seed);
        } else {
            assert!(nonce.is_empty(), "no-df CTR_DRBG takes no nonce");
            assert_full_entropy(entropy, seed.len());
            xor_padded(entropy, personalization, seed);
        }
        let mut drbg = CtrDrbg {
            cipher: Self::keyed(&[0u8; 32][..Self::key_len()]),
            key: [0; 32],
            v: 0,
            reseed_counter: 1,
            reseed_interval: RESEED_INTERVAL,
            use_df,
        };
        drbg.update(seed);
        seed.zeroize();
        drbg
    }

    /// CTR_DRBG_Reseed_algorithm (10.2.1.4). Does nothing once [`Self::uninstantiate`] has run
    /// (SP 800-90A 9.2 step 1: an invalid state is not reseeded), so Generate stays refused.
    ///
    /// # Panics
    /// Without df, if `entropy` is not seedlen bytes or `additional` is longer.
    pub fn reseed_with(&mut self, entropy: &[u8], additional: &[u8]) {
        if self.reseed_counter == 0 {
            return;
        }
        let mut seed = [0u8; MAX_SEED_LEN];
        let seed = &mut seed[..Self::seed_len()];
        if self.use_df {
            block_cipher_df::<C>(&[entropy, additional], seed);
        } else {
            assert_full_entropy(entropy, seed.len());
            xor_padded(entropy, additional, seed);
        }
        self.update(seed);
        seed.zeroize();
        self.reseed_counter = 1;
    }

    /// Lowers the reseed interval below table 3's [`RESEED_INTERVAL`] (SP 800-90A lets an
    /// implementation choose any up to it): once `requests` Generate calls have been made since
    /// the last (re)seed, Generate refuses until [`Self::reseed_with`].
    ///
    /// # Panics
    /// If `requests` is 0 or above [`RESEED_INTERVAL`].
    pub fn set_reseed_interval(&mut self, requests: u64) {
        assert!((1..=RESEED_INTERVAL).contains(&requests), "the reseed interval is 1 to 2^48 requests");
        self.reseed_interval = requests;
    }

    /// Uninstantiate (SP 800-90A 9.4): Key's bytes, V and the reseed counter zeroized in place,
    /// and the cipher keyed with the all-zero key (the old round keys are wiped as the old
    /// cipher drops, aes `zeroize`). Generate then refuses for good, a reseed doing nothing; the
    /// instance is there to be dropped.
    pub fn uninstantiate(&mut self) {
        self.cipher = Self::keyed(&[0u8; 32][..Self::key_len()]);
        self.wipe();
    }

    /// Whether the state reads as uninstantiated: Key's bytes, V and the reseed counter zero,
    /// and the cipher keyed with the all-zero key (probed: a block encrypted under it).
    pub fn is_zeroized(&self) -> bool {
        let probe = |cipher: &C| {
            let mut block = Array([0u8; BLOCK_LEN]);
            cipher.encrypt_block(&mut block);
            block
        };
        let zero_key = Self::keyed(&[0u8; 32][..Self::key_len()]);
        self.reseed_counter == 0
            && self.v == 0
            && self.key.iter().all(|b| *b == 0)
            && probe(&self.cipher) == probe(&zero_key)
    }

    /// CTR_DRBG_Generate_algorithm (10.2.1.5) for any length: outputs longer than
    /// [`MAX_BYTES_PER_REQUEST`] are split into several Generate calls, each with its own
    /// Update step. The additional input (if any) is given to every call.
    ///
    /// # Errors
    /// [`ReseedRequired`] once `reseed_counter` exceeds the reseed interval ([`RESEED_INTERVAL`]
    /// unless lowered), or after [`Self::uninstantiate`]; nothing is written to `out` by the
    /// Generate call refused.
    pub fn generate_with(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), ReseedRequired> {
        let mut add = [0u8; MAX_SEED_LEN];
        let add = &mut add[..Self::seed_len()];
        if !additional.is_empty() {
            if self.use_df {
                block_cipher_df::<C>(&[additional], add);
            } else {
                xor_padded(&[], additional, add);
            }
        }
        let result = self.generate_chunks(out, add, !additional.is_empty());
        add.zeroize();
        result
    }

    fn generate_chunks(&mut self, out: &mut [u8], add: &[u8], has_add: bool) -> Result<(), ReseedRequired> {
        let mut chunks = out.chunks_mut(MAX_BYTES_PER_REQUEST);
        // A zero-length request still runs one Generate (and its Update), as the standard does.
        let first: &mut [u8] = chunks.next().unwrap_or_default();
        self.generate_one(first, add, has_add)?;
        for chunk in chunks {
            self.generate_one(chunk, add, has_add)?;
        }
        Ok(())
    }

    /// Generates `out`, then `sample` (a block never served) from the Generate that returns
    /// `out`'s last bytes: the output padded to a whole block, then the sample's block, then the
    /// Update, so the health test's block costs no Update and key schedule of its own. Only where
    /// that last piece and the sample exceed [`MAX_BYTES_PER_REQUEST`] together does the sample
    /// take a Generate of its own, as a separate `generate` would.
    ///
    /// # Errors
    /// As [`Self::generate_with`].
    pub fn generate_sampled_with(
        &mut self,
        out: &mut [u8],
        sample: &mut [u8; BLOCK_LEN],
    ) -> Result<(), ReseedRequired> {
        let last_len = match out.len() % MAX_BYTES_PER_REQUEST {
            0 if !out.is_empty() => MAX_BYTES_PER_REQUEST,
            n => n,
        };
        let (head, last) = out.split_at_mut(out.len() - last_len);
        for chunk in head.chunks_mut(MAX_BYTES_PER_REQUEST) {
            self.generate_one(chunk, &[], false)?;
        }
        if last.len().next_multiple_of(BLOCK_LEN) + BLOCK_LEN > MAX_BYTES_PER_REQUEST {
            self.generate_one(last, &[], false)?;
            return self.generate_one(sample, &[], false);
        }
        self.check_interval()?;
        self.generate_blocks(last, Some(sample), &[]);
        self.reseed_counter += 1;
        Ok(())
    }

    /// 10.2.1.5 step 1, and the refusal of an uninstantiated state (counter 0, which no
    /// (re)seed leaves).
    fn check_interval(&self) -> Result<(), ReseedRequired> {
        if self.reseed_counter == 0 || self.reseed_counter > self.reseed_interval {
            Err(ReseedRequired)
        } else {
            Ok(())
        }
    }

    fn generate_one(&mut self, out: &mut [u8], add: &[u8], has_add: bool) -> Result<(), ReseedRequired> {
        self.check_interval()?;
        if has_add {
            self.update(add);
        }
        self.generate_blocks(out, None, add);
        self.reseed_counter += 1;
        Ok(())
    }

    /// Steps 3-6 of one Generate (10.2.1.5): E(Key, V+1), E(Key, V+2), ... give `out` (its last
    /// block cut to length), then `sample` if asked, then the Update's seedlen bytes (XORed with
    /// `add`) that become the new Key and V. One run of counter blocks through the cipher, one
    /// key schedule. Outputs above [`SMALL_REQUEST`] are encrypted in place in `out`; smaller
    /// ones go through one batch with the blocks after them (one pass of the backend's
    /// block-at-a-time loop, where two short runs measured slower) and are copied out.
    fn generate_blocks(&mut self, out: &mut [u8], sample: Option<&mut [u8; BLOCK_LEN]>, add: &[u8]) {
        debug_assert!(
            out.len().next_multiple_of(BLOCK_LEN) + BLOCK_LEN * usize::from(sample.is_some())
                <= MAX_BYTES_PER_REQUEST,
            "one Generate returns at most 2^19 bits"
        );
        let small = out.len() <= SMALL_REQUEST;
        let (whole, tail) = Array::<u8, U16>::slice_as_chunks_mut(out);
        let staged = if small { whole.len() } else { 0 };
        let mut run = [Array::<u8, U16>([0u8; BLOCK_LEN]); (SMALL_REQUEST + MAX_SEED_LEN) / BLOCK_LEN + 2];
        // seedlen is not a whole number of blocks for AES-192 (40 bytes): its last Update block
        // is generated in full and its tail ignored, as 10.2.1.2 says.
        let used = staged
            + usize::from(!tail.is_empty())
            + usize::from(sample.is_some())
            + Self::seed_len().div_ceil(BLOCK_LEN);
        let run = &mut run[..used];
        if small {
            self.v = counter_blocks(self.v, run);
            self.cipher.encrypt_blocks(run);
        } else {
            self.v = self.encrypt_counters(whole, run);
        }
        let bytes = Array::slice_as_flattened_mut(run);
        let (front, mut rest) = bytes.split_at_mut(staged * BLOCK_LEN);
        if staged > 0 {
            Array::slice_as_flattened_mut(whole).copy_from_slice(front);
        }
        if !tail.is_empty() {
            tail.copy_from_slice(&rest[..tail.len()]);
            rest = &mut rest[BLOCK_LEN..];
        }
        if let Some(sample) = sample {
            sample.copy_from_slice(&rest[..BLOCK_LEN]);
            rest = &mut rest[BLOCK_LEN..];
        }
        self.rekey_from(rest, add);
        bytes.zeroize();
    }

    /// Encrypts the counters after V in place over `whole`, then over `after`, and returns the
    /// last: on drbgd's own loop where [`x86::chosen`] picks one, otherwise through the `aes`
    /// crate's backend.
    fn encrypt_counters(&self, whole: &mut [Array<u8, U16>], after: &mut [Array<u8, U16>]) -> u128 {
        #[cfg(target_arch = "x86_64")]
        if let Some(mut keys) = x86::chosen().and_then(x86::RoundKeys::new) {
            let keys = keys.expand(&self.key[..Self::key_len()]);
            let v = keys.ctr(self.v, Array::slice_as_flattened_mut(whole));
            return keys.ctr(v, Array::slice_as_flattened_mut(after));
        }
        ctr_keystream(&self.cipher, self.v, whole, after)
    }

    /// CTR_DRBG_Update (10.2.1.2): new Key and V from seedlen bytes of keystream XOR
    /// `provided`, which is a Generate's run of counter blocks with no output before it.
    fn update(&mut self, provided: &[u8]) {
        self.generate_blocks(&mut [], None, provided);
    }

    /// The second half of Update: `temp XOR provided` becomes Key || V.
    fn rekey_from(&mut self, temp: &mut [u8], provided: &[u8]) {
        for (t, p) in temp.iter_mut().zip(provided) {
            *t ^= p;
        }
        let key_len = Self::key_len();
        self.cipher = Self::keyed(&temp[..key_len]);
        self.key[..key_len].copy_from_slice(&temp[..key_len]);
        let mut v = [0u8; BLOCK_LEN];
        v.copy_from_slice(&temp[key_len..key_len + BLOCK_LEN]);
        self.v = u128::from_be_bytes(v);
        v.zeroize();
    }
}

/// Without the derivation function the entropy input is used as the seed itself, so it must
/// be exactly seedlen bytes of full entropy (10.2.1.3.1, 10.2.1.4.1). Zero-padding a short
/// input would silently lower the seed's entropy; it is refused instead.
fn assert_full_entropy(entropy: &[u8], seed_len: usize) {
    assert_eq!(entropy.len(), seed_len, "no-df CTR_DRBG needs exactly seedlen bytes of entropy input");
}

/// `out = pad(a) XOR pad(b)` where pad right-pads with zeros to `out.len()` (no-df seeding).
fn xor_padded(a: &[u8], b: &[u8], out: &mut [u8]) {
    assert!(a.len() <= out.len() && b.len() <= out.len(), "no-df inputs are at most seedlen");
    out.fill(0);
    for (o, x) in out.iter_mut().zip(a) {
        *o ^= x;
    }
    for (o, x) in out.iter_mut().zip(b) {
        *o ^= x;
    }
}

/// Block_Cipher_df (10.3.2) over the concatenation of `inputs`, writing `out.len()` bytes.
fn block_cipher_df<C: AesCipher>(inputs: &[&[u8]], out: &mut [u8]) {
    let key_len = <C as KeySizeUser>::key_size();
    let input_len: usize = inputs.iter().map(|s| s.len()).sum();
    let mut df_key = [0u8; 32];
    for (i, b) in df_key.iter_mut().enumerate() {
        *b = i as u8;
    }
    let bcc_cipher = C::new_from_slice(&df_key[..key_len]).expect("df key length");
    let temp_len = key_len + BLOCK_LEN;
    let mut bcc = Bcc::new(&bcc_cipher, temp_len.div_ceil(BLOCK_LEN));
    bcc.absorb(&(input_len as u32).to_be_bytes());
    bcc.absorb(&(out.len() as u32).to_be_bytes());
    for s in inputs {
        bcc.absorb(s);
    }
    bcc.absorb(&[0x80]);
    let mut temp = [0u8; MAX_SEED_LEN];
    bcc.finish(&mut temp[..temp_len]);
    let cipher = C::new_from_slice(&temp[..key_len]).expect("df key length");
    let mut x = Array([0u8; BLOCK_LEN]);
    x.copy_from_slice(&temp[key_len..temp_len]);
    for chunk in out.chunks_mut(BLOCK_LEN) {
        cipher.encrypt_block(&mut x);
        chunk.copy_from_slice(&x[..chunk.len()]);
    }
    x.0.zeroize();
    temp.zeroize();
}

/// The BCC chains (10.3.3) of Block_Cipher_df, fed incrementally so its input is never
/// concatenated. The df runs BCC once per output block of `temp` (2 for AES-128, 3 for the
/// others), and the runs differ only in their first block, the counter `i || 0`; so they run
/// side by side, each later block of S one `encrypt_blocks` call over every chain: independent
/// encryptions the CPU overlaps, where one run after another waits on each block's latency.
struct Bcc<'a, C> {
    cipher: &'a C,
    chains: [Array<u8, U16>; MAX_SEED_LEN / BLOCK_LEN],
    runs: usize,
    /// The next block of S, `fill` bytes of it so far.
    pending: [u8; BLOCK_LEN],
    fill: usize,
}

impl<'a, C: AesCipher> Bcc<'a, C> {
    /// The chains after their first block: `E(i || 0)` for run `i` of `runs`.
    fn new(cipher: &'a C, runs: usize) -> Self {
        let mut chains = [Array([0u8; BLOCK_LEN]); MAX_SEED_LEN / BLOCK_LEN];
        for (i, chain) in chains[..runs].iter_mut().enumerate() {
            chain[..4].copy_from_slice(&(i as u32).to_be_bytes());
        }
        cipher.encrypt_blocks(&mut chains[..runs]);
        Bcc { cipher, chains, runs, pending: [0u8; BLOCK_LEN], fill: 0 }
    }

    fn absorb(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let take = (BLOCK_LEN - self.fill).min(data.len());
            self.pending[self.fill..self.fill + take].copy_from_slice(&data[..take]);
            self.fill += take;
            data = &data[take..];
            if self.fill == BLOCK_LEN {
                self.step();
            }
        }
    }

    /// Chains the pending block (zero-padded) into every run.
    fn step(&mut self) {
        self.pending[self.fill..].fill(0);
        for chain in &mut self.chains[..self.runs] {
            for (c, p) in chain.iter_mut().zip(&self.pending) {
                *c ^= p;
            }
        }
        self.cipher.encrypt_blocks(&mut self.chains[..self.runs]);
        self.fill = 0;
    }

    /// Pads S to whole blocks with zeros and writes the runs' results, in order, into `temp`.
    fn finish(&mut self, temp: &mut [u8]) {
        if self.fill != 0 {
            self.step();
        }
        let results = Array::slice_as_flattened(&self.chains[..self.runs]);
        temp.copy_from_slice(&results[..temp.len()]);
    }
}

impl<C> Drop for Bcc<'_, C> {
    fn drop(&mut self) {
        for chain in &mut self.chains {
            chain.0.zeroize();
        }
        self.pending.zeroize();
    }
}

impl<C: CtrKeySize> Drbg for CtrDrbg<C> {
    const ALGORITHM: Algorithm = C::ALGORITHM;
    /// 1.5 times the security strength (384 bits for AES-256): the strength plus margin for the
    /// derivation function.
    const ENTROPY_LEN: usize = strength_bytes(C::ALGORITHM) * 3 / 2;
    /// SP 800-90A 8.6.7: a nonce of at least half the security strength (128 bits for AES-256).
    const NONCE_LEN: usize = strength_bytes(C::ALGORITHM) / 2;

    fn instantiate(entropy: &[u8], nonce: &[u8], personalization: &[u8]) -> Self {
        CtrDrbg::new(entropy, nonce, personalization, true)
    }

    fn reseed(&mut self, entropy: &[u8], additional: &[u8]) {
        self.reseed_with(entropy, additional);
    }

    fn generate(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), ReseedRequired> {
        self.generate_with(out, additional)
    }

    fn generate_sampled(&mut self, out: &mut [u8], sample: &mut [u8; 16]) -> Result<(), ReseedRequired> {
        self.generate_sampled_with(out, sample)
    }
}

impl<C: CtrKeySize> ApprovedDrbg for CtrDrbg<C> {
    fn set_reseed_interval(&mut self, requests: u64) {
        CtrDrbg::set_reseed_interval(self, requests);
    }

    fn uninstantiate(&mut self) {
        CtrDrbg::uninstantiate(self);
    }

    fn is_zeroized(&self) -> bool {
        CtrDrbg::is_zeroized(self)
    }
}

#[cfg(test)]
impl<C> CtrDrbg<C> {
    /// Flips the lowest bit of V: a fault in the state update, for the self-tests' mutation
    /// test.
    pub(crate) fn flip_v_bit(&mut self) {
        self.v ^= 1;
    }
}

impl<C: AesCipher> rand_core::TryRng for CtrDrbg<C> {
    type Error = ReseedRequired;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        let mut b = [0u8; 4];
        self.generate_with(&mut b, &[])?;
        Ok(u32::from_le_bytes(b))
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        let mut b = [0u8; 8];
        self.generate_with(&mut b, &[])?;
        Ok(u64::from_le_bytes(b))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        self.generate_with(dst, &[])
    }
}

impl<C: AesCipher> rand_core::TryCryptoRng for CtrDrbg<C> {}

/// Encrypts the counter blocks V+1, V+2, ... in place over `blocks` (as [`counter_blocks`]
/// writes them, [`BATCH_BLOCKS`] at a time), then over `after` (a Generate's last blocks and
/// Update), and returns the last counter. The cipher's backend is chosen once for the whole
/// run, not once per batch as `encrypt_blocks` would (a CPU-feature check, a round-key
/// broadcast and a call per 1 KiB otherwise, a quarter of a 64 KiB Generate's time on an
/// AVX-512 host). Never inlined: one copy per cipher, so the benches' raw keystream runs the
/// very code the generator does.
#[inline(never)]
pub fn ctr_keystream<C: BlockCipherEncrypt + BlockSizeUser<BlockSize = U16>>(
    cipher: &C,
    v: u128,
    blocks: &mut [Array<u8, U16>],
    after: &mut [Array<u8, U16>],
) -> u128 {
    let mut run = CounterRun { v, blocks, after };
    cipher.encrypt_with_backend(&mut run);
    run.v
}

/// [`ctr_keystream`]'s loop, run with the backend the cipher picked.
struct CounterRun<'a> {
    v: u128,
    blocks: &'a mut [Array<u8, U16>],
    after: &'a mut [Array<u8, U16>],
}

impl BlockSizeUser for &mut CounterRun<'_> {
    type BlockSize = U16;
}

impl BlockCipherEncClosure for &mut CounterRun<'_> {
    #[inline(always)]
    fn call<B: BlockCipherEncBackend<BlockSize = U16>>(self, backend: &B) {
        for batch in self.blocks.chunks_mut(BATCH_BLOCKS).chain([&mut self.after[..]]) {
            self.v = counter_blocks(self.v, batch);
            let (par, tail) = Array::<_, B::ParBlocksSize>::slice_as_chunks_mut(batch);
            for blocks in par {
                backend.encrypt_par_blocks_inplace(blocks);
            }
            backend.encrypt_tail_blocks_inplace(tail);
        }
    }
}

/// Writes V+1, V+2, ... (big-endian, wrapping at 2^128, as SP 800-90A increments V) into
/// `blocks` and returns the last. Where the batch does not carry into V's high half (all but
/// one batch in 2^64 / 64), the high half is one constant store and the low half an add and a
/// byte swap per block; otherwise block by block in 128 bits.
#[inline]
fn counter_blocks(v: u128, blocks: &mut [Array<u8, U16>]) -> u128 {
    let n = blocks.len() as u64;
    let (high, low) = ((v >> 64) as u64, v as u64);
    if low.checked_add(n).is_some() {
        let high = high.to_be_bytes();
        for (i, block) in (1..).zip(blocks.iter_mut()) {
            block[..8].copy_from_slice(&high);
            block[8..].copy_from_slice(&(low + i).to_be_bytes());
        }
        v.wrapping_add(u128::from(n))
    } else {
        let mut v = v;
        for block in blocks {
            v = v.wrapping_add(1);
            *block = Array(v.to_be_bytes());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counter blocks read as V incremented one at a time in 128 bits, across the carry
    /// into the high half and the wrap at 2^128, for every batch length up to two batches.
    #[test]
    fn counter_blocks_count_in_128_bits() {
        let starts = [
            0,
            1,
            u128::from(u64::MAX) - 70,
            u128::from(u64::MAX),
            u128::MAX - 70,
            u128::MAX,
            0x0123_4567 << 64,
        ];
        for v in starts {
            for len in 0..=2 * BATCH_BLOCKS {
                let mut blocks = vec![Array([0u8; BLOCK_LEN]); len];
                let last = counter_blocks(v, &mut blocks);
                let mut expected = v;
                for (i, block) in blocks.iter().enumerate() {
                    expected = expected.wrapping_add(1);
                    assert_eq!(block.0, expected.to_be_bytes(), "v {v:#x}, len {len}, block {i}");
                }
                assert_eq!(last, expected, "v {v:#x}, len {len}");
            }
        }
    }

    /// Block_Cipher_df written as 10.3.2 and 10.3.3 read: S concatenated and padded, one BCC
    /// run after another, one block at a time.
    fn spec_df<C: AesCipher>(input: &[u8], out_len: usize) -> Vec<u8> {
        let key_len = <C as KeySizeUser>::key_size();
        let mut s = Vec::new();
        s.extend_from_slice(&(input.len() as u32).to_be_bytes());
        s.extend_from_slice(&(out_len as u32).to_be_bytes());
        s.extend_from_slice(input);
        s.push(0x80);
        while s.len() % BLOCK_LEN != 0 {
            s.push(0);
        }
        let df_key: Vec<u8> = (0..key_len as u8).collect();
        let k = C::new_from_slice(&df_key).unwrap();
        let mut temp = Vec::new();
        for i in 0u32.. {
            if temp.len() >= key_len + BLOCK_LEN {
                break;
            }
            let mut iv = [0u8; BLOCK_LEN];
            iv[..4].copy_from_slice(&i.to_be_bytes());
            let mut chain = Array([0u8; BLOCK_LEN]);
            for block in std::iter::once(&iv[..]).chain(s.chunks(BLOCK_LEN)) {
                for (c, b) in chain.iter_mut().zip(block) {
                    *c ^= b;
                }
                k.encrypt_block(&mut chain);
            }
            temp.extend_from_slice(&chain);
        }
        let cipher = C::new_from_slice(&temp[..key_len]).unwrap();
        let mut x = Array([0u8; BLOCK_LEN]);
        x.copy_from_slice(&temp[key_len..key_len + BLOCK_LEN]);
        let mut out = Vec::new();
        while out.len() < out_len {
            cipher.encrypt_block(&mut x);
            out.extend_from_slice(&x);
        }
        out.truncate(out_len);
        out
    }

    /// Every input length from 0 to 80 bytes (so S ends on every offset in a block, 0x80 as
    /// a block's last byte among them, which no CAVP df record reaches), split into three
    /// pieces at several points, for every key size.
    #[test]
    fn df_matches_the_standard_read_literally() {
        fn check<C: AesCipher>() {
            let seed_len = <C as KeySizeUser>::key_size() + BLOCK_LEN;
            let input: Vec<u8> = (0..80u8).map(|i| i.wrapping_mul(37) ^ 0x5c).collect();
            for len in 0..=input.len() {
                let want = spec_df::<C>(&input[..len], seed_len);
                for (a, b) in [(0, 0), (len / 3, 2 * len / 3), (len.min(7), len.min(23)), (len, len)] {
                    let (x, rest) = input[..len].split_at(a);
                    let (y, z) = rest.split_at(b - a);
                    let mut got = vec![0u8; seed_len];
                    block_cipher_df::<C>(&[x, y, z], &mut got);
                    assert_eq!(got, want, "input of {len} bytes split at {a}, {b}");
                }
            }
        }
        check::<aes::Aes128Enc>();
        check::<aes::Aes192Enc>();
        check::<aes::Aes256Enc>();
    }

    #[test]
    fn debug_shows_no_state() {
        let d = Aes256CtrDrbg::new(&[7u8; 48], &[1u8; 16], b"p", true);
        let s = format!("{d:?}");
        assert!(s.contains("CtrDrbg") && !s.contains("v:") && !s.contains("cipher"));
    }

    #[test]
    fn large_requests_are_split_not_refused() {
        let mut a = Aes256CtrDrbg::new(&[7u8; 48], &[1u8; 16], b"", true);
        let mut b = Aes256CtrDrbg::new(&[7u8; 48], &[1u8; 16], b"", true);
        let mut big = vec![0u8; MAX_BYTES_PER_REQUEST + 100];
        a.generate_with(&mut big, &[]).unwrap();
        let mut first = vec![0u8; MAX_BYTES_PER_REQUEST];
        let mut second = vec![0u8; 100];
        b.generate_with(&mut first, &[]).unwrap();
        b.generate_with(&mut second, &[]).unwrap();
        assert_eq!(&big[..MAX_BYTES_PER_REQUEST], &first[..]);
        assert_eq!(&big[MAX_BYTES_PER_REQUEST..], &second[..]);
        assert_eq!(a.reseed_counter, 3);
    }

    #[test]
    fn reseed_interval_is_enforced() {
        let mut d = Aes256CtrDrbg::new(&[7u8; 48], &[1u8; 16], b"", true);
        d.reseed_counter = RESEED_INTERVAL + 1;
        let mut out = [0u8; 16];
        assert_eq!(d.generate_with(&mut out, &[]), Err(ReseedRequired));
        d.reseed_with(&[9u8; 48], &[]);
        assert!(d.generate_with(&mut out, &[]).is_ok());
        d.set_reseed_interval(1);
        let mut sample = [0u8; 16];
        assert_eq!(d.generate_sampled_with(&mut out, &mut sample), Err(ReseedRequired), "a lowered interval");
    }

    #[test]
    fn uninstantiate_zeroizes_and_refuses() {
        let mut d = Aes192CtrDrbg::new(&[7u8; 36], &[1u8; 12], b"", true);
        assert!(!d.is_zeroized());
        d.uninstantiate();
        assert!(d.is_zeroized());
        let mut out = [0x5au8; 16];
        assert_eq!(d.generate_with(&mut out, b"add"), Err(ReseedRequired));
        assert_eq!(out, [0x5au8; 16]);
        d.reseed_with(&[9u8; 36], b"add");
        assert!(d.is_zeroized(), "a reseed leaves an uninstantiated state as it is");
        assert_eq!(d.generate_with(&mut out, &[]), Err(ReseedRequired));
        assert_eq!(out, [0x5au8; 16]);
    }

    #[test]
    #[should_panic(expected = "exactly seedlen")]
    fn no_df_refuses_short_entropy_at_instantiate() {
        // 47 bytes for AES-256 (seedlen 48): zero-padding it would lose a byte of entropy.
        let _ = Aes256CtrDrbg::new(&[7u8; 47], &[], b"", false);
    }

    #[test]
    #[should_panic(expected = "exactly seedlen")]
    fn no_df_refuses_short_entropy_at_reseed() {
        let mut d = Aes128CtrDrbg::new(&[7u8; 32], &[], b"", false);
        d.reseed_with(&[9u8; 16], &[]);
    }

    #[test]
    fn no_df_takes_exactly_seedlen() {
        let mut d = Aes192CtrDrbg::new(&[7u8; 40], &[], b"short personalization", false);
        d.reseed_with(&[9u8; 40], b"short additional input");
        let mut out = [0u8; 16];
        d.generate_with(&mut out, b"padded, as 10.2.1.5.1 says").unwrap();
    }

    proptest::proptest! {
        /// `ctr_keystream` (batches and the blocks after them, through one backend run) equals
        /// each counter block encrypted on its own, from counters on both sides of the carries
        /// into V's high half and of the wrap at 2^128, for AES-128 and AES-256.
        #[test]
        fn ctr_keystream_is_each_counter_encrypted(
            start in proptest::prop_oneof![
                proptest::prelude::any::<u128>(),
                proptest::prelude::Strategy::prop_map(0u128..300, |d| (1u128 << 64).wrapping_sub(d)),
                proptest::prelude::Strategy::prop_map(0u128..300, |d| 0u128.wrapping_sub(d)),
            ],
            blocks in 0usize..300,
            after in 0usize..6,
            key in proptest::prelude::any::<[u8; 32]>(),
        ) {
            fn check<C: AesCipher>(key: &[u8], start: u128, blocks: usize, after: usize) -> Result<(), proptest::test_runner::TestCaseError> {
                let cipher = C::new_from_slice(key).unwrap();
                let mut run = vec![Array([0u8; BLOCK_LEN]); blocks + after];
                let (body, tail) = run.split_at_mut(blocks);
                let last = ctr_keystream(&cipher, start, body, tail);
                proptest::prop_assert_eq!(last, start.wrapping_add((blocks + after) as u128));
                for (i, got) in (1u128..).zip(&run) {
                    let mut want = Array(start.wrapping_add(i).to_be_bytes());
                    cipher.encrypt_block(&mut want);
                    proptest::prop_assert_eq!(got, &want, "block {}", i);
                }
                Ok(())
            }
            check::<aes::Aes128Enc>(&key[..16], start, blocks, after)?;
            check::<aes::Aes256Enc>(&key, start, blocks, after)?;
        }

        /// The output and its health-test sample: every Generate but the last returns
        /// [`MAX_BYTES_PER_REQUEST`] bytes of output, and the last returns the rest padded to
        /// a block, then the sample (a Generate of `padded + 16` bytes), leaving the same state;
        /// where that last piece and the sample do not fit in one Generate, they take two, as
        /// two calls of `generate` would.
        #[test]
        fn output_and_sample_are_one_generate(len in proptest::prop_oneof![
            0usize..600,
            (MAX_BYTES_PER_REQUEST - 40)..(MAX_BYTES_PER_REQUEST + 20),
            (2 * MAX_BYTES_PER_REQUEST - 40)..(2 * MAX_BYTES_PER_REQUEST + 20),
        ]) {
            sampled_as_generates::<aes::Aes128Enc>(len)?;
            sampled_as_generates::<aes::Aes192Enc>(len)?;
            sampled_as_generates::<aes::Aes256Enc>(len)?;
        }
    }

    /// [`CtrDrbg::generate_sampled_with`] against the Generates it stands for, run through
    /// [`CtrDrbg::generate_with`].
    fn sampled_as_generates<C: AesCipher>(len: usize) -> Result<(), proptest::test_runner::TestCaseError> {
        let mut a = CtrDrbg::<C>::new(&[7u8; 48], &[1u8; 16], b"", true);
        let mut b = CtrDrbg::<C>::new(&[7u8; 48], &[1u8; 16], b"", true);
        let (mut out, mut sample) = (vec![0u8; len], [0u8; 16]);
        a.generate_sampled_with(&mut out, &mut sample).unwrap();
        let (mut expected_out, mut expected_sample) = (vec![0u8; len], [0u8; 16]);
        let head = len.saturating_sub(1) / MAX_BYTES_PER_REQUEST * MAX_BYTES_PER_REQUEST;
        for chunk in expected_out[..head].chunks_mut(MAX_BYTES_PER_REQUEST) {
            b.generate_with(chunk, &[]).unwrap();
        }
        let last = len - head;
        let padded = last.next_multiple_of(BLOCK_LEN);
        if padded + BLOCK_LEN <= MAX_BYTES_PER_REQUEST {
            let mut one = vec![0u8; padded + BLOCK_LEN];
            b.generate_with(&mut one, &[]).unwrap();
            expected_out[head..].copy_from_slice(&one[..last]);
            expected_sample.copy_from_slice(&one[padded..]);
        } else {
            b.generate_with(&mut expected_out[head..], &[]).unwrap();
            b.generate_with(&mut expected_sample, &[]).unwrap();
        }
        proptest::prop_assert_eq!(&out, &expected_out);
        proptest::prop_assert_eq!(sample, expected_sample);
        let (mut next_a, mut next_b) = ([0u8; 48], [0u8; 48]);
        a.generate_with(&mut next_a, &[]).unwrap();
        b.generate_with(&mut next_b, &[]).unwrap();
        proptest::prop_assert_eq!(next_a, next_b, "the same state after");
        proptest::prop_assert_eq!(a.reseed_counter, b.reseed_counter, "one count per Generate");
        Ok(())
    }
}
