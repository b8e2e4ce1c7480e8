//! Memory for generator state that stays out of core dumps and swap.
//!
//! The shards' generator slots live in an anonymous mapping of their own, marked
//! `MADV_DONTDUMP` (a crash dump or `gcore` leaves those pages out) and, where
//! `RLIMIT_MEMLOCK` allows, `mlock`ed (never written to swap). Both are best effort: if the
//! kernel refuses, the state is still correct and zeroized on drop, and [`Protection`] says
//! what was not obtained so the application can warn. Off Linux the slice lives on the heap.
//!
//! With `fork.rs` and `randen/aesni.rs`, this module holds the crate's `unsafe`.

use std::mem::{align_of, size_of};
use std::ops::Deref;
use std::ptr::NonNull;

/// What the kernel granted for a [`SecretSlice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Protection {
    /// The pages are excluded from core dumps (`MADV_DONTDUMP`).
    pub dontdump: bool,
    /// The pages are locked in memory (`mlock`): never swapped.
    pub locked: bool,
}

/// A fixed-length slice in its own dump-excluded, locked-where-possible pages.
pub struct SecretSlice<T> {
    storage: Storage<T>,
    protection: Protection,
}

enum Storage<T> {
    Mapped { ptr: NonNull<T>, len: usize, map_len: usize },
    Heap(Box<[T]>),
}

// SAFETY: a SecretSlice owns its elements exactly like a Box<[T]> does (the mapping is private
// to it and freed only in Drop), so it may cross or be shared between threads when T may.
unsafe impl<T: Send> Send for SecretSlice<T> {}
// SAFETY: as above; shared access only hands out &[T].
unsafe impl<T: Sync> Sync for SecretSlice<T> {}

impl<T> SecretSlice<T> {
    /// Builds `len` elements with `f(0)..f(len - 1)`, in protected pages.
    ///
    /// # Errors
    /// The first error of `f`; the elements built before it are dropped.
    pub fn try_from_fn<E>(len: usize, mut f: impl FnMut(usize) -> Result<T, E>) -> Result<Self, E> {
        let Some(mapping) = Mapping::<T>::new(len) else {
            let heap = (0..len).map(f).collect::<Result<Box<[T]>, E>>()?;
            return Ok(SecretSlice { storage: Storage::Heap(heap), protection: Protection::default() });
        };
        // Protected before anything secret is written into the pages.
        let protection = mapping.protect();
        let mut built = 0;
        while built < len {
            match f(built) {
                // SAFETY: `built < len`, and the mapping has room for `len` aligned Ts; the slot
                // is uninitialized (written once, here).
                Ok(value) => unsafe { mapping.ptr.as_ptr().add(built).write(value) },
                Err(e) => {
                    // SAFETY: exactly the first `built` slots were initialized above.
                    unsafe { drop_slots(mapping.ptr, built) };
                    mapping.unmap();
                    return Err(e);
                }
            }
            built += 1;
        }
        let storage = Storage::Mapped { ptr: mapping.ptr, len, map_len: mapping.map_len };
        Ok(SecretSlice { storage, protection })
    }

    /// What the kernel granted.
    pub fn protection(&self) -> Protection {
        self.protection
    }
}

impl<T> Deref for SecretSlice<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.storage {
            // SAFETY: `ptr` points to `len` initialized Ts that live until Drop.
            Storage::Mapped { ptr, len, .. } => unsafe { std::slice::from_raw_parts(ptr.as_ptr(), *len) },
            Storage::Heap(b) => b,
        }
    }
}

impl<T> Drop for SecretSlice<T> {
    fn drop(&mut self) {
        if let Storage::Mapped { ptr, len, map_len } = self.storage {
            // SAFETY: all `len` slots are initialized and dropped once, here; the elements
            // wipe their own secrets in their Drop.
            unsafe { drop_slots(ptr, len) };
            Mapping { ptr, map_len }.unmap();
        }
    }
}

/// Drops the first `n` elements at `ptr`.
///
/// # Safety
/// `ptr..ptr+n` must be initialized Ts that nothing uses afterwards.
unsafe fn drop_slots<T>(ptr: NonNull<T>, n: usize) {
    // SAFETY: guaranteed by the caller.
    unsafe { std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(ptr.as_ptr(), n)) };
}

/// A raw anonymous mapping sized for some Ts.
struct Mapping<T> {
    ptr: NonNull<T>,
    map_len: usize,
}

impl<T> Mapping<T> {
    #[cfg(target_os = "linux")]
    fn new(len: usize) -> Option<Self> {
        // SAFETY: sysconf has no memory-safety preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
        if align_of::<T>() > page || size_of::<T>() == 0 || len == 0 {
            return None;
        }
        let map_len = size_of::<T>().checked_mul(len)?.div_ceil(page) * page;
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing; no
        // existing memory is touched. The result is checked against MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        Some(Mapping { ptr: NonNull::new(ptr.cast())?, map_len })
    }

    #[cfg(not(target_os = "linux"))]
    fn new(_len: usize) -> Option<Self> {
        None
    }

    /// Marks the pages dump-excluded and tries to lock them.
    #[cfg(target_os = "linux")]
    fn protect(&self) -> Protection {
        let addr = self.ptr.as_ptr().cast::<libc::c_void>();
        // SAFETY: `addr..addr+map_len` is exactly this mapping; madvise and mlock change only
        // the kernel's handling of these pages, not their contents.
        let dontdump = unsafe { libc::madvise(addr, self.map_len, libc::MADV_DONTDUMP) } == 0;
        // SAFETY: as above.
        let locked = unsafe { libc::mlock(addr, self.map_len) } == 0;
        Protection { dontdump, locked }
    }

    #[cfg(not(target_os = "linux"))]
    fn protect(&self) -> Protection {
        Protection::default()
    }

    fn unmap(self) {
        #[cfg(target_os = "linux")]
        // SAFETY: unmaps exactly this mapping, whose elements were all dropped by the caller;
        // munmap also releases a lock held on the pages.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.map_len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The VmFlags line of the mapping holding `addr`, from /proc/self/smaps.
    fn vm_flags(addr: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((lo, hi)) = range.split_once('-')
                && let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = (lo..hi).contains(&addr);
            } else if inside && line.starts_with("VmFlags:") {
                return Some(line.to_owned());
            }
        }
        None
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn pages_are_excluded_from_core_dumps() {
        let s = SecretSlice::try_from_fn(3, |i| Ok::<_, ()>([i as u8; 100])).unwrap();
        assert_eq!(s[2], [2u8; 100]);
        assert!(s.protection().dontdump);
        let flags = vm_flags(s.as_ptr() as usize).expect("mapping in smaps");
        assert!(flags.split_whitespace().any(|f| f == "dd"), "{flags}");
        if s.protection().locked {
            assert!(flags.split_whitespace().any(|f| f == "lo"), "{flags}");
        }
    }

    /// Counts live instances, to check every element is dropped exactly once.
    struct DropCounter(Arc<AtomicUsize>);
    impl Drop for DropCounter {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn elements_are_dropped_once_on_success_and_on_error() {
        let live = Arc::new(AtomicUsize::new(0));
        let make = |i: usize, fail_at: usize| {
            if i == fail_at {
                return Err("refused");
            }
            live.fetch_add(1, Ordering::SeqCst);
            Ok(DropCounter(live.clone()))
        };
        let s = SecretSlice::try_from_fn(5, |i| make(i, usize::MAX)).unwrap();
        assert_eq!((s.len(), live.load(Ordering::SeqCst)), (5, 5));
        drop(s);
        assert_eq!(live.load(Ordering::SeqCst), 0);
        assert_eq!(SecretSlice::try_from_fn(5, |i| make(i, 3)).err(), Some("refused"));
        assert_eq!(live.load(Ordering::SeqCst), 0);
    }
}
