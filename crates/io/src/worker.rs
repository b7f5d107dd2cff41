//! Workers: what connects the runners of one emulation split over
//! threads (ModelNet's cores, §2.2).
//!
//! Each worker is a [`crate::runner::Runner`] on a thread of its own with
//! an [`pipelab_emu::Emulation`] of the same spec that owns only some of
//! its pipes ([`pipelab_emu::partition`]), the ports whose frames enter
//! them, a transmit handle on every other port, and a buffer pool of its
//! own. A packet whose next pipe another worker owns leaves as a
//! [`Parcel`]: its hand-off (descriptor, instant, where it goes on), its
//! frame's memory (moved, not copied: [`crate::buffers::BufferPool::detach`])
//! and metadata. [`Links`] are a worker's ends of the rings between
//! workers:
//!
//! * one bounded lock-free single-producer/single-consumer ring
//!   ([`crate::spsc`]) per ordered pair of workers for parcels: a full
//!   ring drops the packet, counted as `dropped_handoff` (a worker never
//!   waits for another); packets of a flow leave in order and a ring
//!   keeps it, so no flow is reordered;
//! * one per ordered pair for memory going home: a buffer whose frame
//!   another worker handed over goes back to its pool when the receiving
//!   worker is done with it (kept aside and retried if that ring is
//!   full: memory is never lost, and no worker touches another's
//!   buffers);
//! * an `eventfd` per worker in its poll set: a worker that pushed a
//!   parcel writes the receiver's only when the receiver may be asleep
//!   (a flag it raises before it sleeps and checks the rings after:
//!   with a full fence on both sides, either the sleeper sees the parcel
//!   or the sender sees the flag).

use crate::buffers::{BufMeta, BufferPool, FrameMem};
use crate::spsc::{ring, Consumer, Producer};
use nix::sys::eventfd::{EfdFlags, EventFd};
use pipelab_emu::Handoff;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::Arc;

/// Parcels each ring holds (per ordered pair of workers): at 1 Mpps,
/// 4 ms of hand-offs.
pub const PARCEL_RING: usize = 4096;
/// Memory each return ring holds.
pub const RETURN_RING: usize = 16384;
/// Parcels taken from one ring per call (a bounded batch, as a port's).
pub const PARCEL_BATCH: usize = 256;

/// A packet handed from one worker to another, with its frame.
pub struct Parcel {
    /// The descriptor and where it goes on.
    pub handoff: Handoff,
    /// The frame's memory (a small buffer's, or a large one's for a
    /// super-frame).
    pub mem: FrameMem,
    /// The frame's length.
    pub len: u32,
    /// The frame's metadata (origin port, annotation).
    pub meta: BufMeta,
    /// The worker the memory belongs to.
    pub home: u16,
}

/// A worker's wake-up: an `eventfd` and whether it may be asleep.
struct Waker {
    fd: EventFd,
    asleep: AtomicBool,
}

impl Waker {
    fn new() -> io::Result<Waker> {
        Ok(Waker {
            fd: EventFd::from_value_and_flags(0, EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)
                .map_err(io::Error::from)?,
            asleep: AtomicBool::new(false),
        })
    }

    /// Wake it if it may be asleep (after the parcel was published).
    fn wake(&self) {
        fence(Ordering::SeqCst);
        if self.asleep.load(Ordering::SeqCst) {
            let _ = self.fd.write(1);
        }
    }
}

/// Hand-off counters of one worker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Memory sent home.
    pub returned: u64,
    /// Wake-ups written to other workers.
    pub wakeups: u64,
}

/// One worker's ends of the rings between workers. See the module
/// documentation.
pub struct Links {
    id: u16,
    workers: u16,
    /// Parcels to worker `w` (`None` for itself).
    out: Vec<Option<Producer<Parcel>>>,
    /// Parcels from the others.
    inbound: Vec<Consumer<Parcel>>,
    /// Memory to its home worker.
    home_out: Vec<Option<Producer<FrameMem>>>,
    /// This worker's memory, back from the others.
    home_in: Vec<Consumer<FrameMem>>,
    peers: Vec<Arc<Waker>>,
    me: Arc<Waker>,
    /// Workers sent a parcel since the last [`Links::wake_peers`].
    to_wake: Vec<bool>,
    /// Memory whose return ring was full, to retry.
    backlog: Vec<(u16, FrameMem)>,
    stats: LinkStats,
}

/// The links of `workers` workers, worker `i`'s at index `i`.
pub fn mesh(workers: u16) -> io::Result<Vec<Links>> {
    let k = workers.max(1) as usize;
    let wakers: Vec<Arc<Waker>> = (0..k)
        .map(|_| Waker::new().map(Arc::new))
        .collect::<io::Result<_>>()?;
    let mut links: Vec<Links> = (0..k)
        .map(|i| Links {
            id: i as u16,
            workers: k as u16,
            out: (0..k).map(|_| None).collect(),
            inbound: Vec::new(),
            home_out: (0..k).map(|_| None).collect(),
            home_in: Vec::new(),
            peers: wakers.clone(),
            me: wakers[i].clone(),
            to_wake: vec![false; k],
            backlog: Vec::new(),
            stats: LinkStats::default(),
        })
        .collect();
    for from in 0..k {
        for to in 0..k {
            if from == to {
                continue;
            }
            let (p, c) = ring(PARCEL_RING);
            links[from].out[to] = Some(p);
            links[to].inbound.push(c);
            let (p, c) = ring(RETURN_RING);
            links[from].home_out[to] = Some(p);
            links[to].home_in.push(c);
        }
    }
    Ok(links)
}

impl Links {
    /// This worker.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// Workers in all.
    pub fn workers(&self) -> u16 {
        self.workers
    }

    /// Counters so far.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// Hand `p` to worker `p.handoff.to`; `Err(p)` if its ring is full
    /// (or there is no such worker).
    // The refused parcel comes back whole (its memory goes home); boxing
    // it would allocate per packet on the hot path.
    #[allow(clippy::result_large_err)]
    pub fn send(&mut self, p: Parcel) -> Result<(), Parcel> {
        let to = p.handoff.to as usize;
        match self.out.get_mut(to).and_then(|o| o.as_mut()) {
            Some(ring) => {
                ring.push(p)?;
                self.to_wake[to] = true;
                Ok(())
            }
            None => Err(p),
        }
    }

    /// Wake the workers sent parcels since the last call, if they may be
    /// asleep.
    pub fn wake_peers(&mut self) {
        for (w, flag) in self.to_wake.iter_mut().enumerate() {
            if std::mem::take(flag) {
                if let Some(p) = self.peers.get(w) {
                    if p.asleep.load(Ordering::Relaxed) {
                        self.stats.wakeups += 1;
                    }
                    p.wake();
                }
            }
        }
    }

    /// Whether a parcel waits for this worker.
    pub fn pending(&self) -> bool {
        self.inbound.iter().any(|c| !c.is_empty())
    }

    /// Append waiting parcels to `out`, at most [`PARCEL_BATCH`] per
    /// ring, each ring's in order.
    pub fn take(&mut self, out: &mut Vec<Parcel>) {
        for c in &mut self.inbound {
            for _ in 0..PARCEL_BATCH {
                match c.pop() {
                    Some(p) => out.push(p),
                    None => break,
                }
            }
        }
    }

    /// Send `mem` home to worker `home` (kept and retried if its ring is
    /// full); this worker's own goes straight back to `pool`.
    pub fn send_home(&mut self, home: u16, mem: FrameMem, pool: &mut BufferPool) {
        if home == self.id {
            pool.restore(mem);
            return;
        }
        match self
            .home_out
            .get_mut(home as usize)
            .and_then(|o| o.as_mut())
        {
            Some(ring) => match ring.push(mem) {
                Ok(()) => self.stats.returned += 1,
                Err(mem) => self.backlog.push((home, mem)),
            },
            // No such worker: the memory is simply freed.
            None => drop(mem),
        }
    }

    /// Send home what `pool` is done with (and what waited for room),
    /// and take back this worker's memory the others are done with.
    pub fn settle_memory(&mut self, pool: &mut BufferPool) {
        let mut out: Vec<(u16, FrameMem)> = pool.take_outbox().collect();
        out.append(&mut self.backlog);
        for (home, mem) in out {
            self.send_home(home, mem, pool);
        }
        for c in &mut self.home_in {
            while let Some(mem) = c.pop() {
                pool.restore(mem);
            }
        }
    }

    /// The descriptor that polls readable when another worker woke this
    /// one.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.me.fd.as_fd()
    }

    /// About to sleep: raise the flag, then look at the rings once more.
    /// Returns false (and lowers the flag) if a parcel arrived meanwhile.
    pub fn may_sleep(&self) -> bool {
        self.me.asleep.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if self.pending() {
            self.me.asleep.store(false, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// Awake again: lower the flag and consume a wake-up.
    pub fn awake(&self) {
        self.me.asleep.store(false, Ordering::SeqCst);
        let _ = self.me.fd.read();
    }
}

/// Let this process open at least `want` descriptors: raise the soft
/// `RLIMIT_NOFILE`, and the hard one too where the process may
/// (`CAP_SYS_RESOURCE`, up to the kernel's `fs.nr_open`: a 10,000-VN
/// topology needs some 20,300 where many hosts' hard limit is 20,000);
/// an error names both. The limit is the process's own: nothing on the
/// host changes.
pub fn raise_fd_limit(want: u64) -> io::Result<()> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, exclusively borrowed rlimit the call fills.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if lim.rlim_cur >= want {
        return Ok(());
    }
    if lim.rlim_max < want {
        let raised = libc::rlimit {
            rlim_cur: want,
            rlim_max: want,
        };
        // SAFETY: `raised` is a valid rlimit; the kernel refuses (EPERM)
        // a raise of the hard limit the process may not make.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Ok(());
        }
        return Err(io::Error::other(format!(
            "{want} descriptors are needed but the hard limit (ulimit -Hn) is {} and this process may not raise it",
            lim.rlim_max
        )));
    }
    lim.rlim_cur = want;
    // SAFETY: `lim` is a valid rlimit read above, only its soft value
    // raised within the hard one.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// CPUs this process may run on (`sched_getaffinity`), in order.
pub fn allowed_cpus() -> Vec<usize> {
    use nix::sched::{sched_getaffinity, CpuSet};
    match sched_getaffinity(nix::unistd::Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// Pin the calling thread to `cpu`.
pub fn pin_to(cpu: usize) -> io::Result<()> {
    use nix::sched::{sched_setaffinity, CpuSet};
    let mut set = CpuSet::new();
    set.set(cpu)
        .map_err(|e| io::Error::other(format!("CPU {cpu}: {e}")))?;
    sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
        .map_err(|e| io::Error::other(format!("pin to CPU {cpu}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves a want beyond the hard descriptor limit raises it
    /// where the process may (`CAP_SYS_RESOURCE`: the limit is then at
    /// least the want) and is refused naming `ulimit -Hn` where it may
    /// not.
    #[test]
    fn descriptors_beyond_the_hard_limit() {
        let get = || {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: `lim` is a valid rlimit the call fills.
            assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
            lim
        };
        let before = get();
        let nr_open: u64 = std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(1 << 20);
        let want = (before.rlim_max + 64).min(nr_open);
        if want <= before.rlim_max {
            return; // already at the kernel's ceiling
        }
        match raise_fd_limit(want) {
            Ok(()) => {
                let now = get();
                assert!(now.rlim_cur >= want && now.rlim_max >= want, "{now:?}");
            }
            Err(e) => {
                // CAP_SYS_RESOURCE is bit 24 of the effective set.
                let may = std::fs::read_to_string("/proc/self/status")
                    .ok()
                    .and_then(|st| {
                        let hex = st.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
                        u64::from_str_radix(hex.trim(), 16).ok()
                    })
                    .is_some_and(|caps| caps & (1 << 24) != 0);
                assert!(!may, "CAP_SYS_RESOURCE may raise it: {e}");
                assert!(e.to_string().contains("ulimit -Hn"), "{e}");
            }
        }
    }
    use pipelab_emu::Target;
    use pipelab_engine::{Instant, Packet};

    fn parcel(to: u16, tag: u64) -> Parcel {
        Parcel {
            handoff: Handoff {
                to,
                pkt: Packet {
                    tag,
                    ..Packet::new(60)
                },
                at: Instant::ZERO,
                target: Target::Pipe(1),
            },
            mem: Box::new([0u8; crate::buffers::BUF_SIZE]),
            len: 60,
            meta: BufMeta::default(),
            home: 0,
        }
    }

    fn readable(l: &Links) -> bool {
        let mut fds = [nix::poll::PollFd::new(l.fd(), nix::poll::PollFlags::POLLIN)];
        nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO).expect("poll") == 1
    }

    /// A pass proves parcels reach the worker they are for, in order, and
    /// that a sleeping worker's descriptor polls readable after a send
    /// (and only then).
    #[test]
    fn parcels_arrive_in_order_and_wake_a_sleeper() {
        let mut links = mesh(2).expect("eventfds");
        let mut b = links.pop().expect("worker 1");
        let mut a = links.pop().expect("worker 0");
        assert!(b.may_sleep());
        for t in 0..3 {
            assert!(a.send(parcel(1, t)).is_ok());
        }
        a.wake_peers();
        assert!(readable(&b), "the sleeper was woken");
        b.awake();
        let mut got = Vec::new();
        b.take(&mut got);
        let tags: Vec<u64> = got.iter().map(|p| p.handoff.pkt.tag).collect();
        assert_eq!(tags, vec![0, 1, 2]);
        // Awake, it is not written to.
        assert!(a.send(parcel(1, 3)).is_ok());
        a.wake_peers();
        assert!(!readable(&b));
        assert_eq!(a.stats().wakeups, 1);
    }

    /// A pass proves a sleeping worker polling its descriptor wakes within
    /// milliseconds of a parcel sent by another thread.
    #[test]
    fn a_sleeper_wakes_at_once() {
        let mut links = mesh(2).expect("eventfds");
        let mut b = links.pop().expect("worker 1");
        let mut a = links.pop().expect("worker 0");
        let t = std::thread::spawn(move || {
            assert!(b.may_sleep());
            {
                let mut fds = [nix::poll::PollFd::new(b.fd(), nix::poll::PollFlags::POLLIN)];
                let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(1000u16));
            }
            let woke = std::time::Instant::now();
            b.awake();
            let mut got = Vec::new();
            b.take(&mut got);
            (woke, got.len())
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        let sent = std::time::Instant::now();
        assert!(a.send(parcel(1, 0)).is_ok());
        a.wake_peers();
        let (woke, n) = t.join().expect("sleeper");
        assert_eq!(n, 1);
        let waited = woke.duration_since(sent);
        assert!(waited < std::time::Duration::from_millis(20), "{waited:?}");
    }

    /// A pass proves memory another worker is done with goes back to its
    /// home pool, also after its ring was full.
    #[test]
    fn memory_goes_home() {
        let mut links = mesh(2).expect("eventfds");
        let mut b = links.pop().expect("worker 1");
        let mut a = links.pop().expect("worker 0");
        let mut pool_a = BufferPool::with_cap(1 << 20);
        let mut pool_b = BufferPool::with_cap(1 << 20);
        pool_b.set_worker(1);
        for _ in 0..RETURN_RING + 10 {
            b.send_home(0, Box::new([0u8; crate::buffers::BUF_SIZE]), &mut pool_b);
        }
        assert_eq!(b.backlog.len(), 10);
        a.settle_memory(&mut pool_a);
        b.settle_memory(&mut pool_b);
        assert!(b.backlog.is_empty());
        a.settle_memory(&mut pool_a);
        assert_eq!(pool_a.spare_count(), RETURN_RING + 10);
    }
}
