//! Draws bound to a future round of a followed drand network: a ticket created with `round` R
//! (a round not yet out) and its draw (the endpoint and its parameters) fixed in it, signed and
//! stored before R is due; once R is verified, the draw's values come from one public
//! derivation of R's randomness, the ticket id and the draw, which anyone can recompute.
//! Neither the caller nor the operator can choose them after seeing R; nobody can know them
//! before (a threshold network's round is unknown to each of its operators until `t` of them
//! sign it). docs/verifiable.md, "Draws bound to a round", has the derivation to the byte and a
//! check in Python.
//!
//! This module owns the committed draw ([`Draw`]: which endpoints, which parameters, their
//! canonical and stored forms; read and checked by the endpoints' own requests in
//! `http/tickets/bound.rs`) and the derivation ([`derive`], version [`DERIVATION`]):
//!
//! 1. seed = `lp("drbgd-round-v1") ‖ lp(randomness) ‖ lp(ticket id) ‖ lp(endpoint) ‖ lp(name₁)
//!    ‖ lp(value₁) ‖ …`, the parameters in name order, values in decimal, where `lp(x)` is x's
//!    length as 8 bytes big-endian then x, and `randomness` is drand's (SHA-256 of the round's
//!    signature, 32 bytes);
//! 2. HMAC_DRBG (SHA-256) instantiated with seed as its entropy input, no nonce, no
//!    personalization (SP 800-90A 10.1.2.3); its output stream is successive Generate calls of
//!    32 bytes each, with no additional input;
//! 3. `/bits`: the stream's first n/8 bytes; `/int` and `/sequence`: its 8-byte chunks read as
//!    little-endian 64-bit words, fed to [`crate::drbg::uniform`]'s samplers as the endpoints
//!    feed theirs.
//!
//! It is a public, deterministic derivation, not an SP 800-90A instance: its seed is public
//! once R is out, and so are its values, by design. That is why the endpoints of secrets
//! (`/token`, `/nonce`) and those whose values are meant to stay unguessable (`/bytes`,
//! `/uuid`) take no bound ticket, and why approved-only mode makes none.

use sha2::Sha256;

use crate::drbg::hmac_drbg::HmacDrbg;
use crate::drbg::uniform::{self, UniformI64};
use crate::error::ApiError;
use crate::route::Route;

/// The derivation's name and version, as receipts and commitments carry it (their `alg`).
pub const DERIVATION: &str = "drbgd-round-v1";

/// The draw a bound ticket fixes: its endpoint and every parameter, typed and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Draw {
    /// `/int`: `count` integers of `[min, max]`.
    Int {
        /// The lower bound.
        min: i64,
        /// The upper bound (inclusive).
        max: i64,
        /// How many.
        count: u64,
    },
    /// `/sequence`: `count` distinct integers of `[min, max]`, in random order.
    Sequence {
        /// The lower bound.
        min: i64,
        /// The upper bound (inclusive).
        max: i64,
        /// How many.
        count: u64,
    },
    /// `/bits`: `n` bits, a multiple of 8.
    Bits {
        /// How many bits.
        n: u64,
    },
}

/// What a derivation gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Derived {
    /// `/int`'s and `/sequence`'s values.
    Values(Vec<i64>),
    /// `/bits`' bytes.
    Bytes(Vec<u8>),
}

impl Draw {
    /// The draw of `endpoint` whose parameters are `members`' (a receipt's or a commitment's
    /// `random`, or the stored form; each a number or a string of decimal digits), `None` if
    /// they are not one.
    pub fn of_receipt(endpoint: &str, members: &serde_json::Value) -> Option<Draw> {
        let value = |name: &str| members.get(name);
        let int = |name: &str| value(name).and_then(|v| v.as_i64().or_else(|| v.as_str()?.parse().ok()));
        let count = |name: &str| value(name).and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()));
        match endpoint {
            "/int" => Some(Draw::Int { min: int("min")?, max: int("max")?, count: count("count")? }),
            "/sequence" => {
                Some(Draw::Sequence { min: int("min")?, max: int("max")?, count: count("count")? })
            }
            "/bits" => Some(Draw::Bits { n: count("n")? }),
            _ => None,
        }
    }

    /// Its endpoint.
    pub fn route(&self) -> Route {
        match self {
            Draw::Int { .. } => Route::Int,
            Draw::Sequence { .. } => Route::Sequence,
            Draw::Bits { .. } => Route::Bits,
        }
    }

    /// Its parameters in name order, values in decimal: what the derivation's seed and the
    /// store hold.
    pub fn params(&self) -> Vec<(&'static str, String)> {
        match *self {
            Draw::Int { min, max, count } | Draw::Sequence { min, max, count } => {
                vec![("count", count.to_string()), ("max", max.to_string()), ("min", min.to_string())]
            }
            Draw::Bits { n } => vec![("n", n.to_string())],
        }
    }

    /// Bytes of output, as a receipt's size bound and a caller's quota count them (8 an
    /// integer).
    pub fn output_bytes(&self) -> u64 {
        match *self {
            Draw::Int { count, .. } | Draw::Sequence { count, .. } => count.saturating_mul(8),
            Draw::Bits { n } => n / 8,
        }
    }

    /// Its stored form: `{"endpoint": "/int", "count": "5", "max": "6", "min": "1"}`.
    pub fn to_stored(&self) -> String {
        let mut object = serde_json::Map::new();
        object.insert("endpoint".into(), self.route().name().into());
        for (name, value) in self.params() {
            object.insert(name.into(), value.into());
        }
        serde_json::Value::Object(object).to_string()
    }

    /// The draw of its stored form ([`Draw::to_stored`]), `None` if it is not one.
    pub fn from_stored(text: &str) -> Option<Draw> {
        let value: serde_json::Value = serde_json::from_str(text).ok()?;
        Draw::of_receipt(value.get("endpoint")?.as_str()?, &value)
    }
}

/// The derivation's seed for `draw` under ticket `id` and round randomness `randomness`.
pub fn seed(randomness: &[u8; 32], id: &str, draw: &Draw) -> Vec<u8> {
    let params = draw.params();
    let mut fields: Vec<&[u8]> =
        vec![DERIVATION.as_bytes(), randomness, id.as_bytes(), draw.route().name().as_bytes()];
    for (name, value) in &params {
        fields.push(name.as_bytes());
        fields.push(value.as_bytes());
    }
    let mut seed = Vec::new();
    for field in fields {
        seed.extend_from_slice(&(field.len() as u64).to_be_bytes());
        seed.extend_from_slice(field);
    }
    seed
}

/// The derivation's output stream: HMAC_DRBG (SHA-256) seeded with [`seed`], read 32 bytes a
/// Generate.
struct Stream {
    drbg: HmacDrbg<Sha256>,
    block: [u8; 32],
    used: usize,
}

impl Stream {
    fn new(seed: &[u8]) -> Stream {
        Stream { drbg: HmacDrbg::instantiate(seed, &[], &[]), block: [0; 32], used: 32 }
    }

    /// The stream's next byte.
    fn byte(&mut self) -> Result<u8, ApiError> {
        if self.used == self.block.len() {
            // 2^48 Generate calls before a reseed: never reached by one draw.
            self.drbg.generate(&mut self.block, &[]).map_err(|_| ApiError::Internal)?;
            self.used = 0;
        }
        self.used += 1;
        Ok(self.block[self.used - 1])
    }

    /// The stream's next 8 bytes as a little-endian word.
    fn word(&mut self) -> Result<u64, ApiError> {
        let mut word = [0u8; 8];
        for b in &mut word {
            *b = self.byte()?;
        }
        Ok(u64::from_le_bytes(word))
    }
}

/// `draw`'s values under ticket `id`, from round randomness `randomness`.
///
/// # Errors
/// None in practice (the DRBG's reseed limit is far beyond any one draw's output).
pub fn derive(randomness: &[u8; 32], id: &str, draw: &Draw) -> Result<Derived, ApiError> {
    let mut stream = Stream::new(&seed(randomness, id, draw));
    match *draw {
        Draw::Bits { n } => (0..n / 8).map(|_| stream.byte()).collect::<Result<_, _>>().map(Derived::Bytes),
        Draw::Int { min, max, count } => {
            let dist = UniformI64::new_inclusive(min, max).ok_or(ApiError::Internal)?;
            (0..count).map(|_| dist.sample(|| stream.word())).collect::<Result<_, _>>().map(Derived::Values)
        }
        Draw::Sequence { min, max, count } => {
            let count = usize::try_from(count).map_err(|_| ApiError::Internal)?;
            uniform::shuffle(min, max, count, || stream.word()).map(Derived::Values)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values of docs/verifiable.md's Python check ("Draws bound to a round"), written
    /// apart from this code, for randomness SHA-256("drbgd-round-v1 test") and one ticket id:
    /// the derivation here gives the same, to the last value and byte.
    #[test]
    fn derives_what_the_documented_python_derives() {
        let randomness: [u8; 32] =
            const_hex::decode_to_array("53116cc6989d06ac1f32512c8051c79f1336f999633b639d6c4d9698b4acd6fa")
                .unwrap();
        let id = "01938a7c-8f00-7abc-9def-0123456789ab";
        let values = |draw: Draw| match derive(&randomness, id, &draw).unwrap() {
            Derived::Values(v) => v,
            Derived::Bytes(_) => panic!("bytes of {draw:?}"),
        };
        assert_eq!(values(Draw::Int { min: 1, max: 6, count: 10 }), [6, 3, 2, 6, 3, 6, 5, 2, 6, 6]);
        assert_eq!(
            values(Draw::Int { min: i64::MIN, max: i64::MAX, count: 3 }),
            [-7426543976346259691, -765220728965092889, -6409874881567314040]
        );
        assert_eq!(
            values(Draw::Int { min: 0, max: (1 << 62) + 12345, count: 3 }),
            [2396693978884778699, 1457082044745210810, 2319752165312906368]
        );
        assert_eq!(
            values(Draw::Sequence { min: 1, max: 52, count: 52 }),
            [
                38, 48, 51, 34, 25, 3, 46, 49, 6, 44, 39, 9, 10, 33, 8, 30, 45, 4, 12, 36, 18, 32, 16, 28,
                47, 15, 5, 26, 14, 1, 23, 13, 24, 35, 52, 41, 17, 19, 40, 11, 20, 31, 21, 7, 50, 22, 37, 29,
                43, 2, 27, 42
            ]
        );
        let bits = derive(&randomness, id, &Draw::Bits { n: 128 }).unwrap();
        assert_eq!(bits, Derived::Bytes(const_hex::decode("c1d364bf98e12254aef1dd7a58ff91c6").unwrap()));
        // Another ticket, another draw.
        let other =
            derive(&randomness, "01938a7c-8f00-7abc-9def-0123456789ac", &Draw::Bits { n: 128 }).unwrap();
        assert_ne!(other, bits);
    }

    #[test]
    fn a_draw_is_stored_and_read_back_in_its_canonical_form() {
        for draw in [
            Draw::Int { min: -3, max: 3, count: 1 },
            Draw::Sequence { min: i64::MIN, max: i64::MAX, count: 10 },
            Draw::Bits { n: 256 },
        ] {
            assert_eq!(Draw::from_stored(&draw.to_stored()), Some(draw));
        }
        assert_eq!(Draw::from_stored("{\"endpoint\":\"/token\"}"), None);
        assert_eq!(
            Draw::from_stored("{\"endpoint\":\"/int\",\"min\":\"1\",\"max\":\"x\",\"count\":\"1\"}"),
            None
        );
    }
}
