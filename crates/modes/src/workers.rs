//! How a live mode splits its emulation over workers (`--workers K`,
//! `--cpus LIST`), and how the workers' figures add up.
//!
//! * **How many.** By default one for every two CPUs this process may
//!   run on (`sched_getaffinity`), at least one, at most the partitions
//!   that are useful: a shell's or bridge's two directions, a topology's
//!   links ([`default_workers`]): 1 on a 2-CPU machine, 2 for a shell on
//!   4 CPUs. Each worker has a CPU, and the applications it serves and
//!   the kernel's work on their packets (the veth and TAP softirqs, the
//!   TCP stacks) have another: a worker that shares its CPU with them
//!   waits for them, and its departures are late. On 2 CPUs two workers
//!   gave ping mdev 0.51 ms and one 0.15 ms (2026-12-07, BENCHMARKS.md,
//!   "Precision by default"), while one worker still carries TCP at most
//!   of two's rate. Host mode keeps one (one netfilter queue, see
//!   README). `--workers K` beyond the useful partitions runs as many as
//!   there are, and says so ([`WorkerOptions::resolve`]).
//! * **Which ports.** A shell's or bridge's port `i` is received by
//!   worker `i mod K` ([`by_port`]); a topology VN's by the worker owning
//!   the first pipe of its routes in `topo assign`'s link partition
//!   (every worker at least one VN). Every worker has a transmit handle on
//!   each port another worker receives from (a duplicated TAP descriptor,
//!   an AF_PACKET socket of its own: [`spread`]).
//! * **Which pipes.** A pipe belongs to the worker receiving the ports
//!   whose frames the rules can send into it ([`rule_owners`]: a rule
//!   restricted to a direction or a receiving interface feeds only from
//!   those ports; a pipe fed from ports of several workers goes to the
//!   first one's, and the others hand their packets over); a topology's
//!   pipes go, each direction of a link on its own, to the worker
//!   receiving the VNs whose routes use it (their sources', else their
//!   destinations', else the link's in `topo assign`'s partition: see
//!   `topo_plan` in [`crate::topo`]). Ownership decides only where work is done, never what
//!   happens to a packet: a packet for a pipe of another worker is handed
//!   over as a descriptor.
//! * **Which CPUs.** Worker `i` is pinned to the `i`-th CPU of `--cpus`,
//!   modulo their number; by default (and with `--cpus none`) workers are
//!   not pinned. The scheduler then wakes a worker on whichever CPU is
//!   idle; a pinned one must wait for its own CPU when a ping, iperf3 or
//!   a softirq holds it, which cost 1–4 ms spikes in every run of the
//!   former default (two pinned workers on 2 CPUs). Pin on a machine
//!   whose CPUs are set apart for the emulator (`isolcpus`, a cpuset).
//! * **Figures.** [`Totals`] adds the workers' accounting (the packets
//!   on their way between two counted as inside), merges their lateness
//!   histograms, sums rule, queue and pipe counters by number, and keeps
//!   each worker's own figures.

use crate::live::{LiveRunner, Owners, SendPort, WorkerPlan};
use crate::report::{PipeCounters, QueueCounters};
use hdrhistogram::Histogram;
use pipelab_classify::Direction;
use pipelab_emu::Spec;
use pipelab_io::runner::{Lateness, Runner, RunnerStats};
use pipelab_lang::{Action, OptionKind};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::Arc;

/// `--workers` and `--cpus` as given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkerOptions {
    /// Workers (`None`: [`default_workers`]).
    pub workers: Option<u16>,
    /// CPUs to pin worker `i` to the `i`-th of (`None`: the allowed
    /// CPUs); an empty list: do not pin.
    pub cpus: Option<Vec<usize>>,
}

impl WorkerOptions {
    /// The number of workers for a mode with `useful` partitions, `what`
    /// naming them (`"a shell has two directions"`), and a note when
    /// `--workers` asked for more: a worker beyond them would receive no
    /// port and own no pipe, a thread for nothing (a core, with
    /// `--busy-poll`), so it is not started.
    pub fn resolve(&self, useful: usize, what: &str) -> (u16, Option<String>) {
        let useful = useful.clamp(1, u16::MAX as usize) as u16;
        match self.workers {
            Some(k) if k > useful => (
                useful,
                Some(format!(
                    "--workers {k}: {what}, a worker each at most; running {useful}"
                )),
            ),
            Some(k) => (k.max(1), None),
            None => (default_workers(useful as usize), None),
        }
    }

    /// The CPU of each of `k` workers: the `i`-th of `--cpus` (modulo
    /// their number); none without `--cpus` (see the module
    /// documentation: a pinned worker cannot leave a CPU another thread
    /// holds).
    pub fn cpu_plan(&self, k: u16) -> Vec<Option<usize>> {
        let cpus = self.cpus.clone().unwrap_or_default();
        (0..k as usize)
            .map(|i| (!cpus.is_empty() && k > 1).then(|| cpus[i % cpus.len()]))
            .collect()
    }
}

/// The default number of workers: one for every two CPUs allowed, at
/// most `useful`, at least 1 (see the module documentation).
pub fn default_workers(useful: usize) -> u16 {
    workers_for(pipelab_io::worker::allowed_cpus().len(), useful)
}

/// One worker for every two of `cpus`, at most `useful`, at least 1.
fn workers_for(cpus: usize, useful: usize) -> u16 {
    (cpus / 2).min(useful).clamp(1, u16::MAX as usize) as u16
}

/// Parse `--workers`: 1 to 64.
pub fn parse_workers(s: &str) -> Result<u16, String> {
    s.parse::<u16>()
        .ok()
        .filter(|k| (1..=64).contains(k))
        .ok_or_else(|| format!("--workers '{s}': expected a number of workers from 1 to 64"))
}

/// Parse `--cpus`: `none`, or CPU numbers and ranges (`0,2-3`), each
/// one this process may run on.
pub fn parse_cpus(s: &str) -> Result<Vec<usize>, String> {
    if s == "none" {
        return Ok(Vec::new());
    }
    let allowed = pipelab_io::worker::allowed_cpus();
    let mut out = Vec::new();
    for part in s.split(',') {
        let bad =
            || format!("--cpus '{s}': '{part}' is not a CPU number or range (e.g. 0,2-3, or none)");
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<usize>(), b.trim().parse::<usize>()),
            None => (part.trim().parse::<usize>(), part.trim().parse::<usize>()),
        };
        let (a, b) = (a.map_err(|_| bad())?, b.map_err(|_| bad())?);
        if a > b {
            return Err(bad());
        }
        for c in a..=b {
            if !allowed.contains(&c) {
                return Err(format!(
                    "--cpus '{s}': CPU {c} is not one this process may run on ({})",
                    allowed
                        .iter()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ));
            }
            out.push(c);
        }
    }
    Ok(out)
}

/// Port `i` received by worker `i mod k` (a shell's or bridge's
/// directions).
pub fn by_port(ports: usize, k: u16) -> Vec<u16> {
    (0..ports).map(|i| (i % k.max(1) as usize) as u16).collect()
}

/// Whether frames received on port `p` may match `rule` (a condition on
/// the direction or the receiving interface that excludes them says no;
/// anything else may match).
fn may_match(spec: &Spec, rule: &pipelab_lang::RuleSpec, p: usize) -> bool {
    let dir = spec.ports.get(p).and_then(|d| d.dir);
    rule.options
        .iter()
        .filter(|o| !o.not)
        .all(|o| match &o.kind {
            OptionKind::In => dir != Some(Direction::Out),
            OptionKind::Out => dir != Some(Direction::In),
            OptionKind::Recv(name) => spec.env.ifaces.get(name).is_none_or(|&j| j as usize == p),
            _ => true,
        })
}

/// Which worker owns each pipe the rules send to, the ports being
/// received as `rx_worker` says (see the module documentation).
pub fn rule_owners(spec: &Spec, rx_worker: &[u16]) -> BTreeMap<u32, u16> {
    let mut feeders: BTreeMap<u32, BTreeSet<usize>> = BTreeMap::new();
    for rule in spec.rules.values() {
        let pipes: Vec<u32> = match rule.action {
            Action::Pipe(n) => vec![n],
            Action::Queue(q) => spec.queues.get(&q).map(|d| d.pipe).into_iter().collect(),
            Action::PipeTablearg => spec.pipes.keys().copied().collect(),
            _ => continue,
        };
        for p in 0..rx_worker.len() {
            if may_match(spec, rule, p) {
                for &n in &pipes {
                    feeders.entry(n).or_default().insert(p);
                }
            }
        }
    }
    feeders
        .into_iter()
        .filter_map(|(n, ports)| {
            let first = *ports.iter().next()?;
            Some((n, rx_worker.get(first).copied().unwrap_or(0)))
        })
        .collect()
}

/// A shell's or bridge's plan: port `i` received by worker `i mod k`,
/// pipes owned by the rules' feeders.
pub fn direction_plan(ports: usize, k: u16, opts: &WorkerOptions) -> WorkerPlan {
    let rx = by_port(ports, k);
    let receives = (0..k)
        .map(|w| rx.iter().map(|&r| r == w).collect())
        .collect();
    let owners: Owners = Arc::new(move |spec: &Spec| rule_owners(spec, &rx));
    WorkerPlan {
        receives,
        cpus: opts.cpu_plan(k),
        owners,
    }
}

/// Each worker's ports: port `i` itself for the worker `rx_worker[i]`,
/// a transmit handle `tx(i)` made for every other.
pub fn spread(
    ports: Vec<SendPort>,
    rx_worker: &[u16],
    k: u16,
    mut tx: impl FnMut(usize) -> io::Result<SendPort>,
) -> io::Result<Vec<Vec<SendPort>>> {
    let mut out: Vec<Vec<Option<SendPort>>> = (0..k).map(|_| Vec::new()).collect();
    for (i, port) in ports.into_iter().enumerate() {
        let owner = rx_worker.get(i).copied().unwrap_or(0);
        let mut port = Some(port);
        for (w, list) in out.iter_mut().enumerate() {
            if w as u16 == owner {
                list.push(port.take());
            } else {
                list.push(Some(tx(i)?));
            }
        }
    }
    Ok(out
        .into_iter()
        .map(|l| l.into_iter().flatten().collect())
        .collect())
}

/// One worker's figures.
#[derive(Clone, Debug, Serialize)]
pub struct WorkerFigures {
    /// The worker.
    pub worker: u16,
    /// The CPU it runs on, if pinned.
    pub cpu: Option<usize>,
    /// The ports it receives from (a topology's by VN name).
    pub ports: Vec<String>,
    /// Pipes it owns.
    pub pipes: usize,
    /// Its accounting (hand-offs as terms).
    pub stats: RunnerStats,
    /// Whether its accounting identity holds: `received + handoffs_in =
    /// delivered + dropped + handoffs_out + inside`.
    pub balanced: bool,
    /// Lateness of its transmissions.
    pub lateness: Lateness,
    /// How long after leaving their last stage the packets handed to it
    /// were taken in (added to their delay).
    pub handoff_latency: Lateness,
}

/// What one worker reports, taken on its thread.
pub struct Snapshot {
    worker: u16,
    ports: Vec<String>,
    pipes: usize,
    stats: RunnerStats,
    hist: Histogram<u64>,
    lateness: Lateness,
    handoff_latency: Lateness,
    rules: Vec<(u32, u64, u64)>,
    queues: Vec<QueueCounters>,
    pipe_counters: Vec<PipeCounters>,
    seed: u64,
}

/// Take `r`'s figures.
pub fn snapshot(r: &Runner) -> Snapshot {
    let e = r.emulation();
    // A topology's ports are all `eth0`, each in its VN: named by VN.
    let vns = e.spec().paths.is_some();
    let received: Vec<(usize, (String, pipelab_io::backends::PortStats))> = r
        .port_stats()
        .into_iter()
        .enumerate()
        .filter(|(i, _)| r.receives(*i))
        .collect();
    // What the kernel dropped before this worker read it, as its ports
    // count it (an AF_PACKET or AF_XDP ring; a TAP's are the mode's).
    let mut stats = r.stats();
    stats.dropped_input += received.iter().map(|(_, (_, s))| s.rx_dropped).sum::<u64>();
    let ports = received
        .into_iter()
        .map(|(i, (n, _))| match e.ports().get(i) {
            Some(p) if vns => p.name.clone(),
            _ => n,
        })
        .collect();
    let pipes = match e.partition() {
        Some(p) => e.pipe_numbers().filter(|&n| p.owns(n)).count(),
        None => e.pipe_numbers().count(),
    };
    Snapshot {
        worker: r.worker(),
        ports,
        pipes,
        stats,
        hist: r.lateness_histogram().clone(),
        lateness: r.lateness(),
        handoff_latency: r.handoff_latency(),
        rules: crate::report::rule_counters(e),
        queues: crate::report::queue_counters(e),
        pipe_counters: crate::report::pipe_counters(e),
        seed: e.seed(),
    }
}

/// The figures of every worker, added up.
#[derive(Clone, Debug, Serialize)]
pub struct Totals {
    /// Accounting over all workers (`inside` includes packets on their
    /// way between two workers).
    pub stats: RunnerStats,
    /// Lateness over all workers (histograms merged).
    pub lateness: Lateness,
    /// Per-rule counters summed: (number, packets, bytes).
    pub rules: Vec<(u32, u64, u64)>,
    /// Per flow queue counters summed.
    pub queues: Vec<QueueCounters>,
    /// Per pipe counters summed.
    pub pipes: Vec<PipeCounters>,
    /// Each worker's figures (one entry with one worker).
    pub workers: Vec<WorkerFigures>,
    /// The seed.
    pub seed: u64,
    /// Windows of the run whose departures were late, and why (see
    /// [`crate::precision`]).
    pub precision: crate::precision::Precision,
}

/// Add up `snaps` (in worker order), with worker `i` pinned to `cpus[i]`.
pub fn totals(snaps: Vec<Snapshot>, cpus: &[Option<usize>]) -> Totals {
    let mut stats = RunnerStats::default();
    let mut hist: Option<Histogram<u64>> = None;
    // By (number, place among the rules of that number): rules may share
    // a number, and every worker lists the same rules in the same order.
    let mut rules: BTreeMap<(u32, usize), (u64, u64)> = BTreeMap::new();
    let mut rule_order: Vec<(u32, usize)> = Vec::new();
    let mut queues: BTreeMap<u32, QueueCounters> = BTreeMap::new();
    let mut pipes: BTreeMap<u32, PipeCounters> = BTreeMap::new();
    let mut workers = Vec::new();
    let mut seed = 0;
    let (mut realtime, mut demotions) = (true, 0);
    for s in snaps {
        if s.worker == 0 {
            seed = s.seed;
        }
        stats += s.stats;
        match hist.as_mut() {
            Some(h) => {
                let _ = h.add(&s.hist);
            }
            None => hist = Some(s.hist.clone()),
        }
        realtime &= s.lateness.realtime;
        demotions += s.lateness.rt_demotions;
        let mut place: BTreeMap<u32, usize> = BTreeMap::new();
        for (n, p, b) in &s.rules {
            let k = place.entry(*n).or_insert(0);
            let key = (*n, *k);
            *k += 1;
            let e = rules.entry(key).or_insert_with(|| {
                rule_order.push(key);
                (0, 0)
            });
            e.0 += p;
            e.1 += b;
        }
        for q in &s.queues {
            queues
                .entry(q.id)
                .and_modify(|t| {
                    t.arrivals += q.arrivals;
                    t.drops += q.drops;
                    t.aqm_drops += q.aqm_drops;
                    t.served += q.served;
                    t.served_bytes += q.served_bytes;
                    t.instances += q.instances;
                })
                .or_insert(*q);
        }
        for p in &s.pipe_counters {
            pipes
                .entry(p.number)
                .and_modify(|t| {
                    t.arrivals += p.arrivals;
                    t.arrival_bytes += p.arrival_bytes;
                    t.departures += p.departures;
                    t.departure_bytes += p.departure_bytes;
                    t.drops += p.drops;
                    t.loss_drops += p.loss_drops;
                    t.aqm_drops += p.aqm_drops;
                    t.down_drops += p.down_drops;
                    t.duplicated += p.duplicated;
                    t.backlog += p.backlog;
                    t.in_delay_line += p.in_delay_line;
                })
                .or_insert(*p);
        }
        workers.push(WorkerFigures {
            worker: s.worker,
            cpu: cpus.get(s.worker as usize).copied().flatten(),
            ports: s.ports,
            pipes: s.pipes,
            balanced: s.stats.balanced(),
            stats: s.stats,
            lateness: s.lateness,
            handoff_latency: s.handoff_latency,
        });
    }
    // Packets on their way between two workers are inside the emulator.
    let transit = stats.handoffs_out.saturating_sub(stats.handoffs_in);
    stats.inside += transit;
    stats.handoffs_out -= transit;
    let lateness = hist
        .as_ref()
        .map(|h| Lateness::from_histogram(h, realtime, demotions))
        .unwrap_or_default();
    Totals {
        stats,
        lateness,
        rules: rule_order
            .into_iter()
            .filter_map(|key| rules.get(&key).map(|&(p, b)| (key.0, p, b)))
            .collect(),
        queues: queues.into_values().collect(),
        pipes: pipes.into_values().collect(),
        workers,
        seed,
        precision: Default::default(),
    }
}

/// The figures of every worker of `live`, added up.
pub fn live_totals(live: &LiveRunner) -> Result<Totals, crate::error::ModeError> {
    let mut t = totals(live.with_each(|r| snapshot(r))?, live.cpus());
    t.stats.dropped_input += live.input_dropped();
    t.precision = live.precision();
    Ok(t)
}

/// [`live_totals`], and what `also` reads of each worker in the same
/// step (a series' last sample: the same instant as the totals).
pub fn live_totals_and<T: Send + 'static>(
    live: &LiveRunner,
    also: Option<impl Fn(&mut Runner) -> T + Send + Sync + 'static>,
) -> Result<(Totals, Vec<T>), crate::error::ModeError> {
    let both = live.with_each(move |r| (snapshot(r), also.as_ref().map(|f| f(r))))?;
    let (snaps, extra): (Vec<Snapshot>, Vec<Option<T>>) = both.into_iter().unzip();
    let mut t = totals(snaps, live.cpus());
    t.stats.dropped_input += live.input_dropped();
    t.precision = live.precision();
    Ok((t, extra.into_iter().flatten().collect()))
}

/// The control protocol's stats of `live` (see
/// [`crate::report::stats_json`]): the totals, and each worker's figures
/// under `workers`.
pub fn stats_json(mode: &str, t: &Totals) -> serde_json::Value {
    serde_json::json!({
        "plane": mode,
        "pipes": t.pipes,
        "rules": t.rules,
        "queues": t.queues,
        "runner": t.stats,
        "lateness": t.lateness,
        "seed": t.seed,
        "workers": t.workers,
        "precision": t.precision,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipelab_emu::lower_config;
    use pipelab_lang::Config;

    fn spec(text: &str) -> Spec {
        let mut c = Config::new();
        c.apply_script(text).expect("valid");
        let mut s = lower_config(&c, &mut |p| Err(format!("no file {p}"))).expect("lowers");
        s.ports = Spec::two_ports(
            ("inside", Some(Direction::Out)),
            ("outside", Some(Direction::In)),
        );
        s.env.ifaces.insert("inside".into(), 0);
        s.env.ifaces.insert("outside".into(), 1);
        s
    }

    /// A pass proves a shell's two directions go to two workers, a pipe
    /// fed from both directions to the first, and a rule on the receiving
    /// interface to that interface's worker.
    #[test]
    fn pipes_go_to_the_worker_of_their_feeders() {
        let s = spec(
            "pipe 1 config delay 1ms\npipe 2 config delay 1ms\npipe 3 config delay 1ms\n\
             pipe 4 config delay 1ms\n\
             add 100 pipe 1 ip from any to any out\nadd 200 pipe 2 ip from any to any in\n\
             add 300 pipe 3 ip from any to any\nadd 400 pipe 4 ip from any to any recv outside\n",
        );
        let o = rule_owners(&s, &by_port(2, 2));
        assert_eq!(o.get(&1), Some(&0));
        assert_eq!(o.get(&2), Some(&1));
        assert_eq!(o.get(&3), Some(&0));
        assert_eq!(o.get(&4), Some(&1));
        let one = rule_owners(&s, &by_port(2, 1));
        assert!(one.values().all(|&w| w == 0));
    }

    /// A pass proves the workers' rule counters are summed rule by rule,
    /// also for rules that share a number (each keeps its own line).
    #[test]
    fn rule_counters_sum_per_rule_also_when_numbers_are_shared() {
        let snap = |worker: u16, rules: Vec<(u32, u64, u64)>| Snapshot {
            worker,
            ports: Vec::new(),
            pipes: 0,
            stats: RunnerStats::default(),
            hist: Histogram::new(3).expect("histogram"),
            lateness: Lateness::default(),
            handoff_latency: Lateness::default(),
            rules,
            queues: Vec::new(),
            pipe_counters: Vec::new(),
            seed: 1,
        };
        let t = totals(
            vec![
                snap(
                    0,
                    vec![(100, 1, 10), (200, 2, 20), (200, 3, 30), (65535, 0, 0)],
                ),
                snap(
                    1,
                    vec![(100, 4, 40), (200, 5, 50), (200, 6, 60), (65535, 1, 1)],
                ),
            ],
            &[None, None],
        );
        assert_eq!(
            t.rules,
            vec![(100, 5, 50), (200, 7, 70), (200, 9, 90), (65535, 1, 1)]
        );
    }

    /// A pass proves an explicit `--workers` is kept up to the useful
    /// partitions and capped beyond them with a note naming the request,
    /// the reason and the count run; the default never exceeds them.
    #[test]
    fn workers_beyond_the_useful_ones_are_not_started() {
        let k = |w| WorkerOptions {
            workers: w,
            cpus: None,
        };
        assert_eq!(
            k(Some(2)).resolve(2, "a shell has two directions"),
            (2, None)
        );
        assert_eq!(k(Some(1)).resolve(2, "x"), (1, None));
        let (n, note) = k(Some(3)).resolve(2, "a shell has two directions");
        assert_eq!(n, 2);
        assert_eq!(
            note.as_deref(),
            Some("--workers 3: a shell has two directions, a worker each at most; running 2")
        );
        assert_eq!(k(Some(4)).resolve(0, "a topology of no link").0, 1);
        let (d, note) = k(None).resolve(1, "x");
        assert_eq!((d, note), (1, None));
        assert!(
            k(None).resolve(1000, "x").0 as usize
                <= (pipelab_io::worker::allowed_cpus().len() / 2).max(1)
        );
    }

    /// A pass proves the default leaves a CPU beside each worker: one
    /// worker up to 3 CPUs, a shell's two from 4, a topology's workers
    /// at half the CPUs, never more than the useful partitions, and no
    /// worker pinned without `--cpus`.
    #[test]
    fn default_leaves_a_cpu_beside_each_worker() {
        assert_eq!(workers_for(1, 2), 1);
        assert_eq!(workers_for(2, 2), 1);
        assert_eq!(workers_for(3, 2), 1);
        assert_eq!(workers_for(4, 2), 2);
        assert_eq!(workers_for(64, 2), 2);
        assert_eq!(workers_for(16, 100), 8);
        assert_eq!(workers_for(16, 0), 1);
        let o = WorkerOptions::default();
        assert_eq!(o.cpu_plan(2), vec![None, None]);
        let pinned = WorkerOptions {
            workers: None,
            cpus: Some(vec![3, 5]),
        };
        assert_eq!(pinned.cpu_plan(3), vec![Some(3), Some(5), Some(3)]);
    }

    /// A pass proves `--cpus` takes lists and ranges of allowed CPUs,
    /// `none`, and refuses the rest naming the value.
    #[test]
    fn cpu_lists() {
        let allowed = pipelab_io::worker::allowed_cpus();
        let first = allowed[0];
        assert_eq!(parse_cpus(&first.to_string()), Ok(vec![first]));
        assert_eq!(parse_cpus("none"), Ok(vec![]));
        assert!(parse_cpus("x").is_err_and(|e| e.contains("'x'")));
        assert!(parse_cpus("4096").is_err_and(|e| e.contains("CPU 4096")));
        assert!(parse_workers("0").is_err());
        assert_eq!(parse_workers("2"), Ok(2));
        let o = WorkerOptions {
            workers: None,
            cpus: Some(vec![]),
        };
        assert_eq!(o.cpu_plan(2), vec![None, None]);
    }
}
