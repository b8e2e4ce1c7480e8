//! Checking a receipt: its `random` object canonicalised again (RFC 8785) from what the holder
//! presents, and the signature checked against the key its `key_id` names. A well-formed
//! receipt that fails gets a [`Verdict`] with the reason; only a malformed one is an error:
//! not a JSON object with an object `random` and a string `signature` and nothing else, or a
//! member named twice anywhere ([`super::strict_json`]). A number in `random` that is not an
//! integer within ±(2^53−1) fails (`inexact_number`): drbgd signs no other number, and so a
//! receipt has one reading (a verifier that canonicalises `256.0` as `256` and one that keeps
//! `256.0`, Python's `json`, could otherwise disagree on the same text). The same check serves
//! `POST /verify` and `drbgd verify`.
//!
//! `POST /verify` is public, so its checks are bounded twice: the body is read to the shape of
//! the receipts this server issues ([`receipt_shape`]), stopping at the first bound passed, and
//! the reading, canonicalisation and signature check run off the async workers under a
//! [`Lane`]'s few places (half the cores), so a flood of worst-case bodies takes at most those
//! cores and leaves the rest to every other request.

use std::sync::Arc;
use std::time::Duration;

use ed25519_dalek::{Signature, VerifyingKey};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::strict_json::Shape;

/// Why a well-formed receipt is not valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// `random.key_id` is missing, or names no key of the set checked against.
    UnknownKey,
    /// `signature` is not base64url of 64 bytes.
    MalformedSignature,
    /// The signature does not verify: `random` or the signature was changed, or another key
    /// signed it.
    SignatureMismatch,
    /// `random` has a number that is not an integer within ±(2^53−1): drbgd signs none, and
    /// canonicalisers differ on them (`256.0` is `256` to RFC 8785, not to Python's `json`).
    InexactNumber,
}

impl Reason {
    /// The reason's stable name.
    pub fn code(self) -> &'static str {
        match self {
            Reason::UnknownKey => "unknown_key",
            Reason::MalformedSignature => "malformed_signature",
            Reason::SignatureMismatch => "signature_mismatch",
            Reason::InexactNumber => "inexact_number",
        }
    }
}

/// The outcome of checking a well-formed receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// `None`: valid.
    pub failure: Option<Reason>,
    /// `random.key_id`, when it is a string.
    pub key_id: Option<String>,
    /// `random.serial`, when it is a string.
    pub serial: Option<String>,
}

impl Verdict {
    /// Whether the receipt is valid.
    pub fn valid(&self) -> bool {
        self.failure.is_none()
    }

    /// As `POST /verify` answers it: `{"valid": true, "key_id", "serial"}` or `{"valid":
    /// false, "reason", ...}`.
    pub fn to_json(&self) -> Value {
        let mut answer = json!({ "valid": self.valid() });
        if let Some(reason) = self.failure {
            answer["reason"] = reason.code().into();
        }
        if let Some(id) = &self.key_id {
            answer["key_id"] = id.as_str().into();
        }
        if let Some(serial) = &self.serial {
            answer["serial"] = serial.as_str().into();
        }
        answer
    }
}

/// A receipt that is not one: what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Malformed(pub String);

/// The shape of every receipt a server issues whose lists (`/int`'s and `/uuid`'s `data`)
/// hold at most `max_count` items (`limits.max_count`): `{"random": {...}, "signature": ...}`
/// nests three deep (the receipt, `random`, `data`), `random` has a score of members (64
/// allowed, for fields to come), and the values are the list's items with room for the rest.
/// Lists of [`LIST_FLOOR`] items are always taken, so a receipt issued while `max_count` was
/// higher (the default is 1,000), or by a replica configured so, still verifies.
pub fn receipt_shape(max_count: usize) -> Shape {
    Shape { depth: 3, members: 64, values: max_count.max(LIST_FLOOR).saturating_add(256) }
}

/// The longest list every receipt shape takes, whatever `limits.max_count` is.
pub const LIST_FLOOR: usize = 10_000;

/// [`verify`] of a receipt's JSON text, read to `shape` ([`receipt_shape`]; a file the user
/// checks on their own machine may be read to [`Shape::ANY`]).
///
/// # Errors
/// [`Malformed`]: not JSON, outside `shape`, or not a receipt.
pub fn verify_json(
    text: &[u8],
    shape: Shape,
    key: impl Fn(&str) -> Option<VerifyingKey>,
) -> Result<Verdict, Malformed> {
    let receipt = super::strict_json::from_slice_shaped(text, shape).map_err(|e| {
        Malformed(format!("the receipt is not JSON of distinct members in a receipt's shape: {e}"))
    })?;
    verify(&receipt, key)
}

/// CPU work of public requests (receipt checks) off the async workers: each piece runs on
/// tokio's blocking pool under one of the lane's places, so such requests together take at
/// most that many cores. A piece waits at most the lane's wait for a place, in turn (tokio's
/// semaphore is fair), and is refused after it.
#[derive(Debug)]
pub struct Lane {
    places: Arc<Semaphore>,
    wait: Duration,
}

/// How long a receipt check waits for a place of its lane before it is refused (503).
pub const LANE_WAIT: Duration = Duration::from_secs(2);

impl Lane {
    /// A lane of `places` (at least one), each piece waiting at most `wait`.
    pub fn new(places: usize, wait: Duration) -> Lane {
        Lane { places: Arc::new(Semaphore::new(places.max(1))), wait }
    }

    /// Half this machine's cores (at least one), waits of [`LANE_WAIT`].
    pub fn half_the_cores() -> Lane {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        Lane::new(cores / 2, LANE_WAIT)
    }

    /// `work`'s result once it has run under a place; `None` when no place was free within the
    /// wait (then `work` never runs). Dropped while waiting, it never runs either; once
    /// started it runs to its end, its place held.
    pub async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let place = tokio::time::timeout(self.wait, self.places.clone().acquire_owned()).await.ok()?.ok()?;
        let done = tokio::task::spawn_blocking(move || {
            let _place = place;
            work()
        })
        .await;
        match done {
            Ok(value) => Some(value),
            // A panic in the work is the request's, as if it had run inline.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => None,
        }
    }
}

/// Checks `receipt` (`{"random": {...}, "signature": "..."}`) against the key `key` finds for
/// its `random.key_id`.
///
/// # Errors
/// [`Malformed`]: not an object of exactly an object `random` and a string `signature`.
pub fn verify(receipt: &Value, key: impl Fn(&str) -> Option<VerifyingKey>) -> Result<Verdict, Malformed> {
    let object = receipt.as_object().ok_or_else(|| Malformed("a receipt is a JSON object".into()))?;
    if let Some(other) = object.keys().find(|k| *k != "random" && *k != "signature") {
        let shown: String = other.chars().take(64).collect();
        return Err(Malformed(format!("a receipt has random and signature only, not {shown:?}")));
    }
    let random = object
        .get("random")
        .filter(|r| r.is_object())
        .ok_or_else(|| Malformed("a receipt's random is a JSON object".into()))?;
    let signature = object
        .get("signature")
        .and_then(Value::as_str)
        .ok_or_else(|| Malformed("a receipt's signature is a string".into()))?;
    let text = |name: &str| random.get(name).and_then(Value::as_str).map(str::to_owned);
    let (key_id, serial) = (text("key_id"), text("serial"));
    // A number drbgd never signs (a fraction, an exponent, beyond 2^53) fails before any
    // canonicalisation: such a text has no one reading, so it verifies nowhere.
    let failure = if exact_numbers(random) {
        check(random, signature, key_id.as_deref().and_then(key))?
    } else {
        Some(Reason::InexactNumber)
    };
    Ok(Verdict { failure, key_id, serial })
}

/// The largest integer a receipt carries as a JSON number (2^53−1): beyond it, strings.
const MAX_EXACT: u64 = (1 << 53) - 1;

/// Whether every number in `value` is an integer within ±[`MAX_EXACT`].
fn exact_numbers(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.as_u64().is_some_and(|n| n <= MAX_EXACT)
                || n.as_i64().is_some_and(|n| n.unsigned_abs() <= MAX_EXACT)
        }
        Value::Array(items) => items.iter().all(exact_numbers),
        Value::Object(members) => members.values().all(exact_numbers),
        _ => true,
    }
}

/// Why `signature` is not `key`'s over the canonical JSON of `random` (`None`: it is).
fn check(random: &Value, signature: &str, key: Option<VerifyingKey>) -> Result<Option<Reason>, Malformed> {
    let Some(key) = key else { return Ok(Some(Reason::UnknownKey)) };
    let signature = data_encoding::BASE64URL_NOPAD
        .decode(signature.as_bytes())
        .ok()
        .and_then(|bytes| Signature::from_slice(&bytes).ok());
    let Some(signature) = signature else { return Ok(Some(Reason::MalformedSignature)) };
    let canonical = serde_json_canonicalizer::to_vec(random)
        .map_err(|e| Malformed(format!("random cannot be canonicalised: {e}")))?;
    Ok(key.verify_strict(&canonical, &signature).err().map(|_| Reason::SignatureMismatch))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receipts::keys::{KeyRing, private_pem};
    use crate::receipts::sign::{SERIAL_RANDOM_BYTES, Stamp, sign};
    use crate::receipts::{PublicKey, Random};

    /// A receipt signed by a key of `secret`, and that key.
    fn signed(secret: u8) -> (Value, PublicKey) {
        let (pem, public) = private_pem(&[secret; 32]).unwrap();
        let dir = std::env::temp_dir().join(format!("drbgd-receipt-verify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{secret}.pem"));
        std::fs::write(&path, pem.as_bytes()).unwrap();
        let (ring, _) = KeyRing::load(&[path.display().to_string()]).unwrap();
        let stamp = Stamp::new(std::time::SystemTime::now(), &[7; SERIAL_RANDOM_BYTES]);
        let receipt = sign(&ring, Random::default(), &stamp, "web", (Some("draw \"7\" — é"), None)).unwrap();
        let text = format!("{{\"random\":{},\"signature\":\"{}\"}}", receipt.json(), receipt.signature());
        (serde_json::from_str(&text).unwrap(), public)
    }

    #[test]
    fn a_receipt_verifies_and_any_change_is_seen() {
        let (receipt, public) = signed(3);
        let key = |id: &str| (id == public.id).then_some(public.key);
        let verdict = verify(&receipt, key).unwrap();
        assert!(verdict.valid(), "{verdict:?}");
        assert_eq!(verdict.key_id.as_deref(), Some(public.id.as_str()));
        assert_eq!(verdict.to_json()["valid"], true);
        // Re-serialised any way (spaces, member order): the canonical form is the same.
        let pretty = serde_json::to_vec_pretty(&receipt).unwrap();
        assert!(verify_json(&pretty, receipt_shape(1), key).unwrap().valid());
        // One changed character of random.
        let mut changed = receipt.clone();
        changed["random"]["user_data"] = "draw \"8\" — é".into();
        assert_eq!(verify(&changed, key).unwrap().failure, Some(Reason::SignatureMismatch));
        // Another key, an unknown key, a signature that is none.
        let (_, other) = signed(4);
        assert_eq!(verify(&receipt, |_| Some(other.key)).unwrap().failure, Some(Reason::SignatureMismatch));
        assert_eq!(verify(&receipt, |_| None).unwrap().failure, Some(Reason::UnknownKey));
        let mut bad = receipt.clone();
        bad["signature"] = "not base64!".into();
        let verdict = verify(&bad, key).unwrap();
        assert_eq!(verdict.failure, Some(Reason::MalformedSignature));
        assert_eq!(verdict.to_json()["reason"], "malformed_signature");
    }

    #[test]
    fn malformed_receipts_are_errors() {
        let none = |_: &str| None;
        for text in [
            "[]",
            "{}",
            r#"{"random": {}}"#,
            r#"{"random": 5, "signature": "x"}"#,
            r#"{"random": {}, "signature": 5}"#,
            r#"{"random": {}, "signature": "x", "extra": 1}"#,
            "{nope}",
            // A member twice: which one counts would depend on the reader.
            r#"{"random": {"data": "FAKE", "data": "REAL"}, "signature": "x"}"#,
            r#"{"random": {}, "signature": "x", "signature": "y"}"#,
        ] {
            assert!(verify_json(text.as_bytes(), receipt_shape(1), none).is_err(), "{text}");
        }
        let edge = br#"{"random": {"n": 9007199254740991, "m": -9007199254740991}, "signature": "x"}"#;
        assert_eq!(
            verify_json(edge, receipt_shape(1), none).unwrap().failure,
            Some(Reason::UnknownKey),
            "2^53-1 is exact"
        );
        // Numbers drbgd never signs, another spelling of 256 and 2^53, fail whatever the key.
        let any = |_: &str| Some(ed25519_dalek::SigningKey::from_bytes(&[1; 32]).verifying_key());
        for text in [
            r#"{"random": {"n": 256.0}, "signature": "x"}"#,
            r#"{"random": {"n": 2.56e2}, "signature": "x"}"#,
            r#"{"random": {"n": 9007199254740992}, "signature": "x"}"#,
            r#"{"random": {"n": [-9007199254740992]}, "signature": "x"}"#,
        ] {
            assert_eq!(
                verify_json(text.as_bytes(), receipt_shape(1), any).unwrap().failure,
                Some(Reason::InexactNumber),
                "{text}"
            );
        }
        let verdict =
            verify_json(br#"{"random": {"serial": "s"}, "signature": "x"}"#, receipt_shape(1), none).unwrap();
        assert_eq!((verdict.failure, verdict.serial.as_deref()), (Some(Reason::UnknownKey), Some("s")));
    }

    /// A body outside a receipt's shape is malformed as soon as a bound is passed: the
    /// attacker's 60,000 tiny members, a list longer than `limits.max_count` allows, nesting.
    #[test]
    fn bodies_outside_a_receipt_s_shape_are_malformed() {
        let none = |_: &str| None;
        let mut members: serde_json::Map<String, Value> =
            (0..60_000).map(|i| (format!("m{i}"), 0.into())).collect();
        members.insert("key_id".into(), "k".into());
        let wide = serde_json::to_string(&json!({ "random": members, "signature": "x" })).unwrap();
        let e = verify_json(wide.as_bytes(), receipt_shape(1000), none).unwrap_err();
        assert!(e.0.contains("more than 64 members"), "{e}");
        let whole = verify_json(wide.as_bytes(), Shape::ANY, none).unwrap();
        assert_eq!(whole.failure, Some(Reason::UnknownKey), "without a shape it is read whole");
        let list = |n: usize| json!({ "random": { "data": vec!["1"; n] }, "signature": "x" }).to_string();
        // Lists up to the floor always pass; longer ones only where max_count allows them.
        let floor = list(LIST_FLOOR);
        let verdict = verify_json(floor.as_bytes(), receipt_shape(1000), none).unwrap();
        assert_eq!(verdict.failure, Some(Reason::UnknownKey));
        let long = list(LIST_FLOOR + 300);
        assert!(verify_json(long.as_bytes(), receipt_shape(1000), none).is_err());
        assert!(verify_json(long.as_bytes(), receipt_shape(LIST_FLOOR + 300), none).is_ok());
        let deep = br#"{"random": {"data": [["1"]]}, "signature": "x"}"#;
        assert!(verify_json(deep, receipt_shape(1000), none).unwrap_err().0.contains("nested deeper"));
        // Read to any shape (a file on the user's own machine), they are receipts of no key.
        assert!(verify_json(long.as_bytes(), Shape::ANY, none).is_ok());
    }

    #[tokio::test]
    async fn a_lane_runs_off_the_workers_and_refuses_after_its_wait() {
        let lane = Arc::new(Lane::new(1, Duration::from_millis(50)));
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let busy = tokio::spawn({
            let lane = lane.clone();
            async move {
                lane.run(move || {
                    started_tx.send(std::thread::current().id()).unwrap();
                    release_rx.recv().unwrap();
                    7
                })
                .await
            }
        });
        let worker = tokio::task::spawn_blocking(move || started_rx.recv().unwrap()).await.unwrap();
        assert_ne!(worker, std::thread::current().id(), "not on the calling worker");
        assert_eq!(lane.run(|| 1).await, None, "its one place is taken for longer than the wait");
        release_tx.send(()).unwrap();
        assert_eq!(busy.await.unwrap(), Some(7));
        assert_eq!(lane.run(|| 2).await, Some(2), "the place is back");
    }
}
