//! Classifier tests: first match, actions, prob, endpoints and options.

use super::*;
use pipelab_lang::{parse_line, Command};

fn rules(lines: &[&str]) -> pipelab_lang::Rules {
    let mut m = pipelab_lang::Rules::new();
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
    let key = FlowKey {
        proto: 17,
        src: src.parse().expect("addr"),
        dst: dst.parse().expect("addr"),
        sport,
        dport,
    };
    PacketView {
        dir,
        ..PacketView::ip(key, 100)
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

/// Rules that share a number are checked in the order they were added
/// (ipfw's), and a skipto to that number lands on the first of them.
#[test]
fn rules_sharing_a_number_match_in_the_order_added() {
    let mut c = classifier(&[
        "add 300 pipe 3 ip from any to any",
        "add 100 skipto 200 ip from 10.0.0.0/8 to any",
        "add 200 pipe 2 udp from any to any dst-port 2",
        "add 200 pipe 4 ip from any to any",
        "add 150 pipe 1 ip from any to any",
    ]);
    let m = c.classify(&udp("10.1.2.3", 1, "1.1.1.1", 2, None), 0);
    assert_eq!(m.decision, Decision::Pipe(2));
    let m = c.classify(&udp("10.1.2.3", 1, "1.1.1.1", 9, None), 0);
    assert_eq!(m.decision, Decision::Pipe(4));
    let m = c.classify(&udp("11.1.2.3", 1, "1.1.1.1", 2, None), 0);
    assert_eq!(m.decision, Decision::Pipe(1));
    let order: Vec<u32> = c.rules().map(|(n, _, _)| n).collect();
    assert_eq!(order, vec![100, 150, 200, 200, 300, 65535]);
    let counts: Vec<u64> = c.rules().map(|(_, _, k)| k.packets).collect();
    assert_eq!(counts, vec![2, 1, 1, 1, 0, 0]);
}

/// A reconfiguration keeps the counters of every unchanged rule, also
/// of each rule that shares its number with another.
#[test]
fn inherit_keeps_the_counters_of_rules_sharing_a_number() {
    let lines = [
        "add 200 pipe 2 udp from any to any dst-port 2",
        "add 200 pipe 4 ip from any to any",
    ];
    let mut old = classifier(&lines);
    for port in [2, 9, 9] {
        old.classify(&udp("10.1.2.3", 1, "1.1.1.1", port, None), 0);
    }
    let mut more = lines.to_vec();
    more.push("add 200 pipe 5 ip from any to any");
    let mut new = classifier(&more);
    new.inherit(&old);
    let counts: Vec<u64> = new.rules().map(|(_, _, k)| k.packets).collect();
    assert_eq!(counts, vec![1, 2, 0, 0]);
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

// ---- frames, options, tables, truncation --------------------------------

use crate::frame::parse_ethernet;
use etherparse::{
    EtherType, Ethernet2Header, IpHeaders, IpNumber, Ipv6Extensions, Ipv6Header, Ipv6RawExtHeader,
    PacketBuilder,
};
use proptest::prelude::*;

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 2];

fn v6(s: &str) -> [u8; 16] {
    s.parse::<std::net::Ipv6Addr>().expect("v6").octets()
}

/// Ethernet (src A, dst B) / IPv6 2001:db8::1 → 2001:db8::2 with a
/// hop-by-hop extension header, traffic class EF (DSCP 46) / TCP 1234 →
/// 443 with `flags` set by `tcp`.
fn ipv6_tcp_with_ext(syn: bool, ack: bool) -> Vec<u8> {
    let hdr = Ipv6Header {
        traffic_class: 46 << 2,
        hop_limit: 64,
        source: v6("2001:db8::1"),
        destination: v6("2001:db8::2"),
        ..Default::default()
    };
    let exts = Ipv6Extensions {
        hop_by_hop_options: Some(
            Ipv6RawExtHeader::new_raw(IpNumber::TCP, &[0u8; 6]).expect("hop-by-hop"),
        ),
        ..Default::default()
    };
    let mut b = PacketBuilder::ethernet2(MAC_A, MAC_B)
        .ip(IpHeaders::Ipv6(hdr, exts))
        .tcp(1234, 443, 1, 1000);
    if syn {
        b = b.syn();
    }
    if ack {
        b = b.ack(5);
    }
    let mut v = Vec::new();
    b.write(&mut v, &[0u8; 20]).expect("write");
    v
}

/// A non-IP frame of ethertype `t` (0x88b5: IEEE local experimental), 46
/// bytes of payload.
fn non_ip(t: u16) -> Vec<u8> {
    let mut v = Vec::new();
    Ethernet2Header {
        source: MAC_A,
        destination: MAC_B,
        ether_type: EtherType(t),
    }
    .write(&mut v)
    .expect("write");
    v.extend_from_slice(&[0u8; 46]);
    v
}

/// Ethernet / VLAN 7 / IPv4 10.1.2.3 → 10.9.9.9, TOS DSCP 46 / UDP 1234 → 80.
fn ipv4_udp_vlan() -> Vec<u8> {
    let b = PacketBuilder::ethernet2(MAC_A, MAC_B)
        .single_vlan(7.try_into().expect("vlan"))
        .ipv4([10, 1, 2, 3], [10, 9, 9, 9], 64)
        .udp(1234, 80);
    let mut v = Vec::new();
    b.write(&mut v, &[0u8; 100]).expect("write");
    // TOS byte: Ethernet 14 + VLAN 4 + 1.
    if let Some(tos) = v.get_mut(14 + 4 + 1) {
        *tos = 46 << 2;
    }
    v
}

fn ctx() -> Context {
    let mut c = Context::default();
    let tables = [
        "table 1 add 10.0.0.0/8 10",
        "table 1 add 10.1.0.0/16 11",
        "table 1 add 10.1.2.3 12",
        "table 1 add 2001:db8::/32 60",
        "table 2 add 10.9.0.0/16 20",
        "table 3 add 10.0.0.0/8 300",
        "table 4 add 10.0.0.0/8 50",
    ];
    let mut cfg = pipelab_lang::Config::new();
    for t in tables {
        let Ok(Some(cmd)) = parse_line(t) else {
            panic!("{t}")
        };
        cfg.apply(&cmd).expect("table command");
    }
    c.tables = cfg.tables;
    c.ifaces = [("eth0".to_string(), 0), ("eth1".to_string(), 1)]
        .into_iter()
        .collect();
    c.users = [("alice".to_string(), 1000)].into_iter().collect();
    c
}

fn classifier_in(lines: &[&str], ctx: &Context) -> Classifier {
    let r = rules(lines);
    Classifier::with_context(r.iter().map(|(n, s)| (*n, s)), ctx, 1)
}

/// Passes if an IPv6 packet behind a hop-by-hop header is seen as TCP
/// (the protocol after the extension chain) with its flags, and a non-IP
/// frame (ethertype 0x88b5) is matched by `mac-type` and by the trivial
/// rule only.
#[test]
fn ipv6_with_extension_header_and_non_ip_frames_are_classified() {
    let lines = [
        "add 10 pipe 1 mac-type 0x88b5",
        "add 20 pipe 2 tcp from 2001:db8::/32 to any 443 tcpflags syn,!ack",
        "add 30 pipe 3 ip6 from any to any dscp ef",
        "add 40 pipe 4 udp from any to any",
        "add 50 pipe 5 ip from any to any",
    ];
    let mut c = classifier_in(&lines, &ctx());
    let syn = parse_ethernet(&ipv6_tcp_with_ext(true, false));
    assert_eq!(syn.view.key.proto, 6, "protocol after the extension header");
    assert_eq!(syn.view.tcp_flags, Some(0x02));
    assert_eq!(syn.view.dscp, 46);
    assert_eq!(syn.view.ip_len, 40 + 8 + 20 + 20);
    assert_eq!(c.classify(&syn.view, 0).decision, Decision::Pipe(2));
    let synack = parse_ethernet(&ipv6_tcp_with_ext(true, true));
    assert_eq!(c.classify(&synack.view, 0).decision, Decision::Pipe(3));
    let l2 = parse_ethernet(&non_ip(0x88b5));
    assert!(!l2.view.is_ip);
    assert_eq!(c.classify(&l2.view, 0).decision, Decision::Pipe(1));
    let arp = parse_ethernet(&non_ip(0x0806));
    assert_eq!(c.classify(&arp.view, 0).decision, Decision::Pipe(5));
    let counts: Vec<(u32, u64)> = c.rules().map(|(n, _, k)| (n, k.packets)).collect();
    assert_eq!(
        counts,
        vec![
            (10, 1),
            (20, 1),
            (30, 1),
            (40, 0),
            (50, 1),
            (DEFAULT_RULE, 0)
        ]
    );
}

/// The view every option is tested on: the VLAN IPv4/UDP frame, received
/// on eth0, to be sent on eth1, user 1000; plus a TCP SYN variant.
fn rich_view(tcp: bool) -> PacketView {
    let mut v = parse_ethernet(&ipv4_udp_vlan()).view;
    if tcp {
        v.key.proto = 6;
        v.tcp_flags = Some(0x02);
    }
    v.dir = Some(Direction::In);
    v.in_if = Some(0);
    v.out_if = Some(1);
    v.uid = Some(1000);
    v
}

/// (option that holds, option that does not) for the rich view; each is
/// tested plain and with `not`.
const OPTION_PAIRS: &[(&str, &str)] = &[
    ("in", "out"),
    ("proto udp", "proto tcp"),
    ("src-ip 10.1.2.3", "src-ip 10.1.2.4"),
    ("dst-ip {10.9.9.9,1.1.1.1}", "dst-ip me"),
    ("src-ip table(1)", "src-ip table(2)"),
    ("src-ip table(1,12)", "src-ip table(1,11)"),
    ("src-port 1000-2000", "src-port 1-100"),
    ("dst-port 80,443", "dst-port 81"),
    ("via eth1", "via eth9"),
    ("recv eth0", "recv eth1"),
    ("xmit eth1", "xmit eth0"),
    ("mac 02:00:00:00:00:02 any", "mac any 02:00:00:00:00:02"),
    ("mac any 02:00:00:00:00:01", "mac 02:00:00:00:00:01 any"),
    ("mac-type ip", "mac-type 0x88b5,ipv6"),
    ("mac-type 0x0800-0x0806", "mac-type 0x0801-0xffff"),
    ("iplen 128", "iplen 0-127"),
    ("dscp ef", "dscp af11,0"),
    ("uid 1000", "uid 1001"),
    ("uid alice", "uid bob"),
];

/// Passes if every option matches the packet it describes, fails on one it
/// does not, and `not` inverts both.
#[test]
fn every_option_positive_and_negated() {
    let ctx = ctx();
    let view = rich_view(false);
    let check = |opt: &str, v: &PacketView, want: bool| {
        for (prefix, w) in [("", want), ("not ", !want)] {
            let line = format!("add 10 pipe 7 ip from any to any {prefix}{opt}");
            let mut c = classifier_in(&[&line], &ctx);
            let got = c.classify(v, 0).decision == Decision::Pipe(7);
            assert_eq!(got, w, "{line}");
        }
    };
    for (yes, no) in OPTION_PAIRS {
        check(yes, &view, true);
        check(no, &view, false);
    }
    let tcp = rich_view(true);
    check("tcpflags syn", &tcp, true);
    check("tcpflags syn,!ack", &tcp, true);
    check("tcpflags syn,ack", &tcp, false);
    check("tcpflags !syn", &tcp, false);
    // A UDP packet has no TCP flags: the condition is false, not missing.
    check("tcpflags syn", &view, false);
}

/// Passes if options on fields a packet lacks fail the rule whether
/// negated or not: a non-IP frame, and a synthetic view without MACs.
#[test]
fn missing_fields_fail_negated_or_not() {
    let ctx = ctx();
    let l2 = parse_ethernet(&non_ip(0x88b5)).view;
    let synthetic = udp("10.1.2.3", 1, "10.9.9.9", 2, None);
    for (opt, v) in [
        ("src-ip 10.0.0.0/8", &l2),
        ("proto tcp", &l2),
        ("dst-port 80", &l2),
        ("iplen 0-65535", &l2),
        ("dscp 0", &l2),
        ("tcpflags syn", &l2),
        ("mac any any", &synthetic),
    ] {
        for prefix in ["", "not "] {
            let line = format!("add 10 pipe 7 ip from any to any {prefix}{opt}");
            let mut c = classifier_in(&[&line], &ctx);
            assert_eq!(c.classify(v, 0).decision, Decision::Allow, "{line}");
        }
    }
}

/// Passes if `pipe tablearg` sends each address to the value of its
/// longest matching prefix, uses the last table match of the rule, honours
/// `table(N,V)`, and `skipto tablearg` jumps to the value (forward only).
#[test]
fn tablearg_dispatch_picks_the_longest_prefix() {
    let ctx = ctx();
    let mut c = classifier_in(&["add 100 pipe tablearg ip from table(1) to any"], &ctx);
    for (src, want) in [
        ("10.1.2.3", Decision::Pipe(12)),
        ("10.1.9.9", Decision::Pipe(11)),
        ("10.9.9.9", Decision::Pipe(10)),
        ("11.0.0.1", Decision::Allow),
        ("2001:db8::5", Decision::Pipe(60)),
    ] {
        let dst = if src.contains(':') { "::1" } else { "1.1.1.1" };
        let got = c.classify(&udp(src, 1, dst, 2, None), 0).decision;
        assert_eq!(got, want, "{src}");
    }
    // Source and destination both in tables: the destination (last) wins.
    let mut c = classifier_in(
        &["add 100 pipe tablearg ip from table(1) to table(2)"],
        &ctx,
    );
    let p = udp("10.1.2.3", 1, "10.9.1.1", 2, None);
    assert_eq!(c.classify(&p, 0).decision, Decision::Pipe(20));
    // An option's lookup comes after the endpoints.
    let mut c = classifier_in(
        &["add 100 pipe tablearg ip from table(2) to any dst-ip table(1)"],
        &ctx,
    );
    let p = udp("10.9.1.1", 1, "10.1.2.3", 2, None);
    assert_eq!(c.classify(&p, 0).decision, Decision::Pipe(12));
    // skipto tablearg: table 3 says 300; table 4's 50 is backward, so the
    // walk continues with the next rule.
    let lines = [
        "add 100 skipto tablearg ip from table(3) to any dst-port 1",
        "add 110 skipto tablearg ip from table(4) to any",
        "add 200 pipe 2 ip from any to any",
        "add 300 pipe 3 ip from any to any",
    ];
    let mut c = classifier_in(&lines, &ctx);
    assert_eq!(
        c.classify(&udp("10.0.0.1", 5, "1.1.1.1", 1, None), 0)
            .decision,
        Decision::Pipe(3)
    );
    assert_eq!(
        c.classify(&udp("10.0.0.1", 5, "1.1.1.1", 2, None), 0)
            .decision,
        Decision::Pipe(2)
    );
}

/// Passes if each rule's counters hold the packets and bytes it matched
/// (count rules included) and `Display` prints them as ipfw's `show`.
#[test]
fn rule_counters_count_packets_and_bytes() {
    let mut c = classifier(&[
        "add 10 count ip from any to any",
        "add 20 pipe 1 udp from any to any dst-port 53",
    ]);
    let mut p = udp("1.1.1.1", 5, "2.2.2.2", 53, None);
    for len in [100, 200, 300] {
        p.len = len;
        c.classify(&p, 0);
    }
    p.key.dport = 54;
    p.len = 1000;
    c.classify(&p, 0);
    let got: Vec<(u32, u64, u64)> = c.rules().map(|(n, _, k)| (n, k.packets, k.bytes)).collect();
    assert_eq!(
        got,
        vec![(10, 4, 1600), (20, 3, 600), (DEFAULT_RULE, 1, 1000)]
    );
    assert_eq!(
        c.to_string(),
        "00010          4         1600 count ip from any to any\n\
         00020          3          600 pipe 1 udp from any to any dst-port 53\n\
         65535          1         1000 allow ip from any to any\n"
    );
}

/// One rule per option (plain and negated), the trivial rule, and
/// endpoint forms: the fixed ruleset of the truncation and arbitrary-byte
/// tests (and of the fuzz target).
fn every_option_lines() -> Vec<String> {
    let mut v = Vec::new();
    let mut n = 10;
    let mut opts: Vec<&str> = OPTION_PAIRS.iter().flat_map(|(a, b)| [*a, *b]).collect();
    opts.extend([
        "tcpflags syn,!ack",
        "tcpflags ack",
        "proto 0",
        "proto ip6",
        "proto 51",
    ]);
    for o in opts {
        for not in ["", "not "] {
            v.push(format!("add {n} count ip from any to any {not}{o}"));
            n += 1;
        }
    }
    for body in [
        "tcp from any to any 443",
        "udp from not 10.0.0.0/8 to any",
        "ip6 from 2001:db8::/32 to table(1)",
        "ip4 from any 1234 to any",
        "icmp from any to any",
        "ip from any to any",
    ] {
        v.push(format!("add {n} count {body}"));
        n += 1;
    }
    v
}

/// For each rule alone: does it match `view`?
fn matches_per_rule(lines: &[String], ctx: &Context, view: &PacketView) -> Vec<bool> {
    lines
        .iter()
        .map(|l| {
            let mut c = classifier_in(&[l.as_str()], ctx);
            c.classify(view, 0);
            let hit = c.rules().next().is_some_and(|r| r.2.packets == 1);
            hit
        })
        .collect()
}

/// Passes if every truncation of an IPv6-with-extension TCP frame and of a
/// VLAN IPv4 UDP frame parses without panic, and every rule that matches
/// the truncated frame also matches the whole one: a cut frame matches
/// only rules whose fields it still has.
#[test]
fn truncated_frames_never_panic_and_match_only_rules_they_can() {
    let ctx = ctx();
    let lines = every_option_lines();
    for full in [
        ipv6_tcp_with_ext(true, false),
        ipv4_udp_vlan(),
        non_ip(0x88b5),
    ] {
        let whole = parse_ethernet(&full).view;
        let want = matches_per_rule(&lines, &ctx, &whole);
        for n in 0..full.len() {
            let cut = parse_ethernet(&full[..n]).view;
            let got = matches_per_rule(&lines, &ctx, &cut);
            for ((l, g), w) in lines.iter().zip(&got).zip(&want) {
                assert!(!g || *w, "{n} bytes of {} match '{l}'", full.len());
            }
        }
    }
}

proptest! {
    /// Passes if arbitrary bytes, parsed as a frame and classified against
    /// the every-option ruleset (with every metadata field set or not),
    /// never panic and always reach a decision.
    #[test]
    fn arbitrary_bytes_parse_and_classify(
        bytes in proptest::collection::vec(any::<u8>(), 0..200),
        prefix in proptest::sample::select(vec![
            Vec::new(),
            ipv6_tcp_with_ext(true, false)[..54].to_vec(),
            ipv4_udp_vlan()[..38].to_vec(),
        ]),
        meta in any::<bool>(),
    ) {
        let ctx = ctx();
        let lines = every_option_lines();
        let mut c = classifier_in(&lines.iter().map(String::as_str).collect::<Vec<_>>(), &ctx);
        let mut frame = prefix;
        frame.extend_from_slice(&bytes);
        let mut view = parse_ethernet(&frame).view;
        if meta {
            view.dir = Some(Direction::Out);
            view.in_if = Some(1);
            view.out_if = Some(0);
            view.uid = Some(1000);
        }
        let m = c.classify(&view, 0);
        prop_assert!(m.rule < c.rules().count());
    }
}
