//! A bounded, lock-free single-producer/single-consumer ring: how two
//! workers hand each other packet descriptors (and buffers back) without
//! a lock and without ever blocking.
//!
//! The classic design (Lamport's ring, as in DPDK's `rte_ring` in its
//! single-producer/single-consumer mode and in the `rtrb` crate): a
//! power-of-two array of slots, a `tail` only the producer writes and a
//! `head` only the consumer writes, each on a cache line of its own. The
//! producer publishes a slot by storing `tail` with `Release` after
//! writing it; the consumer reads `tail` with `Acquire` before reading
//! the slot, and gives it back by storing `head` with `Release` after
//! moving the value out. Each side keeps a cached copy of the other's
//! index and reads the shared one only when the cache says full or empty,
//! so a burst costs one cross-core cache miss, not one per item.
//!
//! [`Producer::push`] on a full ring returns the value (the caller drops
//! the packet and counts it: a worker never waits for another);
//! [`Consumer::pop`] on an empty ring returns `None`. Items are handed
//! over in the order pushed, which is what keeps a flow in order across
//! a hand-off. Values left in the ring when both ends are gone are
//! dropped with it.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// An index on a cache line of its own (no false sharing between the
/// producer's and the consumer's index).
#[repr(align(128))]
struct Padded(AtomicUsize);

struct Ring<T> {
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
    mask: usize,
    /// Next slot the consumer reads (written by the consumer only).
    head: Padded,
    /// Next slot the producer writes (written by the producer only).
    tail: Padded,
}

// SAFETY: a slot is accessed by one side at a time: the producer writes
// slots in `tail..head + capacity` (not yet published), the consumer
// reads slots in `head..tail` (published); the indexes move with
// Release/Acquire ordering, so a value written by one thread is seen
// whole by the other. `T: Send` because values cross threads.
unsafe impl<T: Send> Sync for Ring<T> {}
// SAFETY: as above; the ring owns its values.
unsafe impl<T: Send> Send for Ring<T> {}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        // Both ends are gone (this is the last `Arc`): drop what is left.
        let tail = *self.tail.0.get_mut();
        let mut head = *self.head.0.get_mut();
        while head != tail {
            let slot = &mut self.slots[head & self.mask];
            // SAFETY: slots in `head..tail` hold values pushed and not
            // popped; each is dropped once, and no other access exists
            // (`&mut self`).
            unsafe { slot.get_mut().assume_init_drop() };
            head = head.wrapping_add(1);
        }
    }
}

/// The producing end of a ring (one thread at a time).
pub struct Producer<T> {
    ring: Arc<Ring<T>>,
    tail: usize,
    /// The consumer's head as last read.
    head_seen: usize,
}

/// The consuming end of a ring (one thread at a time).
pub struct Consumer<T> {
    ring: Arc<Ring<T>>,
    head: usize,
    /// The producer's tail as last read.
    tail_seen: usize,
}

/// A ring holding at least `capacity` items (rounded up to a power of
/// two, at least 2), as its two ends.
pub fn ring<T: Send>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    let cap = capacity.max(2).next_power_of_two();
    let slots: Box<[UnsafeCell<MaybeUninit<T>>]> = (0..cap)
        .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
        .collect();
    let ring = Arc::new(Ring {
        slots,
        mask: cap - 1,
        head: Padded(AtomicUsize::new(0)),
        tail: Padded(AtomicUsize::new(0)),
    });
    (
        Producer {
            ring: ring.clone(),
            tail: 0,
            head_seen: 0,
        },
        Consumer {
            ring,
            head: 0,
            tail_seen: 0,
        },
    )
}

impl<T: Send> Producer<T> {
    /// Items the ring holds at most.
    pub fn capacity(&self) -> usize {
        self.ring.mask + 1
    }

    /// Add `v` at the end; `Err(v)` if the ring is full (never waits).
    pub fn push(&mut self, v: T) -> Result<(), T> {
        let cap = self.capacity();
        if self.tail.wrapping_sub(self.head_seen) >= cap {
            self.head_seen = self.ring.head.0.load(Ordering::Acquire);
            if self.tail.wrapping_sub(self.head_seen) >= cap {
                return Err(v);
            }
        }
        let slot = &self.ring.slots[self.tail & self.ring.mask];
        // SAFETY: the slot at `tail` is not published (`tail` not yet
        // stored) and was given back by the consumer (`tail - head <
        // capacity`, with `head` read with Acquire after the consumer
        // moved its value out): only this producer accesses it.
        unsafe { (*slot.get()).write(v) };
        self.tail = self.tail.wrapping_add(1);
        self.ring.tail.0.store(self.tail, Ordering::Release);
        Ok(())
    }

    /// Items waiting in the ring (a snapshot).
    pub fn len(&self) -> usize {
        self.tail
            .wrapping_sub(self.ring.head.0.load(Ordering::Acquire))
    }

    /// Whether the ring is empty (a snapshot).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: Send> Consumer<T> {
    /// Take the oldest item; `None` if the ring is empty.
    pub fn pop(&mut self) -> Option<T> {
        if self.head == self.tail_seen {
            self.tail_seen = self.ring.tail.0.load(Ordering::Acquire);
            if self.head == self.tail_seen {
                return None;
            }
        }
        let slot = &self.ring.slots[self.head & self.ring.mask];
        // SAFETY: `head < tail` with `tail` read with Acquire after the
        // producer wrote the slot: it holds an initialised value only
        // this consumer reads, once (the head moves past it below).
        let v = unsafe { (*slot.get()).assume_init_read() };
        self.head = self.head.wrapping_add(1);
        self.ring.head.0.store(self.head, Ordering::Release);
        Some(v)
    }

    /// Whether an item is waiting (reads the producer's index).
    pub fn is_empty(&self) -> bool {
        self.head == self.ring.tail.0.load(Ordering::Acquire)
    }

    /// Items waiting (a snapshot).
    pub fn len(&self) -> usize {
        self.ring
            .tail
            .0
            .load(Ordering::Acquire)
            .wrapping_sub(self.head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves the ring keeps order, refuses when full without
    /// waiting, and wraps around.
    #[test]
    fn order_capacity_and_wrap_around() {
        let (mut p, mut c) = ring::<u32>(3);
        assert_eq!(p.capacity(), 4);
        for i in 0..4 {
            assert!(p.push(i).is_ok());
        }
        assert_eq!(p.push(9), Err(9));
        assert_eq!(c.len(), 4);
        for round in 0..10u32 {
            assert_eq!(c.pop(), Some(round));
            assert!(p.push(round + 4).is_ok());
        }
        let rest: Vec<u32> = std::iter::from_fn(|| c.pop()).collect();
        assert_eq!(rest, vec![10, 11, 12, 13]);
        assert!(c.is_empty());
    }

    /// A pass proves values left in the ring are dropped exactly once.
    #[test]
    fn values_left_are_dropped_with_the_ring() {
        let token = Arc::new(());
        let (mut p, mut c) = ring::<Arc<()>>(8);
        for _ in 0..5 {
            assert!(p.push(token.clone()).is_ok());
        }
        drop(c.pop());
        assert_eq!(Arc::strong_count(&token), 5);
        drop(p);
        drop(c);
        assert_eq!(Arc::strong_count(&token), 1);
    }

    /// A pass proves two threads hand over a million items in order with
    /// none lost or duplicated, the producer retrying when full.
    #[test]
    fn two_threads_keep_order() {
        const N: u64 = 1_000_000;
        let (mut p, mut c) = ring::<u64>(256);
        let t = std::thread::spawn(move || {
            let mut i = 0;
            while i < N {
                if p.push(i).is_ok() {
                    i += 1;
                } else {
                    std::hint::spin_loop();
                }
            }
        });
        let mut next = 0;
        while next < N {
            if let Some(v) = c.pop() {
                assert_eq!(v, next);
                next += 1;
            }
        }
        t.join().expect("producer");
        assert!(c.pop().is_none());
    }
}
