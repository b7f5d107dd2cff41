//! FQ-PIE: deficit round robin over flow queues with a PIE AQM (RFC 8033)
//! on each flow queue, as FreeBSD's `dn_sched_fq_pie.c` (dummynet's
//! `type fq_pie`, ipfw(8): "similar to fq_codel but uses per sub-queue PIE
//! AQM instance to control the queueing delay") and Linux's `sch_fq_pie.c`.
//!
//! The round robin is fq_codel's (RFC 8290 §4, `sched/fq.rs`): flows that
//! become backlogged join the *new* list with one quantum of credit and
//! are served before the *old* list; a flow whose credit is spent gets a
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
//! with tail drop. PIE's random draws come
//! from a stream per flow slot seeded with the slot number (the scheduler
//! is built from its configuration alone), so runs are reproducible.
//!
//! ECN (ipfw's `sched N config type fq_pie ecn`; RFC 8033 §5.1): where
//! PIE would drop an ECN-capable packet ([`Packet::ECT`]), it marks it
//! [`Packet::CE`] and sends it. As the pipes' and flow queues' `pie ecn`,
//! it marks at any drop probability (dummynet's fq_pie falls back to
//! dropping above `max_ecnth`, 10 %). Off by default (`noecn`).

use crate::config::ConfigError;
use crate::models::{Pie, PieConfig};
use crate::rng::{stage_rng, StageKind};
use crate::packet::{Packet, Pool};
use crate::sched::fq::FlowRounds;
use crate::sched::{Dequeue, FlowSlot, FlowSpec, HeadFilter, SchedDrop, Scheduler};
use crate::time::{Duration, Instant};

/// The link MTU PIE assumes (below two of them queued it never drops).
const MTU: u32 = 1500;

/// A flow queue's PIE.
#[derive(Debug)]
pub(crate) struct PieFlow {
    pie: Box<Pie>,
    /// The sojourn of the flow's last dequeued packet.
    qdelay: Duration,
}

/// The FQ-PIE scheduler.
#[derive(Debug)]
pub(crate) struct FqPie {
    rounds: FlowRounds<PieFlow>,
    pie: PieConfig,
    /// Mark ECN-capable packets instead of dropping them.
    ecn: bool,
    /// The last dequeue marked its packet CE.
    marked: bool,
}

impl FqPie {
    /// `quantum` bytes per turn per unit weight; PIE with `target` (its
    /// other parameters RFC 8033's defaults); `ecn`: mark ECN-capable
    /// packets instead of dropping them.
    pub fn new(quantum: u32, target: Duration, ecn: bool) -> FqPie {
        let d = PieConfig::default();
        let pie = PieConfig::new(target, d.tupdate(), d.alpha(), d.beta(), d.max_burst())
            .unwrap_or(d);
        FqPie {
            rounds: FlowRounds::new(quantum),
            pie,
            ecn,
            marked: false,
        }
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
        let aqm = PieFlow {
            pie: Box::new(Pie::new(
                self.pie,
                stage_rng(0, StageKind::Aqm, flow.0 as u64),
            )),
            qdelay: Duration::ZERO,
        };
        self.rounds.add_flow(flow, spec, aqm)
    }

    fn reweight(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        self.rounds.reweight(flow, spec)
    }

    fn enqueue(
        &mut self,
        pool: &mut Pool,
        flow: FlowSlot,
        pkt: u32,
        now: Instant,
    ) -> Result<(), SchedDrop> {
        self.rounds.enqueue(pool, flow, pkt, now)
    }

    fn dequeue_with<H: HeadFilter>(
        &mut self,
        pool: &mut Pool,
        now: Instant,
        filter: &mut H,
    ) -> Dequeue {
        let ecn = self.ecn;
        let marked = &mut self.marked;
        *marked = false;
        self.rounds
            .dequeue_with(pool, filter, |flows, dropped, pool, h, filter| {
                let mut got = flows.pop_with(pool, h, filter);
                while let Some(i) = got {
                    // PIE on the packet the round robin took: its sojourn,
                    // and the bytes it leaves behind plus its own.
                    let sojourn = now - pool.get(i).arrival;
                    let len = pool.get(i).pkt.len as u64;
                    let f = flows.get_mut(h);
                    let bytes = f.q.bytes() + len;
                    f.st.aqm.qdelay = sojourn;
                    if f.q.is_empty() || !f.st.aqm.pie.on_enqueue(now, sojourn, bytes, MTU) {
                        break;
                    }
                    let p = &mut pool.get_mut(i).pkt;
                    if ecn && p.flags & Packet::ECT != 0 {
                        // Marked instead of dropped, and sent.
                        p.flags |= Packet::CE;
                        *marked = true;
                        break;
                    }
                    dropped.push_back(pool, i);
                    got = flows.pop_with(pool, h, filter);
                }
                got
            })
    }

    fn pop_dropped(&mut self, pool: &mut Pool) -> Option<u32> {
        self.rounds.pop_dropped(pool)
    }

    fn remove_idle(&mut self, flow: FlowSlot) -> bool {
        self.rounds.remove_idle(flow)
    }

    fn backlog(&self) -> (u32, u64) {
        self.rounds.backlog()
    }

    fn drops_at_dequeue(&self) -> bool {
        true
    }

    fn take_mark(&mut self) -> bool {
        core::mem::take(&mut self.marked)
    }
}
