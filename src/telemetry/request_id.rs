//! Request ids without the OS: a per-process random prefix, drawn once at start-up, and a
//! counter. Ids only correlate log lines and client reports; they are not secrets and need no
//! unpredictability beyond "distinct across processes" (the prefix) and "distinct within one"
//! (the counter). Making one is an atomic increment and a few byte writes: no syscall, no
//! allocation beyond the header value, and no panic path, so an entropy outage (or a kernel
//! that refuses `getrandom`) cannot take requests down with it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::HeaderValue;

/// Hex digits of the per-process prefix (64 random bits).
const PREFIX_LEN: usize = 16;

/// Makes `<16 hex digits>-<counter in hex>` ids, for example `3f9c0a7e5b21d4c8-1a`.
#[derive(Clone, Debug)]
pub struct ProcessRequestIds {
    prefix: [u8; PREFIX_LEN],
    next: Arc<AtomicU64>,
}

impl ProcessRequestIds {
    /// Ids under the prefix taken from `random` (drawn once, at start-up).
    pub fn new(random: u64) -> Self {
        let mut prefix = [0u8; PREFIX_LEN];
        write_hex(random, &mut prefix);
        ProcessRequestIds { prefix, next: Arc::new(AtomicU64::new(0)) }
    }

    /// The next id as a header value.
    pub fn next_value(&self) -> HeaderValue {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut id = [0u8; PREFIX_LEN + 1 + 16];
        id[..PREFIX_LEN].copy_from_slice(&self.prefix);
        id[PREFIX_LEN] = b'-';
        let digits = (64 - (n | 1).leading_zeros()).div_ceil(4) as usize;
        let end = PREFIX_LEN + 1 + digits;
        write_hex(n, &mut id[PREFIX_LEN + 1..end]);
        // Only [0-9a-f-] were written: always a valid header value.
        HeaderValue::from_bytes(&id[..end]).unwrap_or(HeaderValue::from_static("unknown"))
    }
}

/// Writes the low `4 * out.len()` bits of `value` as lowercase hex, most significant first.
fn write_hex(mut value: u64, out: &mut [u8]) {
    for digit in out.iter_mut().rev() {
        *digit = b"0123456789abcdef"[(value & 0xf) as usize];
        value >>= 4;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_prefix_and_counter() {
        let ids = ProcessRequestIds::new(0x0123_4567_89ab_cdef);
        assert_eq!(ids.next_value(), "0123456789abcdef-0");
        assert_eq!(ids.next_value(), "0123456789abcdef-1");
        for _ in 2..0x1f {
            ids.next_value();
        }
        assert_eq!(ids.next_value(), "0123456789abcdef-1f");
        ids.next.store(u64::MAX, Ordering::Relaxed);
        assert_eq!(ids.next_value(), "0123456789abcdef-ffffffffffffffff");
        assert_eq!(ids.next_value(), "0123456789abcdef-0", "the counter wraps, never panics");
    }

    #[test]
    fn clones_share_the_counter() {
        let a = ProcessRequestIds::new(1);
        let b = a.clone();
        assert_ne!(a.next_value(), b.next_value());
    }
}
