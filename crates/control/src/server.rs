//! The control server of one emulation, and its sockets.
//!
//! One code path serves pipelabd and every live emulation: a [`Server`]
//! holds the committed state, the data plane and (if the emulation is
//! persistent) the journal under one lock, so requests are serialized:
//! each sees the effect of all before it. A change is computed on a copy,
//! applied to the plane, journaled, then committed; if the journal cannot
//! be written the plane gets the previous configuration back and the
//! request fails. Nothing changes on any error.
//!
//! A change is computed on a snapshot of the state *outside* the lock
//! (parsing, checking, and rendering the errors of a script of 40,000 bad
//! lines take no lock), then committed under it if the state is still the
//! snapshot (else computed again on the new state). The lock is held only
//! to apply, journal and commit a change, and for the commands of a
//! plane's own.
//!
//! A [`ServerHandle`] serves the server's sockets, one thread per
//! connection. The caller is identified by `SO_PEERCRED` (the kernel's
//! word, not the client's); what it may do is the server's [`Access`]
//! policy.
//!
//! # Limits
//!
//! The socket is open to every member of the `pipelab` group, so no
//! member may lock the others, or root, out. [`Limits::default`]:
//!
//! | limit | default | when it is reached |
//! |---|---|---|
//! | connections in all | [`MAX_CONNECTIONS`] (256) | a new one is answered with an error and closed |
//! | of those, kept for root | [`ROOT_RESERVED`] (16) | users are refused at 240; root still connects |
//! | connections of one user (not root) | [`PER_USER_CONNECTIONS`] (16) | the 17th is answered with an error naming the limit, and closed |
//! | idle time between requests | [`IDLE_TIMEOUT`] (60 s) | the connection is closed (no answer: none was asked for) |
//! | time to send one request line, from its first byte | [`READ_TIMEOUT`] (10 s) | an error, and the connection is closed |
//! | length of a request line | [`MAX_REQUEST`] (4 MiB) | an error, and the connection is closed |
//! | time to answer a request | [`REQUEST_TIMEOUT`] (10 s) | an error (nothing was applied); the connection takes its next request once the work is dropped |
//! | time to write an answer to a client that does not read | [`WRITE_TIMEOUT`] (10 s) | the connection is closed |
//!
//! A request that runs out of time is never half applied: its work goes on
//! on a thread of its own and is dropped before it could commit (a
//! commit already under way is waited for and answered). A connection has
//! one request under way at a time, so a user has at most 16.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
use pipelab_lang::{parse_script, Config};

use crate::error::{PlaneLineError, RequestError};
use crate::journal::{Journal, JournalError};
use crate::plane::{Effect, Plane, PlaneError, Preparer};
use crate::protocol::{encode, parse_request, Op, Request, Response, MAX_REQUEST};
use crate::registry::{Registration, RegistryError};
use crate::state::{is_query, Block, Change, Held, State, Target};

/// Connections served at once; more are answered with an error.
pub const MAX_CONNECTIONS: usize = 256;

/// Connections of [`MAX_CONNECTIONS`] only root may use: users are
/// refused once only this many are left.
pub const ROOT_RESERVED: usize = 16;

/// Connections one user other than root may hold at once.
pub const PER_USER_CONNECTIONS: usize = 16;

/// A connection with no request under way for this long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// A request line must arrive whole within this time of its first byte.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A request not answered within this time is answered with an error, and
/// nothing of it is applied.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// An answer the client does not read within this time closes the
/// connection.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// The limits a server enforces on its connections (see the module's
/// documentation for what happens at each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once ([`MAX_CONNECTIONS`]).
    pub max_connections: usize,
    /// Of those, kept for root ([`ROOT_RESERVED`]).
    pub root_reserved: usize,
    /// Connections of one user other than root
    /// ([`PER_USER_CONNECTIONS`]).
    pub per_user: usize,
    /// Idle time between requests before a connection is closed
    /// ([`IDLE_TIMEOUT`]).
    pub idle_timeout: Duration,
    /// Time to send one request line, from its first byte
    /// ([`READ_TIMEOUT`]).
    pub read_timeout: Duration,
    /// Time to answer a request ([`REQUEST_TIMEOUT`]).
    pub request_timeout: Duration,
    /// Time for the client to take an answer ([`WRITE_TIMEOUT`]).
    pub write_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: MAX_CONNECTIONS,
            root_reserved: ROOT_RESERVED,
            per_user: PER_USER_CONNECTIONS,
            idle_timeout: IDLE_TIMEOUT,
            read_timeout: READ_TIMEOUT,
            request_timeout: REQUEST_TIMEOUT,
            write_timeout: WRITE_TIMEOUT,
        }
    }
}

/// Who may do what on an emulation. Root may always do everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// pipelabd's policy: root acts on everything (and in a user's block
    /// with the request's `user`); every other user who can connect acts
    /// in a block of their own ([`Target::User`]: own numbers, rules
    /// confined to their uid, limits).
    Blocks,
    /// An emulation that belongs to this uid (a shell, a bridge, a
    /// topology): root and the owner act on the whole configuration; any
    /// other user who can connect may only read (`show`, `list`, `pipe
    /// show`, `table N list`, `save`, `stats`, `netconfig list`, the
    /// plane's queries).
    Owner(u32),
}

/// Why a server could not start or stop.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The registry refused.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The configuration to start with is refused (out of range for
    /// root's block).
    #[error("the initial configuration does not apply: {0}")]
    Initial(RequestError),
    /// The configuration to start with is refused by the plane.
    #[error("the initial configuration does not apply: {0}")]
    InitialPlane(PlaneError),
    /// The journal cannot be read or written.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The journaled configuration is refused by the plane.
    #[error("the journaled configuration does not apply: {0}")]
    Restore(PlaneError),
    /// The latency histogram could not be made.
    #[error("latency histogram: {0}")]
    Histogram(hdrhistogram::CreationError),
    /// The registration's socket was taken out already.
    #[error("the registration of '{0}' has no socket left to serve")]
    NoSocket(String),
    /// A thread could not be started.
    #[error("cannot start a server thread: {0}")]
    Thread(std::io::Error),
    /// The plane did not stop cleanly.
    #[error("stopping the data plane: {0}")]
    Stop(PlaneError),
}

/// Why a connection is refused or closed before its request is read.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// Every connection is taken.
    #[error("{emulation} is serving {max} connections, its limit; try again")]
    Full {
        /// The emulation.
        emulation: String,
        /// Its limit of connections.
        max: usize,
    },
    /// Only connections kept for root are left.
    #[error(
        "{emulation} is serving {total} connections; the last {reserved} are kept for root; try again"
    )]
    KeptForRoot {
        /// The emulation.
        emulation: String,
        /// The connections it serves.
        total: usize,
        /// Those kept for root.
        reserved: usize,
    },
    /// The user holds their limit of connections.
    #[error(
        "{} already has {count} connections to {emulation}, the limit per user; close one and try again",
        describe_uid(*uid)
    )]
    PerUser {
        /// The user.
        uid: u32,
        /// The connections they hold.
        count: usize,
        /// The emulation.
        emulation: String,
    },
    /// A request line over [`MAX_REQUEST`].
    #[error("request longer than the limit of {MAX_REQUEST} bytes")]
    TooLong,
    /// A request line not received whole in time.
    #[error(
        "request not received whole within {} of its first byte; closing the connection",
        describe_duration(*limit)
    )]
    TooSlow {
        /// The read timeout.
        limit: Duration,
    },
}

/// Why pipelabd's socket cannot be bound.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// Its directory cannot be created.
    #[error("cannot create {}: {source}", dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Something other than a socket is at the path.
    #[error("{} exists and is not a socket; not replacing it", .0.display())]
    NotASocket(PathBuf),
    /// A daemon answers at the path.
    #[error("another pipelabd is already listening on {}", .0.display())]
    InUse(PathBuf),
    /// A stale socket cannot be removed.
    #[error("cannot remove stale socket {}: {source}", path.display())]
    RemoveStale {
        /// The socket.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The socket cannot be made.
    #[error("cannot listen on {}: {source}", path.display())]
    Listen {
        /// The socket.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

struct Inner {
    /// The committed state; a change is computed on a clone of the `Arc`
    /// outside the lock and committed only if this is still it.
    state: Arc<State>,
    plane: Option<Box<dyn Plane>>,
    journal: Option<Journal>,
    registrations: Vec<Registration>,
}

/// The control server of one emulation: state, plane, journal, access
/// policy and counters.
pub struct Server {
    name: String,
    mode: &'static str,
    access: Access,
    limits: Limits,
    /// The plane's preparation of configurations, called without the
    /// lock.
    preparer: Preparer,
    /// Changes hold it shared while they prepare and commit; a change
    /// that lost the race to others [`LOST_RACES`] times holds it
    /// exclusively for its last attempt, so it cannot starve. Queries
    /// never take it.
    changes: std::sync::RwLock<()>,
    inner: Mutex<Inner>,
    latency_us: Mutex<Histogram<u64>>,
    requests: AtomicU64,
    errors: AtomicU64,
    connections: AtomicUsize,
    /// Open connections per uid (root's included).
    per_uid: Mutex<HashMap<u32, usize>>,
    open: Mutex<HashMap<u64, UnixStream>>,
    next_conn: AtomicU64,
    closing: AtomicBool,
    started: Instant,
    restore_ms: f64,
    /// What did not load from the journal at start-up, in words.
    notices: Vec<String>,
}

/// How many times a change may find that another was committed while it
/// prepared before it prepares alone (see [`Server`]'s `changes`).
const LOST_RACES: u32 = 2;

/// A change's hold on [`Server`]'s `changes` lock.
enum ChangeTurn<'a> {
    /// With other changes.
    Shared {
        _guard: std::sync::RwLockReadGuard<'a, ()>,
    },
    /// Alone.
    Alone {
        _guard: std::sync::RwLockWriteGuard<'a, ()>,
    },
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves consistent data (every change
    // is computed on a copy and swapped in), so keep serving.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A user name or numeric uid to a uid.
pub fn resolve_user(name: &str) -> Result<u32, RequestError> {
    if let Ok(n) = name.parse::<u32>() {
        return Ok(n);
    }
    match nix::unistd::User::from_name(name) {
        Ok(Some(u)) => Ok(u.uid.as_raw()),
        Ok(None) => Err(RequestError::NoSuchUser(name.to_string())),
        Err(errno) => Err(RequestError::UserLookup {
            name: name.to_string(),
            errno,
        }),
    }
}

/// A uid as `NAME (uid N)`, or `uid N` if it has no name.
pub fn describe_uid(uid: u32) -> String {
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(u)) => format!("{} (uid {uid})", u.name),
        _ => format!("uid {uid}"),
    }
}

/// One line of an `exec` request, as the plane saw it.
struct PlaneLine<'a> {
    number: usize,
    text: &'a str,
    checked: Result<Effect, PlaneError>,
}

/// The lines of a request: the language's, or the plane's own.
enum Lines<'a> {
    Language,
    Plane(Vec<PlaneLine<'a>>),
}

/// The non-blank lines of a script without their comments, numbered
/// from 1.
fn script_lines(script: &str) -> impl Iterator<Item = (usize, &str)> {
    script.lines().enumerate().filter_map(|(i, l)| {
        let text = l.split('#').next().unwrap_or("").trim();
        (!text.is_empty()).then_some((i + 1, text))
    })
}

/// Sorts a script's lines into the language's and the plane's own;
/// refuses a mix, naming the first line of the other kind.
fn classify<'a>(plane: Option<&dyn Plane>, script: &'a str) -> Result<Lines<'a>, RequestError> {
    let Some(plane) = plane else {
        return Ok(Lines::Language);
    };
    let mut first_lang: Option<(usize, &str)> = None;
    let mut own = Vec::new();
    for (number, text) in script_lines(script) {
        match plane.check_command(text) {
            None => {
                first_lang.get_or_insert((number, text));
            }
            Some(checked) => own.push(PlaneLine {
                number,
                text,
                checked,
            }),
        }
    }
    let Some(first_own) = own.first() else {
        return Ok(Lines::Language);
    };
    let Some((n, text)) = first_lang else {
        return Ok(Lines::Plane(own));
    };
    Err(RequestError::Mixed {
        mode: plane.mode(),
        language: n,
        language_text: text.to_string(),
        own: first_own.number,
        own_text: first_own.text.to_string(),
    })
}

/// The blocks of `state` that hold something, by uid (0: root's).
fn blocks_of(state: &State) -> Vec<(u32, &Block)> {
    let mut v = Vec::new();
    if state.root != Block::default() {
        v.push((0, &state.root));
    }
    v.extend(state.users.iter().map(|(&uid, u)| (uid, &u.block)));
    v
}

/// A block's script in its own numbering.
fn block_script(state: &State, uid: u32) -> String {
    if uid == 0 {
        state.root.cfg.to_script()
    } else {
        state
            .users
            .get(&uid)
            .map(|u| u.block.cfg.to_script())
            .unwrap_or_default()
    }
}

/// Tries each block of `state` alone with `plane`'s preparer (which
/// changes nothing): the state less the blocks refused, and those blocks
/// as [`Held`], each with the line of its script that the plane's error
/// names (`pipe N: ...`) and the error.
fn hold_refused_blocks(plane: &dyn Plane, state: &State) -> (State, Vec<(u32, Held)>) {
    let prepare = plane.preparer();
    let mut rest = state.clone();
    let mut held = Vec::new();
    for (uid, block) in blocks_of(state) {
        let mut alone = State {
            limits: state.limits.clone(),
            ..State::default()
        };
        if uid == 0 {
            alone.root = block.clone();
        } else if let Some(u) = state.users.get(&uid) {
            alone.users.insert(uid, u.clone());
        }
        let Err(e) = prepare(&alone.merged()) else {
            continue;
        };
        let script = block_script(state, uid);
        let text = e.to_string();
        let line = pipe_in_error(&text)
            .map(|g| {
                if uid == 0 {
                    g
                } else {
                    state.user_numbers(uid).0.get(&g).copied().unwrap_or(g)
                }
            })
            .and_then(|own| {
                script.lines().enumerate().find(|(_, l)| {
                    l.strip_prefix(&format!("pipe {own} "))
                        .is_some_and(|r| r.starts_with("config"))
                })
            });
        let why = match line {
            Some((n, l)) => format!("line {}: `{l}`: {text}", n + 1),
            None => text,
        };
        if uid == 0 {
            rest.root = Block::default();
        } else {
            rest.users.remove(&uid);
        }
        let h = Held {
            script,
            net: block.net.clone(),
            why,
        };
        rest.held.insert(uid, h.clone());
        held.push((uid, h));
    }
    (rest, held)
}

/// The pipe an error of the plane names (`pipe 3: ...`), if it does.
fn pipe_in_error(text: &str) -> Option<u32> {
    let rest = text.split("pipe ").nth(1)?;
    let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
    rest[n.len()..].starts_with(':').then(|| n.parse().ok())?
}

impl Server {
    /// A server for the emulation `name`: the journal's committed state
    /// if there is one, else `initial` (as root's block under
    /// [`Access::Blocks`], as the whole configuration under
    /// [`Access::Owner`]), applied to `plane`. Without a journal the
    /// state lives in memory only; with one, a new state is journaled
    /// from the start. On error the plane is stopped.
    pub fn new(
        name: &str,
        mut plane: Box<dyn Plane>,
        initial: Config,
        access: Access,
        journal: Option<Journal>,
    ) -> Result<Server, ServeError> {
        let t0 = Instant::now();
        let target = match access {
            Access::Blocks => Target::Root,
            Access::Owner(_) => Target::Whole,
        };
        let restored = journal.as_ref().is_some_and(Journal::has_state);
        let mut notices = Vec::new();
        let state = match &journal {
            Some(j) if restored => j.load().map_err(ServeError::from).map(|(s, n)| {
                notices = n;
                s
            }),
            _ => State::default()
                .with_block(
                    target,
                    Block {
                        cfg: initial,
                        net: Default::default(),
                    },
                )
                .map_err(ServeError::Initial),
        };
        let mut state = match state {
            Ok(s) => s,
            Err(e) => {
                let _ = plane.stop();
                return Err(e);
            }
        };
        // Nothing else is served yet: the start's configuration is
        // prepared and committed in line (a file gone bad is refused by
        // the reader at once, or within its time budget).
        if let Err(e) = plane.apply(&state.merged()) {
            if !restored {
                let _ = plane.stop();
                return Err(ServeError::InitialPlane(e));
            }
            // A journal is restored with what applies: each block the
            // plane refuses on its own is held (kept for its owner), and
            // the rest runs; every user's configuration does not become
            // unavailable for one block's missing file.
            let journal_path = journal.as_ref().map(Journal::path).unwrap_or_default();
            let (rest, held) = hold_refused_blocks(&*plane, &state);
            for (uid, h) in &held {
                notices.push(crate::journal::held_notice(&journal_path, *uid, h));
            }
            state = rest;
            if let Err(e) = plane.apply(&state.merged()) {
                // Refused together though each applies alone: hold them
                // all and start empty.
                let mut empty = State {
                    limits: state.limits.clone(),
                    held: state.held.clone(),
                    ..State::default()
                };
                for (uid, block) in blocks_of(&state) {
                    let h = Held {
                        script: block_script(&state, uid),
                        net: block.net.clone(),
                        why: format!("the data plane refused the configurations together: {e}"),
                    };
                    notices.push(crate::journal::held_notice(&journal_path, uid, &h));
                    empty.held.insert(uid, h);
                }
                state = empty;
                if let Err(e) = plane.apply(&state.merged()) {
                    let _ = plane.stop();
                    return Err(ServeError::Restore(e));
                }
            }
        }
        if let Some(j) = &journal {
            if !restored && state != State::default() {
                if let Err(e) = j.save(&state) {
                    let _ = plane.stop();
                    return Err(ServeError::Journal(e));
                }
            }
        }
        let restore_ms = t0.elapsed().as_secs_f64() * 1e3;
        let hist = Histogram::new_with_bounds(1, 60_000_000, 3).map_err(ServeError::Histogram)?;
        Ok(Server {
            notices,
            name: name.to_string(),
            mode: plane.mode(),
            access,
            limits: Limits::default(),
            preparer: plane.preparer(),
            changes: std::sync::RwLock::new(()),
            inner: Mutex::new(Inner {
                state: Arc::new(state),
                plane: Some(plane),
                journal,
                registrations: Vec::new(),
            }),
            latency_us: Mutex::new(hist),
            requests: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            connections: AtomicUsize::new(0),
            per_uid: Mutex::new(HashMap::new()),
            open: Mutex::new(HashMap::new()),
            next_conn: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            started: Instant::now(),
            restore_ms,
        })
    }

    /// The same server with other connection limits (before it serves).
    pub fn with_limits(mut self, limits: Limits) -> Server {
        self.limits = limits;
        self
    }

    /// The connection limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The emulation's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The plane's mode (`host`, `none`, `shell`, `bridge`, `topo`).
    pub fn mode(&self) -> &'static str {
        self.mode
    }

    /// The access policy.
    pub fn access(&self) -> Access {
        self.access
    }

    /// How long loading and applying the starting state took, in ms.
    pub fn restore_ms(&self) -> f64 {
        self.restore_ms
    }

    /// What did not load from the journal at start-up (blocks held, a
    /// journal moved aside), one text each, for the daemon to say
    /// loudly; the held blocks stay in the state ([`State::held`]).
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// The configuration the plane runs now.
    pub fn config(&self) -> Config {
        self.snapshot().merged()
    }

    /// The committed state (the lock is held only to clone the `Arc`).
    fn snapshot(&self) -> Arc<State> {
        Arc::clone(&lock(&self.inner).state)
    }

    /// Handles one request line from a caller with this uid (without a
    /// time cap: the sockets' connections add it, see [`Limits`]).
    pub fn handle_line(&self, uid: u32, line: &[u8]) -> Response {
        self.handle_ticket(uid, line, &Ticket::default())
    }

    fn handle_ticket(&self, uid: u32, line: &[u8], ticket: &Ticket) -> Response {
        let t0 = Instant::now();
        let resp = match parse_request(line) {
            Ok(req) => self.handle(uid, req, ticket),
            Err(e) => RequestError::from(e).into(),
        };
        self.requests.fetch_add(1, Ordering::Relaxed);
        if !resp.ok {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        let us = u64::try_from(t0.elapsed().as_micros()).unwrap_or(u64::MAX);
        let _ = lock(&self.latency_us).record(us.clamp(1, 60_000_000));
        resp
    }

    /// Whom a request from `uid` acts for.
    fn target(&self, uid: u32, user: Option<&str>) -> Result<Target, RequestError> {
        match self.access {
            Access::Blocks => match (user, uid) {
                (None, 0) => Ok(Target::Root),
                (None, u) => Ok(Target::User(u)),
                (Some(name), 0) => match resolve_user(name)? {
                    0 => Ok(Target::Root),
                    u => Ok(Target::User(u)),
                },
                (Some(_), _) => Err(RequestError::NotYourBlock),
            },
            Access::Owner(_) => match user {
                None => Ok(Target::Whole),
                Some(_) => Err(RequestError::NoBlocks(self.name.clone())),
            },
        }
    }

    /// Whether `uid` may change the emulation (within its block, under
    /// [`Access::Blocks`]).
    fn may_change(&self, uid: u32) -> bool {
        match self.access {
            Access::Blocks => true,
            Access::Owner(owner) => uid == 0 || uid == owner,
        }
    }

    /// The refusal of a change by someone who may only read.
    fn read_only(&self) -> RequestError {
        let owner = match self.access {
            Access::Owner(o) => o,
            Access::Blocks => 0,
        };
        RequestError::ReadOnly {
            emulation: self.name.clone(),
            owner,
        }
    }

    fn handle(&self, uid: u32, req: Request, ticket: &Ticket) -> Response {
        let target = match self.target(uid, req.user.as_deref()) {
            Ok(t) => t,
            Err(e) => return e.into(),
        };
        let may = self.may_change(uid);
        let done = match req.op {
            Op::Exec { script } => self.exec(uid, target, &script, ticket),
            Op::Restore { .. } if !may => Err(self.read_only()),
            Op::Restore { script } => self.change(uid, may, ticket, |s| s.restore(target, &script)),
            Op::Netconfig { args, dry_run } => {
                self.change(uid, may, ticket, |s| s.netconfig(target, &args, dry_run))
            }
            Op::Limit { args } => match self.access {
                Access::Owner(_) => Err(RequestError::NoLimits(self.name.clone())),
                Access::Blocks if uid != 0 => Err(RequestError::LimitsForRoot),
                Access::Blocks => self.change(uid, may, ticket, |s| s.limit(&args, &resolve_user)),
            },
            Op::Save => Ok(self.snapshot().save(target)),
            Op::Stats => {
                let mut r = Response::ok("");
                r.data = Some(self.stats(uid, target));
                return r;
            }
        };
        match done {
            Ok(output) => Response::ok(output),
            Err(e) => e.into(),
        }
    }

    /// `exec`: commands of the language, or the plane's own.
    fn exec(
        &self,
        uid: u32,
        target: Target,
        script: &str,
        ticket: &Ticket,
    ) -> Result<String, RequestError> {
        let may = self.may_change(uid);
        let mut inner = lock(&self.inner);
        let own = match classify(inner.plane.as_deref(), script)? {
            Lines::Plane(own) => own,
            Lines::Language => {
                drop(inner);
                if !may {
                    // Readers may query; a script that does not parse gets
                    // its parse errors (it changes nothing either way).
                    if let Ok(cmds) = parse_script(script) {
                        if cmds.iter().any(|c| !is_query(&c.node)) {
                            return Err(self.read_only());
                        }
                    }
                }
                return self.change(uid, may, ticket, |s| s.exec(target, script));
            }
        };
        let mut bad = Vec::new();
        let mut lines = Vec::new();
        for l in own {
            match l.checked {
                Ok(effect) => lines.push((l.number, l.text, effect)),
                Err(error) => bad.push(PlaneLineError {
                    number: l.number,
                    text: l.text.to_string(),
                    error,
                }),
            }
        }
        if !bad.is_empty() {
            return Err(RequestError::PlaneLines(bad));
        }
        let changes = lines.iter().any(|l| l.2 == Effect::Change);
        if changes && !may {
            return Err(self.read_only());
        }
        if changes && !matches!(target, Target::Root | Target::Whole) {
            return Err(RequestError::PlaneCommandsForRoot(self.mode));
        }
        if uid != 0 {
            if let Some(p) = inner.plane.as_deref() {
                for (number, text, _) in &lines {
                    if let Some((what, path)) = p.files(text).into_iter().next() {
                        return Err(RequestError::PlaneFilesForRoot {
                            line: *number,
                            what,
                            path,
                        });
                    }
                }
            }
        }
        let Inner {
            state,
            plane,
            registrations,
            ..
        } = &mut *inner;
        let Some(plane) = plane.as_mut() else {
            return Err(RequestError::Stopping(self.name.clone()));
        };
        if !ticket.commit() {
            return Err(RequestError::GaveUp);
        }
        let mut output = String::new();
        for (ran, (number, text, _)) in lines.into_iter().enumerate() {
            match plane.command(text) {
                Some(Ok(out)) => output.push_str(&out),
                Some(Err(error)) => {
                    let line = PlaneLineError {
                        number,
                        text: text.to_string(),
                        error,
                    };
                    return Err(RequestError::PlaneCommand { line, ran });
                }
                None => {
                    return Err(RequestError::PlaneDidNotTake {
                        number,
                        text: text.to_string(),
                        mode: self.mode,
                        ran,
                    })
                }
            }
        }
        if changes {
            note_pipes(registrations, state, plane.as_ref());
        }
        Ok(output)
    }

    /// Computes a change on a snapshot of the state and prepares the
    /// plane's configuration for it (lowering, reading the files pipes
    /// name, compiling), all without the lock; then, under the lock,
    /// journals it, commits it to the plane and swaps the state in, if
    /// the state is still the snapshot (else computes and prepares it
    /// again on the new state). Nothing changes on any error, or if the
    /// connection gave up on the request (`ticket`).
    fn change(
        &self,
        uid: u32,
        may: bool,
        ticket: &Ticket,
        f: impl Fn(&State) -> Result<Change, RequestError>,
    ) -> Result<String, RequestError> {
        let mut lost = 0;
        loop {
            // Held until this attempt commits or gives up.
            let _turn = if lost < LOST_RACES {
                ChangeTurn::Shared {
                    _guard: self.changes.read().unwrap_or_else(|e| e.into_inner()),
                }
            } else {
                ChangeTurn::Alone {
                    _guard: self.changes.write().unwrap_or_else(|e| e.into_inner()),
                }
            };
            let snapshot = self.snapshot();
            let change = f(&snapshot)?;
            if change.next == *snapshot {
                return Ok(change.output);
            }
            if !may {
                return Err(self.read_only());
            }
            let merged = change.next.merged();
            let current = snapshot.merged();
            if uid != 0 {
                files_unchanged(&merged, &current)?;
            }
            // The plane's slow part, on this connection's thread: a file
            // that takes long to read delays this request only.
            let prepared = if merged != current {
                if ticket.abandoned() {
                    return Err(RequestError::GaveUp);
                }
                Some((self.preparer)(&merged).map_err(RequestError::PlaneRefused)?)
            } else {
                None
            };
            let mut inner = lock(&self.inner);
            if !Arc::ptr_eq(&inner.state, &snapshot) {
                // Another change was committed meanwhile: prepare again
                // on it (alone, once this has happened LOST_RACES times).
                drop(inner);
                if ticket.abandoned() {
                    return Err(RequestError::GaveUp);
                }
                lost += 1;
                continue;
            }
            let Inner {
                state,
                plane,
                journal,
                registrations,
            } = &mut *inner;
            let Some(plane) = plane.as_mut() else {
                return Err(RequestError::Stopping(self.name.clone()));
            };
            if !ticket.commit() {
                return Err(RequestError::GaveUp);
            }
            // Journaled first: a journal that cannot be written leaves
            // the plane as it was, with nothing to undo.
            if let Some(journal) = journal.as_ref() {
                journal.save(&change.next).map_err(RequestError::Journal)?;
            }
            if let Some(prepared) = prepared {
                if let Err(e) = plane.commit(prepared) {
                    if let Some(journal) = journal.as_ref() {
                        if let Err(j) = journal.save(&snapshot) {
                            return Err(RequestError::JournalAhead {
                                plane: e,
                                journal: j,
                            });
                        }
                    }
                    return Err(RequestError::PlaneRefused(e));
                }
            }
            *state = Arc::new(change.next);
            note_pipes(registrations, state, plane.as_ref());
            return Ok(change.output);
        }
    }

    fn stats(&self, uid: u32, t: Target) -> serde_json::Value {
        let (summary, plane, numbers) = {
            let (plane, state) = {
                let inner = lock(&self.inner);
                let plane = inner.plane.as_ref().map(|p| p.stats()).unwrap_or_default();
                (plane, Arc::clone(&inner.state))
            };
            let numbers = match t {
                Target::User(uid) => Some(state.user_numbers(uid)),
                Target::Root | Target::Whole => None,
            };
            (state.summary(t), plane, numbers)
        };
        let plane = match numbers {
            None => plane,
            Some((pipes, rules)) => user_view(plane, &pipes, &rules),
        };
        let access = match self.access {
            Access::Blocks => serde_json::json!({ "policy": "blocks" }),
            Access::Owner(owner) => serde_json::json!({
                "policy": "owner",
                "owner": owner,
                "may_change": self.may_change(uid),
            }),
        };
        let h = lock(&self.latency_us);
        serde_json::json!({
            "emulation": {
                "name": self.name,
                "mode": self.mode,
                "pid": std::process::id(),
                "access": access,
            },
            "daemon": {
                "uptime_s": self.started.elapsed().as_secs_f64(),
                "restore_ms": self.restore_ms,
                "requests": self.requests.load(Ordering::Relaxed),
                "errors": self.errors.load(Ordering::Relaxed),
                "connections": self.connections.load(Ordering::Relaxed),
                "latency_us": {
                    "p50": h.value_at_quantile(0.5),
                    "p99": h.value_at_quantile(0.99),
                    "max": h.max(),
                },
            },
            "config": summary,
            "plane": plane,
        })
    }

    /// Accepts connections on `listener` until the server closes.
    fn accept_loop(self: &Arc<Self>, listener: &UnixListener) {
        loop {
            let conn = listener.accept();
            if self.closing.load(Ordering::Acquire) {
                return;
            }
            let stream = match conn {
                Ok((s, _)) => s,
                // Shut down (see ServerHandle::close).
                Err(e) if e.raw_os_error() == Some(nix::libc::EINVAL) => return,
                Err(_) => {
                    // Out of descriptors or memory: do not spin.
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            };
            let Ok(uid) = getsockopt(&stream, PeerCredentials).map(|c| c.uid()) else {
                continue;
            };
            if let Err(why) = self.admit(uid) {
                // A short answer to a new socket does not block; do not
                // let a client that never reads hold the accept loop.
                let mut s = stream;
                let _ = s.set_write_timeout(Some(Duration::from_millis(100)));
                let _ = s.write_all(encode(&Response::err(why.to_string())).as_bytes());
                continue;
            }
            let d = Arc::clone(self);
            let spawned = std::thread::Builder::new()
                .name("pipelab-conn".into())
                .spawn(move || {
                    d.serve_conn(uid, stream);
                    d.leave(uid);
                });
            if spawned.is_err() {
                self.leave(uid);
            }
        }
    }

    /// Counts a new connection of `uid`, or says why it is refused.
    fn admit(&self, uid: u32) -> Result<(), ConnectionError> {
        let l = &self.limits;
        let mut per_uid = lock(&self.per_uid);
        let total = self.connections.load(Ordering::Relaxed);
        let mine = per_uid.get(&uid).copied().unwrap_or(0);
        if total >= l.max_connections {
            return Err(ConnectionError::Full {
                emulation: self.name.clone(),
                max: l.max_connections,
            });
        }
        if uid != 0 {
            let for_users = l.max_connections.saturating_sub(l.root_reserved);
            if total >= for_users {
                return Err(ConnectionError::KeptForRoot {
                    emulation: self.name.clone(),
                    total,
                    reserved: l.root_reserved,
                });
            }
            if mine >= l.per_user {
                return Err(ConnectionError::PerUser {
                    uid,
                    count: mine,
                    emulation: self.name.clone(),
                });
            }
        }
        per_uid.insert(uid, mine + 1);
        self.connections.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Uncounts a connection of `uid`.
    fn leave(&self, uid: u32) {
        let mut per_uid = lock(&self.per_uid);
        if let Some(n) = per_uid.get_mut(&uid) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                per_uid.remove(&uid);
            }
        }
        self.connections.fetch_sub(1, Ordering::Relaxed);
    }

    fn serve_conn(self: &Arc<Self>, uid: u32, stream: UnixStream) {
        let _ = stream.set_write_timeout(Some(self.limits.write_timeout));
        let Ok(read_half) = stream.try_clone() else {
            return;
        };
        let id = self.next_conn.fetch_add(1, Ordering::Relaxed);
        if let Ok(s) = stream.try_clone() {
            lock(&self.open).insert(id, s);
        }
        if self.closing.load(Ordering::Acquire) {
            lock(&self.open).remove(&id);
            return;
        }
        self.converse(uid, read_half, stream);
        lock(&self.open).remove(&id);
    }

    fn converse(self: &Arc<Self>, uid: u32, read_half: UnixStream, mut out: UnixStream) {
        let mut reader = BufReader::new(read_half);
        loop {
            let line = match read_request(&mut reader, &out, &self.limits) {
                Read::Line(l) => l,
                Read::Closed | Read::Idle => return,
                Read::Refused(why) => {
                    self.errors.fetch_add(1, Ordering::Relaxed);
                    let _ = out.write_all(encode(&Response::err(why.to_string())).as_bytes());
                    return;
                }
            };
            let (resp, work) = self.respond(uid, line);
            let written = out.write_all(encode(&resp).as_bytes());
            // One request under way per connection: the next is read once
            // this one's work is over (given up or not).
            if let Some(w) = work {
                let _ = w.join();
            }
            if written.is_err() {
                return;
            }
        }
    }

    /// Handles a request on a thread of its own, so that it is answered
    /// within [`Limits::request_timeout`] whatever it takes: past it, the
    /// answer is an error and the work commits nothing (unless it is
    /// committing already: then its own answer is waited for). Returns
    /// the answer and the work's thread, to be joined once the answer is
    /// sent.
    fn respond(self: &Arc<Self>, uid: u32, line: Vec<u8>) -> (Response, Option<JoinHandle<()>>) {
        let ticket = Arc::new(Ticket::default());
        let (tx, rx) = std::sync::mpsc::channel();
        let (d, t) = (Arc::clone(self), Arc::clone(&ticket));
        let spawned = std::thread::Builder::new()
            .name("pipelab-req".into())
            .spawn(move || {
                let _ = tx.send(d.handle_ticket(uid, &line, &t));
            });
        let worker = match spawned {
            Ok(w) => w,
            Err(e) => {
                self.errors.fetch_add(1, Ordering::Relaxed);
                return (RequestError::Thread(e).into(), None);
            }
        };
        let cap = self.limits.request_timeout;
        let resp = match rx.recv_timeout(cap) {
            Ok(r) => r,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => RequestError::Failed.into(),
            Err(_) if ticket.abandon() => RequestError::TimedOut { limit: cap }.into(),
            // Committing: its answer comes.
            Err(_) => rx.recv().unwrap_or_else(|_| RequestError::GaveUp.into()),
        };
        (resp, Some(worker))
    }
}

/// Whether a request's work may still commit: its connection gives up on
/// it at the time cap, and the work then commits nothing. Whichever
/// comes first, the work's commit or the connection's giving up, wins.
#[derive(Default)]
struct Ticket(AtomicU8);

const PENDING: u8 = 0;
const COMMITTING: u8 = 1;
const ABANDONED: u8 = 2;

impl Ticket {
    /// Called by the work before it changes anything: `false` if the
    /// connection gave up on it.
    fn commit(&self) -> bool {
        match self
            .0
            .compare_exchange(PENDING, COMMITTING, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(now) => now == COMMITTING,
        }
    }

    /// Called by the connection at the time cap: `false` if the work is
    /// committing already.
    fn abandon(&self) -> bool {
        self.0
            .compare_exchange(PENDING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Whether the connection gave up.
    fn abandoned(&self) -> bool {
        self.0.load(Ordering::Acquire) == ABANDONED
    }
}

/// `10 s`, `250 ms`.
pub fn describe_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// What reading a request line gave.
enum Read {
    /// A line, without its newline.
    Line(Vec<u8>),
    /// The client closed the connection (or it broke).
    Closed,
    /// No request began within the idle timeout.
    Idle,
    /// Too long, or too slow: the error to answer before closing.
    Refused(ConnectionError),
}

/// Reads one request line: the first byte may take up to the idle
/// timeout, the whole line up to the read timeout from its first byte,
/// and it may be at most [`MAX_REQUEST`] bytes. A last line without a
/// newline is a request too.
fn read_request(reader: &mut BufReader<UnixStream>, sock: &UnixStream, l: &Limits) -> Read {
    let mut buf = Vec::new();
    let mut started: Option<Instant> = None;
    loop {
        let wait = match started {
            None => l.idle_timeout,
            Some(t0) => l.read_timeout.saturating_sub(t0.elapsed()),
        };
        if wait.is_zero() || sock.set_read_timeout(Some(wait)).is_err() {
            return slow(l);
        }
        let avail = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return match started {
                    None => Read::Idle,
                    Some(_) => slow(l),
                };
            }
            Err(_) => return Read::Closed,
        };
        if avail.is_empty() {
            return if buf.is_empty() {
                Read::Closed
            } else {
                Read::Line(buf)
            };
        }
        started.get_or_insert_with(Instant::now);
        let (take, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (avail.len(), false),
        };
        buf.extend_from_slice(avail.get(..take).unwrap_or_default());
        reader.consume(if done { take + 1 } else { take });
        if buf.len() > MAX_REQUEST {
            return Read::Refused(ConnectionError::TooLong);
        }
        if done {
            return Read::Line(buf);
        }
    }
}

fn slow(l: &Limits) -> Read {
    Read::Refused(ConnectionError::TooSlow {
        limit: l.read_timeout,
    })
}

/// Records the pipes the emulation runs in its registry entries (best
/// effort: `pipelab list` is informative).
fn note_pipes(registrations: &mut [Registration], state: &State, plane: &dyn Plane) {
    if registrations.is_empty() {
        return;
    }
    let pipes = (state.merged().pipes.len() + plane.own_pipes()) as u64;
    for r in registrations {
        let _ = r.set_pipes(pipes);
    }
}

/// Refuses pipes that read files (`distribution file:`, `loss trace:`,
/// ...) new or changed by someone other than root: the emulation runs as
/// root and would read them for the caller.
fn files_unchanged(next: &Config, current: &Config) -> Result<(), RequestError> {
    for (&pipe, spec) in &next.pipes {
        if current.pipes.get(&pipe) == Some(spec) {
            continue;
        }
        if let Some((what, path)) = spec.files().first() {
            return Err(RequestError::FilesForRoot {
                pipe,
                what: what.to_string(),
                path: path.to_string(),
            });
        }
    }
    Ok(())
}

/// The plane's counters restricted to a user's pipes and rules, in the
/// user's numbers.
fn user_view(
    mut plane: serde_json::Value,
    pipes: &std::collections::BTreeMap<u32, u32>,
    rules: &std::collections::BTreeMap<u32, u32>,
) -> serde_json::Value {
    let num = |v: &serde_json::Value| v.as_u64().and_then(|n| u32::try_from(n).ok());
    if let Some(arr) = plane.get_mut("pipes").and_then(|v| v.as_array_mut()) {
        arr.retain_mut(|p| {
            let own = p.get("number").and_then(num).and_then(|g| pipes.get(&g));
            match own {
                Some(&n) => {
                    p["number"] = serde_json::Value::from(n);
                    true
                }
                None => false,
            }
        });
    }
    if let Some(arr) = plane.get_mut("rules").and_then(|v| v.as_array_mut()) {
        arr.retain_mut(|r| {
            let own = r.get(0).and_then(num).and_then(|g| rules.get(&g));
            match own {
                Some(&n) => {
                    r[0] = serde_json::Value::from(n);
                    true
                }
                None => false,
            }
        });
    }
    // Host-wide counters (the runner's, the queue's) describe everyone's
    // traffic: a user sees only their own objects.
    if let Some(obj) = plane.as_object_mut() {
        obj.retain(|k, _| matches!(k.as_str(), "pipes" | "rules" | "plane" | "lateness"));
    }
    plane
}

/// A running server and the threads serving its sockets. Closing it (or
/// dropping it) stops accepting, closes the open connections, removes
/// its registrations and stops the plane.
pub struct ServerHandle {
    server: Arc<Server>,
    listeners: Vec<(Arc<UnixListener>, JoinHandle<()>)>,
    closed: bool,
}

impl ServerHandle {
    /// A handle on `server`, serving no socket yet (see
    /// [`ServerHandle::listen`] and [`ServerHandle::attach`]).
    pub fn new(server: Server) -> ServerHandle {
        ServerHandle {
            server: Arc::new(server),
            listeners: Vec::new(),
            closed: false,
        }
    }

    /// The server.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// Serves `listener` too, on a thread of its own.
    pub fn listen(&mut self, listener: UnixListener) -> Result<(), ServeError> {
        let listener = Arc::new(listener);
        let (s, l) = (Arc::clone(&self.server), Arc::clone(&listener));
        let thread = std::thread::Builder::new()
            .name(format!("pipelab-ctl-{}", self.server.name))
            .spawn(move || s.accept_loop(&l))
            .map_err(ServeError::Thread)?;
        self.listeners.push((listener, thread));
        Ok(())
    }

    /// Serves a registration's socket and keeps its entry up to date
    /// (pipes) until the handle closes, which removes it.
    pub fn attach(&mut self, mut reg: Registration) -> Result<(), ServeError> {
        let listener = reg
            .take_listener()
            .ok_or_else(|| ServeError::NoSocket(reg.name().to_string()))?;
        {
            let mut inner = lock(&self.server.inner);
            let Inner {
                state,
                plane,
                registrations,
                ..
            } = &mut *inner;
            registrations.push(reg);
            if let Some(p) = plane.as_deref() {
                note_pipes(registrations, state, p);
            }
        }
        self.listen(listener)
    }

    /// Stops accepting, closes the open connections, removes the
    /// registrations, and stops the plane (its error, if any, is
    /// returned).
    pub fn close(mut self) -> Result<(), ServeError> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), ServeError> {
        if std::mem::replace(&mut self.closed, true) {
            return Ok(());
        }
        self.server.closing.store(true, Ordering::Release);
        for (l, _) in &self.listeners {
            // A blocked accept() returns EINVAL once its socket is shut
            // down (Linux).
            let _ = nix::sys::socket::shutdown(l.as_raw_fd(), nix::sys::socket::Shutdown::Both);
        }
        for (_, t) in self.listeners.drain(..) {
            let _ = t.join();
        }
        for (_, s) in lock(&self.server.open).drain() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        let (plane, registrations) = {
            let mut inner = lock(&self.server.inner);
            (inner.plane.take(), std::mem::take(&mut inner.registrations))
        };
        for r in registrations {
            r.close();
        }
        match plane {
            Some(p) => p.stop().map_err(ServeError::Stop),
            None => Ok(()),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// Serves the emulation registered as `reg`: applies `initial` (or the
/// journal's committed state, see [`Server::new`]) to `plane`, then
/// serves the registration's socket on a background thread with `access`
/// as the policy. [`ServerHandle::close`] ends it.
pub fn serve(
    reg: Registration,
    plane: Box<dyn Plane>,
    initial: Config,
    access: Access,
    journal: Option<Journal>,
) -> Result<ServerHandle, ServeError> {
    let server = Server::new(reg.name(), plane, initial, access, journal)?;
    let mut handle = ServerHandle::new(server);
    handle.attach(reg)?;
    Ok(handle)
}

/// Binds pipelabd's own control socket at `path`: creates its directory
/// (mode 0755, set on its descriptor), replaces a stale socket (refusing
/// if a daemon answers there, or if something else is there), and binds
/// it with mode 0660 and group `group` from its first moment if that
/// group exists (else only root can connect: the warning returned says
/// so). Nothing is changed by path after the bind (see [`crate::paths`]).
pub fn bind(path: &Path, group: &str) -> Result<(UnixListener, Option<String>), BindError> {
    // Another user's symbolic link on the way (the directory, or the
    // socket's own name) is refused as for any file pipelab writes.
    pipelab_lang::output::check_output_path(path).map_err(|source| BindError::Listen {
        path: path.to_path_buf(),
        source,
    })?;
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            crate::paths::make_dirs(dir, 0o755).map_err(|source| BindError::CreateDir {
                dir: dir.to_path_buf(),
                source,
            })?;
        }
    }
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(BindError::NotASocket(path.to_path_buf()));
        }
        if UnixStream::connect(path).is_ok() {
            return Err(BindError::InUse(path.to_path_buf()));
        }
        std::fs::remove_file(path).map_err(|source| BindError::RemoveStale {
            path: path.to_path_buf(),
            source,
        })?;
    }
    let gid = match nix::unistd::Group::from_name(group) {
        Ok(Some(g)) => Some(g.gid),
        _ => None,
    };
    // No moment where the socket is open to all or of another group.
    let listener =
        crate::paths::bind_socket(path, 0o660, gid).map_err(|source| BindError::Listen {
            path: path.to_path_buf(),
            source,
        })?;
    let warning = match gid {
        Some(_) => None,
        None => Some(format!(
            "group '{group}' does not exist: only root can use {} (create it with `groupadd {group}` and restart)",
            path.display()
        )),
    };
    Ok((listener, warning))
}

/// Where pipelabd listens by default.
pub fn default_socket() -> PathBuf {
    PathBuf::from(crate::DEFAULT_SOCKET)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{EmulationInfo, Registry};
    use crate::Client;

    /// A topology-like plane: it claims `link ...` (a change) and
    /// `status` (a query) and records what it ran.
    struct TestPlane {
        ran: Arc<Mutex<Vec<String>>>,
    }

    impl Plane for TestPlane {
        fn preparer(&self) -> crate::plane::Preparer {
            Arc::new(|_: &Config| Ok(crate::plane::Prepared::new(())))
        }
        fn commit(&mut self, prepared: crate::plane::Prepared) -> Result<(), PlaneError> {
            Ok(prepared.take::<()>()?)
        }
        fn stats(&self) -> serde_json::Value {
            serde_json::json!({"plane": "topo", "pipes": [{"number": 65536, "arrivals": 3}], "rules": []})
        }
        fn stop(self: Box<Self>) -> Result<(), PlaneError> {
            Ok(())
        }
        fn mode(&self) -> &'static str {
            "topo"
        }
        fn check_command(&self, line: &str) -> Option<Result<Effect, PlaneError>> {
            let w: Vec<&str> = line.split_whitespace().collect();
            match w.as_slice() {
                ["status"] => Some(Ok(Effect::Query)),
                ["link", a, _, ..] if *a == "nowhere" => Some(Err("no node named nowhere".into())),
                ["link", _, _, "down" | "up"] | ["link", _, _, "set", ..] => {
                    Some(Ok(Effect::Change))
                }
                ["link", ..] => Some(Err("usage: link A B up|down|set ...".into())),
                _ => None,
            }
        }
        fn command(&mut self, line: &str) -> Option<Result<String, PlaneError>> {
            if let Err(e) = self.check_command(line)? {
                return Some(Err(e));
            }
            lock(&self.ran).push(line.to_string());
            Some(Ok(format!("{line}: done\n")))
        }
        fn own_pipes(&self) -> usize {
            10
        }
        /// `link A B set profile PATH` reads PATH, as a topology's does.
        fn files(&self, line: &str) -> Vec<(String, String)> {
            let w: Vec<&str> = line.split_whitespace().collect();
            match w.as_slice() {
                ["link", _, _, "set", "profile", path, ..] => {
                    vec![("profile".to_string(), path.to_string())]
                }
                _ => Vec::new(),
            }
        }
    }

    fn server(access: Access) -> (Server, Arc<Mutex<Vec<String>>>) {
        let ran = Arc::new(Mutex::new(Vec::new()));
        let plane = TestPlane {
            ran: Arc::clone(&ran),
        };
        let s = Server::new("lab", Box::new(plane), Config::new(), access, None).unwrap();
        (s, ran)
    }

    fn req(s: &Server, uid: u32, op: Op) -> Response {
        let line = encode(&Request {
            v: crate::VERSION,
            user: None,
            op,
        });
        s.handle_line(uid, line.trim_end().as_bytes())
    }

    fn exec(s: &Server, uid: u32, script: &str) -> Response {
        req(
            s,
            uid,
            Op::Exec {
                script: script.into(),
            },
        )
    }

    const OWNER: u32 = 4_000_001;
    const OTHER: u32 = 4_000_002;

    #[test]
    fn plane_commands_go_to_the_plane_and_the_language_to_the_config() {
        let (s, ran) = server(Access::Owner(OWNER));
        let r = exec(
            &s,
            OWNER,
            "# faults\nlink r0 r1 down\n\nlink r1 r2 set delay 20ms   # slower",
        );
        assert!(r.ok, "{:?}", r.error);
        assert_eq!(
            r.output,
            "link r0 r1 down: done\nlink r1 r2 set delay 20ms: done\n"
        );
        assert_eq!(
            *lock(&ran),
            vec!["link r0 r1 down", "link r1 r2 set delay 20ms"]
        );
        // Not part of the configuration.
        assert_eq!(req(&s, OWNER, Op::Save).output, "set one_pass 1\n");
        let r = exec(&s, OWNER, "pipe 1 config delay 5ms");
        assert!(r.ok, "{:?}", r.error);
        assert_eq!(s.config().pipes.len(), 1);
        assert_eq!(lock(&ran).len(), 2);
    }

    #[test]
    fn a_mix_or_a_bad_plane_line_runs_nothing() {
        let (s, ran) = server(Access::Owner(OWNER));
        let e = exec(&s, OWNER, "pipe 1 config delay 5ms\nlink r0 r1 down")
            .error
            .unwrap();
        assert!(
            e.contains("line 1 is a command of the language (`pipe 1 config delay 5ms`), but line 2 is one of topo's own commands (`link r0 r1 down`)"),
            "{e}"
        );
        let e = exec(&s, OWNER, "link r0 r1 down\n\npipe 1 config delay 5ms")
            .error
            .unwrap();
        assert!(
            e.contains("line 1 is one of topo's own commands (`link r0 r1 down`), but line 3 is a command of the language (`pipe 1 config delay 5ms`)"),
            "{e}"
        );
        let e = exec(&s, OWNER, "link r0 r1 down\nlink nowhere r1 down\nlink r0")
            .error
            .unwrap();
        assert!(
            e.contains("line 2 (`link nowhere r1 down`): no node named nowhere")
                && e.contains("line 3 (`link r0`): usage")
                && e.contains("nothing was applied"),
            "{e}"
        );
        assert!(lock(&ran).is_empty());
        assert!(s.config().pipes.is_empty());
    }

    #[test]
    fn owner_access_lets_others_read_only() {
        let (s, ran) = server(Access::Owner(OWNER));
        assert!(exec(&s, OWNER, "pipe 1 config delay 5ms\nadd 100 pipe 1").ok);
        let owned =
            format!("emulation lab belongs to uid {OWNER}: only its owner or root may change it");
        for script in [
            "pipe 1 config delay 50ms",
            "pipe 2 config",
            "delete 100",
            "flush",
            "show\npipe 1 delete",
            "link r0 r1 down",
        ] {
            let e = exec(&s, OTHER, script).error.unwrap_or_default();
            assert_eq!(e, owned, "{script}");
        }
        for op in [
            Op::Restore {
                script: String::new(),
            },
            Op::Netconfig {
                args: "client 80@10.0.0.0/8 SHARED bw 1Mbit/s".into(),
                dry_run: false,
            },
        ] {
            assert_eq!(req(&s, OTHER, op).error.unwrap_or_default(), owned);
        }
        // Reading is allowed.
        assert_eq!(
            exec(&s, OTHER, "show").output,
            "00100 pipe 1 ip from any to any\n65535 allow ip from any to any\n"
        );
        assert_eq!(
            exec(&s, OTHER, "pipe show").output,
            "pipe 1 config delay 5ms\n"
        );
        assert!(exec(&s, OTHER, "status").ok);
        assert!(req(&s, OTHER, Op::Save)
            .output
            .contains("pipe 1 config delay 5ms"));
        let dry = req(
            &s,
            OTHER,
            Op::Netconfig {
                args: "client 80@10.0.0.0/8 SHARED bw 1Mbit/s".into(),
                dry_run: true,
            },
        );
        assert!(dry.ok, "{:?}", dry.error);
        let st = req(&s, OTHER, Op::Stats).data.unwrap();
        assert_eq!(st["emulation"]["name"], "lab");
        assert_eq!(st["emulation"]["access"]["may_change"], false);
        assert_eq!(st["plane"]["pipes"][0]["number"], 65536);
        // Nothing changed; the owner and root change.
        assert_eq!(s.config().pipes[&1].to_string(), "delay 5ms");
        assert!(lock(&ran).iter().all(|l| l != "link r0 r1 down"));
        assert!(exec(&s, OWNER, "pipe 1 config delay 50ms").ok);
        assert!(exec(&s, 0, "pipe 1 config delay 60ms\nlink r0 r1 down")
            .error
            .is_some());
        assert!(exec(&s, 0, "link r0 r1 down").ok);
        // No users' blocks: every number, no --user, no limits.
        assert!(exec(&s, OWNER, "pipe 40000 config").ok);
        let r = s.handle_line(
            0,
            br#"{"v":1,"user":"4000002","op":"exec","script":"show"}"#,
        );
        assert!(r.error.unwrap().contains("has no users' blocks"));
        let r = req(
            &s,
            0,
            Op::Limit {
                args: "user 4000002 pipes 1".into(),
            },
        );
        assert!(r.error.unwrap().contains("limits are pipelabd's"));
    }

    #[test]
    fn only_root_makes_an_emulation_read_files() {
        let (s, _) = server(Access::Owner(OWNER));
        let script = "pipe 1 config delay 5ms distribution file:/etc/shadow";
        let e = exec(&s, OWNER, script).error.unwrap();
        assert!(
            e.contains(
                "pipe 1: distribution file /etc/shadow: only root may have an emulation read files"
            ),
            "{e}"
        );
        assert!(exec(&s, 0, script).ok);
        // What root configured stays; the owner may change other pipes.
        assert!(exec(&s, OWNER, "pipe 2 config delay 1ms").ok);
    }

    /// A plane's own command can name a file too (`link A B set profile
    /// FILE` in a topology). A pass proves only root may send one: the
    /// owner is refused naming the line, the word and the path, nothing
    /// of the script runs (not even its earlier lines), and root's same
    /// script runs.
    #[test]
    fn only_root_makes_a_plane_command_read_files() {
        let (s, ran) = server(Access::Owner(OWNER));
        let script = "link r0 r1 down\nlink r1 r2 set profile /etc/shadow";
        let r = exec(&s, OWNER, script);
        let e = r
            .error
            .unwrap_or_else(|| panic!("accepted: {:?}", r.output));
        assert!(
            e.contains(
                "line 2: profile file /etc/shadow: only root may have an emulation read files"
            ),
            "{e}"
        );
        assert!(lock(&ran).is_empty(), "{:?}", lock(&ran));
        let r = exec(&s, 0, script);
        assert!(r.ok, "{:?}", r.error);
        assert_eq!(
            *lock(&ran),
            vec!["link r0 r1 down", "link r1 r2 set profile /etc/shadow"]
        );
    }

    #[test]
    fn blocks_access_keeps_pipelabds_rules() {
        let (s, _) = server(Access::Blocks);
        assert!(exec(&s, 1001, "pipe 1 config delay 5ms").ok);
        let e = exec(&s, 1001, "link r0 r1 down").error.unwrap();
        assert!(
            e.contains("only root may run the topo plane's own commands"),
            "{e}"
        );
        assert!(exec(&s, 1001, "status").ok);
        let e = exec(&s, 0, "pipe 40000 config").error.unwrap();
        assert!(e.contains("belong to users' blocks"), "{e}");
    }

    /// A plane whose preparation of a configuration naming a file takes
    /// `SLOW` (a big file, a slow file system), counting preparations and
    /// commits.
    struct SlowPlane {
        slow_preparations: Arc<AtomicUsize>,
        commits: Arc<AtomicUsize>,
    }

    const SLOW: Duration = Duration::from_millis(1500);

    impl Plane for SlowPlane {
        fn preparer(&self) -> crate::plane::Preparer {
            let slow = Arc::clone(&self.slow_preparations);
            Arc::new(move |cfg: &Config| {
                if cfg.pipes.values().any(|p| !p.files().is_empty()) {
                    std::thread::sleep(SLOW);
                    slow.fetch_add(1, Ordering::SeqCst);
                }
                Ok(crate::plane::Prepared::new(cfg.clone()))
            })
        }
        fn commit(&mut self, prepared: crate::plane::Prepared) -> Result<(), PlaneError> {
            prepared.take::<Config>()?;
            self.commits.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        fn stats(&self) -> serde_json::Value {
            serde_json::json!({"plane": "none"})
        }
        fn stop(self: Box<Self>) -> Result<(), PlaneError> {
            Ok(())
        }
        fn mode(&self) -> &'static str {
            "none"
        }
    }

    /// Pass proves: the plane's slow work (reading the files a request's
    /// pipes name) runs without the server's lock. While one request's
    /// preparation takes 1.5 s, `show`, `stats` and a change of another
    /// pipe are each answered within 500 ms; the slow request, whose
    /// snapshot another change replaced meanwhile, is prepared again and
    /// committed, with both changes in the configuration.
    #[test]
    fn a_slow_preparation_blocks_no_other_request() {
        let slow = Arc::new(AtomicUsize::new(0));
        let commits = Arc::new(AtomicUsize::new(0));
        let plane = SlowPlane {
            slow_preparations: Arc::clone(&slow),
            commits: Arc::clone(&commits),
        };
        let s = Arc::new(
            Server::new("slow", Box::new(plane), Config::new(), Access::Blocks, None).unwrap(),
        );
        assert!(exec(&s, 0, "pipe 2 config delay 1ms").ok);
        let t0 = Instant::now();
        let big = {
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                let r = exec(
                    &s,
                    0,
                    "pipe 1 config delay 5ms distribution file:/slow/file",
                );
                (r, t0.elapsed())
            })
        };
        std::thread::sleep(Duration::from_millis(200));
        let mut slowest = Duration::ZERO;
        let mut timed = |what: &str, r: &dyn Fn() -> Response| {
            let t = Instant::now();
            let resp = r();
            let took = t.elapsed();
            assert!(resp.ok, "{what}: {:?}", resp.error);
            assert!(took < Duration::from_millis(500), "{what} took {took:?}");
            slowest = slowest.max(took);
            resp
        };
        let shown = timed("show", &|| exec(&s, 0, "pipe show"));
        assert_eq!(shown.output, "pipe 2 config delay 1ms\n");
        timed("stats", &|| req(&s, 0, Op::Stats));
        timed("a change of pipe 2", &|| {
            exec(&s, 0, "pipe 2 config delay 2ms")
        });
        assert!(
            t0.elapsed() < SLOW,
            "answered while the slow preparation ran"
        );
        let (r, took) = big.join().unwrap();
        assert!(r.ok, "{:?}", r.error);
        eprintln!("slow request: {took:?}; the others meanwhile at most {slowest:?}");
        assert_eq!(
            slow.load(Ordering::SeqCst),
            2,
            "prepared again on the new state"
        );
        assert_eq!(
            commits.load(Ordering::SeqCst),
            4,
            "the start, pipe 2 twice, then pipe 1"
        );
        assert_eq!(
            s.config().to_script(),
            "set one_pass 1\npipe 1 config delay 5ms distribution file:/slow/file\npipe 2 config delay 2ms\n"
        );
    }

    #[test]
    fn a_served_emulation_answers_then_closes_without_a_trace() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::at(dir.path().join("emu")).with_group("pipelab-no-such-group");
        let reg = registry
            .register(EmulationInfo::new("lab", "topo"))
            .unwrap();
        let ran = Arc::new(Mutex::new(Vec::new()));
        let mut initial = Config::new();
        initial.apply_script("pipe 7 config delay 1ms").unwrap();
        let handle = serve(
            reg,
            Box::new(TestPlane {
                ran: Arc::clone(&ran),
            }),
            initial,
            Access::Owner(nix::unistd::getuid().as_raw()),
            None,
        )
        .unwrap();
        let listed = registry.list();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].pipes, 11, "1 configured + 10 of the plane's own");
        let sock = registry.resolve("lab").unwrap();
        let mut c = Client::connect(&sock).unwrap();
        let r = c.exec("pipe show").unwrap();
        assert_eq!(r.output, "pipe 7 config delay 1ms\n");
        assert!(c.exec("pipe 8 config\npipe 9 config").unwrap().ok);
        assert_eq!(registry.list()[0].pipes, 13);
        assert!(c.exec("link a b down").unwrap().ok);
        assert_eq!(lock(&ran).len(), 1);
        // An open connection is closed with the server.
        handle.close().unwrap();
        assert!(c.exec("show").is_err());
        assert!(registry.list().is_empty());
        assert!(Client::connect(&sock).is_err());
        assert!(
            std::fs::read_dir(registry.dir()).unwrap().next().is_none(),
            "nothing left behind"
        );
    }
}
