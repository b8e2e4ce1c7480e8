//! Arbitrary configuration files and environment overrides through the settings loader
//! (figment's TOML and `DRBGD__SECTION__KEY` providers, then drbgd's validation): a result or
//! an error naming the key, never a panic; and what loads prints (`--print-config`) as
//! settings that load back to the same.
//!
//! Input: lines `KEY=value` up to the first empty line (each set as `DRBGD__KEY` in the
//! environment), then the TOML file.
// libFuzzer's main; built as a test (`cargo test --all-targets`), libtest's, with no tests.
#![cfg_attr(not(test), no_main)]
// figment's `Jail` takes a closure returning its own error type, which is large.
#![allow(clippy::result_large_err)]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (env, toml) = text.split_once("\n\n").unwrap_or(("", &text));
    figment::Jail::expect_with(|jail| {
        for line in env.lines() {
            if let Some((key, value)) = line.split_once('=')
                && !key.is_empty()
                && !key.contains(['\0', '='])
                && !value.contains('\0')
            {
                jail.set_env(format!("DRBGD__{key}"), value);
            }
        }
        jail.create_file("drbgd.toml", toml)?;
        if let Ok(settings) =
            drbgd::config::Settings::load(Some("drbgd.toml".as_ref()), serde_json::json!({}))
        {
            let printed = serde_json::to_value(&settings).expect("settings serialize");
            let again = drbgd::config::Settings::load(None, &printed).expect("printed settings load back");
            assert_eq!(serde_json::to_value(&again).unwrap(), printed);
        }
        Ok(())
    });
});
