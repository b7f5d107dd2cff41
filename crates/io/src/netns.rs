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

impl AsFd for NetNs {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
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
