//! What a simulation measured, per flow, per pipe and per rule.
//!
//! The JSON field names are a stable interface that scripts rely on:
//! `flows[]` with `sent`, `received`, `lost`, `delay_ms` {`min`, `mean`,
//! `p50`, `p99`, `max`, `stddev`}, `drops` {`queue`, `memory`, `rule`,
//! `loop`, `loss`, `aqm`, `link`, `reset`, `unreach`, `down`}, `answers`
//! and `throughput_bps`; `pipes[]` with `id`,
//! `arrivals`, `departures`, `drops` (tail drops), `aqm_drops`, `link_drops`,
//! `max_backlog`; `queues[]` (flow queues, with their instances). Fields
//! are added, never renamed. With an interval (`--interval`), `interval_s`,
//! each pipe's and flow's `timeseries` and each flow's `delay_cdf`
//! ([`crate::timeseries`]); absent otherwise.
//!
//! Precision: min, max, mean and standard deviation of the one-way delay
//! are exact (integer nanosecond sums). p50 and p99 come from an HDR
//! histogram with 3 significant digits (within 0.1 %), clamped to
//! [min, max]. The histogram grows with the largest delay it is given
//! (it starts at 1 ms and resizes on a longer one), so a percentile is
//! within 0.1 % at any delay a `u64` of nanoseconds holds: a link of
//! `bw 1bit/s` whose packets wait for days has its p50 where the
//! delays are, not at a fixed ceiling.
//!
//! Throughput: bits delivered after the first delivery, over the time from
//! the first to the last delivery. For a periodic or link-limited flow this
//! is exactly its rate (no fence-post error).

use crate::timeseries::{FlowInterval, PipeInterval};
use hdrhistogram::Histogram;
use pipelab_engine::{Duration, Instant, Packet};
use serde::Serialize;
use std::fmt::Write;

/// One-way delay statistics, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DelayStats {
    /// Smallest delay.
    pub min: f64,
    /// Mean delay.
    pub mean: f64,
    /// Median (within 0.1 %).
    pub p50: f64,
    /// 99th percentile (within 0.1 %).
    pub p99: f64,
    /// Largest delay.
    pub max: f64,
    /// Population standard deviation.
    pub stddev: f64,
}

pub use pipelab_emu::series::Drops;

/// What one traffic source experienced.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowReport {
    /// Index of the source (order of `--traffic`).
    pub flow: usize,
    /// Name (`name NAME`, or `flowN`).
    pub name: String,
    /// The source, as canonical text.
    pub spec: String,
    /// Packets sent.
    pub sent: u64,
    /// Packets delivered.
    pub received: u64,
    /// Packets lost (`sent − received`).
    pub lost: u64,
    /// Extra copies delivered (made by duplication; not in `received`).
    pub duplicated: u64,
    /// Packets delivered after a packet sent later than them.
    pub reordered: u64,
    /// Delivered packets marked corrupt.
    pub corrupted: u64,
    /// Delivered packets marked Congestion Experienced (`ecn`).
    pub ecn_marked: u64,
    /// Losses by reason.
    pub drops: Drops,
    /// Of the drops by `reset` and `unreach` rules, those a live run
    /// answers (a TCP reset, an ICMP unreachable; the RFCs forbid the
    /// others).
    pub answers: u64,
    /// Bytes sent.
    pub sent_bytes: u64,
    /// Bytes delivered.
    pub received_bytes: u64,
    /// One-way delay; `null` when nothing was delivered.
    pub delay_ms: Option<DelayStats>,
    /// Delivered throughput in bit/s (see the module doc).
    pub throughput_bps: f64,
    /// With `--interval`: the one-way delay's distribution, `[p, ms]` at
    /// p = 0, 0.01, ..., 1 (p = 0 the minimum, 1 the maximum, exact;
    /// between, within 0.1 % as p50 and p99); empty when nothing was
    /// delivered. Absent without `--interval`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_cdf: Option<Vec<[f64; 2]>>,
    /// With `--interval`: what the flow did in each interval
    /// ([`crate::timeseries`]). Absent without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<Vec<FlowInterval>>,
}

/// One pipe's counters at the end of the run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PipeReport {
    /// The pipe's number.
    pub id: u32,
    /// Its configuration, as canonical text.
    pub config: String,
    /// Packets that arrived.
    pub arrivals: u64,
    /// Bytes that arrived.
    pub arrival_bytes: u64,
    /// Packets that left.
    pub departures: u64,
    /// Bytes that left.
    pub departure_bytes: u64,
    /// Tail drops.
    pub drops: u64,
    /// Drops by active queue management (RED/GRED, CoDel, PIE).
    pub aqm_drops: u64,
    /// ECN-capable packets marked CE instead of dropped (`ecn`).
    pub ecn_marks: u64,
    /// Packets lost on the link (MAC profile).
    pub link_drops: u64,
    /// Largest queue, in packets.
    pub max_backlog: u32,
    /// Largest queue, in bytes.
    pub max_backlog_bytes: u64,
    /// For a dynamic pipe (`mask`), its instance accounting; `null` for a
    /// static pipe. The counters above are then totals over instances.
    pub instances: Option<InstanceCounts>,
    /// For a dynamic pipe, the instances alive at the end, in key order.
    pub instance_list: Vec<PipeInstanceReport>,
    /// With `--interval`: capacity, arrivals, departures, backlog and
    /// drops in each interval ([`crate::timeseries`]). Absent without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<Vec<PipeInterval>>,
}

/// The instances of a dynamic pipe or queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct InstanceCounts {
    /// Alive at the end (the overflow instance included).
    pub live: u32,
    /// Created during the run.
    pub created: u64,
    /// Freed by idle expiry or to make room.
    pub expired: u64,
    /// Packets sent to the shared overflow instance (table full).
    pub overflow: u64,
}

/// One live instance of a dynamic pipe.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PipeInstanceReport {
    /// The masked key (`proto src:sport -> dst:dport`), or `overflow`.
    pub key: String,
    /// Packets that arrived.
    pub arrivals: u64,
    /// Packets that left.
    pub departures: u64,
    /// Bytes that left.
    pub departure_bytes: u64,
    /// Tail drops.
    pub drops: u64,
}

/// One flow queue (`queue N config`), or a scheduled pipe's default queue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QueueReport {
    /// The queue's number; for a pipe's default queue, the pipe's number.
    pub id: u32,
    /// True for the default queue of pipe `id` (what `pipe N` rules use).
    pub default: bool,
    /// The pipe whose link serves it.
    pub pipe: u32,
    /// Its configuration, as canonical text (empty for a default queue).
    pub config: String,
    /// Packets offered to its instances.
    pub arrivals: u64,
    /// Bytes offered.
    pub arrival_bytes: u64,
    /// Tail drops at an instance's limit.
    pub drops: u64,
    /// Drops by the scheduler's AQM (fq_codel).
    pub aqm_drops: u64,
    /// Packets the link took.
    pub served: u64,
    /// Bytes the link took.
    pub served_bytes: u64,
    /// Largest backlog of one instance, in packets.
    pub max_backlog: u32,
    /// Instance accounting.
    pub instances: InstanceCounts,
    /// The instances alive at the end, in key order.
    pub instance_list: Vec<QueueInstanceReport>,
}

/// One live instance of a flow queue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QueueInstanceReport {
    /// The masked key (`proto src:sport -> dst:dport`), or `overflow`.
    pub key: String,
    /// Packets offered.
    pub arrivals: u64,
    /// Tail drops.
    pub drops: u64,
    /// Packets the link took.
    pub served: u64,
    /// Bytes the link took.
    pub served_bytes: u64,
    /// Packets waiting at the end.
    pub backlog: u32,
}

/// One rule's counters (ipfw `show`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RuleReport {
    /// Rule number.
    pub number: u32,
    /// Packets matched.
    pub packets: u64,
    /// Bytes matched.
    pub bytes: u64,
    /// The rule, as canonical text.
    pub rule: String,
}

/// The whole result of a simulation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The seed every random decision was derived from.
    pub seed: u64,
    /// Virtual time at which the last packet left, in seconds.
    pub end_s: f64,
    /// With `--interval`: its length, in seconds (the `timeseries` of
    /// flows and pipes). Absent without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_s: Option<f64>,
    /// Per flow, in `--traffic` order.
    pub flows: Vec<FlowReport>,
    /// Per pipe, in number order.
    pub pipes: Vec<PipeReport>,
    /// Per flow queue: the default queues of scheduled pipes (in pipe
    /// order), then the configured queues, in number order.
    pub queues: Vec<QueueReport>,
    /// Per rule, in number order, the default rule last.
    pub rules: Vec<RuleReport>,
}

/// Accumulates one flow's results while the simulation runs.
#[derive(Debug)]
pub(crate) struct FlowAcc {
    pub sent: u64,
    pub sent_bytes: u64,
    pub received: u64,
    pub received_bytes: u64,
    pub drops: Drops,
    pub answers: u64,
    duplicated: u64,
    reordered: u64,
    corrupted: u64,
    ecn_marked: u64,
    /// Highest sequence number delivered so far, plus one (0: none yet).
    next_seq: u64,
    min: u64,
    max: u64,
    sum: u128,
    /// Σd², while it fits (`None` after an overflow: delays of years).
    sum_sq: Option<u128>,
    /// Welford's running mean and sum of squared deviations, in f64: the
    /// variance when the exact integer sums overflow.
    w_mean: f64,
    w_m2: f64,
    /// The delays, for the percentiles ([`Delays`]).
    delays: Delays,
    first_at: Option<(Instant, u32)>,
    last_at: Instant,
}

impl FlowAcc {
    pub fn new() -> FlowAcc {
        FlowAcc {
            sent: 0,
            sent_bytes: 0,
            received: 0,
            received_bytes: 0,
            drops: Drops::default(),
            answers: 0,
            duplicated: 0,
            reordered: 0,
            corrupted: 0,
            ecn_marked: 0,
            next_seq: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: Some(0),
            w_mean: 0.0,
            w_m2: 0.0,
            delays: Delays::Few(Vec::new()),
            first_at: None,
            last_at: Instant::ZERO,
        }
    }

    /// A delivery of `pkt`, the `seq`-th packet of its flow.
    ///
    /// A duplicate copy is counted in `duplicated` only. A packet is
    /// reordered if a packet sent after it was delivered before it.
    pub fn delivered(&mut self, pkt: &Packet, seq: u64, delay: Duration, at: Instant) {
        if pkt.flags & Packet::DUPLICATE != 0 {
            self.duplicated += 1;
            return;
        }
        if pkt.flags & Packet::CORRUPT != 0 {
            self.corrupted += 1;
        }
        if pkt.flags & Packet::CE != 0 {
            self.ecn_marked += 1;
        }
        if seq + 1 < self.next_seq {
            self.reordered += 1;
        }
        self.next_seq = self.next_seq.max(seq + 1);
        let len = pkt.len;
        let d = delay.as_nanos();
        self.received += 1;
        self.received_bytes += len as u64;
        self.min = self.min.min(d);
        self.max = self.max.max(d);
        self.sum += d as u128;
        // d² < 2^128 always; the sum may not fit.
        self.sum_sq = self
            .sum_sq
            .and_then(|s| s.checked_add(d as u128 * d as u128));
        let x = d as f64;
        let before = self.w_mean;
        self.w_mean += (x - before) / self.received as f64;
        self.w_m2 += (x - before) * (x - self.w_mean);
        self.delays.record(d);
        if self.first_at.is_none() {
            self.first_at = Some((at, len));
        }
        self.last_at = at;
    }

    pub fn finish(&self, flow: usize, name: String, spec: String) -> FlowReport {
        let n = self.received;
        let delay_ms = (n > 0).then(|| {
            let mean_ns = self.sum as f64 / n as f64;
            // Var = (n·Σd² − (Σd)²)/n², from exact integer sums while
            // they fit in 128 bits; else Welford's (relative error ~1e-15).
            let exact = self.sum_sq.and_then(|sq| {
                let a = (n as u128).checked_mul(sq)?;
                let b = self.sum.checked_mul(self.sum)?;
                Some(a.saturating_sub(b) as f64 / (n as f64 * n as f64))
            });
            let var = exact.unwrap_or(self.w_m2 / n as f64);
            let q = |p: f64| self.delays.quantile(p).clamp(self.min, self.max) as f64 / 1e6;
            DelayStats {
                min: self.min as f64 / 1e6,
                mean: mean_ns / 1e6,
                p50: q(0.5),
                p99: q(0.99),
                max: self.max as f64 / 1e6,
                stddev: var.sqrt() / 1e6,
            }
        });
        let throughput_bps = match self.first_at {
            Some((first, first_len)) if self.last_at > first => {
                // Exact integers until the one division.
                let bits = (self.received_bytes - first_len as u64) as u128 * 8;
                let ns = (self.last_at - first).as_nanos() as u128;
                (bits * 1_000_000_000) as f64 / ns as f64
            }
            _ => 0.0,
        };
        FlowReport {
            flow,
            name,
            spec,
            sent: self.sent,
            received: self.received,
            lost: self.sent - self.received,
            drops: self.drops,
            answers: self.answers,
            duplicated: self.duplicated,
            reordered: self.reordered,
            corrupted: self.corrupted,
            ecn_marked: self.ecn_marked,
            sent_bytes: self.sent_bytes,
            received_bytes: self.received_bytes,
            delay_ms,
            throughput_bps,
            delay_cdf: None,
            timeseries: None,
        }
    }

    /// The one-way delay's distribution, `[p, ms]` at p = 0, 0.01, ...,
    /// 1: the minimum and maximum exact, the rest from the histogram
    /// (within 0.1 %), never outside them.
    pub fn cdf(&self) -> Vec<[f64; 2]> {
        if self.received == 0 {
            return Vec::new();
        }
        (0..=100)
            .map(|i| {
                let p = i as f64 / 100.0;
                let ns = match i {
                    0 => self.min,
                    100 => self.max,
                    _ => self.delays.quantile(p).clamp(self.min, self.max),
                };
                [p, ns as f64 / 1e6]
            })
            .collect()
    }
}

/// Delays a flow keeps one by one before it takes a histogram: 64 KB of
/// them, less than the smallest histogram of the delays a network has
/// (90 KB at 1 ms, 120 KB at 10 ms).
const FEW_DELAYS: usize = 8192;

/// A flow's one-way delays, for its percentiles: each delay (8 bytes a
/// packet) while there are at most [`FEW_DELAYS`], then an HDR histogram
/// ([`new_hist`]). A flow of a few packets thus costs a few bytes, not a
/// histogram: a sim of 100,000 one-packet sources held 9 GB of empty
/// histograms. Either answers a quantile with the same number: the
/// histogram's reading of a delay (the highest value its bucket holds) is
/// a function of the delay alone, which [`Delays::quantile`] applies to
/// the delay of the same rank.
#[derive(Clone, Debug)]
enum Delays {
    Few(Vec<u64>),
    Many(Box<Histogram<u64>>),
}

impl Delays {
    fn record(&mut self, d: u64) {
        match self {
            Delays::Few(v) if v.len() < FEW_DELAYS => v.push(d),
            Delays::Few(v) => {
                let mut h = Box::new(new_hist());
                for &x in v.iter().chain([&d]) {
                    hist_record(&mut h, x);
                }
                *self = Delays::Many(h);
            }
            Delays::Many(h) => hist_record(h, d),
        }
    }

    /// The delay at quantile `p` (in `(0, 1]`), as
    /// `Histogram::value_at_quantile` reads it.
    fn quantile(&self, p: f64) -> u64 {
        match self {
            Delays::Many(h) => h.value_at_quantile(p),
            Delays::Few(v) if v.is_empty() => 0,
            Delays::Few(v) => {
                let p = p.clamp(0.0, 1.0);
                // The rank `value_at_quantile` stops at: ⌈p·n⌉, at least 1.
                let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
                let mut sorted = v.clone();
                let (_, &mut d, _) = sorted.select_nth_unstable(rank - 1);
                let shape = hist_shape();
                if p == 0.0 {
                    shape.lowest_equivalent(d)
                } else {
                    shape.highest_equivalent(d)
                }
            }
        }
    }
}

/// Record `d` in `h`, which grows to hold it (never clamps; see the
/// module documentation). A resize can fail only where `usize` cannot
/// count the buckets (not on 64-bit hosts); the value is then clamped,
/// still within [min, max] when read back.
fn hist_record(h: &mut Histogram<u64>, d: u64) {
    if h.record(d).is_err() {
        h.saturating_record(d);
    }
}

/// A histogram of [`new_hist`]'s precision, for its arithmetic only (which
/// values share a bucket does not depend on the range it covers).
fn hist_shape() -> &'static Histogram<u64> {
    static SHAPE: std::sync::OnceLock<Histogram<u64>> = std::sync::OnceLock::new();
    SHAPE.get_or_init(|| match Histogram::new_with_bounds(1, 2, 3) {
        Ok(h) => h,
        // Valid bounds and digits: cannot fail.
        Err(_) => std::process::abort(),
    })
}

/// The delay the histogram covers before it first grows: 1 ms, in ns.
/// Each octave above it costs 8 KB (1024 counts), so a flow's histogram
/// follows its own largest delay (about 120 KB for 10 ms) instead of
/// holding 2 hours' worth (about 280 KB) from the start; the buckets
/// below are the same, so are the percentiles.
const HIST_START_NS: u64 = 1_000_000;

/// A delay histogram: 1 ns to [`HIST_START_NS`] at first, 3 significant
/// digits, growing to hold any longer delay recorded.
fn new_hist() -> Histogram<u64> {
    let mut h = match Histogram::new_with_bounds(1, HIST_START_NS, 3) {
        Ok(h) => h,
        // Valid bounds and digits: cannot fail.
        Err(_) => std::process::abort(),
    };
    h.auto(true);
    h
}

fn fmt_rate(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{:.3} Gbit/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.3} Mbit/s", bps / 1e6)
    } else if bps >= 1e3 {
        format!("{:.3} Kbit/s", bps / 1e3)
    } else {
        format!("{bps:.0} bit/s")
    }
}

impl Report {
    /// The report as a human-readable table.
    pub fn to_table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "pipelab sim: seed {}, virtual time {:.6} s",
            self.seed, self.end_s
        );
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "{:<12} {:>9} {:>9} {:>8} {:>7}  {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}  {:>16}",
            "flow",
            "sent",
            "received",
            "lost",
            "loss%",
            "min ms",
            "mean ms",
            "p50 ms",
            "p99 ms",
            "max ms",
            "std ms",
            "throughput"
        );
        for f in &self.flows {
            let loss = if f.sent > 0 {
                100.0 * f.lost as f64 / f.sent as f64
            } else {
                0.0
            };
            let _ = write!(
                s,
                "{:<12} {:>9} {:>9} {:>8} {:>7.3}  ",
                f.name, f.sent, f.received, f.lost, loss
            );
            match f.delay_ms {
                Some(d) => {
                    let _ = write!(
                        s,
                        "{:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>8.3}",
                        d.min, d.mean, d.p50, d.p99, d.max, d.stddev
                    );
                }
                None => {
                    let _ = write!(
                        s,
                        "{:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
                        "-", "-", "-", "-", "-", "-"
                    );
                }
            }
            let _ = writeln!(s, "  {:>16}", fmt_rate(f.throughput_bps));
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "{:<6} {:>10} {:>10} {:>8} {:>12}  config",
            "pipe", "arrivals", "departures", "drops", "max backlog"
        );
        for p in &self.pipes {
            let _ = writeln!(
                s,
                "{:<6} {:>10} {:>10} {:>8} {:>12}  {}",
                p.id, p.arrivals, p.departures, p.drops, p.max_backlog, p.config
            );
        }
        let _ = writeln!(s);
        let _ = writeln!(s, "{:<6} {:>10} {:>12}  rule", "rule", "packets", "bytes");
        for r in &self.rules {
            let _ = writeln!(
                s,
                "{:05}  {:>10} {:>12}  {}",
                r.number, r.packets, r.bytes, r.rule
            );
        }
        s
    }

    /// The report as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flow whose packets took `delays_ns`, in that order.
    fn flow(delays_ns: &[u64]) -> DelayStats {
        let mut acc = FlowAcc::new();
        let pkt = Packet::new(100);
        for (seq, &d) in delays_ns.iter().enumerate() {
            acc.sent += 1;
            acc.delivered(&pkt, seq as u64, Duration::from_nanos(d), Instant::ZERO);
        }
        acc.finish(0, "f".into(), String::new())
            .delay_ms
            .expect("delivered")
    }

    fn within(got_ms: f64, want_ns: u64, what: &str) {
        let want = want_ns as f64 / 1e6;
        assert!(
            (got_ms - want).abs() <= want * 1e-3,
            "{what}: {got_ms} ms, want {want} ms within 0.1 %"
        );
    }

    /// A pass proves percentiles far beyond the histogram's first range
    /// are read where the delays are: before it grew, every delay above
    /// its range (2 h then) was recorded as 2 h, so p50 fell to the
    /// minimum and p99 below the max.
    #[test]
    fn percentiles_hold_beyond_two_hours() {
        // Ten delays of 1 to 10 days (the fifth is the median).
        let day = 86_400 * 1_000_000_000u64;
        let delays: Vec<u64> = (1..=10).map(|k| k * day).collect();
        let d = flow(&delays);
        within(d.p50, 5 * day, "p50");
        within(d.p99, 10 * day, "p99");
        assert_eq!((d.min, d.max), (86_400_000.0, 864_000_000.0));
        assert!(d.p99 <= d.max);
    }

    /// A pass proves the histogram grows to the largest delay a `u64` of
    /// nanoseconds holds (584 years) without clamping or failing.
    #[test]
    fn percentiles_hold_at_the_largest_delays() {
        let d = flow(&[1_000_000, 1_000_000_000_000_000_000, u64::MAX]);
        within(d.p50, 1_000_000_000_000_000_000, "p50");
        assert_eq!(d.p99, u64::MAX as f64 / 1e6);
        assert_eq!(d.min, 1.0);
    }

    /// Sums of squares beyond 128 bits (delays of centuries, or of days
    /// over millions of packets) used to overflow (a panic in a debug
    /// build, a wrong stddev in release). A pass proves mean and stddev
    /// hold there: two delays 2^63 ns apart have stddev 2^62 ns.
    #[test]
    fn mean_and_stddev_hold_beyond_128_bit_sums() {
        let d = flow(&[0, 1 << 63, 0, 1 << 63]);
        let (mean, sd) = ((1u64 << 62) as f64 / 1e6, (1u64 << 62) as f64 / 1e6);
        assert!((d.mean - mean).abs() <= mean * 1e-12, "mean {}", d.mean);
        assert!((d.stddev - sd).abs() <= sd * 1e-12, "stddev {}", d.stddev);
    }

    /// A pass proves a flow's histogram holds counts for its own delays,
    /// not for hours: 10 ms delays keep it at 15 × 1024 counts (120 KB;
    /// a 2-hour start held 280 KB per flow, which a sim of thousands of
    /// flows paid in gigabytes), and a day-long delay grows it.
    #[test]
    fn a_flow_histogram_follows_its_largest_delay() {
        let mut acc = FlowAcc::new();
        let pkt = Packet::new(100);
        let n = FEW_DELAYS as u64 + 1;
        for seq in 0..n {
            acc.delivered(&pkt, seq, Duration::from_millis(10), Instant::ZERO);
        }
        let Delays::Many(h) = &acc.delays else {
            panic!("a histogram after {n} delays");
        };
        let short = h.distinct_values();
        assert!(short <= 15 * 1024, "{short} counts for 10 ms");
        acc.delivered(&pkt, n, Duration::from_secs(86_400), Instant::ZERO);
        let Delays::Many(h) = &acc.delays else {
            panic!("a histogram");
        };
        assert!(h.distinct_values() > 30 * 1024);
    }

    /// A flow of a few packets keeps their delays, not a histogram: a
    /// pass proves one delivery costs 8 bytes, where every flow held a
    /// 90 KB histogram (100,000 one-packet sources took 9 GB and
    /// aborted), and that the delays become a histogram past
    /// [`FEW_DELAYS`].
    #[test]
    fn a_flow_of_few_packets_holds_no_histogram() {
        let mut acc = FlowAcc::new();
        let pkt = Packet::new(100);
        acc.delivered(&pkt, 0, Duration::from_millis(10), Instant::ZERO);
        match &acc.delays {
            Delays::Few(v) => assert!(v.capacity() * 8 <= 64, "{} bytes", v.capacity() * 8),
            Delays::Many(_) => panic!("a histogram for one delay"),
        }
        for seq in 1..FEW_DELAYS as u64 {
            acc.delivered(&pkt, seq, Duration::from_millis(10), Instant::ZERO);
        }
        assert!(matches!(&acc.delays, Delays::Few(v) if v.len() == FEW_DELAYS));
        acc.delivered(
            &pkt,
            FEW_DELAYS as u64,
            Duration::from_millis(1),
            Instant::ZERO,
        );
        assert!(matches!(&acc.delays, Delays::Many(_)));
    }

    /// A pass proves the delays kept one by one give the percentiles and
    /// the CDF a histogram of them gives, number for number, over delays
    /// from nanoseconds to centuries and counts from 1 to past the switch
    /// to a histogram.
    #[test]
    fn few_delays_read_as_a_histogram_does() {
        let mut rng = pipelab_engine::rng::rng_from_seed(7);
        for n in [1usize, 2, 3, 7, 100, 1000, FEW_DELAYS, FEW_DELAYS + 1] {
            let mut acc = FlowAcc::new();
            let mut h = new_hist();
            let pkt = Packet::new(100);
            for seq in 0..n as u64 {
                let bits = rand::Rng::gen_range(&mut rng, 0..64u32);
                let d = rand::Rng::gen::<u64>(&mut rng) >> bits;
                acc.delivered(&pkt, seq, Duration::from_nanos(d), Instant::ZERO);
                hist_record(&mut h, d);
            }
            for i in 0..=1000 {
                let p = i as f64 / 1000.0;
                assert_eq!(
                    acc.delays.quantile(p),
                    h.value_at_quantile(p),
                    "n {n} p {p}"
                );
            }
        }
    }

    /// Short delays keep their precision once the histogram has grown.
    #[test]
    fn short_delays_stay_exact_after_a_long_one() {
        let mut delays = vec![20_800_000u64; 99];
        delays.push(3 * 86_400 * 1_000_000_000);
        let d = flow(&delays);
        within(d.p50, 20_800_000, "p50");
        within(d.p99, 20_800_000, "p99");
    }
}
