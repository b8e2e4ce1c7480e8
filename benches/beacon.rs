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
    group.finish();
}

criterion_group!(benches, beacon);
criterion_main!(benches);
