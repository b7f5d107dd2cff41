//! `pipelab topo`: topologies (ModelNet's create and distill phases).

use clap::Subcommand;
use pipelab_topo::distill::{distill_report, Mode};
use std::path::PathBuf;

/// `pipelab topo` subcommands.
#[derive(Subcommand, Debug)]
pub enum TopoCmd {
    /// Distill a topology (GML or TOML) and print the pipe count and the
    /// mean and maximum hops per route.
    Distill {
        /// The topology file: `.gml` (ModelNet's format) or `.toml`.
        file: PathBuf,
        /// hop-by-hop, end-to-end, last-mile, 'walk-in K', 'walk-out K'.
        #[arg(long, default_value = "hop-by-hop")]
        mode: String,
    },
}

/// Run a topo command.
pub fn run(cmd: TopoCmd) -> Result<String, String> {
    match cmd {
        TopoCmd::Distill { file, mode } => {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            let name = file.display().to_string();
            let topo = if name.ends_with(".toml") {
                pipelab_topo::native::parse_toml(&text).map_err(|e| format!("{name}: {e}"))?
            } else {
                pipelab_topo::gml::parse_gml(&text).map_err(|e| format!("{name}: {e}"))?
            };
            let mode: Mode = mode.parse().map_err(|e| format!("--mode '{mode}': {e}"))?;
            Ok(distill_report(&topo, mode))
        }
    }
}
