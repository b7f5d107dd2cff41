//! Fuzz the topology files: any text, read as GML and as TOML, must parse
//! or fail with an error, never panic; a topology that parses writes to
//! TOML (or says why not) without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipelab_topo::{parse_gml, parse_toml, to_toml};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(t) = parse_gml(text) {
        let _ = to_toml(&t);
    }
    if let Ok(t) = parse_toml(text) {
        let _ = to_toml(&t);
    }
});
