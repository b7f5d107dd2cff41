//! The data plane behind a control server.
//!
//! [`Plane`] is what the server needs of a data plane: apply a whole
//! configuration atomically in two steps (prepare it, then commit it),
//! report counters in the format of [`crate#the-stats-format`], stop,
//! and optionally run commands of its own that are not in the language
//! (a topology's `link A B set delay 20ms`). Every live emulation implements it for its own data plane
//! (shell, bridge, topology, host mode); this crate has one:
//!
//! * [`ControlOnly`] (`pipelabd --plane none`): no packets; every pipe is
//!   still compiled into its engine configuration, so that what is
//!   committed would run;
//!
//! host mode (`pipelabd --plane host`, the default) lives beside the
//! `pipelabd` binary (crate `pipelab`), since this crate does not depend
//! on the modes.
//!
//! # Commands of the plane's own
//!
//! The server offers every line of an `exec` request to
//! [`Plane::check_command`] first (comments and blank lines left out). A
//! line the plane claims is one of its own commands; any other line is a
//! command of the language. A request is all of one kind or the other:
//! a mix is refused before anything runs, naming the first line of the
//! other kind. The plane's commands are checked all before the first runs
//! (a bad one refuses the request, nothing runs), then run in order with
//! [`Plane::command`]; they change the running emulation only, not the
//! configuration (`save` does not print them, the journal does not keep
//! them).

//!
//! # Prepare, then commit
//!
//! Making a configuration ready to run may be slow: lowering it reads
//! the files its pipes name (`distribution file:`, `loss trace:`, `bw
//! trace:`, `profile`, `timevarying`), each within the time budget of
//! [`pipelab_lang::files::read_named_file`], and compiles the
//! classifier. The server does that work without its lock, on the
//! requesting connection's thread, through the plane's [`Preparer`]
//! (asked for once, shared by every connection), so a slow file delays
//! only the request that names it. What the preparer returns, a
//! [`Prepared`], is committed under the lock with [`Plane::commit`]:
//! handing a compiled spec to the runner, nothing that reads a file. If
//! the server's state changed between the two, the server prepares
//! again; a preparation is never committed over a configuration it was
//! not made from.

use std::any::Any;
use std::sync::Arc;

use pipelab_lang::Config;

/// Why a plane refused a configuration or a command of its own: each
/// plane's own error type (a mode's `ModeError`, host mode's, the
/// checks of [`ControlOnly`]), shown to users by its `Display`.
pub type PlaneError = Box<dyn std::error::Error + Send + Sync>;

/// What a plane's [`Preparer`] made of a configuration (a compiled spec,
/// for a live mode), to hand to the same plane's [`Plane::commit`].
pub struct Prepared(Box<dyn Any + Send>);

impl Prepared {
    /// Wraps a plane's preparation.
    pub fn new<T: Any + Send>(value: T) -> Prepared {
        Prepared(Box::new(value))
    }

    /// The preparation, as the plane that made it knows it; an error if
    /// another plane made it (a bug of the caller).
    pub fn take<T: Any>(self) -> Result<T, WrongPreparation> {
        self.0
            .downcast::<T>()
            .map(|b| *b)
            .map_err(|_| WrongPreparation {
                expected: std::any::type_name::<T>(),
            })
    }
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Prepared(..)")
    }
}

/// A [`Prepared`] handed to a plane that did not make it.
#[derive(Debug, thiserror::Error)]
#[error("internal error: a configuration prepared by another plane (expected {expected})")]
pub struct WrongPreparation {
    /// The type the plane expected.
    pub expected: &'static str,
}

/// A plane's preparation of configurations: called without the server's
/// lock, from any connection's thread, at the same time as others and as
/// the plane's commits; changes nothing.
pub type Preparer = Arc<dyn Fn(&Config) -> Result<Prepared, PlaneError> + Send + Sync>;

/// What one of a plane's own commands does, for the access rules: only
/// those who may change an emulation may run a [`Effect::Change`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Reads only (a status, a listing).
    Query,
    /// Changes the running emulation.
    Change,
}

/// A data plane a control server drives.
pub trait Plane: Send {
    /// What prepares configurations for this plane (lowering, reading the
    /// files pipes name, compiling): asked for once by the server, and
    /// called without its lock (see the module's documentation).
    fn preparer(&self) -> Preparer;
    /// Brings the plane to a configuration its [`Plane::preparer`]
    /// prepared: cheap, reads no file; on error nothing changed.
    fn commit(&mut self, prepared: Prepared) -> Result<(), PlaneError>;
    /// Prepares and commits `cfg` at once (the start and the restore of a
    /// journal, before anything else is served); on error nothing
    /// changed.
    fn apply(&mut self, cfg: &Config) -> Result<(), PlaneError> {
        let prepared = (self.preparer())(cfg)?;
        self.commit(prepared)
    }
    /// Counters, as JSON, in the format of [`crate#the-stats-format`].
    fn stats(&self) -> serde_json::Value;
    /// Stops the plane and removes what it installed.
    fn stop(self: Box<Self>) -> Result<(), PlaneError>;
    /// The kind of emulation: `host`, `none`, `shell`, `bridge`, `topo`
    /// (`pipelab list`'s MODE, the stats' `plane`).
    fn mode(&self) -> &'static str;
    /// Whether `line` (one line, trimmed, without its comment) is one of
    /// the plane's own commands, checked without running it: `None` if
    /// it is not (it is then a command of the language), `Some(Err(why))`
    /// if it is one but cannot run (an unknown node), else what it does.
    /// A plane with commands of its own implements this and
    /// [`Plane::command`].
    fn check_command(&self, line: &str) -> Option<Result<Effect, PlaneError>> {
        let _ = line;
        None
    }
    /// The files one of the plane's own commands (accepted by
    /// [`Plane::check_command`]) reads, as `(what, path)`: only root may
    /// send such a command, as only root's pipes may name files.
    fn files(&self, line: &str) -> Vec<(String, String)> {
        let _ = line;
        Vec::new()
    }
    /// Runs one of the plane's own commands (a line
    /// [`Plane::check_command`] accepted): `Some(Ok(output))`,
    /// `Some(Err(why))`, or `None` if the plane does not claim it.
    fn command(&mut self, line: &str) -> Option<Result<String, PlaneError>> {
        let _ = line;
        None
    }
    /// Pipes the plane runs besides the configuration's (a topology's
    /// own), counted in `pipelab list`'s PIPES.
    fn own_pipes(&self) -> usize {
        0
    }
}

/// Why the daemon cannot read a file a pipe names.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A relative path: the daemon has no directory of the caller's to
    /// resolve it in.
    #[error("{0}: the daemon needs an absolute path")]
    Relative(String),
    /// Not a regular file, too big, too slow, not UTF-8, or not readable.
    #[error(transparent)]
    File(#[from] pipelab_lang::files::FileError),
}

/// Files named by pipes (`distribution file:PATH`, `loss trace:PATH`) are
/// read by the daemon; only root's pipes may name them, and only by
/// absolute path. They are read with
/// [`pipelab_lang::files::read_named_file`]: a FIFO, a device or a file
/// over its size cap is refused at once, so neither a request nor the
/// restore of a journaled configuration can hang on one.
pub fn load_file(path: &str) -> Result<String, LoadError> {
    if !path.starts_with('/') {
        return Err(LoadError::Relative(path.to_string()));
    }
    Ok(pipelab_lang::files::read_named_file(path)?)
}

/// [`load_file`] as the language's loaders take it (their errors are
/// text, placed in the pipe's message).
pub fn load_file_text(path: &str) -> Result<String, String> {
    load_file(path).map_err(|e| e.to_string())
}

/// Why a pipe of a configuration cannot be built.
#[derive(Debug, thiserror::Error)]
#[error("pipe {pipe}: {error}")]
pub struct PipeError {
    /// The pipe.
    pub pipe: u32,
    /// Why: its parameters, or a file it names.
    pub error: pipelab_engine::config::ConfigError,
}

/// Builds every pipe of `cfg` into its engine configuration, reading the
/// files pipes name with [`load_file`]: what [`ControlOnly`] and host
/// mode check before they run a configuration.
pub fn check_pipes(cfg: &Config) -> Result<(), PipeError> {
    for (&pipe, spec) in &cfg.pipes {
        spec.to_config_with(&mut load_file_text)
            .map_err(|error| PipeError { pipe, error })?;
    }
    Ok(())
}

/// No packets: configurations are checked and kept.
#[derive(Debug, Default)]
pub struct ControlOnly {
    applied: u64,
}

impl Plane for ControlOnly {
    fn preparer(&self) -> Preparer {
        Arc::new(|cfg: &Config| {
            check_pipes(cfg)?;
            Ok(Prepared::new(()))
        })
    }

    fn commit(&mut self, prepared: Prepared) -> Result<(), PlaneError> {
        prepared.take::<()>()?;
        self.applied += 1;
        Ok(())
    }

    fn stats(&self) -> serde_json::Value {
        serde_json::json!({ "plane": "none", "applied": self.applied })
    }

    fn stop(self: Box<Self>) -> Result<(), PlaneError> {
        Ok(())
    }

    fn mode(&self) -> &'static str {
        "none"
    }
}
