//! drand's signature schemes, as far as drbgd verifies rounds of them: the message a round
//! signs and the check of its signature under a chain's public key. The curve arithmetic,
//! hashing to the curve and the subgroup checks are `blst`'s; the schemes' choices (which
//! group holds the key, the hash-to-curve tag, what the message covers) are drand's
//! (`crypto/schemes.go` in drand v2):
//!
//! | scheme id | public key | signature | message of round `r` |
//! |---|---|---|---|
//! | `bls-unchained-g1-rfc9380` (quicknet) | G2, 96 bytes | G1, 48 bytes | SHA-256(`r` as u64 big-endian) |
//! | `pedersen-bls-chained` (drand's default) | G1, 48 bytes | G2, 96 bytes | SHA-256(previous signature ‖ `r` as u64 big-endian) |
//!
//! Each hashes to its signature's group with RFC 9380's suite for that group
//! (`BLS_SIG_BLS12381G{1,2}_XMD:SHA-256_SSWU_RO_NUL_`). A round's randomness is SHA-256 of its
//! signature in both. drbgd signs with the first (its own key, `key.rs`) and verifies both
//! (a drand network it follows).

use blst::BLST_ERROR;
use sha2::{Digest, Sha256};

/// Bytes of a chained network's genesis seed, round 1's "previous signature" (drand's
/// `GenesisSeed`: its group's hash).
pub const GENESIS_SEED_LEN: usize = 32;

/// The hash-to-curve tag of signatures on G1 (`bls-unchained-g1-rfc9380`).
pub const DST_G1: &[u8] = b"BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_";

/// The hash-to-curve tag of signatures on G2 (`pedersen-bls-chained`).
pub const DST_G2: &[u8] = b"BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_NUL_";

/// A scheme drbgd can verify (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `bls-unchained-g1-rfc9380`: signatures on G1 over the round alone.
    UnchainedG1Rfc9380,
    /// `pedersen-bls-chained`: signatures on G2 over the previous signature and the round.
    PedersenBlsChained,
}

impl Scheme {
    /// Every scheme, for messages that list them.
    pub const ALL: [Scheme; 2] = [Scheme::UnchainedG1Rfc9380, Scheme::PedersenBlsChained];

    /// The scheme of drand's `schemeID`, if drbgd verifies it.
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.id() == id)
    }

    /// drand's `schemeID`.
    pub const fn id(self) -> &'static str {
        match self {
            Scheme::UnchainedG1Rfc9380 => "bls-unchained-g1-rfc9380",
            Scheme::PedersenBlsChained => "pedersen-bls-chained",
        }
    }

    /// Whether a round's message covers the previous round's signature.
    pub fn chained(self) -> bool {
        self == Scheme::PedersenBlsChained
    }

    /// Bytes of a compressed public key.
    pub fn public_key_len(self) -> usize {
        match self {
            Scheme::UnchainedG1Rfc9380 => 96,
            Scheme::PedersenBlsChained => 48,
        }
    }

    /// Bytes of a compressed signature.
    pub fn signature_len(self) -> usize {
        match self {
            Scheme::UnchainedG1Rfc9380 => 48,
            Scheme::PedersenBlsChained => 96,
        }
    }

    /// The message round `round` signs (`previous`: the previous round's signature, read only
    /// by a chained scheme).
    pub fn message(self, round: u64, previous: &[u8]) -> [u8; 32] {
        let mut h = Sha256::new();
        if self.chained() {
            h.update(previous);
        }
        h.update(round.to_be_bytes());
        h.finalize().into()
    }
}

/// A chain's public key, decoded and checked to be in its group once, able to verify rounds.
#[derive(Clone)]
pub struct Verifier {
    key: Key,
}

#[derive(Clone)]
enum Key {
    G2(blst::min_sig::PublicKey),
    G1(blst::min_pk::PublicKey),
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier").field("scheme", &self.scheme()).finish()
    }
}

impl Verifier {
    /// The verifier of `scheme` under `public_key` (compressed), or `None` for bytes that are
    /// not a point of the scheme's key group (the identity included).
    pub fn new(scheme: Scheme, public_key: &[u8]) -> Option<Self> {
        let key = match scheme {
            Scheme::UnchainedG1Rfc9380 => Key::G2(blst::min_sig::PublicKey::key_validate(public_key).ok()?),
            Scheme::PedersenBlsChained => Key::G1(blst::min_pk::PublicKey::key_validate(public_key).ok()?),
        };
        Some(Verifier { key })
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        match self.key {
            Key::G2(_) => Scheme::UnchainedG1Rfc9380,
            Key::G1(_) => Scheme::PedersenBlsChained,
        }
    }

    /// Whether `signature` (compressed) is round `round`'s, after `previous` (the previous
    /// round's signature, compressed; for round 1, the chain's genesis seed, 32 bytes; read only
    /// by a chained scheme). The signature is checked to be in its group, and to be in
    /// compressed form: blst also parses the uncompressed encoding of the same point, whose
    /// SHA-256 (the round's randomness) differs, so that a second encoding would give a round a
    /// second value. A chained round's `previous` has a signature's length (round 1: a seed's),
    /// never empty: an empty one would make its message the unchained scheme's.
    pub fn verify(&self, round: u64, previous: &[u8], signature: &[u8]) -> bool {
        let scheme = self.scheme();
        let previous_len = if round == 1 { GENESIS_SEED_LEN } else { scheme.signature_len() };
        if signature.len() != scheme.signature_len() || (scheme.chained() && previous.len() != previous_len) {
            return false;
        }
        let message = scheme.message(round, previous);
        let outcome = match &self.key {
            Key::G2(pk) => match blst::min_sig::Signature::from_bytes(signature) {
                Ok(sig) => sig.verify(true, &message, DST_G1, &[], pk, false),
                Err(e) => e,
            },
            Key::G1(pk) => match blst::min_pk::Signature::from_bytes(signature) {
                Ok(sig) => sig.verify(true, &message, DST_G2, &[], pk, false),
                Err(e) => e,
            },
        };
        outcome == BLST_ERROR::BLST_SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// drand's League of Entropy mainnet (`pedersen-bls-chained`): its public key and round
    /// 72785 with its previous signature, as `https://drand.cloudflare.com` serves them (the
    /// vectors of noislabs' drand-verify tests).
    const MAINNET_KEY: &str =
        "868f005eb8e6e4ca0a47c8a77ceaa5309a47978a7c71bc5cce96366b5d7a569937c529eeda66c7293784a9402801af31";
    const MAINNET_72785_PREVIOUS: &str = "a609e19a03c2fcc559e8dae14900aaefe517cb55c840f6e69bc8e4f66c8d18e8a609685d9917efbfb0c37f058c2de88f13d297c7e19e0ab24813079efe57a182554ff054c7638153f9b26a60e7111f71a0ff63d9571704905d3ca6df0b031747";
    const MAINNET_72785: &str = "82f5d3d2de4db19d40a6980e8aa37842a0e55d1df06bd68bddc8d60002e8e959eb9cfa368b3c1b77d18f02a54fe047b80f0989315f83b12a74fd8679c4f12aae86eaf6ab5690b34f1fddd50ee3cc6f6cdf59e95526d5a5d82aaa84fa6f181e42";
    /// Mainnet's round 1: a valid G2 point that is not round 72785's signature.
    const MAINNET_1: &str = "8d61d9100567de44682506aea1a7a6fa6e5491cd27a0a0ed349ef6910ac5ac20ff7bc3e09d7c046566c9f7f3c6f3b10104990e7cb424998203d8f7de586fb7fa5f60045417a432684f85093b06ca91c769f0e7ca19268375e659c2a2352b4655";

    fn hex(s: &str) -> Vec<u8> {
        const_hex::decode(s).unwrap()
    }

    #[test]
    fn mainnet_chained_round_verifies_and_nothing_else_does() {
        let v = Verifier::new(Scheme::PedersenBlsChained, &hex(MAINNET_KEY)).unwrap();
        let (previous, signature) = (hex(MAINNET_72785_PREVIOUS), hex(MAINNET_72785));
        assert!(v.verify(72785, &previous, &signature));
        assert!(!v.verify(72786, &previous, &signature), "another round");
        let mut other = previous.clone();
        other[0] ^= 0xcc;
        assert!(!v.verify(72785, &other, &signature), "another previous signature");
        assert!(!v.verify(72785, &previous, &hex(MAINNET_1)), "another round's signature");
        assert!(!v.verify(72785, &previous, &signature[..48]), "a truncated signature");
        // The same point uncompressed: blst parses it, and it is the round's signature, but its
        // hash (the randomness) is another value.
        let uncompressed = blst::min_pk::Signature::from_bytes(&signature).unwrap().serialize();
        assert_eq!(uncompressed.len(), 192);
        assert!(blst::min_pk::Signature::from_bytes(&uncompressed).is_ok());
        assert!(!v.verify(72785, &previous, &uncompressed), "an uncompressed signature");
        // The chained message with an empty previous signature is the unchained one's: refused.
        assert!(!v.verify(72785, b"", &signature));
    }

    /// Mainnet's round 1, after its genesis seed (the group hash of its `/info`), as
    /// `https://drand.cloudflare.com/public/1` serves it.
    #[test]
    fn mainnet_chained_round_1_verifies_after_the_genesis_seed() {
        let v = Verifier::new(Scheme::PedersenBlsChained, &hex(MAINNET_KEY)).unwrap();
        let seed = hex("176f93498eac9ca337150b46d21dd58673ea4e3581185f869672e59fa4cb390a");
        assert!(v.verify(1, &seed, &hex(MAINNET_1)));
        assert!(!v.verify(2, &seed, &hex(MAINNET_1)), "a seed is round 1's previous only");
        let mut other = seed.clone();
        other[0] ^= 1;
        assert!(!v.verify(1, &other, &hex(MAINNET_1)));
    }

    #[test]
    fn quicknet_unchained_round_verifies_and_nothing_else_does() {
        let v =
            Verifier::new(Scheme::UnchainedG1Rfc9380, &hex(super::super::key::QUICKNET_PUBLIC_KEY)).unwrap();
        let (round, signature) = super::super::key::QUICKNET_ROUND;
        let signature = hex(signature);
        // The previous signature is no part of an unchained round's message.
        assert!(v.verify(round, b"", &signature));
        assert!(v.verify(round, &hex(MAINNET_72785), &signature));
        assert!(!v.verify(round + 1, b"", &signature));
        let mut flipped = signature.clone();
        flipped[47] ^= 1;
        assert!(!v.verify(round, b"", &flipped));
        let uncompressed = blst::min_sig::Signature::from_bytes(&signature).unwrap().serialize();
        assert!(blst::min_sig::Signature::from_bytes(&uncompressed).is_ok());
        assert!(!v.verify(round, b"", &uncompressed), "an uncompressed signature");
    }

    #[test]
    fn a_key_of_the_other_scheme_or_not_a_point_is_refused() {
        assert!(Verifier::new(Scheme::UnchainedG1Rfc9380, &hex(MAINNET_KEY)).is_none());
        assert!(
            Verifier::new(Scheme::PedersenBlsChained, &hex(super::super::key::QUICKNET_PUBLIC_KEY)).is_none()
        );
        let mut not_a_point = hex(MAINNET_KEY);
        not_a_point[47] ^= 1;
        assert!(Verifier::new(Scheme::PedersenBlsChained, &not_a_point).is_none());
        // The identity (compressed: the infinity flag alone) is no key.
        let mut identity = vec![0u8; 48];
        identity[0] = 0xc0;
        assert!(Verifier::new(Scheme::PedersenBlsChained, &identity).is_none());
    }

    #[test]
    fn scheme_ids_are_drands() {
        for s in Scheme::ALL {
            assert_eq!(Scheme::from_id(s.id()), Some(s));
        }
        assert_eq!(Scheme::from_id("bls-unchained-on-g1"), None);
        assert_eq!(Scheme::from_id("pedersen-bls-unchained"), None);
    }
}
