//! Shortest paths and routing matrices: the base that distillation
//! ([`mod@crate::distill`]) and routing under faults ([`crate::route`])
//! both build on.
//!
//! * [`Metric`] and [`Routes`]: what a route minimises, and whether a
//!   pair's two directions share one path.
//! * `PathGraph`: a directed graph of arcs (link directions or pipes)
//!   with the arcs usable now and the nodes that may not be passed
//!   through; shortest-path trees by petgraph's Dijkstra, read back from
//!   the exact integer distances with ties broken by the lowest arc index.
//! * [`RouteMatrix`]: ModelNet's routing matrix, all VN pairs (or only
//!   those a run routes into it).
//! * [`Faults`]: which links and nodes of the target topology are up.
//!
//! Dependencies point one way: `route` → `distill` → `paths` → `model`.
//! This module knows nothing of distillation or of a running network.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Add;

use petgraph::algo::dijkstra;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{EdgeFiltered, EdgeRef};
use petgraph::Direction;

use crate::model::Topology;
use crate::TopoError;

/// What a route minimises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Total propagation delay (ties: fewer hops).
    #[default]
    Delay,
    /// Number of target-topology links (ties: less delay).
    Hops,
}

impl core::fmt::Display for Metric {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Metric::Delay => "delay",
            Metric::Hops => "hops",
        })
    }
}

impl core::str::FromStr for Metric {
    type Err = TopoError;
    /// `delay` or `hops` (any case).
    fn from_str(s: &str) -> Result<Metric, TopoError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "delay" => Ok(Metric::Delay),
            "hops" | "hop" => Ok(Metric::Hops),
            _ => Err(TopoError::Invalid(format!(
                "unknown routing metric `{}` (delay, hops)",
                s.trim()
            ))),
        }
    }
}

/// Whether the two directions of a VN pair share one path (ModelNet:
/// "routes are symmetric unless asked otherwise").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Routes {
    /// The route from `d` to `s` is the route from `s` to `d` reversed.
    #[default]
    Symmetric,
    /// Each direction is a shortest path of its own (ties may differ).
    Asymmetric,
}

impl core::fmt::Display for Routes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Routes::Symmetric => "symmetric",
            Routes::Asymmetric => "asymmetric",
        })
    }
}

impl core::str::FromStr for Routes {
    type Err = TopoError;
    /// `symmetric` or `asymmetric` (any case).
    fn from_str(s: &str) -> Result<Routes, TopoError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "symmetric" => Ok(Routes::Symmetric),
            "asymmetric" => Ok(Routes::Asymmetric),
            _ => Err(TopoError::Invalid(format!(
                "unknown route symmetry `{}` (symmetric, asymmetric)",
                s.trim()
            ))),
        }
    }
}

/// A lexicographic path cost: (primary metric, secondary metric, arcs).
/// The arc count makes a distilled route prefer one collapsed pipe to a
/// chain of them of the same length, and keeps every arc's cost positive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Cost(u64, u64, u64);

impl Add for Cost {
    type Output = Cost;
    fn add(self, o: Cost) -> Cost {
        Cost(
            self.0.saturating_add(o.0),
            self.1.saturating_add(o.1),
            self.2.saturating_add(o.2),
        )
    }
}

/// One directed arc of a path graph: a link direction or a pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Arc {
    pub from: usize,
    pub to: usize,
    pub delay_ns: u64,
    /// Target-topology links this arc stands for (1 for a link).
    pub hops: u32,
}

/// A directed graph of arcs for shortest paths, with the arcs usable now
/// and the nodes that may not be passed through.
#[derive(Clone, Debug)]
pub(crate) struct PathGraph {
    g: DiGraph<(), u32>,
    pub arcs: Vec<Arc>,
    pub up: Vec<bool>,
    pub no_transit: Vec<bool>,
    metric: Metric,
}

impl PathGraph {
    pub fn new(nodes: usize, arcs: Vec<Arc>, no_transit: Vec<bool>, metric: Metric) -> PathGraph {
        let mut g = DiGraph::with_capacity(nodes, arcs.len());
        for _ in 0..nodes {
            g.add_node(());
        }
        for (i, a) in arcs.iter().enumerate() {
            g.add_edge(NodeIndex::new(a.from), NodeIndex::new(a.to), i as u32);
        }
        let up = vec![true; arcs.len()];
        PathGraph {
            g,
            arcs,
            up,
            no_transit,
            metric,
        }
    }

    fn cost(&self, arc: u32) -> Cost {
        let a = &self.arcs[arc as usize];
        match self.metric {
            Metric::Delay => Cost(a.delay_ns, a.hops as u64, 1),
            Metric::Hops => Cost(a.hops as u64, a.delay_ns, 1),
        }
    }

    fn usable(&self, arc: u32, src: usize) -> bool {
        let a = &self.arcs[arc as usize];
        self.up[arc as usize] && (a.from == src || !self.no_transit[a.from])
    }

    /// The shortest-path tree from `src`: for each node, the arc that
    /// reaches it (`None` for `src` and unreachable nodes).
    pub fn tree(&self, src: usize) -> Vec<Option<u32>> {
        let n = self.g.node_count();
        let mut pred = vec![None; n];
        if src >= n {
            return pred;
        }
        let view = EdgeFiltered::from_fn(&self.g, |e: petgraph::graph::EdgeReference<'_, u32>| {
            self.usable(*e.weight(), src)
        });
        let dist: HashMap<NodeIndex, Cost> =
            dijkstra(&view, NodeIndex::new(src), None, |e| self.cost(*e.weight()));
        let mut d = vec![None; n];
        for (k, c) in &dist {
            d[k.index()] = Some(*c);
        }
        for v in 0..n {
            if v == src {
                continue;
            }
            let Some(dv) = d[v] else { continue };
            let mut best: Option<u32> = None;
            for e in self
                .g
                .edges_directed(NodeIndex::new(v), Direction::Incoming)
            {
                let arc = *e.weight();
                if !self.usable(arc, src) {
                    continue;
                }
                let u = e.source().index();
                if let Some(du) = d[u] {
                    if du + self.cost(arc) == dv && best.is_none_or(|b| arc < b) {
                        best = Some(arc);
                    }
                }
            }
            pred[v] = best;
        }
        pred
    }

    /// The shortest path from `src` to `dst` alone, as [`PathGraph::tree`]
    /// and [`PathGraph::path`] give it (the same distances, the same ties:
    /// into each node the lowest arc that is tight), computed on demand
    /// (ModelNet §2.2: "computed on the fly ... using Dijkstra's shortest
    /// path algorithm"): Dijkstra from `src` stops once no node left can
    /// be nearer than `dst`, and the path is read back from `dst`. `None`
    /// if unreachable, empty if `src == dst`.
    ///
    /// Why it is the tree's path: a node on the path, and every node with
    /// an arc tight into one, is nearer than `dst` (costs are positive),
    /// so it was settled, with its exact distance, before the search
    /// stopped. Nodes that may not be passed through (VNs) other than
    /// `dst` are never queued: no path goes on from them, and no arc from
    /// them is usable, so a star's hub does not queue its thousands of VNs.
    pub fn path_between(&self, src: usize, dst: usize) -> Option<Vec<u32>> {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let n = self.g.node_count();
        if src >= n || dst >= n {
            return None;
        }
        if src == dst {
            return Some(Vec::new());
        }
        let mut dist: Vec<Option<Cost>> = vec![None; n];
        let mut done = vec![false; n];
        let mut heap = BinaryHeap::new();
        dist[src] = Some(Cost::default());
        heap.push(Reverse((Cost::default(), src)));
        while let Some(Reverse((c, u))) = heap.pop() {
            if done[u] || dist[u] != Some(c) {
                continue;
            }
            if dist[dst].is_some_and(|d| c >= d) {
                break;
            }
            done[u] = true;
            for e in self
                .g
                .edges_directed(NodeIndex::new(u), Direction::Outgoing)
            {
                let arc = *e.weight();
                if !self.usable(arc, src) {
                    continue;
                }
                let v = e.target().index();
                if done[v] || (v != dst && self.no_transit[v]) {
                    continue;
                }
                let nc = c + self.cost(arc);
                if dist[v].is_none_or(|d| nc < d) {
                    dist[v] = Some(nc);
                    heap.push(Reverse((nc, v)));
                }
            }
        }
        let mut out = Vec::new();
        let mut v = dst;
        while v != src {
            let dv = dist[v]?;
            let mut best: Option<u32> = None;
            for e in self
                .g
                .edges_directed(NodeIndex::new(v), Direction::Incoming)
            {
                let arc = *e.weight();
                let u = e.source().index();
                if !done[u] || !self.usable(arc, src) {
                    continue;
                }
                if dist[u].is_some_and(|du| du + self.cost(arc) == dv)
                    && best.is_none_or(|b| arc < b)
                {
                    best = Some(arc);
                }
            }
            let arc = best?;
            out.push(arc);
            v = self.arcs[arc as usize].from;
            if out.len() > self.arcs.len() {
                return None;
            }
        }
        out.reverse();
        Some(out)
    }

    /// The route of the VN pair `src` → `dst` (node indices) as a
    /// [`RouteMatrix`] filled over this graph holds it: symmetric, the
    /// path from the lower of the two reversed onto the reverse pipes
    /// (pipes `2k` and `2k + 1` are one link's two directions) when `src`
    /// is the higher; asymmetric, `src`'s own. Empty if none.
    pub fn route(&self, routes: Routes, src: usize, dst: usize) -> Vec<u32> {
        if src == dst {
            return Vec::new();
        }
        match routes {
            Routes::Symmetric if src > dst => self
                .path_between(dst, src)
                .map(|r| r.iter().rev().map(|p| p ^ 1).collect())
                .unwrap_or_default(),
            _ => self.path_between(src, dst).unwrap_or_default(),
        }
    }

    /// The arcs from the tree's root to `dst`, in order (`None` if
    /// unreachable, empty if `dst` is the root).
    pub fn path(&self, pred: &[Option<u32>], src: usize, dst: usize) -> Option<Vec<u32>> {
        let mut out = Vec::new();
        let mut v = dst;
        while v != src {
            let arc = (*pred.get(v)?)?;
            out.push(arc);
            v = self.arcs[arc as usize].from;
            if out.len() > self.arcs.len() {
                return None;
            }
        }
        out.reverse();
        Some(out)
    }
}

/// ModelNet's routing matrix: for every ordered pair of VNs, the pipes a
/// packet crosses (§2.2). [`RouteMatrix::new`] holds every pair;
/// [`RouteMatrix::only`] only the pairs routed into it (a run that knows
/// its traffic routes a few pairs of a large topology, not all `n²`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RouteMatrix {
    vns: Vec<usize>,
    /// Topology node index → VN position.
    pos: HashMap<usize, usize>,
    /// `routes[i·n + j]`: route from VN `i` to VN `j` (empty: none).
    routes: Vec<Vec<u32>>,
    /// A partial matrix (`only`): the pairs held, by `i·n + j` (empty:
    /// none); `routes` is then empty.
    some: Option<BTreeMap<usize, Vec<u32>>>,
}

impl RouteMatrix {
    /// An empty matrix over these VNs (topology node indices), holding
    /// every pair.
    pub fn new(vns: Vec<usize>) -> RouteMatrix {
        let n = vns.len();
        let pos = vns.iter().enumerate().map(|(i, &v)| (v, i)).collect();
        RouteMatrix {
            vns,
            pos,
            routes: vec![Vec::new(); n * n],
            some: None,
        }
    }

    /// An empty matrix over these VNs holding no pair: only the pairs
    /// routed into it ([`crate::Distilled::route_pairs`]).
    pub fn only(vns: Vec<usize>) -> RouteMatrix {
        let pos = vns.iter().enumerate().map(|(i, &v)| (v, i)).collect();
        RouteMatrix {
            vns,
            pos,
            routes: Vec::new(),
            some: Some(BTreeMap::new()),
        }
    }

    /// True if it holds only some pairs ([`RouteMatrix::only`]).
    pub fn is_partial(&self) -> bool {
        self.some.is_some()
    }

    /// The VNs, as topology node indices.
    pub fn vns(&self) -> &[usize] {
        &self.vns
    }

    /// The position of VN `v` (a topology node index) among the VNs.
    pub fn position(&self, v: usize) -> Option<usize> {
        self.pos.get(&v).copied()
    }

    fn slot(&self, src: usize, dst: usize) -> Option<usize> {
        let i = *self.pos.get(&src)?;
        let j = *self.pos.get(&dst)?;
        Some(i * self.vns.len() + j)
    }

    /// The route in slot `k` (empty: none, or not held).
    fn at(&self, k: usize) -> &[u32] {
        match &self.some {
            None => self.routes.get(k).map_or(&[], Vec::as_slice),
            Some(m) => m.get(&k).map_or(&[], Vec::as_slice),
        }
    }

    fn put(&mut self, k: usize, r: Vec<u32>) {
        match &mut self.some {
            None => self.routes[k] = r,
            Some(m) => {
                m.insert(k, r);
            }
        }
    }

    /// The route from VN `src` to VN `dst` (topology node indices), or
    /// `None` if there is none (unreachable, `src == dst`, or a pair a
    /// partial matrix does not hold).
    pub fn route(&self, src: usize, dst: usize) -> Option<&[u32]> {
        let r = self.at(self.slot(src, dst)?);
        (!r.is_empty()).then_some(r)
    }

    /// True if the pair (topology node indices of VNs) is held: its route,
    /// or that it has none, is known.
    pub fn holds(&self, src: usize, dst: usize) -> bool {
        self.slot(src, dst)
            .is_some_and(|k| self.some.as_ref().is_none_or(|m| m.contains_key(&k)))
    }

    pub(crate) fn set(&mut self, src: usize, dst: usize, r: Vec<u32>) {
        if let Some(k) = self.slot(src, dst) {
            self.put(k, r);
        }
    }

    /// Every existing route as `(src, dst, pipes)`, in VN order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, usize, &[u32])> + '_ {
        self.held().filter(|(_, _, r)| !r.is_empty())
    }

    /// Every pair held as `(src, dst, pipes)` (empty: no route), in VN
    /// order: every ordered pair of VNs unless the matrix is partial.
    pub fn held(&self) -> Box<dyn Iterator<Item = (usize, usize, &[u32])> + '_> {
        let n = self.vns.len().max(1);
        let vns = &self.vns;
        match &self.some {
            None => Box::new(
                self.routes
                    .iter()
                    .enumerate()
                    .map(move |(k, r)| (vns[k / n], vns[k % n], r.as_slice())),
            ),
            Some(m) => Box::new(
                m.iter()
                    .map(move |(&k, r)| (vns[k / n], vns[k % n], r.as_slice())),
            ),
        }
    }

    /// Number of pairs held (`n²` unless partial).
    pub fn held_count(&self) -> usize {
        self.some.as_ref().map_or(self.routes.len(), BTreeMap::len)
    }

    /// Number of existing routes.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// True if there is no route at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fill every pair from shortest-path trees over `g`. Symmetric:
    /// pairs `(s, d)` with `s < d` are computed and mirrored onto the
    /// reverse pipes, for the pairs `i < j` for which `want(i, j)` holds.
    /// Asymmetric: every ordered pair `(i, j)` for which `want(i, j)`
    /// holds is computed from `i`'s own tree.
    pub(crate) fn fill(
        &mut self,
        g: &PathGraph,
        routes: Routes,
        want: &dyn Fn(usize, usize) -> bool,
    ) {
        let n = self.vns.len();
        if routes == Routes::Asymmetric {
            for i in 0..n {
                if !(0..n).any(|j| j != i && want(i, j)) {
                    continue;
                }
                let s = self.vns[i];
                let tree = g.tree(s);
                for j in (0..n).filter(|&j| j != i && want(i, j)) {
                    let d = self.vns[j];
                    self.put(i * n + j, g.path(&tree, s, d).unwrap_or_default());
                }
            }
            return;
        }
        for i in 0..n {
            if !(i + 1..n).any(|j| want(i, j)) {
                continue;
            }
            let s = self.vns[i];
            let tree = g.tree(s);
            for j in i + 1..n {
                if !want(i, j) {
                    continue;
                }
                self.fill_pair(g, &tree, i, j);
            }
        }
    }

    /// Route the symmetric pair of VN positions `i < j` from `i`'s tree,
    /// and its mirror.
    fn fill_pair(&mut self, g: &PathGraph, tree: &[Option<u32>], i: usize, j: usize) {
        let n = self.vns.len();
        let fwd = g.path(tree, self.vns[i], self.vns[j]).unwrap_or_default();
        let rev: Vec<u32> = fwd.iter().rev().map(|p| p ^ 1).collect();
        self.put(i * n + j, fwd);
        self.put(j * n + i, rev);
    }

    /// Route the ordered pairs `pairs` (topology node indices of VNs) not
    /// held yet, exactly as [`RouteMatrix::fill`] routes them (the same
    /// trees, the same ties): one shortest-path tree per root, the root
    /// of a symmetric pair its lower VN (both directions are held
    /// after), of an asymmetric pair its source. A VN to itself is held
    /// with no route; pairs naming a node that is no VN are skipped.
    pub(crate) fn route_pairs(&mut self, g: &PathGraph, routes: Routes, pairs: &[(usize, usize)]) {
        let n = self.vns.len();
        // Root → the other ends, each once, in order.
        let mut by_root: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        for &(s, d) in pairs {
            let (Some(i), Some(j)) = (self.position(s), self.position(d)) else {
                continue;
            };
            if self.holds(s, d) {
                continue;
            }
            if i == j {
                // Held, with no route (a VN does not route to itself).
                self.put(i * n + j, Vec::new());
                continue;
            }
            let (root, other) = match routes {
                Routes::Symmetric => (i.min(j), i.max(j)),
                Routes::Asymmetric => (i, j),
            };
            by_root.entry(root).or_default().insert(other);
        }
        for (i, others) in by_root {
            let s = self.vns[i];
            if others.len() <= FEW_PAIRS {
                // A few pairs of this root (a route cache's misses, the
                // pairs a fault touched): each by a search that stops at
                // its destination rather than a whole tree; the same
                // routes ([`PathGraph::path_between`]).
                for j in others {
                    let r = g.path_between(s, self.vns[j]).unwrap_or_default();
                    match routes {
                        Routes::Symmetric => {
                            let rev: Vec<u32> = r.iter().rev().map(|p| p ^ 1).collect();
                            self.put(i * n + j, r);
                            self.put(j * n + i, rev);
                        }
                        Routes::Asymmetric => self.put(i * n + j, r),
                    }
                }
                continue;
            }
            let tree = g.tree(s);
            for j in others {
                match routes {
                    Routes::Symmetric => self.fill_pair(g, &tree, i, j),
                    Routes::Asymmetric => {
                        let r = g.path(&tree, s, self.vns[j]).unwrap_or_default();
                        self.put(i * n + j, r);
                    }
                }
            }
        }
    }

    pub(crate) fn raw(&self, i: usize, j: usize) -> &[u32] {
        self.at(i * self.vns.len() + j)
    }

    /// Every pair held, as `(src, dst)` topology node indices, in VN
    /// order.
    pub fn pairs(&self) -> Vec<(usize, usize)> {
        self.held().map(|(s, d, _)| (s, d)).collect()
    }

    /// Route the pairs `pairs` again over `g` even if held (a partial
    /// matrix after a change of its graph), as [`RouteMatrix::route_pairs`]
    /// routes them.
    pub(crate) fn reroute(&mut self, g: &PathGraph, routes: Routes, pairs: &[(usize, usize)]) {
        if let Some(m) = &mut self.some {
            let n = self.vns.len();
            for &(s, d) in pairs {
                if let (Some(&i), Some(&j)) = (self.pos.get(&s), self.pos.get(&d)) {
                    m.remove(&(i * n + j));
                }
            }
        }
        self.route_pairs(g, routes, pairs);
    }
}

/// At most this many pairs of one root are routed each by its own search
/// ([`PathGraph::path_between`]); more, by the root's whole tree.
const FEW_PAIRS: usize = 4;

/// Which elements of the target topology are up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Faults {
    /// Per link index.
    pub link_up: Vec<bool>,
    /// Per node index.
    pub node_up: Vec<bool>,
}

impl Faults {
    /// Everything up.
    pub fn none(topo: &Topology) -> Faults {
        Faults {
            link_up: vec![true; topo.links.len()],
            node_up: vec![true; topo.nodes.len()],
        }
    }

    /// True if link `i` and both its ends are up.
    pub fn usable(&self, topo: &Topology, i: usize) -> bool {
        let l = &topo.links[i];
        self.link_up.get(i) != Some(&false)
            && self.node_up.get(l.a) != Some(&false)
            && self.node_up.get(l.b) != Some(&false)
    }
}
