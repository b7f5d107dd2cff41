//! The engine: many pipes, routes through them, and one deadline queue.
//!
//! The whole surface is three calls, all taking `now` from the caller:
//!
//! * [`Engine::enqueue`]`(now, packet, route)` offers a packet to the first
//!   pipe of a route and says at once whether it was accepted;
//! * [`Engine::next_deadline`]`()` says when the engine next has work;
//! * [`Engine::advance`]`(now, out)` does all work due up to `now` and appends
//!   to `out` the packets that left their route (delivered) or were dropped
//!   inside it, each stamped with the exact instant it happened.
//!
//! Work is done in `(time, pipe key)` order across all pipes (see
//! "Partitions" below), and a packet leaving
//! one pipe enters the next at its exact exit instant, so results do not
//! depend on how coarsely the caller advances time. The virtual-time driver
//! jumps from deadline to deadline; the real-time driver sleeps until one.
//!
//! Calling convention: time never goes backwards (an earlier `now` is
//! treated as the latest one seen), and the caller advances to `now` before
//! it enqueues at `now`, so that departures due at `now` free their queue
//! slots before arrivals at `now` are admitted.
//!
//! ## Schedulers, queues and dynamic pipes (dummynet-revisited §3.1, §3.6)
//!
//! A pipe added with [`Engine::add_scheduled_pipe`] serves its link from a
//! scheduler ([`crate::sched`]) over *flow queues* instead of one FIFO.
//! Flow queues are ipfw's `queue N`: [`Engine::add_queue`] attaches one to
//! a scheduled pipe with a weight, a limit and an optional [`FlowMask`];
//! [`Engine::enqueue_to_queue`] sends a packet to it. Each distinct masked
//! key gets its own *instance* (a [`FlowSlot`](crate::sched::FlowSlot) of
//! the scheduler), created on the key's first packet. A scheduled pipe
//! also has a default queue (weight 1, the pipe's `queue` limit, no mask),
//! which [`Engine::enqueue`] uses, as ipfw's `pipe N` action does. A flow
//! queue's [`FlowSpec`] may carry queue management (RED/GRED, CoDel, PIE)
//! and `ecn`: each instance runs its own, on its own backlog and sojourn
//! times (dummynet's per-queue RED and AQM), its drops counted as
//! [`DropReason::Aqm`] in the instance's, the queue's and the pipe's
//! counters.
//!
//! [`Engine::set_pipe_mask`] makes a pipe *dynamic* (`pipe N config mask
//! ...`): each masked key gets its own instance of the whole pipe (queue or
//! scheduler, link at the pipe's rate, delay line), an internal pipe
//! created on the key's first packet and seeded from `(seed, stage +
//! (n << 32))`, `n` counting the instances created.
//!
//! ## Reconfiguration
//!
//! A reconciler changes a running engine with [`Engine::reconfigure`] (a
//! pipe's parameters, queued packets kept), [`Engine::reconfigure_queue`]
//! (a flow queue's weight, limit and queue management, from the next
//! packet), and reuses the slots of deleted objects with
//! [`Engine::reset_pipe`] and [`Engine::reset_queue`] once they are idle
//! ([`Engine::pipe_is_idle`], [`Engine::queue_is_idle`]): a retired pipe
//! that is no longer fed drains on its own schedule, observable through
//! [`Engine::pipe_totals`], until it is idle. Indices and routes never
//! change, so nothing that refers to them has to.
//!
//! ## Partitions: the canonical order and early exits
//!
//! Work at one instant is done in a **canonical order**: by time, then by
//! the key of the pipe (`index << 32` for a pipe the caller added,
//! `parent << 32 | n` for the `n`-th instance of a dynamic pipe), never by
//! the order things were scheduled in. Engines built alike (the same
//! pipes added in the same order, the same routes) give every pipe the
//! same key, so several engines can each run a *partition* of the pipes
//! and together do exactly what one engine doing all the work does:
//!
//! * a pipe whose next hop may belong to another engine is made an
//!   **early-exit** pipe ([`Engine::set_early_exit`]): it wakes at the end
//!   of each transmission, decides the packet's exit instant there (the
//!   delay draw), and hands the packet out at once as a [`Handoff`]
//!   stamped with that instant, at least the pipe's smallest delay ahead
//!   (the lookahead that lets the engines run a window of time apart);
//! * the engine owning the next hop takes the hand-off in with
//!   [`Engine::enter`] after [`Engine::advance_before`] has done, at that
//!   instant, the work that comes before the hand-off's key, which is
//!   where the whole engine would have moved the packet on.
//!
//! An early-exit pipe counts a departure when it hands the packet out; its
//! counters match once the run has drained.
//!
//! Instance tables are `BTreeMap`s from masked key to instance, so any
//! sweep over them visits instances in key order and results never depend
//! on hashing. Their rules, after dummynet (`ip_dummynet.c`):
//!
//! * **Bound**: a dynamic object holds at most `max_instances` instances
//!   (the caller passes `16 × buckets`, [`crate::mask::max_instances`]).
//!   A packet with a new key that finds the table full first frees every
//!   instance that holds no packet; if the table is still full the packet
//!   goes to the object's shared *overflow instance* (dummynet's extra
//!   queue `rq[rq_size]`), created like any other and outside the bound,
//!   and is counted in [`InstanceStats::overflow`].
//! * **Idle expiry**: an instance that holds no packet (none queued, on
//!   the wire or in the delay line) and has had no arrival for the idle
//!   expiry (1 s by default, [`Engine::set_idle_expiry`]) is freed by the
//!   next sweep; a sweep runs at an arrival to the object at most once per
//!   idle expiry (dummynet's periodic `expire` pass, driven by arrivals
//!   since the engine has no timer). Freed instances fold their counters
//!   into the object's totals, and their slots (or internal pipes) are
//!   reused by later instances, so an engine whose set of flows is steady
//!   allocates nothing per packet.

use crate::config::PipeConfig;
use crate::event::EventQueue;
use crate::flow_aqm;
use crate::mask::FlowMask;
use crate::packet::{FlowKey, Packet, Pool, NIL};
use crate::pipe::{FlowStats, Pipe, PipeStats, Refusal};
use crate::sched::{FlowSpec, SchedConfig};
use crate::time::{Duration, Instant};
use std::collections::BTreeMap;

/// Index of a pipe inside one engine (dense, from 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PipeIdx(pub u32);

/// Index of a route inside one engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RouteId(pub u32);

/// Index of a flow queue (ipfw `queue N`) inside one engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueId(pub u32);

/// How long an instance must hold no packet and see no arrival before a
/// sweep frees it (see the module documentation).
pub const DEFAULT_IDLE_EXPIRY: Duration = Duration::from_secs(1);

/// The instances of a dynamic object (a masked pipe or queue).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InstanceStats {
    /// Instances alive now (the overflow instance included).
    pub live: u32,
    /// Instances created so far.
    pub created: u64,
    /// Instances freed by idle expiry or to make room.
    pub expired: u64,
    /// Packets sent to the overflow instance because the table was full.
    pub overflow: u64,
}

/// A flow queue's counters: the totals over its instances (expired ones
/// included) and the instance accounting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Totals over every instance the queue ever had.
    pub flows: FlowStats,
    /// Instances.
    pub instances: InstanceStats,
}

/// A flow queue: its pipe, parameters, mask and totals.
#[derive(Debug)]
struct QueueDef {
    pipe: u32,
    spec: FlowSpec,
    mask: FlowMask,
    max: u32,
    /// Counters of expired instances.
    retired: FlowStats,
    inst: InstanceStats,
}

/// The instances of a dynamic pipe.
#[derive(Debug)]
struct Dynamic {
    mask: FlowMask,
    max: u32,
    /// Masked key (`None`: the overflow instance) → internal pipe index.
    map: BTreeMap<Option<FlowKey>, u32>,
    /// Internal pipes of expired instances, for reuse.
    free: Vec<u32>,
    inst: InstanceStats,
    /// Counters of expired instances.
    retired: PipeStats,
    last_sweep: Instant,
}

/// What the engine knows of each entry of `pipes`.
#[derive(Debug)]
struct PipeMeta {
    /// The user's pipe: itself, or the dynamic pipe it is an instance of.
    parent: u32,
    stage: u64,
    /// The queue `enqueue` uses in a scheduled pipe (`NIL`: none; kept by
    /// a reset to a plain pipe, for reuse by a later reset).
    default_queue: u32,
    dynamic: Option<Box<Dynamic>>,
    /// Internal pipes of the instances of a dynamic pipe that was reset,
    /// for reuse by its next mask.
    spare: Vec<u32>,
    /// The pipe's key in the canonical order of events (module
    /// documentation, "Partitions"): `index << 32` for a pipe added by
    /// the caller, `parent << 32 | n` for the `n`-th instance of a
    /// dynamic pipe.
    key: u64,
    /// Exits reported early, as hand-offs (module documentation,
    /// "Partitions"), and how many so far.
    early: bool,
    handoffs: u64,
    /// The black-hole window `[from, until)` of a user pipe
    /// ([`Engine::set_pipe_down`]), if one is set.
    down: Option<(Instant, Instant)>,
    /// Packets refused in that window (they are not arrivals).
    down_drops: u64,
}

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// A pipe's queue was full (tail drop).
    QueueFull,
    /// The engine's descriptor pool was exhausted (global memory cap).
    PoolFull,
    /// A pipe's loss model dropped it.
    Loss,
    /// A pipe's or a flow queue's active queue management dropped it
    /// (RED/GRED/PIE at arrival, CoDel when the link took it), counted
    /// apart from tail drops.
    Aqm,
    /// Lost on the link (MAC profile), after occupying it for its airtime.
    Link,
    /// Refused by a pipe that was down (a black-hole window,
    /// [`Engine::set_pipe_down`]).
    Down,
}

impl DropReason {
    /// Stable lower-case name used in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::QueueFull => "queue",
            DropReason::PoolFull => "memory",
            DropReason::Loss => "loss",
            DropReason::Aqm => "aqm",
            DropReason::Link => "link",
            DropReason::Down => "down",
        }
    }
}

/// The engine's name for a pipe's reason.
#[inline]
fn drop_reason(r: Refusal) -> DropReason {
    match r {
        Refusal::QueueFull => DropReason::QueueFull,
        Refusal::Loss => DropReason::Loss,
        Refusal::Aqm => DropReason::Aqm,
        Refusal::Link => DropReason::Link,
    }
}

/// The immediate answer to [`Engine::enqueue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The packet is inside the engine; it will come out of `advance`.
    Queued,
    /// The packet was refused at the first pipe; the caller still owns it.
    Dropped(DropReason),
}

/// What became of a packet that left the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// It crossed every pipe of its route.
    Delivered,
    /// Not a departure: a duplication model made a copy of this packet at
    /// this pipe. The copy shares the packet's `buf` and will come out of
    /// the engine on its own (delivered or dropped), so a caller that
    /// counts references to buffers adds one here.
    Duplicated {
        /// Where.
        pipe: PipeIdx,
    },
    /// It was dropped inside its route, at this pipe.
    Dropped {
        /// Where.
        pipe: PipeIdx,
        /// Why.
        reason: DropReason,
    },
}

/// A packet leaving the engine, with the exact instant and its fate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Output {
    /// The descriptor, as the caller gave it.
    pub pkt: Packet,
    /// When it left its last pipe, or when it was dropped.
    pub at: Instant,
    /// Delivered or dropped.
    pub fate: Fate,
}

/// Engine-wide tunables.
#[derive(Clone, Copy, Debug)]
pub struct EngineOptions {
    /// Most packets inside the engine at once: the descriptor pool's size.
    /// Arrivals beyond it are dropped as [`DropReason::PoolFull`].
    pub max_packets: u32,
    /// Seed from which every pipe's random stages are derived.
    pub seed: u64,
}

impl Default for EngineOptions {
    fn default() -> Self {
        // 1 Mi descriptors of ~100 bytes: 100 MB of metadata, enough for
        // 1.5 GB of MTU-sized frames in flight.
        EngineOptions {
            max_packets: 1 << 20,
            seed: 1,
        }
    }
}

/// Engine-wide packet accounting: `entered = delivered + dropped + inside`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Packets offered to `enqueue`.
    pub offered: u64,
    /// Packets that crossed their whole route.
    pub delivered: u64,
    /// Packets dropped because a queue was full.
    pub dropped_queue: u64,
    /// Packets dropped because the pool was exhausted.
    pub dropped_memory: u64,
    /// Packets dropped by loss models.
    pub dropped_loss: u64,
    /// Packets dropped by active queue management.
    pub dropped_aqm: u64,
    /// Packets lost on a link (MAC profile).
    pub dropped_link: u64,
    /// Packets refused by a pipe that was down ([`Engine::set_pipe_down`]).
    pub dropped_down: u64,
    /// Copies made by duplication models (each one is also delivered or
    /// dropped, so `offered + entered + duplicated = delivered + dropped +
    /// handed_off + inside`).
    pub duplicated: u64,
    /// Packets that came in by [`Engine::enter`] (hand-offs from another
    /// partition).
    pub entered: u64,
    /// Packets that left by a hand-off ([`Engine::take_handoffs`]).
    pub handed_off: u64,
}

/// A packet leaving an early-exit pipe for its next hop
/// ([`Engine::set_early_exit`]): the driver of a partitioned engine gives
/// it to the engine owning that hop ([`Engine::enter`]) at `at`, in the
/// canonical order `(at, key, seq)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handoff {
    /// The descriptor.
    pub pkt: Packet,
    /// When it leaves the early-exit pipe (and enters its next hop).
    pub at: Instant,
    /// Its route.
    pub route: RouteId,
    /// The hop it enters next.
    pub hop: u16,
    /// The key of the pipe it left.
    pub key: u64,
    /// Its rank among the hand-offs of that pipe.
    pub seq: u64,
}

impl Handoff {
    /// Its place in the canonical order.
    pub fn order(&self) -> (Instant, u64, u64) {
        (self.at, self.key, self.seq)
    }
}

/// Errors in building routes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RouteError {
    /// A route needs at least one pipe.
    Empty,
    /// A route longer than the engine supports.
    TooLong(usize),
    /// A pipe index that does not exist.
    NoSuchPipe(PipeIdx),
    /// A flow queue needs a pipe with a scheduler.
    NoScheduler(PipeIdx),
    /// A flow queue index that does not exist.
    NoSuchQueue(QueueId),
    /// The pipe holds packets (queued, on the wire or in the delay line).
    PipeBusy(PipeIdx),
    /// The flow queue holds packets, or an instance of it cannot be freed
    /// yet (a scheduler still links it).
    QueueBusy(QueueId),
    /// The flow queue is a scheduled pipe's default queue, which goes with
    /// its pipe.
    DefaultQueue(QueueId),
}

impl core::fmt::Display for RouteError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RouteError::Empty => f.write_str("a route needs at least one pipe"),
            RouteError::TooLong(n) => write!(f, "a route of {n} hops is longer than {MAX_HOPS}"),
            RouteError::NoSuchPipe(p) => write!(f, "no pipe with index {}", p.0),
            RouteError::NoScheduler(p) => write!(f, "pipe index {} has no scheduler", p.0),
            RouteError::NoSuchQueue(q) => write!(f, "no flow queue with index {}", q.0),
            RouteError::PipeBusy(p) => write!(f, "pipe index {} still holds packets", p.0),
            RouteError::QueueBusy(q) => write!(f, "flow queue index {} still holds packets", q.0),
            RouteError::DefaultQueue(q) => {
                write!(f, "flow queue index {} is a pipe's default queue", q.0)
            }
        }
    }
}

impl std::error::Error for RouteError {}

/// The longest route, in pipes.
pub const MAX_HOPS: usize = 1024;

#[derive(Clone, Copy, Debug)]
struct Span {
    start: u32,
    len: u16,
}

/// The emulation engine. See the module documentation.
#[derive(Debug)]
pub struct Engine {
    pipes: Vec<Pipe>,
    /// Per entry of `pipes`: parent, stage, default queue, instances.
    meta: Vec<PipeMeta>,
    queues: Vec<QueueDef>,
    idle_expiry: Duration,
    /// Single-hop route of each pipe.
    pipe_route: Vec<RouteId>,
    routes: Vec<Span>,
    hops: Vec<PipeIdx>,
    pool: Pool,
    events: EventQueue,
    now: Instant,
    /// Reused buffer of packets leaving a pipe during one `step`.
    scratch: Vec<u32>,
    /// Reused buffer of packets dropped inside a pipe during one `step`.
    scratch_dropped: Vec<(u32, Refusal)>,
    /// Outputs produced inside `enqueue` (a refused duplicate), handed out
    /// by the next `advance`.
    pending: Vec<Output>,
    /// Early exits of pipes marked with [`Engine::set_early_exit`], taken
    /// by [`Engine::take_handoffs`].
    handoffs: Vec<Handoff>,
    stats: EngineStats,
    seed: u64,
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new(EngineOptions::default())
    }
}

impl Engine {
    /// An engine with no pipes.
    pub fn new(opts: EngineOptions) -> Engine {
        Engine {
            pipes: Vec::new(),
            meta: Vec::new(),
            queues: Vec::new(),
            idle_expiry: DEFAULT_IDLE_EXPIRY,
            pipe_route: Vec::new(),
            routes: Vec::new(),
            hops: Vec::new(),
            pool: Pool::with_capacity(opts.max_packets),
            events: EventQueue::with_capacity(1024),
            now: Instant::ZERO,
            scratch: Vec::with_capacity(1024),
            scratch_dropped: Vec::with_capacity(64),
            pending: Vec::new(),
            handoffs: Vec::new(),
            stats: EngineStats::default(),
            seed: opts.seed,
        }
    }

    /// Add a pipe; it also gets a one-hop route, [`Engine::pipe_route`].
    /// Its random stages are seeded from its index; prefer
    /// [`Engine::add_pipe_with_stage`] with a stable id (the user's pipe
    /// number) so that adding other pipes never changes its draws.
    pub fn add_pipe(&mut self, cfg: PipeConfig) -> PipeIdx {
        let stage = self.pipes.len() as u64;
        self.add_pipe_with_stage(cfg, stage)
    }

    /// Add a pipe whose random stages are seeded from `(seed, stage)`.
    pub fn add_pipe_with_stage(&mut self, cfg: PipeConfig, stage: u64) -> PipeIdx {
        let pipe = Pipe::new(cfg, self.seed, stage);
        self.push_pipe(pipe, stage)
    }

    fn push_pipe(&mut self, pipe: Pipe, stage: u64) -> PipeIdx {
        let idx = PipeIdx(self.pipes.len() as u32);
        self.pipes.push(pipe);
        self.meta.push(PipeMeta {
            parent: idx.0,
            stage,
            default_queue: NIL,
            dynamic: None,
            spare: Vec::new(),
            key: (idx.0 as u64) << 32,
            early: false,
            handoffs: 0,
            down: None,
            down_drops: 0,
        });
        let route = self.push_route(&[idx]);
        self.pipe_route.push(route);
        idx
    }

    /// Add a pipe whose link is served by a scheduler (ipfw `pipe N` with
    /// `sched N config type T`), seeded from `(seed, stage)`. It gets a
    /// default flow queue (weight 1, `cfg`'s queue limit, no mask) that
    /// [`Engine::enqueue`] uses; [`Engine::add_queue`] adds others.
    pub fn add_scheduled_pipe(
        &mut self,
        cfg: PipeConfig,
        sched: SchedConfig,
        stage: u64,
    ) -> PipeIdx {
        let spec = FlowSpec::new(1, cfg.queue()).unwrap_or_default();
        let pipe = Pipe::with_sched(cfg, sched, self.seed, stage);
        let idx = self.push_pipe(pipe, stage);
        let q = self.queues.len() as u32;
        self.queues.push(QueueDef {
            pipe: idx.0,
            spec,
            mask: FlowMask::default(),
            max: u32::MAX,
            retired: FlowStats::default(),
            inst: InstanceStats::default(),
        });
        self.meta[idx.0 as usize].default_queue = q;
        idx
    }

    /// Make `pipe` dynamic (ipfw `pipe N config mask ...`): each distinct
    /// `mask`ed flow key gets its own instance of the pipe, at most
    /// `max_instances` of them (then the overflow instance; see the module
    /// documentation).
    pub fn set_pipe_mask(
        &mut self,
        pipe: PipeIdx,
        mask: FlowMask,
        max_instances: u32,
    ) -> Result<(), RouteError> {
        let m = self.user_pipe(pipe)?;
        let free = core::mem::take(&mut m.spare);
        m.dynamic = Some(Box::new(Dynamic {
            mask,
            max: max_instances.max(1),
            map: BTreeMap::new(),
            free,
            inst: InstanceStats::default(),
            retired: PipeStats::default(),
            last_sweep: Instant::ZERO,
        }));
        Ok(())
    }

    /// Attach a flow queue (ipfw `queue N config weight W sched S mask
    /// ...`) to a scheduled pipe. Without a mask (or with a zero mask) it
    /// has one instance; with one, one per masked key, at most
    /// `max_instances`.
    pub fn add_queue(
        &mut self,
        pipe: PipeIdx,
        spec: FlowSpec,
        mask: Option<FlowMask>,
        max_instances: u32,
    ) -> Result<QueueId, RouteError> {
        self.user_pipe(pipe)?;
        if self.pipes[pipe.0 as usize].sched_config().is_none() {
            return Err(RouteError::NoScheduler(pipe));
        }
        let q = QueueId(self.queues.len() as u32);
        self.queues.push(QueueDef {
            pipe: pipe.0,
            spec,
            mask: mask.unwrap_or_default(),
            max: max_instances.max(1),
            retired: FlowStats::default(),
            inst: InstanceStats::default(),
        });
        Ok(q)
    }

    /// Black-hole user pipe `pipe` in the window `[from, until)`: every
    /// packet offered to it at an instant of the window (as the first hop
    /// of its route, a later hop, or a hand-off) is dropped as
    /// [`DropReason::Down`], counted in the pipe's `down_drops` and the
    /// engine's `dropped_down`; packets already inside go on as
    /// scheduled (the cut is at the pipe's input). `None` clears it. The
    /// window is an instant compared with the `now` of each arrival, so
    /// it ends by itself: no event, no timer. Use [`Instant::MAX`] as
    /// `until` for a pipe down until further notice.
    pub fn set_pipe_down(
        &mut self,
        pipe: PipeIdx,
        window: Option<(Instant, Instant)>,
    ) -> Result<(), RouteError> {
        self.user_pipe(pipe)?.down = window;
        Ok(())
    }

    /// The black-hole window of user pipe `pipe`, if one is set (it may
    /// have ended).
    pub fn pipe_down(&self, pipe: PipeIdx) -> Option<(Instant, Instant)> {
        self.meta.get(pipe.0 as usize).and_then(|m| m.down)
    }

    /// How long an instance must be idle before a sweep frees it.
    pub fn set_idle_expiry(&mut self, d: Duration) {
        self.idle_expiry = d;
    }

    fn user_pipe(&mut self, pipe: PipeIdx) -> Result<&mut PipeMeta, RouteError> {
        match self.meta.get_mut(pipe.0 as usize) {
            Some(m) if m.parent == pipe.0 => Ok(m),
            _ => Err(RouteError::NoSuchPipe(pipe)),
        }
    }

    /// Replace a pipe's configuration, keeping its queued packets (in
    /// every instance of a dynamic pipe). A scheduled pipe's default queue
    /// takes the new `queue` limit, as [`Engine::add_scheduled_pipe`] gives
    /// it.
    pub fn reconfigure(&mut self, pipe: PipeIdx, cfg: PipeConfig) -> Result<(), RouteError> {
        self.user_pipe(pipe)?;
        let limit = cfg.queue();
        let mut targets = vec![pipe.0];
        if let Some(d) = &self.meta[pipe.0 as usize].dynamic {
            targets.extend(d.map.values().copied());
        }
        for t in targets {
            self.pipes[t as usize].reconfigure(&mut self.pool, cfg.clone(), self.now);
            self.reschedule(t);
        }
        let dq = self.meta[pipe.0 as usize].default_queue;
        if let Some(def) = self.queues.get(dq as usize) {
            if let Ok(spec) = FlowSpec::new(def.spec.weight(), limit) {
                self.reconfigure_queue(QueueId(dq), spec)?;
            }
        }
        Ok(())
    }

    /// Give flow queue `q` a new weight, limit and queue management (and
    /// `ecn`): its live instances take them from their next packet, keeping
    /// the packets they hold; instances created later are made with them.
    /// What a weight change does to a backlogged instance is its
    /// scheduler's (see `sched::Scheduler::reweight`): `fifo` ignores
    /// weights; `rr`, `drr` and `fq_codel` give the new credit from the
    /// instance's next turn; `wf2q+` counts the new weight in its weight sum
    /// at once and stamps the packets after the head with it; `qfq` counts
    /// it at once and moves the instance to its new group when its head is
    /// next served; `prio` moves it to its new priority at once. A queue
    /// management whose configuration is unchanged keeps its state (an
    /// instance's RED average, CoDel's dropping state); a changed one
    /// starts afresh on each instance.
    pub fn reconfigure_queue(&mut self, q: QueueId, spec: FlowSpec) -> Result<(), RouteError> {
        let def = self
            .queues
            .get_mut(q.0 as usize)
            .ok_or(RouteError::NoSuchQueue(q))?;
        def.spec = spec;
        let pipes = self.queue_pipes(&self.queues[q.0 as usize]);
        let (seed, now) = (self.seed, self.now);
        for p in pipes {
            if let Some(sq) = self.pipes[p as usize].sched.as_deref_mut() {
                sq.reconfigure_queue(q.0, &spec, seed, now);
            }
            self.reschedule(p);
        }
        Ok(())
    }

    /// The one-hop route through `pipe`.
    pub fn pipe_route(&self, pipe: PipeIdx) -> Option<RouteId> {
        self.pipe_route.get(pipe.0 as usize).copied()
    }

    /// Add a route through `pipes` in order (a pipe may appear twice).
    pub fn add_route(&mut self, pipes: &[PipeIdx]) -> Result<RouteId, RouteError> {
        if pipes.is_empty() {
            return Err(RouteError::Empty);
        }
        if pipes.len() > MAX_HOPS {
            return Err(RouteError::TooLong(pipes.len()));
        }
        if let Some(p) = pipes
            .iter()
            .find(|p| self.meta.get(p.0 as usize).is_none_or(|m| m.parent != p.0))
        {
            return Err(RouteError::NoSuchPipe(*p));
        }
        Ok(self.push_route(pipes))
    }

    fn push_route(&mut self, pipes: &[PipeIdx]) -> RouteId {
        let id = RouteId(self.routes.len() as u32);
        self.routes.push(Span {
            start: self.hops.len() as u32,
            len: pipes.len() as u16,
        });
        self.hops.extend_from_slice(pipes);
        id
    }

    /// The pipes of a route.
    pub fn route(&self, r: RouteId) -> Option<&[PipeIdx]> {
        let s = self.routes.get(r.0 as usize)?;
        self.hops
            .get(s.start as usize..s.start as usize + s.len as usize)
    }

    /// Number of pipes, the internal instances of dynamic pipes included.
    pub fn pipe_count(&self) -> usize {
        self.pipes.len()
    }

    /// A pipe's counters. For a dynamic pipe these are the template's
    /// (always zero): see [`Engine::pipe_totals`].
    pub fn pipe_stats(&self, pipe: PipeIdx) -> Option<&PipeStats> {
        self.pipes.get(pipe.0 as usize).map(|p| p.stats())
    }

    /// A pipe's counters; for a dynamic pipe, the totals over all its
    /// instances, expired ones included (backlogs add up, high-water marks
    /// are the largest of one instance).
    pub fn pipe_totals(&self, pipe: PipeIdx) -> Option<PipeStats> {
        let m = self.meta.get(pipe.0 as usize)?;
        let Some(d) = &m.dynamic else {
            let mut t = *self.pipe_stats(pipe)?;
            t.down_drops = m.down_drops;
            return Some(t);
        };
        let mut t = d.retired;
        for &i in d.map.values() {
            t.add(self.pipes[i as usize].stats());
        }
        t.down_drops = m.down_drops;
        Some(t)
    }

    /// The instance accounting of a dynamic pipe (`None` for a static one).
    pub fn pipe_instances(&self, pipe: PipeIdx) -> Option<InstanceStats> {
        let d = self.meta.get(pipe.0 as usize)?.dynamic.as_ref()?;
        Some(InstanceStats {
            live: d.map.len() as u32,
            ..d.inst
        })
    }

    /// The live instances of a dynamic pipe with their counters, in key
    /// order (`None` is the overflow instance).
    pub fn pipe_instance_stats(&self, pipe: PipeIdx) -> Vec<(Option<FlowKey>, PipeStats)> {
        let Some(d) = self
            .meta
            .get(pipe.0 as usize)
            .and_then(|m| m.dynamic.as_ref())
        else {
            return Vec::new();
        };
        d.map
            .iter()
            .map(|(k, &i)| (*k, *self.pipes[i as usize].stats()))
            .collect()
    }

    /// Number of flow queues (the default queues of scheduled pipes
    /// included).
    pub fn queue_count(&self) -> usize {
        self.queues.len()
    }

    /// The default flow queue of a scheduled pipe.
    pub fn default_queue(&self, pipe: PipeIdx) -> Option<QueueId> {
        let m = self.meta.get(pipe.0 as usize)?;
        let scheduled = self.pipes[pipe.0 as usize].sched.is_some();
        (m.default_queue != NIL && scheduled).then_some(QueueId(m.default_queue))
    }

    /// The pipes that hold `pipe`'s packets: itself, and the instances of
    /// a dynamic pipe.
    fn holders(&self, pipe: u32) -> Vec<u32> {
        let mut v = vec![pipe];
        if let Some(d) = &self.meta[pipe as usize].dynamic {
            v.extend(d.map.values().copied());
        }
        v
    }

    /// True when `pipe` holds no packet: none waiting, on the wire, in the
    /// delay line (or dropped inside it and not yet handed out), in any
    /// instance of a dynamic pipe. A pipe no longer fed drains to idle on
    /// its own schedule as the engine advances; an unknown pipe holds
    /// nothing.
    pub fn pipe_is_idle(&self, pipe: PipeIdx) -> bool {
        if self.meta.get(pipe.0 as usize).is_none() {
            return true;
        }
        self.holders(pipe.0)
            .iter()
            .all(|&p| !self.pipes[p as usize].holds_packets())
    }

    /// Turn idle user pipe `pipe` into a fresh pipe, as
    /// [`Engine::add_pipe_with_stage`] (`sched` `None`) or
    /// [`Engine::add_scheduled_pipe`] would make it: random streams from
    /// `(seed, stage)`, zeroed counters, no mask and no instances (the
    /// internal pipes of its old instances are kept for its next mask), a
    /// scheduled pipe's default queue (weight 1, `cfg`'s limit, zeroed
    /// counters; the old default queue's index when there was one). Its
    /// index, its one-hop route and every route through it stay valid, so
    /// a reconciler can give the slot of a deleted pipe to a new one.
    ///
    /// Flow queues attached to it stay attached: the counters of their
    /// instances fold into their totals (as at expiry) and they get new
    /// instances in the new scheduler; [`Engine::reset_queue`] moves them.
    ///
    /// Refused with [`RouteError::PipeBusy`] if the pipe holds a packet
    /// ([`Engine::pipe_is_idle`]).
    pub fn reset_pipe(
        &mut self,
        pipe: PipeIdx,
        cfg: PipeConfig,
        sched: Option<SchedConfig>,
        stage: u64,
    ) -> Result<(), RouteError> {
        self.user_pipe(pipe)?;
        if !self.pipe_is_idle(pipe) {
            return Err(RouteError::PipeBusy(pipe));
        }
        for h in self.holders(pipe.0) {
            let Engine { pipes, queues, .. } = self;
            if let Some(sq) = pipes[h as usize].sched.as_deref() {
                for (&(q, _), &slot) in &sq.map {
                    if let Some(def) = queues.get_mut(q as usize) {
                        def.retired.add(&sq.slots[slot as usize].stats);
                        def.inst.expired += 1;
                    }
                }
            }
        }
        let limit = cfg.queue();
        let fresh = match sched {
            Some(s) => Pipe::with_sched(cfg, s, self.seed, stage),
            None => Pipe::new(cfg, self.seed, stage),
        };
        self.pipes[pipe.0 as usize] = fresh;
        // Through `set_early`, which also decides the wake-up at each
        // transmission's end that an early exit needs.
        let early = self.meta[pipe.0 as usize].early;
        self.pipes[pipe.0 as usize].set_early(early);
        let m = &mut self.meta[pipe.0 as usize];
        m.stage = stage;
        // A fresh pipe: up, its counters at zero.
        m.down = None;
        m.down_drops = 0;
        if let Some(d) = m.dynamic.take() {
            let Dynamic { map, free, .. } = *d;
            m.spare.extend(map.into_values());
            m.spare.extend(free);
        }
        let dq = m.default_queue;
        if sched.is_some() || dq != NIL {
            let def = QueueDef {
                pipe: pipe.0,
                spec: FlowSpec::new(1, limit).unwrap_or_default(),
                mask: FlowMask::default(),
                max: u32::MAX,
                retired: FlowStats::default(),
                inst: InstanceStats::default(),
            };
            match self.queues.get_mut(dq as usize) {
                Some(q) => *q = def,
                None => {
                    m.default_queue = self.queues.len() as u32;
                    self.queues.push(def);
                }
            }
        }
        Ok(())
    }

    /// True when flow queue `q` holds no packet (in any instance); an
    /// unknown queue holds nothing.
    pub fn queue_is_idle(&self, q: QueueId) -> bool {
        self.queue_instance_stats(q)
            .iter()
            .all(|(_, st)| st.backlog == 0)
    }

    /// Turn idle flow queue `q` into a fresh one, as [`Engine::add_queue`]
    /// would make it, attached to scheduled pipe `pipe` (its old one or
    /// another): its instances are freed (their counters dropped with the
    /// queue's), its counters zeroed. Packets of the queue already on a
    /// link or in a delay line are not the queue's and go on. So a
    /// reconciler can give the index of a deleted queue to a new one.
    ///
    /// Refused with [`RouteError::QueueBusy`] if an instance holds a packet
    /// or cannot be freed yet (fq_codel keeps an emptied flow linked until
    /// its round robin passes it), with [`RouteError::DefaultQueue`] for a
    /// pipe's default queue (it goes with its pipe, [`Engine::reset_pipe`]).
    pub fn reset_queue(
        &mut self,
        q: QueueId,
        pipe: PipeIdx,
        spec: FlowSpec,
        mask: Option<FlowMask>,
        max_instances: u32,
    ) -> Result<(), RouteError> {
        let old = self
            .queues
            .get(q.0 as usize)
            .ok_or(RouteError::NoSuchQueue(q))?
            .pipe;
        if self.meta[old as usize].default_queue == q.0 {
            return Err(RouteError::DefaultQueue(q));
        }
        self.user_pipe(pipe)?;
        if self.pipes[pipe.0 as usize].sched.is_none() {
            return Err(RouteError::NoScheduler(pipe));
        }
        if !self.queue_is_idle(q) {
            return Err(RouteError::QueueBusy(q));
        }
        let now = self.now;
        for h in self.holders(old) {
            if let Some(sq) = self.pipes[h as usize].sched.as_deref_mut() {
                sq.sweep(now, Duration::ZERO, Some(q.0), &mut |_, _| {});
                if sq.map.keys().any(|&(k, _)| k == q.0) {
                    return Err(RouteError::QueueBusy(q));
                }
            }
        }
        self.queues[q.0 as usize] = QueueDef {
            pipe: pipe.0,
            spec,
            mask: mask.unwrap_or_default(),
            max: max_instances.max(1),
            retired: FlowStats::default(),
            inst: InstanceStats::default(),
        };
        Ok(())
    }

    /// The pipes whose schedulers hold instances of queue `q`: its pipe,
    /// or the live instances of its dynamic pipe.
    fn queue_pipes(&self, q: &QueueDef) -> Vec<u32> {
        match &self.meta[q.pipe as usize].dynamic {
            Some(d) => d.map.values().copied().collect(),
            None => vec![q.pipe],
        }
    }

    /// A flow queue's totals and instance accounting.
    pub fn queue_stats(&self, q: QueueId) -> Option<QueueStats> {
        let def = self.queues.get(q.0 as usize)?;
        let mut s = QueueStats {
            flows: def.retired,
            instances: InstanceStats {
                live: 0,
                ..def.inst
            },
        };
        for (_, st) in self.queue_instance_stats(q) {
            s.flows.add(&st);
            s.instances.live += 1;
        }
        Some(s)
    }

    /// The live instances of flow queue `q` with their counters: per pipe
    /// instance, in key order (`None` is the overflow instance).
    pub fn queue_instance_stats(&self, q: QueueId) -> Vec<(Option<FlowKey>, FlowStats)> {
        let Some(def) = self.queues.get(q.0 as usize) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for p in self.queue_pipes(def) {
            if let Some(sq) = self.pipes[p as usize].sched.as_deref() {
                for (&(qid, key), &slot) in &sq.map {
                    if qid == q.0 {
                        out.push((key, sq.slots[slot as usize].stats));
                    }
                }
            }
        }
        out
    }

    /// A pipe's configuration.
    pub fn pipe_config(&self, pipe: PipeIdx) -> Option<&PipeConfig> {
        self.pipes.get(pipe.0 as usize).map(|p| p.config())
    }

    /// Engine-wide accounting.
    pub fn stats(&self) -> &EngineStats {
        &self.stats
    }

    /// Packets inside the engine now.
    pub fn in_flight(&self) -> u32 {
        self.pool.in_use()
    }

    /// Bytes (the descriptors' `len`) of the packets inside the engine.
    pub fn in_flight_bytes(&self) -> u64 {
        self.pool.in_use_bytes()
    }

    /// The latest `now` seen.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Offer `pkt` to the first pipe of `route` at `now`.
    ///
    /// # Panics
    /// Never on packet contents; `route` must come from this engine (an
    /// unknown route is refused with a debug assertion and dropped as
    /// `QueueFull` in release builds would hide a bug, so it panics).
    pub fn enqueue(&mut self, now: Instant, pkt: Packet, route: RouteId) -> Verdict {
        self.enqueue_at(now, pkt, route, NIL)
    }

    /// Offer `pkt` to flow queue `q` (ipfw's `queue N` action) at `now`:
    /// through its pipe (the instance its key selects, for a dynamic pipe)
    /// and the queue's instance for its masked key; then out.
    ///
    /// # Panics
    /// If `q` does not come from this engine.
    pub fn enqueue_to_queue(&mut self, now: Instant, pkt: Packet, q: QueueId) -> Verdict {
        let pipe = self.queues[q.0 as usize].pipe;
        let route = self.pipe_route[pipe as usize];
        self.enqueue_at(now, pkt, route, q.0)
    }

    fn enqueue_at(&mut self, now: Instant, pkt: Packet, route: RouteId, queue: u32) -> Verdict {
        let now = now.max(self.now);
        self.now = now;
        self.stats.offered += 1;
        let span = self.routes[route.0 as usize];
        let first = self.hops[span.start as usize];
        let Some(i) = self.pool.alloc(pkt) else {
            self.count_drop(DropReason::PoolFull);
            return Verdict::Dropped(DropReason::PoolFull);
        };
        {
            let s = self.pool.get_mut(i);
            s.route = route.0;
            s.hop = 0;
            s.queue = queue;
        }
        let mut discard = Vec::new();
        let v = match self.offer(first, i, now, &mut discard) {
            Ok(()) => Verdict::Queued,
            Err(reason) => {
                self.pool.free(i);
                Verdict::Dropped(reason)
            }
        };
        // Outputs made while enqueueing (a copy made, a copy refused) are
        // handed out by the next `advance`; `discard` allocates only then.
        self.pending.append(&mut discard);
        v
    }

    /// Offer slot `i` to `pipe` at `at`: on refusal the slot is still the
    /// caller's to free; a duplicate that the pipe refuses is freed here
    /// and reported in `out`.
    #[inline(always)]
    fn offer(
        &mut self,
        pipe: PipeIdx,
        i: u32,
        at: Instant,
        out: &mut Vec<Output>,
    ) -> Result<(), DropReason> {
        let m = &mut self.meta[pipe.0 as usize];
        if let Some((from, until)) = m.down {
            if from <= at && at < until {
                m.down_drops += 1;
                self.count_drop(DropReason::Down);
                return Err(DropReason::Down);
            }
        }
        let p = if m.dynamic.is_some() {
            self.instance_of(pipe.0, i, at)
        } else {
            pipe.0
        };
        if self.pipes[p as usize].sched.is_some() {
            let slot = self.flow_slot(p, i, at);
            self.pool.get_mut(i).qslot = slot;
        }
        let pp = &mut self.pipes[p as usize];
        let verdict = if pp.is_plain() {
            pp.enqueue_plain(&mut self.pool, i, at).map(|()| false)
        } else {
            pp.enqueue(&mut self.pool, i, at)
        };
        match verdict {
            Ok(false) => {
                // `reschedule`, on the pipe at hand.
                let want = pp.next_deadline_inline(&self.pool);
                if want != pp.scheduled.map(|(t, _)| t) {
                    self.set_event(p, want);
                }
                Ok(())
            }
            Ok(true) => {
                self.duplicate(p, i, at, out);
                self.reschedule(p);
                Ok(())
            }
            Err(r) => {
                let reason = drop_reason(r);
                self.count_drop(reason);
                Err(reason)
            }
        }
    }

    /// The pipe (or dynamic pipe instance) that packet `i` enters when
    /// offered to user pipe `pipe` at `at`; creates the instance.
    #[inline]
    fn instance_of(&mut self, pipe: u32, i: u32, at: Instant) -> u32 {
        let Some(d) = self.meta[pipe as usize].dynamic.as_deref() else {
            return pipe;
        };
        let key = d.mask.apply(&self.pool.get(i).pkt.key);
        if at - d.last_sweep >= self.idle_expiry {
            self.sweep_pipes(pipe, at, self.idle_expiry);
        }
        let Some(d) = self.meta[pipe as usize].dynamic.as_deref_mut() else {
            return pipe;
        };
        if let Some(&inst) = d.map.get(&Some(key)) {
            return inst;
        }
        let mut k = Some(key);
        if d.map.len() - usize::from(d.map.contains_key(&None)) >= d.max as usize {
            // Full: make room from instances that hold no packet.
            self.sweep_pipes(pipe, at, Duration::ZERO);
            let Some(d) = self.meta[pipe as usize].dynamic.as_deref_mut() else {
                return pipe;
            };
            if d.map.len() - usize::from(d.map.contains_key(&None)) >= d.max as usize {
                d.inst.overflow += 1;
                k = None;
                if let Some(&inst) = d.map.get(&None) {
                    return inst;
                }
            }
        }
        self.new_instance(pipe, k)
    }

    /// Create the instance of dynamic pipe `pipe` for key `k`.
    fn new_instance(&mut self, pipe: u32, k: Option<FlowKey>) -> u32 {
        let cfg = self.pipes[pipe as usize].config().clone();
        let sched = self.pipes[pipe as usize].sched_config().copied();
        let stage0 = self.meta[pipe as usize].stage;
        let (reuse, n) = match self.meta[pipe as usize].dynamic.as_deref_mut() {
            Some(d) => {
                d.inst.created += 1;
                (d.free.pop(), d.inst.created)
            }
            None => return pipe,
        };
        let stage = stage0.wrapping_add(n << 32);
        let fresh = match sched {
            Some(s) => Pipe::with_sched(cfg, s, self.seed, stage),
            None => Pipe::new(cfg, self.seed, stage),
        };
        // Instance ordinals fit in 32 bits long before anything else
        // would give out.
        let key = ((pipe as u64) << 32) | (n & 0xffff_ffff);
        let idx = match reuse {
            Some(idx) => {
                self.pipes[idx as usize] = fresh;
                self.meta[idx as usize].stage = stage;
                self.meta[idx as usize].key = key;
                idx
            }
            None => {
                let idx = self.pipes.len() as u32;
                self.pipes.push(fresh);
                self.meta.push(PipeMeta {
                    parent: pipe,
                    stage,
                    default_queue: NIL,
                    dynamic: None,
                    spare: Vec::new(),
                    key,
                    early: false,
                    handoffs: 0,
                    down: None,
                    down_drops: 0,
                });
                self.pipe_route.push(self.pipe_route[pipe as usize]);
                idx
            }
        };
        if let Some(d) = self.meta[pipe as usize].dynamic.as_deref_mut() {
            d.map.insert(k, idx);
        }
        idx
    }

    /// Free the instances of dynamic pipe `pipe` that hold no packet and
    /// have had no arrival for `idle`, folding their counters into the
    /// totals (the pipe's and its queues').
    fn sweep_pipes(&mut self, pipe: u32, at: Instant, idle: Duration) {
        let Engine {
            meta,
            pipes,
            queues,
            ..
        } = self;
        let Some(d) = meta[pipe as usize].dynamic.as_deref_mut() else {
            return;
        };
        let Dynamic {
            map,
            free,
            inst,
            retired,
            last_sweep,
            ..
        } = d;
        if idle > Duration::ZERO {
            *last_sweep = at;
        }
        map.retain(|_, &mut idx| {
            let p = &pipes[idx as usize];
            if !p.is_idle() || at - p.last_arrival < idle {
                return true;
            }
            retired.add(p.stats());
            if let Some(sq) = p.sched.as_deref() {
                for (&(q, _), &slot) in &sq.map {
                    if let Some(def) = queues.get_mut(q as usize) {
                        def.retired.add(&sq.slots[slot as usize].stats);
                        def.inst.expired += 1;
                    }
                }
            }
            inst.expired += 1;
            free.push(idx);
            false
        });
    }

    /// The scheduler flow slot of packet `i` in scheduled pipe `p` (an
    /// instance of the queue the packet was sent to, or of the pipe's
    /// default queue); creates the instance.
    #[inline]
    fn flow_slot(&mut self, p: u32, i: u32, at: Instant) -> u32 {
        let parent = self.meta[p as usize].parent;
        let (q, key) = {
            let s = self.pool.get(i);
            (s.queue, s.pkt.key)
        };
        let q = match self.queues.get(q as usize) {
            Some(def) if def.pipe == parent => q,
            _ => self.meta[parent as usize].default_queue,
        };
        let idle = self.idle_expiry;
        let (seed, stage) = (self.seed, self.meta[p as usize].stage);
        let Engine { pipes, queues, .. } = self;
        let Some(def) = queues.get(q as usize) else {
            return NIL;
        };
        let max = def.max;
        let mk = def.mask.apply(&key);
        let Some(sq) = pipes[p as usize].sched.as_deref_mut() else {
            return NIL;
        };
        let mut retire = |q: u32, st: &FlowStats| {
            if let Some(d) = queues.get_mut(q as usize) {
                d.retired.add(st);
                d.inst.expired += 1;
            }
        };
        if at - sq.last_sweep >= idle {
            sq.last_sweep = at;
            sq.sweep(at, idle, None, &mut retire);
        }
        if let Some(&slot) = sq.map.get(&(q, Some(mk))) {
            return slot;
        }
        let mut k = Some(mk);
        if sq.count(q) >= max {
            sq.sweep(at, Duration::ZERO, Some(q), &mut retire);
            if sq.count(q) >= max {
                k = None;
                if let Some(d) = queues.get_mut(q as usize) {
                    d.inst.overflow += 1;
                }
                if let Some(&slot) = sq.map.get(&(q, None)) {
                    return slot;
                }
            }
        }
        let Some(d) = queues.get_mut(q as usize) else {
            return NIL;
        };
        d.inst.created += 1;
        let id = flow_aqm::stage_id(stage, q, d.inst.created);
        sq.create(q, k, &d.spec, at, (seed, id))
    }

    /// Offer a copy of slot `i` (flagged as a duplicate) to pipe (or
    /// instance) `p`, in the same flow queue instance.
    fn duplicate(&mut self, p: u32, i: u32, at: Instant, out: &mut Vec<Output>) {
        let pipe = PipeIdx(self.meta[p as usize].parent);
        let (mut pkt, route, hop, queue, qslot) = {
            let s = self.pool.get(i);
            (s.pkt, s.route, s.hop, s.queue, s.qslot)
        };
        out.push(Output {
            pkt,
            at,
            fate: Fate::Duplicated { pipe },
        });
        pkt.flags |= Packet::DUPLICATE;
        self.stats.duplicated += 1;
        let Some(j) = self.pool.alloc(pkt) else {
            self.count_drop(DropReason::PoolFull);
            out.push(Output {
                pkt,
                at,
                fate: Fate::Dropped {
                    pipe,
                    reason: DropReason::PoolFull,
                },
            });
            return;
        };
        {
            let s = self.pool.get_mut(j);
            s.route = route;
            s.hop = hop;
            s.queue = queue;
            s.qslot = qslot;
        }
        match self.pipes[p as usize].enqueue(&mut self.pool, j, at) {
            Ok(_) => {}
            Err(r) => {
                let reason = drop_reason(r);
                self.count_drop(reason);
                let pkt = self.pool.free(j);
                out.push(Output {
                    pkt,
                    at,
                    fate: Fate::Dropped { pipe, reason },
                });
            }
        }
    }

    #[inline]
    fn count_drop(&mut self, reason: DropReason) {
        match reason {
            DropReason::QueueFull => self.stats.dropped_queue += 1,
            DropReason::PoolFull => self.stats.dropped_memory += 1,
            DropReason::Loss => self.stats.dropped_loss += 1,
            DropReason::Aqm => self.stats.dropped_aqm += 1,
            DropReason::Link => self.stats.dropped_link += 1,
            DropReason::Down => self.stats.dropped_down += 1,
        }
    }

    /// When the engine next has work, if it has any.
    pub fn next_deadline(&mut self) -> Option<Instant> {
        if !self.pending.is_empty() {
            return Some(self.now);
        }
        self.events.peek().map(|e| e.time)
    }

    /// Bring every pipe's counters up to just before `t` (every event
    /// before `t` done, none at `t`): transmissions that ended before `t`
    /// are settled, so `backlog` is the queue at `t`. A sampler (`pipelab
    /// sim --interval`) calls it at an interval's end; it changes no
    /// packet's fate or time.
    pub fn settle_before(&mut self, t: Instant) {
        let t = Instant(t.0.saturating_sub(1));
        for p in &mut self.pipes {
            p.settle(&mut self.pool, t);
        }
    }

    /// Do all work due at or before `now`, appending what leaves to `out`.
    pub fn advance(&mut self, now: Instant, out: &mut Vec<Output>) {
        self.advance_before(now, (Instant(u64::MAX), u64::MAX), out);
    }

    /// Do the work due at or before `now` that comes before `limit` in the
    /// canonical order (events `(time, key) < limit`), appending what
    /// leaves to `out`: a partition's driver stops here to let a hand-off
    /// from pipe key `limit.1` in at `limit.0` exactly where the whole
    /// engine would have moved it on (module documentation,
    /// "Partitions").
    pub fn advance_before(&mut self, now: Instant, limit: (Instant, u64), out: &mut Vec<Output>) {
        let now = now.max(self.now);
        self.now = now;
        out.append(&mut self.pending);
        while let Some(e) = self.events.peek() {
            if e.time > now || (e.time, e.key) >= limit {
                break;
            }
            let p = e.pipe as usize;
            self.scratch.clear();
            self.scratch_dropped.clear();
            let pipe = &mut self.pipes[p];
            let next = pipe.step(
                &mut self.pool,
                e.time,
                &mut self.scratch,
                &mut self.scratch_dropped,
            );
            debug_assert_eq!(e.key, self.meta[p].key);
            // `e.key` is the pipe's own: a key changes only when an idle
            // instance (one without an entry) is reused.
            pipe.scheduled = next.zip(self.events.serve(e.pipe, next, e.key));
            if !self.scratch_dropped.is_empty() {
                self.output_dropped(p, out);
            }
            // Index loops: `forward` and `hand_off` leave the scratch
            // buffers alone (only `step` fills them).
            if self.meta[p].early {
                for k in 0..self.scratch.len() {
                    let i = self.scratch[k];
                    self.hand_off(p, i, out);
                }
            } else {
                for k in 0..self.scratch.len() {
                    let i = self.scratch[k];
                    self.forward(i, out);
                }
            }
        }
    }

    /// The packets pipe `p` dropped inside it in its last step
    /// (`scratch_dropped`), out with their reasons, in order.
    #[cold]
    fn output_dropped(&mut self, p: usize, out: &mut Vec<Output>) {
        for k in 0..self.scratch_dropped.len() {
            let (i, why) = self.scratch_dropped[k];
            let reason = drop_reason(why);
            self.count_drop(reason);
            let at = self.pool.get(i).due;
            let pkt = self.pool.free(i);
            out.push(Output {
                pkt,
                at,
                fate: Fate::Dropped {
                    pipe: PipeIdx(self.meta[p].parent),
                    reason,
                },
            });
        }
    }

    /// Packet `i` left early-exit pipe `p` (its exit instant in `due`):
    /// a hand-off to its next hop, or out at that instant.
    fn hand_off(&mut self, p: usize, i: u32, out: &mut Vec<Output>) {
        let (route, hop, at) = {
            let s = self.pool.get(i);
            (s.route, s.hop, s.due)
        };
        let span = self.routes[route as usize];
        let next_hop = hop as usize + 1;
        let pkt = self.pool.free(i);
        if next_hop >= span.len as usize {
            self.stats.delivered += 1;
            out.push(Output {
                pkt,
                at,
                fate: Fate::Delivered,
            });
            return;
        }
        let m = &mut self.meta[p];
        let seq = m.handoffs;
        m.handoffs += 1;
        self.stats.handed_off += 1;
        self.handoffs.push(Handoff {
            pkt,
            at,
            route: RouteId(route),
            hop: next_hop as u16,
            key: m.key,
            seq,
        });
    }

    /// Mark user pipe `pipe` as an early-exit pipe (`true`) or not: each
    /// packet leaves it, for the caller, at the end of its transmission,
    /// with its exit instant decided ([`Handoff::at`]): a hand-off to its
    /// next hop, taken with [`Engine::take_handoffs`], or an output
    /// stamped with that instant at the end of its route. Its counters
    /// count the departure then. See the module documentation,
    /// "Partitions".
    pub fn set_early_exit(&mut self, pipe: PipeIdx, on: bool) -> Result<(), RouteError> {
        let m = self.user_pipe(pipe)?;
        m.early = on;
        self.pipes[pipe.0 as usize].set_early(on);
        self.reschedule(pipe.0);
        Ok(())
    }

    /// Move the hand-offs made so far to `into` (in the order they were
    /// made).
    pub fn take_handoffs(&mut self, into: &mut Vec<Handoff>) {
        into.append(&mut self.handoffs);
    }

    /// A pipe's key in the canonical order of events.
    pub fn pipe_key(&self, pipe: PipeIdx) -> Option<u64> {
        self.meta.get(pipe.0 as usize).map(|m| m.key)
    }

    /// Offer `pkt` to hop `hop` of `route` at `now`, as if it had crossed
    /// the hops before it: a hand-off arriving from another engine
    /// ([`Handoff`]). The caller advances to just before the hand-off's
    /// place in the canonical order first ([`Engine::advance_before`]).
    pub fn enter(&mut self, now: Instant, pkt: Packet, route: RouteId, hop: u16) -> Verdict {
        let now = now.max(self.now);
        self.now = now;
        let span = match self.routes.get(route.0 as usize) {
            Some(s) if (hop as usize) < s.len as usize => *s,
            _ => return Verdict::Dropped(DropReason::QueueFull),
        };
        self.stats.entered += 1;
        let pipe = self.hops[span.start as usize + hop as usize];
        let Some(i) = self.pool.alloc(pkt) else {
            self.count_drop(DropReason::PoolFull);
            return Verdict::Dropped(DropReason::PoolFull);
        };
        {
            let s = self.pool.get_mut(i);
            s.route = route.0;
            s.hop = hop;
            s.queue = NIL;
        }
        let mut discard = Vec::new();
        let v = match self.offer(pipe, i, now, &mut discard) {
            Ok(()) => Verdict::Queued,
            Err(reason) => {
                self.pool.free(i);
                Verdict::Dropped(reason)
            }
        };
        self.pending.append(&mut discard);
        v
    }

    /// Packet `i` left its current pipe at its `due` time: on to the next
    /// hop, or out.
    #[inline]
    fn forward(&mut self, i: u32, out: &mut Vec<Output>) {
        let (route, hop, at) = {
            let s = self.pool.get(i);
            (s.route, s.hop, s.due)
        };
        let span = self.routes[route as usize];
        let next_hop = hop as usize + 1;
        if next_hop >= span.len as usize {
            let pkt = self.pool.free(i);
            self.stats.delivered += 1;
            out.push(Output {
                pkt,
                at,
                fate: Fate::Delivered,
            });
            return;
        }
        let next = self.hops[span.start as usize + next_hop];
        {
            let s = self.pool.get_mut(i);
            s.hop = next_hop as u16;
            // A queue names a flow queue of the first pipe only.
            s.queue = NIL;
        }
        if let Err(reason) = self.offer(next, i, at, out) {
            let pkt = self.pool.free(i);
            out.push(Output {
                pkt,
                at,
                fate: Fate::Dropped { pipe: next, reason },
            });
        }
    }

    /// Make the pipe's event match its current deadline: moved in place
    /// when it changed, removed when the pipe has no more work.
    #[inline]
    fn reschedule(&mut self, pipe: u32) {
        let p = &self.pipes[pipe as usize];
        let want = p.next_deadline(&self.pool);
        let have = p.scheduled.map(|(t, _)| t);
        if want == have {
            return;
        }
        self.set_event(pipe, want);
    }

    #[inline]
    fn set_event(&mut self, pipe: u32, want: Option<Instant>) {
        let sched = match want {
            Some(t) => {
                let key = self.meta[pipe as usize].key;
                Some((t, self.events.schedule(pipe, t, key)))
            }
            None => {
                self.events.cancel(pipe);
                None
            }
        };
        self.pipes[pipe as usize].scheduled = sched;
    }
}
