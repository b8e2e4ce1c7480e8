//! arc4random's randomized rekey interval (the paper on a non-deterministic arc4random rekey
//! interval), on drbgd's managed ChaCha20: 39,600,000
//! 32-bit integers (151 MiB) per run, jitter off and on, with REKEY_BASE = 1,600,000 bytes as in
//! OpenBSD; mean time, reseeds per run, the interval distribution; and the chi-square goodness
//! of fit of 39,600,000 uniform draws in 0..=99 from every generator (the `/int` sampler).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use statrs::distribution::{ChiSquared, ContinuousCDF};

use drbgd::drbg::chacha20::ChaCha20Drbg;
use drbgd::drbg::entropy::OsEntropy;
use drbgd::drbg::reseed::{Managed, ReseedPolicy};
use drbgd::drbg::stats::Stats;
use drbgd::drbg::uniform::UniformI64;
use drbgd::drbg::{Algorithm, Pool, PoolConfig, ReseedReason};

/// arc4random's REKEY_BASE, in bytes.
pub const REKEY_BASE: u64 = 1_600_000;

/// Options of `drbgd-study rekey`.
#[derive(Debug, Clone)]
pub struct RekeyOptions {
    /// 32-bit integers per run (the study: 39,600,000).
    pub count: u64,
    /// Runs per mode (the study: 10).
    pub reps: usize,
}

struct Run {
    time: Duration,
    reseeds: u64,
    intervals: Vec<u64>,
}

fn one_run(jitter: bool, count: u64) -> anyhow::Result<Run> {
    let stats = Arc::new(Stats::default());
    let policy =
        ReseedPolicy { rekey_after_bytes: REKEY_BASE, rekey_after: Duration::from_secs(3600), jitter };
    let mut drbg = Managed::<ChaCha20Drbg>::new(
        Arc::new(OsEntropy),
        stats.clone(),
        Arc::from(&b"rekey study"[..]),
        policy,
    )?;
    let mut word = [0u8; 4];
    let (mut seen, mut last_at, mut intervals) = (0u64, 0u64, Vec::new());
    let start = Instant::now();
    for i in 0..count {
        drbg.fill(&mut word, false)?;
        let reseeds = stats.reseeds(Algorithm::ChaCha20, ReseedReason::Threshold);
        if reseeds != seen {
            seen = reseeds;
            intervals.push(i * 4 - last_at);
            last_at = i * 4;
        }
    }
    let time = start.elapsed();
    std::hint::black_box(word);
    Ok(Run { time, reseeds: seen, intervals })
}

/// Runs both modes and the chi-square test; returns the report text.
///
/// # Errors
/// The generators cannot be seeded.
pub fn run_rekey(options: &RekeyOptions) -> anyhow::Result<String> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "rekey study: {} x 32-bit integers ({:.1} MiB) per run, {} runs, REKEY_BASE {} bytes",
        options.count,
        options.count as f64 * 4.0 / (1 << 20) as f64,
        options.reps,
        REKEY_BASE
    );
    for jitter in [false, true] {
        let runs: Vec<Run> =
            (0..options.reps).map(|_| one_run(jitter, options.count)).collect::<Result<_, _>>()?;
        let mean = runs.iter().map(|r| r.time.as_secs_f64()).sum::<f64>() / runs.len() as f64;
        let reseeds: Vec<u64> = runs.iter().map(|r| r.reseeds).collect();
        let intervals: Vec<u64> = runs.iter().flat_map(|r| r.intervals.iter().copied()).collect();
        let (min, max) =
            (intervals.iter().min().copied().unwrap_or(0), intervals.iter().max().copied().unwrap_or(0));
        let avg = intervals.iter().sum::<u64>() as f64 / intervals.len().max(1) as f64;
        let _ = writeln!(
            out,
            "jitter {:<3}: mean {:.3} s; reseeds per run {:?}; intervals min {min} max {max} mean {avg:.0} bytes ({} intervals)",
            if jitter { "on" } else { "off" },
            mean,
            reseeds,
            intervals.len()
        );
        let _ =
            writeln!(out, "            interval histogram (bytes, 10 bins): {}", histogram(&intervals, 10));
    }
    let _ = writeln!(out, "chi-square of {} uniform draws in 0..=99 (99 degrees of freedom):", options.count);
    for alg in Algorithm::ALL {
        let (stat, p) = chi_square(alg, options.count)?;
        let _ = writeln!(out, "  {:<10} chi2 = {stat:8.2}  p = {p:.4}", alg.name());
    }
    Ok(out)
}

fn histogram(values: &[u64], bins: usize) -> String {
    let (Some(&min), Some(&max)) = (values.iter().min(), values.iter().max()) else { return String::new() };
    let width = ((max - min) / bins as u64).max(1);
    let mut counts = vec![0u64; bins];
    for v in values {
        counts[(((v - min) / width) as usize).min(bins - 1)] += 1;
    }
    counts
        .iter()
        .enumerate()
        .map(|(i, c)| format!("[{}..) {c}", min + i as u64 * width))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Chi-square statistic and p-value of `count` draws of Uniform(0..=99) from `alg`.
fn chi_square(alg: Algorithm, count: u64) -> anyhow::Result<(f64, f64)> {
    let pool = Pool::new(&PoolConfig { shards: 1, ..PoolConfig::default() }, Arc::new(OsEntropy))?;
    let dist = UniformI64::new_inclusive(0, 99).ok_or_else(|| anyhow::anyhow!("empty range"))?;
    let mut words = pool.words(alg);
    let mut bins = [0u64; 100];
    for _ in 0..count {
        let v = dist.sample(|| words.next_u64()).map_err(|e| anyhow::anyhow!("{alg} refused: {e}"))?;
        bins[v as usize] += 1;
    }
    let expected = count as f64 / 100.0;
    let stat: f64 = bins.iter().map(|&c| (c as f64 - expected).powi(2) / expected).sum();
    let p = ChiSquared::new(99.0).map_err(|e| anyhow::anyhow!("{e}"))?.sf(stat);
    Ok((stat, p))
}
