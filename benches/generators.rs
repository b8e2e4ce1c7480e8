//! Generator throughput against the raw primitives and `getrandom`, and pool scaling.
//!
//! Groups:
//! - `fill/<size>`: the production path (`Pool::fill`: shard lock, thresholds, fork check,
//!   health test) for each algorithm, beside the raw primitive it stands on (AES-256
//!   `encrypt_blocks` over counter blocks, rand_chacha's `fill_bytes`, a long-lived BLAKE3 XOF
//!   reader) and one `getrandom` call.
//! - `scaling/<threads>`: 64 KiB and 32 B fills from 1 and 2 threads, each on its own shard.
//! - `small/aes256ctr-32B`: where a 32-byte CTR_DRBG request's time goes: the mechanism alone
//!   (one Generate and its Update), its output and health-test sample from one Generate (what
//!   the pool runs) against two Generates (output, then sample), and the AES-256 key schedule
//!   every Update pays.
//!
//! Run: `cargo bench --bench generators`; figures in benches/README.md.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aes::cipher::KeyInit;
use aes::cipher::array::Array;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use drbgd::drbg::entropy::OsEntropy;
use drbgd::drbg::{Algorithm, Pool, PoolConfig};
use rand_core::{Rng, SeedableRng};

const SIZES: [(usize, &str); 6] = [
    (16, "16B"),
    (32, "32B"),
    (1024, "1KiB"),
    (64 * 1024, "64KiB"),
    (1_250_000, "1.25MB"),
    (16 << 20, "16MiB"),
];

fn pool(shards: usize) -> Pool {
    Pool::new(&PoolConfig { shards, ..PoolConfig::default() }, Arc::new(OsEntropy)).unwrap()
}

/// The raw keystream: AES-256 under `key` over counter blocks, keyed once, through the loop
/// the DRBG's large Generates take on this CPU (drbgd's own where `x86::chosen` picks one,
/// else `ctr_keystream` on the `aes` crate's backend).
fn raw_aes_ctr(key: &[u8; 32]) -> impl FnMut(&mut [u8]) {
    let cipher = aes::Aes256Enc::new(key.into());
    #[cfg(target_arch = "x86_64")]
    let own = drbgd::drbg::ctr_drbg::x86::chosen().and_then(drbgd::drbg::ctr_drbg::x86::RoundKeys::new).map(
        |mut keys| {
            keys.expand(key);
            keys
        },
    );
    #[cfg(not(target_arch = "x86_64"))]
    let own: Option<std::convert::Infallible> = None;
    let mut ctr = 0u128;
    move |out: &mut [u8]| match &own {
        #[cfg(target_arch = "x86_64")]
        Some(keys) => ctr = keys.ctr(ctr, out),
        _ => {
            ctr =
                drbgd::drbg::ctr_drbg::ctr_keystream(&cipher, ctr, Array::slice_as_chunks_mut(out).0, &mut [])
        }
    }
}

fn fill(c: &mut Criterion) {
    let pool = pool(1);
    let mut quiet_config = PoolConfig { shards: 1, ..PoolConfig::default() };
    quiet_config.policies[Algorithm::Aes256Ctr.index()].rekey_after_bytes = 1 << 40;
    let quiet = Pool::new(&quiet_config, Arc::new(OsEntropy)).unwrap();
    let mut raw_aes = raw_aes_ctr(&[7u8; 32]);
    let mut chacha = rand_chacha::ChaCha20Rng::from_seed([7u8; 32]);
    let mut xof = blake3::Hasher::new_keyed(&[7u8; 32]).finalize_xof();
    for (size, label) in SIZES {
        let mut g = c.benchmark_group(format!("fill/{label}"));
        g.throughput(Throughput::Bytes(size as u64));
        if size >= 1 << 20 {
            g.sample_size(10);
        }
        let mut buf = vec![0u8; size];
        for alg in Algorithm::ALL {
            g.bench_function(BenchmarkId::new("pool", alg.name()), |b| {
                b.iter(|| pool.fill(alg, black_box(&mut buf), false).unwrap())
            });
        }
        if size >= 64 * 1024 {
            // The same production path with reseeds out of the way (a 1 TiB threshold): what
            // the default policy's reseed every 1-2 MiB costs at these sizes.
            g.bench_function("pool-without-reseeds/aes256ctr", |b| {
                b.iter(|| quiet.fill(Algorithm::Aes256Ctr, black_box(&mut buf), false).unwrap())
            });
        }
        g.bench_function("raw/aes256-ctr_keystream", |b| b.iter(|| raw_aes(black_box(&mut buf))));
        g.bench_function("raw/rand_chacha", |b| b.iter(|| chacha.fill_bytes(black_box(&mut buf))));
        g.bench_function("raw/blake3-xof", |b| b.iter(|| xof.fill(black_box(&mut buf))));
        if size <= 1 << 16 {
            g.bench_function("getrandom", |b| b.iter(|| getrandom::fill(black_box(&mut buf)).unwrap()));
        }
        g.finish();
    }
}

fn small(c: &mut Criterion) {
    use drbgd::drbg::ctr_drbg::Aes256CtrDrbg;
    let mut g = c.benchmark_group("small/aes256ctr-32B");
    let mut drbg = Aes256CtrDrbg::new(&[7u8; 48], &[1u8; 16], b"", true);
    let (mut out, mut sample) = ([0u8; 32], [0u8; 16]);
    g.bench_function("generate", |b| b.iter(|| drbg.generate_with(black_box(&mut out), &[]).unwrap()));
    g.bench_function("output+sample/one-generate", |b| {
        b.iter(|| drbg.generate_sampled_with(black_box(&mut out), black_box(&mut sample)).unwrap())
    });
    g.bench_function("output+sample/two-generates", |b| {
        b.iter(|| {
            drbg.generate_with(black_box(&mut out), &[]).unwrap();
            drbg.generate_with(black_box(&mut sample), &[]).unwrap();
        })
    });
    g.bench_function("aes256-key-schedule", |b| b.iter(|| aes::Aes256Enc::new(black_box(&[7u8; 32].into()))));
    let pool = pool(1);
    g.bench_function("pool", |b| {
        b.iter(|| pool.fill(Algorithm::Aes256Ctr, black_box(&mut out), false).unwrap())
    });
    // Prediction resistance: a reseed before the output (entropy read, derivation function,
    // the new byte threshold drawn), what the default policy pays every 1-2 MiB.
    g.bench_function("pool-reseeding", |b| {
        b.iter(|| pool.fill(Algorithm::Aes256Ctr, black_box(&mut out), true).unwrap())
    });
    let mut entropy = [0u8; 48];
    g.bench_function("getrandom-48B", |b| b.iter(|| getrandom::fill(black_box(&mut entropy)).unwrap()));
    g.finish();
}

/// `iters` fills of `size` bytes on each of `threads` threads, timed from a common start.
fn run_threads(pool: &Arc<Pool>, alg: Algorithm, threads: usize, size: usize, iters: u64) -> Duration {
    let barrier = Arc::new(std::sync::Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (pool, barrier) = (pool.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut buf = vec![0u8; size];
                pool.fill(alg, &mut buf, false).unwrap();
                barrier.wait();
                for _ in 0..iters {
                    pool.fill(alg, black_box(&mut buf), false).unwrap();
                }
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    for h in handles {
        h.join().unwrap();
    }
    start.elapsed()
}

fn scaling(c: &mut Criterion) {
    let pool = Arc::new(pool(2));
    for (size, label) in [(64 * 1024, "64KiB"), (32, "32B")] {
        let mut g = c.benchmark_group(format!("scaling/{label}"));
        for threads in [1usize, 2] {
            g.throughput(Throughput::Bytes((size * threads) as u64));
            for alg in Algorithm::ALL {
                g.bench_function(BenchmarkId::new(alg.name(), format!("{threads}threads")), |b| {
                    b.iter_custom(|iters| run_threads(&pool, alg, threads, size, iters))
                });
            }
        }
        g.finish();
    }
}

/// Counting ones over 10^7 bits: the runtime-dispatched popcount against the same loop built
/// for the baseline x86-64 target (no POPCNT instruction).
fn popcount(c: &mut Criterion) {
    let mut buf = vec![0u8; 1_250_000];
    pool(1).fill(Algorithm::ChaCha20, &mut buf, false).unwrap();
    let mut g = c.benchmark_group("count_ones/1.25MB");
    g.throughput(Throughput::Bytes(buf.len() as u64));
    g.bench_function("dispatched", |b| b.iter(|| drbgd::drbg::bits::count_ones(black_box(&buf))));
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("popcnt") {
        /// The same loop built for AVX2 (the dispatched version before AVX-512's VPOPCNTQ).
        #[target_feature(enable = "avx2,popcnt")]
        fn avx2(buf: &[u8]) -> u64 {
            let (words, tail) = buf.as_chunks::<8>();
            let w: u64 = words.iter().map(|w| u64::from(u64::from_ne_bytes(*w).count_ones())).sum();
            w + tail.iter().map(|b| u64::from(b.count_ones())).sum::<u64>()
        }
        // SAFETY: AVX2 and POPCNT were detected just above.
        g.bench_function("avx2-popcnt", |b| b.iter(|| unsafe { avx2(black_box(&buf)) }));
    }
    g.bench_function("baseline-x86-64", |b| {
        b.iter(|| {
            let (words, tail) = black_box(&buf).as_chunks::<8>();
            let w: u64 = words.iter().map(|w| u64::from(u64::from_ne_bytes(*w).count_ones())).sum();
            w + tail.iter().map(|b| u64::from(b.count_ones())).sum::<u64>()
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = {
        // Criterion draws its HTML reports with plotters' built-in font (the study's DejaVu
        // setup lives in the study's own package, study/).
        Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2))
    };
    targets = fill, scaling, popcount, small
}
criterion_main!(benches);
