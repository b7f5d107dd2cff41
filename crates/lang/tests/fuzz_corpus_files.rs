//! The fuzz targets of the file readers (`profile_file`, `trace_file`,
//! `distribution_file`, `timevarying_file`) as regular tests: every
//! input of their corpora (seeds and fixed crashes) parses or fails with
//! a message.

use pipelab_lang::{files, timeline};

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

fn texts(target: &str) -> Vec<(String, String)> {
    corpus(target)
        .into_iter()
        .filter_map(|(n, b)| String::from_utf8(b).ok().map(|t| (n, t)))
        .collect()
}

#[test]
fn file_reader_corpora() {
    for (name, text) in texts("profile_file") {
        if let Err(e) = files::parse_profile(&text) {
            assert!(!e.to_string().is_empty(), "{name}");
        }
    }
    for (name, text) in texts("trace_file") {
        if let Err(e) = files::parse_bw_trace(&text) {
            assert!(!e.to_string().is_empty(), "{name}");
        }
        if let Err(e) = files::parse_loss_trace(&text) {
            assert!(!e.to_string().is_empty(), "{name}");
        }
    }
    for (name, text) in texts("distribution_file") {
        if let Err(e) = files::parse_distribution(&text) {
            assert!(!e.to_string().is_empty(), "{name}");
        }
    }
    for (name, text) in texts("timevarying_file") {
        for read in [
            files::parse_markov_graph,
            timeline::parse_timeline,
            timeline::parse_delay_trace,
        ] {
            if let Err(e) = read(&text) {
                assert!(!e.to_string().is_empty(), "{name}");
            }
        }
    }
}
