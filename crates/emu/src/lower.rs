//! Lowering a configuration of the language to a [`Spec`].
//!
//! [`lower_config`] turns a [`Config`] (commands applied, checked) into
//! engine configurations: each pipe's [`PipeConfig`](pipelab_engine::PipeConfig) (reading the files it
//! names through a loader), its scheduler (`sched N`, or ipfw's implicit
//! FIFO when flow queues feed it), its mask (on the pipe, or `sched N
//! config mask`, which in dummynet masks the scheduler's instances and so
//! the pipe's), each flow queue's [`FlowSpec`](pipelab_engine::FlowSpec) and mask, and the rules,
//! tables and `one_pass` as they are. The port plan and a topology's
//! paths are the mode's to add.

use crate::spec::{MaskDef, PipeDef, QueueDef, Spec};
use pipelab_engine::mask::{max_instances, DEFAULT_BUCKETS};
use pipelab_engine::sched::SchedConfig;
use pipelab_lang::{ApplyError, Config};
use std::collections::BTreeMap;

/// Why a configuration cannot be lowered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LowerError {
    /// A pipe's parameters are invalid, or a file it names cannot be read.
    #[error("pipe {id}: {reason}")]
    Pipe {
        /// The pipe's number.
        id: u32,
        /// What is wrong.
        reason: String,
    },
    /// A scheduler's parameters are invalid.
    #[error("sched {id}: {reason}")]
    Sched {
        /// The scheduler's number.
        id: u32,
        /// What is wrong.
        reason: String,
    },
    /// A flow queue's parameters are invalid.
    #[error("queue {id}: {reason}")]
    Queue {
        /// The queue's number.
        id: u32,
        /// What is wrong.
        reason: String,
    },
    /// A reference that does not resolve (a scheduler without its pipe, a
    /// queue whose pipe is not configured).
    #[error("{0}")]
    Reference(ApplyError),
}

/// A loader for the files pipes name: a path as written to its text, or
/// why it cannot be read.
pub type Loader<'a> = &'a mut dyn FnMut(&str) -> Result<String, String>;

/// An owned loader, to hand to a mode that lowers later (on other
/// threads, several at once: a control server prepares configurations
/// on the requesting connections' threads).
pub type FileLoader = Box<dyn Fn(&str) -> Result<String, String> + Send + Sync>;

/// Lower `config` to a spec with no ports (see the module documentation).
/// Nothing is half-done: any error returns before a spec exists.
pub fn lower_config(config: &Config, load: Loader<'_>) -> Result<Spec, LowerError> {
    if let Some(e) = config.check_references().into_iter().find(|e| {
        matches!(
            e,
            ApplyError::SchedWithoutPipe { .. } | ApplyError::QueueTargetNotConfigured { .. }
        )
    }) {
        return Err(LowerError::Reference(e));
    }
    let mut pipes = BTreeMap::new();
    for (&id, spec) in &config.pipes {
        let cfg = spec.to_config_with(load).map_err(|e| LowerError::Pipe {
            id,
            reason: e.to_string(),
        })?;
        let sched = match config.scheds.get(&id) {
            Some(s) => Some(s.to_config().map_err(|e| LowerError::Sched {
                id,
                reason: e.to_string(),
            })?),
            // A pipe that feeds queues has ipfw's implicit FIFO scheduler.
            None => config
                .queues
                .values()
                .any(|q| q.target.number() == id)
                .then(SchedConfig::default),
        };
        // dummynet's scheduler mask makes one scheduler instance, with its
        // own link, per masked key: a dynamic pipe.
        let sched_spec = config.scheds.get(&id);
        let (mask, buckets) = match (&spec.mask, sched_spec.and_then(|s| s.mask.as_ref())) {
            (Some(_), Some(_)) => {
                return Err(LowerError::Sched {
                    id,
                    reason: format!(
                        "a mask on both pipe {id} and sched {id}: give it once (they mean the same)"
                    ),
                })
            }
            (Some(m), None) => (Some(m), spec.buckets),
            (None, Some(m)) => (Some(m), sched_spec.and_then(|s| s.buckets)),
            (None, None) => (None, None),
        };
        let mask = mask.map(|m| MaskDef {
            mask: m.to_mask(),
            max_instances: max_instances(buckets.unwrap_or(DEFAULT_BUCKETS)),
        });
        pipes.insert(
            id,
            PipeDef {
                config: cfg,
                sched,
                mask,
                spill: spec.spill,
            },
        );
    }
    let mut queues = BTreeMap::new();
    for (&id, q) in &config.queues {
        let flow = q.to_flow_spec().map_err(|e| LowerError::Queue {
            id,
            reason: e.to_string(),
        })?;
        let mask = q.mask.as_ref().map(|m| MaskDef {
            mask: m.to_mask(),
            max_instances: max_instances(q.buckets.unwrap_or(DEFAULT_BUCKETS)),
        });
        queues.insert(
            id,
            QueueDef {
                pipe: q.target.number(),
                flow,
                mask,
            },
        );
    }
    Ok(Spec {
        pipes,
        queues,
        rules: config.rules.clone(),
        tables: config.tables.clone(),
        one_pass: config.one_pass,
        ..Spec::default()
    })
}

/// A loader that reads files as written (relative to the current
/// directory), with [`pipelab_lang::files::read_named_file`]: regular
/// files only, under its size cap and time budget.
pub fn read_files(path: &str) -> Result<String, String> {
    pipelab_lang::files::read_named_file(path).map_err(|e| e.to_string())
}
