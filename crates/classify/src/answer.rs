//! Answers: what a `reset` or `unreach` rule sends back for the packet it
//! drops (ipfw(8)'s `reset` and `unreach CODE`; Toxiproxy's
//! `reset_peer`).
//!
//! The classifier only decides ([`crate::Decision::Answer`]); whether a
//! packet may be answered at all is [`Answer::allowed`], from the RFCs'
//! rules, so that the pure emulation counts exactly the answers a live
//! run would send; the live runner builds and sends them.
//!
//! * `reset` answers a TCP segment with a RST (RFC 793, p. 36 and 65),
//!   never a segment that is itself a RST; anything else is only dropped.
//! * `unreach CODE` answers an IP packet with an ICMP destination
//!   unreachable of that code (RFC 792), an IPv6 one with the ICMPv6
//!   message of [`icmp6_for`] (RFC 4443). Never about an ICMP error,
//!   a fragment, a packet to a multicast or broadcast address, or from an
//!   address that is not one host's (RFC 1122 §3.2.2, RFC 4443 §2.4(e)).
//!
//! # ipfw's codes for IPv6 packets
//!
//! ipfw names the IPv4 codes; an `unreach` rule that drops an IPv6 packet
//! answers with the ICMPv6 message of the same meaning. RFC 7915 §4.2
//! (the translation of ICMPv4 into ICMPv6) is the basis, with one
//! departure: `host`-like codes map to *address unreachable* (3), which
//! is what a Linux router sends where an IPv4 one sends *host
//! unreachable* (a neighbour that does not answer), and what makes a
//! Linux client report "No route to host" as for IPv4 (RFC 7915's *no
//! route*, 0, reports "Network is unreachable").
//!
//! | ipfw code | IPv4 (type 3) | ICMPv6 type / code |
//! |---|---|---|
//! | `net` (0), `srcfail` (5), `net-unknown` (6), `isolated` (8), `tosnet` (11) | that code | 1 / 0 no route to destination |
//! | `host` (1), `host-unknown` (7), `toshost` (12) | that code | 1 / 3 address unreachable |
//! | `protocol` (2), `port` (3) | that code | 1 / 4 port unreachable |
//! | `needfrag` (4) | 4, next-hop MTU 0 (as ipfw sends it) | 2 / 0 packet too big, MTU 1280 |
//! | `net-prohib` (9), `host-prohib` (10), `filter-prohib` (13), `host-precedence` (14), `precedence-cutoff` (15), any other number | that code | 1 / 1 administratively prohibited |
//!
//! `protocol` has no destination-unreachable code in ICMPv6 (RFC 7915
//! sends a parameter problem); *port unreachable* says the same to the
//! sender: nothing there takes this transport.

use crate::PacketView;
use std::fmt;
use std::net::IpAddr;

/// How a rule answers the packet it drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Answer {
    /// A TCP reset (`reset`).
    Reset,
    /// An ICMP destination unreachable of this (IPv4) code (`unreach
    /// CODE`; ICMPv6 by [`icmp6_for`]).
    Unreach(u8),
}

/// The minimum IPv6 MTU (RFC 8200 §5), the MTU a *packet too big*
/// answer reports.
pub const IPV6_MIN_MTU: u32 = 1280;

/// The ICMPv6 message (type, code) an `unreach CODE` rule answers an
/// IPv6 packet with (see the module documentation's table).
pub fn icmp6_for(code: u8) -> (u8, u8) {
    const DEST_UNREACH: u8 = 1;
    const PACKET_TOO_BIG: u8 = 2;
    match code {
        0 | 5 | 6 | 8 | 11 => (DEST_UNREACH, 0),
        1 | 7 | 12 => (DEST_UNREACH, 3),
        2 | 3 => (DEST_UNREACH, 4),
        4 => (PACKET_TOO_BIG, 0),
        _ => (DEST_UNREACH, 1),
    }
}

/// ICMPv4 types that are queries, not errors (ipfw's `is_icmp_query`:
/// echo reply, echo, router advertisement and solicitation, timestamp,
/// information and address mask requests and replies).
fn icmp4_is_query(t: u8) -> bool {
    matches!(t, 0 | 8 | 9 | 10 | 13..=18)
}

/// Whether `a` is the address of one host, as a source an error may be
/// sent to (RFC 1122 §3.2.2: not zero, loopback, broadcast, multicast or
/// class E; RFC 4443 §2.4(e): not unspecified or multicast).
fn single_host(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(a) => {
            !(a.is_unspecified() || a.is_loopback() || a.is_broadcast() || a.octets()[0] >= 224)
        }
        IpAddr::V6(a) => !(a.is_unspecified() || a.is_loopback() || a.is_multicast()),
    }
}

/// Whether `a` names a group (multicast, broadcast): errors are not
/// sent about packets to it.
fn group(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(a) => a.is_broadcast() || a.is_multicast(),
        IpAddr::V6(a) => a.is_multicast(),
    }
}

impl Answer {
    /// Whether the packet `v` describes may be answered (see the module
    /// documentation): a TCP segment that is not a RST for `reset`; a
    /// whole (unfragmented) IP packet from one host to one host, not an
    /// ICMP error, for `unreach`. A field the view lacks (a truncated
    /// frame) means no answer.
    pub fn allowed(self, v: &PacketView) -> bool {
        if !v.is_ip || v.fragment || !single_host(v.key.src) || group(v.key.dst) {
            return false;
        }
        match self {
            // The answer needs the segment's sequence numbers: the TCP
            // header must have been read (ports with it).
            Answer::Reset => {
                v.key.proto == 6 && v.has_ports && v.tcp_flags.is_none_or(|f| f & 0x04 == 0)
            }
            Answer::Unreach(_) => match v.key.proto {
                1 => v.key.src.is_ipv4() && v.icmp_type.is_some_and(icmp4_is_query),
                // ICMPv6 informational messages are 128..=255 (RFC 4443
                // §2.1); a redirect (137) is not answered either.
                58 => v.key.src.is_ipv6() && v.icmp_type.is_some_and(|t| t >= 128 && t != 137),
                _ => true,
            },
        }
    }

    /// The drop reason's name: `reset` or `unreach`.
    pub fn name(self) -> &'static str {
        match self {
            Answer::Reset => "reset",
            Answer::Unreach(_) => "unreach",
        }
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        pipelab_lang::Action::from(*self).fmt(f)
    }
}

impl From<Answer> for pipelab_lang::Action {
    fn from(a: Answer) -> pipelab_lang::Action {
        match a {
            Answer::Reset => pipelab_lang::Action::Reset,
            Answer::Unreach(c) => pipelab_lang::Action::Unreach(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipelab_engine::FlowKey;

    fn view(proto: u8, src: &str, dst: &str) -> PacketView {
        let key = FlowKey {
            proto,
            src: src.parse().expect("src"),
            dst: dst.parse().expect("dst"),
            sport: 40000,
            dport: 80,
        };
        PacketView::ip(key, 60)
    }

    /// The table of the module documentation, code by code.
    #[test]
    fn ipv6_codes_follow_the_documented_table() {
        let want: [(u8, u8); 16] = [
            (1, 0),
            (1, 3),
            (1, 4),
            (1, 4),
            (2, 0),
            (1, 0),
            (1, 0),
            (1, 3),
            (1, 0),
            (1, 1),
            (1, 1),
            (1, 0),
            (1, 3),
            (1, 1),
            (1, 1),
            (1, 1),
        ];
        for (c, w) in want.iter().enumerate() {
            assert_eq!(icmp6_for(c as u8), *w, "code {c}");
        }
        assert_eq!(icmp6_for(200), (1, 1));
    }

    /// A RST is never answered with a RST; a SYN, an ACK are; UDP is
    /// not (it is only dropped).
    #[test]
    fn reset_answers_tcp_segments_but_not_resets() {
        let mut v = view(6, "10.0.0.1", "10.0.0.2");
        v.tcp_flags = Some(0x02);
        assert!(Answer::Reset.allowed(&v));
        v.tcp_flags = Some(0x10);
        assert!(Answer::Reset.allowed(&v));
        v.tcp_flags = Some(0x14);
        assert!(!Answer::Reset.allowed(&v));
        v.has_ports = false;
        v.tcp_flags = None;
        assert!(!Answer::Reset.allowed(&v), "no TCP header read");
        assert!(!Answer::Reset.allowed(&view(17, "10.0.0.1", "10.0.0.2")));
    }

    /// Never an ICMP error about an ICMP error; queries are answered.
    #[test]
    fn unreach_answers_queries_never_errors() {
        let u = Answer::Unreach(1);
        let mut v = view(1, "10.0.0.1", "10.0.0.2");
        v.icmp_type = Some(8);
        assert!(u.allowed(&v), "echo request");
        for t in [3, 4, 5, 11, 12] {
            v.icmp_type = Some(t);
            assert!(!u.allowed(&v), "ICMP error type {t}");
        }
        v.icmp_type = None;
        assert!(!u.allowed(&v), "unknown type");
        let mut v6 = view(58, "fd00::1", "fd00::2");
        v6.icmp_type = Some(128);
        assert!(u.allowed(&v6), "echo request");
        for t in [1, 2, 3, 4, 127, 137] {
            v6.icmp_type = Some(t);
            assert!(!u.allowed(&v6), "ICMPv6 type {t}");
        }
        assert!(u.allowed(&view(17, "10.0.0.1", "10.0.0.2")));
        assert!(u.allowed(&view(6, "fd00::1", "fd00::2")));
    }

    /// Not about packets to groups, from addresses that are not one
    /// host's, or fragments (RFC 1122 §3.2.2, RFC 4443 §2.4(e)).
    #[test]
    fn no_answer_to_groups_odd_sources_or_fragments() {
        for (s, d) in [
            ("10.0.0.1", "255.255.255.255"),
            ("10.0.0.1", "224.0.0.1"),
            ("0.0.0.0", "10.0.0.2"),
            ("127.0.0.1", "10.0.0.2"),
            ("240.0.0.1", "10.0.0.2"),
            ("fd00::1", "ff02::1"),
            ("::", "fd00::2"),
        ] {
            assert!(!Answer::Unreach(1).allowed(&view(17, s, d)), "{s} -> {d}");
            assert!(!Answer::Reset.allowed(&view(6, s, d)), "{s} -> {d}");
        }
        let mut v = view(17, "10.0.0.1", "10.0.0.2");
        v.fragment = true;
        assert!(!Answer::Unreach(3).allowed(&v));
        let mut nonip = view(17, "10.0.0.1", "10.0.0.2");
        nonip.is_ip = false;
        assert!(!Answer::Unreach(3).allowed(&nonip));
    }

    #[test]
    fn answers_print_as_their_rule_action() {
        assert_eq!(Answer::Reset.to_string(), "reset");
        assert_eq!(Answer::Unreach(1).to_string(), "unreach host");
        assert_eq!(Answer::Unreach(99).to_string(), "unreach 99");
    }
}
