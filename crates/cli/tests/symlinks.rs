//! Root writing where another user planted a symbolic link.
//!
//! With `fs.protected_symlinks=0` (set for the test, restored after), an
//! unprivileged user plants, in a sticky world-writable directory (as
//! `/tmp`), symbolic links to files of root's at every name root's
//! commands will write: each output path option of each subcommand, the
//! pages of `pipelab man DIR`, pipelabd's socket and state directory.
//! Root then runs each command; every one must refuse the link, naming
//! it, and afterwards no file of root's has changed and no file was made
//! in root's directory.

#[path = "daemon_common/mod.rs"]
mod daemon_common;

use daemon_common::{live, open_dir, Pld, BIN, PIPELABD};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The unprivileged user that plants the links (`nobody`).
const PLANTER: &str = "65534";

/// Sets a sysctl for the test and puts the old value back when dropped.
struct Sysctl {
    path: &'static str,
    old: String,
}

impl Sysctl {
    fn set(path: &'static str, value: &str) -> Sysctl {
        let old = std::fs::read_to_string(path).expect("read sysctl");
        std::fs::write(path, value).expect("write sysctl");
        Sysctl {
            path,
            old: old.trim().to_string(),
        }
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        let _ = std::fs::write(self.path, &self.old);
    }
}

/// Runs `args` of `bin` as root, killed after 20 s; returns the exit
/// status (None if killed) and stderr.
fn run_bounded(bin: &str, args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(bin)
        .args(args)
        .env("PIPELAB_RUN_DIR", "/nonexistent-pipelab-test-run")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let t0 = Instant::now();
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            let mut err = String::new();
            use std::io::Read;
            let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut err));
            return (st.code(), err);
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            return (None, String::new());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every file under `dir` with its contents and inode.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>, u64, u32)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        let p = e.path();
        let m = std::fs::symlink_metadata(&p).expect("meta");
        let bytes = if m.is_file() {
            std::fs::read(&p).expect("read")
        } else {
            Vec::new()
        };
        out.push((p, bytes, m.ino(), m.mode()));
    }
    out.sort();
    out
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (sysctl, another uid, a shell); run as root or with PIPELAB_LIVE=1"
)]
fn root_writes_through_no_planted_link() {
    let Some(_g) = live() else { return };
    let _sysctl = Sysctl::set("/proc/sys/fs/protected_symlinks", "0");
    let base = open_dir(None);
    // Root's files, in a directory of root's.
    let victims = base.path().join("root");
    std::fs::create_dir(&victims).expect("victims");
    std::fs::set_permissions(&victims, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let victim = victims.join("victim");
    std::fs::write(&victim, "root's file\n").expect("victim");
    std::fs::write(victims.join("pipelab.1"), "root's page\n").expect("page");
    let conf = victims.join("link.conf");
    std::fs::write(
        &conf,
        "pipe 1 config bw 10Mbit/s delay 5ms\nadd 100 pipe 1 ip from any to any\n",
    )
    .expect("conf");
    let report = victims.join("report.json");
    let out = Command::new(BIN)
        .args([
            "sim",
            conf.to_str().unwrap(),
            "--traffic",
            "cbr rate 100pps size 500B duration 1s",
            "--interval",
            "100ms",
            "--json",
        ])
        .output()
        .expect("sim");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(&report, &out.stdout).expect("report");
    let before = snapshot(&victims);

    // The shared directory: sticky, world-writable, as /tmp.
    let shared = base.path().join("shared");
    std::fs::create_dir(&shared).expect("shared");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    let names = [
        "pcap", "events", "series", "flow", "plot.svg", "gen.gml", "save", "stats", "spcap",
        "sevents", "sseries", "probe", "dpcap", "sock", "state",
    ];
    let mut script = String::new();
    for n in names {
        script.push_str(&format!(
            "ln -s {} {}/{n}\n",
            victim.display(),
            shared.display()
        ));
    }
    // A directory link (man DIR, a socket's directory) to root's directory.
    for n in ["man", "sockdir"] {
        script.push_str(&format!(
            "ln -s {} {}/{n}\n",
            victims.display(),
            shared.display()
        ));
    }
    // A state directory of the planter's, with a link where the lock goes.
    script.push_str(&format!(
        "mkdir -m 0777 {s}/ustate && ln -s {} {s}/ustate/lock\n",
        victim.display(),
        s = shared.display()
    ));
    let st = Command::new("setpriv")
        .args([
            &format!("--reuid={PLANTER}"),
            &format!("--regid={PLANTER}"),
            "--clear-groups",
            "sh",
            "-ec",
            &script,
        ])
        .status()
        .expect("setpriv");
    assert!(st.success(), "planting the links failed");
    let s = |n: &str| shared.join(n).to_str().unwrap().to_string();
    let conf_s = conf.to_str().unwrap().to_string();
    let traffic = "cbr rate 100pps size 500B duration 1s";

    // A daemon of root's (its own socket and state, in root's dirs) for
    // `save`.
    let ddir = open_dir(None);
    let (daemon, _) = Pld::start(ddir.path(), &["--plane", "none"]);
    let dsock = daemon.socket.to_str().unwrap().to_string();

    let cases: Vec<(&str, &str, Vec<String>)> = vec![
        (
            "sim --pcap",
            BIN,
            vec![
                "sim".into(),
                conf_s.clone(),
                "--traffic".into(),
                traffic.into(),
                "--pcap".into(),
                s("pcap"),
            ],
        ),
        (
            "sim --events",
            BIN,
            vec![
                "sim".into(),
                conf_s.clone(),
                "--traffic".into(),
                traffic.into(),
                "--events".into(),
                s("events"),
            ],
        ),
        (
            "sim --series",
            BIN,
            vec![
                "sim".into(),
                conf_s.clone(),
                "--traffic".into(),
                traffic.into(),
                "--interval".into(),
                "100ms".into(),
                "--series".into(),
                s("series"),
            ],
        ),
        (
            "sim --flow-series",
            BIN,
            vec![
                "sim".into(),
                conf_s.clone(),
                "--traffic".into(),
                traffic.into(),
                "--interval".into(),
                "100ms".into(),
                "--flow-series".into(),
                s("flow"),
            ],
        ),
        (
            "plot -o",
            BIN,
            vec![
                "plot".into(),
                report.to_str().unwrap().into(),
                "-o".into(),
                s("plot.svg"),
            ],
        ),
        (
            "topo gen -o",
            BIN,
            vec![
                "topo".into(),
                "gen".into(),
                "star".into(),
                "-o".into(),
                s("gen.gml"),
            ],
        ),
        ("man DIR", BIN, vec!["man".into(), s("man")]),
        (
            "save FILE",
            BIN,
            vec!["--socket".into(), dsock.clone(), "save".into(), s("save")],
        ),
        (
            "shell --stats",
            BIN,
            vec![
                "shell".into(),
                "--link".into(),
                "delay 1ms".into(),
                "--stats".into(),
                s("stats"),
                "--".into(),
                "true".into(),
            ],
        ),
        (
            "shell --pcap",
            BIN,
            vec![
                "shell".into(),
                "--link".into(),
                "delay 1ms".into(),
                "--pcap".into(),
                s("spcap"),
                "--".into(),
                "true".into(),
            ],
        ),
        (
            "shell --events",
            BIN,
            vec![
                "shell".into(),
                "--link".into(),
                "delay 1ms".into(),
                "--events".into(),
                s("sevents"),
                "--".into(),
                "true".into(),
            ],
        ),
        (
            "shell --series",
            BIN,
            vec![
                "shell".into(),
                "--link".into(),
                "delay 1ms".into(),
                "--interval".into(),
                "100ms".into(),
                "--series".into(),
                s("sseries"),
                "--".into(),
                "true".into(),
            ],
        ),
        (
            "probe recv --series",
            BIN,
            vec![
                "probe".into(),
                "recv".into(),
                "--listen".into(),
                "127.0.0.1:0".into(),
                "--series".into(),
                s("probe"),
            ],
        ),
        (
            "pipelabd --pcap",
            PIPELABD,
            vec![
                "--socket".into(),
                ddir.path().join("d2.sock").to_str().unwrap().into(),
                "--state-dir".into(),
                ddir.path().join("d2").to_str().unwrap().into(),
                "--pcap".into(),
                s("dpcap"),
            ],
        ),
        (
            "pipelabd --socket (a link)",
            PIPELABD,
            vec![
                "--plane".into(),
                "none".into(),
                "--socket".into(),
                s("sock"),
                "--state-dir".into(),
                ddir.path().join("d3").to_str().unwrap().into(),
            ],
        ),
        (
            "pipelabd --socket (in a linked dir)",
            PIPELABD,
            vec![
                "--plane".into(),
                "none".into(),
                "--socket".into(),
                format!("{}/s.sock", s("sockdir")),
                "--state-dir".into(),
                ddir.path().join("d4").to_str().unwrap().into(),
            ],
        ),
        (
            "pipelabd --state-dir (a link)",
            PIPELABD,
            vec![
                "--plane".into(),
                "none".into(),
                "--socket".into(),
                ddir.path().join("d5.sock").to_str().unwrap().into(),
                "--state-dir".into(),
                s("state"),
            ],
        ),
        (
            "pipelabd --state-dir (the planter's)",
            PIPELABD,
            vec![
                "--plane".into(),
                "none".into(),
                "--socket".into(),
                ddir.path().join("d6.sock").to_str().unwrap().into(),
                "--state-dir".into(),
                s("ustate"),
            ],
        ),
    ];
    let mut failures = Vec::new();
    for (what, bin, args) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, err) = run_bounded(bin, &args);
        let refused = matches!(code, Some(c) if c != 0)
            && (err.contains("symbolic link") || err.contains("belongs to uid 65534"));
        if !refused {
            failures.push(format!("{what}: exit {code:?}: {err}"));
        }
    }
    drop(daemon);
    let after = snapshot(&victims);
    assert_eq!(before, after, "a file of root's was written or made");
    assert!(failures.is_empty(), "not refused:\n{}", failures.join("\n"));
    eprintln!("SYMLINKS cases {} root files written 0", cases.len());
}
