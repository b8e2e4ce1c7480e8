//! `[quota]`: where callers' quota buckets are kept. `local` (the default) keeps them in this
//! process; `redis` keeps each caller's buckets in a Redis (or Valkey) server shared by every
//! replica of a deployment, so a caller's rate holds across the fleet.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// `[quota]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaStoreSettings {
    /// `local` or `redis`.
    pub store: StoreKind,
    /// `redis://host:port[/db]` or `rediss://` (TLS); a user name may be given, a password
    /// may not (it comes from `password_file` or `DRBGD_REDIS_PASSWORD`).
    pub url: String,
    /// A file holding the store's password (a mounted Secret), read at start-up; empty: none.
    #[serde(default)]
    pub password_file: Option<PathBuf>,
    /// PEM bundle of the CAs a `rediss://` store's certificate must chain to; empty: the
    /// public web roots.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// Namespace of every key, the same on every replica of one deployment and different
    /// between deployments that share a store.
    pub prefix: String,
    /// What a quota'd request meets while the store cannot be reached.
    pub on_store_failure: OnStoreFailure,
    /// Deadline of each store call; a call past it counts as a failure.
    pub timeout_ms: u64,
    /// A replica leases about this much of its recent use of a caller's bucket at a time.
    pub lease_ms: u64,
}

/// `quota.store`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    /// Buckets in this process.
    Local,
    /// Buckets in Redis, shared by the fleet.
    Redis,
}

/// `quota.on_store_failure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnStoreFailure {
    /// Each replica enforces its share: the caller's rate and burst divided by the replicas
    /// last seen alive.
    Local,
    /// Admit (and count) without a limit.
    Open,
    /// Refuse quota'd requests with 503 `quota_store_unavailable`.
    Closed,
}

/// The environment variable a store password may come from instead of `password_file`.
pub const PASSWORD_ENV: &str = "DRBGD_REDIS_PASSWORD";

impl QuotaStoreSettings {
    /// Checks the section, naming the key at fault.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, reason: String| Err(ConfigError::Invalid { key, reason });
        if !(1..=10_000).contains(&self.timeout_ms) {
            return invalid("quota.timeout_ms", "must be in 1..=10000".into());
        }
        if !(10..=60_000).contains(&self.lease_ms) {
            return invalid("quota.lease_ms", "must be in 10..=60000".into());
        }
        let prefix_ok = (1..=64).contains(&self.prefix.len())
            && self.prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b));
        if !prefix_ok {
            return invalid("quota.prefix", "1 to 64 of a-z A-Z 0-9 _ - . :".into());
        }
        // Checked whatever the store: a password in the URL would be printed with the settings.
        let info = redis::IntoConnectionInfo::into_connection_info(self.url.as_str());
        if let Ok(info) = &info
            && info.redis_settings().password().is_some()
        {
            return invalid(
                "quota.url",
                format!("must not hold a password: put it in quota.password_file or {PASSWORD_ENV}"),
            );
        }
        if self.store == StoreKind::Local {
            return Ok(());
        }
        if let Err(e) = info {
            return invalid("quota.url", format!("not a redis:// or rediss:// URL: {e}"));
        }
        if !self.url.starts_with("redis://") && !self.url.starts_with("rediss://") {
            return invalid("quota.url", "must start with redis:// or rediss://".into());
        }
        if self.url.contains('#') {
            // redis-rs reads "#insecure" as "skip certificate verification".
            return invalid(
                "quota.url",
                "must not have a fragment (#insecure would skip TLS verification)".into(),
            );
        }
        if let Some(file) = self.ca_file() {
            if !self.url.starts_with("rediss://") {
                return invalid("quota.ca_file", "applies to a rediss:// URL only".into());
            }
            if let Err(e) = std::fs::read(file) {
                return invalid("quota.ca_file", format!("{}: {e}", file.display()));
            }
        }
        if let Some(file) = self.password_file() {
            match std::fs::read_to_string(file) {
                Ok(p) if !p.trim_end_matches(['\r', '\n']).is_empty() => {}
                Ok(_) => return invalid("quota.password_file", format!("{} is empty", file.display())),
                Err(e) => return invalid("quota.password_file", format!("{}: {e}", file.display())),
            }
        }
        Ok(())
    }

    /// `ca_file`, unless empty.
    pub fn ca_file(&self) -> Option<&std::path::Path> {
        self.ca_file.as_deref().filter(|p| !p.as_os_str().is_empty())
    }

    /// `password_file`, unless empty.
    fn password_file(&self) -> Option<&std::path::Path> {
        self.password_file.as_deref().filter(|p| !p.as_os_str().is_empty())
    }

    /// The store's password, from `password_file` or else the environment, if any.
    ///
    /// # Errors
    /// The file cannot be read (it could at validation; it may have gone since).
    pub fn password(&self) -> std::io::Result<Option<zeroize::Zeroizing<String>>> {
        if let Some(file) = self.password_file() {
            let text = zeroize::Zeroizing::new(std::fs::read_to_string(file)?);
            return Ok(Some(zeroize::Zeroizing::new(text.trim_end_matches(['\r', '\n']).to_string())));
        }
        Ok(std::env::var(PASSWORD_ENV).ok().filter(|p| !p.is_empty()).map(zeroize::Zeroizing::new))
    }
}
