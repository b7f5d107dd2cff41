//! Live topologies (`pipelab topo up/exec/run/link/down`): real namespaces,
//! real ping and iperf3, as root (skipped otherwise, failing in CI).
//!
//! * up/down of 200 VNs leaves no namespace, interface or process, and
//!   1000 VNs come up in under 30 s;
//! * ping RTT over a route of known delays is twice their sum;
//! * a link failure on a ring reroutes live traffic; a link black-holed
//!   for 2 s (`link A B down 2s`) stops ping for 2 s, then passes again;
//! * `--realtime` workers run at real-time priority; `--workers` beyond
//!   what a topology can use starts no idle worker, and says so;
//! * frames the kernel drops before pipelab reads them (a VN's TAP
//!   queue full) are counted as `dropped_input`, as the device counts;
//! * files links name are read at `topo up` and at `topo link ... set`;
//! * ModelNet's Fig. 5: per-flow TCP throughput on a ring under three
//!   distillations, against max-min fair shares computed from the model;
//!   the CDF is written as an SVG plot.

use pipelab_engine::{Duration, Rate};
use pipelab_topo::gen::ring;
use pipelab_topo::model::{Link, LinkAttrs, Role, RoleAttrs};
use pipelab_topo::{distill, Mode, Topology};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Instant;

mod common;
use common::{live, ping_avg_ms, BIN};

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

fn tmp(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)
}

fn write_topo(t: &Topology, file: &str) -> String {
    let p = tmp(file);
    std::fs::write(&p, pipelab_topo::to_toml(t).expect("toml")).expect("write topology");
    p.display().to_string()
}

fn namespaces(name: &str) -> Vec<String> {
    let pre = format!("pl-{name}-");
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&pre))
                .collect()
        })
        .unwrap_or_default()
}

/// Interfaces in the host's namespace with the VNs' MAC address (a VN's
/// TAP that escaped its namespace); other tests' interfaces do not count.
fn host_links() -> Vec<String> {
    std::fs::read_dir("/sys/class/net")
        .expect("/sys/class/net")
        .flatten()
        .filter(|e| {
            std::fs::read_to_string(e.path().join("address"))
                .is_ok_and(|a| a.trim() == "02:70:6c:00:00:01")
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// A running topology, taken down when dropped (also on failure).
struct Up {
    name: String,
    pid: u32,
    secs: f64,
}

impl Up {
    fn start(file: &str, distill: &str, name: &str) -> Up {
        Up::start_with(file, distill, name, &[])
    }

    /// [`Up::start`] with `extra` arguments of `topo up`.
    fn start_with(file: &str, distill: &str, name: &str, extra: &[&str]) -> Up {
        let _ = pl(&["topo", "down", "--name", name]);
        let t0 = Instant::now();
        let mut args = vec!["topo", "up", file, "--distill", distill, "--name", name];
        args.extend_from_slice(extra);
        ok(&args);
        let secs = t0.elapsed().as_secs_f64();
        let st: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(format!("/run/pipelab/topo/{name}.json")).expect("state"),
        )
        .expect("state json");
        Up {
            name: name.into(),
            pid: st["pid"].as_u64().expect("pid") as u32,
            secs,
        }
    }

    fn exec(&self, vn: &str, cmd: &[&str]) -> Output {
        let mut a = vec!["topo", "exec", "--name", &self.name, vn, "--"];
        a.extend_from_slice(cmd);
        pl(&a)
    }

    /// `topo down`, its output.
    fn down(&self) -> String {
        ok(&["topo", "down", "--name", &self.name])
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = pl(&["topo", "down", "--name", &self.name]);
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

fn mbps(m: u64) -> Rate {
    Rate::from_bps(m * 1_000_000)
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn up_down_200_vns_leaves_nothing() {
    let Some(_g) = live() else { return };
    let t = pipelab_topo::gen::star(200, &RoleAttrs::default()).expect("star");
    let file = write_topo(&t, "star200.toml");
    let up = Up::start(&file, "hop-by-hop", "t200");
    eprintln!("topo up of 200 VNs: {:.2} s", up.secs);
    assert_eq!(namespaces("t200").len(), 200);
    assert!(host_links().is_empty(), "a VN's TAP is in the host");
    // Forwarding works between the first and the last VN.
    let o = up.exec(
        "vn0",
        &["ping", "-c", "2", "-i", "0.2", "-W", "2", "10.0.0.200"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    // A process left in a VN is killed by down.
    let o = up.exec("vn7", &["sh", "-c", "sleep 1000 >/dev/null 2>&1 &"]);
    assert!(o.status.success());
    let pid = up.pid;
    let t0 = Instant::now();
    let o = up.down();
    eprintln!("topo down of 200 VNs: {:.2} s", t0.elapsed().as_secs_f64());
    // What the emulator's own teardown removed is counted too.
    assert!(
        o.contains("emulator stopped, 200 namespaces removed, 1 process killed"),
        "{o}"
    );
    assert!(namespaces("t200").is_empty(), "{:?}", namespaces("t200"));
    assert!(!alive(pid), "emulator {pid} still running");
    assert!(host_links().is_empty(), "interfaces left in the host");
    assert!(!std::path::Path::new("/run/pipelab/topo/t200.json").exists());
    assert!(!std::path::Path::new("/run/pipelab/topo/t200.sock").exists());
    let sleepers: Vec<String> = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.trim() == "sleep 1000")
        .collect();
    assert!(sleepers.is_empty(), "process left behind: {sleepers:?}");
    assert!(up.secs < 10.0, "200 VNs took {:.2} s", up.secs);

    // After a crash (emulator killed), down still finds everything.
    let up = Up::start(&file, "hop-by-hop", "t200");
    nix_kill(up.pid);
    let o = ok(&["topo", "down", "--name", "t200"]);
    assert!(o.contains("200 namespaces removed"), "{o}");
    assert!(namespaces("t200").is_empty());
    assert!(host_links().is_empty());
    // Its entry in the registry of emulations goes too.
    for f in ["t200.json", "t200.sock"] {
        let p = std::path::Path::new("/run/pipelab/emu").join(f);
        assert!(!p.exists(), "{} left behind", p.display());
    }
}

fn nix_kill(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    let t0 = Instant::now();
    while alive(pid) && t0.elapsed().as_secs() < 5 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn up_1000_vns_under_30_s() {
    let Some(_g) = live() else { return };
    let t = pipelab_topo::gen::star(1000, &RoleAttrs::default()).expect("star");
    let file = write_topo(&t, "star1000.toml");
    let up = Up::start(&file, "hop-by-hop", "t1000");
    eprintln!("topo up of 1000 VNs: {:.2} s", up.secs);
    let o = up.exec(
        "vn999",
        &["ping", "-c", "2", "-i", "0.2", "-W", "2", "10.0.0.1"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let t0 = Instant::now();
    up.down();
    eprintln!("topo down of 1000 VNs: {:.2} s", t0.elapsed().as_secs_f64());
    assert!(namespaces("t1000").is_empty());
    assert!(up.secs < 30.0, "1000 VNs took {:.2} s", up.secs);
}

/// A pass proves `topo up --workers` beyond what the topology can use
/// starts no idle worker, and says so: one link runs one worker split
/// by links, and two (one per direction, each reading a VN) split by
/// directions; the state and the emulator's stats agree.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn more_workers_than_the_topology_uses_are_not_started() {
    let Some(_g) = live() else { return };
    let mut t = Topology::new();
    let a = t.add_node(Role::Client, "a");
    let b = t.add_node(Role::Client, "b");
    t.links.push(Link::with_attrs(
        a,
        b,
        &LinkAttrs::new(mbps(100), Duration::from_millis(1)),
    ));
    let file = write_topo(&t, "one-link.toml");
    for (split, want, note) in [
        ("links", 1, "note: --workers 4: a topology of 1 link split by links, a worker each at most; running 1"),
        ("directions", 2, "note: --workers 4: a topology of 2 link directions and 2 VNs split by directions, a worker each at most; running 2"),
    ] {
        let name = format!("tw{}", &split[..1]);
        let _ = pl(&["topo", "down", "--name", &name]);
        let out = ok(&[
            "topo", "up", &file, "--name", &name, "--workers", "4", "--split", split,
        ]);
        assert!(out.contains(note), "{out}");
        assert!(out.contains(&format!(", {want} worker")), "{out}");
        let st = ok(&["topo", "status", "--name", &name]);
        let json = st.lines().last().unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(json).expect("status json");
        let ws = v["workers"].as_array().expect("workers");
        assert_eq!(ws.len(), want, "{split}: {v}");
        assert!(ws.iter().all(|w| w["pipes"].as_u64() > Some(0)), "{v}");
        let o = ok(&["topo", "exec", "--name", &name, "a", "--", "ping", "-c", "1", "-W", "2", "10.0.0.2"]);
        assert!(o.contains("1 received"), "{o}");
        let o = ok(&["topo", "down", "--name", &name]);
        assert!(o.contains("2 namespaces removed"), "{o}");
    }
}

/// a — r1 — r2 — b with one-way delays 1, 3 and 2 ms at 1 Gb/s.
fn chain() -> Topology {
    let mut t = Topology::new();
    let a = t.add_node(Role::Client, "a");
    let r1 = t.add_node(Role::Stub, "r1");
    let r2 = t.add_node(Role::Stub, "r2");
    let b = t.add_node(Role::Client, "b");
    for (x, y, ms) in [(a, r1, 1), (r1, r2, 3), (r2, b, 2)] {
        t.links.push(Link::with_attrs(
            x,
            y,
            &LinkAttrs::new(Rate::from_bps(1_000_000_000), Duration::from_millis(ms)),
        ));
    }
    t
}

/// A pass proves `topo up --series` writes every link direction's
/// intervals named `a->b` until the topology stops: the six pipes of the
/// chain, each at its 1 Gbit/s, and the 30 echo requests counted on each
/// of the three pipes they cross (the replies on the three others).
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn series_name_the_link_directions() {
    let Some(_g) = live() else { return };
    let file = write_topo(&chain(), "chain-series.toml");
    let csv = tmp("chain-series.csv");
    let csv_s = csv.display().to_string();
    let up = Up::start_with(&file, "hop-by-hop", "tseries", &["--series", &csv_s]);
    let o = up.exec("a", &["ping", "-c", "30", "-i", "0.02", "-q", "10.0.0.2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    up.down();
    let text = std::fs::read_to_string(&csv).expect("series file");
    let _ = std::fs::remove_file(&csv);
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let (arr, cap, name) = (col("arrivals"), col("capacity_bps"), col("name"));
    let mut sums: std::collections::BTreeMap<String, u64> = Default::default();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f[cap], "1000000000", "{l}");
        *sums.entry(f[name].to_string()).or_default() += f[arr].parse::<u64>().expect("arrivals");
    }
    let names: Vec<&str> = sums.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["a->r1", "b->r2", "r1->a", "r1->r2", "r2->b", "r2->r1"],
        "{sums:?}"
    );
    for forward in ["a->r1", "r1->r2", "r2->b"] {
        assert_eq!(sums[forward], 30, "{sums:?}");
    }
    for back in ["b->r2", "r2->r1", "r1->a"] {
        assert_eq!(sums[back], 30, "{sums:?}");
    }
}

/// A pass proves frames the kernel drops on their way to pipelab are
/// reported: VN `a`'s TAP queue shrunk to 4 frames and bursts of 512
/// sent into it, `stats` counts as `dropped_input` exactly the drops the
/// device counts (some, surely), and says so in its text.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn frames_dropped_before_reading_are_counted() {
    let Some(_g) = live() else { return };
    let file = write_topo(&chain(), "chain-drops.toml");
    let up = Up::start(&file, "hop-by-hop", "tdrops");
    let o = up.exec("a", &["ip", "link", "set", "eth0", "txqueuelen", "4"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // No receiver: the datagrams' fate after the route does not matter.
    let _ = up.exec(
        "a",
        &[
            BIN,
            "probe",
            "send",
            "10.0.0.2:9",
            "--rate",
            "100kpps",
            "--size",
            "53B",
            "--duration",
            "0.3s",
            "--burst",
            "512",
        ],
    );
    // Both VNs' devices (b's answers go through its own).
    let device: u64 = ["a", "b"]
        .iter()
        .map(|vn| {
            let o = up.exec(vn, &["ip", "-s", "-j", "link", "show", "eth0"]);
            let dev: serde_json::Value = serde_json::from_slice(&o.stdout).expect("ip -j output");
            dev[0]["stats64"]["tx"]["dropped"]
                .as_u64()
                .expect("tx dropped")
        })
        .sum();
    let st: serde_json::Value =
        serde_json::from_str(&ok(&["--target", "tdrops", "stats", "--json"])).expect("stats json");
    let runner = &st["plane"]["runner"];
    eprintln!("device drops {device}; runner {runner}");
    assert!(device > 0, "no drop at a 4-frame queue under bursts of 512");
    assert_eq!(runner["dropped_input"].as_u64(), Some(device), "{runner}");
    // Never received: outside the accounting, which still holds.
    common::check_accounting(&serde_json::json!({
        "stats": runner,
        "workers": st["plane"]["workers"],
    }));
    let text = ok(&["--target", "tdrops", "stats"]);
    assert!(
        text.contains(&format!("{device} dropped by the kernel before reading")),
        "{text}"
    );
    up.down();
}

/// A pass proves `topo up --realtime` runs every worker at real-time
/// priority (each one's lateness says so) and forwards as usual, and
/// that `--busy-poll` with it is refused.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn realtime_workers() {
    let Some(_g) = live() else { return };
    let file = write_topo(&chain(), "chain-rt.toml");
    let o = pl(&[
        "topo",
        "up",
        &file,
        "--name",
        "trt",
        "--realtime",
        "--busy-poll",
    ]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot be used with"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let up = Up::start_with(
        &file,
        "hop-by-hop",
        "trt",
        &["--realtime", "--workers", "2"],
    );
    let o = up.exec("a", &["ping", "-c", "10", "-i", "0.05", "-q", "10.0.0.2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let st: serde_json::Value =
        serde_json::from_str(&ok(&["--target", "trt", "stats", "--json"])).expect("stats json");
    let workers = st["plane"]["workers"].as_array().expect("workers");
    assert_eq!(workers.len(), 2, "{st}");
    for w in workers {
        assert_eq!(w["lateness"]["realtime"], true, "{w}");
    }
    assert_eq!(st["plane"]["runner"]["delivered"], 20, "{st}");
    up.down();
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn ping_rtt_is_twice_the_route_delay() {
    let Some(_g) = live() else { return };
    let file = write_topo(&chain(), "chain.toml");
    for mode in ["hop-by-hop", "end-to-end"] {
        let up = Up::start(&file, mode, "tping");
        let o = up.exec("a", &["ping", "-c", "40", "-i", "0.05", "10.0.0.2"]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{out}");
        // The median of the replies (a reply delayed by the scheduler of
        // this shared 2-core machine must not move the figure).
        let rtt = ping_median(&out, 38);
        eprintln!(
            "{mode}: ping RTT median {rtt:.3} ms, mean {:.3} ms (route 1 + 3 + 2 ms)",
            ping_avg_ms(&out)
        );
        assert!((rtt - 12.0).abs() < 0.5, "{mode}: RTT {rtt} ms, want 12 ms");
        // The script runner and exec see the same namespaces.
        let script = tmp("ping.script");
        let res = tmp("ping.out");
        std::fs::write(
            &script,
            format!(
                "0s exec b ping -c 10 -i 0.05 10.0.0.1 > {}\n",
                res.display()
            ),
        )
        .expect("script");
        ok(&[
            "topo",
            "run",
            "--name",
            "tping",
            &script.display().to_string(),
        ]);
        let rtt = ping_median(&std::fs::read_to_string(&res).expect("ping output"), 9);
        assert!((rtt - 12.0).abs() < 0.5, "{mode}: scripted RTT {rtt} ms");
        up.down();
    }
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn scheduled_link_changes_move_the_rtt() {
    let Some(_g) = live() else { return };
    let file = write_topo(&chain(), "chain-every.toml");
    on_fresh_topologies(&file, "tevery", scheduled_run);
}

/// An RTT bound on a shared machine: `run` on a fresh topology `name`
/// of `file` (hop-by-hop), repeated while it misses, must hold in one of
/// three runs.
fn on_fresh_topologies(file: &str, name: &str, run: fn() -> Result<(), String>) {
    let r = common::in_one_of_three(|| {
        let up = Up::start(file, "hop-by-hop", name);
        let r = run();
        up.down();
        r
    });
    if let Err(e) = r {
        panic!("{e}");
    }
}

/// One run of [`scheduled_link_changes_move_the_rtt`] on the topology
/// `tevery`: `Err` says which phase missed.
fn scheduled_run() -> Result<(), String> {
    // a–r1 (1 ms) becomes 10 ms, then 4..8 ms drawn every 0.5 s: the RTT
    // leaves 12 ms for 30 ms, then stays in [18, 26] ms.
    let script = tmp("every.script");
    let res = tmp("every.out");
    std::fs::write(
        &script,
        format!(
            "0s exec a ping -D -c 60 -i 0.05 10.0.0.2 > {}\n\
             1s link a r1 set delay 10ms\n\
             2s every 0.25s until 3s link a r1 set delay 4ms..8ms\n",
            res.display()
        ),
    )
    .expect("script");
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    let o = ok(&[
        "topo",
        "run",
        "--name",
        "tevery",
        &script.display().to_string(),
    ]);
    assert!(o.contains("7 steps"), "{o}");
    let rs = replies(&std::fs::read_to_string(&res).expect("ping output"));
    if rs.len() < 58 {
        return Err(format!("{} of 60 replies: {rs:?}", rs.len()));
    }
    let sent = |r: &(f64, f64)| r.0 - r.1 / 1e3 - t0;
    let phase = |a: f64, b: f64| -> Vec<f64> {
        rs.iter()
            .filter(|r| (a..b).contains(&sent(r)))
            .map(|r| r.1)
            .collect()
    };
    let first = phase(0.0, 0.9);
    let second = phase(1.2, 1.9);
    let third = phase(2.2, 2.9);
    // Medians move little with steal time; the drawn delays' range, a
    // p99 or so of 8–10 replies, as a high percentile does.
    let slack = common::steal_slack();
    if (median(&first) - 12.0).abs() >= 0.5 + slack.mean_ms {
        return Err(format!("before the change, want 12 ms: {first:?}"));
    }
    if (median(&second) - 30.0).abs() >= 0.5 + slack.mean_ms {
        return Err(format!("after the change, want 30 ms: {second:?}"));
    }
    if third.len() < 8
        || third
            .iter()
            .any(|x| !(17.5..26.5 + slack.p99_ms).contains(x))
    {
        return Err(format!(
            "drawn delays, want RTTs in [17.5, 26.5) ms: {third:?}"
        ));
    }
    Ok(())
}

/// Pass proves: synthetic cross traffic (ModelNet §4.3) changes the live
/// pipes as the M/M/1 model says, in the direction of the demand only.
/// Chain a — r1 — r2 — b (1, 3, 2 ms) whose middle link is 10 Mbit/s: a
/// demand of 9 Mbit/s from a to b (ρ = 0.9) adds W_q = 9 × 1.2 ms =
/// 10.8 ms to the a→b direction and leaves it 1 Mbit/s, so an 84-byte
/// ping's RTT grows by 10.8 ms + (672 − 67) µs = 11.4 ms (± 0.5 ms); the
/// same demand from b to a does the same; `cross clear` restores 12 ms.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn cross_traffic_follows_the_queueing_model() {
    let Some(_g) = live() else { return };
    let mut t = chain();
    t.links[1].bw = Rate::from_bps(10_000_000);
    let file = write_topo(&t, "chain-cross.toml");
    let up = Up::start(&file, "hop-by-hop", "tcross");
    let rtt = || {
        let o = up.exec("a", &["ping", "-c", "30", "-i", "0.05", "10.0.0.2"]);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{out}");
        ping_median(&out, 28)
    };
    let base = rtt();
    // 12 ms of propagation + 84 bytes at 10 Mbit/s each way.
    assert!((base - 12.13).abs() < 0.5, "baseline RTT {base} ms");
    for (src, dst) in [("a", "b"), ("b", "a")] {
        ok(&["topo", "cross", "--name", "tcross", src, dst, "9Mbit/s"]);
        let loaded = rtt();
        eprintln!("cross {src}→{dst} 9 Mbit/s: RTT {base:.2} → {loaded:.2} ms");
        assert!(
            (loaded - base - 11.4).abs() < 0.5,
            "{src}→{dst}: RTT {loaded} ms, base {base} ms, want +11.4 ms"
        );
    }
    ok(&["topo", "cross", "--name", "tcross", "clear"]);
    let after = rtt();
    assert!(
        (after - base).abs() < 0.5,
        "after clear: {after} ms vs {base} ms"
    );
    let o = pl(&[
        "topo", "cross", "--name", "tcross", "a", "nobody", "1Mbit/s",
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no VN 'nobody'"));
    up.down();
}

/// The median RTT (ms) of the replies in `ping` output; at least `min`.
fn ping_median(out: &str, min: usize) -> f64 {
    let rtts: Vec<f64> = out
        .lines()
        .filter_map(|l| {
            l.split("time=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect();
    assert!(rtts.len() >= min, "{} replies: {out}", rtts.len());
    median(&rtts)
}

/// `(seconds since start, rtt ms)` of every reply in `ping -D` output.
fn replies(out: &str) -> Vec<(f64, f64)> {
    out.lines()
        .filter_map(|l| {
            let ts: f64 = l.strip_prefix('[')?.split(']').next()?.parse().ok()?;
            let rtt: f64 = l
                .split("time=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()?;
            Some((ts, rtt))
        })
        .collect()
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn link_down_on_a_ring_reroutes_live() {
    let Some(_g) = live() else { return };
    // Ring of 4 routers, one VN each; r0–r1 is 1 ms, the others 5 ms;
    // access links 1 ms. vn0 → vn1: 3 ms one way, or 17 ms around. Then
    // r0–r1 fails, comes back, and becomes 3 ms.
    let attrs = RoleAttrs {
        client_stub: LinkAttrs::new(Rate::from_bps(1_000_000_000), Duration::from_millis(1)),
        stub_stub: LinkAttrs::new(Rate::from_bps(1_000_000_000), Duration::from_millis(5)),
        ..RoleAttrs::default()
    };
    let mut t = ring(4, 1, &attrs).expect("ring");
    let (r0, r1) = (t.nodes.iter().position(|n| n.name == "r0").unwrap(), 2);
    assert_eq!(t.nodes[r1].name, "r1");
    let l = t.find_link(r0, r1).expect("r0-r1");
    t.links[l].delay = Duration::from_millis(1);
    let file = write_topo(&t, "ring4.toml");
    on_fresh_topologies(&file, "tring", reroute_run);
}

/// One run of [`link_down_on_a_ring_reroutes_live`] on the topology
/// `tring`: `Err` says which phase missed.
fn reroute_run() -> Result<(), String> {
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs_f64()
    };
    let ping = Command::new(BIN)
        .args(["topo", "exec", "--name", "tring", "vn0", "--"])
        .args(["ping", "-D", "-c", "200", "-i", "0.02", "10.0.0.2"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("ping");
    // `(before, after)` epoch times of each change.
    let mut at = Vec::new();
    for (pause, args) in [
        (1000, vec!["r0", "r1", "down"]),
        (1000, vec!["r0", "r1", "up"]),
        (800, vec!["r0", "r1", "set", "delay", "3ms"]),
    ] {
        std::thread::sleep(std::time::Duration::from_millis(pause));
        let mut a = vec!["topo", "link", "--name", "tring"];
        a.extend(args);
        let t0 = now();
        let r = ok(&a);
        assert!(r.contains("routes changed"), "{r}");
        at.push((t0, now()));
    }
    let out = ping.wait_with_output().expect("ping output");
    let out = String::from_utf8_lossy(&out.stdout);
    let rs = replies(&out);
    if rs.len() < 195 {
        return Err(format!("{} of 200 replies:\n{out}", rs.len()));
    }
    // Replies sent in [from, to) (epoch s; a reply's stamp is its arrival).
    let phase = |from: f64, to: f64| -> Vec<f64> {
        rs.iter()
            .filter(|(ts, rtt)| (from..to).contains(&(ts - rtt / 1e3)))
            .map(|r| r.1)
            .collect()
    };
    // Each phase: its median RTT is the path's within 0.5 ms, and every
    // reply is on the right side of the midpoint between the two paths
    // (a scheduling hiccup may delay a reply, never reroute it).
    let near = |v: &[f64], want: f64| -> Result<(), String> {
        if v.len() < 10 {
            return Err(format!("{} replies in a phase of {want}: {v:?}", v.len()));
        }
        let m = median(v);
        if (m - want).abs() >= 0.5 {
            return Err(format!("median RTT {m} ms, want {want}: {v:?}"));
        }
        match v.iter().find(|&&x| (x > 20.0) != (want > 20.0)) {
            Some(x) => Err(format!("RTT {x} ms in a phase of {want}: {v:?}")),
            None => Ok(()),
        }
    };
    let m = 0.05;
    near(&phase(0.0, at[0].0 - m), 6.0)?;
    near(&phase(at[0].1 + m, at[1].0 - m), 34.0)?;
    near(&phase(at[1].1 + m, at[2].0 - m), 6.0)?;
    // r0–r1 now 3 ms: 1 + 3 + 1 each way.
    near(&phase(at[2].1 + m, f64::INFINITY), 10.0)
}

/// Pass proves: `link A B down 2s` black-holes a live link for 2 s and
/// then passes again by itself, without a reroute. On the chain a — r1 —
/// r2 — b (the only path), a ping every 200 ms from a to b loses the
/// requests of the 2 s: the longest time between two replies is 2 s
/// (within 1.5–3.5 s on a loaded machine: ping's timer slips, and the
/// replies on either side are up to 0.4 s further apart), the replies go
/// on after it (nobody sent `up`), and the emulator's status counts the
/// lost requests as `down` drops (10 expected; 5 to 15 accepted).
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn link_down_for_two_seconds_black_holes_then_passes() {
    let Some(_g) = live() else { return };
    let file = write_topo(&chain(), "chain-down.toml");
    let up = Up::start(&file, "hop-by-hop", "tdown");
    let ping = Command::new(BIN)
        .args(["topo", "exec", "--name", "tdown", "a", "--"])
        .args(["ping", "-D", "-n", "-c", "30", "-i", "0.2", "10.0.0.2"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("ping");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let reply = ok(&["topo", "link", "--name", "tdown", "r1", "r2", "down", "2s"]);
    assert!(
        reply.contains("down for 2s") && reply.contains("no reroute"),
        "{reply}"
    );
    let out = ping.wait_with_output().expect("ping output");
    let out = String::from_utf8_lossy(&out.stdout);
    let rs = replies(&out);
    let (mut gap, mut after) = (0.0f64, 0);
    for (i, w) in rs.windows(2).enumerate() {
        if w[1].0 - w[0].0 > gap {
            gap = w[1].0 - w[0].0;
            after = rs.len() - i - 1;
        }
    }
    let status = ok(&["topo", "status", "--name", "tdown", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&status).expect("status json");
    let down = v["status"]["stats"]["dropped_down"].as_u64();
    eprintln!(
        "{} replies of 30, longest gap {gap:.3} s, {after} replies after it, dropped_down {down:?}",
        rs.len()
    );
    assert!((1.5..=3.5).contains(&gap), "gap {gap:.3} s:\n{out}");
    assert!(after >= 5, "{after} replies after the gap:\n{out}");
    assert!(
        down.is_some_and(|d| (5..=15).contains(&d)),
        "dropped_down {down:?}: {status}"
    );
    up.down();
}

/// Pass proves: `topo up` reads the files a topology's links name,
/// relative to the topology file's directory, and `topo link ... set`
/// takes pipe words at run time, a file's path relative to the working
/// directory. On the chain a — r1 — r2 — b (1, 3, 2 ms), r1–r2 draws
/// its delay from a file of samples that are all 20 ms (`distribution
/// "file:delays/20ms.txt"`, added to its 3 ms): ping's RTT is 12 + 2 ×
/// 20 = 52 ms (median within 0.5 ms); then `set distribution
/// file:FILE` with a file of 10 ms samples makes it 32 ms.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn topology_links_read_files_at_up_and_at_set() {
    let Some(_g) = live() else { return };
    let dir = tmp("topo-files");
    std::fs::create_dir_all(dir.join("delays")).expect("dir");
    std::fs::write(dir.join("delays/20ms.txt"), "20ms\n20ms\n").expect("samples");
    std::fs::write(dir.join("10ms.txt"), "10ms\n10ms\n").expect("samples");
    let mut t = chain();
    t.links[1].words = pipelab_lang::parse_pipe_params("delay 0 distribution file:delays/20ms.txt")
        .expect("words");
    t.links[1].words.delay = None;
    let file = dir.join("chain-files.toml");
    std::fs::write(&file, pipelab_topo::to_toml(&t).expect("toml")).expect("write");
    let up = Up::start(&file.display().to_string(), "hop-by-hop", "tfiles");
    let rtt = |up: &Up| {
        let o = up.exec("a", &["ping", "-c", "20", "-i", "0.05", "10.0.0.2"]);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{out}");
        ping_median(&out, 19)
    };
    let first = rtt(&up);
    let set = Command::new(BIN)
        .current_dir(&dir)
        .args(["topo", "link", "--name", "tfiles", "r1", "r2", "set"])
        .args(["distribution", "file:10ms.txt"])
        .output()
        .expect("topo link set");
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    let second = rtt(&up);
    eprintln!("RTT {first:.3} ms from the topology's file, {second:.3} ms after set");
    assert!((first - 52.0).abs() < 0.5, "RTT {first} ms, want 52");
    assert!((second - 32.0).abs() < 0.5, "RTT {second} ms, want 32");
    up.down();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Max-min fair shares (bit/s) of flows over pipes of capacity `cap`.
fn max_min(cap: &[f64], flows: &[Vec<u32>]) -> Vec<f64> {
    let mut rate = vec![0.0; flows.len()];
    let mut frozen = vec![false; flows.len()];
    let mut left = cap.to_vec();
    while frozen.iter().any(|f| !f) {
        // The tightest pipe: least capacity left per unfrozen flow.
        let mut best = (f64::INFINITY, usize::MAX);
        for (p, &c) in left.iter().enumerate() {
            let n = (0..flows.len())
                .filter(|&f| !frozen[f] && flows[f].contains(&(p as u32)))
                .count();
            if n > 0 && c / (n as f64) < best.0 {
                best = (c / n as f64, p);
            }
        }
        let share = best.0;
        for f in 0..flows.len() {
            if !frozen[f] {
                rate[f] += share;
                for &p in &flows[f] {
                    left[p as usize] -= share;
                }
            }
        }
        for f in 0..flows.len() {
            if !frozen[f] && flows[f].contains(&(best.1 as u32)) {
                frozen[f] = true;
            }
        }
    }
    rate
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn quantile(v: &[f64], q: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    s[((s.len() - 1) as f64 * q).round() as usize]
}

/// ModelNet Fig. 5: 20 flows on a ring of 10 routers with 4 VNs each
/// (2 Mb/s access, 4 Mb/s ring), once per distillation.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn modelnet_fig5_distillations() {
    let Some(_g) = live() else { return };
    let attrs = RoleAttrs {
        client_stub: LinkAttrs::new(mbps(2), Duration::from_millis(1)),
        stub_stub: LinkAttrs::new(mbps(4), Duration::from_millis(5)),
        ..RoleAttrs::default()
    };
    let t = ring(10, 4, &attrs).expect("ring");
    let file = write_topo(&t, "ring10x4.toml");
    let vns = t.vns();
    // Fixed seed: 20 distinct senders, each to a random one of the other
    // 20 VNs (a receiver's access link then carries no ACKs of its own
    // flows: the fair shares of the model are what TCP can reach).
    let mut seed: u64 = 7;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) % n as u64) as usize
    };
    let mut order: Vec<usize> = (0..vns.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, next(i + 1));
    }
    let flows: Vec<(usize, usize)> = order[..20]
        .iter()
        .map(|&s| (s, order[20 + next(vns.len() - 20)]))
        .collect();
    let secs = 8;
    // TCP's shares move from run to run (a flow's RTT and its losses): a
    // run that misses a bound is measured again (up to three runs), and
    // the bounds must hold in one, as for the other live accuracy tests.
    let r = common::in_one_of_three(|| {
        let results = fig5_run(&t, &file, &flows, secs);
        plot_cdf(&results);
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_fig5(&flows, &results)
        }))
        .map_err(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        })
    });
    if let Err(e) = r {
        panic!("{e}");
    }
}

/// One run of Fig. 5: per distillation, the model's max-min shares and
/// the goodput iperf3 measured, flow by flow.
fn fig5_run(
    t: &Topology,
    file: &str,
    flows: &[(usize, usize)],
    secs: u64,
) -> Vec<(&'static str, Vec<f64>, Vec<f64>)> {
    let vns = t.vns();
    let mut results: Vec<(&str, Vec<f64>, Vec<f64>)> = Vec::new();
    for mode in ["end-to-end", "hop-by-hop", "last-mile"] {
        // The model's max-min fair shares over this distillation's pipes.
        let d = distill(t, mode.parse::<Mode>().expect("mode")).expect("distill");
        let cap: Vec<f64> = d.pipes.iter().map(|p| p.bw.bps() as f64).collect();
        let routes: Vec<Vec<u32>> = flows
            .iter()
            .map(|&(s, r)| d.routes.route(vns[s], vns[r]).expect("route").to_vec())
            .collect();
        let model = max_min(&cap, &routes);

        let up = Up::start(file, mode, "tfig5");
        let mut script = String::new();
        for (k, &(s, r)) in flows.iter().enumerate() {
            let port = 5201 + k;
            script += &format!("0s exec vn{r} iperf3 -s -1 -D -p {port}\n");
            let out = tmp(&format!("fig5-{mode}-{k}.json"));
            script += &format!(
                "1s exec vn{s} iperf3 -c 10.0.0.{} -p {port} -t {secs} -J > {}\n",
                r + 1,
                out.display()
            );
        }
        let sp = tmp("fig5.script");
        std::fs::write(&sp, script).expect("script");
        ok(&["topo", "run", "--name", "tfig5", &sp.display().to_string()]);
        let mut got = Vec::new();
        for k in 0..flows.len() {
            let p = tmp(&format!("fig5-{mode}-{k}.json"));
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&p).expect("iperf3 output"))
                    .expect("iperf3 json");
            let bps = v["end"]["sum_received"]["bits_per_second"]
                .as_f64()
                .unwrap_or_else(|| panic!("flow {k}: {v}"));
            got.push(bps);
        }
        up.down();
        eprintln!(
            "{mode}: model median {:.2} Mb/s [{:.2}, {:.2}], measured median {:.2} Mb/s [{:.2}, {:.2}]",
            median(&model) / 1e6,
            quantile(&model, 0.0) / 1e6,
            quantile(&model, 1.0) / 1e6,
            median(&got) / 1e6,
            quantile(&got, 0.0) / 1e6,
            quantile(&got, 1.0) / 1e6
        );
        for (k, &(s, r)) in flows.iter().enumerate() {
            eprintln!(
                "  flow {k:2}: vn{s:<2} -> vn{r:<2} model {:.2} measured {:.2} Mb/s",
                model[k] / 1e6,
                got[k] / 1e6
            );
        }
        results.push((mode, model, got));
    }
    results
}

fn check_fig5(flows: &[(usize, usize)], results: &[(&str, Vec<f64>, Vec<f64>)]) {
    // TCP goodput over an IP-accounted pipe: 1448 payload bytes per 1500
    // (plus ~1 s of slow start and start-up spread over 8 s).
    let eff = 0.96;
    for (mode, model, got) in results {
        // The measured median follows the model's within 15%, and the
        // aggregate throughput within 15% below (and never above) it.
        let (mm, gm) = (median(model) * eff, median(got));
        assert!(
            (gm / mm - 1.0).abs() < 0.15,
            "{mode}: median {gm:.0} b/s, model {mm:.0}"
        );
        let (sm, sg): (f64, f64) = (model.iter().sum::<f64>() * eff, got.iter().sum());
        assert!(
            sg <= sm * 1.03 && sg >= sm * 0.85,
            "{mode}: total {sg:.0} b/s, model {sm:.0}"
        );
    }
    let e2e = &results[0].2;
    let hbh = &results[1].2;
    let lm = &results[2].2;
    // End-to-end: every flow has its own 2 Mb/s pipe.
    for (k, x) in e2e.iter().enumerate() {
        assert!(
            *x > 0.85 * 2e6 && *x < 2.02e6,
            "end-to-end flow {k}: {x:.0} b/s"
        );
    }
    // Last-mile: only the receivers' access links are shared: the flows
    // into one receiver share its 2 Mb/s (together within 15% of the
    // model, however TCP splits it), and a flow alone at its receiver
    // gets it all.
    let model_lm = &results[2].1;
    let mut by_recv: std::collections::BTreeMap<usize, (f64, f64)> = Default::default();
    for (k, &(_, r)) in flows.iter().enumerate() {
        let e = by_recv.entry(r).or_default();
        e.0 += lm[k];
        e.1 += model_lm[k] * eff;
        if model_lm[k] >= 2e6 {
            assert!(
                lm[k] > 0.85 * 2e6,
                "last-mile flow {k} alone: {:.0} b/s",
                lm[k]
            );
        }
    }
    for (r, (got, want)) in by_recv {
        assert!(
            (got / want - 1.0).abs() < 0.15,
            "last-mile receiver vn{r}: {got:.0} b/s, model {want:.0}"
        );
    }
    // Hop-by-hop: the ring's contention lowers the median and the total
    // and widens the spread.
    let spread = |v: &[f64]| quantile(v, 0.9) - quantile(v, 0.1);
    let total = |v: &[f64]| v.iter().sum::<f64>();
    assert!(median(hbh) < 0.8 * median(e2e), "hop-by-hop median");
    assert!(spread(hbh) > spread(e2e) + 0.3e6, "hop-by-hop spread");
    assert!(
        total(hbh) < 0.95 * total(lm),
        "hop-by-hop total {:.0} vs last-mile {:.0}",
        total(hbh),
        total(lm)
    );
    assert!(spread(lm) > spread(e2e) + 0.3e6, "last-mile spread");
}

/// The measured throughputs as samples, drawn by `pipelab plot` as
/// ModelNet Fig. 5's CDF (one line per distillation).
fn plot_cdf(results: &[(&str, Vec<f64>, Vec<f64>)]) {
    let path = std::env::var("PIPELAB_FIG5_SVG")
        .map(PathBuf::from)
        .unwrap_or_else(|_| tmp("topo_fig5_cdf.svg"));
    let samples = serde_json::json!({
        "title": "Per-flow TCP throughput, ring 10x4, 20 flows (ModelNet Fig. 5)",
        "label": "throughput",
        "unit": "bit/s",
        "of": "flows",
        "samples": results
            .iter()
            .map(|(mode, _, got)| serde_json::json!({"name": mode, "values": got}))
            .collect::<Vec<_>>(),
    });
    let input = tmp("topo_fig5_samples.json");
    std::fs::write(&input, samples.to_string()).expect("samples");
    ok(&[
        "plot",
        &input.display().to_string(),
        "-o",
        &path.display().to_string(),
        "--kind",
        "cdf",
    ]);
    eprintln!("CDF written to {}", path.display());
}

#[test]
fn bad_input_is_refused_with_a_clear_message() {
    let file = write_topo(&chain(), "chain-bad.toml");
    let star = write_topo(
        &pipelab_topo::gen::star(3, &RoleAttrs::default()).expect("star"),
        "star3.toml",
    );
    let script = tmp("bad.script");
    std::fs::write(&script, "0s exec a true\n2s link r1\n").expect("script");
    let script = script.display().to_string();
    for (args, want) in [
        (
            vec!["topo", "up", "/nonexistent.toml"],
            "cannot read '/nonexistent.toml'",
        ),
        (
            vec!["topo", "up", &file, "--name", "a-b"],
            "topology name 'a-b'",
        ),
        (
            vec!["topo", "up", &file, "--prefix", "10.0.0.0/31"],
            "length '31'",
        ),
        (
            vec!["topo", "up", &file, "--prefix", "10.0.0/8"],
            "not an IPv4 address",
        ),
        (
            vec!["topo", "up", &star, "--prefix", "10.0.0.0/30"],
            "3 VNs do not fit",
        ),
        (
            vec!["topo", "up", &file, "--distill", "sideways"],
            "--distill 'sideways'",
        ),
        (
            vec!["topo", "exec", "--name", "nosuch", "a", "--", "true"],
            "topology 'nosuch' is not up",
        ),
        (
            vec!["topo", "link", "--name", "nosuch", "a", "b", "sideways"],
            "expected 'down', 'up' or 'set",
        ),
        (
            vec!["topo", "run", "--name", "nosuch", &script],
            "line 2: expected `link A B down [DURATION]|up`",
        ),
        (
            vec!["topo", "status", "--name", "nosuch"],
            "topology 'nosuch' is not up",
        ),
    ] {
        let o = pl(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}
