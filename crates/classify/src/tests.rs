//! Classifier tests: first match, actions, prob, endpoints and options.

use super::*;
use pipelab_lang::{parse_line, Command};
use std::collections::BTreeMap;

fn rules(lines: &[&str]) -> BTreeMap<u32, RuleSpec> {
    let mut m = BTreeMap::new();
    for l in lines {
        match parse_line(l) {
            Ok(Some(Command::Add(r))) => {
                let n = r.number.expect("tests number their rules");
                m.insert(n, r);
            }
            other => panic!("{l}: {other:?}"),
        }
    }
    m
}

fn udp(src: &str, sport: u16, dst: &str, dport: u16, dir: Option<Direction>) -> PacketView {
    PacketView {
        key: FlowKey {
            proto: 17,
            src: src.parse().expect("addr"),
            dst: dst.parse().expect("addr"),
            sport,
            dport,
        },
        is_ip: true,
        dir,
        len: 100,
    }
}

fn classifier(lines: &[&str]) -> Classifier {
    let r = rules(lines);
    Classifier::new(r.iter().map(|(n, s)| (*n, s)), &[], 1)
}

/// First match wins, in number order whatever the insertion order.
#[test]
fn first_match_in_number_order() {
    let mut c = classifier(&[
        "add 200 pipe 2 ip from any to any",
        "add 100 pipe 1 udp from 10.0.0.0/8 to any",
    ]);
    let m = c.classify(&udp("10.1.2.3", 1, "1.1.1.1", 2, None), 0);
    assert_eq!(m.decision, Decision::Pipe(1));
    let m = c.classify(&udp("11.1.2.3", 1, "1.1.1.1", 2, None), 0);
    assert_eq!(m.decision, Decision::Pipe(2));
    let counts: Vec<u64> = c.rules().map(|(_, _, k)| k.packets).collect();
    assert_eq!(counts, vec![1, 1, 0]);
}

/// Unmatched traffic falls to rule 65535, allow.
#[test]
fn default_rule_allows() {
    let mut c = classifier(&["add 100 deny tcp from any to any"]);
    let m = c.classify(&udp("1.2.3.4", 1, "5.6.7.8", 2, None), 0);
    assert_eq!(m.decision, Decision::Allow);
    assert_eq!(c.rules().last().map(|r| r.0), Some(DEFAULT_RULE));
}

/// count continues; skipto jumps over rules; ports, direction and `not` match.
#[test]
fn count_skipto_ports_direction_not() {
    let mut c = classifier(&[
        "add 10 count ip from any to any",
        "add 20 skipto 40 udp from any to any dst-port 53",
        "add 30 pipe 3 ip from any to any",
        "add 40 pipe 4 ip from any to not 10.0.0.0/8 in",
        "add 50 pipe 5 ip from any to any",
    ]);
    assert_eq!(
        c.classify(&udp("1.1.1.1", 5, "8.8.8.8", 53, Some(Direction::In)), 0)
            .decision,
        Decision::Pipe(4)
    );
    assert_eq!(
        c.classify(&udp("1.1.1.1", 5, "8.8.8.8", 53, Some(Direction::Out)), 0)
            .decision,
        Decision::Pipe(5)
    );
    assert_eq!(
        c.classify(&udp("1.1.1.1", 5, "10.8.8.8", 53, Some(Direction::In)), 0)
            .decision,
        Decision::Pipe(5)
    );
    assert_eq!(
        c.classify(&udp("1.1.1.1", 5, "8.8.8.8", 54, None), 0)
            .decision,
        Decision::Pipe(3)
    );
    assert_eq!(c.rules().next().map(|r| r.2.packets), Some(4));
}

/// dummynet-revisited §3.3: prob 0.2 / 0.7 / rest gives 20% / 56% / 24%,
/// each within 3σ of the binomial expectation over 100k packets.
#[test]
fn prob_split_follows_the_paper() {
    let mut c = classifier(&[
        "add 1000 prob 0.2 pipe 10 src-port 80 in",
        "add 1010 prob 0.7 pipe 20 src-port 80 in",
        "add 1020 pipe 30 src-port 80 in",
    ]);
    let n = 100_000u64;
    let mut k = [0u64; 3];
    for _ in 0..n {
        match c
            .classify(&udp("1.1.1.1", 80, "2.2.2.2", 999, Some(Direction::In)), 0)
            .decision
        {
            Decision::Pipe(10) => k[0] += 1,
            Decision::Pipe(20) => k[1] += 1,
            Decision::Pipe(30) => k[2] += 1,
            d => panic!("{d:?}"),
        }
    }
    for (got, p) in k.iter().zip([0.2, 0.56, 0.24]) {
        let mean = n as f64 * p;
        let sigma = (n as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (*got as f64 - mean).abs() < 3.0 * sigma,
            "{got} vs {mean} ± {sigma}"
        );
    }
}

/// Non-IP frames match `ip from any to any` but nothing more specific.
#[test]
fn non_ip_frames_only_match_trivial_rules() {
    let mut c = classifier(&[
        "add 10 pipe 1 udp from any to any",
        "add 20 pipe 2 ip from any to any",
    ]);
    let mut v = udp("0.0.0.0", 0, "0.0.0.0", 0, None);
    v.is_ip = false;
    assert_eq!(c.classify(&v, 0).decision, Decision::Pipe(2));
}

/// The same seed gives the same prob decisions.
#[test]
fn prob_is_reproducible() {
    let run = || {
        let mut c = classifier(&["add 10 prob 0.5 deny ip from any to any"]);
        (0..1000)
            .map(|_| {
                c.classify(&udp("1.1.1.1", 1, "2.2.2.2", 2, None), 0)
                    .decision
                    == Decision::Deny
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}
