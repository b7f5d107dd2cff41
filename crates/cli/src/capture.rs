//! `--pcap FILE`, `--events FILE` and `--events-max SIZE`: the flags of
//! every command that can record what crosses its emulation (`shell`,
//! `bridge`, `topo up`, `sim`, and `pipelabd`'s host mode). See
//! `pipelab_io::capture`.

use clap::Args;
use pipelab_io::capture::{FileError, Files};
use std::path::PathBuf;

/// The recording flags.
#[derive(Args, Debug, Default, Clone)]
pub struct CaptureArgs {
    /// Write a packet capture (pcapng) to FILE: two interfaces per port
    /// ("NAME in", "NAME out"), every frame where it entered and where it
    /// left, drops with their reason as a packet comment. Read it with
    /// tcpdump -r or tshark -r.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Write an event log to FILE: one line per arrival, departure, drop
    /// (with reason), CE mark, duplicate, corruption, with time, port,
    /// flow, size and backlog; JSON lines, or CSV if FILE ends in .csv.
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Stop writing the event log at this size (e.g. 100MB); the run
    /// says at exit how many events did not fit.
    #[arg(
        long,
        value_name = "SIZE",
        requires = "events",
        allow_hyphen_values = true
    )]
    pub events_max: Option<String>,
}

/// Why the recording flags cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// `--events-max` is not a size.
    #[error("error: --events-max '{value}': {error}")]
    Max {
        /// The value given.
        value: String,
        /// Why.
        error: pipelab_lang::units::UnitError,
    },
    /// A file cannot be written (the message names the flag and path).
    #[error("error: {0}")]
    File(#[from] FileError),
}

impl CaptureArgs {
    /// Whether anything is to be recorded.
    pub fn any(&self) -> bool {
        self.pcap.is_some() || self.events.is_some()
    }

    /// The files these flags write, for [`crate::outputs::check`].
    pub fn named(&self) -> [crate::outputs::Named<'_>; 2] {
        use crate::outputs::Use::Writes;
        [
            ("--pcap", self.pcap.as_deref(), Writes),
            ("--events", self.events.as_deref(), Writes),
        ]
    }

    /// The cap of `--events-max`, bytes.
    pub fn events_max(&self) -> Result<Option<u64>, CaptureError> {
        self.events_max
            .as_deref()
            .map(|v| {
                pipelab_lang::units::parse_size(v).map_err(|error| CaptureError::Max {
                    value: v.to_string(),
                    error,
                })
            })
            .transpose()
    }

    /// The files, opened now (so a path that cannot be written is
    /// refused before the run, naming it); `None` if none is asked for.
    pub fn files(&self) -> Result<Option<Files>, CaptureError> {
        let max = self.events_max()?;
        if !self.any() {
            return Ok(None);
        }
        Ok(Some(Files::create(
            self.pcap.as_deref(),
            self.events.as_deref(),
            max,
        )?))
    }

    /// The flags again, with absolute paths, for a process started in
    /// another directory (a background `topo up`).
    pub fn to_args(&self) -> Vec<String> {
        let abs = |p: &PathBuf| {
            std::path::absolute(p)
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string()
        };
        let mut a = Vec::new();
        if let Some(p) = &self.pcap {
            a.extend(["--pcap".to_string(), abs(p)]);
        }
        if let Some(p) = &self.events {
            a.extend(["--events".to_string(), abs(p)]);
        }
        if let Some(m) = &self.events_max {
            a.extend(["--events-max".to_string(), m.clone()]);
        }
        a
    }
}
