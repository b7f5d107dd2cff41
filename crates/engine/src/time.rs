//! Time and rate units: the one place where nanoseconds, bits and bytes meet.
//!
//! * [`Instant`]: a point in emulated time, integer nanoseconds since the
//!   engine's epoch (virtual time starts at 0; the real-time runner maps
//!   `CLOCK_MONOTONIC` onto it).
//! * [`Duration`]: a span of time in integer nanoseconds.
//! * [`Rate`]: a link bandwidth in bits per second; `Rate::UNLIMITED` (0)
//!   means "no bandwidth limit", as in ipfw.
//!
//! All arithmetic is integer. Transmission times that are not a whole number
//! of nanoseconds are handled by [`Rate::tx_time`] together with a remainder
//! the caller carries, so that long runs never drift (see `link.rs`).

use core::fmt;
use core::ops::{Add, AddAssign, Sub};

/// Nanoseconds per second.
pub const NS_PER_SEC: u64 = 1_000_000_000;

/// A point in emulated time: nanoseconds since the engine's epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(pub u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub u64);

/// A bandwidth in bits per second. Zero means unlimited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

impl Instant {
    /// The epoch.
    pub const ZERO: Instant = Instant(0);
    /// Later than any real deadline.
    pub const MAX: Instant = Instant(u64::MAX);

    /// Nanoseconds since the epoch.
    #[inline]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Time elapsed since `earlier`, zero if `earlier` is later.
    #[inline]
    pub const fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, saturating at [`Instant::MAX`].
    #[inline]
    pub const fn saturating_add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);

    /// From nanoseconds.
    #[inline]
    pub const fn from_nanos(ns: u64) -> Duration {
        Duration(ns)
    }
    /// From microseconds.
    #[inline]
    pub const fn from_micros(us: u64) -> Duration {
        Duration(us * 1_000)
    }
    /// From milliseconds.
    #[inline]
    pub const fn from_millis(ms: u64) -> Duration {
        Duration(ms * 1_000_000)
    }
    /// From seconds.
    #[inline]
    pub const fn from_secs(s: u64) -> Duration {
        Duration(s * NS_PER_SEC)
    }
    /// Nanoseconds.
    #[inline]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Milliseconds as a float (for reports only, never for decisions).
    #[inline]
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    /// Seconds as a float (for reports only, never for decisions).
    #[inline]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

impl Rate {
    /// No bandwidth limit: transmission takes no time.
    pub const UNLIMITED: Rate = Rate(0);

    /// From bits per second.
    #[inline]
    pub const fn from_bps(bps: u64) -> Rate {
        Rate(bps)
    }
    /// Bits per second (0 = unlimited).
    #[inline]
    pub const fn bps(self) -> u64 {
        self.0
    }
    /// True when the link has no bandwidth limit.
    #[inline]
    pub const fn is_unlimited(self) -> bool {
        self.0 == 0
    }

    /// Time to transmit `bytes` at this rate, as whole nanoseconds plus a
    /// remainder carried between calls.
    ///
    /// The exact time is `(bytes·8·10⁹ + carry) / bps` nanoseconds. The
    /// quotient is returned and the new remainder (`< bps`) is written back
    /// into `carry`, so that a back-to-back train of packets takes exactly
    /// `total_bits / bps` seconds, never drifting by rounding. An unlimited
    /// rate takes zero time and resets the carry.
    #[inline]
    pub fn tx_time(self, bytes: u64, carry: &mut u64) -> Duration {
        if self.0 == 0 {
            *carry = 0;
            return Duration::ZERO;
        }
        // The numerator fits in 64 bits for any frame (up to 2.3 GB at
        // once) unless the carry is huge: then the same division in 128
        // bits. A 64-bit division is several times cheaper than the
        // 128-bit one (a library call), and the quotient and remainder are
        // the same numbers.
        if let Some(num) = bytes
            .checked_mul(8 * NS_PER_SEC)
            .and_then(|b| b.checked_add(*carry))
        {
            *carry = num % self.0;
            return Duration(num / self.0);
        }
        let num = bytes as u128 * 8 * NS_PER_SEC as u128 + *carry as u128;
        let bps = self.0 as u128;
        *carry = (num % bps) as u64;
        Duration((num / bps).min(u64::MAX as u128) as u64)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    #[inline]
    fn add(self, d: Duration) -> Instant {
        self.saturating_add(d)
    }
}

impl AddAssign<Duration> for Instant {
    #[inline]
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturating: an earlier minus a later instant is zero.
    #[inline]
    fn sub(self, rhs: Instant) -> Duration {
        self.saturating_since(rhs)
    }
}

impl Add for Duration {
    type Output = Duration;
    #[inline]
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}

impl AddAssign for Duration {
    #[inline]
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.0 as f64 / 1e9)
    }
}

impl fmt::Display for Duration {
    /// The largest unit that shows the value exactly: `20ms`, `20800us`, `7ns`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns == 0 {
            return f.write_str("0ms");
        }
        for (div, unit) in [(NS_PER_SEC, "s"), (1_000_000, "ms"), (1_000, "us")] {
            if ns.is_multiple_of(div) {
                return write!(f, "{}{}", ns / div, unit);
            }
        }
        write!(f, "{ns}ns")
    }
}

impl fmt::Display for Rate {
    /// The largest unit that shows the value exactly: `10Mbit/s`,
    /// `640Kbit/s`; [`Rate::UNLIMITED`] is `unlimited` (what `bw 0` means,
    /// as in dummynet, said in words).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b == 0 {
            return f.write_str("unlimited");
        }
        for (div, unit) in [
            (1_000_000_000, "Gbit/s"),
            (1_000_000, "Mbit/s"),
            (1_000, "Kbit/s"),
        ] {
            if b.is_multiple_of(div) {
                return write!(f, "{}{}", b / div, unit);
            }
        }
        write!(f, "{b}bit/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_of_1000_bytes_at_10mbit_is_800us() {
        let mut carry = 0;
        assert_eq!(
            Rate(10_000_000).tx_time(1000, &mut carry),
            Duration::from_micros(800)
        );
        assert_eq!(carry, 0);
    }

    #[test]
    fn tx_time_carry_keeps_long_trains_exact() {
        // 1 byte at 3 bit/s is 8/3 s: three packets must take exactly 8 s.
        let r = Rate(3);
        let mut carry = 0;
        let total: u64 = (0..3).map(|_| r.tx_time(1, &mut carry).0).sum();
        assert_eq!(total, 8 * NS_PER_SEC);
        assert_eq!(carry, 0);
    }

    /// A pass proves the 64-bit path and the 128-bit one give the same
    /// quotient and carry, at the edge where the numerator stops fitting
    /// in 64 bits and beyond it.
    #[test]
    fn tx_time_is_the_same_in_64_and_128_bits() {
        let reference = |r: u64, bytes: u64, carry: u64| {
            let num = bytes as u128 * 8 * NS_PER_SEC as u128 + carry as u128;
            let q = (num / r as u128).min(u64::MAX as u128) as u64;
            (q, (num % r as u128) as u64)
        };
        let edge = u64::MAX / (8 * NS_PER_SEC);
        for &(r, bytes, carry) in &[
            (10_000_000, 1000, 0),
            (3, 1, 2),
            (u64::MAX, 1500, u64::MAX - 1),
            (u64::MAX, edge, u64::MAX - 1),
            (1_000_000_007, edge, 1_000_000_006),
            (1_000_000_007, edge + 1, 5),
            (7, 1 << 40, 6),
        ] {
            let mut c = carry;
            let d = Rate(r).tx_time(bytes, &mut c);
            assert_eq!((d.0, c), reference(r, bytes, carry), "{r} {bytes} {carry}");
        }
    }

    #[test]
    fn unlimited_rate_takes_no_time() {
        let mut carry = 5;
        assert_eq!(Rate::UNLIMITED.tx_time(1500, &mut carry), Duration::ZERO);
        assert_eq!(carry, 0);
    }

    #[test]
    fn display_picks_exact_units() {
        assert_eq!(Duration::from_micros(20_800).to_string(), "20800us");
        assert_eq!(Duration::from_millis(20).to_string(), "20ms");
        assert_eq!(Duration(7).to_string(), "7ns");
        assert_eq!(Rate(640_000).to_string(), "640Kbit/s");
        assert_eq!(Rate(8_389_000).to_string(), "8389Kbit/s");
        assert_eq!(Rate(1_234_567).to_string(), "1234567bit/s");
    }
}
