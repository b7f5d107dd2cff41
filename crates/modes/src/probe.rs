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
//! Wire format (big-endian): `"PLPB"`, kind (0 data, 1 fin, 2 report),
//! run id u32, sequence u64, send time u64 ns; a report carries JSON after
//! the header. `size` is the IP packet length (IP + UDP headers included).

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

/// One datagram with its kernel receive timestamp (ns, CLOCK_REALTIME).
fn recv_stamped(sock: &UdpSocket, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, u64)> {
    let mut iov = [IoSliceMut::new(buf)];
    let mut cmsg = nix::cmsg_space!(TimeSpec);
    let msg = recvmsg::<SockaddrStorage>(
        sock.as_raw_fd(),
        &mut iov,
        Some(&mut cmsg),
        MsgFlags::empty(),
    )
    .map_err(io::Error::from)?;
    let mut stamp = None;
    for c in msg.cmsgs().map_err(io::Error::from)? {
        if let ControlMessageOwned::ScmTimestampns(ts) = c {
            stamp = Some(ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64);
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
    Ok((msg.bytes, from, stamp.unwrap_or_else(realtime_ns)))
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
        }
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
            let f = std::fs::File::create(p)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
            let mut w = io::BufWriter::new(f);
            writeln!(w, "run,seq,sent_unix_ns,received_unix_ns,delay_ms")?;
            Some(w)
        }
        None => None,
    };
    let sock = UdpSocket::bind(listen)?;
    setsockopt(&sock, sockopt::ReceiveTimestampns, &true).map_err(io::Error::from)?;
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
        let (n, from, now) = recv_stamped(&sock, &mut buf)?;
        let Some((kind, run, seq, t)) = parse(&buf[..n]) else {
            continue;
        };
        match kind {
            DATA => {
                if runs.len() > 1024 && !runs.contains_key(&run) {
                    runs.clear();
                }
                runs.entry(run).or_insert_with(RunState::new).record(
                    seq,
                    t,
                    now,
                    n as u64 + IP_UDP_HEADERS as u64,
                );
                if let Some(w) = series.as_mut() {
                    let d = now.saturating_sub(t) as f64 / 1e6;
                    writeln!(w, "{run},{seq},{t},{now},{d:.6}")?;
                }
            }
            FIN => {
                if let Some(w) = series.as_mut() {
                    w.flush()?;
                }
                let report = runs
                    .get(&run)
                    .map(|r| r.report(seq))
                    .unwrap_or(ProbeReport {
                        sent: seq,
                        lost: seq,
                        ..ProbeReport::default()
                    });
                let json = serde_json::to_vec(&report).map_err(io::Error::other)?;
                let mut out = vec![0u8; HEADER];
                header(REPORT, run, 0, 0, &mut out);
                out.extend_from_slice(&json);
                sock.send_to(&out, from)?;
                if once {
                    return Ok(());
                }
            }
            _ => {}
        }
    }
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
    if opts.size < MIN_SIZE || opts.size > 65535 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "size {}B: a probe packet is {MIN_SIZE} to 65535 bytes",
                opts.size
            ),
        ));
    }
    if !(opts.rate_pps > 0.0 && opts.rate_pps.is_finite()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "rate must be positive",
        ));
    }
    // Nothing to send would end in "no report" after the receiver's
    // wait: refused now, with what would make it send.
    if (opts.duration.as_secs_f64() * opts.rate_pps).round() < 1.0 {
        let ns = |d: f64| pipelab_engine::Duration::from_nanos(d.min(u64::MAX as f64) as u64);
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a duration of {} at {} packets/s sends no packet: give at least {} (one packet)",
                ns(opts.duration.as_nanos() as f64),
                opts.rate_pps,
                ns((0.5e9 / opts.rate_pps).ceil())
            ),
        ));
    }
    let bind: SocketAddr = if to.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }
        .parse()
        .map_err(io::Error::other)?;
    let sock = UdpSocket::bind(bind)?;
    sock.connect(to)?;
    let run = (realtime_ns() as u32) ^ std::process::id().rotate_left(16);
    let burst = u64::from(burst.clamp(1, 1024));
    let mut bufs = vec![vec![0u8; (opts.size - IP_UDP_HEADERS) as usize]; burst as usize];
    let interval = 1e9 / opts.rate_pps;
    // Exact wake-ups (default timer slack is 50 µs); sleeping rather than
    // spinning leaves the CPU to the emulator. Each packet is stamped when
    // it is sent, so pacing jitter never biases the measured delay.
    let _ = nix::sys::prctl::set_timerslack(1);
    let start = realtime_ns();
    let count = (opts.duration.as_secs_f64() * opts.rate_pps).round() as u64;
    let mut seq = 0;
    while seq < count {
        let due = start + (seq as f64 * interval) as u64;
        let now = realtime_ns();
        if due > now {
            std::thread::sleep(StdDuration::from_nanos(due - now));
        }
        let n = burst.min(count - seq);
        let t = realtime_ns();
        for (k, b) in bufs.iter_mut().take(n as usize).enumerate() {
            header(DATA, run, seq + k as u64, t, b);
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
    let elapsed_ns = realtime_ns().saturating_sub(start).max(1);
    // The first group leaves at `start`; the rate is over the intervals
    // the schedule spans, `count` packets in `count` intervals at the
    // asked rate when the sender keeps up.
    let offered_pps = count as f64 * 1e9 / (elapsed_ns as f64).max(count as f64 * interval);
    sock.set_read_timeout(Some(StdDuration::from_millis(200)))?;
    let mut fin = vec![0u8; HEADER];
    header(FIN, run, count, realtime_ns(), &mut fin);
    let mut reply = vec![0u8; 65536];
    for _ in 0..50 {
        sock.send(&fin)?;
        match sock.recv(&mut reply) {
            Ok(n) => {
                if let Some((REPORT, r, _, _)) = parse(&reply[..n]) {
                    if r == run {
                        let mut report: ProbeReport =
                            serde_json::from_slice(&reply[HEADER..n]).map_err(io::Error::other)?;
                        report.asked_pps = opts.rate_pps;
                        report.offered_pps = offered_pps;
                        return Ok(report);
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

    /// A receiver on loopback, and one run sent to it.
    fn run_on_loopback(rate_pps: f64, ms: u64, burst: u32) -> ProbeReport {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let addr = sock.local_addr().expect("addr");
        drop(sock);
        let rx = std::thread::spawn(move || receive(addr, true, None));
        std::thread::sleep(StdDuration::from_millis(100));
        let opts = SendOptions {
            rate_pps,
            size: 100,
            duration: StdDuration::from_millis(ms),
        };
        let r = send_burst(addr, opts, burst).expect("report");
        rx.join().expect("receiver").expect("receiver ok");
        r
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
