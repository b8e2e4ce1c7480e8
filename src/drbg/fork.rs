//! Fork detection: a process-wide generation number that changes in a child after `fork()`.
//!
//! On Linux the generation lives in a page marked `MADV_WIPEONFORK` (as BoringSSL and the vDSO
//! getrandom do): the kernel zeroes it in the child, so the check on every generate is a
//! single atomic load, no syscall. Where the kernel lacks `MADV_WIPEONFORK` (before 4.14) or
//! off Linux, the fallback compares the process id. This module and `randen/aesni.rs` hold the
//! crate's only `unsafe`.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The last generation handed out, in ordinary memory: a child inherits it.
static GENERATION: AtomicU64 = AtomicU64::new(1);
static DETECTOR: OnceLock<Detector> = OnceLock::new();

enum Detector {
    /// The generation, in a page the kernel zeroes in a forked child.
    WipeOnFork(&'static AtomicU64),
    /// The pid seen at the last check.
    Pid(AtomicU32),
}

/// The current fork generation. Equal values mean "same process, no fork in between".
#[inline]
pub fn generation() -> u64 {
    match DETECTOR.get_or_init(Detector::new) {
        Detector::WipeOnFork(page) => {
            let g = page.load(Ordering::Acquire);
            if g != 0 { g } else { after_fork_wiped(page) }
        }
        Detector::Pid(pid) => {
            if pid.load(Ordering::Relaxed) == std::process::id() {
                GENERATION.load(Ordering::Acquire)
            } else {
                after_fork_pid(pid)
            }
        }
    }
}

/// Which mechanism is in use: `"wipeonfork"` or `"pid"`.
pub fn mechanism() -> &'static str {
    match DETECTOR.get_or_init(Detector::new) {
        Detector::WipeOnFork(_) => "wipeonfork",
        Detector::Pid(_) => "pid",
    }
}

#[cold]
fn after_fork_wiped(page: &AtomicU64) -> u64 {
    let next = GENERATION.fetch_add(1, Ordering::AcqRel) + 1;
    match page.compare_exchange(0, next, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => next,
        Err(current) => current,
    }
}

#[cold]
fn after_fork_pid(pid: &AtomicU32) -> u64 {
    pid.store(std::process::id(), Ordering::Relaxed);
    GENERATION.fetch_add(1, Ordering::AcqRel) + 1
}

impl Detector {
    fn new() -> Self {
        match wipe_on_fork_page() {
            Some(page) => {
                page.store(GENERATION.load(Ordering::Acquire), Ordering::Release);
                Detector::WipeOnFork(page)
            }
            None => Detector::Pid(AtomicU32::new(std::process::id())),
        }
    }
}

#[cfg(target_os = "linux")]
fn wipe_on_fork_page() -> Option<&'static AtomicU64> {
    // SAFETY: sysconf has no memory-safety preconditions.
    let page_size = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
    // SAFETY: an anonymous private mapping at an address of the kernel's choosing; no existing
    // memory is touched. The result is checked against MAP_FAILED below.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            page_size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return None;
    }
    // SAFETY: `ptr..ptr+page_size` is the mapping just created and owned by this function.
    let advised = unsafe { libc::madvise(ptr, page_size, libc::MADV_WIPEONFORK) };
    if advised != 0 {
        // SAFETY: unmaps exactly the mapping created above, which nothing else references.
        unsafe { libc::munmap(ptr, page_size) };
        return None;
    }
    // SAFETY: the mapping is page-aligned (so aligned for AtomicU64), zero-filled (a valid
    // AtomicU64), readable and writable, and never unmapped: it lives for the whole process,
    // so a 'static shared reference is sound. All access goes through the atomic.
    Some(unsafe { &*ptr.cast::<AtomicU64>() })
}

#[cfg(not(target_os = "linux"))]
fn wipe_on_fork_page() -> Option<&'static AtomicU64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_within_a_process() {
        let a = generation();
        assert_ne!(a, 0);
        assert_eq!(generation(), a);
        #[cfg(target_os = "linux")]
        assert_eq!(mechanism(), "wipeonfork");
    }
}
