//! Live reconfiguration through the one control protocol: while a probe
//! crosses a running emulation at 1000 packets/s, `pipelab --target NAME`
//! changes a pipe (a shell's downlink, a bridge's pipe, a topology's
//! link). A pass proves that no packet is lost and that every packet sent
//! after the command returned has the new delay (none keeps the old one,
//! the median is the new one ± 0.5 ms, and the first of them arrives
//! within the new one-way delay + 5 ms of the change), every packet sent
//! before it the old one; that `pipelab list` shows the emulation (and
//! `pipelab --target NAME top` reads it); and that a user of the group
//! who is not its owner (nor root) may read it but not change it, in all
//! three.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod common;
use common::{live, Bg, TwoHosts, BIN};

fn tmp(name: &str) -> String {
    format!(
        "{}/pipelab-reconf-{}-{name}",
        std::env::temp_dir().display(),
        std::process::id()
    )
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn pl(args: &[&str]) -> std::process::Output {
    Command::new(BIN).args(args).output().expect("run pipelab")
}

fn sh(cmd: &str) {
    let st = Command::new("sh").args(["-c", cmd]).status().expect("sh");
    assert!(st.success(), "failed: {cmd}");
}

/// Send 3 s of probe traffic at 1000 packets/s to `to` from `prefix`
/// (a namespace), changing the emulation with `change` after 1 s; then
/// check the receiver's series (`series`) and report: no loss, the old
/// delay before the change (`old_ms`), the new one after it (`new_ms`).
fn probe_across_change(
    prefix: &[&str],
    to: &str,
    series: &str,
    change: &[&str],
    old_ms: f64,
    new_ms: f64,
) -> Result<(), String> {
    let mut sender = Command::new(prefix[0]);
    sender
        .args(&prefix[1..])
        .args([
            BIN,
            "probe",
            "send",
            to,
            "--rate",
            "1000pps",
            "--duration",
            "3s",
        ])
        .arg("--json")
        .stdout(Stdio::piped());
    let sender = sender.spawn().expect("probe send");
    std::thread::sleep(Duration::from_secs(1));
    let t0 = now_ns();
    let changed = pl(change);
    let t1 = now_ns();
    let out = sender.wait_with_output().expect("probe send");
    if !changed.status.success() {
        return Err(format!(
            "{change:?}: {}",
            String::from_utf8_lossy(&changed.stderr)
        ));
    }
    let report: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "probe report: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })?;
    let (sent, received) = (report["sent"].as_u64(), report["received"].as_u64());
    if sent != Some(3000) || received != sent {
        return Err(format!("sent {sent:?}, received {received:?}: {report}"));
    }
    let text = std::fs::read_to_string(series).map_err(|e| format!("{series}: {e}"))?;
    let (mut before, mut after) = (Vec::new(), Vec::new());
    let mut first_new_arrival = None;
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (Some(sent), Some(got), Some(d)) = (
            f.get(2).and_then(|x| x.parse::<u64>().ok()),
            f.get(3).and_then(|x| x.parse::<u64>().ok()),
            f.get(4).and_then(|x| x.parse::<f64>().ok()),
        ) else {
            return Err(format!("bad series line '{line}'"));
        };
        if sent < t0 {
            before.push(d);
        } else if sent > t1 {
            after.push(d);
            first_new_arrival = Some(first_new_arrival.map_or(got, |g: u64| g.min(got)));
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let (lo_before, lo_after) = (
        before.iter().copied().fold(f64::INFINITY, f64::min),
        after.iter().copied().fold(f64::INFINITY, f64::min),
    );
    let (mb, ma) = (median(&mut before), median(&mut after));
    // A stall of this shared machine only adds delay to some packets;
    // what the change must do is exact: no packet sent after it keeps
    // the old delay, and the typical packet has the configured one.
    let first = first_new_arrival.map_or(f64::NAN, |g| (g as f64 - t1 as f64) / 1e6);
    if before.len() < 500
        || after.len() < 1000
        || (mb - old_ms).abs() > 0.5
        || (ma - new_ms).abs() > 0.5
        || lo_before < old_ms - 0.5
        || lo_after < new_ms - 0.5
        || first > new_ms + 5.0
    {
        return Err(format!(
            "before the change: {} packets, median {mb:.3} ms, least {lo_before:.3} ms (want {old_ms}); \
             after: {} packets, median {ma:.3} ms, least {lo_after:.3} ms (want {new_ms}); \
             first packet sent after it arrived {first:.1} ms after; the change took {:.1} ms",
            before.len(),
            after.len(),
            (t1 - t0) as f64 / 1e6
        ));
    }
    eprintln!(
        "{change:?}: before {mb:.3} ms, after {ma:.3} ms, first new packet after {first:.1} ms, change took {:.1} ms",
        (t1 - t0) as f64 / 1e6
    );
    Ok(())
}

/// A receiver with a series file, run by `prefix`.
fn receiver(prefix: &[&str], port: u16, series: &str) -> Bg {
    let _ = std::fs::remove_file(series);
    let mut c = Command::new(prefix[0]);
    c.args(&prefix[1..])
        .args([BIN, "probe", "recv", "--listen", &format!("0.0.0.0:{port}")])
        .args(["--series", series])
        .stderr(Stdio::null());
    let b = Bg(c.spawn().expect("probe recv"));
    std::thread::sleep(Duration::from_millis(300));
    b
}

/// The `pipelab` group (created for the test if it does not exist, and
/// then removed) and a user in it, removed when dropped.
struct Reader {
    user: String,
    created_group: bool,
}

impl Reader {
    fn new() -> Reader {
        let user = format!("plrc{}", std::process::id() % 100_000);
        let created_group = Command::new("getent")
            .args(["group", "pipelab"])
            .output()
            .map(|o| !o.status.success())
            .unwrap_or(true);
        if created_group {
            sh("groupadd pipelab");
        }
        sh(&format!(
            "useradd -M -N -g pipelab -s /usr/sbin/nologin {user}"
        ));
        Reader {
            user,
            created_group,
        }
    }

    /// `pipelab ARGS` as this user (the binary copied where they can run
    /// it).
    fn run(&self, args: &[&str]) -> std::process::Output {
        let u = nix::unistd::User::from_name(&self.user)
            .ok()
            .flatten()
            .expect("user");
        let bin = tmp("pipelab-bin");
        if std::fs::metadata(&bin).is_err() {
            std::fs::copy(BIN, &bin).expect("copy binary");
        }
        Command::new(&bin)
            .args(args)
            .uid(u.uid.as_raw())
            .gid(u.gid.as_raw())
            .output()
            .expect("run as user")
    }
}

impl Reader {
    /// As this user: `pipelab --target NAME pipe show` (its listing, which
    /// must succeed) and `pipelab --target NAME CHANGE` (its error, which
    /// must refuse).
    fn read_but_not_change(&self, name: &str, change: &[&str]) -> (String, String) {
        let show = self.run(&["--target", name, "pipe", "show"]);
        assert!(
            show.status.success(),
            "a reader's pipe show: {}",
            String::from_utf8_lossy(&show.stderr)
        );
        let mut args = vec!["--target", name];
        args.extend_from_slice(change);
        let c = self.run(&args);
        assert!(!c.status.success(), "a reader changed {name}: {change:?}");
        (
            String::from_utf8_lossy(&show.stdout).into_owned(),
            String::from_utf8_lossy(&c.stderr).into_owned(),
        )
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.user).output();
        if self.created_group {
            let _ = Command::new("groupdel").arg("pipelab").output();
        }
        let _ = std::fs::remove_file(tmp("pipelab-bin"));
    }
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn a_shell_downlink_changes_under_traffic() {
    let Some(_g) = live() else { return };
    let name = format!("rc-shell-{}", std::process::id());
    let series = tmp("shell.csv");
    // Made first: the socket is given to the group when it is created.
    let reader = Reader::new();
    // The receiver runs inside the shell, behind pipe 2 (the downlink).
    let mut shell = Command::new(BIN)
        .args(["shell", "--name", &name, "--link", "delay 10ms", "--"])
        .args([BIN, "probe", "recv", "--listen", "0.0.0.0:7791"])
        .args(["--series", &series])
        .stderr(Stdio::piped())
        .spawn()
        .expect("pipelab shell");
    let mut first = String::new();
    let mut err = BufReader::new(shell.stderr.take().expect("stderr"));
    err.read_line(&mut first).expect("shell banner");
    let shell = Bg(shell);
    let inside = first
        .split("inside ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .unwrap_or_else(|| panic!("no address in '{first}'"))
        .to_string();
    std::thread::sleep(Duration::from_millis(300));
    let list = String::from_utf8_lossy(&pl(&["list"]).stdout).into_owned();
    assert!(
        list.lines()
            .any(|l| l.starts_with(&name) && l.contains("shell")),
        "{list}"
    );
    let r = probe_across_change(
        &["env"],
        &format!("{inside}:7791"),
        &series,
        &["--target", &name, "pipe", "2", "config", "delay", "50ms"],
        10.0,
        50.0,
    );
    // A user of the group who is not the owner reads but cannot change.
    let show = reader.run(&["--target", &name, "pipe", "show"]);
    let change = reader.run(&["--target", &name, "pipe", "2", "config", "delay", "1ms"]);
    let after =
        String::from_utf8_lossy(&pl(&["--target", &name, "pipe", "show"]).stdout).into_owned();
    drop(reader);
    // SIGTERM reaches the command (forwarded): the shell then cleans up.
    let st = shell.stop();
    assert_eq!(st.code(), Some(128 + 15), "{st:?}");
    let _ = std::fs::remove_file(&series);
    if let Err(e) = r {
        panic!("{e}");
    }
    assert!(
        show.status.success()
            && String::from_utf8_lossy(&show.stdout).contains("pipe 2 config delay 50ms"),
        "{}",
        String::from_utf8_lossy(&show.stderr)
    );
    let e = String::from_utf8_lossy(&change.stderr);
    assert!(
        !change.status.success() && e.contains("only its owner or root may change it"),
        "{e}"
    );
    assert!(after.contains("pipe 2 config delay 50ms"), "{after}");
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn a_bridge_pipe_changes_under_traffic() {
    let Some(_g) = live() else { return };
    let hosts = TwoHosts::new("rc", "pr", "10.79.0");
    let [a, b] = hosts.ns.clone();
    let conf = tmp("bridge.conf");
    std::fs::write(
        &conf,
        "pipe 1 config delay 10ms\nadd 100 pipe 1 ip from any to any\n",
    )
    .expect("config");
    let name = format!("rc-bridge-{}", std::process::id());
    // Made first: the socket is given to the group when it is created.
    let reader = Reader::new();
    let br = Bg(Command::new(BIN)
        .args(["bridge", &hosts.ports[0], &hosts.ports[1], "-f", &conf])
        .args(["--name", &name])
        .spawn()
        .expect("pipelab bridge"));
    std::thread::sleep(Duration::from_millis(800));
    sh(&format!(
        "ip netns exec {a} ping -c 2 -i 0.2 -q 10.79.0.2 >/dev/null"
    ));
    let series = tmp("bridge.csv");
    let rx = receiver(&["ip", "netns", "exec", &b], 7792, &series);
    let r = probe_across_change(
        &["ip", "netns", "exec", &a],
        "10.79.0.2:7792",
        &series,
        &["--target", &name, "pipe", "1", "config", "delay", "30ms"],
        10.0,
        30.0,
    );
    drop(rx);
    let list = String::from_utf8_lossy(&pl(&["list"]).stdout).into_owned();
    let top = pl(&[
        "--target",
        &name,
        "top",
        "--count",
        "1",
        "--interval",
        "0.1",
    ]);
    let (show, change) =
        reader.read_but_not_change(&name, &["pipe", "1", "config", "delay", "1ms"]);
    drop(reader);
    assert!(br.stop().success());
    drop(hosts);
    let _ = std::fs::remove_file(&conf);
    let _ = std::fs::remove_file(&series);
    if let Err(e) = r {
        panic!("{e}");
    }
    assert!(
        list.lines()
            .any(|l| l.starts_with(&name) && l.contains("bridge")),
        "{list}"
    );
    let top_out = String::from_utf8_lossy(&top.stdout);
    assert!(
        top.status.success() && top_out.contains(&name) && top_out.contains("1 pipes, 1 rules"),
        "top --target: {top_out}{}",
        String::from_utf8_lossy(&top.stderr)
    );
    assert!(show.contains("pipe 1 config delay 30ms"), "{show}");
    assert!(
        change.contains("only its owner or root may change it"),
        "{change}"
    );
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn a_topology_link_changes_under_traffic() {
    let Some(_g) = live() else { return };
    let name = "rctopo";
    // Made first: the socket is given to the group when it is created.
    let reader = Reader::new();
    let file = tmp("two.gml");
    std::fs::write(
        &file,
        "graph [
  node [ id 0 role \"stub\" label \"r\" ]
  node [ id 1 role \"client\" label \"vn0\" ]
  node [ id 2 role \"client\" label \"vn1\" ]
  edge [ source 1 target 0 bandwidth 1000000000 delay 2 ]
  edge [ source 2 target 0 bandwidth 1000000000 delay 3 ]
]
",
    )
    .expect("topology");
    let _ = pl(&["topo", "down", "--name", name]);
    let up = pl(&["topo", "up", &file, "--name", name]);
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let series = tmp("topo.csv");
    let rx = receiver(
        &[BIN, "topo", "exec", "--name", name, "vn1", "--"],
        7793,
        &series,
    );
    // 2 + 3 ms of links, plus two transmissions of a 100-byte packet at
    // 1 Gbit/s (1.6 µs); then the second link at 20 ms.
    let r = probe_across_change(
        &[BIN, "topo", "exec", "--name", name, "vn0", "--"],
        "10.0.0.2:7793",
        &series,
        &["--target", name, "link", "r", "vn1", "set", "delay", "20ms"],
        5.0,
        22.0,
    );
    let list = String::from_utf8_lossy(&pl(&["list"]).stdout).into_owned();
    let (show, change) =
        reader.read_but_not_change(name, &["link", "r", "vn1", "set", "delay", "1ms"]);
    drop(reader);
    drop(rx);
    let _ = pl(&["topo", "down", "--name", name]);
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(&series);
    if let Err(e) = r {
        panic!("{e}");
    }
    assert!(
        list.lines()
            .any(|l| l.starts_with(name) && l.contains("topo")),
        "{list}"
    );
    // A topology's pipes are its own, not the language's: the reader's
    // `pipe show` succeeded (checked) and lists none of them.
    assert!(!show.contains("error"), "{show}");
    assert!(
        change.contains("only its owner or root may change it"),
        "{change}"
    );
}
