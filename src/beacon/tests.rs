//! The beacon against drand's published values and against vectors of an independent
//! implementation: quicknet's chain hash and rounds (as drand publishes them, the vectors of
//! noislabs' drand-verify and PyPI drand-verify 0.2.1's README), and the example key's public
//! key, chain hash and rounds as py_ecc 8.0.0 computes them and drand-verify accepts them
//! (`scripts/beacon-vectors.py`); then the clock, the cache and the refusals with the time
//! chosen by the test, and the bounds on requests waiting for a round or a turn to sign.

use std::sync::Arc;
use std::time::Duration;

use super::cache::{OLD_CAPACITY, RECENT};
use super::chain::{chain_hash, group_hash};
use super::key::{self, EXAMPLE_PUBLIC_KEY, KeyError, QUICKNET_PUBLIC_KEY, QUICKNET_ROUND, Signer};
use super::*;

const QUICKNET_GENESIS: i64 = 1_692_803_367;
const QUICKNET_GROUP_HASH: &str = "f477d5c89f21a17c863a7f937c6a6d15859414d2be09cd448d4279af331c5d3e";
const QUICKNET_HASH: &str = "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971";

/// The example key (config/examples/beacon-example.key) and what py_ecc computes of it.
const EXAMPLE_KEY: &str = include_str!("../../config/examples/beacon-example.key");
const EXAMPLE_GROUP_HASH: &str = "1080a192f0756ed4af3039eb2136d35eecb5da4af51df809aecb9756812409d9";
/// Period 3, genesis 1767225600 (2026-01-01T00:00:00Z), id `example`: the example config's.
const EXAMPLE_GENESIS: u64 = 1_767_225_600;
const EXAMPLE_HASH: &str = "8d61d591412d3946ebf8feba1bfe9665544c8af2929ce61d7d9679752fcddb29";
/// (round, signature, randomness).
const EXAMPLE_ROUNDS: [(u64, &str, &str); 4] = [
    (
        1,
        "803182729da77586d88d368842df382b299059a9977182b6485437e1a968904a274e7e426fae602df7f8b0036c84b25c",
        "b06df0b61f9ba8e45d2f7f1aa58263805084081a1c3de63127ae8eec75b14ca9",
    ),
    (
        2,
        "956a3add6b901fc96656e95d94e93c3c570e0675376a726de96394d3cccdb2ee98bd1c8a91459643d8944ebb1ce1b17e",
        "4b7aa5fa4b2b81413a5a6f6d9f3809cf9daddcedb6195962577a8e7303002ddd",
    ),
    (
        1000,
        "8306f135e259e3941967b4460f80db94f392fc71f4e81fa23cf9acbeebe050c10ad6ab07b033f1305859191524e10f3e",
        "4887a8650d34116f3593df248cf822fa948e079ef485d50242af2b936f6f6783",
    ),
    (
        u64::MAX,
        "96baf53369131d757bb4ceea3bd432433bd850be96834f08892368aeb3e7d02b68a7e20bce8bd636e7a304e29c6f25ac",
        "a2ade1c99ecc0c4f6e9508e2579b733acc6052da9d165dc1493c7bd6ebfc5ca8",
    ),
];

fn hex(s: &str) -> Vec<u8> {
    const_hex::decode(s).unwrap()
}

fn example_signer() -> Signer {
    Signer::from_key_text(EXAMPLE_KEY).unwrap()
}

fn example_chain() -> Chain {
    Chain::of_signer(
        &example_signer(),
        ChainParams { period_s: 3, genesis_time: EXAMPLE_GENESIS, beacon_id: "example".into() },
    )
}

fn example_beacon() -> Beacon {
    Beacon::new(example_chain(), example_signer())
}

/// `seconds` after the example chain's genesis (before it, negative).
fn at(seconds: f64) -> UnixTime {
    let genesis = Duration::from_secs(EXAMPLE_GENESIS);
    if seconds >= 0.0 {
        genesis + Duration::from_secs_f64(seconds)
    } else {
        genesis - Duration::from_secs_f64(-seconds)
    }
}

#[test]
fn quicknet_values_give_its_published_chain_hash() {
    let pk = hex(QUICKNET_PUBLIC_KEY);
    let hash = chain_hash(3, QUICKNET_GENESIS, &pk, &hex(QUICKNET_GROUP_HASH), "quicknet");
    assert_eq!(const_hex::encode(hash), QUICKNET_HASH);
    // The id is hashed unless it is drand's default.
    assert_ne!(chain_hash(3, QUICKNET_GENESIS, &pk, &hex(QUICKNET_GROUP_HASH), "default"), hash);
    assert_eq!(
        chain_hash(3, QUICKNET_GENESIS, &pk, &hex(QUICKNET_GROUP_HASH), "default"),
        chain_hash(3, QUICKNET_GENESIS, &pk, &hex(QUICKNET_GROUP_HASH), ""),
    );
}

/// drand's League of Entropy mainnet (`pedersen-bls-chained`, beacon id `default`), as
/// `https://drand.cloudflare.com/info` publishes it: its values give its published hash.
#[test]
fn mainnet_values_give_its_published_chain_hash() {
    let pk = hex(
        "868f005eb8e6e4ca0a47c8a77ceaa5309a47978a7c71bc5cce96366b5d7a569937c529eeda66c7293784a9402801af31",
    );
    let group = hex("176f93498eac9ca337150b46d21dd58673ea4e3581185f869672e59fa4cb390a");
    let hash = chain_hash(30, 1_595_431_050, &pk, &group, "default");
    assert_eq!(const_hex::encode(hash), "8990e7a9aaed2ffed73dbd7092123d6f289930540d7651336225dc172e51b2ce");
}

#[test]
fn published_quicknet_rounds_verify_with_our_code_path() {
    let pk = hex(QUICKNET_PUBLIC_KEY);
    let (round, signature) = QUICKNET_ROUND;
    assert!(key::verify(&pk, round, &hex(signature)));
    assert!(!key::verify(&pk, round + 1, &hex(signature)), "a signature names its round");
    let signed = SignedRound::new(round, &hex(signature), None);
    assert_eq!(
        const_hex::encode(signed.randomness),
        "fb8f7bc29bf24db51871ec8c79f3a1e4bd0557bc0dfcee9ed1d924e69d1c60dc",
        "randomness is SHA-256 of the signature"
    );
    // PyPI drand-verify 0.2.1's README: quicknet round 657413.
    let signature =
        "b713718a38ae728dfd477991af2822e08d2f305e47718cef9f7848ce4050e7be41076862b98fad56e91a6b85b89cd97b";
    assert!(key::verify(&pk, 657_413, &hex(signature)));
    let signed = SignedRound::new(657_413, &hex(signature), None);
    assert_eq!(
        const_hex::encode(signed.randomness),
        "fc1873a13f3545aeade8401532ef5519920652eee6b0d2b19ca12643b87b3587"
    );
    // Garbage is refused, not a panic.
    assert!(!key::verify(&pk, round, &[0u8; 48]));
    assert!(!key::verify(&pk[..95], round, &hex(signature)));
    assert!(!key::verify(&pk, round, &[]));
}

#[test]
fn the_example_key_signs_as_an_independent_implementation_does() {
    let chain = example_chain();
    assert_eq!(const_hex::encode(chain.public_key()), EXAMPLE_PUBLIC_KEY);
    assert_eq!(const_hex::encode(chain.group_hash()), EXAMPLE_GROUP_HASH);
    assert_eq!(chain.group_hash(), &group_hash(chain.public_key()));
    assert_eq!(chain.hash_hex(), EXAMPLE_HASH);
    for (round, signature, randomness) in EXAMPLE_ROUNDS {
        let signed = SignedRound::new(round, &example_signer().sign(round), None);
        assert_eq!(const_hex::encode(&signed.signature), signature, "round {round}");
        assert_eq!(const_hex::encode(signed.randomness), randomness, "round {round}");
        assert!(key::verify(chain.public_key(), round, &signed.signature));
    }
}

#[test]
fn info_has_drands_shape() {
    let chain = example_chain();
    let info: serde_json::Value = serde_json::from_slice(chain.info_json()).unwrap();
    let mut keys: Vec<&str> = info.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["genesis_time", "groupHash", "hash", "metadata", "period", "public_key", "schemeID"]);
    assert_eq!(info["public_key"], EXAMPLE_PUBLIC_KEY);
    assert_eq!(info["period"], 3);
    assert_eq!(info["genesis_time"], EXAMPLE_GENESIS);
    assert_eq!(info["hash"], EXAMPLE_HASH);
    assert_eq!(info["groupHash"], EXAMPLE_GROUP_HASH);
    assert_eq!(info["schemeID"], "bls-unchained-g1-rfc9380");
    assert_eq!(info["metadata"], serde_json::json!({ "beaconID": "example" }));
    assert!(chain.is_named_by(EXAMPLE_HASH));
    assert!(chain.is_named_by(&EXAMPLE_HASH.to_uppercase()));
    assert!(!chain.is_named_by(QUICKNET_HASH));
}

#[test]
fn a_round_is_exactly_round_randomness_and_signature() {
    let signed = SignedRound::new(2, &example_signer().sign(2), None);
    let body: serde_json::Value = serde_json::from_slice(&signed.json).unwrap();
    assert_eq!(
        body,
        serde_json::json!({
            "round": 2,
            "randomness": EXAMPLE_ROUNDS[1].2,
            "signature": EXAMPLE_ROUNDS[1].1,
        })
    );
    assert!(body.get("previous_signature").is_none());
}

#[test]
fn sign_then_verify_round_trips_and_nothing_else_verifies() {
    let signer = Signer::from_key_material(&[7u8; 32]).unwrap();
    let other = Signer::from_key_material(&[8u8; 32]).unwrap();
    let pk = signer.public_key();
    for round in [1, 2, 3, 1 << 40, u64::MAX] {
        let signature = signer.sign(round);
        assert!(key::verify(&pk, round, &signature), "{round}");
        assert!(!key::verify(&pk, round.wrapping_add(1), &signature), "{round}");
        assert!(!key::verify(&other.public_key(), round, &signature), "{round}");
        let mut flipped = signature;
        flipped[47] ^= 1;
        assert!(!key::verify(&pk, round, &flipped), "{round}");
        assert_eq!(signer.sign(round), signature, "deterministic");
    }
    assert_eq!(Signer::from_key_material(&[7u8; 31]).err(), Some(KeyError::ShortKeyMaterial));
    key::selftest(&signer).unwrap();
}

#[test]
fn the_key_file_round_trips_and_bad_ones_are_refused() {
    let signer = Signer::from_key_text(EXAMPLE_KEY).unwrap();
    let text = signer.key_file_text();
    assert!(text.contains(EXAMPLE_PUBLIC_KEY), "the public key in a comment");
    let again = Signer::from_key_text(&text).unwrap();
    assert_eq!(again.public_key(), signer.public_key());
    assert_eq!(Signer::from_key_text("# only a comment\n\n").err(), Some(KeyError::Missing));
    assert_eq!(Signer::from_key_text("abcd").err(), Some(KeyError::NotHex));
    assert_eq!(Signer::from_key_text(&"zz".repeat(32)).err(), Some(KeyError::NotHex));
    assert_eq!(Signer::from_key_text(&"00".repeat(32)).err(), Some(KeyError::NotAScalar));
    // One key line, and only comments or blank lines besides it.
    let secret_line = EXAMPLE_KEY.lines().find(|l| !l.starts_with('#')).unwrap();
    assert!(Signer::from_key_text(&format!("{EXAMPLE_KEY}\n# a comment\n\n")).is_ok());
    let twice = format!("{EXAMPLE_KEY}{secret_line}\n");
    assert_eq!(Signer::from_key_text(&twice).err(), Some(KeyError::Trailing));
    let trailing = format!("{EXAMPLE_KEY}period_s = 3\n");
    assert_eq!(Signer::from_key_text(&trailing).err(), Some(KeyError::Trailing));
    // The group order r itself is not below r.
    let r = "73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001";
    assert_eq!(Signer::from_key_text(r).err(), Some(KeyError::NotAScalar));
    // Never printed.
    let printed = format!("{signer:?} {:?}", example_chain());
    assert!(!printed.contains(secret_line), "{printed}");
}

#[test]
fn rounds_follow_the_clock() {
    let s = Schedule { genesis_time: EXAMPLE_GENESIS, period_s: 3 };
    assert_eq!(s.round_at(at(-0.001)), 0);
    assert_eq!(s.round_at(Duration::ZERO), 0);
    assert_eq!(s.round_at(at(0.0)), 1);
    assert_eq!(s.round_at(at(2.999)), 1);
    assert_eq!(s.round_at(at(3.0)), 2);
    assert_eq!(s.round_at(at(3000.0)), 1001);
    assert_eq!(s.due_at(1), Some(EXAMPLE_GENESIS));
    assert_eq!(s.due_at(0), Some(EXAMPLE_GENESIS));
    assert_eq!(s.due_at(1001), Some(EXAMPLE_GENESIS + 3000));
    assert_eq!(s.due_at(u64::MAX), None);
    assert_eq!(s.timing(1, at(0.0)), Timing::Due);
    assert_eq!(s.timing(2, at(1.5)), Timing::Next { wait: Duration::from_secs_f64(1.5) });
    assert_eq!(s.timing(1, at(-2.0)), Timing::Next { wait: Duration::from_secs(2) });
    assert_eq!(s.timing(3, at(1.0)), Timing::TooEarly { wait: Duration::from_secs(5) });
    assert_eq!(s.timing(u64::MAX, at(1.0)), Timing::TooEarly { wait: Duration::MAX });
    assert_eq!(s.until(2, at(1.0)), Duration::from_secs(2));
    assert_eq!(s.until(1, at(1.0)), Duration::ZERO);
}

#[test]
fn only_due_rounds_are_served_and_the_next_is_worth_waiting_for() {
    let beacon = example_beacon();
    // Round 11 is due at +30 s.
    let now = at(31.0);
    let signed = beacon.signed(11, now).unwrap();
    assert_eq!(const_hex::encode(&signed.signature), const_hex::encode(example_signer().sign(11)));
    assert_eq!(beacon.signed(12, now), Err(Refusal::NotDue { wait: Duration::from_secs(2), next: true }));
    // Three periods ahead and a hundred: refused outright.
    assert_eq!(beacon.signed(14, now), Err(Refusal::NotDue { wait: Duration::from_secs(8), next: false }));
    assert!(matches!(beacon.signed(111, now), Err(Refusal::NotDue { next: false, .. })));
    assert!(matches!(beacon.signed(u64::MAX, now), Err(Refusal::NotDue { next: false, .. })));
    assert_eq!(beacon.signed(0, now), Err(Refusal::NoRound));
    // Once due, served.
    assert_eq!(beacon.signed(12, at(33.0)).unwrap().round, 12);
    // The latest, and the time until the next.
    let (latest, next_in) = beacon.latest(at(34.5)).unwrap();
    assert_eq!((latest.round, next_in), (12, Duration::from_secs_f64(1.5)));
    // Before genesis there is none: round 1 is the next.
    assert_eq!(
        beacon.latest(at(-1.0)).err(),
        Some(Refusal::NotDue { wait: Duration::from_secs(1), next: true })
    );
}

#[test]
fn a_round_is_signed_once_and_replicas_agree_byte_for_byte() {
    let (a, b) = (example_beacon(), example_beacon());
    let now = at(3000.0);
    let first = a.signed(1000, now).unwrap();
    assert!(Arc::ptr_eq(&first, &a.signed(1000, now).unwrap()), "the second answer is the cached one");
    assert_eq!(first.json, b.signed(1000, now).unwrap().json);
    assert_eq!(first.json, a.latest(at(2997.0)).unwrap().0.json);
}

#[test]
fn the_cache_is_bounded_and_old_rounds_never_evict_the_current_one() {
    let beacon = example_beacon();
    let now = at(3.0 * 5000.0);
    let current = beacon.latest(now).unwrap().0;
    for round in 1..=(OLD_CAPACITY as u64 + 50) {
        beacon.signed(round, now).unwrap();
    }
    assert!(beacon.cached() <= OLD_CAPACITY + RECENT as usize + 1, "{}", beacon.cached());
    assert!(Arc::ptr_eq(&current, &beacon.latest(now).unwrap().0), "the current round stayed");
    // First in, first out: the oldest old rounds went, the last ones stayed.
    assert!(beacon.cache.get(1).is_none());
    assert!(beacon.cache.get(OLD_CAPACITY as u64 + 50).is_some());
}

#[test]
fn a_round_that_stops_being_recent_moves_to_the_old_tier() {
    let beacon = example_beacon();
    let latest = beacon.latest(at(3.0 * 100.0)).unwrap().0;
    // Much later, one insert prunes the recent tier: the round it held is kept among the old.
    let later = at(3.0 * 200.0);
    beacon.latest(later).unwrap();
    let kept = beacon.cache.get(latest.round).expect("moved to the old tier, not dropped");
    assert!(Arc::ptr_eq(&kept, &latest));
}

#[test]
fn old_rounds_are_signed_one_at_a_time_and_recent_ones_never_wait() {
    let beacon = example_beacon();
    let now = at(3000.0);
    let held = beacon.old_signing.try_acquire().unwrap();
    assert_eq!(beacon.signed(5, now), Err(Refusal::Busy));
    assert_eq!(beacon.latest(now).unwrap().0.round, 1001, "the current round does not wait");
    assert_eq!(beacon.signed(1000, now).unwrap().round, 1000, "nor a recent one");
    drop(held);
    assert_eq!(beacon.signed(5, now).unwrap().round, 5);
    // Cached, it needs no signing at all.
    let held = beacon.old_signing.try_acquire().unwrap();
    assert_eq!(beacon.signed(5, now).unwrap().round, 5);
    drop(held);
}

#[tokio::test(start_paused = true)]
async fn an_old_round_waits_a_moment_for_its_turn_then_is_busy() {
    let beacon = example_beacon();
    let now = at(3000.0);
    // The turn comes within the wait: signed (or found signed) under it.
    let held = beacon.old_signing.try_acquire().unwrap();
    let (signed, ()) = tokio::join!(beacon.signed_in_turn(5, now), async {
        tokio::time::sleep(OLD_SIGNING_WAIT / 2).await;
        drop(held);
    });
    assert_eq!(signed.unwrap().round, 5);
    // Popular: however many ask at once, all have the one signature.
    let asking: Vec<_> = (0..8).map(|_| beacon.signed_in_turn(6, now)).collect();
    let rounds = futures_util::future::join_all(asking).await;
    let first = rounds[0].clone().unwrap();
    assert!(rounds.iter().all(|r| Arc::ptr_eq(r.as_ref().unwrap(), &first)));
    // No turn within the wait: busy.
    let _held = beacon.old_signing.try_acquire().unwrap();
    assert_eq!(beacon.signed_in_turn(7, now).await, Err(Refusal::Busy));
    assert_eq!(beacon.signed_in_turn(5, now).await.unwrap().round, 5, "a kept one needs no turn");
}

#[test]
fn the_start_up_self_test_passes_with_the_example_key() {
    key::selftest(&example_signer()).unwrap();
}

#[test]
fn waiters_are_bounded_and_give_their_place_back() {
    let beacon = example_beacon();
    let peer = |i: usize| PeerKey::of(Some(std::net::Ipv4Addr::from(u32::try_from(i).unwrap()).into()));
    let places: Vec<_> =
        (0..MAX_WAITERS).map(|i| beacon.waiter(peer(i / MAX_WAITERS_PER_PEER)).expect("a place")).collect();
    assert!(beacon.waiter(peer(MAX_WAITERS)).is_none(), "no place past the bound, even for a newcomer");
    drop(places);
    assert!(beacon.waiter(peer(0)).is_some(), "places come back when dropped");
}

#[test]
fn one_peer_takes_at_most_its_share_of_the_waiters() {
    let beacon = example_beacon();
    let (a, b) = (PeerKey::of(Some([192, 0, 2, 1].into())), PeerKey::of(Some([192, 0, 2, 2].into())));
    let of_a: Vec<_> = (0..MAX_WAITERS_PER_PEER).map(|_| beacon.waiter(a).expect("a place")).collect();
    assert!(beacon.waiter(a).is_none(), "no place past the peer's share");
    let of_b = beacon.waiter(b).expect("another peer still waits");
    drop(of_a);
    assert!(beacon.waiter(a).is_some(), "its places come back when dropped");
    drop(of_b);
    assert!(beacon.waiters.lock().unwrap().by_peer.len() <= 1, "idle peers are forgotten");
}

#[test]
fn a_recent_round_is_signed_once_however_many_ask_at_once() {
    // As when a round falls due with requests waiting for it: one signature, shared.
    let beacon = example_beacon();
    let now = at(3000.0);
    let rounds: Vec<Arc<SignedRound>> = std::thread::scope(|s| {
        let asking: Vec<_> = (0..8).map(|_| s.spawn(|| beacon.signed(1001, now).unwrap())).collect();
        asking.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(rounds.iter().all(|r| Arc::ptr_eq(r, &rounds[0])), "every request has the one signature");
}
