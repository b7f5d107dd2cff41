//! Fuzz the reader of delay distribution files (`distribution
//! file:PATH`: samples or CDF points). Any text must parse or fail with
//! an error naming its line, never panic.
//!
//! The one entry point this target calls is the reader's public parse
//! function; point it at the reader's new home when it moves.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipelab_engine::models::EmpiricalDelay;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = EmpiricalDelay::parse(text) {
        assert!(!e.to_string().is_empty());
    }
});
