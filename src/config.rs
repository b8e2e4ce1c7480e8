//! Typed, layered, validated settings: the embedded `config/default.toml`, then an optional
//! file, then `DRBGD__SECTION__KEY` environment variables, then CLI overrides.

pub mod beacon;
pub mod callers;
pub mod error;
pub mod quota;
pub mod results;
pub mod secret_file;
pub mod tickets;
pub mod tracing;

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::de::{self, MapAccess};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use error::ConfigError;

use crate::drbg::reseed::MIN_REKEY_AFTER_BYTES;
use crate::drbg::{Algorithm, PoolConfig, ReseedPolicy};

/// The embedded defaults; every key is documented there.
pub const DEFAULT_TOML: &str = include_str!("../config/default.toml");

/// All settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Listeners and request handling.
    pub server: ServerSettings,
    /// Request size limits.
    pub limits: Limits,
    /// Generators.
    pub drbg: DrbgSettings,
    /// API key authentication.
    pub auth: AuthSettings,
    /// TLS for the API port.
    pub tls: TlsSettings,
    /// Logging.
    pub log: LogSettings,
    /// Where callers' quota buckets are kept: this process, or a store shared by the fleet.
    pub quota: quota::QuotaStoreSettings,
    /// OpenTelemetry traces (off unless a collector is named).
    pub tracing: tracing::TracingSettings,
    /// The drand-compatible randomness beacon (off by default).
    #[serde(default)]
    pub beacon: beacon::BeaconSettings,
    /// The Pollen protocol's `POST /pollen` (off by default).
    pub pollen: PollenSettings,
    /// Vault's random endpoints (off by default).
    pub vault: VaultSettings,
    /// AWS KMS `GenerateRandom` (off by default).
    pub kms: KmsSettings,
    /// RANDOM.ORG's JSON-RPC API (off by default).
    #[serde(default)]
    pub randomorg: RandomOrgSettings,
    /// Signed receipts (off by default).
    #[serde(default)]
    pub receipts: ReceiptsSettings,
    /// Single-use tickets and the results kept for them (off by default).
    #[serde(default)]
    pub tickets: tickets::TicketsSettings,
    /// Where tickets and kept results live (SQLite by default), and how long results stay.
    #[serde(default)]
    pub results: results::ResultsSettings,
    /// Named callers: `[callers.<name>]` with credentials, policy and quota ([`callers`]).
    /// None by default.
    #[serde(default)]
    pub callers: std::collections::BTreeMap<String, callers::CallerSettings>,
}

/// `[server]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    /// API listener address.
    pub listen: SocketAddr,
    /// Admin listener address.
    pub admin_listen: SocketAddr,
    /// Open connections at once.
    pub max_connections: usize,
    /// Time to receive request headers.
    pub header_read_timeout_ms: u64,
    /// Time until response headers.
    pub request_timeout_ms: u64,
    /// Time from a request's start to the end of its body.
    pub body_read_timeout_ms: u64,
    /// Time a response body may make no progress (its client not reading) before the
    /// connection is closed.
    pub write_timeout_ms: u64,
    /// Time an HTTP/2 connection may have no open stream before it is sent GOAWAY and closed,
    /// pings or not.
    pub http2_idle_timeout_ms: u64,
    /// Streams an HTTP/2 client may have open on one connection.
    pub http2_max_concurrent_streams: u32,
    /// Requests in progress at once before shedding.
    pub concurrency_limit: usize,
    /// Drain deadline at shutdown.
    pub drain_timeout_ms: u64,
    /// Time between SIGTERM (readiness off) and the start of the drain.
    pub shutdown_delay_ms: u64,
    /// Connections older than this are closed gracefully (0 = never).
    pub max_connection_age_ms: u64,
    /// How often mounted files (TLS certificate and key, API keys file) are checked for
    /// changes (0 = never).
    pub reload_interval_ms: u64,
    /// Requests without credentials one peer (an IPv4 address, an IPv6 /64) may have in
    /// progress at once.
    pub peer_max_in_flight: u32,
    /// Public streams (health `Watch`, reflection) one peer may hold open at once, counted
    /// apart from its other requests.
    pub peer_max_streams: u32,
    /// Requests without credentials one peer may start per second, on average...
    pub peer_requests_per_second: f64,
    /// ...and at once after a pause.
    pub peer_burst: u32,
    /// Peers those limits track at once.
    pub peer_table_size: usize,
    /// Proxies (CIDR blocks or addresses) whose `X-Forwarded-For` names the client.
    pub trusted_proxies: Vec<String>,
}

impl ServerSettings {
    /// `trusted_proxies` as networks (an address is its own /32 or /128), canonical: an
    /// IPv4-mapped IPv6 entry is the IPv4 network it maps ([`crate::peer_key::canonical_net`]).
    ///
    /// # Errors
    /// An entry that is neither an address nor a CIDR block.
    pub fn trusted_proxy_nets(&self) -> Result<Vec<ipnet::IpNet>, ConfigError> {
        self.trusted_proxies
            .iter()
            .map(|s| {
                s.parse::<ipnet::IpNet>()
                    .or_else(|_| s.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                    .map(crate::peer_key::canonical_net)
                    .map_err(|_| ConfigError::Invalid {
                        key: "server.trusted_proxies",
                        reason: format!("{s:?} is neither an address nor a CIDR block"),
                    })
            })
            .collect()
    }
}

/// `[limits]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Largest n for /bits.
    pub max_bits: u64,
    /// Stream responses above this many raw bytes.
    pub stream_threshold_bytes: usize,
    /// Raw bytes per streamed chunk.
    pub stream_chunk_bytes: usize,
    /// Encoded bytes of streamed chunks alive at once, all streams together (generated and not
    /// yet written to a socket).
    pub stream_buffer_bytes: usize,
    /// Most bytes for /token and /nonce.
    pub max_token_bytes: usize,
    /// Most UUIDs or integers per request.
    pub max_count: usize,
}

/// `[drbg]`: five keys, then one `[drbg.<alg>]` table per algorithm (canonical names).
///
/// (De)serialized by hand because the per-algorithm tables sit beside the plain keys: they
/// become one map keyed by [`Algorithm`], and any other key is refused.
#[derive(Debug, Clone)]
pub struct DrbgSettings {
    /// Algorithm used when a request names none (a name or alias).
    pub default_alg: Algorithm,
    /// Algorithms callers may choose (names or aliases).
    pub enabled: Vec<Algorithm>,
    /// Shards (0 = cores).
    pub shards: usize,
    /// Personalization label.
    pub instance: String,
    /// Serve the SP 800-90A mechanisms only ([`Algorithm::approved`]): with it, `default_alg`
    /// and `enabled` left at the embedded defaults become `aes256ctr` and the approved
    /// algorithms ([`Settings::load`]), and naming any other algorithm is refused.
    pub approved_only: bool,
    /// `[drbg.<alg>]`: the reseed policy of each algorithm.
    pub policies: PerAlgorithm<ReseedSettings>,
}

/// One value per [`Algorithm`]: a map keyed by algorithm that always holds every key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerAlgorithm<T>([T; Algorithm::COUNT]);

impl<T> PerAlgorithm<T> {
    /// The value of every algorithm, from `f`.
    pub fn from_fn(mut f: impl FnMut(Algorithm) -> T) -> Self {
        PerAlgorithm(Algorithm::ALL.map(&mut f))
    }

    /// Each algorithm with its value, in [`Algorithm::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (Algorithm, &T)> {
        Algorithm::ALL.into_iter().zip(&self.0)
    }
}

impl<T> std::ops::Index<Algorithm> for PerAlgorithm<T> {
    type Output = T;

    fn index(&self, alg: Algorithm) -> &T {
        &self.0[alg.index()]
    }
}

impl<T> std::ops::IndexMut<Algorithm> for PerAlgorithm<T> {
    fn index_mut(&mut self, alg: Algorithm) -> &mut T {
        &mut self.0[alg.index()]
    }
}

const DRBG_KEYS: [&str; 5] = ["default_alg", "enabled", "shards", "instance", "approved_only"];

/// The keys `[drbg]` accepts (for error messages): its own, then one table per algorithm.
const DRBG_FIELDS: [&str; DRBG_KEYS.len() + Algorithm::COUNT] = {
    let mut fields = [""; DRBG_KEYS.len() + Algorithm::COUNT];
    let mut i = 0;
    while i < fields.len() {
        fields[i] =
            if i < DRBG_KEYS.len() { DRBG_KEYS[i] } else { Algorithm::ALL[i - DRBG_KEYS.len()].name() };
        i += 1;
    }
    fields
};

impl Serialize for DrbgSettings {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(DRBG_KEYS.len() + Algorithm::COUNT))?;
        map.serialize_entry("default_alg", &self.default_alg)?;
        map.serialize_entry("enabled", &self.enabled)?;
        map.serialize_entry("shards", &self.shards)?;
        map.serialize_entry("instance", &self.instance)?;
        map.serialize_entry("approved_only", &self.approved_only)?;
        for (alg, policy) in self.policies.iter() {
            map.serialize_entry(alg.name(), policy)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for DrbgSettings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> de::Visitor<'de> for Visitor {
            type Value = DrbgSettings;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the [drbg] table")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DrbgSettings, A::Error> {
                let (mut default_alg, mut enabled, mut shards, mut instance) = (None, None, None, None);
                let mut approved_only = None;
                let mut policies: [Option<ReseedSettings>; Algorithm::COUNT] = [None; Algorithm::COUNT];
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "default_alg" => default_alg = Some(map.next_value()?),
                        "enabled" => enabled = Some(map.next_value()?),
                        "shards" => shards = Some(map.next_value()?),
                        "instance" => instance = Some(map.next_value()?),
                        "approved_only" => approved_only = Some(map.next_value()?),
                        name => match Algorithm::from_name(name) {
                            Some(alg) => policies[alg.index()] = Some(map.next_value()?),
                            None => return Err(de::Error::unknown_field(name, &DRBG_FIELDS)),
                        },
                    }
                }
                if let Some(alg) = Algorithm::ALL.into_iter().find(|alg| policies[alg.index()].is_none()) {
                    return Err(de::Error::missing_field(alg.name()));
                }
                let missing = <A::Error as de::Error>::missing_field;
                Ok(DrbgSettings {
                    default_alg: default_alg.ok_or_else(|| missing("default_alg"))?,
                    enabled: enabled.ok_or_else(|| missing("enabled"))?,
                    shards: shards.ok_or_else(|| missing("shards"))?,
                    instance: instance.ok_or_else(|| missing("instance"))?,
                    approved_only: approved_only.ok_or_else(|| missing("approved_only"))?,
                    policies: PerAlgorithm::from_fn(|alg| {
                        policies[alg.index()].unwrap_or_else(|| unreachable!("checked above"))
                    }),
                })
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

impl DrbgSettings {
    /// The defaults `approved_only` implies, for the keys no file, environment variable or flag
    /// set (`enabled_set`, `default_alg_set`): `enabled` becomes the approved algorithms, and
    /// `default_alg` becomes `aes256ctr` (or, when `enabled` lists no `aes256ctr`, its first
    /// approved algorithm).
    fn follow_approved_only(&mut self, enabled_set: bool, default_alg_set: bool) {
        if !enabled_set {
            self.enabled = Algorithm::ALL.into_iter().filter(|alg| alg.approved()).collect();
        }
        if !default_alg_set {
            self.default_alg = if self.enabled.contains(&Algorithm::Aes256Ctr) {
                Algorithm::Aes256Ctr
            } else {
                self.enabled.iter().copied().find(|alg| alg.approved()).unwrap_or(Algorithm::Aes256Ctr)
            };
        }
    }
}

/// A reseed policy section.
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReseedSettings {
    /// Base byte threshold.
    pub rekey_after_bytes: u64,
    /// Key age limit.
    pub rekey_after_seconds: u64,
    /// Randomized threshold.
    pub jitter: bool,
}

/// `[auth]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSettings {
    /// Require bearer keys.
    pub enabled: bool,
    /// SHA-256 hex digests of accepted keys.
    pub api_key_sha256: Vec<String>,
    /// File of digests, one per line. In TOML (which has no null) the empty string means
    /// none, and none is written back as `""`.
    #[serde(deserialize_with = "empty_is_none", serialize_with = "none_is_empty")]
    pub api_keys_file: Option<PathBuf>,
}

fn empty_is_none<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<PathBuf>, D::Error> {
    let path = PathBuf::deserialize(deserializer)?;
    Ok((!path.as_os_str().is_empty()).then_some(path))
}

fn none_is_empty<S: Serializer>(path: &Option<PathBuf>, serializer: S) -> Result<S::Ok, S::Error> {
    path.as_deref().unwrap_or(Path::new("")).serialize(serializer)
}

/// `[tls]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TlsSettings {
    /// Serve TLS.
    pub enabled: bool,
    /// PEM certificate chain.
    pub cert_file: String,
    /// PEM private key.
    pub key_file: String,
    /// Client certificates (mTLS): `off`, `optional` (verified when presented) or `required`.
    pub client_auth: ClientAuth,
    /// PEM bundle of the CAs that client certificates must chain to.
    pub client_ca_file: String,
}

/// `tls.client_auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientAuth {
    /// No client certificates asked for.
    Off,
    /// Asked for; a presented one must verify, and its identity names the caller.
    Optional,
    /// Every connection must present a certificate that verifies.
    Required,
}

/// `[pollen]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PollenSettings {
    /// Serve `POST /pollen` (Ubuntu's `pollinate` seeds booting VMs from it).
    pub enabled: bool,
    /// With auth on, serve `/pollen` to requests without credentials as the `anonymous` caller
    /// (whose `[callers.anonymous]` table sets its policy and quota): `pollinate` sends none.
    #[serde(default)]
    pub anonymous: bool,
}

/// `[vault]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VaultSettings {
    /// Serve `POST`/`PUT /v1/sys/tools/random` and `/v1/transit/random` (hvac, the Vault CLI).
    pub enabled: bool,
}

/// `[kms]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KmsSettings {
    /// Serve `POST /` with `X-Amz-Target: TrentService.GenerateRandom` (every AWS SDK).
    pub enabled: bool,
    /// The regions a request's signature may be scoped to (the client's configured region).
    pub regions: Vec<String>,
    /// The hosts (`host[:port]`, as clients sign their endpoint URL's, the scheme's default
    /// port left out) a request's signature may name; empty: any, so a request signed for
    /// another endpoint with the same key and region verifies here too.
    #[serde(default)]
    pub hosts: Vec<String>,
}

/// `[randomorg]`: RANDOM.ORG's JSON-RPC API, Release 4 (`POST /json-rpc/4/invoke`; see
/// docs/drop-in.md).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RandomOrgSettings {
    /// Serve it.
    #[serde(default)]
    pub enabled: bool,
    /// The RSA key signing the Signed API's results (PKCS#8 PEM, `drbgd keygen randomorg`);
    /// none: the Signed API answers 404 for want of it.
    #[serde(default)]
    pub signing_key: Option<PathBuf>,
    /// Requests each caller may make on this door per UTC day, on this replica (0: no daily
    /// allowance; the caller's quota still applies).
    #[serde(default)]
    pub requests_per_day: u64,
    /// Bits (as RANDOM.ORG counts them: `bitsUsed`) each caller may draw on this door per UTC
    /// day, on this replica (0: none).
    #[serde(default)]
    pub bits_per_day: u64,
    /// Callers' own daily allowances in place of the two above: `[randomorg.callers.<name>]`.
    #[serde(default)]
    pub callers: std::collections::BTreeMap<String, Allowance>,
}

/// A caller's daily allowances on the RANDOM.ORG door (0: none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Allowance {
    /// Requests per UTC day.
    #[serde(default)]
    pub requests_per_day: u64,
    /// Bits (`bitsUsed`) per UTC day.
    #[serde(default)]
    pub bits_per_day: u64,
}

/// `[receipts]`: Ed25519-signed receipts of random output (`receipt=true`), the keys that sign
/// and verify them (`GET /keys`, `POST /verify`). See docs/verifiable.md.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiptsSettings {
    /// Answer `receipt=true` with a signed receipt; off: such requests are refused (400
    /// `receipts_disabled`). Needs a key in `signing_keys`.
    pub enabled: bool,
    /// PKCS#8 PEM files of Ed25519 keys (paths as given, relative to the working directory):
    /// the first signs, every one verifies (`GET /keys`), so keys rotate. A key after the first
    /// may be a public key alone (`BEGIN PUBLIC KEY`). Reloaded when the files change and on
    /// SIGHUP.
    pub signing_keys: Vec<String>,
    /// Most raw output bytes one receipt covers (a larger request with `receipt=true` is refused,
    /// 400 `receipt_too_large`); at most [`MAX_RECEIPT_OUTPUT_BYTES`].
    pub max_output_bytes: u64,
}

/// The largest `receipts.max_output_bytes`: 256 KiB. A receipt is held whole (never streamed)
/// with its output written out up to 8 times (as bits), and `POST /verify`, a public route,
/// reads one of that size: at this bound a body of 2 MiB + 16 KiB, and a gRPC reply (output,
/// and the receipt carrying it again) well within a default client's 4 MiB.
pub const MAX_RECEIPT_OUTPUT_BYTES: u64 = 256 * 1024;

impl Default for ReceiptsSettings {
    /// Off, no keys, the stream threshold's default (64 KiB) as the largest output.
    fn default() -> Self {
        ReceiptsSettings { enabled: false, signing_keys: Vec::new(), max_output_bytes: 65_536 }
    }
}

/// `[log]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LogSettings {
    /// `text` or `json`.
    pub format: LogFormat,
    /// tracing filter.
    pub level: String,
    /// One JSON audit line per API request (target `drbgd::audit`).
    pub audit: bool,
}

/// `log.format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, for log pipelines.
    Json,
}

/// Where the settings came from, to load them again on reload: the file and the CLI
/// overrides (the environment is read again too).
#[derive(Debug, Clone, Default)]
pub struct ConfigSource {
    /// The `--config` file.
    pub file: Option<PathBuf>,
    /// CLI flags as a nested map.
    pub overrides: serde_json::Value,
}

impl ConfigSource {
    /// Loads and validates the settings.
    ///
    /// # Errors
    /// See [`Settings::load`].
    pub fn load(&self) -> Result<Settings, ConfigError> {
        let overrides = if self.overrides.is_null() { serde_json::json!({}) } else { self.overrides.clone() };
        Settings::load(self.file.as_deref(), overrides)
    }
}

/// The deepest nesting of arrays and inline tables a configuration may have (drbgd's own is 2).
pub const MAX_NESTING: usize = 32;

/// How deep `text` nests `[`/`{` outside strings and comments (TOML's, and figment's value
/// syntax for environment values; a table header counts as a level, which is harmless).
fn nesting(text: &str) -> usize {
    let (mut depth, mut deepest, mut quote, mut escaped, mut comment) = (0usize, 0usize, None, false, false);
    for c in text.chars() {
        match (quote, c) {
            _ if comment => comment = c != '\n',
            (Some('"'), '\\') => escaped = !escaped,
            (Some(q), _) if c == q && !escaped => quote = None,
            (Some(_), _) => escaped = false,
            (None, '"' | '\'') => quote = Some(c),
            (None, '#') => comment = true,
            (None, '[' | '{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (None, ']' | '}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The first `DRBGD__*` environment variable nested too deep to parse safely.
fn too_deep_environment() -> Option<String> {
    std::env::vars_os().find_map(|(key, value)| {
        let key = key.to_str()?;
        let deep = value.to_str().is_some_and(|v| nesting(v) > MAX_NESTING);
        (key.starts_with("DRBGD__") && deep).then(|| key.to_string())
    })
}

/// Whether a `DRBGD__*` environment value is one figment 0.10.19 panics on: its string
/// unescaping indexes bytes by character positions, so a backslash after non-ASCII text can
/// cut a character in two. Such a value (or one that is not Unicode) is refused instead.
fn unparsable_environment() -> bool {
    std::env::vars_os().any(|(key, value)| {
        key.to_str().is_some_and(|k| k.starts_with("DRBGD__"))
            && value.to_str().is_none_or(|v| !v.is_ascii() && v.contains('\\'))
    })
}

/// A [`ConfigError::Invalid`] for `key`.
fn invalid(key: &'static str, reason: &str) -> Result<(), ConfigError> {
    Err(ConfigError::Invalid { key, reason: reason.to_string() })
}

/// Whether `entry` is a `[kms] hosts` entry: `host[:port]` as an AWS client signs its
/// endpoint's (botocore's signer, `aws-sigv4`'s): a DNS name or IPv4 address, or an IPv6 one in
/// brackets, and an optional port; no scheme, user, path or whitespace.
fn host_entry(entry: &str) -> bool {
    let port = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok();
    if let Some(v6) = entry.strip_prefix('[') {
        let Some((address, rest)) = v6.split_once(']') else { return false };
        return address.parse::<std::net::Ipv6Addr>().is_ok()
            && (rest.is_empty() || rest.strip_prefix(':').is_some_and(port));
    }
    let (host, with_port) = match entry.split_once(':') {
        Some((host, p)) => (host, Some(p)),
        None => (entry, None),
    };
    let name_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    let label = |l: &str| !l.is_empty() && l.bytes().all(name_byte);
    host.split('.').all(label) && with_port.is_none_or(port)
}

/// `figment` with the layers over the embedded defaults merged in, in order: `file`, the
/// `DRBGD__*` environment, `overrides`.
fn layered(mut figment: Figment, file: Option<&Path>, overrides: impl Serialize) -> Figment {
    if let Some(file) = file {
        figment = figment.merge(Toml::file_exact(file));
    }
    figment = figment.merge(Env::prefixed("DRBGD__").split("__").lowercase(true));
    figment.merge(Serialized::defaults(overrides))
}

impl Settings {
    /// Loads the layers: defaults, `file`, environment, then `overrides` (CLI flags as a
    /// nested map), and validates the result. With `drbg.approved_only`, `drbg.enabled` and
    /// `drbg.default_alg` that no layer but the embedded defaults sets follow it
    /// ([`DrbgSettings::follow_approved_only`]).
    ///
    /// # Errors
    /// [`ConfigError`] naming the offending key.
    pub fn load(file: Option<&Path>, overrides: impl Serialize) -> Result<Self, ConfigError> {
        // Values figment's environment parser would panic on (see `ConfigError::Unparsable`,
        // found by the `config` fuzz target) are refused before it sees them; a panic in the
        // parsers all the same is an error of the configuration, not the end of the process,
        // nor of the reload task that calls this.
        if unparsable_environment() {
            return Err(ConfigError::Unparsable);
        }
        if let Some(name) = too_deep_environment() {
            return Err(ConfigError::TooDeep(name));
        }
        if let Some(file) = file
            && let Ok(text) = std::fs::read_to_string(file)
            && nesting(&text) > MAX_NESTING
        {
            return Err(ConfigError::TooDeep(file.display().to_string()));
        }
        let extracted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(
            || -> Result<Settings, Box<figment::Error>> {
                // The same layers without the embedded defaults: a key present here was set by
                // the file, the environment or a flag. (The embedded defaults name every
                // algorithm, so the merged values cannot tell `approved_only` alone from
                // `approved_only` with `enabled` or `default_alg` set to those same values.)
                let explicit = layered(Figment::new(), file, &overrides);
                let mut settings: Settings =
                    layered(Figment::from(Toml::string(DEFAULT_TOML)), file, overrides).extract()?;
                if settings.drbg.approved_only {
                    settings.drbg.follow_approved_only(
                        explicit.contains("drbg.enabled"),
                        explicit.contains("drbg.default_alg"),
                    );
                }
                Ok(settings)
            },
        ));
        let settings = extracted.map_err(|_| ConfigError::Unparsable)?.map_err(ConfigError::Load)?;
        settings.validate()?;
        Ok(settings)
    }

    /// The embedded defaults only.
    ///
    /// # Panics
    /// Never for the shipped default file (a unit test loads it).
    pub fn defaults() -> Self {
        let settings: Settings =
            Figment::from(Toml::string(DEFAULT_TOML)).extract().expect("embedded defaults");
        settings
    }

    /// Checks ranges and cross-field rules, section by section.
    ///
    /// # Errors
    /// The first invalid key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_limits()?;
        self.validate_server()?;
        self.validate_drbg()?;
        self.validate_front_ends()?;
        self.validate_receipts()?;
        self.tickets.validate(self.receipts.enabled, self.auth.enabled)?;
        self.results.validate(self.tickets.enabled)?;
        self.tracing.validate()?;
        self.beacon.validate()?;
        if self.beacon.enabled
            && self.beacon.source == beacon::BeaconSource::Drand
            && self.beacon.upstream_timeout_ms >= self.server.request_timeout_ms
        {
            return invalid(
                "beacon.upstream_timeout_ms",
                "must be below server.request_timeout_ms (an old round is fetched within a request)",
            );
        }
        self.quota.validate()
    }

    /// `[limits]`: sizes and counts.
    fn validate_limits(&self) -> Result<(), ConfigError> {
        let l = &self.limits;
        if l.max_bits == 0 || l.max_bits > 1 << 40 {
            return invalid("limits.max_bits", "must be in 1..=2^40");
        }
        if l.stream_chunk_bytes == 0
            || !l.stream_chunk_bytes.is_multiple_of(3)
            || l.stream_chunk_bytes > 1 << 22
        {
            return invalid("limits.stream_chunk_bytes", "must be a multiple of 3 in 3..=4 MiB");
        }
        if l.max_token_bytes == 0 || l.max_count == 0 {
            return invalid("limits.max_count", "limits must be positive");
        }
        Ok(())
    }

    /// `[server]`: the caps, timeouts and per-peer limits, the stream buffer against the chunk
    /// size, the listeners.
    fn validate_server(&self) -> Result<(), ConfigError> {
        let (s, l) = (&self.server, &self.limits);
        if s.concurrency_limit == 0 || s.max_connections == 0 {
            return invalid("server.concurrency_limit", "must be positive");
        }
        for (name, ms) in [
            ("server.header_read_timeout_ms", s.header_read_timeout_ms),
            ("server.body_read_timeout_ms", s.body_read_timeout_ms),
            ("server.write_timeout_ms", s.write_timeout_ms),
            ("server.http2_idle_timeout_ms", s.http2_idle_timeout_ms),
        ] {
            if !(1..=86_400_000).contains(&ms) {
                return invalid(name, "must be in 1..=86400000 (a day)");
            }
        }
        if s.peer_max_in_flight == 0 || s.peer_max_streams == 0 || s.peer_burst == 0 || s.peer_table_size == 0
        {
            return invalid("server.peer_max_in_flight", "the per-peer limits must be positive");
        }
        if !(s.peer_requests_per_second.is_finite() && s.peer_requests_per_second > 0.0) {
            return invalid("server.peer_requests_per_second", "must be a positive number");
        }
        s.trusted_proxy_nets()?;
        if l.stream_buffer_bytes < l.stream_chunk_bytes * 4 {
            return invalid("limits.stream_buffer_bytes", "must be at least 4 x limits.stream_chunk_bytes");
        }
        if s.http2_max_concurrent_streams == 0 {
            return invalid("server.http2_max_concurrent_streams", "must be positive");
        }
        if s.listen == s.admin_listen && s.listen.port() != 0 {
            return invalid("server.admin_listen", "must differ from server.listen");
        }
        Ok(())
    }

    /// `[drbg]`: the algorithms served (SP 800-90A ones only with `approved_only`, which the
    /// beacon's signatures are not) and each one's reseed policy.
    fn validate_drbg(&self) -> Result<(), ConfigError> {
        let d = &self.drbg;
        if d.enabled.is_empty() {
            return invalid("drbg.enabled", "at least one algorithm must be enabled");
        }
        if d.approved_only {
            let not_approved =
                |alg: Algorithm| format!("{alg} is not an SP 800-90A mechanism (drbg.approved_only)");
            if let Some(alg) = d.enabled.iter().find(|alg| !alg.approved()) {
                return invalid("drbg.enabled", &not_approved(*alg));
            }
            if !d.default_alg.approved() {
                return invalid("drbg.default_alg", &not_approved(d.default_alg));
            }
            // A followed network's rounds are its own; drbgd only verifies and serves them.
            if self.beacon.enabled && self.beacon.source == beacon::BeaconSource::Key {
                return invalid(
                    "beacon.enabled",
                    "the beacon's BLS signatures are not an approved mechanism (drbg.approved_only)",
                );
            }
        }
        if !d.enabled.contains(&d.default_alg) {
            return invalid("drbg.default_alg", "must be one of drbg.enabled");
        }
        for (alg, p) in d.policies.iter() {
            if p.rekey_after_bytes < MIN_REKEY_AFTER_BYTES || p.rekey_after_bytes > 1 << 40 {
                return invalid("drbg.<alg>.rekey_after_bytes", &format!("{alg}: must be in 4096..=2^40"));
            }
            if p.rekey_after_seconds == 0 {
                return invalid("drbg.<alg>.rekey_after_seconds", &format!("{alg}: must be positive"));
            }
        }
        Ok(())
    }

    /// TLS, and the drop-in front-ends (Pollen, AWS KMS).
    fn validate_front_ends(&self) -> Result<(), ConfigError> {
        if self.tls.enabled && (self.tls.cert_file.is_empty() || self.tls.key_file.is_empty()) {
            return invalid("tls.cert_file", "TLS needs cert_file and key_file");
        }
        if self.tls.client_auth != ClientAuth::Off
            && (!self.tls.enabled || self.tls.client_ca_file.is_empty())
        {
            return invalid("tls.client_auth", "client certificates need tls.enabled and tls.client_ca_file");
        }
        if self.pollen.enabled && self.limits.max_token_bytes < 64 {
            return invalid(
                "limits.max_token_bytes",
                "must be at least 64 while pollen.enabled (a Pollen answer is 64 bytes)",
            );
        }
        let region_name =
            |r: &String| !r.is_empty() && r.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        let one_or_two = (1..=2).contains(&self.kms.regions.len()) || !self.kms.enabled;
        if !one_or_two || !self.kms.regions.iter().all(region_name) {
            return invalid(
                "kms.regions",
                "one or two region names (as us-east-1) while kms.enabled: a signing key is kept per day and region",
            );
        }
        if let Some(name) = self.randomorg.callers.keys().find(|n| !self.callers.contains_key(*n)) {
            return invalid("randomorg.callers", &format!("{name:?} is no caller of [callers]"));
        }
        if let Some(bad) = self.kms.hosts.iter().find(|h| !host_entry(h)) {
            return invalid(
                "kms.hosts",
                &format!("{bad:?} is not host[:port] (no scheme, path or spaces), as clients sign it"),
            );
        }
        Ok(())
    }

    /// `[receipts]`, when they are on.
    fn validate_receipts(&self) -> Result<(), ConfigError> {
        let r = &self.receipts;
        // Checked with receipts on only: a server that never turns them on keeps any
        // stream threshold.
        if r.enabled && !(1..=MAX_RECEIPT_OUTPUT_BYTES).contains(&r.max_output_bytes) {
            return invalid("receipts.max_output_bytes", "must be in 1..=262144 (256 KiB)");
        }
        if r.enabled && r.max_output_bytes > self.limits.stream_threshold_bytes as u64 {
            // Larger outputs are streamed under the stream memory budget; a receipt is whole.
            return invalid(
                "receipts.max_output_bytes",
                "must be at most limits.stream_threshold_bytes (a receipt is never streamed)",
            );
        }
        if r.enabled && r.signing_keys.is_empty() {
            return invalid("receipts.signing_keys", "receipts.enabled needs a key file to sign with");
        }
        Ok(())
    }

    /// The pool configuration these settings describe.
    pub fn pool_config(&self) -> PoolConfig {
        let policy = |p: &ReseedSettings| ReseedPolicy {
            rekey_after_bytes: p.rekey_after_bytes,
            rekey_after: Duration::from_secs(p.rekey_after_seconds),
            jitter: p.jitter,
        };
        let d = &self.drbg;
        PoolConfig {
            shards: if d.shards == 0 { PoolConfig::default().shards } else { d.shards },
            policies: Algorithm::ALL.map(|alg| policy(self.policy(alg))),
            instance: d.instance.clone(),
            // Set by the app from the start-up self-tests, which no setting can skip.
            withheld: Vec::new(),
        }
    }

    /// The reseed policy settings of `alg`.
    pub fn policy(&self, alg: Algorithm) -> &ReseedSettings {
        &self.drbg.policies[alg]
    }

    /// Whether `route` is served: every random-output route, and each drop-in front-end's when
    /// its section enables it.
    pub fn serves(&self, route: crate::route::Route) -> bool {
        use crate::route::Route;
        match route {
            Route::Pollen => self.pollen.enabled,
            Route::Vault => self.vault.enabled,
            Route::Kms => self.kms.enabled,
            Route::RandomOrg => self.randomorg.enabled,
            Route::Tickets => self.tickets.enabled,
            _ => true,
        }
    }

    /// The file of API key digests, if configured (`auth.api_keys_file`).
    pub fn api_keys_file(&self) -> Option<PathBuf> {
        self.auth.api_keys_file.clone()
    }
}

#[cfg(test)]
#[allow(clippy::result_large_err)] // figment::Jail closures return figment::Error
mod tests {
    use super::*;

    /// Found by the `config` fuzz target: figment's environment parser panics on a value with
    /// a non-ASCII character before a backslash; that is a configuration error, not a crash.
    #[test]
    fn an_environment_value_figment_cannot_parse_is_an_error() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("DRBGD__LIMITS__MAX_BITS", "\"\u{e9}\\n\"");
            let error = Settings::load(None, serde_json::json!({})).unwrap_err();
            assert!(matches!(error, ConfigError::Unparsable), "{error}");
            Ok(())
        });
    }

    /// Found by the `config` fuzz target: a file or environment value of a few thousand `[`
    /// overflowed the parser's stack (the process died of SIGSEGV).
    #[test]
    fn arrays_nested_too_deep_are_an_error_not_a_crash() {
        figment::Jail::expect_with(|jail| {
            let deep = format!("x = {}{}", "[".repeat(5000), "]".repeat(5000));
            jail.create_file("deep.toml", &deep)?;
            let error = Settings::load(Some("deep.toml".as_ref()), serde_json::json!({})).unwrap_err();
            assert!(matches!(error, ConfigError::TooDeep(ref f) if f == "deep.toml"), "{error}");
            jail.set_env("DRBGD__LIMITS__MAX_BITS", "[".repeat(5000));
            let error = Settings::load(None, serde_json::json!({})).unwrap_err();
            assert!(
                matches!(error, ConfigError::TooDeep(ref k) if k == "DRBGD__LIMITS__MAX_BITS"),
                "{error}"
            );
            Ok(())
        });
        assert_eq!(nesting("a = [[1], {b = [2]}] # [[[[\ns = \"[[[[\""), 3);
        assert_eq!(nesting("[server]\nx = '[[[['"), 1);
    }

    fn load_error(file: &str) -> String {
        let mut message = String::new();
        figment::Jail::expect_with(|jail| {
            jail.create_file("drbgd.toml", file)?;
            message =
                Settings::load(Some(Path::new("drbgd.toml")), serde_json::json!({})).unwrap_err().to_string();
            Ok(())
        });
        message
    }

    #[test]
    fn embedded_defaults_are_valid() {
        let s = Settings::defaults();
        s.validate().unwrap();
        assert_eq!(s.server.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(s.server.admin_listen.to_string(), "127.0.0.1:8081");
        assert_eq!(s.limits.max_bits, 100_000_000);
        assert_eq!(s.drbg.default_alg, Algorithm::ChaCha20);
        assert_eq!(s.drbg.enabled, Algorithm::ALL);
        assert!(!s.drbg.approved_only);
        assert_eq!(s.log.format, LogFormat::Text);
        assert_eq!(s.auth.api_keys_file, None);
        for alg in Algorithm::ALL {
            assert_eq!(s.policy(alg).rekey_after_bytes, crate::drbg::reseed::DEFAULT_REKEY_AFTER_BYTES);
        }
    }

    #[test]
    fn layers_override_in_order() {
        figment::Jail::expect_with(|jail| {
            jail.create_file(
                "drbgd.toml",
                "[limits]\nmax_bits = 5000\n[drbg]\nshards = 3\nenabled = [\"AES\", \"blake3-xof\"]\n\
                 default_alg = \"aes\"\n[drbg.blake3]\nrekey_after_seconds = 7\n\
                 [auth]\napi_keys_file = \"/run/keys\"\n",
            )?;
            jail.set_env("DRBGD__DRBG__SHARDS", "4");
            jail.set_env("DRBGD__DRBG__RANDEN__JITTER", "false");
            jail.set_env("DRBGD__LOG__FORMAT", "json");
            let overrides = serde_json::json!({ "drbg": { "default_alg": "blake3" } });
            let s = Settings::load(Some(Path::new("drbgd.toml")), overrides).unwrap();
            assert_eq!(s.limits.max_bits, 5000);
            assert_eq!(s.drbg.shards, 4);
            assert_eq!(s.drbg.enabled, [Algorithm::Aes256Ctr, Algorithm::Blake3]);
            assert_eq!(s.drbg.default_alg, Algorithm::Blake3);
            assert_eq!(s.policy(Algorithm::Blake3).rekey_after_seconds, 7);
            assert_eq!(s.policy(Algorithm::Blake3).rekey_after_bytes, 1 << 20);
            assert!(!s.policy(Algorithm::Randen).jitter);
            assert!(s.policy(Algorithm::ChaCha20).jitter);
            assert_eq!(s.log.format, LogFormat::Json);
            assert_eq!(s.api_keys_file(), Some(PathBuf::from("/run/keys")));
            Ok(())
        });
    }

    /// `drbg.approved_only` alone is enough: the embedded `default_alg` and `enabled` follow it;
    /// a non-approved algorithm that a flag, file or environment variable names is refused.
    #[test]
    fn approved_only_sets_its_defaults_and_refuses_what_is_not_approved() {
        let approved: Vec<Algorithm> = Algorithm::ALL.into_iter().filter(|alg| alg.approved()).collect();
        assert_eq!(approved.len(), 7);
        figment::Jail::expect_with(|jail| {
            let load = |drbg: serde_json::Value| Settings::load(None, serde_json::json!({ "drbg": drbg }));
            let s = load(serde_json::json!({ "approved_only": true })).unwrap();
            assert!(s.drbg.approved_only);
            assert_eq!(s.drbg.default_alg, Algorithm::Aes256Ctr);
            assert_eq!(s.drbg.enabled, approved);
            let s = load(serde_json::json!({ "approved_only": false })).unwrap();
            assert_eq!((s.drbg.default_alg, s.drbg.enabled.len()), (Algorithm::ChaCha20, Algorithm::COUNT));

            let e = load(serde_json::json!({ "approved_only": true, "enabled": ["chacha20", "aes256ctr"] }))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("drbg.enabled") && e.contains("chacha20 is not an SP 800-90A mechanism"),
                "{e}"
            );
            let e = load(serde_json::json!({ "approved_only": true, "default_alg": "chacha20" }))
                .unwrap_err()
                .to_string();
            assert!(e.contains("drbg.default_alg") && e.contains("chacha20"), "{e}");
            let named = serde_json::json!({
                "approved_only": true, "enabled": ["aes256ctr"], "default_alg": "randen"
            });
            let e = load(named).unwrap_err().to_string();
            assert!(e.contains("drbg.default_alg") && e.contains("randen"), "{e}");
            let s = load(serde_json::json!({ "approved_only": true, "enabled": ["blake3", "hash_sha512"] }));
            assert!(s.unwrap_err().to_string().contains("drbg.enabled: blake3"));
            // `enabled` set without aes256ctr: the default is its first approved algorithm.
            let s = load(serde_json::json!({ "approved_only": true, "enabled": ["hash_sha512"] })).unwrap();
            assert_eq!(s.drbg.default_alg, Algorithm::HashSha512);

            // From a file and the environment alike; an approved choice is kept.
            jail.create_file("drbgd.toml", "[drbg]\napproved_only = true\ndefault_alg = \"hmac_sha256\"\n")?;
            let s = Settings::load(Some(Path::new("drbgd.toml")), serde_json::json!({})).unwrap();
            assert_eq!((s.drbg.default_alg, &s.drbg.enabled), (Algorithm::HmacSha256, &approved));
            jail.set_env("DRBGD__DRBG__ENABLED", "[\"hash_sha512\", \"hmac_sha256\"]");
            let s = Settings::load(Some(Path::new("drbgd.toml")), serde_json::json!({})).unwrap();
            assert_eq!(s.drbg.enabled, [Algorithm::HashSha512, Algorithm::HmacSha256]);
            jail.set_env("DRBGD__DRBG__ENABLED", "[\"chacha20\", \"aes256ctr\"]");
            let e =
                Settings::load(Some(Path::new("drbgd.toml")), serde_json::json!({})).unwrap_err().to_string();
            assert!(e.contains("drbg.enabled") && e.contains("chacha20"), "{e}");
            Ok(())
        });
    }

    #[test]
    fn printed_settings_load_again() {
        let mut s = Settings::defaults();
        s.drbg.policies[Algorithm::Aes192Ctr].rekey_after_seconds = 9;
        s.drbg.default_alg = Algorithm::Randen;
        let printed = serde_json::to_value(&s).unwrap();
        assert_eq!(printed["drbg"]["default_alg"], "randen");
        assert_eq!(printed["drbg"]["aes192ctr"]["rekey_after_seconds"], 9);
        assert_eq!(printed["auth"]["api_keys_file"], "");
        assert_eq!(printed["log"]["format"], "text");
        let again = Settings::load(None, printed).unwrap();
        assert_eq!(again.policy(Algorithm::Aes192Ctr).rekey_after_seconds, 9);
        assert_eq!(again.drbg.default_alg, Algorithm::Randen);
        assert_eq!(again.auth.api_keys_file, None);
    }

    #[test]
    fn invalid_values_name_their_key() {
        let mut s = Settings::defaults();
        s.kms.enabled = true;
        s.kms.regions = Vec::new();
        assert!(s.validate().unwrap_err().to_string().contains("kms.regions"));
        s.kms.regions = vec!["us-east-1".into(), "eu-west-3".into(), "ap-south-1".into()];
        assert!(s.validate().unwrap_err().to_string().contains("kms.regions"), "a key per region is kept");
        s.kms.regions = vec!["us-east-1".into()];
        assert!(s.validate().is_ok());
        let hosts = ["kms.example", "127.0.0.1:8080", "[::1]:8443", "[::1]", "KMS.Example", "drbgd:8080"];
        s.kms.hosts = hosts.map(String::from).into();
        assert!(s.validate().is_ok());
        let refused = ["http://kms.example", "kms.example/", "kms example", "", "kms:", "kms.example:99999"];
        for bad in refused {
            s.kms.hosts = vec!["kms.example".into(), bad.into()];
            let e = s.validate().unwrap_err().to_string();
            assert!(e.contains("kms.hosts"), "{bad}: {e}");
        }
        for bad in ["[::1", "::1", "[not-v6]:80", "user@kms.example", " kms.example", "kms.example:+80"] {
            assert!(!host_entry(bad), "{bad}");
        }
        let mut s = Settings::defaults();
        s.drbg.policies[Algorithm::ChaCha20].rekey_after_bytes = 10;
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("rekey_after_bytes") && e.contains("chacha20"), "{e}");
        let mut s = Settings::defaults();
        s.drbg.enabled = vec![Algorithm::Blake3];
        assert!(s.validate().unwrap_err().to_string().contains("drbg.default_alg"));
        let mut s = Settings::defaults();
        s.drbg.enabled.clear();
        assert!(s.validate().unwrap_err().to_string().contains("drbg.enabled"));
        let mut s = Settings::defaults();
        s.limits.stream_chunk_bytes = 65536;
        assert!(s.validate().is_err());
    }

    /// `[beacon]` on needs a key file and a genesis time, and is refused with
    /// `drbg.approved_only` (BLS is not an approved mechanism), however the mode is set and
    /// before anything else of the section is looked at; off, its values are not checked.
    #[test]
    fn the_beacon_needs_its_key_and_genesis_and_no_approved_only() {
        let mut s = Settings::defaults();
        assert!(!s.beacon.enabled);
        assert_eq!((s.beacon.period_s, s.beacon.genesis_time), (3, 0));
        s.beacon.period_s = 0;
        s.validate().unwrap();
        s.beacon.period_s = 3;
        s.beacon.enabled = true;
        let mut approved = s.clone();
        approved.drbg.approved_only = true;
        approved.drbg.follow_approved_only(false, false);
        let e = approved.validate().unwrap_err().to_string();
        assert!(e.contains("beacon.enabled") && e.contains("approved_only"), "{e}");
        assert!(s.validate().unwrap_err().to_string().contains("beacon.secret_key_file"));
        s.beacon.secret_key_file = "config/examples/beacon-example.key".into();
        assert!(s.validate().unwrap_err().to_string().contains("beacon.genesis_time"));
        s.beacon.genesis_time = 1_767_225_600;
        s.validate().unwrap();
        s.beacon.period_s = 0;
        assert!(s.validate().unwrap_err().to_string().contains("beacon.period_s"));
        s.beacon.period_s = 3;
        let long = "x".repeat(65);
        for bad in ["", "a/b", "quick net", long.as_str()] {
            s.beacon.beacon_id = bad.to_string();
            assert!(s.validate().unwrap_err().to_string().contains("beacon.beacon_id"), "{bad:?}");
        }
        s.beacon.beacon_id = "quicknet".into();
        // Seconds, not milliseconds.
        s.beacon.genesis_time = 1_767_225_600_000;
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("beacon.genesis_time") && e.contains("Unix seconds"), "{e}");
        s.beacon.genesis_time = 1_767_225_600;
        // A pinned chain hash is 64 hex digits, either case; the key must then give it.
        s.beacon.chain_hash = "8d61".into();
        assert!(s.validate().unwrap_err().to_string().contains("beacon.chain_hash"));
        s.beacon.chain_hash = "AB".repeat(32);
        s.validate().unwrap();
        s.beacon.check_chain_hash(&"ab".repeat(32)).unwrap();
        let e = s.beacon.check_chain_hash(&"cd".repeat(32)).unwrap_err().to_string();
        assert!(
            e.contains("beacon.chain_hash") && e.contains(&"AB".repeat(32)) && e.contains(&"cd".repeat(32))
        );
        s.beacon.chain_hash.clear();
        s.beacon.check_chain_hash(&"cd".repeat(32)).unwrap();
        // Off, the section is not checked, but the chain's values still are when asked (the CLI).
        s.beacon.enabled = false;
        s.beacon.period_s = 0;
        s.validate().unwrap();
        assert!(s.beacon.validate_chain().unwrap_err().to_string().contains("beacon.period_s"));
        s.beacon.period_s = 3;
        s.beacon.enabled = true;
        s.drbg.approved_only = true;
        s.drbg.follow_approved_only(false, false);
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("beacon.enabled") && e.contains("approved_only"), "{e}");
        figment::Jail::expect_with(|_| {
            let beacon = serde_json::json!({
                "enabled": true,
                "secret_key_file": "config/examples/beacon-example.key",
                "genesis_time": 1_767_225_600u64,
            });
            let e = Settings::load(
                None,
                serde_json::json!({ "beacon": beacon, "drbg": { "approved_only": true } }),
            )
            .unwrap_err()
            .to_string();
            assert!(e.contains("beacon.enabled"), "{e}");
            Settings::load(None, serde_json::json!({ "beacon": beacon })).unwrap();
            Ok(())
        });
    }

    #[test]
    fn strings_are_parsed_at_load_and_errors_name_the_key() {
        let e = load_error("[drbg]\ndefault_alg = \"rc4\"\n");
        assert!(e.contains("drbg.default_alg") && e.contains("rc4"), "{e}");
        let e = load_error("[drbg]\nenabled = [\"chacha20\", \"rc4\"]\n");
        assert!(e.contains("drbg.enabled") && e.contains("rc4"), "{e}");
        let e = load_error("[log]\nformat = \"xml\"\n");
        assert!(e.contains("log.format") && e.contains("xml"), "{e}");
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let e = load_error("[server]\nlisten_port = 1\n");
        assert!(e.contains("listen_port"), "{e}");
        // Policy tables are keyed by canonical name only: an alias would be a second table.
        let e = load_error("[drbg.aes]\njitter = false\n");
        assert!(e.contains("`aes`") && e.contains("aes256ctr"), "{e}");
        let e = load_error("[drbg.chacha20]\njiter = false\n");
        assert!(e.contains("jiter"), "{e}");
    }
}
