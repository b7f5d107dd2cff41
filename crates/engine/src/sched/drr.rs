//! Deficit Round Robin (M. Shreedhar and G. Varghese, "Efficient Fair
//! Queueing Using Deficit Round Robin", SIGCOMM '95; FreeBSD
//! `dn_sched_rr.c`, which is DRR despite its name; Linux `sch_drr.c`).
//!
//! Backlogged flows sit in a round-robin list. The flow at the head may send
//! its head packet if the packet fits in its *deficit*; otherwise it gets
//! `quantum × weight` more bytes of deficit and goes to the tail. A flow that
//! empties leaves the list and forgets its deficit (so an idle flow cannot
//! save credit). A flow that becomes backlogged joins the tail with a deficit
//! of one `quantum × weight`.
//!
//! With `quantum ≥` the largest packet, every visit sends at least one
//! packet, so a dequeue is O(1). Over any interval in which flows `i` and `j`
//! stay backlogged, their services differ from the weighted shares by less
//! than `quantum × weight + Lmax` bytes each (the paper's Lemma 2).

use crate::sched::{
    Dequeue, FlowRing, FlowSlot, FlowSpec, Flows, HeadFilter, Insert, SchedDrop, Scheduler,
};
use crate::packet::{Pool, NIL};
use crate::time::Instant;

#[derive(Debug)]
pub(crate) struct DrrFlow {
    /// Bytes (or packets, in `rr` mode) the flow may still send this turn.
    deficit: u64,
    /// Link in the active list.
    next: u32,
}

fn next(f: &mut DrrFlow) -> &mut u32 {
    &mut f.next
}

/// The DRR scheduler (also the engine of [`crate::sched::rr`]).
#[derive(Debug)]
pub(crate) struct Drr {
    flows: Flows<DrrFlow>,
    active: FlowRing,
    /// Credit per turn per unit of weight.
    quantum: u64,
    /// Count packets instead of bytes (weighted round robin).
    unit_cost: bool,
}

impl Drr {
    /// DRR with `quantum` bytes per turn per unit of weight.
    pub fn new(quantum: u32) -> Drr {
        Drr {
            flows: Flows::default(),
            active: FlowRing::default(),
            quantum: quantum.max(1) as u64,
            unit_cost: false,
        }
    }

    /// Every packet costs 1 and a turn is worth `weight` packets.
    pub(crate) fn packet_counting() -> Drr {
        Drr {
            unit_cost: true,
            ..Drr::new(1)
        }
    }

    #[inline]
    fn cost(&self, len: u32) -> u64 {
        if self.unit_cost {
            1
        } else {
            len as u64
        }
    }
}

impl Scheduler for Drr {
    fn add_flow(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        let st = DrrFlow {
            deficit: 0,
            next: NIL,
        };
        !matches!(self.flows.insert(flow, spec, st), Insert::Busy)
    }

    /// The next turn's credit is `quantum × ` the new weight; the credit
    /// left in this turn stands.
    fn reweight(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        self.flows.reshare(flow, spec).is_some()
    }

    #[inline]
    fn enqueue(
        &mut self,
        pool: &mut Pool,
        flow: FlowSlot,
        pkt: u32,
        now: Instant,
    ) -> Result<(), SchedDrop> {
        if self.flows.admit(pool, flow, pkt, now)? {
            let f = self.flows.get_mut(flow.0);
            f.st.deficit = self.quantum * f.spec.weight() as u64;
            self.active.push_back(&mut self.flows, flow.0, next);
        }
        Ok(())
    }

    #[inline]
    fn dequeue_with<H: HeadFilter>(
        &mut self,
        pool: &mut Pool,
        _now: Instant,
        head: &mut H,
    ) -> Dequeue {
        loop {
            let h = self.active.head;
            if h == NIL {
                return Dequeue::Empty;
            }
            let len = self
                .flows
                .head_len(pool, h)
                .expect("active flow has a packet");
            let cost = self.cost(len);
            let f = self.flows.get_mut(h);
            if cost <= f.st.deficit {
                f.st.deficit -= cost;
                let i = self.flows.pop_with(pool, h, head).expect("head packet");
                if self.flows.get(h).q.is_empty() {
                    self.active.pop_front(&mut self.flows, next);
                    self.flows.get_mut(h).st.deficit = 0;
                }
                return Dequeue::Packet(i);
            }
            f.st.deficit += self.quantum * f.spec.weight() as u64;
            self.active.pop_front(&mut self.flows, next);
            self.active.push_back(&mut self.flows, h, next);
        }
    }

    fn pop_dropped(&mut self, _pool: &mut Pool) -> Option<u32> {
        None
    }

    fn remove_idle(&mut self, flow: FlowSlot) -> bool {
        self.flows.remove_idle(flow).is_some()
    }

    fn backlog(&self) -> (u32, u64) {
        self.flows.backlog()
    }
}
