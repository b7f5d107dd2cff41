//! Live topologies (ModelNet's bind and run phases, §2.1): every virtual
//! node (VN) of a distilled topology is a named network namespace on this
//! host, and one runner moves its packets through the pipes of their routes.
//!
//! ```text
//!  netns pl-NAME-vn0            pipelab topo up (one process)           netns pl-NAME-vn7
//!  app ── eth0 (TAP) ══ fd ══ steer(src port, dst IP) → route ══ fd ══ eth0 (TAP) ── app
//!                                 pipes crossed by reference
//! ```
//!
//! * **Namespaces.** `pl-NAME-VN`, bind-mounted under `/run/netns` as
//!   `ip netns add` does, so `ip netns exec` works and `down` finds them by
//!   name after a crash. A worker thread `unshare`s a fresh namespace per
//!   VN, bind-mounts it, creates the TAP `eth0` inside it (the device never
//!   appears in the host's namespace) and configures it over a netlink
//!   socket opened in that namespace: on a dual-stack topology first its
//!   IPv6 address generation mode (none: no link-local address), then one
//!   link request (MAC, `NOARP`, MTU, up), `lo` up, the addresses and
//!   default routes, pipelined on one connection. A file under
//!   `/proc/sys` (each costs a search through every namespace's entries)
//!   is written only to turn IPv6 on where the host's new namespaces
//!   start without it, or off on an IPv4-only topology. Several workers
//!   run in parallel.
//! * **Addresses.** Topologies are dual-stack. VN `i` (in topology order)
//!   gets the `i + 1`-th address of the prefix (default `10.0.0.0/8`),
//!   with the prefix's length, so all VNs are on-link; the default route
//!   also points at `eth0`. It also gets host `i + 1` of an IPv6 /64
//!   (`NET6::1` for the first VN), `nodad`, and an on-link default route
//!   `::/0` by `eth0`. The /64 is one of the host's ULA /48
//!   ([`crate::ledger::shell_range6`], shells take theirs there too),
//!   reserved in the ledger (no running shell or topology shares it): the
//!   one the topology's name hashes to when free
//!   ([`crate::ledger::topo_subnet6_index`]), so the addresses stay from
//!   run to run. Without IPv6 on this host, topologies are IPv4 only.
//! * **No ARP, no ND.** Every `eth0` has the same MAC address and the
//!   `NOARP` flag: the kernel then addresses every frame to its own MAC
//!   (the neighbour entry of a `NOARP` device is the device's address,
//!   for IPv6 as for IPv4), so frames arrive at the destination VN
//!   already addressed to it, and no resolution traffic exists. The VNs
//!   have no link-local IPv6 address, do no duplicate address detection
//!   and neither solicit nor take router advertisements
//!   ([`crate::ipv6`]): an idle VN sends no frame at all. Frames
//!   that are not IPv4 or IPv6 unicast to another VN of the topology are
//!   dropped (and counted as `rule` drops).
//! * **Steering.** The topology is lowered to the one emulation spec
//!   ([`pipelab_topo::lower()`]): port `k` is VN `k`, its frames leave by
//!   the port their destination address (IPv4 or IPv6: both of a VN's
//!   addresses are its port's) belongs to, across the pipes
//!   of the pair's route (an `n × n` table of engine routes). The runner
//!   reads each frame once into its buffer; the engine moves one
//!   descriptor through the route's pipes.
//! * **Control.** The running emulator listens on the Unix socket
//!   `/run/pipelab/topo/NAME.sock`, one text command per connection, one
//!   line of reply: `link A B down|up`, `link A B set bw 1Mbit/s delay
//!   10ms loss 1% queue 20` (any subset; pipes are reconfigured keeping
//!   their queued packets), `node N down|up` (routes are
//!   recomputed by [`pipelab_topo::Network`] and only the changed pairs'
//!   entries are swapped: traffic on other routes never stops; queued
//!   packets finish on the route they entered), `cross SRC DST RATE ...`
//!   / `cross clear` (synthetic cross traffic, ModelNet §4.3: the demand
//!   matrix loads the pipes of its routes and each loaded pipe gets the
//!   bandwidth, delay and queue of [`pipelab_topo::cross`]'s M/M/1 model,
//!   recomputed whenever routes change), `status` (JSON), `stop`. Each
//!   change lowers the topology again and applies the spec: the emulation
//!   reconfigures changed pipes in place and swaps only the changed
//!   pairs' routes.
//!   SIGHUP, SIGINT, SIGQUIT and SIGTERM stop it too.
//! * **State.** `/run/pipelab/topo/NAME.json` ([`TopoState`]): pid, VNs,
//!   addresses (`addr`, `addr6`); written once forwarding runs. A command
//!   run in a VN finds its name and addresses in `PIPELAB_VN`,
//!   `PIPELAB_ADDR` and `PIPELAB_ADDR6`. [`down`] stops the emulator,
//!   kills every process left in its namespaces and unmounts them; it
//!   works from the name alone after a crash. The TAPs vanish with the
//!   emulator's descriptors, so no link is ever left in the host. Every
//!   namespace and file is written in the host ledger
//!   ([`crate::ledger`]) before it is made: after a crash, the next
//!   pipelab command (or `pipelab cleanup`) removes them and says so.

use crate::error::ModeError;
use crate::ipv6::{ipv6_available, new_namespaces_lack_ipv6, turn_on_ipv6};
use crate::ledger::{
    host_networks6, shell_range6, topo_subnet6_index, Change as HostChange, Ledger, NsId,
};
use crate::live::{LiveRunner, SendPort};
use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sched::{setns, unshare, CloneFlags};
use pipelab_emu::Compiled;
use pipelab_io::backends::tap::{Tap, TapDrops};
use pipelab_io::runner::{Lateness, RunnerOptions, RunnerStats};
use pipelab_io::signals::StopSignals;
use pipelab_topo::cross::{pipe_loads, Demand};
use pipelab_topo::route::Change;
use pipelab_topo::{Metric, Mode, Network, PathCache, Routes, Topology};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::Instant;

/// Where state files and control sockets live.
pub const STATE_DIR: &str = "/run/pipelab/topo";
/// Where named network namespaces live (as for `ip netns`).
pub const NETNS_DIR: &str = "/run/netns";
/// The MAC address of every VN's `eth0` (locally administered).
pub const VN_MAC: [u8; 6] = [0x02, 0x70, 0x6c, 0x00, 0x00, 0x01];

/// One VN of a running topology.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VnState {
    /// The node's name.
    pub name: String,
    /// The node's id in the topology file.
    pub id: u64,
    /// Its address.
    pub addr: Ipv4Addr,
    /// Its IPv6 address (`None`: the topology is IPv4 only, this host
    /// having no IPv6).
    #[serde(default)]
    pub addr6: Option<Ipv6Addr>,
    /// Its namespace (under [`NETNS_DIR`]).
    pub netns: String,
}

/// A node of the topology (for resolving names in commands).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeName {
    /// The node's id.
    pub id: u64,
    /// The node's name (may be empty).
    pub name: String,
}

/// The state file of a running topology.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TopoState {
    /// The topology's name.
    pub name: String,
    /// The emulator's process id.
    pub pid: u32,
    /// The topology file.
    pub file: String,
    /// The distillation.
    pub distill: String,
    /// The address prefix.
    pub prefix: String,
    /// The IPv6 prefix, a /64 (`None`: IPv4 only).
    #[serde(default)]
    pub prefix6: Option<String>,
    /// Engine pipes.
    pub pipes: usize,
    /// VN pairs whose route is cached (routes are computed on demand, for
    /// a pair's first packet: none when the state is written at start;
    /// `topo status` shows the running emulator's count).
    pub routes: usize,
    /// Time from start to forwarding, ms.
    pub up_ms: f64,
    /// The seed of every random decision.
    #[serde(default)]
    pub seed: u64,
    /// Worker threads forwarding packets (0: not recorded).
    #[serde(default)]
    pub workers: u16,
    /// What `topo up` changed of its options, said once it is up (more
    /// workers asked than the topology can use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The VNs, in port order.
    pub vns: Vec<VnState>,
    /// Every node (VNs and routers).
    pub nodes: Vec<NodeName>,
}

impl TopoState {
    /// The VN named `key`, or with id `key`, or address `key` (IPv4 or
    /// IPv6).
    pub fn vn(&self, key: &str) -> Option<&VnState> {
        self.vns
            .iter()
            .find(|v| v.name == key)
            .or_else(|| {
                let id: u64 = key.parse().ok()?;
                self.vns.iter().find(|v| v.id == id)
            })
            .or_else(|| match key.parse().ok()? {
                IpAddr::V4(a) => self.vns.iter().find(|v| v.addr == a),
                IpAddr::V6(a) => self.vns.iter().find(|v| v.addr6 == Some(a)),
            })
    }

    /// True if `key` names a node: by name (`n<ID>` for an unnamed
    /// node, as [`pipelab_topo::Topology::node_name`]) or id.
    pub fn has_node(&self, key: &str) -> bool {
        self.nodes.iter().any(|n| {
            n.name == key
                || (n.name.is_empty() && key.strip_prefix('n') == Some(&n.id.to_string()))
                || key.parse() == Ok(n.id)
        })
    }
}

/// What `pipelab topo up` needs.
pub struct UpOptions {
    /// The topology's name (letters, digits, `_`, `.`; at most 32).
    pub name: String,
    /// The topology.
    pub topology: Topology,
    /// The file it came from (for the state file).
    pub file: String,
    /// The distillation.
    pub mode: Mode,
    /// What routes minimise (and reroutes after faults).
    pub metric: Metric,
    /// Symmetric routes, or each direction on its own (also after faults).
    pub routes: Routes,
    /// The address prefix: network and length.
    pub prefix: (Ipv4Addr, u8),
    /// Runner settings.
    pub runner: RunnerOptions,
    /// Worker threads creating namespaces.
    pub threads: usize,
    /// A configuration of the language for the VNs' traffic (pipes,
    /// schedulers, flow queues, rules, tables; empty: none): its rules
    /// see a VN's frames as `out`, received on the VN (`recv NAME`) and
    /// sent to the destination's (`xmit NAME`); a frame a rule sends to a
    /// pipe or queue takes its topology path when it leaves it.
    /// `pipelab --target NAME` changes it at run time.
    pub config: pipelab_lang::Config,
    /// Reads the files the configuration's pipes name.
    pub load: pipelab_emu::FileLoader,
    /// GSO super-frames on the VNs' TAPs ([`pipelab_io::gso`]); else
    /// MTU-sized frames only.
    pub offload: bool,
    /// Workers (`--workers`, `--cpus`): as many as the CPUs allow, at
    /// most one per link (see [`crate::workers`]).
    pub workers: crate::workers::WorkerOptions,
    /// How the pipes are split over the workers (`--split`).
    pub split: SplitBy,
    /// A capture and an event log to write (`--pcap`, `--events`), one
    /// interface pair per VN, opened before the run; closed (valid) when
    /// the topology stops.
    pub capture: Option<pipelab_io::capture::Files>,
    /// Per-interval series of every link direction (`--series`), its
    /// pipes named `a->b` here.
    pub series: Option<crate::series::SeriesOptions>,
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.into())
}

/// Check a topology name: 1 to 32 letters, digits, `_` or `.` (no `-`,
/// so `pl-NAME-` prefixes of two topologies never overlap).
pub fn check_name(name: &str) -> io::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
        && name != "."
        && name != "..";
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "topology name '{name}': use 1 to 32 letters, digits, '_' or '.'"
        )))
    }
}

/// The namespace of VN `vn` of topology `name`.
pub fn netns_name(name: &str, vn: &str) -> String {
    format!("pl-{name}-{vn}")
}

/// Parse `A.B.C.D/LEN` into its network address and length.
pub fn parse_prefix(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let (a, l) = s
        .split_once('/')
        .ok_or_else(|| format!("prefix '{s}': expected A.B.C.D/LEN"))?;
    let addr: Ipv4Addr = a
        .parse()
        .map_err(|_| format!("prefix '{s}': '{a}' is not an IPv4 address"))?;
    let len: u8 = l
        .parse()
        .ok()
        .filter(|&l| l <= 30)
        .ok_or_else(|| format!("prefix '{s}': length '{l}' must be 0 to 30"))?;
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    Ok((Ipv4Addr::from(u32::from(addr) & mask), len))
}

/// Names, ids, addresses and namespaces of `topo`'s VNs (in topology
/// order) under `prefix` and, on a dual-stack topology, the /64 `net6`:
/// VN `i` is host `i + 1` of both, so its IPv6 address ends in the same
/// number as its IPv4 one counts from the prefix (10.0.0.3 and
/// `NET6::3`).
pub fn plan(
    name: &str,
    topo: &Topology,
    prefix: (Ipv4Addr, u8),
    net6: Option<Ipv6Addr>,
) -> io::Result<Vec<VnState>> {
    let vns = topo.vns();
    if vns.len() > pipelab_emu::MAX_PORTS {
        return Err(invalid(format!(
            "{} VNs: a live topology has at most {} (a VN is a port, and a packet names its ports in 16 bits)",
            vns.len(),
            pipelab_emu::MAX_PORTS
        )));
    }
    let room = 1u64 << (32 - prefix.1 as u32);
    if vns.len() as u64 + 2 > room {
        return Err(invalid(format!(
            "{} VNs do not fit in {}/{}",
            vns.len(),
            prefix.0,
            prefix.1
        )));
    }
    let base = u32::from(prefix.0) + 1;
    let mut seen = HashMap::new();
    let mut out = Vec::with_capacity(vns.len());
    for (i, &v) in vns.iter().enumerate() {
        let node = &topo.nodes[v];
        // The name commands resolve it by, too (`n<ID>` if unnamed).
        let vn = topo.node_name(v);
        if vn.len() > 200
            || !vn
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
        {
            return Err(invalid(format!(
                "node {} name '{vn}': a VN name may hold letters, digits, '_', '.' and '-'",
                node.id
            )));
        }
        if let Some(prev) = seen.insert(vn.clone(), node.id) {
            return Err(invalid(format!(
                "nodes {prev} and {} are both named '{vn}'",
                node.id
            )));
        }
        out.push(VnState {
            netns: netns_name(name, &vn),
            name: vn,
            id: node.id,
            addr: Ipv4Addr::from(base + i as u32),
            addr6: net6.map(|n| Ipv6Addr::from(u128::from(n) + 1 + i as u128)),
        });
    }
    Ok(out)
}

/// The live network: the topology under faults and the synthetic cross
/// traffic in force; every change is lowered to a spec and applied.
struct Live {
    net: Network,
    /// The route cache the workers ask for the pairs they have not
    /// routed yet (over the network's pipes as they are now).
    cache: Arc<PathCache>,
    /// VN names, in port order.
    names: Vec<String>,
    /// VN 0's address.
    base: Ipv4Addr,
    /// VN 0's IPv6 address (`None`: IPv4 only).
    base6: Option<Ipv6Addr>,
    seed: u64,
    /// The synthetic cross-traffic matrix in force (ModelNet §4.3).
    cross: Vec<Demand>,
    /// Topology pairs whose route changed since the start.
    paths_changed: usize,
    /// The configuration for the VNs' traffic, lowered.
    config: pipelab_emu::Spec,
    /// Reads the files its pipes name (shared with the plane's preparer).
    load: Arc<pipelab_emu::FileLoader>,
    /// The runner.
    runner: Arc<LiveRunner>,
}

impl Live {
    /// The spec of the network as it is now, compiled: its paths on
    /// demand from [`Live::cache`].
    fn compiled(&self) -> Result<Compiled, ModeError> {
        let d = self.net.distilled();
        // Cross traffic follows the routes now in force.
        let loads = pipe_loads(d, &self.cross);
        let mut spec = pipelab_topo::lower_on_demand(
            d,
            &self.names,
            self.base,
            self.base6,
            &loads,
            self.cache.clone(),
        )?;
        spec.merge_config(&self.config);
        Ok(Compiled::new(spec, self.seed)?)
    }

    /// A new route cache for the network as it is now, holding the
    /// routes the network holds (the pairs in use, routed anew by a
    /// change): the one the next spec asks.
    fn renew_cache(&mut self) {
        self.cache = Arc::new(self.net.path_cache());
    }

    fn apply(&mut self, c: &Change) -> Result<String, ModeError> {
        let applied = self.runner.apply(self.compiled()?)?;
        self.paths_changed += applied.paths_changed;
        let d = self.net.distilled();
        let unreachable = c
            .routes
            .iter()
            .filter(|&&(s, t)| d.routes.route(s, t).is_none())
            .count();
        Ok(format!(
            "ok: {} routes changed ({unreachable} now unreachable), {} pipes changed",
            applied.paths_changed,
            applied.reconfigured.len()
        ))
    }

    /// Run one control command (the topology command grammar of
    /// [`pipelab_topo::command`]).
    fn command(&mut self, line: &str) -> Result<String, ModeError> {
        use pipelab_topo::command::{execute_with, Outcome};
        if let Some(f) = crate::fault::parse_pipe_fault(line) {
            let f = f.map_err(|e| ModeError::Command(e.to_string()))?;
            return crate::fault::run(&self.runner, f);
        }
        // The pairs the workers routed since the last change are the
        // network's from now on: a change routes them anew (and only
        // them, with the pairs of the cross traffic).
        self.net.learn(&self.cache);
        let change = match execute_with(
            line,
            &mut self.net,
            &mut self.cross,
            Some(&mut read_by_path),
        )
        .map_err(ModeError::Command)?
        {
            Outcome::Blackhole { pipes, duration } => {
                // The link's pipes, each black-holed in every worker's
                // emulation; no route changes (routing does not see it).
                let numbers: Vec<u32> = pipes
                    .iter()
                    .map(|&p| pipelab_topo::pipe_number(p))
                    .collect();
                for &n in &numbers {
                    crate::fault::run(
                        &self.runner,
                        crate::fault::PipeFault::Down {
                            pipe: n,
                            duration: Some(duration),
                        },
                    )?;
                }
                let list: Vec<String> = numbers.iter().map(u32::to_string).collect();
                return Ok(format!(
                    "ok: pipes {} down for {duration} (no reroute)",
                    list.join(", ")
                ));
            }
            Outcome::Stop => {
                // The emulator's main thread waits for the stop signals:
                // send it one, as Ctrl-C or `kill` would.
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::this(),
                    nix::sys::signal::Signal::SIGTERM,
                );
                return Ok("ok: stopping".to_string());
            }
            Outcome::Status => {
                let s = self.status()?;
                return serde_json::to_string(&s).map_err(|e| ModeError::Command(e.to_string()));
            }
            Outcome::Changed(change) => change,
        };
        self.renew_cache();
        self.apply(&change)
    }

    fn status(&self) -> Result<Status, ModeError> {
        let t = crate::workers::live_totals(&self.runner)?;
        let (stats, lateness, rules, queues) = (t.stats, t.lateness, t.rules, t.queues);
        Ok(Status {
            workers: t.workers,
            stats,
            lateness,
            precision: t.precision,
            links_down: self.net.faults().link_up.iter().filter(|u| !**u).count(),
            nodes_down: self.net.faults().node_up.iter().filter(|u| !**u).count(),
            routes_made: self.paths_changed,
            routes_cached: self.cache.len(),
            rules,
            queues,
        })
    }
}

/// How a topology's pipes and VNs are split over workers (see
/// [`split`]).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Split {
    /// The worker owning each topology pipe (by pipe number).
    owners: std::collections::BTreeMap<u32, u16>,
    /// The worker receiving each VN's port.
    rx: Vec<u16>,
    /// By directions (`None` by links, where nothing is decided on
    /// them, so the routes are not walked): the route crossings of this
    /// split, and those the link cut alone would have made (each pipe on
    /// its link's worker) with the same receiving workers. A route's
    /// crossings are the times consecutive stages (the source's
    /// receiving worker, then each pipe's owner) are on different
    /// workers; summed over every VN pair's route.
    crossings: Option<(u64, u64)>,
}

/// How `topo up` splits a topology's pipes over workers (`--split`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SplitBy {
    /// Both directions of a link on the link's worker in `topo assign`'s
    /// partition: a one-way flow's hops are shared by the workers (one
    /// hand-off where its route is cut).
    #[default]
    Links,
    /// Each link direction with the worker reading the VNs whose routes
    /// use it: a chain's route crosses no worker, and a flow's work is
    /// its source's worker's (see docs/design-notes.md, "Workers").
    Directions,
}

impl SplitBy {
    /// Parse `--split`: `links` or `directions`.
    pub fn parse(s: &str) -> Result<SplitBy, String> {
        match s {
            "links" => Ok(SplitBy::Links),
            "directions" => Ok(SplitBy::Directions),
            _ => Err(format!("--split '{s}': expected links or directions")),
        }
    }
}

/// Which workers a pipe's routes come from (or go to): none yet, one,
/// or several.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Users {
    None,
    One(u16),
    Many,
}

impl Users {
    fn add(&mut self, w: u16) {
        *self = match *self {
            Users::None => Users::One(w),
            Users::One(v) if v == w => Users::One(w),
            _ => Users::Many,
        };
    }
}

/// The crossings of `routes` (source port, pipe numbers) when port `s`
/// is received by `rx[s]` and pipe `p` is owned by `owner(p)`.
fn crossings(routes: &[(usize, usize, Vec<u32>)], rx: &[u16], owner: impl Fn(u32) -> u16) -> u64 {
    let mut n = 0;
    for (s, _, hops) in routes {
        let mut at = rx.get(*s).copied().unwrap_or(0);
        for &p in hops {
            let w = owner(p);
            n += u64::from(w != at);
            at = w;
        }
    }
    n
}

/// The most VN pairs whose routes weigh the split of a topology over
/// workers: every pair of a topology of up to 317 VNs (ModelNet's
/// routing matrix), else the routes from evenly spaced VNs to all others
/// (routes are computed on demand: the whole matrix of 10,000 VNs is
/// 100 million routes).
const SPLIT_PAIRS: usize = 100_000;

/// How a topology is split over `k` workers: by links as `topo
/// assign`'s partition (steps 1 and 2's first sentence), or by
/// directions:
///
/// 1. **The link cut.** Its links (pipe pairs) as
///    [`pipelab_topo::partition_balanced`] assigns them (cut weighted by
///    route usage; the best of 8 starts on topologies of up to 100 000
///    routes).
/// 2. **The VNs.** Each VN's port is received by the worker owning the
///    first pipe of its routes in the cut. By directions, while a worker
///    receives no VN and another receives two or more, that one's last
///    VN moves to it.
/// 3. **The pipes, by direction.** A pipe whose routes all come from
///    VNs received by one worker is that worker's; else one whose routes
///    all go to VNs received by one worker is that one's; else (routes
///    from and to VNs of several workers) it keeps its link's worker in
///    the cut. So a chain's route `a → b` runs on the worker reading
///    `a`'s TAP and `b → a` on the one reading `b`'s, with no hand-off;
///    on a tree, a route runs on its source's worker up to the first
///    pipe other workers' VNs send into too, then on its destination's,
///    crossing at most once (unless a pipe carries routes both from and
///    to VNs of several workers, where one of them must cross twice).
///    Where routes make that worse than the cut (counted in
///    [`Split::crossings`]), the cut's owners are kept.
///
/// Ownership is computed once, at start, from the routes of every VN
/// pair, or of a sample of at most [`SPLIT_PAIRS`] pairs on a larger
/// topology ([`Network::sample_routes`]); a VN whose first pipe no
/// sampled route shows is received with its lowest pipe out. One worker
/// owns everything without routing a pair.
fn split(net: &Network, spec: &pipelab_emu::Spec, k: u16, seed: u64, by: SplitBy) -> Split {
    use std::collections::BTreeMap;
    let d = net.distilled();
    let k = k.max(1);
    let ports = spec.ports.len();
    if k == 1 {
        return Split {
            owners: (0..d.pipes.len() as u32)
                .map(|i| (pipelab_topo::pipe_number(i), 0))
                .collect(),
            rx: vec![0; ports],
            crossings: (by == SplitBy::Directions).then_some((0, 0)),
        };
    }
    let sample = net.sample_routes(SPLIT_PAIRS);
    // The partitioner refines a random start and may settle in a local
    // minimum (a chain cut twice where once would do): on a small enough
    // topology, a few starts, keeping the one with the fewest hand-offs.
    let tries = if sample.routes.len() <= 100_000 { 8 } else { 1 };
    let assign = (0..tries)
        .map(|i| pipelab_topo::partition_balanced(&sample, k as usize, seed.wrapping_add(i)))
        .min_by_key(|a| a.handoffs(&sample.routes))
        .unwrap_or_else(|| pipelab_topo::partition_balanced(&sample, k as usize, seed));
    let cut: BTreeMap<u32, u16> = assign
        .core_of_pipe
        .iter()
        .enumerate()
        .map(|(i, &c)| (pipelab_topo::pipe_number(i as u32), c as u16))
        .collect();
    let cut_of = |p: u32| cut.get(&p).copied().unwrap_or(0);
    // The sampled routes by port, in (source, destination) order.
    let routes: Vec<(usize, usize, Vec<u32>)> = sample
        .routes
        .iter()
        .filter_map(|(s, t, r)| {
            let (i, j) = (sample.routes.position(s)?, sample.routes.position(t)?);
            (i < ports && j < ports).then(|| {
                (
                    i,
                    j,
                    r.iter().map(|&p| pipelab_topo::pipe_number(p)).collect(),
                )
            })
        })
        .collect();
    // Each VN's lowest pipe out, for a VN no sampled route starts at.
    let mut first_out: Vec<Option<u32>> = vec![None; ports];
    for (i, p) in d.pipes.iter().enumerate() {
        if let Some(v) = sample.routes.position(p.from).filter(|&v| v < ports) {
            first_out[v].get_or_insert(pipelab_topo::pipe_number(i as u32));
        }
    }
    let mut first_hop: Vec<Option<u32>> = vec![None; ports];
    for (s, _, hops) in &routes {
        if first_hop[*s].is_none() {
            first_hop[*s] = hops.first().copied();
        }
    }
    let mut rx: Vec<u16> = (0..ports)
        .map(|s| first_hop[s].or(first_out[s]).map(cut_of).unwrap_or(0))
        .collect();
    if by == SplitBy::Links {
        return Split {
            owners: cut,
            rx,
            crossings: None,
        };
    }
    // Every worker receives a VN, while there are VNs to spare.
    loop {
        let mut count = vec![0usize; k as usize];
        for &w in &rx {
            count[w as usize] += 1;
        }
        let Some(idle) = count.iter().position(|&c| c == 0) else {
            break;
        };
        let Some(busy) = (0..k as usize)
            .filter(|&w| count[w] >= 2)
            .max_by_key(|&w| (count[w], std::cmp::Reverse(w)))
        else {
            break;
        };
        if let Some(v) = rx.iter().rposition(|&w| w as usize == busy) {
            rx[v] = idle as u16;
        }
    }
    // Whose VNs each pipe's routes come from and go to.
    let mut from: BTreeMap<u32, Users> = BTreeMap::new();
    let mut to: BTreeMap<u32, Users> = BTreeMap::new();
    for (s, t, hops) in &routes {
        for &p in hops {
            from.entry(p).or_insert(Users::None).add(rx[*s]);
            to.entry(p).or_insert(Users::None).add(rx[*t]);
        }
    }
    let direction: BTreeMap<u32, u16> = cut
        .keys()
        .map(|&p| {
            let w = match (from.get(&p), to.get(&p)) {
                (Some(Users::One(w)), _) | (_, Some(Users::One(w))) => *w,
                _ => cut_of(p),
            };
            (p, w)
        })
        .collect();
    let by_direction = crossings(&routes, &rx, |p| {
        direction.get(&p).copied().unwrap_or_else(|| cut_of(p))
    });
    let cut_crossings = crossings(&routes, &rx, cut_of);
    let (owners, crossings) = if by_direction <= cut_crossings {
        (direction, by_direction)
    } else {
        (cut, cut_crossings)
    };
    Split {
        owners,
        rx,
        crossings: Some((crossings, cut_crossings)),
    }
}

/// `n` and its noun, in the plural unless one.
fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// How a topology is split over `k` workers ([`split`]), the
/// configuration's pipes by the rules' feeders. Returns the plan and
/// each port's receiving worker.
fn topo_plan(
    net: &Network,
    spec: &pipelab_emu::Spec,
    k: u16,
    seed: u64,
    opts: &crate::workers::WorkerOptions,
    by: SplitBy,
) -> (crate::live::WorkerPlan, Vec<u16>) {
    let Split {
        owners: topo, rx, ..
    } = split(net, spec, k, seed, by);
    let rx_worker = rx.clone();
    let receives = (0..k)
        .map(|w| rx_worker.iter().map(|&r| r == w).collect())
        .collect();
    let owners: crate::live::Owners = Arc::new(move |spec: &pipelab_emu::Spec| {
        let mut o = crate::workers::rule_owners(spec, &rx);
        o.extend(topo.iter().map(|(&p, &w)| (p, w)));
        o
    });
    let plan = crate::live::WorkerPlan {
        receives,
        cpus: opts.cpu_plan(k),
        owners,
    };
    (plan, rx_worker)
}

/// Reads a file a topology command names (`link A B set profile FILE`):
/// by absolute path only (the emulator's directory means nothing to the
/// sender; `pipelab topo link` and `topo run` resolve relative paths
/// before they send), with [`pipelab_lang::files::read_named_file`].
fn read_by_path(path: &str) -> Result<String, String> {
    if !path.starts_with('/') {
        return Err(format!(
            "'{path}': a running topology reads files by absolute path (pipelab topo link and topo run resolve relative ones)"
        ));
    }
    pipelab_lang::files::read_named_file(path).map_err(|e| e.to_string())
}

/// The words that begin a topology command (a line starting with any
/// other word is a command of the language).
const TOPO_WORDS: [&str; 6] = ["link", "node", "cross", "every", "status", "stop"];

/// A live topology as a plane of the control protocol: the language's
/// commands change its configuration (`--config`), the topology's
/// (`link A B set ...`, `node N down`, `cross ...`, `status`, `stop`)
/// change the network.
struct TopoPlane(Live);

impl pipelab_control::Plane for TopoPlane {
    /// Lowers the configuration (reading the files its pipes name),
    /// without the server's lock.
    fn preparer(&self) -> pipelab_control::Preparer {
        let load = Arc::clone(&self.0.load);
        Arc::new(move |cfg: &pipelab_lang::Config| {
            let spec = pipelab_emu::lower_config(cfg, &mut &**load).map_err(ModeError::from)?;
            Ok(pipelab_control::Prepared::new(spec))
        })
    }

    /// Compiles the network's spec with the configuration's: the
    /// topology's own commands change the network under the server's
    /// lock, so it is compiled with the network as it is now (no file is
    /// read).
    fn commit(
        &mut self,
        prepared: pipelab_control::Prepared,
    ) -> Result<(), pipelab_control::PlaneError> {
        let live = &mut self.0;
        let spec = prepared.take::<pipelab_emu::Spec>()?;
        let before = std::mem::replace(&mut live.config, spec);
        let applied = live
            .compiled()
            .and_then(|compiled| live.runner.apply(compiled));
        if let Err(e) = applied {
            live.config = before;
            return Err(e.into());
        }
        Ok(())
    }

    fn stats(&self) -> serde_json::Value {
        let mut v = crate::workers::live_totals(&self.0.runner)
            .map(|t| crate::workers::stats_json("topo", &t))
            .unwrap_or_else(|e| serde_json::json!({ "plane": "topo", "error": e.to_string() }));
        if let Ok(s) = self.0.status() {
            v["links_down"] = s.links_down.into();
            v["nodes_down"] = s.nodes_down.into();
            v["routes_made"] = s.routes_made.into();
            v["routes_cached"] = s.routes_cached.into();
        }
        v
    }

    fn stop(self: Box<Self>) -> Result<(), pipelab_control::PlaneError> {
        Ok(())
    }

    fn mode(&self) -> &'static str {
        "topo"
    }

    fn check_command(
        &self,
        line: &str,
    ) -> Option<Result<pipelab_control::Effect, pipelab_control::PlaneError>> {
        use pipelab_control::Effect;
        if let Some(r) = crate::plane::check_pipe_fault(&self.0.runner, line) {
            return Some(r);
        }
        let first = line.split_whitespace().next()?.to_ascii_lowercase();
        if !TOPO_WORDS.contains(&first.as_str()) {
            return None;
        }
        let cmd = match pipelab_topo::parse_command(line) {
            Ok(c) => c,
            Err(e) => return Some(Err(ModeError::Command(e.to_string()).into())),
        };
        if let Err(e) = cmd.resolve(self.0.net.topology()) {
            return Some(Err(ModeError::Command(e.to_string()).into()));
        }
        Some(Ok(match cmd {
            pipelab_topo::TopoCommand::Status => Effect::Query,
            _ => Effect::Change,
        }))
    }

    fn command(&mut self, line: &str) -> Option<Result<String, pipelab_control::PlaneError>> {
        Some(self.0.command(line).map_err(Into::into))
    }

    fn files(&self, line: &str) -> Vec<(String, String)> {
        command_files(line)
    }

    fn own_pipes(&self) -> usize {
        self.0.net.distilled().pipes.len()
    }
}

/// The files a topology's `link A B set ...` names (`profile`, `bw
/// trace:`, ...), which only root may have the emulation read.
fn command_files(line: &str) -> Vec<(String, String)> {
    match pipelab_topo::parse_command(line) {
        Ok(pipelab_topo::TopoCommand::Link {
            action: pipelab_topo::LinkAction::Set(set),
            ..
        }) => set
            .words
            .files()
            .into_iter()
            .map(|(what, path)| (what.to_string(), path.to_string()))
            .collect(),
        _ => Vec::new(),
    }
}

/// The reply to `status`.
#[derive(Clone, Debug, Serialize)]
pub struct Status {
    /// Packet accounting.
    pub stats: RunnerStats,
    /// Lateness of transmissions.
    pub lateness: Lateness,
    /// Seconds so far whose departures were late (p99 beyond the
    /// watcher's threshold), and why (see [`crate::precision`]).
    pub precision: crate::precision::Precision,
    /// Links failed now.
    pub links_down: usize,
    /// Nodes failed now.
    pub nodes_down: usize,
    /// VN pairs whose route changed since the start (reroutes).
    pub routes_made: usize,
    /// VN pairs whose route is held now (routes are computed on demand,
    /// for the first packet of a pair, and kept: the pairs in use).
    pub routes_cached: usize,
    /// Per-rule counters of the topology's configuration: (number,
    /// packets, bytes), the default rule last.
    pub rules: Vec<(u32, u64, u64)>,
    /// Per flow queue counters of the configuration.
    pub queues: Vec<crate::report::QueueCounters>,
    /// Each worker's figures (accounting with hand-offs, lateness).
    pub workers: Vec<crate::workers::WorkerFigures>,
}

fn state_path(name: &str) -> PathBuf {
    Path::new(STATE_DIR).join(format!("{name}.json"))
}

fn sock_path(name: &str) -> PathBuf {
    Path::new(STATE_DIR).join(format!("{name}.sock"))
}

/// The log file of a background emulator.
pub fn log_path(name: &str) -> PathBuf {
    Path::new(STATE_DIR).join(format!("{name}.log"))
}

/// Read the state file of topology `name`.
pub fn read_state(name: &str) -> io::Result<TopoState> {
    check_name(name)?;
    let p = state_path(name);
    let text = std::fs::read_to_string(&p).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("topology '{name}' is not up ({}: {e})", p.display()),
        )
    })?;
    serde_json::from_str(&text).map_err(|e| invalid(format!("{}: {e}", p.display())))
}

/// Every topology with a state file.
pub fn list() -> Vec<TopoState> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(STATE_DIR) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().to_string();
            if let Some(name) = n.strip_suffix(".json") {
                if let Ok(s) = read_state(name) {
                    out.push(s);
                }
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The emulator's pid if topology `name` is running.
pub fn running(name: &str) -> Option<u32> {
    read_state(name)
        .ok()
        .map(|s| s.pid)
        .filter(|&p| pid_alive(p))
}

/// Namespaces under [`NETNS_DIR`] that belong to topology `name`.
pub fn leftover_namespaces(name: &str) -> Vec<String> {
    let prefix = format!("pl-{name}-");
    let mut v: Vec<String> = std::fs::read_dir(NETNS_DIR)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn pid_alive(pid: u32) -> bool {
    // A zombie has exited: its state letter follows the command's ')'.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// The processes (other than this one) in the namespaces `names`.
fn pids_in_namespaces(names: &[String]) -> Vec<u32> {
    use std::os::unix::fs::MetadataExt;
    let inodes: std::collections::HashSet<u64> = names
        .iter()
        .filter_map(|n| std::fs::metadata(Path::new(NETNS_DIR).join(n)).ok())
        .map(|m| m.ino())
        .collect();
    if inodes.is_empty() {
        return Vec::new();
    }
    let me = std::process::id();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::metadata(format!("/proc/{pid}/ns/net"))
                .is_ok_and(|m| inodes.contains(&m.ino()))
        })
        .collect()
}

/// Kill (SIGKILL) every process whose network namespace is one of
/// `names`; returns how many.
fn kill_in_namespaces(names: &[String]) -> usize {
    let pids = pids_in_namespaces(names);
    for &pid in &pids {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    pids.len()
}

fn remove_namespaces(names: &[String]) -> usize {
    let mut n = 0;
    for name in names {
        let p = Path::new(NETNS_DIR).join(name);
        let _ = umount2(&p, MntFlags::MNT_DETACH);
        if std::fs::remove_file(&p).is_ok() {
            n += 1;
        }
    }
    n
}

/// `Ok` if this process may send `pid` a signal (`kill(pid, 0)`), else
/// why not (not permitted: another user's process).
fn may_signal(pid: u32) -> io::Result<()> {
    let raw = i32::try_from(pid).map_err(|_| invalid(format!("pid {pid} out of range")))?;
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
        Err(e) => Err(io::Error::from(e)),
    }
}

/// What [`down`] removed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DownReport {
    /// The emulator was running and was stopped.
    pub stopped: bool,
    /// The emulator had to be killed.
    pub killed_emulator: bool,
    /// Processes killed inside the namespaces.
    pub killed_processes: usize,
    /// Namespaces removed.
    pub namespaces: usize,
}

/// Stop topology `name` and remove everything it made; works after a
/// crash too (namespaces are found by their name prefix).
pub fn down(name: &str) -> io::Result<DownReport> {
    check_name(name)?;
    // What the caller may not do is refused at once, before anything is
    // asked or waited for: removing namespaces takes the privileges of
    // `topo up`, and stopping the emulator the right to signal it.
    crate::privilege::require("pipelab topo down", crate::privilege::NAMESPACES)?;
    let state = read_state(name).ok();
    if let Some(st) = state
        .as_ref()
        .filter(|st| pid_alive(st.pid) && st.pid != std::process::id())
    {
        may_signal(st.pid).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "topology '{name}': cannot stop its emulator (pid {}): {e}; nothing was changed",
                    st.pid
                ),
            )
        })?;
    }
    let mut rep = DownReport::default();
    // What there is before the emulator's own teardown removes its
    // namespaces and the processes in them: counted as removed too.
    let before = leftover_namespaces(name);
    let pids_before = pids_in_namespaces(&before);
    let mut emulator = None;
    if let Some(st) = state {
        emulator = Some(st.pid);
        if pid_alive(st.pid) && st.pid != std::process::id() {
            rep.stopped = true;
            let _ = control(name, "stop");
            // Time to exit for a large topology (an emulator of an
            // earlier version unregistered each TAP's device on its own,
            // some 15 ms each).
            let allow = 10.0 + 0.05 * st.vns.len() as f64;
            let t0 = Instant::now();
            while pid_alive(st.pid) && t0.elapsed().as_secs_f64() < allow {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            if pid_alive(st.pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(st.pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
                let t0 = Instant::now();
                while pid_alive(st.pid) && t0.elapsed().as_secs_f64() < 5.0 {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                // Said only once it is so.
                if pid_alive(st.pid) {
                    return Err(io::Error::other(format!(
                        "topology '{name}': its emulator (pid {}) still runs 5 s after SIGKILL; nothing else was removed",
                        st.pid
                    )));
                }
                rep.killed_emulator = true;
            }
        }
    }
    let names = leftover_namespaces(name);
    let killed = kill_in_namespaces(&names);
    let removed = remove_namespaces(&names);
    let left = leftover_namespaces(name);
    // Gone, or a zombie (whose namespace links are gone with it).
    let gone = |pid: &&u32| std::fs::metadata(format!("/proc/{pid}/ns/net")).is_err();
    rep.killed_processes = killed.max(pids_before.iter().filter(gone).count());
    rep.namespaces = removed.max(before.iter().filter(|n| !left.contains(n)).count());
    for p in [state_path(name), sock_path(name), log_path(name)] {
        let _ = std::fs::remove_file(p);
    }
    // The emulator is gone (stopped, killed, or crashed before): its
    // entry in the registry of emulations goes too.
    if let Some(pid) = emulator.filter(|&p| !pid_alive(p)) {
        pipelab_control::Registry::new().forget(name, pid);
    }
    let _ = pipelab_control::registry::list();
    // The records of what dead processes left (this topology's, now
    // gone, and any other's) are settled too.
    if let Ok(r) = Ledger::new().recover(false, false) {
        crate::ledger::notice(&r);
    }
    Ok(rep)
}

/// Send one command to the running emulator of topology `name` and
/// return its reply (an `error: ...` reply becomes an error).
pub fn control(name: &str, command: &str) -> io::Result<String> {
    check_name(name)?;
    let not_running = |e: String| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("topology '{name}' is not running ({e})"),
        )
    };
    let sock = pipelab_control::registry::resolve(name).map_err(|e| not_running(e.to_string()))?;
    let mut c = pipelab_control::Client::connect(&sock).map_err(|e| not_running(e.to_string()))?;
    let r = c.exec(command.trim()).map_err(io::Error::other)?;
    if r.ok {
        Ok(r.output.trim_end().to_string())
    } else {
        Err(io::Error::other(r.error.unwrap_or_default()))
    }
}

/// Open the namespace of VN `vn` of topology `name`.
fn open_vn(name: &str, vn: &str) -> io::Result<(VnState, std::fs::File)> {
    let st = read_state(name)?;
    let v = st
        .vn(vn)
        .cloned()
        .ok_or_else(|| invalid(format!("topology '{name}' has no VN '{vn}'")))?;
    let path = Path::new(NETNS_DIR).join(&v.netns);
    let f = std::fs::File::open(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("namespace {}: {e}", v.netns)))?;
    if !is_namespace(&f) {
        return Err(foreign_mounts(name, &v.name, &path));
    }
    Ok((v, f))
}

/// Whether `f` is a namespace (a file of the kernel's nsfs), which
/// `setns` takes; a file under /run/netns that is not is the empty file
/// the namespace's bind mount covers where that mount is not seen.
fn is_namespace(f: &std::fs::File) -> bool {
    use nix::sys::statfs::{fstatfs, NSFS_MAGIC};
    fstatfs(f).is_ok_and(|s| s.filesystem_type() == NSFS_MAGIC)
}

/// The error for a VN whose namespace file is not a namespace here: the
/// topology's namespaces are bind mounts in the mount namespace `topo
/// up` ran in, and this process runs in another (a container, `unshare
/// -m`, a service with a private /run) where only the empty files under
/// them show.
fn foreign_mounts(name: &str, vn: &str, path: &Path) -> io::Error {
    io::Error::other(format!(
        "VN {vn} of topology '{name}': {} is not a network namespace in this mount namespace: \
         the topology's namespaces are bind mounts that this process does not see (it runs \
         in another mount namespace than `pipelab topo up` did, with its own view of \
         {NETNS_DIR}); run the command where the topology was started (e.g. on the host)",
        path.display()
    ))
}

/// The environment a command in VN `v` finds: `PIPELAB_VN` (its name),
/// `PIPELAB_ADDR` (its IPv4 address) and, on a dual-stack topology,
/// `PIPELAB_ADDR6`.
fn vn_env(cmd: &mut Command, v: &VnState) {
    cmd.env("PIPELAB_VN", &v.name)
        .env("PIPELAB_ADDR", v.addr.to_string());
    if let Some(a) = v.addr6 {
        cmd.env("PIPELAB_ADDR6", a.to_string());
    }
}

/// Replace this process by `argv` running in VN `vn`'s namespace (the
/// calling thread enters it); returns only on failure.
pub fn exec(name: &str, vn: &str, argv: &[String]) -> io::Error {
    use std::os::unix::process::CommandExt;
    let (v, f) = match open_vn(name, vn) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let Some(prog) = argv.first() else {
        return invalid("no command given");
    };
    if let Err(e) = setns(f.as_fd(), CloneFlags::CLONE_NEWNET) {
        return io::Error::other(format!("enter {}: {e}", v.netns));
    }
    let mut cmd = Command::new(prog);
    cmd.args(&argv[1..]);
    vn_env(&mut cmd, &v);
    let e = cmd.exec();
    io::Error::new(e.kind(), format!("cannot run {prog}: {e}"))
}

/// Spawn `cmd` as a child of this process inside VN `vn`'s namespace.
pub fn spawn_in_vn(name: &str, vn: &str, mut cmd: Command) -> io::Result<Child> {
    let (v, f) = open_vn(name, vn)?;
    vn_env(&mut cmd, &v);
    std::thread::spawn(move || -> io::Result<Child> {
        setns(f.as_fd(), CloneFlags::CLONE_NEWNET)
            .map_err(|e| io::Error::other(format!("enter {}: {e}", v.netns)))?;
        cmd.spawn()
    })
    .join()
    .map_err(|_| io::Error::other("spawn thread panicked"))?
}

/// Create VN `v`'s namespace on the calling thread (which stays in it),
/// its TAP and its configuration.
fn make_vn(
    v: &VnState,
    len: u8,
    offload: bool,
    turn_on: bool,
    rt: &tokio::runtime::Runtime,
) -> io::Result<(Tap, TapDrops)> {
    use rtnetlink::{LinkUnspec, RouteMessageBuilder};
    let ctx = |what: &str, e: &dyn std::fmt::Display| {
        io::Error::other(format!("VN {} ({}): {what}: {e}", v.name, v.netns))
    };
    unshare(CloneFlags::CLONE_NEWNET).map_err(|e| ctx("unshare", &e))?;
    let path = Path::new(NETNS_DIR).join(&v.netns);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| ctx(&format!("create {}", path.display()), &e))?;
    mount(
        Some("/proc/thread-self/ns/net"),
        &path,
        None::<&str>,
        MsFlags::MS_BIND,
        None::<&str>,
    )
    .map_err(|e| ctx("bind mount", &e))?;
    // IPv6 in the namespace's own settings (nothing on the host): off
    // on an IPv4-only topology; else on. `eth0` gets no link-local
    // address (its address generation mode, set over netlink below
    // before it is up), so it sends no router solicitation, and being
    // `NOARP` it does no duplicate address detection: no setting under
    // `/proc/sys` is needed. Each file there costs a search through
    // every namespace's entries of that name: writing nine of them per
    // VN took half of `topo up`'s CPU time at 2,000 VNs.
    if v.addr6.is_some() {
        if turn_on {
            turn_on_ipv6("all")
                .and_then(|()| turn_on_ipv6("default"))
                .map_err(|e| ctx("IPv6 settings", &e))?;
        }
    } else {
        for k in ["default", "all"] {
            let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{k}/disable_ipv6"), "1");
        }
    }
    let tap = if offload {
        Tap::create_offloaded("eth0")
    } else {
        Tap::create("eth0")
    }
    .map_err(|e| ctx("create TAP", &e))?;
    // The device goes with the namespace, not with its last descriptor.
    // A last `close` unregisters its device and waits for an RCU grace
    // period (20–25 ms), one device after the other: 1000 VNs took 20 s
    // to take down, 1.6–2.6 s from 32 threads. Dying namespaces are
    // cleaned up in one batch, their devices with them: 0.2–0.3 s.
    tap.persist_with_namespace()
        .map_err(|e| ctx("persistent TAP", &e))?;
    // Its drops toward the workers, read from this namespace's counters.
    let drops = TapDrops::open("eth0").map_err(|e| ctx("eth0 counters", &e))?;
    let idx = nix::net::if_::if_nametoindex("eth0").map_err(|e| ctx("eth0 index", &e))?;
    let lo = nix::net::if_::if_nametoindex("lo").map_err(|e| ctx("lo index", &e))?;
    let addr = v.addr;
    let addr6 = v.addr6;
    rt.block_on(async move {
        use rtnetlink::packet_route::address::{AddressAttribute, AddressFlags};
        use rtnetlink::packet_route::link::{
            AfSpecInet6, AfSpecUnspec, In6AddrGenMode, LinkAttribute,
        };
        let (conn, h, _) = rtnetlink::new_connection()?;
        let task = tokio::spawn(conn);
        // No link-local address: `eth0` needs none (its routes are
        // on-link, its neighbours its own MAC), and the one the kernel
        // would make stays tentative on a `NOARP` device (Linux 6.18): an
        // address in limbo every VN would share (they share a MAC). The
        // mode is read when `eth0` comes up, so it is set first, alone.
        if addr6.is_some() {
            let mode = LinkUnspec::new_with_index(idx)
                .append_extra_attribute(LinkAttribute::AfSpecUnspec(vec![AfSpecUnspec::Inet6(
                    vec![AfSpecInet6::AddrGenMode(In6AddrGenMode::None)],
                )]))
                .build();
            if let Err(e) = h.link().set(mode).execute().await {
                task.abort();
                return Err(io::Error::other(format!("address generation mode: {e}")));
            }
        }
        let link = LinkUnspec::new_with_index(idx)
            .address(VN_MAC.to_vec())
            .arp(false)
            .mtu(1500)
            .up()
            .build();
        let lo = LinkUnspec::new_with_index(lo).up().build();
        let route = RouteMessageBuilder::<Ipv4Addr>::new()
            .output_interface(idx)
            .scope(rtnetlink::packet_route::route::RouteScope::Link)
            .build();
        // On a dual-stack topology the IPv6 address (`nodad`: usable at
        // once, no neighbour solicitation) in the /64 and a default route
        // on-link by `eth0`, as for IPv4.
        let v6 = async {
            let Some(a6) = addr6 else { return Ok(()) };
            let mut req = h.address().add(idx, IpAddr::V6(a6), 64);
            req.message_mut()
                .attributes
                .push(AddressAttribute::Flags(AddressFlags::Nodad));
            let route6 = RouteMessageBuilder::<Ipv6Addr>::new()
                .output_interface(idx)
                .build();
            futures::try_join!(req.execute(), h.route().add(route6).execute()).map(|_| ())
        };
        let r = futures::try_join!(
            h.link().set(link).execute(),
            h.link().set(lo).execute(),
            h.address().add(idx, IpAddr::V4(addr), len).execute(),
            h.route().add(route).execute(),
            v6,
        );
        task.abort();
        r.map(|_| ()).map_err(|e| io::Error::other(e.to_string()))
    })
    .map_err(|e| ctx("netlink", &e))?;
    Ok((tap, drops))
}

/// Create every VN with `threads` workers (its TAP and the watch on its
/// drops); on error, removes what was made.
fn make_vns(
    vns: &[VnState],
    len: u8,
    offload: bool,
    threads: usize,
) -> io::Result<(Vec<Tap>, Vec<TapDrops>)> {
    let turn_on = vns.iter().any(|v| v.addr6.is_some())
        && new_namespaces_lack_ipv6()
            .map_err(|e| io::Error::new(e.kind(), format!("IPv6 of new namespaces: {e}")))?;
    let threads = threads.clamp(1, 64).min(vns.len().max(1));
    let chunk = vns.len().div_ceil(threads).max(1);
    let results: Vec<io::Result<Vec<(Tap, TapDrops)>>> = std::thread::scope(|s| {
        let hs: Vec<_> = vns
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || -> io::Result<Vec<(Tap, TapDrops)>> {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_io()
                        .build()?;
                    part.iter()
                        .map(|v| make_vn(v, len, offload, turn_on, &rt))
                        .collect()
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("VN worker panicked")))
            })
            .collect()
    });
    let mut taps = Vec::with_capacity(vns.len());
    let mut err = None;
    for r in results {
        match r {
            Ok(t) => taps.extend(t),
            Err(e) => err = err.or(Some(e)),
        }
    }
    if let Some(e) = err {
        drop(taps);
        let names: Vec<String> = vns.iter().map(|v| v.netns.clone()).collect();
        remove_namespaces(&names);
        return Err(e);
    }
    Ok(taps.into_iter().unzip())
}

fn write_state(st: &TopoState) -> io::Result<()> {
    let p = state_path(&st.name);
    let tmp = p.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(st).map_err(io::Error::other)?;
    let mut f = pipelab_lang::output::create_output(&tmp)?;
    io::Write::write_all(&mut f, text.as_bytes())?;
    std::fs::rename(&tmp, &p)
}

/// Bring the topology up and forward until `stop` or a stop signal
/// ([`pipelab_io::signals::STOP`]: SIGHUP, SIGINT, SIGQUIT, SIGTERM),
/// the foreground half of `pipelab topo up`; `ready` is called with the
/// state once forwarding runs.
pub fn serve(opts: UpOptions, ready: impl FnOnce(&TopoState)) -> io::Result<()> {
    let t0 = Instant::now();
    let name = opts.name.clone();
    check_name(&name)?;
    crate::privilege::require("a live topology", crate::privilege::NAMESPACES)?;
    // Block the stop signals first, so every thread inherits the mask and
    // they reach the signalfd.
    let signals = StopSignals::block()?;

    // What dead pipelab processes left is undone first (a crashed
    // emulator's namespaces and files, saying so); from here on every
    // namespace, file and directory is written down before it is made,
    // and removed when `record` is dropped, or by the next command after
    // a crash.
    let mut record = Ledger::new().begin("topo", &name)?;
    // `/run/netns` is the system's, as `ip netns` makes it.
    if !Path::new(STATE_DIR).is_dir() {
        record.record(HostChange::Dir {
            path: STATE_DIR.into(),
        })?;
    }
    std::fs::create_dir_all(STATE_DIR)?;
    std::fs::create_dir_all(NETNS_DIR)?;
    if let Ok(st) = read_state(&name) {
        if pid_alive(st.pid) {
            return Err(invalid(format!(
                "topology '{name}' is already up (pid {})",
                st.pid
            )));
        }
    }
    let left = leftover_namespaces(&name);
    if !left.is_empty() {
        return Err(invalid(format!(
            "{} namespaces of topology '{name}' are left over (e.g. {}): run `pipelab topo down --name {name}`",
            left.len(),
            left[0]
        )));
    }
    // The IPv6 /64 (unless this host has no IPv6): one of the host's ULA
    // /48 ([`crate::ledger::shell_range6`], as shells take theirs),
    // reserved in the ledger so that no running shell or topology shares
    // it; the one the name hashes to when free.
    let net6 = if ipv6_available() {
        Some(record.reserve_subnet6(
            shell_range6(),
            topo_subnet6_index(&name),
            &host_networks6(),
        )?)
    } else {
        None
    };
    let vns = plan(&name, &opts.topology, opts.prefix, net6)?;
    if vns.is_empty() {
        return Err(invalid("the topology has no client nodes (VNs)"));
    }
    let nodes: Vec<NodeName> = opts
        .topology
        .nodes
        .iter()
        .map(|n| NodeName {
            id: n.id,
            name: n.name.clone(),
        })
        .collect();
    // Routes on demand (ModelNet §2.2's route cache): none is computed
    // before a pair's first packet, so memory grows with the VNs and the
    // pairs in use, not with the square of the VNs.
    let net = Network::on_demand(opts.topology.clone(), opts.mode, opts.metric, opts.routes)
        .map_err(|e| invalid(e.to_string()))?;
    let cache = Arc::new(net.path_cache());
    // The name is taken in the registry of emulations before any thread
    // starts: `pipelab --target NAME` and `pipelab list` reach it.
    let reg = crate::plane::register_recorded(&mut record, &name, "topo")?;
    let mut load = opts.load;
    let config = pipelab_emu::lower_config(&opts.config, &mut load).map_err(ModeError::from)?;
    let n_routes = cache.len();
    let n_pipes = net.distilled().pipes.len();
    // A stale socket of the line protocol of earlier versions.
    let _ = std::fs::remove_file(sock_path(&name));
    let mut made: Vec<HostChange> = vns
        .iter()
        .map(|v| HostChange::NamedNetns {
            name: v.netns.clone(),
        })
        .collect();
    made.push(HostChange::File {
        path: state_path(&name),
    });
    made.push(HostChange::File {
        path: sock_path(&name),
    });
    record.record_all_in(NsId::current()?, made)?;
    let names: Vec<String> = vns.iter().map(|v| v.name.clone()).collect();
    // The whole network's spec, and how it is split over workers
    // ([`split`]): each VN received by the worker owning its first hop
    // in `topo assign`'s link partition, each pipe with its link's worker
    // there or (by directions) with the worker of the VNs its routes
    // come from (else go to; else the partition's).
    let mut first = pipelab_topo::lower_on_demand(
        net.distilled(),
        &names,
        vns[0].addr,
        vns[0].addr6,
        &[],
        cache.clone(),
    )
    .map_err(ModeError::from)?;
    first.merge_config(&config);
    // Useful workers: one per link (a link's directions go together), or
    // by direction one per link direction with a VN to receive. By
    // default at most one per link, as many as the CPUs allow.
    let links = net.distilled().pipes.len() / 2;
    let (useful, what) = match opts.split {
        SplitBy::Links => (
            links,
            format!("a topology of {} split by links", counted(links, "link")),
        ),
        SplitBy::Directions => {
            let pipes = net.distilled().pipes.len();
            (
                pipes.min(vns.len()),
                format!(
                    "a topology of {} and {} split by directions",
                    counted(pipes, "link direction"),
                    counted(vns.len(), "VN")
                ),
            )
        }
    };
    let (k, note) = match opts.workers.workers {
        None => opts.workers.resolve(links, ""),
        Some(_) => opts.workers.resolve(useful, &what),
    };
    let (plan, rx_worker) = topo_plan(&net, &first, k, opts.runner.seed, &opts.workers, opts.split);
    // Every worker holds a descriptor on every VN's TAP, and one
    // watches its drops: asked for before any VN is made, so that a
    // host's limit refuses a large topology at once, not after minutes.
    pipelab_io::worker::raise_fd_limit(vns.len() as u64 * (k as u64 + 2) + 256).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "{} with {}: {e}",
                counted(vns.len(), "VN"),
                counted(usize::from(k), "worker")
            ),
        )
    })?;
    let (taps, drops) = make_vns(&vns, opts.prefix.1, opts.offload, opts.threads)?;
    let mut handles: Vec<Vec<SendPort>> = Vec::with_capacity(taps.len());
    for t in &taps {
        let mut h: Vec<SendPort> = Vec::new();
        for _ in 1..k {
            h.push(Box::new(t.try_clone()?));
        }
        handles.push(h);
    }
    let ports: Vec<SendPort> = taps.into_iter().map(|t| Box::new(t) as SendPort).collect();
    let ports = crate::workers::spread(ports, &rx_worker, k, |i| {
        handles
            .get_mut(i)
            .and_then(|h| h.pop())
            .ok_or_else(|| io::Error::other("internal: no TAP handle left"))
    })?;
    let first = Compiled::new(first, opts.runner.seed).map_err(ModeError::from)?;
    let (recorder, tap) = crate::capture::start(opts.capture, first.spec())?;
    let live = Live {
        net,
        cache,
        names,
        base: vns[0].addr,
        base6: vns[0].addr6,
        seed: opts.runner.seed,
        cross: Vec::new(),
        paths_changed: 0,
        config,
        load: Arc::new(load),
        runner: Arc::new(LiveRunner::spawn_workers(
            "pipelab-topo",
            first,
            ports,
            plan,
            opts.runner,
            tap,
        )?),
    };
    live.runner.watch_input_drops(drops);
    let runner = live.runner.clone();
    let series = opts.series.map(|mut s| {
        s.names = pipe_names(&opts.topology, live.net.distilled());
        s
    });
    let sampler = crate::series::start(&runner, series)?;
    let control = crate::plane::serve(reg, Box::new(TopoPlane(live)), opts.config)?;

    let state = TopoState {
        name: name.clone(),
        pid: std::process::id(),
        file: opts.file.clone(),
        distill: opts.mode.to_string(),
        prefix: format!("{}/{}", opts.prefix.0, opts.prefix.1),
        prefix6: net6.map(|n| format!("{n}/64")),
        pipes: n_pipes,
        routes: n_routes,
        up_ms: t0.elapsed().as_secs_f64() * 1e3,
        seed: opts.runner.seed,
        workers: k,
        note,
        vns,
        nodes,
    };
    write_state(&state)?;
    ready(&state);
    // The log of a background emulator (kept if start-up fails, for the
    // message; removed with the rest once the topology has run).
    record.record(HostChange::File {
        path: log_path(&name),
    })?;

    // Until a stop signal (Ctrl-C, `kill`, or `stop` on the control
    // socket, which sends one), or the runner ends on an error.
    while !signals.wait(std::time::Duration::from_millis(500)) {
        if runner.with(|_| ()).is_err() {
            break;
        }
    }
    let _ = control.close();
    // The series' last sample, if any (its rows are in the CSV file).
    let series = crate::series::stop(sampler).and_then(|s| {
        let Some(s) = s else { return Ok(()) };
        let (_, last) =
            crate::workers::live_totals_and(&runner, Some(s.probe())).map_err(io::Error::other)?;
        s.finish(last, "pipelab topo").map(|_| ())
    });
    let stopped = runner.stop();
    drop(runner);
    // The runners are gone: the capture holds all they sent.
    let captured = crate::capture::finish(recorder, "pipelab topo");
    // The TAPs closed with the runners; their devices go with the
    // namespaces, which `record` removes.
    drop(record);
    drop(signals);
    stopped.and(captured.map(|_| ())).and(series)
}

/// Each distilled pipe's name for series: its link direction, `a->b`
/// (collapsed pipes: their path's two ends).
fn pipe_names(
    t: &Topology,
    d: &pipelab_topo::Distilled,
) -> std::collections::BTreeMap<u32, String> {
    d.pipes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                pipelab_topo::pipe_number(i as u32),
                format!("{}->{}", t.node_name(p.from), t.node_name(p.to)),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{command_files, split, Split, SplitBy};
    use pipelab_topo::{Metric, Mode, Network, Routes};
    use std::net::Ipv4Addr;

    /// A topology of `nodes` (name, client?) and `links` (by index).
    fn toml(nodes: &[(&str, bool)], links: &[(usize, usize)]) -> String {
        let mut t = String::new();
        for (i, (n, client)) in nodes.iter().enumerate() {
            let role = if *client { "client" } else { "stub" };
            t.push_str(&format!(
                "[[node]]\nid = {i}\nrole = \"{role}\"\nname = \"{n}\"\n\n"
            ));
        }
        for (a, b) in links {
            t.push_str(&format!(
                "[[link]]\na = {a}\nb = {b}\nbw = \"1Gbit/s\"\ndelay = \"1ms\"\n\n"
            ));
        }
        t
    }

    /// The split over `k` workers of a topology, its spec, and its VNs'
    /// names in port order.
    fn split_of(text: &str, k: u16, by: SplitBy) -> (Split, pipelab_emu::Spec, Vec<String>) {
        let topo = pipelab_topo::parse_toml(text).expect("topology");
        let names: Vec<String> = topo.vns().iter().map(|&v| topo.node_name(v)).collect();
        let net = Network::with_routes(topo, Mode::HopByHop, Metric::Delay, Routes::Symmetric)
            .expect("network");
        let spec = pipelab_topo::lower(
            net.distilled(),
            &names,
            Ipv4Addr::new(10, 0, 0, 1),
            None,
            &[],
        )
        .expect("lowers");
        let pipes = net.distilled().pipes.len() as u32;
        let s = split(&net, &spec, k, 1, by);
        // Every topology pipe is owned, once, by one of the workers.
        let numbers: Vec<u32> = (0..pipes).map(pipelab_topo::pipe_number).collect();
        assert_eq!(s.owners.keys().copied().collect::<Vec<_>>(), numbers);
        assert!(s.owners.values().all(|&w| w < k), "{s:?}");
        // Every worker receives a VN (there are more VNs than workers).
        for w in 0..k {
            assert!(s.rx.contains(&w), "worker {w} receives no VN: {s:?}");
        }
        (s, spec, names)
    }

    /// Each VN pair's route as its workers' sequence: the source's
    /// receiving worker, then each pipe's owner.
    fn stages(s: &Split, spec: &pipelab_emu::Spec) -> Vec<((usize, usize), Vec<u16>)> {
        let paths = spec.paths.as_ref().expect("paths");
        let mut out = Vec::new();
        for a in 0..paths.n {
            for b in 0..paths.n {
                if let Some(hops) = paths.get(a, b) {
                    let mut v = vec![s.rx[a]];
                    v.extend(hops.iter().map(|p| s.owners[p]));
                    out.push(((a, b), v));
                }
            }
        }
        out
    }

    fn crossed(v: &[u16]) -> usize {
        v.windows(2).filter(|w| w[0] != w[1]).count()
    }

    fn chain(hops: usize) -> String {
        let mut nodes = vec![("a".to_string(), true)];
        for i in 1..hops {
            nodes.push((format!("r{i}"), false));
        }
        nodes.push(("b".to_string(), true));
        let nodes: Vec<(&str, bool)> = nodes.iter().map(|(n, c)| (n.as_str(), *c)).collect();
        let links: Vec<(usize, usize)> = (0..hops).map(|i| (i, i + 1)).collect();
        toml(&nodes, &links)
    }

    /// A pass proves that with two workers a chain's route `a → b` runs
    /// wholly on the worker reading `a`'s TAP and `b → a` on the one
    /// reading `b`'s (no hand-off at all, on 1, 4 and 8 hops), where the
    /// link cut alone made each route of 4 and 8 hops cross once.
    #[test]
    fn a_chain_runs_each_direction_on_its_sources_worker() {
        for hops in [1, 4, 8] {
            let (s, spec, names) = split_of(&chain(hops), 2, SplitBy::Directions);
            assert_eq!(names, ["a", "b"]);
            assert_ne!(s.rx[0], s.rx[1], "{hops} hops: {s:?}");
            assert_eq!(s.crossings.map(|c| c.0), Some(0), "{hops} hops: {s:?}");
            for ((a, b), v) in stages(&s, &spec) {
                assert_eq!(v.len(), hops + 1);
                assert!(v.iter().all(|&w| w == s.rx[a]), "{a}->{b}: {v:?}");
            }
            if hops > 1 {
                assert_eq!(s.crossings.map(|c| c.1), Some(2), "{hops} hops: {s:?}");
                // By links, each direction crosses once where the chain
                // is cut.
                let (l, spec, _) = split_of(&chain(hops), 2, SplitBy::Links);
                assert_eq!(l.crossings, None, "{hops} hops by links: {l:?}");
                let routes = stages(&l, &spec);
                assert_eq!(routes.len(), 2, "{hops} hops by links");
                for (_, v) in routes {
                    assert_eq!(crossed(&v), 1, "{hops} hops by links: {v:?}");
                }
            }
        }
    }

    /// A pass proves that where VNs of several workers send into the
    /// same pipes (a three-armed star of two-link arms, with two and
    /// three workers; a star of five VNs), every route crosses workers
    /// at most once, some do (the shared pipes exist), and a route
    /// crosses only between its source's and its destination's workers.
    #[test]
    fn routes_into_shared_pipes_cross_once_at_most() {
        let arms = toml(
            &[
                ("hub", false),
                ("ra", false),
                ("a", true),
                ("rb", false),
                ("b", true),
                ("rc", false),
                ("c", true),
            ],
            &[(0, 1), (1, 2), (0, 3), (3, 4), (0, 5), (5, 6)],
        );
        let star = toml(
            &[
                ("hub", false),
                ("v1", true),
                ("v2", true),
                ("v3", true),
                ("v4", true),
                ("v5", true),
            ],
            &[(0, 1), (0, 2), (0, 3), (0, 4), (0, 5)],
        );
        for (what, text, k) in [("arms", &arms, 2), ("arms", &arms, 3), ("star", &star, 2)] {
            let (s, spec, _) = split_of(text, k, SplitBy::Directions);
            let routes = stages(&s, &spec);
            let mut crossing = 0;
            for ((a, b), v) in &routes {
                assert!(crossed(v) <= 1, "{what}, {k} workers, {a}->{b}: {v:?}");
                assert_eq!(v[0], s.rx[*a]);
                let last = v[v.len() - 1];
                assert!(last == s.rx[*a] || last == s.rx[*b], "{a}->{b}: {v:?}");
                crossing += usize::from(crossed(v) == 1);
            }
            assert!(crossing > 0, "{what}, {k} workers: {s:?}");
            let (by_direction, by_cut) = s.crossings.expect("counted by directions");
            assert_eq!(by_direction, crossing as u64);
            assert!(by_direction <= by_cut, "{what}: {s:?}");
        }
    }

    /// A pass proves the split never crosses more than the link cut: on
    /// a ring of six routers with a VN each, and a dumbbell whose middle
    /// link carries routes from and to VNs of both workers, with two and
    /// three workers.
    #[test]
    fn the_split_crosses_no_more_than_the_cut() {
        let mut nodes: Vec<(String, bool)> = (0..6).map(|i| (format!("r{i}"), false)).collect();
        nodes.extend((0..6).map(|i| (format!("v{i}"), true)));
        let nodes: Vec<(&str, bool)> = nodes.iter().map(|(n, c)| (n.as_str(), *c)).collect();
        let mut links: Vec<(usize, usize)> = (0..6).map(|i| (i, (i + 1) % 6)).collect();
        links.extend((0..6).map(|i| (i, i + 6)));
        let ring = toml(&nodes, &links);
        let dumbbell = toml(
            &[
                ("l", false),
                ("r", false),
                ("a1", true),
                ("a2", true),
                ("b1", true),
                ("b2", true),
            ],
            &[(0, 1), (0, 2), (0, 3), (1, 4), (1, 5)],
        );
        for text in [&ring, &dumbbell] {
            for k in [2, 3] {
                let (s, spec, _) = split_of(text, k, SplitBy::Directions);
                let (by_direction, by_cut) = s.crossings.expect("counted by directions");
                assert!(by_direction <= by_cut, "{k} workers: {s:?}");
                let total: usize = stages(&s, &spec).iter().map(|(_, v)| crossed(v)).sum();
                assert_eq!(by_direction, total as u64);
            }
        }
    }

    /// The server refuses a non-root caller's plane command by what
    /// `files` says it reads. A pass proves a topology's `link A B set`
    /// names each file word it carries, and that commands reading none
    /// (or not parsing) name none.
    #[test]
    fn link_set_names_the_files_it_reads() {
        let pair = |w: &str, p: &str| (w.to_string(), p.to_string());
        assert_eq!(
            command_files("link a b set delay 5ms distribution file:/etc/shadow"),
            vec![pair("distribution", "/etc/shadow")]
        );
        assert_eq!(
            command_files("link a b set bw trace:up.trace profile p.txt"),
            vec![pair("bw", "up.trace"), pair("profile", "p.txt")]
        );
        for none in [
            "link a b set delay 5ms",
            "link a b down",
            "status",
            "link a",
        ] {
            assert_eq!(command_files(none), Vec::new(), "{none}");
        }
    }
}
