//! # pipelab-control: the one control protocol
//!
//! Every live emulation of pipelab (pipelabd's host mode, a `pipelab
//! shell`, a `pipelab bridge`, a live topology) has a name and is reached
//! the same way: a Unix socket speaking one protocol, with one set of
//! rules (planetlab-dummynet-emulation §3.1–3.6). The `pipelab` command is
//! its client (`pipelab --target NAME pipe 1 config delay 50ms`,
//! `pipelab list`). This crate is that protocol; it moves no packets and
//! does not depend on the modes (they depend on it):
//!
//! * [`protocol`]: one JSON request and one JSON response per line,
//!   versioned;
//! * [`error`]: why a request is refused ([`RequestError`]), typed; its
//!   `Display` is the response's error text;
//! * [`state`]: root's block, the users' blocks (own numbering, rules
//!   confined to the uid, limits), `netconfig` links, and the merged
//!   configuration the plane runs;
//! * [`journal`]: the committed state, written atomically (temp file,
//!   fsync, rename, fsync of the directory) and restored at start, for a
//!   persistent emulation (pipelabd), in a state directory one process
//!   owns (a `flock` held for the journal's life);
//! * [`plane`]: what a server needs of a data plane ([`plane::Plane`]),
//!   and the plane without packets;
//! * [`server`]: the socket, `SO_PEERCRED`, the access policy
//!   ([`server::Access`]: pipelabd's per-user blocks, or an owner who
//!   changes and others who read), one lock around every change, all or
//!   nothing; the limits that keep one user from locking out the others
//!   or root ([`server::Limits`]: connections per user and in all, the
//!   last ones kept for root, idle, read, write and request time caps);
//!   [`server::serve`] serves a registered emulation;
//! * [`registry`]: the running emulations by name (`/run/pipelab/emu`);
//! * [`Client`]: a connection to a server.
//!
//! pipelabd (crate `pipelab`) is the persistent host-mode emulation: it
//! serves its usual socket ([`DEFAULT_SOCKET`]) and registers as
//! `pipelabd`. A mode serves its emulation in three calls:
//!
//! ```no_run
//! # fn plane() -> Box<dyn pipelab_control::plane::Plane> { Box::new(pipelab_control::plane::ControlOnly::default()) }
//! use pipelab_control::registry::{register, EmulationInfo};
//! use pipelab_control::server::{serve, Access};
//!
//! let info = EmulationInfo::new("lab", "topo");
//! let owner = info.owner;
//! let reg = register(info)?;                       // the name and the socket
//! let handle = serve(reg, plane(), pipelab_lang::Config::new(), Access::Owner(owner), None)?;
//! // ... the emulation runs; requests are served on a background thread ...
//! handle.close()?;                                 // stops serving, removes the entry
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The stats format
//!
//! A `stats` request answers with this JSON in the response's `data`
//! (`pipelab stats --json` prints it; `pipelab stats` and `pipelab top`
//! render its tables from it). Fields are added, never renamed.
//!
//! ```text
//! {
//!   "emulation": {"name": "lab", "mode": "topo", "pid": 4242,
//!                 "access": {"policy": "owner", "owner": 1000, "may_change": true}},
//!   "daemon":    {"uptime_s", "restore_ms", "requests", "errors", "connections",
//!                 "latency_us": {"p50", "p99", "max"}},        // the control server's
//!   "config":    {"pipes", "rules", "netconfig_links", "queue_memory_bytes", ...},
//!   "plane":     what Plane::stats returns, below
//! }
//! ```
//!
//! [`plane::Plane::stats`] reports, as host mode's `HostStats` serializes
//! (every part but `plane` optional; a plane adds what it has):
//!
//! ```text
//! {
//!   "plane": "topo",                       // Plane::mode
//!   "pipes": [{"number": 1,                // the pipe's number (the language's, or a topology's own)
//!              "arrivals": 0, "arrival_bytes": 0,
//!              "departures": 0, "departure_bytes": 0,
//!              "drops": 0,                 // at a full queue
//!              "loss_drops": 0,            // by the loss model
//!              "down_drops": 0,            // while down (`pipe N down 5s`)
//!              "duplicated": 0,
//!              "backlog": 0,               // packets queued now
//!              "in_delay_line": 0}, ...],
//!   "rules": [[100, 12, 18000], ...],      // [number, packets, bytes]; 65535 last
//!   "runner": {"received", "delivered", "dropped_queue", "dropped_loss", "dropped_aqm",
//!              "dropped_link", "dropped_memory", "dropped_rule", "dropped_loop",
//!              "dropped_reset", "dropped_unreach", "dropped_down",
//!              "dropped_tx", "inside", "answers", "answers_limited", "answers_failed",
//!              "dropped_input",            // by the kernel before a port read them
//!              "gso": {"superframes", "segments", "kept_whole", "sent_whole",
//!                      "uncut", "csum_completed", "coalesced",
//!                      "segments_coalesced"}},  // pipelab_io::runner::RunnerStats
//!   "lateness": {"count", "mean_us", "p50_us", "p99_us", "p999_us", "max_us",
//!                "realtime", "rt_demotions"}   // pipelab_io::runner::Lateness
//! }
//! ```
//!
//! `pipelab top` shows `pipes` (with packet and bit rates between
//! refreshes from `departures` and `departure_bytes`), `rules`, `runner`
//! and `lateness`. A user of pipelabd sees only `pipes`, `rules`,
//! `plane` and `lateness`, in their own numbers.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod error;
pub mod journal;
pub mod paths;
pub mod plane;
pub mod protocol;
pub mod registry;
pub mod server;
pub mod state;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

pub use error::{LimitError, PlaneLineError, RequestError};
pub use plane::{ControlOnly, Effect, Plane, PlaneError, Prepared, Preparer};
pub use protocol::{Op, Request, Response, VERSION};
pub use registry::{EmulationInfo, Registration, Registry, RegistryError};
pub use server::{serve, Access, BindError, ConnectionError, ServeError, Server, ServerHandle};

/// The control socket's default path.
pub const DEFAULT_SOCKET: &str = "/run/pipelab/pipelab.sock";
/// The journal's default directory.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/pipelab";
/// The group whose members may use pipelabd's socket and every
/// emulation's.
pub const DEFAULT_GROUP: &str = "pipelab";

/// A connection to an emulation's control socket (pipelabd's or any
/// other).
pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

/// Why a request could not be made (the server's own refusals are
/// [`Response`]s with `ok: false`).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing answers on the socket.
    #[error("cannot connect to {path}: {source}")]
    Connect {
        /// The socket.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The connection broke.
    #[error("lost the connection to the emulation: {0}")]
    Io(#[from] std::io::Error),
    /// The server's answer is not a response.
    #[error("the emulation answered something that is not a response: {0}")]
    BadResponse(String),
}

impl Client {
    /// Connects to a control socket.
    pub fn connect(path: &Path) -> Result<Client, ClientError> {
        let s = UnixStream::connect(path).map_err(|source| ClientError::Connect {
            path: path.display().to_string(),
            source,
        })?;
        let r = s.try_clone()?;
        Ok(Client {
            reader: BufReader::new(r),
            writer: s,
        })
    }

    /// Sends `op` (as `user`, root only) and waits for the answer.
    pub fn request(&mut self, user: Option<&str>, op: Op) -> Result<Response, ClientError> {
        let req = Request {
            v: VERSION,
            user: user.map(str::to_string),
            op,
        };
        // A server that refuses a connection (too many) answers before
        // reading anything and closes: its answer is still there to read
        // when the request cannot be written.
        let sent = self.writer.write_all(protocol::encode(&req).as_bytes());
        let mut line = String::new();
        let read = self.reader.read_line(&mut line);
        match (read, sent) {
            (Ok(n), _) if n > 0 => {}
            (_, Err(e)) => return Err(ClientError::Io(e)),
            (Err(e), Ok(())) => return Err(ClientError::Io(e)),
            (Ok(_), Ok(())) => {
                return Err(ClientError::BadResponse(
                    "the emulation closed the connection".into(),
                ))
            }
        }
        serde_json::from_str(line.trim_end()).map_err(|e| ClientError::BadResponse(e.to_string()))
    }

    /// [`Client::request`] of commands of the language.
    pub fn exec(&mut self, script: &str) -> Result<Response, ClientError> {
        self.request(
            None,
            Op::Exec {
                script: script.to_string(),
            },
        )
    }
}
