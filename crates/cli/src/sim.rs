//! `pipelab sim`: a configuration, or a topology, in virtual time against
//! synthetic traffic, on one or several workers.
//!
//! A topology is read, checked, distilled and loaded with cross traffic
//! exactly as `pipelab topo up` does (`topo::load`, `topo::distill`, the
//! topology command grammar's `cross` words, the VN plan of
//! `pipelab_modes::topo::plan`), then lowered here to the one emulation
//! spec (`pipelab_topo::lower`) with the report's pipe names:
//! `pipelab-sim` takes a spec and knows nothing of topologies. The
//! simulator cuts the pipes among the workers itself, weighted by the
//! traffic's packets along its routes (`pipelab_sim::partition`), not by
//! `topo assign`'s traffic-blind balance.
//!
//! Topologies are dual-stack, as live: VN `i` is host `i + 1` of
//! `--prefix` (default `10.0.0.0/8`) and of the IPv6 /64 `--prefix6`
//! (default `fd00::/64`, a fixed ULA /64: there is no host to take one
//! from in virtual time), numbered by the same plan as `topo up`. A
//! source between IPv6 addresses sends IPv6 packets (the capture shows
//! IPv6 headers), steered by destination address to the same route as
//! its IPv4 twin.

use crate::error::CliError;
use crate::topo::TopoError;
use crate::topo::{MetricArg, RoutesArg};
use crate::{config_dir, emit, file_loader, load_config, read, OutputArgs};
use clap::builder::RangedU64ValueParser;
use clap::Args;
use pipelab_engine::Packet;
use pipelab_io::capture::{Event, Record};
use pipelab_lang::{Config, TrafficSpec};
use pipelab_sim::trace::{TraceKind, Traced};
use pipelab_sim::{simulate_scenario_with, simulate_traced, traffic_end, Scenario, SimOptions};
use pipelab_topo::command::Resolved;
use pipelab_topo::cross::pipe_loads;
use pipelab_topo::Mode;
use std::path::{Path, PathBuf};

/// The most workers `--workers` takes.
const MAX_WORKERS: u64 = 256;

/// `pipelab sim` arguments.
#[derive(Args, Debug)]
pub struct SimArgs {
    /// The configuration file (one command per line, `#` comments). With
    /// --topology it is optional: pipes, queues and rules for the VNs'
    /// traffic, as `--config`.
    #[arg(required_unless_present_any = ["topology", "with_config"])]
    pub config: Option<PathBuf>,
    /// A topology to run (GML, GraphML or TOML, as `topo up` takes it): sources
    /// enter at the VN their `from` address belongs to and cross the
    /// pipes of the route to their `to` address.
    #[arg(long, value_name = "FILE")]
    pub topology: Option<PathBuf>,
    /// With --topology: hop-by-hop, end-to-end, last-mile, 'walk-in K',
    /// 'walk-out K'.
    #[arg(long, default_value = "hop-by-hop", requires = "topology")]
    pub distill: String,
    /// With --topology: what routes minimise.
    #[arg(long, value_enum, default_value = "delay", requires = "topology")]
    pub metric: MetricArg,
    /// With --topology: symmetric routes, or each direction on its own.
    #[arg(long, value_enum, default_value = "symmetric", requires = "topology")]
    pub routes: RoutesArg,
    /// With --topology: the VNs' addresses, in node order from the second
    /// address of the prefix (as `topo up`).
    #[arg(long, default_value = "10.0.0.0/8", requires = "topology")]
    pub prefix: String,
    /// With --topology: the VNs' IPv6 /64, numbered as --prefix (VN `i`
    /// is host `i + 1`: `fd00::1` for the first VN by default), as `topo
    /// up` numbers the /64 it takes from the host. A source whose `from`
    /// and `to` are IPv6 (`[fd00::1]:5000`) sends IPv6 packets along the
    /// same routes as the IPv4 ones.
    #[arg(
        long,
        value_name = "PREFIX",
        default_value = "fd00::/64",
        requires = "topology"
    )]
    pub prefix6: String,
    /// With --topology: a configuration of the language for the VNs'
    /// traffic (rules see a VN's packets as `out`, `recv VN`, `xmit
    /// DESTINATION-VN`), as `topo up --config`.
    #[arg(
        long = "config",
        short = 'c',
        value_name = "FILE",
        requires = "topology"
    )]
    pub with_config: Option<PathBuf>,
    /// With --topology: synthetic cross traffic (ModelNet §4.3), `SRC DST
    /// RATE` triples (VN names or ids), as `topo cross`. Repeatable.
    #[arg(long, value_name = "'SRC DST RATE ...'", requires = "topology")]
    pub cross: Vec<String>,
    /// A traffic source, e.g. 'cbr rate 1000pps size 1000B duration 10s'
    /// [start 1s] [from ADDR:PORT to ADDR:PORT] [proto udp|tcp] [name NAME].
    /// Patterns: cbr, poisson, onoff (with `on 1s off 2s`). IPv6 addresses
    /// in brackets (`from [fd00::1]:9 to [fd00::2]:9`) send IPv6 packets.
    /// Repeatable.
    #[arg(long = "traffic", short = 't', value_name = "SPEC")]
    pub traffic: Vec<String>,
    /// A file of traffic sources, one spec per line (`#` comments).
    #[arg(long = "traffic-file", value_name = "FILE")]
    pub traffic_file: Vec<PathBuf>,
    /// Worker threads, each running a partition of the pipes in step with
    /// the others (conservative synchronisation in virtual time). A
    /// topology's pipes are cut to balance the packets the traffic sends
    /// through them. The report is the same, byte for byte, for any
    /// number.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_WORKERS))]
    pub workers: usize,
    /// Add per-interval series to the JSON report: each pipe's capacity,
    /// arrivals, departures, backlog and drops, each flow's offered and
    /// delivered rate, delay and drops, in intervals of this length of
    /// virtual time (e.g. 100ms), and each flow's delay CDF (`pipelab
    /// plot` draws them).
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = interval_arg,
        allow_hyphen_values = true
    )]
    pub interval: Option<pipelab_engine::Duration>,
    /// With --interval: write every pipe's intervals as CSV to FILE, one
    /// row per pipe per interval (the columns of a live mode's --series).
    #[arg(long, value_name = "FILE", requires = "interval")]
    pub series: Option<PathBuf>,
    /// With --interval: write every flow's intervals as CSV to FILE, one
    /// row per flow per interval, the flow named as in the report (the
    /// columns of a live mode's --flow-series).
    #[arg(long, value_name = "FILE", requires = "interval")]
    pub flow_series: Option<PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs,
    /// `--pcap FILE`: the run as a capture in virtual time (from 0), one
    /// interface pair per port ("sim in", "sim out"; a topology's VNs),
    /// synthetic frames cut at 128 bytes; `--events FILE`: its events.
    /// The same, byte for byte, on every run and for any --workers.
    #[command(flatten)]
    pub capture: crate::capture::CaptureArgs,
}

/// `--interval`: a duration with its unit, as everywhere.
fn interval_arg(s: &str) -> Result<pipelab_engine::Duration, String> {
    match pipelab_lang::units::parse_duration(s) {
        Ok(d) if d.as_nanos() == 0 => Err("give a positive duration, e.g. 100ms".into()),
        Ok(d) => Ok(d),
        Err(e) => Err(e.to_string()),
    }
}

/// Snap length of a simulation's capture: the headers of a synthetic
/// frame and some of its (zero) payload; the wire length is kept.
const SIM_SNAPLEN: u32 = 128;

/// A configuration file read and applied, with the directory its files
/// are relative to.
fn config(path: &Path) -> Result<(Config, Option<PathBuf>), CliError> {
    let name = path.display().to_string();
    let text = read(path)?;
    Ok((load_config(&name, &text)?, config_dir(path)))
}

/// Why `pipelab sim --topology` cannot set up its run.
#[derive(Debug, thiserror::Error)]
pub enum SimSetupError {
    /// `--interval` with nowhere to write the series.
    #[error("error: --interval: nowhere to write the series: add --json (the report's timeseries), --series FILE or --flow-series FILE (CSV)")]
    IntervalNowhere,
    /// The `--series` file cannot be written.
    #[error("error: {0}")]
    Series(#[from] crate::series::SeriesError),
    /// CONFIG and `--config` both given.
    #[error("error: give the configuration once: as CONFIG or as --config")]
    ConfigTwice,
    /// Neither a configuration nor a topology.
    #[error("error: give a configuration file, or --topology FILE")]
    NoInput,
    /// `--prefix6` is no IPv6 /64.
    #[error("error: --prefix6: {0}")]
    Prefix6(String),
    /// The topology has no VNs to send from.
    #[error("error: {}: the topology has no client nodes (VNs)", .0.display())]
    NoVns(PathBuf),
    /// A `--cross` does not parse or names what the topology lacks.
    #[error("error: --cross #{index}: {message}")]
    Cross {
        /// Which `--cross`, from 1.
        index: usize,
        /// Why.
        message: String,
    },
    /// The distilled topology cannot be lowered to a spec.
    #[error("error: {}: {error}", file.display())]
    Lower {
        /// The topology file.
        file: PathBuf,
        /// Why.
        error: pipelab_topo::TopoError,
    },
    /// The configuration for the VNs' traffic cannot be lowered.
    #[error("error: {name}: {error}")]
    Config {
        /// The configuration file.
        name: String,
        /// Why.
        error: Box<pipelab_emu::LowerError>,
    },
}

/// The scenario of a topology: lowered with its cross traffic and
/// configuration, its pipes named (the simulator cuts them among the
/// workers by the traffic), its paths those of the pairs `traffic` and
/// the cross traffic use.
fn topology_scenario(
    args: &SimArgs,
    file: &Path,
    cfg: Option<(String, Config, Option<PathBuf>)>,
    traffic: &[TrafficSpec],
) -> Result<Scenario, CliError> {
    let topo = crate::topo::load(file)?;
    crate::topo::warn_disconnected(&topo, file);
    let mode: Mode = args.distill.parse().map_err(|error| TopoError::Mode {
        flag: "--distill",
        value: args.distill.clone(),
        error,
    })?;
    // Pipes now; routes below, for the pairs the traffic uses alone.
    let mut d = pipelab_topo::distill_unrouted(
        &topo,
        mode,
        args.metric.into(),
        args.routes.into(),
        &pipelab_topo::route::Faults::none(&topo),
    )
    .map_err(|error| TopoError::Topology {
        name: file.display().to_string(),
        error,
    })?;
    let prefix = pipelab_modes::topo::parse_prefix(&args.prefix).map_err(TopoError::Prefix)?;
    let net6 = parse_prefix6(&args.prefix6).map_err(SimSetupError::Prefix6)?;
    let vns = pipelab_modes::topo::plan("sim", &topo, prefix, Some(net6)).map_err(|source| {
        TopoError::Plan {
            file: file.to_path_buf(),
            source,
        }
    })?;
    let Some(first) = vns.first() else {
        return Err(SimSetupError::NoVns(file.to_path_buf()).into());
    };
    let mut demands = Vec::new();
    for (i, c) in args.cross.iter().enumerate() {
        let index = i + 1;
        let line = format!("cross {c}");
        let cmd = pipelab_topo::parse_command(&line).map_err(|e| SimSetupError::Cross {
            index,
            message: crate::caret(&line, &e),
        })?;
        match cmd.resolve(&topo) {
            Ok(Resolved::Cross(d)) => demands.extend(d),
            Ok(_) => {
                return Err(SimSetupError::Cross {
                    index,
                    message: "give SRC DST RATE triples".into(),
                }
                .into())
            }
            Err(e) => {
                return Err(SimSetupError::Cross {
                    index,
                    message: e.to_string(),
                }
                .into())
            }
        }
    }
    // The pairs the run sends between: its sources' (by address: VN `k`
    // is `first + k`) and its cross traffic's. One shortest-path tree
    // per source VN, not ModelNet's n² matrix.
    let vn_nodes = d.routes.vns().to_vec();
    let dest = pipelab_emu::Destinations::Range {
        base: first.addr,
        base6: first.addr6,
        count: vn_nodes.len() as u32,
    };
    let node = |a| dest.port(a).and_then(|k| vn_nodes.get(k as usize).copied());
    let mut pairs: Vec<(usize, usize)> = traffic
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let key = pipelab_sim::flow_key(t, i);
            Some((node(key.src)?, node(key.dst)?))
        })
        .collect();
    pairs.extend(demands.iter().map(|dm| (dm.src, dm.dst)));
    d.route_pairs(&topo, &pairs);
    let loads = pipe_loads(&d, &demands);
    let names: Vec<String> = vns.iter().map(|v| v.name.clone()).collect();
    let mut spec =
        pipelab_topo::lower(&d, &names, first.addr, first.addr6, &loads).map_err(|error| {
            SimSetupError::Lower {
                file: file.to_path_buf(),
                error,
            }
        })?;
    let mut pipe_text = pipelab_topo::lower::pipe_texts(&topo, &d, &loads);
    let mut queue_text = std::collections::BTreeMap::new();
    if let Some((name, cfg, base)) = cfg {
        let mut load = file_loader(base);
        let lowered =
            pipelab_emu::lower_config(&cfg, &mut load).map_err(|e| SimSetupError::Config {
                name,
                error: Box::new(e),
            })?;
        spec.merge_config(&lowered);
        pipe_text.extend(cfg.pipes.iter().map(|(n, p)| (*n, p.to_string())));
        queue_text.extend(
            cfg.queues
                .iter()
                .map(|(n, q)| (*n, (q.target.number(), q.to_string()))),
        );
    }
    Ok(Scenario {
        spec,
        pipe_text,
        queue_text,
        hint: None,
    })
}

/// `--prefix6`: an IPv6 /64 (`fd00::/64`), its network address (the
/// host bits cleared).
fn parse_prefix6(s: &str) -> Result<std::net::Ipv6Addr, String> {
    let (a, l) = s
        .split_once('/')
        .ok_or_else(|| format!("'{s}': expected an IPv6 /64, e.g. fd00::/64"))?;
    let addr: std::net::Ipv6Addr = a
        .parse()
        .map_err(|_| format!("'{s}': '{a}' is not an IPv6 address"))?;
    if l != "64" {
        return Err(format!(
            "'{s}': length '{l}' must be 64 (VNs are hosts of a /64, as in `topo up`)"
        ));
    }
    Ok(std::net::Ipv6Addr::from(
        u128::from(addr) & !((1u128 << 64) - 1),
    ))
}

/// The sources of `--traffic` (errors point at the column) and
/// `--traffic-file`, in that order.
fn traffic(args: &SimArgs) -> Result<Vec<TrafficSpec>, CliError> {
    let mut traffic = Vec::new();
    for (i, t) in args.traffic.iter().enumerate() {
        let spec = pipelab_lang::parse_traffic(t).map_err(|error| CliError::Traffic {
            index: i + 1,
            text: t.clone(),
            error: Box::new(error),
        })?;
        traffic.push(spec);
    }
    for f in &args.traffic_file {
        traffic.extend(crate::traffic_lines(&f.display().to_string(), &read(f)?)?);
    }
    Ok(traffic)
}

/// The capture's and event log's record of a simulation's event.
fn record(t: &Traced) -> Record {
    let (frame, size) = pipelab_sim::trace::synth_frame(&t.pkt, SIM_SNAPLEN as usize);
    Record {
        at_ns: t.at.as_nanos(),
        port: t.port,
        event: match t.kind {
            TraceKind::Arrive => Event::Arrive,
            TraceKind::Depart => Event::Depart,
            TraceKind::Drop(r) => Event::Drop(r.name()),
            TraceKind::Duplicate => Event::Duplicate,
        },
        corrupted: t.kind == TraceKind::Depart && t.pkt.flags & Packet::CORRUPT != 0,
        key: t.pkt.key,
        size,
        backlog_packets: t.backlog_packets,
        backlog_bytes: t.backlog_bytes,
        frame: if t.kind == TraceKind::Duplicate {
            Vec::new()
        } else {
            frame
        },
    }
}

/// Run `pipelab sim`: a configuration is read and parsed, then the
/// traffic, then the configuration is lowered (the order of checks of
/// `pipelab sim CONFIG` is as it always was); a topology is read after
/// the traffic.
pub fn run(args: SimArgs) -> Result<(), CliError> {
    // No file written may be another, or one the run reads.
    {
        use crate::outputs::Use::{Reads, Writes};
        let mut paths = vec![
            ("CONFIG", args.config.as_deref(), Reads),
            ("--config", args.with_config.as_deref(), Reads),
            ("--topology", args.topology.as_deref(), Reads),
            ("--series", args.series.as_deref(), Writes),
            ("--flow-series", args.flow_series.as_deref(), Writes),
        ];
        paths.extend(args.capture.named());
        for f in &args.traffic_file {
            paths.push(("--traffic-file", Some(f.as_path()), Reads));
        }
        crate::outputs::check(&paths)?;
    }
    if args.interval.is_some()
        && !args.out.json
        && args.series.is_none()
        && args.flow_series.is_none()
    {
        return Err(SimSetupError::IntervalNowhere.into());
    }
    // Opened now: a path that cannot be written is refused before the run.
    let series = args
        .series
        .as_deref()
        .map(crate::series::open_csv)
        .transpose()
        .map_err(SimSetupError::from)?;
    let flow_series = args
        .flow_series
        .as_deref()
        .map(|p| crate::series::open_file("flow-series", p))
        .transpose()
        .map_err(SimSetupError::from)?;
    let no_traffic = || CliError::Sim(pipelab_sim::SimError::NoTraffic);
    let (scenario, traffic) = match (&args.topology, &args.config, &args.with_config) {
        (_, Some(_), Some(_)) => return Err(SimSetupError::ConfigTwice.into()),
        (Some(file), c, w) => {
            let cfg = match c.as_ref().or(w.as_ref()) {
                Some(p) => {
                    let (cfg, base) = config(p)?;
                    Some((p.display().to_string(), cfg, base))
                }
                None => None,
            };
            let traffic = traffic(&args)?;
            if traffic.is_empty() {
                return Err(no_traffic());
            }
            (topology_scenario(&args, file, cfg, &traffic)?, traffic)
        }
        (None, Some(path), None) => {
            let (cfg, base) = config(path)?;
            let traffic = traffic(&args)?;
            if traffic.is_empty() {
                return Err(no_traffic());
            }
            let mut load = file_loader(base);
            let sc = Scenario::from_config(&cfg, &mut load).map_err(CliError::Sim)?;
            (sc, traffic)
        }
        (None, _, _) => return Err(SimSetupError::NoInput.into()),
    };
    let opts = SimOptions {
        seed: args.out.seed,
        workers: args.workers,
        interval: args.interval,
        ..SimOptions::default()
    };
    // Virtual-time progress, in ms of the traffic's length (the tail
    // after the last source stops shows as 100 %).
    let end_ms = traffic_end(&traffic).as_nanos() / 1_000_000;
    let bar = crate::progress::Progress::new(
        end_ms.max(1),
        "sim: virtual time {msg} [{bar:30}] {percent}% ({elapsed})",
    );
    let total = format_s(end_ms);
    let mut progress = |t: pipelab_engine::Instant| {
        if bar.is_shown() {
            let ms = t.as_nanos() / 1_000_000;
            bar.set(ms);
            bar.message(format!("{} / {total}", format_s(ms.min(end_ms))));
        }
    };
    let (report, info) = match args.capture.files()? {
        None => simulate_scenario_with(&scenario, &traffic, &opts, &mut progress)
            .map_err(CliError::Sim)?,
        Some(files) => {
            let names: Vec<String> = scenario.spec.ports.iter().map(|p| p.name.clone()).collect();
            let mut sink = files
                .sink(&names, SIM_SNAPLEN, 0)
                .map_err(CliError::Recording)?;
            let mut failed = None;
            let mut write = |t: &Traced| {
                if failed.is_some() {
                    return;
                }
                let main = record(t);
                // What the live runner logs apart: a CE mark and a
                // corruption, before the departure.
                let depart = t.kind == TraceKind::Depart;
                let marks = [
                    (depart && t.pkt.flags & Packet::CE != 0, Event::Mark),
                    (depart && t.pkt.flags & Packet::CORRUPT != 0, Event::Corrupt),
                ];
                for (_, event) in marks.into_iter().filter(|m| m.0) {
                    let r = Record {
                        event,
                        frame: Vec::new(),
                        corrupted: false,
                        ..main.clone()
                    };
                    if let Err(e) = sink.write(&r) {
                        failed = Some(e);
                        return;
                    }
                }
                if let Err(e) = sink.write(&main) {
                    failed = Some(e);
                }
            };
            let r = simulate_traced(&scenario, &traffic, &opts, &mut progress, &mut write)
                .map_err(CliError::Sim)?;
            if let Some(e) = failed {
                return Err(CliError::Recording(e));
            }
            let summary = sink.finish().map_err(CliError::Recording)?;
            for w in summary.warnings() {
                eprintln!("pipelab sim: warning: {w}");
            }
            r
        }
    };
    drop(bar);
    if let Some(note) = &info.note {
        eprintln!("note: {note}");
    }
    use pipelab_emu::series::{FlowInterval, PipeInterval};
    let pipe_rows = report.pipes.iter().flat_map(|p| {
        let rows = p.timeseries.iter().flatten();
        rows.map(move |i| i.csv_row(p.id, ""))
    });
    let flow_rows = report.flows.iter().flat_map(|f| {
        let rows = f.timeseries.iter().flatten();
        rows.map(move |i| i.csv_row(&f.name))
    });
    write_csv("series", series, PipeInterval::CSV_HEADER, pipe_rows)?;
    write_csv(
        "flow-series",
        flow_series,
        FlowInterval::CSV_HEADER,
        flow_rows,
    )?;
    let text = if args.out.json {
        report.to_json() + "\n"
    } else {
        report.to_table()
    };
    emit(&text)
}

/// A series file of `--FLAG` (when given): `header`, then `rows` (the
/// intervals' [`pipelab_emu::series::PipeInterval::csv_row`] or
/// [`pipelab_emu::series::FlowInterval::csv_row`]).
fn write_csv(
    flag: &'static str,
    file: Option<(PathBuf, std::fs::File)>,
    header: &str,
    rows: impl Iterator<Item = String>,
) -> Result<(), SimSetupError> {
    use std::io::Write;
    let Some((path, file)) = file else {
        return Ok(());
    };
    let write = || {
        let mut w = std::io::BufWriter::new(file);
        writeln!(w, "{header}")?;
        for row in rows {
            writeln!(w, "{row}")?;
        }
        w.flush()
    };
    write().map_err(|source| crate::series::SeriesError::File { flag, path, source }.into())
}

/// Milliseconds as seconds, `12.345 s`.
fn format_s(ms: u64) -> String {
    format!("{}.{:03} s", ms / 1000, ms % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        sim: SimArgs,
    }

    /// A pass proves that `sim --topology` of a ring of 100 routers and
    /// 2000 VNs routes the pairs its traffic and cross traffic use and no
    /// other: 4 sources (three of them between one pair, one the other
    /// way round) and one cross demand hold 3 symmetric pairs, 6 ordered
    /// pairs, and a fifth source's VN to itself (no path, as before),
    /// where ModelNet's matrix holds 2000² = 4,000,000 (and its
    /// tables 24 MB before a hop); that the run delivers every flow; and
    /// that traffic between pairs the scenario was not built for is
    /// refused, naming the flow, not dropped as unrouted.
    #[test]
    fn a_large_topology_holds_only_the_paths_its_traffic_uses() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("ring.gml");
        let t = pipelab_topo::gen::ring(100, 20, &pipelab_topo::model::RoleAttrs::default())
            .expect("ring");
        std::fs::write(&file, pipelab_topo::gml::to_gml(&t)).expect("write");
        let flows = [
            "cbr rate 100pps size 1000B duration 100ms from 10.0.0.1:5000 to 10.0.3.233:9",
            "cbr rate 100pps size 1000B duration 100ms from 10.0.3.233:5001 to 10.0.0.1:9",
            "poisson rate 100pps size 500B duration 100ms from 10.0.0.1:5002 to 10.0.3.233:9",
            "cbr rate 100pps size 1200B duration 100ms from 10.0.7.200:5000 to 10.0.0.50:9",
            "cbr rate 100pps size 100B duration 100ms from 10.0.0.1:6000 to 10.0.0.1:9",
        ];
        let mut argv = vec!["sim", "--topology", file.to_str().expect("utf-8")];
        for f in &flows {
            argv.extend(["--traffic", f]);
        }
        argv.extend(["--cross", "vn10 vn1500 2Mbit/s"]);
        let args = Cmd::try_parse_from(argv).expect("arguments").sim;
        let traffic = traffic(&args).expect("traffic");
        let sc = topology_scenario(&args, &file, None, &traffic).expect("scenario");
        let paths = sc.spec.paths.as_ref().expect("paths");
        assert_eq!(paths.n, 2000);
        assert!(paths.is_partial());
        assert_eq!(
            paths.held_count(),
            7,
            "3 pairs, both ways, and VN 0 to itself"
        );
        assert_eq!(paths.iter().count(), 6, "VN 0 has no path to itself");
        // VN 0 to VN 1000 (0.0.3.233 - 1): access, 50 ring links, access.
        assert_eq!(paths.get(0, 1000).map(<[u32]>::len), Some(52));
        assert!(paths.holds(10, 1500) && paths.holds(1500, 10));
        assert!(!paths.holds(0, 1));
        assert!(
            paths.table_bytes() < 8 * 1024,
            "{} bytes of path tables",
            paths.table_bytes()
        );
        assert_eq!(sc.spec.pipes.len(), 4200, "every pipe of the ring");
        let opts = SimOptions::default();
        let (report, _) = pipelab_sim::simulate_scenario(&sc, &traffic, &opts).expect("simulates");
        assert_eq!(report.flows.len(), 5);
        for f in &report.flows[..4] {
            assert!(f.received > 0 && f.received == f.sent, "{f:?}");
        }
        // To itself: run and dropped for want of a route, as with the
        // whole matrix.
        let own = &report.flows[4];
        assert!(own.sent > 0 && own.received == 0, "{own:?}");
        // The scenario with traffic of another pair: refused, by name.
        let other = pipelab_lang::parse_traffic(
            "cbr rate 100pps size 1000B duration 100ms from 10.0.0.1:5000 to 10.0.0.2:9",
        )
        .expect("traffic");
        let e = pipelab_sim::simulate_scenario(&sc, &[other], &opts).expect_err("unrouted");
        assert!(
            e.to_string()
                .contains("no path was computed from 10.0.0.1 to 10.0.0.2"),
            "{e}"
        );
    }

    /// A pass proves `sim --topology` numbers the VNs' IPv6 addresses as
    /// `topo up` does, by the same plan: with the /64 a live topology
    /// named `ring` would take from a host's ULA /48 as `--prefix6`, VN
    /// `i` is host `i + 1` of it (`NET6::1`, `NET6::2`, ...; the default
    /// /64 gives `fd00::1` ...), and the scenario steers each VN's IPv6
    /// address, like its IPv4 one, to its port.
    #[test]
    fn vns_have_the_ipv6_addresses_topo_up_gives_them() {
        use pipelab_modes::ledger::{subnet6_addr, topo_subnet6_index, ula_range};
        use std::net::{IpAddr, Ipv6Addr};
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("ring.gml");
        let t = pipelab_topo::gen::ring(3, 2, &pipelab_topo::model::RoleAttrs::default())
            .expect("ring");
        std::fs::write(&file, pipelab_topo::gml::to_gml(&t)).expect("write");
        let live = subnet6_addr(ula_range("a host"), topo_subnet6_index("ring"));
        let prefix6 = format!("{live}/64");
        let path = file.to_str().expect("utf-8");
        let argv = [
            "sim",
            "--topology",
            path,
            "--prefix6",
            &prefix6,
            "--traffic",
            "cbr rate 10pps size 100B duration 1s from 10.0.0.1:9 to 10.0.0.2:9",
        ];
        let args = Cmd::try_parse_from(argv).expect("arguments").sim;
        let net6 = parse_prefix6(&args.prefix6).expect("prefix6");
        assert_eq!(net6, live);
        let prefix = pipelab_modes::topo::parse_prefix(&args.prefix).expect("prefix");
        let vns = pipelab_modes::topo::plan("ring", &t, prefix, Some(net6)).expect("plan");
        assert_eq!(vns.len(), 6);
        for (i, v) in vns.iter().enumerate() {
            assert_eq!(
                v.addr6,
                Some(Ipv6Addr::from(u128::from(live) + 1 + i as u128))
            );
        }
        let traffic = traffic(&args).expect("traffic");
        let sc = topology_scenario(&args, &file, None, &traffic).expect("scenario");
        let dest = &sc.spec.paths.as_ref().expect("paths").dest;
        for (i, v) in vns.iter().enumerate() {
            let a6 = v.addr6.expect("dual-stack");
            assert_eq!(dest.port(IpAddr::V6(a6)), Some(i as u16), "{a6}");
            assert_eq!(dest.port(IpAddr::V4(v.addr)), Some(i as u16));
        }
        let past = Ipv6Addr::from(u128::from(live) + 7);
        assert_eq!(dest.port(IpAddr::V6(past)), None);
        // The default /64.
        let def = Cmd::try_parse_from([
            "sim",
            "--topology",
            path,
            "-t",
            "cbr rate 1pps size 100B duration 1s",
        ])
        .expect("arguments")
        .sim;
        assert_eq!(def.prefix6, "fd00::/64");
        assert_eq!(
            parse_prefix6("fd00::5/64"),
            Ok("fd00::".parse::<Ipv6Addr>().expect("address"))
        );
    }
}
