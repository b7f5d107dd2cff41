//! The fuzz target `daemon_request` as a regular test: every input of
//! its corpus (seeds and fixed crashes) passes the target's checks.

use pipelab_control::protocol::{parse_request, Op};
use pipelab_control::state::{State, Target};

/// The inputs of a fuzz target: its seeds in `fuzz/corpus/TARGET/`, and
/// every crash the fuzzer found, saved there (as `crash-…`) once fixed.
fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut inputs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let p = e.expect("entry").path();
            let bytes = std::fs::read(&p).expect("read");
            (p.display().to_string(), bytes)
        })
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "no inputs in {}", dir.display());
    inputs
}

#[test]
fn daemon_request_corpus() {
    let base = State::default()
        .exec(Target::Root, "pipe 1 config\nadd 100 pipe 1")
        .expect("base")
        .next;
    for (name, data) in corpus("daemon_request") {
        let Ok(req) = parse_request(&data) else {
            continue;
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
                    let text = change.next.merged().to_script();
                    let mut cfg = pipelab_lang::Config::new();
                    assert!(cfg.apply_script(&text).is_ok(), "{name}: {text}");
                }
                Err(e) => assert!(!e.to_string().is_empty(), "{name}"),
            }
        }
    }
}
