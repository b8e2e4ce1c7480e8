//! Arbitrary API keys files (`<caller> <sha256>` lines, bare digests, comments) through the
//! callers' registry, at start-up and as a reload: a registry or an error, never a panic, and
//! no digest echoed in a warning.
// libFuzzer's main; built as a test (`cargo test --all-targets`), libtest's, with no tests.
#![cfg_attr(not(test), no_main)]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    static PATH: OnceLock<std::path::PathBuf> = OnceLock::new();
    let path =
        PATH.get_or_init(|| std::env::temp_dir().join(format!("drbgd-fuzz-keys-{}", std::process::id())));
    std::fs::write(path, data).unwrap();
    let mut settings = drbgd_fuzz::settings();
    settings.auth.api_keys_file = Some(path.clone());
    let metrics = drbgd::metrics::Metrics::new(Arc::default());
    let Ok((registry, warnings)) = drbgd::callers::Registry::build(&settings, &metrics, None) else { return };
    let (again, _) = drbgd::callers::Registry::build(&settings, &metrics, Some(&registry))
        .expect("a reload of the same file");
    assert_eq!(registry.callers().len(), again.callers().len());
    for word in String::from_utf8_lossy(data).split_whitespace().filter(|w| w.len() == 64) {
        assert!(warnings.iter().all(|w| !w.contains(word)), "a digest echoed: {warnings:?}");
    }
});
