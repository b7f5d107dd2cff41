//! A plain pipe (a queue, a bandwidth and a fixed delay: no stage) takes a
//! fast path at arrival, at each transmission and at each exit. A pass
//! proves the fast path decides exactly what the general path decides: the
//! same route of plain pipes and of the same pipes with a netem `limit`
//! they never reach (which sends them down the general path) give the same
//! outputs, nanosecond for nanosecond, under bursty traffic of mixed sizes
//! at rates whose transmission times have sub-nanosecond remainders,
//! with tail drops and a reconfiguration to a shorter delay.

use pipelab_engine::config::{PipeConfig, QueueLimit};
use pipelab_engine::engine::{Fate, Output};
use pipelab_engine::{Duration, Engine, Instant, Packet, Rate, Verdict};

fn cfg(bw: u64, delay_us: u64, slots: u32, general: bool) -> PipeConfig {
    let c = PipeConfig::new(
        Rate(bw),
        Duration::from_micros(delay_us),
        QueueLimit::Slots(slots),
    )
    .expect("config");
    if general {
        c.with_limit(1_000_000).expect("limit")
    } else {
        c
    }
}

/// Every refusal and output of a 3-hop route, as `(tag, at, fate)`.
fn run(general: bool) -> Vec<(u64, u64, String)> {
    let mut e = Engine::default();
    let pipes = [
        e.add_pipe(cfg(3_000_000, 1_000, 8, general)),
        e.add_pipe(cfg(7_000_003, 2_500, 6, general)),
        e.add_pipe(cfg(1_999_999, 10_000, 10, general)),
    ];
    let r = e.add_route(&pipes).expect("route");
    let mut out: Vec<Output> = Vec::new();
    let mut refused = Vec::new();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut t = 0u64;
    for n in 0..4000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Bursts: most gaps short, some long.
        t += if x.is_multiple_of(8) {
            20_000_000
        } else {
            x % 1_500_000
        };
        if n == 2000 {
            // A shorter delay: exits must not overtake the packets ahead.
            e.advance(Instant(t), &mut out);
            e.reconfigure(pipes[2], cfg(1_999_999, 1_000, 10, general))
                .expect("reconfigure");
        }
        e.advance(Instant(t), &mut out);
        let mut p = Packet::new(40 + (x >> 20) as u32 % 1461);
        p.tag = n;
        // A tail drop at the first pipe is the verdict, not an output.
        if let Verdict::Dropped(why) = e.enqueue(Instant(t), p, r) {
            refused.push((n, t, format!("{why:?}")));
        }
    }
    e.advance(Instant(u64::MAX / 2), &mut out);
    refused.extend(
        out.iter()
            .map(|o| (o.pkt.tag, o.at.0, format!("{:?}", o.fate))),
    );
    refused
}

#[test]
fn plain_pipes_decide_as_the_general_path() {
    let fast = run(false);
    let general = run(true);
    let delivered = fast
        .iter()
        .filter(|o| o.2 == format!("{:?}", Fate::Delivered))
        .count();
    // The traffic exercises both outcomes.
    assert!(delivered > 1000, "delivered {delivered}");
    assert!(
        fast.len() - delivered > 100,
        "dropped {}",
        fast.len() - delivered
    );
    assert_eq!(fast.len(), 4000);
    assert_eq!(fast, general);
}

/// A pass proves the fast path's arithmetic: one 1000-byte packet through
/// an idle 10 Mbit/s, 20 ms pipe leaves at 800 us + 20 ms exactly.
#[test]
fn plain_pipe_exit_is_transmission_plus_delay() {
    let mut e = Engine::default();
    let p = e.add_pipe(
        PipeConfig::new(
            Rate(10_000_000),
            Duration::from_millis(20),
            QueueLimit::Slots(50),
        )
        .expect("config"),
    );
    let r = e.add_route(&[p]).expect("route");
    e.enqueue(Instant(5), Packet::new(1000), r);
    let mut out = Vec::new();
    e.advance(Instant(1_000_000_000), &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].at, Instant(5 + 800_000 + 20_000_000));
}
