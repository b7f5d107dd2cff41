//! Virtual-time tests of the Dummynet pipe model (dummynet-revisited §3.1):
//! `T_i = (l_i + Q_i)/B + t_D`, tail drop, byte queues, pipes in series.
//! Every figure is exact: the engine has no tick and no clock.

use pipelab_engine::config::{PipeConfig, QueueLimit};
use pipelab_engine::engine::{DropReason, EngineOptions, Fate, Output};
use pipelab_engine::{Duration, Engine, Instant, Packet, Rate, RouteId, Verdict};

const MS: u64 = 1_000_000;

fn pipe(bw_bps: u64, delay_ns: u64, queue: QueueLimit) -> PipeConfig {
    PipeConfig::new(Rate(bw_bps), Duration(delay_ns), queue).expect("valid config")
}

/// Drive `engine` with `arrivals` (time, len, tag) into `route`, in virtual
/// time, until it is empty. Returns every output, in order.
fn run(
    engine: &mut Engine,
    route: RouteId,
    arrivals: &[(u64, u32)],
) -> (Vec<Output>, Vec<Verdict>) {
    let mut out = Vec::new();
    let mut verdicts = Vec::new();
    for (tag, &(t, len)) in arrivals.iter().enumerate() {
        // Serve everything due strictly before or at the arrival first.
        engine.advance(Instant(t), &mut out);
        let mut p = Packet::new(len);
        p.born = Instant(t);
        p.tag = tag as u64;
        verdicts.push(engine.enqueue(Instant(t), p, route));
    }
    while let Some(d) = engine.next_deadline() {
        engine.advance(d, &mut out);
    }
    (out, verdicts)
}

fn delays_ns(out: &[Output]) -> Vec<u64> {
    out.iter()
        .filter(|o| o.fate == Fate::Delivered)
        .map(|o| o.at.0 - o.pkt.born.0)
        .collect()
}

/// One packet of l bytes through bw B and delay tD takes exactly l·8/B + tD.
#[test]
fn one_packet_takes_transmission_plus_propagation() {
    for (len, bw, delay) in [
        (1000u32, 10_000_000u64, 20 * MS),
        (1500, 1_000_000, 0),
        (64, 3_000_000, 32 * MS),
        (1, 7, 1),
    ] {
        let mut e = Engine::default();
        let p = e.add_pipe(pipe(bw, delay, QueueLimit::Slots(50)));
        let r = e.pipe_route(p).expect("route");
        let (out, _) = run(&mut e, r, &[(5 * MS, len)]);
        assert_eq!(out.len(), 1);
        // l·8/B seconds = l·8·1e9/B ns, truncated to the nanosecond.
        let tx = len as u128 * 8 * 1_000_000_000 / bw as u128;
        assert_eq!(
            delays_ns(&out),
            vec![tx as u64 + delay],
            "len {len} bw {bw} delay {delay}"
        );
    }
}

/// 1000-byte packets at 500 pps through 10 Mbit/s + 20 ms: the link is never
/// busy when a packet arrives (0.8 ms of 2 ms), so every delay is 20.8 ms.
#[test]
fn cbr_below_capacity_sees_exactly_20_8_ms() {
    let mut e = Engine::default();
    let p = e.add_pipe(pipe(10_000_000, 20 * MS, QueueLimit::Slots(50)));
    let r = e.pipe_route(p).expect("route");
    let arrivals: Vec<(u64, u32)> = (0..5000).map(|k| (k * 2 * MS, 1000)).collect();
    let (out, _) = run(&mut e, r, &arrivals);
    let d = delays_ns(&out);
    assert_eq!(d.len(), 5000);
    assert!(d.iter().all(|&x| x == 20_800_000), "delays not all 20.8 ms");
}

/// 2000 pps of 1000 B (16 Mbit/s) into 10 Mbit/s with a 50-slot queue:
/// the delivered rate is 10 Mbit/s once the queue is full, drops are counted
/// and equal sent − received, and the backlog never exceeds 50.
#[test]
fn overload_is_served_at_link_rate_with_tail_drop() {
    let mut e = Engine::default();
    let p = e.add_pipe(pipe(10_000_000, 0, QueueLimit::Slots(50)));
    let r = e.pipe_route(p).expect("route");
    let n = 20_000u64; // 10 s
    let arrivals: Vec<(u64, u32)> = (0..n).map(|k| (k * MS / 2, 1000)).collect();
    let (out, verdicts) = run(&mut e, r, &arrivals);
    let received = out.iter().filter(|o| o.fate == Fate::Delivered).count() as u64;
    let refused = verdicts
        .iter()
        .filter(|v| **v == Verdict::Dropped(DropReason::QueueFull))
        .count() as u64;
    let st = *e.pipe_stats(p).expect("stats");
    assert_eq!(st.drops, refused);
    assert_eq!(st.drops, n - received);
    assert_eq!(st.max_backlog, 50);
    assert!(st.drops > 0);
    // Rate over deliveries after the queue filled (from the 100th on):
    // bits after the first counted packet over the time between them.
    let times: Vec<u64> = out.iter().map(|o| o.at.0).collect();
    let (a, b) = (times[100], times[times.len() - 1]);
    let bits = (times.len() - 1 - 100) as f64 * 8000.0;
    let rate = bits / ((b - a) as f64 / 1e9);
    assert!((rate - 10e6).abs() / 10e6 < 0.005, "rate {rate}");
    // In fact it is exact: back-to-back packets 800 us apart.
    assert!(times.windows(2).skip(100).all(|w| w[1] - w[0] == 800_000));
}

/// A byte-bounded queue admits a packet only if it fits entirely.
#[test]
fn byte_queue_bounds_bytes_not_packets() {
    let mut e = Engine::default();
    // 3000 bytes of queue at 1 Mbit/s; a burst of five 1000-byte packets at t=0.
    let p = e.add_pipe(pipe(1_000_000, 0, QueueLimit::Bytes(3000)));
    let r = e.pipe_route(p).expect("route");
    let (out, verdicts) = run(
        &mut e,
        r,
        &[(0, 1000), (0, 1000), (0, 1000), (0, 1000), (0, 1)],
    );
    assert_eq!(
        verdicts,
        vec![
            Verdict::Queued,
            Verdict::Queued,
            Verdict::Queued,
            Verdict::Dropped(DropReason::QueueFull),
            Verdict::Dropped(DropReason::QueueFull)
        ]
    );
    // Delays: 8, 16, 24 ms (the (l + Q)/B formula).
    assert_eq!(delays_ns(&out), vec![8 * MS, 16 * MS, 24 * MS]);
    assert_eq!(e.pipe_stats(p).expect("stats").max_backlog_bytes, 3000);
}

/// Unlimited bandwidth and zero delay: packets leave at their arrival instant.
#[test]
fn unlimited_zero_delay_pipe_is_transparent() {
    let mut e = Engine::default();
    let p = e.add_pipe(PipeConfig::default());
    let r = e.pipe_route(p).expect("route");
    let arrivals: Vec<(u64, u32)> = (0..100).map(|k| (k * 1000, 1500)).collect();
    let (out, _) = run(&mut e, r, &arrivals);
    assert_eq!(out.len(), 100);
    assert!(delays_ns(&out).iter().all(|&d| d == 0));
    // Unlimited bandwidth: even a burst of 50 at one instant passes at once.
    let (out, _) = run(&mut e, r, &vec![(1_000_000_000, 1500); 50]);
    assert_eq!(delays_ns(&out), vec![0; 50]);
}

/// Pipes in series: delays add, and the slowest link sets the rate.
#[test]
fn pipes_in_series_add_delays_and_slowest_link_sets_rate() {
    let mut e = Engine::default();
    let a = e.add_pipe(pipe(100_000_000, 5 * MS, QueueLimit::Slots(50)));
    let b = e.add_pipe(pipe(2_000_000, 10 * MS, QueueLimit::Slots(1000)));
    let c = e.add_pipe(pipe(50_000_000, 7 * MS, QueueLimit::Slots(50)));
    let r = e.add_route(&[a, b, c]).expect("route");
    // One packet alone: sum of transmission times and delays.
    let (out, _) = run(&mut e, r, &[(0, 1250)]);
    // 1250 B = 10 kbit: 0.1 ms + 5 ms + 5 ms + 10 ms + 0.2 ms + 7 ms.
    assert_eq!(
        delays_ns(&out),
        vec![100_000 + 5 * MS + 5 * MS + 10 * MS + 200_000 + 7 * MS]
    );
    // A saturating train (4 Mbit/s offered): the 2 Mbit/s pipe sets the rate.
    let start = 1_000_000_000u64;
    let arrivals: Vec<(u64, u32)> = (0..800).map(|k| (start + k * 2_500_000, 1250)).collect();
    let (out, _) = run(&mut e, r, &arrivals);
    let t: Vec<u64> = out.iter().map(|o| o.at.0).collect();
    assert!(
        t.windows(2).all(|w| w[1] - w[0] == 5 * MS),
        "2 Mbit/s spacing"
    );
    assert_eq!(e.pipe_stats(b).expect("stats").drops, 0);
    assert_eq!(e.stats().delivered, 801);
}

/// A drop in the middle of a route is reported with the pipe and instant.
#[test]
fn drop_inside_route_is_reported_where_and_when() {
    let mut e = Engine::default();
    let a = e.add_pipe(PipeConfig::default());
    let b = e.add_pipe(pipe(1_000_000, 0, QueueLimit::Slots(1)));
    let r = e.add_route(&[a, b]).expect("route");
    let (out, verdicts) = run(&mut e, r, &[(7, 100), (7, 100)]);
    assert_eq!(verdicts, vec![Verdict::Queued, Verdict::Queued]);
    assert_eq!(
        out.iter().map(|o| (o.at.0, o.fate)).collect::<Vec<_>>(),
        vec![
            (
                7,
                Fate::Dropped {
                    pipe: b,
                    reason: DropReason::QueueFull
                }
            ),
            (7 + 800_000, Fate::Delivered)
        ]
    );
}

/// The pool bounds memory: beyond it arrivals are refused and counted.
#[test]
fn pool_exhaustion_is_a_counted_drop() {
    let mut e = Engine::new(EngineOptions {
        max_packets: 10,
        seed: 1,
    });
    let p = e.add_pipe(pipe(0, 10 * MS, QueueLimit::Slots(100)));
    let r = e.pipe_route(p).expect("route");
    let (out, v) = run(&mut e, r, &vec![(0, 100); 15]);
    assert_eq!(out.len(), 10);
    assert_eq!(
        v.iter()
            .filter(|v| **v == Verdict::Dropped(DropReason::PoolFull))
            .count(),
        5
    );
    assert_eq!(e.stats().dropped_memory, 5);
    assert_eq!(e.in_flight(), 0);
}

/// Reconfiguring a pipe keeps every queued packet; the new rate applies
/// from the next transmission.
#[test]
fn reconfiguration_keeps_queued_packets() {
    let mut e = Engine::default();
    let p = e.add_pipe(pipe(1_000_000, 0, QueueLimit::Slots(50)));
    let r = e.pipe_route(p).expect("route");
    let mut out = Vec::new();
    for k in 0..10 {
        let mut pk = Packet::new(1000);
        pk.tag = k;
        assert_eq!(e.enqueue(Instant(0), pk, r), Verdict::Queued);
    }
    e.reconfigure(p, pipe(8_000_000, 0, QueueLimit::Slots(50)))
        .expect("pipe");
    while let Some(d) = e.next_deadline() {
        e.advance(d, &mut out);
    }
    assert_eq!(out.len(), 10);
    // First packet at the old rate (8 ms), then 1 ms each at the new rate.
    let t: Vec<u64> = out.iter().map(|o| o.at.0).collect();
    assert_eq!(t[0], 8 * MS);
    assert!(t.windows(2).all(|w| w[1] - w[0] == MS));
    let tags: Vec<u64> = out.iter().map(|o| o.pkt.tag).collect();
    assert_eq!(tags, (0..10).collect::<Vec<_>>());
}

/// Advancing in one jump to the next arrival gives exactly the same outputs
/// as stepping through every intermediate deadline: packets cross pipes at
/// their exact exit instants, whatever the caller's granularity.
#[test]
fn results_do_not_depend_on_advance_granularity() {
    let build = || {
        let mut e = Engine::default();
        let a = e.add_pipe(pipe(3_000_000, 3 * MS, QueueLimit::Slots(20)));
        let b = e.add_pipe(pipe(1_000_000, MS, QueueLimit::Slots(5)));
        let r = e.add_route(&[a, b]).expect("route");
        (e, r)
    };
    let mut arrivals: Vec<(u64, u32)> = (0..400u64)
        .map(|k| ((k * 7_919_777) % 400_000_000, 200 + (k as u32 * 37) % 1300))
        .collect();
    arrivals.sort();
    let (mut e1, r1) = build();
    let (coarse, _) = run(&mut e1, r1, &arrivals);
    let (mut e2, r2) = build();
    let mut fine = Vec::new();
    for (tag, &(t, len)) in arrivals.iter().enumerate() {
        while let Some(d) = e2.next_deadline().filter(|d| d.0 <= t) {
            e2.advance(d, &mut fine);
        }
        e2.advance(Instant(t), &mut fine);
        let mut p = Packet::new(len);
        p.born = Instant(t);
        p.tag = tag as u64;
        e2.enqueue(Instant(t), p, r2);
    }
    while let Some(d) = e2.next_deadline() {
        e2.advance(d, &mut fine);
    }
    assert!(
        coarse.iter().any(|o| o.fate != Fate::Delivered),
        "some drops expected"
    );
    assert_eq!(coarse, fine);
}
