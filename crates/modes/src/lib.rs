//! # pipelab-modes: the live modes
//!
//! Each mode is a thin composition: it makes its ports (`pipelab-io`'s
//! backends), writes its port plan, lowers its input (a configuration,
//! `--link` words, a topology) to one [`pipelab_emu::Spec`], and runs an
//! [`pipelab_io::runner::Runner`] over the [`pipelab_emu::Emulation`]
//! that spec describes. Nothing here builds engine objects.
//!
//! * [`shell`]: `pipelab shell`, a command in a namespace behind an
//!   emulated link (pipe 1 up, pipe 2 down, or a whole configuration);
//! * [`bridge`]: `pipelab bridge`, two interfaces bridged at layer 2
//!   through a configuration;
//! * [`host`]: host mode, this host's own traffic shaped in place through
//!   a netfilter queue;
//! * [`attach`]: `pipelab attach`, an existing interface's traffic
//!   (forwarded included) shaped in place through host mode's queue, in
//!   this or another network namespace;
//! * [`mod@topo`]: live topologies, one named namespace per virtual node;
//! * [`ipv6`]: IPv6 on pipelab's interfaces without neighbour
//!   discovery (shells and topologies);
//! * [`probe`]: timestamped UDP test traffic and its report;
//! * [`privilege`]: what each mode needs from the kernel, checked before
//!   it changes anything;
//! * [`capture`]: `--pcap` and `--events` of a live mode, started
//!   before its runners and finished after them;
//! * [`workers`]: how a mode's emulation is split over workers
//!   (`--workers`, `--cpus`) and how their figures add up;
//! * [`precision`]: lateness watched while a mode runs, said on standard
//!   error when departures fall behind, with the likely cause;
//! * [`spill`]: where a shell's or bridge's frames go on disk when a
//!   pipe marked `spill` waits beyond the memory cap, in the ledger.

pub mod attach;
pub mod bridge;
pub mod capture;
pub mod error;
pub mod fault;
pub mod host;
pub mod ipv6;
pub mod ledger;
pub mod live;
pub mod plane;
pub mod precision;
pub mod privilege;
pub mod probe;
pub mod report;
pub mod series;
pub mod shell;
pub mod spill;
pub mod topo;
pub mod workers;
