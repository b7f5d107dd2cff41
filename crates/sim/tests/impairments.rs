//! Scenario tests of the impairment words of the command language (`loss`,
//! `plr`, `delay MU SIGMA distribution D`, `jitter-order`, `duplicate`,
//! `reorder`, `corrupt`, `ber`), end to end from text through
//! `pipelab_sim::simulate`, checked against their predicted rates.
//!
//! Tolerances are 3 standard deviations of the binomial count (the runs are
//! seeded, so each check is deterministic; 3σ says the model's rate is
//! right, not that a lucky seed was picked).

use pipelab_lang::{parse_traffic, Config};
use pipelab_sim::{simulate, simulate_with_loader, Report, SimOptions};

fn sim(config: &str, traffic: &str, seed: u64) -> Report {
    let mut cfg = Config::new();
    cfg.apply_script(config)
        .unwrap_or_else(|e| panic!("config parses: {e:?}\n{config}"));
    let specs = vec![parse_traffic(traffic).expect("traffic parses")];
    simulate(
        &cfg,
        &specs,
        &SimOptions {
            seed,
            ..SimOptions::default()
        },
    )
    .expect("simulation runs")
}

/// One pipe with `params`, every packet through it.
fn pipe(params: &str) -> String {
    format!("pipe 1 config {params}\nadd 100 pipe 1 ip from any to any\n")
}

/// 100 000 packets of `size` bytes, 1 ms apart.
fn cbr(size: u32) -> String {
    format!("cbr rate 1000pps size {size}B duration 100s")
}

/// Asserts `count` out of `n` is within 3σ of a binomial with rate `p`.
fn assert_binomial(what: &str, count: u64, n: u64, p: f64) {
    let mean = n as f64 * p;
    let sigma = (n as f64 * p * (1.0 - p)).sqrt();
    assert!(
        (count as f64 - mean).abs() <= 3.0 * sigma,
        "{what}: {count} of {n}, expected {mean:.1} ± {:.1} (3σ)",
        3.0 * sigma
    );
}

#[test]
fn loss_5_percent_and_plr_0_05_lose_5_percent() {
    let a = sim(&pipe("loss 5%"), &cbr(100), 7);
    let b = sim(&pipe("plr 0.05"), &cbr(100), 7);
    let (fa, fb) = (&a.flows[0], &b.flows[0]);
    assert_eq!((fa.sent, fb.sent), (100_000, 100_000));
    assert_binomial("loss 5%", fa.lost, fa.sent, 0.05);
    assert_binomial("plr 0.05", fb.lost, fb.sent, 0.05);
    assert_eq!(fa.drops.loss, fa.lost, "every loss is the loss model's");
    assert_eq!(fb.drops.loss, fb.lost);
    // The two are the same model: their difference is within 3σ of 0.
    let sigma_diff = (2.0 * 100_000.0 * 0.05 * 0.95f64).sqrt();
    assert!(
        (fa.lost as f64 - fb.lost as f64).abs() <= 3.0 * sigma_diff,
        "loss 5% lost {}, plr 0.05 lost {}",
        fa.lost,
        fb.lost
    );
}

#[test]
fn jitter_order_keep_never_reorders() {
    let r = sim(
        &pipe("delay 50ms 10ms distribution normal jitter-order keep"),
        &cbr(100),
        3,
    );
    let f = &r.flows[0];
    assert_eq!(f.received, 100_000);
    assert_eq!(f.reordered, 0);
    let d = f.delay_ms.expect("delays");
    // Head-of-line: a packet waits for the slowest one ahead of it, so the
    // mean grows above 50 ms but never below the 10 ms-jittered draw.
    assert!(d.mean > 50.0, "mean {}", d.mean);
    assert!(d.min >= 50.0 - 4.0 * 10.0 - 1e-6, "min {}", d.min);
}

/// A small deterministic generator for the independent Monte-Carlo check
/// (splitmix64 and the Box-Muller transform: nothing shared with the engine).
struct Mc(u64);

impl Mc {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// N(0, 1) clipped at ±4, as netem's normal table is.
    fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        z.clamp(-4.0, 4.0)
    }
}

/// The fraction of packets the report counts as reordered (delivered after
/// a packet sent later) when packet `i` is sent at `i·gap_ms` and takes
/// `mu + sigma·N(0,1)` ms, each at its own time (`jitter-order allow`).
fn monte_carlo_reorder_fraction(n: usize, gap_ms: f64, mu: f64, sigma: f64, seed: u64) -> f64 {
    let mut mc = Mc(seed);
    let mut exits: Vec<(f64, usize)> = (0..n)
        .map(|i| (i as f64 * gap_ms + (mu + sigma * mc.normal()).max(0.0), i))
        .collect();
    exits.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    let mut next_seq = 0;
    let mut reordered = 0u64;
    for &(_, seq) in &exits {
        if seq + 1 < next_seq {
            reordered += 1;
        }
        next_seq = next_seq.max(seq + 1);
    }
    reordered as f64 / n as f64
}

#[test]
fn jitter_order_allow_reorders_as_often_as_monte_carlo_predicts() {
    let r = sim(
        &pipe("delay 50ms 10ms distribution normal jitter-order allow"),
        &cbr(100),
        3,
    );
    let f = &r.flows[0];
    assert_eq!(f.received, 100_000);
    assert!(f.reordered > 0);
    let n = f.received as f64;
    let measured = f.reordered as f64 / n;
    let m = 400_000;
    let predicted = monte_carlo_reorder_fraction(m, 1.0, 50.0, 10.0, 0x5eed);
    // 3σ of the difference of two binomial proportions.
    let sigma = (predicted * (1.0 - predicted) * (1.0 / n + 1.0 / m as f64)).sqrt();
    assert!(
        (measured - predicted).abs() <= 3.0 * sigma,
        "reordered fraction {measured:.5}, Monte Carlo {predicted:.5} ± {:.5} (3σ)",
        3.0 * sigma
    );
    let d = f.delay_ms.expect("delays");
    assert!((d.mean - 50.0).abs() < 0.2, "mean {}", d.mean);
    assert!((d.stddev - 10.0).abs() < 0.2, "stddev {}", d.stddev);
}

#[test]
fn duplicate_1_percent_duplicates_1_percent() {
    let r = sim(&pipe("duplicate 1%"), &cbr(100), 11);
    let f = &r.flows[0];
    assert_eq!((f.sent, f.received), (100_000, 100_000));
    assert_binomial("duplicate 1%", f.duplicated, f.sent, 0.01);
}

#[test]
fn netem_reorder_with_delay_reorders() {
    let r = sim(&pipe("delay 10ms reorder 25% 50%"), &cbr(100), 5);
    let f = &r.flows[0];
    assert_eq!(f.received, 100_000);
    assert!(f.reordered > 0, "reordered {}", f.reordered);
    // Without the reorder word nothing is reordered.
    let r = sim(&pipe("delay 10ms"), &cbr(100), 5);
    assert_eq!(r.flows[0].reordered, 0);
}

#[test]
fn corrupt_and_ber_corrupt_at_their_rates() {
    let r = sim(&pipe("corrupt 0.1%"), &cbr(100), 13);
    let f = &r.flows[0];
    assert_eq!(f.received, 100_000, "corruption does not drop");
    assert_binomial("corrupt 0.1%", f.corrupted, f.received, 0.001);
    for size in [100u32, 1500] {
        let r = sim(&pipe("ber 1e-6"), &cbr(size), 13);
        let f = &r.flows[0];
        let p = 1.0 - (1.0 - 1e-6f64).powi(8 * size as i32);
        assert_binomial(&format!("ber 1e-6, {size} B"), f.corrupted, f.received, p);
    }
}

#[test]
fn the_same_seed_gives_the_same_json() {
    let config = pipe(
        "bw 10Mbit/s delay 20ms 5ms 25% distribution pareto jitter-order allow loss gemodel 1% 30% \
         duplicate 0.5% reorder 10% gap 3 corrupt 0.1%",
    );
    let traffic = "poisson rate 2000pps size 500B duration 10s";
    let a = sim(&config, traffic, 42).to_json();
    let b = sim(&config, traffic, 42).to_json();
    assert_eq!(a, b);
    let c = sim(&config, traffic, 43).to_json();
    assert_ne!(a, c, "another seed draws other numbers");
}

#[test]
fn files_are_read_through_the_loader_with_errors_naming_them() {
    let mut cfg = Config::new();
    cfg.apply_script(&pipe(
        "delay 5ms distribution file:delays.txt loss trace:drops.txt",
    ))
    .expect("config parses");
    let specs = vec![parse_traffic("cbr rate 1000pps size 100B duration 1s").unwrap()];
    let mut load = |path: &str| match path {
        "delays.txt" => Ok("1ms\n2ms\n3ms\n".to_string()),
        "drops.txt" => Ok("1-10\n".to_string()),
        other => Err(format!("no such file {other}")),
    };
    let r = simulate_with_loader(&cfg, &specs, &SimOptions::default(), &mut load).unwrap();
    let f = &r.flows[0];
    assert_eq!((f.sent, f.lost), (1000, 10));
    let d = f.delay_ms.expect("delays");
    assert!(d.min >= 6.0 && d.max <= 8.0, "{d:?}");
    let mut bad = |_: &str| Ok("1ms\nfast\n".to_string());
    let e = simulate_with_loader(&cfg, &specs, &SimOptions::default(), &mut bad).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("pipe 1: distribution: 'delays.txt': line 2: invalid duration 'fast'"),
        "{msg}"
    );
    let mut missing = |p: &str| Err(format!("{p}: not found"));
    let e = simulate_with_loader(&cfg, &specs, &SimOptions::default(), &mut missing).unwrap_err();
    assert_eq!(
        e.to_string(),
        "pipe 1: distribution: cannot read 'delays.txt': delays.txt: not found"
    );
}
