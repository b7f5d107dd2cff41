//! Frames kept on disk while they wait: NetPath's DiskQueue (§2.2.3)
//! and its opportunistic management of two files (§2.2.4), under the
//! buffer pool ([`crate::buffers`]).
//!
//! A frame of a pipe marked `spill` that arrives while the pool is short
//! of memory is written here and its buffer's memory freed; its buffer
//! id, metadata and descriptor stay where they were (the pool's slot, the
//! engine's pool), so the emulation never knows: spilling is a matter of
//! storage, not of timing. As memory frees, the frames come back in the
//! order they were written ([`Spill::next_record`]), ahead of their departure;
//! one needed before its turn is read at once ([`Spill::read`]).
//!
//! * **One I/O thread, as NetPath's.** The runner copies a frame into a
//!   write batch of [`WRITE_BATCH`] bytes and a full batch goes to the
//!   spill's own thread, which writes it (one `pwrite`), reads the files
//!   ahead in chunks of [`READ_AHEAD`] bytes (one `pread`, the next chunk
//!   announced with `POSIX_FADV_WILLNEED`), reserves space and truncates,
//!   in the order asked. The runner never waits for the disk, except to
//!   read a frame it needs before its turn (a *miss*: one `pread` on a
//!   descriptor of its own). A batch stays readable in memory until the
//!   thread says it is written; at most [`MAX_IN_FLIGHT`] bytes of them.
//! * **Records.** A frame is a record of an 8-byte header (its buffer id
//!   and length, little-endian) and its bytes, padded to 8 bytes.
//! * **Two files, opportunistically.** Records go to file A until the
//!   first one is read back from it; from then on writes go to file B
//!   while A is read; when every record of A has been read, A is
//!   truncated (its disk space freed) and the roles swap: B is read while
//!   A is written. So a file is never read and written at once (two
//!   directories on two disks: no seek between reads and writes, NetPath's
//!   ODQM), and the space of what was read is given back while the queue
//!   still holds frames. With one directory both files are in it.
//! * **No name survives the process.** Each file is made with
//!   `O_TMPFILE` in the run's own directory (mode 0700, made on first
//!   use, removed when the spill is dropped): the kernel frees it when the
//!   process ends, however it ends. Where the file system cannot make
//!   unnamed files, the file is made with a name and unlinked at once.
//!   The live modes write the run's directory into the host ledger before
//!   the run, so that `pipelab cleanup` removes what a `kill -9` left.
//! * **Never a silent loss.** Disk space is reserved ahead with
//!   `fallocate` (16 MB at a time). Once a reservation or a write fails,
//!   the spill refuses new frames ([`Spill::can_take`]: the runner drops
//!   them *before* the emulation takes them, counted as `spill`) until
//!   both files are empty again; a batch whose write failed stays in
//!   memory, where its frames are read from. A record that cannot be read
//!   back (an I/O error) is counted as a `spill` drop at its departure.
//! * **Bounded bookkeeping.** A frame on disk keeps its descriptor in the
//!   engine and its slot in the pool: [`FRAME_BOOKKEEPING`] bytes of
//!   memory at most. The spill holds at most `max_frames` of them
//!   ([`SpillOptions::max_frames`]; the live modes: `--mem-cap` over
//!   [`FRAME_BOOKKEEPING`]), so the memory of a run is bounded by twice
//!   its cap whatever its disk holds.
//!
//! No clock is read here except to time the system calls (the disk's
//! rates in [`SpillStats`]); nothing here decides when a packet leaves.

use serde::Serialize;
use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;

/// Bytes of a record's header: the buffer id and the frame's length.
pub const HEADER: usize = 8;

/// Records are written in batches of this many bytes (one `pwrite`).
pub const WRITE_BATCH: usize = 256 << 10;

/// Records are read back in chunks of this many bytes (one `pread`).
pub const READ_AHEAD: usize = 256 << 10;

/// Disk space is reserved (`fallocate`) this many bytes at a time.
pub const RESERVE_CHUNK: u64 = 16 << 20;

/// Batches on their way to disk (or whose write failed) hold at most
/// this many bytes of memory (less under a small cap:
/// [`Spill::set_max_in_flight`]); beyond, the spill takes no frame until
/// the I/O thread catches up.
pub const MAX_IN_FLIGHT: u64 = 16 * WRITE_BATCH as u64;

/// The memory a frame on disk still costs: its descriptor in the engine
/// and its slot in the buffer pool (measured: `tests::bookkeeping`).
pub const FRAME_BOOKKEEPING: u64 = 320;

/// The name of a run's spill directory under `dir`: `pipelab-spill-PID`.
pub fn run_dir(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("pipelab-spill-{pid}"))
}

/// Where spilled frames go (`--spill-dir`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpillOptions {
    /// The run's own directory for file A, and for file B if a second is
    /// given (NetPath's two disks); made on first use, mode 0700.
    pub dirs: Vec<PathBuf>,
    /// The worker whose files these are (for their names, when the file
    /// system cannot make unnamed files, and its I/O thread's).
    pub worker: u16,
    /// At most this many frames on disk at once (each keeps
    /// [`FRAME_BOOKKEEPING`] bytes of memory).
    pub max_frames: u64,
}

/// What the spill did (`spill` in a live run's report).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SpillStats {
    /// Frames written to disk.
    pub spilled_packets: u64,
    /// Their bytes (frames only; the disk also holds 8-byte headers and
    /// padding).
    pub spilled_bytes: u64,
    /// Frames read back in order, ahead of their departure.
    pub read_back_packets: u64,
    /// Their bytes.
    pub read_back_bytes: u64,
    /// Frames needed while still on disk (a departure before their turn
    /// to be read back), read at once on the packet's path.
    pub misses: u64,
    /// Frames of spilled packets the emulation dropped while on disk
    /// (never read back).
    pub dropped_on_disk: u64,
    /// Frames on disk now.
    pub on_disk_packets: u64,
    /// Their bytes.
    pub on_disk_bytes: u64,
    /// The most bytes on disk at once.
    pub max_on_disk_bytes: u64,
    /// Bytes written to the files (records, in batches).
    pub written_bytes: u64,
    /// Nanoseconds the I/O thread spent in those writes.
    pub write_ns: u64,
    /// Bytes read from the files (chunks read ahead, and misses).
    pub read_bytes: u64,
    /// Nanoseconds spent in those reads.
    pub read_ns: u64,
    /// The longest write, µs.
    pub max_write_us: u64,
    /// The longest read ahead, µs.
    pub max_read_us: u64,
    /// The longest miss (a read on the runner's thread), µs.
    pub max_miss_us: u64,
    /// Nanoseconds spent reserving disk space (`fallocate`).
    pub reserve_ns: u64,
    /// The longest reservation, µs.
    pub max_reserve_us: u64,
    /// Bytes per second of the writes, while writing (into the page
    /// cache: the kernel writes to the device in its own time).
    pub write_bps: u64,
    /// Bytes per second of the reads, while reading.
    pub read_bps: u64,
    /// Frames refused because the spill could not take them (the disk
    /// full, a write failed, `max_frames` reached, the I/O thread
    /// behind): the runner's `dropped_spill`, with the frames that could
    /// not be read back.
    pub refused: u64,
    /// Reads, writes and reservations that failed.
    pub errors: u64,
    /// Times the two files swapped roles (one read, one written).
    pub switches: u64,
    /// Writes the runner waited for, its batches all on their way
    /// ([`Spill::wait_behind`]).
    pub waits_behind: u64,
}

impl SpillStats {
    fn rates(&mut self) {
        let rate = |b: u64, ns: u64| {
            if ns == 0 {
                0
            } else {
                (b as u128 * 1_000_000_000 / ns as u128) as u64
            }
        };
        self.write_bps = rate(self.written_bytes, self.write_ns);
        self.read_bps = rate(self.read_bytes, self.read_ns);
    }
}

impl std::ops::AddAssign for SpillStats {
    fn add_assign(&mut self, o: SpillStats) {
        self.spilled_packets += o.spilled_packets;
        self.spilled_bytes += o.spilled_bytes;
        self.read_back_packets += o.read_back_packets;
        self.read_back_bytes += o.read_back_bytes;
        self.misses += o.misses;
        self.dropped_on_disk += o.dropped_on_disk;
        self.on_disk_packets += o.on_disk_packets;
        self.on_disk_bytes += o.on_disk_bytes;
        self.max_on_disk_bytes += o.max_on_disk_bytes;
        self.written_bytes += o.written_bytes;
        self.write_ns += o.write_ns;
        self.read_bytes += o.read_bytes;
        self.read_ns += o.read_ns;
        self.max_write_us = self.max_write_us.max(o.max_write_us);
        self.max_read_us = self.max_read_us.max(o.max_read_us);
        self.max_miss_us = self.max_miss_us.max(o.max_miss_us);
        self.reserve_ns += o.reserve_ns;
        self.max_reserve_us = self.max_reserve_us.max(o.max_reserve_us);
        self.refused += o.refused;
        self.errors += o.errors;
        self.switches += o.switches;
        self.waits_behind += o.waits_behind;
        self.rates();
    }
}

/// Where a spilled frame's record is: which file, at which byte (of the
/// file's current contents: a file is emptied only once none of its
/// records is live).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loc {
    side: u8,
    off: u64,
}

/// A record read back in order ([`Spill::next_record`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// The buffer it was spilled from.
    pub buf: u32,
    /// Where it is.
    pub loc: Loc,
    /// The frame's length.
    pub len: u32,
}

/// What the runner asks the I/O thread, done in this order.
enum Cmd {
    Write {
        side: usize,
        gen: u64,
        off: u64,
        data: Arc<Vec<u8>>,
    },
    Read {
        side: usize,
        gen: u64,
        off: u64,
        len: usize,
    },
    Reserve {
        side: usize,
        from: u64,
        len: u64,
    },
    Truncate {
        side: usize,
    },
}

/// What the I/O thread did: each with the nanoseconds it took.
enum Done {
    Written {
        side: usize,
        gen: u64,
        off: u64,
        data: Arc<Vec<u8>>,
        ns: u64,
        err: Option<String>,
    },
    Read {
        side: usize,
        gen: u64,
        off: u64,
        data: Vec<u8>,
        ns: u64,
        err: Option<String>,
    },
    Reserved {
        ns: u64,
        err: Option<nix::errno::Errno>,
    },
    Truncated {
        err: bool,
    },
}

/// The I/O thread: its channels, and the runner's own descriptors on its
/// files (for misses).
struct Io {
    tx: mpsc::Sender<Cmd>,
    rx: mpsc::Receiver<Done>,
    files: [File; 2],
    thread: Option<std::thread::JoinHandle<()>>,
    /// Commands sent and not answered yet.
    outstanding: usize,
}

/// The I/O thread's loop: each command in turn, each answered.
fn serve(files: [File; 2], rx: mpsc::Receiver<Cmd>, tx: mpsc::Sender<Done>) {
    for cmd in rx {
        let t0 = now_ns();
        let done = match cmd {
            Cmd::Write {
                side,
                gen,
                off,
                data,
            } => {
                let err = files[side].write_all_at(&data, off).err();
                Done::Written {
                    side,
                    gen,
                    off,
                    data,
                    ns: now_ns().saturating_sub(t0).max(1),
                    err: err.map(|e| e.to_string()),
                }
            }
            Cmd::Read {
                side,
                gen,
                off,
                len,
            } => {
                let mut data = vec![0u8; len];
                let err = files[side].read_exact_at(&mut data, off).err();
                let ns = now_ns().saturating_sub(t0).max(1);
                let _ = nix::fcntl::posix_fadvise(
                    files[side].as_raw_fd(),
                    (off + len as u64) as libc::off_t,
                    READ_AHEAD as libc::off_t,
                    nix::fcntl::PosixFadviseAdvice::POSIX_FADV_WILLNEED,
                );
                Done::Read {
                    side,
                    gen,
                    off,
                    data,
                    ns,
                    err: err.map(|e| e.to_string()),
                }
            }
            Cmd::Reserve { side, from, len } => {
                let r = nix::fcntl::fallocate(
                    files[side].as_raw_fd(),
                    nix::fcntl::FallocateFlags::FALLOC_FL_KEEP_SIZE,
                    from as libc::off_t,
                    len as libc::off_t,
                );
                Done::Reserved {
                    ns: now_ns().saturating_sub(t0),
                    err: r.err(),
                }
            }
            Cmd::Truncate { side } => Done::Truncated {
                err: files[side].set_len(0).is_err(),
            },
        };
        if tx.send(done).is_err() {
            return;
        }
    }
}

/// One of the two files, as the runner sees it.
#[derive(Clone, Copy, Debug, Default)]
struct Side {
    /// Where the next record goes (records sent and in the batch).
    end: u64,
    /// Bytes sent to the I/O thread to write; records past it are in the
    /// batch.
    sent: u64,
    /// Disk space asked for so far.
    asked: u64,
    /// Where the next record to read back starts.
    read: u64,
    /// Records in the file not read back or forgotten yet.
    live: u64,
    /// Times the file was emptied (what was read or written before is
    /// not its contents now).
    gen: u64,
}

/// A batch sent to the I/O thread and not yet written (or whose write
/// failed): its records are read from here meanwhile.
struct Held {
    side: usize,
    gen: u64,
    off: u64,
    data: Arc<Vec<u8>>,
    failed: bool,
}

/// Bytes of a file read ahead.
struct Chunk {
    side: usize,
    gen: u64,
    off: u64,
    data: Vec<u8>,
}

/// Nanoseconds of `CLOCK_MONOTONIC`.
fn now_ns() -> u64 {
    crate::clock::monotonic_ns()
}

/// The length a record of a `len`-byte frame takes on disk.
fn record_len(len: usize) -> u64 {
    ((HEADER + len + 7) & !7) as u64
}

/// `n` bytes of `data` (which starts at `base`) from `off`, if it holds
/// them.
fn slice_at(data: &[u8], base: u64, off: u64, n: u64) -> Option<&[u8]> {
    let at = off.checked_sub(base)? as usize;
    data.get(at..at + n as usize)
}

/// A frame store on two files. See the module documentation.
pub struct Spill {
    opts: SpillOptions,
    /// The I/O thread, once started (on the first frame).
    io: Option<Io>,
    sides: [Side; 2],
    /// The side written, and the side read.
    w: usize,
    r: usize,
    /// Records not yet sent, which belong at `sides[w].sent`.
    batch: Vec<u8>,
    /// Batch memory back from the I/O thread, to fill again.
    spare: Vec<Vec<u8>>,
    held: VecDeque<Held>,
    held_bytes: u64,
    /// At most this many bytes in `held` ([`MAX_IN_FLIGHT`] or less).
    max_in_flight: u64,
    /// The chunk records are read from, and the next one once read.
    ahead: Option<Chunk>,
    next_ahead: Option<Chunk>,
    /// The chunk asked for and not read yet: (side, gen, offset).
    pending: Option<(usize, u64, u64)>,
    /// A chunk could not be read: no more reading ahead in that file
    /// (its frames are read when needed) until it is emptied.
    read_failed: Option<(usize, u64)>,
    /// Why the spill refuses frames (a write or a reservation failed),
    /// until both files are empty again.
    stuck: Option<String>,
    /// `fallocate` is not supported by the file system.
    no_reserve: bool,
    /// Directories made here, to remove when dropped.
    made: Vec<PathBuf>,
    stats: SpillStats,
    /// Misses counted through `&self` ([`Spill::read`]): how many, bytes
    /// read, nanoseconds, the longest (µs).
    misses: std::cell::Cell<(u64, u64, u64, u64)>,
}

impl std::fmt::Debug for Spill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spill")
            .field("dirs", &self.opts.dirs)
            .field("stats", &self.stats)
            .finish()
    }
}

impl Spill {
    /// A spill into `opts.dirs` (nothing is made before the first frame).
    pub fn new(opts: SpillOptions) -> Spill {
        Spill {
            opts,
            io: None,
            sides: [Side::default(); 2],
            w: 0,
            r: 0,
            batch: Vec::new(),
            spare: Vec::new(),
            held: VecDeque::new(),
            held_bytes: 0,
            max_in_flight: MAX_IN_FLIGHT,
            ahead: None,
            next_ahead: None,
            pending: None,
            read_failed: None,
            stuck: None,
            no_reserve: false,
            made: Vec::new(),
            stats: SpillStats::default(),
            misses: Default::default(),
        }
    }

    /// A spill on two files already open (tests: `/dev/full`).
    pub fn with_files(a: File, b: File, max_frames: u64) -> io::Result<Spill> {
        let mut s = Spill::new(SpillOptions {
            dirs: Vec::new(),
            worker: 0,
            max_frames,
        });
        s.start([a, b])?;
        Ok(s)
    }

    /// The options it was made with.
    pub fn options(&self) -> &SpillOptions {
        &self.opts
    }

    /// What it did so far.
    pub fn stats(&self) -> SpillStats {
        let mut s = self.stats;
        let (misses, bytes, ns, longest) = self.misses.get();
        s.misses += misses;
        s.read_bytes += bytes;
        s.read_ns += ns;
        s.max_miss_us = s.max_miss_us.max(longest);
        s.rates();
        s
    }

    /// Why it refuses frames now, if it does.
    pub fn stuck(&self) -> Option<&str> {
        self.stuck.as_deref()
    }

    /// Frames on disk now.
    pub fn on_disk(&self) -> u64 {
        self.stats.on_disk_packets
    }

    /// Let batches on their way to disk hold at most `bytes` (one batch
    /// at least, [`MAX_IN_FLIGHT`] at most): the pool gives the spill
    /// part of the room it keeps above its spill mark.
    pub fn set_max_in_flight(&mut self, bytes: u64) {
        self.max_in_flight = bytes.clamp(WRITE_BATCH as u64, MAX_IN_FLIGHT);
    }

    /// Bytes of memory the spill holds now: batches on their way to disk
    /// (or whose write failed) and the batch being filled. The pool
    /// weighs them against its cap.
    pub fn in_flight_bytes(&self) -> u64 {
        self.held_bytes + self.batch.len() as u64
    }

    /// Whether a frame would be taken now: not stuck (a failed write or
    /// reservation), below `max_frames`, the I/O thread not too far
    /// behind.
    pub fn can_take(&self) -> bool {
        self.stuck.is_none()
            && self.stats.on_disk_packets < self.opts.max_frames
            && self.held_bytes < self.max_in_flight
    }

    /// Count a frame refused because the spill could not take it.
    pub fn count_refused(&mut self) {
        self.stats.refused += 1;
    }

    /// Start the I/O thread over `files`.
    fn start(&mut self, files: [File; 2]) -> io::Result<()> {
        let mine = [files[0].try_clone()?, files[1].try_clone()?];
        let (tx, their_rx) = mpsc::channel();
        let (their_tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(format!("pipelab-spill-w{}", self.opts.worker))
            .spawn(move || serve(files, their_rx, their_tx))?;
        self.io = Some(Io {
            tx,
            rx,
            files: mine,
            thread: Some(thread),
            outstanding: 0,
        });
        Ok(())
    }

    /// Open the two files, in the run's directories (made here), and
    /// start the I/O thread.
    fn open(&mut self) -> io::Result<()> {
        if self.io.is_some() {
            return Ok(());
        }
        let first = self
            .opts
            .dirs
            .first()
            .cloned()
            .ok_or_else(|| io::Error::other("no spill directory"))?;
        let second = self.opts.dirs.get(1).cloned().unwrap_or(first.clone());
        for d in [&first, &second] {
            if !self.made.contains(d) {
                make_dir(d)?;
                self.made.push(d.clone());
            }
        }
        let w = self.opts.worker;
        let a = open_unnamed(&first, &format!("w{w}-a"))?;
        let b = open_unnamed(&second, &format!("w{w}-b"))?;
        self.start([a, b])
    }

    /// Ask the I/O thread for `cmd`; false if it is gone.
    fn ask(&mut self, cmd: Cmd) -> bool {
        let Some(io) = self.io.as_mut() else {
            return false;
        };
        if io.tx.send(cmd).is_ok() {
            io.outstanding += 1;
            true
        } else {
            self.stats.errors += 1;
            self.stuck = Some("spill: its I/O thread is gone".into());
            false
        }
    }

    /// Take in what the I/O thread did since the last call.
    pub fn poll(&mut self) {
        loop {
            let done = match self.io.as_mut() {
                Some(io) => match io.rx.try_recv() {
                    Ok(d) => {
                        io.outstanding -= 1;
                        d
                    }
                    Err(_) => return,
                },
                None => return,
            };
            self.take_done(done);
        }
    }

    /// When the spill refuses frames only because its batches wait for
    /// the I/O thread (the disk, or the thread's turn on a CPU, behind),
    /// wait up to `timeout` for one to be written: a moment of the
    /// runner's time instead of a refused frame. Returns whether it
    /// takes frames now.
    pub fn wait_behind(&mut self, timeout: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        while !self.can_take()
            && self.stuck.is_none()
            && self.stats.on_disk_packets < self.opts.max_frames
        {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let done = match self.io.as_mut() {
                Some(io) if io.outstanding > 0 && !left.is_zero() => {
                    match io.rx.recv_timeout(left) {
                        Ok(d) => {
                            io.outstanding -= 1;
                            d
                        }
                        Err(_) => break,
                    }
                }
                _ => break,
            };
            self.take_done(done);
            self.stats.waits_behind += 1;
        }
        self.can_take()
    }

    /// Wait until the I/O thread has done everything asked so far (tests,
    /// and a driver that wants a reproducible read-back).
    pub fn sync(&mut self) {
        loop {
            let done = match self.io.as_mut() {
                Some(io) if io.outstanding > 0 => match io.rx.recv() {
                    Ok(d) => {
                        io.outstanding -= 1;
                        d
                    }
                    Err(_) => return,
                },
                _ => return,
            };
            self.take_done(done);
        }
    }

    fn take_done(&mut self, done: Done) {
        match done {
            Done::Written {
                side,
                gen,
                off,
                data,
                ns,
                err,
            } => {
                let at = self
                    .held
                    .iter()
                    .position(|h| h.side == side && h.gen == gen && h.off == off);
                match err {
                    None => {
                        self.stats.written_bytes += data.len() as u64;
                        self.stats.write_ns += ns;
                        self.stats.max_write_us = self.stats.max_write_us.max(ns / 1000);
                        if let Some(i) = at {
                            if let Some(h) = self.held.remove(i) {
                                self.held_bytes -= h.data.len() as u64;
                            }
                        }
                        if let Ok(mut v) = Arc::try_unwrap(data) {
                            if self.spare.len() < 2 {
                                v.clear();
                                self.spare.push(v);
                            }
                        }
                    }
                    Some(e) => {
                        // Its frames stay readable from the batch.
                        self.stats.errors += 1;
                        if let Some(h) = at.and_then(|i| self.held.get_mut(i)) {
                            h.failed = true;
                        }
                        self.stuck
                            .get_or_insert_with(|| format!("spill: a write failed: {e}"));
                    }
                }
            }
            Done::Read {
                side,
                gen,
                off,
                data,
                ns,
                err,
            } => {
                if self.pending == Some((side, gen, off)) {
                    self.pending = None;
                }
                self.stats.read_ns += ns;
                self.stats.max_read_us = self.stats.max_read_us.max(ns / 1000);
                match err {
                    None => {
                        self.stats.read_bytes += data.len() as u64;
                        if gen == self.sides[side].gen {
                            self.next_ahead = Some(Chunk {
                                side,
                                gen,
                                off,
                                data,
                            });
                        }
                    }
                    Some(_) => {
                        self.stats.errors += 1;
                        self.read_failed = Some((side, gen));
                    }
                }
            }
            Done::Reserved { ns, err } => {
                self.stats.reserve_ns += ns;
                self.stats.max_reserve_us = self.stats.max_reserve_us.max(ns / 1000);
                match err {
                    None => {}
                    Some(nix::errno::Errno::EOPNOTSUPP) => self.no_reserve = true,
                    Some(e) => {
                        self.stats.errors += 1;
                        self.stuck
                            .get_or_insert_with(|| format!("spill: no room for more: {e}"));
                    }
                }
            }
            Done::Truncated { err } => {
                if err {
                    // The space stays taken; the records are gone all
                    // the same.
                    self.stats.errors += 1;
                }
            }
        }
    }

    /// Append the frame `bytes` of buffer `buf`: where its record is. An
    /// error leaves nothing written (the frame stays where it was).
    pub fn push(&mut self, buf: u32, bytes: &[u8]) -> io::Result<Loc> {
        self.poll();
        if let Some(why) = &self.stuck {
            return Err(io::Error::other(why.clone()));
        }
        if self.stats.on_disk_packets >= self.opts.max_frames {
            return Err(io::Error::other(format!(
                "spill: {} frames on disk, the most its bookkeeping may hold",
                self.opts.max_frames
            )));
        }
        if self.held_bytes >= self.max_in_flight {
            return Err(io::Error::other("spill: the disk is behind"));
        }
        if let Err(e) = self.open() {
            return Err(self.fail(e, "cannot make its files"));
        }
        let rec = record_len(bytes.len());
        if self.batch.len() as u64 + rec > WRITE_BATCH as u64 {
            self.send_batch();
        }
        let w = self.w;
        let end = self.sides[w].end;
        if !self.no_reserve && end + rec + RESERVE_CHUNK / 2 > self.sides[w].asked {
            // Asked a chunk ahead of need: a refusal is known before the
            // writes reach it.
            let from = self.sides[w].asked;
            self.ask(Cmd::Reserve {
                side: w,
                from,
                len: RESERVE_CHUNK,
            });
            self.sides[w].asked = from + RESERVE_CHUNK;
        }
        let loc = Loc {
            side: w as u8,
            off: end,
        };
        self.batch.extend_from_slice(&buf.to_le_bytes());
        self.batch
            .extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        self.batch.extend_from_slice(bytes);
        let pad = rec as usize - HEADER - bytes.len();
        self.batch.extend(std::iter::repeat_n(0u8, pad));
        let s = &mut self.sides[w];
        s.end += rec;
        s.live += 1;
        let st = &mut self.stats;
        st.spilled_packets += 1;
        st.spilled_bytes += bytes.len() as u64;
        st.on_disk_packets += 1;
        st.on_disk_bytes += bytes.len() as u64;
        st.max_on_disk_bytes = st.max_on_disk_bytes.max(st.on_disk_bytes);
        Ok(loc)
    }

    /// Count an error, refuse frames from now on, and say what failed.
    fn fail(&mut self, e: io::Error, what: &str) -> io::Error {
        self.stats.errors += 1;
        let where_ = self
            .opts
            .dirs
            .first()
            .map(|d| format!(" in {}", d.display()))
            .unwrap_or_default();
        let msg = format!("spill{where_}: {what}: {e}");
        self.stuck = Some(msg.clone());
        io::Error::new(e.kind(), msg)
    }

    /// Send the batch to the I/O thread to write; it stays readable until
    /// written.
    fn send_batch(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let fresh = self
            .spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(WRITE_BATCH));
        let data = Arc::new(std::mem::replace(&mut self.batch, fresh));
        let w = self.w;
        let (gen, off) = (self.sides[w].gen, self.sides[w].sent);
        let len = data.len() as u64;
        self.held.push_back(Held {
            side: w,
            gen,
            off,
            data: data.clone(),
            failed: false,
        });
        self.held_bytes += len;
        self.sides[w].sent += len;
        self.ask(Cmd::Write {
            side: w,
            gen,
            off,
            data,
        });
    }

    /// The `n` bytes at `off` of side `side` (its current contents), if
    /// they are in memory: the batch, a batch on its way, a chunk read
    /// ahead.
    fn find(&self, side: usize, off: u64, n: u64) -> Option<&[u8]> {
        let gen = self.sides[side].gen;
        if side == self.w && off >= self.sides[side].sent {
            return slice_at(&self.batch, self.sides[side].sent, off, n);
        }
        for h in &self.held {
            if h.side == side && h.gen == gen {
                if let Some(b) = slice_at(&h.data, h.off, off, n) {
                    return Some(b);
                }
            }
        }
        [&self.ahead, &self.next_ahead]
            .into_iter()
            .flatten()
            .filter(|c| c.side == side && c.gen == gen)
            .find_map(|c| slice_at(&c.data, c.off, off, n))
    }

    /// Read the frame of the record at `loc` (`len` bytes) into `out`: a
    /// miss, a frame needed before its turn (from memory if it is there,
    /// else one `pread` on the runner's own descriptor). The record stays
    /// live until [`Spill::take`].
    pub fn read(&self, loc: Loc, len: u32, out: &mut Vec<u8>) -> io::Result<()> {
        let side = loc.side as usize;
        let rec = record_len(len as usize);
        out.clear();
        let (n, bytes, ns, longest) = self.misses.get();
        if let Some(b) = self.find(side, loc.off, rec) {
            out.extend_from_slice(&b[HEADER..HEADER + len as usize]);
            self.misses.set((n + 1, bytes, ns, longest));
            return Ok(());
        }
        let file = self
            .io
            .as_ref()
            .and_then(|io| io.files.get(side))
            .ok_or_else(|| io::Error::other("spill: no such file"))?;
        out.resize(len as usize, 0);
        let t0 = now_ns();
        let r = file.read_exact_at(out, loc.off + HEADER as u64);
        let dt = now_ns().saturating_sub(t0).max(1);
        self.misses
            .set((n + 1, bytes + len as u64, ns + dt, longest.max(dt / 1000)));
        r
    }

    /// The record at `loc` is done with: read back in order (`read`), or
    /// read at once (a miss, counted by [`Spill::read`]); `len` is its
    /// frame's length.
    pub fn take(&mut self, loc: Loc, len: u32, read: bool) {
        let s = &mut self.sides[loc.side as usize];
        s.live = s.live.saturating_sub(1);
        let st = &mut self.stats;
        st.on_disk_packets = st.on_disk_packets.saturating_sub(1);
        st.on_disk_bytes = st.on_disk_bytes.saturating_sub(len as u64);
        if read {
            st.read_back_packets += 1;
            st.read_back_bytes += len as u64;
        }
        self.settle();
    }

    /// A record dropped while on disk (never read): done with.
    pub fn forget(&mut self, loc: Loc, len: u32) {
        self.stats.dropped_on_disk += 1;
        self.take(loc, len, false);
    }

    /// Ask for the chunk of side `r` from `off` (as much as was sent to
    /// be written, up to [`READ_AHEAD`]), unless it is asked already.
    fn request(&mut self, r: usize, off: u64) {
        let gen = self.sides[r].gen;
        if self.pending == Some((r, gen, off)) || self.read_failed == Some((r, gen)) {
            return;
        }
        let len = self.sides[r]
            .sent
            .saturating_sub(off)
            .min(READ_AHEAD as u64) as usize;
        if len == 0 {
            return;
        }
        if self.ask(Cmd::Read {
            side: r,
            gen,
            off,
            len,
        }) {
            self.pending = Some((r, gen, off));
        }
    }

    /// The next record in the order written (live or not: the caller
    /// knows whether its buffer still points at it), with its frame's
    /// bytes; the read position moves past it. `None` when every record
    /// was read, or the next is on its way from disk (ask again later).
    pub fn next_record(&mut self) -> Option<(Record, &[u8])> {
        self.poll();
        self.settle();
        self.io.as_ref()?;
        let r = self.r;
        if self.sides[r].read >= self.sides[r].end {
            return None;
        }
        if r == self.w && self.sides[1 - r].end == 0 && self.sides[r].read == 0 {
            // The first read of the file being written: writes move to
            // the other file from now on (NetPath's opportunistic
            // management), once the batch is on its way.
            self.send_batch();
            self.w = 1 - r;
            self.stats.switches += 1;
        }
        let off = self.sides[r].read;
        let rec = match self.record_at(r, off) {
            Some(rec) => rec,
            None => {
                self.request(r, off);
                return None;
            }
        };
        self.sides[r].read = off + rec;
        self.read_ahead(r);
        let head = self.find(r, off, rec)?;
        let buf = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        Some((
            Record {
                buf,
                loc: Loc { side: r as u8, off },
                len,
            },
            &head[HEADER..HEADER + len as usize],
        ))
    }

    /// The length of the record at `off` of side `r`, if it is wholly in
    /// memory (the chunk read ahead taken over when it starts there).
    fn record_at(&mut self, r: usize, off: u64) -> Option<u64> {
        for _ in 0..2 {
            if let Some(head) = self.find(r, off, HEADER as u64) {
                let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
                let rec = record_len(len as usize);
                if self.find(r, off, rec).is_some() {
                    return Some(rec);
                }
            }
            // The next chunk, if it has come, is the one to read from.
            match self.next_ahead.take() {
                Some(c) => self.ahead = Some(c),
                None => return None,
            }
        }
        None
    }

    /// With less than half a chunk of records left to read in memory,
    /// ask for the next chunk, from the first record not wholly there.
    fn read_ahead(&mut self, r: usize) {
        if self.pending.is_some() || self.next_ahead.is_some() {
            return;
        }
        let mut off = self.sides[r].read;
        let stop = off + READ_AHEAD as u64 / 2;
        while off < self.sides[r].end && off < stop {
            let Some(head) = self.find(r, off, HEADER as u64) else {
                break;
            };
            let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
            let rec = record_len(len as usize);
            if self.find(r, off, rec).is_none() {
                break;
            }
            off += rec;
        }
        if off < stop && off < self.sides[r].sent {
            self.request(r, off);
        }
    }

    /// Swap or empty the files whose records were all read: a file read
    /// to its end (every record behind the read position was read back
    /// or forgotten) is truncated, its space freed, and reading moves to
    /// the other while writing moves to it.
    fn settle(&mut self) {
        if self.io.is_none() {
            return;
        }
        let r = self.r;
        let done = |s: &Side| s.read >= s.end && s.live == 0;
        if !done(&self.sides[r]) {
            return;
        }
        if r == self.w {
            // Reading caught up with writing in one file: both empty.
            if self.sides[r].end > 0 {
                self.batch.clear();
                self.empty(r);
            }
            if self.sides[1 - r].end == 0 {
                self.stuck = None;
            }
            return;
        }
        // The other file is being written: it is read next, and written
        // no more once its batch is on its way.
        self.send_batch();
        self.empty(r);
        self.r = self.w;
        self.w = r;
        self.stats.switches += 1;
        if self.sides[self.r].end == 0 {
            self.stuck = None;
        }
    }

    /// Empty side `i`: its file truncated to nothing (its disk space and
    /// reservation freed), what was read or written of it forgotten.
    fn empty(&mut self, i: usize) {
        self.ask(Cmd::Truncate { side: i });
        let gen = self.sides[i].gen;
        let before = self.held.len();
        let mut freed = 0;
        self.held.retain(|h| {
            let stale = h.side == i && h.gen == gen;
            if stale {
                freed += h.data.len() as u64;
            }
            !stale
        });
        if self.held.len() != before {
            self.held_bytes -= freed;
        }
        self.sides[i] = Side {
            gen: gen + 1,
            ..Side::default()
        };
        if self.read_failed.is_some_and(|(s, _)| s == i) {
            self.read_failed = None;
        }
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        // The I/O thread ends once its channel closes (after what it was
        // asked); unnamed files go with their descriptors; the
        // directories made for them go now, if nothing else is in them.
        if let Some(mut io) = self.io.take() {
            let Io { tx, thread, .. } = &mut io;
            let (dead, _) = mpsc::channel();
            drop(std::mem::replace(tx, dead));
            if let Some(t) = thread.take() {
                let _ = t.join();
            }
        }
        for d in &self.made {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// Make the run's directory `d` (mode 0700), or take it if it is already
/// this user's private directory (a dead run's of the same pid); anything
/// else there (another user's, a link) is refused.
fn make_dir(d: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    match std::fs::DirBuilder::new().mode(0o700).create(d) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let m = std::fs::symlink_metadata(d)?;
            let ours = m.is_dir()
                && m.uid() == nix::unistd::geteuid().as_raw()
                && m.permissions().mode() & 0o077 == 0;
            if ours {
                Ok(())
            } else {
                Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "{} exists and is not this user's private directory",
                        d.display()
                    ),
                ))
            }
        }
        Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", d.display()))),
    }
}

/// A file with no name in directory `dir` (`O_TMPFILE`), or, where the
/// file system cannot make one, the file `dir/name` made anew and
/// unlinked at once.
fn open_unnamed(dir: &Path, name: &str) -> io::Result<File> {
    let unnamed = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE)
        .open(dir);
    match unnamed {
        Ok(f) => Ok(f),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) | Some(libc::EINVAL)
            ) =>
        {
            let path = dir.join(name);
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
            std::fs::remove_file(&path)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
            Ok(f)
        }
        Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", dir.display()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spill(dir: &Path, max: u64) -> Spill {
        Spill::new(SpillOptions {
            dirs: vec![dir.to_path_buf()],
            worker: 0,
            max_frames: max,
        })
    }

    fn tmp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("pipelab-spill-test-{}-{name}", std::process::id()))
    }

    /// The next record, waiting for the I/O thread when it is on its way.
    fn next(s: &mut Spill) -> Option<(Record, Vec<u8>)> {
        for _ in 0..3 {
            if let Some((rec, bytes)) = s.next_record() {
                return Some((rec, bytes.to_vec()));
            }
            s.sync();
        }
        None
    }

    /// A pass proves records come back in the order written, with their
    /// bytes, across batches, chunks read ahead, file swaps and
    /// truncations; that a file is swapped once it is read while written
    /// (NetPath's opportunistic management); that the reads and writes
    /// were the I/O thread's; and that the run's directory is gone with
    /// the spill.
    #[test]
    fn records_come_back_in_order_across_swaps() {
        let dir = tmp("order");
        let mut s = spill(&dir, u64::MAX);
        let frame =
            |i: u32| -> Vec<u8> { (0..(60 + (i * 37) % 1500)).map(|k| (k ^ i) as u8).collect() };
        let mut next_buf = 0u32;
        let mut written = 0u32;
        // Write 1000, read 600, write 2000 more, read everything: twice.
        for (w, r) in [(1000, 600), (2000, 2400), (500, 100), (0, 400)] {
            for _ in 0..w {
                s.push(written, &frame(written)).expect("push");
                written += 1;
            }
            for _ in 0..r {
                let (rec, bytes) = next(&mut s).expect("a record");
                assert_eq!(rec.buf, next_buf);
                assert_eq!(bytes, frame(next_buf));
                s.take(rec.loc, rec.len, true);
                next_buf += 1;
            }
        }
        assert_eq!(next_buf, written);
        assert!(next(&mut s).is_none());
        s.sync();
        let st = s.stats();
        assert_eq!(st.on_disk_packets, 0);
        assert_eq!(st.read_back_packets, written as u64);
        assert!(st.switches >= 2, "files swapped: {st:?}");
        assert!(st.written_bytes > 0 && st.read_bytes > 0, "{st:?}");
        assert!(dir.exists());
        drop(s);
        assert!(!dir.exists(), "the run's directory goes with the spill");
    }

    /// A pass proves a frame read before its turn (a miss) comes from the
    /// batch or the file, and that the sequential read then passes over
    /// its record; forgetting a record (a drop on disk) does the same.
    #[test]
    fn misses_and_forgotten_records_are_passed_over() {
        let dir = tmp("miss");
        let mut s = spill(&dir, u64::MAX);
        let mut locs = Vec::new();
        for i in 0..3000u32 {
            let loc = s.push(i, &[i as u8; 700]).expect("push");
            locs.push(loc);
        }
        s.sync();
        let mut out = Vec::new();
        // One in the file, one in the batch.
        for i in [5usize, 2999] {
            s.read(locs[i], 700, &mut out).expect("miss");
            assert_eq!(out, vec![i as u8; 700]);
            s.take(locs[i], 700, false);
        }
        s.forget(locs[7], 700);
        let mut seen = 0;
        while let Some((rec, _)) = next(&mut s) {
            if [5, 7, 2999].contains(&rec.buf) {
                continue;
            }
            s.take(rec.loc, 700, true);
            seen += 1;
        }
        assert_eq!(seen, 2997);
        let st = s.stats();
        assert_eq!(
            (st.misses, st.dropped_on_disk, st.on_disk_packets),
            (2, 1, 0)
        );
    }

    /// A pass proves a write that fails (ENOSPC from `/dev/full`) loses
    /// nothing: the frames of every batch are still read back, the spill
    /// refuses frames while it holds them, and takes frames again once
    /// they are all read.
    #[test]
    fn a_failed_write_keeps_its_frames_and_refuses_more() {
        let full = || {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/full")
                .expect("/dev/full")
        };
        let mut s = Spill::with_files(full(), full(), u64::MAX).expect("spill");
        s.no_reserve = true;
        let mut taken = 0u32;
        let mut refused = 0;
        for i in 0..2000u32 {
            if i % 100 == 0 {
                // What the I/O thread did is known from here on.
                s.sync();
            }
            match s.push(i, &[i as u8; 1000]) {
                Ok(_) => taken += 1,
                Err(_) => refused += 1,
            }
        }
        assert!(taken > 0 && refused > 0, "taken {taken}, refused {refused}");
        assert!(s.stuck().is_some() && !s.can_take());
        let mut back = 0u32;
        while let Some((rec, bytes)) = next(&mut s) {
            assert_eq!(bytes, vec![rec.buf as u8; 1000]);
            s.take(rec.loc, rec.len, true);
            back += 1;
        }
        assert_eq!(back, taken, "every frame taken came back");
        assert!(s.stuck().is_none(), "empty again, it takes frames");
        assert!(s.stats().errors >= 1);
    }

    /// The bookkeeping a frame on disk keeps is at most
    /// [`FRAME_BOOKKEEPING`] bytes: its engine descriptor slot (the
    /// public descriptor and the engine's per-hop fields, 40 bytes) and
    /// its buffer pool slot.
    #[test]
    fn bookkeeping() {
        let engine = std::mem::size_of::<pipelab_engine::Packet>() as u64 + 40;
        let pool = crate::buffers::slot_size() as u64;
        assert!(
            engine + pool <= FRAME_BOOKKEEPING,
            "descriptor {engine} + slot {pool} > {FRAME_BOOKKEEPING}"
        );
    }
}
