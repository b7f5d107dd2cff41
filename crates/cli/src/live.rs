//! The live commands: `pipelab shell`, `pipelab bridge`, `pipelab attach`
//! and `pipelab probe`.

use clap::{Args, Subcommand};
use pipelab_io::runner::{Priority, RunnerOptions};
use pipelab_lang::units::UnitError;
use pipelab_lang::{parse_pipe_params, parse_side_params, ParseError, PipeSpec, Side};
use pipelab_modes::probe::{self, SendOptions};
use pipelab_modes::shell::{link_config, run_shell, ShellOptions};
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::error::ConfigFileError;

/// A flag's value the unit layer refuses: the flag, the value, the
/// message and its hint.
#[derive(Debug, thiserror::Error)]
#[error("error: --{flag} '{value}': {error}")]
pub struct FlagError {
    /// The flag, without its dashes.
    pub flag: &'static str,
    /// The value given.
    pub value: String,
    /// Why.
    pub error: UnitError,
}

/// `--cpus` does not parse, or names a CPU this process may not run on
/// (the message names the flag and the value).
#[derive(Debug, thiserror::Error)]
#[error("error: {0}")]
pub struct CpusError(pub String);

/// `--spill-dir` names no directory while a pipe is marked `spill`
/// (the message names the flag and the path).
#[derive(Debug, thiserror::Error)]
#[error("error: --spill-dir {0}: a pipe is marked `spill`")]
pub struct SpillDirError(pub String);

/// `--spill-dir DIR[,DIR2]`: where the frames of pipes marked `spill` go
/// on disk (shell, bridge).
#[derive(Args, Debug)]
pub struct SpillArgs {
    /// Where the frames waiting in pipes marked `spill` go when the
    /// memory cap is short: a directory on disk, or two (on two disks:
    /// one file is read while the other is written), each holding a
    /// directory of the run's own whose files have no names.
    #[arg(long, value_name = "DIR[,DIR2]", default_value = pipelab_modes::spill::DEFAULT_DIR,
          value_parser = spill_dirs_arg, allow_hyphen_values = true)]
    spill_dir: SpillDirs,
}

/// The directories of `--spill-dir`.
#[derive(Clone, Debug)]
pub struct SpillDirs(pub Vec<PathBuf>);

fn spill_dirs_arg(text: &str) -> Result<SpillDirs, String> {
    pipelab_modes::spill::parse_dirs(text).map(SpillDirs)
}

impl SpillArgs {
    /// The directories, checked when `spec` has a pipe marked `spill`.
    fn dirs(&self, spec: &pipelab_emu::Spec) -> Result<Vec<PathBuf>, SpillDirError> {
        if pipelab_modes::spill::any_spill(spec) {
            pipelab_modes::spill::check_dirs(&self.spill_dir.0).map_err(SpillDirError)?;
        }
        Ok(self.spill_dir.0.clone())
    }
}

/// Why `pipelab shell` could not run.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    /// The pipe parameters of `--link`, `--uplink`, `--downlink` or
    /// `--shared` do not parse (a caret under the word).
    #[error("error: --{flag}: {}", crate::caret(text, error))]
    LinkWords {
        /// The flag, without its dashes.
        flag: &'static str,
        /// Its words.
        text: String,
        /// Why, at its column.
        error: Box<ParseError>,
    },
    /// The link words make no configuration (the mode's message).
    #[error("{0}")]
    Link(String),
    /// The `--config` file cannot be used.
    #[error(transparent)]
    Config(#[from] ConfigFileError),
    /// The configuration cannot run: a pipe's parameters, a file it
    /// names, a rule's reference.
    #[error("error: {0}")]
    Compile(#[from] pipelab_modes::shell::ShellConfigError),
    /// `--name` or the output paths are refused.
    #[error(transparent)]
    Flags(#[from] RunFlagError),
    /// A flag's value is refused.
    #[error(transparent)]
    Flag(#[from] FlagError),
    /// `--cpus` is refused.
    #[error(transparent)]
    Cpus(#[from] CpusError),
    /// The `--stats` file cannot be written.
    #[error(transparent)]
    Stats(#[from] pipelab_modes::report::StatsFileError),
    /// `--pcap`, `--events` or `--events-max` cannot be used.
    #[error(transparent)]
    Capture(#[from] crate::capture::CaptureError),
    /// `--interval` or `--series` cannot be used.
    #[error("error: {0}")]
    Series(#[from] crate::series::SeriesError),
    /// `--spill-dir` cannot be used.
    #[error(transparent)]
    SpillDir(#[from] SpillDirError),
    /// The shell failed while setting up or running.
    #[error("pipelab shell: {0}")]
    Run(std::io::Error),
}

impl ShellError {
    /// The exit status: 1 when setting up or running failed, 2 for
    /// what was refused before anything ran (README: "Exit status").
    pub fn code(&self) -> u8 {
        match self {
            ShellError::Run(_) => 1,
            _ => 2,
        }
    }
}

/// Why `pipelab bridge` could not run.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// The configuration cannot be lowered (a usage error).
    #[error("error: {name}: {error}")]
    Lower {
        /// The configuration file.
        name: String,
        /// Why.
        error: pipelab_emu::LowerError,
    },
    /// The configuration's references do not resolve (a usage error).
    #[error("error: {name}: {error}")]
    Spec {
        /// The configuration file.
        name: String,
        /// Why.
        error: pipelab_emu::SpecError,
    },
    /// A flag's value is refused.
    #[error(transparent)]
    Flag(#[from] FlagError),
    /// `--cpus` is refused.
    #[error(transparent)]
    Cpus(#[from] CpusError),
    /// The `--stats` file cannot be written.
    #[error(transparent)]
    Stats(#[from] pipelab_modes::report::StatsFileError),
    /// `--pcap`, `--events` or `--events-max` cannot be used.
    #[error(transparent)]
    Capture(#[from] crate::capture::CaptureError),
    /// `--interval` or `--series` cannot be used.
    #[error("error: {0}")]
    Series(#[from] crate::series::SeriesError),
    /// `--name` or the output paths are refused.
    #[error(transparent)]
    Flags(#[from] RunFlagError),
    /// `--spill-dir` cannot be used.
    #[error(transparent)]
    SpillDir(#[from] SpillDirError),
    /// The bridge failed while setting up or running.
    #[error("pipelab bridge: {0}")]
    Run(std::io::Error),
}

impl BridgeError {
    /// The exit status: 1 when setting up or running failed, 2 for
    /// what was refused before anything ran (README: "Exit status").
    pub fn code(&self) -> u8 {
        match self {
            BridgeError::Run(_) => 1,
            _ => 2,
        }
    }
}

/// Why `pipelab attach` could not run.
#[derive(Debug, thiserror::Error)]
pub enum AttachCliError {
    /// The pipe parameters after `--` do not parse (a caret under the
    /// word).
    #[error("error: pipe parameters: {}", crate::caret(text, error))]
    Words {
        /// The words, joined by spaces.
        text: String,
        /// Why, at its column.
        error: Box<ParseError>,
    },
    /// Neither pipe parameters nor `--config`.
    #[error("error: nothing to shape with: give pipe parameters after `--` (e.g. `pipelab attach eth0 -- delay 50ms`) or --config FILE")]
    Nothing,
    /// The words make no configuration (the mode's message).
    #[error("error: {0}")]
    Link(String),
    /// `--workers` or `--cpus`: one queue, one worker.
    #[error("error: --{0}: pipelab attach runs one worker (its one netfilter queue)")]
    Workers(&'static str),
    /// The capture or event log cannot be used.
    #[error(transparent)]
    Capture(#[from] crate::capture::CaptureError),
    /// The series cannot be taken.
    #[error(transparent)]
    Series(#[from] crate::series::SeriesError),
    /// The `--config` file cannot be used.
    #[error(transparent)]
    Config(#[from] ConfigFileError),
    /// A flag's value is refused.
    #[error(transparent)]
    Flag(#[from] FlagError),
    /// The `--stats` file cannot be written.
    #[error(transparent)]
    Stats(#[from] pipelab_modes::report::StatsFileError),
    /// `--name` or the output paths are refused.
    #[error(transparent)]
    Flags(#[from] RunFlagError),
    /// The mode refused or failed.
    #[error(transparent)]
    Mode(#[from] pipelab_modes::attach::AttachError),
}

impl AttachCliError {
    /// The exit status: 2 for what the user gave wrong, else 1.
    pub fn code(&self) -> u8 {
        match self {
            AttachCliError::Mode(e) if !e.is_usage() => 1,
            _ => 2,
        }
    }
}

/// Why `pipelab probe` failed.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// A flag's value is refused.
    #[error(transparent)]
    Flag(#[from] FlagError),
    /// `--size` does not fit a packet.
    #[error("error: --size '{0}' is too large")]
    Size(String),
    /// The receiver failed.
    #[error("probe recv: {0}")]
    Recv(std::io::Error),
    /// The sender refuses what it was asked to send (before sending).
    #[error("probe send: {0}")]
    Refused(String),
    /// The sender failed.
    #[error("probe send: {0}")]
    Send(std::io::Error),
    /// The report could not be encoded.
    #[error("{0}")]
    Json(serde_json::Error),
}

impl ProbeError {
    /// The exit status: 2 for a flag refused before anything is sent,
    /// else 1.
    pub fn code(&self) -> u8 {
        match self {
            ProbeError::Flag(_) | ProbeError::Size(_) | ProbeError::Refused(_) => 2,
            _ => 1,
        }
    }
}

/// `--name` or the output paths of a live mode, refused before anything
/// is made.
#[derive(Debug, thiserror::Error)]
pub enum RunFlagError {
    /// `--name` is not a name the registry takes.
    #[error("error: --name: {0}")]
    Name(pipelab_control::RegistryError),
    /// Two paths name one file.
    #[error(transparent)]
    SameFile(#[from] crate::outputs::SameFile),
}

/// Flags shared by the commands that run live packets.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Spin instead of sleeping between deadlines (lowest error; each
    /// worker keeps a core busy).
    #[arg(long)]
    busy_poll: bool,
    /// Cap on buffered frame memory (e.g. 512MB).
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "512MB",
        allow_hyphen_values = true
    )]
    mem_cap: String,
    /// Seed of every random decision: a number, or `random` (a fresh one,
    /// printed at start and in the report, so the run can be repeated).
    #[arg(long, default_value = "1", allow_negative_numbers = true, value_parser = crate::seed_arg)]
    seed: u64,
    /// Keep the emulator's threads at real-time priority (SCHED_FIFO,
    /// where allowed) until busy above 85% of a CPU. By default they are
    /// real-time only while light (below 10% of a CPU; normal above 20%),
    /// so CPU-bound processes do not delay departures. Not with
    /// --busy-poll.
    #[arg(long, conflicts_with = "busy_poll")]
    realtime: bool,
    /// Never run the emulator's threads at real-time priority (other
    /// CPU-bound processes may then delay departures by up to a
    /// scheduler tick, 4 ms on many kernels).
    #[arg(long, conflicts_with = "realtime")]
    no_realtime: bool,
    /// Print the accounting and lateness report on exit.
    #[arg(long, short)]
    verbose: bool,
    /// Write the accounting and lateness report as JSON to FILE on exit.
    #[arg(long, value_name = "FILE")]
    stats: Option<PathBuf>,
    /// The emulation's name, for `pipelab --target NAME ...` and
    /// `pipelab list` (default: shell-PID, bridge-A-B, attach-PID).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Worker threads, each owning one direction's port and pipes
    /// (default: one for every two CPUs this process may run on, at most
    /// one per direction: 1 on up to 3 CPUs, 2 from 4).
    #[arg(long, value_name = "K", value_parser = pipelab_modes::workers::parse_workers, allow_negative_numbers = true)]
    workers: Option<u16>,
    /// CPUs to pin worker i to the i-th of (e.g. 0,1 or 2-3), or `none`
    /// (default: not pinned; the scheduler wakes each on an idle CPU).
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    cpus: Option<String>,
    #[command(flatten)]
    capture: crate::capture::CaptureArgs,
    #[command(flatten)]
    series: crate::series::SeriesArgs,
}

impl RunArgs {
    /// `--name` and the files: refused before anything is made or
    /// opened. `reads`: the files the mode reads (`--config`), which no
    /// output may overwrite.
    fn check(&self, reads: &[crate::outputs::Named<'_>]) -> Result<(), RunFlagError> {
        if let Some(name) = &self.name {
            pipelab_control::registry::check_name(name).map_err(RunFlagError::Name)?;
        }
        let mut paths = vec![(
            "--stats",
            self.stats.as_deref(),
            crate::outputs::Use::Writes,
        )];
        paths.extend(self.capture.named());
        paths.extend(self.series.named());
        paths.extend_from_slice(reads);
        crate::outputs::check(&paths)?;
        Ok(())
    }

    /// The `--stats` file, opened now: a path that cannot be written is
    /// refused before the run, naming it.
    fn stats_file(
        &self,
    ) -> Result<Option<pipelab_modes::report::StatsFile>, pipelab_modes::report::StatsFileError>
    {
        self.stats
            .as_deref()
            .map(pipelab_modes::report::StatsFile::create)
            .transpose()
    }

    fn workers(&self) -> Result<pipelab_modes::workers::WorkerOptions, CpusError> {
        Ok(pipelab_modes::workers::WorkerOptions {
            workers: self.workers,
            cpus: self
                .cpus
                .as_deref()
                .map(pipelab_modes::workers::parse_cpus)
                .transpose()
                .map_err(CpusError)?,
        })
    }

    fn runner(&self) -> Result<RunnerOptions, FlagError> {
        let mem_cap = pipelab_lang::units::parse_size(&self.mem_cap)
            .map_err(|e| flag_error("mem-cap", &self.mem_cap, e))?;
        Ok(RunnerOptions {
            busy_poll: self.busy_poll,
            mem_cap,
            seed: self.seed,
            spill: false,
            priority: if self.realtime {
                Priority::Realtime
            } else if self.no_realtime {
                Priority::Normal
            } else {
                Priority::Auto
            },
        })
    }
}

/// `pipelab shell` arguments.
#[derive(Args, Debug)]
pub struct ShellArgs {
    /// Pipe parameters of both directions, e.g. 'bw 10Mbit/s delay 20ms'.
    #[arg(long, value_name = "PIPE PARAMETERS")]
    link: Option<String>,
    /// Pipe parameters from the namespace to the host (overrides --link).
    #[arg(long, value_name = "PIPE PARAMETERS")]
    uplink: Option<String>,
    /// Pipe parameters from the host to the namespace (overrides --link).
    #[arg(long, value_name = "PIPE PARAMETERS")]
    downlink: Option<String>,
    /// One pipe carrying both directions (a shared channel: a wireless
    /// link's data and ACKs contend for the same airtime), e.g.
    /// 'profile 802.11b-11 cw 16'. Excludes --link, --uplink, --downlink.
    #[arg(long, value_name = "PIPE PARAMETERS", conflicts_with_all = ["link", "uplink", "downlink"])]
    shared: Option<String>,
    /// A chain of Mahimahi shells as typed for Mahimahi, e.g. 'mm-delay
    /// 20 mm-loss uplink 0.01 mm-link up.trace down.trace' (mm-delay,
    /// mm-loss, mm-link and its queue options), made into the two
    /// directions' pipes. Excludes --link, --uplink, --downlink, --shared.
    #[arg(long, value_name = "MAHIMAHI SHELLS", conflicts_with_all = ["link", "uplink", "downlink", "shared"])]
    mm: Option<String>,
    /// A configuration of the language (pipes, schedulers, flow queues,
    /// rules, tables), applied after the link words. Rules see the
    /// namespace's traffic as `out` and traffic to it as `in`. Without
    /// link words, only the file's rules shape traffic.
    #[arg(long, short = 'c', value_name = "FILE")]
    config: Option<PathBuf>,
    /// GSO super-frames: with `on` the TAPs take checksum offload, TSO
    /// and USO, so TCP bulk crosses as frames of up to 64 KB, cut into
    /// segments wherever anything but a fixed delay acts on them; `off`
    /// moves MTU-sized frames only (the kernel segments before pipelab).
    #[arg(long, value_enum, default_value_t = OffloadArg::On)]
    offload: OffloadArg,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    spill: SpillArgs,
    /// The command to run inside (default: $SHELL).
    #[arg(last = true)]
    command: Vec<String>,
}

/// `pipelab bridge` arguments.
#[derive(Args, Debug)]
pub struct BridgeArgs {
    /// The first interface.
    pub port_a: String,
    /// The second interface.
    pub port_b: String,
    /// The configuration (pipes and rules), one command per line.
    #[arg(short = 'f', long = "file", value_name = "CONFIG")]
    pub config: PathBuf,
    /// Stop after this long (default: run until Ctrl-C).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    duration: Option<String>,
    /// How frames are moved: AF_XDP where it can be set up, else AF_PACKET
    /// (auto, with a log line saying why), or one of them forced.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// When a port's interface is deleted: keep running and forward again
    /// as soon as an interface of that name is back and up (wait), or end
    /// the run with an error naming it (exit). Frames that could not go
    /// meanwhile are counted as dropped_tx.
    #[arg(long, value_enum, default_value_t = PortLossArg::Wait)]
    port_loss: PortLossArg,
    /// GSO super-frames on AF_PACKET ports: with `on` the sockets take
    /// virtio-net headers and GRO stays on, super-frames being cut into
    /// segments wherever anything but a fixed delay acts on them; `off`
    /// turns GRO off on the ports for the run (as AF_XDP ports always do).
    #[arg(long, value_enum, default_value_t = OffloadArg::On)]
    offload: OffloadArg,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    spill: SpillArgs,
}

/// `pipelab attach` arguments.
#[derive(Args, Debug)]
pub struct AttachArgs {
    /// The interface (in the --netns namespace, if given).
    pub dev: String,
    /// Shape what leaves by DEV (the postrouting hook): the default, as
    /// `tc qdisc add dev DEV root netem` does.
    #[arg(long)]
    egress: bool,
    /// Shape what arrives on DEV (the prerouting hook), instead of
    /// egress; with --egress, both.
    #[arg(long)]
    ingress: bool,
    /// Shape both directions (as --ingress --egress): pipe 1 egress,
    /// pipe 2 ingress, each with the pipe parameters.
    #[arg(long, conflicts_with_all = ["ingress", "egress"])]
    both: bool,
    /// The network namespace DEV is in: a name of `ip netns`
    /// (/run/netns/NAME), a process id (/proc/PID/ns/net: a container's
    /// main process), or a path.
    #[arg(long, value_name = "NAME|PID|PATH")]
    netns: Option<String>,
    /// A configuration of the language, applied after the pipe
    /// parameters (or alone). Its rules see what DEV sends as `out`
    /// (`xmit DEV`) and what it receives as `in` (`recv DEV`).
    #[arg(long, short = 'c', value_name = "FILE")]
    config: Option<PathBuf>,
    /// Stop after this long (default: run until Ctrl-C or SIGTERM).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    duration: Option<String>,
    #[command(flatten)]
    run: RunArgs,
    /// Pipe parameters, after `--`: e.g. -- delay 50ms 5ms bw 10Mbit/s loss 1%.
    #[arg(last = true, value_name = "PIPE PARAMETERS")]
    words: Vec<String>,
}

/// `--offload` of `pipelab shell` and `pipelab bridge`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffloadArg {
    /// Super-frames with virtio-net headers.
    On,
    /// MTU-sized frames only.
    Off,
}

/// `--port-loss` of `pipelab bridge`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum PortLossArg {
    /// Wait for the interface to come back.
    Wait,
    /// End the run.
    Exit,
}

/// `--backend` of `pipelab bridge`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum BackendArg {
    /// AF_XDP, else AF_PACKET.
    Auto,
    /// AF_XDP (native XDP where the driver allows, else generic) or fail.
    AfXdp,
    /// AF_PACKET with a TPACKET_V2 ring.
    AfPacket,
}

/// Run `pipelab bridge` with an applied configuration; files named by
/// pipes are read with `load`.
pub fn bridge(
    a: BridgeArgs,
    cfg: &pipelab_lang::Config,
    load: pipelab_emu::FileLoader,
) -> Result<(), BridgeError> {
    a.run
        .check(&[("-f", Some(a.config.as_path()), crate::outputs::Use::Reads)])?;
    let runner = a.run.runner()?;
    let workers = a.run.workers()?;
    let stats_file = a.run.stats_file()?;
    let capture = a.run.capture.files()?;
    let series = a.run.series.options(stats_file.is_some())?;
    let duration = match &a.duration {
        Some(d) => {
            Some(pipelab_lang::units::parse_duration(d).map_err(|e| flag_error("duration", d, e))?)
        }
        None => None,
    };
    let name = a.config.display().to_string();
    // Interface ids: port A is 0, port B is 1 (what `recv`/`xmit`/`via` see).
    let spec = pipelab_modes::bridge::bridge_spec(cfg, &a.port_a, &a.port_b, &mut &*load).map_err(
        |error| BridgeError::Lower {
            name: name.clone(),
            error,
        },
    )?;
    let spill = a.spill.dirs(&spec)?;
    let compiled = pipelab_emu::Compiled::new(spec, runner.seed)
        .map_err(|error| BridgeError::Spec { name, error })?;
    // Frames of pipes marked `spill` may wait on disk: the engine holds
    // a descriptor for each the disk may hold.
    let runner = RunnerOptions {
        spill: true,
        ..runner
    };
    let opts = pipelab_modes::bridge::BridgeOptions {
        ports: [a.port_a, a.port_b],
        backend: match a.backend {
            BackendArg::Auto => pipelab_modes::bridge::Backend::Auto,
            BackendArg::AfXdp => pipelab_modes::bridge::Backend::AfXdp,
            BackendArg::AfPacket => pipelab_modes::bridge::Backend::AfPacket,
        },
        compiled,
        config: cfg.clone(),
        load,
        name: a.run.name,
        runner,
        duration,
        stats_file,
        verbose: a.run.verbose,
        port_loss: match a.port_loss {
            PortLossArg::Wait => pipelab_modes::bridge::PortLoss::Wait,
            PortLossArg::Exit => pipelab_modes::bridge::PortLoss::Exit,
        },
        offload: a.offload == OffloadArg::On,
        workers,
        capture,
        series,
        spill,
    };
    pipelab_modes::bridge::run_bridge(opts)
        .map(|_| ())
        .map_err(BridgeError::Run)
}

/// `pipelab probe` subcommands.
#[derive(Subcommand, Debug)]
pub enum ProbeCmd {
    /// Receive probe traffic and answer each sender with its report.
    Recv {
        /// Address and port to listen on.
        #[arg(long, default_value = "0.0.0.0:7777")]
        listen: SocketAddr,
        /// Exit after sending one report.
        #[arg(long)]
        once: bool,
        /// Write every packet's delay to FILE (CSV: run, seq, sent and
        /// received times in ns since the epoch, delay in ms).
        #[arg(long, value_name = "FILE")]
        series: Option<PathBuf>,
    },
    /// Send probe traffic and print the receiver's report.
    Send {
        /// The receiver, ADDR:PORT.
        to: SocketAddr,
        /// Packets per second, e.g. 1000pps or 10kpps.
        #[arg(long, default_value = "1000pps", allow_hyphen_values = true)]
        rate: String,
        /// IP packet size, e.g. 100B.
        #[arg(long, default_value = "100B", allow_hyphen_values = true)]
        size: String,
        /// How long to send, e.g. 10s.
        #[arg(long, default_value = "10s", allow_hyphen_values = true)]
        duration: String,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Send N packets per system call (sendmmsg), for rates beyond
        /// what one call per packet reaches; same average rate.
        #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true,
              value_parser = clap::value_parser!(u32).range(1..=1024))]
        burst: u32,
        /// Send from N threads (1 to 64), each its own socket and source
        /// port (its own flow, its order checked apart) and 1/N of the
        /// rate; the report sums them and lists each (--json: "threads").
        /// For rates one thread cannot offer, as through the kernel's
        /// bridge, which forwards inside the sender's own system call.
        #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true,
              value_parser = clap::value_parser!(u32).range(1..=probe::MAX_THREADS as i64))]
        threads: u32,
    },
}

/// The pipe parameters of `--WHAT TEXT` (the words after `pipe N
/// config`), errors naming the flag, with a caret under the word.
/// A preset named without a side takes `side`.
fn pipe_params(flag: &'static str, text: &str, side: Option<Side>) -> Result<PipeSpec, ShellError> {
    match side {
        Some(side) => parse_side_params(text, side),
        None => parse_pipe_params(text),
    }
    .map_err(|error| ShellError::LinkWords {
        flag,
        text: text.to_string(),
        error: Box::new(error),
    })
}

/// A flag's value refused by the unit layer.
fn flag_error(flag: &'static str, value: &str, error: UnitError) -> FlagError {
    FlagError {
        flag,
        value: value.to_string(),
        error,
    }
}

/// The shell's configuration: pipes 1 and 2 from the link words (unless
/// only `--config` is given), then the `--config` file on top.
fn shell_config(a: &ShellArgs) -> Result<pipelab_lang::Config, ShellError> {
    let words =
        a.link.is_some() || a.uplink.is_some() || a.downlink.is_some() || a.shared.is_some();
    let mut cfg = if let Some(text) = &a.mm {
        let chain = pipelab_lang::mahimahi::parse_mm_chain(text).map_err(|error| {
            ShellError::LinkWords {
                flag: "mm",
                text: text.to_string(),
                error: Box::new(error),
            }
        })?;
        link_config(chain.uplink, Some(chain.downlink)).map_err(ShellError::Link)?
    } else if words || a.config.is_none() {
        let both = a.link.as_deref().unwrap_or("");
        match a.shared.as_deref() {
            Some(text) => {
                link_config(pipe_params("shared", text, None)?, None).map_err(ShellError::Link)?
            }
            None => {
                // Errors name the flag the words came from; a preset
                // takes the side of the direction.
                let side = |flag: &'static str, text: &Option<String>, side| match text {
                    Some(t) => pipe_params(flag, t, Some(side)),
                    None => pipe_params("link", both, Some(side)),
                };
                link_config(
                    side("uplink", &a.uplink, Side::Up)?,
                    Some(side("downlink", &a.downlink, Side::Down)?),
                )
                .map_err(ShellError::Link)?
            }
        }
    } else {
        pipelab_lang::Config::new()
    };
    if let Some(path) = &a.config {
        let name = path.display().to_string();
        let text = crate::read_text(path)?;
        if let Err(errors) = cfg.apply_script(&text) {
            return Err(ConfigFileError::script(name, errors, text).into());
        }
    }
    Ok(cfg)
}

/// Run `pipelab shell`; returns the command's exit code.
pub fn shell(a: ShellArgs) -> Result<i32, ShellError> {
    a.run
        .check(&[("--config", a.config.as_deref(), crate::outputs::Use::Reads)])?;
    let config = shell_config(&a)?;
    let runner = a.run.runner()?;
    let base = a
        .config
        .as_ref()
        .and_then(|c| c.parent().map(std::path::Path::to_path_buf));
    let mut load = crate::file_loader(base);
    let compiled = pipelab_modes::shell::compile(&config, &mut load, runner.seed)?;
    let spill = a.spill.dirs(compiled.spec())?;
    // Frames of pipes marked `spill` may wait on disk: the engine holds
    // a descriptor for each the disk may hold.
    let runner = RunnerOptions {
        spill: true,
        ..runner
    };
    let workers = a.run.workers()?;
    let stats_file = a.run.stats_file()?;
    let capture = a.run.capture.files()?;
    let series = a.run.series.options(stats_file.is_some())?;
    let opts = ShellOptions {
        config,
        compiled,
        load,
        runner,
        command: a.command,
        verbose: a.run.verbose,
        stats_file,
        workers,
        name: a.run.name,
        offload: a.offload == OffloadArg::On,
        capture,
        series,
        spill,
    };
    run_shell(opts).map_err(ShellError::Run)
}

/// `pipelab attach`'s configuration: pipes 1 (egress) and 2 (ingress)
/// from the words after `--` (for the chosen directions), then the
/// `--config` file on top.
fn attach_config(
    a: &AttachArgs,
    ingress: bool,
    egress: bool,
) -> Result<pipelab_lang::Config, AttachCliError> {
    if a.words.is_empty() && a.config.is_none() {
        return Err(AttachCliError::Nothing);
    }
    let mut cfg = if a.words.is_empty() {
        pipelab_lang::Config::new()
    } else {
        let text = a.words.join(" ");
        // What the host sends goes up, what it receives comes down (a
        // preset's sides).
        let spec = |side| {
            parse_side_params(&text, side).map_err(|error| AttachCliError::Words {
                text: text.clone(),
                error: Box::new(error),
            })
        };
        pipelab_modes::attach::attach_config(
            &a.dev,
            egress.then(|| spec(Side::Up)).transpose()?,
            ingress.then(|| spec(Side::Down)).transpose()?,
        )
        .map_err(AttachCliError::Link)?
    };
    if let Some(path) = &a.config {
        let name = path.display().to_string();
        let text = crate::read_text(path)?;
        if let Err(errors) = cfg.apply_script(&text) {
            return Err(ConfigFileError::script(name, errors, text).into());
        }
    }
    Ok(cfg)
}

/// Run `pipelab attach` until Ctrl-C, SIGTERM or `--duration`.
pub fn attach(a: AttachArgs) -> Result<(), AttachCliError> {
    let (ingress, egress) = match (a.both, a.ingress, a.egress) {
        (true, _, _) => (true, true),
        (false, false, false) => (false, true),
        (false, i, e) => (i, e),
    };
    if a.run.workers.is_some_and(|k| k > 1) {
        return Err(AttachCliError::Workers("workers"));
    }
    if a.run.cpus.is_some() {
        return Err(AttachCliError::Workers("cpus"));
    }
    a.run
        .check(&[("--config", a.config.as_deref(), crate::outputs::Use::Reads)])?;
    let config = attach_config(&a, ingress, egress)?;
    if config.pipes.values().any(|p| p.spill) {
        eprintln!(
            "note: `spill` has no effect in pipelab attach: the kernel holds each queued packet until its verdict, so no memory would be freed"
        );
    }
    let mut runner = a.run.runner()?;
    // As host mode's: releases at real-time priority (best effort),
    // unless the thread spins or --no-realtime says not.
    if runner.priority == Priority::Auto {
        runner.priority = Priority::Realtime;
    }
    let duration = match &a.duration {
        Some(d) => {
            Some(pipelab_lang::units::parse_duration(d).map_err(|e| flag_error("duration", d, e))?)
        }
        None => None,
    };
    let stats_file = a.run.stats_file()?;
    // As host mode records: each direction is a port, named by its hook.
    let recording = pipelab_modes::host::Recording {
        capture: a.run.capture.files()?,
        series: a.run.series.options(stats_file.is_some())?,
        who: "pipelab attach".into(),
    };
    let base = a
        .config
        .as_ref()
        .and_then(|c| c.parent().map(std::path::Path::to_path_buf));
    let opts = pipelab_modes::attach::AttachOptions {
        dev: a.dev,
        netns: a
            .netns
            .as_deref()
            .map(pipelab_modes::attach::NetnsRef::parse),
        ingress,
        egress,
        config,
        load: crate::file_loader(base),
        runner,
        name: a.run.name,
        duration,
        stats_file,
        verbose: a.run.verbose,
        recording,
    };
    pipelab_modes::attach::run_attach(opts)?;
    Ok(())
}

/// Run a probe command.
pub fn probe(cmd: ProbeCmd) -> Result<(), ProbeError> {
    match cmd {
        ProbeCmd::Recv {
            listen,
            once,
            series,
        } => probe::receive(listen, once, series.as_deref()).map_err(ProbeError::Recv),
        ProbeCmd::Send {
            to,
            rate,
            size,
            duration,
            json,
            burst,
            threads,
        } => {
            let r = pipelab_lang::units::parse_packet_rate(&rate)
                .map_err(|e| flag_error("rate", &rate, e))?;
            let s =
                pipelab_lang::units::parse_size(&size).map_err(|e| flag_error("size", &size, e))?;
            let d = pipelab_lang::units::parse_duration(&duration)
                .map_err(|e| flag_error("duration", &duration, e))?;
            let opts = SendOptions {
                rate_pps: r.millipps() as f64 / 1000.0,
                size: u32::try_from(s).map_err(|_| ProbeError::Size(size.clone()))?,
                duration: std::time::Duration::from_nanos(d.as_nanos()),
            };
            probe::send_count(&opts, threads).map_err(ProbeError::Refused)?;
            let report = probe::send_threads(to, opts, burst, threads).map_err(ProbeError::Send)?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&report).map_err(ProbeError::Json)?
                );
                for w in [report.sender_behind(), report.receiver_behind()]
                    .into_iter()
                    .flatten()
                {
                    eprintln!("pipelab probe: {w}");
                }
            } else {
                print!("{}", report.to_table());
            }
            Ok(())
        }
    }
}
