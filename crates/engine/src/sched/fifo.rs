//! FIFO: one queue for every flow, served in arrival order (FreeBSD
//! `dn_sched_fifo.c`). The reference implementation: what a pipe without a
//! scheduler does.
//!
//! Flows still matter for admission: as in dummynet, where a non-multiqueue
//! scheduler keeps one queue limited by the flowset's `queue` parameter, a
//! packet of flow `f` is admitted if the *shared* queue is below `f`'s limit.
//! Weights are ignored.

use crate::config::QueueLimit;
use crate::sched::{Dequeue, FlowSlot, FlowSpec, HeadFilter, SchedDrop, Scheduler};
use crate::packet::{List, Pool};
use crate::time::Instant;

/// The FIFO scheduler.
#[derive(Debug, Default)]
pub(crate) struct Fifo {
    q: List,
    /// Each flow's limit, `None` for a free slot.
    specs: Vec<Option<QueueLimit>>,
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
        self.specs[i] = Some(spec.limit());
        true
    }

    /// Weights are ignored; the new limit applies to the next arrival.
    fn reweight(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        match self.specs.get_mut(flow.0 as usize) {
            Some(Some(l)) => {
                *l = spec.limit();
                true
            }
            _ => false,
        }
    }

    #[inline]
    fn enqueue(
        &mut self,
        pool: &mut Pool,
        flow: FlowSlot,
        pkt: u32,
        now: Instant,
    ) -> Result<(), SchedDrop> {
        let limit = self
            .specs
            .get(flow.0 as usize)
            .copied()
            .flatten()
            .ok_or(SchedDrop::UnknownFlow)?;
        let len = pool.get(pkt).pkt.len;
        if !limit.admits(self.q.len(), self.q.bytes(), len) {
            return Err(SchedDrop::FlowFull);
        }
        pool.get_mut(pkt).arrival = now;
        self.q.push_back(pool, pkt);
        Ok(())
    }

    /// The head of the one queue; a packet `head` takes (its flow queue's
    /// AQM) is skipped for the next one, whatever its flow.
    #[inline]
    fn dequeue_with<H: HeadFilter>(
        &mut self,
        pool: &mut Pool,
        _now: Instant,
        head: &mut H,
    ) -> Dequeue {
        while let Some(i) = self.q.pop_front(pool) {
            if !head(pool, i, None) {
                return Dequeue::Packet(i);
            }
        }
        Dequeue::Empty
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
