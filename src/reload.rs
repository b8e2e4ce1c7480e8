//! Reload without a restart: the callers (the config file's `[callers]` and the
//! API keys file) and TLS (certificate, key, client CA bundle). Two triggers:
//!
//! - SIGHUP: [`Reloader::reload_all`] re-reads everything at once.
//! - A change of the files. Kubernetes updates a mounted Secret or ConfigMap by swapping a
//!   symlink, which file-event watchers can miss, so the files are polled: every
//!   `server.reload_interval_ms` their contents are hashed, and a change runs the owner's
//!   reload once it is stable: the same new contents seen on two polls in a row. A file caught
//!   mid-write (by an editor, `cp`, a script writing a table at a time) may well be valid (a
//!   `[callers.web]` table with its key but not yet its policy and quota is an open, unlimited
//!   caller), so a content seen on one poll only is never loaded. This delays a change by one
//!   interval. SIGHUP stays immediate: whoever sends it says the files are complete.
//!
//! A reload that fails (a half-written or invalid file) is logged and counted
//! (`drbgd_reloads_total{what,result="error"}`), and what was in force stays; it is tried again
//! when the files change again, or after a minute if they do not.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use prometheus::IntCounterVec;
use sha2::{Digest, Sha256};

/// A set of files and what to do when any of them changes.
pub struct Watched {
    /// Label for logs and the `what` label of `drbgd_reloads_total` (`tls`, `callers`).
    pub what: &'static str,
    /// The files, as of now (the callers' secret files change with a reload).
    pub files: FilesFn,
    /// Their [`fingerprint`] taken *before* the owner last read them, so a change made
    /// between that read and the watcher's start is still seen.
    pub loaded: [u8; 32],
    /// Re-reads them; an error keeps the previous state.
    pub reload: ReloadFn,
}

/// The files of a [`Watched`].
pub type FilesFn = Arc<dyn Fn() -> Vec<PathBuf> + Send + Sync>;

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
    let mut tracks: Vec<Track> = watched.iter().map(|w| Track::new(w.loaded)).collect();
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        for (w, track) in watched.iter().zip(tracks.iter_mut()) {
            let now = fingerprint(&(w.files)());
            if track.due(now, Instant::now()) {
                let ok = run(w.what, &w.reload, &reloads, "file change");
                track.done(now, ok, Instant::now());
            }
        }
    }
}

/// What the watcher knows of one set of files between polls, and when to reload them.
#[derive(Debug, Clone, Copy)]
struct Track {
    /// The contents last loaded successfully.
    loaded: [u8; 32],
    /// Other contents, seen on the last poll: loaded if the next poll sees them again.
    seen: Option<[u8; 32]>,
    /// The contents of the last failed attempt, and when (not retried until the files change,
    /// or [`FAILED_RETRY`] passes).
    failed: Option<([u8; 32], Instant)>,
}

impl Track {
    fn new(loaded: [u8; 32]) -> Self {
        Track { loaded, seen: None, failed: None }
    }

    /// Whether to reload now, the files' contents being `now`: only contents other than those
    /// loaded, seen on the previous poll too (stable), and not just failed.
    fn due(&mut self, now: [u8; 32], at: Instant) -> bool {
        if now == self.loaded {
            (self.seen, self.failed) = (None, None);
            return false;
        }
        if self.seen.replace(now) != Some(now) {
            return false;
        }
        !matches!(self.failed, Some((content, when)) if content == now && at.duration_since(when) < FAILED_RETRY)
    }

    /// Records a reload of contents `now`: loaded, or failed at `at`.
    fn done(&mut self, now: [u8; 32], ok: bool, at: Instant) {
        if ok {
            *self = Track::new(now);
        } else {
            self.failed = Some((now, at));
        }
    }
}

/// A failed reload of unchanged files is retried after this long (the failure may not have been
/// the content: a transient read error, a key file written after its certificate).
const FAILED_RETRY: Duration = Duration::from_secs(60);

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

#[cfg(test)]
mod tests {
    use super::*;

    const A: [u8; 32] = [1; 32];
    const B: [u8; 32] = [2; 32];
    const C: [u8; 32] = [3; 32];

    /// Contents seen on one poll only (a file caught mid-write) are never loaded; the same
    /// contents on the next poll are.
    #[test]
    fn a_change_is_loaded_once_stable() {
        let t0 = Instant::now();
        let mut t = Track::new(A);
        assert!(!t.due(A, t0), "unchanged");
        assert!(!t.due(B, t0), "B seen once: maybe half-written");
        assert!(!t.due(C, t0), "C seen once");
        assert!(t.due(C, t0), "C seen twice in a row: stable");
        t.done(C, true, t0);
        assert!(!t.due(C, t0), "loaded");
        // A change that is undone before it is stable never loads.
        assert!(!t.due(B, t0));
        assert!(!t.due(C, t0));
        assert!(!t.due(B, t0), "B, C, B: never twice in a row");
        assert!(t.due(B, t0));
    }

    /// A stable change that fails is retried when the files change (and are stable again), or
    /// after FAILED_RETRY.
    #[test]
    fn a_failed_change_is_retried_later_or_when_the_files_change() {
        let t0 = Instant::now();
        let mut t = Track::new(A);
        assert!(!t.due(B, t0));
        assert!(t.due(B, t0));
        t.done(B, false, t0);
        assert!(!t.due(B, t0 + Duration::from_secs(1)), "the same contents just failed");
        assert!(t.due(B, t0 + FAILED_RETRY), "retried after a while");
        t.done(B, false, t0 + FAILED_RETRY);
        assert!(!t.due(C, t0 + FAILED_RETRY), "new contents: stable first");
        assert!(t.due(C, t0 + FAILED_RETRY));
        t.done(C, true, t0 + FAILED_RETRY);
        // Back to what is loaded: nothing to do, and a failure is forgotten.
        assert!(!t.due(C, t0 + FAILED_RETRY));
    }
}
