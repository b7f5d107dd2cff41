//! Scenario tests of queue management and the link-server extras, end to
//! end from command text through `pipelab_sim::simulate` in virtual time
//! (seeded): RED's linear law, CoDel's standing delay, Dummynet's MAC
//! profile, L2/L3 rate accounting, Mahimahi bandwidth traces and ipfw's
//! `burst`. Each test's doc says what a pass proves.
//!
//! Statistical checks use 3 standard deviations of the estimator (the runs
//! are seeded, so each check is deterministic; 3σ says the model is right,
//! not that a lucky seed was picked).

use pipelab_engine::engine::{EngineOptions, Fate};
use pipelab_engine::{Engine, Instant, Packet};
use pipelab_lang::{parse_traffic, Config};
use pipelab_sim::{simulate_with_loader, Report, SimOptions};

/// Runs `config` against one traffic source; `files` are the files the
/// pipes name, as `(path, text)`.
fn sim(config: &str, traffic: &str, seed: u64, files: &[(&str, &str)]) -> Report {
    let mut cfg = Config::new();
    cfg.apply_script(config)
        .unwrap_or_else(|e| panic!("config parses: {e:?}\n{config}"));
    let specs = vec![parse_traffic(traffic).expect("traffic parses")];
    simulate_with_loader(
        &cfg,
        &specs,
        &SimOptions {
            seed,
            ..SimOptions::default()
        },
        &mut |path: &str| {
            files
                .iter()
                .find(|(p, _)| *p == path)
                .map(|(_, t)| t.to_string())
                .ok_or_else(|| format!("no file {path}"))
        },
    )
    .expect("simulation runs")
}

/// One pipe with `params`, every packet through it.
fn pipe(params: &str) -> String {
    format!("pipe 1 config {params}\nadd 100 pipe 1 ip from any to any\n")
}

/// Pass proves: with the average queue held between `min_th` and `max_th`
/// (an unresponsive CBR overload of 5 %, 10 % and 15 % on a 10 Mbit/s link,
/// and `w_q` small enough that the average barely moves between drops),
/// RED settles where its linear law `p_b = max_p·(avg − min_th)/(max_th −
/// min_th)`, with dummynet's uniform drop spacing (drop fraction
/// `2p_b/(1 + p_b)`), predicts the measured drop fraction, within 3σ, at
/// three points of the line; and every drop is an AQM drop (none at the
/// tail). A wrong slope or offset moves the equilibrium queue by slots and
/// fails.
///
/// The steady-state average is measured from the delays: with 1000-byte
/// packets served in `s` = 800 µs, a packet that waits `W` finds `⌈W/s⌉`
/// packets in the queue, on average `W/s + ½`. σ is the standard error of
/// that mean: the queue's spread (the delay's standard deviation in packet
/// times) over the number of independent samples, `n·w_q/2` (the
/// average's correlation time is `2/w_q` arrivals).
#[test]
fn red_drop_fraction_follows_the_linear_law_in_steady_state() {
    let (w_q, min_th, max_th, max_p) = (0.0005, 5.0, 45.0, 0.1);
    let s_ms = 0.8;
    for (f, rate) in [
        (0.05, "1315.789pps"),
        (0.10, "1388.889pps"),
        (0.15, "1470.588pps"),
    ] {
        let r = sim(
            &pipe("bw 10Mbit/s queue 300 red 0.0005/5/45/0.1"),
            &format!("cbr rate {rate} size 1000B duration 800s"),
            1,
            &[],
        );
        let fl = &r.flows[0];
        assert_eq!(fl.drops.queue, 0, "no tail drop");
        assert_eq!(fl.drops.aqm, fl.lost, "every loss is RED's");
        assert_eq!(r.pipes[0].aqm_drops, fl.drops.aqm);
        let d = fl.delay_ms.expect("delays");
        let avg = (d.mean - s_ms) / s_ms + 0.5;
        assert!(avg > min_th && avg < max_th, "avg {avg} between thresholds");
        let law = |avg: f64| max_p * (avg - min_th) / (max_th - min_th);
        let fraction = |p: f64| 2.0 * p / (1.0 + p);
        let predicted = fraction(law(avg));
        let measured = fl.drops.aqm as f64 / fl.sent as f64;
        let sigma_avg = d.stddev / s_ms / (fl.sent as f64 * w_q / 2.0).sqrt();
        let p = law(avg);
        let slope = 2.0 / (1.0 + p).powi(2) * max_p / (max_th - min_th);
        let sigma = slope * sigma_avg;
        assert!(
            (measured - predicted).abs() <= 3.0 * sigma,
            "load for {f}: measured {measured:.5}, linear law at avg {avg:.3} predicts \
             {predicted:.5} ± {:.5} (3σ)",
            3.0 * sigma
        );
        // The fraction itself is the overload's excess (conservation).
        assert!((measured - f).abs() < 0.001, "{measured} vs {f}");
    }
}

/// Pass proves: under a sustained overload by an unresponsive CBR flow (2 %
/// and 5 % above a 10 Mbit/s link, 1000 slots of buffer), CoDel keeps the
/// median queueing delay near its 5 ms target (between target and twice
/// it) while the link stays fully used, where the same pipe without CoDel
/// lets the standing delay grow to the full buffer (0.8 s). CoDel's control
/// law (drops at `interval/√count`) is built for responsive traffic: with
/// more unresponsive excess the standing delay grows.
#[test]
fn codel_keeps_the_standing_delay_near_its_target_under_overload() {
    let tx_ms = 0.8;
    for rate in ["1275pps", "1312.5pps"] {
        let traffic = format!("cbr rate {rate} size 1000B duration 300s");
        let r = sim(
            &pipe("bw 10Mbit/s queue 1000 codel target 5ms interval 100ms"),
            &traffic,
            1,
            &[],
        );
        let fl = &r.flows[0];
        let d = fl.delay_ms.expect("delays");
        let queueing = d.p50 - tx_ms;
        assert!(
            (5.0..=10.0).contains(&queueing),
            "{rate}: median queueing delay {queueing} ms"
        );
        assert_eq!(fl.drops.queue, 0, "CoDel, not the tail, drops");
        assert!(fl.drops.aqm > 0);
        assert!((fl.throughput_bps - 10e6).abs() < 1.0, "link fully used");
        let tail = sim(&pipe("bw 10Mbit/s queue 1000"), &traffic, 1, &[]);
        let td = tail.flows[0].delay_ms.expect("delays");
        assert!(td.p50 > 700.0, "tail drop alone: p50 {}", td.p50);
    }
}

/// The paper's example profile (dummynet-revisited §3.7), with the unit its
/// comment intends (the paper writes bare numbers, which ipfw reads as ms).
const PAPER_PROFILE: &str = "name profile foo
bandwidth 2Mbit/s
loss-level 0.99
samples 5
prob delay # delay in us
0.2 100us
0.4 130us
0.5 130us
0.8 1500us
0.98 2000us
";

/// The paper's piecewise-linear CDF of the extra airtime (µs), over all
/// draws (lost ones included).
fn paper_cdf(x_us: f64) -> f64 {
    let pts = [
        (0.2, 100.0),
        (0.4, 130.0),
        (0.5, 130.0),
        (0.8, 1500.0),
        (0.98, 2000.0),
    ];
    if x_us < pts[0].1 {
        return 0.0;
    }
    if x_us >= pts[4].1 {
        return 1.0;
    }
    // Last corner at or below x.
    let i = pts.iter().rposition(|p| p.1 <= x_us).unwrap_or(0);
    let (a, b) = (pts[i], pts[i + 1]);
    a.0 + (x_us - a.1) / (b.1 - a.1) * (b.0 - a.0)
}

/// Pass proves: a pipe with the paper's example profile (and no `bw`, so
/// the profile's 2 Mbit/s) loses 1 % of the packets on the link, within 3σ
/// of the binomial count, reported as `drops.link` apart from tail and AQM
/// drops; and each delivered packet of 100 bytes leaves `l/B` = 400 µs plus
/// an extra airtime whose distribution is the paper's CDF conditioned on
/// not being lost (KS test at α = 0.01, atoms handled), while the same
/// CDF with delays scaled by 1.2 is rejected.
#[test]
fn mac_profile_draws_the_papers_airtime_and_loses_one_percent() {
    let cfg = pipe("profile paper.profile");
    let files = [("paper.profile", PAPER_PROFILE)];
    // One packet every 10 ms: the link is always idle when one arrives.
    let traffic = "cbr rate 100pps size 100B duration 1000s";
    let r = sim(&cfg, traffic, 5, &files);
    let fl = &r.flows[0];
    let n = fl.sent as f64;
    assert_eq!(fl.sent, 100_000);
    assert_eq!(fl.drops.link, fl.lost, "every loss is on the link");
    assert_eq!(r.pipes[0].link_drops, fl.drops.link);
    let sigma = (n * 0.01 * 0.99).sqrt();
    assert!(
        (fl.drops.link as f64 - n * 0.01).abs() <= 3.0 * sigma,
        "lost {} of {n}, expected {} ± {:.1}",
        fl.drops.link,
        n * 0.01,
        3.0 * sigma
    );
    let d = fl.delay_ms.expect("delays");
    assert!(
        (d.min - 0.5).abs() < 1e-9,
        "400 µs + the smallest airtime 100 µs"
    );
    assert!(
        (d.max - 2.4).abs() < 1e-9,
        "400 µs + the largest airtime 2 ms"
    );

    // The same pipe, from the same text, driven packet by packet to see
    // each delay.
    let mut config = Config::new();
    config.apply_script(&cfg).expect("config");
    let spec = config.pipes.get(&1).expect("pipe 1");
    let pcfg = spec
        .to_config_with(&mut |_: &str| Ok(PAPER_PROFILE.to_string()))
        .expect("pipe config");
    let mut e = Engine::new(EngineOptions {
        seed: 9,
        ..EngineOptions::default()
    });
    let p = e.add_pipe(pcfg);
    let route = e.pipe_route(p).expect("route");
    let mut out = Vec::new();
    let mut extra_us = Vec::new();
    let mut lost = 0u64;
    for k in 0..100_000u64 {
        let t = Instant(k * 10_000_000);
        e.advance(t, &mut out);
        let mut pkt = Packet::new(100);
        pkt.born = t;
        e.enqueue(t, pkt, route);
    }
    while let Some(t) = e.next_deadline() {
        e.advance(t, &mut out);
    }
    for o in &out {
        match o.fate {
            Fate::Delivered => extra_us.push((o.at.0 - o.pkt.born.0 - 400_000) as f64 / 1e3),
            Fate::Dropped { .. } => lost += 1,
            Fate::Duplicated { .. } => {}
        }
    }
    assert_eq!(lost, e.stats().dropped_link);
    let level = 0.99;
    let cond = |x: f64| (paper_cdf(x).min(level) / level).min(1.0);
    let ks = |xs: &mut Vec<f64>, cdf: &dyn Fn(f64) -> f64| {
        xs.sort_by(f64::total_cmp);
        let n = xs.len() as f64;
        let mut d: f64 = 0.0;
        for (i, &x) in xs.iter().enumerate() {
            // Compare at x and just below it (the CDF has atoms).
            d = d.max((i + 1) as f64 / n - cdf(x));
            d = d.max(cdf(x - 1e-4) - i as f64 / n);
        }
        d
    };
    let critical = 1.628 / (extra_us.len() as f64).sqrt();
    let d = ks(&mut extra_us, &cond);
    assert!(d < critical, "KS D = {d}, critical {critical}");
    let wrong = |x: f64| cond(x / 1.2);
    let d = ks(&mut extra_us, &wrong);
    assert!(d > critical, "a wrong CDF must be rejected: D = {d}");
}

/// Pass proves: at `bw 8389Kbit/s`, an overloaded pipe delivers exactly the
/// configured rate counted in the chosen accounting, within 0.1 %, for
/// 170-byte and 1500-byte packets: `accounting l3` counts the IP length
/// (Dummynet), `accounting l2` the Ethernet frame on the wire (IP + 14 B
/// header + 4 B FCS + 8 B preamble + 12 B gap = +38 B), so in IP bytes the
/// L2 pipe carries `len/(len + 38)` of the rate (82 % for 170-byte
/// packets); and netem's `overhead` with ATM cells charges `⌈(len +
/// N)/48⌉·53` bytes.
#[test]
fn l2_and_l3_accounting_achieve_the_configured_rate() {
    let bw = 8_389_000.0;
    for (size, pps) in [(170u32, "8000pps"), (1500, "1000pps")] {
        let traffic = format!("cbr rate {pps} size {size}B duration 20s");
        let cases = [
            ("accounting l3", size as f64),
            ("accounting l2", (size + 38) as f64),
            (
                "overhead 10 cellsize 48 celloverhead 5",
                ((size + 10) as f64 / 48.0).ceil() * 53.0,
            ),
        ];
        for (words, wire) in cases {
            let r = sim(
                &pipe(&format!("bw 8389Kbit/s queue 50 {words}")),
                &traffic,
                1,
                &[],
            );
            let fl = &r.flows[0];
            assert!(fl.drops.queue > 0, "{words}: the pipe is overloaded");
            let charged = fl.throughput_bps * wire / size as f64;
            assert!(
                (charged / bw - 1.0).abs() < 0.001,
                "{size} B, {words}: {charged:.0} bit/s charged, {:.0} bit/s of IP",
                fl.throughput_bps
            );
        }
    }
}

/// Pass proves: with a Mahimahi trace of opportunities at 1, 1, 2 and 3 ms
/// (looping every 3 ms), a queue of MTU packets drains at exactly 4 packets
/// per 3 ms: 4000 packets queued before the first opportunity leave with
/// the last at exactly 3000 ms (opportunity 3999 = loop 999, line 4), and
/// one more packet leaves at 3001 ms (the next loop's first line); the
/// pipe's `bw` plays no part.
#[test]
fn trace_with_opportunities_at_1_1_2_3_ms_delivers_4_packets_per_3_ms() {
    let files = [("t.trace", "1\n1\n2\n3\n")];
    for (n, end_ms) in [(4000u64, 3000.0), (4001, 3001.0)] {
        // n packets, 200 ns apart, all before the first opportunity at 1 ms.
        let traffic = format!("cbr rate 5000000pps size 1500B duration {}ns", n * 200);
        let r = sim(&pipe("bw trace:t.trace queue 5000"), &traffic, 1, &files);
        let fl = &r.flows[0];
        assert_eq!((fl.sent, fl.received), (n, n));
        assert!(
            (r.end_s * 1e3 - end_ms).abs() < 1e-9,
            "{n} packets: last leaves at {} ms",
            r.end_s * 1e3
        );
    }
}

/// Pass proves: a constant trace of one opportunity per millisecond carries
/// exactly 12 Mbit/s of 1500-byte packets (1500·8 bits per ms) under
/// overload, with deliveries exactly 1 ms apart.
#[test]
fn constant_trace_of_one_opportunity_per_ms_gives_12_mbit_s() {
    let files = [("c.trace", "1\n")];
    let r = sim(
        &pipe("bw trace:c.trace queue 100"),
        "cbr rate 2000pps size 1500B duration 10s",
        1,
        &files,
    );
    let fl = &r.flows[0];
    assert!(fl.drops.queue > 0, "overloaded");
    assert_eq!(fl.throughput_bps, 12e6);
}

/// Pass proves: ipfw's `burst`: an idle 1 Mbit/s pipe with `burst 15000B`
/// sends the first 15000 bytes of a 20-packet burst of 1500-byte packets
/// at line rate (zero delay), then shapes the rest at 1 Mbit/s, so the
/// last packet leaves after 15000 bytes' worth of time (120 ms) instead of
/// 30000 bytes' (240 ms) without `burst`.
#[test]
fn burst_sends_size_bytes_at_line_rate_then_shapes() {
    // 20 packets, 1 ns apart: the credit barely grows meanwhile.
    let traffic = "cbr rate 1000000000pps size 1500B duration 20ns";
    let with = sim(&pipe("bw 1Mbit/s burst 15000B"), traffic, 1, &[]);
    let without = sim(&pipe("bw 1Mbit/s"), traffic, 1, &[]);
    let (fw, fo) = (&with.flows[0], &without.flows[0]);
    assert_eq!((fw.received, fo.received), (20, 20));
    let dw = fw.delay_ms.expect("delays");
    assert_eq!(dw.min, 0.0, "the first packets leave at line rate");
    // Packets 0..9 use the 15000-byte credit (plus the few bits it gains
    // in the 19 ns of arrivals); the other 10 take 12 ms each.
    assert!((with.end_s - 0.120).abs() < 1e-6, "end {}", with.end_s);
    assert!(
        (without.end_s - 0.240).abs() < 1e-6,
        "end {}",
        without.end_s
    );
    let dw_max = dw.max;
    assert!((dw_max - 120.0).abs() < 1e-3, "max delay {dw_max} ms");
}

/// Pass proves: `pipelab sim` runs the wireless words end to end: an
/// 802.11b 11 Mbit/s link with Table 3's setup (`profile 802.11b-11 cw 16
/// netload 1%`), saturated by 1498-byte packets (1470-byte UDP payloads),
/// carries the paper's emulated 7831 Kbit/s of payload within 3 % (the
/// report counts whole IP packets: ×1498/1470), and no packet is lost on
/// the link without noise or collisions; with `collision 1` every packet
/// that reaches the link is lost there (`drops.link`).
#[test]
fn wireless_link_in_sim_matches_table3() {
    let r = sim(
        &pipe("profile 802.11b-11 cw 16 netload 1% queue 100"),
        "cbr rate 1000pps size 1498B duration 10s",
        1,
        &[],
    );
    let f = &r.flows[0];
    let expect = 7831e3 * 1498.0 / 1470.0;
    let err = (f.throughput_bps - expect) / expect;
    assert!(
        err.abs() < 0.03,
        "{} bit/s vs {expect} ({:+.2} %)",
        f.throughput_bps,
        err * 100.0
    );
    assert_eq!(f.drops.link, 0);
    assert_eq!(f.sent, f.received + f.drops.queue);

    let r = sim(
        &pipe("wireless 802.11b rate 11Mbit/s collision 1 retries 2"),
        "cbr rate 100pps size 500B duration 2s",
        1,
        &[],
    );
    let f = &r.flows[0];
    assert_eq!(f.received, 0);
    assert_eq!(f.drops.link + f.drops.queue, f.sent);
    assert!(f.drops.link > 0);
}

/// Pass proves: `timevarying FILE` is read through the loader and the pipe
/// follows it: two states of 8 and 2 Mbit/s, each held exactly 1 s in
/// turn, give a saturated flow the mean 5 Mbit/s within 1 %, with no loss
/// but tail drops.
#[test]
fn timevarying_link_in_sim_averages_its_states() {
    let graph = "state fast bw 8Mbit/s\nstate slow bw 2Mbit/s\n\
                 dwell fast 1 1s\ndwell slow 1 1s\n\
                 arc fast slow 1\narc slow fast 1\n";
    let r = sim(
        &pipe("bw 8Mbit/s queue 100 timevarying tv.markov"),
        "cbr rate 1000pps size 1250B duration 10s",
        1,
        &[("tv.markov", graph)],
    );
    let f = &r.flows[0];
    let err = (f.throughput_bps - 5e6) / 5e6;
    assert!(err.abs() < 0.01, "{} bit/s vs 5 Mbit/s", f.throughput_bps);
    assert_eq!(f.sent, f.received + f.drops.queue);
}

/// Pass proves `queue N` counts the packet being transmitted, as
/// Dummynet does (README, "Queue lengths, as each tool counts them"): a
/// burst of 60 packets into `queue 50` delivers 50 and drops 10 at the
/// tail, where a Linux `pfifo limit 50` or an ns-3 `DropTailQueue` of 50,
/// which count only the packets waiting behind the one on the wire,
/// would deliver 51; and a `queue 1` pipe holds only the packet on the
/// wire (one of a burst of 3 delivered).
#[test]
fn queue_slots_include_the_packet_on_the_wire() {
    let burst = "cbr rate 1000000pps size 1000B duration 60us";
    let r = sim(&pipe("bw 1Mbit/s queue 50"), burst, 1, &[]);
    let f = &r.flows[0];
    assert_eq!((f.sent, f.received, f.drops.queue), (60, 50, 10));
    let r = sim(
        &pipe("bw 1Mbit/s queue 1"),
        "cbr rate 1000000pps size 1000B duration 3us",
        1,
        &[],
    );
    let f = &r.flows[0];
    assert_eq!((f.sent, f.received, f.drops.queue), (3, 1, 2));
}
