//! NFQUEUE: this host's own packets, held by the kernel while pipelab
//! decides when to let them go (in-node emulation, planetlab-dummynet §3).
//!
//! nftables rules (installed by host mode, `pipelab_modes::host`) send
//! packets to a netfilter queue. The kernel keeps each queued packet and
//! hands user space a copy with a packet id and metadata; the packet goes
//! on only when user space returns a *verdict* for that id: `NF_ACCEPT`
//! (continue) or `NF_DROP`. [`NfQueue`] is a [`Port`] over one queue:
//!
//! * **receive**: `recvmmsg` fetches up to [`BATCH`] queued packets per
//!   system call; each is lent to the runner as a frame, copied once into
//!   its buffer pool: a synthetic 14-byte Ethernet header (no addresses;
//!   the ethertype the kernel reports) and the IP packet, at most up to a
//!   buffer. What the kernel told beside the packet goes into the buffer's
//!   metadata ([`Annotation`]), not into the frame: the packet id and hook
//!   its verdict needs, the direction (`out` for the output hooks, `in`
//!   otherwise), the input and output interface indexes, the uid of the
//!   owning socket (`NFQA_UID`, asked for with `NFQA_CFG_F_UID_GID`) and
//!   the packet's real length;
//! * [`Port::send`] at the emulated departure time: the first send of an id
//!   is its `NF_ACCEPT` verdict (with the packet's bytes, so that an ECN
//!   mark or a corruption the emulator applied reaches the wire; sent
//!   straight from the pool buffer, gathered behind the message header);
//!   a later send of the same id (a copy made by duplication) is
//!   re-injected through a raw socket whose packets carry
//!   [`REINJECT_MARK`], which the rules let through;
//! * [`Port::discard`] when the emulator drops the frame: `NF_DROP`, unless
//!   the id already had its verdict (a copy); a packet the runner refuses
//!   at its memory cap gets `NF_DROP` at once;
//! * on drop of the port, every id still held gets `NF_DROP`.
//!
//! So every id gets exactly one verdict, and verdicts are issued out of
//! order, whenever each packet is due. Packets longer than the copy range
//! (the runner's buffer less the synthetic header) are truncated in the
//! copy only: they are shaped by their real length (the IP header's), and
//! their verdict carries no bytes; such a packet cannot be re-injected as a
//! duplicate (counted as a transmit error).
//!
//! The netlink messages are built and parsed here, on byte slices, without
//! `unsafe` ([`parse_message`] is checked on random bytes by a property
//! test); `unsafe` is limited to `recvmmsg`. A crate such as `nfq` keeps
//! the whole receive buffer alive for each message held and needs the
//! message back to issue its verdict, which does not fit an emulator that
//! holds thousands of packets for tens of milliseconds.

use super::{Port, PortStats};
use crate::buffers::{Annotation, BufId, BufMeta, BufferPool, QueueTag, Rx};
use nix::sys::socket::{
    bind, sendto, setsockopt, socket, sockopt, AddressFamily, MsgFlags, NetlinkAddr, SockFlag,
    SockProtocol, SockType, SockaddrIn, SockaddrIn6,
};
use pipelab_classify::Direction;
use std::collections::HashSet;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The packet mark of re-injected copies; the host-mode rules return early
/// for packets that carry it, so copies are not queued again.
pub const REINJECT_MARK: u32 = 0x7069_6c62;

/// Queued packets fetched per `recvmmsg`.
pub const BATCH: usize = 32;

const ETH_HEADER: usize = 14;
const NLMSG_HDRLEN: usize = 16;
const NFGEN_HDRLEN: usize = 4;
const NLMSG_ERROR: u16 = 2;
const NLMSG_MIN_TYPE: u16 = 0x10;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const NFNL_SUBSYS_QUEUE: u16 = 3;
const NFQNL_MSG_PACKET: u16 = 0;
const NFQNL_MSG_VERDICT: u16 = 1;
const NFQNL_MSG_CONFIG: u16 = 2;
const NFQA_PACKET_HDR: u16 = 1;
const NFQA_VERDICT_HDR: u16 = 2;
const NFQA_MARK: u16 = 3;
const NFQA_IFINDEX_INDEV: u16 = 5;
const NFQA_IFINDEX_OUTDEV: u16 = 6;
const NFQA_PAYLOAD: u16 = 10;
const NFQA_CAP_LEN: u16 = 13;
const NFQA_UID: u16 = 16;
const NFQA_GID: u16 = 17;
const NFQA_CFG_CMD: u16 = 1;
const NFQA_CFG_PARAMS: u16 = 2;
const NFQA_CFG_QUEUE_MAXLEN: u16 = 3;
const NFQA_CFG_MASK: u16 = 4;
const NFQA_CFG_FLAGS: u16 = 5;
const NFQNL_CFG_CMD_BIND: u8 = 1;
const NFQNL_COPY_PACKET: u8 = 2;
const NFQA_CFG_F_FAIL_OPEN: u32 = 1;
const NFQA_CFG_F_GSO: u32 = 4;
const NFQA_CFG_F_UID_GID: u32 = 8;
const NF_DROP: u32 = 0;
const NF_ACCEPT: u32 = 1;
/// `NF_INET_LOCAL_OUT` and `NF_INET_POST_ROUTING`: the output path.
const HOOK_LOCAL_OUT: u8 = 3;
const HOOK_POST_ROUTING: u8 = 4;
/// Size of one receive slot: the copy range plus room for the metadata.
const SLOT: usize = 8192;

/// Why a netlink message could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError(pub &'static str);

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed NFQUEUE message: {}", self.0)
    }
}

/// One queued packet, as the kernel described it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueuedPacket<'a> {
    /// The id its verdict names.
    pub id: u32,
    /// The link-layer protocol (ethertype: 0x0800, 0x86dd).
    pub hw_protocol: u16,
    /// The netfilter hook (1 input, 3 output).
    pub hook: u8,
    /// The packet mark.
    pub mark: u32,
    /// The receiving interface's index.
    pub indev: Option<u32>,
    /// The transmitting interface's index.
    pub outdev: Option<u32>,
    /// The uid owning the local socket.
    pub uid: Option<u32>,
    /// The gid owning the local socket.
    pub gid: Option<u32>,
    /// The packet's real length when the copy is shorter.
    pub cap_len: Option<u32>,
    /// The copy of the packet (IP header first).
    pub payload: &'a [u8],
}

/// A netlink message on the queue's socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message<'a> {
    /// A queued packet.
    Packet(QueuedPacket<'a>),
    /// An acknowledgement (0) or an error (a positive errno).
    Error(i32),
    /// Anything else (ignored).
    Other,
}

fn u16_ne(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_ne(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u32_be(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

const fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Parse the first netlink message of `buf`: the message and the bytes it
/// takes (aligned, at most `buf.len()`). Never panics, whatever the bytes.
pub fn parse_message(buf: &[u8]) -> Result<(Message<'_>, usize), ParseError> {
    let len = u32_ne(buf, 0).ok_or(ParseError("short netlink header"))? as usize;
    let ty = u16_ne(buf, 4).ok_or(ParseError("short netlink header"))?;
    if len < NLMSG_HDRLEN || len > buf.len() {
        return Err(ParseError("netlink length out of bounds"));
    }
    let used = align4(len).min(buf.len());
    let body = &buf[NLMSG_HDRLEN..len];
    if ty == NLMSG_ERROR {
        let e = u32_ne(body, 0).ok_or(ParseError("short error message"))? as i32;
        return Ok((Message::Error(e.saturating_neg()), used));
    }
    if ty < NLMSG_MIN_TYPE || ty != (NFNL_SUBSYS_QUEUE << 8 | NFQNL_MSG_PACKET) {
        return Ok((Message::Other, used));
    }
    let mut attrs = body
        .get(NFGEN_HDRLEN..)
        .ok_or(ParseError("short nfgenmsg"))?;
    let mut p = QueuedPacket::default();
    let mut have_hdr = false;
    while attrs.len() >= 4 {
        let alen = u16_ne(attrs, 0).unwrap_or(0) as usize;
        let aty = u16_ne(attrs, 2).unwrap_or(0) & 0x3fff;
        if alen < 4 || alen > attrs.len() {
            return Err(ParseError("attribute length out of bounds"));
        }
        let v = &attrs[4..alen];
        match aty {
            NFQA_PACKET_HDR => {
                p.id = u32_be(v, 0).ok_or(ParseError("short packet header"))?;
                p.hw_protocol = v
                    .get(4..6)
                    .map(|b| u16::from_be_bytes([b[0], b[1]]))
                    .ok_or(ParseError("short packet header"))?;
                p.hook = *v.get(6).ok_or(ParseError("short packet header"))?;
                have_hdr = true;
            }
            NFQA_MARK => p.mark = u32_be(v, 0).ok_or(ParseError("short mark"))?,
            NFQA_IFINDEX_INDEV => p.indev = u32_be(v, 0),
            NFQA_IFINDEX_OUTDEV => p.outdev = u32_be(v, 0),
            NFQA_UID => p.uid = u32_be(v, 0),
            NFQA_GID => p.gid = u32_be(v, 0),
            NFQA_CAP_LEN => p.cap_len = u32_be(v, 0),
            NFQA_PAYLOAD => p.payload = v,
            _ => {}
        }
        attrs = attrs.get(align4(alen)..).unwrap_or(&[]);
    }
    if !have_hdr {
        return Err(ParseError("packet without header"));
    }
    Ok((Message::Packet(p), used))
}

/// Append one netlink attribute (`value` padded to 4 bytes).
fn put_attr(msg: &mut Vec<u8>, ty: u16, value: &[u8]) {
    let len = 4 + value.len();
    msg.extend_from_slice(&(len as u16).to_ne_bytes());
    msg.extend_from_slice(&ty.to_ne_bytes());
    msg.extend_from_slice(value);
    msg.resize(align4(msg.len()), 0);
}

/// Start an NFQUEUE message of type `ty` for `queue` in `msg`.
fn start_message(msg: &mut Vec<u8>, ty: u16, flags: u16, seq: u32, queue: u16) {
    msg.clear();
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(&(NFNL_SUBSYS_QUEUE << 8 | ty).to_ne_bytes());
    msg.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
    msg.extend_from_slice(&seq.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    // nfgenmsg: AF_UNSPEC, NFNETLINK_V0, the queue number (big endian).
    msg.extend_from_slice(&[0, 0]);
    msg.extend_from_slice(&queue.to_be_bytes());
}

fn finish_message(msg: &mut [u8]) {
    let len = msg.len() as u32;
    msg[..4].copy_from_slice(&len.to_ne_bytes());
}

/// Build a verdict message for packet `id` (with the packet's new bytes if
/// `payload` is given).
pub fn verdict_message(
    msg: &mut Vec<u8>,
    queue: u16,
    id: u32,
    verdict: u32,
    payload: Option<&[u8]>,
) {
    verdict_header(msg, queue, id, verdict, payload.map(<[u8]>::len));
    if let Some(p) = payload {
        msg.extend_from_slice(p);
        msg.resize(align4(msg.len()), 0);
    }
}

/// The head of a verdict message for packet `id`: everything but the
/// payload's bytes (and their padding to 4) when a payload of
/// `payload_len` bytes follows, whose length the header counts. So the
/// payload can be sent from where it is, gathered behind the head.
fn verdict_header(
    msg: &mut Vec<u8>,
    queue: u16,
    id: u32,
    verdict: u32,
    payload_len: Option<usize>,
) {
    start_message(msg, NFQNL_MSG_VERDICT, 0, 0, queue);
    let mut vh = [0u8; 8];
    vh[..4].copy_from_slice(&verdict.to_be_bytes());
    vh[4..].copy_from_slice(&id.to_be_bytes());
    put_attr(msg, NFQA_VERDICT_HDR, &vh);
    let follows = match payload_len {
        Some(n) => {
            msg.extend_from_slice(&((4 + n) as u16).to_ne_bytes());
            msg.extend_from_slice(&NFQA_PAYLOAD.to_ne_bytes());
            align4(n)
        }
        None => 0,
    };
    let len = (msg.len() + follows) as u32;
    msg[..4].copy_from_slice(&len.to_ne_bytes());
}

/// Verdict counters, shared with whoever reports them.
#[derive(Debug, Default)]
pub struct VerdictCounters {
    /// `NF_ACCEPT` verdicts.
    pub accepted: AtomicU64,
    /// `NF_DROP` verdicts.
    pub dropped: AtomicU64,
    /// Copies re-injected through the raw socket.
    pub reinjected: AtomicU64,
    /// Ids received and still without a verdict.
    pub held: AtomicU64,
    /// Verdicts the kernel refused (an error reply).
    pub errors: AtomicU64,
}

/// A snapshot of [`VerdictCounters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct VerdictStats {
    /// `NF_ACCEPT` verdicts.
    pub accepted: u64,
    /// `NF_DROP` verdicts.
    pub dropped: u64,
    /// Copies re-injected through the raw socket.
    pub reinjected: u64,
    /// Ids received and still without a verdict.
    pub held: u64,
    /// Verdicts the kernel refused.
    pub errors: u64,
}

impl VerdictCounters {
    /// The counters now.
    pub fn snapshot(&self) -> VerdictStats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        VerdictStats {
            accepted: l(&self.accepted),
            dropped: l(&self.dropped),
            reinjected: l(&self.reinjected),
            held: l(&self.held),
            errors: l(&self.errors),
        }
    }
}

/// Raw sockets for re-injected copies (opened on first use).
#[derive(Default)]
struct Reinjector {
    v4: Option<OwnedFd>,
    v6: Option<OwnedFd>,
}

impl Reinjector {
    fn open(family: AddressFamily) -> io::Result<OwnedFd> {
        let fd = socket(
            family,
            SockType::Raw,
            SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
            SockProtocol::Raw,
        )?;
        setsockopt(&fd, sockopt::Mark, &REINJECT_MARK)?;
        Ok(fd)
    }

    /// Send the IP packet `pkt` (header included) to its destination.
    fn send(&mut self, pkt: &[u8]) -> io::Result<()> {
        match pkt.first().map(|b| b >> 4) {
            Some(4) if pkt.len() >= 20 => {
                let dst = Ipv4Addr::new(pkt[16], pkt[17], pkt[18], pkt[19]);
                if self.v4.is_none() {
                    self.v4 = Some(Self::open(AddressFamily::Inet)?);
                }
                let fd = self
                    .v4
                    .as_ref()
                    .ok_or_else(|| io::Error::other("no socket"))?;
                let to = SockaddrIn::from(SocketAddrV4::new(dst, 0));
                sendto(fd.as_raw_fd(), pkt, &to, MsgFlags::empty())?;
                Ok(())
            }
            Some(6) if pkt.len() >= 40 => {
                let mut d = [0u8; 16];
                d.copy_from_slice(&pkt[24..40]);
                if self.v6.is_none() {
                    self.v6 = Some(Self::open(AddressFamily::Inet6)?);
                }
                let fd = self
                    .v6
                    .as_ref()
                    .ok_or_else(|| io::Error::other("no socket"))?;
                let to = SockaddrIn6::from(SocketAddrV6::new(Ipv6Addr::from(d), 0, 0, 0));
                sendto(fd.as_raw_fd(), pkt, &to, MsgFlags::empty())?;
                Ok(())
            }
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not an IP packet",
            )),
        }
    }
}

/// The IP packet's own length (IPv4 total length, IPv6 40 + payload
/// length), if its header is there.
fn ip_len(pkt: &[u8]) -> Option<usize> {
    match pkt.first()? >> 4 {
        4 => Some(u16::from_be_bytes([*pkt.get(2)?, *pkt.get(3)?]) as usize),
        6 => Some(40 + u16::from_be_bytes([*pkt.get(4)?, *pkt.get(5)?]) as usize),
        _ => None,
    }
}

/// Settings of a queue.
#[derive(Clone, Copy, Debug)]
pub struct QueueOptions {
    /// The queue number the rules send to.
    pub queue_num: u16,
    /// The most packets the kernel holds for this queue (received and
    /// waiting for their verdict included); beyond it, new packets are
    /// dropped by the kernel (never accepted: fail-closed).
    pub max_len: u32,
    /// Bytes of each packet copied to user space.
    pub copy_range: u32,
}

/// A [`Port`] over one netfilter queue. See the module documentation.
pub struct NfQueue {
    fd: OwnedFd,
    queue: u16,
    name: String,
    slots: Vec<Vec<u8>>,
    lens: Vec<usize>,
    filled: usize,
    cur: usize,
    off: usize,
    held: HashSet<u32>,
    reinject: Reinjector,
    stats: PortStats,
    counters: Arc<VerdictCounters>,
    msg: Vec<u8>,
}

fn nl_socket() -> io::Result<OwnedFd> {
    let fd = socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        SockProtocol::NetlinkNetFilter,
    )?;
    bind(fd.as_raw_fd(), &NetlinkAddr::new(0, 0))?;
    Ok(fd)
}

/// The netlink port id of the socket bound to queue `qn` in this network
/// namespace, from `/proc/net/netfilter/nfnetlink_queue` (one line per
/// bound queue: its number, then the peer's port id, ...), if bound.
fn queue_holder(qn: u16) -> Option<u32> {
    let text = std::fs::read_to_string("/proc/net/netfilter/nfnetlink_queue").ok()?;
    holder_in(&text, qn)
}

/// [`queue_holder`] on the file's text.
fn holder_in(text: &str, qn: u16) -> Option<u32> {
    text.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        let q: u16 = w.next()?.parse().ok()?;
        (q == qn).then(|| w.next()?.parse().ok())?
    })
}

/// The error of binding queue `qn`, refused with `e`, the queue being
/// held by the socket of port id `holder` (if any). The kernel answers
/// EPERM both to a process without CAP_NET_ADMIN and to a bind of a
/// queue another socket holds (EBUSY on older kernels): the listing of
/// bound queues tells them apart.
fn bind_error(qn: u16, e: io::Error, holder: Option<u32>) -> io::Error {
    let refused = matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EBUSY));
    match holder {
        Some(port) if refused => io::Error::new(
            io::ErrorKind::AddrInUse,
            format!(
                "netfilter queue {qn} is in use: another socket (netlink port id {port}, usually its process id) is bound to it; stop that process or choose another queue number"
            ),
        ),
        _ if e.raw_os_error() == Some(libc::EPERM) => io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("binding netfilter queue {qn} needs root or CAP_NET_ADMIN: {e}"),
        ),
        _ => io::Error::new(e.kind(), format!("binding netfilter queue {qn}: {e}")),
    }
}

impl NfQueue {
    /// Bind queue `opts.queue_num`: copy whole packets (up to the copy
    /// range), attach the owning uid and gid, never fail open, no GSO
    /// super-packets. Fails if another process holds the queue.
    pub fn open(opts: QueueOptions) -> io::Result<NfQueue> {
        let fd = nl_socket()?;
        // A large receive buffer absorbs bursts; root may exceed rmem_max.
        if setsockopt(&fd, sockopt::RcvBufForce, &(8 << 20)).is_err() {
            let _ = setsockopt(&fd, sockopt::RcvBuf, &(8 << 20));
        }
        let mut q = NfQueue {
            fd,
            queue: opts.queue_num,
            name: format!("nfqueue:{}", opts.queue_num),
            slots: (0..BATCH).map(|_| vec![0u8; SLOT]).collect(),
            lens: vec![0; BATCH],
            filled: 0,
            cur: 0,
            off: 0,
            held: HashSet::new(),
            reinject: Reinjector::default(),
            stats: PortStats::default(),
            counters: Arc::new(VerdictCounters::default()),
            msg: Vec::with_capacity(SLOT),
        };
        let qn = opts.queue_num;
        // One message: bind, then copy mode and range, queue length and
        // flags, applied by the kernel in that order (no packet arrives
        // half-configured).
        let range = opts.copy_range.min((SLOT - 512) as u32);
        let mut params = range.to_be_bytes().to_vec();
        params.push(NFQNL_COPY_PACKET);
        let mask = NFQA_CFG_F_UID_GID | NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO;
        q.config(1, |m| {
            put_attr(m, NFQA_CFG_CMD, &[NFQNL_CFG_CMD_BIND, 0, 0, 0]);
            put_attr(m, NFQA_CFG_PARAMS, &params);
            put_attr(m, NFQA_CFG_QUEUE_MAXLEN, &opts.max_len.max(1).to_be_bytes());
            put_attr(m, NFQA_CFG_MASK, &mask.to_be_bytes());
            put_attr(m, NFQA_CFG_FLAGS, &NFQA_CFG_F_UID_GID.to_be_bytes());
        })
        .map_err(|e| bind_error(qn, e, queue_holder(qn)))?;
        Ok(q)
    }

    /// The verdict counters (shared; they keep counting).
    pub fn counters(&self) -> Arc<VerdictCounters> {
        self.counters.clone()
    }

    /// Ids received and still without a verdict.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Send a configuration message and wait for its acknowledgement.
    fn config(&mut self, seq: u32, body: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        let mut msg = Vec::with_capacity(64);
        start_message(&mut msg, NFQNL_MSG_CONFIG, NLM_F_ACK, seq, self.queue);
        body(&mut msg);
        finish_message(&mut msg);
        sendto(
            self.fd.as_raw_fd(),
            &msg,
            &NetlinkAddr::new(0, 0),
            MsgFlags::empty(),
        )?;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let mut buf = vec![0u8; SLOT];
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no answer from nfnetlink_queue",
                ));
            }
            let mut pfd = [nix::poll::PollFd::new(
                self.fd.as_fd(),
                nix::poll::PollFlags::POLLIN,
            )];
            let ms = u16::try_from(left.as_millis()).unwrap_or(u16::MAX);
            match nix::poll::poll(&mut pfd, ms) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
            let n =
                match nix::sys::socket::recv(self.fd.as_raw_fd(), &mut buf, MsgFlags::MSG_DONTWAIT)
                {
                    Ok(n) => n,
                    Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => continue,
                    Err(e) => return Err(e.into()),
                };
            let mut at = 0;
            while at < n {
                let Ok((m, used)) = parse_message(&buf[at..n]) else {
                    break;
                };
                let seq_of = u32_ne(&buf, at + 8);
                at += used;
                match m {
                    // The acknowledgement names our sequence number.
                    Message::Error(e) if seq_of == Some(seq) => {
                        return if e == 0 {
                            Ok(())
                        } else {
                            Err(io::Error::from_raw_os_error(e))
                        };
                    }
                    // Queued before the configuration was answered: never
                    // passed unshaped.
                    Message::Packet(p) => {
                        let _ = self.verdict(p.id, NF_DROP, None);
                    }
                    _ => {}
                }
            }
        }
    }

    /// Fetch the next batch of datagrams; false if none waits.
    fn fill(&mut self) -> io::Result<bool> {
        loop {
            let mut iov: Vec<libc::iovec> = self
                .slots
                .iter_mut()
                .map(|s| libc::iovec {
                    iov_base: s.as_mut_ptr().cast(),
                    iov_len: s.len(),
                })
                .collect();
            // SAFETY: an all-zero mmsghdr is a valid empty header; each
            // entry is then pointed at one iovec of `iov`, which lives until
            // the call returns.
            let mut hdrs: Vec<libc::mmsghdr> = (0..BATCH)
                .map(|_| unsafe { std::mem::zeroed::<libc::mmsghdr>() })
                .collect();
            for (h, v) in hdrs.iter_mut().zip(iov.iter_mut()) {
                h.msg_hdr.msg_iov = v;
                h.msg_hdr.msg_iovlen = 1;
            }
            // SAFETY: `hdrs` holds BATCH initialised headers whose iovecs
            // point into `self.slots`, each valid for `iov_len` bytes and
            // not otherwise borrowed during the call; the fd is open.
            let n = unsafe {
                libc::recvmmsg(
                    self.fd.as_raw_fd(),
                    hdrs.as_mut_ptr(),
                    BATCH as libc::c_uint,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EAGAIN) => return Ok(false),
                    Some(libc::EINTR) => continue,
                    // The kernel's socket buffer overflowed: it dropped
                    // those packets itself (no verdict is owed).
                    Some(libc::ENOBUFS) => {
                        self.stats.rx_dropped += 1;
                        continue;
                    }
                    _ => return Err(e),
                }
            }
            let n = n as usize;
            for (i, h) in hdrs.iter().take(n).enumerate() {
                self.lens[i] = (h.msg_len as usize).min(SLOT);
            }
            self.filled = n;
            self.cur = 0;
            self.off = 0;
            return Ok(n > 0);
        }
    }

    /// Send the verdict for `id`, with the packet's bytes when `payload`
    /// is given: gathered from where they are (the pool buffer), not
    /// copied into the message.
    fn verdict(&mut self, id: u32, verdict: u32, payload: Option<&[u8]>) -> io::Result<()> {
        verdict_header(
            &mut self.msg,
            self.queue,
            id,
            verdict,
            payload.map(<[u8]>::len),
        );
        let payload = payload.unwrap_or(&[]);
        let pad = [0u8; 3];
        let iov = [
            std::io::IoSlice::new(&self.msg),
            std::io::IoSlice::new(payload),
            std::io::IoSlice::new(&pad[..align4(payload.len()) - payload.len()]),
        ];
        let r = nix::sys::socket::sendmsg(
            self.fd.as_raw_fd(),
            &iov,
            &[],
            MsgFlags::empty(),
            Some(&NetlinkAddr::new(0, 0)),
        );
        self.counters
            .held
            .store(self.held.len() as u64, Ordering::Relaxed);
        match r {
            Ok(_) => {
                let c = if verdict == NF_ACCEPT {
                    &self.counters.accepted
                } else {
                    &self.counters.dropped
                };
                c.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                self.counters.errors.fetch_add(1, Ordering::Relaxed);
                Err(e.into())
            }
        }
    }
}

impl Port for NfQueue {
    fn name(&self) -> &str {
        &self.name
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    fn recv(&mut self, rx: &mut Rx<'_>) -> io::Result<()> {
        while rx.wants_more() {
            if self.cur >= self.filled && !self.fill()? {
                return Ok(());
            }
            let slot = &self.slots[self.cur][..self.lens[self.cur]];
            let rest = slot.get(self.off..).unwrap_or(&[]);
            if rest.len() < NLMSG_HDRLEN {
                self.cur += 1;
                self.off = 0;
                continue;
            }
            let (m, used) = match parse_message(rest) {
                Ok(x) => x,
                Err(_) => {
                    // Nothing after a malformed message can be trusted.
                    self.stats.rx_dropped += 1;
                    self.cur += 1;
                    self.off = 0;
                    continue;
                }
            };
            self.off += used.max(4);
            match m {
                Message::Packet(p) => {
                    if !self.held.insert(p.id) {
                        // The kernel never repeats a held id; ignore.
                        continue;
                    }
                    let real = p.cap_len.unwrap_or(p.payload.len() as u32);
                    let out = p.hook == HOOK_LOCAL_OUT || p.hook == HOOK_POST_ROUTING;
                    let annotation = Annotation {
                        dir: Some(if out { Direction::Out } else { Direction::In }),
                        in_if: p.indev,
                        out_if: p.outdev,
                        uid: p.uid,
                        len: Some(real),
                        synthetic_header: true,
                        queued: Some(QueueTag {
                            id: p.id,
                            hook: p.hook,
                        }),
                    };
                    let mut eth = [0u8; ETH_HEADER];
                    eth[12..].copy_from_slice(&p.hw_protocol.to_be_bytes());
                    // The packet's one copy: out of the receive slot into
                    // a pool buffer (truncated to it).
                    let taken = rx.copy(&[&eth, p.payload], annotation).is_some();
                    let id = p.id;
                    self.stats.rx_frames += 1;
                    self.stats.rx_bytes += real as u64;
                    if !taken {
                        // Refused at the memory cap: dropped now.
                        self.held.remove(&id);
                        let _ = self.verdict(id, NF_DROP, None);
                    }
                    self.counters
                        .held
                        .store(self.held.len() as u64, Ordering::Relaxed);
                }
                Message::Error(e) if e != 0 => {
                    // A verdict the kernel refused (an id it no longer holds).
                    self.counters.errors.fetch_add(1, Ordering::Relaxed);
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn send(&mut self, pool: &BufferPool, buf: BufId) -> io::Result<()> {
        let frame = pool.frame(buf);
        let (Some(q), Some(pkt)) = (pool.meta(buf).annotation.queued, frame.get(ETH_HEADER..))
        else {
            self.stats.tx_errors += 1;
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a packet of this queue",
            ));
        };
        let whole = ip_len(pkt) == Some(pkt.len());
        let r = if self.held.remove(&q.id) {
            self.verdict(q.id, NF_ACCEPT, whole.then_some(pkt))
        } else if whole {
            let r = self.reinject.send(pkt);
            if r.is_ok() {
                self.counters.reinjected.fetch_add(1, Ordering::Relaxed);
            }
            r
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a truncated copy cannot be re-injected",
            ))
        };
        match &r {
            Ok(()) => {
                self.stats.tx_frames += 1;
                self.stats.tx_bytes += pkt.len() as u64;
            }
            Err(_) => self.stats.tx_errors += 1,
        }
        r
    }

    fn discard(&mut self, meta: &BufMeta) {
        if let Some(q) = meta.annotation.queued {
            if self.held.remove(&q.id) {
                let _ = self.verdict(q.id, NF_DROP, None);
            }
        }
    }

    fn stats(&self) -> PortStats {
        self.stats
    }
}

impl Drop for NfQueue {
    fn drop(&mut self) {
        // Nothing stays held: whatever the emulator still had is dropped
        // now (closing the socket would drop it too, silently).
        let ids: Vec<u32> = self.held.drain().collect();
        for id in ids {
            let _ = self.verdict(id, NF_DROP, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn packet_message(id: u32, hook: u8, uid: Option<u32>, payload: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        start_message(&mut m, NFQNL_MSG_PACKET, 0, 0, 7);
        let mut hdr = id.to_be_bytes().to_vec();
        hdr.extend_from_slice(&0x0800u16.to_be_bytes());
        hdr.push(hook);
        put_attr(&mut m, NFQA_PACKET_HDR, &hdr);
        if let Some(u) = uid {
            put_attr(&mut m, NFQA_UID, &u.to_be_bytes());
        }
        put_attr(&mut m, NFQA_IFINDEX_OUTDEV, &9u32.to_be_bytes());
        put_attr(&mut m, NFQA_PAYLOAD, payload);
        finish_message(&mut m);
        m
    }

    /// The listing of bound queues (`/proc/net/netfilter/nfnetlink_queue`):
    /// a pass proves the holder of a queue is read by its number.
    #[test]
    fn the_holder_of_a_queue_is_read_from_the_listing() {
        let text = "    0   4242     0 2 65531     0     0        0  1\n 7400 123456     3 2  4082     0     0       17  1\n";
        assert_eq!(holder_in(text, 7400), Some(123_456));
        assert_eq!(holder_in(text, 0), Some(4242));
        assert_eq!(holder_in(text, 7401), None);
        assert_eq!(holder_in("", 7400), None);
    }

    /// The kernel answers EPERM to a bind of a queue another socket holds
    /// and to a process without CAP_NET_ADMIN alike: a pass proves each
    /// gets its own message (it was "Operation not permitted" for both).
    #[test]
    fn a_refused_bind_says_why() {
        let eperm = || io::Error::from_raw_os_error(libc::EPERM);
        let e = bind_error(7400, eperm(), Some(4242));
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
        assert_eq!(
            e.to_string(),
            "netfilter queue 7400 is in use: another socket (netlink port id 4242, usually its process id) is bound to it; stop that process or choose another queue number"
        );
        let e = bind_error(7400, eperm(), None);
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(
            e.to_string(),
            "binding netfilter queue 7400 needs root or CAP_NET_ADMIN: Operation not permitted (os error 1)"
        );
        let e = bind_error(7400, io::Error::from_raw_os_error(libc::EINVAL), Some(1));
        assert_eq!(
            e.to_string(),
            "binding netfilter queue 7400: Invalid argument (os error 22)"
        );
    }

    /// A second socket binding a queue the first holds: a pass proves the
    /// kernel's refusal reaches the caller as "in use", naming the first
    /// socket's port id as the listing shows it.
    #[test]
    #[cfg_attr(
        not(pipelab_live),
        ignore = "live: needs root (CAP_NET_ADMIN); run as root or with PIPELAB_LIVE=1"
    )]
    fn a_queue_in_use_is_refused_as_in_use() {
        let opts = QueueOptions {
            queue_num: 7391,
            max_len: 16,
            copy_range: 128,
        };
        let first = NfQueue::open(opts).expect("first bind");
        let holder = queue_holder(7391).expect("listed once bound");
        let e = NfQueue::open(opts).err().expect("second bind refused");
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse, "{e}");
        assert_eq!(
            e.to_string(),
            format!("netfilter queue 7391 is in use: another socket (netlink port id {holder}, usually its process id) is bound to it; stop that process or choose another queue number")
        );
        drop(first);
    }

    #[test]
    fn parses_a_packet_message() {
        let m = packet_message(0x01020304, 3, Some(1000), &[0x45, 0, 0, 20]);
        let (msg, used) = parse_message(&m).expect("parses");
        assert_eq!(used, m.len());
        match msg {
            Message::Packet(p) => {
                assert_eq!(p.id, 0x01020304);
                assert_eq!(p.hook, 3);
                assert_eq!(p.hw_protocol, 0x0800);
                assert_eq!(p.uid, Some(1000));
                assert_eq!(p.gid, None);
                assert_eq!(p.outdev, Some(9));
                assert_eq!(p.payload, &[0x45, 0, 0, 20]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn verdict_message_layout() {
        let mut m = Vec::new();
        verdict_message(&mut m, 5, 42, NF_ACCEPT, None);
        assert_eq!(m.len(), 16 + 4 + 12);
        assert_eq!(u32_ne(&m, 0), Some(32));
        assert_eq!(u16_ne(&m, 4), Some(3 << 8 | 1));
        assert_eq!(&m[18..20], &5u16.to_be_bytes());
        assert_eq!(u32_be(&m, 24), Some(NF_ACCEPT));
        assert_eq!(u32_be(&m, 28), Some(42));
    }

    #[test]
    fn a_gathered_verdict_is_the_whole_message() {
        // Head, payload from elsewhere, padding: the bytes the kernel gets
        // are those of the message built in one piece.
        for n in [0usize, 1, 20, 23, 60] {
            let payload: Vec<u8> = (0..n as u8).collect();
            let mut whole = Vec::new();
            verdict_message(&mut whole, 5, 42, NF_ACCEPT, Some(&payload));
            let mut head = Vec::new();
            verdict_header(&mut head, 5, 42, NF_ACCEPT, Some(n));
            let mut gathered = head.clone();
            gathered.extend_from_slice(&payload);
            gathered.resize(align4(gathered.len()), 0);
            assert_eq!(gathered, whole, "payload of {n} bytes");
            assert_eq!(u32_ne(&whole, 0), Some(whole.len() as u32));
            match parse_message(&whole) {
                Ok((Message::Other, used)) => assert_eq!(used, whole.len()),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn rejects_lengths_out_of_bounds() {
        let mut m = packet_message(1, 1, None, &[1, 2, 3]);
        m[0..4].copy_from_slice(&1000u32.to_ne_bytes());
        assert!(parse_message(&m).is_err());
        let mut m = packet_message(1, 1, None, &[1, 2, 3]);
        // First attribute claims more than is left.
        m[20..22].copy_from_slice(&500u16.to_ne_bytes());
        assert!(parse_message(&m).is_err());
    }

    proptest! {
        #[test]
        fn never_panics_on_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut at = 0;
            while at < bytes.len() {
                match parse_message(&bytes[at..]) {
                    Ok((_, used)) => {
                        prop_assert!(used > 0 && used <= bytes.len() - at);
                        at += used;
                    }
                    Err(_) => break,
                }
            }
        }

        #[test]
        fn never_panics_on_mutated_messages(
            flips in proptest::collection::vec((0usize..64, any::<u8>()), 1..8),
            cut in 0usize..80,
        ) {
            let mut m = packet_message(7, 1, Some(3), &[0x45; 24]);
            for (i, b) in flips {
                if let Some(x) = m.get_mut(i) {
                    *x = b;
                }
            }
            m.truncate(m.len().saturating_sub(cut));
            let _ = parse_message(&m);
        }
    }
}
