//! The constants of the scheme drbgd signs with (drand's `bls-unchained-g1-rfc9380`), the
//! message signed for a round, and a signed round as every replica serves it. It names nothing
//! else of `beacon` but [`super::scheme`].

use sha2::{Digest, Sha256};

use super::scheme::Scheme;

/// drand's name of the scheme, `schemeID` in `/info`.
pub const SCHEME_ID: &str = Scheme::UnchainedG1Rfc9380.id();

/// The hash-to-curve domain separation tag of signatures on G1 (RFC 9380's suite for
/// BLS12-381 G1 with SHA-256, as drand's quicknet and the IETF BLS draft name it).
pub const DST: &[u8] = super::scheme::DST_G1;

/// The beacon id drand leaves out of the chain hash (its "default" beacon).
pub const DEFAULT_BEACON_ID: &str = "default";

/// Bytes of a signature (a compressed G1 point).
pub const SIGNATURE_LEN: usize = 48;

/// Bytes of a public key (a compressed G2 point).
pub const PUBLIC_KEY_LEN: usize = 96;

/// The message signed for round `round`: SHA-256 of the round as 8 bytes, big-endian (drand's
/// unchained schemes; chained ones put the previous signature first).
pub fn round_message(round: u64) -> [u8; 32] {
    Scheme::UnchainedG1Rfc9380.message(round, &[])
}

/// A signed round, as every replica serves it: its number, signature (and the previous
/// round's, on a chained scheme) and randomness, and its JSON body rendered once, in drand's
/// order: `{"round", "randomness", "signature"}` and, chained, `"previous_signature"` last (an
/// unchained round has no such key at all: drand-client refuses even an empty one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedRound {
    /// The round number.
    pub round: u64,
    /// The BLS signature, compressed (48 bytes on G1, 96 on G2).
    pub signature: bytes::Bytes,
    /// The previous round's signature, on a chained scheme.
    pub previous: Option<bytes::Bytes>,
    /// SHA-256 of the signature.
    pub randomness: [u8; 32],
    /// The JSON body.
    pub json: bytes::Bytes,
}

/// The order of a round's JSON members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// drand's relays' (and drand-client's examples'): `round`, `randomness`, `signature`,
    /// `previous_signature`. drbgd's own rounds.
    Relay,
    /// A drand v2 node's own HTTP API: `round`, `signature`, `previous_signature`, `randomness`.
    Node,
}

impl SignedRound {
    /// The round of `signature` (after `previous`, on a chained scheme), its randomness
    /// computed and its body rendered in the relays' order (drbgd's own rounds).
    pub fn new(round: u64, signature: &[u8], previous: Option<&[u8]>) -> Self {
        Self::in_order(round, signature, previous, Order::Relay)
    }

    /// As [`SignedRound::new`], the body's members in `order`.
    pub fn in_order(round: u64, signature: &[u8], previous: Option<&[u8]>, order: Order) -> Self {
        let randomness: [u8; 32] = Sha256::digest(signature).into();
        let member = |name: &str, value: &[u8]| format!(",\"{name}\":\"{}\"", const_hex::encode(value));
        let previous_member = previous.map(|p| member("previous_signature", p)).unwrap_or_default();
        // Written by hand: the order is fixed, and the values need no escaping.
        let json = match order {
            Order::Relay => format!(
                "{{\"round\":{round}{}{}{previous_member}}}",
                member("randomness", &randomness),
                member("signature", signature)
            ),
            Order::Node => format!(
                "{{\"round\":{round}{}{previous_member}{}}}",
                member("signature", signature),
                member("randomness", &randomness)
            ),
        };
        SignedRound {
            round,
            signature: bytes::Bytes::copy_from_slice(signature),
            previous: previous.map(bytes::Bytes::copy_from_slice),
            randomness,
            json: bytes::Bytes::from(json),
        }
    }
}
