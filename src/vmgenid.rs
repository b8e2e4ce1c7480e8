//! VM clone and snapshot safety: a thread that listens for the kernel's `NEW_VMGENID=1` uevent
//! (sent by the vmgenid driver when the VM generation ID changes: the VM was cloned, or
//! restored from a snapshot) and starts a new generation ([`fork::new_vm_generation`]), so every
//! shard of every generator reseeds before its next output, as after a fork.
//!
//! What it covers: a VM whose kernel has the vmgenid driver (Linux 5.18+, on hypervisors that
//! expose the VM generation ID: Hyper-V, QEMU `-device vmgenid`, VMware, Firecracker's
//! snapshots) and a process in the initial network namespace, where kernel uevents are
//! broadcast. What it cannot: the event arrives after the clone resumes, so output served in
//! between (typically well under a millisecond, up to the scheduling of this thread) may repeat
//! across clones; a process in a network namespace of its own (a Kubernetes pod) receives no
//! kernel uevents, and there the kernel's own reseed of `getrandom` on a VM generation change
//! (5.18+) and the generators' byte and age limits are what bound the repetition. The
//! listener is best effort: without the netlink socket it logs at debug and stops.

use std::io;

use crate::drbg::fork;

/// A source of kernel uevents, one message per call (the netlink socket; a test's channel).
pub trait Uevents: Send {
    /// The next uevent message: NUL-separated `KEY=VALUE` strings after a header.
    ///
    /// # Errors
    /// The source failed or ended.
    fn next(&mut self) -> io::Result<Vec<u8>>;
}

/// Whether `message` announces a new VM generation.
pub fn is_new_vm_generation(message: &[u8]) -> bool {
    message.split(|&b| b == 0).any(|field| field == b"NEW_VMGENID=1")
}

/// Reads uevents until the source fails, starting a new VM generation on each announcement.
pub fn listen(mut source: impl Uevents) {
    loop {
        match source.next() {
            Ok(message) if is_new_vm_generation(&message) => {
                fork::new_vm_generation();
                tracing::warn!(
                    "new VM generation (cloned or restored from a snapshot): every generator reseeds before its next output"
                );
            }
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(error = %e, "uevent listener stopped");
                return;
            }
        }
    }
}

/// Starts the listener on the kernel's uevent socket in a thread of its own, where it can; once
/// per process (later calls do nothing).
pub fn start() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(start_now);
}

fn start_now() {
    match Netlink::open() {
        Ok(socket) => {
            let spawned = std::thread::Builder::new().name("vmgenid".into()).spawn(move || listen(socket));
            if let Err(e) = spawned {
                tracing::debug!(error = %e, "no uevent listener thread");
            }
        }
        Err(e) => tracing::debug!(error = %e, "no uevent socket: VM generation changes are not watched"),
    }
}

/// The kernel's uevent multicast group on a `NETLINK_KOBJECT_UEVENT` socket.
struct Netlink(std::os::fd::OwnedFd);

impl Netlink {
    #[cfg(target_os = "linux")]
    fn open() -> io::Result<Self> {
        use std::os::fd::FromRawFd;
        // SAFETY: socket(2) with constant arguments; the result is checked before use.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                libc::NETLINK_KOBJECT_UEVENT,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a socket just created and owned by nothing else.
        let socket = Netlink(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) });
        // SAFETY: an all-zero sockaddr_nl is valid; the fields that matter are set below.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        addr.nl_groups = 1; // the kernel's uevent group
        // SAFETY: `addr` is a valid sockaddr_nl of the length given; `fd` is open.
        let bound = unsafe {
            libc::bind(
                fd,
                (&raw const addr).cast::<libc::sockaddr>(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if bound != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(socket)
    }

    #[cfg(not(target_os = "linux"))]
    fn open() -> io::Result<Self> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "uevents are Linux's"))
    }
}

impl Uevents for Netlink {
    fn next(&mut self) -> io::Result<Vec<u8>> {
        use std::os::fd::AsRawFd;
        let mut buf = vec![0u8; 8192];
        loop {
            // SAFETY: `buf` is writable for its length; the fd is open for the life of `self`.
            let n = unsafe { libc::recv(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n >= 0 {
                buf.truncate(n as usize);
                return Ok(buf);
            }
            let e = io::Error::last_os_error();
            // ENOBUFS: uevents were dropped while we were slow; keep listening.
            if e.kind() != io::ErrorKind::Interrupted && e.raw_os_error() != Some(libc::ENOBUFS) {
                return Err(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A uevent source of the given messages, then the end.
    struct Script(std::vec::IntoIter<Vec<u8>>);

    impl Uevents for Script {
        fn next(&mut self) -> io::Result<Vec<u8>> {
            self.0.next().ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "done"))
        }
    }

    /// The vmgenid driver's uevent (drivers/virt/vmgenid.c: `kobject_uevent_env(.., KOBJ_CHANGE,
    /// {"NEW_VMGENID=1"})`), as the kernel frames it.
    const VMGENID: &[u8] = b"change@/devices/LNXSYSTM:00/VMGENID:00\0ACTION=change\0DEVPATH=/devices/LNXSYSTM:00/VMGENID:00\0SUBSYSTEM=acpi\0NEW_VMGENID=1\0SEQNUM=4021\0";

    #[test]
    fn only_the_vmgenid_announcement_counts() {
        assert!(is_new_vm_generation(VMGENID));
        assert!(!is_new_vm_generation(b"add@/devices/x\0ACTION=add\0NEW_VMGENID=0\0"));
        assert!(!is_new_vm_generation(b"change@/devices/x\0ACTION=change\0XNEW_VMGENID=1\0"));
        assert!(!is_new_vm_generation(b""));
    }

    /// An injected announcement through the listener's socket abstraction starts a new
    /// generation: a generator's next output comes after a reseed (reason `vm_fork`), none
    /// before; the readiness check reseeds the others at once.
    #[test]
    fn an_announcement_reseeds_every_generator_before_its_next_output() {
        use std::sync::Arc;
        let pool = crate::drbg::Pool::new(
            &crate::drbg::PoolConfig { shards: 1, ..Default::default() },
            Arc::new(crate::drbg::entropy::OsEntropy),
        )
        .unwrap();
        let alg = crate::drbg::Algorithm::ChaCha20;
        let mut out = [0u8; 32];
        pool.fill(alg, &mut out, false).unwrap();
        let other = crate::drbg::Algorithm::Aes256Ctr;
        let vm_forks =
            |pool: &crate::drbg::Pool, alg| pool.stats().reseeds(alg, crate::drbg::ReseedReason::VmFork);
        let forks = |pool: &crate::drbg::Pool| vm_forks(pool, alg);
        let before = forks(&pool);
        let other_before = vm_forks(&pool, other);
        let generation = fork::generation();
        listen(Script(vec![b"add@/devices/other\0ACTION=add\0".to_vec(), VMGENID.to_vec()].into_iter()));
        assert_ne!(fork::generation(), generation, "a new generation");
        pool.fill(alg, &mut out, false).unwrap();
        assert_eq!(forks(&pool), before + 1, "reseeded before the output");
        pool.fill(alg, &mut out, false).unwrap();
        assert_eq!(forks(&pool), before + 1, "once");
        assert_eq!(vm_forks(&pool, other), other_before, "not yet asked");
        assert!(pool.all_ready());
        assert_eq!(vm_forks(&pool, other), other_before + 1, "reseeded by the readiness check");
        assert_eq!(pool.stats().reseeds(alg, crate::drbg::ReseedReason::Fork), 0, "not a process fork");
    }
}
