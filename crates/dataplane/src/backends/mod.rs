//! Backends: where frames come from and go to. One file each.
//!
//! * [`tap`]: a TAP device (a virtual Ethernet interface whose other side
//!   is a file descriptor), for `pipelab shell`;
//! * [`af_packet`]: an AF_PACKET socket with a TPACKET_V2 receive ring on
//!   an existing interface, for `pipelab bridge`;
//! * [`af_xdp`]: an AF_XDP socket fed by a small XDP program, for
//!   `pipelab bridge` on veth (native XDP where the driver allows);
//! * [`nfqueue`]: a netfilter queue, for this host's own packets (host
//!   mode): IP packets with verdicts instead of frames on a wire;
//! * [`ethtool`]: reading and setting offloads of an interface;
//! * [`process`]: spawning into a namespace, signals, pidfds.
//!
//! A backend moves whole Ethernet frames; the runner owns the buffers.
//! `unsafe` code lives only here, each block with its SAFETY argument.

pub mod af_packet;
pub mod af_xdp;
pub mod ethtool;
pub mod nfqueue;
pub mod process;
pub mod tap;

use std::io;
use std::os::fd::BorrowedFd;

/// Whether the port's socket `fd`, bound to interface `ifindex` named
/// `name`, lost its interface. The kernel sets a socket error (ENETDOWN)
/// when the interface goes down or is unregistered; it is taken here, so
/// that `poll` stops reporting it. If `name` is then gone, or now names
/// another interface (deleted and re-created), the error is `NotFound`,
/// "interface NAME was deleted": the runner marks the port lost and the
/// bridge opens a new one when the interface is back. An interface that
/// is only down keeps its socket, which resumes when it is up again.
pub(crate) fn check_interface(fd: BorrowedFd<'_>, name: &str, ifindex: u32) -> io::Result<()> {
    use nix::sys::socket::{getsockopt, sockopt::SocketError};
    let err = getsockopt(&fd, SocketError).unwrap_or(0);
    if err != 0 && nix::net::if_::if_nametoindex(name).ok() != Some(ifindex) {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("interface {name} was deleted"),
        ));
    }
    Ok(())
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

/// One end of the emulator: receives and transmits Ethernet frames.
pub trait Port {
    /// The interface's name.
    fn name(&self) -> &str;
    /// A descriptor that polls readable when frames are waiting.
    fn fd(&self) -> BorrowedFd<'_>;
    /// Copy the next waiting frame into `buf`; `Ok(None)` when none waits.
    /// A frame longer than `buf` is truncated to it.
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>>;
    /// Transmit one frame. A backend may hold it in a transmit ring until
    /// [`Port::flush`].
    fn send(&mut self, frame: &[u8]) -> io::Result<()>;
    /// Hand every frame [`Port::send`] queued to the kernel (one system
    /// call per batch). The runner calls it after each round of
    /// transmissions. Returns how many of the frames `send` accepted
    /// since the last flush could not be transmitted after all (the
    /// interface went down or away), so the runner counts them as
    /// `dropped_tx` instead of delivered. Default: nothing to do, 0 (each
    /// send went out at once).
    fn flush(&mut self) -> u64 {
        0
    }
    /// Counters so far.
    fn stats(&self) -> PortStats;
    /// The emulator dropped `frame`, which this port returned from
    /// [`Port::recv`] (a queue, loss or rule drop, or no buffer for it).
    /// Default: nothing to do (the frame was a copy). A port whose frames
    /// stand for packets the kernel holds releases them here.
    fn discard(&mut self, frame: &[u8]) {
        let _ = frame;
    }
    /// Add to `view` what the port knows about the frame it returned last
    /// beyond its bytes (direction, interfaces, owning user). Default:
    /// nothing.
    fn annotate(&self, view: &mut pipelab_classify::PacketView) {
        let _ = view;
    }
}
