//! Every example in `readme_examples.txt` (copied into the README) parses,
//! and its canonical text parses back to the same command.

use pipelab_engine::sched::SCHEDULERS;
use pipelab_lang::{parse_line, parse_script};

const EXAMPLES: &str = include_str!("readme_examples.txt");

#[test]
fn every_readme_example_parses_and_round_trips() {
    let mut count = 0;
    for (i, line) in EXAMPLES.lines().enumerate() {
        let parsed = parse_line(line).unwrap_or_else(|e| panic!("line {}: {e}\n{line}", i + 1));
        let Some(cmd) = parsed else {
            assert!(line.trim().is_empty() || line.trim_start().starts_with('#'));
            continue;
        };
        count += 1;
        let text = cmd.to_string();
        assert_eq!(parse_line(&text), Ok(Some(cmd)), "{line} printed as {text}");
    }
    assert!(count >= 20, "only {count} examples");
    assert_eq!(parse_script(EXAMPLES).map(|c| c.len()), Ok(count));
}

#[test]
fn canonical_forms_of_some_examples() {
    let canon = |s: &str| parse_line(s).unwrap().unwrap().to_string();
    assert_eq!(
        canon("ipfw pipe 3 config bw 640Kbit/s delay 30ms queue 20"),
        "pipe 3 config bw 640Kbit/s delay 30ms queue 20"
    );
    assert_eq!(
        canon("pipe 5 config queue 64KiB delay 20.8ms bw 1.5Mbit/s"),
        "pipe 5 config bw 1500Kbit/s delay 20800us queue 64KB"
    );
    assert_eq!(
        canon("ipfw pipe 6 config delay 100"),
        "pipe 6 config delay 100ms"
    );
    assert_eq!(
        canon("add 1000 prob 0.2 pipe 10 src-port 80 in"),
        "add 1000 prob 0.2 pipe 10 ip from any to any src-port 80 in"
    );
    assert_eq!(
        canon("add 1000 pipe 10 prob 20% log all from any to any"),
        "add 1000 prob 0.2 pipe 10 log ip from any to any"
    );
    assert_eq!(
        canon("ADD 5 Accept TCP FROM 10.0.0.1/8 80 TO Any"),
        "add 5 allow tcp from 10.0.0.0/8 80 to any"
    );
    assert_eq!(canon("pipe list"), "pipe show");
    assert_eq!(canon("add drop"), "add deny ip from any to any");
}

/// README's `sched N config type T` row names every scheduler of the
/// engine's registry, in registry order: adding a scheduler is not done
/// until users can read its name.
#[test]
fn readme_lists_every_scheduler() {
    let readme = include_str!("../../../README.md");
    let row = readme
        .lines()
        .find(|l| l.starts_with("| `sched N config type T` |"))
        .expect("README has the sched type row");
    let listed: Vec<&str> = row
        .split('|')
        .nth(2)
        .expect("a values column")
        .split(',')
        .map(|w| w.trim().trim_matches('`'))
        .collect();
    let registered: Vec<&str> = SCHEDULERS.iter().map(|e| e.name).collect();
    assert_eq!(listed, registered, "{row}");
}
