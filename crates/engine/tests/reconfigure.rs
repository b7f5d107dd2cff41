//! The primitives a reconciler needs, in virtual time: a flow queue's new
//! weight, limit and queue management on live instances; a retired pipe
//! draining to idle; idle pipes and queues reset for reuse.

use pipelab_engine::engine::{Fate, Output, QueueId, RouteError, Verdict};
use pipelab_engine::models::{CodelConfig, LossConfig, Probability, UniformLoss};
use pipelab_engine::sched::{FlowSpec, SchedConfig, SchedKind, WeightUse, SCHEDULERS};
use pipelab_engine::{
    Aqm, Duration, Engine, EngineOptions, FlowKey, FlowMask, Instant, Packet, PipeConfig, PipeIdx,
    QueueLimit, Rate,
};
use std::net::{IpAddr, Ipv4Addr};

fn at(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

fn cfg(bps: u64, delay_ms: u64, slots: u32) -> PipeConfig {
    PipeConfig::new(
        Rate::from_bps(bps),
        Duration::from_millis(delay_ms),
        QueueLimit::Slots(slots),
    )
    .expect("valid")
}

fn pkt(tag: u64, host: u8, born: Instant) -> Packet {
    let mut p = Packet::new(1000);
    p.tag = tag;
    p.born = born;
    p.key = FlowKey {
        proto: 17,
        src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, host)),
        ..FlowKey::default()
    };
    p
}

/// A source of 1000-byte packets at `pps` into flow queue `q`, from
/// `from_ms` to `to_ms`.
#[derive(Clone, Copy)]
struct Cbr {
    q: QueueId,
    pps: u64,
    host: u8,
    from_ms: u64,
    to_ms: u64,
}

/// A change made at an instant (ms) of a run.
type Hook<'a> = (u64, &'a mut dyn FnMut(&mut Engine));

/// Runs the sources, calling each hook `(ms, f)` (in time order) before the
/// arrivals of that instant, and drains. Returns every output.
fn run(e: &mut Engine, srcs: &[Cbr], hooks: &mut [Hook<'_>]) -> Vec<Output> {
    let mut next: Vec<Instant> = srcs.iter().map(|s| at(s.from_ms)).collect();
    let mut out = Vec::new();
    let mut tag = 0;
    let mut h = 0;
    loop {
        let due = next
            .iter()
            .enumerate()
            .filter(|&(i, &t)| t < at(srcs[i].to_ms))
            .min_by_key(|&(i, &t)| (t, i))
            .map(|(i, &t)| (i, t));
        let hook = hooks.get(h).map(|(ms, _)| at(*ms));
        match (due, hook) {
            (_, Some(t)) if due.is_none_or(|(_, d)| t <= d) => {
                e.advance(t, &mut out);
                (hooks[h].1)(e);
                h += 1;
            }
            (Some((i, t)), _) => {
                e.advance(t, &mut out);
                let s = srcs[i];
                let p = pkt(tag, s.host, t);
                tag += 1;
                let v = e.enqueue_to_queue(t, p, s.q);
                if let Verdict::Dropped(reason) = v {
                    out.push(Output {
                        pkt: p,
                        at: t,
                        fate: Fate::Dropped {
                            pipe: PipeIdx(u32::MAX),
                            reason,
                        },
                    });
                }
                next[i] = t + Duration(1_000_000_000 / s.pps);
            }
            (None, _) => break,
        }
    }
    while let Some(t) = e.next_deadline() {
        e.advance(t, &mut out);
    }
    out
}

/// Delivered bits/s of source `host` by delivery instant in `[a, b)` ms.
fn tput(out: &[Output], host: u8, a: u64, b: u64) -> f64 {
    let bytes: u64 = out
        .iter()
        .filter(|o| o.fate == Fate::Delivered && o.at >= at(a) && o.at < at(b))
        .filter(|o| o.pkt.key.src == IpAddr::V4(Ipv4Addr::new(10, 0, 0, host)))
        .map(|o| o.pkt.len as u64)
        .sum();
    bytes as f64 * 8.0 / ((b - a) as f64 / 1e3)
}

/// Median time in the pipe (ms) of `host`'s delivered packets born in
/// `[a, b)` ms.
fn median_delay(out: &[Output], host: u8, a: u64, b: u64) -> f64 {
    let mut v: Vec<f64> = out
        .iter()
        .filter(|o| o.fate == Fate::Delivered && o.pkt.born >= at(a) && o.pkt.born < at(b))
        .filter(|o| o.pkt.key.src == IpAddr::V4(Ipv4Addr::new(10, 0, 0, host)))
        .map(|o| (o.at - o.pkt.born).as_millis_f64())
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn spec(w: u32, slots: u32) -> FlowSpec {
    FlowSpec::new(w, QueueLimit::Slots(slots)).expect("spec")
}

/// Two flow queues of weight 1 on a 4 Mbit/s pipe, both fed 3 Mbit/s; at
/// 10 s queue A is reconfigured to weight 3 (1000-byte packets: byte and
/// packet shares agree). Passing proves, for every scheduler of the
/// registry that shares by weight (`WeightUse::Bytes` or `Packets`), that the new weight
/// applies to the live, backlogged instance: A and B get 2 and 2 Mbit/s
/// before, 3 and 1 Mbit/s from 12 s on (each within 1 %), and the packets A
/// held at the change are kept (its backlog is the same right after).
#[test]
fn a_new_weight_applies_to_a_backlogged_flow_queue() {
    for e in SCHEDULERS {
        if !matches!(e.weight, WeightUse::Bytes | WeightUse::Packets) {
            continue;
        }
        let mut eng = Engine::new(EngineOptions::default());
        let p = eng.add_scheduled_pipe(cfg(4_000_000, 0, 50), SchedConfig::of(e.default), 1);
        let qa = eng.add_queue(p, spec(1, 100), None, 1).expect("a");
        let qb = eng.add_queue(p, spec(1, 100), None, 1).expect("b");
        let srcs = [
            Cbr {
                q: qa,
                pps: 375,
                host: 1,
                from_ms: 0,
                to_ms: 20_000,
            },
            Cbr {
                q: qb,
                pps: 375,
                host: 2,
                from_ms: 0,
                to_ms: 20_000,
            },
        ];
        let mut kept = (0, 0);
        let mut change = |e: &mut Engine| {
            let before = e.queue_stats(qa).expect("a").flows.backlog;
            e.reconfigure_queue(qa, spec(3, 100)).expect("reconfigure");
            kept = (before, e.queue_stats(qa).expect("a").flows.backlog);
        };
        let out = run(&mut eng, &srcs, &mut [(10_000, &mut change)]);
        let (a0, b0) = (tput(&out, 1, 2_000, 10_000), tput(&out, 2, 2_000, 10_000));
        let (a1, b1) = (tput(&out, 1, 12_000, 20_000), tput(&out, 2, 12_000, 20_000));
        println!(
            "{}: before {a0:.0} {b0:.0}, after {a1:.0} {b1:.0}; backlog {kept:?}",
            e.name
        );
        let near = |x: f64, want: f64| (x - want).abs() <= 0.01 * want;
        assert!(near(a0, 2e6) && near(b0, 2e6), "{}", e.name);
        assert!(near(a1, 3e6) && near(b1, 1e6), "{}", e.name);
        assert!(kept.0 > 0 && kept.0 == kept.1, "{}: {kept:?}", e.name);
    }
}

/// Queue A (WF2Q+, beside a greedy B) is full (99 or 100 packets waiting)
/// when its limit is lowered to 10. Passing proves the packets are kept
/// (every packet of A's born before the change and leaving after it is
/// delivered, as many as it held at least), arrivals are tail-dropped
/// while it is above the new limit, and it then stays at or below 10.
#[test]
fn a_lowered_limit_keeps_the_queued_packets() {
    let mut e = Engine::new(EngineOptions::default());
    let p = e.add_scheduled_pipe(cfg(4_000_000, 0, 50), SchedConfig::of(SchedKind::Wf2q), 1);
    let qa = e.add_queue(p, spec(1, 100), None, 1).expect("a");
    let qb = e.add_queue(p, spec(1, 100), None, 1).expect("b");
    let srcs = [
        Cbr {
            q: qa,
            pps: 375,
            host: 1,
            from_ms: 0,
            to_ms: 20_000,
        },
        Cbr {
            q: qb,
            pps: 375,
            host: 2,
            from_ms: 0,
            to_ms: 20_000,
        },
    ];
    let mut held = 0;
    let mut change = |e: &mut Engine| {
        held = e.queue_stats(qa).expect("a").flows.backlog;
        e.reconfigure_queue(qa, spec(1, 10)).expect("reconfigure");
    };
    let mut max_after = 0;
    let mut watch = |e: &mut Engine| max_after = e.queue_stats(qa).expect("a").flows.backlog;
    let out = run(
        &mut e,
        &srcs,
        &mut [(10_000, &mut change), (15_000, &mut watch)],
    );
    assert!(held >= 99, "{held}");
    let a_at_change: Vec<&Output> = out
        .iter()
        .filter(|o| o.pkt.key.src == IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)))
        .filter(|o| o.pkt.born < at(10_000) && o.at >= at(10_000))
        .collect();
    assert!(
        a_at_change.len() >= held as usize,
        "the held packets leave after the change"
    );
    assert!(a_at_change.iter().all(|o| o.fate == Fate::Delivered));
    assert!(max_after <= 10, "{max_after}");
    let s = e.queue_stats(qa).expect("a").flows;
    assert_eq!(
        s.arrivals,
        s.served + s.drops + s.aqm_drops + s.backlog as u64
    );
}

/// Queue A, fed 2.4 Mbit/s beside B on a 4 Mbit/s WF2Q+ pipe, only
/// tail-drops at 200 packets and so holds a 0.8 s standing queue; at 20 s
/// it gets CoDel (5 ms, 100 ms). Passing proves queue management added to a
/// live instance takes hold: no `aqm` drop before the change, CoDel drops
/// after it, and A's median delay falls from about 800 ms to below 30 ms
/// (CoDel's sawtooth against a 20 % unresponsive overload) once the
/// standing queue is gone (from 30 s).
#[test]
fn queue_management_added_to_a_live_flow_queue_takes_hold() {
    let mut e = Engine::new(EngineOptions::default());
    let p = e.add_scheduled_pipe(cfg(4_000_000, 0, 50), SchedConfig::of(SchedKind::Wf2q), 1);
    let qa = e.add_queue(p, spec(1, 200), None, 1).expect("a");
    let qb = e.add_queue(p, spec(1, 50), None, 1).expect("b");
    let srcs = [
        Cbr {
            q: qa,
            pps: 300,
            host: 1,
            from_ms: 0,
            to_ms: 45_000,
        },
        Cbr {
            q: qb,
            pps: 300,
            host: 2,
            from_ms: 0,
            to_ms: 45_000,
        },
    ];
    let codel = Aqm::Codel(
        CodelConfig::new(Duration::from_millis(5), Duration::from_millis(100)).expect("ok"),
    );
    let mut aqm_before = u64::MAX;
    let mut change = |e: &mut Engine| {
        aqm_before = e.queue_stats(qa).expect("a").flows.aqm_drops;
        e.reconfigure_queue(qa, spec(1, 200).with_aqm(codel))
            .expect("reconfigure");
    };
    let out = run(&mut e, &srcs, &mut [(20_000, &mut change)]);
    let (before, after) = (
        median_delay(&out, 1, 10_000, 20_000),
        median_delay(&out, 1, 30_000, 45_000),
    );
    println!("A's median delay {before:.1} ms before CoDel, {after:.1} ms after");
    assert_eq!(aqm_before, 0);
    assert!(e.queue_stats(qa).expect("a").flows.aqm_drops > 0);
    assert!((before - 800.0).abs() < 10.0, "{before}");
    assert!(after < 30.0, "{after}");
}

/// A two-hop route through pipes P (1 Mbit/s, 50 ms, 50 slots) and Q. P is
/// overloaded for 2 s, then no longer fed (retired). Passing proves a
/// retired pipe can be watched draining: `pipe_is_idle` is false while
/// `pipe_totals` shows packets inside and turns true exactly when the last
/// one has left it (its last departure's instant); a busy pipe cannot be
/// reset; an idle one is reset to a fresh pipe with zeroed counters and a
/// new configuration, which the old route still crosses; and with the same
/// stage it draws the same random stream as a pipe added fresh to a new
/// engine (identical fates and delays under 10 % loss).
#[test]
fn a_retired_pipe_drains_to_idle_and_is_reset_for_reuse() {
    let mut e = Engine::new(EngineOptions::default());
    let p = e.add_pipe_with_stage(cfg(1_000_000, 50, 50), 1);
    let q = e.add_pipe_with_stage(cfg(100_000_000, 1, 50), 2);
    let r = e.add_route(&[p, q]).expect("route");
    let mut out = Vec::new();
    for i in 0..400u64 {
        let t = at(5 * i);
        e.advance(t, &mut out);
        let _ = e.enqueue(t, pkt(i, 1, t), r);
    }
    assert!(!e.pipe_is_idle(p));
    assert_eq!(
        e.reset_pipe(p, cfg(2_000_000, 10, 50), None, 7),
        Err(RouteError::PipeBusy(p))
    );
    let mut last_inside = Instant::ZERO;
    while let Some(t) = e.next_deadline() {
        let inside = {
            let s = e.pipe_totals(p).expect("p");
            s.backlog + s.in_delay_line
        };
        assert_eq!(e.pipe_is_idle(p), inside == 0, "at {t}");
        if inside > 0 {
            last_inside = t;
        }
        e.advance(t, &mut out);
    }
    assert!(e.pipe_is_idle(p));
    let s = *e.pipe_stats(p).expect("p");
    assert_eq!(s.arrivals, s.departures + s.drops);
    let last_exit = out
        .iter()
        .filter(|o| o.fate == Fate::Delivered)
        .map(|o| Instant(o.at.as_nanos() - 1_080_000))
        .max()
        .expect("deliveries");
    assert_eq!(last_inside, last_exit, "idle from P's last departure on");

    let lossy = |bps| {
        cfg(bps, 10, 50).with_loss(LossConfig::Uniform(UniformLoss::new(
            Probability::new(0.1).expect("p"),
            Probability::ZERO,
        )))
    };
    e.reset_pipe(p, lossy(2_000_000), None, 7).expect("reset");
    assert_eq!(e.pipe_stats(p).expect("p").arrivals, 0);
    assert_eq!(e.pipe_config(p).expect("p").bw(), Rate::from_bps(2_000_000));
    let t0 = e.now() + Duration::from_secs(1);
    let mut fresh = Engine::new(EngineOptions::default());
    let fp = fresh.add_pipe_with_stage(lossy(2_000_000), 7);
    let fq = fresh.add_pipe_with_stage(cfg(100_000_000, 1, 50), 2);
    let fr = fresh.add_route(&[fp, fq]).expect("route");
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut verdicts = (Vec::new(), Vec::new());
    for i in 0..200u64 {
        let (ta, tb) = (t0 + Duration::from_millis(5 * i), at(5 * i));
        e.advance(ta, &mut a);
        fresh.advance(tb, &mut b);
        verdicts.0.push(e.enqueue(ta, pkt(i, 1, ta), r));
        verdicts.1.push(fresh.enqueue(tb, pkt(i, 1, tb), fr));
    }
    assert_eq!(verdicts.0, verdicts.1);
    assert!(
        verdicts.0.iter().any(|v| *v != Verdict::Queued),
        "the loss model draws"
    );
    for (eng, v) in [(&mut e, &mut a), (&mut fresh, &mut b)] {
        while let Some(t) = eng.next_deadline() {
            eng.advance(t, v);
        }
    }
    let story = |v: &[Output]| -> Vec<(u64, Duration, Fate)> {
        v.iter()
            .map(|o| (o.pkt.tag, o.at - o.pkt.born, o.fate))
            .collect()
    };
    let (sa, sb) = (story(&a), story(&b));
    assert_eq!(sa.len(), sb.len());
    for (x, y) in sa.iter().zip(&sb) {
        assert_eq!((x.0, x.1), (y.0, y.1));
        assert_eq!(
            matches!(x.2, Fate::Delivered),
            matches!(y.2, Fate::Delivered)
        );
    }
}

/// A dynamic pipe (one instance per source) and a scheduled pipe with a
/// masked flow queue, both drained, are reset. Passing proves the mask and
/// instances are cleared (no instance accounting, zeroed totals), a mask
/// set again reuses the old instances' internal pipes (the engine does not
/// grow), the scheduled pipe keeps its default queue's index with zeroed
/// counters, and the flow queue's old instances are folded into its totals
/// (as if expired) while it gets new instances in the new scheduler.
#[test]
fn resetting_dynamic_and_scheduled_pipes_reuses_their_slots() {
    let mut e = Engine::new(EngineOptions::default());
    let mask = FlowMask {
        src_ip: u32::MAX,
        ..FlowMask::default()
    };
    let d = e.add_pipe_with_stage(cfg(1_000_000, 5, 50), 1);
    e.set_pipe_mask(d, mask, 64).expect("mask");
    let s = e.add_scheduled_pipe(cfg(4_000_000, 5, 50), SchedConfig::of(SchedKind::Drr), 2);
    let dq = e.default_queue(s).expect("default");
    let q = e.add_queue(s, spec(1, 50), Some(mask), 64).expect("queue");
    let rd = e.pipe_route(d).expect("route");
    let mut out = Vec::new();
    for i in 0..60u64 {
        let t = at(2 * i);
        e.advance(t, &mut out);
        let _ = e.enqueue(t, pkt(i, (i % 3) as u8 + 1, t), rd);
        let _ = e.enqueue_to_queue(t, pkt(i, (i % 3) as u8 + 1, t), q);
    }
    while let Some(t) = e.next_deadline() {
        e.advance(t, &mut out);
    }
    assert_eq!(e.pipe_instances(d).expect("dynamic").live, 3);
    let count = e.pipe_count();
    e.reset_pipe(d, cfg(1_000_000, 5, 50), None, 1)
        .expect("reset");
    assert_eq!(e.pipe_instances(d), None);
    assert_eq!(e.pipe_totals(d).expect("d").arrivals, 0);
    e.set_pipe_mask(d, mask, 64).expect("mask again");
    let t = e.now() + Duration::from_secs(1);
    e.advance(t, &mut out);
    for h in 1..=3 {
        assert_eq!(e.enqueue(t, pkt(100 + h as u64, h, t), rd), Verdict::Queued);
    }
    assert_eq!(e.pipe_instances(d).expect("dynamic").live, 3);
    assert_eq!(e.pipe_count(), count, "old instances reused");

    let before = e.queue_stats(q).expect("q");
    assert_eq!(before.instances.live, 3);
    e.reset_pipe(
        s,
        cfg(4_000_000, 5, 20),
        Some(SchedConfig::of(SchedKind::Wf2q)),
        2,
    )
    .expect("reset scheduled");
    assert_eq!(e.default_queue(s), Some(dq));
    assert_eq!(e.queue_stats(dq).expect("dq").flows.arrivals, 0);
    let after = e.queue_stats(q).expect("q");
    assert_eq!(after.flows.arrivals, before.flows.arrivals);
    assert_eq!((after.instances.live, after.instances.expired), (0, 3));
    assert_eq!(e.enqueue_to_queue(t, pkt(200, 1, t), q), Verdict::Queued);
    assert_eq!(e.queue_stats(q).expect("q").instances.live, 1);
}

/// Flow queue Q on pipe S1 is moved, idle, to pipe S2. Passing proves a
/// busy queue and a default queue are refused, an idle one is reset
/// (zeroed counters, no instance) and its packets then cross S2.
#[test]
fn an_idle_flow_queue_is_reset_onto_another_pipe() {
    let mut e = Engine::new(EngineOptions::default());
    let s1 = e.add_scheduled_pipe(cfg(1_000_000, 5, 50), SchedConfig::of(SchedKind::Drr), 1);
    let s2 = e.add_scheduled_pipe(cfg(8_000_000, 20, 50), SchedConfig::of(SchedKind::Qfq), 2);
    let q = e.add_queue(s1, spec(1, 50), None, 1).expect("queue");
    let mut out = Vec::new();
    for i in 0..10u64 {
        let _ = e.enqueue_to_queue(Instant::ZERO, pkt(i, 1, Instant::ZERO), q);
    }
    assert!(!e.queue_is_idle(q));
    assert_eq!(
        e.reset_queue(q, s2, spec(2, 50), None, 1),
        Err(RouteError::QueueBusy(q))
    );
    let dq = e.default_queue(s1).expect("default");
    assert_eq!(
        e.reset_queue(dq, s2, spec(1, 50), None, 1),
        Err(RouteError::DefaultQueue(dq))
    );
    while let Some(t) = e.next_deadline() {
        e.advance(t, &mut out);
    }
    assert!(e.queue_is_idle(q));
    e.reset_queue(q, s2, spec(2, 50), None, 1).expect("reset");
    let st = e.queue_stats(q).expect("q");
    assert_eq!((st.flows.arrivals, st.instances.live), (0, 0));
    let t = e.now();
    assert_eq!(e.enqueue_to_queue(t, pkt(99, 1, t), q), Verdict::Queued);
    out.clear();
    while let Some(t) = e.next_deadline() {
        e.advance(t, &mut out);
    }
    assert_eq!(out.len(), 1);
    // 1000 bytes at 8 Mbit/s, then 20 ms: S2's timing, not S1's.
    assert_eq!(out[0].at - t, Duration::from_millis(21));
    assert_eq!(e.pipe_stats(s2).expect("s2").departures, 1);
    assert_eq!(e.queue_stats(q).expect("q").flows.served, 1);
}
