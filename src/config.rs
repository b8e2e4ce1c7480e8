//! Typed, layered, validated settings: the embedded `config/default.toml`, then an optional
//! file, then `DRBGD__SECTION__KEY` environment variables, then CLI overrides.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

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
    /// Most bytes for /token and /nonce.
    pub max_token_bytes: usize,
    /// Most UUIDs or integers per request.
    pub max_count: usize,
}

/// `[drbg]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DrbgSettings {
    /// Default algorithm name.
    pub default_alg: String,
    /// Enabled algorithm names.
    pub enabled: Vec<String>,
    /// Shards (0 = cores).
    pub shards: usize,
    /// Personalization label.
    pub instance: String,
    /// `[drbg.chacha20]`.
    pub chacha20: PolicySettings,
    /// `[drbg.aes256ctr]`.
    pub aes256ctr: PolicySettings,
    /// `[drbg.blake3]`.
    pub blake3: PolicySettings,
    /// `[drbg.randen]`.
    pub randen: PolicySettings,
    /// `[drbg.aes128ctr]`.
    pub aes128ctr: PolicySettings,
    /// `[drbg.aes192ctr]`.
    pub aes192ctr: PolicySettings,
}

/// A reseed policy section.
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySettings {
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
    /// File of digests, one per line.
    pub api_keys_file: String,
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
}

/// `[log]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LogSettings {
    /// `text` or `json`.
    pub format: String,
    /// tracing filter.
    pub level: String,
}

/// A setting that failed validation.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The sources could not be read or parsed.
    #[error("cannot load configuration: {0}")]
    Load(#[from] Box<figment::Error>),
    /// A value is out of range or inconsistent.
    #[error("invalid setting {key}: {reason}")]
    Invalid {
        /// The key, as `section.key`.
        key: &'static str,
        /// What is wrong.
        reason: String,
    },
}

impl Settings {
    /// Loads the layers: defaults, `file`, environment, then `overrides` (CLI flags as a
    /// nested map), and validates the result.
    ///
    /// # Errors
    /// [`ConfigError`] naming the offending key.
    pub fn load(file: Option<&Path>, overrides: impl Serialize) -> Result<Self, ConfigError> {
        let mut figment = Figment::from(Toml::string(DEFAULT_TOML));
        if let Some(file) = file {
            figment = figment.merge(Toml::file_exact(file));
        }
        figment = figment.merge(Env::prefixed("DRBGD__").split("__").lowercase(true));
        figment = figment.merge(Serialized::defaults(overrides));
        let settings: Settings = figment.extract().map_err(Box::new)?;
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

    /// Checks ranges and cross-field rules.
    ///
    /// # Errors
    /// The first invalid key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, reason: &str| Err(ConfigError::Invalid { key, reason: reason.to_string() });
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
        let s = &self.server;
        if s.concurrency_limit == 0 || s.max_connections == 0 {
            return invalid("server.concurrency_limit", "must be positive");
        }
        if s.listen == s.admin_listen && s.listen.port() != 0 {
            return invalid("server.admin_listen", "must differ from server.listen");
        }
        let enabled =
            self.enabled_algorithms().map_err(|e| ConfigError::Invalid { key: "drbg.enabled", reason: e })?;
        let default = self
            .default_algorithm()
            .map_err(|e| ConfigError::Invalid { key: "drbg.default_alg", reason: e })?;
        if !enabled.contains(&default) {
            return invalid("drbg.default_alg", "must be one of drbg.enabled");
        }
        for p in Algorithm::ALL.map(|alg| self.policy(alg)) {
            if p.rekey_after_bytes < MIN_REKEY_AFTER_BYTES || p.rekey_after_bytes > 1 << 40 {
                return invalid("drbg.<alg>.rekey_after_bytes", "must be in 4096..=2^40");
            }
            if p.rekey_after_seconds == 0 {
                return invalid("drbg.<alg>.rekey_after_seconds", "must be positive");
            }
        }
        if !matches!(self.log.format.as_str(), "text" | "json") {
            return invalid("log.format", "must be \"text\" or \"json\"");
        }
        if self.tls.enabled && (self.tls.cert_file.is_empty() || self.tls.key_file.is_empty()) {
            return invalid("tls.cert_file", "TLS needs cert_file and key_file");
        }
        Ok(())
    }

    /// The enabled algorithms.
    ///
    /// # Errors
    /// An unknown name, or none enabled.
    pub fn enabled_algorithms(&self) -> Result<Vec<Algorithm>, String> {
        let algs: Vec<Algorithm> = self
            .drbg
            .enabled
            .iter()
            .map(|s| s.parse().map_err(|_| format!("unknown algorithm {s:?}")))
            .collect::<Result<_, _>>()?;
        if algs.is_empty() {
            return Err("at least one algorithm must be enabled".into());
        }
        Ok(algs)
    }

    /// The default algorithm.
    ///
    /// # Errors
    /// An unknown name.
    pub fn default_algorithm(&self) -> Result<Algorithm, String> {
        self.drbg.default_alg.parse().map_err(|_| format!("unknown algorithm {:?}", self.drbg.default_alg))
    }

    /// The pool configuration these settings describe.
    pub fn pool_config(&self) -> PoolConfig {
        let policy = |p: &PolicySettings| ReseedPolicy {
            rekey_after_bytes: p.rekey_after_bytes,
            rekey_after: Duration::from_secs(p.rekey_after_seconds),
            jitter: p.jitter,
        };
        let d = &self.drbg;
        PoolConfig {
            shards: if d.shards == 0 { PoolConfig::default().shards } else { d.shards },
            policies: Algorithm::ALL.map(|alg| policy(self.policy(alg))),
            instance: d.instance.clone(),
        }
    }

    /// The reseed policy settings of `alg`.
    pub fn policy(&self, alg: Algorithm) -> &PolicySettings {
        match alg {
            Algorithm::ChaCha20 => &self.drbg.chacha20,
            Algorithm::Aes256Ctr => &self.drbg.aes256ctr,
            Algorithm::Blake3 => &self.drbg.blake3,
            Algorithm::Randen => &self.drbg.randen,
            Algorithm::Aes128Ctr => &self.drbg.aes128ctr,
            Algorithm::Aes192Ctr => &self.drbg.aes192ctr,
        }
    }

    /// The file of API key digests, if configured.
    pub fn api_keys_file(&self) -> Option<PathBuf> {
        (!self.auth.api_keys_file.is_empty()).then(|| PathBuf::from(&self.auth.api_keys_file))
    }
}

#[cfg(test)]
#[allow(clippy::result_large_err)] // figment::Jail closures return figment::Error
mod tests {
    use super::*;

    #[test]
    fn embedded_defaults_are_valid() {
        let s = Settings::defaults();
        s.validate().unwrap();
        assert_eq!(s.server.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(s.server.admin_listen.to_string(), "127.0.0.1:8081");
        assert_eq!(s.limits.max_bits, 100_000_000);
        assert_eq!(s.default_algorithm(), Ok(Algorithm::ChaCha20));
    }

    #[test]
    fn layers_override_in_order() {
        figment::Jail::expect_with(|jail| {
            jail.create_file("drbgd.toml", "[limits]\nmax_bits = 5000\n[drbg]\nshards = 3\n")?;
            jail.set_env("DRBGD__DRBG__SHARDS", "4");
            let overrides = serde_json::json!({ "drbg": { "default_alg": "blake3" } });
            let s = Settings::load(Some(Path::new("drbgd.toml")), overrides).unwrap();
            assert_eq!(s.limits.max_bits, 5000);
            assert_eq!(s.drbg.shards, 4);
            assert_eq!(s.default_algorithm(), Ok(Algorithm::Blake3));
            Ok(())
        });
    }

    #[test]
    fn invalid_values_name_their_key() {
        let mut s = Settings::defaults();
        s.drbg.chacha20.rekey_after_bytes = 10;
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("rekey_after_bytes"), "{e}");
        let mut s = Settings::defaults();
        s.drbg.default_alg = "rc4".into();
        assert!(s.validate().unwrap_err().to_string().contains("drbg.default_alg"));
        let mut s = Settings::defaults();
        s.limits.stream_chunk_bytes = 65536;
        assert!(s.validate().is_err());
    }

    #[test]
    fn unknown_keys_are_rejected() {
        figment::Jail::expect_with(|jail| {
            jail.create_file("bad.toml", "[server]\nlisten_port = 1\n")?;
            let e = Settings::load(Some(Path::new("bad.toml")), serde_json::json!({})).unwrap_err();
            assert!(e.to_string().contains("listen_port"), "{e}");
            Ok(())
        });
    }
}
