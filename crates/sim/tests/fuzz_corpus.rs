//! The fuzz target `traffic_sim` as a regular test: every input of its
//! corpus (seeds and fixed crashes) passes the target's checks, within
//! the target's bounds (at most 8 sources of at most 2000 packets).

use pipelab_lang::{parse_traffic_lines, Config};
use pipelab_sim::{simulate_with_loader, SimError, SimOptions};

/// The link the specs run through without a configuration.
const LINK: &str =
    "pipe 1 config bw 10Mbit/s delay 5ms queue 20\nadd 100 pipe 1 ip from any to any\n";

/// The inputs of a fuzz target: its seeds in `fuzz/corpus/TARGET/`, and
/// every crash the fuzzer found, saved there (as `crash-…`) once fixed.
fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut inputs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let p = e.expect("entry").path();
            let bytes = std::fs::read(&p).expect("read");
            (p.display().to_string(), bytes)
        })
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "no inputs in {}", dir.display());
    inputs
}

/// The target's body: the report as JSON (or the error) on one worker,
/// after checking two give the same.
fn run(name: &str, data: &[u8]) -> Option<Result<String, SimError>> {
    let text = std::str::from_utf8(data).ok()?;
    let (config, specs) = text.split_once("\n%%\n").unwrap_or((LINK, text));
    let mut cfg = Config::new();
    cfg.apply_script(config).ok()?;
    let mut specs = parse_traffic_lines(specs).ok()?;
    specs.truncate(8);
    for s in &mut specs {
        let (num, den) = s.interval();
        let most = num.saturating_mul(2000) / den.max(1);
        if (s.duration.as_nanos() as u128) > most {
            s.duration = pipelab_engine::Duration::from_nanos(most as u64);
        }
    }
    let mut load = |path: &str| Err(format!("{path}: no files here"));
    let mut go = |workers| {
        let opts = SimOptions {
            workers,
            ..SimOptions::default()
        };
        simulate_with_loader(&cfg, &specs, &opts, &mut load).map(|r| r.to_json())
    };
    let one = go(1);
    assert_eq!(one, go(2), "{name}: one worker and two disagree");
    Some(one)
}

#[test]
fn traffic_sim_corpus() {
    let mut ran = 0;
    for (name, data) in corpus("traffic_sim") {
        let Some(r) = run(&name, &data) else {
            continue;
        };
        ran += 1;
        // The seeds near the horizon of virtual time stop there with an
        // error, or are refused for sending past it; the others run.
        match r {
            Err(SimError::Horizon { .. }) => assert!(name.ends_with("late-start"), "{name}"),
            Err(SimError::Traffic { .. }) => assert!(name.ends_with("past-the-end"), "{name}"),
            Err(e) => panic!("{name}: {e}"),
            Ok(_) => assert!(
                !name.ends_with("late-start"),
                "{name}: ran past the horizon"
            ),
        }
    }
    assert!(ran >= 5, "{ran} inputs ran");
}
