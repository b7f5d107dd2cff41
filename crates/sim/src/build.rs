//! Building an engine from an applied configuration: pipes (with their
//! scheduler and mask), flow queues, and the routes and queue ids the
//! rules' decisions are steered to. Shared by `pipelab sim` and the live
//! commands, so a configuration means the same thing in virtual time and
//! on live packets.

use pipelab_engine::engine::{EngineOptions, QueueId};
use pipelab_engine::mask::{max_instances, DEFAULT_BUCKETS};
use pipelab_engine::sched::SchedConfig;
use pipelab_engine::{Engine, PipeIdx, RouteId};
use pipelab_lang::{ApplyError, Config};
use std::collections::BTreeMap;
use std::fmt;

/// An engine built from a configuration, and how to reach its objects.
pub struct Built {
    /// The engine, every pipe and queue added.
    pub engine: Engine,
    /// The route of each pipe, by pipe number (`Decision::Pipe(n)`).
    pub routes: BTreeMap<u32, RouteId>,
    /// Each pipe's number and index, in number order.
    pub pipes: Vec<(u32, PipeIdx)>,
    /// Each flow queue's id, by queue number (`Decision::Queue(n)`).
    pub queues: BTreeMap<u32, QueueId>,
}

/// Why a configuration could not be built into an engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// A pipe's parameters (or its scheduler or mask) are invalid.
    Pipe {
        /// The pipe's number.
        id: u32,
        /// What is wrong.
        reason: String,
    },
    /// The configuration uses something the engine cannot run yet.
    Unsupported(String),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Pipe { id, reason } => write!(f, "pipe {id}: {reason}"),
            BuildError::Unsupported(s) => write!(f, "{s}"),
        }
    }
}

impl std::error::Error for BuildError {}

/// Build an engine with `opts` from `config`: every pipe (a scheduled pipe
/// when it has a `sched` or feeds flow queues; masked when it has a
/// `mask`), then every flow queue on its pipe. Files named by pipes are
/// read with `load` (a path as written to its text, or why it cannot be
/// read). Nothing is half-built: any error returns before the engine is
/// handed out.
pub fn build_engine(
    config: &Config,
    opts: EngineOptions,
    load: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<Built, BuildError> {
    if let Some((n, q)) = config.queues.iter().find(|(_, q)| q.aqm.is_some()) {
        return Err(BuildError::Unsupported(format!(
            "queue {n}: '{}': queue management on a flow queue is not supported yet (give it to the pipe)",
            q.aqm.as_ref().map(ToString::to_string).unwrap_or_default()
        )));
    }
    if let Some(e) = config.check_references().into_iter().find(|e| {
        matches!(
            e,
            ApplyError::SchedWithoutPipe { .. } | ApplyError::QueueTargetNotConfigured { .. }
        )
    }) {
        return Err(BuildError::Unsupported(e.to_string()));
    }
    let mut engine = Engine::new(opts);
    let mut routes = BTreeMap::new();
    let mut pipes: Vec<(u32, PipeIdx)> = Vec::new();
    for (&id, spec) in &config.pipes {
        let cfg = spec.to_config_with(load).map_err(|e| BuildError::Pipe {
            id,
            reason: e.to_string(),
        })?;
        let sched = match config.scheds.get(&id) {
            Some(s) => Some(s.to_config().map_err(|e| BuildError::Pipe {
                id,
                reason: format!("sched {id}: {e}"),
            })?),
            // A pipe that feeds queues has ipfw's implicit FIFO scheduler.
            None => config
                .queues
                .values()
                .any(|q| q.target.number() == id)
                .then(SchedConfig::default),
        };
        let idx = match sched {
            Some(s) => engine.add_scheduled_pipe(cfg, s, id as u64),
            None => engine.add_pipe_with_stage(cfg, id as u64),
        };
        if let Some(m) = &spec.mask {
            let max = max_instances(spec.buckets.unwrap_or(DEFAULT_BUCKETS));
            engine
                .set_pipe_mask(idx, m.to_mask(), max)
                .map_err(|e| BuildError::Pipe {
                    id,
                    reason: e.to_string(),
                })?;
        }
        let route = engine.pipe_route(idx).ok_or_else(|| BuildError::Pipe {
            id,
            reason: "internal: no route".into(),
        })?;
        routes.insert(id, route);
        pipes.push((id, idx));
    }
    let mut queues = BTreeMap::new();
    for (&n, q) in &config.queues {
        let target = q.target.number();
        let unsupported = |reason: String| BuildError::Unsupported(format!("queue {n}: {reason}"));
        let Some(&(_, idx)) = pipes.iter().find(|(id, _)| *id == target) else {
            return Err(unsupported(format!("{} is not configured", q.target)));
        };
        let spec = q.to_flow_spec().map_err(|e| unsupported(e.to_string()))?;
        let max = max_instances(q.buckets.unwrap_or(DEFAULT_BUCKETS));
        let id = engine
            .add_queue(idx, spec, q.mask.map(|m| m.to_mask()), max)
            .map_err(|e| unsupported(e.to_string()))?;
        queues.insert(n, id);
    }
    Ok(Built {
        engine,
        routes,
        pipes,
        queues,
    })
}
