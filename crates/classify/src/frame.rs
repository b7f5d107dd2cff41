//! Ethernet frames to [`PacketView`]s, through etherparse's lax slicer.
//!
//! Reads, never copies: Ethernet addresses, VLAN tags, IPv4, IPv6 with
//! extension headers (the protocol is the one after them), TCP (ports,
//! flags), UDP and ICMP are found by etherparse (`LaxSlicedPacket`), which
//! stops at the first malformed layer and keeps what it could read. A
//! truncated or malformed frame therefore yields a view with the fields it
//! has (a non-IP view if even the IP header is missing; no ports if the
//! transport header is cut, or for a non-first fragment) and matches only
//! rules that need no missing field. No input can make this code panic
//! (fuzzed: `fuzz/fuzz_targets/frame_classify.rs`, and a proptest).
//!
//! Interfaces, direction and the owning user are not in the frame: the
//! caller sets them on the returned view.

use crate::PacketView;
use etherparse::err::Layer;
use etherparse::{LaxLinkExtSlice, LaxNetSlice, LaxSlicedPacket, LinkSlice, TransportSlice};
use pipelab_engine::FlowKey;
use std::net::IpAddr;

/// The Ethernet header's length (without VLAN tags).
pub const ETH_HEADER: u32 = 14;

/// What a frame is, for classification and rate accounting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    /// The classification view (its `len` is the whole frame's length).
    pub view: PacketView,
    /// The innermost ethertype (after VLAN tags), 0 if unknown.
    pub ether_type: u16,
    /// The IP packet's length (IPv4 total length, IPv6 40 + payload
    /// length) if the frame is IP, else the frame's length less the
    /// Ethernet header. This is what Dummynet's L3 accounting charges.
    pub l3_len: u32,
    /// The IP header's ECN field (0 not ECN-capable, 1 ECT(1), 2 ECT(0),
    /// 3 CE); 0 for non-IP frames.
    pub ecn: u8,
}

/// Parse an Ethernet II frame. Never fails: what cannot be read is absent.
pub fn parse_ethernet(frame: &[u8]) -> FrameInfo {
    let len = frame.len() as u32;
    let mut info = FrameInfo {
        view: PacketView {
            key: FlowKey::default(),
            len,
            ..PacketView::default()
        },
        ether_type: 0,
        l3_len: len.saturating_sub(ETH_HEADER),
        ecn: 0,
    };
    let Ok(p) = LaxSlicedPacket::from_ethernet(frame) else {
        return info;
    };
    let view = &mut info.view;
    if let Some(LinkSlice::Ethernet2(e)) = &p.link {
        info.ether_type = e.ether_type().0;
        view.src_mac = Some(e.source());
        view.dst_mac = Some(e.destination());
    }
    for ext in &p.link_exts {
        if let LaxLinkExtSlice::Vlan(v) = ext {
            info.ether_type = v.ether_type().0;
        }
    }
    let stopped_in = p.stop_err.as_ref().map(|(_, layer)| *layer);
    // Cut inside a VLAN tag: the innermost ethertype is unknown.
    if matches!(p.link, Some(LinkSlice::Ethernet2(_))) && stopped_in != Some(Layer::VlanHeader) {
        view.ether_type = Some(info.ether_type);
    }
    // Cut inside an extension header: the protocol after the chain is
    // unknown, so the packet is treated as non-IP (it then matches only
    // rules that need no IP field) rather than as protocol 0 or 51.
    let ip_cut = matches!(
        stopped_in,
        Some(
            Layer::IpAuthHeader
                | Layer::Ipv6ExtHeader
                | Layer::Ipv6HopByHopHeader
                | Layer::Ipv6DestOptionsHeader
                | Layer::Ipv6RouteHeader
                | Layer::Ipv6FragHeader
        )
    );
    let key = &mut view.key;
    match &p.net {
        _ if ip_cut => {}
        Some(LaxNetSlice::Ipv4(ip)) => {
            let h = ip.header();
            key.src = IpAddr::V4(h.source_addr());
            key.dst = IpAddr::V4(h.destination_addr());
            key.proto = ip.payload().ip_number.0;
            view.is_ip = true;
            view.dscp = h.dcp().value();
            info.ecn = h.ecn().value();
            view.ip_len = h.total_len() as u32;
            view.fragment = h.is_fragmenting_payload();
            info.l3_len = view.ip_len;
        }
        Some(LaxNetSlice::Ipv6(ip)) => {
            let h = ip.header();
            key.src = IpAddr::V6(h.source_addr());
            key.dst = IpAddr::V6(h.destination_addr());
            key.proto = ip.payload().ip_number.0;
            view.is_ip = true;
            view.dscp = h.traffic_class() >> 2;
            info.ecn = h.traffic_class() & 3;
            view.ip_len = 40 + h.payload_length() as u32;
            view.fragment = ip.payload().fragmented;
            info.l3_len = view.ip_len;
        }
        _ => {}
    }
    match &p.transport {
        Some(TransportSlice::Udp(u)) => {
            key.sport = u.source_port();
            key.dport = u.destination_port();
            view.has_ports = true;
        }
        Some(TransportSlice::Tcp(t)) => {
            key.sport = t.source_port();
            key.dport = t.destination_port();
            view.has_ports = true;
            // The flag byte: byte 13 of the TCP header (CWR..FIN).
            view.tcp_flags = t.slice().get(13).copied();
        }
        Some(TransportSlice::Icmpv4(i)) => view.icmp_type = Some(i.type_u8()),
        Some(TransportSlice::Icmpv6(i)) => view.icmp_type = Some(i.type_u8()),
        _ => {}
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;

    fn udp4() -> Vec<u8> {
        let b = PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .udp(1234, 5001);
        let mut v = Vec::new();
        b.write(&mut v, &[0u8; 100]).expect("write");
        v
    }

    /// A pass proves the view carries what decides whether a packet may
    /// be answered: the ICMP type (an echo request, 8; an ICMPv6 one,
    /// 128) and whether an IPv4 packet is a fragment (more-fragments or
    /// an offset), which a whole datagram is not.
    #[test]
    fn icmp_type_and_fragments_are_read() {
        let mut v = Vec::new();
        PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .icmpv4_echo_request(1, 1)
            .write(&mut v, &[0u8; 8])
            .expect("write");
        let f = parse_ethernet(&v);
        assert_eq!((f.view.icmp_type, f.view.fragment), (Some(8), false));
        let mut v6 = Vec::new();
        PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv6([0xfd; 16], [0xfe; 16], 64)
            .icmpv6_echo_request(1, 1)
            .write(&mut v6, &[])
            .expect("write");
        assert_eq!(parse_ethernet(&v6).view.icmp_type, Some(128));
        let mut frag = udp4();
        // More fragments (flags byte at 14 + 6).
        frag[20] |= 0x20;
        let f = parse_ethernet(&frag);
        assert!(f.view.fragment && !f.view.has_ports);
        assert!(!parse_ethernet(&udp4()).view.fragment);
    }

    #[test]
    fn ipv4_udp_frame_gives_its_five_tuple_and_lengths() {
        let f = parse_ethernet(&udp4());
        assert!(f.view.is_ip);
        assert_eq!(f.view.key.proto, 17);
        assert_eq!(f.view.key.src, "10.0.0.1".parse::<IpAddr>().expect("ip"));
        assert_eq!((f.view.key.sport, f.view.key.dport), (1234, 5001));
        assert_eq!(f.ether_type, 0x0800);
        assert_eq!(f.l3_len, 20 + 8 + 100);
        assert_eq!(f.view.len, 14 + 128);
    }

    #[test]
    fn ipv6_tcp_behind_a_vlan_tag() {
        let b = PacketBuilder::ethernet2([1; 6], [2; 6])
            .single_vlan(7.try_into().expect("vlan"))
            .ipv6(
                [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
                64,
            )
            .tcp(443, 50000, 1, 1000);
        let mut v = Vec::new();
        b.write(&mut v, &[0u8; 10]).expect("write");
        let f = parse_ethernet(&v);
        assert!(f.view.is_ip);
        assert_eq!(f.view.key.proto, 6);
        assert_eq!(f.view.key.dport, 50000);
        assert_eq!(f.ether_type, 0x86dd);
        assert_eq!(f.l3_len, 40 + 20 + 10);
    }

    #[test]
    fn non_ip_frame_keeps_its_ethertype() {
        let mut v = vec![0xff; 12];
        v.extend_from_slice(&[0x88, 0xb5]);
        v.extend_from_slice(&[0u8; 50]);
        let f = parse_ethernet(&v);
        assert!(!f.view.is_ip);
        assert_eq!(f.ether_type, 0x88b5);
    }

    #[test]
    fn every_truncation_of_a_frame_is_safe() {
        let full = udp4();
        for n in 0..full.len() {
            let f = parse_ethernet(&full[..n]);
            assert_eq!(f.view.len, n as u32);
            if n < 14 + 20 {
                assert!(!f.view.is_ip, "{n} bytes cannot hold an IP header");
            }
        }
    }
}
