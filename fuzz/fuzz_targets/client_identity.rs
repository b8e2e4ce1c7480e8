//! Arbitrary DER as a client certificate: the names drbgd reads from it (URI and DNS SANs,
//! the subject CN) are a value or nothing, never a panic; every name is one the configuration
//! could list, and they come most specific first (URIs, then `dns:`, then `cn:`), which is what
//! makes the first listed name decide.
// libFuzzer's main; built as a test (`cargo test --all-targets`), libtest's, with no tests.
#![cfg_attr(not(test), no_main)]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(identity) = drbgd::callers::ClientIdentity::from_der(data) {
        let rank = |name: &str| match name {
            n if n.starts_with("cn:") => 2,
            n if n.starts_with("dns:") => 1,
            _ => 0,
        };
        let names = identity.names();
        for name in names {
            assert!(drbgd::callers::identity::valid_entry(name), "{name:?}");
        }
        assert!(names.windows(2).all(|w| rank(&w[0]) <= rank(&w[1])), "{names:?}");
    }
});
