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
//! * [`Hooks::Device`] (`pipelab attach`, [`crate::attach`]) moves the
//!   two base chains to the `postrouting` hook (`oifname "DEV"`,
//!   direction `out`) and the `prerouting` hook (`iifname "DEV"`,
//!   direction `in`), either or both: one interface's traffic, the
//!   host's own and forwarded alike; the iptables form uses chains
//!   `TABLE_post` and `TABLE_pre` of the `mangle` table (the `filter`
//!   table has no PREROUTING). The queue number may be searched for
//!   ([`HostOptions::queue_search`]); a mode with a ledger record of its
//!   own hands it to [`HostPlane::start_recorded`]. An xtables table the
//!   iptables form makes is written down first ([`Change::XtTable`]) and
//!   deleted once only empty built-in chains are left in it; so is a
//!   built-in chain it adds to a table that was there
//!   ([`Change::XtChain`]), deleted once empty.
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
use pipelab_io::nftables::{Hook, OwnedTable, QueueChain};
use pipelab_io::runner::{Lateness, Runner, RunnerOptions, RunnerStats};
use pipelab_lang::{Config, IpNet, OptionKind, Rules, UserMatch};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;

pub use pipelab_io::runner::REALTIME_PRIORITY;

/// Which packets the plane's rules hand to the queue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Hooks {
    /// This host's own traffic: what it sends (output hook, direction
    /// `out`) and what it receives (input hook, direction `in`).
    /// Forwarded traffic passes neither.
    #[default]
    Local,
    /// The traffic crossing one interface, this host's own and forwarded
    /// alike: what leaves by it (`egress`: postrouting hook, `oifname`,
    /// direction `out`) and what arrives on it (`ingress`: prerouting
    /// hook, `iifname`, direction `in`). Nothing on the interface itself
    /// changes (`pipelab attach`).
    Device {
        /// The interface.
        dev: String,
        /// Queue what arrives on it.
        ingress: bool,
        /// Queue what leaves by it.
        egress: bool,
    },
}

/// One base chain of the plane's rules, in both forms.
#[derive(Clone, Copy, Debug)]
struct Chain {
    /// The nftables chain, named after its hook.
    nft: &'static str,
    /// The xtables table and built-in chain that jump to ours.
    xt_table: &'static str,
    xt_hook: &'static str,
    /// Our xtables chain is `TABLE_SUFFIX`.
    suffix: &'static str,
    /// The output side: the peer is the destination, the interface the
    /// output one.
    out: bool,
}

const OUTPUT: Chain = Chain {
    nft: "output",
    xt_table: "filter",
    xt_hook: "OUTPUT",
    suffix: "out",
    out: true,
};
const INPUT: Chain = Chain {
    nft: "input",
    xt_table: "filter",
    xt_hook: "INPUT",
    suffix: "in",
    out: false,
};
// NFQUEUE is not valid in the `filter` table's PREROUTING (it has
// none): `mangle` has both.
const POSTROUTING: Chain = Chain {
    nft: "postrouting",
    xt_table: "mangle",
    xt_hook: "POSTROUTING",
    suffix: "post",
    out: true,
};
const PREROUTING: Chain = Chain {
    nft: "prerouting",
    xt_table: "mangle",
    xt_hook: "PREROUTING",
    suffix: "pre",
    out: false,
};
/// Every chain either form may have left: what [`remove_table`] removes.
const ALL_CHAINS: [Chain; 4] = [OUTPUT, INPUT, POSTROUTING, PREROUTING];

impl Hooks {
    /// The base chains, output side first.
    fn chains(&self) -> Vec<Chain> {
        match self {
            Hooks::Local => vec![OUTPUT, INPUT],
            Hooks::Device {
                ingress, egress, ..
            } => {
                let mut v = Vec::new();
                if *egress {
                    v.push(POSTROUTING);
                }
                if *ingress {
                    v.push(PREROUTING);
                }
                v
            }
        }
    }

    /// The interface, for [`Hooks::Device`].
    pub fn device(&self) -> Option<&str> {
        match self {
            Hooks::Local => None,
            Hooks::Device { dev, .. } => Some(dev),
        }
    }

    /// A device's name is written into the rules: printable, no quote,
    /// backslash or slash, at most 15 bytes (the kernel's limit); and at
    /// least one direction.
    pub fn check(&self) -> io::Result<()> {
        let Hooks::Device {
            dev,
            ingress,
            egress,
        } = self
        else {
            return Ok(());
        };
        let ok = !dev.is_empty()
            && dev.len() <= 15
            && dev
                .bytes()
                .all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'\\' | b'/'));
        if !ok {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("interface name '{dev}': at most 15 printable characters, no quote, backslash or slash"),
            ));
        }
        if !ingress && !egress {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{dev}: neither ingress nor egress"),
            ));
        }
        Ok(())
    }
}

/// What [`HostPlane::start`] needs.
#[derive(Clone, Debug)]
pub struct HostOptions {
    /// The netfilter queue number (unused by anything else on the host).
    pub queue_num: u16,
    /// How many numbers after `queue_num` to try, in order, while the
    /// one tried is in use (0: `queue_num` or an error).
    pub queue_search: u16,
    /// Runner settings.
    pub runner: RunnerOptions,
    /// The nftables table (family `inet`) the plane owns: letters, digits
    /// and `_`, starting with a letter, at most 24 characters.
    pub table: String,
    /// Which packets are queued.
    pub hooks: Hooks,
    /// Tie the rules to this process: an nftables table owned by its
    /// netlink socket ([`pipelab_io::nftables::OwnedTable`]), which the
    /// kernel deletes when the process ends, however it ends (`kill -9`
    /// included), so that fail-closed rules never outlive the queue's
    /// listener. A kernel that cannot (before Linux 5.12, or neither
    /// nftables' `queue` nor the xtables `NFQUEUE` target) gets the
    /// rules of the `nft` tool or iptables, and a note saying so.
    pub owned: bool,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            queue_num: 7400,
            queue_search: 0,
            runner: RunnerOptions {
                priority: pipelab_io::runner::Priority::Realtime,
                ..RunnerOptions::default()
            },
            table: "pipelab_host".into(),
            hooks: Hooks::Local,
            owned: false,
        }
    }
}

pub use crate::report::PipeCounters;

/// What a plane records beside its counters (`pipelabd --pcap`,
/// `--events`, `--interval`, `--series`): see [`HostPlane::start_recording`].
#[derive(Debug, Default)]
pub struct Recording {
    /// The capture and the event log, opened before the start.
    pub capture: Option<pipelab_io::capture::Files>,
    /// Every pipe's counters over time.
    pub series: Option<crate::series::SeriesOptions>,
    /// Who tells the user at exit what did not fit (`pipelabd`).
    pub who: String,
}

/// The names of a plane's ports in a capture and an event log: the
/// netfilter hooks of its two directions, what the host sends (the
/// runner's record port 0) and what it receives (1).
pub fn record_ports(hooks: &Hooks) -> [&'static str; 2] {
    match hooks {
        Hooks::Local => ["output", "input"],
        Hooks::Device { .. } => ["postrouting", "prerouting"],
    }
}

/// What [`HostPlane::stats`] reports.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HostStats {
    /// Packet accounting of the runner.
    pub runner: RunnerStats,
    /// Lateness of releases (verdict time minus emulated departure time).
    pub lateness: Lateness,
    /// Seconds of the run whose releases were late (p99 beyond the
    /// watcher's threshold), and why (see [`crate::precision`]).
    pub precision: crate::precision::Precision,
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
    /// With `--interval`: what each pipe did in each interval (the
    /// latest intervals while the plane runs, see [`Recording`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<crate::series::SeriesReport>,
    /// At the stop, with `--pcap` or `--events`: what was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture: Option<pipelab_io::capture::Summary>,
}

/// The host-mode data plane. See the module documentation.
pub struct HostPlane {
    live: Arc<LiveRunner>,
    /// The capture's writer (`--pcap`, `--events`).
    recorder: Option<pipelab_io::capture::Recorder>,
    /// The series' sampler (`--interval`).
    sampler: Option<crate::series::Sampler>,
    /// Who warns at the stop.
    who: String,
    /// The rules, in the host ledger.
    record: Option<Record>,
    /// How the rules are written there.
    change: Change,
    /// Stopped already (by `stop`).
    stopped: bool,
    table: String,
    queue_num: u16,
    form: RulesForm,
    /// The table, when this process's socket owns it.
    owned: Option<OwnedTable>,
    seed: u64,
    counters: Arc<VerdictCounters>,
}

/// Check an nftables table name (it is written into an nft script, and
/// names the iptables chains `NAME_out`, `NAME_in`, `NAME_pre`,
/// `NAME_post`).
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

/// The nft script that (re)creates the plane's table in one transaction:
/// one base chain per hook of `hooks`, each queueing what `scope` (the
/// peer's networks; empty: all) and the device select, after letting the
/// plane's re-injected copies through.
pub fn nft_script(table: &str, queue_num: u16, scope: &[IpNet], hooks: &Hooks) -> String {
    let mut chains = String::new();
    for c in hooks.chains() {
        let dev = hooks
            .device()
            .map(|d| format!("{} \"{d}\" ", if c.out { "oifname" } else { "iifname" }))
            .unwrap_or_default();
        let mut rules = String::new();
        if scope.is_empty() {
            rules.push_str(&format!("    {dev}queue num {queue_num}\n"));
        }
        for n in scope {
            let fam = if n.addr().is_ipv4() { "ip" } else { "ip6" };
            let side = if c.out { "daddr" } else { "saddr" };
            rules.push_str(&format!(
                "    {dev}{fam} {side} {n} queue num {queue_num}\n"
            ));
        }
        let hook = c.nft;
        chains.push_str(&format!(
            "  chain {hook} {{\n    type filter hook {hook} priority 0; policy accept;\n    \
             meta mark {REINJECT_MARK:#x} return\n{rules}  }}\n"
        ));
    }
    format!(
        "table inet {table} {{}}\ndelete table inet {table}\n\
         table inet {table} {{\n{chains}}}\n"
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

/// The `iptables-restore --noflush` script of one family: the chains of
/// `hooks` (flushed and refilled if they exist), and the jumps to them
/// when `jumps` (they are not there yet).
pub fn xt_script(
    table: &str,
    queue_num: u16,
    nets: &[IpNet],
    all: bool,
    jumps: bool,
    hooks: &Hooks,
) -> String {
    let chains = hooks.chains();
    let mut xt_tables: Vec<&str> = chains.iter().map(|c| c.xt_table).collect();
    xt_tables.dedup();
    let mut s = String::new();
    for t in xt_tables {
        let mine: Vec<&Chain> = chains.iter().filter(|c| c.xt_table == t).collect();
        s.push_str(&format!("*{t}\n"));
        for c in &mine {
            s.push_str(&format!(":{table}_{} - [0:0]\n", c.suffix));
        }
        for c in &mine {
            let chain = format!("{table}_{}", c.suffix);
            s.push_str(&format!(
                "-A {chain} -m mark --mark {REINJECT_MARK:#x} -j RETURN\n"
            ));
            let dev = hooks
                .device()
                .map(|d| format!("{} {d} ", if c.out { "-o" } else { "-i" }))
                .unwrap_or_default();
            let side = if c.out { "-d" } else { "-s" };
            if all {
                s.push_str(&format!(
                    "-A {chain} {dev}-j NFQUEUE --queue-num {queue_num}\n"
                ));
            }
            for n in nets {
                s.push_str(&format!(
                    "-A {chain} {dev}{side} {n} -j NFQUEUE --queue-num {queue_num}\n"
                ));
            }
        }
        if jumps {
            for c in &mine {
                s.push_str(&format!("-I {} 1 -j {table}_{}\n", c.xt_hook, c.suffix));
            }
        }
        s.push_str("COMMIT\n");
    }
    s
}

/// Is the jump from `c`'s built-in chain to ours there?
fn xt_jump(tool: &str, table: &str, c: &Chain) -> bool {
    xt(
        tool,
        &[
            "-t",
            c.xt_table,
            "-C",
            c.xt_hook,
            "-j",
            &format!("{table}_{}", c.suffix),
        ],
    )
}

/// Install the rules through iptables and ip6tables.
fn install_xt(table: &str, queue_num: u16, scope: &[IpNet], hooks: &Hooks) -> io::Result<()> {
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
        let jumps = !hooks.chains().iter().all(|c| xt_jump(tool, table, c));
        if jumps {
            remove_xt_family(tool, table);
        }
        restore(
            restore_tool,
            &xt_script(table, queue_num, &nets, all, jumps, hooks),
        )?;
    }
    Ok(())
}

fn remove_xt_family(tool: &str, table: &str) {
    for c in ALL_CHAINS {
        let chain = format!("{table}_{}", c.suffix);
        while xt(tool, &["-t", c.xt_table, "-D", c.xt_hook, "-j", &chain]) {}
        if xt(tool, &["-t", c.xt_table, "-F", &chain]) {
            xt(tool, &["-t", c.xt_table, "-X", &chain]);
        }
    }
}

/// Which form of the rules is installed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RulesForm {
    /// The nftables table `inet TABLE`, owned by this process's netlink
    /// socket: the kernel deletes it when the process ends.
    Owned,
    /// The nftables table `inet TABLE`.
    Nftables,
    /// Chains `TABLE_...` of iptables and ip6tables (no `queue`
    /// expression in this kernel's nftables).
    Iptables,
}

/// Install the plane's rules: nftables if its `queue` expression is there,
/// else iptables.
fn install_rules(
    table: &str,
    queue_num: u16,
    scope: &[IpNet],
    hooks: &Hooks,
) -> io::Result<RulesForm> {
    match nft(&nft_script(table, queue_num, scope, hooks)) {
        Ok(()) => Ok(RulesForm::Nftables),
        Err(nft_err) => install_xt(table, queue_num, scope, hooks)
            .map(|()| RulesForm::Iptables)
            .map_err(|xt_err| {
                io::Error::other(format!(
                    "installing the queue's rules: {nft_err}; and through iptables: {xt_err}"
                ))
            }),
    }
}

/// The base chains of `hooks` as an owned table has them: each lets the
/// plane's re-injected copies through and queues the rest (of the
/// device, for [`Hooks::Device`]) to `queue_num`, fail-closed.
fn owned_chains(queue_num: u16, hooks: &Hooks) -> Vec<QueueChain> {
    hooks
        .chains()
        .iter()
        .map(|c| QueueChain {
            hook: match c.nft {
                "output" => Hook::Output,
                "input" => Hook::Input,
                "prerouting" => Hook::Prerouting,
                _ => Hook::Postrouting,
            },
            dev: hooks.device().map(str::to_string),
            queue: queue_num,
            skip_mark: REINJECT_MARK,
        })
        .collect()
}

/// Install the plane's rules, owned by this process when `owned` and the
/// kernel can (see [`HostOptions::owned`]; with a `scope`, never: the
/// owned form has no address matches), else as [`install_rules`] does.
fn install(
    table: &str,
    queue_num: u16,
    scope: &[IpNet],
    hooks: &Hooks,
    owned: bool,
) -> io::Result<(RulesForm, Option<OwnedTable>)> {
    if owned && scope.is_empty() {
        let chains = owned_chains(queue_num, hooks);
        let made = OwnedTable::create(table, &chains).or_else(|e| {
            // A table of that name a dead process of the same pid left:
            // replaced.
            if e.raw_os_error() == Some(libc::EEXIST) {
                remove_table(table)?;
                OwnedTable::create(table, &chains)
            } else {
                Err(e)
            }
        });
        match made {
            Ok(t) => return Ok((RulesForm::Owned, Some(t))),
            Err(e) => eprintln!(
                "pipelab: note: this kernel cannot tie the rules to this process ({e}): after a kill -9 they stay, dropping the traffic they queue, until the next pipelab command or `pipelab cleanup` removes them"
            ),
        }
    }
    install_rules(table, queue_num, scope, hooks).map(|f| (f, None))
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

/// True if `nft list ARGS` succeeds (the object exists).
fn nft_lists(args: &[&str]) -> bool {
    Command::new("nft")
        .arg("list")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// What the iptables form of `hooks`' rules would make that does not
/// exist now, as ledger changes: iptables (over nftables) creates a
/// missing xtables table (`ip mangle`, `ip6 filter`), or a missing
/// built-in chain (`POSTROUTING`) of one that exists, and leaves them
/// when our chains go ([`Change::XtTable`], [`Change::XtChain`]).
pub fn missing_xt(hooks: &Hooks) -> Vec<Change> {
    let chains = hooks.chains();
    let mut tables: Vec<&'static str> = chains.iter().map(|c| c.xt_table).collect();
    tables.dedup();
    let mut out = Vec::new();
    for t in tables {
        for family in ["ip", "ip6"] {
            if !nft_lists(&["table", family, t]) {
                out.push(Change::XtTable {
                    family: family.to_string(),
                    table: t.to_string(),
                });
                continue;
            }
            for c in chains.iter().filter(|c| c.xt_table == t) {
                if !nft_lists(&["chain", family, t, c.xt_hook]) {
                    out.push(Change::XtChain {
                        family: family.to_string(),
                        table: t.to_string(),
                        chain: c.xt_hook.to_string(),
                    });
                }
            }
        }
    }
    out
}

/// Delete the built-in chain `family table chain` (one iptables-nft
/// made) if it has no rule and policy accept: what it is once the
/// plane's jump is gone. True if it was deleted; not an error if it does
/// not exist or holds anything (then it stays).
pub fn remove_empty_xt_chain(family: &str, table: &str, chain: &str) -> io::Result<bool> {
    let out = match Command::new("nft")
        .args(["-j", "list", "chain", family, table, chain])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
    {
        Ok(o) if o.status.success() => o.stdout,
        _ => return Ok(false),
    };
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&out) else {
        return Ok(false);
    };
    let Some(items) = v["nftables"].as_array() else {
        return Ok(false);
    };
    let mut empty = false;
    for item in items {
        if item.get("metainfo").is_some() {
            continue;
        }
        let c = &item["chain"];
        match (c["name"].as_str(), c["policy"].as_str()) {
            (Some(n), Some("accept")) if n == chain => empty = true,
            // A rule, or a policy of someone's.
            _ => return Ok(false),
        }
    }
    if !empty {
        return Ok(false);
    }
    nft(&format!("delete chain {family} {table} {chain}\n")).map(|()| true)
}

/// Delete the nftables table `family table` (one iptables-nft made) if
/// nothing is in it but built-in chains without rules and with policy
/// accept: what a table is once the plane's chains are gone. True if it
/// was deleted; not an error if it does not exist or holds anything
/// else (then it stays).
pub fn remove_empty_xt_table(family: &str, table: &str) -> io::Result<bool> {
    let out = match Command::new("nft")
        .args(["-j", "list", "table", family, table])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
    {
        Ok(o) if o.status.success() => o.stdout,
        // No such table, or no nft tool: nothing of ours can be there.
        _ => return Ok(false),
    };
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&out) else {
        return Ok(false);
    };
    let Some(items) = v["nftables"].as_array() else {
        return Ok(false);
    };
    let mut chains = Vec::new();
    for item in items {
        if item.get("metainfo").is_some() || item.get("table").is_some() {
            continue;
        }
        let c = &item["chain"];
        match (c["name"].as_str(), c["hook"].as_str(), c["policy"].as_str()) {
            (Some(name), Some(_), Some("accept")) => chains.push(name.to_string()),
            // A rule, a set, a chain of someone's: not empty.
            _ => return Ok(false),
        }
    }
    let mut script = String::new();
    for c in &chains {
        script.push_str(&format!("delete chain {family} {table} {c}\n"));
    }
    script.push_str(&format!("delete table {family} {table}\n"));
    nft(&script).map(|()| true)
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
            .any(|t| ALL_CHAINS.iter().any(|c| xt_jump(t, table, c)))
}

/// Users named by `uid NAME` in `rules`, resolved through the system's
/// user database (unknown names match nothing).
fn users(rules: &Rules) -> BTreeMap<String, u32> {
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
/// names resolved now (in the calling thread's network namespace).
/// Files are read relative to the current directory.
pub fn host_spec(cfg: &Config) -> Result<Spec, ModeError> {
    host_spec_with(cfg, &mut pipelab_emu::read_files)
}

/// [`host_spec`], the files pipes name read with `load`.
pub fn host_spec_with(cfg: &Config, load: pipelab_emu::Loader<'_>) -> Result<Spec, ModeError> {
    let mut spec = lower_config(cfg, load)?;
    spec.ports = Spec::single_port("queue", None);
    let (me, ifaces) = host_context();
    spec.env = Env {
        me,
        ifaces,
        users: users(&cfg.rules),
        // NFQUEUE hands over IP packets: ipfw's layer-3 pass.
        layer2: false,
    };
    Ok(spec)
}

/// Start the writer of `files` (if any) for the ports of `hooks`.
#[allow(clippy::type_complexity)]
fn start_recorder(
    files: Option<pipelab_io::capture::Files>,
    hooks: &Hooks,
) -> io::Result<(
    Option<pipelab_io::capture::Recorder>,
    Option<pipelab_io::capture::Tap>,
)> {
    let Some(files) = files.filter(|f| !f.is_empty()) else {
        return Ok((None, None));
    };
    let names = record_ports(hooks).map(String::from);
    let (r, t) = pipelab_io::capture::Recorder::start(files, &names)?;
    Ok((Some(r), Some(t)))
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
        precision: Default::default(),
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
        timeseries: None,
        capture: None,
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
        let change = Change::HostRules {
            table: opts.table.clone(),
        };
        HostPlane::start_inner(opts, scope, None, change, Recording::default())
    }

    /// Like [`HostPlane::start_scoped`], recording as `rec` says: the
    /// capture and the event log from the first packet (each direction a
    /// port of its own, named by [`record_ports`]), the series sampled
    /// from the start (read while the plane runs in [`HostPlane::stats`]);
    /// all flushed and closed when the plane stops, after its drain.
    pub fn start_recording(
        opts: HostOptions,
        scope: &[IpNet],
        rec: Recording,
    ) -> io::Result<HostPlane> {
        let change = Change::HostRules {
            table: opts.table.clone(),
        };
        HostPlane::start_inner(opts, scope, None, change, rec)
    }

    /// Like [`HostPlane::start_scoped`], with the rules written in
    /// `record` (an open record of the host ledger: the caller's mode and
    /// name) as `change` (made in the calling thread's namespace) before
    /// they are installed. The plane keeps `record`: stopping it removes
    /// the rules and forgets `change`, dropping the record undoes the
    /// caller's other changes.
    pub fn start_recorded(
        opts: HostOptions,
        scope: &[IpNet],
        record: Record,
        change: Change,
        rec: Recording,
    ) -> io::Result<HostPlane> {
        HostPlane::start_inner(opts, scope, Some(record), change, rec)
    }

    fn start_inner(
        opts: HostOptions,
        scope: &[IpNet],
        record: Option<Record>,
        change: Change,
        rec: Recording,
    ) -> io::Result<HostPlane> {
        check_table(&opts.table)?;
        opts.hooks.check()?;
        crate::privilege::require("host mode", crate::privilege::NETFILTER)?;
        let copy_range = (BUF_SIZE - 14) as u32;
        let max_len = (opts.runner.mem_cap / BUF_SIZE as u64).clamp(1024, 1 << 20) as u32;
        let mut k = 0u16;
        let (port, queue_num) = loop {
            let queue_num = opts.queue_num.wrapping_add(k);
            match NfQueue::open(QueueOptions {
                queue_num,
                max_len,
                copy_range,
            }) {
                Ok(p) => break (p, queue_num),
                Err(e) if e.kind() == io::ErrorKind::AddrInUse && k < opts.queue_search => k += 1,
                Err(e) => return Err(e),
            }
        };
        let counters = port.counters();
        // No pipes, no rules until the first apply: every packet is
        // accepted at once.
        let empty = compile(&Config::default(), opts.runner.seed)?;
        // Written down before they are installed: after a crash, the
        // rules stay (fail-closed) until the daemon starts again (and
        // replaces them) or `pipelab cleanup` removes them (host mode),
        // or until the next pipelab command (attach).
        let mut record = match record {
            Some(r) => r,
            None => Ledger::new().begin("host", &opts.table)?,
        };
        // Tables and built-in chains iptables would make for the
        // fallback: removed once empty again, after the rules (undone
        // newest first).
        for made in missing_xt(&opts.hooks) {
            record.record(made)?;
        }
        record.record(change.clone())?;
        let (form, owned) = install(&opts.table, queue_num, scope, &opts.hooks, opts.owned)?;
        let ports: Vec<SendPort> = vec![Box::new(port)];
        let started = start_recorder(rec.capture, &opts.hooks).and_then(|(recorder, tap)| {
            let live = Arc::new(LiveRunner::spawn(
                "pipelab-host",
                empty,
                ports,
                opts.runner,
                tap,
            )?);
            match crate::series::start(&live, rec.series) {
                Ok(sampler) => Ok((live, recorder, sampler)),
                Err(e) => {
                    let _ = live.stop();
                    Err(e)
                }
            }
        });
        let (live, recorder, sampler) = match started {
            Ok(l) => l,
            Err(e) => {
                let _ = remove_table(&opts.table);
                return Err(e);
            }
        };
        Ok(HostPlane {
            live,
            recorder,
            sampler,
            who: rec.who,
            record: Some(record),
            change,
            stopped: false,
            table: opts.table,
            queue_num,
            form,
            owned,
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

    /// [`HostPlane::compile`], the files pipes name read with `load`.
    pub fn compile_with(
        cfg: &Config,
        seed: u64,
        load: pipelab_emu::Loader<'_>,
    ) -> Result<Compiled, ModeError> {
        Ok(Compiled::new(host_spec_with(cfg, load)?, seed)?)
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
        let mut s = self
            .live
            .with(move |r| plane_stats(r, &counters))
            .unwrap_or_else(|_| HostStats {
                verdicts: self.counters.snapshot(),
                seed: self.seed,
                ..HostStats::default()
            });
        s.timeseries = self.sampler.as_ref().map(crate::series::Sampler::report);
        s.precision = self.live.precision();
        s
    }

    /// The nftables table the plane owns.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The netfilter queue it is bound to.
    pub fn queue_num(&self) -> u16 {
        self.queue_num
    }

    /// How its rules are installed.
    pub fn rules_form(&self) -> RulesForm {
        self.form
    }

    fn shutdown(&mut self) -> io::Result<HostStats> {
        self.stopped = true;
        let table = self.table.clone();
        let counters = self.counters.clone();
        // The sampler takes no more samples; the last one is taken with
        // the final counters, after the drain, so that they add up.
        let series = crate::series::stop(self.sampler.take());
        let (series, series_err) = match series {
            Ok(s) => (s, None),
            Err(e) => (None, Some(e)),
        };
        let probe = series.as_ref().map(|s| s.probe());
        // An owned table is deleted through its own socket (nobody else
        // may), before the drain as the other forms are.
        let owned = self.owned.take().map(OwnedTable::delete);
        let by_tool = owned.is_none();
        let last = self.live.with(move |r| {
            // No new packet is queued once the table is gone; what is
            // inside leaves at its time, with its verdict.
            let removed = match owned {
                Some(deleted) => deleted,
                None => remove_table(&table),
            };
            // Take in what was queued before the rules went.
            let drained = r
                .step(Duration::ZERO, None)
                .and_then(|()| r.drain(Duration::from_secs(10)));
            let sample = probe.map(|p| p(r));
            (removed.and(drained), plane_stats(r, &counters), sample)
        });
        let joined = self.live.stop();
        // Whatever happened on the thread, the table goes (an owned one
        // went with its socket at the latest).
        let removed = if by_tool {
            remove_table(&self.table)
        } else {
            Ok(())
        };
        // The runner, and so its tap, is gone: every record it sent is
        // written once the writer has them all.
        let capture = crate::capture::finish(self.recorder.take(), &self.who);
        let (mut stats, sample, done) = match last {
            Ok((done, stats, sample)) => (stats, sample, Some(done)),
            Err(_) => (HostStats::default(), None, None),
        };
        stats.precision = self.live.precision();
        let timeseries = match (series, sample) {
            (Some(s), Some(sample)) => Some(s.finish(vec![sample], &self.who)),
            _ => None,
        }
        .transpose();
        if let Some(done) = done {
            done?;
        }
        joined?;
        removed?;
        stats.capture = capture?;
        stats.timeseries = timeseries?;
        if let Some(e) = series_err {
            return Err(e);
        }
        // Removed: nothing left to undo.
        if let Some(mut r) = self.record.take() {
            let _ = r.forget(&self.change);
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
        let s = nft_script("t1", 9, &[net], &Hooks::Local);
        assert!(s.contains("ip daddr 198.18.0.0/30 queue num 9"), "{s}");
        assert!(s.contains("ip saddr 198.18.0.0/30 queue num 9"), "{s}");
        assert_eq!(s.matches("meta mark 0x70696c62 return").count(), 2, "{s}");
        assert!(!s.contains("bypass"), "{s}");
        let all = nft_script("t1", 9, &[], &Hooks::Local);
        assert_eq!(all.matches("    queue num 9\n").count(), 2, "{all}");
        assert!(
            all.contains("hook output") && all.contains("hook input"),
            "{all}"
        );
    }

    #[test]
    fn a_device_is_queued_at_prerouting_and_postrouting_by_name() {
        let dev = |ingress, egress| Hooks::Device {
            dev: "veth-x0".into(),
            ingress,
            egress,
        };
        let both = nft_script("pipelab_at_1", 7, &[], &dev(true, true));
        assert!(
            both.contains("type filter hook postrouting priority 0;"),
            "{both}"
        );
        assert!(
            both.contains("type filter hook prerouting priority 0;"),
            "{both}"
        );
        assert!(
            both.contains("    oifname \"veth-x0\" queue num 7\n"),
            "{both}"
        );
        assert!(
            both.contains("    iifname \"veth-x0\" queue num 7\n"),
            "{both}"
        );
        assert_eq!(both.matches("meta mark 0x70696c62 return").count(), 2);
        assert!(!both.contains("hook output") && !both.contains("hook input"));
        assert!(!both.contains("bypass"), "fail-closed: {both}");
        // Egress only, as tc's root qdisc: no prerouting chain at all.
        let egress = nft_script("pipelab_at_1", 7, &[], &dev(false, true));
        assert!(egress.contains("hook postrouting") && !egress.contains("prerouting"));
        // iptables: the mangle table (NFQUEUE in PREROUTING), by device.
        let xt = xt_script("pipelab_at_1", 7, &[], true, true, &dev(true, true));
        assert!(xt.starts_with("*mangle\n"), "{xt}");
        assert!(
            xt.contains("-A pipelab_at_1_post -o veth-x0 -j NFQUEUE --queue-num 7\n"),
            "{xt}"
        );
        assert!(
            xt.contains("-A pipelab_at_1_pre -i veth-x0 -j NFQUEUE --queue-num 7\n"),
            "{xt}"
        );
        assert!(
            xt.contains("-I POSTROUTING 1 -j pipelab_at_1_post\n"),
            "{xt}"
        );
        assert!(xt.contains("-I PREROUTING 1 -j pipelab_at_1_pre\n"), "{xt}");
        assert!(!xt.contains("*filter"), "{xt}");
        // Host mode's script is unchanged: the filter table's OUTPUT/INPUT.
        let local = xt_script("t", 7, &[], true, true, &Hooks::Local);
        assert!(
            local.starts_with("*filter\n:t_out - [0:0]\n:t_in - [0:0]\n"),
            "{local}"
        );
        assert!(local.ends_with("-I OUTPUT 1 -j t_out\n-I INPUT 1 -j t_in\nCOMMIT\n"));
    }

    #[test]
    fn device_names_that_could_escape_the_rules_are_refused() {
        let dev = |d: &str| Hooks::Device {
            dev: d.into(),
            ingress: false,
            egress: true,
        };
        assert!(dev("eth0").check().is_ok());
        assert!(dev("br-1a2b.100").check().is_ok());
        for bad in [
            "",
            "a\"; flush ruleset",
            "a b",
            "a/b",
            "a\\b",
            "abcdefghijklmnop",
        ] {
            assert!(dev(bad).check().is_err(), "{bad:?}");
        }
        let none = Hooks::Device {
            dev: "eth0".into(),
            ingress: false,
            egress: false,
        };
        assert!(none.check().unwrap_err().to_string().contains("neither"));
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
