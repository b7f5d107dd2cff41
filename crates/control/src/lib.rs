//! # pipelab-control: the one control protocol
//!
//! `pipelabd` owns the data plane and listens on a Unix socket (default
//! [`DEFAULT_SOCKET`]); the `pipelab` command sends it commands of the
//! language (planetlab-dummynet-emulation §3.1–3.6). The binary lives in
//! the `pipelab` package; this crate is its control plane and does not
//! depend on the modes:
//!
//! * [`protocol`]: one JSON request and one JSON response per line,
//!   versioned;
//! * [`state`]: root's block, the users' blocks (own numbering, rules
//!   confined to the uid, limits), `netconfig` links, and the merged
//!   configuration the plane runs;
//! * [`journal`]: the committed state, written atomically (temp file,
//!   fsync, rename, fsync of the directory) and restored at start;
//! * [`plane`]: what the daemon needs of a data plane, and the plane
//!   without packets;
//! * [`server`]: the socket, `SO_PEERCRED`, one lock around every change;
//! * [`registry`]: the running emulations by name (`/run/pipelab/emu`);
//! * [`Client`]: a connection to the daemon.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod journal;
pub mod plane;
pub mod protocol;
pub mod registry;
pub mod server;
pub mod state;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

pub use protocol::{Op, Request, Response, VERSION};

/// The control socket's default path.
pub const DEFAULT_SOCKET: &str = "/run/pipelab/pipelab.sock";
/// The journal's default directory.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/pipelab";
/// The group whose members may use the socket.
pub const DEFAULT_GROUP: &str = "pipelab";

/// A connection to `pipelabd`.
pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

/// Why a request could not be made (the daemon's own refusals are
/// [`Response`]s with `ok: false`).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No daemon listens on the socket.
    #[error("cannot connect to pipelabd at {path}: {source}")]
    Connect {
        /// The socket.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The connection broke.
    #[error("lost the connection to pipelabd: {0}")]
    Io(#[from] std::io::Error),
    /// The daemon's answer is not a response.
    #[error("pipelabd answered something that is not a response: {0}")]
    BadResponse(String),
}

impl Client {
    /// Connects to the daemon's socket.
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
        self.writer.write_all(protocol::encode(&req).as_bytes())?;
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(ClientError::BadResponse(
                "the daemon closed the connection".into(),
            ));
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
