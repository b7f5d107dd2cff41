//! # pipelab-lang: the command language
//!
//! pipelab speaks ipfw/dummynet's language where ipfw has a word for it
//! (dummynet-revisited §3.1–3.6): two commands set up a link,
//!
//! ```text
//! pipe 1 config bw 3Mbit/s delay 32ms
//! add 100 pipe 1 ip from any to any
//! ```
//!
//! Layers, bottom up:
//! * [`units`]: rates, durations, sizes, probabilities and packet rates,
//!   parsed exactly (integer arithmetic) with "did you mean" hints.
//! * [`lexer`]: one line into positioned tokens (1-based line and column).
//! * [`ast`]: the typed commands ([`Command`], [`PipeSpec`], [`RuleSpec`],
//!   ...) and their canonical text (`Display`), which parses back equal.
//! * [`parser`]: [`parse_line`], [`parse_script`] and [`parse_pipe_params`]
//!   (the words of one pipe, as `--link` takes them), errors with positions
//!   ([`ParseError`], rendered rustc-style by [`ParseError::render`];
//!   many at once, capped at [`MAX_RENDERED_ERRORS`], by [`render_all`]
//!   and [`render_errors`]).
//! * [`source`]: bytes to text, and the characters a reader cannot see
//!   (NUL, a byte order mark, controls), refused with their position.
//! * [`state`]: the applied configuration [`Config`] (pipes, rules, lookup
//!   tables), all-or-nothing
//!   [`Config::apply_script`], and [`Config::to_script`].
//! * [`traffic`]: the synthetic traffic specs of `pipelab sim --traffic`.
//! * [`files`]: the one reader of a file a configuration names
//!   ([`files::read_named_file`]: regular files only, size cap, time
//!   budget, UTF-8), and the readers of the formats those files hold
//!   (distribution files, loss and bandwidth traces, MAC profiles, Markov
//!   graphs), every value read by [`units`].
//! * [`output`]: the one opener of a file pipelab writes
//!   ([`output::open_output`]): symbolic links of other users refused,
//!   the last component opened without following a link, FIFOs never
//!   waited for.
//!
//! What it deliberately does not do: compile rules into a classifier,
//! resolve host names, decide where a file named by a pipe lives (a pipe's
//! `file:`/`trace:` paths are kept as written; [`PipeSpec::to_config_with`]
//! takes a loader, which resolves the path and reads it with
//! [`files::read_named_file`]) or talk to a daemon. It depends only on
//! `pipelab-engine`'s time, config and model types (built through their
//! typed constructors), so that there is one time type in the project.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod ast;
pub mod error;
pub mod files;
pub mod lexer;
pub mod mahimahi;
pub mod netconfig;
pub mod output;
pub mod parser;
pub mod presets;
pub mod rules;
pub mod source;
pub mod state;
pub mod timeline;
pub mod traffic;
pub mod units;

pub use ast::{AccountingSpec, AqmSpec, L2Spec, OverheadSpec, PieSpec, RedSpec};
pub use ast::{
    Action, AddrMatch, Chance, Command, DistSpec, Endpoint, IpNet, Jitter, LossSpec, MacMatch,
    NumRange, OptionKind, PipeSpec, PortRange, Proto, ReorderSpec, RuleOption, RuleSpec, TableId,
    TcpFlags, UserMatch,
};
pub use ast::{MaskSpec, QueueSpec, QueueTarget, SchedSpec, WirelessError, WirelessSpec};
pub use error::{render_all, ParseError, SourceLines, Spanned, MAX_RENDERED_ERRORS};
pub use netconfig::{parse_netconfig, NetCommand, NetKind, NetLinks, NetSpec, Selector};
pub use parser::{parse_line, parse_pipe_params, parse_script, parse_side_params};
pub use presets::{Preset, Side, PRESETS};
pub use rules::Rules;
pub use state::{render_errors, ApplyError, Config, Outcome, ScriptError, Table};
pub use traffic::{
    parse_traffic, parse_traffic_lines, Pattern, Period, TrafficProto, TrafficRate, TrafficSpec,
};
pub use units::{Ber, Decimal, PacketRate, Probability, UnitError};
