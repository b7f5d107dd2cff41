//! Ethernet frames to [`PacketView`]s, through etherparse's lax slicer.
//!
//! Reads, never copies: VLAN tags, IPv4, IPv6 with extension headers, TCP,
//! UDP and ICMP are found by etherparse (`LaxSlicedPacket`), which stops
//! at the first malformed layer and keeps what it could read. A truncated or
//! malformed frame therefore yields a view with the fields it has (a non-IP
//! view if even the IP header is missing) and matches only rules that need
//! no missing field. No input can make this code panic (fuzzed).

use crate::PacketView;
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
}

/// Parse an Ethernet II frame. Never fails: what cannot be read is absent.
pub fn parse_ethernet(frame: &[u8]) -> FrameInfo {
    let len = frame.len() as u32;
    let mut info = FrameInfo {
        view: PacketView {
            key: FlowKey::default(),
            is_ip: false,
            dir: None,
            len,
        },
        ether_type: 0,
        l3_len: len.saturating_sub(ETH_HEADER),
    };
    let Ok(p) = LaxSlicedPacket::from_ethernet(frame) else {
        return info;
    };
    if let Some(LinkSlice::Ethernet2(e)) = &p.link {
        info.ether_type = e.ether_type().0;
    }
    for ext in &p.link_exts {
        if let LaxLinkExtSlice::Vlan(v) = ext {
            info.ether_type = v.ether_type().0;
        }
    }
    let key = &mut info.view.key;
    match &p.net {
        Some(LaxNetSlice::Ipv4(ip)) => {
            let h = ip.header();
            key.src = IpAddr::V4(h.source_addr());
            key.dst = IpAddr::V4(h.destination_addr());
            key.proto = ip.payload().ip_number.0;
            info.view.is_ip = true;
            info.l3_len = h.total_len() as u32;
        }
        Some(LaxNetSlice::Ipv6(ip)) => {
            let h = ip.header();
            key.src = IpAddr::V6(h.source_addr());
            key.dst = IpAddr::V6(h.destination_addr());
            key.proto = ip.payload().ip_number.0;
            info.view.is_ip = true;
            info.l3_len = 40 + h.payload_length() as u32;
        }
        _ => {}
    }
    match &p.transport {
        Some(TransportSlice::Udp(u)) => {
            key.sport = u.source_port();
            key.dport = u.destination_port();
        }
        Some(TransportSlice::Tcp(t)) => {
            key.sport = t.source_port();
            key.dport = t.destination_port();
        }
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
