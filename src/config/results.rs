//! `[results]`: where tickets and the signed results kept for them live (docs/tickets.md):
//! `sqlite` (the default: one file, one replica) or `postgres` (one database a fleet shares),
//! how that database is reached (its URL, password and CAs: a password goes over TLS, or in
//! clear only when `allow_plaintext_password` says so, as `[quota]`'s Redis), how long results
//! are kept, and how much the store may hold.

use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::error::ConfigError;
use super::secret_file;

/// `[results]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ResultsSettings {
    /// `sqlite` or `postgres`.
    pub store: ResultsStore,
    /// The SQLite file (created 0600; its `-wal` and `-shm` files beside it).
    pub path: String,
    /// `postgresql://user@host:port/db?sslmode=require` (or libpq's `key=value` form): no
    /// password here (`password_file` or [`PASSWORD_ENV`]).
    pub url: String,
    /// A file holding the database password (a mounted Secret); empty: none.
    #[serde(default)]
    pub password_file: Option<PathBuf>,
    /// PEM bundle of the CAs the database's certificate must chain to (`sslmode=require`);
    /// empty: the public web roots.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// Send the password without TLS all the same (`sslmode=disable` or `prefer`).
    #[serde(default)]
    pub allow_plaintext_password: bool,
    /// Deadline of each store call; a call past it is a store failure (503).
    pub timeout_ms: u64,
    /// Connections to PostgreSQL at most, per replica.
    pub pool_size: u32,
    /// Keep every signed answer (each receipt, over either transport), not only the ticketed
    /// ones: a receipt is then answered only once kept (503 `store_unavailable` otherwise),
    /// and its caller fetches it again by serial.
    pub keep_all: bool,
    /// Days a kept result stays (then swept; its ticket stays, used, without it).
    pub retention_days: u32,
    /// Bytes the store may hold: past them new tickets and ticketed draws are refused (503 `store_full`) until the sweep or an operator makes room.
    pub max_bytes: u64,
}

/// `results.store`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ResultsStore {
    /// An embedded SQLite file.
    Sqlite,
    /// A PostgreSQL database.
    Postgres,
}

/// The environment variable the database password may come from instead of `password_file`.
pub const PASSWORD_ENV: &str = "DRBGD_POSTGRES_PASSWORD";

impl Default for ResultsSettings {
    /// SQLite, `drbgd-tickets.sqlite3` in the working directory; results kept a year; 1 GiB.
    fn default() -> Self {
        ResultsSettings {
            store: ResultsStore::Sqlite,
            path: "drbgd-tickets.sqlite3".into(),
            url: String::new(),
            password_file: None,
            ca_file: None,
            allow_plaintext_password: false,
            timeout_ms: 2000,
            pool_size: 16,
            keep_all: false,
            retention_days: 365,
            max_bytes: 1 << 30,
        }
    }
}

impl ResultsSettings {
    /// Checks the section, naming the key at fault (the database is not reached here).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`].
    pub fn validate(&self, tickets_enabled: bool) -> Result<(), ConfigError> {
        let invalid = |key: &'static str, reason: String| Err(ConfigError::Invalid { key, reason });
        if self.keep_all && !tickets_enabled {
            return invalid(
                "results.keep_all",
                "kept results live in the tickets' store, opened with tickets.enabled".into(),
            );
        }
        if !(1..=60_000).contains(&self.timeout_ms) {
            return invalid("results.timeout_ms", "must be in 1..=60000".into());
        }
        if !(1..=1024).contains(&self.pool_size) {
            return invalid("results.pool_size", "must be in 1..=1024".into());
        }
        if self.retention_days == 0 {
            return invalid("results.retention_days", "must be at least 1".into());
        }
        if self.max_bytes < 1 << 20 {
            return invalid("results.max_bytes", "must be at least 1 MiB".into());
        }
        match self.store {
            ResultsStore::Sqlite if self.path.is_empty() => {
                invalid("results.path", "must name the SQLite file".into())
            }
            ResultsStore::Sqlite => Ok(()),
            ResultsStore::Postgres => self.validate_postgres(),
        }
    }

    fn validate_postgres(&self) -> Result<(), ConfigError> {
        let invalid = |key: &'static str, reason: String| Err(ConfigError::Invalid { key, reason });
        let config = match self.postgres_config() {
            Ok(config) => config,
            // Not echoed: the URL may hold what it should not.
            Err(_) => return invalid("results.url", "not a PostgreSQL URL or key=value string".into()),
        };
        if config.get_password().is_some() {
            return invalid(
                "results.url",
                format!("must not hold a password: put it in results.password_file or {PASSWORD_ENV}"),
            );
        }
        if config.get_hosts().is_empty() || config.get_dbname().is_none() || config.get_user().is_none() {
            return invalid("results.url", "must name a host, a user and a database".into());
        }
        let tls = config.get_ssl_mode() == tokio_postgres::config::SslMode::Require;
        if let Some(file) = self.ca_file() {
            if !tls {
                return invalid("results.ca_file", "applies with sslmode=require only".into());
            }
            if let Err(e) = std::fs::read(file) {
                return invalid("results.ca_file", format!("{}: {e}", file.display()));
            }
        }
        if let Some(file) = self.password_file() {
            secret_file::check("results.password_file", file)?;
        }
        let has_password = secret_file::given(self.password_file(), PASSWORD_ENV);
        if has_password && !tls && !self.allow_plaintext_password {
            return invalid(
                "results.allow_plaintext_password",
                format!(
                    "the database password (results.password_file or {PASSWORD_ENV}) could cross the network in clear: \
                     add sslmode=require to results.url, or set results.allow_plaintext_password = true if \
                     the network to the database is trusted"
                ),
            );
        }
        Ok(())
    }

    /// The URL as tokio-postgres reads it.
    ///
    /// # Errors
    /// Not a PostgreSQL URL.
    pub fn postgres_config(&self) -> Result<tokio_postgres::Config, tokio_postgres::Error> {
        tokio_postgres::Config::from_str(&self.url)
    }

    /// `ca_file`, unless empty.
    pub fn ca_file(&self) -> Option<&std::path::Path> {
        secret_file::path(&self.ca_file)
    }

    /// `password_file`, unless empty.
    fn password_file(&self) -> Option<&std::path::Path> {
        secret_file::path(&self.password_file)
    }

    /// The database password, from `password_file` or else the environment, if any.
    ///
    /// # Errors
    /// The file cannot be read (it could at validation; it may have gone since).
    pub fn password(&self) -> std::io::Result<Option<zeroize::Zeroizing<String>>> {
        secret_file::password(self.password_file(), PASSWORD_ENV)
    }

    /// Milliseconds a kept result stays.
    pub fn retention_ms(&self) -> i64 {
        i64::from(self.retention_days) * 86_400_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn postgres(url: &str) -> ResultsSettings {
        ResultsSettings { store: ResultsStore::Postgres, url: url.into(), ..ResultsSettings::default() }
    }

    fn refused_key(settings: &ResultsSettings) -> Option<&'static str> {
        match settings.validate(true) {
            Err(ConfigError::Invalid { key, .. }) => Some(key),
            _ => None,
        }
    }

    /// A password is never in the URL, and goes over TLS unless the operator says otherwise.
    #[test]
    fn a_postgres_password_stays_out_of_the_url_and_off_the_wire_in_clear() {
        assert_eq!(refused_key(&postgres("postgresql://drbgd:secret@db/drbgd")), Some("results.url"));
        assert_eq!(refused_key(&postgres("postgresql://db/drbgd")), Some("results.url"), "no user");
        assert_eq!(refused_key(&postgres("not a url at all ===")), Some("results.url"));
        assert_eq!(refused_key(&postgres("postgresql://drbgd@db/drbgd")), None, "no password, no TLS needed");
        let dir = std::env::temp_dir().join(format!("drbgd-results-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("password");
        std::fs::write(&file, "secret\n").unwrap();
        let mut with_password = postgres("postgresql://drbgd@db/drbgd");
        with_password.password_file = Some(file.clone());
        assert_eq!(refused_key(&with_password), Some("results.allow_plaintext_password"));
        with_password.url = "postgresql://drbgd@db/drbgd?sslmode=prefer".into();
        assert_eq!(
            refused_key(&with_password),
            Some("results.allow_plaintext_password"),
            "prefer may fall back"
        );
        with_password.url = "postgresql://drbgd@db/drbgd?sslmode=require".into();
        assert_eq!(refused_key(&with_password), None);
        assert_eq!(with_password.password().unwrap().as_deref().map(String::as_str), Some("secret"));
        with_password.url = "postgresql://drbgd@db/drbgd".into();
        with_password.allow_plaintext_password = true;
        assert_eq!(refused_key(&with_password), None);
        with_password.ca_file = Some(file);
        assert_eq!(refused_key(&with_password), Some("results.ca_file"), "a CA without TLS");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The bounds name their key.
    #[test]
    fn the_bounds_name_their_key() {
        assert!(ResultsSettings::default().validate(false).is_ok());
        let keep_all = ResultsSettings { keep_all: true, ..ResultsSettings::default() };
        assert!(matches!(
            keep_all.validate(false),
            Err(ConfigError::Invalid { key: "results.keep_all", .. })
        ));
        assert!(keep_all.validate(true).is_ok());
        let tiny = ResultsSettings { max_bytes: 1000, ..ResultsSettings::default() };
        assert_eq!(refused_key(&tiny), Some("results.max_bytes"));
        let never = ResultsSettings { retention_days: 0, ..ResultsSettings::default() };
        assert_eq!(refused_key(&never), Some("results.retention_days"));
    }
}
