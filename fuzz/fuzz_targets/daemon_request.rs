//! Fuzz pipelabd's request handling without a socket: any bytes must parse
//! to a request or fail with an error, never panic; a parsed request run
//! against a state (as root and as a user) must succeed or fail with a
//! message (the state methods work on a copy: a failure changes nothing),
//! and what a success commits must be valid input of the language.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipelab_control::protocol::{parse_request, Op};
use pipelab_control::state::{State, Target};

fuzz_target!(|data: &[u8]| {
    let Ok(req) = parse_request(data) else {
        return;
    };
    let Ok(base) = State::default()
        .exec(Target::Root, "pipe 1 config\nadd 100 pipe 1")
        .map(|c| c.next)
    else {
        return;
    };
    for t in [Target::Root, Target::User(1000)] {
        let r = match &req.op {
            Op::Exec { script } => base.exec(t, script),
            Op::Restore { script } => base.restore(t, script),
            Op::Netconfig { args, dry_run } => base.netconfig(t, args, *dry_run),
            Op::Limit { args } => base.limit(args, &|_| Ok(1000)),
            Op::Save | Op::Stats => continue,
        };
        match r {
            Ok(change) => {
                // The merged configuration is valid input of the language.
                let text = change.next.merged().to_script();
                let mut cfg = pipelab_lang::Config::new();
                assert!(cfg.apply_script(&text).is_ok(), "{text}");
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
});
