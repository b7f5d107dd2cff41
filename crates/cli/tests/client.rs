//! `pipelab` as pipelabd's client: the real binary against a daemon
//! serving a real socket (in this process, control plane only).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pipelab_control::journal::Journal;
use pipelab_control::plane::ControlOnly;
use pipelab_control::server::{bind, Access, Server, ServerHandle};

const BIN: &str = env!("CARGO_BIN_EXE_pipelab");

fn daemon(dir: &Path) -> PathBuf {
    let sock = dir.join("s.sock");
    let journal = Journal::open(&dir.join("state")).unwrap();
    let server = Server::new(
        "pipelabd",
        Box::new(ControlOnly::default()),
        pipelab_lang::Config::new(),
        Access::Blocks,
        Some(journal),
    )
    .unwrap();
    let (listener, _) = bind(&sock, "pipelab-no-such-group").unwrap();
    let mut handle = ServerHandle::new(server);
    handle.listen(listener).unwrap();
    // Served until the test process ends.
    std::mem::forget(handle);
    sock
}

fn run(sock: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("--socket")
        .arg(sock)
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
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

#[test]
fn without_a_daemon_it_says_how_to_start_one() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("none.sock");
    let e = failure(&run(&sock, &["show"]));
    assert!(e.contains("pipelabd is not running"), "{e}");
    assert!(
        e.contains(&format!("pipelabd --socket {}", sock.display())),
        "{e}"
    );
}

#[test]
fn commands_files_save_restore_stats_netconfig() {
    let dir = tempfile::tempdir().unwrap();
    let sock = daemon(dir.path());
    stdout(&run(
        &sock,
        &["pipe", "3", "config", "bw", "640Kbit/s", "delay", "30ms"],
    ));
    let added = stdout(&run(
        &sock,
        &["add", "100", "pipe", "3", "ip", "from", "any", "to", "any"],
    ));
    assert_eq!(added, "00100 pipe 3 ip from any to any\n");
    let show = stdout(&run(&sock, &["show"]));
    assert_eq!(
        show,
        "00100 pipe 3 ip from any to any\n65535 allow ip from any to any\n"
    );
    // The daemon's error, with its position, and status 1.
    let e = failure(&run(&sock, &["pipe", "4", "config", "bw", "1Mbps"]));
    assert!(
        e.contains("did you mean Mbit/s or MByte/s?") && e.contains("nothing was applied"),
        "{e}"
    );
    // A file: all or nothing, errors named by the file's lines.
    let f = dir.path().join("links.conf");
    std::fs::write(&f, "pipe 5 config delay 1ms\nadd 200 pipe 6\n").unwrap();
    let e = failure(&run(&sock, &["-f", f.to_str().unwrap()]));
    assert!(e.contains(&format!("--> {}:2:1", f.display())), "{e}");
    assert!(e.contains("pipe 6 is not configured"), "{e}");
    assert_eq!(stdout(&run(&sock, &["show"])), show);
    std::fs::write(&f, "pipe 5 config delay 1ms\nadd 200 pipe 5\n").unwrap();
    stdout(&run(&sock, &["-f", f.to_str().unwrap()]));
    // save, flush, restore.
    let saved = dir.path().join("saved.conf");
    stdout(&run(&sock, &["save", saved.to_str().unwrap()]));
    let text = std::fs::read_to_string(&saved).unwrap();
    assert_eq!(
        text,
        "set one_pass 1\npipe 3 config bw 640Kbit/s delay 30ms\npipe 5 config delay 1ms\n\
         add 100 pipe 3 ip from any to any\nadd 200 pipe 5 ip from any to any\n"
    );
    stdout(&run(&sock, &["flush"]));
    assert_eq!(
        stdout(&run(&sock, &["show"])),
        "65535 allow ip from any to any\n"
    );
    stdout(&run(&sock, &["restore", saved.to_str().unwrap()]));
    assert_eq!(stdout(&run(&sock, &["save", "-"])), text);
    // Stats as JSON and as tables; top refreshes.
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&run(&sock, &["stats", "--json"]))).unwrap();
    assert_eq!(v["config"]["pipes"], 2);
    assert!(v["daemon"]["requests"].as_u64().unwrap() >= 10);
    let top = stdout(&run(&sock, &["top", "--count", "2", "--interval", "0.05"]));
    assert_eq!(top.matches("pipelabd: up").count(), 2, "{top}");
    // netconfig: Fig. 5.
    let dry = stdout(&run(
        &sock,
        &[
            "netconfig",
            "--dry-run",
            "client",
            "22,80@192.0.2.1",
            "IN",
            "bw",
            "6Mbit/s",
            "OUT",
            "bw",
            "256Kbit/s",
        ],
    ));
    assert_eq!(
        dry,
        "pipe 10000 config bw 6Mbit/s\npipe 10001 config bw 256Kbit/s\n\
         add 10000 pipe 10000 ip from any to any in src-ip 192.0.2.1 src-port 22,80\n\
         add 10001 pipe 10001 ip from any to any out dst-ip 192.0.2.1 dst-port 22,80\n"
    );
    assert_eq!(
        stdout(&run(&sock, &["save", "-"])),
        text,
        "a dry run changes nothing"
    );
    let e = failure(&run(
        &sock,
        &["netconfig", "client", "80@10.0.0.0/33", "SHARED"],
    ));
    assert!(e.contains("mask /33"), "{e}");
}
