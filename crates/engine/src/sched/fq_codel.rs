//! FQ-CoDel (RFC 8290; Linux `sch_fq_codel.c`; FreeBSD
//! `dn_sched_fq_codel.c`): deficit round robin over flow queues, with a
//! CoDel AQM (RFC 8289) on each flow queue.
//!
//! Flows that become backlogged join the *new* list with one quantum of
//! credit and are served before the *old* list, so a sparse flow (one that
//! never builds a queue) has its packets sent almost at once while bulk
//! flows wait their turn. A flow whose credit is spent gets a quantum more
//! and moves to the tail of the old list. A new flow that empties moves to
//! the old list if that is non-empty (so it cannot come back as "new" at
//! once and starve the old flows); an old flow that empties leaves.
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
//! is `quantum × weight` (weight 1 gives the RFC). No ECN marking (the
//! descriptors carry no ECN bits): CoDel always drops.
//!
//! CoDel is implemented here in a few lines rather than shared with an AQM
//! stage, since fq_codel needs one instance per flow with its own state.

use crate::sched::{
    Dequeue, FlowRing, FlowSlot, FlowSpec, Flows, HeadFilter, Insert, SchedDrop, Scheduler,
};
use crate::config::ConfigError;
use crate::packet::{List, Pool, NIL};
use crate::time::{Duration, Instant};

/// Which list a flow is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum On {
    None,
    New,
    Old,
}

/// CoDel's per-queue state (RFC 8289 §5).
#[derive(Clone, Copy, Debug, Default)]
struct Codel {
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

#[derive(Debug)]
pub(crate) struct FqFlow {
    deficit: i64,
    next: u32,
    on: On,
    codel: Codel,
}

fn next(f: &mut FqFlow) -> &mut u32 {
    &mut f.next
}

/// The FQ-CoDel scheduler.
#[derive(Debug)]
pub(crate) struct FqCodel {
    flows: Flows<FqFlow>,
    new_flows: FlowRing,
    old_flows: FlowRing,
    quantum: u32,
    target: Duration,
    interval: Duration,
    dropped: List,
}

impl FqCodel {
    /// `quantum` bytes per turn per unit weight; CoDel `target`, `interval`.
    pub fn new(quantum: u32, target: Duration, interval: Duration) -> FqCodel {
        FqCodel {
            flows: Flows::default(),
            new_flows: FlowRing::default(),
            old_flows: FlowRing::default(),
            quantum: quantum.max(1),
            target,
            interval,
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

    #[inline]
    fn codel(&mut self, slot: u32) -> &mut Codel {
        &mut self.flows.get_mut(slot).st.codel
    }

    /// Pop the head of `slot` and say whether CoDel may drop it
    /// (RFC 8289 `dodequeue`).
    fn do_dequeue<H: HeadFilter>(
        &mut self,
        pool: &mut Pool,
        slot: u32,
        now: Instant,
        filter: &mut H,
    ) -> (Option<u32>, bool) {
        let Some(i) = self.flows.pop_with(pool, slot, filter) else {
            self.codel(slot).first_above = None;
            return (None, false);
        };
        let sojourn = now - pool.get(i).arrival;
        let (target, interval, mtu) = (self.target, self.interval, self.quantum as u64);
        let f = self.flows.get_mut(slot);
        let bytes_left = f.q.bytes();
        let c = &mut f.st.codel;
        if sojourn < target || bytes_left <= mtu {
            // Below target, or too little queue left to matter.
            c.first_above = None;
            return (Some(i), false);
        }
        match c.first_above {
            None => {
                c.first_above = Some(now + interval);
                (Some(i), false)
            }
            Some(t) => (Some(i), now >= t),
        }
    }

    /// CoDel's dequeue on flow `slot` (RFC 8289 §5.5, Linux's variant of
    /// the count restart).
    fn codel_dequeue<H: HeadFilter>(
        &mut self,
        pool: &mut Pool,
        slot: u32,
        now: Instant,
        filter: &mut H,
    ) -> Option<u32> {
        let interval = self.interval;
        let (mut p, ok) = self.do_dequeue(pool, slot, now, filter);
        let Some(head) = p else {
            self.codel(slot).dropping = false;
            return None;
        };
        if self.codel(slot).dropping {
            if !ok {
                self.codel(slot).dropping = false;
            }
            while self.codel(slot).dropping && now >= self.codel(slot).drop_next {
                // `p` is Some here: an empty queue is never ok to drop.
                if let Some(i) = p {
                    self.dropped.push_back(pool, i);
                }
                self.codel(slot).count += 1;
                let (np, ok) = self.do_dequeue(pool, slot, now, filter);
                p = np;
                let c = self.codel(slot);
                if ok {
                    c.drop_next = control_law(interval, c.drop_next, c.count);
                } else {
                    c.dropping = false;
                }
            }
        } else if ok {
            self.dropped.push_back(pool, head);
            self.codel(slot).count += 1;
            (p, _) = self.do_dequeue(pool, slot, now, filter);
            let c = self.codel(slot);
            c.dropping = true;
            // Dropping again soon after the last cycle: resume near the
            // drop rate that controlled the queue then.
            let delta = c.count.wrapping_sub(c.lastcount);
            c.count = if delta > 1 && now - c.drop_next < Duration(interval.0 * 16) {
                delta
            } else {
                1
            };
            c.drop_next = control_law(interval, now, c.count);
            c.lastcount = c.count;
        }
        p
    }
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
        let st = FqFlow {
            deficit: 0,
            next: NIL,
            on: On::None,
            codel: Codel::default(),
        };
        match self.flows.insert(flow, spec, st) {
            Insert::New => true,
            Insert::Replaced(old) => {
                // An idle flow may still be on a list (new flows that
                // emptied move to the old list): keep it there.
                let f = self.flows.get_mut(flow.0);
                f.st.on = old.st.on;
                f.st.next = old.st.next;
                true
            }
            Insert::Busy => false,
        }
    }

    /// The next turn's credit is `quantum × ` the new weight; the credit
    /// left in this turn stands.
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
                // Credit spent: a quantum more, and to the back of the
                // old list.
                self.unlink_head(from_new);
                let credit = self.credit(h);
                let st = &mut self.flows.get_mut(h).st;
                st.deficit += credit;
                st.on = On::Old;
                self.old_flows.push_back(&mut self.flows, h, next);
                continue;
            }
            match self.codel_dequeue(pool, h, now, filter) {
                Some(i) => {
                    self.flows.get_mut(h).st.deficit -= pool.get(i).pkt.len as i64;
                    return Dequeue::Packet(i);
                }
                None => {
                    // Empty: a new flow goes to the old list if that has
                    // flows (RFC 8290 §4.2), otherwise the flow leaves.
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
        // An empty flow still linked on the old list stays until the round
        // robin passes it.
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
