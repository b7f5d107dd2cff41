//! netem's slotting (`slot MIN [MAX] [packets N] [bytes N]`, `slot
//! distribution D DELAY JITTER ...`): packets leave the delay line only at
//! transmission opportunities ("slots"), a crude model of media that
//! gather packets and send them together (DOCSIS, Wi-Fi, LTE).
//!
//! Source: Linux `net/sched/sch_netem.c` (`get_slot_next`, and the slot
//! test in `netem_dequeue`), tc-netem(8).
//!
//! # The rule, as netem applies it
//! The pipe keeps the next opportunity `next` and the budget left in it
//! (`packets`, `bytes`; unlimited by default). The packet at the head of
//! the delay line, due at `t`:
//! * if `next < t` (the opportunity passed before the packet was ready,
//!   or there was none yet), a new one is drawn: `next = t + d`, with a
//!   fresh budget, `d` uniform in `[MIN, MAX)` (or `DELAY ± JITTER` from
//!   a netem table);
//! * it leaves at `next`, and uses one packet and its bytes of the
//!   budget; a budget spent draws the next opportunity from that instant.
//!
//! So every packet due while the medium is idle waits one slot delay, and
//! packets due by the time the slot opens leave together, up to the
//! budget. The kernel evaluates the rule at its dequeue calls (which
//! include every arrival); pipelab evaluates it at each head packet's due
//! time, which makes it deterministic and independent of arrivals.

use crate::models::{DelayDist, ModelError};
use crate::rng::StageRng;
use crate::time::{Duration, Instant};
use rand::RngCore;

/// How long to the next opportunity.
#[derive(Clone, Debug, PartialEq)]
pub enum SlotDelay {
    /// Uniform in `[min, max)` (netem's `slot MIN [MAX]`; `max = min`
    /// when not given).
    Range {
        /// The shortest delay.
        min: Duration,
        /// The longest delay (excluded unless equal to `min`).
        max: Duration,
    },
    /// Drawn from a delay distribution (netem's `slot distribution D
    /// DELAY JITTER`), uncorrelated.
    Dist(DelayDist),
}

/// A validated slot configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct SlotConfig {
    delay: SlotDelay,
    packets: Option<u32>,
    bytes: Option<u64>,
}

impl SlotConfig {
    /// Slots `delay` apart, each carrying at most `packets` packets and
    /// `bytes` bytes (`None`: no limit). `max < min` and a zero budget are
    /// refused.
    pub fn new(
        delay: SlotDelay,
        packets: Option<u32>,
        bytes: Option<u64>,
    ) -> Result<SlotConfig, ModelError> {
        if let SlotDelay::Range { min, max } = delay {
            if max < min {
                return Err(ModelError::new(
                    "slot",
                    format!("the longest delay {max} is below the shortest {min}"),
                ));
            }
        }
        if packets == Some(0) || bytes == Some(0) {
            return Err(ModelError::new(
                "slot",
                "a slot must carry at least one packet and one byte",
            ));
        }
        Ok(SlotConfig {
            delay,
            packets,
            bytes,
        })
    }

    /// How far apart the opportunities are.
    pub fn delay(&self) -> &SlotDelay {
        &self.delay
    }
    /// The packets one opportunity carries, if limited.
    pub fn packets(&self) -> Option<u32> {
        self.packets
    }
    /// The bytes one opportunity carries, if limited.
    pub fn bytes(&self) -> Option<u64> {
        self.bytes
    }
}

/// A pipe's slots: the configuration, the next opportunity and its
/// budget, and the stage's own random stream.
#[derive(Clone, Debug)]
pub struct SlotModel {
    cfg: SlotConfig,
    dist: Option<crate::models::DelayModel>,
    rng: StageRng,
    next: Option<Instant>,
    packets_left: u64,
    bytes_left: u64,
}

impl SlotModel {
    /// Slots drawing from `rng` (the stage's own generator).
    pub fn new(cfg: SlotConfig, mut rng: StageRng) -> SlotModel {
        let dist = match &cfg.delay {
            SlotDelay::Dist(d) => {
                let seed = rng.next_u64();
                Some(crate::models::DelayModel::new(
                    d.clone(),
                    crate::rng::rng_from_seed(seed),
                ))
            }
            SlotDelay::Range { .. } => None,
        };
        SlotModel {
            cfg,
            dist,
            rng,
            next: None,
            packets_left: 0,
            bytes_left: 0,
        }
    }

    fn draw(&mut self) -> Duration {
        match (&self.cfg.delay, &mut self.dist) {
            (_, Some(d)) => d.sample(),
            (SlotDelay::Range { min, max }, None) => {
                let span = max.as_nanos() - min.as_nanos();
                // netem: min + (random_u32 · span >> 32).
                let r = self.rng.next_u32() as u128;
                Duration(min.as_nanos() + ((r * span as u128) >> 32) as u64)
            }
            (SlotDelay::Dist(d), None) => d.mu(),
        }
    }

    fn open(&mut self, at: Instant) {
        let d = self.draw();
        self.next = Some(at + d);
        self.packets_left = self.cfg.packets.map_or(u64::MAX, u64::from);
        self.bytes_left = self.cfg.bytes.unwrap_or(u64::MAX);
    }

    /// When the head packet, due at `due`, may leave, drawing a new
    /// opportunity if the current one passed before it was due (or there
    /// is none yet).
    pub fn gate(&mut self, due: Instant) -> Instant {
        match self.next {
            Some(n) if n >= due => n,
            _ => {
                self.open(due);
                self.next.unwrap_or(due)
            }
        }
    }

    /// When a packet due at `due` would leave if nothing changed: the
    /// current opportunity if it is not before `due`, else `due` (where a
    /// new one will be drawn). Draws nothing.
    pub fn peek(&self, due: Instant) -> Instant {
        match self.next {
            Some(n) if n >= due => n,
            _ => due,
        }
    }

    /// A packet of `len` bytes left at `at`: spend it from the budget, and
    /// draw the next opportunity from `at` when the budget is spent.
    pub fn sent(&mut self, at: Instant, len: u32) {
        self.packets_left = self.packets_left.saturating_sub(1);
        self.bytes_left = self.bytes_left.saturating_sub(len as u64);
        if self.packets_left == 0 || self.bytes_left == 0 {
            self.open(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_from_seed;

    fn ms(n: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(n)
    }

    /// Pass proves: a fixed slot delays the first packet due on an idle
    /// medium by exactly the slot, packets due before it opens leave with
    /// it, and a packet due after it passed waits a slot of its own.
    #[test]
    fn fixed_slots_gather_packets() {
        let cfg = SlotConfig::new(
            SlotDelay::Range {
                min: Duration::from_millis(10),
                max: Duration::from_millis(10),
            },
            None,
            None,
        )
        .expect("valid");
        let mut s = SlotModel::new(cfg, rng_from_seed(1));
        assert_eq!(s.peek(ms(1)), ms(1));
        assert_eq!(s.gate(ms(1)), ms(11));
        s.sent(ms(11), 100);
        assert_eq!(s.gate(ms(5)), ms(11));
        s.sent(ms(11), 100);
        assert_eq!(s.gate(ms(12)), ms(22));
    }

    /// Pass proves: `packets 2` lets two packets through one opportunity
    /// and draws the next one from the instant the budget is spent.
    #[test]
    fn a_spent_budget_waits_for_the_next_slot() {
        let cfg = SlotConfig::new(
            SlotDelay::Range {
                min: Duration::from_millis(4),
                max: Duration::from_millis(4),
            },
            Some(2),
            None,
        )
        .expect("valid");
        let mut s = SlotModel::new(cfg, rng_from_seed(1));
        let times: Vec<Instant> = (0..5)
            .map(|_| {
                let at = s.gate(ms(0));
                s.sent(at, 1000);
                at
            })
            .collect();
        assert_eq!(times, [ms(4), ms(4), ms(8), ms(8), ms(12)]);
    }

    /// Pass proves: a range draws within `[min, max)` and the bounds are
    /// checked.
    #[test]
    fn ranges_draw_within_bounds_and_are_checked() {
        let cfg = SlotConfig::new(
            SlotDelay::Range {
                min: Duration::from_micros(800),
                max: Duration::from_millis(1),
            },
            None,
            None,
        )
        .expect("valid");
        let mut s = SlotModel::new(cfg, rng_from_seed(3));
        for k in 0..1000u64 {
            let due = ms(10 * k);
            let at = s.gate(due);
            assert!(at - due >= Duration::from_micros(800) && at - due < Duration::from_millis(1));
            s.sent(at, 1);
        }
        assert!(SlotConfig::new(
            SlotDelay::Range {
                min: Duration::from_millis(2),
                max: Duration::from_millis(1)
            },
            None,
            None
        )
        .is_err());
        assert!(SlotConfig::new(
            SlotDelay::Range {
                min: Duration::from_millis(1),
                max: Duration::from_millis(1)
            },
            Some(0),
            None
        )
        .is_err());
    }
}
