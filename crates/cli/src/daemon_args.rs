//! `pipelabd`'s command line, apart from its `main` so that `pipelab
//! man` writes its manual page from the same definitions.

use clap::{Parser, ValueEnum};
use pipelab_control::{DEFAULT_GROUP, DEFAULT_SOCKET, DEFAULT_STATE_DIR};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum PlaneKind {
    /// This host's own traffic, through the netfilter queue (fail-closed).
    Host,
    /// No packets: configurations are checked, kept and journaled.
    None,
}

/// pipelabd: owns the emulator's data plane and serves `pipelab` commands
/// on a Unix socket.
#[derive(Parser, Debug)]
#[command(
    name = "pipelabd",
    version,
    long_about = None,
    after_help = "Host mode records what crosses it as `pipelab shell` does (--pcap, --events, \
--interval, --series): each direction is a port named by its netfilter hook, `output` (what \
this host sends) and `input` (what it receives); `pipelab stats` carries the series \
(`timeseries`, each pipe's latest 3000 intervals) while it runs. The files are created (mode \
0644) before it serves, and flushed and closed when it stops (SIGTERM, SIGINT)."
)]
pub struct Args {
    /// The control socket (mode 0660, group --group).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_SOCKET)]
    pub socket: PathBuf,
    /// Where the journal (state.json) is kept.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_STATE_DIR)]
    pub state_dir: PathBuf,
    /// The group whose members may use the socket.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_GROUP)]
    pub group: String,
    /// The name it registers under (`pipelab list`, `pipelab --target
    /// NAME`), in /run/pipelab/emu ($PIPELAB_RUN_DIR).
    #[arg(long, value_name = "NAME", default_value = "pipelabd")]
    pub name: String,
    /// The data plane.
    #[arg(long, value_enum, default_value = "host")]
    pub plane: PlaneKind,
    /// Host mode: the netfilter queue number.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 7400,
        allow_negative_numbers = true
    )]
    pub queue_num: u16,
    /// Host mode: the nftables table (family inet) the daemon owns.
    #[arg(long, value_name = "NAME", default_value = "pipelab_host")]
    pub table: String,
    /// Host mode: only traffic with peers in this network goes through the
    /// emulator (repeatable; default: all of the host's IP traffic).
    #[arg(long, value_name = "NET")]
    pub scope: Vec<String>,
    /// Seed of every random decision of the data plane (loss, delay
    /// draws, `prob` rules): a number, or `random` (a fresh one, printed at
    /// start and in `pipelab stats`, so a run can be repeated).
    #[arg(long, default_value = "1", allow_negative_numbers = true, value_parser = crate::seed::seed_arg)]
    pub seed: u64,
    // Host mode: what crosses the emulator, as `pipelab shell` records
    // it; a direction is a port, named by its hook ("output": what the
    // host sends, "input": what it receives). The files are created by
    // the daemon (mode 0644) before it starts and closed at its stop.
    #[command(flatten)]
    pub capture: crate::capture::CaptureArgs,
    // Host mode: every pipe's counters over time, in `pipelab stats`
    // (`timeseries`: each pipe's latest 3000 intervals) and the --series
    // file (all of them).
    #[command(flatten)]
    pub series: crate::series::SeriesArgs,
}
