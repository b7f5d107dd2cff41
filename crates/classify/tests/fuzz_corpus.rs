//! The fuzz target `frame_classify`'s frame parsing as a regular test:
//! every input of its corpus (seeds and fixed crashes) parses to a view
//! of the frame's length.

use pipelab_classify::frame::parse_ethernet;

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
fn frame_classify_corpus() {
    for (name, data) in corpus("frame_classify") {
        let frame = data.split_first().map_or(&data[..], |(_, r)| r);
        let view = parse_ethernet(frame).view;
        assert_eq!(view.len as usize, frame.len(), "{name}");
    }
}
