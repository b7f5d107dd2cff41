//! Setting Congestion Experienced in a frame's IP header (RFC 3168 §5).
//!
//! The engine decides (a pipe with `ecn` marks an ECN-capable packet where
//! it would drop it); this module changes the bytes: the two ECN bits of
//! the IPv4 TOS byte or the IPv6 traffic class become `11`, and the IPv4
//! header checksum is recomputed. VLAN tags before the IP header are
//! skipped. Frames that are not IP, or not ECN-capable, are left alone.

/// Mark `frame` CE; returns false (and changes nothing) if it is not an
/// ECN-capable IPv4 or IPv6 packet.
pub fn mark_ce(frame: &mut [u8]) -> bool {
    let mut off = 12;
    let ether_type = loop {
        let Some(et) = frame
            .get(off..off + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
        else {
            return false;
        };
        off += 2;
        if et == 0x8100 || et == 0x88a8 {
            off += 2;
            continue;
        }
        break et;
    };
    match ether_type {
        0x0800 => {
            let Some(&vihl) = frame.get(off) else {
                return false;
            };
            let ihl = (vihl & 0x0f) as usize * 4;
            if vihl >> 4 != 4 || ihl < 20 || frame.len() < off + ihl {
                return false;
            }
            if frame[off + 1] & 3 == 0 {
                return false;
            }
            frame[off + 1] |= 3;
            frame[off + 10] = 0;
            frame[off + 11] = 0;
            let mut sum: u32 = 0;
            for w in frame[off..off + ihl].chunks(2) {
                sum += u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]) as u32;
            }
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            let c = !(sum as u16);
            frame[off + 10..off + 12].copy_from_slice(&c.to_be_bytes());
            true
        }
        0x86dd => {
            if frame.len() < off + 40 || frame[off] >> 4 != 6 {
                return false;
            }
            // Traffic class: low nibble of byte 0, high nibble of byte 1;
            // its ECN bits are bits 4-5 of byte 1.
            if (frame[off + 1] >> 4) & 3 == 0 {
                return false;
            }
            frame[off + 1] |= 0x30;
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{PacketBuilder, SlicedPacket};

    fn ipv4_frame(ecn: u8) -> Vec<u8> {
        let b = PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .udp(1, 2);
        let mut v = Vec::new();
        b.write(&mut v, &[0u8; 20]).expect("write");
        // ECN bits of the TOS byte (offset 14 + 1), checksum fixed below.
        v[15] = (v[15] & !3) | ecn;
        let mut f = v.clone();
        // Recompute the checksum for the edited TOS with etherparse.
        let p = SlicedPacket::from_ethernet(&v).expect("parse");
        if let Some(etherparse::NetSlice::Ipv4(ip)) = p.net {
            let h = ip.header().to_header();
            let c = h.calc_header_checksum();
            f[24..26].copy_from_slice(&c.to_be_bytes());
        }
        f
    }

    #[test]
    fn ipv4_ect_becomes_ce_with_a_valid_checksum() {
        let mut f = ipv4_frame(2);
        assert!(mark_ce(&mut f));
        assert_eq!(f[15] & 3, 3);
        let p = SlicedPacket::from_ethernet(&f).expect("parse");
        let Some(etherparse::NetSlice::Ipv4(ip)) = p.net else {
            panic!("not ipv4")
        };
        let h = ip.header().to_header();
        assert_eq!(h.header_checksum, h.calc_header_checksum());
    }

    #[test]
    fn not_ect_is_left_alone() {
        let mut f = ipv4_frame(0);
        let before = f.clone();
        assert!(!mark_ce(&mut f));
        assert_eq!(f, before);
        let mut short = vec![0u8; 13];
        assert!(!mark_ce(&mut short));
    }

    #[test]
    fn ipv6_ect_becomes_ce() {
        let b = PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv6([1; 16], [2; 16], 64)
            .udp(1, 2);
        let mut v = Vec::new();
        b.write(&mut v, &[0u8; 8]).expect("write");
        v[15] |= 0x20; // ECT(0) in the traffic class
        assert!(mark_ce(&mut v));
        assert_eq!((v[15] >> 4) & 3, 3);
    }
}
