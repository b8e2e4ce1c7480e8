//! The command line: `drbgd generate` and `drbgd selftest` (the service commands come with
//! the HTTP layer).

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use base64::Engine;
use clap::{Args, Parser, Subcommand, ValueEnum};
use zeroize::Zeroize;

use crate::drbg::blake3_xof::Blake3Drbg;
use crate::drbg::chacha20::ChaCha20Drbg;
use crate::drbg::ctr_drbg::Aes256CtrDrbg;
use crate::drbg::entropy::OsEntropy;
use crate::drbg::{Algorithm, Drbg, Pool, PoolConfig, bits, selftest};

/// Bytes generated per write when streaming: 48 KiB, a multiple of 3 so base64 chunks
/// concatenate into one valid encoding.
const CHUNK: usize = 48 * 1024;

#[derive(Debug, Parser)]
#[command(name = "drbgd", version, about = "A networked randomness service")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write random output to stdout.
    Generate(GenerateArgs),
    /// Run the start-up self-tests and print one line per algorithm.
    Selftest,
}

#[derive(Debug, Args)]
struct GenerateArgs {
    /// Algorithm: chacha20, aes256ctr or blake3 (aliases accepted).
    #[arg(long, default_value = "chacha20", value_parser = parse_alg)]
    alg: Algorithm,
    /// Number of bits (packed MSB-first; the last byte's unused bits are zero).
    #[arg(long, conflicts_with = "bytes")]
    bits: Option<u64>,
    /// Number of bytes; 0 streams until the reader closes.
    #[arg(long)]
    bytes: Option<u64>,
    /// Stream until the reader closes (for statistical test batteries).
    #[arg(long, conflicts_with_all = ["bits", "bytes"])]
    endless: bool,
    /// Deterministic output from this hex seed: the generator is instantiated with the seed as
    /// entropy input, an empty nonce and the personalization "drbgd generate --seed", and
    /// never reseeded. For tests and reproducible experiments only.
    #[arg(long)]
    seed: Option<String>,
    /// Output encoding.
    #[arg(long, value_enum, default_value = "raw")]
    format: Format,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Raw,
    Hex,
    Base64,
    Bits,
}

fn parse_alg(s: &str) -> Result<Algorithm, String> {
    s.parse().map_err(|e: crate::drbg::UnknownAlgorithm| e.to_string())
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Generate(args)) => generate(&args),
        Some(Command::Selftest) => run_selftest(),
        None => generate(&GenerateArgs {
            alg: Algorithm::ChaCha20,
            bits: Some(256),
            bytes: None,
            endless: false,
            seed: None,
            format: Format::Hex,
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("drbgd: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_selftest() -> anyhow::Result<()> {
    let mut failed = false;
    for alg in Algorithm::ALL {
        match selftest::run(alg) {
            Ok(()) => println!("{alg}: ok (known answer, seeded round trip)"),
            Err(e) => {
                println!("{alg}: FAILED ({})", e.what);
                failed = true;
            }
        }
    }
    if failed {
        bail!("self-test failed");
    }
    Ok(())
}

/// A source of output bytes for `generate`.
type Source = Box<dyn FnMut(&mut [u8]) -> anyhow::Result<()>>;

fn source(args: &GenerateArgs) -> anyhow::Result<Source> {
    selftest::run(args.alg).context("refusing to generate")?;
    if let Some(seed) = &args.seed {
        let mut seed = hex::decode(seed).context("--seed must be hex")?;
        let source: Source = match args.alg {
            Algorithm::ChaCha20 => seeded::<ChaCha20Drbg>(&seed),
            Algorithm::Aes256Ctr => seeded::<Aes256CtrDrbg>(&seed),
            Algorithm::Blake3 => seeded::<Blake3Drbg>(&seed),
        };
        seed.zeroize();
        return Ok(source);
    }
    let config = PoolConfig { shards: 1, ..PoolConfig::default() };
    let pool = Pool::new(&config, Arc::new(OsEntropy)).context("cannot seed from the OS")?;
    let alg = args.alg;
    Ok(Box::new(move |buf| pool.fill(alg, buf, false).context("generator refused")))
}

fn seeded<G: Drbg>(seed: &[u8]) -> Source {
    let mut drbg = G::instantiate(seed, &[], b"drbgd generate --seed");
    Box::new(move |buf| {
        // A CTR_DRBG would need a reseed only after 2^48 calls; a deterministic stream stops there.
        drbg.generate(buf, &[]).context("reseed interval exhausted")
    })
}

fn generate(args: &GenerateArgs) -> anyhow::Result<()> {
    let mut fill = source(args)?;
    let total_bits = match (args.bits, args.bytes) {
        _ if args.endless => None,
        (Some(b), _) => Some(b),
        (None, Some(0)) => None,
        (None, Some(n)) => Some(n.checked_mul(8).context("--bytes too large")?),
        (None, None) => Some(256),
    };
    let mut out = io::stdout().lock();
    let mut buf = vec![0u8; CHUNK];
    let mut remaining = total_bits;
    loop {
        let bits_now = remaining.map_or(CHUNK as u64 * 8, |r| r.min(CHUNK as u64 * 8));
        if bits_now == 0 {
            break;
        }
        let chunk = &mut buf[..bits::byte_len(bits_now) as usize];
        fill(chunk)?;
        bits::mask_tail(chunk, bits_now);
        match write_encoded(&mut out, chunk, bits_now, args.format) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            r => r?,
        }
        remaining = remaining.map(|r| r - bits_now);
    }
    buf.zeroize();
    if !matches!(args.format, Format::Raw) {
        writeln!(out).ok();
    }
    out.flush().or_else(|e| if e.kind() == io::ErrorKind::BrokenPipe { Ok(()) } else { Err(e) })?;
    Ok(())
}

fn write_encoded(out: &mut impl Write, chunk: &[u8], n_bits: u64, format: Format) -> io::Result<()> {
    match format {
        Format::Raw => out.write_all(chunk),
        Format::Hex => out.write_all(hex::encode(chunk).as_bytes()),
        Format::Base64 => out.write_all(base64::engine::general_purpose::STANDARD.encode(chunk).as_bytes()),
        Format::Bits => {
            let mut ascii = vec![0u8; n_bits as usize];
            bits::write_ascii_bits(chunk, n_bits as usize, &mut ascii);
            out.write_all(&ascii)
        }
    }
}
