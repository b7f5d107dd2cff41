//! AF_PACKET sockets with a memory-mapped TPACKET_V2 receive ring, bound to
//! an existing interface (for `pipelab bridge`).
//!
//! Reception is batched: the kernel writes frames into a ring shared with
//! this process and flips each slot's status word; the port walks the
//! ring after one `poll`, with no system call per frame, lends each slot
//! to the runner, which copies the frame once into its buffer pool (the
//! frame's one copy: a frame may stay seconds in its pipe, far longer
//! than a ring slot can be held), and hands the slot back.
//!
//! Why V2 and not V3: a TPACKET_V3 ring hands whole blocks to user space
//! only when a block fills or its retire timer (at least 1 ms) fires, which
//! would add up to a millisecond of delay to sparse traffic, beyond the
//! delay-precision target. V2 releases every frame at once.
//!
//! Transmission is batched too, with no copy in user space: [`Port::send`]
//! notes the pool buffer, and [`Port::flush`] (the runner calls it after
//! each round of departures; `send` too when [`TX_BATCH`] wait) hands the
//! batch to the kernel straight from the pool buffers with one `sendmmsg`
//! (the kernel copies each frame into its socket buffer, as it would copy
//! it out of a transmit ring). Frames the kernel did not take (interface
//! down or gone, its send buffer full) are counted as not transmitted.
//! A TPACKET_V2 transmit ring, the earlier design, costs a second copy in
//! user space (pool buffer into ring slot) for the same kernel work; see
//! BENCHMARKS.md for the two measured side by side.
//!
//! Details a forwarding plane must get right:
//! * `PACKET_IGNORE_OUTGOING`: the socket does not see frames leaving its
//!   interface (ours, or the host's), only arrivals;
//! * promiscuous membership, so frames for other MACs are seen (a bridge);
//! * VLAN tags the kernel moved into metadata are put back in the frame;
//! * frames whose checksum the sender left to offload
//!   (`TP_STATUS_CSUMNOTREADY`) get their TCP/UDP checksum computed here;
//! * frames larger than a ring slot (a GSO/GRO super-frame) are dropped and
//!   counted as `rx_oversize`: disable TSO/GSO/GRO on the path.

use super::{Port, PortStats};
use crate::buffers::{Annotation, BufId, BufferPool, Rx};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{fence, Ordering};

const TPACKET_V2: libc::c_int = 1;
const FRAME_SIZE: usize = 4096;
const BLOCK_SIZE: usize = 1 << 20;
const BLOCK_NR: usize = 8;
const FRAME_NR: usize = BLOCK_SIZE / FRAME_SIZE * BLOCK_NR;
/// Frames handed to the kernel per `sendmmsg` (and the most `send` notes
/// before it hands them over without waiting for the flush).
pub const TX_BATCH: usize = 64;

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

/// An AF_PACKET port with its receive ring.
pub struct AfPacket {
    fd: OwnedFd,
    ring: NonNull<u8>,
    ring_len: usize,
    cur: usize,
    /// Pool buffers to send, since the last hand-over.
    tx_queue: Vec<BufId>,
    /// Frames `send` accepted that could not go, since the last flush.
    tx_failed: u64,
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
    /// Open a promiscuous AF_PACKET socket with a receive ring on `ifname`.
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
        let req = libc::tpacket_req {
            tp_block_size: BLOCK_SIZE as u32,
            tp_block_nr: BLOCK_NR as u32,
            tp_frame_size: FRAME_SIZE as u32,
            tp_frame_nr: FRAME_NR as u32,
        };
        setsockopt(s, libc::SOL_PACKET, libc::PACKET_RX_RING, &req)?;
        let ring_len = BLOCK_SIZE * BLOCK_NR;
        // SAFETY: maps the ring the kernel just allocated for this socket;
        // length and flags are the ones PACKET_RX_RING requires.
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
            cur: 0,
            tx_queue: Vec::with_capacity(TX_BATCH),
            tx_failed: 0,
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

    /// The slot header at ring position `i`.
    fn slot(&self, i: usize) -> *mut libc::tpacket2_hdr {
        // SAFETY: `i < FRAME_NR`, so the offset stays inside the mapping.
        unsafe { self.ring.as_ptr().add(i * FRAME_SIZE) as *mut libc::tpacket2_hdr }
    }

    /// Take the socket's pending error (which would otherwise keep `poll`
    /// reporting `POLLERR`, and the runner spinning): the interface went
    /// down (ENETDOWN, cleared here; the ring resumes when it is up again)
    /// or was deleted (an error naming it; see [`super::IfWatch`]).
    fn check_error(&mut self) -> io::Result<()> {
        self.watch.check(self.fd.as_fd(), &self.name)
    }

    /// Hand the noted pool buffers to the kernel, [`TX_BATCH`] per
    /// `sendmmsg`, straight from the pool. A frame the kernel refuses
    /// ends the batch: it and the rest are counted in `tx_failed` (the
    /// interface is down or gone, or the socket's send buffer is full).
    fn kick(&mut self, pool: &BufferPool) {
        let mut at = 0;
        while at < self.tx_queue.len() {
            let batch = &self.tx_queue[at..(at + TX_BATCH).min(self.tx_queue.len())];
            let mut iov: [libc::iovec; TX_BATCH] = [libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            }; TX_BATCH];
            // SAFETY: an all-zero mmsghdr is a valid empty header (no
            // address, no control data).
            let mut hdrs: [libc::mmsghdr; TX_BATCH] = unsafe { std::mem::zeroed() };
            for ((b, v), h) in batch.iter().zip(iov.iter_mut()).zip(hdrs.iter_mut()) {
                let f = pool.frame(*b);
                v.iov_base = f.as_ptr() as *mut libc::c_void;
                v.iov_len = f.len();
                h.msg_hdr.msg_iov = v;
                h.msg_hdr.msg_iovlen = 1;
            }
            // SAFETY: `hdrs[..n]` are initialised headers, each pointing to
            // one iovec of `iov` that points into a pool buffer; `pool` is
            // borrowed for the call, so the buffers stay alive and
            // unchanged, and the kernel only reads them. No address: the
            // socket is bound to the interface.
            let rc = unsafe {
                libc::sendmmsg(
                    self.fd.as_raw_fd(),
                    hdrs.as_mut_ptr(),
                    batch.len() as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if rc > 0 {
                at += rc as usize;
                continue;
            }
            if rc < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            self.tx_failed += (self.tx_queue.len() - at) as u64;
            break;
        }
        self.tx_queue.clear();
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
            let h = self.slot(self.cur);
            // SAFETY: `h` points to a slot header inside the live mapping;
            // the status word is read volatile because the kernel writes it.
            let status = unsafe { std::ptr::read_volatile(&(*h).tp_status) };
            if status & libc::TP_STATUS_USER == 0 {
                return self.check_error();
            }
            // Order the reads of the frame after the status read.
            fence(Ordering::Acquire);
            // SAFETY: the kernel handed this slot to us (TP_STATUS_USER):
            // its header and `tp_snaplen` bytes at `tp_mac` are stable and
            // inside the slot until we give it back below.
            let (len, snap, mac, tci, tpid) = unsafe {
                (
                    (*h).tp_len as usize,
                    (*h).tp_snaplen as usize,
                    (*h).tp_mac as usize,
                    (*h).tp_vlan_tci,
                    (*h).tp_vlan_tpid,
                )
            };
            let data = if mac + snap <= FRAME_SIZE {
                // SAFETY: bounds checked just above against the slot size;
                // the slice is used only before the slot is given back.
                Some(unsafe { std::slice::from_raw_parts((h as *const u8).add(mac), snap) })
            } else {
                None
            };
            match data {
                Some(d) if len == snap => {
                    // A VLAN tag the kernel moved into the header goes back
                    // between the addresses and the ethertype, in the copy.
                    let vlan = status & libc::TP_STATUS_VLAN_VALID != 0 && d.len() >= 12;
                    let total = d.len() + if vlan { 4 } else { 0 };
                    let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                        tpid
                    } else {
                        0x8100
                    };
                    let mut tag = [0u8; 4];
                    tag[..2].copy_from_slice(&tpid.to_be_bytes());
                    tag[2..].copy_from_slice(&tci.to_be_bytes());
                    if total > crate::buffers::BUF_SIZE {
                        self.rx_oversize += 1;
                    } else {
                        let parts: [&[u8]; 3] = if vlan {
                            [&d[..12], &tag, &d[12..]]
                        } else {
                            [d, &[], &[]]
                        };
                        // The frame's one copy: out of the ring slot into a
                        // pool buffer. Refused at the cap: only the slot
                        // is given back.
                        if let Some(f) = rx.copy(&parts, Annotation::default()) {
                            if status & libc::TP_STATUS_CSUMNOTREADY != 0 && fix_l4_checksum(f) {
                                self.csum_fixed += 1;
                            }
                        }
                        self.stats.rx_frames += 1;
                        self.stats.rx_bytes += total as u64;
                    }
                }
                _ => self.rx_oversize += 1,
            }
            fence(Ordering::Release);
            // SAFETY: hands the slot back to the kernel; no reference into
            // it (`data`) is used past this point.
            unsafe { std::ptr::write_volatile(&mut (*h).tp_status, libc::TP_STATUS_KERNEL) };
            self.cur = (self.cur + 1) % FRAME_NR;
        }
        Ok(())
    }

    fn send(&mut self, pool: &BufferPool, buf: BufId) -> io::Result<()> {
        let n = pool.frame(buf).len();
        if n > FRAME_SIZE {
            self.stats.tx_errors += 1;
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "frame longer than the interface takes",
            ));
        }
        // Noted only: the runner keeps the buffer until the flush.
        self.tx_queue.push(buf);
        self.stats.tx_frames += 1;
        self.stats.tx_bytes += n as u64;
        if self.tx_queue.len() >= TX_BATCH {
            self.kick(pool);
        }
        Ok(())
    }

    fn flush(&mut self, pool: &BufferPool) -> u64 {
        self.kick(pool);
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
