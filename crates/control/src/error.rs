//! Why a request is refused, typed.
//!
//! [`RequestError`] is every refusal a client can get: the text of a
//! [`crate::Response`]'s `error` is its `Display`, and nothing else (no
//! `Debug`) reaches a user. Each variant carries what its message names
//! (numbers, names, paths, the script and its errors), so a caller in
//! Rust can tell refusals apart without reading the text.

use std::time::Duration;

use pipelab_lang::{ApplyError, ParseError, ScriptError};

use crate::journal::JournalError;
use crate::plane::PlaneError;
use crate::protocol::ProtocolError;
use crate::server::{describe_duration, describe_uid};
use crate::state::{BLOCK, MAX_SLOTS, SLOT_BYTES, USER_BASE};

/// Why a request was refused; nothing was applied.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The request line is not a request.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// The script has errors: each rendered at its position (the first
    /// [`pipelab_lang::MAX_RENDERED_ERRORS`] in full, then a count).
    #[error("{}", render_script(errors, script))]
    Script {
        /// The errors.
        errors: Vec<ScriptError>,
        /// The script, for the lines the errors show.
        script: String,
    },
    /// A query (`show`, `pipe show`, ...) cannot run.
    #[error("error: {0}")]
    Query(ApplyError),
    /// The words of a `netconfig` request do not parse.
    #[error("{}nothing was applied", error.render("netconfig", args))]
    Netconfig {
        /// The error, at its column.
        error: ParseError,
        /// The words.
        args: String,
    },
    /// `netconfig delete` of a link that does not exist.
    #[error("netconfig: no link {0} (see netconfig list)")]
    NoLink(String),
    /// `netconfig` could not number a link (a bug).
    #[error("netconfig: internal numbering error")]
    Numbering,
    /// Root's pipe or rule numbered in the users' blocks.
    #[error(
        "{what} {number}: {what} numbers from {USER_BASE} on belong to users' blocks (root uses 1..{})",
        USER_BASE - 1
    )]
    RootRange {
        /// `pipe` or `rule`.
        what: &'static str,
        /// Its number.
        number: u32,
    },
    /// Root's scheduler or flow queue numbered in the users' blocks.
    #[error("{what} {number}: numbers from {USER_BASE} on belong to users' blocks")]
    RootRangeOther {
        /// `sched` or `queue`.
        what: &'static str,
        /// Its number.
        number: u32,
    },
    /// A user's block would hold more pipes or rules than their limit.
    #[error("limit exceeded: {count} {what}, the limit of uid {uid} is {limit}")]
    LimitExceeded {
        /// `pipes` or `rules`.
        what: &'static str,
        /// How many the block would hold.
        count: u64,
        /// The user.
        uid: u32,
        /// Their limit.
        limit: u32,
    },
    /// A user's pipes' queues would hold more than their memory limit.
    #[error(
        "limit exceeded: the pipes' queues may hold {bytes} bytes, the limit of uid {uid} is {limit} bytes (a queue of N slots counts {SLOT_BYTES} bytes per slot, and a pipe with a mask one queue per instance it may hold: up to 16 × buckets)"
    )]
    MemoryExceeded {
        /// What the queues may hold, in bytes.
        bytes: u64,
        /// The user.
        uid: u32,
        /// Their limit, in bytes.
        limit: u64,
    },
    /// Every user block is taken.
    #[error("all {MAX_SLOTS} user blocks are in use")]
    NoFreeBlock,
    /// A `limit` request is refused.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// A user name that names no user.
    #[error("no user named '{0}'")]
    NoSuchUser(String),
    /// The user database could not be read.
    #[error("cannot look up user '{name}': {errno}")]
    UserLookup {
        /// The name.
        name: String,
        /// Why.
        errno: nix::errno::Errno,
    },
    /// `--user` from someone who is not root.
    #[error("only root may act in another user's block")]
    NotYourBlock,
    /// `--user` on an emulation without users' blocks.
    #[error("emulation {0} has no users' blocks (--user is for pipelabd)")]
    NoBlocks(String),
    /// `limit` on an emulation without users' blocks.
    #[error("emulation {0} has no users' blocks: limits are pipelabd's")]
    NoLimits(String),
    /// `limit` from someone who is not root.
    #[error("only root may set limits")]
    LimitsForRoot,
    /// A change by someone who may only read.
    #[error(
        "emulation {emulation} belongs to {}: only its owner or root may change it",
        describe_uid(*owner)
    )]
    ReadOnly {
        /// The emulation.
        emulation: String,
        /// Its owner's uid.
        owner: u32,
    },
    /// A pipe that reads a file, new or changed by someone other than
    /// root.
    #[error("pipe {pipe}: {what} file {path}: only root may have an emulation read files")]
    FilesForRoot {
        /// The pipe.
        pipe: u32,
        /// What the file is (`distribution`, `loss trace`, ...).
        what: String,
        /// The path as written.
        path: String,
    },
    /// One of a plane's own commands that reads a file, sent by someone
    /// other than root (`link A B set profile FILE`).
    #[error("line {line}: {what} file {path}: only root may have an emulation read files")]
    PlaneFilesForRoot {
        /// The request's line.
        line: usize,
        /// What the file is (`profile`, `bw`, ...).
        what: String,
        /// The path as written.
        path: String,
    },
    /// A request mixing commands of the language and the plane's own.
    #[error(
        "a request is all commands of the language or all of the emulation's own commands, not both: {}, but {}; send them apart (nothing was applied)",
        mixed_first(*language, language_text, *own, own_text, mode),
        mixed_other(*language, language_text, *own, own_text, mode)
    )]
    Mixed {
        /// The plane's mode.
        mode: &'static str,
        /// The first line of the language.
        language: usize,
        /// Its text.
        language_text: String,
        /// The first line of the plane's own.
        own: usize,
        /// Its text.
        own_text: String,
    },
    /// Lines of the plane's own that cannot run.
    #[error("{}\nnothing was applied", join_lines(.0))]
    PlaneLines(Vec<PlaneLineError>),
    /// A plane's own command that changes the emulation, from a user's
    /// block.
    #[error("only root may run the {0} plane's own commands")]
    PlaneCommandsForRoot(&'static str),
    /// A plane's own command failed (the lines before it ran).
    #[error("{line}{}", ran_before(*ran))]
    PlaneCommand {
        /// The line and why.
        line: PlaneLineError,
        /// How many lines before it ran.
        ran: usize,
    },
    /// The plane did not take a line it had claimed.
    #[error("line {number} (`{text}`): the {mode} plane did not take it{}", ran_before(*ran))]
    PlaneDidNotTake {
        /// The line's number.
        number: usize,
        /// Its text.
        text: String,
        /// The plane's mode.
        mode: &'static str,
        /// How many lines before it ran.
        ran: usize,
    },
    /// The data plane refused the configuration.
    #[error("the data plane refused the change: {0}")]
    PlaneRefused(PlaneError),
    /// The plane refused to commit a change already journaled, and the
    /// journal could not be put back: it holds the refused change.
    #[error(
        "the data plane refused the change: {plane}; the journal could not be put back ({journal}): it holds the refused change until the next change is journaled"
    )]
    JournalAhead {
        /// Why the plane refused.
        plane: PlaneError,
        /// Why the journal could not be put back.
        journal: JournalError,
    },
    /// The change could not be journaled.
    #[error("{0}; nothing was applied")]
    Journal(JournalError),
    /// The emulation is stopping.
    #[error("emulation {0} is stopping")]
    Stopping(String),
    /// The connection gave up on the request (never sent: the connection
    /// answered already).
    #[error("the request was given up; nothing was applied")]
    GaveUp,
    /// The request took longer than its time cap.
    #[error(
        "the request took longer than the limit of {}; nothing was applied",
        describe_duration(*limit)
    )]
    TimedOut {
        /// The cap.
        limit: Duration,
    },
    /// The request's thread could not be started.
    #[error("cannot start a thread for the request: {0}")]
    Thread(std::io::Error),
    /// The request's work ended without an answer (it panicked).
    #[error("the request failed inside the emulation; nothing was applied")]
    Failed,
}

/// Why a `limit` request is refused.
#[derive(Debug, thiserror::Error)]
pub enum LimitError {
    /// Root is not limited.
    #[error("limit: root has no limits")]
    Root,
    /// `limit user NAME` and nothing to set.
    #[error("limit user NAME needs pipes N, rules N or memory SIZE")]
    Nothing,
    /// A limit's name without its value.
    #[error("limit: '{0}' needs a value")]
    NoValue(String),
    /// A count that is not a number.
    #[error("limit: {what} '{value}' is not a number 0..{BLOCK}")]
    NotANumber {
        /// `pipes` or `rules`.
        what: String,
        /// The value given.
        value: String,
    },
    /// A count over a block's size.
    #[error("limit: {what} {count} is more than a user's block holds ({BLOCK})")]
    OverBlock {
        /// `pipes` or `rules`.
        what: String,
        /// The count given.
        count: u32,
    },
    /// A memory size the unit layer refuses.
    #[error("limit: memory '{value}': {error}")]
    Memory {
        /// The value given.
        value: String,
        /// Why.
        error: pipelab_lang::UnitError,
    },
    /// A limit that does not exist.
    #[error("limit: unknown limit '{0}': expected pipes, rules or memory")]
    Unknown(String),
    /// Not `limit user ...` nor `limit list`.
    #[error("usage: limit user NAME [pipes N] [rules N] [memory SIZE] | limit list")]
    Usage,
}

/// One line of a plane's own commands and why it cannot run.
#[derive(Debug, thiserror::Error)]
#[error("line {number} (`{text}`): {error}")]
pub struct PlaneLineError {
    /// The line's number in the request, from 1.
    pub number: usize,
    /// Its text, without its comment.
    pub text: String,
    /// Why (the plane's own error).
    pub error: PlaneError,
}

fn render_script(errors: &[ScriptError], script: &str) -> String {
    let mut msg = pipelab_lang::render_errors(errors, "command", script);
    msg.push_str(&format!(
        "{} error{}; nothing was applied",
        errors.len(),
        if errors.len() == 1 { "" } else { "s" }
    ));
    msg
}

fn language_line(n: usize, text: &str) -> String {
    format!("line {n} is a command of the language (`{text}`)")
}

fn own_line(n: usize, text: &str, mode: &str) -> String {
    format!("line {n} is one of {mode}'s own commands (`{text}`)")
}

fn mixed_first(lang: usize, lang_text: &str, own: usize, own_text: &str, mode: &str) -> String {
    if lang < own {
        language_line(lang, lang_text)
    } else {
        own_line(own, own_text, mode)
    }
}

fn mixed_other(lang: usize, lang_text: &str, own: usize, own_text: &str, mode: &str) -> String {
    if lang < own {
        own_line(own, own_text, mode)
    } else {
        language_line(lang, lang_text)
    }
}

fn join_lines(lines: &[PlaneLineError]) -> String {
    lines
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

fn ran_before(i: usize) -> String {
    match i {
        0 => String::new(),
        1 => " (the 1 line before it ran)".to_string(),
        n => format!(" (the {n} lines before it ran)"),
    }
}

impl From<RequestError> for crate::Response {
    fn from(e: RequestError) -> crate::Response {
        crate::Response::err(e.to_string())
    }
}
