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
use pipelab_classify::{Direction, PacketView};
use pipelab_emu::{
    lower_config, Compiled, Departure, Emulation, Exit, Ingress, LowerError, Reason, Spec,
    SpecError,
};
use pipelab_engine::engine::{EngineOptions, InstanceStats, QueueId};
use pipelab_engine::rng::{stage_rng, StageKind};
use pipelab_engine::{FlowKey, Instant, Packet};
use pipelab_lang::{Config, TrafficProto, TrafficSpec};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

pub use pipelab_emu::MAX_PASSES;

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

/// The per-flow bookkeeping of a run.
struct Sim<'a> {
    emu: Emulation,
    flows: Vec<FlowAcc>,
    keys: Vec<FlowKey>,
    specs: &'a [TrafficSpec],
    end: Instant,
}

/// The view of a synthetic packet: an IP packet entering the emulator.
fn view_of(pkt: &Packet) -> PacketView {
    PacketView {
        dir: Some(Direction::In),
        ..PacketView::ip(pkt.key, pkt.len)
    }
}

impl Sim<'_> {
    fn deliver(&mut self, pkt: &Packet, at: Instant) {
        self.flows[pkt.flow as usize].delivered(pkt, pkt.tag, at - pkt.born, at);
        self.end = self.end.max(at);
    }

    fn dropped(&mut self, flow: usize, r: Reason) {
        let d = &mut self.flows[flow].drops;
        match r {
            Reason::Queue => d.queue += 1,
            Reason::Memory => d.memory += 1,
            Reason::Loss => d.loss += 1,
            Reason::Aqm => d.aqm += 1,
            Reason::Link => d.link += 1,
            Reason::Rule | Reason::NoRoute => d.rule += 1,
            Reason::Loop => d.r#loop += 1,
        }
    }

    fn inject(&mut self, now: Instant, pkt: Packet) {
        let mut view = view_of(&pkt);
        match self.emu.ingress(now, pkt, 0, &mut view) {
            Ingress::Queued => {}
            Ingress::Out(_) => self.deliver(&pkt, now),
            Ingress::Dropped(r) => self.dropped(pkt.flow as usize, r),
        }
    }

    fn settle(&mut self, d: Departure) {
        self.end = self.end.max(d.at);
        match d.exit {
            Exit::Deliver { .. } => self.deliver(&d.pkt, d.at),
            Exit::Dropped(r) => self.dropped(d.pkt.flow as usize, r),
            Exit::Duplicated => {}
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
    let mut spec = lower_config(config, load)?;
    spec.ports = Spec::single_port("sim", Some(Direction::In));
    let compiled = Compiled::new(spec, opts.seed)?;
    let mut emu = Emulation::new(EngineOptions {
        max_packets: opts.max_packets,
        seed: opts.seed,
    });
    emu.apply(compiled);
    let mut sim = Sim {
        emu,
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
        let next_deadline = sim.emu.next_deadline();
        let t = match (next_arrival, next_deadline) {
            (None, None) => break,
            (Some(a), None) => a,
            (None, Some(d)) => d,
            (Some(a), Some(d)) => a.min(d),
        };
        // Departures due at t free their slots before arrivals at t.
        sim.emu.advance(t, &mut out, &mut view_of);
        for d in out.drain(..) {
            sim.settle(d);
        }
        while let Some(&Reverse((at, i))) = arrivals.peek() {
            if at > t {
                break;
            }
            arrivals.pop();
            let spec = &sim.specs[i];
            let pkt = Packet {
                flow: i as u32,
                tag: seq,
                born: t,
                key: sim.keys[i],
                flags: if spec.ecn { Packet::ECT } else { 0 },
                ..Packet::new(spec.size)
            };
            seq += 1;
            sim.flows[i].sent += 1;
            sim.flows[i].sent_bytes += spec.size as u64;
            sim.inject(t, pkt);
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
    let emu = &sim.emu;
    let pipes = emu
        .pipe_numbers()
        .filter_map(|id| {
            let st = emu.pipe_totals(id)?;
            let spec = config.pipes.get(&id)?;
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
                instances: emu.pipe_instances(id).map(counts),
                instance_list,
            })
        })
        .collect();
    let mut queue_list: Vec<(u32, bool, u32, String, QueueId)> = emu
        .pipe_numbers()
        .filter_map(|id| Some((id, true, id, String::new(), emu.default_queue(id)?)))
        .collect();
    for n in emu.queue_numbers() {
        if let (Some(spec), Some(q)) = (config.queues.get(&n), emu.queue(n)) {
            queue_list.push((n, false, spec.target.number(), spec.to_string(), q));
        }
    }
    let queues = queue_list
        .into_iter()
        .filter_map(|(id, default, pipe, config, q)| {
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
    let rules = emu
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
