//! Seeded, per-stage random number generators.
//!
//! Every random decision in pipelab is taken by a stage (a pipe's loss model,
//! its delay distribution, a classifier rule's `prob`) from a generator that
//! the stage owns, seeded from `(run seed, stage id)`. The same seed and the
//! same arrivals therefore give the same decisions bit for bit, however many
//! other stages exist or in which order they were created.
//!
//! The generator is PCG-64 (MCG variant, `rand_pcg::Pcg64Mcg`): small (16
//! bytes of state), fast, and with a value stream fixed by its specification,
//! so results do not change with the version of the crate.

use rand::SeedableRng;

/// The generator every stochastic stage owns.
pub type StageRng = rand_pcg::Pcg64Mcg;

/// Well-known stage kinds, mixed into the stage id so that, say, the loss
/// model and the delay model of the same pipe draw independent streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum StageKind {
    /// A pipe's delay distribution.
    Delay = 1,
    /// A pipe's loss model.
    Loss = 2,
    /// Duplication.
    Duplicate = 3,
    /// Reordering.
    Reorder = 4,
    /// Corruption and bit errors.
    Corrupt = 5,
    /// Active queue management (RED, PIE).
    Aqm = 6,
    /// A link-server extra (MAC profile, wireless channel).
    Link = 7,
    /// A classifier rule's `prob`.
    Rule = 8,
    /// A synthetic traffic source.
    Traffic = 9,
    /// A time-varying link's walk over its states, and its state losses.
    Variation = 10,
}

/// SplitMix64 finaliser: a bijective 64-bit mixer (Steele et al. 2014).
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The generator of stage `(kind, id)` in a run seeded with `seed`.
pub fn stage_rng(seed: u64, kind: StageKind, id: u64) -> StageRng {
    let a = mix64(seed ^ mix64(((kind as u64) << 56) ^ id));
    let b = mix64(a ^ 0x5851_f42d_4c95_7f2d);
    let state = ((a as u128) << 64) | b as u128;
    StageRng::new(state | 1)
}

/// A generator seeded directly from a 64-bit value (tests, tools).
pub fn rng_from_seed(seed: u64) -> StageRng {
    StageRng::seed_from_u64(seed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn same_seed_and_stage_give_the_same_stream() {
        let mut a = stage_rng(42, StageKind::Loss, 7);
        let mut b = stage_rng(42, StageKind::Loss, 7);
        for _ in 0..100 {
            assert_eq!(a.gen::<u64>(), b.gen::<u64>());
        }
    }

    /// A pass proves the streams of different stages, kinds of stage and
    /// seeds are independent: the correlation of 100 000 paired uniform
    /// draws stays below 0.01 in magnitude (independent streams give
    /// |r| ~ 0.003).
    #[test]
    fn streams_of_stages_kinds_and_seeds_are_uncorrelated() {
        let corr = |mut a: StageRng, mut b: StageRng| -> f64 {
            let n = 100_000;
            let (mut sx, mut sy, mut sxx, mut syy, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for _ in 0..n {
                let (x, y): (f64, f64) = (a.gen(), b.gen());
                sx += x;
                sy += y;
                sxx += x * x;
                syy += y * y;
                sxy += x * y;
            }
            let n = n as f64;
            (sxy - sx * sy / n) / ((sxx - sx * sx / n) * (syy - sy * sy / n)).sqrt()
        };
        let pairs = [
            (
                "pipes 1 and 2",
                (1, StageKind::Loss, 1),
                (1, StageKind::Loss, 2),
            ),
            (
                "loss and delay",
                (1, StageKind::Loss, 1),
                (1, StageKind::Delay, 1),
            ),
            (
                "rule and pipe",
                (1, StageKind::Rule, 100),
                (1, StageKind::Loss, 100),
            ),
            (
                "seeds 1 and 2",
                (1, StageKind::Loss, 1),
                (2, StageKind::Loss, 1),
            ),
            (
                "seed and id swapped",
                (1, StageKind::Loss, 2),
                (2, StageKind::Loss, 1),
            ),
            (
                "traffic 0 and 1",
                (7, StageKind::Traffic, 0),
                (7, StageKind::Traffic, 1),
            ),
        ];
        for (what, (s1, k1, i1), (s2, k2, i2)) in pairs {
            let r = corr(stage_rng(s1, k1, i1), stage_rng(s2, k2, i2));
            assert!(r.abs() < 0.01, "{what}: correlation {r}");
        }
    }

    #[test]
    fn different_stages_give_different_streams() {
        let mut a = stage_rng(42, StageKind::Loss, 7);
        let mut b = stage_rng(42, StageKind::Delay, 7);
        let mut c = stage_rng(42, StageKind::Loss, 8);
        let x: u64 = a.gen();
        assert_ne!(x, b.gen::<u64>());
        assert_ne!(x, c.gen::<u64>());
    }
}
