//! Keeping a runner's CPU awake where waking it is slow.
//!
//! A runner sleeps until a margin before its next departure and then
//! spins. On a virtual machine a CPU with nothing to run halts, and its
//! host may take milliseconds to run it again when a timer fires or a
//! packet arrives: on a 2-vCPU machine (AMD EPYC, 2026-12-07) a
//! real-time thread's sleeps of 10 ms overshot by 143 µs (p50), 1.6 ms
//! (p99) and 2.1 ms (max) with the CPUs idle, and by 90 µs, 150 µs and
//! 248 µs with a thread of the idle policy spinning on its CPU. The
//! machine was quiet, and quiet was the worst case: ping through a shell
//! varied less beside two CPU-bound processes (which keep every CPU from
//! halting) than alone (mdev 0.07 against 0.1–0.5 ms). Spinning only
//! shortly before each deadline did not hold: the spinning thread's own
//! wake-up came as late, and 4–8 ms of lead still left a p99 of
//! 0.7–2.9 ms; and an arrival, which nobody can foresee, wakes a halted
//! CPU as slowly.
//!
//! So a runner whose own sleeps show slow wake-ups ([`SLOW_WAKE`] at the
//! 99th percentile, after the time spent waiting for a CPU is taken off:
//! see [`crate::margin`]) keeps its CPU awake for the rest of the run: a
//! thread under `SCHED_IDLE`, which the kernel runs only when nothing
//! else wants the CPU, spins on the CPU the runner last slept on. It
//! takes nothing from any other thread: an application, a CPU-bound
//! process, the runner itself preempt it at once (and beside CPU-bound
//! processes it never runs); what it costs is the power of a CPU that
//! would have idled, and only while packets flow: it parks while the
//! runner's sleeps are short ([`LONG_SLEEP`]: at a high packet rate the
//! CPU barely halts) and from [`LINGER`] after the last packet in
//! flight. Where wake-ups are quick (most machines that are not
//! virtual) it never starts. A runner that busy-polls needs none.
//!
//! Whether it helps depends on the host, so the runner judges it by its
//! own sleeps ([`Judge`]): a CPU that never halts is, to its host, a
//! thread that always runs, and a host short of CPUs then takes it away
//! for whole time slices (steal time) where a halted CPU, woken, would
//! have been run at once. So every [`HOLD`] long sleeps the runner
//! counts the wake-ups later than [`SLOW_WAKE`] in [`TRIAL`] long sleeps
//! with the CPU kept awake; if more than [`ON_TIME`] were late it sleeps
//! as many with the CPU halting, and keeps it awake for the next [`HOLD`]
//! only if that side woke late less often. (Trying the halting side
//! always cost a quiet machine: ping's mdev through a shell went from
//! 0.098 to 0.273 ms, each short run spending half its time halting.)

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use pipelab_engine::Duration;

/// Whether this is a virtual machine (the CPU flag `hypervisor` of
/// `/proc/cpuinfo`): its runners keep their CPU awake from the start.
pub fn virtual_machine() -> bool {
    static VM: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *VM.get_or_init(|| {
        std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| {
            c.lines()
                .filter(|l| l.starts_with("flags"))
                .take(1)
                .any(|l| l.split_whitespace().any(|f| f == "hypervisor"))
        })
    })
}

/// Wake-ups this slow at the 99th percentile turn the spinning on.
pub const SLOW_WAKE: Duration = Duration(250_000);

/// The runner's sleeps this long or longer keep the spinning on: at
/// higher packet rates, where the runner sleeps less between packets,
/// its CPU barely halts, and a CPU that spins instead only loads the
/// host (at 10,000 packets a second it tripled the probe's stddev).
pub const LONG_SLEEP: u64 = 1_000_000;
/// How often a parked thread looks again whether to spin (the runner
/// also wakes it when it should).
const LOOK_AGAIN: std::time::Duration = std::time::Duration::from_millis(100);

/// How long after its last packet in flight a runner's CPU is still
/// kept awake: an emulation with no traffic (a daemon waiting for its
/// first packet) costs nothing.
pub const LINGER: u64 = 1_000_000_000;

/// Long sleeps each side of a trial lasts.
pub const TRIAL: u32 = 64;
/// Long sleeps the side that won a trial is kept for, before the next.
pub const HOLD: u32 = 32 * TRIAL;

/// At most this many of a trial's [`TRIAL`] long sleeps with the CPU
/// kept awake may wake late for the CPU to stay awake without trying the
/// other side: keeping it awake works.
pub const ON_TIME: u32 = 1;

/// Whether keeping the CPU awake makes this runner's long sleeps wake
/// on time, judged by trials (see the module's text).
#[derive(Clone, Debug)]
pub struct Judge {
    /// Long sleeps since the trial began.
    n: u32,
    /// Slow wake-ups seen in the trial: without, with the CPU kept awake.
    slow: [u32; 2],
    /// Whether this trial sleeps its second half with the CPU halting
    /// (the awake half woke late more than [`ON_TIME`] times).
    halting: bool,
    /// The side that won the last trial.
    won: bool,
}

impl Default for Judge {
    fn default() -> Judge {
        Judge {
            n: 0,
            slow: [0; 2],
            halting: false,
            won: true,
        }
    }
}

impl Judge {
    /// Whether the CPU is kept awake during the next long sleep: the
    /// trial's first half yes, its second half (if there is one) no, then
    /// the winner.
    pub fn awake(&self) -> bool {
        match self.n {
            n if n < TRIAL => true,
            n if n < 2 * TRIAL && self.halting => false,
            _ => self.won,
        }
    }

    /// A long sleep ended `late` ns after it was due.
    pub fn woke(&mut self, late: u64) {
        if self.n < 2 * TRIAL && late >= SLOW_WAKE.as_nanos() {
            self.slow[usize::from(self.awake())] += 1;
        }
        self.n += 1;
        if self.n == TRIAL {
            if self.slow[1] <= ON_TIME {
                // Awake, the CPU wakes on time: no halting half (which
                // would cost a quiet virtual machine its precision).
                self.won = true;
                self.n = 2 * TRIAL;
            } else {
                self.halting = true;
            }
        } else if self.n == 2 * TRIAL && self.halting {
            // A tie goes to the halting CPU, which costs nothing.
            self.won = self.slow[1] < self.slow[0];
        } else if self.n >= 2 * TRIAL + HOLD {
            *self = Judge {
                won: self.won,
                ..Judge::default()
            };
        }
    }

    /// The slow wake-ups of the current (or last) trial: without and
    /// with the CPU kept awake.
    pub fn slow(&self) -> [u32; 2] {
        self.slow
    }
}

#[derive(Debug, Default)]
struct Shared {
    /// The CPU the runner last slept on.
    cpu: AtomicU32,
    /// Whether to spin: the runner sleeps long and has had packets in
    /// flight within [`LINGER`].
    spin: AtomicBool,
    stop: AtomicBool,
    /// The thread's id (0 until it runs).
    tid: std::sync::atomic::AtomicI32,
}

/// A thread that keeps a runner's CPU from halting (see the module's
/// text).
#[derive(Debug)]
pub struct KeepAwake {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    judge: Judge,
    /// Whether the sleep under way is one the judge counts.
    long: bool,
}

impl KeepAwake {
    /// Start spinning (a thread named `NAME-awake`); `None` if the thread
    /// cannot be made.
    pub fn start(name: &str) -> Option<KeepAwake> {
        let shared = Arc::new(Shared::default());
        shared.cpu.store(current_cpu(), Ordering::Relaxed);
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("{name}-awake"))
            .spawn(move || keep_awake(&s))
            .ok()?;
        Some(KeepAwake {
            shared,
            thread: Some(thread),
            judge: Judge::default(),
            long: false,
        })
    }

    /// The runner is about to sleep for `ns` on the CPU it runs on now;
    /// its last packet in flight was `idle` ns ago (0: packets are in
    /// flight).
    #[inline]
    pub fn sleeping(&mut self, ns: u64, idle: u64) {
        self.long = spins(ns, idle);
        let spin = self.long && self.judge.awake();
        self.shared.cpu.store(current_cpu(), Ordering::Relaxed);
        if spin && !self.shared.spin.swap(spin, Ordering::AcqRel) {
            if let Some(t) = &self.thread {
                t.thread().unpark();
            }
        } else if !spin {
            self.shared.spin.store(false, Ordering::Release);
        }
    }
}

impl KeepAwake {
    /// The sleep announced by [`KeepAwake::sleeping`] ran to its end,
    /// `late` ns after it was due (less the time spent waiting for a
    /// CPU).
    #[inline]
    pub fn woke(&mut self, late: u64) {
        if std::mem::take(&mut self.long) {
            self.judge.woke(late);
        }
    }
}

/// Whether a runner's CPU is kept awake while it sleeps for `ns`, its
/// last packet in flight `idle` ns ago: it sleeps long and packets flow.
#[inline]
pub fn spins(ns: u64, idle: u64) -> bool {
    ns >= LONG_SLEEP && idle < LINGER
}

fn current_cpu() -> u32 {
    nix::sched::sched_getcpu().unwrap_or(0) as u32
}

impl Drop for KeepAwake {
    /// Tell the thread to end, back under the normal policy so that it
    /// runs to see it: under the idle policy on a busy machine it may not
    /// run for seconds, and the process cannot exit before each of its
    /// threads has run to its end (a shell's exit waited 0.4–3 s for it).
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        let tid = self.shared.tid.load(Ordering::Acquire);
        if tid > 0 {
            let _ = crate::backends::process::set_thread_normal_of(tid);
        }
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

fn keep_awake(s: &Shared) {
    s.tid
        .store(nix::unistd::gettid().as_raw(), Ordering::Release);
    if s.stop.load(Ordering::Acquire) {
        return;
    }
    // Without the idle policy the spin would compete with applications:
    // then it does nothing.
    if crate::backends::process::set_thread_idle().is_err() || s.stop.load(Ordering::Acquire) {
        // (Told to stop before the policy took: the owner may have put
        // it back to normal first; end now, while it runs.)
        return;
    }
    let mut on = u32::MAX;
    let mut n = 0u32;
    while !s.stop.load(Ordering::Relaxed) {
        n = n.wrapping_add(1);
        if n.is_multiple_of(1024) {
            if !s.spin.load(Ordering::Acquire) {
                std::thread::park_timeout(LOOK_AGAIN);
                continue;
            }
            let cpu = s.cpu.load(Ordering::Relaxed);
            if cpu != on {
                // Not allowed on that CPU (a cpuset): spin where it is.
                let _ = crate::worker::pin_to(cpu as usize);
                on = cpu;
            }
        }
        // No `spin_loop()` hint: its PAUSE makes a virtual CPU's host
        // take the loop for a lock holder's wait and run something else
        // (pause-loop exiting), which is the halt this thread prevents.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves the thread runs under the idle policy on the CPU it
    /// is told, and stops when dropped.
    #[test]
    fn spins_at_idle_priority_on_the_runners_cpu() {
        let Some(k) = KeepAwake::start("test") else {
            return;
        };
        let tid = |name: &str| {
            std::fs::read_dir("/proc/self/task")
                .ok()?
                .flatten()
                .find_map(|t| {
                    let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
                    (comm.trim() == name).then(|| t.file_name().to_string_lossy().into_owned())
                })
        };
        // The thread names itself once it runs.
        let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let t = loop {
            match tid("test-awake") {
                Some(t) => break t,
                None if std::time::Instant::now() < end => {
                    std::thread::sleep(std::time::Duration::from_millis(5))
                }
                None => panic!("no thread test-awake"),
            }
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        let stat = std::fs::read_to_string(format!("/proc/self/task/{t}/stat")).unwrap_or_default();
        let f: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        // Field 41 of stat(5), the policy: SCHED_IDLE is 5.
        assert_eq!(f.get(41 - 3).copied(), Some("5"), "{stat}");
        let shared = k.shared.clone();
        drop(k);
        assert!(shared.stop.load(Ordering::Acquire), "told to stop");
        // It ends when it next runs (under the idle policy: when a CPU
        // has nothing else to do).
        let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while tid("test-awake").is_some() {
            assert!(std::time::Instant::now() < end, "the thread did not end");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// A pass proves the thread is told to spin only while the runner
    /// sleeps long with packets in flight within LINGER.
    #[test]
    fn spins_only_while_packets_flow_and_sleeps_are_long() {
        let Some(mut k) = KeepAwake::start("test-gate") else {
            return;
        };
        let shared = k.shared.clone();
        let spin = || shared.spin.load(Ordering::Acquire);
        assert!(!spin(), "not before the first sleep");
        k.sleeping(LONG_SLEEP, 0);
        assert!(spin());
        k.sleeping(LONG_SLEEP - 1, 0);
        assert!(!spin(), "short sleeps: a high packet rate");
        k.sleeping(20_000_000, LINGER - 1);
        assert!(spin());
        k.sleeping(20_000_000, LINGER);
        assert!(!spin(), "no packet in flight for LINGER");
    }

    /// Feeds `j` long sleeps that wake `late(awake, i)` late until its
    /// next trial begins; returns the side of each sleep.
    fn trial(j: &mut Judge, late: impl Fn(bool, u32) -> u64) -> Vec<bool> {
        let mut sides = Vec::new();
        for i in 0..2 * TRIAL + HOLD {
            let awake = j.awake();
            sides.push(awake);
            j.woke(late(awake, i));
            if j.n == 0 {
                break;
            }
        }
        sides
    }

    /// A pass proves the judge keeps the CPU awake where that keeps
    /// wake-ups on time, never halting it to compare (a quiet virtual
    /// machine: halting wakes 1 in 8 late, awake none; a machine that
    /// wakes on time either way), halts it where awake wakes late more
    /// often than halting (a host short of CPUs: awake, 1 in 8 is taken
    /// away), halts on a tie, and tries again after each hold.
    #[test]
    fn keeps_the_cpu_awake_only_where_it_wakes_late_less_often() {
        let slow = SLOW_WAKE.as_nanos();
        let mut j = Judge::default();
        assert!(j.awake(), "the first trial starts awake");
        let quiet_vm = |awake: bool, i: u32| {
            if !awake && i.is_multiple_of(8) {
                2 * slow
            } else {
                1_000
            }
        };
        let sides = trial(&mut j, quiet_vm);
        assert!(sides.iter().all(|&a| a), "quiet VM: awake, never halting");
        let sides = trial(&mut j, |_, _| slow - 1);
        assert!(sides.iter().all(|&a| a), "on time either way: awake");
        let busy_host = |awake: bool, i: u32| {
            if awake && i.is_multiple_of(8) {
                10 * slow
            } else {
                1_000
            }
        };
        let sides = trial(&mut j, busy_host);
        let t = TRIAL as usize;
        assert!(sides[..t].iter().all(|&a| a), "the trial's awake half");
        assert!(
            sides[t..].iter().all(|&a| !a),
            "busy host: halting from the trial's second half on"
        );
        assert_eq!(j.slow(), [0, 0], "a new trial began");
        // Both sides late alike: a tie halts.
        let sides = trial(
            &mut j,
            |_, i| if i.is_multiple_of(4) { 2 * slow } else { 0 },
        );
        assert!(sides[t..].iter().all(|&a| !a), "a tie halts");
        // The next trial starts awake again, whatever won before.
        assert!(j.awake());
    }
}
