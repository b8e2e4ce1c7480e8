//! The real-`fork()` check shared by `tests/fork.rs` (MADV_WIPEONFORK) and `tests/fork_pid.rs`
//! (the pid fallback): parent, child and grandchild each generate from every algorithm and
//! shard. Without fork safety the child would repeat exactly what the parent produces next
//! (their states are identical copies); with it, the child reseeds first. Outputs cross a pipe
//! back to the test.

use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::sync::Arc;

use drbgd::drbg::entropy::OsEntropy;
use drbgd::drbg::{Algorithm, Pool, PoolConfig, ReseedReason};

const SHARDS: usize = 2;
const LEN: usize = 32;
/// One record per (algorithm, shard).
const RECORD: usize = Algorithm::ALL.len() * SHARDS * LEN;

fn draw_all(pool: &Pool) -> Vec<u8> {
    let mut out = Vec::with_capacity(RECORD);
    for alg in Algorithm::ALL {
        for shard in 0..SHARDS {
            let mut buf = [0u8; LEN];
            pool.fill_on_shard(shard, alg, &mut buf, false).unwrap();
            out.extend_from_slice(&buf);
        }
    }
    out
}

/// Forks; the child runs `child` (whose bytes go to the returned pipe reader) and exits.
fn fork_with(child: impl FnOnce(&mut std::fs::File)) -> (libc::pid_t, std::fs::File) {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe(2) to fill.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: this binary holds a single test, so no other thread holds a lock the child
    // needs; the child only generates, writes to its pipe and `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: fds[1] is the write end just created, owned by this process from here on.
        let mut w = unsafe { std::fs::File::from_raw_fd(fds[1]) };
        child(&mut w);
        drop(w);
        // SAFETY: _exit ends the child without running the parent's atexit handlers.
        unsafe { libc::_exit(0) };
    }
    // SAFETY: closing the write end, which the parent never uses.
    unsafe { libc::close(fds[1]) };
    // SAFETY: fds[0] is the read end just created; the File takes sole ownership.
    let reader = unsafe { std::fs::File::from_raw_fd(fds[0]) };
    (pid, reader)
}

fn wait(pid: libc::pid_t) {
    let mut status = 0;
    // SAFETY: waiting for our own child with a valid status pointer.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child failed: {status}");
}

/// Forks twice and checks that no process repeats another's output.
pub fn child_and_grandchild_never_repeat_the_parent() {
    let pool =
        Pool::new(&PoolConfig { shards: SHARDS, ..PoolConfig::default() }, Arc::new(OsEntropy)).unwrap();
    let before = draw_all(&pool);
    assert_eq!(before.len(), RECORD);

    let (pid, mut pipe) = fork_with(|w| {
        let child = draw_all(&pool);
        // The child forks again; the grandchild writes first, then the child.
        let (gpid, mut gpipe) = fork_with(|gw| {
            gw.write_all(&draw_all(&pool)).unwrap();
        });
        let mut grand = Vec::new();
        gpipe.read_to_end(&mut grand).unwrap();
        wait(gpid);
        let forks = pool.stats().reseeds(Algorithm::ChaCha20, ReseedReason::Fork);
        w.write_all(&grand).unwrap();
        w.write_all(&child).unwrap();
        w.write_all(&forks.to_le_bytes()).unwrap();
    });
    let mut from_child = Vec::new();
    pipe.read_to_end(&mut from_child).unwrap();
    wait(pid);
    assert_eq!(from_child.len(), 2 * RECORD + 8, "child reported everything");

    let parent = draw_all(&pool);
    let (grand, rest) = from_child.split_at(RECORD);
    let (child, forks) = rest.split_at(RECORD);
    for (i, ((p, c), g)) in parent.chunks(LEN).zip(child.chunks(LEN)).zip(grand.chunks(LEN)).enumerate() {
        let (alg, shard) = (Algorithm::ALL[i / SHARDS], i % SHARDS);
        assert_ne!(p, c, "{alg} shard {shard}: child repeated the parent");
        assert_ne!(p, g, "{alg} shard {shard}: grandchild repeated the parent");
        assert_ne!(c, g, "{alg} shard {shard}: grandchild repeated the child");
        assert!(!before.chunks(LEN).any(|b| b == c || b == g));
    }
    // The child reseeded every ChaCha20 shard for the fork; the parent never did.
    assert_eq!(u64::from_le_bytes(forks.try_into().unwrap()), SHARDS as u64);
    assert_eq!(pool.stats().reseeds(Algorithm::ChaCha20, ReseedReason::Fork), 0);
}
