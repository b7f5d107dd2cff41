//! Fuzz traffic specs run through the simulator: a configuration and
//! traffic specs, as `CONFIG\n%%\nSPECS` (or specs alone, against one
//! link), must run or fail with an error, never panic, hang or grow
//! without bound, and give the same report on one worker and on two.
//!
//! Bounded per input: at most 8 sources of at most 2000 packets each
//! (a longer source is cut to its first 2000 packets' duration), so an
//! input costs milliseconds whatever rates and durations it asks for;
//! the instants may still reach the horizon of virtual time (`start`
//! near 584 years, a link of 1 bit/s), which must stop with an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipelab_lang::{parse_traffic_lines, Config};
use pipelab_sim::{simulate_with_loader, SimOptions};

/// The link the specs run through without a configuration.
const LINK: &str = "pipe 1 config bw 10Mbit/s delay 5ms queue 20\nadd 100 pipe 1 ip from any to any\n";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (config, specs) = text.split_once("\n%%\n").unwrap_or((LINK, text));
    let mut cfg = Config::new();
    if cfg.apply_script(config).is_err() {
        return;
    }
    let Ok(mut specs) = parse_traffic_lines(specs) else {
        return;
    };
    specs.truncate(8);
    for s in &mut specs {
        // Packets ≈ duration / interval: at most 2000.
        let (num, den) = s.interval();
        let most = num.saturating_mul(2000) / den.max(1);
        if (s.duration.as_nanos() as u128) > most {
            s.duration = pipelab_engine::Duration::from_nanos(most as u64);
        }
    }
    let mut load = |path: &str| Err(format!("{path}: no files here"));
    let mut run = |workers| {
        let opts = SimOptions {
            workers,
            ..SimOptions::default()
        };
        simulate_with_loader(&cfg, &specs, &opts, &mut load).map(|r| r.to_json())
    };
    let one = run(1);
    if let Ok(r) = &one {
        assert!(!r.is_empty());
    }
    assert_eq!(one, run(2), "one worker and two disagree");
});
