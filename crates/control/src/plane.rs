//! The data plane behind a control server.
//!
//! [`Plane`] is what the server needs of a data plane: apply a whole
//! configuration atomically, report counters in the format of
//! [`crate#the-stats-format`], stop, and optionally run commands of its
//! own that are not in the language (a topology's `link A B set delay
//! 20ms`). Every live emulation implements it for its own data plane
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

use pipelab_lang::Config;

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
    /// Applies `cfg` atomically; on error nothing changed.
    fn apply(&mut self, cfg: &Config) -> Result<(), String>;
    /// Counters, as JSON, in the format of [`crate#the-stats-format`].
    fn stats(&self) -> serde_json::Value;
    /// Stops the plane and removes what it installed.
    fn stop(self: Box<Self>) -> Result<(), String>;
    /// The kind of emulation: `host`, `none`, `shell`, `bridge`, `topo`
    /// (`pipelab list`'s MODE, the stats' `plane`).
    fn mode(&self) -> &'static str;
    /// Whether `line` (one line, trimmed, without its comment) is one of
    /// the plane's own commands, checked without running it: `None` if
    /// it is not (it is then a command of the language), `Some(Err(why))`
    /// if it is one but cannot run (an unknown node), else what it does.
    /// A plane with commands of its own implements this and
    /// [`Plane::command`].
    fn check_command(&self, line: &str) -> Option<Result<Effect, String>> {
        let _ = line;
        None
    }
    /// Runs one of the plane's own commands (a line
    /// [`Plane::check_command`] accepted): `Some(Ok(output))`,
    /// `Some(Err(why))`, or `None` if the plane does not claim it.
    fn command(&mut self, line: &str) -> Option<Result<String, String>> {
        let _ = line;
        None
    }
    /// Pipes the plane runs besides the configuration's (a topology's
    /// own), counted in `pipelab list`'s PIPES.
    fn own_pipes(&self) -> usize {
        0
    }
}

/// Files named by pipes (`distribution file:PATH`, `loss trace:PATH`) are
/// read by the daemon; only root's pipes may name them, and only by
/// absolute path. They are read with
/// [`pipelab_lang::files::read_named_file`]: a FIFO, a device or a file
/// over its size cap is refused at once, so neither a request nor the
/// restore of a journaled configuration can hang on one.
pub fn load_file(path: &str) -> Result<String, String> {
    if !path.starts_with('/') {
        return Err(format!("{path}: the daemon needs an absolute path"));
    }
    pipelab_lang::files::read_named_file(path).map_err(|e| e.to_string())
}

/// No packets: configurations are checked and kept.
#[derive(Debug, Default)]
pub struct ControlOnly {
    applied: u64,
}

impl Plane for ControlOnly {
    fn apply(&mut self, cfg: &Config) -> Result<(), String> {
        for (id, spec) in &cfg.pipes {
            spec.to_config_with(&mut load_file)
                .map_err(|e| format!("pipe {id}: {e}"))?;
        }
        self.applied += 1;
        Ok(())
    }

    fn stats(&self) -> serde_json::Value {
        serde_json::json!({ "plane": "none", "applied": self.applied })
    }

    fn stop(self: Box<Self>) -> Result<(), String> {
        Ok(())
    }

    fn mode(&self) -> &'static str {
        "none"
    }
}
