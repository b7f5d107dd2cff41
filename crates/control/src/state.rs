//! The daemon's configuration: root's block, one block per user, limits,
//! and the merged configuration the data plane runs.
//!
//! # Numbering
//!
//! Root writes global numbers: its pipes and rules must lie below
//! [`USER_BASE`] (32768). Every other user has a block of [`BLOCK`] (64)
//! pipe numbers and 64 rule numbers in the upper half, chosen by the
//! block's slot `s` (the lowest free slot when the user first configures
//! something; freed when the block is empty again; kept in the journal):
//!
//! * the user's pipe `p` (`1..=64`) is global pipe `32768 + 64·s + p − 1`;
//!   a pipe keeps its global number as long as it exists, so reconfiguring
//!   it keeps its queued packets;
//! * the user's rules, whatever their numbers (`1..=65534`), are global
//!   rules `32768 + 64·s + k` where `k` is the rule's rank in the user's
//!   number order: the order of a user's rules is kept exactly, and two
//!   users' rules never interleave;
//! * every rule of a user gets `uid UID` appended, so it matches only that
//!   user's traffic (planetlab-dummynet-emulation §3.5), and its `pipe N`
//!   action is mapped as above.
//!
//! Users may not use schedulers, flow queues, lookup tables, `skipto`,
//! `pipe tablearg`, `set one_pass`, or pipes that read files: those reach
//! beyond their block. Root may act in a user's block (the request's
//! `user` field).
//!
//! A user's block is found by its uid in a `BTreeMap` (O(log N) in users).

use std::collections::BTreeMap;

use pipelab_engine::config::QueueLimit;
use pipelab_engine::mask::DEFAULT_BUCKETS;
use pipelab_lang::ast::{Action, AddrMatch, Command, OptionKind, RuleOption, UserMatch};
use pipelab_lang::{parse_netconfig, parse_script, Config, NetCommand, NetSpec, Outcome};
use serde::{Deserialize, Serialize};

use crate::error::{LimitError, RequestError};

/// First global pipe and rule number of the users' blocks.
pub const USER_BASE: u32 = 32768;
/// Pipes (and rules) per user block.
pub const BLOCK: u32 = 64;
/// Number of user blocks: the rule space `32768..=65534` holds 511.
pub const MAX_SLOTS: u32 = (pipelab_lang::ast::MAX_RULE - USER_BASE + 1) / BLOCK;
/// Bytes counted per queue slot for the memory limit (one full-size
/// Ethernet frame).
pub const SLOT_BYTES: u64 = 1514;
/// Queue length of a pipe without `queue` (the engine's default, 50
/// slots).
pub const DEFAULT_QUEUE_SLOTS: u64 = 50;
/// First pipe number `netconfig` gives root's links (as in Fig. 5).
pub const ROOT_NETCONFIG_PIPE: u32 = 10000;
/// First rule number `netconfig` gives a link.
pub const NETCONFIG_RULE: u32 = 10000;

/// Per-user limits, set by root.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Pipes (at most [`BLOCK`]).
    pub pipes: u32,
    /// Rules (at most [`BLOCK`]).
    pub rules: u32,
    /// Queue memory in bytes: the sum over the user's pipes of their queue
    /// bounds (a bound in slots counts [`SLOT_BYTES`] per slot).
    pub memory: u64,
}

impl Default for Limits {
    /// 64 pipes, 64 rules, 16 MiB of queues.
    fn default() -> Limits {
        Limits {
            pipes: BLOCK,
            rules: BLOCK,
            memory: 16 << 20,
        }
    }
}

/// A `netconfig` link: its selector, the command that made it, and the
/// numbers it was given (in the block's own numbering).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetEntry {
    /// The canonical command (after `netconfig`).
    pub command: String,
    /// Its pipes.
    pub pipes: Vec<u32>,
    /// Its rules.
    pub rules: Vec<u32>,
}

/// One block: a configuration in the block's own numbering and its
/// `netconfig` links by selector.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Block {
    /// Pipes, rules (and for root, everything else).
    pub cfg: Config,
    /// `netconfig` links by selector text.
    pub net: BTreeMap<String, NetEntry>,
}

impl Block {
    fn is_empty(&self) -> bool {
        self.cfg.pipes.is_empty()
            && self.cfg.rules.is_empty()
            && self.cfg.scheds.is_empty()
            && self.cfg.queues.is_empty()
            && self.cfg.tables.is_empty()
            && self.cfg.created_tables.is_empty()
            && self.net.is_empty()
    }
}

/// A user's block and its slot.
#[derive(Clone, Debug, PartialEq)]
pub struct UserBlock {
    /// Which part of the global numbers the block occupies.
    pub slot: u32,
    /// The block.
    pub block: Block,
}

/// Who a request acts for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Root's block (global numbers below [`USER_BASE`]: the numbers above
    /// belong to the users' blocks).
    Root,
    /// A user's block.
    User(u32),
    /// The whole configuration of an emulation without users' blocks
    /// (every number of the language); it is kept where root's block is.
    Whole,
}

/// A block of the journal that did not apply when the daemon started
/// (a file it names is gone, the language changed, the data plane
/// refused it): kept as it was, not run, until its owner replaces their
/// configuration (`restore`); shown by `save` and `stats`, journaled,
/// and tried again at the next start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// The block's script, as the journal had it.
    pub script: String,
    /// Its `netconfig` links.
    pub net: BTreeMap<String, NetEntry>,
    /// Why it was not applied: the line and the error.
    pub why: String,
}

/// Everything the daemon has committed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct State {
    /// Root's block.
    pub root: Block,
    /// Users' blocks by uid.
    pub users: BTreeMap<u32, UserBlock>,
    /// Limits by uid (users without an entry get [`Limits::default`]).
    pub limits: BTreeMap<u32, Limits>,
    /// Blocks held at start-up, by uid (0: root's block, or the whole
    /// configuration of an emulation without users' blocks).
    pub held: BTreeMap<u32, Held>,
}

/// The uid whose block `t` is (0 for root's and the whole configuration).
pub fn owner_of(t: Target) -> u32 {
    match t {
        Target::Root | Target::Whole => 0,
        Target::User(uid) => uid,
    }
}

/// A held block as the comment lines `save` prints before the
/// configuration.
pub fn held_comment(h: &Held) -> String {
    let mut out = String::from(
        "# HELD: this configuration was not applied when pipelabd started; it is kept,\n# not run, until `pipelab restore FILE` replaces it. Why:\n",
    );
    for l in h.why.lines() {
        out.push_str(&format!("#   {l}\n"));
    }
    out.push_str("# The held configuration:\n");
    for l in h.script.lines() {
        out.push_str(&format!("#   {l}\n"));
    }
    out
}

/// The global number of a user's pipe `p` in slot `slot`.
pub fn global_pipe(slot: u32, p: u32) -> u32 {
    USER_BASE + slot * BLOCK + p - 1
}

/// The global number of the `rank`-th rule (from 0) in slot `slot`.
pub fn global_rule(slot: u32, rank: u32) -> u32 {
    USER_BASE + slot * BLOCK + rank
}

/// The result of a successful change: the new state and what to print.
pub struct Change {
    /// The state to commit.
    pub next: State,
    /// Text for the client.
    pub output: String,
}

/// The queue memory a configuration's pipes may hold, in bytes: each
/// pipe's queue bound times the instances it may have. A pipe with a
/// mask has a queue per instance, and may have as many instances as its
/// mask tells keys apart, up to `16 × buckets` and the overflow instance
/// ([`FlowMask::instance_bound`](pipelab_engine::mask::FlowMask::instance_bound)):
/// `mask all buckets 65536 queue 60` may hold 1,048,577 queues of 60
/// slots.
pub fn queue_memory(cfg: &Config) -> u64 {
    cfg.pipes
        .values()
        .map(|p| {
            let one = match p.queue {
                Some(QueueLimit::Slots(n)) => u64::from(n) * SLOT_BYTES,
                Some(QueueLimit::Bytes(b)) => b,
                None => DEFAULT_QUEUE_SLOTS * SLOT_BYTES,
            };
            let instances = p.mask.as_ref().map_or(1, |m| {
                m.to_mask()
                    .instance_bound(p.buckets.unwrap_or(DEFAULT_BUCKETS))
            });
            one.saturating_mul(instances)
        })
        .fold(0u64, u64::saturating_add)
}

/// The errors of a request's script.
fn script_errors(errors: Vec<pipelab_lang::ScriptError>, script: &str) -> RequestError {
    RequestError::Script {
        errors,
        script: script.to_string(),
    }
}

fn parse_errors(errs: Vec<pipelab_lang::ParseError>, script: &str) -> RequestError {
    script_errors(
        errs.into_iter()
            .map(pipelab_lang::ScriptError::Parse)
            .collect(),
        script,
    )
}

/// Why a user may not give a command, if not.
fn user_refusal(cmd: &Command, uid: u32) -> Option<String> {
    let root_only = |what: &str| {
        Some(format!(
            "{what} are for root only (they reach beyond a user's block)"
        ))
    };
    match cmd {
        Command::SchedConfig { .. } | Command::SchedDelete { .. } => root_only("schedulers"),
        Command::QueueConfig { .. } | Command::QueueDelete { .. } => root_only("flow queues"),
        Command::TableAdd { .. }
        | Command::TableDelete { .. }
        | Command::TableFlush { .. }
        | Command::TableList { .. }
        | Command::TableCreate { .. }
        | Command::TableDestroy { .. } => root_only("lookup tables"),
        Command::SetOnePass(_) => root_only("'set one_pass' and other global switches"),
        Command::PipeConfig { id, spec } => {
            if *id > BLOCK {
                return Some(format!("pipe {id}: a user's pipes are numbered 1..{BLOCK}"));
            }
            if let Some((what, path)) = spec.files().first() {
                return Some(format!(
                    "pipe {id}: {what} file {path}: a user's pipes may not read files"
                ));
            }
            None
        }
        Command::Add(r) => {
            match r.action {
                Action::Skipto(_) | Action::SkiptoTablearg => {
                    return Some("skipto is for root only (it would leave the user's block)".into())
                }
                Action::Queue(_) => return root_only("flow queues"),
                Action::PipeTablearg => return root_only("lookup tables"),
                Action::Pipe(p) if p > BLOCK => {
                    return Some(format!("pipe {p}: a user's pipes are numbered 1..{BLOCK}"))
                }
                _ => {}
            }
            let table = |a: &AddrMatch| matches!(a, AddrMatch::Table { .. });
            if table(&r.src.addr) || table(&r.dst.addr) {
                return root_only("lookup tables");
            }
            for o in &r.options {
                match &o.kind {
                    OptionKind::SrcIp(a) | OptionKind::DstIp(a) if table(a) => {
                        return root_only("lookup tables")
                    }
                    OptionKind::Uid(UserMatch::Id(n)) if *n != uid => {
                        return Some(format!("uid {n}: a user's rules match only their own traffic (uid {uid})"))
                    }
                    OptionKind::Uid(UserMatch::Name(n)) => {
                        return Some(format!("uid {n}: give your uid as a number ({uid}); rules match only your own traffic anyway"))
                    }
                    _ => {}
                }
            }
            None
        }
        _ => None,
    }
}

/// Checks a root block's numbers stay below the users' blocks.
fn check_root_ranges(cfg: &Config) -> Result<(), RequestError> {
    if let Some((&number, _)) = cfg.pipes.range(USER_BASE..).next() {
        return Err(RequestError::RootRange {
            what: "pipe",
            number,
        });
    }
    if let Some((&number, _)) = cfg.rules.range(USER_BASE..).next() {
        return Err(RequestError::RootRange {
            what: "rule",
            number,
        });
    }
    if let Some((&number, _)) = cfg.scheds.range(USER_BASE..).next() {
        return Err(RequestError::RootRangeOther {
            what: "sched",
            number,
        });
    }
    if let Some((&number, _)) = cfg.queues.range(USER_BASE..).next() {
        return Err(RequestError::RootRangeOther {
            what: "queue",
            number,
        });
    }
    Ok(())
}

/// Whether a command only reads: `show`, `list`, `pipe show`, `table N
/// list`.
pub fn is_query(cmd: &Command) -> bool {
    matches!(
        cmd,
        Command::List | Command::Show | Command::PipeShow { .. } | Command::TableList { .. }
    )
}

impl State {
    /// The block a request acts on (a user without one gets an empty one).
    pub fn block(&self, t: Target) -> Block {
        match t {
            Target::Root | Target::Whole => self.root.clone(),
            Target::User(uid) => self
                .users
                .get(&uid)
                .map(|u| u.block.clone())
                .unwrap_or_default(),
        }
    }

    fn block_ref(&self, t: Target) -> Option<&Block> {
        match t {
            Target::Root | Target::Whole => Some(&self.root),
            Target::User(uid) => self.users.get(&uid).map(|u| &u.block),
        }
    }

    /// `t`'s configuration as a script (what `save` prints; a user's
    /// leaves out the global `set one_pass`).
    ///
    /// A block held at start-up ([`Held`]) comes first, as comments: why,
    /// then its script, each line after `#   `, to fix and `restore`.
    pub fn save(&self, t: Target) -> String {
        let text = self.block(t).cfg.to_script();
        let text: String = match t {
            Target::Root | Target::Whole => text,
            Target::User(_) => text
                .lines()
                .filter(|l| !l.starts_with("set one_pass"))
                .map(|l| format!("{l}\n"))
                .collect(),
        };
        match self.held.get(&owner_of(t)) {
            None => text,
            Some(h) => format!("{}{text}", held_comment(h)),
        }
    }

    /// The limits of a user.
    pub fn limits_of(&self, uid: u32) -> Limits {
        self.limits.get(&uid).copied().unwrap_or_default()
    }

    /// A copy of the state with `t`'s block replaced (allocating or
    /// freeing the user's slot), checked against ranges and limits.
    pub fn with_block(&self, t: Target, block: Block) -> Result<State, RequestError> {
        let mut next = self.clone();
        match t {
            Target::Root => {
                check_root_ranges(&block.cfg)?;
                next.root = block;
            }
            Target::Whole => next.root = block,
            Target::User(uid) => {
                let lim = self.limits_of(uid);
                for (what, count, limit) in [
                    ("pipes", block.cfg.pipes.len(), lim.pipes.min(BLOCK)),
                    ("rules", block.cfg.rules.len(), lim.rules.min(BLOCK)),
                ] {
                    let count = count as u64;
                    if count > u64::from(limit) {
                        return Err(RequestError::LimitExceeded {
                            what,
                            count,
                            uid,
                            limit,
                        });
                    }
                }
                let bytes = queue_memory(&block.cfg);
                if bytes > lim.memory {
                    return Err(RequestError::MemoryExceeded {
                        bytes,
                        uid,
                        limit: lim.memory,
                    });
                }
                if block.is_empty() {
                    next.users.remove(&uid);
                } else if let Some(u) = next.users.get_mut(&uid) {
                    u.block = block;
                } else {
                    let used: std::collections::BTreeSet<u32> =
                        self.users.values().map(|u| u.slot).collect();
                    let slot = (0..MAX_SLOTS)
                        .find(|s| !used.contains(s))
                        .ok_or(RequestError::NoFreeBlock)?;
                    next.users.insert(uid, UserBlock { slot, block });
                }
            }
        }
        Ok(next)
    }

    /// Executes commands of the language for `t`, all or nothing. A single
    /// query answers with its listing and changes nothing.
    pub fn exec(&self, t: Target, script: &str) -> Result<Change, RequestError> {
        let hidden = pipelab_lang::source::check_text(script);
        if !hidden.is_empty() {
            return Err(parse_errors(hidden, script));
        }
        let cmds = parse_script(script).map_err(|e| parse_errors(e, script))?;
        let current = self.block(t);
        if let [one] = cmds.as_slice() {
            if is_query(&one.node) {
                let mut scratch = current.cfg.clone();
                let out = match scratch.apply(&one.node) {
                    Ok(Outcome::Listing(s)) => s,
                    Ok(_) => String::new(),
                    Err(e) => return Err(RequestError::Query(e)),
                };
                return Ok(Change {
                    next: self.clone(),
                    output: out,
                });
            }
        }
        if let Target::User(uid) = t {
            let mut errs = Vec::new();
            for c in &cmds {
                if let Some(why) = user_refusal(&c.node, uid) {
                    errs.push(pipelab_lang::ParseError::new(
                        c.line, c.column, "", why, None,
                    ));
                }
            }
            if !errs.is_empty() {
                return Err(parse_errors(errs, script));
            }
        }
        let mut block = current.clone();
        block
            .cfg
            .apply_script(script)
            .map_err(|e| script_errors(e, script))?;
        // Rules added: print them as ipfw does (a rule sharing a number
        // comes after those that had it).
        let mut output = String::new();
        let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
        for (n, r) in &block.cfg.rules {
            let k = seen.entry(*n).or_insert(0);
            *k += 1;
            if *k > current.cfg.rules.numbered(n).len() {
                let mut r = r.clone();
                r.number = None;
                output.push_str(&format!("{n:05} {r}\n"));
            }
        }
        let next = self.with_block(t, block)?;
        Ok(Change { next, output })
    }

    /// Replaces `t`'s configuration with `script` (all or nothing);
    /// `netconfig` links are forgotten.
    pub fn restore(&self, t: Target, script: &str) -> Result<Change, RequestError> {
        let empty = State {
            limits: self.limits.clone(),
            ..State::default()
        };
        // Check the script as the caller would give it, on an empty block.
        let checked = empty.exec(t, script)?;
        let block = checked.next.block(t);
        let mut next = self.with_block(t, block)?;
        // The owner replaced their configuration: a held block is done.
        next.held.remove(&owner_of(t));
        Ok(Change {
            next,
            output: String::new(),
        })
    }

    /// `netconfig ...` for `t`.
    pub fn netconfig(&self, t: Target, args: &str, dry_run: bool) -> Result<Change, RequestError> {
        let cmd = parse_netconfig(args).map_err(|error| RequestError::Netconfig {
            error,
            args: args.to_string(),
        })?;
        let current = self.block(t);
        match cmd {
            NetCommand::List => {
                let mut out = String::new();
                for e in current.net.values() {
                    out.push_str(&format!(
                        "netconfig {}    # pipes {} rules {}\n",
                        e.command,
                        join(&e.pipes),
                        join(&e.rules)
                    ));
                }
                Ok(Change {
                    next: self.clone(),
                    output: out,
                })
            }
            NetCommand::Delete(sel) => {
                let key = sel.to_string();
                let Some(entry) = current.net.get(&key) else {
                    return Err(RequestError::NoLink(key));
                };
                let mut script = String::new();
                let rules: Vec<u32> = entry
                    .rules
                    .iter()
                    .copied()
                    .filter(|r| current.cfg.rules.contains_key(r))
                    .collect();
                if !rules.is_empty() {
                    script.push_str(&format!("delete {}\n", join_sp(&rules)));
                }
                for p in &entry.pipes {
                    if current.cfg.pipes.contains_key(p) {
                        script.push_str(&format!("pipe {p} delete\n"));
                    }
                }
                self.net_apply(t, &key, None, &script, dry_run)
            }
            NetCommand::Config(spec) => self.net_config(t, &current, &spec, dry_run),
        }
    }

    fn net_config(
        &self,
        t: Target,
        current: &Block,
        spec: &NetSpec,
        dry_run: bool,
    ) -> Result<Change, RequestError> {
        let key = spec.key();
        let old = current.net.get(&key);
        let mut script = String::new();
        // Reuse the link's pipes (so queued packets stay) and rules.
        let mut pipes: Vec<u32> = old.map(|e| e.pipes.clone()).unwrap_or_default();
        let mut rules: Vec<u32> = Vec::new();
        if let Some(e) = old {
            let existing: Vec<u32> = e
                .rules
                .iter()
                .copied()
                .filter(|r| current.cfg.rules.contains_key(r))
                .collect();
            if !existing.is_empty() {
                script.push_str(&format!("delete {}\n", join_sp(&existing)));
            }
            rules = e.rules.clone();
        }
        let taken_pipes: std::collections::BTreeSet<u32> = current
            .cfg
            .pipes
            .keys()
            .copied()
            .chain(current.net.values().flat_map(|e| e.pipes.iter().copied()))
            .collect();
        // A link that shrank (IN/OUT to SHARED) deletes its extra pipe
        // after its rules are gone.
        let mut drops = Vec::new();
        while pipes.len() > spec.pipes_needed() {
            drops.extend(pipes.pop());
        }
        let first_pipe = match t {
            Target::Root | Target::Whole => ROOT_NETCONFIG_PIPE,
            Target::User(_) => 1,
        };
        let mut cand = first_pipe;
        while pipes.len() < spec.pipes_needed() {
            while taken_pipes.contains(&cand) || pipes.contains(&cand) {
                cand += 1;
            }
            pipes.push(cand);
            cand += 1;
        }
        if rules.len() != spec.rules_needed() {
            let taken: std::collections::BTreeSet<u32> = current
                .cfg
                .rules
                .keys()
                .copied()
                .chain(current.net.values().flat_map(|e| e.rules.iter().copied()))
                .filter(|r| !rules.contains(r))
                .collect();
            let need = spec.rules_needed() as u32;
            let mut base = NETCONFIG_RULE;
            while (base..base + need).any(|r| taken.contains(&r)) {
                base += 10;
            }
            rules = (base..base + need).collect();
        }
        // A user's `uid` is added when the block is merged.
        let cmds = spec
            .translate(&pipes, &rules, &[])
            .ok_or(RequestError::Numbering)?;
        let mut full = script;
        for c in &cmds {
            full.push_str(&format!("{c}\n"));
        }
        for p in drops {
            full.push_str(&format!("pipe {p} delete\n"));
        }
        let entry = NetEntry {
            command: spec.to_string(),
            pipes,
            rules,
        };
        self.net_apply(t, &key, Some(entry), &full, dry_run)
    }

    fn net_apply(
        &self,
        t: Target,
        key: &str,
        entry: Option<NetEntry>,
        script: &str,
        dry_run: bool,
    ) -> Result<Change, RequestError> {
        let applied = self.exec(t, script)?;
        let mut block = applied.next.block(t);
        match entry {
            Some(e) => {
                block.net.insert(key.to_string(), e);
            }
            None => {
                block.net.remove(key);
            }
        }
        let next = self.with_block(t, block)?;
        // What the link amounts to, as the plane sees it (Fig. 5).
        let output = if dry_run {
            let mut out = String::new();
            for line in script.lines() {
                out.push_str(&format!("{line}\n"));
            }
            if let Target::User(uid) = t {
                let merged = next.merged();
                out.push_str(&format!(
                    "# as run (global numbers, confined to uid {uid}):\n"
                ));
                out.push_str(&merged_lines_for(&next, uid, &merged));
            }
            out
        } else {
            String::new()
        };
        Ok(Change {
            next: if dry_run { self.clone() } else { next },
            output,
        })
    }

    /// The configuration the data plane runs: root's block, then every
    /// user's block mapped to global numbers and confined to its uid.
    pub fn merged(&self) -> Config {
        let mut g = self.root.cfg.clone();
        for (&uid, ub) in &self.users {
            for (&p, spec) in &ub.block.cfg.pipes {
                g.pipes.insert(global_pipe(ub.slot, p), spec.clone());
            }
            for (rank, rule) in ub.block.cfg.rules.values().enumerate() {
                let n = global_rule(ub.slot, rank as u32);
                let mut r = rule.clone();
                r.number = Some(n);
                if let Action::Pipe(p) = r.action {
                    r.action = Action::Pipe(global_pipe(ub.slot, p));
                }
                r.options
                    .push(RuleOption::new(OptionKind::Uid(UserMatch::Id(uid))));
                g.rules.insert(n, r);
            }
        }
        g
    }

    /// Parses `limit` arguments: `user NAME [pipes N] [rules N] [memory
    /// SIZE]` or `list`. `resolve` turns a user name into a uid.
    pub fn limit(
        &self,
        args: &str,
        resolve: &dyn Fn(&str) -> Result<u32, RequestError>,
    ) -> Result<Change, RequestError> {
        let w: Vec<&str> = args.split_whitespace().collect();
        match w.as_slice() {
            ["list"] | [] => {
                let mut out = format!(
                    "default: pipes {} rules {} memory {}\n",
                    Limits::default().pipes,
                    Limits::default().rules,
                    pipelab_lang::units::format_size(Limits::default().memory)
                );
                for (uid, l) in &self.limits {
                    out.push_str(&format!(
                        "uid {uid}: pipes {} rules {} memory {}\n",
                        l.pipes,
                        l.rules,
                        pipelab_lang::units::format_size(l.memory)
                    ));
                }
                Ok(Change {
                    next: self.clone(),
                    output: out,
                })
            }
            ["user", name, rest @ ..] => {
                let uid = resolve(name)?;
                if uid == 0 {
                    return Err(LimitError::Root.into());
                }
                if rest.is_empty() {
                    return Err(LimitError::Nothing.into());
                }
                let mut l = self.limits_of(uid);
                let mut it = rest.iter();
                while let Some(&k) = it.next() {
                    let Some(&v) = it.next() else {
                        return Err(LimitError::NoValue(k.to_string()).into());
                    };
                    match k {
                        "pipes" | "rules" => {
                            let n: u32 = v.parse().map_err(|_| LimitError::NotANumber {
                                what: k.to_string(),
                                value: v.to_string(),
                            })?;
                            if n > BLOCK {
                                return Err(LimitError::OverBlock {
                                    what: k.to_string(),
                                    count: n,
                                }
                                .into());
                            }
                            if k == "pipes" {
                                l.pipes = n;
                            } else {
                                l.rules = n;
                            }
                        }
                        "memory" => {
                            l.memory = pipelab_lang::units::parse_size(v).map_err(|error| {
                                LimitError::Memory {
                                    value: v.to_string(),
                                    error,
                                }
                            })?;
                        }
                        other => return Err(LimitError::Unknown(other.to_string()).into()),
                    }
                }
                let mut next = self.clone();
                next.limits.insert(uid, l);
                Ok(Change {
                    next,
                    output: format!(
                        "uid {uid}: pipes {} rules {} memory {}\n",
                        l.pipes,
                        l.rules,
                        pipelab_lang::units::format_size(l.memory)
                    ),
                })
            }
            _ => Err(LimitError::Usage.into()),
        }
    }

    /// Counts of the caller's block (for `stats`).
    pub fn summary(&self, t: Target) -> serde_json::Value {
        let b = self.block_ref(t);
        let count = |f: fn(&Block) -> usize| b.map(f).unwrap_or(0);
        let mut v = serde_json::json!({
            "pipes": count(|b| b.cfg.pipes.len()),
            "rules": count(|b| b.cfg.rules.len()),
            "netconfig_links": count(|b| b.net.len()),
            "queue_memory_bytes": b.map(|b| queue_memory(&b.cfg)).unwrap_or(0),
        });
        match t {
            Target::Root => {
                v["users"] = serde_json::Value::from(self.users.len());
                let merged = self.merged();
                v["total_pipes"] = serde_json::Value::from(merged.pipes.len());
                v["total_rules"] = serde_json::Value::from(merged.rules.len());
            }
            Target::User(uid) => {
                v["limits"] = serde_json::to_value(self.limits_of(uid)).unwrap_or_default();
                if let Some(u) = self.users.get(&uid) {
                    v["slot"] = serde_json::Value::from(u.slot);
                }
            }
            Target::Whole => {}
        }
        if let Some(h) = self.held.get(&owner_of(t)) {
            v["held"] = serde_json::json!({ "why": h.why, "script": h.script });
        }
        v
    }

    /// For a user's stats: the global numbers of the user's pipes and rules
    /// (global → own).
    pub fn user_numbers(&self, uid: u32) -> (BTreeMap<u32, u32>, BTreeMap<u32, u32>) {
        let mut pipes = BTreeMap::new();
        let mut rules = BTreeMap::new();
        if let Some(ub) = self.users.get(&uid) {
            for &p in ub.block.cfg.pipes.keys() {
                pipes.insert(global_pipe(ub.slot, p), p);
            }
            for (rank, &r) in ub.block.cfg.rules.keys().enumerate() {
                rules.insert(global_rule(ub.slot, rank as u32), r);
            }
        }
        (pipes, rules)
    }
}

fn merged_lines_for(state: &State, uid: u32, merged: &Config) -> String {
    let (pipes, rules) = state.user_numbers(uid);
    let mut out = String::new();
    for g in pipes.keys() {
        if let Some(spec) = merged.pipes.get(g) {
            out.push_str(&format!(
                "{}\n",
                Command::PipeConfig {
                    id: *g,
                    spec: spec.clone()
                }
            ));
        }
    }
    for g in rules.keys() {
        if let Some(r) = merged.rules.get(g) {
            out.push_str(&format!("{}\n", Command::Add(r.clone())));
        }
    }
    out
}

fn join(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

fn join_sp(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &State, t: Target, script: &str) -> State {
        match s.exec(t, script) {
            Ok(c) => c.next,
            Err(e) => panic!("{script}: {e}"),
        }
    }

    #[test]
    fn users_have_their_own_numbers_confined_to_their_uid() {
        let s = State::default();
        let s = ok(
            &s,
            Target::Root,
            "pipe 1 config bw 1Mbit/s\nadd 100 pipe 1 ip from any to any",
        );
        let s = ok(
            &s,
            Target::User(1001),
            "pipe 1 config delay 10ms\nadd 100 pipe 1 ip from any to any dst-port 5000",
        );
        let s = ok(
            &s,
            Target::User(1002),
            "pipe 1 config delay 20ms\nadd 100 pipe 1 ip from any to any dst-port 5000",
        );
        let m = s.merged();
        assert_eq!(
            m.to_script(),
            "set one_pass 1\n\
             pipe 1 config bw 1Mbit/s\n\
             pipe 32768 config delay 10ms\n\
             pipe 32832 config delay 20ms\n\
             add 100 pipe 1 ip from any to any\n\
             add 32768 pipe 32768 ip from any to any dst-port 5000 uid 1001\n\
             add 32832 pipe 32832 ip from any to any dst-port 5000 uid 1002\n"
        );
        // Each sees only their own block, in their own numbers.
        let show = s.exec(Target::User(1002), "show").unwrap().output;
        assert_eq!(
            show,
            "00100 pipe 1 ip from any to any dst-port 5000\n65535 allow ip from any to any\n"
        );
        // Deleting a rule the user does not have is refused.
        let e = s
            .exec(Target::User(1001), "delete 200")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("rule 200 does not exist"), "{e}");
        // An emptied block frees its slot.
        let s = ok(&s, Target::User(1001), "delete 100\npipe 1 delete");
        assert!(!s.users.contains_key(&1001));
        assert_eq!(s.users[&1002].slot, 1);
        let s = ok(&s, Target::User(1003), "pipe 2 config");
        assert_eq!(s.users[&1003].slot, 0);
    }

    #[test]
    fn user_refusals_and_root_ranges() {
        let s = State::default();
        for (script, want) in [
            ("pipe 65 config", "numbered 1..64"),
            ("add 10 skipto 20", "skipto is for root only"),
            ("table 1 add 10.0.0.0/8", "lookup tables are for root only"),
            ("set one_pass 0", "for root only"),
            (
                "pipe 1 config\nadd pipe 1 uid 0",
                "uid 0: a user's rules match only their own",
            ),
            (
                "pipe 1 config delay 1ms distribution file:/etc/shadow",
                "may not read files",
            ),
            ("sched 1 config type fifo", "schedulers are for root only"),
        ] {
            let e = s
                .exec(Target::User(1001), script)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains(want), "{script}: {e}");
        }
        let e = s
            .exec(Target::Root, "pipe 40000 config")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("belong to users' blocks"), "{e}");
        // An emulation without users' blocks has every number.
        let w = ok(&s, Target::Whole, "pipe 40000 config\nadd 60000 pipe 40000");
        assert_eq!(
            w.save(Target::Whole),
            "set one_pass 1\npipe 40000 config\nadd 60000 pipe 40000 ip from any to any\n"
        );
        assert_eq!(w.merged(), w.root.cfg);
    }

    #[test]
    fn limits_are_enforced() {
        let s = State::default();
        let s = s
            .limit("user 1001 pipes 2 rules 1 memory 100KB", &|n| {
                n.parse()
                    .map_err(|_| RequestError::NoSuchUser(n.to_string()))
            })
            .unwrap()
            .next;
        let e = s
            .exec(
                Target::User(1001),
                "pipe 1 config\npipe 2 config\npipe 3 config",
            )
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("limit exceeded: 3 pipes, the limit of uid 1001 is 2"),
            "{e}"
        );
        let e = s
            .exec(Target::User(1001), "pipe 1 config queue 100")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("may hold 151400 bytes"), "{e}");
        let e = s
            .exec(Target::User(1001), "pipe 1 config\nadd pipe 1\nadd pipe 1")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("2 rules"), "{e}");
        assert!(s
            .exec(Target::User(1001), "pipe 1 config queue 50KB\nadd pipe 1")
            .is_ok());
        // A mask has a queue per instance: `mask all buckets 65536`
        // may hold 1,048,577 of them (16 per bucket, and the overflow).
        let e = s
            .exec(
                Target::User(1001),
                "pipe 1 config mask all buckets 65536 queue 60",
            )
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("may hold 95252734680 bytes"), "{e}");
        // A mask of one bit has at most two instances per family.
        let e = s
            .exec(Target::User(1001), "pipe 1 config mask dst-port 1 queue 20")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("may hold 121120 bytes"), "{e}");
        assert!(s
            .exec(Target::User(1001), "pipe 1 config mask dst-port 1 queue 16")
            .is_ok());
        let e = s.limit("user 1001 pipes 65", &|_| Ok(1001)).err().unwrap();
        assert!(
            matches!(
                e,
                RequestError::Limit(LimitError::OverBlock { count: 65, .. })
            ),
            "{e}"
        );
        let e = e.to_string();
        assert!(e.contains("more than a user's block holds"), "{e}");
    }

    #[test]
    fn netconfig_creates_reconfigures_and_deletes() {
        let s = State::default();
        let args = "client 80,443@10.21.0.0/24 IN bw 512kbit/s delay 8ms OUT bw 10Mbit/s delay 3ms";
        let dry = s.netconfig(Target::Root, args, true).unwrap();
        assert_eq!(dry.next, s, "a dry run changes nothing");
        assert_eq!(
            dry.output,
            "pipe 10000 config bw 512Kbit/s delay 8ms\n\
             pipe 10001 config bw 10Mbit/s delay 3ms\n\
             add 10000 pipe 10000 ip from any to any in src-ip 10.21.0.0/24 src-port 80,443\n\
             add 10001 pipe 10001 ip from any to any out dst-ip 10.21.0.0/24 dst-port 80,443\n"
        );
        let s = s.netconfig(Target::Root, args, false).unwrap().next;
        assert_eq!(s.root.cfg.pipes.len(), 2);
        // Same selector: reconfigured in place, same numbers.
        let s = s
            .netconfig(
                Target::Root,
                "client 80,443@10.21.0.0/24 SHARED bw 1Mbit/s",
                false,
            )
            .unwrap()
            .next;
        assert_eq!(
            s.root.cfg.pipes.keys().copied().collect::<Vec<_>>(),
            vec![10000]
        );
        assert_eq!(
            s.root.cfg.rules.keys().copied().collect::<Vec<_>>(),
            vec![10000, 10001]
        );
        let list = s.netconfig(Target::Root, "list", false).unwrap().output;
        assert_eq!(list, "netconfig client 80,443@10.21.0.0/24 SHARED bw 1Mbit/s    # pipes 10000 rules 10000,10001\n");
        // A user's link: own numbers, confined to the uid when run.
        let u = s
            .netconfig(
                Target::User(1001),
                "server 8080 IN delay 5ms OUT delay 5ms",
                true,
            )
            .unwrap();
        assert!(
            u.output
                .contains("add 32768 pipe 32768 ip from any to any in dst-port 8080 uid 1001"),
            "{}",
            u.output
        );
        let s = s
            .netconfig(Target::Root, "delete client 80,443@10.21.0.0/24", false)
            .unwrap()
            .next;
        assert!(s.root.is_empty());
        let e = s
            .netconfig(Target::Root, "delete client 80,443@10.21.0.0/24", false)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("no link client 80,443@10.21.0.0/24"), "{e}");
    }

    #[test]
    fn restore_replaces_and_query_changes_nothing() {
        let s = ok(
            &State::default(),
            Target::User(7),
            "pipe 1 config\nadd 5 pipe 1",
        );
        let saved = s.save(Target::User(7));
        assert_eq!(saved, "pipe 1 config\nadd 5 pipe 1 ip from any to any\n");
        let s2 = s
            .restore(Target::User(7), "pipe 2 config delay 1ms")
            .unwrap()
            .next;
        assert_eq!(s2.block(Target::User(7)).cfg.pipes.len(), 1);
        let s3 = s2.restore(Target::User(7), &saved).unwrap().next;
        assert_eq!(s3, s);
        let q = s3.exec(Target::User(7), "pipe show").unwrap();
        assert_eq!(q.next, s3);
        assert_eq!(q.output, "pipe 1 config\n");
    }
}

#[cfg(test)]
mod fuzz {
    use super::*;

    proptest::proptest! {
        /// Random text as commands, netconfig or limits never panics, and a
        /// refused request leaves the state as it was.
        #[test]
        fn random_commands_never_panic(text in "[ -~\n]{0,80}", words in proptest::collection::vec("(pipe|add|delete|config|bw|delay|queue|[0-9]{1,12}|1Mbit/s|10ms|-5ms|ip|from|to|any|uid|table|skipto|show|flush|IN|OUT|SHARED|client|80,443@10.0.0.0/8|@|,)", 0..12)) {
            let s = State::default()
                .exec(Target::Root, "pipe 1 config\nadd 100 pipe 1")
                .unwrap()
                .next;
            let joined = words.join(" ");
            for t in [Target::Root, Target::User(1000)] {
                for input in [text.as_str(), joined.as_str()] {
                    match s.exec(t, input) {
                        Ok(_) => {}
                        Err(e) => proptest::prop_assert!(!e.to_string().is_empty()),
                    }
                    let _ = s.netconfig(t, input, true);
                    let _ = s.limit(input, &|_| Ok(1000));
                }
            }
        }
    }
}
