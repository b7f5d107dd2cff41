//! A runner on a thread of its own, the one way every live mode runs its
//! emulation.
//!
//! [`LiveRunner::spawn`] moves the ports and the emulation to a new
//! thread, which builds the [`Runner`] there (its sleep margin, timer
//! slack and real-time priority are the thread's own) and steps it until
//! told to stop. Everything else reaches it through a channel, woken by a
//! socket pair it polls with its ports: [`LiveRunner::apply`] brings the
//! emulation to a new spec between two steps (queued packets kept),
//! [`LiveRunner::with`] runs any closure on the runner (counters, a port
//! replaced, a drain), [`LiveRunner::stop`] ends the thread. So the
//! control socket, signals and child processes of a mode live on other
//! threads and never delay a departure, and a bad request is compiled and
//! refused on the caller's thread before the data plane sees it.
//!
//! With several workers ([`LiveRunner::spawn_workers`], see
//! [`crate::workers`]) there is one such thread per worker, each with its
//! runner, its ports (the ones it receives from, and a transmit handle on
//! each other), its buffer pool and an emulation of the same spec owning
//! only its pipes; [`LiveRunner::apply`] compiles the spec once per
//! worker (each with its own seed for the rules' `prob` streams) and
//! brings every worker to it, [`LiveRunner::with_each`] asks each.

use crate::error::ModeError;
use crate::precision::{Precision, Watcher};
use pipelab_emu::{Applied, Compiled, Emulation, Partition, Spec};
use pipelab_engine::Duration;
use pipelab_io::backends::Port;
use pipelab_io::capture::Tap;
use pipelab_io::late::LateMeter;
use pipelab_io::runner::{Runner, RunnerOptions};
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A port that can move to the runner's thread.
pub type SendPort = Box<dyn Port + Send>;

/// Which worker owns which pipe of a spec.
pub type Owners = Arc<dyn Fn(&Spec) -> BTreeMap<u32, u16> + Send + Sync>;

type Job = Box<dyn FnOnce(&mut Runner) + Send>;

enum Cmd {
    Run(Job),
    Stop,
}

/// How an emulation is split over workers.
#[derive(Clone)]
pub struct WorkerPlan {
    /// Per worker, its ports, indexed as the spec's: the ports it
    /// receives from and a transmit handle on every other.
    pub receives: Vec<Vec<bool>>,
    /// The CPU each worker is pinned to (`None`: not pinned).
    pub cpus: Vec<Option<usize>>,
    /// Which worker owns which pipe of a spec.
    pub owners: Owners,
}

/// One worker's thread and the way to it.
struct Worker {
    tx: Mutex<mpsc::Sender<Cmd>>,
    wake: UnixStream,
    thread: Mutex<Option<JoinHandle<io::Result<()>>>>,
}

impl Worker {
    fn send(&self, cmd: Cmd) -> Result<(), ModeError> {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        tx.send(cmd).map_err(|_| ModeError::Stopped)?;
        // Wake the runner from its wait; a full socket already wakes it.
        let _ = (&self.wake).write(&[1]);
        Ok(())
    }
}

/// A runner on its own thread, or one per worker. See the module
/// documentation.
pub struct LiveRunner {
    workers: Vec<Worker>,
    seed: u64,
    owners: Option<Owners>,
    cpus: Vec<Option<usize>>,
    /// The mode's TAP devices' drops on their way to the workers, read
    /// when a report asks (never by a worker).
    input_drops: std::sync::Mutex<Vec<pipelab_io::backends::tap::TapDrops>>,
    /// The lateness watcher (`None` if its thread could not start).
    watcher: Option<Watcher>,
}

/// A lateness watcher over `meters` warning on standard error as `name`
/// (`pipelab-shell` says `pipelab shell: warning: ...`); none if its
/// thread cannot start (the run goes on unwatched, as it says).
fn watcher(name: &str, meters: Vec<Arc<LateMeter>>) -> Option<Watcher> {
    let who = name.replacen('-', " ", 1);
    let sink_who = who.clone();
    match Watcher::start(
        meters,
        Arc::new(move |msg: &str| eprintln!("{sink_who}: warning: {msg}")),
    ) {
        Ok(w) => Some(w),
        Err(e) => {
            eprintln!("{who}: warning: lateness is not watched during the run: {e}");
            None
        }
    }
}

/// The seed of worker `w`'s rules (`prob` streams differ between
/// workers; worker 0's is the run's seed, so one worker decides as
/// before). Pipes keep the run's seed: each is owned by one worker.
pub fn worker_seed(seed: u64, w: u16) -> u64 {
    if w == 0 {
        return seed;
    }
    // splitmix64 of the seed and the worker.
    let mut z = seed ^ (w as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl LiveRunner {
    /// Start a thread named `name` running `first` over `ports` (port `i`
    /// of the spec is `ports[i]`): one worker, recording to `tap` if
    /// given (`--pcap`, `--events`: see [`pipelab_io::capture`]).
    pub fn spawn(
        name: &str,
        first: Compiled,
        ports: Vec<SendPort>,
        opts: RunnerOptions,
        tap: Option<Tap>,
    ) -> io::Result<LiveRunner> {
        let meter = Arc::new(LateMeter::default());
        let m = meter.clone();
        let w = start(name.to_string(), opts, move || {
            let mut emu = Emulation::new(opts.engine_options());
            emu.apply(first);
            let ports: Vec<Box<dyn Port>> = ports.into_iter().map(|p| p as Box<dyn Port>).collect();
            let mut r = Runner::new(emu, ports, opts);
            r.set_late_meter(m);
            r.set_tap(tap);
            Ok(r)
        })?;
        Ok(LiveRunner {
            workers: vec![w],
            seed: opts.seed,
            owners: None,
            cpus: vec![None],
            input_drops: Default::default(),
            watcher: watcher(name, vec![meter]),
        })
    }

    /// Start one thread per worker of `plan` (named `name-wN`), worker
    /// `w` over `ports[w]` (indexed as the spec's ports), each running
    /// its part of `first`; every worker records to (a clone of) `tap`.
    pub fn spawn_workers(
        name: &str,
        first: Compiled,
        ports: Vec<Vec<SendPort>>,
        plan: WorkerPlan,
        opts: RunnerOptions,
        tap: Option<Tap>,
    ) -> io::Result<LiveRunner> {
        let k = ports.len().max(1) as u16;
        if k == 1 {
            let ports = ports.into_iter().next().unwrap_or_default();
            return LiveRunner::spawn(name, first, ports, opts, tap);
        }
        let owners = (plan.owners)(first.spec());
        let mut compiled = compile_each(first, k, opts.seed).map_err(io::Error::other)?;
        // The memory cap is the run's: each worker's pool (and engine)
        // holds an equal share of it.
        let opts = RunnerOptions {
            mem_cap: (opts.mem_cap / k as u64).max(pipelab_io::buffers::BUF_SIZE as u64),
            ..opts
        };
        let links = pipelab_io::worker::mesh(k)?;
        // One clock for all: a hand-off's instant means the same to each.
        let clock = pipelab_io::clock::Clock::start();
        // Measured once, here, with the runners' timer slack: workers
        // measuring at once would measure each other.
        let old_slack = nix::sys::prctl::get_timerslack().unwrap_or(50_000);
        let _ = nix::sys::prctl::set_timerslack(1);
        let margin = pipelab_io::runner::measure_sleep_margin();
        let _ = nix::sys::prctl::set_timerslack(old_slack as u64);
        let mut workers = Vec::with_capacity(k as usize);
        let meters: Vec<Arc<LateMeter>> = (0..k).map(|_| Arc::default()).collect();
        for (w, (ports, links)) in ports.into_iter().zip(links).enumerate() {
            let meter = meters[w].clone();
            let c = compiled.remove(0);
            let part = Partition::new(w as u16, k, owners.clone());
            let receives = plan.receives.get(w).cloned().unwrap_or_default();
            let cpu = plan.cpus.get(w).copied().flatten();
            let tap = tap.clone();
            let worker = start(format!("{name}-w{w}"), opts, move || {
                if let Some(cpu) = cpu {
                    // Failure (a CPU taken away meanwhile) costs locality only.
                    let _ = pipelab_io::worker::pin_to(cpu);
                }
                let mut emu = Emulation::new(opts.engine_options());
                emu.set_partition(Some(part));
                emu.apply(c);
                let ports: Vec<Box<dyn Port>> =
                    ports.into_iter().map(|p| p as Box<dyn Port>).collect();
                let mut r = Runner::with_margin(emu, ports, opts, Some(margin));
                r.set_late_meter(meter);
                r.join(links, receives, clock);
                r.set_tap(tap);
                Ok(r)
            });
            match worker {
                Ok(wk) => workers.push(wk),
                Err(e) => {
                    let started = LiveRunner {
                        workers,
                        seed: opts.seed,
                        owners: None,
                        cpus: Vec::new(),
                        input_drops: Default::default(),
                        watcher: None,
                    };
                    let _ = started.stop();
                    return Err(e);
                }
            }
        }
        Ok(LiveRunner {
            workers,
            seed: opts.seed,
            owners: Some(plan.owners),
            cpus: plan.cpus,
            input_drops: Default::default(),
            watcher: watcher(name, meters),
        })
    }

    /// What the lateness watcher saw so far (see [`crate::precision`]).
    pub fn precision(&self) -> Precision {
        self.watcher
            .as_ref()
            .map(|w| w.precision())
            .unwrap_or_default()
    }

    /// Workers running.
    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// The CPU each worker is pinned to.
    pub fn cpus(&self) -> &[Option<usize>] {
        &self.cpus
    }

    /// Count the drops of these TAP devices toward the workers in the
    /// reports (`dropped_input`).
    pub fn watch_input_drops(&self, drops: Vec<pipelab_io::backends::tap::TapDrops>) {
        let mut d = self.input_drops.lock().unwrap_or_else(|e| e.into_inner());
        d.extend(drops);
    }

    /// Frames the watched TAP devices dropped on their way to the
    /// workers so far (a device gone counts what it counted last).
    pub fn input_dropped(&self) -> u64 {
        let mut d = self.input_drops.lock().unwrap_or_else(|e| e.into_inner());
        d.iter_mut().map(|t| t.dropped()).sum()
    }

    /// Run `f` on worker 0's runner between two steps and return its
    /// result.
    pub fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Runner) -> T + Send + 'static,
    ) -> Result<T, ModeError> {
        self.with_on(0, f)
    }

    /// Run `f` on worker `w`'s runner between two steps and return its
    /// result.
    pub fn with_on<T: Send + 'static>(
        &self,
        w: usize,
        f: impl FnOnce(&mut Runner) -> T + Send + 'static,
    ) -> Result<T, ModeError> {
        let worker = self.workers.get(w).ok_or(ModeError::Stopped)?;
        let (reply, answer) = mpsc::channel();
        worker.send(Cmd::Run(Box::new(move |r| {
            let _ = reply.send(f(r));
        })))?;
        answer.recv().map_err(|_| ModeError::Stopped)
    }

    /// Run `f` on every worker's runner (at once, each between two of its
    /// steps) and return the results in worker order.
    pub fn with_each<T: Send + 'static>(
        &self,
        f: impl Fn(&mut Runner) -> T + Send + Sync + 'static,
    ) -> Result<Vec<T>, ModeError> {
        let f = Arc::new(f);
        let mut answers = Vec::with_capacity(self.workers.len());
        for worker in &self.workers {
            let (reply, answer) = mpsc::channel();
            let f = f.clone();
            worker.send(Cmd::Run(Box::new(move |r| {
                let _ = reply.send(f(r));
            })))?;
            answers.push(answer);
        }
        answers
            .into_iter()
            .map(|a| a.recv().map_err(|_| ModeError::Stopped))
            .collect()
    }

    /// Keep the frames of pipes marked `spill` on disk in `dirs` (the
    /// run's own directories, see [`crate::spill`]) when a worker's
    /// memory is short: every worker, each with files of its own.
    pub fn set_spill(&self, dirs: Vec<std::path::PathBuf>) -> Result<(), ModeError> {
        self.with_each(move |r| r.set_spill(Some(dirs.clone())))?;
        Ok(())
    }

    /// Bring the emulation to `c` (see [`Emulation::apply`]) in every
    /// worker, each with its partition of `c`'s pipes; returns once it is
    /// in effect (what worker 0's emulation did).
    pub fn apply(&self, c: Compiled) -> Result<Applied, ModeError> {
        let Some(owners) = self.owners.clone().filter(|_| self.workers.len() > 1) else {
            return self.with(move |r| r.apply(c));
        };
        let k = self.workers.len() as u16;
        let map = owners(c.spec());
        let compiled = compile_each(c, k, self.seed)?;
        let mut answers = Vec::with_capacity(k as usize);
        for (w, (worker, c)) in self.workers.iter().zip(compiled).enumerate() {
            let part = Partition::new(w as u16, k, map.clone());
            let (reply, answer) = mpsc::channel();
            worker.send(Cmd::Run(Box::new(move |r| {
                r.emulation_mut().set_partition(Some(part));
                let _ = reply.send(r.apply(c));
            })))?;
            answers.push(answer);
        }
        let mut first = None;
        for a in answers {
            let applied = a.recv().map_err(|_| ModeError::Stopped)?;
            first.get_or_insert(applied);
        }
        first.ok_or(ModeError::Stopped)
    }

    /// Serve until every worker's emulation is empty (and no packet is
    /// on its way between two), or `bound` has passed.
    pub fn drain(&self, bound: Duration) -> Result<(), ModeError> {
        let end = std::time::Instant::now() + std::time::Duration::from_nanos(bound.as_nanos());
        loop {
            let step = Duration::from_millis(5);
            let idle = self.with_each(move |r| r.drain(step).map(|()| r.idle()))?;
            let mut all = true;
            for i in idle {
                all &= i.map_err(ModeError::Io)?;
            }
            if all || std::time::Instant::now() >= end {
                return Ok(());
            }
        }
    }

    /// Stop every thread (after whatever was asked before) and wait for
    /// them; the first error one ended on. The ports close with them.
    pub fn stop(&self) -> io::Result<()> {
        if let Some(w) = &self.watcher {
            w.stop();
        }
        for w in &self.workers {
            let _ = w.send(Cmd::Stop);
        }
        let mut first = Ok(());
        for w in &self.workers {
            let thread = w.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
            let r = match thread {
                Some(t) => t
                    .join()
                    .map_err(|_| io::Error::other("the runner thread panicked"))
                    .and_then(|r| r),
                None => Ok(()),
            };
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

impl Drop for LiveRunner {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// `c` for each of `k` workers: worker 0's is `c`, the others' are its
/// spec compiled with their seeds.
fn compile_each(c: Compiled, k: u16, seed: u64) -> Result<Vec<Compiled>, ModeError> {
    let spec = c.spec().clone();
    let mut out = Vec::with_capacity(k as usize);
    out.push(c);
    for w in 1..k {
        out.push(Compiled::new(spec.clone(), worker_seed(seed, w))?);
    }
    Ok(out)
}

/// Start a runner thread named `name`: `make` builds the runner there
/// (its sleep margin, timer slack and priority are the thread's own).
fn start(
    name: String,
    _opts: RunnerOptions,
    make: impl FnOnce() -> io::Result<Runner> + Send + 'static,
) -> io::Result<Worker> {
    let (tx, rx) = mpsc::channel();
    let (wake, their_wake) = UnixStream::pair()?;
    wake.set_nonblocking(true)?;
    their_wake.set_nonblocking(true)?;
    let thread = std::thread::Builder::new()
        .name(name)
        .spawn(move || run(make()?, rx, their_wake))?;
    Ok(Worker {
        tx: Mutex::new(tx),
        wake,
        thread: Mutex::new(Some(thread)),
    })
}

fn run(mut runner: Runner, rx: mpsc::Receiver<Cmd>, mut wake: UnixStream) -> io::Result<()> {
    let mut scratch = [0u8; 64];
    loop {
        runner.step(Duration::from_millis(100), Some(wake.as_fd()))?;
        while matches!(wake.read(&mut scratch), Ok(n) if n > 0) {}
        loop {
            match rx.try_recv() {
                Ok(Cmd::Run(job)) => job(&mut runner),
                Ok(Cmd::Stop) | Err(mpsc::TryRecvError::Disconnected) => return Ok(()),
                Err(mpsc::TryRecvError::Empty) => break,
            }
        }
    }
}
