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
//!   ([`Rx::copy`], [`BufferPool::copy_out`]) is counted
//!   ([`BufferPool::copies`]); backends copy frames only through these, so
//!   the count is every copy between the kernel's hand-over and its
//!   take-back. The tests check it is at most one per forwarded frame.
//! * **Workers.** Each worker has a pool of its own. A frame handed to
//!   another worker ([`crate::worker`]) moves as its memory
//!   ([`FrameMem`], [`BufferPool::detach`]): the receiving pool holds it
//!   in a slot of its own ([`BufferPool::adopt`]) and, when done with it,
//!   puts it in its outbox, from where the runner sends it home through a
//!   return ring ([`BufferPool::take_outbox`], [`BufferPool::restore`]).
//!   No worker ever touches memory another holds. A frame lent by a port
//!   or shared by a duplicate is copied instead (counted), so a port's
//!   lent memory never leaves its worker.

use crate::backends::lend::LentFrame;
use pipelab_classify::{Direction, PacketView};
use std::cell::Cell;
use std::io;

/// Size of one buffer: an MTU-1500 Ethernet frame with VLAN tags, rounded.
pub const BUF_SIZE: usize = 2048;

/// A buffer of the pool (a packet descriptor's `buf`).
pub type BufId = u32;

/// A buffer's memory, as it moves between workers' pools.
pub type FrameMem = Box<[u8; BUF_SIZE]>;

/// A frame taken out of a pool to move to another worker's
/// ([`BufferPool::detach`]).
pub struct Detached {
    /// Its memory.
    pub mem: FrameMem,
    /// The frame's length.
    pub len: u16,
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
    /// Memory of the pool's own, allocated the first time the slot holds a
    /// frame that is not lent.
    heap: Option<Box<[u8; BUF_SIZE]>>,
    /// A frame a port lent, while the slot holds it.
    lent: Option<LentFrame>,
    len: u16,
    meta: BufMeta,
    /// The worker `heap` belongs to, if another's (a frame handed over).
    home: Option<u16>,
}

/// Buffers, their metadata, their free lists, and the cap.
pub struct BufferPool {
    slots: Vec<Slot>,
    /// Free slots with memory of their own.
    free: Vec<BufId>,
    /// Free slots without (they held only lent frames so far).
    bare: Vec<BufId>,
    in_use: usize,
    /// Slots with memory of their own.
    allocated: usize,
    max: usize,
    /// Frame copies made so far.
    copies: Cell<u64>,
    /// Where a frame refused at the cap is read, to drain it.
    scratch: Box<[u8; BUF_SIZE]>,
    /// The worker this pool belongs to.
    me: u16,
    /// Memory of this pool's own, back from other workers, not in a slot.
    spare: Vec<FrameMem>,
    /// Memory of other workers' this pool is done with: (home, memory).
    outbox: Vec<(u16, FrameMem)>,
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field("in_use", &self.in_use)
            .field("allocated", &self.allocated)
            .field("max", &self.max)
            .field("copies", &self.copies.get())
            .finish()
    }
}

impl BufferPool {
    /// A pool that holds at most `cap_bytes` of buffers.
    pub fn with_cap(cap_bytes: u64) -> BufferPool {
        let max = (cap_bytes / BUF_SIZE as u64).clamp(1, u32::MAX as u64) as usize;
        BufferPool {
            slots: Vec::new(),
            free: Vec::new(),
            bare: Vec::new(),
            in_use: 0,
            allocated: 0,
            max,
            copies: Cell::new(0),
            scratch: Box::new([0u8; BUF_SIZE]),
            me: 0,
            spare: Vec::new(),
            outbox: Vec::new(),
        }
    }

    /// Belong to worker `me` (memory handed over is sent home to it).
    pub fn set_worker(&mut self, me: u16) {
        self.me = me;
    }

    /// Memory for a slot: a spare one, or a new allocation.
    fn memory(&mut self) -> FrameMem {
        self.spare.pop().unwrap_or_else(|| {
            self.allocated += 1;
            Box::new([0u8; BUF_SIZE])
        })
    }

    /// Take the frame in buffer `i` out of this pool, for another
    /// worker's, and drop this pool's reference to it: its memory moves
    /// (no copy) when the buffer is the only reference and holds memory,
    /// else (a duplicate shares it, or a port lent it) the frame is
    /// copied into memory of this pool's own (one counted copy).
    pub fn detach(&mut self, i: BufId) -> Detached {
        let me = self.me;
        let s = &mut self.slots[i as usize];
        let (len, meta) = (s.len, s.meta);
        if s.meta.refs <= 1 && s.lent.is_none() {
            if let Some(mem) = s.heap.take() {
                // Ours, it stays counted as allocated while away; the
                // slot is bare now either way.
                let home = s.home.take().unwrap_or(me);
                self.put(i);
                return Detached {
                    mem,
                    len,
                    meta,
                    home,
                    lent: None,
                };
            }
        }
        let mut mem = self.memory();
        let n = len as usize;
        mem[..n].copy_from_slice(self.frame(i));
        self.copies.set(self.copies.get() + 1);
        let lent = self.release(i);
        Detached {
            mem,
            len,
            meta,
            home: me,
            lent,
        }
    }

    /// Hold a frame another worker handed over (`mem`, belonging to
    /// worker `home`) in a buffer of this pool, with one reference;
    /// `Err(mem)` at the cap.
    pub fn adopt(
        &mut self,
        mem: FrameMem,
        len: u16,
        meta: &BufMeta,
        home: u16,
    ) -> Result<BufId, FrameMem> {
        let Some(i) = self.take(meta.origin, meta.annotation, false) else {
            return Err(mem);
        };
        let me = self.me;
        let s = &mut self.slots[i as usize];
        let own = s.heap.replace(mem);
        s.home = (home != me).then_some(home);
        s.len = len.min(BUF_SIZE as u16);
        if let Some(own) = own {
            self.spare.push(own);
        }
        Ok(i)
    }

    /// Memory of this pool's own not in a slot (back from other workers).
    pub fn spare_count(&self) -> usize {
        self.spare.len()
    }

    /// Memory of this pool's own, back from another worker.
    pub fn restore(&mut self, mem: FrameMem) {
        self.spare.push(mem);
    }

    /// Memory of other workers this pool is done with, to send home:
    /// (home, memory).
    pub fn take_outbox(&mut self) -> std::vec::Drain<'_, (u16, FrameMem)> {
        self.outbox.drain(..)
    }

    /// The most buffers the pool will hold.
    pub fn max_buffers(&self) -> usize {
        self.max
    }

    /// Buffers holding a frame now (lent ones included).
    pub fn in_use(&self) -> usize {
        self.in_use
    }

    /// Bytes of buffer memory allocated so far (never more than the cap).
    pub fn allocated_bytes(&self) -> u64 {
        (self.allocated * BUF_SIZE) as u64
    }

    /// User-space copies of frame bytes made so far (one per frame copied
    /// in on receive or out on transmit).
    pub fn copies(&self) -> u64 {
        self.copies.get()
    }

    /// A free slot, marked in use with one reference; `heap` asks for one
    /// with memory of its own. `None` at the cap.
    fn take(&mut self, origin: u16, annotation: Annotation, heap: bool) -> Option<BufId> {
        if self.in_use >= self.max {
            return None;
        }
        let i = if heap {
            self.free.pop().or_else(|| self.bare.pop())
        } else {
            self.bare.pop().or_else(|| self.free.pop())
        };
        let i = match i {
            Some(i) => i,
            None => {
                self.slots.push(Slot::default());
                self.slots.len() as BufId - 1
            }
        };
        if heap && self.slots[i as usize].heap.is_none() {
            let mem = self.memory();
            self.slots[i as usize].heap = Some(mem);
        }
        let s = &mut self.slots[i as usize];
        s.len = 0;
        s.meta = BufMeta {
            origin,
            refs: 1,
            annotation,
        };
        self.in_use += 1;
        Some(i)
    }

    /// Put slot `i`, holding nothing, back on its free list.
    fn put(&mut self, i: BufId) {
        let s = &mut self.slots[i as usize];
        s.meta.refs = 0;
        self.in_use -= 1;
        if let Some(home) = s.home.take() {
            // Another worker's memory goes home.
            if let Some(mem) = s.heap.take() {
                self.outbox.push((home, mem));
            }
        }
        if s.heap.is_some() {
            self.free.push(i);
        } else {
            self.bare.push(i);
        }
    }

    /// The frame in buffer `i`.
    pub fn frame(&self, i: BufId) -> &[u8] {
        let s = &self.slots[i as usize];
        let n = s.len as usize;
        match (&s.lent, &s.heap) {
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
        match (&mut s.lent, &mut s.heap) {
            (Some(l), _) => l.bytes_mut(n),
            (None, Some(h)) => &mut h[..n],
            (None, None) => &mut [],
        }
    }

    /// The metadata of buffer `i`.
    pub fn meta(&self, i: BufId) -> &BufMeta {
        &self.slots[i as usize].meta
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
        self.copies.set(self.copies.get() + 1);
        n
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

    /// Take a frame by copying it, from `parts` laid end to end (a VLAN
    /// tag put back between addresses and ethertype, a synthetic header
    /// before a packet), into a buffer: the frame's one copy. Longer than
    /// a buffer, it is truncated. Returns the buffer's bytes, for changes
    /// in place (a checksum completed); `None` when refused at the cap
    /// (the port then releases whatever it holds for the frame).
    pub fn copy(&mut self, parts: &[&[u8]], annotation: Annotation) -> Option<&mut [u8]> {
        let Some(i) = self.pool.take(self.origin, annotation, true) else {
            self.refused += 1;
            return None;
        };
        self.got.push(i);
        let pool = &mut *self.pool;
        pool.copies.set(pool.copies.get() + 1);
        let s = &mut pool.slots[i as usize];
        let dst = s.heap.as_deref_mut()?;
        let mut n = 0;
        for p in parts {
            let k = p.len().min(BUF_SIZE - n);
            dst[n..n + k].copy_from_slice(&p[..k]);
            n += k;
        }
        s.len = n as u16;
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
        let Some(i) = self.pool.take(self.origin, annotation, true) else {
            let n = read(&mut self.pool.scratch[..])?;
            if n.is_some() {
                self.refused += 1;
            }
            return Ok(n);
        };
        let s = &mut self.pool.slots[i as usize];
        let r = match s.heap.as_deref_mut() {
            Some(dst) => read(&mut dst[..]),
            None => Ok(None),
        };
        match r {
            Ok(Some(n)) => {
                s.len = n.min(BUF_SIZE) as u16;
                self.got.push(i);
                Ok(Some(n))
            }
            other => {
                self.pool.put(i);
                other
            }
        }
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
        let Some(i) = self.pool.take(self.origin, annotation, false) else {
            self.refused += 1;
            return Err(frame);
        };
        let s = &mut self.pool.slots[i as usize];
        s.len = len.min(frame.room()).min(u16::MAX as usize) as u16;
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
    /// this port (it was released since).
    pub fn unlend(&mut self, i: BufId, addr: u64) -> Option<LentFrame> {
        let origin = self.origin;
        let pool = &mut *self.pool;
        let s = pool.slots.get_mut(i as usize)?;
        if s.meta.refs == 0
            || s.meta.origin != origin
            || s.lent.as_ref().map(LentFrame::addr) != Some(addr)
        {
            return None;
        }
        if s.heap.is_none() {
            s.heap = Some(Box::new([0u8; BUF_SIZE]));
            pool.allocated += 1;
        }
        let lent = s.lent.take()?;
        let n = s.len as usize;
        if let Some(h) = s.heap.as_deref_mut() {
            h[..n].copy_from_slice(lent.bytes(n));
        }
        pool.copies.set(pool.copies.get() + 1);
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
    fn parts_are_laid_end_to_end_and_truncated_to_a_buffer() {
        let mut p = BufferPool::with_cap(1 << 20);
        let mut got = Vec::new();
        let mut rx = Rx::new(&mut p, 0, 10, &mut got);
        let _ = rx.copy(&[&[1, 2], &[3], &[4, 5]], Annotation::default());
        let _ = rx.copy(&[&[7; BUF_SIZE], &[8; 10]], Annotation::default());
        assert_eq!(p.frame(got[0]), &[1, 2, 3, 4, 5]);
        assert_eq!(p.frame(got[1]).len(), BUF_SIZE);
        assert_eq!(p.copies(), 2);
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
