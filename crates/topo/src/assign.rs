//! The Assignment phase (ModelNet §2.1): map the distilled pipes to `k`
//! cores. A route whose consecutive pipes live on different cores costs a
//! descriptor hand-off between cores per crossing, so the goal is few
//! crossings with balanced load.
//!
//! * [`greedy_k_clusters`]: ModelNet's "simple greedy k-clusters
//!   assignment: for k nodes in the core set, randomly select k nodes in
//!   the distilled topology and greedily select links from the current
//!   connected component in a round-robin fashion".
//! * [`partition_balanced`]: starts from greedy k-clusters and refines it
//!   Kernighan–Lin/Fiduccia–Mattheyses style: single moves of a link (both
//!   pipes of a pair) to the core that most reduces the cut weight (the
//!   number of route hand-offs it causes, i.e. weighted by route usage),
//!   keeping each core within 5 % of the mean link count, until no move
//!   helps.
//!
//! Both keep the two pipes of a pair on one core. Load is counted in links.

use std::collections::{BTreeMap, BTreeSet};

use pipelab_engine::rng::rng_from_seed;
use rand::seq::SliceRandom;

use crate::distill::Distilled;
use crate::route::RouteMatrix;

/// A core for every distilled pipe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// Number of cores.
    pub cores: usize,
    /// Core of each pipe.
    pub core_of_pipe: Vec<u32>,
}

impl Assignment {
    /// Links (pipe pairs) on each core.
    pub fn loads(&self) -> Vec<usize> {
        let mut l = vec![0; self.cores];
        for c in self.core_of_pipe.iter().step_by(2) {
            l[*c as usize] += 1;
        }
        l
    }

    /// The share of routes that touch more than one core.
    pub fn cross_fraction(&self, routes: &RouteMatrix) -> f64 {
        let (mut all, mut cross) = (0usize, 0usize);
        for (_, _, r) in routes.iter() {
            all += 1;
            let c0 = self.core_of_pipe.get(r[0] as usize);
            if r.iter().any(|&p| self.core_of_pipe.get(p as usize) != c0) {
                cross += 1;
            }
        }
        if all == 0 {
            0.0
        } else {
            cross as f64 / all as f64
        }
    }

    /// Hand-offs between cores summed over all routes.
    pub fn handoffs(&self, routes: &RouteMatrix) -> u64 {
        routes
            .iter()
            .map(|(_, _, r)| {
                r.windows(2)
                    .filter(|w| {
                        self.core_of_pipe.get(w[0] as usize) != self.core_of_pipe.get(w[1] as usize)
                    })
                    .count() as u64
            })
            .sum()
    }
}

/// ModelNet's greedy k-clusters, seeded.
pub fn greedy_k_clusters(d: &Distilled, k: usize, seed: u64) -> Assignment {
    let k = k.max(1);
    let pairs = d.pipes.len() / 2;
    let nodes = d
        .pipes
        .iter()
        .map(|p| p.from.max(p.to) + 1)
        .max()
        .unwrap_or(0);
    let mut adj = vec![Vec::new(); nodes];
    for l in 0..pairs {
        let p = &d.pipes[2 * l];
        adj[p.from].push(l);
        adj[p.to].push(l);
    }
    let mut candidates: Vec<usize> = (0..nodes).filter(|&v| !adj[v].is_empty()).collect();
    let mut rng = rng_from_seed(seed);
    candidates.shuffle(&mut rng);
    let mut core = vec![u32::MAX; pairs];
    // Per core: links adjacent to its component, and its nodes (a set
    // of the nodes it reached, not a flag per node of the topology: k
    // cores of a 100,000-node topology held k × 100,000 flags).
    let mut frontier: Vec<Vec<usize>> = vec![Vec::new(); k];
    let mut member: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); k];
    for c in 0..k {
        if let Some(&v) = candidates.get(c) {
            member[c].insert(v);
            frontier[c].extend(adj[v].iter().rev());
        }
    }
    let mut left = pairs;
    let mut next_free = 0;
    while left > 0 {
        for c in 0..k {
            if left == 0 {
                break;
            }
            let mut pick = None;
            while let Some(l) = frontier[c].pop() {
                if core[l] == u32::MAX {
                    pick = Some(l);
                    break;
                }
            }
            let l = match pick {
                Some(l) => l,
                None => {
                    // The component is exhausted: start anew at a free link.
                    while core[next_free] != u32::MAX {
                        next_free += 1;
                    }
                    next_free
                }
            };
            core[l] = c as u32;
            left -= 1;
            let p = &d.pipes[2 * l];
            for v in [p.from, p.to] {
                if member[c].insert(v) {
                    frontier[c].extend(adj[v].iter().rev());
                }
            }
        }
    }
    Assignment {
        cores: k,
        core_of_pipe: core.iter().flat_map(|&c| [c, c]).collect(),
    }
}

/// Greedy k-clusters refined to cut fewer route hand-offs (see the module
/// documentation).
pub fn partition_balanced(d: &Distilled, k: usize, seed: u64) -> Assignment {
    let mut a = greedy_k_clusters(d, k, seed);
    let k = a.cores;
    let pairs = d.pipes.len() / 2;
    if k == 1 || pairs == 0 {
        return a;
    }
    // Weight between links: how many routes go from one to the other.
    let mut w: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    for (_, _, r) in d.routes.iter() {
        for x in r.windows(2) {
            let (p, q) = (x[0] as usize / 2, x[1] as usize / 2);
            if p != q {
                *w.entry((p.min(q), p.max(q))).or_default() += 1;
            }
        }
    }
    let mut nbr: Vec<Vec<(usize, u64)>> = vec![Vec::new(); pairs];
    for (&(p, q), &x) in &w {
        nbr[p].push((q, x));
        nbr[q].push((p, x));
    }
    let mut core: Vec<usize> = (0..pairs).map(|l| a.core_of_pipe[2 * l] as usize).collect();
    let mut load = vec![0usize; k];
    for &c in &core {
        load[c] += 1;
    }
    let cap = ((pairs as f64 / k as f64) * 1.05).ceil() as usize;
    let cap = cap.max(load.iter().copied().max().unwrap_or(0));
    let mut gain = vec![0i64; k];
    // The cores of a link's neighbours: only they can gain (a move must
    // gain more than staying, which gains at least 0), so a link costs
    // its neighbours, not k (k cores × the links × 50 passes took
    // minutes on 1024 cores).
    let mut near: Vec<usize> = Vec::new();
    for _pass in 0..50 {
        let mut moved = false;
        for l in 0..pairs {
            for &c in &near {
                gain[c] = 0;
            }
            near.clear();
            for &(q, x) in &nbr[l] {
                if gain[core[q]] == 0 {
                    near.push(core[q]);
                }
                gain[core[q]] += x as i64;
            }
            let here = core[l];
            let best = near
                .iter()
                .copied()
                .filter(|&c| c != here && load[c] < cap && load[here] > 1)
                .max_by_key(|&c| (gain[c], std::cmp::Reverse(c)));
            if let Some(c) = best {
                if gain[c] > gain[here] {
                    load[here] -= 1;
                    load[c] += 1;
                    core[l] = c;
                    moved = true;
                }
            }
        }
        if !moved {
            break;
        }
    }
    a.core_of_pipe = core.iter().flat_map(|&c| [c as u32, c as u32]).collect();
    a
}
