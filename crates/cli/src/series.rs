//! `--interval DURATION` and `--series FILE` of the live modes (`shell`,
//! `bridge`, `topo up`, `pipelabd`): every pipe's counters over time, in the `--stats` report's
//! `timeseries` and as CSV. See `pipelab_modes::series`.

use clap::Args;
use pipelab_modes::series::SeriesOptions;
use std::path::PathBuf;

/// The default interval of `--series` given alone.
const DEFAULT_INTERVAL: &str = "100ms";

/// The series flags.
#[derive(Args, Debug, Default, Clone)]
pub struct SeriesArgs {
    /// Sample every pipe at this interval (e.g. 100ms): arrivals,
    /// departures, offered and delivered rate, capacity, backlog and drops
    /// per interval, in the report's `timeseries` (--stats; `pipelab
    /// stats` of pipelabd) and in the --series file. `pipelab plot` draws
    /// them.
    #[arg(long, value_name = "DURATION")]
    pub interval: Option<String>,
    /// Write the series as CSV to FILE while the run goes on, one row per
    /// pipe per interval (flushed each interval); the interval is 100ms
    /// unless --interval says otherwise.
    #[arg(long, value_name = "FILE")]
    pub series: Option<PathBuf>,
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
    #[error("--interval: nowhere to write the series: add --stats FILE (JSON report) or --series FILE (CSV)")]
    Nowhere,
    /// The `--series` file cannot be written.
    #[error("--series {}: cannot write: {source}", path.display())]
    File {
        /// The path given.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl SeriesArgs {
    /// The options, with the CSV file opened now (a path that cannot be
    /// written is refused before the run); `None` if no series is asked
    /// for. `stats`: whether a --stats report will hold them.
    pub fn options(&self, stats: bool) -> Result<Option<SeriesOptions>, SeriesError> {
        if self.interval.is_none() && self.series.is_none() {
            return Ok(None);
        }
        if self.series.is_none() && !stats {
            return Err(SeriesError::Nowhere);
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
        Ok(Some(SeriesOptions {
            interval,
            csv,
            names: Default::default(),
            latest: None,
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
        if let Some(p) = &self.series {
            let abs = std::path::absolute(p).unwrap_or_else(|_| p.clone());
            a.extend(["--series".to_string(), abs.display().to_string()]);
        }
        a
    }
}

/// The `--series` file, created now (a path that cannot be written is
/// refused before the run, naming it).
pub fn open_csv(path: &std::path::Path) -> Result<(PathBuf, std::fs::File), SeriesError> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .open(path)
        .map(|f| (path.to_path_buf(), f))
        .map_err(|source| SeriesError::File {
            path: path.to_path_buf(),
            source,
        })
}
