//! Routing (ModelNet §2.2, §4.3): shortest paths between all pairs of VNs
//! over the distilled pipe graph, each route an ordered list of pipe
//! indices that a packet crosses by reference.
//!
//! * [`Metric`]: routes minimise total delay (default) or hop count; ties
//!   are broken by the other measure (of the *target* links a distilled
//!   pipe stands for), then by fewer pipes, then by the lowest pipe index, so routes are
//!   deterministic and distillation never changes which path is taken.
//! * Routes never pass *through* a client (a VN is an end, not a router).
//! * [`Routes`]: by default ([`Routes::Symmetric`]) routes are symmetric:
//!   the route from `d` to `s` is the route from `s` to `d` reversed, over
//!   the reverse pipes (pipes come in pairs `2k`, `2k+1`, one per
//!   direction); it is computed from the lower VN index. With
//!   [`Routes::Asymmetric`] ("routes are symmetric unless asked
//!   otherwise") each direction is computed on its own: the route from `d`
//!   to `s` is the shortest path by the same metric from `d`'s own
//!   shortest-path tree over the directed pipe graph. Both directions of a
//!   link (and both pipes of a collapsed pair) always have the same
//!   attributes, and faults and `set_link` change both, so the two
//!   directions' costs are equal and asymmetry shows only in ties: the
//!   tree breaks them at each node by the lowest index of the arc into it,
//!   so a route's tie is settled walking back from its *destination*,
//!   while the mirror settles it walking back from its source. On
//!   equal-cost paths the two directions of a pair may then cross
//!   different pipes, each still a shortest path. Faults re-route each
//!   direction on its own too.
//! * [`RouteMatrix`]: ModelNet's routing matrix, all pairs precomputed
//!   (O(n²) space; "scales to 10,000 VNs").
//! * [`RouteCache`]: §2.2's alternative for larger networks: a bounded
//!   cache of routes, a miss computed on the fly with Dijkstra.
//!   [`Router`] puts both behind one `route(src, dst)` call.
//! * [`Network`]: fault injection (§4.3, "for node or link failures, the
//!   configuration script also updates the system routing tables"):
//!   `link_down`, `link_up`, `node_down`, `node_up`, each followed by a
//!   recomputation that reports which pipes and routes changed. Under
//!   hop-by-hop distillation a failure recomputes only the routes that
//!   crossed the failed element; other cases recompute all pairs, as
//!   ModelNet did.
//!
//! Shortest paths are petgraph's Dijkstra over a filtered view of the
//! graph; the shortest-path tree is then read back from the exact integer
//! distances.
//!
//! Dependencies point one way: `route` → [`mod@crate::distill`] →
//! [`crate::paths`] (shortest paths, the routing matrix, faults) →
//! [`crate::model`]; the path types are re-exported here.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::distill::{distill_unrouted, distill_with_routes, pipe_graph, Distilled, Mode};
use crate::model::{Role, Topology};
use crate::paths::PathGraph;
pub use crate::paths::{Faults, Metric, RouteMatrix, Routes};
use crate::TopoError;

/// A bounded cache of routes computed on demand with Dijkstra (§2.2: "a
/// hash-based cache of routes for active flows ... In the rare case of a
/// cache miss, the route may be ... computed on the fly from an internal
/// representation of the topology using Dijkstra's shortest path
/// algorithm"). Eviction is first-in first-out.
#[derive(Clone, Debug)]
pub struct RouteCache {
    graph: PathGraph,
    routes: Routes,
    capacity: usize,
    map: HashMap<(usize, usize), Vec<u32>>,
    order: VecDeque<(usize, usize)>,
    /// Routes computed because they were not cached.
    pub misses: u64,
    /// Routes answered from the cache.
    pub hits: u64,
}

impl RouteCache {
    /// A cache over the pipes of `d` (of topology `topo`), holding at most
    /// `capacity` routes, by `d`'s metric and [`Routes`] choice.
    pub fn new(topo: &Topology, d: &Distilled, capacity: usize) -> RouteCache {
        let roles: Vec<Role> = topo.nodes.iter().map(|n| n.role).collect();
        RouteCache {
            graph: pipe_graph(topo.nodes.len(), d, &roles, d.metric),
            routes: d.routing,
            capacity: capacity.max(2),
            map: HashMap::new(),
            order: VecDeque::new(),
            misses: 0,
            hits: 0,
        }
    }

    /// The route from `src` to `dst` (topology node indices of VNs).
    pub fn route(&mut self, src: usize, dst: usize) -> Option<&[u32]> {
        if src == dst
            || self.graph.no_transit.get(src) != Some(&true)
            || self.graph.no_transit.get(dst) != Some(&true)
        {
            return None;
        }
        if self.map.contains_key(&(src, dst)) {
            self.hits += 1;
        } else if self.routes == Routes::Asymmetric {
            self.misses += 1;
            // Each direction from its own source, as the matrix.
            let r = self.graph.path_between(src, dst).unwrap_or_default();
            while self.map.len() + 1 > self.capacity {
                match self.order.pop_front() {
                    Some(k) => {
                        self.map.remove(&k);
                    }
                    None => break,
                }
            }
            self.map.insert((src, dst), r);
            self.order.push_back((src, dst));
        } else {
            self.misses += 1;
            // Compute from the smaller end so both directions agree with
            // the routing matrix's choice.
            let (a, b) = (src.min(dst), src.max(dst));
            let fwd = self.graph.path_between(a, b).unwrap_or_default();
            let rev: Vec<u32> = fwd.iter().rev().map(|p| p ^ 1).collect();
            while self.map.len() + 2 > self.capacity {
                match self.order.pop_front() {
                    Some(k) => {
                        self.map.remove(&k);
                    }
                    None => break,
                }
            }
            self.map.insert((a, b), fwd);
            self.map.insert((b, a), rev);
            self.order.push_back((a, b));
            self.order.push_back((b, a));
        }
        let r = self.map.get(&(src, dst))?;
        (!r.is_empty()).then_some(r.as_slice())
    }

    /// Routes held now.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True if nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// Routes by (source, destination) VN position (empty: no route).
type PairRoutes = HashMap<(u32, u32), Box<[u32]>>;

/// One held pair and its route, by VN position.
pub type HeldRoute = ((u32, u32), Box<[u32]>);

/// The route cache of a running topology (ModelNet §2.2: "a hash-based
/// cache of routes for active flows ... In the rare case of a cache
/// miss, the route may be ... computed on the fly from an internal
/// representation of the topology using Dijkstra's shortest path
/// algorithm"), shared by the threads that forward packets: made by
/// [`Network::path_cache`] over the pipes as they are at one moment, it
/// answers a VN pair (by port: VN position) with the route the whole
/// matrix would hold (`PathGraph::route`'s search from one VN to
/// another), computing it on the first request and keeping it. It holds
/// only the pairs asked for (and those its network held when it was
/// made): its memory grows with the pairs in use.
///
/// A change of the network (a fault, `link set`) makes a new cache; the
/// old one's pairs are first taken into the network ([`Network::learn`])
/// so that they are routed anew there and the new cache starts with
/// them.
#[derive(Debug)]
pub struct PathCache {
    graph: PathGraph,
    routing: Routes,
    /// VN position → topology node index.
    vns: Vec<usize>,
    generation: u64,
    /// Routes by (source, destination) VN position (empty: no route).
    held: Mutex<PairRoutes>,
    computed: AtomicU64,
}

impl PathCache {
    /// The route from VN position `src` to VN position `dst` as
    /// distilled pipe indices (empty: none, or not VNs). A pair not held
    /// is computed now, outside the lock (with symmetric routes its
    /// reverse is held too).
    pub fn route(&self, src: usize, dst: usize) -> Box<[u32]> {
        let key = (src as u32, dst as u32);
        if let Some(r) = self.lock().get(&key) {
            return r.clone();
        }
        let (Some(&s), Some(&t)) = (self.vns.get(src), self.vns.get(dst)) else {
            return Box::default();
        };
        let r: Box<[u32]> = self.graph.route(self.routing, s, t).into();
        self.computed.fetch_add(1, Ordering::Relaxed);
        let mut held = self.lock();
        if self.routing == Routes::Symmetric {
            let rev: Box<[u32]> = r.iter().rev().map(|p| p ^ 1).collect();
            held.entry((key.1, key.0)).or_insert(rev);
        }
        held.entry(key).or_insert(r).clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PairRoutes> {
        // A thread that panicked holding it left a map, not a torn one.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Pairs held now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True if no pair is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Routes computed on demand so far (misses).
    pub fn computed(&self) -> u64 {
        self.computed.load(Ordering::Relaxed)
    }

    /// The pairs held and their routes, by VN position.
    pub fn snapshot(&self) -> Vec<HeldRoute> {
        let held = self.lock();
        let mut v: Vec<HeldRoute> = held.iter().map(|(&k, r)| (k, r.clone())).collect();
        v.sort_unstable_by_key(|(k, _)| *k);
        v
    }
}

/// Routes behind one API: a precomputed matrix or an on-demand cache.
#[derive(Clone, Debug)]
pub enum Router {
    /// All pairs precomputed.
    Matrix(RouteMatrix),
    /// Computed on demand, bounded.
    Cache(RouteCache),
}

impl Router {
    /// The route from VN `src` to VN `dst` (topology node indices).
    pub fn route(&mut self, src: usize, dst: usize) -> Option<&[u32]> {
        match self {
            Router::Matrix(m) => m.route(src, dst),
            Router::Cache(c) => c.route(src, dst),
        }
    }
}

/// What a recomputation changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Change {
    /// Pipes whose attributes or state (up/down) changed.
    pub pipes: Vec<u32>,
    /// VN pairs `(src, dst)` whose route changed.
    pub routes: Vec<(usize, usize)>,
    /// VN pairs recomputed (all pairs unless only affected ones were).
    pub recomputed: usize,
}

/// A distilled topology under fault injection (§4.3). The set of pipes
/// never changes (so an engine built from it keeps its pipes); faults turn
/// pipes down, change the attributes of collapsed pipes, and reroute.
#[derive(Clone, Debug)]
pub struct Network {
    topo: Topology,
    mode: Mode,
    metric: Metric,
    routes: Routes,
    faults: Faults,
    distilled: Distilled,
    /// Bumped by every change: a [`PathCache`] of another generation
    /// routes over other pipes.
    generation: u64,
}

impl Network {
    /// Distil `topo` with `mode`, routes by `metric` (symmetric).
    pub fn new(topo: Topology, mode: Mode, metric: Metric) -> Result<Network, TopoError> {
        Network::with_routes(topo, mode, metric, Routes::Symmetric)
    }

    /// Distil `topo` with `mode`, routes by `metric`, symmetric or not
    /// (`routes`); every re-route after a fault or change keeps both.
    pub fn with_routes(
        topo: Topology,
        mode: Mode,
        metric: Metric,
        routes: Routes,
    ) -> Result<Network, TopoError> {
        Network::distilled_by(topo, mode, metric, routes, distill_with_routes)
    }

    /// [`Network::with_routes`] with routes computed on demand (ModelNet
    /// §2.2's route cache): the distilled pipes, and the routes of no VN
    /// pair until they are asked for ([`Network::route_pairs`], or a
    /// [`PathCache`] whose routes [`Network::learn`] takes in), so memory
    /// grows with the VNs and the pairs in use, not with their square.
    /// Faults and changes re-route the pairs held, and only those; the
    /// routes are those the whole matrix would hold. End-to-end
    /// distillation still holds every pair (its routes are its pipes,
    /// one per pair, and are refused beyond
    /// [`crate::distill::MAX_PAIRS`]).
    pub fn on_demand(
        topo: Topology,
        mode: Mode,
        metric: Metric,
        routes: Routes,
    ) -> Result<Network, TopoError> {
        Network::distilled_by(topo, mode, metric, routes, distill_unrouted)
    }

    /// A network without faults, distilled by `distill` (with every
    /// route, or none).
    fn distilled_by(
        topo: Topology,
        mode: Mode,
        metric: Metric,
        routes: Routes,
        distill: fn(&Topology, Mode, Metric, Routes, &Faults) -> Result<Distilled, TopoError>,
    ) -> Result<Network, TopoError> {
        let faults = Faults::none(&topo);
        let distilled = distill(&topo, mode, metric, routes, &faults)?;
        Ok(Network {
            topo,
            mode,
            metric,
            routes,
            faults,
            distilled,
            generation: 0,
        })
    }

    /// True if routes are computed on demand ([`Network::on_demand`],
    /// a mode whose routes are not all held).
    pub fn is_on_demand(&self) -> bool {
        self.distilled.routes.is_partial()
    }

    /// Route the ordered VN pairs `pairs` (topology node indices) not
    /// held yet (on demand), as the whole matrix routes them.
    pub fn route_pairs(&mut self, pairs: &[(usize, usize)]) {
        self.distilled.route_pairs(&self.topo, pairs);
    }

    /// A route cache over the pipes as they are now, for the threads that
    /// forward packets: it holds the routes this network holds (on
    /// demand; a whole matrix is not copied) and computes any other pair
    /// the first time it is asked ([`PathCache::route`]).
    pub fn path_cache(&self) -> PathCache {
        let d = &self.distilled;
        let roles: Vec<Role> = self.topo.nodes.iter().map(|n| n.role).collect();
        let graph = pipe_graph(self.topo.nodes.len(), d, &roles, d.metric);
        let vns = d.routes.vns().to_vec();
        let mut held = HashMap::new();
        if d.routes.is_partial() {
            for (s, t, r) in d.routes.held() {
                if let (Some(i), Some(j)) = (d.routes.position(s), d.routes.position(t)) {
                    held.insert((i as u32, j as u32), r.into());
                }
            }
        }
        PathCache {
            graph,
            routing: d.routing,
            vns,
            generation: self.generation,
            held: Mutex::new(held),
            computed: AtomicU64::new(0),
        }
    }

    /// Take in the routes `cache` computed that this network does not
    /// hold yet (the pairs that started to carry traffic), if it routes
    /// over the pipes as they are now (made by [`Network::path_cache`]
    /// since the last change); returns how many.
    pub fn learn(&mut self, cache: &PathCache) -> usize {
        if cache.generation != self.generation || !self.distilled.routes.is_partial() {
            return 0;
        }
        let routes = &mut self.distilled.routes;
        let vns = routes.vns().to_vec();
        let mut taken = 0;
        for ((i, j), r) in cache.snapshot() {
            let (Some(&s), Some(&t)) = (vns.get(i as usize), vns.get(j as usize)) else {
                continue;
            };
            if !routes.holds(s, t) {
                routes.set(s, t, r.to_vec());
                taken += 1;
            }
        }
        taken
    }

    /// The VN pairs whose route is held: every ordered pair with a whole
    /// matrix, the pairs asked for on demand.
    pub fn held_routes(&self) -> usize {
        self.distilled.routes.held_count()
    }

    /// The distilled topology with the routes of a sample of VN pairs, to
    /// weigh a partition of its pipes by route usage
    /// ([`crate::partition_balanced`]) without the whole matrix: every
    /// ordered pair if there are at most `max_pairs` (or the matrix is
    /// whole already), else the routes of evenly spaced VNs, each to
    /// every VN above it (with symmetric routes, both directions: one
    /// shortest-path tree per sampled VN), about `max_pairs` routes from
    /// `max_pairs / n` VNs (at least one, VN 0).
    pub fn sample_routes(&self, max_pairs: usize) -> Distilled {
        let mut d = self.distilled.clone();
        if !d.routes.is_partial() {
            return d;
        }
        let vns = d.routes.vns().to_vec();
        let n = vns.len();
        let all = (n as u64).saturating_mul(n.saturating_sub(1) as u64) <= max_pairs as u64;
        let roots: Vec<usize> = if all {
            (0..n).collect()
        } else {
            let k = (max_pairs / n.max(1)).clamp(1, n.max(1));
            (0..k).map(|i| i * n / k).collect()
        };
        let mut pairs = Vec::new();
        for &r in &roots {
            let others: Box<dyn Iterator<Item = usize>> = match (all, self.routes) {
                (true, _) | (false, Routes::Asymmetric) => {
                    Box::new((0..n).filter(move |&j| j != r))
                }
                (false, Routes::Symmetric) => Box::new(r + 1..n),
            };
            pairs.extend(others.map(|j| (vns[r], vns[j])));
        }
        d.route_pairs(&self.topo, &pairs);
        d
    }

    /// The current distilled topology and routes.
    pub fn distilled(&self) -> &Distilled {
        &self.distilled
    }

    /// The target topology.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// The current faults.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    fn node(&self, id: u64) -> Result<usize, TopoError> {
        self.topo.node_by_id(id).ok_or(TopoError::NoSuchNode(id))
    }

    fn links_between(&self, a: u64, b: u64) -> Result<Vec<usize>, TopoError> {
        let (x, y) = (self.node(a)?, self.node(b)?);
        let ls: Vec<usize> = (0..self.topo.links.len())
            .filter(|&i| {
                let l = &self.topo.links[i];
                (l.a == x && l.b == y) || (l.a == y && l.b == x)
            })
            .collect();
        if ls.is_empty() {
            return Err(TopoError::NoSuchLink(a, b));
        }
        Ok(ls)
    }

    /// The distilled pipes (indices) that stand for the link(s) between
    /// node ids `a` and `b` alone, both directions: the pipes joining
    /// the two nodes. A link collapsed into a longer pipe by
    /// distillation has none of its own: an error naming it.
    pub fn link_pipes(&self, a: u64, b: u64) -> Result<Vec<u32>, TopoError> {
        self.links_between(a, b)?;
        let (x, y) = (self.node(a)?, self.node(b)?);
        let pipes: Vec<u32> = (0..self.distilled.pipes.len())
            .filter(|&i| {
                let p = &self.distilled.pipes[i];
                p.hops == 1 && ((p.from == x && p.to == y) || (p.from == y && p.to == x))
            })
            .map(|i| i as u32)
            .collect();
        if pipes.is_empty() {
            return Err(TopoError::Invalid(format!(
                "link {a} {b} has no pipe of its own: distillation collapsed it into a longer path (use hop-by-hop distillation to black-hole it)"
            )));
        }
        Ok(pipes)
    }

    /// Fail the link(s) between node ids `a` and `b`, and reroute.
    pub fn link_down(&mut self, a: u64, b: u64) -> Result<Change, TopoError> {
        for i in self.links_between(a, b)? {
            self.faults.link_up[i] = false;
        }
        self.recompute(true)
    }

    /// Restore the link(s) between node ids `a` and `b`, and reroute.
    pub fn link_up(&mut self, a: u64, b: u64) -> Result<Change, TopoError> {
        for i in self.links_between(a, b)? {
            self.faults.link_up[i] = true;
        }
        self.recompute(false)
    }

    /// Change the attributes of the link(s) between node ids `a` and `b`
    /// with `f`, and recompute pipes and routes (a collapsed pipe takes
    /// the new attributes of the links it stands for; routes by delay may
    /// move).
    pub fn set_link(
        &mut self,
        a: u64,
        b: u64,
        f: impl Fn(&mut crate::model::Link),
    ) -> Result<Change, TopoError> {
        for i in self.links_between(a, b)? {
            f(&mut self.topo.links[i]);
        }
        self.topo.validate()?;
        self.recompute(false)
    }

    /// Give `set` (link attributes and pipe words) to the link(s) between
    /// node ids `a` and `b`, and recompute pipes and routes. Each link's
    /// pipe is built whole first ([`crate::attrs::link_pipe`], the files
    /// its words name read with `load` unless read before, and kept in
    /// the topology): on an error nothing changes.
    pub fn set_link_attrs(
        &mut self,
        a: u64,
        b: u64,
        set: &crate::linkset::LinkSet,
        load: Option<crate::attrs::Loader<'_>>,
    ) -> Result<Change, TopoError> {
        let links = self.links_between(a, b)?;
        let mut reader = crate::attrs::FileReader::new(&self.topo.files, load);
        let mut new = Vec::with_capacity(links.len());
        for i in links {
            let mut l = self.topo.links[i].clone();
            set.apply(&mut l);
            crate::attrs::link_pipe(l.bw, l.delay, l.loss, l.queue, &l.words, &mut reader)
                .map_err(|e| TopoError::Invalid(format!("invalid {}: {}", e.param, e.reason)))?;
            new.push((i, l));
        }
        let read = reader.read;
        self.topo.files.extend(&read);
        for (i, l) in new {
            self.topo.links[i] = l;
        }
        self.topo.validate()?;
        self.recompute(false)
    }

    /// Fail node `id` (all its links), and reroute.
    pub fn node_down(&mut self, id: u64) -> Result<Change, TopoError> {
        let n = self.node(id)?;
        self.faults.node_up[n] = false;
        self.recompute(true)
    }

    /// Restore node `id`, and reroute.
    pub fn node_up(&mut self, id: u64) -> Result<Change, TopoError> {
        let n = self.node(id)?;
        self.faults.node_up[n] = true;
        self.recompute(false)
    }

    /// Recompute pipes and routes. After a failure under hop-by-hop, only
    /// routes that crossed a pipe now down can change (removing arcs never
    /// shortens a path, and ties are broken by pipe index), so only those
    /// are recomputed.
    fn recompute(&mut self, only_failures: bool) -> Result<Change, TopoError> {
        self.generation += 1;
        if self.distilled.routes.is_partial() {
            return self.recompute_held(only_failures);
        }
        let old = &self.distilled;
        let n = old.routes.vns().len();
        if only_failures && self.mode == Mode::HopByHop {
            let mut d = old.clone();
            for (k, p) in d.pipes.iter_mut().enumerate() {
                let link = k / 2;
                p.up = self.faults.usable(&self.topo, link);
            }
            let pipes: Vec<u32> = (0..d.pipes.len() as u32)
                .filter(|&k| d.pipes[k as usize].up != old.pipes[k as usize].up)
                .collect();
            let down: Vec<bool> = d.pipes.iter().map(|p| !p.up).collect();
            let affected = |i: usize, j: usize| {
                let r = old.routes.raw(i, j);
                r.is_empty() || r.iter().any(|&p| down[p as usize])
            };
            let mut recomputed = 0;
            for i in 0..n {
                for j in 0..n {
                    recomputed += match self.routes {
                        Routes::Symmetric if i < j && affected(i, j) => 2,
                        Routes::Asymmetric if i != j && affected(i, j) => 1,
                        _ => 0,
                    };
                }
            }
            let roles: Vec<Role> = self.topo.nodes.iter().map(|x| x.role).collect();
            let g = pipe_graph(self.topo.nodes.len(), &d, &roles, self.metric);
            d.routes.fill(&g, self.routes, &affected);
            let change = diff(old, &d, pipes, recomputed);
            self.distilled = d;
            return Ok(change);
        }
        let d = distill_with_routes(
            &self.topo,
            self.mode,
            self.metric,
            self.routes,
            &self.faults,
        )?;
        let pipes: Vec<u32> = (0..d.pipes.len() as u32)
            .filter(|&k| d.pipes[k as usize] != old.pipes[k as usize])
            .collect();
        let change = diff(old, &d, pipes, n * n.saturating_sub(1));
        self.distilled = d;
        Ok(change)
    }
}

impl Network {
    /// [`Network::recompute`] of routes on demand: only the pairs held
    /// are routed again. After a failure under hop-by-hop, only those
    /// that crossed a pipe now down (or had no route); otherwise the
    /// pipes are distilled again and every pair held is routed anew.
    fn recompute_held(&mut self, only_failures: bool) -> Result<Change, TopoError> {
        let old = &self.distilled;
        let held = old.routes.pairs();
        let roles: Vec<Role> = self.topo.nodes.iter().map(|x| x.role).collect();
        if only_failures && self.mode == Mode::HopByHop {
            let mut d = old.clone();
            for (k, p) in d.pipes.iter_mut().enumerate() {
                p.up = self.faults.usable(&self.topo, k / 2);
            }
            let pipes: Vec<u32> = (0..d.pipes.len() as u32)
                .filter(|&k| d.pipes[k as usize].up != old.pipes[k as usize].up)
                .collect();
            let affected: Vec<(usize, usize)> = held
                .iter()
                .copied()
                .filter(|&(s, t)| {
                    s != t
                        && old
                            .routes
                            .route(s, t)
                            .is_none_or(|r| r.iter().any(|&p| !d.pipes[p as usize].up))
                })
                .collect();
            let g = pipe_graph(self.topo.nodes.len(), &d, &roles, self.metric);
            d.routes.reroute(&g, self.routes, &affected);
            let change = diff_held(old, &d, &held, pipes, affected.len());
            self.distilled = d;
            return Ok(change);
        }
        let mut d = distill_unrouted(
            &self.topo,
            self.mode,
            self.metric,
            self.routes,
            &self.faults,
        )?;
        d.route_pairs(&self.topo, &held);
        let pipes: Vec<u32> = (0..d.pipes.len() as u32)
            .filter(|&k| d.pipes[k as usize] != old.pipes[k as usize])
            .collect();
        let recomputed = held.iter().filter(|&&(s, t)| s != t).count();
        let change = diff_held(old, &d, &held, pipes, recomputed);
        self.distilled = d;
        Ok(change)
    }
}

/// What changed between `old` and `new` for the pairs `held`.
fn diff_held(
    old: &Distilled,
    new: &Distilled,
    held: &[(usize, usize)],
    pipes: Vec<u32>,
    recomputed: usize,
) -> Change {
    let routes = held
        .iter()
        .copied()
        .filter(|&(s, t)| old.routes.route(s, t) != new.routes.route(s, t))
        .collect();
    Change {
        pipes,
        routes,
        recomputed,
    }
}

fn diff(old: &Distilled, new: &Distilled, pipes: Vec<u32>, recomputed: usize) -> Change {
    let vns = old.routes.vns();
    let n = vns.len();
    let mut routes = Vec::new();
    for i in 0..n {
        for j in 0..n {
            if old.routes.raw(i, j) != new.routes.raw(i, j) {
                routes.push((vns[i], vns[j]));
            }
        }
    }
    Change {
        pipes,
        routes,
        recomputed,
    }
}
