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
//! ([`SeriesOptions::latest`]) keeps each pipe's and flow's latest
//! intervals instead, which [`Sampler::report`] gives while it runs.
//!
//! Flows (IP 5-tuples) are counted by each worker where it already knows
//! a packet arrives, leaves or is dropped, into a bounded table of its own
//! ([`pipelab_emu::series::FlowTable`], turned on when sampling starts);
//! each sample takes the tables' counts since the last one, adds them up
//! over the workers (a flow one worker hands to another has its
//! arrivals counted by the one and its departures by the other), and makes one [`FlowInterval`] per flow that
//! did anything in the interval, the rows of `pipelab sim`'s flows. The
//! first [`SeriesOptions::flows`] flows seen have rows of their own (in
//! each worker and in the sum), any later one is summed into one flow
//! named `other`, and counted (`other_flows`): memory does not grow with
//! the traffic. The rows go to the `--flow-series` CSV file and to the
//! report's `timeseries.flows`.

use crate::live::LiveRunner;
use pipelab_emu::series::{
    flow_name, Capacity, FlowBucket, FlowInterval, FlowSample, PipeInterval,
};
use pipelab_engine::{Duration, FlowKey, PipeStats};
use pipelab_io::runner::Runner;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
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
    /// The flows' CSV file (`--flow-series`), opened when the run was
    /// set up.
    pub flow_csv: Option<(PathBuf, std::fs::File)>,
    /// The most flows with rows of their own (the rest are `other`).
    pub flows: usize,
    /// Keep only each pipe's and flow's latest N intervals (dropping the
    /// oldest, counted in `not_kept`), for a series read while the run
    /// goes on (`pipelabd`); `None`: the report's first [`MAX_KEPT`] of
    /// all.
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
    /// Each flow's intervals (those in which it did anything), in the
    /// order the flows were first seen; `other` last.
    pub flows: Vec<FlowSeries>,
    /// The most flows with rows of their own.
    pub flow_limit: usize,
    /// Distinct flows summed into `other` (by each worker, and by the
    /// sum over workers).
    pub other_flows: u64,
}

/// One flow's series.
#[derive(Clone, Debug, Serialize)]
pub struct FlowSeries {
    /// Its name (`udp 10.0.0.1:5000 > 10.0.0.2:7790`, or `other`).
    pub name: String,
    /// Its intervals (`t_s` from the start of the emulation), those in
    /// which it sent, delivered or lost a packet.
    pub timeseries: Vec<FlowInterval>,
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

/// One worker's answer: when, its own pipes' counters and capacity since
/// the previous sample, and its flows' counts since then.
pub type Answer = (u64, Vec<(u32, PipeStats, Option<f64>)>, Option<FlowSample>);

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
    let bound = opts.flows;
    live.with_each(move |r| r.count_flows(Some(bound)))
        .map_err(io::Error::other)?;
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

/// The report of samples taken elsewhere (`samples[k]`: every worker's
/// answer at the `k`-th sample, the last closing the series), as a live
/// run makes it: what tests and replays use.
pub fn report_of(
    interval: Duration,
    flows: usize,
    mut samples: Vec<Vec<Answer>>,
) -> io::Result<SeriesReport> {
    let mut series = Series::new(SeriesOptions {
        interval,
        csv: None,
        names: BTreeMap::new(),
        flow_csv: None,
        flows,
        latest: None,
    })?;
    let last = samples.pop().unwrap_or_default();
    for s in samples {
        series.take(s)?;
    }
    series.finish(last, "pipelab")
}

/// One worker's sample of its own pipes: when (its clock), each pipe's
/// counters and its capacity since `prev_ns`.
fn sample_of(r: &mut Runner, prev_ns: u64) -> Answer {
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
    (now, pipes, r.take_flows())
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
    latest: Option<usize>,
    kept: usize,
    not_kept: u64,
    flow_csv: Option<(PathBuf, io::BufWriter<std::fs::File>)>,
    flow_limit: usize,
    /// Each flow with rows of its own: its index in `flows`.
    flow_index: HashMap<FlowKey, usize>,
    flows: Vec<FlowSeries>,
    other: Vec<FlowInterval>,
    /// Flows summed into `other` here (over the bound of the sum).
    others: HashSet<FlowKey>,
    /// The workers' counts of theirs.
    worker_others: u64,
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
        let flow_csv = match opts.flow_csv {
            Some((path, f)) => {
                let mut w = io::BufWriter::new(f);
                writeln!(w, "{}", FlowInterval::CSV_HEADER)
                    .and_then(|()| w.flush())
                    .map_err(|e| named_flows(&path, e))?;
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
            latest: opts.latest,
            kept: 0,
            not_kept: 0,
            flow_csv,
            flow_limit: opts.flows,
            flow_index: HashMap::new(),
            flows: Vec::new(),
            other: Vec::new(),
            others: HashSet::new(),
            worker_others: 0,
        })
    }

    /// What each worker runs for the last sample (see [`stop`]).
    pub fn probe(&self) -> impl Fn(&mut Runner) -> Answer + Send + Sync + 'static {
        let prev = self.prev;
        move |r| sample_of(r, prev)
    }

    /// One sample, every worker's answer: one interval per pipe.
    fn take(&mut self, mut answers: Vec<Answer>) -> io::Result<()> {
        let at = answers.iter().map(|a| a.0).max().unwrap_or(self.prev);
        let samples: Vec<FlowSample> = answers.iter_mut().filter_map(|a| a.2.take()).collect();
        self.take_flows(samples, at)?;
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

    /// The workers' flow counts of one sample (ending at `at`): summed
    /// per flow, one interval per flow that did anything, `other` last.
    fn take_flows(&mut self, samples: Vec<FlowSample>, at: u64) -> io::Result<()> {
        let t_s = self.prev as f64 / 1e9;
        let dt = at.saturating_sub(self.prev);
        let mut sums: BTreeMap<usize, FlowBucket> = BTreeMap::new();
        let mut other = FlowBucket::default();
        let mut worker_others = 0;
        for s in samples {
            worker_others += s.other_flows;
            other.add(&s.other);
            for (key, b) in s.flows {
                let i = match self.flow_index.get(&key) {
                    Some(&i) => i,
                    None if self.flows.len() < self.flow_limit => {
                        self.flows.push(FlowSeries {
                            name: flow_name(&key),
                            timeseries: Vec::new(),
                        });
                        self.flow_index.insert(key, self.flows.len() - 1);
                        self.flows.len() - 1
                    }
                    None => {
                        if self.others.len() < pipelab_emu::series::MAX_OTHERS_COUNTED {
                            self.others.insert(key);
                        }
                        other.add(&b);
                        continue;
                    }
                };
                sums.entry(i).or_default().add(&b);
            }
        }
        self.worker_others = self.worker_others.max(worker_others);
        let mut rows: Vec<(usize, FlowInterval)> = sums
            .into_iter()
            .map(|(i, b)| (i, b.interval(t_s, dt)))
            .collect();
        if !other.is_empty() {
            rows.push((usize::MAX, other.interval(t_s, dt)));
        }
        for (i, row) in rows {
            let name = self.flows.get(i).map_or("other", |f| f.name.as_str());
            if let Some((path, w)) = self.flow_csv.as_mut() {
                writeln!(w, "{}", row.csv_row(name)).map_err(|e| named_flows(path, e))?;
            }
            let kept = match self.flows.get_mut(i) {
                Some(f) => &mut f.timeseries,
                None => &mut self.other,
            };
            match self.latest {
                Some(window) => {
                    if kept.len() >= window.max(1) {
                        kept.remove(0);
                        self.not_kept += 1;
                    }
                    kept.push(row);
                }
                None if self.kept < MAX_KEPT => {
                    kept.push(row);
                    self.kept += 1;
                }
                None => self.not_kept += 1,
            }
        }
        if let Some((path, w)) = self.flow_csv.as_mut() {
            w.flush().map_err(|e| named_flows(path, e))?;
        }
        Ok(())
    }

    /// Close the series with the last sample (the answers of
    /// [`Series::probe`]) and report them; `who` prefixes a warning.
    pub fn finish(mut self, last: Vec<Answer>, who: &str) -> io::Result<SeriesReport> {
        self.take(last)?;
        if self.not_kept > 0 && self.latest.is_none() {
            eprintln!(
                "{who}: warning: the report keeps the first {MAX_KEPT} pipe and flow intervals; \
                 {} more are in the --series and --flow-series files only",
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
            flow_limit: self.flow_limit,
            other_flows: self.worker_others + self.others.len() as u64,
            flows: self
                .flows
                .iter()
                .cloned()
                .chain((!self.other.is_empty()).then(|| FlowSeries {
                    name: "other".into(),
                    timeseries: self.other.clone(),
                }))
                .collect(),
        }
    }
}

fn named_flows(path: &std::path::Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("--flow-series {}: {e}", path.display()))
}

fn named(path: &std::path::Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("--series {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipelab_emu::series::FlowBucket;

    fn udp(sport: u16) -> FlowKey {
        FlowKey {
            proto: 17,
            src: "10.0.0.1".parse().expect("addr"),
            dst: "10.0.0.2".parse().expect("addr"),
            sport,
            dport: 9,
        }
    }

    fn sent(n: u64) -> FlowBucket {
        let mut b = FlowBucket::default();
        for _ in 0..n {
            b.sent(100);
        }
        b
    }

    fn answer(at: u64, flows: Vec<(FlowKey, FlowBucket)>, other_flows: u64) -> Answer {
        let other = if other_flows > 0 {
            sent(1)
        } else {
            FlowBucket::default()
        };
        (
            at,
            Vec::new(),
            Some(FlowSample {
                flows,
                other,
                other_flows,
            }),
        )
    }

    /// A pass proves the sampler adds a flow's counts over the workers
    /// (one saw it arrive, another leave), keeps its own bound over the
    /// sum (flow 3, new when the limit of 2 is reached, goes to `other`,
    /// counted with the workers' own), gives a flow rows only for the
    /// intervals in which it did anything, each over the time between
    /// its two samples, and lists `other` last.
    #[test]
    fn workers_flows_are_added_up_and_bounded() {
        let mut arrived = sent(3);
        arrived.drops.queue = 1;
        let mut left = FlowBucket::default();
        left.delivered(100, 4_000_000);
        left.delivered(100, 6_000_000);
        let samples = vec![
            vec![
                answer(100_000_000, vec![(udp(1), arrived), (udp(2), sent(1))], 0),
                answer(100_000_000, vec![(udp(1), left)], 0),
            ],
            vec![
                answer(250_000_000, vec![(udp(3), sent(5))], 1),
                answer(250_000_000, vec![(udp(2), sent(2))], 0),
            ],
        ];
        let r = report_of(Duration::from_millis(100), 2, samples).expect("report");
        let names: Vec<&str> = r.flows.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "udp 10.0.0.1:1 > 10.0.0.2:9",
                "udp 10.0.0.1:2 > 10.0.0.2:9",
                "other"
            ]
        );
        let f1 = &r.flows[0].timeseries;
        assert_eq!(f1.len(), 1);
        assert_eq!((f1[0].sent, f1[0].received, f1[0].drops.queue), (3, 2, 1));
        assert_eq!(f1[0].delay_ms.map(|d| d.mean), Some(5.0));
        let f2 = &r.flows[1].timeseries;
        assert_eq!(f2.iter().map(|i| i.sent).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(f2[1].t_s, 0.1);
        // 200 bytes over the 150 ms between the samples.
        assert!((f2[1].offered_bps - 200.0 * 8.0 / 0.15).abs() < 1e-6);
        let other = &r.flows[2].timeseries;
        assert_eq!((other.len(), other[0].sent, other[0].t_s), (1, 6, 0.1));
        assert_eq!((r.flow_limit, r.other_flows), (2, 2));
    }
}
