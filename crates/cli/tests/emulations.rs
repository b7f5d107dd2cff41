//! Running emulations by name: real `pipelabd` processes and in-process
//! servers registered in a registry of their own (`PIPELAB_RUN_DIR`), the
//! real `pipelab` binary as their client (`pipelab list`, `pipelab
//! --target NAME ...`), and the owner's access policy with real users.

mod daemon_common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use daemon_common::{is_root, open_dir, Pld, PIPELABD};
use pipelab_control::plane::{ControlOnly, Plane};
use pipelab_control::registry::{EmulationInfo, Registry};
use pipelab_control::server::{serve, Access};

const BIN: &str = env!("CARGO_BIN_EXE_pipelab");

/// `pipelab ARGS` with the registry in `run_dir`.
fn pipelab(run_dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .env("PIPELAB_RUN_DIR", run_dir)
        .args(args)
        .output()
        .expect("run pipelab")
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "status {:?}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn failure(o: &Output) -> String {
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn user_name(uid: u32) -> String {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| uid.to_string())
}

/// `pipelab list` shows a running pipelabd (name, mode, pid, owner), and
/// `--target NAME` reaches it with commands, files, save and restore,
/// stats and top, exactly as its own socket does.
#[test]
fn pipelabd_is_listed_and_reached_by_name() {
    let dir = open_dir(None);
    let (d, _) = Pld::start(dir.path(), &["--plane", "none", "--name", "lab1"]);
    let run = d.run_dir.clone();
    let pid = d.child.as_ref().expect("running").id();
    let me = nix::unistd::getuid().as_raw();

    let table = stdout(&pipelab(&run, &["list"]));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 2, "{table}");
    let head: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(head, ["NAME", "MODE", "PID", "OWNER", "PIPES", "STARTED"]);
    let row: Vec<String> = lines[1].split_whitespace().map(str::to_string).collect();
    assert_eq!(
        row[..5],
        ["lab1", "none", &pid.to_string(), &user_name(me), "0"],
        "{table}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&pipelab(&run, &["list", "--json"]))).expect("list --json");
    assert_eq!(v[0]["name"], "lab1");
    assert_eq!(v[0]["mode"], "none");
    assert_eq!(v[0]["pid"], pid);
    assert_eq!(v[0]["owner"], me);

    let t = |args: &[&str]| {
        let mut all = vec!["--target", "lab1"];
        all.extend_from_slice(args);
        pipelab(&run, &all)
    };
    stdout(&t(&["pipe", "1", "config", "delay", "5ms"]));
    assert_eq!(stdout(&t(&["pipe", "show"])), "pipe 1 config delay 5ms\n");
    // A file: all or nothing, errors named by the file's lines.
    let f = dir.path().join("links.conf");
    std::fs::write(&f, "pipe 2 config bw 1Mbit/s\nadd 100 pipe 3\n").unwrap();
    let e = failure(&t(&["-f", f.to_str().unwrap()]));
    assert!(e.contains(&format!("--> {}:2:1", f.display())), "{e}");
    std::fs::write(
        &f,
        "pipe 2 config bw 1Mbit/s\nadd 100 pipe 2 ip from any to any\n",
    )
    .unwrap();
    stdout(&t(&["-f", f.to_str().unwrap()]));
    assert_eq!(
        stdout(&t(&["show"])),
        "00100 pipe 2 ip from any to any\n65535 allow ip from any to any\n"
    );
    // With a target, `list` is the language's.
    assert_eq!(stdout(&t(&["list"])), stdout(&t(&["show"])));
    // save - / flush / restore round trip.
    let saved = stdout(&t(&["save", "-"]));
    assert_eq!(
        saved,
        "set one_pass 1\npipe 1 config delay 5ms\npipe 2 config bw 1Mbit/s\n\
         add 100 pipe 2 ip from any to any\n"
    );
    let file = dir.path().join("saved.conf");
    std::fs::write(&file, &saved).unwrap();
    stdout(&t(&["flush"]));
    assert_eq!(stdout(&t(&["show"])), "65535 allow ip from any to any\n");
    stdout(&t(&["restore", file.to_str().unwrap()]));
    assert_eq!(stdout(&t(&["save", "-"])), saved);
    // The same server behind pipelabd's own socket.
    let sock = d.socket.to_str().unwrap().to_string();
    assert_eq!(
        stdout(&pipelab(&run, &["--socket", &sock, "save", "-"])),
        saved
    );
    // The registry counts the pipes.
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&pipelab(&run, &["list", "--json"]))).unwrap();
    assert_eq!(v[0]["pipes"], 2);
    // Stats and top.
    let st: serde_json::Value = serde_json::from_str(&stdout(&t(&["stats", "--json"]))).unwrap();
    assert_eq!(st["emulation"]["name"], "lab1");
    assert_eq!(st["emulation"]["mode"], "none");
    assert_eq!(st["config"]["pipes"], 2);
    let top = stdout(&t(&["top", "--count", "2", "--interval", "0.05"]));
    assert_eq!(top.matches("lab1: up").count(), 2, "{top}");
    // An unknown target names the running ones.
    let e = failure(&pipelab(&run, &["--target", "nope", "show"]));
    assert!(
        e.contains("no running emulation is named 'nope'; running: lab1"),
        "{e}"
    );
    // --target and --socket do not mix.
    let o = pipelab(&run, &["--target", "lab1", "--socket", &sock, "show"]);
    assert_eq!(o.status.code(), Some(2));
}

/// A second emulation under a running one's name is refused, naming the
/// holder (mode and pid); the first keeps serving.
#[test]
fn a_name_is_held_while_its_emulation_runs() {
    let dir = open_dir(None);
    let (d, _) = Pld::start(dir.path(), &["--plane", "none", "--name", "dup"]);
    let pid = d.child.as_ref().expect("running").id();
    let other = open_dir(None);
    let out = Command::new(PIPELABD)
        .env("PIPELAB_RUN_DIR", &d.run_dir)
        .args(["--plane", "none", "--name", "dup", "--socket"])
        .arg(other.path().join("s.sock"))
        .arg("--state-dir")
        .arg(other.path().join("state"))
        .stdin(Stdio::null())
        .output()
        .expect("second pipelabd");
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains(&format!(
            "an emulation named 'dup' is already running (none, pid {pid})"
        )),
        "{e}"
    );
    assert!(
        !other.path().join("s.sock").exists(),
        "its socket is removed"
    );
    let listed = stdout(&pipelab(&d.run_dir, &["list"]));
    assert!(listed.contains(&pid.to_string()), "{listed}");
    stdout(&pipelab(&d.run_dir, &["--target", "dup", "show"]));
}

/// An entry left by a crashed process (its pid gone, its socket file
/// left) is removed by the next `pipelab list`.
#[test]
fn stale_entries_are_cleaned_by_list() {
    let dir = open_dir(None);
    let run = dir.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    let mut child = Command::new("true").spawn().expect("true");
    let dead = child.id();
    child.wait().unwrap();
    let sock = run.join("old.sock");
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    let mut info = EmulationInfo::new("old", "shell");
    info.pid = dead;
    info.socket = sock.clone();
    std::fs::write(run.join("old.json"), serde_json::to_string(&info).unwrap()).unwrap();
    assert_eq!(stdout(&pipelab(&run, &["list"])), "no running emulations\n");
    assert!(!run.join("old.json").exists());
    assert!(!sock.exists());
    assert_eq!(stdout(&pipelab(&run, &["list", "--json"])), "[]\n");
}

/// A registration is gone as soon as its process exits normally
/// (SIGTERM), and after `kill -9` at the next `pipelab list`.
#[test]
fn registrations_vanish_on_exit_and_after_kill9() {
    let dir = open_dir(None);
    let (mut d, _) = Pld::start(dir.path(), &["--plane", "none", "--name", "gone"]);
    let run = d.run_dir.clone();
    assert!(run.join("gone.json").exists() && run.join("gone.sock").exists());
    assert!(d.stop().success());
    assert!(!run.join("gone.json").exists(), "entry left after exit");
    assert!(!run.join("gone.sock").exists(), "socket left after exit");
    assert!(!d.socket.exists());

    let (mut d, _) = Pld::start(dir.path(), &["--plane", "none", "--name", "gone"]);
    d.kill9();
    assert!(
        run.join("gone.json").exists(),
        "a killed process cannot clean up"
    );
    let e = failure(&pipelab(&run, &["--target", "gone", "show"]));
    assert!(
        e.contains("no running emulation is named 'gone'; none is running"),
        "{e}"
    );
    assert_eq!(stdout(&pipelab(&run, &["list"])), "no running emulations\n");
    assert!(!run.join("gone.json").exists());
    assert!(!run.join("gone.sock").exists());
    // The name is free again.
    let (d2, _) = Pld::start(dir.path(), &["--plane", "none", "--name", "gone"]);
    let listed = stdout(&pipelab(&run, &["list"]));
    assert!(
        listed.contains(&d2.child.as_ref().unwrap().id().to_string()),
        "{listed}"
    );
}

/// A topology-like plane's counters, as every plane reports them.
struct TopoStats;

impl Plane for TopoStats {
    fn preparer(&self) -> pipelab_control::Preparer {
        std::sync::Arc::new(|_: &pipelab_lang::Config| Ok(pipelab_control::Prepared::new(())))
    }
    fn commit(&mut self, _: pipelab_control::Prepared) -> Result<(), pipelab_control::PlaneError> {
        Ok(())
    }
    fn stats(&self) -> serde_json::Value {
        serde_json::json!({
            "plane": "topo",
            "pipes": [{"number": 65536, "arrivals": 10, "arrival_bytes": 15000,
                       "departures": 9, "departure_bytes": 13500, "drops": 1,
                       "loss_drops": 0, "backlog": 0, "in_delay_line": 0}],
            "rules": [[100, 5, 500], [65535, 4, 400]],
            "runner": {"received": 10, "delivered": 9, "inside": 0, "dropped_queue": 1,
                       "dropped_loss": 0, "dropped_memory": 0},
        })
    }
    fn stop(self: Box<Self>) -> Result<(), pipelab_control::PlaneError> {
        Ok(())
    }
    fn mode(&self) -> &'static str {
        "topo"
    }
}

/// `pipelab top --target NAME` and `stats` render any plane's counters.
#[test]
fn top_and_stats_read_any_planes_counters() {
    let dir = open_dir(None);
    let run = dir.path().join("run");
    let registry = Registry::at(&run).with_group("pipelab-no-such-group");
    let reg = registry.register(EmulationInfo::new("t", "topo")).unwrap();
    let handle = serve(
        reg,
        Box::new(TopoStats),
        pipelab_lang::Config::new(),
        Access::Owner(nix::unistd::getuid().as_raw()),
        None,
    )
    .unwrap();
    let top = stdout(&pipelab(
        &run,
        &["--target", "t", "top", "--count", "2", "--interval", "0.05"],
    ));
    assert_eq!(top.matches("t: up").count(), 2, "{top}");
    assert_eq!(top.matches("plane: topo").count(), 2, "{top}");
    assert!(
        top.lines()
            .any(|l| l.split_whitespace().take(2).eq(["65536", "10"])),
        "{top}"
    );
    assert!(top.contains("runner: received 10 delivered 9"), "{top}");
    let stats = stdout(&pipelab(&run, &["--target", "t", "stats"]));
    assert!(
        stats
            .lines()
            .any(|l| l.split_whitespace().eq(["100", "5", "500"])),
        "{stats}"
    );
    handle.close().unwrap();
    assert_eq!(stdout(&pipelab(&run, &["list"])), "no running emulations\n");
}

/// Users and a group, deleted when dropped.
struct Accounts {
    group: String,
    users: Vec<String>,
}

impl Drop for Accounts {
    fn drop(&mut self) {
        for u in &self.users {
            let _ = Command::new("userdel").arg(u).output();
        }
        let _ = Command::new("groupdel").arg(&self.group).output();
    }
}

fn sh(cmd: &mut Command) {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ids(name: &str) -> (u32, u32) {
    let u = nix::unistd::User::from_name(name).unwrap().unwrap();
    (u.uid.as_raw(), u.gid.as_raw())
}

/// An emulation that belongs to a user (`Access::Owner`): another user of
/// the group may `show`, `pipe show` and `stats` but not change it (the
/// error names the owner); the owner (not in the group: the socket is
/// theirs) and root change it; a user outside the group cannot connect.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn owner_changes_others_read() {
    // Built to run (as root, PIPELAB_LIVE=1 or CI) but not root: a
    // mistake to report, never a silent pass.
    assert!(
        is_root(),
        "this test creates users (useradd), which needs root: run it as root, or build without PIPELAB_LIVE=1 to have it ignored"
    );
    let pid = std::process::id() % 100_000;
    let group = format!("plg{pid}");
    let (owner, reader, outsider) = (
        format!("plo{pid}"),
        format!("plr{pid}"),
        format!("plx{pid}"),
    );
    sh(Command::new("groupadd").arg(&group));
    let mut accounts = Accounts {
        group: group.clone(),
        users: vec![],
    };
    for (u, in_group) in [(&owner, false), (&reader, true), (&outsider, false)] {
        let mut cmd = Command::new("useradd");
        cmd.args(["-M", "-N", "-s", "/usr/sbin/nologin"]);
        if in_group {
            cmd.args(["-g", &group]);
        }
        sh(cmd.arg(u));
        accounts.users.push(u.clone());
    }
    let (ido, idr, idx) = (ids(&owner), ids(&reader), ids(&outsider));
    let dir = open_dir(None);
    // The binary must be readable by the users wherever the build is.
    let bin = dir.path().join("pipelab");
    std::fs::copy(BIN, &bin).unwrap();
    let run = dir.path().join("run");
    let registry = Registry::at(&run).with_group(&group);
    let mut info = EmulationInfo::new("owned", "shell");
    info.owner = ido.0;
    let reg = registry.register(info).unwrap();
    let mut initial = pipelab_lang::Config::new();
    initial.apply_script("pipe 1 config delay 5ms").unwrap();
    let handle = serve(
        reg,
        Box::new(ControlOnly::default()),
        initial,
        Access::Owner(ido.0),
        None,
    )
    .unwrap();
    let as_user = |who: Option<(u32, u32)>, args: &[&str]| {
        let mut cmd = Command::new(&bin);
        cmd.env("PIPELAB_RUN_DIR", &run)
            .args(["--target", "owned"])
            .args(args);
        if let Some((u, g)) = who {
            cmd.uid(u).gid(g);
        }
        cmd.output().expect("run pipelab")
    };
    // Another user of the group reads.
    assert_eq!(
        stdout(&as_user(Some(idr), &["pipe", "show"])),
        "pipe 1 config delay 5ms\n"
    );
    stdout(&as_user(Some(idr), &["show"]));
    let st = stdout(&as_user(Some(idr), &["stats"]));
    assert!(st.contains("read only: owned belongs to uid"), "{st}");
    let st: serde_json::Value =
        serde_json::from_str(&stdout(&as_user(Some(idr), &["stats", "--json"]))).unwrap();
    assert_eq!(st["config"]["pipes"], 1);
    // ... but does not change it.
    let e = failure(&as_user(
        Some(idr),
        &["pipe", "1", "config", "delay", "50ms"],
    ));
    assert!(
        e.contains(&format!(
            "emulation owned belongs to {owner} (uid {}): only its owner or root may change it",
            ido.0
        )),
        "{e}"
    );
    assert_eq!(
        stdout(&as_user(Some(idr), &["pipe", "show"])),
        "pipe 1 config delay 5ms\n"
    );
    // The owner changes it (connecting as the socket's owner).
    stdout(&as_user(
        Some(ido),
        &["pipe", "1", "config", "delay", "7ms"],
    ));
    assert_eq!(
        stdout(&as_user(Some(idr), &["pipe", "show"])),
        "pipe 1 config delay 7ms\n"
    );
    // Root changes it.
    stdout(&as_user(None, &["pipe", "1", "config", "delay", "9ms"]));
    assert_eq!(
        stdout(&as_user(Some(ido), &["pipe", "show"])),
        "pipe 1 config delay 9ms\n"
    );
    // Outside the group, not the owner: no connection at all.
    let e = failure(&as_user(Some(idx), &["show"]));
    assert!(e.contains("permission denied"), "{e}");
    handle.close().unwrap();
    assert!(registry.list().is_empty());
    drop(accounts);
}
