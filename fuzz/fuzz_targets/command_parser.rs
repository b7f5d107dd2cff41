//! Fuzz the command language: any text must parse or fail with an error,
//! never panic; whatever parses must print back to text that parses equal,
//! and applying a script must be all or nothing. A line read as a
//! Mahimahi chain (`shell --mm`) gives pipes the language accepts, or an
//! error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipelab_lang::mahimahi::parse_mm_chain;
use pipelab_lang::{parse_line, parse_script, Config};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for line in text.lines() {
        if let Ok(Some(cmd)) = parse_line(line) {
            let printed = cmd.to_string();
            assert_eq!(parse_line(&printed).ok().flatten(), Some(cmd), "{printed}");
        }
        if let Ok(chain) = parse_mm_chain(line) {
            for spec in [&chain.uplink, &chain.downlink] {
                let printed = format!("pipe 1 config {spec}");
                assert!(parse_line(&printed).is_ok(), "{line}: {printed}");
            }
        }
    }
    let _ = parse_script(text);
    let mut cfg = Config::new();
    let before = cfg.clone();
    if cfg.apply_script(text).is_err() {
        assert_eq!(cfg, before, "a failed script changed the configuration");
    }
});
