//! # pipelab-sim: the virtual-time driver
//!
//! `pipelab sim` runs a configuration of the command language, or a
//! topology lowered to the same emulation spec, against synthetic traffic
//! in virtual time: nothing sleeps, time jumps from one event to the
//! next, and every figure in the report is computed from exact integer
//! nanoseconds. The same input, traffic and seed print the same report,
//! byte for byte, on any number of worker threads.
//!
//! * [`source`]: the traffic generators (CBR, Poisson, on/off), one seeded
//!   generator each.
//! * [`partition`]: which pipes each worker owns, and the lookahead that
//!   lets them run apart.
//! * [`run`]: lowers a [`pipelab_lang::Config`] to the one emulation spec
//!   ([`pipelab_emu`]) or takes a [`Scenario`] whose spec its caller
//!   lowered (a topology), merges the sources, offers each packet to a
//!   [`pipelab_emu::Emulation`] (which walks it through the rules, its
//!   pipes and back into the rules with `one_pass 0`, exactly as live
//!   packets are), runs the partitions in barrier-synchronous windows and
//!   collects what happened to each packet.
//! * [`report`]: per-flow, per-pipe and per-rule results, as a table or
//!   JSON with stable field names.
//! * [`timeseries`]: with an interval, what each pipe and flow did in
//!   each interval of virtual time (capacity, arrivals, departures,
//!   backlog, delay, drops), exactly.
//! * [`trace`]: the run packet by packet, in its canonical order
//!   ([`simulate_traced`]: `pipelab sim --pcap`, `--events`), and the
//!   frames a capture shows for synthetic packets.
//!
//! What it deliberately does not do: touch a clock or a socket, or know
//! what a topology is (its caller lowers one, `pipelab_topo::lower`). The
//! only files it reads are those a pipe names (`distribution file:PATH`,
//! `loss trace:PATH`), through a loader ([`simulate_with_loader`]).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod partition;
pub mod report;
pub mod run;
pub mod source;
pub mod timeseries;
pub mod trace;

pub use report::{
    DelayStats, FlowReport, InstanceCounts, PipeInstanceReport, PipeReport, QueueInstanceReport,
    QueueReport, Report, RuleReport,
};
pub use run::{
    flow_key, simulate, simulate_scenario, simulate_scenario_with, simulate_traced,
    simulate_with_loader, traffic_end, RunInfo, Scenario, SimError, SimOptions,
};
