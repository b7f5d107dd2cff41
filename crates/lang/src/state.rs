//! The applied configuration: what a sequence of commands leaves behind.
//!
//! [`Config`] holds the configured pipes, schedulers and flow queues, the
//! rules, the lookup tables and the `one_pass` switch. [`Config::apply`] applies one command with ipfw's semantics (a
//! `pipe N config` replaces the pipe's whole configuration; `add` without a
//! number gets the last rule's number + 100). [`Config::apply_script`]
//! applies a whole script all-or-nothing: it works on a clone and swaps it
//! in only if every line parsed and applied and every rule's pipe exists.
//! [`Config::to_script`] prints the configuration back as commands.
//!
//! Rule 65535 is the built-in default rule, `allow ip from any to any`: it
//! is never stored, cannot be added or deleted, and is shown last by
//! `list`. pipelab is an emulator, not a firewall, so traffic no rule
//! claims passes untouched.
//!
//! Rules may share a number, as in ipfw: they are checked in the order
//! they were added, and `delete N` removes them all ([`Rules`]).
//!
//! Differences from ipfw, on purpose: a rule may not send to a pipe that is not configured
//! once the script is applied; a pipe used by a rule cannot be deleted;
//! deleting a missing rule or pipe is an error.
//!
//! This module does not build engine objects beyond validating each pipe's
//! [`PipeConfig`](pipelab_engine::config::PipeConfig), and does not compile
//! rules into a classifier; it is the typed, checked input of both.

use core::fmt;
use std::collections::{BTreeMap, BTreeSet};

use pipelab_engine::config::ConfigError;

use crate::ast::{
    Action, AddrMatch, Command, IpNet, OptionKind, PipeSpec, RuleSpec, TableId, AUTOINC_STEP,
    DEFAULT_RULE, MAX_PIPE, MAX_RULE, MAX_TABLE, MIN_PIPE, MIN_RULE,
};
use crate::ast::{QueueSpec, QueueTarget, SchedSpec};

/// A lookup table: addresses or networks and their values (the value a
/// `tablearg` action takes; 0 when not given). The classifier looks up the
/// longest matching prefix.
pub type Table = BTreeMap<IpNet, u32>;
use crate::error::{more_errors, ParseError, SourceLines, MAX_RENDERED_ERRORS};
use crate::parser::parse_script;
use crate::rules::Rules;

/// Pipes, rules and switches, as applied so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Configured pipes by number (`1..=65535`); each spec's
    /// [`PipeSpec::check`] succeeds (file contents are checked when the
    /// configuration is run).
    pub pipes: BTreeMap<u32, PipeSpec>,
    /// Schedulers by number (`sched N config`): scheduler `N` serves the
    /// link of pipe `N` (ipfw's convention; a pipe without one has FIFO).
    pub scheds: BTreeMap<u32, SchedSpec>,
    /// Flow queues by number (`queue N config`), each feeding a scheduler.
    pub queues: BTreeMap<u32, QueueSpec>,
    /// Rules by number (`1..=65534`), several to a number in the order
    /// added; each rule's `number` is `Some(its number)`.
    pub rules: Rules,
    /// Lookup tables by number (`0..=65535`) or name. A table made by
    /// `table T add` alone is never empty (deleting its last entry removes
    /// it); one made by `table T create` stays until `table T destroy`
    /// (see `created_tables`). A rule may name a table that does not
    /// exist, which matches nothing.
    pub tables: BTreeMap<TableId, Table>,
    /// The tables made by `table T create` (each also in `tables`, maybe
    /// empty).
    pub created_tables: BTreeSet<TableId>,
    /// `set one_pass`: true (ipfw's default) means a packet leaving a pipe
    /// leaves the classifier; false means it is reinjected after its rule.
    pub one_pass: bool,
}

impl Default for Config {
    /// No pipes, no rules (only the default allow rule), `one_pass` on.
    fn default() -> Self {
        Config {
            pipes: BTreeMap::new(),
            scheds: BTreeMap::new(),
            queues: BTreeMap::new(),
            rules: Rules::new(),
            tables: BTreeMap::new(),
            created_tables: BTreeSet::new(),
            one_pass: true,
        }
    }
}

/// What applying a command did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The pipe was created or reconfigured.
    PipeConfigured(u32),
    /// The pipe was deleted.
    PipeDeleted(u32),
    /// The scheduler was created or reconfigured.
    SchedConfigured(u32),
    /// The scheduler was deleted.
    SchedDeleted(u32),
    /// The flow queue was created or reconfigured.
    QueueConfigured(u32),
    /// The flow queue was deleted.
    QueueDeleted(u32),
    /// The rule was added with this number.
    RuleAdded(u32),
    /// These rules were deleted.
    RulesDeleted(Vec<u32>),
    /// All rules were deleted.
    Flushed,
    /// `one_pass` was set to this value.
    OnePassSet(bool),
    /// Text to show (`list`, `show`, `pipe show`, `table N list`), one
    /// command per line.
    Listing(String),
    /// An entry of this table was added or deleted, or the table flushed,
    /// created or destroyed.
    TableChanged(TableId),
    /// `table all flush`: every table was deleted.
    TablesFlushed,
}

/// Why a command cannot be applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// A pipe number outside `1..=65535`.
    #[error("pipe number {0} is out of range 1..65535")]
    PipeOutOfRange(u32),
    /// A rule number outside `1..=65534`.
    #[error("rule number {0} is out of range 1..65534")]
    RuleOutOfRange(u32),
    /// The engine rejects the pipe's parameters.
    #[error("pipe {id}: {error}")]
    BadPipeConfig {
        /// The pipe.
        id: u32,
        /// The engine's reason.
        error: ConfigError,
    },
    /// `pipe N delete` or `pipe N show` of a pipe that is not configured.
    #[error("pipe {0} does not exist")]
    NoSuchPipe(u32),
    /// `pipe N delete` while rules still send to it.
    #[error("pipe {pipe} is still used by {}", rule_list(rules))]
    PipeInUse {
        /// The pipe.
        pipe: u32,
        /// The rules that send to it.
        rules: Vec<u32>,
    },
    /// `delete N` where rule `N` does not exist.
    #[error("rule {0} does not exist")]
    NoSuchRule(u32),
    /// `add` without a number when the last rule is too close to 65535.
    #[error("no rule number left after rule {last}: give the number explicitly")]
    RuleNumberOverflow {
        /// The highest rule number in use.
        last: u32,
    },
    /// `skipto N` in a rule numbered `N` or more.
    #[error("rule {rule}: skipto {target} must jump forward, to a number greater than {rule}")]
    SkiptoBackward {
        /// The rule.
        rule: u32,
        /// Its skipto target.
        target: u32,
    },
    /// After a script: a rule sends to a pipe that is not configured.
    #[error("pipe {pipe} is not configured (used by rule {rule})")]
    PipeNotConfigured {
        /// The rule.
        rule: u32,
        /// The missing pipe.
        pipe: u32,
    },
    /// A table number outside `0..=65535`.
    #[error("table number {0} is out of range 0..65535")]
    TableOutOfRange(u32),
    /// `table N add` of an address or network already in the table.
    #[error("table {table}: {net} is already in the table (delete it first to change its value)")]
    TableEntryExists {
        /// The table.
        table: TableId,
        /// The entry.
        net: IpNet,
    },
    /// `table N delete` of an entry that is not in the table.
    #[error("table {table}: {net} is not in the table")]
    NoSuchTableEntry {
        /// The table.
        table: TableId,
        /// The entry.
        net: IpNet,
    },
    /// `table T create` of a table that exists.
    #[error("table {0} already exists (table {0} flush empties it)")]
    TableExists(TableId),
    /// `table T destroy` of a table that does not exist.
    #[error("table {0} does not exist")]
    NoSuchTable(TableId),
    /// `table T destroy` while rules look it up.
    #[error("table {table} is still used by {}", rule_list(rules))]
    TableInUse {
        /// The table.
        table: TableId,
        /// The rules that look it up.
        rules: Vec<u32>,
    },
    /// After a script: a rule sends to a flow queue that is not configured.
    #[error("queue {queue} is not configured (used by rule {rule})")]
    QueueNotConfigured {
        /// The rule.
        rule: u32,
        /// The missing queue.
        queue: u32,
    },
    /// The engine rejects a scheduler's parameters.
    #[error("sched {id}: {error}")]
    BadSchedConfig {
        /// The scheduler.
        id: u32,
        /// The engine's reason.
        error: ConfigError,
    },
    /// The engine rejects a flow queue's parameters.
    #[error("queue {id}: {error}")]
    BadQueueConfig {
        /// The queue.
        id: u32,
        /// The engine's reason.
        error: ConfigError,
    },
    /// `sched N delete` of a scheduler that is not configured.
    #[error("sched {0} does not exist")]
    NoSuchSched(u32),
    /// `queue N delete` of a queue that is not configured.
    #[error("queue {0} does not exist")]
    NoSuchQueue(u32),
    /// `queue N delete` while rules still send to it.
    #[error("queue {queue} is still used by {}", rule_list(rules))]
    QueueInUse {
        /// The queue.
        queue: u32,
        /// The rules that send to it.
        rules: Vec<u32>,
    },
    /// After a script: a scheduler without the pipe whose link it serves.
    #[error("sched {sched} has no pipe {sched} to serve (configure pipe {sched})")]
    SchedWithoutPipe {
        /// The scheduler.
        sched: u32,
    },
    /// After a script: a queue feeds a scheduler or pipe that is not
    /// configured (a pipe `N` has scheduler `N` implicitly).
    #[error("queue {queue}: {target} is not configured")]
    QueueTargetNotConfigured {
        /// The queue.
        queue: u32,
        /// What it feeds.
        target: QueueTarget,
    },
}

fn rule_list(rules: &[u32]) -> String {
    let nums: Vec<String> = rules.iter().map(u32::to_string).collect();
    let s = if rules.len() == 1 { "" } else { "s" };
    format!("rule{s} {}", nums.join(", "))
}

/// An error in a script: a line that does not parse, a command that does
/// not apply, or a dangling reference found at the end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScriptError {
    /// A syntax or value error.
    Parse(ParseError),
    /// A command that parsed but cannot be applied.
    Apply {
        /// The command's line (for a dangling reference, the line of the
        /// rule that refers; 0 if that rule was not added by this script).
        line: u32,
        /// The column of the command's first word.
        column: u32,
        /// Why.
        error: ApplyError,
    },
}

impl ScriptError {
    /// The line the error is on (0 if unknown).
    pub fn line(&self) -> u32 {
        match self {
            ScriptError::Parse(e) => e.line,
            ScriptError::Apply { line, .. } => *line,
        }
    }

    /// Renders the error like rustc, with the file name and the line (see
    /// [`ParseError::render`]).
    pub fn render(&self, file: &str, source: &str) -> String {
        self.render_in(file, &SourceLines::new(source))
    }

    /// [`ScriptError::render`] with the source's lines already indexed
    /// (see [`render_errors`]).
    pub fn render_in(&self, file: &str, source: &SourceLines<'_>) -> String {
        match self {
            ScriptError::Parse(e) => e.render_in(file, source),
            ScriptError::Apply {
                line,
                column,
                error,
            } => {
                ParseError::new(*line, *column, "", error.to_string(), None).render_in(file, source)
            }
        }
    }
}

/// Renders a script's errors in one pass over the script: the first
/// [`MAX_RENDERED_ERRORS`] as [`ScriptError::render`] does, then `and K
/// more errors` on a line of its own if there are more. Linear in the
/// script's length, whatever the number of errors.
pub fn render_errors(errors: &[ScriptError], file: &str, source: &str) -> String {
    let lines = SourceLines::new(source);
    let mut out = String::new();
    for e in errors.iter().take(MAX_RENDERED_ERRORS) {
        out.push_str(&e.render_in(file, &lines));
    }
    out.push_str(&more_errors(errors.len()));
    out
}

impl fmt::Display for ScriptError {
    /// `line:column: message`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScriptError::Parse(e) => write!(f, "{e}"),
            ScriptError::Apply {
                line,
                column,
                error,
            } => write!(f, "{line}:{column}: {error}"),
        }
    }
}

impl std::error::Error for ScriptError {}

fn check_pipe(id: u32) -> Result<(), ApplyError> {
    if (MIN_PIPE..=MAX_PIPE).contains(&id) {
        Ok(())
    } else {
        Err(ApplyError::PipeOutOfRange(id))
    }
}

fn check_rule(n: u32) -> Result<(), ApplyError> {
    if (MIN_RULE..=MAX_RULE).contains(&n) {
        Ok(())
    } else {
        Err(ApplyError::RuleOutOfRange(n))
    }
}

impl Config {
    /// An empty configuration (same as `Config::default()`).
    pub fn new() -> Config {
        Config::default()
    }

    /// Applies one command. On error the configuration is unchanged.
    ///
    /// References from rules to pipes are not checked here, so that a
    /// script may add rules before configuring their pipes; see
    /// [`Config::check_references`].
    pub fn apply(&mut self, cmd: &Command) -> Result<Outcome, ApplyError> {
        match cmd {
            Command::PipeConfig { id, spec } => {
                check_pipe(*id)?;
                spec.check()
                    .map_err(|error| ApplyError::BadPipeConfig { id: *id, error })?;
                self.pipes.insert(*id, spec.clone());
                Ok(Outcome::PipeConfigured(*id))
            }
            Command::PipeDelete { id } => {
                if !self.pipes.contains_key(id) {
                    return Err(ApplyError::NoSuchPipe(*id));
                }
                let users: Vec<u32> = self
                    .rules
                    .iter()
                    .filter(|(_, r)| r.action == Action::Pipe(*id))
                    .map(|(&n, _)| n)
                    .collect();
                if !users.is_empty() {
                    return Err(ApplyError::PipeInUse {
                        pipe: *id,
                        rules: users,
                    });
                }
                self.pipes.remove(id);
                Ok(Outcome::PipeDeleted(*id))
            }
            Command::SchedConfig { id, spec } => {
                check_pipe(*id)?;
                spec.to_config()
                    .map_err(|error| ApplyError::BadSchedConfig { id: *id, error })?;
                self.scheds.insert(*id, *spec);
                Ok(Outcome::SchedConfigured(*id))
            }
            Command::SchedDelete { id } => {
                if self.scheds.remove(id).is_none() {
                    return Err(ApplyError::NoSuchSched(*id));
                }
                Ok(Outcome::SchedDeleted(*id))
            }
            Command::QueueConfig { id, spec } => {
                check_pipe(*id)?;
                check_pipe(spec.target.number())?;
                spec.to_flow_spec()
                    .map_err(|error| ApplyError::BadQueueConfig { id: *id, error })?;
                self.queues.insert(*id, spec.clone());
                Ok(Outcome::QueueConfigured(*id))
            }
            Command::QueueDelete { id } => {
                if !self.queues.contains_key(id) {
                    return Err(ApplyError::NoSuchQueue(*id));
                }
                let users: Vec<u32> = self
                    .rules
                    .iter()
                    .filter(|(_, r)| r.action == Action::Queue(*id))
                    .map(|(&n, _)| n)
                    .collect();
                if !users.is_empty() {
                    return Err(ApplyError::QueueInUse {
                        queue: *id,
                        rules: users,
                    });
                }
                self.queues.remove(id);
                Ok(Outcome::QueueDeleted(*id))
            }
            Command::PipeShow { id } => {
                let mut out = String::new();
                for (n, spec) in &self.pipes {
                    if id.is_none() || *id == Some(*n) {
                        out.push_str(&pipe_line(*n, spec));
                        out.push('\n');
                    }
                }
                match id {
                    Some(i) if !self.pipes.contains_key(i) => Err(ApplyError::NoSuchPipe(*i)),
                    _ => Ok(Outcome::Listing(out)),
                }
            }
            Command::Add(spec) => {
                let n = match spec.number {
                    Some(n) => {
                        check_rule(n)?;
                        n
                    }
                    None => self.next_rule_number()?,
                };
                if let Action::Skipto(target) = spec.action {
                    if target <= n {
                        return Err(ApplyError::SkiptoBackward { rule: n, target });
                    }
                }
                if let Action::Pipe(p) | Action::Queue(p) = spec.action {
                    check_pipe(p)?;
                }
                let mut rule = spec.clone();
                rule.number = Some(n);
                self.rules.insert(n, rule);
                Ok(Outcome::RuleAdded(n))
            }
            Command::Delete { numbers } => {
                for n in numbers {
                    if !self.rules.contains_key(n) {
                        return Err(ApplyError::NoSuchRule(*n));
                    }
                }
                for n in numbers {
                    self.rules.remove(n);
                }
                Ok(Outcome::RulesDeleted(numbers.clone()))
            }
            Command::Flush => {
                self.rules.clear();
                Ok(Outcome::Flushed)
            }
            Command::List | Command::Show => Ok(Outcome::Listing(self.rule_listing())),
            Command::SetOnePass(b) => {
                self.one_pass = *b;
                Ok(Outcome::OnePassSet(*b))
            }
            Command::TableAdd { table, net, value } => {
                check_table(table)?;
                let t = self.tables.entry(table.clone()).or_default();
                if t.contains_key(net) {
                    return Err(ApplyError::TableEntryExists {
                        table: table.clone(),
                        net: *net,
                    });
                }
                t.insert(*net, value.unwrap_or(0));
                Ok(Outcome::TableChanged(table.clone()))
            }
            Command::TableDelete { table, net } => {
                check_table(table)?;
                let t = self.tables.get_mut(table);
                if t.and_then(|t| t.remove(net)).is_none() {
                    return Err(ApplyError::NoSuchTableEntry {
                        table: table.clone(),
                        net: *net,
                    });
                }
                self.drop_if_implicit_and_empty(table);
                Ok(Outcome::TableChanged(table.clone()))
            }
            Command::TableFlush { table: Some(t) } => {
                check_table(t)?;
                if let Some(entries) = self.tables.get_mut(t) {
                    entries.clear();
                }
                self.drop_if_implicit_and_empty(t);
                Ok(Outcome::TableChanged(t.clone()))
            }
            Command::TableFlush { table: None } => {
                // Created tables stay, empty; the others go with their
                // entries.
                self.tables.retain(|t, _| self.created_tables.contains(t));
                for entries in self.tables.values_mut() {
                    entries.clear();
                }
                Ok(Outcome::TablesFlushed)
            }
            Command::TableList { table } => {
                if let Some(t) = table {
                    check_table(t)?;
                }
                let mut out = String::new();
                for (n, t) in &self.tables {
                    if table.is_none() || table.as_ref() == Some(n) {
                        if self.created_tables.contains(n) {
                            out.push_str(&format!("table {n} create\n"));
                        }
                        out.push_str(&table_lines(n, t));
                    }
                }
                Ok(Outcome::Listing(out))
            }
            Command::TableCreate { table, .. } => {
                check_table(table)?;
                if self.tables.contains_key(table) {
                    return Err(ApplyError::TableExists(table.clone()));
                }
                self.tables.insert(table.clone(), Table::new());
                self.created_tables.insert(table.clone());
                Ok(Outcome::TableChanged(table.clone()))
            }
            Command::TableDestroy { table } => {
                check_table(table)?;
                if !self.tables.contains_key(table) {
                    return Err(ApplyError::NoSuchTable(table.clone()));
                }
                let users: Vec<u32> = self
                    .rules
                    .iter()
                    .filter(|(_, r)| rule_looks_up(r, table))
                    .map(|(&n, _)| n)
                    .collect();
                if !users.is_empty() {
                    return Err(ApplyError::TableInUse {
                        table: table.clone(),
                        rules: users,
                    });
                }
                self.tables.remove(table);
                self.created_tables.remove(table);
                Ok(Outcome::TableChanged(table.clone()))
            }
        }
    }

    /// Remove table `t` if it is empty and was not made by `create`.
    fn drop_if_implicit_and_empty(&mut self, t: &TableId) {
        if !self.created_tables.contains(t) && self.tables.get(t).is_some_and(BTreeMap::is_empty) {
            self.tables.remove(t);
        }
    }

    /// The number `add` without a number would get: the highest rule
    /// number + 100, or 100 for the first rule.
    pub fn next_rule_number(&self) -> Result<u32, ApplyError> {
        match self.rules.last_number() {
            None => Ok(AUTOINC_STEP),
            Some(last) => last
                .checked_add(AUTOINC_STEP)
                .filter(|&n| n <= MAX_RULE)
                .ok_or(ApplyError::RuleNumberOverflow { last }),
        }
    }

    /// References that do not resolve: schedulers without their pipe,
    /// queues whose scheduler or pipe is not configured (in number order),
    /// then rules that send to a pipe or queue that is not configured (in
    /// rule order). An empty list means every reference resolves.
    pub fn check_references(&self) -> Vec<ApplyError> {
        let mut errs = Vec::new();
        for &sched in self.scheds.keys() {
            if !self.pipes.contains_key(&sched) {
                errs.push(ApplyError::SchedWithoutPipe { sched });
            }
        }
        for (&queue, q) in &self.queues {
            let ok = match q.target {
                QueueTarget::Sched(n) => {
                    self.scheds.contains_key(&n) || self.pipes.contains_key(&n)
                }
                QueueTarget::Pipe(n) => self.pipes.contains_key(&n),
            };
            if !ok {
                errs.push(ApplyError::QueueTargetNotConfigured {
                    queue,
                    target: q.target,
                });
            }
        }
        for (&rule, r) in &self.rules {
            match r.action {
                Action::Pipe(pipe) if !self.pipes.contains_key(&pipe) => {
                    errs.push(ApplyError::PipeNotConfigured { rule, pipe })
                }
                Action::Queue(queue) if !self.queues.contains_key(&queue) => {
                    errs.push(ApplyError::QueueNotConfigured { rule, queue })
                }
                _ => {}
            }
        }
        errs
    }

    /// Parses and applies a script, all or nothing: on any error the
    /// configuration is unchanged and every error found is returned (all
    /// parse errors; or all apply errors and dangling references).
    ///
    /// Characters a reader cannot see (NUL, a byte order mark, control
    /// characters; see [`crate::source`]) are refused first, each with its
    /// position.
    pub fn apply_script(&mut self, text: &str) -> Result<(), Vec<ScriptError>> {
        let hidden = crate::source::check_text(text);
        if !hidden.is_empty() {
            return Err(hidden.into_iter().map(ScriptError::Parse).collect());
        }
        let cmds = parse_script(text)
            .map_err(|errs| errs.into_iter().map(ScriptError::Parse).collect::<Vec<_>>())?;
        let mut next = self.clone();
        let mut errors = Vec::new();
        // Where each rule added by this script was written.
        let mut rule_pos: BTreeMap<u32, (u32, u32)> = BTreeMap::new();
        // Where each scheduler and queue was last configured.
        let mut sched_pos: BTreeMap<u32, (u32, u32)> = BTreeMap::new();
        let mut queue_pos: BTreeMap<u32, (u32, u32)> = BTreeMap::new();
        for c in &cmds {
            match next.apply(&c.node) {
                Ok(Outcome::RuleAdded(n)) => {
                    rule_pos.insert(n, (c.line, c.column));
                }
                Ok(Outcome::SchedConfigured(n)) => {
                    sched_pos.insert(n, (c.line, c.column));
                }
                Ok(Outcome::QueueConfigured(n)) => {
                    queue_pos.insert(n, (c.line, c.column));
                }
                Ok(_) => {}
                Err(error) => errors.push(ScriptError::Apply {
                    line: c.line,
                    column: c.column,
                    error,
                }),
            }
        }
        for error in next.check_references() {
            let pos = match error {
                ApplyError::PipeNotConfigured { rule, .. }
                | ApplyError::QueueNotConfigured { rule, .. } => rule_pos.get(&rule),
                ApplyError::SchedWithoutPipe { sched } => sched_pos.get(&sched),
                ApplyError::QueueTargetNotConfigured { queue, .. } => queue_pos.get(&queue),
                _ => None,
            };
            let (line, column) = pos.copied().unwrap_or((0, 0));
            errors.push(ScriptError::Apply {
                line,
                column,
                error,
            });
        }
        if errors.is_empty() {
            *self = next;
            Ok(())
        } else {
            errors.sort_by_key(ScriptError::line);
            Err(errors)
        }
    }

    /// The whole configuration as a script: `set one_pass`, then the pipes,
    /// the schedulers, the queues, the tables, then the rules, in number
    /// order. Applying it to an empty [`Config`] gives a configuration
    /// equal to `self`.
    pub fn to_script(&self) -> String {
        let mut out = format!("{}\n", Command::SetOnePass(self.one_pass));
        for (id, spec) in &self.pipes {
            out.push_str(&pipe_line(*id, spec));
            out.push('\n');
        }
        for (&id, &spec) in &self.scheds {
            out.push_str(&Command::SchedConfig { id, spec }.to_string());
            out.push('\n');
        }
        for (&id, spec) in &self.queues {
            let spec = spec.clone();
            out.push_str(&Command::QueueConfig { id, spec }.to_string());
            out.push('\n');
        }
        for (n, t) in &self.tables {
            if self.created_tables.contains(n) {
                out.push_str(
                    &Command::TableCreate {
                        table: n.clone(),
                        typed: false,
                    }
                    .to_string(),
                );
                out.push('\n');
            }
            out.push_str(&table_lines(n, t));
        }
        for (n, rule) in &self.rules {
            let mut r = rule.clone();
            r.number = Some(*n);
            out.push_str(&Command::Add(r).to_string());
            out.push('\n');
        }
        out
    }

    /// The rules as ipfw lists them (`00100 pipe 1 ip from any to any`),
    /// ending with the default rule.
    pub fn rule_listing(&self) -> String {
        let mut out = String::new();
        for (n, rule) in &self.rules {
            let mut r = rule.clone();
            r.number = None;
            out.push_str(&format!("{n:05} {r}\n"));
        }
        out.push_str(&format!("{DEFAULT_RULE} allow ip from any to any\n"));
        out
    }
}

/// Does `r` look table `t` up (source, destination, `src-ip`, `dst-ip`)?
fn rule_looks_up(r: &RuleSpec, t: &TableId) -> bool {
    let is = |a: &AddrMatch| matches!(a, AddrMatch::Table { table, .. } if table == t);
    is(&r.src.addr)
        || is(&r.dst.addr)
        || r.options
            .iter()
            .any(|o| matches!(&o.kind, OptionKind::SrcIp(a) | OptionKind::DstIp(a) if is(a)))
}

/// `table N add NET [VALUE]` for each entry, value omitted when 0.
fn table_lines(n: &TableId, t: &Table) -> String {
    let mut out = String::new();
    for (net, v) in t {
        let value = (*v != 0).then_some(*v);
        out.push_str(
            &Command::TableAdd {
                table: n.clone(),
                net: *net,
                value,
            }
            .to_string(),
        );
        out.push('\n');
    }
    out
}

fn check_table(t: &TableId) -> Result<(), ApplyError> {
    match t {
        TableId::Number(n) if *n > MAX_TABLE => Err(ApplyError::TableOutOfRange(*n)),
        _ => Ok(()),
    }
}

fn pipe_line(id: u32, spec: &PipeSpec) -> String {
    Command::PipeConfig {
        id,
        spec: spec.clone(),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_line;

    fn cmd(s: &str) -> Command {
        match parse_line(s) {
            Ok(Some(c)) => c,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn add_without_number_gets_last_plus_100() {
        let mut c = Config::new();
        assert_eq!(
            c.apply(&cmd("add allow ip from any to any")),
            Ok(Outcome::RuleAdded(100))
        );
        assert_eq!(
            c.apply(&cmd("add 1000 deny ip from any to any")),
            Ok(Outcome::RuleAdded(1000))
        );
        assert_eq!(
            c.apply(&cmd("add count ip from any to any")),
            Ok(Outcome::RuleAdded(1100))
        );
        assert_eq!(
            c.apply(&cmd("add 65500 count")),
            Ok(Outcome::RuleAdded(65500))
        );
        assert_eq!(
            c.apply(&cmd("add count")),
            Err(ApplyError::RuleNumberOverflow { last: 65500 })
        );
    }

    #[test]
    fn delete_and_duplicates_and_skipto() {
        let mut c = Config::new();
        c.apply(&cmd("add 100 allow")).unwrap();
        // ipfw keeps both, in the order added.
        assert_eq!(c.apply(&cmd("add 100 deny")), Ok(Outcome::RuleAdded(100)));
        assert_eq!(c.rules.len(), 2);
        assert_eq!(
            c.apply(&cmd("delete 100 200")),
            Err(ApplyError::NoSuchRule(200))
        );
        assert!(
            c.rules.contains_key(&100),
            "a failed delete changes nothing"
        );
        assert_eq!(
            c.apply(&cmd("add 300 skipto 300")),
            Err(ApplyError::SkiptoBackward {
                rule: 300,
                target: 300
            })
        );
        assert_eq!(
            c.apply(&cmd("delete 100")),
            Ok(Outcome::RulesDeleted(vec![100]))
        );
        assert!(c.rules.is_empty());
    }

    #[test]
    fn pipe_in_use_cannot_be_deleted() {
        let mut c = Config::new();
        c.apply_script("pipe 1 config bw 1Mbit/s\nadd 100 pipe 1\nadd 200 pipe 1 in")
            .unwrap();
        let e = c.apply(&cmd("pipe 1 delete")).unwrap_err();
        assert_eq!(e.to_string(), "pipe 1 is still used by rules 100, 200");
        assert_eq!(
            c.apply(&cmd("pipe 2 delete")).unwrap_err().to_string(),
            "pipe 2 does not exist"
        );
        c.apply(&cmd("flush")).unwrap();
        assert_eq!(c.apply(&cmd("pipe 1 delete")), Ok(Outcome::PipeDeleted(1)));
    }

    #[test]
    fn listing_shows_the_default_rule_last() {
        let mut c = Config::new();
        c.apply_script("pipe 1 config bw 3Mbit/s delay 32ms\nadd 100 pipe 1 ip from any to any")
            .unwrap();
        assert_eq!(
            c.apply(&Command::List),
            Ok(Outcome::Listing(
                "00100 pipe 1 ip from any to any\n65535 allow ip from any to any\n".into()
            ))
        );
        assert_eq!(
            c.apply(&Command::PipeShow { id: None }),
            Ok(Outcome::Listing(
                "pipe 1 config bw 3Mbit/s delay 32ms\n".into()
            ))
        );
    }

    #[test]
    fn apply_script_is_all_or_nothing_and_reports_every_error() {
        let mut c = Config::new();
        c.apply_script("pipe 1 config bw 1Mbit/s\nadd 100 pipe 1")
            .unwrap();
        let before = c.clone();
        let script = "pipe 2 config bw 2Mbit/s\n\
                      add 200 pipe 2\n\
                      add 300 pipe 5 ip from any to any\n\
                      delete 999\n\
                      pipe 1 delete\n";
        let errs = c.apply_script(script).unwrap_err();
        let msgs: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs,
            vec![
                "3:1: pipe 5 is not configured (used by rule 300)",
                "4:1: rule 999 does not exist",
                "5:1: pipe 1 is still used by rule 100",
            ]
        );
        assert_eq!(c, before, "nothing of the failed script is applied");
        // A parse error anywhere also leaves the config unchanged.
        let errs = c
            .apply_script("pipe 3 config\npipe 4 config bw 1Mbps")
            .unwrap_err();
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].to_string(),
            "2:18: unknown unit 'Mbps' in '1Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)"
        );
        assert_eq!(c, before);
        // Rules may come before their pipes in a script.
        c.apply_script("add 400 pipe 7\npipe 7 config delay 10ms")
            .unwrap();
        assert!(c.pipes.contains_key(&7) && c.rules.contains_key(&400));
    }

    /// Tables: add, duplicate, delete (the last entry removes the table),
    /// list as commands, flush one or all, and printed by `to_script`.
    #[test]
    fn tables_apply_list_and_print() {
        let mut c = Config::new();
        c.apply_script(
            "table 1 add 10.0.0.0/8 5\ntable 1 add 10.1.0.0/16 7\ntable 2 add 2001:db8::/32\n\
             pipe 5 config\nadd 100 pipe tablearg ip from table(1) to any",
        )
        .unwrap();
        assert_eq!(
            c.apply(&cmd("table 1 add 10.0.0.0/8 9"))
                .unwrap_err()
                .to_string(),
            "table 1: 10.0.0.0/8 is already in the table (delete it first to change its value)"
        );
        assert_eq!(
            c.apply(&cmd("table 1 list")),
            Ok(Outcome::Listing(
                "table 1 add 10.0.0.0/8 5\ntable 1 add 10.1.0.0/16 7\n".into()
            ))
        );
        let text = c.to_script();
        assert_eq!(
            text,
            "set one_pass 1\npipe 5 config\ntable 1 add 10.0.0.0/8 5\n\
             table 1 add 10.1.0.0/16 7\ntable 2 add 2001:db8::/32\n\
             add 100 pipe tablearg ip from table(1) to any\n"
        );
        let mut d = Config::new();
        d.apply_script(&text).unwrap();
        assert_eq!(d, c);
        assert_eq!(
            c.apply(&cmd("table 2 delete 2001:db8::/32")),
            Ok(Outcome::TableChanged(TableId::Number(2)))
        );
        assert!(
            !c.tables.contains_key(&TableId::Number(2)),
            "an emptied table is removed"
        );
        assert_eq!(
            c.apply(&cmd("table 2 delete 2001:db8::/32"))
                .unwrap_err()
                .to_string(),
            "table 2: 2001:db8::/32 is not in the table"
        );
        c.apply(&cmd("table 1 flush")).unwrap();
        assert!(c.tables.is_empty());
        c.apply(&cmd("table 3 add 1.2.3.4")).unwrap();
        assert_eq!(c.apply(&cmd("table all flush")), Ok(Outcome::TablesFlushed));
        assert!(c.tables.is_empty());
    }

    #[test]
    fn to_script_round_trips() {
        let mut c = Config::new();
        c.apply_script(
            "set one_pass 0\npipe 10 config bw 2000Kbit/s delay 3ms\n\
             add 100 pipe 10 out dst-ip 192.0.2.7\nadd prob 0.05 deny src-ip 10.0.0.0/8",
        )
        .unwrap();
        let text = c.to_script();
        assert_eq!(
            text,
            "set one_pass 0\npipe 10 config bw 2Mbit/s delay 3ms\n\
             add 100 pipe 10 ip from any to any out dst-ip 192.0.2.7\n\
             add 200 prob 0.05 deny ip from any to any src-ip 10.0.0.0/8\n"
        );
        let mut d = Config::new();
        d.apply_script(&text).unwrap();
        assert_eq!(d, c);
    }
}
