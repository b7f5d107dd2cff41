//! Queue management on flow queues (ipfw `queue N config ... red|codel|pie`,
//! dummynet-revisited §3.5–3.6), in virtual time: each instance of a flow
//! queue runs its own RED, PIE or CoDel on its own backlog and sojourn
//! times, beside queues that only tail-drop, under a scheduler that keeps
//! their shares.

use pipelab_engine::engine::{DropReason, Fate, Output, QueueId, Verdict};
use pipelab_engine::models::{CodelConfig, PieConfig, QueueMeasure, RedConfig};
use pipelab_engine::sched::{FlowSpec, SchedConfig, SchedKind};
use pipelab_engine::{
    Aqm, Duration, Engine, EngineOptions, FlowKey, FlowMask, Instant, Packet, PipeConfig,
    QueueLimit, Rate,
};
use std::net::{IpAddr, Ipv4Addr};

/// A constant-bit-rate source into one flow queue.
#[derive(Clone, Copy)]
struct Src {
    q: QueueId,
    /// Packets per second.
    pps: u64,
    len: u32,
    /// Last byte of its source address (a masked queue tells them apart).
    host: u8,
    /// ECN-capable.
    ect: bool,
}

/// One packet's story: when it was offered, the backlog its flow queue
/// held then (over its instances), what became of it.
#[derive(Clone, Copy, Debug)]
struct Trace {
    src: usize,
    born: Instant,
    /// Packets waiting in its flow queue when it arrived.
    found: u32,
    fate: Option<(Instant, Fate)>,
    ce: bool,
}

const PIPE_BW: u64 = 4_000_000;

fn pipe() -> PipeConfig {
    PipeConfig::new(
        Rate::from_bps(PIPE_BW),
        Duration::ZERO,
        QueueLimit::Slots(50),
    )
    .expect("valid")
}

fn key(host: u8) -> FlowKey {
    FlowKey {
        proto: 17,
        src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, host)),
        ..FlowKey::default()
    }
}

/// Run the sources for `secs` seconds of virtual time, then drain.
fn run(e: &mut Engine, srcs: &[Src], secs: u64) -> Vec<Trace> {
    let until = Instant::ZERO + Duration::from_secs(secs);
    let mut next: Vec<Instant> = vec![Instant::ZERO; srcs.len()];
    let mut traces: Vec<Trace> = Vec::new();
    let mut out: Vec<Output> = Vec::new();
    let settle = |out: &mut Vec<Output>, traces: &mut Vec<Trace>| {
        for o in out.drain(..) {
            let t = &mut traces[o.pkt.tag as usize];
            if matches!(o.fate, Fate::Delivered | Fate::Dropped { .. }) {
                t.fate = Some((o.at, o.fate));
                t.ce = o.pkt.flags & Packet::CE != 0;
            }
        }
    };
    while let Some((i, &t)) = next.iter().enumerate().min_by_key(|&(i, t)| (*t, i)) {
        if t >= until {
            break;
        }
        e.advance(t, &mut out);
        settle(&mut out, &mut traces);
        let s = srcs[i];
        let found = e.queue_stats(s.q).map_or(0, |st| st.flows.backlog);
        let tag = traces.len() as u64;
        let mut p = Packet::new(s.len);
        p.tag = tag;
        p.born = t;
        p.key = key(s.host);
        if s.ect {
            p.flags |= Packet::ECT;
        }
        traces.push(Trace {
            src: i,
            born: t,
            found,
            fate: None,
            ce: false,
        });
        if let Verdict::Dropped(r) = e.enqueue_to_queue(t, p, s.q) {
            traces[tag as usize].fate = Some((
                t,
                Fate::Dropped {
                    pipe: pipelab_engine::PipeIdx(u32::MAX),
                    reason: r,
                },
            ));
        }
        next[i] = t + Duration(1_000_000_000 / s.pps);
    }
    while let Some(t) = e.next_deadline() {
        e.advance(t, &mut out);
        settle(&mut out, &mut traces);
    }
    traces
}

/// Delivered throughput of source `src` between `from` and `to` seconds
/// (by delivery instant), bits/s.
fn tput(traces: &[Trace], srcs: &[Src], src: usize, from: u64, to: u64) -> f64 {
    let (a, b) = (
        Instant::ZERO + Duration::from_secs(from),
        Instant::ZERO + Duration::from_secs(to),
    );
    let bytes: u64 = traces
        .iter()
        .filter(|t| t.src == src)
        .filter_map(|t| match t.fate {
            Some((at, Fate::Delivered)) if at >= a && at < b => Some(srcs[src].len as u64),
            _ => None,
        })
        .sum();
    bytes as f64 * 8.0 / (to - from) as f64
}

/// The time delivered packets of `src` born in `[from, to)` seconds waited
/// in their flow queue (time in the pipe minus the transmission at the
/// pipe's rate; the pipe has no delay), in milliseconds, sorted.
fn sojourns_ms(traces: &[Trace], srcs: &[Src], src: usize, from: u64, to: u64) -> Vec<f64> {
    let tx = srcs[src].len as f64 * 8.0 / PIPE_BW as f64 * 1e3;
    let (a, b) = (
        Instant::ZERO + Duration::from_secs(from),
        Instant::ZERO + Duration::from_secs(to),
    );
    let mut v: Vec<f64> = traces
        .iter()
        .filter(|t| t.src == src && t.born >= a && t.born < b)
        .filter_map(|t| match t.fate {
            Some((at, Fate::Delivered)) => Some((at - t.born).as_millis_f64() - tx),
            _ => None,
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

fn quantile(v: &[f64], q: f64) -> f64 {
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn count(traces: &[Trace], src: usize, reason: DropReason) -> usize {
    traces
        .iter()
        .filter(|t| t.src == src)
        .filter(|t| matches!(t.fate, Some((_, Fate::Dropped { reason: r, .. })) if r == reason))
        .count()
}

/// CoDel on a plain pipe at A's share (2 Mbit/s) fed `src`'s traffic for
/// `secs`: the sojourns (arrival to start of transmission, ms, sorted) of
/// the packets born after 10 s, and the CoDel drops.
fn plain_codel_reference(src: Src, secs: u64) -> (Vec<f64>, u64) {
    let mut e = Engine::new(EngineOptions::default());
    let cfg = PipeConfig::new(
        Rate::from_bps(PIPE_BW / 2),
        Duration::ZERO,
        QueueLimit::Slots(1000),
    )
    .expect("valid")
    .with_aqm(codel());
    let p = e.add_pipe_with_stage(cfg, 1);
    let route = e.pipe_route(p).expect("route");
    let tx = src.len as f64 * 8.0 / (PIPE_BW / 2) as f64 * 1e3;
    let from = Instant::ZERO + Duration::from_secs(10);
    let (mut out, mut v) = (Vec::new(), Vec::new());
    let mut keep = |out: &mut Vec<Output>| {
        for o in out.drain(..) {
            if o.fate == Fate::Delivered && o.pkt.born >= from {
                v.push((o.at - o.pkt.born).as_millis_f64() - tx);
            }
        }
    };
    let mut t = Instant::ZERO;
    while t < Instant::ZERO + Duration::from_secs(secs) {
        e.advance(t, &mut out);
        keep(&mut out);
        let mut pkt = Packet::new(src.len);
        pkt.born = t;
        let _ = e.enqueue(t, pkt, route);
        t += Duration(1_000_000_000 / src.pps);
    }
    while let Some(t) = e.next_deadline() {
        e.advance(t, &mut out);
        keep(&mut out);
    }
    v.sort_by(f64::total_cmp);
    (v, e.pipe_stats(p).expect("p").aqm_drops)
}

fn codel() -> Aqm {
    Aqm::Codel(CodelConfig::new(Duration::from_millis(5), Duration::from_millis(100)).expect("ok"))
}

/// Two flow queues of weight 1 under WF2Q+ on a 4 Mbit/s pipe, each owed
/// 2 Mbit/s, each overloaded by unresponsive CBR of 1000-byte packets:
/// queue A, with CoDel (target 5 ms, interval 100 ms) and room for 1000
/// packets, gets 2.1 Mbit/s (5 % over its share); queue B, which only
/// tail-drops at 50 packets, gets 2.4 Mbit/s. The reference is the same
/// CoDel on a plain 2 Mbit/s pipe fed A's traffic.
///
/// Passing proves CoDel runs on A's own instance, on the sojourn it
/// measures there (arrival to the start of transmission): after the first
/// 10 s A's median and 90th-percentile sojourns equal the reference's
/// within 0.1 ms and its drops match the reference's within 1 %; the median
/// is between the target and twice it (the bound the pipe-level CoDel test
/// holds a 5 %-overloaded pipe to) while B sits at its limit (50 packets,
/// 200 ms at 2 Mbit/s); CoDel's drops are A's only (`aqm` drops, in A's
/// counters, the pipe's and the engine's), B's are tail drops only; and
/// the shares stay 2:2 Mbit/s within 1 %.
#[test]
fn codel_on_one_flow_queue_holds_its_sojourn_near_target_beside_a_full_one() {
    let mut e = Engine::new(EngineOptions::default());
    let p = e.add_scheduled_pipe(pipe(), SchedConfig::of(SchedKind::Wf2q), 1);
    let qa = e
        .add_queue(
            p,
            FlowSpec::new(1, QueueLimit::Slots(1000))
                .expect("spec")
                .with_aqm(codel()),
            None,
            1,
        )
        .expect("queue a");
    let qb = e
        .add_queue(
            p,
            FlowSpec::new(1, QueueLimit::Slots(50)).expect("spec"),
            None,
            1,
        )
        .expect("queue b");
    let srcs = [
        Src {
            q: qa,
            pps: 262,
            len: 1000,
            host: 1,
            ect: false,
        },
        Src {
            q: qb,
            pps: 300,
            len: 1000,
            host: 2,
            ect: false,
        },
    ];
    let tr = run(&mut e, &srcs, 60);

    let a = sojourns_ms(&tr, &srcs, 0, 10, 60);
    let b = sojourns_ms(&tr, &srcs, 1, 10, 60);
    let (a50, a90, b50) = (quantile(&a, 0.5), quantile(&a, 0.9), quantile(&b, 0.5));
    let (r, r_drops) = plain_codel_reference(srcs[0], 60);
    let (r50, r90) = (quantile(&r, 0.5), quantile(&r, 0.9));
    println!("A sojourn p50 {a50:.2} ms p90 {a90:.2} ms (plain pipe {r50:.2}, {r90:.2}); B p50 {b50:.2} ms");
    assert!((5.0..=10.0).contains(&a50), "A's median sojourn {a50} ms");
    assert!((a50 - r50).abs() <= 0.1 && (a90 - r90).abs() <= 0.1);
    assert!((b50 - 200.0).abs() <= 5.0, "B's median sojourn {b50} ms");

    let (ta, tb) = (tput(&tr, &srcs, 0, 10, 60), tput(&tr, &srcs, 1, 10, 60));
    println!("A {ta:.0} bit/s, B {tb:.0} bit/s");
    assert!((ta - 2e6).abs() <= 0.01 * 2e6, "A {ta}");
    assert!((tb - 2e6).abs() <= 0.01 * 2e6, "B {tb}");

    let (sa, sb) = (
        e.queue_stats(qa).expect("a").flows,
        e.queue_stats(qb).expect("b").flows,
    );
    println!("A {sa:?}\nB {sb:?}");
    assert_eq!(sa.drops, 0, "A never reaches its limit");
    println!(
        "A's CoDel drops {}, the plain pipe's {r_drops}",
        sa.aqm_drops
    );
    assert!(sa.aqm_drops > 0);
    assert!((sa.aqm_drops as f64 - r_drops as f64).abs() <= 0.01 * r_drops as f64);
    assert_eq!(sa.aqm_drops as usize, count(&tr, 0, DropReason::Aqm));
    assert_eq!(sb.aqm_drops, 0);
    assert_eq!(sb.max_backlog, 50);
    assert_eq!(sb.drops as usize, count(&tr, 1, DropReason::QueueFull));
    for s in [sa, sb] {
        assert_eq!(
            s.arrivals,
            s.served + s.drops + s.aqm_drops + s.backlog as u64
        );
    }
    let pt = e.pipe_totals(p).expect("pipe");
    assert_eq!(pt.aqm_drops, sa.aqm_drops);
    assert_eq!(e.stats().dropped_aqm, sa.aqm_drops);
    assert!(
        tr.iter().all(|t| t.fate.is_some()),
        "every packet accounted"
    );
}

/// Queue A of the same pipe has RED (`w_q` 0.002, thresholds 10 and 60
/// packets, `max_p` 0.5) and is fed 2.5 Mbit/s while it is owed 2 Mbit/s,
/// beside B, full at its 50 slots: so RED must drop a fraction f = 0.2 of
/// A's arrivals. RED's count-spaced drops at a steady `p_b` drop
/// `2 p_b/(1 + p_b)` of the packets, so RED settles where `p_b =
/// f/(2 − f) = 1/9`, i.e. at an average of `10 + 50·(1/9)/0.5 = 21.1`
/// packets in A's instance. Passing proves RED measures A's own backlog
/// (the pipe holds 70 packets and more, beyond `max_th`, which would drop
/// all of A's packets) and follows its law: the mean backlog A's arrivals
/// find is within 10 % of 21.1, and A's drops are `aqm` drops at a fraction
/// within 2 % of 0.2.
#[test]
fn red_on_a_flow_queue_follows_its_drop_law_on_its_own_backlog() {
    let mut e = Engine::new(EngineOptions::default());
    let p = e.add_scheduled_pipe(pipe(), SchedConfig::of(SchedKind::Wf2q), 1);
    let red = RedConfig::red(0.002, 10, 60, 0.5, QueueMeasure::Slots).expect("red");
    let qa = e
        .add_queue(
            p,
            FlowSpec::new(1, QueueLimit::Slots(1000))
                .expect("spec")
                .with_aqm(Aqm::Red(red)),
            None,
            1,
        )
        .expect("queue a");
    let qb = e
        .add_queue(
            p,
            FlowSpec::new(1, QueueLimit::Slots(50)).expect("spec"),
            None,
            1,
        )
        .expect("queue b");
    let srcs = [
        Src {
            q: qa,
            pps: 312,
            len: 1000,
            host: 1,
            ect: false,
        },
        Src {
            q: qb,
            pps: 300,
            len: 1000,
            host: 2,
            ect: false,
        },
    ];
    let tr = run(&mut e, &srcs, 120);
    let late = Instant::ZERO + Duration::from_secs(20);
    let a: Vec<&Trace> = tr.iter().filter(|t| t.src == 0 && t.born >= late).collect();
    let mean_found = a.iter().map(|t| t.found as f64).sum::<f64>() / a.len() as f64;
    let dropped = a
        .iter()
        .filter(|t| matches!(t.fate, Some((_, Fate::Dropped { .. }))))
        .count();
    let f = dropped as f64 / a.len() as f64;
    let f_want = 1.0 - 2e6 / (312.0 * 8000.0);
    let p_b = f_want / (2.0 - f_want);
    let avg_want = 10.0 + 50.0 * p_b / 0.5;
    println!(
        "A finds {mean_found:.2} packets (want {avg_want:.2}); drops {f:.4} (want {f_want:.4})"
    );
    assert!(
        (mean_found - avg_want).abs() <= 0.1 * avg_want,
        "{mean_found}"
    );
    assert!((f - f_want).abs() <= 0.02 * f_want, "{f}");
    assert_eq!(count(&tr, 0, DropReason::QueueFull), 0);
    let sb = e.queue_stats(qb).expect("b").flows;
    assert_eq!((sb.aqm_drops, sb.max_backlog), (0, 50));
    assert!(e.pipe_stats(p).expect("p").max_backlog >= 70);
}

/// PIE (target 15 ms) on queue A, fed 2.4 Mbit/s while it is owed 2 Mbit/s,
/// beside B full at 50 slots. PIE's integral term moves the drop
/// probability until the delay it sees equals its target. Passing proves
/// PIE runs on A's own delay: A's median sojourn after the first 10 s is
/// within 5 ms of 15 ms while B's is 200 ms, and the shares stay 2:2 Mbit/s
/// within 1 %.
#[test]
fn pie_on_a_flow_queue_steers_its_delay_to_target() {
    let mut e = Engine::new(EngineOptions::default());
    let p = e.add_scheduled_pipe(pipe(), SchedConfig::of(SchedKind::Wf2q), 1);
    let qa = e
        .add_queue(
            p,
            FlowSpec::new(1, QueueLimit::Slots(1000))
                .expect("spec")
                .with_aqm(Aqm::Pie(PieConfig::default())),
            None,
            1,
        )
        .expect("queue a");
    let qb = e
        .add_queue(
            p,
            FlowSpec::new(1, QueueLimit::Slots(50)).expect("spec"),
            None,
            1,
        )
        .expect("queue b");
    let srcs = [
        Src {
            q: qa,
            pps: 300,
            len: 1000,
            host: 1,
            ect: false,
        },
        Src {
            q: qb,
            pps: 300,
            len: 1000,
            host: 2,
            ect: false,
        },
    ];
    let tr = run(&mut e, &srcs, 60);
    let a = sojourns_ms(&tr, &srcs, 0, 10, 60);
    let b = sojourns_ms(&tr, &srcs, 1, 10, 60);
    let (a50, b50) = (quantile(&a, 0.5), quantile(&b, 0.5));
    println!("A sojourn p50 {a50:.2} ms; B p50 {b50:.2} ms");
    assert!((a50 - 15.0).abs() <= 5.0, "A's median sojourn {a50} ms");
    assert!((b50 - 200.0).abs() <= 5.0, "B's median sojourn {b50} ms");
    let (ta, tb) = (tput(&tr, &srcs, 0, 10, 60), tput(&tr, &srcs, 1, 10, 60));
    println!("A {ta:.0} bit/s, B {tb:.0} bit/s");
    assert!((ta - 2e6).abs() <= 0.01 * 2e6, "A {ta}");
    assert!((tb - 2e6).abs() <= 0.01 * 2e6, "B {tb}");
    assert!(count(&tr, 0, DropReason::Aqm) > 0);
    assert_eq!(count(&tr, 0, DropReason::QueueFull), 0);
}

/// A masked queue with CoDel makes one CoDel per source: under DRR on the
/// 4 Mbit/s pipe, source 2 sends 1 Mbit/s into it and source 1 sends 3.15
/// Mbit/s (5 % over the 3 Mbit/s left to it). Passing proves each instance
/// has its own state: source 2 never builds a queue and loses nothing,
/// while source 1's instance has CoDel drops and its median queueing delay
/// between the target and twice it.
#[test]
fn each_instance_of_a_masked_queue_has_its_own_codel() {
    let mut e = Engine::new(EngineOptions::default());
    let p = e.add_scheduled_pipe(pipe(), SchedConfig::of(SchedKind::Drr), 1);
    let mask = FlowMask {
        src_ip: u32::MAX,
        ..FlowMask::default()
    };
    let q = e
        .add_queue(
            p,
            FlowSpec::new(1, QueueLimit::Slots(1000))
                .expect("spec")
                .with_aqm(codel()),
            Some(mask),
            16,
        )
        .expect("queue");
    let srcs = [
        Src {
            q,
            pps: 394,
            len: 1000,
            host: 1,
            ect: false,
        },
        Src {
            q,
            pps: 125,
            len: 1000,
            host: 2,
            ect: false,
        },
    ];
    let tr = run(&mut e, &srcs, 60);
    let inst = e.queue_instance_stats(q);
    assert_eq!(inst.len(), 2);
    let by_host = |h: u8| {
        inst.iter()
            .find(|(k, _)| k.is_some_and(|k| k == mask.apply(&key(h))))
            .map(|(_, s)| *s)
            .expect("instance")
    };
    let (s1, s2) = (by_host(1), by_host(2));
    println!("1: {s1:?}\n2: {s2:?}");
    assert!(s1.aqm_drops > 0);
    assert_eq!((s2.aqm_drops, s2.drops), (0, 0));
    assert!(
        s2.max_backlog <= 2,
        "source 2 never queues: {}",
        s2.max_backlog
    );
    let a = sojourns_ms(&tr, &srcs, 0, 10, 60);
    let a50 = quantile(&a, 0.5);
    println!("source 1 sojourn p50 {a50:.2} ms");
    assert!((5.0..=10.0).contains(&a50), "{a50}");
    assert_eq!(
        e.queue_stats(q).expect("q").flows.aqm_drops,
        s1.aqm_drops + s2.aqm_drops
    );
}

/// With `ecn`, CoDel on a flow queue marks ECN-capable packets CE instead
/// of dropping them. Passing proves the switch reaches the instance: the
/// same overload as the CoDel test drops nothing by AQM, marks packets
/// (counted in the queue's and the pipe's `ecn_marks`) and delivers them
/// with CE set.
#[test]
fn ecn_on_a_flow_queue_marks_instead_of_dropping() {
    let mut e = Engine::new(EngineOptions::default());
    let p = e.add_scheduled_pipe(pipe(), SchedConfig::of(SchedKind::Wf2q), 1);
    let qa = e
        .add_queue(
            p,
            FlowSpec::new(1, QueueLimit::Slots(1000))
                .expect("spec")
                .with_aqm(codel())
                .with_ecn(true),
            None,
            1,
        )
        .expect("queue a");
    let srcs = [Src {
        q: qa,
        pps: 600,
        len: 1000,
        host: 1,
        ect: true,
    }];
    let tr = run(&mut e, &srcs, 5);
    let s = e.queue_stats(qa).expect("a").flows;
    let ce = tr
        .iter()
        .filter(|t| t.ce && matches!(t.fate, Some((_, Fate::Delivered))))
        .count();
    println!("{s:?}, {ce} delivered with CE");
    assert_eq!(s.aqm_drops, 0);
    assert!(s.ecn_marks > 0);
    assert_eq!(s.ecn_marks as usize, ce);
    assert_eq!(e.pipe_stats(p).expect("p").ecn_marks, s.ecn_marks);
}

mod properties {
    use super::*;
    use pipelab_engine::sched::SCHEDULERS;
    use proptest::prelude::*;

    /// A flow queue's queue management: 0 none, 1 RED, 2 GRED, 3 CoDel,
    /// 4 PIE; with `ecn` or not.
    fn flow_spec(aqm: u8, ecn: bool, slots: u32, weight: u32) -> FlowSpec {
        let s = FlowSpec::new(weight, QueueLimit::Slots(slots)).expect("spec");
        let a = match aqm {
            1 => Aqm::Red(RedConfig::red(0.2, 2, 8, 0.5, QueueMeasure::Slots).expect("red")),
            2 => Aqm::Red(RedConfig::gred(0.2, 2, 8, 0.5, QueueMeasure::Slots).expect("gred")),
            3 => Aqm::Codel(
                CodelConfig::new(Duration::from_micros(500), Duration::from_millis(5))
                    .expect("codel"),
            ),
            4 => Aqm::Pie(
                PieConfig::new(
                    Duration::from_millis(1),
                    Duration::from_millis(2),
                    0.125,
                    1.25,
                    Duration::ZERO,
                )
                .expect("pie"),
            ),
            _ => return s,
        };
        s.with_aqm(a).with_ecn(ecn)
    }

    /// (time ns, queue, length, ECN-capable) arrivals into flow queues
    /// `(aqm, ecn, slots, weight)` of a 2 Mbit/s pipe under scheduler
    /// `sched`: the outputs, the enqueue verdicts, the engine.
    fn run(
        sched: usize,
        queues: &[(u8, bool, u32, u32)],
        arrivals: &[(u64, usize, u32, bool)],
    ) -> (Engine, Vec<Output>, Vec<Verdict>, Vec<QueueId>) {
        let mut e = Engine::new(EngineOptions {
            max_packets: 400,
            seed: 3,
        });
        let p = e.add_scheduled_pipe(
            PipeConfig::new(
                Rate::from_bps(2_000_000),
                Duration::from_millis(1),
                QueueLimit::Slots(50),
            )
            .expect("pipe"),
            SchedConfig::of(SCHEDULERS[sched].default),
            1,
        );
        let qs: Vec<QueueId> = queues
            .iter()
            .map(|&(a, ecn, slots, w)| {
                e.add_queue(p, flow_spec(a, ecn, slots, w), None, 1)
                    .expect("q")
            })
            .collect();
        let (mut out, mut verdicts) = (Vec::new(), Vec::new());
        for (k, &(t, q, len, ect)) in arrivals.iter().enumerate() {
            e.advance(Instant(t), &mut out);
            let mut pkt = Packet::new(len);
            pkt.tag = k as u64;
            pkt.flow = q as u32;
            pkt.born = Instant(t);
            if ect {
                pkt.flags |= Packet::ECT;
            }
            verdicts.push(e.enqueue_to_queue(Instant(t), pkt, qs[q]));
        }
        while let Some(t) = e.next_deadline() {
            e.advance(t, &mut out);
        }
        (e, out, verdicts, qs)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// For every scheduler and random flow queues with random queue
        /// management under random arrivals: every packet is delivered or
        /// dropped exactly once with its reason; each queue's counters add
        /// up (`arrivals = served + drops + aqm_drops`, nothing left) and
        /// its `aqm` drops are the engine's and the pipe's; ECN marks only
        /// where `ecn` is set; outputs come out in time order; each queue's
        /// packets leave in order; and the same run gives the same outputs.
        /// Passing proves flow-queue queue management, CoDel's head drops
        /// through the schedulers included, loses, duplicates and reorders
        /// nothing and reports every drop at its instant.
        #[test]
        fn flow_queue_aqm_accounts_for_every_packet(
            sched in 0..SCHEDULERS.len(),
            queues in proptest::collection::vec((0u8..5, any::<bool>(), 1u32..30, 1u32..5), 1..4),
            raw in proptest::collection::vec((0u64..3_000_000, 0usize..4, 40u32..3000, any::<bool>()), 1..300),
        ) {
            let mut t = 0;
            let arrivals: Vec<(u64, usize, u32, bool)> = raw
                .iter()
                .map(|&(g, q, l, ect)| { t += g / 4; (t, q % queues.len(), l, ect) })
                .collect();
            let (e, out, verdicts, qs) = run(sched, &queues, &arrivals);
            let st = *e.stats();
            let mut seen = vec![0u8; arrivals.len()];
            for o in out.iter().filter(|o| !matches!(o.fate, Fate::Duplicated { .. })) {
                seen[o.pkt.tag as usize] += 1;
            }
            for (k, v) in verdicts.iter().enumerate() {
                if matches!(v, Verdict::Dropped(_)) {
                    seen[k] += 1;
                }
            }
            prop_assert!(seen.iter().all(|&c| c == 1), "{:?}", seen);
            prop_assert!(out.windows(2).all(|w| w[0].at <= w[1].at), "outputs in time order");
            let mut aqm = 0;
            for (i, q) in qs.iter().enumerate() {
                let s = e.queue_stats(*q).expect("q").flows;
                prop_assert_eq!(s.arrivals, s.served + s.drops + s.aqm_drops);
                prop_assert_eq!(s.backlog, 0);
                if queues[i].0 == 0 || !queues[i].1 {
                    prop_assert_eq!(s.ecn_marks, 0);
                }
                aqm += s.aqm_drops;
                let tags: Vec<u64> = out
                    .iter()
                    .filter(|o| o.fate == Fate::Delivered && o.pkt.flow == i as u32)
                    .map(|o| o.pkt.tag)
                    .collect();
                prop_assert!(tags.windows(2).all(|w| w[0] < w[1]), "queue {} reordered", i);
            }
            prop_assert_eq!(st.dropped_aqm, aqm);
            let pipe_aqm = out
                .iter()
                .filter(|o| matches!(o.fate, Fate::Dropped { reason: DropReason::Aqm, .. }))
                .count() as u64
                + verdicts.iter().filter(|v| **v == Verdict::Dropped(DropReason::Aqm)).count() as u64;
            prop_assert_eq!(pipe_aqm, aqm);
            let (_, out2, verdicts2, _) = run(sched, &queues, &arrivals);
            prop_assert_eq!(out, out2);
            prop_assert_eq!(verdicts, verdicts2);
        }
    }
}
