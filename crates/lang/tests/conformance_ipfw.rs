//! ipfw(8)/dnctl(8) as written: every example of the traffic-shaper and
//! AQM sections of FreeBSD 14's ipfw(8) (and the forms of its grammar),
//! with `ipfw` or `dnctl` in front as the page writes them, each parsed,
//! printed back canonically (the expected text is in the table) and
//! parsed back equal; and the refusals with their exact messages.
//!
//! The examples as whole configurations are checked and simulated in
//! `crates/sim/tests/conformance.rs`.

mod conformance;

use conformance::{ReadBack, Reject};
use conformance::{FREEBSD, FREEBSD_REJECT, IPFW, IPFW_REJECT, NETEM, NETEM_REJECT};
use pipelab_lang::ast::{Command, Proto, PROTOCOLS};
use pipelab_lang::{parse_line, Config};

/// Parses each case, prints it back and parses the print: the failures.
fn read_back(cases: &[ReadBack]) -> Vec<String> {
    let mut failures = Vec::new();
    for c in cases {
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
    failures
}

/// Parses each refused line: the ones without their exact message.
fn refusals(cases: &[Reject]) -> Vec<String> {
    let mut failures = Vec::new();
    for r in cases {
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
    failures
}

/// Pass proves: every ipfw/dnctl example parses, prints back as the table
/// says, and the printed text parses back to the same command.
#[test]
fn every_ipfw_example_reads_back_canonically() {
    let failures = read_back(IPFW);
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
    let failures = refusals(IPFW_REJECT);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Pass proves: every form FreeBSD's own parser accepts that the table
/// lists (each with the function it follows) parses with FreeBSD's
/// meaning, which the canonical text spells out (`bw 1MB/s` is `bw
/// 8Mbit/s`, `queue 100K` is `queue 100KB`, `sctp` is protocol 132), and
/// the printed text parses back to the same command.
#[test]
fn every_freebsd_form_reads_back_with_its_meaning() {
    let failures = read_back(FREEBSD);
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        FREEBSD.len(),
        failures.join("\n")
    );
}

/// Pass proves: what FreeBSD accepts and pipelab cannot emulate (or reads
/// against what the words seem to say) is refused with a message naming
/// it, at its line and column.
#[test]
fn freebsd_refusals_name_what_and_where() {
    let failures = refusals(FREEBSD_REJECT);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Pass proves: every name of FreeBSD's protocols database reads as its
/// number in a rule (`ipfw2.c` `add_proto0` looks names up with
/// getprotobyname), and an unknown name is refused.
#[test]
fn every_protocol_name_reads_as_its_number() {
    assert_eq!(PROTOCOLS.len(), 144);
    for &(name, number) in PROTOCOLS {
        let line = format!("add 100 pipe 1 {name} from any to any");
        let Ok(Some(Command::Add(rule))) = parse_line(&line) else {
            panic!("{line} does not parse");
        };
        assert_eq!(rule.proto.number(), Some(number), "{name}");
        assert_eq!(Proto::from_name(&name.to_uppercase()), Some(rule.proto));
    }
    assert_eq!(Proto::from_name("sctp"), Some(Proto::Number(132)));
    assert_eq!(Proto::from_name("tcp"), Some(Proto::Tcp));
    assert_eq!(Proto::from_name("ipv6"), Some(Proto::Ip6));
    assert_eq!(Proto::from_name("divert"), None);
}

/// Pass proves: rules may share a number, as in ipfw: both are kept, in
/// the order added, listed and printed back so, `add` without a number
/// follows the highest, and `delete N` removes every rule numbered N.
#[test]
fn rules_sharing_a_number_are_kept_in_the_order_added() {
    let mut c = Config::new();
    c.apply_script(
        "pipe 1 config bw 1Mbit/s\nadd 100 pipe 1 ip from any to any\nadd 100 allow tcp from any to any\nadd 50 deny udp from any to any\nadd 100 count ip from any to any\nadd allow icmp from any to any\n",
    )
    .expect("rules sharing a number apply");
    let listing: Vec<String> = c.rule_listing().lines().map(str::to_string).collect();
    assert_eq!(
        listing,
        [
            "00050 deny udp from any to any",
            "00100 pipe 1 ip from any to any",
            "00100 allow tcp from any to any",
            "00100 count ip from any to any",
            "00200 allow icmp from any to any",
            "65535 allow ip from any to any",
        ],
        "[{}]",
        conformance::BSD_RULES
    );
    let mut back = Config::new();
    back.apply_script(&c.to_script())
        .expect("the script applies");
    assert_eq!(back, c);
    let del = parse_line("delete 100")
        .ok()
        .flatten()
        .expect("delete parses");
    c.apply(&del).expect("delete 100 applies");
    assert_eq!(c.rules.len(), 2);
    assert!(!c.rules.contains_key(&100));
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
