//! Host mode: this host's own traffic, shaped in place (in-node emulation,
//! planetlab-dummynet-emulation §3).
//!
//! [`HostPlane::start`] binds a netfilter queue ([`NfQueue`]) and installs
//! an nftables table of its own (family `inet`, named by
//! [`HostOptions::table`]) with two base chains:
//!
//! ```text
//! table inet pipelab_host {
//!   chain output { type filter hook output priority 0; policy accept;
//!                  meta mark 0x70696c62 return; queue num N }
//!   chain input  { type filter hook input priority 0; policy accept;
//!                  meta mark 0x70696c62 return; queue num N }
//! }
//! ```
//!
//! * Every IP packet this host sends (output hook: direction `out`) or
//!   receives (input hook: direction `in`) waits in the kernel until the
//!   plane's verdict. The rules of the applied configuration classify it,
//!   with the owning socket's uid (`uid` rules), the interfaces (`via`,
//!   `recv`, `xmit`, by their current names) and the host's addresses
//!   (`me`); a packet no rule sends to a pipe is accepted at once.
//! * **Fail-closed**: the rules say `queue` without `bypass`, so while no
//!   process listens on the queue (the daemon was killed) the kernel drops
//!   these packets; they are never passed unshaped. [`HostPlane::stop`]
//!   removes the table; a crash leaves it, and the next start replaces it
//!   in one nftables transaction. The table is written in the host ledger
//!   ([`crate::ledger`]) before it is installed: other pipelab commands
//!   name a dead daemon's rules but leave them; `pipelab cleanup` removes
//!   them.
//! * Excluded: packets carrying [`REINJECT_MARK`] (the plane's own copies
//!   made by duplication, sent through a raw socket), and with
//!   [`HostPlane::start_scoped`], everything whose peer address (the
//!   destination on output, the source on input) is outside the given
//!   networks. Forwarded traffic never passes these hooks.
//! * Rules are installed with the `nft` command-line tool (one script, one
//!   transaction), as `pipelab shell` does for its NAT. A kernel without
//!   nftables' `queue` expression (`CONFIG_NFT_QUEUE`) but with the
//!   xtables `NFQUEUE` target gets the same rules through
//!   `iptables-restore`/`ip6tables-restore --noflush` (one transaction per
//!   family) instead: chains `TABLE_out` and `TABLE_in` of the `filter`
//!   table, jumped to first from `OUTPUT` and `INPUT`. [`remove_table`]
//!   removes either form.
//!
//! The runner ([`pipelab_io::runner`]) runs on a thread of its own with
//! the queue as its only port, at real-time priority
//! ([`REALTIME_PRIORITY`], best effort) so that the host's other load does
//! not delay releases. [`HostPlane::apply`] lowers a configuration to the
//! one emulation spec ([`host_spec`]: the whole language, schedulers, flow
//! queues, masks, tables and `one_pass 0` included) and compiles it on the
//! caller's thread, so a bad one is refused before anything changes, and
//! hands it to the runner thread over a channel, waking it through a
//! socket pair it polls with the queue; the thread applies it between two
//! steps ([`pipelab_emu::Emulation::apply`]): pipes that exist keep their
//! queued packets, new pipes are added, a pipe the configuration no longer
//! has stops receiving but delivers (or drops) what it holds, each with
//! its verdict. Rule counters carry over for rules that did not change.

use crate::error::ModeError;
use crate::ledger::{Change, Ledger, Record};
use crate::live::{LiveRunner, SendPort};
use pipelab_emu::{lower_config, Compiled, Env, Spec};
use pipelab_engine::Duration;
use pipelab_io::backends::nfqueue::{
    NfQueue, QueueOptions, VerdictCounters, VerdictStats, REINJECT_MARK,
};
use pipelab_io::backends::PortStats;
use pipelab_io::buffers::BUF_SIZE;
use pipelab_io::runner::{Lateness, Runner, RunnerOptions, RunnerStats};
use pipelab_lang::{Config, IpNet, OptionKind, RuleSpec, UserMatch};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;

pub use pipelab_io::runner::REALTIME_PRIORITY;

/// What [`HostPlane::start`] needs.
#[derive(Clone, Debug)]
pub struct HostOptions {
    /// The netfilter queue number (unused by anything else on the host).
    pub queue_num: u16,
    /// Runner settings.
    pub runner: RunnerOptions,
    /// The nftables table (family `inet`) the plane owns: letters, digits
    /// and `_`, starting with a letter, at most 24 characters.
    pub table: String,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            queue_num: 7400,
            runner: RunnerOptions {
                realtime: true,
                ..RunnerOptions::default()
            },
            table: "pipelab_host".into(),
        }
    }
}

pub use crate::report::PipeCounters;

/// What [`HostPlane::stats`] reports.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HostStats {
    /// Packet accounting of the runner.
    pub runner: RunnerStats,
    /// Lateness of releases (verdict time minus emulated departure time).
    pub lateness: Lateness,
    /// The queue's counters (received, released, errors, kernel drops).
    pub port: PortStats,
    /// Verdicts issued.
    pub verdicts: VerdictStats,
    /// Per rule: (number, packets, bytes), the default rule 65535 last.
    pub rules: Vec<(u32, u64, u64)>,
    /// Per configured pipe.
    pub pipes: Vec<PipeCounters>,
    /// Per flow queue.
    pub queues: Vec<crate::report::QueueCounters>,
    /// The seed of every random decision (`pipelabd --seed`), so a run
    /// can be repeated.
    pub seed: u64,
}

/// The host-mode data plane. See the module documentation.
pub struct HostPlane {
    live: LiveRunner,
    /// The rules, in the host ledger.
    record: Option<Record>,
    /// Stopped already (by `stop`).
    stopped: bool,
    table: String,
    seed: u64,
    counters: Arc<VerdictCounters>,
}

/// Check an nftables table name (it is written into an nft script, and
/// names the iptables chains `NAME_out`, `NAME_in`).
fn check_table(name: &str) -> io::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 24
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "nftables table name '{name}': letters, digits and '_', starting with a letter, at most 24"
            ),
        ))
    }
}

/// Run `nft -f -` with `script`.
fn nft(script: &str) -> io::Result<()> {
    run_with_stdin("nft", &["-f", "-"], script)
}

/// The nft script that (re)creates the plane's table in one transaction.
pub fn nft_script(table: &str, queue_num: u16, scope: &[IpNet]) -> String {
    let mut out_rules = String::new();
    let mut in_rules = String::new();
    if scope.is_empty() {
        out_rules.push_str(&format!("    queue num {queue_num}\n"));
        in_rules.push_str(&format!("    queue num {queue_num}\n"));
    }
    for n in scope {
        let fam = if n.addr().is_ipv4() { "ip" } else { "ip6" };
        out_rules.push_str(&format!("    {fam} daddr {n} queue num {queue_num}\n"));
        in_rules.push_str(&format!("    {fam} saddr {n} queue num {queue_num}\n"));
    }
    format!(
        "table inet {table} {{}}\ndelete table inet {table}\n\
         table inet {table} {{\n\
         \x20 chain output {{\n    type filter hook output priority 0; policy accept;\n    \
         meta mark {REINJECT_MARK:#x} return\n{out_rules}  }}\n\
         \x20 chain input {{\n    type filter hook input priority 0; policy accept;\n    \
         meta mark {REINJECT_MARK:#x} return\n{in_rules}  }}\n}}\n"
    )
}

/// Run `tool` (`iptables-restore`, `ip6tables-restore`) with `script`.
fn restore(tool: &str, script: &str) -> io::Result<()> {
    run_with_stdin(tool, &["--noflush", "-w"], script)
}

/// Run `tool ARGS` with `input` on its standard input; its standard error
/// becomes the error when it fails.
fn run_with_stdin(tool: &str, args: &[&str], input: &str) -> io::Result<()> {
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("running {tool}: {e}")))?;
    if let Some(mut s) = child.stdin.take() {
        s.write_all(input.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{tool}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Run `tool` (`iptables`, `ip6tables`) with `args`; true on success.
fn xt(tool: &str, args: &[&str]) -> bool {
    Command::new(tool)
        .arg("-w")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// The `iptables-restore --noflush` script of one family: the two chains
/// (flushed and refilled if they exist), and the jumps to them when
/// `jumps` (they are not there yet).
pub fn xt_script(table: &str, queue_num: u16, nets: &[IpNet], all: bool, jumps: bool) -> String {
    let mut s = format!("*filter\n:{table}_out - [0:0]\n:{table}_in - [0:0]\n");
    for chain in ["out", "in"] {
        s.push_str(&format!(
            "-A {table}_{chain} -m mark --mark {REINJECT_MARK:#x} -j RETURN\n"
        ));
        let side = if chain == "out" { "-d" } else { "-s" };
        if all {
            s.push_str(&format!(
                "-A {table}_{chain} -j NFQUEUE --queue-num {queue_num}\n"
            ));
        }
        for n in nets {
            s.push_str(&format!(
                "-A {table}_{chain} {side} {n} -j NFQUEUE --queue-num {queue_num}\n"
            ));
        }
    }
    if jumps {
        s.push_str(&format!(
            "-I OUTPUT 1 -j {table}_out\n-I INPUT 1 -j {table}_in\n"
        ));
    }
    s.push_str("COMMIT\n");
    s
}

/// Install the rules through iptables and ip6tables.
fn install_xt(table: &str, queue_num: u16, scope: &[IpNet]) -> io::Result<()> {
    for (v6, tool, restore_tool) in [
        (false, "iptables", "iptables-restore"),
        (true, "ip6tables", "ip6tables-restore"),
    ] {
        let nets: Vec<IpNet> = scope
            .iter()
            .filter(|n| n.addr().is_ipv6() == v6)
            .copied()
            .collect();
        let all = scope.is_empty();
        if !all && nets.is_empty() {
            continue;
        }
        let jumps = !(xt(tool, &["-C", "OUTPUT", "-j", &format!("{table}_out")])
            && xt(tool, &["-C", "INPUT", "-j", &format!("{table}_in")]));
        if jumps {
            remove_xt_family(tool, table);
        }
        restore(
            restore_tool,
            &xt_script(table, queue_num, &nets, all, jumps),
        )?;
    }
    Ok(())
}

fn remove_xt_family(tool: &str, table: &str) {
    for (hook, chain) in [
        ("OUTPUT", format!("{table}_out")),
        ("INPUT", format!("{table}_in")),
    ] {
        while xt(tool, &["-D", hook, "-j", &chain]) {}
        if xt(tool, &["-F", &chain]) {
            xt(tool, &["-X", &chain]);
        }
    }
}

/// Install the plane's rules: nftables if its `queue` expression is there,
/// else iptables.
fn install_rules(table: &str, queue_num: u16, scope: &[IpNet]) -> io::Result<()> {
    match nft(&nft_script(table, queue_num, scope)) {
        Ok(()) => Ok(()),
        Err(nft_err) => install_xt(table, queue_num, scope).map_err(|xt_err| {
            io::Error::other(format!(
                "installing the host-mode rules: {nft_err}; and through iptables: {xt_err}"
            ))
        }),
    }
}

/// Delete the plane's rules (the nftables table `table`, or the iptables
/// chains named after it) if they exist: after a crash, or in tests'
/// cleanup. Not an error if there are none.
pub fn remove_table(table: &str) -> io::Result<()> {
    check_table(table)?;
    for tool in ["iptables", "ip6tables"] {
        remove_xt_family(tool, table);
    }
    match nft(&format!(
        "table inet {table} {{}}\ndelete table inet {table}\n"
    )) {
        Ok(()) => Ok(()),
        // No nft tool at all: nothing of ours can be there.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// True if the plane's rules (either form) are installed.
pub fn rules_installed(table: &str) -> bool {
    if check_table(table).is_err() {
        return false;
    }
    let nft_has = Command::new("nft")
        .args(["list", "table", "inet", table])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    nft_has
        || ["iptables", "ip6tables"]
            .iter()
            .any(|t| xt(t, &["-C", "OUTPUT", "-j", &format!("{table}_out")]))
}

/// Users named by `uid NAME` in `rules`, resolved through the system's
/// user database (unknown names match nothing).
fn users(rules: &BTreeMap<u32, RuleSpec>) -> BTreeMap<String, u32> {
    let mut m = BTreeMap::new();
    for r in rules.values() {
        for o in &r.options {
            if let OptionKind::Uid(UserMatch::Name(name)) = &o.kind {
                if let Ok(Some(u)) = nix::unistd::User::from_name(name) {
                    m.insert(name.clone(), u.uid.as_raw());
                }
            }
        }
    }
    m
}

/// The host's addresses and interfaces (name to index), for `me` and
/// `via`/`recv`/`xmit`.
fn host_context() -> (Vec<std::net::IpAddr>, BTreeMap<String, u32>) {
    let mut me = Vec::new();
    let mut ifaces = BTreeMap::new();
    if let Ok(addrs) = nix::ifaddrs::getifaddrs() {
        for a in addrs {
            if !ifaces.contains_key(&a.interface_name) {
                if let Ok(i) = nix::net::if_::if_nametoindex(a.interface_name.as_str()) {
                    ifaces.insert(a.interface_name.clone(), i);
                }
            }
            if let Some(s) = a.address {
                if let Some(v4) = s.as_sockaddr_in() {
                    me.push(std::net::IpAddr::V4(v4.ip()));
                } else if let Some(v6) = s.as_sockaddr_in6() {
                    me.push(std::net::IpAddr::V6(v6.ip()));
                }
            }
        }
    }
    (me, ifaces)
}

/// The spec of host mode running `cfg`: one port (the queue), whose
/// packets leave by it; direction, interfaces and owning user as the
/// queue reports them; `me` the host's addresses, interface and user
/// names resolved now. Files are read relative to the current directory.
pub fn host_spec(cfg: &Config) -> Result<Spec, ModeError> {
    let mut spec = lower_config(cfg, &mut pipelab_emu::read_files)?;
    spec.ports = Spec::single_port("queue", None);
    let (me, ifaces) = host_context();
    spec.env = Env {
        me,
        ifaces,
        users: users(&cfg.rules),
    };
    Ok(spec)
}

/// Lower and compile `cfg` for host mode. Nothing is changed.
fn compile(cfg: &Config, seed: u64) -> Result<Compiled, ModeError> {
    Ok(Compiled::new(host_spec(cfg)?, seed)?)
}

/// The counters of the runner thread's emulation.
fn plane_stats(r: &Runner, counters: &VerdictCounters) -> HostStats {
    let emu = r.emulation();
    let pipes = crate::report::pipe_counters(emu);
    let queues = crate::report::queue_counters(emu);
    HostStats {
        runner: r.stats(),
        lateness: r.lateness(),
        port: r
            .port_stats()
            .into_iter()
            .next()
            .map(|(_, s)| s)
            .unwrap_or_default(),
        verdicts: counters.snapshot(),
        rules: emu
            .rules()
            .map(|(n, _, c)| (n, c.packets, c.bytes))
            .collect(),
        pipes,
        queues,
        seed: emu.seed(),
    }
}

impl HostPlane {
    /// Bind the queue, install the nftables table for all of this host's
    /// IP traffic, and start the runner thread (no pipes, no rules yet:
    /// every packet is accepted at once until [`HostPlane::apply`]).
    pub fn start(opts: HostOptions) -> io::Result<HostPlane> {
        HostPlane::start_scoped(opts, &[])
    }

    /// Like [`HostPlane::start`], but only traffic whose peer (destination
    /// on output, source on input) is in one of `scope` is queued; the rest
    /// of the host's traffic never sees the plane. Empty `scope`: all.
    pub fn start_scoped(opts: HostOptions, scope: &[IpNet]) -> io::Result<HostPlane> {
        check_table(&opts.table)?;
        crate::privilege::require("host mode", crate::privilege::NETFILTER)?;
        let copy_range = (BUF_SIZE - 14) as u32;
        let max_len = (opts.runner.mem_cap / BUF_SIZE as u64).clamp(1024, 1 << 20) as u32;
        let port = NfQueue::open(QueueOptions {
            queue_num: opts.queue_num,
            max_len,
            copy_range,
        })?;
        let counters = port.counters();
        // No pipes, no rules until the first apply: every packet is
        // accepted at once.
        let empty = compile(&Config::default(), opts.runner.seed)?;
        // Written down before they are installed: after a crash, the
        // rules stay (fail-closed) until the daemon starts again (and
        // replaces them) or `pipelab cleanup` removes them.
        let mut record = Ledger::new().begin("host", &opts.table)?;
        record.record(Change::HostRules {
            table: opts.table.clone(),
        })?;
        install_rules(&opts.table, opts.queue_num, scope)?;
        let ports: Vec<SendPort> = vec![Box::new(port)];
        let live = match LiveRunner::spawn("pipelab-host", empty, ports, opts.runner, None) {
            Ok(l) => l,
            Err(e) => {
                let _ = remove_table(&opts.table);
                return Err(e);
            }
        };
        Ok(HostPlane {
            live,
            record: Some(record),
            stopped: false,
            table: opts.table,
            seed: opts.runner.seed,
            counters,
        })
    }

    /// Apply `cfg` atomically: it is lowered and compiled first (a bad
    /// configuration changes nothing), then applied between two runner
    /// steps; returns once it is in effect. See the module documentation
    /// for what happens to existing, new and removed pipes.
    pub fn apply(&self, cfg: &Config) -> Result<(), ModeError> {
        self.apply_compiled(HostPlane::compile(cfg, self.seed)?)
    }

    /// The first half of [`HostPlane::apply`]: `cfg` lowered (the files
    /// its pipes name read) and compiled with `seed`, on the caller's
    /// thread; nothing is changed, and the plane is not needed (a control
    /// server does this without its lock).
    pub fn compile(cfg: &Config, seed: u64) -> Result<Compiled, ModeError> {
        compile(cfg, seed)
    }

    /// The second half of [`HostPlane::apply`]: `c` handed to the runner,
    /// in effect between two of its steps when this returns.
    pub fn apply_compiled(&self, c: Compiled) -> Result<(), ModeError> {
        self.live.apply(c).map(|_| ())
    }

    /// The seed the plane compiles with.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Counters now. If the runner thread has stopped, only the verdict
    /// counters are filled.
    pub fn stats(&self) -> HostStats {
        let counters = self.counters.clone();
        self.live
            .with(move |r| plane_stats(r, &counters))
            .unwrap_or_else(|_| HostStats {
                verdicts: self.counters.snapshot(),
                seed: self.seed,
                ..HostStats::default()
            })
    }

    /// The nftables table the plane owns.
    pub fn table(&self) -> &str {
        &self.table
    }

    fn shutdown(&mut self) -> io::Result<HostStats> {
        self.stopped = true;
        let table = self.table.clone();
        let counters = self.counters.clone();
        let last = self.live.with(move |r| {
            // No new packet is queued once the table is gone; what is
            // inside leaves at its time, with its verdict.
            let removed = remove_table(&table);
            // Take in what was queued before the rules went.
            let drained = r
                .step(Duration::ZERO, None)
                .and_then(|()| r.drain(Duration::from_secs(10)));
            (removed.and(drained), plane_stats(r, &counters))
        });
        let joined = self.live.stop();
        // Whatever happened on the thread, the table goes.
        let removed = remove_table(&self.table);
        let stats = match last {
            Ok((done, stats)) => {
                done?;
                stats
            }
            Err(_) => HostStats::default(),
        };
        joined?;
        removed?;
        // Removed: nothing left to undo.
        if let Some(mut r) = self.record.take() {
            let _ = r.forget(&Change::HostRules {
                table: self.table.clone(),
            });
        }
        Ok(stats)
    }

    /// Stop: remove the nftables table, release what the emulator still
    /// holds at its emulated time (at most 10 s; anything left then is
    /// dropped with a verdict), unbind the queue.
    pub fn stop(mut self) -> io::Result<()> {
        self.shutdown().map(|_| ())
    }

    /// Like [`HostPlane::stop`], returning the final counters.
    pub fn stop_with_stats(mut self) -> io::Result<HostStats> {
        self.shutdown()
    }
}

impl Drop for HostPlane {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = self.shutdown();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plane_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<HostPlane>();
    }

    #[test]
    fn table_names_are_checked() {
        assert!(check_table("pipelab_host").is_ok());
        assert!(check_table("").is_err());
        assert!(check_table("1abc").is_err());
        assert!(check_table("a; flush ruleset").is_err());
        assert!(check_table(&"a".repeat(25)).is_err());
    }

    #[test]
    fn script_scopes_both_directions_and_skips_reinjected_copies() {
        let net: IpNet = IpNet::new("198.18.0.0".parse().unwrap(), 30).unwrap();
        let s = nft_script("t1", 9, &[net]);
        assert!(s.contains("ip daddr 198.18.0.0/30 queue num 9"), "{s}");
        assert!(s.contains("ip saddr 198.18.0.0/30 queue num 9"), "{s}");
        assert_eq!(s.matches("meta mark 0x70696c62 return").count(), 2, "{s}");
        assert!(!s.contains("bypass"), "{s}");
        let all = nft_script("t1", 9, &[]);
        assert_eq!(all.matches("    queue num 9\n").count(), 2, "{all}");
    }

    #[test]
    fn the_whole_language_compiles_and_bad_files_are_refused_first() {
        let mut cfg = Config::default();
        cfg.apply_script(
            "pipe 1 config bw 4Mbit/s\nsched 1 config type wf2q+\n\
             queue 10 config weight 3 sched 1\nqueue 11 config weight 1 sched 1\n\
             add 100 queue 10 ip from any to any dst-port 5001\n\
             add 200 queue 11 ip from any to any\nset one_pass 0\n",
        )
        .expect("valid");
        assert!(compile(&cfg, 1).is_ok());
        let mut bad = Config::default();
        bad.apply_script("pipe 1 config bw trace:/nonexistent/x.trace\n")
            .expect("valid");
        let e = compile(&bad, 1).unwrap_err().to_string();
        assert!(
            e.contains("pipe 1") && e.contains("/nonexistent/x.trace"),
            "{e}"
        );
    }
}
