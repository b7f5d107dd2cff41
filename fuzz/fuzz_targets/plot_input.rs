//! Fuzz `pipelab plot`'s readers and drawing: any text, read as the CLI
//! reads it (`pipelab_plot::read`, the input's kind told from its
//! content), must be read or refused with a message, never panic; every
//! kind of graph the data has must be drawn as SVG, and the default kind
//! (the one `pipelab plot` draws without `--kind`) also as a PNG, at
//! 200x200 pixels (the smallest image `--size` takes), without an error,
//! a panic, a hang or unbounded memory. (A range no `f64` holds once
//! made an axis' tick search loop forever.)
//!
//! One PNG an input, not one a kind: rasterising costs 20 to 30 times
//! what the SVG of the same graph costs (10 to 75 ms against about half
//! a millisecond), and would take most of the run's executions. The
//! axes, the ticks and the coordinates are the same code for both
//! backends; the PNG of one kind still exercises the rasteriser and the
//! encoder, and the corpus test (`crates/plot/tests/fuzz_corpus.rs`)
//! draws every kind of every seed as PNG.
//!
//! Bounded per input: the readers' work and the points drawn grow with
//! the text (at most `-max_len` bytes), whatever numbers it holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipelab_plot::{draw, read, Kind, Missing};

/// The image's size: the smallest `pipelab plot --size` takes.
const SIZE: (u32, u32) = (200, 200);

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let d = match read(text) {
        Ok(d) => d,
        Err(e) => {
            assert!(!e.is_empty());
            return;
        }
    };
    let kinds = d.kinds();
    assert_eq!(d.choose(None).ok(), kinds.first().copied());
    for kind in Kind::BEST_FIRST {
        match d.choose(Some(kind)) {
            Ok(k) => assert_eq!(k, kind),
            Err(Missing::Kind { kind: k, why }) => {
                assert_eq!(k, kind);
                assert!(!why.is_empty());
            }
            Err(Missing::Empty { .. }) => panic!("a kind asked for is never empty"),
        }
    }
    for &kind in &kinds {
        let svg = draw::svg(&d, kind, SIZE).unwrap_or_else(|e| panic!("{kind:?} as SVG: {e}"));
        assert!(svg.starts_with("<svg"), "{kind:?}: not an SVG");
    }
    if let Some(&kind) = kinds.first() {
        let png = draw::png(&d, kind, SIZE).unwrap_or_else(|e| panic!("{kind:?} as PNG: {e}"));
        assert!(png.starts_with(b"\x89PNG"), "{kind:?}: not a PNG");
    }
});
