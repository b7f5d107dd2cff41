//! PIE: early random drop on arrival with a probability steered by a
//! proportional-integral controller on the queue delay.
//!
//! Sources: R. Pan, P. Natarajan, F. Baker, G. White, RFC 8033,
//! "Proportional Integral Controller Enhanced (PIE)" (2017), §4–§5 and its
//! pseudocode; Linux `net/sched/sch_pie.c` and `include/net/pie.h`
//! (`pie_drop_early`, `pie_calculate_probability`), whose fixed-point
//! arithmetic this model follows.
//!
//! Command words (tc-pie(8) names, RFC 8033 units):
//! `pie target 15ms tupdate 15ms alpha 0.125 beta 1.25 max_burst 150ms`.
//!
//! * `target` — reference queue delay `QDELAY_REF` (default 15 ms).
//! * `tupdate` — period `T_UPDATE` of the probability update (default 15 ms).
//! * `alpha`, `beta` — controller gains in Hz, in `[0, 2]` (defaults 0.125
//!   and 1.25). tc-pie(8) takes them in sixteenths: its `alpha 2 beta 20`
//!   is this `alpha 0.125 beta 1.25`.
//! * `max_burst` — burst allowance `MAX_BURST` (default 150 ms), during which
//!   no early drop happens after a quiet period.
//!
//! Every `tupdate` the drop probability moves by
//! `alpha·(qdelay − target) + beta·(qdelay − qdelay_old)`, with RFC 8033's
//! auto-scaling (the step is divided by 2, 8, 32, 128, 512, 2048 when the
//! probability is below 10 %, 1 %, 0.1 %, 0.01 %, 0.001 %, 0.0001 %), at most
//! +2 % per update once above 10 %, +2 % extra when the delay exceeds 250 ms,
//! and a decay to 63/64 when the delay was 0 in two consecutive updates. The
//! burst allowance shrinks by `tupdate` per update and is restored when the
//! probability is 0 and both delays are below `target/2`.
//!
//! On arrival (RFC 8033 `drop_early` with §5.4 de-randomization, as Linux):
//! no drop while burst allowance remains, or while `qdelay_old < target/2`
//! and the probability is below 20 %, or while fewer than two MTUs are
//! queued; otherwise the probability is accumulated and a packet is dropped
//! at random once the sum reaches 0.85, and surely once it reaches 8.5.
//!
//! Time without a timer. The model never reads a clock and owns no timer:
//! each [`Pie::on_enqueue`] first runs the updates that fell due since the
//! previous call (at `first call + k·tupdate`), with the queue delay the
//! caller passes now. Catching up stops early once an update leaves the
//! state unchanged (the rest would too), and after [`MAX_CATCH_UP`] updates;
//! the update grid stays aligned either way. The delay is whatever estimate
//! the caller keeps: RFC 8033's `backlog / departure rate`, or Linux's
//! default, the sojourn time of the last dequeued packet.
//!
//! Fixed point as Linux: probabilities are `u64` fractions of
//! `MAX_PROB = 2⁵⁶ − 1`, gains are per-nanosecond increments of it.
//!
//! Left out: ECN marking (`ecn`), `bytemode`, RFC 8033's departure-rate
//! estimator (the caller supplies the delay), and the optional §5.1
//! activation/deactivation.

use core::fmt;

use rand::RngCore;

use crate::models::ModelError;
use crate::rng::StageRng;
use crate::time::{Duration, Instant, NS_PER_SEC};

/// Probability 1 (Linux `MAX_PROB`, `U64_MAX >> 8`).
const MAX_PROB: u64 = u64::MAX >> 8;
/// Most updates run by one catch-up.
pub const MAX_CATCH_UP: u32 = 4096;
/// Above this delay the probability gets an extra +2 % per update.
const HIGH_DELAY: Duration = Duration::from_millis(250);

/// A validated `pie` configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PieConfig {
    target: Duration,
    tupdate: Duration,
    alpha: f64,
    beta: f64,
    max_burst: Duration,
    /// `alpha` as `MAX_PROB` increments per nanosecond of delay error.
    alpha_fx: u64,
    /// `beta` likewise.
    beta_fx: u64,
}

impl Default for PieConfig {
    /// RFC 8033 defaults: `target 15ms tupdate 15ms alpha 0.125 beta 1.25
    /// max_burst 150ms`.
    fn default() -> Self {
        PieConfig::new(
            Duration::from_millis(15),
            Duration::from_millis(15),
            0.125,
            1.25,
            Duration::from_millis(150),
        )
        .expect("RFC 8033 defaults are valid")
    }
}

impl PieConfig {
    /// `pie target T tupdate U alpha A beta B max_burst M`.
    pub fn new(
        target: Duration,
        tupdate: Duration,
        alpha: f64,
        beta: f64,
        max_burst: Duration,
    ) -> Result<PieConfig, ModelError> {
        if target.0 == 0 {
            return Err(ModelError::new("pie", "target must be positive"));
        }
        if tupdate.0 == 0 {
            return Err(ModelError::new("pie", "tupdate must be positive"));
        }
        for (name, g) in [("alpha", alpha), ("beta", beta)] {
            if !g.is_finite() || !(0.0..=2.0).contains(&g) {
                return Err(ModelError::new(
                    "pie",
                    format!("{name} {g} is not in [0, 2] (Hz)"),
                ));
            }
        }
        let per_ns = |g: f64| (g * MAX_PROB as f64 / NS_PER_SEC as f64).round() as u64;
        Ok(PieConfig {
            target,
            tupdate,
            alpha,
            beta,
            max_burst,
            alpha_fx: per_ns(alpha),
            beta_fx: per_ns(beta),
        })
    }

    /// The reference queue delay.
    pub fn target(&self) -> Duration {
        self.target
    }
    /// The update period.
    pub fn tupdate(&self) -> Duration {
        self.tupdate
    }
    /// Proportional gain, Hz.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
    /// Integral gain, Hz.
    pub fn beta(&self) -> f64 {
        self.beta
    }
    /// The burst allowance.
    pub fn max_burst(&self) -> Duration {
        self.max_burst
    }
}

impl fmt::Display for PieConfig {
    /// `pie target 15ms tupdate 15ms alpha 0.125 beta 1.25 max_burst 150ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "pie target {} tupdate {} alpha {} beta {} max_burst {}",
            self.target, self.tupdate, self.alpha, self.beta, self.max_burst
        )
    }
}

/// The state of one PIE queue.
#[derive(Clone, Debug)]
pub struct Pie {
    cfg: PieConfig,
    /// Drop probability, fraction of [`MAX_PROB`].
    prob: u64,
    /// De-randomization accumulator, fraction of [`MAX_PROB`].
    accu_prob: u64,
    /// Queue delay seen at the previous update.
    qdelay_old: Duration,
    burst_allowance: Duration,
    /// When the next update is due; `None` before the first arrival.
    next_update: Option<Instant>,
    rng: StageRng,
    drops: u64,
}

impl Pie {
    /// A PIE queue with probability 0 and a full burst allowance.
    pub fn new(cfg: PieConfig, rng: StageRng) -> Pie {
        Pie {
            cfg,
            prob: 0,
            accu_prob: 0,
            qdelay_old: Duration::ZERO,
            burst_allowance: cfg.max_burst,
            next_update: None,
            rng,
            drops: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &PieConfig {
        &self.cfg
    }

    /// The current drop probability in `[0, 1]` (reports only).
    pub fn probability(&self) -> f64 {
        self.prob as f64 / MAX_PROB as f64
    }

    /// The remaining burst allowance.
    pub fn burst_allowance(&self) -> Duration {
        self.burst_allowance
    }

    /// Packets this model has told the caller to drop.
    pub fn drops(&self) -> u64 {
        self.drops
    }

    /// When the next probability update falls due (for a caller that wants
    /// updates on time even without arrivals: call [`Pie::advance`] then).
    pub fn next_update(&self) -> Option<Instant> {
        self.next_update
    }

    /// Decides the fate of an arriving packet: `true` = drop it.
    ///
    /// * `queue_delay` — the current queue delay estimate (backlog / drain
    ///   rate, or the sojourn of the last dequeued packet).
    /// * `queue_bytes` — the bytes it finds queued.
    /// * `mtu` — the link MTU: below two MTUs queued PIE never drops.
    ///
    /// Runs the updates due by `now` first ([`Pie::advance`]). Cost: O(1)
    /// per packet, plus at most [`MAX_CATCH_UP`] cheap updates after a long
    /// silence; no allocation; at most one random draw.
    pub fn on_enqueue(
        &mut self,
        now: Instant,
        queue_delay: Duration,
        queue_bytes: u64,
        mtu: u32,
    ) -> bool {
        self.advance(now, queue_delay, queue_bytes);
        let drop = self.drop_early(queue_bytes, mtu);
        if drop {
            self.accu_prob = 0;
            self.drops += 1;
        }
        drop
    }

    /// Runs the probability updates due by `now`, with `queue_delay` and
    /// `queue_bytes` as the queue's current state.
    pub fn advance(&mut self, now: Instant, queue_delay: Duration, queue_bytes: u64) {
        let tupdate = self.cfg.tupdate;
        let Some(mut due) = self.next_update else {
            self.next_update = Some(now + tupdate);
            return;
        };
        let mut runs = 0;
        while now >= due {
            let before = (self.prob, self.qdelay_old, self.burst_allowance);
            self.update(queue_delay, queue_bytes);
            due += tupdate;
            runs += 1;
            let unchanged = before == (self.prob, self.qdelay_old, self.burst_allowance);
            if (unchanged || runs >= MAX_CATCH_UP) && now >= due {
                // Skip the remaining updates, keeping the grid.
                let behind = (now - due).0 / tupdate.0 + 1;
                due += Duration(behind.saturating_mul(tupdate.0));
                break;
            }
        }
        self.next_update = Some(due);
    }

    /// RFC 8033 `calculate_drop_prob`, in Linux's fixed point.
    fn update(&mut self, qdelay: Duration, queue_bytes: u64) {
        let cfg = &self.cfg;
        let qdelay_old = self.qdelay_old;
        // A zero delay with a non-empty queue is a tiny backlog, not an
        // idle queue: no decay then (Linux).
        let mut may_decay = !(qdelay.0 == 0 && queue_bytes != 0);

        let (mut alpha, mut beta) = (cfg.alpha_fx as i128, cfg.beta_fx as i128);
        if self.prob < MAX_PROB / 10 {
            alpha >>= 1;
            beta >>= 1;
            let mut power = 100u64;
            while self.prob < MAX_PROB / power && power <= 1_000_000 {
                alpha >>= 2;
                beta >>= 2;
                power *= 10;
            }
        }
        let mut delta = alpha * (qdelay.0 as i128 - cfg.target.0 as i128)
            + beta * (qdelay.0 as i128 - qdelay_old.0 as i128);
        let two_percent = (MAX_PROB / 50) as i128;
        if delta > two_percent && self.prob >= MAX_PROB / 10 {
            delta = two_percent;
        }
        if qdelay > HIGH_DELAY {
            delta += two_percent;
        }
        let p = self.prob as i128 + delta;
        self.prob = if p >= MAX_PROB as i128 {
            may_decay = false;
            MAX_PROB
        } else {
            p.max(0) as u64
        };
        if qdelay.0 == 0 && qdelay_old.0 == 0 && may_decay {
            self.prob -= self.prob / 64;
        }

        self.burst_allowance = Duration(self.burst_allowance.0.saturating_sub(cfg.tupdate.0));
        let half = cfg.target.0 / 2;
        if self.prob == 0 && qdelay.0 < half && qdelay_old.0 < half {
            self.burst_allowance = cfg.max_burst;
        }
        self.qdelay_old = qdelay;
    }

    /// RFC 8033 `drop_early` with de-randomization (Linux `pie_drop_early`).
    fn drop_early(&mut self, queue_bytes: u64, mtu: u32) -> bool {
        if self.burst_allowance.0 > 0 {
            return false;
        }
        if self.qdelay_old.0 < self.cfg.target.0 / 2 && self.prob < MAX_PROB / 5 {
            return false;
        }
        if queue_bytes < 2 * mtu as u64 {
            return false;
        }
        if self.prob == 0 {
            self.accu_prob = 0;
            return false;
        }
        self.accu_prob = self.accu_prob.saturating_add(self.prob);
        if self.accu_prob < (MAX_PROB / 100) * 85 {
            return false;
        }
        if self.accu_prob >= (MAX_PROB / 2) * 17 {
            return true;
        }
        (self.rng.next_u64() >> 8) < self.prob
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_from_seed;
    use std::collections::VecDeque;

    const MTU: u32 = 1500;
    const SIZE: u64 = 1500;
    /// 10 Mbit/s, 1500-byte packets: 1.2 ms per packet.
    const SERVICE: Duration = Duration(1_200_000);

    struct Run {
        /// (dequeue time, sojourn) of every packet sent.
        sent: Vec<(Instant, Duration)>,
        aqm_drops: u64,
        tail_drops: u64,
        max_prob: f64,
    }

    /// A FIFO of at most `limit` packets on a fixed-rate link fed one packet
    /// per `gap` for `duration`; PIE (if any) decides at each arrival from
    /// the queue delay estimate backlog/rate, as RFC 8033 §4.3.
    fn simulate(mut pie: Option<&mut Pie>, gap: Duration, limit: usize, duration: Duration) -> Run {
        let end = Instant::ZERO + duration;
        let mut queue: VecDeque<Instant> = VecDeque::new();
        let mut next_arrival = Instant::ZERO;
        let mut link_free = Instant::ZERO;
        let mut run = Run {
            sent: Vec::new(),
            aqm_drops: 0,
            tail_drops: 0,
            max_prob: 0.0,
        };
        loop {
            let serve_at = if queue.is_empty() {
                Instant::MAX
            } else {
                link_free
            };
            if next_arrival.min(serve_at) >= end {
                break;
            }
            if next_arrival <= serve_at {
                let now = next_arrival;
                next_arrival += gap;
                let bytes = queue.len() as u64 * SIZE;
                let delay = Duration(queue.len() as u64 * SERVICE.0);
                if let Some(p) = pie.as_deref_mut() {
                    let drop = p.on_enqueue(now, delay, bytes, MTU);
                    run.max_prob = run.max_prob.max(p.probability());
                    if drop {
                        run.aqm_drops += 1;
                        continue;
                    }
                }
                if queue.len() < limit {
                    queue.push_back(now);
                } else {
                    run.tail_drops += 1;
                }
                continue;
            }
            let now = serve_at;
            if let Some(arrived) = queue.pop_front() {
                run.sent.push((now, now - arrived));
                link_free = now + SERVICE;
            }
        }
        run
    }

    fn mean_sojourn_after(run: &Run, from: Instant) -> f64 {
        let s: Vec<f64> = run
            .sent
            .iter()
            .filter(|(t, _)| *t >= from)
            .map(|(_, d)| d.as_millis_f64())
            .collect();
        assert!(!s.is_empty());
        s.iter().sum::<f64>() / s.len() as f64
    }

    /// Pass proves: under a 1.2× unresponsive overload for 10 s PIE keeps the
    /// mean queue delay over the last 5 s within ±50 % of its 15 ms target,
    /// dropping about the excess 1/6 of arrivals, while the same FIFO without
    /// PIE fills to its 1000-packet bound (delay ≈ 1.2 s).
    #[test]
    fn pie_controls_queue_delay_under_overload() {
        let cfg = PieConfig::default();
        let mut pie = Pie::new(cfg, rng_from_seed(7));
        let dur = Duration::from_secs(10);
        let gap = Duration(1_000_000); // 1.2× the 1.2 ms service time
        let with = simulate(Some(&mut pie), gap, 1000, dur);
        let mean = mean_sojourn_after(&with, Instant::ZERO + Duration::from_secs(5));
        assert!(
            (7.5..=22.5).contains(&mean),
            "mean delay {mean} ms with PIE"
        );
        assert_eq!(with.tail_drops, 0);
        let frac = with.aqm_drops as f64 / 10_000.0;
        assert!((0.12..0.25).contains(&frac), "dropped fraction {frac}");

        let without = simulate(None, gap, 1000, dur);
        let mean = mean_sojourn_after(&without, Instant::ZERO + Duration::from_secs(5));
        assert!(mean > 1000.0, "mean delay {mean} ms without PIE");
    }

    /// Pass proves: under light load (0.5×) the probability never leaves 0
    /// and nothing is dropped.
    #[test]
    fn probability_stays_zero_under_light_load() {
        let mut pie = Pie::new(PieConfig::default(), rng_from_seed(8));
        let run = simulate(
            Some(&mut pie),
            Duration(2_400_000),
            1000,
            Duration::from_secs(10),
        );
        assert_eq!(run.max_prob, 0.0);
        assert_eq!(run.aqm_drops, 0);
        assert_eq!(pie.burst_allowance(), PieConfig::default().max_burst());
    }

    /// Pass proves: one update moves the probability by
    /// alpha·(qdelay − target) + beta·(qdelay − qdelay_old), scaled by 1/2
    /// below 10 %, and updates run only at the tupdate grid.
    #[test]
    fn update_follows_pi_law() {
        let cfg = PieConfig::default();
        let mut pie = Pie::new(cfg, rng_from_seed(9));
        let t0 = Instant(1_000_000_000);
        let d = Duration::from_millis(35);
        pie.advance(t0, d, 100_000);
        assert_eq!(pie.probability(), 0.0, "first call only starts the grid");
        pie.advance(t0 + Duration::from_millis(14), d, 100_000);
        assert_eq!(pie.probability(), 0.0, "not due yet");
        pie.advance(t0 + Duration::from_millis(15), d, 100_000);
        // p = 0 → scaled by 1/2 and then by 1/4 five times (prob < 0.0001 %):
        // divisor 2048.
        let expect = (0.125 * 0.020 + 1.25 * 0.035) / 2048.0;
        assert!(
            (pie.probability() - expect).abs() < 1e-9,
            "{} vs {expect}",
            pie.probability()
        );
        // From 10 % upward the step is unscaled but capped at +2 %.
        pie.prob = MAX_PROB / 10 + 1;
        pie.qdelay_old = d;
        pie.advance(t0 + Duration::from_millis(30), d, 100_000);
        let expect = 0.1 + 0.125 * 0.020;
        assert!((pie.probability() - expect).abs() < 1e-6);
        pie.advance(
            t0 + Duration::from_millis(45),
            Duration::from_millis(500),
            100_000,
        );
        assert!(
            (pie.probability() - (expect + 0.04)).abs() < 1e-6,
            "cap + 2 %"
        );
    }

    /// Pass proves: the lazy catch-up decays the probability after a silence
    /// exactly as on-time updates with a zero delay would, and stops at the
    /// idle fixed point.
    #[test]
    fn lazy_updates_decay_after_idle() {
        let cfg = PieConfig::default();
        let mut lazy = Pie::new(cfg, rng_from_seed(10));
        let mut eager = Pie::new(cfg, rng_from_seed(10));
        let t0 = Instant::ZERO;
        for p in [&mut lazy, &mut eager] {
            p.advance(t0, Duration::ZERO, 0);
            p.prob = MAX_PROB / 2;
            p.burst_allowance = Duration::ZERO;
        }
        let later = t0 + Duration::from_millis(15 * 40);
        lazy.advance(later, Duration::ZERO, 0);
        for k in 1..=40 {
            eager.advance(t0 + Duration::from_millis(15 * k), Duration::ZERO, 0);
        }
        assert_eq!(lazy.prob, eager.prob);
        assert!(lazy.probability() < 0.5);
        assert_eq!(lazy.next_update(), Some(later + cfg.tupdate()));
        // A very long silence reaches 0 and a full burst allowance.
        lazy.advance(later + Duration::from_secs(3600), Duration::ZERO, 0);
        assert_eq!(lazy.probability(), 0.0);
        assert_eq!(lazy.burst_allowance(), cfg.max_burst());
    }

    /// Pass proves: parameters are validated and Display prints the command
    /// words.
    #[test]
    fn config_validates_and_displays() {
        let ms = Duration::from_millis;
        assert!(PieConfig::new(Duration::ZERO, ms(15), 0.125, 1.25, ms(150)).is_err());
        assert!(PieConfig::new(ms(15), Duration::ZERO, 0.125, 1.25, ms(150)).is_err());
        assert!(PieConfig::new(ms(15), ms(15), -1.0, 1.25, ms(150)).is_err());
        assert!(PieConfig::new(ms(15), ms(15), 0.125, 3.0, ms(150)).is_err());
        assert!(PieConfig::new(ms(15), ms(15), f64::NAN, 1.25, ms(150)).is_err());
        assert_eq!(
            PieConfig::default().to_string(),
            "pie target 15ms tupdate 15ms alpha 0.125 beta 1.25 max_burst 150ms"
        );
    }
}
