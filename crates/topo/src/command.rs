//! The topology command grammar: one typed command per line, shared by
//! the running emulator's control socket (`pipelab topo up`), experiment
//! files ([`crate::script`], `pipelab topo run`) and the CLI (`pipelab
//! topo link|node|cross`).
//!
//! ```text
//! link A B down | link A B up                fail or restore the link(s) between A and B
//! link A B down DURATION                     black-hole the link's pipes for DURATION
//! link A B set ATTR VALUE ...                new attributes, any subset of
//!     ATTR VALUE = bw RATE | delay TIME | loss P | queue N|SIZE
//! node N down | node N up                    fail or restore a node
//! cross SRC DST RATE [SRC DST RATE ...]      the cross-traffic matrix from now on
//! cross clear                                no cross traffic
//! every PERIOD until END link A B set ATTR VALUE|LO..HI ...
//!                                            (experiment files) repeat a change,
//!                                            drawing each LO..HI (bw, delay, loss)
//! status | stop                              (control socket) counters as JSON; stop
//! ```
//!
//! Words are split by the command language's lexer
//! ([`pipelab_lang::lexer`]): white space separates them, `#` starts a
//! comment, commas are ignored; keywords and attribute names are
//! case-insensitive, node names are not. An attribute may also be written
//! `bw=10Mbit/s`. Values are read by the language's unit layer
//! ([`crate::linkset`]), so a word is refused here exactly as in a
//! configuration file: `link a b set bw 10Mbps` gets "unknown unit 'Mbps'
//! in '10Mbps': did you mean Mbit/s?" at the word's column. Times in
//! `every` lines are [`pipelab_lang::units::parse_time`]'s (a bare number
//! is seconds).
//!
//! Three steps, each its own function:
//! * [`parse_command`] (or [`parse_command_tokens`]) reads the words into
//!   a [`TopoCommand`], with positioned errors ([`CommandError`], the
//!   language's [`ParseError`]: line, column, word, message, hint).
//!   [`TopoCommand`]'s `Display` prints it back canonically (attributes in
//!   the order bw, delay, loss, queue, values in their largest exact
//!   unit), which parses back equal.
//! * [`TopoCommand::resolve`] looks the node names up in a [`Topology`]
//!   (by name, else by id): a link's ends and a node become node ids, a
//!   cross matrix becomes [`Demand`]s between VNs ([`Resolved`]).
//! * [`Resolved::run`] applies it to a [`Network`] and the cross-traffic
//!   matrix in force; [`execute`] does the three at once, as the control
//!   socket does.
//!
//! Depends on the language (lexer, units, errors), [`crate::linkset`],
//! [`crate::model`], [`crate::route`] and [`crate::cross`]; nothing in
//! this crate depends on it but [`crate::script`].

use core::fmt;

use pipelab_engine::{Duration, Rate};
use pipelab_lang::lexer::{tokenize_line, Token, TokenKind};
use pipelab_lang::units::{self, UnitError};
use pipelab_lang::ParseError;

pub use crate::attrs::Loader;
use crate::attrs::{command_attrs, read_link, AttrError};
use crate::cross::Demand;
use crate::linkset::{LinkSet, ATTR_NAMES};
use crate::model::{Role, Topology};
use crate::route::{Change, Network};
use crate::TopoError;

/// A command's syntax or value error, at a position: the command
/// language's error type (line, column counted in characters, the word,
/// message and hint; [`ParseError::render`] shows it with a caret).
pub type CommandError = ParseError;

/// The commands, as listed in hints.
pub const COMMANDS: &str = "link, node, cross, every, status, stop";

/// What to do to a link.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LinkAction {
    /// Fail it.
    Down,
    /// Black-hole its pipes for this long (positive), then pass again:
    /// a failure routing does not see (no reroute), as a cut shorter
    /// than the time routing takes to notice; the timer is the
    /// emulation's ([`Outcome::Blackhole`]).
    DownFor(Duration),
    /// Restore it.
    Up,
    /// Change its attributes (fixed values, never ranges) and pipe words.
    Set(Box<LinkSet>),
}

/// One demand of a `cross` matrix, with its VNs as written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CrossDemand {
    /// The source VN (name or id).
    pub src: String,
    /// The destination VN (name or id).
    pub dst: String,
    /// The offered rate.
    pub rate: Rate,
}

/// A change repeated in an experiment file: `every PERIOD until END link
/// A B set ...`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Every {
    /// Time between two changes (positive).
    pub period: Duration,
    /// The time of the last change at the latest, from the start of the
    /// run.
    pub until: Duration,
    /// One end of the link (name or id).
    pub a: String,
    /// The other end (name or id).
    pub b: String,
    /// The attributes; `bw`, `delay` and `loss` may be ranges.
    pub set: LinkSet,
}

/// A topology command, with node names as written (see
/// [`TopoCommand::resolve`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TopoCommand {
    /// `link A B down|up|set ...`.
    Link {
        /// One end (name or id).
        a: String,
        /// The other end (name or id).
        b: String,
        /// What to do.
        action: LinkAction,
    },
    /// `node N down|up`.
    Node {
        /// The node (name or id).
        node: String,
        /// `up` (true) or `down`.
        up: bool,
    },
    /// `cross SRC DST RATE ...`: replace the cross-traffic matrix.
    Cross(Vec<CrossDemand>),
    /// `cross clear`: no cross traffic.
    CrossClear,
    /// `every PERIOD until END link A B set ...` (experiment files).
    Every(Box<Every>),
    /// `status`: the emulator's counters.
    Status,
    /// `stop`: stop the emulator.
    Stop,
}

impl fmt::Display for TopoCommand {
    /// The canonical text, which [`parse_command`] reads back equal.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopoCommand::Link { a, b, action } => match action {
                LinkAction::Down => write!(f, "link {a} {b} down"),
                LinkAction::DownFor(d) => write!(f, "link {a} {b} down {d}"),
                LinkAction::Up => write!(f, "link {a} {b} up"),
                LinkAction::Set(s) => write!(f, "link {a} {b} set {s}"),
            },
            TopoCommand::Node { node, up } => {
                write!(f, "node {node} {}", if *up { "up" } else { "down" })
            }
            TopoCommand::Cross(demands) => {
                f.write_str("cross")?;
                for d in demands {
                    write!(f, " {} {} {}", d.src, d.dst, d.rate)?;
                }
                Ok(())
            }
            TopoCommand::CrossClear => f.write_str("cross clear"),
            TopoCommand::Every(e) => write!(
                f,
                "every {} until {} link {} {} set {}",
                e.period, e.until, e.a, e.b, e.set
            ),
            TopoCommand::Status => f.write_str("status"),
            TopoCommand::Stop => f.write_str("stop"),
        }
    }
}

/// Parses one command (line 1; columns count from the start of `text`).
pub fn parse_command(text: &str) -> Result<TopoCommand, CommandError> {
    parse_command_tokens(&tokenize_line(text, 1))
}

/// Parses one command from the language lexer's tokens (for a command
/// inside a longer line, such as an experiment file's `TIME COMMAND`:
/// positions are the tokens').
pub fn parse_command_tokens(toks: &[Token<'_>]) -> Result<TopoCommand, CommandError> {
    let mut c = Cursor::new(toks);
    let cmd = c.command()?;
    c.finish()?;
    Ok(cmd)
}

/// Parses link attributes alone, `bw 2Mbit/s delay 1ms loss 1% queue 50`
/// (any subset, in any order; no ranges), as `topo gen`'s link classes
/// take them. Columns count from the start of `text`.
pub fn parse_link_set(text: &str) -> Result<LinkSet, CommandError> {
    let toks = tokenize_line(text, 1);
    let mut c = Cursor::new(&toks);
    c.link_set(false)
}

/// A cursor over the words of one command.
struct Cursor<'a> {
    toks: Vec<Token<'a>>,
    /// Every token, commas included (a pipe word's values keep them:
    /// `plr 0.001,0.01,0.5,0.3`).
    raw: Vec<Token<'a>>,
    pos: usize,
    line: u32,
    /// The column just after the last token.
    end: u32,
}

fn hint_commands() -> Option<String> {
    Some(format!("commands: {COMMANDS}"))
}

impl<'a> Cursor<'a> {
    fn new(toks: &[Token<'a>]) -> Cursor<'a> {
        let line = toks.first().map_or(1, |t| t.line);
        let end = toks.last().map_or(1, Token::end_column);
        Cursor {
            toks: toks
                .iter()
                .copied()
                .filter(|t| t.kind != TokenKind::Comma)
                .collect(),
            raw: toks.to_vec(),
            pos: 0,
            line,
            end,
        }
    }

    fn next(&mut self) -> Option<Token<'a>> {
        let t = self.toks.get(self.pos).copied();
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    fn at(
        &self,
        column: u32,
        word: &str,
        message: impl Into<String>,
        hint: Option<String>,
    ) -> CommandError {
        ParseError::new(self.line, column, word, message, hint)
    }

    fn err_at(
        &self,
        t: Token<'_>,
        message: impl Into<String>,
        hint: Option<String>,
    ) -> CommandError {
        self.at(t.column, t.text, message, hint)
    }

    fn err_eol(&self, message: impl Into<String>, hint: Option<String>) -> CommandError {
        self.at(self.end, "", message, hint)
    }

    fn unit(&self, column: u32, word: &str, e: UnitError) -> CommandError {
        self.at(column, word, e.message, e.hint)
    }

    /// The next word, or an error at the end of the line.
    fn word(&mut self, usage: &str, missing: &str) -> Result<Token<'a>, CommandError> {
        match self.next() {
            Some(t) if t.kind == TokenKind::Word => Ok(t),
            Some(t) => Err(self.err_at(t, format!("unexpected '{}'", t.text), None)),
            None => Err(self.err_eol(usage, Some(missing.to_string()))),
        }
    }

    fn finish(&self) -> Result<(), CommandError> {
        match self.toks.get(self.pos) {
            Some(t) => Err(self.err_at(
                *t,
                format!("unexpected '{}' at end of command", t.text),
                None,
            )),
            None => Ok(()),
        }
    }

    fn command(&mut self) -> Result<TopoCommand, CommandError> {
        let Some(t) = self.next() else {
            return Err(self.err_eol("missing command", hint_commands()));
        };
        match t.text.to_ascii_lowercase().as_str() {
            "link" => self.link(),
            "node" => self.node(),
            "cross" => self.cross(),
            "every" => self.every(),
            "status" => Ok(TopoCommand::Status),
            "stop" => Ok(TopoCommand::Stop),
            _ => Err(self.err_at(t, format!("unknown command '{}'", t.text), hint_commands())),
        }
    }

    fn link(&mut self) -> Result<TopoCommand, CommandError> {
        const USAGE: &str =
            "expected `link A B down [DURATION]|up` or `link A B set ATTR VALUE...`";
        let a = self.word(USAGE, "missing the link's ends")?;
        let b = self.word(USAGE, "missing the link's other end")?;
        let act = self.word(USAGE, "missing 'down', 'up' or 'set'")?;
        let action = match act.text.to_ascii_lowercase().as_str() {
            "down" if self.pos < self.toks.len() => {
                let t = self.word(USAGE, "missing the duration")?;
                let d =
                    units::parse_duration(t.text).map_err(|e| self.unit(t.column, t.text, e))?;
                if d == Duration::ZERO {
                    return Err(self.err_at(
                        t,
                        "a black-hole must last a positive time",
                        Some(
                            "e.g. `link A B down 5s`; `link A B down` fails the link until `up`"
                                .into(),
                        ),
                    ));
                }
                LinkAction::DownFor(d)
            }
            "down" => LinkAction::Down,
            "up" => LinkAction::Up,
            "set" => LinkAction::Set(Box::new(self.link_set(false)?)),
            _ => {
                return Err(self.err_at(
                    act,
                    format!("unknown link action '{}'", act.text),
                    Some("expected 'down', 'up' or 'set ATTR VALUE...'".into()),
                ))
            }
        };
        Ok(TopoCommand::Link {
            a: a.text.to_string(),
            b: b.text.to_string(),
            action,
        })
    }

    fn node(&mut self) -> Result<TopoCommand, CommandError> {
        const USAGE: &str = "expected `node N down|up`";
        let n = self.word(USAGE, "missing the node")?;
        let act = self.word(USAGE, "missing 'down' or 'up'")?;
        let up = match act.text.to_ascii_lowercase().as_str() {
            "down" => false,
            "up" => true,
            _ => return Err(self.err_at(act, format!("{USAGE}, found '{}'", act.text), None)),
        };
        Ok(TopoCommand::Node {
            node: n.text.to_string(),
            up,
        })
    }

    fn cross(&mut self) -> Result<TopoCommand, CommandError> {
        const USAGE: &str = "expected `cross SRC DST RATE [SRC DST RATE ...]` or `cross clear`";
        let rest = &self.toks[self.pos..];
        if let [only] = rest {
            if only.is_word("clear") {
                self.pos += 1;
                return Ok(TopoCommand::CrossClear);
            }
        }
        if rest.is_empty() {
            return Err(self.err_eol(USAGE, Some("e.g. cross c1 c7 2Mbit/s".into())));
        }
        let mut demands = Vec::new();
        while self.pos < self.toks.len() {
            let src = self.word(USAGE, "missing the source VN")?;
            let dst = self.word(
                USAGE,
                &format!("missing the destination after '{}'", src.text),
            )?;
            let rate = self.word(USAGE, &format!("missing the rate after '{}'", dst.text))?;
            let r =
                units::parse_rate(rate.text).map_err(|e| self.unit(rate.column, rate.text, e))?;
            demands.push(CrossDemand {
                src: src.text.to_string(),
                dst: dst.text.to_string(),
                rate: r,
            });
        }
        Ok(TopoCommand::Cross(demands))
    }

    fn time(&mut self, usage: &str, missing: &str) -> Result<(Token<'a>, Duration), CommandError> {
        let t = self.word(usage, missing)?;
        let d = units::parse_time(t.text).map_err(|e| self.unit(t.column, t.text, e))?;
        Ok((t, d))
    }

    /// The next word, which must be `kw`.
    fn keyword(&mut self, kw: &str, usage: &str) -> Result<(), CommandError> {
        let t = self.word(usage, &format!("missing '{kw}'"))?;
        if t.is_word(kw) {
            Ok(())
        } else {
            Err(self.err_at(
                t,
                usage,
                Some(format!("found '{}' where '{kw}' goes", t.text)),
            ))
        }
    }

    fn every(&mut self) -> Result<TopoCommand, CommandError> {
        const USAGE: &str = "expected `every PERIOD until END link A B set ATTR VALUE|LO..HI ...`";
        let (pt, period) = self.time(USAGE, "missing the period")?;
        if period == Duration::ZERO {
            return Err(self.err_at(pt, "the period must be positive", None));
        }
        self.keyword("until", USAGE)?;
        let (_, until) = self.time(USAGE, "missing the end time")?;
        self.keyword("link", USAGE)?;
        let a = self.word(USAGE, "missing the link's ends")?;
        let b = self.word(USAGE, "missing the link's other end")?;
        self.keyword("set", USAGE)?;
        let set = self.link_set(true)?;
        Ok(TopoCommand::Every(Box::new(Every {
            period,
            until,
            a: a.text.to_string(),
            b: b.text.to_string(),
            set,
        })))
    }

    /// `ATTR VALUE ...` to the end of the line, read by the one reader
    /// of link attributes ([`crate::attrs::command_attrs`],
    /// [`crate::attrs::read_link`]); `ranges`: `LO..HI` allowed (for bw,
    /// delay, loss).
    fn link_set(&mut self, ranges: bool) -> Result<LinkSet, CommandError> {
        const EXAMPLE: &str = "e.g. bw 10Mbit/s delay 20ms loss 1% queue 50 codel";
        // The words left, commas included, from the raw token of the
        // next word on.
        let from = self.toks.get(self.pos).map_or(self.raw.len(), |t| {
            self.raw
                .iter()
                .position(|r| r.column == t.column && r.line == t.line)
                .unwrap_or(self.raw.len())
        });
        let words: Vec<(usize, &str)> = self.raw[from..]
            .iter()
            .map(|t| (t.column as usize, t.text))
            .collect();
        self.pos = self.toks.len();
        if words.is_empty() {
            return Err(self.err_eol(
                "missing link attribute",
                Some(format!("{EXAMPLE} (any of {ATTR_NAMES}, or a pipe word)")),
            ));
        }
        let line = self.line as usize;
        let attr_err = |e: AttrError| {
            let column = if e.column > 0 {
                e.column
            } else {
                self.end as usize
            };
            self.at(column as u32, &e.word, e.message, None)
        };
        let attrs = command_attrs(&words, line).map_err(attr_err)?;
        let read = read_link(&attrs, &[], ranges).map_err(attr_err)?;
        if let Err(e) = read.set.check() {
            let (col, word) =
                read.written
                    .iter()
                    .find(|w| w.0 == e.attr)
                    .map_or((self.end, ""), |w| {
                        let a = &attrs[w.1];
                        (a.value_column as u32, a.value.as_str())
                    });
            return Err(self.at(col, word, e.message(word), None));
        }
        if read.set.is_empty() {
            // `set pipe ""` or `set ecn 0`: words that change nothing
            // (and would print back as a bare `set`).
            let (col, word) = words.first().map_or((self.end, ""), |w| (w.0 as u32, w.1));
            return Err(self.at(
                col,
                word,
                "the link attributes set nothing",
                Some(format!("{EXAMPLE} (any of {ATTR_NAMES}, or a pipe word)")),
            ));
        }
        Ok(read.set)
    }
}

/// A command with its node names looked up in the topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// A link between node ids `a` and `b`.
    Link {
        /// One end (node id).
        a: u64,
        /// The other end (node id).
        b: u64,
        /// What to do.
        action: LinkAction,
    },
    /// A node (its id).
    Node {
        /// The node's id.
        id: u64,
        /// `up` (true) or `down`.
        up: bool,
    },
    /// A new cross-traffic matrix (node indices of VNs).
    Cross(Vec<Demand>),
    /// No cross traffic.
    CrossClear,
    /// The emulator's counters.
    Status,
    /// Stop the emulator.
    Stop,
}

impl TopoCommand {
    /// Makes the relative paths of the files a `set` names relative to
    /// `base` (the directory of the experiment file that holds the
    /// command, or the CLI's working directory): a running topology reads
    /// files by absolute path only.
    pub fn resolve_paths(&mut self, base: &std::path::Path) {
        let set = match self {
            TopoCommand::Link {
                action: LinkAction::Set(s),
                ..
            } => s,
            TopoCommand::Every(e) => &mut e.set,
            _ => return,
        };
        for p in set.words.files_mut() {
            if std::path::Path::new(p.as_str()).is_relative() {
                *p = base.join(p.as_str()).display().to_string();
            }
        }
    }

    /// Looks the node names up in `topo` (a node by name, else by id; a
    /// cross demand's ends must be VNs, distinct) and checks that a
    /// link command names two distinct nodes joined by a link, so that a
    /// request of several commands is refused whole before any of them
    /// runs. `every` lines are refused: they run in experiment files,
    /// which turn them into `link A B set` commands ([`crate::script`]).
    pub fn resolve(&self, topo: &Topology) -> Result<Resolved, TopoError> {
        if let TopoCommand::Link { a, b, .. } = self {
            let index = |k: &str| {
                topo.find_node(k)
                    .ok_or_else(|| TopoError::Invalid(format!("no node '{k}'")))
            };
            let (x, y) = (index(a)?, index(b)?);
            if x == y {
                return Err(TopoError::Invalid(format!(
                    "'{a}' and '{b}' are one node: a link joins two nodes"
                )));
            }
            if topo.find_link(x, y).is_none() {
                return Err(TopoError::Invalid(format!(
                    "no link between '{a}' and '{b}'"
                )));
            }
        }
        self.resolve_names(topo)
    }

    /// [`TopoCommand::resolve`] without looking at the links: the names
    /// only, for a table of a topology's nodes without its links (an
    /// experiment file checked against a running topology's state).
    pub fn resolve_names(&self, topo: &Topology) -> Result<Resolved, TopoError> {
        let node = |k: &str| {
            topo.find_node(k)
                .map(|i| topo.nodes[i].id)
                .ok_or_else(|| TopoError::Invalid(format!("no node '{k}'")))
        };
        Ok(match self {
            TopoCommand::Link { a, b, action } => Resolved::Link {
                a: node(a)?,
                b: node(b)?,
                action: action.clone(),
            },
            TopoCommand::Node { node: n, up } => Resolved::Node {
                id: node(n)?,
                up: *up,
            },
            TopoCommand::Cross(demands) => {
                let vn = |k: &str| {
                    topo.find_node(k)
                        .filter(|&i| topo.nodes[i].role == Role::Client)
                        .ok_or_else(|| TopoError::Invalid(format!("no VN '{k}'")))
                };
                let mut out = Vec::with_capacity(demands.len());
                for d in demands {
                    let (src, dst) = (vn(&d.src)?, vn(&d.dst)?);
                    if src == dst {
                        return Err(TopoError::Invalid(format!(
                            "demand from '{}' to itself",
                            d.src
                        )));
                    }
                    out.push(Demand {
                        src,
                        dst,
                        rate: d.rate,
                    });
                }
                Resolved::Cross(out)
            }
            TopoCommand::CrossClear => Resolved::CrossClear,
            TopoCommand::Status => Resolved::Status,
            TopoCommand::Stop => Resolved::Stop,
            TopoCommand::Every(_) => {
                return Err(TopoError::Invalid(
                    "'every' repeats a change in an experiment file (pipelab topo run); send `link A B set ...` for one change".into(),
                ))
            }
        })
    }
}

/// What running a command did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Faults, link attributes or the cross-traffic matrix changed: the
    /// pipes and routes to update (empty for a new matrix: the caller
    /// recomputes the loads).
    Changed(Change),
    /// The caller black-holes these distilled pipes (indices, both
    /// directions of the link) for this long, from now: no route
    /// changes.
    Blackhole {
        /// The distilled pipes.
        pipes: Vec<u32>,
        /// How long.
        duration: Duration,
    },
    /// The caller reports its counters.
    Status,
    /// The caller stops.
    Stop,
}

impl Resolved {
    /// Applies the command to `net` and the cross-traffic matrix in force,
    /// `cross`; a `set` that names a file not read before is refused
    /// (see [`Resolved::run_with`]).
    pub fn run(self, net: &mut Network, cross: &mut Vec<Demand>) -> Result<Outcome, TopoError> {
        self.run_with(net, cross, None)
    }

    /// [`Resolved::run`], reading the files a `set` names with `load`.
    pub fn run_with(
        self,
        net: &mut Network,
        cross: &mut Vec<Demand>,
        load: Option<Loader<'_>>,
    ) -> Result<Outcome, TopoError> {
        let change = match self {
            Resolved::Status => return Ok(Outcome::Status),
            Resolved::Stop => return Ok(Outcome::Stop),
            Resolved::Link { a, b, action } => match action {
                LinkAction::Down => net.link_down(a, b)?,
                LinkAction::DownFor(duration) => {
                    return Ok(Outcome::Blackhole {
                        pipes: net.link_pipes(a, b)?,
                        duration,
                    })
                }
                LinkAction::Up => net.link_up(a, b)?,
                LinkAction::Set(set) => net.set_link_attrs(a, b, &set, load)?,
            },
            Resolved::Node { id, up: false } => net.node_down(id)?,
            Resolved::Node { id, up: true } => net.node_up(id)?,
            Resolved::Cross(d) => {
                // Routes on demand: the demands' pairs are routed now,
                // so their loads follow them (and every re-route).
                let pairs: Vec<(usize, usize)> = d.iter().map(|x| (x.src, x.dst)).collect();
                net.route_pairs(&pairs);
                *cross = d;
                Change::default()
            }
            Resolved::CrossClear => {
                cross.clear();
                Change::default()
            }
        };
        Ok(Outcome::Changed(change))
    }
}

/// Parses, resolves and runs one command line on `net` (what the control
/// socket of a live topology does); errors as text (`1:18: unknown unit
/// 'Mbps' in '10Mbps': did you mean Mbit/s?`, `no node 'r9'`).
pub fn execute(line: &str, net: &mut Network, cross: &mut Vec<Demand>) -> Result<Outcome, String> {
    execute_with(line, net, cross, None)
}

/// [`execute`], reading the files a `set` names with `load`.
pub fn execute_with(
    line: &str,
    net: &mut Network,
    cross: &mut Vec<Demand>,
    load: Option<Loader<'_>>,
) -> Result<Outcome, String> {
    let cmd = parse_command(line).map_err(|e| e.to_string())?;
    let resolved = cmd.resolve(net.topology()).map_err(|e| e.to_string())?;
    resolved
        .run_with(net, cross, load)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linkset::Setting;
    use crate::model::PipeWords;
    use pipelab_engine::QueueLimit;
    use pipelab_lang::units::Probability;
    use proptest::prelude::*;

    fn ok(line: &str) -> TopoCommand {
        parse_command(line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    /// A pass proves each command parses to its typed form and prints
    /// back canonically (table: input, canonical text).
    #[test]
    fn commands_parse_and_print_canonically() {
        for (line, canon) in [
            ("link r0 r1 down", "link r0 r1 down"),
            ("LINK r0 r1 UP", "link r0 r1 up"),
            (
                "link r0 r1 set queue 30 loss 0.01 delay 20ms bw 1Mbit/s",
                "link r0 r1 set bw 1Mbit/s delay 20ms loss 1% queue 30",
            ),
            (
                "link r0 r1 set bw=1000Kbit/s, delay=0.5s",
                "link r0 r1 set bw 1Mbit/s delay 500ms",
            ),
            ("link 3 4 set plr 5%", "link 3 4 set loss 5%"),
            ("node r4 down", "node r4 down"),
            ("node 7 up  # back", "node 7 up"),
            (
                "cross vn1 vn7 2000Kbit/s vn2 vn9 500Kbit/s",
                "cross vn1 vn7 2Mbit/s vn2 vn9 500Kbit/s",
            ),
            ("cross clear", "cross clear"),
            ("cross clear vn2 1Mbit/s", "cross clear vn2 1Mbit/s"),
            (
                "every 2 until 30s link r2 r3 set delay 5ms..50ms bw 2Mbit/s..8Mbit/s",
                "every 2s until 30s link r2 r3 set bw 2Mbit/s..8Mbit/s delay 5ms..50ms",
            ),
            (
                "every 250ms until 1 link a b set loss 0..1% queue 20",
                "every 250ms until 1s link a b set loss 0%..1% queue 20",
            ),
            ("status", "status"),
            ("stop", "stop"),
            ("LINK a b DOWN 1500ms", "link a b down 1500ms"),
        ] {
            let c = ok(line);
            assert_eq!(c.to_string(), canon, "{line}");
            assert_eq!(ok(canon), c, "{canon}");
        }
        assert_eq!(
            ok("link a b set bw 10Mbit/s"),
            TopoCommand::Link {
                a: "a".into(),
                b: "b".into(),
                action: LinkAction::Set(Box::new(LinkSet {
                    bw: Some(Setting::Value(Rate::from_bps(10_000_000))),
                    ..LinkSet::default()
                })),
            }
        );
    }

    /// A pass proves every kind of error names its column, word, message
    /// and hint (table: input, `line:column: message[: hint]`).
    #[test]
    fn errors_are_positioned() {
        for (line, want) in [
            ("", "1:1: missing command: commands: link, node, cross, every, status, stop"),
            ("fly away", "1:1: unknown command 'fly': commands: link, node, cross, every, status, stop"),
            ("link r1", "1:8: expected `link A B down [DURATION]|up` or `link A B set ATTR VALUE...`: missing the link's other end"),
            ("link a b down 5", "1:15: missing unit in '5': write e.g. 5s or 5ms"),
            ("link a b down 0s", "1:15: a black-hole must last a positive time: e.g. `link A B down 5s`; `link A B down` fails the link until `up`"),
            ("link a b down 5s 6s", "1:18: unexpected '6s' at end of command"),
            ("link a b sideways", "1:10: unknown link action 'sideways': expected 'down', 'up' or 'set ATTR VALUE...'"),
            ("link a b set", "1:13: missing link attribute: e.g. bw 10Mbit/s delay 20ms loss 1% queue 50 codel (any of bw, delay, loss, queue, or a pipe word)"),
            ("link a b set bw 10Mbps", "1:17: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)"),
            ("link a b set bw=10Mbps", "1:17: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)"),
            ("link a b set delay 5 ms", "1:20: space in '5 ms': write the value as one word: 5ms"),
            ("link a b set delay -1ms", "1:20: negative value '-1ms' is not allowed"),
            ("link a b set colour red", "1:14: unknown link attribute 'colour' (link attributes: bw, bandwidth, kbps, delay, loss, plr, queue, jitter, aqm, pipe, distribution, jitter-order, red, gred, codel, pie, duplicate, reorder, corrupt, ber, burst, ecn, noecn, noerror, accounting, overhead, wireless, profile, timevarying, timeline, limit, rate, slot, seed, gap; metadata: keys starting with a capital letter, id, key, label, name, graphics, comment, description, hyperedge, weight, geocode_*)"),
            ("link a b set jiter 3ms", "1:14: unknown link attribute 'jiter' (did you mean jitter?)"),
            ("link a b set codel target 5ms red 0.002/5/15/0.1", "1:31: 'red' cannot be combined with 'codel' (a pipe has one queue management (red, gred, codel or pie); 'codel' was given at column 14)"),
            ("link a b set delay 20ms mask src-ip 0xffffffff", "1:25: 'mask' makes a dynamic pipe; a topology link is one pipe per direction"),
            ("link a b set jitter 5ms distribution normall", "1:38: unknown distribution 'normall' (known distributions: uniform, normal, pareto, paretonormal, NAME (tc's NAME.dist), PATH.dist, file:PATH)"),
            ("link a b set loss gemodle 1%", "1:19: unknown loss model 'gemodle' (random, state, gemodel or trace:FILE, then its words; or a loss rate, e.g. loss 0.01)"),
            ("link a b set duplicate 1% 25% duplicate 2%", "1:31: duplicate parameter 'duplicate' ('duplicate' was already given at column 14)"),
            ("link a b set bw 1Mbit/s bw 2Mbit/s", "1:25: duplicate attribute 'bw': 'bw' was already given at column 14"),
            ("link a b set delay", "1:19: missing value after 'delay': e.g. delay 20ms"),
            ("link a b set queue 0", "1:20: invalid queue '0': a queue must hold at least one packet"),
            ("link a b set loss 5", "1:19: probability '5' is outside 0..1: a loss rate is a probability (0.01) or a percentage (5%)"),
            ("link a b set delay 5ms..50ms", "1:20: a range '5ms..50ms' is only for `every` lines: e.g. every 2s until 30s link A B set delay 5ms..50ms"),
            ("link R  r2 set pipe", "1:16: the link attributes set nothing: e.g. bw 10Mbit/s delay 20ms loss 1% queue 50 codel (any of bw, delay, loss, queue, or a pipe word)"),
            ("node n sideways", "1:8: expected `node N down|up`, found 'sideways'"),
            ("node", "1:5: expected `node N down|up`: missing the node"),
            ("node n up now", "1:11: unexpected 'now' at end of command"),
            ("cross", "1:6: expected `cross SRC DST RATE [SRC DST RATE ...]` or `cross clear`: e.g. cross c1 c7 2Mbit/s"),
            ("cross a b 1Mbit/s c d", "1:22: expected `cross SRC DST RATE [SRC DST RATE ...]` or `cross clear`: missing the rate after 'd'"),
            ("cross a b 1Mbps", "1:11: unknown unit 'Mbps' in '1Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)"),
            ("every 0s until 5s link a b set delay 1ms", "1:7: the period must be positive"),
            ("every 1s link a b set delay 1ms", "1:10: expected `every PERIOD until END link A B set ATTR VALUE|LO..HI ...`: found 'link' where 'until' goes"),
            ("every 1x until 5s link a b set delay 1ms", "1:7: unknown unit 'x' in '1x': known duration units: s, ms, us, ns"),
            ("every 1s until 5s link a b set queue 1..5", "1:38: 'queue' takes no range (bw, delay, loss do)"),
            ("every 1s until 5s link a b set delay 9ms..1ms", "1:43: empty range '9ms..1ms': write the low end first, e.g. 5ms..50ms"),
            ("every 1s until 5s link a b set bw 1Mbit/s..2Mbps", "1:44: unknown unit 'Mbps' in '2Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)"),
        ] {
            match parse_command(line) {
                Ok(c) => panic!("{line}: expected an error, got {c:?}"),
                Err(e) => assert_eq!(e.to_string(), want, "{line}"),
            }
        }
    }

    /// A pass proves link attributes alone (`topo gen`'s classes) parse
    /// in any subset and order, and refuse ranges.
    #[test]
    fn link_sets_alone() {
        let s = parse_link_set("delay 20ms bw 2Mbit/s loss 1.5% queue 50").expect("parses");
        assert_eq!(s.bw, Some(Setting::Value(Rate::from_bps(2_000_000))));
        assert_eq!(s.delay, Some(Setting::Value(Duration::from_millis(20))));
        assert_eq!(s.loss.map(|l| l.low().ppb()), Some(15_000_000));
        assert_eq!(s.queue, Some(QueueLimit::Slots(50)));
        let e = parse_link_set("bw fast").expect_err("bad rate");
        assert_eq!(
            e.to_string(),
            "1:4: invalid rate 'fast': rates are written like 10Mbit/s"
        );
        for bad in ["bw", "", "colour red", "loss 150%", "delay 1ms..2ms"] {
            assert!(parse_link_set(bad).is_err(), "{bad}");
        }
    }

    fn star() -> Topology {
        crate::gen::star(3, &crate::model::RoleAttrs::default()).expect("star")
    }

    /// A pass proves names resolve by name, else by id; cross demands
    /// need two distinct VNs; `every` is for experiment files.
    #[test]
    fn names_resolve_against_the_topology() {
        let t = star();
        let (r, v0, v1) = (&t.nodes[0], &t.nodes[1], &t.nodes[2]);
        let line = format!("link {} {} down", r.name, v0.id);
        assert_eq!(
            ok(&line).resolve(&t),
            Ok(Resolved::Link {
                a: r.id,
                b: v0.id,
                action: LinkAction::Down
            })
        );
        let line = format!("cross {} {} 1Mbit/s", v0.name, v1.name);
        assert_eq!(
            ok(&line).resolve(&t),
            Ok(Resolved::Cross(vec![Demand {
                src: 1,
                dst: 2,
                rate: Rate::from_bps(1_000_000)
            }]))
        );
        assert_eq!(ok("cross clear").resolve(&t), Ok(Resolved::CrossClear));
        for (line, want) in [
            ("node nobody down".to_string(), "no node 'nobody'"),
            (
                format!("cross {} nobody 1Mbit/s", v0.name),
                "no VN 'nobody'",
            ),
            (format!("cross {} {} 1Mbit/s", r.name, v0.name), "no VN"),
            (format!("cross {0} {0} 1Mbit/s", v0.name), "to itself"),
            (
                "every 1s until 2s link a b set delay 1ms".to_string(),
                "experiment file",
            ),
        ] {
            let e = ok(&line).resolve(&t).expect_err(&line).to_string();
            assert!(e.contains(want), "{line}: {e}");
        }
    }

    /// ModelNet's GML leaves clients unnamed (`examples/dumbbell.gml`):
    /// `topo status` shows them as `n<ID>` (their namespaces are
    /// `pl-NAME-n2`), and a command must take the name it shows. A pass
    /// proves `cross n2 n4` resolves to nodes 2 and 4 (it was refused as
    /// "no VN 'n2'"), ids still work, and a named node keeps its name.
    #[test]
    fn unnamed_nodes_go_by_the_name_status_shows() {
        let t = crate::gml::parse_gml(
            "graph [ node [ id 0 role \"transit\" ] node [ id 2 role \"client\" ]\n\
             node [ id 4 role \"client\" name \"c4\" ]\n\
             edge [ source 0 target 2 ] edge [ source 0 target 4 ] ]",
        )
        .expect("parses");
        assert_eq!(
            (t.node_name(0), t.node_name(1), t.node_name(2)),
            ("n0".to_string(), "n2".to_string(), "c4".to_string())
        );
        let want = Ok(Resolved::Cross(vec![Demand {
            src: 1,
            dst: 2,
            rate: Rate::from_bps(1_000_000),
        }]));
        for line in ["cross n2 c4 1Mbit/s", "cross 2 4 1Mbit/s"] {
            assert_eq!(ok(line).resolve(&t), want, "{line}");
        }
        assert_eq!(
            ok("link n0 n2 down").resolve(&t),
            Ok(Resolved::Link {
                a: 0,
                b: 2,
                action: LinkAction::Down
            })
        );
        // A named node does not also answer to `n<ID>`.
        assert_eq!(
            ok("cross n2 n4 1Mbit/s")
                .resolve(&t)
                .map_err(|e| e.to_string()),
            Err("no VN 'n4'".to_string())
        );
    }

    /// A pass proves `execute` changes the network: a link's delay, a
    /// failure, the cross matrix, and answers status and stop.
    #[test]
    fn execute_runs_commands_on_a_network() {
        let t = star();
        let (r, v0) = (t.nodes[0].name.clone(), t.nodes[1].name.clone());
        let mut net = Network::new(t, crate::Mode::HopByHop, crate::Metric::Delay).expect("net");
        let mut cross = Vec::new();
        let set = format!("link {r} {v0} set delay 7ms loss 1%");
        let Ok(Outcome::Changed(c)) = execute(&set, &mut net, &mut cross) else {
            panic!("{set}")
        };
        assert_eq!(c.pipes.len(), 2);
        let p = &net.distilled().pipes[c.pipes[0] as usize];
        assert_eq!(p.delay, Duration::from_millis(7));
        assert_eq!(
            p.loss,
            Probability::from_ppb(10_000_000).map_or(0.0, |p| p.as_f64())
        );
        // A black-hole names the link's two pipes (one per direction),
        // the two pipes `set` changed, and changes no route.
        let hole = format!("link {r} {v0} down 2s");
        let before = net.distilled().clone();
        match execute(&hole, &mut net, &mut cross) {
            Ok(Outcome::Blackhole {
                mut pipes,
                duration,
            }) => {
                pipes.sort_unstable();
                let mut want = c.pipes.clone();
                want.sort_unstable();
                assert_eq!(pipes, want);
                assert_eq!(duration, Duration::from_secs(2));
            }
            other => panic!("{hole}: {other:?}"),
        }
        assert_eq!(net.distilled(), &before, "no reroute");
        let down = format!("link {r} {v0} down");
        assert!(
            matches!(execute(&down, &mut net, &mut cross), Ok(Outcome::Changed(c)) if !c.routes.is_empty())
        );
        let v1 = net.topology().nodes[2].name.clone();
        let demand = format!("cross {v0} {v1} 1Mbit/s");
        assert!(execute(&demand, &mut net, &mut cross).is_ok());
        assert_eq!(cross.len(), 1);
        assert!(execute("cross clear", &mut net, &mut cross).is_ok());
        assert!(cross.is_empty());
        assert_eq!(execute("status", &mut net, &mut cross), Ok(Outcome::Status));
        assert_eq!(execute("stop", &mut net, &mut cross), Ok(Outcome::Stop));
        assert_eq!(
            execute("link a b set bw 10Mbps", &mut net, &mut cross),
            Err("1:17: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)".into())
        );
    }

    fn name() -> impl Strategy<Value = String> {
        "[a-z][a-z0-9_]{0,6}"
    }

    fn fixed_set() -> impl Strategy<Value = LinkSet> {
        (
            proptest::option::of(0u64..=u64::MAX),
            proptest::option::of(0u64..=3_600_000_000_000),
            proptest::option::of(0u32..=Probability::ONE_PPB),
            proptest::option::of(prop_oneof![
                (1u32..=1_000_000).prop_map(QueueLimit::Slots),
                (1u64..=4 << 30).prop_map(QueueLimit::Bytes),
            ]),
        )
            .prop_filter("at least one attribute", |(b, d, l, q)| {
                b.is_some() || d.is_some() || l.is_some() || q.is_some()
            })
            .prop_map(|(b, d, l, q)| LinkSet {
                bw: b.map(|v| Setting::Value(Rate::from_bps(v))),
                delay: d.map(|v| Setting::Value(Duration::from_nanos(v))),
                loss: l.and_then(Probability::from_ppb).map(Setting::Value),
                queue: q,
                words: PipeWords::default(),
            })
    }

    fn ranged_set() -> impl Strategy<Value = LinkSet> {
        (
            fixed_set(),
            1u64..=1 << 40,
            0u64..=1_000_000_000,
            0u32..=Probability::ONE_PPB / 2,
        )
            .prop_map(|(mut s, bw, d, l)| {
                if let Some(Setting::Value(v)) = s.bw {
                    let lo = v.bps().clamp(1, 1 << 40);
                    s.bw = Some(Setting::Range(
                        Rate::from_bps(lo),
                        Rate::from_bps(lo.max(bw)),
                    ));
                }
                if let Some(Setting::Value(v)) = s.delay {
                    let lo = v.as_nanos() / 2;
                    s.delay = Some(Setting::Range(
                        Duration::from_nanos(lo),
                        Duration::from_nanos(lo + d),
                    ));
                }
                if let Some(Setting::Value(v)) = s.loss {
                    let lo = v.ppb() / 2;
                    let hi = Probability::from_ppb(lo + l).unwrap_or(Probability::ONE);
                    s.loss = Probability::from_ppb(lo).map(|lo| Setting::Range(lo, hi));
                }
                s
            })
    }

    fn command() -> impl Strategy<Value = TopoCommand> {
        let demand = (name(), name(), 0u64..=u64::MAX).prop_map(|(src, dst, r)| CrossDemand {
            src,
            dst,
            rate: Rate::from_bps(r),
        });
        prop_oneof![
            (
                name(),
                name(),
                prop_oneof![
                    Just(LinkAction::Down),
                    (1u64..=u64::MAX / 2)
                        .prop_map(|n| LinkAction::DownFor(Duration::from_nanos(n))),
                    Just(LinkAction::Up),
                    fixed_set().prop_map(|s| LinkAction::Set(Box::new(s))),
                ]
            )
                .prop_map(|(a, b, action)| TopoCommand::Link { a, b, action }),
            (name(), any::<bool>()).prop_map(|(node, up)| TopoCommand::Node { node, up }),
            proptest::collection::vec(demand, 1..4).prop_map(TopoCommand::Cross),
            Just(TopoCommand::CrossClear),
            (
                1u64..=u64::MAX / 2,
                0u64..=u64::MAX / 2,
                name(),
                name(),
                ranged_set()
            )
                .prop_map(|(p, u, a, b, set)| TopoCommand::Every(Box::new(Every {
                    period: Duration::from_nanos(p),
                    until: Duration::from_nanos(u),
                    a,
                    b,
                    set,
                }))),
            Just(TopoCommand::Status),
            Just(TopoCommand::Stop),
        ]
    }

    /// Lines of words the grammar knows, in any order.
    fn wordy_line() -> impl Strategy<Value = String> {
        let word = prop_oneof![
            Just("link"),
            Just("node"),
            Just("cross"),
            Just("clear"),
            Just("every"),
            Just("until"),
            Just("set"),
            Just("down"),
            Just("up"),
            Just("bw"),
            Just("delay"),
            Just("loss"),
            Just("queue"),
            Just("10Mbit/s"),
            Just("5ms..50ms"),
            Just("1%"),
            Just("0..1%"),
            Just("50"),
            Just("a"),
            Just("b"),
            Just("="),
            Just("bw=1Mbit/s"),
            Just(","),
            Just("#"),
            Just("1e30"),
            Just("-1"),
            Just("..")
        ];
        proptest::collection::vec(word, 0..12).prop_map(|w| w.join(" "))
    }

    proptest! {
        /// A pass proves every command prints to text that parses back
        /// to the same command.
        #[test]
        fn display_round_trips(c in command()) {
            let text = c.to_string();
            prop_assert_eq!(parse_command(&text), Ok(c), "{}", text);
        }

        /// A pass proves any text parses or fails with an error (never a
        /// panic), and whatever parses prints back to text that parses
        /// equal.
        #[test]
        fn any_text_parses_or_fails_cleanly(text in prop_oneof![wordy_line(), "\\PC{0,40}"]) {
            if let Ok(c) = parse_command(&text) {
                prop_assert_eq!(parse_command(&c.to_string()), Ok(c), "{}", text);
            }
            let _ = parse_link_set(&text);
            let _ = crate::script::parse_script(&format!("1s {text}"));
        }
    }
}
