//! Process-level system calls the live commands need: spawning a command
//! inside a network namespace, and pidfds to wait for a child in the
//! runner's `poll`.

use crate::netns::NetNs;
use std::io;
use std::os::fd::{OwnedFd, RawFd};

/// Spawn `cmd` with its network namespace set to `ns`, with SIGINT and
/// SIGQUIT at their default actions and no signal blocked (the caller
/// blocks the stop signals, [`crate::signals::STOP`], to pass them on).
///
/// The child dies with its parent: it is killed (`PR_SET_PDEATHSIG`,
/// SIGKILL) when the thread that spawned it ends, so call this from a
/// thread that lives as long as the process (the main thread). A parent
/// that ended before the child asked for the signal is noticed (the
/// child's parent is then another process) and the spawn fails.
pub fn spawn_in(ns: &NetNs, cmd: &mut std::process::Command) -> io::Result<std::process::Child> {
    use std::os::unix::process::CommandExt;
    let fd = ns.fd();
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the child between fork and exec; it calls
    // only async-signal-safe functions (setns(2), prctl(2), getppid(2),
    // signal(2), sigemptyset(3), pthread_sigmask(3)) through libc, on a
    // signal set on its own stack; it touches no locks or allocations
    // (errors are built from raw OS codes), and `fd` stays open in the
    // parent until the spawn returns (the child inherits it).
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            Ok(())
        });
    }
    cmd.spawn()
}

/// Have the process `cmd` starts killed (SIGKILL) when the calling thread
/// ends (`PR_SET_PDEATHSIG`): a helper tool (`nft`) must not go on
/// changing the host after its parent was killed and its changes were
/// undone. Call it from a thread that lives as long as the process.
pub fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the child between fork and exec and
    // calls only async-signal-safe functions (prctl(2), getppid(2));
    // errors are built from raw OS codes, without allocating.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// A pidfd for `pid`: polls readable when the process exits.
pub fn pidfd(pid: u32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new
    // descriptor (or -1); no memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor owned by nobody else.
    Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as RawFd) })
}

/// Ask for real-time scheduling (`SCHED_FIFO` at `priority`) for the
/// calling thread, so that the host's other load does not delay
/// departures (the kernel's real-time throttling still leaves others 5%
/// of each second). With `SCHED_RESET_ON_FORK`: processes and threads
/// started from this thread (a shell's command, helpers) get the normal
/// policy back. Needs `CAP_SYS_NICE`.
pub fn set_thread_realtime(priority: i32) -> io::Result<()> {
    set_thread_policy(libc::SCHED_FIFO, priority)
}

/// Put the calling thread back to the normal policy (`SCHED_OTHER`, still
/// with `SCHED_RESET_ON_FORK`), with the short time slice of
/// [`set_thread_slice`] where the kernel has it.
pub fn set_thread_normal() -> io::Result<()> {
    set_thread_policy(libc::SCHED_OTHER, 0)?;
    let _ = set_thread_slice(RUNNER_SLICE_NS);
    Ok(())
}

/// Put the calling thread under `SCHED_IDLE`: it runs only when no
/// other thread of any policy wants its CPU. No privilege is needed.
pub fn set_thread_idle() -> io::Result<()> {
    set_thread_policy(libc::SCHED_IDLE, 0)
}

/// Put thread `tid` of this process back to the normal policy
/// (`SCHED_OTHER`): a thread under `SCHED_IDLE` on a busy CPU may not
/// run for seconds, and a thread must run to end, even when the process
/// exits.
pub fn set_thread_normal_of(tid: i32) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param that outlives the call; the
    // call reads nothing else and changes only thread `tid`'s policy.
    let r = unsafe { libc::sched_setscheduler(tid, libc::SCHED_OTHER, &param) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The time slice a runner thread asks for under the normal policy:
/// 100 µs, the shortest the kernel grants (see [`set_thread_slice`]).
pub const RUNNER_SLICE_NS: u64 = 100_000;

/// `struct sched_attr` of `sched_setattr(2)`, its first version (48
/// bytes: the utilisation clamps after it are not used).
#[repr(C)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

/// Ask for a time slice of `ns` for the calling thread under the normal
/// policy (`SCHED_OTHER`, its nice value kept): the kernel's EEVDF
/// scheduler (Linux 6.12 and later) lets a waking thread whose slice is
/// shorter than the running one's preempt it at once, where a thread of
/// the default slice waits until the running thread's slice ends (with
/// `HZ=250`, up to the next 4 ms tick). So a runner woken for a
/// departure takes its CPU from a CPU-bound process within microseconds,
/// and still gets only its fair share of the CPU: the slice changes when
/// it runs, not how much. The kernel clamps `ns` to 0.1–100 ms; an older
/// kernel ignores the request (and says nothing) or refuses it (an
/// error), neither of which changes the thread. No privilege is needed.
pub fn set_thread_slice(ns: u64) -> io::Result<()> {
    // SAFETY: getpriority(2) reads the calling thread's nice value (tid 0
    // is the caller); errno is cleared first since -1 is a valid result.
    let nice = unsafe {
        *libc::__errno_location() = 0;
        libc::getpriority(libc::PRIO_PROCESS, 0)
    };
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: libc::SCHED_OTHER as u32,
        sched_flags: 0x01, // SCHED_FLAG_RESET_ON_FORK
        sched_nice: nice,
        sched_priority: 0,
        sched_runtime: ns,
        sched_deadline: 0,
        sched_period: 0,
    };
    // SAFETY: `attr` is a valid `struct sched_attr` (its first version,
    // `size` says how long) that outlives the call; pid 0 names the
    // calling thread; flags 0 as the call requires.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0u32) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The calling thread's time slice under the normal policy, ns, as the
/// kernel reports it (`sched_getattr(2)`'s `sched_runtime`; 0 where the
/// kernel does not report one).
pub fn thread_slice() -> io::Result<u64> {
    let mut attr = SchedAttr {
        size: 0,
        sched_policy: 0,
        sched_flags: 0,
        sched_nice: 0,
        sched_priority: 0,
        sched_runtime: 0,
        sched_deadline: 0,
        sched_period: 0,
    };
    // SAFETY: the kernel writes at most `size` (48) bytes into `attr`,
    // which is that long and outlives the call; pid 0 is the caller.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0,
            &mut attr as *mut SchedAttr,
            std::mem::size_of::<SchedAttr>() as u32,
            0u32,
        )
    };
    if r == 0 {
        Ok(attr.sched_runtime)
    } else {
        Err(io::Error::last_os_error())
    }
}

fn set_thread_policy(policy: libc::c_int, priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param that outlives the call; pid 0
    // names the calling thread; the call reads nothing else.
    let r = unsafe { libc::sched_setscheduler(0, policy | libc::SCHED_RESET_ON_FORK, &param) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
