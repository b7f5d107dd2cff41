//! The real-time clock: `CLOCK_MONOTONIC` mapped onto engine time.
//!
//! Engine time starts at the clock's value when the [`Clock`] is made, so
//! a run's instants are small numbers and a probe's timestamps (taken from
//! the same kernel clock in another process) compare directly.

use nix::time::{clock_gettime, ClockId};
use pipelab_engine::{Duration, Instant};

/// Nanoseconds of `CLOCK_MONOTONIC` now (system-wide, shared by processes
/// and network namespaces on this host).
pub fn monotonic_ns() -> u64 {
    match clock_gettime(ClockId::CLOCK_MONOTONIC) {
        Ok(ts) => ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64,
        // CLOCK_MONOTONIC cannot fail on Linux; fall back to std's clock.
        Err(_) => std_fallback(),
    }
}

fn std_fallback() -> u64 {
    use std::sync::OnceLock;
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

/// Engine time from the monotonic clock.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    epoch_ns: u64,
}

impl Clock {
    /// A clock whose `Instant::ZERO` is now.
    pub fn start() -> Clock {
        Clock {
            epoch_ns: monotonic_ns(),
        }
    }

    /// Now, in engine time.
    #[inline]
    pub fn now(&self) -> Instant {
        Instant(monotonic_ns().saturating_sub(self.epoch_ns))
    }

    /// The monotonic clock reading of engine instant `t`.
    pub fn to_monotonic(&self, t: Instant) -> u64 {
        self.epoch_ns + t.as_nanos()
    }

    /// Time elapsed since `t`.
    pub fn since(&self, t: Instant) -> Duration {
        self.now() - t
    }
}
