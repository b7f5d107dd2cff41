//! Per-user isolation with real users (created here, removed after): each
//! configures a pipe on the same port numbers in their own numbering, sees
//! only their own, cannot touch the other's, and (host mode) one user's
//! rule does not delay the other's traffic.

mod daemon_common;

use std::os::unix::process::CommandExt;
use std::process::Command;

use daemon_common::{live, ok, open_dir, ping_ms, save, Pld, TableGuard};
use pipelab_control::{Client, Op, Response};

/// Not a test of its own: the client run as another user by the tests
/// below (this binary re-executed with `PIPELAB_TEST_CLIENT_SOCKET` set).
#[test]
fn client_helper() {
    let Ok(sock) = std::env::var("PIPELAB_TEST_CLIENT_SOCKET") else {
        return;
    };
    let op: Op = serde_json::from_str(&std::env::var("PIPELAB_TEST_CLIENT_OP").unwrap()).unwrap();
    let user = std::env::var("PIPELAB_TEST_CLIENT_USER").ok();
    match Client::connect(std::path::Path::new(&sock)) {
        Ok(mut c) => {
            let r = c.request(user.as_deref(), op).unwrap();
            println!("RESPONSE:{}", serde_json::to_string(&r).unwrap());
        }
        Err(e) => println!("CONNECT-ERROR:{e}"),
    }
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

fn run(cmd: &mut Command) {
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

/// One request made by a process running as `uid`:`gid`.
fn as_user(
    helper: &std::path::Path,
    sock: &std::path::Path,
    (uid, gid): (u32, u32),
    op: &Op,
) -> Result<Response, String> {
    let out = Command::new(helper)
        .args([
            "--exact",
            "client_helper",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PIPELAB_TEST_CLIENT_SOCKET", sock)
        .env("PIPELAB_TEST_CLIENT_OP", serde_json::to_string(op).unwrap())
        .uid(uid)
        .gid(gid)
        .output()
        .expect("helper");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    for line in text.lines() {
        if let Some((_, j)) = line.split_once("RESPONSE:") {
            return Ok(serde_json::from_str(j).unwrap());
        }
        if let Some((_, e)) = line.split_once("CONNECT-ERROR:") {
            return Err(e.to_string());
        }
    }
    panic!(
        "helper said nothing: {text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn exec(script: &str) -> Op {
    Op::Exec {
        script: script.into(),
    }
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn two_users_are_isolated() {
    let Some(_g) = live() else { return };
    let pid = std::process::id() % 100_000;
    let group = format!("plt{pid}");
    let (a, b, c) = (
        format!("pla{pid}"),
        format!("plb{pid}"),
        format!("plc{pid}"),
    );
    let accounts = Accounts {
        group: group.clone(),
        users: vec![],
    };
    run(Command::new("groupadd").arg(&group));
    let mut accounts = accounts;
    for (u, in_group) in [(&a, true), (&b, true), (&c, false)] {
        let mut cmd = Command::new("useradd");
        cmd.args(["-M", "-N", "-s", "/usr/sbin/nologin"]);
        if in_group {
            cmd.args(["-g", &group]);
        }
        run(cmd.arg(u));
        accounts.users.push(u.clone());
    }
    let (ida, idb, idc) = (ids(&a), ids(&b), ids(&c));
    let dir = open_dir(None);
    // The helper must be readable by the users wherever the build is.
    let helper = dir.path().join("helper");
    std::fs::copy(std::env::current_exe().unwrap(), &helper).unwrap();
    let _table = TableGuard("pltest_iso");
    let (mut d, _) = Pld::start(
        dir.path(),
        &[
            "--plane",
            "host",
            "--table",
            "pltest_iso",
            "--queue-num",
            "7432",
            "--scope",
            "127.0.0.1",
            "--group",
            &group,
        ],
    );
    let sock = d.socket.clone();
    let ask = |who, op: &Op| as_user(&helper, &sock, who, op).expect("connect");
    let ask_ok = |who, op: &Op| {
        let r = ask(who, op);
        assert!(r.ok, "{op:?}: {:?}", r.error);
        r.output
    };

    // Same numbers, same port, each in their own block.
    ask_ok(ida, &exec("pipe 1 config delay 40ms\nadd 100 pipe 1 ip from any to any dst-port 5000\nadd 200 pipe 1 icmp from any to any out"));
    ask_ok(
        idb,
        &exec("pipe 1 config delay 1ms\nadd 100 pipe 1 ip from any to any dst-port 5000"),
    );
    assert_eq!(
        ask_ok(ida, &exec("show")),
        "00100 pipe 1 ip from any to any dst-port 5000\n00200 pipe 1 icmp from any to any out\n65535 allow ip from any to any\n"
    );
    assert_eq!(
        ask_ok(idb, &exec("show")),
        "00100 pipe 1 ip from any to any dst-port 5000\n65535 allow ip from any to any\n"
    );
    assert_eq!(ask_ok(idb, &exec("pipe show")), "pipe 1 config delay 1ms\n");
    let b_saved = ask_ok(idb, &Op::Save);

    // A cannot reach B's objects: not by B's global number, not by acting
    // as B, not by a rule on B's uid; nor set limits.
    let e = ask(ida, &exec("delete 32832")).error.unwrap();
    assert!(e.contains("rule 32832 does not exist"), "{e}");
    let op = Op::Exec {
        script: "delete 100".into(),
    };
    let r = as_user_named(&helper, &sock, ida, &op, &b);
    assert!(
        r.error
            .as_deref()
            .unwrap_or("")
            .contains("only root may act in another user's block"),
        "{r:?}"
    );
    let e = ask(
        ida,
        &exec(&format!("add 300 pipe 1 ip from any to any uid {}", idb.0)),
    )
    .error
    .unwrap();
    assert!(e.contains("match only their own traffic"), "{e}");
    let e = ask(
        ida,
        &Op::Limit {
            args: format!("user {a} pipes 64"),
        },
    )
    .error
    .unwrap();
    assert!(e.contains("only root may set limits"), "{e}");
    assert_eq!(ask_ok(idb, &Op::Save), b_saved, "B's block is unchanged");

    // Root sees everything, in global numbers confined to each uid.
    let mut root = d.client();
    let st = root.request(None, Op::Stats).unwrap().data.unwrap();
    assert_eq!(st["config"]["users"], 2);
    assert_eq!(st["config"]["total_rules"], 3);
    assert_eq!(save(&mut root, Some(&b)), b_saved);
    // A user's stats show only their own pipes and rules, in their numbers.
    let sa = ask(ida, &Op::Stats).data.unwrap();
    let pipes: Vec<u64> = sa["plane"]["pipes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["number"].as_u64().unwrap())
        .collect();
    assert_eq!(pipes, vec![1]);
    let rules: Vec<u64> = sa["plane"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[0].as_u64().unwrap())
        .collect();
    assert_eq!(rules, vec![100, 200]);
    assert!(
        sa["plane"].get("runner").is_none(),
        "host-wide counters are root's"
    );

    // C is not in the group: cannot connect at all.
    let e = as_user(&helper, &sock, idc, &exec("show")).unwrap_err();
    assert!(e.contains("Permission denied"), "{e}");

    // Host mode: A's ICMP is delayed 40 ms (echo request, A's socket);
    // B's and root's are not.
    let ma = ping_ms("127.0.0.1", 5, Some(ida));
    let mb = ping_ms("127.0.0.1", 5, Some(idb));
    let mr = ping_ms("127.0.0.1", 5, None);
    eprintln!("ping 127.0.0.1: A {ma:.2} ms, B {mb:.2} ms, root {mr:.2} ms");
    assert!((39.5..55.0).contains(&ma), "A: {ma} ms");
    assert!(mb < 10.0, "B is delayed by A's rule: {mb} ms");
    assert!(mr < 10.0, "root is delayed by A's rule: {mr} ms");

    // Limits set by root are enforced with a clear error.
    ok(&mut root, "show");
    let r = root
        .request(
            None,
            Op::Limit {
                args: format!("user {a} pipes 1 rules 2"),
            },
        )
        .unwrap();
    assert!(r.ok, "{:?}", r.error);
    let e = ask(ida, &exec("pipe 2 config delay 1ms")).error.unwrap();
    assert!(
        e.contains("limit exceeded: 2 pipes, the limit of uid"),
        "{e}"
    );
    let e = ask(
        ida,
        &exec("add 300 pipe 1 ip from any to any dst-port 6000"),
    )
    .error
    .unwrap();
    assert!(e.contains("limit exceeded: 3 rules"), "{e}");

    assert!(d.stop().success());
    drop(accounts);
}

fn as_user_named(
    helper: &std::path::Path,
    sock: &std::path::Path,
    (uid, gid): (u32, u32),
    op: &Op,
    name: &str,
) -> Response {
    let out = Command::new(helper)
        .args([
            "--exact",
            "client_helper",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PIPELAB_TEST_CLIENT_SOCKET", sock)
        .env("PIPELAB_TEST_CLIENT_OP", serde_json::to_string(op).unwrap())
        .env("PIPELAB_TEST_CLIENT_USER", name)
        .uid(uid)
        .gid(gid)
        .output()
        .expect("helper");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let j = text
        .lines()
        .find_map(|l| l.split_once("RESPONSE:").map(|(_, j)| j))
        .unwrap_or_else(|| panic!("{text}"));
    serde_json::from_str(j).unwrap()
}
