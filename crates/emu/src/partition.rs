//! One emulation split over workers (ModelNet's cores, §2.2): each
//! worker runs an [`crate::Emulation`] of the same spec but owns only
//! some of its pipes; a packet whose next pipe another worker owns leaves
//! this worker as a [`Handoff`] and enters the owner's emulation with
//! [`crate::Emulation::resume`], at the stage it had reached.
//!
//! * **Who owns what.** A [`Partition`] maps pipe numbers to workers
//!   (the driver decides: a shell's or bridge's direction per worker, a
//!   topology's pipes from `topo assign`'s partitioner); a pipe it does
//!   not name belongs to worker 0. A flow queue belongs to its pipe's
//!   owner.
//! * **Where a hand-off happens.** When a rule sends a packet to a pipe
//!   or queue of another worker (at its arrival, or when it re-enters the
//!   rules after a pipe with `one_pass 0`); and on a topology path, where
//!   two consecutive hops have different owners: a path is cut into
//!   *segments*, maximal runs of hops of one owner, each an engine route
//!   of its owner's engine, and the packet crosses one segment per
//!   worker visit.
//! * **Time.** A hand-off carries the instant the packet left its last
//!   stage; the receiving worker enqueues it then, or at its own engine's
//!   now if that is later (the hand-off's latency, some microseconds,
//!   then adds to the packet's delay, and is measured as lateness).
//! * **Order.** The emulation hands off packets in the order they leave
//!   their stage, the driver carries them in order (one FIFO ring per
//!   ordered pair of workers), and a flow's packets all take the same
//!   way, so a flow is never reordered by a hand-off.
//!
//! Nothing here reads a clock or touches a frame: the driver moves the
//! descriptor and the buffer it names.

use pipelab_engine::{Instant, Packet};
use std::collections::BTreeMap;

/// Which worker owns which pipe, as seen by one worker.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Partition {
    /// This worker.
    pub worker: u16,
    /// Workers in all.
    pub workers: u16,
    /// Pipe number → owning worker (absent: worker 0).
    pub owners: BTreeMap<u32, u16>,
    /// The owners of the pipes numbered from `base` (the configuration's
    /// from 0, a topology's from its base), by index: a look-up per
    /// packet and hop costs one load, not a tree search.
    dense: [(u32, Vec<u16>); 2],
}

impl Partition {
    /// Worker `worker` of `workers`, with pipes owned as `owners` says.
    pub fn new(worker: u16, workers: u16, owners: BTreeMap<u32, u16>) -> Partition {
        let table = |range: std::ops::Range<u32>| {
            let base = range.start;
            let top = owners
                .range(range)
                .next_back()
                .map_or(base, |(&n, _)| n + 1);
            let mut v = vec![0u16; (top - base) as usize];
            for (&n, &w) in owners.range(base..top) {
                v[(n - base) as usize] = w;
            }
            (base, v)
        };
        let dense = [
            table(0..crate::spec::TOPO_PIPE_BASE),
            table(crate::spec::TOPO_PIPE_BASE..u32::MAX),
        ];
        Partition {
            worker,
            workers,
            owners,
            dense,
        }
    }

    /// The worker that owns pipe `n`.
    #[inline]
    pub fn owner(&self, n: u32) -> u16 {
        let (base, v) = &self.dense[usize::from(n >= crate::spec::TOPO_PIPE_BASE)];
        v.get(n.wrapping_sub(*base) as usize).copied().unwrap_or(0)
    }

    /// Whether this worker owns pipe `n`.
    #[inline]
    pub fn owns(&self, n: u32) -> bool {
        self.owner(n) == self.worker
    }
}

/// Where a handed-off packet goes on in the receiving worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Into pipe `n` (a rule's `pipe n`).
    Pipe(u32),
    /// Into flow queue `n` (a rule's `queue n`).
    Queue(u32),
    /// Along its topology path, from hop `hop` (its port pair is in the
    /// packet's stage).
    Path {
        /// The index in the path of the first hop to cross.
        hop: u16,
    },
}

/// A packet leaving one worker for another. The descriptor's `stage`
/// holds its ports, the rule to resume after and its passes; `buf` still
/// names the sending worker's buffer until the driver moves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handoff {
    /// The receiving worker.
    pub to: u16,
    /// The descriptor.
    pub pkt: Packet,
    /// When it left its last stage (when it is due at the next).
    pub at: Instant,
    /// Where it goes on.
    pub target: Target,
}
