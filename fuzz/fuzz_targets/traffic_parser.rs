//! Fuzz traffic specs: never panic; what parses prints back equal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipelab_lang::parse_traffic;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(spec) = parse_traffic(text) {
        let printed = spec.to_string();
        assert_eq!(parse_traffic(&printed).ok(), Some(spec), "{printed}");
    }
});
