//! Fuzz the readers of a link over time: `timevarying PATH` (a Markov
//! graph of link states), `timeline PATH` and `delay trace:PATH` (text,
//! or Rattan's JSON). Any text must parse or fail with an error, never
//! panic.
//!
//! The entry point is the language's reader of the format
//! (`pipelab_lang::files`), which reads every value with the language's
//! units and builds the engine's object.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipelab_lang::{files, timeline};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for read in [
        files::parse_markov_graph,
        timeline::parse_timeline,
        timeline::parse_delay_trace,
    ] {
        if let Err(e) = read(text) {
            assert!(!e.to_string().is_empty());
        }
    }
});
