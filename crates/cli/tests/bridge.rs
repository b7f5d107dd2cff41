//! Live tests of `pipelab bridge`: two namespaces joined by two veth pairs,
//! with pipelab bridging the host ends, built with iproute2 as a user
//! would. Real probe traffic and raw non-IP frames cross it. Root needed;
//! CI runs them as root.

use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::{check_accounting, live, ping_avg_ms, Bg, BIN};

fn sh(cmd: &str) {
    let st = Command::new("sh").args(["-c", cmd]).status().expect("sh");
    assert!(st.success(), "failed: {cmd}");
}

/// Two namespaces, A (10.77.0.1) and B (10.77.0.2), each with an `eth0`
/// whose peer (`pba<id>`, `pbb<id>`) is in the host. Removed on drop.
struct Testbed {
    id: u32,
}

impl Testbed {
    fn new() -> Testbed {
        let id = std::process::id() % 100_000;
        let t = Testbed { id };
        t.teardown();
        sh(&format!(
            "set -e
             ip netns add plA{id}; ip netns add plB{id}
             ip link add pba{id} type veth peer name eth0 netns plA{id}
             ip link add pbb{id} type veth peer name eth0 netns plB{id}
             ip -n plA{id} addr add 10.77.0.1/24 dev eth0; ip -n plA{id} link set eth0 up; ip -n plA{id} link set lo up
             ip -n plB{id} addr add 10.77.0.2/24 dev eth0; ip -n plB{id} link set eth0 up; ip -n plB{id} link set lo up
             ip link set pba{id} up; ip link set pbb{id} up"
        ));
        t
    }

    fn ns(&self, which: char) -> String {
        format!("pl{which}{}", self.id)
    }

    fn bridge(&self, config: &str, stats: &str) -> Bg {
        let conf = format!(
            "{}/pipelab-bridge-{}.conf",
            std::env::temp_dir().display(),
            self.id
        );
        std::fs::write(&conf, config).expect("write config");
        let c = Command::new(BIN)
            .args([
                "bridge",
                &format!("pba{}", self.id),
                &format!("pbb{}", self.id),
                "-f",
                &conf,
                "--stats",
                stats,
            ])
            .stderr(Stdio::inherit())
            .spawn()
            .expect("pipelab bridge");
        std::thread::sleep(Duration::from_millis(800));
        Bg(c)
    }

    fn teardown(&self) {
        let id = self.id;
        let _ = Command::new("sh")
            .args(["-c", &format!("ip netns del plA{id} 2>/dev/null; ip netns del plB{id} 2>/dev/null; ip link del pba{id} 2>/dev/null; ip link del pbb{id} 2>/dev/null; true")])
            .status();
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        self.teardown();
    }
}

fn stats_path(tag: &str) -> String {
    format!(
        "{}/pipelab-bridge-{}-{tag}.json",
        std::env::temp_dir().display(),
        std::process::id()
    )
}

fn read_stats(path: &str) -> Value {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("stats")).expect("json");
    check_accounting(&v);
    v
}

fn guard() -> Option<std::sync::MutexGuard<'static, ()>> {
    live()
}

/// Probe through a bridge with `delay 10ms`: one-way delay mean 10 ms
/// ± 0.2 ms and p99 within +1 ms, at 1 kpps and 10 kpps.
#[test]
fn probe_through_bridge_sees_the_delay() {
    let Some(_g) = guard() else { return };
    let tb = Testbed::new();
    let stats = stats_path("probe");
    let br = tb.bridge(
        "pipe 1 config delay 10ms\nadd 100 pipe 1 ip from any to any\n",
        &stats,
    );
    // Resolve ARP across the bridge before measuring.
    sh(&format!(
        "ip netns exec {} ping -c 2 -i 0.2 -q 10.77.0.2 >/dev/null",
        tb.ns('A')
    ));
    for rate in ["1000pps", "10kpps"] {
        let rx = Command::new("ip")
            .args([
                "netns",
                "exec",
                &tb.ns('B'),
                BIN,
                "probe",
                "recv",
                "--listen",
                "10.77.0.2:7788",
                "--once",
            ])
            .stderr(Stdio::null())
            .spawn()
            .expect("probe recv");
        let _rx = Bg(rx);
        std::thread::sleep(Duration::from_millis(300));
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &tb.ns('A'),
                BIN,
                "probe",
                "send",
                "10.77.0.2:7788",
                "--rate",
                rate,
                "--duration",
                "3s",
                "--json",
            ])
            .output()
            .expect("probe send");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: Value = serde_json::from_slice(&out.stdout).expect("report");
        let mean = r["delay_ms"]["mean"].as_f64().expect("mean");
        let p99 = r["delay_ms"]["p99"].as_f64().expect("p99");
        assert!((mean - 10.0).abs() <= 0.2, "{rate}: mean {mean}");
        assert!(p99 <= 11.0, "{rate}: p99 {p99}");
        assert_eq!(r["lost"].as_u64(), Some(0), "{rate}: {r}");
    }
    assert!(br.stop().success());
    let v = read_stats(&stats);
    assert!(v["stats"]["delivered"].as_u64().unwrap_or(0) >= 33_000);
    let _ = std::fs::remove_file(&stats);
}

/// A non-IP frame (ethertype 0x88b5) crosses the bridge with the
/// configured delay (raw AF_PACKET sockets on both sides, one clock).
#[test]
fn non_ip_frames_cross_with_the_delay() {
    let Some(_g) = guard() else { return };
    let tb = Testbed::new();
    let stats = stats_path("l2");
    let br = tb.bridge(
        "pipe 1 config delay 15ms\nadd 100 pipe 1 ip from any to any\n",
        &stats,
    );
    let recv = String::from(
        "import socket,time,struct\n\
         s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW,socket.htons(0x88b5))\n\
         s.bind(('eth0',0)); s.settimeout(5)\n\
         d=[]\n\
         while len(d)<20:\n\
         \x20   f=s.recv(2000); t=time.monotonic_ns()\n\
         \x20   if f[12:14]==b'\\x88\\xb5': d.append(t-struct.unpack('!Q',f[14:22])[0])\n\
         print(min(d)/1e6, max(d)/1e6)\n",
    );
    let send = "import socket,time,struct\n\
         s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW)\n\
         s.bind(('eth0',0))\n\
         for i in range(20):\n\
         \x20   s.send(b'\\xff'*6+b'\\x02\\x00\\x00\\x00\\x00\\x01'+b'\\x88\\xb5'+struct.pack('!Q',time.monotonic_ns())+b'x'*50); time.sleep(0.02)\n";
    let rx = Command::new("ip")
        .args(["netns", "exec", &tb.ns('B'), "python3", "-c", &recv])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 receiver");
    std::thread::sleep(Duration::from_millis(300));
    let st = Command::new("ip")
        .args(["netns", "exec", &tb.ns('A'), "python3", "-c", send])
        .status()
        .expect("python3 sender");
    assert!(st.success());
    let out = rx.wait_with_output().expect("receiver");
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = text
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    assert_eq!(v.len(), 2, "receiver said: {text}");
    assert!(v[0] >= 15.0 && v[1] <= 16.0, "non-IP delays {v:?} ms");
    assert!(br.stop().success());
    read_stats(&stats);
    let _ = std::fs::remove_file(&stats);
}

/// Faults: a port set down and up, while packets are queued in a 50 ms
/// pipe, never stops the bridge; forwarding resumes at once when the port
/// is back, and frames that could not be sent are counted (`dropped_tx`).
#[test]
fn port_down_and_up_is_survived_and_counted() {
    let Some(_g) = guard() else { return };
    let tb = Testbed::new();
    let stats = stats_path("fault");
    let br = tb.bridge(
        "pipe 1 config delay 50ms\nadd 100 pipe 1 ip from any to any\n",
        &stats,
    );
    sh(&format!(
        "ip netns exec {} ping -c 2 -i 0.2 -q 10.77.0.2 >/dev/null",
        tb.ns('A')
    ));
    // Traffic in flight, then the far port goes down for 300 ms.
    let mut flood = Command::new("ip")
        .args([
            "netns",
            "exec",
            &tb.ns('A'),
            "ping",
            "-i",
            "0.002",
            "-c",
            "300",
            "-q",
            "10.77.0.2",
        ])
        .stdout(Stdio::null())
        .spawn()
        .expect("ping");
    std::thread::sleep(Duration::from_millis(200));
    sh(&format!("ip link set pbb{} down", tb.id));
    std::thread::sleep(Duration::from_millis(300));
    sh(&format!("ip link set pbb{} up", tb.id));
    let _ = flood.wait();
    // Forwarding works again.
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &tb.ns('A'),
            "ping",
            "-c",
            "5",
            "-i",
            "0.05",
            "-q",
            "10.77.0.2",
        ])
        .output()
        .expect("ping");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(" 5 received"),
        "after the port came back: {text}"
    );
    assert!(
        br.stop().success(),
        "the bridge must survive and exit cleanly"
    );
    let v = read_stats(&stats);
    let tx = v["stats"]["dropped_tx"].as_u64().unwrap_or(0);
    assert!(
        tx > 0,
        "frames sent to a down port are counted: {}",
        v["stats"]
    );
    let _ = std::fs::remove_file(&stats);
}

/// Rules see the ports: `recv A` delays only frames that came in on A, so
/// a ping's RTT carries the delay once (A→B), not twice.
#[test]
fn rules_see_the_receiving_port() {
    let Some(_g) = guard() else { return };
    let tb = Testbed::new();
    let stats = stats_path("recv");
    let conf = format!(
        "pipe 1 config delay 20ms\nadd 100 pipe 1 ip from any to any recv pba{}\n",
        tb.id
    );
    let br = tb.bridge(&conf, &stats);
    sh(&format!(
        "ip netns exec {} ping -c 2 -i 0.2 -q 10.77.0.2 >/dev/null",
        tb.ns('A')
    ));
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &tb.ns('A'),
            "ping",
            "-c",
            "10",
            "-i",
            "0.05",
            "-q",
            "10.77.0.2",
        ])
        .output()
        .expect("ping");
    let text = String::from_utf8_lossy(&out.stdout);
    let avg = ping_avg_ms(&text);
    assert!(
        (20.0..21.0).contains(&avg),
        "RTT {avg} ms: the delay applies once"
    );
    assert!(br.stop().success());
    let v = read_stats(&stats);
    let rules = v["rules"].as_array().expect("rules");
    assert!(rules
        .iter()
        .any(|r| r[0] == 100 && r[1].as_u64().unwrap_or(0) >= 12));
    let _ = std::fs::remove_file(&stats);
}
