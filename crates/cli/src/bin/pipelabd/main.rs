//! `pipelabd`: the pipelab daemon. See the crate documentation and the
//! README's "The daemon" section.

#![forbid(unsafe_code)]

mod host;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, ValueEnum};
use nix::sys::signal::{SigSet, Signal};
use pipelab_control::journal::Journal;
use pipelab_control::plane::{ControlOnly, Plane};
use pipelab_control::server::{bind, Daemon};
use pipelab_control::{DEFAULT_GROUP, DEFAULT_SOCKET, DEFAULT_STATE_DIR};
use pipelab_io::runner::RunnerOptions;
use pipelab_lang::IpNet;
use pipelab_modes::host::HostOptions;

use host::Host;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum PlaneKind {
    /// This host's own traffic, through the netfilter queue (fail-closed).
    Host,
    /// No packets: configurations are checked, kept and journaled.
    None,
}

/// pipelabd: owns the emulator's data plane and serves `pipelab` commands
/// on a Unix socket.
#[derive(Parser, Debug)]
#[command(name = "pipelabd", version, long_about = None)]
struct Args {
    /// The control socket (mode 0660, group --group).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_SOCKET)]
    socket: PathBuf,
    /// Where the journal (state.json) is kept.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_STATE_DIR)]
    state_dir: PathBuf,
    /// The group whose members may use the socket.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_GROUP)]
    group: String,
    /// The data plane.
    #[arg(long, value_enum, default_value = "host")]
    plane: PlaneKind,
    /// Host mode: the netfilter queue number.
    #[arg(long, value_name = "N", default_value_t = 7400)]
    queue_num: u16,
    /// Host mode: the nftables table (family inet) the daemon owns.
    #[arg(long, value_name = "NAME", default_value = "pipelab_host")]
    table: String,
    /// Host mode: only traffic with peers in this network goes through the
    /// emulator (repeatable; default: all of the host's IP traffic).
    #[arg(long, value_name = "NET")]
    scope: Vec<String>,
}

fn parse_net(s: &str) -> Result<IpNet, String> {
    let (a, p) = match s.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (s, None),
    };
    let addr: std::net::IpAddr = a
        .parse()
        .map_err(|_| format!("--scope {s}: '{a}' is not an IP address"))?;
    match p {
        None => Ok(IpNet::host(addr)),
        Some(p) => p
            .parse::<u8>()
            .ok()
            .and_then(|p| IpNet::new(addr, p))
            .ok_or_else(|| format!("--scope {s}: '{p}' is not a valid mask length")),
    }
}

/// Keeps only CAP_NET_ADMIN and CAP_NET_RAW (effective, permitted and
/// bounding sets; nothing inheritable or ambient) and sets no_new_privs, so
/// neither this process nor anything it runs (`nft`) can regain more.
fn drop_privileges() -> Result<(), String> {
    use caps::{CapSet, Capability, CapsHashSet};
    let keep: CapsHashSet = [Capability::CAP_NET_ADMIN, Capability::CAP_NET_RAW]
        .into_iter()
        .collect();
    if !nix::unistd::geteuid().is_root() {
        // Started by a user (e.g. `--plane none` for trying things out):
        // nothing to drop.
        return nix::sys::prctl::set_no_new_privs()
            .map_err(|e| format!("cannot set no_new_privs: {e}"));
    }
    let err = |e: caps::errors::CapsError| format!("cannot drop privileges: {e}");
    for c in caps::all() {
        if !keep.contains(&c) && caps::has_cap(None, CapSet::Bounding, c).unwrap_or(false) {
            caps::drop(None, CapSet::Bounding, c).map_err(err)?;
        }
    }
    caps::clear(None, CapSet::Ambient).map_err(err)?;
    caps::clear(None, CapSet::Inheritable).map_err(err)?;
    caps::set(None, CapSet::Effective, &keep).map_err(err)?;
    caps::set(None, CapSet::Permitted, &keep).map_err(err)?;
    nix::sys::prctl::set_no_new_privs().map_err(|e| format!("cannot set no_new_privs: {e}"))
}

fn run(args: Args) -> Result<(), String> {
    // Signals are taken by one thread (below); block them everywhere
    // before any thread starts.
    let mut signals = SigSet::empty();
    for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        signals.add(s);
    }
    signals
        .thread_block()
        .map_err(|e| format!("cannot block signals: {e}"))?;
    let journal = Journal::open(&args.state_dir)?;
    // The socket is made (and given to its group) while all privileges
    // are there; then only CAP_NET_ADMIN and CAP_NET_RAW stay, before any
    // thread starts (capabilities are per thread and inherited).
    let (listener, warning) = bind(&args.socket, &args.group)?;
    let socket = args.socket.clone();
    let fail = |e: String| {
        let _ = std::fs::remove_file(&socket);
        e
    };
    drop_privileges().map_err(fail)?;
    let plane: Box<dyn Plane> = match args.plane {
        PlaneKind::None => Box::new(ControlOnly::default()),
        PlaneKind::Host => {
            let scope = args
                .scope
                .iter()
                .map(|s| parse_net(s))
                .collect::<Result<Vec<_>, _>>()
                .map_err(fail)?;
            let opts = HostOptions {
                queue_num: args.queue_num,
                runner: RunnerOptions {
                    realtime: true,
                    ..RunnerOptions::default()
                },
                table: args.table.clone(),
            };
            Box::new(Host::start(opts, &scope).map_err(fail)?)
        }
    };
    let daemon = Arc::new(Daemon::start(journal, plane).map_err(fail)?);
    if let Some(w) = warning {
        eprintln!("pipelabd: warning: {w}");
    }
    eprintln!(
        "pipelabd: listening on {} (plane {}, journal restored in {:.1} ms)",
        args.socket.display(),
        daemon.plane_name(),
        daemon.restore_ms()
    );
    let d = Arc::clone(&daemon);
    let socket = args.socket.clone();
    std::thread::Builder::new()
        .name("pipelabd-signals".into())
        .spawn(move || {
            let sig = signals.wait();
            let stopped = d.stop();
            let _ = std::fs::remove_file(&socket);
            match (sig, stopped) {
                (_, Err(e)) => {
                    eprintln!("pipelabd: {e}");
                    std::process::exit(1)
                }
                (Ok(s), Ok(())) => {
                    eprintln!("pipelabd: {s}: stopped");
                    std::process::exit(0)
                }
                (Err(_), Ok(())) => std::process::exit(0),
            }
        })
        .map_err(|e| format!("cannot start the signal thread: {e}"))?;
    daemon.serve(listener);
    Ok(())
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pipelabd: error: {e}");
            ExitCode::FAILURE
        }
    }
}
