//! ipfw's `burst SIZE`: an idle pipe may send up to `SIZE` bytes at line
//! rate before its bandwidth limit applies.
//!
//! Sources: ipfw(8) (`burst size`); FreeBSD `sys/netpfil/ipfw/ip_dn_io.c`
//! (`dummynet_io`: "compute the initial allowance"; `serve_sched`: the
//! `credit` loop) and `ip_dummynet.c` (`burst` scaled from bytes to bits).
//!
//! # Dummynet's exact rule
//! A scheduler instance keeps a `credit` in bits. When a packet arrives at
//! an instance that went idle at `idle_time` (its queue emptied with
//! `credit ≥ 0`) before the current tick, dummynet sets
//! `credit = min((now − idle_time)·B, burst)` (plus one tick's worth with
//! `io_fast`), *replacing* any credit left over. It then sends packets
//! while `credit ≥ 0`, each subtracting its length (plus the profile's
//! extra bits): those leave "now", at line rate. The packet that drives the
//! credit negative leaves when the deficit is repaid, `⌈−credit/B⌉` later.
//! A fresh instance has `idle_time = 0`, hence a full burst.
//!
//! # pipelab's rule
//! The same credit in continuous time, as a token bucket of rate `B` and
//! depth `SIZE`: credit accrues at `B` while the link is idle (between the
//! end of one transmission and the start of the next), never above `SIZE`;
//! a transmission consumes credit first, then takes `deficit/B`. The one
//! difference: dummynet replaces leftover credit at each idle→busy
//! transition *of a later tick*, so with 1 ms ticks a burst spread over
//! several ticks loses its leftover; pipelab keeps it (the transition has
//! no tick to hide in). Line rate is taken as infinite, as in dummynet (the
//! packets leave in the same tick).
//!
//! Units: `SIZE` in bytes; the credit internally in bit·ns/s (bits × 10⁹),
//! so accrual `B·Δt` is exact in integers.

use crate::models::ModelError;
use crate::time::{Duration, Instant, Rate, NS_PER_SEC};

/// Largest `burst` ipfw accepts: 2⁴⁸ − 1 bytes.
pub const MAX_BURST_BYTES: u64 = (1 << 48) - 1;

/// A validated `burst SIZE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BurstConfig {
    bytes: u64,
}

impl BurstConfig {
    /// `burst` of `bytes` (0 disables it; at most [`MAX_BURST_BYTES`]).
    pub fn new(bytes: u64) -> Result<BurstConfig, ModelError> {
        if bytes > MAX_BURST_BYTES {
            return Err(ModelError::new(
                "burst",
                format!("{bytes} bytes is out of range (0..2^48-1)"),
            ));
        }
        Ok(BurstConfig { bytes })
    }

    /// The burst size in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// The burst credit of one link.
#[derive(Clone, Debug)]
pub struct Burst {
    rate: Rate,
    /// Depth in bit·ns/s.
    cap: u128,
    /// Credit in bit·ns/s, `≤ cap`.
    credit: u128,
    /// When the last transmission ends.
    busy_until: Instant,
}

impl Burst {
    /// A link of `rate` with `cfg`; it starts idle with a full credit.
    pub fn new(cfg: BurstConfig, rate: Rate) -> Burst {
        let cap = cfg.bytes as u128 * 8 * NS_PER_SEC as u128;
        Burst {
            rate,
            cap,
            credit: cap,
            busy_until: Instant::ZERO,
        }
    }

    /// Credit left, in whole bytes.
    pub fn credit_bytes(&self) -> u64 {
        (self.credit / (8 * NS_PER_SEC as u128)) as u64
    }

    /// Transmission time of `bytes` starting at `start` (non-decreasing
    /// over calls, at or after the previous transmission's end): zero while
    /// credit covers the packet, else the uncovered part at rate `B`, with
    /// the remainder carried in `carry` as in [`Rate::tx_time`].
    pub fn tx_time(&mut self, start: Instant, bytes: u64, carry: &mut u64) -> Duration {
        if self.rate.is_unlimited() {
            *carry = 0;
            return Duration::ZERO;
        }
        let bps = self.rate.bps() as u128;
        let idle = start.saturating_since(self.busy_until).0 as u128;
        self.credit = (self.credit + idle * bps).min(self.cap);
        let need = bytes as u128 * 8 * NS_PER_SEC as u128;
        let d = if self.credit >= need {
            self.credit -= need;
            Duration::ZERO
        } else {
            let num = need - self.credit + *carry as u128;
            self.credit = 0;
            *carry = (num % bps) as u64;
            Duration((num / bps).min(u64::MAX as u128) as u64)
        };
        self.busy_until = start.max(self.busy_until).saturating_add(d);
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pass proves: a long-idle 1 Mbit/s pipe with `burst 10000` sends six
    /// 1500-byte packets at once, the seventh once its 500 uncovered bytes
    /// are paid (4 ms), then one per 12 ms; after 40 ms of idleness it has
    /// 5000 bytes of credit again, and never more than SIZE.
    #[test]
    fn burst_then_shaping_then_refill() {
        let cfg = BurstConfig::new(10_000).unwrap_or(BurstConfig { bytes: 0 });
        let mut b = Burst::new(cfg, Rate::from_bps(1_000_000));
        let mut carry = 0;
        let mut t = Instant(5_000_000_000);
        let mut times = Vec::new();
        for _ in 0..9 {
            let d = b.tx_time(t, 1500, &mut carry);
            times.push(d.0 / 1_000);
            t += d;
        }
        assert_eq!(times, vec![0, 0, 0, 0, 0, 0, 4_000, 12_000, 12_000]);
        t += Duration::from_millis(40);
        let _ = b.tx_time(t, 0, &mut carry);
        assert_eq!(b.credit_bytes(), 5_000);
        let _ = b.tx_time(t + Duration::from_secs(60), 0, &mut carry);
        assert_eq!(b.credit_bytes(), 10_000);
        assert!(BurstConfig::new(MAX_BURST_BYTES + 1).is_err());
    }
}
