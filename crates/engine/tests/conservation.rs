//! Accounting properties of the engine under random configurations and
//! traffic (proptest): nothing is lost silently, nothing leaves early, and
//! the same seed gives the same outputs.
//!
//! * conservation: `offered + duplicated = delivered + dropped + inside`,
//!   and every dropped packet is reported once, with its reason (tail drop,
//!   loss model, memory, AQM at arrival or at dequeue, lost on the link);
//! * causality: no packet leaves before `born + transmission + minimum
//!   delay` of its route;
//! * queue bounds hold at every pipe;
//! * determinism: a second engine with the same seed gives identical outputs;
//! * the bytes inside the engine (`in_flight_bytes`, an event log's
//!   backlog) are those accepted and copied less those that left, at
//!   every step.

use pipelab_engine::config::{Aqm, JitterOrder, PipeConfig, QueueLimit};
use pipelab_engine::engine::{DropReason, EngineOptions, Fate, Output};
use pipelab_engine::models::{
    CodelConfig, DelayDist, Distribution, DuplicateConfig, LossConfig, PieConfig, Probability,
    Profile, QueueMeasure, RedConfig, ReorderConfig, UniformLoss,
};
use pipelab_engine::{Duration, Engine, Instant, Packet, Rate, Verdict};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct PipeParams {
    bw: u64,
    delay_us: u64,
    jitter_us: u64,
    slots: u32,
    loss: f64,
    dup: f64,
    reorder: f64,
    allow: bool,
    /// 0: none, 1: RED, 2: GRED, 3: CoDel, 4: PIE.
    aqm: u8,
    /// A MAC profile that loses `profile_loss` of the packets.
    profile_loss: Option<f64>,
}

/// A MAC profile with extra airtimes up to 1 ms and loss level `1 − loss`.
fn profile(loss: f64) -> Profile {
    let p = |x: f64| Probability::new(x).expect("probability");
    let mut b = Profile::builder();
    b.loss_level(p(1.0 - loss));
    for (prob, us) in [(0.0, 0), (0.5, 100), (1.0, 1000)] {
        b.point(p(prob), Duration::from_micros(us)).expect("point");
    }
    b.build().expect("profile")
}

fn pipe_params() -> impl Strategy<Value = PipeParams> {
    (
        prop_oneof![Just(0u64), 100_000u64..50_000_000],
        0u64..20_000,
        0u64..5_000,
        1u32..40,
        prop_oneof![Just(0.0), 0.0..0.3f64],
        prop_oneof![Just(0.0), 0.0..0.3f64],
        prop_oneof![Just(0.0), 0.0..0.5f64],
        any::<bool>(),
        0u8..5,
        proptest::option::of(0.0..0.3f64),
    )
        .prop_map(
            |(bw, delay_us, jitter_us, slots, loss, dup, reorder, allow, aqm, profile_loss)| {
                PipeParams {
                    bw,
                    delay_us,
                    jitter_us: jitter_us.min(delay_us),
                    slots,
                    loss,
                    dup,
                    reorder,
                    allow,
                    aqm,
                    profile_loss,
                }
            },
        )
}

fn build(p: &PipeParams) -> PipeConfig {
    let prob = |x: f64| Probability::new(x).expect("probability");
    let mut c = PipeConfig::new(
        Rate(p.bw),
        Duration::from_micros(p.delay_us),
        QueueLimit::Slots(p.slots),
    )
    .expect("config");
    if p.jitter_us > 0 {
        let d = DelayDist::new(
            Duration::from_micros(p.delay_us),
            Duration::from_micros(p.jitter_us),
            Probability::ZERO,
            Distribution::Uniform,
        )
        .expect("dist");
        let order = if p.allow {
            JitterOrder::Allow
        } else {
            JitterOrder::Keep
        };
        c = c.with_jitter(d, order);
    }
    if p.loss > 0.0 {
        c = c.with_loss(LossConfig::Uniform(UniformLoss::new(
            prob(p.loss),
            Probability::ZERO,
        )));
    }
    if p.dup > 0.0 {
        c = c.with_duplicate(DuplicateConfig::new(prob(p.dup), Probability::ZERO));
    }
    if p.reorder > 0.0 {
        c = c.with_reorder(ReorderConfig::new(prob(p.reorder), Probability::ZERO, 1));
    }
    let slots = QueueMeasure::Slots;
    let min_th = (p.slots / 4) as u64;
    let max_th = min_th + 1 + (p.slots / 2) as u64;
    match p.aqm {
        1 => {
            let r = RedConfig::red(0.2, min_th, max_th, 0.5, slots).expect("red");
            c = c.with_aqm(Aqm::Red(r));
        }
        2 => {
            let r = RedConfig::gred(0.2, min_th, max_th, 0.5, slots).expect("gred");
            c = c.with_aqm(Aqm::Red(r));
        }
        3 => {
            let codel = CodelConfig::new(Duration::from_micros(500), Duration::from_millis(5));
            c = c.with_aqm(Aqm::Codel(codel.expect("codel")));
        }
        4 => {
            let pie = PieConfig::new(
                Duration::from_micros(500),
                Duration::from_millis(1),
                0.125,
                1.25,
                Duration::ZERO,
            );
            c = c.with_aqm(Aqm::Pie(pie.expect("pie")));
        }
        _ => {}
    }
    if let Some(l) = p.profile_loss {
        c = c.with_profile(profile(l));
    }
    c
}

fn run(
    pipes: &[PipeParams],
    arrivals: &[(u64, u32)],
    seed: u64,
) -> (Engine, Vec<Output>, Vec<Verdict>) {
    let mut e = Engine::new(EngineOptions {
        max_packets: 500,
        seed,
    });
    let ids: Vec<_> = pipes.iter().map(|p| e.add_pipe(build(p))).collect();
    let r = e.add_route(&ids).expect("route");
    let mut out = Vec::new();
    let mut verdicts = Vec::new();
    // Bytes inside as the outputs tell: accepted and copied, less what
    // left; the engine's own count must agree after every advance (what
    // an arrival did, a copy made, is reported by the next one).
    let mut inside: i64 = 0;
    let mut seen = 0;
    let mut settle = |out: &Vec<Output>, inside: &mut i64| {
        for o in &out[seen..] {
            match o.fate {
                Fate::Duplicated { .. } => *inside += o.pkt.len as i64,
                _ => *inside -= o.pkt.len as i64,
            }
        }
        seen = out.len();
    };
    for (k, &(t, len)) in arrivals.iter().enumerate() {
        e.advance(Instant(t), &mut out);
        settle(&out, &mut inside);
        assert_eq!(e.in_flight_bytes() as i64, inside, "bytes inside");
        let mut p = Packet::new(len);
        p.born = Instant(t);
        p.tag = k as u64;
        let v = e.enqueue(Instant(t), p, r);
        if v == Verdict::Queued {
            inside += len as i64;
        }
        verdicts.push(v);
        for (i, id) in ids.iter().enumerate() {
            let st = e.pipe_stats(*id).expect("stats");
            assert!(st.backlog <= pipes[i].slots, "queue bound of pipe {i}");
        }
    }
    while let Some(d) = e.next_deadline() {
        e.advance(d, &mut out);
    }
    settle(&out, &mut inside);
    assert_eq!(
        (e.in_flight_bytes(), inside),
        (0, 0),
        "nothing inside at the end"
    );
    (e, out, verdicts)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn nothing_is_lost_silently_and_runs_are_reproducible(
        pipes in proptest::collection::vec(pipe_params(), 1..4),
        gaps in proptest::collection::vec((0u64..2_000_000, 40u32..1500), 1..300),
        seed in any::<u64>(),
    ) {
        let mut t = 0;
        let arrivals: Vec<(u64, u32)> = gaps.iter().map(|&(g, l)| { t += g; (t, l) }).collect();
        let (e, out, verdicts) = run(&pipes, &arrivals, seed);
        let st = *e.stats();
        let refused = verdicts.iter().filter(|v| matches!(v, Verdict::Dropped(_))).count() as u64;
        let delivered = out.iter().filter(|o| o.fate == Fate::Delivered).count() as u64;
        let copies = out.iter().filter(|o| matches!(o.fate, Fate::Duplicated { .. })).count() as u64;
        prop_assert_eq!(copies, st.duplicated);
        let dropped_inside = out.len() as u64 - delivered - copies;
        prop_assert_eq!(e.in_flight(), 0);
        prop_assert_eq!(st.offered, arrivals.len() as u64);
        prop_assert_eq!(st.delivered, delivered);
        prop_assert_eq!(st.offered + st.duplicated, delivered + refused + dropped_inside);
        prop_assert_eq!(
            st.dropped_queue + st.dropped_memory + st.dropped_loss + st.dropped_aqm + st.dropped_link,
            refused + dropped_inside
        );
        let by_reason = |r: DropReason| out.iter().filter(|o| matches!(o.fate, Fate::Dropped { reason, .. } if reason == r)).count() as u64
            + verdicts.iter().filter(|v| **v == Verdict::Dropped(r)).count() as u64;
        prop_assert_eq!(by_reason(DropReason::Loss), st.dropped_loss);
        prop_assert_eq!(by_reason(DropReason::QueueFull), st.dropped_queue);
        prop_assert_eq!(by_reason(DropReason::Aqm), st.dropped_aqm);
        prop_assert_eq!(by_reason(DropReason::Link), st.dropped_link);
        prop_assert_eq!(by_reason(DropReason::PoolFull), st.dropped_memory);
        // Drops leave the engine no earlier than the packet was born, and
        // outputs come out in time order.
        for o in &out {
            prop_assert!(o.at >= o.pkt.born);
        }
        // Causality: at least transmission + (delay - jitter) per hop, no
        // early exit (a reordered packet skips only its delay).
        for o in out.iter().filter(|o| o.fate == Fate::Delivered) {
            let mut min = 0u64;
            for p in &pipes {
                min += (o.pkt.len as u64 * 8 * 1_000_000_000).checked_div(p.bw).unwrap_or(0);
                if p.reorder == 0.0 {
                    min += (p.delay_us - p.jitter_us) * 1000;
                }
            }
            prop_assert!(o.at.0 + pipes.len() as u64 >= o.pkt.born.0 + min, "left early");
        }
        let (_, out2, verdicts2) = run(&pipes, &arrivals, seed);
        prop_assert_eq!(out, out2);
        prop_assert_eq!(verdicts, verdicts2);
    }
}
