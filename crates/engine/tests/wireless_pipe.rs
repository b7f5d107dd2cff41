//! Wireless and time-varying links inside the pipe (PlanetLab-Dummynet
//! emulation §4, Tables 3–4, Fig. 10), in virtual time: the figures are the
//! engine's own, exact for a given seed.

use pipelab_engine::config::{PipeConfig, QueueLimit};
use pipelab_engine::engine::{DropReason, EngineOptions, Fate, Output};
use pipelab_engine::models::{
    Dwell, GraphState, MarkovGraph, Probability, Standard, StateParams, WirelessConfig,
};
use pipelab_engine::{Duration, Engine, Instant, Packet, Rate, RouteId, Verdict};

const MS: u64 = 1_000_000;
/// A 1470-byte UDP payload in IPv4: what iperf's datagrams weigh at L3.
const IP_LEN: u32 = 1470 + 8 + 20;

fn ok<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

/// The built-in link `STANDARD-RATE` (the rate in Mbit/s, `802.11b-11`).
fn profile(name: &str) -> WirelessConfig {
    let (standard, mbit) = match name.split_once('-') {
        Some(("802.11b", r)) => (Standard::B, r),
        Some(("802.11g", r)) => (Standard::G, r),
        _ => panic!("no profile {name}"),
    };
    let bps = match mbit {
        "5.5" => 5_500_000,
        r => ok(r.parse::<u64>()) * 1_000_000,
    };
    ok(WirelessConfig::new(standard, Rate::from_bps(bps)))
}

/// A graph of states `(name, params, dwell corners (P, ms), arcs (to, P))`
/// starting in the first.
type StateDef<'a> = (&'a str, StateParams, &'a [(f64, u64)], &'a [(usize, f64)]);
fn graph(states: &[StateDef]) -> MarkovGraph {
    let pr = |p: f64| ok(Probability::new(p));
    let states = states
        .iter()
        .map(|&(name, params, dwell, arcs)| GraphState {
            name: name.into(),
            params,
            dwell: ok(Dwell::new(
                dwell
                    .iter()
                    .map(|&(p, ms)| (pr(p), Duration(ms * MS)))
                    .collect(),
            )),
            arcs: arcs.iter().map(|&(j, p)| (j, pr(p))).collect(),
        })
        .collect();
    ok(MarkovGraph::new(states, 0))
}

/// A state's parameters: a bandwidth and a delay.
fn bw_delay(bps: u64, delay_ms: u64) -> StateParams {
    StateParams {
        bandwidth: Some(Rate::from_bps(bps)),
        delay: Some(Duration(delay_ms * MS)),
        ..StateParams::default()
    }
}

/// Table 3's setup: CW 16 slots, beacons as 1 % netload, no collisions,
/// no noise.
fn table3(profile_name: &str, collision: f64) -> WirelessConfig {
    ok(profile(profile_name)
        .with_cw(16)
        .and_then(|c| c.with_netload(0.01))
        .and_then(|c| c.with_collision(collision)))
}

fn wireless_pipe(w: WirelessConfig) -> PipeConfig {
    ok(ok(PipeConfig::new(
        Rate::UNLIMITED,
        Duration::ZERO,
        QueueLimit::Slots(100),
    ))
    .with_wireless(w))
}

/// Offer `n` packets of `len` bytes every `gap` ns to `route` and run the
/// engine dry; every output in order (refusals at arrival are in
/// [`cbr_verdicts`]).
fn cbr(e: &mut Engine, route: RouteId, n: u64, gap: u64, len: u32) -> Vec<Output> {
    cbr_verdicts(e, route, n, gap, len).0
}

/// [`cbr`], with each arrival's verdict.
fn cbr_verdicts(
    e: &mut Engine,
    route: RouteId,
    n: u64,
    gap: u64,
    len: u32,
) -> (Vec<Output>, Vec<Verdict>) {
    let mut out = Vec::new();
    let mut verdicts = Vec::new();
    for k in 0..n {
        let t = Instant(k * gap);
        e.advance(t, &mut out);
        let mut p = Packet::new(len);
        p.born = t;
        p.tag = k;
        verdicts.push(e.enqueue(t, p, route));
    }
    while let Some(d) = e.next_deadline() {
        e.advance(d, &mut out);
    }
    (out, verdicts)
}

/// UDP goodput (1470 payload bytes per delivered packet) over the span of
/// the deliveries, in Kbit/s.
fn goodput_kbps(out: &[Output]) -> f64 {
    let got: Vec<&Output> = out.iter().filter(|o| o.fate == Fate::Delivered).collect();
    let (first, last) = (got[0].at.0, got[got.len() - 1].at.0);
    ((got.len() - 1) as f64 * 1470.0 * 8.0) / (last - first) as f64 * 1e6
}

/// Pass proves: a pipe whose link is `wireless`, saturated by 1470-byte UDP
/// datagrams (offered at twice the nominal rate into a 100-slot queue),
/// delivers the emulator column of Table 3 within 3 % at 1, 2, 5.5, 11 and
/// 54 Mbit/s; the excess is tail-dropped, nothing is lost on the link.
#[test]
fn table3_through_the_pipe_within_3_percent() {
    for (profile, nominal_bps, paper) in [
        ("802.11b-1", 1_000_000u64, 900.0),
        ("802.11b-2", 2_000_000, 1772.0),
        ("802.11b-5.5", 5_500_000, 4405.0),
        ("802.11b-11", 11_000_000, 7831.0),
        ("802.11g-54", 54_000_000, 28570.0),
    ] {
        let mut e = Engine::new(EngineOptions::default());
        let p = e.add_pipe(wireless_pipe(table3(profile, 0.0)));
        let r = ok(e.pipe_route(p).ok_or("route"));
        let gap = IP_LEN as u64 * 8 * 1_000_000_000 / nominal_bps / 2;
        let out = cbr(&mut e, r, 6000, gap, IP_LEN);
        let kbps = goodput_kbps(&out);
        let err = (kbps - paper) / paper;
        eprintln!(
            "{profile:12} {kbps:8.0} Kbit/s  paper {paper:6}  {:+.2}%",
            err * 100.0
        );
        assert!(err.abs() < 0.03, "{profile}: {kbps:.0} vs {paper}");
        let link = out
            .iter()
            .filter(|o| {
                matches!(
                    o.fate,
                    Fate::Dropped {
                        reason: DropReason::Link,
                        ..
                    }
                )
            })
            .count();
        assert_eq!(link, 0, "{profile}: no noise, no collision, no link loss");
    }
}

/// Pass proves: UDP goodput through an 11 Mbit/s wireless pipe falls
/// strictly as the collision probability rises 0 → 0.08 (Table 4's rows),
/// and a packet is lost on the link only after its last retry: with
/// collision 1 every packet is dropped as `link`, each after
/// `retries + 1` failed attempts' airtime.
#[test]
fn collisions_cost_throughput_and_exhaust_retries() {
    let mut last = f64::INFINITY;
    for c in [0.0, 0.02, 0.04, 0.06, 0.08] {
        let mut e = Engine::new(EngineOptions::default());
        let p = e.add_pipe(wireless_pipe(table3("802.11b-11", c)));
        let r = ok(e.pipe_route(p).ok_or("route"));
        let out = cbr(&mut e, r, 6000, 500_000, IP_LEN);
        let kbps = goodput_kbps(&out);
        eprintln!("collision {c:.2}: {kbps:.0} Kbit/s");
        assert!(kbps < last, "collision {c}: {kbps} not below {last}");
        last = kbps;
    }
    // Always colliding, retries 3: 4 attempts, each at least DIFS + PPDU +
    // ACKTimeout = 50 + (96 + 1116) + (10 + 20 + 96) µs, netload 1 %.
    let w = ok(table3("802.11b-11", 1.0).with_retries(3));
    let mut e = Engine::new(EngineOptions::default());
    let p = e.add_pipe(wireless_pipe(w));
    let r = ok(e.pipe_route(p).ok_or("route"));
    let out = cbr(&mut e, r, 20, 100 * MS, IP_LEN);
    assert_eq!(out.len(), 20);
    for o in &out {
        assert!(matches!(
            o.fate,
            Fate::Dropped {
                reason: DropReason::Link,
                ..
            }
        ));
        let held = o.at.0 - o.pkt.born.0;
        let floor = 4 * (50 + 96 + 1116 + 10 + 20 + 96) * 1000;
        assert!(
            held >= floor,
            "lost after {held} ns, before 4 attempts ({floor} ns)"
        );
        // And at most 4 attempts with the largest backoffs (CW 16→128).
        let ceil = floor + (15 + 31 + 63 + 127) * 20_000 + floor / 50;
        assert!(held <= ceil, "lost after {held} ns > {ceil} ns");
    }
}

/// Two states that alternate every second exactly: `fast` (10 ms) and
/// `slow` (50 ms) at the given rates.
fn alternate(fast_bps: u64, slow_bps: u64) -> MarkovGraph {
    graph(&[
        ("fast", bw_delay(fast_bps, 10), &[(1.0, 1000)], &[(1, 1.0)]),
        ("slow", bw_delay(slow_bps, 50), &[(1.0, 1000)], &[(0, 1.0)]),
    ])
}

/// Pass proves: a time-varying pipe serves a saturated queue at each
/// state's bandwidth while the state lasts (bits delivered per one-second
/// window within 1 % of 10 and 2 Mbit/s, alternating), and state changes
/// lose no packet: every packet is delivered or tail-dropped
/// (`arrivals = departures + queue drops`), none lost on the link or by
/// loss.
#[test]
fn timevarying_bandwidth_follows_the_states_and_keeps_the_queue() {
    let g = alternate(10_000_000, 2_000_000);
    let cfg = ok(ok(PipeConfig::new(
        Rate(10_000_000),
        Duration(10 * MS),
        QueueLimit::Slots(200),
    ))
    .with_timevarying(g));
    let mut e = Engine::new(EngineOptions::default());
    let p = e.add_pipe(cfg);
    let r = ok(e.pipe_route(p).ok_or("route"));
    // 12 Mbit/s of 1500-byte packets for 10 s.
    let out = cbr(&mut e, r, 10_000, 1_000_000, 1500);
    let mut bits = [0u64; 12];
    for o in &out {
        match o.fate {
            Fate::Delivered => {
                let w = (o.at.0 / 1_000_000_000) as usize;
                if w < bits.len() {
                    bits[w] += 1500 * 8;
                }
            }
            Fate::Dropped { reason, .. } => {
                assert_eq!(reason, DropReason::QueueFull, "only tail drops");
            }
            Fate::Duplicated { .. } => panic!("no duplication configured"),
        }
    }
    // Window k covers transmissions in [k − delay, k+1 − delay): skip the
    // first and the windows straddling a delay change.
    for (k, &b) in bits.iter().enumerate().take(10).skip(1) {
        let (expect, delay_change) = if k % 2 == 0 { (10e6, 0.04) } else { (2e6, 0.0) };
        let got = b as f64;
        // A fast window after a slow one starts 40 ms early (50 → 10 ms delay).
        let tolerance = 0.01 + delay_change * 10e6 / expect + 2.0 * 12_000.0 / expect;
        assert!(
            (got - expect).abs() / expect < tolerance,
            "window {k}: {got} bit/s vs {expect} (±{:.1} %)",
            tolerance * 100.0
        );
    }
    let st = ok(e.pipe_stats(p).ok_or("stats"));
    assert_eq!(st.arrivals, st.departures + st.drops);
    assert_eq!(st.loss_drops + st.link_drops, 0);
}

/// Pass proves: a state's delay applies to packets whose transmission ends
/// in it (10 ms or 50 ms, plus 1 ms of transmission at 8 Mbit/s), and with
/// a two-state random graph the same seed gives the same outputs bit for
/// bit while another seed gives another walk.
#[test]
fn timevarying_delay_and_determinism() {
    let g = alternate(8_000_000, 8_000_000);
    let cfg = ok(ok(PipeConfig::new(
        Rate(8_000_000),
        Duration(10 * MS),
        QueueLimit::Slots(50),
    ))
    .with_timevarying(g));
    let mut e = Engine::new(EngineOptions::default());
    let p = e.add_pipe(cfg);
    let r = ok(e.pipe_route(p).ok_or("route"));
    let out = cbr(&mut e, r, 400, 10 * MS, 1000);
    for o in &out {
        assert_eq!(o.fate, Fate::Delivered);
        let tx_end = o.pkt.born.0 + MS;
        let delay = if (tx_end / 1_000_000_000).is_multiple_of(2) {
            10 * MS
        } else {
            50 * MS
        };
        // Keep-order: a packet may wait behind one with the longer delay.
        assert!(o.at.0 >= tx_end + delay, "packet {} left early", o.pkt.tag);
        if delay == 50 * MS || (tx_end % 1_000_000_000) > 50 * MS {
            assert_eq!(o.at.0, tx_end + delay, "packet {}", o.pkt.tag);
        }
    }

    let a = StateParams {
        bandwidth: Some(Rate::from_bps(4_000_000)),
        loss: Some(0.1),
        ..StateParams::default()
    };
    let b = StateParams {
        bandwidth: Some(Rate::from_bps(1_000_000)),
        ..StateParams::default()
    };
    let run = |seed: u64| {
        let g = graph(&[
            ("a", a, &[(0.0, 100), (1.0, 300)], &[(1, 0.7), (0, 0.3)]),
            ("b", b, &[(0.0, 50), (1.0, 150)], &[(0, 1.0)]),
        ]);
        let cfg = ok(ok(PipeConfig::new(
            Rate(4_000_000),
            Duration(MS),
            QueueLimit::Slots(50),
        ))
        .with_timevarying(g));
        let mut e = Engine::new(EngineOptions {
            seed,
            ..EngineOptions::default()
        });
        let p = e.add_pipe(cfg);
        let r = ok(e.pipe_route(p).ok_or("route"));
        let (out, verdicts) = cbr_verdicts(&mut e, r, 5000, MS, 500);
        let lost = verdicts
            .iter()
            .filter(|v| **v == Verdict::Dropped(DropReason::Loss))
            .count();
        let out: Vec<_> = out.iter().map(|o| (o.pkt.tag, o.at.0, o.fate)).collect();
        (out, lost)
    };
    let (a, lost) = run(7);
    assert_eq!((a.clone(), lost), run(7));
    assert_ne!(a, run(8).0);
    // State `a` loses 10 % of what arrives in it, `b` nothing: some loss.
    assert!(lost > 50 && lost < 500, "{lost} state losses of 5000");
}

/// Pass proves: the pipe refuses what would define a wireless link's
/// timing twice, and time-varying radio parameters without a radio.
#[test]
fn wireless_and_timevarying_conflicts_are_errors() {
    let w = table3("802.11b-11", 0.0);
    let bw = ok(PipeConfig::new(
        Rate(1_000_000),
        Duration::ZERO,
        QueueLimit::Slots(50),
    ));
    let e = bw.with_wireless(w.clone()).err().map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some("wireless: a wireless link takes its timing from the modulation and the MAC; remove `bw`")
    );
    let snr = StateParams {
        snr_db: Some(10.0),
        ..StateParams::default()
    };
    let g = graph(&[("x", snr, &[(1.0, 1000)], &[(0, 1.0)])]);
    let plain = PipeConfig::default();
    let e = plain.with_timevarying(g).err().map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some("timevarying: state `x` sets snr, netload or collision, but the pipe has no `wireless` link")
    );
    let seven = StateParams {
        bandwidth: Some(Rate::from_bps(7_000_000)),
        ..StateParams::default()
    };
    let g = graph(&[("x", seven, &[(1.0, 1000)], &[(0, 1.0)])]);
    let radio = ok(PipeConfig::default().with_wireless(w));
    let e = radio.with_timevarying(g).err().map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some("timevarying: state `x`: 802.11b has no rate of 7000000 bit/s")
    );
}
