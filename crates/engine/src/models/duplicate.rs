//! Duplication: netem's `duplicate P [CORR]`.
//!
//! Source: Linux `net/sched/sch_netem.c` (`netem_enqueue`: "Random
//! duplication", `q->duplicate >= get_crandom(&q->dup_cor)`), tc-netem(8);
//! NetPath §2.2.5 models duplication the same way, "a binary decision based
//! on sampling a precomputed table of uniformly distributed random numbers".
//!
//! The model only decides; the pipe makes the copy. As in netem, a copy must
//! not be offered to the model again (netem marks it with `tc_depth` so that
//! a duplicate is never duplicated), and the decision is taken before the
//! loss decision: a duplicated packet whose original is lost still leaves one
//! copy.

use core::fmt;

use crate::models::{CorrelatedRandom, Probability};
use crate::rng::StageRng;

/// `duplicate P [CORR]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DuplicateConfig {
    /// Probability that a packet is sent twice.
    pub p: Probability,
    /// netem correlation with the previous draw.
    pub correlation: Probability,
}

impl DuplicateConfig {
    /// `duplicate p correlation`.
    pub fn new(p: Probability, correlation: Probability) -> DuplicateConfig {
        DuplicateConfig { p, correlation }
    }
}

impl fmt::Display for DuplicateConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "duplicate {}", self.p)?;
        if !self.correlation.is_zero() {
            write!(f, " {}", self.correlation)?;
        }
        Ok(())
    }
}

/// A pipe's duplication model.
#[derive(Clone, Debug)]
pub struct DuplicateModel {
    cfg: DuplicateConfig,
    corr: CorrelatedRandom,
    rng: StageRng,
}

impl DuplicateModel {
    /// A model drawing from `rng` (the stage's own generator).
    pub fn new(cfg: DuplicateConfig, mut rng: StageRng) -> DuplicateModel {
        let corr = CorrelatedRandom::new(cfg.correlation, &mut rng);
        DuplicateModel { cfg, corr, rng }
    }

    /// The configuration.
    pub fn config(&self) -> &DuplicateConfig {
        &self.cfg
    }

    /// True if this (original) packet is to be sent twice.
    #[inline]
    pub fn duplicate(&mut self) -> bool {
        self.corr.chance(self.cfg.p, &mut self.rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::stats_test_util::assert_binomial_3sigma;
    use crate::rng::{stage_rng, StageKind};

    fn model(p: f64, rho: f64, seed: u64) -> DuplicateModel {
        let cfg = DuplicateConfig::new(
            Probability::new(p).expect("valid"),
            Probability::new(rho).expect("valid"),
        );
        DuplicateModel::new(cfg, stage_rng(seed, StageKind::Duplicate, 1))
    }

    /// Pass proves: `duplicate 2%` duplicates within 3σ of the binomial
    /// expectation over 100k packets (2000 ± 133).
    #[test]
    fn duplicate_rate_is_binomial() {
        let mut m = model(0.02, 0.0, 1);
        let n = 100_000;
        let dups = (0..n).filter(|_| m.duplicate()).count() as u64;
        assert_binomial_3sigma(dups, n, 0.02, "duplicate 2%");
    }

    /// Pass proves: 0% never and 100% always duplicates (netem's `p &&
    /// p >= rnd` edges).
    #[test]
    fn edges() {
        let mut never = model(0.0, 0.0, 2);
        let mut always = model(1.0, 0.0, 2);
        assert!((0..10_000).all(|_| !never.duplicate()));
        assert!((0..10_000).all(|_| always.duplicate()));
    }

    /// Pass proves: correlation makes a duplicate after a duplicate more
    /// likely than after a single packet.
    #[test]
    fn correlation_clusters_duplicates() {
        let mut m = model(0.1, 0.6, 3);
        let xs: Vec<bool> = (0..1_000_000).map(|_| m.duplicate()).collect();
        let (mut after_dup, mut dups, mut after_single, mut singles) = (0u64, 0u64, 0u64, 0u64);
        for w in xs.windows(2) {
            if w[0] {
                dups += 1;
                after_dup += w[1] as u64;
            } else {
                singles += 1;
                after_single += w[1] as u64;
            }
        }
        let (pd, ps) = (
            after_dup as f64 / dups as f64,
            after_single as f64 / singles as f64,
        );
        assert!(pd > 1.5 * ps, "P(dup|dup) {pd} vs P(dup|single) {ps}");
    }

    /// Pass proves: the same seed reproduces the decisions bit for bit and
    /// another seed does not.
    #[test]
    fn seeds_reproduce() {
        let run = |seed| {
            let mut m = model(0.3, 0.2, seed);
            (0..5_000).map(|_| m.duplicate()).collect::<Vec<_>>()
        };
        assert_eq!(run(4), run(4));
        assert_ne!(run(4), run(5));
        assert_eq!(
            DuplicateConfig::new(Probability::ONE, Probability::ZERO).to_string(),
            "duplicate 100%"
        );
    }
}
