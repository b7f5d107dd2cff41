//! Queues larger than memory: frames kept on disk never change what the
//! emulation does, and every frame a spilling pipe took comes out intact.
//!
//! * In virtual time: the emulation and the buffer pool driven as the
//!   runner drives them (ingress in its two halves, a frame of a spilling
//!   pipe written to disk when the pool wants it, frames read back
//!   between arrivals, a departure loading its frame), with the memory
//!   cap far too small for the queue, against the same traffic through a
//!   pool that holds everything in memory: the departures (instant,
//!   packet, port) are the same, and so are the bytes of every frame.
//!   Spilling is a matter of storage, not of timing.
//! * Through the real-time runner, with in-memory ports: a burst far
//!   beyond the cap into a slow pipe marked `spill` is delivered whole,
//!   in order, byte for byte, nothing dropped for memory; the accounting
//!   balances; the run's directory is gone when the runner is.
//!
//! No privilege needed: the spill's files are made under the system's
//! temporary directory, in a directory of the test's own.

use pipelab_classify::frame::parse_ethernet;
use pipelab_emu::{lower_config, Admission, Compiled, Departure, Emulation, Exit, Ingress};
use pipelab_engine::{Instant, Packet};
use pipelab_io::backends::{Port, PortStats};
use pipelab_io::buffers::{Annotation, BufId, BufMeta, BufferPool, Rx, BUF_SIZE};
use pipelab_io::runner::{Runner, RunnerOptions};
use pipelab_io::spill::{SpillOptions, SpillStats};
use pipelab_lang::{parse_line, Config};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// An Ethernet/IPv4/UDP frame of `size` IP bytes from port `sport`,
/// whose payload is its sequence number then a pattern of it.
fn frame(seq: u32, size: usize, sport: u16) -> Vec<u8> {
    let payload: Vec<u8> = (0..size - 28)
        .map(|k| {
            if k < 4 {
                seq.to_be_bytes()[k]
            } else {
                (seq as usize).wrapping_mul(31).wrapping_add(k) as u8
            }
        })
        .collect();
    let mut out = Vec::with_capacity(size + 14);
    etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(sport, 9)
        .write(&mut out, &payload)
        .expect("frame");
    out
}

/// The emulation of `lines`, with two ports (0 and 1).
fn compiled(lines: &[&str]) -> Compiled {
    let mut cfg = Config::new();
    for line in lines {
        let cmd = parse_line(line).expect("parse").expect("a command");
        cfg.apply(&cmd).expect("apply");
    }
    let mut files = |p: &str| pipelab_emu::read_files(p);
    let mut spec = lower_config(&cfg, &mut files).expect("lower");
    spec.ports = pipelab_emu::Spec::two_ports(("p0", None), ("p1", None));
    Compiled::new(spec, 1).expect("compile")
}

/// A directory of this test's own under the temporary directory.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pipelab-spill-it-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// A departure as seen at the port: instant, where, and the frame.
type Seen = (Instant, u16, Vec<u8>);

/// What one virtual-time run gave.
struct VirtualRun {
    out: Vec<Seen>,
    /// Departures that were drops: (instant, the packet's length).
    drops: Vec<(Instant, u32)>,
    spill: SpillStats,
    refused_memory: u64,
}

/// Drive `lines` in virtual time as the runner would, with a pool of
/// `cap` bytes that spills into `dirs` (none: never), reading back at
/// most `read_back` frames after each arrival. Arrivals: (instant ns,
/// frame).
fn virtual_run(
    lines: &[&str],
    cap: u64,
    dirs: Option<Vec<PathBuf>>,
    read_back: usize,
    arrivals: &[(u64, Vec<u8>)],
) -> VirtualRun {
    let spilling = dirs.is_some();
    let opts = RunnerOptions {
        mem_cap: cap,
        spill: spilling,
        ..RunnerOptions::default()
    };
    let mut emu = Emulation::new(opts.engine_options());
    emu.apply(compiled(lines));
    let mut bufs = BufferPool::with_cap(cap);
    if let Some(dirs) = dirs {
        bufs.enable_spill(SpillOptions {
            dirs,
            worker: 0,
            max_frames: u64::MAX,
        });
    }
    let spill_pipes: Vec<bool> = {
        let mut v = Vec::new();
        for (&n, def) in &emu.spec().pipes {
            if let (true, Some(i)) = (def.spill, emu.pipe(n)) {
                v.resize(v.len().max(i.0 as usize + 1), false);
                v[i.0 as usize] = true;
            }
        }
        v
    };
    let mut run = VirtualRun {
        out: Vec::new(),
        drops: Vec::new(),
        spill: SpillStats::default(),
        refused_memory: 0,
    };
    let mut deps: Vec<Departure> = Vec::new();
    let settle = |bufs: &mut BufferPool, deps: &mut Vec<Departure>, run: &mut VirtualRun| {
        for d in deps.drain(..) {
            let buf = d.pkt.buf;
            match d.exit {
                Exit::Deliver { port } => {
                    bufs.load(buf).expect("a spilled frame reads back");
                    run.out.push((d.at, port, bufs.frame(buf).to_vec()));
                }
                Exit::Dropped(_) | Exit::Answer(_) => run.drops.push((d.at, d.pkt.len)),
                Exit::Duplicated => {
                    bufs.share(buf);
                    continue;
                }
            }
            let _ = bufs.release(buf);
        }
    };
    for (t, bytes) in arrivals {
        let now = Instant(*t);
        {
            let b = &bufs;
            emu.advance(now, &mut deps, &mut |p: &Packet| {
                parse_ethernet(&b.bytes(p.buf)).view
            });
        }
        settle(&mut bufs, &mut deps, &mut run);
        let mut got = Vec::new();
        let mut rx = Rx::new(&mut bufs, 0, 1, &mut got);
        if rx.copy(&[bytes], Annotation::default()).is_none() {
            run.refused_memory += 1;
            continue;
        }
        let buf = got[0];
        let mut info = parse_ethernet(bufs.frame(buf));
        let mut pkt = Packet::new(info.l3_len.max(1));
        pkt.buf = buf;
        pkt.born = now;
        pkt.key = info.view.key;
        let (r, spill) = match emu.admit(&mut pkt, 0, &mut info.view) {
            Admission::Enter(e) => {
                let spill = spill_pipes
                    .get(e.pipe().0 as usize)
                    .copied()
                    .unwrap_or(false)
                    && bufs.wants_spill();
                assert!(
                    !spill || bufs.can_spill(),
                    "the spill takes every frame here"
                );
                (emu.enter(now, pkt, e), spill)
            }
            other => panic!("every frame enters a pipe: {other:?}"),
        };
        match r {
            Ingress::Queued => {
                if spill {
                    bufs.spill(buf).expect("spilled");
                }
            }
            Ingress::Dropped(_) => {
                run.drops.push((now, pkt.len));
                let _ = bufs.release(buf);
            }
            other => panic!("unexpected {other:?}"),
        }
        bufs.sync_spill();
        bufs.read_back(read_back);
    }
    // Then as the runner between its steps: every millisecond, the
    // departures, then frames read back.
    let mut t = arrivals.last().map_or(0, |a| a.0);
    while emu.in_flight() > 0 {
        t += 1_000_000;
        {
            let b = &bufs;
            emu.advance(Instant(t), &mut deps, &mut |p: &Packet| {
                parse_ethernet(&b.bytes(p.buf)).view
            });
        }
        settle(&mut bufs, &mut deps, &mut run);
        bufs.sync_spill();
        bufs.read_back(read_back);
    }
    assert_eq!(emu.in_flight(), 0, "everything left");
    assert_eq!(bufs.in_use(), 0, "every buffer released");
    run.spill = bufs.spill_stats();
    run
}

/// 6000 frames of 200 to 1400 bytes at 20 Mbit/s (twice the link).
fn overload() -> Vec<(u64, Vec<u8>)> {
    let mut t = 0u64;
    (0..6000u32)
        .map(|i| {
            let size = 200 + (i as usize * 97) % 1200;
            t += size as u64 * 8 * 1_000_000_000 / 20_000_000;
            (t, frame(i, size, 1000 + (i % 3) as u16))
        })
        .collect()
}

/// A pass proves spilling changes nothing but where frames wait: with a
/// cap of 2 MB against a queue of megabytes, frames on disk (read
/// back between arrivals, or none read back and every departure a miss),
/// one directory or two, and a second pipe that never spills beside it,
/// the departures are those of a pool that holds everything in memory,
/// instant for instant and byte for byte; the spill wrote frames and read
/// them all back, and nothing was refused for memory.
#[test]
fn spilling_never_changes_the_departures() {
    let lines = [
        "pipe 1 config bw 10Mbit/s delay 5ms 1ms distribution normal loss 1% queue 16MB spill",
        "pipe 2 config bw 50Mbit/s delay 1ms queue 200",
        "add 100 pipe 2 udp from any 1002 to any",
        "add 200 pipe 1 ip from any to any",
    ];
    let traffic = overload();
    let reference = virtual_run(&lines, 1 << 30, None, 0, &traffic);
    assert_eq!(reference.spill, SpillStats::default());
    assert_eq!(reference.refused_memory, 0);
    assert!(reference.out.len() > 5000, "{}", reference.out.len());
    assert!(!reference.drops.is_empty(), "the loss model dropped some");
    let cap = 2 << 20;
    let one = scratch("one");
    let two = scratch("two");
    for (name, dirs, read_back) in [
        ("read back, one dir", vec![one.join("r")], 64),
        (
            "read back, two dirs",
            vec![one.join("a"), two.join("b")],
            64,
        ),
        ("all misses", vec![one.join("m")], 0),
    ] {
        let r = virtual_run(&lines, cap, Some(dirs.clone()), read_back, &traffic);
        assert_eq!(r.refused_memory, 0, "{name}: nothing refused for memory");
        assert_eq!(r.drops, reference.drops, "{name}: the same drops");
        assert_eq!(r.out.len(), reference.out.len(), "{name}: as many out");
        for (k, (a, b)) in r.out.iter().zip(&reference.out).enumerate() {
            assert!(
                a == b,
                "{name}: departure {k} differs: {:?} vs {:?}",
                (a.0, a.1, a.2.len()),
                (b.0, b.1, b.2.len())
            );
        }
        let s = r.spill;
        assert!(s.spilled_packets > 1000, "{name}: {s:?}");
        assert_eq!(s.on_disk_packets, 0, "{name}: {s:?}");
        assert_eq!(
            s.read_back_packets + s.misses + s.dropped_on_disk,
            s.spilled_packets,
            "{name}: every frame written came back or was dropped on disk: {s:?}"
        );
        if read_back == 0 {
            assert_eq!(s.read_back_packets, 0, "{name}: {s:?}");
        } else {
            // Read back ahead of their departure, all of them.
            assert_eq!(s.misses, 0, "{name}: {s:?}");
        }
        for d in &dirs {
            assert!(
                !d.exists(),
                "{name}: {} removed with the spill",
                d.display()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&one);
    let _ = std::fs::remove_dir_all(&two);
}

/// A pass proves what a pool without a spill does with the same traffic:
/// frames beyond the cap are refused (the memory drops of today), which
/// is what `spill` is for.
#[test]
fn without_spill_the_cap_refuses() {
    let lines = [
        "pipe 1 config bw 10Mbit/s delay 5ms queue 16MB",
        "add 200 pipe 1 ip from any to any",
    ];
    let r = virtual_run(&lines, 2 << 20, None, 0, &overload());
    assert!(r.refused_memory > 1000, "{}", r.refused_memory);
}

/// An in-memory port: frames queued by the test, frames sent kept.
struct MemPort {
    name: String,
    inbox: Arc<Mutex<VecDeque<Vec<u8>>>>,
    sent: Arc<Mutex<Vec<Vec<u8>>>>,
    /// Readable while frames wait (a byte written per batch queued).
    rd: UnixStream,
    stats: PortStats,
}

impl Port for MemPort {
    fn name(&self) -> &str {
        &self.name
    }
    fn fd(&self) -> BorrowedFd<'_> {
        self.rd.as_fd()
    }
    fn recv(&mut self, rx: &mut Rx<'_>) -> io::Result<()> {
        let mut scratch = [0u8; 64];
        let _ = (&self.rd).read(&mut scratch);
        let mut inbox = self.inbox.lock().unwrap_or_else(|e| e.into_inner());
        while rx.wants_more() {
            let Some(f) = inbox.pop_front() else { break };
            self.stats.rx_frames += 1;
            let _ = rx.copy(&[&f], Annotation::default());
        }
        Ok(())
    }
    fn send(&mut self, pool: &BufferPool, buf: BufId) -> io::Result<()> {
        self.stats.tx_frames += 1;
        self.sent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(pool.frame(buf).to_vec());
        Ok(())
    }
    fn stats(&self) -> PortStats {
        self.stats
    }
    fn discard(&mut self, _meta: &BufMeta) {}
}

/// A pass proves the runner itself spills: 20000 frames of 1000 bytes
/// (20 MB) offered at 800 Mbit/s to a 100 Mbit/s pipe marked `spill`, with a
/// memory cap of 16 MB (frames beyond 12 MB go to disk), all leave by the
/// other port, in order and intact; none is dropped (for memory or
/// anything else); frames went to disk and came back; the accounting
/// balances; the pool's memory (buffers, the bookkeeping of frames on
/// disk, batches on their way) never passed the cap; and the run's
/// directory is gone with the runner.
#[test]
fn the_runner_spills_and_delivers_everything() {
    let base = scratch("runner");
    let dir = base.join("run");
    let inbox = Arc::new(Mutex::new(VecDeque::new()));
    let sent = Arc::new(Mutex::new(Vec::new()));
    let (rd0, mut wr0) = UnixStream::pair().expect("pair");
    let (rd1, _wr1) = UnixStream::pair().expect("pair");
    rd0.set_nonblocking(true).expect("nonblocking");
    rd1.set_nonblocking(true).expect("nonblocking");
    let p0 = MemPort {
        name: "p0".into(),
        inbox: inbox.clone(),
        sent: Arc::new(Mutex::new(Vec::new())),
        rd: rd0,
        stats: PortStats::default(),
    };
    let p1 = MemPort {
        name: "p1".into(),
        inbox: Arc::new(Mutex::new(VecDeque::new())),
        sent: sent.clone(),
        rd: rd1,
        stats: PortStats::default(),
    };
    let opts = RunnerOptions {
        mem_cap: CAP,
        spill: true,
        ..RunnerOptions::default()
    };
    let mut emu = Emulation::new(opts.engine_options());
    emu.apply(compiled(&[
        "pipe 1 config bw 100Mbit/s delay 2ms queue 64MB spill",
        "add 100 pipe 1 ip from any to any",
    ]));
    let mut r = Runner::new(emu, vec![Box::new(p0), Box::new(p1)], opts);
    r.set_spill(Some(vec![dir.clone()]));
    const N: u32 = 20_000;
    const CAP: u64 = 16 << 20;
    // Offered at 800 Mbit/s (1000 frames every 10 ms, for 200 ms): eight
    // times the link's rate, a small share of a disk's.
    let start = std::time::Instant::now();
    let mut offered = 0u32;
    let mut peak = 0;
    while sent.lock().unwrap_or_else(|e| e.into_inner()).len() < N as usize
        && start.elapsed() < std::time::Duration::from_secs(20)
    {
        let due = ((start.elapsed().as_millis() / 10 + 1) * 1000).min(N as u128) as u32;
        if offered < due {
            let mut q = inbox.lock().unwrap_or_else(|e| e.into_inner());
            for i in offered..due {
                q.push_back(frame(i, 1000, 7));
            }
            offered = due;
        }
        if !inbox.lock().unwrap_or_else(|e| e.into_inner()).is_empty() {
            let _ = wr0.write_all(&[1]);
        }
        r.step(pipelab_engine::Duration::from_millis(1), None)
            .expect("step");
        peak = peak.max(r.memory_bytes());
    }
    let st = r.stats();
    let got = sent.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(got.len(), N as usize, "all delivered: {st:?}");
    for (i, f) in got.iter().enumerate() {
        assert!(
            f == &frame(i as u32, 1000, 7),
            "frame {i} intact and in order"
        );
    }
    assert_eq!(st.dropped(), 0, "nothing dropped: {st:?}");
    assert!(st.balanced(), "{st:?}");
    assert!(st.spill.spilled_packets > 1000, "{:?}", st.spill);
    assert!(st.spill.read_back_packets > 0, "{:?}", st.spill);
    assert_eq!(st.spill.on_disk_packets, 0, "{:?}", st.spill);
    assert!(
        peak <= CAP + BUF_SIZE as u64,
        "the pool's memory {peak} under the cap"
    );
    assert!(st.spill.max_on_disk_bytes > 4 << 20, "{:?}", st.spill);
    drop(r);
    assert!(!dir.exists(), "the run's directory goes with the runner");
    let _ = std::fs::remove_dir_all(&base);
}
