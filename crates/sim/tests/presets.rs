//! Every preset against its source's numbers, in virtual time.
//!
//! The table below is written from the sources themselves (Apple's
//! Network Link Conditioner profiles, Chrome DevTools' throttling
//! targets, WebPageTest's connectivity profiles with their round-trip
//! time halved each way, a geostationary hop's propagation), not from
//! the preset's words: a pipe built from `preset NAME/SIDE` must delay a
//! lone packet by the row's delay plus its transmission time at the row's
//! rate (within a microsecond), and lose the row's share of 100,000 packets.

use pipelab_lang::{parse_traffic, Config, PRESETS};
use pipelab_sim::{simulate, SimOptions};

/// name, then per side (down, up): rate in kbit/s (0: none), one-way
/// delay in µs, loss in per cent.
type Side = (u64, u64, f64);
const SOURCES: &[(&str, Side, Side)] = &[
    ("nlc-3g", (780, 100_000, 0.0), (330, 100_000, 0.0)),
    ("nlc-dsl", (2_000, 5_000, 0.0), (256, 5_000, 0.0)),
    ("nlc-edge", (240, 400_000, 0.0), (200, 440_000, 0.0)),
    ("nlc-lte", (50_000, 50_000, 0.0), (10_000, 65_000, 0.0)),
    ("nlc-wifi", (40_000, 1_000, 0.0), (33_000, 1_000, 0.0)),
    (
        "nlc-very-bad-network",
        (1_000, 500_000, 10.0),
        (1_000, 500_000, 10.0),
    ),
    ("nlc-100-loss", (0, 0, 100.0), (0, 0, 100.0)),
    // DevTools: 500 kbit/s, 400 ms RTT; 1.6/0.75 Mbit/s, 150 ms; 9/1.5
    // Mbit/s, 60 ms.
    ("devtools-3g", (500, 200_000, 0.0), (500, 200_000, 0.0)),
    ("devtools-slow-4g", (1_600, 75_000, 0.0), (750, 75_000, 0.0)),
    (
        "devtools-fast-4g",
        (9_000, 30_000, 0.0),
        (1_500, 30_000, 0.0),
    ),
    // WebPageTest: bwIn/bwOut in kbit/s and the RTT.
    ("wpt-dial", (49, 60_000, 0.0), (30, 60_000, 0.0)),
    ("wpt-2g", (280, 400_000, 0.0), (256, 400_000, 0.0)),
    ("wpt-fios", (20_000, 2_000, 0.0), (5_000, 2_000, 0.0)),
    ("wpt-cable", (5_000, 14_000, 0.0), (1_000, 14_000, 0.0)),
    ("wpt-dsl", (1_500, 25_000, 0.0), (384, 25_000, 0.0)),
    ("wpt-3g-slow", (400, 200_000, 0.0), (400, 200_000, 0.0)),
    ("wpt-3g", (1_600, 150_000, 0.0), (768, 150_000, 0.0)),
    ("wpt-3g-fast", (1_600, 75_000, 0.0), (768, 75_000, 0.0)),
    ("wpt-4g", (9_000, 85_000, 0.0), (9_000, 85_000, 0.0)),
    ("wpt-lte", (12_000, 35_000, 0.0), (12_000, 35_000, 0.0)),
    ("wpt-edge", (240, 420_000, 0.0), (200, 420_000, 0.0)),
    // 2 x 41,679 km at 299,792.458 km/s.
    ("geo", (25_000, 279_000, 0.0), (3_000, 279_000, 0.0)),
];

/// The flow's report through `pipe 1 config preset NAME/SIDE`.
fn through(preset: &str, traffic: &str) -> pipelab_sim::FlowReport {
    let mut cfg = Config::new();
    let script = format!("pipe 1 config preset {preset}\nadd 100 pipe 1 ip from any to any\n");
    cfg.apply_script(&script)
        .unwrap_or_else(|e| panic!("{script}: {e:?}"));
    let specs = vec![parse_traffic(traffic).expect("traffic")];
    let r = simulate(&cfg, &specs, &SimOptions::default()).expect("runs");
    r.flows.into_iter().next().expect("one flow")
}

/// A pass proves each side of each preset delays a lone 100-byte packet
/// by its source's one-way delay plus 800 bits at its source's rate
/// (within 1 µs: a rate rounds to whole nanoseconds), and loses its source's share (10 % ± 0.5 of 100,000 packets;
/// all of them at 100 %); and that the table covers every preset.
#[test]
fn every_preset_gives_its_sources_numbers() {
    let mut names: Vec<&str> = SOURCES.iter().map(|s| s.0).collect();
    let mut listed: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
    names.sort_unstable();
    listed.sort_unstable();
    assert_eq!(names, listed, "one row per preset");
    for &(name, down, up) in SOURCES {
        for (side, (kbps, delay_us, loss)) in [("down", down), ("up", up)] {
            let preset = format!("{name}/{side}");
            if loss == 0.0 {
                // One packet every 100 ms: never a queue.
                let f = through(&preset, "cbr rate 10pps size 100B duration 10s");
                let d = f.delay_ms.expect("delays");
                let want_ns = delay_us * 1000 + 800_000_000u64.checked_div(kbps).unwrap_or(0);
                let want = want_ns as f64 / 1e6;
                assert_eq!(f.received, f.sent, "{preset}: nothing lost");
                assert!(
                    (d.min - want).abs() < 1e-3 && (d.max - want).abs() < 1e-3,
                    "{preset}: delay {}..{} ms, the source says {want} ms",
                    d.min,
                    d.max
                );
            } else {
                let f = through(&preset, "cbr rate 1000pps size 100B duration 100s");
                let lost = 100.0 * (f.sent - f.received) as f64 / f.sent as f64;
                assert!(
                    (lost - loss).abs() <= 0.5,
                    "{preset}: lost {lost:.2} %, the source says {loss} %"
                );
            }
        }
    }
}
