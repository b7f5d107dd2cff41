//! Backends: where frames come from and go to. One file each.
//!
//! * [`tap`]: a TAP device (a virtual Ethernet interface whose other side
//!   is a file descriptor), for `pipelab shell`;
//! * [`af_packet`]: an AF_PACKET socket with a TPACKET_V2 receive ring on
//!   an existing interface, for `pipelab bridge`;
//! * [`ethtool`]: reading and setting offloads of an interface;
//! * [`process`]: spawning into a namespace, signals, pidfds.
//!
//! A backend moves whole Ethernet frames; the runner owns the buffers.
//! `unsafe` code lives only here, each block with its SAFETY argument.

pub mod af_packet;
pub mod ethtool;
pub mod process;
pub mod tap;

use std::io;
use std::os::fd::BorrowedFd;

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
    /// Transmit one frame.
    fn send(&mut self, frame: &[u8]) -> io::Result<()>;
    /// Counters so far.
    fn stats(&self) -> PortStats;
}
