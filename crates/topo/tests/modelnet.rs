//! Scenario tests of the topology pipeline against ModelNet's own numbers
//! (§4.1 ring example) and exact virtual-time delays.

use pipelab_classify::PacketView;
use pipelab_emu::{Emulation, Exit, Ingress};
use pipelab_engine::{Duration, EngineOptions, FlowKey, Instant, Packet, Rate};
use pipelab_topo::assign::{greedy_k_clusters, partition_balanced};
use pipelab_topo::distill::{distill, distill_report, Mode};
use pipelab_topo::gen::{ring, transit_stub, TransitStub};
use pipelab_topo::model::{LinkAttrs, Role, RoleAttrs, Topology};
use pipelab_topo::route::{Metric, Network, RouteCache, Router};
use std::net::{IpAddr, Ipv4Addr};

/// The §4.1 ring: "The ring has 20 routers interconnected at 20 Mb/s; each
/// ring router has 20 VNs directly connected to it by individual 2 Mb/s
/// links."
fn paper_ring() -> Topology {
    let attrs = RoleAttrs {
        client_stub: LinkAttrs::new(Rate::from_bps(2_000_000), Duration::from_millis(1)),
        stub_stub: LinkAttrs::new(Rate::from_bps(20_000_000), Duration::from_millis(5)),
        ..RoleAttrs::default()
    };
    ring(20, 20, &attrs).expect("ring")
}

/// A pass proves the end-to-end count of §4.1: "The end-to-end
/// distillation contains 79,800 pipes, one for each VN pair, each with a
/// bandwidth of 2 Mb/s." (400·399/2 pairs; each pair is a bidirectional
/// pipe, i.e. two engine pipes.) Every route is one hop.
#[test]
fn paper_ring_end_to_end_has_79800_pipes_of_2mbps() {
    let d = distill(&paper_ring(), Mode::EndToEnd).expect("distils");
    let s = d.stats();
    assert_eq!(s.vns, 400);
    assert_eq!(s.links, 79_800);
    assert_eq!(s.pipes, 159_600);
    assert!(d.pipes.iter().all(|p| p.bw == Rate::from_bps(2_000_000)));
    assert_eq!((s.routes, s.max_hops, s.unreachable), (400 * 399, 1, 0));
}

/// A pass proves the last-mile count of §4.1: "The last-mile distillation
/// preserves the 400 edge links to the VNs, and maps the ring itself to a
/// fully connected mesh of 190 links", and that "each packet traverses 3
/// hops" at most ((2·walk-in)+1 with walk-in 1).
#[test]
fn paper_ring_last_mile_is_400_plus_190_with_at_most_3_hops() {
    let topo = paper_ring();
    let d = distill(&topo, Mode::LastMile).expect("distils");
    let s = d.stats();
    assert_eq!(s.links, 400 + 190);
    let access = d
        .pipes
        .iter()
        .step_by(2)
        .filter(|p| {
            topo.nodes[p.from].role == Role::Client || topo.nodes[p.to].role == Role::Client
        })
        .count();
    assert_eq!(access, 400);
    assert_eq!(s.max_hops, 3);
    for (_, _, r) in d.routes.iter() {
        assert!(r.len() <= 3);
    }
    // Same-router pairs take 2 hops, the rest 3: (19·2 + 380·3) / 399.
    assert!((s.mean_hops - (19.0 * 2.0 + 380.0 * 3.0) / 399.0).abs() < 1e-12);
    assert_eq!(
        distill(&topo, Mode::WalkIn(1)).expect("walk-in 1").pipes,
        d.pipes
    );
}

/// A pass proves hop-by-hop is isomorphic (one pipe pair per link) and
/// that its routes average the paper's "average case of 7" hops:
/// exactly (19·2 + 380·2 + 20·100) / 399 = 7.0125 on a 20-ring. (The
/// paper's "419 pipes" for this ring is one short of its 20 ring links +
/// 400 access links; we count 420.)
#[test]
fn paper_ring_hop_by_hop_averages_seven_hops() {
    let topo = paper_ring();
    let d = distill(&topo, Mode::HopByHop).expect("distils");
    let s = d.stats();
    assert_eq!(s.links, 420);
    assert!(
        (s.mean_hops - 2798.0 / 399.0).abs() < 1e-12,
        "{}",
        s.mean_hops
    );
    assert_eq!(s.max_hops, 12);
    let report = distill_report(&topo, Mode::LastMile);
    assert!(
        report.contains("pipes: 1180 (590 bidirectional)"),
        "{report}"
    );
    assert!(report.contains("max 3"), "{report}");
}

/// A small, irregular topology: 2 VNs per router on a 3-router line with
/// different rates and delays per link.
fn small() -> Topology {
    let mut t = Topology::new();
    let r: Vec<usize> = (0..3)
        .map(|i| t.add_node(Role::Stub, format!("r{i}")))
        .collect();
    let rates = [8_000_000u64, 4_000_000, 16_000_000];
    let delays = [1u64, 3, 7];
    let add = |t: &mut Topology, a: usize, b: usize, bw: u64, ms: u64| {
        t.links.push(pipelab_topo::Link {
            a,
            b,
            bw: Rate::from_bps(bw),
            delay: Duration::from_millis(ms),
            loss: 0.0,
            queue: Default::default(),
            words: Default::default(),
        });
    };
    for (i, &ri) in r.iter().enumerate() {
        for j in 0..2 {
            let c = t.add_node(Role::Client, format!("c{i}.{j}"));
            add(&mut t, c, ri, rates[(i + j) % 3], delays[(i + j) % 3]);
        }
    }
    add(&mut t, r[0], r[1], 10_000_000, 11);
    add(&mut t, r[1], r[2], 2_000_000, 13);
    t
}

/// Send one 1000-byte packet along each route of `d` through the
/// emulation its lowered spec describes (VN `k` at 10.0.0.1 + k), one
/// after the other, and return (src, dst, one-way delay).
fn one_packet_per_route(d: &pipelab_topo::Distilled) -> Vec<(usize, usize, Duration)> {
    let base = Ipv4Addr::new(10, 0, 0, 1);
    let spec = pipelab_topo::lower(d, &[], base, None, &[]).expect("lowers");
    let mut e = Emulation::with_spec(spec, EngineOptions::default()).expect("spec");
    let vns = d.routes.vns().to_vec();
    let addr = |k: usize| IpAddr::V4(Ipv4Addr::from(u32::from(base) + k as u32));
    let mut got = Vec::new();
    let mut views = |p: &Packet| PacketView::ip(p.key, p.len);
    for (i, &s) in vns.iter().enumerate() {
        for (j, &t) in vns.iter().enumerate() {
            if d.routes.route(s, t).is_none() {
                continue;
            }
            let mut out = Vec::new();
            let start = Instant(1_000_000_000 * (got.len() as u64 + 1));
            e.advance(start, &mut out, &mut views);
            let mut p = Packet::new(1000);
            p.born = start;
            p.key = FlowKey {
                proto: 17,
                src: addr(i),
                dst: addr(j),
                ..FlowKey::default()
            };
            let mut view = PacketView::ip(p.key, p.len);
            assert_eq!(e.ingress(start, p, i as u16, &mut view), Ingress::Queued);
            while let Some(t_next) = e.next_deadline() {
                e.advance(t_next, &mut out, &mut views);
            }
            let o = out
                .iter()
                .find(|o| o.exit == Exit::Deliver { port: j as u16 })
                .expect("delivered to its destination's port");
            got.push((s, t, o.at.saturating_since(start)));
        }
    }
    got
}

/// The exact delay of a 1000-byte packet over the links of the target
/// path: per link, its delay plus 8000 bits at its rate.
fn expected(topo: &Topology, d: &pipelab_topo::Distilled, route: &[u32]) -> Duration {
    let mut ns = 0u64;
    for &p in route {
        let ps = &d.pipes[p as usize];
        let l = topo
            .find_link(ps.from, ps.to)
            .expect("hop-by-hop pipe is a link");
        let link = &topo.links[l];
        ns += link.delay.as_nanos() + 8000 * 1_000_000_000 / link.bw.bps();
    }
    Duration::from_nanos(ns)
}

/// A pass proves, in virtual time, that a packet's delay along every route
/// of the engine built from a hop-by-hop distillation is exactly the sum
/// of its links' delays and transmission times, and that end-to-end gives
/// the summed delay plus one transmission at the path's minimum rate.
#[test]
fn virtual_time_delays_add_along_routes() {
    let topo = small();
    let d = distill(&topo, Mode::HopByHop).expect("distils");
    let sent = one_packet_per_route(&d);
    assert_eq!(sent.len(), 6 * 5);
    for (s, t, got) in sent {
        let r = d.routes.route(s, t).expect("route");
        assert_eq!(got, expected(&topo, &d, r), "{s}->{t}");
    }
    let e2e = distill(&topo, Mode::EndToEnd).expect("distils");
    for (s, t, got) in one_packet_per_route(&e2e) {
        let r = d.routes.route(s, t).expect("route");
        let delay: u64 = r
            .iter()
            .map(|&p| d.pipes[p as usize].delay.as_nanos())
            .sum();
        let min_bw = r
            .iter()
            .map(|&p| d.pipes[p as usize].bw.bps())
            .min()
            .expect("hops");
        assert_eq!(
            got,
            Duration::from_nanos(delay + 8000 * 1_000_000_000 / min_bw)
        );
    }
}

/// A pass proves a ring link failure reroutes the other way round with
/// the exact longer delay, only affected routes are recomputed, and
/// restoring the link restores the original routes.
#[test]
fn ring_link_failure_reroutes_the_other_way() {
    let attrs = RoleAttrs {
        client_stub: LinkAttrs::new(Rate::from_bps(10_000_000), Duration::from_millis(1)),
        stub_stub: LinkAttrs::new(Rate::from_bps(100_000_000), Duration::from_millis(10)),
        ..RoleAttrs::default()
    };
    // Node order: r0, vn, r1, vn, ... (one VN per router, 6 routers).
    let topo = ring(6, 1, &attrs).expect("ring");
    let (r0, v0, r1, v1) = (0usize, 1usize, 2usize, 3usize);
    let mut net = Network::new(topo.clone(), Mode::HopByHop, Metric::Delay).expect("net");
    let delay = |net: &Network| -> u64 {
        let d = net.distilled();
        let r = d.routes.route(v0, v1).expect("route");
        r.iter()
            .map(|&p| d.pipes[p as usize].delay.as_nanos())
            .sum()
    };
    assert_eq!(delay(&net), Duration::from_millis(1 + 10 + 1).as_nanos());
    let before = net.distilled().clone();
    let ch = net
        .link_down(topo.nodes[r0].id, topo.nodes[r1].id)
        .expect("link exists");
    // The other way round: 5 ring links.
    assert_eq!(
        delay(&net),
        Duration::from_millis(1 + 5 * 10 + 1).as_nanos()
    );
    assert_eq!(
        net.distilled().routes.route(v0, v1).map(<[u32]>::len),
        Some(7)
    );
    assert!(ch.routes.contains(&(v0, v1)) && ch.routes.contains(&(v1, v0)));
    assert_eq!(ch.pipes.len(), 2);
    assert!(ch.recomputed < 30, "only affected pairs: {}", ch.recomputed);
    // The reverse route uses the reverse pipes.
    let d = net.distilled();
    let f = d.routes.route(v0, v1).expect("fwd");
    let b = d.routes.route(v1, v0).expect("rev");
    assert_eq!(
        b.to_vec(),
        f.iter().rev().map(|p| p ^ 1).collect::<Vec<_>>()
    );
    // Same answer as a full recomputation under the same faults.
    let full =
        pipelab_topo::distill::distill_with(&topo, Mode::HopByHop, Metric::Delay, net.faults())
            .expect("distils");
    assert_eq!(&full, net.distilled());
    net.link_up(topo.nodes[r0].id, topo.nodes[r1].id)
        .expect("up");
    assert_eq!(net.distilled(), &before);
    // Failing a router cuts its VN off and reroutes the rest.
    net.node_down(topo.nodes[r1].id).expect("node");
    assert!(net.distilled().routes.route(v0, v1).is_none());
    // vn of r5 (node 11) is one ring link away the other way.
    assert_eq!(
        delay_between(&net, v0, 11),
        Duration::from_millis(1 + 10 + 1).as_nanos()
    );
    assert!(net.link_down(999, 998).is_err());
}

fn delay_between(net: &Network, a: usize, b: usize) -> u64 {
    let d = net.distilled();
    d.routes
        .route(a, b)
        .map(|r| {
            r.iter()
                .map(|&p| d.pipes[p as usize].delay.as_nanos())
                .sum()
        })
        .unwrap_or(u64::MAX)
}

/// A pass proves a failure under a collapsed distillation (last-mile)
/// changes the mesh pipes' delay to the detour's, keeping the pipe set.
#[test]
fn last_mile_failure_lengthens_mesh_pipes() {
    let attrs = RoleAttrs {
        stub_stub: LinkAttrs::new(Rate::from_bps(100_000_000), Duration::from_millis(10)),
        client_stub: LinkAttrs::new(Rate::from_bps(10_000_000), Duration::from_millis(1)),
        ..RoleAttrs::default()
    };
    let topo = ring(6, 1, &attrs).expect("ring");
    let mut net = Network::new(topo.clone(), Mode::LastMile, Metric::Delay).expect("net");
    let n = net.distilled().pipes.len();
    assert_eq!(
        delay_between(&net, 1, 3),
        Duration::from_millis(12).as_nanos()
    );
    net.link_down(topo.nodes[0].id, topo.nodes[2].id)
        .expect("down");
    assert_eq!(net.distilled().pipes.len(), n);
    assert_eq!(
        delay_between(&net, 1, 3),
        Duration::from_millis(52).as_nanos()
    );
}

/// A pass proves the route cache gives the routing matrix's routes, hits
/// on repeats and stays within its bound.
#[test]
fn route_cache_matches_matrix() {
    let topo = transit_stub(&TransitStub {
        transit: 4,
        stubs: 2,
        clients: 3,
        seed: 9,
        ..Default::default()
    })
    .expect("topology");
    let d = distill(&topo, Mode::HopByHop).expect("distils");
    let mut cache = Router::Cache(RouteCache::new(&topo, &d, 10));
    let mut matrix = Router::Matrix(d.routes.clone());
    let vns = topo.vns();
    for &s in &vns {
        for &t in &vns {
            let a = matrix.route(s, t).map(<[u32]>::to_vec);
            let b = cache.route(s, t).map(<[u32]>::to_vec);
            assert_eq!(a, b, "{s}->{t}");
        }
    }
    let Router::Cache(c) = &mut cache else {
        unreachable!()
    };
    assert!(c.len() <= 10);
    let (s, t) = (vns[0], vns[1]);
    c.route(s, t);
    let hits = c.hits;
    c.route(s, t);
    assert_eq!(c.hits, hits + 1);
}

/// A pass proves walk-in 2 on a transit-stub graph keeps every route
/// within (2·2)+1 = 5 pipes, walk-out preserves the transit core, and
/// routes by hops are never longer in hops than routes by delay.
#[test]
fn walk_in_and_walk_out_bound_hops() {
    let topo = transit_stub(&TransitStub {
        transit: 6,
        stubs: 2,
        clients: 2,
        seed: 3,
        ..Default::default()
    })
    .expect("topology");
    let hbh = distill(&topo, Mode::HopByHop).expect("hbh");
    let w2 = distill(&topo, Mode::WalkIn(2)).expect("walk-in 2");
    assert!(w2.stats().max_hops <= 5);
    assert_eq!(w2.stats().routes, hbh.stats().routes);
    let wo = distill(
        &topo,
        Mode::WalkOut {
            walk_in: 1,
            walk_out: 1,
        },
    )
    .expect("walk-out");
    assert_eq!(wo.stats().routes, hbh.stats().routes);
    // Route delays are preserved by every distillation (collapsed pipes
    // carry their path's delay).
    for d in [&w2, &wo] {
        for (s, t, r) in hbh.routes.iter() {
            let sum = |d: &pipelab_topo::Distilled, r: &[u32]| -> u64 {
                r.iter()
                    .map(|&p| d.pipes[p as usize].delay.as_nanos())
                    .sum()
            };
            let r2 = d.routes.route(s, t).expect("route");
            assert_eq!(sum(&hbh, r), sum(d, r2));
        }
    }
}

/// A pass proves the refined partitioner hands off no more routes between
/// cores than ModelNet's greedy k-clusters on the same seed, keeps the
/// balance, and lowers the share of routes that cross cores here.
#[test]
fn balanced_partition_cuts_fewer_routes() {
    let topo = transit_stub(&TransitStub {
        transit: 6,
        stubs: 3,
        clients: 4,
        seed: 4,
        ..Default::default()
    })
    .expect("topology");
    let d = distill(&topo, Mode::HopByHop).expect("distils");
    let g = greedy_k_clusters(&d, 4, 7);
    let b = partition_balanced(&d, 4, 7);
    assert_eq!(g.loads().iter().sum::<usize>(), d.pipes.len() / 2);
    assert!(b.handoffs(&d.routes) <= g.handoffs(&d.routes));
    let cap = ((d.pipes.len() / 2) as f64 / 4.0 * 1.05).ceil() as usize;
    assert!(b
        .loads()
        .iter()
        .all(|&l| l <= cap.max(*g.loads().iter().max().unwrap_or(&0))));
    let (fg, fb) = (g.cross_fraction(&d.routes), b.cross_fraction(&d.routes));
    assert!(fb <= fg, "balanced {fb} vs greedy {fg}");
    assert_eq!(greedy_k_clusters(&d, 1, 0).cross_fraction(&d.routes), 0.0);
}
