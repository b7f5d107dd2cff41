//! # pipelab-topo: ModelNet-style topology emulation
//!
//! ModelNet (Vahdat et al., OSDI 2002) emulates a whole target topology by
//! routing every packet through a chain of pipes. This crate does the
//! offline half of its five phases (§2.1) and hands the result to the pure
//! engine:
//!
//! * **Create** ([`model`], [`gml`], [`graphml`], [`native`], [`gen`]):
//!   a graph of clients (VNs), stubs and transits joined by bidirectional
//!   links with bandwidth, delay, loss and queue; read from GML
//!   (ModelNet's, and Shadow's network graphs), GraphML (NetworkX's, with
//!   Mininet's link keys: [`dialects`]) or TOML, or generated (ring, star,
//!   dumbbell, tree, GT-ITM-style transit-stub, Waxman).
//! * **Distill** ([`mod@distill`], §4.1): hop-by-hop, end-to-end, walk-in,
//!   walk-out and last-mile pipe topologies, with their routes.
//! * **Route** ([`paths`], [`route`], §2.2, §4.3): shortest paths by
//!   delay or hops between all VN pairs as a routing matrix of pipe lists,
//!   or a route cache with on-demand Dijkstra; link and node faults with
//!   recomputation. `route` depends on `distill`, which depends on
//!   `paths` (shortest paths, the matrix, faults), never the reverse.
//! * **Assign** ([`assign`], §2.1): pipes to cores by ModelNet's greedy
//!   k-clusters, or by a balanced partitioner that cuts fewer routes.
//! * **Control** ([`command`], [`linkset`]): one typed grammar for the
//!   topology commands (`link A B down|up|set ...`, `node N down|up`,
//!   `cross ...`, `every ...`) shared by the control socket of a live
//!   topology, experiment files and the CLI; link attributes in files and
//!   commands are read by the command language's unit layer
//!   ([`pipelab_lang::units`]), so a value is accepted or refused the same
//!   way everywhere.
//! * **Run** ([`script`]): experiment files of timed commands for
//!   `pipelab topo run`.
//! * **Bind** ([`mod@lower`]): lower a distilled topology to the one
//!   emulation spec ([`pipelab_emu::Spec`]: its pipes, and the path of
//!   every VN pair), so packets cross it by reference through the same
//!   emulation as every other mode, in virtual or real time (§2.2).
//!
//! What it deliberately does not do: I/O (callers pass text in), clocks,
//! namespaces (the live mode binds VNs to them); packets of cross traffic
//! (its load is modelled, [`cross`]). Depends on the engine for queue
//! bounds and seeded generators; on the command language (`pipelab-lang`)
//! for parsing every value and for its lexer and errors; on `pipelab-emu`
//! for the spec; on petgraph for graphs and shortest paths; on serde and
//! toml for the native format; on roxmltree for GraphML.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod assign;
pub mod attrs;
pub mod command;
pub mod cross;
pub mod dialects;
pub mod distill;
pub mod gen;
pub mod gml;
pub mod graphml;
pub mod linkset;
pub mod lower;
pub mod model;
pub mod native;
pub mod paths;
pub mod route;
pub mod script;

pub use assign::{greedy_k_clusters, partition_balanced, Assignment};
pub use command::{parse_command, CommandError, LinkAction, Resolved, TopoCommand};
pub use distill::{distill, distill_report, distill_unrouted, Distilled, Mode, PipeSpec, Stats};
pub use gml::{parse_gml, GmlError};
pub use graphml::parse_graphml;
pub use linkset::{LinkAttr, LinkSet, Setting};
pub use lower::{lower, lower_on_demand, pipe_config, pipe_number};
pub use model::{Link, LinkAttrs, LinkClass, Node, Role, RoleAttrs, Topology};
pub use native::{parse_toml, to_toml};
pub use route::{Metric, Network, PathCache, RouteCache, RouteMatrix, Router, Routes};

use core::fmt;

/// Errors of this crate (GML errors have their own type, [`GmlError`]).
#[derive(Clone, Debug, PartialEq)]
pub enum TopoError {
    /// The topology or a parameter breaks an invariant; says which.
    Invalid(String),
    /// No node with this id.
    NoSuchNode(u64),
    /// No link between these node ids.
    NoSuchLink(u64, u64),
    /// A pipe's attributes were refused by the engine.
    Engine(String),
}

impl fmt::Display for TopoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopoError::Invalid(m) => f.write_str(m),
            TopoError::NoSuchNode(n) => write!(f, "no node with id {n}"),
            TopoError::NoSuchLink(a, b) => write!(f, "no link between nodes {a} and {b}"),
            TopoError::Engine(m) => write!(f, "engine: {m}"),
        }
    }
}

impl std::error::Error for TopoError {}

impl From<GmlError> for TopoError {
    fn from(e: GmlError) -> Self {
        TopoError::Invalid(e.to_string())
    }
}
