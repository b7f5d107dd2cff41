//! `pipelab bridge A B -f CONFIG`: a Dummynet bridge in user space between
//! two interfaces (dummynet-revisited Fig. 1: inserted without changing
//! anything on either side).
//!
//! Every frame that arrives on one port is classified by the rules of the
//! configuration (any ethertype: non-IP frames match rules that need no IP
//! field) and sent through the chosen pipe or flow queue, then out of the
//! other port. The engine is built by [`pipelab_sim::build_engine`], as for
//! `pipelab sim`: schedulers (`sched N`), flow queues (`queue N`) and masks
//! work on live frames as they do in virtual time.
//! Rules see the frame as `in`, received on its port (`recv`) and to be
//! transmitted on the other (`xmit`); `via` matches either. The link charges the IP packet's length
//! (Dummynet's L3 accounting), or the frame less its Ethernet header for
//! non-IP frames. GRO is turned off on both ports for the run (the kernel
//! would otherwise merge segments into super-frames) and restored on exit,
//! also on Ctrl-C.
//!
//! Backends ([`Backend`]): AF_XDP where it can be set up (an XDP program
//! redirecting every frame to an AF_XDP socket, native XDP where the driver
//! allows, else generic), else AF_PACKET with one log line saying why; or
//! either one forced. Each port chooses on its own.

use crate::backends::af_packet::AfPacket;
use crate::backends::af_xdp::AfXdp;
use crate::backends::ethtool::{self, Offload};
use crate::backends::Port;
use crate::runner::{Lateness, Runner, RunnerOptions, RunnerStats, Steer, Steering};
use crate::signals::StopSignals;
use pipelab_classify::frame::FrameInfo;
use pipelab_classify::{Classifier, Decision, Direction};
use pipelab_engine::engine::QueueId;
use pipelab_engine::{Duration, RouteId};
use pipelab_sim::Built;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io;
use std::os::fd::AsFd;

/// Which backend moves the frames of a bridge port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// AF_XDP if it can be set up on the port, else AF_PACKET (with one
    /// log line on stderr saying why).
    #[default]
    Auto,
    /// AF_XDP or an error.
    AfXdp,
    /// AF_PACKET with its TPACKET_V2 ring.
    AfPacket,
}

/// What `pipelab bridge` needs.
pub struct BridgeOptions {
    /// The two interfaces.
    pub ports: [String; 2],
    /// The backend of both ports.
    pub backend: Backend,
    /// The engine built from the configuration (pipes, schedulers, masks,
    /// flow queues), with its routes and queue ids by number; its options
    /// should be [`RunnerOptions::engine_options`] of `runner`.
    pub built: Built,
    /// The compiled rules.
    pub classifier: Classifier,
    /// Runner settings.
    pub runner: RunnerOptions,
    /// Stop after this long (default: at SIGINT or SIGTERM).
    pub duration: Option<Duration>,
    /// Write the final report as JSON to this file.
    pub stats_file: Option<std::path::PathBuf>,
    /// Print the final report on stderr.
    pub verbose: bool,
    /// What to do when a port's interface is deleted.
    pub port_loss: PortLoss,
}

/// What the bridge does when a port's interface is deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PortLoss {
    /// Keep running, count the frames due on it as `dropped_tx`, and open
    /// the interface again when one of that name is back and up.
    #[default]
    Wait,
    /// End the run (the report is written) with an error naming it.
    Exit,
}

/// The report written at exit.
#[derive(Clone, Debug, Serialize)]
pub struct BridgeReport {
    /// Packet accounting.
    pub stats: RunnerStats,
    /// Lateness of transmissions.
    pub lateness: Lateness,
    /// Per-port counters.
    pub ports: Vec<(String, crate::backends::PortStats)>,
    /// Per-port backend in use: "af_packet", "af_xdp native" or
    /// "af_xdp generic".
    pub backends: Vec<(String, String)>,
    /// Per-rule counters: (number, packets, bytes).
    pub rules: Vec<(u32, u64, u64)>,
    /// Per flow queue (`queue N`) counters, in number order.
    pub queues: Vec<QueueCounters>,
}

/// Counters of one flow queue over the run (all its instances).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct QueueCounters {
    /// The queue's number.
    pub id: u32,
    /// Packets offered to it.
    pub arrivals: u64,
    /// Packets it dropped (full).
    pub drops: u64,
    /// Packets its scheduler served.
    pub served: u64,
    /// Bytes its scheduler served.
    pub served_bytes: u64,
}

struct BridgeSteer {
    classifier: Classifier,
    routes: BTreeMap<u32, RouteId>,
    queues: BTreeMap<u32, QueueId>,
}

impl Steering for BridgeSteer {
    fn steer(&mut self, in_port: usize, f: &FrameInfo) -> (Steer, u32) {
        let out = 1 - in_port.min(1);
        let mut view = f.view;
        view.dir = Some(Direction::In);
        // Port ids as the classifier's context numbers them (0 = A, 1 = B):
        // `recv A` matches frames that came in on A, `xmit B` those that
        // will leave on B.
        view.in_if = Some(in_port as u32);
        view.out_if = Some(out as u32);
        let m = self.classifier.classify(&view, 0);
        let s = match m.decision {
            Decision::Allow => Steer::Pass { out },
            Decision::Deny => Steer::Drop,
            Decision::Pipe(n) => match self.routes.get(&n) {
                Some(&route) => Steer::Pipe { route, out },
                None => Steer::Drop,
            },
            Decision::Queue(n) => match self.queues.get(&n) {
                Some(&queue) => Steer::Queue { queue, out },
                None => Steer::Drop,
            },
        };
        (s, f.l3_len.max(1))
    }
}

/// Restores GRO on the ports when dropped.
struct OffloadGuard(Vec<String>);

impl Drop for OffloadGuard {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = ethtool::set(p, Offload::Gro, true);
        }
    }
}

/// Open one port with `backend`: the port and a name for its backend.
fn open_port(name: &str, backend: Backend) -> io::Result<(Box<dyn Port>, String)> {
    let xdp = |x: AfXdp| {
        let kind = match x.mode() {
            crate::backends::af_xdp::XdpMode::Native => "af_xdp native",
            crate::backends::af_xdp::XdpMode::Generic => "af_xdp generic",
        };
        (Box::new(x) as Box<dyn Port>, kind.to_string())
    };
    let packet = || -> io::Result<(Box<dyn Port>, String)> {
        let p =
            AfPacket::open(name).map_err(|e| io::Error::new(e.kind(), format!("{name}: {e}")))?;
        Ok((Box::new(p), "af_packet".to_string()))
    };
    match backend {
        Backend::AfPacket => packet(),
        Backend::AfXdp => AfXdp::open(name)
            .map(xdp)
            .map_err(|e| io::Error::new(e.kind(), format!("AF_XDP on {name}: {e}"))),
        Backend::Auto => match AfXdp::open(name) {
            Ok(x) => Ok(xdp(x)),
            Err(e) => {
                eprintln!("pipelab: AF_XDP unavailable on {name} ({e}): using AF_PACKET");
                packet()
            }
        },
    }
}

/// Run the bridge until SIGINT/SIGTERM or `duration`.
pub fn run_bridge(opts: BridgeOptions) -> io::Result<BridgeReport> {
    if opts.ports[0] == opts.ports[1] {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the two ports must differ",
        ));
    }
    let Built {
        engine,
        routes,
        queues,
        ..
    } = opts.built;
    let mut guard = OffloadGuard(Vec::new());
    for p in &opts.ports {
        if ethtool::get(p, Offload::Gro).unwrap_or(false)
            && ethtool::set(p, Offload::Gro, false).is_ok()
        {
            guard.0.push(p.clone());
        }
    }
    let mut ports: Vec<Box<dyn Port>> = Vec::new();
    let mut backends = Vec::new();
    for name in &opts.ports {
        let (port, kind) = open_port(name, opts.backend)?;
        if opts.verbose {
            eprintln!("pipelab: {name}: {kind}");
        }
        ports.push(port);
        backends.push((name.clone(), kind));
    }
    let steer = BridgeSteer {
        classifier: opts.classifier,
        routes,
        queues,
    };
    let mut runner = Runner::new(engine, ports, steer, opts.runner);

    let signals = StopSignals::block()?;
    let start = runner.clock().now();
    let end = opts.duration.map(|d| start + d);
    // A port whose interface is deleted is marked lost by the runner:
    // frames due on it are counted as `dropped_tx`. With `PortLoss::Wait`
    // the bridge looks for the interface every 10 ms and opens a new port
    // on it once it exists and is up; with `PortLoss::Exit` the run ends
    // (the report is still written) with an error naming the port.
    let mut announced = [false; 2];
    let mut failure = None;
    loop {
        if signals.pending() || end.is_some_and(|e| runner.clock().now() >= e) {
            break;
        }
        let lost: Vec<(usize, String)> = runner
            .lost_ports()
            .map(|(i, why)| (i, why.to_string()))
            .collect();
        for (i, why) in &lost {
            if opts.port_loss == PortLoss::Exit {
                failure = Some(io::Error::new(io::ErrorKind::NotFound, why.clone()));
                break;
            }
            let name = &opts.ports[*i];
            if !announced[*i] {
                announced[*i] = true;
                eprintln!("pipelab: {why}: waiting for {name} to come back (frames for it are counted as dropped_tx)");
            }
            if !crate::backends::interface_is_up(name) {
                continue;
            }
            if let Ok((port, kind)) = open_port(name, opts.backend) {
                if ethtool::get(name, Offload::Gro).unwrap_or(false)
                    && ethtool::set(name, Offload::Gro, false).is_ok()
                    && !guard.0.contains(name)
                {
                    guard.0.push(name.clone());
                }
                runner.replace_port(*i, port);
                announced[*i] = false;
                if let Some(b) = backends.get_mut(*i) {
                    b.1 = kind.clone();
                }
                eprintln!("pipelab: {name} is back ({kind}): forwarding");
            }
        }
        if failure.is_some() {
            break;
        }
        let limit = if lost.is_empty() { 100 } else { 10 };
        if let Err(e) = runner.step(Duration::from_millis(limit), Some(signals.fd.as_fd())) {
            failure = Some(e);
            break;
        }
    }
    if failure.is_none() {
        failure = runner.drain(Duration::from_secs(1)).err();
    }
    drop(signals);
    let queue_ids: Vec<(u32, QueueId)> = runner
        .steering()
        .queues
        .iter()
        .map(|(&n, &q)| (n, q))
        .collect();
    let queues = queue_ids
        .into_iter()
        .filter_map(|(id, q)| {
            let f = runner.engine().queue_stats(q)?.flows;
            Some(QueueCounters {
                id,
                arrivals: f.arrivals,
                drops: f.drops,
                served: f.served,
                served_bytes: f.served_bytes,
            })
        })
        .collect();
    let report = BridgeReport {
        stats: runner.stats(),
        lateness: runner.lateness(),
        ports: runner.port_stats(),
        backends,
        rules: runner
            .steering()
            .classifier
            .rules()
            .map(|(n, _, c)| (n, c.packets, c.bytes))
            .collect(),
        queues,
    };
    let json = serde_json::to_string_pretty(&report).unwrap_or_default();
    if opts.verbose {
        eprintln!("{json}");
    }
    if let Some(p) = &opts.stats_file {
        std::fs::write(p, &json)?;
    }
    drop(runner);
    drop(guard);
    match failure {
        Some(e) => Err(e),
        None => Ok(report),
    }
}
