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
//! The built-ins are listed once, in [`registry`] (files, names,
//! parameters, constructors); see there for the table of algorithms and
//! the steps to add one. The interface is the `Scheduler` trait; the pipe
//! holds the registry's `Sched` enum, so calls are statically dispatched.
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

use crate::config::{Aqm, ConfigError, QueueLimit};
use crate::packet::{List, Pool, NIL};
use crate::time::{Duration, Instant};

pub mod registry;
pub use registry::*;

mod fq;
mod heap;

#[cfg(test)]
mod tests;

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

/// A flow queue's parameters: ipfw `queue N config weight W queue L
/// [red|gred|codel|pie ...]`, and `ecn`.
///
/// The queue management, if any, runs on each instance of the queue, on
/// that instance's own backlog and sojourn times, as dummynet runs a
/// flowset's RED or AQM per queue: RED and PIE when a packet arrives at
/// the instance, CoDel when the scheduler takes a packet from it. With
/// `ecn`, an ECN-capable packet it would drop is marked CE instead.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowSpec {
    weight: u32,
    limit: QueueLimit,
    aqm: Option<Aqm>,
    ecn: bool,
}

impl Default for FlowSpec {
    /// Weight 1, 50 slots, no queue management: ipfw's defaults.
    fn default() -> Self {
        FlowSpec {
            weight: 1,
            limit: QueueLimit::default(),
            aqm: None,
            ecn: false,
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
        Ok(FlowSpec {
            weight,
            limit,
            ..FlowSpec::default()
        })
    }
    /// With queue management on each instance. RED's thresholds are in
    /// its configuration's unit ([`crate::models::QueueMeasure`]): packets
    /// or bytes waiting in the instance.
    pub fn with_aqm(mut self, aqm: Aqm) -> FlowSpec {
        self.aqm = Some(aqm);
        self
    }
    /// `ecn`: the queue management marks ECN-capable packets CE instead of
    /// dropping them.
    pub fn with_ecn(mut self, on: bool) -> FlowSpec {
        self.ecn = on;
        self
    }
    /// The weight (also the priority under `prio`).
    pub fn weight(&self) -> u32 {
        self.weight
    }
    /// The flow queue's bound.
    pub fn limit(&self) -> QueueLimit {
        self.limit
    }
    /// The queue management of each instance, if any.
    pub fn aqm(&self) -> Option<&Aqm> {
        self.aqm.as_ref()
    }
    /// Whether the queue management marks instead of dropping.
    pub fn ecn(&self) -> bool {
        self.ecn
    }
}

/// What a scheduler keeps of a flow queue's [`FlowSpec`]: its weight and
/// limit (the queue management is the pipe's, per instance).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Share {
    weight: u32,
    pub limit: QueueLimit,
}

impl Share {
    /// The weight.
    #[inline]
    pub fn weight(&self) -> u32 {
        self.weight
    }
}

impl From<FlowSpec> for Share {
    fn from(s: FlowSpec) -> Share {
        Share {
            weight: s.weight,
            limit: s.limit,
        }
    }
}

/// A parameter of `sched N config` beyond `type`, as users write it.
/// Which types take which is the registry's ([`SchedEntry::params`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SchedParam {
    /// `quantum BYTES`: a credit per turn per unit of weight, or QFQ's
    /// largest packet.
    Quantum,
    /// `target DURATION`: a CoDel target.
    Target,
    /// `interval DURATION`: a CoDel interval.
    Interval,
    /// `ecn`, a word without a value: the flow queues' AQM marks
    /// ECN-capable packets instead of dropping them.
    Ecn,
}

impl SchedParam {
    /// Every parameter, in the order hints list them.
    pub const ALL: [SchedParam; 4] = [
        SchedParam::Quantum,
        SchedParam::Target,
        SchedParam::Interval,
        SchedParam::Ecn,
    ];

    /// The word users write.
    pub fn name(self) -> &'static str {
        match self {
            SchedParam::Quantum => "quantum",
            SchedParam::Target => "target",
            SchedParam::Interval => "interval",
            SchedParam::Ecn => "ecn",
        }
    }

    /// A word without a value (`ecn`): printed only when on.
    pub fn is_flag(self) -> bool {
        self == SchedParam::Ecn
    }

    /// The parameter written `name`.
    pub fn from_name(name: &str) -> Option<SchedParam> {
        SchedParam::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Scheduler parameters as written (`None`: not given, the kind's own
/// value or the default applies). Each field is named after its
/// [`SchedParam`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SchedParams {
    /// `quantum` in bytes.
    pub quantum: Option<u32>,
    /// `target`.
    pub target: Option<Duration>,
    /// `interval`.
    pub interval: Option<Duration>,
    /// `ecn` (`Some(true)`), or the kind's own setting.
    pub ecn: Option<bool>,
}

impl SchedParams {
    /// Was `param` given?
    pub fn given(&self, param: SchedParam) -> bool {
        match param {
            SchedParam::Quantum => self.quantum.is_some(),
            SchedParam::Target => self.target.is_some(),
            SchedParam::Interval => self.interval.is_some(),
            SchedParam::Ecn => self.ecn.is_some(),
        }
    }

    /// `param`'s value as written after its word (`1514`, `5ms`).
    fn value_text(&self, param: SchedParam) -> Option<String> {
        match param {
            SchedParam::Quantum => self.quantum.map(|q| q.to_string()),
            SchedParam::Target => self.target.map(|d| d.to_string()),
            SchedParam::Interval => self.interval.map(|d| d.to_string()),
            // A flag: its word alone when on, nothing when off.
            SchedParam::Ecn => None,
        }
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
        let cfg = SchedConfig { kind, quantum };
        registry::check(&cfg)?;
        Ok(cfg)
    }

    /// The configuration `sched N config type T` with the parameters `p`
    /// writes: `kind`'s own parameters replaced by those given, the
    /// default quantum if none is. A parameter the kind does not take
    /// (its registry entry's `params`; `quantum` is taken by every kind)
    /// is refused, naming the types that take it.
    pub fn from_params(kind: SchedKind, p: &SchedParams) -> Result<SchedConfig, ConfigError> {
        for param in SchedParam::ALL {
            if param != SchedParam::Quantum && p.given(param) && !kind.takes(param) {
                return Err(ConfigError {
                    param: param.name(),
                    reason: format!(
                        "'{}' is a parameter of type {}, not {}",
                        param.name(),
                        registry::takers(param),
                        kind.name()
                    ),
                });
            }
        }
        SchedConfig::new(kind.with_params(p), p.quantum.unwrap_or(DEFAULT_QUANTUM))
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
    /// `type fq_codel quantum 1514 target 5ms interval 100ms [ecn]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "type {}", self.kind.name())?;
        let values = SchedParams {
            quantum: Some(self.quantum),
            ..self.kind.params()
        };
        for &p in self.kind.entry().params {
            if p.is_flag() {
                if values.ecn == Some(true) {
                    write!(f, " {}", p.name())?;
                }
            } else if let Some(v) = values.value_text(p) {
                write!(f, " {} {v}", p.name())?;
            }
        }
        Ok(())
    }
}

/// A flow queue's say on the packet a scheduler takes from it, called
/// with the packet and, when the scheduler keeps the flow queue's packets
/// apart, the bytes still waiting behind it there (`None` for FIFO's one
/// queue): `true` if it takes the packet away (drops it; the packet is
/// then its own). Told that nothing waits behind, it never takes the
/// packet (CoDel does not drop with at most an MTU behind the head), so a
/// backlogged flow queue always yields a packet.
pub(crate) trait HeadFilter: FnMut(&mut Pool, u32, Option<u64>) -> bool {}

impl<F: FnMut(&mut Pool, u32, Option<u64>) -> bool> HeadFilter for F {}

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
    /// Give the live flow queue in `flow` `spec`'s weight and limit,
    /// keeping its packets and its place; `false` if there is none. The
    /// limit applies to the next arrival (a queue above a lowered limit
    /// keeps its packets). What the weight changes, from the next packet
    /// on, is each scheduler's (its `reweight`): `fifo` ignores weights;
    /// `rr`, `drr` and `fq_codel` give the new credit from the flow's next
    /// turn (the credit left in this one stands); `wf2q+` counts the new
    /// weight in the sum `W` at once and stamps the packets after the head
    /// with it (the head keeps the finish time it was scheduled with);
    /// `qfq` counts it in its weight sum at once and, for a backlogged flow,
    /// moves the flow to the group of its new weight when its head is next
    /// served (an idle flow moves at once); `prio` moves the flow to its new
    /// priority at once.
    fn reweight(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool;
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
    fn dequeue(&mut self, pool: &mut Pool, now: Instant) -> Dequeue {
        self.dequeue_with(pool, now, &mut |_: &mut Pool, _: u32, _: Option<u64>| false)
    }
    /// [`Scheduler::dequeue`], offering each packet taken from a flow
    /// queue to `head` (the flow queue's AQM at dequeue, the pipe's): when
    /// `head` takes it (drops it), the scheduler takes the next packet of
    /// the same flow queue in its place, as dummynet's `dn_dequeue` lets a
    /// queue's AQM do. The scheduler's accounting (deficit, timestamps)
    /// is the one it would have done for the packet it chose.
    fn dequeue_with<H: HeadFilter>(
        &mut self,
        pool: &mut Pool,
        now: Instant,
        head: &mut H,
    ) -> Dequeue;
    /// A packet the scheduler dropped inside `dequeue` (AQM), if any.
    fn pop_dropped(&mut self, pool: &mut Pool) -> Option<u32>;
    /// Forget flow queue `flow` if it holds no packet; `false` if it is
    /// backlogged (nothing changes) or unknown.
    fn remove_idle(&mut self, flow: FlowSlot) -> bool;
    /// Packets and bytes waiting in all flow queues.
    fn backlog(&self) -> (u32, u64);
    /// Does `dequeue` drop packets (an AQM inside the scheduler, as
    /// fq_codel's)? Then the pipe wakes at the end of every transmission to
    /// report them at their instant.
    fn drops_at_dequeue(&self) -> bool {
        false
    }
    /// Did the scheduler's own AQM mark the packet the last `dequeue`
    /// returned CE (fq_codel's and fq_pie's `ecn`) instead of dropping
    /// it? Reading clears it. At most the returned packet is marked: a
    /// mark ends the AQM's turn and sends the packet (RFC 8289 §5.5).
    fn take_mark(&mut self) -> bool {
        false
    }
}

/// One flow queue: its FIFO, its parameters, and the scheduler's per-flow
/// state `T`.
#[derive(Debug)]
pub(crate) struct Flow<T> {
    pub q: List,
    pub spec: Share,
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
                spec: spec.into(),
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

    /// Take the head packet of flow `slot` that `head` lets through (see
    /// [`Scheduler::dequeue_with`]); the ones it takes are its own.
    #[inline]
    pub fn pop_with<H: HeadFilter>(
        &mut self,
        pool: &mut Pool,
        slot: u32,
        head: &mut H,
    ) -> Option<u32> {
        loop {
            let i = self.pop(pool, slot)?;
            let behind = self.get(slot).q.bytes();
            if !head(pool, i, Some(behind)) {
                return Some(i);
            }
            debug_assert!(
                !self.get(slot).q.is_empty(),
                "a head filter took a flow queue's last packet"
            );
        }
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

    /// Give the flow in `slot`, if any, `spec`'s weight and limit; its old
    /// share.
    pub fn reshare(&mut self, slot: FlowSlot, spec: FlowSpec) -> Option<Share> {
        let f = self.v.get_mut(slot.0 as usize).and_then(Option::as_mut)?;
        Some(core::mem::replace(&mut f.spec, spec.into()))
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
