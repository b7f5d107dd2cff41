//! `pipelab attach DEV`: an existing interface shaped in place, as `tc
//! qdisc add dev DEV root netem ...` does, this host's own traffic and
//! forwarded traffic alike; with `--netns`, inside another network
//! namespace (a container's, a pod's).
//!
//! ```text
//!            prerouting (ingress)               postrouting (egress)
//!  ── DEV ──► iifname "DEV" queue ──► routing ──► oifname "DEV" queue ──► DEV ──
//!                         │                                │
//!                         └──── netfilter queue N: pipelab ┘
//! ```
//!
//! The mechanism is host mode's ([`crate::host`]): one netfilter queue
//! and an nftables table of its own (`inet pipelab_at_PID`), whose base
//! chains are the prerouting hook for what arrives on DEV (direction
//! `in`) and the postrouting hook for what leaves by it (direction
//! `out`) ([`Hooks::Device`]); iptables' `mangle` table where nftables
//! lacks its `queue` expression. Every packet crossing DEV waits in the
//! kernel until the emulator's verdict. The interface itself is not
//! touched: no qdisc, no offload, no link setting; so there is nothing
//! to restore on it but the table. Why this mechanism, and its measured
//! cost: docs/design-notes.md.
//!
//! Pipe words (`-- delay 50ms`) make pipe 1 for egress and pipe 2 for
//! ingress, and the rules that send to them ([`attach_config`]); a
//! `--config` file may add to them or stand alone with any configuration
//! of the language (rules see what the hooks queue: `out` at
//! postrouting, `in` at prerouting, `recv`/`xmit` the interfaces).
//! Egress only by default, as tc's root qdisc.
//!
//! With `--netns` ([`NetnsRef`]: a name under `/run/netns`, a process id,
//! or a path), the process enters the namespace before it creates
//! anything: the queue's socket, the `nft` child and every thread live
//! there. The rules are written in the host ledger ([`crate::ledger`])
//! before they are installed, with the namespace's identity (the nsfs
//! device and inode) and the path it was entered by; after a `kill -9`
//! they are **fail-closed** (nobody listens on the queue: the kernel
//! drops DEV's packets) until the next pipelab command, or `pipelab
//! cleanup`, removes them in that namespace, if it still exists.

use crate::error::ModeError;
use crate::host::{Hooks, HostOptions, HostPlane, HostStats, RulesForm};
use crate::ledger::{Change, Ledger};
use pipelab_control::{Plane, PlaneError, Prepared, Preparer};
use pipelab_emu::{Compiled, FileLoader};
use pipelab_engine::Duration;
use pipelab_io::backends::nfqueue::VerdictStats;
use pipelab_io::backends::PortStats;
use pipelab_io::runner::{Lateness, RunnerOptions, RunnerStats};
use pipelab_io::signals::StopSignals;
use pipelab_lang::{parse_line, Command as Cmd, Config, PipeSpec};
use serde::Serialize;
use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::Arc;

/// The rule that sends DEV's egress to pipe 1.
pub const EGRESS_RULE: u32 = 65000;
/// The rule that sends DEV's ingress to pipe 2.
pub const INGRESS_RULE: u32 = 65010;
/// The first netfilter queue number tried (then the next ones, while in
/// use): `ATTACH_QUEUE + pid % 20000`.
pub const ATTACH_QUEUE: u16 = 7500;

/// The configuration pipe words make: pipe 1 for what leaves by `dev`
/// (`egress`), pipe 2 for what arrives on it (`ingress`), each with its
/// rule (`add 65000 pipe 1 ip from any to any out xmit DEV`, `add 65010
/// pipe 2 ip from any to any in recv DEV`); only the directions given.
pub fn attach_config(
    dev: &str,
    egress: Option<PipeSpec>,
    ingress: Option<PipeSpec>,
) -> Result<Config, String> {
    let mut cfg = Config::new();
    let sides = [
        (1, EGRESS_RULE, "out xmit", egress),
        (2, INGRESS_RULE, "in recv", ingress),
    ];
    for (pipe, rule, side, spec) in sides {
        let Some(spec) = spec else { continue };
        cfg.apply(&Cmd::PipeConfig { id: pipe, spec })
            .map_err(|e| e.to_string())?;
        let line = format!("add {rule} pipe {pipe} ip from any to any {side} {dev}");
        // The hooks select the device already: a name the language does
        // not read as one word is left out of the rule.
        let c = match parse_line(&line) {
            Ok(Some(c)) => c,
            _ => {
                let (dir, _) = side.split_once(' ').unwrap_or((side, ""));
                let plain = format!("add {rule} pipe {pipe} ip from any to any {dir}");
                match parse_line(&plain) {
                    Ok(Some(c)) => c,
                    _ => return Err(format!("internal: cannot parse '{plain}'")),
                }
            }
        };
        cfg.apply(&c).map_err(|e| e.to_string())?;
    }
    Ok(cfg)
}

/// The network namespace `--netns` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetnsRef {
    /// As given.
    pub given: String,
    /// Its file: `/run/netns/NAME`, `/proc/PID/ns/net`, or the path.
    pub path: PathBuf,
}

impl NetnsRef {
    /// A name (no `/`) is a namespace of `ip netns` (`/run/netns/NAME`),
    /// a number a process's (`/proc/PID/ns/net`, as `docker inspect -f
    /// '{{.State.Pid}}'` prints), anything else a path (a bind mount of a
    /// namespace, or `/proc/PID/ns/net` itself).
    pub fn parse(s: &str) -> NetnsRef {
        let path = if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            PathBuf::from(format!("/proc/{s}/ns/net"))
        } else if s.contains('/') {
            PathBuf::from(s)
        } else {
            PathBuf::from(crate::topo::NETNS_DIR).join(s)
        };
        NetnsRef {
            given: s.to_string(),
            path,
        }
    }

    /// `network namespace 'NAME' (PATH)`.
    pub fn describe(&self) -> String {
        format!(
            "network namespace '{}' ({})",
            self.given,
            self.path.display()
        )
    }
}

/// Why `pipelab attach` refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// The configuration cannot be lowered or compiled.
    #[error("error: {0}")]
    Config(ModeError),
    /// The interface's name cannot be written into the rules, or no
    /// direction was chosen.
    #[error("error: {0}")]
    Device(io::Error),
    /// `--netns` names nothing.
    #[error("error: --netns {}: no such network namespace ({}: {source})", .netns.given, .netns.path.display())]
    NoNamespace {
        /// The namespace.
        netns: NetnsRef,
        /// Why it cannot be opened.
        source: io::Error,
    },
    /// `--netns` names a file that is not a network namespace.
    #[error("error: --netns {}: {} is not a network namespace ({source})", .netns.given, .netns.path.display())]
    NotNamespace {
        /// The namespace.
        netns: NetnsRef,
        /// What setns said.
        source: io::Error,
    },
    /// No such interface where it is looked for.
    #[error("error: no interface '{dev}' in {place}")]
    NoDevice {
        /// The interface.
        dev: String,
        /// `this host's network namespace`, or the namespace described.
        place: String,
    },
    /// Not root (or without the capabilities).
    #[error("error: {0}")]
    Privilege(String),
    /// Setting up or running failed.
    #[error("pipelab attach: {0}")]
    Run(io::Error),
}

impl AttachError {
    /// What the user gave wrong (exit status 2), as opposed to what
    /// failed while running.
    pub fn is_usage(&self) -> bool {
        !matches!(self, AttachError::Run(_) | AttachError::Privilege(_))
    }
}

impl From<io::Error> for AttachError {
    fn from(e: io::Error) -> AttachError {
        AttachError::Run(e)
    }
}

impl From<crate::ledger::LedgerError> for AttachError {
    fn from(e: crate::ledger::LedgerError) -> AttachError {
        AttachError::Run(e.into())
    }
}

/// What `pipelab attach` needs.
pub struct AttachOptions {
    /// The interface.
    pub dev: String,
    /// The namespace it is in (default: this process's).
    pub netns: Option<NetnsRef>,
    /// Shape what arrives on it.
    pub ingress: bool,
    /// Shape what leaves by it.
    pub egress: bool,
    /// The configuration ([`attach_config`], a file, or both).
    pub config: Config,
    /// Reads the files the configuration's pipes name.
    pub load: FileLoader,
    /// Runner settings.
    pub runner: RunnerOptions,
    /// The emulation's name (default `attach-PID`).
    pub name: Option<String>,
    /// Stop after this long (default: at a stop signal).
    pub duration: Option<Duration>,
    /// Write the final report as JSON to this file.
    pub stats_file: Option<crate::report::StatsFile>,
    /// Print the final report on stderr.
    pub verbose: bool,
    /// The capture, event log and series to record (`--pcap`, `--events`,
    /// `--interval`, `--series`, `--flow-series`), as host mode does.
    pub recording: crate::host::Recording,
}

/// The report written at exit.
#[derive(Clone, Debug, Serialize)]
pub struct AttachReport {
    /// The interface.
    pub device: String,
    /// The namespace's path, if not this process's own.
    pub netns: Option<PathBuf>,
    /// What arrived on it was shaped.
    pub ingress: bool,
    /// What left by it was shaped.
    pub egress: bool,
    /// The netfilter queue.
    pub queue: u16,
    /// The nftables table.
    pub table: String,
    /// Packet accounting.
    pub stats: RunnerStats,
    /// Lateness of releases.
    pub lateness: Lateness,
    /// Seconds of the run whose releases were late (p99 beyond the
    /// watcher's threshold), and why (see [`crate::precision`]).
    pub precision: crate::precision::Precision,
    /// The queue's counters.
    pub port: PortStats,
    /// Verdicts issued.
    pub verdicts: VerdictStats,
    /// Per rule: (number, packets, bytes).
    pub rules: Vec<(u32, u64, u64)>,
    /// Per pipe.
    pub pipes: Vec<crate::report::PipeCounters>,
    /// Per flow queue.
    pub queues: Vec<crate::report::QueueCounters>,
    /// The seed of every random decision.
    pub seed: u64,
    /// With `--interval`: every pipe's and flow's counters over time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<crate::series::SeriesReport>,
    /// With `--pcap` or `--events`: what was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture: Option<pipelab_io::capture::Summary>,
}

/// The plane the control protocol drives: the host plane, shared with
/// the mode (which stops it itself, to drain it and read its counters).
struct AttachPlane {
    plane: Arc<HostPlane>,
    load: Arc<FileLoader>,
}

impl Plane for AttachPlane {
    fn preparer(&self) -> Preparer {
        let (seed, load) = (self.plane.seed(), Arc::clone(&self.load));
        Arc::new(move |cfg: &Config| {
            let c = HostPlane::compile_with(cfg, seed, &mut |p: &str| (*load)(p))?;
            Ok(Prepared::new(c))
        })
    }

    fn commit(&mut self, prepared: Prepared) -> Result<(), PlaneError> {
        self.plane.apply_compiled(prepared.take::<Compiled>()?)?;
        Ok(())
    }

    fn stats(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self.plane.stats()).unwrap_or_default();
        v["plane"] = serde_json::Value::from("attach");
        v
    }

    fn stop(self: Box<Self>) -> Result<(), PlaneError> {
        Ok(())
    }

    fn mode(&self) -> &'static str {
        "attach"
    }
}

/// Enter `netns` on the calling thread (every thread and child started
/// from it afterwards lives there); returns its file.
fn enter(netns: &NetnsRef) -> Result<File, AttachError> {
    let file = File::open(&netns.path).map_err(|source| AttachError::NoNamespace {
        netns: netns.clone(),
        source,
    })?;
    nix::sched::setns(file.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET).map_err(|e| {
        let source = io::Error::from(e);
        if e == nix::errno::Errno::EINVAL {
            AttachError::NotNamespace {
                netns: netns.clone(),
                source,
            }
        } else {
            AttachError::Run(io::Error::new(
                source.kind(),
                format!("entering {}: {source}", netns.describe()),
            ))
        }
    })?;
    Ok(file)
}

/// `egress`, `ingress`, `egress and ingress`.
fn directions(ingress: bool, egress: bool) -> &'static str {
    match (egress, ingress) {
        (true, true) => "egress and ingress",
        (true, false) => "egress",
        _ => "ingress",
    }
}

/// Run `pipelab attach` until a stop signal ([`pipelab_io::signals::STOP`]) or `duration`; the interface
/// is as it was when this returns.
pub fn run_attach(mut opts: AttachOptions) -> Result<AttachReport, AttachError> {
    let hooks = Hooks::Device {
        dev: opts.dev.clone(),
        ingress: opts.ingress,
        egress: opts.egress,
    };
    // What the user gave wrong is refused before anything else: the
    // device's name, the configuration (its interfaces resolve later,
    // in the namespace).
    hooks.check().map_err(AttachError::Device)?;
    pipelab_emu::lower_config(&opts.config, &mut |p: &str| (opts.load)(p))
        .map_err(|e| AttachError::Config(e.into()))?;
    let needs = match opts.netns {
        Some(_) => crate::privilege::NETNS_NETFILTER,
        None => crate::privilege::NETFILTER,
    };
    crate::privilege::require("pipelab attach", needs).map_err(|e| match e {
        ModeError::Privilege(m) => AttachError::Privilege(m),
        other => AttachError::Run(other.into()),
    })?;
    // The stop signals: blocked before the host changes and before any
    // thread starts (every thread inherits the mask), read from a
    // descriptor; each ends the run in order.
    let signals = StopSignals::block()?;
    // Into the namespace before anything is created, and before any
    // thread starts: they all inherit it.
    let _ns_file = match &opts.netns {
        Some(n) => Some(enter(n)?),
        None => None,
    };
    let place = match &opts.netns {
        Some(n) => n.describe(),
        None => "this host's network namespace".to_string(),
    };
    if nix::net::if_::if_nametoindex(opts.dev.as_str()).is_err() {
        return Err(AttachError::NoDevice {
            dev: opts.dev.clone(),
            place,
        });
    }
    let seed = opts.runner.seed;
    let load = Arc::new(std::mem::replace(
        &mut opts.load,
        Box::new(|_| Err(String::new())),
    ));
    // Compiled in the namespace: `recv`/`xmit` names and `me` are its.
    let first = HostPlane::compile_with(&opts.config, seed, &mut |p: &str| (*load)(p))
        .map_err(AttachError::Config)?;
    let pid = std::process::id();
    let name = match &opts.name {
        Some(n) => n.clone(),
        None => crate::plane::default_name(&["attach", &pid.to_string()]),
    };
    let table = format!("pipelab_at_{pid}");
    // What dead pipelab processes left is undone first; the interface
    // belongs to one emulation at a time.
    let mut record = Ledger::new().begin("attach", &name)?;
    record.claim(&opts.dev)?;
    let reg = crate::plane::register_recorded(&mut record, &name, "attach")
        .map_err(|e| AttachError::Run(e.into()))?;
    let change = Change::AttachRules {
        table: table.clone(),
        dev: opts.dev.clone(),
        netns_path: opts.netns.as_ref().map(|n| n.path.clone()),
    };
    let host = HostOptions {
        queue_num: ATTACH_QUEUE + (pid % 20_000) as u16,
        queue_search: 64,
        runner: opts.runner,
        table: table.clone(),
        hooks,
        // Fail-closed rules never outlive this process.
        owned: true,
    };
    let recording = std::mem::take(&mut opts.recording);
    let plane = Arc::new(HostPlane::start_recorded(
        host,
        &[],
        record,
        change,
        recording,
    )?);
    plane
        .apply_compiled(first)
        .map_err(|e| AttachError::Run(e.into()))?;
    let queue = plane.queue_num();
    let control = crate::plane::serve(
        reg,
        Box::new(AttachPlane {
            plane: Arc::clone(&plane),
            load,
        }),
        opts.config.clone(),
    )
    .map_err(|e| AttachError::Run(e.into()))?;
    let inside = match &opts.netns {
        Some(n) => format!(" in {}", n.describe()),
        None => String::new(),
    };
    let rules = match plane.rules_form() {
        RulesForm::Owned => format!("nftables table inet {table}, owned by this process"),
        RulesForm::Nftables => format!("nftables table inet {table}"),
        RulesForm::Iptables => format!("iptables chains {table}_* of table mangle"),
    };
    eprintln!(
        "pipelab attach: {} of {}{inside} shaped (netfilter queue {queue}, {rules}); seed {seed}; change it with `pipelab --target {name} ...`; Ctrl-C restores it",
        directions(opts.ingress, opts.egress),
        opts.dev,
    );
    let start = std::time::Instant::now();
    loop {
        let limit = std::time::Duration::from_millis(200);
        let left = opts
            .duration
            .map(|d| std::time::Duration::from_nanos(d.as_nanos()).saturating_sub(start.elapsed()));
        if left.is_some_and(|l| l.is_zero()) || signals.wait(left.map_or(limit, |l| l.min(limit))) {
            break;
        }
    }
    let _ = control.close();
    // The table goes first, then what is held leaves at its time.
    let stats: HostStats = match Arc::try_unwrap(plane) {
        Ok(p) => p.stop_with_stats()?,
        Err(shared) => {
            let s = shared.stats();
            drop(shared);
            s
        }
    };
    drop(signals);
    let report = AttachReport {
        device: opts.dev.clone(),
        netns: opts.netns.as_ref().map(|n| n.path.clone()),
        ingress: opts.ingress,
        egress: opts.egress,
        queue,
        table,
        stats: stats.runner,
        lateness: stats.lateness,
        precision: stats.precision,
        port: stats.port,
        verdicts: stats.verdicts,
        rules: stats.rules,
        pipes: stats.pipes,
        queues: stats.queues,
        seed: stats.seed,
        timeseries: stats.timeseries,
        capture: stats.capture,
    };
    let json = serde_json::to_string_pretty(&report).unwrap_or_default();
    if opts.verbose {
        eprintln!("{json}");
    }
    if let Some(file) = opts.stats_file.take() {
        file.write(&json)?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netns_names_pids_and_paths() {
        assert_eq!(NetnsRef::parse("lab").path, PathBuf::from("/run/netns/lab"));
        assert_eq!(
            NetnsRef::parse("4242").path,
            PathBuf::from("/proc/4242/ns/net")
        );
        assert_eq!(
            NetnsRef::parse("/var/run/docker/netns/1a2b").path,
            PathBuf::from("/var/run/docker/netns/1a2b")
        );
        assert_eq!(
            NetnsRef::parse("./ns").path,
            PathBuf::from("./ns"),
            "a relative path is a path"
        );
    }

    #[test]
    fn pipe_words_make_pipe_1_for_egress_and_pipe_2_for_ingress() {
        let spec = |t: &str| pipelab_lang::parse_pipe_params(t).expect("valid");
        let both = attach_config(
            "veth-h0",
            Some(spec("delay 10ms")),
            Some(spec("delay 10ms")),
        )
        .expect("config");
        let text = both.to_script();
        assert!(
            text.contains("add 65000 pipe 1 ip from any to any out xmit veth-h0"),
            "{text}"
        );
        assert!(
            text.contains("add 65010 pipe 2 ip from any to any in recv veth-h0"),
            "{text}"
        );
        assert_eq!(both.pipes.len(), 2);
        let egress = attach_config("eth0", Some(spec("bw 1Mbit/s")), None).expect("config");
        assert_eq!(egress.pipes.keys().copied().collect::<Vec<_>>(), vec![1]);
        assert_eq!(egress.rules.len(), 1);
        let ingress = attach_config("eth0", None, Some(spec("delay 5ms"))).expect("config");
        assert_eq!(ingress.pipes.keys().copied().collect::<Vec<_>>(), vec![2]);
        assert!(ingress
            .to_script()
            .contains("pipe 2 ip from any to any in recv eth0"));
    }

    #[test]
    fn an_unknown_namespace_is_a_usage_error_naming_it() {
        let n = NetnsRef::parse("pipelab-no-such-ns");
        let e = enter(&n).unwrap_err();
        assert!(e.is_usage());
        let m = e.to_string();
        assert!(
            m.starts_with("error: --netns pipelab-no-such-ns: no such network namespace (/run/netns/pipelab-no-such-ns: "),
            "{m}"
        );
        // A file that is not a namespace.
        let e = enter(&NetnsRef::parse("/proc/self/status")).unwrap_err();
        assert!(
            matches!(e, AttachError::NotNamespace { .. }) || !e.is_usage(),
            "{e}"
        );
    }
}
