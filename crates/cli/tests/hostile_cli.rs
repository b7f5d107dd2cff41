//! The hostile suite of the command line: inputs and situations that
//! used to end in a silent surprise, a late failure or a message that
//! named nothing, each a case of a table (arguments, user, expected exit
//! status, expected fragment of stderr and stdout). A case fails if the
//! status or a fragment differs, so each proves its message word for
//! word where it matters.
//!
//! * [`refused_and_warned_inputs`] runs as whoever runs the tests;
//! * [`without_root_a_live_mode_says_what_it_needs`] runs the binary
//!   under a uid with no privilege (it needs root to switch uid);
//! * the live tests run real namespaces, TAP devices and netfilter
//!   queues.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;
use common::{live, BIN};

/// An unprivileged uid with no account: nothing may run as it but what
/// any user may run.
const NOBODY: u32 = 4_000_291;

/// One case: `pipelab ARGS` as `uid` (or as the tests' user).
struct Case {
    /// What the case proves.
    what: &'static str,
    args: Vec<String>,
    uid: Option<u32>,
    /// Exit status.
    code: i32,
    /// Fragments stderr must hold.
    stderr: Vec<String>,
    /// Fragments stdout must hold.
    stdout: Vec<String>,
    /// A fragment stdout must not hold (a command that must not run).
    stdout_not: Option<&'static str>,
}

impl Case {
    fn new(what: &'static str, args: &[&str], code: i32, stderr: &[&str]) -> Case {
        Case {
            what,
            args: args.iter().map(|s| s.to_string()).collect(),
            uid: None,
            code,
            stderr: stderr.iter().map(|s| s.to_string()).collect(),
            stdout: Vec::new(),
            stdout_not: None,
        }
    }

    fn stdout(mut self, fragments: &[&str]) -> Case {
        self.stdout = fragments.iter().map(|s| s.to_string()).collect();
        self
    }

    fn run_as(mut self, uid: u32) -> Case {
        self.uid = Some(uid);
        self
    }

    fn never_prints(mut self, text: &'static str) -> Case {
        self.stdout_not = Some(text);
        self
    }

    /// Run it in `dir` (the registry of emulations in `dir/run`); returns
    /// what went wrong, if anything.
    fn check(&self, dir: &Path) -> Result<(), String> {
        // Another user runs the copy in `dir` ([`Inputs::new`]): the
        // checkout's own binary may sit below a directory only root can
        // search (a clone in a 0700 temporary directory).
        let copy = dir.join("pipelab");
        let bin = match self.uid {
            Some(_) if copy.exists() => copy,
            _ => PathBuf::from(BIN),
        };
        let mut cmd = Command::new(bin);
        cmd.args(&self.args)
            .current_dir(dir)
            .env("PIPELAB_RUN_DIR", dir.join("run"))
            .stdin(Stdio::null());
        if let Some(uid) = self.uid {
            cmd.uid(uid).gid(uid);
        }
        let o = cmd
            .output()
            .map_err(|e| format!("{}: cannot run: {e}", self.what))?;
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        let code = o.status.code().unwrap_or(-1);
        let mut wrong = Vec::new();
        if code != self.code {
            wrong.push(format!("exit {code}, want {}", self.code));
        }
        for f in &self.stderr {
            if !err.contains(f.as_str()) {
                wrong.push(format!("stderr lacks {f:?}"));
            }
        }
        for f in &self.stdout {
            if !out.contains(f.as_str()) {
                wrong.push(format!("stdout lacks {f:?}"));
            }
        }
        if let Some(f) = self.stdout_not {
            if out.contains(f) {
                wrong.push(format!("stdout has {f:?}"));
            }
        }
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{} (pipelab {}): {}\n  stdout: {out}\n  stderr: {err}",
                self.what,
                self.args.join(" "),
                wrong.join("; ")
            ))
        }
    }
}

/// Run every case; fail naming each that went wrong.
fn run_table(cases: &[Case], dir: &Path) {
    let failed: Vec<String> = cases.iter().filter_map(|c| c.check(dir).err()).collect();
    assert!(
        failed.is_empty(),
        "{} of {} cases failed:\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n")
    );
}

/// A directory every user can read, with the inputs of the cases.
struct Inputs {
    dir: tempfile::TempDir,
}

/// Two nodes named `a`.
const DUPLICATE_GML: &str = "graph [\n node [ id 0 role \"stub\" name \"r\" ]\n node [ id 1 role \"client\" name \"a\" ]\n node [ id 2 role \"client\" name \"a\" ]\n edge [ source 0 target 1 ]\n edge [ source 0 target 2 ]\n]\n";

/// The same in TOML.
const DUPLICATE_TOML: &str = "[[node]]\nid = 0\nrole = \"stub\"\nname = \"r\"\n\n[[node]]\nid = 1\nrole = \"client\"\nname = \"a\"\n\n[[node]]\nid = 2\nrole = \"client\"\nname = \"a\"\n\n[[link]]\na = 0\nb = 1\n\n[[link]]\na = 0\nb = 2\n";

/// Two pieces: routers 0 and 1 unjoined; VNs 2 and 3 behind 0, VN 4
/// behind 1 (ModelNet's GML: unnamed nodes).
const DISCONNECTED_GML: &str = "graph [\n node [ id 0 role \"transit\" ]\n node [ id 1 role \"transit\" ]\n node [ id 2 role \"client\" ]\n node [ id 3 role \"client\" ]\n node [ id 4 role \"client\" ]\n edge [ source 2 target 0 bandwidth \"10Mbit/s\" delay 1 ]\n edge [ source 3 target 0 bandwidth \"10Mbit/s\" delay 1 ]\n edge [ source 4 target 1 bandwidth \"10Mbit/s\" delay 1 ]\n]\n";

/// The warning `topo distill` and `topo up` give for [`DISCONNECTED_GML`].
const DISCONNECTED_WARNING: &str = "the topology is not connected: 4 of 6 routes between its 3 VNs have no path (2 components: [n0, n2, n3], [n1, n4])";

impl Inputs {
    fn new() -> Inputs {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        std::fs::copy(BIN, dir.path().join("pipelab")).expect("copy of the binary");
        std::fs::set_permissions(
            dir.path().join("pipelab"),
            std::fs::Permissions::from_mode(0o755),
        )
        .expect("chmod");
        let i = Inputs { dir };
        for (name, text) in [
            ("dup.gml", DUPLICATE_GML),
            ("dup.toml", DUPLICATE_TOML),
            ("disc.gml", DISCONNECTED_GML),
            (
                "bw0.conf",
                "pipe 1 config bw 0 delay 5ms\nadd 100 pipe 1 ip from any to any\n",
            ),
        ] {
            std::fs::write(i.path(name), text).expect("write input");
        }
        std::fs::create_dir(i.path("run")).expect("run dir");
        std::fs::set_permissions(i.path("run"), std::fs::Permissions::from_mode(0o1777))
            .expect("chmod");
        i
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn arg(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
}

/// The inputs of the hardening issue that were accepted silently, failed
/// late or named nothing (each case: what it proves, arguments, status,
/// stderr fragments).
#[test]
fn refused_and_warned_inputs() {
    let i = Inputs::new();
    let (dup, dup_toml, disc, bw0) = (
        i.arg("dup.gml"),
        i.arg("dup.toml"),
        i.arg("disc.gml"),
        i.arg("bw0.conf"),
    );
    let dup_msg = format!("error: {dup}: line 4: field `name`: nodes 1 and 2 are both named 'a' (names must be unique: commands name nodes by them); node 1 is on line 3");
    let no_dir = i.arg("no/such/dir/stats.json");
    let cases = vec![
        Case::new(
            "a probe of no packet is refused before it starts (it printed 'no report')",
            &["probe", "send", "127.0.0.1:9", "--duration", "0s"],
            2,
            &["probe send: a duration of 0ms at 1000 packets/s sends no packet: give at least 500us (one packet)"],
        ),
        Case::new(
            "so is one too short for its rate",
            &["probe", "send", "127.0.0.1:9", "--rate", "1pps", "--duration", "400ms"],
            2,
            &["probe send: a duration of 400ms at 1 packets/s sends no packet: give at least 500ms (one packet)"],
        ),
        Case::new(
            "topo distill refuses the duplicate names topo up refuses (GML)",
            &["topo", "distill", &dup],
            2,
            &[&dup_msg],
        ),
        Case::new(
            "topo up refuses them with the same message, before anything is made",
            &["topo", "up", &dup, "--name", "h9dup"],
            2,
            &[&dup_msg],
        ),
        Case::new(
            "topo distill refuses duplicate names in TOML",
            &["topo", "distill", &dup_toml],
            2,
            &[&format!("error: {dup_toml}: nodes 1 and 2 are both named 'a' (names must be unique: commands name nodes by them)")],
        ),
        Case::new(
            "a disconnected topology is distilled with a warning naming its components",
            &["topo", "distill", &disc],
            0,
            &[&format!("warning: {disc}: {DISCONNECTED_WARNING}")],
        )
        .stdout(&["routes: 2 (4 unreachable)"]),
        Case::new(
            "bw 0 is accepted and shown as what it means",
            &["check", &bw0],
            0,
            &[],
        )
        .stdout(&["pipe 1 config bw unlimited delay 5ms\n"]),
        Case::new(
            "sim's report shows it too",
            &["sim", &bw0, "--traffic", "cbr rate 100pps size 1000B duration 1s"],
            0,
            &[],
        )
        .stdout(&["bw unlimited delay 5ms"]),
        Case::new(
            "a --stats path that cannot be written is refused before the shell runs, named",
            &["shell", "--stats", &no_dir, "--link", "delay 1ms", "--", "echo", "RAN"],
            2,
            &[&format!("--stats {no_dir}: cannot write: No such file or directory (os error 2)")],
        )
        .never_prints("RAN"),
        Case::new(
            "and before a bridge opens its ports",
            &["bridge", "lo", "h9none0", "-f", &bw0, "--stats", &i.arg("run")],
            2,
            &[&format!("--stats {}: cannot write: Is a directory (os error 21)", i.arg("run"))],
        ),
    ];
    run_table(&cases, i.dir.path());
    assert!(!i.path("no").exists());
}

/// A user without privileges: each live mode says it needs root (or
/// which capabilities) and which it lacks, before it creates anything;
/// they used to print "Operation not permitted (os error 1)" or "cannot
/// create /run/pipelab/topo/NAME.log". What any user may run still runs.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "needs root (to run the binary under another uid); run as root or with PIPELAB_LIVE=1"
)]
fn without_root_a_live_mode_says_what_it_needs() {
    let Some(_g) = live() else { return };
    let i = Inputs::new();
    let bw0 = i.arg("bw0.conf");
    let dumbbell = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/dumbbell.gml");
    let dumbbell = std::fs::canonicalize(dumbbell).expect("example");
    let gml = i.path("dumbbell.gml");
    std::fs::copy(&dumbbell, &gml).expect("copy");
    let gml = gml.display().to_string();
    let lacks = |caps: &str| {
        format!("this process (uid {NOBODY}) lacks {caps}: run it as root, e.g. with sudo")
    };
    let ns_caps = "CAP_NET_ADMIN, CAP_NET_RAW and CAP_SYS_ADMIN";
    let cases = vec![
        Case::new(
            "shell",
            &["shell", "--link", "delay 1ms", "--", "echo", "RAN"],
            1,
            &[
                &format!("pipelab shell: the shell needs root, or the capabilities {ns_caps} (network namespaces and TAP devices); "),
                &lacks(ns_caps),
            ],
        )
        .run_as(NOBODY)
        .never_prints("RAN"),
        Case::new(
            "bridge",
            &["bridge", "lo", "h9none0", "-f", &bw0],
            1,
            &[
                "pipelab bridge: the bridge needs root, or the capabilities CAP_NET_ADMIN and CAP_NET_RAW (packet sockets on the interfaces); ",
                &lacks("CAP_NET_ADMIN and CAP_NET_RAW"),
            ],
        )
        .run_as(NOBODY),
        Case::new(
            "topo up",
            &["topo", "up", &gml, "--name", "h9nobody"],
            2,
            &[
                &format!("error: pipelab topo up needs root, or the capabilities {ns_caps} (network namespaces and TAP devices); "),
                &lacks(ns_caps),
            ],
        )
        .run_as(NOBODY),
        Case::new(
            "sim runs for anyone",
            &["sim", &bw0, "--traffic", "cbr rate 100pps size 1000B duration 1s"],
            0,
            &[],
        )
        .run_as(NOBODY)
        .stdout(&["bw unlimited delay 5ms"]),
        Case::new(
            "topo distill runs for anyone",
            &["topo", "distill", &gml],
            0,
            &[],
        )
        .run_as(NOBODY)
        .stdout(&["routes: 12 (0 unreachable)"]),
    ];
    run_table(&cases, i.dir.path());
    for (what, p) in [
        ("topology log", "/run/pipelab/topo/h9nobody.log"),
        ("topology state", "/run/pipelab/topo/h9nobody.json"),
    ] {
        assert!(!Path::new(p).exists(), "{what} {p} was made");
    }
    assert_eq!(
        std::fs::read_dir(i.path("run")).expect("run dir").count(),
        0,
        "nothing registered"
    );
}

/// Host mode on a netfilter queue another socket holds said "Operation
/// not permitted". A pass proves pipelabd refuses it at start, exit 1,
/// saying the queue is in use and by which socket, and leaves no table.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn host_mode_on_a_queue_in_use_says_so() {
    let Some(_g) = live() else { return };
    use pipelab_io::backends::nfqueue::{NfQueue, QueueOptions};
    let queue_num = 7393;
    let held = NfQueue::open(QueueOptions {
        queue_num,
        max_len: 16,
        copy_range: 128,
    })
    .expect("hold the queue");
    let i = Inputs::new();
    let pipelabd = Path::new(BIN).with_file_name("pipelabd");
    let o = Command::new(pipelabd)
        .args(["--plane", "host", "--queue-num", &queue_num.to_string()])
        .args([
            "--table",
            "pltest_h9q",
            "--name",
            "h9q",
            "--scope",
            "127.0.0.99",
        ])
        .arg("--socket")
        .arg(i.path("pl.sock"))
        .arg("--state-dir")
        .arg(i.path("state"))
        .env("PIPELAB_RUN_DIR", i.path("run"))
        .stdin(Stdio::null())
        .output()
        .expect("run pipelabd");
    drop(held);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "stderr: {err}");
    assert!(
        err.contains(&format!("cannot start host mode (nftables table pltest_h9q): netfilter queue {queue_num} is in use: another socket (netlink port id ")),
        "stderr: {err}"
    );
    assert!(
        err.contains("is bound to it; stop that process or choose another queue number"),
        "stderr: {err}"
    );
    let tables = Command::new("nft")
        .args(["list", "tables"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    assert!(!tables.contains("pltest_h9q"), "table left: {tables}");
    assert!(!i.path("pl.sock").exists(), "socket left");
}

/// Run `pipelab ARGS`: status, stdout, stderr.
fn pipelab(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run pipelab");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Stops topology `name` however the test ends.
struct Down(&'static str);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = pipelab(&["topo", "down", "--name", self.0]);
    }
}

/// A disconnected topology with unnamed nodes (ModelNet's GML). A pass
/// proves `topo up` warns naming its components (it came up silently),
/// and `topo cross` takes the VN names `topo status` prints (`n2`, which
/// it refused as "no VN 'n2'"), while a pair with no path is still
/// refused as before.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn a_disconnected_topology_warns_and_takes_the_names_status_prints() {
    let Some(_g) = live() else { return };
    let i = Inputs::new();
    let disc = i.arg("disc.gml");
    let _ = pipelab(&["topo", "down", "--name", "h9disc"]);
    let down = Down("h9disc");
    let (code, out, err) = pipelab(&["topo", "up", &disc, "--name", "h9disc"]);
    assert_eq!(code, 0, "topo up: {out} {err}");
    assert!(
        err.contains(&format!("warning: {disc}: {DISCONNECTED_WARNING}")),
        "stderr: {err}"
    );
    assert!(out.contains("topology h9disc up: 3 VNs"), "{out}");
    let (code, out, err) = pipelab(&["topo", "status", "--name", "h9disc"]);
    assert_eq!(code, 0, "status: {err}");
    for vn in ["n2\t2\t10.0.0.1", "n3\t3\t10.0.0.2", "n4\t4\t10.0.0.3"] {
        assert!(out.contains(vn), "status lacks {vn:?}: {out}");
    }
    let (code, out, err) = pipelab(&["topo", "cross", "--name", "h9disc", "n2", "n3", "1Mbit/s"]);
    assert_eq!(code, 0, "cross n2 n3: {out} {err}");
    assert!(out.starts_with("ok: "), "{out}");
    let (code, _, err) = pipelab(&["topo", "cross", "--name", "h9disc", "n9", "n3", "1Mbit/s"]);
    assert_eq!(code, 2);
    assert!(err.contains("no VN 'n9'"), "{err}");
    drop(down);
    assert!(
        !Path::new("/run/netns/pl-h9disc-n2").exists(),
        "namespace left"
    );
}

/// `bw 0` live: a pass proves a shell's link of `bw 0 delay 5ms` is no
/// limit, as in `pipelab sim` (every packet exactly 5 ms there,
/// `crates/sim/tests/sim_scenarios.rs`): 16 Mbit/s of probe traffic
/// passes with no loss at about 5 ms, and the running emulation shows
/// the pipe as `bw unlimited`.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn bw_0_is_no_limit_live_as_in_sim() {
    let Some(_g) = live() else { return };
    let port = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .expect("free port");
    let rx = Command::new(BIN)
        .args(["probe", "recv", "--listen", &format!("0.0.0.0:{port}")])
        .stderr(Stdio::null())
        .spawn()
        .expect("probe recv");
    let rx = common::Bg(rx);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let script = format!(
        "{BIN} --target h9bw0 pipe show && exec {BIN} probe send $PIPELAB_OUTSIDE:{port} --rate 2000pps --size 1000B --duration 1s --json"
    );
    let o = Command::new(BIN)
        .args(["shell", "--name", "h9bw0", "--link", "bw 0 delay 5ms"])
        .args(["--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .output()
        .expect("run pipelab shell");
    drop(rx);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "shell: {out} {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("bw unlimited delay 5ms"), "pipe show: {out}");
    let json = &out[out.find('{').expect("report")..];
    let r: serde_json::Value = serde_json::from_str(json).expect("probe report");
    assert_eq!(r["sent"].as_u64(), Some(2000), "{r}");
    assert_eq!(r["lost"].as_u64(), Some(0), "{r}");
    let mean = r["delay_ms"]["mean"].as_f64().expect("mean");
    assert!((4.9..=7.0).contains(&mean), "mean delay {mean} ms: {r}");
}

/// `topo exec` run in another mount namespace than `topo up`'s (a
/// container, `unshare -m`, a service with a private /run) finds the
/// VN's file under /run/netns but not the namespace bind-mounted on it,
/// and said "EINVAL: Invalid argument". A pass proves it says which file
/// is not a namespace here and why, with exit status 2, and runs
/// nothing. The situation is made in a private mount namespace with a
/// /run of its own (a topology's state file and the empty file of its
/// VN), so nothing of the host's changes.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (a mount namespace of its own); run as root or with PIPELAB_LIVE=1"
)]
fn topo_exec_from_another_mount_namespace_says_so() {
    let Some(_g) = live() else { return };
    let state = r#"{"name":"h9mnt","pid":1,"file":"x.gml","distill":"hop-by-hop","prefix":"10.0.0.0/8","pipes":2,"routes":1,"up_ms":1.0,"vns":[{"name":"vn1","id":1,"addr":"10.0.0.2","netns":"pl-h9mnt-vn1"}],"nodes":[]}"#;
    let script = format!(
        "mount -t tmpfs h9mnt /run && mkdir -p /run/netns /run/pipelab/topo \
         && printf '%s' '{state}' > /run/pipelab/topo/h9mnt.json \
         && touch /run/netns/pl-h9mnt-vn1 \
         && exec {BIN} topo exec --name h9mnt vn1 -- echo RAN"
    );
    let o = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .stdin(Stdio::null())
        .output()
        .expect("unshare");
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(!out.contains("RAN"), "the command ran: {out}");
    assert_eq!(
        (o.status.code(), err.as_ref()),
        (
            Some(2),
            "error: VN vn1 of topology 'h9mnt': /run/netns/pl-h9mnt-vn1 is not a network namespace in this mount namespace: the topology's namespaces are bind mounts that this process does not see (it runs in another mount namespace than `pipelab topo up` did, with its own view of /run/netns); run the command where the topology was started (e.g. on the host)\n"
        )
    );
}
