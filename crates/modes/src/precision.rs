//! Lateness made visible while a live emulation runs: a watcher thread
//! reads every worker's [`LateMeter`] once a second, and when more than
//! 1 % of the window's departures left later than [`WARN_LATE_NS`] after
//! their emulated time (the window's p99 beyond it) it says so, with how
//! late, how often and the likely cause, and keeps the count for the
//! report ([`Precision`]).
//!
//! The cause is read from the kernel over the same window:
//! * **steal**: the hypervisor ran something else on this machine's
//!   virtual CPUs (`/proc/stat`'s steal time, above 5 % of the window);
//! * **overload**: a runner thread was on its CPU more than 90 % of the
//!   window (`/proc/self/task/TID/schedstat`): it has more packets than
//!   it can serve in time;
//! * **contention**: runnable tasks waited for a CPU more than 10 % of
//!   the window (`/proc/pressure/cpu`, "some"): other processes took the
//!   CPUs the runners needed;
//! * otherwise unknown.
//!
//! Departures are measured from when the runner read the packet: a
//! packet that waited in the kernel (a TAP's queue, a socket's) while
//! the runner waited for a CPU is late by that wait too, and no port
//! stamps its arrival (a TAP has no timestamp). So the watcher also
//! reads each runner's waits for a CPU (`schedstat`'s run delay over its
//! number of runs): a window where a runner waited on average more than
//! the threshold each time it woke is late as well ("arrivals held"),
//! whatever its departures' p99. A runner starved of its CPU (50 ms a
//! second beside a real-time hog) reads a burst, sends it on time from
//! its reading, and would otherwise look punctual.
//!
//! Warnings go to the mode's sink (standard error) at most once every 10
//! seconds, each naming how many late windows it stands for.

use pipelab_io::late::{LateCounts, LateMeter};
use serde::Serialize;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A window's p99 lateness above this is a late window: 250 µs.
pub const WARN_LATE_NS: u64 = 250_000;
/// How often the meters are read.
pub const WINDOW: Duration = Duration::from_secs(1);
/// Fewer departures in a window than this say nothing about its p99.
const MIN_DEPARTURES: u64 = 20;
/// Warnings at most this often.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// Why departures were late, as far as the kernel shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The hypervisor ran another guest on the virtual CPUs.
    Steal,
    /// A runner was busy nearly all the time.
    Overload,
    /// Other processes held the CPUs.
    Contention,
    /// None of these was seen.
    Unknown,
}

impl Cause {
    fn advice(self) -> &'static str {
        match self {
            Cause::Steal => "the hypervisor gave this machine's CPUs to others (steal time); a quieter host or dedicated CPUs",
            Cause::Overload => "the emulator cannot serve this packet rate in time; more --workers on spare CPUs, or less traffic",
            Cause::Contention => "other processes compete for the CPUs; run with --realtime, or with fewer CPU-bound processes beside it",
            Cause::Unknown => "no CPU contention, steal or overload seen; a short stall of the machine",
        }
    }
}

/// What the watcher saw over the run, for the report.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Precision {
    /// The threshold a window's p99 lateness is held to, µs.
    pub threshold_us: f64,
    /// Windows (of about a second) with enough departures to judge.
    pub windows: u64,
    /// Of those, windows whose p99 lateness exceeded the threshold.
    pub late_windows: u64,
    /// Departures in the late windows, and how many of them were later
    /// than the threshold.
    pub late_departures: u64,
    /// Departures later than the threshold, over all windows.
    pub over_threshold: u64,
    /// The worst lateness seen in a late window, µs.
    pub worst_us: f64,
    /// Windows in which a runner waited for a CPU, on average, more
    /// than the threshold each time it woke: arrivals were held that
    /// long before it read them (counted in `late_windows` too).
    pub held_windows: u64,
    /// The longest of those average waits, µs.
    pub worst_wait_us: f64,
    /// Late windows by likely cause.
    pub causes: Vec<(Cause, u64)>,
    /// The warnings given (as printed).
    pub warnings: Vec<String>,
}

impl Precision {
    /// Whether any window was late.
    pub fn held(&self) -> bool {
        self.late_windows == 0
    }
}

/// Kernel figures over a window, to find a cause.
#[derive(Clone, Copy, Debug, Default)]
struct Kernel {
    /// `/proc/stat` cpu line: all jiffies, steal jiffies.
    total: u64,
    steal: u64,
    /// `/proc/pressure/cpu` some total, µs.
    pressure_us: Option<u64>,
}

impl Kernel {
    fn read() -> Kernel {
        let mut k = Kernel::default();
        if let Ok(stat) = std::fs::read_to_string("/proc/stat") {
            if let Some(line) = stat.lines().find(|l| l.starts_with("cpu ")) {
                let v: Vec<u64> = line
                    .split_whitespace()
                    .skip(1)
                    .filter_map(|x| x.parse().ok())
                    .collect();
                // user nice system idle iowait irq softirq steal (guest
                // time is inside user already).
                k.total = v.iter().take(8).sum();
                k.steal = v.get(7).copied().unwrap_or(0);
            }
        }
        k.pressure_us = std::fs::read_to_string("/proc/pressure/cpu")
            .ok()
            .and_then(|p| {
                p.lines()
                    .find(|l| l.starts_with("some"))?
                    .split_whitespace()
                    .find_map(|f| f.strip_prefix("total="))?
                    .parse()
                    .ok()
            });
        k
    }
}

/// A thread's scheduling so far (`/proc/self/task/TID/schedstat`): time
/// on its CPU, time runnable but waiting for a CPU (ns), and how many
/// times it ran.
#[derive(Clone, Copy, Debug, Default)]
struct Sched {
    cpu_ns: u64,
    wait_ns: u64,
    runs: u64,
}

impl Sched {
    fn read(tid: u64) -> Option<Sched> {
        let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
        let mut f = s.split_whitespace().map(|x| x.parse::<u64>().ok());
        Some(Sched {
            cpu_ns: f.next()??,
            wait_ns: f.next()??,
            runs: f.next()??,
        })
    }

    /// The share of `wall` on the CPU since `before`, and the mean wait
    /// for a CPU per run, ns (0 if it did not run).
    fn since(&self, before: &Sched, wall: Duration) -> (f64, u64) {
        let busy = self.cpu_ns.saturating_sub(before.cpu_ns) as f64 / wall.as_nanos().max(1) as f64;
        let runs = self.runs.saturating_sub(before.runs);
        let wait = self.wait_ns.saturating_sub(before.wait_ns);
        (busy, wait.checked_div(runs).unwrap_or(0))
    }
}

/// The likely cause of a late window of `wall` from the kernel figures
/// at its start and end and the busiest runner's share of it.
fn cause(before: &Kernel, after: &Kernel, wall: Duration, busiest: f64) -> Cause {
    let jiffies = after.total.saturating_sub(before.total);
    let steal = after.steal.saturating_sub(before.steal);
    let wall_us = wall.as_micros().max(1) as f64;
    let pressure = match (before.pressure_us, after.pressure_us) {
        (Some(a), Some(b)) => b.saturating_sub(a) as f64 / wall_us,
        _ => 0.0,
    };
    if jiffies > 0 && steal as f64 > 0.05 * jiffies as f64 {
        Cause::Steal
    } else if busiest > 0.9 {
        Cause::Overload
    } else if pressure > 0.1 {
        Cause::Contention
    } else {
        Cause::Unknown
    }
}

/// One window's verdict.
struct Window {
    counts: LateCounts,
    worst_ns: u64,
    /// The longest mean wait of a runner for a CPU per run, ns.
    wait_ns: u64,
}

/// The watcher's state, shared with the thread.
#[derive(Default)]
struct State {
    precision: Precision,
    last_warning: Option<Instant>,
    unsaid: u64,
}

impl State {
    /// Count `w`; a late window is counted against `cause`, and a warning
    /// is returned when one is due.
    fn window(
        &mut self,
        w: &Window,
        cause: impl FnOnce() -> Cause,
        now: Instant,
    ) -> Option<String> {
        let p = &mut self.precision;
        p.threshold_us = WARN_LATE_NS as f64 / 1e3;
        if w.counts.departures < MIN_DEPARTURES {
            return None;
        }
        p.windows += 1;
        let over = w.counts.over[1];
        p.over_threshold += over;
        let p99 = w.counts.quantile_over(0.01).unwrap_or(0);
        let held = w.wait_ns >= WARN_LATE_NS;
        if p99 < WARN_LATE_NS && !held {
            return None;
        }
        let cause = cause();
        p.late_windows += 1;
        p.late_departures += w.counts.departures;
        p.worst_us = p.worst_us.max(w.worst_ns as f64 / 1e3);
        if held {
            p.held_windows += 1;
            p.worst_wait_us = p.worst_wait_us.max(w.wait_ns as f64 / 1e3);
        }
        match p.causes.iter_mut().find(|(c, _)| *c == cause) {
            Some((_, n)) => *n += 1,
            None => p.causes.push((cause, 1)),
        }
        self.unsaid += 1;
        if self
            .last_warning
            .is_some_and(|t| now.duration_since(t) < WARN_EVERY)
        {
            return None;
        }
        let pct = 100.0 * over as f64 / w.counts.departures as f64;
        let also = match self.unsaid {
            1 => String::new(),
            n => format!(" ({n} late windows since the last warning)"),
        };
        let held_msg = format!(
            "arrivals held: the emulator waited on average {} for a CPU each time it woke in the last second, and packets that came meanwhile waited as long before it read them",
            fmt_ns(w.wait_ns)
        );
        let what = if p99 >= WARN_LATE_NS {
            let mut m = format!(
                "departures late: p99 above {} in the last second ({pct:.1}% of {} packets more than {} µs late, the worst {:.1} ms)",
                fmt_ns(p99),
                w.counts.departures,
                WARN_LATE_NS / 1000,
                w.worst_ns as f64 / 1e6,
            );
            if held {
                m = format!("{m}; {held_msg}");
            }
            m
        } else {
            held_msg
        };
        let msg = format!("{what}{also}; likely cause: {}", cause.advice());
        self.last_warning = Some(now);
        self.unsaid = 0;
        if self.precision.warnings.len() < 20 {
            self.precision.warnings.push(msg.clone());
        }
        Some(msg)
    }
}

fn fmt_ns(ns: u64) -> String {
    if ns >= 1_000_000 {
        format!("{} ms", ns / 1_000_000)
    } else {
        format!("{} µs", ns / 1_000)
    }
}

/// Where warnings go.
pub type Sink = Arc<dyn Fn(&str) + Send + Sync>;

/// The watcher thread of a live emulation.
pub struct Watcher {
    stop: Mutex<Option<mpsc::Sender<()>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    state: Arc<Mutex<State>>,
}

impl Watcher {
    /// Watch `meters` (one per worker) every [`WINDOW`], warning through
    /// `sink`.
    pub fn start(meters: Vec<Arc<LateMeter>>, sink: Sink) -> std::io::Result<Watcher> {
        let (tx, rx) = mpsc::channel::<()>();
        let state: Arc<Mutex<State>> = Default::default();
        let shared = state.clone();
        // The first window starts now, on this thread.
        let last: Vec<LateCounts> = meters.iter().map(|m| m.counts()).collect();
        for m in &meters {
            m.take_worst();
        }
        let thread = std::thread::Builder::new()
            .name("pipelab-watch".into())
            .spawn(move || watch(meters, last, rx, shared, sink))?;
        Ok(Watcher {
            stop: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            state,
        })
    }

    /// What was seen so far.
    pub fn precision(&self) -> Precision {
        let mut p = self
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .precision
            .clone();
        p.threshold_us = WARN_LATE_NS as f64 / 1e3;
        p
    }

    /// Stop the thread (what it saw stays readable).
    pub fn stop(&self) {
        drop(self.stop.lock().unwrap_or_else(|e| e.into_inner()).take());
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop();
    }
}

fn watch(
    meters: Vec<Arc<LateMeter>>,
    mut last: Vec<LateCounts>,
    stop: mpsc::Receiver<()>,
    state: Arc<Mutex<State>>,
    sink: Sink,
) {
    let sched = |m: &LateMeter| m.thread().and_then(Sched::read).unwrap_or_default();
    let mut last_sched: Vec<Sched> = meters.iter().map(|m| sched(m)).collect();
    let mut kernel = Kernel::read();
    let mut at = Instant::now();
    loop {
        match stop.recv_timeout(WINDOW) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            _ => return,
        }
        let now = Instant::now();
        let wall = now.duration_since(at);
        let mut counts = LateCounts::default();
        let mut worst = 0;
        let mut busiest: f64 = 0.0;
        let mut wait_ns = 0;
        for (i, m) in meters.iter().enumerate() {
            let c = m.counts();
            counts.add(&c.since(&last[i]));
            last[i] = c;
            worst = worst.max(m.take_worst());
            let t = sched(m);
            let (busy, wait) = t.since(&last_sched[i], wall);
            busiest = busiest.max(busy);
            wait_ns = wait_ns.max(wait);
            last_sched[i] = t;
        }
        let k = Kernel::read();
        let window = Window {
            counts,
            worst_ns: worst,
            wait_ns,
        };
        let said = state.lock().unwrap_or_else(|e| e.into_inner()).window(
            &window,
            || cause(&kernel, &k, wall, busiest),
            now,
        );
        if let Some(msg) = said {
            sink(&msg);
        }
        kernel = k;
        at = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(departures: u64, over: [u64; 4], worst_ns: u64) -> Window {
        Window {
            counts: LateCounts { departures, over },
            worst_ns,
            wait_ns: 0,
        }
    }

    /// A pass proves a window is late only when more than 1 % of its
    /// departures exceed the threshold, a window of too few departures is
    /// not judged, warnings come at most every 10 s (saying how many late
    /// windows each stands for), and the summary counts them by cause.
    #[test]
    fn late_windows_warn_and_count() {
        let mut s = State::default();
        let t0 = Instant::now();
        // 1 of 1000 over 250 µs: p99 below it.
        assert!(s
            .window(&window(1000, [5, 1, 0, 0], 400_000), || Cause::Unknown, t0)
            .is_none());
        // Too few to judge.
        assert!(s
            .window(
                &window(10, [10, 10, 10, 0], 9_000_000),
                || Cause::Unknown,
                t0
            )
            .is_none());
        // 3 % over 1 ms.
        let msg = s
            .window(
                &window(1000, [40, 35, 30, 0], 3_400_000),
                || Cause::Contention,
                t0,
            )
            .expect("a warning");
        assert!(msg.contains("p99 above 1 ms"), "{msg}");
        assert!(
            msg.contains("3.5% of 1000 packets more than 250 µs late"),
            "{msg}"
        );
        assert!(msg.contains("the worst 3.4 ms"), "{msg}");
        assert!(msg.contains("--realtime"), "{msg}");
        // Late again within 10 s: counted, not said.
        assert!(s
            .window(
                &window(500, [20, 20, 0, 0], 600_000),
                || Cause::Steal,
                t0 + Duration::from_secs(1)
            )
            .is_none());
        let msg = s
            .window(
                &window(500, [20, 20, 0, 0], 600_000),
                || Cause::Steal,
                t0 + Duration::from_secs(11),
            )
            .expect("a warning");
        assert!(
            msg.contains("(2 late windows since the last warning)"),
            "{msg}"
        );
        let p = &s.precision;
        assert_eq!((p.windows, p.late_windows), (4, 3));
        assert_eq!(p.over_threshold, 1 + 35 + 20 + 20);
        assert_eq!(p.worst_us, 3400.0);
        assert_eq!(p.causes, vec![(Cause::Contention, 1), (Cause::Steal, 2)]);
        assert_eq!(p.warnings.len(), 2);
        assert!(!p.held());
    }

    /// A pass proves a window whose departures were on time is still
    /// late when a runner waited on average more than the threshold for
    /// a CPU each time it woke (arrivals held before it read them): the
    /// warning says so, and `held_windows` and `worst_wait_us` count it;
    /// a wait below the threshold says nothing.
    #[test]
    fn arrivals_held_by_a_waiting_runner_are_late() {
        let mut s = State::default();
        let t0 = Instant::now();
        let mut w = window(100, [0; 4], 10_000);
        w.wait_ns = 200_000;
        assert!(s.window(&w, || Cause::Contention, t0).is_none());
        w.wait_ns = 450_000_000;
        let msg = s.window(&w, || Cause::Contention, t0).expect("a warning");
        assert!(
            msg.starts_with("arrivals held: the emulator waited on average 450 ms for a CPU"),
            "{msg}"
        );
        assert!(
            msg.contains("likely cause: other processes compete"),
            "{msg}"
        );
        // Both at once: the departures first, the wait after.
        let mut both = window(100, [10, 10, 10, 0], 3_000_000);
        both.wait_ns = 1_500_000;
        let msg = s
            .window(&both, || Cause::Contention, t0 + Duration::from_secs(10))
            .expect("a warning");
        assert!(msg.starts_with("departures late: p99 above 1 ms"), "{msg}");
        assert!(
            msg.contains("; arrivals held: the emulator waited on average 1 ms"),
            "{msg}"
        );
        let p = &s.precision;
        assert_eq!((p.windows, p.late_windows, p.held_windows), (3, 2, 2));
        assert_eq!(p.worst_wait_us, 450_000.0);
    }

    /// A pass proves the mean wait per run is the run delay over the
    /// runs between two readings, and a thread that did not run waited 0.
    #[test]
    fn mean_wait_per_run_from_schedstat() {
        let a = Sched {
            cpu_ns: 1_000,
            wait_ns: 5_000,
            runs: 10,
        };
        let b = Sched {
            cpu_ns: 501_000,
            wait_ns: 905_000,
            runs: 13,
        };
        let (busy, wait) = b.since(&a, Duration::from_millis(1));
        assert_eq!(busy, 0.5);
        assert_eq!(wait, 300_000);
        assert_eq!(a.since(&a, Duration::from_millis(1)), (0.0, 0));
        // This thread's own figures parse (it has run; its time on the
        // CPU may still read 0: the kernel adds a slice when it ends).
        let tid = nix::unistd::gettid().as_raw() as u64;
        let me = Sched::read(tid);
        assert!(me.is_some_and(|s| s.runs > 0), "{me:?}");
    }

    /// A pass proves the cause is read in order: steal above 5 % of the
    /// jiffies, then a runner busy above 90 %, then CPU pressure above
    /// 10 % of the window.
    #[test]
    fn causes_from_kernel_figures() {
        let k = |total, steal, p| Kernel {
            total,
            steal,
            pressure_us: Some(p),
        };
        let s = Duration::from_secs(1);
        assert_eq!(cause(&k(0, 0, 0), &k(200, 20, 0), s, 0.0), Cause::Steal);
        assert_eq!(cause(&k(0, 0, 0), &k(200, 2, 0), s, 0.95), Cause::Overload);
        assert_eq!(
            cause(&k(0, 0, 0), &k(200, 2, 300_000), s, 0.2),
            Cause::Contention
        );
        assert_eq!(
            cause(&k(0, 0, 0), &k(200, 2, 50_000), s, 0.2),
            Cause::Unknown
        );
    }

    /// A pass proves the watcher thread reads real meters: a second of
    /// departures 2 ms late gives a warning through the sink and a late
    /// window in the summary.
    #[test]
    fn watcher_warns_from_meters() {
        let m = Arc::new(LateMeter::default());
        let said: Arc<Mutex<Vec<String>>> = Default::default();
        let sink_said = said.clone();
        let w = Watcher::start(
            vec![m.clone()],
            Arc::new(move |s: &str| sink_said.lock().unwrap().push(s.to_string())),
        )
        .expect("watcher");
        for _ in 0..100 {
            m.record(2_000_000);
        }
        let end = Instant::now() + Duration::from_secs(5);
        while said.lock().unwrap().is_empty() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(50));
        }
        w.stop();
        let p = w.precision();
        assert_eq!(p.late_windows, 1, "{p:?}");
        assert_eq!(said.lock().unwrap().len(), 1);
        assert_eq!(p.worst_us, 2000.0);
    }
}
