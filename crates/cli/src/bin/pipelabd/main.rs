//! `pipelabd`: the persistent host-mode emulation. It serves the control
//! protocol of `pipelab-control` on its socket (`--socket`) and under its
//! name in the registry of running emulations (`--name`, default
//! `pipelabd`), with per-user blocks and a journal. See the README's "The
//! daemon" section.

#![forbid(unsafe_code)]

mod host;

// The recording flags are `pipelab`'s (one parser per value), from the
// library both binaries link.
use pipelab_cli::{capture, daemon_args, outputs, series};

use std::process::ExitCode;

use clap::Parser;
use daemon_args::{Args, PlaneKind};
use nix::sys::signal::SigSet;
use pipelab_control::journal::Journal;
use pipelab_control::plane::{ControlOnly, Plane};
use pipelab_control::registry::{EmulationInfo, Registry, RegistryError};
use pipelab_control::server::{bind, Access, Server, ServerHandle};
use pipelab_io::runner::RunnerOptions;
use pipelab_lang::IpNet;
use pipelab_modes::host::{HostOptions, Recording};

use host::{Host, HostError};

/// Why pipelabd could not start, or did not stop cleanly.
#[derive(Debug, thiserror::Error)]
enum DaemonError {
    /// `--name` is not a name the registry takes.
    #[error("--name: {0}")]
    Name(RegistryError),
    /// A `--scope` network is not one.
    #[error(transparent)]
    Scope(#[from] ScopeError),
    /// `--scope` with `--plane none`.
    #[error("--scope {0}: a scope limits host mode's traffic; --plane none has none")]
    ScopeWithoutHost(String),
    /// A recording flag with `--plane none`.
    #[error("--{0}: host mode records what crosses it; --plane none has no packets")]
    RecordsWithoutHost(&'static str),
    /// `--pcap`, `--events` or `--events-max` cannot be used.
    #[error("{}", .0.to_string().trim_start_matches("error: "))]
    Capture(#[from] capture::CaptureError),
    /// `--interval` or `--series` cannot be used.
    #[error(transparent)]
    Series(#[from] series::SeriesError),
    /// Two of the files it writes are one.
    #[error("{}", .0.to_string().trim_start_matches("error: "))]
    SameFile(#[from] outputs::SameFile),
    /// The signals could not be blocked.
    #[error("cannot block signals: {0}")]
    Signals(nix::errno::Errno),
    /// The state directory cannot be owned.
    #[error(transparent)]
    Journal(#[from] pipelab_control::journal::JournalError),
    /// The socket cannot be bound.
    #[error(transparent)]
    Bind(#[from] pipelab_control::BindError),
    /// The name cannot be registered.
    #[error(transparent)]
    Registry(RegistryError),
    /// The privileges cannot be dropped.
    #[error(transparent)]
    Privileges(#[from] PrivilegeError),
    /// Host mode cannot start.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The server could not start or stop.
    #[error(transparent)]
    Serve(#[from] pipelab_control::ServeError),
}

impl DaemonError {
    /// The exit status: 2 for a flag refused before anything is made
    /// (README: "Exit status"), 1 for what failed while starting or
    /// running.
    fn code(&self) -> u8 {
        match self {
            DaemonError::Name(_)
            | DaemonError::Scope(_)
            | DaemonError::ScopeWithoutHost(_)
            | DaemonError::RecordsWithoutHost(_)
            | DaemonError::Capture(_)
            | DaemonError::Series(_)
            | DaemonError::SameFile(_) => 2,
            _ => 1,
        }
    }
}

/// A `--scope` value that is not a network.
#[derive(Debug, thiserror::Error)]
enum ScopeError {
    /// The address part is not an IP address.
    #[error("--scope {value}: '{addr}' is not an IP address")]
    Address {
        /// The value given.
        value: String,
        /// Its address part.
        addr: String,
    },
    /// The mask length is not one for the address.
    #[error("--scope {value}: '{mask}' is not a valid mask length")]
    Mask {
        /// The value given.
        value: String,
        /// Its mask part.
        mask: String,
    },
}

/// Why the privileges could not be dropped.
#[derive(Debug, thiserror::Error)]
enum PrivilegeError {
    /// A capability set could not be changed.
    #[error("cannot drop privileges: {0}")]
    Caps(caps::errors::CapsError),
    /// `no_new_privs` could not be set.
    #[error("cannot set no_new_privs: {0}")]
    NoNewPrivs(nix::errno::Errno),
}

fn parse_net(s: &str) -> Result<IpNet, ScopeError> {
    let (a, p) = match s.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (s, None),
    };
    let addr: std::net::IpAddr = a.parse().map_err(|_| ScopeError::Address {
        value: s.to_string(),
        addr: a.to_string(),
    })?;
    match p {
        None => Ok(IpNet::host(addr)),
        Some(p) => p
            .parse::<u8>()
            .ok()
            .and_then(|p| IpNet::new(addr, p))
            .ok_or_else(|| ScopeError::Mask {
                value: s.to_string(),
                mask: p.to_string(),
            }),
    }
}

/// Keeps only CAP_NET_ADMIN and CAP_NET_RAW (effective, permitted and
/// bounding sets; nothing inheritable or ambient) and sets no_new_privs, so
/// neither this process nor anything it runs (`nft`) can regain more.
fn drop_privileges() -> Result<(), PrivilegeError> {
    use caps::{CapSet, Capability, CapsHashSet};
    let keep: CapsHashSet = [Capability::CAP_NET_ADMIN, Capability::CAP_NET_RAW]
        .into_iter()
        .collect();
    if !nix::unistd::geteuid().is_root() {
        // Started by a user (e.g. `--plane none` for trying things out):
        // nothing to drop.
        return nix::sys::prctl::set_no_new_privs().map_err(PrivilegeError::NoNewPrivs);
    }
    let err = PrivilegeError::Caps;
    for c in caps::all() {
        if !keep.contains(&c) && caps::has_cap(None, CapSet::Bounding, c).unwrap_or(false) {
            caps::drop(None, CapSet::Bounding, c).map_err(err)?;
        }
    }
    caps::clear(None, CapSet::Ambient).map_err(err)?;
    caps::clear(None, CapSet::Inheritable).map_err(err)?;
    caps::set(None, CapSet::Effective, &keep).map_err(err)?;
    caps::set(None, CapSet::Permitted, &keep).map_err(err)?;
    nix::sys::prctl::set_no_new_privs().map_err(PrivilegeError::NoNewPrivs)
}

fn run(args: Args) -> Result<(), DaemonError> {
    // Every flag's value is checked before anything is made (state
    // directory, socket, registration).
    pipelab_control::registry::check_name(&args.name).map_err(DaemonError::Name)?;
    let scope = args
        .scope
        .iter()
        .map(|s| parse_net(s))
        .collect::<Result<Vec<_>, _>>()?;
    if !scope.is_empty() && matches!(args.plane, PlaneKind::None) {
        return Err(DaemonError::ScopeWithoutHost(args.scope.join(" --scope ")));
    }
    let records = [
        ("pcap", args.capture.pcap.is_some()),
        ("events", args.capture.events.is_some()),
        ("events-max", args.capture.events_max.is_some()),
        ("interval", args.series.interval.is_some()),
        ("series", args.series.series.is_some()),
        ("flow-series", args.series.flow_series.is_some()),
    ];
    if let (PlaneKind::None, Some((flag, _))) = (args.plane, records.iter().find(|r| r.1)) {
        return Err(DaemonError::RecordsWithoutHost(flag));
    }
    args.capture.events_max()?;
    let mut paths = vec![(
        "--socket",
        Some(args.socket.as_path()),
        outputs::Use::Writes,
    )];
    paths.extend(args.capture.named());
    paths.extend(args.series.named());
    outputs::check(&paths)?;
    // The files, made now with the daemon's privileges (a path that
    // cannot be written is refused before anything else is made); the
    // series are read with `pipelab stats`, so --interval alone is fine.
    let capture = args.capture.files()?;
    let mut series = args.series.options(true)?;
    if let Some(s) = series.as_mut() {
        s.latest = Some(host::SERIES_WINDOW);
    }
    // Signals are taken by the main thread (below); block them everywhere
    // before any thread starts.
    let mut signals = SigSet::empty();
    for s in pipelab_io::signals::STOP {
        signals.add(s);
    }
    signals.thread_block().map_err(DaemonError::Signals)?;
    let journal = Journal::open(&args.state_dir)?;
    // The sockets are made (and given to their group) while all
    // privileges are there; then only CAP_NET_ADMIN and CAP_NET_RAW stay,
    // before any thread starts (capabilities are per thread and
    // inherited).
    let (listener, warning) = bind(&args.socket, &args.group)?;
    let socket = args.socket.clone();
    let fail = |e: DaemonError| {
        let _ = std::fs::remove_file(&socket);
        e
    };
    let mode = match args.plane {
        PlaneKind::Host => "host",
        PlaneKind::None => "none",
    };
    let mut info = EmulationInfo::new(&args.name, mode);
    info.summary = format!(
        "socket {}, journal {}",
        args.socket.display(),
        args.state_dir.display()
    );
    let registry = Registry::new().with_group(&args.group);
    let registration = match registry.register(info) {
        Ok(r) => Some(r),
        // Started by a user without /run/pipelab: it serves its socket
        // all the same.
        Err(e @ RegistryError::Io { .. }) if !nix::unistd::geteuid().is_root() => {
            eprintln!("pipelabd: warning: not registered as {}: {e}", args.name);
            None
        }
        Err(e) => return Err(fail(DaemonError::Registry(e))),
    };
    drop_privileges().map_err(|e| fail(e.into()))?;
    let plane: Box<dyn Plane> = match args.plane {
        PlaneKind::None => Box::new(ControlOnly::default()),
        PlaneKind::Host => {
            let opts = HostOptions {
                queue_num: args.queue_num,
                runner: RunnerOptions {
                    priority: pipelab_io::runner::Priority::Realtime,
                    seed: args.seed,
                    ..RunnerOptions::default()
                },
                table: args.table.clone(),
                ..HostOptions::default()
            };
            let rec = Recording {
                capture,
                series,
                who: "pipelabd".into(),
            };
            let outputs = host::Outputs {
                pcap: args.capture.pcap.clone(),
                events: args.capture.events.clone(),
                series: args.series.series.clone(),
            };
            Box::new(Host::start(opts, &scope, rec, outputs).map_err(|e| fail(e.into()))?)
        }
    };
    let server = Server::new(
        &args.name,
        plane,
        pipelab_lang::Config::new(),
        Access::Blocks,
        Some(journal),
    )
    .map_err(|e| fail(e.into()))?;
    let restore_ms = server.restore_ms();
    // What did not load is said loudly, each with who, where and why;
    // the rest runs.
    for n in server.notices() {
        eprintln!("pipelabd: warning: {n}");
    }
    let mut handle = ServerHandle::new(server);
    handle.listen(listener).map_err(|e| fail(e.into()))?;
    if let Some(r) = registration {
        handle.attach(r).map_err(|e| fail(e.into()))?;
    }
    if let Some(w) = warning {
        eprintln!("pipelabd: warning: {w}");
    }
    eprintln!(
        "pipelabd: listening on {} as {} (plane {mode}, seed {}, journal restored in {restore_ms:.1} ms)",
        args.socket.display(),
        args.name,
        args.seed,
    );
    let sig = signals.wait();
    // Stop serving, remove the registration, stop the plane (host mode
    // removes its table), then the socket.
    let stopped = handle.close();
    let _ = std::fs::remove_file(&args.socket);
    match (sig, stopped) {
        (_, Err(e)) => Err(e.into()),
        (Ok(s), Ok(())) => {
            eprintln!("pipelabd: {s}: stopped");
            Ok(())
        }
        (Err(_), Ok(())) => Ok(()),
    }
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pipelabd: error: {e}");
            ExitCode::from(e.code())
        }
    }
}
