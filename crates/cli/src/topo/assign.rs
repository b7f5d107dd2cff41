//! `pipelab topo assign`: ModelNet's Assignment phase (§2.1) on the
//! command line: distill, map the pipes to K cores, and report the load
//! of each core and how many routes cross between cores.

use clap::builder::RangedU64ValueParser;
use clap::{Args, ValueEnum};
use pipelab_topo::assign::{greedy_k_clusters, partition_balanced, Assignment};
use pipelab_topo::{Distilled, Topology};
use std::path::PathBuf;

/// The most cores `topo assign` takes.
pub const MAX_CORES: u64 = 1024;

/// Assignment methods.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// ModelNet's greedy k-clusters.
    Greedy,
    /// Greedy k-clusters refined to cut fewer route hand-offs, within 5 %
    /// of the mean load.
    Partition,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Greedy => "greedy",
            Method::Partition => "partition",
        }
    }

    fn assign(self, d: &Distilled, cores: usize, seed: u64) -> Assignment {
        match self {
            Method::Greedy => greedy_k_clusters(d, cores, seed),
            Method::Partition => partition_balanced(d, cores, seed),
        }
    }
}

/// `pipelab topo assign` arguments.
#[derive(Args, Debug)]
pub struct AssignArgs {
    /// The topology file: `.gml`, `.graphml` or `.toml`.
    pub file: PathBuf,
    /// Cores to spread the pipes over.
    #[arg(long, allow_negative_numbers = true, value_name = "K",
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_CORES))]
    pub cores: usize,
    /// hop-by-hop, end-to-end, last-mile, 'walk-in K', 'walk-out K'.
    #[arg(long, default_value = "hop-by-hop")]
    pub mode: String,
    /// What routes minimise.
    #[arg(long, value_enum, default_value = "delay")]
    pub metric: super::MetricArg,
    /// Symmetric routes, or each direction on its own.
    #[arg(long, value_enum, default_value = "symmetric")]
    pub routes: super::RoutesArg,
    /// One method (default: both, greedy first).
    #[arg(long, value_enum)]
    pub method: Option<Method>,
    /// Seed of the random start clusters.
    #[arg(long, allow_negative_numbers = true, default_value_t = 1)]
    pub seed: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// One method's result.
struct Row {
    method: Method,
    loads: Vec<usize>,
    cross: f64,
    handoffs: u64,
}

/// Why `pipelab topo assign` failed.
#[derive(Debug, thiserror::Error)]
pub enum AssignError {
    /// The topology cannot be distilled (`--mode`, or the topology).
    #[error(transparent)]
    Topo(Box<super::TopoError>),
    /// The JSON report cannot be written.
    #[error("cannot write JSON: {0}")]
    Json(serde_json::Error),
}

impl From<super::TopoError> for AssignError {
    fn from(e: super::TopoError) -> AssignError {
        AssignError::Topo(Box::new(e))
    }
}

/// Run `pipelab topo assign` on an already loaded topology.
pub fn run(topo: &Topology, a: &AssignArgs) -> Result<String, AssignError> {
    let mode: pipelab_topo::Mode = a.mode.parse().map_err(|error| super::TopoError::Mode {
        flag: "--mode",
        value: a.mode.clone(),
        error,
    })?;
    let d = super::distill(topo, mode, a.metric.into(), a.routes.into(), &a.file)?;
    let methods = match a.method {
        Some(m) => vec![m],
        None => vec![Method::Greedy, Method::Partition],
    };
    let rows: Vec<Row> = methods
        .into_iter()
        .map(|m| {
            let x = m.assign(&d, a.cores, a.seed);
            Row {
                method: m,
                loads: x.loads(),
                cross: x.cross_fraction(&d.routes),
                handoffs: x.handoffs(&d.routes),
            }
        })
        .collect();
    let st = d.stats();
    if a.json {
        let v = serde_json::json!({
            "file": a.file.display().to_string(),
            "distillation": d.mode.to_string(),
            "metric": d.metric.to_string(),
            "routing": d.routing.to_string(),
            "cores": a.cores,
            "seed": a.seed,
            "pipes": st.pipes,
            "pipe_pairs": st.links,
            "routes": st.routes,
            "methods": rows.iter().map(|r| serde_json::json!({
                "method": r.method.name(),
                "loads": r.loads,
                "cross_fraction": r.cross,
                "handoffs": r.handoffs,
            })).collect::<Vec<_>>(),
        });
        return serde_json::to_string_pretty(&v)
            .map(|s| s + "\n")
            .map_err(AssignError::Json);
    }
    let routing = match d.routing {
        pipelab_topo::Routes::Symmetric => String::new(),
        r => format!(", {r}"),
    };
    let mut out = format!(
        "distillation: {} (routes by {}{}), {} pipes ({} pairs), {} routes\ncores: {}, seed {}\n",
        d.mode, d.metric, routing, st.pipes, st.links, st.routes, a.cores, a.seed
    );
    let loads: Vec<String> = rows
        .iter()
        .map(|r| {
            r.loads
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let w = loads
        .iter()
        .map(String::len)
        .chain([18])
        .max()
        .unwrap_or(18);
    out += &format!(
        "{:<10} {:<w$}  {:>11}  {:>9}\n",
        "method", "pipe pairs by core", "cross-core", "hand-offs"
    );
    for (r, l) in rows.iter().zip(&loads) {
        out += &format!(
            "{:<10} {:<w$}  {:>11.4}  {:>9}\n",
            r.method.name(),
            l,
            r.cross,
            r.handoffs
        );
    }
    out += "(cross-core: share of routes whose pipes are on more than one core; hand-offs: core changes summed over all routes)\n";
    Ok(out)
}
