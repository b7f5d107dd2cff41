//! Engines built alike, each doing part of the work, do what one engine
//! does (the engine's half of the partitioned run, module documentation
//! "Partitions"): an early-exit pipe hands each packet out at the end of
//! its transmission with its exit instant, and the engine owning the next
//! hop takes it in at that instant in canonical order.

use pipelab_engine::config::QueueLimit;
use pipelab_engine::engine::{Fate, Handoff, Output};
use pipelab_engine::models::{DelayDist, Distribution, Probability};
use pipelab_engine::{
    Duration, Engine, EngineOptions, Instant, JitterOrder, Packet, PipeConfig, PipeIdx, Rate,
    RouteId, Verdict,
};

fn cfg(bw: u64, delay_ms: u64, jitter: bool, queue: u32) -> PipeConfig {
    let c = PipeConfig::new(
        Rate(bw),
        Duration::from_millis(delay_ms),
        QueueLimit::Slots(queue),
    )
    .expect("config");
    if jitter {
        let d = DelayDist::new(
            Duration::from_millis(delay_ms),
            Duration::from_millis(2),
            Probability::ZERO,
            Distribution::Normal,
        )
        .expect("dist");
        c.with_jitter(d, JitterOrder::Allow)
    } else {
        c
    }
}

/// Two routes A -> C and B -> C, A with jitter, C with a small queue.
fn build() -> (Engine, [RouteId; 2]) {
    let mut e = Engine::new(EngineOptions {
        seed: 9,
        ..EngineOptions::default()
    });
    let a = e.add_pipe_with_stage(cfg(8_000_000, 3, true, 100), 1);
    let b = e.add_pipe_with_stage(cfg(8_000_000, 3, false, 100), 2);
    let c = e.add_pipe_with_stage(cfg(6_000_000, 1, false, 4), 3);
    let r1 = e.add_route(&[a, c]).expect("route");
    let r2 = e.add_route(&[b, c]).expect("route");
    (e, [r1, r2])
}

/// Arrivals: both routes, 1000-byte packets every 1 ms for 1 s, tagged.
fn arrivals() -> Vec<(Instant, Packet, usize)> {
    let mut v = Vec::new();
    for k in 0..1000u64 {
        for r in 0..2 {
            let mut p = Packet::new(1000);
            p.tag = k * 2 + r as u64;
            v.push((Instant(k * 1_000_000), p, r));
        }
    }
    v
}

fn summary(out: &[Output]) -> Vec<(u64, u64, bool)> {
    let mut v: Vec<(u64, u64, bool)> = out
        .iter()
        .filter(|o| !matches!(o.fate, Fate::Duplicated { .. }))
        .map(|o| (o.at.0, o.pkt.tag, matches!(o.fate, Fate::Delivered)))
        .collect();
    v.sort_unstable();
    v
}

/// A pass proves an engine doing only pipes A and B (both early-exit)
/// and one doing only C, fed A's and B's hand-offs in canonical order,
/// deliver and drop exactly the packets one engine does, at the same
/// instants, and A's counters match after the run.
#[test]
fn two_engines_do_what_one_does() {
    let (mut one, routes) = build();
    let mut out1 = Vec::new();
    for (t, p, r) in arrivals() {
        one.advance(t, &mut out1);
        one.enqueue(t, p, routes[r]);
    }
    while let Some(t) = one.next_deadline() {
        one.advance(t, &mut out1);
    }

    let (mut up, routes) = build();
    for p in [0, 1] {
        up.set_early_exit(pipelab_engine::PipeIdx(p), true)
            .expect("pipe");
    }
    let mut out_up = Vec::new();
    let mut hand: Vec<Handoff> = Vec::new();
    for (t, p, r) in arrivals() {
        up.advance(t, &mut out_up);
        up.enqueue(t, p, routes[r]);
    }
    while let Some(t) = up.next_deadline() {
        up.advance(t, &mut out_up);
    }
    up.take_handoffs(&mut hand);
    assert!(out_up.is_empty(), "nothing leaves A and B but hand-offs");
    assert_eq!(hand.len(), 2000);
    hand.sort_by_key(|h| h.order());

    let (mut down, _) = build();
    let mut out2 = Vec::new();
    for h in &hand {
        down.advance_before(h.at, (h.at, h.key), &mut out2);
        if let Verdict::Dropped(reason) = down.enter(h.at, h.pkt, h.route, h.hop) {
            out2.push(Output {
                pkt: h.pkt,
                at: h.at,
                fate: Fate::Dropped {
                    pipe: PipeIdx(2),
                    reason,
                },
            });
        }
    }
    while let Some(t) = down.next_deadline() {
        down.advance(t, &mut out2);
    }
    let drops = out1
        .iter()
        .filter(|o| matches!(o.fate, Fate::Dropped { .. }))
        .count();
    assert!(drops > 0, "C's queue overflows, so order at ties matters");
    assert_eq!(summary(&out2), summary(&out1));
    let a1 = one.pipe_stats(PipeIdx(0)).copied();
    let a2 = up.pipe_stats(PipeIdx(0)).copied();
    assert_eq!(a1, a2, "A's counters");
    let c1 = one.pipe_stats(PipeIdx(2)).copied();
    let c2 = down.pipe_stats(PipeIdx(2)).copied();
    assert_eq!(c1, c2, "C's counters");
}

/// A retired pipe is reset for reuse (a reconfiguration's new pipe). A
/// pass proves an early-exit pipe, reset, still hands its packet on at
/// the end of the transmission (1 ms for 1000 bytes at 8 Mbit/s), with
/// the exit instant 3 ms later: a reset that kept the early flag but not
/// the wake-up at each transmission's end handed it on only at the exit
/// instant itself, too late for the partition owning the next hop.
#[test]
fn a_reset_early_exit_pipe_hands_on_at_the_transmission_end() {
    let (mut e, routes) = build();
    let a = PipeIdx(0);
    e.set_early_exit(a, true).expect("pipe");
    e.reset_pipe(a, cfg(8_000_000, 3, false, 100), None, 1)
        .expect("idle pipe reset");
    let mut p = Packet::new(1000);
    p.tag = 7;
    let mut out = Vec::new();
    assert_eq!(e.enqueue(Instant::ZERO, p, routes[0]), Verdict::Queued);
    e.advance(Instant(1_000_000), &mut out);
    let mut hand = Vec::new();
    e.take_handoffs(&mut hand);
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(hand.len(), 1, "handed on at the transmission's end");
    assert_eq!((hand[0].pkt.tag, hand[0].at), (7, Instant(4_000_000)));
}
