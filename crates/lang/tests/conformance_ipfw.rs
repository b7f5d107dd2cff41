//! ipfw(8)/dnctl(8) as written: every example of the traffic-shaper and
//! AQM sections of FreeBSD 14's ipfw(8) (and the forms of its grammar),
//! with `ipfw` or `dnctl` in front as the page writes them, each parsed,
//! printed back canonically (the expected text is in the table) and
//! parsed back equal; and the refusals with their exact messages.
//!
//! The examples as whole configurations are checked and simulated in
//! `crates/sim/tests/conformance.rs`.

mod conformance;

use conformance::{IPFW, IPFW_REJECT, NETEM, NETEM_REJECT};
use pipelab_lang::parse_line;

/// Pass proves: every ipfw/dnctl example parses, prints back as the table
/// says, and the printed text parses back to the same command.
#[test]
fn every_ipfw_example_reads_back_canonically() {
    let mut failures = Vec::new();
    for c in IPFW {
        let cmd = match parse_line(c.input) {
            Ok(Some(cmd)) => cmd,
            other => {
                failures.push(format!("[{}] {}: {:?}", c.source, c.input, other));
                continue;
            }
        };
        let printed = cmd.to_string();
        if printed != c.canonical {
            failures.push(format!(
                "[{}] {}\n   printed {printed}\n  expected {}",
                c.source, c.input, c.canonical
            ));
        }
        match parse_line(&printed) {
            Ok(Some(back)) if back == cmd => {}
            other => failures.push(format!("[{}] {printed} reads back as {other:?}", c.source)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        IPFW.len(),
        failures.join("\n")
    );
}

/// Pass proves: each refusal gives its exact message, line, column and
/// hint.
#[test]
fn ipfw_refusals_have_their_messages() {
    let mut failures = Vec::new();
    for r in IPFW_REJECT {
        match parse_line(r.input) {
            Err(e) if e.to_string() == r.error => {}
            other => failures.push(format!(
                "[{}] {}\n  got  {:?}\n  want {}",
                r.source,
                r.input,
                other.map_err(|e| e.to_string()),
                r.error
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Pass proves the suite's size: at least 60 cases read back and 20
/// refusals, counted over both dialects.
#[test]
fn the_suite_has_its_size() {
    let read_back = IPFW.len() + NETEM.len();
    let refusals = IPFW_REJECT.len() + NETEM_REJECT.len();
    println!("{read_back} cases read back, {refusals} refusals");
    assert!(read_back >= 60 && refusals >= 20);
}
