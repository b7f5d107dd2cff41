//! The real-time runner: an [`Emulation`] driven by `CLOCK_MONOTONIC`.
//!
//! One loop, one thread:
//! 1. **serve**: advance the engine to now and transmit what leaves it,
//!    recording each packet's lateness (actual minus due departure) in an
//!    HDR histogram, pipelab's own accuracy meter;
//! 2. **receive**: every port lends its waiting frames to the buffer pool
//!    (a bounded batch per port; at most one copy per frame, none where
//!    the kernel writes into the pool or lends its own memory: see
//!    [`crate::buffers`]), and each is offered to the emulation
//!    ([`Emulation::ingress`]: the port plan, the rules, the pipes, the
//!    paths), which decides where it goes;
//! 3. **wait**: sleep in `ppoll` on the ports until a margin before the next
//!    deadline, then spin until the deadline (`--busy-poll`: always spin).
//!    The margin is the sleep overshoot measured at start-up (p99 of 200
//!    short sleeps, plus 20 µs), then learnt from the runner's own sleeps
//!    (p99 of the last 128 wake-up latencies, less any wait for a CPU,
//!    plus 20 µs, at most 500 µs: a CPU that idled wakes more slowly;
//!    see [`crate::margin`]), not a guess.
//!
//! By default the runner's thread runs at real-time priority
//! (`SCHED_FIFO`, where the process may; never with `--busy-poll`) while
//! it is light, below 10% of its CPU over a 50 ms window, and at the
//! normal policy while it is busy, above 20% ([`Priority::Auto`]): a
//! normal thread woken on a CPU another process holds may wait up to a
//! scheduler tick (4 ms at `HZ=250`), a real-time one preempts at once;
//! a busy real-time thread that spins before its deadlines would keep
//! the kernel's softirq thread (`ksoftirqd`), which moves the packets
//! themselves, off its CPU (at 10 kpps through AF_XDP a run at
//! real-time priority throughout saw p99 of 25–32 ms where normal
//! priority gives 10.0x ms). `--realtime` (host mode: always) keeps
//! real-time priority up to 85% of the CPU (back below 70%): the kernel
//! throttles real-time threads that use more than 95% of a CPU, stopping
//! them for tens of milliseconds. `--no-realtime` never takes it. Under
//! the normal policy the thread asks for the shortest time slice (100
//! µs), which lets its wake-ups preempt where the kernel preempts at
//! all.
//!
//! Overload (ModelNet §2.2): packets already inside the emulator keep their
//! emulated timing. What cannot be taken in is dropped at the input and
//! counted: by the kernel when its receive queue overflows (read back as
//! the ports' `rx_dropped`), or here when the buffer cap is reached
//! (`memory`). Nothing is ever silently delayed.
//!
//! Every frame the emulator drops (queue, loss, AQM, link, rule) is
//! handed back to the port it came from ([`Port::discard`]), so that a
//! port whose frames stand for packets the kernel holds (NFQUEUE) releases
//! each with a drop verdict (a frame refused at the memory cap is released
//! by the port itself). What the port knows beyond the frame's bytes
//! (direction, interfaces, owning uid, a queue's packet id) travels in the
//! buffer's metadata ([`crate::buffers::BufMeta`]), which the rules see at
//! the frame's first and later passes (`one_pass 0`). A transmitted buffer
//! is kept until the port's [`Port::flush`] (a port may send a batch from
//! the buffers then); a buffer a port lent goes back to it
//! ([`Port::reclaim`]) when the last departure that references it is done.
//!
//! Accounting, checked by the tests: `received = delivered + dropped (by
//! reason: queue, loss, aqm, link, memory, rule, loop, reset, unreach,
//! down, tx, spill) + inside`, with copies from duplication counted as
//! received.
//!
//! Spilling ([`Runner::set_spill`], [`crate::spill`]): a frame the rules
//! send to a pipe marked `spill` that arrives while the pool is above its
//! spill mark (or while frames wait on disk) is written to disk once the
//! emulation has taken it, and its memory freed; a frame the spill cannot
//! take then is dropped before the emulation sees it (`spill`). Before
//! each wait, frames come back from disk in the order written while the
//! pool is under its read-back mark; a departure whose frame is still on
//! disk reads it at once (a miss). The emulation never knows: it holds
//! every descriptor, so its timing is the same with or without spilling.
//! Answers to packets `reset` and `unreach` rules drop
//! ([`crate::answer`]) are frames the runner makes and sends out of the
//! port the packet came in by, at once: counted apart (`answers`,
//! `answers_limited`, `answers_failed`), not as received or delivered.
//!
//! GSO super-frames ([`crate::gso`]): a port that writes virtio-net headers
//! may hand over a super-frame of up to 64 KB. The receive path passes
//! every frame through [`Offloads::on_receive`], which cuts a super-frame
//! into its segments unless nothing but a fixed delay can act on it; the
//! accounting then counts segments (`received` counts each). The
//! report's `gso` counts super-frames received, segments cut, kept and
//! sent whole.
//!
//! With a tap ([`Runner::set_tap`], `--pcap`, `--events`) the runner
//! hands a record to [`crate::capture`]'s writer at a frame's arrival
//! (after `recv`), its departure (after CE marking and corruption, as
//! sent), and each drop it counts that still holds the frame (at the
//! drop's instant, on the port the frame came by, with its reason);
//! frames refused at the memory cap before they had a buffer are only
//! counted. No file I/O here: a full channel loses the record (counted).
//! A netfilter queue's frames are recorded by direction: port 0 what the
//! host sends (`out`), port 1 what it receives (`in`).
//!
//! With flow counting on ([`Runner::count_flows`], the live modes'
//! `--interval`) the runner counts, at the same points, each IP
//! 5-tuple's arrivals, deliveries (with the delay inside the emulator:
//! the frame's arrival after `recv` to its departure decision, before
//! the send) and drops by reason into a bounded table of its own
//! ([`FlowTable`]), which a sampler takes between two steps
//! ([`Runner::take_flows`]). Copies made by duplication are not counted;
//! a frame the port then fails to send (`tx`) is counted as delivered.
//! Off, each of those points costs one test of an `Option`.
//!
//! As one of several workers ([`Runner::join`], [`crate::worker`]) the
//! runner receives only from its own ports, transmits on any, and hands
//! packets whose next pipe another worker owns to it: parcels taken in
//! at the start of each step and after each receive, parcels sent as soon
//! as the emulation hands them off, the other worker woken if it may be
//! asleep. A worker's accounting has the hand-offs as terms:
//! `received + handoffs_in = delivered + dropped (handoff included) +
//! handoffs_out + inside`.

use crate::answer::IcmpLimit;
use crate::backends::{Port, PortStats};
use crate::buffers::{BufId, BufferPool, Rx, BUF_SIZE};
use crate::capture::{Event, Record, Tap};
use crate::clock::Clock;
use crate::gso::{GsoStats, Leaving, Offloads};
use crate::readiness::{Readiness, WATCH_FROM};
use crate::spill::{SpillOptions, SpillStats, FRAME_BOOKKEEPING};
use crate::worker::{Links, Parcel};
use hdrhistogram::Histogram;
use nix::poll::{PollFd, PollFlags};
use pipelab_classify::frame::parse_ethernet;
use pipelab_classify::PacketView;
use pipelab_emu::series::{FlowSample, FlowTable};
use pipelab_emu::{
    Admission, Answer, Compiled, Departure, Emulation, Exit, Handoff, Ingress, Reason,
};
use pipelab_engine::engine::EngineOptions;
use pipelab_engine::models::flip_bit;
use pipelab_engine::rng::{stage_rng, StageKind, StageRng};
use pipelab_engine::{Duration, Instant, Packet};
use rand::Rng;
use serde::Serialize;
use std::io;
use std::os::fd::BorrowedFd;

/// The view of the frame in `buf` as the rules saw it when it arrived
/// (read from disk if it is there).
fn view_of(bufs: &BufferPool, buf: BufId) -> PacketView {
    let mut v = parse_ethernet(&bufs.bytes(buf)).view;
    bufs.meta(buf).annotation.apply(&mut v);
    v
}

/// The port a record names: the frame's, except for a frame a netfilter
/// queue lent (the plane's one port carries both hooks' traffic): 0 if
/// it was leaving the host (direction `out`), 1 if arriving (`in`), so
/// that a capture and an event log have each direction as a port of its
/// own.
fn record_port(a: crate::buffers::Annotation, port: usize) -> u16 {
    match (a.queued, a.dir) {
        (Some(_), Some(pipelab_classify::Direction::Out)) => 0,
        (Some(_), Some(pipelab_classify::Direction::In)) => 1,
        _ => port as u16,
    }
}

/// Runner settings.
#[derive(Clone, Copy, Debug)]
pub struct RunnerOptions {
    /// Spin instead of sleeping (lowest error, one core busy).
    pub busy_poll: bool,
    /// Cap on buffered frame memory, bytes (default 512 MiB).
    pub mem_cap: u64,
    /// Seed of every random decision.
    pub seed: u64,
    /// When the runner's thread runs at real-time priority (`SCHED_FIFO`
    /// [`REALTIME_PRIORITY`], where the process may), so that other
    /// processes on the host do not delay departures: see [`Priority`]
    /// (default [`Priority::Auto`]; host mode [`Priority::Realtime`]).
    pub priority: Priority,
    /// Frames of pipes marked `spill` may be kept on disk (where
    /// [`Runner::set_spill`] says): the engine then holds
    /// `mem_cap / FRAME_BOOKKEEPING` more descriptors, one per frame the
    /// disk may hold.
    pub spill: bool,
}

/// Frames taken from one port per receive call: a bounded batch, so that
/// one busy port cannot starve the transmissions that fall due meanwhile.
pub const RX_BATCH: usize = 256;

/// Frames read back from disk before a wait, at most (about 400 KB of
/// MTU frames).
pub const READ_BACK_BATCH: usize = 256;

/// Frames read back from disk before every wait, and at a time after
/// that while the next deadline is far.
pub const READ_BACK_FEW: usize = 8;

/// Reading back stops this long (and the wake-up margin) before the next
/// deadline: about the time a read-ahead of 256 KB takes from the page
/// cache.
pub const READ_BACK_GUARD: Duration = Duration(200_000);

/// The `SCHED_FIFO` priority of a runner thread (low among real-time
/// threads: kernel threads that need to run first still do).
pub const REALTIME_PRIORITY: i32 = 10;

/// The most frames a worker with memory cap `cap` keeps on disk: their
/// bookkeeping ([`FRAME_BOOKKEEPING`] each, weighed against the cap like
/// buffers) fills the cap's spill mark but for half of it or 16 MB,
/// whichever is less, kept for frames in memory (those read back ahead
/// of their departure). With 1500-byte frames the disk holds some 3.5
/// times the cap (`--mem-cap 1GB`: 3.4 GB).
pub fn max_on_disk(cap: u64) -> u64 {
    let mark = crate::buffers::spill_mark(cap);
    (mark - (mark / 2).min(16 << 20)) / FRAME_BOOKKEEPING
}

impl RunnerOptions {
    /// Engine options for a live run with these settings: as many packets
    /// as the memory cap holds buffers, and the seed.
    pub fn engine_options(&self) -> EngineOptions {
        let on_disk = if self.spill {
            max_on_disk(self.mem_cap)
        } else {
            0
        };
        EngineOptions {
            max_packets: (self.mem_cap / BUF_SIZE as u64 + on_disk).clamp(1, u32::MAX as u64)
                as u32,
            seed: self.seed,
        }
    }
}

impl Default for RunnerOptions {
    fn default() -> Self {
        RunnerOptions {
            busy_poll: false,
            mem_cap: 512 << 20,
            seed: 1,
            priority: Priority::Auto,
            spill: false,
        }
    }
}

/// Packet accounting of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RunnerStats {
    /// Frames received from the ports (plus copies made by duplication).
    pub received: u64,
    /// Frames transmitted after their emulated delay.
    pub delivered: u64,
    /// Dropped at a full queue.
    pub dropped_queue: u64,
    /// Dropped by a loss model.
    pub dropped_loss: u64,
    /// Dropped by active queue management (RED, GRED, CoDel, PIE).
    pub dropped_aqm: u64,
    /// Lost on the link (MAC profile draws above its loss level).
    pub dropped_link: u64,
    /// Dropped because the buffer cap was reached (or the engine's pool).
    pub dropped_memory: u64,
    /// Dropped by a rule, or for want of a path (topologies).
    pub dropped_rule: u64,
    /// Dropped after too many passes through the rules (`one_pass 0`).
    pub dropped_loop: u64,
    /// Dropped by a `reset` rule.
    pub dropped_reset: u64,
    /// Dropped by an `unreach` rule.
    pub dropped_unreach: u64,
    /// Refused by a pipe that was down (a black-hole window).
    pub dropped_down: u64,
    /// Could not be transmitted (port down or gone).
    pub dropped_tx: u64,
    /// Could not be handed to another worker (its ring was full).
    pub dropped_handoff: u64,
    /// A frame of a pipe marked `spill` the disk could not take (full, a
    /// write failed, the spill's bookkeeping bound), dropped before the
    /// emulation took it; or a frame that could not be read back.
    pub dropped_spill: u64,
    /// Handed to other workers (workers only).
    pub handoffs_out: u64,
    /// Taken over from other workers (workers only).
    pub handoffs_in: u64,
    /// Wake-ups written to other workers that may have been asleep
    /// (workers only; a cost counter, outside the accounting).
    pub wakeups: u64,
    /// Still inside the emulator (for a total over workers, with the
    /// packets on their way between two).
    pub inside: u64,
    /// Answers sent (TCP resets, ICMP unreachables) for packets `reset`
    /// and `unreach` rules dropped: frames the runner made, not in the
    /// accounting of received frames.
    pub answers: u64,
    /// ICMP answers held back by the rate limit
    /// ([`crate::answer::IcmpLimit`]).
    pub answers_limited: u64,
    /// Answers that could not be made (a frame without an Ethernet
    /// header of its own, no buffer under the cap) or sent.
    pub answers_failed: u64,
    /// GSO super-frames: received, cut into segments, kept and sent
    /// whole (a debug counter; see [`crate::gso`]).
    pub gso: GsoStats,
    /// Frames kept on disk (see [`crate::spill`]): how many, their
    /// bytes, the disk's rates, and the frames read before their turn.
    pub spill: SpillStats,
    /// Frames the kernel dropped on their way to a port before it was
    /// read (a TAP device's queue, an AF_PACKET or AF_XDP ring full: the
    /// emulator did not keep up, ModelNet's physical drops): never
    /// received, so outside the accounting. Filled in by the live modes'
    /// reports from the ports' `rx_dropped` and, for TAP devices, their
    /// own counters ([`crate::backends::tap::TapDrops`]); 0 in a
    /// runner's own figures.
    pub dropped_input: u64,
}

impl RunnerStats {
    /// Packets dropped, every reason.
    pub fn dropped(&self) -> u64 {
        self.dropped_queue
            + self.dropped_loss
            + self.dropped_aqm
            + self.dropped_link
            + self.dropped_memory
            + self.dropped_rule
            + self.dropped_loop
            + self.dropped_reset
            + self.dropped_unreach
            + self.dropped_down
            + self.dropped_tx
            + self.dropped_handoff
            + self.dropped_spill
    }

    /// Whether the accounting identity holds: `received + handoffs_in =
    /// delivered + dropped + handoffs_out + inside`.
    pub fn balanced(&self) -> bool {
        self.received + self.handoffs_in
            == self.delivered + self.dropped() + self.handoffs_out + self.inside
    }
}

impl std::ops::AddAssign for RunnerStats {
    fn add_assign(&mut self, o: RunnerStats) {
        self.received += o.received;
        self.delivered += o.delivered;
        self.dropped_queue += o.dropped_queue;
        self.dropped_loss += o.dropped_loss;
        self.dropped_aqm += o.dropped_aqm;
        self.dropped_link += o.dropped_link;
        self.dropped_memory += o.dropped_memory;
        self.dropped_rule += o.dropped_rule;
        self.dropped_loop += o.dropped_loop;
        self.dropped_reset += o.dropped_reset;
        self.dropped_unreach += o.dropped_unreach;
        self.dropped_down += o.dropped_down;
        self.answers += o.answers;
        self.answers_limited += o.answers_limited;
        self.answers_failed += o.answers_failed;
        self.dropped_tx += o.dropped_tx;
        self.dropped_handoff += o.dropped_handoff;
        self.dropped_spill += o.dropped_spill;
        self.handoffs_out += o.handoffs_out;
        self.handoffs_in += o.handoffs_in;
        self.wakeups += o.wakeups;
        self.inside += o.inside;
        self.gso += o.gso;
        self.spill += o.spill;
        self.dropped_input += o.dropped_input;
    }
}

/// Lateness percentiles, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Lateness {
    /// Packets measured.
    pub count: u64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest.
    pub max_us: f64,
    /// Whether the runner thread ran at real-time priority (at the end).
    pub realtime: bool,
    /// Times it left real-time priority because it was busy more than
    /// 85% of a 50 ms window (the kernel would have throttled it).
    pub rt_demotions: u64,
}

impl Lateness {
    /// The percentiles of `h` (lateness in ns), with the real-time
    /// state given.
    pub fn from_histogram(h: &Histogram<u64>, realtime: bool, rt_demotions: u64) -> Lateness {
        let us = |v: u64| v as f64 / 1e3;
        Lateness {
            count: h.len(),
            mean_us: h.mean() / 1e3,
            p50_us: us(h.value_at_quantile(0.5)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
            realtime,
            rt_demotions,
        }
    }
}

/// The runner. See the module documentation.
pub struct Runner {
    clock: Clock,
    emu: Emulation,
    ports: Vec<Box<dyn Port>>,
    /// Frames from their arrival to their departure, with their
    /// metadata.
    bufs: BufferPool,
    /// The buffers the ports lent in the current receive call.
    arrived: Vec<BufId>,
    /// Buffers transmitted since the last flush: kept until the ports
    /// have sent them.
    unflushed: Vec<BufId>,
    lateness: Histogram<u64>,
    /// The same departures counted for a watcher on another thread.
    late: std::sync::Arc<crate::late::LateMeter>,
    stats: RunnerStats,
    margin: Duration,
    /// The margin in use: learnt from this runner's own sleeps, from
    /// `margin` up (see [`crate::margin`]).
    wake_margin: crate::margin::Margin,
    /// This thread's wait for a CPU (see [`crate::margin::RunDelay`]).
    run_delay: crate::margin::RunDelay,
    busy_poll: bool,
    /// Whether this runner keeps its CPU awake while packets flow: on a
    /// virtual machine, or once its sleeps show slow wake-ups (see
    /// [`crate::awake`]).
    keep_awake: bool,
    /// The thread that does, started when first needed; `Some(None)` if
    /// it could not be.
    awake: Option<Option<crate::awake::KeepAwake>>,
    /// When packets were last seen in flight (before a sleep).
    last_in_flight: Option<Instant>,
    out: Vec<Departure>,
    corrupt_rng: StageRng,
    /// Why each port was lost (its interface deleted), if it was: a lost
    /// port is not polled or read, and frames due on it are counted as
    /// `dropped_tx`, until [`Runner::replace_port`] puts a new one in.
    lost: Vec<Option<String>>,
    /// Counters of ports replaced so far, per index (added to the new
    /// port's in [`Runner::port_stats`]).
    retired: Vec<PortStats>,
    /// Real-time priority and its guard against the kernel's throttling.
    rt: RtGuard,
    /// GSO super-frames: cut at reception, or kept whole.
    gso: Offloads,
    /// What the frame just received became (itself, or its segments).
    segs: Vec<BufId>,
    /// Frames leaving in the current round, before they are sent.
    leaving: Vec<Leaving>,
    /// Buffers whose frames left as part of a coalesced one.
    spent: Vec<BufId>,
    /// As one of several workers: the rings to the others.
    links: Option<Links>,
    /// Per port: whether this runner receives from it (a worker only
    /// transmits on the ports other workers receive from).
    receives: Vec<bool>,
    /// The receiving ports read every round; the others are watched by
    /// `ready`, when there are many (see [`crate::readiness`]).
    polled: Vec<usize>,
    /// The epoll instance watching many receiving ports, if there are.
    ready: Option<Readiness>,
    /// The watched ports reported ready, being read.
    ready_ports: Vec<usize>,
    /// Hand-offs the emulation made, being sent.
    handoffs: Vec<Handoff>,
    /// Parcels taken from the other workers, being offered.
    parcels: Vec<Parcel>,
    /// How long after leaving their last stage parcels were taken in
    /// (ns): the hand-off's own latency.
    handoff_wait: Histogram<u64>,
    /// The rate limit of ICMP answers.
    icmp_limit: IcmpLimit,
    /// Where records of arrivals, departures and drops go (`--pcap`,
    /// `--events`), if anywhere.
    tap: Option<Tap>,
    /// Each flow's counts since the last sample, when counted.
    flows: Option<Box<FlowTable>>,
    /// Per engine pipe (by index): whether its frames may go to disk
    /// (marked `spill`, owned by this runner). Empty without a spill.
    spill_pipes: Vec<bool>,
}

/// The runner thread's priority: whether it runs at real-time priority
/// (`SCHED_FIFO` [`REALTIME_PRIORITY`]) and when it steps down.
///
/// A thread of the normal policy woken while another process holds its
/// CPU may wait for that process's time slice to end and the kernel's
/// next tick (4 ms at `HZ=250`), whatever its nice value or own slice; a
/// real-time thread preempts at once. Measured on 2 vCPUs (2026-12-07,
/// docs/design-notes.md, "Precision by default"): beside CPU-bound
/// processes a normal runner's departures were up to 4–13 ms late (ping
/// mdev 1.3–3.7 ms through `delay 20ms`), a real-time one's within 0.11
/// ms (mdev 0.07 ms).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Priority {
    /// The normal policy throughout (`--no-realtime`).
    Normal,
    /// The default: real-time while the runner is light (below 10% of
    /// its CPU over 50 ms), normal while it is busy (above 20%). A light runner is the one whose
    /// departures are few and must each be exact, and that takes little
    /// from anyone; a busy one is forwarding at a high rate, where a
    /// real-time thread that spins before its deadlines would also keep
    /// the kernel's softirq thread (`ksoftirqd`, normal priority), which
    /// moves the packets themselves, off its CPU (at 50 kpps through a
    /// shell `--realtime` lost 2,396 packets of 200,000 in a run where
    /// the normal policy lost none).
    #[default]
    Auto,
    /// Real-time until busy above 85% of its CPU
    /// (`--realtime`; host mode): the kernel throttles real-time threads
    /// above 95%.
    Realtime,
}

/// The runner thread's real-time priority, watched. The kernel lets
/// real-time threads use at most 95% of a CPU per second and then stops
/// them for the rest of it (tens of ms, a disaster for an emulator). So
/// every [`RtGuard::WINDOW`] the thread's CPU time is read: above the
/// priority's high mark of the window it goes back to the normal policy
/// (packets keep flowing, at the accuracy of a normal thread), below its
/// low mark it takes real-time priority again.
struct RtGuard {
    /// Real-time scheduling was asked for and granted once.
    wanted: bool,
    /// Currently real-time.
    on: bool,
    /// Step down above this share of the CPU, up again below `low`.
    high: f64,
    low: f64,
    window_start: Instant,
    cpu_start: u64,
    /// Times the thread left real-time priority because it was too busy.
    demotions: u64,
}

impl RtGuard {
    const WINDOW: Duration = Duration(50_000_000);
    /// [`Priority::Realtime`]'s marks.
    const HIGH: f64 = 0.85;
    const LOW: f64 = 0.7;
    /// [`Priority::Auto`]'s marks.
    const AUTO_HIGH: f64 = 0.2;
    const AUTO_LOW: f64 = 0.1;

    fn start(priority: Priority, now: Instant) -> RtGuard {
        let (high, low) = match priority {
            Priority::Auto => (Self::AUTO_HIGH, Self::AUTO_LOW),
            _ => (Self::HIGH, Self::LOW),
        };
        let on = priority != Priority::Normal
            && crate::backends::process::set_thread_realtime(REALTIME_PRIORITY).is_ok();
        RtGuard {
            wanted: on,
            on,
            high,
            low,
            window_start: now,
            cpu_start: thread_cpu_ns(),
            demotions: 0,
        }
    }

    fn check(&mut self, now: Instant) {
        if !self.wanted || now.saturating_since(self.window_start) < Self::WINDOW {
            return;
        }
        let cpu = thread_cpu_ns();
        let wall = now.saturating_since(self.window_start).as_nanos().max(1);
        let busy = cpu.saturating_sub(self.cpu_start) as f64 / wall as f64;
        if self.on && busy > self.high {
            self.on = crate::backends::process::set_thread_normal().is_err();
            self.demotions += u64::from(!self.on);
        } else if !self.on && busy < self.low {
            self.on = crate::backends::process::set_thread_realtime(REALTIME_PRIORITY).is_ok();
        }
        self.window_start = now;
        self.cpu_start = cpu;
    }
}

/// CPU time of the calling thread, ns.
fn thread_cpu_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

/// Measure how late a short sleep wakes: p99 of 200 sleeps of 50 µs.
pub fn measure_sleep_margin() -> Duration {
    let mut h = Histogram::<u64>::new_with_bounds(1, 1_000_000_000, 3).ok();
    for _ in 0..200 {
        let t0 = crate::clock::monotonic_ns();
        std::thread::sleep(std::time::Duration::from_micros(50));
        let over = crate::clock::monotonic_ns().saturating_sub(t0 + 50_000);
        if let Some(h) = h.as_mut() {
            h.saturating_record(over.max(1));
        }
    }
    let p99 = h.map(|h| h.value_at_quantile(0.99)).unwrap_or(1_000_000);
    Duration(p99 + 20_000)
}

impl Runner {
    /// A runner over `ports`, driving `emu` (its spec's port plan numbers
    /// the ports as `ports` does).
    pub fn new(emu: Emulation, ports: Vec<Box<dyn Port>>, opts: RunnerOptions) -> Runner {
        Runner::with_margin(emu, ports, opts, None)
    }

    /// [`Runner::new`] with the sleep margin given (measured once for
    /// several workers, so that they do not measure each other's
    /// start-up), or measured here (`None`).
    pub fn with_margin(
        emu: Emulation,
        ports: Vec<Box<dyn Port>>,
        opts: RunnerOptions,
        margin: Option<Duration>,
    ) -> Runner {
        // The default timer slack (50 µs) would let every sleep overshoot;
        // ask for exact wake-ups. Failure only costs accuracy.
        let _ = nix::sys::prctl::set_timerslack(1);
        // A short time slice: woken for a departure, the thread preempts a
        // CPU-bound process at once instead of waiting for its slice to
        // end (see `set_thread_slice`); its share of the CPU is unchanged.
        let _ =
            crate::backends::process::set_thread_slice(crate::backends::process::RUNNER_SLICE_NS);
        // Departures are due to the microsecond whatever else the host
        // runs; without the privilege the runner still works, less
        // accurately. Before the margin is measured, which it lowers. Not
        // with busy polling: a thread that always spins would be
        // throttled by the kernel.
        let clock = Clock::start();
        let priority = if opts.busy_poll {
            Priority::Normal
        } else {
            opts.priority
        };
        let rt = RtGuard::start(priority, clock.now());
        let n = ports.len();
        let gso = Offloads::new(emu.spec(), ports.iter().map(|p| p.offloads()).collect());
        let mut r = Runner {
            clock,
            emu,
            ports,
            bufs: BufferPool::with_cap(opts.mem_cap),
            arrived: Vec::with_capacity(RX_BATCH),
            unflushed: Vec::with_capacity(1024),
            lateness: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .unwrap_or_else(|_| Histogram::new(3).unwrap_or_else(|_| std::process::abort())),
            late: Default::default(),
            stats: RunnerStats::default(),
            margin: Duration::ZERO,
            wake_margin: crate::margin::Margin::new(Duration::ZERO),
            run_delay: crate::margin::RunDelay::open(),
            busy_poll: opts.busy_poll,
            keep_awake: !opts.busy_poll && crate::awake::virtual_machine(),
            awake: None,
            last_in_flight: None,
            out: Vec::with_capacity(1024),
            corrupt_rng: stage_rng(opts.seed, StageKind::Corrupt, u64::MAX),
            lost: vec![None; n],
            retired: vec![PortStats::default(); n],
            rt,
            gso,
            segs: Vec::with_capacity(64),
            leaving: Vec::with_capacity(1024),
            spent: Vec::with_capacity(1024),
            links: None,
            receives: vec![true; n],
            polled: Vec::new(),
            ready: None,
            ready_ports: Vec::new(),
            handoffs: Vec::new(),
            parcels: Vec::new(),
            handoff_wait: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .unwrap_or_else(|_| Histogram::new(3).unwrap_or_else(|_| std::process::abort())),
            icmp_limit: IcmpLimit::new(clock.now()),
            tap: None,
            flows: None,
            spill_pipes: Vec::new(),
        };
        r.margin = margin.unwrap_or_else(measure_sleep_margin);
        r.wake_margin = crate::margin::Margin::new(r.margin);
        r.watch_ports();
        r.late.set_thread();
        r
    }

    /// Decide which receiving ports are read every round and which are
    /// watched for readiness (when [`WATCH_FROM`] or more can be), after
    /// the ports, the ones lost or the ones received from changed.
    fn watch_ports(&mut self) {
        let receiving = |i: &usize| self.lost[*i].is_none() && self.receives[*i];
        let watchable: Vec<usize> = (0..self.ports.len())
            .filter(receiving)
            .filter(|&i| self.ports[i].readable_when_polled())
            .collect();
        // Without an epoll instance (none left to make) every port is read
        // every round, as with few ports: slower, never wrong.
        self.ready = (watchable.len() >= WATCH_FROM)
            .then(|| {
                Readiness::new(
                    self.ports.len(),
                    watchable.iter().map(|&i| (i, self.ports[i].fd())),
                )
                .ok()
            })
            .flatten();
        let ready = self.ready.as_ref();
        self.polled = (0..self.ports.len())
            .filter(receiving)
            .filter(|&i| !ready.is_some_and(|r| r.watches(i)))
            .collect();
    }

    /// Keep the frames of pipes marked `spill` on disk in `dirs` (one
    /// directory, or two: see [`crate::spill`]) when the pool is short,
    /// at most as many as the cap's [`FRAME_BOOKKEEPING`] bytes per frame
    /// allow; `None`: never. Call before the first step.
    pub fn set_spill(&mut self, dirs: Option<Vec<std::path::PathBuf>>) {
        if let Some(dirs) = dirs.filter(|d| !d.is_empty()) {
            self.bufs.enable_spill(SpillOptions {
                dirs,
                worker: self.worker(),
                max_frames: max_on_disk(self.bufs.cap()),
            });
        }
        self.note_spill_pipes();
    }

    /// Which engine pipes' frames may go to disk: the pipes marked
    /// `spill` this runner owns (after the spec or the partition
    /// changed).
    fn note_spill_pipes(&mut self) {
        self.spill_pipes.clear();
        if self.bufs.spill_ref().is_none() {
            return;
        }
        let e = &self.emu;
        for (&n, def) in &e.spec().pipes {
            let mine = e.partition().is_none_or(|p| p.owns(n));
            if let (true, true, Some(idx)) = (def.spill, mine, e.pipe(n)) {
                let i = idx.0 as usize;
                if self.spill_pipes.len() <= i {
                    self.spill_pipes.resize(i + 1, false);
                }
                self.spill_pipes[i] = true;
            }
        }
    }

    /// Count every flow's arrivals, deliveries and drops from now on, the
    /// first `bound` flows apart and the rest as `other` (see
    /// [`FlowTable`]); `None`: stop counting.
    pub fn count_flows(&mut self, bound: Option<usize>) {
        self.flows = bound.map(|b| Box::new(FlowTable::new(b)));
    }

    /// What the flows did since the last call (`None` if not counted).
    pub fn take_flows(&mut self) -> Option<FlowSample> {
        self.flows.as_mut().map(|f| f.take())
    }

    /// Record every arrival, departure and drop from now on to `tap`
    /// (see [`crate::capture`]): one copy of the frame's bytes and one
    /// send on a channel each, never a wait.
    pub fn set_tap(&mut self, tap: Option<Tap>) {
        self.tap = tap;
    }

    /// Hand the tap a record of the frame in `buf` (`port`: where it
    /// arrived, or left), at engine instant `at`.
    fn note(&self, at: Instant, port: usize, event: Event, buf: BufId, corrupted: bool) {
        let Some(tap) = self.tap.as_ref() else {
            return;
        };
        // Read from disk if it is there (a drop or a copy of a frame
        // still waiting): recorded as it is, not loaded.
        let frame = self.bufs.bytes(buf);
        tap.send(Record {
            at_ns: self.clock.to_monotonic(at),
            port: record_port(self.bufs.meta(buf).annotation, port),
            event,
            corrupted,
            key: view_of(&self.bufs, buf).key,
            size: frame.len() as u32,
            backlog_packets: self.emu.in_flight(),
            backlog_bytes: self.emu.in_flight_bytes(),
            frame: if tap.wants_bytes()
                && matches!(event, Event::Arrive | Event::Depart | Event::Drop(_))
            {
                frame.to_vec()
            } else {
                Vec::new()
            },
        });
    }

    /// [`Runner::note`] of a drop: on the port the frame arrived by.
    fn note_drop(&self, at: Instant, why: &'static str, buf: BufId) {
        if self.tap.is_some() {
            let origin = self.bufs.meta(buf).origin as usize;
            self.note(at, origin, Event::Drop(why), buf, false);
        }
    }

    /// Count frames dropped before they had a buffer: not recorded.
    fn unrecorded(&self, n: u64) {
        if let Some(t) = self.tap.as_ref() {
            t.unrecorded(n);
        }
    }

    /// How long after leaving their last stage the packets other workers
    /// handed over were taken in (the hand-off's latency, which adds to
    /// their delay): percentiles, µs.
    pub fn handoff_latency(&self) -> Lateness {
        Lateness::from_histogram(&self.handoff_wait, false, 0)
    }

    /// Run as one of several workers: `links` reach the others, and only
    /// the ports `receives` marks are read (the others are this worker's
    /// transmit handles); `clock` is every worker's, so that the instants
    /// hand-offs carry mean the same to all (call before the first step).
    /// See [`crate::worker`].
    pub fn join(&mut self, links: Links, receives: Vec<bool>, clock: Clock) {
        self.clock = clock;
        self.icmp_limit = IcmpLimit::new(clock.now());
        self.bufs.set_worker(links.id());
        self.receives = receives;
        self.receives.resize(self.ports.len(), false);
        self.links = Some(links);
        self.watch_ports();
    }

    /// The worker this runner is (0 alone).
    pub fn worker(&self) -> u16 {
        self.links.as_ref().map_or(0, |l| l.id())
    }

    /// Whether this runner receives from port `i`.
    pub fn receives(&self, i: usize) -> bool {
        self.receives.get(i).copied().unwrap_or(false)
    }

    /// Count departures on `meter` from now on (a watcher made it before
    /// this runner's thread started), from the calling thread: the
    /// runner's.
    pub fn set_late_meter(&mut self, meter: std::sync::Arc<crate::late::LateMeter>) {
        meter.set_thread();
        self.late = meter;
    }

    /// The meter a watcher on another thread reads this runner's
    /// lateness from while it runs.
    pub fn late_meter(&self) -> std::sync::Arc<crate::late::LateMeter> {
        self.late.clone()
    }

    /// The lateness histogram (ns), to merge over workers.
    pub fn lateness_histogram(&self) -> &Histogram<u64> {
        &self.lateness
    }

    /// The emulation, to change its partition (then [`Runner::apply`]).
    pub fn emulation_mut(&mut self) -> &mut Emulation {
        &mut self.emu
    }

    /// Send what the emulation handed off to the workers owning its next
    /// pipe (a full ring drops the packet: `dropped_handoff`).
    fn ship(&mut self) {
        let Some(links) = self.links.as_mut() else {
            return;
        };
        self.emu.take_handoffs(&mut self.handoffs);
        if self.handoffs.is_empty() {
            return;
        }
        let mut hs = std::mem::take(&mut self.handoffs);
        for h in hs.drain(..) {
            let buf = h.pkt.buf;
            if self.bufs.is_spilled(buf) && self.bufs.load(buf).is_err() {
                // Its frame could not be read back from disk.
                self.stats.dropped_spill += 1;
                if let Some(f) = self.flows.as_mut() {
                    if h.pkt.flags & Packet::DUPLICATE == 0 {
                        f.dropped(&h.pkt.key, Reason::Memory);
                    }
                }
                if let Some(t) = self.tap.as_ref() {
                    t.unrecorded(1);
                }
                let m = *self.bufs.meta(buf);
                if let Some(port) = self.ports.get_mut(m.origin as usize) {
                    port.discard(&m);
                }
                if let Some((origin, frame)) = self.bufs.release(buf) {
                    if let Some(port) = self.ports.get_mut(origin as usize) {
                        port.reclaim(frame);
                    }
                }
                continue;
            }
            let Some(d) = self.bufs.detach(buf) else {
                // A frame to copy (lent, or shared by a duplicate) and no
                // memory under the cap for it.
                self.stats.dropped_memory += 1;
                if let Some(f) = self.flows.as_mut() {
                    if h.pkt.flags & Packet::DUPLICATE == 0 {
                        f.dropped(&h.pkt.key, Reason::Memory);
                    }
                }
                if let Some(tap) = self.tap.as_ref() {
                    let origin = self.bufs.meta(buf).origin as usize;
                    let at = self.clock.now();
                    let frame = self.bufs.frame(buf);
                    tap.send(Record {
                        at_ns: self.clock.to_monotonic(at),
                        port: origin as u16,
                        event: Event::Drop("memory"),
                        corrupted: false,
                        key: h.pkt.key,
                        size: frame.len() as u32,
                        backlog_packets: self.emu.in_flight(),
                        backlog_bytes: self.emu.in_flight_bytes(),
                        frame: if tap.wants_bytes() {
                            frame.to_vec()
                        } else {
                            Vec::new()
                        },
                    });
                }
                let m = self.bufs.meta(buf);
                if let Some(port) = self.ports.get_mut(m.origin as usize) {
                    port.discard(m);
                }
                if let Some((origin, frame)) = self.bufs.release(buf) {
                    if let Some(port) = self.ports.get_mut(origin as usize) {
                        port.reclaim(frame);
                    }
                }
                continue;
            };
            if let Some((origin, frame)) = d.lent {
                if let Some(port) = self.ports.get_mut(origin as usize) {
                    port.reclaim(frame);
                }
            }
            let parcel = Parcel {
                handoff: h,
                mem: d.mem,
                len: d.len,
                meta: d.meta,
                home: d.home,
            };
            match links.send(parcel) {
                Ok(()) => self.stats.handoffs_out += 1,
                Err(p) => {
                    self.stats.dropped_handoff += 1;
                    // Its bytes are in the parcel's memory, no longer a
                    // buffer of this pool: counted, not recorded.
                    if let Some(t) = self.tap.as_ref() {
                        t.unrecorded(1);
                    }
                    if let Some(port) = self.ports.get_mut(p.meta.origin as usize) {
                        port.discard(&p.meta);
                    }
                    links.send_home(p.home, p.mem, &mut self.bufs);
                }
            }
        }
        self.handoffs = hs;
        links.wake_peers();
    }

    /// Take the packets other workers handed over and offer each to the
    /// emulation where it was going; take back memory they are done with.
    fn take_parcels(&mut self) {
        let Some(links) = self.links.as_mut() else {
            return;
        };
        links.settle_memory(&mut self.bufs);
        let mut parcels = std::mem::take(&mut self.parcels);
        links.take(&mut parcels);
        if parcels.is_empty() {
            self.parcels = parcels;
            return;
        }
        // Each enters at the instant it left its last stage (the engine
        // advanced to it first), in that order: its due times are exact,
        // and a hand-off that came late shows as lateness, never as a
        // silently longer delay. Each ring's parcels are in order already
        // (a sender hands off in the order packets leave their stage), and
        // the sort is stable, so no flow is reordered.
        parcels.sort_by_key(|p| p.handoff.at);
        let now = self.clock.now();
        for p in parcels.drain(..) {
            self.advance(p.handoff.at.min(now));
            self.stats.handoffs_in += 1;
            let buf = match self.bufs.adopt(p.mem, p.len, &p.meta, p.home) {
                Ok(b) => b,
                Err(mem) => {
                    self.stats.dropped_memory += 1;
                    if let Some(t) = self.tap.as_ref() {
                        t.unrecorded(1);
                    }
                    if let Some(l) = self.links.as_mut() {
                        l.send_home(p.home, mem, &mut self.bufs);
                    }
                    continue;
                }
            };
            let mut h = p.handoff;
            h.pkt.buf = buf;
            self.handoff_wait
                .saturating_record(now.saturating_since(h.at).as_nanos().max(1));
            let pkt = h.pkt;
            let r = self.emu.resume(h);
            self.settle_ingress(r, buf, &pkt);
            self.ship();
        }
        self.parcels = parcels;
    }

    /// What became of a packet the emulation answered at once.
    /// `pkt`: the packet as it was offered (for the flow counts).
    fn settle_ingress(&mut self, r: Ingress, buf: BufId, pkt: &Packet) {
        match r {
            Ingress::Queued => {}
            Ingress::Out(out) => {
                self.flow_delivered(pkt, self.clock.now());
                if self.transmit(out as usize, buf, false) {
                    self.stats.delivered += 1;
                } else {
                    self.stats.dropped_tx += 1;
                }
                self.release(buf);
            }
            Ingress::Dropped(r) => {
                self.count_drop(r);
                self.flow_dropped(pkt, r);
                self.note_drop(self.clock.now(), r.name(), buf);
                self.discard(buf);
                self.release(buf);
            }
            Ingress::Answer(a) => {
                self.count_drop(a.into());
                self.flow_dropped(pkt, a.into());
                self.answer(a, buf);
                self.discard(buf);
                self.release(buf);
            }
        }
    }

    /// Answer the frame in `buf`, dropped by a `reset` or `unreach` rule:
    /// build the answer ([`crate::answer::build`]) in a new buffer and
    /// send it out of the port the frame came in by, at once. ICMP
    /// answers are rate-limited ([`IcmpLimit`]).
    fn answer(&mut self, a: Answer, buf: BufId) {
        let meta = *self.bufs.meta(buf);
        if meta.annotation.synthetic_header {
            // A netfilter queue's packet: no link to answer on.
            self.stats.answers_failed += 1;
            return;
        }
        if matches!(a, Answer::Unreach(_)) && !self.icmp_limit.allow(self.clock.now()) {
            self.stats.answers_limited += 1;
            return;
        }
        let made = self.bufs.make_from(buf, meta.origin, |frame, out| {
            crate::answer::build(frame, a, out)
        });
        let Some(reply) = made else {
            self.stats.answers_failed += 1;
            return;
        };
        if self.transmit(meta.origin as usize, reply, false) {
            self.stats.answers += 1;
        } else {
            self.stats.answers_failed += 1;
        }
        self.release(reply);
    }

    /// Engine options for a live run with this memory cap.
    pub fn engine_options(opts: &RunnerOptions) -> EngineOptions {
        opts.engine_options()
    }

    /// The emulation (for counters).
    pub fn emulation(&self) -> &Emulation {
        &self.emu
    }

    /// Bring the emulation to a new spec between two steps (see
    /// [`Emulation::apply`]): queued packets are kept.
    pub fn apply(&mut self, c: Compiled) -> pipelab_emu::Applied {
        let applied = self.emu.apply(c);
        self.gso.respec(self.emu.spec(), None);
        self.note_spill_pipes();
        applied
    }

    /// Black-hole pipe number `n` from now for `d` (`None`: up again
    /// now); see [`Emulation::set_pipe_down`]. The window is an instant
    /// the emulation compares each arrival with: it ends by itself,
    /// whatever happens to the caller. False if there is no pipe `n`.
    pub fn set_pipe_down(&mut self, n: u32, d: Option<Duration>) -> bool {
        let now = self.clock.now();
        self.emu.set_pipe_down(n, d.map(|d| (now, now + d)))
    }

    /// The clock in use.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The sleep margin measured at start-up.
    pub fn margin(&self) -> Duration {
        self.margin
    }

    /// The sleep margin in use now, learnt from the runner's sleeps.
    pub fn wake_margin(&self) -> Duration {
        self.wake_margin.get()
    }

    /// Accounting so far.
    pub fn stats(&self) -> RunnerStats {
        let mut s = self.stats;
        s.inside = self.emu.in_flight() as u64;
        s.wakeups = self.links.as_ref().map_or(0, |l| l.stats().wakeups);
        s.gso = self.gso.stats;
        s.spill = self.bufs.spill_stats();
        s
    }

    /// Per-port counters (over every port that held the index).
    pub fn port_stats(&self) -> Vec<(String, PortStats)> {
        self.ports
            .iter()
            .zip(&self.retired)
            .map(|(p, r)| {
                let mut sum = p.stats();
                sum += *r;
                (p.name().to_string(), sum)
            })
            .collect()
    }

    /// The ports lost so far and not replaced: (index, why).
    pub fn lost_ports(&self) -> impl Iterator<Item = (usize, &str)> + '_ {
        self.lost
            .iter()
            .enumerate()
            .filter_map(|(i, w)| w.as_deref().map(|w| (i, w)))
    }

    /// Put `port` in place of port `i` (a lost port whose interface came
    /// back): it is polled and read again, and frames due on it go out.
    /// The old port's counters are kept in [`Runner::port_stats`].
    pub fn replace_port(&mut self, i: usize, port: Box<dyn Port>) {
        if let (Some(slot), Some(r)) = (self.ports.get_mut(i), self.retired.get_mut(i)) {
            // Anything the old port still holds in its transmit ring
            // cannot go any more.
            let failed = slot.flush(&self.bufs).min(self.stats.delivered);
            self.stats.delivered -= failed;
            self.stats.dropped_tx += failed;
            *r += slot.stats();
            *slot = port;
            self.lost[i] = None;
        }
        self.watch_ports();
        let vnet = self.ports.iter().map(|p| p.offloads()).collect();
        self.gso.respec(self.emu.spec(), Some(vnet));
    }

    /// Buffer memory allocated so far, bytes.
    pub fn buffer_bytes(&self) -> u64 {
        self.bufs.allocated_bytes()
    }

    /// Bytes of memory the buffer pool answers for
    /// ([`BufferPool::memory_bytes`]: buffers, and the spill's).
    pub fn memory_bytes(&self) -> u64 {
        self.bufs.memory_bytes()
    }

    /// User-space copies of frame bytes made so far by the runner and the
    /// backends (a debug counter: at most one per forwarded frame).
    pub fn copies(&self) -> u64 {
        self.bufs.copies()
    }

    /// The buffer pool (its counters).
    pub fn pool(&self) -> &BufferPool {
        &self.bufs
    }

    /// Lateness of transmissions so far.
    pub fn lateness(&self) -> Lateness {
        Lateness::from_histogram(&self.lateness, self.rt.on, self.rt.demotions)
    }

    /// Whether nothing is inside this runner's emulation and no parcel
    /// waits for it.
    pub fn idle(&self) -> bool {
        self.emu.in_flight() == 0 && !self.links.as_ref().is_some_and(|l| l.pending())
    }

    /// Tell the port a frame came from that the emulator dropped it.
    fn discard(&mut self, buf: BufId) {
        let m = self.bufs.meta(buf);
        if let Some(port) = self.ports.get_mut(m.origin as usize) {
            port.discard(m);
        }
    }

    /// Drop one reference to `buf`; a lent frame freed by it goes back to
    /// the port that lent it.
    fn release(&mut self, buf: BufId) {
        if let Some((origin, frame)) = self.bufs.release(buf) {
            if let Some(port) = self.ports.get_mut(origin as usize) {
                port.reclaim(frame);
            }
        }
    }

    /// Advance the emulation to `now`: what leaves it waits in `out`.
    fn advance(&mut self, now: Instant) {
        let bufs = &self.bufs;
        self.emu
            .advance(now, &mut self.out, &mut |p: &Packet| view_of(bufs, p.buf));
        self.ship();
    }

    /// Transmit everything due by now.
    fn serve(&mut self) {
        let now = self.clock.now();
        self.advance(now);
        let mut out = std::mem::take(&mut self.out);
        for d in out.drain(..) {
            let buf = d.pkt.buf;
            match d.exit {
                Exit::Duplicated => {
                    self.bufs.share(buf);
                    self.stats.received += 1;
                    if self.tap.is_some() {
                        let origin = self.bufs.meta(buf).origin as usize;
                        self.note(d.at, origin, Event::Duplicate, buf, false);
                    }
                    continue;
                }
                Exit::Dropped(reason) => {
                    self.count_drop(reason);
                    self.flow_dropped(&d.pkt, reason);
                    self.note_drop(d.at, reason.name(), buf);
                    self.discard(buf);
                }
                Exit::Answer(a) => {
                    let reason: Reason = a.into();
                    self.count_drop(reason);
                    self.flow_dropped(&d.pkt, reason);
                    self.note_drop(d.at, reason.name(), buf);
                    if self.resident(buf) {
                        self.answer(a, buf);
                    } else {
                        self.stats.answers_failed += 1;
                    }
                    self.discard(buf);
                }
                Exit::Deliver { .. } if !self.resident(buf) => {
                    // Its frame could not be read back from disk: lost,
                    // and said so.
                    self.stats.dropped_spill += 1;
                    self.flow_dropped(&d.pkt, Reason::Memory);
                    self.unrecorded(1);
                    self.discard(buf);
                }
                Exit::Deliver { port } => {
                    if d.pkt.flags & Packet::CE != 0 {
                        crate::ecn::mark_ce(self.bufs.frame_mut(buf));
                        self.note(d.at, port as usize, Event::Mark, buf, false);
                    }
                    if d.pkt.flags & Packet::CORRUPT != 0 {
                        self.note(d.at, port as usize, Event::Corrupt, buf, false);
                    }
                    if d.pkt.flags & Packet::CORRUPT != 0 {
                        // A checksum left to the device is completed
                        // first, so that the receiver sees the damage.
                        self.gso.settle(&mut self.bufs, buf);
                        let f = self.bufs.frame_mut(buf);
                        if !f.is_empty() {
                            let bit = self.corrupt_rng.gen_range(0..f.len() as u64 * 8);
                            flip_bit(f, bit);
                        }
                    }
                    // Lateness of the departure decision, before the
                    // transmit syscalls (which may run the far stack).
                    let now = self.clock.now();
                    let late = now.saturating_since(d.at).as_nanos();
                    self.lateness.saturating_record(late.max(1));
                    self.late.record(late);
                    self.flow_delivered(&d.pkt, now);
                    self.leaving.push(Leaving {
                        port: port as usize,
                        buf,
                        segments: 1,
                        intact: d.pkt.flags & Packet::CORRUPT == 0,
                    });
                    continue;
                }
            }
            self.release(buf);
        }
        self.out = out;
        // TCP segments of one flow leaving together by a port that takes
        // super-frames go as one (see `crate::gso`); then every frame.
        let mut leaving = std::mem::take(&mut self.leaving);
        let mut spent = std::mem::take(&mut self.spent);
        self.gso.coalesce(&mut self.bufs, &mut leaving, &mut spent);
        for l in leaving.drain(..) {
            if self.transmit(l.port, l.buf, !l.intact) {
                self.stats.delivered += l.segments as u64;
            } else {
                self.stats.dropped_tx += l.segments as u64;
            }
            self.release(l.buf);
        }
        for buf in spent.drain(..) {
            self.release(buf);
        }
        self.leaving = leaving;
        self.spent = spent;
    }

    /// Send the frame in `buf` out of port `port`; false if it could not.
    /// A frame sent is kept (one more reference) until the ports are
    /// flushed.
    /// With a tap, the frame is recorded as it went (`corrupted`: the
    /// emulation damaged it), or as dropped (`tx`).
    fn transmit(&mut self, port: usize, buf: BufId, corrupted: bool) -> bool {
        // The departure's instant: when the frame is handed to the
        // kernel (the send may run the receiver's stack before it
        // returns).
        let at = self.tap.as_ref().map(|_| self.clock.now());
        let lost = self.lost.get(port).is_none_or(|w| w.is_some());
        let sent = match self.ports.get_mut(port) {
            Some(p) if !lost => {
                self.gso.before_send(&mut self.bufs, buf, p.offloads());
                p.send(&self.bufs, buf).is_ok()
            }
            _ => false,
        };
        if sent {
            self.bufs.share(buf);
            self.unflushed.push(buf);
        }
        if let Some(at) = at {
            if sent {
                self.note(at, port, Event::Depart, buf, corrupted);
            } else {
                self.note_drop(at, "tx", buf);
            }
        }
        sent
    }

    /// Count the delivery of `pkt` (not a copy), leaving at `now`, for
    /// its flow.
    #[inline]
    fn flow_delivered(&mut self, pkt: &Packet, now: Instant) {
        if let Some(f) = self.flows.as_mut() {
            if pkt.flags & Packet::DUPLICATE == 0 {
                let delay = now.saturating_since(pkt.born).as_nanos();
                f.bucket(&pkt.key).delivered(pkt.len, delay);
            }
        }
    }

    /// Count the drop of `pkt` (not a copy) for `reason`, for its flow.
    #[inline]
    fn flow_dropped(&mut self, pkt: &Packet, reason: Reason) {
        if let Some(f) = self.flows.as_mut() {
            if pkt.flags & Packet::DUPLICATE == 0 {
                f.dropped(&pkt.key, reason);
            }
        }
    }

    fn count_drop(&mut self, reason: Reason) {
        let s = &mut self.stats;
        match reason {
            Reason::Queue => s.dropped_queue += 1,
            Reason::Loss => s.dropped_loss += 1,
            Reason::Memory => s.dropped_memory += 1,
            Reason::Aqm => s.dropped_aqm += 1,
            Reason::Link => s.dropped_link += 1,
            Reason::Rule | Reason::NoRoute => s.dropped_rule += 1,
            Reason::Loop => s.dropped_loop += 1,
            Reason::Reset => s.dropped_reset += 1,
            Reason::Unreach => s.dropped_unreach += 1,
            Reason::Down => s.dropped_down += 1,
        }
    }

    /// Read every waiting frame from every port and offer it to the engine.
    /// A port whose interface was deleted (its backend's `NotFound` error)
    /// is marked lost instead of ending the run; any other error does.
    fn receive(&mut self) -> io::Result<()> {
        let mut ports = std::mem::take(&mut self.ready_ports);
        ports.clear();
        ports.extend_from_slice(&self.polled);
        if let Some(r) = self.ready.as_mut() {
            r.ready(&mut ports)?;
        }
        let mut lost = false;
        let mut result = Ok(());
        for &p in &ports {
            match self.receive_from(p) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    self.lost[p] = Some(e.to_string());
                    lost = true;
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
                Ok(()) => {}
            }
        }
        self.ready_ports = ports;
        if lost {
            // A lost port is neither read nor waited on any more.
            self.watch_ports();
        }
        result
    }

    /// Take up to a batch of waiting frames from port `p` and offer each
    /// to the emulation.
    fn receive_from(&mut self, p: usize) -> io::Result<()> {
        let mut arrived = std::mem::take(&mut self.arrived);
        arrived.clear();
        let mut rx = Rx::new(&mut self.bufs, p as u16, RX_BATCH, &mut arrived);
        let r = self.ports[p].recv(&mut rx);
        let refused = rx.refused();
        self.stats.received += refused;
        self.stats.dropped_memory += refused;
        self.unrecorded(refused);
        // Frames lent before an error are still offered; a super-frame as
        // its segments, unless it may cross whole.
        let mut segs = std::mem::take(&mut self.segs);
        for &buf in &arrived {
            if let Some(refused) = self.gso.on_receive(&mut self.bufs, buf, &mut segs) {
                // Cut: the super-frame's buffer is done with.
                self.stats.received += refused;
                self.stats.dropped_memory += refused;
                self.unrecorded(refused);
                self.release(buf);
            }
            for seg in segs.drain(..) {
                self.offer(p, seg);
            }
        }
        self.segs = segs;
        self.arrived = arrived;
        r
    }

    /// Offer the frame in `buf`, just received on port `p`, to the
    /// emulation.
    fn offer(&mut self, p: usize, buf: BufId) {
        self.stats.received += 1;
        let now = self.clock.now();
        let mut info = parse_ethernet(self.bufs.frame(buf));
        self.bufs.meta(buf).annotation.apply(&mut info.view);
        // Dummynet's L3 accounting: the link charges the IP packet's
        // length (a non-IP frame's, less its Ethernet header).
        let mut pkt = Packet::new(info.l3_len.max(1));
        pkt.buf = buf;
        pkt.born = now;
        pkt.key = info.view.key;
        if info.ecn != 0 {
            pkt.flags |= Packet::ECT;
        }
        // Departures due by now free their slots first.
        self.advance(now);
        if let Some(f) = self.flows.as_mut() {
            f.bucket(&pkt.key).sent(pkt.len);
        }
        // The emulation's ingress in its two halves: the rules say which
        // pipe the packet enters, and whether its frame is to go to disk.
        let mut spill = false;
        let r = match self.emu.admit(&mut pkt, p as u16, &mut info.view) {
            Admission::Out(o) => Ingress::Out(o),
            Admission::Dropped(r) => Ingress::Dropped(r),
            Admission::Answer(a) => Ingress::Answer(a),
            Admission::Enter(e) => {
                spill = self
                    .spill_pipes
                    .get(e.pipe().0 as usize)
                    .copied()
                    .unwrap_or(false)
                    && self.bufs.wants_spill();
                if spill && !self.bufs.can_spill() {
                    if self.bufs.may_keep() {
                        // The disk is behind (or failing) and memory has
                        // room: it waits in memory.
                        spill = false;
                    } else if self.bufs.wait_spill() {
                        // A batch was written meanwhile: on disk after
                        // all (the runner waited a moment for it).
                    } else {
                        // Neither the disk (full, a write failed, its
                        // bookkeeping bound) nor memory can take it:
                        // refused before the emulation takes it, so no
                        // accepted packet is ever lost.
                        self.refuse_spill(now, p, buf, &pkt);
                        return;
                    }
                }
                self.emu.enter(now, pkt, e)
            }
        };
        // After ingress, so that the backlog counts it if it entered;
        // before what became of it.
        self.note(now, p, Event::Arrive, buf, false);
        self.settle_ingress(r, buf, &pkt);
        self.ship();
        if spill && r == Ingress::Queued {
            // Taken by one of this runner's pipes (never handed off: a
            // spilling pipe is this runner's own), its frame waits on
            // disk. A spill that fails now keeps it in memory.
            if let Ok(Some((origin, frame))) = self.bufs.spill(buf) {
                if let Some(port) = self.ports.get_mut(origin as usize) {
                    port.reclaim(frame);
                }
            }
        }
    }

    /// Drop the frame in `buf` (from port `p`), which a spilling pipe was
    /// to take while the spill cannot take more: counted as `spill`.
    fn refuse_spill(&mut self, now: Instant, p: usize, buf: BufId, pkt: &Packet) {
        self.bufs.count_spill_refused();
        self.stats.dropped_spill += 1;
        if let Some(f) = self.flows.as_mut() {
            f.dropped(&pkt.key, Reason::Memory);
        }
        self.note(now, p, Event::Arrive, buf, false);
        self.note_drop(now, "spill", buf);
        self.discard(buf);
        self.release(buf);
    }

    /// Bring the frame in `buf` back from disk if it is there (it is
    /// needed now); false if it could not be read (counted as a `spill`
    /// drop by the caller).
    #[inline]
    fn resident(&mut self, buf: BufId) -> bool {
        if !self.bufs.is_spilled(buf) {
            return true;
        }
        self.bufs.load(buf).is_ok()
    }

    /// Hand every port's queued transmissions to the kernel; frames that
    /// could not go after all move from `delivered` to `dropped_tx`. A
    /// port lost since it accepted frames is flushed too: what it holds
    /// fails now and is counted, and it keeps no buffer past this point.
    fn flush_ports(&mut self) {
        for p in self.ports.iter_mut() {
            let failed = p.flush(&self.bufs).min(self.stats.delivered);
            self.stats.delivered -= failed;
            self.stats.dropped_tx += failed;
        }
        // The ports are done with what they were given to send.
        let mut sent = std::mem::take(&mut self.unflushed);
        for buf in sent.drain(..) {
            self.release(buf);
        }
        self.unflushed = sent;
        if let Some(l) = self.links.as_mut() {
            l.settle_memory(&mut self.bufs);
        }
    }

    /// Serve, receive, and wait until there is work or `limit` passes.
    /// `extra` is one more descriptor to wake on (a child's pidfd).
    pub fn step(&mut self, limit: Duration, extra: Option<BorrowedFd<'_>>) -> io::Result<()> {
        self.rt.check(self.clock.now());
        self.take_parcels();
        self.serve();
        self.receive()?;
        self.take_parcels();
        self.serve();
        self.flush_ports();
        if self.links.as_ref().is_some_and(|l| l.pending()) {
            return Ok(());
        }
        self.read_back();
        let now = self.clock.now();
        let wake = self
            .emu
            .next_deadline()
            .unwrap_or(now + limit)
            .min(now + limit);
        let until_wake = wake - now;
        if until_wake == Duration::ZERO {
            return Ok(());
        }
        let sleep = if self.busy_poll {
            Duration::ZERO
        } else {
            Duration(
                until_wake
                    .as_nanos()
                    .saturating_sub(self.wake_margin.get().as_nanos()),
            )
        };
        // One poll set per wait, reused by every spin iteration.
        let links = self.links.as_ref();
        let mut fds: Vec<PollFd<'_>> = self
            .polled
            .iter()
            .map(|&i| self.ports[i].fd())
            .chain(self.ready.as_ref().map(|r| r.fd()))
            .chain(extra)
            .chain(links.map(|l| l.fd()))
            .map(|fd| PollFd::new(fd, PollFlags::POLLIN))
            .collect();
        if sleep.as_nanos() >= 50_000 {
            // Another worker writes the wake-up only while the flag is up.
            if links.is_none_or(|l| l.may_sleep()) {
                let due = now + sleep;
                let waited_before = self.run_delay.read();
                if self.emu.in_flight() > 0 {
                    self.last_in_flight = Some(now);
                }
                let idle = self
                    .last_in_flight
                    .map_or(u64::MAX, |t| (now - t).as_nanos());
                if self.awake.is_none()
                    && self.keep_awake
                    && crate::awake::spins(sleep.as_nanos(), idle)
                {
                    self.awake = Some(crate::awake::KeepAwake::start("pipelab"));
                }
                if let Some(Some(a)) = &mut self.awake {
                    a.sleeping(sleep.as_nanos(), idle);
                }
                let r = wait_readable(&mut fds, sleep);
                if let Some(l) = links {
                    l.awake();
                }
                if matches!(r, Ok(false)) {
                    // Slept to the end: how late the wake-up came, less
                    // the time spent waiting for a CPU.
                    let woke = self.clock.now();
                    let waited = self.run_delay.read().saturating_sub(waited_before);
                    let late =
                        (woke >= due).then(|| (woke - due).as_nanos().saturating_sub(waited));
                    if let (Some(Some(a)), Some(late)) = (&mut self.awake, late) {
                        a.woke(late);
                    }
                    if let Some(late) = late {
                        self.wake_margin.woke(Duration(late), woke.as_nanos());
                        if self.wake_margin.slow_wakes() >= crate::awake::SLOW_WAKE {
                            self.keep_awake = true;
                        }
                    }
                }
                r?;
            }
        } else {
            // Spin until the deadline, a frame or a parcel arrives.
            while self.clock.now() < wake {
                if wait_readable(&mut fds, Duration::ZERO)? || links.is_some_and(|l| l.pending()) {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Bring frames back from disk ahead of their departure, in the order
    /// written, while the pool has room (see [`BufferPool::read_back`]):
    /// [`READ_BACK_FEW`] frames at least, so that reading keeps pace with
    /// a link whose departures leave no idle time, then more, a few at a
    /// time, while the next deadline is more than [`READ_BACK_GUARD`] away
    /// (past the wake-up margin), so that the disk delays no departure.
    fn read_back(&mut self) {
        if !self.bufs.spill_busy() {
            return;
        }
        let until = self.emu.next_deadline().map(|d| {
            Instant(
                d.as_nanos()
                    .saturating_sub(self.wake_margin.get().as_nanos())
                    .saturating_sub(READ_BACK_GUARD.as_nanos()),
            )
        });
        let mut budget = READ_BACK_BATCH;
        if self.bufs.read_back(READ_BACK_FEW) < READ_BACK_FEW {
            return;
        }
        budget -= READ_BACK_FEW;
        while budget > 0 && until.is_none_or(|u| self.clock.now() < u) {
            if self.bufs.read_back(READ_BACK_FEW) < READ_BACK_FEW {
                return;
            }
            budget -= READ_BACK_FEW;
        }
    }

    /// Run until `done()` says so, serving in between.
    pub fn run_until(
        &mut self,
        extra: Option<BorrowedFd<'_>>,
        mut done: impl FnMut(&mut Self) -> bool,
    ) -> io::Result<()> {
        while !done(self) {
            self.step(Duration::from_millis(100), extra)?;
        }
        Ok(())
    }

    /// After the last arrival: keep serving until the engine is empty or
    /// `bound` has passed, so packets in flight reach the far end.
    pub fn drain(&mut self, bound: Duration) -> io::Result<()> {
        let end = self.clock.now() + bound;
        while (self.emu.in_flight() > 0 || self.links.as_ref().is_some_and(|l| l.pending()))
            && self.clock.now() < end
        {
            self.step(Duration::from_millis(10), None)?;
        }
        Ok(())
    }
}

/// `ppoll` on `fds` for readability, at most `timeout`; true if any is.
fn wait_readable(fds: &mut [PollFd<'_>], timeout: Duration) -> io::Result<bool> {
    let ts = nix::sys::time::TimeSpec::from(std::time::Duration::from_nanos(timeout.as_nanos()));
    match nix::poll::ppoll(fds, Some(ts), None) {
        Ok(n) => Ok(n > 0),
        Err(nix::errno::Errno::EINTR) => Ok(false),
        Err(e) => Err(io::Error::from(e)),
    }
}
