//! What one pipe did over one interval, from two samples of its counters:
//! the rows of `pipelab sim --interval` (exact intervals of virtual time)
//! and of the live modes' `--interval` (samples the runners take), in one
//! shape, written as JSON or as one CSV row each.
//!
//! Capacity comes from the pipe's configuration, not from its packets:
//! a fixed rate as configured; a Mahimahi trace (`bw trace:`) as the bytes
//! of the delivery opportunities that fall in the interval (idle ones
//! included: capacity is what the link offered); `None` where the link has
//! no rate of its own (unlimited) or a per-packet one (`wireless`,
//! `profile`). A time-varying graph needs the pipe's walk: its caller
//! supplies it ([`Capacity::Walk`]).

use pipelab_engine::models::trace_bw::BwTrace;
use pipelab_engine::{PipeConfig, PipeStats};
use serde::Serialize;

/// One interval of one pipe.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PipeInterval {
    /// The interval's start, seconds (of virtual time in sim; since the
    /// emulation started, live).
    pub t_s: f64,
    /// What the link could carry, bit/s (see the module doc); `null`
    /// where it has no rate of its own.
    pub capacity_bps: Option<f64>,
    /// Packets that arrived.
    pub arrivals: u64,
    /// Bytes that arrived.
    pub arrival_bytes: u64,
    /// Packets that left the delay line.
    pub departures: u64,
    /// Bytes that left.
    pub departure_bytes: u64,
    /// Arrivals in bit/s.
    pub offered_bps: f64,
    /// Departures in bit/s.
    pub delivered_bps: f64,
    /// Packets queued at the interval's end (the one on the wire
    /// included).
    pub backlog: u32,
    /// Bytes queued at the interval's end.
    pub backlog_bytes: u64,
    /// Tail drops.
    pub drops: u64,
    /// Drops by queue management.
    pub aqm_drops: u64,
    /// Drops by the loss model.
    pub loss_drops: u64,
    /// Losses on the link (MAC profile).
    pub link_drops: u64,
}

impl PipeInterval {
    /// The interval from sample `prev` to sample `now`, `dt_ns` long and
    /// starting at `t_s`.
    pub fn between(
        t_s: f64,
        dt_ns: u64,
        prev: &PipeStats,
        now: &PipeStats,
        capacity_bps: Option<f64>,
    ) -> PipeInterval {
        let bps = |bytes: u64| bytes as f64 * 8.0 * 1e9 / dt_ns.max(1) as f64;
        let arrival_bytes = now.arrival_bytes.saturating_sub(prev.arrival_bytes);
        let departure_bytes = now.departure_bytes.saturating_sub(prev.departure_bytes);
        PipeInterval {
            t_s,
            capacity_bps,
            arrivals: now.arrivals.saturating_sub(prev.arrivals),
            arrival_bytes,
            departures: now.departures.saturating_sub(prev.departures),
            departure_bytes,
            offered_bps: bps(arrival_bytes),
            delivered_bps: bps(departure_bytes),
            backlog: now.backlog,
            backlog_bytes: now.backlog_bytes,
            drops: now.drops.saturating_sub(prev.drops),
            aqm_drops: now.aqm_drops.saturating_sub(prev.aqm_drops),
            loss_drops: now.loss_drops.saturating_sub(prev.loss_drops),
            link_drops: now.link_drops.saturating_sub(prev.link_drops),
        }
    }

    /// The CSV header of [`PipeInterval::csv_row`].
    pub const CSV_HEADER: &'static str = "t_s,pipe,capacity_bps,offered_bps,delivered_bps,\
arrivals,arrival_bytes,departures,departure_bytes,backlog,backlog_bytes,drops,aqm_drops,\
loss_drops,link_drops,name";

    /// This interval of pipe `pipe` (called `name`: a topology's link
    /// direction, `a->b`; empty for a configuration's pipe) as a CSV row
    /// (no newline); an unknown capacity is an empty field.
    pub fn csv_row(&self, pipe: u32, name: &str) -> String {
        let cap = self
            .capacity_bps
            .map(|c| format!("{c}"))
            .unwrap_or_default();
        let name = if name.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", name.replace('"', "\"\""))
        } else {
            name.to_string()
        };
        format!(
            "{},{pipe},{cap},{},{},{},{},{},{},{},{},{},{},{},{},{name}",
            self.t_s,
            self.offered_bps,
            self.delivered_bps,
            self.arrivals,
            self.arrival_bytes,
            self.departures,
            self.departure_bytes,
            self.backlog,
            self.backlog_bytes,
            self.drops,
            self.aqm_drops,
            self.loss_drops,
            self.link_drops
        )
    }
}

/// How a pipe's capacity over an interval is known.
#[derive(Clone, Copy, Debug)]
pub enum Capacity<'a> {
    /// A rate of its own: this many bit/s.
    Fixed(f64),
    /// The opportunities of a trace.
    Trace(&'a BwTrace),
    /// A time-varying graph's walk (the caller follows it).
    Walk,
    /// No rate of its own (unlimited), or a per-packet one.
    None,
}

impl Capacity<'_> {
    /// How `cfg` gives its capacity.
    pub fn of(cfg: &PipeConfig) -> Capacity<'_> {
        if cfg.wireless().is_some() || cfg.profile().is_some() {
            return Capacity::None;
        }
        if let Some(t) = cfg.bw_trace() {
            return Capacity::Trace(t);
        }
        if cfg.timevarying().is_some() {
            return Capacity::Walk;
        }
        let base = cfg.link_rate();
        if base.is_unlimited() {
            Capacity::None
        } else {
            Capacity::Fixed(base.bps() as f64)
        }
    }

    /// The capacity over `[a_ns, b_ns)`, bit/s; `None` for a walk or no
    /// rate.
    pub fn over(self, a_ns: u64, b_ns: u64) -> Option<f64> {
        match self {
            Capacity::Fixed(bps) => Some(bps),
            Capacity::Trace(t) => {
                let ops = opportunities_before(t, b_ns) - opportunities_before(t, a_ns);
                let secs = b_ns.saturating_sub(a_ns).max(1) as f64 / 1e9;
                Some(ops as f64 * t.opportunity_bytes() as f64 * 8.0 / secs)
            }
            Capacity::Walk | Capacity::None => None,
        }
    }
}

/// Delivery opportunities of `trace` (aligned to the engine's epoch)
/// strictly before `x` ns.
pub fn opportunities_before(trace: &BwTrace, x: u64) -> u128 {
    let period = trace.period().as_nanos();
    let offsets: Vec<u64> = trace.offsets().map(|d| d.as_nanos()).collect();
    let n = offsets.len() as u128;
    let (c, r) = (x / period, x % period);
    let mut count = c as u128 * n + offsets.partition_point(|&s| s < r) as u128;
    if r == 0 && c > 0 {
        // The last cycle's opportunities at its very end (offset = the
        // period) fall at `x` itself, not before it.
        count -= offsets.iter().filter(|&&s| s == period).count() as u128;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipelab_engine::Duration;

    fn trace(ms: &[u64]) -> BwTrace {
        BwTrace::new(ms.iter().map(|&m| Duration::from_millis(m))).expect("trace")
    }

    /// A pass proves opportunities are counted per interval as the trace
    /// places them, across its loop: offsets 1, 1, 2, 4 ms (period 4 ms),
    /// so opportunities at 1, 1, 2, 4, 5, 5, 6, 8, ... ms.
    #[test]
    fn trace_opportunities_per_interval() {
        let t = trace(&[1, 1, 2, 4]);
        let ms = 1_000_000;
        assert_eq!(opportunities_before(&t, 0), 0);
        assert_eq!(opportunities_before(&t, ms), 0);
        assert_eq!(opportunities_before(&t, ms + 1), 2);
        assert_eq!(opportunities_before(&t, 4 * ms), 3);
        assert_eq!(opportunities_before(&t, 4 * ms + 1), 4);
        assert_eq!(opportunities_before(&t, 8 * ms), 7);
        assert_eq!(opportunities_before(&t, 8 * ms + 1), 8);
        // Intervals of 2 ms: [0,2) 2, [2,4) 1, [4,6) 3, [6,8) 1, [8,10) 3;
        // an interval of any length too ([1,5): 1 at 2 ms, 4 and 5).
        let cfg = PipeConfig::default().with_bw_trace(t);
        let cap = Capacity::of(&cfg);
        let bits = |ops: u64, ms: f64| Some(ops as f64 * 1500.0 * 8.0 * 1000.0 / ms);
        let got: Vec<_> = (0..5u64)
            .map(|k| cap.over(2 * k * ms, 2 * (k + 1) * ms))
            .collect();
        assert_eq!(
            got,
            vec![
                bits(2, 2.0),
                bits(1, 2.0),
                bits(3, 2.0),
                bits(1, 2.0),
                bits(3, 2.0)
            ]
        );
        assert_eq!(cap.over(ms + 1, 5 * ms + 1), bits(4, 4.0));
    }

    /// A pass proves an interval's counts are the differences of its two
    /// samples, its rates those over its own length, its backlog the
    /// later sample's, and its CSV row in the header's order.
    #[test]
    fn an_interval_is_the_difference_of_two_samples() {
        let a = PipeStats {
            arrivals: 10,
            arrival_bytes: 15_000,
            departures: 8,
            departure_bytes: 12_000,
            drops: 1,
            ..PipeStats::default()
        };
        let b = PipeStats {
            arrivals: 30,
            arrival_bytes: 45_000,
            departures: 28,
            departure_bytes: 42_000,
            drops: 4,
            backlog: 2,
            backlog_bytes: 3000,
            ..PipeStats::default()
        };
        let i = PipeInterval::between(0.5, 250_000_000, &a, &b, Some(1e6));
        assert_eq!(
            (i.arrivals, i.departures, i.drops, i.backlog),
            (20, 20, 3, 2)
        );
        assert_eq!(i.offered_bps, 30_000.0 * 8.0 * 4.0);
        assert_eq!(i.delivered_bps, 960_000.0);
        let row = i.csv_row(7, "a->b");
        assert!(row.ends_with(",a->b"), "{row}");
        assert!(i.csv_row(7, "x,y").ends_with(",\"x,y\""));
        assert_eq!(
            row.split(',').count(),
            PipeInterval::CSV_HEADER.split(',').count()
        );
        assert!(
            row.starts_with("0.5,7,1000000,960000,960000,20,30000,20,30000,2,3000,3,"),
            "{row}"
        );
    }
}
