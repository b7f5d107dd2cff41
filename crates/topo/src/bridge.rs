//! The Binding phase's last step (ModelNet §2.1, §2.2): install a
//! distilled topology's pipes and routes in a [`pipelab_engine::Engine`],
//! so packets cross the emulated topology by reference, in virtual time
//! (tests, `pipelab sim`) or real time.
//!
//! Pipe `i` of the [`Distilled`] becomes engine pipe `i`, its random
//! stages seeded from stage id `i` (stable however many pipes there are).
//! Every VN pair with a route gets an engine route.

use std::collections::BTreeMap;

use pipelab_engine::models::{LossConfig, Probability, UniformLoss};
use pipelab_engine::{Engine, EngineOptions, PipeConfig, PipeIdx, RouteId};

use crate::distill::{Distilled, PipeSpec};
use crate::TopoError;

/// The engine ids of a distilled topology's pipes and routes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineRoutes {
    /// Engine pipe of each distilled pipe.
    pub pipes: Vec<PipeIdx>,
    /// Engine route of each VN pair `(src, dst)` (topology node indices).
    pub routes: BTreeMap<(usize, usize), RouteId>,
}

/// The engine configuration of one distilled pipe.
pub fn pipe_config(p: &PipeSpec) -> Result<PipeConfig, TopoError> {
    let cfg =
        PipeConfig::new(p.bw, p.delay, p.queue).map_err(|e| TopoError::Engine(e.to_string()))?;
    if p.loss > 0.0 {
        let prob = Probability::new(p.loss).map_err(|e| TopoError::Engine(format!("{e:?}")))?;
        Ok(cfg.with_loss(LossConfig::Uniform(UniformLoss::new(
            prob,
            Probability::ZERO,
        ))))
    } else {
        Ok(cfg)
    }
}

/// Build an engine holding `d`'s pipes and routes.
pub fn build_engine(
    d: &Distilled,
    opts: EngineOptions,
) -> Result<(Engine, EngineRoutes), TopoError> {
    let mut engine = Engine::new(opts);
    let mut out = EngineRoutes::default();
    for (i, p) in d.pipes.iter().enumerate() {
        out.pipes
            .push(engine.add_pipe_with_stage(pipe_config(p)?, i as u64));
    }
    let mut hops = Vec::new();
    for (s, t, r) in d.routes.iter() {
        hops.clear();
        for &p in r {
            let idx = out
                .pipes
                .get(p as usize)
                .ok_or_else(|| TopoError::Engine(format!("route uses missing pipe {p}")))?;
            hops.push(*idx);
        }
        let id = engine
            .add_route(&hops)
            .map_err(|e| TopoError::Engine(e.to_string()))?;
        out.routes.insert((s, t), id);
    }
    Ok((engine, out))
}
