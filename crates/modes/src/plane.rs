//! Every live mode served by the one control protocol.
//!
//! A running shell, bridge or topology registers under a name
//! ([`pipelab_control::registry`]) and serves the same protocol as
//! pipelabd on its socket, with [`Access::Owner`]: the user who started
//! it (the invoking user under `sudo`) and root may change it, anyone
//! else who can connect may only read. [`ModePlane`] is the
//! [`Plane`] the server drives: it lowers each configuration the server
//! commits with the mode's own port plan and names (a closure the mode
//! gives), compiles it on the requesting connection's thread, without
//! the server's lock (its [`Preparer`]), and applies it to the
//! [`LiveRunner`] between two runner steps (its commit), so a bad
//! request changes nothing, a slow file delays no other client, and a
//! good request keeps every queued packet.

use crate::error::ModeError;
use crate::live::LiveRunner;
use pipelab_control::{
    registry, Access, Effect, EmulationInfo, Plane, PlaneError, Prepared, Preparer, ServerHandle,
};
use pipelab_emu::{Compiled, Spec};
use pipelab_lang::Config;
use std::sync::Arc;

/// Lowers a configuration to a mode's spec (from any thread, several at
/// once).
pub type Lower = Box<dyn Fn(&Config) -> Result<Spec, ModeError> + Send + Sync>;

/// A live mode as a plane of the control protocol.
pub struct ModePlane {
    mode: &'static str,
    live: Arc<LiveRunner>,
    lower: Arc<Lower>,
    seed: u64,
}

impl ModePlane {
    /// The plane of `live`, a `mode` whose configurations `lower` turns
    /// into specs, compiled with `seed`.
    pub fn new(mode: &'static str, live: Arc<LiveRunner>, lower: Lower, seed: u64) -> ModePlane {
        ModePlane {
            mode,
            live,
            lower: Arc::new(lower),
            seed,
        }
    }
}

impl Plane for ModePlane {
    fn preparer(&self) -> Preparer {
        let (lower, seed) = (Arc::clone(&self.lower), self.seed);
        Arc::new(move |cfg: &Config| {
            let spec = lower(cfg)?;
            let c = Compiled::new(spec, seed).map_err(ModeError::from)?;
            Ok(Prepared::new(c))
        })
    }

    fn commit(&mut self, prepared: Prepared) -> Result<(), PlaneError> {
        let c = prepared.take::<Compiled>()?;
        self.live.apply(c)?;
        Ok(())
    }

    fn stats(&self) -> serde_json::Value {
        let mode = self.mode;
        crate::workers::live_totals(&self.live)
            .map(|t| crate::workers::stats_json(mode, &t))
            .unwrap_or_else(|e| serde_json::json!({ "plane": mode, "error": e.to_string() }))
    }

    fn stop(self: Box<Self>) -> Result<(), PlaneError> {
        // The mode stops its runner itself (it drains it first).
        Ok(())
    }

    fn mode(&self) -> &'static str {
        self.mode
    }

    fn check_command(&self, line: &str) -> Option<Result<Effect, PlaneError>> {
        check_pipe_fault(&self.live, line)
    }

    fn command(&mut self, line: &str) -> Option<Result<String, PlaneError>> {
        run_pipe_fault(&self.live, line)
    }
}

/// [`Plane::check_command`] for the black-hole commands
/// ([`crate::fault`]): `None` if `line` is not one; an error if it is
/// malformed or names a pipe the emulation does not have.
pub fn check_pipe_fault(live: &LiveRunner, line: &str) -> Option<Result<Effect, PlaneError>> {
    let f = match crate::fault::parse_pipe_fault(line)? {
        Ok(f) => f,
        Err(e) => return Some(Err(ModeError::Command(e.to_string()).into())),
    };
    Some(match crate::fault::exists(live, f.pipe()) {
        Ok(true) => Ok(Effect::Change),
        Ok(false) => Err(ModeError::Command(format!("no pipe {}", f.pipe())).into()),
        Err(e) => Err(e.into()),
    })
}

/// [`Plane::command`] for the black-hole commands ([`crate::fault`]).
pub fn run_pipe_fault(live: &LiveRunner, line: &str) -> Option<Result<String, PlaneError>> {
    let f = match crate::fault::parse_pipe_fault(line)? {
        Ok(f) => f,
        Err(e) => return Some(Err(ModeError::Command(e.to_string()).into())),
    };
    Some(crate::fault::run(live, f).map_err(Into::into))
}

/// The user an emulation belongs to: the invoking user when run through
/// `sudo` by root (`SUDO_UID`), else the process's real user.
pub fn invoking_user() -> u32 {
    let uid = nix::unistd::getuid().as_raw();
    if uid == 0 {
        if let Some(u) = std::env::var("SUDO_UID")
            .ok()
            .and_then(|s| s.parse::<u32>().ok())
        {
            return u;
        }
    }
    uid
}

/// A name made of `words` that the registry accepts: characters other
/// than letters, digits, `_`, `.` and `-` become `_`, at most 64.
pub fn default_name(words: &[&str]) -> String {
    let mut s: String = words
        .join("-")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    s.truncate(registry::MAX_NAME);
    s
}

/// A registration under `name` for a `mode` owned by the invoking user;
/// made before any thread starts (the socket is created under a
/// process-wide umask).
pub fn register(name: &str, mode: &str) -> Result<pipelab_control::Registration, ModeError> {
    let mut info = EmulationInfo::new(name, mode);
    info.owner = invoking_user();
    Ok(registry::register(info)?)
}

/// [`register`], written down in `record` first: after a crash, the next
/// pipelab command removes the entry if it is still the dead process's.
pub fn register_recorded(
    record: &mut crate::ledger::Record,
    name: &str,
    mode: &str,
) -> Result<pipelab_control::Registration, ModeError> {
    record.record(crate::ledger::Change::Registration {
        dir: registry::Registry::new().dir().to_path_buf(),
        name: name.to_string(),
    })?;
    register(name, mode)
}

/// Serve `reg` with `plane`, starting from `initial`, owner access.
pub fn serve(
    reg: pipelab_control::Registration,
    plane: Box<dyn Plane>,
    initial: Config,
) -> Result<ServerHandle, ModeError> {
    let owner = reg.info().owner;
    Ok(pipelab_control::serve(
        reg,
        plane,
        initial,
        Access::Owner(owner),
        None,
    )?)
}
