//! How long before a deadline the runner stops sleeping and spins: the
//! sleep margin, learnt from the runner's own sleeps.
//!
//! A sleep ends late by the timer's and the scheduler's wake-up latency.
//! Measured at start-up with short sleeps back to back (p99 of 200 sleeps
//! of 50 µs) it is a few µs; but a CPU that idled for milliseconds wakes
//! more slowly, above all a virtual CPU, which halts and must be
//! scheduled again by the hypervisor: on a 2-vCPU machine (AMD EPYC,
//! 2026-12-07) sleeps of 50 µs overshot by 5 µs (p50) and 21 µs (p99),
//! sleeps of 20 ms by 75 µs and 113 µs (p50, p90). A margin from the
//! first figure left every departure after an idle spell 50–150 µs
//! late. So the runner records how late each of its sleeps that ran to
//! their end woke ([`Margin::woke`]) and keeps the margin at the 99th
//! percentile of the last [`RECENT`] of them plus [`SPARE`], never below
//! the start-up figure.
//!
//! Its ceiling is a budget of CPU time: the spin before a deadline may
//! take [`SPIN_BUDGET`] of the time between two such wake-ups, at least
//! [`MAX_MARGIN`] and at most [`CEILING`]. A virtual CPU that halts
//! between two departures can take milliseconds to run again when its
//! host is busy (the same machine, another day: sleeps of 10 ms by a
//! real-time thread overshot by 150 µs (p50), 1.4 ms (p99) and 2.9 ms
//! (max) with the CPUs idle, and by 87 µs, 223 µs and 289 µs with both
//! CPUs kept busy): ping through a shell then varied by 0.1–0.5 ms (mdev)
//! where a runner that never halted (`--busy-poll`) kept 0.043 ms. At
//! ping's rates (tens of departures a second) the budget lets the margin
//! cover such wake-ups for a few per cent of a CPU; at a high rate the
//! runner has work, not sleep, between two deadlines and the ceiling
//! falls to [`MAX_MARGIN`].
//!
//! What it learns is the wake-up's own latency, not the time the thread
//! then waited for a CPU other threads held: that part is the thread's
//! `run_delay` ([`RunDelay`], the kernel's schedstat), taken off each
//! overshoot. Waiting for a CPU is not shortened by spinning earlier: a
//! thread that spins spends its time slice and is preempted by the very
//! processes it waited for (under two CPU-bound processes a margin that
//! grew to 1 ms from such overshoots left departures 1–4 ms late, where
//! the start-up margin kept them within 0.2 ms).

use std::fs::File;
use std::os::unix::fs::FileExt;

use pipelab_engine::Duration;

/// Sleeps whose overshoot the margin follows.
pub const RECENT: usize = 128;
/// Added to the percentile: the spin's own start.
pub const SPARE: Duration = Duration(20_000);
/// The margin's ceiling when wake-ups are frequent: 500 µs of spinning
/// per wake-up, whatever the budget says.
pub const MAX_MARGIN: Duration = Duration(500_000);
/// The margin's ceiling at the lowest rates: one tick at 250 Hz.
pub const CEILING: Duration = Duration(4_000_000);
/// The share of the time between two wake-ups the spin may take, in
/// thousandths: 8 % of a CPU (the `auto` priority keeps real time below
/// 10 %).
pub const SPIN_BUDGET: u64 = 80;
/// The margin is recomputed every this many sleeps.
pub const EVERY: usize = 16;

/// The learnt margin.
#[derive(Clone, Debug)]
pub struct Margin {
    floor: Duration,
    now: Duration,
    recent: [u32; RECENT],
    filled: usize,
    next: usize,
    since: usize,
    /// The 99th percentile of the recent overshoots at the last
    /// recomputation.
    p99: Duration,
    /// When the last recomputation was (ns of the caller's clock).
    last_update: Option<u64>,
    /// The mean time between two recorded wake-ups, ns.
    period: u64,
}

impl Margin {
    /// A margin starting at `floor` (the start-up measurement).
    pub fn new(floor: Duration) -> Margin {
        let floor = floor.min(MAX_MARGIN);
        Margin {
            floor,
            now: floor,
            recent: [0; RECENT],
            filled: 0,
            next: 0,
            since: 0,
            p99: Duration::ZERO,
            last_update: None,
            period: 0,
        }
    }

    /// The margin now.
    #[inline]
    pub fn get(&self) -> Duration {
        self.now
    }

    /// A sleep that ran to its end woke `late` after it was due, at
    /// `now` (any clock that only goes forward, ns).
    pub fn woke(&mut self, late: Duration, now: u64) {
        self.recent[self.next] = late.as_nanos().min(u32::MAX as u64) as u32;
        self.next = (self.next + 1) % RECENT;
        self.filled = (self.filled + 1).min(RECENT);
        self.since += 1;
        if self.since >= EVERY {
            self.since = 0;
            self.update(now);
        }
    }

    /// The 99th percentile of the recent overshoots (0 until
    /// [`EVERY`] sleeps are recorded): how slowly this runner's CPU wakes.
    pub fn slow_wakes(&self) -> Duration {
        self.p99
    }

    /// The ceiling the budget allows at the mean period between
    /// wake-ups `period` (ns; 0 when not yet known).
    pub fn ceiling(period: u64) -> Duration {
        Duration(period.saturating_mul(SPIN_BUDGET) / 1000).clamp(MAX_MARGIN, CEILING)
    }

    #[cold]
    fn update(&mut self, now: u64) {
        if let Some(last) = self.last_update {
            self.period = now.saturating_sub(last) / EVERY as u64;
        }
        self.last_update = Some(now);
        let mut v: Vec<u32> = self.recent[..self.filled].to_vec();
        v.sort_unstable();
        let p99 = v[(v.len() * 99 / 100).min(v.len() - 1)] as u64;
        self.p99 = Duration(p99);
        let ceiling = Margin::ceiling(self.period);
        self.now = Duration(p99 + SPARE.as_nanos()).clamp(self.floor.min(ceiling), ceiling);
    }
}

/// The calling thread's time spent runnable but waiting for a CPU
/// (`/proc/thread-self/schedstat`, its second field), read again and
/// again from one open file.
#[derive(Debug)]
pub struct RunDelay {
    file: Option<File>,
    buf: [u8; 96],
}

impl RunDelay {
    /// Open the calling thread's schedstat (none where the kernel has no
    /// schedstats: then [`RunDelay::read`] says 0).
    pub fn open() -> RunDelay {
        RunDelay {
            file: File::open("/proc/thread-self/schedstat").ok(),
            buf: [0; 96],
        }
    }

    /// The thread's run delay so far, ns (0 if unknown).
    pub fn read(&mut self) -> u64 {
        let Some(f) = &self.file else { return 0 };
        let n = f.read_at(&mut self.buf, 0).unwrap_or(0);
        std::str::from_utf8(&self.buf[..n])
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records `n` wake-ups `late` each, one every `every` ns from `t`.
    fn wake(m: &mut Margin, t: &mut u64, n: usize, every: u64, late: impl Fn(usize) -> u64) {
        for i in 0..n {
            *t += every;
            m.woke(Duration(late(i)), *t);
        }
    }

    /// A pass proves the margin follows the 99th percentile of recent
    /// overshoots plus the spare, stays at its floor while sleeps wake
    /// on time, is capped at [`MAX_MARGIN`] when wake-ups are frequent,
    /// and comes back down when wake-ups speed up.
    #[test]
    fn follows_recent_overshoots() {
        let mut m = Margin::new(Duration(30_000));
        let mut t = 0;
        // A wake-up every millisecond: the budget allows 80 µs, the
        // ceiling is MAX_MARGIN.
        let ms = 1_000_000;
        assert_eq!(m.get(), Duration(30_000));
        wake(&mut m, &mut t, RECENT, ms, |_| 5_000);
        assert_eq!(m.get(), Duration(30_000), "the floor holds");
        // 2 of every 100 wake 150 µs late, the rest 80 µs.
        wake(&mut m, &mut t, RECENT, ms, |i| {
            if i % 50 == 0 {
                150_000
            } else {
                80_000
            }
        });
        assert_eq!(m.get(), Duration(170_000));
        wake(&mut m, &mut t, RECENT, ms, |_| 5_000_000);
        assert_eq!(m.get(), MAX_MARGIN);
        wake(&mut m, &mut t, RECENT, ms, |_| 10_000);
        assert_eq!(m.get(), Duration(30_000));
        assert_eq!(Margin::new(Duration(9_000_000)).get(), MAX_MARGIN);
    }

    /// A pass proves the ceiling is the spin budget's share of the time
    /// between wake-ups: a wake-up every 25 ms (ping's departures) lets
    /// the margin reach 2 ms, every 100 ms the 4 ms ceiling, and when
    /// wake-ups come faster again the margin falls back to MAX_MARGIN.
    #[test]
    fn the_ceiling_is_a_budget_of_cpu_time() {
        assert_eq!(Margin::ceiling(0), MAX_MARGIN);
        assert_eq!(Margin::ceiling(25_000_000), Duration(2_000_000));
        assert_eq!(Margin::ceiling(100_000_000), CEILING);
        let mut m = Margin::new(Duration(30_000));
        let mut t = 0;
        wake(&mut m, &mut t, RECENT, 25_000_000, |_| 1_400_000);
        assert_eq!(
            m.get(),
            Duration(1_420_000),
            "p99 + spare, within the budget"
        );
        wake(&mut m, &mut t, RECENT, 25_000_000, |_| 3_000_000);
        assert_eq!(m.get(), Duration(2_000_000), "8 % of 25 ms");
        wake(&mut m, &mut t, RECENT, 1_000_000, |_| 3_000_000);
        assert_eq!(
            m.get(),
            MAX_MARGIN,
            "8 % of 1 ms is below the floor of the ceiling"
        );
    }

    /// A pass proves the run delay is read from the kernel and grows
    /// when the thread waits for a CPU another thread holds (or is 0
    /// throughout where the kernel keeps no schedstats).
    #[test]
    fn run_delay_grows_while_waiting_for_a_cpu() {
        let mut rd = RunDelay::open();
        let first = rd.read();
        if rd.file.is_none() {
            assert_eq!(first, 0);
            return;
        }
        // Two spinning threads per CPU make each wait for the other.
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spinners: Vec<_> = (0..cpus * 2)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(
                    move || {
                        while !stop.load(std::sync::atomic::Ordering::Relaxed) {}
                    },
                )
            })
            .collect();
        let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut later = first;
        while later == first && std::time::Instant::now() < end {
            std::thread::sleep(std::time::Duration::from_millis(1));
            later = rd.read();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for s in spinners {
            let _ = s.join();
        }
        assert!(later > first, "run delay {first} -> {later}");
    }
}
