//! A real `fork()` with the default detector (`MADV_WIPEONFORK` on Linux).

#[path = "common/fork.rs"]
mod common;

#[test]
fn child_and_grandchild_never_repeat_the_parent() {
    #[cfg(target_os = "linux")]
    assert_eq!(drbgd::drbg::fork::mechanism(), "wipeonfork");
    common::child_and_grandchild_never_repeat_the_parent();
}
