//! Time-varying links (PlanetLab-Dummynet emulation §4.4, Fig. 10): a
//! link's configuration follows a Markov graph. Each node (state) carries
//! pipe parameters (bandwidth, loss, SNR, netload, collision, delay); the
//! link stays in a state for a random dwell time drawn from the state's
//! empirical distribution, then moves along an arc chosen with the arc's
//! probability (self-loops allowed: the state is re-entered with a new
//! dwell).
//!
//! # The graph ([`MarkovGraph::new`])
//! * A **state** ([`GraphState`]) has a unique name, the parameters it
//!   overrides ([`StateParams`], any subset: a positive bandwidth, loss and
//!   collision in `[0, 1]`, netload in `[0, 0.99]`, a finite SNR in dB, a
//!   delay), a dwell-time distribution and its outgoing arcs.
//! * A **dwell** ([`Dwell`]) is the corners `(cumulative probability,
//!   duration)` of a piecewise-linear CDF, as in Dummynet profiles
//!   (`profile.rs`): a draw `u ~ U[0, 1)` gives `D1` when `u < P1` and
//!   interpolates linearly between corners otherwise. Probabilities
//!   non-decreasing, the last exactly 1; durations non-decreasing, the last
//!   positive. One corner `(1, 5s)` is a constant 5 s.
//! * The **arcs** leaving each state (at least one, self-loops allowed) have
//!   probabilities summing to 1 (±1e-9).
//! * The **initial** state is the one the link is in at time zero.
//!
//! The graph file of `timevarying FILE` (`state`, `dwell`, `arc` and
//! `initial` lines) is text: `crates/lang` reads it
//! (`files::parse_markov_graph`) with the language's units and builds the
//! graph with these constructors; their errors name the state or corner,
//! which the reader turns into the line.
//!
//! # Determinism
//! [`TimeVarying`] owns a [`StageRng`]: the same seed gives the same
//! sequence of states and change instants. It never reads a clock:
//! [`TimeVarying::state_at`] takes `now` and returns the current state and
//! the instant of the next change, the deadline a driver waits for.
//!
//! What this module does not do: apply a state's parameters to a pipe (the
//! engine builds a new pipe config from [`StateParams`] and swaps it in at
//! the returned instant), or interpolate between states.

use core::fmt;

use rand::Rng;

use crate::models::{ModelError, Probability};
use crate::rng::StageRng;
use crate::time::{Duration, Instant, Rate};

const WHAT: &str = "time-varying link";

/// The pipe parameters a state overrides; `None` keeps the link's own.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StateParams {
    /// Link bandwidth.
    pub bandwidth: Option<Rate>,
    /// Packet loss probability, `[0, 1]`.
    pub loss: Option<f64>,
    /// Wireless SNR in dB.
    pub snr_db: Option<f64>,
    /// Wireless netload fraction, `[0, 0.99]`.
    pub netload: Option<f64>,
    /// Wireless collision probability per attempt, `[0, 1]`.
    pub collision: Option<f64>,
    /// Propagation delay.
    pub delay: Option<Duration>,
}

impl StateParams {
    /// Checks the values a state may override: a positive `bandwidth`,
    /// `loss` and `collision` in `[0, 1]`, `netload` in `[0, 0.99]`, a
    /// finite `snr_db`.
    pub fn check(&self) -> Result<(), ModelError> {
        let err = |m: String| Err(ModelError::new(WHAT, m));
        if self.bandwidth.is_some_and(Rate::is_unlimited) {
            return err("a state's bw must be positive".into());
        }
        for (word, value, max) in [
            ("loss", self.loss, 1.0),
            ("netload", self.netload, 0.99),
            ("collision", self.collision, 1.0),
        ] {
            if let Some(x) = value {
                if !(0.0..=max).contains(&x) {
                    return err(format!("{word} {x} is not in [0, {max}]"));
                }
            }
        }
        if let Some(db) = self.snr_db {
            if !db.is_finite() {
                return err(format!("snr {db}dB is not finite"));
            }
        }
        Ok(())
    }
}

impl fmt::Display for StateParams {
    /// The words of a `state` line after the name (empty when nothing is
    /// overridden).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        let mut word = |f: &mut fmt::Formatter<'_>, s: String| {
            let r = write!(f, "{sep}{s}");
            sep = " ";
            r
        };
        if let Some(b) = self.bandwidth {
            word(f, format!("bw {}bit/s", b.bps()))?;
        }
        if let Some(p) = self.loss {
            word(f, format!("loss {p}"))?;
        }
        if let Some(s) = self.snr_db {
            word(f, format!("snr {s}dB"))?;
        }
        if let Some(n) = self.netload {
            word(f, format!("netload {n}"))?;
        }
        if let Some(c) = self.collision {
            word(f, format!("collision {c}"))?;
        }
        if let Some(d) = self.delay {
            word(f, format!("delay {}ns", d.0))?;
        }
        Ok(())
    }
}

/// An empirical dwell-time distribution (piecewise-linear CDF corners).
#[derive(Clone, Debug, PartialEq)]
pub struct Dwell {
    /// `(cumulative probability, duration in ns)`, validated (module docs).
    points: Vec<(f64, u64)>,
}

impl Dwell {
    /// A distribution from its corners `(P, D)`: at least one, `P` and `D`
    /// never decreasing, the last `P` exactly 1 and the last `D` positive
    /// (module docs). An error about a corner names its index.
    pub fn new(points: Vec<(Probability, Duration)>) -> Result<Dwell, ModelError> {
        const DWELL: &str = "dwell";
        if points.is_empty() {
            return Err(ModelError::new(
                DWELL,
                "a dwell distribution needs at least one point",
            ));
        }
        for (i, w) in points.windows(2).enumerate() {
            if w[1].0.get() < w[0].0.get() {
                return Err(ModelError::at(
                    DWELL,
                    i + 1,
                    "dwell probabilities must not decrease",
                ));
            }
            if w[1].1 < w[0].1 {
                return Err(ModelError::at(
                    DWELL,
                    i + 1,
                    "dwell durations must not decrease",
                ));
            }
        }
        let last = points.len() - 1;
        if points[last].0.get() != 1.0 {
            return Err(ModelError::at(
                DWELL,
                last,
                "the last dwell probability must be 1",
            ));
        }
        if points[last].1 == Duration::ZERO {
            return Err(ModelError::at(
                DWELL,
                last,
                "the longest dwell time must be positive",
            ));
        }
        Ok(Dwell {
            points: points.into_iter().map(|(p, d)| (p.get(), d.0)).collect(),
        })
    }

    /// The corners `(P, D)`, in order.
    pub fn points(&self) -> impl Iterator<Item = (f64, Duration)> + '_ {
        self.points.iter().map(|&(p, ns)| (p, Duration(ns)))
    }

    /// The quantile `Q(u)`, `u ∈ [0, 1)`.
    pub fn quantile(&self, u: f64) -> Duration {
        let pts = &self.points;
        let k = pts.partition_point(|p| p.0 <= u);
        if k == 0 {
            return Duration(pts[0].1);
        }
        if k == pts.len() {
            return Duration(pts[k - 1].1);
        }
        let (a, b) = (pts[k - 1], pts[k]);
        let frac = (u - a.0) / (b.0 - a.0);
        Duration(a.1 + (frac * (b.1 - a.1) as f64) as u64)
    }

    /// The mean dwell time in ns (the integral of `Q`), for analysis.
    pub fn mean_ns(&self) -> f64 {
        let pts = &self.points;
        let mut m = pts[0].0 * pts[0].1 as f64;
        for w in pts.windows(2) {
            m += (w[1].0 - w[0].0) * (w[0].1 + w[1].1) as f64 / 2.0;
        }
        m
    }
}

/// One state of the graph.
#[derive(Clone, Debug, PartialEq)]
struct State {
    name: String,
    params: StateParams,
    dwell: Dwell,
    /// Outgoing arcs `(target, probability)`, in file order.
    arcs: Vec<(usize, f64)>,
    /// Cumulative probabilities of `arcs`, the last forced to 1.
    cumulative: Vec<f64>,
}

/// One state of a [`MarkovGraph`], as given to [`MarkovGraph::new`].
#[derive(Clone, Debug, PartialEq)]
pub struct GraphState {
    /// The state's name (unique in the graph).
    pub name: String,
    /// The pipe parameters the state overrides.
    pub params: StateParams,
    /// How long the link stays in the state.
    pub dwell: Dwell,
    /// The arcs leaving the state: `(index of the target state,
    /// probability)`, summing to 1.
    pub arcs: Vec<(usize, Probability)>,
}

/// A validated Markov graph of link states (module docs). Immutable.
#[derive(Clone, Debug, PartialEq)]
pub struct MarkovGraph {
    states: Vec<State>,
    initial: usize,
}

impl MarkovGraph {
    /// The graph of `states` starting in state `initial`. Checks that
    /// there is a state, that names are unique, each state's parameters
    /// ([`StateParams::check`]), that each state has arcs, to states that
    /// exist, whose probabilities sum to 1 (±1e-9), and that `initial`
    /// exists. An error about a state names its index.
    pub fn new(states: Vec<GraphState>, initial: usize) -> Result<MarkovGraph, ModelError> {
        if states.is_empty() {
            return Err(ModelError::new(WHAT, "no states"));
        }
        let n = states.len();
        let mut out: Vec<State> = Vec::with_capacity(n);
        // A timeline or a delay trace is a chain of one state per row:
        // names are checked in a set, not against every earlier state.
        let mut names = std::collections::HashSet::with_capacity(n);
        for (i, s) in states.into_iter().enumerate() {
            let at = |m: String| ModelError::at(WHAT, i, m);
            if !names.insert(s.name.clone()) {
                return Err(at(format!("state `{}` is declared twice", s.name)));
            }
            s.params.check().map_err(|e| at(e.message))?;
            if s.arcs.is_empty() {
                return Err(at(format!("state `{}` has no outgoing arc", s.name)));
            }
            if let Some(&(j, _)) = s.arcs.iter().find(|&&(j, _)| j >= n) {
                return Err(at(format!(
                    "state `{}` has an arc to state {j}, but there are {n} states",
                    s.name
                )));
            }
            let arcs: Vec<(usize, f64)> = s.arcs.iter().map(|&(j, p)| (j, p.get())).collect();
            let sum: f64 = arcs.iter().map(|a| a.1).sum();
            if (sum - 1.0).abs() > 1e-9 {
                return Err(at(format!(
                    "the arcs leaving `{}` sum to {sum}, not 1",
                    s.name
                )));
            }
            let mut acc = 0.0;
            let mut cumulative: Vec<f64> = arcs
                .iter()
                .map(|a| {
                    acc += a.1;
                    acc
                })
                .collect();
            if let Some(last) = cumulative.last_mut() {
                *last = 1.0;
            }
            out.push(State {
                name: s.name,
                params: s.params,
                dwell: s.dwell,
                arcs,
                cumulative,
            });
        }
        if initial >= n {
            return Err(ModelError::new(
                WHAT,
                format!("initial state {initial} does not exist (there are {n} states)"),
            ));
        }
        Ok(MarkovGraph {
            states: out,
            initial,
        })
    }

    /// Number of states.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Always false: a graph has at least one state.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// The index of the initial state.
    pub fn initial(&self) -> usize {
        self.initial
    }

    /// The name of state `i`.
    pub fn name(&self, i: usize) -> &str {
        &self.states[i].name
    }

    /// The index of the state called `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.states.iter().position(|s| s.name == name)
    }

    /// The parameters of state `i`.
    pub fn params(&self, i: usize) -> &StateParams {
        &self.states[i].params
    }

    /// The dwell distribution of state `i`.
    pub fn dwell(&self, i: usize) -> &Dwell {
        &self.states[i].dwell
    }

    /// The arcs leaving state `i`: `(target, probability)`.
    pub fn arcs(&self, i: usize) -> &[(usize, f64)] {
        &self.states[i].arcs
    }

    fn next_state(&self, i: usize, u: f64) -> usize {
        let s = &self.states[i];
        let k = s.cumulative.partition_point(|&c| c <= u);
        s.arcs[k.min(s.arcs.len() - 1)].0
    }
}

impl fmt::Display for MarkovGraph {
    /// The graph in its file format (which `crates/lang` reads back to an
    /// equal graph).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.states {
            let params = s.params.to_string();
            if params.is_empty() {
                writeln!(f, "state {}", s.name)?;
            } else {
                writeln!(f, "state {} {params}", s.name)?;
            }
        }
        writeln!(f, "initial {}", self.states[self.initial].name)?;
        for s in &self.states {
            write!(f, "dwell {}", s.name)?;
            for (p, d) in &s.dwell.points {
                write!(f, " {p} {d}ns")?;
            }
            writeln!(f)?;
        }
        for s in &self.states {
            for &(j, p) in &s.arcs {
                writeln!(f, "arc {} {} {p}", s.name, self.states[j].name)?;
            }
        }
        Ok(())
    }
}

/// A seeded walk over a [`MarkovGraph`]: which state the link is in at any
/// instant. Queries must not go back in time (an earlier `now` returns the
/// current state unchanged).
#[derive(Clone, Debug)]
pub struct TimeVarying {
    graph: MarkovGraph,
    rng: StageRng,
    state: usize,
    /// When the current state was entered.
    entered: Instant,
    /// When it will be left.
    until: Instant,
}

impl TimeVarying {
    /// Starts the walk in the graph's initial state at `start`, drawing its
    /// first dwell from `rng` (a `StageKind::Link` stream).
    pub fn new(graph: MarkovGraph, mut rng: StageRng, start: Instant) -> TimeVarying {
        let state = graph.initial;
        let dwell = graph.states[state].dwell.quantile(rng.gen());
        TimeVarying {
            graph,
            rng,
            state,
            entered: start,
            until: start + dwell,
        }
    }

    /// The graph.
    pub fn graph(&self) -> &MarkovGraph {
        &self.graph
    }

    /// When the current state was entered.
    pub fn entered(&self) -> Instant {
        self.entered
    }

    /// The state at `now` and the instant of the next change. Advances
    /// through every transition up to `now` (two draws each: the arc, then
    /// the new dwell). A zero dwell moves on at once; since every state's
    /// longest dwell is positive, this ends with probability 1.
    pub fn state_at(&mut self, now: Instant) -> (usize, Instant) {
        while now >= self.until {
            let u: f64 = self.rng.gen();
            self.state = self.graph.next_state(self.state, u);
            self.entered = self.until;
            let d = self.graph.states[self.state].dwell.quantile(self.rng.gen());
            self.until = self.entered + d;
            if self.until == Instant::MAX {
                break;
            }
        }
        (self.state, self.until)
    }

    /// The parameters of the state at `now`, and the next change.
    pub fn params_at(&mut self, now: Instant) -> (&StateParams, Instant) {
        let (i, until) = self.state_at(now);
        (&self.graph.states[i].params, until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_from_seed;

    fn ok<T, E: fmt::Display>(r: Result<T, E>) -> T {
        match r {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }

    fn pr(p: f64) -> Probability {
        ok(Probability::new(p))
    }

    /// A state with `dwell` corners `(P, ms)` and `arcs` `(target, P)`.
    fn state(
        name: &str,
        params: StateParams,
        dwell: &[(f64, u64)],
        arcs: &[(usize, f64)],
    ) -> GraphState {
        GraphState {
            name: name.into(),
            params,
            dwell: ok(Dwell::new(
                dwell
                    .iter()
                    .map(|&(p, ms)| (pr(p), Duration::from_millis(ms)))
                    .collect(),
            )),
            arcs: arcs.iter().map(|&(j, p)| (j, pr(p))).collect(),
        }
    }

    /// Fig. 10 in miniature: a good state (uniform dwell 1..3 s, mean 2 s)
    /// and a bad one (0.5..1.5 s, mean 1 s).
    fn two() -> MarkovGraph {
        let good = StateParams {
            bandwidth: Some(Rate::from_bps(11_000_000)),
            snr_db: Some(25.0),
            netload: Some(0.01),
            collision: Some(0.0),
            delay: Some(Duration::from_millis(2)),
            ..StateParams::default()
        };
        let bad = StateParams {
            bandwidth: Some(Rate::from_bps(2_000_000)),
            loss: Some(0.05),
            snr_db: Some(6.0),
            collision: Some(0.06),
            delay: Some(Duration::from_millis(10)),
            ..StateParams::default()
        };
        ok(MarkovGraph::new(
            vec![
                state(
                    "good",
                    good,
                    &[(0.0, 1000), (1.0, 3000)],
                    &[(0, 0.5), (1, 0.5)],
                ),
                state("bad", bad, &[(0.0, 500), (1.0, 1500)], &[(0, 1.0)]),
            ],
            0,
        ))
    }

    /// Pass proves: the example keeps every parameter, dwell and arc.
    #[test]
    fn builds_with_every_parameter() {
        let g = two();
        assert_eq!(g.len(), 2);
        assert_eq!(g.initial(), 0);
        let bad = ok(g.index_of("bad").ok_or("no bad"));
        let p = g.params(bad);
        assert_eq!(p.bandwidth, Some(Rate::from_bps(2_000_000)));
        assert_eq!(p.loss, Some(0.05));
        assert_eq!(p.snr_db, Some(6.0));
        assert_eq!(p.collision, Some(0.06));
        assert_eq!(p.delay, Some(Duration::from_millis(10)));
        assert_eq!(g.params(0).netload, Some(0.01));
        assert_eq!(g.dwell(0).mean_ns(), 2e9);
        assert_eq!(g.arcs(0), &[(0, 0.5), (1, 0.5)]);
    }

    /// Pass proves: a two-state link spends time in each state in the ratio
    /// predicted by its dwell means and transition probabilities, within 5%:
    /// the jump chain visits good 2/3 of the time (π = π·P), so the time
    /// share of good is (2/3·2 s)/(2/3·2 s + 1/3·1 s) = 0.8.
    #[test]
    fn two_state_time_shares_match_theory() {
        let g = two();
        let mut tv = TimeVarying::new(g, rng_from_seed(2024), Instant::ZERO);
        let horizon = Instant(200_000 * 1_000_000_000); // 200 000 s
        let mut time_in = [0u64; 2];
        let mut now = Instant::ZERO;
        while now < horizon {
            let (s, until) = tv.state_at(now);
            let end = until.min(horizon);
            time_in[s] += end.0 - now.0;
            now = end;
        }
        let share = time_in[0] as f64 / (time_in[0] + time_in[1]) as f64;
        assert!((share - 0.8).abs() / 0.8 < 0.05, "good share {share}");
        let ratio = time_in[0] as f64 / time_in[1] as f64;
        assert!((ratio - 4.0).abs() / 4.0 < 0.05, "ratio {ratio}");
    }

    /// Pass proves: the same seed reproduces the walk (states and change
    /// instants), a different seed does not, and queries between changes do
    /// not draw.
    #[test]
    fn seeds_reproduce() {
        let g = two();
        let walk = |seed| {
            let mut tv = TimeVarying::new(g.clone(), rng_from_seed(seed), Instant::ZERO);
            let mut out = Vec::new();
            let mut now = Instant::ZERO;
            for _ in 0..500 {
                let (s, until) = tv.state_at(now);
                // Asking again before the change changes nothing.
                assert_eq!(
                    tv.state_at(Instant(now.0 + (until.0 - now.0) / 2)),
                    (s, until)
                );
                out.push((s, until));
                now = until;
            }
            out
        };
        assert_eq!(walk(9), walk(9));
        assert_ne!(walk(9), walk(10));
    }

    /// Pass proves: a constant dwell changes state exactly on schedule, and
    /// `initial` picks the starting state.
    #[test]
    fn constant_dwell_and_initial() {
        let none = StateParams::default();
        let g = ok(MarkovGraph::new(
            vec![
                state("a", none, &[(1.0, 2000)], &[(1, 1.0)]),
                state("b", none, &[(1.0, 1000)], &[(0, 1.0)]),
            ],
            1,
        ));
        let mut tv = TimeVarying::new(g, rng_from_seed(1), Instant::ZERO);
        let s = Duration::from_secs(1).0;
        assert_eq!(tv.state_at(Instant::ZERO), (1, Instant(s)));
        assert_eq!(tv.state_at(Instant(s)), (0, Instant(3 * s)));
        // b [0,1) a [1,3) b [3,4) a [4,6) b [6,7) a [7,9) b [9,10) a [10,12)
        assert_eq!(tv.state_at(Instant(10 * s)), (0, Instant(12 * s)));
        assert_eq!(tv.entered(), Instant(10 * s));
    }

    /// Pass proves: every kind of invalid graph is refused, naming the
    /// state (or the dwell's corner) it is about.
    #[test]
    fn errors_name_the_state() {
        let none = StateParams::default();
        let a = || state("a", none, &[(1.0, 1000)], &[(0, 1.0)]);
        let with = |params: StateParams| state("b", params, &[(1.0, 1000)], &[(1, 1.0)]);
        let cases: Vec<(Vec<GraphState>, usize, Option<usize>)> = vec![
            (vec![], 0, None),
            (vec![a(), a()], 0, Some(1)),
            (vec![a(), state("b", none, &[(1.0, 1000)], &[])], 0, Some(1)),
            (
                vec![a(), state("b", none, &[(1.0, 1000)], &[(0, 0.5)])],
                0,
                Some(1),
            ),
            (
                vec![a(), state("b", none, &[(1.0, 1000)], &[(2, 1.0)])],
                0,
                Some(1),
            ),
            (
                vec![
                    a(),
                    with(StateParams {
                        netload: Some(1.0),
                        ..none
                    }),
                ],
                0,
                Some(1),
            ),
            (
                vec![
                    a(),
                    with(StateParams {
                        bandwidth: Some(Rate::UNLIMITED),
                        ..none
                    }),
                ],
                0,
                Some(1),
            ),
            (vec![a()], 1, None),
        ];
        for (states, initial, index) in cases {
            let names: Vec<String> = states.iter().map(|s| s.name.clone()).collect();
            match MarkovGraph::new(states, initial) {
                Err(e) => assert_eq!(e.index, index, "{names:?}: {e}"),
                Ok(g) => panic!("{names:?} accepted: {g}"),
            }
        }
        let dwell = |pts: &[(f64, u64)]| {
            Dwell::new(
                pts.iter()
                    .map(|&(p, ms)| (pr(p), Duration::from_millis(ms)))
                    .collect(),
            )
            .map_err(|e| e.index)
        };
        assert_eq!(dwell(&[(0.5, 1000)]), Err(Some(0)));
        assert_eq!(dwell(&[(1.0, 0)]), Err(Some(0)));
        assert_eq!(dwell(&[(0.5, 2000), (1.0, 1000)]), Err(Some(1)));
        assert_eq!(
            dwell(&[(0.6, 1000), (0.5, 2000), (1.0, 3000)]),
            Err(Some(1))
        );
        assert_eq!(dwell(&[]), Err(None));
    }
}
