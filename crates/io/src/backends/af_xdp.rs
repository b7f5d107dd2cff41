//! AF_XDP sockets on an existing interface (for `pipelab bridge` on veth
//! and other single-queue devices), with no helper library: the XDP
//! program, its map and its attachment are made with the `bpf` system call.
//!
//! The program is five instructions, the equivalent of
//!
//! ```c
//! return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
//! ```
//!
//! where `xsks` is a one-entry `BPF_MAP_TYPE_XSKMAP` holding this socket:
//! every frame the interface receives (any ethertype) is redirected to the
//! socket, and a frame on a queue without a socket goes on to the kernel's
//! stack. It is attached through a BPF link (`BPF_LINK_CREATE`), which the
//! kernel detaches when the link's descriptor closes: the interface is
//! left as it was even if the process is killed.
//!
//! Native (driver) XDP is tried first, then generic (skb) XDP. On veth,
//! native XDP runs in the receiving veth's NAPI poll. What the peer needs:
//! nothing for this socket. A veth needs an XDP program (or GRO) on its
//! *peer* only to take frames redirected into it by `XDP_TX` or a
//! `bpf_redirect` to a devmap (`ndo_xdp_xmit`); an AF_XDP socket in copy
//! mode transmits through the ordinary transmit path (one `sk_buff` per
//! frame, `veth_xmit`), which needs nothing on the peer. veth has no zero
//! copy, so the socket is bound in copy mode: the kernel copies each frame
//! from its buffer into the shared memory area (UMEM) on receive, and out
//! of it on transmit.
//!
//! Memory: one UMEM per port of [`FRAMES`] chunks of [`CHUNK`] bytes:
//! [`TX_CHUNKS`] kept for transmitting, the rest for receiving, given to
//! the kernel through the fill ring (as much as it holds) or waiting in a
//! free list. Receive walks the RX ring with no system call per frame and
//! *lends* each chunk to the runner's buffer pool ([`LentFrame`]): the
//! frame stays in the UMEM for its emulated delay, without a copy, and
//! the chunk goes back to the fill ring when the pool is done with it
//! ([`Port::reclaim`]). Transmit copies the frame from the pool buffer
//! into one of the port's transmit chunks (the frame's one copy in user
//! space: the receiving port's UMEM is not this one), writes its
//! descriptor to the TX ring, and [`Port::flush`] wakes the kernel once
//! per batch (`sendto` with no data), so a burst of departures costs one
//! system call. Should the receive chunks run short (fewer than
//! [`SPILL_BELOW`] free: many frames held for long delays), a frame is
//! copied into a pool buffer of the runner's own and its chunk returned
//! at once, so the runner's memory cap, not the UMEM, bounds what a port
//! can hold; such a frame costs two copies (counted in `spilled`).
//!
//! **Two ports of one worker share a UMEM** ([`AfXdp::open_pair`]): the
//! second socket is bound with `XDP_SHARED_UMEM` to the first's UMEM,
//! with fill and completion rings of its own (Linux 5.10 and later), and
//! each port receives into its own half of the chunks. A frame one port
//! received then leaves by the other with no copy in user space: its
//! chunk goes on the transmitting port's TX ring as it is. A chunk has
//! two holders then, the pool (the frame lent) and the TX ring, counted
//! per chunk (one byte each); it goes back to the port it belongs to once
//! both are done (the pool's [`Port::reclaim`], the completion ring).
//! A frame shared by a duplicate, or not lent out of this UMEM, is
//! copied into a transmit chunk as before. Ports opened apart (two
//! workers, each transmitting through an AF_PACKET handle of its own;
//! an interface replaced while running) each have their own UMEM.
//!
//! Checksums: XDP does not carry the kernel's "checksum not yet computed"
//! mark of a frame a local sender left to offload (a veth peer's default).
//! A TCP or UDP frame whose checksum field holds exactly the pseudo-header
//! sum (what the kernel leaves there for the offload) gets its checksum
//! computed here, as the AF_PACKET backend does from the ring's status
//! flag; any other checksum is left alone.
//!
//! Limits: one receive queue (veth's default; an interface with more is
//! refused, so that no frame would bypass the bridge), frames up to one
//! chunk less the headroom (no multi-buffer XDP: disable GRO/GSO/TSO on
//! the path, as for AF_PACKET), and no other XDP program on the interface.

use super::af_packet::fix_l4_checksum;
use super::lend::{LentFrame, Mapping};
use super::{Port, PortStats};
use crate::buffers::{Annotation, BufId, BufferPool, Rx};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

/// Size of one UMEM chunk.
pub const CHUNK: usize = 2048;
/// Chunks per port: 32 MiB, enough to hold the frames of a port for
/// 10 ms at over a million frames per second without a copy.
pub const FRAMES: usize = 16384;
/// Entries of each ring.
const RING: u32 = 2048;
/// Chunks kept for transmitting (as many as the TX ring holds).
pub const TX_CHUNKS: usize = RING as usize;
/// Below this many free receive chunks (besides those on the fill ring),
/// frames are copied into the pool and their chunks returned at once.
pub const SPILL_BELOW: usize = 1024;

/// What two ports sharing a UMEM share besides its memory: who holds
/// each chunk, and the chunks one port freed that belong to the other.
/// Port `i` owns chunks `i * FRAMES .. (i + 1) * FRAMES`.
struct Sharing {
    /// Holders of each chunk a port received into and lent: the pool
    /// (1 while lent) and TX rings (1 for each transmission of it).
    holders: Box<[AtomicU8]>,
    /// Per port: chunks of its own that the other port freed (its
    /// completion ring gave them back last), taken back when it refills.
    returned: [Mutex<Vec<u64>>; 2],
}

impl Sharing {
    fn new() -> Sharing {
        Sharing {
            holders: (0..2 * FRAMES).map(|_| AtomicU8::new(0)).collect(),
            returned: [Mutex::new(Vec::new()), Mutex::new(Vec::new())],
        }
    }

    /// The holder count of the chunk at `chunk` (a chunk's first byte).
    fn holders(&self, chunk: u64) -> Option<&AtomicU8> {
        self.holders.get((chunk / CHUNK as u64) as usize)
    }

    /// The port chunk `chunk` belongs to.
    fn home(chunk: u64) -> usize {
        ((chunk / CHUNK as u64) as usize / FRAMES).min(1)
    }

    /// Chunk `chunk` was lent to the pool: its one holder.
    fn lent(&self, chunk: u64) {
        if let Some(h) = self.holders(chunk) {
            h.store(1, Ordering::Release);
        }
    }

    /// Chunk `chunk` went on a TX ring as it is: one more holder.
    fn sent(&self, chunk: u64) {
        if let Some(h) = self.holders(chunk) {
            h.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// A holder of chunk `chunk` is done with it: whether it was the last
    /// (the chunk is free).
    fn done(&self, chunk: u64) -> bool {
        self.holders(chunk).is_none_or(|h| {
            h.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                Some(v.saturating_sub(1))
            })
            .map_or(true, |before| before <= 1)
        })
    }

    /// Free chunk `chunk` found by port `me`: into `free` if it is `me`'s,
    /// else to its port's returned list.
    fn give_back(&self, chunk: u64, me: usize, free: &mut Vec<u64>) {
        let home = Sharing::home(chunk);
        if home == me {
            free.push(chunk);
        } else {
            self.returned[home]
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(chunk);
        }
    }

    /// Port `me` takes back into `free` its chunks the other port freed.
    fn take_back(&self, me: usize, free: &mut Vec<u64>) {
        let mut back = self.returned[me.min(1)]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        free.append(&mut back);
    }
}

// bpf(2) commands, map and program types, attach type (linux/bpf.h).
const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
const BPF_PSEUDO_MAP_FD: u8 = 1;
const BPF_FUNC_REDIRECT_MAP: i32 = 51;
const XDP_PASS: i32 = 2;
// linux/if_link.h
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// Which XDP hook the program runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum XdpMode {
    /// In the driver (veth: its NAPI poll), before an `sk_buff` exists.
    Native,
    /// Generic (skb) XDP, in the core receive path; works on any device.
    Generic,
}

impl std::fmt::Display for XdpMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            XdpMode::Native => "native XDP",
            XdpMode::Generic => "generic XDP",
        })
    }
}

/// One eBPF instruction (struct bpf_insn).
#[repr(C)]
#[derive(Clone, Copy)]
struct Insn {
    code: u8,
    /// dst_reg in the low nibble, src_reg in the high one.
    regs: u8,
    off: i16,
    imm: i32,
}

const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: (src << 4) | (dst & 0xf),
        off,
        imm,
    }
}

/// `bpf_redirect_map(map, ctx->rx_queue_index, XDP_PASS)`.
fn program(map_fd: RawFd) -> [Insn; 6] {
    [
        // r2 = *(u32 *)(r1 + 16): xdp_md.rx_queue_index
        insn(0x61, 2, 1, 16, 0),
        // r1 = map (ld_imm64, two slots, the map by descriptor)
        insn(0x18, 1, BPF_PSEUDO_MAP_FD, 0, map_fd),
        insn(0, 0, 0, 0, 0),
        // r3 = XDP_PASS: the action when the queue has no socket
        insn(0xb7, 3, 0, 0, XDP_PASS),
        // call bpf_redirect_map
        insn(0x85, 0, 0, 0, BPF_FUNC_REDIRECT_MAP),
        // return r0
        insn(0x95, 0, 0, 0, 0),
    ]
}

#[repr(C)]
#[derive(Default)]
struct MapCreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

#[repr(C)]
#[derive(Default)]
struct MapUpdateAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

#[repr(C)]
#[derive(Default)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

#[repr(C)]
#[derive(Default)]
struct LinkCreateAttr {
    prog_fd: u32,
    target_ifindex: u32,
    attach_type: u32,
    flags: u32,
}

/// The bpf(2) system call with `attr`; returns a new descriptor (or 0).
fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a live, initialised, `repr(C)` prefix of `union
    // bpf_attr` for `cmd`, its exact size is passed, and the kernel
    // zero-extends a shorter attribute; pointers inside it (instructions,
    // license, log) point to memory that outlives the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut T as *mut libc::c_void,
            std::mem::size_of::<T>() as libc::c_uint,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn owned(rc: libc::c_long) -> OwnedFd {
    // SAFETY: `rc` is a descriptor the kernel just returned to us and that
    // nothing else owns.
    unsafe { OwnedFd::from_raw_fd(rc as RawFd) }
}

fn name16(s: &str) -> [u8; 16] {
    let mut n = [0u8; 16];
    for (d, c) in n.iter_mut().zip(s.bytes().take(15)) {
        *d = c;
    }
    n
}

fn setsockopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, val: &T) -> io::Result<()> {
    // SAFETY: `val` points to a live, initialised `T` for the duration of
    // the call and its exact size is passed; the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            val as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// One of the four single-producer single-consumer rings shared with the
/// kernel: a producer index, a consumer index, `size` entries of `T`.
struct Ring<T> {
    _map: Mapping,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    desc: *mut T,
    mask: u32,
    /// Our copy of the index we advance (producer for fill/tx, consumer
    /// for rx/completion).
    local: u32,
}

impl<T: Copy> Ring<T> {
    fn new(
        fd: RawFd,
        off: &libc::xdp_ring_offset,
        size: u32,
        pgoff: u64,
        producer_side: bool,
    ) -> io::Result<Ring<T>> {
        let len = off.desc as usize + size as usize * std::mem::size_of::<T>();
        let map = Mapping::new(Some(fd), len, pgoff)?;
        let base = map.ptr();
        // SAFETY: the offsets come from XDP_MMAP_OFFSETS for this socket
        // and lie inside the `len` bytes just mapped; the index words are
        // 4-byte aligned u32s the kernel accesses atomically.
        let (producer, consumer, desc) = unsafe {
            (
                base.add(off.producer as usize) as *const AtomicU32,
                base.add(off.consumer as usize) as *const AtomicU32,
                base.add(off.desc as usize) as *mut T,
            )
        };
        let mut r = Ring {
            _map: map,
            producer,
            consumer,
            desc,
            mask: size - 1,
            local: 0,
        };
        r.local = if producer_side {
            r.prod().load(Ordering::Relaxed)
        } else {
            r.cons().load(Ordering::Relaxed)
        };
        Ok(r)
    }

    fn prod(&self) -> &AtomicU32 {
        // SAFETY: points into `self.map`, alive as long as `self`.
        unsafe { &*self.producer }
    }

    fn cons(&self) -> &AtomicU32 {
        // SAFETY: points into `self.map`, alive as long as `self`.
        unsafe { &*self.consumer }
    }

    /// Producer side: free entries.
    fn free(&self) -> u32 {
        (self.mask + 1) - self.local.wrapping_sub(self.cons().load(Ordering::Acquire))
    }

    /// Producer side: write the next entry (the caller checked `free`).
    fn push(&mut self, v: T) {
        let i = (self.local & self.mask) as usize;
        // SAFETY: `i <= mask`, inside the descriptor array; the entry is
        // ours until the producer index is published.
        unsafe { self.desc.add(i).write_volatile(v) };
        self.local = self.local.wrapping_add(1);
    }

    /// Producer side: hand the written entries to the kernel.
    fn publish(&self) {
        self.prod().store(self.local, Ordering::Release);
    }

    /// Consumer side: entries waiting.
    fn ready(&self) -> u32 {
        self.prod().load(Ordering::Acquire).wrapping_sub(self.local)
    }

    /// Consumer side: the next entry (the caller checked `ready`).
    fn peek(&self) -> T {
        let i = (self.local & self.mask) as usize;
        // SAFETY: `i <= mask`; the kernel published this entry (Acquire
        // load of the producer index in `ready`) and does not touch it
        // until the consumer index passes it.
        unsafe { self.desc.add(i).read_volatile() }
    }

    /// Consumer side: release entries up to the local index.
    fn release(&mut self, n: u32) {
        self.local = self.local.wrapping_add(n);
        self.cons().store(self.local, Ordering::Release);
    }
}

/// An AF_XDP port: the XDP program and its link, the socket, its UMEM and
/// rings.
pub struct AfXdp {
    // Declaration order is drop order: detach first, free memory last.
    _link: OwnedFd,
    _prog: OwnedFd,
    _map: OwnedFd,
    rx: Ring<libc::xdp_desc>,
    tx: Ring<libc::xdp_desc>,
    fill: Ring<u64>,
    comp: Ring<u64>,
    xsk: OwnedFd,
    /// Shared with the frames lent out of it, which keep it mapped.
    umem: Arc<Mapping>,
    /// Transmit chunks not in flight.
    free_tx: Vec<u64>,
    /// Receive chunks neither with the kernel nor lent.
    free_rx: Vec<u64>,
    /// Frames `send` accepted that the device refused, since the last
    /// flush.
    failed: u64,
    /// Why the socket can no longer transmit (its interface is gone).
    dead: Option<String>,
    /// When a transmission last found the interface down.
    down_since: Option<std::time::Instant>,
    mode: XdpMode,
    name: String,
    /// The interface the socket is bound to, watched.
    watch: super::IfWatch,
    stats: PortStats,
    /// Frames whose checksum was computed here.
    pub csum_fixed: u64,
    /// Frames too long for a transmit chunk (counted as `tx_errors` too).
    pub tx_oversize: u64,
    /// Frames copied at reception because receive chunks ran short.
    pub spilled: u64,
    /// Frames sent from the chunk another port (or this one) received
    /// them in: no copy (ports sharing a UMEM).
    pub zero_copy: u64,
    /// This port's first chunk (bytes into the UMEM): its transmit
    /// chunks, then its receive chunks, `FRAMES` in all.
    base: u64,
    /// The UMEM's sharing and this port's index in it.
    sharing: Option<(Arc<Sharing>, usize)>,
}

// SAFETY: the rings are owned by this value alone and only accessed
// through `&mut self` (or `&self` for atomic index loads). The UMEM is
// shared only through `Arc`s (the frames lent out of it, the other port
// of a pair), and each chunk is touched by one owner at a time: this
// port while the chunk is on its free lists or just taken off its RX
// ring, a `LentFrame`, or the kernel; a pair hands chunks over through
// `Sharing`'s atomic counts and mutex-guarded lists. Moving it to
// another thread is sound.
unsafe impl Send for AfXdp {}

/// Receive queues of `ifname` (from sysfs).
fn rx_queues(ifname: &str) -> usize {
    std::fs::read_dir(format!("/sys/class/net/{ifname}/queues"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
                .count()
        })
        .unwrap_or(1)
}

/// Which UMEM a port opens with.
enum Share<'a> {
    /// One of its own.
    Alone,
    /// One for two ports, this the first (it registers it).
    First(Arc<Sharing>),
    /// The first port's.
    Second(&'a AfXdp, Arc<Sharing>),
}

impl AfXdp {
    /// Open an AF_XDP socket on queue 0 of `ifname` and attach the
    /// redirecting XDP program (native mode if the driver allows, else
    /// generic). The error says what failed, for the fallback message.
    pub fn open(ifname: &str) -> io::Result<AfXdp> {
        AfXdp::open_with(ifname, Share::Alone)
    }

    /// Open ports on `first` and `second` that share one UMEM, for one
    /// worker: what one receives leaves by the other without a copy (see
    /// the module documentation). Fails if either cannot be opened or
    /// the kernel refuses the sharing (before Linux 5.10): the caller
    /// then opens them apart.
    pub fn open_pair(first: &str, second: &str) -> io::Result<(AfXdp, AfXdp)> {
        let sharing = Arc::new(Sharing::new());
        let a = AfXdp::open_with(first, Share::First(sharing.clone()))?;
        let b = AfXdp::open_with(second, Share::Second(&a, sharing))
            .map_err(|e| io::Error::new(e.kind(), format!("sharing the UMEM of {first}: {e}")))?;
        Ok((a, b))
    }

    /// Whether this port shares its UMEM with another.
    pub fn shares_umem(&self) -> bool {
        self.sharing.is_some()
    }

    fn open_with(ifname: &str, share: Share<'_>) -> io::Result<AfXdp> {
        let err = |what: &str, e: io::Error| io::Error::new(e.kind(), format!("{what}: {e}"));
        let ifindex = nix::net::if_::if_nametoindex(ifname).map_err(|e| {
            io::Error::new(io::ErrorKind::NotFound, format!("interface {ifname}: {e}"))
        })?;
        let queues = rx_queues(ifname);
        if queues > 1 {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "{queues} receive queues; the AF_XDP backend serves single-queue interfaces"
                ),
            ));
        }

        // The socket and its UMEM.
        // SAFETY: plain socket(2) call; the result is checked.
        let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(err("AF_XDP socket", io::Error::last_os_error()));
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let xsk = unsafe { OwnedFd::from_raw_fd(raw) };
        let s = xsk.as_raw_fd();
        // A UMEM of its own (twice the chunks for a pair's first port),
        // or the first port's; the second port's chunks are the later
        // half.
        let (umem, base) = match &share {
            Share::Second(first, _) => (first.umem.clone(), (FRAMES * CHUNK) as u64),
            Share::Alone | Share::First(_) => {
                let chunks = match share {
                    Share::First(_) => 2 * FRAMES,
                    _ => FRAMES,
                };
                let umem =
                    Arc::new(Mapping::new(None, CHUNK * chunks, 0).map_err(|e| err("UMEM", e))?);
                let reg = libc::xdp_umem_reg {
                    addr: umem.ptr() as u64,
                    len: (CHUNK * chunks) as u64,
                    chunk_size: CHUNK as u32,
                    headroom: 0,
                    flags: 0,
                    tx_metadata_len: 0,
                };
                setsockopt(s, libc::SOL_XDP, libc::XDP_UMEM_REG, &reg)
                    .map_err(|e| err("UMEM", e))?;
                (umem, 0)
            }
        };
        // A socket sharing a UMEM on another interface has fill and
        // completion rings of its own, as the first has.
        let size = RING as libc::c_int;
        for opt in [
            libc::XDP_UMEM_FILL_RING,
            libc::XDP_UMEM_COMPLETION_RING,
            libc::XDP_RX_RING,
            libc::XDP_TX_RING,
        ] {
            setsockopt(s, libc::SOL_XDP, opt, &size).map_err(|e| err("rings", e))?;
        }
        // SAFETY: xdp_mmap_offsets is plain old data; all-zero is valid.
        let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
        // SAFETY: `off` and `len` are valid for writes of the sizes given.
        let rc = unsafe {
            libc::getsockopt(
                s,
                libc::SOL_XDP,
                libc::XDP_MMAP_OFFSETS,
                &mut off as *mut libc::xdp_mmap_offsets as *mut libc::c_void,
                &mut len,
            )
        };
        if rc < 0 {
            return Err(err("ring offsets", io::Error::last_os_error()));
        }
        let rx = Ring::new(s, &off.rx, RING, libc::XDP_PGOFF_RX_RING as u64, false)?;
        let tx = Ring::new(s, &off.tx, RING, libc::XDP_PGOFF_TX_RING as u64, true)?;
        let mut fill = Ring::new(s, &off.fr, RING, libc::XDP_UMEM_PGOFF_FILL_RING, true)?;
        let comp = Ring::new(
            s,
            &off.cr,
            RING,
            libc::XDP_UMEM_PGOFF_COMPLETION_RING,
            false,
        )?;
        // The first chunks kept for transmitting; of the others, as many
        // as the fill ring holds to the kernel for receiving, the rest
        // waiting.
        let free_tx = (0..TX_CHUNKS as u64)
            .map(|i| base + i * CHUNK as u64)
            .collect();
        let mut free_rx: Vec<u64> = (TX_CHUNKS as u64..FRAMES as u64)
            .rev()
            .map(|i| base + i * CHUNK as u64)
            .collect();
        for _ in 0..RING {
            if let Some(a) = free_rx.pop() {
                fill.push(a);
            }
        }
        fill.publish();
        // Copy mode (veth has no zero copy); a socket sharing a UMEM
        // takes the first socket's mode and may name none.
        let (flags, shared_fd) = match &share {
            Share::Second(first, _) => (libc::XDP_SHARED_UMEM, first.xsk.as_raw_fd() as u32),
            _ => (libc::XDP_COPY, 0),
        };
        let sxdp = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: flags,
            sxdp_ifindex: ifindex,
            sxdp_queue_id: 0,
            sxdp_shared_umem_fd: shared_fd,
        };
        // SAFETY: `sxdp` is a valid sockaddr_xdp and its size is passed.
        let rc = unsafe {
            libc::bind(
                s,
                &sxdp as *const libc::sockaddr_xdp as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            let why = if e.raw_os_error() == Some(libc::EBUSY) {
                "bind to queue 0 (another AF_XDP socket holds it)"
            } else {
                "bind to queue 0"
            };
            return Err(err(why, e));
        }

        // The map, the program, the link.
        let mut mc = MapCreateAttr {
            map_type: BPF_MAP_TYPE_XSKMAP,
            key_size: 4,
            value_size: 4,
            max_entries: 1,
            map_name: name16("pipelab_xsks"),
            ..Default::default()
        };
        let map = owned(bpf(BPF_MAP_CREATE, &mut mc).map_err(|e| err("XSKMAP", e))?);
        let key: u32 = 0;
        let val: u32 = s as u32;
        let mut mu = MapUpdateAttr {
            map_fd: map.as_raw_fd() as u32,
            key: &key as *const u32 as u64,
            value: &val as *const u32 as u64,
            ..Default::default()
        };
        bpf(BPF_MAP_UPDATE_ELEM, &mut mu).map_err(|e| err("XSKMAP update", e))?;
        let prog_insns = program(map.as_raw_fd());
        let license = b"GPL\0";
        let mut log = vec![0u8; 4096];
        let mut pl = ProgLoadAttr {
            prog_type: BPF_PROG_TYPE_XDP,
            insn_cnt: prog_insns.len() as u32,
            insns: prog_insns.as_ptr() as u64,
            license: license.as_ptr() as u64,
            log_level: 1,
            log_size: log.len() as u32,
            log_buf: log.as_mut_ptr() as u64,
            prog_name: name16("pipelab_xsk"),
            expected_attach_type: BPF_XDP,
            ..Default::default()
        };
        let prog = match bpf(BPF_PROG_LOAD, &mut pl) {
            Ok(fd) => owned(fd),
            Err(e) => {
                let text = String::from_utf8_lossy(&log);
                let text = text.trim_end_matches('\0').trim();
                return Err(err(&format!("loading the XDP program ({text})"), e));
            }
        };
        let attach = |flags: u32| {
            let mut lc = LinkCreateAttr {
                prog_fd: prog.as_raw_fd() as u32,
                target_ifindex: ifindex,
                attach_type: BPF_XDP,
                flags,
            };
            bpf(BPF_LINK_CREATE, &mut lc).map(owned)
        };
        let (link, mode) = match attach(XDP_FLAGS_DRV_MODE) {
            Ok(l) => (l, XdpMode::Native),
            Err(native) => match attach(XDP_FLAGS_SKB_MODE) {
                Ok(l) => (l, XdpMode::Generic),
                Err(generic) => {
                    let why = if generic.raw_os_error() == Some(libc::EBUSY)
                        || generic.raw_os_error() == Some(libc::EEXIST)
                    {
                        "another XDP program is attached: "
                    } else {
                        ""
                    };
                    return Err(io::Error::new(
                        generic.kind(),
                        format!("attaching XDP: {why}native: {native}; generic: {generic}"),
                    ));
                }
            },
        };
        Ok(AfXdp {
            _link: link,
            _prog: prog,
            _map: map,
            rx,
            tx,
            fill,
            comp,
            xsk,
            umem,
            free_tx,
            free_rx,
            failed: 0,
            dead: None,
            down_since: None,
            mode,
            name: ifname.to_string(),
            watch: super::IfWatch::new(ifindex),
            stats: PortStats::default(),
            csum_fixed: 0,
            tx_oversize: 0,
            spilled: 0,
            zero_copy: 0,
            base,
            sharing: match share {
                Share::Alone => None,
                Share::First(sh) => Some((sh, 0)),
                Share::Second(_, sh) => Some((sh, 1)),
            },
        })
    }

    /// Whether the interface is up (and has carrier), from sysfs.
    fn is_up(&self) -> bool {
        std::fs::read_to_string(format!("/sys/class/net/{}/operstate", self.name))
            .map(|s| matches!(s.trim(), "up" | "unknown"))
            .unwrap_or(false)
    }

    /// The XDP hook in use.
    pub fn mode(&self) -> XdpMode {
        self.mode
    }

    /// `len` bytes at `addr` of the UMEM, to read or write; `None` out of
    /// bounds.
    ///
    /// # Safety
    ///
    /// The port owns the chunk now (taken from the RX ring and not lent,
    /// or a transmit chunk from the free list, not yet on the TX ring):
    /// neither the kernel nor a `LentFrame` accesses it.
    unsafe fn chunk_mut(&mut self, addr: u64, len: usize) -> Option<&mut [u8]> {
        let a = addr as usize;
        (a.checked_add(len)? <= self.umem.len()).then(|| {
            // SAFETY: bounds checked against the UMEM just above; exclusive
            // by the caller's ownership of the chunk, and `&mut self`
            // makes this borrow the only one the port makes.
            unsafe { std::slice::from_raw_parts_mut(self.umem.ptr().add(a), len) }
        })
    }

    /// One holder of received chunk `chunk` (its first byte) is done
    /// with it (the pool, or a TX ring); after the last, it goes back to
    /// the port it belongs to.
    fn release_chunk(&mut self, chunk: u64) {
        match &self.sharing {
            Some((sh, me)) => {
                if sh.done(chunk) {
                    sh.give_back(chunk, *me, &mut self.free_rx);
                }
            }
            None => self.free_rx.push(chunk),
        }
    }

    /// Give the fill ring as many free receive chunks as it holds (first
    /// taking back those the other port of a shared UMEM freed).
    fn refill(&mut self) {
        if let Some((sh, me)) = &self.sharing {
            sh.take_back(*me, &mut self.free_rx);
        }
        let n = (self.fill.free() as usize).min(self.free_rx.len());
        if n == 0 {
            return;
        }
        for _ in 0..n {
            if let Some(a) = self.free_rx.pop() {
                self.fill.push(a);
            }
        }
        self.fill.publish();
    }

    /// Take finished transmissions back: a transmit chunk into the free
    /// list, a received chunk sent as it was to its other holder or its
    /// port.
    fn reap(&mut self) {
        let n = self.comp.ready();
        let tx_end = self.base + (TX_CHUNKS * CHUNK) as u64;
        for _ in 0..n {
            let a = self.comp.peek();
            self.comp.release(1);
            let chunk = a - a % CHUNK as u64;
            if (self.base..tx_end).contains(&chunk) {
                self.free_tx.push(chunk);
            } else {
                self.release_chunk(chunk);
            }
        }
    }

    /// Descriptors on the TX ring the kernel has not taken yet.
    fn tx_pending(&self) -> u32 {
        self.tx
            .local
            .wrapping_sub(self.tx.cons().load(Ordering::Acquire))
    }

    /// Wake the kernel until it has taken everything on the TX ring (it
    /// takes a bounded batch per call). Frames the device refused are
    /// added to `failed`.
    fn kick(&mut self) {
        let mut tries = 0;
        while self.tx_pending() > 0 && tries < 2 * RING {
            tries += 1;
            let before = self.tx_pending();
            // SAFETY: sendto with no data and no address, the AF_XDP
            // "transmit what the ring holds" request.
            let rc = unsafe {
                libc::sendto(
                    self.xsk.as_raw_fd(),
                    std::ptr::null(),
                    0,
                    libc::MSG_DONTWAIT,
                    std::ptr::null(),
                    0,
                )
            };
            self.reap();
            if rc >= 0 {
                continue;
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                // The device dropped one frame (down, no carrier).
                Some(libc::EBUSY) => self.failed += 1,
                // Batch limit or a full device queue: go on while the
                // kernel makes progress, else retry at the next flush.
                Some(libc::EAGAIN) | Some(libc::ENOBUFS) => {
                    if self.tx_pending() == before {
                        break;
                    }
                }
                // The interface is down: what is on the ring cannot go
                // when due. Counted as failed (should the interface come
                // back at once, these few may still leave, late); until
                // it is up again, `send` refuses frames.
                Some(libc::ENETDOWN) => {
                    self.failed += u64::from(self.tx_pending());
                    self.down_since = Some(std::time::Instant::now());
                    break;
                }
                // The socket lost its interface (deleted): nothing on the
                // ring will go, nor anything later.
                _ => {
                    self.failed += u64::from(self.tx_pending());
                    let gone = nix::net::if_::if_nametoindex(self.name.as_str()).ok()
                        != Some(self.watch.ifindex);
                    self.dead = Some(if gone {
                        format!("interface {} was deleted", self.name)
                    } else {
                        format!("{}: transmit failed: {e}", self.name)
                    });
                    break;
                }
            }
        }
    }

    fn kernel_stats(&self) -> Option<libc::xdp_statistics> {
        // SAFETY: xdp_statistics is plain old data; all-zero is valid.
        let mut st: libc::xdp_statistics = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::xdp_statistics>() as libc::socklen_t;
        // SAFETY: `st` and `len` are valid for writes of the sizes given.
        let rc = unsafe {
            libc::getsockopt(
                self.xsk.as_raw_fd(),
                libc::SOL_XDP,
                libc::XDP_STATISTICS,
                &mut st as *mut libc::xdp_statistics as *mut libc::c_void,
                &mut len,
            )
        };
        (rc == 0).then_some(st)
    }
}

/// Fold a 32-bit one's complement sum to 16 bits.
fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

fn sum16(b: &[u8]) -> u32 {
    b.chunks(2)
        .map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32)
        .sum()
}

/// True if the TCP/UDP checksum field of `frame` holds the bare
/// pseudo-header sum: a checksum left for offload, not computed.
pub fn checksum_left_for_offload(frame: &[u8]) -> bool {
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};
    let Ok(p) = SlicedPacket::from_ethernet(frame) else {
        return false;
    };
    let (proto, l4): (u8, &[u8]) = match &p.transport {
        Some(TransportSlice::Tcp(t)) => (6, t.slice()),
        Some(TransportSlice::Udp(u)) => (17, u.slice()),
        _ => return false,
    };
    let (pseudo, field) = match &p.net {
        Some(NetSlice::Ipv4(ip)) => {
            let h = ip.header();
            let len = (h.total_len() as usize).saturating_sub(h.slice().len());
            let s = sum16(&h.source()) + sum16(&h.destination()) + proto as u32 + len as u32;
            (s, l4)
        }
        Some(NetSlice::Ipv6(ip)) => {
            let h = ip.header();
            let len = h.payload_length() as usize;
            let s = sum16(&h.source()) + sum16(&h.destination()) + proto as u32 + len as u32;
            (s, l4)
        }
        _ => return false,
    };
    let at = if proto == 6 { 16 } else { 6 };
    let Some(c) = field.get(at..at + 2) else {
        return false;
    };
    let have = u16::from_be_bytes([c[0], c[1]]);
    have != 0 && have == fold(pseudo)
}

impl Port for AfXdp {
    fn name(&self) -> &str {
        &self.name
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.xsk.as_fd()
    }

    fn recv(&mut self, rx: &mut Rx<'_>) -> io::Result<()> {
        self.refill();
        while rx.wants_more() {
            if self.rx.ready() == 0 {
                if let Some(why) = &self.dead {
                    return Err(io::Error::new(io::ErrorKind::NotFound, why.clone()));
                }
                // Deleted (perhaps re-created) while nothing was sent:
                // the socket error the kernel set says so.
                self.watch.check(self.xsk.as_fd(), &self.name)?;
                break;
            }
            let d = self.rx.peek();
            self.rx.release(1);
            let base = d.addr - d.addr % CHUNK as u64;
            let room = CHUNK - (d.addr - base) as usize;
            let n = d.len as usize;
            if n > room || d.addr as usize + n > self.umem.len() {
                self.stats.rx_dropped += 1;
                self.free_rx.push(base);
                continue;
            }
            // Receive chunks run short: copy the frame into the pool and
            // give the chunk back now.
            let spill = self.free_rx.len() < SPILL_BELOW;
            // SAFETY: the kernel handed this chunk over on the RX ring; it
            // is neither lent nor on any ring until this loop gives it back
            // or lends it, and `frame` is not used past that.
            let Some(frame) = (unsafe { self.chunk_mut(d.addr, n) }) else {
                self.free_rx.push(base);
                continue;
            };
            // Completed in the chunk, before the pool sees the frame.
            let fixed = checksum_left_for_offload(frame) && fix_l4_checksum(frame);
            if spill {
                let _ = rx.copy(&[frame], Annotation::default());
            }
            self.csum_fixed += u64::from(fixed);
            self.stats.rx_frames += 1;
            self.stats.rx_bytes += n as u64;
            if spill {
                self.spilled += 1;
                self.free_rx.push(base);
                continue;
            }
            // SAFETY: the kernel handed this chunk over on the RX ring and
            // gets it back only through the fill ring, which it reaches
            // again only from `reclaim`, when the token is returned; this
            // port makes no other access to it meanwhile (`frame` above is
            // not used past this point).
            let lent = unsafe { LentFrame::new(self.umem.clone(), d.addr as usize, room) };
            match lent.map(|l| rx.lend(l, n, Annotation::default())) {
                Some(Ok(_)) => {
                    if let Some((sh, _)) = &self.sharing {
                        sh.lent(base);
                    }
                }
                // Refused at the cap (or out of bounds): back to the
                // kernel at once.
                Some(Err(_)) | None => self.free_rx.push(base),
            }
        }
        self.refill();
        Ok(())
    }

    fn send(&mut self, pool: &BufferPool, buf: BufId) -> io::Result<()> {
        let len = pool.frame(buf).len();
        if len > CHUNK {
            self.tx_oversize += 1;
            self.stats.tx_errors += 1;
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "frame longer than a UMEM chunk",
            ));
        }
        if let Some(why) = &self.dead {
            self.stats.tx_errors += 1;
            return Err(io::Error::new(io::ErrorKind::NotConnected, why.clone()));
        }
        if let Some(t) = self.down_since {
            // Look at most once a millisecond whether it is back.
            if t.elapsed() < std::time::Duration::from_millis(1) || !self.is_up() {
                self.down_since = Some(std::time::Instant::now());
                self.stats.tx_errors += 1;
                return Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    format!("{} is down", self.name),
                ));
            }
            self.down_since = None;
        }
        self.reap();
        // A frame lent out of this UMEM, referenced by this departure
        // alone (a duplicate could still be written), leaves from its
        // chunk: one more holder until the completion ring gives it back.
        let own = self.sharing.is_some() && pool.meta(buf).refs() <= 1;
        if let Some(addr) = own
            .then(|| pool.lent(buf))
            .flatten()
            .filter(|l| l.is_from(&self.umem))
            .map(|l| l.addr())
        {
            if self.tx.free() == 0 {
                self.kick();
            }
            if self.tx.free() == 0 {
                self.stats.tx_errors += 1;
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "AF_XDP transmit ring full",
                ));
            }
            if let Some((sh, _)) = &self.sharing {
                sh.sent(addr - addr % CHUNK as u64);
            }
            self.tx.push(libc::xdp_desc {
                addr,
                len: len as u32,
                options: 0,
            });
            self.tx.publish();
            self.zero_copy += 1;
            self.stats.tx_frames += 1;
            self.stats.tx_bytes += len as u64;
            if self.tx_pending() >= 64 {
                self.kick();
            }
            return Ok(());
        }
        if self.free_tx.is_empty() || self.tx.free() == 0 {
            // Everything is in flight: push it out, then look again.
            self.kick();
        }
        let (Some(addr), true) = (self.free_tx.pop(), self.tx.free() > 0) else {
            self.stats.tx_errors += 1;
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "AF_XDP transmit ring full",
            ));
        };
        // The frame's one copy: from the pool buffer (a chunk another
        // port lent, or the pool's own memory) into this port's chunk.
        // SAFETY: `addr` is a transmit chunk from the free list: not on
        // the TX ring (the kernel returned it on the completion ring) and
        // never lent.
        if let Some(dst) = unsafe { self.chunk_mut(addr, len) } {
            pool.copy_out(buf, dst);
        }
        self.tx.push(libc::xdp_desc {
            addr,
            len: len as u32,
            options: 0,
        });
        self.tx.publish();
        self.stats.tx_frames += 1;
        self.stats.tx_bytes += len as u64;
        if self.tx_pending() >= 64 {
            self.kick();
        }
        Ok(())
    }

    fn reclaim(&mut self, frame: LentFrame) {
        // A chunk of an earlier socket's UMEM (the port was replaced) is
        // simply dropped: its mapping goes with the last such frame.
        if frame.is_from(&self.umem) {
            let a = frame.addr();
            self.release_chunk(a - a % CHUNK as u64);
        }
    }

    fn flush(&mut self, _pool: &BufferPool) -> u64 {
        self.kick();
        let failed = std::mem::take(&mut self.failed);
        self.stats.tx_errors += failed;
        self.stats.tx_frames = self.stats.tx_frames.saturating_sub(failed);
        failed
    }

    fn stats(&self) -> PortStats {
        let mut s = self.stats;
        if let Some(k) = self.kernel_stats() {
            s.rx_dropped += k.rx_dropped + k.rx_ring_full;
            s.tx_errors += k.tx_invalid_descs;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk of port 0 sent by port 1 as it is goes back to port 0
    /// after its last holder, whichever finishes last: the pool (port 0
    /// reclaims it) or port 1's completion ring; a second transmission of
    /// it (a hairpin) holds it too.
    #[test]
    fn a_shared_chunk_goes_home_after_its_last_holder() {
        let sh = Sharing::new();
        let c = (TX_CHUNKS * CHUNK) as u64; // port 0's first receive chunk
        let (mut free0, mut free1) = (Vec::new(), Vec::new());
        // Completion first, then the pool: port 0 frees it itself.
        sh.lent(c);
        sh.sent(c);
        assert!(!sh.done(c), "the pool still holds it");
        assert!(sh.done(c));
        sh.give_back(c, 0, &mut free0);
        assert_eq!(free0, [c]);
        // The pool first, then port 1's completion: returned to port 0.
        free0.clear();
        sh.lent(c);
        sh.sent(c);
        assert!(!sh.done(c), "port 1's TX ring still holds it");
        assert!(sh.done(c));
        sh.give_back(c, 1, &mut free1);
        assert!(free1.is_empty());
        sh.take_back(1, &mut free1);
        assert!(free1.is_empty(), "not port 1's");
        sh.take_back(0, &mut free0);
        assert_eq!(free0, [c]);
        // Sent twice: free after three releases, not two.
        sh.lent(c);
        sh.sent(c);
        sh.sent(c);
        assert!(!sh.done(c) && !sh.done(c));
        assert!(sh.done(c));
        // Port 1's chunks are its own.
        assert_eq!(Sharing::home((FRAMES * CHUNK) as u64), 1);
        assert_eq!(Sharing::home(c), 0);
    }

    #[test]
    fn the_program_encodes_as_the_kernel_expects() {
        let p = program(7);
        // 8 bytes per instruction, as struct bpf_insn.
        assert_eq!(std::mem::size_of::<Insn>(), 8);
        assert_eq!(p[0].regs, 0x12); // dst r2, src r1
        assert_eq!(p[1].regs, 0x11); // dst r1, src BPF_PSEUDO_MAP_FD
        assert_eq!(p[1].imm, 7);
    }

    #[test]
    fn an_offload_checksum_is_recognised_and_a_real_one_is_not() {
        use etherparse::PacketBuilder;
        let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .udp(1000, 2000);
        let payload = [1u8, 2, 3, 4, 5];
        let mut f = Vec::new();
        b.write(&mut f, &payload).expect("build");
        assert!(!checksum_left_for_offload(&f));
        // What the kernel leaves for offload: the folded pseudo-header sum.
        let l4 = 8 + payload.len() as u32;
        let ps = fold(sum16(&[10, 0, 0, 1]) + sum16(&[10, 0, 0, 2]) + 17 + l4);
        let good = [f[40], f[41]];
        f[40..42].copy_from_slice(&ps.to_be_bytes());
        assert!(checksum_left_for_offload(&f));
        assert!(fix_l4_checksum(&mut f));
        assert_eq!([f[40], f[41]], good);
    }
}
