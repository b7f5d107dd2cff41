//! One Dummynet pipe: queue → link → delay line (dummynet-revisited §3.1).
//!
//! * **Queue**: a FIFO bounded in slots or bytes. The packet being
//!   transmitted stays in the queue until its last bit is on the wire, as in
//!   Dummynet, so `queue 50` means at most 50 packets waiting *or* sending.
//!   A packet that finds the queue full is dropped and counted.
//! * **Link**: serves the head of the queue at bandwidth `B`; packet `i`
//!   finishes transmission `(l_i + Q_i)/B` after its arrival, `Q_i` being the
//!   bytes ahead of it. Transmission times carry their sub-nanosecond
//!   remainder from one back-to-back packet to the next (`Rate::tx_time`), so
//!   a busy link delivers exactly `B` bits per second however long it runs.
//! * **Delay line**: holds each transmitted packet for the propagation delay
//!   `tD`. It is a FIFO: a packet never overtakes the one ahead of it.
//!
//! So a packet leaves the pipe at `T_i = (l_i + Q_i)/B + t_D` after arrival,
//! the paper's formula, with no timer tick: deadlines are exact nanoseconds.
//!
//! Stages, in order (netem's order where netem has them, dummynet's for
//! RED, RFC 8289 for CoDel):
//! 1. at arrival: loss (dropped before the queue, counted apart from tail
//!    drops), duplication (the copy is offered to the queue right after the
//!    original and is never duplicated again), corruption (marked; the
//!    bytes are flipped by whoever holds them);
//! 2. at arrival, early drop by RED/GRED (on the average queue in slots or
//!    bytes, as the queue is measured) or PIE (on the queue delay, Linux's
//!    estimate: the sojourn of the last packet the link took, 0 when it left
//!    the queue empty); then tail drop. AQM drops are counted apart
//!    ([`PipeStats::aqm_drops`]);
//! 3. when the link takes the next packet (the end of the previous
//!    transmission, or the arrival at an idle link): NetPath's swap of the
//!    two packets at the head of the queue, then CoDel, which may drop head
//!    packets (each at that instant, `sojourn = instant − arrival`) until it
//!    lets one through; the dropped ones leave the pipe through
//!    `Pipe::step`'s drop list at that exact instant;
//! 4. the transmission: `wire_bytes(len)` bytes (rate accounting: L3, L2
//!    framing or netem's overheads; the queue bound keeps counting `len`) at
//!    the link rate `B` (`bw`, or the profile's bandwidth when the pipe has
//!    none), through the `burst` credit when configured; or, with a
//!    bandwidth trace, until the delivery opportunity that carries its last
//!    byte. A MAC profile adds an extra airtime to the busy period; a draw
//!    above the loss level still occupies the link, then the packet is
//!    dropped ([`PipeStats::link_drops`]) instead of entering the delay line;
//! 5. when transmission ends: the delay, fixed or drawn from a distribution;
//!    netem's reorder sends chosen packets with no delay. With
//!    `jitter-order keep` a delayed packet never leaves before the one ahead
//!    of it; with `allow` (or with reordering) the delay line is kept sorted
//!    by exit time, ties in arrival order.
//!
//! Settling is lazy (see `Pipe::next_deadline`); when a stage decides at
//! the end of a transmission (a delay draw, reordering, CoDel, the MAC
//! profile) the pipe wakes at that instant, so every decision and every drop
//! happens at its exact time.
//!
//! **With a scheduler** ([`Pipe::with_sched`], dummynet's enqueue →
//! scheduler → serve → delay line, dummynet-revisited §3.6): stage 2's tail
//! drop is each flow queue's (the engine picks the flow queue instance, the
//! packet's `qslot`), and the link takes its next packet from the scheduler
//! at the instant it becomes free. A flow queue's limit counts the packets
//! waiting in it, not the one on the wire (the scheduler hands that one to
//! the link, as dummynet's do): a FIFO-scheduled pipe with `queue N`
//! behaves exactly like a plain pipe with `queue N+1`. The pipe's RED/PIE
//! measure, and its CoDel drops from, everything the pipe holds. A flow
//! queue may have queue management of its own (`FlowSpec::with_aqm`), one
//! state per instance on that instance's backlog and sojourns
//! (`flow_aqm.rs`): its RED/PIE decide at the arrival to the instance,
//! before its tail drop; its CoDel when the scheduler takes a packet from
//! the instance, the scheduler then taking the instance's next packet
//! (`Scheduler::dequeue_with`); drops are `aqm` drops of the instance and
//! of the pipe, reported at their instant. A plain pipe keeps its single
//! FIFO (no scheduler call on its path).
//!
//! A pipe does not know the clock or the other pipes: the engine calls
//! `Pipe::enqueue` at arrivals and `Pipe::step` at the pipe's deadline.

use crate::config::{Aqm, JitterOrder, PipeConfig, QueueLimit};
use crate::flow_aqm::FlowAqm;
use crate::models::channel::Channel;
use crate::models::{
    Accounting, Burst, Codel, CorruptModel, DelayModel, DuplicateModel, LossModel, NetemReorder,
    Pie, ProfileModel, QueueMeasure, Red, RedConfig, ReorderDecision, SlotModel, SwapReorder,
    TraceLink,
};
use crate::packet::{FlowKey, List, Packet, Pool};
use crate::rng::{stage_rng, StageKind};
use crate::sched::{Dequeue, FlowSlot, FlowSpec, Sched, SchedConfig, Scheduler};
use crate::time::{Duration, Instant, Rate};
use std::collections::BTreeMap;

/// The link MTU the AQMs assume (CoDel's `MAXPACKET`, PIE's `mtu`): an
/// Ethernet payload, in bytes.
pub const LINK_MTU: u32 = 1500;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Counters of one pipe, read by `pipelab sim`, `show` and the tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipeStats {
    /// Packets that arrived at the pipe (accepted or not).
    pub arrivals: u64,
    /// Bytes that arrived.
    pub arrival_bytes: u64,
    /// Packets that left the delay line.
    pub departures: u64,
    /// Bytes that left the delay line.
    pub departure_bytes: u64,
    /// Packets dropped because the queue was full (tail drop).
    pub drops: u64,
    /// Bytes dropped because the queue was full.
    pub drop_bytes: u64,
    /// Packets in the queue now (including the one being transmitted).
    pub backlog: u32,
    /// Bytes in the queue now.
    pub backlog_bytes: u64,
    /// Largest `backlog` ever seen.
    pub max_backlog: u32,
    /// Largest `backlog_bytes` ever seen.
    pub max_backlog_bytes: u64,
    /// Packets in the delay line now.
    pub in_delay_line: u32,
    /// Packets dropped by the loss model.
    pub loss_drops: u64,
    /// Copies made by the duplication model.
    pub duplicated: u64,
    /// Packets marked corrupt.
    pub corrupted: u64,
    /// Packets sent ahead by a reordering model (netem reorder or swap).
    pub reordered: u64,
    /// ECN-capable packets marked CE instead of dropped (`ecn`).
    pub ecn_marks: u64,
    /// Packets dropped by active queue management (RED/GRED, PIE at
    /// arrival; CoDel when the link takes them).
    pub aqm_drops: u64,
    /// Packets lost on the link (MAC profile draws above the loss level).
    pub link_drops: u64,
    /// Packets refused while the pipe was down (a black-hole window,
    /// `Engine::set_pipe_down`); not counted in `arrivals`.
    pub down_drops: u64,
}

/// Counters of one flow queue instance (ipfw `queue N`, one per pattern
/// of its mask), or of all the instances of a queue.
///
/// A packet counts as an arrival of its flow queue when it is offered to
/// it, i.e. after the pipe's loss model and RED/PIE (which act on the pipe
/// as a whole) let it through; then `arrivals = served + drops + aqm_drops
/// + backlog`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowStats {
    /// Packets offered to the flow queue.
    pub arrivals: u64,
    /// Bytes offered.
    pub arrival_bytes: u64,
    /// Tail drops: the flow queue was at its limit.
    pub drops: u64,
    /// Packets its queue management dropped (RED/GRED/PIE at arrival,
    /// CoDel when the scheduler took them), or the scheduler's (fq_codel).
    pub aqm_drops: u64,
    /// ECN-capable packets its queue management marked CE instead
    /// (`ecn`).
    pub ecn_marks: u64,
    /// Packets the link took from the flow queue.
    pub served: u64,
    /// Bytes the link took.
    pub served_bytes: u64,
    /// Packets waiting in the flow queue now.
    pub backlog: u32,
    /// Bytes waiting now.
    pub backlog_bytes: u64,
    /// Largest `backlog` seen.
    pub max_backlog: u32,
}

impl FlowStats {
    /// Add `o`'s counters to these (backlogs add, high-water marks take
    /// the larger).
    pub fn add(&mut self, o: &FlowStats) {
        self.arrivals += o.arrivals;
        self.arrival_bytes += o.arrival_bytes;
        self.drops += o.drops;
        self.aqm_drops += o.aqm_drops;
        self.ecn_marks += o.ecn_marks;
        self.served += o.served;
        self.served_bytes += o.served_bytes;
        self.backlog += o.backlog;
        self.backlog_bytes += o.backlog_bytes;
        self.max_backlog = self.max_backlog.max(o.max_backlog);
    }
}

impl PipeStats {
    /// Add `o`'s counters to these (current levels add, high-water marks
    /// take the larger): the totals of a dynamic pipe's instances.
    pub fn add(&mut self, o: &PipeStats) {
        self.arrivals += o.arrivals;
        self.arrival_bytes += o.arrival_bytes;
        self.departures += o.departures;
        self.departure_bytes += o.departure_bytes;
        self.drops += o.drops;
        self.drop_bytes += o.drop_bytes;
        self.backlog += o.backlog;
        self.backlog_bytes += o.backlog_bytes;
        self.max_backlog = self.max_backlog.max(o.max_backlog);
        self.max_backlog_bytes = self.max_backlog_bytes.max(o.max_backlog_bytes);
        self.in_delay_line += o.in_delay_line;
        self.loss_drops += o.loss_drops;
        self.duplicated += o.duplicated;
        self.corrupted += o.corrupted;
        self.reordered += o.reordered;
        self.aqm_drops += o.aqm_drops;
        self.link_drops += o.link_drops;
        self.down_drops += o.down_drops;
    }
}

/// One flow queue instance of a scheduled pipe.
#[derive(Clone, Debug)]
pub(crate) struct SlotInfo {
    /// False once expired (the slot is on the free list).
    pub live: bool,
    pub stats: FlowStats,
    /// The last arrival (idle expiry).
    pub last_arrival: Instant,
    /// The instance's queue management, if its queue has one (kept in a
    /// free slot for reuse: a live slot's is the one in force).
    pub aqm: Option<Box<FlowAqm>>,
    /// The stream id of the instance's queue management.
    pub aqm_id: u64,
}

/// The scheduler of a pipe and its flow queue instances
/// (dummynet-revisited §3.6, Fig. 4): the engine maps each packet to an
/// instance (`map`, keyed by queue and masked flow key) and the pipe
/// offers it to the scheduler in that instance's [`FlowSlot`].
#[derive(Debug)]
pub(crate) struct SchedQueues {
    pub s: Sched,
    pub cfg: SchedConfig,
    /// (queue id, masked key or `None` for the overflow instance) → slot.
    /// A `BTreeMap`, so sweeps visit instances in a deterministic order.
    pub map: BTreeMap<(u32, Option<FlowKey>), u32>,
    /// Per slot, live or free.
    pub slots: Vec<SlotInfo>,
    /// Free slots, reused last-freed first.
    pub free: Vec<u32>,
    /// Live instances per queue id (overflow instances not counted).
    pub counts: Vec<u32>,
    /// When idle instances were last swept.
    pub last_sweep: Instant,
    /// The scheduler drops packets when the link takes one (fq_codel), or
    /// an instance has CoDel: the pipe must wake at the end of each
    /// transmission to report them.
    wake_at_tx_end: bool,
    /// Some instance has had a queue management deciding at dequeue
    /// (CoDel): the link takes packets through `dequeue_with`.
    head_aqm: bool,
}

impl SchedQueues {
    fn new(cfg: SchedConfig) -> SchedQueues {
        let s = Sched::new(&cfg);
        SchedQueues {
            wake_at_tx_end: s.drops_at_dequeue(),
            s,
            cfg,
            map: BTreeMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            counts: Vec::new(),
            last_sweep: Instant::ZERO,
            head_aqm: false,
        }
    }

    /// Create the instance of `queue` for `key` in a free slot, with its
    /// queue management (if `spec` has one) drawing from stream `(seed,
    /// aqm_id)`.
    pub fn create(
        &mut self,
        queue: u32,
        key: Option<FlowKey>,
        spec: &FlowSpec,
        now: Instant,
        (seed, aqm_id): (u64, u64),
    ) -> u32 {
        let slot = self.free.pop().unwrap_or(self.slots.len() as u32);
        let aqm = spec
            .aqm()
            .map(|a| FlowAqm::new(*a, spec.ecn(), seed, aqm_id, now));
        if aqm.as_ref().is_some_and(FlowAqm::at_dequeue) {
            self.note_aqm_at_dequeue();
        }
        match self.slots.get_mut(slot as usize) {
            Some(s) => {
                s.live = true;
                s.stats = FlowStats::default();
                s.last_arrival = now;
                s.aqm_id = aqm_id;
                set_aqm(&mut s.aqm, aqm);
            }
            None => self.slots.push(SlotInfo {
                live: true,
                stats: FlowStats::default(),
                last_arrival: now,
                aqm: aqm.map(Box::new),
                aqm_id,
            }),
        }
        self.s.add_flow(FlowSlot(slot), *spec);
        self.map.insert((queue, key), slot);
        if key.is_some() {
            if self.counts.len() <= queue as usize {
                self.counts.resize(queue as usize + 1, 0);
            }
            self.counts[queue as usize] += 1;
        }
        slot
    }

    /// An instance has a queue management deciding at dequeue (CoDel):
    /// from now on the link takes packets through it and the pipe wakes at
    /// each transmission's end to report its drops.
    fn note_aqm_at_dequeue(&mut self) {
        self.head_aqm = true;
        self.wake_at_tx_end = true;
    }

    /// Give every live instance of `queue` `spec`'s weight, limit and
    /// queue management from the next packet, keeping their packets. A
    /// queue management whose configuration is unchanged keeps its state
    /// (only `ecn` follows); a new one starts fresh, as at the instance's
    /// creation.
    pub fn reconfigure_queue(&mut self, queue: u32, spec: &FlowSpec, seed: u64, now: Instant) {
        let mut at_dequeue = false;
        for (&(q, _), &slot) in &self.map {
            if q != queue {
                continue;
            }
            self.s.reweight(FlowSlot(slot), *spec);
            let Some(info) = self.slots.get_mut(slot as usize) else {
                continue;
            };
            match (info.aqm.as_deref_mut(), spec.aqm()) {
                (Some(a), Some(c)) if a.config() == c => a.set_ecn(spec.ecn()),
                (_, Some(c)) => {
                    let fresh = FlowAqm::new(*c, spec.ecn(), seed, info.aqm_id, now);
                    set_aqm(&mut info.aqm, Some(fresh));
                }
                (_, None) => info.aqm = None,
            }
            at_dequeue |= info.aqm.as_deref().is_some_and(FlowAqm::at_dequeue);
        }
        if at_dequeue {
            self.note_aqm_at_dequeue();
        }
    }

    /// Live instances of `queue` (its overflow instance aside).
    pub fn count(&self, queue: u32) -> u32 {
        self.counts.get(queue as usize).copied().unwrap_or(0)
    }

    /// Free every instance (of `only` queue, or of all) that holds no
    /// packet and has had no arrival for `idle`; `retire(queue, stats)` is
    /// called for each, in key order.
    pub fn sweep(
        &mut self,
        now: Instant,
        idle: Duration,
        only: Option<u32>,
        retire: &mut dyn FnMut(u32, &FlowStats),
    ) {
        let SchedQueues {
            s,
            map,
            slots,
            free,
            counts,
            ..
        } = self;
        map.retain(|&(q, key), &mut slot| {
            if only.is_some_and(|o| o != q) {
                return true;
            }
            let info = &mut slots[slot as usize];
            if info.stats.backlog > 0 || now - info.last_arrival < idle {
                return true;
            }
            if !s.remove_idle(FlowSlot(slot)) {
                return true;
            }
            info.live = false;
            retire(q, &info.stats);
            free.push(slot);
            if key.is_some() {
                if let Some(c) = counts.get_mut(q as usize) {
                    *c -= 1;
                }
            }
            false
        });
    }
}

/// Put `aqm` in `slot`, reusing its box.
fn set_aqm(slot: &mut Option<Box<FlowAqm>>, aqm: Option<FlowAqm>) {
    match (slot.as_deref_mut(), aqm) {
        (Some(b), Some(a)) => *b = a,
        (_, a) => *slot = a.map(Box::new),
    }
}

/// CoDel on a flow queue instance, as the head filter of
/// `Scheduler::dequeue_with` when the link takes packet `i` at `at` with
/// `behind` bytes waiting behind it in its flow queue (as the scheduler
/// counts them; FIFO does not, then the instance's counters do): a packet
/// CoDel drops goes to `dropped` (reported at `at`), counted in the
/// instance's and the pipe's counters; an ECN-capable one is marked CE and
/// sent if the queue has `ecn`. `true`: the packet was dropped.
#[inline]
fn codel_head(
    slots: &mut [SlotInfo],
    dropped: &mut List,
    stats: &mut PipeStats,
    pool: &mut Pool,
    i: u32,
    behind: Option<u64>,
    at: Instant,
) -> bool {
    let (slot, len, arrival, flags) = {
        let s = pool.get(i);
        (s.qslot, s.pkt.len, s.arrival, s.pkt.flags)
    };
    let Some(info) = slots.get_mut(slot as usize) else {
        return false;
    };
    let Some(a) = info.aqm.as_deref_mut() else {
        return false;
    };
    let st = &mut info.stats;
    // The scheduler's count is exact even when fq_codel has just dropped
    // packets of this flow that the counters have not seen yet.
    let behind = behind.unwrap_or(st.backlog_bytes.saturating_sub(len as u64));
    if !a.on_head(at, at - arrival, behind) {
        return false;
    }
    if a.ecn() && flags & Packet::ECT != 0 {
        pool.get_mut(i).pkt.flags |= Packet::CE;
        st.ecn_marks += 1;
        stats.ecn_marks += 1;
        return false;
    }
    st.backlog = st.backlog.saturating_sub(1);
    st.backlog_bytes = st.backlog_bytes.saturating_sub(len as u64);
    st.aqm_drops += 1;
    a.on_removed(at, st.backlog);
    stats.aqm_drops += 1;
    pool.get_mut(i).due = at;
    dropped.push_back(pool, i);
    true
}

/// Why a pipe refused (at arrival) or dropped (later) a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The queue was full (tail drop).
    QueueFull,
    /// The loss model dropped it.
    Loss,
    /// Active queue management dropped it (RED/GRED/PIE at arrival, CoDel
    /// when the link took it).
    Aqm,
    /// Lost on the link (MAC profile), after its airtime.
    Link,
}

/// The stateful models of a pipe, built from its config and seed.
#[derive(Debug, Default)]
struct Models {
    delay: Option<DelayModel>,
    loss: Option<LossModel>,
    duplicate: Option<DuplicateModel>,
    reorder: Option<NetemReorder>,
    swap: Option<SwapReorder>,
    corrupt: Option<CorruptModel>,
    red: Option<Red>,
    codel: Option<Codel>,
    pie: Option<Pie>,
    profile: Option<ProfileModel>,
    trace: Option<TraceLink>,
    burst: Option<Burst>,
    /// A wireless and/or time-varying link (`models::channel`).
    channel: Option<Box<Channel>>,
    /// netem's slots, gating the delay line's exit (`models::slot`).
    slot: Option<SlotModel>,
    /// The link rate (`PipeConfig::link_rate`).
    rate: Rate,
    /// RED's typical packet time at `rate` (idle-time decay).
    red_tx: Duration,
}

impl Models {
    fn new(cfg: &PipeConfig, seed: u64, stage: u64) -> Models {
        // netem's `seed`: the pipe's own, whatever the emulation's.
        let seed = cfg.seed().unwrap_or(seed);
        let rate = cfg.link_rate();
        let aqm_rng = || stage_rng(seed, StageKind::Aqm, stage);
        let (mut red, mut codel, mut pie) = (None, None, None);
        match cfg.aqm() {
            Some(Aqm::Red(r)) => red = Some(Red::new(*r, aqm_rng())),
            Some(Aqm::Codel(c)) => codel = Some(Codel::new(*c)),
            Some(Aqm::Pie(p)) => pie = Some(Pie::new(*p, aqm_rng())),
            None => {}
        }
        Models {
            red,
            codel,
            pie,
            profile: cfg
                .profile()
                .map(|p| ProfileModel::new(p.clone(), stage_rng(seed, StageKind::Link, stage))),
            // Opportunities count from the engine's epoch, so a trace is
            // aligned the same way in every run and after reconfiguration.
            trace: cfg
                .bw_trace()
                .map(|t| TraceLink::new(t.clone(), Instant::ZERO)),
            burst: cfg.burst().map(|b| Burst::new(*b, rate)),
            channel: Channel::for_config(cfg, seed, stage).map(Box::new),
            slot: cfg.slot().map(|c| {
                SlotModel::new(
                    c.clone(),
                    stage_rng(seed, StageKind::Link, stage ^ (1 << 62)),
                )
            }),
            rate,
            red_tx: RedConfig::typical_tx_time(rate),
            delay: cfg
                .jitter()
                .map(|d| DelayModel::new(d.clone(), stage_rng(seed, StageKind::Delay, stage))),
            loss: cfg
                .loss()
                .map(|l| LossModel::new(l.clone(), stage_rng(seed, StageKind::Loss, stage))),
            duplicate: cfg
                .duplicate()
                .map(|d| DuplicateModel::new(*d, stage_rng(seed, StageKind::Duplicate, stage))),
            reorder: cfg
                .reorder()
                .map(|r| NetemReorder::new(*r, stage_rng(seed, StageKind::Reorder, stage))),
            swap: cfg.swap().map(|s| {
                SwapReorder::new(*s, stage_rng(seed, StageKind::Reorder, stage ^ (1 << 63)))
            }),
            corrupt: cfg
                .corrupt()
                .map(|c| CorruptModel::new(*c, stage_rng(seed, StageKind::Corrupt, stage))),
        }
    }
}

/// The delay line: a FIFO when packets keep their order, a min-heap on
/// `(exit time, sequence)` when they may overtake each other.
///
/// The FIFO keeps its front packet's exit time (`front`, valid while the
/// list is not empty), so the pipe's deadline is read without touching
/// the pool: a packet's `due` is set before it enters the line and not
/// changed while it is in it.
#[derive(Debug)]
enum DelayLine {
    Fifo {
        list: List,
        front: Instant,
    },
    Sorted {
        heap: BinaryHeap<Reverse<(Instant, u64, u32)>>,
        seq: u64,
    },
}

impl DelayLine {
    fn for_config(cfg: &PipeConfig) -> DelayLine {
        if cfg.may_reorder() {
            DelayLine::Sorted {
                heap: BinaryHeap::with_capacity(64),
                seq: 0,
            }
        } else {
            DelayLine::Fifo {
                list: List::default(),
                front: Instant::ZERO,
            }
        }
    }

    #[inline(always)]
    fn push(&mut self, pool: &mut Pool, i: u32) {
        match self {
            DelayLine::Fifo { list, front } => {
                if list.is_empty() {
                    *front = pool.get(i).due;
                }
                list.push_back(pool, i);
            }
            DelayLine::Sorted { heap, seq } => Self::push_sorted(heap, seq, pool, i),
        }
    }

    /// [`DelayLine::push`] into a sorted line (out of line: the FIFO's
    /// push stays small enough to inline).
    #[inline(never)]
    fn push_sorted(
        heap: &mut BinaryHeap<Reverse<(Instant, u64, u32)>>,
        seq: &mut u64,
        pool: &Pool,
        i: u32,
    ) {
        heap.push(Reverse((pool.get(i).due, *seq, i)));
        *seq += 1;
    }

    #[inline]
    fn front_due(&self) -> Option<Instant> {
        match self {
            DelayLine::Fifo { list, front } => (!list.is_empty()).then_some(*front),
            DelayLine::Sorted { heap, .. } => heap.peek().map(|r| r.0 .0),
        }
    }

    #[inline]
    fn pop(&mut self, pool: &mut Pool) -> Option<u32> {
        match self {
            DelayLine::Fifo { list, front } => {
                let i = list.pop_front(pool)?;
                if let Some(h) = list.front() {
                    *front = pool.get(h).due;
                }
                Some(i)
            }
            DelayLine::Sorted { heap, .. } => heap.pop().map(|r| r.0 .2),
        }
    }

    fn len(&self) -> u32 {
        match self {
            DelayLine::Fifo { list, .. } => list.len(),
            DelayLine::Sorted { heap, .. } => heap.len() as u32,
        }
    }

    /// Move every packet into a line of the other kind (reconfiguration).
    fn convert(&mut self, pool: &mut Pool, to: DelayLine) {
        let mut next = to;
        while let Some(i) = self.pop(pool) {
            next.push(pool, i);
        }
        *self = next;
    }
}

/// A pipe's state. Its configuration is immutable and swapped whole on
/// reconfiguration; queued packets are kept.
///
/// The fields every packet touches (queue, link, delay line, event, the
/// memo, copies of the rate, delay, queue bound and accounting, the
/// counters) come first, in declaration order (`repr(C)`), within 448
/// bytes; the models, the scheduler and the configuration (most of the
/// ≈ 3 KB) after them (`tests::hot_fields_lead`). Aligning the pipe to a
/// cache line measured slower (BENCHMARKS.md).
#[derive(Debug)]
#[repr(C)]
pub struct Pipe {
    queue: List,
    /// When the head of the queue finishes transmission (valid while the
    /// queue is not empty).
    tx_done: Instant,
    /// When the link last became free, and the sub-nanosecond remainder of
    /// that instant in units of `1/B` ns (see `Rate::tx_time`).
    link_free_at: Instant,
    tx_carry: u64,
    /// Latest exit time given to a packet (for `jitter-order keep`).
    last_due: Instant,
    delay_line: DelayLine,
    /// The pipe's live entry in the engine's event queue: (time, seq).
    pub(crate) scheduled: Option<(Instant, u64)>,
    /// The last transmission time computed: `(rate, wire bytes, carry
    /// in)` → `(time, carry out)`. Packets of one size back to back ask
    /// the same question again and again; the answer is the same
    /// division's, without dividing.
    tx_memo: TxMemo,
    /// `models.rate`, `cfg.delay()`, `cfg.queue()` and `cfg.accounting()`,
    /// next to the state they act on. Follow `cfg` (`Pipe::note_wake`).
    rate: Rate,
    delay: Duration,
    queue_limit: QueueLimit,
    accounting: Accounting,
    /// Packets dropped by CoDel and lost on the link, waiting to leave
    /// through `step`; each with its drop instant in `due`, in time order.
    aqm_dropped: List,
    link_dropped: List,
    /// A plain pipe: a FIFO queue, a link at `models.rate` and a fixed
    /// delay, no stage, no scheduler and no netem `limit`. Its arrivals,
    /// transmissions and exit times take the fast path (no model is
    /// asked, because there is none). Follows `models`, `sched` and
    /// `cfg`; independent of `early`.
    plain: bool,
    /// Early exit (`Engine::set_early_exit`): wake at each transmission's
    /// end and let every packet of the delay line out at once, its exit
    /// instant in `due`. Set with [`Pipe::set_early`].
    pub(crate) early: bool,
    /// A stage of the models decides at the end of each transmission, or
    /// the pipe is an early-exit one: the pipe wakes then
    /// (`Pipe::next_deadline`). Follows `models` and `early`.
    wake_at_tx_end: bool,
    /// The packet being transmitted will be lost on the link (MAC profile).
    head_lost: bool,
    /// The last arrival (idle expiry of dynamic pipe instances).
    pub(crate) last_arrival: Instant,
    stats: PipeStats,
    // The cold part: read by the stages a plain pipe does not have, or
    // on reconfiguration.
    /// The scheduler and its flow queues; `None` for a plain FIFO pipe,
    /// whose queue is `queue` itself (the fast path). With a scheduler,
    /// `queue` holds only the packet on the wire.
    pub(crate) sched: Option<Box<SchedQueues>>,
    /// PIE's queue delay: the sojourn of the last packet the link took.
    last_qdelay: Duration,
    seed: u64,
    stage: u64,
    models: Models,
    cfg: PipeConfig,
}

/// A memo of [`Rate::tx_time`]: its arguments and its results.
#[derive(Clone, Copy, Debug, Default)]
struct TxMemo {
    bps: u64,
    wire: u64,
    carry_in: u64,
    time: Duration,
    carry_out: u64,
}

impl TxMemo {
    /// `rate.tx_time(wire, carry)`, from the memo when it holds the same
    /// arguments.
    #[inline]
    fn tx_time(&mut self, rate: Rate, wire: u64, carry: &mut u64) -> Duration {
        if self.bps == rate.0 && self.wire == wire && self.carry_in == *carry && rate.0 != 0 {
            *carry = self.carry_out;
            return self.time;
        }
        let carry_in = *carry;
        let time = rate.tx_time(wire, carry);
        *self = TxMemo {
            bps: rate.0,
            wire,
            carry_in,
            time,
            carry_out: *carry,
        };
        time
    }
}

impl Pipe {
    /// An idle pipe whose random stages are seeded from `(seed, stage)`.
    pub fn new(cfg: PipeConfig, seed: u64, stage: u64) -> Pipe {
        Pipe {
            models: Models::new(&cfg, seed, stage),
            delay_line: DelayLine::for_config(&cfg),
            rate: cfg.link_rate(),
            delay: cfg.delay(),
            queue_limit: cfg.queue(),
            accounting: cfg.accounting(),
            cfg,
            queue: List::default(),
            tx_done: Instant::ZERO,
            link_free_at: Instant::ZERO,
            tx_carry: 0,
            last_due: Instant::ZERO,
            seed,
            stage,
            stats: PipeStats::default(),
            head_lost: false,
            last_qdelay: Duration::ZERO,
            aqm_dropped: List::default(),
            link_dropped: List::default(),
            scheduled: None,
            sched: None,
            last_arrival: Instant::ZERO,
            early: false,
            wake_at_tx_end: false,
            plain: false,
            tx_memo: TxMemo::default(),
        }
        .with_wake()
    }

    /// With `wake_at_tx_end` computed from the models and `early`.
    fn with_wake(mut self) -> Pipe {
        self.note_wake();
        self
    }

    fn note_wake(&mut self) {
        self.rate = self.models.rate;
        self.delay = self.cfg.delay();
        self.queue_limit = self.cfg.queue();
        self.accounting = self.cfg.accounting();
        let m = &self.models;
        self.wake_at_tx_end = self.early
            || m.delay.is_some()
            || m.reorder.is_some()
            || m.codel.is_some()
            || m.profile.is_some()
            || m.channel.is_some();
        // Every field of `Models` but the rate (and RED's packet time,
        // used by RED only): adding a stage means adding it here.
        let Models {
            delay,
            loss,
            duplicate,
            reorder,
            swap,
            corrupt,
            red,
            codel,
            pie,
            profile,
            trace,
            burst,
            channel,
            slot,
            rate: _,
            red_tx: _,
        } = m;
        self.plain = delay.is_none()
            && loss.is_none()
            && duplicate.is_none()
            && reorder.is_none()
            && swap.is_none()
            && corrupt.is_none()
            && red.is_none()
            && codel.is_none()
            && pie.is_none()
            && profile.is_none()
            && trace.is_none()
            && burst.is_none()
            && channel.is_none()
            && slot.is_none()
            && self.sched.is_none()
            && self.cfg.limit().is_none();
    }

    /// A plain pipe: [`Pipe::enqueue_plain`] takes its arrivals.
    #[inline(always)]
    pub(crate) fn is_plain(&self) -> bool {
        self.plain
    }

    /// Make the pipe an early-exit one (`true`) or not.
    pub(crate) fn set_early(&mut self, on: bool) {
        self.early = on;
        self.note_wake();
    }

    /// An idle pipe whose link is served by the scheduler `sched`
    /// (dummynet's enqueue → scheduler → serve → delay line). The pipe's
    /// own `queue` bound no longer applies: each flow queue has its own.
    pub fn with_sched(cfg: PipeConfig, sched: SchedConfig, seed: u64, stage: u64) -> Pipe {
        Pipe {
            sched: Some(Box::new(SchedQueues::new(sched))),
            ..Pipe::new(cfg, seed, stage)
        }
        .with_wake()
    }

    /// The scheduler's configuration, if the pipe has one.
    pub fn sched_config(&self) -> Option<&SchedConfig> {
        self.sched.as_ref().map(|s| &s.cfg)
    }

    /// Packets and bytes waiting: in the queue (the one on the wire
    /// included) and in the scheduler's flow queues.
    #[inline]
    fn waiting(&self) -> (u32, u64) {
        let (p, b) = match &self.sched {
            Some(sq) => sq.s.backlog(),
            None => (0, 0),
        };
        (self.queue.len() + p, self.queue.bytes() + b)
    }

    /// True when the pipe holds no packet at all and has no event.
    pub(crate) fn is_idle(&self) -> bool {
        !self.holds_packets() && self.scheduled.is_none()
    }

    /// Does it hold a packet: waiting, on the wire, in the delay line, or
    /// dropped inside it and not yet reported?
    pub(crate) fn holds_packets(&self) -> bool {
        self.waiting().0 > 0
            || self.delay_line.len() > 0
            || !self.aqm_dropped.is_empty()
            || !self.link_dropped.is_empty()
    }

    /// With a scheduler and nothing on the wire: take the next packet from
    /// the scheduler at `at` (and collect what its AQM dropped).
    #[inline]
    fn refill(&mut self, pool: &mut Pool, at: Instant) {
        let Some(sq) = self.sched.as_deref_mut() else {
            return;
        };
        if !self.queue.is_empty() {
            return;
        }
        let next = if sq.head_aqm {
            let SchedQueues { s, slots, .. } = sq;
            let (dropped, stats) = (&mut self.aqm_dropped, &mut self.stats);
            s.dequeue_with(pool, at, &mut |pool: &mut Pool, i: u32, behind| {
                codel_head(slots, dropped, stats, pool, i, behind, at)
            })
        } else {
            sq.s.dequeue(pool, at)
        };
        if let Dequeue::Packet(i) = next {
            let (slot, len, arrival) = {
                let s = pool.get(i);
                (s.qslot, s.pkt.len, s.arrival)
            };
            // fq_codel's or fq_pie's `ecn` marked it instead of dropping.
            let marked = sq.s.take_mark();
            if marked {
                self.stats.ecn_marks += 1;
            }
            if let Some(info) = sq.slots.get_mut(slot as usize) {
                let st = &mut info.stats;
                if marked {
                    st.ecn_marks += 1;
                }
                st.backlog = st.backlog.saturating_sub(1);
                st.backlog_bytes = st.backlog_bytes.saturating_sub(len as u64);
                st.served += 1;
                st.served_bytes += len as u64;
                if let Some(a) = info.aqm.as_deref_mut() {
                    a.on_served(at, at - arrival, st.backlog);
                }
            }
            self.queue.push_back(pool, i);
        }
        // `WakeAt` (no built-in returns it) is treated as `Empty`: the
        // next arrival or transmission end asks again.
        while let Some(d) = sq.s.pop_dropped(pool) {
            let (slot, len) = {
                let s = pool.get_mut(d);
                s.due = at;
                (s.qslot, s.pkt.len)
            };
            if let Some(info) = sq.slots.get_mut(slot as usize) {
                let st = &mut info.stats;
                st.backlog = st.backlog.saturating_sub(1);
                st.backlog_bytes = st.backlog_bytes.saturating_sub(len as u64);
                st.aqm_drops += 1;
                if let Some(a) = info.aqm.as_deref_mut() {
                    a.on_removed(at, st.backlog);
                }
            }
            self.aqm_dropped.push_back(pool, d);
            self.stats.aqm_drops += 1;
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &PipeConfig {
        &self.cfg
    }

    /// Swap in a new configuration. Queued packets are kept; the packet
    /// being transmitted finishes at the old rate and the new bandwidth and
    /// delay apply from the next transmission (packets already in the delay
    /// line keep their exit time).
    ///
    /// The models restart from the pipe's seed, so a reconfiguration is as
    /// reproducible as the initial configuration.
    pub(crate) fn reconfigure(&mut self, pool: &mut Pool, cfg: PipeConfig, now: Instant) {
        // Transmissions that ended by `now` took the old parameters: settle
        // them first (they are otherwise settled lazily, later).
        self.catch_up(pool, now);
        if cfg.may_reorder() != self.cfg.may_reorder() {
            let to = DelayLine::for_config(&cfg);
            self.delay_line.convert(pool, to);
        }
        self.models = Models::new(&cfg, self.seed, self.stage);
        self.cfg = cfg;
        self.note_wake();
    }

    /// Counters.
    pub fn stats(&self) -> &PipeStats {
        &self.stats
    }

    /// Offer packet `i` (already in `pool`) to the pipe at `now`.
    ///
    /// Precondition: the engine has served this pipe up to `now`.
    ///
    /// Returns `Ok(true)` when the duplication model asks for a copy: the
    /// engine then offers a copy flagged [`Packet::DUPLICATE`] right after.
    #[inline]
    pub(crate) fn enqueue(
        &mut self,
        pool: &mut Pool,
        i: u32,
        now: Instant,
    ) -> Result<bool, Refusal> {
        let (len, flags) = {
            let p = &pool.get(i).pkt;
            (p.len, p.flags)
        };
        if self.plain {
            self.catch_up_plain(pool, now);
        } else {
            self.catch_up(pool, now);
        }
        self.last_arrival = now;
        self.stats.arrivals += 1;
        self.stats.arrival_bytes += len as u64;
        if self.plain {
            // No loss, duplication, corruption, limit, AQM or scheduler:
            // the tail of the general path below.
            return self.admit(pool, i, now, len).map(|()| false);
        }
        let ecn_capable = self.cfg.ecn() && flags & Packet::ECT != 0;
        let state_loss = self.models.channel.as_deref_mut().and_then(|c| {
            c.sync(now);
            c.state_loss()
        });
        let lost = match (state_loss, &mut self.models.loss) {
            (Some(lost), _) => Some(lost),
            (None, Some(l)) => Some(l.lose(now)),
            (None, None) => None,
        };
        if let Some(lost) = lost {
            if lost {
                if ecn_capable {
                    pool.get_mut(i).pkt.flags |= Packet::CE;
                    self.stats.ecn_marks += 1;
                } else {
                    self.stats.loss_drops += 1;
                    return Err(Refusal::Loss);
                }
            }
        }
        let dup = flags & Packet::DUPLICATE == 0
            && self
                .models
                .duplicate
                .as_mut()
                .is_some_and(|d| d.duplicate());
        if let Some(c) = &mut self.models.corrupt {
            if c.corrupt_len(len as usize) > 0 {
                pool.get_mut(i).pkt.flags |= Packet::CORRUPT;
                self.stats.corrupted += 1;
            }
        }
        if dup {
            self.stats.duplicated += 1;
        }
        if let Some(limit) = self.cfg.limit() {
            // netem's limit: everything the pipe holds, delay line included.
            if self.waiting().0 + self.delay_line.len() >= limit {
                self.stats.drops += 1;
                self.stats.drop_bytes += len as u64;
                return Err(Refusal::QueueFull);
            }
        }
        if self.early_drop(now, len) {
            if ecn_capable {
                pool.get_mut(i).pkt.flags |= Packet::CE;
                self.stats.ecn_marks += 1;
            } else {
                self.stats.aqm_drops += 1;
                return Err(Refusal::Aqm);
            }
        }
        if let Some(sq) = self.sched.as_deref_mut() {
            let slot = pool.get(i).qslot;
            let Some(info) = sq.slots.get_mut(slot as usize) else {
                self.stats.drops += 1;
                self.stats.drop_bytes += len as u64;
                return Err(Refusal::QueueFull);
            };
            info.last_arrival = now;
            let st = &mut info.stats;
            st.arrivals += 1;
            st.arrival_bytes += len as u64;
            if let Some(a) = info.aqm.as_deref_mut() {
                // The flow queue's own RED/PIE, on this instance's backlog.
                if a.on_arrival(now, len, st.backlog, st.backlog_bytes, self.models.red_tx) {
                    if a.ecn() && flags & Packet::ECT != 0 {
                        pool.get_mut(i).pkt.flags |= Packet::CE;
                        st.ecn_marks += 1;
                        self.stats.ecn_marks += 1;
                    } else {
                        st.aqm_drops += 1;
                        self.stats.aqm_drops += 1;
                        return Err(Refusal::Aqm);
                    }
                }
            }
            if sq.s.enqueue(pool, FlowSlot(slot), i, now).is_err() {
                st.drops += 1;
                self.stats.drops += 1;
                self.stats.drop_bytes += len as u64;
                return Err(Refusal::QueueFull);
            }
            st.backlog += 1;
            st.backlog_bytes += len as u64;
            st.max_backlog = st.max_backlog.max(st.backlog);
            let was_idle = self.queue.is_empty();
            if was_idle {
                self.start_tx(pool, now);
            }
            self.note_backlog();
            return Ok(dup);
        }
        self.admit(pool, i, now, len).map(|()| dup)
    }

    /// [`Pipe::enqueue`] for a plain pipe (`plain`), in line: settle,
    /// count the arrival, admit (no model to ask, no copy to make).
    #[inline(always)]
    pub(crate) fn enqueue_plain(
        &mut self,
        pool: &mut Pool,
        i: u32,
        now: Instant,
    ) -> Result<(), Refusal> {
        debug_assert!(self.plain);
        let len = pool.get(i).pkt.len;
        self.catch_up_plain(pool, now);
        self.last_arrival = now;
        self.stats.arrivals += 1;
        self.stats.arrival_bytes += len as u64;
        self.admit(pool, i, now, len)
    }

    /// The FIFO queue's tail drop, then packet `i` (`len` bytes) joins
    /// the queue at `now`; the link takes it if it was idle.
    #[inline(always)]
    fn admit(&mut self, pool: &mut Pool, i: u32, now: Instant, len: u32) -> Result<(), Refusal> {
        if !self
            .queue_limit
            .admits(self.queue.len(), self.queue.bytes(), len)
        {
            self.stats.drops += 1;
            self.stats.drop_bytes += len as u64;
            return Err(Refusal::QueueFull);
        }
        pool.get_mut(i).arrival = now;
        let was_idle = self.queue.is_empty();
        self.queue.push_back(pool, i);
        self.note_backlog();
        if was_idle {
            if self.plain {
                self.start_tx_plain(pool, now);
            } else {
                self.start_tx(pool, now);
            }
        }
        Ok(())
    }

    /// RED/GRED or PIE's verdict on an arriving packet of `len` bytes:
    /// `true` = drop it.
    #[inline]
    fn early_drop(&mut self, now: Instant, len: u32) -> bool {
        let (pkts, bytes) = self.waiting();
        if let Some(r) = &mut self.models.red {
            let q = match r.config().measure() {
                QueueMeasure::Slots => pkts as u64,
                QueueMeasure::Bytes => bytes,
            };
            // An empty queue has been empty since the link last went free.
            let idle_since = (pkts == 0).then_some(self.link_free_at);
            return r.on_enqueue(now, q, len, idle_since, self.models.red_tx);
        }
        if let Some(p) = &mut self.models.pie {
            return p.on_enqueue(now, self.last_qdelay, bytes, LINK_MTU);
        }
        false
    }

    /// The link takes the head of the queue, no earlier than `now`: swap,
    /// CoDel, then the transmission (its end in `tx_done`).
    #[inline]
    fn start_tx(&mut self, pool: &mut Pool, now: Instant) {
        if self.plain {
            self.start_tx_plain(pool, now);
            return;
        }
        if self.sched.is_some() {
            // The scheduler decides at the instant the link takes a packet.
            let at = now.max(self.link_free_at);
            self.refill(pool, at);
        }
        if let Some(s) = &mut self.models.swap {
            if s.swap(self.queue.len() as usize) && self.queue.swap_front_two(pool) {
                if let Some(h) = self.queue.front() {
                    pool.get_mut(h).pkt.flags |= Packet::REORDERED;
                }
                self.stats.reordered += 1;
            }
        }
        let start = if now > self.link_free_at {
            // The link was idle: the remainder of the last transmission is
            // irrelevant to a transmission that starts later.
            self.tx_carry = 0;
            now
        } else {
            self.link_free_at
        };
        if self.models.codel.is_some() {
            // RFC 8289's dequeue loop: drop head packets while CoDel says so.
            loop {
                // With a scheduler, the next head comes from it.
                self.refill(pool, start);
                let Some(c) = &mut self.models.codel else {
                    break;
                };
                let Some(h) = self.queue.front() else {
                    c.on_empty();
                    break;
                };
                let (arrival, len) = {
                    let s = pool.get(h);
                    (s.arrival, s.pkt.len)
                };
                let behind = self.queue.bytes() - len as u64
                    + self.sched.as_ref().map_or(0, |sq| sq.s.backlog().1);
                if !c.on_dequeue(start, start - arrival, behind, LINK_MTU) {
                    break;
                }
                if self.cfg.ecn() && pool.get(h).pkt.flags & Packet::ECT != 0 {
                    // RFC 8289: mark instead of dropping, and send it.
                    pool.get_mut(h).pkt.flags |= Packet::CE;
                    self.stats.ecn_marks += 1;
                    break;
                }
                if let Some(i) = self.queue.pop_front(pool) {
                    pool.get_mut(i).due = start;
                    self.aqm_dropped.push_back(pool, i);
                    self.stats.aqm_drops += 1;
                }
            }
        }
        let Some(h) = self.queue.front() else { return };
        let (arrival, len) = {
            let s = pool.get(h);
            (s.arrival, s.pkt.len)
        };
        if self.models.pie.is_some() {
            // Linux's default estimate: this packet's sojourn, or 0 when it
            // leaves the queue empty behind it.
            self.last_qdelay = if self.waiting().0 > 1 {
                start - arrival
            } else {
                Duration::ZERO
            };
        }
        let wire = self.accounting.wire_bytes(len);
        let m = &mut self.models;
        if let Some(c) = m.channel.as_deref_mut() {
            c.sync(start);
            if let Some(radio) = c.radio() {
                // The channel is busy for every attempt; after the last
                // failed one the packet is lost upstream (§4.3).
                let a = radio.transmit(len);
                self.head_lost = !a.delivered;
                self.tx_done = start + a.airtime;
                return;
            }
        }
        let rate = m.channel.as_deref().map_or(m.rate, Channel::rate);
        let done = if let Some(t) = &mut m.trace {
            t.transmit(start, wire)
        } else if let Some(b) = &mut m.burst {
            start + b.tx_time(start, wire, &mut self.tx_carry)
        } else {
            start + self.tx_memo.tx_time(rate, wire, &mut self.tx_carry)
        };
        let (extra, lost) = match &mut m.profile {
            Some(p) => {
                let a = p.draw();
                (a.extra(), a.is_lost())
            }
            None => (Duration::ZERO, false),
        };
        self.head_lost = lost;
        self.tx_done = done + extra;
    }

    /// [`Pipe::start_tx`] for a plain pipe: the general path without the
    /// stages it does not have (scheduler, swap, CoDel, PIE, channel,
    /// trace, burst, profile), which leave it unchanged.
    #[inline(always)]
    fn start_tx_plain(&mut self, pool: &mut Pool, now: Instant) {
        let start = if now > self.link_free_at {
            self.tx_carry = 0;
            now
        } else {
            self.link_free_at
        };
        let Some(h) = self.queue.front() else { return };
        let wire = self.accounting.wire_bytes(pool.get(h).pkt.len);
        self.head_lost = false;
        let rate = self.rate;
        self.tx_done = start + self.tx_memo.tx_time(rate, wire, &mut self.tx_carry);
    }

    /// The next instant at which a packet leaves this pipe.
    ///
    /// Only exits are events. Transmission ends are settled lazily by
    /// [`Pipe::catch_up`] whenever the pipe is touched (an arrival or an
    /// exit), which halves the work of the deadline queue: one event per
    /// packet and pipe. Lazy settling is exact because the caller's contract
    /// (advance to `now` before enqueueing at `now`) guarantees the pipe is
    /// touched before anything could observe its queue.
    #[inline]
    pub(crate) fn next_deadline(&self, pool: &Pool) -> Option<Instant> {
        match self.plain_deadline() {
            Some(d) => d,
            None => self.general_deadline(pool),
        }
    }

    /// [`Pipe::next_deadline`] with its plain answer in line and the
    /// general one called: for an arrival's reschedule, the per-packet
    /// path.
    #[inline(always)]
    pub(crate) fn next_deadline_inline(&self, pool: &Pool) -> Option<Instant> {
        match self.plain_deadline() {
            Some(d) => d,
            None => self.general_deadline_out_of_line(pool),
        }
    }

    /// The next deadline of a plain pipe that is not an early-exit one
    /// and whose drop lists are empty (as they are, unless a
    /// reconfiguration left packets in them): the general answer without
    /// the terms such a pipe lacks (no stage wakes it at a transmission's
    /// end, no slot gates its delay line). `None`: any other pipe, for
    /// [`Pipe::general_deadline`].
    #[inline(always)]
    fn plain_deadline(&self) -> Option<Option<Instant>> {
        if !self.plain
            || self.early
            || !self.aqm_dropped.is_empty()
            || !self.link_dropped.is_empty()
        {
            return None;
        }
        let line = self.delay_line.front_due();
        if self.queue.is_empty() {
            return Some(line);
        }
        let sending = self.tx_done + self.delay;
        Some(Some(line.map_or(sending, |d| d.min(sending))))
    }

    /// [`Pipe::general_deadline`] as a call, kept out of the per-packet
    /// path's code.
    #[inline(never)]
    fn general_deadline_out_of_line(&self, pool: &Pool) -> Option<Instant> {
        self.general_deadline(pool)
    }

    /// [`Pipe::next_deadline`] for any pipe.
    #[inline]
    fn general_deadline(&self, pool: &Pool) -> Option<Instant> {
        // With variable delay the packet being sent may leave as early as
        // the end of its transmission: wake then and let `catch_up` draw.
        // So does a stage that decides at the end of a transmission.
        let sending = (!self.queue.is_empty()).then(|| {
            if self.wake_at_tx_end || self.sched.as_ref().is_some_and(|sq| sq.wake_at_tx_end) {
                self.tx_done
            } else {
                self.tx_done + self.delay
            }
        });
        // An early-exit pipe lets its delay line out at the instant the
        // packets entered it (the end of the last transmission settled);
        // a slotted pipe is never one (`PipeConfig::min_delay`).
        let line = match self.delay_line.front_due() {
            Some(_) if self.early => Some(self.link_free_at),
            Some(d) => Some(match &self.models.slot {
                Some(s) => s.peek(d),
                None => d,
            }),
            None => None,
        };
        let dropped = [
            line,
            self.aqm_dropped.front().map(|i| pool.get(i).due),
            self.link_dropped.front().map(|i| pool.get(i).due),
        ];
        dropped.into_iter().fold(sending, |a, b| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }

    /// Settle every transmission that ended at or before `t`: move the
    /// packet into the delay line (exit = end of transmission + `t_D`) and
    /// start the next one back to back. Out of line: the plain pipe's
    /// steps, the per-packet path, call [`Pipe::catch_up_plain`].
    #[inline(never)]
    fn catch_up(&mut self, pool: &mut Pool, t: Instant) {
        self.catch_up_as::<false>(pool, t);
    }

    /// [`Pipe::catch_up`] for a plain pipe, in line: its exit time and its
    /// next transmission are the plain ones, with no test of the pipe's
    /// kind.
    #[inline(always)]
    fn catch_up_plain(&mut self, pool: &mut Pool, t: Instant) {
        self.catch_up_as::<true>(pool, t);
    }

    /// [`Pipe::catch_up`]; `PLAIN`: the pipe is plain (known at the call).
    #[inline(always)]
    fn catch_up_as<const PLAIN: bool>(&mut self, pool: &mut Pool, t: Instant) {
        while !self.queue.is_empty() && self.tx_done <= t {
            let Some(i) = self.queue.pop_front(pool) else {
                break;
            };
            let done = self.tx_done;
            self.link_free_at = done;
            if core::mem::take(&mut self.head_lost) {
                // A reconfiguration may have left a MAC profile's verdict.
                pool.get_mut(i).due = done;
                self.link_dropped.push_back(pool, i);
                self.stats.link_drops += 1;
            } else {
                let due = if PLAIN {
                    self.plain_exit(done)
                } else {
                    self.exit_time(pool, i, done)
                };
                pool.get_mut(i).due = due;
                self.delay_line.push(pool, i);
            }
            if PLAIN || self.plain {
                self.start_tx_plain(pool, done);
            } else {
                self.start_tx(pool, done);
            }
        }
    }

    /// Settle the transmissions that ended at or before `t` and update the
    /// backlog counters, as the next arrival or event would: a pipe
    /// without a per-packet stage settles them lazily (it wakes for its
    /// delay line only), so its `backlog` may still count packets already
    /// sent. Decides nothing a later settlement would not decide the same.
    pub(crate) fn settle(&mut self, pool: &mut Pool, t: Instant) {
        self.catch_up(pool, t);
        self.note_backlog();
    }

    /// When a plain pipe's packet, transmitted at `done`, leaves the delay
    /// line: no reorder, jitter or channel, so the fixed delay, never
    /// before the packet ahead.
    #[inline(always)]
    fn plain_exit(&mut self, done: Instant) -> Instant {
        let due = (done + self.delay).max(self.last_due);
        self.last_due = due;
        due
    }

    /// When packet `i`, transmitted at `done`, leaves the delay line.
    #[inline]
    fn exit_time(&mut self, pool: &mut Pool, i: u32, done: Instant) -> Instant {
        if self.plain {
            return self.plain_exit(done);
        }
        if let Some(r) = &mut self.models.reorder {
            if r.decide() == ReorderDecision::Immediate {
                pool.get_mut(i).pkt.flags |= Packet::REORDERED;
                self.stats.reordered += 1;
                return done;
            }
        }
        let delay: Duration = match (&mut self.models.delay, self.models.channel.as_deref_mut()) {
            (Some(m), _) => m.sample(),
            (None, Some(c)) => {
                c.sync(done);
                c.delay()
            }
            (None, None) => self.delay,
        };
        let mut due = done + delay;
        if self.cfg.jitter_order() == JitterOrder::Keep || self.models.delay.is_none() {
            // Never before the packet ahead (only a reconfiguration to a
            // shorter delay could otherwise make that happen).
            due = due.max(self.last_due);
        }
        self.last_due = self.last_due.max(due);
        due
    }

    /// Do everything due at or before `t`: settle transmissions, append to
    /// `dropped` the packets dropped inside the pipe (CoDel, lost on the
    /// link) with why, and to `out` the packets that leave the pipe; each
    /// with its instant in the slot's `due`, in time order. Returns the
    /// pipe's next deadline after the step ([`Pipe::next_deadline`]).
    #[inline]
    pub(crate) fn step(
        &mut self,
        pool: &mut Pool,
        t: Instant,
        out: &mut Vec<u32>,
        dropped: &mut Vec<(u32, Refusal)>,
    ) -> Option<Instant> {
        if self.plain {
            self.catch_up_plain(pool, t);
        } else {
            self.catch_up(pool, t);
        }
        if self.plain && self.aqm_dropped.is_empty() && self.link_dropped.is_empty() {
            // The general path below without the terms a plain pipe
            // lacks: nothing to merge (the drop lists are empty unless a
            // reconfiguration left packets in them) and no slot gating
            // the delay line.
            let line = loop {
                match self.delay_line.front_due() {
                    Some(due) if due <= t || self.early => {
                        if let Some(i) = self.delay_line.pop(pool) {
                            self.stats.departures += 1;
                            self.stats.departure_bytes += pool.get(i).pkt.len as u64;
                            out.push(i);
                        }
                    }
                    line => break line,
                }
            };
            self.note_backlog_plain();
            if self.early {
                return self.next_deadline(pool);
            }
            // `next_deadline`'s plain answer, from the delay line's front
            // just read (the drop lists are still empty: a plain pipe's
            // transmissions are never lost).
            if self.queue.is_empty() {
                return line;
            }
            let sending = self.tx_done + self.delay;
            return Some(line.map_or(sending, |d| d.min(sending)));
        }
        // Every packet in the drop lists was dropped at or before `t` (by a
        // catch-up); merge the two lists in time order.
        loop {
            let a = self.aqm_dropped.front().map(|i| pool.get(i).due);
            let l = self.link_dropped.front().map(|i| pool.get(i).due);
            let (list, why) = match (a, l) {
                (Some(a), Some(l)) if l < a => (&mut self.link_dropped, Refusal::Link),
                (Some(_), _) => (&mut self.aqm_dropped, Refusal::Aqm),
                (None, Some(_)) => (&mut self.link_dropped, Refusal::Link),
                (None, None) => break,
            };
            if let Some(i) = list.pop_front(pool) {
                dropped.push((i, why));
            }
        }
        while let Some(due) = self.delay_line.front_due() {
            if due > t && !self.early {
                break;
            }
            // netem's slots: the head leaves at the next opportunity.
            let at = match &mut self.models.slot {
                Some(s) => s.gate(due),
                None => due,
            };
            if at > t && !self.early {
                break;
            }
            if let Some(i) = self.delay_line.pop(pool) {
                if let Some(s) = &mut self.models.slot {
                    s.sent(at, pool.get(i).pkt.len);
                    pool.get_mut(i).due = at;
                }
                let len = pool.get(i).pkt.len as u64;
                self.stats.departures += 1;
                self.stats.departure_bytes += len;
                out.push(i);
            }
        }
        self.note_backlog();
        self.next_deadline(pool)
    }

    /// [`Pipe::note_backlog`] after a plain pipe's step: no scheduler,
    /// and a step only shortens the queue (settled transmissions, exits),
    /// so the maxima stand.
    #[inline(always)]
    fn note_backlog_plain(&mut self) {
        debug_assert!(self.plain && self.sched.is_none());
        let s = &mut self.stats;
        s.backlog = self.queue.len();
        s.backlog_bytes = self.queue.bytes();
        s.in_delay_line = self.delay_line.len();
        debug_assert!(s.backlog <= s.max_backlog && s.backlog_bytes <= s.max_backlog_bytes);
    }

    #[inline]
    fn note_backlog(&mut self) {
        let (pkts, bytes) = self.waiting();
        let s = &mut self.stats;
        s.backlog = pkts;
        s.backlog_bytes = bytes;
        s.in_delay_line = self.delay_line.len();
        s.max_backlog = s.max_backlog.max(s.backlog);
        s.max_backlog_bytes = s.max_backlog_bytes.max(s.backlog_bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves every field a plain pipe's packet touches lies in
    /// the first 448 bytes of the pipe (seven cache lines), ahead of the
    /// models and the configuration that make up most of its size.
    #[test]
    fn hot_fields_lead() {
        use std::mem::{offset_of, size_of};
        let hot = [
            ("queue", offset_of!(Pipe, queue) + size_of::<List>()),
            ("tx_done", offset_of!(Pipe, tx_done) + 8),
            ("link_free_at", offset_of!(Pipe, link_free_at) + 8),
            ("tx_carry", offset_of!(Pipe, tx_carry) + 8),
            ("last_due", offset_of!(Pipe, last_due) + 8),
            (
                "delay_line",
                offset_of!(Pipe, delay_line) + size_of::<DelayLine>(),
            ),
            (
                "scheduled",
                offset_of!(Pipe, scheduled) + size_of::<Option<(Instant, u64)>>(),
            ),
            ("tx_memo", offset_of!(Pipe, tx_memo) + size_of::<TxMemo>()),
            ("rate", offset_of!(Pipe, rate) + 8),
            ("delay", offset_of!(Pipe, delay) + 8),
            (
                "queue_limit",
                offset_of!(Pipe, queue_limit) + size_of::<QueueLimit>(),
            ),
            (
                "accounting",
                offset_of!(Pipe, accounting) + size_of::<Accounting>(),
            ),
            (
                "aqm_dropped",
                offset_of!(Pipe, aqm_dropped) + size_of::<List>(),
            ),
            (
                "link_dropped",
                offset_of!(Pipe, link_dropped) + size_of::<List>(),
            ),
            ("plain", offset_of!(Pipe, plain) + 1),
            ("early", offset_of!(Pipe, early) + 1),
            ("stats", offset_of!(Pipe, stats) + size_of::<PipeStats>()),
        ];
        for (name, end) in hot {
            assert!(end <= 448, "{name} ends at byte {end}");
        }
        assert!(offset_of!(Pipe, models) >= 448 && offset_of!(Pipe, cfg) >= 448);
        assert!(size_of::<Pipe>() > 2048, "{} bytes", size_of::<Pipe>());
    }

    /// A pass proves the memo answers exactly as the division does, in a
    /// stream where arguments repeat (a hit) and change (rate, size or
    /// carry: a miss), the unlimited rate included.
    #[test]
    fn tx_memo_answers_as_the_division() {
        let mut memo = TxMemo::default();
        let (mut c_memo, mut c_div) = (0u64, 0u64);
        let rates = [Rate(10_000_000), Rate(3_000_001), Rate::UNLIMITED, Rate(7)];
        let mut hits = 0;
        for k in 0..4000u64 {
            let rate = rates[(k / 97) as usize % rates.len()];
            let wire = if k % 5 == 0 {
                1500
            } else {
                1000 + (k / 13) % 3
            };
            if k % 31 == 0 {
                // An idle link forgets its remainder.
                c_memo = 0;
                c_div = 0;
            }
            let hit = memo.bps == rate.0 && memo.wire == wire && memo.carry_in == c_memo;
            hits += usize::from(hit && rate.0 != 0);
            let a = memo.tx_time(rate, wire, &mut c_memo);
            let b = rate.tx_time(wire, &mut c_div);
            assert_eq!((a, c_memo), (b, c_div), "packet {k}");
        }
        assert!(hits > 100, "the memo was hit {hits} times");
    }
}
