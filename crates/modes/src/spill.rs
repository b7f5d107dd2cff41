//! Queues larger than memory in the live modes: where a run's frames go
//! on disk (`--spill-dir`), written in the host ledger before the run,
//! and what the run says of its pipes' queues at start.
//!
//! The mechanism is [`pipelab_io::spill`]'s (frames of pipes marked
//! `spill` kept on disk while the memory cap is short); this module only
//! places it: one directory of the run's own under each directory given
//! (`DIR/pipelab-spill-PID`), recorded in the ledger
//! ([`Change::SpillDir`]) so that `pipelab cleanup` removes it after a
//! `kill -9` (its files have no names, so nothing else can remain).

use crate::ledger::{Change, Record};
use pipelab_emu::{Spec, TOPO_PIPE_BASE};
use pipelab_engine::config::QueueLimit;
use pipelab_io::buffers::BUF_SIZE;
use std::path::{Path, PathBuf};

/// The default `--spill-dir`: on disk (not a tmpfs, which is memory),
/// cleaned by the system if everything else fails.
pub const DEFAULT_DIR: &str = "/var/tmp";

/// `--spill-dir DIR[,DIR2]`: one directory, or two (NetPath's two disks:
/// one file read while the other is written).
pub fn parse_dirs(text: &str) -> Result<Vec<PathBuf>, String> {
    let dirs: Vec<PathBuf> = text
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .collect();
    match dirs.len() {
        1 | 2 => Ok(dirs),
        0 => Err("no directory given (e.g. --spill-dir /var/tmp)".into()),
        n => Err(format!(
            "{n} directories given: one, or two (one file read while the other is written)"
        )),
    }
}

/// Each of `dirs` is an existing directory: else why not, naming it.
pub fn check_dirs(dirs: &[PathBuf]) -> Result<(), String> {
    for d in dirs {
        match std::fs::metadata(d) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(format!("{} is not a directory", d.display())),
            Err(e) => return Err(format!("{}: {e}", d.display())),
        }
    }
    Ok(())
}

/// Whether a pipe of `spec` is marked `spill`.
pub fn any_spill(spec: &Spec) -> bool {
    spec.pipes.values().any(|p| p.spill)
}

/// The run's own directories under `bases` (`DIR/pipelab-spill-PID`),
/// each written in `record` before anything is made in it.
/// When a pipe of `spec` is marked `spill`, each of `bases` must be a
/// directory: else an error naming it and the flag.
pub fn prepare(
    record: &mut Record,
    bases: &[PathBuf],
    spec: &Spec,
) -> Result<Vec<PathBuf>, std::io::Error> {
    if any_spill(spec) {
        check_dirs(bases).map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("--spill-dir {e}"))
        })?;
    }
    let pid = std::process::id();
    let mut dirs = Vec::with_capacity(bases.len());
    for b in bases {
        let d = pipelab_io::spill::run_dir(b, pid);
        record
            .record(Change::SpillDir { path: d.clone() })
            .map_err(std::io::Error::other)?;
        dirs.push(d);
    }
    Ok(dirs)
}

/// The memory pipe `queue` may need: its bound in bytes, or a buffer per
/// slot.
fn queue_memory(q: QueueLimit) -> u64 {
    match q {
        QueueLimit::Bytes(b) => b,
        QueueLimit::Slots(n) => n as u64 * BUF_SIZE as u64,
    }
}

/// What a run says at start of its pipes' queues, given `cap` (the
/// memory cap of the worker that runs the pipe) and `dirs` (the run's
/// spill directories): for a pipe marked `spill`, where its frames go
/// beyond memory; for a queue that memory cannot hold, without `spill`,
/// that its excess will be dropped, and how to keep it.
pub fn notes(spec: &Spec, cap: u64, dirs: &[PathBuf], who: &str) -> Vec<String> {
    let mut out = Vec::new();
    let shown = |d: &Path| d.display().to_string();
    for (&n, def) in spec.pipes.range(..TOPO_PIPE_BASE) {
        let q = def.config.queue();
        let need = queue_memory(q);
        let words = pipelab_lang::units::format_queue(q);
        let capped = pipelab_lang::units::format_size(cap);
        if def.spill {
            let at: Vec<String> = dirs.iter().map(|d| shown(d)).collect();
            out.push(format!(
                "{who}: pipe {n}: frames waiting beyond {} of memory are kept on disk in {}",
                pipelab_lang::units::format_size(pipelab_io::buffers::spill_mark(cap)),
                at.join(" and ")
            ));
        } else if need > cap {
            out.push(format!(
                "note: pipe {n}: queue {words} is larger than --mem-cap ({capped}): frames beyond memory are dropped (memory); `spill` on the pipe keeps them on disk"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> Spec {
        let mut c = pipelab_lang::Config::new();
        c.apply_script(text).expect("valid");
        pipelab_emu::lower_config(&c, &mut |p| Err(format!("no file {p}"))).expect("lowers")
    }

    /// A pass proves a spilling pipe is said to spill where, a queue
    /// larger than the cap without `spill` is said to be dropped with the
    /// word that keeps it, and a queue that fits says nothing.
    #[test]
    fn notes_say_where_and_what_to_write() {
        let s = spec(
            "pipe 1 config bw 10Mbit/s queue 256MB spill\n\
             pipe 2 config bw 10Mbit/s queue 256MB\n\
             pipe 3 config bw 10Mbit/s queue 50\n",
        );
        let dirs = vec![PathBuf::from("/var/tmp/pipelab-spill-7")];
        let n = notes(&s, 16 << 20, &dirs, "pipelab shell");
        assert_eq!(
            n,
            vec![
                "pipelab shell: pipe 1: frames waiting beyond 12MB of memory are kept on disk in /var/tmp/pipelab-spill-7".to_string(),
                "note: pipe 2: queue 256MB is larger than --mem-cap (16MB): frames beyond memory are dropped (memory); `spill` on the pipe keeps them on disk".to_string(),
            ]
        );
    }

    /// A pass proves one or two directories are taken, more or none
    /// refused, and a missing directory or a file named where a directory
    /// is wanted is refused naming it.
    #[test]
    fn spill_dirs_are_one_or_two_directories() {
        let tmp = std::env::temp_dir();
        let t = tmp.display().to_string();
        assert_eq!(parse_dirs(&t), Ok(vec![tmp.clone()]));
        assert_eq!(
            parse_dirs(&format!("{t},{t}")),
            Ok(vec![tmp.clone(), tmp.clone()])
        );
        assert!(parse_dirs(&format!("{t},{t},{t}"))
            .unwrap_err()
            .contains("3 directories given"));
        assert!(parse_dirs("").is_err());
        assert_eq!(check_dirs(std::slice::from_ref(&tmp)), Ok(()));
        assert_eq!(
            check_dirs(&[PathBuf::from("/no/such/dir")]),
            Err("/no/such/dir: No such file or directory (os error 2)".into())
        );
        assert_eq!(
            check_dirs(&[PathBuf::from("/proc/self/status")]),
            Err("/proc/self/status is not a directory".into())
        );
    }
}
