//! The fuzz target `plot_input` as a regular test: every input of its
//! corpus (seeds and fixed crashes) passes the target's checks: read or
//! refused with a message, and every kind of graph it has drawn as SVG
//! and as a PNG of 200x200 pixels (the target, for speed, draws the PNG
//! of the default kind only). The seeds, real reports and logs of every
//! kind `pipelab plot` reads, are all read and drawn.

use pipelab_plot::{draw, read, Kind, Missing};

/// The image's size: the smallest `pipelab plot --size` takes.
const SIZE: (u32, u32) = (200, 200);

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

/// The target's body: the kinds drawn, or `None` for an input that is
/// not UTF-8 or is refused.
fn run(name: &str, data: &[u8]) -> Option<Vec<Kind>> {
    let text = std::str::from_utf8(data).ok()?;
    let d = match read(text) {
        Ok(d) => d,
        Err(e) => {
            assert!(!e.is_empty(), "{name}: an empty refusal");
            return None;
        }
    };
    let kinds = d.kinds();
    assert_eq!(d.choose(None).ok(), kinds.first().copied(), "{name}");
    for kind in Kind::BEST_FIRST {
        match d.choose(Some(kind)) {
            Ok(k) => assert_eq!(k, kind, "{name}"),
            Err(Missing::Kind { kind: k, why }) => {
                assert_eq!(k, kind, "{name}");
                assert!(!why.is_empty(), "{name}: {kind:?} missing, no reason");
            }
            Err(Missing::Empty { .. }) => panic!("{name}: a kind asked for is never empty"),
        }
    }
    for &kind in &kinds {
        let svg =
            draw::svg(&d, kind, SIZE).unwrap_or_else(|e| panic!("{name}: {kind:?} as SVG: {e}"));
        assert!(svg.starts_with("<svg"), "{name}: {kind:?}: not an SVG");
        let png =
            draw::png(&d, kind, SIZE).unwrap_or_else(|e| panic!("{name}: {kind:?} as PNG: {e}"));
        assert!(png.starts_with(b"\x89PNG"), "{name}: {kind:?}: not a PNG");
    }
    Some(kinds)
}

#[test]
fn plot_input_corpus() {
    let mut seeds = 0;
    for (name, data) in corpus("plot_input") {
        let drawn = run(&name, &data);
        let crash = std::path::Path::new(&name)
            .file_name()
            .and_then(|f| f.to_str())
            .is_some_and(|f| f.starts_with("crash-"));
        if !crash {
            seeds += 1;
            assert!(
                drawn.is_some_and(|k| !k.is_empty()),
                "{name}: a seed is read and has a graph"
            );
        }
    }
    assert!(seeds >= 6, "{seeds} seeds");
}
