//! The beacon's secret key: a BLS12-381 scalar kept like generator state (in a page of its
//! own, excluded from core dumps and locked where the kernel allows: [`SecretSlice`]), never
//! printed (a hand-written `Debug`; blst's own `SecretKey` derives one that prints the
//! scalar), wiped when dropped (blst's `SecretKey` zeroizes itself). Signing, verification
//! and the key file's text are here too.
//!
//! The key file: lines starting with `#` are comments, blank lines are ignored, and exactly one
//! other line is the scalar, 32 bytes big-endian in hex (blst's `SecretKey::to_bytes`, the IETF
//! BLS draft's `SK` encoding). `drbgd beacon keygen` writes one, mode 0600, never over an
//! existing file.

use blst::min_sig::SecretKey;
use zeroize::Zeroizing;

use super::round::{DST, PUBLIC_KEY_LEN, SIGNATURE_LEN, round_message};
use super::scheme::{Scheme, Verifier};
use crate::drbg::secret_mem::{Protection, SecretSlice};

/// Bytes of a secret key (a scalar below the group order, big-endian).
pub const KEY_LEN: usize = 32;

/// Bytes of key material a new key is derived from (the IETF BLS draft's KeyGen asks for at
/// least 32).
pub const IKM_LEN: usize = 32;

/// quicknet's public key (drand's League of Entropy mainnet, scheme
/// `bls-unchained-g1-rfc9380`), for the start-up known answer ([`selftest`]).
pub const QUICKNET_PUBLIC_KEY: &str = "83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a";

/// The public key of `config/examples/beacon-example.key`, the example key published with
/// drbgd's source: anyone can sign every round of a chain with this key, so the server warns
/// loudly when it serves one (the example configuration and CI use it on purpose).
pub const EXAMPLE_PUBLIC_KEY: &str = "81ef98fb75fff9705e51d57870319ce0eb94b07601ddc5747fe13807c1429008090c5436cb2d68b6e6bf2e9d8ca428da109154aedc9bf7764f5bf9a41dbc24815b594b647246540964692ab3294c83327193c4b3bbf6ecdb7cac469c1a6f9b10";

/// quicknet's round 123 as drand published it (the vector of noislabs' drand-verify tests;
/// PyPI drand-verify 0.2.1 accepts it too).
pub const QUICKNET_ROUND: (u64, &str) =
    (123, "b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482e26cd02df835d3546d23c4b13e0dfc92");

/// Why a key could not be had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The text has no line but comments and blank ones.
    #[error("no key line (lines starting with '#' are comments)")]
    Missing,
    /// The key line is not 64 hex digits.
    #[error("the key line is not 64 hex digits (32 bytes)")]
    NotHex,
    /// A line other than a comment or a blank one after the key line.
    #[error("more than the key line: only comments ('#') and blank lines may follow it")]
    Trailing,
    /// The 32 bytes are zero or not below the group order.
    #[error("not a BLS12-381 secret key (zero, or not below the group order)")]
    NotAScalar,
    /// Fewer than [`IKM_LEN`] bytes of key material.
    #[error("key material must be at least 32 bytes")]
    ShortKeyMaterial,
}

/// The secret key, able to sign rounds. See the module documentation.
pub struct Signer {
    key: SecretSlice<SecretKey>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signer { .. }")
    }
}

impl Signer {
    /// The key of a key file's text.
    ///
    /// # Errors
    /// [`KeyError::Missing`], [`KeyError::Trailing`], [`KeyError::NotHex`] or
    /// [`KeyError::NotAScalar`].
    pub fn from_key_text(text: &str) -> Result<Self, KeyError> {
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'));
        let line = lines.next().ok_or(KeyError::Missing)?;
        if lines.next().is_some() {
            return Err(KeyError::Trailing);
        }
        if line.len() != 2 * KEY_LEN {
            return Err(KeyError::NotHex);
        }
        let mut scalar = Zeroizing::new([0u8; KEY_LEN]);
        const_hex::decode_to_slice(line, &mut scalar[..]).map_err(|_| KeyError::NotHex)?;
        Self::from_scalar(&scalar)
    }

    /// The key whose scalar is `scalar` (big-endian).
    ///
    /// # Errors
    /// [`KeyError::NotAScalar`].
    pub fn from_scalar(scalar: &[u8; KEY_LEN]) -> Result<Self, KeyError> {
        // Built inside the protected page's slot (the closure's result is written there).
        let key =
            SecretSlice::try_from_fn(1, |_| SecretKey::from_bytes(scalar).map_err(|_| KeyError::NotAScalar))?;
        Ok(Signer { key })
    }

    /// A new key derived from `ikm` (fresh output of drbgd's own generators) by the IETF BLS
    /// draft's KeyGen (HKDF-SHA-256), with an empty `key_info`.
    ///
    /// # Errors
    /// [`KeyError::ShortKeyMaterial`] under [`IKM_LEN`] bytes.
    pub fn from_key_material(ikm: &[u8]) -> Result<Self, KeyError> {
        if ikm.len() < IKM_LEN {
            return Err(KeyError::ShortKeyMaterial);
        }
        let key = SecretSlice::try_from_fn(1, |_| {
            SecretKey::key_gen(ikm, &[]).map_err(|_| KeyError::ShortKeyMaterial)
        })?;
        Ok(Signer { key })
    }

    fn key(&self) -> &SecretKey {
        // One element, by construction.
        &self.key[0]
    }

    /// The public key, compressed (96 bytes, G2). A scalar multiplication: computed once per
    /// chain ([`super::Chain`] keeps it).
    pub fn public_key(&self) -> [u8; PUBLIC_KEY_LEN] {
        self.key().sk_to_pk().to_bytes()
    }

    /// Round `round`'s signature, compressed (48 bytes, G1): deterministic, the same on every
    /// replica holding the key.
    pub fn sign(&self, round: u64) -> [u8; SIGNATURE_LEN] {
        self.key().sign(&round_message(round), DST, &[]).to_bytes()
    }

    /// What the kernel granted for the key's page.
    pub fn protection(&self) -> Protection {
        self.key.protection()
    }

    /// The key file's text: a comment naming the public key, then the scalar in hex. Held in
    /// memory that is wiped when dropped.
    ///
    /// # Security
    /// The secret itself: write it only to a file of mode 0600.
    pub fn key_file_text(&self) -> Zeroizing<String> {
        let scalar = Zeroizing::new(self.key().to_bytes());
        let mut hex = Zeroizing::new([0u8; 2 * KEY_LEN]);
        // The output is exactly twice the input's length: it cannot fail.
        let _ = const_hex::encode_to_slice(&scalar[..], &mut hex[..]);
        let public = const_hex::encode(self.public_key());
        // Sized up front: a string that grew would leave a copy of the secret behind, unwiped.
        let mut text = Zeroizing::new(String::with_capacity(512));
        text.push_str(
            "# drbgd beacon secret key: BLS12-381, scheme bls-unchained-g1-rfc9380. Keep it secret:\n",
        );
        text.push_str("# whoever holds it can sign (and so predict) every round of its chain.\n");
        text.push_str("# public key: ");
        text.push_str(&public);
        text.push('\n');
        text.push_str(std::str::from_utf8(&hex[..]).unwrap_or_default());
        text.push('\n');
        text
    }
}

/// Whether `signature` is round `round`'s under `public_key` (both compressed), the signature
/// and the key checked to be in their groups.
pub fn verify(public_key: &[u8], round: u64, signature: &[u8]) -> bool {
    Verifier::new(Scheme::UnchainedG1Rfc9380, public_key).is_some_and(|v| v.verify(round, &[], signature))
}

/// The start-up self-test of the beacon: a known answer (quicknet's published round verifies,
/// and not as the next round), then a pairwise check of `signer` (its signature of round 1
/// verifies under its public key). Milliseconds, once.
///
/// # Errors
/// What failed.
pub fn selftest(signer: &Signer) -> Result<(), &'static str> {
    let quicknet = const_hex::decode(QUICKNET_PUBLIC_KEY).map_err(|_| "quicknet's key constant")?;
    let (round, signature) = QUICKNET_ROUND;
    let signature = const_hex::decode(signature).map_err(|_| "quicknet's signature constant")?;
    if !verify(&quicknet, round, &signature) {
        return Err("quicknet's published round does not verify");
    }
    if verify(&quicknet, round + 1, &signature) {
        return Err("quicknet's round verifies as another round");
    }
    if !verify(&signer.public_key(), 1, &signer.sign(1)) {
        return Err("the key's own signature does not verify (pairwise check)");
    }
    Ok(())
}
