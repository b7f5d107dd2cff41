//! Packet descriptors and the descriptor pool.
//!
//! A [`Packet`] is the small, `Copy` description of a frame that the engine
//! moves: its length, its flow key, when it entered the emulator, and an
//! opaque handle to the caller's buffer. The bytes themselves never enter the
//! engine: they stay in the backend's buffer pool and the descriptor points at
//! them (ModelNet's "packets move by reference").
//!
//! Inside the engine a descriptor lives in a `Pool` slot together with the
//! per-hop metadata (route, hop, due time) and an intrusive `next` link, so
//! queues and delay lines are linked lists through the pool: moving a packet
//! from one pipe to the next is a few index writes, and steady-state operation
//! allocates nothing.

use crate::time::Instant;
use std::net::{IpAddr, Ipv4Addr};

/// The fields of a packet that classification and masks look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    /// IP protocol number (6 TCP, 17 UDP, ...); 0 for non-IP frames.
    pub proto: u8,
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Source port (0 when the protocol has none).
    pub sport: u16,
    /// Destination port (0 when the protocol has none).
    pub dport: u16,
}

impl Default for FlowKey {
    fn default() -> Self {
        FlowKey {
            proto: 0,
            src: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            dst: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            sport: 0,
            dport: 0,
        }
    }
}

/// A packet descriptor: what the engine knows of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Length in bytes as the link counts it (the caller decides L2 or L3).
    pub len: u32,
    /// The caller's handle to the frame's buffer; opaque to the engine.
    pub buf: u32,
    /// The caller's flow tag (a source index, a socket, ...); opaque.
    pub flow: u32,
    /// The caller's per-packet tag (a sequence number, ...); opaque.
    pub tag: u64,
    /// Where the packet is on its way through an emulation (rules to
    /// resume at, passes, topology path, ports): owned by the emulation
    /// layer above the engine, opaque to the engine.
    pub stage: u64,
    /// When the packet entered the emulator (its first pipe).
    pub born: Instant,
    /// The classification key.
    pub key: FlowKey,
    /// What the emulator did to the packet ([`Packet::DUPLICATE`],
    /// [`Packet::CORRUPT`], [`Packet::REORDERED`], [`Packet::CE`]) and what
    /// the caller knows of it ([`Packet::ECT`]).
    pub flags: u8,
}

impl Packet {
    /// This descriptor is a copy made by a duplication model.
    pub const DUPLICATE: u8 = 1;
    /// A corruption model decided to damage this packet's bits.
    pub const CORRUPT: u8 = 2;
    /// A reordering model sent this packet ahead of others.
    pub const REORDERED: u8 = 4;
    /// The packet is ECN-capable (its IP header carries ECT(0), ECT(1) or
    /// CE); set by the caller from the frame.
    pub const ECT: u8 = 8;
    /// A pipe with `ecn` marked Congestion Experienced instead of dropping
    /// it; whoever holds the bytes sets the IP header's ECN field to CE.
    pub const CE: u8 = 16;
}

impl Packet {
    /// A descriptor of `len` bytes with default key and handles.
    pub fn new(len: u32) -> Packet {
        Packet {
            len,
            buf: 0,
            flow: 0,
            tag: 0,
            stage: 0,
            born: Instant::ZERO,
            key: FlowKey::default(),
            flags: 0,
        }
    }
}

/// Index of a descriptor slot in the engine's pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PacketId(pub(crate) u32);

/// "No packet" in intrusive links.
pub(crate) const NIL: u32 = u32::MAX;

/// A pool slot: the descriptor plus the engine's per-hop metadata.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot {
    pub pkt: Packet,
    /// Next packet in whichever list (queue, delay line, free list) holds this one.
    pub next: u32,
    /// Route being followed and the index of the current hop in it.
    pub route: u32,
    pub hop: u16,
    /// The flow queue (engine queue id) chosen for the current hop, or
    /// `NIL` for the pipe's default queue.
    pub queue: u32,
    /// The scheduler flow slot holding the packet in its current pipe
    /// (meaningful only in a pipe with a scheduler).
    pub qslot: u32,
    /// Arrival at the current pipe.
    pub arrival: Instant,
    /// When the packet leaves the current stage (transmission end or
    /// delay-line exit).
    pub due: Instant,
}

/// A fixed-capacity slab of descriptor slots with an intrusive free list.
///
/// Capacity is set at construction: the pool never grows past it, so a
/// full pool is a clean, counted drop. Its memory is reserved at
/// construction and never moved, but a slot is written only when it is
/// first used: the free list holds the slots given back, and a fresh slot
/// is taken from the end of the ones used so far when the list is empty.
/// So an engine costs the memory of its high-water mark, not of its cap
/// (a million slots written up front cost `pipelab sim` 130 MB and a
/// tenth of a second before the first packet), and slots are handed out
/// in the same order as from a list of every slot in index order: the
/// slots given back first (last given back, first taken), then fresh
/// ones in ascending order.
#[derive(Debug)]
pub(crate) struct Pool {
    slots: Vec<Slot>,
    /// The most slots there may be.
    cap: u32,
    free: u32,
    in_use: u32,
    /// Bytes (`len`) of the descriptors in use.
    in_use_bytes: u64,
}

impl Pool {
    pub fn with_capacity(cap: u32) -> Pool {
        Pool {
            // Reserved, not touched: the pages are the kernel's until a
            // slot is first used, and the vector never reallocates.
            slots: Vec::with_capacity(cap as usize),
            cap,
            free: NIL,
            in_use: 0,
            in_use_bytes: 0,
        }
    }

    /// Take a free slot for `pkt`, or `None` if the pool is exhausted.
    #[inline]
    pub fn alloc(&mut self, pkt: Packet) -> Option<u32> {
        let i = self.free;
        if i == NIL {
            return self.alloc_fresh(pkt);
        }
        let s = &mut self.slots[i as usize];
        self.free = s.next;
        s.pkt = pkt;
        s.next = NIL;
        s.queue = NIL;
        self.in_use += 1;
        self.in_use_bytes += pkt.len as u64;
        Some(i)
    }

    /// A slot never used before, at the end of the used ones.
    #[cold]
    fn alloc_fresh(&mut self, pkt: Packet) -> Option<u32> {
        let i = self.slots.len() as u32;
        if i >= self.cap || i == NIL {
            return None;
        }
        self.slots.push(Slot {
            pkt,
            next: NIL,
            route: 0,
            hop: 0,
            queue: NIL,
            qslot: NIL,
            arrival: Instant::ZERO,
            due: Instant::ZERO,
        });
        self.in_use += 1;
        self.in_use_bytes += pkt.len as u64;
        Some(i)
    }

    /// Return slot `i` to the free list and give back its descriptor.
    #[inline]
    pub fn free(&mut self, i: u32) -> Packet {
        let s = &mut self.slots[i as usize];
        s.next = self.free;
        self.free = i;
        self.in_use -= 1;
        self.in_use_bytes -= s.pkt.len as u64;
        s.pkt
    }

    #[inline]
    pub fn get(&self, i: u32) -> &Slot {
        &self.slots[i as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut Slot {
        &mut self.slots[i as usize]
    }

    pub fn in_use(&self) -> u32 {
        self.in_use
    }

    /// Bytes of the descriptors in use.
    pub fn in_use_bytes(&self) -> u64 {
        self.in_use_bytes
    }
}

/// A FIFO of packets linked through the pool (a queue or a delay line).
#[derive(Clone, Copy, Debug)]
pub(crate) struct List {
    head: u32,
    tail: u32,
    len: u32,
    bytes: u64,
}

impl Default for List {
    fn default() -> Self {
        List {
            head: NIL,
            tail: NIL,
            len: 0,
            bytes: 0,
        }
    }
}

impl List {
    #[inline]
    pub fn push_back(&mut self, pool: &mut Pool, i: u32) {
        let len = {
            let s = pool.get_mut(i);
            s.next = NIL;
            s.pkt.len
        };
        if self.tail == NIL {
            self.head = i;
        } else {
            pool.get_mut(self.tail).next = i;
        }
        self.tail = i;
        self.len += 1;
        self.bytes += len as u64;
    }

    #[inline]
    pub fn pop_front(&mut self, pool: &mut Pool) -> Option<u32> {
        let i = self.head;
        if i == NIL {
            return None;
        }
        let s = pool.get_mut(i);
        self.head = s.next;
        s.next = NIL;
        if self.head == NIL {
            self.tail = NIL;
        }
        self.len -= 1;
        self.bytes -= s.pkt.len as u64;
        Some(i)
    }

    /// Exchange the first two packets (NetPath's head-of-queue swap).
    /// Returns false (and does nothing) with fewer than two packets.
    pub fn swap_front_two(&mut self, pool: &mut Pool) -> bool {
        if self.len < 2 {
            return false;
        }
        let a = self.head;
        let b = pool.get(a).next;
        let c = pool.get(b).next;
        pool.get_mut(b).next = a;
        pool.get_mut(a).next = c;
        self.head = b;
        if self.tail == b {
            self.tail = a;
        }
        true
    }

    #[inline]
    pub fn front(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }

    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }

    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head == NIL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_recycles_slots_and_reports_exhaustion() {
        let mut pool = Pool::with_capacity(2);
        let a = pool.alloc(Packet::new(1)).expect("slot");
        let b = pool.alloc(Packet::new(2)).expect("slot");
        assert_eq!(pool.alloc(Packet::new(3)), None);
        assert_eq!(pool.free(a).len, 1);
        let c = pool.alloc(Packet::new(4)).expect("slot");
        assert_eq!(c, a);
        assert_eq!(pool.get(b).pkt.len, 2);
        assert_eq!(pool.in_use(), 2);
    }

    /// The pool writes a slot only when it is first used. A pass proves it
    /// hands out the same slots, in the same order, as a pool with every
    /// slot on its free list up front (the order the engine's exactness
    /// rests on, since slots break no tie but tests and traces see them),
    /// refuses at the same moments, and reserves no slot it was not asked
    /// for.
    #[test]
    fn slots_written_on_first_use_come_in_the_eager_order() {
        use rand::{Rng, SeedableRng};
        for cap in [0u32, 1, 5, 64] {
            let mut pool = Pool::with_capacity(cap);
            // The eager pool: every slot on the free list, in index order.
            let mut eager: Vec<u32> = (0..cap).rev().collect();
            let mut held: Vec<u32> = Vec::new();
            let mut rng = rand_pcg::Pcg64::seed_from_u64(u64::from(cap));
            for step in 0..5000u32 {
                if rng.gen_bool(0.55) {
                    let got = pool.alloc(Packet::new(step));
                    assert_eq!(got, eager.pop(), "cap {cap}, step {step}");
                    held.extend(got);
                } else if !held.is_empty() {
                    let i = held.swap_remove(rng.gen_range(0..held.len()));
                    pool.free(i);
                    eager.push(i);
                }
                assert_eq!(pool.in_use() as usize, held.len());
            }
            assert!(pool.slots.len() <= cap as usize);
        }
        let mut pool = Pool::with_capacity(1 << 20);
        for _ in 0..3 {
            let i = pool.alloc(Packet::new(1)).expect("slot");
            pool.free(i);
        }
        assert_eq!(pool.slots.len(), 1, "one slot used, one written");
    }

    #[test]
    fn list_is_fifo_and_counts_bytes() {
        let mut pool = Pool::with_capacity(8);
        let mut l = List::default();
        for len in [10, 20, 30] {
            let i = pool.alloc(Packet::new(len)).expect("slot");
            l.push_back(&mut pool, i);
        }
        assert_eq!((l.len(), l.bytes()), (3, 60));
        let mut order = Vec::new();
        while let Some(i) = l.pop_front(&mut pool) {
            order.push(pool.get(i).pkt.len);
        }
        assert_eq!(order, vec![10, 20, 30]);
        assert!(l.is_empty());
        assert_eq!(l.bytes(), 0);
    }

    #[test]
    fn swap_front_two_exchanges_head_and_second() {
        for n in [2u32, 3] {
            let mut pool = Pool::with_capacity(8);
            let mut l = List::default();
            for len in 1..=n {
                let i = pool.alloc(Packet::new(len)).expect("slot");
                l.push_back(&mut pool, i);
            }
            assert!(l.swap_front_two(&mut pool));
            let mut order = Vec::new();
            while let Some(i) = l.pop_front(&mut pool) {
                order.push(pool.get(i).pkt.len);
            }
            let mut want = vec![2, 1];
            want.extend(3..=n);
            assert_eq!(order, want);
        }
    }
}
