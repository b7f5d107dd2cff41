//! Host mode behind pipelabd: this host's own traffic through the
//! netfilter queue ([`pipelab_modes::host::HostPlane`]), fail-closed while
//! pipelabd is not running. It lives here, beside the binary, because the
//! control crate does not depend on the modes.

use pipelab_control::plane::{load_file, Plane};
use pipelab_lang::{Config, IpNet};
use pipelab_modes::host::{HostOptions, HostPlane};

/// Host mode: this host's own traffic.
pub struct Host {
    plane: HostPlane,
}

impl Host {
    /// Starts the host plane (installs the nftables table and the queue);
    /// `scope` limits it to traffic with peers in these networks (empty:
    /// all of the host's IP traffic).
    pub fn start(opts: HostOptions, scope: &[IpNet]) -> Result<Host, String> {
        let table = opts.table.clone();
        let plane = HostPlane::start_scoped(opts, scope)
            .map_err(|e| format!("cannot start host mode (nftables table {table}): {e}"))?;
        Ok(Host { plane })
    }
}

impl Plane for Host {
    fn apply(&mut self, cfg: &Config) -> Result<(), String> {
        for (id, spec) in &cfg.pipes {
            spec.to_config_with(&mut load_file)
                .map_err(|e| format!("pipe {id}: {e}"))?;
        }
        self.plane.apply(cfg).map_err(|e| e.to_string())
    }

    fn stats(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self.plane.stats()).unwrap_or_default();
        v["plane"] = serde_json::Value::from("host");
        v
    }

    fn stop(self: Box<Self>) -> Result<(), String> {
        self.plane
            .stop()
            .map_err(|e| format!("stopping host mode: {e}"))
    }

    fn mode(&self) -> &'static str {
        "host"
    }
}
