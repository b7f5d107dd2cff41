//! Dummynet's MAC-overhead profile (`ipfw pipe N config ... profile FILE`):
//! the extra airtime a packet keeps the channel busy for, drawn from an
//! empirical CDF, and the chance the MAC gives up and loses the packet.
//!
//! Sources: Carbone and Rizzo, "Dummynet revisited" (CCR 2010) §3.7 and its
//! Figure 5; FreeBSD `sbin/ipfw/dummynet.c` (`load_extra_delays`, the `ED_*`
//! tokens) and `sys/netpfil/ipfw/ip_dn_io.c` (`extra_bits`).
//!
//! # The model
//! A packet of `l` bits keeps the link busy for `l/B` plus an *extra
//! airtime* `X` (busy channel, contention, backoff, preambles, link-level
//! ACKs and retransmissions). `X` follows a piecewise-linear CDF given as
//! corner points `(prob, delay)`. A draw whose probability lies above the
//! *loss level* `L` is a packet the MAC gave up on: it still occupies the
//! channel (dummynet marks it `DIR_DROP` and frees it only when it leaves
//! the link), then it is lost. Units: delays in [`Duration`] (integer ns);
//! probabilities in `[0, 1]`.
//!
//! # Building a profile ([`Profile::builder`])
//! A profile has an optional name, an optional bandwidth (the link rate it
//! was measured at; a pipe without `bw` takes it), a loss level `L ∈ [0,
//! 1]` (default 1, no loss), the size of dummynet's table `samples ∈
//! 1..=1024` (default 100), and 2 to 1024 corners `(prob, delay)`, in any
//! order: they are sorted by probability, then delay, and the delays must
//! then not decrease (a CDF; pipelab rejects what ipfw would silently
//! accept).
//!
//! A profile file (ipfw's format: `name`, `bw`/`bandwidth`, `loss-level`,
//! `samples`, then `prob delay` and the points, a bare delay being
//! milliseconds as in the kernel, which computes `bits =
//! samples[i]·bw/1000`) is text: `crates/lang` reads it
//! (`files::parse_profile`) with the language's units and builds the
//! profile with the builder. The paper's example says `prob delay # delay
//! in us` but writes bare numbers, which ipfw and the kernel read as
//! milliseconds; write `100us` to mean microseconds.
//!
//! # Sampling
//! [`ProfileSampling::Exact`] (the default) inverts the piecewise-linear CDF
//! exactly: draw `u ~ U[0, 1)`; `u ≥ L` means lost; otherwise `X = Q(u)`,
//! where `Q` interpolates linearly between consecutive corners, `Q(u) = D₀`
//! for `u < P₀` (the first corner carries an atom of mass `P₀`) and
//! `Q(u) = D_last` for `u ≥ P_last` (the curve stays at its largest delay up
//! to the loss level). This is the limit of dummynet's table as `samples`
//! grows, without its quantisation.
//!
//! [`ProfileSampling::DummynetTable`] reproduces the kernel: ipfw fills a
//! table of `samples` entries, entry `ix` for `ix ∈ [⌊P_i·N⌋, ⌊P_{i+1}·N⌋)`
//! being the linear interpolation `(ix − c)/m` of the segment `i` (so an
//! entry may be extrapolated slightly below a corner), entries outside the
//! corners staying 0; `loss_level = ⌊L·N⌋`; a packet draws `index =
//! random() mod N`, gets `table[index]` and is lost if `index ≥ loss_level`.
//! With few samples this is coarse (the paper's own `samples 5` example loses
//! 20 % of packets: `⌊0.99·5⌋ = 4`). One difference: the kernel stores the
//! table as whole milliseconds; pipelab keeps nanoseconds (clamped at 0).
//!
//! What this module does not do: add the extra airtime to the transmission
//! time or drop the packet (the link server does, with
//! [`Airtime`]); dummynet converts the airtime to bits at the link rate, so
//! it also consumes `burst` credit (see `burst.rs`).

use core::fmt;

use rand::Rng;

use crate::models::{ModelError, Probability};
use crate::rng::StageRng;
use crate::time::{Duration, Rate};

const WHAT: &str = "profile";

/// Largest `samples` and largest number of points (`ED_MAX_SAMPLES_NO`).
pub const MAX_SAMPLES: usize = 1024;
/// `samples` when the file gives none (ipfw's default).
pub const DEFAULT_SAMPLES: usize = 100;

/// How a draw maps to an extra airtime.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProfileSampling {
    /// Invert the piecewise-linear CDF exactly (see the module docs).
    #[default]
    Exact,
    /// dummynet's table of `samples` entries, as the kernel draws it.
    DummynetTable,
}

/// One corner of the CDF: cumulative probability and extra airtime.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProfilePoint {
    /// Cumulative probability in `[0, 1]`.
    pub prob: f64,
    /// Extra airtime at that probability.
    pub delay: Duration,
}

/// A validated MAC-overhead profile. Immutable; built with
/// [`Profile::builder`].
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    name: Option<String>,
    bandwidth: Option<Rate>,
    loss_level: f64,
    samples: usize,
    /// Sorted by probability, delays non-decreasing, at least 2.
    points: Vec<ProfilePoint>,
    /// dummynet's table in ns (`samples` entries).
    table: Vec<u64>,
    /// `⌊loss_level · samples⌋`.
    table_loss_index: usize,
    sampling: ProfileSampling,
}

/// What a packet costs the channel beyond `l/B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Airtime {
    /// The packet is delivered; the channel stays busy this much longer.
    Extra(Duration),
    /// The MAC gave up: the channel is busy for the transmission plus
    /// `extra`, then the packet is dropped (dummynet's `DIR_DROP`).
    Lost {
        /// Extra airtime spent before giving up.
        extra: Duration,
    },
}

impl Airtime {
    /// The extra airtime, lost or not.
    pub fn extra(self) -> Duration {
        match self {
            Airtime::Extra(d) | Airtime::Lost { extra: d } => d,
        }
    }

    /// True when the packet is lost.
    pub fn is_lost(self) -> bool {
        matches!(self, Airtime::Lost { .. })
    }
}

impl Profile {
    /// A builder of a profile from typed values (see [`ProfileBuilder`]).
    pub fn builder() -> ProfileBuilder {
        ProfileBuilder::default()
    }

    /// Builds the table and the loss index from validated parts.
    fn build(
        name: Option<String>,
        bandwidth: Option<Rate>,
        loss_level: f64,
        samples: usize,
        points: Vec<ProfilePoint>,
    ) -> Profile {
        // ipfw's interpolation, in ns instead of ms (module docs).
        let mut table = vec![0u64; samples];
        let n = samples as f64;
        for w in points.windows(2) {
            let (y1, x1) = (w[0].prob * n, w[0].delay.0 as f64);
            let (y2, x2) = (w[1].prob * n, w[1].delay.0 as f64);
            let stop = (y2 as usize).min(samples);
            let start = y1 as usize;
            for (ix, slot) in table.iter_mut().enumerate().take(stop).skip(start) {
                *slot = if x1 == x2 {
                    x1 as u64
                } else {
                    let m = (y2 - y1) / (x2 - x1);
                    let c = y1 - m * x1;
                    ((ix as f64 - c) / m).round().max(0.0) as u64
                };
            }
        }
        Profile {
            name,
            bandwidth,
            loss_level,
            samples,
            points,
            table,
            table_loss_index: (loss_level * n) as usize,
            sampling: ProfileSampling::Exact,
        }
    }

    /// The same profile drawn with `sampling`.
    pub fn with_sampling(mut self, sampling: ProfileSampling) -> Profile {
        self.sampling = sampling;
        self
    }

    /// How draws are made.
    pub fn sampling(&self) -> ProfileSampling {
        self.sampling
    }

    /// The profile's `name`, if any.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The `bw`/`bandwidth` line, if any (ipfw sets the pipe's rate from it).
    pub fn bandwidth(&self) -> Option<Rate> {
        self.bandwidth
    }

    /// The loss level `L`.
    pub fn loss_level(&self) -> f64 {
        self.loss_level
    }

    /// The `samples` value (table size).
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// The corners, sorted.
    pub fn points(&self) -> &[ProfilePoint] {
        &self.points
    }

    /// dummynet's table (extra airtime per index), for inspection.
    pub fn dummynet_table(&self) -> impl Iterator<Item = Duration> + '_ {
        self.table.iter().map(|&ns| Duration(ns))
    }

    /// The exact quantile `Q(u)` of the piecewise-linear CDF, `u ∈ [0, 1]`.
    pub fn quantile(&self, u: f64) -> Duration {
        let pts = &self.points;
        // First corner with prob > u; the segment is (k−1, k).
        let k = pts.partition_point(|p| p.prob <= u);
        if k == 0 {
            return pts[0].delay;
        }
        if k == pts.len() {
            return pts[k - 1].delay;
        }
        let (a, b) = (pts[k - 1], pts[k]);
        // a.prob ≤ u < b.prob, so the width is positive.
        let frac = (u - a.prob) / (b.prob - a.prob);
        let span = (b.delay.0 - a.delay.0) as f64;
        Duration(a.delay.0 + (frac * span) as u64)
    }
}

/// Builds a [`Profile`] from typed values: each setter checks its value as
/// it is given (so the reader of a profile file, calling them line by line,
/// can say which line is wrong), [`ProfileBuilder::build`] checks the whole.
/// Absent values take ipfw's defaults: no name, no bandwidth, loss level 1
/// (no loss), [`DEFAULT_SAMPLES`] samples.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProfileBuilder {
    name: Option<String>,
    bandwidth: Option<Rate>,
    loss_level: Option<f64>,
    samples: Option<usize>,
    points: Vec<ProfilePoint>,
}

impl ProfileBuilder {
    /// Sets the label.
    pub fn name(&mut self, name: impl Into<String>) -> &mut Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the rate the profile was measured at (a pipe without `bw`
    /// takes it); it must be positive.
    pub fn bandwidth(&mut self, rate: Rate) -> Result<&mut Self, ModelError> {
        if rate.is_unlimited() {
            return Err(ModelError::new(WHAT, "bandwidth must be positive"));
        }
        self.bandwidth = Some(rate);
        Ok(self)
    }

    /// Sets the loss level `L`: draws at or above it are lost.
    pub fn loss_level(&mut self, level: Probability) -> &mut Self {
        self.loss_level = Some(level.get());
        self
    }

    /// Sets the size of dummynet's table, `1..=MAX_SAMPLES`.
    pub fn samples(&mut self, n: usize) -> Result<&mut Self, ModelError> {
        if n == 0 {
            return Err(ModelError::new(
                WHAT,
                "the number of samples must be positive",
            ));
        }
        if n > MAX_SAMPLES {
            return Err(ModelError::new(
                WHAT,
                format!("too many samples, maximum is {MAX_SAMPLES}"),
            ));
        }
        self.samples = Some(n);
        Ok(self)
    }

    /// Adds a corner of the CDF (in any order; at most [`MAX_SAMPLES`]).
    pub fn point(&mut self, prob: Probability, delay: Duration) -> Result<&mut Self, ModelError> {
        if self.points.len() >= MAX_SAMPLES {
            return Err(ModelError::at(
                WHAT,
                self.points.len(),
                format!("too many points, maximum is {MAX_SAMPLES}"),
            ));
        }
        self.points.push(ProfilePoint {
            prob: prob.get(),
            delay,
        });
        Ok(self)
    }

    /// The profile: at least 2 points, which sorted by probability (then
    /// delay) must have non-decreasing delays (a CDF); an error about a
    /// point names its index in the order the points were given.
    pub fn build(&self) -> Result<Profile, ModelError> {
        if self.points.len() < 2 {
            return Err(ModelError::new(WHAT, "too few points, need at least 2"));
        }
        let mut points: Vec<(ProfilePoint, usize)> = self
            .points
            .iter()
            .copied()
            .enumerate()
            .map(|(i, p)| (p, i))
            .collect();
        points.sort_by(|(a, _), (b, _)| a.prob.total_cmp(&b.prob).then(a.delay.cmp(&b.delay)));
        for w in points.windows(2) {
            let ((a, _), (b, index)) = (w[0], w[1]);
            if b.delay < a.delay {
                return Err(ModelError::at(
                    WHAT,
                    index,
                    format!(
                        "delay {} at probability {} is below {} at probability {}: \
                         delays must not decrease as the probability grows",
                        b.delay, b.prob, a.delay, a.prob
                    ),
                ));
            }
        }
        Ok(Profile::build(
            self.name.clone(),
            self.bandwidth,
            self.loss_level.unwrap_or(1.0),
            self.samples.unwrap_or(DEFAULT_SAMPLES),
            points.into_iter().map(|(p, _)| p).collect(),
        ))
    }
}

impl fmt::Display for Profile {
    /// The profile in ipfw's file format (which `crates/lang` reads back to
    /// an equal profile).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = &self.name {
            writeln!(f, "name {name}")?;
        }
        if let Some(bw) = self.bandwidth {
            writeln!(f, "bw {}bit/s", bw.bps())?;
        }
        writeln!(f, "loss-level {}", self.loss_level)?;
        writeln!(f, "samples {}", self.samples)?;
        writeln!(f, "prob delay")?;
        for p in &self.points {
            writeln!(f, "{} {}ns", p.prob, p.delay.0)?;
        }
        Ok(())
    }
}

/// A profile with its generator: one draw per transmitted packet.
#[derive(Clone, Debug)]
pub struct ProfileModel {
    profile: Profile,
    rng: StageRng,
}

impl ProfileModel {
    /// The model of `profile`, drawing from `rng` (a `StageKind::Link` stream).
    pub fn new(profile: Profile, rng: StageRng) -> ProfileModel {
        ProfileModel { profile, rng }
    }

    /// The profile in use.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The extra airtime of the next packet, and whether it is lost.
    pub fn draw(&mut self) -> Airtime {
        match self.profile.sampling {
            ProfileSampling::Exact => {
                let u: f64 = self.rng.gen();
                let extra = self.profile.quantile(u);
                if u >= self.profile.loss_level {
                    Airtime::Lost { extra }
                } else {
                    Airtime::Extra(extra)
                }
            }
            ProfileSampling::DummynetTable => {
                let index = self.rng.gen_range(0..self.profile.samples);
                let extra = Duration(self.profile.table[index]);
                if index >= self.profile.table_loss_index {
                    Airtime::Lost { extra }
                } else {
                    Airtime::Extra(extra)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::stats_test_util::{
        assert_binomial_3sigma, ks_critical_001, ks_statistic_with_atoms,
    };
    use crate::rng::rng_from_seed;

    fn ok<T>(r: Result<T, ModelError>) -> T {
        match r {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }

    fn pr(p: f64) -> Probability {
        ok(Probability::new(p))
    }

    /// A profile of `points` `(prob, delay in µs)`, with `samples`.
    fn profile(samples: usize, level: f64, points: &[(f64, u64)]) -> Result<Profile, ModelError> {
        let mut b = Profile::builder();
        b.samples(samples)?.loss_level(pr(level));
        for &(p, us) in points {
            b.point(pr(p), Duration::from_micros(us))?;
        }
        b.build()
    }

    /// The paper's example (§3.7), with the unit its comment intends
    /// (microseconds).
    fn paper() -> Profile {
        let mut b = Profile::builder();
        b.name("profile foo");
        ok(b.bandwidth(Rate::from_bps(2_000_000)));
        b.loss_level(pr(0.99));
        ok(b.samples(5));
        for (p, us) in [
            (0.2, 100),
            (0.4, 130),
            (0.5, 130),
            (0.8, 1500),
            (0.98, 2000),
        ] {
            ok(b.point(pr(p), Duration::from_micros(us)));
        }
        ok(b.build())
    }

    /// The piecewise-linear CDF `F(x) = P(Q(U) ≤ x)`, `U ~ U[0, 1)`.
    fn cdf(points: &[ProfilePoint], x: f64) -> f64 {
        let d = |i: usize| points[i].delay.0 as f64;
        // Last corner at or below x.
        let i = points.partition_point(|p| p.delay.0 as f64 <= x);
        if i == 0 {
            return 0.0;
        }
        let i = i - 1;
        if i == points.len() - 1 {
            return 1.0; // the mass above P_last sits at D_last
        }
        let (a, b) = (points[i], points[i + 1]);
        a.prob + (x - d(i)) / (d(i + 1) - d(i)) * (b.prob - a.prob)
    }

    /// Pass proves: the paper's example keeps what it is given (name,
    /// bandwidth, loss level, samples, points).
    #[test]
    fn paper_example_builds() {
        let p = paper();
        assert_eq!(p.name(), Some("profile foo"));
        assert_eq!(p.bandwidth(), Some(Rate::from_bps(2_000_000)));
        assert_eq!(p.loss_level(), 0.99);
        assert_eq!(p.samples(), 5);
        assert_eq!(p.points().len(), 5);
        assert_eq!(p.points()[3].delay, Duration::from_micros(1500));
    }

    /// Pass proves: the extra airtime of delivered packets follows the
    /// paper's piecewise-linear CDF (KS at α = 0.01, atoms at 100us, 130us and
    /// 2000us handled), and the loss rate is 1 − 0.99 within 3σ.
    #[test]
    fn paper_example_draws_follow_the_cdf_and_lose_one_percent() {
        let p = paper();
        let pts = p.points().to_vec();
        let level = p.loss_level();
        let mut model = ProfileModel::new(p, rng_from_seed(0x5eed));
        let n = 100_000;
        let mut xs = Vec::with_capacity(n);
        let mut lost = 0u64;
        for _ in 0..n {
            match model.draw() {
                Airtime::Extra(d) => xs.push(d.0 as f64),
                Airtime::Lost { extra } => {
                    lost += 1;
                    assert_eq!(extra, Duration::from_micros(2000));
                }
            }
        }
        assert_binomial_3sigma(lost, n as u64, 1.0 - level, "profile loss");
        // Delivered draws are U restricted to [0, L): F(x)/L, capped at 1.
        let cond = |x: f64| (cdf(&pts, x).min(level) / level).min(1.0);
        let d = ks_statistic_with_atoms(&mut xs, cond, |x| cond(x - 0.5));
        assert!(d < ks_critical_001(xs.len()), "KS D = {d}");
        // And a wrong CDF (delays scaled by 1.2) is rejected.
        let wrong = |x: f64| cond(x / 1.2);
        let d = ks_statistic_with_atoms(&mut xs, wrong, |x| wrong(x - 0.5));
        assert!(d > ks_critical_001(xs.len()), "KS D = {d}");
    }

    /// Pass proves: the table mode reproduces ipfw's interpolation and the
    /// kernel's `index >= (int)(L·N)` loss rule (ipfw's own example file).
    #[test]
    fn dummynet_table_matches_ipfw() {
        let ms = |p: f64, ms: u64| (p, ms * 1000);
        let p = ok(profile(
            100,
            0.86,
            &[
                ms(0.0, 200),
                ms(0.5, 200),
                ms(0.5, 300),
                ms(0.8, 1000),
                ms(0.9, 1300),
                ms(1.0, 1300),
            ],
        ))
        .with_sampling(ProfileSampling::DummynetTable);
        let t: Vec<Duration> = p.dummynet_table().collect();
        assert_eq!(t.len(), 100);
        assert_eq!(t[0], Duration::from_millis(200));
        assert_eq!(t[49], Duration::from_millis(200));
        assert_eq!(t[50], Duration::from_millis(300));
        // Segment (0.5, 300) → (0.8, 1000): ix 65 is 300 + 15/30·700 = 650 ms.
        assert_eq!(t[65], Duration::from_millis(650));
        assert_eq!(t[95], Duration::from_millis(1300));
        let mut model = ProfileModel::new(p, rng_from_seed(3));
        let n = 100_000u64;
        let lost = (0..n).filter(|_| model.draw().is_lost()).count() as u64;
        // indices ⌊0.86·100⌋..99 are lost, as in the kernel.
        let expected = 1.0 - (0.86f64 * 100.0) as usize as f64 / 100.0;
        assert!((expected - 0.14).abs() < 0.011);
        assert_binomial_3sigma(lost, n, expected, "table loss");
    }

    /// Pass proves: each value is checked as it is given, and a curve whose
    /// delays decrease is refused naming the point (in the order given).
    #[test]
    fn the_builder_checks_each_value() {
        let mut b = Profile::builder();
        assert!(b.samples(0).is_err());
        assert!(b.samples(MAX_SAMPLES + 1).is_err());
        assert!(b.samples(MAX_SAMPLES).is_ok());
        assert!(b.bandwidth(Rate::UNLIMITED).is_err());
        for i in 0..MAX_SAMPLES {
            assert!(b.point(pr(1.0), Duration(i as u64)).is_ok());
        }
        assert_eq!(
            b.point(pr(1.0), Duration(0))
                .map(|_| ())
                .map_err(|e| e.index),
            Err(Some(MAX_SAMPLES))
        );
        let bad = profile(100, 1.0, &[(0.1, 10_000), (0.9, 30_000), (0.5, 5_000)]);
        assert_eq!(bad.map_err(|e| e.index), Err(Some(2)));
        assert!(profile(100, 1.0, &[(0.5, 10_000)]).is_err());
        assert!(profile(100, 1.0, &[]).is_err());
    }

    /// Pass proves: unsorted points are sorted, and the defaults are
    /// ipfw's (samples 100, no loss, no bandwidth).
    #[test]
    fn unsorted_points_and_defaults() {
        let mut b = Profile::builder();
        ok(b.point(pr(1.0), Duration::from_millis(5)));
        ok(b.point(pr(0.0), Duration::from_millis(1)));
        let p = ok(b.build());
        assert_eq!(p.samples(), DEFAULT_SAMPLES);
        assert_eq!(p.loss_level(), 1.0);
        assert_eq!(p.bandwidth(), None);
        assert_eq!(p.points()[0].delay, Duration::from_millis(1));
        assert_eq!(p.quantile(0.5), Duration::from_millis(3));
        let mut m = ProfileModel::new(p, rng_from_seed(1));
        assert!((0..1000).all(|_| !m.draw().is_lost()));
    }
}
