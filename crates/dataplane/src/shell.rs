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
//! Both TAP descriptors are held by pipelab: frames from the namespace go
//! through the uplink pipe and out of the host TAP, and back through the
//! downlink pipe. The addresses are a /24 in 100.64.0.0/10 chosen from the
//! process id, so shells nest (an inner shell's "host" is the outer
//! namespace). Closing the TAPs removes both interfaces and the namespace
//! vanishes with its last process: nothing is left behind, also after a
//! crash. The NAT rule (nftables, when the `nft` tool is present) is
//! removed on exit.

use crate::backends::process::{ignore_interrupts, pidfd, spawn_in};
use crate::backends::tap::Tap;
use crate::backends::Port;
use crate::netlink::Netlink;
use crate::netns::NetNs;
use crate::runner::{Lateness, Runner, RunnerOptions, RunnerStats, Steer, Steering};
use pipelab_classify::frame::FrameInfo;
use pipelab_engine::{Duration, Engine, PipeConfig, RouteId};
use serde::Serialize;
use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::AsFd;
use std::process::Command;

/// What `pipelab shell` needs.
#[derive(Clone, Debug)]
pub struct ShellOptions {
    /// The pipe from the namespace to the host.
    pub uplink: PipeConfig,
    /// The pipe from the host to the namespace.
    pub downlink: PipeConfig,
    /// Both directions cross one pipe, `uplink` (a shared channel, as
    /// netconfig's `SHARED`); `downlink` is then unused.
    pub shared: bool,
    /// Runner settings.
    pub runner: RunnerOptions,
    /// The command and its arguments; empty runs `$SHELL` (or /bin/sh).
    pub command: Vec<String>,
    /// Print addresses and the final report on stderr.
    pub verbose: bool,
    /// Write the final report as JSON to this file.
    pub stats_file: Option<std::path::PathBuf>,
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
    /// The sleep margin measured at start-up, µs.
    pub margin_us: f64,
    /// Peak buffer memory, bytes.
    pub buffer_bytes: u64,
}

/// Steering of a two-port shell: port 0 (namespace) up, port 1 (host) down.
struct ShellSteer {
    up: RouteId,
    down: RouteId,
}

impl Steering for ShellSteer {
    fn steer(&mut self, in_port: usize, f: &FrameInfo) -> (Steer, u32) {
        let s = if in_port == 0 {
            Steer::Pipe {
                route: self.up,
                out: 1,
            }
        } else {
            Steer::Pipe {
                route: self.down,
                out: 0,
            }
        };
        // Dummynet's L3 accounting: the IP packet's length.
        (s, f.l3_len.max(1))
    }
}

fn subnet_for(pid: u32) -> (Ipv4Addr, Ipv4Addr) {
    let a = 64 + ((pid >> 8) & 63) as u8;
    let b = (pid & 255) as u8;
    (Ipv4Addr::new(100, a, b, 1), Ipv4Addr::new(100, a, b, 2))
}

/// Undo what the shell changed on the host, also on early return.
struct HostGuard {
    forward_was: Option<String>,
    nft_table: Option<String>,
}

impl Drop for HostGuard {
    fn drop(&mut self) {
        if let Some(t) = self.nft_table.take() {
            let _ = Command::new("nft")
                .args(["delete", "table", "ip", &t])
                .status();
        }
        if let Some(v) = self.forward_was.take() {
            let _ = std::fs::write("/proc/sys/net/ipv4/ip_forward", v);
        }
    }
}

fn nft_available() -> bool {
    Command::new("nft")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Run `opts.command` behind the emulated link; returns its exit code.
pub fn run_shell(opts: ShellOptions) -> io::Result<i32> {
    let pid = std::process::id();
    let (outside, inside) = subnet_for(pid);
    let in_name = format!("pli{pid}");
    let out_name = format!("plo{pid}");
    let ns = NetNs::create()?;

    let tap_in = Tap::create(&in_name)?;
    let tap_out = Tap::create(&out_name)?;
    // Fixed MACs and permanent neighbour entries on both sides: no ARP
    // exchange crosses the emulated link, so the first packet of a run is
    // delayed like every other one.
    let p = pid.to_be_bytes();
    let mac_in = [0x02, 0x50, p[0], p[1], p[2], p[3]];
    let mac_out = [0x02, 0x51, p[0], p[1], p[2], p[3]];
    {
        let nl = Netlink::connect()?;
        let idx_in = nl.index(&in_name)?;
        nl.set_mac(idx_in, mac_in)?;
        nl.move_to_ns(idx_in, ns.fd(), "eth0")?;
        let idx_out = nl.index(&out_name)?;
        nl.set_mac(idx_out, mac_out)?;
        nl.add_addr(idx_out, IpAddr::V4(outside), 24)?;
        nl.up(idx_out, Some(1500))?;
        nl.add_neighbour(idx_out, IpAddr::V4(inside), mac_in)?;
    }
    ns.run(move || {
        let nl = Netlink::connect()?;
        nl.loopback_up()?;
        let idx = nl.index("eth0")?;
        nl.add_addr(idx, IpAddr::V4(inside), 24)?;
        nl.up(idx, Some(1500))?;
        nl.add_neighbour(idx, IpAddr::V4(outside), mac_out)?;
        nl.add_default_route(outside)?;
        Ok(())
    })?;

    let mut guard = HostGuard {
        forward_was: None,
        nft_table: None,
    };
    if let Ok(v) = std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward") {
        if v.trim() != "1" && std::fs::write("/proc/sys/net/ipv4/ip_forward", "1").is_ok() {
            guard.forward_was = Some(v);
        }
    }
    if nft_available() {
        let table = format!("pipelab_{pid}");
        let rules = format!(
            "table ip {table} {{\n  chain post {{\n    type nat hook postrouting priority 100;\n    \
             ip saddr {inside} oifname != \"{out_name}\" masquerade\n  }}\n}}\n"
        );
        if Command::new("nft")
            .args(["-f", "-"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                if let Some(mut s) = c.stdin.take() {
                    s.write_all(rules.as_bytes())?;
                }
                c.wait()
            })
            .map(|s| s.success())
            .unwrap_or(false)
        {
            guard.nft_table = Some(table);
        }
    } else if opts.verbose {
        eprintln!("pipelab shell: no 'nft' tool: the namespace reaches the host only (no NAT)");
    }

    let mut engine = Engine::new(Runner::<ShellSteer>::engine_options(&opts.runner));
    let up = engine.add_pipe_with_stage(opts.uplink.clone(), 1);
    let down = if opts.shared {
        up
    } else {
        engine.add_pipe_with_stage(opts.downlink.clone(), 2)
    };
    let steer = ShellSteer {
        up: engine
            .pipe_route(up)
            .ok_or_else(|| io::Error::other("no uplink route"))?,
        down: engine
            .pipe_route(down)
            .ok_or_else(|| io::Error::other("no downlink route"))?,
    };
    let ports: Vec<Box<dyn Port>> = vec![Box::new(tap_in), Box::new(tap_out)];
    let mut runner = Runner::new(engine, ports, steer, opts.runner);

    let program = opts
        .command
        .first()
        .cloned()
        .unwrap_or_else(|| std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into()));
    let mut cmd = Command::new(&program);
    cmd.args(opts.command.iter().skip(1))
        .env("PIPELAB_OUTSIDE", outside.to_string())
        .env("PIPELAB_INSIDE", inside.to_string());
    eprintln!("pipelab shell: inside {inside}, outside {outside} (PIPELAB_OUTSIDE)");
    let interrupts = ignore_interrupts();
    let mut child = spawn_in(&ns, &mut cmd)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot run {program}: {e}")))?;
    let pfd = pidfd(child.id())?;
    let mut status = None;
    runner.run_until(Some(pfd.as_fd()), |_| {
        if status.is_none() {
            status = child.try_wait().ok().flatten();
        }
        status.is_some()
    })?;
    drop(interrupts);
    // Deliver what is still in flight: at most the longest delay plus the
    // time to send each pipe's backlog.
    let mut bound = Duration::from_millis(10);
    for (p, cfg) in [(up, &opts.uplink), (down, &opts.downlink)] {
        let backlog = runner
            .engine()
            .pipe_stats(p)
            .map(|s| s.backlog_bytes)
            .unwrap_or(0);
        let mut carry = 0;
        let tx = cfg.bw().tx_time(backlog, &mut carry);
        let jitter = cfg.jitter().map(|d| d.sigma()).unwrap_or(Duration::ZERO);
        bound = bound.max(cfg.delay() + jitter + jitter + jitter + tx);
    }
    runner.drain(bound)?;
    let code = status.and_then(|s| s.code()).unwrap_or(128 + 9);
    let report = ShellReport {
        exit_code: code,
        stats: runner.stats(),
        lateness: runner.lateness(),
        margin_us: runner.margin().as_nanos() as f64 / 1e3,
        buffer_bytes: runner.buffer_bytes(),
    };
    if opts.verbose {
        eprintln!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    }
    if let Some(path) = &opts.stats_file {
        std::fs::write(
            path,
            serde_json::to_string_pretty(&report).unwrap_or_default(),
        )?;
    }
    drop(runner);
    drop(guard);
    drop(ns);
    Ok(code)
}
