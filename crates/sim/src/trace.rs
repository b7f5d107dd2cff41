//! What a simulation reports packet by packet (`pipelab sim --pcap`,
//! `--events`): every arrival, departure, drop and copy, in the run's
//! canonical order (time, then flow and sequence, arrivals first), so the
//! trace is the same for any number of workers; and the frames a capture
//! shows for synthetic packets, which have no bytes of their own.
//!
//! Pure: the caller writes the trace where it wants
//! ([`crate::run::simulate_traced`]).

use pipelab_emu::Reason;
use pipelab_engine::{FlowKey, Instant, Packet};
use std::net::IpAddr;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    /// The packet entered the emulation (by its source's port).
    Arrive,
    /// It left (by this port).
    Depart,
    /// It was dropped (at the instant given).
    Drop(Reason),
    /// A copy was made (the copy departs or is dropped on its own).
    Duplicate,
}

/// One event of a simulation's trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Traced {
    /// Virtual time.
    pub at: Instant,
    /// The port it entered by (arrivals, drops, copies) or left by.
    pub port: u16,
    /// What happened.
    pub kind: TraceKind,
    /// The packet: flow (source index), tag (sequence), length, key,
    /// flags (CE, corrupted, duplicate).
    pub pkt: Packet,
    /// Packets inside the emulation after the event.
    pub backlog_packets: u32,
    /// Bytes inside after the event.
    pub backlog_bytes: u64,
}

/// Bytes of an Ethernet header.
const ETH: usize = 14;

/// The frame a capture shows for a synthetic packet of `pkt.len` IP
/// bytes: an Ethernet header (locally administered addresses), an IPv4
/// or IPv6 header from the flow key (ECN field from the flags: ECT(0),
/// or CE once marked; the IPv4 identification is the sequence's low 16
/// bits), a UDP or TCP header from its ports (TCP's sequence number is
/// the packet's) with the checksum of the whole segment (RFC 768, RFC
/// 9293; IPv6 forbids a UDP checksum of 0, RFC 8200 §8.1), and zeros,
/// cut at `snap` bytes. Returns the bytes and
/// the frame's length on the wire (Ethernet header plus `pkt.len`).
pub fn synth_frame(pkt: &Packet, snap: usize) -> (Vec<u8>, u32) {
    let k: &FlowKey = &pkt.key;
    let ecn = if pkt.flags & Packet::CE != 0 {
        3
    } else if pkt.flags & Packet::ECT != 0 {
        2
    } else {
        0
    };
    let l4 = match k.proto {
        6 => 20,
        17 => 8,
        _ => 0,
    };
    let v6 = matches!(k.src, IpAddr::V6(_)) || matches!(k.dst, IpAddr::V6(_));
    let ip_hdr = if v6 { 40 } else { 20 };
    // The packet's own length, at least its headers.
    let ip_len = (pkt.len as usize)
        .max(ip_hdr + l4)
        .min(u16::MAX as usize + ip_hdr);
    let wire = ETH + ip_len;
    let mut f = vec![0u8; wire.min(snap.max(ETH + ip_hdr + l4))];
    // Ethernet: to 02:00:00:00:00:02 from 02:00:00:00:00:01.
    f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    let ip = ETH;
    match (k.src, k.dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
            f[ip] = 0x45;
            f[ip + 1] = ecn;
            f[ip + 2..ip + 4].copy_from_slice(&(ip_len as u16).to_be_bytes());
            f[ip + 4..ip + 6].copy_from_slice(&(pkt.tag as u16).to_be_bytes());
            f[ip + 8] = 64;
            f[ip + 9] = k.proto;
            f[ip + 12..ip + 16].copy_from_slice(&s.octets());
            f[ip + 16..ip + 20].copy_from_slice(&d.octets());
            let sum = checksum(&f[ip..ip + 20]);
            f[ip + 10..ip + 12].copy_from_slice(&sum.to_be_bytes());
        }
        (s, d) => {
            let six = |a: IpAddr| match a {
                IpAddr::V6(a) => a.octets(),
                IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
            };
            f[12..14].copy_from_slice(&0x86DDu16.to_be_bytes());
            let word = (6u32 << 28) | ((ecn as u32) << 20);
            f[ip..ip + 4].copy_from_slice(&word.to_be_bytes());
            f[ip + 4..ip + 6].copy_from_slice(&((ip_len - 40) as u16).to_be_bytes());
            f[ip + 6] = k.proto;
            f[ip + 7] = 64;
            f[ip + 8..ip + 24].copy_from_slice(&six(s));
            f[ip + 24..ip + 40].copy_from_slice(&six(d));
        }
    }
    let t = ip + ip_hdr;
    if l4 > 0 {
        f[t..t + 2].copy_from_slice(&k.sport.to_be_bytes());
        f[t + 2..t + 4].copy_from_slice(&k.dport.to_be_bytes());
    }
    match k.proto {
        17 => {
            let udp_len = (ip_len - ip_hdr) as u16;
            f[t + 4..t + 6].copy_from_slice(&udp_len.to_be_bytes());
        }
        6 => {
            f[t + 4..t + 8].copy_from_slice(&(pkt.tag as u32).to_be_bytes());
            f[t + 12] = 5 << 4;
            // ACK and PSH.
            f[t + 13] = 0x18;
            f[t + 14..t + 16].copy_from_slice(&65535u16.to_be_bytes());
        }
        _ => {}
    }
    if l4 > 0 {
        // The payload is zeros: the sum is the pseudo-header's and the
        // transport header's alone.
        let len = (ip_len - ip_hdr) as u32;
        let mut sum = Vec::with_capacity(40 + l4);
        if v6 {
            sum.extend_from_slice(&f[ip + 8..ip + 40]);
            sum.extend_from_slice(&len.to_be_bytes());
            sum.extend_from_slice(&[0, 0, 0, k.proto]);
        } else {
            sum.extend_from_slice(&f[ip + 12..ip + 20]);
            sum.extend_from_slice(&[0, k.proto]);
            sum.extend_from_slice(&(len as u16).to_be_bytes());
        }
        sum.extend_from_slice(&f[t..t + l4]);
        let at = if k.proto == 17 { t + 6 } else { t + 16 };
        let c = match checksum(&sum) {
            // UDP's 0 says "no checksum"; all ones is the same sum.
            0 if k.proto == 17 => 0xffff,
            c => c,
        };
        f[at..at + 2].copy_from_slice(&c.to_be_bytes());
    }
    (f, wire as u32)
}

/// The Internet checksum of `b` (RFC 1071).
fn checksum(b: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in b.chunks(2) {
        let w = u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]);
        sum += w as u32;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    /// A pass proves a synthetic UDP/IPv4 frame's golden header bytes
    /// (lengths, ECN, identification, a checksum that verifies to 0),
    /// that the capture is cut at the snap length while the wire length
    /// is the packet's, and that CE marks show in the ECN field.
    #[test]
    fn synthetic_frames_have_their_headers() {
        let mut p = Packet::new(1000);
        p.tag = 0x1_0203;
        p.flags = Packet::ECT;
        p.key = FlowKey {
            proto: 17,
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            sport: 10000,
            dport: 5001,
        };
        let (f, wire) = synth_frame(&p, 128);
        assert_eq!((f.len(), wire), (128, 1014));
        #[rustfmt::skip]
        let head: [u8; 42] = [
            2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00,
            0x45, 2, 0x03, 0xe8, 0x02, 0x03, 0, 0, 64, 17, f[24], f[25],
            10, 0, 0, 1, 10, 0, 0, 2,
            0x27, 0x10, 0x13, 0x89, 0x03, 0xd4, f[40], f[41],
        ];
        assert_eq!(f[..42], head);
        assert_eq!(transport_sum(&p), 0, "the UDP checksum verifies");
        assert_eq!(checksum(&f[14..34]), 0, "the header checksum verifies");
        p.flags |= Packet::CE;
        assert_eq!(synth_frame(&p, 128).0[15], 3);
        // A packet shorter than the snap length is whole.
        p.len = 40;
        let (f, wire) = synth_frame(&p, 128);
        assert_eq!((f.len(), wire), (54, 54));
    }

    /// The sum over the pseudo-header and the whole transport segment
    /// (its zeros included) of `p`'s frame, computed apart from
    /// `synth_frame`: 0 where the checksum in the header is right.
    fn transport_sum(p: &Packet) -> u16 {
        let (f, wire) = synth_frame(p, usize::MAX);
        assert_eq!(f.len(), wire as usize, "the whole frame");
        let v6 = f[12..14] == [0x86, 0xdd];
        let (t, mut pseudo) = if v6 {
            let len = (f.len() - 54) as u32;
            let mut b = f[22..54].to_vec();
            b.extend_from_slice(&len.to_be_bytes());
            b.extend_from_slice(&[0, 0, 0, f[20]]);
            (54, b)
        } else {
            let len = (f.len() - 34) as u16;
            let mut b = f[26..34].to_vec();
            b.extend_from_slice(&[0, f[23]]);
            b.extend_from_slice(&len.to_be_bytes());
            (34, b)
        };
        pseudo.extend_from_slice(&f[t..]);
        checksum(&pseudo)
    }

    /// A pass proves every synthetic UDP and TCP segment, over IPv4 and
    /// IPv6 (and a flow of an IPv4 and an IPv6 end, drawn as IPv6),
    /// carries the checksum that verifies, and that no IPv6 UDP
    /// checksum is 0 (which IPv6 forbids).
    #[test]
    fn transport_checksums_verify() {
        use std::net::Ipv6Addr;
        let v4 = |a| IpAddr::V4(Ipv4Addr::new(10, 0, 0, a));
        let v6 = |a| IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, a));
        for proto in [17u8, 6] {
            for (src, dst) in [(v4(1), v4(2)), (v6(1), v6(2)), (v4(1), v6(2))] {
                for (len, sport) in [(100u32, 10000u16), (1500, 1), (61, 65535), (48, 0)] {
                    let mut p = Packet::new(len);
                    p.tag = 77;
                    p.key = FlowKey {
                        proto,
                        src,
                        dst,
                        sport,
                        dport: 5001,
                    };
                    assert_eq!(transport_sum(&p), 0, "{proto} {src} {dst} {len}");
                    let (f, _) = synth_frame(&p, 128);
                    let hdr = if matches!((src, dst), (IpAddr::V4(_), IpAddr::V4(_))) {
                        34
                    } else {
                        54
                    };
                    if proto == 17 {
                        assert_ne!(f[hdr + 6..hdr + 8], [0, 0], "{src} {dst} {len}");
                    }
                }
            }
        }
    }
}
