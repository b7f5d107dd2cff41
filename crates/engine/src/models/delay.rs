//! Delay distributions: netem's `delay MU SIGMA [CORR] distribution NAME` and
//! empirical delay files.
//!
//! Sources: Linux `net/sched/sch_netem.c` (`tabledist`, `get_crandom`),
//! iproute2 `netem/normal.c`, `netem/pareto.c`, `netem/paretonormal.c`
//! (the table generators, taken from NIST Net) and tc-netem(8). NetPath
//! (§2.2.5) draws its delays from a normal distribution with a user mean and
//! standard deviation, which is `distribution normal` here.
//!
//! # The distributions, exactly as netem defines them
//! netem draws a 32-bit `rnd` (correlated, see [`CorrelatedRandom`]) and
//! returns, in nanoseconds:
//! * **uniform** (no table): `mu − sigma + (rnd mod 2·sigma)`, i.e. uniform
//!   on the integers of `[mu − sigma, mu + sigma)`. Here:
//!   `mu − sigma + ⌊rnd · 2·sigma / 2³²⌋`, the same distribution.
//! * **table** distributions: `mu + sigma · T[rnd mod 4096] / 8192`, where the
//!   table `T` holds 4096 quantiles of a standardised shape `V` in units of
//!   1/8192 (`NETEM_DIST_SCALE`), clipped to the `i16` range, so `V ≤
//!   32767/8192 ≈ 4`. Here `V` is computed analytically at the quantile
//!   `q = (rnd + ½)/2³²` instead of being looked up, which is the same
//!   distribution without the 4096-step quantisation (the tests check that
//!   the table and the analytic form are within 3/4096 in CDF):
//!   * **normal**: `V = Φ⁻¹(q)`, clipped to `±4` (the table's `i16` range).
//!   * **pareto**: Pareto with shape `a = 3` and scale 1 (mean 3/2), shifted
//!     to mean 0 and scaled by 4/3: `V = (4/3)·((1 − q)^(−1/3) − 3/2)`,
//!     so `V ≥ −2/3`, clipped above at 32767/8192. Note the standard
//!     deviation of `V` is `2/√3 ≈ 1.15`, not 1: netem's `sigma` is a scale,
//!     not the standard deviation, for this shape.
//!   * **paretonormal**: `paretonormal.c` says "0.25·normal + 0.75·pareto",
//!     but it adds the two *quantile functions* at the same `q` (entry `i`
//!     is `(normal[i] + 3·pareto[i])/4`), so it is a comonotone sum, not a
//!     probabilistic mixture: `V = (Φ⁻¹(q) + 3·V_pareto(q))/4`, clipped to
//!     `[−4, 32767/8192]`. That is what netem does, and what this does.
//!
//! The result is clamped at zero: netem schedules a packet with a negative
//! delay for "now".
//!
//! # Correlation
//! `CORR` feeds `rnd` through netem's `get_crandom` (`next = (1 − ρ)·U +
//! ρ·last`), a known-flawed approximation: the marginal distribution
//! narrows towards the median as ρ grows, so a correlated `normal` is no
//! longer `N(mu, sigma)`. One deliberate difference from the kernel: netem
//! indexes its table with `rnd mod 4096` (and uniform with `rnd mod
//! 2·sigma`), i.e. with the *low* bits, where the smoothing leaves almost no
//! correlation, so the kernel's delay correlation is nearly ineffective.
//! pipelab maps the *high* bits (`rnd / 2³²`) through the quantile function,
//! so `CORR` has the effect tc-netem(8) documents. With `ρ = 0` the two are
//! the same distribution.
//!
//! # Empirical delays ([`EmpiricalDelay`])
//! Either of two forms:
//! * **samples** ([`EmpiricalDelay::from_samples`]): a packet's delay is
//!   one of the samples picked uniformly at random (the empirical
//!   distribution itself).
//! * **CDF points** ([`EmpiricalDelay::from_cdf`]): `(P, VALUE)` pairs, `P`
//!   a cumulative probability, both non-decreasing, the last `P` equal to
//!   one. The CDF is piecewise linear between points, and the first point
//!   carries an atom of mass `P₀` at its value.
//!
//! A distribution file (`distribution file:PATH`: one sample, or one
//! `P VALUE` point, per line) is text: `crates/lang` reads it
//! (`files::parse_distribution`) and builds one of these.
//!
//! With `distribution empirical` the packet's delay is `mu + X`, `X` drawn
//! from the file; `sigma` must be zero (the file gives the spread).
//! netem's own binary-table format (`maketable` output) is not read here.

use core::fmt;

use crate::models::{CorrelatedRandom, ModelError, Probability};
use crate::rng::StageRng;
use crate::time::Duration;

/// `NETEM_DIST_SCALE`: table entries are in units of `sigma / 8192`.
const NETEM_DIST_SCALE: f64 = 8192.0;
/// Largest standardised value a netem table can hold (`i16::MAX / 8192`).
pub const TABLE_MAX: f64 = i16::MAX as f64 / NETEM_DIST_SCALE;
/// Smallest standardised value a netem table can hold (`i16::MIN / 8192`).
pub const TABLE_MIN: f64 = i16::MIN as f64 / NETEM_DIST_SCALE;

/// Largest jitter netem accepts: `sigma` is an `s32` in nanoseconds in
/// `tabledist`, and `netem_change` clamps it to `INT_MAX` (≈ 2.147 s).
pub const MAX_SIGMA: Duration = Duration(i32::MAX as u64);

/// The shape of the delay distribution (netem's `distribution` word).
#[derive(Clone, Debug, PartialEq)]
pub enum Distribution {
    /// `mu ± sigma`, uniformly (netem's default when jitter is given).
    Uniform,
    /// `N(mu, sigma)`, clipped at `±4·sigma` as netem's table is.
    Normal,
    /// netem's shifted Pareto (shape 3), see the module docs.
    Pareto,
    /// netem's comonotone sum of normal and Pareto, see the module docs.
    ParetoNormal,
    /// `mu` plus a delay drawn from a file's samples or CDF.
    Empirical(EmpiricalDelay),
    /// netem's table distribution, as the kernel uses it: `mu + sigma ·
    /// T[i] / 8192` with `T` one of iproute2's tables (`normal.dist` …,
    /// or any `.dist` file), or pipelab's own table generated with
    /// iproute2's algorithm ([`NetemTable::normal`] …).
    Table(NetemTable),
}

impl Distribution {
    /// The netem shape called `name` (`uniform`, `normal`, `pareto`,
    /// `paretonormal`); empirical distributions are built with
    /// [`EmpiricalDelay::from_samples`] or [`EmpiricalDelay::from_cdf`].
    pub fn from_name(name: &str) -> Option<Distribution> {
        match name {
            "uniform" => Some(Distribution::Uniform),
            "normal" => Some(Distribution::Normal),
            "pareto" => Some(Distribution::Pareto),
            "paretonormal" => Some(Distribution::ParetoNormal),
            _ => None,
        }
    }

    /// The word for this shape.
    pub fn name(&self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::Normal => "normal",
            Distribution::Pareto => "pareto",
            Distribution::ParetoNormal => "paretonormal",
            Distribution::Empirical(_) => "empirical",
            Distribution::Table(_) => "table",
        }
    }

    /// The standardised value `V` at quantile `q ∈ (0, 1)` for the table
    /// shapes (delay = `mu + sigma·V`); `None` for uniform and empirical.
    pub fn standard_quantile(&self, q: f64) -> Option<f64> {
        match self {
            Distribution::Normal => Some(normal_v(q)),
            Distribution::Pareto => Some(pareto_v(q)),
            Distribution::ParetoNormal => Some(paretonormal_v(q)),
            Distribution::Uniform | Distribution::Empirical(_) | Distribution::Table(_) => None,
        }
    }
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Distribution::Table(t) => f.write_str(t.name()),
            other => f.write_str(other.name()),
        }
    }
}

/// `NETEM_DIST_SCALE` as an integer.
const DIST_SCALE: i128 = 8192;

/// The most entries a netem table may have (iproute2's `MAX_DIST`).
pub const MAX_TABLE_ENTRIES: usize = 16 * 1024;

/// netem's table of a standardised delay shape: entries in units of
/// `1/8192` (`NETEM_DIST_SCALE`), as iproute2's `maketable` and its
/// generators write them into `normal.dist`, `pareto.dist`, … and as
/// `tc` hands them to the kernel. A packet's delay is `mu + sigma ·
/// T[i] / 8192` with `i` uniform over the entries (`sch_netem.c`
/// `tabledist`, its rounding included).
#[derive(Clone, Debug, PartialEq)]
pub struct NetemTable {
    name: String,
    values: std::sync::Arc<[i16]>,
}

impl NetemTable {
    /// A table called `name` (the word after `distribution`, or the path
    /// it was read from): 1 to [`MAX_TABLE_ENTRIES`] entries.
    pub fn new(name: impl Into<String>, values: Vec<i16>) -> Result<NetemTable, ModelError> {
        if values.is_empty() {
            return Err(ModelError::new("distribution table", "no entries"));
        }
        if values.len() > MAX_TABLE_ENTRIES {
            return Err(ModelError::new(
                "distribution table",
                format!(
                    "{} entries, more than netem's {MAX_TABLE_ENTRIES}",
                    values.len()
                ),
            ));
        }
        Ok(NetemTable {
            name: name.into(),
            values: values.into(),
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its entries, in units of 1/8192.
    pub fn values(&self) -> &[i16] {
        &self.values
    }

    /// pipelab's own `normal` table, generated as iproute2's
    /// `netem/normal.c` generates `normal.dist` (used when that file is
    /// not installed): `table[rint(16384·Φ(x))] = x` for `x` from −10 by
    /// 5·10⁻⁵, then every 4th entry times 8192, rounded, clipped to `i16`.
    pub fn normal() -> NetemTable {
        let t = normal_quantiles();
        let values = (0..16384)
            .step_by(4)
            .map(|i| clip_i16(rint(t[i] * 8192.0)))
            .collect();
        NetemTable {
            name: "normal".into(),
            values,
        }
    }

    /// pipelab's own `pareto` table, as iproute2's `netem/pareto.c`
    /// generates `pareto.dist`.
    pub fn pareto() -> NetemTable {
        let values = (0..4096)
            .map(|j| clip_i16(pareto_value(65536 - 16 * j)))
            .collect();
        NetemTable {
            name: "pareto".into(),
            values,
        }
    }

    /// pipelab's own `paretonormal` table, as iproute2's
    /// `netem/paretonormal.c` generates `paretonormal.dist`: `(normal +
    /// 3·pareto)/4` with C's integer division.
    pub fn paretonormal() -> NetemTable {
        let t = normal_quantiles();
        let values = (0..16384)
            .step_by(4)
            .map(|i| {
                let norm = rint(t[i] * 8192.0) as i64;
                let par = pareto_value(65536 - 4 * i as i64) as i64;
                clip_i16(((norm + 3 * par) / 4) as f64)
            })
            .collect();
        NetemTable {
            name: "paretonormal".into(),
            values,
        }
    }

    /// The generated table called `name` (`normal`, `pareto`,
    /// `paretonormal`), if pipelab has one.
    pub fn builtin(name: &str) -> Option<NetemTable> {
        match name {
            "normal" => Some(Self::normal()),
            "pareto" => Some(Self::pareto()),
            "paretonormal" => Some(Self::paretonormal()),
            _ => None,
        }
    }

    /// `mu + sigma·T[i]/8192` for the entry that `rnd` picks, with the
    /// kernel's arithmetic (`tabledist`: the remainder of `sigma` by 8192
    /// multiplied and rounded half away from zero). The entry is picked
    /// with the high bits of `rnd` (see the module docs on correlation).
    fn delay_for(&self, mu: i128, sigma: i128, rnd: u32) -> i128 {
        let i = ((rnd as u64 * self.values.len() as u64) >> 32) as usize;
        let t = self.values.get(i).copied().unwrap_or(0) as i128;
        let mut x = (sigma % DIST_SCALE) * t;
        if x >= 0 {
            x += DIST_SCALE / 2;
        } else {
            x -= DIST_SCALE / 2;
        }
        x / DIST_SCALE + (sigma / DIST_SCALE) * t + mu
    }
}

/// C's `rint` in the default rounding mode: half to even.
fn rint(x: f64) -> f64 {
    x.round_ties_even()
}

/// Clip to the `i16` range, as the generators do.
fn clip_i16(x: f64) -> i16 {
    x.clamp(i16::MIN as f64, i16::MAX as f64) as i16
}

/// normal.c's table of 16385 quantiles: `table[rint(16384·Φ(x))] = x` for
/// `x` from −10 while `x < 10.05`, by 5·10⁻⁵ (accumulated in `double`, as
/// the C loop does).
fn normal_quantiles() -> Vec<f64> {
    let mut table = vec![0.0f64; 16385];
    let mut x = -10.0f64;
    while x < 10.05 {
        let phi = 0.5 + 0.5 * libm::erf(x / (2.0f64.sqrt() * 1.0));
        let i = rint(16384.0 * phi) as usize;
        if let Some(slot) = table.get_mut(i) {
            *slot = x;
        }
        x += 0.00005;
    }
    table
}

/// pareto.c's value for its loop variable `i` (shape `a = 3`), rounded
/// and capped at 32767.
fn pareto_value(i: i64) -> f64 {
    let d = i as f64 / 65536.0;
    let v = (1.0 / d.powf(1.0 / 3.0) - 1.5) * ((4.0 / 3.0) * 8192.0);
    rint(v.min(32767.0))
}

/// netem's normal table, analytically: `Φ⁻¹(q)` clipped to the `i16` range.
fn normal_v(q: f64) -> f64 {
    inverse_normal_cdf(q).clamp(TABLE_MIN, TABLE_MAX)
}

/// netem's Pareto table (`pareto.c`): `(4/3)·((1−q)^(−1/3) − 1.5)`, capped.
fn pareto_v(q: f64) -> f64 {
    let u = 1.0 - q; // in (0, 1]: pareto.c walks i/65536 from 1 down
    ((u.powf(-1.0 / 3.0) - 1.5) * (4.0 / 3.0)).min(TABLE_MAX)
}

/// netem's paretonormal table (`paretonormal.c`): `(normal + 3·pareto)/4`
/// at the same quantile, clipped to the `i16` range.
fn paretonormal_v(q: f64) -> f64 {
    ((normal_v(q) + 3.0 * pareto_v(q)) / 4.0).clamp(TABLE_MIN, TABLE_MAX)
}

/// Inverse of the standard normal CDF, `q ∈ (0, 1)`.
///
/// P. J. Acklam's rational approximation (relative error < 1.15·10⁻⁹),
/// ample for delays: at `sigma` = 1 s the error is about a nanosecond.
pub fn inverse_normal_cdf(q: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const P_LOW: f64 = 0.024_25;
    if q <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if q >= 1.0 {
        return f64::INFINITY;
    }
    let tail = |p: f64| {
        let t = (-2.0 * p.ln()).sqrt();
        (((((C[0] * t + C[1]) * t + C[2]) * t + C[3]) * t + C[4]) * t + C[5])
            / ((((D[0] * t + D[1]) * t + D[2]) * t + D[3]) * t + 1.0)
    };
    if q < P_LOW {
        tail(q)
    } else if q <= 1.0 - P_LOW {
        let t = q - 0.5;
        let r = t * t;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * t
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -tail(1.0 - q)
    }
}

/// The quantile `q ∈ (0, 1)` that a 32-bit random value stands for: the
/// midpoint of its 1/2³² slice, so `q` is never 0 or 1.
#[inline]
fn quantile_of(rnd: u32) -> f64 {
    (rnd as f64 + 0.5) / 4_294_967_296.0
}

/// A validated delay configuration: `delay MU SIGMA [CORR] distribution D`.
#[derive(Clone, Debug, PartialEq)]
pub struct DelayDist {
    /// Mean (for uniform, normal: exactly the mean; the location otherwise).
    mu: Duration,
    /// Jitter, `≤ MAX_SIGMA`; zero for a constant delay and for empirical.
    sigma: Duration,
    /// netem's correlation with the previous random value.
    correlation: Probability,
    /// The shape.
    dist: Distribution,
}

impl DelayDist {
    /// A constant delay `mu` (no jitter, draws no random numbers).
    pub fn constant(mu: Duration) -> DelayDist {
        DelayDist {
            mu,
            sigma: Duration::ZERO,
            correlation: Probability::ZERO,
            dist: Distribution::Uniform,
        }
    }

    /// `delay mu sigma correlation distribution dist`.
    ///
    /// Rejects `sigma > MAX_SIGMA` (netem's `s32` limit) and a non-zero
    /// `sigma` with an empirical distribution.
    pub fn new(
        mu: Duration,
        sigma: Duration,
        correlation: Probability,
        dist: Distribution,
    ) -> Result<DelayDist, ModelError> {
        if sigma > MAX_SIGMA {
            return Err(ModelError::new(
                "delay",
                format!("jitter {sigma} exceeds netem's limit of {MAX_SIGMA}"),
            ));
        }
        if matches!(dist, Distribution::Empirical(_)) && sigma != Duration::ZERO {
            return Err(ModelError::new(
                "delay",
                "jitter has no meaning with an empirical distribution (the file gives the spread)",
            ));
        }
        Ok(DelayDist {
            mu,
            sigma,
            correlation,
            dist,
        })
    }

    /// The mean or location `mu`.
    pub fn mu(&self) -> Duration {
        self.mu
    }
    /// The jitter `sigma`.
    pub fn sigma(&self) -> Duration {
        self.sigma
    }
    /// The correlation `ρ`.
    pub fn correlation(&self) -> Probability {
        self.correlation
    }
    /// The shape.
    pub fn distribution(&self) -> &Distribution {
        &self.dist
    }

    /// True when every packet gets exactly `mu` (no random draw at all).
    pub fn is_constant(&self) -> bool {
        self.sigma == Duration::ZERO && !matches!(self.dist, Distribution::Empirical(_))
    }

    /// The delay for the 32-bit random value `rnd` (the uncorrelated
    /// distribution is that of `rnd` uniform).
    fn delay_for(&self, rnd: u32) -> Duration {
        let mu = self.mu.as_nanos() as i128;
        let sigma = self.sigma.as_nanos() as i128;
        let ns: i128 = match &self.dist {
            Distribution::Empirical(e) => mu + e.value_for(rnd) as i128,
            Distribution::Uniform => mu - sigma + ((rnd as i128 * 2 * sigma) >> 32),
            Distribution::Table(t) => t.delay_for(mu, sigma, rnd),
            shape => {
                // standard_quantile is Some for every table shape.
                let v = shape.standard_quantile(quantile_of(rnd)).unwrap_or(0.0);
                mu + (sigma as f64 * v).round() as i128
            }
        };
        Duration(ns.clamp(0, u64::MAX as i128) as u64)
    }

    /// The delay at quantile `q ∈ (0, 1)` of the (uncorrelated) distribution.
    pub fn quantile(&self, q: f64) -> Duration {
        if self.is_constant() {
            return self.mu;
        }
        let rnd = (q.clamp(0.0, 1.0) * 4_294_967_296.0).min(u32::MAX as f64) as u32;
        self.delay_for(rnd)
    }
}

impl fmt::Display for DelayDist {
    /// netem's words: `delay 100ms 10ms 25% distribution normal`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "delay {}", self.mu)?;
        if self.is_constant() {
            return Ok(());
        }
        if !matches!(self.dist, Distribution::Empirical(_)) {
            write!(f, " {}", self.sigma)?;
        }
        if !self.correlation.is_zero() {
            write!(f, " {}", self.correlation)?;
        }
        write!(f, " distribution {}", self.dist)
    }
}

/// A pipe's delay model: the config and its random state.
#[derive(Clone, Debug)]
pub struct DelayModel {
    cfg: DelayDist,
    corr: CorrelatedRandom,
    rng: StageRng,
}

impl DelayModel {
    /// A model drawing from `rng` (the stage's own generator).
    pub fn new(cfg: DelayDist, mut rng: StageRng) -> DelayModel {
        let corr = CorrelatedRandom::new(cfg.correlation, &mut rng);
        DelayModel { cfg, corr, rng }
    }

    /// The configuration.
    pub fn config(&self) -> &DelayDist {
        &self.cfg
    }

    /// The next packet's delay, `≥ 0`. A constant delay draws nothing (as
    /// netem's `tabledist` returns `mu` when `sigma == 0`).
    pub fn sample(&mut self) -> Duration {
        if self.cfg.is_constant() {
            return self.cfg.mu;
        }
        let rnd = self.corr.next_u32(&mut self.rng);
        self.cfg.delay_for(rnd)
    }
}

/// An empirical delay distribution: samples or the corners of a CDF (see
/// the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct EmpiricalDelay {
    repr: Empirical,
}

#[derive(Clone, Debug, PartialEq)]
enum Empirical {
    /// Delays in ns, sorted ascending, non-empty.
    Samples(Vec<u64>),
    /// `(P, delay ns)`, both non-decreasing, non-empty, last `P` = 1.
    Cdf(Vec<(f64, u64)>),
}

const EMPIRICAL: &str = "empirical delay";

impl EmpiricalDelay {
    /// The empirical distribution of `samples` (at least one).
    pub fn from_samples(
        samples: impl IntoIterator<Item = Duration>,
    ) -> Result<EmpiricalDelay, ModelError> {
        let mut ns: Vec<u64> = samples.into_iter().map(|d| d.as_nanos()).collect();
        if ns.is_empty() {
            return Err(ModelError::new(EMPIRICAL, "no delay samples"));
        }
        ns.sort_unstable();
        Ok(EmpiricalDelay {
            repr: Empirical::Samples(ns),
        })
    }

    /// The piecewise-linear CDF through `points`, `(P, delay)` in file
    /// order: at least one, `P` and the delays never decreasing, the last
    /// `P` exactly 1 (module docs). An error names the offending point's
    /// index.
    pub fn from_cdf(
        points: impl IntoIterator<Item = (Probability, Duration)>,
    ) -> Result<EmpiricalDelay, ModelError> {
        let mut out: Vec<(f64, u64)> = Vec::new();
        for (i, (p, d)) in points.into_iter().enumerate() {
            let (prob, ns) = (p.get(), d.as_nanos());
            if let Some(&(last_p, last_v)) = out.last() {
                if prob < last_p {
                    return Err(ModelError::at(
                        EMPIRICAL,
                        i,
                        format!(
                            "probability {prob} is below the previous point's {last_p} (a CDF never decreases)"
                        ),
                    ));
                }
                if ns < last_v {
                    return Err(ModelError::at(
                        EMPIRICAL,
                        i,
                        format!(
                            "value {} is below the previous point's {} (a CDF's values never decrease)",
                            Duration(ns),
                            Duration(last_v)
                        ),
                    ));
                }
            }
            out.push((prob, ns));
        }
        let Some(&(last_p, _)) = out.last() else {
            return Err(ModelError::new(EMPIRICAL, "no CDF points"));
        };
        if last_p != 1.0 {
            return Err(ModelError::at(
                EMPIRICAL,
                out.len() - 1,
                format!("the last CDF point has P = {last_p}; it must be 1"),
            ));
        }
        Ok(EmpiricalDelay {
            repr: Empirical::Cdf(out),
        })
    }

    /// Number of samples or CDF points.
    pub fn len(&self) -> usize {
        match &self.repr {
            Empirical::Samples(s) => s.len(),
            Empirical::Cdf(p) => p.len(),
        }
    }

    /// Never true: a distribution has at least one entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when the file gave CDF points rather than samples.
    pub fn is_cdf(&self) -> bool {
        matches!(self.repr, Empirical::Cdf(_))
    }

    /// The delay at quantile `q ∈ [0, 1]`.
    pub fn quantile(&self, q: f64) -> Duration {
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
        Duration(match &self.repr {
            Empirical::Samples(s) => {
                let i = ((q * s.len() as f64) as usize).min(s.len() - 1);
                s[i]
            }
            Empirical::Cdf(points) => cdf_quantile(points, q),
        })
    }

    /// The value (ns) for a 32-bit random value, uniform over the
    /// distribution when `rnd` is uniform.
    fn value_for(&self, rnd: u32) -> u64 {
        match &self.repr {
            // Exactly uniform over the samples up to 2⁻³² bias, no float.
            Empirical::Samples(s) => s[((rnd as u64 * s.len() as u64) >> 32) as usize],
            Empirical::Cdf(points) => cdf_quantile(points, quantile_of(rnd)),
        }
    }
}

/// Inverse of the piecewise-linear CDF through `points` at `q`.
fn cdf_quantile(points: &[(f64, u64)], q: f64) -> u64 {
    // Number of points with P ≤ q; points is non-empty and sorted by P.
    let i = points.partition_point(|&(p, _)| p <= q);
    if i == 0 {
        return points[0].1; // the atom below the first point
    }
    let Some(&(p1, v1)) = points.get(i) else {
        return points[points.len() - 1].1;
    };
    let (p0, v0) = points[i - 1];
    // p0 ≤ q < p1, so p1 > p0.
    let frac = (q - p0) / (p1 - p0);
    v0 + ((v1 - v0) as f64 * frac).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::stats_test_util::{
        erf, ks_critical_001, ks_statistic, ks_statistic_with_atoms, lag1_autocorrelation,
        normal_cdf,
    };
    use crate::rng::{rng_from_seed, stage_rng, StageKind};

    const N: usize = 100_000;
    const MU: u64 = 50_000_000; // 50 ms
    const SIGMA: u64 = 10_000_000; // 10 ms

    fn model(dist: Distribution, rho: f64, seed: u64) -> DelayModel {
        let cfg = DelayDist::new(
            Duration(MU),
            Duration(SIGMA),
            Probability::new(rho).expect("valid ρ"),
            dist,
        )
        .expect("valid config");
        DelayModel::new(cfg, stage_rng(seed, StageKind::Delay, 1))
    }

    fn pr(p: f64) -> Probability {
        Probability::new(p).unwrap_or(Probability::ZERO)
    }

    fn samples(m: &mut DelayModel, n: usize) -> Vec<f64> {
        (0..n).map(|_| m.sample().as_nanos() as f64).collect()
    }

    /// Standardised value `(x − mu)/sigma`.
    fn v(x: f64) -> f64 {
        (x - MU as f64) / SIGMA as f64
    }

    /// netem's Pareto CDF in standard units (closed form of pareto.c):
    /// P(V ≤ v) = 1 − (1.5 + 0.75 v)⁻³ on [−2/3, cap), 1 from the cap on.
    fn pareto_cdf(v: f64) -> f64 {
        if v < -2.0 / 3.0 {
            0.0
        } else if v >= TABLE_MAX - 1e-6 {
            // The cap (an atom of mass ≈1.1 %); 1e-6 absorbs ns rounding.
            1.0
        } else {
            1.0 - (1.5 + 0.75 * v).powi(-3)
        }
    }

    // ---- netem's table generators, transcribed from iproute2 netem/*.c ----

    /// normal.c: `table[rint(16384·Φ(x))] = x` for x from −10 by 5e-5, then
    /// every 4th entry scaled by 8192.
    fn netem_normal_table() -> Vec<i16> {
        let mut table = vec![0.0f64; 16385];
        let mut x = -10.0f64;
        while x < 10.05 {
            let i = (16384.0 * (0.5 + 0.5 * erf(x / std::f64::consts::SQRT_2))).round_ties_even();
            table[i as usize] = x;
            x += 0.00005;
        }
        (0..16384)
            .step_by(4)
            .map(|i| {
                (table[i] * 8192.0)
                    .round_ties_even()
                    .clamp(-32768.0, 32767.0) as i16
            })
            .collect()
    }

    /// pareto.c's `paretovalue` for its loop variable `i` (65536 down by 16).
    fn netem_pareto_value(i: i32) -> f64 {
        let d = i as f64 / 65536.0;
        (((1.0 / d.powf(1.0 / 3.0)) - 1.5) * (4.0 / 3.0) * 8192.0)
            .min(32767.0)
            .round_ties_even()
    }

    fn netem_pareto_table() -> Vec<i16> {
        (0..4096)
            .map(|j| netem_pareto_value(65536 - 16 * j) as i16)
            .collect()
    }

    /// paretonormal.c: `(normvalue + 3·paretovalue(i))/4` with C integer division.
    fn netem_paretonormal_table() -> Vec<i16> {
        let mut table = vec![0.0f64; 16385];
        let mut x = -10.0f64;
        while x < 10.05 {
            let i = (16384.0 * (0.5 + 0.5 * erf(x / std::f64::consts::SQRT_2))).round_ties_even();
            table[i as usize] = x;
            x += 0.00005;
        }
        (0..16384)
            .step_by(4)
            .map(|i| {
                let norm = (table[i] * 8192.0).round_ties_even() as i64;
                let par = netem_pareto_value(65536 - 4 * i as i32) as i64;
                ((norm + 3 * par) / 4).clamp(-32768, 32767) as i16
            })
            .collect()
    }

    /// CDF, in standard units, of netem's table: each entry has mass 1/4096.
    fn table_cdf(sorted: &[f64], v: f64) -> f64 {
        sorted.partition_point(|&t| t <= v) as f64 / sorted.len() as f64
    }

    fn sorted_standard(table: &[i16]) -> Vec<f64> {
        let mut t: Vec<f64> = table.iter().map(|&x| x as f64 / 8192.0).collect();
        t.sort_by(|a, b| a.total_cmp(b));
        t
    }

    /// CDF of an analytic shape by bisection on its (monotone) quantile:
    /// `P(V ≤ v)`, or `P(V < v)` when `strict`.
    fn shape_cdf(dist: &Distribution, v: f64, strict: bool) -> f64 {
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            let x = dist.standard_quantile(mid).unwrap_or(f64::NAN);
            if x < v || (!strict && x == v) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// KS distance between netem's table (a discrete distribution, 1/4096
    /// per entry) and the analytic shape: both the left and the right limits
    /// of both CDFs at every table value, so atoms (the caps) count.
    fn table_vs_shape(table: &[i16], dist: &Distribution) -> f64 {
        let sorted = sorted_standard(table);
        let n = sorted.len() as f64;
        sorted
            .iter()
            .map(|&t| {
                let g_right = sorted.partition_point(|&x| x <= t) as f64 / n;
                let g_left = sorted.partition_point(|&x| x < t) as f64 / n;
                let f_right = shape_cdf(dist, t, false);
                let f_left = shape_cdf(dist, t, true);
                (f_right - g_right).abs().max((f_left - g_left).abs())
            })
            .fold(0.0, f64::max)
    }

    /// Pass proves: the inverse normal CDF inverts Φ to 1e-6 across (0, 1),
    /// tails included (guards the Acklam coefficients).
    #[test]
    fn inverse_normal_inverts_phi() {
        for k in 1..1000 {
            let q = k as f64 / 1000.0;
            assert!(
                (normal_cdf(inverse_normal_cdf(q)) - q).abs() < 1e-6,
                "q={q}"
            );
        }
        for q in [1e-6, 1e-4, 0.999_99] {
            assert!((normal_cdf(inverse_normal_cdf(q)) - q).abs() / q.min(1.0 - q) < 1e-3);
        }
    }

    /// Pass proves: 100k uniform-jitter samples are U[mu−sigma, mu+sigma)
    /// by KS at α = 0.01, and the extremes reach both ends.
    #[test]
    fn uniform_passes_ks() {
        let mut xs = samples(&mut model(Distribution::Uniform, 0.0, 1), N);
        let lo = xs.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = xs.iter().cloned().fold(0.0, f64::max);
        assert!(lo >= (MU - SIGMA) as f64 && hi < (MU + SIGMA) as f64);
        assert!(lo < (MU - SIGMA) as f64 + 1e4 && hi > (MU + SIGMA) as f64 - 1e4);
        let d = ks_statistic(&mut xs, |x| ((v(x) + 1.0) / 2.0).clamp(0.0, 1.0));
        assert!(d < ks_critical_001(N), "D = {d}");
    }

    /// Pass proves: 100k `normal` samples are N(mu, sigma) by KS at α = 0.01
    /// against an independent Φ; and the same samples fail KS against
    /// N(mu, 1.1·sigma), so the test can tell distributions apart.
    #[test]
    fn normal_passes_ks() {
        let mut xs = samples(&mut model(Distribution::Normal, 0.0, 2), N);
        let d = ks_statistic(&mut xs, |x| normal_cdf(v(x)));
        assert!(d < ks_critical_001(N), "D = {d}");
        let wrong = ks_statistic(&mut xs, |x| normal_cdf(v(x) / 1.1));
        assert!(
            wrong > ks_critical_001(N),
            "KS cannot tell sigma from 1.1 sigma"
        );
    }

    /// Pass proves: 100k `pareto` samples follow netem's Pareto (closed form
    /// of pareto.c) by KS at α = 0.01.
    #[test]
    fn pareto_passes_ks() {
        let mut xs = samples(&mut model(Distribution::Pareto, 0.0, 3), N);
        // The cap is an atom: P(V < cap) is the closed form just below it.
        let below_cap = 1.0 - (1.5 + 0.75 * TABLE_MAX).powi(-3);
        let left = |x: f64| {
            if v(x) >= TABLE_MAX - 1e-6 {
                below_cap
            } else {
                pareto_cdf(v(x))
            }
        };
        let d = ks_statistic_with_atoms(&mut xs, |x| pareto_cdf(v(x)), left);
        // The atom is there, with netem's mass (≈1.1 %), within 3σ.
        let atom = 1.0 - below_cap;
        let capped = xs.iter().filter(|&&x| v(x) >= TABLE_MAX - 1e-6).count() as f64;
        assert!(
            (capped / N as f64 - atom).abs() < 3.0 * (atom / N as f64).sqrt(),
            "{capped}"
        );
        assert!(d < ks_critical_001(N), "D = {d}");
    }

    /// Pass proves: 100k `paretonormal` samples follow the distribution of
    /// netem's own paretonormal table (generated here from paretonormal.c)
    /// by KS at α = 0.01, and are rejected as the probabilistic mixture
    /// 0.25·normal + 0.75·pareto that the C comment suggests.
    #[test]
    fn paretonormal_passes_ks_against_netem_table() {
        let table = sorted_standard(&netem_paretonormal_table());
        let mut xs = samples(&mut model(Distribution::ParetoNormal, 0.0, 4), N);
        // The table CDF steps by 1/4096 ≪ the critical value 0.0051.
        let d = ks_statistic(&mut xs, |x| table_cdf(&table, v(x)));
        assert!(d < ks_critical_001(N), "D = {d}");
        let mixture = ks_statistic(&mut xs, |x| {
            0.25 * normal_cdf(v(x)) + 0.75 * pareto_cdf(v(x))
        });
        assert!(
            mixture > ks_critical_001(N),
            "indistinguishable from the mixture"
        );
    }

    /// Pass proves: the analytic normal and Pareto shapes are the same
    /// distributions as netem's 4096-entry tables (generated here from
    /// normal.c and pareto.c), within 3/4096 in CDF everywhere; a shape
    /// compared with the wrong table is far off.
    #[test]
    fn analytic_shapes_match_netem_tables() {
        let normal = netem_normal_table();
        let pareto = netem_pareto_table();
        let pn = netem_paretonormal_table();
        assert!(table_vs_shape(&normal, &Distribution::Normal) < 3.0 / 4096.0);
        assert!(table_vs_shape(&pareto, &Distribution::Pareto) < 3.0 / 4096.0);
        assert!(table_vs_shape(&pn, &Distribution::ParetoNormal) < 3.0 / 4096.0);
        assert!(table_vs_shape(&pareto, &Distribution::Normal) > 0.05);
    }

    /// Pass proves: the samples-form empirical distribution draws only the
    /// listed values, each with its frequency (within 4σ), offset by mu.
    #[test]
    fn empirical_samples_are_drawn_uniformly() {
        let e = EmpiricalDelay::from_samples(
            [1_000_000, 2_000_000, 2_000_000, 7_500_000].map(Duration),
        )
        .expect("valid");
        assert_eq!(e.len(), 4);
        let cfg = DelayDist::new(
            Duration::from_millis(10),
            Duration::ZERO,
            Probability::ZERO,
            Distribution::Empirical(e),
        )
        .expect("valid");
        let mut m = DelayModel::new(cfg, rng_from_seed(5));
        let mut counts = [0u64; 3];
        for _ in 0..N {
            match m.sample().as_nanos() {
                11_000_000 => counts[0] += 1,
                12_000_000 => counts[1] += 1,
                17_500_000 => counts[2] += 1,
                other => panic!("drew {other} ns, not a listed sample"),
            }
        }
        for (count, p) in counts.iter().zip([0.25, 0.5, 0.25]) {
            let sigma = (N as f64 * p * (1.0 - p)).sqrt();
            assert!(
                (*count as f64 - N as f64 * p).abs() < 4.0 * sigma,
                "{counts:?}"
            );
        }
    }

    /// Pass proves: the CDF-form empirical distribution passes KS at
    /// α = 0.01 against its piecewise-linear CDF, atom at the first point
    /// included.
    #[test]
    fn empirical_cdf_passes_ks() {
        let e = EmpiricalDelay::from_cdf(
            [(0.1, 5), (0.5, 10), (0.9, 12), (1.0, 30)]
                .map(|(p, ms)| (pr(p), Duration::from_millis(ms))),
        )
        .expect("valid");
        assert!(e.is_cdf());
        let pts = [(0.1, 5e6), (0.5, 10e6), (0.9, 12e6), (1.0, 30e6)];
        let cdf = |x: f64| {
            if x < pts[0].1 {
                return 0.0;
            }
            for w in pts.windows(2) {
                if x < w[1].1 {
                    return w[0].0 + (w[1].0 - w[0].0) * (x - w[0].1) / (w[1].1 - w[0].1);
                }
            }
            1.0
        };
        let cfg = DelayDist::new(
            Duration::ZERO,
            Duration::ZERO,
            Probability::ZERO,
            Distribution::Empirical(e),
        )
        .expect("valid");
        let mut m = DelayModel::new(cfg, rng_from_seed(6));
        let mut xs = samples(&mut m, N);
        // The atom at the first point: mass 0.1 within 3σ (binomial).
        let atoms = xs.iter().filter(|&&x| x == 5e6).count() as f64 / N as f64;
        assert!(
            (atoms - 0.1).abs() < 3.0 * (0.1 * 0.9 / N as f64).sqrt(),
            "atom {atoms}"
        );
        // KS on the continuous part: P(X ≤ x | X > 5ms) = (F(x) − 0.1)/0.9.
        xs.retain(|&x| x > 5e6);
        let mut above = xs;
        let n = above.len();
        let d = ks_statistic(&mut above, |x| (cdf(x) - 0.1) / 0.9);
        assert!(d < ks_critical_001(n), "D = {d}");
    }

    /// Pass proves: each invalid set of CDF points is rejected naming the
    /// offending point, and no samples (or no points) is an error.
    #[test]
    fn empirical_constructors_name_the_bad_point() {
        let cdf = |pts: &[(f64, u64)]| {
            EmpiricalDelay::from_cdf(
                pts.iter()
                    .map(|&(p, ms)| (pr(p), Duration::from_millis(ms))),
            )
        };
        type Points<'a> = &'a [(f64, u64)];
        let cases: [(Points, Option<usize>); 4] = [
            (&[(0.5, 1), (0.4, 2), (1.0, 3)], Some(1)),
            (&[(0.5, 2), (0.7, 1), (1.0, 3)], Some(1)),
            (&[(0.5, 1), (0.9, 2)], Some(1)),
            (&[], None),
        ];
        for (pts, index) in cases {
            match cdf(pts) {
                Ok(_) => panic!("accepted {pts:?}"),
                Err(e) => assert_eq!(e.index, index, "{pts:?}: {e}"),
            }
        }
        assert!(EmpiricalDelay::from_samples([]).is_err());
        assert!(cdf(&[(1.0, 5)]).is_ok());
    }

    /// Pass proves: delays are clamped at zero (netem sends "now"), and the
    /// clamp actually engages (sigma ≫ mu gives many zeros, never an
    /// underflow to a huge value).
    #[test]
    fn negative_delays_clamp_to_zero() {
        let cfg = DelayDist::new(
            Duration::from_millis(1),
            Duration::from_millis(10),
            Probability::ZERO,
            Distribution::Normal,
        )
        .expect("valid");
        let mut m = DelayModel::new(cfg, rng_from_seed(7));
        let xs: Vec<Duration> = (0..10_000).map(|_| m.sample()).collect();
        let zeros = xs.iter().filter(|d| **d == Duration::ZERO).count();
        assert!(zeros > 4_000 && zeros < 5_200, "{zeros} zeros");
        assert!(xs.iter().all(|d| *d <= Duration::from_millis(41)));
    }

    /// Pass proves: correlation 50% raises the lag-1 autocorrelation of the
    /// delays from ≈0 to well above 0 (for uniform and normal), and narrows
    /// the spread (netem's flaw, reproduced).
    #[test]
    fn correlation_raises_autocorrelation() {
        for dist in [Distribution::Uniform, Distribution::Normal] {
            let x0 = samples(&mut model(dist.clone(), 0.0, 8), N);
            let x5 = samples(&mut model(dist.clone(), 0.5, 8), N);
            let (r0, r5) = (lag1_autocorrelation(&x0), lag1_autocorrelation(&x5));
            assert!(r0.abs() < 0.015, "{dist}: uncorrelated r = {r0}");
            assert!(r5 > 0.4, "{dist}: correlated r = {r5}");
            let sd = |xs: &[f64]| {
                let m = xs.iter().sum::<f64>() / xs.len() as f64;
                (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / xs.len() as f64).sqrt()
            };
            assert!(sd(&x5) < 0.8 * sd(&x0), "{dist}: spread did not narrow");
        }
    }

    /// Pass proves: the same seed reproduces the delay sequence bit for bit
    /// and another seed does not.
    #[test]
    fn seeds_reproduce() {
        let a = samples(&mut model(Distribution::ParetoNormal, 0.25, 11), 1000);
        let b = samples(&mut model(Distribution::ParetoNormal, 0.25, 11), 1000);
        let c = samples(&mut model(Distribution::ParetoNormal, 0.25, 12), 1000);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    /// Pass proves: configs are validated (sigma bound, empirical without
    /// sigma), a constant delay draws nothing, and Display uses netem words.
    #[test]
    fn config_validation_and_display() {
        assert!(DelayDist::new(
            Duration::ZERO,
            Duration(MAX_SIGMA.as_nanos() + 1),
            Probability::ZERO,
            Distribution::Normal
        )
        .is_err());
        let e = EmpiricalDelay::from_samples([Duration::from_millis(1)]).expect("valid");
        assert!(DelayDist::new(
            Duration::ZERO,
            Duration(1),
            Probability::ZERO,
            Distribution::Empirical(e)
        )
        .is_err());
        let mut m = DelayModel::new(
            DelayDist::constant(Duration::from_millis(20)),
            rng_from_seed(1),
        );
        assert!((0..10).all(|_| m.sample() == Duration::from_millis(20)));
        let d = DelayDist::new(
            Duration::from_millis(100),
            Duration::from_millis(10),
            Probability::from_percent(25.0).expect("valid"),
            Distribution::Normal,
        )
        .expect("valid");
        assert_eq!(d.to_string(), "delay 100ms 10ms 25% distribution normal");
        assert_eq!(
            DelayDist::constant(Duration::from_millis(5)).to_string(),
            "delay 5ms"
        );
        assert_eq!(d.quantile(0.5), Duration::from_millis(100));
    }
}
