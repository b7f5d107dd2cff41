//! `pipelab shell`: run a command in a fresh network namespace whose
//! traffic crosses an emulated link to the host (as Mahimahi's shells do,
//! with every pipe option).
//!
//! ```text
//!  namespace                         host
//!  CMD ── eth0 (TAP) ══ pipelab ══ TAP plo<pid> ── forwarding, NAT ── world
//!          inside          uplink pipe →
//!                        ← downlink pipe
//! ```
//!
//! Both TAP descriptors are held by pipelab. Port 0 is the namespace's
//! side (`inside`, its `eth0`), port 1 the host's (`outside`); frames
//! leave by the other port. The rules see frames from the namespace as
//! `out` (it sends them) and frames to it as `in`, received on `inside`
//! or `outside` (`recv`, `xmit`, `via` also know the devices' names). The
//! `--link`, `--uplink` and `--downlink` words make pipe 1 (namespace →
//! host) and pipe 2 (host → namespace) and two rules sending to them
//! ([`link_config`]); a `--config` file may add to them or replace them
//! with any configuration of the language. The addresses are a /24 in
//! 100.64.0.0/10, reserved in the host ledger ([`crate::ledger`]): the one
//! the process id names unless a running pipelab holds it or it overlaps
//! an address of the host, else the next free one; so shells nest (an
//! inner shell's "host" is the outer namespace) and never share a subnet.
//! The link is dual-stack: a /64 of the host's ULA /48
//! ([`crate::ledger::shell_range6`]: `fd00::/8` and a global ID stable for
//! the host), reserved the same way (its subnet ID is the /24's index
//! when free), `::1` outside (`PIPELAB_OUTSIDE6`) and `::2` inside, with
//! a default route `::/0`. Both sides' addresses are `nodad` and their
//! neighbours permanent, neither side takes router advertisements or
//! solicits them: no neighbour discovery crosses the link, for IPv6 as
//! for IPv4 (ARP). Closing the TAPs removes both interfaces; the command
//! dies with the shell (`PR_SET_PDEATHSIG`), what it left in the
//! namespace is killed at exit, and the namespace vanishes with its last
//! process. The NAT rules (nftables tables `ip pipelab_PID` and `ip6
//! pipelab_PID`, masquerading, when the `nft` tool is present),
//! `net.ipv4.ip_forward` and `net.ipv6.conf.all.forwarding` (each held by
//! every shell of the namespace, restored by the last) are written in the
//! ledger before they are changed and restored on exit, or by the next
//! pipelab command (or `pipelab cleanup`) after a crash.
//!
//! With offloads (the default; `--offload off` turns them off) both TAPs
//! carry virtio-net headers and advertise checksum offload, TSO and USO,
//! so TCP bulk crosses as GSO super-frames of up to 64 KB, cut into
//! their segments wherever anything but a fixed delay acts on them
//! ([`pipelab_io::gso`]).

use crate::ipv6::{ipv6_available, quiet_ipv6};
use crate::ledger::{
    host_networks, host_networks6, shell_range6, Change, Ledger, NsId, Record, SHELL_RANGE,
    SHELL_SUBNETS,
};
use crate::live::{LiveRunner, SendPort};
use nix::sys::signal::Signal;
use pipelab_classify::Direction;
use pipelab_emu::{lower_config, Compiled, Emulation, LowerError, Spec};
use pipelab_engine::Duration;
use pipelab_io::backends::process::{die_with_parent, pidfd, spawn_in};
use pipelab_io::backends::tap::{Tap, TapDrops};
use pipelab_io::netlink::Netlink;
use pipelab_io::netns::NetNs;
use pipelab_io::runner::{Lateness, RunnerOptions, RunnerStats};
use pipelab_io::signals::StopSignals;
use pipelab_lang::{parse_line, Command as Cmd, Config, PipeSpec};
use serde::Serialize;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::process::Command;
use std::sync::Arc;

/// The rule that sends the namespace's traffic to pipe 1.
pub const UPLINK_RULE: u32 = 65000;
/// The rule that sends traffic to the namespace through pipe 2.
pub const DOWNLINK_RULE: u32 = 65010;

/// The configuration `--uplink`/`--downlink` words make: pipe 1 from the
/// namespace to the host, pipe 2 back, and the rules that send to them
/// (`add 65000 pipe 1 ip from any to any out`, `add 65010 pipe 2 ip from
/// any to any in`). With `down` absent (`--shared`), pipe 1 carries both
/// directions (`add 65000 pipe 1 ip from any to any`).
pub fn link_config(up: PipeSpec, down: Option<PipeSpec>) -> Result<Config, String> {
    let mut cfg = Config::new();
    let mut apply = |c: Cmd| cfg.apply(&c).map(|_| ()).map_err(|e| e.to_string());
    apply(Cmd::PipeConfig { id: 1, spec: up })?;
    let rules = match down {
        Some(spec) => {
            apply(Cmd::PipeConfig { id: 2, spec })?;
            vec![
                format!("add {UPLINK_RULE} pipe 1 ip from any to any out"),
                format!("add {DOWNLINK_RULE} pipe 2 ip from any to any in"),
            ]
        }
        None => vec![format!("add {UPLINK_RULE} pipe 1 ip from any to any")],
    };
    for r in rules {
        match parse_line(&r) {
            Ok(Some(c)) => apply(c)?,
            _ => return Err(format!("internal: cannot parse '{r}'")),
        }
    }
    Ok(cfg)
}

/// The spec of a shell running `config`, whose host-side device is
/// `host_if` (see the module documentation for the port plan).
pub fn shell_spec(
    config: &Config,
    host_if: &str,
    load: pipelab_emu::Loader<'_>,
) -> Result<Spec, LowerError> {
    let mut spec = lower_config(config, load)?;
    spec.ports = Spec::two_ports(
        ("inside", Some(Direction::Out)),
        ("outside", Some(Direction::In)),
    );
    for (name, id) in [("inside", 0), ("eth0", 0), ("outside", 1), (host_if, 1)] {
        spec.env.ifaces.insert(name.to_string(), id);
    }
    Ok(spec)
}

/// What `pipelab shell` needs.
pub struct ShellOptions {
    /// The configuration ([`link_config`], a file, or both).
    pub config: Config,
    /// The configuration compiled by [`compile`] (so refused, if it is,
    /// before anything runs).
    pub compiled: Compiled,
    /// Reads the files the configuration's pipes name.
    pub load: pipelab_emu::FileLoader,
    /// Runner settings.
    pub runner: RunnerOptions,
    /// The command and its arguments; empty runs `$SHELL` (or /bin/sh).
    pub command: Vec<String>,
    /// Print addresses and the final report on stderr.
    pub verbose: bool,
    /// Write the final report as JSON to this file (opened, so checked,
    /// before the run).
    pub stats_file: Option<crate::report::StatsFile>,
    /// The emulation's name for `pipelab --target` (default
    /// `shell-PID`).
    pub name: Option<String>,
    /// GSO super-frames: TAPs with virtio-net headers and offloads
    /// (checksum, TSO, USO), see [`pipelab_io::gso`]; else MTU-sized
    /// frames only.
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

/// The report written at exit.
#[derive(Clone, Debug, Serialize)]
pub struct ShellReport {
    /// The command's exit status.
    pub exit_code: i32,
    /// Packet accounting.
    pub stats: RunnerStats,
    /// Lateness of transmissions.
    pub lateness: Lateness,
    /// Seconds of the run whose departures were late (p99 beyond the
    /// watcher's threshold), and why (see [`crate::precision`]).
    pub precision: crate::precision::Precision,
    /// The sleep margin at the end of the run (learnt from the sleeps,
    /// from the start-up measurement up), µs.
    pub margin_us: f64,
    /// Peak buffer memory, bytes.
    pub buffer_bytes: u64,
    /// The most resident memory the process had (its `VmHWM`), bytes:
    /// buffers, descriptors, the program itself.
    pub rss_peak_bytes: u64,
    /// The seed of every random decision.
    pub seed: u64,
    /// Per-rule counters: (number, packets, bytes), the default rule last.
    pub rules: Vec<(u32, u64, u64)>,
    /// Per flow queue counters, in number order.
    pub queues: Vec<crate::report::QueueCounters>,
    /// Each worker's figures (accounting with hand-offs, lateness).
    pub workers: Vec<crate::workers::WorkerFigures>,
    /// What `--pcap` and `--events` wrote (packets, events, records
    /// lost because the writer fell behind: `capture_lost`).
    pub capture: Option<pipelab_io::capture::Summary>,
    /// Per pipe counters summed over the workers, in number order.
    pub pipes: Vec<crate::report::PipeCounters>,
    /// With `--interval`: what each pipe did in each interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<crate::series::SeriesReport>,
}

/// Make the nftables tables `tables` (family, name, rules), each written
/// in the ledger first, with one run of `nft` (one transaction), or, if
/// that is refused, one run per table (a kernel may lack one family's
/// NAT). A refusal of `nft`, or no `nft` at all, leaves the namespace
/// without NAT (said when `verbose`), not the shell without a link.
fn nft_tables(
    record: &mut Record,
    tables: &[(&str, &str, String)],
    verbose: bool,
) -> io::Result<()> {
    for (family, table, _) in tables {
        record.record(Change::NftTable {
            family: family.to_string(),
            table: table.to_string(),
        })?;
    }
    let all: String = tables.iter().map(|(_, _, rules)| rules.as_str()).collect();
    let mut made = run_nft(&all);
    if tables.len() > 1 && matches!(made, Ok(Some(_))) {
        for (_, _, rules) in tables {
            made = run_nft(rules);
        }
    }
    if verbose {
        match made {
            Ok(None) => {}
            Ok(Some(why)) => eprintln!(
                "pipelab shell: nft could not make the NAT tables: {why}; no NAT beyond this host"
            ),
            Err(e) if e.kind() == io::ErrorKind::NotFound => eprintln!(
                "pipelab shell: no 'nft' tool: the namespace reaches the host only (no NAT)"
            ),
            Err(e) => eprintln!("pipelab shell: cannot run nft: {e}; no NAT beyond this host"),
        }
    }
    Ok(())
}

/// Remove the nftables tables `tables` (family, name) in one run of
/// `nft` (one transaction; a table already gone is no error); returns
/// the ledger's changes that are undone (none if nft failed).
fn remove_nft_tables(tables: &[(String, String)]) -> Vec<Change> {
    let script: String = tables
        .iter()
        .map(|(f, t)| format!("add table {f} {t}\ndelete table {f} {t}\n"))
        .collect();
    match run_nft(&script) {
        Ok(None) => tables
            .iter()
            .map(|(f, t)| Change::NftTable {
                family: f.clone(),
                table: t.clone(),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Run `nft -f -` on `script`: `None` if it succeeded, else its error.
fn run_nft(script: &str) -> io::Result<Option<String>> {
    let mut nft = Command::new("nft");
    nft.args(["-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    die_with_parent(&mut nft);
    let mut child = nft.spawn()?;
    if let Some(mut s) = child.stdin.take() {
        use std::io::Write;
        s.write_all(script.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    Ok((!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).trim().to_string()))
}

/// The name of the shell's host-side TAP device in process `pid`.
fn host_device(pid: u32) -> String {
    format!("plo{pid}")
}

/// Why a shell's configuration cannot run (before anything is made).
#[derive(Debug, thiserror::Error)]
pub enum ShellConfigError {
    /// A pipe's parameters, or a file it names, are refused.
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// The rules name what the configuration lacks.
    #[error(transparent)]
    Spec(#[from] pipelab_emu::SpecError),
}

/// The emulation a shell of this process runs for `config`, compiled:
/// every refusal of the configuration (its pipes, the files they name,
/// its rules) comes from here, before the host changes. `run_shell`
/// takes the result in [`ShellOptions::compiled`].
pub fn compile(
    config: &Config,
    load: pipelab_emu::Loader<'_>,
    seed: u64,
) -> Result<Compiled, ShellConfigError> {
    let spec = shell_spec(config, &host_device(std::process::id()), load)?;
    Ok(Compiled::new(spec, seed)?)
}

/// Run `opts.command` behind the emulated link; returns its exit code.
pub fn run_shell(mut opts: ShellOptions) -> io::Result<i32> {
    let pid = std::process::id();
    let in_name = format!("pli{pid}");
    let out_name = host_device(pid);
    let compiled = opts.compiled;
    crate::privilege::require("the shell", crate::privilege::NAMESPACES)?;
    // The stop signals are blocked before the host changes and before any
    // thread starts (every thread inherits the mask), read from a
    // descriptor and passed on to the command, so that the shell always
    // outlives its command and cleans up (see `wait_forwarding`).
    let forward = StopSignals::block()?;
    // The name is taken before anything else (a second emulation of that
    // name is refused now), and before any thread starts.
    let name = match &opts.name {
        Some(n) => n.clone(),
        None => crate::plane::default_name(&["shell", &pid.to_string()]),
    };
    // What dead pipelab processes left is undone first; from here on,
    // every change to the host is written down before it is made, and
    // undone when `record` is dropped (or by the next command, after a
    // crash).
    let mut record = Ledger::new().begin("shell", &name)?;
    let reg = crate::plane::register_recorded(&mut record, &name, "shell")?;
    // The /24: the pid's (its 14 low bits) unless a running pipelab has it
    // or it overlaps an address of this host, else the next free one.
    let net = record.reserve_subnet(pid % SHELL_SUBNETS, &host_networks())?;
    let outside = Ipv4Addr::from(u32::from(net) + 1);
    let inside = Ipv4Addr::from(u32::from(net) + 2);
    // The IPv6 /64 of the host's ULA /48 whose subnet ID is the /24's
    // index, unless a running pipelab has it or it overlaps an address of
    // this host, else the next free one; none if this kernel has no IPv6.
    let v6 = if ipv6_available() {
        let index = u32::from(net).wrapping_sub(u32::from(SHELL_RANGE.0)) >> 8;
        let net6 = record.reserve_subnet6(shell_range6(), index, &host_networks6())?;
        let base = u128::from(net6);
        Some((Ipv6Addr::from(base | 1), Ipv6Addr::from(base | 2)))
    } else {
        None
    };
    let ns = NetNs::create()?;
    // The command and whatever it starts live in the namespace: killed
    // with it (the command also dies with this process, see `spawn_in`).
    record.record_in(
        NsId::of_fd(std::os::fd::AsFd::as_fd(&ns))?,
        Change::NetnsProcesses,
    )?;

    // With offloads, both TAPs take super-frames (their own features,
    // gone with them: nothing on the host to restore).
    let tap = if opts.offload {
        Tap::create_offloaded
    } else {
        Tap::create
    };
    // The namespace's TAP is made in the namespace, as its eth0: moving
    // a device from one namespace to another waits for the network's
    // RCU grace period (19 ms of a 126 ms start and teardown of `true`,
    // measured). It goes with the namespace (the kernel removes it when
    // the namespace's last process and descriptor are gone, in its own
    // time): closing it at exit then waits for no grace period on the
    // path the user waits for either. Its port keeps the name `pliPID`.
    let tap_in = ns
        .run(move || {
            let t = tap("eth0")?;
            t.persist_with_namespace()?;
            Ok(t)
        })?
        .labelled(&in_name);
    let tap_out = tap(&out_name)?;
    // Fixed MACs and permanent neighbour entries on both sides: no ARP
    // exchange crosses the emulated link, so the first packet of a run is
    // delayed like every other one.
    let p = pid.to_be_bytes();
    let mac_in = [0x02, 0x50, p[0], p[1], p[2], p[3]];
    let mac_out = [0x02, 0x51, p[0], p[1], p[2], p[3]];
    {
        let nl = Netlink::connect()?;
        let idx_out = nl.index(&out_name)?;
        nl.set_mac(idx_out, mac_out)?;
        nl.add_addr(idx_out, IpAddr::V4(outside), 24)?;
        if v6.is_some() {
            quiet_ipv6(&out_name)?;
        }
        nl.up(idx_out, Some(1500))?;
        nl.add_neighbour(idx_out, IpAddr::V4(inside), mac_in)?;
        if let Some((outside6, inside6)) = v6 {
            nl.add_addr6_nodad(idx_out, outside6, 64)?;
            nl.add_neighbour(idx_out, IpAddr::V6(inside6), mac_in)?;
        }
    }
    // Each TAP's drops toward the runner, read where the device is.
    let drops = vec![
        TapDrops::open(&out_name)?,
        ns.run(|| TapDrops::open("eth0"))?,
    ];
    ns.run(move || {
        let nl = Netlink::connect()?;
        nl.loopback_up()?;
        let idx = nl.index("eth0")?;
        nl.set_mac(idx, mac_in)?;
        nl.add_addr(idx, IpAddr::V4(inside), 24)?;
        if v6.is_some() {
            quiet_ipv6("eth0")?;
        }
        nl.up(idx, Some(1500))?;
        nl.add_neighbour(idx, IpAddr::V4(outside), mac_out)?;
        nl.add_default_route(outside)?;
        if let Some((outside6, inside6)) = v6 {
            nl.add_addr6_nodad(idx, inside6, 64)?;
            nl.add_neighbour(idx, IpAddr::V6(outside6), mac_out)?;
            nl.add_default_route6(outside6)?;
        }
        Ok(())
    })?;

    // Forwarding is shared by every shell of this namespace: held, and
    // restored by the last holder to the value the first one found.
    if let Err(e) = record.hold_sysctl("net/ipv4/ip_forward", "1") {
        if opts.verbose {
            eprintln!("pipelab shell: {e}: the namespace reaches this host only");
        }
    }
    if v6.is_some() {
        if let Err(e) = record.hold_sysctl("net/ipv6/conf/all/forwarding", "1") {
            if opts.verbose {
                eprintln!("pipelab shell: {e}: over IPv6 the namespace reaches this host only");
            }
        }
    }
    let table = format!("pipelab_{pid}");
    let mut tables = vec![(
        "ip",
        table.as_str(),
        format!(
            "table ip {table} {{\n  chain post {{\n    type nat hook postrouting priority 100;\n    \
             ip saddr {inside} oifname != \"{out_name}\" masquerade\n  }}\n}}\n"
        ),
    )];
    if let Some((_, inside6)) = v6 {
        tables.push((
            "ip6",
            table.as_str(),
            format!(
                "table ip6 {table} {{\n  chain post {{\n    type nat hook postrouting priority 100;\n    \
                 ip6 saddr {inside6} oifname != \"{out_name}\" masquerade\n  }}\n}}\n"
            ),
        ));
    }
    nft_tables(&mut record, &tables, opts.verbose)?;
    let tables: Vec<(String, String)> = tables
        .iter()
        .map(|(f, t, _)| (f.to_string(), t.to_string()))
        .collect();

    // One worker per direction (as the CPUs allow); each writes to the
    // TAP the other reads through a descriptor of its own.
    let (k, note) = opts.workers.resolve(2, "a shell has two directions");
    if let Some(note) = note {
        eprintln!("note: {note}");
    }
    // Frames kept on disk go under directories of the run's own, in the
    // ledger before anything is made in them.
    let spill_dirs = crate::spill::prepare(&mut record, &opts.spill, compiled.spec())?;
    let worker_cap = opts.runner.mem_cap / u64::from(k.max(1));
    for n in crate::spill::notes(compiled.spec(), worker_cap, &spill_dirs, "pipelab shell") {
        eprintln!("{n}");
    }
    let plan = crate::workers::direction_plan(2, k, &opts.workers);
    let mut handles: Vec<Vec<SendPort>> = Vec::new();
    for tap in [&tap_in, &tap_out] {
        let mut h: Vec<SendPort> = Vec::new();
        for _ in 1..k {
            h.push(Box::new(tap.try_clone()?));
        }
        handles.push(h);
    }
    let ports: Vec<SendPort> = vec![Box::new(tap_in), Box::new(tap_out)];
    let ports = crate::workers::spread(ports, &crate::workers::by_port(2, k), k, |i| {
        handles
            .get_mut(i)
            .and_then(|h| h.pop())
            .ok_or_else(|| io::Error::other("internal: no TAP handle left"))
    })?;
    let (recorder, tap) = crate::capture::start(opts.capture.take(), compiled.spec())?;
    let live = Arc::new(LiveRunner::spawn_workers(
        "pipelab-shell",
        compiled,
        ports,
        plan,
        opts.runner,
        tap,
    )?);
    live.watch_input_drops(drops);
    live.set_spill(spill_dirs).map_err(io::Error::other)?;
    let sampler = crate::series::start(&live, opts.series.take())?;
    // `pipelab --target NAME ...` reconfigures it from now on.
    let load = std::mem::replace(&mut opts.load, Box::new(|_| Err(String::new())));
    let host_if = out_name.clone();
    let lower: crate::plane::Lower =
        Box::new(move |cfg: &Config| Ok(shell_spec(cfg, &host_if, &mut &*load)?));
    let plane = crate::plane::ModePlane::new("shell", live.clone(), lower, opts.runner.seed);
    let control =
        crate::plane::serve(reg, Box::new(plane), opts.config.clone()).map_err(io::Error::other)?;

    let program = opts
        .command
        .first()
        .cloned()
        .unwrap_or_else(|| std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into()));
    let mut cmd = Command::new(&program);
    cmd.args(opts.command.iter().skip(1))
        .env("PIPELAB_OUTSIDE", outside.to_string())
        .env("PIPELAB_INSIDE", inside.to_string())
        .env("PIPELAB_NAME", &name);
    let mut addresses = format!("inside {inside}, outside {outside} (PIPELAB_OUTSIDE)");
    if let Some((outside6, inside6)) = v6 {
        cmd.env("PIPELAB_OUTSIDE6", outside6.to_string())
            .env("PIPELAB_INSIDE6", inside6.to_string());
        addresses = format!("{addresses}; inside {inside6}, outside {outside6} (PIPELAB_OUTSIDE6)");
    }
    eprintln!(
        "pipelab shell: {addresses}; seed {}; change it with `pipelab --target {name} ...`",
        opts.runner.seed
    );
    // A stop signal that came during the set-up stops the shell before
    // its command starts, as if the command had been killed by it.
    let status = match forward.take() {
        Some(sig) => Ok(std::os::unix::process::ExitStatusExt::from_raw(sig as i32)),
        None => {
            let mut child = spawn_in(&ns, &mut cmd)
                .map_err(|e| io::Error::new(e.kind(), format!("cannot run {program}: {e}")))?;
            wait_forwarding(&mut child, &forward)
        }
    };
    // No more changes: the configuration is what it is for the drain.
    let _ = control.close();
    // Deliver what is still in flight: at most the longest delay plus the
    // time to send each pipe's backlog.
    let seed = opts.runner.seed;
    let bounds = live
        .with_each(|r| {
            (
                drain_bound(r.emulation()),
                r.wake_margin(),
                r.buffer_bytes(),
            )
        })
        .map_err(io::Error::other)?;
    let bound = bounds.iter().map(|b| b.0).max().unwrap_or(Duration::ZERO);
    live.drain(bound).map_err(io::Error::other)?;
    let series = crate::series::stop(sampler)?;
    let (t, last) = crate::workers::live_totals_and(&live, series.as_ref().map(|s| s.probe()))
        .map_err(io::Error::other)?;
    let report = ShellReport {
        exit_code: 0,
        stats: t.stats,
        lateness: t.lateness,
        precision: t.precision,
        margin_us: bounds.first().map_or(0.0, |b| b.1.as_nanos() as f64 / 1e3),
        buffer_bytes: bounds.iter().map(|b| b.2).sum(),
        rss_peak_bytes: crate::report::peak_rss_bytes(),
        seed,
        rules: t.rules,
        queues: t.queues,
        workers: t.workers,
        capture: None,
        pipes: t.pipes,
        timeseries: series
            .map(|s| s.finish(last, "pipelab shell"))
            .transpose()?,
    };
    // The NAT tables go in one run of nft while the runners stop and the
    // host's TAP closes (each some tens of ms); what fails is left to the
    // ledger.
    let unnat = std::thread::spawn(move || remove_nft_tables(&tables));
    let stopped = live.stop();
    if let Ok(gone) = unnat.join() {
        for change in gone {
            let _ = record.forget(&change);
        }
    }
    stopped?;
    let capture = crate::capture::finish(recorder, "pipelab shell")?;
    // A shell's convention: a command killed by signal N exits 128 + N.
    let code = match status {
        Ok(s) => s.code().unwrap_or_else(|| {
            128 + std::os::unix::process::ExitStatusExt::signal(&s).unwrap_or(9)
        }),
        Err(e) => {
            return Err(io::Error::new(
                e.kind(),
                format!("waiting for {program}: {e}"),
            ))
        }
    };
    let report = ShellReport {
        exit_code: code,
        capture,
        ..report
    };
    if opts.verbose {
        eprintln!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    }
    if let Some(file) = opts.stats_file.take() {
        file.write(&serde_json::to_string_pretty(&report).unwrap_or_default())?;
    }
    drop(live);
    drop(record);
    drop(ns);
    Ok(code)
}

/// How long the packets inside `emu` may still take: over its pipes, the
/// longest delay (plus three jitter spreads) and the time to send the
/// pipe's backlog; at least 10 ms.
pub fn drain_bound(emu: &Emulation) -> Duration {
    let mut bound = Duration::from_millis(10);
    for (&n, def) in &emu.spec().pipes {
        let cfg = &def.config;
        let backlog = emu.pipe_totals(n).map_or(0, |s| s.backlog_bytes);
        let mut carry = 0;
        let tx = cfg.bw().tx_time(backlog, &mut carry);
        let jitter = cfg.jitter().map(|d| d.sigma()).unwrap_or(Duration::ZERO);
        bound = bound.max(cfg.delay() + jitter + jitter + jitter + tx);
    }
    bound
}

/// Wait for `child`, passing on to it the stop signals that arrive on
/// `signals` meanwhile: SIGTERM and SIGHUP always, SIGINT and SIGQUIT
/// when a process sent them (the terminal's, Ctrl-C and Ctrl-\, reach
/// the command by its process group already).
fn wait_forwarding(
    child: &mut std::process::Child,
    signals: &StopSignals,
) -> io::Result<std::process::ExitStatus> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let exited = pidfd(child.id())?;
    loop {
        if let Some(st) = child.try_wait()? {
            return Ok(st);
        }
        let mut fds = [
            PollFd::new(exited.as_fd(), PollFlags::POLLIN),
            PollFd::new(signals.fd.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(io::Error::from(e)),
        }
        while let Some(a) = signals.take_arrived() {
            let to_group = matches!(a.signal, Signal::SIGINT | Signal::SIGQUIT);
            if !(to_group && a.from_terminal) {
                let _ = nix::sys::signal::kill(pid, a.signal);
            }
        }
    }
}
