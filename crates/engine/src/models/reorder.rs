//! Reordering: netem's `reorder P [CORR] [gap N]` and NetPath's swap.
//!
//! Sources: Linux `net/sched/sch_netem.c` (`netem_enqueue`), iproute2
//! `tc/q_netem.c`, tc-netem(8); NetPath §2.2.5.
//!
//! # netem (`reorder P [CORR] [gap N]`)
//! netem reorders by *not delaying* some packets: a packet chosen for
//! reordering is sent at once (put at the head of the queue, `time_to_send =
//! now`), while the others wait their delay, so the chosen one overtakes the
//! packets still in the delay line. Hence reordering needs a non-zero delay
//! (iproute2 refuses `reorder` without `delay`; the pipe enforces that).
//!
//! Exactly as `netem_enqueue` does it, with a counter starting at 0:
//! ```text
//! if gap == 0 || counter < gap − 1 || P < crandom():   delay normally; counter += 1
//! else:                                                send now;       counter = 0
//! ```
//! So after each immediate packet, the next `gap − 1` packets are always
//! delayed; from then on *every* packet is a candidate, sent at once with
//! probability `P`, until one is (the draw is only made for candidates). With
//! `gap 1` every packet is a candidate. iproute2 sets `gap` to 1 when
//! `reorder` is given without it (and for `gap 0`); a config with `P = 0` is
//! off. E.g. `reorder 100% gap 5` sends packets 5, 10, 15, … at once;
//! `reorder 50% gap 5` sends on average one packet in `4 + 1/0.5 = 6` at once.
//! The immediate packet does not get a delay sample (netem only calls
//! `tabledist` for delayed packets).
//!
//! # NetPath (`reorder swap P`)
//! NetPath's combined Queue/Delay element "only makes a reordering decision
//! when multiple packets are enqueued. If a reordering decision is made
//! (based on sampling the uniform random number table), then the second
//! packet in the queue is serviced before the first." [`SwapReorder::swap`]
//! is that decision; the pipe swaps.

use core::fmt;

use rand::RngCore;

use crate::models::{CorrelatedRandom, Probability};
use crate::rng::StageRng;

/// `reorder P [CORR] [gap N]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReorderConfig {
    /// Probability that a candidate packet is sent at once.
    pub p: Probability,
    /// netem correlation with the previous draw.
    pub correlation: Probability,
    /// Packets `gap − 1` after each immediate one are always delayed; ≥ 1.
    gap: u32,
}

impl ReorderConfig {
    /// `reorder p correlation gap N`; `gap` 0 means iproute2's default, 1.
    pub fn new(p: Probability, correlation: Probability, gap: u32) -> ReorderConfig {
        ReorderConfig {
            p,
            correlation,
            gap: gap.max(1),
        }
    }

    /// The gap, ≥ 1.
    pub fn gap(&self) -> u32 {
        self.gap
    }
}

impl fmt::Display for ReorderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "reorder {}", self.p)?;
        if !self.correlation.is_zero() {
            write!(f, " {}", self.correlation)?;
        }
        if self.gap != 1 {
            write!(f, " gap {}", self.gap)?;
        }
        Ok(())
    }
}

/// What netem does with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReorderDecision {
    /// Sample a delay and put it in the delay line as usual.
    Delay,
    /// Send it now, ahead of the packets in the delay line (no delay sample).
    Immediate,
}

/// netem's reordering state: the config, the gap counter and the generator.
#[derive(Clone, Debug)]
pub struct NetemReorder {
    cfg: ReorderConfig,
    /// Packets delayed since the last immediate one (netem's `q->counter`).
    counter: u32,
    corr: CorrelatedRandom,
    rng: StageRng,
}

impl NetemReorder {
    /// A model drawing from `rng` (the stage's own generator).
    pub fn new(cfg: ReorderConfig, mut rng: StageRng) -> NetemReorder {
        let corr = CorrelatedRandom::new(cfg.correlation, &mut rng);
        NetemReorder {
            cfg,
            counter: 0,
            corr,
            rng,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ReorderConfig {
        &self.cfg
    }

    /// The decision for the next packet (one that survived loss).
    pub fn decide(&mut self) -> ReorderDecision {
        // netem: gap == 0 || counter < gap − 1 || reorder < get_crandom().
        // A zero probability is "not reordering" (netem's gap stays 0).
        let delay = self.cfg.p.is_zero()
            || self.counter < self.cfg.gap - 1
            || self.cfg.p.scaled() < self.corr.next_u32(&mut self.rng);
        if delay {
            self.counter = self.counter.saturating_add(1);
            ReorderDecision::Delay
        } else {
            self.counter = 0;
            ReorderDecision::Immediate
        }
    }
}

/// NetPath's `reorder swap P`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SwapConfig {
    /// Probability of serving the second queued packet before the first.
    pub p: Probability,
}

impl fmt::Display for SwapConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "reorder swap {}", self.p)
    }
}

/// NetPath's swap decision.
#[derive(Clone, Debug)]
pub struct SwapReorder {
    cfg: SwapConfig,
    rng: StageRng,
}

impl SwapReorder {
    /// A model drawing from `rng` (the stage's own generator).
    pub fn new(cfg: SwapConfig, rng: StageRng) -> SwapReorder {
        SwapReorder { cfg, rng }
    }

    /// The configuration.
    pub fn config(&self) -> &SwapConfig {
        &self.cfg
    }

    /// Called when the head packet is about to be served with `queued`
    /// packets waiting (head included): true means serve the second packet
    /// first. With fewer than two packets no decision is made and no random
    /// number is drawn.
    pub fn swap(&mut self, queued: usize) -> bool {
        queued >= 2 && !self.cfg.p.is_zero() && self.cfg.p.scaled() >= self.rng.next_u32()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::stats_test_util::assert_binomial_3sigma;
    use crate::rng::{stage_rng, StageKind};

    fn pr(p: f64) -> Probability {
        Probability::new(p).expect("valid")
    }

    fn netem(p: f64, gap: u32, seed: u64) -> NetemReorder {
        NetemReorder::new(
            ReorderConfig::new(pr(p), Probability::ZERO, gap),
            stage_rng(seed, StageKind::Reorder, 1),
        )
    }

    fn immediates(m: &mut NetemReorder, n: u64) -> Vec<u64> {
        (1..=n)
            .filter(|_| m.decide() == ReorderDecision::Immediate)
            .collect()
    }

    /// Pass proves: `reorder 100% gap 5` sends exactly packets 5, 10, 15, …
    /// at once (netem's counter), and `gap 1` (or 0) makes every packet a
    /// candidate.
    #[test]
    fn gap_is_exact() {
        let got = immediates(&mut netem(1.0, 5, 1), 30);
        assert_eq!(got, vec![5, 10, 15, 20, 25, 30]);
        assert_eq!(immediates(&mut netem(1.0, 1, 1), 5), vec![1, 2, 3, 4, 5]);
        assert_eq!(immediates(&mut netem(1.0, 0, 1), 3), vec![1, 2, 3]);
        assert!(immediates(&mut netem(0.0, 5, 1), 1000).is_empty());
    }

    /// Pass proves: `reorder 25%` (gap 1) sends 25 % of packets at once,
    /// within 3σ over 100k packets.
    #[test]
    fn gap_one_is_binomial() {
        let n = 100_000;
        let k = immediates(&mut netem(0.25, 1, 2), n).len() as u64;
        assert_binomial_3sigma(k, n, 0.25, "reorder 25%");
    }

    /// Pass proves: with `reorder 50% gap 5` the immediate packets are at
    /// least 5 apart and one in 4 + 1/0.5 = 6 on average (within 3 %).
    #[test]
    fn gap_with_probability() {
        let got = immediates(&mut netem(0.5, 5, 3), 600_000);
        assert!(got.windows(2).all(|w| w[1] - w[0] >= 5));
        assert!(got[0] >= 5);
        let mean_gap = (got[got.len() - 1] - got[0]) as f64 / (got.len() - 1) as f64;
        assert!(
            (mean_gap - 6.0).abs() < 0.03 * 6.0,
            "mean spacing {mean_gap}"
        );
    }

    /// Pass proves: NetPath's swap never fires (nor draws) with fewer than
    /// two packets queued, and fires with probability P (3σ) otherwise.
    #[test]
    fn swap_needs_two_packets() {
        let cfg = SwapConfig { p: pr(0.1) };
        let mut a = SwapReorder::new(cfg, stage_rng(4, StageKind::Reorder, 2));
        let mut b = SwapReorder::new(cfg, stage_rng(4, StageKind::Reorder, 2));
        assert!((0..1000).all(|_| !a.swap(1) && !a.swap(0)));
        // a drew nothing: it is still in step with b.
        let sa: Vec<bool> = (0..100_000).map(|_| a.swap(2)).collect();
        let sb: Vec<bool> = (0..100_000).map(|_| b.swap(3)).collect();
        assert_eq!(sa, sb);
        let k = sa.iter().filter(|&&x| x).count() as u64;
        assert_binomial_3sigma(k, 100_000, 0.1, "swap 10%");
    }

    /// Pass proves: the same seed reproduces decisions bit for bit and
    /// another does not; Display uses tc's words.
    #[test]
    fn seeds_reproduce() {
        let run = |seed| {
            let mut m = NetemReorder::new(
                ReorderConfig::new(pr(0.3), pr(0.4), 2),
                stage_rng(seed, StageKind::Reorder, 1),
            );
            (0..5_000).map(|_| m.decide()).collect::<Vec<_>>()
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
        assert_eq!(
            ReorderConfig::new(pr(0.25), pr(0.5), 5).to_string(),
            "reorder 25% 50% gap 5"
        );
    }
}
