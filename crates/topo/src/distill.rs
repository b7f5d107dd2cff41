//! Distillation (ModelNet §4.1): from the target topology to the pipe
//! topology the engine emulates, trading accuracy for fewer pipes per
//! packet.
//!
//! * [`Mode::HopByHop`]: "the distilled topology is isomorphic to the
//!   target network": one pipe per link direction.
//! * [`Mode::EndToEnd`]: "a full mesh with O(n²) links interconnecting the
//!   n VNs ... the bandwidth of p is the minimum bandwidth of any link in
//!   the corresponding path, its latency is the sum of the link latencies
//!   along the path, and its reliability (1 − lossrate) is the product of
//!   the link reliabilities along the path". One pipe per ordered VN pair
//!   (a pipe pair per unordered pair, the paper's count).
//! * [`Mode::WalkIn`]`(k)`: "A breadth-first traversal generates successive
//!   frontier sets. The first frontier set is the set of all VNs; the
//!   members of the i + 1 frontier set are the nodes that are one hop from
//!   a member of the ith frontier set, but are not members of any
//!   preceding frontier set. The interior consists of all nodes that are
//!   not members of the first walk-in frontier sets. The distiller
//!   replaces the interior links of the target topology with a full mesh
//!   interconnecting the interior nodes". Links with an end outside the
//!   interior are kept; each mesh pipe collapses the shortest path between
//!   its ends through interior links only. [`Mode::LastMile`] is walk-in 1.
//! * [`Mode::WalkOut`]: frontier sets continue "until a frontier of size
//!   one or zero is found ... frontier set c. The interior corresponding
//!   to breadth walk-out is the union of frontier sets c - walk-out
//!   through c. Distillation preserves links interconnecting the interior,
//!   while collapsing paths between the walk-in and walk-out frontiers".
//!   Here: links joining two core nodes are kept; the other interior links
//!   are replaced by a mesh over the collapsed nodes and the core's outer
//!   frontier (no mesh pipe joins two core nodes), each pipe the shortest
//!   path over the replaced links.
//!
//! A collapsed pipe's queue is that of its bottleneck link. Frontier sets
//! and the mesh are computed on the fault-free topology, so faults never
//! change the set of pipes, only their attributes and whether they are up.
//!
//! Pipes come in pairs: `2k` and `2k + 1` join the same nodes in opposite
//! directions with the same attributes (a collapsed pair stands for one
//! path, whichever [`Routes`] choice routes over the pipes).

use core::fmt;
use core::str::FromStr;

use pipelab_engine::{Duration, QueueLimit, Rate};

use crate::model::{PipeWords, Role, Topology};
use crate::paths::{Arc, Faults, Metric, PathGraph, RouteMatrix, Routes};
use crate::TopoError;

/// A distillation mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// One pipe per link direction.
    HopByHop,
    /// One pipe per ordered VN pair.
    EndToEnd,
    /// Keep the first `k` frontier sets' links; mesh the interior.
    WalkIn(u32),
    /// Walk-in, also keeping the core of breadth `walk_out` around the
    /// topological centre.
    WalkOut {
        /// Frontier sets kept from the edge.
        walk_in: u32,
        /// Breadth of the core kept around the centre.
        walk_out: u32,
    },
    /// Walk-in 1: "preserves the first and last hop of each path".
    LastMile,
}

impl Mode {
    fn walk(self) -> Option<(u32, Option<u32>)> {
        match self {
            Mode::WalkIn(k) => Some((k, None)),
            Mode::LastMile => Some((1, None)),
            Mode::WalkOut { walk_in, walk_out } => Some((walk_in, Some(walk_out))),
            _ => None,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::HopByHop => f.write_str("hop-by-hop"),
            Mode::EndToEnd => f.write_str("end-to-end"),
            Mode::WalkIn(k) => write!(f, "walk-in {k}"),
            Mode::LastMile => f.write_str("last-mile"),
            Mode::WalkOut { walk_in, walk_out } => {
                write!(f, "walk-in {walk_in} walk-out {walk_out}")
            }
        }
    }
}

impl FromStr for Mode {
    type Err = TopoError;
    /// `hop-by-hop`, `end-to-end`, `last-mile`, `walk-in K`,
    /// `walk-out K` (walk-in 1), `walk-in K walk-out W` (`=` may join a
    /// word and its number).
    fn from_str(s: &str) -> Result<Mode, TopoError> {
        let words: Vec<String> = s
            .split(|c: char| c.is_whitespace() || c == '=' || c == ',')
            .filter(|w| !w.is_empty())
            .map(|w| w.to_ascii_lowercase())
            .collect();
        let bad = || {
            TopoError::Invalid(format!(
                "unknown distillation `{s}` (hop-by-hop, end-to-end, last-mile, walk-in K, walk-out K, walk-in K walk-out W)"
            ))
        };
        let num = |w: &String| w.parse::<u32>().map_err(|_| bad());
        let w: Vec<&str> = words.iter().map(String::as_str).collect();
        match w.as_slice() {
            ["hop-by-hop" | "hbh"] => Ok(Mode::HopByHop),
            ["end-to-end" | "e2e"] => Ok(Mode::EndToEnd),
            ["last-mile"] => Ok(Mode::LastMile),
            ["walk-in", k] => Ok(Mode::WalkIn(num(&k.to_string())?)),
            ["walk-out", k] => Ok(Mode::WalkOut {
                walk_in: 1,
                walk_out: num(&k.to_string())?,
            }),
            ["walk-in", k, "walk-out", o] => Ok(Mode::WalkOut {
                walk_in: num(&k.to_string())?,
                walk_out: num(&o.to_string())?,
            }),
            _ => Err(bad()),
        }
    }
}

/// One pipe of the distilled topology, from node `from` to node `to`
/// (topology node indices).
#[derive(Clone, Debug, PartialEq)]
pub struct PipeSpec {
    /// Entry node.
    pub from: usize,
    /// Exit node.
    pub to: usize,
    /// Bandwidth.
    pub bw: Rate,
    /// Propagation delay.
    pub delay: Duration,
    /// Loss probability.
    pub loss: f64,
    /// Queue bound.
    pub queue: QueueLimit,
    /// The pipe words of the link it stands for ([`crate::model::Link::words`];
    /// a collapsed pipe takes those of the one link of its path that has
    /// any).
    pub words: PipeWords,
    /// Target-topology links it stands for (1 unless collapsed).
    pub hops: u32,
    /// False if a fault left it without a path (no route uses it).
    pub up: bool,
}

/// A distilled topology: pipes and the routes over them.
#[derive(Clone, Debug, PartialEq)]
pub struct Distilled {
    /// How it was distilled.
    pub mode: Mode,
    /// What routes minimise.
    pub metric: Metric,
    /// Whether a pair's two directions share one path.
    pub routing: Routes,
    /// Pipes, in reverse pairs (`2k`, `2k+1`).
    pub pipes: Vec<PipeSpec>,
    /// Routes between all VN pairs, as pipe indices (only the pairs
    /// routed with [`Distilled::route_pairs`] after [`distill_unrouted`]).
    pub routes: RouteMatrix,
    /// The texts of the files the pipes' words name (the topology's).
    pub files: crate::model::FileTexts,
}

/// Size and path-length figures of a distilled topology.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    /// VNs.
    pub vns: usize,
    /// Bidirectional pipe pairs (the paper counts these as "pipes").
    pub links: usize,
    /// Directed pipes (what the engine holds): `2 × links`.
    pub pipes: usize,
    /// Routes (ordered VN pairs with a route).
    pub routes: usize,
    /// Ordered VN pairs without a route (of a partial matrix, among the
    /// pairs it holds).
    pub unreachable: usize,
    /// Mean pipes per route.
    pub mean_hops: f64,
    /// Most pipes on a route.
    pub max_hops: usize,
}

impl Distilled {
    /// Size and path-length figures.
    pub fn stats(&self) -> Stats {
        let n = self.routes.vns().len();
        let mut routes = 0usize;
        let mut total = 0usize;
        let mut max = 0usize;
        for (_, _, r) in self.routes.iter() {
            routes += 1;
            total += r.len();
            max = max.max(r.len());
        }
        Stats {
            vns: n,
            links: self.pipes.len() / 2,
            pipes: self.pipes.len(),
            routes,
            unreachable: if self.routes.is_partial() {
                // Of the pairs routed.
                self.routes
                    .held()
                    .filter(|(s, d, r)| s != d && r.is_empty())
                    .count()
            } else {
                n * n.saturating_sub(1) - routes
            },
            mean_hops: if routes == 0 {
                0.0
            } else {
                total as f64 / routes as f64
            },
            max_hops: max,
        }
    }
}

/// Distil `topo` with routes by delay and no faults.
pub fn distill(topo: &Topology, mode: Mode) -> Result<Distilled, TopoError> {
    distill_with(topo, mode, Metric::Delay, &Faults::none(topo))
}

/// The report `pipelab topo distill` prints: mode, pipe counts, mean and
/// max hops per route (routes by delay).
pub fn distill_report(topo: &Topology, mode: Mode) -> String {
    match distill(topo, mode) {
        Err(e) => format!("error: {e}\n"),
        Ok(d) => report(topo, &d),
    }
}

/// The report of [`distill_report`] for an already distilled topology `d`
/// of `topo`: mode and routing metric (and `, asymmetric` if routes are),
/// pipe counts, mean and max hops per route.
pub fn report(topo: &Topology, d: &Distilled) -> String {
    let s = d.stats();
    let routing = match d.routing {
        Routes::Symmetric => String::new(),
        Routes::Asymmetric => format!(", {}", d.routing),
    };
    format!(
        "distillation: {} (routes by {}{})\nnodes: {} ({} VNs), links: {}\npipes: {} ({} bidirectional)\nroutes: {} ({} unreachable)\nhops per route: mean {:.3}, max {}\n",
        d.mode,
        d.metric,
        routing,
        topo.nodes.len(),
        s.vns,
        topo.links.len(),
        s.pipes,
        s.links,
        s.routes,
        s.unreachable,
        s.mean_hops,
        s.max_hops
    )
}

/// The path graph of a distilled topology's pipes (arc `i` = pipe `i`).
pub(crate) fn pipe_graph(nodes: usize, d: &Distilled, roles: &[Role], metric: Metric) -> PathGraph {
    let arcs = d
        .pipes
        .iter()
        .map(|p| Arc {
            from: p.from,
            to: p.to,
            delay_ns: p.delay.as_nanos(),
            hops: p.hops,
        })
        .collect();
    let no_transit = (0..nodes)
        .map(|i| roles.get(i) == Some(&Role::Client))
        .collect();
    let mut g = PathGraph::new(nodes, arcs, no_transit, metric);
    g.up = d.pipes.iter().map(|p| p.up).collect();
    g
}

/// The path graph of the target topology's links: arc `2i` is link `i`
/// from `a` to `b`, arc `2i+1` from `b` to `a`.
fn link_graph(topo: &Topology, metric: Metric) -> PathGraph {
    let mut arcs = Vec::with_capacity(topo.links.len() * 2);
    for l in &topo.links {
        let d = l.delay.as_nanos();
        arcs.push(Arc {
            from: l.a,
            to: l.b,
            delay_ns: d,
            hops: 1,
        });
        arcs.push(Arc {
            from: l.b,
            to: l.a,
            delay_ns: d,
            hops: 1,
        });
    }
    let no_transit = topo.nodes.iter().map(|n| n.role == Role::Client).collect();
    PathGraph::new(topo.nodes.len(), arcs, no_transit, metric)
}

/// A pipe pair for link `i`.
fn link_pipes(topo: &Topology, i: usize, up: bool, out: &mut Vec<PipeSpec>) {
    let l = &topo.links[i];
    for (from, to) in [(l.a, l.b), (l.b, l.a)] {
        out.push(PipeSpec {
            from,
            to,
            bw: l.bw,
            delay: l.delay,
            loss: l.loss,
            queue: l.queue,
            words: l.words.clone(),
            hops: 1,
            up,
        });
    }
}

/// A pipe pair collapsing the path of link arcs `path` from `u` to `v`;
/// `None` path gives a down pair. The pair takes the pipe words of the one
/// link of the path that has any; two such links on one path cannot be
/// collapsed (jitter, loss models and AQMs do not add up): an error names
/// them.
fn collapsed_pipes(
    topo: &Topology,
    u: usize,
    v: usize,
    path: Option<&[u32]>,
    out: &mut Vec<PipeSpec>,
) -> Result<(), TopoError> {
    let mut words: Option<usize> = None;
    let mut bw = Rate::UNLIMITED;
    let mut queue = QueueLimit::default();
    let mut delay = 0u64;
    let mut reliability = 1.0f64;
    let mut first = true;
    let path = path.unwrap_or(&[]);
    for &arc in path {
        let i = arc as usize / 2;
        let l = &topo.links[i];
        if l.words != PipeWords::default() {
            if let Some(w) = words.filter(|&w| w != i) {
                let name = |k: usize| {
                    let l = &topo.links[k];
                    format!("{}-{}", topo.node_name(l.a), topo.node_name(l.b))
                };
                return Err(TopoError::Invalid(format!(
                    "links {} and {} both have pipe words ({} / {}) and lie on one collapsed path from {} to {}: distil hop-by-hop, or give the words to one link of the path",
                    name(w),
                    name(i),
                    topo.links[w].words,
                    l.words,
                    topo.node_name(u),
                    topo.node_name(v)
                )));
            }
            words = Some(i);
        }
        delay = delay.saturating_add(l.delay.as_nanos());
        reliability *= 1.0 - l.loss;
        let narrower = !l.bw.is_unlimited() && (bw.is_unlimited() || l.bw < bw);
        if first || narrower {
            if narrower {
                bw = l.bw;
            }
            queue = l.queue;
            first = false;
        }
    }
    let up = !path.is_empty();
    for (from, to) in [(u, v), (v, u)] {
        out.push(PipeSpec {
            from,
            to,
            bw,
            delay: Duration::from_nanos(delay),
            loss: (1.0 - reliability).clamp(0.0, 1.0),
            queue,
            words: words.map_or_else(PipeWords::default, |i| topo.links[i].words.clone()),
            hops: path.len() as u32,
            up,
        });
    }
    Ok(())
}

/// Frontier index of every node (1 = VNs); unreachable nodes get 0.
fn frontiers(topo: &Topology) -> Vec<u32> {
    let adj = topo.adjacency();
    let mut f = vec![0u32; topo.nodes.len()];
    let mut cur: Vec<usize> = topo.vns();
    for &v in &cur {
        f[v] = 1;
    }
    let mut level = 1;
    while !cur.is_empty() {
        level += 1;
        let mut next = Vec::new();
        for &u in &cur {
            for &li in &adj[u] {
                let w = topo.links[li].other(u);
                if f[w] == 0 {
                    f[w] = level;
                    next.push(w);
                }
            }
        }
        cur = next;
    }
    f
}

/// Distil with a routing metric under faults (symmetric routes).
pub fn distill_with(
    topo: &Topology,
    mode: Mode,
    metric: Metric,
    faults: &Faults,
) -> Result<Distilled, TopoError> {
    distill_with_routes(topo, mode, metric, Routes::Symmetric, faults)
}

/// Distil with a routing metric under faults, routes symmetric or each
/// direction on its own (`routes`).
pub fn distill_with_routes(
    topo: &Topology,
    mode: Mode,
    metric: Metric,
    routing: Routes,
    faults: &Faults,
) -> Result<Distilled, TopoError> {
    distill_inner(topo, mode, metric, routing, faults, true)
}

/// [`distill_with_routes`] with the routes of no VN pair yet (end-to-end
/// distillation aside: its routes are its pipes, every pair's): a run
/// that knows which pairs it sends between routes those alone with
/// [`Distilled::route_pairs`] (ModelNet's routing matrix is `n²` routes:
/// four million on a ring of 2000 VNs).
pub fn distill_unrouted(
    topo: &Topology,
    mode: Mode,
    metric: Metric,
    routing: Routes,
    faults: &Faults,
) -> Result<Distilled, TopoError> {
    distill_inner(topo, mode, metric, routing, faults, false)
}

impl Distilled {
    /// Route the ordered VN pairs `pairs` (topology node indices) that
    /// its routes do not hold yet, as a whole distillation routes them:
    /// the same shortest-path trees and ties (with symmetric routes both
    /// directions of a pair are held after), one tree per root VN.
    pub fn route_pairs(&mut self, topo: &Topology, pairs: &[(usize, usize)]) {
        if pairs.iter().all(|&(s, d)| self.routes.holds(s, d)) {
            return;
        }
        let roles: Vec<Role> = topo.nodes.iter().map(|n| n.role).collect();
        let g = pipe_graph(topo.nodes.len(), self, &roles, self.metric);
        let routing = self.routing;
        self.routes.route_pairs(&g, routing, pairs);
    }
}

/// The most ordered node pairs a distillation routes or meshes at once:
/// 4,194,304, all the pairs of 2048 VNs. A whole routing matrix holds a
/// route per ordered VN pair, end-to-end distillation a pipe, and a
/// walk-in mesh a pipe per pair of its nodes: memory and time grow with
/// the square of the nodes (100,000 VNs asked for 240 GB). Beyond it the
/// topology is refused before anything is allocated; a partial matrix
/// ([`distill_unrouted`], what `pipelab sim` uses) holds only the pairs
/// routed.
pub const MAX_PAIRS: u64 = 1 << 22;

/// Refuse `count` ordered pairs of `what` beyond [`MAX_PAIRS`].
fn check_pairs(count: u64, what: impl FnOnce() -> String) -> Result<(), TopoError> {
    if count > MAX_PAIRS {
        return Err(TopoError::Invalid(format!(
            "{} make {count} ordered pairs, more than the limit of {MAX_PAIRS} (the pairs of 2048 VNs): {}",
            what(),
            "a distillation holds a route or a pipe for each (memory grows with the square of the nodes); distil a smaller topology, or fewer VNs"
        )));
    }
    Ok(())
}

/// Ordered pairs of `n` nodes, `n·(n − 1)`, saturating.
fn ordered_pairs(n: usize) -> u64 {
    let n = n as u64;
    n.saturating_mul(n.saturating_sub(1))
}

/// The ordered pairs a walk-in mesh may join: the pairs of mesh nodes
/// that the replaced links connect (one component each), at most.
fn mesh_pairs(topo: &Topology, replaced: &dyn Fn(usize) -> bool, mesh: &[usize]) -> u64 {
    // Union-find over the replaced links.
    let mut parent: Vec<usize> = (0..topo.nodes.len()).collect();
    fn root(parent: &mut [usize], mut v: usize) -> usize {
        while parent[v] != v {
            parent[v] = parent[parent[v]];
            v = parent[v];
        }
        v
    }
    for (i, l) in topo.links.iter().enumerate() {
        if replaced(i) {
            let (a, b) = (root(&mut parent, l.a), root(&mut parent, l.b));
            if a != b {
                parent[a] = b;
            }
        }
    }
    let mut size = vec![0usize; topo.nodes.len()];
    for &v in mesh {
        let r = root(&mut parent, v);
        size[r] += 1;
    }
    size.iter()
        .map(|&c| ordered_pairs(c))
        .fold(0u64, u64::saturating_add)
}

fn distill_inner(
    topo: &Topology,
    mode: Mode,
    metric: Metric,
    routing: Routes,
    faults: &Faults,
    all_pairs: bool,
) -> Result<Distilled, TopoError> {
    topo.validate()?;
    let vns = topo.vns();
    if all_pairs || mode == Mode::EndToEnd {
        check_pairs(ordered_pairs(vns.len()), || format!("{} VNs", vns.len()))?;
    }
    let mut lg = link_graph(topo, metric);
    for i in 0..topo.links.len() {
        let up = faults.usable(topo, i);
        lg.up[2 * i] = up;
        lg.up[2 * i + 1] = up;
    }
    let mut pipes = Vec::new();
    let mut routes = if all_pairs || mode == Mode::EndToEnd {
        RouteMatrix::new(vns.clone())
    } else {
        RouteMatrix::only(vns.clone())
    };
    match mode.walk() {
        None if mode == Mode::HopByHop => {
            for i in 0..topo.links.len() {
                link_pipes(topo, i, faults.usable(topo, i), &mut pipes);
            }
        }
        None => {
            // End-to-end: one pipe pair per VN pair, routes are that pipe.
            let n = vns.len();
            for i in 0..n {
                let tree = lg.tree(vns[i]);
                for j in i + 1..n {
                    let path = lg.path(&tree, vns[i], vns[j]);
                    let k = pipes.len() as u32;
                    collapsed_pipes(topo, vns[i], vns[j], path.as_deref(), &mut pipes)?;
                    if path.is_some() {
                        routes.set(vns[i], vns[j], vec![k]);
                        routes.set(vns[j], vns[i], vec![k + 1]);
                    }
                }
            }
            return Ok(Distilled {
                mode,
                metric,
                routing,
                pipes,
                routes,
                files: topo.files.clone(),
            });
        }
        Some((walk_in, walk_out)) => {
            let f = frontiers(topo);
            // The centre: the first frontier of size 0 or 1.
            let max = f.iter().copied().max().unwrap_or(0);
            let mut sizes = vec![0usize; max as usize + 2];
            for &x in &f {
                sizes[x as usize] += 1;
            }
            let c = (1..sizes.len() as u32)
                .find(|&i| sizes[i as usize] <= 1)
                .unwrap_or(max + 1);
            let edge = |v: usize| f[v] != 0 && f[v] <= walk_in;
            let core = |v: usize| match walk_out {
                Some(w) => !edge(v) && f[v] != 0 && f[v] + w >= c && f[v] <= c,
                None => false,
            };
            // Kept links: an end at the edge, or both ends in the core.
            let kept = |i: usize| {
                let l = &topo.links[i];
                edge(l.a) || edge(l.b) || (core(l.a) && core(l.b))
            };
            for i in 0..topo.links.len() {
                if kept(i) {
                    link_pipes(topo, i, faults.usable(topo, i), &mut pipes);
                }
            }
            // Mesh nodes: interior nodes with a replaced link.
            let mut in_mesh = vec![false; topo.nodes.len()];
            for i in (0..topo.links.len()).filter(|&i| !kept(i)) {
                in_mesh[topo.links[i].a] = true;
                in_mesh[topo.links[i].b] = true;
            }
            let mesh: Vec<usize> = (0..topo.nodes.len()).filter(|&v| in_mesh[v]).collect();
            check_pairs(mesh_pairs(topo, &|i| !kept(i), &mesh), || {
                format!("the {} interior nodes a {mode} mesh joins", mesh.len())
            })?;
            // Structure on the fault-free replaced links, attributes under faults.
            let mut free = lg.clone();
            let mut faulty = lg;
            for i in 0..topo.links.len() {
                let k = kept(i);
                free.up[2 * i] = !k;
                free.up[2 * i + 1] = !k;
                let u = !k && faults.usable(topo, i);
                faulty.up[2 * i] = u;
                faulty.up[2 * i + 1] = u;
            }
            for (a, &u) in mesh.iter().enumerate() {
                let t_free = free.tree(u);
                let t_now = faulty.tree(u);
                for &v in &mesh[a + 1..] {
                    if core(u) && core(v) {
                        continue;
                    }
                    if free.path(&t_free, u, v).is_none() {
                        continue;
                    }
                    let p = faulty.path(&t_now, u, v);
                    collapsed_pipes(topo, u, v, p.as_deref(), &mut pipes)?;
                }
            }
        }
    }
    let mut d = Distilled {
        mode,
        metric,
        routing,
        pipes,
        routes,
        files: topo.files.clone(),
    };
    if all_pairs {
        let roles: Vec<Role> = topo.nodes.iter().map(|n| n.role).collect();
        let g = pipe_graph(topo.nodes.len(), &d, &roles, metric);
        d.routes.fill(&g, routing, &|_, _| true);
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves every mode's name parses and prints back.
    #[test]
    fn modes_round_trip_through_text() {
        for m in [
            Mode::HopByHop,
            Mode::EndToEnd,
            Mode::LastMile,
            Mode::WalkIn(2),
            Mode::WalkOut {
                walk_in: 1,
                walk_out: 2,
            },
        ] {
            assert_eq!(m.to_string().parse::<Mode>(), Ok(m));
        }
        assert_eq!("walk-in=3".parse::<Mode>(), Ok(Mode::WalkIn(3)));
        assert!("walk-in".parse::<Mode>().is_err());
        assert!("sideways".parse::<Mode>().is_err());
    }

    /// A star of 2049 VNs has more ordered pairs than [`MAX_PAIRS`]: a
    /// pass proves it is refused, naming the count and the limit, in
    /// every mode that routes or meshes every pair, before anything is
    /// allocated for them (100,000 VNs asked for 240 GB and aborted),
    /// and that routing on demand still takes it.
    #[test]
    fn too_many_pairs_are_refused_before_allocating() {
        let t = crate::gen::star(2049, &crate::model::RoleAttrs::default()).expect("star");
        for mode in [Mode::HopByHop, Mode::EndToEnd, Mode::LastMile] {
            let e = distill(&t, mode).expect_err("refused").to_string();
            assert!(
                e.starts_with("2049 VNs make 4196352 ordered pairs, more than the limit of 4194304 (the pairs of 2048 VNs)"),
                "{mode}: {e}"
            );
        }
        let some = distill_unrouted(
            &t,
            Mode::HopByHop,
            Metric::Delay,
            Routes::Symmetric,
            &Faults::none(&t),
        )
        .expect("routes on demand");
        assert_eq!(some.pipes.len(), 2 * 2049);
    }

    /// A walk-in mesh joins every pair of its interior nodes: a chain of
    /// 3000 routers with a VN at each end meshes 2998 of them under
    /// last-mile. A pass proves the mesh is refused by its pairs, and
    /// that hop-by-hop takes the chain.
    #[test]
    fn a_mesh_of_too_many_pairs_is_refused() {
        let mut t = Topology::new();
        let attrs = crate::model::RoleAttrs::default();
        for i in 0..3000 {
            let role = if i == 0 || i == 2999 {
                Role::Client
            } else {
                Role::Stub
            };
            t.add_node(role, "");
            if i > 0 {
                t.add_link_by_role(i - 1, i, &attrs);
            }
        }
        let e = distill(&t, Mode::LastMile)
            .expect_err("refused")
            .to_string();
        assert!(
            e.starts_with("the 2998 interior nodes a last-mile mesh joins make 8985006 ordered pairs, more than the limit of 4194304"),
            "{e}"
        );
        let d = distill(&t, Mode::HopByHop).expect("hop-by-hop");
        assert_eq!(d.stats().max_hops, 2999);
    }

    /// A pass proves that routing only some pairs of a ring of 100
    /// routers and 2000 VNs gives each of them the route the whole
    /// matrix gives it (the same trees and ties: a ring has two equal
    /// ways to its opposite router, by delay and by hops; checked
    /// against the whole matrix of a ring of 8), for both metrics and
    /// both symmetries, and holds those pairs alone: a
    /// symmetric pair and its reverse, an asymmetric pair by itself; not
    /// the 4,000,000 of the whole matrix.
    #[test]
    fn routing_some_pairs_matches_the_matrix_and_holds_only_them() {
        let t = crate::gen::ring(100, 20, &crate::model::RoleAttrs::default()).expect("ring");
        let vns = t.vns();
        assert_eq!(vns.len(), 2000);
        // Opposite routers (ties), neighbours, the same router, one pair
        // twice, one pair and its reverse, a VN to itself.
        let (a, b, c, e) = (vns[0], vns[1000], vns[1019], vns[25]);
        let pairs = [
            (a, b),
            (b, a),
            (c, e),
            (c, e),
            (e, vns[5]),
            (a, vns[1]),
            (a, a),
        ];
        let faults = Faults::none(&t);
        for metric in [Metric::Delay, Metric::Hops] {
            for routing in [Routes::Symmetric, Routes::Asymmetric] {
                let mut some = distill_unrouted(&t, Mode::HopByHop, metric, routing, &faults)
                    .expect("distils");
                assert!(some.routes.is_partial());
                assert_eq!(
                    some.routes.held_count(),
                    0,
                    "no route before it is asked for"
                );
                some.route_pairs(&t, &pairs);
                // Symmetric: (a,b)+(b,a), (c,e)+(e,c), (e,v5)+(v5,e),
                // (a,v1)+(v1,a); asymmetric: the five distinct ordered
                // pairs; and (a,a), held with no route.
                let want = match routing {
                    Routes::Symmetric => 9,
                    Routes::Asymmetric => 6,
                };
                assert_eq!(some.routes.held_count(), want, "{metric} {routing}");
                for &(s, d) in &pairs {
                    assert!(some.routes.holds(s, d));
                    assert_eq!(s == d, some.routes.route(s, d).is_none());
                }
                assert_eq!(
                    some.routes.route(a, b).map(<[u32]>::len),
                    Some(52),
                    "VN 0 to VN 1000: access, 50 ring links, access"
                );
            }
        }
        // Against the whole matrix, on a ring small enough to route it all.
        let t = crate::gen::ring(8, 3, &crate::model::RoleAttrs::default()).expect("ring");
        let vns = t.vns();
        let pairs: Vec<(usize, usize)> = vns
            .iter()
            .flat_map(|&s| vns.iter().map(move |&d| (s, d)))
            .filter(|&(s, d)| (s * 7 + d) % 3 == 0)
            .collect();
        for metric in [Metric::Delay, Metric::Hops] {
            for routing in [Routes::Symmetric, Routes::Asymmetric] {
                let full =
                    distill_with_routes(&t, Mode::HopByHop, metric, routing, &Faults::none(&t))
                        .expect("distils");
                let mut some =
                    distill_unrouted(&t, Mode::HopByHop, metric, routing, &Faults::none(&t))
                        .expect("distils");
                some.route_pairs(&t, &pairs);
                for &(s, d) in &pairs {
                    assert!(some.routes.holds(s, d));
                    assert_eq!(some.routes.route(s, d), full.routes.route(s, d), "{s}->{d}");
                }
                assert_eq!(full.routes.held_count(), vns.len() * vns.len());
            }
        }
    }

    /// A pass proves both routing metrics parse and print back, and that
    /// the report names the metric the routes were computed with.
    #[test]
    fn metrics_round_trip_and_show_in_the_report() {
        for m in [Metric::Delay, Metric::Hops] {
            assert_eq!(m.to_string().parse::<Metric>(), Ok(m));
        }
        assert_eq!(" HOPS ".parse::<Metric>(), Ok(Metric::Hops));
        assert!("latency".parse::<Metric>().is_err());
        let t = crate::gen::star(3, &crate::model::RoleAttrs::default()).expect("star");
        let d = distill_with(&t, Mode::EndToEnd, Metric::Hops, &Faults::none(&t)).expect("d");
        let r = report(&t, &d);
        assert!(
            r.starts_with("distillation: end-to-end (routes by hops)\n"),
            "{r}"
        );
        assert!(r.contains("pipes: 6 (3 bidirectional)"), "{r}");
    }
}
