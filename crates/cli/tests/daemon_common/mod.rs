//! Helpers of the pipelabd tests: a real `pipelabd` process with its own
//! socket and state directory, clients, root check.

#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pipelab_control::{Client, Op, Response};

/// The daemon binary under test.
pub const PIPELABD: &str = env!("CARGO_BIN_EXE_pipelabd");

#[path = "../common/mod.rs"]
mod common;
#[allow(unused_imports)]
pub use common::{in_one_of_three, is_root, live, reads, steal_slack, TwoHosts, BIN};

/// A directory everyone may traverse (the socket's and the helper's).
pub fn open_dir(base: Option<&Path>) -> tempfile::TempDir {
    let d = match base {
        Some(b) => tempfile::Builder::new()
            .prefix("pipelabd-test")
            .tempdir_in(b),
        None => tempfile::Builder::new().prefix("pipelabd-test").tempdir(),
    }
    .expect("tempdir");
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    d
}

/// A running `pipelabd`, killed (SIGKILL) when dropped. It registers in
/// a registry of its own (`PIPELAB_RUN_DIR`), never in the host's.
pub struct Pld {
    pub child: Option<Child>,
    pub socket: PathBuf,
    pub state: PathBuf,
    pub run_dir: PathBuf,
    pub args: Vec<String>,
    pub log: PathBuf,
}

impl Pld {
    /// Starts `pipelabd --socket DIR/s.sock --state-dir DIR/state ARGS`
    /// and waits until it answers; returns it and the time that took.
    pub fn start(dir: &Path, args: &[&str]) -> (Pld, Duration) {
        let mut p = Pld {
            child: None,
            socket: dir.join("s.sock"),
            state: dir.join("state"),
            run_dir: dir.join("run"),
            args: args.iter().map(|s| s.to_string()).collect(),
            log: dir.join("pipelabd.log"),
        };
        let t = p.spawn();
        (p, t)
    }

    fn spawn(&mut self) -> Duration {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("log");
        let t0 = Instant::now();
        let child = Command::new(PIPELABD)
            .arg("--socket")
            .arg(&self.socket)
            .arg("--state-dir")
            .arg(&self.state)
            .args(&self.args)
            .env("PIPELAB_RUN_DIR", &self.run_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn pipelabd");
        self.child = Some(child);
        loop {
            if let Ok(mut c) = Client::connect(&self.socket) {
                if c.request(None, Op::Save).is_ok() {
                    return t0.elapsed();
                }
            }
            if let Some(Ok(Some(st))) = self.child.as_mut().map(|c| c.try_wait()) {
                panic!(
                    "pipelabd exited with {st}: {}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                );
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "pipelabd did not answer within 20 s"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// `kill -9`, then start again with the same arguments; returns the
    /// time from the new process's start until it answered.
    pub fn kill9_and_restart(&mut self) -> Duration {
        self.kill9();
        self.spawn()
    }

    /// `kill -9`.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM and wait: returns the exit status.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        let mut c = self.child.take().expect("running");
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(c.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        c.wait().expect("wait")
    }

    /// A new connection.
    pub fn client(&self) -> Client {
        Client::connect(&self.socket).expect("connect")
    }

    /// Is the process still running?
    pub fn alive(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }
}

impl Drop for Pld {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Sends commands; panics with the daemon's error if refused.
pub fn ok(c: &mut Client, script: &str) -> String {
    let r = c.exec(script).expect("request");
    assert!(r.ok, "{script}: {:?}", r.error);
    r.output
}

/// Sends commands that must be refused; returns the error.
pub fn refused(c: &mut Client, script: &str) -> String {
    let r = c.exec(script).expect("request");
    assert!(!r.ok, "{script} was accepted: {}", r.output);
    r.error.unwrap_or_default()
}

/// `save` of root (or of `user`).
pub fn save(c: &mut Client, user: Option<&str>) -> String {
    let r: Response = c.request(user, Op::Save).expect("save");
    assert!(r.ok, "{:?}", r.error);
    r.output
}

/// Mean RTT (ms) of `n` pings to `addr`, run with `uid`/`gid` if given.
pub fn ping_ms(addr: &str, n: u32, ids: Option<(u32, u32)>) -> f64 {
    let mut cmd = Command::new("ping");
    cmd.args(["-c", &n.to_string(), "-i", "0.2", "-W", "2", addr]);
    if let Some((u, g)) = ids {
        use std::os::unix::process::CommandExt;
        cmd.uid(u).gid(g);
    }
    let out = cmd.output().expect("ping");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let line = text
        .lines()
        .find(|l| l.contains("min/avg/max"))
        .unwrap_or_else(|| {
            panic!(
                "ping: no summary: {text} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let nums = line.split('=').nth(1).expect("ping numbers").trim();
    nums.split('/')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("ping avg")
}

/// Deletes an nftables table (of family inet) when dropped: a daemon
/// killed with SIGKILL leaves its table, which would hold this host's
/// traffic (fail-closed).
pub struct TableGuard(pub &'static str);

impl Drop for TableGuard {
    fn drop(&mut self) {
        let _ = pipelab_modes::host::remove_table(self.0);
    }
}
