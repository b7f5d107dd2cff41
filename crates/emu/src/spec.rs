//! The emulation spec: everything an emulation is made of, as plain,
//! typed data.
//!
//! A [`Spec`] is what every front door lowers its input to: a
//! configuration of the language ([`crate::lower`]), a distilled topology
//! (`pipelab_topo::lower`), a shell's `--link` words, `netconfig` lines,
//! a request on the control socket. Its engine objects are already
//! validated ([`PipeConfig`], [`SchedConfig`], [`FlowSpec`] are valid by
//! construction, files named by pipes are read); what remains to check is
//! that references resolve, which [`crate::Compiled::new`] does.
//!
//! Numbering: pipes `1..=65535` are the language's; a topology's pipes
//! are numbered from [`TOPO_PIPE_BASE`] up, so a configuration and a
//! topology share one engine without clashing.

use pipelab_classify::Direction;
use pipelab_engine::mask::FlowMask;
use pipelab_engine::sched::{FlowSpec, SchedConfig};
use pipelab_engine::PipeConfig;
use pipelab_lang::{Rules, Table, TableId};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// The first pipe number of a topology's pipes (distilled pipe `i` is
/// pipe `TOPO_PIPE_BASE + i`).
pub const TOPO_PIPE_BASE: u32 = 65536;

/// A dynamic object's mask and its instance bound (`16 × buckets`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaskDef {
    /// The bits of the flow key that tell instances apart.
    pub mask: FlowMask,
    /// At most this many instances (then the overflow instance).
    pub max_instances: u32,
}

/// A pipe: its parameters, its scheduler (if its link is served from flow
/// queues) and its mask (if it is dynamic).
#[derive(Clone, Debug, PartialEq)]
pub struct PipeDef {
    /// Queue, link and delay line, impairments.
    pub config: PipeConfig,
    /// The scheduler serving the link from flow queues (`sched N`), or
    /// `None` for a plain FIFO pipe.
    pub sched: Option<SchedConfig>,
    /// `mask ...`: one instance of the pipe per masked key.
    pub mask: Option<MaskDef>,
    /// `spill`: a live runner may keep the frames waiting in this pipe on
    /// disk when its memory cap is short (a storage matter: the engine
    /// never sees it, so nothing in the emulation depends on it).
    pub spill: bool,
}

impl PipeDef {
    /// A plain pipe with `config`.
    pub fn plain(config: PipeConfig) -> PipeDef {
        PipeDef {
            config,
            sched: None,
            mask: None,
            spill: false,
        }
    }

    /// True if `other` can be reached from `self` by reconfiguring the
    /// pipe in place (same scheduler kind and parameters, same mask);
    /// otherwise the pipe is replaced.
    pub fn same_structure(&self, other: &PipeDef) -> bool {
        self.sched == other.sched && self.mask == other.mask
    }
}

/// A flow queue (`queue N config`): the pipe whose scheduler serves it,
/// its weight, limit and queue management, and its mask.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueDef {
    /// The number of the (scheduled) pipe serving it.
    pub pipe: u32,
    /// Weight, limit, queue management.
    pub flow: FlowSpec,
    /// `mask ...`: one instance per masked key.
    pub mask: Option<MaskDef>,
}

/// Where the frames received on a port leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Egress {
    /// Always by this port (a bridge's other port, a shell's other side,
    /// host mode's own queue).
    Port(u16),
    /// By the port their destination address belongs to, across the
    /// topology's path between the two ports ([`Paths`]).
    ByDestination,
}

/// One port of the emulation as the rules see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortDef {
    /// A name for reports (an interface, a VN).
    pub name: String,
    /// The direction the rules see frames received here in (`in`/`out`);
    /// `None`: as the backend annotated the frame (host mode).
    pub dir: Option<Direction>,
    /// The interface id rules see for this port (`recv`, `xmit`, `via`
    /// resolve names to it through [`Env::ifaces`]); `None`: as the
    /// backend annotated the frame.
    pub iface: Option<u32>,
    /// Where its frames leave.
    pub egress: Egress,
}

/// Which destination address belongs to which port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destinations {
    /// Port `i` owns `base + i` and, on a dual-stack topology,
    /// `base6 + i`, for `i` in `0..count`: one index for both of a port's
    /// addresses, so IPv4 and IPv6 packets between two ports cross the
    /// same path.
    Range {
        /// The first port's IPv4 address.
        base: Ipv4Addr,
        /// The first port's IPv6 address (`None`: IPv4 only).
        base6: Option<Ipv6Addr>,
        /// How many ports.
        count: u32,
    },
    /// Any addresses, each to its port.
    Map(BTreeMap<IpAddr, u16>),
}

impl Destinations {
    /// The port `dst` belongs to.
    #[inline]
    pub fn port(&self, dst: IpAddr) -> Option<u16> {
        match self {
            Destinations::Range { base, base6, count } => {
                let i = match dst {
                    IpAddr::V4(d) => u32::from(d).wrapping_sub(u32::from(*base)),
                    IpAddr::V6(d) => {
                        let i = u128::from(d).wrapping_sub(u128::from((*base6)?));
                        u32::try_from(i).ok()?
                    }
                };
                (i < *count).then_some(i as u16)
            }
            Destinations::Map(m) => m.get(&dst).copied(),
        }
    }
}

/// No path between a pair.
pub const NO_PATH: u32 = u32::MAX;

/// Computes a topology's path between two of its ports on demand: the
/// miss of ModelNet's route cache (§2.2: "a hash-based cache of routes
/// for active flows ... In the rare case of a cache miss, the route may
/// be ... computed on the fly from an internal representation of the
/// topology"). Implemented by `pipelab_topo` over its pipe graph; the
/// emulation asks it once per pair, for the first packet of that pair,
/// and keeps the answer until the next [`crate::Emulation::apply`].
///
/// It must be a pure function of the pair for the life of one spec (the
/// same answer from every worker), compute without I/O or clock, and
/// answer quickly: the first packet of the pair waits for it.
pub trait PathSource: Send + Sync + core::fmt::Debug {
    /// The pipe numbers from port `src` to port `dst`, in order; `None`
    /// if the pair has no path (or a port is not the topology's).
    fn path(&self, src: usize, dst: usize) -> Option<Vec<u32>>;
}

/// The [`PathSource`] of on-demand [`Paths`]. Two are equal if they are
/// the same source (one `Arc`): a new source is a new routing.
#[derive(Clone)]
pub struct OnDemand(pub Arc<dyn PathSource>);

impl PartialEq for OnDemand {
    fn eq(&self, o: &OnDemand) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.0), Arc::as_ptr(&o.0))
    }
}

impl Eq for OnDemand {}

impl core::fmt::Debug for OnDemand {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "OnDemand({:?})", self.0)
    }
}

/// A topology's paths: for each (source port, destination port) pair of
/// its `n` ports, the pipes crossed in order (ModelNet's routing matrix).
///
/// [`Paths::new`] holds every pair (an `n × n` index); [`Paths::only`]
/// holds only the pairs [`Paths::set`] gave it (a virtual-time run, which
/// knows its traffic: a few pairs of a 2000-VN topology, not four
/// million); [`Paths::on_demand`] holds the pairs it was given or asked
/// for, and asks its [`PathSource`] for any other the first time it is
/// needed ([`Paths::resolve`]: a live topology, where any VN may send to
/// any other but few pairs do). A pair it does not hold has no path
/// ([`Paths::holds`] tells the two apart).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paths {
    /// Ports `0..n` are the topology's.
    pub n: usize,
    /// Which address belongs to which port.
    pub dest: Destinations,
    /// Pipe numbers of every path, back to back.
    pub hops: Vec<u32>,
    /// Where each pair's path is in `hops`.
    index: PairIndex,
    /// Computes the pairs not held ([`Paths::on_demand`]).
    source: Option<OnDemand>,
}

/// The pairs of [`Paths`]: where each one's path starts in `hops`
/// ([`NO_PATH`]: none) and its number of hops.
#[derive(Clone, Debug, PartialEq, Eq)]
enum PairIndex {
    /// Every pair, at `src * n + dst`.
    Dense { start: Vec<u32>, len: Vec<u16> },
    /// The pairs set, by `src * n + dst`.
    Sparse(BTreeMap<usize, (u32, u16)>),
}

impl Paths {
    /// `n` ports, every pair held, with no path yet.
    pub fn new(n: usize, dest: Destinations) -> Paths {
        Paths {
            n,
            dest,
            hops: Vec::new(),
            index: PairIndex::Dense {
                start: vec![NO_PATH; n * n],
                len: vec![0; n * n],
            },
            source: None,
        }
    }

    /// `n` ports holding no pair yet: only the pairs [`Paths::set`] is
    /// given will be held.
    pub fn only(n: usize, dest: Destinations) -> Paths {
        Paths {
            n,
            dest,
            hops: Vec::new(),
            index: PairIndex::Sparse(BTreeMap::new()),
            source: None,
        }
    }

    /// `n` ports holding no pair yet, each pair's path asked of `source`
    /// the first time [`Paths::resolve`] needs it; [`Paths::set`] may
    /// give pairs beforehand.
    pub fn on_demand(n: usize, dest: Destinations, source: Arc<dyn PathSource>) -> Paths {
        Paths {
            source: Some(OnDemand(source)),
            ..Paths::only(n, dest)
        }
    }

    /// True if it holds only the pairs it was given or asked for
    /// ([`Paths::only`], [`Paths::on_demand`]).
    pub fn is_partial(&self) -> bool {
        matches!(self.index, PairIndex::Sparse(_))
    }

    /// True if it asks a [`PathSource`] for the pairs it does not hold.
    pub fn is_on_demand(&self) -> bool {
        self.source.is_some()
    }

    /// Hold the pair `src` → `dst`: true if it is held (it was, or its
    /// [`PathSource`] was asked for its path now; a pair with no path is
    /// held too); false if it is not and cannot be (ports outside `0..n`,
    /// or paths that are not on demand).
    pub fn resolve(&mut self, src: usize, dst: usize) -> bool {
        if self.holds(src, dst) {
            return true;
        }
        if src >= self.n || dst >= self.n {
            return false;
        }
        let Some(source) = self.source.as_ref().map(|s| s.0.clone()) else {
            return false;
        };
        let path = source.path(src, dst);
        self.set(src, dst, path.as_deref());
        true
    }

    /// Set the path from port `src` to port `dst` (`None`: unreachable).
    pub fn set(&mut self, src: usize, dst: usize, pipes: Option<&[u32]>) {
        if src >= self.n || dst >= self.n {
            return;
        }
        let k = src * self.n + dst;
        let at = match pipes {
            Some(p) if !p.is_empty() && p.len() <= u16::MAX as usize => {
                let at = (self.hops.len() as u32, p.len() as u16);
                self.hops.extend_from_slice(p);
                at
            }
            _ => (NO_PATH, 0),
        };
        match &mut self.index {
            PairIndex::Dense { start, len } => {
                start[k] = at.0;
                len[k] = at.1;
            }
            PairIndex::Sparse(m) => {
                m.insert(k, at);
            }
        }
    }

    /// The pipes from port `src` to port `dst`, if there is a path.
    #[inline]
    pub fn get(&self, src: usize, dst: usize) -> Option<&[u32]> {
        if src >= self.n || dst >= self.n {
            return None;
        }
        let k = src * self.n + dst;
        let (s, l) = match &self.index {
            PairIndex::Dense { start, len } => (start[k], len[k]),
            PairIndex::Sparse(m) => *m.get(&k)?,
        };
        (s != NO_PATH).then(|| &self.hops[s as usize..s as usize + l as usize])
    }

    /// True if the pair is held: its path (or that it has none) is known.
    pub fn holds(&self, src: usize, dst: usize) -> bool {
        src < self.n
            && dst < self.n
            && match &self.index {
                PairIndex::Dense { .. } => true,
                PairIndex::Sparse(m) => m.contains_key(&(src * self.n + dst)),
            }
    }

    /// The pairs held, as `src * n + dst`, in order.
    pub fn held(&self) -> Box<dyn Iterator<Item = usize> + '_> {
        match &self.index {
            PairIndex::Dense { start, .. } => Box::new(0..start.len()),
            PairIndex::Sparse(m) => Box::new(m.keys().copied()),
        }
    }

    /// Number of pairs held (`n²` unless [`Paths::only`]).
    pub fn held_count(&self) -> usize {
        match &self.index {
            PairIndex::Dense { start, .. } => start.len(),
            PairIndex::Sparse(m) => m.len(),
        }
    }

    /// Every pair with a path, as `(src, dst, pipes)`, in order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, usize, &[u32])> + '_ {
        let n = self.n.max(1);
        self.held()
            .filter_map(move |k| Some((k / n, k % n, self.get(k / n, k % n)?)))
    }

    /// Bytes its tables take: the hops and the pair index (a sparse
    /// index's entries counted by their keys and values).
    pub fn table_bytes(&self) -> usize {
        let hops = self.hops.capacity() * std::mem::size_of::<u32>();
        hops + match &self.index {
            PairIndex::Dense { start, len } => {
                start.capacity() * std::mem::size_of::<u32>()
                    + len.capacity() * std::mem::size_of::<u16>()
            }
            PairIndex::Sparse(m) => m.len() * std::mem::size_of::<(usize, (u32, u16))>(),
        }
    }
}

/// What rules refer to by name, resolved when they are compiled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Env {
    /// The emulating host's addresses (`me`).
    pub me: Vec<IpAddr>,
    /// Interface names → the ids ports and backends report.
    pub ifaces: BTreeMap<String, u32>,
    /// User names → uids (`uid NAME`).
    pub users: BTreeMap<String, u32>,
    /// Frames are seen at layer 2 (bridge mode): rules with `layer2`
    /// match, rules with `not layer2` do not; elsewhere the other way
    /// round.
    pub layer2: bool,
}

/// An emulation, whole. See the module documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// Pipes by number.
    pub pipes: BTreeMap<u32, PipeDef>,
    /// Flow queues by number.
    pub queues: BTreeMap<u32, QueueDef>,
    /// Rules by number, several to a number in the order added (the
    /// default rule 65535 is implicit).
    pub rules: Rules,
    /// Lookup tables by number or name.
    pub tables: BTreeMap<TableId, Table>,
    /// `set one_pass`: false reinjects a packet leaving a pipe into the
    /// rules after the rule that sent it.
    pub one_pass: bool,
    /// Names the rules resolve.
    pub env: Env,
    /// The ports, by index.
    pub ports: Vec<PortDef>,
    /// A topology's paths (with [`Egress::ByDestination`] ports).
    pub paths: Option<Paths>,
}

impl Default for Spec {
    fn default() -> Spec {
        Spec {
            pipes: BTreeMap::new(),
            queues: BTreeMap::new(),
            rules: Rules::new(),
            tables: BTreeMap::new(),
            one_pass: true,
            env: Env::default(),
            ports: Vec::new(),
            paths: None,
        }
    }
}

impl Spec {
    /// Add a configuration's objects to this spec (a topology's): its
    /// pipes, flow queues, rules, tables, `one_pass` and the names it
    /// resolves. A configuration's pipes are numbered below
    /// [`TOPO_PIPE_BASE`], so they never clash with a topology's.
    pub fn merge_config(&mut self, config: &Spec) {
        self.pipes
            .extend(config.pipes.iter().map(|(n, p)| (*n, p.clone())));
        self.queues
            .extend(config.queues.iter().map(|(n, q)| (*n, q.clone())));
        self.rules
            .extend(config.rules.iter().map(|(n, r)| (*n, r.clone())));
        self.tables
            .extend(config.tables.iter().map(|(n, t)| (n.clone(), t.clone())));
        self.one_pass = config.one_pass;
        self.env.me.extend(config.env.me.iter().copied());
        self.env
            .ifaces
            .extend(config.env.ifaces.iter().map(|(k, v)| (k.clone(), *v)));
        self.env
            .users
            .extend(config.env.users.iter().map(|(k, v)| (k.clone(), *v)));
    }

    /// The port plan of one port whose frames enter in `dir` and leave by
    /// the same port (virtual time's synthetic sources, host mode).
    pub fn single_port(name: &str, dir: Option<Direction>) -> Vec<PortDef> {
        vec![PortDef {
            name: name.to_string(),
            dir,
            iface: None,
            egress: Egress::Port(0),
        }]
    }

    /// The port plan of a topology's `n` VNs: port `k` is VN `k`, named
    /// `names[k]` (else `vn{k}`), its frames seen as `out` on interface
    /// id `k` and leaving by their destination's port ([`Paths`]).
    pub fn vn_ports(n: usize, names: &[String]) -> Vec<PortDef> {
        (0..n)
            .map(|k| PortDef {
                name: names.get(k).cloned().unwrap_or_else(|| format!("vn{k}")),
                dir: Some(Direction::Out),
                iface: Some(k as u32),
                egress: Egress::ByDestination,
            })
            .collect()
    }

    /// The port plan of two ports, each leaving by the other (a bridge,
    /// a shell), with interface ids 0 and 1.
    pub fn two_ports(a: (&str, Option<Direction>), b: (&str, Option<Direction>)) -> Vec<PortDef> {
        vec![
            PortDef {
                name: a.0.to_string(),
                dir: a.1,
                iface: Some(0),
                egress: Egress::Port(1),
            },
            PortDef {
                name: b.0.to_string(),
                dir: b.1,
                iface: Some(1),
                egress: Egress::Port(0),
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves paths holding only the pairs set answer as paths
    /// holding every pair for those pairs (a path, or none), hold no
    /// other (none of them has a path), list their pairs in order and
    /// take a table of those pairs alone: 3 of 10,000.
    #[test]
    fn partial_paths_hold_only_the_pairs_set() {
        let dest = Destinations::Range {
            base: Ipv4Addr::new(10, 0, 0, 1),
            base6: None,
            count: 100,
        };
        let mut all = Paths::new(100, dest.clone());
        let mut some = Paths::only(100, dest);
        for p in [&mut all, &mut some] {
            p.set(7, 3, Some(&[65536, 65537]));
            p.set(3, 7, None);
            p.set(0, 99, Some(&[65540]));
            p.set(100, 0, Some(&[1]));
        }
        assert!(some.is_partial() && !all.is_partial());
        for (s, d) in [(7, 3), (3, 7), (0, 99), (99, 0), (1, 2), (100, 0)] {
            assert_eq!(some.get(s, d), all.get(s, d), "{s}->{d}");
        }
        assert_eq!(some.get(7, 3), Some(&[65536, 65537][..]));
        assert!(some.holds(3, 7) && some.get(3, 7).is_none());
        assert!(!some.holds(1, 2) && all.holds(1, 2) && !all.holds(100, 0));
        assert_eq!(some.held_count(), 3);
        assert_eq!(all.held_count(), 10_000);
        let listed: Vec<(usize, usize, Vec<u32>)> =
            some.iter().map(|(s, d, h)| (s, d, h.to_vec())).collect();
        assert_eq!(
            listed,
            vec![(0, 99, vec![65540]), (7, 3, vec![65536, 65537])]
        );
        assert_eq!(
            all.iter().map(|(s, d, _)| (s, d)).collect::<Vec<_>>(),
            vec![(0, 99), (7, 3)]
        );
        assert!(some.table_bytes() < 200, "{}", some.table_bytes());
        assert!(all.table_bytes() >= 60_000, "{}", all.table_bytes());
    }

    /// A pass proves a dual-stack range gives a port's IPv4 and IPv6
    /// addresses the same index, and owns nothing outside its `count`
    /// addresses of either family (nor IPv6 at all without `base6`).
    #[test]
    fn a_range_maps_both_families_to_one_port() {
        let base6: Ipv6Addr = "fd12:3456:789a:1::1".parse().expect("v6");
        let d = Destinations::Range {
            base: Ipv4Addr::new(10, 0, 0, 1),
            base6: Some(base6),
            count: 3,
        };
        let port = |s: &str| d.port(s.parse().expect("address"));
        for (v4, v6, want) in [
            ("10.0.0.1", "fd12:3456:789a:1::1", Some(0)),
            ("10.0.0.3", "fd12:3456:789a:1::3", Some(2)),
            ("10.0.0.4", "fd12:3456:789a:1::4", None),
            ("10.0.0.0", "fd12:3456:789a:1::", None),
            ("10.1.0.1", "fd12:3456:789a:2::1", None),
        ] {
            assert_eq!(port(v4), want, "{v4}");
            assert_eq!(port(v6), want, "{v6}");
        }
        // Far above the range: the 128-bit difference does not wrap into it.
        assert_eq!(port("fd12:3456:789a:1:0:1::1"), None);
        let v4_only = Destinations::Range {
            base: Ipv4Addr::new(10, 0, 0, 1),
            base6: None,
            count: 3,
        };
        assert_eq!(v4_only.port("10.0.0.2".parse().expect("v4")), Some(1));
        assert_eq!(v4_only.port(IpAddr::V6(base6)), None);
    }
}
