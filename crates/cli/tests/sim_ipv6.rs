//! `pipelab sim --topology` is dual-stack, as `topo up` is: VN `k` is
//! host `k + 1` of `--prefix6` (default `fd00::/64`), an IPv6 source
//! crosses the same pipes as its IPv4 twin with the same delays, its
//! frames are IPv6, the run is the same, byte for byte, on 1, 2 and 4
//! workers, and an IPv6 address that is no VN's is refused by name.

use std::net::{Ipv4Addr, Ipv6Addr};

mod common;
use common::run;

fn ok(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "pipelab {}: {err}", args.join(" "));
    out
}

/// A ring of `routers` routers with `clients` VNs each, written in `dir`.
fn ring(dir: &std::path::Path, routers: &str, clients: &str) -> String {
    let file = dir.join("ring.gml");
    let file = file.to_str().expect("utf-8").to_string();
    ok(&[
        "topo",
        "gen",
        "ring",
        "--routers",
        routers,
        "--clients",
        clients,
        "-o",
        &file,
    ]);
    file
}

/// An events line without its addresses (the one thing twins differ in).
fn without_addresses(line: &str) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(line).expect("event json");
    let o = v.as_object_mut().expect("object");
    o.remove("src");
    o.remove("dst");
    v
}

/// A pass proves the item's "must show": on a ring of 4 routers and 8
/// VNs, a CBR source from `[fd00::1]` to `[fd00::6]` (VN 0 to VN 5) and
/// its IPv4 twin from 10.0.0.1 to 10.0.0.6, each run alone, cross the
/// same four pipes (vn0 -> r0, r0 -> r1, r1 -> r2, r2 -> vn5: pipes
/// 65536, 65552, 65554, 65547) with the same counters, and every packet
/// has the same events at the same virtual instants (each delivered
/// 13.76 ms after it was sent: 1 + 5 + 5 + 1 ms of delay, 0.8 ms at 10
/// Mbit/s twice and 0.08 ms at 100 Mbit/s twice); the events name the
/// IPv6 addresses, and the capture holds IPv6 frames (EtherType 0x86DD,
/// then the addresses).
#[test]
fn an_ipv6_source_crosses_the_same_route_as_its_ipv4_twin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ring = ring(dir.path(), "4", "2");
    let sim = |from: &str, to: &str, tag: &str| {
        let events = dir.path().join(format!("{tag}.events"));
        let pcap = dir.path().join(format!("{tag}.pcap"));
        let t = format!("cbr rate 100pps size 1000B duration 100ms from {from}:5000 to {to}:9");
        let out = ok(&[
            "sim",
            "--topology",
            &ring,
            "--traffic",
            &t,
            "--json",
            "--events",
            events.to_str().expect("utf-8"),
            "--pcap",
            pcap.to_str().expect("utf-8"),
        ]);
        let report: serde_json::Value = serde_json::from_str(&out).expect("json");
        let events = std::fs::read_to_string(events).expect("events");
        let pcap = std::fs::read(pcap).expect("pcap");
        (report, events, pcap)
    };
    let (r4, e4, _) = sim("10.0.0.1", "10.0.0.6", "v4");
    let (r6, e6, pcap6) = sim("[fd00::1]", "[fd00::6]", "v6");
    // The same pipes, with the same counters.
    assert_eq!(r6["pipes"], r4["pipes"]);
    let crossed: Vec<u64> = r6["pipes"]
        .as_array()
        .expect("pipes")
        .iter()
        .filter(|p| p["arrivals"] != 0)
        .map(|p| {
            assert_eq!(p["arrivals"], 10);
            assert_eq!(p["departures"], 10);
            p["id"].as_u64().expect("id")
        })
        .collect();
    assert_eq!(crossed, [65536, 65547, 65552, 65554]);
    // The same delays, exactly.
    let (f4, f6) = (&r4["flows"][0], &r6["flows"][0]);
    assert_eq!(f6["sent"], 10);
    assert_eq!(f6["received"], 10);
    for k in [
        "delay_ms",
        "sent",
        "received",
        "lost",
        "received_bytes",
        "throughput_bps",
    ] {
        assert_eq!(f6[k], f4[k], "{k}");
    }
    // Packet by packet: the same events at the same instants.
    let (l4, l6): (Vec<&str>, Vec<&str>) = (e4.lines().collect(), e6.lines().collect());
    assert_eq!(l6.len(), 20, "10 arrivals, 10 departures");
    assert_eq!(l4.len(), l6.len());
    for (a, b) in l4.iter().zip(&l6) {
        assert_eq!(without_addresses(a), without_addresses(b));
    }
    let first_departure = without_addresses(l6[2]);
    assert_eq!(first_departure["event"], "depart");
    assert_eq!(first_departure["port"], "vn5");
    assert_eq!(first_departure["t_ns"], 13_760_000);
    let e: serde_json::Value = serde_json::from_str(l6[0]).expect("json");
    assert_eq!(
        (e["src"].as_str(), e["dst"].as_str()),
        (Some("fd00::1"), Some("fd00::6"))
    );
    // IPv6 frames: EtherType 0x86DD, version 6, UDP, then both addresses.
    let a = |s: &str| s.parse::<Ipv6Addr>().expect("address").octets();
    let mut header = vec![0x86, 0xdd, 0x60, 0, 0, 0, 0x03, 0xc0, 17, 64];
    header.extend(a("fd00::1"));
    header.extend(a("fd00::6"));
    let frames = pcap6.windows(header.len()).filter(|w| *w == header).count();
    assert_eq!(frames, 20, "every arrival and departure is an IPv6 frame");
}

/// A pass proves the run with IPv6 traffic (and IPv4 alongside) is the
/// same, byte for byte, for `--workers 1`, `2` and `4`: the JSON report,
/// the event log and the capture, on a ring of 10 routers and 100 VNs
/// whose flows go all around it.
#[test]
fn ipv6_traffic_is_byte_identical_for_1_2_4_workers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ring = ring(dir.path(), "10", "10");
    let v6 = |k: u32| Ipv6Addr::from(0xfd00u128 << 112 | u128::from(k + 1));
    let v4 = |k: u32| Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 0, 0, 1)) + k);
    let mut flows = String::new();
    for i in 0..30u32 {
        let (s, d) = ((i * 7) % 100, (i * 31 + 50) % 100);
        let d = if d == s { (d + 1) % 100 } else { d };
        let pattern = if i % 2 == 0 { "poisson" } else { "cbr" };
        let (from, to) = if i % 3 == 0 {
            (v4(s).to_string(), v4(d).to_string())
        } else {
            (format!("[{}]", v6(s)), format!("[{}]", v6(d)))
        };
        flows += &format!(
            "{pattern} rate 400pps size 1200B duration 300ms from {from}:{} to {to}:9\n",
            1000 + i
        );
    }
    let file = dir.path().join("flows.traffic");
    std::fs::write(&file, flows).expect("write flows");
    let file = file.to_str().expect("utf-8");
    let outputs = |k: &str| {
        let events = dir.path().join(format!("w{k}.events"));
        let pcap = dir.path().join(format!("w{k}.pcap"));
        let report = ok(&[
            "sim",
            "--topology",
            &ring,
            "--cross",
            "vn0 vn55 5Mbit/s",
            "--traffic-file",
            file,
            "--seed",
            "3",
            "--workers",
            k,
            "--json",
            "--events",
            events.to_str().expect("utf-8"),
            "--pcap",
            pcap.to_str().expect("utf-8"),
        ]);
        (
            report,
            std::fs::read(events).expect("events"),
            std::fs::read(pcap).expect("pcap"),
        )
    };
    let one = outputs("1");
    let report: serde_json::Value = serde_json::from_str(&one.0).expect("json");
    let flows = report["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), 30);
    for f in flows {
        assert!(f["received"].as_u64() > Some(0), "{f}");
    }
    let events = String::from_utf8(one.1.clone()).expect("utf-8");
    assert!(events.contains("\"src\":\"fd00::8\""), "IPv6 events");
    assert!(events.contains("\"src\":\"10.0.0.1\""), "IPv4 events");
    for k in ["2", "4"] {
        let other = outputs(k);
        assert!(other.0 == one.0, "--workers {k}: the report differs");
        assert!(other.1 == one.1, "--workers {k}: the events differ");
        assert!(other.2 == one.2, "--workers {k}: the capture differs");
    }
}

/// A pass proves an IPv6 address that is no VN's is refused, naming it
/// (as `to` and as `from`), as are a source whose addresses are of two
/// families and a `--prefix6` that is no /64; and that `--prefix6` moves
/// the VNs' addresses: under `fd12:3456:789a:1::/64`, VN 2 is
/// `fd12:3456:789a:1::3`.
#[test]
fn ipv6_addresses_are_the_vns_or_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ring = ring(dir.path(), "3", "2");
    let t = |from: &str, to: &str| {
        format!("cbr rate 10pps size 100B duration 1s from {from}:9 to {to}:9")
    };
    let cases = [
        (
            t("[fd00::1]", "[fd00::99]"),
            "fd00::/64",
            "error: --traffic #1: to address fd00::99 is no VN's",
        ),
        (
            t("[fd00:1::1]", "[fd00::3]"),
            "fd00::/64",
            "error: --traffic #1: from address fd00:1::1 is no VN's",
        ),
        (
            t("10.0.0.1", "[fd00::3]"),
            "fd00::/64",
            "error: --traffic #1: from 10.0.0.1 and to fd00::3 are not of one family",
        ),
        (
            t("[fd00::1]", "[fd00::3]"),
            "fd00::/48",
            "error: --prefix6: 'fd00::/48': length '48' must be 64",
        ),
        (
            t("[fd00::1]", "[fd00::3]"),
            "10.0.0.0/64",
            "error: --prefix6: '10.0.0.0/64': '10.0.0.0' is not an IPv6 address",
        ),
        (
            t("[fd00::1]", "[fd00::3]"),
            "fd12:3456:789a:1::/64",
            "error: --traffic #1: to address fd00::3 is no VN's",
        ),
    ];
    for (traffic, prefix6, want) in &cases {
        let args = [
            "sim",
            "--topology",
            &ring,
            "--prefix6",
            prefix6,
            "--traffic",
            traffic,
        ];
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "pipelab {}: {err}", args.join(" "));
        assert!(err.starts_with(want), "{err:?} should say {want:?}");
    }
    let out = ok(&[
        "sim",
        "--topology",
        &ring,
        "--prefix6",
        "fd12:3456:789a:1::/64",
        "--traffic",
        &t("[fd12:3456:789a:1::1]", "[fd12:3456:789a:1::3]"),
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(report["flows"][0]["received"], 10);
}
