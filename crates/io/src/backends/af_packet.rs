//! AF_PACKET sockets with memory-mapped TPACKET_V2 receive and transmit
//! rings, bound to an existing interface (for `pipelab bridge`).
//!
//! Reception is batched and copies nothing: the kernel writes frames into
//! a receive ring shared with this process and flips each slot's status
//! word; the port walks the ring after one `poll`, with no system call per
//! frame, and lends each slot to the runner's buffer pool
//! ([`LentFrame`]): the frame stays in the slot while the emulation holds
//! it, and the slot goes back to the kernel when the pool is done with it
//! ([`Port::reclaim`]). The last frame of a batch is lent too: a packet
//! socket polls readable while the slot before the kernel's next one is
//! not the kernel's, so the descriptor the runner waits on is an epoll
//! instance watching the socket edge-triggered ([`AfPacket::fd`]): it is
//! readable when a frame arrived since the port last looked, whatever
//! the slots lent meanwhile. The kernel fills the ring in order and drops what
//! arrives while its next slot is still lent, so a slot may stay lent for
//! at most [`LEND_WINDOW`] arrivals (half the ring): a frame held longer
//! (a long delay, a deep queue) is copied into the pool then
//! ([`Rx::unlend`], counted in `rx_unlent`) and its slot given back.
//!
//! Transmission copies each frame once, from its pool buffer into a slot
//! of the transmit ring ([`Port::send`]); [`Port::flush`] (the runner calls
//! it after each round of departures; `send` too when half the ring
//! waits) hands the marked slots to the kernel with one `send` call. So a
//! forwarded frame is copied once in user space, on its way out. Frames
//! the kernel did not take (interface down or gone) are counted as not
//! transmitted.
//!
//! Why a transmit ring and not `sendmmsg` from the pool buffers (which
//! would copy nothing in user space): the kernel's `sendmmsg` offers the
//! CPU to other tasks after every message, and its per-message path costs
//! more than the ring's; measured on a bridge, three times the involuntary
//! context switches, 1.5 times the CPU per frame and loss at 150 kpps of
//! unbatched frames where the ring loses none (BENCHMARKS.md).
//!
//! Why V2 and not V3: a TPACKET_V3 ring hands whole blocks to user space
//! only when a block fills or its retire timer (at least 1 ms) fires, which
//! would add up to a millisecond of delay to sparse traffic, beyond the
//! delay-precision target. V2 releases every frame at once.
//!
//! Details a forwarding plane must get right:
//! * `PACKET_IGNORE_OUTGOING`: the socket does not see frames leaving its
//!   interface (ours, or the host's), only arrivals;
//! * promiscuous membership, so frames for other MACs are seen (a bridge);
//! * VLAN tags the kernel moved into metadata are put back in the frame
//!   (in the slot, in the room the kernel leaves before the frame);
//! * frames whose checksum the sender left to offload
//!   (`TP_STATUS_CSUMNOTREADY`) get their TCP/UDP checksum computed here;
//! * frames larger than a pool buffer (a GSO/GRO super-frame) are dropped
//!   and counted as `rx_oversize`: disable TSO/GSO/GRO on the path, or
//!   open the port with virtio-net headers ([`AfPacket::open_offloaded`]).
//!
//! **Super-frames** ([`AfPacket::open_offloaded`], `PACKET_VNET_HDR`):
//! the kernel writes a virtio-net header before every frame, in the
//! receive ring (TPACKET_V2 takes it: `tpacket_rcv` writes it just
//! before the frame in the slot, `tpacket_snd` reads it at the start of
//! a transmit slot's data; checked in `net/packet/af_packet.c` for this
//! kernel's 6.18). A GRO super-frame (or a TSO one from a veth peer) does
//! not fit a 2 KB slot: with `PACKET_COPY_THRESH` the kernel leaves a
//! truncated copy in the slot, marked `TP_STATUS_COPY`, and queues the
//! whole frame on the socket, where it is read (`readv`: the header, a
//! small pool buffer, a large one's tail; no copy in user space but the
//! 2 KB head's) in its turn. A super-frame kept whole is sent through a
//! second, ring-less socket (`writev` of header and frame, after the
//! transmit ring is handed over, so the order holds); everything else
//! goes through the ring with its header (`gso_type` NONE for a
//! segment). VLAN tags of super-frames read from the socket are not
//! put back (the kernel reports them beside the frame; veth keeps them
//! in it).

use super::lend::{LentFrame, Mapping};
use super::{Port, PortStats};
use crate::buffers::{Annotation, BufId, BufferPool, Rx, BUF_SIZE};
use crate::gso::{VnetHdr, VNET_HDR_LEN};
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

const TPACKET_V2: libc::c_int = 1;
/// A receive slot: its header, the kernel's padding and a frame of up to
/// 1982 bytes (an MTU of 1500 with VLAN tags fits; larger frames are
/// truncated by the kernel and dropped as oversize).
const FRAME_SIZE: usize = 2048;
const BLOCK_SIZE: usize = 1 << 20;
/// 16 MiB of receive ring: 8192 slots.
const BLOCK_NR: usize = 16;
const FRAME_NR: usize = BLOCK_SIZE / FRAME_SIZE * BLOCK_NR;
/// The most arrivals a receive slot stays lent for: half the ring (at
/// 150 kpps, 27 ms; a frame held longer is copied into the pool).
pub const LEND_WINDOW: usize = FRAME_NR / 2;
/// A transmit slot.
const TX_FRAME_SIZE: usize = 4096;
/// 2 MiB of transmit ring: 512 slots.
const TX_BLOCK_NR: usize = 2;
const TX_FRAME_NR: usize = BLOCK_SIZE / TX_FRAME_SIZE * TX_BLOCK_NR;
/// Where a transmit slot's frame starts (TPACKET2_HDRLEN, aligned).
const TX_DATA: usize = 32;
/// `PACKET_COPY_THRESH`: frames too long for a receive slot are also
/// queued whole on the socket.
const PACKET_COPY_THRESH: libc::c_int = 7;
/// `PACKET_VNET_HDR`: a virtio-net header before every frame.
const PACKET_VNET_HDR: libc::c_int = 15;
/// `TP_STATUS_COPY`: the slot holds a truncated copy; the whole frame
/// waits on the socket.
const TP_STATUS_COPY: u32 = 1 << 1;
/// Receive buffer asked for the super-frames queued on the socket: room
/// for a few hundred of them.
const VNET_RCVBUF: libc::c_int = 32 << 20;

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

/// A receive slot lent to the pool: the buffer holding it, the offset of
/// the frame in the mapping (its token's address) and the lending's
/// number.
#[derive(Clone, Copy, Debug)]
struct Lending {
    buf: BufId,
    addr: u64,
    seq: u64,
}

/// An AF_PACKET port with its receive and transmit rings.
pub struct AfPacket {
    fd: OwnedFd,
    /// The receive ring, then the transmit ring.
    ring: Arc<Mapping>,
    /// Next receive slot to read.
    cur: usize,
    /// Per receive slot: the lending it is in, if lent.
    lent: Vec<Option<Lending>>,
    /// Lendings in the order they were made, as (slot, number); an entry
    /// whose slot was given back (or lent again) since is skipped.
    lent_order: VecDeque<(usize, u64)>,
    /// The number of the next lending.
    lent_seq: u64,
    /// Next transmit slot to fill.
    tx_cur: usize,
    /// Slots marked for sending since the last kick.
    tx_marked: usize,
    /// Frames `send` accepted that could not go, since the last flush.
    tx_failed: u64,
    name: String,
    /// The interface the socket is bound to, watched.
    watch: super::IfWatch,
    stats: PortStats,
    /// Frames larger than a pool buffer (dropped).
    pub rx_oversize: u64,
    /// Frames whose checksum was computed here.
    pub csum_fixed: u64,
    /// Frames copied into the pool after [`LEND_WINDOW`] arrivals, their
    /// receive slot given back before the pool was done with them.
    pub rx_unlent: u64,
    /// Ring overflows reported by the kernel so far (reading resets them
    /// in the kernel, so they are accumulated here).
    kernel_drops: std::cell::Cell<u64>,
    /// Frames come and go with a virtio-net header; super-frames kept
    /// whole leave by this ring-less socket.
    vnet: Option<OwnedFd>,
    /// Super-frames read whole from the socket (`TP_STATUS_COPY`).
    pub rx_superframes: u64,
    /// Where the transmit ring starts in the mapping (after the receive
    /// ring; 0 for a transmit handle, which has none).
    tx_base: usize,
    /// The socket watched edge-triggered (receiving ports): what the
    /// runner waits on, readable once per arrival, not while a lent slot
    /// makes the socket itself poll readable.
    edge: Option<Epoll>,
}

impl AfPacket {
    /// Open a promiscuous AF_PACKET socket with receive and transmit rings
    /// on `ifname`.
    pub fn open(ifname: &str) -> io::Result<AfPacket> {
        AfPacket::open_with(ifname, false)
    }

    /// Open it as [`AfPacket::open`] does, with virtio-net headers: GRO
    /// and TSO super-frames come whole (see the module documentation).
    pub fn open_offloaded(ifname: &str) -> io::Result<AfPacket> {
        AfPacket::open_with(ifname, true)
    }

    /// A packet socket of protocol `proto` (network order), non-blocking.
    fn socket(proto: libc::c_int) -> io::Result<OwnedFd> {
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
        Ok(unsafe { OwnedFd::from_raw_fd(raw) })
    }

    /// Bind packet socket `fd` to interface `ifindex`, protocol `proto`
    /// (network order; 0 receives nothing).
    /// The socket that sends whole super-frames beside the ring (virtio-net
    /// headers on; protocol 0: it sends, and receives nothing).
    fn vnet_side(ifindex: u32) -> io::Result<OwnedFd> {
        let side = AfPacket::socket(0)?;
        let one: libc::c_int = 1;
        setsockopt(side.as_raw_fd(), libc::SOL_PACKET, PACKET_VNET_HDR, &one)?;
        AfPacket::bind(side.as_raw_fd(), ifindex, 0)?;
        Ok(side)
    }

    /// Ask for the transmit ring on socket `s` (mapped by the caller).
    fn tx_ring(s: RawFd) -> io::Result<()> {
        let txreq = libc::tpacket_req {
            tp_block_size: BLOCK_SIZE as u32,
            tp_block_nr: TX_BLOCK_NR as u32,
            tp_frame_size: TX_FRAME_SIZE as u32,
            tp_frame_nr: TX_FRAME_NR as u32,
        };
        setsockopt(s, libc::SOL_PACKET, libc::PACKET_TX_RING, &txreq)
    }

    fn bind(fd: RawFd, ifindex: u32, proto: u16) -> io::Result<()> {
        // SAFETY: sockaddr_ll is plain old data; all-zero is valid.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: `sll` is a valid sockaddr_ll and its size is passed.
        check(unsafe {
            libc::bind(
                fd,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })
    }

    fn open_with(ifname: &str, vnet: bool) -> io::Result<AfPacket> {
        let ifindex = nix::net::if_::if_nametoindex(ifname).map_err(|e| {
            io::Error::new(io::ErrorKind::NotFound, format!("interface {ifname}: {e}"))
        })?;
        let proto = (libc::ETH_P_ALL as u16).to_be() as libc::c_int;
        let fd = AfPacket::socket(proto)?;
        let s = fd.as_raw_fd();
        setsockopt(s, libc::SOL_PACKET, libc::PACKET_VERSION, &TPACKET_V2)?;
        let one: libc::c_int = 1;
        setsockopt(s, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &one)?;
        // Before the rings (the kernel refuses it after).
        let side = if vnet {
            setsockopt(s, libc::SOL_PACKET, PACKET_VNET_HDR, &one)?;
            setsockopt(s, libc::SOL_PACKET, PACKET_COPY_THRESH, &one)?;
            if setsockopt(s, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &VNET_RCVBUF).is_err() {
                setsockopt(s, libc::SOL_SOCKET, libc::SO_RCVBUF, &VNET_RCVBUF)?;
            }
            Some(AfPacket::vnet_side(ifindex)?)
        } else {
            None
        };
        let req = libc::tpacket_req {
            tp_block_size: BLOCK_SIZE as u32,
            tp_block_nr: BLOCK_NR as u32,
            tp_frame_size: FRAME_SIZE as u32,
            tp_frame_nr: FRAME_NR as u32,
        };
        setsockopt(s, libc::SOL_PACKET, libc::PACKET_RX_RING, &req)?;
        AfPacket::tx_ring(s)?;
        // Both rings in one mapping, the receive ring first.
        let ring = Arc::new(Mapping::new(
            Some(s),
            BLOCK_SIZE * (BLOCK_NR + TX_BLOCK_NR),
            0,
        )?);
        let edge = AfPacket::edge(fd.as_fd())?;
        let port = AfPacket {
            fd,
            ring,
            cur: 0,
            lent: vec![None; FRAME_NR],
            lent_order: VecDeque::with_capacity(LEND_WINDOW),
            lent_seq: 0,
            tx_cur: 0,
            tx_marked: 0,
            tx_failed: 0,
            name: ifname.to_string(),
            watch: super::IfWatch::new(ifindex),
            stats: PortStats::default(),
            rx_oversize: 0,
            csum_fixed: 0,
            rx_unlent: 0,
            kernel_drops: std::cell::Cell::new(0),
            vnet: side,
            rx_superframes: 0,
            tx_base: BLOCK_SIZE * BLOCK_NR,
            edge: Some(edge),
        };
        AfPacket::bind(s, ifindex, (libc::ETH_P_ALL as u16).to_be())?;
        // SAFETY: packet_mreq is plain old data; all-zero is valid.
        let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
        mreq.mr_ifindex = ifindex as i32;
        mreq.mr_type = libc::PACKET_MR_PROMISC as u16;
        setsockopt(s, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)?;
        Ok(port)
    }

    /// A transmit handle on `ifname`: a socket of protocol 0 (it receives
    /// nothing) with a transmit ring of its own, for a worker that sends
    /// on a port another worker receives from (any backend's: frames
    /// sent this way do not pass the receiving socket or XDP program).
    /// With `vnet` it writes virtio-net headers as a port opened by
    /// [`AfPacket::open_offloaded`] does (super-frames kept whole leave
    /// by a second, ring-less socket), so that every worker sends a frame
    /// on the port as its receiving worker would.
    pub fn open_tx(ifname: &str, vnet: bool) -> io::Result<AfPacket> {
        let ifindex = nix::net::if_::if_nametoindex(ifname).map_err(|e| {
            io::Error::new(io::ErrorKind::NotFound, format!("interface {ifname}: {e}"))
        })?;
        let fd = AfPacket::socket(0)?;
        let s = fd.as_raw_fd();
        setsockopt(s, libc::SOL_PACKET, libc::PACKET_VERSION, &TPACKET_V2)?;
        // Before the ring (the kernel refuses it after).
        let side = if vnet {
            let one: libc::c_int = 1;
            setsockopt(s, libc::SOL_PACKET, PACKET_VNET_HDR, &one)?;
            Some(AfPacket::vnet_side(ifindex)?)
        } else {
            None
        };
        AfPacket::tx_ring(s)?;
        let ring = Arc::new(Mapping::new(Some(s), BLOCK_SIZE * TX_BLOCK_NR, 0)?);
        AfPacket::bind(s, ifindex, 0)?;
        Ok(AfPacket {
            fd,
            ring,
            cur: 0,
            lent: Vec::new(),
            lent_order: VecDeque::new(),
            lent_seq: 0,
            tx_cur: 0,
            tx_marked: 0,
            tx_failed: 0,
            name: ifname.to_string(),
            watch: super::IfWatch::new(ifindex),
            stats: PortStats::default(),
            rx_oversize: 0,
            csum_fixed: 0,
            rx_unlent: 0,
            kernel_drops: std::cell::Cell::new(0),
            vnet: side,
            rx_superframes: 0,
            tx_base: 0,
            edge: None,
        })
    }

    /// An epoll instance watching `fd` for arrivals, edge-triggered.
    fn edge(fd: BorrowedFd<'_>) -> io::Result<Epoll> {
        let ep = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
        ep.add(
            fd,
            EpollEvent::new(EpollFlags::EPOLLIN | EpollFlags::EPOLLET, 0),
        )?;
        Ok(ep)
    }

    /// Consume the arrivals the epoll instance reported, so that it polls
    /// readable again only on the next one.
    fn drain_edge(&self) -> io::Result<()> {
        if let Some(ep) = &self.edge {
            let mut ev = [EpollEvent::empty()];
            ep.wait(&mut ev, EpollTimeout::ZERO)?;
        }
        Ok(())
    }

    /// Make the epoll instance readable again at once (frames are left in
    /// the ring past a full batch): modifying a watch re-checks its level.
    fn rearm_edge(&self) -> io::Result<()> {
        if let Some(ep) = &self.edge {
            ep.modify(
                self.fd.as_fd(),
                &mut EpollEvent::new(EpollFlags::EPOLLIN | EpollFlags::EPOLLET, 0),
            )?;
        }
        Ok(())
    }

    /// The receive slot header at ring position `i`.
    fn slot(&self, i: usize) -> *mut libc::tpacket2_hdr {
        // SAFETY: `i < FRAME_NR`, so the offset stays inside the receive
        // ring, at the start of the mapping.
        unsafe { self.ring.ptr().add(i * FRAME_SIZE) as *mut libc::tpacket2_hdr }
    }

    /// The transmit slot header at position `i`.
    fn tx_slot(&self, i: usize) -> *mut libc::tpacket2_hdr {
        // SAFETY: `i < TX_FRAME_NR`; the transmit ring starts at
        // `tx_base` (after the receive ring, or at 0 in a transmit
        // handle's mapping), so the offset stays inside the mapping.
        unsafe { self.ring.ptr().add(self.tx_base + i * TX_FRAME_SIZE) as *mut libc::tpacket2_hdr }
    }

    fn tx_status(&self, i: usize) -> u32 {
        // SAFETY: a slot header inside the live mapping; the status word
        // is read volatile because the kernel writes it.
        unsafe { std::ptr::read_volatile(&(*self.tx_slot(i)).tp_status) }
    }

    /// Whether receive slot `i` holds a frame not read yet.
    fn waiting(&self, i: usize) -> bool {
        // SAFETY: a slot header inside the live mapping; the status word
        // is read volatile because the kernel writes it.
        let status = unsafe { std::ptr::read_volatile(&(*self.slot(i)).tp_status) };
        status & libc::TP_STATUS_USER != 0 && self.lent[i].is_none()
    }

    /// Give receive slot `i` back to the kernel.
    fn give_back(&mut self, i: usize) {
        self.lent[i] = None;
        let h = self.slot(i);
        fence(Ordering::Release);
        // SAFETY: slot `i` is ours (handed over, and not lent: its token
        // came back, or was never made); no reference into it is used
        // past this point.
        unsafe { std::ptr::write_volatile(&mut (*h).tp_status, libc::TP_STATUS_KERNEL) };
    }

    /// Take back every slot lent [`LEND_WINDOW`] arrivals ago or more, its
    /// frame copied into the pool, before the kernel comes round to it.
    fn take_back_old(&mut self, rx: &mut Rx<'_>) {
        while let Some(&(i, seq)) = self.lent_order.front() {
            let Some(l) = self.lent[i].filter(|l| l.seq == seq) else {
                self.lent_order.pop_front();
                continue;
            };
            if (self.cur + FRAME_NR - i) % FRAME_NR < LEND_WINDOW {
                break;
            }
            self.lent_order.pop_front();
            if let Some(token) = rx.unlend(l.buf, l.addr) {
                drop(token);
                self.rx_unlent += 1;
                self.give_back(i);
            }
        }
    }

    /// Take the socket's pending error (which would otherwise keep `poll`
    /// reporting `POLLERR`, and the runner spinning): the interface went
    /// down (ENETDOWN, cleared here; the ring resumes when it is up again)
    /// or was deleted (an error naming it; see [`super::IfWatch`]).
    fn check_error(&mut self) -> io::Result<()> {
        self.watch.check(self.fd.as_fd(), &self.name)
    }

    /// Ask the kernel to send every marked transmit slot. On failure,
    /// take back the slots it left marked and count them in `tx_failed`.
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
            let h = self.tx_slot(i);
            fence(Ordering::Release);
            // SAFETY: the kernel stopped before this slot (the send call
            // returned); handing it back to ourselves as available.
            unsafe { std::ptr::write_volatile(&mut (*h).tp_status, libc::TP_STATUS_AVAILABLE) };
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

    /// The epoll instance watching the socket edge-triggered (a
    /// transmit handle, which receives nothing: the socket).
    fn fd(&self) -> BorrowedFd<'_> {
        match &self.edge {
            Some(ep) => ep.0.as_fd(),
            None => self.fd.as_fd(),
        }
    }

    fn recv(&mut self, rx: &mut Rx<'_>) -> io::Result<()> {
        if self.lent.is_empty() {
            // A transmit handle has no receive ring.
            return Ok(());
        }
        self.take_back_old(rx);
        let mut drained = false;
        loop {
            let i = self.cur;
            if !rx.wants_more() {
                if self.waiting(i) {
                    // A full batch, more in the ring: come back at once.
                    self.rearm_edge()?;
                }
                return Ok(());
            }
            let h = self.slot(i);
            // SAFETY: `h` points to a slot header inside the live mapping;
            // the status word is read volatile because the kernel writes it.
            let mut status = unsafe { std::ptr::read_volatile(&(*h).tp_status) };
            if status & libc::TP_STATUS_USER == 0 && !drained {
                // The ring is read. Consume the arrivals reported so far,
                // then look once more: a frame written before the drain
                // is read now, one written after it wakes the runner.
                drained = true;
                self.drain_edge()?;
                // SAFETY: as above.
                status = unsafe { std::ptr::read_volatile(&(*h).tp_status) };
            }
            if status & libc::TP_STATUS_USER == 0 {
                return self.check_error();
            }
            // Order the reads of the frame after the status read.
            fence(Ordering::Acquire);
            self.cur = (i + 1) % FRAME_NR;
            if self.vnet.is_some() && status & TP_STATUS_COPY != 0 {
                // A super-frame: its slot holds a truncated copy, the
                // whole frame waits on the socket, in order.
                self.give_back(i);
                let fd = self.fd.as_fd();
                let got =
                    rx.read_vnet(Annotation::default(), |iov| {
                        match nix::sys::uio::readv(fd, iov) {
                            Ok(n) => Ok(Some(n)),
                            Err(nix::errno::Errno::EAGAIN) => Ok(None),
                            Err(e) => Err(io::Error::from(e)),
                        }
                    })?;
                if let Some(n) = got {
                    self.stats.rx_frames += 1;
                    self.stats.rx_bytes += n as u64;
                    self.rx_superframes += 1;
                }
                continue;
            }
            // SAFETY: the kernel handed this slot to us (TP_STATUS_USER):
            // its header is stable until we give the slot back.
            let (len, snap, mac, tci, tpid) = unsafe {
                (
                    (*h).tp_len as usize,
                    (*h).tp_snaplen as usize,
                    (*h).tp_mac as usize,
                    (*h).tp_vlan_tci,
                    (*h).tp_vlan_tpid,
                )
            };
            // A VLAN tag the kernel moved into the header goes back
            // between the addresses and the ethertype: the addresses move
            // 4 bytes towards the slot's start, into the room the kernel
            // leaves before the frame (past the header).
            let vlan = status & libc::TP_STATUS_VLAN_VALID != 0;
            // The virtio-net header, just before the frame (read before
            // a VLAN tag moves the addresses over it).
            let mut vnet = VnetHdr::default();
            if self.vnet.is_some()
                && mac >= std::mem::size_of::<libc::tpacket2_hdr>() + VNET_HDR_LEN
            {
                // SAFETY: the slot is ours until given back, and the
                // kernel wrote the header in the VNET_HDR_LEN bytes
                // before the frame, past the slot's header (checked).
                let b = unsafe {
                    std::slice::from_raw_parts(
                        (h as *const u8).add(mac - VNET_HDR_LEN),
                        VNET_HDR_LEN,
                    )
                };
                vnet = VnetHdr::parse(b).unwrap_or_default();
                if vlan && vnet.needs_csum() {
                    vnet.csum_start += 4;
                }
            }
            let (start, total) = if vlan {
                (mac.wrapping_sub(4), snap + 4)
            } else {
                (mac, snap)
            };
            let fits = len == snap
                && snap >= 14
                && start >= std::mem::size_of::<libc::tpacket2_hdr>()
                && mac + snap <= FRAME_SIZE
                && total <= BUF_SIZE;
            if !fits {
                self.rx_oversize += 1;
                self.give_back(i);
                continue;
            }
            // SAFETY: the slot is ours until given back; `start..mac +
            // snap` lies inside it (checked above) and past its header.
            let frame = unsafe { std::slice::from_raw_parts_mut((h as *mut u8).add(start), total) };
            if vlan {
                let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                    tpid
                } else {
                    0x8100
                };
                frame.copy_within(4..16, 0);
                frame[12..14].copy_from_slice(&tpid.to_be_bytes());
                frame[14..16].copy_from_slice(&tci.to_be_bytes());
            }
            // A super-frame's checksum is redone segment by segment, or
            // left to the device if it leaves whole; a plain frame's is
            // completed here.
            if !vnet.is_gso() {
                vnet = VnetHdr::default();
                if status & libc::TP_STATUS_CSUMNOTREADY != 0 && fix_l4_checksum(frame) {
                    self.csum_fixed += 1;
                }
            }
            self.stats.rx_frames += 1;
            self.stats.rx_bytes += total as u64;
            let addr = i * FRAME_SIZE + start;
            // SAFETY: the kernel handed this slot over and takes it back
            // only when its status says so, which `give_back` writes once
            // the token came back (`reclaim`) or the frame was copied out
            // (`take_back_old`); this port makes no other access to the
            // frame meanwhile (`frame` is not used past this point).
            let token = unsafe { LentFrame::new(self.ring.clone(), addr, FRAME_SIZE - start) };
            match token.map(|t| rx.lend(t, total, Annotation::default())) {
                Some(Ok(buf)) => {
                    rx.set_vnet(vnet);
                    let seq = self.lent_seq;
                    self.lent_seq += 1;
                    self.lent[i] = Some(Lending {
                        buf,
                        addr: addr as u64,
                        seq,
                    });
                    self.lent_order.push_back((i, seq));
                }
                // Refused at the cap: back to the kernel at once.
                Some(Err(_)) | None => self.give_back(i),
            }
        }
    }

    fn send(&mut self, pool: &BufferPool, buf: BufId) -> io::Result<()> {
        let len = pool.frame(buf).len();
        let hdr = self.vnet.as_ref().map(|_| pool.meta(buf).vnet.to_bytes());
        let room = TX_FRAME_SIZE - TX_DATA - hdr.map_or(0, |h| h.len());
        if let (Some(h), true) = (&hdr, len > room) {
            // A super-frame sent whole: after what the ring holds, by the
            // ring-less socket (the kernel reads it from the buffer; no
            // copy here).
            self.kick();
            let parts = [
                std::io::IoSlice::new(h),
                std::io::IoSlice::new(pool.frame(buf)),
            ];
            let sent = match &self.vnet {
                Some(side) => nix::sys::uio::writev(side, &parts).map_err(io::Error::from),
                None => Err(io::Error::other("no socket for super-frames")),
            };
            return match sent {
                Ok(n) if n == h.len() + len => {
                    self.stats.tx_frames += 1;
                    self.stats.tx_bytes += len as u64;
                    Ok(())
                }
                Ok(_) => {
                    self.stats.tx_errors += 1;
                    Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "short write of a super-frame",
                    ))
                }
                Err(e) => {
                    self.stats.tx_errors += 1;
                    Err(e)
                }
            };
        }
        if len > room {
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
        // area of TX_FRAME_SIZE - TX_DATA bytes lies inside the mapping and
        // nothing else borrows it.
        let dst = unsafe {
            std::slice::from_raw_parts_mut((h as *mut u8).add(TX_DATA), TX_FRAME_SIZE - TX_DATA)
        };
        // The frame's one copy: from the pool buffer (or the receive slot
        // it still is in) into the transmit slot, after its virtio-net
        // header if the socket takes one.
        let skip = match hdr {
            Some(hb) => {
                dst[..hb.len()].copy_from_slice(&hb);
                hb.len()
            }
            None => 0,
        };
        let n = pool.copy_out(buf, &mut dst[skip..]);
        // SAFETY: header fields of the slot we own, plain integers.
        unsafe {
            (*h).tp_len = (skip + n) as u32;
            (*h).tp_snaplen = (skip + n) as u32;
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

    fn reclaim(&mut self, frame: LentFrame) {
        // A slot of an earlier socket's ring (the port was replaced) is
        // simply dropped: its mapping goes with the last such frame.
        if !frame.is_from(&self.ring) {
            return;
        }
        let addr = frame.addr();
        let i = addr as usize / FRAME_SIZE;
        if self.lent.get(i).copied().flatten().map(|l| l.addr) == Some(addr) {
            drop(frame);
            self.give_back(i);
        }
    }

    fn offloads(&self) -> bool {
        self.vnet.is_some()
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
