//! Host mode behind pipelabd: this host's own traffic through the
//! netfilter queue ([`pipelab_modes::host::HostPlane`]), fail-closed while
//! pipelabd is not running, recording (`--pcap`, `--events`,
//! `--interval`, `--series`) what crosses it. It lives here, beside the
//! binary, because the control crate does not depend on the modes.

use std::path::PathBuf;
use std::sync::Arc;

use pipelab_control::plane::{check_pipes, Plane, PlaneError, Prepared, Preparer};
use pipelab_emu::Compiled;
use pipelab_lang::{Config, IpNet};
use pipelab_modes::host::{HostOptions, HostPlane, HostStats, Recording};

/// The intervals of each pipe `pipelab stats` carries (5 minutes at
/// 100 ms); the --series file has them all.
pub const SERIES_WINDOW: usize = 3000;

/// The files host mode writes (`--pcap`, `--events`, `--series`), for
/// the summary at the stop.
#[derive(Debug, Default)]
pub struct Outputs {
    /// The capture.
    pub pcap: Option<PathBuf>,
    /// The event log.
    pub events: Option<PathBuf>,
    /// The series' CSV.
    pub series: Option<PathBuf>,
}

impl Outputs {
    /// One line on what was written, if anything was asked for.
    fn summary(&self, s: &HostStats) -> Option<String> {
        let mut parts = Vec::new();
        let c = s.capture.unwrap_or_default();
        if let Some(p) = &self.pcap {
            parts.push(format!("capture {}: {} packets", p.display(), c.packets));
        }
        if let Some(p) = &self.events {
            parts.push(format!("event log {}: {} events", p.display(), c.events));
        }
        if let Some(p) = &self.series {
            let n: usize = s
                .timeseries
                .as_ref()
                .map_or(0, |t| t.pipes.iter().map(|p| p.timeseries.len()).sum());
            let more = s.timeseries.as_ref().map_or(0, |t| t.not_kept);
            parts.push(format!(
                "series {}: {} pipe intervals",
                p.display(),
                n as u64 + more
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// Host mode: this host's own traffic.
pub struct Host {
    plane: HostPlane,
    outputs: Outputs,
}

/// Why host mode could not start or stop.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The table, the queue or the runner could not be set up.
    #[error("cannot start host mode (nftables table {table}): {source}")]
    Start {
        /// The nftables table.
        table: String,
        /// Why.
        source: std::io::Error,
    },
    /// The plane did not stop cleanly.
    #[error("stopping host mode: {0}")]
    Stop(std::io::Error),
}

impl Host {
    /// Starts the host plane (installs the nftables table and the queue);
    /// `scope` limits it to traffic with peers in these networks (empty:
    /// all of the host's IP traffic).
    /// `rec` says what it records (`outputs`: the files, for the
    /// summary at the stop).
    pub fn start(
        opts: HostOptions,
        scope: &[IpNet],
        rec: Recording,
        outputs: Outputs,
    ) -> Result<Host, HostError> {
        let table = opts.table.clone();
        let plane = HostPlane::start_recording(opts, scope, rec)
            .map_err(|source| HostError::Start { table, source })?;
        Ok(Host { plane, outputs })
    }
}

impl Plane for Host {
    /// Checks the files pipes name as the daemon reads them (absolute
    /// paths, regular files, within the time budget), then lowers and
    /// compiles: all without the server's lock.
    fn preparer(&self) -> Preparer {
        let seed = self.plane.seed();
        Arc::new(move |cfg: &Config| {
            check_pipes(cfg)?;
            Ok(Prepared::new(HostPlane::compile(cfg, seed)?))
        })
    }

    fn commit(&mut self, prepared: Prepared) -> Result<(), PlaneError> {
        self.plane.apply_compiled(prepared.take::<Compiled>()?)?;
        Ok(())
    }

    fn stats(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self.plane.stats()).unwrap_or_default();
        v["plane"] = serde_json::Value::from("host");
        v
    }

    /// Stops the plane: its drain, then the recordings flushed and
    /// closed, what they hold said on stderr.
    fn stop(self: Box<Self>) -> Result<(), PlaneError> {
        let stats = self.plane.stop_with_stats().map_err(HostError::Stop)?;
        if let Some(line) = self.outputs.summary(&stats) {
            eprintln!("pipelabd: wrote {line}");
        }
        Ok(())
    }

    fn mode(&self) -> &'static str {
        "host"
    }
}
