//! FIFO: one queue for every flow, served in arrival order (FreeBSD
//! `dn_sched_fifo.c`). The reference implementation: what a pipe without a
//! scheduler does.
//!
//! Flows still matter for admission: as in dummynet, where a non-multiqueue
//! scheduler keeps one queue limited by the flowset's `queue` parameter, a
//! packet of flow `f` is admitted if the *shared* queue is below `f`'s limit.
//! Weights are ignored.

use crate::sched::{Dequeue, FlowSlot, FlowSpec, SchedDrop, Scheduler};
use crate::packet::{List, Pool};
use crate::time::Instant;

/// The FIFO scheduler.
#[derive(Debug, Default)]
pub(crate) struct Fifo {
    q: List,
    /// Each flow's spec, `None` for a free slot.
    specs: Vec<Option<FlowSpec>>,
}

impl Fifo {
    pub fn new() -> Fifo {
        Fifo::default()
    }
}

impl Scheduler for Fifo {
    fn add_flow(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        let i = flow.0 as usize;
        if self.specs.len() <= i {
            self.specs.resize(i + 1, None);
        }
        self.specs[i] = Some(spec);
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
        let spec = self
            .specs
            .get(flow.0 as usize)
            .copied()
            .flatten()
            .ok_or(SchedDrop::UnknownFlow)?;
        let len = pool.get(pkt).pkt.len;
        if !spec.limit().admits(self.q.len(), self.q.bytes(), len) {
            return Err(SchedDrop::FlowFull);
        }
        pool.get_mut(pkt).arrival = now;
        self.q.push_back(pool, pkt);
        Ok(())
    }

    #[inline]
    fn dequeue(&mut self, pool: &mut Pool, _now: Instant) -> Dequeue {
        match self.q.pop_front(pool) {
            Some(i) => Dequeue::Packet(i),
            None => Dequeue::Empty,
        }
    }

    fn pop_dropped(&mut self, _pool: &mut Pool) -> Option<u32> {
        None
    }

    /// Packets of all flows share one queue, so a flow is idle for FIFO
    /// whenever it is known: its packets (if any) stay queued.
    fn remove_idle(&mut self, flow: FlowSlot) -> bool {
        self.specs
            .get_mut(flow.0 as usize)
            .and_then(Option::take)
            .is_some()
    }

    fn backlog(&self) -> (u32, u64) {
        (self.q.len(), self.q.bytes())
    }
}
