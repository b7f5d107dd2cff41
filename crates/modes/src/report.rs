//! What every live mode reports of its emulation, in one shape: the
//! counters of each rule and each flow queue (`--stats` files, a
//! topology's `status`, the control protocol's `stats`).

use pipelab_emu::Emulation;
use serde::Serialize;

/// Counters of one flow queue over the run (all its instances).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct QueueCounters {
    /// The queue's number.
    pub id: u32,
    /// Packets offered to it.
    pub arrivals: u64,
    /// Packets it dropped because an instance was full.
    pub drops: u64,
    /// Packets its queue management (RED, GRED, CoDel, PIE) dropped.
    pub aqm_drops: u64,
    /// Packets its scheduler served.
    pub served: u64,
    /// Bytes its scheduler served.
    pub served_bytes: u64,
    /// Instances created so far (one per masked key; 1 without a mask).
    pub instances: u64,
}

/// Per-rule counters: (number, packets, bytes), the default rule last.
pub fn rule_counters(emu: &Emulation) -> Vec<(u32, u64, u64)> {
    emu.rules()
        .map(|(n, _, c)| (n, c.packets, c.bytes))
        .collect()
}

/// Counters of every flow queue (`queue N`), in number order.
pub fn queue_counters(emu: &Emulation) -> Vec<QueueCounters> {
    emu.queue_numbers()
        .filter_map(|id| {
            let st = emu.queue_stats(emu.queue(id)?)?;
            let f = st.flows;
            Some(QueueCounters {
                id,
                arrivals: f.arrivals,
                drops: f.drops,
                aqm_drops: f.aqm_drops,
                served: f.served,
                served_bytes: f.served_bytes,
                instances: st.instances.created,
            })
        })
        .collect()
}

/// One pipe's counters (a dynamic pipe's totals over its instances).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PipeCounters {
    /// The pipe's number.
    pub number: u32,
    /// Packets that arrived (accepted or not).
    pub arrivals: u64,
    /// Bytes that arrived.
    pub arrival_bytes: u64,
    /// Packets that left the delay line.
    pub departures: u64,
    /// Bytes that left the delay line.
    pub departure_bytes: u64,
    /// Dropped at a full queue.
    pub drops: u64,
    /// Dropped by the loss model.
    pub loss_drops: u64,
    /// Dropped by queue management.
    pub aqm_drops: u64,
    /// Refused while the pipe was down (`pipe N down DURATION`).
    pub down_drops: u64,
    /// Copies made by duplication.
    pub duplicated: u64,
    /// Packets queued now.
    pub backlog: u32,
    /// Packets in the delay line now.
    pub in_delay_line: u32,
}

/// Counters of every pipe of the configuration (below the topology's
/// numbers), in number order.
pub fn pipe_counters(emu: &Emulation) -> Vec<PipeCounters> {
    emu.pipe_numbers()
        .take_while(|&n| n < pipelab_emu::TOPO_PIPE_BASE)
        .filter_map(|number| {
            let t = emu.pipe_totals(number)?;
            Some(PipeCounters {
                number,
                arrivals: t.arrivals,
                arrival_bytes: t.arrival_bytes,
                departures: t.departures,
                departure_bytes: t.departure_bytes,
                drops: t.drops,
                loss_drops: t.loss_drops,
                aqm_drops: t.aqm_drops,
                down_drops: t.down_drops,
                duplicated: t.duplicated,
                backlog: t.backlog,
                in_delay_line: t.in_delay_line,
            })
        })
        .collect()
}

/// The counters of a runner's emulation in the control protocol's stats
/// format (`pipelab_control`'s "The stats format"): `plane` (the mode),
/// `pipes`, `rules`, `queues`, `runner` (the accounting) and `lateness`.
pub fn stats_json(mode: &str, r: &pipelab_io::runner::Runner) -> serde_json::Value {
    let e = r.emulation();
    serde_json::json!({
        "plane": mode,
        "pipes": pipe_counters(e),
        "rules": rule_counters(e),
        "queues": queue_counters(e),
        "runner": r.stats(),
        "lateness": r.lateness(),
        "seed": e.seed(),
    })
}

/// The most resident memory this process has had (`VmHWM` of
/// `/proc/self/status`), bytes; 0 where it cannot be read.
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// The file `--stats` names, opened for writing when the run is set up,
/// so that a path that cannot be written is refused before anything
/// runs (it used to be refused after the run, naming no path), and
/// written when the run ends. A file this made and never wrote (the run
/// failed first) is removed; an existing file keeps its contents until
/// the report replaces them.
#[derive(Debug)]
pub struct StatsFile {
    path: std::path::PathBuf,
    file: Option<std::fs::File>,
    created: bool,
}

/// The `--stats` file cannot be opened for writing.
#[derive(Debug, thiserror::Error)]
#[error("--stats {}: cannot write: {source}", path.display())]
pub struct StatsFileError {
    /// The path given.
    pub path: std::path::PathBuf,
    /// Why.
    pub source: std::io::Error,
}

impl StatsFile {
    /// Open `path` for writing (made if absent) with the one opener of
    /// output files ([`pipelab_lang::output::open_output`]: another
    /// user's symbolic link is refused); the error names the path.
    pub fn create(path: &std::path::Path) -> Result<StatsFile, StatsFileError> {
        pipelab_lang::output::open_output(path, pipelab_lang::output::Existing::Keep)
            .map(|o| StatsFile {
                path: path.to_path_buf(),
                file: Some(o.file),
                created: o.created,
            })
            .map_err(|source| StatsFileError {
                path: path.to_path_buf(),
                source,
            })
    }

    /// Replace the file's contents with `text`; the error names the path.
    pub fn write(mut self, text: &str) -> std::io::Result<()> {
        use std::io::{Seek, Write};
        let Some(mut f) = self.file.take() else {
            return Ok(());
        };
        f.set_len(0)
            .and_then(|()| f.rewind())
            .and_then(|()| f.write_all(text.as_bytes()))
            .and_then(|()| f.flush())
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("writing the report to {}: {e}", self.path.display()),
                )
            })
    }
}

impl Drop for StatsFile {
    fn drop(&mut self) {
        // Not written: the run never reached its report.
        if self.file.take().is_some() && self.created {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves a path that cannot be written is refused at once
    /// naming it, a good one is written with exactly the report, and a
    /// file made for a run that never wrote it is removed.
    #[test]
    fn a_stats_file_is_checked_first_and_removed_if_unused() {
        let dir = std::env::temp_dir().join(format!("pipelab-stats-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let missing = dir.join("no/such/dir/s.json");
        assert_eq!(
            StatsFile::create(&missing)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Err(format!(
                "--stats {}: cannot write: No such file or directory (os error 2)",
                missing.display()
            ))
        );
        assert_eq!(
            StatsFile::create(&dir)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Err(format!(
                "--stats {}: cannot write: Is a directory (os error 21)",
                dir.display()
            ))
        );
        let p = dir.join("s.json");
        std::fs::write(&p, "an older, longer report").expect("old");
        StatsFile::create(&p)
            .expect("opens")
            .write("{}")
            .expect("writes");
        assert_eq!(std::fs::read_to_string(&p).expect("read"), "{}");
        std::fs::remove_file(&p).expect("rm");
        drop(StatsFile::create(&p).expect("opens"));
        assert!(!p.exists(), "an unused file made for the run is removed");
        std::fs::remove_dir_all(&dir).expect("clean");
    }
}
