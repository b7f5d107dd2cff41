//! # pipelab-emu: the emulation core
//!
//! One emulator, several front doors. Every input — a configuration of
//! the language, a shell's `--link` words, a distilled topology, a
//! request on a control socket — is *lowered* to one typed [`Spec`];
//! [`Compiled::new`] checks its references and compiles its rules; one
//! [`Emulation::apply`] brings a running emulation to it (creating,
//! reconfiguring in place with queued packets kept, retiring). Nothing
//! else builds engine objects.
//!
//! Layers, bottom up:
//! * [`spec`]: the spec — pipes (with scheduler and mask), flow queues,
//!   rules, tables, `one_pass`, the port plan, a topology's paths;
//! * [`lower`]: a [`pipelab_lang::Config`] to a spec;
//! * [`compiled`]: a spec checked and compiled, ready to apply;
//! * [`emulation`]: the running emulation — `ingress`, `next_deadline`,
//!   `advance`, `apply`, counters;
//! * [`series`]: a pipe's counters over an interval, from two samples
//!   (the rows of `--interval`, in virtual time and live).
//!
//! What it deliberately does not do: read a clock, touch a socket or a
//! frame's bytes. The virtual-time driver (`pipelab-sim`) and the
//! real-time runner (`pipelab-io`) drive the same [`Emulation`], so a
//! configuration means the same thing in both. It depends on
//! `pipelab-engine`, `pipelab-lang` and `pipelab-classify` (and serde, to
//! write its series).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod compiled;
pub mod emulation;
pub mod lower;
pub mod partition;
pub mod series;
pub mod spec;

pub use compiled::{Compiled, SpecError, MAX_PORTS};
pub use emulation::{
    Admission, AdmitMemo, Applied, Counts, Departure, Emulation, Entry, Exit, Ingress, Reason,
    MAX_PASSES,
};
pub use lower::{lower_config, read_files, FileLoader, Loader, LowerError};
pub use partition::{Handoff, Partition, Target};
pub use pipelab_classify::Answer;
pub use spec::{
    Destinations, Egress, Env, MaskDef, OnDemand, PathSource, Paths, PipeDef, PortDef, QueueDef,
    Spec, TOPO_PIPE_BASE,
};
