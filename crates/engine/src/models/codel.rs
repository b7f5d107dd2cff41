//! CoDel: drop at dequeue when the sojourn time has stayed above a target
//! for an interval.
//!
//! Sources: K. Nichols, V. Jacobson, A. McGregor, J. Iyengar, RFC 8289,
//! "Controlled Delay Active Queue Management" (2018), §5 and its pseudocode;
//! Linux `include/net/codel.h` and `include/net/codel_impl.h`
//! (`codel_should_drop`, `codel_dequeue`, `codel_Newton_step`,
//! `codel_control_law`), whose integer arithmetic this model follows.
//!
//! Command words, as tc-codel(8): `codel target 5ms interval 100ms`.
//!
//! * `target` — acceptable standing queue delay (default 5 ms); a duration
//!   in integer nanoseconds.
//! * `interval` — the window over which the minimum sojourn must stay above
//!   `target` before dropping starts, on the order of a worst-case RTT
//!   (default 100 ms).
//!
//! The queue's size limit is the pipe's (`queue N`), not CoDel's.
//!
//! Per head packet, as RFC 8289's `dodequeue`: the packet is *ok to drop*
//! when its sojourn time is `≥ target`, more than one MTU remains queued
//! behind it, and that has been so continuously for `interval`. Outside the
//! dropping state, the first ok-to-drop packet is dropped and the dropping
//! state entered; inside it, packets are dropped at times
//! `drop_next += interval/√count`, `count` counting drops, until a packet is
//! not ok to drop. Re-entering soon after leaving (within 16 intervals)
//! resumes from `count − lastcount` drops rather than 1, the Linux rule the
//! RFC adopts.
//!
//! `interval/√count` is computed as Linux does, without a square root or a
//! division: `rec_inv_sqrt ≈ 1/√count` is kept as a 16-bit fraction and
//! refined by one Newton step, `x ← x·(3 − count·x²)/2`, at each change of
//! `count`; the law is then `interval · rec_inv_sqrt / 2³²`
//! (`reciprocal_scale`). Times are full `u64` nanoseconds rather than
//! Linux's `ns >> 10` in 32 bits.
//!
//! Driving protocol. RFC 8289's `dequeue` may drop several head packets in
//! one call; here the caller drives that loop: it calls
//! [`Codel::on_dequeue`] for the head packet, and while the answer is
//! `true` drops it and calls again, with the same `now`, for the next head
//! packet, or [`Codel::on_empty`] if the queue ran dry. A `false` answer
//! means "send this packet"; the next call starts a new dequeue. An empty
//! queue at a dequeue attempt is reported with [`Codel::on_empty`] too.
//! CoDel is deterministic; it owns no random generator.
//!
//! Left out: ECN marking (`ecn`) and `ce_threshold`, and FQ-CoDel's
//! per-flow queues (one [`Codel`] per queue covers them).

use core::fmt;

use crate::models::ModelError;
use crate::time::{Duration, Instant};

/// Bits of `rec_inv_sqrt` (Linux stores it in a `u16`).
const REC_INV_SQRT_BITS: u32 = 16;
/// Shift from the stored 16-bit value to a Q0.32 fraction.
const REC_INV_SQRT_SHIFT: u32 = 32 - REC_INV_SQRT_BITS;

/// A validated `codel` configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CodelConfig {
    target: Duration,
    interval: Duration,
}

impl Default for CodelConfig {
    /// RFC 8289 and Linux defaults: `target 5ms interval 100ms`.
    fn default() -> Self {
        CodelConfig {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
        }
    }
}

impl CodelConfig {
    /// `codel target T interval I`; both must be positive.
    pub fn new(target: Duration, interval: Duration) -> Result<CodelConfig, ModelError> {
        if target.0 == 0 {
            return Err(ModelError::new("codel", "target must be positive"));
        }
        if interval.0 == 0 {
            return Err(ModelError::new("codel", "interval must be positive"));
        }
        Ok(CodelConfig { target, interval })
    }

    /// The target sojourn time.
    pub fn target(&self) -> Duration {
        self.target
    }

    /// The interval.
    pub fn interval(&self) -> Duration {
        self.interval
    }
}

impl fmt::Display for CodelConfig {
    /// The command words: `codel target 5ms interval 100ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "codel target {} interval {}", self.target, self.interval)
    }
}

/// Where the caller is in RFC 8289's `dequeue` loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The next call starts a new dequeue.
    Fresh,
    /// The previous packet was dropped on entering the dropping state; the
    /// RFC sends the next one whatever its sojourn.
    AfterFirstDrop,
    /// The previous packet was dropped inside the dropping state.
    InDropLoop,
}

/// The state of one CoDel queue (RFC 8289's `first_above_time_`,
/// `drop_next_`, `count_`, `lastcount_`, `dropping_`).
#[derive(Clone, Debug)]
pub struct Codel {
    cfg: CodelConfig,
    /// When the sojourn time will have been above target for an interval;
    /// `None` while it is below.
    first_above_time: Option<Instant>,
    /// The time of the next drop while dropping.
    drop_next: Instant,
    /// Drops since entering the dropping state (wrapping, as Linux).
    count: u32,
    /// `count` when the dropping state was last entered.
    lastcount: u32,
    dropping: bool,
    /// ≈ 1/√count as a 16-bit fraction.
    rec_inv_sqrt: u16,
    phase: Phase,
    drops: u64,
}

impl Codel {
    /// A CoDel queue in the non-dropping state.
    pub fn new(cfg: CodelConfig) -> Codel {
        Codel {
            cfg,
            first_above_time: None,
            drop_next: Instant::ZERO,
            count: 0,
            lastcount: 0,
            dropping: false,
            rec_inv_sqrt: 0,
            phase: Phase::Fresh,
            drops: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &CodelConfig {
        &self.cfg
    }

    /// True while in the dropping state.
    pub fn is_dropping(&self) -> bool {
        self.dropping
    }

    /// Drops since the dropping state was (re)entered.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Packets this model has told the caller to drop.
    pub fn drops(&self) -> u64 {
        self.drops
    }

    /// Decides the fate of the head packet being dequeued: `true` = drop it
    /// (then call again for the next head packet, same `now`).
    ///
    /// * `sojourn` — time the packet spent in the queue (`now` minus its
    ///   enqueue time).
    /// * `queue_bytes` — bytes still queued *behind* it (after removing it),
    ///   RFC 8289's `bytes()` in `dodequeue`.
    /// * `mtu` — the link MTU in bytes: with at most one MTU left, CoDel never
    ///   drops (RFC 8289's `MAXPACKET`, Linux's `psched_mtu`).
    ///
    /// Cost: O(1), integer only, no allocation.
    pub fn on_dequeue(
        &mut self,
        now: Instant,
        sojourn: Duration,
        queue_bytes: u64,
        mtu: u32,
    ) -> bool {
        let ok_to_drop = self.ok_to_drop(now, sojourn, queue_bytes, mtu);
        let phase = core::mem::replace(&mut self.phase, Phase::Fresh);
        match phase {
            Phase::AfterFirstDrop => false,
            Phase::InDropLoop => {
                if !ok_to_drop {
                    self.dropping = false;
                    return false;
                }
                self.drop_next = self.control_law(self.drop_next);
                self.drop_in_loop(now)
            }
            Phase::Fresh if self.dropping => {
                if !ok_to_drop {
                    self.dropping = false;
                    return false;
                }
                self.drop_in_loop(now)
            }
            Phase::Fresh if ok_to_drop => {
                // Enter the dropping state, dropping this packet.
                self.dropping = true;
                let delta = self.count.wrapping_sub(self.lastcount);
                let since_drop_next = now.0 as i128 - self.drop_next.0 as i128;
                if delta > 1 && since_drop_next < 16 * self.cfg.interval.0 as i128 {
                    self.count = delta;
                    self.newton_step();
                } else {
                    self.count = 1;
                    self.rec_inv_sqrt = u16::MAX;
                }
                self.lastcount = self.count;
                self.drop_next = self.control_law(now);
                self.phase = Phase::AfterFirstDrop;
                self.drops += 1;
                true
            }
            Phase::Fresh => false,
        }
    }

    /// The queue is empty (at a dequeue attempt, or after a drop emptied it):
    /// the sojourn time is below target and the dropping state ends.
    pub fn on_empty(&mut self) {
        self.first_above_time = None;
        self.dropping = false;
        self.phase = Phase::Fresh;
    }

    /// Inside the dropping state: drop if the next drop time has come.
    fn drop_in_loop(&mut self, now: Instant) -> bool {
        if now >= self.drop_next {
            self.count = self.count.wrapping_add(1);
            self.newton_step();
            self.phase = Phase::InDropLoop;
            self.drops += 1;
            true
        } else {
            false
        }
    }

    /// RFC 8289 `dodequeue`'s verdict for the head packet.
    fn ok_to_drop(&mut self, now: Instant, sojourn: Duration, queue_bytes: u64, mtu: u32) -> bool {
        if sojourn < self.cfg.target || queue_bytes <= mtu as u64 {
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + self.cfg.interval);
                false
            }
            Some(t) => now >= t,
        }
    }

    /// `x ← x·(3 − count·x²)/2` in Q0.32, as `codel_Newton_step`.
    fn newton_step(&mut self) {
        let invsqrt = (self.rec_inv_sqrt as u64) << REC_INV_SQRT_SHIFT;
        let invsqrt2 = (invsqrt * invsqrt) >> 32;
        let mut val = (3u64 << 32).wrapping_sub(self.count as u64 * invsqrt2);
        val >>= 2; // keep the next product in 64 bits
        val = (val * invsqrt) >> (32 - 2 + 1);
        self.rec_inv_sqrt = (val >> REC_INV_SQRT_SHIFT) as u16;
    }

    /// `t + interval/√count`, as `codel_control_law`.
    fn control_law(&self, t: Instant) -> Instant {
        let scale = (self.rec_inv_sqrt as u128) << REC_INV_SQRT_SHIFT;
        let step = (self.cfg.interval.0 as u128 * scale) >> 32;
        t + Duration(step as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    const MTU: u32 = 1500;

    /// Outcome of a virtual-time FIFO run.
    struct Run {
        /// (dequeue time, sojourn) of every packet sent.
        sent: Vec<(Instant, Duration)>,
        aqm_drops: u64,
        tail_drops: u64,
    }

    /// A FIFO of at most `limit` packets of `size` bytes on a link that
    /// serves one packet per `service`, fed one packet per `gap`, for
    /// `duration`; CoDel (if any) decides at each dequeue.
    fn simulate(
        mut codel: Option<&mut Codel>,
        gap: Duration,
        service: Duration,
        size: u64,
        limit: usize,
        duration: Duration,
    ) -> Run {
        let end = Instant::ZERO + duration;
        let mut queue: VecDeque<Instant> = VecDeque::new();
        let mut next_arrival = Instant::ZERO;
        let mut link_free = Instant::ZERO;
        let mut run = Run {
            sent: Vec::new(),
            aqm_drops: 0,
            tail_drops: 0,
        };
        loop {
            // The link picks its next packet when it is free and the queue
            // is not empty; arrivals at the same instant go first.
            let serve_at = if queue.is_empty() {
                Instant::MAX
            } else {
                link_free
            };
            if next_arrival.min(serve_at) >= end {
                break;
            }
            if next_arrival <= serve_at {
                if queue.len() < limit {
                    queue.push_back(next_arrival);
                } else {
                    run.tail_drops += 1;
                }
                next_arrival += gap;
                continue;
            }
            let now = serve_at;
            loop {
                let Some(arrived) = queue.pop_front() else {
                    if let Some(c) = codel.as_deref_mut() {
                        c.on_empty();
                    }
                    break;
                };
                let sojourn = now - arrived;
                let behind = queue.len() as u64 * size;
                let drop = codel
                    .as_deref_mut()
                    .is_some_and(|c| c.on_dequeue(now, sojourn, behind, MTU));
                if drop {
                    run.aqm_drops += 1;
                    continue;
                }
                run.sent.push((now, sojourn));
                link_free = now + service;
                break;
            }
        }
        run
    }

    fn median_sojourn_after(run: &Run, from: Instant) -> Duration {
        let mut s: Vec<Duration> = run
            .sent
            .iter()
            .filter(|(t, _)| *t >= from)
            .map(|(_, d)| *d)
            .collect();
        assert!(!s.is_empty());
        s.sort();
        s[s.len() / 2]
    }

    /// 10 Mbit/s link, 1500-byte packets: 1.2 ms per packet.
    const SERVICE: Duration = Duration(1_200_000);
    /// Arrivals at 1.2× the service rate: one per 1 ms.
    const GAP: Duration = Duration(1_000_000);

    /// Pass proves: under a 1.2× unresponsive overload for 10 s, CoDel holds
    /// the standing queue (median sojourn over the last 5 s) within
    /// [target/2, 2·target] of its 5 ms target, while the same FIFO without
    /// CoDel fills to its 1000-packet bound (sojourn ≈ 1.2 s).
    ///
    /// The interval is 20 ms (a LAN-scale RTT). Why not the default 100 ms:
    /// unresponsive traffic does not slow down when dropped, so each time
    /// the queue falls below target CoDel leaves the dropping state and must
    /// again see an interval above target before dropping, while the 20 %
    /// excess adds 0.2·interval of queue; and its drop rate ramps as
    /// √count over seconds. With 100 ms the standing queue oscillates around
    /// 100 ms here — bounded, far below the FIFO's, which the second half of
    /// the test checks — but not near 5 ms. That is CoDel's design (it
    /// targets responsive flows), not a defect of the model.
    #[test]
    fn codel_controls_standing_queue_under_overload() {
        let cfg =
            CodelConfig::new(Duration::from_millis(5), Duration::from_millis(20)).expect("valid");
        let mut codel = Codel::new(cfg);
        let dur = Duration::from_secs(10);
        let last_5s = Instant::ZERO + Duration::from_secs(5);
        let with = simulate(Some(&mut codel), GAP, SERVICE, 1500, 1000, dur);
        let median = median_sojourn_after(&with, last_5s);
        assert!(
            median >= Duration(cfg.target().0 / 2) && median <= Duration(cfg.target().0 * 2),
            "median sojourn {median} with CoDel"
        );
        // It drops about the excess, 1/6 of the ~10 000 arrivals.
        assert!((1400..2000).contains(&with.aqm_drops), "{}", with.aqm_drops);
        assert_eq!(
            with.tail_drops, 0,
            "CoDel must keep the queue off its bound"
        );

        let without = simulate(None, GAP, SERVICE, 1500, 1000, dur);
        let median_fifo = median_sojourn_after(&without, last_5s);
        assert!(
            median_fifo > Duration::from_millis(1000),
            "median sojourn {median_fifo} without CoDel"
        );
        assert!(without.tail_drops > 0);

        // Default 100 ms interval: bounded, but well above target.
        let mut codel = Codel::new(CodelConfig::default());
        let slow = simulate(Some(&mut codel), GAP, SERVICE, 1500, 1000, dur);
        let median = median_sojourn_after(&slow, last_5s);
        assert!(
            median < Duration::from_millis(300) && slow.tail_drops == 0,
            "median sojourn {median} with CoDel 100 ms"
        );
    }

    /// Pass proves: a link loaded below capacity never sees a drop (sojourn
    /// stays below target), and even a sojourn ≥ target is not dropped
    /// before it has lasted an interval, nor with at most one MTU queued.
    #[test]
    fn no_drop_below_target_or_before_interval() {
        let mut codel = Codel::new(CodelConfig::default());
        let run = simulate(
            Some(&mut codel),
            Duration::from_micros(1500),
            SERVICE,
            1500,
            1000,
            Duration::from_secs(10),
        );
        assert_eq!(run.aqm_drops, 0);
        assert!(!codel.is_dropping());

        let mut codel = Codel::new(CodelConfig::default());
        let t0 = Instant(1_000_000_000);
        let high = Duration::from_millis(20);
        // Above target for less than an interval: no drop.
        for ms in 0..100 {
            let now = t0 + Duration::from_millis(ms);
            assert!(!codel.on_dequeue(now, high, 100_000, MTU));
        }
        // Only one MTU behind it: no drop, and the clock restarts.
        assert!(!codel.on_dequeue(t0 + Duration::from_millis(150), high, 1500, MTU));
        assert!(!codel.on_dequeue(t0 + Duration::from_millis(151), high, 100_000, MTU));
        assert!(!codel.on_dequeue(t0 + Duration::from_millis(250), high, 100_000, MTU));
        // An interval later, still above: the first drop.
        assert!(codel.on_dequeue(t0 + Duration::from_millis(252), high, 100_000, MTU));
        assert!(codel.is_dropping());
    }

    /// Pass proves: inside the dropping state the gaps between drops follow
    /// interval/√count (within the 16-bit Newton approximation, 1 %), the
    /// packet after an entering drop is always sent, and a sojourn below
    /// target ends the dropping state.
    #[test]
    fn drop_times_follow_control_law() {
        let cfg = CodelConfig::default();
        let mut codel = Codel::new(cfg);
        let high = Duration::from_millis(50);
        let mut now = Instant(0);
        assert!(!codel.on_dequeue(now, high, 1_000_000, MTU));
        now += Duration::from_millis(101);
        assert!(codel.on_dequeue(now, high, 1_000_000, MTU));
        assert!(
            !codel.on_dequeue(now, high, 1_000_000, MTU),
            "sent after entering"
        );
        // Dequeue every 10 µs and record drop times.
        let mut drops = vec![now];
        while drops.len() < 30 {
            now += Duration::from_micros(10);
            while codel.on_dequeue(now, high, 1_000_000, MTU) {
                drops.push(now);
            }
        }
        for (i, w) in drops.windows(2).enumerate() {
            // The gap after the (i+1)-th drop uses count = i + 1. Linux's
            // single Newton step per count is exact at 1, gives 1/2 (not
            // 1/√2) at 2, is within 3 % from 3 and 0.5 % from 10.
            let count = (i + 1) as f64;
            let expect = match i + 1 {
                2 => cfg.interval().0 as f64 / 2.0,
                _ => cfg.interval().0 as f64 / count.sqrt(),
            };
            let tol = if i + 1 < 10 { 0.03 } else { 0.005 };
            let got = (w[1] - w[0]).0 as f64;
            assert!(
                (got - expect).abs() <= tol * expect + 10_000.0,
                "gap {i}: {got} vs {expect}"
            );
        }
        assert!(!codel.on_dequeue(now, Duration::from_millis(1), 1_000_000, MTU));
        assert!(!codel.is_dropping());
    }

    /// Pass proves: the Newton iteration is Linux's (1/2 at count 2 from 1.0)
    /// and tracks 1/√count within 3 % from count 3, 0.5 % from count 10.
    #[test]
    fn newton_step_tracks_inverse_sqrt() {
        let mut c = Codel::new(CodelConfig::default());
        c.rec_inv_sqrt = u16::MAX;
        for n in 2..5000u32 {
            c.count = n;
            c.newton_step();
            let exact = 1.0 / (n as f64).sqrt();
            let got = c.rec_inv_sqrt as f64 / 65536.0;
            match n {
                2 => assert!((got - 0.5).abs() < 1e-3, "{got}"),
                3..=9 => assert!((got - exact).abs() < 0.03 * exact, "{n}: {got}"),
                _ => assert!((got - exact).abs() < 0.005 * exact, "{n}: {got}"),
            }
        }
    }

    /// Pass proves: parameters are validated and Display prints the command
    /// words.
    #[test]
    fn config_validates_and_displays() {
        assert!(CodelConfig::new(Duration::ZERO, Duration::from_millis(100)).is_err());
        assert!(CodelConfig::new(Duration::from_millis(5), Duration::ZERO).is_err());
        assert_eq!(
            CodelConfig::default().to_string(),
            "codel target 5ms interval 100ms"
        );
        assert_eq!(
            CodelConfig::new(Duration::from_micros(2500), Duration::from_millis(50))
                .map(|c| c.to_string()),
            Ok("codel target 2500us interval 50ms".to_string())
        );
    }
}
