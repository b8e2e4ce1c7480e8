//! Arbitrary DER as a client certificate: the names drbgd reads from it (URI and DNS SANs,
//! the subject CN) are a value or nothing, never a panic, and every name it gives is one the
//! configuration could list.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(identity) = drbgd::callers::ClientIdentity::from_der(data) {
        for name in identity.names() {
            assert!(drbgd::callers::identity::valid_entry(name), "{name:?}");
        }
    }
});
