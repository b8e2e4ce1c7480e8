//! Arbitrary text through the CAVP `.rsp` reader of the known-answer tests: records or an
//! error naming the line, never a panic.
// libFuzzer's main; built as a test (`cargo test --all-targets`), libtest's, with no tests.
#![cfg_attr(not(test), no_main)]

#[path = "../../tests/common/cavp.rs"]
#[allow(dead_code)]
mod cavp;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(records) = cavp::parse(&String::from_utf8_lossy(data)) {
        for record in &records {
            assert!(!record.fields.iter().any(|(name, _)| name == "COUNT"));
        }
    }
});
