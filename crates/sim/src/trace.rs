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
/// the packet's), and zeros, cut at `snap` bytes. Returns the bytes and
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
            0x27, 0x10, 0x13, 0x89, 0x03, 0xd4, 0, 0,
        ];
        assert_eq!(f[..42], head);
        assert_eq!(checksum(&f[14..34]), 0, "the header checksum verifies");
        p.flags |= Packet::CE;
        assert_eq!(synth_frame(&p, 128).0[15], 3);
        // A packet shorter than the snap length is whole.
        p.len = 40;
        let (f, wire) = synth_frame(&p, 128);
        assert_eq!((f.len(), wire), (54, 54));
    }
}
