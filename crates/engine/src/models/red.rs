//! RED and Gentle RED: early random drop on arrival, driven by an average
//! queue size.
//!
//! Sources: S. Floyd, V. Jacobson, "Random Early Detection Gateways for
//! Congestion Avoidance", IEEE/ACM ToN 1(4), 1993 (the algorithm, the
//! idle-time correction and the count-based spacing of drops); S. Floyd,
//! "Recommendations on using the gentle_ variant of RED", 2000 (GRED);
//! dummynet-revisited §3.5 ("We also implement RED and GRED queues"); and
//! FreeBSD dummynet, `sys/netpfil/ipfw/ip_dn_io.c` (`red_drops`) and
//! `ip_dummynet.c` (`config_red`), whose decision rule this model follows.
//!
//! Command words, as ipfw(8): `red w_q/min_th/max_th/max_p` and
//! `gred w_q/min_th/max_th/max_p`.
//!
//! * `w_q` — weight of the exponentially weighted moving average, in
//!   `(0, 1]` (Floyd recommends 0.002).
//! * `min_th`, `max_th` — thresholds on the *average* queue, in the unit in
//!   which the pipe's queue is measured: slots (packets) when the queue limit
//!   is in slots, bytes when it is in bytes ([`QueueMeasure`]).
//!   `0 ≤ min_th < max_th`.
//! * `max_p` — the drop probability reached at `avg = max_th`, in `(0, 1]`.
//!
//! Per arrival, exactly as `red_drops`:
//!
//! 1. **Average.** If the queue is not empty, `avg ← avg + w_q·(q − avg)`.
//!    If it is empty and has been since `idle_since`, the link could have
//!    sent `m = idle / s` packets meanwhile, `s` being the transmission time
//!    of a typical packet, so `avg ← (1 − w_q)^(1+m) · avg` (Floyd §4: the
//!    arrival itself counts as one sample of an empty queue, as ns-2's
//!    `estimator(…, m + 1, …)` and FreeBSD's table entry 0 do).
//! 2. **Base probability.** `avg < min_th`: accept and reset `count`.
//!    `min_th ≤ avg < max_th`: `p_b = max_p·(avg − min_th)/(max_th − min_th)`.
//!    `avg ≥ max_th`: RED drops (and resets `count`); GRED continues on a
//!    second line, `p_b = max_p + (1 − max_p)·(avg − max_th)/max_th`, from
//!    `max_p` at `max_th` to 1 at `2·max_th` and drops outright beyond.
//!    With the queue measured in bytes, `p_b ← p_b · len / 1500` (dummynet's
//!    `red_max_pkt_size`), so small packets are dropped less often.
//! 3. **Spacing.** Floyd's `p_a = p_b/(1 − count·p_b)` makes the number of
//!    packets between drops uniform on `{1, …, 1/p_b}`. dummynet draws that
//!    directly: after each drop (and on entering the region) it draws a
//!    uniform `R ∈ [0, 1)`, then drops the `count`-th packet for the first
//!    `count` with `count·p_b > R`. The mean gap is `(1 + 1/p_b)/2` packets,
//!    so at a steady `p_b` (with `1/p_b` an integer) the long-run fraction of
//!    packets dropped is `2·p_b/(1 + p_b)`, not `p_b`. The exact expectation
//!    for this fixed-point implementation is derived in the tests.
//!
//! Fixed point, chosen finer than dummynet's 16-bit `SCALE`: `w_q`, `max_p`,
//! `p_b` and `R` have 32 fractional bits, `avg` has 16 (a queue of up to 2⁴⁸
//! bytes). Decisions use integers only; floats appear in the constructor and
//! in reports.
//!
//! Idle decay. FreeBSD keeps a table of `(1 − w_q)^(1 + i·step)` with a step
//! in kernel ticks; its `lookup_weight` raises `1 − w_q` to the step *in
//! ticks* rather than in packet times, so its decay rate depends on `HZ`.
//! This model computes the exact `(1 − w_q)^(1+m)` with `m` in packet times
//! from a table of `(1 − w_q)^(2^k)`, `k = 0..63` (square-and-multiply, at
//! most 64 multiplications, no allocation). The caller passes `s`
//! ([`RedConfig::typical_tx_time`] gives dummynet's choice: a
//! `red_avg_pkt_size` = 512-byte packet at the link rate).
//!
//! Left out: ECN marking (dummynet's `ecn` flag), per-flow RED queues (the
//! caller keeps one [`Red`] per queue).

use core::fmt;

use rand::RngCore;

use crate::models::ModelError;
use crate::rng::StageRng;
use crate::time::{Duration, Instant, Rate, NS_PER_SEC};

/// Fractional bits of `w_q`, probabilities and the random draw.
const P_SHIFT: u32 = 32;
/// `1.0` in [`P_SHIFT`] fixed point.
const P_ONE: u64 = 1 << P_SHIFT;
/// Fractional bits of the average queue size.
const AVG_SHIFT: u32 = 16;
/// Largest threshold accepted (so that `2·max_th` in fixed point fits).
const MAX_THRESHOLD: u64 = 1 << 46;

/// dummynet's `red_avg_pkt_size`: the "typical packet" whose transmission
/// time measures idle periods.
pub const RED_AVG_PKT_SIZE: u64 = 512;
/// dummynet's `red_max_pkt_size`: the packet size at which byte-mode RED
/// applies the full `p_b`.
pub const RED_MAX_PKT_SIZE: u64 = 1500;

/// Plain RED or its gentle variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RedVariant {
    /// `red`: above `max_th` every packet is dropped.
    Red,
    /// `gred`: between `max_th` and `2·max_th` the probability rises
    /// linearly from `max_p` to 1.
    Gentle,
}

/// How the queue (and hence the thresholds) is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueMeasure {
    /// Packets (ipfw `queue N`).
    Slots,
    /// Bytes (ipfw `queue NKB`); also turns on byte-mode `p_b` scaling.
    Bytes,
}

/// A validated `red`/`gred` configuration: a few words, `Copy`, so a
/// flow queue's specification can carry it (its decay table is the
/// state's, built by [`Red::new`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedConfig {
    variant: RedVariant,
    measure: QueueMeasure,
    w_q: f64,
    min_th: u64,
    max_th: u64,
    max_p: f64,
    /// `w_q` in [`P_SHIFT`] fixed point, in `1..=2³²`.
    w_q_fx: u64,
    /// `max_p` in [`P_SHIFT`] fixed point, in `1..=2³²`.
    max_p_fx: u64,
}

impl RedConfig {
    /// `red`/`gred w_q/min_th/max_th/max_p`, thresholds in `measure` units.
    pub fn new(
        variant: RedVariant,
        w_q: f64,
        min_th: u64,
        max_th: u64,
        max_p: f64,
        measure: QueueMeasure,
    ) -> Result<RedConfig, ModelError> {
        let what = match variant {
            RedVariant::Red => "red",
            RedVariant::Gentle => "gred",
        };
        if !w_q.is_finite() || w_q <= 0.0 || w_q > 1.0 {
            return Err(ModelError::new(what, format!("w_q {w_q} is not in (0, 1]")));
        }
        if !max_p.is_finite() || max_p <= 0.0 || max_p > 1.0 {
            return Err(ModelError::new(
                what,
                format!("max_p {max_p} is not in (0, 1]"),
            ));
        }
        if min_th >= max_th {
            return Err(ModelError::new(
                what,
                format!("min_th {min_th} must be less than max_th {max_th}"),
            ));
        }
        if max_th > MAX_THRESHOLD {
            return Err(ModelError::new(
                what,
                format!("max_th {max_th} is larger than {MAX_THRESHOLD}"),
            ));
        }
        let to_fx = |x: f64| ((x * P_ONE as f64).round() as u64).clamp(1, P_ONE);
        Ok(RedConfig {
            variant,
            measure,
            w_q,
            min_th,
            max_th,
            max_p,
            w_q_fx: to_fx(w_q),
            max_p_fx: to_fx(max_p),
        })
    }

    /// `red w_q/min_th/max_th/max_p`.
    pub fn red(
        w_q: f64,
        min_th: u64,
        max_th: u64,
        max_p: f64,
        measure: QueueMeasure,
    ) -> Result<RedConfig, ModelError> {
        RedConfig::new(RedVariant::Red, w_q, min_th, max_th, max_p, measure)
    }

    /// `gred w_q/min_th/max_th/max_p`.
    pub fn gred(
        w_q: f64,
        min_th: u64,
        max_th: u64,
        max_p: f64,
        measure: QueueMeasure,
    ) -> Result<RedConfig, ModelError> {
        RedConfig::new(RedVariant::Gentle, w_q, min_th, max_th, max_p, measure)
    }

    /// RED or GRED.
    pub fn variant(&self) -> RedVariant {
        self.variant
    }
    /// Slots or bytes.
    pub fn measure(&self) -> QueueMeasure {
        self.measure
    }
    /// The averaging weight.
    pub fn w_q(&self) -> f64 {
        self.w_q
    }
    /// The lower threshold, in [`RedConfig::measure`] units.
    pub fn min_th(&self) -> u64 {
        self.min_th
    }
    /// The upper threshold, in [`RedConfig::measure`] units.
    pub fn max_th(&self) -> u64 {
        self.max_th
    }
    /// The probability at `max_th`.
    pub fn max_p(&self) -> f64 {
        self.max_p
    }

    /// Transmission time of dummynet's typical packet
    /// ([`RED_AVG_PKT_SIZE`] bytes) at `rate`: the `pkt_tx_time` to pass to
    /// [`Red::on_enqueue`]. Zero for an unlimited link.
    pub fn typical_tx_time(rate: Rate) -> Duration {
        if rate.is_unlimited() {
            return Duration::ZERO;
        }
        let ns = RED_AVG_PKT_SIZE as u128 * 8 * NS_PER_SEC as u128 / rate.bps() as u128;
        Duration(ns.min(u64::MAX as u128) as u64)
    }

    /// The base drop probability `p_b` for an average queue `avg` (before
    /// byte-mode scaling and count spacing), for reports and tests. RED
    /// returns 1 at and above `max_th`, GRED at and above `2·max_th`.
    pub fn base_probability(&self, avg: f64) -> f64 {
        let (min, max) = (self.min_th as f64, self.max_th as f64);
        if avg < min {
            0.0
        } else if avg < max {
            self.max_p * (avg - min) / (max - min)
        } else if self.variant == RedVariant::Gentle && avg < 2.0 * max {
            self.max_p + (1.0 - self.max_p) * (avg - max) / max
        } else {
            1.0
        }
    }
}

impl fmt::Display for RedConfig {
    /// The command words: `red 0.002/5/15/0.1`, `gred 0.002/5/15/0.1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = match self.variant {
            RedVariant::Red => "red",
            RedVariant::Gentle => "gred",
        };
        write!(
            f,
            "{word} {}/{}/{}/{}",
            self.w_q, self.min_th, self.max_th, self.max_p
        )
    }
}

/// The state of one RED/GRED queue.
#[derive(Clone, Debug)]
pub struct Red {
    cfg: RedConfig,
    /// Average queue size, [`AVG_SHIFT`] fractional bits.
    avg: u64,
    /// Packets since the last drop; −1 = "just entered the drop region"
    /// (dummynet's `q->count`).
    count: i64,
    /// The uniform draw `R` the spacing compares against, 32-bit fraction.
    random: u32,
    rng: StageRng,
    /// `(1 − w_q)^(2^k)` in [`P_SHIFT`] fixed point.
    decay_pow2: [u64; 64],
}

impl Red {
    /// A RED queue with an empty history, drawing from `rng`.
    pub fn new(cfg: RedConfig, rng: StageRng) -> Red {
        let mut decay_pow2 = [0u64; 64];
        decay_pow2[0] = P_ONE - cfg.w_q_fx;
        for k in 1..64 {
            let prev = decay_pow2[k - 1];
            decay_pow2[k] = (prev * prev) >> P_SHIFT;
        }
        Red {
            cfg,
            avg: 0,
            count: -1,
            random: 0,
            rng,
            decay_pow2,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RedConfig {
        &self.cfg
    }

    /// The current average queue size, in slots or bytes (reports only).
    pub fn avg(&self) -> f64 {
        self.avg as f64 / (1u64 << AVG_SHIFT) as f64
    }

    /// Decides the fate of an arriving packet: `true` = drop it.
    ///
    /// * `queue_len` — the queue it finds, in slots or bytes as configured
    ///   (not counting itself).
    /// * `pkt_len` — its length in bytes (byte-mode scaling).
    /// * `idle_since` — when the queue is empty, the instant it became empty
    ///   (dummynet's `q_time`); ignored when `queue_len > 0`. `None` with an
    ///   empty queue counts as zero idle time.
    /// * `pkt_tx_time` — transmission time of a typical packet at the link
    ///   rate ([`RedConfig::typical_tx_time`]); zero for an unlimited link,
    ///   where any idle time empties the average.
    ///
    /// Cost: O(1), at most 64 multiplications for the idle decay; no
    /// allocation; at most one random draw.
    pub fn on_enqueue(
        &mut self,
        now: Instant,
        queue_len: u64,
        pkt_len: u32,
        idle_since: Option<Instant>,
        pkt_tx_time: Duration,
    ) -> bool {
        self.update_avg(now, queue_len, idle_since, pkt_tx_time);
        self.decide(pkt_len)
    }

    fn update_avg(
        &mut self,
        now: Instant,
        queue_len: u64,
        idle_since: Option<Instant>,
        pkt_tx_time: Duration,
    ) {
        if queue_len > 0 {
            // avg += (q − avg)·w_q, in i128 so the difference may be negative;
            // q is capped at 2·MAX_THRESHOLD (beyond every threshold) so that
            // avg stays below 2⁶³.
            let q = (queue_len.min(2 * MAX_THRESHOLD) as i128) << AVG_SHIFT;
            let diff = q - self.avg as i128;
            let step = (diff * self.cfg.w_q_fx as i128) >> P_SHIFT;
            self.avg = (self.avg as i128 + step).max(0) as u64;
            return;
        }
        if self.avg == 0 {
            return;
        }
        let idle = idle_since.map_or(Duration::ZERO, |t| now.saturating_since(t));
        // m = idle / s packet times; any idle time on an unlimited link
        // (s = 0) could have sent everything.
        let m = match idle.0.checked_div(pkt_tx_time.0) {
            Some(m) => m,
            None if idle.0 == 0 => 0,
            None => {
                self.avg = 0;
                return;
            }
        };
        // (1 − w_q)^(1+m) by square-and-multiply over the precomputed powers.
        let mut factor = P_ONE;
        let mut e = m.saturating_add(1);
        let mut k = 0;
        while e != 0 && factor != 0 {
            if e & 1 == 1 {
                factor = (factor * self.decay_pow2[k]) >> P_SHIFT;
            }
            e >>= 1;
            k += 1;
        }
        self.avg = ((self.avg as u128 * factor as u128) >> P_SHIFT) as u64;
    }

    fn decide(&mut self, pkt_len: u32) -> bool {
        let cfg = &self.cfg;
        let min_fx = cfg.min_th << AVG_SHIFT;
        let max_fx = cfg.max_th << AVG_SHIFT;
        let avg = self.avg;
        if avg < min_fx {
            self.count = -1;
            return false;
        }
        let mut p_b: u64 = if avg < max_fx {
            // max_p·(avg − min_th)/(max_th − min_th)
            (cfg.max_p_fx as u128 * (avg - min_fx) as u128 / (max_fx - min_fx) as u128) as u64
        } else if cfg.variant == RedVariant::Gentle && avg < 2 * max_fx {
            // max_p + (1 − max_p)·(avg − max_th)/max_th
            cfg.max_p_fx
                + ((P_ONE - cfg.max_p_fx) as u128 * (avg - max_fx) as u128 / max_fx as u128) as u64
        } else {
            self.count = -1;
            return true;
        };
        if cfg.measure == QueueMeasure::Bytes {
            p_b = (p_b as u128 * pkt_len as u128 / RED_MAX_PKT_SIZE as u128).min(P_ONE as u128)
                as u64;
        }
        self.count += 1;
        if self.count == 0 {
            self.random = self.rng.next_u32();
            return false;
        }
        // Drop when count·p_b > R (dummynet: SCALE_MUL(p_b, SCALE(count)) > random).
        if p_b as u128 * self.count as u128 > self.random as u128 {
            self.count = 0;
            self.random = self.rng.next_u32();
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_from_seed;

    fn red(w_q: f64, min: u64, max: u64, max_p: f64) -> RedConfig {
        RedConfig::red(w_q, min, max, max_p, QueueMeasure::Slots).expect("valid")
    }

    /// Exact mean and variance of the gap `n = ⌊r/P⌋ + 1` between drops, for
    /// `r` uniform on `[0, 2³²)` and fixed-point `p_b = P/2³²`: the drop
    /// happens at the first `n` with `n·P > r`.
    fn gap_moments(p_fx: u64) -> (f64, f64) {
        let n = P_ONE as f64;
        let p = p_fx as f64;
        let q = P_ONE / p_fx; // full blocks of P values of r
        let rem = (P_ONE - q * p_fx) as f64; // r values with ⌊r/P⌋ = q
        let qf = q as f64;
        // floor(r/P) = k for P values of r each, k = 0..q−1, and q for `rem`.
        let sum_k = p * qf * (qf - 1.0) / 2.0 + qf * rem;
        let sum_k2 = p * (qf - 1.0) * qf * (2.0 * qf - 1.0) / 6.0 + qf * qf * rem;
        let mean_k = sum_k / n;
        let var = sum_k2 / n - mean_k * mean_k;
        (mean_k + 1.0, var)
    }

    /// Feeds `n` arrivals finding a constant queue `q`; returns the drops.
    fn drops_at(model: &mut Red, q: u64, pkt_len: u32, n: usize) -> usize {
        (0..n)
            .filter(|_| model.on_enqueue(Instant::ZERO, q, pkt_len, None, Duration(1)))
            .count()
    }

    /// Checks the measured drop fraction against the renewal-theory
    /// expectation within 3σ, for a steady base probability `p_b`.
    fn assert_drop_fraction(drops: usize, n: usize, p_b: f64) {
        let p_fx = (p_b * P_ONE as f64).round() as u64;
        let (mu, var) = gap_moments(p_fx);
        // Renewal CLT: drops in n trials ≈ N(n/μ, n·σ²/μ³).
        let expect = n as f64 / mu;
        let sigma = (n as f64 * var / mu.powi(3)).sqrt();
        assert!(
            (drops as f64 - expect).abs() <= 3.0 * sigma + 1.0,
            "p_b {p_b}: {drops} drops in {n}, expected {expect:.1} ± {:.1} (3σ); \
             a memoryless p_b would give {:.1}",
            3.0 * sigma,
            n as f64 * p_b
        );
    }

    /// Pass proves: with avg held between min_th and max_th (w_q = 1 pins avg
    /// to the queue), drops follow the linear law p_b = max_p·(avg−min_th)/
    /// (max_th−min_th) with uniform spacing (fraction ≈ 2p_b/(1+p_b)), at
    /// three points of the line, within 3σ of the exact expectation. A
    /// memoryless p_b, a wrong slope or a wrong offset all fail.
    #[test]
    fn red_drop_fraction_follows_linear_law_with_uniform_spacing() {
        let cfg = red(1.0, 5, 15, 0.1);
        for (i, q) in [7u64, 10, 14].into_iter().enumerate() {
            let mut model = Red::new(cfg, rng_from_seed(100 + i as u64));
            let n = 400_000;
            let drops = drops_at(&mut model, q, 1000, n);
            let p_b = cfg.base_probability(q as f64);
            assert!((p_b - 0.1 * (q as f64 - 5.0) / 10.0).abs() < 1e-12);
            assert_drop_fraction(drops, n, p_b);
            // And the closed form for 1/p_b integer-ish: ≈ 2p_b/(1+p_b).
            let frac = drops as f64 / n as f64;
            assert!((frac - 2.0 * p_b / (1.0 + p_b)).abs() < 0.1 * p_b, "{frac}");
        }
    }

    /// Pass proves: an average below min_th never drops, however long.
    #[test]
    fn below_min_th_never_drops() {
        let mut model = Red::new(red(1.0, 5, 15, 1.0), rng_from_seed(1));
        assert_eq!(drops_at(&mut model, 4, 1500, 100_000), 0);
        // And with a small w_q the average stays below min_th for q = 4.
        let mut model = Red::new(red(0.002, 5, 15, 1.0), rng_from_seed(2));
        assert_eq!(drops_at(&mut model, 4, 1500, 100_000), 0);
        assert!(model.avg() > 3.9 && model.avg() < 4.0 + 1e-9);
    }

    /// Pass proves: RED drops every packet once avg ≥ max_th.
    #[test]
    fn red_above_max_th_always_drops() {
        let mut model = Red::new(red(1.0, 5, 15, 0.01), rng_from_seed(3));
        assert_eq!(drops_at(&mut model, 15, 1500, 10_000), 10_000);
        assert_eq!(drops_at(&mut model, 25, 1500, 10_000), 10_000);
    }

    /// Pass proves: GRED between max_th and 2·max_th follows the second line
    /// from max_p to 1 (within 3σ at two points), and drops everything at
    /// and above 2·max_th; RED with the same numbers would drop everything.
    #[test]
    fn gred_follows_second_segment() {
        let cfg = RedConfig::gred(1.0, 5, 15, 0.1, QueueMeasure::Slots).expect("valid");
        for (i, q) in [16u64, 20].into_iter().enumerate() {
            let mut model = Red::new(cfg, rng_from_seed(200 + i as u64));
            let n = 200_000;
            let drops = drops_at(&mut model, q, 1500, n);
            let p_b = cfg.base_probability(q as f64);
            assert!((p_b - (0.1 + 0.9 * (q as f64 - 15.0) / 15.0)).abs() < 1e-12);
            assert!(drops < n, "GRED must not drop everything at {q}");
            assert_drop_fraction(drops, n, p_b);
        }
        let mut model = Red::new(cfg, rng_from_seed(9));
        assert_eq!(drops_at(&mut model, 30, 1500, 10_000), 10_000);
    }

    /// Pass proves: in byte mode p_b is scaled by len/1500, so 750-byte
    /// packets see half the base probability (within 3σ).
    #[test]
    fn byte_mode_scales_by_packet_length() {
        let cfg = RedConfig::red(1.0, 5000, 15000, 0.2, QueueMeasure::Bytes).expect("valid");
        let mut model = Red::new(cfg, rng_from_seed(11));
        let n = 300_000;
        let drops = drops_at(&mut model, 12_500, 750, n);
        assert_drop_fraction(drops, n, cfg.base_probability(12_500.0) * 0.5);
    }

    /// Pass proves: the EWMA converges at rate w_q, (1−w_q)^k towards the
    /// instantaneous queue.
    #[test]
    fn average_follows_ewma() {
        let mut model = Red::new(red(0.002, 500, 1500, 0.1), rng_from_seed(4));
        for _ in 0..1000 {
            model.on_enqueue(Instant::ZERO, 100, 1500, None, Duration(1));
        }
        let expect = 100.0 * (1.0 - (1.0f64 - 0.002).powi(1000));
        assert!((model.avg() - expect).abs() < 0.01, "{}", model.avg());
    }

    /// Pass proves: idle time lowers avg by (1−w_q)^(1+idle/s) and more idle
    /// lowers it more; an empty queue without idle time decays by one step;
    /// an unlimited link (s = 0) empties the average.
    #[test]
    fn idle_decay_lowers_avg() {
        let cfg = red(0.01, 5, 15, 0.1);
        let warm = |seed| {
            let mut m = Red::new(cfg, rng_from_seed(seed));
            for _ in 0..5000 {
                m.on_enqueue(Instant::ZERO, 10, 1500, None, Duration(1));
            }
            m
        };
        let s = Duration::from_micros(400);
        let t0 = Instant(1_000_000_000);
        let mut a = warm(5);
        let before = a.avg();
        assert!((before - 10.0).abs() < 0.01);
        // 100 ms idle = 250 packet times.
        a.on_enqueue(t0 + Duration::from_millis(100), 0, 1500, Some(t0), s);
        let expect = before * 0.99f64.powi(251);
        assert!((a.avg() - expect).abs() < 1e-3, "{} vs {expect}", a.avg());

        let mut b = warm(5);
        b.on_enqueue(t0 + Duration::from_millis(10), 0, 1500, Some(t0), s);
        assert!(b.avg() > a.avg() && b.avg() < before);

        let mut c = warm(5);
        c.on_enqueue(t0, 0, 1500, None, s);
        assert!((c.avg() - before * 0.99).abs() < 1e-3);

        let mut d = warm(5);
        d.on_enqueue(t0 + Duration(1), 0, 1500, Some(t0), Duration::ZERO);
        assert_eq!(d.avg(), 0.0);
    }

    /// Pass proves: bad parameters are rejected and Display prints the
    /// command words.
    #[test]
    fn config_validates_and_displays() {
        assert!(RedConfig::red(0.0, 5, 15, 0.1, QueueMeasure::Slots).is_err());
        assert!(RedConfig::red(1.5, 5, 15, 0.1, QueueMeasure::Slots).is_err());
        assert!(RedConfig::red(0.002, 15, 15, 0.1, QueueMeasure::Slots).is_err());
        assert!(RedConfig::red(0.002, 5, 15, 0.0, QueueMeasure::Slots).is_err());
        assert!(RedConfig::red(0.002, 5, 15, f64::NAN, QueueMeasure::Slots).is_err());
        assert_eq!(red(0.002, 5, 15, 0.1).to_string(), "red 0.002/5/15/0.1");
        let g = RedConfig::gred(0.002, 5, 15, 0.1, QueueMeasure::Bytes).expect("valid");
        assert_eq!(g.to_string(), "gred 0.002/5/15/0.1");
        assert_eq!(
            RedConfig::typical_tx_time(Rate::from_bps(10_000_000)),
            Duration::from_nanos(409_600)
        );
    }
}
