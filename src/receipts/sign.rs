//! Signing a receipt: the `random` object stamped with its serial, the time, the caller, the
//! caller's `user_data` and the signing key's id, written as RFC 8785 (JCS) canonical JSON,
//! and that text signed with Ed25519. The text signed is the text served: a REST answer embeds
//! it as `random` byte for byte, a gRPC reply carries it as `receipt_json`.
//!
//! The serial is a UUIDv7 (RFC 9562): the Unix time in milliseconds and 74 bits of drbgd's own
//! generator, so serials are unique across restarts and replicas without coordination, and
//! sort by time. `issued_at` is the same millisecond, RFC 3339 in UTC.

use std::time::{SystemTime, UNIX_EPOCH};

use zeroize::Zeroizing;

use super::keys::KeyRing;
use super::random::Random;
use crate::error::ApiError;

/// Random bytes of a serial (a UUIDv7's `rand_a` and `rand_b`, 74 bits of them used).
pub const SERIAL_RANDOM_BYTES: usize = 10;

/// When and under which serial a receipt is issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The serial, a UUIDv7, as a number (what [`Stamp::after`] compares).
    serial: u128,
    /// RFC 3339, UTC, milliseconds (`2026-11-28T09:14:03.271Z`).
    pub issued_at: String,
}

impl Stamp {
    /// The stamp of a receipt issued at `now`, its serial's random part `random`.
    pub fn new(now: SystemTime, random: &[u8; SERIAL_RANDOM_BYTES]) -> Self {
        let ms =
            now.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let serial = uuid::Builder::from_unix_timestamp_millis(ms, random).into_uuid().as_u128();
        Stamp { serial, issued_at: rfc3339_millis(ms) }
    }

    /// The serial, hyphenated lowercase.
    pub fn serial(&self) -> String {
        uuid::Uuid::from_u128(self.serial).to_string()
    }

    /// This stamp with a serial above `last` (then `last` becomes it): one more than `last`
    /// when the clock gave no later one (the same millisecond, or a clock set back), so the
    /// serials one process issues sort in issue order (RFC 9562's method 2: such a serial's
    /// random part is its predecessor's plus one). A carry that would reach the UUID's variant
    /// bits (one in 2^62) takes the drawn random part under the next millisecond instead.
    pub fn after(mut self, last: &mut u128) -> Self {
        /// The timestamp's 48 bits are the top of the UUID; the rest (version, variant and the
        /// random bits) the low 80.
        const LOW: u128 = (1 << 80) - 1;
        const VARIANT: u128 = 0b11 << 62;
        let drawn = self.serial;
        if drawn <= *last {
            let next = last.wrapping_add(1);
            self.serial = if next & VARIANT == *last & VARIANT {
                next
            } else {
                ((*last >> 80).wrapping_add(1) << 80) | (drawn & LOW)
            };
        }
        *last = self.serial;
        self
    }
}

/// Milliseconds since the Unix epoch as RFC 3339 UTC with milliseconds, written digit by digit
/// into a buffer of its length (every receipt has one; no formatting machinery).
pub fn rfc3339_millis(ms: u64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    let t =
        time::OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let mut out = String::with_capacity(24);
    let fields: [(u32, usize, char); 7] = [
        (u32::try_from(t.year()).unwrap_or(0), 4, '-'),
        (u32::from(u8::from(t.month())), 2, '-'),
        (u32::from(t.day()), 2, 'T'),
        (u32::from(t.hour()), 2, ':'),
        (u32::from(t.minute()), 2, ':'),
        (u32::from(t.second()), 2, '.'),
        (u32::from(t.millisecond()), 3, 'Z'),
    ];
    for (value, width, after) in fields {
        for place in (0..width).rev() {
            let digit = value / 10u32.pow(u32::try_from(place).unwrap_or(0)) % 10;
            out.push(char::from_digit(digit, 10).unwrap_or('0'));
        }
        out.push(after);
    }
    out
}

/// The ticket a receipt names: its id, and the ticket whose use created it (fixed since then;
/// its successor, made when it is used, is not signed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TicketStamp {
    /// The ticket's id.
    pub id: String,
    /// Its predecessor's id (none: created by `POST /tickets`).
    pub previous: Option<String>,
}

/// A signed receipt: the canonical JSON of `random` and its signature.
pub struct Receipt {
    json: Zeroizing<String>,
    signature: String,
    serial: String,
}

/// Shows the serial, never the output.
impl std::fmt::Debug for Receipt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receipt").field("serial", &self.serial).finish_non_exhaustive()
    }
}

impl Receipt {
    /// `random` as RFC 8785 canonical JSON: exactly the bytes the signature covers.
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The Ed25519 signature of [`Receipt::json`], base64url without padding.
    pub fn signature(&self) -> &str {
        &self.signature
    }

    /// The serial (a UUIDv7), for the audit line.
    pub fn serial(&self) -> &str {
        &self.serial
    }

    /// The canonical JSON and the signature, for a message that carries them (gRPC's reply,
    /// which the transport drops unwiped).
    pub fn into_parts(mut self) -> (String, String) {
        (std::mem::take(&mut *self.json), std::mem::take(&mut self.signature))
    }
}

/// `random` stamped and signed by `ring`'s signing key for `caller`, with the request's
/// `user_data` and the ticket a ticketed draw uses (`ticket`, `previous_ticket`).
///
/// # Errors
/// 500 `internal` when no key signs (receipts on with no key: refused at start-up and on
/// reload).
pub fn sign(
    ring: &KeyRing,
    random: Random,
    stamp: &Stamp,
    caller: &str,
    (user_data, ticket): (Option<&str>, Option<&TicketStamp>),
) -> Result<Receipt, ApiError> {
    let key_id = ring.signing_key_id().ok_or(ApiError::Internal)?;
    let serial = stamp.serial();
    let random = random
        .with("serial", serial.as_str())
        .with("issued_at", stamp.issued_at.as_str())
        .with("caller", caller)
        .with("key_id", key_id);
    let random = match user_data {
        Some(data) => random.with("user_data", data),
        None => random,
    };
    let random = match ticket {
        Some(ticket) => {
            let random = random.with("ticket", ticket.id.as_str());
            match &ticket.previous {
                Some(previous) => random.with("previous_ticket", previous.as_str()),
                None => random,
            }
        }
        None => random,
    };
    let json = random.canonical_json().ok_or(ApiError::Internal)?;
    drop(random);
    let signature = ring.sign(json.as_bytes()).ok_or(ApiError::Internal)?;
    Ok(Receipt { json, signature: data_encoding::BASE64URL_NOPAD.encode(&signature), serial })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serials_are_uuid7_of_the_issue_time() {
        let at = UNIX_EPOCH + std::time::Duration::from_millis(1_795_857_243_271);
        let stamp = Stamp::new(at, &[0xab; SERIAL_RANDOM_BYTES]);
        assert_eq!(stamp.issued_at, "2026-11-28T09:14:03.271Z");
        let serial = uuid::Uuid::parse_str(&stamp.serial()).unwrap();
        assert_eq!(serial.get_version_num(), 7);
        let (secs, nanos) = serial.get_timestamp().unwrap().to_unix();
        assert_eq!((secs, nanos / 1_000_000), (1_795_857_243, 271));
        assert_eq!(rfc3339_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_millis(5), "1970-01-01T00:00:00.005Z");
    }

    #[test]
    fn serials_of_one_millisecond_increase() {
        let at = SystemTime::now();
        let mut last = 0u128;
        let first = Stamp::new(at, &[0xa0; SERIAL_RANDOM_BYTES]).after(&mut last);
        let second = Stamp::new(at, &[0x00; SERIAL_RANDOM_BYTES]).after(&mut last);
        assert!(second.serial() > first.serial(), "{} then {}", first.serial(), second.serial());
        let second = uuid::Uuid::parse_str(&second.serial()).unwrap();
        assert_eq!(second.get_version_num(), 7);
        assert_eq!(second.get_variant(), uuid::Variant::RFC4122);
        // A carry into the variant bits moves to the next millisecond instead.
        // (A last serial far in the future whose 62 random bits after the variant are ones.)
        let full: u128 =
            (0xffff_ffff_fff0_u128 << 80) | (7 << 76) | (0xabc << 64) | (0b10 << 62) | ((1 << 62) - 1);
        let mut edge = full;
        let moved = Stamp::new(at, &[0; SERIAL_RANDOM_BYTES]).after(&mut edge);
        let moved = uuid::Uuid::parse_str(&moved.serial()).unwrap();
        assert!(moved.as_u128() > full && moved.get_version_num() == 7, "{moved}");
        assert_eq!(moved.get_variant(), uuid::Variant::RFC4122);
        // A later millisecond's serial is taken as drawn.
        let later = Stamp::new(at + std::time::Duration::from_millis(1), &[0; SERIAL_RANDOM_BYTES]);
        assert_eq!(later.clone().after(&mut last).serial(), later.serial());
    }

    #[test]
    fn an_unsigned_ring_signs_nothing() {
        let stamp = Stamp::new(SystemTime::now(), &[0; SERIAL_RANDOM_BYTES]);
        let e = sign(&KeyRing::default(), Random::default(), &stamp, "anonymous", (None, None)).unwrap_err();
        assert_eq!(e, ApiError::Internal);
    }
}
