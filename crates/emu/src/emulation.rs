//! A running emulation: the engine, the compiled rules, the port plan and
//! the paths, behind three calls (`ingress`, `next_deadline`, `advance`)
//! and one way to change it (`apply`).
//!
//! The emulation keeps each packet's place on its way in the descriptor's
//! [`Packet::stage`]: the port it came in by and the port it will leave
//! by, the rule to resume after (`one_pass 0`), how many times it passed
//! the rules, and whether it is in a pipe chosen by a rule or on its
//! topology path. The driver owns [`Packet::buf`], [`Packet::flow`] and
//! [`Packet::tag`].
//!
//! When a packet can go on after leaving a pipe (reinjection into the
//! rules with `one_pass 0`, or a topology path after a rule's pipe),
//! [`Emulation::advance`] moves the engine from deadline to deadline, so
//! the packet enters its next stage at the exact instant it left the
//! previous one, whatever the driver's granularity.

use crate::compiled::Compiled;
use crate::partition::{Handoff, Partition, Target};
use crate::spec::{Destinations, Egress, PortDef, Spec};
use pipelab_classify::{Answer, Classifier, Decision, PacketView, RuleCounters};
use pipelab_engine::engine::{
    DropReason, EngineOptions, EngineStats, Fate, InstanceStats, Output, QueueId, QueueStats,
};
use pipelab_engine::pipe::{FlowStats, PipeStats};
use pipelab_engine::{Engine, FlowKey, Instant, Packet, PipeIdx, RouteId, Verdict};
use pipelab_lang::{Action, RuleSpec};
use std::collections::{BTreeMap, HashMap};

/// How many times a packet may pass the rules (`one_pass 0`) before it is
/// dropped as looping.
pub const MAX_PASSES: u64 = 64;

/// Why the emulation dropped a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    /// A queue was full (tail drop).
    Queue,
    /// The descriptor pool (the memory cap) was exhausted.
    Memory,
    /// A loss model.
    Loss,
    /// Active queue management (RED, GRED, CoDel, PIE).
    Aqm,
    /// Lost on a link (MAC profile, wireless retries).
    Link,
    /// A rule (`deny`), or a rule's pipe or queue that does not exist.
    Rule,
    /// More than [`MAX_PASSES`] passes through the rules.
    Loop,
    /// No path to its destination (a topology), or a destination no port
    /// owns.
    NoRoute,
    /// A `reset` rule (answered with a TCP reset if it may be).
    Reset,
    /// An `unreach` rule (answered with an ICMP unreachable if it may be).
    Unreach,
    /// A pipe that was down (a black-hole window,
    /// [`Emulation::set_pipe_down`]).
    Down,
}

impl Reason {
    /// Stable lower-case name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Queue => "queue",
            Reason::Memory => "memory",
            Reason::Loss => "loss",
            Reason::Aqm => "aqm",
            Reason::Link => "link",
            Reason::Rule => "rule",
            Reason::Loop => "loop",
            Reason::NoRoute => "no_route",
            Reason::Reset => "reset",
            Reason::Unreach => "unreach",
            Reason::Down => "down",
        }
    }
}

impl From<Answer> for Reason {
    fn from(a: Answer) -> Reason {
        match a {
            Answer::Reset => Reason::Reset,
            Answer::Unreach(_) => Reason::Unreach,
        }
    }
}

impl From<DropReason> for Reason {
    fn from(r: DropReason) -> Reason {
        match r {
            DropReason::QueueFull => Reason::Queue,
            DropReason::PoolFull => Reason::Memory,
            DropReason::Loss => Reason::Loss,
            DropReason::Aqm => Reason::Aqm,
            DropReason::Link => Reason::Link,
            DropReason::Down => Reason::Down,
        }
    }
}

/// The immediate answer to [`Emulation::ingress`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ingress {
    /// Inside the emulation; it will come out of [`Emulation::advance`].
    Queued,
    /// Not shaped: send it out of this port now.
    Out(u16),
    /// Dropped at once; the caller still owns it.
    Dropped(Reason),
    /// Dropped by a `reset` or `unreach` rule (reason
    /// `Reason::from(answer)`), and to be answered; the caller still owns
    /// it (the answer is built from it).
    Answer(Answer),
}

/// Where the rules send a fresh packet ([`Emulation::admit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Not shaped: send it out of this port now.
    Out(u16),
    /// Dropped at once; the caller still owns it.
    Dropped(Reason),
    /// Dropped by a `reset` or `unreach` rule, and to be answered (see
    /// [`Ingress::Answer`]).
    Answer(Answer),
    /// Into the engine ([`Emulation::enter`]).
    Enter(Entry),
}

/// The admission of a fresh packet, remembered for the next packets of the
/// same source ([`Emulation::admit_memo`]): one per source, empty at first.
#[derive(Clone, Debug, Default)]
pub struct AdmitMemo {
    last: Option<Remembered>,
}

/// What [`Emulation::admit`] did with a packet, to do again for one that
/// looks the same.
#[derive(Clone, Debug)]
struct Remembered {
    /// [`Emulation`]'s `epoch` when it was decided.
    epoch: u64,
    port: u16,
    /// The view as the caller gave it, and as `admit` left it.
    view: PacketView,
    dressed: PacketView,
    stage: u64,
    admission: Admission,
    /// The rules (by index) whose counters it counted in.
    counted: Vec<usize>,
    /// What it added to [`Emulation::counts`].
    counts: Counts,
}

impl Counts {
    /// Each counter less `before`'s (what was added since `before`).
    fn since(&self, before: &Counts) -> Counts {
        Counts {
            rule: self.rule - before.rule,
            r#loop: self.r#loop - before.r#loop,
            no_route: self.no_route - before.no_route,
            reset: self.reset - before.reset,
            unreach: self.unreach - before.unreach,
            answers: self.answers - before.answers,
        }
    }

    fn add(&mut self, o: &Counts) {
        self.rule += o.rule;
        self.r#loop += o.r#loop;
        self.no_route += o.no_route;
        self.reset += o.reset;
        self.unreach += o.unreach;
        self.answers += o.answers;
    }
}

/// A packet's first stage in the engine: a pipe's route, a flow queue, or
/// a topology path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The engine route (none for a path cut into segments by owner).
    route: Option<RouteId>,
    queue: Option<QueueId>,
    pipe: PipeIdx,
    via: Via,
}

/// How a packet reached its first stage: a rule's pipe or queue, or a
/// topology path (what a hand-off to another worker names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    Pipe(u32),
    Queue(u32),
    Path,
}

impl Entry {
    /// The engine pipe the packet enters first.
    pub fn pipe(&self) -> PipeIdx {
        self.pipe
    }
}

/// What became of a packet that left the emulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Send it out of this port.
    Deliver {
        /// The port.
        port: u16,
    },
    /// Dropped inside.
    Dropped(Reason),
    /// Dropped by a `reset` or `unreach` rule when it re-entered the
    /// rules (`one_pass 0`), and to be answered (see [`Ingress::Answer`]).
    Answer(Answer),
    /// Not a departure: a copy of this packet was made (it shares the
    /// packet's `buf` and will come out on its own).
    Duplicated,
}

/// A packet leaving the emulation, at the exact instant it left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Departure {
    /// The descriptor.
    pub pkt: Packet,
    /// When.
    pub at: Instant,
    /// Where to, or why not.
    pub exit: Exit,
}

/// Packets the emulation itself dropped (the engine counts the rest).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// By rules.
    pub rule: u64,
    /// As looping.
    pub r#loop: u64,
    /// For want of a path or a destination port.
    pub no_route: u64,
    /// By `reset` rules.
    pub reset: u64,
    /// By `unreach` rules.
    pub unreach: u64,
    /// Of those dropped by `reset` and `unreach` rules, the ones to
    /// answer ([`Answer::allowed`]): the answers a live run sends (less
    /// any its rate limit holds back).
    pub answers: u64,
}

/// What [`Emulation::apply`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Pipes created.
    pub created: Vec<u32>,
    /// Pipes reconfigured in place (queued packets kept).
    pub reconfigured: Vec<u32>,
    /// Pipes replaced (structure changed) or removed: they drain.
    pub retired: Vec<u32>,
    /// Topology pairs whose path changed.
    pub paths_changed: usize,
}

// Layout of `Packet::stage`.
const OUT_SHIFT: u32 = 0;
const IN_SHIFT: u32 = 16;
const RESUME_SHIFT: u32 = 32;
const PASS_SHIFT: u32 = 48;
const KIND_SHIFT: u32 = 56;
/// In a pipe or queue a rule chose.
const KIND_RULE: u64 = 1;
/// On the topology path.
const KIND_PATH: u64 = 2;

#[inline]
fn field(stage: u64, shift: u32, bits: u32) -> u64 {
    (stage >> shift) & ((1 << bits) - 1)
}

#[inline]
fn out_port(p: &Packet) -> u16 {
    field(p.stage, OUT_SHIFT, 16) as u16
}

#[inline]
fn in_port(p: &Packet) -> u16 {
    field(p.stage, IN_SHIFT, 16) as u16
}

#[inline]
fn with_kind(stage: u64, kind: u64, resume: usize, passes: u64) -> u64 {
    let ports = stage & 0xffff_ffff;
    ports
        | ((resume as u64 & 0xffff) << RESUME_SHIFT)
        | ((passes & 0xff) << PASS_SHIFT)
        | (kind << KIND_SHIFT)
}

/// A pipe of the spec in the engine.
#[derive(Clone, Copy, Debug)]
struct PipeRt {
    idx: PipeIdx,
    route: RouteId,
}

/// The paths in engine routes, by pair `src * n + dst`: every pair's
/// slot for paths that hold every pair, else a map of the pairs held
/// (looked up for every packet on a path: hashed by [`PairHash`]).
#[derive(Debug, Default)]
struct PathTable {
    n: usize,
    routes: Vec<Option<RouteId>>,
    sparse: HashMap<usize, RouteId, PairHash>,
}

/// The hash of a pair index `src * n + dst` in [`PathTable`]: one
/// multiplication and a fold of the high half into the low (the bucket
/// bits), a few nanoseconds where SipHash takes tens. Pair indices are
/// the emulation's own numbers, not a peer's choice.
#[derive(Clone, Copy, Debug, Default)]
struct PairHash;

impl std::hash::BuildHasher for PairHash {
    type Hasher = PairHasher;
    fn build_hasher(&self) -> PairHasher {
        PairHasher(0)
    }
}

/// See [`PairHash`].
struct PairHasher(u64);

impl std::hash::Hasher for PairHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        let h = (self.0 ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 29);
    }
    #[inline]
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

impl PathTable {
    /// An empty table for `p` (every slot `None`).
    fn for_paths(p: &crate::spec::Paths) -> PathTable {
        PathTable {
            n: p.n,
            routes: if p.is_partial() {
                Vec::new()
            } else {
                vec![None; p.n * p.n]
            },
            sparse: HashMap::default(),
        }
    }

    #[inline]
    fn get(&self, k: usize) -> Option<RouteId> {
        if self.routes.is_empty() {
            self.sparse.get(&k).copied()
        } else {
            self.routes.get(k).copied().flatten()
        }
    }

    fn set(&mut self, k: usize, route: Option<RouteId>) {
        if let Some(slot) = self.routes.get_mut(k) {
            *slot = route;
        } else if let Some(r) = route {
            self.sparse.insert(k, r);
        } else {
            self.sparse.remove(&k);
        }
    }
}

/// The pairs to look at when `p` replaces `prev` (`None`: every pair of
/// `p`), as `src * n + dst`, in order: every pair if both hold every
/// pair, else the pairs either holds.
fn pairs_to_apply<'a>(
    p: &'a crate::spec::Paths,
    prev: Option<&'a crate::spec::Paths>,
) -> Box<dyn Iterator<Item = usize> + 'a> {
    match prev {
        Some(q) if q.is_partial() || p.is_partial() => {
            let mut keys: Vec<usize> = p.held().chain(q.held()).collect();
            keys.sort_unstable();
            keys.dedup();
            Box::new(keys.into_iter())
        }
        _ => p.held(),
    }
}

/// A running emulation. See the module documentation.
#[derive(Debug)]
pub struct Emulation {
    engine: Engine,
    seed: u64,
    classifier: Classifier,
    spec: Spec,
    pipes: BTreeMap<u32, PipeRt>,
    queues: BTreeMap<u32, QueueId>,
    /// Engine pipes no longer in the spec (draining).
    retired: Vec<PipeIdx>,
    paths: PathTable,
    /// Engine routes of paths, by their engine pipes.
    route_cache: HashMap<Vec<PipeIdx>, RouteId>,
    stepwise: bool,
    scratch: Vec<Output>,
    /// Outputs of [`Emulation::advance_before`], settled by the next
    /// [`Emulation::advance`] with the rest of their instant.
    held: Vec<Output>,
    counts: Counts,
    /// The pipes this emulation owns among workers (`None`: all).
    part: Option<Partition>,
    /// The partition changed since the paths were cut into segments.
    part_changed: bool,
    /// Packets leaving for another worker, until the driver takes them.
    handoffs: Vec<Handoff>,
    /// With a partition: the engine route of each path segment this
    /// worker owns, by (pair, first hop).
    segs: HashMap<(u32, u16), RouteId>,
    /// Black-hole windows `[from, until)` by pipe number
    /// ([`Emulation::set_pipe_down`]), kept across `apply`.
    down: BTreeMap<u32, (Instant, Instant)>,
    /// Whether the rules' decision is a function of the packet's view
    /// and ingress port alone ([`Emulation::admission_is_stateless`]).
    stateless: bool,
    /// Bumped by whatever may change an admission (`apply`, a new
    /// partition): [`AdmitMemo`]s of an older epoch are not used.
    epoch: u64,
}

impl Emulation {
    /// An empty emulation (no ports, no pipes; the default rule only).
    pub fn new(opts: EngineOptions) -> Emulation {
        Emulation {
            engine: Engine::new(opts),
            seed: opts.seed,
            classifier: Classifier::new(std::iter::empty(), &[], opts.seed),
            spec: Spec::default(),
            pipes: BTreeMap::new(),
            queues: BTreeMap::new(),
            retired: Vec::new(),
            paths: PathTable::default(),
            route_cache: HashMap::new(),
            stepwise: false,
            scratch: Vec::with_capacity(1024),
            held: Vec::new(),
            counts: Counts::default(),
            part: None,
            part_changed: false,
            handoffs: Vec::new(),
            segs: HashMap::new(),
            down: BTreeMap::new(),
            stateless: true,
            epoch: 0,
        }
    }

    /// Own only the pipes `part` gives this worker (see
    /// [`crate::partition`]); `None`: all of them. Takes effect at the
    /// next [`Emulation::apply`].
    pub fn set_partition(&mut self, part: Option<Partition>) {
        if self.part != part {
            self.part = part;
            self.part_changed = true;
            self.epoch += 1;
        }
    }

    /// The partition in force.
    pub fn partition(&self) -> Option<&Partition> {
        self.part.as_ref()
    }

    /// Move the packets leaving for other workers since the last call to
    /// `out`, in the order they left (each is no longer inside this
    /// emulation).
    pub fn take_handoffs(&mut self, out: &mut Vec<Handoff>) {
        out.append(&mut self.handoffs);
    }

    /// A packet another worker handed off ([`Handoff`]) enters this one
    /// at `h.at` (or this engine's now, if later), where it was going.
    /// The caller advances to its now first, as for
    /// [`Emulation::ingress`], and has put its own buffer in `h.pkt.buf`.
    pub fn resume(&mut self, h: Handoff) -> Ingress {
        let Handoff {
            pkt, at, target, ..
        } = h;
        let verdict = match target {
            Target::Pipe(n) => match self.pipes.get(&n) {
                Some(rt) => self.engine.enqueue(at, pkt, rt.route),
                None => {
                    self.counts.rule += 1;
                    return Ingress::Dropped(Reason::Rule);
                }
            },
            Target::Queue(n) => match self.queues.get(&n) {
                Some(&q) => self.engine.enqueue_to_queue(at, pkt, q),
                None => {
                    self.counts.rule += 1;
                    return Ingress::Dropped(Reason::Rule);
                }
            },
            Target::Path { hop } => {
                let k = in_port(&pkt) as usize * self.paths.n + out_port(&pkt) as usize;
                return self.enter_segment(at, pkt, k, hop as usize);
            }
        };
        match verdict {
            Verdict::Queued => Ingress::Queued,
            Verdict::Dropped(r) => Ingress::Dropped(r.into()),
        }
    }

    /// With a partition: send `pkt` (pair `k`) along its path from hop
    /// `hop`: into this worker's segment starting there, or to the
    /// worker owning that hop.
    fn enter_segment(&mut self, at: Instant, mut pkt: Packet, k: usize, hop: usize) -> Ingress {
        let n = self.paths.n.max(1);
        self.learn_pair(k / n, k % n);
        let Some((owner, end)) = self.segment(k, hop) else {
            self.counts.no_route += 1;
            return Ingress::Dropped(Reason::NoRoute);
        };
        let me = self.part.as_ref().map_or(0, |p| p.worker);
        if owner != me {
            pkt.stage = with_kind(pkt.stage, KIND_PATH, 0, 0);
            self.handoffs.push(Handoff {
                to: owner,
                pkt,
                at,
                target: Target::Path { hop: hop as u16 },
            });
            return Ingress::Queued;
        }
        let Some(&route) = self.segs.get(&(k as u32, hop as u16)) else {
            self.counts.no_route += 1;
            return Ingress::Dropped(Reason::NoRoute);
        };
        // The segment's end is where the packet goes on from.
        pkt.stage = with_kind(pkt.stage, KIND_PATH, end, 0);
        match self.engine.enqueue(at, pkt, route) {
            Verdict::Queued => Ingress::Queued,
            Verdict::Dropped(r) => Ingress::Dropped(r.into()),
        }
    }

    /// The owner of hop `hop` of pair `k`'s path and the end of its
    /// segment (the index of the first hop past it); `None` if the pair
    /// has no path or it has no such hop.
    fn segment(&self, k: usize, hop: usize) -> Option<(u16, usize)> {
        let paths = self.spec.paths.as_ref()?;
        let n = paths.n.max(1);
        let hops = paths.get(k / n, k % n)?;
        segment_of(self.part.as_ref(), hops, hop)
    }

    /// An emulation of `spec` (checked and compiled with the engine's
    /// seed).
    pub fn with_spec(spec: Spec, opts: EngineOptions) -> Result<Emulation, crate::SpecError> {
        let c = Compiled::new(spec, opts.seed)?;
        let mut e = Emulation::new(opts);
        e.apply(c);
        Ok(e)
    }

    /// The seed every random decision derives from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Bring the emulation to `c`'s spec: pipes whose structure is
    /// unchanged are reconfigured in place (queued packets kept); pipes
    /// replaced or removed drain what they hold; rules that did not change
    /// keep their counters and `prob` streams; topology pairs whose path
    /// is unchanged keep their route.
    pub fn apply(&mut self, c: Compiled) -> Applied {
        let Compiled {
            mut spec,
            mut classifier,
        } = c;
        let mut applied = Applied::default();
        let mut old = std::mem::take(&mut self.pipes);
        let mut replaced_any = false;
        for (&n, def) in &spec.pipes {
            let prev_def = self.spec.pipes.get(&n);
            match (old.remove(&n), prev_def) {
                (Some(rt), Some(prev)) if prev.same_structure(def) => {
                    if prev.config != def.config {
                        // Keeps every queued packet; new parameters apply
                        // from the next transmission.
                        let _ = self.engine.reconfigure(rt.idx, def.config.clone());
                        applied.reconfigured.push(n);
                    }
                    self.pipes.insert(n, rt);
                }
                (prev, _) => {
                    if let Some(rt) = prev {
                        self.retired.push(rt.idx);
                        applied.retired.push(n);
                        replaced_any = true;
                    }
                    let rt = self.create_pipe(n, def);
                    self.pipes.insert(n, rt);
                    applied.created.push(n);
                }
            }
        }
        for (n, rt) in old {
            self.retired.push(rt.idx);
            applied.retired.push(n);
            replaced_any = true;
        }
        // A black-hole window belongs to the pipe's number: a pipe made
        // anew keeps it, a pipe removed loses it.
        self.down.retain(|n, _| spec.pipes.contains_key(n));
        for &n in &applied.created {
            if let (Some(rt), Some(&w)) = (self.pipes.get(&n), self.down.get(&n)) {
                let _ = self.engine.set_pipe_down(rt.idx, Some(w));
            }
        }
        // Flow queues: kept while their pipe (not replaced) and mask are
        // the same, reconfigured in place when their weight, limit or
        // queue management changed (queued packets kept); otherwise a new
        // queue takes the number and the old one's instances drain in
        // their scheduler.
        let mut queues = BTreeMap::new();
        for (&n, q) in &spec.queues {
            let kept = self.queues.get(&n).copied().filter(|_| {
                self.spec
                    .queues
                    .get(&n)
                    .is_some_and(|old| old.pipe == q.pipe && old.mask == q.mask)
                    && !applied.created.contains(&q.pipe)
            });
            let id = match kept {
                Some(id) => {
                    if self.spec.queues.get(&n).map(|o| o.flow) != Some(q.flow) {
                        let _ = self.engine.reconfigure_queue(id, q.flow);
                    }
                    Some(id)
                }
                None => self.pipes.get(&q.pipe).and_then(|rt| {
                    self.engine
                        .add_queue(
                            rt.idx,
                            q.flow,
                            q.mask.map(|m| m.mask),
                            q.mask.map_or(u32::MAX, |m| m.max_instances),
                        )
                        .ok()
                }),
            };
            if let Some(id) = id {
                queues.insert(n, id);
            }
        }
        self.queues = queues;
        classifier.inherit(&self.classifier);
        self.classifier = classifier;
        let all = replaced_any || !applied.created.is_empty() || self.part_changed;
        applied.paths_changed = self.apply_paths(&mut spec, all);
        self.part_changed = false;
        self.stepwise = !spec.one_pass || (spec.paths.is_some() && self.classifier.shapes());
        self.stateless = self.classifier.rules().all(|(_, r, _)| {
            r.prob.is_none() && r.action != Action::CheckState && r.keep_state().is_none()
        });
        self.epoch += 1;
        self.spec = spec;
        applied
    }

    /// A new engine pipe for number `n`: a retired one that has drained
    /// (reset as new, so memory does not grow with reconfigurations), or
    /// a fresh one.
    fn create_pipe(&mut self, n: u32, def: &crate::spec::PipeDef) -> PipeRt {
        let reused = self
            .retired
            .iter()
            .position(|&i| self.engine.pipe_is_idle(i))
            .map(|k| self.retired.swap_remove(k))
            .filter(|&i| {
                self.engine
                    .reset_pipe(i, def.config.clone(), def.sched, n as u64)
                    .is_ok()
            });
        let idx = match (reused, def.sched) {
            (Some(i), _) => i,
            (None, Some(s)) => self
                .engine
                .add_scheduled_pipe(def.config.clone(), s, n as u64),
            (None, None) => self
                .engine
                .add_pipe_with_stage(def.config.clone(), n as u64),
        };
        if let Some(m) = def.mask {
            // The pipe was just created by number: it exists.
            let _ = self.engine.set_pipe_mask(idx, m.mask, m.max_instances);
        }
        let route = self
            .engine
            .pipe_route(idx)
            .unwrap_or(pipelab_engine::RouteId(0));
        PipeRt { idx, route }
    }

    /// Engine routes for the spec's paths; `all`: recompute every pair
    /// (pipes were replaced), else only pairs whose pipes changed. Paths
    /// on demand are first asked for every pair the paths in force hold
    /// (the pairs that carried traffic), so those pairs keep a route and
    /// only the ones whose path changed are swapped.
    fn apply_paths(&mut self, spec: &mut Spec, all: bool) -> usize {
        let Some(p) = spec.paths.as_mut() else {
            self.paths = PathTable::default();
            self.segs.clear();
            return 0;
        };
        if p.is_on_demand() {
            if let Some(q) = self.spec.paths.as_ref().filter(|q| q.n == p.n) {
                let n = q.n.max(1);
                for k in q.held() {
                    p.resolve(k / n, k % n);
                }
            }
        }
        let p = &*p;
        let prev = self
            .spec
            .paths
            .as_ref()
            .filter(|q| q.n == p.n && q.is_partial() == p.is_partial() && !all);
        if prev.is_none() {
            self.paths = PathTable::for_paths(p);
            self.segs.clear();
        }
        if let Some(part) = self.part.clone() {
            return self.apply_segments(p, prev.cloned().as_ref(), &part);
        }
        let mut changed = 0;
        let n = p.n.max(1);
        for k in pairs_to_apply(p, prev) {
            let (s, d) = (k / n, k % n);
            let now = p.get(s, d);
            if let Some(q) = prev {
                if q.get(s, d) == now {
                    continue;
                }
            }
            changed += 1;
            let route = now.and_then(|h| {
                engine_route(&mut self.engine, &self.pipes, &mut self.route_cache, h)
            });
            self.paths.set(k, route);
        }
        changed
    }

    /// [`Emulation::apply_paths`] with a partition: the engine routes of
    /// the path segments this worker owns (only for pairs whose path
    /// changed since `prev`, or all).
    fn apply_segments(
        &mut self,
        p: &crate::spec::Paths,
        prev: Option<&crate::spec::Paths>,
        part: &Partition,
    ) -> usize {
        let mut changed = 0;
        let n = p.n.max(1);
        for k in pairs_to_apply(p, prev) {
            let (s, d) = (k / n, k % n);
            let now = p.get(s, d);
            if let Some(q) = prev {
                let was = q.get(s, d);
                if was == now {
                    continue;
                }
                for h in 0..was.map_or(0, |w| w.len()) {
                    self.segs.remove(&(k as u32, h as u16));
                }
            }
            changed += 1;
            if let Some(path) = now {
                self.install_segments(part, k, path);
            }
        }
        changed
    }

    /// The engine routes of the segments of pair `k`'s path (pipe
    /// numbers `path`) that this worker owns under `part`.
    fn install_segments(&mut self, part: &Partition, k: usize, path: &[u32]) {
        let mut start = 0;
        while let Some((owner, end)) = segment_of(Some(part), path, start) {
            if owner == part.worker {
                let route = engine_route(
                    &mut self.engine,
                    &self.pipes,
                    &mut self.route_cache,
                    &path[start..end],
                );
                if let Some(r) = route {
                    self.segs.insert((k as u32, start as u16), r);
                }
            }
            start = end;
        }
    }

    /// Make sure the pair of ports `src` → `dst` is held: with paths on
    /// demand, a pair not held yet (its first packet) is asked of the
    /// source ([`crate::spec::PathSource`]) and given its engine route
    /// (or, with a partition, the routes of the segments this worker
    /// owns). Held pairs, and paths that are not on demand, are left
    /// as they are.
    fn learn_pair(&mut self, src: usize, dst: usize) {
        let Some(p) = self.spec.paths.as_mut() else {
            return;
        };
        if p.holds(src, dst) || !p.is_on_demand() || !p.resolve(src, dst) {
            return;
        }
        let k = src * p.n + dst;
        let Some(path) = p.get(src, dst).map(<[u32]>::to_vec) else {
            return;
        };
        match self.part.clone() {
            Some(part) => self.install_segments(&part, k, &path),
            None => {
                let route =
                    engine_route(&mut self.engine, &self.pipes, &mut self.route_cache, &path);
                self.paths.set(k, route);
            }
        }
    }

    /// Set what the port plan says on `view`: the direction and the
    /// interfaces of the ports the packet came in by and leaves by.
    #[inline]
    fn dress(&self, view: &mut PacketView, inp: u16, out: u16) {
        if let Some(p) = self.spec.ports.get(inp as usize) {
            if let Some(d) = p.dir {
                view.dir = Some(d);
            }
            if let Some(i) = p.iface {
                view.in_if = Some(i);
            }
        }
        if let Some(i) = self.spec.ports.get(out as usize).and_then(|p| p.iface) {
            view.out_if = Some(i);
        }
    }

    /// A packet that arrived at `now` by port `port`, described by `view`
    /// (its `stage` is the emulation's; `buf`, `flow`, `tag` the
    /// caller's). The caller advances to `now` first, so that departures
    /// due at `now` free their slots before arrivals at `now`.
    pub fn ingress(
        &mut self,
        now: Instant,
        mut pkt: Packet,
        port: u16,
        view: &mut PacketView,
    ) -> Ingress {
        match self.admit(&mut pkt, port, view) {
            Admission::Out(p) => Ingress::Out(p),
            Admission::Dropped(r) => Ingress::Dropped(r),
            Admission::Answer(a) => Ingress::Answer(a),
            Admission::Enter(e) => self.enter(now, pkt, e),
        }
    }

    /// The first half of [`Emulation::ingress`]: the port plan and the
    /// rules decide where a fresh packet from port `port` goes (setting
    /// its `stage`), touching no pipe. The rules' `prob` draws are the
    /// port's own ([`Classifier::port_context`]), so a driver may admit
    /// packets in one place and enter them in another (the partitions of
    /// a virtual-time run), in each port's order.
    pub fn admit(&mut self, pkt: &mut Packet, port: u16, view: &mut PacketView) -> Admission {
        let Some(pd) = self.spec.ports.get(port as usize) else {
            self.counts.no_route += 1;
            return Admission::Dropped(Reason::NoRoute);
        };
        let out = match pd.egress {
            Egress::Port(k) => k,
            Egress::ByDestination => {
                let dest = self.spec.paths.as_ref().map(|p| &p.dest);
                match dest
                    .filter(|_| view.is_ip)
                    .and_then(|d| d.port(view.key.dst))
                {
                    Some(j) => j,
                    None => {
                        self.counts.no_route += 1;
                        return Admission::Dropped(Reason::NoRoute);
                    }
                }
            }
        };
        self.dress(view, port, out);
        pkt.stage = ((out as u64) << OUT_SHIFT) | ((port as u64) << IN_SHIFT);
        self.decide(pkt, view, 0, 0, Classifier::port_context(port))
    }

    /// Whether the rules' decision on a fresh packet is a function of what
    /// the packet looks like (its [`PacketView`]) and its ingress port
    /// alone: no rule draws (`prob`) or keeps or checks dynamic state
    /// (`keep-state`, `check-state`). The rest of an admission (the port
    /// plan, the paths, interface names, tables) changes only with
    /// [`Emulation::apply`]. Then two packets that look the same from the
    /// same port are admitted alike, and [`Emulation::admit_memo`] decides
    /// once for both.
    pub fn admission_is_stateless(&self) -> bool {
        self.stateless
    }

    /// [`Emulation::admit`], remembered in `memo` (one per traffic
    /// source): when the rules are stateless
    /// ([`Emulation::admission_is_stateless`]) and `pkt` comes from the
    /// port and looks as (`view`) the packet `memo` holds, since the last
    /// [`Emulation::apply`], its admission is that packet's, and the rules
    /// are not walked again: `pkt`'s stage and `view` are set, the rules
    /// that counted that packet count this one and the emulation's
    /// [`Counts`] grow the same, as [`Emulation::admit`] would have done.
    /// Otherwise it admits `pkt` and, if stateless, remembers it.
    #[inline]
    pub fn admit_memo(
        &mut self,
        memo: &mut AdmitMemo,
        pkt: &mut Packet,
        port: u16,
        view: &mut PacketView,
    ) -> Admission {
        if let Some(m) = &memo.last {
            if m.epoch == self.epoch && m.port == port && m.view == *view {
                for &i in &m.counted {
                    self.classifier.count_match(i, view.len);
                }
                self.counts.add(&m.counts);
                pkt.stage = m.stage;
                *view = m.dressed;
                return m.admission;
            }
        }
        self.admit_and_remember(memo, pkt, port, view)
    }

    /// [`Emulation::admit_memo`] when `memo` does not hold `pkt`'s
    /// admission (out of line, so that the remembered case inlines).
    #[inline(never)]
    fn admit_and_remember(
        &mut self,
        memo: &mut AdmitMemo,
        pkt: &mut Packet,
        port: u16,
        view: &mut PacketView,
    ) -> Admission {
        if !self.stateless {
            return self.admit(pkt, port, view);
        }
        let given = *view;
        let counts = self.counts;
        let before: Vec<u64> = self.classifier.rules().map(|(_, _, c)| c.packets).collect();
        let admission = self.admit(pkt, port, view);
        let counted = self
            .classifier
            .rules()
            .zip(&before)
            .enumerate()
            .filter(|(_, ((_, _, c), &b))| c.packets != b)
            .map(|(i, _)| i)
            .collect();
        memo.last = Some(Remembered {
            epoch: self.epoch,
            port,
            view: given,
            dressed: *view,
            stage: pkt.stage,
            admission,
            counted,
            counts: self.counts.since(&counts),
        });
        admission
    }

    /// The second half of [`Emulation::ingress`]: `pkt` enters its first
    /// stage at `now`. With a partition, a stage another worker owns makes
    /// it a hand-off ([`Emulation::take_handoffs`]).
    pub fn enter(&mut self, now: Instant, pkt: Packet, e: Entry) -> Ingress {
        if self.part.is_some() {
            match e.via {
                Via::Pipe(n) => {
                    if let Some(to) = self.elsewhere(n) {
                        return self.hand_off(to, pkt, now, Target::Pipe(n));
                    }
                }
                Via::Queue(n) => {
                    let pipe = self.spec.queues.get(&n).map_or(0, |d| d.pipe);
                    if let Some(to) = self.elsewhere(pipe) {
                        return self.hand_off(to, pkt, now, Target::Queue(n));
                    }
                }
                Via::Path => {
                    let k = in_port(&pkt) as usize * self.paths.n + out_port(&pkt) as usize;
                    return self.enter_segment(now, pkt, k, 0);
                }
            }
        }
        let v = match (e.queue, e.route) {
            (Some(q), _) => self.engine.enqueue_to_queue(now, pkt, q),
            (None, Some(route)) => self.engine.enqueue(now, pkt, route),
            (None, None) => {
                self.counts.no_route += 1;
                return Ingress::Dropped(Reason::NoRoute);
            }
        };
        match v {
            Verdict::Queued => Ingress::Queued,
            Verdict::Dropped(r) => Ingress::Dropped(r.into()),
        }
    }

    /// Walk the rules from index `start` (`passes` so far, `prob` draws of
    /// context `ctx`) and say where the packet goes.
    fn decide(
        &mut self,
        pkt: &mut Packet,
        view: &PacketView,
        start: usize,
        passes: u64,
        ctx: u64,
    ) -> Admission {
        // A packet is judged at its arrival (dynamic states' time).
        let m = self.classifier.classify_at(view, start, ctx, pkt.born);
        match m.decision {
            Decision::Allow => self.after_rules(pkt),
            Decision::Deny => {
                self.counts.rule += 1;
                Admission::Dropped(Reason::Rule)
            }
            Decision::Answer(a) => {
                match a {
                    Answer::Reset => self.counts.reset += 1,
                    Answer::Unreach(_) => self.counts.unreach += 1,
                }
                if a.allowed(view) {
                    self.counts.answers += 1;
                    Admission::Answer(a)
                } else {
                    Admission::Dropped(a.into())
                }
            }
            Decision::Pipe(n) => {
                let Some(rt) = self.pipes.get(&n) else {
                    // `pipe tablearg` to a pipe that does not exist.
                    self.counts.rule += 1;
                    return Admission::Dropped(Reason::Rule);
                };
                pkt.stage = with_kind(pkt.stage, KIND_RULE, m.rule + 1, passes);
                Admission::Enter(Entry {
                    route: Some(rt.route),
                    queue: None,
                    pipe: rt.idx,
                    via: Via::Pipe(n),
                })
            }
            Decision::Queue(n) => {
                let (Some(&q), Some(pipe)) = (
                    self.queues.get(&n),
                    self.spec
                        .queues
                        .get(&n)
                        .and_then(|d| self.pipes.get(&d.pipe)),
                ) else {
                    self.counts.rule += 1;
                    return Admission::Dropped(Reason::Rule);
                };
                pkt.stage = with_kind(pkt.stage, KIND_RULE, m.rule + 1, passes);
                Admission::Enter(Entry {
                    route: Some(pipe.route),
                    queue: Some(q),
                    pipe: pipe.idx,
                    via: Via::Queue(n),
                })
            }
        }
    }

    /// The worker owning pipe `n`, if it is not this one.
    #[inline]
    fn elsewhere(&self, n: u32) -> Option<u16> {
        let p = self.part.as_ref()?;
        let o = p.owner(n);
        (o != p.worker).then_some(o)
    }

    /// Leave `pkt` for worker `to` (see [`crate::partition`]).
    fn hand_off(&mut self, to: u16, pkt: Packet, at: Instant, target: Target) -> Ingress {
        self.handoffs.push(Handoff {
            to,
            pkt,
            at,
            target,
        });
        Ingress::Queued
    }

    /// The rules are done with the packet: its topology path, or out.
    fn after_rules(&mut self, pkt: &mut Packet) -> Admission {
        let (inp, out) = (in_port(pkt), out_port(pkt));
        let by_dest = self
            .spec
            .ports
            .get(inp as usize)
            .is_some_and(|p| p.egress == Egress::ByDestination);
        if !by_dest {
            return Admission::Out(out);
        }
        // The first packet of a pair not held yet: its path now.
        self.learn_pair(inp as usize, out as usize);
        let k = inp as usize * self.paths.n + out as usize;
        if self.part.is_some() {
            // Cut into segments by owner: `enter` sends it along.
            let first = self
                .spec
                .paths
                .as_ref()
                .and_then(|p| p.get(inp as usize, out as usize))
                .and_then(|hops| self.pipes.get(hops.first()?));
            return match first {
                Some(rt) => {
                    pkt.stage = with_kind(pkt.stage, KIND_PATH, 0, 0);
                    Admission::Enter(Entry {
                        route: None,
                        queue: None,
                        pipe: rt.idx,
                        via: Via::Path,
                    })
                }
                None => {
                    self.counts.no_route += 1;
                    Admission::Dropped(Reason::NoRoute)
                }
            };
        }
        let route = self.paths.get(k);
        match route.and_then(|r| Some((r, *self.engine.route(r)?.first()?))) {
            Some((route, pipe)) => {
                pkt.stage = with_kind(pkt.stage, KIND_PATH, 0, 0);
                Admission::Enter(Entry {
                    route: Some(route),
                    queue: None,
                    pipe,
                    via: Via::Path,
                })
            }
            None => {
                self.counts.no_route += 1;
                Admission::Dropped(Reason::NoRoute)
            }
        }
    }

    /// When the emulation next has work (call [`Emulation::advance`]).
    pub fn next_deadline(&mut self) -> Option<Instant> {
        self.engine.next_deadline()
    }

    /// Bring every pipe's counters up to just before `t`
    /// ([`pipelab_engine::Engine::settle_before`]).
    pub fn settle_before(&mut self, t: Instant) {
        self.engine.settle_before(t);
    }

    /// Do all work due up to `now`; append to `out` what leaves the
    /// emulation, each at its exact instant. `views` describes a packet
    /// that re-enters the rules (`one_pass 0`) as its frame reads.
    pub fn advance(
        &mut self,
        now: Instant,
        out: &mut Vec<Departure>,
        views: &mut dyn FnMut(&Packet) -> PacketView,
    ) {
        let mut scratch = std::mem::take(&mut self.scratch);
        // What `advance_before` did at this instant is settled with the
        // rest of the instant, as one `advance` would have.
        scratch.append(&mut self.held);
        if self.stepwise {
            while let Some(d) = self.engine.next_deadline().filter(|&d| d <= now) {
                self.engine.advance(d, &mut scratch);
                for o in scratch.drain(..) {
                    self.settle(o, out, views);
                }
            }
        }
        self.engine.advance(now, &mut scratch);
        for o in scratch.drain(..) {
            self.settle(o, out, views);
        }
        self.scratch = scratch;
    }

    /// The engine's work at `now` that comes before `limit` in its
    /// canonical order (`pipelab_engine::Engine::advance_before`); what
    /// leaves is held and settled by the next [`Emulation::advance`] (at
    /// the same instant), so a partition stopping here for a hand-off
    /// ([`Emulation::enter_route`]) settles its instant as one engine
    /// doing all the work would.
    pub fn advance_before(&mut self, now: Instant, limit: (Instant, u64)) {
        self.engine.advance_before(now, limit, &mut self.held);
    }

    /// A hand-off from another partition: `pkt` enters hop `hop` of engine
    /// route `route` at `now` (after [`Emulation::advance_before`] up to
    /// its place). A refusal is a departure at `now`.
    pub fn enter_route(
        &mut self,
        now: Instant,
        pkt: Packet,
        route: RouteId,
        hop: u16,
        out: &mut Vec<Departure>,
    ) {
        if let Verdict::Dropped(r) = self.engine.enter(now, pkt, route, hop) {
            out.push(Departure {
                pkt,
                at: now,
                exit: Exit::Dropped(r.into()),
            });
        }
    }

    /// Make pipe number `n` an early-exit pipe (`true`) or not: its
    /// packets leave it at the end of their transmission with their exit
    /// instant decided, as hand-offs ([`Emulation::take_early_exits`]) or, at
    /// the end of their path, as departures stamped with that instant.
    /// Only for pipes whose packets have no continuation in the rules.
    pub fn set_early_exit(&mut self, n: u32, on: bool) {
        if let Some(rt) = self.pipes.get(&n) {
            let _ = self.engine.set_early_exit(rt.idx, on);
        }
    }

    /// Move the packets that left early-exit pipes so far (the engine's
    /// hand-offs of a virtual-time partition) to `into`.
    pub fn take_early_exits(&mut self, into: &mut Vec<pipelab_engine::engine::Handoff>) {
        self.engine.take_handoffs(into);
    }

    /// The engine pipe at hop `hop` of engine route `route`.
    pub fn route_hop(&self, route: RouteId, hop: u16) -> Option<PipeIdx> {
        self.engine.route(route)?.get(hop as usize).copied()
    }

    /// Whether packets leaving a pipe go on through the rules or a path
    /// (`one_pass 0`, or rules shaping before a topology's paths).
    pub fn has_continuations(&self) -> bool {
        self.stepwise
    }

    /// The rules, compiled, with their counters.
    pub fn classifier(&self) -> &Classifier {
        &self.classifier
    }

    fn settle(
        &mut self,
        o: Output,
        out: &mut Vec<Departure>,
        views: &mut dyn FnMut(&Packet) -> PacketView,
    ) {
        let exit = match o.fate {
            Fate::Duplicated { .. } => Exit::Duplicated,
            Fate::Dropped { reason, .. } => Exit::Dropped(reason.into()),
            Fate::Delivered => {
                let mut pkt = o.pkt;
                let kind = field(pkt.stage, KIND_SHIFT, 8);
                let end = field(pkt.stage, RESUME_SHIFT, 16) as usize;
                if kind == KIND_PATH && self.part.is_some() && end > 0 {
                    // A segment ends: the path goes on at `end`, in
                    // another worker, unless it was the last.
                    let k = in_port(&pkt) as usize * self.paths.n + out_port(&pkt) as usize;
                    self.learn_pair(in_port(&pkt) as usize, out_port(&pkt) as usize);
                    let last = self.segment(k, end).is_none();
                    if last {
                        Exit::Deliver {
                            port: out_port(&pkt),
                        }
                    } else {
                        match self.enter_segment(o.at, pkt, k, end) {
                            Ingress::Queued => return,
                            Ingress::Out(port) => Exit::Deliver { port },
                            Ingress::Dropped(r) => Exit::Dropped(r),
                            Ingress::Answer(a) => Exit::Answer(a),
                        }
                    }
                } else if kind != KIND_RULE {
                    Exit::Deliver {
                        port: out_port(&pkt),
                    }
                } else {
                    let next = if self.spec.one_pass {
                        self.after_rules(&mut pkt)
                    } else {
                        let passes = field(pkt.stage, PASS_SHIFT, 8) + 1;
                        if passes >= MAX_PASSES {
                            self.counts.r#loop += 1;
                            Admission::Dropped(Reason::Loop)
                        } else {
                            let resume = field(pkt.stage, RESUME_SHIFT, 16) as usize;
                            // The `prob` draws of packets the same rule
                            // sent into a pipe: their own stream.
                            let ctx = Classifier::reinjection_context(
                                self.classifier
                                    .number_at(resume.saturating_sub(1))
                                    .unwrap_or(0),
                            );
                            let mut view = views(&pkt);
                            self.dress(&mut view, in_port(&pkt), out_port(&pkt));
                            self.decide(&mut pkt, &view, resume, passes, ctx)
                        }
                    };
                    let next = match next {
                        Admission::Enter(e) => self.enter(o.at, pkt, e),
                        Admission::Out(p) => Ingress::Out(p),
                        Admission::Dropped(r) => Ingress::Dropped(r),
                        Admission::Answer(a) => Ingress::Answer(a),
                    };
                    match next {
                        Ingress::Queued => return,
                        Ingress::Out(port) => Exit::Deliver { port },
                        Ingress::Dropped(r) => Exit::Dropped(r),
                        Ingress::Answer(a) => Exit::Answer(a),
                    }
                }
            }
        };
        out.push(Departure {
            pkt: o.pkt,
            at: o.at,
            exit,
        });
    }

    /// Packets inside (queued, on a link, in a delay line).
    pub fn in_flight(&self) -> u32 {
        self.engine.in_flight()
    }

    /// Bytes (as the links count them) of the packets inside: with
    /// [`Emulation::in_flight`], the backlog an event log reports.
    pub fn in_flight_bytes(&self) -> u64 {
        self.engine.in_flight_bytes()
    }

    /// The engine's packet accounting.
    pub fn engine_stats(&self) -> &EngineStats {
        self.engine.stats()
    }

    /// Packets the emulation dropped outside the engine.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// The spec in force.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The ports of the spec in force.
    pub fn ports(&self) -> &[PortDef] {
        &self.spec.ports
    }

    /// Which port a destination address belongs to (topologies).
    pub fn destinations(&self) -> Option<&Destinations> {
        self.spec.paths.as_ref().map(|p| &p.dest)
    }

    /// The engine pipe of pipe number `n`.
    pub fn pipe(&self, n: u32) -> Option<PipeIdx> {
        self.pipes.get(&n).map(|r| r.idx)
    }

    /// Pipe numbers in force, in order.
    pub fn pipe_numbers(&self) -> impl Iterator<Item = u32> + '_ {
        self.pipes.keys().copied()
    }

    /// Pipe `n`'s counters (a dynamic pipe's totals over its instances).
    pub fn pipe_totals(&self, n: u32) -> Option<PipeStats> {
        self.engine.pipe_totals(self.pipe(n)?)
    }

    /// Pipe `n`'s instance accounting, if it is dynamic.
    pub fn pipe_instances(&self, n: u32) -> Option<InstanceStats> {
        self.engine.pipe_instances(self.pipe(n)?)
    }

    /// Pipe `n`'s live instances with their counters, in key order.
    pub fn pipe_instance_stats(&self, n: u32) -> Vec<(Option<FlowKey>, PipeStats)> {
        self.pipe(n)
            .map(|i| self.engine.pipe_instance_stats(i))
            .unwrap_or_default()
    }

    /// The default flow queue of scheduled pipe `n` (what `pipe n` rules
    /// feed).
    pub fn default_queue(&self, n: u32) -> Option<QueueId> {
        self.engine.default_queue(self.pipe(n)?)
    }

    /// Flow queue number `n`.
    pub fn queue(&self, n: u32) -> Option<QueueId> {
        self.queues.get(&n).copied()
    }

    /// Flow queue numbers in force, in order.
    pub fn queue_numbers(&self) -> impl Iterator<Item = u32> + '_ {
        self.queues.keys().copied()
    }

    /// A flow queue's counters.
    pub fn queue_stats(&self, q: QueueId) -> Option<QueueStats> {
        self.engine.queue_stats(q)
    }

    /// A flow queue's live instances with their counters.
    pub fn queue_instance_stats(&self, q: QueueId) -> Vec<(Option<FlowKey>, FlowStats)> {
        self.engine.queue_instance_stats(q)
    }

    /// The rules in evaluation order with their counters (the default
    /// rule last).
    pub fn rules(&self) -> impl Iterator<Item = (u32, &RuleSpec, &RuleCounters)> {
        self.classifier.rules()
    }

    /// Black-hole pipe number `n` in the window `[from, until)` (`None`:
    /// up again): every packet that reaches it at an instant of the
    /// window, on any route, is dropped with reason [`Reason::Down`];
    /// packets already inside leave as scheduled. The window is compared
    /// with each arrival's `now`, so it ends by itself, in virtual and in
    /// real time alike, and it stays with the pipe's number across
    /// [`Emulation::apply`]. False if there is no pipe `n`.
    pub fn set_pipe_down(&mut self, n: u32, window: Option<(Instant, Instant)>) -> bool {
        let Some(rt) = self.pipes.get(&n) else {
            return false;
        };
        let _ = self.engine.set_pipe_down(rt.idx, window);
        match window {
            Some(w) => self.down.insert(n, w),
            None => self.down.remove(&n),
        };
        true
    }

    /// Pipe `n`'s black-hole window, if one is set (it may have ended).
    pub fn pipe_down(&self, n: u32) -> Option<(Instant, Instant)> {
        self.down.get(&n).copied()
    }

    /// Engine pipes retired so far (replaced or removed, draining).
    pub fn retired_pipes(&self) -> usize {
        self.retired.len()
    }
}

/// The engine route crossing the pipes numbered `numbers` (one route for
/// each distinct list of engine pipes, kept in `cache`); `None` if a
/// pipe is not in `pipes`.
fn engine_route(
    engine: &mut Engine,
    pipes: &BTreeMap<u32, PipeRt>,
    cache: &mut HashMap<Vec<PipeIdx>, RouteId>,
    numbers: &[u32],
) -> Option<RouteId> {
    let hops = numbers
        .iter()
        .map(|n| pipes.get(n).map(|rt| rt.idx))
        .collect::<Option<Vec<PipeIdx>>>()?;
    if let Some(&r) = cache.get(&hops) {
        return Some(r);
    }
    let r = engine.add_route(&hops).ok()?;
    cache.insert(hops, r);
    Some(r)
}

/// The owner of hop `hop` of `hops` under `part` (worker 0 without one)
/// and the end of its segment: the index of the first later hop of
/// another owner, or the path's length. `None` past the last hop.
fn segment_of(part: Option<&Partition>, hops: &[u32], hop: usize) -> Option<(u16, usize)> {
    let first = *hops.get(hop)?;
    let owner = |n: u32| part.map_or(0, |p| p.owner(n));
    let o = owner(first);
    let end = hops[hop..]
        .iter()
        .position(|&n| owner(n) != o)
        .map_or(hops.len(), |i| hop + i);
    Some((o, end))
}
