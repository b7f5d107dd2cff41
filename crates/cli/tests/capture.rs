//! Packet captures (`--pcap`) and event logs (`--events`): what they hold
//! against what the accounting counts, in virtual time (exactly) and
//! through a live shell (the emulated delay read back from the capture's
//! timestamps). `tcpdump` and `tshark` (Debian packages, installed by
//! `.ci/run`) must read every capture.

use pipelab_io::pcapng;
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::{Command, Stdio};

mod common;
use common::{live, reads, run, tmp_path, BIN};

fn examples(f: &str) -> String {
    format!("{}/../../examples/{f}", env!("CARGO_MANIFEST_DIR"))
}

/// The demo (`examples/two-links.*`) in virtual time with `extra` flags;
/// its JSON report.
fn demo(extra: &[&str]) -> Value {
    let (conf, traffic) = (examples("two-links.conf"), examples("two-links.traffic"));
    let mut args = vec!["sim", &conf, "--traffic-file", &traffic, "--json"];
    args.extend_from_slice(extra);
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).expect("report")
}

fn sum(report: &Value, f: impl Fn(&Value) -> u64) -> u64 {
    report["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .map(f)
        .sum()
}

fn drops(flow: &Value) -> u64 {
    flow["drops"]
        .as_object()
        .expect("drops")
        .values()
        .map(|v| v.as_u64().unwrap_or(0))
        .sum()
}

/// A pass proves `pipelab sim --pcap` of the bundled demo is the same
/// file, byte for byte, on two runs and with 3 workers; that tshark and
/// tcpdump read it, tshark seeing as many packets as the file holds;
/// and that it holds what the report counts: one arrival on "sim in" per
/// packet sent, one departure on "sim out" per packet received, one
/// record with its reason per drop, timestamps in virtual time from 0.
#[test]
fn sim_capture_of_the_demo_is_byte_identical_and_counts_what_the_report_counts() {
    let (a, b, c) = (
        tmp_path("a.pcapng"),
        tmp_path("b.pcapng"),
        tmp_path("c.pcapng"),
    );
    let report = demo(&["--pcap", &a]);
    demo(&["--pcap", &b]);
    demo(&["--pcap", &c, "--workers", "3"]);
    let bytes = std::fs::read(&a).expect("capture");
    assert!(bytes == std::fs::read(&b).expect("b"), "two runs differ");
    assert!(bytes == std::fs::read(&c).expect("c"), "3 workers differ");

    let cap = pcapng::read(&bytes).expect("pcapng");
    assert_eq!(cap.interfaces, vec!["sim in", "sim out"]);
    let on = |i: u32, dropped: bool| {
        cap.packets
            .iter()
            .filter(|p| {
                p.iface == i && p.comments.iter().any(|c| c.starts_with("dropped: ")) == dropped
            })
            .count() as u64
    };
    let sent = sum(&report, |f| f["sent"].as_u64().unwrap_or(0));
    let received = sum(&report, |f| f["received"].as_u64().unwrap_or(0));
    let dropped = sum(&report, drops);
    assert!(dropped > 0, "the demo's 256 Kbit/s uplink drops (queue 20)");
    assert_eq!(on(0, false), sent, "arrivals");
    assert_eq!(on(1, false), received, "departures");
    assert_eq!(on(0, true), dropped, "drops");
    assert_eq!(cap.packets.len() as u64, sent + received + dropped);
    assert_eq!(cap.packets[0].ts_ns, 0, "virtual time starts at 0");
    // The download's first packet: 1500 B at 2000 Kbit/s (6 ms) plus
    // 3 ms, out at 9 ms (and no earlier packet of it left before).
    let download = |p: &&pcapng::Packet| p.data.get(36..38) == Some(&40000u16.to_be_bytes()[..]);
    let first_out = cap
        .packets
        .iter()
        .filter(|p| p.iface == 1)
        .find(download)
        .expect("out");
    assert_eq!(first_out.ts_ns, 9_000_000);
    assert_eq!(first_out.orig_len, 1514, "the wire length: 14 + 1500");
    assert_eq!(first_out.data.len(), 128, "cut at the snap length");

    let listed = reads("tshark", &["-r", &a]);
    assert_eq!(listed.lines().count(), cap.packets.len());
    let comments = reads(
        "tshark",
        &[
            "-r",
            &a,
            "-Y",
            "frame.comment",
            "-T",
            "fields",
            "-e",
            "frame.comment",
        ],
    );
    assert_eq!(comments.lines().count() as u64, dropped);
    assert!(
        comments.lines().all(|l| l == "dropped: queue"),
        "{comments}"
    );
    let head = reads("tcpdump", &["-r", &a, "-c", "5", "-n"]);
    assert!(
        head.contains("IP 192.0.2.10.80 > 10.0.0.2.40000: UDP"),
        "{head}"
    );
    for f in [a, b, c] {
        let _ = std::fs::remove_file(f);
    }
}

/// A pass proves every frame of `pipelab sim --pcap` short enough to be
/// captured whole carries the transport checksum tcpdump verifies: UDP
/// and TCP over IPv4 and IPv6 (IPv6's UDP checksum was 0, which IPv6
/// forbids, and tcpdump said "bad udp cksum 0x0000").
#[test]
fn sim_capture_checksums_verify() {
    let conf = examples("two-links.conf");
    let pcap = tmp_path("sums.pcapng");
    let (code, _, err) = run(&[
        "sim",
        &conf,
        "--pcap",
        &pcap,
        "--traffic",
        "cbr rate 10pps size 100B duration 300ms from [fd00::1]:9 to [fd00::2]:7",
        "--traffic",
        "cbr rate 10pps size 90B duration 300ms from 10.0.0.1:9 to 10.0.0.2:7",
        "--traffic",
        "cbr rate 10pps size 100B duration 300ms from [fd00::1]:9 to [fd00::2]:80 proto tcp",
        "--traffic",
        "cbr rate 10pps size 80B duration 300ms from 10.0.0.1:9 to 10.0.0.2:80 proto tcp",
    ]);
    assert_eq!(code, 0, "{err}");
    let listed = reads("tcpdump", &["-vv", "-n", "-r", &pcap]);
    let (udp_ok, tcp_ok) = (
        listed.matches("udp sum ok").count(),
        listed.matches("(correct)").count(),
    );
    assert!(
        !listed.contains("bad") && !listed.contains("incorrect"),
        "{listed}"
    );
    assert!(
        udp_ok >= 6 && tcp_ok >= 6,
        "udp {udp_ok}, tcp {tcp_ok}:\n{listed}"
    );
    let _ = std::fs::remove_file(pcap);
}

/// A pass proves the event log of a run that drops, marks, copies and
/// corrupts counts, event by event, what the report counts (JSON lines
/// that parse; arrivals = sent, departures = received, drops by reason,
/// marks, copies, corruptions), that the backlog ends at zero, that a
/// `.csv` name gives CSV with its header and the same lines, and that
/// `--events-max` stops at the cap and says so.
#[test]
fn sim_events_count_what_the_report_counts() {
    let conf = tmp_path("ev.conf");
    std::fs::write(
        &conf,
        "pipe 1 config bw 2Mbit/s queue 10 loss 10% ecn duplicate 5% corrupt 5%\n\
         add 100 pipe 1 ip from any to any\n",
    )
    .expect("conf");
    let (jsonl, csv, capped) = (
        tmp_path("ev.jsonl"),
        tmp_path("ev.csv"),
        tmp_path("cap.jsonl"),
    );
    let sim = |extra: &[&str]| {
        let mut args = vec![
            "sim",
            &conf,
            "--json",
            "-t",
            "cbr rate 300pps size 1000B duration 2s ecn",
            "-t",
            "cbr rate 300pps size 1000B duration 2s from 10.0.0.3:9 to 10.0.0.4:9",
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    let (code, out, err) = sim(&["--events", &jsonl]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).expect("report");
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let text = std::fs::read_to_string(&jsonl).expect("log");
    let mut last = Value::Null;
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let mut key = v["event"].as_str().expect("event").to_string();
        if let Some(r) = v["reason"].as_str() {
            key = format!("{key} {r}");
        }
        *counts.entry(key).or_default() += 1;
        last = v;
    }
    let total = |k: &str| sum(&report, |f| f[k].as_u64().unwrap_or(0));
    let drop = |r: &str| sum(&report, |f| f["drops"][r].as_u64().unwrap_or(0));
    let n = |k: &str| counts.get(k).copied().unwrap_or(0);
    let pipe = &report["pipes"][0];
    let pipe_n = |k: &str| pipe[k].as_u64().unwrap_or(0);
    assert_eq!(n("arrive"), total("sent"));
    // Copies arrive at the pipe too, and depart or are dropped.
    assert_eq!(n("duplicate"), pipe_n("arrivals") - total("sent"));
    assert_eq!(n("depart"), pipe_n("departures"));
    assert_eq!(n("drop queue"), drop("queue"));
    assert_eq!(n("drop loss"), drop("loss"));
    assert_eq!(
        n("arrive") + n("duplicate"),
        n("depart") + n("drop queue") + n("drop loss"),
        "every packet and copy departs or is dropped"
    );
    assert_eq!(n("mark"), total("ecn_marked"));
    assert_eq!(n("corrupt"), total("corrupted"));
    for k in ["drop queue", "drop loss", "duplicate", "mark", "corrupt"] {
        assert!(n(k) > 0, "{k}: none in {counts:?}");
    }
    assert_eq!(last["backlog_packets"], 0, "nothing inside at the end");
    assert_eq!(last["backlog_bytes"], 0);

    let (code, _, err) = sim(&["--events", &csv]);
    assert_eq!(code, 0, "{err}");
    let table = std::fs::read_to_string(&csv).expect("csv");
    assert!(table.starts_with(
        "t_ns,port,event,reason,proto,src,dst,sport,dport,size,backlog_packets,backlog_bytes\n"
    ));
    assert_eq!(table.lines().count(), text.lines().count() + 1);

    let (code, _, err) = sim(&["--events", &capped, "--events-max", "10000B"]);
    assert_eq!(code, 0, "{err}");
    let size = std::fs::metadata(&capped).expect("capped").len();
    assert!(size <= 10_000 && size > 9_000, "{size} bytes");
    assert!(err.contains("--events-max"), "{err}");
    let (code, _, err) = sim(&["--events", &capped, "--events-max", "ten"]);
    assert_eq!(code, 2);
    assert!(err.contains("--events-max 'ten'"), "{err}");
    for f in [conf, jsonl, csv, capped] {
        let _ = std::fs::remove_file(f);
    }
}

/// The EPB of an ICMP echo: (type, id, seq) if `data` is one over IPv4.
fn echo(data: &[u8]) -> Option<(u8, u16, u16)> {
    if data.len() < 42 || data[12..14] != [0x08, 0x00] || data[23] != 1 {
        return None;
    }
    let ihl = (data[14] & 0x0f) as usize * 4;
    let icmp = data.get(14 + ihl..14 + ihl + 8)?;
    let kind = icmp[0];
    (kind == 0 || kind == 8).then(|| {
        (
            kind,
            u16::from_be_bytes([icmp[4], icmp[5]]),
            u16::from_be_bytes([icmp[6], icmp[7]]),
        )
    })
}

/// `pipelab shell --pcap x.pcapng --link 'delay 20ms loss 10%' -- ping -c
/// 100`: tcpdump and tshark read the capture; per direction, the echoes
/// in = out + drops (each drop with the comment `dropped: loss`), the
/// capture's packets are the report's (received = arrivals, delivered =
/// departures, dropped = drop records), and each echo's out − in
/// (matched by ICMP id and sequence) is never below 20 ms and within
/// 20 ms + 0.2 ms for 95% of them, in one of three runs: on this loaded,
/// shared 2-vCPU machine a stalled virtual CPU delays a departure by
/// milliseconds now and then, which the capture shows as it happened.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn shell_capture_shows_the_link() {
    let Some(_g) = live() else { return };
    let r = common::in_one_of_three(|| {
        let (pcap, stats) = (tmp_path("shell.pcapng"), tmp_path("shell.json"));
        let out = Command::new(BIN)
            .args(["shell", "--link", "delay 20ms loss 10%", "--pcap", &pcap])
            .args(["--stats", &stats, "--", "sh", "-c"])
            .arg("ping -c 100 -i 0.02 -q $PIPELAB_OUTSIDE; true")
            .stdin(Stdio::null())
            .output()
            .expect("pipelab shell");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report = common::read_stats(&stats);
        assert_eq!(report["capture"]["capture_lost"], 0);
        let bytes = std::fs::read(&pcap).expect("capture");
        let cap = pcapng::read(&bytes).expect("pcapng");
        assert_eq!(
            cap.interfaces,
            vec!["inside in", "inside out", "outside in", "outside out"]
        );
        reads("tcpdump", &["-r", &pcap, "-c", "5", "-n"]);
        let listed = reads("tshark", &["-r", &pcap]);
        assert_eq!(listed.lines().count(), cap.packets.len());
        // Everything the report counts is in the capture.
        let st = &report["stats"];
        let dropped = |p: &pcapng::Packet| p.comments.iter().any(|c| c.starts_with("dropped: "));
        let ins = cap
            .packets
            .iter()
            .filter(|p| p.iface % 2 == 0 && !dropped(p))
            .count();
        let outs = cap.packets.iter().filter(|p| p.iface % 2 == 1).count();
        let drops = cap.packets.iter().filter(|p| dropped(p)).count();
        assert_eq!(ins as u64, st["received"].as_u64().unwrap_or(0), "{st}");
        assert_eq!(outs as u64, st["delivered"].as_u64().unwrap_or(0), "{st}");
        assert_eq!(
            drops as u64,
            st["dropped_loss"].as_u64().unwrap_or(0),
            "{st}"
        );
        assert_eq!(report["capture"]["packets"], cap.packets.len());

        // Echo requests cross inside → outside, replies outside → inside.
        let mut delays: Vec<f64> = Vec::new();
        let mut lines = Vec::new();
        for (kind, from, to) in [(8u8, 0u32, 3u32), (0, 2, 1)] {
            let mut arrived = BTreeMap::new();
            let mut left = BTreeMap::new();
            let mut lost = 0;
            for p in &cap.packets {
                let Some((k, id, seq)) = echo(&p.data) else {
                    continue;
                };
                if k != kind {
                    continue;
                }
                if p.iface == from && dropped(p) {
                    assert_eq!(p.comments, vec!["dropped: loss"]);
                    lost += 1;
                } else if p.iface == from {
                    arrived.insert((id, seq), p.ts_ns);
                } else if p.iface == to {
                    left.insert((id, seq), p.ts_ns);
                }
            }
            assert!(!arrived.is_empty(), "no echo of type {kind} captured");
            assert_eq!(
                arrived.len(),
                left.len() + lost,
                "type {kind}: in = out + drops"
            );
            for (k, t_out) in &left {
                let t_in = arrived.get(k).expect("every departure arrived");
                delays.push((*t_out as f64 - *t_in as f64) / 1e6);
            }
            lines.push(format!(
                "type {kind}: {} in, {} out, {lost} dropped",
                arrived.len(),
                left.len()
            ));
        }
        let _ = std::fs::remove_file(&pcap);
        delays.sort_by(f64::total_cmp);
        let q = |f: f64| delays[((delays.len() - 1) as f64 * f) as usize];
        let (min, p95, max) = (q(0.0), q(0.95), q(1.0));
        let within = delays.iter().filter(|d| (*d - 20.0).abs() <= 0.2).count();
        let summary = format!(
            "{}; out − in: min {min:.3} ms, p95 {p95:.3} ms, max {max:.3} ms; {within}/{} within 20 ms ± 0.2 ms",
            lines.join("; "),
            delays.len()
        );
        eprintln!("{summary}");
        // Never early (the delay is exact; the clock is one), and 95% of
        // the echoes within 0.2 ms: a departure later than that is the
        // runner's lateness on a loaded, shared machine (its meter in the
        // report says so), which the capture shows as it was.
        let slack = common::steal_slack();
        if min >= 19.99 && p95 <= 20.2 + slack.p99_ms {
            Ok(())
        } else {
            Err(format!("{summary} (slack for steal {slack:?})"))
        }
    });
    if let Err(e) = r {
        panic!("{e}");
    }
}
