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
