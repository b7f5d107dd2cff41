//! The deficit round robin over flow queues that FQ-CoDel and FQ-PIE
//! share (RFC 8290 §4), each flow queue with an AQM instance of its own.
//!
//! Flows that become backlogged join the *new* list with one quantum of
//! credit and are served before the *old* list, so a sparse flow (one that
//! never builds a queue) has its packets sent almost at once while bulk
//! flows wait their turn. A flow whose credit is spent gets a quantum more
//! and moves to the tail of the old list. A new flow that empties moves to
//! the old list if that is non-empty (so it cannot come back as "new" at
//! once and starve the old flows); an old flow that empties leaves. The
//! credit per turn is `quantum × weight` (weight 1 gives the RFC).
//!
//! The AQM acts when the round robin takes a packet from a flow: the
//! scheduler passes [`FlowRounds::dequeue_with`] a function that pops the
//! flow's next packet to send, pushing those it drops from the head on
//! [`FlowRounds::dropped`] (handed back through
//! [`crate::sched::Scheduler::pop_dropped`]).

use crate::packet::{List, Pool, NIL};
use crate::sched::{Dequeue, FlowRing, FlowSlot, FlowSpec, Flows, HeadFilter, Insert, SchedDrop};
use crate::time::Instant;

/// Which list a flow is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum On {
    None,
    New,
    Old,
}

/// A flow queue's round-robin state and its AQM's.
#[derive(Debug)]
pub(crate) struct FqFlow<A> {
    deficit: i64,
    next: u32,
    on: On,
    /// The flow's AQM instance.
    pub aqm: A,
}

fn next<A>(f: &mut FqFlow<A>) -> &mut u32 {
    &mut f.next
}

/// The flows, their two lists and the packets the AQMs dropped.
#[derive(Debug)]
pub(crate) struct FlowRounds<A> {
    /// The flow queues.
    pub flows: Flows<FqFlow<A>>,
    new_flows: FlowRing,
    old_flows: FlowRing,
    quantum: u32,
    /// Packets the AQMs dropped from the head, oldest first.
    pub dropped: List,
}

impl<A> FlowRounds<A> {
    /// `quantum` bytes per turn per unit weight.
    pub fn new(quantum: u32) -> FlowRounds<A> {
        FlowRounds {
            flows: Flows::default(),
            new_flows: FlowRing::default(),
            old_flows: FlowRing::default(),
            quantum: quantum.max(1),
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

    /// `Scheduler::add_flow`, the flow's AQM starting as `aqm`.
    pub fn add_flow(&mut self, flow: FlowSlot, spec: FlowSpec, aqm: A) -> bool {
        let st = FqFlow {
            deficit: 0,
            next: NIL,
            on: On::None,
            aqm,
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

    /// `Scheduler::reweight`: the next turn's credit is `quantum × ` the
    /// new weight; the credit left in this turn stands.
    pub fn reweight(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        self.flows.reshare(flow, spec).is_some()
    }

    /// `Scheduler::enqueue`.
    pub fn enqueue(
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

    /// `Scheduler::dequeue_with`, `take(flows, dropped, pool, slot,
    /// filter)` taking flow `slot`'s next packet through its AQM (`None`:
    /// the flow has none left).
    pub fn dequeue_with<H: HeadFilter>(
        &mut self,
        pool: &mut Pool,
        filter: &mut H,
        mut take: impl FnMut(&mut Flows<FqFlow<A>>, &mut List, &mut Pool, u32, &mut H) -> Option<u32>,
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
            match take(&mut self.flows, &mut self.dropped, pool, h, filter) {
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

    /// `Scheduler::pop_dropped`.
    pub fn pop_dropped(&mut self, pool: &mut Pool) -> Option<u32> {
        self.dropped.pop_front(pool)
    }

    /// `Scheduler::remove_idle`: an empty flow still linked on the old
    /// list stays until the round robin passes it.
    pub fn remove_idle(&mut self, flow: FlowSlot) -> bool {
        match self.flows.try_get(flow.0) {
            Some(f) if f.st.on == On::None => self.flows.remove_idle(flow).is_some(),
            _ => false,
        }
    }

    /// `Scheduler::backlog`.
    pub fn backlog(&self) -> (u32, u64) {
        self.flows.backlog()
    }
}
