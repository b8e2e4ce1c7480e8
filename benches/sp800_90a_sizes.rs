//! The Go SP 800-90A AES-CTR-DRBG library's benchmark sizes, so drbgd's figures line up with its
//! published table: serial reads of 16 B .. 16 KiB, concurrent 16-byte reads from 2 and 4
//! threads, 10 MiB and 50 MiB reads, and UUID v4 generation.
//!
//! Run: `cargo bench --bench sp800_90a_sizes`; figures in benches/README.md.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use drbgd::drbg::entropy::OsEntropy;
use drbgd::drbg::{Algorithm, Pool, PoolConfig};

fn pool(shards: usize) -> Arc<Pool> {
    Arc::new(Pool::new(&PoolConfig { shards, ..PoolConfig::default() }, Arc::new(OsEntropy)).unwrap())
}

/// Reads of each size from every algorithm on one shard.
fn reads<L: std::fmt::Display>(c: &mut Criterion, group: &str, sizes: &[(usize, L)], samples: usize) {
    let pool = pool(1);
    let mut g = c.benchmark_group(group);
    g.sample_size(samples);
    for (size, label) in sizes {
        let size = *size;
        g.throughput(Throughput::Bytes(size as u64));
        let mut buf = vec![0u8; size];
        for alg in Algorithm::ALL {
            g.bench_function(BenchmarkId::new(alg.name(), label.to_string()), |b| {
                b.iter(|| pool.fill(alg, black_box(&mut buf), false).unwrap())
            });
        }
    }
    g.finish();
}

fn serial(c: &mut Criterion) {
    reads(c, "sp800_90a_sizes/serial", &[16, 32, 64, 256, 512, 4096, 16384].map(|n: usize| (n, n)), 100);
}

fn large(c: &mut Criterion) {
    reads(c, "sp800_90a_sizes/large", &[(10 << 20, "10MiB"), (50 << 20, "50MiB")], 10);
}

/// 16-byte reads shared by `threads` threads; reported as wall time per read.
fn concurrent(c: &mut Criterion) {
    let mut g = c.benchmark_group("sp800_90a_sizes/concurrent16B");
    for threads in [2usize, 4] {
        let pool = pool(threads.min(std::thread::available_parallelism().map_or(1, |n| n.get())));
        g.bench_function(BenchmarkId::new("chacha20", format!("{threads}threads")), |b| {
            b.iter_custom(|iters| {
                let per_thread = iters.div_ceil(threads as u64);
                let start = Instant::now();
                let handles: Vec<_> = (0..threads)
                    .map(|_| {
                        let pool = pool.clone();
                        std::thread::spawn(move || {
                            let mut buf = [0u8; 16];
                            for _ in 0..per_thread {
                                pool.fill(Algorithm::ChaCha20, black_box(&mut buf), false).unwrap();
                            }
                        })
                    })
                    .collect();
                for h in handles {
                    h.join().unwrap();
                }
                // Wall time for `iters` reads shared by the threads (as Go's RunParallel reports).
                start.elapsed()
            })
        });
    }
    g.finish();
}

fn uuid_v4(c: &mut Criterion) {
    let pool = pool(1);
    c.bench_function("sp800_90a_sizes/uuid_v4/chacha20", |b| {
        b.iter(|| {
            let mut bytes = [0u8; 16];
            pool.fill(Algorithm::ChaCha20, &mut bytes, false).unwrap();
            black_box(uuid::Builder::from_random_bytes(bytes).into_uuid())
        })
    });
}

criterion_group! {
    name = benches;
    config = {
        // Criterion draws its HTML reports with plotters' built-in font (the study's DejaVu
        // setup lives in the study's own package, study/).
        Criterion::default().warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1))
    };
    targets = serial, concurrent, large, uuid_v4
}
criterion_main!(benches);
