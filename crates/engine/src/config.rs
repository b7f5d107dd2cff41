//! Validated, immutable configuration of engine objects.
//!
//! A config is built once (by the command language or by code), checked by
//! its constructor, and then never changes: reconfiguring a pipe builds a new
//! [`PipeConfig`] and swaps it in, keeping the pipe's queued packets.

use crate::time::{Duration, Rate};

/// Dummynet's default queue: 50 slots.
pub const DEFAULT_QUEUE_SLOTS: u32 = 50;

/// The largest queue in slots accepted (ipfw caps slots too; a larger
/// buffer is better written in bytes).
pub const MAX_QUEUE_SLOTS: u32 = 1_000_000;

/// The largest queue in bytes accepted: 4 GiB.
pub const MAX_QUEUE_BYTES: u64 = 4 << 30;

/// How much a pipe's queue may hold before arriving packets are dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueLimit {
    /// At most this many packets (ipfw `queue 20`).
    Slots(u32),
    /// At most this many bytes (ipfw `queue 100KB`).
    Bytes(u64),
}

impl Default for QueueLimit {
    fn default() -> Self {
        QueueLimit::Slots(DEFAULT_QUEUE_SLOTS)
    }
}

impl QueueLimit {
    /// Would a queue holding `pkts` packets and `bytes` bytes accept one
    /// more packet of `len` bytes?
    #[inline]
    pub fn admits(self, pkts: u32, bytes: u64, len: u32) -> bool {
        match self {
            QueueLimit::Slots(n) => pkts < n,
            QueueLimit::Bytes(b) => bytes + len as u64 <= b,
        }
    }
}

/// A configuration error: which parameter, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The parameter's name in the command language (`queue`, `bw`, ...).
    pub param: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.param, self.reason)
    }
}

impl std::error::Error for ConfigError {}

/// The parameters of a Dummynet pipe (dummynet-revisited §3.1, Fig. 2):
/// a finite queue, a link of bandwidth `bw`, a delay line of `delay`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PipeConfig {
    bw: Rate,
    delay: Duration,
    queue: QueueLimit,
}

impl Default for PipeConfig {
    /// Unlimited bandwidth, no delay, 50 slots: ipfw's defaults.
    fn default() -> Self {
        PipeConfig {
            bw: Rate::UNLIMITED,
            delay: Duration::ZERO,
            queue: QueueLimit::default(),
        }
    }
}

impl PipeConfig {
    /// A checked pipe configuration.
    pub fn new(bw: Rate, delay: Duration, queue: QueueLimit) -> Result<Self, ConfigError> {
        match queue {
            QueueLimit::Slots(0) | QueueLimit::Bytes(0) => {
                return Err(ConfigError {
                    param: "queue",
                    reason: "a queue must hold at least one packet".into(),
                })
            }
            QueueLimit::Slots(n) if n > MAX_QUEUE_SLOTS => {
                return Err(ConfigError {
                    param: "queue",
                    reason: format!(
                    "{n} slots is more than the maximum {MAX_QUEUE_SLOTS}; give the size in bytes"
                ),
                })
            }
            QueueLimit::Bytes(b) if b > MAX_QUEUE_BYTES => {
                return Err(ConfigError {
                    param: "queue",
                    reason: format!("{b} bytes is more than the maximum {MAX_QUEUE_BYTES}"),
                })
            }
            _ => {}
        }
        // One hour of delay is far beyond any path on Earth (or to the Moon);
        // a larger value is almost certainly a unit mistake.
        if delay > Duration::from_secs(3600) {
            return Err(ConfigError {
                param: "delay",
                reason: format!("{delay} is more than the maximum 3600s"),
            });
        }
        Ok(PipeConfig { bw, delay, queue })
    }

    /// Link bandwidth (0 = unlimited).
    pub fn bw(&self) -> Rate {
        self.bw
    }
    /// Propagation delay of the delay line.
    pub fn delay(&self) -> Duration {
        self.delay
    }
    /// Queue bound.
    pub fn queue(&self) -> QueueLimit {
        self.queue
    }
}
