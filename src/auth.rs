//! Optional bearer API keys. Keys are configured as SHA-256 digests (never stored in clear);
//! a presented key is hashed and compared with every digest in constant time.

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::Settings;
use crate::error::ApiError;
use crate::state::AppState;

/// The accepted key digests.
pub struct ApiKeys(Vec<[u8; 32]>);

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKeys({} digests)", self.0.len())
    }
}

impl ApiKeys {
    /// Reads the digests from the settings and the optional keys file.
    ///
    /// # Errors
    /// A digest that is not 64 hex characters, an unreadable file, or auth on with no key.
    pub fn from_settings(settings: &Settings) -> anyhow::Result<Option<Self>> {
        if !settings.auth.enabled {
            return Ok(None);
        }
        let keys = Self::read(settings)?;
        anyhow::ensure!(!keys.0.is_empty(), "auth.enabled is true but no API key digest is configured");
        Ok(Some(keys))
    }

    /// The configured digests and those of the keys file, possibly none.
    fn read(settings: &Settings) -> anyhow::Result<Self> {
        let mut lines: Vec<String> = settings.auth.api_key_sha256.clone();
        if let Some(path) = settings.api_keys_file() {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| anyhow::anyhow!("auth.api_keys_file {}: {e}", path.display()))?;
            lines.extend(
                text.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .map(String::from),
            );
        }
        let digests = lines
            .iter()
            .map(|hex| {
                let bytes = data_encoding::HEXLOWER_PERMISSIVE
                    .decode(hex.trim().as_bytes())
                    .ok()
                    .and_then(|b| <[u8; 32]>::try_from(b).ok());
                bytes.ok_or_else(|| {
                    anyhow::anyhow!("auth: each API key digest must be 64 hex characters (SHA-256)")
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(ApiKeys(digests))
    }

    /// Whether `key` hashes to one of the digests. Every digest is compared, whatever matches.
    pub fn accepts(&self, key: &[u8]) -> bool {
        let digest: [u8; 32] = Sha256::digest(key).into();
        self.0.iter().fold(subtle::Choice::from(0), |found, d| found | d.ct_eq(&digest)).into()
    }

    /// Checks an `Authorization` header value.
    pub fn accepts_header(&self, value: Option<&[u8]>) -> bool {
        let Some(value) = value else { return false };
        let Some(token) = value.strip_prefix(b"Bearer ").or_else(|| value.strip_prefix(b"bearer ")) else {
            return false;
        };
        self.accepts(token)
    }
}

/// The accepted keys, re-read from the keys file on change: [`Keyring::reload`] swaps the whole
/// set at once, so a request is checked against either the old set or the new one.
pub struct Keyring {
    settings: Settings,
    current: std::sync::RwLock<std::sync::Arc<ApiKeys>>,
    /// Fingerprint of the keys file taken before the first read (see [`crate::reload`]).
    loaded: [u8; 32],
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Keyring").field(&*self.keys()).finish()
    }
}

impl Keyring {
    /// The keyring for `settings`, or `None` when auth is off.
    ///
    /// # Errors
    /// See [`ApiKeys::from_settings`].
    pub fn from_settings(settings: &Settings) -> anyhow::Result<Option<Self>> {
        let loaded = crate::reload::fingerprint(&settings.api_keys_file().into_iter().collect::<Vec<_>>());
        let Some(keys) = ApiKeys::from_settings(settings)? else { return Ok(None) };
        let current = std::sync::RwLock::new(std::sync::Arc::new(keys));
        Ok(Some(Keyring { settings: settings.clone(), current, loaded }))
    }

    fn keys(&self) -> std::sync::Arc<ApiKeys> {
        self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Checks an `Authorization` header value against the current keys.
    pub fn accepts_header(&self, value: Option<&[u8]>) -> bool {
        self.keys().accepts_header(value)
    }

    /// Re-reads the keys file (and the configured digests); on success the new set replaces
    /// the old one whole. An empty set is accepted here (unlike at start-up): emptying the file
    /// is how every key is revoked at once, and then every request gets 401.
    ///
    /// # Errors
    /// An unreadable file or a malformed digest; the previous keys then stay in force.
    pub fn reload(&self) -> anyhow::Result<()> {
        let keys = ApiKeys::read(&self.settings)?;
        if keys.0.is_empty() {
            tracing::warn!("the API keys file lists no key: every API request is refused until one is added");
        }
        *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) = std::sync::Arc::new(keys);
        Ok(())
    }

    /// The file whose change triggers a reload, if any, and its fingerprint when first read.
    pub fn file(&self) -> Option<(std::path::PathBuf, [u8; 32])> {
        self.settings.api_keys_file().map(|f| (f, self.loaded))
    }
}

/// Middleware: 401 `unauthorized` unless auth is off or the bearer key is accepted.
pub async fn require_key(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if let Some(keys) = &state.api_keys {
        let header = request.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes());
        if !keys.accepts_header(header) {
            return ApiError::Unauthorized.into_response();
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_only_configured_keys() {
        let digest: [u8; 32] = Sha256::digest(b"s3cret").into();
        let keys = ApiKeys(vec![[0u8; 32], digest]);
        assert!(keys.accepts(b"s3cret"));
        assert!(!keys.accepts(b"s3cre"));
        assert!(keys.accepts_header(Some(b"Bearer s3cret")));
        assert!(!keys.accepts_header(Some(b"Basic s3cret")));
        assert!(!keys.accepts_header(None));
        assert_eq!(format!("{keys:?}"), "ApiKeys(2 digests)");
    }
}
