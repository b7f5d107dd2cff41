//! The deadline queue: which pipe needs service next.
//!
//! A binary min-heap of `(time, key, seq, pipe)` entries, served in
//! **canonical order**: by time, then by the pipe's *key*, a number that
//! names the pipe the same way in every engine built from the same
//! configuration (see [`crate::Engine`]: a configured pipe's key comes
//! from its index, an instance of a dynamic pipe's from its parent's index
//! and its creation ordinal). Two pipes due at the same nanosecond are
//! therefore served in an order that depends neither on memory layout nor
//! on the order in which they were scheduled, so an engine that holds only
//! some of the pipes (a partition, `crate::engine` "Partitions") serves its
//! pipes in the order the whole engine would.
//!
//! Each pipe has at most one *live* entry; when a pipe's deadline changes
//! a new entry is pushed and the old one is left in the heap as a stale
//! entry, recognised and skipped on pop because its `seq` no longer
//! matches the pipe's (lazy deletion: O(log N) per change, no
//! decrease-key). `seq` is a counter: it only identifies entries.
//!
//! The cost per operation is O(log N) in the number of scheduled pipes, as in
//! Dummynet (dummynet-revisited §3.1.1).

use crate::time::Instant;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A scheduled service of a pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Event {
    /// When the pipe needs service.
    pub time: Instant,
    /// The pipe's key: the tie-breaker between pipes due at one instant.
    pub key: u64,
    /// Identity of the entry (stale entries are recognised by it).
    pub seq: u64,
    /// Index of the pipe.
    pub pipe: u32,
}

/// A min-heap of events ordered by `(time, key, seq)`.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<Event>>,
    next_seq: u64,
}

impl EventQueue {
    /// An empty queue with room for `cap` entries before it grows.
    pub fn with_capacity(cap: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(cap),
            next_seq: 0,
        }
    }

    /// Schedule `pipe` (whose key is `key`) at `time`; returns the entry's
    /// sequence number.
    #[inline]
    pub fn push(&mut self, time: Instant, key: u64, pipe: u32) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(Event {
            time,
            key,
            seq,
            pipe,
        }));
        seq
    }

    /// The earliest entry (possibly stale).
    #[inline]
    pub fn peek(&self) -> Option<Event> {
        self.heap.peek().map(|r| r.0)
    }

    /// Remove and return the earliest entry (possibly stale).
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        self.heap.pop().map(|r| r.0)
    }

    /// Number of entries, stale ones included.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when no entry is left.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
        q.push(Instant(5), 7, 1);
        q.push(Instant(3), 9, 2);
        q.push(Instant(5), 2, 0);
        q.push(Instant(3), 4, 9);
        let order: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time.0, e.pipe))
            .collect();
        assert_eq!(order, vec![(3, 9), (3, 2), (5, 0), (5, 1)]);
    }
}
