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

use crate::error::ModeError;
use pipelab_emu::{Applied, Compiled, Emulation};
use pipelab_engine::Duration;
use pipelab_io::backends::Port;
use pipelab_io::runner::{Runner, RunnerOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::mpsc;
use std::sync::Mutex;
use std::thread::JoinHandle;

/// A port that can move to the runner's thread.
pub type SendPort = Box<dyn Port + Send>;

type Job = Box<dyn FnOnce(&mut Runner) + Send>;

enum Cmd {
    Run(Job),
    Stop,
}

/// A runner on its own thread. See the module documentation.
pub struct LiveRunner {
    tx: Mutex<mpsc::Sender<Cmd>>,
    wake: UnixStream,
    thread: Mutex<Option<JoinHandle<io::Result<()>>>>,
}

impl LiveRunner {
    /// Start a thread named `name` running `first` over `ports` (port `i`
    /// of the spec is `ports[i]`).
    pub fn spawn(
        name: &str,
        first: Compiled,
        ports: Vec<SendPort>,
        opts: RunnerOptions,
    ) -> io::Result<LiveRunner> {
        let (tx, rx) = mpsc::channel();
        let (wake, their_wake) = UnixStream::pair()?;
        wake.set_nonblocking(true)?;
        their_wake.set_nonblocking(true)?;
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || run(first, ports, opts, rx, their_wake))?;
        Ok(LiveRunner {
            tx: Mutex::new(tx),
            wake,
            thread: Mutex::new(Some(thread)),
        })
    }

    fn send(&self, cmd: Cmd) -> Result<(), ModeError> {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        tx.send(cmd).map_err(|_| ModeError::Stopped)?;
        // Wake the runner from its wait; a full socket already wakes it.
        let _ = (&self.wake).write(&[1]);
        Ok(())
    }

    /// Run `f` on the runner between two steps and return its result.
    pub fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Runner) -> T + Send + 'static,
    ) -> Result<T, ModeError> {
        let (reply, answer) = mpsc::channel();
        self.send(Cmd::Run(Box::new(move |r| {
            let _ = reply.send(f(r));
        })))?;
        answer.recv().map_err(|_| ModeError::Stopped)
    }

    /// Bring the emulation to `c` (see [`Emulation::apply`]); returns once
    /// it is in effect.
    pub fn apply(&self, c: Compiled) -> Result<Applied, ModeError> {
        self.with(move |r| r.apply(c))
    }

    /// Stop the thread (after whatever was asked before) and wait for it;
    /// its error, if it ended on one. The ports close with it.
    pub fn stop(&self) -> io::Result<()> {
        let _ = self.send(Cmd::Stop);
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        match thread {
            Some(t) => t
                .join()
                .map_err(|_| io::Error::other("the runner thread panicked"))?,
            None => Ok(()),
        }
    }
}

impl Drop for LiveRunner {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

fn run(
    first: Compiled,
    ports: Vec<SendPort>,
    opts: RunnerOptions,
    rx: mpsc::Receiver<Cmd>,
    mut wake: UnixStream,
) -> io::Result<()> {
    let mut emu = Emulation::new(opts.engine_options());
    emu.apply(first);
    let ports: Vec<Box<dyn Port>> = ports.into_iter().map(|p| p as Box<dyn Port>).collect();
    let mut runner = Runner::new(emu, ports, opts);
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
