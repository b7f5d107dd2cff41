//! A runner's lateness as another thread can read it while the run goes
//! on: counters the runner's thread alone writes, read as differences
//! over a window by a watcher (see `pipelab_modes::precision`).
//!
//! The runner's own HDR histogram ([`crate::runner::Runner::lateness`])
//! holds the whole run's distribution, on the runner's thread. A watcher
//! needs the last second's, from its own thread, without a lock on the
//! packet path: so each departure also counts here, once in `departures`
//! and once in each step of [`LATE_STEPS_NS`] it exceeds (a plain load
//! and store: one writer), and the worst lateness since the watcher last
//! looked is kept with `fetch_max` (only for a departure beyond the first
//! step, which is rare when all is well). A window's p99 exceeds a step
//! when more than 1 % of its departures exceeded it.

use std::sync::atomic::{AtomicU64, Ordering};

/// The steps lateness is counted against, ns: 100 µs, 250 µs, 1 ms, 10 ms.
pub const LATE_STEPS_NS: [u64; 4] = [100_000, 250_000, 1_000_000, 10_000_000];

/// Counters of one runner's departures and their lateness.
#[derive(Debug, Default)]
pub struct LateMeter {
    departures: AtomicU64,
    over: [AtomicU64; LATE_STEPS_NS.len()],
    worst: AtomicU64,
    /// The runner thread's id (`gettid`), for its CPU time; 0 until set.
    tid: AtomicU64,
}

/// What a [`LateMeter`] counted, read at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LateCounts {
    /// Departures.
    pub departures: u64,
    /// Departures later than each step of [`LATE_STEPS_NS`].
    pub over: [u64; LATE_STEPS_NS.len()],
}

impl LateCounts {
    /// The counts from `earlier` to `self`.
    pub fn since(&self, earlier: &LateCounts) -> LateCounts {
        let mut over = [0; LATE_STEPS_NS.len()];
        for (i, o) in over.iter_mut().enumerate() {
            *o = self.over[i].saturating_sub(earlier.over[i]);
        }
        LateCounts {
            departures: self.departures.saturating_sub(earlier.departures),
            over,
        }
    }

    /// Add `other`'s counts.
    pub fn add(&mut self, other: &LateCounts) {
        self.departures += other.departures;
        for (o, x) in self.over.iter_mut().zip(other.over) {
            *o += x;
        }
    }

    /// The largest step that more than `fraction` of the departures
    /// exceeded (ns): a lower bound of that quantile of lateness, or
    /// `None` if no step was exceeded that often.
    pub fn quantile_over(&self, fraction: f64) -> Option<u64> {
        if self.departures == 0 {
            return None;
        }
        let n = self.departures as f64;
        LATE_STEPS_NS
            .iter()
            .zip(self.over)
            .rev()
            .find(|(_, o)| *o as f64 > fraction * n)
            .map(|(s, _)| *s)
    }
}

impl LateMeter {
    /// Count one departure `late_ns` after its emulated time. Called by
    /// the runner's thread only.
    #[inline]
    pub fn record(&self, late_ns: u64) {
        let d = self.departures.load(Ordering::Relaxed);
        self.departures.store(d + 1, Ordering::Relaxed);
        if late_ns > LATE_STEPS_NS[0] {
            self.record_late(late_ns);
        }
    }

    #[cold]
    fn record_late(&self, late_ns: u64) {
        for (i, step) in LATE_STEPS_NS.iter().enumerate() {
            if late_ns > *step {
                let o = self.over[i].load(Ordering::Relaxed);
                self.over[i].store(o + 1, Ordering::Relaxed);
            }
        }
        self.worst.fetch_max(late_ns, Ordering::Relaxed);
    }

    /// The counts so far.
    pub fn counts(&self) -> LateCounts {
        let mut over = [0; LATE_STEPS_NS.len()];
        for (i, o) in over.iter_mut().enumerate() {
            *o = self.over[i].load(Ordering::Relaxed);
        }
        LateCounts {
            departures: self.departures.load(Ordering::Relaxed),
            over,
        }
    }

    /// The worst lateness (ns) beyond the first step since the last
    /// call, and start again.
    pub fn take_worst(&self) -> u64 {
        self.worst.swap(0, Ordering::Relaxed)
    }

    /// Say which thread runs the runner (the calling one).
    pub fn set_thread(&self) {
        self.tid
            .store(nix::unistd::gettid().as_raw() as u64, Ordering::Relaxed);
    }

    /// The runner thread's id, if it said.
    pub fn thread(&self) -> Option<u64> {
        Some(self.tid.load(Ordering::Relaxed)).filter(|&t| t != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves departures are counted against each step they
    /// exceed, the worst is kept and reset when taken, and a window's
    /// quantile bound is the largest step more than the fraction exceeded.
    #[test]
    fn counts_steps_and_quantile_bounds() {
        let m = LateMeter::default();
        for _ in 0..97 {
            m.record(20_000);
        }
        m.record(300_000);
        m.record(2_000_000);
        m.record(2_500_000);
        let c = m.counts();
        assert_eq!(c.departures, 100);
        assert_eq!(c.over, [3, 3, 2, 0]);
        assert_eq!(m.take_worst(), 2_500_000);
        assert_eq!(m.take_worst(), 0);
        // 3 % over 250 µs, 2 % over 1 ms: p99 is beyond 1 ms.
        assert_eq!(c.quantile_over(0.01), Some(1_000_000));
        // p97.5: beyond 100 µs... 3 % exceed 250 µs too.
        assert_eq!(c.quantile_over(0.025), Some(250_000));
        assert_eq!(c.quantile_over(0.05), None);
        let later = {
            m.record(50_000);
            m.counts()
        };
        let w = later.since(&c);
        assert_eq!(w.departures, 1);
        assert_eq!(w.over, [0; 4]);
        assert_eq!(LateCounts::default().quantile_over(0.01), None);
    }
}
