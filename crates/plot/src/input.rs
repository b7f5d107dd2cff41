//! What `pipelab plot` reads, turned into one small model of series.
//!
//! Every input is read into a [`Data`]: named lines of `(x, y)` points
//! per kind of graph (rates over time, delay over time, per-packet
//! delays, CDFs) and named bars (shares). A reader fills what its input
//! has and says why a kind is missing (`why_not`); the drawing knows
//! nothing of where the numbers came from. A new input (a
//! `timeseries` of another mode) is one more reader here.
//!
//! The kind of input is told from its content, not its name: JSON with
//! `flows`, `pipes` and `end_s` is a `pipelab sim --json` report; with
//! `plane`, `pipes` and `runner` a live `--stats` file; with `sent`,
//! `received` and `histogram` a `pipelab probe send --json` report; with
//! `samples` a set of samples (a topology experiment's per-flow
//! throughputs, ModelNet Fig. 5); a CSV whose header is `run,seq,
//! sent_unix_ns,received_unix_ns,delay_ms` the per-packet file of
//! `pipelab probe recv --series`; JSON lines with `t_ns` and `event`, or
//! a CSV with the event log's header, an event log ([`crate::events`]).

use crate::Kind;
use serde_json::Value;
use std::collections::BTreeMap;

/// What a line stands for, which decides how it is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A link's capacity: a shaded area.
    Capacity,
    /// A line.
    Line,
    /// A secondary line (thinner, lighter).
    Thin,
}

/// A named series of points.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// Its name in the legend.
    pub name: String,
    /// The points, in x order.
    pub points: Vec<(f64, f64)>,
    /// How it is drawn.
    pub role: Role,
}

/// The unit of a value axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Bits per second (scaled to K/M/Gbit/s for the axis).
    Bps,
    /// Milliseconds.
    Ms,
    /// Bytes (scaled to KB/MB/GB).
    Bytes,
    /// A plain number.
    Number,
}

/// Everything a plot can be drawn from, read from one input.
#[derive(Clone, Debug)]
pub struct Data {
    /// What the input is ("a sim report").
    pub what: &'static str,
    /// The graph's title.
    pub title: String,
    /// Rates over time: x seconds, y bit/s.
    pub throughput: Vec<Line>,
    /// Delay over time: x seconds, y ms.
    pub delay: Vec<Line>,
    /// Per-packet delays: x seconds, y ms (drawn as points).
    pub scatter: Vec<Line>,
    /// Distributions: x a value in `cdf_unit`, y the fraction at or below.
    pub cdf: Vec<Line>,
    /// What the CDF's values are ("one-way delay").
    pub cdf_label: String,
    /// Their unit.
    pub cdf_unit: Unit,
    /// What the CDF counts ("packets", "flows").
    pub cdf_of: String,
    /// Shares: one bar per name.
    pub shares: Vec<(String, f64)>,
    /// What the bars measure ("delivered throughput").
    pub shares_label: String,
    /// Their unit.
    pub shares_unit: Unit,
    /// Why a kind is missing, where the input could have it.
    pub why_not: Vec<(Kind, String)>,
}

impl Data {
    pub(crate) fn new(what: &'static str, title: String) -> Data {
        Data {
            what,
            title,
            throughput: Vec::new(),
            delay: Vec::new(),
            scatter: Vec::new(),
            cdf: Vec::new(),
            cdf_label: "one-way delay".into(),
            cdf_unit: Unit::Ms,
            cdf_of: "packets".into(),
            shares: Vec::new(),
            shares_label: String::new(),
            shares_unit: Unit::Bps,
            why_not: Vec::new(),
        }
    }

    /// Whether the input has what `kind` draws.
    pub fn has(&self, kind: Kind) -> bool {
        match kind {
            Kind::Throughput => !self.throughput.is_empty(),
            Kind::Delay => !self.delay.is_empty(),
            Kind::Scatter => !self.scatter.is_empty(),
            Kind::Cdf => !self.cdf.is_empty(),
            Kind::Shares => !self.shares.is_empty(),
        }
    }

    /// The kinds it has, best first.
    pub fn kinds(&self) -> Vec<Kind> {
        Kind::BEST_FIRST
            .iter()
            .copied()
            .filter(|&k| self.has(k))
            .collect()
    }

    /// Why `kind` is missing, if the reader said.
    pub fn why_not(&self, kind: Kind) -> Option<&str> {
        self.why_not
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, s)| s.as_str())
    }

    /// The graph to draw: `asked` if the input has it, else (none asked)
    /// the best it has ([`Kind::BEST_FIRST`]); or why there is none.
    pub fn choose(&self, asked: Option<Kind>) -> Result<Kind, Missing> {
        let kinds = self.kinds();
        let has = || -> String {
            if kinds.is_empty() {
                "it has nothing to plot".into()
            } else {
                let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
                format!("it has {}", names.join(", "))
            }
        };
        match asked {
            Some(k) if self.has(k) => Ok(k),
            Some(kind) => Err(Missing::Kind {
                kind,
                why: match self.why_not(kind) {
                    Some(w) => format!("{w}; {}", has()),
                    None => has(),
                },
            }),
            None => kinds.first().copied().ok_or_else(|| Missing::Empty {
                why: Kind::BEST_FIRST
                    .iter()
                    .find_map(|&k| self.why_not(k))
                    .unwrap_or("no flows, pipes or packets")
                    .to_string(),
            }),
        }
    }
}

/// Why [`Data::choose`] found no graph to draw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Missing {
    /// The input lacks the kind asked for.
    Kind {
        /// The kind asked for.
        kind: Kind,
        /// Why, and what the input has instead.
        why: String,
    },
    /// The input holds no data to draw at all.
    Empty {
        /// Why.
        why: String,
    },
}

/// Read `text` (the contents of the input) into a [`Data`], or say what
/// was expected.
pub fn read(text: &str) -> Result<Data, String> {
    let trimmed = text.trim_start();
    let first = trimmed.lines().next().unwrap_or("").trim();
    if first == crate::events::CSV_HEADER {
        return crate::events::read(trimmed, true);
    }
    if crate::events::is_json_event(first) {
        return crate::events::read(trimmed, false);
    }
    if trimmed.starts_with('{') {
        let mut v: Value =
            serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
        // `pipelab stats --json` whole: its plane's counters and series.
        if v.get("emulation").is_some() && v.get("plane").is_some_and(Value::is_object) {
            v = v["plane"].take();
        }
        let has = |k: &str| v.get(k).is_some();
        if has("flows") && has("pipes") && has("end_s") {
            return sim_report(&v);
        }
        // `pipelab stats --json` (the control protocol's), or the
        // `--stats` report of a shell or a bridge.
        if has("pipes") && (has("plane") && has("runner") || has("stats") && has("lateness")) {
            return stats_file(&v);
        }
        if has("sent") && has("received") && has("histogram") {
            return probe_report(&v);
        }
        if has("samples") {
            return samples(&v);
        }
        return Err(format!(
            "JSON with none of the keys pipelab plot reads: {EXPECTED}"
        ));
    }
    if first == PROBE_SERIES_HEADER {
        return probe_series(text);
    }
    if trimmed.is_empty() {
        return Err(format!("the file is empty; expected {EXPECTED}"));
    }
    Err(format!(
        "not a report pipelab plot reads; expected {EXPECTED}"
    ))
}

/// What [`read`] takes, for its errors.
const EXPECTED: &str = "a `pipelab sim --json` report (keys flows, pipes, end_s), a `--stats` file (plane, pipes, runner), a `pipelab probe send --json` report (sent, received, histogram), samples (samples), the CSV of `pipelab probe recv --series`, or an event log (`--events`, JSON lines or CSV)";

/// The header of `pipelab probe recv --series`.
const PROBE_SERIES_HEADER: &str = "run,seq,sent_unix_ns,received_unix_ns,delay_ms";

fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

fn text_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn array<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Steps: each interval's value held over `[t, t + d)`.
pub(crate) fn steps(points: impl Iterator<Item = (f64, Option<f64>)>, d: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    for (t, v) in points {
        if let Some(v) = v {
            out.push((t, v));
            out.push((t + d, v));
        }
    }
    out
}

/// A `timeseries` (`[{"t_s", ...}]`, intervals `dt` s long) as steps of
/// the value `value` reads from each interval.
fn interval_steps(ts: &[Value], dt: f64, value: impl Fn(&Value) -> Option<f64>) -> Vec<(f64, f64)> {
    steps(
        ts.iter().map(|i| (num(i, "t_s").unwrap_or(0.0), value(i))),
        dt,
    )
}

/// The sum of `key` over the intervals of `v`'s `timeseries`, saturating
/// (a report may claim counts no run reaches): how busy a pipe or a flow
/// was.
fn bytes_of(v: &Value, key: &str) -> u64 {
    array(v, "timeseries")
        .iter()
        .filter_map(|i| i.get(key).and_then(Value::as_u64))
        .fold(0, u64::saturating_add)
}

/// The most pipes drawn in one throughput graph (the busiest).
const MAX_PIPES: usize = 4;

/// Mahimahi's throughput graph of the busiest of `pipes` (most bytes
/// arrived), each `{"id", "timeseries": [{"t_s", "capacity_bps",
/// "offered_bps", "delivered_bps", ...}]}` (a sim report's pipes, a
/// live `--stats` file's `timeseries.pipes`), intervals `dt` s long.
fn pipe_lines(d: &mut Data, mut pipes: Vec<&Value>, dt: f64) {
    let total = pipes.len();
    let arrived = |p: &Value| -> u64 { bytes_of(p, "arrival_bytes") };
    pipes.sort_by_key(|p| std::cmp::Reverse(arrived(p)));
    pipes.truncate(MAX_PIPES);
    pipes.sort_by_key(|p| p.get("id").and_then(Value::as_u64).unwrap_or(0));
    if total > MAX_PIPES {
        d.title += &format!(" ({MAX_PIPES} busiest of {total} pipes)");
    }
    for p in pipes {
        let id = p.get("id").and_then(Value::as_u64).unwrap_or(0);
        let ts = array(p, "timeseries");
        let series = |key: &str| interval_steps(ts, dt, |i| num(i, key));
        let cap = series("capacity_bps");
        if !cap.is_empty() {
            d.throughput.push(Line {
                name: format!("pipe {id} capacity"),
                points: cap,
                role: Role::Capacity,
            });
        }
        d.throughput.push(Line {
            name: format!("pipe {id} arrivals"),
            points: series("offered_bps"),
            role: Role::Line,
        });
        d.throughput.push(Line {
            name: format!("pipe {id} departures"),
            points: series("delivered_bps"),
            role: Role::Line,
        });
    }
}

/// The most flows drawn in one graph (the busiest).
const MAX_FLOWS: usize = 4;

/// Each of the busiest `flows` (most bytes delivered), each `{"name",
/// "timeseries": [{"t_s", "delivered_bps", "delay_ms": {"mean", "max"},
/// ...}]}` (a sim report's flows, a live `--stats` file's
/// `timeseries.flows`), intervals `dt` s long: its delivered rate (an
/// interval without a row, where a live flow did nothing, is 0) and its
/// delay's mean and max.
fn flow_lines(d: &mut Data, mut flows: Vec<&Value>, dt: f64) {
    let delivered = |f: &Value| -> u64 { bytes_of(f, "received_bytes") };
    flows.sort_by_key(|f| std::cmp::Reverse(delivered(f)));
    flows.truncate(MAX_FLOWS);
    for f in flows {
        let name = text_of(f, "name");
        let ts = array(f, "timeseries");
        let mut rows: Vec<(f64, Option<f64>)> = Vec::new();
        for i in ts {
            let t = num(i, "t_s").unwrap_or(0.0);
            if let Some(&(last, _)) = rows.last() {
                if t - last > 1.5 * dt {
                    rows.push((last + dt, Some(0.0)));
                    if t - dt > last + dt {
                        rows.push((t - dt, Some(0.0)));
                    }
                }
            }
            rows.push((t, num(i, "delivered_bps")));
        }
        let rate = steps(rows.into_iter(), dt);
        if !rate.is_empty() {
            d.throughput.push(Line {
                name: format!("{name} delivered"),
                points: rate,
                role: Role::Thin,
            });
        }
        let delay =
            |key: &str| interval_steps(ts, dt, |i| i.get("delay_ms").and_then(|dm| num(dm, key)));
        let mean = delay("mean");
        if !mean.is_empty() {
            d.delay.push(Line {
                name: format!("{name} mean"),
                points: mean,
                role: Role::Line,
            });
            d.delay.push(Line {
                name: format!("{name} max"),
                points: delay("max"),
                role: Role::Thin,
            });
        }
    }
}

/// `pipelab sim --json`: throughput and delay from the `timeseries` of
/// pipes and flows (`--interval`), CDFs from the flows' `delay_cdf`,
/// shares from their throughput.
fn sim_report(v: &Value) -> Result<Data, String> {
    let mut d = Data::new(
        "a sim report",
        format!(
            "pipelab sim, seed {}, {:.3} s of virtual time",
            v.get("seed").and_then(Value::as_u64).unwrap_or(0),
            num(v, "end_s").unwrap_or(0.0)
        ),
    );
    let interval = num(v, "interval_s");
    let no_series = "it has no series: run `pipelab sim ... --interval 100ms --json`";
    match interval {
        Some(dt) if dt > 0.0 => {
            let pipes: Vec<&Value> = array(v, "pipes")
                .iter()
                .filter(|p| p.get("timeseries").is_some())
                .collect();
            pipe_lines(&mut d, pipes, dt);
            flow_lines(&mut d, array(v, "flows").iter().collect(), dt);
            for (i, f) in array(v, "flows").iter().enumerate() {
                let name = text_of(f, "name");
                let cdf = match f.get("delay_cdf") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(c) => cdf_points(c, &format!("flows[{i}].delay_cdf"))?,
                };
                if !cdf.is_empty() {
                    d.cdf.push(Line {
                        name,
                        points: cdf,
                        role: Role::Line,
                    });
                }
            }
        }
        _ => {
            d.why_not.push((Kind::Throughput, no_series.into()));
            d.why_not.push((Kind::Delay, no_series.into()));
            d.why_not.push((Kind::Cdf, no_series.into()));
        }
    }
    d.why_not.push((
        Kind::Scatter,
        "a sim report has no per-packet delays (the CSV of `pipelab probe recv --series` has)"
            .into(),
    ));
    for f in array(v, "flows") {
        if let Some(bps) = num(f, "throughput_bps") {
            d.shares.push((text_of(f, "name"), bps));
        }
    }
    d.shares_label = "delivered throughput".into();
    d.shares_unit = Unit::Bps;
    Ok(d)
}

/// The most characters of a value an error shows.
const SHOWN: usize = 40;

/// `v` as JSON, cut at [`SHOWN`] characters.
fn shown(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(SHOWN) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text,
    }
}

/// A sim report's `delay_cdf` (`field` names it): `[[fraction, delay_ms],
/// ...]`, fractions from 0 to 1 and both in order; as `(delay, fraction)`
/// points.
fn cdf_points(c: &Value, field: &str) -> Result<Vec<(f64, f64)>, String> {
    let Some(points) = c.as_array() else {
        return Err(format!(
            "{field}: expected a list of [fraction, delay_ms] points, got {}",
            shown(c)
        ));
    };
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(points.len());
    for (j, pt) in points.iter().enumerate() {
        let pair = pt.as_array().and_then(|p| match p.as_slice() {
            [q, d] => Some((q.as_f64()?, d.as_f64()?)),
            _ => None,
        });
        let Some((q, d)) = pair else {
            return Err(format!(
                "{field}[{j}]: expected [fraction, delay_ms], two numbers, got {}",
                shown(pt)
            ));
        };
        if !(0.0..=1.0).contains(&q) {
            return Err(format!("{field}[{j}]: fraction {q} is not between 0 and 1"));
        }
        if let Some(&(pd, pq)) = out.last() {
            if q < pq || d < pd {
                return Err(format!(
                    "{field}[{j}]: [{q}, {d}] comes before [{pq}, {pd}]: a CDF's fractions and delays only grow"
                ));
            }
        }
        out.push((d, q));
    }
    Ok(out)
}

/// A live `--stats` file: the bytes each pipe delivered (its counters at
/// the end of the run have no time); with a series, each pipe's rates and
/// each flow's delivered rate and delay inside the emulator over time.
fn stats_file(v: &Value) -> Result<Data, String> {
    let plane = match text_of(v, "plane") {
        p if p.is_empty() => "live run".to_string(),
        p => p,
    };
    let mut d = Data::new(
        "a --stats file",
        format!("pipelab {plane}: bytes delivered per pipe"),
    );
    for p in array(v, "pipes") {
        let n = p.get("number").and_then(Value::as_u64).unwrap_or(0);
        if let Some(b) = num(p, "departure_bytes") {
            d.shares.push((format!("pipe {n}"), b));
        }
    }
    d.shares_label = "bytes delivered".into();
    d.shares_unit = Unit::Bytes;
    let series = v.get("timeseries");
    match series.and_then(|t| num(t, "interval_s")) {
        Some(dt) if dt > 0.0 => {
            d.title = format!("pipelab {plane}, sampled every {}", seconds(dt));
            let pipes = series.map(|t| array(t, "pipes")).unwrap_or_default();
            pipe_lines(&mut d, pipes.iter().collect(), dt);
            let flows = series.map(|t| array(t, "flows")).unwrap_or_default();
            flow_lines(&mut d, flows.iter().collect(), dt);
        }
        _ => d.why_not.push((
            Kind::Throughput,
            "it has no series: run the mode with --interval 100ms --stats FILE".into(),
        )),
    }
    let why =
        "a --stats file holds counters, not per-packet delays (`pipelab probe` measures them)";
    if d.delay.is_empty() {
        d.why_not.push((
            Kind::Delay,
            "it has no flow series: run the mode with --interval 100ms --stats FILE".into(),
        ));
    }
    for k in [Kind::Scatter, Kind::Cdf] {
        d.why_not.push((k, why.into()));
    }
    Ok(d)
}

/// `dt` seconds as people write it (100ms, 1s).
fn seconds(dt: f64) -> String {
    if dt < 1.0 {
        format!("{}ms", (dt * 1e3 * 1e3).round() / 1e3)
    } else {
        format!("{dt}s")
    }
}

/// `pipelab probe send --json`: the delay histogram as a CDF.
fn probe_report(v: &Value) -> Result<Data, String> {
    let mut d = Data::new(
        "a probe report",
        format!(
            "pipelab probe: {} sent, {} received",
            v.get("sent").and_then(Value::as_u64).unwrap_or(0),
            v.get("received").and_then(Value::as_u64).unwrap_or(0)
        ),
    );
    let mut bins: Vec<(f64, f64)> = Vec::new();
    let Some(histogram) = v["histogram"].as_array() else {
        return Err(format!(
            "histogram: expected a list of [upper_ms, count] bins, got {}",
            shown(&v["histogram"])
        ));
    };
    for (j, b) in histogram.iter().enumerate() {
        let bin = b.as_array().and_then(|p| match p.as_slice() {
            [u, n] => Some((u.as_f64()?, n.as_f64()?)),
            _ => None,
        });
        match bin {
            Some((u, n)) if n >= 0.0 => bins.push((u, n)),
            _ => {
                return Err(format!(
                    "histogram[{j}]: expected [upper_ms, count], a count of 0 or more, got {}",
                    shown(b)
                ))
            }
        }
    }
    let total: f64 = bins.iter().map(|b| b.1).sum();
    if total > 0.0 {
        let min = v
            .get("delay_ms")
            .and_then(|dm| num(dm, "min"))
            .unwrap_or(bins[0].0);
        let mut pts = vec![(min, 0.0)];
        let mut acc = 0.0;
        for (upper, count) in bins {
            acc += count;
            pts.push((upper, acc / total));
        }
        d.cdf.push(Line {
            name: "probe".into(),
            points: pts,
            role: Role::Line,
        });
    }
    let why =
        "a probe report holds a histogram; `pipelab probe recv --series FILE` writes every packet";
    for k in [Kind::Throughput, Kind::Delay, Kind::Scatter] {
        d.why_not.push((k, why.into()));
    }
    Ok(d)
}

/// Samples: `{"title": ..., "label": ..., "unit": "bit/s"|"ms"|...,
/// "of": "flows", "samples": [{"name": ..., "values": [...]}, ...]}`,
/// e.g. a topology experiment's per-flow throughputs under several
/// distillations (ModelNet Fig. 5): one CDF per sample set.
fn samples(v: &Value) -> Result<Data, String> {
    let title = match text_of(v, "title") {
        t if t.is_empty() => "samples".to_string(),
        t => t,
    };
    let mut d = Data::new("samples", title);
    d.cdf_label = match text_of(v, "label") {
        l if l.is_empty() => "value".to_string(),
        l => l,
    };
    d.cdf_unit = match v.get("unit") {
        None => Unit::Number,
        Some(u) => match u.as_str() {
            Some("bit/s") => Unit::Bps,
            Some("ms") => Unit::Ms,
            Some("bytes") => Unit::Bytes,
            Some("") => Unit::Number,
            _ => {
                return Err(format!(
                    "unit: {} is not a unit pipelab plot knows: \"bit/s\", \"ms\", \"bytes\" (or no unit: plain numbers)",
                    shown(u)
                ))
            }
        },
    };
    d.cdf_of = match text_of(v, "of") {
        o if o.is_empty() => "samples".to_string(),
        o => o,
    };
    let Some(sets) = v.get("samples").and_then(Value::as_array) else {
        return Err("`samples` must be a list of {\"name\": ..., \"values\": [...]}".into());
    };
    for (i, s) in sets.iter().enumerate() {
        let Some(values) = s.get("values").and_then(Value::as_array) else {
            return Err(format!("samples[{i}]: no `values` list"));
        };
        let mut xs = Vec::with_capacity(values.len());
        for (j, x) in values.iter().enumerate() {
            match x.as_f64() {
                Some(x) if x.is_finite() => xs.push(x),
                _ => return Err(format!("samples[{i}].values[{j}]: not a number: {x}")),
            }
        }
        if xs.is_empty() {
            continue;
        }
        let name = match text_of(s, "name") {
            n if n.is_empty() => format!("set {}", i + 1),
            n => n,
        };
        d.cdf.push(Line {
            name,
            points: empirical_cdf(xs),
            role: Role::Line,
        });
    }
    let why = "samples have no time";
    for k in [Kind::Throughput, Kind::Delay, Kind::Scatter] {
        d.why_not.push((k, why.into()));
    }
    Ok(d)
}

/// The empirical CDF of `xs` as a staircase: at each value the fraction
/// of samples at or below it.
pub(crate) fn empirical_cdf(mut xs: Vec<f64>) -> Vec<(f64, f64)> {
    xs.sort_by(f64::total_cmp);
    let n = xs.len() as f64;
    let mut pts = Vec::with_capacity(2 * xs.len());
    for (i, &x) in xs.iter().enumerate() {
        pts.push((x, i as f64 / n));
        pts.push((x, (i + 1) as f64 / n));
    }
    pts
}

/// `pipelab probe recv --series`: every packet's delay at its arrival
/// (seconds from the run's first arrival), one series per run; the CDF
/// of all delays of each run.
fn probe_series(text: &str) -> Result<Data, String> {
    let mut runs: BTreeMap<u64, Vec<(u64, f64)>> = BTreeMap::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        let bad = || {
            format!(
                "line {}: expected {PROBE_SERIES_HEADER}, got '{line}'",
                n + 1
            )
        };
        if f.len() != 5 {
            return Err(bad());
        }
        let run: u64 = f[0].parse().map_err(|_| bad())?;
        for field in &f[1..3] {
            field.parse::<u64>().map_err(|_| bad())?;
        }
        let received: u64 = f[3].parse().map_err(|_| bad())?;
        let delay: f64 = f[4].parse().map_err(|_| bad())?;
        if !delay.is_finite() {
            return Err(bad());
        }
        runs.entry(run).or_default().push((received, delay));
    }
    let mut d = Data::new(
        "a probe series",
        "pipelab probe: per-packet one-way delay".into(),
    );
    for (run, pkts) in runs {
        let t0 = pkts.iter().map(|p| p.0).min().unwrap_or(0);
        let mut pts: Vec<(f64, f64)> = pkts
            .iter()
            .map(|&(t, dl)| ((t - t0) as f64 / 1e9, dl))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        d.cdf.push(Line {
            name: format!("run {run}"),
            points: empirical_cdf(pts.iter().map(|p| p.1).collect()),
            role: Role::Line,
        });
        d.scatter.push(Line {
            name: format!("run {run}"),
            points: pts,
            role: Role::Line,
        });
    }
    d.why_not.push((
        Kind::Throughput,
        "a probe series has delays, not rates".into(),
    ));
    d.why_not.push((
        Kind::Delay,
        "use --kind scatter: every packet's delay".into(),
    ));
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves a sim report's capacity series becomes the plot's
    /// capacity line, interval by interval, as steps.
    #[test]
    fn sim_series_become_lines() {
        let json = r#"{"seed": 1, "end_s": 0.2, "interval_s": 0.1,
          "flows": [{"name": "f", "throughput_bps": 5.0,
                     "delay_cdf": [[0.0, 1.0], [1.0, 2.0]],
                     "timeseries": [{"t_s": 0.0, "delay_ms": {"min": 1.0, "mean": 1.5, "max": 2.0}},
                                    {"t_s": 0.1, "delay_ms": null}]}],
          "pipes": [{"id": 1, "arrival_bytes": 10, "timeseries": [
             {"t_s": 0.0, "capacity_bps": 12e6, "offered_bps": 1.0, "delivered_bps": 2.0},
             {"t_s": 0.1, "capacity_bps": 24e6, "offered_bps": 3.0, "delivered_bps": 4.0}]}]}"#;
        let d = read(json).expect("reads");
        assert_eq!(
            d.kinds(),
            vec![Kind::Throughput, Kind::Delay, Kind::Cdf, Kind::Shares]
        );
        let cap = &d.throughput[0];
        assert_eq!(cap.name, "pipe 1 capacity");
        assert_eq!(cap.role, Role::Capacity);
        assert_eq!(
            cap.points,
            vec![(0.0, 12e6), (0.1, 12e6), (0.1, 24e6), (0.1 + 0.1, 24e6)]
        );
        assert_eq!(d.delay[0].points, vec![(0.0, 1.5), (0.1, 1.5)]);
        assert_eq!(d.cdf[0].points, vec![(1.0, 0.0), (2.0, 1.0)]);
        assert_eq!(d.shares, vec![("f".to_string(), 5.0)]);
    }

    /// A pass proves `pipelab stats --json` of pipelabd, whole, is read
    /// as its plane: the series' capacity and the title name host mode.
    #[test]
    fn daemon_stats_are_read_through_their_plane() {
        let json = r#"{"emulation": {"name": "pipelabd", "mode": "host"},
          "daemon": {"uptime_s": 3.0}, "config": {"pipes": 1},
          "plane": {"plane": "host", "runner": {}, "pipes": [{"number": 1, "departure_bytes": 840}],
            "timeseries": {"interval_s": 0.1, "not_kept": 0, "pipes": [{"id": 1, "timeseries": [
              {"t_s": 0.0, "capacity_bps": 8e6, "offered_bps": 1.0, "delivered_bps": 2.0}]}]}}}"#;
        let d = read(json).expect("reads");
        assert!(d.has(Kind::Throughput));
        assert_eq!(d.title, "pipelab host, sampled every 100ms");
        assert_eq!(d.throughput[0].points, vec![(0.0, 8e6), (0.1, 8e6)]);
        assert_eq!(d.shares, vec![("pipe 1".to_string(), 840.0)]);
    }

    /// A pass proves a live `--stats` file's flow series become each
    /// flow's delivered rate as steps (an interval without a row, where
    /// the flow did nothing, drawn at 0) and its delay's mean and max.
    #[test]
    fn live_flow_series_become_lines() {
        let json = r#"{"plane": "shell", "runner": {}, "pipes": [],
          "timeseries": {"interval_s": 0.1, "pipes": [], "flows": [
            {"name": "udp a:1 > b:2", "timeseries": [
              {"t_s": 0.0, "received_bytes": 10, "delivered_bps": 800.0,
               "delay_ms": {"min": 5.0, "mean": 6.0, "max": 7.0}},
              {"t_s": 0.3, "received_bytes": 20, "delivered_bps": 1600.0,
               "delay_ms": {"min": 5.0, "mean": 5.5, "max": 6.0}}]}]}}"#;
        let d = read(json).expect("reads");
        assert!(d.has(Kind::Throughput) && d.has(Kind::Delay));
        let rate = &d.throughput[0];
        assert_eq!(rate.name, "udp a:1 > b:2 delivered");
        let want = [
            (0.0, 800.0),
            (0.1, 800.0),
            (0.1, 0.0),
            (0.2, 0.0),
            (0.2, 0.0),
            (0.3, 0.0),
            (0.3, 1600.0),
            (0.4, 1600.0),
        ];
        assert_eq!(rate.points.len(), want.len(), "{:?}", rate.points);
        for (got, want) in rate.points.iter().zip(want) {
            assert!(
                (got.0 - want.0).abs() < 1e-9 && got.1 == want.1,
                "{:?}",
                rate.points
            );
        }
        assert_eq!(d.delay[0].name, "udp a:1 > b:2 mean");
        assert_eq!(d.delay[0].points[0], (0.0, 6.0));
    }

    /// A report without series says how to get them.
    #[test]
    fn a_report_without_series_says_how() {
        let d = read(r#"{"seed": 1, "end_s": 1, "flows": [], "pipes": []}"#).expect("reads");
        assert!(!d.has(Kind::Throughput));
        assert!(d
            .why_not(Kind::Throughput)
            .is_some_and(|w| w.contains("--interval")));
    }

    /// Unknown content is refused naming what was expected.
    #[test]
    fn unknown_inputs_are_refused() {
        for text in ["{\"a\": 1}", "hello", "", "{not json"] {
            let e = read(text).expect_err(text);
            assert!(
                e.contains("sim --json") || e.contains("not valid JSON"),
                "{text}: {e}"
            );
        }
    }

    /// The probe's CSV: per-packet points from the first arrival, and a
    /// CDF whose last step reaches 1.
    #[test]
    fn probe_series_is_read() {
        let csv = "run,seq,sent_unix_ns,received_unix_ns,delay_ms\n7,0,100,2000000100,2.0\n7,1,200,2500000200,4.0\n";
        let d = read(csv).expect("reads");
        assert_eq!(d.scatter[0].points, vec![(0.0, 2.0), (0.5000001, 4.0)]);
        assert_eq!(d.cdf[0].points.last(), Some(&(4.0, 1.0)));
        let e =
            read("run,seq,sent_unix_ns,received_unix_ns,delay_ms\n1,2,x,4,5\n").expect_err("bad");
        assert!(e.contains("line 2"), "{e}");
    }

    /// A pass proves byte counts no run reaches, which a report may
    /// claim, rank the busiest pipes and flows without overflowing: the
    /// sums saturate.
    #[test]
    fn huge_counts_saturate() {
        let max = u64::MAX;
        let row =
            |key: &str, n: u64| format!(r#"{{"t_s": 0.0, "{key}": {n}, "delivered_bps": 1.0}}"#);
        let json = format!(
            r#"{{"seed": 1, "end_s": 0.2, "interval_s": 0.1,
              "flows": [{{"name": "f", "timeseries": [{f}]}}, {{"name": "g", "timeseries": [{g}, {g}]}}],
              "pipes": [{{"id": 1, "timeseries": [{p}]}}, {{"id": 2, "timeseries": [{q}, {q}]}}]}}"#,
            f = row("received_bytes", 1),
            g = row("received_bytes", max),
            p = row("arrival_bytes", 1),
            q = row("arrival_bytes", max),
        );
        let d = read(&json).expect("reads");
        let names: Vec<&str> = d.throughput.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "pipe 1 arrivals",
                "pipe 1 departures",
                "pipe 2 arrivals",
                "pipe 2 departures",
                "g delivered",
                "f delivered"
            ]
        );
    }
}
