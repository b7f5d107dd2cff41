//! Fuzz the readers of trace files: bandwidth traces (`bw trace:PATH`,
//! Mahimahi's format) and loss traces (`loss trace:PATH`). Any text must
//! parse or fail with an error naming its line, never panic.
//!
//! The entry points this target calls are the readers' public parse
//! functions; point them at the readers' new home when they move.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipelab_lang::files;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = files::parse_bw_trace(text) {
        assert!(!e.to_string().is_empty());
    }
    if let Err(e) = files::parse_loss_trace(text) {
        assert!(!e.to_string().is_empty());
    }
});
