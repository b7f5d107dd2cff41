//! Running a configuration or a topology against synthetic traffic in
//! virtual time, on one or several workers.
//!
//! The loop is the virtual-time driver of the engine: take the earliest of
//! the next packet arrival, the next hand-off and the engine's next
//! deadline, advance the engine to it, settle what came out, inject what
//! arrives. Every packet that leaves the engine does so exactly at the
//! instant advanced to, so a packet reinjected into the classifier (`set
//! one_pass 0`) enters its next pipe at its exact exit time.
//!
//! **Partitions.** The pipes are cut into `K` partitions
//! ([`crate::partition`]), each run by a worker thread with an emulation
//! of the whole spec of which it feeds only its own pipes. A packet whose
//! path goes on into another partition leaves its pipe early, at the end
//! of its transmission, stamped with its exit instant, which is at least
//! the lookahead `L` ahead; the workers run in barrier-synchronous
//! windows `[T, T + L)` and exchange these hand-offs at each barrier, `T`
//! being the earliest instant anything is due anywhere. Inside a window a
//! worker lets a hand-off in exactly where the canonical order `(time,
//! pipe key)` places it among its own events, so each worker does what
//! one engine doing all the work would do to its pipes. Fresh packets are
//! admitted by the rules on the driver's thread (each port's `prob` draws
//! are its own) and injected by the worker owning their first pipe, after
//! the engine's events of their instant, as one engine does. What the
//! workers report is merged exactly: deliveries in the order `(instant,
//! flow, sequence)`, counters summed, pipes from their owner. K = 1 runs
//! the same code with one partition, so the report is the same, byte for
//! byte, for any K.
//!
//! Synthetic packets are seen by rules as entering the emulator (`in`) in
//! a configuration, and as a topology's ports say in a topology (they
//! enter at the VN port their source address belongs to).

use crate::partition::{self, Plan};
use crate::report::Drops;
use crate::report::{
    FlowAcc, InstanceCounts, PipeInstanceReport, PipeReport, QueueInstanceReport, QueueReport,
    Report, RuleReport,
};
use crate::source::Source;
use crate::timeseries::{self, FlowBucket, MAX_INTERVALS};
use crate::trace::{TraceKind, Traced};
use pipelab_classify::{Answer, Direction, PacketView};
use pipelab_emu::{
    lower_config, Admission, AdmitMemo, Compiled, Departure, Emulation, Entry, Exit, Ingress,
    LowerError, Reason, Spec, SpecError,
};
use pipelab_engine::engine::{EngineOptions, Handoff, InstanceStats, QueueId};
use pipelab_engine::rng::{stage_rng, StageKind};
use pipelab_engine::{Duration, FlowKey, Instant, Packet, PipeStats};
use pipelab_lang::{Config, TrafficProto, TrafficSpec};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::mpsc;

pub use pipelab_emu::MAX_PASSES;

/// Simulation settings.
#[derive(Clone, Copy, Debug)]
pub struct SimOptions {
    /// Seed of every random decision (traffic, `prob`, models).
    pub seed: u64,
    /// Most packets inside the engine at once (of each partition).
    pub max_packets: u32,
    /// Worker threads, each running a partition of the pipes (at least
    /// 1). The report does not depend on it.
    pub workers: usize,
    /// Cut the run into intervals of this length and report what each
    /// pipe and flow did in each ([`crate::timeseries`]); `None`: no
    /// series. With it the pipes run in one partition (a pipe cut between
    /// workers lets its packets out early, at the end of their
    /// transmission, so its departures would be counted early).
    pub interval: Option<Duration>,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            seed: 1,
            max_packets: EngineOptions::default().max_packets,
            workers: 1,
            interval: None,
        }
    }
}

/// What to run: an emulation spec and how its objects are named in the
/// report. A configuration makes one with [`Scenario::from_config`]; a
/// topology's is lowered by its caller (`pipelab_topo::lower`, which this
/// crate does not depend on).
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The spec. Its ports are where sources enter: with a topology's
    /// paths, the port of the source address; else port 0.
    pub spec: Spec,
    /// Each pipe's configuration as the report prints it, by number;
    /// pipes without one are left out of the report.
    pub pipe_text: BTreeMap<u32, String>,
    /// Each configured flow queue's pipe and text, by number.
    pub queue_text: BTreeMap<u32, (u32, String)>,
    /// A partition of the pipes the caller wants, by number (to try a
    /// given partition; groups that cannot be cut take their majority's);
    /// `None`, the default: cut by the traffic's packets along its routes
    /// ([`crate::partition`]).
    pub hint: Option<BTreeMap<u32, u32>>,
}

impl Scenario {
    /// The scenario of `config`: its spec with one port whose frames the
    /// rules see as `in`, its pipes and queues named by their canonical
    /// text. Files its pipes name are read with `load`.
    pub fn from_config(
        config: &Config,
        load: &mut dyn FnMut(&str) -> Result<String, String>,
    ) -> Result<Scenario, SimError> {
        let mut spec = lower_config(config, load)?;
        spec.ports = Spec::single_port("sim", Some(Direction::In));
        Ok(Scenario {
            spec,
            pipe_text: config
                .pipes
                .iter()
                .map(|(n, p)| (*n, p.to_string()))
                .collect(),
            queue_text: config
                .queues
                .iter()
                .map(|(n, q)| (*n, (q.target.number(), q.to_string())))
                .collect(),
            hint: None,
        })
    }
}

/// What a run did beyond its report: how it was partitioned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunInfo {
    /// Partitions that ran (at most the workers asked for).
    pub partitions: usize,
    /// Why fewer partitions ran than workers were asked for, if so.
    pub note: Option<String>,
    /// Windows of virtual time the workers ran in step.
    pub windows: u64,
    /// Hand-offs between partitions.
    pub handoffs: u64,
}

/// Why a simulation could not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// A pipe's parameters are invalid.
    Pipe {
        /// The pipe's number.
        id: u32,
        /// What is wrong.
        reason: String,
    },
    /// The configuration uses something the simulator cannot run yet.
    Unsupported(String),
    /// No traffic was given.
    NoTraffic,
    /// A traffic source cannot run here.
    Traffic {
        /// Its index (order of the sources, from 0).
        flow: usize,
        /// Why.
        reason: String,
    },
    /// `workers` is 0.
    Workers,
    /// A worker thread failed.
    Worker(String),
    /// The interval of the series cannot cut this run.
    Interval(String),
    /// An event falls at or past the last instant virtual time can hold
    /// ([`Instant::MAX`], 2⁶⁴ − 1 ns, about 584 years): an instant
    /// computed past it (a transmission at a few bits per second, a
    /// delay of centuries) saturates there, where no run can reach it.
    /// The run stops rather than report packets as delivered at a wrong
    /// time.
    Horizon {
        /// The last instant the run reached.
        reached: Instant,
        /// The pipes still holding packets then, with how many (in the
        /// queue, on the wire and in the delay line), by number.
        holding: Vec<(u32, u64)>,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Pipe { id, reason } => write!(f, "pipe {id}: {reason}"),
            SimError::Unsupported(s) => write!(f, "{s}"),
            SimError::NoTraffic => f.write_str(
                "no traffic: give at least one --traffic, e.g. --traffic 'cbr rate 1000pps size 1000B duration 10s'",
            ),
            SimError::Traffic { flow, reason } => write!(f, "--traffic #{}: {reason}", flow + 1),
            SimError::Workers => f.write_str("workers: give at least 1"),
            SimError::Worker(m) => write!(f, "a worker thread failed: {m}"),
            SimError::Interval(m) => write!(f, "--interval: {m}"),
            SimError::Horizon { reached, holding } => {
                let held: Vec<String> = holding
                    .iter()
                    .map(|(n, k)| format!("pipe {n} holds {k}"))
                    .collect();
                let held = if held.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", held.join(", "))
                };
                write!(
                    f,
                    "virtual time overflow: packets would leave after {} ns (about 584 years), the last instant virtual time can hold{held}; the run had reached {:.3} s (about {:.1} years): a bandwidth too low or a delay too long for this traffic",
                    u64::MAX,
                    reached.as_nanos() as f64 / 1e9,
                    reached.as_nanos() as f64 / 1e9 / SECS_PER_YEAR,
                )
            }
        }
    }
}

/// Seconds in a (Julian) year, for messages.
const SECS_PER_YEAR: f64 = 365.25 * 86_400.0;

impl std::error::Error for SimError {}

impl From<LowerError> for SimError {
    fn from(e: LowerError) -> SimError {
        match e {
            LowerError::Pipe { id, reason } => SimError::Pipe { id, reason },
            LowerError::Sched { id, reason } => SimError::Pipe {
                id,
                reason: format!("sched {id}: {reason}"),
            },
            other => SimError::Unsupported(other.to_string()),
        }
    }
}

impl From<SpecError> for SimError {
    fn from(e: SpecError) -> SimError {
        SimError::Unsupported(e.to_string())
    }
}

/// The view of a synthetic packet: an IP packet entering the emulator.
fn view_of(pkt: &Packet) -> PacketView {
    PacketView {
        dir: Some(Direction::In),
        ..PacketView::ip(pkt.key, pkt.len)
    }
}

/// The flow key of source `index`: its `from` and `to` (by default
/// 10.0.0.1, port 10000 + `index`, to 10.0.0.2:5001) and protocol (UDP
/// unless TCP).
pub fn flow_key(spec: &TrafficSpec, index: usize) -> FlowKey {
    let from = spec.from.unwrap_or_else(|| {
        SocketAddr::new(
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            10_000u16.wrapping_add(index as u16),
        )
    });
    let to = spec
        .to
        .unwrap_or_else(|| SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 5001));
    FlowKey {
        proto: match spec.proto.unwrap_or(TrafficProto::Udp) {
            TrafficProto::Udp => 17,
            TrafficProto::Tcp => 6,
        },
        src: from.ip(),
        dst: to.ip(),
        sport: from.port(),
        dport: to.port(),
    }
}

/// What happened to a packet, as the flows' accounting takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// Delivered (a copy if flagged so).
    Delivered,
    /// Dropped, why.
    Dropped(Reason),
    /// Dropped by a `reset` or `unreach` rule, and answered.
    Answered(Answer),
    /// A copy was made (only the instant counts).
    Copied,
}

/// One packet's fate, in the order the flows take them: by instant, flow,
/// sequence (a total order that does not depend on which worker saw it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Record {
    at: Instant,
    flow: u32,
    tag: u64,
    event: Event,
    flags: u8,
    len: u32,
    born: Instant,
    /// The port a delivered packet left by (0 otherwise).
    port: u16,
}

impl Record {
    fn of(pkt: &Packet, at: Instant, event: Event, port: u16) -> Record {
        Record {
            at,
            flow: pkt.flow,
            tag: pkt.tag,
            event,
            flags: pkt.flags,
            len: pkt.len,
            born: pkt.born,
            port,
        }
    }

    fn departure(d: &Departure) -> Record {
        let (event, port) = match d.exit {
            Exit::Deliver { port } => (Event::Delivered, port),
            Exit::Dropped(r) => (Event::Dropped(r), 0),
            Exit::Answer(a) => (Event::Answered(a), 0),
            Exit::Duplicated => (Event::Copied, 0),
        };
        Record::of(&d.pkt, d.at, event, port)
    }
}

/// A trace being written ([`simulate_traced`]): the arrivals not yet
/// reported (in order), what each flow's packets look like, and the
/// backlog so far.
struct Tracer<'t> {
    out: &'t mut dyn FnMut(&Traced),
    arrivals: std::collections::VecDeque<Packet>,
    /// Each source's port and flow key.
    ports: Vec<u16>,
    keys: Vec<FlowKey>,
    inside: u32,
    inside_bytes: u64,
}

impl Tracer<'_> {
    fn emit(&mut self, at: Instant, port: u16, kind: TraceKind, pkt: Packet) {
        match kind {
            TraceKind::Arrive | TraceKind::Duplicate => {
                self.inside += 1;
                self.inside_bytes += pkt.len as u64;
            }
            TraceKind::Depart | TraceKind::Drop(_) => {
                self.inside = self.inside.saturating_sub(1);
                self.inside_bytes = self.inside_bytes.saturating_sub(pkt.len as u64);
            }
        }
        (self.out)(&Traced {
            at,
            port,
            kind,
            pkt,
            backlog_packets: self.inside,
            backlog_bytes: self.inside_bytes,
        });
    }

    /// Report the arrivals up to `t` (each before anything else of its
    /// instant).
    fn arrivals_until(&mut self, t: Instant) {
        while self.arrivals.front().is_some_and(|p| p.born <= t) {
            if let Some(p) = self.arrivals.pop_front() {
                let port = self.ports.get(p.flow as usize).copied().unwrap_or(0);
                self.emit(p.born, port, TraceKind::Arrive, p);
            }
        }
    }

    fn record(&mut self, r: &Record) {
        self.arrivals_until(r.at);
        let mut pkt = Packet {
            flow: r.flow,
            tag: r.tag,
            born: r.born,
            flags: r.flags,
            ..Packet::new(r.len)
        };
        pkt.key = self.keys.get(r.flow as usize).copied().unwrap_or_default();
        let from = self.ports.get(r.flow as usize).copied().unwrap_or(0);
        let (port, kind) = match r.event {
            Event::Delivered => (r.port, TraceKind::Depart),
            Event::Dropped(why) => (from, TraceKind::Drop(why)),
            Event::Answered(a) => (from, TraceKind::Drop(a.into())),
            Event::Copied => (from, TraceKind::Duplicate),
        };
        self.emit(r.at, port, kind, pkt);
    }
}

/// The flows' accounting, fed records in their order.
struct Flows<'t> {
    flows: Vec<FlowAcc>,
    end: Instant,
    /// Records not yet due for accounting (stamped at or after the last
    /// window accounted for), in order.
    pending: Vec<Record>,
    /// The records of fresh packets the rules settled (delivered,
    /// dropped or answered at admission), in order.
    admitted: Vec<Record>,
    /// Each worker's records of a window, each run in order.
    runs: Vec<Vec<Record>>,
    /// Emptied buffers for the workers' runs (they go back and forth
    /// rather than being allocated each window).
    spare: Vec<Vec<Record>>,
    /// The next `pending`, built while merging.
    rest: Vec<Record>,
    trace: Option<Tracer<'t>>,
    /// With an interval: its length (ns) and each flow's buckets.
    series: Option<(u64, Vec<Vec<FlowBucket>>)>,
}

impl Flows<'_> {
    /// A packet of flow `i`, `len` bytes, sent at `at`.
    fn sent(&mut self, i: usize, len: u32, at: Instant) {
        if let Some(f) = self.flows.get_mut(i) {
            f.sent += 1;
            f.sent_bytes += len as u64;
        }
        if let Some((d, series)) = &mut self.series {
            if let Some(b) = series.get_mut(i) {
                let b = timeseries::bucket(b, at, *d);
                b.sent += 1;
                b.sent_bytes += len as u64;
            }
        }
    }

    fn take(&mut self, r: &Record) {
        self.end = self.end.max(r.at);
        if let Some(t) = self.trace.as_mut() {
            t.record(r);
        }
        let Some(f) = self.flows.get_mut(r.flow as usize) else {
            return;
        };
        let bucket = match &mut self.series {
            Some((d, series)) => series
                .get_mut(r.flow as usize)
                .map(|b| timeseries::bucket(b, r.at, *d)),
            None => None,
        };
        match r.event {
            Event::Delivered => {
                let mut pkt = Packet::new(r.len);
                pkt.flags = r.flags;
                let delay = r.at - r.born;
                f.delivered(&pkt, r.tag, delay, r.at);
                if let Some(b) = bucket {
                    if r.flags & Packet::DUPLICATE == 0 {
                        b.delivered(r.len, delay.as_nanos());
                    }
                }
            }
            Event::Dropped(reason) => {
                count_drop(&mut f.drops, reason);
                if let Some(b) = bucket {
                    count_drop(&mut b.drops, reason);
                }
            }
            Event::Answered(a) => {
                let reason = a.into();
                count_drop(&mut f.drops, reason);
                f.answers += 1;
                if let Some(b) = bucket {
                    count_drop(&mut b.drops, reason);
                }
            }
            Event::Copied => {}
        }
    }

    /// Account for every record stamped before `end`, in order: a merge
    /// of the sorted runs (what is left pending, the admission's, each
    /// worker's), which keeps the rest pending, in order.
    fn flush_before(&mut self, end: Instant) {
        let mut runs = std::mem::take(&mut self.runs);
        let pending = std::mem::take(&mut self.pending);
        let admitted = std::mem::take(&mut self.admitted);
        let mut rest = std::mem::take(&mut self.rest);
        {
            let mut heads: Vec<&[Record]> = Vec::with_capacity(runs.len() + 2);
            heads.extend(
                [pending.as_slice(), admitted.as_slice()]
                    .into_iter()
                    .chain(runs.iter().map(Vec::as_slice))
                    .filter(|r| !r.is_empty()),
            );
            debug_assert!(heads.iter().all(|r| r.is_sorted()));
            while !heads.is_empty() {
                // The run whose head comes first (few runs: a scan).
                let mut k = 0;
                for j in 1..heads.len() {
                    if heads[j][0] < heads[k][0] {
                        k = j;
                    }
                }
                let r = heads[k][0];
                heads[k] = &heads[k][1..];
                if heads[k].is_empty() {
                    heads.swap_remove(k);
                }
                if r.at < end {
                    self.take(&r);
                } else {
                    rest.push(r);
                }
            }
        }
        self.pending = rest;
        self.rest = pending;
        self.rest.clear();
        self.admitted = admitted;
        self.admitted.clear();
        for mut r in runs.drain(..) {
            r.clear();
            self.spare.push(r);
        }
        self.runs = runs;
    }
}

fn count_drop(d: &mut Drops, r: Reason) {
    d.count(r);
}

/// A fresh packet for a worker: when, and its first stage.
struct Inject {
    at: Instant,
    pkt: Packet,
    entry: Entry,
}

/// What the driver gives a worker for one window.
struct WindowIn {
    /// The window ends (exclusive).
    end: Instant,
    /// Fresh packets, in order of time and source.
    inject: Vec<Inject>,
    /// Hand-offs into this partition.
    handoffs: Vec<Handoff>,
    /// An empty buffer for the window's records.
    records: Vec<Record>,
    /// An empty buffer for the window's hand-offs out.
    out: Vec<(u32, Handoff)>,
}

/// What a worker gives back at the end of a window.
#[derive(Default)]
struct WindowOut {
    /// What happened to packets, in order (instant, flow, sequence).
    records: Vec<Record>,
    /// Hand-offs into other partitions, with the partition each goes to.
    handoffs: Vec<(u32, Handoff)>,
    /// When it next has work of its own.
    next: Option<Instant>,
    /// The last instant it ran in the window, if any.
    reached: Option<Instant>,
    /// The window's buffers of fresh packets and hand-offs in, emptied,
    /// for the next window.
    inject: Vec<Inject>,
    handoffs_in: Vec<Handoff>,
}

/// A hand-off waiting in its partition, in canonical order.
struct Transit(Handoff);

impl PartialEq for Transit {
    fn eq(&self, o: &Self) -> bool {
        self.0.order() == o.0.order()
    }
}
impl Eq for Transit {}
impl PartialOrd for Transit {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Transit {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.order().cmp(&o.0.order())
    }
}

/// One partition: an emulation of the whole spec that feeds only its own
/// pipes, and the hand-offs waiting for it.
struct Worker<'a> {
    part: u32,
    emu: Emulation,
    plan: &'a Plan,
    transit: BinaryHeap<Reverse<Transit>>,
    departures: Vec<Departure>,
    handoffs: Vec<Handoff>,
    /// With an interval: the counters of its pipes at interval ends.
    sampler: Option<Sampler>,
}

/// A worker's samples of its own pipes' counters, one per interval end
/// ([`crate::timeseries`]).
struct Sampler {
    interval_ns: u64,
    /// The next interval end to sample.
    next: u64,
    /// Samples taken.
    taken: u64,
    /// Its pipes, by number, with their samples.
    pipes: BTreeMap<u32, Vec<PipeStats>>,
}

impl Sampler {
    /// Sample every interval end up to `t` (inclusive), at most `upto`
    /// in all: at each, every event before it done and none at it.
    fn upto(&mut self, emu: &mut Emulation, t: Instant, upto: u64) {
        while self.next <= t.as_nanos() && self.taken < upto.min(MAX_INTERVALS) {
            emu.settle_before(Instant(self.next));
            for (&n, v) in self.pipes.iter_mut() {
                v.push(emu.pipe_totals(n).unwrap_or_default());
            }
            self.taken += 1;
            self.next = self.next.saturating_add(self.interval_ns);
        }
    }
}

impl Worker<'_> {
    fn next(&mut self) -> Option<Instant> {
        let t = self.transit.peek().map(|r| r.0 .0.at);
        match (self.emu.next_deadline(), t) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Run every instant before `w.end`: at each, the engine's events and
    /// the hand-offs due then in canonical order, then the fresh packets.
    fn window(&mut self, w: WindowIn) -> WindowOut {
        let WindowIn {
            end,
            inject: mut fresh,
            handoffs: mut hin,
            records,
            out: handoffs,
        } = w;
        let mut out = WindowOut {
            records,
            handoffs,
            ..WindowOut::default()
        };
        for h in hin.drain(..) {
            self.transit.push(Reverse(Transit(h)));
        }
        // The records of the instant being run start here (an instant
        // may take several turns of the loop).
        let mut group = (Instant::ZERO, 0usize);
        let mut inject = fresh.drain(..).peekable();
        loop {
            let t = match (self.next(), inject.peek().map(|i| i.at)) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(t) => t,
                    None => break,
                },
            };
            if t >= end {
                break;
            }
            out.reached = Some(t);
            if t != group.0 {
                group = (t, out.records.len());
            }
            if let Some(s) = &mut self.sampler {
                s.upto(&mut self.emu, t, u64::MAX);
            }
            while let Some(Reverse(Transit(h))) = self.transit.peek() {
                if h.at != t {
                    break;
                }
                let h = *h;
                self.transit.pop();
                self.emu.advance_before(t, (t, h.key));
                self.emu
                    .enter_route(t, h.pkt, h.route, h.hop, &mut self.departures);
            }
            self.emu.advance(t, &mut self.departures, &mut view_of);
            while let Some(i) = inject.next_if(|i| i.at == t) {
                match self.emu.enter(t, i.pkt, i.entry) {
                    Ingress::Queued => {}
                    Ingress::Out(p) => out.records.push(Record::of(&i.pkt, t, Event::Delivered, p)),
                    Ingress::Dropped(r) => {
                        out.records
                            .push(Record::of(&i.pkt, t, Event::Dropped(r), 0))
                    }
                    Ingress::Answer(a) => {
                        out.records
                            .push(Record::of(&i.pkt, t, Event::Answered(a), 0))
                    }
                }
            }
            out.records
                .extend(self.departures.drain(..).map(|d| Record::departure(&d)));
            // In order: the instant's records among themselves (a few;
            // the instants come in order).
            if let Some(g) = out.records.get_mut(group.1..) {
                if g.len() > 1 {
                    g.sort_unstable();
                }
            }
            self.emu.take_early_exits(&mut self.handoffs);
            for h in self.handoffs.drain(..) {
                let to = self
                    .emu
                    .route_hop(h.route, h.hop)
                    .map_or(self.part, |p| self.plan.owner_of(p.0));
                if to == self.part {
                    self.transit.push(Reverse(Transit(h)));
                } else {
                    out.handoffs.push((to, h));
                }
            }
        }
        drop(inject);
        // A record stamped before its instant (none expected) would break
        // the order: sort then.
        if !out.records.is_sorted() {
            out.records.sort_unstable();
        }
        out.next = self.next();
        out.inject = fresh;
        out.handoffs_in = hin;
        out
    }
}

/// The most fresh packets given to the workers in one window: bounds the
/// driver's memory when the lookahead is long.
const INJECT_CAP: usize = 1 << 16;

/// Fresh packets admitted before the first window, and beyond twice the
/// last window's when topping up while the workers run: the workers
/// start after a few thousand admissions rather than after
/// [`INJECT_CAP`] of them, and the rest is admitted while they run.
const ADMIT_AHEAD: usize = 1 << 12;

/// Run `config` against `traffic` in virtual time until every packet has
/// left the emulator, and report.
///
/// Files named by pipes (`distribution file:PATH`, `loss trace:PATH`) are
/// read as written, relative to the current directory, with
/// [`pipelab_lang::files::read_named_file`]; use
/// [`simulate_with_loader`] to resolve them otherwise.
pub fn simulate(
    config: &Config,
    traffic: &[TrafficSpec],
    opts: &SimOptions,
) -> Result<Report, SimError> {
    simulate_with_loader(config, traffic, opts, &mut |path: &str| {
        pipelab_lang::files::read_named_file(path).map_err(|e| e.to_string())
    })
}

/// [`simulate`], reading the files named by pipes with `load` (a path as
/// written to its text, or why it cannot be read).
pub fn simulate_with_loader(
    config: &Config,
    traffic: &[TrafficSpec],
    opts: &SimOptions,
    load: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<Report, SimError> {
    if traffic.is_empty() {
        return Err(SimError::NoTraffic);
    }
    let scenario = Scenario::from_config(config, load)?;
    simulate_scenario(&scenario, traffic, opts).map(|(r, _)| r)
}

/// The port a source enters by: with a topology's paths, the port its
/// source address (IPv4 or IPv6: both of a VN's addresses are its
/// port's) belongs to (and its destination, of the same family, must
/// belong to one); else port 0.
fn source_port(spec: &Spec, key: &FlowKey, flow: usize) -> Result<u16, SimError> {
    let Some(paths) = &spec.paths else {
        return Ok(0);
    };
    let port = |a: IpAddr, what: &str| {
        paths.dest.port(a).ok_or_else(|| SimError::Traffic {
            flow,
            reason: format!("{what} address {a} is no VN's (VNs have the topology's addresses)"),
        })
    };
    // A VN's two addresses are of its two families: a packet from one
    // to the other's would be neither an IPv4 nor an IPv6 packet.
    if key.src.is_ipv4() != key.dst.is_ipv4() {
        return Err(SimError::Traffic {
            flow,
            reason: format!(
                "from {} and to {} are not of one family: give both IPv4 or both IPv6 addresses",
                key.src, key.dst
            ),
        });
    }
    let to = port(key.dst, "to")?;
    let from = port(key.src, "from")?;
    // Paths built for some pairs only (a topology lowered for its
    // traffic) must hold this one: else it would be dropped as unrouted.
    if !paths.holds(from as usize, to as usize) {
        return Err(SimError::Traffic {
            flow,
            reason: format!(
                "no path was computed from {} to {} (the scenario's paths were built for other traffic)",
                key.src, key.dst
            ),
        });
    }
    Ok(from)
}

/// Run `scenario` against `traffic` on `opts.workers` partitions until
/// every packet has left the emulator: the report (the same for any
/// number of workers) and how the run was partitioned.
pub fn simulate_scenario(
    scenario: &Scenario,
    traffic: &[TrafficSpec],
    opts: &SimOptions,
) -> Result<(Report, RunInfo), SimError> {
    run_scenario(scenario, traffic, opts, &mut |_| {}, None)
}

/// The instant the last source stops sending (its start plus its
/// duration): how far a run's virtual time goes, its tail aside.
pub fn traffic_end(traffic: &[TrafficSpec]) -> Instant {
    traffic
        .iter()
        .map(|t| Instant::ZERO + t.start.unwrap_or(Duration::ZERO) + t.duration)
        .max()
        .unwrap_or(Instant::ZERO)
}

/// [`simulate_scenario`], telling `progress` the virtual time the
/// sources have reached, every 1024 packets (a progress bar's feed: the
/// driver admits packets at most two windows ahead of the engines; it
/// sees the time only, and cannot change the run).
pub fn simulate_scenario_with(
    scenario: &Scenario,
    traffic: &[TrafficSpec],
    opts: &SimOptions,
    progress: &mut dyn FnMut(Instant),
) -> Result<(Report, RunInfo), SimError> {
    run_scenario(scenario, traffic, opts, progress, None)
}

/// [`simulate_scenario_with`], telling `trace` every arrival, departure,
/// drop and copy as it happens, in the canonical order (time; then flow
/// and sequence; an arrival before anything else of its instant): the
/// same trace for any number of workers (see [`crate::trace`]).
pub fn simulate_traced(
    scenario: &Scenario,
    traffic: &[TrafficSpec],
    opts: &SimOptions,
    progress: &mut dyn FnMut(Instant),
    trace: &mut dyn FnMut(&Traced),
) -> Result<(Report, RunInfo), SimError> {
    run_scenario(scenario, traffic, opts, progress, Some(trace))
}

fn run_scenario(
    scenario: &Scenario,
    traffic: &[TrafficSpec],
    opts: &SimOptions,
    progress: &mut dyn FnMut(Instant),
    trace: Option<&mut dyn FnMut(&Traced)>,
) -> Result<(Report, RunInfo), SimError> {
    if traffic.is_empty() {
        return Err(SimError::NoTraffic);
    }
    // A source that would send past the last instant of virtual time
    // would lose its packets from there on without a word (its end
    // saturates there): refused before anything runs.
    for (flow, t) in traffic.iter().enumerate() {
        let start = t.start.unwrap_or(Duration::ZERO).as_nanos();
        if start.checked_add(t.duration.as_nanos()).is_none() {
            return Err(SimError::Traffic {
                flow,
                reason: format!(
                    "it would send until {:.3} s after its start at {:.3} s, past the last instant virtual time can hold ({} ns, about 584 years)",
                    t.duration.as_secs_f64(),
                    start as f64 / 1e9,
                    u64::MAX
                ),
            });
        }
    }
    if opts.workers == 0 {
        return Err(SimError::Workers);
    }
    let interval_ns = match opts.interval.map(|d| d.as_nanos()) {
        Some(0) => return Err(SimError::Interval("give a positive length".into())),
        Some(d) => {
            let n = traffic_end(traffic).as_nanos() / d + 1;
            if n > MAX_INTERVALS {
                return Err(SimError::Interval(format!(
                    "{} cuts the traffic's {} into {n} intervals; at most {MAX_INTERVALS}: give a longer one",
                    Duration(d),
                    Duration(traffic_end(traffic).as_nanos()),
                )));
            }
            Some(d)
        }
        None => None,
    };
    let spec = &scenario.spec;
    let compiled = Compiled::new(spec.clone(), opts.seed)?;
    // The driver's emulation admits fresh packets (the rules, by port);
    // it never holds one.
    let mut front = Emulation::new(EngineOptions {
        max_packets: 1,
        seed: opts.seed,
    });
    front.apply(compiled);
    let keys: Vec<FlowKey> = traffic
        .iter()
        .enumerate()
        .map(|(i, s)| flow_key(s, i))
        .collect();
    let ports = keys
        .iter()
        .enumerate()
        .map(|(i, k)| source_port(spec, k, i))
        .collect::<Result<Vec<u16>, SimError>>()?;
    // Series: one partition (see `SimOptions::interval`).
    let workers = if interval_ns.is_some() {
        1
    } else {
        opts.workers
    };
    // The traffic along its routes weighs the cut (unless hinted).
    let routes: Vec<(IpAddr, IpAddr, u64)> = keys
        .iter()
        .zip(traffic)
        .map(|(k, t)| (k.src, k.dst, partition::expected_packets(t)))
        .collect();
    let load = partition::Load::of_routes(spec, &routes);
    let plan = partition::plan(spec, &front, workers, scenario.hint.as_ref(), &load);
    let parts = plan.parts;
    let note = if interval_ns.is_some() && opts.workers > 1 {
        Some(format!(
            "--workers {}: with --interval the pipes run in one partition (a pipe cut between workers would count its departures at the end of their transmission); running 1",
            opts.workers
        ))
    } else {
        None
    };
    let note = note.or_else(|| (parts < opts.workers).then(|| {
        format!(
            "--workers {}: the pipes form {parts} partition{} that can run apart (a step out of a pipe with no delay, a dynamic pipe or a pipe whose packets go back to the rules is never cut); running {parts}",
            opts.workers,
            if parts == 1 { "" } else { "s" }
        )
    }));
    let lookahead = plan.lookahead.map_or(u64::MAX, |d| d.as_nanos());
    let mut flows = Flows {
        flows: traffic.iter().map(|_| FlowAcc::new()).collect(),
        end: Instant::ZERO,
        pending: Vec::new(),
        admitted: Vec::new(),
        runs: Vec::new(),
        spare: Vec::new(),
        rest: Vec::new(),
        series: interval_ns.map(|d| (d, vec![Vec::new(); traffic.len()])),
        trace: trace.map(|out| Tracer {
            out,
            arrivals: std::collections::VecDeque::new(),
            ports: ports.clone(),
            keys: keys.clone(),
            inside: 0,
            inside_bytes: 0,
        }),
    };
    let mut sources: Vec<Source> = traffic
        .iter()
        .enumerate()
        .map(|(i, s)| Source::new(s, stage_rng(opts.seed, StageKind::Traffic, i as u64)))
        .collect();
    let mut arrivals: BinaryHeap<Reverse<(Instant, usize)>> = BinaryHeap::new();
    for (i, s) in sources.iter_mut().enumerate() {
        if let Some(t) = s.next() {
            arrivals.push(Reverse((t, i)));
        }
    }
    let eopts = EngineOptions {
        max_packets: opts.max_packets,
        seed: opts.seed,
    };
    let mut info = RunInfo {
        partitions: parts,
        note,
        windows: 0,
        handoffs: 0,
    };
    let workers: Vec<(Emulation, Option<Sampler>)> = std::thread::scope(|scope| {
        let mut to_w = Vec::new();
        let mut from_w = Vec::new();
        let mut handles = Vec::new();
        for part in 0..parts as u32 {
            let (tx, rx) = mpsc::channel::<Option<WindowIn>>();
            let (otx, orx) = mpsc::channel::<WindowOut>();
            to_w.push(tx);
            from_w.push(orx);
            let plan = &plan;
            handles.push(
                scope.spawn(move || -> Result<(Emulation, Option<Sampler>), SimError> {
                    let mut emu = Emulation::with_spec(spec.clone(), eopts)?;
                    for &n in &plan.early {
                        if plan.of_pipe.get(&n) == Some(&part) {
                            emu.set_early_exit(n, true);
                        }
                    }
                    let sampler = interval_ns.map(|d| Sampler {
                        interval_ns: d,
                        next: d,
                        taken: 0,
                        pipes: emu
                            .pipe_numbers()
                            .filter(|&n| plan.owner_of(n) == part)
                            .map(|n| (n, Vec::new()))
                            .collect(),
                    });
                    let mut w = Worker {
                        part,
                        emu,
                        plan,
                        transit: BinaryHeap::new(),
                        departures: Vec::with_capacity(1024),
                        handoffs: Vec::new(),
                        sampler,
                    };
                    // The first answer says when it has work (none yet).
                    while let Ok(Some(win)) = rx.recv() {
                        if otx.send(w.window(win)).is_err() {
                            break;
                        }
                    }
                    Ok((w.emu, w.sampler))
                }),
            );
        }
        let mut incoming: Vec<Vec<Handoff>> = vec![Vec::new(); parts];
        // Buffers that go to the workers and back, each window: fresh
        // packets, hand-offs out, emptied hand-offs in.
        let mut inject: Vec<Vec<Inject>> = (0..parts).map(|_| Vec::new()).collect();
        let mut hand_bufs: Vec<Vec<(u32, Handoff)>> = vec![Vec::new(); parts];
        let mut spare_in: Vec<Vec<Handoff>> = Vec::new();
        let mut next: Vec<Option<Instant>> = vec![None; parts];
        let mut seq = 0u64;
        let mut failed = None;
        // The last instant a worker ran, and whether the run stopped at
        // the horizon of virtual time.
        let mut reached = Instant::ZERO;
        let mut horizon = false;
        // Fresh packets admitted ahead of the windows (their first stage
        // does not depend on the engines), while the workers run.
        let mut admitted: std::collections::VecDeque<(usize, Inject)> =
            std::collections::VecDeque::new();
        // A source's packets differ only in their length, sequence and
        // times, which stateless rules do not read: the rules decide its
        // first packet and the rest are admitted alike (and counted).
        let mut memos = vec![AdmitMemo::default(); traffic.len()];
        let mut admit_ahead = |admitted: &mut std::collections::VecDeque<(usize, Inject)>,
                               flows: &mut Flows,
                               upto: usize| {
            while admitted.len() < upto {
                // The earliest source's next packet; its following one
                // replaces it in the heap (one sift, not a pop and a push).
                let Some(mut top) = arrivals.peek_mut() else {
                    break;
                };
                let Reverse((at, i)) = *top;
                let spec_i = &traffic[i];
                let mut pkt = Packet {
                    flow: i as u32,
                    tag: seq,
                    born: at,
                    key: keys[i],
                    flags: if spec_i.ecn { Packet::ECT } else { 0 },
                    ..Packet::new(spec_i.size)
                };
                seq += 1;
                if seq.is_multiple_of(1024) {
                    progress(at);
                }
                if let Some(t) = flows.trace.as_mut() {
                    t.arrivals.push_back(pkt);
                }
                flows.sent(i, spec_i.size, at);
                let mut view = view_of(&pkt);
                match front.admit_memo(&mut memos[i], &mut pkt, ports[i], &mut view) {
                    Admission::Out(p) => {
                        flows
                            .admitted
                            .push(Record::of(&pkt, at, Event::Delivered, p))
                    }
                    Admission::Dropped(r) => {
                        flows
                            .admitted
                            .push(Record::of(&pkt, at, Event::Dropped(r), 0))
                    }
                    Admission::Answer(a) => {
                        flows
                            .admitted
                            .push(Record::of(&pkt, at, Event::Answered(a), 0))
                    }
                    Admission::Enter(entry) => {
                        let p = plan.owner_of(entry.pipe().0) as usize;
                        admitted.push_back((p, Inject { at, pkt, entry }));
                    }
                }
                match sources[i].next() {
                    Some(next) => *top = Reverse((next, i)),
                    None => {
                        std::collections::binary_heap::PeekMut::pop(top);
                    }
                }
            }
            // Whether packets remain to be admitted.
            !arrivals.is_empty()
        };
        let mut ahead = ADMIT_AHEAD;
        let mut more = admit_ahead(&mut admitted, &mut flows, ahead);
        let mut last_end: Option<Instant> = None;
        'run: loop {
            let mut t = admitted.front().map(|a| a.1.at);
            let waiting = incoming.iter().flatten().map(|h| h.at);
            for c in next.iter().copied().flatten().chain(waiting) {
                t = Some(t.map_or(c, |t| t.min(c)));
            }
            let Some(start) = t else { break };
            if start == Instant::MAX {
                // Something is due at the last instant virtual time can
                // hold: an instant computed past it saturated there, and
                // no window can end after it to run it (see
                // [`SimError::Horizon`]).
                horizon = true;
                break 'run;
            }
            let mut end = Instant(start.0.saturating_add(lookahead.max(1)));
            let mut taken = 0usize;
            let mut last = start;
            loop {
                let Some(&(p, ref i)) = admitted.front() else {
                    if more {
                        more = admit_ahead(&mut admitted, &mut flows, ahead);
                        continue;
                    }
                    break;
                };
                if i.at >= end {
                    break;
                }
                if taken >= INJECT_CAP && i.at > last {
                    // Enough for one window: it ends at this instant
                    // (every packet of the instants before is in it).
                    end = i.at;
                    break;
                }
                last = i.at;
                taken += 1;
                if let Some((_, i)) = admitted.pop_front() {
                    inject[p].push(i);
                }
            }
            info.windows += 1;
            for (p, tx) in to_w.iter().enumerate() {
                let win = WindowIn {
                    end,
                    inject: std::mem::take(&mut inject[p]),
                    handoffs: std::mem::replace(
                        &mut incoming[p],
                        spare_in.pop().unwrap_or_default(),
                    ),
                    records: flows.spare.pop().unwrap_or_default(),
                    out: std::mem::take(&mut hand_bufs[p]),
                };
                if tx.send(Some(win)).is_err() {
                    failed = Some(p);
                    break 'run;
                }
            }
            // While the workers run: account for the previous window, and
            // admit the next packets.
            if let Some(e) = last_end {
                flows.flush_before(e);
            }
            if more {
                ahead = (2 * taken + ADMIT_AHEAD).min(INJECT_CAP);
                more = admit_ahead(&mut admitted, &mut flows, ahead);
            }
            for (p, rx) in from_w.iter().enumerate() {
                let Ok(o) = rx.recv() else {
                    failed = Some(p);
                    break 'run;
                };
                let WindowOut {
                    records,
                    handoffs: mut out,
                    next: n,
                    reached: r,
                    inject: fresh,
                    handoffs_in,
                } = o;
                reached = reached.max(r.unwrap_or(Instant::ZERO));
                flows.runs.push(records);
                inject[p] = fresh;
                for (to, h) in out.drain(..) {
                    info.handoffs += 1;
                    incoming[(to as usize).min(parts - 1)].push(h);
                }
                hand_bufs[p] = out;
                spare_in.push(handoffs_in);
                next[p] = n;
            }
            last_end = Some(end);
        }
        for tx in &to_w {
            let _ = tx.send(None);
        }
        let mut emus = Vec::new();
        for (p, h) in handles.into_iter().enumerate() {
            match h.join() {
                Ok(Ok(e)) => emus.push(e),
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(SimError::Worker(format!("partition {p} panicked"))),
            }
        }
        if let Some(p) = failed {
            return Err(SimError::Worker(format!("partition {p} stopped")));
        }
        if horizon {
            return Err(horizon_error(reached, &emus));
        }
        Ok(emus)
    })?;
    flows.flush_before(Instant(u64::MAX));
    if !flows.pending.is_empty() {
        let rest = std::mem::take(&mut flows.pending);
        for r in &rest {
            flows.take(r);
        }
    }
    if let Some(t) = flows.trace.as_mut() {
        t.arrivals_until(Instant(u64::MAX));
    }
    let mut workers = workers;
    let mut series = None;
    if let Some(d) = interval_ns {
        // Every interval up to the one of the last event: the samples
        // not taken while the run went on, now that it is over.
        let n = flows.end.as_nanos() / d + 1;
        if n > MAX_INTERVALS {
            return Err(SimError::Interval(format!(
                "{} cuts this run's {} into {n} intervals; at most {MAX_INTERVALS}: give a longer one",
                Duration(d),
                Duration(flows.end.as_nanos()),
            )));
        }
        let mut samples = BTreeMap::new();
        for (emu, sampler) in &mut workers {
            if let Some(s) = sampler {
                s.upto(emu, Instant::MAX, n);
                samples.append(&mut s.pipes);
            }
        }
        series = Some(Series {
            interval_ns: d,
            n: n as usize,
            samples,
        });
    }
    let emus: Vec<Emulation> = workers.into_iter().map(|(e, _)| e).collect();
    let report = report(
        scenario,
        traffic,
        opts,
        &front,
        &emus,
        &plan,
        &flows,
        series.as_ref(),
    );
    Ok((report, info))
}

/// The error of a run that reached the horizon of virtual time: the
/// pipes still holding packets then (those whose departures fell past it),
/// and the last instant run.
fn horizon_error(reached: Instant, workers: &[(Emulation, Option<Sampler>)]) -> SimError {
    let mut holding = BTreeMap::new();
    for (emu, _) in workers {
        for n in emu.pipe_numbers() {
            let held = emu
                .pipe_totals(n)
                .map_or(0, |s| u64::from(s.backlog) + u64::from(s.in_delay_line));
            if held > 0 {
                *holding.entry(n).or_insert(0u64) += held;
            }
        }
    }
    SimError::Horizon {
        reached,
        holding: holding.into_iter().collect(),
    }
}

/// The pipes' samples of a run with an interval.
struct Series {
    interval_ns: u64,
    /// Intervals in the run.
    n: usize,
    /// Each pipe's counters at each interval end.
    samples: BTreeMap<u32, Vec<PipeStats>>,
}

/// The report of a run: flows from the merged accounting, pipes and
/// queues from the worker owning them, rules summed over the driver
/// (fresh packets) and the workers (reinjected ones).
#[allow(clippy::too_many_arguments)]
fn report(
    scenario: &Scenario,
    traffic: &[TrafficSpec],
    opts: &SimOptions,
    front: &Emulation,
    workers: &[Emulation],
    plan: &Plan,
    flows: &Flows,
    series: Option<&Series>,
) -> Report {
    let owner = |n: u32| {
        plan.of_pipe
            .get(&n)
            .and_then(|&p| workers.get(p as usize))
            .unwrap_or(front)
    };
    let flow_reports = flows
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let name = traffic[i]
                .name
                .clone()
                .unwrap_or_else(|| format!("flow{i}"));
            let mut r = f.finish(i, name, traffic[i].to_string());
            if let (Some(s), Some((_, buckets))) = (series, &flows.series) {
                r.delay_cdf = Some(f.cdf());
                let b = buckets.get(i).map(Vec::as_slice).unwrap_or_default();
                r.timeseries = Some(
                    (0..s.n)
                        .map(|k| {
                            b.get(k)
                                .copied()
                                .unwrap_or_default()
                                .finish(k, s.interval_ns)
                        })
                        .collect(),
                );
            }
            r
        })
        .collect();
    let pipes = front
        .pipe_numbers()
        .filter_map(|id| {
            let text = scenario.pipe_text.get(&id)?;
            let emu = owner(id);
            let st = emu.pipe_totals(id)?;
            let instance_list = emu
                .pipe_instance_stats(id)
                .iter()
                .map(|(k, s)| PipeInstanceReport {
                    key: key_text(k.as_ref()),
                    arrivals: s.arrivals,
                    departures: s.departures,
                    departure_bytes: s.departure_bytes,
                    drops: s.drops,
                })
                .collect();
            Some(PipeReport {
                id,
                config: text.clone(),
                arrivals: st.arrivals,
                arrival_bytes: st.arrival_bytes,
                departures: st.departures,
                departure_bytes: st.departure_bytes,
                drops: st.drops,
                aqm_drops: st.aqm_drops,
                ecn_marks: st.ecn_marks,
                link_drops: st.link_drops,
                max_backlog: st.max_backlog,
                max_backlog_bytes: st.max_backlog_bytes,
                instances: emu.pipe_instances(id).map(counts),
                instance_list,
                timeseries: series.map(|s| {
                    let cap = match scenario.spec.pipes.get(&id) {
                        Some(def) => timeseries::capacity(
                            &def.config,
                            id,
                            opts.seed,
                            emu.pipe_instances(id).is_some(),
                            s.n,
                            s.interval_ns,
                        ),
                        None => vec![None; s.n],
                    };
                    let samples = s.samples.get(&id).map(Vec::as_slice).unwrap_or_default();
                    timeseries::pipe_intervals(samples, &cap, s.interval_ns)
                }),
            })
        })
        .collect();
    let mut queue_list: Vec<(u32, bool, u32, String, &Emulation, QueueId)> = front
        .pipe_numbers()
        .filter(|id| scenario.pipe_text.contains_key(id))
        .filter_map(|id| {
            let emu = owner(id);
            Some((id, true, id, String::new(), emu, emu.default_queue(id)?))
        })
        .collect();
    for n in front.queue_numbers() {
        if let (Some((pipe, text)), Some(q)) = (scenario.queue_text.get(&n), front.queue(n)) {
            queue_list.push((n, false, *pipe, text.clone(), owner(*pipe), q));
        }
    }
    let queues = queue_list
        .into_iter()
        .filter_map(|(id, default, pipe, config, emu, q)| {
            let st = emu.queue_stats(q)?;
            let f = st.flows;
            Some(QueueReport {
                id,
                default,
                pipe,
                config,
                arrivals: f.arrivals,
                arrival_bytes: f.arrival_bytes,
                drops: f.drops,
                aqm_drops: f.aqm_drops,
                served: f.served,
                served_bytes: f.served_bytes,
                max_backlog: f.max_backlog,
                instances: counts(st.instances),
                instance_list: emu
                    .queue_instance_stats(q)
                    .iter()
                    .map(|(k, s)| QueueInstanceReport {
                        key: key_text(k.as_ref()),
                        arrivals: s.arrivals,
                        drops: s.drops,
                        served: s.served,
                        served_bytes: s.served_bytes,
                        backlog: s.backlog,
                    })
                    .collect(),
            })
        })
        .collect();
    let mut rules: Vec<RuleReport> = front
        .rules()
        .map(|(number, spec, c)| {
            let mut s = spec.clone();
            s.number = None;
            RuleReport {
                number,
                packets: c.packets,
                bytes: c.bytes,
                rule: s.to_string(),
            }
        })
        .collect();
    for w in workers {
        for (r, (_, _, c)) in rules.iter_mut().zip(w.rules()) {
            r.packets += c.packets;
            r.bytes += c.bytes;
        }
    }
    Report {
        seed: opts.seed,
        end_s: flows.end.as_nanos() as f64 / 1e9,
        interval_s: series.map(|s| s.interval_ns as f64 / 1e9),
        flows: flow_reports,
        pipes,
        queues,
        rules,
    }
}

fn counts(s: InstanceStats) -> InstanceCounts {
    InstanceCounts {
        live: s.live,
        created: s.created,
        expired: s.expired,
        overflow: s.overflow,
    }
}

/// A masked key as text: `17 10.0.0.7:0 -> 0.0.0.0:0`, or `overflow`.
fn key_text(k: Option<&FlowKey>) -> String {
    match k {
        None => "overflow".into(),
        Some(k) => format!(
            "{} {} -> {}",
            k.proto,
            SocketAddr::new(k.src, k.sport),
            SocketAddr::new(k.dst, k.dport)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(at: u64, flow: u32, tag: u64) -> Record {
        Record {
            at: Instant(at),
            flow,
            tag,
            event: Event::Delivered,
            flags: 0,
            len: 100,
            born: Instant::ZERO,
            port: 0,
        }
    }

    /// A pass proves the driver's merge of sorted runs (what was left
    /// pending, the admission's records, each worker's) accounts for the
    /// records before the window's end in `(instant, flow, sequence)`
    /// order, as a sort of all of them did, keeps the others pending in
    /// order, and hands the workers' buffers back empty.
    #[test]
    fn flush_merges_the_runs_in_record_order_and_keeps_the_rest() {
        let mut seen = Vec::new();
        let mut out = |t: &Traced| seen.push((t.at.as_nanos(), t.pkt.flow, t.pkt.tag));
        let mut flows = Flows {
            flows: (0..3).map(|_| FlowAcc::new()).collect(),
            end: Instant::ZERO,
            pending: vec![rec(12, 0, 9)],
            admitted: vec![rec(3, 1, 4), rec(15, 2, 20)],
            runs: vec![
                vec![rec(1, 0, 0), rec(5, 2, 1), rec(5, 2, 3)],
                vec![rec(2, 1, 2), rec(5, 0, 7), rec(11, 1, 8)],
            ],
            spare: Vec::new(),
            rest: Vec::new(),
            trace: Some(Tracer {
                out: &mut out,
                arrivals: std::collections::VecDeque::new(),
                ports: vec![0; 3],
                keys: vec![FlowKey::default(); 3],
                inside: 0,
                inside_bytes: 0,
            }),
            series: None,
        };
        flows.flush_before(Instant(12));
        assert_eq!(flows.pending, vec![rec(12, 0, 9), rec(15, 2, 20)]);
        assert!(flows.runs.is_empty() && flows.admitted.is_empty());
        assert_eq!(flows.spare.len(), 2);
        assert!(flows.spare.iter().all(Vec::is_empty));
        assert_eq!(flows.end, Instant(11));
        let received: Vec<u64> = flows.flows.iter().map(|f| f.received).collect();
        assert_eq!(received, vec![2, 3, 2]);
        drop(flows);
        assert_eq!(
            seen,
            vec![
                (1, 0, 0),
                (2, 1, 2),
                (3, 1, 4),
                (5, 0, 7),
                (5, 2, 1),
                (5, 2, 3),
                (11, 1, 8)
            ]
        );
    }
}
