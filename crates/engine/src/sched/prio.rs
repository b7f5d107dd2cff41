//! Strict priority (FreeBSD `dn_sched_prio.c`): always serve the backlogged
//! flow queue of highest priority, the priority being the flow's weight.
//! Among equal weights the lower flow slot goes first (so the first-created
//! queue wins, deterministically); within a flow, FIFO.
//!
//! A lower-priority flow gets nothing while a higher one is backlogged, so
//! it can starve: that is the point. Dummynet keeps a bitmap of at most 32
//! priority levels; weights here go up to 2^16, so the backlogged flows sit
//! in a heap keyed on `(-weight, slot)`: O(log N) per packet, O(1) while the
//! same flow stays on top.

use crate::sched::heap::FlowHeap;
use crate::sched::{Dequeue, FlowSlot, FlowSpec, Flows, HeadFilter, Insert, SchedDrop, Scheduler};
use crate::packet::Pool;
use crate::time::Instant;

/// The strict-priority scheduler.
#[derive(Debug, Default)]
pub(crate) struct Prio {
    flows: Flows<()>,
    /// Backlogged flows, highest weight first.
    ready: FlowHeap,
}

impl Prio {
    pub fn new() -> Prio {
        Prio::default()
    }
}

#[inline]
fn key(weight: u32) -> u128 {
    (u32::MAX - weight) as u128
}

impl Scheduler for Prio {
    fn add_flow(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        !matches!(self.flows.insert(flow, spec, ()), Insert::Busy)
    }

    /// A backlogged flow moves to its new priority at once.
    fn reweight(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        if self.flows.reshare(flow, spec).is_none() {
            return false;
        }
        if self.ready.remove(flow.0) {
            self.ready.push(flow.0, key(spec.weight()));
        }
        true
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
            let w = self.flows.get(flow.0).spec.weight();
            self.ready.push(flow.0, key(w));
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
        let Some((_, slot)) = self.ready.peek() else {
            return Dequeue::Empty;
        };
        let i = self
            .flows
            .pop_with(pool, slot, head)
            .expect("ready flow has a packet");
        if self.flows.get(slot).q.is_empty() {
            self.ready.pop();
        }
        Dequeue::Packet(i)
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
