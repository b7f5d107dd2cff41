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
//!
//! What one flow did over one interval is a [`FlowInterval`], counted in
//! a [`FlowBucket`]: in sim a flow is a traffic source, live it is an IP
//! 5-tuple ([`FlowKey`], named by [`flow_name`]), counted per runner in a
//! bounded [`FlowTable`] (the first flows seen have rows of their own,
//! later ones are summed into one `other` row).

use crate::emulation::Reason;
use pipelab_engine::models::trace_bw::BwTrace;
use pipelab_engine::{FlowKey, PipeConfig, PipeStats};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::net::{IpAddr, SocketAddr};

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

/// Packets lost, by where and why.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Drops {
    /// Tail drops at a full queue.
    pub queue: u64,
    /// Refused by the engine's global packet cap.
    pub memory: u64,
    /// Denied by a classifier rule.
    pub rule: u64,
    /// Dropped after looping through the classifier too often (`one_pass 0`).
    pub r#loop: u64,
    /// Dropped by a pipe's loss model.
    pub loss: u64,
    /// Dropped by a pipe's active queue management (RED/GRED, CoDel, PIE).
    pub aqm: u64,
    /// Lost on a pipe's link (MAC profile draws above the loss level).
    pub link: u64,
    /// Dropped by a `reset` rule.
    pub reset: u64,
    /// Dropped by an `unreach` rule.
    pub unreach: u64,
    /// Refused by a pipe that was down (a black-hole window).
    pub down: u64,
}

impl Drops {
    /// Count one drop for `r` (no route counts as `rule`).
    pub fn count(&mut self, r: Reason) {
        match r {
            Reason::Queue => self.queue += 1,
            Reason::Memory => self.memory += 1,
            Reason::Loss => self.loss += 1,
            Reason::Aqm => self.aqm += 1,
            Reason::Link => self.link += 1,
            Reason::Rule | Reason::NoRoute => self.rule += 1,
            Reason::Loop => self.r#loop += 1,
            Reason::Reset => self.reset += 1,
            Reason::Unreach => self.unreach += 1,
            Reason::Down => self.down += 1,
        }
    }

    /// Add `o`'s counts.
    pub fn add(&mut self, o: &Drops) {
        self.queue += o.queue;
        self.memory += o.memory;
        self.rule += o.rule;
        self.r#loop += o.r#loop;
        self.loss += o.loss;
        self.aqm += o.aqm;
        self.link += o.link;
        self.reset += o.reset;
        self.unreach += o.unreach;
        self.down += o.down;
    }

    /// Every drop.
    pub fn total(&self) -> u64 {
        self.queue
            + self.memory
            + self.rule
            + self.r#loop
            + self.loss
            + self.aqm
            + self.link
            + self.reset
            + self.unreach
            + self.down
    }
}

/// Delay of the packets delivered in one interval, ms: one-way in sim
/// (exact), inside the emulator live (arrival to departure).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct IntervalDelay {
    /// Smallest.
    pub min: f64,
    /// Mean.
    pub mean: f64,
    /// Largest.
    pub max: f64,
}

/// One interval of one flow: the rows of a flow's `timeseries` in sim and
/// live reports alike.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowInterval {
    /// The interval's start, seconds (of virtual time in sim; since the
    /// emulation started, live).
    pub t_s: f64,
    /// Packets sent (sim: born in the interval; live: arrived at the
    /// emulator).
    pub sent: u64,
    /// Bytes sent.
    pub sent_bytes: u64,
    /// Sent bytes in bit/s.
    pub offered_bps: f64,
    /// Packets delivered (copies not counted).
    pub received: u64,
    /// Bytes delivered.
    pub received_bytes: u64,
    /// Delivered bytes in bit/s.
    pub delivered_bps: f64,
    /// Delay of the packets delivered; `null` when none was.
    pub delay_ms: Option<IntervalDelay>,
    /// Losses in the interval, by reason.
    pub drops: Drops,
}

impl FlowInterval {
    /// The CSV header of [`FlowInterval::csv_row`].
    pub const CSV_HEADER: &'static str = "t_s,flow,offered_bps,delivered_bps,sent,sent_bytes,\
received,received_bytes,delay_min_ms,delay_mean_ms,delay_max_ms,drops,queue,memory,rule,loop,\
loss,aqm,link,reset,unreach,down";

    /// This interval of flow `name` as a CSV row (no newline); no delay
    /// is three empty fields, `drops` is their total.
    pub fn csv_row(&self, name: &str) -> String {
        let delay = match self.delay_ms {
            Some(d) => format!("{},{},{}", d.min, d.mean, d.max),
            None => ",,".to_string(),
        };
        let d = &self.drops;
        format!(
            "{},{},{},{},{},{},{},{},{delay},{},{},{},{},{},{},{},{},{},{},{}",
            self.t_s,
            csv_field(name),
            self.offered_bps,
            self.delivered_bps,
            self.sent,
            self.sent_bytes,
            self.received,
            self.received_bytes,
            d.total(),
            d.queue,
            d.memory,
            d.rule,
            d.r#loop,
            d.loss,
            d.aqm,
            d.link,
            d.reset,
            d.unreach,
            d.down
        )
    }
}

/// `s` as one CSV field (quoted where it must be).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A flow's counts in one interval, while the run goes on.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlowBucket {
    /// Packets sent.
    pub sent: u64,
    /// Bytes sent.
    pub sent_bytes: u64,
    /// Packets delivered.
    pub received: u64,
    /// Bytes delivered.
    pub received_bytes: u64,
    /// Smallest delay of a delivered packet, ns.
    pub delay_min: u64,
    /// Largest, ns.
    pub delay_max: u64,
    /// Sum of the delays, ns.
    pub delay_sum: u128,
    /// Losses by reason.
    pub drops: Drops,
}

impl FlowBucket {
    /// A packet of `len` bytes sent.
    #[inline]
    pub fn sent(&mut self, len: u32) {
        self.sent += 1;
        self.sent_bytes += len as u64;
    }

    /// A delivery of `len` bytes after `delay_ns`.
    #[inline]
    pub fn delivered(&mut self, len: u32, delay_ns: u64) {
        if self.received == 0 || delay_ns < self.delay_min {
            self.delay_min = delay_ns;
        }
        self.delay_max = self.delay_max.max(delay_ns);
        self.delay_sum += delay_ns as u128;
        self.received += 1;
        self.received_bytes += len as u64;
    }

    /// Add `o`'s counts (the same flow counted elsewhere: another worker).
    pub fn add(&mut self, o: &FlowBucket) {
        if o.received > 0 {
            if self.received == 0 || o.delay_min < self.delay_min {
                self.delay_min = o.delay_min;
            }
            self.delay_max = self.delay_max.max(o.delay_max);
        }
        self.sent += o.sent;
        self.sent_bytes += o.sent_bytes;
        self.received += o.received;
        self.received_bytes += o.received_bytes;
        self.delay_sum += o.delay_sum;
        self.drops.add(&o.drops);
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.sent == 0 && self.received == 0 && self.drops.total() == 0
    }

    /// The `k`-th interval of `interval_ns` (sim's exact intervals).
    pub fn finish(&self, k: usize, interval_ns: u64) -> FlowInterval {
        self.interval(k as f64 * interval_ns as f64 / 1e9, interval_ns)
    }

    /// The interval starting at `t_s`, `dt_ns` long.
    pub fn interval(&self, t_s: f64, dt_ns: u64) -> FlowInterval {
        let bps = |bytes: u64| bytes as f64 * 8.0 * 1e9 / dt_ns.max(1) as f64;
        FlowInterval {
            t_s,
            sent: self.sent,
            sent_bytes: self.sent_bytes,
            offered_bps: bps(self.sent_bytes),
            received: self.received,
            received_bytes: self.received_bytes,
            delivered_bps: bps(self.received_bytes),
            delay_ms: (self.received > 0).then(|| IntervalDelay {
                min: self.delay_min as f64 / 1e6,
                mean: self.delay_sum as f64 / self.received as f64 / 1e6,
                max: self.delay_max as f64 / 1e6,
            }),
            drops: self.drops,
        }
    }
}

/// A live flow's name: `udp 10.0.0.1:5000 > 10.0.0.2:7790` (ports only
/// for TCP, UDP and SCTP; `non-ip` for a frame that is not IP).
pub fn flow_name(k: &FlowKey) -> String {
    let proto = match k.proto {
        1 => "icmp".to_string(),
        6 => "tcp".to_string(),
        17 => "udp".to_string(),
        58 => "icmpv6".to_string(),
        132 => "sctp".to_string(),
        0 if k.src.is_unspecified() && k.dst.is_unspecified() => return "non-ip".into(),
        n => format!("proto {n}"),
    };
    if matches!(k.proto, 6 | 17 | 132) {
        let (s, d) = (
            SocketAddr::new(k.src, k.sport),
            SocketAddr::new(k.dst, k.dport),
        );
        format!("{proto} {s} > {d}")
    } else {
        let addr = |a: IpAddr| a.to_string();
        format!("{proto} {} > {}", addr(k.src), addr(k.dst))
    }
}

/// The default bound of a [`FlowTable`]: flows with rows of their own.
pub const DEFAULT_FLOWS: usize = 1024;

/// The most distinct flows a [`FlowTable`] remembers to count those
/// summed into `other` (beyond it the count stops growing).
pub const MAX_OTHERS_COUNTED: usize = 65_536;

/// Live flows' counts since the last [`FlowTable::take`]: the first
/// `bound` flows seen (for the whole run) have buckets of their own,
/// every later one is summed into `other`, and counted (distinct, up to
/// [`MAX_OTHERS_COUNTED`]). Memory is bounded whatever the traffic.
#[derive(Clone, Debug)]
pub struct FlowTable {
    bound: usize,
    flows: HashMap<FlowKey, FlowBucket, KeyHash>,
    other: FlowBucket,
    others: HashSet<FlowKey, KeyHash>,
}

/// The hash of a [`FlowTable`]'s keys: a multiply-rotate hash over the
/// key's words (two lookups per packet: the standard SipHash cost 160 ns
/// per packet where this costs a fraction), seeded at random per table so
/// that traffic cannot aim collisions at it (and a table holds at most
/// its bound of keys, so even collisions cost a bounded probe).
#[derive(Clone, Debug)]
struct KeyHash(u64);

impl KeyHash {
    fn new() -> KeyHash {
        KeyHash(std::collections::hash_map::RandomState::new().hash_one(0x9e37_79b9_u64))
    }
}

impl BuildHasher for KeyHash {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(self.0)
    }
}

/// See [`KeyHash`].
struct KeyHasher(u64);

impl KeyHasher {
    const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

    #[inline]
    fn add(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(Self::K);
    }
}

impl Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(b));
        }
    }
    #[inline]
    fn write_u8(&mut self, x: u8) {
        self.add(x as u64);
    }
    #[inline]
    fn write_u16(&mut self, x: u16) {
        self.add(x as u64);
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.add(x as u64);
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.add(x);
    }
    #[inline]
    fn write_usize(&mut self, x: usize) {
        self.add(x as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // Spread the high bits' entropy to the low ones (the table's index).
        let h = (self.0 ^ (self.0 >> 32)).wrapping_mul(Self::K);
        h ^ (h >> 29)
    }
}

/// What a [`FlowTable`] counted over one interval.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowSample {
    /// The flows with rows of their own that counted anything.
    pub flows: Vec<(FlowKey, FlowBucket)>,
    /// The sum of the flows beyond the bound.
    pub other: FlowBucket,
    /// How many distinct flows were summed into `other` so far (the whole
    /// run; at most [`MAX_OTHERS_COUNTED`]).
    pub other_flows: u64,
}

impl FlowTable {
    /// A table with rows for at most `bound` flows.
    pub fn new(bound: usize) -> FlowTable {
        FlowTable {
            bound,
            flows: HashMap::with_capacity_and_hasher(bound.min(DEFAULT_FLOWS), KeyHash::new()),
            other: FlowBucket::default(),
            others: HashSet::with_hasher(KeyHash::new()),
        }
    }

    /// The bucket of flow `key`: its own, or `other`.
    #[inline]
    pub fn bucket(&mut self, key: &FlowKey) -> &mut FlowBucket {
        if self.flows.len() < self.bound || self.flows.contains_key(key) {
            return self.flows.entry(*key).or_default();
        }
        if self.others.len() < MAX_OTHERS_COUNTED {
            self.others.insert(*key);
        }
        &mut self.other
    }

    /// A drop of a packet of `key` for `r`.
    #[inline]
    pub fn dropped(&mut self, key: &FlowKey, r: Reason) {
        self.bucket(key).drops.count(r);
    }

    /// The counts since the last call, leaving every bucket empty (flows
    /// keep their rows).
    pub fn take(&mut self) -> FlowSample {
        let mut flows: Vec<(FlowKey, FlowBucket)> = self
            .flows
            .iter_mut()
            .filter(|(_, b)| !b.is_empty())
            .map(|(k, b)| (*k, std::mem::take(b)))
            .collect();
        flows.sort_by_key(|f| f.0);
        FlowSample {
            flows,
            other: std::mem::take(&mut self.other),
            other_flows: self.others.len() as u64,
        }
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

    fn udp(sport: u16) -> FlowKey {
        FlowKey {
            proto: 17,
            src: "10.0.0.1".parse().expect("addr"),
            dst: "10.0.0.2".parse().expect("addr"),
            sport,
            dport: 7790,
        }
    }

    /// A pass proves a flow table with room for N flows gives the first N
    /// rows of their own for the whole run and sums flow N+1 (and any
    /// later one) into `other`, counting each distinct flow there once;
    /// that a take empties the buckets but keeps the rows; and that drops
    /// are counted by reason.
    #[test]
    fn a_flow_table_is_bounded() {
        let mut t = FlowTable::new(2);
        t.bucket(&udp(1)).sent(100);
        t.bucket(&udp(2)).sent(200);
        t.bucket(&udp(3)).sent(300);
        t.bucket(&udp(3)).delivered(300, 2_000_000);
        t.bucket(&udp(4)).sent(400);
        t.dropped(&udp(4), Reason::Queue);
        t.bucket(&udp(1)).delivered(100, 1_000_000);
        t.bucket(&udp(1)).delivered(100, 3_000_000);
        t.dropped(&udp(2), Reason::Aqm);
        let s = t.take();
        assert_eq!(
            s.flows.iter().map(|f| f.0.sport).collect::<Vec<_>>(),
            vec![1, 2]
        );
        let f1 = s.flows[0].1.interval(0.0, 100_000_000);
        assert_eq!((f1.sent, f1.received, f1.received_bytes), (1, 2, 200));
        assert_eq!(f1.delivered_bps, 16_000.0);
        assert_eq!(
            f1.delay_ms,
            Some(IntervalDelay {
                min: 1.0,
                mean: 2.0,
                max: 3.0
            })
        );
        assert_eq!(s.flows[1].1.drops.aqm, 1);
        assert_eq!((s.other.sent, s.other.sent_bytes), (2, 700));
        assert_eq!((s.other.received, s.other.drops.queue), (1, 1));
        assert_eq!(s.other_flows, 2);
        // The next interval: flow 1 keeps its row, a fifth flow is other.
        t.bucket(&udp(5)).sent(10);
        t.bucket(&udp(2)).sent(20);
        let s = t.take();
        assert_eq!(s.flows.len(), 1);
        assert_eq!((s.flows[0].0.sport, s.flows[0].1.sent), (2, 1));
        assert_eq!((s.other.sent, s.other_flows), (1, 3));
        assert_eq!(
            t.take(),
            FlowSample {
                flows: vec![],
                other: FlowBucket::default(),
                other_flows: 3
            }
        );
    }

    /// A pass proves a flow's name is its 5-tuple as people write it, and
    /// its CSV row has the header's columns, a missing delay as empty
    /// fields and the drops' total before them by reason.
    #[test]
    fn a_flow_is_named_and_written() {
        assert_eq!(flow_name(&udp(5000)), "udp 10.0.0.1:5000 > 10.0.0.2:7790");
        let v6 = FlowKey {
            proto: 6,
            src: "fd00::1".parse().expect("addr"),
            dst: "fd00::2".parse().expect("addr"),
            sport: 1,
            dport: 2,
        };
        assert_eq!(flow_name(&v6), "tcp [fd00::1]:1 > [fd00::2]:2");
        let icmp = FlowKey { proto: 1, ..udp(0) };
        assert_eq!(flow_name(&icmp), "icmp 10.0.0.1 > 10.0.0.2");
        assert_eq!(flow_name(&FlowKey::default()), "non-ip");
        let mut b = FlowBucket::default();
        b.sent(1000);
        b.drops.count(Reason::Loss);
        b.drops.count(Reason::NoRoute);
        let row = b.interval(0.5, 1_000_000_000).csv_row("udp a > b");
        assert_eq!(
            row,
            "0.5,udp a > b,8000,0,1,1000,0,0,,,,2,0,0,1,0,1,0,0,0,0,0"
        );
        assert_eq!(
            row.split(',').count(),
            FlowInterval::CSV_HEADER.split(',').count()
        );
        assert!(b.interval(0.0, 1).csv_row("x,y").contains(",\"x,y\","));
    }
}
