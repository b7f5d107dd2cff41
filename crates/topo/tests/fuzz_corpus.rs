//! The fuzz targets `topology_file`, `topology_lines` and
//! `topology_distill` as regular tests: every input of their corpora
//! (seeds and fixed crashes) passes the targets' checks.

use pipelab_topo::assign::{greedy_k_clusters, partition_balanced};
use pipelab_topo::script::parse_script;
use pipelab_topo::{distill, parse_command, parse_gml, parse_toml, to_toml, Mode, Topology};

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
        if let Ok(t) = pipelab_topo::parse_graphml(text) {
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

/// `topology_distill`'s checks of one topology: every mode distils (or
/// is refused), pipes in reverse pairs, every pipe assigned a core by
/// both methods; the number of modes that distilled.
fn distill_and_assign(name: &str, t: &Topology) -> usize {
    if t.nodes.len() > 300 || t.links.len() > 300 {
        return 0;
    }
    let mut distilled = 0;
    for mode in [
        Mode::HopByHop,
        Mode::EndToEnd,
        Mode::LastMile,
        Mode::WalkIn(2),
        Mode::WalkOut {
            walk_in: 1,
            walk_out: 1,
        },
    ] {
        let Ok(d) = distill(t, mode) else {
            continue;
        };
        distilled += 1;
        assert_eq!(d.pipes.len() % 2, 0, "{name} {mode}: pipes in pairs");
        for pair in d.pipes.chunks(2) {
            assert_eq!(
                (pair[0].from, pair[0].to),
                (pair[1].to, pair[1].from),
                "{name} {mode}"
            );
        }
        let _ = d.stats();
        for k in [1, 3] {
            for a in [greedy_k_clusters(&d, k, 1), partition_balanced(&d, k, 1)] {
                assert_eq!(a.core_of_pipe.len(), d.pipes.len(), "{name} {mode}");
                assert!(
                    a.core_of_pipe.iter().all(|&c| (c as usize) < k),
                    "{name} {mode}"
                );
                let _ = a.cross_fraction(&d.routes);
                let _ = a.handoffs(&d.routes);
            }
        }
    }
    distilled
}

#[test]
fn topology_distill_corpus() {
    let mut distilled = 0;
    for (name, data) in corpus("topology_distill") {
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        if let Ok(t) = parse_gml(text) {
            distilled += distill_and_assign(&name, &t);
        }
        if let Ok(t) = parse_toml(text) {
            distilled += distill_and_assign(&name, &t);
        }
    }
    // The seeds are valid topologies: each distils in several modes.
    assert!(distilled >= 10, "{distilled} distillations");
}
