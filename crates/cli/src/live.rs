//! The live commands: `pipelab shell` and `pipelab probe`.

use clap::{Args, Subcommand};
use pipelab_dataplane::probe::{self, SendOptions};
use pipelab_dataplane::runner::RunnerOptions;
use pipelab_dataplane::shell::{run_shell, ShellOptions};
use pipelab_engine::PipeConfig;
use pipelab_lang::parse_pipe_params;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Flags shared by the commands that run live packets.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Spin instead of sleeping between deadlines (lowest error, one core).
    #[arg(long)]
    busy_poll: bool,
    /// Cap on buffered frame memory (e.g. 512MB).
    #[arg(long, value_name = "SIZE", default_value = "512MB")]
    mem_cap: String,
    /// Seed of every random decision.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run the emulator's thread at real-time priority (SCHED_FIFO, where
    /// allowed), so CPU-bound processes do not delay departures; it steps
    /// down while busy above 85%. Not with --busy-poll.
    #[arg(long)]
    realtime: bool,
    /// Print the accounting and lateness report on exit.
    #[arg(long, short)]
    verbose: bool,
    /// Write the accounting and lateness report as JSON to FILE on exit.
    #[arg(long, value_name = "FILE")]
    stats: Option<PathBuf>,
}

impl RunArgs {
    fn runner(&self) -> Result<RunnerOptions, String> {
        let mem_cap = pipelab_lang::units::parse_size(&self.mem_cap)
            .map_err(|e| format!("--mem-cap '{}': {}", self.mem_cap, e.message))?;
        Ok(RunnerOptions {
            busy_poll: self.busy_poll,
            mem_cap,
            seed: self.seed,
            realtime: self.realtime,
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
    #[command(flatten)]
    run: RunArgs,
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
    #[arg(long, value_name = "DURATION")]
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
    #[command(flatten)]
    run: RunArgs,
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

/// Why `pipelab bridge` could not run.
#[derive(Debug)]
pub enum BridgeError {
    /// The configuration cannot be built into an engine (a usage error).
    Config(String),
    /// A flag is invalid or the run failed.
    Run(String),
}

/// Run `pipelab bridge` with an applied configuration; files named by
/// pipes are read with `load`.
pub fn bridge(
    a: BridgeArgs,
    cfg: &pipelab_lang::Config,
    load: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<(), BridgeError> {
    let runner = a.run.runner().map_err(BridgeError::Run)?;
    let duration = match &a.duration {
        Some(d) => Some(
            pipelab_lang::units::parse_duration(d)
                .map_err(|e| BridgeError::Run(format!("--duration '{d}': {}", e.message)))?,
        ),
        None => None,
    };
    let built = pipelab_sim::build_engine(cfg, runner.engine_options(), load)
        .map_err(|e| BridgeError::Config(e.to_string()))?;
    // Interface ids: port A is 0, port B is 1 (what `recv`/`xmit`/`via` see).
    let mut ctx = pipelab_classify::Context {
        tables: cfg.tables.clone(),
        ..Default::default()
    };
    ctx.ifaces.insert(a.port_a.clone(), 0);
    ctx.ifaces.insert(a.port_b.clone(), 1);
    let classifier = pipelab_classify::Classifier::with_context(
        cfg.rules.iter().map(|(n, r)| (*n, r)),
        &ctx,
        a.run.seed,
    );
    let opts = pipelab_dataplane::bridge::BridgeOptions {
        ports: [a.port_a, a.port_b],
        backend: match a.backend {
            BackendArg::Auto => pipelab_dataplane::bridge::Backend::Auto,
            BackendArg::AfXdp => pipelab_dataplane::bridge::Backend::AfXdp,
            BackendArg::AfPacket => pipelab_dataplane::bridge::Backend::AfPacket,
        },
        built,
        classifier,
        runner,
        duration,
        stats_file: a.run.stats,
        verbose: a.run.verbose,
        port_loss: match a.port_loss {
            PortLossArg::Wait => pipelab_dataplane::bridge::PortLoss::Wait,
            PortLossArg::Exit => pipelab_dataplane::bridge::PortLoss::Exit,
        },
    };
    pipelab_dataplane::bridge::run_bridge(opts)
        .map(|_| ())
        .map_err(|e| BridgeError::Run(format!("pipelab bridge: {e}")))
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
    },
    /// Send probe traffic and print the receiver's report.
    Send {
        /// The receiver, ADDR:PORT.
        to: SocketAddr,
        /// Packets per second, e.g. 1000pps or 10kpps.
        #[arg(long, default_value = "1000pps")]
        rate: String,
        /// IP packet size, e.g. 100B.
        #[arg(long, default_value = "100B")]
        size: String,
        /// How long to send, e.g. 10s.
        #[arg(long, default_value = "10s")]
        duration: String,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Send N packets per system call (sendmmsg), for rates beyond
        /// what one call per packet reaches; same average rate.
        #[arg(long, value_name = "N", default_value_t = 1,
              value_parser = clap::value_parser!(u32).range(1..=1024))]
        burst: u32,
    },
}

/// The pipe configured by the words of `--{what}` (`bw 10Mbit/s delay
/// 20ms`, the parameters of `pipe N config`).
fn pipe_config(what: &str, text: &str) -> Result<PipeConfig, String> {
    match parse_pipe_params(text) {
        // A shell's pipes are plain pipes: a mask would be silently lost.
        Ok(spec) if spec.mask.is_some() || spec.buckets.is_some() => Err(format!(
            "--{what} '{text}': 'mask' and 'buckets' are not supported by pipelab shell yet (use a configuration with pipelab bridge)"
        )),
        Ok(spec) => spec
            .to_config_with(&mut |path: &str| {
                std::fs::read_to_string(path).map_err(|e| e.to_string())
            })
            .map_err(|e| format!("--{what} '{text}': {e}")),
        Err(e) => Err(format!("--{what}: {}", crate::caret(text, &e))),
    }
}

/// Run `pipelab shell`; returns the command's exit code.
pub fn shell(a: ShellArgs) -> Result<i32, String> {
    let both = a.link.as_deref().unwrap_or("");
    let (uplink, downlink) = match a.shared.as_deref() {
        Some(text) => {
            let c = pipe_config("shared", text)?;
            (c.clone(), c)
        }
        None => {
            // Errors name the flag the words came from.
            let side = |flag: &'static str, text: &Option<String>| match text {
                Some(t) => pipe_config(flag, t),
                None => pipe_config("link", both),
            };
            (side("uplink", &a.uplink)?, side("downlink", &a.downlink)?)
        }
    };
    let runner = a.run.runner()?;
    let opts = ShellOptions {
        shared: a.shared.is_some(),
        uplink,
        downlink,
        runner,
        command: a.command,
        verbose: a.run.verbose,
        stats_file: a.run.stats,
    };
    run_shell(opts).map_err(|e| format!("pipelab shell: {e}"))
}

/// Run a probe command.
pub fn probe(cmd: ProbeCmd) -> Result<(), String> {
    match cmd {
        ProbeCmd::Recv { listen, once } => {
            probe::receive(listen, once).map_err(|e| format!("probe recv: {e}"))
        }
        ProbeCmd::Send {
            to,
            rate,
            size,
            duration,
            json,
            burst,
        } => {
            let r = pipelab_lang::units::parse_packet_rate(&rate)
                .map_err(|e| format!("--rate '{rate}': {}", e.message))?;
            let s = pipelab_lang::units::parse_size(&size)
                .map_err(|e| format!("--size '{size}': {}", e.message))?;
            let d = pipelab_lang::units::parse_duration(&duration)
                .map_err(|e| format!("--duration '{duration}': {}", e.message))?;
            let opts = SendOptions {
                rate_pps: r.millipps() as f64 / 1000.0,
                size: u32::try_from(s).map_err(|_| format!("--size '{size}' is too large"))?,
                duration: std::time::Duration::from_nanos(d.as_nanos()),
            };
            let report =
                probe::send_burst(to, opts, burst).map_err(|e| format!("probe send: {e}"))?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
                );
            } else {
                print!("{}", report.to_table());
            }
            Ok(())
        }
    }
}
