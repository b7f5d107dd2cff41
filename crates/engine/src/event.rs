//! The deadline queue: which pipe needs service next.
//!
//! An indexed 4-ary min-heap of `(time, key, seq, pipe)` entries, served
//! in **canonical order**: by time, then by the pipe's *key*, a number that
//! names the pipe the same way in every engine built from the same
//! configuration (see [`crate::Engine`]: a configured pipe's key comes
//! from its index, an instance of a dynamic pipe's from its parent's index
//! and its creation ordinal). Two pipes due at the same nanosecond are
//! therefore served in an order that depends neither on memory layout nor
//! on the order in which they were scheduled, so an engine that holds only
//! some of the pipes (a partition, `crate::engine` "Partitions") serves its
//! pipes in the order the whole engine would.
//!
//! Each pipe has at most one entry, and the heap knows where it is
//! (`pos`): when a pipe's deadline changes its entry is moved in place
//! (decrease- or increase-key), and a pipe with no more work has its entry
//! removed. No stale entry is ever left behind in the heap to be popped
//! and skipped later, so it holds exactly its pipes with work, and serving
//! a pipe and giving it its next deadline is one sift from the root
//! ([`EventQueue::schedule`] on the entry [`EventQueue::peek`] returned)
//! instead of a pop and a push. `seq` is a counter, renewed at every
//! change of an entry: it only identifies entries and keeps the order
//! total.
//!
//! The cost per operation is O(log N) in the number of scheduled pipes, as in
//! Dummynet (dummynet-revisited §3.1.1). The heap is 4-ary (children of
//! `i` at `4i + 1 ..= 4i + 4`): half the levels of a binary heap, so a
//! sift moves an entry half as many times, and the four children sit in
//! two cache lines. Entries compare as one 128-bit number `(time, key)`,
//! then `seq`: the same total order as the tuple, with fewer branches.
//! Which entry is the minimum does not depend on the heap's shape, so the
//! pipes are served in the same order as with the binary heap.
//!
//! Beside the heap, a FIFO ring takes every entry that comes no earlier
//! in `(time, key, seq)` than the ring's last one: a busy pipe served at
//! its deadline and given the next one a fixed time later (every pipe of
//! a route at one rate and delay, whose exits fall on one grid) costs
//! an append instead of a sift. The earliest entry is the smaller of the
//! heap's root and the ring's front, so the order is the heap's alone:
//! the two hold the same entries, with the same `seq`. In the ring, a
//! pipe rescheduled or cancelled leaves a stale entry (its `seq` is no
//! longer the pipe's), dropped when it reaches the front, which is never
//! stale, or by a compaction when stale entries outnumber live ones.
//! The ring is a power-of-two array indexed through a mask (`Fifo`):
//! fewer instructions per operation than a `VecDeque`'s wrap-around
//! test, 3 % fewer per hop of a route (`cachegrind`, BENCHMARKS.md).

use crate::time::Instant;

/// A scheduled service of a pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Event {
    /// When the pipe needs service.
    pub time: Instant,
    /// The pipe's key: the tie-breaker between pipes due at one instant.
    pub key: u64,
    /// Identity of the entry: renewed at each change.
    pub seq: u64,
    /// Index of the pipe.
    pub pipe: u32,
}

impl Event {
    /// Its place in the canonical order `(time, key, seq)`, with `time`
    /// and `key` packed into one number compared at once.
    #[inline(always)]
    fn order(&self) -> (u128, u64) {
        (((self.time.0 as u128) << 64) | self.key as u128, self.seq)
    }
}

/// `pos` of a pipe with no entry.
const ABSENT: u32 = u32::MAX;

/// `pos` of a pipe whose entry is in the ring.
const IN_RING: u32 = u32::MAX - 1;

/// `ring_seq` of a pipe with no live entry in the ring (no entry has this
/// `seq`: the counter would take centuries to reach it).
const NOT_IN_RING: u64 = u64::MAX;

/// Children per node of the heap.
const ARITY: usize = 4;

/// An indexed 4-ary min-heap of events ordered by `(time, key, seq)`,
/// beside a FIFO ring of entries scheduled in that order, at most one
/// entry per pipe in the two together.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: Vec<Event>,
    /// Per pipe, where its entry is: an index in `heap`, `IN_RING`, or
    /// `ABSENT` (none).
    pos: Vec<u32>,
    /// Entries in ascending `(time, key, seq)` order, each no earlier
    /// than the one before it when it was added; an entry whose pipe has
    /// since been rescheduled or cancelled is stale and stays until it
    /// reaches the front. The front is never stale.
    ring: Fifo,
    /// Per pipe, the `seq` of its live entry in the ring, or `NOT_IN_RING`:
    /// a ring entry is live when its `seq` is its pipe's here (one load).
    ring_seq: Vec<u64>,
    /// Live entries in `ring`.
    ring_live: usize,
    next_seq: u64,
}

impl EventQueue {
    /// An empty queue with room for `cap` entries before it grows.
    pub fn with_capacity(cap: usize) -> Self {
        EventQueue {
            heap: Vec::with_capacity(cap),
            pos: Vec::with_capacity(cap),
            ring: Fifo::with_capacity(cap),
            ring_seq: Vec::with_capacity(cap),
            ring_live: 0,
            next_seq: 0,
        }
    }

    /// A new entry for `pipe` at `time` with `key`, taking the next
    /// sequence number (the tie-break of entries at one instant and key).
    #[inline(always)]
    fn next_event(&mut self, pipe: u32, time: Instant, key: u64) -> Event {
        let seq = self.next_seq;
        self.next_seq += 1;
        Event {
            time,
            key,
            seq,
            pipe,
        }
    }

    /// Schedule `pipe` (whose key is `key`) at `time`, replacing its entry
    /// if it has one; returns the entry's new sequence number.
    ///
    /// The entry joins the ring when it comes no earlier than the ring's
    /// last entry (a pipe served at its deadline and given the next one a
    /// fixed time later, as every busy pipe of a route at one rate and
    /// delay is: O(1), no sift); otherwise the heap.
    #[inline]
    pub fn schedule(&mut self, pipe: u32, time: Instant, key: u64) -> u64 {
        let e = self.next_event(pipe, time, key);
        let seq = e.seq;
        let p = pipe as usize;
        if p >= self.pos.len() {
            self.pos.resize(p + 1, ABSENT);
            self.ring_seq.resize(p + 1, NOT_IN_RING);
        }
        if self.pos[p] == IN_RING {
            self.leave_ring(p);
        }
        let in_order = self.ring.back().is_none_or(|b| e.order() >= b.order());
        match self.pos[p] {
            _ if in_order => {
                if self.pos[p] != ABSENT {
                    self.remove_at(self.pos[p] as usize);
                }
                self.ring.push_back(e);
                self.pos[p] = IN_RING;
                self.ring_seq[p] = seq;
                self.ring_live += 1;
            }
            ABSENT => {
                let i = self.heap.len();
                self.heap.push(e);
                self.sift_up(i, e);
            }
            i => {
                let i = i as usize;
                if e.order() < self.heap[i].order() {
                    self.sift_up(i, e);
                } else {
                    self.sift_down(i, e);
                }
            }
        }
        seq
    }

    /// The earliest entry, `pipe`'s, was just served: give the pipe a new
    /// entry at `next` (a new `seq`, returned), or none. The same as
    /// [`EventQueue::schedule`] (or [`EventQueue::cancel`]) on the entry
    /// [`EventQueue::peek`] returned, with the ring's common case in one
    /// pass: the served entry is the ring's front (the least entry of the
    /// ring, and the front is live), so it is popped, and the next entry
    /// goes to the back when it comes no earlier than the back.
    #[inline]
    pub fn serve(&mut self, pipe: u32, next: Option<Instant>, key: u64) -> Option<u64> {
        let p = pipe as usize;
        if self.pos.get(p) != Some(&IN_RING) {
            return match next {
                Some(t) => Some(self.schedule(pipe, t, key)),
                None => {
                    self.cancel(pipe);
                    None
                }
            };
        }
        debug_assert_eq!(self.ring.front().map(|e| e.pipe), Some(pipe));
        self.ring.pop_front();
        self.ring_live -= 1;
        self.pos[p] = ABSENT;
        self.ring_seq[p] = NOT_IN_RING;
        self.drop_stale_front();
        let e = self.next_event(pipe, next?, key);
        let seq = e.seq;
        if self.ring.back().is_none_or(|b| e.order() >= b.order()) {
            self.ring.push_back(e);
            self.pos[p] = IN_RING;
            self.ring_seq[p] = seq;
            self.ring_live += 1;
        } else {
            let i = self.heap.len();
            self.heap.push(e);
            self.sift_up(i, e);
        }
        Some(seq)
    }

    /// Remove `pipe`'s entry, if it has one.
    #[inline]
    pub fn cancel(&mut self, pipe: u32) {
        let Some(&i) = self.pos.get(pipe as usize) else {
            return;
        };
        match i {
            ABSENT => {}
            IN_RING => self.leave_ring(pipe as usize),
            i => self.remove_at(i as usize),
        }
    }

    /// The earliest entry.
    #[inline]
    pub fn peek(&self) -> Option<Event> {
        match (self.heap.first(), self.ring.front()) {
            (Some(h), Some(r)) => Some(if r.order() < h.order() { *r } else { *h }),
            (Some(h), None) => Some(*h),
            (None, r) => r.copied(),
        }
    }

    /// Remove and return the earliest entry.
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        let e = self.peek()?;
        self.cancel(e.pipe);
        Some(e)
    }

    /// Number of entries (pipes with work).
    pub fn len(&self) -> usize {
        self.heap.len() + self.ring_live
    }

    /// True when no entry is left.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.ring_live == 0
    }

    /// Pipe `p`'s entry in the ring is no longer live: drop the stale
    /// entries at the front, and compact the ring when stale entries
    /// outnumber live ones.
    #[inline]
    fn leave_ring(&mut self, p: usize) {
        self.pos[p] = ABSENT;
        self.ring_seq[p] = NOT_IN_RING;
        self.ring_live -= 1;
        self.drop_stale_front();
    }

    /// Drop the stale entries at the ring's front, and compact the ring
    /// when stale entries outnumber live ones.
    #[inline]
    fn drop_stale_front(&mut self) {
        let n = self.ring_live;
        let EventQueue { ring, ring_seq, .. } = self;
        let live = |e: &Event| ring_seq.get(e.pipe as usize) == Some(&e.seq);
        while ring.front().is_some_and(|f| !live(f)) {
            ring.pop_front();
        }
        if ring.len() > 2 * n + 64 {
            self.compact();
        }
    }

    /// Drop every stale entry of the ring (rare: kept out of line so the
    /// common path stays small).
    #[cold]
    #[inline(never)]
    fn compact(&mut self) {
        let EventQueue { ring, ring_seq, .. } = self;
        ring.retain(|e| ring_seq.get(e.pipe as usize) == Some(&e.seq));
    }

    /// Remove the entry at heap index `i`.
    fn remove_at(&mut self, i: usize) {
        let last = self.heap.len() - 1;
        self.pos[self.heap[i].pipe as usize] = ABSENT;
        if i == last {
            self.heap.pop();
            return;
        }
        let moved = self.heap[last];
        self.heap.pop();
        if moved.order() < self.heap[i].order() {
            self.sift_up(i, moved);
        } else {
            self.sift_down(i, moved);
        }
    }

    /// Place `e`, whose slot is `i`, towards the root while it is earlier
    /// than its parent, keeping `pos` in step. `e` is passed by value (the
    /// slot's content is overwritten, not read): reading back an entry
    /// just stored stalls on store forwarding.
    #[inline]
    fn sift_up(&mut self, mut i: usize, e: Event) {
        let k = e.order();
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let pe = self.heap[parent];
            if k >= pe.order() {
                break;
            }
            self.heap[i] = pe;
            self.pos[pe.pipe as usize] = i as u32;
            i = parent;
        }
        self.heap[i] = e;
        self.pos[e.pipe as usize] = i as u32;
    }

    /// Place `e`, whose slot is `i`, towards the leaves while a child is
    /// earlier, keeping `pos` in step (`e` by value, as for `sift_up`).
    #[inline]
    fn sift_down(&mut self, mut i: usize, e: Event) {
        let n = self.heap.len();
        let k = e.order();
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            let last = (first + ARITY).min(n);
            let mut c = first;
            let mut co = self.heap[first].order();
            for j in first + 1..last {
                let o = self.heap[j].order();
                if o < co {
                    c = j;
                    co = o;
                }
            }
            if co >= k {
                break;
            }
            let ce = self.heap[c];
            self.heap[i] = ce;
            self.pos[ce.pipe as usize] = i as u32;
            i = c;
        }
        self.heap[i] = e;
        self.pos[e.pipe as usize] = i as u32;
    }
}

/// The ring's FIFO: a power-of-two array indexed by free-running
/// counters (a mask, no wrap-around test), grown by doubling when full.
#[derive(Debug, Default)]
struct Fifo {
    buf: Vec<Event>,
    /// Index of the front (free-running; `& mask` in `buf`).
    head: usize,
    /// Entries held.
    len: usize,
}

impl Fifo {
    fn with_capacity(cap: usize) -> Fifo {
        let n = cap.max(1).next_power_of_two();
        Fifo {
            buf: vec![Fifo::HOLE; n],
            head: 0,
            len: 0,
        }
    }

    /// What fills an unused place.
    const HOLE: Event = Event {
        time: Instant(0),
        key: 0,
        seq: 0,
        pipe: 0,
    };

    #[inline(always)]
    fn mask(&self) -> usize {
        self.buf.len().wrapping_sub(1)
    }

    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn front(&self) -> Option<&Event> {
        if self.len == 0 {
            return None;
        }
        self.buf.get(self.head & self.mask())
    }

    #[inline(always)]
    fn back(&self) -> Option<&Event> {
        if self.len == 0 {
            return None;
        }
        self.buf
            .get(self.head.wrapping_add(self.len - 1) & self.mask())
    }

    #[inline(always)]
    fn push_back(&mut self, e: Event) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let i = self.head.wrapping_add(self.len) & self.mask();
        if let Some(slot) = self.buf.get_mut(i) {
            *slot = e;
        }
        self.len += 1;
    }

    #[inline(always)]
    fn pop_front(&mut self) {
        if self.len > 0 {
            self.head = self.head.wrapping_add(1);
            self.len -= 1;
        }
    }

    /// Double the array (or make the first), keeping the order.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let n = (self.buf.len() * 2).max(16);
        let mut buf = Vec::with_capacity(n);
        buf.extend((0..self.len).map(|k| self.buf[self.head.wrapping_add(k) & self.mask()]));
        buf.resize(n, Fifo::HOLE);
        self.buf = buf;
        self.head = 0;
    }

    /// Keep only the entries `keep` says yes to, in order.
    fn retain(&mut self, mut keep: impl FnMut(&Event) -> bool) {
        let mask = self.mask();
        let mut kept = 0;
        for k in 0..self.len {
            let e = self.buf[self.head.wrapping_add(k) & mask];
            if keep(&e) {
                self.buf[self.head.wrapping_add(kept) & mask] = e;
                kept += 1;
            }
        }
        self.len = kept;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves ties at one instant are broken by key, whatever the
    /// order of scheduling.
    #[test]
    fn pops_in_time_then_key_order() {
        let mut q = EventQueue::default();
        q.schedule(1, Instant(5), 7);
        q.schedule(2, Instant(3), 9);
        q.schedule(0, Instant(5), 2);
        q.schedule(9, Instant(3), 4);
        let order: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time.0, e.pipe))
            .collect();
        assert_eq!(order, vec![(3, 9), (3, 2), (5, 0), (5, 1)]);
    }

    /// A pass proves the ring's FIFO keeps its order across wrap-around,
    /// growth with its front not at the start, and `retain`.
    #[test]
    fn fifo_keeps_order_through_wrap_growth_and_retain() {
        let ev = |n: u64| Event {
            time: Instant(n),
            key: 0,
            seq: n,
            pipe: n as u32,
        };
        let mut f = Fifo::with_capacity(4);
        let mut want = std::collections::VecDeque::new();
        for n in 0..200u64 {
            f.push_back(ev(n));
            want.push_back(n);
            if n % 3 == 0 {
                f.pop_front();
                want.pop_front();
            }
            assert_eq!(f.len(), want.len());
            assert_eq!(f.front().map(|e| e.seq), want.front().copied());
            assert_eq!(f.back().map(|e| e.seq), want.back().copied());
        }
        f.retain(|e| e.seq % 2 == 0);
        want.retain(|n| n % 2 == 0);
        let mut got = Vec::new();
        while let Some(e) = f.front().copied() {
            got.push(e.seq);
            f.pop_front();
        }
        assert_eq!(got, Vec::from(want));
        assert!(f.front().is_none() && f.back().is_none());
        f.pop_front();
        assert_eq!(f.len(), 0);
    }

    /// A pass proves a moved or cancelled entry leaves nothing behind: each
    /// pipe pops once, at its last deadline, and a cancelled pipe never.
    #[test]
    fn moves_and_cancels_in_place() {
        let mut q = EventQueue::default();
        for p in 0..8u32 {
            q.schedule(p, Instant(100 + p as u64), p as u64);
        }
        q.schedule(5, Instant(1), 5); // earlier
        q.schedule(0, Instant(500), 0); // later
        q.cancel(3);
        q.cancel(3);
        q.cancel(42); // never scheduled
        assert_eq!(q.len(), 7);
        let order: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time.0, e.pipe))
            .collect();
        assert_eq!(
            order,
            vec![
                (1, 5),
                (101, 1),
                (102, 2),
                (104, 4),
                (106, 6),
                (107, 7),
                (500, 0)
            ]
        );
    }

    /// A pass proves the indexed heap serves any sequence of schedules and
    /// cancels in the order of a reference that keeps only each pipe's
    /// last entry: the same `(time, key, seq)` order as the lazy heap it
    /// replaced, whose stale entries were skipped.
    #[test]
    fn matches_a_sorted_reference_under_random_changes() {
        check_against_reference(|rnd, _| rnd(1000));
    }

    /// A pass proves the same when most deadlines come in ascending order
    /// (the ring takes them) and some do not (the heap takes those, and
    /// entries move between the two): the order is the reference's.
    #[test]
    fn matches_a_sorted_reference_with_the_ring_and_the_heap_mixed() {
        check_against_reference(|rnd, step| {
            let base = step * 3;
            match rnd(8) {
                0 => base.saturating_sub(rnd(400)),
                1 => base,
                _ => base + rnd(50),
            }
        });
        // Ties on time and key in order of scheduling, all in the ring.
        let mut q = EventQueue::default();
        for round in 0..50u64 {
            for p in 0..8u32 {
                q.schedule(p, Instant(round * 10), p as u64);
            }
            for p in 0..8u32 {
                let e = q.peek().map(|e| (e.time.0, e.pipe));
                assert_eq!(e, Some((round * 10, p)));
                q.schedule(p, Instant(round * 10 + 10), p as u64);
            }
        }
        assert_eq!(q.len(), 8);
        assert!(q.heap.is_empty());
        assert!(q.ring.len() <= 2 * 8 + 64);
    }

    /// A pass proves stale entries behind a live front are compacted away
    /// (the ring stays within `2 × live + 64`) and the order survives it:
    /// every moved pipe pops at its new time, the front one last.
    #[test]
    fn compacts_stale_entries_behind_a_live_front() {
        let mut q = EventQueue::default();
        q.schedule(0, Instant(1_000_000), 0);
        for p in 1..=300u32 {
            q.schedule(p, Instant(2_000_000 + p as u64), p as u64);
        }
        // Each moves into the heap (earlier than the ring's last entry),
        // leaving a stale entry behind pipe 0's live one.
        for p in 1..=300u32 {
            q.schedule(p, Instant(p as u64), p as u64);
            assert!(q.ring.len() <= 2 * q.ring_live + 64, "after pipe {p}");
        }
        assert_eq!(q.ring_live, 1);
        assert!(q.ring.len() < 100, "ring of {}", q.ring.len());
        let order: Vec<u32> = std::iter::from_fn(|| q.pop()).map(|e| e.pipe).collect();
        let want: Vec<u32> = (1..=300).chain([0]).collect();
        assert_eq!(order, want);
    }

    /// Random schedules (at `time(rnd, step)`), cancels and pops against
    /// a reference that keeps each pipe's last entry.
    fn check_against_reference(time: impl Fn(&mut dyn FnMut(u64) -> u64, u64) -> u64) {
        use std::collections::BTreeMap;
        let mut q = EventQueue::default();
        let mut live: BTreeMap<u32, (Instant, u64, u64)> = BTreeMap::new();
        // The reference's earliest entry: (time, key, seq, pipe).
        let earliest = |live: &BTreeMap<u32, (Instant, u64, u64)>| {
            live.iter()
                .min_by_key(|(_, &o)| o)
                .map(|(&p, &(t, k, s))| (t, k, s, p))
        };
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for step in 0..20_000u64 {
            let pipe = rnd(64) as u32;
            // Keys collide on purpose: ties then fall to seq.
            let key = (pipe % 16) as u64;
            match rnd(12) {
                0..=5 => {
                    let t = Instant(time(&mut rnd, step));
                    let seq = q.schedule(pipe, t, key);
                    live.insert(pipe, (t, key, seq));
                }
                6 => {
                    q.cancel(pipe);
                    live.remove(&pipe);
                }
                10 | 11 => {
                    // Serve the earliest entry and give its pipe its next
                    // deadline (or none) in one call, as the engine does.
                    let want = earliest(&live);
                    let got = q.peek().map(|e| (e.time, e.key, e.seq, e.pipe));
                    assert_eq!(got, want);
                    if let Some((_, k, _, p)) = want {
                        live.remove(&p);
                        let next = (rnd(4) != 0).then(|| Instant(time(&mut rnd, step)));
                        let seq = q.serve(p, next, k);
                        assert_eq!(seq.is_some(), next.is_some());
                        if let (Some(t), Some(seq)) = (next, seq) {
                            live.insert(p, (t, k, seq));
                        }
                    }
                }
                _ => {
                    let want = earliest(&live);
                    let got = q.pop().map(|e| (e.time, e.key, e.seq, e.pipe));
                    assert_eq!(got, want);
                    if let Some((_, _, _, p)) = want {
                        live.remove(&p);
                    }
                }
            }
            assert_eq!(q.len(), live.len());
        }
    }
}
