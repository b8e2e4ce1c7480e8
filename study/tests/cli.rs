//! The binary as its users run it: a small rekey experiment prints both modes' results, and a
//! bad argument is refused with clap's message and a failing exit status. (Being an integration
//! test, it also makes `cargo test --workspace` build the binary, which CI's study step runs.)

use std::process::Command;

fn study(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_drbgd-study")).args(args).output().expect("drbgd-study runs")
}

#[test]
fn rekey_prints_both_modes() {
    let out = study(&["rekey", "--count", "400000", "--reps", "1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("jitter off"), "{stdout}");
    assert!(stdout.contains("jitter on"), "{stdout}");
}

#[test]
fn bad_argument_is_refused() {
    let out = study(&["rekey", "--reps", "many"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid value 'many'"));
}
