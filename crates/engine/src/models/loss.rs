//! Loss models: one `lose?` decision per packet.
//!
//! Sources: Linux `net/sched/sch_netem.c` (`loss_event`, `loss_gilb_ell`,
//! `loss_4state`), iproute2 `tc/q_netem.c` (parameter defaults and scaling),
//! tc-netem(8), and S. Salsano, F. Ludovici, A. Ordine, "Definition of a
//! general and intuitive loss model for packet networks and its
//! implementation in the Netem module in the Linux kernel" (NetemCLG, the
//! 4-state "GI" model). Trace-driven loss follows KauNet's packet- and
//! time-driven patterns (dummynet-revisited §2: "causes packet drops,
//! following some computed pattern or using a trace from an external source").
//!
//! * [`UniformLoss`] — `loss P [CORR]`: netem's `P >= get_crandom()`; with a
//!   correlation this inherits netem's known flaw (see [`CorrelatedRandom`]):
//!   the loss rate falls below `P`, to about 0.18 % for `loss 5% 25%`.
//! * [`GilbertElliott`] — `loss gemodel p [r [1-h [1-k]]]`: two states,
//!   Good and Bad. Per packet, exactly as `loss_gilb_ell`: first a draw
//!   decides the transition (Good→Bad with `p`, Bad→Good with `r`), then a
//!   second draw decides the loss with the loss probability of the state the
//!   packet *started* in (`1-k` in Good, `1-h` in Bad). The chain starts in
//!   Good. iproute2's defaults: `r = 1 − p`, `1-h = 1`, `1-k = 0`. Special
//!   cases: Bernoulli (`r = 1 − p`, `1-h = 1`, `1-k = 0`), simple Gilbert
//!   (`1-h = 1`, `1-k = 0`), Gilbert (`1-k = 0`).
//! * [`FourState`] — `loss state p13 [p31 [p32 [p23 [p14]]]]`: the GI
//!   model's states, numbered as in Salsano et al. and tc-netem(8):
//!   1 = packet received in a gap period, 2 = received in a burst period,
//!   3 = lost in a burst period, 4 = isolated loss in a gap period.
//!   Transitions 1→3 `p13`, 1→4 `p14`, 1→1 otherwise; 2→3 `p23`, 2→2
//!   otherwise; 3→1 `p31`, 3→2 `p32`, 3→3 otherwise; 4→1 always. A packet is
//!   lost when the chain *enters* state 3 or 4 (one draw per packet, as
//!   `loss_4state`). The chain starts in state 1. iproute2's defaults:
//!   `p31 = 1 − p13`, `p32 = 0`, `p23 = 1`, `p14 = 0`. (The kernel's enum
//!   names `LOST_IN_GAP_PERIOD = 3`, `LOST_IN_BURST_PERIOD = 4` are swapped
//!   relative to these numbers; its transitions are the ones above.)
//! * [`TraceLoss`] — a deterministic list of packets and time intervals to
//!   drop ([`TraceEntry`]); `crates/lang` reads a loss trace file
//!   (`files::parse_loss_trace`) and builds one with [`TraceLoss::new`].
//!
//! Analytical helpers ([`GilbertElliott::stationary_loss`],
//! [`FourState::stationary_loss`], `mean_loss_run`) give the long-run loss
//! rate and the mean length of a run of consecutive losses.

use core::fmt;

use rand::RngCore;

use crate::models::{CorrelatedRandom, ModelError, Probability};
use crate::rng::StageRng;
use crate::time::{Duration, Instant};

/// `loss P [CORR]`: independent (or netem-correlated) losses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UniformLoss {
    /// Loss probability.
    pub p: Probability,
    /// netem correlation with the previous draw.
    pub correlation: Probability,
}

impl UniformLoss {
    /// `loss p correlation`.
    pub fn new(p: Probability, correlation: Probability) -> UniformLoss {
        UniformLoss { p, correlation }
    }
}

/// `loss gemodel p r 1-h 1-k`: the Gilbert-Elliott two-state model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GilbertElliott {
    /// Good → Bad transition probability.
    pub p: Probability,
    /// Bad → Good transition probability.
    pub r: Probability,
    /// Loss probability in the Bad state (`1-h`).
    pub one_minus_h: Probability,
    /// Loss probability in the Good state (`1-k`).
    pub one_minus_k: Probability,
}

impl GilbertElliott {
    /// `gemodel p r 1-h 1-k`.
    pub fn new(
        p: Probability,
        r: Probability,
        one_minus_h: Probability,
        one_minus_k: Probability,
    ) -> GilbertElliott {
        GilbertElliott {
            p,
            r,
            one_minus_h,
            one_minus_k,
        }
    }

    /// `gemodel p` with iproute2's defaults `r = 1 − p`, `1-h = 1`, `1-k = 0`
    /// (a Bernoulli loss of rate `p`).
    pub fn netem_defaults(p: Probability) -> GilbertElliott {
        GilbertElliott::new(p, p.complement(), Probability::ONE, Probability::ZERO)
    }

    /// Long-run probability of being in the Bad state, `p/(p + r)`
    /// (0 when `p = r = 0`: the chain starts and stays in Good).
    pub fn stationary_bad(&self) -> f64 {
        let (p, r) = (self.p.get(), self.r.get());
        if p + r == 0.0 {
            0.0
        } else {
            p / (p + r)
        }
    }

    /// Long-run loss rate `π_G·(1−k) + π_B·(1−h)`.
    pub fn stationary_loss(&self) -> f64 {
        let bad = self.stationary_bad();
        (1.0 - bad) * self.one_minus_k.get() + bad * self.one_minus_h.get()
    }

    /// Mean sojourn in the Bad state, `1/r` packets (the "burst" of the
    /// Gilbert model; `None` if `r = 0`).
    pub fn mean_bad_sojourn(&self) -> Option<f64> {
        let r = self.r.get();
        (r > 0.0).then(|| 1.0 / r)
    }

    /// Mean length of a run of consecutive lost packets, in the long run:
    /// loss rate / rate of (kept, lost) pairs. For the Gilbert cases
    /// (`1-h = 1`, `1-k = 0`) this is `1/r`. `None` if runs never end or
    /// never start.
    pub fn mean_loss_run(&self) -> Option<f64> {
        let bad = self.stationary_bad();
        let good = 1.0 - bad;
        let (p, r) = (self.p.get(), self.r.get());
        let (lg, lb) = (self.one_minus_k.get(), self.one_minus_h.get());
        // The loss of packet n uses the state it starts in; the next packet
        // uses the state after the transition.
        let kept_then_lost = good * (1.0 - lg) * ((1.0 - p) * lg + p * lb)
            + bad * (1.0 - lb) * (r * lg + (1.0 - r) * lb);
        (kept_then_lost > 0.0).then(|| self.stationary_loss() / kept_then_lost)
    }
}

/// `loss state p13 p31 p32 p23 p14`: the 4-state Markov (GI) model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FourState {
    /// Gap reception (1) → burst loss (3).
    pub p13: Probability,
    /// Burst loss (3) → gap reception (1).
    pub p31: Probability,
    /// Burst loss (3) → burst reception (2).
    pub p32: Probability,
    /// Burst reception (2) → burst loss (3).
    pub p23: Probability,
    /// Gap reception (1) → isolated loss (4).
    pub p14: Probability,
}

impl FourState {
    /// `state p13 p31 p32 p23 p14`; rejects `p13 + p14 > 1` and
    /// `p31 + p32 > 1` (the exits of states 1 and 3).
    pub fn new(
        p13: Probability,
        p31: Probability,
        p32: Probability,
        p23: Probability,
        p14: Probability,
    ) -> Result<FourState, ModelError> {
        const SLACK: f64 = 1e-9; // 0.3 + 0.7 in floating point
        if p13.get() + p14.get() > 1.0 + SLACK {
            return Err(ModelError::new(
                "loss state",
                format!("p13 + p14 = {} exceeds 1", p13.get() + p14.get()),
            ));
        }
        if p31.get() + p32.get() > 1.0 + SLACK {
            return Err(ModelError::new(
                "loss state",
                format!("p31 + p32 = {} exceeds 1", p31.get() + p32.get()),
            ));
        }
        Ok(FourState {
            p13,
            p31,
            p32,
            p23,
            p14,
        })
    }

    /// `state p13` with iproute2's defaults `p31 = 1 − p13`, `p32 = 0`,
    /// `p23 = 1`, `p14 = 0` (a Bernoulli loss of rate `p13`).
    pub fn netem_defaults(p13: Probability) -> FourState {
        FourState {
            p13,
            p31: p13.complement(),
            p32: Probability::ZERO,
            p23: Probability::ONE,
            p14: Probability::ZERO,
        }
    }

    /// Long-run probabilities of states 1, 2, 3, 4 (index 0..4), for the
    /// chain started in state 1. Where the chain is not irreducible (some
    /// transition probabilities are 0), this is the limit it settles into.
    pub fn stationary(&self) -> [f64; 4] {
        let (p13, p31, p32, p23, p14) = (
            self.p13.get(),
            self.p31.get(),
            self.p32.get(),
            self.p23.get(),
            self.p14.get(),
        );
        if p13 == 0.0 {
            // Only 1 ↔ 4 is reachable.
            let z = 1.0 + p14;
            return [1.0 / z, 0.0, 0.0, p14 / z];
        }
        if p31 == 0.0 {
            // Trapped in {2, 3} once state 3 is reached.
            return match (p32 > 0.0, p23 > 0.0) {
                (false, _) => [0.0, 0.0, 1.0, 0.0],
                (true, false) => [0.0, 1.0, 0.0, 0.0],
                (true, true) => [0.0, p32 / (p23 + p32), p23 / (p23 + p32), 0.0],
            };
        }
        if p23 == 0.0 && p32 > 0.0 {
            // State 2 is reachable and absorbing.
            return [0.0, 1.0, 0.0, 0.0];
        }
        // Balance: π4 = p14·π1, π3 = p13·π1/p31, π2 = p32·π3/p23.
        let r3 = p13 / p31;
        let r2 = if p32 == 0.0 { 0.0 } else { p32 * r3 / p23 };
        let r4 = p14;
        let z = 1.0 + r2 + r3 + r4;
        [1.0 / z, r2 / z, r3 / z, r4 / z]
    }

    /// Long-run loss rate `π3 + π4`.
    pub fn stationary_loss(&self) -> f64 {
        let pi = self.stationary();
        pi[2] + pi[3]
    }

    /// Mean length of a run of consecutive lost packets: loss rate / rate of
    /// entering a loss state from a reception state
    /// (`π1·(p13 + p14) + π2·p23`). `None` if runs never end or never start.
    pub fn mean_loss_run(&self) -> Option<f64> {
        let pi = self.stationary();
        let starts = pi[0] * (self.p13.get() + self.p14.get()) + pi[1] * self.p23.get();
        (starts > 0.0).then(|| self.stationary_loss() / starts)
    }
}

/// Trace-driven loss: the packets and time intervals to drop.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceLoss {
    /// Inclusive ranges of 1-based packet numbers, sorted and disjoint.
    packets: Vec<(u64, u64)>,
    /// Half-open `[start, end)` ranges of nanoseconds since the epoch,
    /// sorted and disjoint.
    intervals: Vec<(u64, u64)>,
}

const TRACE: &str = "loss trace";

/// One entry of a loss trace: packets, or a time interval, to drop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceEntry {
    /// Packets `first..=last` (1-based, in the order they reach the loss
    /// stage).
    Packets {
        /// The first packet dropped, at least 1.
        first: u64,
        /// The last packet dropped, at least `first`.
        last: u64,
    },
    /// Every packet reaching the loss stage at a time `t` with
    /// `start ≤ t < end`, times since the engine's epoch.
    Interval {
        /// The start of the interval.
        start: Instant,
        /// The end of the interval, after `start`.
        end: Instant,
    },
}

impl TraceLoss {
    /// A trace dropping the packets and intervals of `entries`, which may
    /// overlap and come in any order. Rejects packet 0, a range that runs
    /// backwards and an empty interval, naming the entry's index. No
    /// entries drop nothing.
    pub fn new(entries: impl IntoIterator<Item = TraceEntry>) -> Result<TraceLoss, ModelError> {
        let mut packets = Vec::new();
        let mut intervals = Vec::new();
        for (i, entry) in entries.into_iter().enumerate() {
            match entry {
                TraceEntry::Packets { first, last } => {
                    if first == 0 {
                        return Err(ModelError::at(
                            TRACE,
                            i,
                            "packet 0: packets are numbered from 1",
                        ));
                    }
                    if first > last {
                        return Err(ModelError::at(
                            TRACE,
                            i,
                            format!("the range {first}-{last} runs backwards"),
                        ));
                    }
                    packets.push((first, last));
                }
                TraceEntry::Interval { start, end } => {
                    if start >= end {
                        return Err(ModelError::at(
                            TRACE,
                            i,
                            format!(
                                "the interval from {} to {} is empty",
                                Duration(start.as_nanos()),
                                Duration(end.as_nanos())
                            ),
                        ));
                    }
                    intervals.push((start.as_nanos(), end.as_nanos()));
                }
            }
        }
        Ok(TraceLoss {
            packets: merge(packets, 1),
            intervals: merge(intervals, 0),
        })
    }

    /// True if the trace drops the `n`-th packet (1-based).
    pub fn drops_packet(&self, n: u64) -> bool {
        let i = self.packets.partition_point(|&(_, last)| last < n);
        self.packets.get(i).is_some_and(|&(first, _)| first <= n)
    }

    /// True if the trace drops packets at time `t`.
    pub fn drops_at(&self, t: Instant) -> bool {
        let t = t.as_nanos();
        let i = self.intervals.partition_point(|&(_, end)| end <= t);
        self.intervals.get(i).is_some_and(|&(start, _)| start <= t)
    }

    /// How many packet numbers the trace lists (after merging overlaps).
    pub fn listed_packets(&self) -> u64 {
        self.packets.iter().map(|&(a, b)| b - a + 1).sum()
    }

    /// How many time intervals the trace lists (after merging overlaps).
    pub fn intervals(&self) -> usize {
        self.intervals.len()
    }

    /// The packet ranges dropped, `(first, last)` inclusive, merged and
    /// sorted.
    pub fn packet_ranges(&self) -> &[(u64, u64)] {
        &self.packets
    }

    /// The time intervals dropped, `[start, end)`, merged and sorted.
    pub fn time_intervals(&self) -> impl Iterator<Item = (Instant, Instant)> + '_ {
        self.intervals
            .iter()
            .map(|&(a, b)| (Instant(a), Instant(b)))
    }
}

/// Sorts ranges and merges those that overlap or, with `adjacency` 1 for
/// inclusive integer ranges, touch.
fn merge(mut ranges: Vec<(u64, u64)>, adjacency: u64) -> Vec<(u64, u64)> {
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (a, b) in ranges {
        match out.last_mut() {
            Some(last) if a <= last.1.saturating_add(adjacency) => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// A pipe's loss configuration.
#[derive(Clone, Debug, PartialEq)]
pub enum LossConfig {
    /// `loss P [CORR]`.
    Uniform(UniformLoss),
    /// `loss gemodel p r 1-h 1-k`.
    GilbertElliott(GilbertElliott),
    /// `loss state p13 p31 p32 p23 p14`.
    FourState(FourState),
    /// `loss trace FILE`.
    Trace(TraceLoss),
}

impl fmt::Display for LossConfig {
    /// tc-netem's words; a trace shows its size (the file name is the
    /// command language's business).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LossConfig::Uniform(u) if u.correlation.is_zero() => write!(f, "loss {}", u.p),
            LossConfig::Uniform(u) => write!(f, "loss {} {}", u.p, u.correlation),
            LossConfig::GilbertElliott(g) => write!(
                f,
                "loss gemodel {} {} {} {}",
                g.p, g.r, g.one_minus_h, g.one_minus_k
            ),
            LossConfig::FourState(s) => write!(
                f,
                "loss state {} {} {} {} {}",
                s.p13, s.p31, s.p32, s.p23, s.p14
            ),
            LossConfig::Trace(t) => write!(
                f,
                "loss trace ({} packets, {} intervals)",
                t.listed_packets(),
                t.intervals()
            ),
        }
    }
}

/// The Markov state of the correlated loss generators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChainState {
    /// Gilbert-Elliott Good.
    Good,
    /// Gilbert-Elliott Bad.
    Bad,
    /// 4-state: 1 = received in gap (`TX_IN_GAP_PERIOD`).
    GapRx,
    /// 4-state: 2 = received in burst (`TX_IN_BURST_PERIOD`).
    BurstRx,
    /// 4-state: 3 = lost in burst (`LOST_IN_BURST_PERIOD`).
    BurstLoss,
    /// 4-state: 4 = isolated loss in gap (`LOST_IN_GAP_PERIOD`).
    GapLoss,
}

/// A pipe's loss model: the config, the chain state, the generator and the
/// packet counter (for traces).
#[derive(Clone, Debug)]
pub struct LossModel {
    cfg: LossConfig,
    state: ChainState,
    corr: CorrelatedRandom,
    rng: StageRng,
    /// Packets decided so far.
    packets: u64,
}

impl LossModel {
    /// A model drawing from `rng` (the stage's own generator).
    pub fn new(cfg: LossConfig, mut rng: StageRng) -> LossModel {
        let rho = match &cfg {
            LossConfig::Uniform(u) => u.correlation,
            _ => Probability::ZERO,
        };
        let corr = CorrelatedRandom::new(rho, &mut rng);
        let state = match cfg {
            LossConfig::FourState(_) => ChainState::GapRx,
            _ => ChainState::Good,
        };
        LossModel {
            cfg,
            state,
            corr,
            rng,
            packets: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &LossConfig {
        &self.cfg
    }

    /// Packets decided so far.
    pub fn packets_seen(&self) -> u64 {
        self.packets
    }

    /// Decides the fate of the next packet, which reaches the loss stage at
    /// `now`: true means drop it. (`now` matters to time-interval traces
    /// only.)
    pub fn lose(&mut self, now: Instant) -> bool {
        self.packets += 1;
        match &self.cfg {
            LossConfig::Uniform(u) => self.corr.chance(u.p, &mut self.rng),
            LossConfig::GilbertElliott(g) => {
                let g = *g;
                self.gilbert_elliott(&g)
            }
            LossConfig::FourState(s) => {
                let s = *s;
                self.four_state(&s)
            }
            LossConfig::Trace(t) => t.drops_packet(self.packets) || t.drops_at(now),
        }
    }

    /// `loss_gilb_ell`: transition first, then the loss draw with the loss
    /// probability of the state the packet started in.
    fn gilbert_elliott(&mut self, g: &GilbertElliott) -> bool {
        match self.state {
            ChainState::Bad => {
                if self.rng.next_u32() < g.r.scaled() {
                    self.state = ChainState::Good;
                }
                // Kernel: lost if rnd > h, with h = UINT32_MAX − (1-h).
                self.rng.next_u32() > g.one_minus_h.complement().scaled()
            }
            _ => {
                if self.rng.next_u32() < g.p.scaled() {
                    self.state = ChainState::Bad;
                }
                self.rng.next_u32() < g.one_minus_k.scaled()
            }
        }
    }

    /// `loss_4state`: one draw picks the next state; entering state 3 or 4
    /// loses the packet. Sums are in 64 bits (the kernel's 32-bit `a1 + a4`
    /// can wrap when the two add up to 1).
    fn four_state(&mut self, s: &FourState) -> bool {
        let rnd = self.rng.next_u32() as u64;
        let (next, lost) = match self.state {
            ChainState::BurstRx => {
                if rnd < s.p23.scaled() as u64 {
                    (ChainState::BurstLoss, true)
                } else {
                    (ChainState::BurstRx, false)
                }
            }
            ChainState::BurstLoss => {
                if rnd < s.p32.scaled() as u64 {
                    (ChainState::BurstRx, false)
                } else if rnd < s.p31.scaled() as u64 + s.p32.scaled() as u64 {
                    (ChainState::GapRx, false)
                } else {
                    (ChainState::BurstLoss, true)
                }
            }
            ChainState::GapLoss => (ChainState::GapRx, false),
            _ => {
                if rnd < s.p14.scaled() as u64 {
                    (ChainState::GapLoss, true)
                } else if rnd < s.p13.scaled() as u64 + s.p14.scaled() as u64 {
                    (ChainState::BurstLoss, true)
                } else {
                    (ChainState::GapRx, false)
                }
            }
        };
        self.state = next;
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::stats_test_util::{
        assert_binomial_3sigma, lag1_autocorrelation, mean_run_length,
    };
    use crate::rng::{stage_rng, StageKind};

    fn pr(p: f64) -> Probability {
        Probability::new(p).expect("valid probability")
    }

    fn run(cfg: LossConfig, seed: u64, n: usize) -> Vec<bool> {
        let mut m = LossModel::new(cfg, stage_rng(seed, StageKind::Loss, 1));
        (0..n).map(|_| m.lose(Instant::ZERO)).collect()
    }

    fn rate(xs: &[bool]) -> f64 {
        xs.iter().filter(|&&x| x).count() as f64 / xs.len() as f64
    }

    /// Pass proves: `loss 5%` over 100k packets loses within 3σ of the
    /// binomial expectation (5000 ± 207).
    #[test]
    fn uniform_loss_is_binomial() {
        let xs = run(
            LossConfig::Uniform(UniformLoss::new(pr(0.05), Probability::ZERO)),
            1,
            100_000,
        );
        let lost = xs.iter().filter(|&&x| x).count() as u64;
        assert_binomial_3sigma(lost, 100_000, 0.05, "loss 5%");
        assert!(
            lag1_autocorrelation(&xs.iter().map(|&x| x as u8 as f64).collect::<Vec<_>>()).abs()
                < 0.015
        );
    }

    /// Pass proves: netem's correlated loss (`loss 5% 25%`) makes a loss
    /// after a loss more likely than after a kept packet, and (netem's flaw,
    /// reproduced) loses far fewer than 5 % of packets (≈0.18 %).
    #[test]
    fn correlated_loss_clusters_and_undershoots() {
        let n = 1_000_000;
        let xs = run(
            LossConfig::Uniform(UniformLoss::new(pr(0.05), pr(0.25))),
            2,
            n,
        );
        let r = rate(&xs);
        assert!(r > 0.001 && r < 0.01, "rate {r}");
        let (mut after_loss, mut losses, mut after_keep, mut keeps) = (0u64, 0u64, 0u64, 0u64);
        for w in xs.windows(2) {
            if w[0] {
                losses += 1;
                after_loss += w[1] as u64;
            } else {
                keeps += 1;
                after_keep += w[1] as u64;
            }
        }
        let (pl, pk) = (
            after_loss as f64 / losses as f64,
            after_keep as f64 / keeps as f64,
        );
        assert!(pl > 1.5 * pk, "P(loss|loss) {pl} vs P(loss|kept) {pk}");
    }

    /// Pass proves: in the Gilbert model (`1-h = 100%`, `1-k = 0`) the mean
    /// run of consecutive losses is within 5 % of 1/r over 1M packets, and
    /// the loss rate within 5 % of p/(p+r).
    #[test]
    fn gilbert_mean_burst_is_one_over_r() {
        let g = GilbertElliott::new(pr(0.01), pr(0.2), Probability::ONE, Probability::ZERO);
        let xs = run(LossConfig::GilbertElliott(g), 3, 1_000_000);
        let burst = mean_run_length(xs.iter().copied()).expect("some losses");
        assert!((burst - 5.0).abs() < 0.05 * 5.0, "mean burst {burst}");
        assert_eq!(g.mean_bad_sojourn(), Some(5.0));
        assert!((g.mean_loss_run().expect("finite") - 5.0).abs() < 1e-9);
        let expected = g.stationary_loss();
        assert!((expected - 0.01 / 0.21).abs() < 1e-12);
        assert!(
            (rate(&xs) - expected).abs() < 0.05 * expected,
            "rate {}",
            rate(&xs)
        );
    }

    /// Pass proves: for a general Gilbert-Elliott model (losses in both
    /// states) the measured loss rate and mean loss run are within 5 % of
    /// the analytical helpers.
    #[test]
    fn gilbert_elliott_general_matches_analysis() {
        let g = GilbertElliott::new(pr(0.02), pr(0.25), pr(0.7), pr(0.01));
        let xs = run(LossConfig::GilbertElliott(g), 4, 1_000_000);
        let (l, b) = (g.stationary_loss(), g.mean_loss_run().expect("finite"));
        assert!(
            (rate(&xs) - l).abs() < 0.05 * l,
            "rate {} vs {l}",
            rate(&xs)
        );
        let burst = mean_run_length(xs.iter().copied()).expect("some losses");
        assert!((burst - b).abs() < 0.05 * b, "run {burst} vs {b}");
        assert!(b > 1.5, "analysis would be trivial");
    }

    /// Pass proves: netem's order inside `loss_gilb_ell` — a packet's loss
    /// uses the state it started in: with p = 1, r = 0, 1-h = 1, 1-k = 0 the
    /// first packet (Good) is kept and every later one (Bad) lost.
    #[test]
    fn gilbert_elliott_loss_uses_starting_state() {
        let g = GilbertElliott::new(
            Probability::ONE,
            Probability::ZERO,
            Probability::ONE,
            Probability::ZERO,
        );
        let xs = run(LossConfig::GilbertElliott(g), 5, 100);
        assert!(!xs[0]);
        assert!(xs[1..].iter().all(|&x| x));
    }

    /// Pass proves: the 4-state model's measured loss rate over 1M packets
    /// is within 5 % of FourState::stationary_loss, its mean loss run within
    /// 5 % of mean_loss_run, and the analytical stationary vector agrees with
    /// a brute-force power iteration of the transition matrix.
    #[test]
    fn four_state_matches_analysis() {
        let s = FourState::new(pr(0.02), pr(0.3), pr(0.1), pr(0.2), pr(0.01)).expect("valid");
        // Power iteration on the matrix of the module docs (states 1..4).
        let (p13, p31, p32, p23, p14) = (0.02, 0.3, 0.1, 0.2, 0.01);
        let t = [
            [1.0 - p13 - p14, 0.0, p13, p14],
            [0.0, 1.0 - p23, p23, 0.0],
            [p31, p32, 1.0 - p31 - p32, 0.0],
            [1.0, 0.0, 0.0, 0.0],
        ];
        let mut pi = [1.0, 0.0, 0.0, 0.0];
        for _ in 0..20_000 {
            let mut next = [0.0; 4];
            for (from, row) in t.iter().enumerate() {
                for (to, p) in row.iter().enumerate() {
                    next[to] += pi[from] * p;
                }
            }
            pi = next;
        }
        for (a, b) in s.stationary().iter().zip(pi) {
            assert!((a - b).abs() < 1e-9, "{:?} vs {pi:?}", s.stationary());
        }
        let xs = run(LossConfig::FourState(s), 6, 1_000_000);
        let l = s.stationary_loss();
        assert!(
            (rate(&xs) - l).abs() < 0.05 * l,
            "rate {} vs {l}",
            rate(&xs)
        );
        let b = s.mean_loss_run().expect("finite");
        let burst = mean_run_length(xs.iter().copied()).expect("some losses");
        assert!((burst - b).abs() < 0.05 * b, "run {burst} vs {b}");
    }

    /// Pass proves: the 4-state transitions are netem's: with p13 = 1 and
    /// p31 = 1 the chain alternates 1 → 3 → 1, losing every other packet
    /// starting with the first; with p14 = 1 it alternates 1 → 4 → 1.
    #[test]
    fn four_state_transitions_exact() {
        let s = FourState::new(
            Probability::ONE,
            Probability::ONE,
            Probability::ZERO,
            Probability::ZERO,
            Probability::ZERO,
        )
        .expect("valid");
        let xs = run(LossConfig::FourState(s), 7, 100);
        assert!(
            xs.iter().enumerate().all(|(i, &x)| x == (i % 2 == 0)),
            "{xs:?}"
        );
        let s = FourState::new(
            Probability::ZERO,
            Probability::ZERO,
            Probability::ZERO,
            Probability::ZERO,
            Probability::ONE,
        )
        .expect("valid");
        let xs = run(LossConfig::FourState(s), 7, 100);
        assert!(
            xs.iter().enumerate().all(|(i, &x)| x == (i % 2 == 0)),
            "{xs:?}"
        );
        assert!((s.stationary_loss() - 0.5).abs() < 1e-12);
        assert_eq!(s.mean_loss_run(), Some(1.0));
    }

    /// Pass proves: iproute2's defaults make both Markov models Bernoulli
    /// with the given rate, and impossible exits are rejected.
    #[test]
    fn defaults_and_validation() {
        let g = GilbertElliott::netem_defaults(pr(0.1));
        assert!((g.stationary_loss() - 0.1).abs() < 1e-12);
        assert!((g.mean_loss_run().expect("finite") - 1.0 / 0.9).abs() < 1e-12);
        let s = FourState::netem_defaults(pr(0.1));
        assert!((s.stationary_loss() - 0.1).abs() < 1e-12);
        let xs = run(LossConfig::FourState(s), 8, 100_000);
        let lost = xs.iter().filter(|&&x| x).count() as u64;
        assert_binomial_3sigma(lost, 100_000, 0.1, "state 10%");
        assert!(FourState::new(pr(0.6), pr(0.1), pr(0.1), pr(0.1), pr(0.5)).is_err());
        assert!(FourState::new(pr(0.1), pr(0.6), pr(0.5), pr(0.1), pr(0.1)).is_err());
        assert!(FourState::new(pr(0.3), pr(0.3), pr(0.7), pr(0.1), pr(0.7)).is_ok());
        // Absorbing burst: p31 = p32 = 0 → everything lost in the long run.
        let s = FourState::new(
            pr(0.1),
            Probability::ZERO,
            Probability::ZERO,
            pr(0.5),
            Probability::ZERO,
        )
        .expect("valid");
        assert_eq!(s.stationary_loss(), 1.0);
        assert_eq!(s.mean_loss_run(), None);
    }

    /// Pass proves: a trace drops exactly the listed packets and the packets
    /// arriving inside listed time intervals, and nothing else.
    #[test]
    fn trace_drops_exactly_the_listed_packets() {
        let ms = |x: u64| Instant(x * 1_000_000);
        let packets = |first, last| TraceEntry::Packets { first, last };
        let t = TraceLoss::new([
            packets(17, 17),
            packets(100, 103),
            packets(5, 5),
            packets(3, 4),
            packets(4, 6),
            TraceEntry::Interval {
                start: ms(1500),
                end: ms(2000),
            },
            TraceEntry::Interval {
                start: ms(250),
                end: ms(300),
            },
        ])
        .expect("valid");
        assert_eq!(t.listed_packets(), 1 + 4 + 4);
        assert_eq!(t.packet_ranges(), &[(3, 6), (17, 17), (100, 103)]);
        let expected: Vec<u64> = vec![3, 4, 5, 6, 17, 100, 101, 102, 103];
        let mut m = LossModel::new(LossConfig::Trace(t), stage_rng(0, StageKind::Loss, 0));
        let dropped: Vec<u64> = (1..=200u64).filter(|_| m.lose(Instant::ZERO)).collect();
        assert_eq!(dropped, expected);
        // Time intervals, half-open; packet 201 onward is not listed.
        for (t, drop) in [
            (ms(249), false),
            (ms(250), true),
            (ms(299), true),
            (ms(300), false),
            (ms(1499), false),
            (ms(1500), true),
            (ms(1999), true),
            (ms(2000), false),
        ] {
            assert_eq!(m.lose(t), drop, "at {t}");
        }
    }

    /// Pass proves: invalid entries are rejected naming the entry.
    #[test]
    fn trace_errors_name_the_entry() {
        let ok = TraceEntry::Packets { first: 1, last: 2 };
        for (bad, message) in [
            (
                TraceEntry::Packets { first: 0, last: 2 },
                "packet 0: packets are numbered from 1",
            ),
            (
                TraceEntry::Packets { first: 5, last: 3 },
                "the range 5-3 runs backwards",
            ),
            (
                TraceEntry::Interval {
                    start: Instant(2_000_000_000),
                    end: Instant(1_000_000_000),
                },
                "the interval from 2s to 1s is empty",
            ),
        ] {
            match TraceLoss::new([ok, ok, bad]) {
                Ok(t) => panic!("accepted {bad:?}: {t:?}"),
                Err(e) => assert_eq!((e.index, e.message.as_str()), (Some(2), message)),
            }
        }
        assert_eq!(TraceLoss::new([]), Ok(TraceLoss::default()));
    }

    /// Pass proves: the same seed reproduces every random loss model's
    /// decisions bit for bit, and another seed does not.
    #[test]
    fn seeds_reproduce() {
        let cfgs = [
            LossConfig::Uniform(UniformLoss::new(pr(0.1), pr(0.3))),
            LossConfig::GilbertElliott(GilbertElliott::new(pr(0.05), pr(0.3), pr(0.9), pr(0.02))),
            LossConfig::FourState(
                FourState::new(pr(0.05), pr(0.3), pr(0.2), pr(0.3), pr(0.02)).expect("valid"),
            ),
        ];
        for cfg in cfgs {
            let a = run(cfg.clone(), 9, 10_000);
            assert_eq!(a, run(cfg.clone(), 9, 10_000), "{cfg}");
            assert_ne!(a, run(cfg.clone(), 10, 10_000), "{cfg}");
        }
    }

    /// Pass proves: Display prints tc-netem's words.
    #[test]
    fn display_uses_netem_words() {
        let g = GilbertElliott::new(pr(0.01), pr(0.2), Probability::ONE, Probability::ZERO);
        assert_eq!(
            LossConfig::GilbertElliott(g).to_string(),
            "loss gemodel 1% 20% 100% 0%"
        );
        assert_eq!(
            LossConfig::Uniform(UniformLoss::new(pr(0.05), pr(0.25))).to_string(),
            "loss 5% 25%"
        );
    }
}
