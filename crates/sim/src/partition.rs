//! Which pipes each worker of a partitioned run owns (`--workers K`).
//!
//! The pipes of a spec are cut into at most `K` partitions. A packet
//! leaving a pipe goes next to a pipe of its topology path, to the rules
//! (`one_pass 0`, or a rule's pipe before a topology path), or out. Only
//! the first kind of step may cross partitions, and only where it has
//! **lookahead**: the pipe it leaves must hold every packet at least some
//! time `> 0` (its smallest delay, [`PipeConfig::min_delay`]), so the
//! packet's exit instant is known that long before it happens and another
//! worker can be told in time. Every other step is *contracted*: its two
//! pipes stay in one partition. So:
//!
//! * a path's step from pipe `a` to pipe `b` may be cut if `a` is static
//!   (no mask: a dynamic pipe's instances expire on what they hold),
//!   has a delay `> 0`, and does not also carry packets back to the rules;
//! * with continuations in the rules, every pipe a rule sends to (or a
//!   queue's pipe, or every pipe for `pipe tablearg`), and the first pipe
//!   of every path, are one group;
//! * everything else is a pipe of its own.
//!
//! The groups are then given to partitions: as the `hint` says (a
//! topology's balanced assignment, `pipelab_topo::assign`; a group takes
//! the hint of its lowest-numbered pipe that has one), else the largest
//! group first to the least loaded partition. Partitions left empty are
//! dropped, so a configuration whose pipes cannot be cut runs as one
//! partition (and the driver says so). A pipe with a path step into
//! another partition is an *early-exit* pipe, and the run's lookahead is
//! the smallest delay of those pipes.

use pipelab_emu::{Emulation, Spec};
use pipelab_engine::{Duration, PipeConfig};
use pipelab_lang::Action;
use std::collections::{BTreeMap, BTreeSet};

/// The partitions of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Number of partitions (at least 1).
    pub parts: usize,
    /// Partition of each spec pipe, by number.
    pub of_pipe: BTreeMap<u32, u32>,
    /// Partition of each engine pipe the spec made, by engine index.
    pub owner: Vec<u32>,
    /// Pipes (by number) whose packets may go on to another partition.
    pub early: BTreeSet<u32>,
    /// How far apart in virtual time the partitions may run: the
    /// smallest delay of an early-exit pipe; `None` when nothing crosses.
    pub lookahead: Option<Duration>,
}

impl Plan {
    /// The partition owning engine pipe `idx`.
    #[inline]
    pub fn owner_of(&self, idx: u32) -> u32 {
        self.owner.get(idx as usize).copied().unwrap_or(0)
    }
}

/// A union-find over dense pipe indices.
struct Groups {
    up: Vec<usize>,
}

impl Groups {
    fn new(n: usize) -> Groups {
        Groups {
            up: (0..n).collect(),
        }
    }

    fn root(&mut self, mut x: usize) -> usize {
        while self.up[x] != x {
            self.up[x] = self.up[self.up[x]];
            x = self.up[x];
        }
        x
    }

    /// Join the groups of `a` and `b` (the lower root stays the root).
    fn join(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.root(a), self.root(b));
        if ra != rb {
            let (lo, hi) = (ra.min(rb), ra.max(rb));
            self.up[hi] = lo;
        }
    }
}

/// Whether a path step out of a pipe of `cfg` (masked or not) may be cut.
fn cuttable(cfg: &PipeConfig, masked: bool) -> bool {
    !masked && cfg.min_delay() > Duration::ZERO
}

/// Cut `spec`'s pipes into at most `k` partitions (module documentation).
/// `front` is an emulation of `spec` (for the engine's pipe indices and
/// whether packets go back to the rules); `hint` a preferred partition
/// per pipe number.
pub fn plan(spec: &Spec, front: &Emulation, k: usize, hint: Option<&BTreeMap<u32, u32>>) -> Plan {
    let k = k.max(1);
    let numbers: Vec<u32> = spec.pipes.keys().copied().collect();
    let index = |n: u32| numbers.binary_search(&n).ok();
    let mut g = Groups::new(numbers.len());
    // Steps of paths, each once.
    let mut steps: BTreeSet<(u32, u32)> = BTreeSet::new();
    let mut firsts: BTreeSet<u32> = BTreeSet::new();
    if let Some(p) = &spec.paths {
        for s in 0..p.n {
            for d in 0..p.n {
                if let Some(h) = p.get(s, d) {
                    if let Some(&f) = h.first() {
                        firsts.insert(f);
                    }
                    steps.extend(h.windows(2).map(|w| (w[0], w[1])));
                }
            }
        }
    }
    // Pipes whose packets go back to the rules or on to a path.
    let mut ruled: BTreeSet<u32> = BTreeSet::new();
    if front.has_continuations() {
        for r in spec.rules.values() {
            match r.action {
                Action::Pipe(n) => {
                    ruled.insert(n);
                }
                Action::Queue(q) => {
                    if let Some(d) = spec.queues.get(&q) {
                        ruled.insert(d.pipe);
                    }
                }
                Action::PipeTablearg => ruled.extend(numbers.iter().copied()),
                _ => {}
            }
        }
        if !ruled.is_empty() {
            ruled.extend(firsts.iter().copied());
        }
        let mut it = ruled.iter().filter_map(|&n| index(n));
        if let Some(first) = it.next() {
            for i in it {
                g.join(first, i);
            }
        }
    }
    let cut_ok: Vec<bool> = numbers
        .iter()
        .map(|n| {
            spec.pipes
                .get(n)
                .is_some_and(|d| cuttable(&d.config, d.mask.is_some()))
                && !ruled.contains(n)
        })
        .collect();
    for &(a, b) in &steps {
        if let (Some(i), Some(j)) = (index(a), index(b)) {
            if !cut_ok[i] {
                g.join(i, j);
            }
        }
    }
    // Groups, each as its members' indices in number order.
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..numbers.len() {
        let r = g.root(i);
        groups.entry(r).or_default().push(i);
    }
    let mut part_of_group: BTreeMap<usize, usize> = BTreeMap::new();
    let mut load = vec![0usize; k];
    let hinted = |members: &[usize]| {
        let h = hint?;
        members
            .iter()
            .find_map(|&i| h.get(&numbers[i]))
            .map(|&p| p as usize % k)
    };
    let mut rest: Vec<(usize, &Vec<usize>)> = Vec::new();
    for (&r, m) in &groups {
        match hinted(m) {
            Some(p) => {
                part_of_group.insert(r, p);
                load[p] += m.len();
            }
            None => rest.push((r, m)),
        }
    }
    // The largest groups first, each to the least loaded partition.
    rest.sort_by_key(|(r, m)| (std::cmp::Reverse(m.len()), *r));
    for (r, m) in rest {
        let p = (0..k).min_by_key(|&p| (load[p], p)).unwrap_or(0);
        part_of_group.insert(r, p);
        load[p] += m.len();
    }
    // Drop empty partitions, keeping their order.
    let used: Vec<usize> = (0..k).filter(|&p| load[p] > 0).collect();
    let renumber = |p: usize| used.iter().position(|&u| u == p).unwrap_or(0) as u32;
    let mut of_pipe = BTreeMap::new();
    for (i, &n) in numbers.iter().enumerate() {
        let r = g.root(i);
        let p = part_of_group.get(&r).copied().unwrap_or(0);
        of_pipe.insert(n, renumber(p));
    }
    let mut early = BTreeSet::new();
    for &(a, b) in &steps {
        if of_pipe.get(&a) != of_pipe.get(&b) {
            early.insert(a);
        }
    }
    let lookahead = early
        .iter()
        .filter_map(|n| spec.pipes.get(n))
        .map(|d| d.config.min_delay())
        .min();
    let mut owner = Vec::new();
    for (&n, &p) in &of_pipe {
        if let Some(idx) = front.pipe(n) {
            let i = idx.0 as usize;
            if owner.len() <= i {
                owner.resize(i + 1, 0);
            }
            owner[i] = p;
        }
    }
    Plan {
        parts: used.len().max(1),
        of_pipe,
        owner,
        early,
        lookahead,
    }
}
