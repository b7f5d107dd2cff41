//! How many times the runner and the backends copy a forwarded frame in
//! user space, counted by the pool's debug counter (`Runner::copies`), on
//! real interfaces: N UDP datagrams from one namespace to another through
//! a runner whose two ports are
//!
//! * the host ends of two veth pairs, with AF_PACKET (one copy: into a
//!   transmit ring slot; received without one, the receive slot lent to
//!   the pool, the last frame of a receive batch too; frames held past
//!   the lend window are copied into the pool);
//! * the same with AF_XDP (one copy: into the transmitting port's UMEM;
//!   received without one, the frame lent out of the receiving UMEM), and
//!   none when the two ports share one UMEM (the frame leaves from the
//!   chunk it came in);
//! * two TAP devices, as `pipelab shell` makes them (none: `read` into and
//!   `write` from the pool buffer).
//!
//! With many TAP ports, most of them idle (a topology's VNs), the runner
//! reads only those with frames waiting (`pipelab_io::readiness`): a
//! port counting its receive calls shows the idle ones are left alone.
//!
//! Every datagram must arrive intact (sequence number and pattern), so
//! that a buffer reused or handed back too early cannot pass, and the
//! frames must have crossed the runner (its `delivered` counter), so that
//! the copy bound cannot pass vacuously. A 2 ms pipe holds each frame in
//! the pool for a while, as a real emulation does. Root needed (else
//! built ignored, see build.rs). Everything lives in namespaces of the
//! test's own, gone when it ends.

use pipelab_emu::{lower_config, Compiled, Emulation};
use pipelab_engine::Duration;
use pipelab_io::backends::af_packet::AfPacket;
use pipelab_io::backends::af_xdp::AfXdp;
use pipelab_io::backends::tap::Tap;
use pipelab_io::backends::Port;
use pipelab_io::netlink::Netlink;
use pipelab_io::netns::NetNs;
use pipelab_io::runner::{Runner, RunnerOptions, RunnerStats};
use pipelab_lang::{parse_line, Config};
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Datagrams sent per test (unless it says otherwise).
const N: u64 = 2000;
const PAYLOAD: usize = 100;
const A: Ipv4Addr = Ipv4Addr::new(10, 99, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 99, 0, 2);
const MAC_A: [u8; 6] = [0x02, 0x99, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [0x02, 0x99, 0, 0, 0, 2];

static SERIAL: Mutex<()> = Mutex::new(());

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// One test at a time (they measure nothing, but share the CPU), and
/// only as root.
fn live() -> Option<std::sync::MutexGuard<'static, ()>> {
    let g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Without root these tests are built ignored (build.rs); a build that
    // runs them without root is a mistake to report, never a pass.
    assert!(
        is_root(),
        "live tests need root (CAP_NET_ADMIN, CAP_NET_RAW): run them as root, or build without PIPELAB_LIVE=1 to have them ignored"
    );
    Some(g)
}

/// The two end namespaces, A and B, and the one the runner's ports are
/// in.
struct Bed {
    ports: NetNs,
    a: NetNs,
    b: NetNs,
}

impl Bed {
    fn new() -> io::Result<Bed> {
        Ok(Bed {
            ports: NetNs::create()?,
            a: NetNs::create()?,
            b: NetNs::create()?,
        })
    }

    /// Give interface `eth0` of the end namespace `ns` address `me`, MAC
    /// `mac`, and a permanent neighbour entry for the other end (no ARP).
    fn end(ns: &NetNs, me: Ipv4Addr, mac: [u8; 6], peer: Ipv4Addr, peer_mac: [u8; 6]) {
        ns.run(move || {
            let nl = Netlink::connect()?;
            nl.loopback_up()?;
            let i = nl.index("eth0")?;
            nl.set_mac(i, mac)?;
            nl.add_addr(i, IpAddr::V4(me), 24)?;
            nl.up(i, Some(1500))?;
            nl.add_neighbour(i, IpAddr::V4(peer), peer_mac)?;
            Ok(())
        })
        .expect("configure an end namespace");
    }

    /// Two veth pairs: `pa` (ports namespace) to `eth0` of A, `pb` to
    /// `eth0` of B.
    fn veths(&self) {
        let (fa, fb) = (self.a.fd(), self.b.fd());
        self.ports
            .run(move || {
                let nl = Netlink::connect()?;
                for (p, e, ns) in [("pa", "ea", fa), ("pb", "eb", fb)] {
                    nl.add_veth(p, e)?;
                    let ei = nl.index(e)?;
                    nl.move_to_ns(ei, ns, "eth0")?;
                    let pi = nl.index(p)?;
                    nl.up(pi, Some(1500))?;
                }
                Ok(())
            })
            .expect("veth pairs");
        Bed::end(&self.a, A, MAC_A, B, MAC_B);
        Bed::end(&self.b, B, MAC_B, A, MAC_A);
    }

    /// Two TAP devices made in the ports namespace (the runner holds
    /// their descriptors), moved to A and B as `eth0`.
    fn taps(&self) -> Vec<Box<dyn Port + Send>> {
        self.taps_with(Tap::create)
    }

    /// TAP devices opened with `create` (with or without offloads).
    fn taps_with(&self, create: fn(&str) -> io::Result<Tap>) -> Vec<Box<dyn Port + Send>> {
        let (fa, fb) = (self.a.fd(), self.b.fd());
        let taps = self
            .ports
            .run(move || {
                let ta = create("ta")?;
                let tb = create("tb")?;
                let nl = Netlink::connect()?;
                for (t, ns) in [("ta", fa), ("tb", fb)] {
                    let i = nl.index(t)?;
                    nl.move_to_ns(i, ns, "eth0")?;
                }
                Ok(vec![
                    Box::new(ta) as Box<dyn Port + Send>,
                    Box::new(tb) as Box<dyn Port + Send>,
                ])
            })
            .expect("TAP devices");
        Bed::end(&self.a, A, MAC_A, B, MAC_B);
        Bed::end(&self.b, B, MAC_B, A, MAC_A);
        taps
    }

    /// [`Bed::taps`] and `idle` more TAP devices, up in the ports
    /// namespace with nothing routed to them, each port counting its
    /// receive calls (in `calls`, by port).
    fn taps_and_idle(&self, idle: usize, calls: &[Arc<AtomicU64>]) -> Vec<Box<dyn Port + Send>> {
        let mut ports = self.taps();
        let more = self
            .ports
            .run(move || {
                let nl = Netlink::connect()?;
                (0..idle)
                    .map(|i| {
                        let name = format!("idle{i}");
                        let t = Tap::create(&name)?;
                        nl.up(nl.index(&name)?, Some(1500))?;
                        Ok(Box::new(t) as Box<dyn Port + Send>)
                    })
                    .collect::<io::Result<Vec<_>>>()
            })
            .expect("idle TAP devices");
        ports.extend(more);
        ports
            .into_iter()
            .zip(calls)
            .map(|(inner, calls)| {
                Box::new(Counted {
                    inner,
                    calls: calls.clone(),
                }) as Box<dyn Port + Send>
            })
            .collect()
    }

    /// Open ports on `pa` and `pb` in the ports namespace with `open`.
    fn open<P: Port + Send + 'static>(
        &self,
        open: fn(&str) -> io::Result<P>,
    ) -> Vec<Box<dyn Port + Send>> {
        self.ports
            .run(move || {
                Ok(vec![
                    Box::new(open("pa")?) as Box<dyn Port + Send>,
                    Box::new(open("pb")?) as Box<dyn Port + Send>,
                ])
            })
            .expect("open the ports")
    }
}

/// A port that counts the runner's receive calls on it.
struct Counted {
    inner: Box<dyn Port + Send>,
    calls: Arc<AtomicU64>,
}

impl Port for Counted {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.inner.fd()
    }
    fn recv(&mut self, rx: &mut pipelab_io::buffers::Rx<'_>) -> io::Result<()> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.recv(rx)
    }
    fn send(
        &mut self,
        pool: &pipelab_io::buffers::BufferPool,
        buf: pipelab_io::buffers::BufId,
    ) -> io::Result<()> {
        self.inner.send(pool, buf)
    }
    fn flush(&mut self, pool: &pipelab_io::buffers::BufferPool) -> u64 {
        self.inner.flush(pool)
    }
    fn stats(&self) -> pipelab_io::backends::PortStats {
        self.inner.stats()
    }
    fn discard(&mut self, meta: &pipelab_io::buffers::BufMeta) {
        self.inner.discard(meta)
    }
    fn reclaim(&mut self, frame: pipelab_io::backends::lend::LentFrame) {
        self.inner.reclaim(frame)
    }
    fn offloads(&self) -> bool {
        self.inner.offloads()
    }
    fn readable_when_polled(&self) -> bool {
        self.inner.readable_when_polled()
    }
}

/// What a test sends, and through what.
#[derive(Clone, Copy)]
struct Case {
    /// Datagrams.
    n: u64,
    /// The pipe's delay, ms.
    delay_ms: u32,
    /// The runner's memory cap, bytes.
    mem_cap: u64,
    /// Datagrams per 2 ms burst.
    burst: u64,
    /// Ports in all (2: the two ends alone).
    ports: usize,
}

impl Default for Case {
    fn default() -> Case {
        Case {
            n: N,
            delay_ms: 2,
            mem_cap: RunnerOptions::default().mem_cap,
            burst: 50,
            ports: 2,
        }
    }
}

/// A pipe of `delay_ms` for everything, between port 0 and port 1 (of
/// `n` ports: any other leaves by itself).
fn compiled(delay_ms: u32, n: usize) -> Compiled {
    let mut cfg = Config::new();
    for line in [
        format!("pipe 1 config delay {delay_ms}ms queue 100000"),
        "add 100 pipe 1 ip from any to any".to_string(),
    ] {
        let cmd = parse_line(&line).expect("parse").expect("a command");
        cfg.apply(&cmd).expect("apply");
    }
    let mut no_files = |_: &str| -> Result<String, String> { Err("no files".into()) };
    let mut spec = lower_config(&cfg, &mut no_files).expect("lower");
    spec.ports = pipelab_emu::Spec::two_ports(("p0", None), ("p1", None));
    for i in 2..n {
        spec.ports.push(pipelab_emu::PortDef {
            name: format!("p{i}"),
            dir: None,
            iface: Some(i as u32),
            egress: pipelab_emu::Egress::Port(i as u16),
        });
    }
    Compiled::new(spec, 1).expect("compile")
}

/// What a run through the runner gave.
struct Run {
    stats: RunnerStats,
    copies: u64,
    /// Datagrams B received intact, by sequence number.
    intact: u64,
    /// CPU time the runner's thread used, and the wall time it ran.
    cpu: std::time::Duration,
    wall: std::time::Duration,
}

/// Send N numbered datagrams from A to B through a runner over `ports`
/// (in the ports namespace), until B has them all or 10 s pass; then let
/// the runner drain and report.
fn run(bed: &Bed, ports: Vec<Box<dyn Port + Send>>) -> Run {
    run_case(bed, ports, Case::default())
}

/// [`run`] for `case`.
fn run_case(bed: &Bed, ports: Vec<Box<dyn Port + Send>>, case: Case) -> Run {
    let n = case.n;
    let stop = Arc::new(AtomicBool::new(false));
    let runner = {
        let stop = stop.clone();
        let ns = bed.ports.try_clone().expect("namespace");
        std::thread::spawn(
            move || -> io::Result<(RunnerStats, u64, [std::time::Duration; 2])> {
                ns.enter()?;
                let cpu = || {
                    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
                        .map(std::time::Duration::from)
                        .unwrap_or_default()
                };
                let (cpu0, wall0) = (cpu(), std::time::Instant::now());
                let opts = RunnerOptions {
                    mem_cap: case.mem_cap,
                    ..RunnerOptions::default()
                };
                let mut emu = Emulation::new(opts.engine_options());
                emu.apply(compiled(case.delay_ms, case.ports));
                let ports: Vec<Box<dyn Port>> =
                    ports.into_iter().map(|p| p as Box<dyn Port>).collect();
                let mut r = Runner::new(emu, ports, opts);
                r.run_until(None, |_| stop.load(Ordering::Relaxed))?;
                r.drain(Duration::from_millis(200 + 2 * case.delay_ms as u64))?;
                Ok((r.stats(), r.copies(), [cpu() - cpu0, wall0.elapsed()]))
            },
        )
    };
    let rx = bed
        .b
        .run(|| {
            let s = UdpSocket::bind(SocketAddr::from((B, 9000)))?;
            // Room for a whole run's datagrams, should the test read late.
            let _ = nix::sys::socket::setsockopt(
                &s,
                nix::sys::socket::sockopt::RcvBufForce,
                &(16 << 20),
            );
            s.set_nonblocking(true)?;
            Ok(s)
        })
        .expect("receiver");
    let tx = bed
        .a
        .run(|| UdpSocket::bind(SocketAddr::from((A, 0))))
        .expect("sender");
    // Let the runner start (it measures its sleep margin first).
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut seen = vec![false; n as usize];
    let mut buf = [0u8; 2048];
    let mut take = |rx: &UdpSocket, seen: &mut Vec<bool>| {
        while let Ok(n) = rx.recv(&mut buf) {
            if n != PAYLOAD {
                continue;
            }
            let seq = u64::from_be_bytes(buf[..8].try_into().unwrap_or_default());
            let pattern_ok = buf[8..n].iter().all(|&b| b == (seq as u8) ^ 0x5a);
            if let Some(s) = seen.get_mut(seq as usize) {
                *s |= pattern_ok;
            }
        }
    };
    for seq in 0..n {
        let mut p = [(seq as u8) ^ 0x5a; PAYLOAD];
        p[..8].copy_from_slice(&seq.to_be_bytes());
        tx.send_to(&p, SocketAddr::from((B, 9000)))
            .expect("send a datagram");
        // Paced (by default bursts of 50 every 2 ms: 25 kpps), and read as
        // they come, so that no kernel queue overflows on a busy machine.
        if seq % case.burst == case.burst - 1 {
            std::thread::sleep(std::time::Duration::from_millis(2));
            take(&rx, &mut seen);
        }
    }
    let wait = if case.mem_cap < RunnerOptions::default().mem_cap {
        // Some are dropped at the cap: wait for the others only.
        2 * case.delay_ms as u64 + 500
    } else {
        10_000
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(wait);
    while std::time::Instant::now() < deadline && seen.iter().any(|s| !s) {
        std::thread::sleep(std::time::Duration::from_millis(5));
        take(&rx, &mut seen);
    }
    stop.store(true, Ordering::Relaxed);
    let (stats, copies, [cpu, wall]) = runner.join().expect("runner thread").expect("runner error");
    Run {
        stats,
        copies,
        cpu,
        wall,
        intact: seen.iter().filter(|s| **s).count() as u64,
    }
}

impl Run {
    /// N datagrams intact, every frame that entered left, and at least N
    /// crossed (the counter cannot pass vacuously).
    fn assert_forwarded(&self, what: &str) {
        let s = &self.stats;
        eprintln!(
            "{what}: {} of {N} datagrams intact; received {}, delivered {}, copies {}",
            self.intact, s.received, s.delivered, self.copies
        );
        assert_eq!(self.intact, N, "{what}: datagrams lost or damaged: {s:?}");
        assert!(
            s.delivered >= N,
            "{what}: fewer frames than datagrams: {s:?}"
        );
        assert_eq!(s.received, s.delivered, "{what}: frames dropped: {s:?}");
        assert_eq!(s.inside, 0, "{what}: frames left inside: {s:?}");
    }
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn af_packet_copies_each_forwarded_frame_once() {
    let Some(_g) = live() else { return };
    let bed = Bed::new().expect("namespaces");
    bed.veths();
    let r = run(&bed, bed.open(AfPacket::open));
    r.assert_forwarded("AF_PACKET");
    // One into a transmit ring slot per frame, none at reception: every
    // receive slot is lent to the pool, the last of each batch too (the
    // runner waits on an edge-triggered epoll, not on the socket), and
    // none is held past the lend window here (2000 frames in bursts of 50).
    let (c, d) = (r.copies, r.stats.delivered);
    eprintln!("AF_PACKET: {c} copies for {d} frames");
    assert_eq!(c, d, "AF_PACKET: {c} copies for {d} frames");
}

/// A runner holding AF_PACKET's last received frame (lent, its slot the
/// one before the kernel's next, which makes the socket poll readable)
/// sleeps until it is due: one datagram through a 2 s pipe costs the
/// runner's thread a small part of the time it runs, not all of it.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn af_packet_runner_sleeps_while_it_holds_the_last_frame() {
    let Some(_g) = live() else { return };
    let bed = Bed::new().expect("namespaces");
    bed.veths();
    let case = Case {
        n: 1,
        delay_ms: 2000,
        burst: 1,
        ..Case::default()
    };
    let r = run_case(&bed, bed.open(AfPacket::open), case);
    eprintln!(
        "AF_PACKET, one frame held 2 s: runner CPU {:?} of {:?}; copies {}",
        r.cpu, r.wall, r.copies
    );
    assert_eq!(r.intact, 1, "{:?}", r.stats);
    assert!(r.wall > std::time::Duration::from_secs(2), "{:?}", r.wall);
    // Spinning would use nearly all of it (at least half on a loaded
    // machine); sleeping uses a few percent at most.
    assert!(r.cpu * 4 < r.wall, "runner CPU {:?} of {:?}", r.cpu, r.wall);
}

/// Frames held longer than AF_PACKET's lend window (half its receive
/// ring's arrivals) are copied into the pool and their slots given back,
/// so the kernel never finds its next slot still lent: all arrive intact
/// after their 1 s, the ones taken back with a second copy.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn af_packet_copies_into_the_pool_what_it_holds_past_its_lend_window() {
    let Some(_g) = live() else { return };
    let bed = Bed::new().expect("namespaces");
    bed.veths();
    let window = pipelab_io::backends::af_packet::LEND_WINDOW as u64;
    let n = 3 * window;
    let case = Case {
        n,
        delay_ms: 1000,
        ..Case::default()
    };
    let r = run_case(&bed, bed.open(AfPacket::open), case);
    let s = &r.stats;
    eprintln!(
        "AF_PACKET, 1 s pipe: {} of {n} intact; delivered {}, copies {}",
        r.intact, s.delivered, r.copies
    );
    assert_eq!(r.intact, n, "{s:?}");
    assert_eq!(s.received, s.delivered, "{s:?}");
    // The first 2 × window were taken back (two copies each); the last
    // window stayed lent until they left (one each). Frames the bed's
    // stacks send besides the datagrams (a neighbour solicitation, say)
    // move the window by as many.
    let extra = s.received - n;
    let unlent = r.copies - s.delivered;
    assert!(
        (2 * window - 2..=2 * window + extra).contains(&unlent),
        "{s:?}, {} copies: {unlent} taken back, window {window}",
        r.copies
    );
}

/// At the memory cap, AF_PACKET's lent slots are refused and given back
/// to the kernel at once, counted as `dropped_memory`, and the accounting
/// holds.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn af_packet_at_the_memory_cap_drops_and_counts() {
    let Some(_g) = live() else { return };
    let bed = Bed::new().expect("namespaces");
    bed.veths();
    let case = Case {
        n: 600,
        delay_ms: 300,
        mem_cap: 100 * pipelab_io::buffers::BUF_SIZE as u64,
        burst: 600,
        ..Case::default()
    };
    let r = run_case(&bed, bed.open(AfPacket::open), case);
    let s = &r.stats;
    eprintln!(
        "AF_PACKET at the cap: {} of 600 intact; {s:?}, copies {}",
        r.intact, r.copies
    );
    assert!(s.dropped_memory > 0, "{s:?}");
    assert_eq!(s.received, s.delivered + s.dropped_memory, "{s:?}");
    assert!(r.intact > 0 && r.intact <= 100, "{} intact", r.intact);
    // What was refused went back uncopied; what was kept, lent, is
    // copied once on its way out.
    assert_eq!(r.copies, s.delivered, "{s:?}, {} copies", r.copies);
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn af_xdp_copies_each_forwarded_frame_once() {
    let Some(_g) = live() else { return };
    let bed = Bed::new().expect("namespaces");
    bed.veths();
    let r = run(&bed, bed.open(AfXdp::open));
    r.assert_forwarded("AF_XDP");
    // Exactly one: into the transmitting port's UMEM (received without
    // one; no chunk shortage at this rate, so nothing was spilled).
    assert_eq!(r.copies, r.stats.delivered, "AF_XDP copies");
}

/// Two AF_XDP ports sharing one UMEM, as one worker opens them: what
/// one receives leaves by the other from the chunk it came in, with no
/// copy, and the chunk goes back to the receiving port once the pool and
/// the other port's completion ring are both done with it. 30 000
/// datagrams, twice as many as a port has receive chunks, so they must
/// come back; every one must arrive intact, so none may be reused early.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn af_xdp_ports_sharing_a_umem_forward_without_a_copy() {
    let Some(_g) = live() else { return };
    let bed = Bed::new().expect("namespaces");
    bed.veths();
    let ports = bed
        .ports
        .run(|| {
            let (a, b) = AfXdp::open_pair("pa", "pb")?;
            assert!(a.shares_umem() && b.shares_umem());
            Ok(vec![
                Box::new(a) as Box<dyn Port + Send>,
                Box::new(b) as Box<dyn Port + Send>,
            ])
        })
        .expect("open the ports");
    // At the default pace (25 kpps): the RX ring rides out a stall of
    // the runner of up to 80 ms.
    let n = 30_000;
    let case = Case {
        n,
        ..Case::default()
    };
    let r = run_case(&bed, ports, case);
    let s = &r.stats;
    eprintln!(
        "AF_XDP, one UMEM: {} of {n} intact; received {}, delivered {}, copies {}",
        r.intact, s.received, s.delivered, r.copies
    );
    assert_eq!(r.intact, n, "datagrams lost or damaged: {s:?}");
    assert!(s.delivered >= n, "fewer frames than datagrams: {s:?}");
    assert_eq!(s.received, s.delivered, "frames dropped: {s:?}");
    assert_eq!(r.copies, 0, "AF_XDP, one UMEM: copies");
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn tap_forwards_without_a_copy() {
    let Some(_g) = live() else { return };
    let bed = Bed::new().expect("namespaces");
    let r = run(&bed, bed.taps());
    r.assert_forwarded("TAP");
    // None in user space: the kernel reads into and writes from the pool.
    assert_eq!(r.copies, 0, "TAP copies");
}

/// A runner with 40 TAP ports, 38 of them idle (up, nothing sent to
/// them): the datagrams between the two others all arrive, and the
/// runner reads an idle port only when a frame waits on it (the kernel's
/// own IPv6 neighbour discovery, a few at most), not in every round as
/// it reads a port it cannot watch.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn many_taps_are_read_when_ready() {
    let Some(_g) = live() else { return };
    let bed = Bed::new().expect("namespaces");
    let n = 40;
    let calls: Vec<Arc<AtomicU64>> = (0..n).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let case = Case {
        ports: n,
        ..Case::default()
    };
    let r = run_case(&bed, bed.taps_and_idle(n - 2, &calls), case);
    r.assert_forwarded("40 TAPs");
    let calls: Vec<u64> = calls.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    eprintln!("receive calls by port: {calls:?}");
    // The sender's port was read (at most a batch per call).
    assert!(
        calls[0] >= N / pipelab_io::runner::RX_BATCH as u64,
        "{calls:?}"
    );
    let idle = calls[2..].iter().max().copied().unwrap_or(0);
    assert!(idle <= 16, "an idle port read {idle} times: {calls:?}");
}

/// TAPs with virtio-net headers and offloads (what `pipelab shell` opens
/// by default): frames that fit a small buffer are still read into and
/// written from it, with no copy in user space.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn offloaded_taps_forward_without_a_copy() {
    let Some(_g) = live() else { return };
    let bed = Bed::new().expect("namespaces");
    let r = run(&bed, bed.taps_with(Tap::create_offloaded));
    r.assert_forwarded("TAP with offloads");
    assert_eq!(r.copies, 0, "TAP copies");
}

/// AF_PACKET with virtio-net headers (the bridge's default): still one
/// copy per forwarded frame, the header read from the slot and written
/// before the frame in the transmit slot.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn offloaded_af_packet_copies_each_forwarded_frame_once() {
    let Some(_g) = live() else { return };
    let bed = Bed::new().expect("namespaces");
    bed.veths();
    let r = run(&bed, bed.open(AfPacket::open_offloaded));
    r.assert_forwarded("AF_PACKET with offloads");
    // As without offloads (see above): one per frame, plus the last of
    // each receive batch.
    let (c, d) = (r.copies, r.stats.delivered);
    assert!(c >= d && 2 * c < 3 * d, "{c} copies for {d} frames");
}

/// Frames held longer than the receiving UMEM can lend (a 1 s pipe at
/// 25 kpps holds about 14 000 of them, beyond its receive chunks) are
/// copied into the pool at reception instead, and their chunks returned
/// at once: all still arrive, at two copies each for those.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn af_xdp_copies_into_the_pool_when_its_chunks_run_short() {
    let Some(_g) = live() else { return };
    let bed = Bed::new().expect("namespaces");
    bed.veths();
    let n = 15_000;
    let case = Case {
        n,
        delay_ms: 1000,
        ..Case::default()
    };
    let r = run_case(&bed, bed.open(AfXdp::open), case);
    let s = &r.stats;
    eprintln!(
        "AF_XDP, 1 s pipe: {} of {n} intact; delivered {}, copies {}",
        r.intact, s.delivered, r.copies
    );
    assert_eq!(r.intact, n, "{s:?}");
    assert_eq!(s.received, s.delivered, "{s:?}");
    // Some were spilled (two copies), the others lent (one).
    assert!(r.copies > s.delivered, "{s:?}, {} copies", r.copies);
    assert!(r.copies < 2 * s.delivered, "{s:?}, {} copies", r.copies);
}

/// At the memory cap, frames lent without a copy are refused and handed
/// back (AF_XDP: to the fill ring), counted as `dropped_memory`, and the
/// accounting holds; the frames held (as many as the cap allows) arrive
/// intact after their delay.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn af_xdp_at_the_memory_cap_drops_and_counts() {
    let Some(_g) = live() else { return };
    let bed = Bed::new().expect("namespaces");
    bed.veths();
    let case = Case {
        n: 600,
        delay_ms: 300,
        mem_cap: 100 * pipelab_io::buffers::BUF_SIZE as u64,
        burst: 600,
        ..Case::default()
    };
    let r = run_case(&bed, bed.open(AfXdp::open), case);
    let s = &r.stats;
    eprintln!(
        "AF_XDP at the cap: {} of 600 intact; {s:?}, copies {}",
        r.intact, r.copies
    );
    assert!(s.dropped_memory > 0, "{s:?}");
    assert_eq!(s.received, s.delivered + s.dropped_memory, "{s:?}");
    assert!(r.intact > 0 && r.intact <= 100, "{} intact", r.intact);
    assert!(r.copies <= s.delivered, "{s:?}, {} copies", r.copies);
}
