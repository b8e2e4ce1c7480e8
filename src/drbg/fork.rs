//! Fork detection: a process-wide generation number that changes in a child after `fork()`,
//! and when this process's virtual machine was cloned or restored from a snapshot (a fork of
//! the whole machine: [`new_vm_generation`], called by the VM generation listener).
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
/// VM generations seen (clones and snapshot restores), counted in the high bits of
/// [`generation`].
static VM_GENERATION: AtomicU64 = AtomicU64::new(0);
/// Where the VM count starts in [`generation`]: fork generations stay far below 2^40.
const VM_SHIFT: u32 = 40;
static DETECTOR: OnceLock<Detector> = OnceLock::new();

enum Detector {
    /// The generation, in a page the kernel zeroes in a forked child.
    WipeOnFork(&'static AtomicU64),
    /// The pid seen at the last check.
    Pid(AtomicU32),
}

/// The current generation. Equal values mean "same process, no fork and no VM clone or
/// snapshot restore seen in between".
#[inline]
pub fn generation() -> u64 {
    let process = match DETECTOR.get_or_init(Detector::new) {
        Detector::WipeOnFork(page) => {
            let g = page.load(Ordering::Acquire);
            if g != 0 { g } else { after_fork_wiped(page) }
        }
        Detector::Pid(pid) => pid_generation(pid, &GENERATION, std::process::id(), || {}),
    };
    process.wrapping_add(VM_GENERATION.load(Ordering::Acquire) << VM_SHIFT)
}

/// The machine this process runs on is a new VM generation (cloned, or restored from a
/// snapshot): every generator reseeds before its next output, as after a fork.
pub fn new_vm_generation() {
    VM_GENERATION.fetch_add(1, Ordering::AcqRel);
}

/// Why `now` differs from `seen` (two [`generation`] values): the virtual machine was cloned
/// or restored (`true`), or only the process forked (`false`).
pub fn is_vm_change(seen: u64, now: u64) -> bool {
    seen >> VM_SHIFT != now >> VM_SHIFT
}

/// Which mechanism is in use: `"wipeonfork"` or `"pid"`.
pub fn mechanism() -> &'static str {
    match DETECTOR.get_or_init(Detector::new) {
        Detector::WipeOnFork(_) => "wipeonfork",
        Detector::Pid(_) => "pid",
    }
}

/// Makes this process use the pid fallback, as on kernels without `MADV_WIPEONFORK`. Only
/// effective before the first [`generation`] call; returns whether the fallback is in use.
/// For tests of the fallback (`tests/fork_pid.rs`); both mechanisms are sound.
#[doc(hidden)]
pub fn force_pid_fallback() -> bool {
    // Built (and its atfork handler registered) only if no detector exists yet.
    DETECTOR.get_or_init(Detector::pid);
    mechanism() == "pid"
}

#[cold]
fn after_fork_wiped(page: &AtomicU64) -> u64 {
    let next = GENERATION.fetch_add(1, Ordering::AcqRel) + 1;
    match page.compare_exchange(0, next, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => next,
        Err(current) => current,
    }
}

/// The pid fallback. Invariant: whoever sees `pid == current` also sees the generation bump
/// made for `current`. So the bump comes first, and the pid is published after it with
/// Release (read with Acquire). Publishing the pid first (as before) let a second thread of
/// a forked child see its own pid with the parent's generation and skip the reseed.
/// `between` runs between the bump and the publication (a test hook; `|| {}` otherwise).
#[inline]
fn pid_generation(pid: &AtomicU32, generation: &AtomicU64, current: u32, between: impl FnOnce()) -> u64 {
    if pid.load(Ordering::Acquire) == current {
        return generation.load(Ordering::Acquire);
    }
    after_fork_pid(pid, generation, current, between)
}

#[cold]
fn after_fork_pid(pid: &AtomicU32, generation: &AtomicU64, current: u32, between: impl FnOnce()) -> u64 {
    let next = generation.fetch_add(1, Ordering::AcqRel) + 1;
    between();
    pid.store(current, Ordering::Release);
    next
}

/// `pthread_atfork` child handler: a new generation in every child forked through libc, even
/// one whose pid happens to equal a pid seen before (pid reuse would fool the pid check
/// alone). Only an atomic add: async-signal-safe, as a child handler must be.
#[cfg(unix)]
extern "C" fn bump_in_child() {
    GENERATION.fetch_add(1, Ordering::AcqRel);
}

impl Detector {
    /// The pid fallback, with the atfork handler registered beside it. (A raw `clone(2)`
    /// bypasses the handler; the pid check still catches it.)
    fn pid() -> Self {
        #[cfg(unix)]
        // SAFETY: registers a handler that only touches a static atomic; no pointer is passed.
        unsafe {
            libc::pthread_atfork(None, None, Some(bump_in_child));
        }
        Detector::Pid(AtomicU32::new(std::process::id()))
    }

    fn new() -> Self {
        match wipe_on_fork_page() {
            Some(page) => {
                page.store(GENERATION.load(Ordering::Acquire), Ordering::Release);
                Detector::WipeOnFork(page)
            }
            None => Detector::pid(),
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

    /// The race of the pid fallback, replayed deterministically: thread A of a forked child
    /// (pid 200, parent 100) is inside the fork path when thread B checks. B must never see
    /// the child's pid together with the parent's generation.
    #[test]
    fn pid_fallback_never_pairs_the_new_pid_with_the_old_generation() {
        let pid = AtomicU32::new(100);
        let counter = AtomicU64::new(7);
        let parent_generation = pid_generation(&pid, &counter, 100, || {});
        assert_eq!(parent_generation, 7);
        let mut seen_by_b = None;
        let a = pid_generation(&pid, &counter, 200, || {
            seen_by_b = Some(pid_generation(&pid, &counter, 200, || {}));
        });
        let b = seen_by_b.unwrap();
        assert_ne!(b, parent_generation, "thread B would skip the reseed");
        assert_ne!(a, parent_generation);
        // Both are past the fork; later calls agree with what is published.
        assert_eq!(pid_generation(&pid, &counter, 200, || {}), counter.load(Ordering::Acquire));
    }
}
