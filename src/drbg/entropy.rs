//! Where seed material comes from: one [`EntropySource`] trait, the OS in production
//! ([`OsEntropy`], `getrandom`), and a scripted source for tests that can be made to fail.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The entropy source failed; no seed material was produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("entropy source failed")]
pub struct EntropyError;

/// A source of full-entropy seed bytes.
pub trait EntropySource: Send + Sync + fmt::Debug {
    /// Fills `buf` completely with fresh entropy.
    ///
    /// # Errors
    /// [`EntropyError`] if the source cannot deliver; `buf` must then not be used.
    fn fill(&self, buf: &mut [u8]) -> Result<(), EntropyError>;
}

/// The operating system's CSPRNG (`getrandom(2)` on Linux).
#[derive(Debug, Default, Clone, Copy)]
pub struct OsEntropy;

impl EntropySource for OsEntropy {
    fn fill(&self, buf: &mut [u8]) -> Result<(), EntropyError> {
        getrandom::fill(buf).map_err(|_| EntropyError)
    }
}

/// A test source: replays scripted bytes (then the OS), and fails while switched off.
#[derive(Default)]
pub struct ScriptedEntropy {
    script: Mutex<VecDeque<u8>>,
    failing: AtomicBool,
}

impl fmt::Debug for ScriptedEntropy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedEntropy")
            .field("failing", &self.failing.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl ScriptedEntropy {
    /// A source that first returns `script`, then OS entropy.
    pub fn new(script: &[u8]) -> Self {
        ScriptedEntropy {
            script: Mutex::new(script.iter().copied().collect()),
            failing: AtomicBool::new(false),
        }
    }

    /// A source that fails every request.
    pub fn failing() -> Self {
        let s = Self::default();
        s.set_failing(true);
        s
    }

    /// Switches failure on or off.
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }
}

impl EntropySource for ScriptedEntropy {
    fn fill(&self, buf: &mut [u8]) -> Result<(), EntropyError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(EntropyError);
        }
        let mut script = self.script.lock().map_err(|_| EntropyError)?;
        let from_script = script.len().min(buf.len());
        for (slot, byte) in buf.iter_mut().zip(script.drain(..from_script)) {
            *slot = byte;
        }
        drop(script);
        OsEntropy.fill(&mut buf[from_script..])
    }
}
