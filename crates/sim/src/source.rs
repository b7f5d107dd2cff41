//! Synthetic traffic sources: when each packet is sent.
//!
//! * `cbr`: packet `k` at `start + ⌊k·I⌋`, `I` the exact interval as a
//!   fraction of nanoseconds (no drift over any duration).
//! * `poisson`: exponential gaps of mean `I` (inverse-transform sampling of
//!   the source's own seeded generator).
//! * `onoff`: CBR during on periods, silence during off periods; periods
//!   fixed or exponentially distributed. The first on period starts at
//!   `start`.
//!
//! A source stops at `start + duration` (exclusive).

use pipelab_engine::rng::StageRng;
use pipelab_engine::Instant;
use pipelab_lang::{Pattern, Period, TrafficSpec};
use rand::Rng;

/// A traffic source: an iterator of send instants.
#[derive(Debug)]
pub struct Source {
    /// Interval numerator and denominator, in ns.
    num: u128,
    den: u128,
    start: u64,
    end: u64,
    kind: Kind,
    rng: StageRng,
}

#[derive(Debug)]
enum Kind {
    Cbr {
        k: u128,
    },
    Poisson {
        t: f64,
        /// The mean interval, `num / den` (ns).
        mean: f64,
    },
    OnOff {
        on: Period,
        off: Period,
        /// Start and end of the current on period; packets counted from its start.
        period_start: u64,
        period_end: u64,
        k: u128,
    },
}

fn period_len(p: Period, rng: &mut StageRng) -> u64 {
    match p {
        Period::Fixed(d) => d.as_nanos(),
        Period::Exp(d) => {
            let u: f64 = rng.gen::<f64>();
            // -ln(1-u) is Exp(1); 1-u is in (0, 1].
            (-(1.0 - u).ln() * d.as_nanos() as f64).round() as u64
        }
    }
}

impl Source {
    /// A source for `spec`, drawing from `rng` where it is random.
    pub fn new(spec: &TrafficSpec, mut rng: StageRng) -> Source {
        let (num, den) = spec.interval();
        let start = spec.start.map(|d| d.as_nanos()).unwrap_or(0);
        let end = start.saturating_add(spec.duration.as_nanos());
        let kind = match spec.pattern {
            Pattern::Cbr => Kind::Cbr { k: 0 },
            Pattern::Poisson => Kind::Poisson {
                t: start as f64,
                mean: num as f64 / den.max(1) as f64,
            },
            Pattern::OnOff { on, off } => {
                let len = period_len(on, &mut rng);
                Kind::OnOff {
                    on,
                    off,
                    period_start: start,
                    period_end: start.saturating_add(len),
                    k: 0,
                }
            }
        };
        Source {
            num,
            den: den.max(1),
            start,
            end,
            kind,
            rng,
        }
    }
}

impl Iterator for Source {
    type Item = Instant;

    fn next(&mut self) -> Option<Instant> {
        let t = match &mut self.kind {
            Kind::Cbr { k } => {
                let t = self.start as u128 + *k * self.num / self.den;
                *k += 1;
                t
            }
            Kind::Poisson { t, mean } => {
                let u: f64 = self.rng.gen::<f64>();
                let now = *t;
                *t += -(1.0 - u).ln() * *mean;
                // The first packet is sent at `start`, then exponential
                // gaps (an instant past `u64::MAX` is past the end).
                now.round() as u64 as u128
            }
            Kind::OnOff {
                on,
                off,
                period_start,
                period_end,
                k,
            } => loop {
                let t = *period_start as u128 + *k * self.num / self.den;
                if t < *period_end as u128 {
                    *k += 1;
                    break t;
                }
                if *period_end >= self.end {
                    return None;
                }
                let gap = period_len(*off, &mut self.rng);
                let len = period_len(*on, &mut self.rng).max(1);
                *period_start = period_end.saturating_add(gap);
                *period_end = period_start.saturating_add(len);
                *k = 0;
            },
        };
        (t < self.end as u128).then_some(Instant(t as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipelab_engine::rng::rng_from_seed;
    use pipelab_lang::parse_traffic;

    fn times(spec: &str) -> Vec<u64> {
        let s = parse_traffic(spec).expect("spec");
        Source::new(&s, rng_from_seed(7)).map(|t| t.0).collect()
    }

    #[test]
    fn cbr_in_packets_per_second_is_exact() {
        let t = times("cbr rate 1000pps size 100B duration 1s");
        assert_eq!(t.len(), 1000);
        assert!(t
            .iter()
            .enumerate()
            .all(|(k, &x)| x == k as u64 * 1_000_000));
    }

    #[test]
    fn cbr_in_bits_per_second_has_no_drift() {
        // 1500 B at 7 Mbit/s: 12000/7 us per packet, not a whole number.
        let t = times("cbr rate 7Mbit/s size 1500B duration 12s start 1s");
        assert_eq!(t.len(), 7000);
        assert_eq!(t[0], 1_000_000_000);
        assert_eq!(t[6999], 1_000_000_000 + 6999 * 12_000_000_000 / 7000);
    }

    #[test]
    fn poisson_mean_rate_is_right() {
        let t = times("poisson rate 800pps size 500B duration 100s");
        let n = t.len() as f64;
        // Poisson count: mean 80000, sigma ~283.
        assert!((n - 80_000.0).abs() < 3.0 * 80_000f64.sqrt(), "{n}");
        assert!(t.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn onoff_sends_only_during_on_periods() {
        let t = times("onoff rate 1000pps size 100B on 1s off 2s duration 10s");
        // On during [0,1), [3,4), [6,7), [9,10): 4 periods of 1000 packets.
        assert_eq!(t.len(), 4000);
        assert!(t.iter().all(|&x| (x / 1_000_000_000) % 3 == 0));
    }
}
