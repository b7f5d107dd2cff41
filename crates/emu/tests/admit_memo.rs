//! Admission remembered per source (`Emulation::admit_memo`) against the
//! rules walked for every packet (`Emulation::admit`): the same decisions,
//! stages, rule counters and emulation counts, on rule sets with and
//! without `prob`, size matches and dynamic state, and on a topology's
//! paths.

use pipelab_classify::{Direction, PacketView};
use pipelab_emu::{lower_config, Admission, AdmitMemo, Compiled, Emulation, Spec, TOPO_PIPE_BASE};
use pipelab_engine::{EngineOptions, FlowKey, Instant, Packet};
use pipelab_lang::Config;
use std::net::{IpAddr, Ipv4Addr};

mod common;

/// The spec of `text` with one synthetic port whose packets enter as `in`.
fn spec(text: &str) -> Spec {
    let mut c = Config::new();
    c.apply_script(text).expect("valid configuration");
    let mut s = lower_config(&c, &mut |p| Err(format!("no file {p}"))).expect("lowers");
    s.ports = Spec::single_port("sim", Some(Direction::In));
    s
}

/// `spec(rules)` with two VN ports whose packets follow the paths 10.0.0.1
/// → 10.0.0.2 and back, one pipe each.
fn topology(rules: &str) -> Spec {
    let mut s = spec(rules);
    common::add_plain_pipes(&mut s, &[5, 5]);
    let mut paths = common::vn_paths(2);
    paths.set(0, 1, Some(&[TOPO_PIPE_BASE]));
    paths.set(1, 0, Some(&[TOPO_PIPE_BASE + 1]));
    s.paths = Some(paths);
    s.ports = Spec::vn_ports(2, &[]);
    s
}

fn emulation(s: &Spec) -> Emulation {
    let mut e = Emulation::new(EngineOptions::default());
    e.apply(Compiled::new(s.clone(), 7).expect("compiles"));
    e
}

/// Source `i` of 4: its port (of `ports`) and flow key; its packets are
/// 100 bytes, or, for source 3, 100 to 1400 bytes by turns.
fn source(i: u64, ports: u16) -> (u16, FlowKey) {
    let port = (i % ports as u64) as u16;
    let ip = |k: u16| IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1 + k as u8));
    let key = FlowKey {
        proto: if i == 2 { 6 } else { 17 },
        src: ip(port),
        dst: ip((port + 1) % ports.max(2)),
        sport: 1000 + i as u16,
        dport: 5001 + i as u16,
    };
    (port, key)
}

/// What the two ways of admitting did, packet by packet, and the rule
/// counters and counts they left.
type Outcome = (Vec<(Admission, u64)>, Vec<(u32, u64, u64)>, String);

/// Admit 400 packets of 4 sources in turn into a fresh emulation of `s`,
/// by `admit` (`memo` false) or `admit_memo` (one memo per source).
fn run(s: &Spec, memo: bool) -> (Outcome, bool) {
    let mut e = emulation(s);
    let ports = s.ports.len() as u16;
    let mut memos = vec![AdmitMemo::default(); 4];
    let mut out = Vec::new();
    for n in 0..400u64 {
        let i = n % 4;
        let (port, key) = source(i, ports);
        let len = if i == 3 {
            [100, 1400][(n / 4 % 2) as usize]
        } else {
            100
        };
        let mut pkt = Packet {
            tag: n,
            key,
            born: Instant(n * 1_000_000),
            ..Packet::new(len)
        };
        let mut view = PacketView {
            dir: Some(Direction::In),
            ..PacketView::ip(pkt.key, pkt.len)
        };
        let a = if memo {
            e.admit_memo(&mut memos[i as usize], &mut pkt, port, &mut view)
        } else {
            e.admit(&mut pkt, port, &mut view)
        };
        out.push((a, pkt.stage));
    }
    let rules = e.rules().map(|(n, _, c)| (n, c.packets, c.bytes)).collect();
    let stateless = e.admission_is_stateless();
    ((out, rules, format!("{:?}", e.counts())), stateless)
}

/// A stateless rule set: counts, skips, a size match, a deny, a reset, a
/// pipe and a queue.
const STATELESS: &str = "pipe 1 config delay 1ms
queue 3 config pipe 1 weight 2
add 50 count ip from any to any
add 60 skipto 300 udp from any to any 5002
add 100 pipe 1 udp from any to any 5001
add 150 pipe 1 ip from any to any iplen 1000-1500
add 200 reset tcp from any to any
add 250 deny udp from any to any 5004
add 300 queue 3 ip from any to any
";

/// A pass proves the remembered admission is the walked one, packet by
/// packet (decision and stage), with the same rule counters and counts,
/// on a stateless rule set that counts, skips, matches by size (source 3
/// alternates between a size the match takes and one it does not),
/// denies and resets; and that the counters are the packets' (the `count`
/// rule saw all 400, 100 bytes for 350 and 1400 for 50).
#[test]
fn remembered_admission_is_the_rules_walked_again() {
    let s = spec(STATELESS);
    let (walked, a) = run(&s, false);
    let (memo, b) = run(&s, true);
    assert!(a && b, "the rule set is stateless");
    assert_eq!(walked, memo);
    assert_eq!(walked.1[0], (50, 400, 350 * 100 + 50 * 1400));
    // Each of the rules that decide saw packets.
    assert!(
        walked.1.iter().take(7).all(|&(_, p, _)| p > 0),
        "{:?}",
        walked.1
    );
}

/// A pass proves rule sets that draw (`prob`) or keep state are not
/// stateless and are admitted as walked (a memo is not used), draws
/// and states included.
#[test]
fn prob_and_states_are_walked_for_every_packet() {
    for text in [
        "pipe 1 config delay 1ms\nadd 100 prob 0.5 pipe 1 ip from any to any\n",
        "pipe 1 config delay 1ms\nadd 90 check-state\nadd 100 pipe 1 udp from any to any 5001 keep-state\nadd 200 deny udp from any to any 5001\n",
    ] {
        let s = spec(text);
        let (walked, a) = run(&s, false);
        let (memo, b) = run(&s, true);
        assert!(!a && !b, "{text}");
        assert_eq!(walked, memo, "{text}");
    }
    // The draws decide: some packets enter pipe 1, some do not.
    let (walked, _) = run(
        &spec("pipe 1 config delay 1ms\nadd 100 prob 0.5 pipe 1 ip from any to any\n"),
        true,
    );
    let entered = walked
        .0
        .iter()
        .filter(|(a, _)| matches!(a, Admission::Enter(_)))
        .count();
    assert!(entered > 100 && entered < 300, "{entered}");
}

/// A pass proves the remembered admission follows a topology's paths (each
/// port's packets to the other VN's path) and a rule's pipe before them,
/// and that after `apply` changes the rules a memo is not used again: the
/// packets that went into pipe 1 now take the path at once.
#[test]
fn remembered_admission_takes_paths_and_forgets_on_apply() {
    let s = topology("pipe 1 config delay 10ms\nadd 100 pipe 1 udp from any to any 5001\n");
    let (walked, a) = run(&s, false);
    let (memo, _) = run(&s, true);
    assert!(a);
    assert_eq!(walked, memo);
    let paths = walked
        .0
        .iter()
        .filter(|(a, _)| matches!(a, Admission::Enter(_)))
        .count();
    assert_eq!(paths, 400);
    // Source 0 enters pipe 1; after an apply without the rule, its path.
    let mut e = emulation(&s);
    let mut m = AdmitMemo::default();
    let (port, key) = source(0, 2);
    let mut admit = |e: &mut Emulation| {
        let mut pkt = Packet {
            key,
            ..Packet::new(100)
        };
        let mut view = PacketView::ip(key, 100);
        e.admit_memo(&mut m, &mut pkt, port, &mut view)
    };
    let first = admit(&mut e);
    assert_eq!(admit(&mut e), first);
    let Admission::Enter(before) = first else {
        panic!("enters: {first:?}")
    };
    e.apply(Compiled::new(topology(""), 7).expect("compiles"));
    let Admission::Enter(after) = admit(&mut e) else {
        panic!("enters")
    };
    assert_ne!(before.pipe(), after.pipe());
    assert_eq!(Some(after.pipe()), e.pipe(TOPO_PIPE_BASE));
}
