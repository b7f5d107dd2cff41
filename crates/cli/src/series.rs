//! `--interval DURATION`, `--series FILE` and `--flow-series FILE` of the
//! live modes (`shell`, `bridge`, `topo up`, `pipelabd`): every pipe's and
//! every flow's counters over time, in the `--stats` report's `timeseries`
//! and as CSV. See `pipelab_modes::series`.

use clap::Args;
use pipelab_modes::series::SeriesOptions;
use std::path::PathBuf;

/// The default interval of `--series` given alone.
const DEFAULT_INTERVAL: &str = "100ms";

/// The series flags.
#[derive(Args, Debug, Clone)]
pub struct SeriesArgs {
    /// Sample every pipe and every flow (IP 5-tuple) at this interval
    /// (e.g. 100ms): per pipe arrivals, departures, offered and delivered
    /// rate, capacity, backlog and drops; per flow packets and bytes sent
    /// and delivered, their rates, the delay inside the emulator and drops
    /// by reason; in the report's `timeseries` (--stats; `pipelab stats`
    /// of pipelabd) and in the --series and --flow-series files. `pipelab
    /// plot` draws them.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub interval: Option<String>,
    /// Write the series as CSV to FILE while the run goes on, one row per
    /// pipe per interval (flushed each interval); the interval is 100ms
    /// unless --interval says otherwise.
    #[arg(long, value_name = "FILE")]
    pub series: Option<PathBuf>,
    /// Write every flow's intervals as CSV to FILE while the run goes on,
    /// one row per flow per interval in which it sent, delivered or lost
    /// a packet (flushed each interval); the interval is 100ms unless
    /// --interval says otherwise.
    #[arg(long, value_name = "FILE")]
    pub flow_series: Option<PathBuf>,
    /// The most flows with rows of their own in the series (the first
    /// seen); later flows are summed into one flow named `other`, and
    /// counted (`other_flows`), so that memory stays bounded.
    #[arg(
        long,
        value_name = "N",
        default_value_t = pipelab_emu::series::DEFAULT_FLOWS,
        allow_negative_numbers = true
    )]
    pub flow_limit: usize,
}

/// Why the series flags cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SeriesError {
    /// `--interval` is not a positive duration.
    #[error("--interval {value}: {why}")]
    Interval {
        /// The value given.
        value: String,
        /// Why.
        why: String,
    },
    /// `--interval` with nowhere to write the series.
    #[error("--interval: nowhere to write the series: add --stats FILE (JSON report), --series FILE or --flow-series FILE (CSV)")]
    Nowhere,
    /// `--flow-limit 0`.
    #[error("--flow-limit 0: give at least 1 (flows beyond it are summed into `other`)")]
    FlowLimit,
    /// The `--series` file cannot be written.
    #[error("--{flag} {}: cannot write: {source}", path.display())]
    File {
        /// The flag (`series`, `flow-series`).
        flag: &'static str,
        /// The path given.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl Default for SeriesArgs {
    fn default() -> SeriesArgs {
        SeriesArgs {
            interval: None,
            series: None,
            flow_series: None,
            flow_limit: pipelab_emu::series::DEFAULT_FLOWS,
        }
    }
}

impl SeriesArgs {
    /// The files these flags write, for [`crate::outputs::check`].
    pub fn named(&self) -> [crate::outputs::Named<'_>; 2] {
        use crate::outputs::Use::Writes;
        [
            ("--series", self.series.as_deref(), Writes),
            ("--flow-series", self.flow_series.as_deref(), Writes),
        ]
    }

    /// The options, with the CSV file opened now (a path that cannot be
    /// written is refused before the run); `None` if no series is asked
    /// for. `stats`: whether a --stats report will hold them.
    pub fn options(&self, stats: bool) -> Result<Option<SeriesOptions>, SeriesError> {
        if self.interval.is_none() && self.series.is_none() && self.flow_series.is_none() {
            return Ok(None);
        }
        if self.series.is_none() && self.flow_series.is_none() && !stats {
            return Err(SeriesError::Nowhere);
        }
        if self.flow_limit == 0 {
            return Err(SeriesError::FlowLimit);
        }
        let value = self.interval.as_deref().unwrap_or(DEFAULT_INTERVAL);
        let interval = match pipelab_lang::units::parse_duration(value) {
            Ok(d) if d.as_nanos() >= 1_000_000 => d,
            Ok(_) => {
                return Err(SeriesError::Interval {
                    value: value.into(),
                    why: "give at least 1ms (each sample asks every worker)".into(),
                })
            }
            Err(e) => {
                return Err(SeriesError::Interval {
                    value: value.into(),
                    why: e.to_string(),
                })
            }
        };
        let csv = self.series.as_deref().map(open_csv).transpose()?;
        let flow_csv = self
            .flow_series
            .as_deref()
            .map(|p| open_file("flow-series", p))
            .transpose()?;
        Ok(Some(SeriesOptions {
            interval,
            csv,
            names: Default::default(),
            latest: None,
            flow_csv,
            flows: self.flow_limit,
        }))
    }
}

impl SeriesArgs {
    /// The flags again, with an absolute path, for a process started in
    /// another directory (a background topology).
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(i) = &self.interval {
            a.extend(["--interval".to_string(), i.clone()]);
        }
        for (flag, p) in [
            ("--series", &self.series),
            ("--flow-series", &self.flow_series),
        ] {
            if let Some(p) = p {
                let abs = std::path::absolute(p).unwrap_or_else(|_| p.clone());
                a.extend([flag.to_string(), abs.display().to_string()]);
            }
        }
        if self.flow_limit != pipelab_emu::series::DEFAULT_FLOWS {
            a.extend(["--flow-limit".to_string(), self.flow_limit.to_string()]);
        }
        a
    }
}

/// The `--series` file, created now (a path that cannot be written is
/// refused before the run, naming it).
pub fn open_csv(path: &std::path::Path) -> Result<(PathBuf, std::fs::File), SeriesError> {
    open_file("series", path)
}

/// The file of `--FLAG`, created now (mode 0644, less the umask).
pub fn open_file(
    flag: &'static str,
    path: &std::path::Path,
) -> Result<(PathBuf, std::fs::File), SeriesError> {
    pipelab_io::capture::create_file(path)
        .map(|f| (path.to_path_buf(), f))
        .map_err(|source| SeriesError::File {
            flag,
            path: path.to_path_buf(),
            source,
        })
}
