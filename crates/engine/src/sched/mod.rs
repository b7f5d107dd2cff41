//! Packet schedulers: which flow queue a pipe's link serves next
//! (dummynet-revisited §3.6, FreeBSD `dn_sched.h`).
//!
//! A pipe with a scheduler holds one *flow queue* per `queue N` instance
//! (one per pattern of the queue's mask). The caller classifies each packet
//! to a dense [`FlowSlot`] index it assigns, and the scheduler owns the flow
//! queues: their FIFOs of packets, their weight, their slot or byte limit and
//! the tail drop that enforces it. When the link is free the pipe asks the
//! scheduler for the next packet.
//!
//! | file | `type` | algorithm | cost per packet | source |
//! |---|---|---|---|---|
//! | [`fifo`] | `fifo` | one queue, flows ignored (the reference) | O(1) | `dn_sched_fifo.c` |
//! | [`rr`] | `rr` | weighted round robin, `weight` packets per turn | O(1) | classic WRR; DRR with unit cost |
//! | [`drr`] | `drr` | Deficit Round Robin, `quantum × weight` bytes per turn | O(1) | Shreedhar & Varghese, SIGCOMM '95; `dn_sched_rr.c` |
//! | [`wf2q`] | `wf2q+` | WF2Q+ with virtual time | O(log N) | Bennett & Zhang, "Hierarchical Packet Fair Queueing Algorithms", SIGCOMM '96; `dn_sched_wf2q.c` |
//! | [`qfq`] | `qfq` | Quick Fair Queueing, grouped buckets; `quantum` = `Lmax` | O(1) | Checconi, Rizzo & Valente, "QFQ", IEEE/ACM ToN 2013; `dn_sched_qfq.c` |
//! | [`prio`] | `prio` | strict priority by weight | O(log N) | `dn_sched_prio.c` |
//! | [`fq_codel`] | `fq_codel` | DRR over flows, CoDel per flow | O(1) | RFC 8290, RFC 8289; `dn_sched_fq_codel.c` |
//!
//! The interface is the `Scheduler` trait; the built-ins are dispatched
//! statically through the `Sched` enum. Adding a scheduler takes one file
//! and one line in `Sched::new` (plus its arm in the `dispatch!` macro and
//! its `SchedKind` name).
//!
//! ## How the pipe uses this
//!
//! (Implemented by `pipe.rs`'s `SchedQueues` and the engine's instance
//! tables; see [`crate::engine`].)
//!
//! * At configuration the pipe builds `Sched::new(&cfg)` and, for each flow
//!   queue it creates (a new mask pattern), picks a free slot index and calls
//!   `Scheduler::add_flow` with the queue's [`FlowSpec`] (weight, limit).
//!   Slots should be dense: per-flow state is a `Vec` indexed by slot, grown
//!   on `add_flow` (the only allocation; none per packet).
//! * On arrival (after loss/duplication) it calls `Scheduler::enqueue`
//!   instead of pushing on its single FIFO; `Err(SchedDrop)` is a tail drop
//!   of that flow queue, to count like today's `QueueFull`. The scheduler
//!   stamps the slot's `arrival = now`.
//! * When the link becomes free (at `tx_done`, or at an arrival to an idle
//!   link) it calls `Scheduler::dequeue``(now)`: `Packet(i)` starts
//!   transmission of `i` (which is no longer in the scheduler, so
//!   `backlog()` counts waiting packets only, not the one on the wire);
//!   `Empty` leaves the link idle; `WakeAt(t)` (no built-in returns it; a
//!   shaper-like scheduler could) asks to be called again at `t`.
//! * After each `dequeue` it drains `Scheduler::pop_dropped`: packets an
//!   AQM (fq_codel) dropped at the head, to free and count like tail drops.
//! * When a flow queue expires (dummynet frees idle dynamic queues) it calls
//!   `Scheduler::remove_idle`; the slot may then be reused.
//!
//! What this module does not do: classify packets (the caller's masks do),
//! know the link rate or the clock (`now` is an argument), or reorder packets
//! within a flow: every flow queue is FIFO.

use core::fmt;

use crate::config::{ConfigError, QueueLimit};
use crate::packet::{List, Pool, NIL};
use crate::time::{Duration, Instant};

pub mod drr;
pub mod fifo;
pub mod fq_codel;
pub mod prio;
pub mod qfq;
pub mod rr;
pub mod wf2q;

mod heap;

#[cfg(test)]
mod tests;

pub(crate) use drr::Drr;
pub(crate) use fifo::Fifo;
pub(crate) use fq_codel::FqCodel;
pub(crate) use prio::Prio;
pub(crate) use qfq::Qfq;
pub(crate) use rr::Rr;
pub(crate) use wf2q::Wf2q;

/// The largest flow weight accepted (QFQ's `QFQ_MAX_WEIGHT`, 2^16).
pub const MAX_WEIGHT: u32 = 1 << 16;

/// DRR's and fq_codel's default quantum: one Ethernet frame (RFC 8290 §4.2).
pub const DEFAULT_QUANTUM: u32 = 1514;

/// The largest quantum accepted, 1 MiB (a larger one makes DRR a FIFO).
pub const MAX_QUANTUM: u32 = 1 << 20;

/// A flow queue's index, dense and assigned by the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowSlot(pub u32);

/// What the link should do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dequeue {
    /// Transmit this packet (a pool slot, now out of the scheduler).
    Packet(u32),
    /// Nothing may be sent before this instant although packets wait
    /// (a non-work-conserving scheduler; no built-in returns it).
    WakeAt(Instant),
    /// No packet is waiting.
    Empty,
}

/// Why a scheduler refused a packet. The packet stays the caller's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchedDrop {
    /// The flow queue is at its slot or byte limit (tail drop).
    FlowFull,
    /// No flow queue in this slot (`add_flow` was not called).
    UnknownFlow,
    /// Longer than the scheduler accounts for (QFQ: its `Lmax`).
    TooLong,
}

/// A flow queue's parameters: ipfw `queue N config weight W queue L`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowSpec {
    weight: u32,
    limit: QueueLimit,
}

impl Default for FlowSpec {
    /// Weight 1, 50 slots: ipfw's defaults.
    fn default() -> Self {
        FlowSpec {
            weight: 1,
            limit: QueueLimit::default(),
        }
    }
}

impl FlowSpec {
    /// A checked flow queue: weight in `1..=MAX_WEIGHT`, a non-empty limit.
    pub fn new(weight: u32, limit: QueueLimit) -> Result<FlowSpec, ConfigError> {
        if weight == 0 || weight > MAX_WEIGHT {
            return Err(ConfigError {
                param: "weight",
                reason: format!("{weight} is not in 1..={MAX_WEIGHT}"),
            });
        }
        if matches!(limit, QueueLimit::Slots(0) | QueueLimit::Bytes(0)) {
            return Err(ConfigError {
                param: "queue",
                reason: "a queue must hold at least one packet".into(),
            });
        }
        Ok(FlowSpec { weight, limit })
    }
    /// The weight (also the priority under `prio`).
    pub fn weight(&self) -> u32 {
        self.weight
    }
    /// The flow queue's bound.
    pub fn limit(&self) -> QueueLimit {
        self.limit
    }
}

/// Which algorithm, with its algorithm-specific parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchedKind {
    /// One FIFO for all flows.
    Fifo,
    /// Weighted round robin: `weight` packets per turn.
    Rr,
    /// Deficit Round Robin: `quantum × weight` bytes per turn.
    Drr,
    /// WF2Q+.
    Wf2q,
    /// Quick Fair Queueing.
    Qfq,
    /// Strict priority: the backlogged flow of highest weight.
    Prio,
    /// FQ-CoDel (RFC 8290) with CoDel's `target` and `interval`.
    FqCodel {
        /// Acceptable standing queue delay (RFC 8289 default 5 ms).
        target: Duration,
        /// Sliding window for the minimum delay (default 100 ms).
        interval: Duration,
    },
}

impl SchedKind {
    /// fq_codel with RFC 8290's defaults: target 5 ms, interval 100 ms.
    pub const FQ_CODEL: SchedKind = SchedKind::FqCodel {
        target: Duration::from_millis(5),
        interval: Duration::from_millis(100),
    };

    /// The ipfw name (`type NAME`).
    pub fn name(self) -> &'static str {
        match self {
            SchedKind::Fifo => "fifo",
            SchedKind::Rr => "rr",
            SchedKind::Drr => "drr",
            SchedKind::Wf2q => "wf2q+",
            SchedKind::Qfq => "qfq",
            SchedKind::Prio => "prio",
            SchedKind::FqCodel { .. } => "fq_codel",
        }
    }

    /// The kind named `name` (ipfw's spellings, `wf2qp` too), with default
    /// parameters.
    pub fn from_name(name: &str) -> Option<SchedKind> {
        Some(match name {
            "fifo" => SchedKind::Fifo,
            "rr" => SchedKind::Rr,
            "drr" => SchedKind::Drr,
            "wf2q+" | "wf2qp" => SchedKind::Wf2q,
            "qfq" => SchedKind::Qfq,
            "prio" => SchedKind::Prio,
            "fq_codel" => SchedKind::FQ_CODEL,
            _ => return None,
        })
    }

    fn uses_quantum(self) -> bool {
        matches!(
            self,
            SchedKind::Drr | SchedKind::Qfq | SchedKind::FqCodel { .. }
        )
    }
}

/// A scheduler's configuration: ipfw `sched N config type T [quantum Q]`.
/// For `qfq`, `quantum` is the largest packet (`Lmax`, at most 2^16).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SchedConfig {
    kind: SchedKind,
    quantum: u32,
}

impl Default for SchedConfig {
    /// `type fifo`, as a pipe without a scheduler behaves.
    fn default() -> Self {
        SchedConfig {
            kind: SchedKind::Fifo,
            quantum: DEFAULT_QUANTUM,
        }
    }
}

impl SchedConfig {
    /// A checked configuration: quantum in bytes, `1..=MAX_QUANTUM`;
    /// fq_codel's target and interval non-zero, target below interval.
    pub fn new(kind: SchedKind, quantum: u32) -> Result<SchedConfig, ConfigError> {
        if quantum == 0 || quantum > MAX_QUANTUM {
            return Err(ConfigError {
                param: "quantum",
                reason: format!("{quantum} is not in 1..={MAX_QUANTUM} bytes"),
            });
        }
        if kind == SchedKind::Qfq && quantum > qfq::QFQ_MAX_LEN {
            return Err(ConfigError {
                param: "quantum",
                reason: format!(
                    "qfq's largest packet {quantum} is more than {}",
                    qfq::QFQ_MAX_LEN
                ),
            });
        }
        if let SchedKind::FqCodel { target, interval } = kind {
            if target == Duration::ZERO || interval <= target {
                return Err(ConfigError {
                    param: "target",
                    reason: format!("need 0 < target ({target}) < interval ({interval})"),
                });
            }
        }
        Ok(SchedConfig { kind, quantum })
    }
    /// A configuration with the default quantum.
    pub fn of(kind: SchedKind) -> SchedConfig {
        SchedConfig {
            kind,
            quantum: DEFAULT_QUANTUM,
        }
    }
    /// The algorithm.
    pub fn kind(&self) -> SchedKind {
        self.kind
    }
    /// Bytes: DRR's and fq_codel's credit per turn (per unit weight), and
    /// QFQ's largest packet `Lmax` (dummynet's `maxlen`); ignored by the
    /// others.
    pub fn quantum(&self) -> u32 {
        self.quantum
    }
}

impl fmt::Display for SchedConfig {
    /// ipfw words: `type wf2q+`, `type drr quantum 1514`,
    /// `type fq_codel quantum 1514 target 5ms interval 100ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "type {}", self.kind.name())?;
        if self.kind.uses_quantum() {
            write!(f, " quantum {}", self.quantum)?;
        }
        if let SchedKind::FqCodel { target, interval } = self.kind {
            write!(f, " target {target} interval {interval}")?;
        }
        Ok(())
    }
}

/// The scheduler interface (dummynet's `struct dn_alg`).
///
/// Packets are pool slot indices. A packet given to `enqueue` belongs to the
/// scheduler until `dequeue` or `pop_dropped` returns it, or `enqueue`
/// refuses it.
pub(crate) trait Scheduler {
    /// Create (or re-parameterize) the flow queue in `flow`. A free or idle
    /// slot takes `spec` whole; a backlogged one only takes the new limit
    /// (the weight is kept until it goes idle) and `false` is returned.
    fn add_flow(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool;
    /// Offer packet `pkt` to flow queue `flow` at `now`; tail drop if the
    /// flow queue is full.
    fn enqueue(
        &mut self,
        pool: &mut Pool,
        flow: FlowSlot,
        pkt: u32,
        now: Instant,
    ) -> Result<(), SchedDrop>;
    /// The next packet to transmit at `now`.
    fn dequeue(&mut self, pool: &mut Pool, now: Instant) -> Dequeue;
    /// A packet the scheduler dropped inside `dequeue` (AQM), if any.
    fn pop_dropped(&mut self, pool: &mut Pool) -> Option<u32>;
    /// Forget flow queue `flow` if it holds no packet; `false` if it is
    /// backlogged (nothing changes) or unknown.
    fn remove_idle(&mut self, flow: FlowSlot) -> bool;
    /// Packets and bytes waiting in all flow queues.
    fn backlog(&self) -> (u32, u64);
}

/// The built-in schedulers, statically dispatched.
#[derive(Debug)]
pub(crate) enum Sched {
    Fifo(Fifo),
    Rr(Rr),
    Drr(Drr),
    Wf2q(Wf2q),
    Qfq(Qfq),
    Prio(Prio),
    FqCodel(FqCodel),
}

impl Sched {
    /// The registry: a fresh scheduler for `cfg`.
    pub(crate) fn new(cfg: &SchedConfig) -> Sched {
        match cfg.kind() {
            SchedKind::Fifo => Sched::Fifo(Fifo::new()),
            SchedKind::Rr => Sched::Rr(Rr::new()),
            SchedKind::Drr => Sched::Drr(Drr::new(cfg.quantum())),
            SchedKind::Wf2q => Sched::Wf2q(Wf2q::new()),
            SchedKind::Qfq => Sched::Qfq(Qfq::new(cfg.quantum())),
            SchedKind::Prio => Sched::Prio(Prio::new()),
            SchedKind::FqCodel { target, interval } => {
                Sched::FqCodel(FqCodel::new(cfg.quantum(), target, interval))
            }
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            Sched::Fifo($s) => $e,
            Sched::Rr($s) => $e,
            Sched::Drr($s) => $e,
            Sched::Wf2q($s) => $e,
            Sched::Qfq($s) => $e,
            Sched::Prio($s) => $e,
            Sched::FqCodel($s) => $e,
        }
    };
}

impl Scheduler for Sched {
    #[inline]
    fn add_flow(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
        dispatch!(self, s => s.add_flow(flow, spec))
    }
    #[inline]
    fn enqueue(
        &mut self,
        pool: &mut Pool,
        flow: FlowSlot,
        pkt: u32,
        now: Instant,
    ) -> Result<(), SchedDrop> {
        dispatch!(self, s => s.enqueue(pool, flow, pkt, now))
    }
    #[inline]
    fn dequeue(&mut self, pool: &mut Pool, now: Instant) -> Dequeue {
        dispatch!(self, s => s.dequeue(pool, now))
    }
    #[inline]
    fn pop_dropped(&mut self, pool: &mut Pool) -> Option<u32> {
        dispatch!(self, s => s.pop_dropped(pool))
    }
    #[inline]
    fn remove_idle(&mut self, flow: FlowSlot) -> bool {
        dispatch!(self, s => s.remove_idle(flow))
    }
    #[inline]
    fn backlog(&self) -> (u32, u64) {
        dispatch!(self, s => s.backlog())
    }
}

/// One flow queue: its FIFO, its parameters, and the scheduler's per-flow
/// state `T`.
#[derive(Debug)]
pub(crate) struct Flow<T> {
    pub q: List,
    pub spec: FlowSpec,
    pub st: T,
}

/// The flow queues of a scheduler, indexed by slot, with backlog totals.
/// Shared by every scheduler but FIFO: tail drop lives here.
#[derive(Debug)]
pub(crate) struct Flows<T> {
    v: Vec<Option<Flow<T>>>,
    pkts: u32,
    bytes: u64,
}

impl<T> Default for Flows<T> {
    fn default() -> Self {
        Flows {
            v: Vec::new(),
            pkts: 0,
            bytes: 0,
        }
    }
}

/// What [`Flows::insert`] found in the slot.
pub(crate) enum Insert<T> {
    /// The slot was free.
    New,
    /// An idle flow was replaced; here is its old state.
    Replaced(Flow<T>),
    /// The flow is backlogged: only its limit changed.
    Busy,
}

impl<T> Flows<T> {
    /// Put a flow queue in `slot` (see [`Scheduler::add_flow`]).
    pub fn insert(&mut self, slot: FlowSlot, spec: FlowSpec, st: T) -> Insert<T> {
        let i = slot.0 as usize;
        if self.v.len() <= i {
            self.v.resize_with(i + 1, || None);
        }
        match &mut self.v[i] {
            Some(f) if !f.q.is_empty() => {
                f.spec.limit = spec.limit;
                Insert::Busy
            }
            e => match e.replace(Flow {
                q: List::default(),
                spec,
                st,
            }) {
                Some(old) => Insert::Replaced(old),
                None => Insert::New,
            },
        }
    }

    /// Remove the flow in `slot` if it is idle.
    pub fn remove_idle(&mut self, slot: FlowSlot) -> Option<Flow<T>> {
        let e = self.v.get_mut(slot.0 as usize)?;
        if e.as_ref()?.q.is_empty() {
            e.take()
        } else {
            None
        }
    }

    /// Tail-drop check, stamp `arrival`, append. `Ok(true)` if the flow
    /// was empty (it just became backlogged).
    #[inline]
    pub fn admit(
        &mut self,
        pool: &mut Pool,
        slot: FlowSlot,
        pkt: u32,
        now: Instant,
    ) -> Result<bool, SchedDrop> {
        let f = self
            .v
            .get_mut(slot.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(SchedDrop::UnknownFlow)?;
        let len = pool.get(pkt).pkt.len;
        if !f.spec.limit.admits(f.q.len(), f.q.bytes(), len) {
            return Err(SchedDrop::FlowFull);
        }
        pool.get_mut(pkt).arrival = now;
        let was_empty = f.q.is_empty();
        f.q.push_back(pool, pkt);
        self.pkts += 1;
        self.bytes += len as u64;
        Ok(was_empty)
    }

    /// Take the head packet of flow `slot`.
    #[inline]
    pub fn pop(&mut self, pool: &mut Pool, slot: u32) -> Option<u32> {
        let i = self.get_mut(slot).q.pop_front(pool)?;
        self.pkts -= 1;
        self.bytes -= pool.get(i).pkt.len as u64;
        Some(i)
    }

    /// Length of flow `slot`'s head packet.
    #[inline]
    pub fn head_len(&self, pool: &Pool, slot: u32) -> Option<u32> {
        self.get(slot).q.front().map(|i| pool.get(i).pkt.len)
    }

    /// The flow in `slot`; panics if there is none (an internal invariant:
    /// schedulers only name flows they hold).
    #[inline]
    pub fn get(&self, slot: u32) -> &Flow<T> {
        self.v[slot as usize].as_ref().expect("flow slot in use")
    }

    /// The flow in `slot`, if any.
    #[inline]
    pub fn try_get(&self, slot: u32) -> Option<&Flow<T>> {
        self.v.get(slot as usize).and_then(Option::as_ref)
    }

    /// Mutable [`Flows::get`].
    #[inline]
    pub fn get_mut(&mut self, slot: u32) -> &mut Flow<T> {
        self.v[slot as usize].as_mut().expect("flow slot in use")
    }

    /// Waiting packets and bytes over all flows.
    #[inline]
    pub fn backlog(&self) -> (u32, u64) {
        (self.pkts, self.bytes)
    }
}

/// An intrusive FIFO of flow slots (DRR's active list, fq_codel's new and
/// old lists), linked through a `next` field of the per-flow state.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FlowRing {
    pub head: u32,
    pub tail: u32,
}

impl Default for FlowRing {
    fn default() -> Self {
        FlowRing {
            head: NIL,
            tail: NIL,
        }
    }
}

impl FlowRing {
    /// Append `slot`; `next(s)` is the link field of flow `s`.
    #[inline]
    pub fn push_back<T>(
        &mut self,
        flows: &mut Flows<T>,
        slot: u32,
        next: impl Fn(&mut T) -> &mut u32,
    ) {
        *next(&mut flows.get_mut(slot).st) = NIL;
        if self.tail == NIL {
            self.head = slot;
        } else {
            *next(&mut flows.get_mut(self.tail).st) = slot;
        }
        self.tail = slot;
    }

    /// Remove and return the head.
    #[inline]
    pub fn pop_front<T>(
        &mut self,
        flows: &mut Flows<T>,
        next: impl Fn(&mut T) -> &mut u32,
    ) -> Option<u32> {
        let h = self.head;
        if h == NIL {
            return None;
        }
        let n = next(&mut flows.get_mut(h).st);
        self.head = *n;
        *n = NIL;
        if self.head == NIL {
            self.tail = NIL;
        }
        Some(h)
    }

    /// True when no flow is linked.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head == NIL
    }
}
