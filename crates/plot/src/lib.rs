//! # pipelab-plot: graphs of pipelab's reports
//!
//! What `pipelab plot` draws, as a library of text in and image bytes
//! out:
//!
//! * [`input`] reads a report (its kind told from its content: a `pipelab
//!   sim --json` report, a live `--stats` file, a probe's report or
//!   series, samples) into one model of named series, a [`Data`].
//! * [`events`] reads an event log (`--events`, JSON lines or CSV) into
//!   the same model.
//! * [`draw`] draws one [`Kind`] of graph from a [`Data`] with
//!   `plotters`: throughput (capacity, arrivals and departures over
//!   time, Mahimahi's graph), delay over time, per-packet delay
//!   (scatter), CDF, shares; as SVG text, an RGB buffer, or a PNG file's
//!   bytes. Text is drawn with an embedded font (a cut of DejaVu Sans,
//!   see `assets/DejaVuSans-LICENSE.txt`) through `ab_glyph`, so a PNG
//!   needs no font installed and no system library.
//!
//! Every input is bounded in the time and memory it costs: a reader's
//! work grows with its text, whatever numbers the text holds, and a
//! drawing with the size of its image (at most [`SIDES`] a side) and
//! its number of points.
//!
//! What it deliberately does not do: touch a file, a path or a terminal
//! (the CLI reads the input, checks the output and writes it), or decide
//! exit statuses; its errors are sentences for the CLI to frame. It
//! depends on `serde_json` (the reports are JSON), `plotters` and `png`,
//! and on `clap` only with the feature `clap` (for [`Kind`] as a flag's
//! value).

pub mod draw;
pub mod events;
pub mod input;

pub use input::{read, Data, Missing};

/// A kind of graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Kind {
    /// Capacity, arrivals and departures over time (bit/s).
    Throughput,
    /// One-way delay over time (ms).
    Delay,
    /// The delay's distribution (or of any samples).
    Cdf,
    /// Every packet's delay at its arrival.
    Scatter,
    /// One bar per flow (or pipe): its throughput or bytes.
    Shares,
}

impl Kind {
    /// The order in which the default kind is chosen.
    pub const BEST_FIRST: [Kind; 5] = [
        Kind::Throughput,
        Kind::Scatter,
        Kind::Delay,
        Kind::Cdf,
        Kind::Shares,
    ];

    /// Its name, as `--kind` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Throughput => "throughput",
            Kind::Delay => "delay",
            Kind::Cdf => "cdf",
            Kind::Scatter => "scatter",
            Kind::Shares => "shares",
        }
    }
}

/// The smallest and largest side of an image, pixels.
pub const SIDES: std::ops::RangeInclusive<u32> = 200..=8000;
