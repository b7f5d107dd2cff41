//! Fuzz the lines of a live topology: its control commands (`link A B
//! down`, `node N set ...`) and experiment scripts (`TIME COMMAND`). Any
//! text must parse or fail with an error, never panic; a command that
//! parses prints back to text that parses equal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipelab_topo::parse_command;
use pipelab_topo::script::parse_script;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for line in text.lines() {
        if let Ok(cmd) = parse_command(line) {
            let printed = cmd.to_string();
            assert_eq!(parse_command(&printed).ok(), Some(cmd), "{printed}");
        }
    }
    let _ = parse_script(text);
});
