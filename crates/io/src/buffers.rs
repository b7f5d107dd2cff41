//! The frame buffer pool: where a frame stays from its arrival to its
//! departure, with what is known of it beside it.
//!
//! * **Buffers.** Fixed-size buffers, allocated on demand up to a global
//!   cap and recycled through a free list, so memory never grows past the
//!   cap (issue: "a global cap on queued bytes") and steady-state
//!   forwarding allocates nothing. A buffer may also be a frame a backend
//!   lent out of memory it shares with the kernel ([`LentFrame`]: an
//!   AF_XDP UMEM chunk), held without a copy and handed back to the port
//!   when the pool is done with it. A packet descriptor's `buf` is a
//!   [`BufId`] here; the bytes stay put from reception to transmission
//!   (CE marks and corruption are written in place).
//! * **Metadata.** Per buffer, a typed [`BufMeta`] (as dummynet's
//!   `dn_pkt_tag` beside its mbuf): the port it came in by, how many
//!   departures still reference it (duplicates share one buffer), and what
//!   the port said of the frame beyond its bytes ([`Annotation`]:
//!   direction, interfaces, owning uid, a netfilter queue's packet id).
//! * **Receiving.** A port lends each waiting frame to an [`Rx`], which
//!   takes it into a buffer: by a copy ([`Rx::copy`]), by letting the
//!   kernel write straight into the buffer ([`Rx::read`]), or by holding
//!   the lent frame itself ([`Rx::lend`]). At the cap the frame is refused
//!   and counted (the runner's `dropped_memory`).
//! * **Copies.** Every user-space copy of frame bytes the pool makes
//!   ([`Rx::copy`], [`BufferPool::copy_out`], a super-frame's head moved
//!   into its large buffer, each segment cut from a super-frame) is
//!   counted ([`BufferPool::copies`]); backends copy frames only through
//!   these, so the count is every copy between the kernel's hand-over and
//!   its take-back. The tests check it is at most one per forwarded frame
//!   (a super-frame cut into N segments: N + 1 at most).
//! * **Two sizes.** A buffer holds an MTU-1500 frame ([`BUF_SIZE`]) or a
//!   GSO super-frame of up to 64 KB ([`BIG_BUF_SIZE`]). The cap counts
//!   bytes: a large buffer in use weighs [`BIG_BUF_SIZE`], a lent frame
//!   [`BUF_SIZE`]; memory freed by one size is dropped before the other
//!   size allocates past the cap, so what is allocated never exceeds it.
//!   A port that may receive super-frames reads each frame into a small
//!   buffer followed by a large one's tail ([`Rx::read_vnet`]): a frame
//!   that fits stays in the small one (no copy), a longer one moves its
//!   first [`BUF_SIZE`] bytes into the large buffer (one counted copy of
//!   2 KB).
//! * **Workers.** Each worker has a pool of its own. A frame handed to
//!   another worker ([`crate::worker`]) moves as its memory, small or
//!   large ([`FrameMem`], [`BufferPool::detach`]): the receiving pool
//!   holds it in a slot of its own ([`BufferPool::adopt`]), weighing its
//!   size against its own cap, and, when done with it, puts it in its
//!   outbox, from where the runner sends it home through a return ring
//!   ([`BufferPool::take_outbox`], [`BufferPool::restore`]) to the free
//!   list of its size. Memory stays counted as allocated by its home
//!   pool while away, so the caps together bound the run's memory. No
//!   worker ever touches memory another holds. A frame lent by a port or
//!   shared by a duplicate is copied instead (counted), so a port's lent
//!   memory never leaves its worker; segments cut from a super-frame and
//!   super-frames coalesced from segments are buffers of the pool that
//!   made them, like any other.
//! * **Spilling.** With a [`Spill`] ([`BufferPool::enable_spill`]), the
//!   frame of a buffer may go to disk while it waits
//!   ([`BufferPool::spill`]: its memory is freed, its id, length and
//!   metadata stay), and come back ahead of its departure
//!   ([`BufferPool::read_back`], in the order written, while the pool is
//!   under [`BufferPool::read_back_mark`]) or when it is needed
//!   ([`BufferPool::load`], even at the cap: it leaves at once). A
//!   spilled frame's bytes are never in [`BufferPool::frame`]; whoever
//!   reads a frame that may be spilled loads it first, or reads it
//!   through [`BufferPool::bytes`].

use crate::backends::lend::LentFrame;
use crate::gso::{Plan, VnetHdr, VNET_HDR_LEN};
use crate::spill::{Loc, Spill, SpillOptions, SpillStats, FRAME_BOOKKEEPING};
use pipelab_classify::{Direction, PacketView};
use std::borrow::Cow;
use std::cell::Cell;
use std::io::{self, IoSliceMut};

/// Size of one buffer: an MTU-1500 Ethernet frame with VLAN tags, rounded.
pub const BUF_SIZE: usize = 2048;

/// Size of a large buffer: a GSO super-frame (an IP packet of up to
/// 64 KB) with its Ethernet header and VLAN tags, rounded.
pub const BIG_BUF_SIZE: usize = 65536 + 2048;

/// A buffer of the pool (a packet descriptor's `buf`).
pub type BufId = u32;

/// A buffer's memory ([`BUF_SIZE`] or [`BIG_BUF_SIZE`] bytes), as it
/// moves between workers' pools.
pub type FrameMem = Box<[u8]>;

/// A frame taken out of a pool to move to another worker's
/// ([`BufferPool::detach`]).
pub struct Detached {
    /// Its memory.
    pub mem: FrameMem,
    /// The frame's length.
    pub len: u32,
    /// Its metadata (the references are the receiving pool's to set).
    pub meta: BufMeta,
    /// The worker whose pool the memory belongs to.
    pub home: u16,
    /// A frame a port lent that the pool no longer needs (it was
    /// copied): to give back to port `.0`.
    pub lent: Option<(u16, LentFrame)>,
}

/// A netfilter queue's packet: what its verdict names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueTag {
    /// The packet id.
    pub id: u32,
    /// The netfilter hook it was queued at (1 input, 3 output, 4 postrouting).
    pub hook: u8,
}

/// What a port knows of a frame beyond its bytes, given when it lends it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Annotation {
    /// The direction, where the capture point knows it (NFQUEUE's hook).
    pub dir: Option<Direction>,
    /// The receiving interface's index.
    pub in_if: Option<u32>,
    /// The transmitting interface's index.
    pub out_if: Option<u32>,
    /// The uid owning the local socket.
    pub uid: Option<u32>,
    /// The packet's real length, when the frame holds a shorter copy.
    pub len: Option<u32>,
    /// The frame's Ethernet header was written by the port (an IP packet
    /// from a netfilter queue): its addresses are not the packet's.
    pub synthetic_header: bool,
    /// The netfilter queue's packet id and hook.
    pub queued: Option<QueueTag>,
}

impl Annotation {
    /// Add what the port said to the view parsed from the frame's bytes.
    pub fn apply(&self, v: &mut PacketView) {
        v.dir = self.dir.or(v.dir);
        v.in_if = self.in_if.or(v.in_if);
        v.out_if = self.out_if.or(v.out_if);
        v.uid = self.uid.or(v.uid);
        if let Some(len) = self.len {
            v.len = len;
        }
        if self.synthetic_header {
            v.src_mac = None;
            v.dst_mac = None;
        }
    }
}

/// Per-buffer metadata, beside the buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufMeta {
    /// The port the frame came in by (its index in the runner).
    pub origin: u16,
    /// Outstanding references: departures (duplicates share the buffer)
    /// and transmissions not yet flushed.
    refs: u8,
    /// What the port said of the frame.
    pub annotation: Annotation,
    /// The virtio-net header the frame came with (a super-frame, a
    /// checksum left to complete), or all zero: a plain, complete frame.
    /// Ports that write virtio-net headers send it with the frame.
    pub vnet: VnetHdr,
}

impl BufMeta {
    /// Outstanding references to the buffer.
    pub fn refs(&self) -> u8 {
        self.refs
    }
}

/// One buffer of the pool.
#[derive(Default)]
struct Slot {
    /// Memory of the pool's own ([`BUF_SIZE`] or [`BIG_BUF_SIZE`] bytes)
    /// while the slot holds a frame that is not lent.
    mem: Option<Box<[u8]>>,
    /// A frame a port lent, while the slot holds it.
    lent: Option<LentFrame>,
    len: u32,
    /// Bytes the slot weighs against the cap while in use.
    charge: u64,
    meta: BufMeta,
    /// The worker `mem` belongs to, if another's (a frame handed over).
    home: Option<u16>,
    /// Where the frame is on disk, while it is spilled (no memory then).
    spilled: Option<Loc>,
}

/// The longest the runner waits for the spill's I/O thread to write a
/// batch when all its batches are on their way (then the frame is kept
/// in memory if there is room, refused if not).
pub const SPILL_WAIT: std::time::Duration = std::time::Duration::from_millis(2);

/// Memory a pool keeps free of spilling pipes' frames, at least: room
/// for two receive batches of MTU frames (the runner takes up to 256
/// frames from a port before it offers any), besides other pipes' frames
/// and frames read back.
pub const SPILL_RESERVE: u64 = 1 << 20;

/// Above this many bytes held by a pool of cap `cap`, frames of spilling
/// pipes go to disk: the cap less a quarter of it, or less
/// [`SPILL_RESERVE`] if that is more (0 for a cap of 1 MB or less: every
/// such frame goes to disk).
pub fn spill_mark(cap: u64) -> u64 {
    cap.saturating_sub((cap / 4).max(SPILL_RESERVE))
}

/// The size of a buffer's slot: the memory a spilled frame keeps in the
/// pool (see [`crate::spill::FRAME_BOOKKEEPING`]).
pub fn slot_size() -> usize {
    std::mem::size_of::<Slot>()
}

/// Buffers, their metadata, their free lists, and the cap.
pub struct BufferPool {
    slots: Vec<Slot>,
    /// Free slots.
    free: Vec<BufId>,
    /// Free memory of [`BUF_SIZE`] bytes.
    small: Vec<Box<[u8]>>,
    /// Free memory of [`BIG_BUF_SIZE`] bytes.
    big: Vec<Box<[u8]>>,
    in_use: usize,
    /// Bytes the buffers in use weigh.
    held: u64,
    /// Bytes of memory allocated (in slots and free).
    allocated: u64,
    cap: u64,
    /// Frame copies made so far.
    copies: Cell<u64>,
    /// Where a frame refused at the cap is read, to drain it.
    scratch: Box<[u8; BUF_SIZE]>,
    /// The worker this pool belongs to.
    me: u16,
    /// Memory of other workers' this pool is done with: (home, memory).
    outbox: Vec<(u16, FrameMem)>,
    /// Where frames go while they wait, if anywhere.
    spill: Option<Box<Spill>>,
    /// Buffers whose frames are on disk now.
    spilled: usize,
    /// The spill's batches in memory, as last weighed (counted in
    /// `held`).
    spill_charge: u64,
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field("in_use", &self.in_use)
            .field("held", &self.held)
            .field("allocated", &self.allocated)
            .field("cap", &self.cap)
            .field("copies", &self.copies.get())
            .finish()
    }
}

/// The size of memory a frame of `len` bytes needs, if any fits it.
fn size_for(len: usize) -> Option<usize> {
    if len <= BUF_SIZE {
        Some(BUF_SIZE)
    } else if len <= BIG_BUF_SIZE {
        Some(BIG_BUF_SIZE)
    } else {
        None
    }
}

impl BufferPool {
    /// A pool that holds at most `cap_bytes` of buffers.
    pub fn with_cap(cap_bytes: u64) -> BufferPool {
        BufferPool {
            slots: Vec::new(),
            free: Vec::new(),
            small: Vec::new(),
            big: Vec::new(),
            in_use: 0,
            held: 0,
            allocated: 0,
            cap: cap_bytes.max(BUF_SIZE as u64),
            copies: Cell::new(0),
            scratch: Box::new([0u8; BUF_SIZE]),
            me: 0,
            outbox: Vec::new(),
            spill: None,
            spilled: 0,
            spill_charge: 0,
        }
    }

    /// Belong to worker `me` (memory handed over is sent home to it).
    pub fn set_worker(&mut self, me: u16) {
        self.me = me;
    }

    /// Take the frame in buffer `i` out of this pool, for another
    /// worker's, and drop this pool's reference to it: its memory moves
    /// (no copy, whatever its size) when the buffer is the only reference
    /// and holds memory, else (a duplicate shares it, or a port lent it)
    /// the frame is copied into memory of this pool's own of the size it
    /// needs (one counted copy). `None`, the buffer untouched, if that
    /// copy finds no memory under the cap.
    pub fn detach(&mut self, i: BufId) -> Option<Detached> {
        let me = self.me;
        let s = &mut self.slots[i as usize];
        let (len, meta) = (s.len, s.meta);
        if s.meta.refs <= 1 && s.lent.is_none() {
            if let Some(mem) = s.mem.take() {
                // Ours, it stays counted as allocated while away.
                let home = s.home.take().unwrap_or(me);
                self.put(i);
                return Some(Detached {
                    mem,
                    len,
                    meta,
                    home,
                    lent: None,
                });
            }
        }
        let n = len as usize;
        let mut mem = self.memory(size_for(n)?)?;
        mem[..n].copy_from_slice(self.frame(i));
        self.count_copy();
        let lent = self.release(i);
        Some(Detached {
            mem,
            len,
            meta,
            home: me,
            lent,
        })
    }

    /// Hold a frame another worker handed over (`mem`, belonging to
    /// worker `home`, with its metadata: origin, annotation, virtio-net
    /// header) in a buffer of this pool, with one reference; it weighs
    /// its memory's size against this pool's cap. `Err(mem)` at the cap.
    pub fn adopt(
        &mut self,
        mem: FrameMem,
        len: u32,
        meta: &BufMeta,
        home: u16,
    ) -> Result<BufId, FrameMem> {
        let charge = mem.len().max(BUF_SIZE) as u64;
        if self.held + charge > self.cap {
            return Err(mem);
        }
        let room = mem.len();
        let i = self.occupy(meta.origin, meta.annotation, charge, Some(mem));
        let me = self.me;
        let s = &mut self.slots[i as usize];
        s.home = (home != me).then_some(home);
        s.len = len.min(room as u32);
        s.meta.vnet = meta.vnet;
        Ok(i)
    }

    /// Free memory of this pool's own (not in a slot: recycled, or back
    /// from other workers).
    pub fn spare_count(&self) -> usize {
        self.small.len() + self.big.len()
    }

    /// Memory of this pool's own, back from another worker: on the free
    /// list of its size.
    pub fn restore(&mut self, mem: FrameMem) {
        self.unuse(mem);
    }

    /// Memory of other workers this pool is done with, to send home:
    /// (home, memory).
    pub fn take_outbox(&mut self) -> std::vec::Drain<'_, (u16, FrameMem)> {
        self.outbox.drain(..)
    }

    /// The cap: bytes the buffers in use may weigh.
    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// Bytes the buffers in use weigh now (a spilled frame nothing).
    pub fn held(&self) -> u64 {
        self.held
    }

    /// The most small buffers the pool will hold.
    pub fn max_buffers(&self) -> usize {
        (self.cap / BUF_SIZE as u64).min(u32::MAX as u64) as usize
    }

    /// Buffers holding a frame now (lent ones included).
    pub fn in_use(&self) -> usize {
        self.in_use
    }

    /// Bytes of buffer memory allocated so far (never more than the cap).
    pub fn allocated_bytes(&self) -> u64 {
        self.allocated
    }

    /// Bytes of memory the pool answers for: buffers allocated, and with
    /// a spill the bookkeeping of frames on disk and the batches on their
    /// way there (never more than the cap but for a frame loaded from
    /// disk at the cap, for a moment).
    pub fn memory_bytes(&self) -> u64 {
        self.allocated + self.spill_memory()
    }

    /// User-space copies of frame bytes made so far (one per frame copied
    /// in on receive or out on transmit, per super-frame head moved, per
    /// segment cut).
    pub fn copies(&self) -> u64 {
        self.copies.get()
    }

    fn count_copy(&self) {
        self.copies.set(self.copies.get() + 1);
    }

    /// Free memory of `size` bytes ([`BUF_SIZE`] or [`BIG_BUF_SIZE`]):
    /// recycled, or allocated after dropping free memory until the cap
    /// has room. `None` if it has none.
    fn memory(&mut self, size: usize) -> Option<Box<[u8]>> {
        let list = if size == BIG_BUF_SIZE {
            &mut self.big
        } else {
            &mut self.small
        };
        if let Some(m) = list.pop() {
            return Some(m);
        }
        // The spill's memory (0 without one) is weighed too.
        while self.allocated + self.spill_memory() + size as u64 > self.cap {
            let m = self.small.pop().or_else(|| self.big.pop())?;
            self.allocated = self.allocated.saturating_sub(m.len() as u64);
        }
        self.allocated += size as u64;
        Some(vec![0u8; size].into_boxed_slice())
    }

    /// Memory the spill costs besides buffers: the bookkeeping of frames
    /// on disk and its batches in memory.
    #[inline]
    fn spill_memory(&self) -> u64 {
        self.spilled as u64 * FRAME_BOOKKEEPING + self.spill_charge
    }

    /// Free buffer memory off the free lists while buffers and the
    /// spill's memory together are over the cap (after a frame went to
    /// disk: its bookkeeping stays, its buffer's memory goes).
    fn trim(&mut self) {
        while self.allocated + self.spill_memory() > self.cap {
            let Some(m) = self.small.pop().or_else(|| self.big.pop()) else {
                return;
            };
            self.allocated = self.allocated.saturating_sub(m.len() as u64);
        }
    }

    /// Memory no longer used, back on its free list.
    fn unuse(&mut self, m: Box<[u8]>) {
        if m.len() == BIG_BUF_SIZE {
            self.big.push(m);
        } else {
            self.small.push(m);
        }
    }

    /// A free slot, marked in use with one reference, with memory of
    /// `size` bytes of its own, or none (`size` 0: it will hold a lent
    /// frame, weighing a small buffer). `None` at the cap.
    fn take(&mut self, origin: u16, annotation: Annotation, size: usize) -> Option<BufId> {
        let charge = size.max(BUF_SIZE) as u64;
        if self.held + charge > self.cap {
            return None;
        }
        let mem = match size {
            0 => None,
            _ => Some(self.memory(size)?),
        };
        Some(self.occupy(origin, annotation, charge, mem))
    }

    /// A free slot, marked in use with one reference, holding `mem` (or
    /// nothing yet), weighing `charge` bytes against the cap (checked by
    /// the caller).
    fn occupy(
        &mut self,
        origin: u16,
        annotation: Annotation,
        charge: u64,
        mem: Option<FrameMem>,
    ) -> BufId {
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot::default());
                self.slots.len() as BufId - 1
            }
        };
        let s = &mut self.slots[i as usize];
        s.mem = mem;
        s.home = None;
        s.spilled = None;
        s.len = 0;
        s.charge = charge;
        s.meta = BufMeta {
            origin,
            refs: 1,
            annotation,
            vnet: VnetHdr::default(),
        };
        self.in_use += 1;
        self.held += charge;
        i
    }

    /// Put slot `i` back on the free list, its memory on its own, or in
    /// the outbox if another worker's (to go home).
    fn put(&mut self, i: BufId) {
        let s = &mut self.slots[i as usize];
        s.meta.refs = 0;
        let charge = std::mem::take(&mut s.charge);
        let mem = s.mem.take();
        let home = s.home.take();
        if let Some(loc) = s.spilled.take() {
            // Dropped while on disk: its record is dead.
            self.spilled -= 1;
            let len = s.len;
            if let Some(sp) = self.spill.as_deref_mut() {
                sp.forget(loc, len);
            }
        }
        self.in_use -= 1;
        self.held -= charge;
        self.free.push(i);
        match (mem, home) {
            (Some(m), Some(home)) => self.outbox.push((home, m)),
            (Some(m), None) => self.unuse(m),
            (None, _) => {}
        }
    }

    /// The frame in buffer `i`.
    pub fn frame(&self, i: BufId) -> &[u8] {
        let s = &self.slots[i as usize];
        let n = s.len as usize;
        match (&s.lent, &s.mem) {
            (Some(l), _) => l.bytes(n),
            (None, Some(h)) => &h[..n],
            (None, None) => &[],
        }
    }

    /// The frame in buffer `i`, to write (CE marks, corruption, checksums
    /// completed in place).
    pub fn frame_mut(&mut self, i: BufId) -> &mut [u8] {
        let s = &mut self.slots[i as usize];
        let n = s.len as usize;
        match (&mut s.lent, &mut s.mem) {
            (Some(l), _) => l.bytes_mut(n),
            (None, Some(h)) => &mut h[..n],
            (None, None) => &mut [],
        }
    }

    /// The frame in buffer `i` as a port lent it, if it was lent (a
    /// backend sending it from the memory it came in, without a copy).
    pub fn lent(&self, i: BufId) -> Option<&LentFrame> {
        self.slots[i as usize].lent.as_ref()
    }

    /// The metadata of buffer `i`.
    pub fn meta(&self, i: BufId) -> &BufMeta {
        &self.slots[i as usize].meta
    }

    /// Replace the virtio-net header of buffer `i` (a checksum completed).
    pub fn set_vnet(&mut self, i: BufId, vnet: VnetHdr) {
        self.slots[i as usize].meta.vnet = vnet;
    }

    /// One more reference to buffer `i` (a duplicate, a transmission
    /// waiting for its flush).
    pub fn share(&mut self, i: BufId) {
        let m = &mut self.slots[i as usize].meta;
        m.refs = m.refs.saturating_add(1);
    }

    /// Drop one reference to buffer `i`; with the last, the buffer is
    /// free again, and a lent frame it held is returned with the port it
    /// came from, to be given back to it.
    pub fn release(&mut self, i: BufId) -> Option<(u16, LentFrame)> {
        let s = &mut self.slots[i as usize];
        if s.meta.refs == 0 {
            return None;
        }
        s.meta.refs -= 1;
        if s.meta.refs > 0 {
            return None;
        }
        let lent = s.lent.take().map(|l| (s.meta.origin, l));
        self.put(i);
        lent
    }

    /// Copy the frame in buffer `i` into `dst` (a backend's transmit
    /// memory), truncated to it: one counted copy. Returns the bytes
    /// copied.
    pub fn copy_out(&self, i: BufId, dst: &mut [u8]) -> usize {
        let src = self.frame(i);
        let n = src.len().min(dst.len());
        dst[..n].copy_from_slice(&src[..n]);
        self.count_copy();
        n
    }

    /// Cut the super-frame in buffer `src` as `plan` says (made of that
    /// frame): each segment into a new buffer of the same origin and
    /// annotation, complete (no virtio-net header), appended to `out`,
    /// one counted copy each. `src` is left as it was. Returns the
    /// segments refused at the cap (or longer than a large buffer).
    pub fn segment(&mut self, src: BufId, plan: &Plan, out: &mut Vec<BufId>) -> u64 {
        let s = &mut self.slots[src as usize];
        let (origin, annotation) = (s.meta.origin, s.meta.annotation);
        let len = s.len as usize;
        // The super-frame's memory, out of its slot while segments are
        // taken from the pool.
        let (mem, lent) = (s.mem.take(), s.lent.take());
        let frame: &[u8] = match (&lent, &mem) {
            (Some(l), _) => l.bytes(len),
            (None, Some(m)) => &m[..len],
            (None, None) => &[],
        };
        let mut refused = 0;
        for k in 0..plan.segments() {
            let taken =
                size_for(plan.segment_len(k)).and_then(|size| self.take(origin, annotation, size));
            let Some(i) = taken else {
                refused += 1;
                continue;
            };
            let d = &mut self.slots[i as usize];
            if let Some(dst) = d.mem.as_deref_mut() {
                d.len = plan.write(frame, k, dst) as u32;
            }
            self.count_copy();
            out.push(i);
        }
        let s = &mut self.slots[src as usize];
        s.mem = mem;
        s.lent = lent;
        refused
    }
}

impl BufferPool {
    /// Keep frames on disk through `opts` when asked ([`BufferPool::spill`]).
    pub fn enable_spill(&mut self, opts: SpillOptions) {
        self.set_spill(Spill::new(opts));
    }

    /// Keep frames on disk through `spill` (tests: files given). Its
    /// batches on their way to disk may take half the room the pool
    /// keeps above its spill mark.
    pub fn set_spill(&mut self, mut spill: Spill) {
        spill.set_max_in_flight((self.cap - self.spill_mark()) / 2);
        self.spill = Some(Box::new(spill));
    }

    /// Weigh the spill's batches in memory ([`Spill::in_flight_bytes`])
    /// against the cap as they are now: called after each call into the
    /// spill, so that the common path (a pool that never spills) does
    /// nothing more.
    fn weigh_spill(&mut self) {
        let now = self.spill.as_deref().map_or(0, Spill::in_flight_bytes);
        self.held = self.held - self.spill_charge + now;
        self.spill_charge = now;
    }

    /// Whether frames are on disk, or the spill still holds batches in
    /// memory: the runner then reads back (and learns what was written).
    pub fn spill_busy(&self) -> bool {
        self.spilled > 0 || self.spill_charge > 0
    }

    /// The spill in use, if any.
    pub fn spill_ref(&self) -> Option<&Spill> {
        self.spill.as_deref()
    }

    /// Wait until the spill's I/O thread has done what it was asked (a
    /// driver that wants its read-back not to depend on the disk's
    /// timing: tests in virtual time).
    pub fn sync_spill(&mut self) {
        if let Some(s) = self.spill.as_deref_mut() {
            s.sync();
        }
        self.weigh_spill();
    }

    /// What the spill did so far (zero without one).
    pub fn spill_stats(&self) -> SpillStats {
        self.spill.as_ref().map(|s| s.stats()).unwrap_or_default()
    }

    /// Above this many bytes held, the frames of spilling pipes go to
    /// disk ([`spill_mark`] of the cap).
    pub fn spill_mark(&self) -> u64 {
        spill_mark(self.cap)
    }

    /// Below this many bytes held, frames on disk are read back: two
    /// thirds of the spill mark.
    pub fn read_back_mark(&self) -> u64 {
        self.spill_mark() / 3 * 2
    }

    /// Whether a frame of a spilling pipe that arrives now should go to
    /// disk: the pool is above [`BufferPool::spill_mark`], or frames
    /// wait on disk already (they leave first: a later frame would only
    /// take memory from them, NetPath's order).
    pub fn wants_spill(&self) -> bool {
        self.spill.as_ref().is_some_and(|s| s.on_disk() > 0) || self.held > self.spill_mark()
    }

    /// Whether the spill takes a frame now (not stuck on a full disk or a
    /// failed write, below its bookkeeping bound).
    pub fn can_spill(&mut self) -> bool {
        let can = self.spill.as_deref_mut().is_some_and(|s| {
            s.poll();
            s.can_take()
        });
        self.weigh_spill();
        can
    }

    /// Wait (at most [`SPILL_WAIT`]) for the spill's I/O thread when it
    /// takes no frame only because its batches are all on their way;
    /// whether it takes one now.
    pub fn wait_spill(&mut self) -> bool {
        let can = self
            .spill
            .as_deref_mut()
            .is_some_and(|s| s.wait_behind(SPILL_WAIT));
        self.weigh_spill();
        can
    }

    /// Whether a frame of a spilling pipe the spill cannot take now (the
    /// disk behind, or failing) may wait in memory instead: the pool
    /// holds no more than its spill mark and half the room above it (the
    /// other half is the spill's batches').
    pub fn may_keep(&self) -> bool {
        let mark = self.spill_mark();
        self.held <= mark + (self.cap - mark) / 2
    }

    /// Count a frame of a spilling pipe refused because the spill could
    /// not take it.
    pub fn count_spill_refused(&mut self) {
        if let Some(s) = self.spill.as_deref_mut() {
            s.count_refused();
        }
    }

    /// Frames on disk now.
    pub fn spilled_count(&self) -> usize {
        self.spilled
    }

    /// Whether buffer `i`'s frame is on disk.
    #[inline]
    pub fn is_spilled(&self, i: BufId) -> bool {
        self.spilled > 0 && self.slots[i as usize].spilled.is_some()
    }

    /// Write the frame of buffer `i` (one reference, memory of the
    /// pool's own or a port's lent frame) to disk and free its memory;
    /// returns a lent frame to give back to its port. `Err` (the frame
    /// stays in memory) if the spill cannot take it, or the buffer is
    /// shared or holds another worker's memory.
    pub fn spill(&mut self, i: BufId) -> io::Result<Option<(u16, LentFrame)>> {
        let Some(sp) = self.spill.as_deref_mut() else {
            return Err(io::Error::other("no spill"));
        };
        let s = &mut self.slots[i as usize];
        if s.meta.refs != 1 || s.home.is_some() || s.spilled.is_some() {
            return Err(io::Error::other("a shared or borrowed buffer stays"));
        }
        let n = s.len as usize;
        let bytes: &[u8] = match (&s.lent, &s.mem) {
            (Some(l), _) => l.bytes(n),
            (None, Some(h)) => &h[..n],
            (None, None) => return Err(io::Error::other("no frame")),
        };
        let pushed = sp.push(i, bytes);
        let loc = match pushed {
            Ok(loc) => loc,
            Err(e) => {
                self.weigh_spill();
                return Err(e);
            }
        };
        s.spilled = Some(loc);
        let mem = s.mem.take();
        let lent = s.lent.take().map(|l| (s.meta.origin, l));
        // What it still costs: its slot and its descriptor.
        let charge = std::mem::replace(&mut s.charge, FRAME_BOOKKEEPING);
        self.held = self.held - charge + FRAME_BOOKKEEPING;
        self.spilled += 1;
        if let Some(m) = mem {
            self.unuse(m);
        }
        self.weigh_spill();
        self.trim();
        Ok(lent)
    }

    /// Bring the frame of buffer `i` back from disk now, if it is there
    /// (a departure before its turn to be read back): memory is taken
    /// even at the cap, for a frame that leaves at once. `Err` if it
    /// cannot be read (the frame is lost: the caller counts it; it stays
    /// marked on disk until released, so no later use sends it empty).
    pub fn load(&mut self, i: BufId) -> io::Result<()> {
        let Some(loc) = self.slots[i as usize].spilled else {
            return Ok(());
        };
        let len = self.slots[i as usize].len;
        let Some(sp) = self.spill.as_deref_mut() else {
            return Err(io::Error::other("spilled with no spill"));
        };
        let mut bytes = Vec::new();
        // A record that cannot be read stays where it is: every use of
        // the frame fails (and is counted) until it is released.
        sp.read(loc, len, &mut bytes)?;
        sp.take(loc, len, false);
        self.slots[i as usize].spilled = None;
        self.spilled -= 1;
        let size = size_for(len as usize).unwrap_or(BIG_BUF_SIZE);
        let mut mem = match self.memory(size) {
            Some(m) => m,
            None => {
                // Past the cap, for a moment: it is released when it
                // leaves, and the cap is met again at the next
                // allocation.
                self.allocated += size as u64;
                vec![0u8; size].into_boxed_slice()
            }
        };
        mem[..len as usize].copy_from_slice(&bytes);
        let s = &mut self.slots[i as usize];
        s.mem = Some(mem);
        let was = std::mem::replace(&mut s.charge, size as u64);
        self.held = self.held - was + size as u64;
        self.weigh_spill();
        Ok(())
    }

    /// Read frames back from disk, in the order they were written, while
    /// the pool holds less than [`BufferPool::read_back_mark`]: at most
    /// `budget` records. Returns the frames read back. Reading stops
    /// where the next chunk is still on its way from disk (its frames
    /// come back at a later call, or are loaded when needed).
    pub fn read_back(&mut self, budget: usize) -> usize {
        if self.spill_charge > 0 {
            // Learn which batches were written (their memory freed).
            if let Some(sp) = self.spill.as_deref_mut() {
                sp.poll();
            }
            self.weigh_spill();
        }
        let (mark, top) = (self.read_back_mark(), self.spill_mark());
        // Frames in memory (not the bookkeeping of those on disk) under
        // the read-back mark, and everything under the spill mark.
        let room = |p: &BufferPool| {
            let frames = p.held - p.spilled as u64 * FRAME_BOOKKEEPING;
            frames + BUF_SIZE as u64 <= mark && p.held + BUF_SIZE as u64 <= top
        };
        if self.spilled == 0 || !room(self) {
            return 0;
        }
        let Some(mut sp) = self.spill.take() else {
            return 0;
        };
        let mut n = 0;
        while n < budget && self.spilled > 0 && room(self) {
            let Some((rec, bytes)) = sp.next_record() else {
                // All read, or the next chunk is on its way from disk.
                break;
            };
            let live = self
                .slots
                .get(rec.buf as usize)
                .is_some_and(|s| s.spilled == Some(rec.loc));
            if !live {
                // Read before its turn, or dropped: passed over.
                continue;
            }
            let size = size_for(rec.len as usize).unwrap_or(BIG_BUF_SIZE);
            // Under the mark, so under the cap. Without memory the record
            // stays live on disk, loaded when it is needed.
            let Some(mut mem) = self.memory(size) else {
                break;
            };
            mem[..rec.len as usize].copy_from_slice(bytes);
            sp.take(rec.loc, rec.len, true);
            let s = &mut self.slots[rec.buf as usize];
            s.spilled = None;
            s.mem = Some(mem);
            let was = std::mem::replace(&mut s.charge, size as u64);
            self.held = self.held - was + size as u64;
            self.spilled -= 1;
            n += 1;
        }
        self.spill = Some(sp);
        self.weigh_spill();
        n
    }

    /// The frame of buffer `i`, wherever it is: in memory, or read from
    /// disk into a copy (not loaded: the rules' view of a packet still
    /// waiting). Empty if it cannot be read.
    pub fn bytes(&self, i: BufId) -> Cow<'_, [u8]> {
        let s = &self.slots[i as usize];
        match (s.spilled, self.spill.as_deref()) {
            (Some(loc), Some(sp)) => {
                let mut out = Vec::new();
                match sp.read(loc, s.len, &mut out) {
                    Ok(()) => Cow::Owned(out),
                    Err(_) => Cow::Borrowed(&[]),
                }
            }
            _ => Cow::Borrowed(self.frame(i)),
        }
    }
}

impl BufferPool {
    /// A new buffer of port `origin` (no annotation, no virtio-net
    /// header: a complete frame) whose frame `write` makes from the frame
    /// in `src` (an answer to it, [`crate::answer`]), returning its
    /// length. Not a copy of a frame: not counted in
    /// [`BufferPool::copies`]. `None` at the cap or if `write` makes
    /// nothing.
    pub fn make_from(
        &mut self,
        src: BufId,
        origin: u16,
        write: impl FnOnce(&[u8], &mut [u8]) -> Option<usize>,
    ) -> Option<BufId> {
        let i = self.take(origin, Annotation::default(), BUF_SIZE)?;
        let mut mem = self.slots[i as usize].mem.take();
        let n = mem.as_deref_mut().and_then(|m| write(self.frame(src), m));
        let s = &mut self.slots[i as usize];
        s.mem = mem;
        match n {
            Some(n) => {
                s.len = n.min(BUF_SIZE) as u32;
                Some(i)
            }
            None => {
                self.put(i);
                None
            }
        }
    }

    /// A new buffer holding the first `body` bytes of `ids[0]` (its
    /// headers) followed by the bytes past `body` of each of `ids` (their
    /// payloads), with the first's origin and annotation: a super-frame
    /// made of segments, one counted copy each. `None` at the cap or if
    /// it would not fit a large buffer.
    pub fn merge(&mut self, ids: &[BufId], body: usize) -> Option<BufId> {
        let first = *ids.first()?;
        let total = body
            + ids
                .iter()
                .map(|&i| self.frame(i).len().saturating_sub(body))
                .sum::<usize>();
        let size = size_for(total)?;
        let (origin, annotation) = {
            let m = self.meta(first);
            (m.origin, m.annotation)
        };
        let m = self.take(origin, annotation, size)?;
        let mut mem = self.slots[m as usize].mem.take()?;
        mem[..body].copy_from_slice(&self.frame(first)[..body]);
        let mut n = body;
        for &i in ids {
            let p = &self.frame(i)[body.min(self.frame(i).len())..];
            mem[n..n + p.len()].copy_from_slice(p);
            n += p.len();
            self.count_copy();
        }
        let s = &mut self.slots[m as usize];
        s.mem = Some(mem);
        s.len = n as u32;
        Some(m)
    }
}

/// A port's way into the pool while it receives: it lends every waiting
/// frame here (see the module documentation). The runner reads the
/// buffers taken, in arrival order, when the port returns.
pub struct Rx<'a> {
    pool: &'a mut BufferPool,
    origin: u16,
    budget: usize,
    got: &'a mut Vec<BufId>,
    refused: u64,
}

impl<'a> Rx<'a> {
    /// Frames of port `origin` into `pool`, at most `budget` per call
    /// (taken or refused); the buffers taken are appended to `got`.
    pub fn new(
        pool: &'a mut BufferPool,
        origin: u16,
        budget: usize,
        got: &'a mut Vec<BufId>,
    ) -> Rx<'a> {
        Rx {
            pool,
            origin,
            budget: got.len() + budget,
            got,
            refused: 0,
        }
    }

    /// Whether the runner takes another frame in this call (a bounded
    /// batch, so that one busy port cannot starve the departures that
    /// fall due meanwhile). A port stops walking its ring when it says no.
    pub fn wants_more(&self) -> bool {
        (self.got.len() as u64 + self.refused) < self.budget as u64
    }

    /// Frames refused at the cap in this call.
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// Give the frame taken last the virtio-net header it came with.
    pub fn set_vnet(&mut self, vnet: VnetHdr) {
        if let Some(&i) = self.got.last() {
            self.pool.set_vnet(i, vnet);
        }
    }

    /// Take a frame by copying it, from `parts` laid end to end (a VLAN
    /// tag put back between addresses and ethertype, a synthetic header
    /// before a packet), into a buffer (a large one if it needs it): the
    /// frame's one copy. Longer than a large buffer, it is truncated.
    /// Returns the buffer's bytes, for changes in place (a checksum
    /// completed); `None` when refused at the cap (the port then releases
    /// whatever it holds for the frame).
    pub fn copy(&mut self, parts: &[&[u8]], annotation: Annotation) -> Option<&mut [u8]> {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let size = size_for(total).unwrap_or(BIG_BUF_SIZE);
        let Some(i) = self.pool.take(self.origin, annotation, size) else {
            self.refused += 1;
            return None;
        };
        self.got.push(i);
        let pool = &mut *self.pool;
        pool.count_copy();
        let s = &mut pool.slots[i as usize];
        let dst = s.mem.as_deref_mut()?;
        let mut n = 0;
        for p in parts {
            let k = p.len().min(size - n);
            dst[n..n + k].copy_from_slice(&p[..k]);
            n += k;
        }
        s.len = n as u32;
        Some(&mut dst[..n])
    }

    /// Take a frame by letting `read` write it straight into a buffer (a
    /// `read` system call: the kernel's copy, none in user space).
    /// `read` gets the whole buffer and returns the frame's length, or
    /// `None` if nothing was waiting. At the cap the frame is read into a
    /// scratch buffer and refused, so the kernel's queue still drains.
    /// Returns the length read.
    pub fn read(
        &mut self,
        annotation: Annotation,
        read: impl FnOnce(&mut [u8]) -> io::Result<Option<usize>>,
    ) -> io::Result<Option<usize>> {
        let Some(i) = self.pool.take(self.origin, annotation, BUF_SIZE) else {
            let n = read(&mut self.pool.scratch[..])?;
            if n.is_some() {
                self.refused += 1;
            }
            return Ok(n);
        };
        let s = &mut self.pool.slots[i as usize];
        let r = match s.mem.as_deref_mut() {
            Some(dst) => read(dst),
            None => Ok(None),
        };
        match r {
            Ok(Some(n)) => {
                s.len = n.min(BUF_SIZE) as u32;
                self.got.push(i);
                Ok(Some(n))
            }
            other => {
                self.pool.put(i);
                other
            }
        }
    }

    /// Take a frame that comes after a virtio-net header and may be a
    /// super-frame, by letting `read` scatter them (a `readv`: the
    /// kernel's copy) into: the header, a small buffer, and the tail of
    /// a large one (past its first [`BUF_SIZE`] bytes). A frame that fits
    /// the small buffer stays there; a longer one becomes the large
    /// buffer's, its first [`BUF_SIZE`] bytes moved in front of the rest
    /// (one counted copy). `read` returns the bytes read (header
    /// included) or `None` if nothing was waiting. At the cap the frame
    /// is drained into scratch memory and refused. Returns the frame's
    /// length.
    pub fn read_vnet(
        &mut self,
        annotation: Annotation,
        read: impl FnOnce(&mut [IoSliceMut<'_>]) -> io::Result<Option<usize>>,
    ) -> io::Result<Option<usize>> {
        let mut hdr = [0u8; VNET_HDR_LEN];
        let Some(i) = self.pool.take(self.origin, annotation, BUF_SIZE) else {
            let mut iov = [
                IoSliceMut::new(&mut hdr),
                IoSliceMut::new(&mut self.pool.scratch[..]),
            ];
            let n = read(&mut iov)?;
            if n.is_some() {
                self.refused += 1;
            }
            return Ok(n.map(|n| n.saturating_sub(VNET_HDR_LEN)));
        };
        // The large buffer for the tail, if the cap has room for one
        // beside the small one (else a super-frame is refused).
        let room = self.pool.held + (BIG_BUF_SIZE - BUF_SIZE) as u64 <= self.pool.cap;
        let mut tail = if room {
            self.pool.memory(BIG_BUF_SIZE)
        } else {
            None
        };
        let s = &mut self.pool.slots[i as usize];
        let r = match (s.mem.as_deref_mut(), tail.as_deref_mut()) {
            (Some(head), Some(t)) => read(&mut [
                IoSliceMut::new(&mut hdr),
                IoSliceMut::new(head),
                IoSliceMut::new(&mut t[BUF_SIZE..]),
            ]),
            (Some(head), None) => read(&mut [IoSliceMut::new(&mut hdr), IoSliceMut::new(head)]),
            (None, _) => Ok(None),
        };
        let n = match r {
            Ok(Some(n)) => n.saturating_sub(VNET_HDR_LEN),
            other => {
                if let Some(t) = tail {
                    self.pool.unuse(t);
                }
                self.pool.put(i);
                return other;
            }
        };
        s.meta.vnet = VnetHdr::parse(&hdr).unwrap_or_default();
        // Without a tail, a frame that filled the small buffer may have
        // been cut short: refused below.
        if n < BUF_SIZE || (n == BUF_SIZE && tail.is_some()) {
            s.len = n as u32;
            if let Some(t) = tail {
                self.pool.unuse(t);
            }
            self.got.push(i);
            return Ok(Some(n));
        }
        match (tail, s.mem.take()) {
            (Some(mut big), Some(head)) if n <= BIG_BUF_SIZE => {
                big[..BUF_SIZE].copy_from_slice(&head);
                s.mem = Some(big);
                s.len = n as u32;
                s.charge = BIG_BUF_SIZE as u64;
                self.pool.held += (BIG_BUF_SIZE - BUF_SIZE) as u64;
                self.pool.unuse(head);
                self.pool.count_copy();
                self.got.push(i);
            }
            (tail, head) => {
                // Cut short (no room for the tail, or longer than a
                // large buffer): refused.
                s.mem = head;
                if let Some(t) = tail {
                    self.pool.unuse(t);
                }
                self.pool.put(i);
                self.refused += 1;
            }
        }
        Ok(Some(n))
    }

    /// Take a frame of `len` bytes the port lends without a copy; returns
    /// the buffer holding it (for [`Rx::unlend`]). At the cap it is
    /// refused and handed back (`Err`), for the port to return to the
    /// kernel.
    pub fn lend(
        &mut self,
        frame: LentFrame,
        len: usize,
        annotation: Annotation,
    ) -> Result<BufId, LentFrame> {
        let Some(i) = self.pool.take(self.origin, annotation, 0) else {
            self.refused += 1;
            return Err(frame);
        };
        let s = &mut self.pool.slots[i as usize];
        s.len = len.min(frame.room()).min(u32::MAX as usize) as u32;
        s.lent = Some(frame);
        self.got.push(i);
        Ok(i)
    }

    /// Move the frame a port lent into buffer `i` into memory of the
    /// pool's own (one counted copy), and return the lent frame for the
    /// port to give back to the kernel: for a port that must have its
    /// memory back before the pool is done with the frame (a receive ring
    /// the kernel fills in order). The buffer keeps its id, bytes and
    /// metadata. `None` if `i` does not hold a frame lent at `addr` of
    /// this port (it was released since), or no memory is free.
    pub fn unlend(&mut self, i: BufId, addr: u64) -> Option<LentFrame> {
        let origin = self.origin;
        let pool = &mut *self.pool;
        let s = pool.slots.get(i as usize)?;
        if s.meta.refs == 0
            || s.meta.origin != origin
            || s.lent.as_ref().map(LentFrame::addr) != Some(addr)
        {
            return None;
        }
        let n = s.len as usize;
        if s.mem.is_none() {
            let size = size_for(n).unwrap_or(BIG_BUF_SIZE);
            let m = pool.memory(size)?;
            // A lent frame weighs a small buffer; a longer one now weighs
            // its large buffer.
            let s = &mut pool.slots[i as usize];
            let extra = (size as u64).saturating_sub(s.charge);
            s.charge += extra;
            s.mem = Some(m);
            pool.held += extra;
        }
        let s = &mut pool.slots[i as usize];
        let lent = s.lent.take()?;
        if let Some(h) = s.mem.as_deref_mut() {
            let n = n.min(h.len());
            h[..n].copy_from_slice(lent.bytes(n));
        }
        pool.count_copy();
        Some(lent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_bounds_allocation_and_buffers_recycle() {
        let mut p = BufferPool::with_cap(3 * BUF_SIZE as u64);
        let mut got = Vec::new();
        let mut rx = Rx::new(&mut p, 0, 10, &mut got);
        for k in 0..4u8 {
            let _ = rx.copy(&[&[k; 60]], Annotation::default());
        }
        assert_eq!(rx.refused(), 1);
        assert_eq!(got.len(), 3);
        assert_eq!(p.in_use(), 3);
        assert_eq!(p.allocated_bytes(), 3 * BUF_SIZE as u64);
        assert!(p.release(got[0]).is_none());
        assert_eq!(p.in_use(), 2);
        let mut again = Vec::new();
        let mut rx = Rx::new(&mut p, 1, 10, &mut again);
        assert!(rx.copy(&[&[9; 60]], Annotation::default()).is_some());
        // The freed buffer is reused: no new memory.
        assert_eq!(again, vec![got[0]]);
        assert_eq!(p.allocated_bytes(), 3 * BUF_SIZE as u64);
        assert_eq!(p.frame(got[0]), &[9; 60]);
        assert_eq!(p.meta(got[0]).origin, 1);
        assert_eq!(p.copies(), 4);
    }

    #[test]
    fn parts_are_laid_end_to_end_and_truncated_to_a_large_buffer() {
        let mut p = BufferPool::with_cap(1 << 20);
        let mut got = Vec::new();
        let mut rx = Rx::new(&mut p, 0, 10, &mut got);
        let _ = rx.copy(&[&[1, 2], &[3], &[4, 5]], Annotation::default());
        let _ = rx.copy(&[&[7; BUF_SIZE], &[8; 10]], Annotation::default());
        let _ = rx.copy(&[&[7; BIG_BUF_SIZE], &[8; 10]], Annotation::default());
        assert_eq!(p.frame(got[0]), &[1, 2, 3, 4, 5]);
        assert_eq!(p.frame(got[1]).len(), BUF_SIZE + 10);
        assert_eq!(p.frame(got[1])[BUF_SIZE..], [8; 10]);
        assert_eq!(p.frame(got[2]).len(), BIG_BUF_SIZE);
        assert_eq!(p.copies(), 3);
        assert_eq!(p.allocated_bytes(), (BUF_SIZE + 2 * BIG_BUF_SIZE) as u64);
    }

    /// A readv as a TAP with virtio-net headers does it: the header, the
    /// small buffer, the large one's tail.
    fn scatter(iov: &mut [IoSliceMut<'_>], hdr: &VnetHdr, frame: &[u8]) -> usize {
        let h = hdr.to_bytes();
        let mut src = h.iter().chain(frame).copied();
        let mut n = 0;
        for v in iov.iter_mut() {
            for b in v.iter_mut() {
                match src.next() {
                    Some(x) => {
                        *b = x;
                        n += 1;
                    }
                    None => return n,
                }
            }
        }
        n
    }

    #[test]
    fn a_super_frame_read_moves_its_head_into_a_large_buffer() {
        let mut p = BufferPool::with_cap(1 << 20);
        let hdr = VnetHdr {
            gso_type: crate::gso::GSO_TCPV4,
            gso_size: 1448,
            ..VnetHdr::default()
        };
        let big: Vec<u8> = (0..40_000u32).map(|i| (i % 253) as u8).collect();
        let small = [5u8; 100];
        let mut got = Vec::new();
        let mut rx = Rx::new(&mut p, 1, 10, &mut got);
        let a = rx.read_vnet(Annotation::default(), |iov| {
            Ok(Some(scatter(iov, &hdr, &big)))
        });
        let b = rx.read_vnet(Annotation::default(), |iov| {
            Ok(Some(scatter(iov, &VnetHdr::default(), &small)))
        });
        assert_eq!((a.ok(), b.ok()), (Some(Some(40_000)), Some(Some(100))));
        assert_eq!(p.frame(got[0]), &big[..]);
        assert_eq!(p.meta(got[0]).vnet, hdr);
        assert_eq!(p.frame(got[1]), &small[..]);
        assert_eq!(p.meta(got[1]).vnet, VnetHdr::default());
        // The super-frame's head moved: one copy; the small frame none.
        assert_eq!(p.copies(), 1);
        // Freed, buffers are reused: reading super-frames one at a time
        // allocates nothing after the first rounds.
        let mut last = got[0];
        let mut sizes = Vec::new();
        for _ in 0..4 {
            let _ = p.release(last);
            let mut again = Vec::new();
            let mut rx = Rx::new(&mut p, 1, 10, &mut again);
            let _ = rx.read_vnet(Annotation::default(), |iov| {
                Ok(Some(scatter(iov, &hdr, &big)))
            });
            assert_eq!(p.frame(again[0]), &big[..]);
            last = again[0];
            sizes.push(p.allocated_bytes());
        }
        assert_eq!(sizes[1], sizes[3]);
    }

    #[test]
    fn the_cap_counts_a_large_buffer_by_its_bytes() {
        // Room for one large buffer and two small ones, not two large.
        let mut p = BufferPool::with_cap((BIG_BUF_SIZE + 2 * BUF_SIZE) as u64);
        let hdr = VnetHdr {
            gso_type: crate::gso::GSO_TCPV4,
            gso_size: 1448,
            ..VnetHdr::default()
        };
        let big = vec![1u8; 30_000];
        let mut got = Vec::new();
        let mut rx = Rx::new(&mut p, 0, 10, &mut got);
        let read = |rx: &mut Rx<'_>| {
            rx.read_vnet(Annotation::default(), |iov| {
                Ok(Some(scatter(iov, &hdr, &big)))
            })
        };
        assert_eq!(read(&mut rx).ok(), Some(Some(30_000)));
        // No room for a second large buffer: the read is cut short at the
        // small buffer, and refused.
        assert!(read(&mut rx).is_ok());
        assert_eq!(rx.refused(), 1);
        assert_eq!(got.len(), 1);
        assert!(p.allocated_bytes() <= (BIG_BUF_SIZE + 2 * BUF_SIZE) as u64);
        // Freed, its memory makes room for small buffers again.
        let _ = p.release(got[0]);
        let mut small = Vec::new();
        let mut rx = Rx::new(&mut p, 0, 40, &mut small);
        for _ in 0..40 {
            let _ = rx.copy(&[&[1; 60]], Annotation::default());
        }
        assert_eq!(small.len(), (BIG_BUF_SIZE + 2 * BUF_SIZE) / BUF_SIZE);
        assert!(p.allocated_bytes() <= (BIG_BUF_SIZE + 2 * BUF_SIZE) as u64);
    }

    #[test]
    fn a_super_frame_moves_to_another_pool_and_its_large_buffer_goes_home() {
        let mut a = BufferPool::with_cap(1 << 20);
        let mut b = BufferPool::with_cap(1 << 20);
        a.set_worker(0);
        b.set_worker(1);
        let hdr = VnetHdr {
            gso_type: crate::gso::GSO_TCPV4,
            gso_size: 1448,
            ..VnetHdr::default()
        };
        let big: Vec<u8> = (0..30_000u32).map(|i| (i % 251) as u8).collect();
        let mut got = Vec::new();
        let mut rx = Rx::new(&mut a, 2, 10, &mut got);
        let _ = rx.read_vnet(Annotation::default(), |iov| {
            Ok(Some(scatter(iov, &hdr, &big)))
        });
        let allocated = a.allocated_bytes();
        let copies = a.copies();
        let d = a.detach(got[0]).expect("memory moves");
        // Moved, not copied; still counted by its home pool.
        assert_eq!(a.copies(), copies);
        assert_eq!((d.mem.len(), d.len, d.home), (BIG_BUF_SIZE, 30_000, 0));
        assert_eq!(a.in_use(), 0);
        assert_eq!(a.allocated_bytes(), allocated);
        let i = b.adopt(d.mem, d.len, &d.meta, d.home).expect("room");
        assert_eq!(b.frame(i), &big[..]);
        assert_eq!(b.meta(i).vnet, hdr);
        assert_eq!(b.meta(i).origin, 2);
        // The adopting pool allocated nothing, and weighs it at its size.
        assert_eq!(b.allocated_bytes(), 0);
        assert!(b
            .adopt(vec![0u8; BIG_BUF_SIZE].into_boxed_slice(), 1, &d.meta, 0)
            .is_ok());
        let mut small = BufferPool::with_cap(BIG_BUF_SIZE as u64);
        assert!(small
            .adopt(vec![0u8; BIG_BUF_SIZE].into_boxed_slice(), 1, &d.meta, 0)
            .is_ok());
        assert!(small
            .adopt(vec![0u8; BUF_SIZE].into_boxed_slice(), 1, &d.meta, 0)
            .is_err());
        // Released, it waits in the outbox, then goes home to the large
        // free list, where the next super-frame finds it.
        assert!(b.release(i).is_none());
        let out: Vec<(u16, FrameMem)> = b.take_outbox().collect();
        assert_eq!(out.len(), 1);
        for (home, mem) in out {
            assert_eq!(home, 0);
            a.restore(mem);
        }
        assert_eq!(a.spare_count(), 2);
        let mut again = Vec::new();
        let mut rx = Rx::new(&mut a, 2, 10, &mut again);
        let _ = rx.read_vnet(Annotation::default(), |iov| {
            Ok(Some(scatter(iov, &hdr, &big)))
        });
        assert_eq!(a.frame(again[0]), &big[..]);
        assert_eq!(a.allocated_bytes(), allocated);
    }

    #[test]
    fn a_shared_or_lent_frame_is_copied_at_a_hand_off_into_a_buffer_of_its_size() {
        let mut a = BufferPool::with_cap(1 << 20);
        let mut got = Vec::new();
        let long = vec![3u8; 5000];
        let _ = Rx::new(&mut a, 0, 10, &mut got).copy(&[&long], Annotation::default());
        a.share(got[0]);
        let copies = a.copies();
        let d = a.detach(got[0]).expect("room for the copy");
        assert_eq!(a.copies(), copies + 1);
        assert_eq!((d.mem.len(), d.len), (BIG_BUF_SIZE, 5000));
        assert_eq!(&d.mem[..5000], &long[..]);
        // The duplicate still holds the original.
        assert_eq!(a.in_use(), 1);
        assert_eq!(a.frame(got[0]), &long[..]);
        // Without memory under the cap for the copy, nothing changes.
        let mut tight = BufferPool::with_cap(BIG_BUF_SIZE as u64);
        let mut got = Vec::new();
        let _ = Rx::new(&mut tight, 0, 10, &mut got).copy(&[&long], Annotation::default());
        tight.share(got[0]);
        assert!(tight.detach(got[0]).is_none());
        assert_eq!(tight.meta(got[0]).refs(), 2);
    }

    #[test]
    fn an_unlent_frame_keeps_its_buffer_and_bytes_and_returns_its_token() {
        use crate::backends::lend::Mapping;
        use std::sync::Arc;
        let region = Arc::new(Mapping::new(None, 8192, 0).expect("anonymous mapping"));
        // SAFETY: the anonymous mapping is this test's alone; one token
        // per chunk.
        let token = unsafe { LentFrame::new(region.clone(), 4096, 2048) }.expect("in bounds");
        let mut p = BufferPool::with_cap(4 * BUF_SIZE as u64);
        let mut got = Vec::new();
        let mut rx = Rx::new(&mut p, 3, 10, &mut got);
        let i = rx.lend(token, 60, Annotation::default()).expect("taken");
        // Not this port's frame, or not at that address: nothing happens.
        assert!(Rx::new(&mut p, 2, 10, &mut Vec::new())
            .unlend(i, 4096)
            .is_none());
        assert!(Rx::new(&mut p, 3, 10, &mut Vec::new())
            .unlend(i, 0)
            .is_none());
        p.frame_mut(i).copy_from_slice(&[7; 60]);
        let before = p.copies();
        let back = Rx::new(&mut p, 3, 10, &mut Vec::new())
            .unlend(i, 4096)
            .expect("the lent frame comes back");
        assert_eq!(back.addr(), 4096);
        drop(back);
        // Same buffer, same bytes and origin, now in the pool's memory.
        assert_eq!(p.frame(i), &[7; 60]);
        assert_eq!(p.meta(i).origin, 3);
        assert_eq!(p.copies(), before + 1);
        assert_eq!(p.allocated_bytes(), BUF_SIZE as u64);
        // Released, it returns no lent frame (there is none any more).
        assert!(p.release(i).is_none());
        assert_eq!(p.in_use(), 0);
    }

    #[test]
    fn a_shared_buffer_is_freed_with_its_last_reference() {
        let mut p = BufferPool::with_cap(1 << 20);
        let mut got = Vec::new();
        let tag = Annotation {
            queued: Some(QueueTag { id: 7, hook: 3 }),
            ..Annotation::default()
        };
        let _ = Rx::new(&mut p, 2, 10, &mut got).copy(&[&[1; 20]], tag);
        let b = got[0];
        p.share(b);
        assert_eq!(p.meta(b).refs(), 2);
        assert!(p.release(b).is_none());
        assert_eq!(p.in_use(), 1);
        assert_eq!(p.meta(b).annotation.queued.map(|q| q.id), Some(7));
        assert!(p.release(b).is_none());
        assert_eq!(p.in_use(), 0);
        // A release too many changes nothing.
        assert!(p.release(b).is_none());
        assert_eq!(p.in_use(), 0);
    }

    #[test]
    fn a_read_at_the_cap_drains_into_scratch_and_is_refused() {
        let mut p = BufferPool::with_cap(BUF_SIZE as u64);
        let mut got = Vec::new();
        let mut rx = Rx::new(&mut p, 0, 10, &mut got);
        let fill = |b: &mut [u8]| {
            b[..4].copy_from_slice(&[1, 2, 3, 4]);
            Ok(Some(4))
        };
        assert_eq!(rx.read(Annotation::default(), fill).ok(), Some(Some(4)));
        assert_eq!(rx.read(Annotation::default(), fill).ok(), Some(Some(4)));
        assert_eq!(
            rx.read(Annotation::default(), |_| Ok(None)).ok(),
            Some(None)
        );
        assert_eq!(rx.refused(), 1);
        assert_eq!(got.len(), 1);
        assert_eq!(p.frame(got[0]), &[1, 2, 3, 4]);
        // The kernel wrote it: no copy in user space.
        assert_eq!(p.copies(), 0);
    }

    #[test]
    fn the_annotation_reaches_the_view() {
        let a = Annotation {
            dir: Some(Direction::Out),
            uid: Some(1000),
            len: Some(3000),
            synthetic_header: true,
            ..Annotation::default()
        };
        let mut v = PacketView {
            src_mac: Some([2; 6]),
            len: 1500,
            ..PacketView::default()
        };
        a.apply(&mut v);
        assert_eq!(v.dir, Some(Direction::Out));
        assert_eq!(v.uid, Some(1000));
        assert_eq!(v.len, 3000);
        assert_eq!(v.src_mac, None);
    }
}
