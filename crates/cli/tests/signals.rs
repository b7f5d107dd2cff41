//! The signal matrix: every live mode (shell, bridge, attach, `topo up
//! --foreground`) stopped by SIGHUP, SIGINT, SIGQUIT and SIGTERM, and
//! killed by SIGKILL followed by `pipelab cleanup`, leaves the host as
//! it found it. One helper ([`Snapshot`]) records what a mode may change
//! (rulesets, qdiscs, offloads, links, forwarding sysctls, namespaces,
//! `/run/pipelab`) before each run and compares it after; a pass proves
//! 0 differences in all 20 cells.
//!
//! The test bed is a namespace of the test's own (`plsigN`): the shell,
//! the bridge and the topology's emulator run inside it (`ip netns
//! exec`), attach shapes an interface in it; only a topology's VN
//! namespaces (under `/run/netns`) and pipelab's files under
//! `/run/pipelab` are outside it, and the snapshot covers them too.

mod common;

use common::{live, BIN};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The test's namespace and its interfaces.
struct Bed {
    ns: String,
    topo: String,
    topo_file: PathBuf,
    bridge_conf: PathBuf,
}

impl Bed {
    fn new() -> Bed {
        let id = std::process::id() % 100_000;
        let ns = format!("plsig{id}");
        let topo_file = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("sig{id}.gml"));
        std::fs::write(
            &topo_file,
            "graph [\n  node [ id 0 role \"transit\" ]\n  node [ id 1 role \"client\" ]\n  \
             node [ id 2 role \"client\" ]\n  edge [ source 1 target 0 bandwidth 10000000 delay 1 ]\n  \
             edge [ source 2 target 0 bandwidth 10000000 delay 1 ]\n]\n",
        )
        .expect("topology file");
        let bridge_conf =
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("sig{id}-bridge.conf"));
        std::fs::write(&bridge_conf, "pipe 1 config delay 1ms\n").expect("bridge config");
        let bed = Bed {
            ns,
            topo: format!("sig{id}"),
            topo_file,
            bridge_conf,
        };
        bed.remove();
        let n = &bed.ns;
        // An attached interface (at0, with an address and a peer), two
        // bridge ports with GRO on (which a bridge turns off), and an
        // xtables-style `ip mangle` table with only PREROUTING, as
        // iptables-nft leaves one: none of it may change.
        let script = format!(
            "set -e\nip netns add {n}\nip -n {n} link set lo up\n\
             ip -n {n} link add at0 type veth peer name at1\n\
             ip -n {n} addr add 10.251.0.1/24 dev at0\n\
             ip -n {n} link set at0 up; ip -n {n} link set at1 up\n\
             for p in bra brb; do ip -n {n} link add ${{p}}0 type veth peer name ${{p}}1; \
             ip -n {n} link set ${{p}}0 up; ip -n {n} link set ${{p}}1 up; \
             ip netns exec {n} ethtool -K ${{p}}0 gro on; done\n\
             ip netns exec {n} nft add table ip mangle\n\
             ip netns exec {n} nft add chain ip mangle PREROUTING '{{ type filter hook prerouting priority -150; policy accept; }}'\n"
        );
        let st = Command::new("sh")
            .args(["-c", &script])
            .status()
            .expect("sh");
        assert!(st.success(), "test bed: {script}");
        bed
    }

    fn remove(&self) {
        let _ = Command::new(BIN)
            .args(["topo", "down", "--name", &self.topo])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.ns])
            .stderr(Stdio::null())
            .status();
    }

    /// `ip netns exec NS ARGS...` as a command.
    fn exec(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns]).args(args);
        c
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        self.remove();
    }
}

/// What the host looks like, item by item: each item a command's
/// output (normalised: no counters, no dates) or a list of files.
#[derive(Debug, PartialEq, Eq)]
struct Snapshot(BTreeMap<String, String>);

/// Counters and comments out of a ruleset listing.
fn normalise(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let mut out = String::new();
            let mut words = l.split(' ').peekable();
            while let Some(w) = words.next() {
                // `[12:3456]` (iptables-save), `packets N bytes N` (nft).
                if w.starts_with('[') && w.ends_with(']') && w.contains(':') {
                    out.push_str("[:]");
                } else if w == "packets" || w == "bytes" {
                    out.push_str(w);
                    out.push_str(" N");
                    words.next();
                } else {
                    out.push_str(w);
                }
                out.push(' ');
            }
            out
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path under `dir`, with its kind (as `ls -R` would show them).
fn files(dir: &Path, out: &mut Vec<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let dir_too = e.file_type().is_ok_and(|t| t.is_dir());
        out.push(format!("{}{}", p.display(), if dir_too { "/" } else { "" }));
        if dir_too {
            files(&p, out);
        }
    }
}

impl Snapshot {
    /// The host now: in the root namespace and in the bed's, the
    /// rulesets (nft, iptables, ip6tables), qdiscs, links, forwarding
    /// sysctls; the offloads of the bed's interfaces; the named
    /// namespaces; the files under /run/pipelab.
    fn take(bed: &Bed) -> Snapshot {
        let mut m = BTreeMap::new();
        let run = |c: &mut Command| {
            let o = c.stdin(Stdio::null()).output().expect("snapshot tool");
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
        };
        let tools: [(&str, &[&str]); 8] = [
            ("nft", &["list", "ruleset"]),
            ("iptables-save", &[]),
            ("ip6tables-save", &[]),
            ("tc", &["qdisc", "show"]),
            ("ip", &["-d", "link", "show"]),
            ("ip", &["-6", "route", "show"]),
            ("cat", &["/proc/sys/net/ipv4/ip_forward"]),
            ("cat", &["/proc/sys/net/ipv6/conf/all/forwarding"]),
        ];
        for (tool, args) in tools {
            let key = format!("{tool} {}", args.join(" "));
            m.insert(
                format!("host: {key}"),
                normalise(&run(Command::new(tool).args(args))),
            );
            let mut args_ns = vec![tool];
            args_ns.extend_from_slice(args);
            m.insert(
                format!("{}: {key}", bed.ns),
                normalise(&run(&mut bed.exec(&args_ns))),
            );
        }
        for dev in ["at0", "bra0", "bra1", "brb0", "brb1"] {
            m.insert(
                format!("{}: ethtool -k {dev}", bed.ns),
                run(&mut bed.exec(&["ethtool", "-k", dev])),
            );
        }
        m.insert(
            "ip netns list".into(),
            run(Command::new("ip").args(["netns", "list"])),
        );
        let mut fs = Vec::new();
        files(Path::new("/run/pipelab"), &mut fs);
        fs.sort();
        m.insert("ls -R /run/pipelab".into(), fs.join("\n"));
        Snapshot(m)
    }

    /// The items that differ from `before`, each with the lines only one
    /// side has.
    fn differences(&self, before: &Snapshot) -> Vec<String> {
        let mut out = Vec::new();
        for (k, was) in &before.0 {
            let now = self.0.get(k).map(String::as_str).unwrap_or("");
            if now != was {
                let gone: Vec<&str> = was
                    .lines()
                    .filter(|l| !now.lines().any(|n| n == *l))
                    .collect();
                let new: Vec<&str> = now
                    .lines()
                    .filter(|l| !was.lines().any(|n| n == *l))
                    .collect();
                out.push(format!("{k}: gone {gone:?}, new {new:?}"));
            }
        }
        out
    }
}

/// How a mode is started, and the line on its standard error that says
/// it runs (its host changes made).
struct Mode {
    name: &'static str,
    args: Vec<String>,
    ready: &'static str,
}

fn modes(bed: &Bed) -> Vec<Mode> {
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    vec![
        Mode {
            name: "shell",
            args: s(&[
                "shell",
                "--link",
                "delay 1ms",
                "--",
                "sh",
                "-c",
                "echo pipelab-signals-ready >&2; exec sleep 60",
            ]),
            ready: "pipelab-signals-ready",
        },
        Mode {
            name: "bridge",
            args: s(&[
                "bridge",
                "bra0",
                "brb0",
                "--backend",
                "af-packet",
                "--offload",
                "off",
                "-f",
                &bed.bridge_conf.display().to_string(),
            ]),
            ready: "pipelab bridge: bra0 <-> brb0",
        },
        Mode {
            name: "attach",
            args: s(&["attach", "at0", "--both", "--", "delay", "1ms"]),
            ready: "shaped (netfilter queue",
        },
        Mode {
            name: "topo up --foreground",
            args: vec![
                "topo".into(),
                "up".into(),
                bed.topo_file.display().to_string(),
                "--foreground".into(),
                "--name".into(),
                bed.topo.clone(),
            ],
            ready: "up: 2 VNs",
        },
    ]
}

/// Wait (at most `limit`) for `child` to end.
fn wait_bounded(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let t0 = Instant::now();
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st);
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One cell: `mode` started in the bed, ended by `signal`; the host
/// compared with how it was before. `Err` says what differed.
fn cell(bed: &Bed, mode: &Mode, signal: &str) -> Result<(), String> {
    let before = Snapshot::take(bed);
    let log = PathBuf::from(common::tmp_path(&format!("sig-{signal}.log")));
    let err = std::fs::File::create(&log).expect("log");
    let mut args = vec![BIN.to_string()];
    args.extend(mode.args.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut child = bed
        .exec(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .expect("spawn");
    let text = || std::fs::read_to_string(&log).unwrap_or_default();
    let t0 = Instant::now();
    while !text().contains(mode.ready) {
        if t0.elapsed() > Duration::from_secs(30) || child.try_wait().ok().flatten().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{}: did not come up: {}", mode.name, text()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id().to_string();
    let sent = Command::new("kill")
        .args(["-s", signal, &pid])
        .status()
        .expect("kill");
    assert!(sent.success());
    let Some(status) = wait_bounded(&mut child, Duration::from_secs(20)) else {
        return Err(format!(
            "{} did not end within 20 s of SIG{signal}",
            mode.name
        ));
    };
    let mut problems = Vec::new();
    if signal == "KILL" {
        let o = Command::new(BIN).arg("cleanup").output().expect("cleanup");
        if !o.status.success() {
            problems.push(format!(
                "pipelab cleanup: {}: {}",
                o.status,
                String::from_utf8_lossy(&o.stderr)
            ));
        }
    } else {
        // An orderly stop: an exit status, not death by the signal (a
        // shell's is its command's, 128 + N).
        use std::os::unix::process::ExitStatusExt;
        let orderly = match mode.name {
            "shell" => status.code().is_some_and(|c| c > 128),
            _ => status.code() == Some(0),
        };
        if !orderly || status.signal().is_some() {
            problems.push(format!("ended by SIG{signal} as {status}: {}", text()));
        }
    }
    let _ = std::fs::remove_file(&log);
    // A namespace the kernel is still tearing down may take a moment.
    let t0 = Instant::now();
    let mut diff = Snapshot::take(bed).differences(&before);
    while !diff.is_empty() && t0.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(100));
        diff = Snapshot::take(bed).differences(&before);
    }
    problems.extend(diff);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} / SIG{signal}:\n  {}",
            mode.name,
            problems.join("\n  ")
        ))
    }
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (namespaces, nft, iptables, ethtool); run as root or with PIPELAB_LIVE=1"
)]
fn every_live_mode_leaves_the_host_as_it_found_it_whatever_stops_it() {
    let _g = live();
    let bed = Bed::new();
    let t0 = Instant::now();
    let mut failures = Vec::new();
    let mut cells = 0;
    for mode in modes(&bed) {
        for signal in ["HUP", "INT", "QUIT", "TERM", "KILL"] {
            cells += 1;
            if let Err(e) = cell(&bed, &mode, signal) {
                failures.push(e);
            }
        }
    }
    assert_eq!(cells, 20);
    assert!(
        failures.is_empty(),
        "{} of {cells} cells left the host changed ({:.1} s):\n{}",
        failures.len(),
        t0.elapsed().as_secs_f64(),
        failures.join("\n")
    );
    eprintln!(
        "signal matrix: {cells} cells, 0 differences, {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}
