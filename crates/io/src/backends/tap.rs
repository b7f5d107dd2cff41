//! TAP devices: a virtual Ethernet interface whose frames are read from and
//! written to a file descriptor (`/dev/net/tun`, `IFF_TAP | IFF_NO_PI`).
//!
//! The device exists while the descriptor is open: closing it (also on a
//! crash) removes the interface, so a TAP can never be left behind. The
//! device may be moved into another network namespace; its descriptor stays
//! valid here. Without `IFF_VNET_HDR` the kernel segments GSO packets
//! before handing them to the device, so frames are at most MTU + 14 bytes.
//!
//! No copy in user space: each frame is `read` straight into a pool buffer
//! and `write`n from the pool buffer it departs from.

use super::{Port, PortStats};
use crate::buffers::{Annotation, BufId, BufferPool, Rx};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;

/// `TUNSETIFF`: `_IOW('T', 202, int)`.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

/// An open TAP device.
#[derive(Debug)]
pub struct Tap {
    file: File,
    name: String,
    stats: PortStats,
}

impl Tap {
    /// Create TAP device `name` (at most 15 bytes) in the calling thread's
    /// network namespace, non-blocking.
    pub fn create(name: &str) -> io::Result<Tap> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("interface name '{name}' must be 1 to 15 bytes"),
            ));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")?;
        // SAFETY: `ifreq` is plain old data; all-zero is a valid value.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
            *dst = src as libc::c_char;
        }
        req.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads an `ifreq` (and writes the chosen name
        // back into it); `req` is a valid, exclusively borrowed `ifreq` that
        // outlives the call, and the descriptor is open.
        let rc = unsafe {
            libc::ioctl(
                file.as_raw_fd(),
                TUNSETIFF as _,
                &mut req as *mut libc::ifreq,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Tap {
            file,
            name: name.to_string(),
            stats: PortStats::default(),
        })
    }
}

impl Tap {
    /// A second handle on the same device (a duplicated descriptor), for
    /// a worker that transmits on it while another receives from it
    /// (writes to a TAP are atomic per frame, from any thread).
    pub fn try_clone(&self) -> io::Result<Tap> {
        Ok(Tap {
            file: self.file.try_clone()?,
            name: self.name.clone(),
            stats: PortStats::default(),
        })
    }
}

impl Port for Tap {
    fn name(&self) -> &str {
        &self.name
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    fn recv(&mut self, rx: &mut Rx<'_>) -> io::Result<()> {
        // One frame per `read`, straight into a pool buffer: the kernel's
        // copy, none here.
        let file = &mut self.file;
        while rx.wants_more() {
            let got = rx.read(Annotation::default(), |buf| match file.read(buf) {
                Ok(n) => Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
                Err(e) => Err(e),
            })?;
            match got {
                Some(n) => {
                    self.stats.rx_frames += 1;
                    self.stats.rx_bytes += n as u64;
                }
                None => break,
            }
        }
        Ok(())
    }

    fn send(&mut self, pool: &BufferPool, buf: BufId) -> io::Result<()> {
        // Written from the pool buffer itself. A TAP write takes the whole
        // frame or fails; a short count would mean a truncated frame on
        // the wire, so count it as an error.
        let frame = pool.frame(buf);
        match self.file.write(frame) {
            Ok(n) if n != frame.len() => {
                self.stats.tx_errors += 1;
                Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "short write to TAP",
                ))
            }
            Ok(_) => {
                self.stats.tx_frames += 1;
                self.stats.tx_bytes += frame.len() as u64;
                Ok(())
            }
            Err(e) => {
                self.stats.tx_errors += 1;
                Err(e)
            }
        }
    }

    fn stats(&self) -> PortStats {
        self.stats
    }
}
