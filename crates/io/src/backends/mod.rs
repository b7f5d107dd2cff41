//! Backends: where frames come from and go to. One file each.
//!
//! * [`tap`]: a TAP device (a virtual Ethernet interface whose other side
//!   is a file descriptor), for `pipelab shell`;
//! * [`af_packet`]: an AF_PACKET socket with TPACKET_V2 receive and
//!   transmit rings on an existing interface, for `pipelab bridge`;
//! * [`af_xdp`]: an AF_XDP socket fed by a small XDP program, for
//!   `pipelab bridge` on veth (native XDP where the driver allows);
//! * [`nfqueue`]: a netfilter queue, for this host's own packets (host
//!   mode): IP packets with verdicts instead of frames on a wire;
//! * [`lend`]: memory shared with the kernel and the frames lent out of
//!   it;
//! * [`ethtool`]: reading and setting offloads of an interface;
//! * [`process`]: spawning into a namespace, signals, pidfds.
//!
//! A backend moves whole Ethernet frames and lends them to the runner's
//! buffer pool ([`crate::buffers`]) with at most one copy per forwarded
//! frame; the runner owns the buffers while frames are inside.
//! `unsafe` code lives only here, each block with its SAFETY argument.

pub mod af_packet;
pub mod af_xdp;
pub mod ethtool;
pub mod lend;
pub mod nfqueue;
pub mod process;
pub mod tap;

use crate::buffers::{BufId, BufMeta, BufferPool, Rx};
use lend::LentFrame;
use std::io;
use std::os::fd::BorrowedFd;

/// Watches whether a port's interface is still the one its socket is
/// bound to.
///
/// The kernel sets a socket error (ENETDOWN) when the interface goes down
/// or, for AF_XDP, is unregistered; [`IfWatch::check`] takes it, so that
/// `poll` stops reporting it. If the name is then gone, or names another
/// interface (deleted and re-created: the ifindex changed), the port is
/// lost: `NotFound`, "interface NAME was deleted"; the runner marks it so
/// and the bridge opens a new one when the interface is back. A deleted
/// interface goes down first, and AF_PACKET reports only that, while the
/// name still resolves: so after an error the name is looked up again
/// every 10 ms until the interface is up again (merely down) or gone.
pub(crate) struct IfWatch {
    /// The interface the socket is bound to.
    pub ifindex: u32,
    /// An error was seen and the interface is not up again yet.
    suspect: bool,
    last: std::time::Instant,
}

impl IfWatch {
    pub fn new(ifindex: u32) -> IfWatch {
        IfWatch {
            ifindex,
            suspect: false,
            last: std::time::Instant::now(),
        }
    }

    /// Take the socket `fd`'s pending error and say whether the port on
    /// `name` lost its interface.
    pub fn check(&mut self, fd: BorrowedFd<'_>, name: &str) -> io::Result<()> {
        use nix::sys::socket::{getsockopt, sockopt::SocketError};
        let err = getsockopt(&fd, SocketError).unwrap_or(0);
        if err == 0 && (!self.suspect || self.last.elapsed() < std::time::Duration::from_millis(10))
        {
            return Ok(());
        }
        self.suspect = true;
        self.last = std::time::Instant::now();
        if nix::net::if_::if_nametoindex(name).ok() != Some(self.ifindex) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("interface {name} was deleted"),
            ));
        }
        if interface_is_up(name) {
            self.suspect = false;
        }
        Ok(())
    }
}

/// Whether interface `name` exists and is administratively up (sysfs).
pub fn interface_is_up(name: &str) -> bool {
    std::fs::read_to_string(format!("/sys/class/net/{name}/flags"))
        .ok()
        .and_then(|f| u32::from_str_radix(f.trim().trim_start_matches("0x"), 16).ok())
        .is_some_and(|f| f & libc::IFF_UP as u32 != 0)
}

/// Counters of one port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortStats {
    /// Frames received.
    pub rx_frames: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Frames transmitted.
    pub tx_frames: u64,
    /// Bytes transmitted.
    pub tx_bytes: u64,
    /// Frames the port could not transmit (interface down or gone, or the
    /// kernel's queue full).
    pub tx_errors: u64,
    /// Frames dropped before the runner saw them (kernel ring overflow):
    /// ModelNet's "physical drops".
    pub rx_dropped: u64,
}

impl std::ops::AddAssign for PortStats {
    fn add_assign(&mut self, o: PortStats) {
        self.rx_frames += o.rx_frames;
        self.rx_bytes += o.rx_bytes;
        self.tx_frames += o.tx_frames;
        self.tx_bytes += o.tx_bytes;
        self.tx_errors += o.tx_errors;
        self.rx_dropped += o.rx_dropped;
    }
}

/// One end of the emulator: receives and transmits Ethernet frames,
/// lending them rather than copying them (as smoltcp's `RxToken` and
/// `TxToken`): see [`crate::buffers`].
///
/// * [`Port::recv`] lends each waiting frame (a ring slot, a UMEM chunk,
///   or the kernel's `read` into a pool buffer) to the runner's [`Rx`],
///   which takes it into the pool with at most one copy, together with
///   what the port knows of it ([`crate::buffers::Annotation`]).
/// * [`Port::send`] gets the pool and the buffer: the port transmits from
///   the buffer itself where the kernel interface allows (
///   `write`, a verdict's gather list) or copies it once into its
///   transmit memory ([`BufferPool::copy_out`]). The buffer stays
///   unchanged until the port's next [`Port::flush`], so a port may keep
///   only its id and send a batch then.
/// * A frame the port lent ([`LentFrame`]) comes back through
///   [`Port::reclaim`] once the pool is done with it.
pub trait Port {
    /// The interface's name.
    fn name(&self) -> &str;
    /// A descriptor that polls readable when frames are waiting.
    fn fd(&self) -> BorrowedFd<'_>;
    /// Lend every waiting frame to `rx`, until none waits or
    /// [`Rx::wants_more`] says no. A frame `rx` refuses (the memory cap)
    /// is released by the port as it would release a frame the emulator
    /// dropped.
    fn recv(&mut self, rx: &mut Rx<'_>) -> io::Result<()>;
    /// Transmit the frame in buffer `buf` of `pool`. A backend may hold
    /// it (its id, or a copy in a transmit ring) until [`Port::flush`];
    /// the runner keeps the buffer unchanged until then.
    fn send(&mut self, pool: &BufferPool, buf: BufId) -> io::Result<()>;
    /// Hand every frame [`Port::send`] queued to the kernel (one system
    /// call per batch). The runner calls it after each round of
    /// transmissions. Returns how many of the frames `send` accepted
    /// since the last flush could not be transmitted after all (the
    /// interface went down or away), so the runner counts them as
    /// `dropped_tx` instead of delivered. Default: nothing to do, 0 (each
    /// send went out at once).
    fn flush(&mut self, pool: &BufferPool) -> u64 {
        let _ = pool;
        0
    }
    /// Counters so far.
    fn stats(&self) -> PortStats;
    /// The emulator dropped the frame of `meta`, which this port lent (a
    /// queue, loss or rule drop). Default: nothing to do. A port whose
    /// frames stand for packets the kernel holds releases them here
    /// (NFQUEUE: the drop verdict for the id in the annotation).
    fn discard(&mut self, meta: &BufMeta) {
        let _ = meta;
    }
    /// A frame this port lent without a copy ([`Rx::lend`]) is free
    /// again: give its memory back to the kernel. Default: drop it.
    fn reclaim(&mut self, frame: LentFrame) {
        drop(frame);
    }
    /// Whether the port reads and writes virtio-net headers: it may lend
    /// GSO super-frames and frames with a checksum left to complete
    /// (their header in [`BufMeta::vnet`]), and [`Port::send`] writes
    /// the buffer's header before the frame, so the kernel takes a
    /// super-frame sent whole or a partial checksum. Default: no (the
    /// runner completes checksums before such a port sends).
    fn offloads(&self) -> bool {
        false
    }
    /// Whether a frame waits on this port only while [`Port::fd`] polls
    /// readable, with nothing else to do in [`Port::recv`] meanwhile (a
    /// TAP): a runner with many such ports then reads only those an epoll
    /// instance reports ready ([`crate::readiness`]). Default: no, the
    /// runner reads the port every round.
    fn readable_when_polled(&self) -> bool {
        false
    }
}
