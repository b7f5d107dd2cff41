//! Weighted round robin: backlogged flows take turns, and a turn sends up to
//! `weight` packets whatever their length.
//!
//! This is DRR ([`crate::sched::drr`]) in which every packet costs 1 and the
//! quantum is 1: the classic packet-counting WRR. It is fair in packets, not
//! in bytes (a flow of 1500-byte packets gets 23 times the bandwidth of a
//! flow of 64-byte packets of the same weight); use `drr` for byte
//! fairness. Note that FreeBSD's `type rr` (`dn_sched_rr.c`) is a DRR.
//! O(1) per packet.

use crate::sched::drr::Drr;
use crate::sched::{Dequeue, FlowSlot, FlowSpec, HeadFilter, SchedDrop, Scheduler};
use crate::packet::Pool;
use crate::time::Instant;

/// The weighted round-robin scheduler.
#[derive(Debug)]
pub(crate) struct Rr(Drr);

impl Rr {
    pub fn new() -> Rr {
        Rr(Drr::packet_counting())
    }
}

impl Scheduler for Rr {
    fn add_flow(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        self.0.add_flow(flow, spec)
    }
    fn reweight(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        self.0.reweight(flow, spec)
    }
    #[inline]
    fn enqueue(
        &mut self,
        pool: &mut Pool,
        flow: FlowSlot,
        pkt: u32,
        now: Instant,
    ) -> Result<(), SchedDrop> {
        self.0.enqueue(pool, flow, pkt, now)
    }
    #[inline]
    fn dequeue_with<H: HeadFilter>(
        &mut self,
        pool: &mut Pool,
        now: Instant,
        head: &mut H,
    ) -> Dequeue {
        self.0.dequeue_with(pool, now, head)
    }
    fn pop_dropped(&mut self, pool: &mut Pool) -> Option<u32> {
        self.0.pop_dropped(pool)
    }
    fn remove_idle(&mut self, flow: FlowSlot) -> bool {
        self.0.remove_idle(flow)
    }
    fn backlog(&self) -> (u32, u64) {
        self.0.backlog()
    }
}
