//! `drbgd-study`: the source experiments, reproduced on drbgd's own generators.
//!
//! - `drbgd-study [--lengths ..] [--reps N] [--out DIR]`: the Rust DRBG benchmarking study, a
//!   CSV and three figures;
//! - `drbgd-study rekey [--count N] [--reps N]`: the arc4random paper's randomized rekey
//!   interval, reseeds per run, the interval distribution and a chi-square of 0..=99 draws.
//!
//! A binary of its own (a workspace member) so that the server, `drbgd`, links none of what
//! the study needs: plotters and its bitmap backend, the embedded DejaVu font, statrs,
//! indicatif, and the study's baseline constructions.

mod drbg_study;
mod rekey;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use drbgd::drbg::selftest;

#[derive(Debug, Parser)]
#[command(name = "drbgd-study", version, about = "Reproduce the source experiments on drbgd's generators")]
struct Cli {
    #[command(subcommand)]
    experiment: Option<Experiment>,
    /// Lengths in bits.
    #[arg(long, value_delimiter = ',', default_values_t = [10_000u64, 100_000, 1_000_000, 10_000_000])]
    lengths: Vec<u64>,
    /// Repetitions per point (median, min and max are reported).
    #[arg(long, default_value_t = 11)]
    reps: usize,
    /// Output directory for metrics.csv and the figures.
    #[arg(long, default_value = "results")]
    out: PathBuf,
}

#[derive(Debug, Subcommand)]
enum Experiment {
    /// arc4random's randomized rekey interval and the chi-square of uniform integers.
    Rekey {
        /// 32-bit integers per run.
        #[arg(long, default_value_t = 39_600_000)]
        count: u64,
        /// Runs per mode.
        #[arg(long, default_value_t = 10)]
        reps: usize,
    },
}

fn main() -> ExitCode {
    match run(&Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("drbgd-study: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    selftest::run_all().context("refusing to benchmark")?;
    match cli.experiment {
        Some(Experiment::Rekey { count, reps }) => {
            print!("{}", rekey::run_rekey(&rekey::RekeyOptions { count, reps })?);
        }
        None => {
            let options = drbg_study::StudyOptions {
                lengths: cli.lengths.clone(),
                reps: cli.reps,
                out: cli.out.clone(),
            };
            let rows = drbg_study::run_study(&options)?;
            print!("{}", drbg_study::summary(&rows, drbg_study::cpu_ghz()));
            println!("wrote {}/metrics.csv and three figures (SVG and PNG)", cli.out.display());
        }
    }
    Ok(())
}
