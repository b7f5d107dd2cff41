//! FQ-CoDel (RFC 8290; Linux `sch_fq_codel.c`; FreeBSD
//! `dn_sched_fq_codel.c`): deficit round robin over flow queues, with a
//! CoDel AQM (RFC 8289) on each flow queue.
//!
//! The round robin (`sched/fq.rs`): flows that become backlogged join the
//! *new* list with one quantum of credit and are served before the *old*
//! list, so a sparse flow (one that never builds a queue) has its packets
//! sent almost at once while bulk flows wait their turn.
//!
//! CoDel runs at dequeue on the chosen flow: packets whose sojourn time
//! stayed above `target` for an `interval` are dropped from the head at a
//! rate that grows with the square root of the number of drops. Dropped
//! packets are handed back through `Scheduler::pop_dropped`.
//!
//! Differences from RFC 8290, all because the caller classifies: there is
//! no hashing into 1024 buckets (a flow is the caller's flow queue, so no
//! collisions); each flow queue has its own limit with tail drop, instead
//! of one shared limit that drops from the fattest flow; the credit per turn
//! is `quantum × weight` (weight 1 gives the RFC).
//!
//! ECN (ipfw's `sched N config type fq_codel ecn`; RFC 8290 §4.1: "when
//! ECN is enabled, FQ-CoDel marks packets instead of dropping them"): where
//! CoDel would drop an ECN-capable packet ([`Packet::ECT`]), it marks it
//! [`Packet::CE`] and sends it, as Linux's `codel_dequeue` and dummynet's
//! `fq_codel_dequeue` do; the control law advances as for a drop.
//! Packets that are not ECN-capable are still dropped. Off by default
//! (`noecn`).
//!
//! CoDel is implemented here in a few lines rather than shared with an AQM
//! stage, since fq_codel needs one instance per flow with its own state.

use crate::config::ConfigError;
use crate::packet::{List, Packet, Pool};
use crate::sched::fq::{FlowRounds, FqFlow};
use crate::sched::{Dequeue, FlowSlot, FlowSpec, Flows, HeadFilter, SchedDrop, Scheduler};
use crate::time::{Duration, Instant};

/// CoDel's per-queue state (RFC 8289 §5).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Codel {
    /// When the sojourn time will have been above target for an interval;
    /// `None` while it is below target.
    first_above: Option<Instant>,
    /// Next drop while in the dropping state.
    drop_next: Instant,
    /// Drops since entering the dropping state.
    count: u32,
    /// `count` when the last dropping state ended.
    lastcount: u32,
    dropping: bool,
}

/// The FQ-CoDel scheduler.
#[derive(Debug)]
pub(crate) struct FqCodel {
    rounds: FlowRounds<Codel>,
    params: Params,
    /// The last dequeue marked its packet CE.
    marked: bool,
}

/// CoDel's parameters, and the bytes below which it never drops.
#[derive(Clone, Copy, Debug)]
struct Params {
    target: Duration,
    interval: Duration,
    mtu: u64,
    /// Mark ECN-capable packets instead of dropping them.
    ecn: bool,
}

impl FqCodel {
    /// `quantum` bytes per turn per unit weight; CoDel `target`,
    /// `interval`; `ecn`: mark ECN-capable packets instead of dropping.
    pub fn new(quantum: u32, target: Duration, interval: Duration, ecn: bool) -> FqCodel {
        FqCodel {
            rounds: FlowRounds::new(quantum),
            params: Params {
                target,
                interval,
                mtu: quantum.max(1) as u64,
                ecn,
            },
            marked: false,
        }
    }
}

type CodelFlows = Flows<FqFlow<Codel>>;

/// Pop the head of `slot` and say whether CoDel may drop it
/// (RFC 8289 `dodequeue`).
fn do_dequeue<H: HeadFilter>(
    flows: &mut CodelFlows,
    pool: &mut Pool,
    slot: u32,
    now: Instant,
    p: Params,
    filter: &mut H,
) -> (Option<u32>, bool) {
    let Some(i) = flows.pop_with(pool, slot, filter) else {
        flows.get_mut(slot).st.aqm.first_above = None;
        return (None, false);
    };
    let sojourn = now - pool.get(i).arrival;
    let f = flows.get_mut(slot);
    let bytes_left = f.q.bytes();
    let c = &mut f.st.aqm;
    if sojourn < p.target || bytes_left <= p.mtu {
        // Below target, or too little queue left to matter.
        c.first_above = None;
        return (Some(i), false);
    }
    match c.first_above {
        None => {
            c.first_above = Some(now + p.interval);
            (Some(i), false)
        }
        Some(t) => (Some(i), now >= t),
    }
}

/// With `ecn`, mark packet `i` CE if it is ECN-capable: `true` if marked
/// (it is then sent, not dropped).
fn mark(pool: &mut Pool, i: u32, ecn: bool, marked: &mut bool) -> bool {
    let p = &mut pool.get_mut(i).pkt;
    if ecn && p.flags & Packet::ECT != 0 {
        p.flags |= Packet::CE;
        *marked = true;
        return true;
    }
    false
}

/// CoDel's dequeue on flow `slot` (RFC 8289 §5.5, Linux's variant of the
/// count restart), its drops pushed on `dropped`; with `p.ecn` an
/// ECN-capable packet is marked (`marked` set) and sent instead.
#[allow(clippy::too_many_arguments)]
fn codel_dequeue<H: HeadFilter>(
    flows: &mut CodelFlows,
    dropped: &mut List,
    pool: &mut Pool,
    slot: u32,
    now: Instant,
    p: Params,
    filter: &mut H,
    marked: &mut bool,
) -> Option<u32> {
    let interval = p.interval;
    let (mut pkt, ok) = do_dequeue(flows, pool, slot, now, p, filter);
    let Some(head) = pkt else {
        flows.get_mut(slot).st.aqm.dropping = false;
        return None;
    };
    if flows.get_mut(slot).st.aqm.dropping {
        if !ok {
            flows.get_mut(slot).st.aqm.dropping = false;
        }
        while flows.get(slot).st.aqm.dropping && now >= flows.get(slot).st.aqm.drop_next {
            flows.get_mut(slot).st.aqm.count += 1;
            // `pkt` is Some here: an empty queue is never ok to drop.
            if let Some(i) = pkt {
                if mark(pool, i, p.ecn, marked) {
                    // Marked instead of dropped: the next mark (or drop)
                    // follows the control law, and this packet is sent.
                    let c = &mut flows.get_mut(slot).st.aqm;
                    c.drop_next = control_law(interval, c.drop_next, c.count);
                    return pkt;
                }
                dropped.push_back(pool, i);
            }
            let (np, ok) = do_dequeue(flows, pool, slot, now, p, filter);
            pkt = np;
            let c = &mut flows.get_mut(slot).st.aqm;
            if ok {
                c.drop_next = control_law(interval, c.drop_next, c.count);
            } else {
                c.dropping = false;
            }
        }
    } else if ok {
        if !mark(pool, head, p.ecn, marked) {
            dropped.push_back(pool, head);
            (pkt, _) = do_dequeue(flows, pool, slot, now, p, filter);
        }
        flows.get_mut(slot).st.aqm.count += 1;
        let c = &mut flows.get_mut(slot).st.aqm;
        c.dropping = true;
        // Dropping again soon after the last cycle: resume near the drop
        // rate that controlled the queue then.
        let delta = c.count.wrapping_sub(c.lastcount);
        c.count = if delta > 1 && now - c.drop_next < Duration(interval.0 * 16) {
            delta
        } else {
            1
        };
        c.drop_next = control_law(interval, now, c.count);
        c.lastcount = c.count;
    }
    pkt
}

/// The registry's check of `type fq_codel target T interval I`:
/// `0 < T < I`.
pub(crate) fn check(target: Duration, interval: Duration) -> Result<(), ConfigError> {
    if target == Duration::ZERO || interval <= target {
        return Err(ConfigError {
            param: "target",
            reason: format!("need 0 < target ({target}) < interval ({interval})"),
        });
    }
    Ok(())
}

/// `t + interval/√count` (RFC 8289 `control_law`). `f64::sqrt` is
/// correctly rounded, so the result is deterministic across platforms.
fn control_law(interval: Duration, t: Instant, count: u32) -> Instant {
    let d = interval.as_nanos() as f64 / (count.max(1) as f64).sqrt();
    t + Duration(d as u64)
}

impl Scheduler for FqCodel {
    fn add_flow(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        self.rounds.add_flow(flow, spec, Codel::default())
    }

    /// The next turn's credit is `quantum × ` the new weight; the credit
    /// left in this turn stands.
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
        let p = self.params;
        let marked = &mut self.marked;
        *marked = false;
        self.rounds
            .dequeue_with(pool, filter, |flows, dropped, pool, h, filter| {
                codel_dequeue(flows, dropped, pool, h, now, p, filter, marked)
            })
    }

    fn take_mark(&mut self) -> bool {
        core::mem::take(&mut self.marked)
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
}
