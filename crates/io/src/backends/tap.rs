//! TAP devices: a virtual Ethernet interface whose frames are read from and
//! written to a file descriptor (`/dev/net/tun`, `IFF_TAP | IFF_NO_PI`).
//!
//! The device exists while the descriptor is open: closing it (also on a
//! crash) removes the interface, so a TAP can never be left behind, unless
//! made to go with its namespace ([`Tap::persist_with_namespace`]). The
//! device may be moved into another network namespace; its descriptor stays
//! valid here. Without `IFF_VNET_HDR` the kernel segments GSO packets
//! before handing them to the device, so frames are at most MTU + 14 bytes.
//!
//! [`Tap::create_offloaded`] opens it with `IFF_VNET_HDR` (a 10-byte
//! virtio-net header before every frame, `TUNSETVNETHDRSZ`) and tells the
//! kernel the reader takes checksum offload, TSO for IPv4 and IPv6 (with
//! ECN) and, where the kernel knows it (6.2 and later), USO
//! (`TUNSETOFFLOAD`): the device then advertises those features, and the
//! stack hands it TCP bulk as GSO super-frames of up to 64 KB with their
//! checksums left partial, one `read` each. Written frames carry their
//! header too: a segment cut in user space goes out with `gso_type`
//! NONE, a super-frame kept whole with its GSO header (the receiving
//! stack takes it as GRO would have made it). The offloads are the
//! device's own: they vanish with it, nothing on the host to restore.
//!
//! Frames the kernel drops on their way to the reader (the device's
//! queue toward it full: the emulator did not keep up) are counted by
//! the device as transmit drops, in its own namespace: [`TapDrops`]
//! reads them, from any thread, for reports.
//!
//! No copy in user space: each frame is `read` straight into a pool buffer
//! and `write`n from the pool buffer it departs from (a super-frame is
//! read into a small buffer and a large one's tail, and its first 2 KB
//! moved to the front of the large one: see [`Rx::read_vnet`]).

use super::{Port, PortStats};
use crate::buffers::{Annotation, BufId, BufferPool, Rx};
use crate::gso::VNET_HDR_LEN;
use std::fs::{File, OpenOptions};
use std::io::{self, IoSlice, Read, Seek, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;

/// `TUNSETIFF`: `_IOW('T', 202, int)`.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
/// `TUNSETOFFLOAD`: `_IOW('T', 208, unsigned int)`.
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
/// `TUNSETPERSIST`: `_IOW('T', 203, int)`.
const TUNSETPERSIST: libc::c_ulong = 0x4004_54cb;
/// `TUNSETVNETHDRSZ`: `_IOW('T', 216, int)`.
const TUNSETVNETHDRSZ: libc::c_ulong = 0x4004_54d8;
/// `IFF_VNET_HDR`: a virtio-net header before every frame.
const IFF_VNET_HDR: libc::c_int = 0x4000;
/// `TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN`.
const TUN_F_TSO: libc::c_uint = 0x01 | 0x02 | 0x04 | 0x08;
/// `TUN_F_USO4 | TUN_F_USO6` (Linux 6.2).
const TUN_F_USO: libc::c_uint = 0x20 | 0x40;

/// An open TAP device.
#[derive(Debug)]
pub struct Tap {
    file: File,
    name: String,
    stats: PortStats,
    /// Frames come and go with a virtio-net header (offloads on).
    vnet: bool,
    /// The offloads the kernel took (`TUN_F_*`), 0 without.
    offloads: libc::c_uint,
}

impl Tap {
    /// Create TAP device `name` (at most 15 bytes) in the calling thread's
    /// network namespace, non-blocking.
    pub fn create(name: &str) -> io::Result<Tap> {
        Tap::open(name, false)
    }

    /// Create TAP device `name` as [`Tap::create`] does, with virtio-net
    /// headers and offloads: checksum, TSO4/6 with ECN, and USO4/6 where
    /// the kernel has them (see the module documentation).
    pub fn create_offloaded(name: &str) -> io::Result<Tap> {
        Tap::open(name, true)
    }

    /// The `TUN_F_*` offloads the device took (0 without offloads).
    pub fn offload_flags(&self) -> u32 {
        self.offloads
    }

    fn open(name: &str, vnet: bool) -> io::Result<Tap> {
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
        let vnet_flag = if vnet { IFF_VNET_HDR } else { 0 };
        req.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI | vnet_flag) as libc::c_short;
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
        let mut offloads = 0;
        if vnet {
            let size = VNET_HDR_LEN as libc::c_int;
            // SAFETY: TUNSETVNETHDRSZ reads an `int` from the pointer,
            // which points to a live local for the call.
            let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETVNETHDRSZ as _, &size) };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
            // USO first; a kernel that does not know it refuses the whole
            // set (EINVAL), and then TSO alone is asked for.
            for flags in [TUN_F_TSO | TUN_F_USO, TUN_F_TSO] {
                // SAFETY: TUNSETOFFLOAD takes its argument by value.
                let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETOFFLOAD as _, flags) };
                if rc == 0 {
                    offloads = flags;
                    break;
                }
            }
            if offloads == 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(Tap {
            file,
            name: name.to_string(),
            stats: PortStats::default(),
            vnet,
            offloads,
        })
    }
}

impl Tap {
    /// Keep the device when its last descriptor closes (`TUNSETPERSIST`).
    ///
    /// For a TAP alone in a network namespace that is removed after its
    /// descriptors close (a topology's VN): the device then goes with
    /// its namespace, and the kernel unregisters the devices of all the
    /// namespaces dying at once in one batch, where a last `close` each
    /// unregisters one device and waits for an RCU grace period on its
    /// own. Anywhere else a persistent TAP would be left behind.
    pub fn persist_with_namespace(&self) -> io::Result<()> {
        // SAFETY: TUNSETPERSIST takes its argument by value; the
        // descriptor is open and attached to a device.
        let rc = unsafe {
            libc::ioctl(
                self.file.as_raw_fd(),
                TUNSETPERSIST as _,
                1 as libc::c_ulong,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// This handle, reporting `name` as its port's ([`Port::name`]) where
    /// that differs from the device's own (a shell's TAP made in its
    /// namespace as `eth0`, reported as `pliPID`).
    pub fn labelled(mut self, name: &str) -> Tap {
        self.name = name.to_string();
        self
    }

    /// A second handle on the same device (a duplicated descriptor), for
    /// a worker that transmits on it while another receives from it
    /// (writes to a TAP are atomic per frame, from any thread). It writes
    /// virtio-net headers if the device takes them, as the first does.
    pub fn try_clone(&self) -> io::Result<Tap> {
        Ok(Tap {
            file: self.file.try_clone()?,
            name: self.name.clone(),
            stats: PortStats::default(),
            vnet: self.vnet,
            offloads: self.offloads,
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
            let got = if self.vnet {
                rx.read_vnet(Annotation::default(), |iov| match file.read_vectored(iov) {
                    Ok(n) => Ok(Some(n)),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
                    Err(e) => Err(e),
                })?
            } else {
                rx.read(Annotation::default(), |buf| match file.read(buf) {
                    Ok(n) => Ok(Some(n)),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
                    Err(e) => Err(e),
                })?
            };
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
        let hdr = pool.meta(buf).vnet.to_bytes();
        let (written, want) = if self.vnet {
            let parts = [IoSlice::new(&hdr), IoSlice::new(frame)];
            (self.file.write_vectored(&parts), VNET_HDR_LEN + frame.len())
        } else {
            (self.file.write(frame), frame.len())
        };
        match written {
            Ok(n) if n != want => {
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

    fn offloads(&self) -> bool {
        self.vnet
    }

    /// A TAP's descriptor polls readable exactly while a frame waits (or
    /// the device is gone, which the next read reports).
    fn readable_when_polled(&self) -> bool {
        true
    }
}

/// The frames a TAP device dropped on their way to its reader since this
/// was opened: its transmit drops, read from `/proc/net/dev` of the
/// namespace the device is in (the file, opened there, stays bound to
/// it). Not read on the data path: a report reads it when asked.
#[derive(Debug)]
pub struct TapDrops {
    file: File,
    dev: String,
    base: u64,
    last: u64,
}

impl TapDrops {
    /// Watch device `dev` of the calling thread's network namespace.
    pub fn open(dev: &str) -> io::Result<TapDrops> {
        let mut t = TapDrops {
            file: File::open("/proc/thread-self/net/dev")?,
            dev: dev.to_string(),
            base: 0,
            last: 0,
        };
        t.base = t.total()?;
        Ok(t)
    }

    /// Frames dropped since [`TapDrops::open`]: as last read if the
    /// device cannot be read any more (it was deleted).
    pub fn dropped(&mut self) -> u64 {
        if let Ok(t) = self.total() {
            self.last = t.saturating_sub(self.base);
        }
        self.last
    }

    /// The device's transmit drops, as the kernel counts them.
    fn total(&mut self) -> io::Result<u64> {
        self.file.rewind()?;
        let mut text = String::new();
        self.file.read_to_string(&mut text)?;
        tx_drops(&text, &self.dev).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no interface {} in /proc/net/dev", self.dev),
            )
        })
    }
}

/// Device `dev`'s transmit drops in a `/proc/net/dev` text: the fourth
/// transmit column (after 8 receive ones: bytes packets errs drop).
fn tx_drops(text: &str, dev: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (name, counters) = l.split_once(':')?;
        if name.trim() != dev {
            return None;
        }
        counters.split_whitespace().nth(11)?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::tx_drops;

    #[test]
    fn reads_the_transmit_drop_column() {
        let text = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     336       4    0    0    0     0          0         0      336       4    0    0    0     0       0          0
  eth0:    1030       3    0    7    0     0          0         0 28512649  425561    0 74442    0     0       0          0
";
        assert_eq!(tx_drops(text, "eth0"), Some(74442));
        assert_eq!(tx_drops(text, "lo"), Some(0));
        assert_eq!(tx_drops(text, "eth1"), None);
        assert_eq!(tx_drops(text, "eth"), None);
    }
}
