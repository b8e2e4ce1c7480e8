//! Reload without a restart: the callers (the config file's `[callers]` and the
//! API keys file) and TLS (certificate, key, client CA bundle). Two triggers:
//!
//! - SIGHUP: [`Reloader::reload_all`] re-reads everything at once.
//! - A change of the files. Kubernetes updates a mounted Secret or ConfigMap by swapping a
//!   symlink, which file-event watchers can miss, so the files are polled: every
//!   `server.reload_interval_ms` their contents are hashed, and a change runs the owner's
//!   reload.
//!
//! A reload that fails (a half-written or invalid file) is logged and counted
//! (`drbgd_reloads_total{what,result="error"}`), and what was in force stays; it is tried again
//! when the files change again, or after a minute if they do not.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use prometheus::IntCounterVec;
use sha2::{Digest, Sha256};

/// A set of files and what to do when any of them changes.
pub struct Watched {
    /// Label for logs and the `what` label of `drbgd_reloads_total` (`tls`, `callers`).
    pub what: &'static str,
    /// The files.
    pub files: Vec<PathBuf>,
    /// Their [`fingerprint`] taken *before* the owner last read them, so a change made
    /// between that read and the watcher's start is still seen.
    pub loaded: [u8; 32],
    /// Re-reads them; an error keeps the previous state.
    pub reload: ReloadFn,
}

/// A reload action.
pub type ReloadFn = Arc<dyn Fn() -> anyhow::Result<()> + Send + Sync>;

/// Every reload action, for SIGHUP.
#[derive(Clone)]
pub struct Reloader {
    actions: Arc<[(&'static str, ReloadFn)]>,
    reloads: IntCounterVec,
}

impl std::fmt::Debug for Reloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.actions.iter().map(|(what, _)| what)).finish()
    }
}

impl Reloader {
    /// The actions of `watched`, counted in `reloads`.
    pub fn new(watched: &[Watched], reloads: IntCounterVec) -> Self {
        Reloader { actions: watched.iter().map(|w| (w.what, w.reload.clone())).collect(), reloads }
    }

    /// Runs every reload now; whether all succeeded.
    pub fn reload_all(&self) -> bool {
        self.actions.iter().fold(true, |ok, (what, reload)| run(what, reload, &self.reloads, "SIGHUP") && ok)
    }
}

/// Runs one reload, counting and logging its outcome.
fn run(what: &'static str, reload: &ReloadFn, reloads: &IntCounterVec, trigger: &'static str) -> bool {
    // A panic in a reload is a bug, but it must not end the watcher or the SIGHUP task: it
    // counts as a failed reload, and what was in force stays.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reload()))
        .unwrap_or_else(|_| Err(anyhow::anyhow!("the reload panicked (a bug); nothing was changed")));
    reloads.with_label_values(&[what, if result.is_ok() { "ok" } else { "error" }]).inc();
    match result {
        Ok(()) => {
            tracing::info!(what, trigger, "reloaded");
            true
        }
        Err(e) => {
            let error = format!("{e:#}");
            tracing::warn!(what, trigger, error, "reload failed; keeping what was in force");
            false
        }
    }
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
            if run(w.what, &w.reload, &reloads, "file change") {
                *last = now;
                *fail = None;
            } else {
                *fail = Some((now, tokio::time::Instant::now()));
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
