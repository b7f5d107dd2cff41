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
//! Work is done in `(time, seq)` order across all pipes, and a packet leaving
//! one pipe enters the next at its exact exit instant, so results do not
//! depend on how coarsely the caller advances time. The virtual-time driver
//! jumps from deadline to deadline; the real-time driver sleeps until one.
//!
//! Calling convention: time never goes backwards (an earlier `now` is
//! treated as the latest one seen), and the caller advances to `now` before
//! it enqueues at `now`, so that departures due at `now` free their queue
//! slots before arrivals at `now` are admitted.

use crate::config::PipeConfig;
use crate::event::EventQueue;
use crate::packet::{Packet, Pool};
use crate::pipe::{Pipe, PipeStats, Refusal};
use crate::time::Instant;

/// Index of a pipe inside one engine (dense, from 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PipeIdx(pub u32);

/// Index of a route inside one engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RouteId(pub u32);

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// A pipe's queue was full (tail drop).
    QueueFull,
    /// The engine's descriptor pool was exhausted (global memory cap).
    PoolFull,
    /// A pipe's loss model dropped it.
    Loss,
    /// A pipe's active queue management dropped it (RED/GRED/PIE at
    /// arrival, CoDel when the link took it), counted apart from tail drops.
    Aqm,
    /// Lost on the link (MAC profile), after occupying it for its airtime.
    Link,
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
    /// Copies made by duplication models (each one is also delivered or
    /// dropped, so `offered + duplicated = delivered + dropped + inside`).
    pub duplicated: u64,
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
}

impl core::fmt::Display for RouteError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RouteError::Empty => f.write_str("a route needs at least one pipe"),
            RouteError::TooLong(n) => write!(f, "a route of {n} hops is longer than {MAX_HOPS}"),
            RouteError::NoSuchPipe(p) => write!(f, "no pipe with index {}", p.0),
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
            pipe_route: Vec::new(),
            routes: Vec::new(),
            hops: Vec::new(),
            pool: Pool::with_capacity(opts.max_packets),
            events: EventQueue::with_capacity(1024),
            now: Instant::ZERO,
            scratch: Vec::with_capacity(1024),
            scratch_dropped: Vec::with_capacity(64),
            pending: Vec::new(),
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
        let idx = PipeIdx(self.pipes.len() as u32);
        self.pipes.push(Pipe::new(cfg, self.seed, stage));
        let route = self.push_route(&[idx]);
        self.pipe_route.push(route);
        idx
    }

    /// Replace a pipe's configuration, keeping its queued packets.
    pub fn reconfigure(&mut self, pipe: PipeIdx, cfg: PipeConfig) -> Result<(), RouteError> {
        let p = self
            .pipes
            .get_mut(pipe.0 as usize)
            .ok_or(RouteError::NoSuchPipe(pipe))?;
        p.reconfigure(&mut self.pool, cfg);
        self.reschedule(pipe.0);
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
        if let Some(p) = pipes.iter().find(|p| p.0 as usize >= self.pipes.len()) {
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

    /// Number of pipes.
    pub fn pipe_count(&self) -> usize {
        self.pipes.len()
    }

    /// A pipe's counters.
    pub fn pipe_stats(&self, pipe: PipeIdx) -> Option<&PipeStats> {
        self.pipes.get(pipe.0 as usize).map(|p| p.stats())
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
    #[inline]
    fn offer(
        &mut self,
        pipe: PipeIdx,
        i: u32,
        at: Instant,
        out: &mut Vec<Output>,
    ) -> Result<(), DropReason> {
        match self.pipes[pipe.0 as usize].enqueue(&mut self.pool, i, at) {
            Ok(dup) => {
                if dup {
                    self.duplicate(pipe, i, at, out);
                }
                self.reschedule(pipe.0);
                Ok(())
            }
            Err(r) => {
                let reason = drop_reason(r);
                self.count_drop(reason);
                Err(reason)
            }
        }
    }

    /// Offer a copy of slot `i` (flagged as a duplicate) to `pipe`.
    fn duplicate(&mut self, pipe: PipeIdx, i: u32, at: Instant, out: &mut Vec<Output>) {
        let (mut pkt, route, hop) = {
            let s = self.pool.get(i);
            (s.pkt, s.route, s.hop)
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
        }
        match self.pipes[pipe.0 as usize].enqueue(&mut self.pool, j, at) {
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
        }
    }

    /// When the engine next has work, if it has any.
    pub fn next_deadline(&mut self) -> Option<Instant> {
        if !self.pending.is_empty() {
            return Some(self.now);
        }
        while let Some(e) = self.events.peek() {
            if self.is_live(e.pipe, e.time, e.seq) {
                return Some(e.time);
            }
            self.events.pop();
        }
        None
    }

    #[inline]
    fn is_live(&self, pipe: u32, time: Instant, seq: u64) -> bool {
        self.pipes[pipe as usize].scheduled == Some((time, seq))
    }

    /// Do all work due at or before `now`, appending what leaves to `out`.
    pub fn advance(&mut self, now: Instant, out: &mut Vec<Output>) {
        let now = now.max(self.now);
        self.now = now;
        out.append(&mut self.pending);
        while let Some(e) = self.events.peek() {
            if e.time > now {
                break;
            }
            self.events.pop();
            if !self.is_live(e.pipe, e.time, e.seq) {
                continue;
            }
            let p = e.pipe as usize;
            self.pipes[p].scheduled = None;
            let mut leaving = std::mem::take(&mut self.scratch);
            let mut dropped = std::mem::take(&mut self.scratch_dropped);
            leaving.clear();
            dropped.clear();
            self.pipes[p].step(&mut self.pool, e.time, &mut leaving, &mut dropped);
            self.reschedule(e.pipe);
            for &(i, why) in &dropped {
                let reason = drop_reason(why);
                self.count_drop(reason);
                let at = self.pool.get(i).due;
                let pkt = self.pool.free(i);
                out.push(Output {
                    pkt,
                    at,
                    fate: Fate::Dropped {
                        pipe: PipeIdx(e.pipe),
                        reason,
                    },
                });
            }
            for &i in &leaving {
                self.forward(i, out);
            }
            self.scratch = leaving;
            self.scratch_dropped = dropped;
        }
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
        self.pool.get_mut(i).hop = next_hop as u16;
        if let Err(reason) = self.offer(next, i, at, out) {
            let pkt = self.pool.free(i);
            out.push(Output {
                pkt,
                at,
                fate: Fate::Dropped { pipe: next, reason },
            });
        }
    }

    /// Make the pipe's live event match its current deadline.
    #[inline]
    fn reschedule(&mut self, pipe: u32) {
        let p = &self.pipes[pipe as usize];
        let want = p.next_deadline(&self.pool);
        let have = p.scheduled.map(|(t, _)| t);
        if want == have {
            return;
        }
        let sched = want.map(|t| (t, self.events.push(t, pipe)));
        self.pipes[pipe as usize].scheduled = sched;
    }
}
