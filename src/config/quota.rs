//! `[quota]`: where callers' quota buckets are kept. `local` (the default) keeps them in this
//! process; `redis` keeps each caller's buckets in a Redis (or Valkey) server shared by every
//! replica of a deployment, so a caller's rate holds across the fleet. Also how that store is
//! reached (its URL, password and CAs: a password goes over `rediss://`, or over plain
//! `redis://` only when `allow_plaintext_password` says so) and what a replica does without
//! it (`on_store_failure`, and `replicas`, the fleet size it divides a caller's rate by).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::error::ConfigError;
use super::secret_file;

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
    /// The fewest replicas the deployment runs (0: not said). A replica divides a caller's
    /// rate and burst by at least this many while the store is down, and by this many alone
    /// while it has never reached the store (it has seen no replica then).
    #[serde(default)]
    pub replicas: u32,
    /// Send the password to a plain `redis://` store all the same (anyone on the path can read
    /// it). Off: a password with a `redis://` URL stops start-up.
    #[serde(default)]
    pub allow_plaintext_password: bool,
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
    /// last seen alive, at least `quota.replicas`; by `quota.replicas` alone before the store
    /// has ever answered, and with neither known (0), as `Closed`.
    Local,
    /// Admit (and count) without a limit.
    Open,
    /// Refuse quota'd requests with 503 `quota_store_unavailable`.
    Closed,
}

/// The environment variable a store password may come from instead of `password_file`.
pub const PASSWORD_ENV: &str = "DRBGD_REDIS_PASSWORD";

/// The most `quota.replicas` may say.
pub const MAX_REPLICAS: u32 = 10_000;

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
        if self.replicas > MAX_REPLICAS {
            return invalid("quota.replicas", format!("must be in 0..={MAX_REPLICAS}"));
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
            secret_file::check("quota.password_file", file)?;
        }
        self.check_password_transport(secret_file::given(self.password_file(), PASSWORD_ENV))
    }

    /// Whether the password goes over plain `redis://` (the URL's scheme; a password inside
    /// the URL is refused by [`QuotaStoreSettings::validate`] whatever the transport).
    pub fn password_in_clear(&self, has_password: bool) -> bool {
        has_password && self.store == StoreKind::Redis && self.url.starts_with("redis://")
    }

    /// Refuses a password bound for a plain `redis://` store (it would cross the network in
    /// clear, in `AUTH`) unless `allow_plaintext_password` says it is meant.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming `quota.allow_plaintext_password`.
    pub fn check_password_transport(&self, has_password: bool) -> Result<(), ConfigError> {
        if !self.password_in_clear(has_password) || self.allow_plaintext_password {
            return Ok(());
        }
        Err(ConfigError::Invalid {
            key: "quota.allow_plaintext_password",
            reason: format!(
                "a store password (quota.password_file or {PASSWORD_ENV}) would go over plain redis:// in \
                 clear: use rediss:// (TLS), or set quota.allow_plaintext_password = true if the \
                 network to the store is trusted"
            ),
        })
    }

    /// `ca_file`, unless empty.
    pub fn ca_file(&self) -> Option<&std::path::Path> {
        secret_file::path(&self.ca_file)
    }

    /// `password_file`, unless empty.
    fn password_file(&self) -> Option<&std::path::Path> {
        secret_file::path(&self.password_file)
    }

    /// The store's password, from `password_file` or else the environment, if any.
    ///
    /// # Errors
    /// The file cannot be read (it could at validation; it may have gone since).
    pub fn password(&self) -> std::io::Result<Option<zeroize::Zeroizing<String>>> {
        secret_file::password(self.password_file(), PASSWORD_ENV)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded `[quota]` with a Redis store at `url` whose password is in a file of the
    /// test's own (`name`): the settings and the file's directory.
    fn with_password_file(url: &str, name: &str) -> (QuotaStoreSettings, PathBuf) {
        let dir = std::env::temp_dir().join(format!("drbgd-quota-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("password");
        std::fs::write(&file, "s3cret-pass\n").unwrap();
        let mut quota = crate::config::Settings::defaults().quota;
        quota.store = StoreKind::Redis;
        quota.url = url.into();
        quota.password_file = Some(file);
        (quota, dir)
    }

    #[test]
    fn a_password_over_plain_redis_needs_the_opt_in() {
        let (mut quota, dir) = with_password_file("redis://127.0.0.1:6379", "plain");
        let e = quota.validate().unwrap_err().to_string();
        assert!(e.contains("quota.allow_plaintext_password") && e.contains("rediss://"), "{e}");
        assert!(!e.contains("s3cret-pass"), "{e}");
        quota.allow_plaintext_password = true;
        quota.validate().unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_password_over_tls_needs_no_opt_in() {
        let (quota, dir) = with_password_file("rediss://127.0.0.1:6380", "tls");
        assert!(!quota.allow_plaintext_password);
        quota.validate().unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The check itself, with the password's presence passed in (as from the environment).
    #[test]
    fn only_a_password_in_clear_is_refused() {
        let mut quota = crate::config::Settings::defaults().quota;
        quota.store = StoreKind::Redis;
        quota.url = "redis://127.0.0.1:6379".into();
        assert!(quota.check_password_transport(false).is_ok(), "no password, nothing in clear");
        assert!(quota.check_password_transport(true).is_err());
        quota.url = "rediss://127.0.0.1:6380".into();
        assert!(quota.check_password_transport(true).is_ok());
        quota.url = "redis://127.0.0.1:6379".into();
        quota.store = StoreKind::Local;
        assert!(quota.check_password_transport(true).is_ok(), "the local store connects nowhere");
    }

    #[test]
    fn the_replica_count_is_bounded() {
        let mut quota = crate::config::Settings::defaults().quota;
        assert_eq!(quota.replicas, 0);
        quota.replicas = MAX_REPLICAS + 1;
        let e = quota.validate().unwrap_err().to_string();
        assert!(e.contains("quota.replicas"), "{e}");
    }
}
