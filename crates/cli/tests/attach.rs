//! `pipelab attach` with real traffic: an interface shaped in place on
//! the host, in a router namespace (forwarded traffic) and in a process's
//! namespace (`--netns PID`, as a container's), restored exactly on exit
//! and, after `kill -9`, by the next pipelab command; and its refusals.
//!
//! Each test builds its own veths and namespaces (`pl-at*`, `plat*`, in
//! 198.19.0.0/16, the benchmarking range) and removes them on drop.
//! Round-trip times are ping's user-to-user times (`-U`): the kernel
//! stamps a reply as it arrives, before the prerouting hook holds it.

mod common;

use common::{check_accounting, in_one_of_three, live, Bg, BIN};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Run a shell script; panics with it if it fails.
fn sh(script: &str) {
    let st = Command::new("sh")
        .args(["-c", script])
        .status()
        .expect("sh");
    assert!(st.success(), "failed: {script}");
}

/// Run a shell script, ignoring failures (teardown).
fn sh_quiet(script: &str) {
    let _ = Command::new("sh")
        .args(["-c", &format!("{{ {script}; }} >/dev/null 2>&1; true")])
        .status();
}

/// stdout of `sh -c script`.
fn output(script: &str) -> String {
    let o = Command::new("sh")
        .args(["-c", script])
        .stderr(Stdio::null())
        .output()
        .expect("sh");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What must be the same before and after: the link (`ip -d link`), its
/// qdiscs (`tc`), its offloads (`ethtool -k`, if installed) and the
/// namespace's whole nftables ruleset (`nft list ruleset`; only in a
/// namespace of the test's own, the host's being shared with whatever
/// else runs here). `prefix` runs the tools in a namespace.
fn snapshot(prefix: &str, dev: &str, ruleset: bool) -> Vec<(String, String)> {
    let mut v = vec![
        (
            "ip -d link".to_string(),
            output(&format!("{prefix} ip -d link show {dev}")),
        ),
        (
            "tc qdisc".to_string(),
            output(&format!("{prefix} tc qdisc show dev {dev}")),
        ),
    ];
    if Command::new("ethtool").arg("--version").output().is_ok() {
        v.push((
            "ethtool -k".to_string(),
            output(&format!("{prefix} ethtool -k {dev}")),
        ));
    }
    if ruleset {
        v.push((
            "nft list ruleset".to_string(),
            output(&format!("{prefix} nft list ruleset")),
        ));
    }
    for (what, text) in &v[..2] {
        assert!(!text.trim().is_empty(), "{what} of {dev} printed nothing");
    }
    v
}

/// No rules of any attach are left (either form) where `prefix` runs.
fn no_attach_rules(prefix: &str) {
    let nft = output(&format!("{prefix} nft list ruleset"));
    assert!(!nft.contains("pipelab_at_"), "left behind:\n{nft}");
}

/// Ping results: counts and the round-trip times in ms (min, median).
#[derive(Debug)]
struct Ping {
    sent: u32,
    received: u32,
    min: f64,
    median: f64,
}

/// `ping -U` (after `prefix`: `ip netns exec NS`), at real-time priority
/// as the emulator's thread: on a loaded machine the scheduler would
/// otherwise add milliseconds to user-to-user times.
fn ping(prefix: &str, to: &str, count: u32) -> Ping {
    let text = output(&format!(
        "{prefix} chrt -f 5 ping -U -n -W 1 -c {count} -i 0.05 {to}"
    ));
    let mut p = Ping {
        sent: 0,
        received: 0,
        min: f64::NAN,
        median: f64::NAN,
    };
    let mut rtts: Vec<f64> = Vec::new();
    for line in text.lines() {
        if line.contains("packets transmitted") {
            let nums: Vec<u32> = line
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|w| w.parse().ok())
                .collect();
            p.sent = nums.first().copied().unwrap_or(0);
            p.received = nums.get(1).copied().unwrap_or(0);
        }
        if let Some(t) = line
            .split("time=")
            .nth(1)
            .and_then(|v| v.split_whitespace().next())
            .and_then(|t| t.parse().ok())
        {
            rtts.push(t);
        }
    }
    rtts.sort_by(f64::total_cmp);
    if let Some(&m) = rtts.first() {
        p.min = m;
        p.median = rtts[rtts.len() / 2];
    }
    p
}

/// The minimum RTT of `p` is `want` ms to +0.5 ms (every packet back).
fn rtt_within(p: &Ping, count: u32, want: f64) -> Result<(), String> {
    eprintln!("want {want} ms: {p:?}");
    if p.received != count || p.sent != count {
        return Err(format!("lost pings: {p:?}"));
    }
    if !(p.min >= want && p.min <= want + 0.5) {
        return Err(format!(
            "min RTT {} ms, want {want}..{} ms: {p:?}",
            p.min,
            want + 0.5
        ));
    }
    Ok(())
}

/// `pipelab attach ARGS` in the background, once its rules are in (its
/// line on stderr, returned); the rest of its stderr is echoed.
fn start(args: &[&str], env: &[(&str, &str)]) -> (Bg, String) {
    let mut cmd = Command::new(BIN);
    cmd.arg("attach").args(args).stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("run pipelab attach");
    let stderr = child.stderr.take().expect("stderr");
    let bg = Bg(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("attach: {line}");
            let _ = tx.send(line);
        }
    });
    loop {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(line) if line.starts_with("pipelab attach: ") => return (bg, line),
            Ok(_) => {}
            Err(e) => panic!("pipelab attach {args:?} did not start: {e}"),
        }
    }
}

/// The `--stats` report.
fn report(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("stats file");
    serde_json::from_str(&text).expect("stats JSON")
}

/// Packets counted by rule `n` in a report (0 if it is not there).
fn rule_packets(v: &Value, n: u64) -> u64 {
    v["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r[0].as_u64() == Some(n))
        .and_then(|r| r[1].as_u64())
        .unwrap_or(0)
}

/// Network namespaces and links of a test, removed on drop (and before,
/// if a crashed run left them).
struct Bed {
    teardown: String,
}

impl Bed {
    fn new(setup: &str, teardown: &str) -> Bed {
        sh_quiet(teardown);
        let bed = Bed {
            teardown: teardown.to_string(),
        };
        sh(&format!("set -e\n{setup}"));
        bed
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        sh_quiet(&self.teardown);
    }
}

/// A namespace `ns` whose `eth0` (`{net}.2/24`) is the peer of `dev`
/// (`{net}.1/24`) in the namespace `prefix` runs in (the host's if
/// empty).
fn veth_to(prefix: &str, dev: &str, ns: &str, net: &str) -> String {
    format!(
        "ip netns add {ns}\nip -n {ns} link set lo up\n\
         {prefix} ip link add {dev} type veth peer name eth0 netns {ns}\n\
         {prefix} ip addr add {net}.1/24 dev {dev}\n{prefix} ip link set {dev} up\n\
         ip -n {ns} addr add {net}.2/24 dev eth0\nip -n {ns} link set eth0 up\n"
    )
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn attach_on_a_host_veth_delays_both_ways_or_egress_only_and_leaves_it_as_it_was() {
    let Some(_g) = live() else { return };
    let id = std::process::id() % 100_000;
    let (dev, ns) = (format!("plath{id}"), format!("pl-atH{id}"));
    let _bed = Bed::new(
        &veth_to("", &dev, &ns, "198.19.71"),
        &format!("ip netns del {ns}; ip link del {dev}"),
    );
    let peer = "198.19.71.2";
    // The neighbour resolved before anything is measured.
    ping("", peer, 2);
    let before = snapshot("", &dev, false);
    let dir = tempfile::tempdir().expect("tempdir");
    let stats = dir.path().join("attach.json");
    let stats_arg = stats.to_str().expect("utf-8 path");
    const N: u32 = 30;

    // Both directions: the request waits 10 ms leaving by the veth, the
    // reply 10 ms arriving on it.
    in_one_of_three(|| {
        let (bg, line) = start(
            &["--both", &dev, "--stats", stats_arg, "--", "delay", "10ms"],
            &[],
        );
        assert!(
            line.contains(&format!("egress and ingress of {dev} shaped"))
                && line.contains("pipelab --target attach-"),
            "{line}"
        );
        let p = ping("", peer, N);
        assert!(bg.stop().success(), "attach exits 0 on SIGTERM");
        let v = report(&stats);
        check_accounting(&v);
        assert!(rule_packets(&v, 65000) >= N as u64, "egress rule: {v}");
        assert!(rule_packets(&v, 65010) >= N as u64, "ingress rule: {v}");
        assert_eq!(v["verdicts"]["held"], 0, "{v}");
        rtt_within(&p, N, 20.0)
    })
    .unwrap_or_else(|e| panic!("--both delay 10ms: {e}"));

    // Egress only, the default (as tc's root qdisc): one delay per round
    // trip, and no ingress pipe or rule at all.
    in_one_of_three(|| {
        let (bg, line) = start(&[&dev, "--stats", stats_arg, "--", "delay", "10ms"], &[]);
        assert!(
            line.contains(&format!(": egress of {dev} shaped")),
            "{line}"
        );
        let p = ping("", peer, N);
        assert!(bg.stop().success());
        let v = report(&stats);
        check_accounting(&v);
        assert!(rule_packets(&v, 65000) >= N as u64, "{v}");
        assert_eq!(rule_packets(&v, 65010), 0, "{v}");
        assert_eq!(v["pipes"].as_array().map(Vec::len), Some(1), "{v}");
        rtt_within(&p, N, 10.0)
    })
    .unwrap_or_else(|e| panic!("egress delay 10ms: {e}"));

    // Nothing on the interface changed, and nothing is left.
    assert_eq!(before, snapshot("", &dev, false));
    no_attach_rules("");
    let p = ping("", peer, 5);
    assert!(p.received == 5 && p.median < 5.0, "unshaped again: {p:?}");
}

/// `pipelab attach` records as host mode does (issue: every live mode's
/// captures and series). A pass proves, after 20 pings through `--both
/// ... delay 10ms`: tcpdump reads the capture, whose interfaces are the
/// hooks' directions, with each echo in and out once per direction; the
/// report's series add up to its pipes' counters exactly, the CSV has
/// the same rows, and the ICMP flows have rows of their own.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn attach_records_a_capture_and_series() {
    let Some(_g) = live() else { return };
    let id = std::process::id() % 100_000;
    let (dev, ns) = (format!("platR{id}"), format!("pl-atR{id}"));
    let _bed = Bed::new(
        &veth_to("", &dev, &ns, "198.19.74"),
        &format!("ip netns del {ns}; ip link del {dev}"),
    );
    let peer = "198.19.74.2";
    ping("", peer, 2);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = |f: &str| dir.path().join(f).to_str().expect("utf-8").to_string();
    let (stats, pcap, csv) = (path("a.json"), path("a.pcapng"), path("a.csv"));
    let (bg, _) = start(
        &[
            "--both",
            &dev,
            "--stats",
            &stats,
            "--pcap",
            &pcap,
            "--interval",
            "100ms",
            "--series",
            &csv,
            "--",
            "delay",
            "10ms",
        ],
        &[],
    );
    const N: u32 = 20;
    let p = ping("", peer, N);
    assert_eq!(p.received, N, "{p:?}");
    assert!(bg.stop().success(), "attach exits 0 on SIGTERM");
    let v = report(Path::new(&stats));
    check_accounting(&v);
    assert!(
        v["capture"]["packets"].as_u64().unwrap_or(0) >= 4 * N as u64,
        "{v}"
    );

    // tcpdump reads it: each request leaves (postrouting) and each reply
    // arrives (prerouting), each recorded where it entered and left.
    let text = output(&format!("tcpdump -nn -r {pcap} icmp 2>/dev/null"));
    let count = |what: &str| text.lines().filter(|l| l.contains(what)).count();
    assert!(count("ICMP echo request") >= 2 * N as usize, "{text}");
    assert!(count("ICMP echo reply") >= 2 * N as usize, "{text}");
    let ifaces = output(&format!(
        "tshark -r {pcap} -T fields -e frame.interface_name 2>/dev/null | sort -u"
    ));
    for want in [
        "postrouting in",
        "postrouting out",
        "prerouting in",
        "prerouting out",
    ] {
        assert!(ifaces.lines().any(|l| l.trim() == want), "{want}: {ifaces}");
    }

    // The series add up to the counters, and the CSV holds the same rows.
    let ts = &v["timeseries"];
    let mut rows = 0;
    for pipe in v["pipes"].as_array().expect("pipes") {
        let id = pipe["id"]
            .as_u64()
            .or(pipe["number"].as_u64())
            .expect("pipe id");
        let series = ts["pipes"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["id"].as_u64() == Some(id)))
            .unwrap_or_else(|| panic!("pipe {id} has a series: {ts}"));
        let sum = |k: &str| -> u64 {
            series["timeseries"]
                .as_array()
                .map_or(0, |r| r.iter().filter_map(|r| r[k].as_u64()).sum())
        };
        assert_eq!(
            sum("arrivals"),
            pipe["arrivals"].as_u64().expect("n"),
            "{v}"
        );
        assert_eq!(
            sum("departures"),
            pipe["departures"].as_u64().expect("n"),
            "{v}"
        );
        assert!(sum("arrivals") >= N as u64, "{v}");
        rows += series["timeseries"].as_array().map_or(0, Vec::len);
    }
    let lines = std::fs::read_to_string(&csv).expect("csv").lines().count();
    assert_eq!(lines, rows + 1, "the CSV's rows and its header");
    let flows: Vec<&str> = ts["flows"]
        .as_array()
        .map(|f| f.iter().filter_map(|f| f["name"].as_str()).collect())
        .unwrap_or_default();
    // The echoes' two flows (the interface's own IPv6 neighbour and
    // listener reports cross it too, as flows of their own).
    for want in [
        "icmp 198.19.74.1 > 198.19.74.2",
        "icmp 198.19.74.2 > 198.19.74.1",
    ] {
        assert!(flows.contains(&want), "{want}: {flows:?}");
    }
    no_attach_rules("");
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN); run as root or with PIPELAB_LIVE=1"
)]
fn attach_in_a_router_namespace_delays_forwarded_traffic() {
    let Some(_g) = live() else { return };
    let id = std::process::id() % 100_000;
    let [a, r, b] = ["A", "R", "B"].map(|n| format!("pl-at{n}{id}"));
    let setup = format!(
        "for n in {a} {r} {b}; do ip netns add $n; ip -n $n link set lo up; done\n\
         ip -n {a} link add eth0 type veth peer name ra netns {r}\n\
         ip -n {b} link add eth0 type veth peer name rb netns {r}\n\
         ip -n {a} addr add 198.19.72.2/24 dev eth0; ip -n {a} link set eth0 up\n\
         ip -n {a} route add default via 198.19.72.1\n\
         ip -n {b} addr add 198.19.73.2/24 dev eth0; ip -n {b} link set eth0 up\n\
         ip -n {b} route add default via 198.19.73.1\n\
         ip -n {r} addr add 198.19.72.1/24 dev ra; ip -n {r} link set ra up\n\
         ip -n {r} addr add 198.19.73.1/24 dev rb; ip -n {r} link set rb up\n\
         ip netns exec {r} sysctl -qw net.ipv4.ip_forward=1\n"
    );
    let _bed = Bed::new(
        &setup,
        &format!("ip netns del {a}; ip netns del {r}; ip netns del {b}"),
    );
    let from_a = format!("ip netns exec {a}");
    let in_r = format!("ip netns exec {r}");
    ping(&from_a, "198.19.73.2", 2);
    let before = snapshot(&in_r, "rb", true);
    let dir = tempfile::tempdir().expect("tempdir");
    let stats = dir.path().join("attach.json");
    const N: u32 = 30;
    // R's interface toward B, both ways: A's request is delayed leaving
    // R by rb, B's reply arriving on it. Neither is R's own traffic.
    in_one_of_three(|| {
        let (bg, line) = start(
            &[
                "--netns",
                &r,
                "--both",
                "rb",
                "--stats",
                stats.to_str().expect("utf-8"),
                "--",
                "delay",
                "10ms",
            ],
            &[],
        );
        assert!(
            line.contains(&format!(
                "egress and ingress of rb in network namespace '{r}' (/run/netns/{r}) shaped"
            )),
            "{line}"
        );
        let p = ping(&from_a, "198.19.73.2", N);
        assert!(bg.stop().success());
        let v = report(&stats);
        check_accounting(&v);
        assert!(rule_packets(&v, 65000) >= N as u64, "{v}");
        assert!(rule_packets(&v, 65010) >= N as u64, "{v}");
        rtt_within(&p, N, 20.0)
    })
    .unwrap_or_else(|e| panic!("forwarded through R: {e}"));
    assert_eq!(before, snapshot(&in_r, "rb", true));
    no_attach_rules(&in_r);
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN); run as root or with PIPELAB_LIVE=1"
)]
fn after_kill_9_the_interface_is_released_at_once_and_the_next_command_settles_the_record() {
    let Some(_g) = live() else { return };
    let id = std::process::id() % 100_000;
    let (h, p) = (format!("pl-atK{id}"), format!("pl-atP{id}"));
    let dev = format!("plk{id}");
    let setup = format!(
        "ip netns add {h}\nip -n {h} link set lo up\n{}",
        veth_to(&format!("ip netns exec {h}"), &dev, &p, "198.19.74")
    );
    let _bed = Bed::new(&setup, &format!("ip netns del {h}; ip netns del {p}"));
    let in_h = format!("ip netns exec {h}");
    ping(&in_h, "198.19.74.2", 2);
    let before = snapshot(&in_h, &dev, true);
    // A ledger of the test's own: no other pipelab process on this
    // machine recovers the record first.
    let ledger = tempfile::tempdir().expect("tempdir");
    let env = [("PIPELAB_LEDGER_DIR", ledger.path().to_str().expect("utf-8"))];
    let (mut bg, line) = start(&["--netns", &h, "--both", &dev, "--", "delay", "5ms"], &env);
    assert!(line.contains("owned by this process"), "{line}");
    let pid = bg.0.id();
    let shaped = ping(&in_h, "198.19.74.2", 5);
    assert!(shaped.received == 5 && shaped.min >= 10.0, "{shaped:?}");
    bg.0.kill().expect("kill -9");
    let _ = bg.0.wait();
    // The fail-closed rules went with the process (their table was
    // owned by its socket): nothing is held, the interface is as it was.
    assert_eq!(
        before,
        snapshot(&in_h, &dev, true),
        "the rules went with it"
    );
    no_attach_rules(&in_h);
    let free = ping(&in_h, "198.19.74.2", 3);
    assert!(
        free.received == 3 && free.median < 5.0,
        "after attach (pid {pid}) was killed: {free:?}"
    );
    // The next pipelab command (any that changes the host; here another
    // attach, on the same interface) settles the dead one's record: no
    // rules left to remove.
    let o = Command::new(BIN)
        .args(["attach", "--netns", &h, &dev, "--duration", "1s"])
        .args(["--", "delay", "1ms"])
        .envs(env)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("attach rules"), "{err}");
    assert_eq!(before, snapshot(&in_h, &dev, true));
    let left: Vec<_> = std::fs::read_dir(ledger.path())
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "ledger records left: {left:?}");
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN); run as root or with PIPELAB_LIVE=1"
)]
fn attach_netns_pid_shapes_a_process_namespace_as_a_containers() {
    let Some(_g) = live() else { return };
    let id = std::process::id() % 100_000;
    // A plain `unshare -n` process stands in for a container.
    let container = Bg(Command::new("unshare")
        .args(["-n", "sleep", "120"])
        .spawn()
        .expect("unshare"));
    let pid = container.0.id();
    let target = format!("/proc/{pid}/ns/net");
    for _ in 0..100 {
        if std::fs::read_link(&target).ok() != std::fs::read_link("/proc/self/ns/net").ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let dev = format!("plap{id}");
    let _bed = Bed::new(
        &format!(
            "ip link add {dev} type veth peer name eth0 netns {pid}\n\
             ip addr add 198.19.75.1/24 dev {dev}; ip link set {dev} up\n\
             nsenter -t {pid} -n sh -c 'ip link set lo up; ip addr add 198.19.75.2/24 dev eth0; ip link set eth0 up'"
        ),
        &format!("ip link del {dev}"),
    );
    let inside = format!("nsenter -t {pid} -n");
    ping("", "198.19.75.2", 2);
    let before = snapshot(&inside, "eth0", true);
    const N: u32 = 30;
    in_one_of_three(|| {
        let (bg, line) = start(
            &[
                "--netns",
                &pid.to_string(),
                "--both",
                "eth0",
                "--",
                "delay",
                "10ms",
            ],
            &[],
        );
        assert!(
            line.contains(&format!(
                "of eth0 in network namespace '{pid}' ({target}) shaped"
            )),
            "{line}"
        );
        let p = ping("", "198.19.75.2", N);
        // Registered: listed, and changed while it runs. The new
        // configuration is compiled on the control server's thread,
        // which must be in the namespace too: `xmit eth0` is the
        // namespace's eth0, not the host's.
        let name = format!("attach-{}", bg.0.id());
        let (code, out, err) = common::run(&["list"]);
        assert!(
            code == 0 && out.contains(&name) && out.contains("attach"),
            "{out}{err}"
        );
        let (code, _, err) =
            common::run(&["--target", &name, "pipe", "1", "config", "delay", "20ms"]);
        assert_eq!(code, 0, "{err}");
        let (_, shown, _) = common::run(&["--target", &name, "show"]);
        assert!(
            shown.contains("65000 pipe 1 ip from any to any out xmit eth0"),
            "{shown}"
        );
        let q = ping("", "198.19.75.2", N);
        assert!(bg.stop().success());
        rtt_within(&p, N, 20.0)?;
        rtt_within(&q, N, 30.0)
    })
    .unwrap_or_else(|e| panic!("--netns {pid}: {e}"));
    assert_eq!(before, snapshot(&inside, "eth0", true));
    no_attach_rules(&inside);
    drop(container);
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn bad_input_is_refused_with_exit_2_naming_it_and_nothing_is_left() {
    let Some(_g) = live() else { return };
    let ledger = tempfile::tempdir().expect("tempdir");
    let env = ("PIPELAB_LEDGER_DIR", ledger.path().to_str().expect("utf-8"));
    let run = |args: &[&str]| {
        let o = Command::new(BIN)
            .arg("attach")
            .args(args)
            .env(env.0, env.1)
            .output()
            .expect("run");
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let cases: [(&[&str], &str); 6] = [
        (
            &["plat-nodev", "--", "delay", "1ms"],
            "error: no interface 'plat-nodev' in this host's network namespace\n",
        ),
        (
            &["--netns", "pl-at-nosuch", "eth0", "--", "delay", "1ms"],
            "error: --netns pl-at-nosuch: no such network namespace (/run/netns/pl-at-nosuch: No such file or directory (os error 2))\n",
        ),
        (
            &["--netns", "/proc/self/status", "eth0", "--", "delay", "1ms"],
            "error: --netns /proc/self/status: /proc/self/status is not a network namespace (Invalid argument (os error 22))\n",
        ),
        (
            &["lo", "--", "delay", "fast"],
            "error: pipe parameters: invalid duration 'fast': durations are written like 20ms\n  delay fast\n        ^\n",
        ),
        (
            &["lo"],
            "error: nothing to shape with: give pipe parameters after `--` (e.g. `pipelab attach eth0 -- delay 50ms`) or --config FILE\n",
        ),
        (
            &["a\"b", "--", "delay", "1ms"],
            "error: interface name 'a\"b': at most 15 printable characters, no quote, backslash or slash\n",
        ),
    ];
    for (args, want) in cases {
        let (code, err) = run(args);
        assert_eq!((code, err.as_str()), (2, want), "{args:?}");
    }
    // An unknown device in a namespace names the namespace.
    let id = std::process::id() % 100_000;
    let ns = format!("pl-atE{id}");
    let _bed = Bed::new(&format!("ip netns add {ns}"), &format!("ip netns del {ns}"));
    let (code, err) = run(&["--netns", &ns, "eth9", "--", "delay", "1ms"]);
    assert_eq!(
        (code, err.as_str()),
        (
            2,
            format!("error: no interface 'eth9' in network namespace '{ns}' (/run/netns/{ns})\n")
                .as_str()
        )
    );
    // Without root: exit 1, saying what it needs.
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["--inh-caps=-all", BIN, "attach", "lo", "--", "delay", "1ms"])
        .env(env.0, env.1)
        .output()
        .expect("setpriv");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with(
            "error: pipelab attach needs root, or the capabilities CAP_NET_ADMIN and CAP_NET_RAW"
        ),
        "{err}"
    );
    // Refused before anything was written or installed.
    no_attach_rules("");
    no_attach_rules(&format!("ip netns exec {ns}"));
    let left: Vec<_> = std::fs::read_dir(ledger.path())
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "ledger records: {left:?}");
}
