//! Trace-driven link capacity: Mahimahi's delivery-opportunity traces
//! (`mm-link UPLINK_TRACE DOWNLINK_TRACE`).
//!
//! Sources: Netravali et al., "Mahimahi: Accurate Record-and-Replay for
//! HTTP" (USENIX ATC 2015) §3; Mahimahi `src/frontend/link_queue.cc`
//! (`LinkQueue::LinkQueue`, `rationalize`, `use_a_delivery_opportunity`).
//!
//! # The trace ([`BwTrace::new`])
//! One offset per *delivery opportunity*, from the start of the link (a
//! Mahimahi trace file has one per line, an integer number of
//! milliseconds). Offsets must be non-decreasing; a repeated offset is
//! several opportunities at the same instant. The trace loops forever with
//! period `P` = the last offset, so opportunity `j` (counting from 0 over
//! all loops, `n` offsets) happens at `start + ⌊j/n⌋·P + s[j mod n]`. An
//! empty trace, a decreasing offset, or a last offset of 0 (`P = 0`) is an
//! error, as in Mahimahi. Units: [`Instant`]/[`Duration`] (ns), sizes in
//! bytes.
//!
//! A trace file (`bw trace:PATH`) is text: `crates/lang` reads it
//! (`files::parse_bw_trace`, a bare number being milliseconds as in
//! Mahimahi; it also skips blank lines and `#` comments, and takes a unit,
//! `2500us`) and builds the trace with [`BwTrace::new`].
//!
//! # How a packet uses opportunities (Mahimahi's rule, exactly)
//! Each opportunity can carry `B` bytes ([`DEFAULT_OPPORTUNITY_BYTES`] =
//! 1500, an MTU). Packets are served in FIFO order, byte by byte:
//! * A packet of `L` bytes at the head of the queue takes bytes from
//!   successive opportunities until it has `L`; it *finishes* (leaves the
//!   link) at the time of the opportunity that supplies its last byte. A
//!   packet larger than `B` therefore spans `⌈L/B⌉` opportunities (fewer if
//!   it starts in a partly used one).
//! * The bytes an opportunity has left after a packet finishes go to the
//!   next packet **if that packet is already waiting** at that time (its
//!   arrival `≤` the opportunity's time); several small packets can share
//!   one opportunity.
//! * Otherwise the leftover bytes are **wasted**, as are opportunities that
//!   pass while the queue is empty. Capacity never accumulates.
//! * A packet that starts waiting at `t` can use an opportunity at `t`
//!   itself (pipelab's time is in ns, so "at the same instant" is exact;
//!   Mahimahi, in whole ms, burns the opportunities of the current
//!   millisecond before it enqueues the arriving packet).
//!
//! A link server calls [`TraceLink::transmit`]`(start, L)` when the packet
//! reaches the head of the queue at `start` (its arrival, or the previous
//! packet's finish if it was waiting) and gets its finish time. With `start`
//! equal to the previous finish time, the leftover of that opportunity is
//! used; with a later `start`, it is wasted.
//!
//! Mahimahi's own `B` is 1504 because it counts the 4-byte TUN packet-info
//! header in every packet; pipelab counts IP bytes, so `B` = 1500 gives the
//! same result for MTU-sized packets. To reproduce Mahimahi byte for byte,
//! use `B` = 1504 and charge 4 bytes per packet (`accounting.rs`, netem
//! overhead 4).
//!
//! What this module does not do: queue packets, or stop at the end of the
//! trace (Mahimahi's default is to loop, which is the only mode here).

use core::fmt;

use crate::models::ModelError;
use crate::time::{Duration, Instant, Rate, NS_PER_SEC};

const WHAT: &str = "bandwidth trace";

/// Bytes one delivery opportunity carries by default (an Ethernet MTU).
pub const DEFAULT_OPPORTUNITY_BYTES: u32 = 1500;

/// A validated delivery-opportunity trace. Immutable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BwTrace {
    /// Opportunity offsets within one period, ns, non-decreasing; the last
    /// equals `period_ns`.
    offsets_ns: Vec<u64>,
    /// The loop period (the last timestamp), ns, positive.
    period_ns: u64,
    /// Bytes per opportunity, positive.
    opportunity_bytes: u32,
}

impl BwTrace {
    /// The trace of the delivery opportunities at `offsets` from the start
    /// of the link, in order (Mahimahi's timestamps): at least one, never
    /// decreasing, the last (the loop period) positive. An error names the
    /// offending offset's index.
    pub fn new(offsets: impl IntoIterator<Item = Duration>) -> Result<BwTrace, ModelError> {
        let mut offsets_ns: Vec<u64> = Vec::new();
        for (i, d) in offsets.into_iter().enumerate() {
            let ns = d.as_nanos();
            if let Some(&last) = offsets_ns.last() {
                if ns < last {
                    return Err(ModelError::at(
                        WHAT,
                        i,
                        format!(
                            "timestamps must be non-decreasing: {} after {}",
                            Duration(ns),
                            Duration(last)
                        ),
                    ));
                }
            }
            offsets_ns.push(ns);
        }
        let Some(&period_ns) = offsets_ns.last() else {
            return Err(ModelError::new(WHAT, "no timestamps found"));
        };
        if period_ns == 0 {
            return Err(ModelError::new(
                WHAT,
                "the trace must last a nonzero time (its last timestamp is 0)",
            ));
        }
        Ok(BwTrace {
            offsets_ns,
            period_ns,
            opportunity_bytes: DEFAULT_OPPORTUNITY_BYTES,
        })
    }

    /// The opportunities' offsets from the start of the link, within one
    /// period, in order.
    pub fn offsets(&self) -> impl Iterator<Item = Duration> + '_ {
        self.offsets_ns.iter().map(|&ns| Duration(ns))
    }

    /// The same trace with `bytes` per opportunity (Mahimahi: 1504).
    pub fn with_opportunity_bytes(mut self, bytes: u32) -> Result<BwTrace, ModelError> {
        if bytes == 0 {
            return Err(ModelError::new(
                WHAT,
                "an opportunity must carry at least one byte",
            ));
        }
        self.opportunity_bytes = bytes;
        Ok(self)
    }

    /// Bytes one opportunity carries.
    pub fn opportunity_bytes(&self) -> u32 {
        self.opportunity_bytes
    }

    /// The loop period (the last timestamp).
    pub fn period(&self) -> Duration {
        Duration(self.period_ns)
    }

    /// Opportunities per period (lines of the trace).
    pub fn opportunities_per_period(&self) -> usize {
        self.offsets_ns.len()
    }

    /// Long-run capacity: `n·B·8 / P` bits/s (rounded down).
    pub fn mean_rate(&self) -> Rate {
        let bits = self.offsets_ns.len() as u128 * self.opportunity_bytes as u128 * 8;
        let bps = bits * NS_PER_SEC as u128 / self.period_ns as u128;
        Rate::from_bps(bps.min(u64::MAX as u128) as u64)
    }

    /// Offset from the link start of absolute opportunity `j` (saturating).
    fn offset_of(&self, j: u64) -> u64 {
        let n = self.offsets_ns.len() as u64;
        let cycle = (j / n) as u128 * self.period_ns as u128;
        let t = cycle + self.offsets_ns[(j % n) as usize] as u128;
        t.min(u64::MAX as u128) as u64
    }

    /// The first absolute opportunity whose offset is `≥ t` (ns since start).
    fn first_at_or_after(&self, t: u64) -> u64 {
        let n = self.offsets_ns.len() as u64;
        let c = t / self.period_ns;
        // The last opportunity of cycle c−1 is at c·P, which may be ≥ t.
        for cycle in [c.saturating_sub(1), c] {
            let base = cycle as u128 * self.period_ns as u128;
            let i = self
                .offsets_ns
                .partition_point(|&s| base + (s as u128) < t as u128);
            if i < self.offsets_ns.len() {
                return cycle.saturating_mul(n).saturating_add(i as u64);
            }
        }
        // Unreachable for t < (c+1)·P; saturate rather than panic.
        u64::MAX
    }
}

impl fmt::Display for BwTrace {
    /// The trace in Mahimahi's format (one ms timestamp per line); an
    /// offset that is not a whole millisecond is written with its unit
    /// (`2500us`), as pipelab reads it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for &ns in &self.offsets_ns {
            if ns.is_multiple_of(1_000_000) {
                writeln!(f, "{}", ns / 1_000_000)?;
            } else {
                writeln!(f, "{}", Duration(ns))?;
            }
        }
        Ok(())
    }
}

/// A link served by a [`BwTrace`]: the cursor over its opportunities.
#[derive(Clone, Debug)]
pub struct TraceLink {
    trace: BwTrace,
    /// Time of opportunity 0 (the link's start).
    start: Instant,
    /// The next opportunity never used (absolute index).
    next: u64,
    /// The last used opportunity's time and its unused bytes (> 0), which
    /// a packet waiting at that time may still take.
    partial: Option<(Instant, u32)>,
}

impl TraceLink {
    /// A link whose trace starts (opportunity offsets count from) `start`.
    pub fn new(trace: BwTrace, start: Instant) -> TraceLink {
        TraceLink {
            trace,
            start,
            next: 0,
            partial: None,
        }
    }

    /// The trace in use.
    pub fn trace(&self) -> &BwTrace {
        &self.trace
    }

    /// Bytes one opportunity carries.
    pub fn opportunity_bytes(&self) -> u32 {
        self.trace.opportunity_bytes
    }

    fn time_of(&self, j: u64) -> Instant {
        self.start.saturating_add(Duration(self.trace.offset_of(j)))
    }

    /// The earliest opportunity a packet that starts waiting at
    /// `at_or_after` can use: the partly used one if it is at or after that
    /// time, else the first unused one at or after it. Opportunities before
    /// `at_or_after` are skipped (wasted). Does not consume anything.
    pub fn next_opportunity(&mut self, at_or_after: Instant) -> Instant {
        if let Some((t, _)) = self.partial {
            if t >= at_or_after {
                return t;
            }
            self.partial = None;
        }
        self.skip_to(at_or_after);
        self.time_of(self.next)
    }

    /// Moves `next` to the first opportunity at or after `t`.
    fn skip_to(&mut self, t: Instant) {
        let rel = t.saturating_since(self.start).0;
        self.next = self.next.max(self.trace.first_at_or_after(rel));
    }

    /// Transmits a packet of `bytes` that reaches the head of the queue at
    /// `start`; returns when it finishes (the time of the opportunity that
    /// carries its last byte). Calls must come in FIFO order with
    /// non-decreasing `start`. A 0-byte packet still needs an opportunity
    /// to leave by, as in Mahimahi.
    pub fn transmit(&mut self, start: Instant, bytes: u64) -> Instant {
        let mut need = bytes;
        if let Some((t, left)) = self.partial.take() {
            if t >= start {
                if need <= left as u64 {
                    let rest = left - need as u32;
                    self.partial = (rest > 0).then_some((t, rest));
                    return t;
                }
                need -= left as u64;
            }
        }
        self.skip_to(start);
        let b = self.trace.opportunity_bytes as u64;
        // ⌈need/b⌉ opportunities, at least one.
        let k = need.div_ceil(b).max(1);
        let last = self.next.saturating_add(k - 1);
        let finish = self.time_of(last);
        self.next = last.saturating_add(1);
        // Unused bytes of the last opportunity: `k·b − need`, without overflow.
        let rest = match need % b {
            0 if need > 0 => 0,
            r => b - r,
        };
        self.partial = (rest > 0).then_some((finish, rest.min(u32::MAX as u64) as u32));
        finish
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The trace of offsets `ms` (milliseconds).
    fn trace(ms: &[u64]) -> BwTrace {
        match BwTrace::new(ms.iter().map(|&m| Duration::from_millis(m))) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    /// A saturated link: every packet waits, so each starts at the previous
    /// finish. Returns the finish times.
    fn saturate(link: &mut TraceLink, sizes: impl IntoIterator<Item = u64>) -> Vec<Instant> {
        let mut t = Instant::ZERO;
        sizes
            .into_iter()
            .map(|len| {
                t = link.transmit(t, len);
                t
            })
            .collect()
    }

    /// Pass proves: opportunities at 1, 1, 2, 3 ms looping with period 3 ms
    /// deliver exactly 4 MTU packets per 3 ms, at the trace's times.
    #[test]
    fn four_mtu_packets_per_period() {
        let tr = trace(&[1, 1, 2, 3]);
        assert_eq!(tr.period(), Duration::from_millis(3));
        let mut link = TraceLink::new(tr, Instant::ZERO);
        let done = saturate(&mut link, (0..400).map(|_| 1500));
        let ms = |m: u64| Instant(m * 1_000_000);
        assert_eq!(
            &done[..8],
            &[ms(1), ms(1), ms(2), ms(3), ms(4), ms(4), ms(5), ms(6)]
        );
        for period in 0..100u64 {
            let in_period = done
                .iter()
                .filter(|&&t| t > ms(3 * period) && t <= ms(3 * period + 3))
                .count();
            assert_eq!(in_period, 4, "period {period}");
        }
    }

    /// Pass proves: one opportunity per ms carries exactly 12 Mbit/s of
    /// 1500-byte packets (and mean_rate says so).
    #[test]
    fn one_per_ms_is_12_mbit() {
        let tr = trace(&[1]);
        assert_eq!(tr.mean_rate(), Rate::from_bps(12_000_000));
        let mut link = TraceLink::new(tr, Instant::ZERO);
        let n = 10_000u64;
        let done = saturate(&mut link, (0..n).map(|_| 1500));
        let secs = done[done.len() - 1].0 as f64 / 1e9;
        assert_eq!(done[done.len() - 1], Instant(n * 1_000_000));
        assert_eq!((n * 1500 * 8) as f64 / secs, 12e6);
    }

    /// Pass proves: Mahimahi's byte rule: a big packet spans several
    /// opportunities, small waiting packets share one, leftovers are wasted
    /// when nobody waits, and opportunities before `start` are skipped.
    #[test]
    fn packets_use_opportunities_bytewise() {
        let ms = |m: u64| Instant(m * 1_000_000);
        let mut link = TraceLink::new(trace(&[1]), ms(0));
        // 4000 B needs 3 opportunities: 1, 2, 3 ms; 500 B left at 3 ms.
        assert_eq!(link.transmit(ms(0), 4000), ms(3));
        // A 300 B packet waiting since before 3 ms leaves at 3 ms too.
        assert_eq!(link.transmit(ms(3), 300), ms(3));
        // 200 B left at 3 ms, but this packet arrives at 3.5 ms: wasted.
        assert_eq!(link.next_opportunity(Instant(3_500_000)), ms(4));
        assert_eq!(link.transmit(Instant(3_500_000), 100), ms(4));
        // Idle until 10.2 ms: opportunities 5..=10 ms are wasted.
        assert_eq!(link.transmit(Instant(10_200_000), 1500), ms(11));
        // A packet starting exactly at an opportunity can use it.
        assert_eq!(link.transmit(ms(20), 1), ms(20));
        assert_eq!(link.transmit(ms(20), 1499), ms(20));
        assert_eq!(link.transmit(ms(20), 0), ms(21));
    }

    /// Pass proves: looping works from any start, including a trace with an
    /// opportunity at 0 (two opportunities at each period boundary) and a
    /// link started late.
    #[test]
    fn loops_and_offsets() {
        let ms = |m: u64| Instant(m * 1_000_000);
        let mut link = TraceLink::new(trace(&[0, 2]), ms(100));
        assert_eq!(link.next_opportunity(ms(0)), ms(100));
        let done = saturate(&mut link, (0..6).map(|_| 1500));
        // Times relative to 100 ms: 0, 2, 2, 4, 4, 6.
        assert_eq!(
            done,
            vec![ms(100), ms(102), ms(102), ms(104), ms(104), ms(106)]
        );
        assert_eq!(link.next_opportunity(ms(1_000_001)), ms(1_000_002));
        // Far in the future: no overflow panics.
        let _ = link.transmit(Instant(u64::MAX - 5), u64::MAX);
        let _ = link.next_opportunity(Instant::MAX);
    }

    /// Pass proves: empty, decreasing and zero-period traces are rejected
    /// (naming the offending offset), offsets that are not whole
    /// milliseconds print with their unit, and any trace serves without
    /// panicking.
    #[test]
    fn invalid_traces_and_odd_offsets() {
        let new = |ns: &[u64]| BwTrace::new(ns.iter().map(|&n| Duration(n))).map_err(|e| e.index);
        assert_eq!(new(&[]), Err(None));
        assert_eq!(new(&[0, 0]), Err(None));
        assert_eq!(new(&[1, 3, 2]), Err(Some(2)));
        assert!(trace(&[5]).with_opportunity_bytes(0).is_err());
        let fine = BwTrace::new([Duration(1_000_000), Duration(2_500_000)]);
        assert_eq!(fine.map(|t| t.to_string()), Ok("1\n2500us\n".to_string()));
        let mut x: u64 = 7;
        for _ in 0..2000 {
            let mut offsets = Vec::new();
            let mut t = 0u64;
            for _ in 0..(x % 6) {
                x = crate::rng::mix64(x);
                t += x % 3_000_000;
                offsets.push(Duration(t));
            }
            if let Ok(tr) = BwTrace::new(offsets) {
                let mut link = TraceLink::new(tr, Instant::ZERO);
                let _ = link.transmit(Instant(x % 1_000_000_000), x % 5000);
            }
        }
    }
}
