//! Helpers shared by the CLI test files: running the binary, root check, serialisation,
//! background processes, and the accounting check of a run's report.

#![allow(dead_code)]

use serde_json::Value;
use std::process::Child;
use std::sync::{Mutex, MutexGuard};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_pipelab");

/// Run `pipelab ARGS`: exit code, stdout, stderr.
pub fn run(args: &[&str]) -> (i32, String, String) {
    let o = std::process::Command::new(BIN)
        .args(args)
        .output()
        .expect("run pipelab");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// An accuracy bound checked on live traffic: `measure` runs once more if
/// its first run misses, and the bound must hold in one of the two. This
/// machine is a shared virtual machine whose virtual CPUs stall now and
/// then for milliseconds (the runner's own lateness meter shows them),
/// which spoils a run whatever the emulator does. `Err` carries both
/// runs' figures.
pub fn in_one_of_two(mut measure: impl FnMut() -> Result<(), String>) -> Result<(), String> {
    let mut seen = Vec::new();
    for _ in 0..2 {
        match measure() {
            Ok(()) => return Ok(()),
            Err(e) => seen.push(e),
        }
    }
    Err(seen.join("; then "))
}

/// Live tests share the host's interfaces and CPU: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Root (uid 0)?
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// The serialisation guard, or `None` (test skipped) when not root. In CI
/// (`CI` set) not being root is a failure, never a skip.
pub fn live() -> Option<MutexGuard<'static, ()>> {
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() {
        assert!(
            std::env::var_os("CI").is_none(),
            "live tests must run as root in CI"
        );
        eprintln!("skipped: live tests need root");
        return None;
    }
    Some(guard)
}

/// A background process, killed when dropped.
pub struct Bg(pub Child);

impl Bg {
    /// Stop with SIGTERM (as Ctrl-C would) and wait for it.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let st = self.0.wait().expect("wait");
        std::mem::forget(self);
        st
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `received = delivered + dropped (every reason) + inside` in a run's
/// JSON report.
pub fn check_accounting(v: &Value) {
    let s = &v["stats"];
    let n = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("stats.{k} in {s}"));
    let dropped: u64 = [
        "dropped_queue",
        "dropped_loss",
        "dropped_aqm",
        "dropped_link",
        "dropped_memory",
        "dropped_rule",
        "dropped_tx",
    ]
    .iter()
    .map(|k| n(k))
    .sum();
    assert_eq!(
        n("received"),
        n("delivered") + dropped + n("inside"),
        "accounting: {s}"
    );
}

/// The mean RTT (ms) of a `ping` summary ("rtt min/avg/max/mdev = a/b/c/d ms").
pub fn ping_avg_ms(out: &str) -> f64 {
    out.lines()
        .find(|l| l.contains("rtt min/avg/max"))
        .and_then(|l| l.split('=').nth(1))
        .and_then(|v| v.trim().split('/').nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no rtt line in: {out}"))
}
