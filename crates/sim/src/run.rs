//! Running a configuration against synthetic traffic in virtual time.
//!
//! The loop is the virtual-time driver of the engine: take the earlier of
//! the next packet arrival and the engine's next deadline, advance the
//! engine to it, settle what came out, inject what arrives. Every packet
//! that leaves the engine does so exactly at the instant advanced to, so a
//! packet reinjected into the classifier (`set one_pass 0`) enters its next
//! pipe at its exact exit time.
//!
//! Synthetic packets are seen by rules as entering the emulator (`in`).

use crate::report::{
    FlowAcc, InstanceCounts, PipeInstanceReport, PipeReport, QueueInstanceReport, QueueReport,
    Report, RuleReport,
};
use crate::source::Source;
use pipelab_classify::{Classifier, Decision, Direction, PacketView};
use pipelab_engine::engine::{DropReason, EngineOptions, Fate, InstanceStats, Output, QueueId};
use pipelab_engine::rng::{stage_rng, StageKind};
use pipelab_engine::{Engine, FlowKey, Instant, Packet, RouteId, Verdict};
use pipelab_lang::{Config, TrafficProto, TrafficSpec};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// How many times a packet may re-enter the classifier (`one_pass 0`)
/// before it is dropped as looping.
pub const MAX_PASSES: u64 = 64;

/// Simulation settings.
#[derive(Clone, Copy, Debug)]
pub struct SimOptions {
    /// Seed of every random decision (traffic, `prob`, models).
    pub seed: u64,
    /// Most packets inside the engine at once.
    pub max_packets: u32,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            seed: 1,
            max_packets: EngineOptions::default().max_packets,
        }
    }
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
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Pipe { id, reason } => write!(f, "pipe {id}: {reason}"),
            SimError::Unsupported(s) => write!(f, "{s}"),
            SimError::NoTraffic => f.write_str(
                "no traffic: give at least one --traffic, e.g. --traffic 'cbr rate 1000pps size 1000B duration 10s'",
            ),
        }
    }
}

impl std::error::Error for SimError {}

impl From<crate::build::BuildError> for SimError {
    fn from(e: crate::build::BuildError) -> SimError {
        match e {
            crate::build::BuildError::Pipe { id, reason } => SimError::Pipe { id, reason },
            crate::build::BuildError::Unsupported(s) => SimError::Unsupported(s),
        }
    }
}

/// Bits of a packet's `tag` that count passes through the classifier.
const PASS_SHIFT: u32 = 48;

struct Sim<'a> {
    engine: Engine,
    classifier: Classifier,
    routes: BTreeMap<u32, RouteId>,
    queues: BTreeMap<u32, QueueId>,
    one_pass: bool,
    flows: Vec<FlowAcc>,
    keys: Vec<FlowKey>,
    specs: &'a [TrafficSpec],
    end: Instant,
}

impl Sim<'_> {
    /// Walk `pkt` through the rules from rule index `start`, at `now`.
    fn classify_and_send(&mut self, now: Instant, mut pkt: Packet, start: usize) {
        let flow = pkt.flow as usize;
        let view = PacketView {
            dir: Some(Direction::In),
            ..PacketView::ip(pkt.key, pkt.len)
        };
        let m = self.classifier.classify(&view, start);
        match m.decision {
            Decision::Allow => self.deliver(&pkt, now),
            Decision::Deny => self.flows[flow].drops.rule += 1,
            Decision::Pipe(n) => {
                let Some(&route) = self.routes.get(&n) else {
                    // References are checked before the run; treat as deny.
                    self.flows[flow].drops.rule += 1;
                    return;
                };
                pkt.buf = m.rule as u32;
                match self.engine.enqueue(now, pkt, route) {
                    Verdict::Queued => {}
                    Verdict::Dropped(r) => self.dropped(flow, r),
                }
            }
            Decision::Queue(n) => {
                let Some(&q) = self.queues.get(&n) else {
                    // References are checked before the run; treat as deny.
                    self.flows[flow].drops.rule += 1;
                    return;
                };
                pkt.buf = m.rule as u32;
                match self.engine.enqueue_to_queue(now, pkt, q) {
                    Verdict::Queued => {}
                    Verdict::Dropped(r) => self.dropped(flow, r),
                }
            }
        }
    }

    fn deliver(&mut self, pkt: &Packet, at: Instant) {
        let seq = pkt.tag & ((1 << PASS_SHIFT) - 1);
        self.flows[pkt.flow as usize].delivered(pkt, seq, at - pkt.born, at);
        self.end = self.end.max(at);
    }

    fn dropped(&mut self, flow: usize, r: DropReason) {
        let d = &mut self.flows[flow].drops;
        match r {
            DropReason::QueueFull => d.queue += 1,
            DropReason::PoolFull => d.memory += 1,
            DropReason::Loss => d.loss += 1,
            DropReason::Aqm => d.aqm += 1,
            DropReason::Link => d.link += 1,
        }
    }

    fn settle(&mut self, o: Output) {
        let flow = o.pkt.flow as usize;
        self.end = self.end.max(o.at);
        match o.fate {
            Fate::Dropped { reason, .. } => self.dropped(flow, reason),
            Fate::Duplicated { .. } => {}
            Fate::Delivered if self.one_pass => self.deliver(&o.pkt, o.at),
            Fate::Delivered => {
                let passes = o.pkt.tag >> PASS_SHIFT;
                if passes + 1 >= MAX_PASSES {
                    self.flows[flow].drops.r#loop += 1;
                    return;
                }
                let mut pkt = o.pkt;
                pkt.tag += 1 << PASS_SHIFT;
                let resume = pkt.buf as usize + 1;
                self.classify_and_send(o.at, pkt, resume);
            }
        }
    }
}

fn flow_key(spec: &TrafficSpec, index: usize) -> FlowKey {
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

/// Run `config` against `traffic` in virtual time until every packet has
/// left the emulator, and report.
///
/// Files named by pipes (`distribution file:PATH`, `loss trace:PATH`) are
/// read as written, relative to the current directory; use
/// [`simulate_with_loader`] to resolve them otherwise.
pub fn simulate(
    config: &Config,
    traffic: &[TrafficSpec],
    opts: &SimOptions,
) -> Result<Report, SimError> {
    simulate_with_loader(config, traffic, opts, &mut |path: &str| {
        std::fs::read_to_string(path).map_err(|e| e.to_string())
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
    let crate::build::Built {
        engine,
        routes,
        pipes: pipe_ids,
        queues,
    } = crate::build::build_engine(
        config,
        EngineOptions {
            max_packets: opts.max_packets,
            seed: opts.seed,
        },
        load,
    )?;
    let ctx = pipelab_classify::Context {
        tables: config.tables.clone(),
        ..Default::default()
    };
    let classifier =
        Classifier::with_context(config.rules.iter().map(|(n, r)| (*n, r)), &ctx, opts.seed);
    let mut sim = Sim {
        engine,
        classifier,
        routes,
        queues,
        one_pass: config.one_pass,
        flows: traffic.iter().map(|_| FlowAcc::new()).collect(),
        keys: traffic
            .iter()
            .enumerate()
            .map(|(i, s)| flow_key(s, i))
            .collect(),
        specs: traffic,
        end: Instant::ZERO,
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
    let mut out = Vec::with_capacity(1024);
    let mut seq = 0u64;
    loop {
        let next_arrival = arrivals.peek().map(|r| r.0 .0);
        let next_deadline = sim.engine.next_deadline();
        let t = match (next_arrival, next_deadline) {
            (None, None) => break,
            (Some(a), None) => a,
            (None, Some(d)) => d,
            (Some(a), Some(d)) => a.min(d),
        };
        // Departures due at t free their slots before arrivals at t.
        sim.engine.advance(t, &mut out);
        for o in out.drain(..) {
            sim.settle(o);
        }
        while let Some(&Reverse((at, i))) = arrivals.peek() {
            if at > t {
                break;
            }
            arrivals.pop();
            let spec = &sim.specs[i];
            let pkt = Packet {
                len: spec.size,
                buf: 0,
                flow: i as u32,
                tag: seq & ((1 << PASS_SHIFT) - 1),
                born: t,
                key: sim.keys[i],
                flags: if spec.ecn { Packet::ECT } else { 0 },
            };
            seq += 1;
            sim.flows[i].sent += 1;
            sim.flows[i].sent_bytes += spec.size as u64;
            sim.classify_and_send(t, pkt, 0);
            if let Some(next) = sources[i].next() {
                arrivals.push(Reverse((next, i)));
            }
        }
    }
    let flows = sim
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let name = traffic[i]
                .name
                .clone()
                .unwrap_or_else(|| format!("flow{i}"));
            f.finish(i, name, traffic[i].to_string())
        })
        .collect();
    let pipes = pipe_ids
        .iter()
        .filter_map(|&(id, idx)| {
            let st = sim.engine.pipe_totals(idx)?;
            let spec = config.pipes.get(&id)?;
            let instance_list = sim
                .engine
                .pipe_instance_stats(idx)
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
                config: spec.to_string(),
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
                instances: sim.engine.pipe_instances(idx).map(counts),
                instance_list,
            })
        })
        .collect();
    let mut queue_list: Vec<(u32, bool, u32, String, QueueId)> = pipe_ids
        .iter()
        .filter_map(|&(id, idx)| {
            let q = sim.engine.default_queue(idx)?;
            Some((id, true, id, String::new(), q))
        })
        .collect();
    for (&n, &q) in &sim.queues {
        if let Some(spec) = config.queues.get(&n) {
            queue_list.push((n, false, spec.target.number(), spec.to_string(), q));
        }
    }
    let queues = queue_list
        .into_iter()
        .filter_map(|(id, default, pipe, config, q)| {
            let st = sim.engine.queue_stats(q)?;
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
                instance_list: sim
                    .engine
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
    let rules = sim
        .classifier
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
    Ok(Report {
        seed: opts.seed,
        end_s: sim.end.as_nanos() as f64 / 1e9,
        flows,
        pipes,
        queues,
        rules,
    })
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
