//! Routes on demand (ModelNet §2.2's route cache): a network that routes
//! only the VN pairs asked for, and the route cache its forwarding
//! threads ask, give every pair the path the whole routing matrix gives
//! it, before and after faults, for both metrics, symmetric and
//! asymmetric routes and every distillation; and the first lookup of a
//! pair on a 10,000-VN topology takes well under a millisecond.

use pipelab_engine::rng::{rng_from_seed, StageRng};
use pipelab_engine::{Duration, Rate};
use pipelab_topo::gen::{star, transit_stub, TransitStub};
use pipelab_topo::model::{Link, LinkAttrs, Role, RoleAttrs, Topology};
use pipelab_topo::route::{Change, Metric, Network, Routes};
use pipelab_topo::Mode;
use rand::Rng;
use std::collections::BTreeSet;

fn must<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

/// A random connected topology of 8 to 30 nodes, about 40 % of them VNs
/// (some with two links, some joined to each other: a VN never
/// forwards), link delays of 1 to 3 ms so that many paths tie.
fn random_topology(rng: &mut StageRng) -> Topology {
    let n = rng.gen_range(8..=30);
    let mut t = Topology::new();
    for i in 0..n {
        let role = if i > 1 && rng.gen_bool(0.4) {
            Role::Client
        } else {
            Role::Stub
        };
        t.add_node(role, format!("x{i}"));
    }
    let ms = |rng: &mut StageRng| Duration::from_millis(rng.gen_range(1..=3));
    let mut links = BTreeSet::new();
    for i in 1..n {
        let j = rng.gen_range(0..i);
        links.insert((j, i));
    }
    for _ in 0..n / 2 {
        let (a, b) = (rng.gen_range(0..n), rng.gen_range(0..n));
        if a != b {
            links.insert((a.min(b), a.max(b)));
        }
    }
    for (a, b) in links {
        let attrs = LinkAttrs::new(Rate::from_bps(10_000_000), ms(rng));
        t.links.push(Link::with_attrs(a, b, &attrs));
    }
    t
}

/// One change to the target topology, made the same on both networks.
#[derive(Clone, Copy, Debug)]
enum Op {
    LinkDown(usize),
    LinkUp(usize),
    NodeDown(usize),
    NodeUp(usize),
    Delay(usize, u64),
}

fn apply(net: &mut Network, op: Op) -> Result<Change, pipelab_topo::TopoError> {
    let t = net.topology();
    let ends = |l: usize| (t.nodes[t.links[l].a].id, t.nodes[t.links[l].b].id);
    match op {
        Op::LinkDown(l) => {
            let (a, b) = ends(l);
            net.link_down(a, b)
        }
        Op::LinkUp(l) => {
            let (a, b) = ends(l);
            net.link_up(a, b)
        }
        Op::NodeDown(v) => {
            let id = t.nodes[v].id;
            net.node_down(id)
        }
        Op::NodeUp(v) => {
            let id = t.nodes[v].id;
            net.node_up(id)
        }
        Op::Delay(l, ms) => {
            let (a, b) = ends(l);
            net.set_link(a, b, |x| x.delay = Duration::from_millis(ms))
        }
    }
}

/// The route cache of `lazy` answers every ordered VN pair as `full`'s
/// matrix; the pairs `lazy` holds are routed as there.
fn same_routes(full: &Network, lazy: &Network, what: &str) {
    let vns = full.distilled().routes.vns().to_vec();
    for (s, d, r) in lazy.distilled().routes.held() {
        assert_eq!(
            Some(r).filter(|r| !r.is_empty()),
            full.distilled().routes.route(s, d),
            "{what}: held {s}->{d}"
        );
    }
    let cache = lazy.path_cache();
    for (i, &s) in vns.iter().enumerate() {
        for (j, &d) in vns.iter().enumerate() {
            let want = full.distilled().routes.route(s, d).unwrap_or(&[]);
            assert_eq!(&*cache.route(i, j), want, "{what}: on demand {s}->{d}");
        }
    }
}

/// A pass proves that on 40 random topologies with many equal-cost
/// paths, under every distillation, both metrics and both route
/// symmetries, a network routing on demand (its forwarding threads'
/// cache computing each pair once, the network taking those pairs in as
/// a live topology does) gives every VN pair the route of the whole
/// matrix, at start and after each of 8 random faults and link changes
/// (links and nodes down and up, delays changed); that a change reports
/// as changed exactly the pairs it holds whose route the whole matrix
/// changed, and routes again only the pairs it holds.
#[test]
fn on_demand_routes_match_the_whole_matrix_under_faults() {
    let mut rng = rng_from_seed(29);
    let modes = [
        Mode::HopByHop,
        Mode::LastMile,
        Mode::WalkIn(2),
        Mode::WalkOut {
            walk_in: 1,
            walk_out: 1,
        },
        Mode::EndToEnd,
    ];
    let mut checked = 0;
    for round in 0..40 {
        let t = random_topology(&mut rng);
        if t.vns().len() < 2 {
            continue;
        }
        let mode = modes[round % modes.len()];
        let metric = if rng.gen_bool(0.5) {
            Metric::Delay
        } else {
            Metric::Hops
        };
        for routes in [Routes::Symmetric, Routes::Asymmetric] {
            let what = format!("round {round}, {mode}, {metric}, {routes}");
            let mut full = must(Network::with_routes(t.clone(), mode, metric, routes));
            let mut lazy = must(Network::on_demand(t.clone(), mode, metric, routes));
            assert!(lazy.is_on_demand() || mode == Mode::EndToEnd, "{what}");
            same_routes(&full, &lazy, &what);
            let n = t.vns().len();
            let (links, nodes) = (t.links.len(), t.nodes.len());
            for step in 0..8 {
                // Some pairs send (their first packets ask the cache),
                // and the network takes them in before the change.
                let cache = lazy.path_cache();
                for _ in 0..n {
                    cache.route(rng.gen_range(0..n), rng.gen_range(0..n));
                }
                lazy.learn(&cache);
                let held: Vec<(usize, usize)> = lazy.distilled().routes.pairs();
                let op = match rng.gen_range(0..5) {
                    0 => Op::LinkDown(rng.gen_range(0..links)),
                    1 => Op::LinkUp(rng.gen_range(0..links)),
                    2 => Op::NodeDown(rng.gen_range(0..nodes)),
                    3 => Op::NodeUp(rng.gen_range(0..nodes)),
                    _ => Op::Delay(rng.gen_range(0..links), rng.gen_range(1..=5)),
                };
                let what = format!("{what}, step {step}: {op:?}");
                let (cf, cl) = match (apply(&mut full, op), apply(&mut lazy, op)) {
                    (Ok(a), Ok(b)) => (a, b),
                    (Err(a), Err(b)) => {
                        assert_eq!(a.to_string(), b.to_string(), "{what}");
                        continue;
                    }
                    (a, b) => panic!("{what}: {a:?} / {b:?}"),
                };
                same_routes(&full, &lazy, &what);
                assert_eq!(cl.pipes, cf.pipes, "{what}: pipes changed");
                if lazy.is_on_demand() {
                    let changed: BTreeSet<(usize, usize)> = cf
                        .routes
                        .iter()
                        .copied()
                        .filter(|p| held.contains(p))
                        .collect();
                    let got: BTreeSet<(usize, usize)> = cl.routes.iter().copied().collect();
                    assert_eq!(got, changed, "{what}: routes changed");
                    assert!(cl.recomputed <= held.len(), "{what}");
                    assert_eq!(lazy.distilled().routes.pairs(), held, "{what}");
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 400, "{checked} changes checked");
}

/// A pass proves a route cache computes each pair once and holds only
/// the pairs asked for (with symmetric routes, a pair's reverse too), so
/// its memory grows with the pairs in use: of a star of 2000 VNs (4
/// million pairs), asking 0→1999 twice, 5→6, 1999→0 and 7→7 holds 5
/// routes symmetric (3 computed), 4 asymmetric (4 computed); a VN to
/// itself is held with no route.
#[test]
fn the_cache_holds_the_pairs_in_use() {
    let t = must(star(2000, &RoleAttrs::default()));
    for (routes, held, computed) in [(Routes::Symmetric, 5, 3), (Routes::Asymmetric, 4, 4)] {
        let net = must(Network::on_demand(
            t.clone(),
            Mode::HopByHop,
            Metric::Delay,
            routes,
        ));
        assert_eq!(net.held_routes(), 0);
        let cache = net.path_cache();
        assert!(cache.is_empty());
        for (s, d) in [(0, 1999), (5, 6), (0, 1999), (1999, 0), (7, 7)] {
            let r = cache.route(s, d);
            assert_eq!(r.len(), if s == d { 0 } else { 2 }, "{s}->{d}");
        }
        assert_eq!(cache.len(), held, "{routes}");
        assert_eq!(cache.computed(), computed, "{routes}");
    }
}

/// Looks up `pairs` random pairs of `net`'s VNs, each in a cache of its
/// own (a first lookup): every pair of two VNs has a route.
fn first_lookups(net: &Network, pairs: usize, rng: &mut StageRng) {
    let n = net.distilled().routes.vns().len();
    for _ in 0..pairs {
        let cache = net.path_cache();
        let (s, d) = (rng.gen_range(0..n), rng.gen_range(0..n));
        let r = cache.route(s, d);
        assert!(s == d || !r.is_empty(), "{s}->{d}");
        // Symmetric routes: the pair's two ways, and nothing else.
        assert!(cache.len() <= 2, "{s}->{d}: {} routes held", cache.len());
    }
}

/// A pass proves a 10,000-VN topology (a star, and a transit-stub of 10
/// transit and 100 stub routers) starts with no route computed and gives
/// each pair its route on its first lookup, holding that pair alone (both
/// ways: the routes are symmetric). How
/// long a first lookup takes is measured by `cargo bench -p pipelab-topo
/// --bench routes` (BENCHMARKS.md), not here.
#[test]
fn ten_thousand_vns_start_with_no_route_and_route_on_first_lookup() {
    let mut rng = rng_from_seed(7);
    let ts = TransitStub {
        transit: 10,
        stubs: 10,
        clients: 100,
        ..TransitStub::default()
    };
    for (name, t) in [
        ("star", must(star(10_000, &RoleAttrs::default()))),
        ("transit-stub", must(transit_stub(&ts))),
    ] {
        assert_eq!(t.vns().len(), 10_000);
        let net = must(Network::on_demand(
            t,
            Mode::HopByHop,
            Metric::Delay,
            Routes::Symmetric,
        ));
        assert_eq!(net.held_routes(), 0, "{name}");
        first_lookups(&net, 200, &mut rng);
    }
}
