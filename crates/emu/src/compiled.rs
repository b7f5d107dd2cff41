//! A spec checked and compiled, ready to apply.
//!
//! [`Compiled::new`] does everything that can fail or take time without
//! touching a running emulation: it checks that every reference of the
//! spec resolves and compiles its rules into a [`Classifier`]. A live
//! emulation does this on its control thread, so a bad request is refused
//! before the data plane sees it, and [`crate::Emulation::apply`], on the
//! data-plane thread, cannot fail.

use crate::spec::{Egress, Spec};
use pipelab_classify::{Classifier, Context};
use pipelab_lang::Action;

/// The most ports an emulation has: a packet carries the port it came
/// in by and the one it leaves by as 16-bit numbers (a live topology has
/// a port per VN: at most 65,536 VNs).
pub const MAX_PORTS: usize = 1 << 16;

/// A reference of a spec that does not resolve.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// A rule sends to a pipe the spec does not have.
    #[error("rule {rule}: pipe {pipe} is not configured")]
    RulePipe {
        /// The rule.
        rule: u32,
        /// The pipe.
        pipe: u32,
    },
    /// A rule sends to a flow queue the spec does not have.
    #[error("rule {rule}: queue {queue} is not configured")]
    RuleQueue {
        /// The rule.
        rule: u32,
        /// The queue.
        queue: u32,
    },
    /// A flow queue's pipe does not exist or has no scheduler.
    #[error("queue {queue}: pipe {pipe} is not configured with a scheduler")]
    QueuePipe {
        /// The queue.
        queue: u32,
        /// The pipe.
        pipe: u32,
    },
    /// A port leaves by a port that does not exist, or by destination
    /// without paths covering it.
    #[error("port {port} ({name}): {reason}")]
    Port {
        /// The port's index.
        port: usize,
        /// Its name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A path crosses a pipe the spec does not have.
    #[error("path from port {src} to port {dst}: pipe {pipe} is not configured")]
    PathPipe {
        /// Source port.
        src: usize,
        /// Destination port.
        dst: usize,
        /// The pipe.
        pipe: u32,
    },
}

/// A spec whose references resolve, with its rules compiled.
#[derive(Debug)]
pub struct Compiled {
    pub(crate) spec: Spec,
    pub(crate) classifier: Classifier,
}

impl Compiled {
    /// Check `spec` and compile its rules, seeding their `prob` streams
    /// from `seed`.
    pub fn new(spec: Spec, seed: u64) -> Result<Compiled, SpecError> {
        check(&spec)?;
        let ctx = Context {
            me: spec.env.me.clone(),
            tables: spec.tables.clone(),
            ifaces: spec.env.ifaces.clone(),
            users: spec.env.users.clone(),
            layer2: spec.env.layer2,
        };
        let classifier =
            Classifier::with_context(spec.rules.iter().map(|(n, r)| (*n, r)), &ctx, seed);
        Ok(Compiled { spec, classifier })
    }

    /// The spec.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }
}

fn check(spec: &Spec) -> Result<(), SpecError> {
    for (&rule, r) in &spec.rules {
        match r.action {
            Action::Pipe(pipe) if !spec.pipes.contains_key(&pipe) => {
                return Err(SpecError::RulePipe { rule, pipe })
            }
            Action::Queue(queue) if !spec.queues.contains_key(&queue) => {
                return Err(SpecError::RuleQueue { rule, queue })
            }
            _ => {}
        }
    }
    for (&queue, q) in &spec.queues {
        if spec.pipes.get(&q.pipe).is_none_or(|p| p.sched.is_none()) {
            return Err(SpecError::QueuePipe {
                queue,
                pipe: q.pipe,
            });
        }
    }
    let n_paths = spec.paths.as_ref().map_or(0, |p| p.n);
    if spec.ports.len() > MAX_PORTS {
        return Err(SpecError::Port {
            port: MAX_PORTS,
            name: spec.ports[MAX_PORTS].name.clone(),
            reason: format!(
                "{} ports, more than the {MAX_PORTS} a packet can name (its ports are 16-bit)",
                spec.ports.len()
            ),
        });
    }
    for (i, p) in spec.ports.iter().enumerate() {
        let bad = |reason: String| SpecError::Port {
            port: i,
            name: p.name.clone(),
            reason,
        };
        match p.egress {
            Egress::Port(k) if k as usize >= spec.ports.len() => {
                return Err(bad(format!("leaves by port {k}, which does not exist")))
            }
            Egress::ByDestination if i >= n_paths => {
                return Err(bad("leaves by destination, but no paths start at it".into()))
            }
            _ => {}
        }
    }
    if let Some(paths) = &spec.paths {
        // One bit per pipe number up to the largest: a path's hops are
        // checked in O(1) each (a topology may have millions of hops).
        let top = spec.pipes.keys().next_back().copied().unwrap_or(0) as usize;
        let mut known = vec![false; top + 1];
        for &n in spec.pipes.keys() {
            known[n as usize] = true;
        }
        let ok = |p: &u32| known.get(*p as usize).copied().unwrap_or(false);
        if !paths.hops.iter().all(ok) {
            for (src, dst, h) in paths.iter() {
                if let Some(&pipe) = h.iter().find(|p| !ok(p)) {
                    return Err(SpecError::PathPipe { src, dst, pipe });
                }
            }
        }
    }
    Ok(())
}
