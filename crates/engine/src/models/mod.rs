//! Impairment models of a pipe: delay distributions, loss, duplication,
//! corruption and reordering, each a pure, self-contained model.
//!
//! Every model is split in two, as `STYLE.md` §7 asks: a *config* type that
//! is validated once at construction and is immutable afterwards, and a
//! *model* type that owns the mutable state (the stage's [`StageRng`], the
//! last correlated value, the Markov state, a packet counter). A model makes
//! one decision per packet; it never reads a clock (trace loss takes `now` as
//! an argument) and never allocates per packet.
//!
//! | file | models | source |
//! |---|---|---|
//! | [`delay`] | `delay MU SIGMA [CORR] distribution uniform\|normal\|pareto\|paretonormal`, empirical delay files | Linux `net/sched/sch_netem.c` (`tabledist`), iproute2 `netem/{normal,pareto,paretonormal}.c`, tc-netem(8); NetPath §2.2.5 (normal delay) |
//! | [`loss`] | `loss P [CORR]`, `loss gemodel p r 1-h 1-k`, `loss state p13 p31 p32 p23 p14`, trace-driven loss | `sch_netem.c` (`loss_event`, `loss_gilb_ell`, `loss_4state`); Salsano et al., "Definition of a general and intuitive loss model for packet networks and its implementation in the Netem module in the Linux kernel" (NetemCLG); KauNet (dummynet-revisited §2) |
//! | [`duplicate`] | `duplicate P [CORR]` | `sch_netem.c` (`netem_enqueue`); NetPath §2.2.5 |
//! | [`corrupt`] | `corrupt P [CORR]` (one bit), `ber B` (independent bit errors) | `sch_netem.c`; NetPath §2.2.1 (random bit errors) |
//! | [`reorder`] | `reorder P [CORR] [gap N]`, `reorder swap P` | `sch_netem.c`, tc-netem(8); NetPath §2.2.5 (swap the two head packets) |
//! | [`red`] | `red w_q/min_th/max_th/max_p`, `gred w_q/min_th/max_th/max_p` (AQM, on enqueue) | Floyd & Jacobson 1993; dummynet-revisited §3.5; FreeBSD `ip_dn_io.c` (`red_drops`) |
//! | [`codel`] | `codel target T interval I` (AQM, on dequeue) | RFC 8289; Linux `include/net/codel_impl.h` |
//! | [`wireless`] | `wireless 802.11b rate 11Mbit/s snr 20dB netload 1% collision 0.06 retries 7`, `profile 802.11b-11 cw 16` | PlanetLab-Dummynet emulation §4.1–§4.3; ns-3 `DsssErrorRateModel`, `NistErrorRateModel`; IEEE 802.11-2007 cl. 15, 18, 19 |
//! | [`timevarying`] | time-varying links: a Markov graph of link states with empirical dwell times | PlanetLab-Dummynet emulation §4.4, Fig. 10 |
//! | [`pie`] | `pie target T tupdate U alpha A beta B max_burst M` (AQM, on enqueue) | RFC 8033; Linux `net/sched/sch_pie.c` |
//!
//! Shared here: [`ModelError`] (what failed, the entry of the input it is
//! about if any, why), [`Probability`] (a probability in `[0, 1]` together with
//! netem's 32-bit scaled form) and [`CorrelatedRandom`], netem's
//! `get_crandom`, which every netem-style `CORR` argument uses.
//!
//! What this module deliberately does not do: parse text of any kind (the
//! command language, and the files it names: distribution files, loss and
//! bandwidth traces, MAC profiles, Markov graphs; `crates/lang` reads them
//! with its one unit layer and builds these configs through their typed,
//! validating constructors), hold packets or decide where a duplicated or
//! reordered packet goes (the pipe does), or read files.

use core::fmt;

use rand::RngCore;

use crate::rng::StageRng;

pub mod accounting;
pub mod burst;
pub mod channel;
pub mod codel;
pub mod corrupt;
pub mod delay;
pub mod duplicate;
pub mod loss;
pub mod pie;
pub mod profile;
pub mod red;
pub mod reorder;
pub mod slot;
pub mod timevarying;
pub mod trace_bw;
pub mod wireless;

#[cfg(test)]
mod stats_test_util;

pub use accounting::{Accounting, NetemOverhead};
pub use burst::{Burst, BurstConfig};
pub use codel::{Codel, CodelConfig};
pub use corrupt::{flip_bit, BitErrorRate, BitErrors, CorruptConfig, CorruptModel, NetemCorrupt};
pub use delay::{DelayDist, DelayModel, Distribution, EmpiricalDelay, NetemTable};
pub use duplicate::{DuplicateConfig, DuplicateModel};
pub use loss::{
    FourState, GilbertElliott, LossConfig, LossModel, TraceEntry, TraceLoss, UniformLoss,
};
pub use pie::{Pie, PieConfig};
pub use profile::{Airtime, Profile, ProfileBuilder, ProfileModel, ProfilePoint, ProfileSampling};
pub use red::{QueueMeasure, Red, RedConfig, RedVariant};
pub use reorder::{NetemReorder, ReorderConfig, ReorderDecision, SwapConfig, SwapReorder};
pub use slot::{SlotConfig, SlotDelay, SlotModel};
pub use timevarying::{Dwell, GraphState, MarkovGraph, StateParams, TimeVarying};
pub use trace_bw::{BwTrace, TraceLink};
pub use wireless::{
    Attempts, MacTiming, Modulation, PerTable, Preamble, Standard, WirelessConfig, WirelessModel,
    WirelessStats,
};

/// Why a model's configuration was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelError {
    /// What was being built, e.g. `"empirical delay"`, `"loss trace"`.
    pub what: &'static str,
    /// The 0-based position, in a constructor's input, of the entry the
    /// error is about (a sample, a CDF point, a timestamp, a state), so
    /// that a reader of a file can name the entry's line.
    pub index: Option<usize>,
    /// What is wrong, in the user's words.
    pub message: String,
}

impl ModelError {
    /// An error not tied to an entry (a bad parameter).
    pub fn new(what: &'static str, message: impl Into<String>) -> ModelError {
        ModelError {
            what,
            index: None,
            message: message.into(),
        }
    }

    /// An error about entry `index` (0-based) of a constructor's input.
    pub fn at(what: &'static str, index: usize, message: impl Into<String>) -> ModelError {
        ModelError {
            what,
            index: Some(index),
            message: message.into(),
        }
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.what, self.message)
    }
}

impl std::error::Error for ModelError {}

/// A probability in `[0, 1]`, kept both as given and in netem's scaled form.
///
/// iproute2 (`tc/q_netem.c`, `set_percent`) sends a probability to the kernel
/// as `rint(p · (2³² − 1))`, and `sch_netem.c` decides "event" when that value
/// is `>=` a 32-bit random number, so the exact event probability is
/// `(scaled + 1) / 2³²` for `p > 0` and exactly 0 for `p = 0`. The models
/// compare against [`Probability::scaled`] to match netem decision for
/// decision; [`Probability::get`] is for analytical formulas and display.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Probability {
    p: f64,
    scaled: u32,
}

impl Probability {
    /// Never.
    pub const ZERO: Probability = Probability { p: 0.0, scaled: 0 };
    /// Always.
    pub const ONE: Probability = Probability {
        p: 1.0,
        scaled: u32::MAX,
    };

    /// A probability `p`, which must be finite and in `[0, 1]`.
    pub fn new(p: f64) -> Result<Probability, ModelError> {
        if !p.is_finite() || !(0.0..=1.0).contains(&p) {
            return Err(ModelError::new(
                "probability",
                format!("{p} is not in [0, 1]"),
            ));
        }
        let scaled = (p * u32::MAX as f64).round() as u32;
        Ok(Probability { p, scaled })
    }

    /// A probability given in percent (`5` for `5%`), in `[0, 100]`.
    pub fn from_percent(percent: f64) -> Result<Probability, ModelError> {
        if !percent.is_finite() || !(0.0..=100.0).contains(&percent) {
            return Err(ModelError::new(
                "probability",
                format!("{percent}% is not in [0%, 100%]"),
            ));
        }
        Probability::new(percent / 100.0)
    }

    /// The probability as given, in `[0, 1]`.
    #[inline]
    pub fn get(self) -> f64 {
        self.p
    }

    /// netem's 32-bit form, `rint(p · (2³² − 1))`.
    #[inline]
    pub fn scaled(self) -> u32 {
        self.scaled
    }

    /// True for the probability 0 (the model is off).
    #[inline]
    pub fn is_zero(self) -> bool {
        self.scaled == 0
    }

    /// `1 − p`, as netem computes it for iproute2's `1-h` (`UINT32_MAX − x`).
    pub fn complement(self) -> Probability {
        Probability {
            p: 1.0 - self.p,
            scaled: u32::MAX - self.scaled,
        }
    }
}

impl fmt::Display for Probability {
    /// In percent, as tc prints it: `5%`, `0.1%` (at most 6 decimals, so
    /// `0.07` prints as `7%`, not `7.000000000000001%`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = format!("{:.6}", self.p * 100.0);
        let s = s.trim_end_matches('0').trim_end_matches('.');
        write!(f, "{s}%")
    }
}

/// netem's correlated random number generator (`get_crandom` in
/// `sch_netem.c`).
///
/// With correlation `ρ` (scaled to 32 bits as `rho`), each call draws a fresh
/// uniform 32-bit `U` and returns
/// `answer = (U · (2³² − (rho+1)) + last · (rho+1)) >> 32`, i.e.
/// `next = (1 − ρ)·U + ρ·last`, and remembers `answer` as `last`. With `ρ = 0`
/// it returns `U` itself.
///
/// This is netem's known-flawed approximation, reproduced on purpose: it is an
/// exponential smoothing of uniforms, so for `ρ > 0` the output is no longer
/// uniform (its variance shrinks by `(1 − ρ)/(1 + ρ)` and it piles up around
/// ½). A `loss 5% 25%` therefore loses fewer than 5 % of the packets, and the
/// effective correlation of the thresholded events is much weaker than `ρ`.
/// tc-netem(8) warns about this; the Gilbert-Elliott and 4-state loss models
/// were added to netem precisely because of it.
///
/// `last` starts as a random value (netem uses `get_random_u32()`); here it is
/// drawn from the stage's generator so runs are reproducible.
#[derive(Clone, Debug)]
pub struct CorrelatedRandom {
    /// `ρ` scaled to 32 bits.
    rho: u32,
    /// The previous output (not the previous `U`).
    last: u32,
}

impl CorrelatedRandom {
    /// A generator with correlation `rho`; the initial `last` is drawn from `rng`.
    pub fn new(rho: Probability, rng: &mut StageRng) -> CorrelatedRandom {
        CorrelatedRandom {
            rho: rho.scaled(),
            last: rng.next_u32(),
        }
    }

    /// The correlation in use.
    pub fn rho_scaled(&self) -> u32 {
        self.rho
    }

    /// The next (correlated) 32-bit value.
    #[inline]
    pub fn next_u32(&mut self, rng: &mut StageRng) -> u32 {
        let value = rng.next_u32() as u64;
        if self.rho == 0 {
            return value as u32;
        }
        let rho = self.rho as u64 + 1;
        // value·(2³²−rho) + last·rho < 2⁶⁴ because rho ≤ 2³², so no overflow.
        let answer = (value * ((1u64 << 32) - rho) + self.last as u64 * rho) >> 32;
        self.last = answer as u32;
        self.last
    }

    /// netem's `p && p >= get_crandom()`: true with probability ≈ `p` (for
    /// `ρ = 0` exactly `(scaled + 1)/2³²`). A zero probability draws nothing,
    /// as netem short-circuits.
    #[inline]
    pub fn chance(&mut self, p: Probability, rng: &mut StageRng) -> bool {
        !p.is_zero() && p.scaled() >= self.next_u32(rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_from_seed;

    /// Pass proves: probabilities outside [0, 1] are rejected and netem's
    /// 32-bit scaling (rint(p·UINT32_MAX)) is used.
    #[test]
    fn probability_validates_and_scales_like_iproute2() {
        assert!(Probability::new(-0.1).is_err());
        assert!(Probability::new(1.1).is_err());
        assert!(Probability::new(f64::NAN).is_err());
        assert!(Probability::from_percent(101.0).is_err());
        assert_eq!(Probability::new(1.0).map(|p| p.scaled()), Ok(u32::MAX));
        assert_eq!(Probability::new(0.5).map(|p| p.scaled()), Ok(2_147_483_648));
        assert_eq!(Probability::from_percent(25.0).map(|p| p.get()), Ok(0.25));
        assert_eq!(Probability::ONE.complement().scaled(), 0);
    }

    /// Pass proves: with ρ = 0 the correlated generator is the plain stream,
    /// and with ρ > 0 it follows netem's fixed-point formula exactly.
    #[test]
    fn crandom_matches_netem_formula() {
        let mut rng = rng_from_seed(9);
        let mut plain = rng_from_seed(9);
        let mut c = CorrelatedRandom::new(Probability::ZERO, &mut rng);
        let _ = plain.next_u32();
        for _ in 0..100 {
            assert_eq!(c.next_u32(&mut rng), plain.next_u32());
        }
        let rho = Probability::new(0.5).unwrap_or(Probability::ZERO);
        let mut rng = rng_from_seed(10);
        let mut reference = rng_from_seed(10);
        let mut c = CorrelatedRandom::new(rho, &mut rng);
        let mut last = reference.next_u32() as u64;
        for _ in 0..100 {
            let v = reference.next_u32() as u64;
            let r = rho.scaled() as u64 + 1;
            last = (v * ((1u64 << 32) - r) + last * r) >> 32;
            assert_eq!(c.next_u32(&mut rng) as u64, last);
        }
    }

    /// Pass proves: errors say what was being built and why, and keep the
    /// index of the entry they are about.
    #[test]
    fn model_error_display() {
        let e = ModelError::at("loss trace", 3, "bad");
        assert_eq!(
            (e.to_string(), e.index),
            ("loss trace: bad".to_string(), Some(3))
        );
        assert_eq!(ModelError::new("ber", "bad").to_string(), "ber: bad");
    }
}
