//! `pipelab bridge A B -f CONFIG`: a Dummynet bridge in user space between
//! two interfaces (dummynet-revisited Fig. 1: inserted without changing
//! anything on either side).
//!
//! Every frame that arrives on one port is classified by the rules of the
//! configuration (any ethertype: non-IP frames match rules that need no IP
//! field) and sent through the chosen pipe or flow queue, then out of the
//! other port. The configuration is lowered to the one emulation spec
//! ([`bridge_spec`]) and run by the same [`pipelab_emu::Emulation`] as `pipelab sim`:
//! schedulers, flow queues, masks, queue management, tables and `one_pass
//! 0` work on live frames as they do in virtual time.
//! Rules see the frame as `in`, received on its port (`recv`) and to be
//! transmitted on the other (`xmit`); `via` matches either. The link charges the IP packet's length
//! (Dummynet's L3 accounting), or the frame less its Ethernet header for
//! non-IP frames. An AF_PACKET port opened with offloads (`--offload on`,
//! the default) reads and writes virtio-net headers: GRO stays on, and
//! its super-frames (and TSO super-frames a veth peer hands over) are cut
//! into their segments wherever anything but a fixed delay acts on them
//! ([`pipelab_io::gso`]), so pipes account per segment. On any other port
//! (AF_XDP, which carries no GSO metadata, or `--offload off`) GRO is
//! turned off for the run (the kernel would otherwise merge segments into
//! super-frames the port cannot describe) and restored on exit, also on
//! Ctrl-C; it is written in the host ledger ([`crate::ledger`]) first, so
//! after a `kill -9` the next pipelab command (or `pipelab cleanup`)
//! turns it back on. The ports are claimed there too: a second emulation
//! on either is refused, naming the bridge that has it.
//!
//! Backends ([`Backend`]): AF_XDP where it can be set up (an XDP program
//! redirecting every frame to an AF_XDP socket, native XDP where the driver
//! allows, else generic), else AF_PACKET with one log line saying why; or
//! either one forced. Each port chooses on its own.

use crate::ledger::{Change, Ledger, Record};
use crate::live::{LiveRunner, SendPort};
use crate::report::QueueCounters;
use pipelab_classify::Direction;
use pipelab_emu::{lower_config, Compiled, LowerError, Spec};
use pipelab_engine::Duration;
use pipelab_io::backends::af_packet::AfPacket;
use pipelab_io::backends::af_xdp::AfXdp;
use pipelab_io::backends::ethtool::{self, Offload};
use pipelab_io::runner::{Lateness, RunnerOptions, RunnerStats};
use pipelab_io::signals::StopSignals;
use pipelab_lang::Config;
use serde::Serialize;
use std::io;

/// The spec of a bridge between interfaces `a` and `b` running `config`:
/// port 0 is `a`, port 1 is `b`, each leaving by the other; rules see
/// every frame as `in`, received on its port (`recv`) and to be
/// transmitted on the other (`xmit`); interface names resolve to the
/// ports; frames are seen at layer 2 (`layer2` rules match, as at ipfw's
/// bridge pass). Files named by pipes are read with `load`.
pub fn bridge_spec(
    config: &Config,
    a: &str,
    b: &str,
    load: pipelab_emu::Loader<'_>,
) -> Result<Spec, LowerError> {
    let mut spec = lower_config(config, load)?;
    spec.ports = Spec::two_ports((a, Some(Direction::In)), (b, Some(Direction::In)));
    spec.env.ifaces.insert(a.to_string(), 0);
    spec.env.ifaces.insert(b.to_string(), 1);
    spec.env.layer2 = true;
    Ok(spec)
}

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
    /// The emulation to run ([`bridge_spec`], compiled with the runner's
    /// seed).
    pub compiled: Compiled,
    /// The configuration it was lowered from (what `pipelab --target`
    /// changes), and the loader of the files its pipes name.
    pub config: Config,
    /// Reads the files the configuration's pipes name.
    pub load: pipelab_emu::FileLoader,
    /// The emulation's name for `pipelab --target` (default
    /// `bridge-A-B`).
    pub name: Option<String>,
    /// Runner settings.
    pub runner: RunnerOptions,
    /// Stop after this long (default: at a stop signal).
    pub duration: Option<Duration>,
    /// Write the final report as JSON to this file (opened, so checked,
    /// before the run).
    pub stats_file: Option<crate::report::StatsFile>,
    /// Print the final report on stderr.
    pub verbose: bool,
    /// What to do when a port's interface is deleted.
    pub port_loss: PortLoss,
    /// AF_PACKET ports with virtio-net headers (GSO super-frames, GRO left
    /// on); else MTU-sized frames and GRO off.
    pub offload: bool,
    /// Workers (`--workers`, `--cpus`): one per direction by default,
    /// as the CPUs allow (see [`crate::workers`]).
    pub workers: crate::workers::WorkerOptions,
    /// A capture and an event log to write (`--pcap`, `--events`),
    /// opened before the run.
    pub capture: Option<pipelab_io::capture::Files>,
    /// Per-interval series of every pipe (`--interval`, `--series`).
    pub series: Option<crate::series::SeriesOptions>,
    /// Where the frames of pipes marked `spill` go on disk
    /// (`--spill-dir`: one directory, or two), each under a directory of
    /// the run's own (see [`crate::spill`]).
    pub spill: Vec<std::path::PathBuf>,
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
    /// Seconds of the run whose departures were late (p99 beyond the
    /// watcher's threshold), and why (see [`crate::precision`]).
    pub precision: crate::precision::Precision,
    /// Per-port counters.
    pub ports: Vec<(String, pipelab_io::backends::PortStats)>,
    /// Per-port backend in use: "af_packet", "af_xdp native" or
    /// "af_xdp generic".
    pub backends: Vec<(String, String)>,
    /// The seed of every random decision.
    pub seed: u64,
    /// Per-rule counters: (number, packets, bytes).
    pub rules: Vec<(u32, u64, u64)>,
    /// Per flow queue (`queue N`) counters, in number order.
    pub queues: Vec<QueueCounters>,
    /// Each worker's figures (accounting with hand-offs, lateness).
    pub workers: Vec<crate::workers::WorkerFigures>,
    /// What `--pcap` and `--events` wrote (packets, events, records
    /// lost because the writer fell behind: `capture_lost`).
    pub capture: Option<pipelab_io::capture::Summary>,
    /// Per pipe counters summed over the workers, in number order.
    pub pipes: Vec<crate::report::PipeCounters>,
    /// The most resident memory the process had (its `VmHWM`), bytes.
    pub rss_peak_bytes: u64,
    /// With `--interval`: what each pipe did in each interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<crate::series::SeriesReport>,
}

/// Turn GRO off on `port` if it is on, written down in `record` first
/// (restored when the record is dropped, or after a crash by the next
/// pipelab command).
fn gro_off(record: &mut Record, port: &str) -> io::Result<()> {
    if ethtool::get(port, Offload::Gro).unwrap_or(false) {
        record.record(Change::GroOff {
            ifname: port.to_string(),
        })?;
        let _ = ethtool::set(port, Offload::Gro, false);
    }
    Ok(())
}

/// An AF_XDP port and a name for its backend.
fn xdp(x: AfXdp) -> (SendPort, String) {
    let mut kind = match x.mode() {
        pipelab_io::backends::af_xdp::XdpMode::Native => "af_xdp native",
        pipelab_io::backends::af_xdp::XdpMode::Generic => "af_xdp generic",
    }
    .to_string();
    if x.shares_umem() {
        kind.push_str(", one UMEM");
    }
    (Box::new(x) as SendPort, kind)
}

/// Both ports with AF_XDP sharing one UMEM, for a single worker: a
/// frame leaves by one port from the chunk the other received it in
/// ([`AfXdp::open_pair`]). `None` (saying why with `verbose`) where the
/// backend is AF_PACKET, or the pair cannot be opened: the ports are
/// then opened apart.
fn open_xdp_pair(
    names: &[String; 2],
    backend: Backend,
    verbose: bool,
) -> Option<Vec<(SendPort, String)>> {
    if backend == Backend::AfPacket {
        return None;
    }
    match AfXdp::open_pair(&names[0], &names[1]) {
        Ok((a, b)) => Some(vec![xdp(a), xdp(b)]),
        Err(e) => {
            if verbose {
                eprintln!(
                    "pipelab: one UMEM for {} and {}: {e}; opening them apart",
                    names[0], names[1]
                );
            }
            None
        }
    }
}

/// Open one port with `backend` (AF_PACKET with virtio-net headers if
/// `offload`): the port and a name for its backend.
fn open_port(name: &str, backend: Backend, offload: bool) -> io::Result<(SendPort, String)> {
    let packet = || -> io::Result<(SendPort, String)> {
        let (p, kind) = if offload {
            (AfPacket::open_offloaded(name), "af_packet vnet")
        } else {
            (AfPacket::open(name), "af_packet")
        };
        let p = p.map_err(|e| io::Error::new(e.kind(), format!("{name}: {e}")))?;
        Ok((Box::new(p), kind.to_string()))
    };
    // A missing interface is the error to report, whatever the backend.
    nix::net::if_::if_nametoindex(name).map_err(|e| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("{name}: no such interface ({e})"),
        )
    })?;
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

/// A transmit handle on interface `name` for a worker that does not
/// receive from it: an AF_PACKET socket with a transmit ring of its own,
/// whatever the receiving port's backend (see [`crate::workers`]), with
/// virtio-net headers if the receiving port takes them (`vnet`), so that
/// every worker sends super-frames kept whole as that port would.
fn tx_handle(name: &str, vnet: bool) -> io::Result<SendPort> {
    AfPacket::open_tx(name, vnet)
        .map(|p| Box::new(p) as SendPort)
        .map_err(|e| io::Error::new(e.kind(), format!("{name}: transmit handle: {e}")))
}

/// Run the bridge until a stop signal ([`pipelab_io::signals::STOP`]) or `duration`.
pub fn run_bridge(mut opts: BridgeOptions) -> io::Result<BridgeReport> {
    if opts.ports[0] == opts.ports[1] {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the two ports must differ",
        ));
    }
    crate::privilege::require("the bridge", crate::privilege::INTERFACES)?;
    // The stop signals: blocked before the host changes and before any
    // thread starts (every thread inherits the mask), read from a
    // descriptor; each ends the run in order (GRO back on).
    let signals = StopSignals::block()?;
    // The name is taken first (a second emulation of that name, or a
    // second bridge on these ports, is refused now), before any thread.
    let name = match &opts.name {
        Some(n) => n.clone(),
        None => crate::plane::default_name(&["bridge", &opts.ports[0], &opts.ports[1]]),
    };
    // What dead pipelab processes left is undone first (GRO a killed
    // bridge left off comes back on); an interface belongs to one
    // emulation at a time.
    let mut record = Ledger::new().begin("bridge", &name)?;
    for p in &opts.ports {
        record.claim(p)?;
    }
    let reg = crate::plane::register_recorded(&mut record, &name, "bridge")?;
    let mut ports: Vec<SendPort> = Vec::new();
    let mut backends = Vec::new();
    // One worker per direction (as the CPUs allow); each transmits on
    // the port the other receives from through a socket of its own. One
    // worker sends by both ports: with AF_XDP they share a UMEM.
    let (k, note) = opts.workers.resolve(2, "a bridge has two directions");
    if let Some(note) = note {
        eprintln!("note: {note}");
    }
    // Frames kept on disk go under directories of the run's own, in the
    // ledger before anything is made in them.
    let spill_dirs = crate::spill::prepare(&mut record, &opts.spill, opts.compiled.spec())?;
    let worker_cap = opts.runner.mem_cap / u64::from(k.max(1));
    for n in crate::spill::notes(
        opts.compiled.spec(),
        worker_cap,
        &spill_dirs,
        "pipelab bridge",
    ) {
        eprintln!("{n}");
    }
    let mut pair = if k == 1 {
        open_xdp_pair(&opts.ports, opts.backend, opts.verbose)
    } else {
        None
    }
    .map(Vec::into_iter);
    for name in &opts.ports {
        let (port, kind) = match pair.as_mut().and_then(Iterator::next) {
            Some(p) => p,
            None => open_port(name, opts.backend, opts.offload)?,
        };
        if opts.verbose {
            eprintln!("pipelab: {name}: {kind}");
        }
        // GRO stays on where the port takes super-frames.
        if !port.offloads() {
            gro_off(&mut record, name)?;
        }
        ports.push(port);
        backends.push((name.clone(), kind));
    }
    eprintln!(
        "pipelab bridge: {} <-> {} ({}); seed {}; change it with `pipelab --target {name} ...`",
        opts.ports[0],
        opts.ports[1],
        backends
            .iter()
            .map(|(_, k)| k.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        opts.runner.seed
    );
    let plan = crate::workers::direction_plan(2, k, &opts.workers);
    let rx_worker = crate::workers::by_port(2, k);
    let vnet: Vec<bool> = ports.iter().map(|p| p.offloads()).collect();
    let ports = crate::workers::spread(ports, &rx_worker, k, |i| {
        tx_handle(&opts.ports[i], vnet.get(i).copied().unwrap_or(false))
    })?;
    let (recorder, tap) = crate::capture::start(opts.capture.take(), opts.compiled.spec())?;
    let live = std::sync::Arc::new(LiveRunner::spawn_workers(
        "pipelab-bridge",
        opts.compiled,
        ports,
        plan,
        opts.runner,
        tap,
    )?);
    live.set_spill(spill_dirs).map_err(io::Error::other)?;
    let sampler = crate::series::start(&live, opts.series.take())?;
    let (a, b) = (opts.ports[0].clone(), opts.ports[1].clone());
    let load = std::mem::replace(&mut opts.load, Box::new(|_| Err(String::new())));
    let lower: crate::plane::Lower =
        Box::new(move |cfg: &Config| Ok(bridge_spec(cfg, &a, &b, &mut &*load)?));
    let plane = crate::plane::ModePlane::new("bridge", live.clone(), lower, opts.runner.seed);
    let control =
        crate::plane::serve(reg, Box::new(plane), opts.config.clone()).map_err(io::Error::other)?;
    let start = std::time::Instant::now();
    // A port whose interface is deleted is marked lost by the runner:
    // frames due on it are counted as `dropped_tx`. With `PortLoss::Wait`
    // the bridge looks for the interface every 10 ms and opens a new port
    // on it once it exists and is up; with `PortLoss::Exit` the run ends
    // (the report is still written) with an error naming the port.
    let mut announced = [false; 2];
    let mut failure = None;
    let mut lost: Vec<(usize, String)> = Vec::new();
    loop {
        let limit = std::time::Duration::from_millis(if lost.is_empty() { 100 } else { 10 });
        let left = opts
            .duration
            .map(|d| std::time::Duration::from_nanos(d.as_nanos()).saturating_sub(start.elapsed()));
        if left.is_some_and(|l| l.is_zero()) || signals.wait(left.map_or(limit, |l| l.min(limit))) {
            break;
        }
        lost = match live.with_each(|r| {
            r.lost_ports()
                .map(|(i, why)| (i, why.to_string()))
                .collect::<Vec<_>>()
        }) {
            Ok(l) => l.into_iter().flatten().collect(),
            // The runner ended: its error is the run's.
            Err(_) => break,
        };
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
            if !pipelab_io::backends::interface_is_up(name) {
                continue;
            }
            if let Ok((port, kind)) = open_port(name, opts.backend, opts.offload) {
                let vnet = port.offloads();
                // A new interface of that name: its own GRO setting.
                if !vnet {
                    if let Err(e) = gro_off(&mut record, name) {
                        eprintln!("pipelab: {name}: GRO stays on: {e}");
                    }
                }
                let i = *i;
                // The worker receiving it gets the port, the others a
                // new transmit handle each.
                let owner = rx_worker.get(i).copied().unwrap_or(0) as usize;
                let _ = live.with_on(owner, move |r| r.replace_port(i, port));
                for w in (0..k as usize).filter(|&w| w != owner) {
                    if let Ok(h) = tx_handle(name, vnet) {
                        let _ = live.with_on(w, move |r| r.replace_port(i, h));
                    }
                }
                announced[i] = false;
                if let Some(b) = backends.get_mut(i) {
                    b.1 = kind.clone();
                }
                eprintln!("pipelab: {name} is back ({kind}): forwarding");
            }
        }
        if failure.is_some() {
            break;
        }
    }
    let _ = control.close();
    let seed = opts.runner.seed;
    let drain = failure.is_none();
    // Stopped before the last figures, which close the series.
    let series = crate::series::stop(sampler);
    let last = (|| {
        // After a failure the run ends now; otherwise packets in flight
        // get a second to reach the far side.
        if drain {
            live.drain(Duration::from_secs(1))?;
        }
        let probe = series
            .as_ref()
            .ok()
            .and_then(|s| s.as_ref().map(|s| s.probe()));
        let (t, samples) = crate::workers::live_totals_and(&live, probe)?;
        // A port's counters are its receiving worker's and every
        // transmit handle's.
        let mut ports: Vec<(String, pipelab_io::backends::PortStats)> = Vec::new();
        for per in live.with_each(|r| r.port_stats())? {
            for (i, (n, st)) in per.into_iter().enumerate() {
                match ports.get_mut(i) {
                    Some(p) => p.1 += st,
                    None => ports.push((n, st)),
                }
            }
        }
        let report = BridgeReport {
            stats: t.stats,
            lateness: t.lateness,
            precision: t.precision,
            ports,
            backends,
            seed,
            rules: t.rules,
            queues: t.queues,
            workers: t.workers,
            capture: None,
            pipes: t.pipes,
            rss_peak_bytes: crate::report::peak_rss_bytes(),
            timeseries: None,
        };
        Ok::<_, crate::error::ModeError>((Ok::<(), io::Error>(()), report, samples))
    })();
    let stopped = live.stop();
    drop(signals);
    // The runners are gone: every record they sent is with the writer.
    let capture = crate::capture::finish(recorder, "pipelab bridge");
    let report = match last {
        Ok((drained, report, samples)) => {
            if failure.is_none() {
                failure = drained.err();
            }
            let series =
                series.and_then(|s| s.map(|s| s.finish(samples, "pipelab bridge")).transpose());
            match series {
                Ok(timeseries) => BridgeReport {
                    timeseries,
                    ..report
                },
                Err(e) => {
                    failure.get_or_insert(e);
                    report
                }
            }
        }
        // The runner's thread ended early: its error says why.
        Err(e) => return Err(stopped.err().unwrap_or_else(|| io::Error::other(e))),
    };
    if failure.is_none() {
        failure = stopped.err();
    }
    let report = match capture {
        Ok(capture) => BridgeReport { capture, ..report },
        Err(e) => {
            failure.get_or_insert(e);
            report
        }
    };
    let json = serde_json::to_string_pretty(&report).unwrap_or_default();
    if opts.verbose {
        eprintln!("{json}");
    }
    if let Some(file) = opts.stats_file.take() {
        file.write(&json)?;
    }
    drop(record);
    match failure {
        Some(e) => Err(e),
        None => Ok(report),
    }
}
