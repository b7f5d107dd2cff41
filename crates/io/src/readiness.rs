//! Which of a runner's many ports have frames waiting.
//!
//! A runner reads each receiving port once per round. With a few ports
//! that is the cheapest way (a read that finds nothing costs one system
//! call); with hundreds (a topology's VNs, one TAP each, most of them
//! idle) those empty reads and a `ppoll` over every descriptor are most
//! of a round's cost. So when [`WATCH_FROM`] or more receiving ports
//! have frames waiting only when their descriptor polls readable
//! ([`crate::backends::Port::readable_when_polled`]: a TAP), one epoll
//! instance watches them, level-triggered: a round reads only the ports
//! it reports (a port left with frames past a full batch is reported
//! again), and the runner waits on the epoll descriptor in place of
//! theirs. The other ports are read every round, as before.

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use std::io;
use std::os::fd::{AsFd, BorrowedFd};

/// Watched ports from which a runner reads by readiness.
pub const WATCH_FROM: usize = 8;

/// Ready ports taken per round, at most (the others are reported again
/// in the next: level-triggered epoll hands them out in turn).
const EVENTS: usize = 256;

/// The watched ports and their epoll instance.
pub(crate) struct Readiness {
    ep: Epoll,
    watched: Vec<bool>,
    events: Vec<EpollEvent>,
}

impl Readiness {
    /// Watch ports `ports` (index, descriptor) out of `n`.
    pub fn new<'a>(
        n: usize,
        ports: impl IntoIterator<Item = (usize, BorrowedFd<'a>)>,
    ) -> io::Result<Readiness> {
        let ep = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
        let mut watched = vec![false; n];
        for (i, fd) in ports {
            ep.add(fd, EpollEvent::new(EpollFlags::EPOLLIN, i as u64))?;
            if let Some(w) = watched.get_mut(i) {
                *w = true;
            }
        }
        Ok(Readiness {
            ep,
            watched,
            events: vec![EpollEvent::empty(); EVENTS],
        })
    }

    /// Whether port `i` is watched (read only when reported ready).
    pub fn watches(&self, i: usize) -> bool {
        self.watched.get(i).copied().unwrap_or(false)
    }

    /// Append the watched ports with something to read (or an error to
    /// report) to `ready`, without waiting.
    pub fn ready(&mut self, ready: &mut Vec<usize>) -> io::Result<()> {
        let n = match self.ep.wait(&mut self.events, EpollTimeout::ZERO) {
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR) => 0,
            Err(e) => return Err(e.into()),
        };
        ready.extend(self.events[..n].iter().map(|e| e.data() as usize));
        Ok(())
    }

    /// The descriptor that polls readable when a watched port is ready.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.ep.0.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixDatagram;

    /// Only the sockets with something waiting are reported, each once,
    /// and a socket read dry is not reported again.
    #[test]
    fn reports_the_ready_ports_alone() {
        let pairs: Vec<(UnixDatagram, UnixDatagram)> = (0..12)
            .map(|_| UnixDatagram::pair().expect("socketpair"))
            .collect();
        // Ports 3..12 watched; 0..3 not.
        let mut r = Readiness::new(
            12,
            pairs
                .iter()
                .enumerate()
                .skip(3)
                .map(|(i, p)| (i, p.1.as_fd())),
        )
        .expect("epoll");
        assert!(!r.watches(0) && r.watches(3) && r.watches(11) && !r.watches(12));
        let mut ready = Vec::new();
        r.ready(&mut ready).expect("wait");
        assert!(ready.is_empty());
        for i in [1, 4, 9] {
            pairs[i].0.send(b"x").expect("send");
        }
        pairs[9].0.send(b"y").expect("send");
        r.ready(&mut ready).expect("wait");
        ready.sort();
        // Port 1 is not watched: a runner reads it every round anyway.
        assert_eq!(ready, vec![4, 9]);
        // Level-triggered: still ready until read.
        ready.clear();
        r.ready(&mut ready).expect("wait");
        ready.sort();
        assert_eq!(ready, vec![4, 9]);
        let mut buf = [0u8; 4];
        pairs[4].1.recv(&mut buf).expect("recv");
        pairs[9].1.recv(&mut buf).expect("recv");
        ready.clear();
        r.ready(&mut ready).expect("wait");
        assert_eq!(ready, vec![9], "one datagram still waits on port 9");
        pairs[9].1.recv(&mut buf).expect("recv");
        ready.clear();
        r.ready(&mut ready).expect("wait");
        assert!(ready.is_empty());
    }
}
