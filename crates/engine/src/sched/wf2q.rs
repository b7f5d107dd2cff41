//! WF2Q+ (J. C. R. Bennett and H. Zhang, "Hierarchical Packet Fair Queueing
//! Algorithms", SIGCOMM '96 / ToN 1997; WF2Q in "WF2Q: Worst-case Fair
//! Weighted Fair Queueing", INFOCOM '96), as in FreeBSD `dn_sched_wf2q.c`.
//!
//! Each backlogged flow `i` of weight `w_i` has a virtual start `S_i` and
//! finish `F_i = S_i + L/w_i` for its head packet of `L` bytes. The system
//! virtual time `V` advances by `L/W` for each packet sent, `W` being the sum
//! of the weights of the flows still "busy" in the fluid reference (see
//! below), and jumps to `min S_i` when no flow is eligible. A flow is
//! *eligible* when `S_i ≤ V`; among eligible flows the one with the smallest
//! `F_i` is served. Serving only eligible flows is what makes WF2Q+
//! worst-case fair: a flow never runs ahead of its fluid (GPS) service by
//! more than one packet, and a packet leaves no later than its GPS finish
//! plus `Lmax/R` (the bound the tests check while the backlogged set is
//! fixed).
//!
//! Data structures, as in dummynet: a heap of eligible flows keyed on `F`,
//! a heap of backlogged but not yet eligible flows keyed on `S`, and a heap
//! of idle flows keyed on `F`. An idle flow keeps its weight in `W` until
//! `V` passes its `F` (it would still be receiving service in the fluid
//! system); if it becomes backlogged before that, it restarts at
//! `S = max(F, V)` and so cannot gain by going idle. O(log N) per packet.
//! Unlike dummynet, which drains one expired idle flow per dequeue, every
//! expired idle flow is drained at once (amortized O(log N), each idle
//! period is drained once), so `W` follows the fluid system more closely.
//!
//! ## Fixed point
//!
//! Timestamps are `u128` in units of 2^-64 byte per unit weight:
//! `F = S + L·⌊2^64/w⌋`, `V += L·⌊2^64/W⌋`. Precomputing the inverses trades
//! a division for a multiplication (dummynet's reason); with 64 fraction
//! bits the truncation of `1/w` is below 2^-48 relative for any weight up to
//! 2^16, i.e. well under a byte over 2^48 bytes sent. The integer part has
//! 64 bits, so the timestamps cannot wrap in any run (2^64 bytes), and plain
//! comparisons replace dummynet's wrap-around `DN_KEY_LT` on 64-bit keys
//! with 28 fraction bits.

use crate::sched::heap::FlowHeap;
use crate::sched::{Dequeue, FlowSlot, FlowSpec, Flows, HeadFilter, Insert, SchedDrop, Scheduler};
use crate::packet::Pool;
use crate::time::Instant;

/// 1.0 in virtual-time units.
const ONE: u128 = 1 << 64;

#[derive(Debug)]
pub(crate) struct Wf2qFlow {
    s: u128,
    f: u128,
    inv_w: u128,
    /// `S`, `F` valid and the weight counted in `W` (dummynet encodes
    /// "invalid" as `S = F + 1`).
    valid: bool,
}

/// The WF2Q+ scheduler.
#[derive(Debug, Default)]
pub(crate) struct Wf2q {
    flows: Flows<Wf2qFlow>,
    v: u128,
    wsum: u64,
    inv_wsum: u128,
    /// Eligible backlogged flows, keyed on `F`.
    sch: FlowHeap,
    /// Backlogged flows with `S > V`, keyed on `S`.
    ne: FlowHeap,
    /// Idle flows whose weight is still in `W`, keyed on `F`.
    idle: FlowHeap,
}

impl Wf2q {
    pub fn new() -> Wf2q {
        Wf2q::default()
    }

    fn set_wsum(&mut self, wsum: u64) {
        self.wsum = wsum;
        self.inv_wsum = if wsum > 0 { ONE / wsum as u128 } else { 0 };
    }

    /// Take the weight of every idle flow whose fluid service is over
    /// (`F < V`, or all of them with `force`) out of `W`.
    fn drain_idle(&mut self, force: bool) {
        while let Some((f, slot)) = self.idle.peek() {
            if !force && f >= self.v {
                break;
            }
            self.idle.pop();
            let fl = self.flows.get_mut(slot);
            fl.st.valid = false;
            let w = fl.spec.weight() as u64;
            self.set_wsum(self.wsum - w);
        }
    }
}

impl Scheduler for Wf2q {
    fn add_flow(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        let st = Wf2qFlow {
            s: 0,
            f: 0,
            inv_w: ONE / spec.weight() as u128,
            valid: false,
        };
        match self.flows.insert(flow, spec, st) {
            Insert::New => true,
            Insert::Replaced(old) => {
                if old.st.valid {
                    self.idle.remove(flow.0);
                    self.set_wsum(self.wsum - old.spec.weight() as u64);
                }
                true
            }
            Insert::Busy => false,
        }
    }

    /// `W` takes the new weight at once if the flow's is in it; the head
    /// keeps its finish time and the packets after it are stamped with the
    /// new weight.
    fn reweight(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        let Some(old) = self.flows.reshare(flow, spec) else {
            return false;
        };
        let st = &mut self.flows.get_mut(flow.0).st;
        st.inv_w = ONE / spec.weight() as u128;
        if st.valid {
            self.set_wsum(self.wsum - old.weight() as u64 + spec.weight() as u64);
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
        if !self.flows.admit(pool, flow, pkt, now)? {
            return Ok(()); // already backlogged: its timestamps stand
        }
        let len = pool.get(pkt).pkt.len as u128;
        let v = self.v;
        let fl = self.flows.get_mut(flow.0);
        let w = fl.spec.weight() as u64;
        let st = &mut fl.st;
        let fresh = !st.valid;
        if fresh {
            st.s = v;
            st.valid = true;
        } else {
            st.s = st.f.max(v);
        }
        st.f = st.s + len * st.inv_w;
        let (s, f) = (st.s, st.f);
        if fresh {
            self.set_wsum(self.wsum + w);
        } else {
            self.idle.remove(flow.0);
        }
        // Nothing backlogged: make sure this flow is eligible.
        if self.sch.is_empty() && self.ne.is_empty() {
            self.v = self.v.max(s);
        }
        if self.v < s {
            self.ne.push(flow.0, s);
        } else {
            self.sch.push(flow.0, f);
        }
        Ok(())
    }

    fn dequeue_with<H: HeadFilter>(
        &mut self,
        pool: &mut Pool,
        _now: Instant,
        head: &mut H,
    ) -> Dequeue {
        if self.sch.is_empty() && self.ne.is_empty() {
            // Idle: every flow restarts afresh (dummynet resets V too).
            self.drain_idle(true);
            self.v = 0;
            return Dequeue::Empty;
        }
        self.drain_idle(false);
        // Make at least one flow eligible: V = max(V, min S) if none is.
        if self.sch.is_empty() {
            if let Some((s, _)) = self.ne.peek() {
                self.v = self.v.max(s);
            }
        }
        self.promote();
        let (_, slot) = self.sch.pop().expect("an eligible flow");
        let i = self
            .flows
            .pop_with(pool, slot, head)
            .expect("backlogged flow");
        let len = pool.get(i).pkt.len as u128;
        self.v += len * self.inv_wsum;
        let head = self.flows.head_len(pool, slot);
        let st = &mut self.flows.get_mut(slot).st;
        st.s = st.f;
        match head {
            None => self.idle.push(slot, st.f),
            Some(next) => {
                st.f += next as u128 * st.inv_w;
                if st.s <= self.v {
                    self.sch.push(slot, st.f);
                } else {
                    self.ne.push(slot, st.s);
                }
            }
        }
        // Keep the invariant "sch holds exactly the flows with S ≤ V" for
        // the next enqueue (dummynet's second pass of its loop).
        if self.sch.is_empty() {
            if let Some((s, _)) = self.ne.peek() {
                self.v = self.v.max(s);
            }
        }
        self.promote();
        Dequeue::Packet(i)
    }

    fn pop_dropped(&mut self, _pool: &mut Pool) -> Option<u32> {
        None
    }

    fn remove_idle(&mut self, flow: FlowSlot) -> bool {
        match self.flows.remove_idle(flow) {
            Some(old) => {
                if old.st.valid {
                    self.idle.remove(flow.0);
                    self.set_wsum(self.wsum - old.spec.weight() as u64);
                }
                true
            }
            None => false,
        }
    }

    fn backlog(&self) -> (u32, u64) {
        self.flows.backlog()
    }
}

impl Wf2q {
    /// Move flows that became eligible (`S ≤ V`) from `ne` to `sch`.
    fn promote(&mut self) {
        while let Some((s, slot)) = self.ne.peek() {
            if s > self.v {
                break;
            }
            self.ne.pop();
            let f = self.flows.get(slot).st.f;
            self.sch.push(slot, f);
        }
    }
}
