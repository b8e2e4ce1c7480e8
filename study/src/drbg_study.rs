//! The Rust DRBG benchmarking study, reproduced on drbgd's own generators (`drbgd-study`): time,
//! packed bytes and ones ratio for 10^4..10^7-bit strings, for every algorithm and, as a
//! same-run baseline, the study's own constructions; `results/metrics.csv` and three figures
//! (SVG and PNG).

mod baseline;
mod plots;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};

use drbgd::drbg::entropy::OsEntropy;
use drbgd::drbg::{Algorithm, Pool, PoolConfig, bits};

/// One measured (generator, length) point.
#[derive(Debug, Clone)]
pub struct Row {
    /// Generator label: an algorithm name, or `study-<alg>` for the baselines.
    pub alg: String,
    /// Bits requested.
    pub bits: u64,
    /// Packed bytes produced.
    pub bytes: u64,
    /// Median, minimum and maximum generation time over the repetitions, in ns.
    pub median_ns: u64,
    /// Minimum.
    pub min_ns: u64,
    /// Maximum.
    pub max_ns: u64,
    /// Ones among the n bits of the last repetition.
    pub ones: u64,
}

impl Row {
    /// ones / n.
    pub fn ones_ratio(&self) -> f64 {
        self.ones as f64 / self.bits as f64
    }
}

/// Options of `drbgd-study`.
#[derive(Debug, Clone)]
pub struct StudyOptions {
    /// Lengths in bits.
    pub lengths: Vec<u64>,
    /// Repetitions per point.
    pub reps: usize,
    /// Output directory.
    pub out: PathBuf,
}

type Generate = Box<dyn FnMut(&mut [u8])>;

fn generators() -> anyhow::Result<Vec<(String, Generate)>> {
    let pool = Arc::new(Pool::new(&PoolConfig { shards: 1, ..PoolConfig::default() }, Arc::new(OsEntropy))?);
    let mut list: Vec<(String, Generate)> = Vec::new();
    for alg in Algorithm::ALL {
        let pool = pool.clone();
        list.push((
            alg.name().to_string(),
            Box::new(move |buf| pool.fill(alg, buf, false).expect("generator")),
        ));
    }
    for (name, generate) in baseline::all() {
        list.push((name.to_string(), generate));
    }
    Ok(list)
}

/// Runs the study and writes `metrics.csv` and the figures into `options.out`.
///
/// # Errors
/// The generators cannot be seeded, or the output cannot be written.
pub fn run_study(options: &StudyOptions) -> anyhow::Result<Vec<Row>> {
    let mut gens = generators()?;
    let total = (gens.len() * options.lengths.len() * options.reps) as u64;
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut rows = Vec::new();
    for (name, generate) in &mut gens {
        for &n in &options.lengths {
            bar.set_message(format!("{name} n={n}"));
            rows.push(measure(name, generate, n, options.reps, &bar));
        }
    }
    bar.finish_and_clear();
    std::fs::create_dir_all(&options.out).with_context(|| format!("create {}", options.out.display()))?;
    write_csv(&options.out.join("metrics.csv"), &rows)?;
    plots::draw_all(&options.out, &rows)?;
    Ok(rows)
}

fn measure(name: &str, generate: &mut Generate, n: u64, reps: usize, bar: &ProgressBar) -> Row {
    let bytes = bits::byte_len(n);
    let mut buf = vec![0u8; bytes as usize];
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let start = Instant::now();
        generate(&mut buf);
        bits::mask_tail(&mut buf, n);
        times.push(start.elapsed().as_nanos() as u64);
        bar.inc(1);
    }
    times.sort_unstable();
    let ones = bits::count_ones(&buf);
    zeroize::Zeroize::zeroize(&mut buf);
    Row {
        alg: name.to_string(),
        bits: n,
        bytes,
        median_ns: times[times.len() / 2],
        min_ns: times[0],
        max_ns: times[times.len() - 1],
        ones,
    }
}

fn write_csv(path: &Path, rows: &[Row]) -> anyhow::Result<()> {
    let mut csv = String::from("alg,bits,bytes,median_ns,min_ns,max_ns,ones,zeros,ones_ratio\n");
    for r in rows {
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{},{},{:.6}",
            r.alg,
            r.bits,
            r.bytes,
            r.median_ns,
            r.min_ns,
            r.max_ns,
            r.ones,
            r.bits - r.ones,
            r.ones_ratio()
        );
    }
    std::fs::write(path, csv).with_context(|| format!("write {}", path.display()))
}

/// A human summary: per length, each generator's median and its speed-up over the study's own
/// construction of the same algorithm, plus cycles per byte at `ghz`.
pub fn summary(rows: &[Row], ghz: Option<f64>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<18} {:>10} {:>12} {:>10} {:>9} {:>8}",
        "alg", "bits", "median", "ones_ratio", "cpb", "speedup"
    );
    for r in rows {
        let base = rows.iter().find(|b| b.bits == r.bits && b.alg == format!("study-{}", r.alg));
        let speedup = base
            .map_or(String::from("-"), |b| format!("{:.2}x", b.median_ns as f64 / r.median_ns.max(1) as f64));
        let cpb =
            ghz.map_or(String::from("-"), |g| format!("{:.2}", r.median_ns as f64 * g / r.bytes as f64));
        let _ = writeln!(
            out,
            "{:<18} {:>10} {:>9.3} ms {:>10.6} {:>9} {:>8}",
            r.alg,
            r.bits,
            r.median_ns as f64 / 1e6,
            r.ones_ratio(),
            cpb,
            speedup
        );
    }
    out
}

/// The CPU's nominal frequency in GHz from /proc/cpuinfo (for cycles per byte), if known.
pub fn cpu_ghz() -> Option<f64> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let mhz: f64 = info.lines().find(|l| l.starts_with("cpu MHz"))?.split(':').nth(1)?.trim().parse().ok()?;
    Some(mhz / 1000.0)
}
