//! Live tests of GSO super-frames: real TCP (iperf3) through `pipelab
//! shell` with offloads on (TAPs with virtio-net headers, TSO, USO) and
//! off, and through a bridge whose AF_PACKET ports take GRO super-frames.
//! Root needed; CI runs them as root.
//!
//! What a pass proves:
//! * fidelity: the emulated link treats a super-frame as its segments
//!   (loss drawn per segment, the bandwidth charged per segment), so TCP
//!   through a lossy, rate-limited link gets the same loss fraction
//!   (within 3σ) and about the same goodput with offloads on and off;
//! * speed: a fast link is not slowed by segmenting (segments leaving
//!   together are coalesced again);
//! * per-segment accounting through a bridge with GRO left on;
//! * super-frames kept whole cross from one worker to another whole;
//! * nothing left behind: the ports' offload settings (GRO, TSO, GSO,
//!   checksum) are what they were, after a normal exit and after
//!   `kill -9` and `pipelab cleanup`.
//!
//! Bounds hold on a shared 2-vCPU machine (in one of three runs); the tight
//! figures, over more runs, are in BENCHMARKS.md ("GSO super-frames").

use pipelab_io::backends::ethtool::{self, Offload};
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod common;
use common::{check_accounting, free_udp_port, in_one_of_three, live, tmp_path, Bg, TwoHosts, BIN};

/// An `iperf3 -s -1` on `port` (in namespace `ns` if given).
fn iperf3_server(ns: Option<&str>, port: u16) -> Bg {
    let mut c = match ns {
        Some(n) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", n, "iperf3"]);
            c
        }
        None => Command::new("iperf3"),
    };
    let child = c
        .args(["-s", "-1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3 -s (install iperf3)");
    std::thread::sleep(Duration::from_millis(300));
    Bg(child)
}

/// Goodput (Mbit/s, receiver) of an iperf3 JSON report.
fn goodput(out: &str) -> f64 {
    let v: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("iperf3 json: {e}: {out}"));
    v["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap_or_else(|| panic!("no goodput in {out}"))
        / 1e6
}

/// One run of iperf3 TCP for `seconds` through `pipelab shell --offload
/// OFFLOAD --link LINK`: goodput (Mbit/s) and the shell's report.
fn shell_tcp(offload: &str, link: &str, seconds: u32) -> (f64, Value) {
    let port = free_udp_port();
    let _server = iperf3_server(None, port);
    let stats = tmp_path("stats.json");
    let out = Command::new(BIN)
        .args(["shell", "--offload", offload, "--link", link])
        .args(["--stats", &stats, "--", "sh", "-c"])
        .arg(format!(
            "iperf3 -c $PIPELAB_OUTSIDE -p {port} -t {seconds} -J"
        ))
        .stdin(Stdio::null())
        .output()
        .expect("run pipelab shell");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "pipelab shell failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("stats json");
    let _ = std::fs::remove_file(&stats);
    check_accounting(&v);
    (goodput(&stdout), v)
}

fn n(v: &Value, path: &[&str]) -> u64 {
    let mut x = v;
    for k in path {
        x = &x[*k];
    }
    x.as_u64()
        .unwrap_or_else(|| panic!("{} in {v}", path.join(".")))
}

/// Issue "GSO fidelity": iperf3 TCP through `bw 100Mbit/s delay 10ms loss
/// 0.5%` with offloads on and off. With them on, TCP crosses as
/// super-frames cut into segments (none kept whole: a bandwidth and a
/// loss model apply); the fraction of segments lost is the same as with
/// offloads off within 3σ (and within 3σ of 0.5 %); the mean goodput of
/// three alternated runs each is within 20 %. One run's goodput spreads
/// by ±15 % and more on this shared machine under other builds, and a
/// debug build's runner, starved of CPU, is late more often with
/// MTU-sized frames than with super-frames (in one CI run the means
/// were 76.7 and 65.8 Mbit/s, then 79.6 and 74.5); BENCHMARKS.md has
/// the 3 % comparison of release builds over five runs each (86.5 and
/// 86.0 Mbit/s).
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn tcp_through_a_lossy_link_is_the_same_with_and_without_super_frames() {
    let Some(_g) = live() else { return };
    let link = "bw 100Mbit/s delay 10ms loss 0.5%";
    let r = in_one_of_three(|| {
        let mut rate = [0.0f64; 2];
        let mut lost = [0u64; 2];
        let mut seen = [0u64; 2];
        for _ in 0..3 {
            for (k, mode) in ["on", "off"].into_iter().enumerate() {
                let (mbps, v) = shell_tcp(mode, link, 5);
                let s = &v["stats"];
                if mode == "on" {
                    assert!(n(s, &["gso", "superframes"]) > 0, "no super-frame: {s}");
                    assert!(n(s, &["gso", "segments"]) > 0, "none cut: {s}");
                    assert_eq!(n(s, &["gso", "kept_whole"]), 0, "kept whole: {s}");
                } else {
                    assert_eq!(n(s, &["gso", "superframes"]), 0, "offload off: {s}");
                }
                rate[k] += mbps / 3.0;
                lost[k] += n(s, &["dropped_loss"]);
                seen[k] += n(s, &["received"]);
            }
        }
        let p = [0, 1].map(|k| lost[k] as f64 / seen[k] as f64);
        let pooled = (lost[0] + lost[1]) as f64 / (seen[0] + seen[1]) as f64;
        let sigma =
            (pooled * (1.0 - pooled) * (1.0 / seen[0] as f64 + 1.0 / seen[1] as f64)).sqrt();
        let figures = format!(
            "goodput on {:.1} off {:.1} Mbit/s; loss on {:.4} off {:.4} (3σ {:.4})",
            rate[0],
            rate[1],
            p[0],
            p[1],
            3.0 * sigma
        );
        eprintln!("{figures}");
        // Each within 3σ of the model, and of each other.
        for k in 0..2 {
            let s = (0.005 * 0.995 / seen[k] as f64).sqrt();
            if (p[k] - 0.005).abs() > 3.0 * s {
                return Err(format!("loss off the model: {figures}"));
            }
        }
        if (p[0] - p[1]).abs() > 3.0 * sigma {
            return Err(format!("loss fractions differ: {figures}"));
        }
        if (rate[0] - rate[1]).abs() / rate[1] > 0.20 {
            return Err(format!("goodput differs: {figures}"));
        }
        Ok(())
    });
    if let Err(e) = r {
        panic!("{e}");
    }
}

/// Issue "GSO fidelity", the fast link: TCP through `bw 1Gbit/s delay
/// 10ms` with a queue of a bandwidth-delay product (3 MB; ipfw's default
/// 50 slots hold 0.6 ms at 1 Gbit/s, which no TCP fills a 20 ms path
/// through, with or without offloads): with super-frames, goodput is at
/// least what MTU-sized frames give, and at least 0.93 Gbit/s in one of
/// two runs unless the machine is too busy (on the shared CI machine the
/// bound asserted is 0.4 Gbit/s; BENCHMARKS.md has the figure on a quiet
/// one). Segments cut for the link are coalesced again as they leave.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn a_gigabit_link_keeps_its_rate_with_super_frames() {
    let Some(_g) = live() else { return };
    let link = "bw 1Gbit/s delay 10ms queue 3MB";
    let r = in_one_of_three(|| {
        let (on, v) = shell_tcp("on", link, 5);
        let (off, _) = shell_tcp("off", link, 5);
        let s = &v["stats"];
        eprintln!(
            "1 Gbit/s: on {on:.0} Mbit/s, off {off:.0} Mbit/s; gso {}",
            s["gso"]
        );
        assert!(n(s, &["gso", "coalesced"]) > 0, "nothing coalesced: {s}");
        assert!(on <= 1000.0, "faster than the link: {on}");
        if on < 400.0 || on < off * 0.95 {
            return Err(format!("on {on:.0} Mbit/s, off {off:.0} Mbit/s"));
        }
        Ok(())
    });
    if let Err(e) = r {
        panic!("{e}");
    }
}

/// With nothing but a fixed delay, super-frames cross whole: no segment
/// is cut, every super-frame leaves with its GSO header.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn a_fixed_delay_keeps_super_frames_whole() {
    let Some(_g) = live() else { return };
    let (mbps, v) = shell_tcp("on", "delay 1ms", 3);
    let s = &v["stats"];
    assert!(mbps > 100.0, "{mbps} Mbit/s");
    assert!(n(s, &["gso", "superframes"]) > 0, "{s}");
    assert_eq!(n(s, &["gso", "segments"]), 0, "{s}");
    assert_eq!(
        n(s, &["gso", "kept_whole"]),
        n(s, &["gso", "superframes"]),
        "{s}"
    );
    assert!(
        n(s, &["gso", "sent_whole"]) >= n(s, &["gso", "kept_whole"]),
        "{s}"
    );
}

/// The offloads of `ports`: (GRO, TSO, GSO, checksum) each.
fn offloads(ports: &[String]) -> Vec<(String, [bool; 4])> {
    ports
        .iter()
        .map(|p| {
            let get = |o| ethtool::get(p, o).unwrap_or_else(|e| panic!("{p}: {e}"));
            (
                p.clone(),
                [
                    get(Offload::Gro),
                    get(Offload::Tso),
                    get(Offload::Gso),
                    get(Offload::TxChecksum),
                ],
            )
        })
        .collect()
}

/// `pipelab bridge A B -f CONF ARGS` with its own ledger and registry
/// directories (so its records are this test's), once it runs.
fn start_bridge(dir: &std::path::Path, hosts: &TwoHosts, conf: &str, args: &[&str]) -> Child {
    let [a, b] = &hosts.ports;
    let c = Command::new(BIN)
        .args(["bridge", a, b, "-f", conf, "--backend", "af-packet"])
        .args(args)
        .env("PIPELAB_LEDGER_DIR", dir.join("ledger"))
        .env("PIPELAB_RUN_DIR", dir.join("emu"))
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("pipelab bridge");
    std::thread::sleep(Duration::from_millis(800));
    c
}

/// A bridge on AF_PACKET with virtio-net headers, GRO on at both ports
/// (and left on): iperf3 TCP crosses `bw 50Mbit/s delay 5ms queue 100`
/// at 40–50 Mbit/s; the GRO and TSO super-frames the ports hand over are
/// cut, so the rule and the pipe count segments (more packets than the
/// ports received frames), and none is dropped as too large.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn a_bridge_with_gro_on_carries_tcp_segment_by_segment() {
    let Some(_g) = live() else { return };
    let hosts = TwoHosts::new("plgs", "plgs", "10.79.7");
    for p in &hosts.ports {
        ethtool::set(p, Offload::Gro, true).expect("GRO on");
    }
    let before = offloads(&hosts.ports);
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = tmp_path("bridge.conf");
    std::fs::write(
        &conf,
        "pipe 1 config bw 50Mbit/s delay 5ms queue 100\nadd 100 pipe 1 ip from any to any\n",
    )
    .expect("write");
    let r = in_one_of_three(|| {
        let stats = tmp_path("bridge.json");
        let bridge = start_bridge(dir.path(), &hosts, &conf, &["--stats", &stats]);
        assert_eq!(offloads(&hosts.ports), before, "offloads changed");
        let port = free_udp_port();
        let _server = iperf3_server(Some(&hosts.ns[1]), port);
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &hosts.ns[0],
                "iperf3",
                "-c",
                &hosts.addr[1],
            ])
            .args(["-p", &port.to_string(), "-t", "5", "-J"])
            .output()
            .expect("iperf3 -c");
        let mbps = goodput(&String::from_utf8_lossy(&out.stdout));
        Bg(bridge).stop();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats"))
            .expect("stats json");
        let _ = std::fs::remove_file(&stats);
        check_accounting(&v);
        let s = &v["stats"];
        let port = |i: usize, k: &str| v["ports"][i][1][k].as_u64().expect("port counter");
        let rx: u64 = (0..2).map(|i| port(i, "rx_frames")).sum();
        let dropped: u64 = (0..2).map(|i| port(i, "rx_dropped")).sum();
        let rule_pkts = v["rules"][0][1].as_u64().expect("rule 100's packets");
        eprintln!("bridge: {mbps:.1} Mbit/s; rx frames {rx}, rule 100 {rule_pkts}; {s}");
        assert!(n(s, &["gso", "segments"]) > 0, "nothing cut: {s}");
        assert_eq!(dropped, 0, "frames dropped at the ports");
        assert_eq!(rule_pkts, n(s, &["received"]), "the rule counts segments");
        assert!(rule_pkts > rx, "segments {rule_pkts} vs frames {rx}");
        if !(40.0..=50.0).contains(&mbps) {
            return Err(format!("goodput {mbps:.1} Mbit/s"));
        }
        Ok(())
    });
    assert_eq!(offloads(&hosts.ports), before, "offloads after the bridge");
    let _ = std::fs::remove_file(&conf);
    if let Err(e) = r {
        panic!("{e}");
    }
}

/// Super-frames kept whole cross workers: a bridge with two workers (one
/// per port) whose one pipe, a fixed delay, is fed from both ports and so
/// owned by worker 0. TCP from B's side to A's: worker 1 receives the
/// super-frames (GRO on at both ports) and hands them to worker 0 whole
/// (their large buffers move and go home), which sends them whole out
/// of port A; the accounting holds per worker and none is dropped for
/// memory.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn super_frames_kept_whole_cross_workers() {
    let Some(_g) = live() else { return };
    let hosts = TwoHosts::new("plgw", "plgw", "10.79.9");
    for p in &hosts.ports {
        ethtool::set(p, Offload::Gro, true).expect("GRO on");
    }
    let before = offloads(&hosts.ports);
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = tmp_path("whole.conf");
    std::fs::write(
        &conf,
        "pipe 1 config delay 1ms\nadd 100 pipe 1 ip from any to any\n",
    )
    .expect("write");
    let r = in_one_of_three(|| {
        let stats = tmp_path("whole.json");
        let bridge = start_bridge(
            dir.path(),
            &hosts,
            &conf,
            &["--stats", &stats, "--workers", "2"],
        );
        let port = free_udp_port();
        let _server = iperf3_server(Some(&hosts.ns[0]), port);
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &hosts.ns[1],
                "iperf3",
                "-c",
                &hosts.addr[0],
            ])
            .args(["-p", &port.to_string(), "-t", "3", "-J"])
            .output()
            .expect("iperf3 -c");
        let mbps = goodput(&String::from_utf8_lossy(&out.stdout));
        Bg(bridge).stop();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats"))
            .expect("stats json");
        let _ = std::fs::remove_file(&stats);
        check_accounting(&v);
        let s = &v["stats"];
        let w = v["workers"].as_array().expect("workers");
        eprintln!("bridge, 2 workers: {mbps:.1} Mbit/s; {s}");
        assert_eq!(w.len(), 2, "{v}");
        assert_eq!(n(s, &["gso", "segments"]), 0, "{s}");
        assert_eq!(n(s, &["dropped_memory"]), 0, "{s}");
        // Worker 1 received the data's super-frames and handed them over;
        // worker 0 sent them whole.
        assert!(n(&w[1]["stats"], &["gso", "kept_whole"]) > 0, "{v}");
        assert!(n(&w[1]["stats"], &["handoffs_out"]) > 0, "{v}");
        assert!(n(&w[0]["stats"], &["handoffs_in"]) > 0, "{v}");
        assert!(n(&w[0]["stats"], &["gso", "sent_whole"]) > 0, "{v}");
        if mbps < 100.0 {
            return Err(format!("goodput {mbps:.1} Mbit/s"));
        }
        Ok(())
    });
    assert_eq!(offloads(&hosts.ports), before, "offloads after the bridge");
    let _ = std::fs::remove_file(&conf);
    if let Err(e) = r {
        panic!("{e}");
    }
}

/// Nothing left behind: the ports' offloads (GRO, TSO, GSO, checksum) are
/// what they were before a bridge, with offloads on (GRO left alone) and
/// off (GRO turned off for the run), after `kill -9` of the bridge and
/// `pipelab cleanup`.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn offloads_are_as_before_after_kill9_and_cleanup() {
    let Some(_g) = live() else { return };
    let hosts = TwoHosts::new("plgk", "plgk", "10.79.8");
    for p in &hosts.ports {
        ethtool::set(p, Offload::Gro, true).expect("GRO on");
    }
    let before = offloads(&hosts.ports);
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = tmp_path("kill.conf");
    std::fs::write(
        &conf,
        "pipe 1 config delay 1ms\nadd 100 pipe 1 ip from any to any\n",
    )
    .expect("write");
    for mode in ["on", "off"] {
        let mut b = start_bridge(dir.path(), &hosts, &conf, &["--offload", mode]);
        let during = offloads(&hosts.ports);
        if mode == "on" {
            assert_eq!(during, before, "offload on changed the ports");
        } else {
            assert!(
                during.iter().all(|(_, o)| !o[0]),
                "GRO still on: {during:?}"
            );
        }
        let _ = b.kill();
        let _ = b.wait();
        let o = Command::new(BIN)
            .arg("cleanup")
            .env("PIPELAB_LEDGER_DIR", dir.path().join("ledger"))
            .env("PIPELAB_RUN_DIR", dir.path().join("emu"))
            .output()
            .expect("pipelab cleanup");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(
            offloads(&hosts.ports),
            before,
            "offload {mode}: after kill -9 and cleanup"
        );
    }
    let _ = std::fs::remove_file(&conf);
}
