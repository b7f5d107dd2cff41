//! Symmetric and asymmetric routes (`route::Routes`): ModelNet's "routes
//! are symmetric unless asked otherwise". Asymmetric routes compute each
//! direction from its own source; on equal-cost paths the two directions
//! of a pair may then differ, each still a shortest path, and faults and
//! link changes re-route each direction on its own.

use pipelab_engine::{Duration, Rate};
use pipelab_topo::distill::{distill, distill_with, distill_with_routes, report, Distilled, Mode};
use pipelab_topo::gen::{ring, transit_stub, TransitStub};
use pipelab_topo::model::{LinkAttrs, RoleAttrs, Topology};
use pipelab_topo::route::{Faults, Metric, Network, RouteCache, Routes};

fn attrs() -> RoleAttrs {
    RoleAttrs {
        client_stub: LinkAttrs::new(Rate::from_bps(10_000_000), Duration::from_millis(1)),
        stub_stub: LinkAttrs::new(Rate::from_bps(100_000_000), Duration::from_millis(5)),
        ..RoleAttrs::default()
    }
}

/// Four routers in a ring, one VN each. Nodes: r0 = 0, vn0 = 1, r1 = 2,
/// vn1 = 3, r2 = 4, vn2 = 5, r3 = 6, vn3 = 7. Links 0..4 join vn_i to r_i
/// (pipe `2i` towards the router), links 4..8 are r0-r1, r1-r2, r2-r3,
/// r3-r0 (pipe `2l` from the first named). Opposite VNs have two paths of
/// equal delay (12 ms, 4 pipes).
fn ring4() -> Topology {
    match ring(4, 1, &attrs()) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    }
}

fn must<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

fn routed(t: &Topology, mode: Mode, metric: Metric, routes: Routes) -> Distilled {
    must(distill_with_routes(
        t,
        mode,
        metric,
        routes,
        &Faults::none(t),
    ))
}

/// (total delay in ns, target links, pipes) of a route.
fn cost(d: &Distilled, r: &[u32]) -> (u64, u32, usize) {
    let delay = r
        .iter()
        .map(|&p| d.pipes[p as usize].delay.as_nanos())
        .sum();
    let hops = r.iter().map(|&p| d.pipes[p as usize].hops).sum();
    (delay, hops, r.len())
}

fn mirror(r: &[u32]) -> Vec<u32> {
    r.iter().rev().map(|p| p ^ 1).collect()
}

/// Unordered VN pairs whose reverse route is not the forward one mirrored.
fn unmirrored(d: &Distilled) -> usize {
    let vns = d.routes.vns();
    let mut n = 0;
    for (i, &s) in vns.iter().enumerate() {
        for &t in &vns[i + 1..] {
            let f = d.routes.route(s, t).unwrap_or(&[]);
            let b = d.routes.route(t, s).unwrap_or(&[]);
            if mirror(f) != b {
                n += 1;
            }
        }
    }
    n
}

/// Every route of `a` is a valid pipe chain from its source to its
/// destination, and costs what the same pair's route costs in `s`.
fn same_costs(a: &Distilled, s: &Distilled) {
    assert_eq!(a.routes.len(), s.routes.len());
    for (src, dst, r) in a.routes.iter() {
        let mut at = src;
        for &p in r {
            let pipe = &a.pipes[p as usize];
            assert_eq!(pipe.from, at, "{src}->{dst}: {r:?}");
            assert!(pipe.up, "{src}->{dst}: pipe {p} down");
            at = pipe.to;
        }
        assert_eq!(at, dst, "{src}->{dst}: {r:?}");
        let sr = s.routes.route(src, dst).unwrap_or(&[]);
        assert_eq!(cost(a, r), cost(s, sr), "{src}->{dst}: {r:?} vs {sr:?}");
    }
}

/// A pass proves the names parse and print back, bad ones are refused
/// naming the choices, and the default is symmetric.
#[test]
fn routes_round_trip_through_text() {
    for r in [Routes::Symmetric, Routes::Asymmetric] {
        assert_eq!(r.to_string().parse::<Routes>(), Ok(r));
    }
    assert_eq!(" Asymmetric ".parse::<Routes>(), Ok(Routes::Asymmetric));
    let e = "sideways".parse::<Routes>().err().map(|e| e.to_string());
    assert!(
        e.as_deref()
            .is_some_and(|e| e.contains("sideways") && e.contains("symmetric, asymmetric")),
        "{e:?}"
    );
    assert_eq!(Routes::default(), Routes::Symmetric);
}

/// A pass proves that on the 4-ring the two directions of vn1-vn3 take
/// different halves of the ring (vn1→vn3 by r2, pipes 2 10 12 7; vn3→vn1
/// by r0, pipes 6 14 8 3, not the mirror 6 13 11 3), both 12 ms and 4
/// pipes; vn0-vn2 happens to agree, so exactly 1 of the 6 pairs differs;
/// symmetric routes mirror every pair.
#[test]
fn asymmetric_directions_differ_on_equal_cost_paths() {
    let t = ring4();
    let s = routed(&t, Mode::HopByHop, Metric::Delay, Routes::Symmetric);
    let a = routed(&t, Mode::HopByHop, Metric::Delay, Routes::Asymmetric);
    assert_eq!(a.routing, Routes::Asymmetric);
    let (vn1, vn3) = (3, 7);
    assert_eq!(s.routes.route(vn1, vn3), Some(&[2, 10, 12, 7][..]));
    assert_eq!(s.routes.route(vn3, vn1), Some(&[6, 13, 11, 3][..]));
    assert_eq!(a.routes.route(vn1, vn3), Some(&[2, 10, 12, 7][..]));
    assert_eq!(a.routes.route(vn3, vn1), Some(&[6, 14, 8, 3][..]));
    let r = a.routes.route(vn3, vn1).unwrap_or(&[]);
    assert_eq!(cost(&a, r), (12_000_000, 4, 4));
    assert_eq!(unmirrored(&s), 0);
    assert_eq!(unmirrored(&a), 1);
    same_costs(&a, &s);
    // Same pipes, same figures: only the choice among equal paths moves.
    assert_eq!(a.pipes, s.pipes);
    assert_eq!(a.stats(), s.stats());
}

/// A pass proves that on larger topologies (a 6-ring with 2 VNs per
/// router; a transit-stub with chords) and in every distillation,
/// asymmetric routes are shortest paths (same delay, links and pipes as
/// the symmetric route of the pair) while symmetric routes mirror every
/// pair. By delay, the directions differ for 8 of the ring's 66 VN pairs
/// hop by hop and walk-in 2 (its 12 pairs of opposite routers' VNs tie),
/// 64 of the transit-stub's 276 hop by hop, and none where a mesh pipe
/// collapses each tie into one pipe pair (last-mile, end-to-end, and the
/// transit-stub's walk-in 2).
#[test]
fn asymmetric_routes_are_shortest_and_symmetric_ones_mirror() {
    let ts = must(transit_stub(&TransitStub {
        transit: 6,
        stubs: 2,
        clients: 2,
        chord_prob: 0.5,
        seed: 3,
        attrs: attrs(),
    }));
    let topos = [("ring6", must(ring(6, 2, &attrs()))), ("ts", ts)];
    assert_eq!((topos[0].1.vns().len(), topos[1].1.vns().len()), (12, 24));
    let modes = [
        Mode::HopByHop,
        Mode::LastMile,
        Mode::EndToEnd,
        Mode::WalkIn(2),
    ];
    let mut differing = Vec::new();
    for (name, t) in &topos {
        for mode in modes {
            for metric in [Metric::Delay, Metric::Hops] {
                let s = routed(t, mode, metric, Routes::Symmetric);
                let a = routed(t, mode, metric, Routes::Asymmetric);
                assert_eq!(unmirrored(&s), 0, "{name} {mode} {metric}");
                same_costs(&a, &s);
                if metric == Metric::Delay {
                    differing.push((*name, mode.to_string(), unmirrored(&a)));
                }
            }
        }
    }
    let got: Vec<(&str, &str, usize)> = differing
        .iter()
        .map(|(n, m, k)| (*n, m.as_str(), *k))
        .collect();
    assert_eq!(
        got,
        [
            ("ring6", "hop-by-hop", 8),
            ("ring6", "last-mile", 0),
            ("ring6", "end-to-end", 0),
            ("ring6", "walk-in 2", 8),
            ("ts", "hop-by-hop", 64),
            ("ts", "last-mile", 0),
            ("ts", "end-to-end", 0),
            ("ts", "walk-in 2", 0),
        ]
    );
}

/// A pass proves the default is symmetric everywhere: `distill`,
/// `distill_with` and `Network::new` give what `Routes::Symmetric` gives,
/// and the report's first line is unchanged (asymmetric adds its name).
#[test]
fn default_is_symmetric() {
    let t = ring4();
    for mode in [Mode::HopByHop, Mode::LastMile, Mode::EndToEnd] {
        let s = routed(&t, mode, Metric::Delay, Routes::Symmetric);
        assert_eq!(must(distill(&t, mode)), s);
        assert_eq!(
            must(distill_with(&t, mode, Metric::Delay, &Faults::none(&t))),
            s
        );
        let net = must(Network::new(t.clone(), mode, Metric::Delay));
        assert_eq!(net.distilled(), &s);
        assert_eq!(s.routing, Routes::Symmetric);
    }
    let s = routed(&t, Mode::HopByHop, Metric::Hops, Routes::Symmetric);
    let a = routed(&t, Mode::HopByHop, Metric::Hops, Routes::Asymmetric);
    assert!(report(&t, &s).starts_with("distillation: hop-by-hop (routes by hops)\n"));
    assert!(report(&t, &a).starts_with("distillation: hop-by-hop (routes by hops, asymmetric)\n"));
}

/// A pass proves a link failure re-routes both directions in asymmetric
/// mode, each on its own: with r1-r2 down, vn1→vn3 leaves r2 for r0 (pipes
/// 2 9 15 7) while vn3→vn1 stays by r0; vn0-vn2 and vn1-vn2 move in both
/// directions (5 ordered pairs changed and recomputed); the result equals a
/// fresh asymmetric distillation under the same faults, in hop-by-hop and
/// last-mile; restoring the link restores the first routes.
#[test]
fn link_failure_reroutes_both_directions_asymmetrically() {
    let t = ring4();
    let (r1, r2) = (t.nodes[2].id, t.nodes[4].id);
    let (vn0, vn1, vn2, vn3) = (1, 3, 5, 7);
    let mut net = must(Network::with_routes(
        t.clone(),
        Mode::HopByHop,
        Metric::Delay,
        Routes::Asymmetric,
    ));
    let before = net.distilled().clone();
    let c = must(net.link_down(r1, r2));
    let mut changed = c.routes.clone();
    changed.sort_unstable();
    assert_eq!(
        changed,
        [(vn0, vn2), (vn1, vn2), (vn1, vn3), (vn2, vn0), (vn2, vn1)]
    );
    assert_eq!(c.recomputed, 5);
    let d = net.distilled();
    assert_eq!(d.routing, Routes::Asymmetric);
    assert_eq!(d.routes.route(vn1, vn3), Some(&[2, 9, 15, 7][..]));
    assert_eq!(d.routes.route(vn3, vn1), Some(&[6, 14, 8, 3][..]));
    assert_eq!(
        d.routes.route(vn0, vn2),
        Some(&mirror(d.routes.route(vn2, vn0).unwrap_or(&[]))[..])
    );
    assert_eq!(d.routes.route(vn0, vn2), Some(&[0, 15, 13, 5][..]));
    let fresh = must(distill_with_routes(
        &t,
        Mode::HopByHop,
        Metric::Delay,
        Routes::Asymmetric,
        net.faults(),
    ));
    assert_eq!(d, &fresh);
    must(net.link_up(r1, r2));
    assert_eq!(net.distilled(), &before);

    // Last-mile recomputes everything; it keeps the choice as well.
    let mut lm = must(Network::with_routes(
        t.clone(),
        Mode::LastMile,
        Metric::Delay,
        Routes::Asymmetric,
    ));
    let c = must(lm.link_down(r1, r2));
    assert_eq!(c.recomputed, 12);
    let fresh = must(distill_with_routes(
        &t,
        Mode::LastMile,
        Metric::Delay,
        Routes::Asymmetric,
        lm.faults(),
    ));
    assert_eq!(lm.distilled(), &fresh);
    assert_eq!(lm.distilled().routing, Routes::Asymmetric);
}

/// A pass proves node failures and link changes keep the choice: r0 down
/// sends vn3→vn1 by r2 (pipes 6 13 11 3); making r1-r2 slower (20 ms)
/// sends vn1→vn3 by r0 (2 9 15 7) and keeps vn3→vn1 by r0 (6 14 8 3);
/// both equal a fresh asymmetric distillation.
#[test]
fn node_down_and_set_link_keep_asymmetric_routes() {
    let t = ring4();
    let (r0, r1, r2) = (t.nodes[0].id, t.nodes[2].id, t.nodes[4].id);
    let (vn1, vn3) = (3, 7);
    let mut net = must(Network::with_routes(
        t.clone(),
        Mode::HopByHop,
        Metric::Delay,
        Routes::Asymmetric,
    ));
    must(net.node_down(r0));
    assert_eq!(
        net.distilled().routes.route(vn3, vn1),
        Some(&[6, 13, 11, 3][..])
    );
    must(net.node_up(r0));
    let c = must(net.set_link(r1, r2, |l| l.delay = Duration::from_millis(20)));
    assert!(c.routes.contains(&(vn1, vn3)), "{c:?}");
    assert!(!c.routes.contains(&(vn3, vn1)), "{c:?}");
    let d = net.distilled();
    assert_eq!(d.routes.route(vn1, vn3), Some(&[2, 9, 15, 7][..]));
    assert_eq!(d.routes.route(vn3, vn1), Some(&[6, 14, 8, 3][..]));
    let fresh = must(distill_with_routes(
        net.topology(),
        Mode::HopByHop,
        Metric::Delay,
        Routes::Asymmetric,
        net.faults(),
    ));
    assert_eq!(d, &fresh);
}

/// A pass proves the route cache follows the distillation's choice: it
/// answers every pair as the matrix does, symmetric or asymmetric, with a
/// cache of 3 routes.
#[test]
fn route_cache_follows_the_choice() {
    let t = ring4();
    for routes in [Routes::Symmetric, Routes::Asymmetric] {
        let d = routed(&t, Mode::HopByHop, Metric::Delay, routes);
        let mut cache = RouteCache::new(&t, &d, 3);
        let vns = d.routes.vns().to_vec();
        for &s in &vns {
            for &x in &vns {
                let want = d.routes.route(s, x).map(<[u32]>::to_vec);
                assert_eq!(
                    cache.route(s, x).map(<[u32]>::to_vec),
                    want,
                    "{routes} {s}->{x}"
                );
            }
        }
        assert!(cache.len() <= 3);
    }
}
