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
//! Impairment stages, in order (netem's order where netem has them):
//! 1. at arrival: loss (dropped before the queue, counted apart from tail
//!    drops), duplication (the copy is offered to the queue right after the
//!    original and is never duplicated again), corruption (marked; the
//!    bytes are flipped by whoever holds them);
//! 2. when the link takes the next packet: NetPath's swap of the two
//!    packets at the head of the queue;
//! 3. when transmission ends: the delay, fixed or drawn from a distribution;
//!    netem's reorder sends chosen packets with no delay. With
//!    `jitter-order keep` a delayed packet never leaves before the one ahead
//!    of it; with `allow` (or with reordering) the delay line is kept sorted
//!    by exit time, ties in arrival order.
//!
//! A pipe does not know the clock or the other pipes: the engine calls
//! [`Pipe::enqueue`] at arrivals and [`Pipe::step`] at the pipe's deadline.

use crate::config::{JitterOrder, PipeConfig};
use crate::models::{
    CorruptModel, DelayModel, DuplicateModel, LossModel, NetemReorder, ReorderDecision, SwapReorder,
};
use crate::packet::{List, Packet, Pool};
use crate::rng::{stage_rng, StageKind};
use crate::time::{Duration, Instant};
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
}

/// Why a pipe refused a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The queue was full (tail drop).
    QueueFull,
    /// The loss model dropped it.
    Loss,
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
}

impl Models {
    fn new(cfg: &PipeConfig, seed: u64, stage: u64) -> Models {
        Models {
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
#[derive(Debug)]
enum DelayLine {
    Fifo(List),
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
            DelayLine::Fifo(List::default())
        }
    }

    #[inline]
    fn push(&mut self, pool: &mut Pool, i: u32) {
        match self {
            DelayLine::Fifo(l) => l.push_back(pool, i),
            DelayLine::Sorted { heap, seq } => {
                heap.push(Reverse((pool.get(i).due, *seq, i)));
                *seq += 1;
            }
        }
    }

    #[inline]
    fn front_due(&self, pool: &Pool) -> Option<Instant> {
        match self {
            DelayLine::Fifo(l) => l.front().map(|i| pool.get(i).due),
            DelayLine::Sorted { heap, .. } => heap.peek().map(|r| r.0 .0),
        }
    }

    #[inline]
    fn pop(&mut self, pool: &mut Pool) -> Option<u32> {
        match self {
            DelayLine::Fifo(l) => l.pop_front(pool),
            DelayLine::Sorted { heap, .. } => heap.pop().map(|r| r.0 .2),
        }
    }

    fn len(&self) -> u32 {
        match self {
            DelayLine::Fifo(l) => l.len(),
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
#[derive(Debug)]
pub struct Pipe {
    cfg: PipeConfig,
    queue: List,
    /// When the head of the queue finishes transmission (valid while the
    /// queue is not empty).
    tx_done: Instant,
    /// When the link last became free, and the sub-nanosecond remainder of
    /// that instant in units of `1/B` ns (see `Rate::tx_time`).
    link_free_at: Instant,
    tx_carry: u64,
    delay_line: DelayLine,
    /// Latest exit time given to a packet (for `jitter-order keep`).
    last_due: Instant,
    models: Models,
    seed: u64,
    stage: u64,
    stats: PipeStats,
    /// The pipe's live entry in the engine's event queue: (time, seq).
    pub(crate) scheduled: Option<(Instant, u64)>,
}

impl Pipe {
    /// An idle pipe whose random stages are seeded from `(seed, stage)`.
    pub fn new(cfg: PipeConfig, seed: u64, stage: u64) -> Pipe {
        Pipe {
            models: Models::new(&cfg, seed, stage),
            delay_line: DelayLine::for_config(&cfg),
            cfg,
            queue: List::default(),
            tx_done: Instant::ZERO,
            link_free_at: Instant::ZERO,
            tx_carry: 0,
            last_due: Instant::ZERO,
            seed,
            stage,
            stats: PipeStats::default(),
            scheduled: None,
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
    pub(crate) fn reconfigure(&mut self, pool: &mut Pool, cfg: PipeConfig) {
        if cfg.may_reorder() != self.cfg.may_reorder() {
            let to = DelayLine::for_config(&cfg);
            self.delay_line.convert(pool, to);
        }
        self.models = Models::new(&cfg, self.seed, self.stage);
        self.cfg = cfg;
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
        self.catch_up(pool, now);
        self.stats.arrivals += 1;
        self.stats.arrival_bytes += len as u64;
        if let Some(l) = &mut self.models.loss {
            if l.lose(now) {
                self.stats.loss_drops += 1;
                return Err(Refusal::Loss);
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
        if !self
            .cfg
            .queue()
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
            self.start_tx(pool, now);
        }
        Ok(dup)
    }

    /// Start transmitting the head of the queue, no earlier than `now`.
    #[inline]
    fn start_tx(&mut self, pool: &mut Pool, now: Instant) {
        if let Some(s) = &mut self.models.swap {
            if s.swap(self.queue.len() as usize) && self.queue.swap_front_two(pool) {
                if let Some(h) = self.queue.front() {
                    pool.get_mut(h).pkt.flags |= Packet::REORDERED;
                }
                self.stats.reordered += 1;
            }
        }
        let Some(h) = self.queue.front() else { return };
        let start = if now > self.link_free_at {
            // The link was idle: the remainder of the last transmission is
            // irrelevant to a transmission that starts later.
            self.tx_carry = 0;
            now
        } else {
            self.link_free_at
        };
        let len = pool.get(h).pkt.len as u64;
        self.tx_done = start + self.cfg.bw().tx_time(len, &mut self.tx_carry);
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
        // With variable delay the packet being sent may leave as early as
        // the end of its transmission: wake then and let `catch_up` draw.
        let sending = (!self.queue.is_empty()).then(|| {
            if self.models.delay.is_some() || self.models.reorder.is_some() {
                self.tx_done
            } else {
                self.tx_done + self.cfg.delay()
            }
        });
        let delayed = self.delay_line.front_due(pool);
        match (sending, delayed) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Settle every transmission that ended at or before `t`: move the
    /// packet into the delay line (exit = end of transmission + `t_D`) and
    /// start the next one back to back.
    #[inline]
    fn catch_up(&mut self, pool: &mut Pool, t: Instant) {
        while !self.queue.is_empty() && self.tx_done <= t {
            let Some(i) = self.queue.pop_front(pool) else {
                break;
            };
            let done = self.tx_done;
            self.link_free_at = done;
            let due = self.exit_time(pool, i, done);
            pool.get_mut(i).due = due;
            self.delay_line.push(pool, i);
            self.start_tx(pool, done);
        }
    }

    /// When packet `i`, transmitted at `done`, leaves the delay line.
    #[inline]
    fn exit_time(&mut self, pool: &mut Pool, i: u32, done: Instant) -> Instant {
        if let Some(r) = &mut self.models.reorder {
            if r.decide() == ReorderDecision::Immediate {
                pool.get_mut(i).pkt.flags |= Packet::REORDERED;
                self.stats.reordered += 1;
                return done;
            }
        }
        let delay: Duration = match &mut self.models.delay {
            Some(m) => m.sample(),
            None => self.cfg.delay(),
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

    /// Do everything due at or before `t`: settle transmissions, and append
    /// to `out` the packets that leave the pipe (each with its exit time in
    /// the slot's `due`), in exit order.
    #[inline]
    pub(crate) fn step(&mut self, pool: &mut Pool, t: Instant, out: &mut Vec<u32>) {
        self.catch_up(pool, t);
        while let Some(due) = self.delay_line.front_due(pool) {
            if due > t {
                break;
            }
            if let Some(i) = self.delay_line.pop(pool) {
                let len = pool.get(i).pkt.len as u64;
                self.stats.departures += 1;
                self.stats.departure_bytes += len;
                out.push(i);
            }
        }
        self.note_backlog();
    }

    #[inline]
    fn note_backlog(&mut self) {
        let s = &mut self.stats;
        s.backlog = self.queue.len();
        s.backlog_bytes = self.queue.bytes();
        s.in_delay_line = self.delay_line.len();
        s.max_backlog = s.max_backlog.max(s.backlog);
        s.max_backlog_bytes = s.max_backlog_bytes.max(s.backlog_bytes);
    }
}
