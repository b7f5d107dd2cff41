//! The fuzz targets `command_parser` and `traffic_parser` as regular
//! tests: every input of their corpora (seeds and fixed crashes) passes
//! the targets' checks.

use pipelab_lang::{parse_line, parse_script, parse_traffic, Config};

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

#[test]
fn command_parser_corpus() {
    for (name, data) in corpus("command_parser") {
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        for line in text.lines() {
            if let Ok(Some(cmd)) = parse_line(line) {
                let printed = cmd.to_string();
                assert_eq!(
                    parse_line(&printed).ok().flatten(),
                    Some(cmd),
                    "{name}: {printed}"
                );
            }
            if let Ok(chain) = pipelab_lang::mahimahi::parse_mm_chain(line) {
                for spec in [&chain.uplink, &chain.downlink] {
                    let printed = format!("pipe 1 config {spec}");
                    assert!(parse_line(&printed).is_ok(), "{name}: {line}: {printed}");
                }
            }
        }
        let _ = parse_script(text);
        let mut cfg = Config::new();
        let before = cfg.clone();
        if cfg.apply_script(text).is_err() {
            assert_eq!(
                cfg, before,
                "{name}: a failed script changed the configuration"
            );
        }
    }
}

#[test]
fn traffic_parser_corpus() {
    for (name, data) in corpus("traffic_parser") {
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        for line in text.lines() {
            if let Ok(spec) = parse_traffic(line) {
                let printed = spec.to_string();
                assert_eq!(
                    parse_traffic(&printed).ok(),
                    Some(spec),
                    "{name}: {printed}"
                );
            }
        }
    }
}
