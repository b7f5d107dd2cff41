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
//! `profile` links). The last sample is taken when the run ends, in the
//! same command as the report's counters, so the intervals add up to
//! them exactly.
//!
//! Sampling reads counters and decides nothing; its cost is one command
//! per worker per interval. The rows go to the `--series` CSV file as
//! they are taken (flushed each interval, so it can be watched) and, up to
//! [`MAX_KEPT`] intervals in all, to the report's `timeseries`; a daemon
//! ([`SeriesOptions::latest`]) keeps each pipe's latest intervals
//! instead, which [`Sampler::report`] gives while it runs.

use crate::live::LiveRunner;
use pipelab_emu::series::{Capacity, PipeInterval};
use pipelab_engine::{Duration, PipeStats};
use pipelab_io::runner::Runner;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

/// The most pipe intervals the report keeps (the CSV file has them all).
pub const MAX_KEPT: usize = 250_000;

/// What `--interval` and `--series` ask for.
#[derive(Debug)]
pub struct SeriesOptions {
    /// The sampling interval.
    pub interval: Duration,
    /// The CSV file (`--series`), opened when the run was set up.
    pub csv: Option<(PathBuf, std::fs::File)>,
    /// Names of pipes (a topology's link directions, `a->b`).
    pub names: BTreeMap<u32, String>,
    /// Keep only each pipe's latest N intervals (dropping the oldest,
    /// counted in `not_kept`), for a series read while the run goes on
    /// (`pipelabd`); `None`: the report's first [`MAX_KEPT`] of all.
    pub latest: Option<usize>,
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
    /// Its name (a topology's link direction, `a->b`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its intervals (`t_s` from the start of the emulation).
    pub timeseries: Vec<PipeInterval>,
}

/// One worker's answer: when, and its own pipes' counters and capacity
/// since the previous sample.
pub type Answer = (u64, Vec<(u32, PipeStats, Option<f64>)>);

/// A sampler running beside the workers.
pub struct Sampler {
    stop: mpsc::Sender<()>,
    series: Arc<Mutex<Series>>,
    handle: std::thread::JoinHandle<io::Result<()>>,
}

impl Sampler {
    /// The intervals taken so far, as the report will show them (read
    /// while the run goes on: `pipelab stats` of the daemon).
    pub fn report(&self) -> SeriesReport {
        lock(&self.series).report()
    }
}

fn lock(m: &Mutex<Series>) -> std::sync::MutexGuard<'_, Series> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Start sampling `live` as `opts` asks (nothing without options).
pub fn start(live: &Arc<LiveRunner>, opts: Option<SeriesOptions>) -> io::Result<Option<Sampler>> {
    let Some(opts) = opts else {
        return Ok(None);
    };
    let clock = live.with(|r| r.clock()).map_err(io::Error::other)?;
    let series = Arc::new(Mutex::new(Series::new(opts)?));
    let (stop, stopped) = mpsc::channel();
    let live = Arc::clone(live);
    let shared = Arc::clone(&series);
    let handle = std::thread::Builder::new()
        .name("pipelab-series".into())
        .spawn(move || run(&shared, &live, clock, &stopped))?;
    Ok(Some(Sampler {
        stop,
        series,
        handle,
    }))
}

/// Stop sampling (the thread takes no more samples); the series so far,
/// to be closed by [`Series::finish`] with a last sample taken with the
/// report's counters ([`Series::probe`]), so that both are one instant.
pub fn stop(s: Option<Sampler>) -> io::Result<Option<Series>> {
    let Some(s) = s else {
        return Ok(None);
    };
    let _ = s.stop.send(());
    s.handle
        .join()
        .map_err(|_| io::Error::other("the series sampler panicked"))??;
    // The thread's reference is gone with it.
    let series = Arc::try_unwrap(s.series)
        .map_err(|_| io::Error::other("internal: the series is still shared"))?;
    Ok(Some(
        series
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    ))
}

/// Sample every interval until told to stop (the series locked only
/// while a sample is added).
fn run(
    series: &Mutex<Series>,
    live: &LiveRunner,
    clock: pipelab_io::clock::Clock,
    stopped: &mpsc::Receiver<()>,
) -> io::Result<()> {
    let interval_ns = lock(series).interval_ns;
    for k in 1u64.. {
        let due = k.saturating_mul(interval_ns);
        let wait = due.saturating_sub(clock.now().as_nanos());
        if !matches!(
            stopped.recv_timeout(std::time::Duration::from_nanos(wait)),
            Err(mpsc::RecvTimeoutError::Timeout)
        ) {
            break;
        }
        let prev = lock(series).prev;
        let answers = live
            .with_each(move |r| sample_of(r, prev))
            .map_err(io::Error::other)?;
        lock(series).take(answers)?;
    }
    Ok(())
}

/// One worker's sample of its own pipes: when (its clock), each pipe's
/// counters and its capacity since `prev_ns`.
fn sample_of(r: &Runner, prev_ns: u64) -> Answer {
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
}

/// A series being taken: the CSV file, the samples so far as intervals.
pub struct Series {
    interval_ns: u64,
    csv: Option<(PathBuf, io::BufWriter<std::fs::File>)>,
    names: BTreeMap<u32, String>,
    /// Each pipe's last sample.
    last: BTreeMap<u32, PipeStats>,
    /// The last sample's instant (ns of the emulation's clock).
    prev: u64,
    intervals: BTreeMap<u32, VecDeque<PipeInterval>>,
    kept: usize,
    latest: Option<usize>,
    not_kept: u64,
}

impl Series {
    fn new(opts: SeriesOptions) -> io::Result<Series> {
        let csv = match opts.csv {
            Some((path, f)) => {
                let mut w = io::BufWriter::new(f);
                writeln!(w, "{}", PipeInterval::CSV_HEADER)
                    .and_then(|()| w.flush())
                    .map_err(|e| named(&path, e))?;
                Some((path, w))
            }
            None => None,
        };
        // The origin: the emulation's start (its clock's epoch), when
        // every counter was 0, so that the intervals add up to the
        // counters.
        Ok(Series {
            interval_ns: opts.interval.as_nanos().max(1),
            csv,
            names: opts.names,
            last: BTreeMap::new(),
            prev: 0,
            intervals: BTreeMap::new(),
            kept: 0,
            latest: opts.latest,
            not_kept: 0,
        })
    }

    /// What each worker runs for the last sample (see [`stop`]).
    pub fn probe(&self) -> impl Fn(&Runner) -> Answer + Send + Sync + 'static {
        let prev = self.prev;
        move |r| sample_of(r, prev)
    }

    /// One sample, every worker's answer: one interval per pipe.
    fn take(&mut self, answers: Vec<Answer>) -> io::Result<()> {
        let at = answers.iter().map(|a| a.0).max().unwrap_or(self.prev);
        let mut pipes: Vec<_> = answers.into_iter().flat_map(|a| a.1).collect();
        pipes.sort_by_key(|p| p.0);
        let t_s = self.prev as f64 / 1e9;
        let zero = PipeStats::default();
        for (n, stats, cap) in pipes {
            let last = self.last.get(&n).unwrap_or(&zero);
            let i = PipeInterval::between(t_s, at.saturating_sub(self.prev), last, &stats, cap);
            if let Some((path, w)) = self.csv.as_mut() {
                let name = self.names.get(&n).map_or("", String::as_str);
                writeln!(w, "{}", i.csv_row(n, name)).map_err(|e| named(path, e))?;
            }
            let kept = self.intervals.entry(n).or_default();
            match self.latest {
                Some(window) => {
                    if kept.len() >= window.max(1) {
                        kept.pop_front();
                        self.not_kept += 1;
                    }
                    kept.push_back(i);
                }
                None if self.kept < MAX_KEPT => {
                    kept.push_back(i);
                    self.kept += 1;
                }
                None => self.not_kept += 1,
            }
            self.last.insert(n, stats);
        }
        if let Some((path, w)) = self.csv.as_mut() {
            w.flush().map_err(|e| named(path, e))?;
        }
        self.prev = at;
        Ok(())
    }

    /// Close the series with the last sample (the answers of
    /// [`Series::probe`]) and report them; `who` prefixes a warning.
    pub fn finish(mut self, last: Vec<Answer>, who: &str) -> io::Result<SeriesReport> {
        self.take(last)?;
        if self.not_kept > 0 && self.latest.is_none() {
            eprintln!(
                "{who}: warning: the report keeps the first {MAX_KEPT} pipe intervals; \
                 {} more are in the --series file only",
                self.not_kept
            );
        }
        Ok(self.report())
    }

    /// The intervals kept so far.
    fn report(&self) -> SeriesReport {
        SeriesReport {
            interval_s: self.interval_ns as f64 / 1e9,
            pipes: self
                .intervals
                .iter()
                .map(|(&id, timeseries)| PipeSeries {
                    id,
                    name: self.names.get(&id).cloned(),
                    timeseries: timeseries.iter().cloned().collect(),
                })
                .collect(),
            not_kept: self.not_kept,
        }
    }
}

fn named(path: &std::path::Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("--series {}: {e}", path.display()))
}
