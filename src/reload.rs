//! Reload of mounted files without a restart: the TLS certificate and key, and the API keys
//! file. Kubernetes updates a mounted Secret by swapping a symlink, which file-event watchers
//! can miss, so the files are polled: every `server.reload_interval_ms` their contents are
//! hashed, and a change runs the owner's reload. A reload that fails (a half-written or invalid
//! file) is logged and counted, and the previous certificate or keys stay in force; it is tried
//! again when the files change again, or after a minute if they do not.

use std::path::PathBuf;
use std::time::Duration;

use prometheus::IntCounterVec;
use sha2::{Digest, Sha256};

/// A set of files and what to do when any of them changes.
pub struct Watched {
    /// Label for logs and the `what` label of `drbgd_reloads_total` (`tls`, `api_keys`).
    pub what: &'static str,
    /// The files.
    pub files: Vec<PathBuf>,
    /// Their [`fingerprint`] taken *before* the owner last read them, so a change made
    /// between that read and the watcher's start is still seen.
    pub loaded: [u8; 32],
    /// Re-reads them; an error keeps the previous state.
    pub reload: Box<dyn Fn() -> anyhow::Result<()> + Send + Sync>,
}

/// Polls `watched` every `interval` for ever (the task is dropped with the runtime), counting
/// reloads in `reloads` (`drbgd_reloads_total{what,result}`).
pub async fn watch(watched: Vec<Watched>, interval: Duration, reloads: IntCounterVec) {
    // What each set of files looked like when last loaded successfully, and the content of
    // the last failed attempt (not retried until the files change or FAILED_RETRY passes).
    let mut loaded: Vec<[u8; 32]> = watched.iter().map(|w| w.loaded).collect();
    let mut failed: Vec<Option<([u8; 32], tokio::time::Instant)>> = vec![None; watched.len()];
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        for ((w, last), fail) in watched.iter().zip(loaded.iter_mut()).zip(failed.iter_mut()) {
            let now = fingerprint(&w.files);
            if now == *last {
                *fail = None;
                continue;
            }
            if let Some((content, at)) = *fail
                && content == now
                && at.elapsed() < FAILED_RETRY
            {
                continue;
            }
            let result = (w.reload)();
            let outcome = if result.is_ok() { "ok" } else { "error" };
            reloads.with_label_values(&[w.what, outcome]).inc();
            match result {
                Ok(()) => {
                    *last = now;
                    *fail = None;
                    tracing::info!(what = w.what, "reloaded after a file change");
                }
                Err(e) => {
                    *fail = Some((now, tokio::time::Instant::now()));
                    let error = format!("{e:#}");
                    tracing::warn!(
                        what = w.what,
                        error,
                        "reload failed; keeping the previous one, will retry"
                    );
                }
            }
        }
    }
}

/// A failed reload of unchanged files is retried after this long (the failure may not have been
/// the content: a transient read error, a key file written after its certificate).
const FAILED_RETRY: std::time::Duration = std::time::Duration::from_secs(60);

/// SHA-256 over each file's path and contents (or the fact that it is unreadable). The files
/// are small (PEM, one digest per line), so they are read synchronously, into a buffer that is
/// wiped after hashing: the TLS private key is among them.
pub fn fingerprint(files: &[PathBuf]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for file in files {
        hasher.update(file.as_os_str().as_encoded_bytes());
        match std::fs::read(file).map(zeroize::Zeroizing::new) {
            Ok(bytes) => {
                hasher.update([1]);
                hasher.update((bytes.len() as u64).to_le_bytes());
                hasher.update(&bytes);
            }
            Err(_) => hasher.update([0]),
        }
    }
    hasher.finalize().into()
}
