//! Segmentation checked against golden bytes (written by an independent
//! implementation) and by properties: the payloads laid end to end are
//! the super-frame's, every header is what the kernel's own GSO would
//! write, every checksum verifies with a textbook checksum.

use super::*;
use proptest::prelude::*;

/// RFC 1071 the slow way: 16-bit big-endian words, an odd byte padded.
fn textbook_sum(parts: &[&[u8]]) -> u16 {
    let bytes: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
    let mut s: u32 = 0;
    for w in bytes.chunks(2) {
        let hi = w[0] as u32;
        let lo = w.get(1).copied().unwrap_or(0) as u32;
        s += (hi << 8) | lo;
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// An Ethernet + IP + TCP/UDP super-frame as a sender's stack hands it to
/// a device with TSO/USO: lengths of the whole, the L4 checksum field
/// holding the pseudo-header sum (`NEEDS_CSUM`).
struct Super {
    frame: Vec<u8>,
    hdr: VnetHdr,
    payload: Vec<u8>,
    l3: usize,
    l4: usize,
    body: usize,
}

fn build(v6: bool, tcp: bool, opts: usize, payload: Vec<u8>, mss: u16, flags: u8) -> Super {
    let mut f = hex("020000000002020000000001");
    f.extend_from_slice(if v6 { &[0x86, 0xdd] } else { &[0x08, 0x00] });
    let l3 = f.len();
    let l4_hdr = if tcp { 20 + opts } else { 8 };
    let l4_len = l4_hdr + payload.len();
    let proto = if tcp { 6 } else { 17 };
    if v6 {
        f.extend_from_slice(&[0x60, 0x01, 0x23, 0x45]);
        f.extend_from_slice(&(l4_len as u16).to_be_bytes());
        f.extend_from_slice(&[proto, 64]);
        f.extend_from_slice(&hex("fd000000000000000000000000000001"));
        f.extend_from_slice(&hex("fd000000000000000000000000000002"));
    } else {
        f.extend_from_slice(&[0x45, 0]);
        f.extend_from_slice(&((20 + l4_len) as u16).to_be_bytes());
        f.extend_from_slice(&[0xff, 0xfe, 0x40, 0x00, 64, proto, 0, 0]);
        f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    }
    let l4 = f.len();
    if tcp {
        f.extend_from_slice(&40000u16.to_be_bytes());
        f.extend_from_slice(&5201u16.to_be_bytes());
        f.extend_from_slice(&0xfffff000u32.to_be_bytes());
        f.extend_from_slice(&0x0a0b0c0du32.to_be_bytes());
        f.extend_from_slice(&[
            (((20 + opts) / 4) << 4) as u8,
            flags,
            0x01,
            0xf6,
            0,
            0,
            0,
            0,
        ]);
        f.extend(std::iter::repeat_n(1u8, opts));
    } else {
        f.extend_from_slice(&4433u16.to_be_bytes());
        f.extend_from_slice(&53u16.to_be_bytes());
        f.extend_from_slice(&(l4_len as u16).to_be_bytes());
        f.extend_from_slice(&[0, 0]);
    }
    let body = f.len();
    f.extend_from_slice(&payload);
    // The pseudo-header sum in the checksum field, as with NEEDS_CSUM.
    let field = l4 + if tcp { 16 } else { 6 };
    let addrs = if v6 {
        &f[l3 + 8..l3 + 40]
    } else {
        &f[l3 + 12..l3 + 20]
    };
    let pseudo = csum_fold(csum_add(0, addrs) + l4_len as u64 + proto as u64);
    f[field..field + 2].copy_from_slice(&pseudo.to_be_bytes());
    let gso_type = match (tcp, v6) {
        (true, false) => GSO_TCPV4,
        (true, true) => GSO_TCPV6,
        (false, _) => GSO_UDP_L4,
    };
    Super {
        hdr: VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type,
            hdr_len: body as u16,
            gso_size: mss,
            csum_start: l4 as u16,
            csum_offset: if tcp { 16 } else { 6 },
        },
        frame: f,
        payload,
        l3,
        l4,
        body,
    }
}

fn cut(s: &Super) -> Vec<Vec<u8>> {
    let plan = Plan::new(&s.frame, &s.hdr).expect("a plan");
    (0..plan.segments())
        .map(|k| {
            let mut d = vec![0u8; plan.segment_len(k)];
            let n = plan.write(&s.frame, k, &mut d);
            assert_eq!(n, d.len());
            d
        })
        .collect()
}

/// Checks every header field and checksum of `segs` cut from `s`, and
/// that their payloads laid end to end are the super-frame's.
fn check(s: &Super, segs: &[Vec<u8>], v6: bool, tcp: bool) {
    let mss = s.hdr.gso_size as usize;
    let mut joined = Vec::new();
    let orig = &s.frame;
    for (k, seg) in segs.iter().enumerate() {
        let last = k + 1 == segs.len();
        let pay = &seg[s.body..];
        if !last {
            assert_eq!(pay.len(), mss, "segment {k} carries one MSS");
        }
        joined.extend_from_slice(pay);
        let l4_len = seg.len() - s.l4;
        let be16 = |b: &[u8], at: usize| u16::from_be_bytes([b[at], b[at + 1]]);
        if v6 {
            assert_eq!(be16(seg, s.l3 + 4) as usize, l4_len);
        } else {
            assert_eq!(be16(seg, s.l3 + 2) as usize, seg.len() - s.l3);
            assert_eq!(
                be16(seg, s.l3 + 4),
                be16(orig, s.l3 + 4).wrapping_add(k as u16)
            );
            assert_eq!(
                textbook_sum(&[&seg[s.l3..s.l4]]),
                0xffff,
                "IPv4 header checksum"
            );
        }
        let proto = if tcp { 6u8 } else { 17 };
        let addrs = if v6 {
            &seg[s.l3 + 8..s.l3 + 40]
        } else {
            &seg[s.l3 + 12..s.l3 + 20]
        };
        let mut pseudo = addrs.to_vec();
        pseudo.extend_from_slice(&(l4_len as u32).to_be_bytes());
        pseudo.extend_from_slice(&[0, 0, 0, proto]);
        assert_eq!(
            textbook_sum(&[&pseudo, &seg[s.l4..]]),
            0xffff,
            "L4 checksum of {k}"
        );
        if tcp {
            let seq = u32::from_be_bytes(seg[s.l4 + 4..s.l4 + 8].try_into().expect("4"));
            let seq0 = u32::from_be_bytes(orig[s.l4 + 4..s.l4 + 8].try_into().expect("4"));
            assert_eq!(seq, seq0.wrapping_add((k * mss) as u32));
            let (f0, f) = (orig[s.l4 + 13], seg[s.l4 + 13]);
            assert_eq!(
                f & 0x09,
                if last { f0 & 0x09 } else { 0 },
                "FIN/PSH on the last only"
            );
            assert_eq!(
                f & 0x80,
                if k == 0 { f0 & 0x80 } else { 0 },
                "CWR on the first only"
            );
            assert_eq!(f & 0x76, f0 & 0x76, "other flags kept");
            assert_eq!(
                seg[s.l4 + 14..s.l4 + 16],
                orig[s.l4 + 14..s.l4 + 16],
                "window"
            );
            assert_eq!(
                seg[s.l4 + 18..s.body],
                orig[s.l4 + 18..s.body],
                "urgent, options"
            );
        } else {
            assert_eq!(be16(seg, s.l4 + 4) as usize, l4_len);
            assert_ne!(be16(seg, s.l4 + 6), 0);
        }
    }
    assert_eq!(joined, s.payload, "payloads end to end are the original");
}

#[test]
fn a_tso_super_frame_is_cut_into_the_segments_the_kernel_sends() {
    // 3000 bytes at MSS 1448 (the TCP header has 12 bytes of timestamp
    // option): 1448 + 1448 + 104.
    let payload: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 251) as u8).collect();
    let mut s = build(false, true, 12, payload, 1448, 0x99);
    // The golden headers' sender: id 0x1234, seq 0x01020304, timestamps.
    s.frame[s.l3 + 4..s.l3 + 6].copy_from_slice(&[0x12, 0x34]);
    s.frame[s.l4 + 4..s.l4 + 8].copy_from_slice(&[1, 2, 3, 4]);
    s.frame[s.l4 + 20..s.l4 + 32].copy_from_slice(&hex("0101080a1122334455667788"));
    let segs = cut(&s);
    let lens: Vec<usize> = segs.iter().map(Vec::len).collect();
    assert_eq!(lens, vec![1514, 1514, 170]);
    // Headers as an independent implementation writes them (ids, lengths,
    // seqs, CWR/FIN/PSH, both checksums).
    let golden = [
        "0200000000020200000000010800450005dc1234400040060ee60a0000010a0000029c401451010203040a0b0c0d809001f6d9c300000101080a1122334455667788",
        "0200000000020200000000010800450005dc1235400040060ee50a0000010a0000029c401451010208ac0a0b0c0d801001f6f2bf00000101080a1122334455667788",
        "02000000000202000000000108004500009c12364000400614240a0000010a0000029c40145101020e540a0b0c0d801901f6293300000101080a1122334455667788",
    ];
    for (seg, g) in segs.iter().zip(golden) {
        assert_eq!(seg[..s.body].to_vec(), hex(g));
    }
    check(&s, &segs, false, true);
}

#[test]
fn an_ipv6_super_frame_of_whole_segments_is_cut_exactly() {
    let payload: Vec<u8> = (0..2000u32).map(|i| (i % 256) as u8).collect();
    let s = build(true, true, 0, payload, 1000, 0x18);
    let segs = cut(&s);
    assert_eq!(segs.len(), 2);
    assert_eq!(segs[0].len(), 14 + 40 + 20 + 1000);
    check(&s, &segs, true, true);
    // The sequence number wraps past 2^32 (0xfffff000 + 1000 stays below,
    // a larger offset would not: see the property test).
    assert_eq!(segs[1][s.l4 + 13], 0x18, "PSH stays on the last");
    assert_eq!(segs[0][s.l4 + 13], 0x10);
}

#[test]
fn a_udp_gso_super_frame_is_cut_into_datagrams() {
    let payload: Vec<u8> = (0..2500u32).map(|i| (i * 3 % 256) as u8).collect();
    for v6 in [false, true] {
        let s = build(v6, false, 0, payload.clone(), 1000, 0);
        let segs = cut(&s);
        let lens: Vec<usize> = segs.iter().map(|g| g.len() - s.l4).collect();
        assert_eq!(lens, vec![1008, 1008, 508], "UDP lengths");
        check(&s, &segs, v6, false);
    }
}

#[test]
fn what_cannot_be_cut_says_why() {
    let s = build(false, true, 0, vec![0; 3000], 1448, 0x10);
    let mut h = s.hdr;
    h.gso_type = GSO_NONE;
    assert_eq!(Plan::new(&s.frame, &h), Err(GsoError::NotGso));
    h.gso_type = GSO_TCPV6;
    assert!(matches!(
        Plan::new(&s.frame, &h),
        Err(GsoError::Unsupported(_))
    ));
    h.gso_type = GSO_UDP;
    assert!(matches!(
        Plan::new(&s.frame, &h),
        Err(GsoError::Unsupported(_))
    ));
    assert_eq!(Plan::new(&s.frame[..40], &s.hdr), Err(GsoError::Truncated));
    let mut f = s.frame.clone();
    f[s.l3 + 2..s.l3 + 4].copy_from_slice(&9000u16.to_be_bytes());
    assert_eq!(Plan::new(&f, &s.hdr), Err(GsoError::Truncated));
    h = s.hdr;
    h.gso_size = 0;
    assert!(matches!(
        Plan::new(&s.frame, &h),
        Err(GsoError::Unsupported(_))
    ));
}

#[test]
fn a_partial_checksum_is_completed_as_a_device_would() {
    // One segment's worth, not GSO: the field holds the pseudo sum.
    let s = build(
        false,
        true,
        0,
        (0..999u32).map(|i| i as u8).collect(),
        1448,
        0x18,
    );
    let mut f = s.frame.clone();
    let h = VnetHdr {
        gso_type: GSO_NONE,
        ..s.hdr
    };
    assert!(complete_checksum(&mut f, &h));
    let l4_len = f.len() - s.l4;
    let mut pseudo = f[s.l3 + 12..s.l3 + 20].to_vec();
    pseudo.extend_from_slice(&[0, 6]);
    pseudo.extend_from_slice(&(l4_len as u16).to_be_bytes());
    assert_eq!(textbook_sum(&[&pseudo, &f[s.l4..]]), 0xffff);
    // Without NEEDS_CSUM nothing is touched.
    let mut g = s.frame.clone();
    assert!(!complete_checksum(&mut g, &VnetHdr::default()));
    assert_eq!(g, s.frame);
}

#[test]
fn the_header_reads_back_what_it_writes() {
    let h = VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: GSO_TCPV4 | GSO_ECN,
        hdr_len: 66,
        gso_size: 1448,
        csum_start: 34,
        csum_offset: 16,
    };
    assert_eq!(VnetHdr::parse(&h.to_bytes()), Some(h));
    assert!(h.is_gso() && h.needs_csum());
    assert_eq!(VnetHdr::parse(&[0; 9]), None);
}

fn spec_of(lines: &[&str]) -> Spec {
    let mut cfg = pipelab_lang::Config::new();
    for l in lines {
        let c = pipelab_lang::parse_line(l)
            .expect("parse")
            .expect("a command");
        cfg.apply(&c).expect("apply");
    }
    pipelab_emu::lower_config(&cfg, &mut |_| Err("no files".into())).expect("lower")
}

#[test]
fn only_a_fixed_delay_keeps_super_frames_whole() {
    let rule = "add 100 pipe 1 ip from any to any";
    assert!(keeps_whole(&spec_of(&[])));
    assert!(keeps_whole(&spec_of(&["pipe 1 config delay 10ms", rule])));
    assert!(keeps_whole(&spec_of(&[
        "pipe 1 config delay 10ms queue 5",
        rule
    ])));
    for cut in [
        "pipe 1 config bw 1Gbit/s delay 10ms",
        "pipe 1 config delay 10ms loss 0.5%",
        "pipe 1 config delay 10ms 2ms",
        "pipe 1 config delay 10ms duplicate 1%",
        "pipe 1 config delay 10ms corrupt 1%",
        "pipe 1 config delay 10ms queue 100 red 0.002/5/45/0.1",
        "pipe 1 config delay 10ms codel target 5ms interval 100ms",
        "pipe 1 config delay 100ms limit 50",
        "pipe 1 config slot 10ms",
    ] {
        assert!(!keeps_whole(&spec_of(&[cut, rule])), "{cut}");
    }
    assert!(!keeps_whole(&spec_of(&[
        "pipe 1 config delay 10ms",
        "add 100 prob 0.5 pipe 1 ip from any to any"
    ])));
    assert!(!keeps_whole(&spec_of(&[
        "pipe 1 config delay 10ms",
        "add 100 pipe 1 ip from any to any iplen 0-100"
    ])));
}

proptest! {
    #[test]
    fn any_super_frame_cuts_into_its_payload(
        v6 in any::<bool>(),
        tcp in any::<bool>(),
        opts in 0usize..=10,
        len in 1usize..20_000,
        mss in 64u16..2000,
        flags in any::<u8>(),
        seed in any::<u8>(),
    ) {
        let payload: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect();
        let s = build(v6, tcp, opts * 4, payload, mss, flags & !0x02);
        let segs = cut(&s);
        prop_assert_eq!(segs.len(), len.div_ceil(mss as usize));
        check(&s, &segs, v6, tcp);
    }
}

/// The super-frame of `s` in a pool, cut as the runner cuts it (a spec
/// with a bandwidth), then coalesced as the runner coalesces what leaves
/// together: the result is `s` again (its IPv4 header checksum filled).
fn round_trip(s: &Super) -> (Vec<u8>, VnetHdr, Vec<BufId>, GsoStats) {
    use crate::buffers::{Annotation, Rx};
    let mut pool = BufferPool::with_cap(16 << 20);
    let mut got = Vec::new();
    let mut rx = Rx::new(&mut pool, 0, 10, &mut got);
    rx.copy(&[&s.frame], Annotation::default()).expect("room");
    rx.set_vnet(s.hdr);
    let spec = spec_of(&[
        "pipe 1 config bw 1Gbit/s",
        "add 100 pipe 1 ip from any to any",
    ]);
    let mut gso = Offloads::new(&spec, vec![true, true]);
    let mut segs = Vec::new();
    assert_eq!(gso.on_receive(&mut pool, got[0], &mut segs), Some(0));
    assert!(pool.release(got[0]).is_none());
    let mut leaving: Vec<Leaving> = segs
        .iter()
        .map(|&buf| Leaving {
            port: 1,
            buf,
            segments: 1,
            intact: true,
        })
        .collect();
    let mut spent = Vec::new();
    gso.coalesce(&mut pool, &mut leaving, &mut spent);
    assert_eq!(leaving.len(), 1, "one super-frame leaves");
    assert_eq!(leaving[0].segments as usize, segs.len());
    assert_eq!(spent, segs);
    let b = leaving[0].buf;
    (pool.frame(b).to_vec(), pool.meta(b).vnet, segs, gso.stats)
}

#[test]
fn segments_leaving_together_coalesce_into_the_super_frame() {
    for (v6, flags) in [(false, 0x99u8), (true, 0x18)] {
        let payload: Vec<u8> = (0..10_000u32).map(|i| (i % 241) as u8).collect();
        let mut s = build(v6, true, 12, payload, 1448, flags);
        if !v6 {
            // The IPv4 header checksum as a sender fills it.
            s.frame[s.l3 + 10..s.l3 + 12].copy_from_slice(&[0, 0]);
            let c = !csum_fold(csum_add(0, &s.frame[s.l3..s.l4]));
            s.frame[s.l3 + 10..s.l3 + 12].copy_from_slice(&c.to_be_bytes());
        }
        let (f, h, segs, st) = round_trip(&s);
        assert_eq!(f, s.frame, "v6 {v6}: the super-frame again");
        assert_eq!(segs.len(), 7);
        assert_eq!(
            (h.gso_type & !GSO_ECN, h.gso_size, h.csum_start, h.flags),
            (s.hdr.gso_type, 1448, s.l4 as u16, F_NEEDS_CSUM)
        );
        assert_eq!(h.gso_type & GSO_ECN != 0, flags & 0x80 != 0);
        assert_eq!((st.coalesced, st.segments_coalesced), (1, 7));
    }
}

#[test]
fn what_breaks_a_run_is_not_coalesced() {
    use crate::buffers::{Annotation, Rx};
    let payload: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
    let s = build(false, true, 0, payload, 1000, 0x10);
    let mut pool = BufferPool::with_cap(16 << 20);
    let mut got = Vec::new();
    let mut rx = Rx::new(&mut pool, 0, 10, &mut got);
    for seg in cut(&s) {
        rx.copy(&[&seg], Annotation::default()).expect("room");
    }
    // Segments 0-1 by port 1, 2 corrupted, 3 by port 0 (no virtio-net
    // header there), 4 alone: nothing but 0-1 merges.
    let spec = spec_of(&[]);
    let mut gso = Offloads::new(&spec, vec![false, true]);
    let ports = [1, 1, 1, 0, 1];
    let mut leaving: Vec<Leaving> = got
        .iter()
        .zip(ports)
        .enumerate()
        .map(|(k, (&buf, port))| Leaving {
            port,
            buf,
            segments: 1,
            intact: k != 2,
        })
        .collect();
    let mut spent = Vec::new();
    gso.coalesce(&mut pool, &mut leaving, &mut spent);
    let shape: Vec<(usize, u32)> = leaving.iter().map(|l| (l.port, l.segments)).collect();
    assert_eq!(shape, vec![(1, 2), (1, 1), (0, 1), (1, 1)]);
    assert_eq!(spent, got[..2].to_vec());
}

#[test]
fn a_frame_to_be_corrupted_loses_its_partial_checksum_and_verified_mark() {
    use crate::buffers::{Annotation, Rx};
    let s = build(
        false,
        true,
        0,
        (0..500u32).map(|i| i as u8).collect(),
        1448,
        0x18,
    );
    let mut pool = BufferPool::with_cap(1 << 20);
    let mut got = Vec::new();
    let mut rx = Rx::new(&mut pool, 0, 10, &mut got);
    for flags in [F_NEEDS_CSUM | F_DATA_VALID, F_DATA_VALID] {
        rx.copy(&[&s.frame], Annotation::default()).expect("room");
        rx.set_vnet(VnetHdr {
            flags,
            gso_type: GSO_NONE,
            ..s.hdr
        });
    }
    let mut gso = Offloads::default();
    for &b in &got {
        gso.settle(&mut pool, b);
        assert_eq!(pool.meta(b).vnet.flags, 0);
    }
    // The partial one was completed: it verifies.
    let f = pool.frame(got[0]);
    let mut pseudo = f[s.l3 + 12..s.l3 + 20].to_vec();
    pseudo.extend_from_slice(&[0, 6]);
    pseudo.extend_from_slice(&((f.len() - s.l4) as u16).to_be_bytes());
    assert_eq!(textbook_sum(&[&pseudo, &f[s.l4..]]), 0xffff);
    assert_eq!(gso.stats.csum_completed, 1);
}
