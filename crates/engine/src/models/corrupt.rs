//! Corruption: netem's `corrupt P [CORR]` and a bit error rate `ber B`.
//!
//! Sources: Linux `net/sched/sch_netem.c` (`netem_enqueue`: "Randomized
//! packet corruption"), tc-netem(8); NetPath §2.2.1 ("the ability to cause
//! random bit errors in packets").
//!
//! * [`NetemCorrupt`] — `corrupt P [CORR]`: with probability `P` (netem's
//!   correlated draw) one bit of the packet is flipped, chosen as netem
//!   does: a byte uniformly among the packet's bytes, then a bit uniformly
//!   among its 8 (`data[rand % len] ^= 1 << (rand % 8)`). netem flips within
//!   the linear header area of the skb; pipelab within the whole frame.
//! * [`BitErrors`] — `ber B`: every bit is flipped independently with
//!   probability `B`, so a packet of `L` bits is errored with probability
//!   `1 − (1 − B)^L` and carries `Binomial(L, B)` errors. Positions are drawn
//!   by geometric skips (the gap to the next error is `⌊ln U / ln(1 − B)⌋`),
//!   so a packet costs O(errors + 1) random draws, not O(bits).
//!
//! Bit index `i` of a frame is bit `i mod 8` (0 = least significant, netem's
//! `1 << k`) of byte `i / 8`; [`flip_bit`] applies one. When the engine has
//! no frame bytes (synthetic traffic), [`CorruptModel::corrupt_len`] makes
//! the same decisions from the length alone, drawing the same random
//! numbers, so a run with and without buffers takes the same decisions.

use core::fmt;

use rand::{Rng, RngCore};

use crate::models::{CorrelatedRandom, ModelError, Probability};
use crate::rng::StageRng;

/// Flips bit `bit` of `frame` (bit `bit % 8` of byte `bit / 8`). Returns
/// false, changing nothing, if the bit is outside the frame.
#[inline]
pub fn flip_bit(frame: &mut [u8], bit: u64) -> bool {
    match usize::try_from(bit / 8).ok().and_then(|i| frame.get_mut(i)) {
        Some(byte) => {
            *byte ^= 1 << (bit % 8);
            true
        }
        None => false,
    }
}

/// `corrupt P [CORR]`: one random bit per corrupted packet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NetemCorrupt {
    /// Probability that a packet is corrupted.
    pub p: Probability,
    /// netem correlation with the previous draw.
    pub correlation: Probability,
}

/// `ber B`: independent bit errors with probability `B` per bit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BitErrorRate {
    ber: f64,
    /// `ln(1 − B)`, `−∞` for `B = 1`, 0 for `B = 0`.
    ln_keep: f64,
}

impl BitErrorRate {
    /// A bit error rate `ber ∈ [0, 1]`.
    pub fn new(ber: f64) -> Result<BitErrorRate, ModelError> {
        if !ber.is_finite() || !(0.0..=1.0).contains(&ber) {
            return Err(ModelError::new(
                "ber",
                format!("bit error rate {ber} is not in [0, 1]"),
            ));
        }
        Ok(BitErrorRate {
            ber,
            ln_keep: (-ber).ln_1p(),
        })
    }

    /// The rate.
    pub fn get(self) -> f64 {
        self.ber
    }

    /// Probability that a packet of `len_bits` bits has at least one error,
    /// `1 − (1 − B)^L`.
    pub fn packet_error_rate(self, len_bits: u64) -> f64 {
        -(self.ln_keep * len_bits as f64).exp_m1()
    }
}

/// A pipe's corruption configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CorruptConfig {
    /// `corrupt P [CORR]`.
    Netem(NetemCorrupt),
    /// `ber B`.
    Ber(BitErrorRate),
}

impl fmt::Display for CorruptConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CorruptConfig::Netem(c) if c.correlation.is_zero() => write!(f, "corrupt {}", c.p),
            CorruptConfig::Netem(c) => write!(f, "corrupt {} {}", c.p, c.correlation),
            CorruptConfig::Ber(b) => write!(f, "ber {:e}", b.ber),
        }
    }
}

/// The positions of the bit errors in one packet, ascending; drawn lazily.
///
/// Drain it to the end to keep the generator in step with
/// [`CorruptModel::corrupt_len`] (which does).
pub struct BitErrors<'a> {
    rng: &'a mut StageRng,
    ln_keep: f64,
    /// The first bit not yet decided.
    next: u64,
    len_bits: u64,
}

impl Iterator for BitErrors<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.next >= self.len_bits || self.ln_keep == 0.0 {
            return None;
        }
        // Geometric skip: the number of clean bits before the next error.
        // U ∈ (0, 1] and ln(1 − B) ∈ [−∞, 0), so the quotient is ≥ 0, +∞
        // for very small B, and never NaN (B = 1 gives 0/−∞ = −0: every bit).
        let u = 1.0 - self.rng.gen::<f64>();
        let skip = u.ln() / self.ln_keep;
        let remaining = (self.len_bits - self.next) as f64;
        if skip >= remaining {
            self.next = self.len_bits;
            return None;
        }
        let pos = self.next + skip as u64;
        self.next = pos + 1;
        Some(pos)
    }
}

/// A pipe's corruption model.
#[derive(Clone, Debug)]
pub struct CorruptModel {
    cfg: CorruptConfig,
    corr: CorrelatedRandom,
    rng: StageRng,
}

impl CorruptModel {
    /// A model drawing from `rng` (the stage's own generator).
    pub fn new(cfg: CorruptConfig, mut rng: StageRng) -> CorruptModel {
        let rho = match cfg {
            CorruptConfig::Netem(c) => c.correlation,
            CorruptConfig::Ber(_) => Probability::ZERO,
        };
        let corr = CorrelatedRandom::new(rho, &mut rng);
        CorruptModel { cfg, corr, rng }
    }

    /// The configuration.
    pub fn config(&self) -> &CorruptConfig {
        &self.cfg
    }

    /// `corrupt P`: the bit to flip in a packet of `len_bytes` bytes, if
    /// any (none for an empty packet, which still consumes the draw; none,
    /// drawing nothing, if the model is `ber`).
    pub fn netem_bit(&mut self, len_bytes: usize) -> Option<u64> {
        let CorruptConfig::Netem(c) = self.cfg else {
            return None;
        };
        if !self.corr.chance(c.p, &mut self.rng) || len_bytes == 0 {
            return None;
        }
        let byte = self.rng.gen_range(0..len_bytes as u64);
        let bit = (self.rng.next_u32() % 8) as u64;
        Some(byte * 8 + bit)
    }

    /// `ber B`: the bit errors of a packet of `len_bits` bits, ascending
    /// (none, drawing nothing, if the model is `corrupt P`).
    pub fn bit_errors(&mut self, len_bits: u64) -> BitErrors<'_> {
        let ln_keep = match self.cfg {
            CorruptConfig::Ber(b) => b.ln_keep,
            CorruptConfig::Netem(_) => 0.0, // "no errors"
        };
        BitErrors {
            rng: &mut self.rng,
            ln_keep,
            next: 0,
            len_bits,
        }
    }

    /// Corrupts `frame` in place; returns the number of bits flipped (0 if
    /// the packet is left intact).
    pub fn corrupt(&mut self, frame: &mut [u8]) -> u64 {
        match self.cfg {
            CorruptConfig::Netem(_) => match self.netem_bit(frame.len()) {
                Some(bit) => flip_bit(frame, bit) as u64,
                None => 0,
            },
            CorruptConfig::Ber(_) => {
                let len_bits = frame.len() as u64 * 8;
                let mut flipped = 0;
                for bit in self.bit_errors(len_bits) {
                    flipped += flip_bit(frame, bit) as u64;
                }
                flipped
            }
        }
    }

    /// The same decision as [`CorruptModel::corrupt`] for a packet of
    /// `len_bytes` bytes without its bytes: the number of bits that would
    /// be flipped.
    pub fn corrupt_len(&mut self, len_bytes: usize) -> u64 {
        match self.cfg {
            CorruptConfig::Netem(_) => self.netem_bit(len_bytes).is_some() as u64,
            CorruptConfig::Ber(_) => self.bit_errors(len_bytes as u64 * 8).count() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::stats_test_util::assert_binomial_3sigma;
    use crate::rng::{stage_rng, StageKind};

    fn ber_model(ber: f64, seed: u64) -> CorruptModel {
        let b = BitErrorRate::new(ber).expect("valid");
        CorruptModel::new(
            CorruptConfig::Ber(b),
            stage_rng(seed, StageKind::Corrupt, 1),
        )
    }

    fn netem_model(p: f64, seed: u64) -> CorruptModel {
        let c = NetemCorrupt {
            p: Probability::new(p).expect("valid"),
            correlation: Probability::ZERO,
        };
        CorruptModel::new(
            CorruptConfig::Netem(c),
            stage_rng(seed, StageKind::Corrupt, 1),
        )
    }

    /// Pass proves: with BER 1e-5, the packet error rate over 100k packets
    /// is within 3σ of 1 − (1 − BER)^L for 100-byte and 1500-byte packets
    /// (≈0.8 % and ≈11.3 %), and the mean number of flipped bits per packet
    /// is L·BER within 3σ (Poisson approximation).
    #[test]
    fn ber_packet_error_rate() {
        let b = BitErrorRate::new(1e-5).expect("valid");
        for (len, seed) in [(100usize, 1u64), (1500, 2)] {
            let mut m = ber_model(1e-5, seed);
            let n = 100_000u64;
            let mut frame = vec![0u8; len];
            let (mut errored, mut bits) = (0u64, 0u64);
            for _ in 0..n {
                frame.fill(0);
                let flipped = m.corrupt(&mut frame);
                let ones: u64 = frame.iter().map(|x| x.count_ones() as u64).sum();
                assert_eq!(flipped, ones, "returned count = bits actually flipped");
                errored += (flipped > 0) as u64;
                bits += flipped;
            }
            let l = len as u64 * 8;
            let per = b.packet_error_rate(l);
            assert!((per - (1.0 - (1.0f64 - 1e-5).powi(l as i32))).abs() < 1e-12);
            assert_binomial_3sigma(errored, n, per, &format!("PER at {len} B"));
            let mean = (n * l) as f64 * 1e-5;
            assert!(
                (bits as f64 - mean).abs() < 3.0 * mean.sqrt(),
                "{bits} bits vs {mean}"
            );
        }
    }

    /// Pass proves: positions are ascending, in range and uniform over the
    /// packet (first vs second half within 3σ), so the geometric skip has
    /// no drift; BER 0 flips nothing and BER 1 flips every bit.
    #[test]
    fn ber_positions_are_uniform_and_edges_exact() {
        let mut m = ber_model(1e-3, 3);
        let (mut first, mut total) = (0u64, 0u64);
        for _ in 0..20_000 {
            let pos: Vec<u64> = m.bit_errors(8000).collect();
            assert!(pos.windows(2).all(|w| w[0] < w[1]));
            assert!(pos.iter().all(|&p| p < 8000));
            first += pos.iter().filter(|&&p| p < 4000).count() as u64;
            total += pos.len() as u64;
        }
        assert_binomial_3sigma(first, total, 0.5, "first half");
        let mut zero = ber_model(0.0, 4);
        let mut frame = [0u8; 64];
        assert_eq!(zero.corrupt(&mut frame), 0);
        assert_eq!(frame, [0u8; 64]);
        let mut one = ber_model(1.0, 4);
        assert_eq!(one.corrupt(&mut frame), 512);
        assert_eq!(frame, [0xffu8; 64]);
        assert!(BitErrorRate::new(1.5).is_err() && BitErrorRate::new(f64::NAN).is_err());
    }

    /// Pass proves: `corrupt 10%` flips exactly one bit in 10 % of packets
    /// (3σ), every byte and every bit position gets hit, and empty frames
    /// are never touched.
    #[test]
    fn netem_corrupt_flips_one_bit() {
        let mut m = netem_model(0.1, 5);
        let n = 100_000u64;
        let mut frame = [0u8; 16];
        let (mut corrupted, mut seen) = (0u64, [0u32; 128]);
        for _ in 0..n {
            frame.fill(0);
            let k = m.corrupt(&mut frame);
            let ones: u32 = frame.iter().map(|x| x.count_ones()).sum();
            assert_eq!(k as u32, ones);
            assert!(k <= 1);
            if k == 1 {
                corrupted += 1;
                let i = frame.iter().position(|&x| x != 0).expect("a byte changed");
                seen[i * 8 + frame[i].trailing_zeros() as usize] += 1;
            }
        }
        assert_binomial_3sigma(corrupted, n, 0.1, "corrupt 10%");
        assert!(seen.iter().all(|&c| c > 0), "some bit never chosen");
        let mut always = netem_model(1.0, 6);
        assert_eq!(always.corrupt(&mut []), 0);
        assert!(always.netem_bit(1500).is_some_and(|b| b < 12_000));
        assert_eq!(always.bit_errors(12_000).count(), 0, "not a ber model");
    }

    /// Pass proves: deciding from the length alone takes the same decisions
    /// and draws as corrupting the bytes (runs with and without buffers
    /// agree), for both models.
    #[test]
    fn length_only_matches_buffer() {
        for (mut a, mut b) in [
            (ber_model(1e-4, 7), ber_model(1e-4, 7)),
            (netem_model(0.2, 8), netem_model(0.2, 8)),
        ] {
            let mut frame = vec![0u8; 1000];
            for _ in 0..10_000 {
                assert_eq!(a.corrupt(&mut frame), b.corrupt_len(1000));
            }
        }
    }

    /// Pass proves: the same seed reproduces the flipped positions bit for
    /// bit and another seed does not.
    #[test]
    fn seeds_reproduce() {
        let run = |seed| {
            let mut m = ber_model(1e-3, seed);
            let mut frame = vec![0u8; 1500];
            for _ in 0..100 {
                m.corrupt(&mut frame);
            }
            frame
        };
        assert_eq!(run(9), run(9));
        assert_ne!(run(9), run(10));
    }

    /// Pass proves: flip_bit addresses bit i%8 of byte i/8 and ignores
    /// out-of-range bits.
    #[test]
    fn flip_bit_addressing() {
        let mut f = [0u8; 2];
        assert!(flip_bit(&mut f, 9));
        assert_eq!(f, [0, 0b10]);
        assert!(!flip_bit(&mut f, 16));
        assert_eq!(f, [0, 0b10]);
    }
}
