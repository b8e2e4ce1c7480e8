//! A real `fork()` with the pid fallback (kernels before 4.14, other systems), forced before
//! the first generation check. This binary holds one test: the fallback is process-wide.

#[path = "common/fork.rs"]
mod common;

#[test]
fn pid_fallback_child_and_grandchild_never_repeat_the_parent() {
    assert!(drbgd::drbg::fork::force_pid_fallback(), "the fallback must be in use");
    common::child_and_grandchild_never_repeat_the_parent();
}
