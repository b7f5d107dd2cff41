//! Quick Fair Queueing (F. Checconi, L. Rizzo, P. Valente, "QFQ: Efficient
//! Packet Scheduling with Tight Guarantees", IEEE/ACM ToN 21(3), 2013), a
//! faithful port of the original algorithm as in FreeBSD `dn_sched_qfq.c`
//! (and Linux `sch_qfq.c` before QFQ+'s aggregates).
//!
//! QFQ approximates WF2Q+ in O(1). Flows keep exact virtual start and finish
//! times `S`, `F` (as in [`crate::sched::wf2q`]), but the scheduler only sorts
//! *groups*: flow `i` with slot size `σ_i = Lmax/w_i` belongs to group
//! `⌈log2 σ_i⌉`, and a group's timestamps are its flows' `S` rounded down to
//! a multiple of `2^slot_shift` (with `F = S + 2σ`). Inside a group, flows
//! sit in a ring of 32 buckets by rounded `S` (bucket sort, found by `ffs`
//! on a bitmap). Groups are in one of four sets, each a bitmap: eligible
//! ready (ER), ineligible ready (IR), eligible blocked (EB), ineligible
//! blocked (IB). A group is eligible if `S ≤ V`, and blocked if an eligible
//! group of higher index would finish earlier. The next packet comes from
//! the lowest-index ER group (smallest `F` among ready groups, by the
//! paper's Theorem 1), from the front bucket of that group. All operations
//! are constant-time bitmap work: `ffs`, `fls`, shifts.
//!
//! ## Choices
//!
//! * Timestamps are `u128` with 40 fraction bits (`ONE = 2^40` per byte per
//!   unit weight): `inv_w = ⌊2^40/w⌋` is exact to 2^-24 relative for `w ≤
//!   2^16`, and with a 88-bit integer part nothing wraps, so the original's
//!   wrap-around comparisons (`qfq_gt`) become plain `>`.
//! * `Lmax`, the largest packet of a flow, is the scheduler's `quantum`
//!   (default 1514) for every flow, instead of dummynet's per-flowset
//!   `maxlen` (default 1500, at most 2000). Longer packets are refused with
//!   `SchedDrop::TooLong`: QFQ's slot bounds assume `L ≤ Lmax`, and
//!   regrouping a backlogged flow (what Linux's QFQ+ does) is left out.
//!   `Lmax` may go up to 2^16 (`type qfq quantum 9018` for jumbo frames), at
//!   the price of coarser groups: QFQ's service lag is a few `Lmax`, so a
//!   needlessly large `Lmax` loosens short-term fairness (long-term shares
//!   stay exact because `S` and `F` are).
//! * `V` advances by `L/W` with `W` the sum of the weights of all flow
//!   queues present (Linux's `iwsum`), rather than the original's constant
//!   `1/QFQ_MAX_WSUM`; when no group is eligible `V` jumps to the smallest
//!   group start, as in the original.
//! * As in Linux since 2013, a bucket offset is clamped to 30 so a flow can
//!   never be lost off the ring even if the slot bound were exceeded.

use crate::sched::{Dequeue, FlowSlot, FlowSpec, Flows, HeadFilter, Insert, SchedDrop, Scheduler};
use crate::config::ConfigError;
use crate::packet::{Pool, NIL};
use crate::time::Instant;

const FRAC_BITS: u32 = 40;
const ONE: u128 = 1 << FRAC_BITS;
/// log2 of the largest packet accounted for.
const MTU_SHIFT: u32 = 16;
/// The largest `Lmax` (packet length) QFQ supports, bytes.
pub const QFQ_MAX_LEN: u32 = 1 << MTU_SHIFT;
/// The registry's check of `type qfq quantum Q`: `Q` is the largest
/// packet, at most [`QFQ_MAX_LEN`].
pub(crate) fn check(quantum: u32) -> Result<(), ConfigError> {
    if quantum > QFQ_MAX_LEN {
        return Err(ConfigError {
            param: "quantum",
            reason: format!("qfq's largest packet {quantum} is more than {QFQ_MAX_LEN}"),
        });
    }
    Ok(())
}

/// Groups are `0..=MAX_INDEX`.
const MAX_INDEX: usize = 19;
/// Buckets per group.
const MAX_SLOTS: u32 = 32;
const MIN_SLOT_SHIFT: u32 = FRAC_BITS + MTU_SHIFT - MAX_INDEX as u32;

const ER: usize = 0;
const IR: usize = 1;
const EB: usize = 2;
const IB: usize = 3;

#[derive(Debug)]
pub(crate) struct QfqFlow {
    s: u128,
    f: u128,
    /// Next flow in the same bucket.
    next: u32,
    grp: u8,
    inv_w: u128,
    /// The weight changed while the flow was backlogged: its `inv_w` and
    /// group follow the new one when its head is next served.
    regroup: bool,
}

#[derive(Clone, Copy, Debug)]
struct Group {
    s: u128,
    f: u128,
    slot_shift: u32,
    index: u32,
    /// Ring position of bucket 0.
    front: u32,
    /// Bit `k`: bucket `front + k` is non-empty.
    full_slots: u32,
    /// Head flow of each bucket, `NIL` if empty.
    slots: [u32; MAX_SLOTS as usize],
}

/// The QFQ scheduler.
#[derive(Debug)]
pub(crate) struct Qfq {
    flows: Flows<QfqFlow>,
    v: u128,
    wsum: u64,
    iwsum: u128,
    bitmaps: [u32; 4],
    /// Boxed: 20 groups of 32 buckets would make `Sched` 4 KB.
    groups: Box<[Group; MAX_INDEX + 1]>,
    /// Largest packet accepted, bytes (`≤ QFQ_MAX_LEN`).
    lmax: u32,
}

#[inline]
fn round_down(ts: u128, shift: u32) -> u128 {
    ts & !((1u128 << shift) - 1)
}

#[inline]
fn mask_from(bitmap: u32, from: u32) -> u32 {
    if from >= 32 {
        0
    } else {
        bitmap & !((1u32 << from) - 1)
    }
}

/// Group index of a flow: `⌈log2(Lmax/w)⌉`, scaled (`qfq_calc_index`).
fn calc_index(inv_w: u128, lmax: u32) -> u8 {
    let slot_size = (lmax as u128) * inv_w;
    let size_map = slot_size >> MIN_SLOT_SHIFT;
    if size_map == 0 {
        return 0;
    }
    let mut index = (127 - size_map.leading_zeros()) as i64 + 1;
    if slot_size == 1u128 << (index as u32 + MIN_SLOT_SHIFT - 1) {
        index -= 1;
    }
    index.clamp(0, MAX_INDEX as i64) as u8
}

impl Qfq {
    /// QFQ for packets of at most `lmax` bytes (clamped to `1..=2^16`).
    pub fn new(lmax: u32) -> Qfq {
        let mut groups = [Group {
            s: 0,
            f: 0,
            slot_shift: 0,
            index: 0,
            front: 0,
            full_slots: 0,
            slots: [NIL; MAX_SLOTS as usize],
        }; MAX_INDEX + 1];
        for (i, g) in groups.iter_mut().enumerate() {
            g.index = i as u32;
            g.slot_shift = MIN_SLOT_SHIFT + i as u32;
        }
        Qfq {
            flows: Flows::default(),
            v: 0,
            wsum: 0,
            iwsum: 0,
            bitmaps: [0; 4],
            groups: Box::new(groups),
            lmax: lmax.clamp(1, QFQ_MAX_LEN),
        }
    }

    fn set_wsum(&mut self, wsum: u64) {
        self.wsum = wsum;
        self.iwsum = if wsum > 0 { ONE / wsum as u128 } else { 0 };
    }

    #[inline]
    fn ffs(bitmap: u32) -> usize {
        bitmap.trailing_zeros() as usize
    }

    /// ER/IR/EB/IB for group `g` (`qfq_calc_state`).
    fn calc_state(&self, g: usize) -> usize {
        let grp = &self.groups[g];
        let mut state = (grp.s > self.v) as usize;
        let mask = mask_from(self.bitmaps[ER], grp.index);
        if mask != 0 {
            let next = &self.groups[Self::ffs(mask)];
            if grp.f > next.f {
                state |= EB;
            }
        }
        state
    }

    #[inline]
    fn move_groups(&mut self, mask: u32, src: usize, dst: usize) {
        self.bitmaps[dst] |= self.bitmaps[src] & mask;
        self.bitmaps[src] &= !mask;
    }

    fn unblock_groups(&mut self, index: u32, old_f: u128) {
        let mask = mask_from(self.bitmaps[ER], index + 1);
        if mask != 0 {
            let next = &self.groups[Self::ffs(mask)];
            if next.f <= old_f {
                return;
            }
        }
        let mask = (1u32 << index) - 1;
        self.move_groups(mask, EB, ER);
        self.move_groups(mask, IB, IR);
    }

    /// Groups whose slot boundary `V` crossed become eligible.
    fn make_eligible(&mut self, old_v: u128) {
        let vslot = self.v >> MIN_SLOT_SHIFT;
        let old_vslot = old_v >> MIN_SLOT_SHIFT;
        if vslot != old_vslot {
            let h = 127 - (vslot ^ old_vslot).leading_zeros();
            let mask = if h >= 31 { u32::MAX } else { (2u32 << h) - 1 };
            self.move_groups(mask, IR, ER);
            self.move_groups(mask, IB, EB);
        }
    }

    fn update_eligible(&mut self, old_v: u128) {
        let ineligible = self.bitmaps[IR] | self.bitmaps[IB];
        if ineligible != 0 {
            if self.bitmaps[ER] == 0 {
                let s = self.groups[Self::ffs(ineligible)].s;
                if s > self.v {
                    self.v = s;
                }
            }
            self.make_eligible(old_v);
        }
    }

    fn slot_insert(&mut self, g: usize, slot: u32, rounded_s: u128) {
        let grp = &mut self.groups[g];
        let off = ((rounded_s - grp.s) >> grp.slot_shift).min((MAX_SLOTS - 2) as u128) as u32;
        let i = ((grp.front + off) % MAX_SLOTS) as usize;
        let head = grp.slots[i];
        grp.slots[i] = slot;
        grp.full_slots |= 1 << off;
        self.flows.get_mut(slot).st.next = head;
    }

    fn front_slot_remove(&mut self, g: usize) {
        let grp = &mut self.groups[g];
        let h = grp.slots[grp.front as usize];
        let next = self.flows.get(h).st.next;
        grp.slots[grp.front as usize] = next;
        if next == NIL {
            grp.full_slots &= !1;
        }
    }

    /// The first flow of group `g`, moving `front` to its bucket.
    fn slot_scan(&mut self, g: usize) -> Option<u32> {
        let grp = &mut self.groups[g];
        if grp.full_slots == 0 {
            return None;
        }
        let i = grp.full_slots.trailing_zeros();
        if i > 0 {
            grp.front = (grp.front + i) % MAX_SLOTS;
            grp.full_slots >>= i;
        }
        Some(grp.slots[grp.front as usize])
    }

    /// Make room at the front when the group's start decreases.
    fn slot_rotate(&mut self, g: usize, rounded_s: u128) {
        let grp = &mut self.groups[g];
        let i = ((grp.s - rounded_s) >> grp.slot_shift) as u32;
        debug_assert!(i < MAX_SLOTS, "QFQ slot rotation beyond the ring");
        grp.full_slots = grp.full_slots.checked_shl(i).unwrap_or(0);
        grp.front = (grp.front + MAX_SLOTS - i % MAX_SLOTS) % MAX_SLOTS;
    }

    /// After serving flow `slot` of group `g`: new `S`, `F`, and bucket.
    /// True if the group's front changed.
    fn update_class(&mut self, pool: &Pool, g: usize, slot: u32) -> bool {
        let head = self.flows.head_len(pool, slot);
        let st = &mut self.flows.get_mut(slot).st;
        st.s = st.f;
        match head {
            None => {
                self.front_slot_remove(g);
            }
            Some(len) => {
                st.f = st.s + len as u128 * st.inv_w;
                let rounded_s = round_down(st.s, self.groups[g].slot_shift);
                if rounded_s == self.groups[g].s {
                    return false;
                }
                self.front_slot_remove(g);
                self.slot_insert(g, slot, rounded_s);
            }
        }
        true
    }

    /// Flow `slot` becomes backlogged with a head of `len` bytes: its start
    /// and finish, and its place in its group (the second half of
    /// `qfq_enqueue`).
    fn activate(&mut self, slot: u32, len: u32) {
        self.update_start(slot);
        let st = &mut self.flows.get_mut(slot).st;
        st.f = st.s + len as u128 * st.inv_w;
        let (s, g) = (st.s, st.grp as usize);
        let shift = self.groups[g].slot_shift;
        let rounded_s = round_down(s, shift);
        let bit = 1u32 << g;
        let update = if self.groups[g].full_slots != 0 {
            if self.groups[g].s > s {
                // The group's start decreases: rotate the ring; the group
                // was surely ineligible.
                self.slot_rotate(g, rounded_s);
                self.bitmaps[IR] &= !bit;
                self.bitmaps[IB] &= !bit;
                true
            } else {
                false
            }
        } else {
            if self.bitmaps[ER] == 0 && rounded_s > self.v {
                self.v = rounded_s;
            }
            true
        };
        if update {
            let grp = &mut self.groups[g];
            grp.s = rounded_s;
            grp.f = rounded_s + (2u128 << shift);
            let state = self.calc_state(g);
            self.bitmaps[state] |= bit;
        }
        self.slot_insert(g, slot, rounded_s);
    }

    /// Bring flow `slot`'s `inv_w` and group to its weight.
    fn take_weight(&mut self, slot: u32) {
        let lmax = self.lmax;
        let f = self.flows.get_mut(slot);
        let inv_w = ONE / f.spec.weight() as u128;
        f.st.inv_w = inv_w;
        f.st.grp = calc_index(inv_w, lmax);
        f.st.regroup = false;
    }

    /// Start time of a flow that becomes backlogged (`qfq_update_start`).
    fn update_start(&mut self, slot: u32) {
        let (f, g) = {
            let st = &self.flows.get(slot).st;
            (st.f, st.grp as usize)
        };
        let shift = self.groups[g].slot_shift;
        let rounded_f = round_down(f, shift);
        let limit = round_down(self.v, shift) + (1u128 << shift);
        let s = if f <= self.v || rounded_f > limit {
            // Stale timestamp: restart at V, unless that would put the flow
            // ahead of an eligible group that blocks ours.
            let mask = mask_from(self.bitmaps[ER], g as u32);
            match mask {
                0 => self.v,
                m => {
                    let next_f = self.groups[Self::ffs(m)].f;
                    if rounded_f > next_f {
                        next_f
                    } else {
                        self.v
                    }
                }
            }
        } else {
            f
        };
        self.flows.get_mut(slot).st.s = s;
    }
}

impl Scheduler for Qfq {
    fn add_flow(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        let inv_w = ONE / spec.weight() as u128;
        let st = QfqFlow {
            s: 0,
            f: 0,
            next: NIL,
            grp: calc_index(inv_w, self.lmax),
            inv_w,
            regroup: false,
        };
        match self.flows.insert(flow, spec, st) {
            Insert::New => {
                self.set_wsum(self.wsum + spec.weight() as u64);
                true
            }
            Insert::Replaced(old) => {
                self.set_wsum(self.wsum - old.spec.weight() as u64 + spec.weight() as u64);
                true
            }
            Insert::Busy => false,
        }
    }

    /// The weight sum takes the new weight at once; an idle flow moves to
    /// its new group at once, a backlogged one when its head is next served
    /// (it leaves its group as if it had emptied and comes back with the
    /// new weight, as an idle flow becoming backlogged does).
    fn reweight(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        let Some(old) = self.flows.reshare(flow, spec) else {
            return false;
        };
        self.set_wsum(self.wsum - old.weight() as u64 + spec.weight() as u64);
        if self.flows.get(flow.0).q.is_empty() {
            self.take_weight(flow.0);
        } else {
            self.flows.get_mut(flow.0).st.regroup = true;
        }
        true
    }

    fn enqueue(
        &mut self,
        pool: &mut Pool,
        flow: FlowSlot,
        pkt: u32,
        now: Instant,
    ) -> Result<(), SchedDrop> {
        let len = pool.get(pkt).pkt.len;
        if len > self.lmax {
            return Err(SchedDrop::TooLong);
        }
        if !self.flows.admit(pool, flow, pkt, now)? {
            return Ok(());
        }
        self.activate(flow.0, len);
        Ok(())
    }


    fn dequeue_with<H: HeadFilter>(
        &mut self,
        pool: &mut Pool,
        _now: Instant,
        head: &mut H,
    ) -> Dequeue {
        if self.bitmaps[ER] == 0 {
            return Dequeue::Empty;
        }
        let g = Self::ffs(self.bitmaps[ER]);
        let grp = &self.groups[g];
        let slot = grp.slots[grp.front as usize];
        let i = self
            .flows
            .pop_with(pool, slot, head)
            .expect("front flow is backlogged");
        let old_v = self.v;
        self.v += pool.get(i).pkt.len as u128 * self.iwsum;
        let regroup = self.flows.get(slot).st.regroup;
        let next = self.flows.head_len(pool, slot);
        let changed = match next {
            Some(_) if regroup => {
                // The flow leaves its group as if it had emptied, and comes
                // back below with its new weight.
                let st = &mut self.flows.get_mut(slot).st;
                st.s = st.f;
                self.front_slot_remove(g);
                true
            }
            _ => self.update_class(pool, g, slot),
        };
        if changed {
            let old_f = self.groups[g].f;
            let bit = 1u32 << g;
            let mut unblock = true;
            match self.slot_scan(g) {
                None => self.bitmaps[ER] &= !bit,
                Some(first) => {
                    let shift = self.groups[g].slot_shift;
                    let rounded_s = round_down(self.flows.get(first).st.s, shift);
                    if self.groups[g].s == rounded_s {
                        unblock = false;
                    } else {
                        let grp = &mut self.groups[g];
                        grp.s = rounded_s;
                        grp.f = rounded_s + (2u128 << shift);
                        self.bitmaps[ER] &= !bit;
                        let state = self.calc_state(g);
                        self.bitmaps[state] |= bit;
                    }
                }
            }
            if unblock {
                self.unblock_groups(g as u32, old_f);
            }
        }
        self.update_eligible(old_v);
        if regroup {
            self.take_weight(slot);
            if let Some(len) = next {
                self.activate(slot, len);
            }
        }
        Dequeue::Packet(i)
    }

    fn pop_dropped(&mut self, _pool: &mut Pool) -> Option<u32> {
        None
    }

    fn remove_idle(&mut self, flow: FlowSlot) -> bool {
        match self.flows.remove_idle(flow) {
            Some(old) => {
                self.set_wsum(self.wsum - old.spec.weight() as u64);
                true
            }
            None => false,
        }
    }

    fn backlog(&self) -> (u32, u64) {
        self.flows.backlog()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_index_is_ceil_log2_of_lmax_over_weight() {
        // σ = 2^16/w bytes per unit weight; group i has slots of
        // 2^(MIN_SLOT_SHIFT + i) = 2^(37 + i) units, i.e. 2^(i - 3) bytes.
        assert_eq!(calc_index(ONE, 1 << 16), 19);
        assert_eq!(calc_index(ONE / 2, 1 << 16), 18);
        assert_eq!(calc_index(ONE / 3, 1 << 16), 18); // 2^16/3 rounds up to 2^15
        assert_eq!(calc_index(ONE / (1 << 16), 1 << 16), 3);
        // 1514 bytes at weight 1 need slots of 2048 bytes: 2^(i-3) = 2^11.
        assert_eq!(calc_index(ONE, 1514), 14);
        assert_eq!(calc_index(ONE / (1 << 16), 1514), 0);
    }
}
