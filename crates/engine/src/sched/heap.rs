//! An indexed binary min-heap of flow slots (dummynet's `dn_heap` with
//! `heap_pos`): each flow is in the heap at most once, and its position is
//! kept so it can be removed from the middle in O(log N).
//!
//! Entries are ordered by `(key, slot)`, so equal keys leave in slot order:
//! ties are deterministic. Memory grows with the number of flows (on
//! [`FlowHeap::push`] of a new slot), never per packet.

use crate::packet::NIL;

#[derive(Debug, Default)]
pub(crate) struct FlowHeap {
    h: Vec<(u128, u32)>,
    /// `pos[slot]` = index in `h`, or `NIL`.
    pos: Vec<u32>,
}

impl FlowHeap {
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.h.is_empty()
    }

    #[inline]
    pub fn contains(&self, slot: u32) -> bool {
        self.pos.get(slot as usize).is_some_and(|&p| p != NIL)
    }

    /// The smallest `(key, slot)`.
    #[inline]
    pub fn peek(&self) -> Option<(u128, u32)> {
        self.h.first().copied()
    }

    /// Insert `slot` with `key`. Precondition: `slot` is not in the heap.
    pub fn push(&mut self, slot: u32, key: u128) {
        debug_assert!(!self.contains(slot));
        if self.pos.len() <= slot as usize {
            self.pos.resize(slot as usize + 1, NIL);
        }
        self.h.push((key, slot));
        let i = self.h.len() - 1;
        self.pos[slot as usize] = i as u32;
        self.up(i);
    }

    /// Remove and return the smallest entry.
    pub fn pop(&mut self) -> Option<(u128, u32)> {
        let top = self.peek()?;
        self.remove_at(0);
        Some(top)
    }

    /// Remove `slot` wherever it is; false if absent.
    pub fn remove(&mut self, slot: u32) -> bool {
        match self.pos.get(slot as usize) {
            Some(&p) if p != NIL => {
                self.remove_at(p as usize);
                true
            }
            _ => false,
        }
    }

    fn remove_at(&mut self, i: usize) {
        let last = self.h.len() - 1;
        self.swap(i, last);
        let (_, slot) = self.h.pop().expect("non-empty");
        self.pos[slot as usize] = NIL;
        if i < self.h.len() {
            self.down(i);
            self.up(i);
        }
    }

    #[inline]
    fn swap(&mut self, a: usize, b: usize) {
        self.h.swap(a, b);
        self.pos[self.h[a].1 as usize] = a as u32;
        self.pos[self.h[b].1 as usize] = b as u32;
    }

    fn up(&mut self, mut i: usize) {
        while i > 0 {
            let p = (i - 1) / 2;
            if self.h[i] >= self.h[p] {
                break;
            }
            self.swap(i, p);
            i = p;
        }
    }

    fn down(&mut self, mut i: usize) {
        let n = self.h.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let c = if l + 1 < n && self.h[l + 1] < self.h[l] {
                l + 1
            } else {
                l
            };
            if self.h[i] <= self.h[c] {
                break;
            }
            self.swap(i, c);
            i = c;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_key_then_slot_order_and_removes_from_the_middle() {
        let mut h = FlowHeap::default();
        for (slot, key) in [(0, 50), (1, 10), (2, 30), (3, 10), (4, 40)] {
            h.push(slot, key);
        }
        assert!(h.remove(2));
        assert!(!h.remove(2));
        let order: Vec<u32> = std::iter::from_fn(|| h.pop().map(|e| e.1)).collect();
        assert_eq!(order, vec![1, 3, 4, 0]);
        assert!(h.is_empty() && !h.contains(1));
    }
}
