//! # pipelab-engine: the pure emulation engine
//!
//! The engine moves packet descriptors through Dummynet pipes
//! (dummynet-revisited §3.1): a finite queue, a link that drains it at
//! bandwidth `B`, and a delay line of propagation delay `tD`. A packet of
//! length `l` that finds `Q` bytes ahead of it leaves the pipe `(l + Q)/B + tD`
//! after it arrived. Routes chain pipes; a packet crosses them by reference.
//!
//! Layers, bottom up:
//! * [`time`]: `Instant`, `Duration`, `Rate` in integer nanoseconds and bits/s.
//! * [`rng`]: seeded per-stage generators (reproducibility).
//! * [`packet`]: packet descriptors, flow keys, and the descriptor pool.
//! * [`config`]: validated, immutable pipe configuration.
//! * [`mask`]: flow masks, the keys of dynamic pipes and queues.
//! * [`pipe`]: one pipe's state: queue (or scheduler) → link → delay line.
//! * [`event`]: the deadline queue over pipes, `(time, seq)` keyed.
//! * [`engine`]: many pipes and routes behind `enqueue(now, ..)`,
//!   `next_deadline()`, `advance(now, ..)`.
//! * [`models`]: impairment models (delay distributions, loss, ...).
//! * [`sched`]: packet schedulers over flow queues (FIFO, DRR, WF2Q+, QFQ, ...).
//!
//! What it deliberately does not do: read a clock, perform I/O, parse
//! frames, commands or any text (the files a configuration names are read
//! by `crates/lang`, which builds the models through their typed,
//! validating constructors), or allocate per packet in steady state. `now` is
//! always an argument and the next deadline a return value, so the same
//! engine runs in virtual time (`pipelab sim`, tests) and in real time.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod engine;
pub mod event;
mod flow_aqm;
pub mod mask;
pub mod models;
pub mod packet;
pub mod pipe;
pub mod rng;
pub mod sched;
pub mod time;

pub use config::{Aqm, ConfigError, JitterOrder, PipeConfig, QueueLimit};
pub use engine::{DropReason, Engine, EngineOptions, Fate, Output, PipeIdx, RouteId, Verdict};
pub use mask::FlowMask;
pub use packet::{FlowKey, Packet, PacketId};
pub use pipe::{FlowStats, PipeStats};
pub use sched::{FlowSpec, SchedConfig, SchedKind};
pub use time::{Duration, Instant, Rate};
