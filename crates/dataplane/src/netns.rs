//! Network namespaces, held by file descriptor.
//!
//! A namespace is created by a short-lived thread that `unshare`s its
//! network namespace and opens `/proc/thread-self/ns/net`; the file
//! descriptor keeps the namespace alive, and it disappears by itself when
//! the descriptor is closed and no process lives in it, so nothing is left
//! behind on exit, crash or Ctrl-C (no bind mount under /run/netns).
//! Work inside a namespace runs on a thread that `setns`es into it first:
//! sockets (netlink included) belong to the namespace of the thread that
//! creates them.

use nix::sched::{setns, unshare, CloneFlags};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

/// A network namespace, alive while this value is.
#[derive(Debug)]
pub struct NetNs {
    fd: OwnedFd,
}

fn open_thread_ns() -> io::Result<OwnedFd> {
    Ok(File::open("/proc/thread-self/ns/net")?.into())
}

impl NetNs {
    /// The namespace of the calling thread.
    pub fn current() -> io::Result<NetNs> {
        Ok(NetNs {
            fd: open_thread_ns()?,
        })
    }

    /// A new, empty network namespace (only `lo`, down).
    pub fn create() -> io::Result<NetNs> {
        std::thread::spawn(|| -> io::Result<NetNs> {
            unshare(CloneFlags::CLONE_NEWNET).map_err(io::Error::from)?;
            NetNs::current()
        })
        .join()
        .map_err(|_| io::Error::other("namespace thread panicked"))?
    }

    /// The descriptor (for `setns` and netlink's `IFLA_NET_NS_FD`).
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Enter this namespace on the calling thread.
    pub fn enter(&self) -> io::Result<()> {
        setns(self.fd.as_fd(), CloneFlags::CLONE_NEWNET).map_err(io::Error::from)
    }

    /// Run `f` on a thread inside this namespace and return its result.
    pub fn run<R: Send + 'static>(
        &self,
        f: impl FnOnce() -> io::Result<R> + Send + 'static,
    ) -> io::Result<R> {
        let fd = self.fd.try_clone()?;
        std::thread::spawn(move || {
            setns(fd.as_fd(), CloneFlags::CLONE_NEWNET).map_err(io::Error::from)?;
            f()
        })
        .join()
        .map_err(|_| io::Error::other("namespace thread panicked"))?
    }

    /// A second handle on the same namespace.
    pub fn try_clone(&self) -> io::Result<NetNs> {
        Ok(NetNs {
            fd: self.fd.try_clone()?,
        })
    }
}

/// Spawn `cmd` with its network namespace set to `ns`, and with SIGINT
/// and SIGQUIT restored to their defaults (the caller ignores them while
/// the child runs, as a shell does).
pub fn spawn_in(ns: &NetNs, cmd: &mut std::process::Command) -> io::Result<std::process::Child> {
    use std::os::unix::process::CommandExt;
    let fd = ns.fd();
    // SAFETY: the closure runs in the child between fork and exec; it calls
    // only async-signal-safe functions (setns(2), signal(2)) through libc,
    // touches no locks or allocations, and `fd` stays open in the parent
    // until the spawn returns (the child inherits it).
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                return Err(io::Error::last_os_error());
            }
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        });
    }
    cmd.spawn()
}

/// Ignore SIGINT and SIGQUIT in this process (while a child owns the
/// terminal); the returned guard restores the previous dispositions.
pub fn ignore_interrupts() -> InterruptGuard {
    // SAFETY: signal(2) with SIG_IGN installs no handler code; the previous
    // dispositions are kept to be restored by the guard.
    let (int, quit) = unsafe {
        (
            libc::signal(libc::SIGINT, libc::SIG_IGN),
            libc::signal(libc::SIGQUIT, libc::SIG_IGN),
        )
    };
    InterruptGuard { int, quit }
}

/// Restores SIGINT and SIGQUIT when dropped.
#[derive(Debug)]
pub struct InterruptGuard {
    int: libc::sighandler_t,
    quit: libc::sighandler_t,
}

impl Drop for InterruptGuard {
    fn drop(&mut self) {
        // SAFETY: restores dispositions obtained from signal(2) above.
        unsafe {
            libc::signal(libc::SIGINT, self.int);
            libc::signal(libc::SIGQUIT, self.quit);
        }
    }
}

/// A pidfd for `pid`: polls readable when the process exits.
pub fn pidfd(pid: u32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new
    // descriptor (or -1); no memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor owned by nobody else.
    Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as RawFd) })
}
