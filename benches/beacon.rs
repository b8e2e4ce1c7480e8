//! The beacon's costs: signing one uncached round (what a request for an old round costs the
//! server, once: the hash to G1 and a scalar multiplication), verifying one (what a client
//! pays), and answering a cached round (what the latest costs under load).
//!
//! Groups:
//! - `beacon/sign`: `Signer::sign` of a round never signed before.
//! - `beacon/uncached`: `Beacon::signed` of an old round not in the cache (sign, randomness,
//!   JSON body, insert), a new round each iteration.
//! - `beacon/cached-latest`: `Beacon::latest` with the round cached.
//! - `beacon/verify`: `key::verify` of a round (pairing check, point decompression).
//!
//! Run: `cargo bench --bench beacon`; figures in benches/README.md ("The beacon").

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use drbgd::beacon::scheme::{Scheme, Verifier};
use drbgd::beacon::{Beacon, Chain, ChainParams, Signer, key};

const EXAMPLE_KEY: &str = include_str!("../config/examples/beacon-example.key");
const GENESIS: u64 = 1_767_225_600;

fn example_signer() -> Signer {
    Signer::from_key_text(EXAMPLE_KEY).expect("the example key")
}

fn chain() -> Chain {
    Chain::of_signer(
        &example_signer(),
        ChainParams { period_s: 3, genesis_time: GENESIS, beacon_id: "example".into() },
    )
}

fn beacon(c: &mut Criterion) {
    let mut group = c.benchmark_group("beacon");
    let signer = Signer::from_key_text(EXAMPLE_KEY).expect("the example key");
    let mut round = 0u64;
    group.bench_function("sign", |b| {
        b.iter(|| {
            round += 1;
            black_box(signer.sign(black_box(round)))
        })
    });
    // Far past genesis, so that every round asked for is old (outside the recent window).
    let now = Duration::from_secs(GENESIS + 3 * 10_000_000);
    let beacon = Beacon::new(chain(), example_signer());
    let mut round = 0u64;
    group.bench_function("uncached", |b| {
        b.iter(|| {
            round += 1;
            black_box(beacon.signed(round, now).expect("due"))
        })
    });
    beacon.latest(now).expect("due");
    group.bench_function("cached-latest", |b| {
        b.iter(|| black_box(beacon.latest(black_box(now)).expect("due")))
    });
    let public_key = signer.public_key();
    let signature = signer.sign(7);
    group.bench_function("verify", |b| {
        b.iter(|| assert!(key::verify(black_box(&public_key), 7, black_box(&signature))))
    });
    // What following a drand network costs a round: its check with the key decoded once (as
    // the follower holds it), for each scheme, on published rounds.
    let quicknet =
        Verifier::new(Scheme::UnchainedG1Rfc9380, &hex(key::QUICKNET_PUBLIC_KEY)).expect("quicknet's key");
    let (round, signature) = key::QUICKNET_ROUND;
    let signature = hex(signature);
    group.bench_function("follow-verify-unchained", |b| {
        b.iter(|| assert!(quicknet.verify(round, b"", black_box(&signature))))
    });
    let mainnet = Verifier::new(Scheme::PedersenBlsChained, &hex(MAINNET_KEY)).expect("mainnet's key");
    let (previous, signature) = (hex(MAINNET_72785_PREVIOUS), hex(MAINNET_72785));
    group.bench_function("follow-verify-chained", |b| {
        b.iter(|| assert!(mainnet.verify(72785, black_box(&previous), black_box(&signature))))
    });
    group.finish();
}

fn hex(s: &str) -> Vec<u8> {
    const_hex::decode(s).expect("hex")
}

/// League of Entropy mainnet's key and round 72785 (`pedersen-bls-chained`; noislabs'
/// drand-verify vectors, as `src/beacon/scheme.rs`'s tests).
const MAINNET_KEY: &str =
    "868f005eb8e6e4ca0a47c8a77ceaa5309a47978a7c71bc5cce96366b5d7a569937c529eeda66c7293784a9402801af31";
const MAINNET_72785_PREVIOUS: &str = "a609e19a03c2fcc559e8dae14900aaefe517cb55c840f6e69bc8e4f66c8d18e8a609685d9917efbfb0c37f058c2de88f13d297c7e19e0ab24813079efe57a182554ff054c7638153f9b26a60e7111f71a0ff63d9571704905d3ca6df0b031747";
const MAINNET_72785: &str = "82f5d3d2de4db19d40a6980e8aa37842a0e55d1df06bd68bddc8d60002e8e959eb9cfa368b3c1b77d18f02a54fe047b80f0989315f83b12a74fd8679c4f12aae86eaf6ab5690b34f1fddd50ee3cc6f6cdf59e95526d5a5d82aaa84fa6f181e42";

criterion_group!(benches, beacon);
criterion_main!(benches);
