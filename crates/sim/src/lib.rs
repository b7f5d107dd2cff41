//! # pipelab-sim: the virtual-time driver
//!
//! `pipelab sim` runs a configuration of the command language against
//! synthetic traffic in virtual time: nothing sleeps, time jumps from one
//! event to the next, and every figure in the report is computed from exact
//! integer nanoseconds. The same configuration, traffic and seed print the
//! same report, byte for byte.
//!
//! * [`source`]: the traffic generators (CBR, Poisson, on/off), one seeded
//!   generator each.
//! * [`build`]: builds an engine from a [`pipelab_lang::Config`] (pipes,
//!   schedulers, masks, flow queues); `pipelab bridge` uses it too.
//! * [`run`]: builds an engine and a classifier from a [`pipelab_lang::Config`],
//!   merges the sources, walks each packet through the rules (and back in,
//!   with `one_pass 0`) and collects what happened to it.
//! * [`report`]: per-flow, per-pipe and per-rule results, as a table or
//!   JSON with stable field names.
//!
//! What it deliberately does not do: touch a clock or a socket. The only
//! files it reads are those a pipe names (`distribution file:PATH`,
//! `loss trace:PATH`), through a loader ([`simulate_with_loader`]).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod build;
pub mod report;
pub mod run;
pub mod source;

pub use build::{build_engine, BuildError, Built};
pub use report::{
    DelayStats, FlowReport, InstanceCounts, PipeInstanceReport, PipeReport, QueueInstanceReport,
    QueueReport, Report, RuleReport,
};
pub use run::{simulate, simulate_with_loader, SimError, SimOptions};
