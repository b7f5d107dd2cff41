//! Fuzz the reader of time-varying link files (`timevarying file:PATH`:
//! a Markov graph of link states). Any text must parse or fail with an
//! error naming its line, never panic.
//!
//! The entry point is the language's reader of the format
//! (`pipelab_lang::files`), which reads every value with the language's
//! units and builds the engine's object.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipelab_lang::files;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = files::parse_markov_graph(text) {
        assert!(!e.to_string().is_empty());
    }
});
