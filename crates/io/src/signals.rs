//! The stop signals as a descriptor a live command polls: the one way
//! every live mode (and pipelabd) hears that it should stop.
//!
//! SIGHUP (a closed terminal, a dropped ssh session), SIGINT (Ctrl-C),
//! SIGQUIT (Ctrl-\) and SIGTERM (`kill`, a service manager) all mean an
//! orderly stop: the mode stops forwarding, drains, and undoes what it
//! changed on the host ([`STOP`]). None of them may kill the process by
//! its default action while the host is changed, so they are blocked
//! before the host is touched and before any thread starts (threads
//! inherit the mask; a thread without it would take a process-directed
//! signal and die by it), and read from a signalfd instead. SIGKILL
//! cannot be caught: what a killed process leaves is undone from the
//! host ledger by the next command, and rules that would drop traffic
//! are tied to the process's own netlink socket, so the kernel removes
//! them with it.

use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use std::io;

/// The signals that stop a live command in order: SIGHUP, SIGINT,
/// SIGQUIT and SIGTERM.
pub const STOP: [Signal; 4] = [
    Signal::SIGHUP,
    Signal::SIGINT,
    Signal::SIGQUIT,
    Signal::SIGTERM,
];

/// `si_code` of a signal the kernel sent on its own behalf, such as the
/// terminal's SIGINT and SIGQUIT to its foreground process group.
const SI_KERNEL: i32 = 0x80;

/// One stop signal that arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrived {
    /// Which.
    pub signal: Signal,
    /// Sent by the terminal (Ctrl-C, Ctrl-\, a hang-up) to the whole
    /// foreground process group, rather than by a process to this one.
    pub from_terminal: bool,
}

/// The stop signals ([`STOP`]) blocked in the calling thread (and so in
/// every thread it starts from now on) and delivered through a
/// non-blocking signalfd instead. Unblocked again when dropped.
pub struct StopSignals {
    mask: SigSet,
    /// Readable when a stop signal is pending.
    pub fd: SignalFd,
}

impl StopSignals {
    /// Block the stop signals ([`STOP`]) and open their descriptor. Call
    /// it before the host changes and before any thread starts.
    pub fn block() -> io::Result<StopSignals> {
        let mut mask = SigSet::empty();
        for s in STOP {
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
        self.take_arrived().map(|a| a.signal)
    }

    /// The stop signal that arrived, and who sent it, if one did
    /// (consumed).
    pub fn take_arrived(&self) -> Option<Arrived> {
        match self.fd.read_signal() {
            Ok(Some(info)) => Signal::try_from(info.ssi_signo as i32)
                .ok()
                .map(|signal| Arrived {
                    signal,
                    from_terminal: info.ssi_code == SI_KERNEL,
                }),
            _ => None,
        }
    }

    /// Wait at most `timeout` for a stop signal; whether one arrived
    /// (consumed).
    pub fn wait(&self, timeout: std::time::Duration) -> bool {
        self.wait_for(Some(timeout)).is_some()
    }

    /// Wait for a stop signal, at most `timeout` (`None`: as long as it
    /// takes); the one that arrived (consumed).
    pub fn wait_for(&self, timeout: Option<std::time::Duration>) -> Option<Signal> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        use std::os::fd::AsFd;
        loop {
            let t = match timeout {
                Some(t) => PollTimeout::from(u16::try_from(t.as_millis()).unwrap_or(u16::MAX)),
                None => PollTimeout::NONE,
            };
            let mut fds = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
            let _ = poll(&mut fds, t);
            let got = self.take();
            if got.is_some() || timeout.is_some() {
                return got;
            }
        }
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        let _ = self.mask.thread_unblock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every stop signal sent to the process reaches the descriptor
    /// instead of ending the process by its default action.
    #[test]
    fn every_stop_signal_is_read_not_fatal() {
        // Runs in a thread of its own: the mask is the thread's, and a
        // signal raised in this thread reaches it alone.
        std::thread::spawn(|| {
            let s = StopSignals::block().expect("block");
            for sig in STOP {
                // raise(3): to the calling thread.
                nix::sys::signal::raise(sig).expect("raise");
                let got = s.take_arrived().expect("the signal is pending");
                assert_eq!(got.signal, sig);
                assert!(!got.from_terminal, "{sig}: sent by a process");
            }
            assert_eq!(s.wait_for(Some(std::time::Duration::ZERO)), None);
        })
        .join()
        .expect("thread");
    }
}
