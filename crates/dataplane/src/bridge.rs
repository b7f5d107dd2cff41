//! `pipelab bridge A B -f CONFIG`: a Dummynet bridge in user space between
//! two interfaces (dummynet-revisited Fig. 1: inserted without changing
//! anything on either side).
//!
//! Every frame that arrives on one port is classified by the rules of the
//! configuration (any ethertype: non-IP frames match rules that need no IP
//! field) and sent through the chosen pipe, then out of the other port.
//! Rules see the frame as `in`, received on its port (`recv`) and to be
//! transmitted on the other (`xmit`); `via` matches either. The link charges the IP packet's length
//! (Dummynet's L3 accounting), or the frame less its Ethernet header for
//! non-IP frames. GRO is turned off on both ports for the run (the kernel
//! would otherwise merge segments into super-frames) and restored on exit,
//! also on Ctrl-C.

use crate::backends::af_packet::AfPacket;
use crate::backends::ethtool::{self, Offload};
use crate::backends::Port;
use crate::runner::{Lateness, Runner, RunnerOptions, RunnerStats, Steer, Steering};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use pipelab_classify::frame::FrameInfo;
use pipelab_classify::{Classifier, Decision, Direction};
use pipelab_engine::{Duration, Engine, PipeConfig, RouteId};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io;
use std::os::fd::AsFd;

/// What `pipelab bridge` needs.
pub struct BridgeOptions {
    /// The two interfaces.
    pub ports: [String; 2],
    /// Pipes by number, already built (files loaded).
    pub pipes: Vec<(u32, PipeConfig)>,
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
    /// Per-rule counters: (number, packets, bytes).
    pub rules: Vec<(u32, u64, u64)>,
}

struct BridgeSteer {
    classifier: Classifier,
    routes: BTreeMap<u32, RouteId>,
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
            Decision::Deny | Decision::Queue(_) => Steer::Drop,
            Decision::Pipe(n) => match self.routes.get(&n) {
                Some(&route) => Steer::Pipe { route, out },
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

/// Run the bridge until SIGINT/SIGTERM or `duration`.
pub fn run_bridge(opts: BridgeOptions) -> io::Result<BridgeReport> {
    if opts.ports[0] == opts.ports[1] {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the two ports must differ",
        ));
    }
    let mut engine = Engine::new(Runner::<BridgeSteer>::engine_options(&opts.runner));
    let mut routes = BTreeMap::new();
    for (id, cfg) in &opts.pipes {
        let idx = engine.add_pipe_with_stage(cfg.clone(), *id as u64);
        let r = engine
            .pipe_route(idx)
            .ok_or_else(|| io::Error::other("no route"))?;
        routes.insert(*id, r);
    }
    let mut guard = OffloadGuard(Vec::new());
    for p in &opts.ports {
        if ethtool::get(p, Offload::Gro).unwrap_or(false)
            && ethtool::set(p, Offload::Gro, false).is_ok()
        {
            guard.0.push(p.clone());
        }
    }
    let a = AfPacket::open(&opts.ports[0])?;
    let b = AfPacket::open(&opts.ports[1])?;
    let ports: Vec<Box<dyn Port>> = vec![Box::new(a), Box::new(b)];
    let steer = BridgeSteer {
        classifier: opts.classifier,
        routes,
    };
    let mut runner = Runner::new(engine, ports, steer, opts.runner);

    let mut mask = SigSet::empty();
    mask.add(Signal::SIGINT);
    mask.add(Signal::SIGTERM);
    mask.thread_block().map_err(io::Error::from)?;
    let sfd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(io::Error::from)?;
    let start = runner.clock().now();
    let end = opts.duration.map(|d| start + d);
    let mut stop = false;
    runner.run_until(Some(sfd.as_fd()), |r| {
        if matches!(sfd.read_signal(), Ok(Some(_))) {
            stop = true;
        }
        stop || end.is_some_and(|e| r.clock().now() >= e)
    })?;
    runner.drain(Duration::from_secs(1))?;
    let _ = mask.thread_unblock();
    let report = BridgeReport {
        stats: runner.stats(),
        lateness: runner.lateness(),
        ports: runner.port_stats(),
        rules: runner
            .steering()
            .classifier
            .rules()
            .map(|(n, _, c)| (n, c.packets, c.bytes))
            .collect(),
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
    Ok(report)
}
