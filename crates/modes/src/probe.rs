//! The probe: timestamped UDP test traffic and a report of what it met
//! (the role of the AX/4000 analyser in the NetEm/Dummynet comparison).
//!
//! `send` emits packets carrying a run id, a sequence number and the
//! `CLOCK_MONOTONIC` send time; `recv` timestamps them on arrival. Sender and
//! receiver run on one host, in any namespaces, and read one clock, so
//! one-way delay is exact. At the end the sender sends FIN (with the
//! count it sent) until the receiver answers with its report.
//!
//! Timestamps are `CLOCK_REALTIME` nanoseconds: the sender reads the clock
//! just before `send`, and the receiver takes the kernel's receive
//! timestamp of each datagram (`SO_TIMESTAMPNS`, stamped when the packet
//! reaches the socket), so the receiving process's scheduling latency is
//! not counted as network delay. Both ends read the same host clock.
//!
//! Several sending threads (`--threads N`) are N flows: each its own
//! socket (so its own source port), its own run id (the first flow's plus
//! its index) and its own sequence numbers, so the receiver checks order
//! per flow. Each flow ends with a member FIN, answered with its own
//! report; then the sender asks for the group (the first run id and the
//! number of flows) and the receiver answers with one report of all the
//! flows' packets together (exact sums, delays over every packet).
//!
//! Wire format (big-endian): `"PLPB"`, kind (0 data, 1 fin, 2 report,
//! 3 member fin, 4 group request, 5 group report), run id u32, sequence
//! u64 (a FIN's: the count sent; a group request's: the number of flows),
//! send time u64 ns (a group request's: the count sent by all flows); a
//! report carries JSON after the header. `size` is the IP packet length
//! (IP + UDP headers included).

use nix::sys::socket::{
    recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags, SockaddrStorage,
};
use nix::sys::time::TimeSpec;
use std::io::IoSliceMut;
use std::os::fd::AsRawFd;

/// `CLOCK_REALTIME` now, ns (the clock of `SO_TIMESTAMPNS`).
fn realtime_ns() -> u64 {
    match nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME) {
        Ok(ts) => ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64,
        Err(_) => 0,
    }
}

/// One datagram with its kernel receive timestamp (ns, CLOCK_REALTIME)
/// and, when the kernel sent it, the socket's count of datagrams dropped
/// so far for want of buffer space (`SO_RXQ_OVFL`).
fn recv_stamped(
    sock: &UdpSocket,
    buf: &mut [u8],
) -> io::Result<(usize, SocketAddr, u64, Option<u32>)> {
    let mut iov = [IoSliceMut::new(buf)];
    let mut cmsg = nix::cmsg_space!(TimeSpec, u32);
    let msg = recvmsg::<SockaddrStorage>(
        sock.as_raw_fd(),
        &mut iov,
        Some(&mut cmsg),
        MsgFlags::empty(),
    )
    .map_err(io::Error::from)?;
    let (mut stamp, mut dropped) = (None, None);
    for c in msg.cmsgs().map_err(io::Error::from)? {
        match c {
            ControlMessageOwned::ScmTimestampns(ts) => {
                stamp = Some(ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64);
            }
            ControlMessageOwned::RxqOvfl(n) => dropped = Some(n),
            _ => {}
        }
    }
    let from = msg
        .address
        .and_then(|a| {
            a.as_sockaddr_in()
                .map(|v4| SocketAddr::from(std::net::SocketAddrV4::from(*v4)))
                .or_else(|| {
                    a.as_sockaddr_in6()
                        .map(|v6| SocketAddr::from(std::net::SocketAddrV6::from(*v6)))
                })
        })
        .ok_or_else(|| io::Error::other("datagram without a source address"))?;
    Ok((msg.bytes, from, stamp.unwrap_or_else(realtime_ns), dropped))
}
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration as StdDuration;

const MAGIC: &[u8; 4] = b"PLPB";
const HEADER: usize = 4 + 1 + 4 + 8 + 8;
/// IPv4 + UDP headers.
pub const IP_UDP_HEADERS: u32 = 28;
/// The smallest probe packet (headers plus the probe header).
pub const MIN_SIZE: u32 = IP_UDP_HEADERS + HEADER as u32;

const DATA: u8 = 0;
const FIN: u8 = 1;
const REPORT: u8 = 2;
const MEMBER_FIN: u8 = 3;
const GROUP: u8 = 4;
const GROUP_REPORT: u8 = 5;

/// The most sending threads `send_threads` takes.
pub const MAX_THREADS: u32 = 64;

/// What the receiver measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// Packets sent (from the FIN).
    pub sent: u64,
    /// Distinct packets received.
    pub received: u64,
    /// `sent − received`.
    pub lost: u64,
    /// Extra copies received.
    pub duplicated: u64,
    /// Packets that arrived after one sent later.
    pub reordered: u64,
    /// One-way delay, ms.
    pub delay_ms: Option<DelaySummary>,
    /// Received bits per second of IP packets, first to last arrival.
    pub throughput_bps: f64,
    /// The rate the sender asked for, packets per second (filled in by
    /// the sender; 0 in a receiver's own report).
    #[serde(default)]
    pub asked_pps: f64,
    /// The rate the sender really offered: packets sent over the time from
    /// its first send to the end of its last (filled in by the sender). A
    /// sender that cannot keep up with `asked_pps` stretches the run, and
    /// this is lower: a loss-free run at a rate the sender never reached
    /// says nothing about the path at that rate.
    #[serde(default)]
    pub offered_pps: f64,
    /// Delay histogram: (upper bound ms, count), 20 equal bins min..max.
    pub histogram: Vec<(f64, u64)>,
    /// Datagrams the receiving socket dropped while the run's packets
    /// arrived, for want of buffer space (`SO_RXQ_OVFL`): lost at the
    /// receiver, which could not keep up, not on the path. Counted for
    /// the socket, so runs at once share their drops.
    #[serde(default)]
    pub receiver_dropped: u64,
    /// With several sending threads, each thread's own report (its flow:
    /// its socket, source port and sequence numbers); the fields above
    /// are then for all of them together.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ProbeReport>,
}

/// One-way delay summary, ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DelaySummary {
    /// Smallest.
    pub min: f64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
    /// Standard deviation.
    pub stddev: f64,
}

fn header(kind: u8, run: u32, seq: u64, t: u64, buf: &mut [u8]) {
    buf[..4].copy_from_slice(MAGIC);
    buf[4] = kind;
    buf[5..9].copy_from_slice(&run.to_be_bytes());
    buf[9..17].copy_from_slice(&seq.to_be_bytes());
    buf[17..25].copy_from_slice(&t.to_be_bytes());
}

fn parse(buf: &[u8]) -> Option<(u8, u32, u64, u64)> {
    if buf.len() < HEADER || &buf[..4] != MAGIC {
        return None;
    }
    let run = u32::from_be_bytes(buf[5..9].try_into().ok()?);
    let seq = u64::from_be_bytes(buf[9..17].try_into().ok()?);
    let t = u64::from_be_bytes(buf[17..25].try_into().ok()?);
    Some((buf[4], run, seq, t))
}

/// Per-run state of the receiver.
struct RunState {
    seen: Vec<u64>,
    max_seq: Option<u64>,
    received: u64,
    duplicated: u64,
    reordered: u64,
    hist: Histogram<u64>,
    delays: Vec<u64>,
    sum: u128,
    sum_sq: u128,
    bytes: u64,
    first: u64,
    last: u64,
    first_len: u64,
    /// The socket's drop count at the run's first and latest packets.
    drops_first: Option<u32>,
    drops_last: Option<u32>,
}

impl RunState {
    fn new() -> RunState {
        RunState {
            seen: Vec::new(),
            max_seq: None,
            received: 0,
            duplicated: 0,
            reordered: 0,
            hist: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .unwrap_or_else(|_| std::process::abort()),
            delays: Vec::new(),
            sum: 0,
            sum_sq: 0,
            bytes: 0,
            first: 0,
            last: 0,
            first_len: 0,
            drops_first: None,
            drops_last: None,
        }
    }

    /// The socket's drop count (`SO_RXQ_OVFL`) stamped on a packet of
    /// the run when it was queued. The kernel leaves it out while the
    /// count is zero.
    fn note_drops(&mut self, count: Option<u32>) {
        let c = count.unwrap_or(0);
        if self.drops_first.is_none() {
            self.drops_first = Some(c);
        }
        self.drops_last = Some(c);
    }

    /// Take in `other`'s packets: the state of the flows together. Each
    /// flow's order was checked against its own sequence numbers, so
    /// duplicates and reorderings add up.
    fn absorb(&mut self, other: &RunState) {
        if other.received == 0 {
            return;
        }
        if self.received == 0 || other.first < self.first {
            self.first = other.first;
            self.first_len = other.first_len;
        }
        self.last = self.last.max(other.last);
        self.received += other.received;
        self.duplicated += other.duplicated;
        self.reordered += other.reordered;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.bytes += other.bytes;
        let _ = self.hist.add(&other.hist);
        self.delays.extend_from_slice(&other.delays);
        self.drops_first = match (self.drops_first, other.drops_first) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.drops_last = self.drops_last.max(other.drops_last);
    }

    fn record(&mut self, seq: u64, sent_ns: u64, now: u64, ip_len: u64) {
        let (w, b) = ((seq / 64) as usize, seq % 64);
        if w >= self.seen.len() {
            if w > 1 << 26 {
                return; // absurd sequence number: ignore rather than grow
            }
            self.seen.resize(w + 1, 0);
        }
        if self.seen[w] & (1 << b) != 0 {
            self.duplicated += 1;
            return;
        }
        self.seen[w] |= 1 << b;
        if self.max_seq.is_some_and(|m| seq < m) {
            self.reordered += 1;
        }
        self.max_seq = Some(self.max_seq.map_or(seq, |m| m.max(seq)));
        let d = now.saturating_sub(sent_ns);
        self.received += 1;
        self.sum += d as u128;
        self.sum_sq += d as u128 * d as u128;
        self.hist.saturating_record(d.max(1));
        self.delays.push(d);
        if self.received == 1 {
            self.first = now;
            self.first_len = ip_len;
        }
        self.last = now;
        self.bytes += ip_len;
    }

    fn report(&self, sent: u64) -> ProbeReport {
        let n = self.received;
        let delay_ms = (n > 0).then(|| {
            let mean = self.sum as f64 / n as f64;
            let var = (n as u128 * self.sum_sq).saturating_sub(self.sum * self.sum) as f64
                / (n as f64 * n as f64);
            let (lo, hi) = (self.hist.min(), self.hist.max());
            let q = |p: f64| self.hist.value_at_quantile(p).clamp(lo, hi) as f64 / 1e6;
            DelaySummary {
                min: *self.delays.iter().min().unwrap_or(&0) as f64 / 1e6,
                mean: mean / 1e6,
                p50: q(0.5),
                p99: q(0.99),
                p999: q(0.999),
                max: *self.delays.iter().max().unwrap_or(&0) as f64 / 1e6,
                stddev: var.sqrt() / 1e6,
            }
        });
        let mut histogram = Vec::new();
        if let Some(d) = delay_ms {
            let (lo, hi) = (d.min, d.max);
            let w = ((hi - lo) / 20.0).max(1e-6);
            let mut bins = [0u64; 20];
            for &x in &self.delays {
                let i = (((x as f64 / 1e6 - lo) / w) as usize).min(19);
                bins[i] += 1;
            }
            histogram = bins
                .iter()
                .enumerate()
                .map(|(i, &c)| (lo + w * (i + 1) as f64, c))
                .collect();
        }
        let throughput_bps = if self.last > self.first {
            (self.bytes - self.first_len) as f64 * 8.0 * 1e9 / (self.last - self.first) as f64
        } else {
            0.0
        };
        let receiver_dropped = match (self.drops_first, self.drops_last) {
            (Some(a), Some(b)) => u64::from(b.wrapping_sub(a)),
            _ => 0,
        };
        ProbeReport {
            sent,
            received: n,
            lost: sent.saturating_sub(n),
            duplicated: self.duplicated,
            reordered: self.reordered,
            delay_ms,
            throughput_bps,
            asked_pps: 0.0,
            offered_pps: 0.0,
            histogram,
            receiver_dropped,
            threads: Vec::new(),
        }
    }
}

/// Receive probe traffic on `listen` forever (or until one report was sent,
/// with `once`). Answers each FIN with the run's report. With `series`,
/// every data packet is also written to that file as a CSV line `run,
/// seq, sent_unix_ns, received_unix_ns, delay_ms` (the packet-by-packet
/// delay over time, e.g. across a reconfiguration).
pub fn receive(listen: SocketAddr, once: bool, series: Option<&std::path::Path>) -> io::Result<()> {
    use std::io::Write;
    let mut series = match series {
        Some(p) => {
            let f = pipelab_lang::output::create_output(p)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
            let mut w = io::BufWriter::new(f);
            writeln!(w, "run,seq,sent_unix_ns,received_unix_ns,delay_ms")?;
            Some(w)
        }
        None => None,
    };
    let sock = UdpSocket::bind(listen)?;
    setsockopt(&sock, sockopt::ReceiveTimestampns, &true).map_err(io::Error::from)?;
    // The socket's drop count on each datagram: a receiver that falls
    // behind says so (`receiver_dropped`) rather than charging the path.
    let _ = setsockopt(&sock, sockopt::RxqOvfl, &1);
    // A deep receive buffer (32 MiB as root, else what the system allows),
    // so that a receiver the scheduler holds back for a few milliseconds
    // does not turn into losses charged to the path under test.
    if setsockopt(&sock, sockopt::RcvBufForce, &(32 << 20)).is_err() {
        let _ = setsockopt(&sock, sockopt::RcvBuf, &(32 << 20));
    }
    eprintln!("pipelab probe: listening on {}", sock.local_addr()?);
    let mut runs: HashMap<u32, RunState> = HashMap::new();
    let mut buf = vec![0u8; 65536];
    loop {
        let (n, from, now, drops) = recv_stamped(&sock, &mut buf)?;
        let Some((kind, run, seq, t)) = parse(&buf[..n]) else {
            continue;
        };
        let (reply_kind, report) = match kind {
            DATA => {
                if runs.len() > 1024 && !runs.contains_key(&run) {
                    runs.clear();
                }
                let state = runs.entry(run).or_insert_with(RunState::new);
                state.record(seq, t, now, n as u64 + IP_UDP_HEADERS as u64);
                state.note_drops(drops);
                if let Some(w) = series.as_mut() {
                    let d = now.saturating_sub(t) as f64 / 1e6;
                    writeln!(w, "{run},{seq},{t},{now},{d:.6}")?;
                }
                continue;
            }
            FIN | MEMBER_FIN => (REPORT, run_report(runs.get(&run), seq)),
            GROUP => (GROUP_REPORT, group_report(&runs, run, seq, t)),
            _ => continue,
        };
        if let Some(w) = series.as_mut() {
            w.flush()?;
        }
        let json = serde_json::to_vec(&report).map_err(io::Error::other)?;
        let mut out = vec![0u8; HEADER];
        header(reply_kind, run, 0, 0, &mut out);
        out.extend_from_slice(&json);
        sock.send_to(&out, from)?;
        // A member's FIN is one flow of several: the sender's run ends
        // with its group request.
        if once && kind != MEMBER_FIN {
            return Ok(());
        }
    }
}

/// The report of one run (`sent` from its FIN); a run none of whose
/// packets arrived lost them all.
fn run_report(state: Option<&RunState>, sent: u64) -> ProbeReport {
    state.map(|r| r.report(sent)).unwrap_or(ProbeReport {
        sent,
        lost: sent,
        ..ProbeReport::default()
    })
}

/// The report of a group: the `flows` runs from `first` on (run ids
/// `first`, `first + 1`, …), their packets together, `sent` by all.
fn group_report(runs: &HashMap<u32, RunState>, first: u32, flows: u64, sent: u64) -> ProbeReport {
    let mut all = RunState::new();
    for i in 0..flows.min(u64::from(MAX_THREADS)) {
        if let Some(r) = runs.get(&first.wrapping_add(i as u32)) {
            all.absorb(r);
        }
    }
    all.report(sent)
}

/// Sending parameters.
#[derive(Clone, Copy, Debug)]
pub struct SendOptions {
    /// Packets per second.
    pub rate_pps: f64,
    /// IP packet size, bytes (at least [`MIN_SIZE`]).
    pub size: u32,
    /// How long to send.
    pub duration: StdDuration,
}

/// Send probe traffic to `to` and return the receiver's report.
pub fn send(to: SocketAddr, opts: SendOptions) -> io::Result<ProbeReport> {
    send_burst(to, opts, 1)
}

/// [`send`], `burst` packets at a time with one `sendmmsg` call (for rates
/// beyond what a system call per packet reaches): the average rate is the
/// same, packets leave in back-to-back groups of `burst`, each stamped
/// with the time of its group's call.
pub fn send_burst(to: SocketAddr, opts: SendOptions, burst: u32) -> io::Result<ProbeReport> {
    send_threads(to, opts, burst, 1)
}

/// The packets of a run shared by `threads` flows: each its share, the
/// first `count % threads` one more.
pub fn split_count(count: u64, threads: u32) -> Vec<u64> {
    let n = u64::from(threads.max(1));
    (0..n)
        .map(|i| count / n + u64::from(i < count % n))
        .collect()
}

/// The rate a sender offered: `count` packets over the `span_ns` the
/// sending took, and never more than the schedule's rate (`count`
/// intervals of `interval_ns`: a sender that keeps up sends the last
/// group an interval before the schedule's end).
pub fn offered_pps(count: u64, span_ns: u64, interval_ns: f64) -> f64 {
    count as f64 * 1e9 / (span_ns.max(1) as f64).max(count as f64 * interval_ns)
}

/// One sending thread's flow.
#[derive(Clone, Copy, Debug)]
struct Flow {
    run: u32,
    count: u64,
    /// Between two of its packets, ns.
    interval: f64,
    /// When its first group leaves (CLOCK_REALTIME ns).
    start: u64,
}

/// The packets [`send_threads`] sends with `opts` from `threads`
/// threads, or why it refuses them (a size, rate or number of threads
/// out of range, or a run that would send no packet, or fewer than one
/// a thread): a caller can refuse before anything is made.
pub fn send_count(opts: &SendOptions, threads: u32) -> Result<u64, String> {
    if opts.size < MIN_SIZE || opts.size > 65535 {
        return Err(format!(
            "size {}B: a probe packet is {MIN_SIZE} to 65535 bytes",
            opts.size
        ));
    }
    if !(opts.rate_pps > 0.0 && opts.rate_pps.is_finite()) {
        return Err("rate must be positive".into());
    }
    if !(1..=MAX_THREADS).contains(&threads) {
        return Err(format!(
            "threads {threads}: 1 to {MAX_THREADS} sending threads"
        ));
    }
    // Nothing to send would end in "no report" after the receiver's
    // wait: refused now, with what would make it send.
    let ns = |d: f64| pipelab_engine::Duration::from_nanos(d.min(u64::MAX as f64) as u64);
    let count = (opts.duration.as_secs_f64() * opts.rate_pps).round();
    if count < 1.0 {
        return Err(format!(
            "a duration of {} at {} packets/s sends no packet: give at least {} (one packet)",
            ns(opts.duration.as_nanos() as f64),
            opts.rate_pps,
            ns((0.5e9 / opts.rate_pps).ceil())
        ));
    }
    if count < f64::from(threads) {
        return Err(format!(
            "a duration of {} at {} packets/s sends {count} packets, fewer than the {threads} \
                 sending threads: give at least {} (one packet a thread), or fewer threads",
            ns(opts.duration.as_nanos() as f64),
            opts.rate_pps,
            ns(((f64::from(threads) - 0.5) * 1e9 / opts.rate_pps).ceil())
        ));
    }
    Ok(count as u64)
}

/// [`send_burst`] from `threads` sending threads, each its own socket
/// (its own source port: its own flow, whose order the receiver checks
/// apart), its own run id and `1/threads` of the rate, paced as one
/// sender would be; their groups interleave evenly. The report is the
/// receiver's for all the flows' packets together, with the rates asked
/// and offered by all, and each thread's own report in
/// [`ProbeReport::threads`] (none with one thread). For rates one thread
/// cannot offer: a path that forwards inside the sender's own system
/// call (the kernel's bridge) is otherwise bound by one CPU's sender.
pub fn send_threads(
    to: SocketAddr,
    opts: SendOptions,
    burst: u32,
    threads: u32,
) -> io::Result<ProbeReport> {
    let count =
        send_count(&opts, threads).map_err(|m| io::Error::new(io::ErrorKind::InvalidInput, m))?;
    let bind: SocketAddr = if to.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }
        .parse()
        .map_err(io::Error::other)?;
    let socks = (0..threads)
        .map(|_| {
            let sock = UdpSocket::bind(bind)?;
            sock.connect(to)?;
            sock.set_read_timeout(Some(StdDuration::from_millis(200)))?;
            Ok(sock)
        })
        .collect::<io::Result<Vec<_>>>()?;
    let base = (realtime_ns() as u32) ^ std::process::id().rotate_left(16);
    let burst = u64::from(burst.clamp(1, 1024));
    // Between two packets of the whole run, ns.
    let interval = 1e9 / opts.rate_pps;
    let start = realtime_ns();
    let flows: Vec<Flow> = split_count(count, threads)
        .into_iter()
        .enumerate()
        .map(|(i, n)| Flow {
            run: base.wrapping_add(i as u32),
            count: n,
            interval: interval * f64::from(threads),
            // Thread i's groups leave i groups after thread 0's.
            start: start + (i as f64 * burst as f64 * interval) as u64,
        })
        .collect();
    let fin = if threads == 1 { FIN } else { MEMBER_FIN };
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = flows
            .iter()
            .zip(&socks)
            .map(|(&flow, sock)| {
                s.spawn(move || -> io::Result<(ProbeReport, u64)> {
                    let end = send_flow(sock, flow, opts.size, burst);
                    let mut report =
                        ask(sock, to, (fin, flow.run, flow.count, realtime_ns()), REPORT)?;
                    report.asked_pps = opts.rate_pps / f64::from(threads);
                    report.offered_pps =
                        offered_pps(flow.count, end.saturating_sub(flow.start), flow.interval);
                    Ok((report, end))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("a sending thread failed")))
            })
            .collect::<io::Result<Vec<_>>>()
    })?;
    let end = results.iter().map(|r| r.1).max().unwrap_or(start);
    let mut reports: Vec<ProbeReport> = results.into_iter().map(|r| r.0).collect();
    let mut report = if threads == 1 {
        reports.pop().unwrap_or_default()
    } else {
        let mut all = ask(
            &socks[0],
            to,
            (GROUP, base, u64::from(threads), count),
            GROUP_REPORT,
        )?;
        all.threads = reports;
        all
    };
    report.asked_pps = opts.rate_pps;
    report.offered_pps = offered_pps(count, end.saturating_sub(start), interval);
    Ok(report)
}

/// Send one flow's packets on its schedule; returns when the sending
/// ended (CLOCK_REALTIME ns).
fn send_flow(sock: &UdpSocket, flow: Flow, size: u32, burst: u64) -> u64 {
    let mut bufs = vec![vec![0u8; (size - IP_UDP_HEADERS) as usize]; burst as usize];
    // Exact wake-ups (default timer slack is 50 µs, and it is per
    // thread); sleeping rather than spinning leaves the CPU to the
    // emulator. Each packet is stamped when it is sent, so pacing jitter
    // never biases the measured delay.
    let _ = nix::sys::prctl::set_timerslack(1);
    let mut seq = 0;
    while seq < flow.count {
        let due = flow.start + (seq as f64 * flow.interval) as u64;
        let now = realtime_ns();
        if due > now {
            std::thread::sleep(StdDuration::from_nanos(due - now));
        }
        let n = burst.min(flow.count - seq);
        let t = realtime_ns();
        for (k, b) in bufs.iter_mut().take(n as usize).enumerate() {
            header(DATA, flow.run, seq + k as u64, t, b);
        }
        // A full socket buffer or an unreachable port is a lost packet.
        if n == 1 {
            let _ = sock.send(&bufs[0]);
        } else {
            let iov: Vec<[std::io::IoSlice<'_>; 1]> = bufs
                .iter()
                .take(n as usize)
                .map(|b| [std::io::IoSlice::new(b)])
                .collect();
            let mut hdrs =
                nix::sys::socket::MultiHeaders::<SockaddrStorage>::preallocate(n as usize, None);
            let addrs: Vec<Option<SockaddrStorage>> = vec![None; n as usize];
            let none: [nix::sys::socket::ControlMessage<'_>; 0] = [];
            let _ = nix::sys::socket::sendmmsg(
                sock.as_raw_fd(),
                &mut hdrs,
                &iov,
                &addrs,
                none,
                MsgFlags::empty(),
            );
        }
        seq += n;
    }
    realtime_ns()
}

/// Send the request `(kind, run, seq, t)` every 200 ms until the receiver
/// answers with a report of kind `reply` for `run` (at most 50 times).
fn ask(
    sock: &UdpSocket,
    to: SocketAddr,
    (kind, run, seq, t): (u8, u32, u64, u64),
    reply: u8,
) -> io::Result<ProbeReport> {
    let mut request = vec![0u8; HEADER];
    header(kind, run, seq, t, &mut request);
    let mut answer = vec![0u8; 65536];
    for _ in 0..50 {
        sock.send(&request)?;
        match sock.recv(&mut answer) {
            Ok(n) => {
                if let Some((k, r, _, _)) = parse(&answer[..n]) {
                    if k == reply && r == run {
                        return serde_json::from_slice(&answer[HEADER..n])
                            .map_err(io::Error::other);
                    }
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::TimedOut,
        format!("no report from the receiver at {to}"),
    ))
}

impl ProbeReport {
    /// A human-readable report.
    pub fn to_table(&self) -> String {
        let mut s = format!(
            "sent {}  received {}  lost {} ({:.3}%)  duplicated {}  reordered {}\n",
            self.sent,
            self.received,
            self.lost,
            if self.sent > 0 {
                100.0 * self.lost as f64 / self.sent as f64
            } else {
                0.0
            },
            self.duplicated,
            self.reordered
        );
        if let Some(d) = self.delay_ms {
            s.push_str(&format!(
                "one-way delay ms: min {:.3}  mean {:.3}  p50 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}  stddev {:.3}\n",
                d.min, d.mean, d.p50, d.p99, d.p999, d.max, d.stddev
            ));
            let peak = self.histogram.iter().map(|h| h.1).max().unwrap_or(1).max(1);
            for (ub, c) in &self.histogram {
                s.push_str(&format!(
                    "  <= {ub:>10.3} ms {c:>8} {}\n",
                    "#".repeat((40 * c / peak) as usize)
                ));
            }
        }
        s.push_str(&format!(
            "throughput {:.3} Mbit/s\n",
            self.throughput_bps / 1e6
        ));
        if let Some(w) = self.receiver_behind() {
            s.push_str(&w);
            s.push('\n');
        }
        for (i, t) in self.threads.iter().enumerate() {
            s.push_str(&format!(
                "thread {i}: sent {}  received {}  lost {}  duplicated {}  reordered {}  offered {:.0} packets/s of {:.0} asked\n",
                t.sent, t.received, t.lost, t.duplicated, t.reordered, t.offered_pps, t.asked_pps
            ));
        }
        if self.asked_pps > 0.0 {
            s.push_str(&format!(
                "offered {:.0} packets/s of {:.0} asked\n",
                self.offered_pps, self.asked_pps
            ));
            if let Some(w) = self.sender_behind() {
                s.push_str(&w);
                s.push('\n');
            }
        }
        s
    }

    /// A warning when the receiving socket dropped datagrams: those
    /// losses are the receiver's, not the path's.
    pub fn receiver_behind(&self) -> Option<String> {
        (self.receiver_dropped > 0).then(|| {
            format!(
                "warning: the receiver fell behind: its socket dropped {} datagrams (buffer full); \
                 those losses are the receiver's, not the path's",
                self.receiver_dropped
            )
        })
    }

    /// A warning when the sender offered less than 98 % of the rate it was
    /// asked for: the run stretched, and its figures are for the lower
    /// rate.
    pub fn sender_behind(&self) -> Option<String> {
        (self.asked_pps > 0.0 && self.offered_pps < 0.98 * self.asked_pps).then(|| {
            format!(
                "warning: the sender fell behind: it offered {:.0} packets/s of the {:.0} asked ({:.0} %); \
                 the figures above are for that rate (use a larger --burst, or a lower --rate)",
                self.offered_pps,
                self.asked_pps,
                100.0 * self.offered_pps / self.asked_pps
            )
        })
    }
}

#[cfg(test)]
mod send_tests {
    use super::*;

    /// `probe send --duration 0s` was accepted and ended in "no report".
    /// A pass proves a run that would send no packet is refused before a
    /// socket is opened, saying the shortest duration that sends one.
    #[test]
    fn a_run_of_no_packet_is_refused() {
        let to: SocketAddr = "127.0.0.1:9".parse().expect("addr");
        for (rate_pps, ms, want) in [
            (1000.0, 0, "a duration of 0ms at 1000 packets/s sends no packet: give at least 500us (one packet)"),
            (1.0, 400, "a duration of 400ms at 1 packets/s sends no packet: give at least 500ms (one packet)"),
        ] {
            let opts = SendOptions {
                rate_pps,
                size: 100,
                duration: StdDuration::from_millis(ms),
            };
            let e = send_burst(to, opts, 1).expect_err("refused");
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
            assert_eq!(e.to_string(), want);
        }
    }

    /// A receiver on loopback (`--once`), and what `send` sent to it.
    pub(super) fn on_loopback(
        send: impl FnOnce(std::net::SocketAddr) -> ProbeReport,
    ) -> ProbeReport {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let addr = sock.local_addr().expect("addr");
        drop(sock);
        let rx = std::thread::spawn(move || receive(addr, true, None));
        std::thread::sleep(StdDuration::from_millis(100));
        let r = send(addr);
        rx.join().expect("receiver").expect("receiver ok");
        r
    }

    /// A receiver on loopback, and one run sent to it.
    fn run_on_loopback(rate_pps: f64, ms: u64, burst: u32) -> ProbeReport {
        let opts = SendOptions {
            rate_pps,
            size: 100,
            duration: StdDuration::from_millis(ms),
        };
        on_loopback(|addr| send_burst(addr, opts, burst).expect("report"))
    }

    /// A loss-free run at a rate the sender never reached was read as the
    /// path's rate (the kernel bridge "forwarded 4000 kpps" from a sender
    /// that offered 270). A pass proves the report says what was offered:
    /// the asked rate when the sender keeps up (within 2 %, no warning),
    /// and less, with a warning, when it is asked for 20 M packets/s one
    /// system call at a time, which no sender reaches.
    #[test]
    fn the_report_says_the_rate_offered() {
        let kept = run_on_loopback(500.0, 400, 1);
        assert_eq!(kept.sent, 200);
        assert_eq!(kept.asked_pps, 500.0);
        assert!(
            (kept.offered_pps - 500.0).abs() <= 10.0,
            "offered {} of 500 asked",
            kept.offered_pps
        );
        assert_eq!(kept.sender_behind(), None);

        let behind = run_on_loopback(20e6, 10, 1);
        assert_eq!(behind.sent, 200_000);
        assert!(
            behind.offered_pps < 0.5 * 20e6,
            "offered {} of 20M asked",
            behind.offered_pps
        );
        let w = behind.sender_behind().expect("a warning");
        assert!(
            w.starts_with("warning: the sender fell behind: it offered "),
            "{w}"
        );
        assert!(behind.to_table().contains(&w), "{}", behind.to_table());
    }
}

#[cfg(test)]
mod thread_tests {
    use super::*;

    /// A pass proves the packets of a run are shared among the threads
    /// with none lost or made up, the shares differing by one at most and
    /// the larger ones first.
    #[test]
    fn the_count_is_split_without_remainder() {
        assert_eq!(split_count(10, 1), vec![10]);
        assert_eq!(split_count(10, 2), vec![5, 5]);
        assert_eq!(split_count(10, 3), vec![4, 3, 3]);
        assert_eq!(split_count(11, 4), vec![3, 3, 3, 2]);
        assert_eq!(split_count(3, 3), vec![1, 1, 1]);
        for (count, threads) in [(4_000_000, 2), (999_999, 7), (64, 64), (65, 64)] {
            let v = split_count(count, threads);
            assert_eq!(v.len(), threads as usize);
            assert_eq!(v.iter().sum::<u64>(), count);
            assert!(v.iter().max().unwrap_or(&0) - v.iter().min().unwrap_or(&0) <= 1);
        }
    }

    /// A pass proves the offered rate is the schedule's when the sending
    /// took no longer than it (1000 packets at 1 ms: 1000 pps, however
    /// fast they left), and the real one when it took longer (2 s: 500).
    #[test]
    fn the_offered_rate_is_never_above_the_schedule() {
        assert_eq!(offered_pps(1000, 999_000_000, 1e6), 1000.0);
        assert_eq!(offered_pps(1000, 1_000, 1e6), 1000.0);
        assert_eq!(offered_pps(1000, 2_000_000_000, 1e6), 500.0);
    }

    /// A flow's packets `(seq, sent, received)`, 100-byte packets.
    fn flow(packets: &[(u64, u64, u64)]) -> RunState {
        let mut r = RunState::new();
        for &(seq, sent, now) in packets {
            r.record(seq, sent, now, 100);
            r.note_drops(None);
        }
        r
    }

    /// Two flows whose sequence numbers interleave in time must not count
    /// as reordered (each flow's order is its own), and the group's delay
    /// figures must be those of all their packets together. A pass proves
    /// the sums (sent, received, lost, duplicated, reordered), the exact
    /// delay summary (min, mean, max, stddev over the four delays 1, 2,
    /// 3 and 6 ms) and the histogram's total.
    #[test]
    fn a_group_report_sums_its_flows() {
        let ms = 1_000_000;
        // Flow A: 0 then 1 (in order), delays 1 and 3 ms. Flow B: 1 before
        // 0 (one reordering) and a duplicate of 1, delays 2 and 6 ms.
        let a = flow(&[(0, 0, ms), (1, ms, 4 * ms)]);
        let b = flow(&[(1, 0, 2 * ms), (1, 0, 2 * ms), (0, 0, 6 * ms)]);
        let mut runs = HashMap::new();
        runs.insert(u32::MAX, a);
        runs.insert(0, b); // run ids wrap
        let r = group_report(&runs, u32::MAX, 2, 5);
        assert_eq!(
            (r.sent, r.received, r.lost, r.duplicated, r.reordered),
            (5, 4, 1, 1, 1)
        );
        let d = r.delay_ms.expect("delays");
        assert_eq!((d.min, d.max), (1.0, 6.0));
        assert!((d.mean - 3.0).abs() < 1e-9, "mean {}", d.mean);
        // Population stddev of 1, 2, 3, 6: sqrt(3.5).
        assert!(
            (d.stddev - 3.5f64.sqrt()).abs() < 1e-6,
            "stddev {}",
            d.stddev
        );
        assert_eq!(r.histogram.iter().map(|h| h.1).sum::<u64>(), 4);
        // 4 packets of 100 bytes from the first arrival (1 ms) to the last
        // (6 ms): 3 counted over 5 ms.
        assert!((r.throughput_bps - 300.0 * 8.0 / 0.005).abs() < 1e-6);
        // A group one of whose flows never arrived lost that flow.
        let r = group_report(&runs, u32::MAX, 3, 8);
        assert_eq!((r.sent, r.received, r.lost), (8, 4, 4));
    }

    /// A pass proves the receiving socket's drops (`SO_RXQ_OVFL`) over a
    /// group are counted once, from the earliest flow's first count to
    /// the latest one: concurrent flows share one socket.
    #[test]
    fn receiver_drops_are_counted_once_for_a_group() {
        let mut a = RunState::new();
        a.record(0, 0, 10, 100);
        a.note_drops(Some(5));
        a.record(1, 0, 20, 100);
        a.note_drops(Some(9));
        let mut b = RunState::new();
        b.record(0, 0, 15, 100);
        b.note_drops(None);
        b.record(1, 0, 25, 100);
        b.note_drops(Some(12));
        assert_eq!(a.report(2).receiver_dropped, 4);
        assert_eq!(b.report(2).receiver_dropped, 12);
        let mut runs = HashMap::new();
        runs.insert(7, a);
        runs.insert(8, b);
        assert_eq!(group_report(&runs, 7, 2, 4).receiver_dropped, 12);
    }

    /// Refused: no thread, more than [`MAX_THREADS`], and fewer packets
    /// than threads; each error says what to give. A pass proves they are
    /// refused before a socket is opened.
    #[test]
    fn bad_thread_counts_are_refused() {
        let to: SocketAddr = "127.0.0.1:9".parse().expect("addr");
        let opts = SendOptions {
            rate_pps: 1000.0,
            size: 100,
            duration: StdDuration::from_millis(2),
        };
        for (threads, want) in [
            (0, "threads 0: 1 to 64 sending threads"),
            (65, "threads 65: 1 to 64 sending threads"),
            (
                3,
                "a duration of 2ms at 1000 packets/s sends 2 packets, fewer than the 3 sending \
                 threads: give at least 2500us (one packet a thread), or fewer threads",
            ),
        ] {
            let e = send_threads(to, opts, 1, threads).expect_err("refused");
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
            assert_eq!(e.to_string(), want);
        }
    }

    /// Two threads to a receiver on loopback: a pass proves the report
    /// covers both flows (each thread sent its half, 400 of 800, and the
    /// receiver got every packet of both, none reordered within a flow),
    /// the sums agree with the threads' own reports, and the asked rate is
    /// shared out (2000 pps: 1000 each).
    #[test]
    fn two_threads_are_two_flows_summed() {
        let opts = SendOptions {
            rate_pps: 2000.0,
            size: 100,
            duration: StdDuration::from_millis(400),
        };
        let r =
            super::send_tests::on_loopback(|addr| send_threads(addr, opts, 4, 2).expect("report"));
        assert_eq!(r.threads.len(), 2);
        assert_eq!((r.sent, r.received, r.lost, r.reordered), (800, 800, 0, 0));
        for t in &r.threads {
            assert_eq!((t.sent, t.received, t.reordered), (400, 400, 0));
            assert_eq!(t.asked_pps, 1000.0);
            assert!(t.offered_pps > 900.0, "offered {}", t.offered_pps);
        }
        assert_eq!(r.asked_pps, 2000.0);
        assert!(
            r.offered_pps > 1800.0 && r.offered_pps <= 2000.0,
            "offered {}",
            r.offered_pps
        );
        assert!(r.delay_ms.is_some());
    }
}
