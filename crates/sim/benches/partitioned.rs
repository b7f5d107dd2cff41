//! Forwarding through a partitioned topology in virtual time, with 1 and
//! 2 workers in the same run (issue: multi-core data plane, "engine-only
//! forwarding of a partitioned topology with K = 2 vs K = 1").
//!
//! A ring of 20 routers with 5 VNs each (hop by hop: 200 pipes, routes of
//! 3 to 12 pipes) under cross traffic carries 100 Poisson flows of
//! 1000 pps for 2 s between VNs all around the ring. Each sitting runs
//! `pipelab_sim::simulate_scenario` with `--workers 1` then `2`, several
//! times alternating, and prints the wall time of each (the topology is
//! lowered once, outside the timing, with the routes of the pairs the
//! traffic and the cross traffic use, as `pipelab sim --topology` builds
//! it), packet-hops per second, the ratio of the medians, and the median
//! of each round's own ratio (K = 1 and K = 2 run back to back, so the
//! machine's drift between rounds stays out of it). The
//! reports are checked to be identical.
//!
//! `cargo bench -p pipelab-sim --bench partitioned [-- ROUNDS]`

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::Instant;

use pipelab_emu::Emulation;
use pipelab_engine::EngineOptions;
use pipelab_engine::Rate;
use pipelab_lang::{parse_traffic, TrafficSpec};
use pipelab_sim::{partition, simulate_scenario, Report, Scenario, SimOptions};
use pipelab_topo::cross::{pipe_loads, Demand};
use pipelab_topo::model::RoleAttrs;
use pipelab_topo::paths::{Metric, Routes};
use pipelab_topo::route::Faults;
use pipelab_topo::{distill_unrouted, gen, Mode};

fn scenario() -> Scenario {
    let t = gen::ring(20, 5, &RoleAttrs::default()).expect("ring");
    let mut d = distill_unrouted(
        &t,
        Mode::HopByHop,
        Metric::default(),
        Routes::default(),
        &Faults::none(&t),
    )
    .expect("distils");
    let vns = t.vns();
    let names: Vec<String> = vns.iter().map(|&v| t.node_name(v)).collect();
    let demands: Vec<Demand> = (0..vns.len())
        .step_by(7)
        .map(|i| Demand {
            src: vns[i],
            dst: vns[(i + 50) % vns.len()],
            rate: Rate(2_000_000),
        })
        .collect();
    // The pairs the run sends between (VN `k` is 10.0.0.1 + k).
    let mut pairs: Vec<(usize, usize)> = traffic_pairs()
        .map(|(s, d)| (vns[s as usize], vns[d as usize]))
        .collect();
    pairs.extend(demands.iter().map(|dm| (dm.src, dm.dst)));
    d.route_pairs(&t, &pairs);
    let loads = pipe_loads(&d, &demands);
    let spec =
        pipelab_topo::lower(&d, &names, Ipv4Addr::new(10, 0, 0, 1), None, &loads).expect("lowers");
    Scenario {
        spec,
        pipe_text: pipelab_topo::lower::pipe_texts(&t, &d, &loads),
        queue_text: BTreeMap::new(),
        // As `pipelab sim --topology` does: the simulator cuts the pipes
        // by the traffic's routes.
        hint: None,
    }
}

/// Flow `i` runs from VN `s` to VN `d` (indices among the 100 VNs).
fn traffic_pairs() -> impl Iterator<Item = (u32, u32)> {
    (0..100u32).map(|i| {
        let (s, d) = (i, (i * 37 + 41) % 100);
        (s, if d == s { (d + 1) % 100 } else { d })
    })
}

fn traffic() -> Vec<TrafficSpec> {
    traffic_pairs()
        .enumerate()
        .map(|(i, (s, d))| {
            let a = |k: u32| Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 0, 0, 1)) + k);
            parse_traffic(&format!(
                "poisson rate 1000pps size 500B duration 2s from {}:{} to {}:9",
                a(s),
                1000 + i,
                a(d)
            ))
            .expect("traffic")
        })
        .collect()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5);
    let tr = traffic();
    let sc = scenario();
    let mut times = [Vec::new(), Vec::new()];
    let mut reports = [String::new(), String::new()];
    let mut hops = 0u64;
    let mut last: Option<Report> = None;
    let mut infos = Vec::new();
    for _ in 0..rounds {
        for (i, k) in [1usize, 2].into_iter().enumerate() {
            let opts = SimOptions {
                workers: k,
                ..SimOptions::default()
            };
            let t0 = Instant::now();
            let (r, info) = simulate_scenario(&sc, &tr, &opts).expect("runs");
            times[i].push(t0.elapsed().as_secs_f64());
            assert_eq!(info.partitions, k);
            infos.push(info);
            hops = r.pipes.iter().map(|p| p.arrivals).sum();
            reports[i] = r.to_json();
            last = Some(r);
        }
    }
    assert_eq!(reports[0], reports[1], "the reports differ");
    println!("forwarding a 20-router ring (100 VNs, 200 pipes), {hops} packet-hops per run, {rounds} rounds");
    println!(
        "{:<10} {:>10} {:>10} {:>10} {:>16}",
        "workers", "min s", "median s", "max s", "Mhop/s (median)"
    );
    // Each round ran K = 1 then K = 2 back to back: their ratio, round
    // by round, keeps the machine's drift between rounds out of it.
    let mut paired: Vec<f64> = times[0].iter().zip(&times[1]).map(|(a, b)| a / b).collect();
    let mut med = [0.0; 2];
    for (i, k) in [1, 2].into_iter().enumerate() {
        let min = times[i].iter().copied().fold(f64::MAX, f64::min);
        let max = times[i].iter().copied().fold(0.0, f64::max);
        med[i] = median(&mut times[i]);
        println!(
            "{:<10} {:>10.3} {:>10.3} {:>10.3} {:>16.2}",
            k,
            min,
            med[i],
            max,
            hops as f64 / med[i] / 1e6
        );
    }
    println!("speed-up K=2 / K=1 (medians): {:.2}x", med[0] / med[1]);
    let (lo, hi) = paired
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
    println!(
        "speed-up K=2 / K=1 (median of the rounds' own ratios): {:.2}x ({lo:.2}-{hi:.2})",
        median(&mut paired)
    );
    if let Some(i) = infos.get(1) {
        println!(
            "K=2: {} windows, {} hand-offs between the workers",
            i.windows, i.handoffs
        );
    }
    // How the K = 2 cut shares the packet-hops (each pipe's arrivals go
    // to its owner).
    let front = Emulation::with_spec(sc.spec.clone(), EngineOptions::default()).expect("spec");
    let routes: Vec<_> = tr
        .iter()
        .filter_map(|t| Some((t.from?.ip(), t.to?.ip(), partition::expected_packets(t))))
        .collect();
    let load = partition::Load::of_routes(&sc.spec, &routes);
    let plan = partition::plan(&sc.spec, &front, 2, None, &load);
    let mut share = [0u64; 2];
    for p in last.iter().flat_map(|r| &r.pipes) {
        if let Some(&w) = plan.of_pipe.get(&p.id) {
            share[(w as usize).min(1)] += p.arrivals;
        }
    }
    println!(
        "K=2: the workers' shares of the packet-hops {:.1} % and {:.1} %, lookahead {:?}",
        100.0 * share[0] as f64 / hops as f64,
        100.0 * share[1] as f64 / hops as f64,
        plan.lookahead
    );
}
