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
        StopSignals::block_these(&[Signal::SIGINT, Signal::SIGTERM])
    }

    /// Block `signals` (e.g. SIGTERM and SIGHUP for a process whose
    /// SIGINT goes to its child) and open their descriptor.
    pub fn block_these(signals: &[Signal]) -> io::Result<StopSignals> {
        let mut mask = SigSet::empty();
        for &s in signals {
            mask.add(s);
        }
        mask.thread_block().map_err(io::Error::from)?;
        let fd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(io::Error::from)?;
        Ok(StopSignals { mask, fd })
    }

    /// Whether a stop signal arrived (consumes it).
    pub fn pending(&self) -> bool {
        self.take().is_some()
    }

    /// The stop signal that arrived, if one did (consumed).
    pub fn take(&self) -> Option<Signal> {
        match self.fd.read_signal() {
            Ok(Some(info)) => Signal::try_from(info.ssi_signo as i32).ok(),
            _ => None,
        }
    }

    /// Wait at most `timeout` for a stop signal; whether one arrived
    /// (consumed).
    pub fn wait(&self, timeout: std::time::Duration) -> bool {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        use std::os::fd::AsFd;
        let ms = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
        let mut fds = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
        let _ = poll(&mut fds, PollTimeout::from(ms));
        self.pending()
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        let _ = self.mask.thread_unblock();
    }
}
