//! AF_PACKET sockets bound to an existing interface (for `pipelab
//! bridge`): frames received with `recvmmsg` straight into the runner's
//! pool buffers, transmitted through a memory-mapped TPACKET_V2 ring.
//!
//! Reception is batched: one `recvmmsg` takes up to [`RX_BATCH`] waiting
//! frames, each written by the kernel into an empty pool buffer the
//! runner lends ([`Rx::empties`]): no copy in user space. What the kernel
//! knows beside the frame (a VLAN tag it moved out of it, a checksum left
//! to offload) comes in a `PACKET_AUXDATA` control message per frame.
//!
//! Transmission is batched through a TPACKET_V2 transmit ring on the same
//! socket: [`Port::send`] copies the frame from its pool buffer into the
//! next free slot (the frame's one copy in user space) and marks it for
//! sending; [`Port::flush`] (the runner calls it after each round of
//! departures) hands every marked slot to the kernel with one `send` of
//! no data, and the kernel sends each from the ring without copying it
//! again. If that fails (interface down or gone) the marked slots are
//! taken back and counted as not transmitted.
//!
//! Details a forwarding plane must get right:
//! * `PACKET_IGNORE_OUTGOING`: the socket does not see frames leaving its
//!   interface (ours, or the host's), only arrivals;
//! * promiscuous membership, so frames for other MACs are seen (a bridge);
//! * VLAN tags the kernel moved into metadata are put back in the frame;
//! * frames whose checksum the sender left to offload
//!   (`TP_STATUS_CSUMNOTREADY`) get their TCP/UDP checksum computed here;
//! * frames larger than a pool buffer (a GSO/GRO super-frame) are dropped
//!   and counted as `rx_oversize`: disable TSO/GSO/GRO on the path.

use super::{Port, PortStats};
use crate::buffers::{Annotation, BufId, BufferPool, EmptyBuf, Rx, BUF_SIZE};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{fence, Ordering};

const TPACKET_V2: libc::c_int = 1;
const FRAME_SIZE: usize = 4096;
const BLOCK_SIZE: usize = 1 << 20;
/// Blocks of the transmit ring (256 slots each).
const TX_BLOCK_NR: usize = 2;
const TX_FRAME_NR: usize = BLOCK_SIZE / FRAME_SIZE * TX_BLOCK_NR;
/// Where the frame starts in a transmit slot: TPACKET2_HDRLEN less the
/// sockaddr_ll, i.e. the header rounded up to TPACKET_ALIGNMENT.
const TX_DATA: usize = 32;
/// Frames taken per `recvmmsg`.
pub const RX_BATCH: usize = 64;
/// Room for one `PACKET_AUXDATA` control message: CMSG_SPACE of the
/// 20-byte `tpacket_auxdata`.
const AUX_SPACE: usize = 40;

/// `struct tpacket_auxdata` (linux/if_packet.h).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct AuxData {
    tp_status: u32,
    tp_len: u32,
    tp_snaplen: u32,
    tp_mac: u16,
    tp_net: u16,
    tp_vlan_tci: u16,
    tp_vlan_tpid: u16,
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn setsockopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, val: &T) -> io::Result<()> {
    // SAFETY: `val` points to a live, initialised `T` for the duration of
    // the call and its exact size is passed; the kernel only reads it.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            val as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    })
}

/// An AF_PACKET port with its transmit ring.
pub struct AfPacket {
    fd: OwnedFd,
    ring: NonNull<u8>,
    ring_len: usize,
    /// Next transmit slot to fill.
    tx_cur: usize,
    /// Slots marked for sending since the last flush.
    tx_marked: usize,
    /// Frames `send` accepted that could not go, since the last flush.
    tx_failed: u64,
    /// Empty pool buffers of the current receive batch.
    empties: Vec<EmptyBuf>,
    name: String,
    /// The interface the socket is bound to, watched.
    watch: super::IfWatch,
    stats: PortStats,
    /// Frames larger than a ring slot (dropped).
    pub rx_oversize: u64,
    /// Frames whose checksum was computed here.
    pub csum_fixed: u64,
    /// Ring overflows reported by the kernel so far (reading resets them
    /// in the kernel, so they are accumulated here).
    kernel_drops: std::cell::Cell<u64>,
}

// SAFETY: the ring mapping is owned by this value alone and only accessed
// through `&mut self`; moving it to another thread is sound.
unsafe impl Send for AfPacket {}

impl AfPacket {
    /// Open a promiscuous AF_PACKET socket with a transmit ring on `ifname`.
    pub fn open(ifname: &str) -> io::Result<AfPacket> {
        let ifindex = nix::net::if_::if_nametoindex(ifname).map_err(|e| {
            io::Error::new(io::ErrorKind::NotFound, format!("interface {ifname}: {e}"))
        })?;
        let proto = (libc::ETH_P_ALL as u16).to_be() as libc::c_int;
        // SAFETY: plain socket(2) call; the result is checked.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                proto,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let s = fd.as_raw_fd();
        setsockopt(s, libc::SOL_PACKET, libc::PACKET_VERSION, &TPACKET_V2)?;
        let one: libc::c_int = 1;
        setsockopt(s, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &one)?;
        setsockopt(s, libc::SOL_PACKET, libc::PACKET_AUXDATA, &one)?;
        let txreq = libc::tpacket_req {
            tp_block_size: BLOCK_SIZE as u32,
            tp_block_nr: TX_BLOCK_NR as u32,
            tp_frame_size: FRAME_SIZE as u32,
            tp_frame_nr: TX_FRAME_NR as u32,
        };
        setsockopt(s, libc::SOL_PACKET, libc::PACKET_TX_RING, &txreq)?;
        let ring_len = BLOCK_SIZE * TX_BLOCK_NR;
        // SAFETY: maps the ring the kernel just allocated for this socket;
        // length and flags are the ones PACKET_TX_RING requires.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                s,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ring =
            NonNull::new(p as *mut u8).ok_or_else(|| io::Error::other("mmap returned null"))?;
        let port = AfPacket {
            fd,
            ring,
            ring_len,
            tx_cur: 0,
            tx_marked: 0,
            tx_failed: 0,
            empties: Vec::with_capacity(RX_BATCH),
            name: ifname.to_string(),
            watch: super::IfWatch::new(ifindex),
            stats: PortStats::default(),
            rx_oversize: 0,
            csum_fixed: 0,
            kernel_drops: std::cell::Cell::new(0),
        };
        // SAFETY: sockaddr_ll is plain old data; all-zero is valid.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: `sll` is a valid sockaddr_ll and its size is passed.
        check(unsafe {
            libc::bind(
                s,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })?;
        // SAFETY: packet_mreq is plain old data; all-zero is valid.
        let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
        mreq.mr_ifindex = ifindex as i32;
        mreq.mr_type = libc::PACKET_MR_PROMISC as u16;
        setsockopt(s, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)?;
        Ok(port)
    }

    /// Take the socket's pending error (which would otherwise keep `poll`
    /// reporting `POLLERR`, and the runner spinning): the interface went
    /// down (ENETDOWN, cleared here; the ring resumes when it is up again)
    /// or was deleted (an error naming it; see [`super::IfWatch`]).
    fn check_error(&mut self) -> io::Result<()> {
        self.watch.check(self.fd.as_fd(), &self.name)
    }

    /// The transmit slot header at position `i`.
    fn tx_slot(&self, i: usize) -> *mut libc::tpacket2_hdr {
        // SAFETY: `i < TX_FRAME_NR`, so the offset stays inside the
        // mapping (the transmit ring alone).
        unsafe { self.ring.as_ptr().add(i * FRAME_SIZE) as *mut libc::tpacket2_hdr }
    }

    fn tx_status(&self, i: usize) -> u32 {
        // SAFETY: a slot header inside the live mapping; the status word
        // is read volatile because the kernel writes it.
        unsafe { std::ptr::read_volatile(&(*self.tx_slot(i)).tp_status) }
    }

    /// Ask the kernel to send every marked slot. On failure, take back the
    /// slots it left marked and count them in `tx_failed`.
    fn kick(&mut self) {
        if self.tx_marked == 0 {
            return;
        }
        // SAFETY: send with no data: the TX ring request ("send what is
        // marked"); the kernel reads only the ring.
        let rc =
            unsafe { libc::send(self.fd.as_raw_fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT) };
        let marked = std::mem::take(&mut self.tx_marked);
        if rc >= 0 {
            return;
        }
        // The kernel stopped at its head slot, the oldest still marked;
        // everything from there on is taken back, and the next frame goes
        // into that slot, where the kernel will look first.
        let n = marked.min(TX_FRAME_NR);
        let first = (1..=n).rev().find(|&k| {
            let i = (self.tx_cur + TX_FRAME_NR - k) % TX_FRAME_NR;
            let st = self.tx_status(i);
            st == libc::TP_STATUS_SEND_REQUEST || st == libc::TP_STATUS_WRONG_FORMAT
        });
        let Some(first) = first else { return };
        let head = (self.tx_cur + TX_FRAME_NR - first) % TX_FRAME_NR;
        for k in 0..first {
            let i = (head + k) % TX_FRAME_NR;
            fence(Ordering::Release);
            // SAFETY: the kernel stopped before this slot (the send call
            // returned); handing it back to ourselves as available.
            unsafe {
                std::ptr::write_volatile(
                    &mut (*self.tx_slot(i)).tp_status,
                    libc::TP_STATUS_AVAILABLE,
                )
            };
            self.tx_failed += 1;
        }
        self.tx_cur = head;
    }

    /// Kernel counters: (packets seen, packets dropped for lack of ring
    /// space). Reading resets them in the kernel.
    fn kernel_stats(&self) -> Option<(u64, u64)> {
        // SAFETY: tpacket_stats is plain old data; all-zero is valid.
        let mut st: libc::tpacket_stats = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: `st` and `len` are valid for writes of the sizes given.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                &mut st as *mut libc::tpacket_stats as *mut libc::c_void,
                &mut len,
            )
        };
        (rc == 0).then_some((st.tp_packets as u64, st.tp_drops as u64))
    }
}

impl Drop for AfPacket {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the region mapped in `open`; no reference
        // into it outlives `self`.
        unsafe {
            libc::munmap(self.ring.as_ptr() as *mut libc::c_void, self.ring_len);
        }
    }
}

/// The `PACKET_AUXDATA` control message of a received message, or all
/// zero if it has none.
///
/// # Safety
///
/// `msg` is a header `recvmmsg` filled: its control pointer and length
/// describe initialised memory that lives for the call.
unsafe fn auxdata(msg: &libc::msghdr) -> AuxData {
    // SAFETY: by the caller's guarantee the macros walk initialised
    // control data within `msg_controllen`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_PACKET && (*c).cmsg_type == libc::PACKET_AUXDATA {
                return std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const AuxData);
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    AuxData::default()
}

/// Compute the TCP or UDP checksum of an Ethernet frame in place (for
/// frames captured before checksum offload filled it in).
pub(crate) fn fix_l4_checksum(frame: &mut [u8]) -> bool {
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};
    let base = frame.as_ptr() as usize;
    let Ok(p) = SlicedPacket::from_ethernet(frame) else {
        return false;
    };
    let (off, sum) = match (&p.net, &p.transport) {
        (Some(NetSlice::Ipv4(ip)), Some(TransportSlice::Tcp(t))) => {
            let h = ip.header().to_header();
            let Ok(c) = t.to_header().calc_checksum_ipv4(&h, t.payload()) else {
                return false;
            };
            (t.slice().as_ptr() as usize + 16, c)
        }
        (Some(NetSlice::Ipv4(ip)), Some(TransportSlice::Udp(u))) => {
            let h = ip.header().to_header();
            let Ok(c) = u.to_header().calc_checksum_ipv4(&h, u.payload()) else {
                return false;
            };
            (u.slice().as_ptr() as usize + 6, c)
        }
        (Some(NetSlice::Ipv6(ip)), Some(TransportSlice::Tcp(t))) => {
            let h = ip.header().to_header();
            let Ok(c) = t.to_header().calc_checksum_ipv6(&h, t.payload()) else {
                return false;
            };
            (t.slice().as_ptr() as usize + 16, c)
        }
        (Some(NetSlice::Ipv6(ip)), Some(TransportSlice::Udp(u))) => {
            let h = ip.header().to_header();
            let Ok(c) = u.to_header().calc_checksum_ipv6(&h, u.payload()) else {
                return false;
            };
            (u.slice().as_ptr() as usize + 6, c)
        }
        _ => return false,
    };
    let at = off - base;
    drop(p);
    match frame.get_mut(at..at + 2) {
        Some(dst) => {
            dst.copy_from_slice(&sum.to_be_bytes());
            true
        }
        None => false,
    }
}

impl Port for AfPacket {
    fn name(&self) -> &str {
        &self.name
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    fn recv(&mut self, rx: &mut Rx<'_>) -> io::Result<()> {
        while rx.wants_more() {
            let mut bufs = std::mem::take(&mut self.empties);
            rx.empties(RX_BATCH, &mut bufs);
            if bufs.is_empty() {
                // At the memory cap: the frame is read into scratch and
                // counted, so the socket's queue still drains.
                let fd = self.fd.as_raw_fd();
                let got = rx.read(Annotation::default(), |b| {
                    // SAFETY: `b` is valid for writes of its length.
                    let n = unsafe {
                        libc::recv(fd, b.as_mut_ptr().cast(), b.len(), libc::MSG_DONTWAIT)
                    };
                    Ok((n > 0).then_some(n as usize))
                })?;
                self.empties = bufs;
                if got.is_none() {
                    return self.check_error();
                }
                continue;
            }
            let n = bufs.len();
            let mut iov: [libc::iovec; RX_BATCH] = [libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            }; RX_BATCH];
            let mut aux = [[0u8; AUX_SPACE]; RX_BATCH];
            // SAFETY: an all-zero mmsghdr is a valid empty header.
            let mut hdrs: [libc::mmsghdr; RX_BATCH] = unsafe { std::mem::zeroed() };
            for (((b, v), h), a) in bufs
                .iter_mut()
                .zip(iov.iter_mut())
                .zip(hdrs.iter_mut())
                .zip(aux.iter_mut())
            {
                let space = b.space();
                v.iov_base = space.as_mut_ptr().cast();
                v.iov_len = space.len();
                h.msg_hdr.msg_iov = v;
                h.msg_hdr.msg_iovlen = 1;
                h.msg_hdr.msg_control = a.as_mut_ptr().cast();
                h.msg_hdr.msg_controllen = AUX_SPACE as _;
            }
            // SAFETY: `hdrs[..n]` are initialised headers, each pointing to
            // one iovec of `iov` (an empty pool buffer this port holds, of
            // the length given) and to its control buffer in `aux`; all
            // live until the call returns.
            let rc = unsafe {
                libc::recvmmsg(
                    self.fd.as_raw_fd(),
                    hdrs.as_mut_ptr(),
                    n as libc::c_uint,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                )
            };
            let got = if rc < 0 {
                let e = io::Error::last_os_error();
                for b in bufs.drain(..) {
                    rx.unused(b);
                }
                self.empties = bufs;
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EAGAIN) => return self.check_error(),
                    _ => return self.watch.error_seen(&self.name),
                }
            } else {
                rc as usize
            };
            for (k, b) in bufs.drain(..).enumerate() {
                if k >= got {
                    rx.unused(b);
                    continue;
                }
                let h = &hdrs[k];
                let len = h.msg_len as usize;
                // SAFETY: the kernel filled `aux[k]` with `msg_controllen`
                // bytes of control messages; the CMSG macros walk them
                // within that length.
                let st = unsafe { auxdata(&h.msg_hdr) };
                if h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 || len + 4 > BUF_SIZE {
                    self.rx_oversize += 1;
                    rx.unused(b);
                    continue;
                }
                let vlan = st.tp_status & libc::TP_STATUS_VLAN_VALID != 0 && len >= 12;
                let total = len + if vlan { 4 } else { 0 };
                let f = rx.filled(b, total, Annotation::default());
                if vlan {
                    // The tag goes back between the addresses and the
                    // ethertype: the rest of the frame moves by 4 (a
                    // copy, counted as the frame's).
                    f.copy_within(12..len, 16);
                    let tpid = if st.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                        st.tp_vlan_tpid
                    } else {
                        0x8100
                    };
                    f[12..14].copy_from_slice(&tpid.to_be_bytes());
                    f[14..16].copy_from_slice(&st.tp_vlan_tci.to_be_bytes());
                }
                if st.tp_status & libc::TP_STATUS_CSUMNOTREADY != 0 && fix_l4_checksum(f) {
                    self.csum_fixed += 1;
                }
                if vlan {
                    rx.count_copy();
                }
                self.stats.rx_frames += 1;
                self.stats.rx_bytes += total as u64;
            }
            self.empties = bufs;
            if got < n {
                return Ok(());
            }
        }
        Ok(())
    }

    fn send(&mut self, pool: &BufferPool, buf: BufId) -> io::Result<()> {
        let len = pool.frame(buf).len();
        if len > FRAME_SIZE - TX_DATA {
            self.stats.tx_errors += 1;
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "frame longer than a transmit slot",
            ));
        }
        if self.tx_status(self.tx_cur) != libc::TP_STATUS_AVAILABLE {
            // The ring is full of frames being sent: push, look again.
            self.kick();
            if self.tx_status(self.tx_cur) != libc::TP_STATUS_AVAILABLE {
                self.stats.tx_errors += 1;
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "AF_PACKET transmit ring full",
                ));
            }
        }
        fence(Ordering::Acquire);
        let h = self.tx_slot(self.tx_cur);
        // SAFETY: the slot is available (ours until marked); its data
        // area of FRAME_SIZE - TX_DATA bytes lies inside the mapping and
        // nothing else borrows it.
        let dst = unsafe {
            std::slice::from_raw_parts_mut((h as *mut u8).add(TX_DATA), FRAME_SIZE - TX_DATA)
        };
        // The frame's one copy: from the pool buffer into the slot.
        let n = pool.copy_out(buf, dst);
        // SAFETY: header fields of the slot we own, plain integers.
        unsafe {
            (*h).tp_len = n as u32;
            (*h).tp_snaplen = n as u32;
        }
        fence(Ordering::Release);
        // SAFETY: marks the slot for the kernel; we touch it no more until
        // it is available again.
        unsafe { std::ptr::write_volatile(&mut (*h).tp_status, libc::TP_STATUS_SEND_REQUEST) };
        self.tx_cur = (self.tx_cur + 1) % TX_FRAME_NR;
        self.tx_marked += 1;
        self.stats.tx_frames += 1;
        self.stats.tx_bytes += n as u64;
        if self.tx_marked >= TX_FRAME_NR / 2 {
            self.kick();
        }
        Ok(())
    }

    fn flush(&mut self, _pool: &BufferPool) -> u64 {
        self.kick();
        let failed = std::mem::take(&mut self.tx_failed);
        self.stats.tx_errors += failed;
        self.stats.tx_frames = self.stats.tx_frames.saturating_sub(failed);
        failed
    }

    fn stats(&self) -> PortStats {
        let mut s = self.stats;
        if let Some((_, drops)) = self.kernel_stats() {
            self.kernel_drops.set(self.kernel_drops.get() + drops);
        }
        s.rx_dropped += self.kernel_drops.get() + self.rx_oversize;
        s
    }
}
