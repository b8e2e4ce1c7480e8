//! The command line: `drbgd [serve]`, `drbgd generate`, `drbgd selftest`, `drbgd healthcheck`,
//! `drbgd verify` (a signed receipt, offline), `drbgd keygen receipt` (a receipt signing key),
//! `drbgd beacon keygen` (the beacon's secret key; also `drbgd keygen beacon`) and `drbgd
//! beacon info`. (The source experiments are a separate binary, `drbgd-study`, in `study/`.)

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use zeroize::{Zeroize, Zeroizing};

mod fetch;
mod round;

use crate::beacon::key::IKM_LEN;
use crate::beacon::{Chain, Signer};
use crate::config::LogFormat;
use crate::drbg::entropy::OsEntropy;
use crate::drbg::{Algorithm, Drbg, Pool, PoolConfig, WithMechanism, bits, selftest};
use crate::service::wiped::{Wiped, wipe};

/// Bytes generated per write when streaming: 384 KiB, a multiple of 3 so base64 chunks
/// concatenate into one valid encoding. Large enough that the pool's per-fill work (reseed and
/// age checks, the health sample, the rekey) stays a few percent of a fill even at AVX-512
/// speeds: 48 KiB cost `chacha20` 17 %, `blake3` 12 % and `aes256ctr` 13 % of their 1 GiB
/// throughput on an AMD Zen 5 (`scripts/cipher-bench.sh`).
const CHUNK: usize = 384 * 1024;

#[derive(Debug, Parser)]
#[command(name = "drbgd", version, about = "A networked randomness service")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the service (the default when no command is given).
    Serve(ServeArgs),
    /// Probe a running drbgd's /livez (for container health checks: no shell or curl needed).
    Healthcheck {
        /// Admin address to probe.
        #[arg(long, default_value = "127.0.0.1:8081")]
        admin: std::net::SocketAddr,
    },
    /// Write random output to stdout.
    Generate(GenerateArgs),
    /// Run the start-up self-tests and print each: a line per algorithm, then one per test.
    Selftest,
    /// Check a signed receipt offline: exit 0 only if it is valid (else its reason, exit 1).
    Verify(VerifyArgs),
    /// Make a key.
    Keygen {
        /// What for.
        #[command(subcommand)]
        what: KeygenCommand,
    },
    /// The randomness beacon: make its key, print its chain's info (docs/verifiable.md).
    #[command(subcommand)]
    Beacon(BeaconCommand),
}

#[derive(Debug, Subcommand)]
enum BeaconCommand {
    /// Write a new secret key to a file of mode 0600 (never over an existing one), from drbgd's
    /// own generator, and print its public key and chain hash.
    Keygen(BeaconKeygenArgs),
    /// Print the configured chain's /beacon/info (its public key and chain hash among them).
    Info {
        /// A TOML file layered over the embedded defaults: its `[beacon]` names the chain.
        #[arg(long, env = "DRBGD_CONFIG")]
        config: Option<std::path::PathBuf>,
    },
}

#[derive(Debug, Args)]
struct VerifyArgs {
    /// The receipt: a JSON file of what drbgd answered to receipt=true (`{"random": ...,
    /// "signature": ...}`); `-` reads standard input.
    file: std::path::PathBuf,
    /// The verification keys: a JWK set file, or the https:// URL of one (a drbgd's /keys;
    /// http:// to a loopback address only).
    #[arg(long, required_unless_present = "key", conflicts_with = "key")]
    jwks: Option<String>,
    /// Roots (PEM) that the https:// servers' certificates (--jwks, --beacon-info) must chain
    /// to, instead of the Mozilla roots (a drbgd behind a private CA).
    #[arg(long)]
    ca: Option<std::path::PathBuf>,
    /// The verification key: a PEM file (the public key, or the private key itself).
    #[arg(long)]
    key: Option<std::path::PathBuf>,
    /// For a draw bound to a beacon round: the chain's drand `/info` (a file, or the https://
    /// URL of a node's, a relay's or a drbgd's `/beacon/info`; http:// to a loopback address
    /// only). It must hash to the receipt's chain_hash; the round's signature, its randomness
    /// and the values are then checked too.
    #[arg(long)]
    beacon_info: Option<String>,
    /// With --beacon-info: the chain hash (hex) of the drand network you trust; a receipt of
    /// another chain is invalid.
    #[arg(long, requires = "beacon_info")]
    chain_hash: Option<String>,
}

#[derive(Debug, Subcommand)]
enum KeygenCommand {
    /// An Ed25519 receipt signing key from drbgd's own generator, written as PKCS#8 PEM (mode
    /// 0600; an existing file is never overwritten); prints its key id and public key.
    Receipt {
        /// The file to write.
        #[arg(long)]
        out: std::path::PathBuf,
        #[command(flatten)]
        drawing: Drawing,
    },
    /// The beacon's secret key: the same as `drbgd beacon keygen`.
    Beacon(BeaconKeygenArgs),
    /// The RANDOM.ORG door's RSA-4096 signing key (`[randomorg] signing_key`), written as
    /// PKCS#8 PEM (mode 0600; an existing file is never overwritten); prints its public key
    /// (SPKI PEM), which `GET /json-rpc/4/public-key` serves too. AWS-LC draws its primes
    /// from its own SP 800-90A CTR_DRBG, seeded from the OS.
    Randomorg {
        /// The file to write.
        #[arg(long)]
        out: std::path::PathBuf,
    },
}

#[derive(Debug, Args)]
struct BeaconKeygenArgs {
    /// The file to write (created with mode 0600; an existing file is never overwritten).
    #[arg(long)]
    out: std::path::PathBuf,
    /// Its `[beacon]` period_s, genesis_time and beacon_id make the chain hash printed.
    #[command(flatten)]
    drawing: Drawing,
}

/// What a command that makes keys or output draws from, read as the server reads it
/// ([`drawn_from`]).
#[derive(Debug, Args)]
struct Drawing {
    /// The generator (aliases accepted); by default the configured `drbg.default_alg`
    /// (chacha20, or aes256ctr with `drbg.approved_only`).
    #[arg(long, value_parser = parse_alg)]
    alg: Option<Algorithm>,
    /// A TOML file layered over the embedded defaults: its `[drbg]` (approved_only,
    /// default_alg, enabled) rules the generator, as the server's (and for `beacon keygen`, its
    /// `[beacon]` names the chain).
    #[arg(long, env = "DRBGD_CONFIG")]
    config: Option<std::path::PathBuf>,
    /// SP 800-90A mechanisms only (sets drbg.approved_only, as `serve --approved-only`):
    /// `generate --seed` and `beacon keygen` are then refused.
    #[arg(long)]
    approved_only: bool,
}

#[derive(Debug, Args, Default)]
struct ServeArgs {
    /// A TOML file layered over the embedded defaults.
    #[arg(long, env = "DRBGD_CONFIG")]
    config: Option<std::path::PathBuf>,
    /// API listen address (overrides server.listen).
    #[arg(long)]
    listen: Option<std::net::SocketAddr>,
    /// Admin listen address (overrides server.admin_listen).
    #[arg(long)]
    admin_listen: Option<std::net::SocketAddr>,
    /// Default algorithm (overrides drbg.default_alg).
    #[arg(long, value_parser = parse_alg)]
    default_alg: Option<Algorithm>,
    /// Shards (overrides drbg.shards).
    #[arg(long)]
    shards: Option<usize>,
    /// Serve the SP 800-90A mechanisms only (sets drbg.approved_only): the default algorithm
    /// becomes aes256ctr unless one is configured.
    #[arg(long)]
    approved_only: bool,
    /// Log format (overrides log.format).
    #[arg(long, value_enum)]
    log_format: Option<LogFormat>,
    /// Print the effective configuration as TOML-like JSON and exit.
    #[arg(long)]
    print_config: bool,
}

#[derive(Debug, Args)]
struct GenerateArgs {
    /// Algorithm (--alg: chacha20, aes256ctr, blake3, randen, aes128ctr, aes192ctr,
    /// hash_sha256, hash_sha512, hmac_sha256 or hmac_sha512), configuration, approved-only.
    #[command(flatten)]
    drawing: Drawing,
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
    /// Take the keystream paths of a CPU without AVX-512 (VAES on 256-bit registers for
    /// CTR_DRBG, or AES-NI where the CPU lacks VAES; eight-block AVX2 for ChaCha20) where this
    /// CPU can run them: to measure those paths on an AVX-512 host (scripts/cipher-bench.sh).
    /// The output is the same.
    #[arg(long, hide = true)]
    without_avx512: bool,
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
        Some(Command::Healthcheck { admin }) => healthcheck(admin),
        Some(Command::Verify(args)) => verify(&args),
        Some(Command::Keygen { what: KeygenCommand::Receipt { out, drawing } }) => {
            keygen_receipt(&out, &drawing)
        }
        Some(Command::Keygen { what: KeygenCommand::Beacon(args) }) => beacon_keygen(&args),
        Some(Command::Keygen { what: KeygenCommand::Randomorg { out } }) => keygen_randomorg(&out),
        Some(Command::Beacon(BeaconCommand::Keygen(args))) => beacon_keygen(&args),
        Some(Command::Beacon(BeaconCommand::Info { config })) => beacon_info(config),
        Some(Command::Serve(args)) => serve(&args),
        None => serve(&ServeArgs::default()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("drbgd: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn serve(args: &ServeArgs) -> anyhow::Result<()> {
    let mut overrides = serde_json::json!({});
    let mut set = |section: &str, key: &str, value: serde_json::Value| {
        overrides[section][key] = value;
    };
    if let Some(v) = args.listen {
        set("server", "listen", v.to_string().into());
    }
    if let Some(v) = args.admin_listen {
        set("server", "admin_listen", v.to_string().into());
    }
    if let Some(v) = args.default_alg {
        set("drbg", "default_alg", v.name().into());
    }
    if let Some(v) = args.shards {
        set("drbg", "shards", v.into());
    }
    if args.approved_only {
        set("drbg", "approved_only", true.into());
    }
    if let Some(v) = args.log_format {
        set("log", "format", serde_json::to_value(v)?);
    }
    let source = crate::config::ConfigSource { file: args.config.clone(), overrides };
    let settings = source.load()?;
    if args.print_config {
        println!("{}", serde_json::to_string_pretty(&settings)?);
        return Ok(());
    }
    let _log = crate::telemetry::init(&settings.log, &settings.tracing)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = runtime.block_on(async {
        // Before the (slow) build, so that a SIGHUP sent meanwhile reloads instead of killing.
        let hangups = crate::shutdown::Hangups::listen()?;
        let app = crate::app::App::build(settings).await?.with_config_source(source);
        let reloader = app.reloader();
        hangups.on_each(move || {
            reloader.reload_all();
        });
        tracing::info!(api = %app.api_addr(), admin = %app.admin_addr(), "drbgd serving");
        app.run_until_stopped(crate::shutdown::signal()).await
    });
    // The runtime's tasks end before the log guard flushes the last lines.
    drop(runtime);
    result
}

/// `GET /livez` over a plain TCP connection: exit 0 on a 200.
fn healthcheck(admin: std::net::SocketAddr) -> anyhow::Result<()> {
    use std::io::Read;
    let timeout = std::time::Duration::from_secs(2);
    let mut stream = std::net::TcpStream::connect_timeout(&admin, timeout).context("cannot connect")?;
    stream.set_read_timeout(Some(timeout))?;
    write!(stream, "GET /livez HTTP/1.1\r\nHost: {admin}\r\nConnection: close\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    if response.starts_with("HTTP/1.1 200") {
        Ok(())
    } else {
        bail!("unhealthy: {}", response.lines().next().unwrap_or("no response"))
    }
}

/// `drbgd verify FILE (--jwks FILE|URL | --key PEM)`: prints `valid` and the receipt's key id
/// and serial, or fails with the reason.
fn verify(args: &VerifyArgs) -> anyhow::Result<()> {
    use crate::receipts::{jwks, keys, verify};
    let receipt = if args.file.as_os_str() == "-" {
        let mut text = Vec::new();
        io::Read::read_to_end(&mut io::stdin().lock(), &mut text).context("cannot read standard input")?;
        text
    } else {
        std::fs::read(&args.file).with_context(|| format!("cannot read {}", args.file.display()))?
    };
    let known = match (&args.jwks, &args.key) {
        (_, Some(pem)) => {
            vec![keys::public_key_file(pem).with_context(|| format!("--key {}", pem.display()))?]
        }
        (Some(source), None) => {
            let text = read_source(source, args.ca.as_deref())?;
            let set: serde_json::Value = serde_json::from_slice(&text).context("--jwks: not JSON")?;
            jwks::parse(&set).context("--jwks")?
        }
        (None, None) => bail!("give --jwks or --key"),
    };
    let key = |id: &str| known.iter().find(|k| k.id == id).map(|k| k.key);
    // A file on the user's own machine: read whole, whatever its shape (the server's shape
    // depends on its `limits.max_count`, which this command does not know).
    let shape = crate::receipts::strict_json::Shape::ANY;
    let verdict = verify::verify_json(&receipt, shape, key).context("not a receipt")?;
    let (key_id, serial) =
        (verdict.key_id.as_deref().unwrap_or("-"), verdict.serial.as_deref().unwrap_or("-"));
    if let Some(reason) = verdict.failure {
        bail!("invalid: {} (key_id {key_id}, serial {serial})", reason.code());
    }
    let bound = random_of(&receipt)["round"].as_u64();
    match (bound, &args.beacon_info) {
        (None, None) => println!("valid: key_id {key_id}, serial {serial}"),
        (None, Some(_)) => bail!("--beacon-info: this receipt is bound to no beacon round"),
        (Some(round), None) => println!(
            "valid: key_id {key_id}, serial {serial}; bound to round {round}: give --beacon-info to check the round and the values"
        ),
        (Some(_), Some(_)) if random_of(&receipt)["endpoint"] == "/tickets" => bail!(
            "this is a bound ticket's commitment (its signature is valid): the round and the values are checked \
             on the receipt of its draw"
        ),
        (Some(_), Some(source)) => {
            let info = read_source(source, args.ca.as_deref())?;
            let c = round::check(&receipt, &info, args.chain_hash.as_deref()).context("invalid")?;
            println!(
                "valid: key_id {key_id}, serial {serial}; round {} of chain {} verified, the values are its derivation; \
                 ticket {}, caller {:?}, label {:?}, committed at {}",
                c.round, c.chain_hash, c.ticket, c.caller, c.label, c.committed_at
            );
            if args.chain_hash.is_none() {
                println!(
                    "(the chain is the one the receipt names: pin the network you trust with --chain-hash)"
                );
            }
        }
    }
    Ok(())
}

/// A receipt's `random` object (null when it is not one).
fn random_of(receipt: &[u8]) -> serde_json::Value {
    serde_json::from_slice::<serde_json::Value>(receipt).map(|r| r["random"].clone()).unwrap_or_default()
}

/// A file's bytes, or an http(s) URL's body ([`fetch::get`]).
fn read_source(source: &str, ca: Option<&std::path::Path>) -> anyhow::Result<Vec<u8>> {
    if source.starts_with("http://") || source.starts_with("https://") {
        fetch::get(source, ca)
    } else {
        std::fs::read(source).with_context(|| format!("cannot read {source}"))
    }
}

/// `drbgd keygen receipt --out FILE`: 32 bytes from `alg` (reseeded from the OS first) as an
/// Ed25519 private key in PKCS#8 PEM, written to a new file of mode 0600.
fn keygen_receipt(out: &std::path::Path, drawing: &Drawing) -> anyhow::Result<()> {
    let settings = drawing.settings()?;
    let secret = key_material(drawn_from(drawing.alg, &settings.drbg)?)?;
    let (pem, public) = crate::receipts::keys::private_pem(&secret)?;
    write_new_secret(out, pem.as_bytes())?;
    println!("key_id: {}", public.id);
    print!("{}", crate::receipts::keys::public_pem(&public.key)?);
    Ok(())
}

/// `drbgd keygen randomorg --out FILE`: an RSA-4096 key as PKCS#8 PEM in a new file of mode
/// 0600; its public key printed.
fn keygen_randomorg(out: &std::path::Path) -> anyhow::Result<()> {
    let (pem, signer) = crate::randomorg::Signer::generate()?;
    write_new_secret(out, pem.as_bytes())?;
    eprintln!("an RSA-4096 key drawn by AWS-LC's CTR_DRBG (SP 800-90A), seeded from the OS");
    print!("{}", signer.public_pem());
    Ok(())
}

/// Where `drbg.approved_only` may be set, as refusals name them.
const APPROVED_ONLY_SET_BY: &str = "[drbg] approved_only, DRBGD__DRBG__APPROVED_ONLY or --approved-only";

impl Drawing {
    /// The settings a command other than `serve` reads: the embedded defaults, `--config`, the
    /// environment (`DRBGD__*`) and `--approved-only`, as the server's.
    fn settings(&self) -> anyhow::Result<crate::config::Settings> {
        let overrides = match self.approved_only {
            true => serde_json::json!({ "drbg": { "approved_only": true } }),
            false => serde_json::json!({}),
        };
        let source = crate::config::ConfigSource { file: self.config.clone(), overrides };
        Ok(source.load()?)
    }
}

/// The generator a command that makes keys or output draws from, under the server's rules:
/// `asked` (`--alg`) if given, else `drbg.default_alg` (chacha20 by default, aes256ctr with
/// `drbg.approved_only` unless another is configured). With `drbg.approved_only`, an asked
/// algorithm that is not an SP 800-90A mechanism is refused, naming the setting; one that is
/// not in `drbg.enabled` is refused too, as the server refuses it.
fn drawn_from(asked: Option<Algorithm>, drbg: &crate::config::DrbgSettings) -> anyhow::Result<Algorithm> {
    let Some(alg) = asked else { return Ok(drbg.default_alg) };
    if drbg.approved_only && !alg.approved() {
        let approved: Vec<&str> =
            Algorithm::ALL.into_iter().filter(|a| a.approved()).map(Algorithm::name).collect();
        bail!(
            "--alg {alg} is not an SP 800-90A mechanism and drbg.approved_only is set ({APPROVED_ONLY_SET_BY}): \
             use one of {}",
            approved.join(", ")
        )
    }
    anyhow::ensure!(
        drbg.enabled.contains(&alg),
        "--alg {alg} is not in drbg.enabled, which this configuration's server serves"
    );
    Ok(alg)
}

/// 32 bytes of key material from `alg` once it passed its self-test, reseeded from the OS
/// first (prediction resistance): every `drbgd keygen`'s source. Says on standard error which
/// generator drew it.
fn key_material(alg: Algorithm) -> anyhow::Result<Zeroizing<[u8; 32]>> {
    selftest::run(alg).check().context("refusing to generate")?;
    let kind = if alg.approved() { ", an SP 800-90A mechanism" } else { "" };
    eprintln!("key material drawn from {alg}{kind}, reseeded from the OS first");
    let config = PoolConfig { shards: 1, ..PoolConfig::default() };
    let pool = Pool::new(&config, Arc::new(OsEntropy)).context("cannot seed from the OS")?;
    let mut secret = Zeroizing::new([0u8; 32]);
    pool.fill(alg, &mut secret[..], true).context("generator refused")?;
    Ok(secret)
}

/// Writes a secret key's file: a new file (an existing one is never overwritten) of mode 0600,
/// synced; removed again if it could not be written whole.
fn write_new_secret(out: &std::path::Path, contents: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file =
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(out).with_context(
            || format!("cannot create {} (an existing file is never overwritten)", out.display()),
        )?;
    let written = file.write_all(contents).and_then(|()| file.sync_all());
    drop(file);
    if let Err(error) = written {
        // The file is ours (created just now): a partial key must not be taken for a key.
        let _ = std::fs::remove_file(out);
        return Err(error).with_context(|| format!("cannot write {} (removed)", out.display()));
    }
    Ok(())
}

/// `drbgd selftest`: per algorithm one line `<alg>: ok (<n> tests)` or `<alg>: FAILED (<tests>)`
/// (scripts count the first kind), then one indented line per test, `  <test> ... ok` or
/// `  <test> ... FAILED`.
fn run_selftest() -> anyhow::Result<()> {
    let mut failed = false;
    for alg in Algorithm::ALL {
        let report = selftest::run(alg);
        if report.passed() {
            println!("{alg}: ok ({} tests)", report.outcomes.len());
        } else {
            let names: Vec<&str> = report.failures().iter().map(|f| f.what).collect();
            println!("{alg}: FAILED ({})", names.join(", "));
            failed = true;
        }
        for outcome in &report.outcomes {
            println!("  {} ... {}", outcome.name, if outcome.passed { "ok" } else { "FAILED" });
        }
    }
    if failed {
        bail!("self-test failed");
    }
    Ok(())
}

/// A source of output bytes for `generate`.
type Source = Box<dyn FnMut(&mut [u8]) -> anyhow::Result<()>>;

fn source(args: &GenerateArgs, alg: Algorithm) -> anyhow::Result<Source> {
    selftest::run(alg).check().context("refusing to generate")?;
    if let Some(seed) = &args.seed {
        let mut seed =
            data_encoding::HEXLOWER_PERMISSIVE.decode(seed.as_bytes()).context("--seed must be hex")?;
        let source = alg.with_mechanism(Seeded(&seed));
        seed.zeroize();
        return Ok(source);
    }
    let config = PoolConfig { shards: 1, ..PoolConfig::default() };
    let pool = Pool::new(&config, Arc::new(OsEntropy)).context("cannot seed from the OS")?;
    Ok(Box::new(move |buf| pool.fill(alg, buf, false).context("generator refused")))
}

/// `drbgd beacon keygen` (and `drbgd keygen beacon`): 32 bytes from the generator, as for a
/// receipt key ([`key_material`]), the IETF BLS KeyGen over them, the key checked (a
/// signature of its own verifies), written to a new file of mode 0600; the public key
/// printed, and the chain hash once `[beacon] genesis_time` is set (the chain's values checked
/// first, before a key is made). Refused with `drbg.approved_only`, whose server refuses the
/// beacon (its BLS signatures are no approved mechanism).
fn beacon_keygen(args: &BeaconKeygenArgs) -> anyhow::Result<()> {
    let settings = args.drawing.settings()?;
    anyhow::ensure!(
        !settings.drbg.approved_only,
        "refusing to make a beacon key: drbg.approved_only is set ({APPROVED_ONLY_SET_BY}), and a server \
         so configured refuses the beacon (its BLS signatures are not an approved mechanism)"
    );
    let beacon = &settings.beacon;
    if beacon.genesis_time != 0 {
        beacon.validate_chain()?;
    }
    let ikm = key_material(drawn_from(args.drawing.alg, &settings.drbg)?)?;
    let signer = Signer::from_key_material(&ikm[..IKM_LEN])?;
    crate::beacon::key::selftest(&signer)
        .map_err(|what| anyhow::anyhow!("the new key failed its check: {what}"))?;
    write_new_secret(&args.out, signer.key_file_text().as_bytes())?;
    println!(
        "wrote {} (mode 0600): keep it secret, and the same on every replica of the chain",
        args.out.display()
    );
    println!("public key: {}", const_hex::encode(signer.public_key()));
    if beacon.genesis_time == 0 {
        println!(
            "chain hash: set [beacon] genesis_time (and period_s, beacon_id) first; then `drbgd beacon info --config FILE` prints it"
        );
        return Ok(());
    }
    let chain = Chain::of_signer(&signer, beacon.chain_params());
    println!(
        "chain hash: {} (period {} s, genesis time {}, beacon id {:?})",
        chain.hash_hex(),
        beacon.period_s,
        beacon.genesis_time,
        beacon.beacon_id
    );
    println!("{}", pin_hint(&chain));
    Ok(())
}

/// `drbgd beacon info`: the configured chain's `/beacon/info` body (the chain's values checked
/// as the server checks them, the pinned hash too); on standard error, how to pin it if it is
/// not.
fn beacon_info(config: Option<std::path::PathBuf>) -> anyhow::Result<()> {
    let settings = crate::config::ConfigSource { file: config, overrides: serde_json::json!({}) }.load()?;
    let beacon = &settings.beacon;
    anyhow::ensure!(!beacon.secret_key_file.as_os_str().is_empty(), "[beacon] secret_key_file is not set");
    beacon.validate_chain()?;
    let signer = crate::app::beacon_signer(&beacon.secret_key_file)?;
    let chain = Chain::of_signer(&signer, beacon.chain_params());
    beacon.check_chain_hash(chain.hash_hex())?;
    println!("{}", String::from_utf8_lossy(chain.info_json()));
    if beacon.chain_hash.is_empty() {
        eprintln!("{}", pin_hint(&chain));
    }
    Ok(())
}

/// The line that tells how to pin `chain` to its key and schedule.
fn pin_hint(chain: &Chain) -> String {
    format!(
        "pin it: chain_hash = \"{}\" under [beacon] (start-up then refuses another genesis_time, period_s or beacon_id for this key)",
        chain.hash_hex()
    )
}

/// A mechanism instantiated with the seed as entropy input, never reseeded.
struct Seeded<'a>(&'a [u8]);

impl WithMechanism for Seeded<'_> {
    type Output = Source;

    fn run<G: Drbg>(self) -> Source {
        let mut drbg = G::instantiate(self.0, &[], b"drbgd generate --seed");
        Box::new(move |buf| {
            // An SP 800-90A mechanism (CTR_DRBG, Hash_DRBG, HMAC_DRBG) would need a reseed only
            // after 2^48 calls; a deterministic stream stops there.
            drbg.generate(buf, &[]).context("reseed interval exhausted")
        })
    }
}

fn generate(args: &GenerateArgs) -> anyhow::Result<()> {
    #[cfg(target_arch = "x86_64")]
    if args.without_avx512 {
        use crate::drbg::ctr_drbg::x86::{Keystream, Path, set_keystream};
        let path = if Path::Vaes256.supported() { Path::Vaes256 } else { Path::AesNi };
        set_keystream(Keystream::Own(path));
        crate::drbg::chacha20::avx2::set_use(crate::drbg::chacha20::avx2::Use::Always);
    }
    let drbg = args.drawing.settings()?.drbg;
    anyhow::ensure!(
        !(drbg.approved_only && args.seed.is_some()),
        "--seed is refused with drbg.approved_only ({APPROVED_ONLY_SET_BY}): a caller's seed is no approved \
         instantiation (it is for tests and experiments)"
    );
    let alg = drawn_from(args.drawing.alg, &drbg)?;
    let mut fill = source(args, alg)?;
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
    wipe(&mut buf);
    if !matches!(args.format, Format::Raw) {
        writeln!(out).ok();
    }
    out.flush().or_else(|e| if e.kind() == io::ErrorKind::BrokenPipe { Ok(()) } else { Err(e) })?;
    Ok(())
}

fn write_encoded(out: &mut impl Write, chunk: &[u8], n_bits: u64, format: Format) -> io::Result<()> {
    match format {
        Format::Raw => out.write_all(chunk),
        // The encoded output is wiped once written, as the raw bytes are.
        Format::Hex => out.write_all(Wiped(const_hex::encode(chunk).into_bytes()).as_ref()),
        Format::Base64 => out.write_all(Wiped(data_encoding::BASE64.encode(chunk).into_bytes()).as_ref()),
        Format::Bits => {
            let mut ascii = Wiped(vec![0u8; n_bits as usize]);
            bits::write_ascii_bits(chunk, n_bits as usize, &mut ascii.0);
            out.write_all(&ascii.0)
        }
    }
}
