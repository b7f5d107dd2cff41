//! `pipelab topo`: topologies (ModelNet's create, distill, assign, bind
//! and run phases).

mod assign;
mod generate;

use clap::{Subcommand, ValueEnum};
use pipelab_io::runner::RunnerOptions;
use pipelab_lang::files::read_named_file;
use pipelab_modes::topo as live;
use pipelab_topo::distill::{distill_with_routes, report, Mode};
use pipelab_topo::model::{Node, Role};
use pipelab_topo::route::Faults;
use pipelab_topo::script::{parse_script, Action, Step};
use pipelab_topo::{parse_command, Distilled, Metric, Routes, Topology};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The name used when `--name` is not given.
const DEFAULT_NAME: &str = "main";

/// Why a `pipelab topo` command failed.
#[derive(Debug, thiserror::Error)]
pub enum TopoError {
    /// `--pcap`, `--events` or `--events-max` cannot be used.
    #[error(transparent)]
    Capture(#[from] crate::capture::CaptureError),
    /// `--interval` or `--series` cannot be used.
    #[error("error: {0}")]
    Series(#[from] crate::series::SeriesError),
    /// Two paths name one file, one of them written.
    #[error(transparent)]
    SameFile(#[from] crate::outputs::SameFile),
    /// A topology or experiment file cannot be read.
    #[error("cannot read {0}")]
    Read(pipelab_lang::files::FileError),
    /// A GML topology does not parse.
    #[error("{name}: {error}")]
    Gml {
        /// The file.
        name: String,
        /// Why.
        error: Box<pipelab_topo::GmlError>,
    },
    /// A topology is refused (TOML that does not parse, a topology that
    /// does not validate or distil).
    #[error("{name}: {error}")]
    Topology {
        /// The file.
        name: String,
        /// Why.
        error: pipelab_topo::TopoError,
    },
    /// A distillation mode does not parse.
    #[error("{flag} '{value}': {error}")]
    Mode {
        /// `--mode` or `--distill`.
        flag: &'static str,
        /// The value given.
        value: String,
        /// Why.
        error: pipelab_topo::TopoError,
    },
    /// `--config` cannot be used.
    #[error(transparent)]
    Config(#[from] crate::error::ConfigFileError),
    /// `--prefix` is refused (the mode's message).
    #[error("--prefix: {0}")]
    Prefix(String),
    /// `--cpus` is refused (the message names the flag and the value).
    #[error("{0}")]
    Cpus(String),
    /// The VNs cannot be laid out in the prefix.
    #[error("{}: {source}", file.display())]
    Plan {
        /// The topology file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The topology is up already.
    #[error("topology '{name}' is already up (pid {pid})")]
    AlreadyUp {
        /// The topology.
        name: String,
        /// Its emulator.
        pid: u32,
    },
    /// A file or directory of the emulator cannot be made.
    #[error("cannot create {}: {source}", path.display())]
    Create {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The emulator's log cannot be shared with its stderr.
    #[error("{}: {source}", path.display())]
    Log {
        /// The log.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The pipelab binary cannot be found.
    #[error("cannot find pipelab: {0}")]
    Exe(std::io::Error),
    /// The emulator cannot be started.
    #[error("cannot start the emulator: {0}")]
    Spawn(std::io::Error),
    /// The background emulator exited before it was up.
    #[error("the emulator exited ({status}): {last}")]
    Exited {
        /// How.
        status: std::process::ExitStatus,
        /// The last line of its log.
        last: String,
    },
    /// The background emulator did not come up in time.
    #[error("the topology did not come up within {} s", .0.as_secs())]
    NotUp(Duration),
    /// An experiment file does not parse.
    #[error("{}", error.render(file, text))]
    Script {
        /// The file.
        file: String,
        /// Why, at its position.
        error: Box<pipelab_topo::script::ScriptError>,
        /// Its text.
        text: String,
    },
    /// An experiment names a VN the topology does not have.
    #[error("{file}: line {line}: no VN '{vn}'")]
    NoVn {
        /// The experiment file.
        file: String,
        /// The step's line.
        line: usize,
        /// The VN.
        vn: String,
    },
    /// An experiment's command names what the topology does not have.
    #[error("{file}: line {line}: {error}")]
    Names {
        /// The experiment file.
        file: String,
        /// The step's line.
        line: usize,
        /// Why.
        error: pipelab_topo::TopoError,
    },
    /// An experiment's command could not be started in its VN.
    #[error("{file}: line {line}: {source}")]
    Step {
        /// The experiment file.
        file: String,
        /// The step's line.
        line: usize,
        /// Why.
        source: std::io::Error,
    },
    /// An experiment's control command was refused.
    #[error("{file}: line {line}: {command}: {source}")]
    StepControl {
        /// The experiment file.
        file: String,
        /// The step's line.
        line: usize,
        /// The command.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// Commands of an experiment failed.
    #[error(
        "{file}: commands failed: {}",
        failed.iter().map(|(l, why)| format!("line {l}: {why}")).collect::<Vec<_>>().join(", ")
    )]
    Failed {
        /// The experiment file.
        file: String,
        /// Each failed command's line and how it ended.
        failed: Vec<(usize, String)>,
    },
    /// A topology command on the command line does not parse.
    #[error("{}", crate::caret(text, error))]
    Command {
        /// The words.
        text: String,
        /// Why, at its column.
        error: Box<pipelab_topo::CommandError>,
    },
    /// The status's JSON cannot be read.
    #[error("{0}")]
    Json(serde_json::Error),
    /// What dead pipelab processes left could not be undone.
    #[error("{0}")]
    Ledger(pipelab_modes::ledger::LedgerError),
    /// The live topology refused or failed (a name, its socket, its
    /// namespaces).
    #[error("{0}")]
    Live(std::io::Error),
    /// `topo up` lacks the privileges it needs.
    #[error("{0}")]
    Privilege(pipelab_modes::error::ModeError),
    /// `topo gen` failed.
    #[error(transparent)]
    Gen(#[from] generate::GenError),
    /// `topo assign` failed.
    #[error(transparent)]
    Assign(#[from] assign::AssignError),
}

/// What routes minimise (`--metric`).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricArg {
    /// Total propagation delay (ties: fewer hops).
    Delay,
    /// Number of links (ties: less delay).
    Hops,
}

impl From<MetricArg> for Metric {
    fn from(m: MetricArg) -> Metric {
        match m {
            MetricArg::Delay => Metric::Delay,
            MetricArg::Hops => Metric::Hops,
        }
    }
}

impl MetricArg {
    fn name(self) -> &'static str {
        match self {
            MetricArg::Delay => "delay",
            MetricArg::Hops => "hops",
        }
    }
}

/// Whether a pair's two directions share one path (`--routes`).
#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RoutesArg {
    /// The route back is the route there reversed.
    #[default]
    Symmetric,
    /// Each direction is a shortest path of its own (ties may differ).
    Asymmetric,
}

impl From<RoutesArg> for Routes {
    fn from(r: RoutesArg) -> Routes {
        match r {
            RoutesArg::Symmetric => Routes::Symmetric,
            RoutesArg::Asymmetric => Routes::Asymmetric,
        }
    }
}

impl RoutesArg {
    fn name(self) -> &'static str {
        match self {
            RoutesArg::Symmetric => "symmetric",
            RoutesArg::Asymmetric => "asymmetric",
        }
    }
}

/// `pipelab topo` subcommands.
// Parsed once per command: the size of `Up`'s flags costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum TopoCmd {
    /// Generate a topology (ring, star, dumbbell, tree, transit-stub,
    /// waxman) as GML on stdout, or to -o FILE (TOML if FILE ends in
    /// `.toml`).
    ///
    /// Example:
    ///   pipelab topo gen transit-stub --transit 4 --stubs 3 --clients 10 --access 'bw 2Mbit/s delay 1ms' -o ts.gml
    Gen {
        #[command(subcommand)]
        kind: generate::GenKind,
    },
    /// Distill a topology (GML, GraphML or TOML) and print the pipe count
    /// and the mean and maximum hops per route.
    Distill {
        /// The topology file: `.gml` (ModelNet's format, or Shadow's),
        /// `.graphml` (NetworkX's) or `.toml`.
        file: PathBuf,
        /// hop-by-hop, end-to-end, last-mile, 'walk-in K', 'walk-out K'.
        #[arg(long, default_value = "hop-by-hop")]
        mode: String,
        /// What routes minimise.
        #[arg(long, value_enum, default_value = "delay")]
        metric: MetricArg,
        /// Symmetric routes, or each direction on its own.
        #[arg(long, value_enum, default_value = "symmetric")]
        routes: RoutesArg,
    },
    /// Distill a topology and assign its pipes to K cores (ModelNet's
    /// greedy k-clusters, and a balanced partition that cuts fewer
    /// routes); print the pipe pairs on each core and the share of routes
    /// that cross cores.
    ///
    /// Example:
    ///   pipelab topo assign ts.gml --cores 4 --mode last-mile
    Assign(assign::AssignArgs),
    /// Run a topology live: a named network namespace per VN
    /// (`pl-NAME-VN`), every packet through its route's pipes. Returns
    /// once forwarding runs; the emulator stays in the background. VNs
    /// are dual-stack: VN i is host i+1 of `--prefix` and of an IPv6
    /// ULA /64 chosen for the topology (see `topo status`).
    ///
    /// Example:
    ///   pipelab topo up ring.toml --distill last-mile --name lab
    Up {
        /// The topology file: `.gml`, `.graphml` or `.toml`.
        file: PathBuf,
        /// hop-by-hop, end-to-end, last-mile, 'walk-in K', 'walk-out K'.
        #[arg(long, default_value = "hop-by-hop")]
        distill: String,
        /// What routes minimise (also after faults).
        #[arg(long, value_enum, default_value = "delay")]
        metric: MetricArg,
        /// Symmetric routes, or each direction on its own (also after
        /// faults).
        #[arg(long, value_enum, default_value = "symmetric")]
        routes: RoutesArg,
        /// Addresses of the VNs, in node order from the second address.
        #[arg(long, default_value = "10.0.0.0/8")]
        prefix: String,
        /// The topology's name (letters, digits, '_', '.').
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
        /// Stay in the foreground (until Ctrl-C or `topo down`).
        #[arg(long)]
        foreground: bool,
        /// Threads creating namespaces.
        #[arg(long, default_value_t = 4, allow_negative_numbers = true)]
        threads: usize,
        /// Worker threads forwarding packets, each reading the TAPs of
        /// the VNs whose first hop it has in `topo assign`'s partition
        /// of the links; which pipes each owns: see --split (default:
        /// one for every two CPUs this process may run on, at least one,
        /// at most one per link).
        #[arg(long, value_name = "K", value_parser = pipelab_modes::workers::parse_workers, allow_negative_numbers = true)]
        workers: Option<u16>,
        /// How the pipes are split over the workers: `links` (both
        /// directions of a link on its worker in `topo assign`'s
        /// partition: a route is cut where the partition cuts it, and a
        /// one-way flow's hops are shared by the workers) or
        /// `directions` (each direction with the worker reading the VNs
        /// whose routes use it: their sources', else their
        /// destinations', else the link's; a chain's route crosses no
        /// worker, and a flow's work is all its source's worker's).
        #[arg(long, value_name = "HOW", default_value = "links", value_parser = live::SplitBy::parse)]
        split: live::SplitBy,
        /// CPUs to pin worker i to the i-th of (e.g. 0,1 or 2-3), or
        /// `none` (default: not pinned; the scheduler wakes each on an
        /// idle CPU).
        #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
        cpus: Option<String>,
        /// Spin instead of sleeping between deadlines (each worker keeps
        /// a core busy).
        #[arg(long)]
        busy_poll: bool,
        /// Run the workers at real-time priority (SCHED_FIFO, where
        /// allowed), so that the VNs' own processes delay neither the
        /// departures nor the reading of their frames; each worker steps
        /// down while busy above 85% of its CPU.
        #[arg(long, conflicts_with = "busy_poll")]
        realtime: bool,
        /// Never run the workers at real-time priority (by default they
        /// are real-time while light, below 10% of a CPU, and normal
        /// above 20%; other CPU-bound processes may then delay departures
        /// by up to a scheduler tick).
        #[arg(long, conflicts_with = "realtime")]
        no_realtime: bool,
        /// Seed of every random decision (loss): a number, or `random`.
        #[arg(long, default_value = "1", allow_negative_numbers = true, value_parser = crate::seed_arg)]
        seed: u64,
        /// A configuration of the language for the VNs' traffic (pipes,
        /// schedulers, flow queues, rules, tables): rules see a VN's frames
        /// as `out`, `recv VN`, `xmit DESTINATION-VN`; a frame a rule sends
        /// to a pipe or queue takes its topology path when it leaves it.
        #[arg(long, short = 'c', value_name = "FILE")]
        config: Option<PathBuf>,
        /// GSO super-frames on the VNs' TAPs (virtio-net headers, TSO,
        /// USO), cut into segments wherever anything but a fixed delay
        /// acts on them; `off`: MTU-sized frames only.
        #[arg(long, value_enum, default_value_t = crate::live::OffloadArg::On)]
        offload: crate::live::OffloadArg,
        /// `--pcap FILE` (one interface pair per VN) and `--events FILE`,
        /// written until the topology stops (`topo down`, Ctrl-C).
        #[command(flatten)]
        capture: crate::capture::CaptureArgs,
        /// `--series FILE`: every link direction's rates, backlog and
        /// drops as CSV rows (named `a->b`), every `--interval` (100ms),
        /// written until the topology stops.
        #[command(flatten)]
        series: crate::series::SeriesArgs,
    },
    /// Stop a topology and remove its namespaces (also after a crash).
    Down {
        /// The topology's name.
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
    },
    /// Run a command in a VN's namespace; the exit status is the command's.
    /// It finds the VN's name and addresses in PIPELAB_VN, PIPELAB_ADDR
    /// and PIPELAB_ADDR6 (topologies are dual-stack; `topo status` lists
    /// every VN's addresses).
    ///
    /// Example:
    ///   pipelab topo exec vn3 -- ping -c 3 10.0.0.1
    Exec {
        /// The topology's name.
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
        /// The VN: its name, node id or address (IPv4 or IPv6).
        vn: String,
        /// The command and its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<String>,
    },
    /// List running topologies.
    List,
    /// Print a topology's VNs and addresses and the emulator's counters.
    Status {
        /// The topology's name.
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Fail or restore the link(s) between two nodes (names or ids), or
    /// change their attributes, now.
    ///
    /// Examples:
    ///   pipelab topo link r0 r1 down
    ///   pipelab topo link r0 r1 set bw 1Mbit/s delay 20ms loss 1% queue 30
    ///   pipelab topo link r0 r1 set jitter 5ms distribution normal codel ecn
    ///   pipelab topo link r0 r1 set bw trace:cellular.trace
    ///   pipelab topo link r0 r1 down 2s
    Link {
        /// The topology's name.
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
        /// One end.
        a: String,
        /// The other end.
        b: String,
        /// down, up, or set.
        state: String,
        /// After `set`: attributes (bw, delay, loss, queue) and any pipe
        /// words (a file's path relative to the working directory); after
        /// `down`: a duration to black-hole the link for.
        attrs: Vec<String>,
    },
    /// Fail or restore a node (name or id), now.
    Node {
        /// The topology's name.
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
        /// The node.
        node: String,
        /// down or up.
        state: String,
    },
    /// Synthetic cross traffic (ModelNet §4.3), now: a demand matrix of
    /// `SRC DST RATE` triples loads the pipes of its routes, which get the
    /// bandwidth, delay and queue of an M/M/1 model; `clear` ends it.
    ///
    /// Examples:
    ///   pipelab topo cross c1 c7 2Mbit/s c2 c9 500Kbit/s
    ///   pipelab topo cross clear
    Cross {
        /// The topology's name.
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
        /// `SRC DST RATE` triples (VN names or ids), or `clear`.
        #[arg(required = true, num_args = 1..)]
        demands: Vec<String>,
    },
    /// Run an experiment file: timed `exec`, `link`, `node` and `cross`
    /// commands against a running topology (see README, "Topologies").
    Run {
        /// The topology's name.
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
        /// The experiment file.
        script: PathBuf,
    },
}

/// A topology file read and checked ([`Topology::validate`]: ids and
/// names unique, links sound), so every command refuses the same files.
pub(crate) fn load(file: &Path) -> Result<Topology, TopoError> {
    let text = read_named_file(file).map_err(TopoError::Read)?;
    let name = file.display().to_string();
    let refused = |error| TopoError::Topology {
        name: name.clone(),
        error,
    };
    // The files links name (`bw "trace:FILE"`, `profile "FILE"`, ...):
    // relative paths from the topology file's directory.
    let loader = crate::file_loader(crate::config_dir(file));
    let mut load = |p: &str| loader(p);
    let defaults = pipelab_topo::gml::GmlDefaults::default();
    let gml_error = |error| TopoError::Gml {
        name: name.clone(),
        error: Box::new(error),
    };
    let topo = if name.ends_with(".toml") {
        pipelab_topo::native::parse_toml_files(&text, &defaults, Some(&mut load))
            .map_err(refused)?
    } else if is_graphml(&name, &text) {
        pipelab_topo::graphml::parse_graphml_files(&text, &defaults, Some(&mut load))
            .map_err(gml_error)?
    } else {
        pipelab_topo::gml::parse_gml_files(&text, &defaults, Some(&mut load)).map_err(gml_error)?
    };
    topo.validate().map_err(refused)?;
    Ok(topo)
}

/// True if the topology file `name` is GraphML: named `.graphml` (or
/// `.xml`), or XML by its first character.
fn is_graphml(name: &str, text: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".graphml")
        || lower.ends_with(".xml")
        || text
            .trim_start_matches('\u{feff}')
            .trim_start()
            .starts_with('<')
}

/// Say on stderr that `topo` (from `file`) is not connected, naming its
/// components; it still runs (routes between the pieces have none).
pub(crate) fn warn_disconnected(topo: &Topology, file: &Path) {
    if let Some(w) = topo.disconnected_warning() {
        eprintln!("warning: {}: {w}", file.display());
    }
}

/// Distil `topo` (from `file`) with routes by `metric`, symmetric or not
/// (`routes`).
pub(crate) fn distill(
    topo: &Topology,
    mode: Mode,
    metric: Metric,
    routes: Routes,
    file: &Path,
) -> Result<Distilled, TopoError> {
    distill_with_routes(topo, mode, metric, routes, &Faults::none(topo)).map_err(|error| {
        TopoError::Topology {
            name: file.display().to_string(),
            error,
        }
    })
}

fn summary(st: &live::TopoState) -> String {
    let prefixes = match &st.prefix6 {
        Some(p6) => format!("{} and {p6}", st.prefix),
        None => st.prefix.clone(),
    };
    let workers = match st.workers {
        0 => String::new(),
        1 => ", 1 worker".to_string(),
        k => format!(", {k} workers"),
    };
    let note = st
        .note
        .as_ref()
        .map_or_else(String::new, |n| format!("note: {n}\n"));
    format!(
        "topology {} up: {} VNs in {} ({}), {} pipes, {} routes cached{workers}, {:.2} s, pid {}, seed {}\n{note}",
        st.name,
        st.vns.len(),
        prefixes,
        st.distill,
        st.pipes,
        st.routes,
        st.up_ms / 1e3,
        st.pid,
        st.seed
    )
}

/// One line per VN: name, id, IPv4 and IPv6 addresses (`-` on an
/// IPv4-only topology), namespace.
fn vn_table(st: &live::TopoState) -> String {
    let mut s = String::from("vn\tid\taddress\taddress6\tnetns\n");
    for v in &st.vns {
        let a6 = v.addr6.map_or_else(|| "-".to_string(), |a| a.to_string());
        s += &format!("{}\t{}\t{}\t{a6}\t{}\n", v.name, v.id, v.addr, v.netns);
    }
    s
}

/// Start `pipelab topo up ... --foreground` in the background and wait
/// until its state file says forwarding runs.
fn up_background(args: &[String], name: &str) -> Result<String, TopoError> {
    use std::os::unix::process::CommandExt;
    // What dead pipelab processes left (a crashed emulator's namespaces)
    // is removed first, and said here, where the user reads it (the
    // emulator's own output goes to its log).
    let restored = pipelab_modes::ledger::Ledger::new()
        .recover(false, false)
        .map_err(TopoError::Ledger)?;
    pipelab_modes::ledger::notice(&restored);
    if let Some(pid) = live::running(name) {
        return Err(TopoError::AlreadyUp {
            name: name.to_string(),
            pid,
        });
    }
    std::fs::create_dir_all(live::STATE_DIR).map_err(|source| TopoError::Create {
        path: PathBuf::from(live::STATE_DIR),
        source,
    })?;
    let log_path = live::log_path(name);
    let log =
        pipelab_lang::output::create_output(&log_path).map_err(|source| TopoError::Create {
            path: log_path.clone(),
            source,
        })?;
    let log2 = log.try_clone().map_err(|source| TopoError::Log {
        path: log_path.clone(),
        source,
    })?;
    let exe = std::env::current_exe().map_err(TopoError::Exe)?;
    let mut child = std::process::Command::new(exe)
        .args(args)
        .arg("--foreground")
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(log2)
        .process_group(0)
        .spawn()
        .map_err(TopoError::Spawn)?;
    let t0 = Instant::now();
    // On a terminal: the VNs' namespaces as they are made.
    let bar = crate::progress::Progress::spinner("{spinner} topo up {msg} ({elapsed})");
    let mut polls = 0u32;
    loop {
        if let Ok(st) = live::read_state(name) {
            if st.pid == child.id() {
                return Ok(summary(&st));
            }
        }
        if bar.is_shown() && polls.is_multiple_of(20) {
            let made = live::leftover_namespaces(name).len();
            bar.message(format!("{name}: {made} VN namespaces made"));
        }
        polls = polls.wrapping_add(1);
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            // A start that failed leaves nothing behind: its message is
            // the error's (the emulator's own record undid the rest).
            let _ = std::fs::remove_file(&log_path);
            return Err(TopoError::Exited {
                status,
                last: log
                    .trim()
                    .lines()
                    .last()
                    .unwrap_or("no message")
                    .to_string(),
            });
        }
        let bound = Duration::from_secs(600);
        if t0.elapsed() > bound {
            let _ = child.kill();
            let _ = live::down(name);
            return Err(TopoError::NotUp(bound));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The nodes of a running topology, without its links: enough to resolve
/// the names of commands (VNs are its clients).
fn node_table(st: &live::TopoState) -> Topology {
    let vns: std::collections::HashSet<u64> = st.vns.iter().map(|v| v.id).collect();
    let mut t = Topology::new();
    for n in &st.nodes {
        t.nodes.push(Node {
            id: n.id,
            role: if vns.contains(&n.id) {
                Role::Client
            } else {
                Role::Stub
            },
            name: n.name.clone(),
        });
    }
    t
}

/// Check every VN and node name of an experiment (from `file`) against
/// the running topology `st`, before anything starts.
fn check_names(file: &str, steps: &[Step], st: &live::TopoState) -> Result<(), TopoError> {
    let nodes = node_table(st);
    for s in steps {
        match &s.action {
            Action::Exec { vn, .. } if st.vn(vn).is_none() => {
                return Err(TopoError::NoVn {
                    file: file.to_string(),
                    line: s.line,
                    vn: vn.clone(),
                });
            }
            Action::Control(c) => {
                c.resolve_names(&nodes).map_err(|error| TopoError::Names {
                    file: file.to_string(),
                    line: s.line,
                    error,
                })?;
            }
            Action::Exec { .. } => {}
        }
    }
    Ok(())
}

fn run_script(name: &str, script: &Path) -> Result<String, TopoError> {
    let text = read_named_file(script).map_err(TopoError::Read)?;
    let file = script.display().to_string();
    let steps = match parse_script(&text) {
        Ok(steps) => steps,
        Err(error) => {
            return Err(TopoError::Script {
                file,
                error: Box::new(error),
                text,
            })
        }
    };
    let st = live::read_state(name).map_err(TopoError::Live)?;
    check_names(&file, &steps, &st)?;
    let t0 = Instant::now();
    let mut children = Vec::new();
    let mut failure = None;
    for s in &steps {
        let due = Duration::from_nanos(s.at.as_nanos());
        if let Some(wait) = due.checked_sub(t0.elapsed()) {
            std::thread::sleep(wait);
        }
        match &s.action {
            Action::Exec { vn, command } => {
                let mut cmd = std::process::Command::new("sh");
                cmd.arg("-c").arg(command);
                match live::spawn_in_vn(name, vn, cmd) {
                    Ok(c) => children.push((s.line, c)),
                    Err(source) => {
                        failure = Some(TopoError::Step {
                            file: file.clone(),
                            line: s.line,
                            source,
                        });
                        break;
                    }
                }
            }
            Action::Control(c) => match live::control(name, &{
                // Files a `set` names: relative to the experiment file.
                let mut c = c.clone();
                if let Some(dir) = std::path::absolute(script)
                    .ok()
                    .and_then(|p| p.parent().map(Path::to_path_buf))
                {
                    c.resolve_paths(&dir);
                }
                c.to_string()
            }) {
                Ok(reply) => eprintln!("{:.3}s {c}: {reply}", t0.elapsed().as_secs_f64()),
                Err(source) => {
                    failure = Some(TopoError::StepControl {
                        file: file.clone(),
                        line: s.line,
                        command: c.to_string(),
                        source,
                    });
                    break;
                }
            },
        }
    }
    if failure.is_some() {
        for (_, c) in &mut children {
            let _ = c.kill();
        }
    }
    let mut failed = Vec::new();
    for (line, mut c) in children {
        match c.wait() {
            Ok(st) if st.success() => {}
            Ok(st) => failed.push((line, st.to_string())),
            Err(e) => failed.push((line, e.to_string())),
        }
    }
    if let Some(f) = failure {
        return Err(f);
    }
    if !failed.is_empty() {
        return Err(TopoError::Failed { file, failed });
    }
    Ok(format!(
        "{file}: {} steps in {:.2} s\n",
        steps.len(),
        t0.elapsed().as_secs_f64()
    ))
}

/// `live::down`, with a bar of the VNs' namespaces removed on a
/// terminal (it counts what is left while the teardown runs).
fn down_with_progress(name: &str) -> std::io::Result<live::DownReport> {
    let total = live::leftover_namespaces(name).len() as u64;
    let bar = crate::progress::Progress::new(
        total.max(1),
        "topo down {msg} [{bar:30}] {pos}/{len} VN namespaces ({elapsed})",
    );
    if !bar.is_shown() || total < 2 {
        return live::down(name);
    }
    bar.message(name.to_string());
    std::thread::scope(|scope| {
        let work = scope.spawn(|| live::down(name));
        while !work.is_finished() {
            let left = live::leftover_namespaces(name).len() as u64;
            bar.set(total.saturating_sub(left));
            std::thread::sleep(Duration::from_millis(100));
        }
        work.join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the teardown thread panicked")))
    })
}

/// Parse a topology command given as words on the command line (errors
/// point at the word) and send its canonical text to topology `name`.
fn send(name: &str, text: &str) -> Result<String, TopoError> {
    let mut cmd = parse_command(text).map_err(|error| TopoError::Command {
        text: text.to_string(),
        error: Box::new(error),
    })?;
    // Files a `set` names: relative to the working directory.
    if let Ok(dir) = std::env::current_dir() {
        cmd.resolve_paths(&dir);
    }
    live::control(name, &cmd.to_string())
        .map(|r| r + "\n")
        .map_err(TopoError::Live)
}

/// Run a topo command.
pub fn run(cmd: TopoCmd) -> Result<String, TopoError> {
    match cmd {
        TopoCmd::Gen { kind } => Ok(generate::run(kind)?),
        TopoCmd::Distill {
            file,
            mode,
            metric,
            routes,
        } => {
            let mode: Mode = mode.parse().map_err(|error| TopoError::Mode {
                flag: "--mode",
                value: mode.clone(),
                error,
            })?;
            let topo = load(&file)?;
            warn_disconnected(&topo, &file);
            let d = distill(&topo, mode, metric.into(), routes.into(), &file)?;
            Ok(report(&topo, &d))
        }
        TopoCmd::Assign(a) => {
            let topo = load(&a.file)?;
            Ok(assign::run(&topo, &a)?)
        }
        TopoCmd::Up {
            file,
            distill,
            metric,
            routes,
            prefix,
            name,
            foreground,
            threads,
            workers,
            split,
            cpus,
            busy_poll,
            realtime,
            no_realtime,
            seed,
            config,
            offload,
            capture,
            series,
        } => {
            let cpu_list = cpus
                .as_deref()
                .map(pipelab_modes::workers::parse_cpus)
                .transpose()
                .map_err(TopoError::Cpus)?;
            live::check_name(&name).map_err(TopoError::Live)?;
            {
                use crate::outputs::Use::Reads;
                let mut paths = vec![
                    ("FILE", Some(file.as_path()), Reads),
                    ("--config", config.as_deref(), Reads),
                ];
                paths.extend(capture.named());
                paths.extend(series.named());
                crate::outputs::check(&paths)?;
            }
            let topology = load(&file)?;
            // Checked before anything is created (and before forking).
            let (config_cfg, config_load) = match &config {
                Some(c) => crate::config_file(c)?,
                None => (
                    pipelab_lang::Config::new(),
                    Box::new(pipelab_emu::read_files) as pipelab_emu::FileLoader,
                ),
            };
            let mode: Mode = distill.parse().map_err(|error| TopoError::Mode {
                flag: "--distill",
                value: distill.clone(),
                error,
            })?;
            let prefix_v = live::parse_prefix(&prefix).map_err(TopoError::Prefix)?;
            // Opened (so checked) now; a background emulator opens them
            // again.
            let files = capture.files()?;
            let series_opts = series.options(false)?;
            live::plan(&name, &topology, prefix_v, None).map_err(|source| TopoError::Plan {
                file: file.clone(),
                source,
            })?;
            // The foreground emulator of a background `topo up` says it in
            // its log too; the caller sees it here.
            warn_disconnected(&topology, &file);
            // The input is good; before anything is made, the privileges.
            pipelab_modes::privilege::require(
                "pipelab topo up",
                pipelab_modes::privilege::NAMESPACES,
            )
            .map_err(TopoError::Privilege)?;
            if !foreground {
                let args: Vec<String> = vec![
                    "topo".into(),
                    "up".into(),
                    file.display().to_string(),
                    "--distill".into(),
                    distill,
                    "--metric".into(),
                    metric.name().into(),
                    "--routes".into(),
                    routes.name().into(),
                    "--prefix".into(),
                    prefix,
                    "--name".into(),
                    name.clone(),
                    "--threads".into(),
                    threads.to_string(),
                    "--seed".into(),
                    seed.to_string(),
                    "--offload".into(),
                    if offload == crate::live::OffloadArg::On {
                        "on"
                    } else {
                        "off"
                    }
                    .into(),
                ];
                let mut args = args;
                if let Some(k) = workers {
                    args.extend(["--workers".into(), k.to_string()]);
                }
                if split == live::SplitBy::Directions {
                    args.extend(["--split".into(), "directions".into()]);
                }
                if let Some(c) = &cpus {
                    args.extend(["--cpus".into(), c.clone()]);
                }
                if busy_poll {
                    args.push("--busy-poll".into());
                }
                if realtime {
                    args.push("--realtime".into());
                }
                if no_realtime {
                    args.push("--no-realtime".into());
                }
                args.extend(capture.to_args());
                args.extend(series.to_args());
                if let Some(c) = &config {
                    args.push("--config".into());
                    args.push(
                        std::fs::canonicalize(c)
                            .unwrap_or_else(|_| c.clone())
                            .display()
                            .to_string(),
                    );
                }
                return up_background(&args, &name);
            }
            let opts = live::UpOptions {
                name,
                topology,
                file: std::fs::canonicalize(&file)
                    .unwrap_or(file)
                    .display()
                    .to_string(),
                mode,
                metric: metric.into(),
                routes: routes.into(),
                prefix: prefix_v,
                runner: RunnerOptions {
                    seed,
                    busy_poll,
                    priority: if realtime {
                        pipelab_io::runner::Priority::Realtime
                    } else if no_realtime {
                        pipelab_io::runner::Priority::Normal
                    } else {
                        pipelab_io::runner::Priority::Auto
                    },
                    ..RunnerOptions::default()
                },
                threads,
                config: config_cfg,
                load: config_load,
                offload: offload == crate::live::OffloadArg::On,
                workers: pipelab_modes::workers::WorkerOptions {
                    workers,
                    cpus: cpu_list,
                },
                split,
                capture: files,
                series: series_opts,
            };
            live::serve(opts, |st| {
                eprint!("{}", summary(st));
            })
            .map_err(TopoError::Live)?;
            Ok(String::new())
        }
        TopoCmd::Down { name } => {
            let r = down_with_progress(&name).map_err(TopoError::Live)?;
            let plural = |n: usize, one: &str, many: &str| {
                format!("{n} {}", if n == 1 { one } else { many })
            };
            Ok(format!(
                "topology {name} down: emulator {}, {} removed, {} killed\n",
                if r.killed_emulator {
                    "killed"
                } else if r.stopped {
                    "stopped"
                } else {
                    "not running"
                },
                plural(r.namespaces, "namespace", "namespaces"),
                plural(r.killed_processes, "process", "processes")
            ))
        }
        TopoCmd::Exec { name, vn, command } => {
            Err(TopoError::Live(live::exec(&name, &vn, &command)))
        }
        TopoCmd::List => {
            let mut s = String::new();
            for st in live::list() {
                s += &summary(&st);
            }
            Ok(s)
        }
        TopoCmd::Status { name, json } => {
            let mut st = live::read_state(&name).map_err(TopoError::Live)?;
            let status = live::control(&name, "status").map_err(TopoError::Live)?;
            // Routes are cached as pairs start to send: the emulator's
            // count now, not the state file's of the start.
            if let Some(n) = serde_json::from_str::<serde_json::Value>(&status)
                .ok()
                .and_then(|v| v["routes_cached"].as_u64())
            {
                st.routes = n as usize;
            }
            if json {
                let v: serde_json::Value =
                    serde_json::from_str(&status).map_err(TopoError::Json)?;
                let out = serde_json::json!({ "state": st, "status": v });
                return Ok(format!(
                    "{}\n",
                    serde_json::to_string_pretty(&out).unwrap_or_default()
                ));
            }
            Ok(format!("{}{}{status}\n", summary(&st), vn_table(&st)))
        }
        TopoCmd::Link {
            name,
            a,
            b,
            state,
            attrs,
        } => {
            let mut words = vec![format!("link {a} {b} {state}")];
            words.extend(attrs);
            send(&name, &words.join(" "))
        }
        TopoCmd::Node { name, node, state } => send(&name, &format!("node {node} {state}")),
        TopoCmd::Cross { name, demands } => send(&name, &format!("cross {}", demands.join(" "))),
        TopoCmd::Run { name, script } => run_script(&name, &script),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> live::TopoState {
        let vn = |name: &str, id: u64| live::VnState {
            name: name.into(),
            id,
            addr: std::net::Ipv4Addr::new(10, 0, 0, id as u8 + 1),
            addr6: Some(std::net::Ipv6Addr::new(
                0xfd00,
                0,
                0,
                0x4000,
                0,
                0,
                0,
                id as u16 + 1,
            )),
            netns: format!("pl-t-{name}"),
        };
        let node = |name: &str, id: u64| live::NodeName {
            id,
            name: name.into(),
        };
        live::TopoState {
            name: "t".into(),
            pid: 1,
            file: "t.toml".into(),
            distill: "hop-by-hop".into(),
            prefix: "10.0.0.0/8".into(),
            prefix6: Some("fd00:0:0:4000::/64".into()),
            pipes: 4,
            routes: 2,
            up_ms: 1.0,
            seed: 1,
            workers: 2,
            note: None,
            vns: vec![vn("a", 1), vn("b", 2)],
            nodes: vec![node("r1", 0), node("a", 1), node("b", 2)],
        }
    }

    /// A pass proves the summary counts the workers, in the singular for
    /// one, and puts a note of `topo up` on a line of its own after it;
    /// a state of an emulator that did not record them says neither.
    #[test]
    fn summary_says_the_workers_and_the_note() {
        let st = state();
        let s = summary(&st);
        assert!(
            s.contains(", 4 pipes, 2 routes cached, 2 workers, 0.00 s,"),
            "{s}"
        );
        assert_eq!(s.lines().count(), 1, "{s}");
        let one = live::TopoState {
            workers: 1,
            note: Some("--workers 4: a topology of 1 link split by links, a worker each at most; running 1".into()),
            ..state()
        };
        let s = summary(&one);
        assert!(s.contains(" routes cached, 1 worker, "), "{s}");
        assert!(s.ends_with("\nnote: --workers 4: a topology of 1 link split by links, a worker each at most; running 1\n"), "{s}");
        let old = live::TopoState {
            workers: 0,
            ..state()
        };
        assert!(
            summary(&old).contains(" routes cached, 0.00 s,"),
            "{}",
            summary(&old)
        );
    }

    /// A pass proves `topo status` shows where a VN's IPv6 address is:
    /// the /64 in the summary, each VN's address in the table, and that
    /// `topo exec` finds a VN by it.
    #[test]
    fn status_shows_the_ipv6_addresses() {
        let st = state();
        assert!(
            summary(&st).contains(" VNs in 10.0.0.0/8 and fd00:0:0:4000::/64 ("),
            "{}",
            summary(&st)
        );
        assert_eq!(
            vn_table(&st),
            "vn\tid\taddress\taddress6\tnetns\n\
             a\t1\t10.0.0.2\tfd00:0:0:4000::2\tpl-t-a\n\
             b\t2\t10.0.0.3\tfd00:0:0:4000::3\tpl-t-b\n"
        );
        assert_eq!(
            st.vn("fd00:0:0:4000::3").map(|v| v.name.as_str()),
            Some("b")
        );
        assert_eq!(st.vn("10.0.0.2").map(|v| v.name.as_str()), Some("a"));
        assert!(st.vn("fd00:0:0:4000::9").is_none());
        let v4_only = live::TopoState {
            prefix6: None,
            vns: st
                .vns
                .iter()
                .map(|v| live::VnState {
                    addr6: None,
                    ..v.clone()
                })
                .collect(),
            ..st.clone()
        };
        assert!(summary(&v4_only).contains(" VNs in 10.0.0.0/8 ("));
        assert!(vn_table(&v4_only).contains("a\t1\t10.0.0.2\t-\tpl-t-a\n"));
    }

    /// A pass proves an experiment's names are checked by the command
    /// grammar's resolution: `cross clear` names no node (it was refused
    /// as "no node 'clear'"), a demand needs VNs, a link its nodes.
    #[test]
    fn experiment_names_are_checked_by_the_grammar() {
        let st = state();
        let ok = "0s exec a true\n1s link r1 a down\n2s cross a b 1Mbit/s\n3s cross clear\n4s node 0 up\n";
        let steps = parse_script(ok).expect("parses");
        assert!(check_names("x", &steps, &st).is_ok());
        for (text, want) in [
            ("0s exec nobody true\n", "x: line 1: no VN 'nobody'"),
            ("1s cross a r1 1Mbit/s\n", "x: line 1: no VN 'r1'"),
            ("\n1s link r1 r9 down\n", "x: line 2: no node 'r9'"),
        ] {
            let steps = parse_script(text).expect("parses");
            assert_eq!(
                check_names("x", &steps, &st).map_err(|e| e.to_string()),
                Err(want.to_string()),
                "{text}"
            );
        }
    }
}
