//! Offload settings of an interface, through the legacy `SIOCETHTOOL`
//! get/set commands (one `u32` value each).
//!
//! A user-space forwarder sees frames as the kernel hands them over: with
//! GRO a receiving port merges segments into super-frames, and with TSO,
//! GSO or checksum offload a sending veth hands over unsegmented frames with
//! unfinished checksums. `pipelab bridge` turns GRO and LRO off on its ports
//! for the run and restores them afterwards.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// An offload that can be read and set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offload {
    /// Generic receive offload.
    Gro,
    /// TCP segmentation offload.
    Tso,
    /// Generic segmentation offload.
    Gso,
    /// Transmit checksum offload.
    TxChecksum,
}

impl Offload {
    fn cmds(self) -> (u32, u32) {
        match self {
            Offload::Gro => (0x2b, 0x2c),
            Offload::Tso => (0x1e, 0x1f),
            Offload::Gso => (0x23, 0x24),
            Offload::TxChecksum => (0x16, 0x17),
        }
    }
}

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

fn control_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is fresh and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn ethtool(ifname: &str, cmd: u32, data: u32) -> io::Result<u32> {
    if ifname.is_empty() || ifname.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name '{ifname}'"),
        ));
    }
    let sock = control_socket()?;
    let mut val = EthtoolValue { cmd, data };
    // SAFETY: `ifreq` is plain old data; all-zero is valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(ifname.bytes()) {
        *d = s as libc::c_char;
    }
    req.ifr_ifru.ifru_data = &mut val as *mut EthtoolValue as *mut libc::c_char;
    // SAFETY: SIOCETHTOOL reads the command from and writes the value to
    // `val`, which `req` points to and which outlives the call.
    let rc = unsafe {
        libc::ioctl(
            sock.as_raw_fd(),
            libc::SIOCETHTOOL as _,
            &mut req as *mut libc::ifreq,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(val.data)
}

/// Is `what` on for `ifname`?
pub fn get(ifname: &str, what: Offload) -> io::Result<bool> {
    ethtool(ifname, what.cmds().0, 0).map(|v| v != 0)
}

/// Turn `what` on or off for `ifname`.
pub fn set(ifname: &str, what: Offload, on: bool) -> io::Result<()> {
    ethtool(ifname, what.cmds().1, on as u32).map(|_| ())
}
