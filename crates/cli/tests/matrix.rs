//! The language × mode matrix: one configuration, run by `pipelab sim` in
//! virtual time and live by `pipelab shell --config`, `pipelab bridge -f`
//! a two-VN topology (`pipelab topo up --config`) and host mode
//! (`pipelabd`, this host's own traffic to a namespace), with real probe
//! traffic. Each cell of README's table "Every mode runs the whole
//! language" is an assertion here:
//!
//! | feature | what is checked in every mode |
//! |---|---|
//! | scheduler + flow queues | two queues weighted 3:1 under `wf2q+` on a 4 Mbit/s pipe share it 3:1 (sim: within 0.2 %; live: within 2 %) |
//! | mask | the masked queue made one instance per masked key (two flows to two ports: 2) |
//! | AQM on a flow queue | CoDel on queue 10 drops there (`aqm_drops` > 0, no tail drop), queue 11 tail-drops |
//! | `prob` rule | its counter is the same number in every mode (its draws depend on its own stream only) |
//! | table | a rule matching `table(1)` counts exactly the data packets sent |
//! | `one_pass 0` | a flow sent to pipe 2 (10 ms) re-enters the rules and crosses pipe 3 (5 ms): 15 ms (sim exact; live mean ± 0.5 ms) |

use serde_json::Value;
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::{live, Bg, TwoHosts, BIN};

/// The configuration every mode runs.
const CONF: &str = "\
# Two flow queues 3:1 under WF2Q+ on a 4 Mbit/s pipe, CoDel on one of
# them, a mask on the other; a prob rule; a table; reinjection.
pipe 1 config bw 4Mbit/s queue 100
sched 1 config type wf2q+
queue 10 config weight 3 sched 1 queue 1000 codel target 5ms interval 100ms
queue 11 config weight 1 sched 1 queue 10 mask dst-port 0xffff
pipe 2 config delay 10ms
pipe 3 config delay 5ms
table 1 add 10.0.0.0/8
table 1 add 100.64.0.0/10
add 100 prob 0.5 count udp from any to table(1) 5001-5002 iplen 500
add 150 count udp from any to table(1) 5001-5003 iplen 100,500
add 200 queue 10 udp from any to table(1) 5001
add 300 queue 11 udp from any to table(1) 5002,5004
add 400 pipe 2 udp from any to table(1) 5003
add 500 pipe 3 udp from any to table(1) 5003
set one_pass 0
";

/// Seconds of traffic per flow: 850 packets/s of 500 bytes to port 5001
/// (queue 10: 3.4 Mbit/s against its 3 Mbit/s share, so CoDel keeps its
/// standing queue near the target), 1000/s to 5002 (queue 11: 4 Mbit/s
/// against 1 Mbit/s, tail drops), 100/s of 100 bytes to 5003
/// (reinjection), and 10/s of 100 bytes to 5004 (queue 11's second
/// instance under its mask: far below any share, so it leaves the 3:1
/// between the two backlogged queues as it is).
const SECS: u64 = 8;

/// What a mode reports of a run.
#[derive(Debug)]
struct Cell {
    mode: &'static str,
    /// Throughput of the flows to ports 5001 and 5002, bit/s.
    thr: [f64; 2],
    /// Packets received of each flow.
    received: [u64; 3],
    /// Mean one-way delay of the flow to 5003, ms.
    delay_ms: f64,
    /// Rule number → packets.
    rules: BTreeMap<u64, u64>,
    /// Queue number → its counters.
    queues: BTreeMap<u64, Value>,
}

fn tmp(name: &str) -> String {
    format!(
        "{}/pipelab-matrix-{}-{name}",
        std::env::temp_dir().display(),
        std::process::id()
    )
}

fn conf_file() -> String {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = tmp(&format!("conf-{k}"));
    std::fs::write(&p, CONF).expect("write configuration");
    p
}

fn num(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// Rules and queues of a report: `rules` as `[number, packets, bytes]`
/// (live) or `{number, packets}` (sim), `queues` with an `id`.
fn counters(v: &Value) -> (BTreeMap<u64, u64>, BTreeMap<u64, Value>) {
    let mut rules = BTreeMap::new();
    for r in v["rules"].as_array().expect("rules") {
        let (n, p) = match r {
            Value::Array(a) => (a[0].as_u64(), a[1].as_u64()),
            _ => (r["number"].as_u64(), r["packets"].as_u64()),
        };
        rules.insert(n.expect("rule number"), p.expect("packets"));
    }
    let queues = v["queues"]
        .as_array()
        .expect("queues")
        .iter()
        .filter(|q| !q["default"].as_bool().unwrap_or(false))
        .map(|q| (num(q, "id"), q.clone()))
        .collect();
    (rules, queues)
}

fn sim() -> Cell {
    let conf = conf_file();
    let flow = |port: u16, rate: &str, size: &str| {
        format!("cbr rate {rate} size {size} duration {SECS}s to 10.0.0.2:{port}")
    };
    let out = Command::new(BIN)
        .args(["sim", &conf, "--json", "--traffic"])
        .arg(flow(5001, "850pps", "500B"))
        .arg("--traffic")
        .arg(flow(5002, "1000pps", "500B"))
        .arg("--traffic")
        .arg(flow(5003, "100pps", "100B"))
        .arg("--traffic")
        .arg(flow(5004, "10pps", "100B"))
        .output()
        .expect("pipelab sim");
    let _ = std::fs::remove_file(&conf);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("sim json");
    let f = |i: usize| &v["flows"][i];
    let mut queues = BTreeMap::new();
    for q in v["queues"].as_array().expect("queues") {
        if !q["default"].as_bool().unwrap_or(false) {
            let mut q = q.clone();
            q["instances"] = q["instances"]["created"].clone();
            queues.insert(num(&q, "id"), q);
        }
    }
    Cell {
        mode: "sim",
        thr: [
            f(0)["throughput_bps"].as_f64().expect("thr"),
            f(1)["throughput_bps"].as_f64().expect("thr"),
        ],
        received: [
            num(f(0), "received"),
            num(f(1), "received"),
            num(f(2), "received"),
        ],
        delay_ms: f(2)["delay_ms"]["mean"].as_f64().expect("delay"),
        rules: counters(&v).0,
        queues,
    }
}

/// The four probe senders of a live run, started together by one shell
/// in the source's namespace, to `dst`; their reports in `tag`-named
/// files.
fn senders(dst: &str, tag: &str) -> String {
    let mut s = String::new();
    for (port, rate, size) in [
        (5001, "850pps", "500B"),
        (5002, "1000pps", "500B"),
        (5003, "100pps", "100B"),
        (5004, "10pps", "100B"),
    ] {
        s.push_str(&format!(
            "{BIN} probe send {dst}:{port} --rate {rate} --size {size} --duration {SECS}s --json > {} & ",
            tmp(&format!("{tag}-{port}.json"))
        ));
    }
    s.push_str("wait");
    s
}

/// The probe reports of a live run (written by [`senders`]).
fn reports(tag: &str) -> Vec<Value> {
    [5001, 5002, 5003, 5004]
        .iter()
        .map(|p| {
            let f = tmp(&format!("{tag}-{p}.json"));
            let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{f}: {e}"));
            let _ = std::fs::remove_file(&f);
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{f}: {e}: {text}"))
        })
        .collect()
}

/// Four probe receivers (`--once`), run by `prefix` (a namespace).
fn receivers(prefix: &[&str]) -> Vec<Bg> {
    let r = [5001, 5002, 5003, 5004]
        .iter()
        .map(|p| {
            let listen = format!("0.0.0.0:{p}");
            let mut c = Command::new(prefix[0]);
            c.args(&prefix[1..])
                .args([BIN, "probe", "recv", "--listen", &listen, "--once"])
                .stdout(Stdio::null());
            Bg(c.spawn().expect("probe recv"))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(400));
    r
}

fn live_cell(mode: &'static str, reports: Vec<Value>, stats: &Value) -> Cell {
    let (rules, queues) = counters(stats);
    let thr = |r: &Value| r["throughput_bps"].as_f64().expect("throughput");
    Cell {
        mode,
        thr: [thr(&reports[0]), thr(&reports[1])],
        received: [
            num(&reports[0], "received"),
            num(&reports[1], "received"),
            num(&reports[2], "received"),
        ],
        delay_ms: reports[2]["delay_ms"]["mean"].as_f64().expect("delay"),
        rules,
        queues,
    }
}

fn sh(cmd: &str) {
    let st = Command::new("sh").args(["-c", cmd]).status().expect("sh");
    assert!(st.success(), "failed: {cmd}");
}

fn shell() -> Cell {
    let conf = conf_file();
    let stats = tmp("shell-stats.json");
    let _rx = receivers(&["env"]);
    let st = Command::new(BIN)
        .args([
            "shell", "--config", &conf, "--stats", &stats, "--", "sh", "-c",
        ])
        .arg(senders("$PIPELAB_OUTSIDE", "shell"))
        .status()
        .expect("pipelab shell");
    assert!(st.success());
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    let _ = std::fs::remove_file(&stats);
    let _ = std::fs::remove_file(&conf);
    live_cell("shell", reports("shell"), &v)
}

fn bridge() -> Cell {
    let hosts = TwoHosts::new("mx", "pm", "10.78.0");
    let [a, b] = hosts.ns.clone();
    let conf = conf_file();
    let stats = tmp("bridge-stats.json");
    let br = Bg(Command::new(BIN)
        .args(["bridge", &hosts.ports[0], &hosts.ports[1], "-f", &conf])
        .args(["--stats", &stats])
        .spawn()
        .expect("pipelab bridge"));
    std::thread::sleep(Duration::from_millis(800));
    sh(&format!(
        "ip netns exec {a} ping -c 2 -i 0.2 -q 10.78.0.2 >/dev/null"
    ));
    let rx = receivers(&["ip", "netns", "exec", &b]);
    sh(&format!(
        "ip netns exec {a} sh -c '{}'",
        senders("10.78.0.2", "bridge")
    ));
    drop(rx);
    assert!(br.stop().success());
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    let _ = std::fs::remove_file(&stats);
    let _ = std::fs::remove_file(&conf);
    drop(hosts);
    live_cell("bridge", reports("bridge"), &v)
}

/// Two VNs behind one router, links at 10 Gbit/s with 0.1 ms of delay.
const TOPO: &str = "graph [
  node [ id 0 role \"stub\" label \"r\" ]
  node [ id 1 role \"client\" label \"vn0\" ]
  node [ id 2 role \"client\" label \"vn1\" ]
  edge [ source 1 target 0 bandwidth 10000000000 delay 0.1 ]
  edge [ source 2 target 0 bandwidth 10000000000 delay 0.1 ]
]
";

/// The delay the topology adds to a 100-byte packet: two links of 0.1 ms
/// and 80 ns of transmission each.
const TOPO_MS: f64 = 0.2 + 0.00016;

fn topo() -> Cell {
    let name = "matrix";
    let file = tmp("two.gml");
    std::fs::write(&file, TOPO).expect("write topology");
    let conf = conf_file();
    let _ = Command::new(BIN)
        .args(["topo", "down", "--name", name])
        .output();
    let up = Command::new(BIN)
        .args(["topo", "up", &file, "--name", name, "--config", &conf])
        .output()
        .expect("topo up");
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let rx = receivers(&[BIN, "topo", "exec", "--name", name, "vn1", "--"]);
    let st = Command::new(BIN)
        .args(["topo", "exec", "--name", name, "vn0", "--", "sh", "-c"])
        .arg(senders("10.0.0.2", "topo"))
        .status()
        .expect("topo exec");
    assert!(st.success());
    drop(rx);
    let status = Command::new(BIN)
        .args(["topo", "status", "--name", name, "--json"])
        .output()
        .expect("topo status");
    let _ = Command::new(BIN)
        .args(["topo", "down", "--name", name])
        .output();
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(&conf);
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let v: Value = serde_json::from_slice(&status.stdout).expect("status json");
    let mut c = live_cell("topo", reports("topo"), &v["status"]);
    c.delay_ms -= TOPO_MS;
    c
}

/// Host mode: pipelabd's own plane, this host's traffic to a namespace
/// behind a veth pair (scope 10.81.0.0/24), the configuration sent with
/// `pipelab -f`, the counters read with `pipelab stats --json`.
fn host() -> Cell {
    let id = std::process::id() % 100_000;
    let ns = format!("mxH{id}");
    let table = format!("pltest_mx{id}");
    let clean = format!(
        "ip netns del {ns} 2>/dev/null; ip link del pmh{id} 2>/dev/null; \
         nft delete table inet {table} 2>/dev/null; true"
    );
    sh(&clean);
    sh(&format!(
        "set -e
         ip netns add {ns}
         ip link add pmh{id} type veth peer name eth0 netns {ns}
         ip addr add 10.81.0.1/24 dev pmh{id}; ip link set pmh{id} up
         ip -n {ns} addr add 10.81.0.2/24 dev eth0; ip -n {ns} link set eth0 up"
    ));
    let dir = tmp("host");
    let _ = std::fs::create_dir_all(&dir);
    let sock = format!("{dir}/pl.sock");
    let pld = Bg(Command::new(env!("CARGO_BIN_EXE_pipelabd"))
        .args([
            "--plane",
            "host",
            "--scope",
            "10.81.0.0/24",
            "--table",
            &table,
        ])
        .args([
            "--queue-num",
            "7441",
            "--socket",
            &sock,
            "--name",
            &format!("mxhost{id}"),
        ])
        .args(["--state-dir", &format!("{dir}/state")])
        .env("PIPELAB_RUN_DIR", format!("{dir}/run"))
        .stderr(Stdio::null())
        .spawn()
        .expect("pipelabd"));
    for _ in 0..100 {
        if std::path::Path::new(&sock).exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let conf = conf_file();
    let out = Command::new(BIN)
        .args(["--socket", &sock, "-f", &conf])
        .output()
        .expect("pipelab -f");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sh("ping -c 2 -i 0.2 -q 10.81.0.2 >/dev/null");
    let rx = receivers(&["ip", "netns", "exec", &ns]);
    sh(&format!("sh -c '{}'", senders("10.81.0.2", "host")));
    drop(rx);
    let stats = Command::new(BIN)
        .args(["--socket", &sock, "stats", "--json"])
        .output()
        .expect("pipelab stats");
    assert!(pld.stop().success());
    sh(&clean);
    let _ = std::fs::remove_file(&conf);
    let _ = std::fs::remove_dir_all(&dir);
    let v: Value = serde_json::from_slice(&stats.stdout).expect("stats json");
    live_cell("host", reports("host"), &v["plane"])
}

/// Every cell of the matrix for `cell`, against the virtual-time run.
fn check(cell: &Cell, sim: &Cell) -> Result<(), String> {
    let m = cell.mode;
    let live = m != "sim";
    let tol = if live { 0.02 } else { 0.002 };
    let ratio = cell.thr[0] / cell.thr[1];
    if (ratio / 3.0 - 1.0).abs() > tol {
        return Err(format!(
            "{m}: shares {ratio:.4} (throughput {:?}), not 3:1 within {tol}",
            cell.thr
        ));
    }
    let q = |n: u64, k: &str| cell.queues.get(&n).map_or(0, |q| num(q, k));
    if q(11, "instances") != 2 {
        return Err(format!(
            "{m}: masked queue 11 has {} instances, not 2 (one per destination port)",
            q(11, "instances")
        ));
    }
    if q(10, "aqm_drops") == 0
        || q(10, "drops") != 0
        || q(11, "aqm_drops") != 0
        || q(11, "drops") == 0
    {
        return Err(format!(
            "{m}: CoDel on queue 10 should drop there (aqm) and queue 11 tail-drop: {:?}",
            cell.queues
        ));
    }
    // The probe's data packets (100 and 500 bytes; its FIN is 53).
    let sent = (850 + 1000 + 100) * SECS;
    if cell.rules.get(&150) != Some(&sent) {
        return Err(format!(
            "{m}: rule 150 counted {:?}, sent {sent}",
            cell.rules.get(&150)
        ));
    }
    if cell.rules.get(&100) != sim.rules.get(&100) {
        return Err(format!(
            "{m}: prob rule 100 counted {:?}, virtual time {:?}",
            cell.rules.get(&100),
            sim.rules.get(&100)
        ));
    }
    eprintln!(
        "{m}: shares {ratio:.4}, queue 10 aqm drops {}, queue 11 tail drops {}, prob rule {:?}, reinjected flow {:.3} ms",
        q(10, "aqm_drops"),
        q(11, "drops"),
        cell.rules.get(&100),
        cell.delay_ms
    );
    let dtol = if live { 0.5 } else { 1e-9 };
    if (cell.delay_ms - 15.0).abs() > dtol || cell.received[2] != 100 * SECS {
        return Err(format!(
            "{m}: the reinjected flow took {:.3} ms (not 15 ± {dtol}), {} of {} received",
            cell.delay_ms,
            cell.received[2],
            100 * SECS
        ));
    }
    Ok(())
}

/// The reference: virtual time, exact.
#[test]
fn matrix_sim() {
    let s = sim();
    if let Err(e) = check(&s, &sim()) {
        panic!("{e}");
    }
    // Determinism: the same seed gives the same run, byte for byte.
    assert_eq!(format!("{:?}", s), format!("{:?}", sim()));
}

fn live_mode(run: fn() -> Cell) {
    let Some(_g) = live() else { return };
    let reference = sim();
    // A live accuracy bound may be spoiled by a stall of this shared
    // machine: the run is repeated (up to three runs), and must pass in one.
    if let Err(e) = common::in_one_of_three(|| check(&run(), &reference)) {
        panic!("{e}");
    }
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn matrix_shell() {
    live_mode(shell);
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn matrix_bridge() {
    live_mode(bridge);
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn matrix_topology() {
    live_mode(topo);
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn matrix_host_mode() {
    live_mode(host);
}
