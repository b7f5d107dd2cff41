//! FQ-PIE: deficit round robin over flow queues with a PIE AQM (RFC 8033)
//! on each flow queue, as FreeBSD's `dn_sched_fq_pie.c` (dummynet's
//! `type fq_pie`, ipfw(8): "similar to fq_codel but uses per sub-queue PIE
//! AQM instance to control the queueing delay") and Linux's `sch_fq_pie.c`.
//!
//! The round robin is fq_codel's (RFC 8290 §4): flows that become
//! backlogged join the *new* list with one quantum of credit and are
//! served before the *old* list; a flow whose credit is spent gets a
//! quantum more and moves to the old list's tail. Each flow queue has its
//! own PIE ([`crate::models::Pie`]), with the timestamp estimate of the
//! queue delay (ipfw's `ts`): the sojourn of the flow's packets.
//!
//! One difference from RFC 8033 and the kernels: PIE decides when the
//! round robin takes a packet from the flow (a head drop, on that
//! packet's sojourn and the bytes it leaves behind) rather than at its
//! arrival; the probability, its updates every `tupdate`, the burst
//! allowance and the de-randomization are RFC 8033's. Decided at dequeue,
//! a drop is reported at its instant like fq_codel's (`pop_dropped`),
//! and a flow queue's limit stays a plain tail drop.
//!
//! Differences, because the caller classifies: a flow is the caller's flow
//! queue (no hashing into 1024 buckets); each flow queue has its own limit
//! with tail drop; no ECN marking (PIE drops). PIE's random draws come
//! from a stream per flow slot seeded with the slot number (the scheduler
//! is built from its configuration alone), so runs are reproducible.

use crate::config::ConfigError;
use crate::models::{Pie, PieConfig};
use crate::packet::{List, Pool, NIL};
use crate::rng::{stage_rng, StageKind};
use crate::sched::{
    Dequeue, FlowRing, FlowSlot, FlowSpec, Flows, HeadFilter, Insert, SchedDrop, Scheduler,
};
use crate::time::{Duration, Instant};

/// The link MTU PIE assumes (below two of them queued it never drops).
const MTU: u32 = 1500;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum On {
    None,
    New,
    Old,
}

#[derive(Debug)]
pub(crate) struct PieFlow {
    deficit: i64,
    next: u32,
    on: On,
    pie: Box<Pie>,
    /// The sojourn of the flow's last dequeued packet.
    qdelay: Duration,
}

fn next(f: &mut PieFlow) -> &mut u32 {
    &mut f.next
}

/// The FQ-PIE scheduler.
#[derive(Debug)]
pub(crate) struct FqPie {
    flows: Flows<PieFlow>,
    new_flows: FlowRing,
    old_flows: FlowRing,
    quantum: u32,
    pie: PieConfig,
    dropped: List,
}

impl FqPie {
    /// `quantum` bytes per turn per unit weight; PIE with `target` (its
    /// other parameters RFC 8033's defaults).
    pub fn new(quantum: u32, target: Duration) -> FqPie {
        let d = PieConfig::default();
        let pie = PieConfig::new(target, d.tupdate(), d.alpha(), d.beta(), d.max_burst())
            .unwrap_or(d);
        FqPie {
            flows: Flows::default(),
            new_flows: FlowRing::default(),
            old_flows: FlowRing::default(),
            quantum: quantum.max(1),
            pie,
            dropped: List::default(),
        }
    }

    fn unlink_head(&mut self, from_new: bool) {
        let ring = if from_new {
            &mut self.new_flows
        } else {
            &mut self.old_flows
        };
        ring.pop_front(&mut self.flows, next);
    }

    fn credit(&self, slot: u32) -> i64 {
        self.quantum as i64 * self.flows.get(slot).spec.weight() as i64
    }
}

/// The registry's check of `type fq_pie target T`: PIE's own.
pub(crate) fn check(target: Duration) -> Result<(), ConfigError> {
    let d = PieConfig::default();
    PieConfig::new(target, d.tupdate(), d.alpha(), d.beta(), d.max_burst())
        .map(|_| ())
        .map_err(|e| ConfigError {
            param: "target",
            reason: e.message,
        })
}

impl Scheduler for FqPie {
    fn add_flow(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        let st = PieFlow {
            deficit: 0,
            next: NIL,
            on: On::None,
            pie: Box::new(Pie::new(
                self.pie,
                stage_rng(0, StageKind::Aqm, flow.0 as u64),
            )),
            qdelay: Duration::ZERO,
        };
        match self.flows.insert(flow, spec, st) {
            Insert::New => true,
            Insert::Replaced(old) => {
                let f = self.flows.get_mut(flow.0);
                f.st.on = old.st.on;
                f.st.next = old.st.next;
                true
            }
            Insert::Busy => false,
        }
    }

    fn reweight(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        self.flows.reshare(flow, spec).is_some()
    }

    fn enqueue(
        &mut self,
        pool: &mut Pool,
        flow: FlowSlot,
        pkt: u32,
        now: Instant,
    ) -> Result<(), SchedDrop> {
        self.flows.admit(pool, flow, pkt, now)?;
        if self.flows.get(flow.0).st.on == On::None {
            let credit = self.credit(flow.0);
            let st = &mut self.flows.get_mut(flow.0).st;
            st.on = On::New;
            st.deficit = credit;
            self.new_flows.push_back(&mut self.flows, flow.0, next);
        }
        Ok(())
    }

    fn dequeue_with<H: HeadFilter>(
        &mut self,
        pool: &mut Pool,
        now: Instant,
        filter: &mut H,
    ) -> Dequeue {
        loop {
            let from_new = !self.new_flows.is_empty();
            let h = if from_new {
                self.new_flows.head
            } else {
                self.old_flows.head
            };
            if h == NIL {
                return Dequeue::Empty;
            }
            if self.flows.get(h).st.deficit <= 0 {
                self.unlink_head(from_new);
                let credit = self.credit(h);
                let st = &mut self.flows.get_mut(h).st;
                st.deficit += credit;
                st.on = On::Old;
                self.old_flows.push_back(&mut self.flows, h, next);
                continue;
            }
            let mut got = self.flows.pop_with(pool, h, filter);
            while let Some(i) = got {
                // PIE on the packet the round robin took: its sojourn, and
                // the bytes it leaves behind plus its own.
                let sojourn = now - pool.get(i).arrival;
                let len = pool.get(i).pkt.len as u64;
                let f = self.flows.get_mut(h);
                let bytes = f.q.bytes() + len;
                f.st.qdelay = sojourn;
                if f.q.is_empty() || !f.st.pie.on_enqueue(now, sojourn, bytes, MTU) {
                    break;
                }
                self.dropped.push_back(pool, i);
                got = self.flows.pop_with(pool, h, filter);
            }
            match got {
                Some(i) => {
                    self.flows.get_mut(h).st.deficit -= pool.get(i).pkt.len as i64;
                    return Dequeue::Packet(i);
                }
                None => {
                    self.unlink_head(from_new);
                    if from_new && !self.old_flows.is_empty() {
                        self.flows.get_mut(h).st.on = On::Old;
                        self.old_flows.push_back(&mut self.flows, h, next);
                    } else {
                        self.flows.get_mut(h).st.on = On::None;
                    }
                }
            }
        }
    }

    fn pop_dropped(&mut self, pool: &mut Pool) -> Option<u32> {
        self.dropped.pop_front(pool)
    }

    fn remove_idle(&mut self, flow: FlowSlot) -> bool {
        match self.flows.try_get(flow.0) {
            Some(f) if f.st.on == On::None => self.flows.remove_idle(flow).is_some(),
            _ => false,
        }
    }

    fn backlog(&self) -> (u32, u64) {
        self.flows.backlog()
    }

    fn drops_at_dequeue(&self) -> bool {
        true
    }
}
