//! The stop signals (SIGINT, SIGTERM) as a descriptor the runner polls.

use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use std::io;

/// SIGINT and SIGTERM blocked in the calling thread (and so in every
/// thread it starts from now on) and delivered through a non-blocking
/// signalfd instead. Unblocked again when dropped.
pub struct StopSignals {
    mask: SigSet,
    /// Readable when a stop signal is pending.
    pub fd: SignalFd,
}

impl StopSignals {
    /// Block the stop signals and open their descriptor.
    pub fn block() -> io::Result<StopSignals> {
        let mut mask = SigSet::empty();
        mask.add(Signal::SIGINT);
        mask.add(Signal::SIGTERM);
        mask.thread_block().map_err(io::Error::from)?;
        let fd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(io::Error::from)?;
        Ok(StopSignals { mask, fd })
    }

    /// Whether a stop signal arrived (consumes it).
    pub fn pending(&self) -> bool {
        matches!(self.fd.read_signal(), Ok(Some(_)))
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        let _ = self.mask.thread_unblock();
    }
}
