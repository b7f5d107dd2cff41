//! The data plane behind the daemon.
//!
//! [`Plane`] is what the daemon needs of a data plane: apply a whole
//! configuration atomically, report counters, stop. Two exist:
//!
//! * [`ControlOnly`] (`pipelabd --plane none`): no packets; every pipe is
//!   still compiled into its engine configuration, so that what is
//!   committed would run;
//! * host mode (`pipelabd --plane host`, the default): this host's own
//!   traffic through the netfilter queue, fail-closed while the daemon is
//!   not running; it lives beside the `pipelabd` binary (crate `pipelab`),
//!   since this crate does not depend on the modes.

use pipelab_lang::Config;

/// A data plane the daemon drives.
pub trait Plane: Send {
    /// Applies `cfg` atomically; on error nothing changed.
    fn apply(&mut self, cfg: &Config) -> Result<(), String>;
    /// Counters, as JSON.
    fn stats(&self) -> serde_json::Value;
    /// Stops the plane and removes what it installed.
    fn stop(self: Box<Self>) -> Result<(), String>;
    /// `none` or `host`.
    fn name(&self) -> &'static str;
}

/// Files named by pipes (`distribution file:PATH`, `loss trace:PATH`) are
/// read by the daemon; only root's pipes may name them, and only by
/// absolute path.
pub fn load_file(path: &str) -> Result<String, String> {
    if !path.starts_with('/') {
        return Err(format!("{path}: the daemon needs an absolute path"));
    }
    std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))
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

    fn name(&self) -> &'static str {
        "none"
    }
}
