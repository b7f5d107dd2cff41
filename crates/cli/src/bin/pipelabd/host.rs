//! Host mode behind pipelabd: this host's own traffic through the
//! netfilter queue ([`pipelab_modes::host::HostPlane`]), fail-closed while
//! pipelabd is not running. It lives here, beside the binary, because the
//! control crate does not depend on the modes.

use std::sync::Arc;

use pipelab_control::plane::{check_pipes, Plane, PlaneError, Prepared, Preparer};
use pipelab_emu::Compiled;
use pipelab_lang::{Config, IpNet};
use pipelab_modes::host::{HostOptions, HostPlane};

/// Host mode: this host's own traffic.
pub struct Host {
    plane: HostPlane,
}

/// Why host mode could not start or stop.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The table, the queue or the runner could not be set up.
    #[error("cannot start host mode (nftables table {table}): {source}")]
    Start {
        /// The nftables table.
        table: String,
        /// Why.
        source: std::io::Error,
    },
    /// The plane did not stop cleanly.
    #[error("stopping host mode: {0}")]
    Stop(std::io::Error),
}

impl Host {
    /// Starts the host plane (installs the nftables table and the queue);
    /// `scope` limits it to traffic with peers in these networks (empty:
    /// all of the host's IP traffic).
    pub fn start(opts: HostOptions, scope: &[IpNet]) -> Result<Host, HostError> {
        let table = opts.table.clone();
        let plane = HostPlane::start_scoped(opts, scope)
            .map_err(|source| HostError::Start { table, source })?;
        Ok(Host { plane })
    }
}

impl Plane for Host {
    /// Checks the files pipes name as the daemon reads them (absolute
    /// paths, regular files, within the time budget), then lowers and
    /// compiles: all without the server's lock.
    fn preparer(&self) -> Preparer {
        let seed = self.plane.seed();
        Arc::new(move |cfg: &Config| {
            check_pipes(cfg)?;
            Ok(Prepared::new(HostPlane::compile(cfg, seed)?))
        })
    }

    fn commit(&mut self, prepared: Prepared) -> Result<(), PlaneError> {
        self.plane.apply_compiled(prepared.take::<Compiled>()?)?;
        Ok(())
    }

    fn stats(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self.plane.stats()).unwrap_or_default();
        v["plane"] = serde_json::Value::from("host");
        v
    }

    fn stop(self: Box<Self>) -> Result<(), PlaneError> {
        self.plane.stop().map_err(HostError::Stop)?;
        Ok(())
    }

    fn mode(&self) -> &'static str {
        "host"
    }
}
