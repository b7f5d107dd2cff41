//! GSO/GRO super-frames: the virtio-net header, segmentation in user
//! space, and the rule that says when a super-frame may cross whole.
//!
//! A TAP opened with `IFF_VNET_HDR` and offloads (`TUNSETOFFLOAD`), or an
//! AF_PACKET socket with `PACKET_VNET_HDR`, hands over TCP bulk as
//! *super-frames* of up to 64 KB: one Ethernet frame whose IP packet
//! stands for many MSS-sized segments, described by a [`VnetHdr`] before
//! it (`gso_type`, `gso_size` = the MSS, and where the checksum the
//! sender left undone goes). One super-frame costs one system call
//! instead of forty.
//!
//! **Fidelity first.** The emulation decides per packet (loss,
//! duplication, corruption, reordering, AQM, ECN marks, a bandwidth's
//! transmission time, queue limits in slots or bytes), so a super-frame
//! is cut into the segments the kernel would have sent
//! ([`Plan`]: MSS-sized payloads, IPv4 ids counting up, lengths, TCP
//! sequence numbers, FIN and PSH on the last segment only, CWR on the
//! first only, every checksum computed in full) *at reception*, before
//! the rules see it, whenever any of that applies. It crosses whole,
//! and leaves with its GSO header, only when nothing but a fixed delay
//! can touch it ([`keeps_whole`]): every pipe has unlimited bandwidth
//! (so its queue never holds a packet and its limit cannot be reached)
//! and no loss, duplication, corruption, reordering, jitter, AQM, ECN,
//! MAC profile, bandwidth trace, burst, wireless or time-varying model,
//! nor netem's `limit` (packets in the delay line, counted one by one)
//! or `slot` (transmission opportunities of so many packets);
//! there are no flow queues; no rule draws `prob` or matches a
//! per-packet field (`iplen`, `tcpflags`); and every port writes
//! virtio-net headers. Then the super-frame's one emulated decision
//! (its delay) is the one each of its segments would have had. The
//! decision is made per emulation, from its spec, again at every
//! `apply`; rule and pipe counters then count a super-frame as one
//! packet (its bytes are right).
//!
//! Segments go out complete (a virtio-net header with `gso_type` NONE
//! and full checksums), one by one, or re-coalesced into a super-frame
//! when consecutive segments of one flow leave by the same port in the
//! same round of departures ([`Offloads::coalesce`]: what GRO does on a
//! receiving host, so the receiver's stack is handed the same bytes at
//! the same instant in one system call). A corrupted segment is never
//! merged (its checksum must stay wrong), and a segment is only merged
//! with what the emulation already let leave: coalescing delays nothing.
//! A frame that still carries a partial checksum
//! (`NEEDS_CSUM`: small frames from a TAP with checksum offload) has it
//! completed here before it is corrupted or sent through a port that
//! takes no virtio-net header ([`complete_checksum`]).

use crate::buffers::{BufId, BufferPool};
use pipelab_emu::Spec;
use pipelab_lang::OptionKind;
use serde::Serialize;

/// Bytes of a virtio-net header (`struct virtio_net_hdr`, without
/// `num_buffers`): what `TUNSETVNETHDRSZ` and `PACKET_VNET_HDR` use here.
pub const VNET_HDR_LEN: usize = 10;

/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum from `csum_start` to the
/// end is left to do, its field holding the pseudo-header sum.
pub const F_NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_F_DATA_VALID`: the checksum was verified.
pub const F_DATA_VALID: u8 = 2;
/// `VIRTIO_NET_HDR_GSO_NONE`.
pub const GSO_NONE: u8 = 0;
/// `VIRTIO_NET_HDR_GSO_TCPV4`.
pub const GSO_TCPV4: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_UDP` (UFO: IP fragments; never asked for here).
pub const GSO_UDP: u8 = 3;
/// `VIRTIO_NET_HDR_GSO_TCPV6`.
pub const GSO_TCPV6: u8 = 4;
/// `VIRTIO_NET_HDR_GSO_UDP_L4` (USO: one UDP datagram per segment).
pub const GSO_UDP_L4: u8 = 5;
/// `VIRTIO_NET_HDR_GSO_ECN`: the segments carry ECN (CWR on the first).
pub const GSO_ECN: u8 = 0x80;

/// A virtio-net header, as the kernel writes it before a frame (in the
/// host's byte order: legacy virtio headers on a little-endian host).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    /// [`F_NEEDS_CSUM`], [`F_DATA_VALID`].
    pub flags: u8,
    /// [`GSO_NONE`], [`GSO_TCPV4`], [`GSO_TCPV6`], [`GSO_UDP_L4`],
    /// possibly with [`GSO_ECN`].
    pub gso_type: u8,
    /// Bytes of headers (Ethernet to L4), a hint.
    pub hdr_len: u16,
    /// Payload bytes per segment (the MSS).
    pub gso_size: u16,
    /// Where the checksum to complete starts (the L4 header).
    pub csum_start: u16,
    /// Where, from `csum_start`, the checksum field is.
    pub csum_offset: u16,
}

impl VnetHdr {
    /// Read a header from the first [`VNET_HDR_LEN`] bytes of `b`.
    pub fn parse(b: &[u8]) -> Option<VnetHdr> {
        let b = b.get(..VNET_HDR_LEN)?;
        let u = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        Some(VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u(2),
            gso_size: u(4),
            csum_start: u(6),
            csum_offset: u(8),
        })
    }

    /// The header's bytes.
    pub fn to_bytes(&self) -> [u8; VNET_HDR_LEN] {
        let mut b = [0u8; VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_ne_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_ne_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_ne_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_ne_bytes());
        b
    }

    /// A super-frame (any GSO type)?
    pub fn is_gso(&self) -> bool {
        self.gso_type & !GSO_ECN != GSO_NONE
    }

    /// Is a checksum left to complete?
    pub fn needs_csum(&self) -> bool {
        self.flags & F_NEEDS_CSUM != 0
    }
}

/// Why a super-frame could not be cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GsoError {
    /// The header says it is not a super-frame.
    NotGso,
    /// Its headers are cut short, or its lengths exceed the frame.
    Truncated,
    /// A kind this module does not cut (UFO, IPv6 extension headers,
    /// an IP fragment, a GSO type that does not match the packet).
    Unsupported(&'static str),
}

/// The one's-complement sum (RFC 1071) of `data` added to `acc`, not
/// folded: 32-bit big-endian words summed in 64 bits (2^16 ≡ 1 modulo
/// 0xffff, so folding gives the sum of the 16-bit words).
pub fn csum_add(mut acc: u64, data: &[u8]) -> u64 {
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        acc += u32::from_be_bytes([w[0], w[1], w[2], w[3]]) as u64;
    }
    let rest = words.remainder();
    let mut tail = [0u8; 4];
    tail[..rest.len()].copy_from_slice(rest);
    acc + u32::from_be_bytes(tail) as u64
}

/// `acc` folded to 16 bits.
pub fn csum_fold(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum L4 {
    Tcp,
    Udp,
}

/// How a super-frame is cut: where its headers are and how long each
/// segment's payload is. See the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Offset of the IP header.
    l3: usize,
    /// Offset of the TCP or UDP header.
    l4: usize,
    /// Offset of the payload (end of the headers every segment repeats).
    body: usize,
    /// End of the IP packet in the frame.
    end: usize,
    /// Payload bytes per segment.
    mss: usize,
    v6: bool,
    proto: L4,
}

impl Plan {
    /// The plan of the super-frame `frame` that `hdr` describes.
    pub fn new(frame: &[u8], hdr: &VnetHdr) -> Result<Plan, GsoError> {
        use GsoError::{Truncated, Unsupported};
        if !hdr.is_gso() {
            return Err(GsoError::NotGso);
        }
        let get16 = |at: usize| -> Result<usize, GsoError> {
            frame
                .get(at..at + 2)
                .map(|b| u16::from_be_bytes([b[0], b[1]]) as usize)
                .ok_or(Truncated)
        };
        // Ethernet, with up to two VLAN tags.
        let mut l3 = 14;
        let mut ethertype = get16(12)?;
        for _ in 0..2 {
            if ethertype == 0x8100 || ethertype == 0x88a8 {
                ethertype = get16(l3 + 2)?;
                l3 += 4;
            }
        }
        let (v6, proto, l4, end) = match ethertype {
            0x0800 => {
                let b0 = *frame.get(l3).ok_or(Truncated)?;
                let ihl = (b0 & 0x0f) as usize * 4;
                if b0 >> 4 != 4 || ihl < 20 {
                    return Err(Unsupported("not an IPv4 header"));
                }
                if get16(l3 + 6)? & 0x3fff != 0 {
                    return Err(Unsupported("an IPv4 fragment"));
                }
                let tot = get16(l3 + 2)?;
                // Zero: a packet longer than 64 KB (BIG TCP), whose length
                // is the frame's.
                let end = if tot == 0 { frame.len() } else { l3 + tot };
                (false, *frame.get(l3 + 9).ok_or(Truncated)?, l3 + ihl, end)
            }
            0x86dd => {
                let plen = get16(l3 + 4)?;
                let end = if plen == 0 {
                    frame.len()
                } else {
                    l3 + 40 + plen
                };
                (true, *frame.get(l3 + 6).ok_or(Truncated)?, l3 + 40, end)
            }
            _ => return Err(Unsupported("not IP")),
        };
        let (kind, body) = match proto {
            6 => {
                let doff = (*frame.get(l4 + 12).ok_or(Truncated)? >> 4) as usize * 4;
                if doff < 20 {
                    return Err(Unsupported("a TCP header shorter than 20 bytes"));
                }
                (L4::Tcp, l4 + doff)
            }
            17 => (L4::Udp, l4 + 8),
            _ => return Err(Unsupported("IPv6 extension headers or an unknown protocol")),
        };
        let matches = match hdr.gso_type & !GSO_ECN {
            GSO_TCPV4 => kind == L4::Tcp && !v6,
            GSO_TCPV6 => kind == L4::Tcp && v6,
            GSO_UDP_L4 => kind == L4::Udp,
            _ => false,
        };
        if !matches {
            return Err(Unsupported("a GSO type that does not match the packet"));
        }
        if body > end || end > frame.len() {
            return Err(Truncated);
        }
        if hdr.gso_size == 0 {
            return Err(Unsupported("a segment size of 0"));
        }
        Ok(Plan {
            l3,
            l4,
            body,
            end,
            mss: hdr.gso_size as usize,
            v6,
            proto: kind,
        })
    }

    /// Segments the super-frame makes (at least one).
    pub fn segments(&self) -> usize {
        (self.end - self.body).div_ceil(self.mss).max(1)
    }

    /// Payload bytes of segment `k`.
    fn payload(&self, k: usize) -> usize {
        (self.end - self.body)
            .saturating_sub(k * self.mss)
            .min(self.mss)
    }

    /// Bytes of segment `k` (headers and payload).
    pub fn segment_len(&self, k: usize) -> usize {
        self.body + self.payload(k)
    }

    /// Write segment `k` of `frame` (the super-frame this plan was made
    /// of) into `dst` (at least [`Plan::segment_len`] bytes): its headers
    /// with lengths, IPv4 id, TCP sequence number and flags, and
    /// checksums, then its payload. Returns its length.
    pub fn write(&self, frame: &[u8], k: usize, dst: &mut [u8]) -> usize {
        let (l3, l4, body) = (self.l3, self.l4, self.body);
        let plen = self.payload(k);
        let n = body + plen;
        let last = k + 1 >= self.segments();
        dst[..body].copy_from_slice(&frame[..body]);
        let from = body + k * self.mss;
        dst[body..n].copy_from_slice(&frame[from..from + plen]);
        let put16 =
            |d: &mut [u8], at: usize, v: u16| d[at..at + 2].copy_from_slice(&v.to_be_bytes());
        let get16 = |at: usize| u16::from_be_bytes([frame[at], frame[at + 1]]);
        let l4_len = n - l4;
        // IP: length, id, header checksum.
        let pseudo = if self.v6 {
            put16(dst, l3 + 4, (n - l3 - 40) as u16);
            let acc = csum_add(0, &dst[l3 + 8..l3 + 40]);
            acc + l4_len as u64 + dst[l3 + 6] as u64
        } else {
            put16(dst, l3 + 2, (n - l3) as u16);
            put16(dst, l3 + 4, get16(l3 + 4).wrapping_add(k as u16));
            put16(dst, l3 + 10, 0);
            let c = !csum_fold(csum_add(0, &dst[l3..l4]));
            put16(dst, l3 + 10, c);
            let acc = csum_add(0, &dst[l3 + 12..l3 + 20]);
            acc + l4_len as u64 + dst[l3 + 9] as u64
        };
        let field = match self.proto {
            L4::Tcp => {
                let seq = u32::from_be_bytes([
                    frame[l4 + 4],
                    frame[l4 + 5],
                    frame[l4 + 6],
                    frame[l4 + 7],
                ]);
                let seq = seq.wrapping_add((k * self.mss) as u32);
                dst[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
                // FIN and PSH belong to the last segment, CWR to the first.
                if !last {
                    dst[l4 + 13] &= !(0x01 | 0x08);
                }
                if k > 0 {
                    dst[l4 + 13] &= !0x80;
                }
                l4 + 16
            }
            L4::Udp => {
                put16(dst, l4 + 4, l4_len as u16);
                l4 + 6
            }
        };
        put16(dst, field, 0);
        let mut c = !csum_fold(csum_add(pseudo, &dst[l4..n]));
        if c == 0 && self.proto == L4::Udp {
            // A UDP checksum of 0 means "none": sent as its other form.
            c = 0xffff;
        }
        put16(dst, field, c);
        n
    }
}

/// Complete the checksum a frame carries partially (`NEEDS_CSUM`): the
/// one's-complement sum from `csum_start` to the end, the field at
/// `csum_offset` holding the pseudo-header sum, as a device does. True
/// if it was done (the header's flag is then to be cleared).
pub fn complete_checksum(frame: &mut [u8], hdr: &VnetHdr) -> bool {
    let start = hdr.csum_start as usize;
    let at = start + hdr.csum_offset as usize;
    if !hdr.needs_csum() || hdr.is_gso() || at + 2 > frame.len() {
        return false;
    }
    let mut c = !csum_fold(csum_add(0, &frame[start..]));
    if c == 0 {
        c = 0xffff;
    }
    frame[at..at + 2].copy_from_slice(&c.to_be_bytes());
    true
}

/// Whether super-frames may cross the emulation `spec` whole: nothing
/// but a fixed delay can act on them. See the module documentation.
pub fn keeps_whole(spec: &Spec) -> bool {
    let fixed_delay = spec.pipes.values().all(|p| {
        let c = &p.config;
        c.link_rate().is_unlimited()
            && c.bw_trace().is_none()
            && c.burst().is_none()
            && c.jitter().is_none()
            && c.loss().is_none()
            && c.duplicate().is_none()
            && c.reorder().is_none()
            && c.swap().is_none()
            && c.corrupt().is_none()
            && !c.ecn()
            && c.aqm().is_none()
            && c.profile().is_none()
            && c.wireless().is_none()
            && c.timevarying().is_none()
            && c.limit().is_none()
            && c.slot().is_none()
    });
    let rules_per_frame = spec.rules.values().all(|r| {
        r.prob.is_none()
            && r.options
                .iter()
                .all(|o| !matches!(o.kind, OptionKind::IpLen(_) | OptionKind::TcpFlags(_)))
    });
    fixed_delay && spec.queues.is_empty() && rules_per_frame
}

/// Counters of super-frames (the runner's report, `gso`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GsoStats {
    /// Super-frames received from the ports.
    pub superframes: u64,
    /// Segments cut from them (each then counted as received).
    pub segments: u64,
    /// Super-frames kept whole (nothing but a fixed delay applies).
    pub kept_whole: u64,
    /// Super-frames transmitted whole, with their GSO header.
    pub sent_whole: u64,
    /// Super-frames that could not be cut (an unsupported kind): offered
    /// whole, as one packet.
    pub uncut: u64,
    /// Partial checksums completed in user space (before corruption, or
    /// for a port without virtio-net headers).
    pub csum_completed: u64,
    /// Super-frames made of segments that left together.
    pub coalesced: u64,
    /// Segments that left inside them.
    pub segments_coalesced: u64,
}

impl std::ops::AddAssign for GsoStats {
    fn add_assign(&mut self, o: GsoStats) {
        self.superframes += o.superframes;
        self.segments += o.segments;
        self.kept_whole += o.kept_whole;
        self.sent_whole += o.sent_whole;
        self.uncut += o.uncut;
        self.csum_completed += o.csum_completed;
        self.coalesced += o.coalesced;
        self.segments_coalesced += o.segments_coalesced;
    }
}

/// The most segments merged into one super-frame.
const MAX_MERGE: usize = 64;

/// A TCP segment's layout, for coalescing.
#[derive(Clone, Copy, Debug)]
struct TcpSeg {
    l3: usize,
    l4: usize,
    body: usize,
    v6: bool,
    seq: u32,
    payload: usize,
    flags: u8,
}

/// TCP flags.
const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const PSH: u8 = 0x08;
const URG: u8 = 0x20;
const CWR: u8 = 0x80;

impl TcpSeg {
    /// The layout of `f` if it is one TCP segment with a payload, whose
    /// IP length is the frame's.
    fn parse(f: &[u8]) -> Option<TcpSeg> {
        let be16 = |at: usize| {
            f.get(at..at + 2)
                .map(|b| u16::from_be_bytes([b[0], b[1]]) as usize)
        };
        let mut l3 = 14;
        let mut et = be16(12)?;
        while et == 0x8100 || et == 0x88a8 {
            et = be16(l3 + 2)?;
            l3 += 4;
            if l3 > 22 {
                return None;
            }
        }
        let (v6, l4, end) = match et {
            0x0800 => {
                let b0 = *f.get(l3)?;
                let ihl = (b0 & 0x0f) as usize * 4;
                if b0 >> 4 != 4 || ihl < 20 || *f.get(l3 + 9)? != 6 || be16(l3 + 6)? & 0x3fff != 0 {
                    return None;
                }
                (false, l3 + ihl, l3 + be16(l3 + 2)?)
            }
            0x86dd => {
                if *f.get(l3 + 6)? != 6 {
                    return None;
                }
                (true, l3 + 40, l3 + 40 + be16(l3 + 4)?)
            }
            _ => return None,
        };
        let doff = (*f.get(l4 + 12)? >> 4) as usize * 4;
        let body = l4 + doff;
        if doff < 20 || end != f.len() || body >= end {
            return None;
        }
        let seq = u32::from_be_bytes(f.get(l4 + 4..l4 + 8)?.try_into().ok()?);
        Some(TcpSeg {
            l3,
            l4,
            body,
            v6,
            seq,
            payload: end - body,
            flags: f[l4 + 13],
        })
    }

    /// Whether `next` (in frame `nf`) continues this segment (in frame
    /// `pf`) within one super-frame of segment size `mss`.
    fn followed_by(&self, next: &TcpSeg, pf: &[u8], nf: &[u8], mss: usize) -> bool {
        let same = |a: usize, b: usize| pf.get(a..b).is_some() && pf.get(a..b) == nf.get(a..b);
        let (l3, l4, body) = (self.l3, self.l4, self.body);
        let base = |f: u8| f & !(CWR | PSH | FIN);
        let ip_same = if self.v6 {
            same(l3, l3 + 4) && same(l3 + 6, l4)
        } else {
            let id = |f: &[u8]| u16::from_be_bytes([f[l3 + 4], f[l3 + 5]]);
            same(l3, l3 + 2)
                && same(l3 + 6, l3 + 10)
                && same(l3 + 12, l4)
                && id(nf) == id(pf).wrapping_add(1)
        };
        next.l3 == l3
            && next.l4 == l4
            && next.body == body
            && next.v6 == self.v6
            && self.payload == mss
            && next.payload <= mss
            && next.seq == self.seq.wrapping_add(self.payload as u32)
            && self.flags & (FIN | PSH | SYN | RST | URG) == 0
            && next.flags & (CWR | SYN | RST | URG) == 0
            && base(self.flags) == base(next.flags)
            && same(0, l3)
            && ip_same
            && same(l4, l4 + 4)
            && same(l4 + 8, l4 + 13)
            && same(l4 + 14, l4 + 16)
            && same(l4 + 18, body)
    }

    /// Turn `f` (this segment's headers followed by the payloads of the
    /// run that starts with it) into a super-frame: IP length (and IPv4
    /// header checksum), the last segment's PSH and FIN, the pseudo-header
    /// sum in the TCP checksum field; returns its virtio-net header.
    fn finish(&self, f: &mut [u8], last_flags: u8) -> VnetHdr {
        let (l3, l4) = (self.l3, self.l4);
        let n = f.len();
        let put16 =
            |f: &mut [u8], at: usize, v: u16| f[at..at + 2].copy_from_slice(&v.to_be_bytes());
        let l4_len = n - l4;
        let pseudo = if self.v6 {
            put16(f, l3 + 4, (n - l3 - 40) as u16);
            csum_add(0, &f[l3 + 8..l3 + 40]) + l4_len as u64 + 6
        } else {
            put16(f, l3 + 2, (n - l3) as u16);
            put16(f, l3 + 10, 0);
            let c = !csum_fold(csum_add(0, &f[l3..l4]));
            put16(f, l3 + 10, c);
            csum_add(0, &f[l3 + 12..l3 + 20]) + l4_len as u64 + 6
        };
        f[l4 + 13] |= last_flags & (PSH | FIN);
        put16(f, l4 + 16, csum_fold(pseudo));
        let ecn = if self.flags & CWR != 0 { GSO_ECN } else { 0 };
        VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: (if self.v6 { GSO_TCPV6 } else { GSO_TCPV4 }) | ecn,
            hdr_len: self.body as u16,
            gso_size: self.payload as u16,
            csum_start: l4 as u16,
            csum_offset: 16,
        }
    }
}

/// A frame about to leave, in the order of departures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leaving {
    /// The port it leaves by.
    pub port: usize,
    /// Its buffer.
    pub buf: BufId,
    /// Segments it stands for (more than one once coalesced).
    pub segments: u32,
    /// Not corrupted (a corrupted segment is never merged: its checksum
    /// must stay wrong for the receiver to see it).
    pub intact: bool,
}

/// The runner's super-frame stage: cuts what must be cut at reception,
/// settles partial checksums before a frame is changed or leaves by a
/// port that cannot finish them, and coalesces segments that leave
/// together.
#[derive(Debug, Default)]
pub struct Offloads {
    /// Super-frames may cross whole ([`keeps_whole`] of the spec, and
    /// every port writes virtio-net headers).
    whole: bool,
    /// Per port: it takes virtio-net headers.
    ports: Vec<bool>,
    /// Scratch for [`Offloads::coalesce`].
    merged: Vec<Leaving>,
    /// Counters.
    pub stats: GsoStats,
}

impl Offloads {
    /// The stage for `spec`, whose ports take virtio-net headers or not
    /// (`ports`, by index).
    pub fn new(spec: &Spec, ports: Vec<bool>) -> Offloads {
        Offloads {
            whole: ports.iter().all(|&v| v) && keeps_whole(spec),
            ports,
            merged: Vec::new(),
            stats: GsoStats::default(),
        }
    }

    /// The emulation's spec changed (an `apply`), or its ports did
    /// (`ports`: which of them now take virtio-net headers).
    pub fn respec(&mut self, spec: &Spec, ports: Option<Vec<bool>>) {
        if let Some(p) = ports {
            self.ports = p;
        }
        self.whole = self.ports.iter().all(|&v| v) && keeps_whole(spec);
    }

    /// Merge runs of TCP segments that leave together, by one port that
    /// takes virtio-net headers, into super-frames (as GRO would on the
    /// receiving side): consecutive in `leaving`, one flow, contiguous
    /// sequence numbers, IPv4 ids counting up, identical headers
    /// otherwise, full-sized but for the last, no flag but ACK (and ECE)
    /// before the last and CWR only on the first, not corrupted. The
    /// receiver gets the same bytes at the same instant in fewer system
    /// calls; a corrupted or ECN-marked segment breaks a run (CE changes
    /// the IP header). The merged frame replaces the run in `leaving`
    /// (its `segments` counts them); the run's buffers are appended to
    /// `spent`, to be released.
    pub fn coalesce(
        &mut self,
        bufs: &mut BufferPool,
        leaving: &mut Vec<Leaving>,
        spent: &mut Vec<BufId>,
    ) {
        if leaving.len() < 2 || !self.ports.iter().any(|&v| v) {
            return;
        }
        let mut out = std::mem::take(&mut self.merged);
        out.clear();
        let n = leaving.len();
        let mut i = 0;
        while i < n {
            let first = leaving[i];
            let mut j = i + 1;
            let head = match self.ports.get(first.port) {
                Some(true) if first.intact => TcpSeg::parse(bufs.frame(first.buf)),
                _ => None,
            };
            if let Some(head) = head {
                let mut prev = head;
                let mut prev_buf = first.buf;
                let mut total = head.payload;
                while j < n && j - i < MAX_MERGE {
                    let c = leaving[j];
                    if c.port != first.port || !c.intact {
                        break;
                    }
                    let Some(seg) = TcpSeg::parse(bufs.frame(c.buf)) else {
                        break;
                    };
                    let fits = head.body - head.l3 + total + seg.payload <= 65535
                        && head.body + total + seg.payload <= crate::buffers::BIG_BUF_SIZE;
                    if !fits
                        || !prev.followed_by(
                            &seg,
                            bufs.frame(prev_buf),
                            bufs.frame(c.buf),
                            head.payload,
                        )
                    {
                        break;
                    }
                    total += seg.payload;
                    prev = seg;
                    prev_buf = c.buf;
                    j += 1;
                }
                if j - i >= 2 {
                    let ids: Vec<BufId> = leaving[i..j].iter().map(|l| l.buf).collect();
                    if let Some(m) = bufs.merge(&ids, head.body) {
                        let vnet = head.finish(bufs.frame_mut(m), prev.flags);
                        bufs.set_vnet(m, vnet);
                        let segments = leaving[i..j].iter().map(|l| l.segments).sum();
                        out.push(Leaving {
                            port: first.port,
                            buf: m,
                            segments,
                            intact: true,
                        });
                        self.stats.coalesced += 1;
                        self.stats.segments_coalesced += (j - i) as u64;
                        spent.extend_from_slice(&ids);
                        i = j;
                        continue;
                    }
                }
            }
            out.extend_from_slice(&leaving[i..j]);
            i = j;
        }
        std::mem::swap(leaving, &mut out);
        self.merged = out;
    }

    /// Whether super-frames cross whole now.
    pub fn keeps_whole(&self) -> bool {
        self.whole
    }

    /// A frame just received in `buf`: push what the emulation is to be
    /// offered onto `out`, the frame itself or its segments (in new
    /// buffers). Returns `Some(refused)` if it was cut (`refused`
    /// segments refused at the memory cap): the caller then releases
    /// `buf` (a frame a port lent goes back to it), `None` if `buf` itself
    /// was pushed.
    pub fn on_receive(
        &mut self,
        bufs: &mut BufferPool,
        buf: BufId,
        out: &mut Vec<BufId>,
    ) -> Option<u64> {
        let hdr = bufs.meta(buf).vnet;
        if !hdr.is_gso() {
            out.push(buf);
            return None;
        }
        self.stats.superframes += 1;
        if self.whole {
            self.stats.kept_whole += 1;
            out.push(buf);
            return None;
        }
        let plan = match Plan::new(bufs.frame(buf), &hdr) {
            Ok(p) => p,
            Err(_) => {
                self.stats.uncut += 1;
                out.push(buf);
                return None;
            }
        };
        let before = out.len();
        let refused = bufs.segment(buf, &plan, out);
        self.stats.segments += (out.len() - before) as u64;
        Some(refused)
    }

    /// Before the frame in `buf` is changed in place (corrupted) or sent
    /// through a port that takes no virtio-net header (`to_vnet` false):
    /// complete its partial checksum. Counts super-frames sent whole.
    pub fn before_send(&mut self, bufs: &mut BufferPool, buf: BufId, to_vnet: bool) {
        let hdr = bufs.meta(buf).vnet;
        if to_vnet && hdr.is_gso() {
            self.stats.sent_whole += 1;
        }
        if !to_vnet && hdr.needs_csum() {
            self.settle(bufs, buf);
        }
    }

    /// Complete the partial checksum of the frame in `buf`, if it has
    /// one, and drop a "checksum verified" mark (before its bytes are
    /// corrupted, so the receiver's check sees the corruption).
    pub fn settle(&mut self, bufs: &mut BufferPool, buf: BufId) {
        let hdr = bufs.meta(buf).vnet;
        let mut flags = hdr.flags & !F_DATA_VALID;
        if hdr.needs_csum() && complete_checksum(bufs.frame_mut(buf), &hdr) {
            self.stats.csum_completed += 1;
            flags &= !F_NEEDS_CSUM;
        }
        if flags != hdr.flags {
            bufs.set_vnet(buf, VnetHdr { flags, ..hdr });
        }
    }
}

#[cfg(test)]
mod tests;
