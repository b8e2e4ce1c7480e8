//! A store's password as drbgd reads it, for each store that has one (`[quota]`'s Redis,
//! `[results]`' PostgreSQL): from a file (a mounted Secret; its trailing newline dropped) or
//! else an environment variable, never from the config itself; and a path setting left empty
//! as none.

use std::path::{Path, PathBuf};

use zeroize::Zeroizing;

use super::error::ConfigError;

/// `path`, unless unset or empty.
pub fn path(path: &Option<PathBuf>) -> Option<&Path> {
    path.as_deref().filter(|p| !p.as_os_str().is_empty())
}

/// The password in `file`, or else in the environment variable `env`, if any.
///
/// # Errors
/// The file cannot be read (it could at validation; it may have gone since).
pub fn password(file: Option<&Path>, env: &str) -> std::io::Result<Option<Zeroizing<String>>> {
    if let Some(file) = file {
        let text = Zeroizing::new(std::fs::read_to_string(file)?);
        return Ok(Some(Zeroizing::new(text.trim_end_matches(['\r', '\n']).to_string())));
    }
    Ok(std::env::var(env).ok().filter(|p| !p.is_empty()).map(Zeroizing::new))
}

/// Whether a password is given, by `file` or the environment variable `env`.
pub fn given(file: Option<&Path>, env: &str) -> bool {
    file.is_some() || std::env::var(env).is_ok_and(|p| !p.is_empty())
}

/// Checks that `file` (setting `key`) can be read and holds a password.
///
/// # Errors
/// [`ConfigError::Invalid`] naming `key`.
pub fn check(key: &'static str, file: &Path) -> Result<(), ConfigError> {
    let invalid = |reason: String| Err(ConfigError::Invalid { key, reason });
    match std::fs::read(file) {
        Ok(p) if !p.iter().all(|b| *b == b'\r' || *b == b'\n') => Ok(()),
        Ok(_) => invalid(format!("{} is empty", file.display())),
        Err(e) => invalid(format!("{}: {e}", file.display())),
    }
}
