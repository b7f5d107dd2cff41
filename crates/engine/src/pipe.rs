//! One Dummynet pipe: queue → link → delay line (dummynet-revisited §3.1).
//!
//! * **Queue**: a FIFO bounded in slots or bytes. The packet being
//!   transmitted stays in the queue until its last bit is on the wire, as in
//!   Dummynet, so `queue 50` means at most 50 packets waiting *or* sending.
//!   A packet that finds the queue full is dropped and counted.
//! * **Link**: serves the head of the queue at bandwidth `B`; packet `i`
//!   finishes transmission `(l_i + Q_i)/B` after its arrival, `Q_i` being the
//!   bytes ahead of it. Transmission times carry their sub-nanosecond
//!   remainder from one back-to-back packet to the next (`Rate::tx_time`), so
//!   a busy link delivers exactly `B` bits per second however long it runs.
//! * **Delay line**: holds each transmitted packet for the propagation delay
//!   `tD`. It is a FIFO: a packet never overtakes the one ahead of it.
//!
//! So a packet leaves the pipe at `T_i = (l_i + Q_i)/B + t_D` after arrival,
//! the paper's formula, with no timer tick: deadlines are exact nanoseconds.
//!
//! A pipe does not know the clock or the other pipes: the engine calls
//! [`Pipe::enqueue`] at arrivals and [`Pipe::step`] at the pipe's deadline.

use crate::config::PipeConfig;
use crate::packet::{List, Pool};
use crate::time::{Duration, Instant};

/// Counters of one pipe, read by `pipelab sim`, `show` and the tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipeStats {
    /// Packets that arrived at the pipe (accepted or not).
    pub arrivals: u64,
    /// Bytes that arrived.
    pub arrival_bytes: u64,
    /// Packets that left the delay line.
    pub departures: u64,
    /// Bytes that left the delay line.
    pub departure_bytes: u64,
    /// Packets dropped because the queue was full (tail drop).
    pub drops: u64,
    /// Bytes dropped because the queue was full.
    pub drop_bytes: u64,
    /// Packets in the queue now (including the one being transmitted).
    pub backlog: u32,
    /// Bytes in the queue now.
    pub backlog_bytes: u64,
    /// Largest `backlog` ever seen.
    pub max_backlog: u32,
    /// Largest `backlog_bytes` ever seen.
    pub max_backlog_bytes: u64,
    /// Packets in the delay line now.
    pub in_delay_line: u32,
}

/// Why a pipe refused a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The queue was full (tail drop).
    QueueFull,
}

/// A pipe's state. Its configuration is immutable and swapped whole on
/// reconfiguration; queued packets are kept.
#[derive(Debug)]
pub struct Pipe {
    cfg: PipeConfig,
    queue: List,
    /// When the head of the queue finishes transmission (valid while the
    /// queue is not empty).
    tx_done: Instant,
    /// When the link last became free, and the sub-nanosecond remainder of
    /// that instant in units of `1/B` ns (see `Rate::tx_time`).
    link_free_at: Instant,
    tx_carry: u64,
    delay_line: List,
    stats: PipeStats,
    /// The pipe's live entry in the engine's event queue: (time, seq).
    pub(crate) scheduled: Option<(Instant, u64)>,
}

impl Pipe {
    /// An idle pipe.
    pub fn new(cfg: PipeConfig) -> Pipe {
        Pipe {
            cfg,
            queue: List::default(),
            tx_done: Instant::ZERO,
            link_free_at: Instant::ZERO,
            tx_carry: 0,
            delay_line: List::default(),
            stats: PipeStats::default(),
            scheduled: None,
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &PipeConfig {
        &self.cfg
    }

    /// Swap in a new configuration. Queued packets are kept; the packet
    /// being transmitted finishes at the old rate and the new bandwidth and
    /// delay apply from the next transmission (packets already in the delay
    /// line keep their exit time).
    pub fn reconfigure(&mut self, cfg: PipeConfig) {
        self.cfg = cfg;
    }

    /// Counters.
    pub fn stats(&self) -> &PipeStats {
        &self.stats
    }

    /// Offer packet `i` (already in `pool`) to the pipe at `now`.
    ///
    /// Precondition: the engine has served this pipe up to `now`.
    #[inline]
    pub(crate) fn enqueue(&mut self, pool: &mut Pool, i: u32, now: Instant) -> Result<(), Refusal> {
        let len = pool.get(i).pkt.len;
        self.catch_up(pool, now);
        self.stats.arrivals += 1;
        self.stats.arrival_bytes += len as u64;
        if !self
            .cfg
            .queue()
            .admits(self.queue.len(), self.queue.bytes(), len)
        {
            self.stats.drops += 1;
            self.stats.drop_bytes += len as u64;
            return Err(Refusal::QueueFull);
        }
        pool.get_mut(i).arrival = now;
        let was_idle = self.queue.is_empty();
        self.queue.push_back(pool, i);
        self.note_backlog();
        if was_idle {
            self.start_tx(pool, now);
        }
        Ok(())
    }

    /// Start transmitting the head of the queue, no earlier than `now`.
    #[inline]
    fn start_tx(&mut self, pool: &Pool, now: Instant) {
        let Some(h) = self.queue.front() else { return };
        let start = if now > self.link_free_at {
            // The link was idle: the remainder of the last transmission is
            // irrelevant to a transmission that starts later.
            self.tx_carry = 0;
            now
        } else {
            self.link_free_at
        };
        let len = pool.get(h).pkt.len as u64;
        self.tx_done = start + self.cfg.bw().tx_time(len, &mut self.tx_carry);
    }

    /// The next instant at which a packet leaves this pipe.
    ///
    /// Only exits are events. Transmission ends are settled lazily by
    /// [`Pipe::catch_up`] whenever the pipe is touched (an arrival or an
    /// exit), which halves the work of the deadline queue: one event per
    /// packet and pipe. Lazy settling is exact because the caller's contract
    /// (advance to `now` before enqueueing at `now`) guarantees the pipe is
    /// touched before anything could observe its queue.
    #[inline]
    pub(crate) fn next_deadline(&self, pool: &Pool) -> Option<Instant> {
        let sending = (!self.queue.is_empty()).then(|| self.tx_done + self.cfg.delay());
        let delayed = self.delay_line.front().map(|i| pool.get(i).due);
        match (sending, delayed) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Settle every transmission that ended at or before `t`: move the
    /// packet into the delay line (exit = end of transmission + `t_D`) and
    /// start the next one back to back.
    #[inline]
    fn catch_up(&mut self, pool: &mut Pool, t: Instant) {
        let delay: Duration = self.cfg.delay();
        while !self.queue.is_empty() && self.tx_done <= t {
            let Some(i) = self.queue.pop_front(pool) else {
                break;
            };
            let done = self.tx_done;
            self.link_free_at = done;
            pool.get_mut(i).due = done + delay;
            self.delay_line.push_back(pool, i);
            self.start_tx(pool, done);
        }
    }

    /// Do everything due at or before `t`: settle transmissions, and append
    /// to `out` the packets that leave the pipe (each with its exit time in
    /// the slot's `due`), in exit order.
    #[inline]
    pub(crate) fn step(&mut self, pool: &mut Pool, t: Instant, out: &mut Vec<u32>) {
        self.catch_up(pool, t);
        while let Some(h) = self.delay_line.front() {
            if pool.get(h).due > t {
                break;
            }
            if let Some(i) = self.delay_line.pop_front(pool) {
                let len = pool.get(i).pkt.len as u64;
                self.stats.departures += 1;
                self.stats.departure_bytes += len;
                out.push(i);
            }
        }
        self.note_backlog();
    }

    #[inline]
    fn note_backlog(&mut self) {
        let s = &mut self.stats;
        s.backlog = self.queue.len();
        s.backlog_bytes = self.queue.bytes();
        s.in_delay_line = self.delay_line.len();
        s.max_backlog = s.max_backlog.max(s.backlog);
        s.max_backlog_bytes = s.max_backlog_bytes.max(s.backlog_bytes);
    }
}
