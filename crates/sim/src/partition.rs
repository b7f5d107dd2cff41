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
//! the hint that most of its load has, a pipe's load being 1 + the paths
//! through it), else the largest group first to the least loaded
//! partition. Since the windows are as long as the smallest delay of a
//! pipe with a cut step, steps out of faster pipes are left uncut too when
//! that still gives `k` partitions within 30 % of the mean load (the
//! largest such delay wins): a ring's 1 ms access links then join their
//! router and the windows last a ring link's 5 ms. Partitions left empty are
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
    let delay_of = |i: usize| {
        spec.pipes
            .get(&numbers[i])
            .map_or(Duration::ZERO, |d| d.config.min_delay())
    };
    // The load of a pipe: 1 + the paths through it (route usage).
    let mut weight = vec![1u64; numbers.len()];
    if let Some(p) = &spec.paths {
        for &h in &p.hops {
            if let Some(i) = index(h) {
                weight[i] += 1;
            }
        }
    }
    let mut steps_ix: Vec<(usize, usize)> = Vec::with_capacity(steps.len());
    for &(a, b) in &steps {
        if let (Some(i), Some(j)) = (index(a), index(b)) {
            if !cut_ok[i] {
                g.join(i, j);
            } else {
                steps_ix.push((i, j));
            }
        }
    }
    // The lookahead is the smallest delay of a pipe with a cut step: try
    // leaving uncut every step out of a pipe faster than `d`, for the
    // largest `d` that still gives `k` balanced partitions (a ring's
    // access links join their router, so the windows are as long as the
    // ring's links).
    let mut delays: Vec<Duration> = steps_ix.iter().map(|&(i, _)| delay_of(i)).collect();
    delays.sort_unstable();
    delays.dedup();
    let candidates: Vec<Duration> = if delays.len() <= 8 {
        delays.clone()
    } else {
        (0..8).map(|q| delays[q * (delays.len() - 1) / 7]).collect()
    };
    let mut chosen = None;
    for &d in candidates.iter().rev() {
        let mut gd = Groups { up: g.up.clone() };
        for &(i, j) in &steps_ix {
            if delay_of(i) < d {
                gd.join(i, j);
            }
        }
        let parts = assign(&mut gd, &numbers, &weight, k, hint);
        let mut load = vec![0u64; k];
        for (i, &p) in parts.iter().enumerate() {
            load[p] += weight[i];
        }
        let total: u64 = load.iter().sum();
        let max = load.iter().copied().max().unwrap_or(0);
        let used = load.iter().filter(|&&l| l > 0).count();
        if used == k.min(numbers.len()) && max as f64 <= 1.3 * total as f64 / k as f64 {
            chosen = Some(parts);
            break;
        }
    }
    let parts = match chosen {
        Some(p) => p,
        None => assign(&mut g, &numbers, &weight, k, hint),
    };
    // Drop empty partitions, keeping their order.
    let mut load = vec![0u64; k];
    for (i, &p) in parts.iter().enumerate() {
        load[p] += weight[i];
    }
    let used: Vec<usize> = (0..k).filter(|&p| load[p] > 0).collect();
    let renumber = |p: usize| used.iter().position(|&u| u == p).unwrap_or(0) as u32;
    let of_pipe: BTreeMap<u32, u32> = numbers
        .iter()
        .enumerate()
        .map(|(i, &n)| (n, renumber(parts[i])))
        .collect();
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

/// A partition for every pipe (by dense index), its group's: the hint
/// most of the group's load has (weighted by `weight`), else the least
/// loaded partition, largest groups first.
fn assign(
    g: &mut Groups,
    numbers: &[u32],
    weight: &[u64],
    k: usize,
    hint: Option<&BTreeMap<u32, u32>>,
) -> Vec<usize> {
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..numbers.len() {
        let r = g.root(i);
        groups.entry(r).or_default().push(i);
    }
    let mut part_of_group: BTreeMap<usize, usize> = BTreeMap::new();
    let mut load = vec![0u64; k];
    let mut rest: Vec<(u64, usize)> = Vec::new();
    for (&r, m) in &groups {
        let w: u64 = m.iter().map(|&i| weight[i]).sum();
        let mut votes = vec![0u64; k];
        let mut any = false;
        if let Some(h) = hint {
            for &i in m {
                if let Some(&p) = h.get(&numbers[i]) {
                    votes[p as usize % k] += weight[i];
                    any = true;
                }
            }
        }
        if any {
            // The most voted partition (the lowest on a tie).
            let p = (0..k)
                .max_by_key(|&p| (votes[p], std::cmp::Reverse(p)))
                .unwrap_or(0);
            part_of_group.insert(r, p);
            load[p] += w;
        } else {
            rest.push((w, r));
        }
    }
    rest.sort_by_key(|&(w, r)| (std::cmp::Reverse(w), r));
    for (w, r) in rest {
        let p = (0..k).min_by_key(|&p| (load[p], p)).unwrap_or(0);
        part_of_group.insert(r, p);
        load[p] += w;
    }
    (0..numbers.len())
        .map(|i| {
            let r = g.root(i);
            part_of_group.get(&r).copied().unwrap_or(0)
        })
        .collect()
}
