//! Topology generators (the synthetic sources of ModelNet's Create phase,
//! §2.1): ring, star, dumbbell, tree, a GT-ITM-style transit-stub graph and
//! Waxman's random graph. Every generator returns a connected topology with
//! exactly the requested counts, and links get the attributes of their
//! class ([`RoleAttrs`]: client–stub, stub–stub, stub–transit,
//! transit–transit), and any pipe words of the language by class after
//! ([`give_words`]). Random generators draw from a
//! [`pipelab_engine::rng`] generator seeded by the caller, so the same
//! parameters give the same graph.

use pipelab_engine::rng::rng_from_seed;
use pipelab_engine::Duration;
use rand::Rng;

use crate::model::{LinkClass, PipeWords, Role, RoleAttrs, Topology};
use crate::TopoError;

/// Gives `words` (pipe words of the language: `codel`, `jitter`, ...) to
/// every link of `class`, each replacing the same word of the link, and
/// checks each such link's pipe whole, as a topology file's link is
/// checked (the files words name are not read here: a generated file's
/// links read them, relative to its directory, when it is read).
pub fn give_words(t: &mut Topology, class: LinkClass, words: &PipeWords) -> Result<(), TopoError> {
    if *words == PipeWords::default() {
        return Ok(());
    }
    for i in 0..t.links.len() {
        let (a, b) = (t.links[i].a, t.links[i].b);
        if LinkClass::of(t.nodes[a].role, t.nodes[b].role) != class {
            continue;
        }
        let l = &mut t.links[i];
        l.words.overlay(words);
        crate::lower::pipe_spec(l.bw, l.delay, l.loss, l.queue, &l.words)
            .check()
            .map_err(|e| TopoError::Invalid(format!("invalid {}: {}", e.param, e.reason)))?;
    }
    Ok(())
}

fn need(cond: bool, what: &str) -> Result<(), TopoError> {
    if cond {
        Ok(())
    } else {
        Err(TopoError::Invalid(what.into()))
    }
}

/// Attach `n` clients to router `r`.
fn add_clients(t: &mut Topology, r: usize, n: usize, attrs: &RoleAttrs) {
    for _ in 0..n {
        let c = t.nodes.len();
        t.add_node(Role::Client, format!("vn{}", t.vns().len()));
        t.add_link_by_role(c, r, attrs);
    }
}

/// A ring of `routers` stub routers (ring links are stub–stub), each with
/// `clients` VNs on client–stub links. ModelNet's §4.1 example is
/// `ring(20, 20, ..)` with 20 Mb/s ring links and 2 Mb/s access links.
/// Node order: router 0, its clients, router 1, its clients, ...
pub fn ring(routers: usize, clients: usize, attrs: &RoleAttrs) -> Result<Topology, TopoError> {
    need(routers >= 1, "a ring needs at least one router")?;
    let mut t = Topology::new();
    let mut rs = Vec::with_capacity(routers);
    for i in 0..routers {
        let r = t.add_node(Role::Stub, format!("r{i}"));
        rs.push(r);
        add_clients(&mut t, r, clients, attrs);
    }
    // Two routers share one link; three or more close the ring.
    let ring_links = match routers {
        1 => 0,
        2 => 1,
        n => n,
    };
    for i in 0..ring_links {
        t.add_link_by_role(rs[i], rs[(i + 1) % routers], attrs);
    }
    Ok(t)
}

/// One stub router with `clients` VNs.
pub fn star(clients: usize, attrs: &RoleAttrs) -> Result<Topology, TopoError> {
    let mut t = Topology::new();
    let hub = t.add_node(Role::Stub, "hub");
    add_clients(&mut t, hub, clients, attrs);
    Ok(t)
}

/// Two stub routers joined by one stub–stub link (the bottleneck), with
/// `left` VNs on the first and `right` on the second.
pub fn dumbbell(left: usize, right: usize, attrs: &RoleAttrs) -> Result<Topology, TopoError> {
    let mut t = Topology::new();
    let a = t.add_node(Role::Stub, "left");
    add_clients(&mut t, a, left, attrs);
    let b = t.add_node(Role::Stub, "right");
    add_clients(&mut t, b, right, attrs);
    t.add_link_by_role(a, b, attrs);
    Ok(t)
}

/// A tree of stub routers `depth` levels below the root, each inner router
/// with `fanout` children; every leaf router has `clients` VNs. Depth 0 is
/// a single router.
pub fn tree(
    depth: usize,
    fanout: usize,
    clients: usize,
    attrs: &RoleAttrs,
) -> Result<Topology, TopoError> {
    need(
        fanout >= 1 || depth == 0,
        "a tree needs a fanout of at least 1",
    )?;
    need(
        (fanout.max(2) as f64).powi(depth as i32) <= 1e6,
        "a tree of more than a million leaves",
    )?;
    let mut t = Topology::new();
    let root = t.add_node(Role::Stub, "t0");
    let mut level = vec![root];
    for _ in 0..depth {
        let mut next = Vec::with_capacity(level.len() * fanout);
        for &p in &level {
            for _ in 0..fanout {
                let c = t.add_node(Role::Stub, format!("t{}", t.nodes.len()));
                t.add_link_by_role(p, c, attrs);
                next.push(c);
            }
        }
        level = next;
    }
    for &leaf in &level {
        add_clients(&mut t, leaf, clients, attrs);
    }
    Ok(t)
}

/// Parameters of a GT-ITM-style transit-stub topology.
#[derive(Clone, Debug, PartialEq)]
pub struct TransitStub {
    /// Transit routers (one transit domain: a ring plus random chords).
    pub transit: usize,
    /// Stub routers attached to each transit router.
    pub stubs: usize,
    /// VNs attached to each stub router.
    pub clients: usize,
    /// Probability of a chord between two non-adjacent transit routers.
    pub chord_prob: f64,
    /// Seed of the random chords.
    pub seed: u64,
    /// Link attributes by class.
    pub attrs: RoleAttrs,
}

impl Default for TransitStub {
    fn default() -> Self {
        TransitStub {
            transit: 4,
            stubs: 3,
            clients: 4,
            chord_prob: 0.25,
            seed: 1,
            attrs: RoleAttrs::default(),
        }
    }
}

/// A transit-stub topology in the style of GT-ITM (Calvert, Doar, Zegura):
/// `transit` transit routers in a ring with random chords, `stubs` stub
/// routers hanging off each, and `clients` VNs on each stub router.
/// Counts: `T` transit, `T·S` stub and `T·S·C` client nodes.
pub fn transit_stub(p: &TransitStub) -> Result<Topology, TopoError> {
    need(
        p.transit >= 1,
        "transit-stub needs at least one transit router",
    )?;
    need(
        (0.0..=1.0).contains(&p.chord_prob),
        "chord_prob must be in [0, 1]",
    )?;
    need(
        p.transit
            .saturating_mul(p.stubs.max(1))
            .saturating_mul(p.clients.max(1))
            <= 10_000_000,
        "transit-stub of more than ten million nodes",
    )?;
    let mut rng = rng_from_seed(p.seed);
    let mut t = Topology::new();
    let ts: Vec<usize> = (0..p.transit)
        .map(|i| t.add_node(Role::Transit, format!("t{i}")))
        .collect();
    let n = ts.len();
    if n == 2 {
        t.add_link_by_role(ts[0], ts[1], &p.attrs);
    } else if n > 2 {
        for i in 0..n {
            t.add_link_by_role(ts[i], ts[(i + 1) % n], &p.attrs);
        }
        for i in 0..n {
            for j in i + 2..n {
                if (i == 0 && j == n - 1) || !rng.gen_bool(p.chord_prob) {
                    continue;
                }
                t.add_link_by_role(ts[i], ts[j], &p.attrs);
            }
        }
    }
    for (i, &tr) in ts.iter().enumerate() {
        for s in 0..p.stubs {
            let st = t.add_node(Role::Stub, format!("s{i}.{s}"));
            t.add_link_by_role(st, tr, &p.attrs);
            add_clients(&mut t, st, p.clients, &p.attrs);
        }
    }
    Ok(t)
}

/// Parameters of a Waxman random graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Waxman {
    /// Routers (stub role), placed uniformly in the unit square.
    pub routers: usize,
    /// VNs attached to each router.
    pub clients: usize,
    /// Waxman's α: overall link density.
    pub alpha: f64,
    /// Waxman's β: the share of long links.
    pub beta: f64,
    /// Seed of the placement and the links.
    pub seed: u64,
    /// Link attributes by class; a router–router link's delay is the
    /// stub–stub delay scaled by its length over the square's diagonal.
    pub attrs: RoleAttrs,
}

impl Default for Waxman {
    fn default() -> Self {
        Waxman {
            routers: 20,
            clients: 2,
            alpha: 0.4,
            beta: 0.2,
            seed: 1,
            attrs: RoleAttrs::default(),
        }
    }
}

/// Waxman's random graph (B. M. Waxman, "Routing of multipoint
/// connections", 1988): routers `u, v` at distance `d` are linked with
/// probability `α·exp(−d / (β·L))`, `L` the largest possible distance.
/// Components left apart are then joined, each by a link from its
/// lowest-numbered router to the nearest router of the first component,
/// so the graph is connected.
pub fn waxman(p: &Waxman) -> Result<Topology, TopoError> {
    need(p.routers >= 1, "waxman needs at least one router")?;
    need(p.routers <= 100_000, "waxman of more than 100000 routers")?;
    need((0.0..=1.0).contains(&p.alpha), "alpha must be in [0, 1]")?;
    need(p.beta > 0.0 && p.beta.is_finite(), "beta must be positive")?;
    let mut rng = rng_from_seed(p.seed);
    let pos: Vec<(f64, f64)> = (0..p.routers)
        .map(|_| (rng.gen::<f64>(), rng.gen::<f64>()))
        .collect();
    let l = std::f64::consts::SQRT_2;
    let dist =
        |i: usize, j: usize| ((pos[i].0 - pos[j].0).powi(2) + (pos[i].1 - pos[j].1).powi(2)).sqrt();
    let mut t = Topology::new();
    for i in 0..p.routers {
        t.add_node(Role::Stub, format!("w{i}"));
    }
    let base = p.attrs.stub_stub.delay.as_nanos() as f64;
    let link = |t: &mut Topology, i: usize, j: usize| {
        let li = t.add_link_by_role(i, j, &p.attrs);
        let d = (base * dist(i, j) / l).round().max(1_000.0) as u64;
        t.links[li].delay = Duration::from_nanos(d);
    };
    for i in 0..p.routers {
        for j in i + 1..p.routers {
            let prob = p.alpha * (-dist(i, j) / (p.beta * l)).exp();
            if rng.gen_bool(prob.clamp(0.0, 1.0)) {
                link(&mut t, i, j);
            }
        }
    }
    // Join components: label them, then link each to component 0.
    let mut comp = vec![usize::MAX; p.routers];
    let adj = t.adjacency();
    let mut ncomp = 0;
    for s in 0..p.routers {
        if comp[s] != usize::MAX {
            continue;
        }
        comp[s] = ncomp;
        let mut stack = vec![s];
        while let Some(u) = stack.pop() {
            for &li in &adj[u] {
                let v = t.links[li].other(u);
                if comp[v] == usize::MAX {
                    comp[v] = ncomp;
                    stack.push(v);
                }
            }
        }
        ncomp += 1;
    }
    for c in 1..ncomp {
        let Some(first) = (0..p.routers).find(|&i| comp[i] == c) else {
            continue;
        };
        let nearest = (0..p.routers)
            .filter(|&j| comp[j] == 0)
            .min_by(|&a, &b| dist(first, a).total_cmp(&dist(first, b)));
        if let Some(j) = nearest {
            link(&mut t, first, j);
        }
    }
    for r in 0..p.routers {
        add_clients(&mut t, r, p.clients, &p.attrs);
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LinkClass;

    fn count(t: &Topology, role: Role) -> usize {
        t.nodes.iter().filter(|n| n.role == role).count()
    }

    /// A pass proves each generator gives a valid, connected topology with
    /// exactly the requested node and link counts.
    #[test]
    fn generators_are_connected_with_requested_counts() {
        let a = RoleAttrs::default();
        let r = ring(20, 20, &a).expect("ring");
        assert_eq!((count(&r, Role::Stub), count(&r, Role::Client)), (20, 400));
        assert_eq!(r.links.len(), 420);
        let s = star(7, &a).expect("star");
        assert_eq!((s.nodes.len(), s.links.len()), (8, 7));
        let d = dumbbell(3, 4, &a).expect("dumbbell");
        assert_eq!((count(&d, Role::Client), d.links.len()), (7, 8));
        let tr = tree(3, 2, 2, &a).expect("tree");
        assert_eq!((count(&tr, Role::Stub), count(&tr, Role::Client)), (15, 16));
        assert_eq!(tr.links.len(), 14 + 16);
        for seed in 0..5 {
            let ts = transit_stub(&TransitStub {
                transit: 5,
                stubs: 3,
                clients: 4,
                seed,
                ..Default::default()
            })
            .expect("transit-stub");
            assert_eq!(count(&ts, Role::Transit), 5);
            assert_eq!(count(&ts, Role::Stub), 15);
            assert_eq!(count(&ts, Role::Client), 60);
            let w = waxman(&Waxman {
                routers: 30,
                clients: 1,
                alpha: 0.1,
                seed,
                ..Default::default()
            })
            .expect("waxman");
            assert_eq!((count(&w, Role::Stub), count(&w, Role::Client)), (30, 30));
            for t in [&ts, &w] {
                t.validate().expect("valid");
                assert!(t.is_connected());
            }
        }
        for t in [&r, &s, &d, &tr] {
            t.validate().expect("valid");
            assert!(t.is_connected());
        }
    }

    /// A pass proves links get the attributes of their role class.
    #[test]
    fn links_take_attributes_by_role() {
        let a = RoleAttrs::default();
        let ts = transit_stub(&TransitStub::default()).expect("generates");
        for l in &ts.links {
            let class = LinkClass::of(ts.nodes[l.a].role, ts.nodes[l.b].role);
            assert_eq!(l.bw, a.get(class).bw);
            assert_eq!(l.delay, a.get(class).delay);
        }
    }

    /// A pass proves the random generators are reproducible from the seed.
    #[test]
    fn seeded_generators_repeat() {
        let p = Waxman::default();
        assert_eq!(waxman(&p).expect("a"), waxman(&p).expect("b"));
        let q = Waxman { seed: 2, ..p };
        assert_ne!(
            waxman(&Waxman::default()).expect("a"),
            waxman(&q).expect("c")
        );
    }
}
