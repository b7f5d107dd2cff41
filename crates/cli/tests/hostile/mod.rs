//! What the hostile test files share: running a binary under a time
//! bound, a case's expected outcome, and the count each file reports.
//!
//! Every case of the suite is a row of a table: an input (or a fault) and
//! its expected [`Outcome`]. Each file has a `case_count` test that counts
//! its rows, prints one line
//!
//! ```text
//! HOSTILE hostile_config cases 84 rejections 71
//! ```
//!
//! and asserts its own minimum; `docs/HOSTILE.md` sums the lines of every
//! file into the suite's totals.

#![allow(dead_code)]

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The binaries under test.
pub const PIPELAB: &str = env!("CARGO_BIN_EXE_pipelab");
pub const PIPELABD: &str = env!("CARGO_BIN_EXE_pipelabd");

/// A copy of `pipelab` that any user may run, in `dir`: see
/// [`runnable_by_others`].
#[allow(dead_code)]
pub fn pipelab_for_others(dir: &std::path::Path) -> std::path::PathBuf {
    runnable_by_others(std::path::Path::new(PIPELAB), dir)
}

/// A copy of the program `src` that any user may run, in `dir` (made
/// 0755): the build's own may be under a directory closed to other
/// users (a checkout under /root, a `mktemp -d`). A copy may be removed
/// once its process runs.
#[allow(dead_code)]
pub fn runnable_by_others(src: &std::path::Path, dir: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod dir");
    let name = src.file_name().expect("a program's file name");
    let bin = dir.join(name);
    std::fs::copy(src, &bin).expect("copy of the program");
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    bin
}

/// How long a case may take unless its row says otherwise: a case that
/// takes longer is a hang, and fails.
pub const BOUND: Duration = Duration::from_secs(20);

/// What a process did: its exit code (`None`: killed at the bound or by a
/// signal), its output, how long it ran, and whether it was killed at the
/// bound.
#[derive(Debug)]
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
    pub timed_out: bool,
}

/// Runs `cmd` (stdin closed, output captured) and kills it if it is
/// still running after `bound`.
pub fn run_bounded(mut cmd: Command, bound: Duration) -> Ran {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let t0 = Instant::now();
    let mut child = cmd.spawn().expect("spawn the binary under test");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let ereader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if t0.elapsed() > bound {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("wait after kill");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = t0.elapsed();
    let stdout = String::from_utf8_lossy(&reader.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&ereader.join().unwrap_or_default()).into_owned();
    Ran {
        code: status.code(),
        stdout,
        stderr,
        took,
        timed_out,
    }
}

/// `pipelab ARGS` within [`BOUND`].
pub fn pipelab(args: &[&str]) -> Ran {
    let mut cmd = Command::new(PIPELAB);
    cmd.args(args);
    run_bounded(cmd, BOUND)
}

/// A case's expected outcome.
#[derive(Clone, Copy, Debug)]
pub enum Outcome {
    /// Exit 0, and stdout contains the text.
    Accepted(&'static str),
    /// Exit with this code, and stderr contains the text (a checked
    /// rejection).
    Rejected(i32, &'static str),
}

impl Outcome {
    /// A rejection whose message is checked.
    pub fn is_checked_rejection(&self) -> bool {
        matches!(self, Outcome::Rejected(_, m) if !m.is_empty())
    }
}

/// Whether `text` holds the parts of `want` separated by `…`, in order
/// (a `want` without `…` is one part).
pub fn holds(text: &str, want: &str) -> bool {
    let mut rest = text;
    for part in want.split('\u{2026}') {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

/// Checks `ran` against `want` (with `FILE` in the expected text standing
/// for `file`; `…` between parts that must come in that order) within
/// `bound`; the reason it does not match, if not.
pub fn verdict(ran: &Ran, want: Outcome, file: &str, bound: Duration) -> Result<(), String> {
    verdict_with(ran, want, &[("FILE", file)], bound)
}

/// [`verdict`] with other placeholders: each `(name, value)` of `subst`
/// replaced in the expected text.
pub fn verdict_with(
    ran: &Ran,
    want: Outcome,
    subst: &[(&str, &str)],
    bound: Duration,
) -> Result<(), String> {
    let fill = |t: &str| {
        subst
            .iter()
            .fold(t.to_string(), |acc, (k, v)| acc.replace(k, v))
    };
    if ran.timed_out {
        return Err(format!("still running after {bound:?} (a hang)"));
    }
    if ran.took > bound {
        return Err(format!("took {:?}, more than {bound:?}", ran.took));
    }
    if ran.stderr.contains("panicked") || ran.stderr.contains("RUST_BACKTRACE") {
        return Err(format!("panicked: {}", ran.stderr));
    }
    match want {
        Outcome::Accepted(text) => {
            let text = fill(text);
            if ran.code != Some(0) || !holds(&ran.stdout, &text) {
                return Err(format!(
                    "want success with {text:?} in stdout, got {:?}\nstdout: {}\nstderr: {}",
                    ran.code, ran.stdout, ran.stderr
                ));
            }
        }
        Outcome::Rejected(code, text) => {
            let text = fill(text);
            if ran.code != Some(code) || !holds(&ran.stderr, &text) {
                return Err(format!(
                    "want exit {code} with {text:?} in stderr, got {:?}\nstderr: {}",
                    ran.code, ran.stderr
                ));
            }
        }
    }
    Ok(())
}

/// Runs every check, collecting failures, and fails with all of them.
pub fn all_pass(failures: Vec<String>, of: usize) {
    assert!(
        failures.is_empty(),
        "{} of {of} cases failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Prints this file's count line and checks its minimums.
pub fn tally(file: &str, cases: usize, rejections: usize, min_cases: usize, min_rejections: usize) {
    println!("HOSTILE {file} cases {cases} rejections {rejections}");
    assert!(
        cases >= min_cases,
        "{file}: {cases} cases, fewer than {min_cases}"
    );
    assert!(
        rejections >= min_rejections,
        "{file}: {rejections} checked rejections, fewer than {min_rejections}"
    );
}
