//! `--interval D` of a live mode: what each pipe did over time, in the
//! shape of `pipelab sim --interval` ([`pipelab_emu::series`]).
//!
//! A sampler thread asks every worker, each between two of its steps
//! ([`LiveRunner::with_each`]), for its own pipes' counters every `D`
//! from the emulation's start (its clock's epoch); an interval is the difference of two samples, over
//! the time that really passed between them (the runners answer within
//! microseconds of the boundary, not exactly at it), and its capacity is
//! that of the pipe's configuration at the sample (a trace's delivery
//! opportunities in the interval; `null` for a time-varying graph, whose
//! walk the runner does not expose, and for unlimited, `wireless` and
//! `profile` links). A last sample is taken when the run ends.
//!
//! Sampling reads counters and decides nothing; its cost is one command
//! per worker per interval. The rows go to the `--series` CSV file as
//! they are taken (flushed each interval, so it can be watched) and, up to
//! [`MAX_KEPT`] intervals in all, to the report's `timeseries`.

use crate::live::LiveRunner;
use pipelab_emu::series::{Capacity, PipeInterval};
use pipelab_engine::{Duration, PipeStats};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;

/// The most pipe intervals the report keeps (the CSV file has them all).
pub const MAX_KEPT: usize = 250_000;

/// What `--interval` and `--series` ask for.
#[derive(Debug)]
pub struct SeriesOptions {
    /// The sampling interval.
    pub interval: Duration,
    /// The CSV file (`--series`), opened when the run was set up.
    pub csv: Option<(PathBuf, std::fs::File)>,
}

/// Every pipe's series of a live run, as the `--stats` report shows it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SeriesReport {
    /// The interval asked for, seconds.
    pub interval_s: f64,
    /// Each pipe's intervals, in number order.
    pub pipes: Vec<PipeSeries>,
    /// Intervals taken but not kept in the report (over [`MAX_KEPT`]).
    pub not_kept: u64,
}

/// One pipe's series.
#[derive(Clone, Debug, Serialize)]
pub struct PipeSeries {
    /// The pipe's number.
    pub id: u32,
    /// Its intervals (`t_s` from the start of the emulation).
    pub timeseries: Vec<PipeInterval>,
}

/// One worker's answer: when, and its own pipes' counters and capacity
/// since the previous sample.
type Answer = (u64, Vec<(u32, PipeStats, Option<f64>)>);

/// A sampler running beside the workers.
pub struct Sampler {
    stop: mpsc::Sender<()>,
    handle: std::thread::JoinHandle<io::Result<SeriesReport>>,
}

/// Start sampling `live` as `opts` asks (nothing without options).
pub fn start(live: &Arc<LiveRunner>, opts: Option<SeriesOptions>) -> io::Result<Option<Sampler>> {
    let Some(opts) = opts else {
        return Ok(None);
    };
    let clock = live.with(|r| r.clock()).map_err(io::Error::other)?;
    // The origin: the emulation's start (its clock's epoch), when every
    // counter was 0, so that the intervals add up to the counters.
    let first = (0, Vec::new());
    let (stop, stopped) = mpsc::channel();
    let live = Arc::clone(live);
    let handle = std::thread::Builder::new()
        .name("pipelab-series".into())
        .spawn(move || run(&live, clock, opts, first, &stopped))?;
    Ok(Some(Sampler { stop, handle }))
}

/// Take the last sample and return the series; an error if the CSV file
/// could not be written.
pub fn finish(s: Option<Sampler>, who: &str) -> io::Result<Option<SeriesReport>> {
    let Some(s) = s else {
        return Ok(None);
    };
    let _ = s.stop.send(());
    let report = s
        .handle
        .join()
        .map_err(|_| io::Error::other("the series sampler panicked"))??;
    if report.not_kept > 0 {
        eprintln!(
            "{who}: warning: the report keeps the first {MAX_KEPT} pipe intervals; \
             {} more are in the --series file only",
            report.not_kept
        );
    }
    Ok(Some(report))
}

/// Ask every worker for its pipes' counters; `prev_ns`: the previous
/// sample's instant (for a trace's capacity).
fn sample(live: &LiveRunner, prev_ns: u64) -> io::Result<Answer> {
    let answers = live
        .with_each(move |r| -> Answer {
            let now = r.clock().now().as_nanos();
            let e = r.emulation();
            let pipes = e
                .pipe_numbers()
                .filter(|&n| e.partition().is_none_or(|p| p.owns(n)))
                .filter_map(|n| {
                    let stats = e.pipe_totals(n)?;
                    let cap = e
                        .spec()
                        .pipes
                        .get(&n)
                        .and_then(|d| Capacity::of(&d.config).over(prev_ns, now));
                    Some((n, stats, cap))
                })
                .collect();
            (now, pipes)
        })
        .map_err(io::Error::other)?;
    let at = answers.iter().map(|a| a.0).max().unwrap_or(prev_ns);
    let mut pipes: Vec<_> = answers.into_iter().flat_map(|a| a.1).collect();
    pipes.sort_by_key(|p| p.0);
    Ok((at, pipes))
}

fn run(
    live: &LiveRunner,
    clock: pipelab_io::clock::Clock,
    opts: SeriesOptions,
    (start, first): Answer,
    stopped: &mpsc::Receiver<()>,
) -> io::Result<SeriesReport> {
    let d = opts.interval.as_nanos().max(1);
    let mut csv = match opts.csv {
        Some((path, f)) => {
            let mut w = io::BufWriter::new(f);
            writeln!(w, "{}", PipeInterval::CSV_HEADER).map_err(|e| named(&path, e))?;
            w.flush().map_err(|e| named(&path, e))?;
            Some((path, w))
        }
        None => None,
    };
    let mut last: BTreeMap<u32, PipeStats> = first.into_iter().map(|p| (p.0, p.1)).collect();
    let mut prev = start;
    let mut series: BTreeMap<u32, Vec<PipeInterval>> = BTreeMap::new();
    let mut kept = 0usize;
    let mut not_kept = 0u64;
    for k in 1u64.. {
        let due = start.saturating_add(k.saturating_mul(d));
        let wait = due.saturating_sub(clock.now().as_nanos());
        let done = !matches!(
            stopped.recv_timeout(std::time::Duration::from_nanos(wait)),
            Err(mpsc::RecvTimeoutError::Timeout)
        );
        let (at, pipes) = sample(live, prev)?;
        let t_s = prev.saturating_sub(start) as f64 / 1e9;
        let zero = PipeStats::default();
        for (n, stats, cap) in pipes {
            let i = PipeInterval::between(
                t_s,
                at.saturating_sub(prev),
                last.get(&n).unwrap_or(&zero),
                &stats,
                cap,
            );
            if let Some((path, w)) = csv.as_mut() {
                writeln!(w, "{}", i.csv_row(n)).map_err(|e| named(path, e))?;
            }
            if kept < MAX_KEPT {
                series.entry(n).or_default().push(i);
                kept += 1;
            } else {
                not_kept += 1;
            }
            last.insert(n, stats);
        }
        if let Some((path, w)) = csv.as_mut() {
            w.flush().map_err(|e| named(path, e))?;
        }
        prev = at;
        if done {
            break;
        }
    }
    Ok(SeriesReport {
        interval_s: d as f64 / 1e9,
        pipes: series
            .into_iter()
            .map(|(id, timeseries)| PipeSeries { id, timeseries })
            .collect(),
        not_kept,
    })
}

fn named(path: &std::path::Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("--series {}: {e}", path.display()))
}
