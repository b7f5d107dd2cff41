//! The fuzz targets `topology_file` and `topology_lines` as regular
//! tests: every input of their corpora (seeds and fixed crashes) passes
//! the targets' checks.

use pipelab_topo::script::parse_script;
use pipelab_topo::{parse_command, parse_gml, parse_toml, to_toml};

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
fn topology_file_corpus() {
    for (_, data) in corpus("topology_file") {
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        if let Ok(t) = parse_gml(text) {
            let _ = to_toml(&t);
        }
        if let Ok(t) = parse_toml(text) {
            let _ = to_toml(&t);
        }
    }
}

#[test]
fn topology_lines_corpus() {
    for (name, data) in corpus("topology_lines") {
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        for line in text.lines() {
            if let Ok(cmd) = parse_command(line) {
                let printed = cmd.to_string();
                assert_eq!(parse_command(&printed).ok(), Some(cmd), "{name}: {printed}");
            }
        }
        let _ = parse_script(text);
    }
}
