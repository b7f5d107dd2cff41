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
//! * [`run`]: lowers a [`pipelab_lang::Config`] to the one emulation spec
//!   ([`pipelab_emu`]), merges the sources, offers each packet to the
//!   [`pipelab_emu::Emulation`] (which walks it through the rules, its
//!   pipes and back into the rules with `one_pass 0`, exactly as live
//!   packets are) and collects what happened to it.
//! * [`report`]: per-flow, per-pipe and per-rule results, as a table or
//!   JSON with stable field names.
//!
//! What it deliberately does not do: touch a clock or a socket. The only
//! files it reads are those a pipe names (`distribution file:PATH`,
//! `loss trace:PATH`), through a loader ([`simulate_with_loader`]).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod report;
pub mod run;
pub mod source;

pub use report::{
    DelayStats, FlowReport, InstanceCounts, PipeInstanceReport, PipeReport, QueueInstanceReport,
    QueueReport, Report, RuleReport,
};
pub use run::{simulate, simulate_with_loader, SimError, SimOptions};
