//! Chunk buffers of streamed output, recycled: a chunk handed to the transport comes back here
//! when the transport drops it (sent, or the client went away), so a long stream allocates no
//! memory per chunk, and the kernel maps and zeroes no fresh pages for it (a 10^7-bit binary
//! response spent about a fifth of its CPU in page faults before, see benches/README.md).
//!
//! A buffer is zeroed when it comes back (a memset, no page faults): no output waits in the
//! free list for the next stream. [`Buffers::take`] hands it out to be overwritten whole (by
//! the generator) all the same. The list keeps at most [`KEEP_BYTES`] of buffers.
//!
//! A lent buffer carries the [`Permit`] of the stream budget it was generated under, given
//! back with it (`super::budget`). A buffer whose capacity grew past the largest chunk's cost
//! is freed, not kept, so a recycled buffer never holds more than its permit counts.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;

use super::budget::Permit;

/// Capacity kept for reuse, in bytes (170 chunks of the default 48 KiB); buffers beyond it
/// are freed.
const KEEP_BYTES: usize = 8 << 20;

/// The free list.
#[derive(Debug)]
pub struct Buffers {
    free: Mutex<Free>,
    /// The largest capacity kept (a chunk's cost in the stream budget).
    max_capacity: usize,
}

#[derive(Debug, Default)]
struct Free {
    buffers: Vec<Vec<u8>>,
    /// Their capacities in all.
    bytes: usize,
}

impl Buffers {
    /// An empty free list that keeps buffers of at most `max_capacity` bytes.
    pub fn new(max_capacity: usize) -> Buffers {
        Buffers { free: Mutex::default(), max_capacity }
    }

    /// A buffer of exactly `len` bytes, zeroed, to be overwritten whole: recycled where one is
    /// free, new otherwise.
    pub fn take(&self, len: usize) -> Vec<u8> {
        let mut buf = self.pop();
        if buf.len() < len {
            buf.resize(len, 0);
        }
        buf.truncate(len);
        buf
    }

    /// An empty buffer with whatever capacity a recycled one has, to append to.
    pub fn take_empty(&self) -> Vec<u8> {
        let mut buf = self.pop();
        buf.clear();
        buf
    }

    /// `buf` as shared bytes for the transport; it comes back to `buffers` when dropped, and
    /// `budget` (the stream budget's bytes it was generated under) with it.
    pub fn share(buffers: &Arc<Buffers>, buf: Vec<u8>, budget: Option<Permit>) -> Bytes {
        Bytes::from_owner(Lent { buf, home: buffers.clone(), _budget: budget })
    }

    /// Takes back a scratch buffer that never left the service (wiped here).
    pub fn give_back(&self, buf: Vec<u8>) {
        self.put(buf);
    }

    fn pop(&self) -> Vec<u8> {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        let buf = free.buffers.pop().unwrap_or_default();
        free.bytes -= buf.capacity();
        buf
    }

    /// Takes `buf` back if there is room for it, zeroed over its whole capacity (a last,
    /// shorter chunk leaves an earlier one's bytes past its length).
    fn put(&self, mut buf: Vec<u8>) {
        let capacity = buf.capacity();
        if capacity > self.max_capacity || capacity == 0 {
            super::wiped::wipe(&mut buf);
            return;
        }
        buf.fill(0);
        buf.resize(capacity, 0);
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        if free.bytes + capacity <= KEEP_BYTES {
            free.bytes += capacity;
            free.buffers.push(buf);
        }
    }

    /// Buffers waiting for reuse (tests).
    #[cfg(test)]
    pub fn free(&self) -> usize {
        self.free.lock().unwrap_or_else(PoisonError::into_inner).buffers.len()
    }
}

/// A buffer lent to the transport as [`Bytes`]. Its budget is given back after the buffer
/// (fields drop after `Drop::drop`).
struct Lent {
    buf: Vec<u8>,
    home: Arc<Buffers>,
    _budget: Option<Permit>,
}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        self.home.put(std::mem::take(&mut self.buf));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_chunk_comes_back_and_is_reused_without_reallocating() {
        let buffers = Arc::new(Buffers::new(KEEP_BYTES));
        let mut buf = buffers.take(4096);
        buf.fill(7);
        let ptr = buf.as_ptr();
        let cap = buf.capacity();
        let bytes = Buffers::share(&buffers, buf, None);
        let copy = bytes.clone();
        drop(bytes);
        assert_eq!(buffers.free(), 0, "still lent while any clone lives");
        assert_eq!(copy.len(), 4096);
        drop(copy);
        assert_eq!(buffers.free(), 1);
        let again = buffers.take(4096);
        assert_eq!((again.as_ptr(), again.capacity()), (ptr, cap), "the same allocation");
        // Zeroed on its way back: no earlier output waits in the free list.
        assert!(again.iter().all(|b| *b == 0));
        // A shorter last chunk: the bytes past its length are zeroed too.
        let mut again = again;
        again.fill(9);
        again.truncate(100);
        drop(Buffers::share(&buffers, again, None));
        {
            let free = buffers.free.lock().unwrap();
            let kept = &free.buffers[0];
            assert_eq!(kept.len(), kept.capacity(), "zeroed over its whole capacity");
            assert!(kept.iter().all(|b| *b == 0));
        }
        assert_eq!(buffers.take(1000).len(), 1000);
        let longer = buffers.take(8192);
        assert_eq!(longer.len(), 8192);
    }

    #[test]
    fn at_most_keep_bytes_are_kept() {
        let buffers = Arc::new(Buffers::new(KEEP_BYTES));
        let size = KEEP_BYTES / 10;
        let lent: Vec<Bytes> = (0..15).map(|_| Buffers::share(&buffers, buffers.take(size), None)).collect();
        drop(lent);
        assert_eq!(buffers.free(), 10);
        assert!(buffers.free.lock().unwrap().bytes <= KEEP_BYTES);
    }

    #[test]
    fn a_buffer_grown_past_the_largest_chunk_is_not_kept() {
        let buffers = Arc::new(Buffers::new(1000));
        let mut grown = buffers.take_empty();
        grown.reserve_exact(4000);
        drop(Buffers::share(&buffers, grown, None));
        assert_eq!(buffers.free(), 0);
        drop(Buffers::share(&buffers, buffers.take(1000), None));
        assert_eq!(buffers.free(), 1);
    }
}
