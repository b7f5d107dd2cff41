//! Answer frames: the TCP reset or ICMP unreachable a `reset` or
//! `unreach` rule sends back for the packet it drops
//! ([`pipelab_classify::answer`] decides whether one is due).
//!
//! [`build`] writes the answer to a received Ethernet frame into a buffer,
//! reading the frame through etherparse's lax slicer and writing the IP
//! packet with etherparse's `PacketBuilder`, which computes every
//! checksum:
//!
//! * **Link.** The frame's own link header (Ethernet and any VLAN tags)
//!   with the two addresses swapped: the answer goes back to the sender
//!   on the segment the frame came from (the runner sends it out of the
//!   port the frame came in by, at once: it crosses no pipe, as a
//!   firewall's reject does not cross the link it guards).
//! * **Addresses.** From the packet's destination to its source (pipelab
//!   has no address of its own on the link: the answer comes from the
//!   host the packet was for, as a local reject would); TTL / hop limit
//!   64.
//! * **`reset`** (RFC 793, "Reset Generation", p. 36): ports swapped; if
//!   the segment has ACK, the reset's sequence number is the segment's
//!   acknowledgment number and it has no ACK; otherwise sequence number
//!   0, ACK set, and the acknowledgment number is the segment's sequence
//!   number plus its length (its data, plus 1 for SYN, plus 1 for FIN):
//!   for a SYN, its sequence number plus one. Window 0, no options.
//! * **`unreach CODE`**, IPv4 (RFC 792): type 3 with the code, the
//!   unused word zero (`needfrag`'s next-hop MTU 0, as ipfw sends it),
//!   quoting the packet's IP header (options included) and the first 8
//!   bytes of its data, which hold the ports and, for TCP, the sequence
//!   number the sender matches the error with.
//! * **`unreach CODE`**, IPv6 (RFC 4443 §3.1, §3.2): the type and code
//!   of [`icmp6_for`], quoting as much of the packet as fits in the
//!   minimum MTU (1232 bytes after the IPv6 and ICMPv6 headers);
//!   *packet too big* reports an MTU of 1280.
//!
//! A frame that cannot be answered (no Ethernet header, a header
//! written by the port rather than read, a truncated IP or TCP header,
//! more VLAN tags than two, MACsec) gives `None`; the runner counts it
//! (`answers_failed`). ICMP answers are rate-limited by [`IcmpLimit`].

use etherparse::{Icmpv4Type, Icmpv6Type, TransportSlice};
use etherparse::{LaxLinkExtSlice, LaxNetSlice, LaxSlicedPacket, LinkSlice, PacketBuilder};
use pipelab_classify::answer::{icmp6_for, IPV6_MIN_MTU};
use pipelab_classify::Answer;
use pipelab_engine::{Duration, Instant};

/// TTL and hop limit of answers.
pub const ANSWER_TTL: u8 = 64;

/// How much of an IPv6 packet an ICMPv6 error quotes: the minimum MTU
/// less the IPv6 and ICMPv6 headers (RFC 4443 §2.4(c)).
pub const ICMP6_QUOTE: usize = IPV6_MIN_MTU as usize - 40 - 8;

/// The offset of `part` inside `whole` (a slice of it).
fn offset_in(whole: &[u8], part: &[u8]) -> Option<usize> {
    (part.as_ptr() as usize)
        .checked_sub(whole.as_ptr() as usize)
        .filter(|&o| o + part.len() <= whole.len())
}

/// Write the answer `a` to the Ethernet frame `frame` into `out`; the
/// answer's length, or `None` if the frame cannot be answered or the
/// answer does not fit `out`. See the module documentation.
pub fn build(frame: &[u8], a: Answer, out: &mut [u8]) -> Option<usize> {
    let p = LaxSlicedPacket::from_ethernet(frame).ok()?;
    let Some(LinkSlice::Ethernet2(eth)) = &p.link else {
        return None;
    };
    if p.link_exts.len() > 2
        || p.link_exts
            .iter()
            .any(|e| !matches!(e, LaxLinkExtSlice::Vlan(_)))
    {
        return None;
    }
    let net = p.net.as_ref()?;
    let (ip_off, ip_end) = match net {
        LaxNetSlice::Ipv4(ip) => {
            let h = ip.header();
            let off = offset_in(frame, h.slice())?;
            (off, (off + h.total_len() as usize).min(frame.len()))
        }
        LaxNetSlice::Ipv6(ip) => {
            let h = ip.header();
            let off = offset_in(frame, h.slice())?;
            (
                off,
                (off + 40 + h.payload_length() as usize).min(frame.len()),
            )
        }
        _ => return None,
    };
    if ip_off < 12 {
        return None;
    }
    // The link header, addresses swapped.
    let link = out.get_mut(..ip_off)?;
    link.copy_from_slice(frame.get(..ip_off)?);
    link[0..6].copy_from_slice(&eth.source());
    link[6..12].copy_from_slice(&eth.destination());
    let mut body = out.get_mut(ip_off..)?;
    let avail = body.len();
    let written = match (a, net) {
        (Answer::Reset, _) => {
            let Some(TransportSlice::Tcp(t)) = &p.transport else {
                return None;
            };
            if t.rst() {
                return None;
            }
            let seg_len = t.payload().len() as u32 + u32::from(t.syn()) + u32::from(t.fin());
            let (seq, ack) = if t.ack() {
                (t.acknowledgment_number(), None)
            } else {
                (0, Some(t.sequence_number().wrapping_add(seg_len)))
            };
            let ip = match net {
                LaxNetSlice::Ipv4(ip) => {
                    let h = ip.header();
                    PacketBuilder::ipv4(h.destination(), h.source(), ANSWER_TTL)
                }
                LaxNetSlice::Ipv6(ip) => {
                    let h = ip.header();
                    PacketBuilder::ipv6(h.destination(), h.source(), ANSWER_TTL)
                }
                _ => return None,
            };
            let tcp = ip.tcp(t.destination_port(), t.source_port(), seq, 0).rst();
            let tcp = match ack {
                Some(n) => tcp.ack(n),
                None => tcp,
            };
            let n = tcp.size(0);
            if n > avail {
                return None;
            }
            tcp.write(&mut body, &[]).ok()?;
            n
        }
        (Answer::Unreach(code), LaxNetSlice::Ipv4(ip)) => {
            let h = ip.header();
            let quote_end = (ip_off + h.ihl() as usize * 4 + 8).min(ip_end);
            let quote = frame.get(ip_off..quote_end)?;
            let b = PacketBuilder::ipv4(h.destination(), h.source(), ANSWER_TTL).icmpv4(
                Icmpv4Type::Unknown {
                    type_u8: 3,
                    code_u8: code,
                    bytes5to8: [0; 4],
                },
            );
            let n = b.size(quote.len());
            if n > avail {
                return None;
            }
            b.write(&mut body, quote).ok()?;
            n
        }
        (Answer::Unreach(code), LaxNetSlice::Ipv6(ip)) => {
            let h = ip.header();
            let quote = frame.get(ip_off..ip_end.min(ip_off + ICMP6_QUOTE))?;
            let (type_u8, code_u8) = icmp6_for(code);
            let bytes5to8 = if type_u8 == 2 {
                IPV6_MIN_MTU.to_be_bytes()
            } else {
                [0; 4]
            };
            let b = PacketBuilder::ipv6(h.destination(), h.source(), ANSWER_TTL).icmpv6(
                Icmpv6Type::Unknown {
                    type_u8,
                    code_u8,
                    bytes5to8,
                },
            );
            let n = b.size(quote.len());
            if n > avail {
                return None;
            }
            b.write(&mut body, quote).ok()?;
            n
        }
        _ => return None,
    };
    Some(ip_off + written)
}

/// A token bucket for ICMP answers, as Linux limits its own ICMP errors
/// (`net.ipv4.icmp_msgs_per_sec` 1000 and `icmp_msgs_burst` 50, shared
/// by ICMP and ICMPv6): a flood of packets into an `unreach` rule gets at
/// most [`IcmpLimit::PER_SEC`] answers a second after a burst of
/// [`IcmpLimit::BURST`]. Resets are not limited: each answers one
/// segment, is no larger than it, and goes back where it came from.
/// Pure: `now` is an argument.
#[derive(Clone, Copy, Debug)]
pub struct IcmpLimit {
    tokens: u32,
    last: Instant,
}

impl IcmpLimit {
    /// Answers per second in the long run.
    pub const PER_SEC: u32 = 1000;
    /// Answers at once after a quiet time.
    pub const BURST: u32 = 50;

    /// A full bucket at `now`.
    pub fn new(now: Instant) -> IcmpLimit {
        IcmpLimit {
            tokens: Self::BURST,
            last: now,
        }
    }

    /// Whether an ICMP answer may go at `now` (taking a token if so).
    pub fn allow(&mut self, now: Instant) -> bool {
        let per = Duration::from_secs(1).as_nanos() / Self::PER_SEC as u64;
        let gained = now.saturating_since(self.last).as_nanos() / per;
        if gained > 0 {
            self.tokens = (self.tokens as u64 + gained).min(Self::BURST as u64) as u32;
            self.last += Duration(gained * per);
        }
        if self.tokens == 0 {
            return false;
        }
        self.tokens -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{
        Icmpv4Type as I4, Icmpv6Type as I6, NetSlice, SlicedPacket, TransportSlice as Ts,
    };

    const A: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const B: [u8; 6] = [2, 0, 0, 0, 0, 2];

    fn answer(frame: &[u8], a: Answer) -> Vec<u8> {
        let mut out = vec![0u8; 2048];
        let n = build(frame, a, &mut out).expect("answer built");
        out.truncate(n);
        out
    }

    fn tcp4(syn: bool, ack: Option<u32>, seq: u32, payload: &[u8]) -> Vec<u8> {
        let b = PacketBuilder::ethernet2(A, B)
            .ipv4([100, 64, 0, 2], [100, 64, 0, 1], 64)
            .tcp(40000, 8080, seq, 64240);
        let b = if syn { b.syn() } else { b };
        let b = match ack {
            Some(n) => b.ack(n),
            None => b,
        };
        let mut v = Vec::new();
        b.write(&mut v, payload).expect("write");
        v
    }

    /// Parses `f` strictly (checksums are checked below) and returns
    /// the sliced packet.
    fn parse(f: &[u8]) -> SlicedPacket<'_> {
        SlicedPacket::from_ethernet(f).expect("the answer parses")
    }

    /// A pass proves RFC 793's reset for a SYN: sequence number 0, ACK
    /// set to the SYN's sequence number plus one, addresses, ports and
    /// MACs swapped, and a TCP checksum that verifies.
    #[test]
    fn reset_for_a_syn_acknowledges_it() {
        let f = answer(&tcp4(true, None, 1_000_000, &[]), Answer::Reset);
        let p = parse(&f);
        let Some(LinkSlice::Ethernet2(e)) = &p.link else {
            panic!("ethernet")
        };
        assert_eq!((e.source(), e.destination()), (B, A));
        let Some(NetSlice::Ipv4(ip)) = &p.net else {
            panic!("ipv4")
        };
        assert_eq!(ip.header().source(), [100, 64, 0, 1]);
        assert_eq!(ip.header().destination(), [100, 64, 0, 2]);
        assert_eq!(ip.header().ttl(), ANSWER_TTL);
        assert_eq!(
            ip.header().to_header().header_checksum,
            ip.header().to_header().calc_header_checksum()
        );
        let Some(Ts::Tcp(t)) = &p.transport else {
            panic!("tcp")
        };
        assert!(t.rst() && t.ack() && !t.syn());
        assert_eq!((t.source_port(), t.destination_port()), (8080, 40000));
        assert_eq!(t.sequence_number(), 0);
        assert_eq!(t.acknowledgment_number(), 1_000_001);
        assert_eq!(t.window_size(), 0);
        let h = t.to_header();
        assert_eq!(
            h.checksum,
            h.calc_checksum_ipv4(&ip.header().to_header(), &[])
                .expect("checksum")
        );
    }

    /// A pass proves the reset for a segment with ACK: its sequence
    /// number is the segment's acknowledgment number and it carries no
    /// ACK; and for a segment without ACK carrying 100 bytes and FIN,
    /// the acknowledgment number is seq + 101.
    #[test]
    fn reset_sequence_numbers_follow_rfc_793() {
        let f = answer(&tcp4(false, Some(77_777), 5, b"data"), Answer::Reset);
        let Some(Ts::Tcp(t)) = parse(&f).transport else {
            panic!("tcp")
        };
        assert!(t.rst() && !t.ack());
        assert_eq!(t.sequence_number(), 77_777);
        assert_eq!(t.acknowledgment_number(), 0);

        let mut v = Vec::new();
        PacketBuilder::ethernet2(A, B)
            .ipv4([100, 64, 0, 2], [100, 64, 0, 1], 64)
            .tcp(40000, 8080, u32::MAX - 10, 100)
            .fin()
            .write(&mut v, &[7u8; 100])
            .expect("write");
        let f = answer(&v, Answer::Reset);
        let Some(Ts::Tcp(t)) = parse(&f).transport else {
            panic!("tcp")
        };
        assert_eq!(t.sequence_number(), 0);
        assert_eq!(t.acknowledgment_number(), (u32::MAX - 10).wrapping_add(101));
    }

    /// A pass proves that a RST is never answered with a RST.
    #[test]
    fn no_reset_for_a_reset() {
        let mut v = Vec::new();
        PacketBuilder::ethernet2(A, B)
            .ipv4([100, 64, 0, 2], [100, 64, 0, 1], 64)
            .tcp(40000, 8080, 1, 100)
            .rst()
            .write(&mut v, &[])
            .expect("write");
        let mut out = [0u8; 2048];
        assert_eq!(build(&v, Answer::Reset, &mut out), None);
    }

    /// A pass proves RFC 792's unreachable: type 3 with the rule's code,
    /// from the destination to the source, quoting the IP header and
    /// exactly 8 bytes of the datagram (ports and sequence number), with
    /// an ICMP checksum that verifies.
    #[test]
    fn icmp_unreachable_quotes_header_and_eight_bytes() {
        let orig = tcp4(true, None, 0xdead_beef, &[]);
        let f = answer(&orig, Answer::Unreach(1));
        let p = parse(&f);
        let Some(NetSlice::Ipv4(ip)) = &p.net else {
            panic!("ipv4")
        };
        assert_eq!(ip.header().source(), [100, 64, 0, 1]);
        assert_eq!(ip.header().destination(), [100, 64, 0, 2]);
        let Some(Ts::Icmpv4(i)) = &p.transport else {
            panic!("icmp")
        };
        assert_eq!((i.type_u8(), i.code_u8()), (3, 1));
        assert!(matches!(i.icmp_type(), I4::DestinationUnreachable(_)));
        assert_eq!(i.payload(), &orig[14..14 + 20 + 8]);
        assert_eq!(
            i.checksum(),
            i.header().icmp_type.calc_checksum(i.payload())
        );
    }

    fn udp6(payload: usize) -> Vec<u8> {
        let mut v = Vec::new();
        PacketBuilder::ethernet2(A, B)
            .single_vlan(5u16.try_into().expect("vlan id"))
            .ipv6(
                [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
                [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                64,
            )
            .udp(5353, 53)
            .write(&mut v, &vec![9u8; payload])
            .expect("write");
        v
    }

    /// A pass proves RFC 4443's unreachable: `unreach host` is ICMPv6
    /// type 1 code 3, the VLAN tag kept, the quote as much of the packet
    /// as fits in 1280 bytes (a 1400-byte packet is cut to 1232, the
    /// answer is exactly 1280 bytes of IPv6), a small one quoted whole,
    /// and the checksum (over the IPv6 pseudo-header) verifies.
    #[test]
    fn icmpv6_unreachable_quotes_up_to_the_minimum_mtu() {
        let orig = udp6(1400 - 48);
        let f = answer(&orig, Answer::Unreach(1));
        let p = parse(&f);
        assert_eq!(p.link_exts.len(), 1, "the VLAN tag is kept");
        let Some(NetSlice::Ipv6(ip)) = &p.net else {
            panic!("ipv6")
        };
        assert_eq!(40 + ip.header().payload_length() as usize, 1280);
        let Some(Ts::Icmpv6(i)) = &p.transport else {
            panic!("icmpv6")
        };
        assert_eq!((i.type_u8(), i.code_u8()), (1, 3));
        assert_eq!(i.payload(), &orig[18..18 + ICMP6_QUOTE]);
        let want = i
            .header()
            .icmp_type
            .calc_checksum(ip.header().source(), ip.header().destination(), i.payload())
            .expect("checksum");
        assert_eq!(i.checksum(), want);

        let small = udp6(10);
        let f = answer(&small, Answer::Unreach(3));
        let Some(Ts::Icmpv6(i)) = parse(&f).transport else {
            panic!("icmpv6")
        };
        assert_eq!((i.type_u8(), i.code_u8()), (1, 4));
        assert_eq!(i.payload(), &small[18..]);

        let f = answer(&small, Answer::Unreach(4));
        let Some(Ts::Icmpv6(i)) = parse(&f).transport else {
            panic!("icmpv6")
        };
        assert!(matches!(i.icmp_type(), I6::PacketTooBig { mtu: 1280 }));
    }

    /// A pass proves nothing is built from a frame without an IP header
    /// or into a buffer too small, and no input panics.
    #[test]
    fn unanswerable_frames_give_nothing() {
        let mut out = [0u8; 2048];
        assert_eq!(build(&[], Answer::Reset, &mut out), None);
        assert_eq!(build(&[0xff; 14], Answer::Unreach(1), &mut out), None);
        let f = tcp4(true, None, 1, &[]);
        assert_eq!(build(&f, Answer::Reset, &mut out[..40]), None);
        for cut in 0..f.len() {
            let _ = build(&f[..cut], Answer::Reset, &mut out);
            let _ = build(&f[..cut], Answer::Unreach(1), &mut out);
        }
    }

    /// A pass proves the limit: a burst of 50, then one answer per
    /// millisecond (1000 a second), never more.
    #[test]
    fn icmp_answers_are_limited_to_a_burst_then_1000_a_second() {
        let t0 = Instant::ZERO + Duration::from_secs(10);
        let mut l = IcmpLimit::new(t0);
        assert_eq!((0..100).filter(|_| l.allow(t0)).count(), 50);
        let t1 = t0 + Duration::from_micros(999);
        assert!(!l.allow(t1));
        let t2 = t0 + Duration::from_millis(1);
        assert!(l.allow(t2));
        assert!(!l.allow(t2));
        // One second at 10 kpps offered: 1000 go.
        let sent = (1..=10_000u64)
            .filter(|k| l.allow(t2 + Duration::from_micros(100 * k)))
            .count();
        assert_eq!(sent, 1000);
    }
}
