//! Dual-stack live topologies: every VN has an IPv6 address too, steered
//! by destination like IPv4, with no neighbour discovery on the wire.
//! Real namespaces, real `ping -6` and `iperf3 -6`, as root (skipped
//! otherwise, failing in CI).
//!
//! * two VNs on a link of 10 ms and 50 Mbit/s: `ping -6` takes twice the
//!   delay (as `ping` does), `iperf3 -6` gets the link's rate;
//! * an IPv6 destination outside the topology is dropped and counted as
//!   the IPv4 one is, the idle VNs send nothing (no ND, RS or MLD), and
//!   the topology's /64 is held in the ledger while it runs, not after.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

mod common;
use common::{in_one_of_three, live, ping_min_ms, BIN};

fn pl(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run pipelab")
}

fn ok(args: &[&str]) -> String {
    let o = pl(args);
    assert!(
        o.status.success(),
        "pipelab {args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Two VNs, `a` and `b`, on one link of 50 Mbit/s and 10 ms each way.
fn two_vns() -> String {
    let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("two-vns6.gml");
    std::fs::write(
        &p,
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  \
         node [ id 1 role \"client\" name \"b\" ]\n  \
         edge [ source 0 target 1 bandwidth \"50Mbit/s\" delay 10 ]\n]\n",
    )
    .expect("write topology");
    p.display().to_string()
}

/// A running topology, taken down when dropped (also on failure).
struct Up {
    name: String,
}

impl Up {
    fn start(name: &str) -> Up {
        let _ = pl(&["topo", "down", "--name", name]);
        ok(&["topo", "up", &two_vns(), "--name", name]);
        Up { name: name.into() }
    }

    fn exec(&self, vn: &str, cmd: &[&str]) -> Output {
        let mut a = vec!["topo", "exec", "--name", &self.name, vn, "--"];
        a.extend_from_slice(cmd);
        pl(&a)
    }

    /// `topo status --json`: `state` (VNs and addresses) and `status`
    /// (counters).
    fn status(&self) -> Value {
        serde_json::from_str(&ok(&["topo", "status", "--name", &self.name, "--json"]))
            .expect("status json")
    }

    /// VN `k`'s IPv4 and IPv6 addresses, as the status gives them.
    fn addrs(&self, k: usize) -> (String, String) {
        let s = self.status();
        let v = &s["state"]["vns"][k];
        let a = v["addr"].as_str().expect("addr").to_string();
        let a6 = v["addr6"].as_str().expect("a dual-stack VN").to_string();
        (a, a6)
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = pl(&["topo", "down", "--name", &self.name]);
    }
}

/// Ledger records that hold IPv6 subnet `net` (a `/64` network, e.g.
/// `fd12:…:4000::`).
fn ledger_holds(net: &str) -> bool {
    let dir = std::env::var("PIPELAB_LEDGER_DIR").unwrap_or_else(|_| "/run/pipelab/ledger".into());
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten().any(|e| {
                std::fs::read_to_string(e.path())
                    .is_ok_and(|t| t.contains("\"subnet6\"") && t.contains(&format!("\"{net}\"")))
            })
        })
        .unwrap_or(false)
}

/// A pass proves IPv6 between two VNs crosses the emulated link like
/// IPv4: on a link of 10 ms each way, `ping -6`'s minimum RTT is 20 ms
/// (plus the 118-byte frame's 19 µs at 50 Mbit/s each way; [20, 21.5) ms
/// on this loaded machine) and equal to IPv4's within 0.5 ms, and
/// `iperf3 -6` through 50 Mbit/s gets 40 to 51 Mbit/s. The addresses are
/// where `topo status` and `PIPELAB_ADDR6` say, and `topo exec` finds a
/// VN by its IPv6 address.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn ping6_and_iperf3_6_see_the_links_delay_and_rate() {
    let Some(_g) = live() else { return };
    let up = Up::start("tping6");
    let (a4, a6) = up.addrs(0);
    let (b4, b6) = up.addrs(1);
    // VN i is host i + 1 of both prefixes.
    assert!(a4.ends_with(".1") && b4.ends_with(".2"), "{a4} {b4}");
    assert!(a6.ends_with("::1") && b6.ends_with("::2"), "{a6} {b6}");
    assert!(a6.starts_with("fd"), "a ULA: {a6}");
    let env = up.exec("a", &["sh", "-c", "echo $PIPELAB_ADDR6"]);
    assert_eq!(String::from_utf8_lossy(&env.stdout).trim(), a6);
    let by_addr = up.exec(&b6, &["sh", "-c", "echo $PIPELAB_VN"]);
    assert_eq!(String::from_utf8_lossy(&by_addr.stdout).trim(), "b");

    let min_rtt = |family: &str, dst: &str| {
        let o = up.exec("a", &["ping", family, "-c", "30", "-i", "0.05", dst]);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "ping {family} {dst}: {out}");
        ping_min_ms(&out)
    };
    let rtt6 = min_rtt("-6", &b6);
    let rtt4 = min_rtt("-4", &b4);
    eprintln!("min RTT a→b: IPv6 {rtt6:.3} ms, IPv4 {rtt4:.3} ms (link 2 × 10 ms)");
    assert!((20.0..21.5).contains(&rtt6), "IPv6 min RTT {rtt6} ms");
    assert!((rtt6 - rtt4).abs() < 0.5, "IPv6 {rtt6} ms, IPv4 {rtt4} ms");

    let server = up.exec("b", &["iperf3", "-s", "-1", "-D", "-B", &b6]);
    assert!(server.status.success(), "iperf3 server: {server:?}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut first = true;
    in_one_of_three(|| {
        if !std::mem::take(&mut first) {
            let s = up.exec("b", &["iperf3", "-s", "-1", "-D", "-B", &b6]);
            assert!(s.status.success(), "iperf3 server: {s:?}");
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        let o = up.exec(
            "a",
            &["iperf3", "-6", "-c", &b6, "-t", "5", "-O", "1", "-J"],
        );
        let j: Value = serde_json::from_slice(&o.stdout).map_err(|e| format!("iperf3: {e}"))?;
        let remote = j["start"]["connected"][0]["remote_host"]
            .as_str()
            .unwrap_or("");
        assert_eq!(remote, b6, "iperf3 went by IPv6");
        let mbps = j["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .ok_or_else(|| format!("iperf3: no rate in {j}"))?
            / 1e6;
        eprintln!("iperf3 -6 a→b through 50 Mbit/s: {mbps:.2} Mbit/s");
        if (40.0..=51.0).contains(&mbps) {
            Ok(())
        } else {
            Err(format!("{mbps:.2} Mbit/s"))
        }
    })
    .unwrap_or_else(|e| panic!("iperf3 -6 through 50 Mbit/s: {e}"));
}

/// A pass proves an IPv6 destination outside the topology (in its /64
/// past the last VN, or in another network) is dropped and counted as a
/// `dropped_rule` drop exactly as the IPv4 equivalents are: 5 pings, 5
/// frames received, 5 dropped, none delivered, for each; and that idle
/// VNs send no frame at all (no neighbour or router solicitation, no
/// multicast listener report). The topology's /64 is reserved in the
/// ledger while it runs and released by `topo down`.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn ipv6_outside_the_topology_is_dropped_as_ipv4_is() {
    let Some(_g) = live() else { return };
    let up = Up::start("tdrop6");
    let (_, a6) = up.addrs(0);
    let prefix6 = up.status()["state"]["prefix6"]
        .as_str()
        .expect("prefix6")
        .to_string();
    let net6 = prefix6.strip_suffix("/64").expect("a /64").to_string();
    assert!(a6.starts_with(&net6), "{a6} in {prefix6}");
    assert!(ledger_holds(&net6), "{prefix6} is not in the ledger");

    let counts = || {
        let s = up.status()["status"]["stats"].clone();
        let n = |k: &str| s[k].as_u64().expect("counter");
        (n("received"), n("dropped_rule"), n("delivered"))
    };
    // Idle: the VNs' kernels send nothing (their addresses came up long
    // enough ago for any report or solicitation to have left).
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(counts(), (0, 0, 0), "frames from idle VNs");

    let outside6 = format!("{net6}9");
    for (family, dst) in [
        ("-6", outside6.as_str()),
        ("-6", "fd00:0:0:1::1"),
        ("-4", "10.0.0.9"),
        ("-4", "192.0.2.1"),
    ] {
        let before = counts();
        let o = up.exec(
            "a",
            &["ping", family, "-c", "5", "-i", "0.2", "-W", "0.5", dst],
        );
        assert!(!o.status.success(), "ping {dst} was answered");
        // Departures are counted as they happen; drops at once.
        let after = counts();
        assert_eq!(
            (after.0 - before.0, after.1 - before.1, after.2 - before.2),
            (5, 5, 0),
            "ping {family} {dst}: (received, dropped_rule, delivered)"
        );
    }
    ok(&["topo", "down", "--name", "tdrop6"]);
    assert!(!ledger_holds(&net6), "{prefix6} still held after down");
}
