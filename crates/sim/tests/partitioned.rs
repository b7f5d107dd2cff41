//! The partitioned engine in virtual time (`--workers K`): the report is
//! the same, byte for byte, whatever the number of workers, on plain
//! configurations (connected groups of pipes), on topologies (cut by the
//! balanced assignment or by the traffic, hand-offs with lookahead), with `prob` rules and
//! `one_pass 0`, with ties at one nanosecond between partitions, and when
//! a cut has no lookahead (the run falls back to fewer partitions).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use pipelab_emu::{Destinations, Egress, Emulation, Paths, PipeDef, PortDef, Spec};
use pipelab_engine::config::QueueLimit;
use pipelab_engine::EngineOptions;
use pipelab_engine::{Duration, PipeConfig, Rate};
use pipelab_lang::{parse_traffic, Config, TrafficSpec};
use pipelab_sim::{partition, simulate_scenario, Report, RunInfo, Scenario, SimOptions};
use pipelab_topo::cross::{pipe_loads, Demand};
use pipelab_topo::model::{LinkAttrs, RoleAttrs};
use pipelab_topo::{distill, gen, Mode, Topology};
use proptest::prelude::*;

fn traffic(specs: &[String]) -> Vec<TrafficSpec> {
    specs
        .iter()
        .map(|t| parse_traffic(t).expect("traffic parses"))
        .collect()
}

fn run(s: &Scenario, t: &[TrafficSpec], workers: usize, seed: u64) -> (Report, RunInfo) {
    simulate_scenario(
        s,
        t,
        &SimOptions {
            seed,
            workers,
            ..SimOptions::default()
        },
    )
    .expect("simulation runs")
}

/// The JSON reports of `workers` = 1, and each of `ks`, with their run
/// information; asserts they are byte-identical (with a hint, also when
/// the simulator cuts by the traffic instead).
fn same_for(s: &Scenario, t: &[TrafficSpec], ks: &[usize], seed: u64) -> Vec<RunInfo> {
    let (one, info1) = run(s, t, 1, seed);
    let want = one.to_json();
    let mut infos = vec![info1];
    for &k in ks {
        let mut s = s.clone();
        if let Some(h) = &mut s.hint {
            // Hints are per K: re-deal them over k.
            for v in h.values_mut() {
                *v %= k as u32;
            }
        }
        let (r, info) = run(&s, t, k, seed);
        assert_eq!(r.to_json(), want, "report with {k} workers");
        infos.push(info);
        if s.hint.is_some() {
            // And as cut by default, by the traffic's routes.
            s.hint = None;
            let (r, _) = run(&s, t, k, seed);
            assert_eq!(
                r.to_json(),
                want,
                "report with {k} workers, cut by the traffic"
            );
        }
    }
    infos
}

fn config_scenario(text: &str) -> Scenario {
    let mut cfg = Config::new();
    cfg.apply_script(text).expect("config parses");
    // Files as `pipelab sim` reads them: netem's tables from tc's
    // directory where iproute2 is installed.
    Scenario::from_config(&cfg, &mut |p: &str| {
        std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"))
    })
    .expect("lowers")
}

/// A topology's scenario as `pipelab sim --topology` builds it (VN `k` at
/// 10.0.0.(k+1), cross traffic loading its routes), with `topo assign`'s
/// balanced assignment over `k` workers as the hint (`pipelab sim` gives
/// none: the simulator cuts by the traffic; `same_for` runs both).
fn topo_scenario(t: &Topology, cross: &[(usize, usize, u64)], k: usize) -> Scenario {
    let d = distill(t, Mode::HopByHop).expect("distils");
    let vns = t.vns();
    let names: Vec<String> = vns.iter().map(|&v| t.node_name(v)).collect();
    let demands: Vec<Demand> = cross
        .iter()
        .map(|&(s, d, r)| Demand {
            src: vns[s],
            dst: vns[d],
            rate: Rate(r),
        })
        .collect();
    let loads = pipe_loads(&d, &demands);
    let spec =
        pipelab_topo::lower(&d, &names, Ipv4Addr::new(10, 0, 0, 1), None, &loads).expect("lowers");
    Scenario {
        spec,
        pipe_text: pipelab_topo::lower::pipe_texts(t, &d, &loads),
        queue_text: BTreeMap::new(),
        hint: Some(pipelab_topo::lower::partition_hint(&d, k, 1)),
    }
}

fn vn(k: usize) -> String {
    format!("10.0.0.{}", k + 1)
}

/// A pass proves the scenario at a size for a unit test: a ring
/// of 6 routers with 24 VNs under cross traffic and 24 flows gives one
/// report for 1, 2 and 4 workers, and the partitioned runs really are
/// partitioned (packets were handed off between workers).
#[test]
fn ring_under_cross_traffic_is_identical_for_1_2_4_workers() {
    let t = gen::ring(6, 4, &RoleAttrs::default()).expect("ring");
    let n = t.vns().len();
    let cross: Vec<(usize, usize, u64)> = (0..n).map(|i| (i, (i + 7) % n, 3_000_000)).collect();
    let flows: Vec<String> = (0..n)
        .map(|i| {
            format!(
                "poisson rate 300pps size 1000B duration 1s from {}:{} to {}:5001",
                vn(i),
                1000 + i,
                vn((i * 5 + 3) % n)
            )
        })
        .collect();
    let s = topo_scenario(&t, &cross, 4);
    let infos = same_for(&s, &traffic(&flows), &[2, 4], 7);
    assert_eq!(infos[0].partitions, 1);
    assert_eq!(infos[1].partitions, 2);
    assert_eq!(infos[2].partitions, 4);
    assert!(infos[1].handoffs > 0 && infos[2].handoffs > 0, "{infos:?}");
    assert_eq!(infos[0].handoffs, 0);
}

/// A pass proves a plain configuration runs as its connected groups of
/// pipes (here four independent pipes with loss, jitter, RED and a
/// scheduler, fed by `prob` rules) on several workers with the report of
/// one.
#[test]
fn plain_configuration_groups_are_identical_for_1_2_4_workers() {
    let s = config_scenario(
        "pipe 1 config bw 2Mbit/s delay 10ms plr 0.01 queue 20\n\
         pipe 2 config bw 5Mbit/s delay 20ms 5ms distribution normal\n\
         pipe 3 config bw 1Mbit/s queue 30 red 0.002/5/15/0.1\n\
         pipe 4 config bw 3Mbit/s\n\
         sched 4 config type drr\n\
         queue 7 config pipe 4 weight 3 mask src-port 0xffff\n\
         add 100 prob 0.5 pipe 1 udp from any to any dst-port 5001\n\
         add 200 pipe 2 udp from any to any dst-port 5001\n\
         add 300 pipe 3 udp from any to any dst-port 5002\n\
         add 400 queue 7 udp from any to any dst-port 5003\n",
    );
    let flows: Vec<String> = (0..8)
        .map(|i| {
            format!(
                "poisson rate 400pps size 700B duration 2s from 10.0.0.1:{} to 10.0.0.2:{}",
                2000 + i,
                5001 + i % 3
            )
        })
        .collect();
    let infos = same_for(&s, &traffic(&flows), &[2, 4], 3);
    assert_eq!(infos[2].partitions, 4);
}

/// A pass proves `prob` draws and reinjection (`one_pass 0`) do not
/// depend on the number of workers: the packets a rule sends into a pipe
/// are reclassified with their own `prob` streams, and pipes joined by
/// reinjection stay in one partition while an independent pipe runs on
/// another worker.
#[test]
fn prob_rules_with_reinjection_are_identical_for_1_2_workers() {
    let s = config_scenario(
        "set one_pass 0\n\
         pipe 1 config bw 4Mbit/s delay 5ms queue 10\n\
         pipe 2 config bw 2Mbit/s delay 7ms\n\
         pipe 3 config bw 3Mbit/s delay 3ms plr 0.05\n\
         add 100 prob 0.3 pipe 1 udp from any to any dst-port 5001\n\
         add 200 prob 0.6 pipe 2 udp from any to any dst-port 5001\n\
         add 300 prob 0.5 deny udp from any to any dst-port 5001\n",
    );
    let flows: Vec<String> = (0..4)
        .map(|i| {
            format!(
                "poisson rate 500pps size 500B duration 2s from 10.0.0.1:{} to 10.0.0.2:5001",
                3000 + i
            )
        })
        .collect();
    let infos = same_for(&s, &traffic(&flows), &[2], 11);
    // Pipes 1 and 2 are joined by reinjection; pipe 3 (no rule feeds it
    // here) is a group of its own.
    assert_eq!(infos[1].partitions, 2);
}

/// A pass proves a cut with no lookahead is never made: a ring whose
/// links have no delay cannot be cut, so 4 workers run it as one
/// partition, say why, and give the report of one.
#[test]
fn zero_lookahead_cut_falls_back_to_one_partition() {
    let zero = LinkAttrs::new(Rate::from_bps(10_000_000), Duration::ZERO);
    let attrs = RoleAttrs {
        client_stub: zero,
        stub_stub: zero,
        stub_transit: zero,
        transit_transit: zero,
    };
    let t = gen::ring(4, 2, &attrs).expect("ring");
    let flows: Vec<String> = (0..8)
        .map(|i| {
            format!(
                "cbr rate 800pps size 1000B duration 1s from {}:9 to {}:9",
                vn(i),
                vn((i + 3) % 8)
            )
        })
        .collect();
    let s = topo_scenario(&t, &[], 4);
    let infos = same_for(&s, &traffic(&flows), &[4], 1);
    assert_eq!(infos[1].partitions, 1);
    assert_eq!(infos[1].handoffs, 0);
    let note = infos[1].note.as_deref().unwrap_or("");
    assert!(note.contains("running 1"), "{note}");
}

/// A pass proves a run without a hint is cut by its traffic, as
/// `partition::plan` cuts with the traffic's `Load`: on a ring of 8
/// routers with CBR flows that lose nothing, the hand-offs the run counts
/// are each flow's packets times the cut steps of its route under that
/// plan, and another number under `topo assign`'s partition.
#[test]
fn a_run_without_hint_is_cut_by_its_traffic() {
    let t = gen::ring(8, 3, &RoleAttrs::default()).expect("ring");
    let n = 24;
    let flows: Vec<String> = (0..n)
        .map(|i| {
            // Most packets among the VNs of routers 0 and 1.
            let (rate, d) = if i < 6 {
                (900, (i + 1) % 6)
            } else {
                (50, (i * 5 + 3) % n)
            };
            format!(
                "cbr rate {rate}pps size 200B duration 1s from {}:{} to {}:9",
                vn(i),
                1000 + i,
                vn(d)
            )
        })
        .collect();
    let flows = traffic(&flows);
    let hinted = topo_scenario(&t, &[], 2);
    let mut s = hinted.clone();
    s.hint = None;
    let (r, info) = run(&s, &flows, 2, 1);
    assert_eq!(info.partitions, 2);
    assert!(r.flows.iter().all(|f| f.lost == 0), "no losses");
    let routes: Vec<_> = flows
        .iter()
        .filter_map(|f| Some((f.from?.ip(), f.to?.ip(), partition::expected_packets(f))))
        .collect();
    let load = partition::Load::of_routes(&s.spec, &routes);
    let front = Emulation::with_spec(s.spec.clone(), EngineOptions::default()).expect("spec");
    let paths = s.spec.paths.as_ref().expect("paths");
    let handoffs = |plan: &partition::Plan| -> u64 {
        flows
            .iter()
            .zip(&r.flows)
            .map(|(f, fr)| {
                let port = |a: Option<std::net::SocketAddr>| {
                    paths.dest.port(a.expect("address").ip()).expect("a VN") as usize
                };
                let route = paths.get(port(f.from), port(f.to)).expect("route");
                let cuts = route
                    .windows(2)
                    .filter(|w| plan.of_pipe[&w[0]] != plan.of_pipe[&w[1]])
                    .count() as u64;
                fr.sent * cuts
            })
            .sum()
    };
    let by_traffic = partition::plan(&s.spec, &front, 2, None, &load);
    assert_eq!(info.handoffs, handoffs(&by_traffic));
    let blind = partition::plan(&s.spec, &front, 2, hinted.hint.as_ref(), &load);
    let (_, hinted_info) = run(&hinted, &flows, 2, 1);
    assert_eq!(hinted_info.handoffs, handoffs(&blind));
    assert_ne!(by_traffic.of_pipe, blind.of_pipe);
}

fn pipe(bw: u64, delay_us: u64, queue: u32) -> PipeDef {
    PipeDef::plain(
        PipeConfig::new(
            Rate(bw),
            Duration::from_micros(delay_us),
            QueueLimit::Slots(queue),
        )
        .expect("pipe"),
    )
}

/// A pass proves ties at one nanosecond are settled as one engine settles
/// them: three pipes, two on workers of their own and one beside the
/// pipe they all feed, with the same parameters, send into that pipe
/// packets that arrive at exactly the same instants; its queue of 3
/// overflows, so which packets are dropped depends on the order of the
/// arrivals at equal times (the local one first: its key is the
/// smallest), and the report is the same for 1 and 3 workers.
#[test]
fn ties_between_partitions_feeding_one_pipe_are_canonical() {
    // Ports 0, 1, 2 send to port 3: 0 -> A -> C, 1 -> B -> C, 2 -> D -> C.
    let mut spec = Spec::default();
    let (d, c, a, b) = (65536, 65537, 65538, 65539);
    for f in [a, b, d] {
        spec.pipes.insert(f, pipe(8_000_000, 1000, 100));
    }
    spec.pipes.insert(c, pipe(4_000_000, 500, 3));
    let mut paths = Paths::new(
        4,
        Destinations::Range {
            base: Ipv4Addr::new(10, 0, 0, 1),
            base6: None,
            count: 4,
        },
    );
    paths.set(0, 3, Some(&[a, c]));
    paths.set(1, 3, Some(&[b, c]));
    paths.set(2, 3, Some(&[d, c]));
    spec.paths = Some(paths);
    spec.ports = (0..4)
        .map(|k| PortDef {
            name: format!("vn{k}"),
            dir: None,
            iface: Some(k),
            egress: Egress::ByDestination,
        })
        .collect();
    let text: BTreeMap<u32, String> = [a, b, c, d].iter().map(|&n| (n, format!("p{n}"))).collect();
    let s = Scenario {
        spec,
        pipe_text: text,
        queue_text: BTreeMap::new(),
        hint: Some([(a, 1), (b, 2), (c, 0), (d, 0)].into_iter().collect()),
    };
    let flows = traffic(&[
        "cbr rate 1000pps size 1000B duration 1s from 10.0.0.1:1 to 10.0.0.4:9".into(),
        "cbr rate 1000pps size 1000B duration 1s from 10.0.0.2:1 to 10.0.0.4:9".into(),
        "cbr rate 1000pps size 1000B duration 1s from 10.0.0.3:1 to 10.0.0.4:9".into(),
    ]);
    let infos = same_for(&s, &flows, &[3], 1);
    assert_eq!(infos[1].partitions, 3);
    let (r, _) = run(&s, &flows, 3, 1);
    let p = r.pipes.iter().find(|p| p.id == c).expect("pipe c");
    assert!(p.drops > 0, "the shared pipe overflows: {p:?}");
    // The local feeder's packets come first at each instant: it loses
    // fewest.
    let lost: Vec<u64> = r.flows.iter().map(|f| f.drops.queue).collect();
    assert!(lost[2] < lost[0] && lost[2] < lost[1], "{lost:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    /// A pass proves random small topologies (rings, stars, dumbbells of
    /// random sizes, link delays from 0 to a few ms, loss, cross
    /// traffic) and random traffic give one report for 1, 2 and 3
    /// workers.
    #[test]
    fn random_topologies_are_identical_across_workers(
        kind in 0usize..3,
        size in 2usize..5,
        clients in 1usize..4,
        delays in proptest::collection::vec(0u64..3000, 4),
        loss in 0u32..3,
        flows in proptest::collection::vec((0usize..64, 0usize..64, 100u64..2000, 0u8..3), 1..8),
        seed in 0u64..1000,
    ) {
        let link = |i: usize, bw: u64| {
            let mut l = LinkAttrs::new(Rate::from_bps(bw), Duration::from_micros(delays[i]));
            l.loss = loss as f64 / 100.0;
            l
        };
        let attrs = RoleAttrs {
            client_stub: link(0, 10_000_000),
            stub_stub: link(1, 20_000_000),
            stub_transit: link(2, 50_000_000),
            transit_transit: link(3, 100_000_000),
        };
        let t = match kind {
            0 => gen::ring(size + 1, clients, &attrs),
            1 => gen::star(size + clients, &attrs),
            _ => gen::dumbbell(size, clients + 1, &attrs),
        }.expect("topology");
        let n = t.vns().len();
        let cross = vec![(0, n - 1, 2_000_000)];
        let specs: Vec<String> = flows.iter().enumerate().map(|(i, &(s, d, rate, pat))| {
            let (s, d) = (s % n, d % n);
            let d = if d == s { (d + 1) % n } else { d };
            let p = ["cbr", "poisson", "onoff on 50ms off 30ms"][pat as usize];
            let (word, rest) = p.split_once(' ').unwrap_or((p, ""));
            format!("{word} rate {rate}pps size 800B duration 300ms {rest} from {}:{} to {}:9", vn(s), 100 + i, vn(d))
        }).collect();
        let tr = traffic(&specs);
        let s = topo_scenario(&t, &cross, 3);
        let (one, _) = run(&s, &tr, 1, seed);
        for k in [2usize, 3] {
            let s = topo_scenario(&t, &cross, k);
            let (r, _) = run(&s, &tr, k, seed);
            prop_assert_eq!(r.to_json(), one.to_json());
        }
    }
}
