//! nftables tables owned by this process: rules the kernel removes when
//! the process ends, however it ends.
//!
//! A table created with the flag `NFT_TABLE_F_OWNER` (Linux 5.12) belongs
//! to the netlink socket that created it: only that socket may change
//! it, and the kernel deletes it when the socket closes, which it does
//! when the process exits, `kill -9` and crashes included. The `nft`
//! tool cannot make such a table (its socket closes when it exits, and
//! the table with it), so [`OwnedTable`] speaks nf_tables' netlink
//! protocol itself: one batch (one transaction) that creates the table,
//! its base chains and their rules, sent on a socket this process keeps
//! open for as long as the rules must live.
//!
//! Used for fail-closed rules (a netfilter queue without `bypass`: while
//! nobody listens on the queue the kernel drops what they queue), which
//! must never outlive the process that listens: see docs/design-notes.md
//! ("Rules that die with their process").
//!
//! Only what such rules need is encoded: a table of family `inet`, base
//! chains of type `filter` on a hook with policy accept, and rules made
//! of `meta` loads, `cmp` equality, an `immediate` verdict, and a
//! `queue` (nftables' own expression, `CONFIG_NFT_QUEUE`, or, on a kernel
//! without it, the xtables `NFQUEUE` target through `nft_compat`, as
//! iptables-nft does). Every message asks for an acknowledgement, and a
//! refusal carries the kernel's errno; replies are awaited at most 5 s.

use nix::sys::socket::{
    bind, recv, send, setsockopt, socket, sockopt, AddressFamily, MsgFlags, NetlinkAddr, SockFlag,
    SockProtocol, SockType,
};
use nix::sys::time::TimeVal;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

// Netlink and nfnetlink framing (linux/netlink.h, linux/netfilter/nfnetlink.h).
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_EXCL: u16 = 0x200;
const NLM_F_CREATE: u16 = 0x400;
const NLM_F_APPEND: u16 = 0x800;
const NLA_F_NESTED: u16 = 0x8000;
const NFNL_MSG_BATCH_BEGIN: u16 = 0x10;
const NFNL_MSG_BATCH_END: u16 = 0x11;
const NFNL_SUBSYS_NFTABLES: u16 = 10;

// nf_tables (linux/netfilter/nf_tables.h).
const NFT_MSG_NEWTABLE: u16 = 0;
const NFT_MSG_DELTABLE: u16 = 2;
const NFT_MSG_NEWCHAIN: u16 = 3;
const NFT_MSG_NEWRULE: u16 = 6;
const NFTA_TABLE_NAME: u16 = 1;
const NFTA_TABLE_FLAGS: u16 = 2;
const NFT_TABLE_F_OWNER: u32 = 0x2;
const NFTA_CHAIN_TABLE: u16 = 1;
const NFTA_CHAIN_NAME: u16 = 3;
const NFTA_CHAIN_HOOK: u16 = 4;
const NFTA_CHAIN_POLICY: u16 = 5;
const NFTA_CHAIN_TYPE: u16 = 7;
const NFTA_HOOK_HOOKNUM: u16 = 1;
const NFTA_HOOK_PRIORITY: u16 = 2;
const NFTA_RULE_TABLE: u16 = 1;
const NFTA_RULE_CHAIN: u16 = 2;
const NFTA_RULE_EXPRESSIONS: u16 = 4;
const NFTA_LIST_ELEM: u16 = 1;
const NFTA_EXPR_NAME: u16 = 1;
const NFTA_EXPR_DATA: u16 = 2;
const NFTA_META_DREG: u16 = 1;
const NFTA_META_KEY: u16 = 2;
const NFT_META_MARK: u32 = 3;
const NFT_META_IIFNAME: u32 = 6;
const NFT_META_OIFNAME: u32 = 7;
const NFTA_CMP_SREG: u16 = 1;
const NFTA_CMP_OP: u16 = 2;
const NFTA_CMP_DATA: u16 = 3;
const NFT_CMP_EQ: u32 = 0;
const NFTA_DATA_VALUE: u16 = 1;
const NFTA_DATA_VERDICT: u16 = 2;
const NFTA_VERDICT_CODE: u16 = 1;
const NFTA_IMMEDIATE_DREG: u16 = 1;
const NFTA_IMMEDIATE_DATA: u16 = 2;
const NFT_REG_VERDICT: u32 = 0;
const NFT_REG_1: u32 = 1;
const NFT_RETURN: i32 = -5;
const NFTA_QUEUE_NUM: u16 = 1;
const NFTA_QUEUE_TOTAL: u16 = 2;
const NFTA_QUEUE_FLAGS: u16 = 3;
const NFTA_TARGET_NAME: u16 = 1;
const NFTA_TARGET_REV: u16 = 2;
const NFTA_TARGET_INFO: u16 = 3;
const NFPROTO_INET: u8 = 1;
const NF_ACCEPT: u32 = 1;
const IFNAMSIZ: usize = 16;

/// A netfilter hook a base chain is attached to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    /// Before routing: what arrives.
    Prerouting,
    /// Packets for this host.
    Input,
    /// Packets this host sends.
    Output,
    /// After routing: what leaves.
    Postrouting,
}

impl Hook {
    fn number(self) -> u32 {
        match self {
            Hook::Prerouting => 0,
            Hook::Input => 1,
            Hook::Output => 3,
            Hook::Postrouting => 4,
        }
    }

    /// Its name in nft's language (also the chain's name).
    pub fn name(self) -> &'static str {
        match self {
            Hook::Prerouting => "prerouting",
            Hook::Input => "input",
            Hook::Output => "output",
            Hook::Postrouting => "postrouting",
        }
    }
}

/// One base chain of a queueing table: on `hook`, packets carrying
/// `skip_mark` return (accepted), and the others (those of interface
/// `dev` only, if given: the input interface on prerouting and input,
/// the output one otherwise) go to netfilter queue `queue`, without
/// `bypass`: dropped while nobody listens on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueChain {
    /// The hook (also the chain's name).
    pub hook: Hook,
    /// Only this interface's packets, if given.
    pub dev: Option<String>,
    /// The netfilter queue.
    pub queue: u16,
    /// Packets with this mark are let through.
    pub skip_mark: u32,
}

/// How an [`OwnedTable`]'s rules hand packets to the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueForm {
    /// nftables' `queue` expression.
    Queue,
    /// The xtables `NFQUEUE` target (revision 3) through `nft_compat`,
    /// on a kernel without the `queue` expression.
    XtTarget,
}

/// Attributes of a netlink message, encoded as they are added.
#[derive(Default)]
struct Attrs(Vec<u8>);

impl Attrs {
    fn bytes(mut self, ty: u16, data: &[u8]) -> Attrs {
        let len = 4 + data.len();
        self.0.extend_from_slice(&(len as u16).to_ne_bytes());
        self.0.extend_from_slice(&ty.to_ne_bytes());
        self.0.extend_from_slice(data);
        while !self.0.len().is_multiple_of(4) {
            self.0.push(0);
        }
        self
    }

    fn str(self, ty: u16, s: &str) -> Attrs {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        self.bytes(ty, &v)
    }

    fn be32(self, ty: u16, v: u32) -> Attrs {
        self.bytes(ty, &v.to_be_bytes())
    }

    fn be16(self, ty: u16, v: u16) -> Attrs {
        self.bytes(ty, &v.to_be_bytes())
    }

    fn nested(self, ty: u16, inner: Attrs) -> Attrs {
        self.bytes(ty | NLA_F_NESTED, &inner.0)
    }
}

/// One expression of a rule: its name and its attributes.
fn expr(name: &str, data: Attrs) -> Attrs {
    Attrs::default()
        .str(NFTA_EXPR_NAME, name)
        .nested(NFTA_EXPR_DATA, data)
}

fn meta(key: u32) -> Attrs {
    expr(
        "meta",
        Attrs::default()
            .be32(NFTA_META_KEY, key)
            .be32(NFTA_META_DREG, NFT_REG_1),
    )
}

fn cmp_eq(value: &[u8]) -> Attrs {
    expr(
        "cmp",
        Attrs::default()
            .be32(NFTA_CMP_SREG, NFT_REG_1)
            .be32(NFTA_CMP_OP, NFT_CMP_EQ)
            .nested(
                NFTA_CMP_DATA,
                Attrs::default().bytes(NFTA_DATA_VALUE, value),
            ),
    )
}

fn verdict_return() -> Attrs {
    let verdict = Attrs::default().be32(NFTA_VERDICT_CODE, NFT_RETURN as u32);
    expr(
        "immediate",
        Attrs::default()
            .be32(NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT)
            .nested(
                NFTA_IMMEDIATE_DATA,
                Attrs::default().nested(NFTA_DATA_VERDICT, verdict),
            ),
    )
}

fn queue(num: u16, form: QueueForm) -> Attrs {
    match form {
        QueueForm::Queue => expr(
            "queue",
            Attrs::default()
                .be16(NFTA_QUEUE_NUM, num)
                .be16(NFTA_QUEUE_TOTAL, 1)
                .be16(NFTA_QUEUE_FLAGS, 0),
        ),
        QueueForm::XtTarget => {
            // struct xt_NFQ_info_v3 { u16 queuenum, queues_total, flags },
            // in host order, padded to the xtables alignment (8).
            let mut info = Vec::with_capacity(8);
            info.extend_from_slice(&num.to_ne_bytes());
            info.extend_from_slice(&1u16.to_ne_bytes());
            info.extend_from_slice(&0u16.to_ne_bytes());
            info.extend_from_slice(&[0, 0]);
            expr(
                "target",
                Attrs::default()
                    .str(NFTA_TARGET_NAME, "NFQUEUE")
                    .be32(NFTA_TARGET_REV, 3)
                    .bytes(NFTA_TARGET_INFO, &info),
            )
        }
    }
}

/// A rule's expressions as the list attribute.
fn expressions(list: Vec<Attrs>) -> Attrs {
    let mut l = Attrs::default();
    for e in list {
        l = l.nested(NFTA_LIST_ELEM, e);
    }
    l
}

/// An interface name as `meta iifname`/`oifname` loads it: its bytes,
/// zero-padded to `IFNAMSIZ`.
fn ifname(dev: &str) -> io::Result<[u8; IFNAMSIZ]> {
    let b = dev.as_bytes();
    if b.is_empty() || b.len() >= IFNAMSIZ || b.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("interface name '{dev}': 1 to 15 bytes, no NUL"),
        ));
    }
    let mut out = [0u8; IFNAMSIZ];
    out[..b.len()].copy_from_slice(b);
    Ok(out)
}

/// A batch of nf_tables messages (one transaction), and how many replies
/// it asks for.
struct Batch {
    buf: Vec<u8>,
    seq: u32,
    acks: usize,
}

impl Batch {
    fn new(seq: u32) -> Batch {
        let mut b = Batch {
            buf: Vec::new(),
            seq,
            acks: 0,
        };
        b.push(
            NFNL_MSG_BATCH_BEGIN,
            NLM_F_REQUEST,
            0,
            NFNL_SUBSYS_NFTABLES,
            &Attrs::default(),
        );
        b
    }

    /// Append one message: `ty` (an nfnetlink type), `flags`, the
    /// nfgenmsg's family and resource id, and the attributes.
    fn push(&mut self, ty: u16, flags: u16, family: u8, res_id: u16, attrs: &Attrs) {
        let len = 16 + 4 + attrs.0.len();
        self.buf.extend_from_slice(&(len as u32).to_ne_bytes());
        self.buf.extend_from_slice(&ty.to_ne_bytes());
        self.buf.extend_from_slice(&flags.to_ne_bytes());
        self.buf.extend_from_slice(&self.seq.to_ne_bytes());
        self.buf.extend_from_slice(&0u32.to_ne_bytes());
        // struct nfgenmsg: family, version (NFNETLINK_V0), res_id (big endian).
        self.buf.push(family);
        self.buf.push(0);
        self.buf.extend_from_slice(&res_id.to_be_bytes());
        self.buf.extend_from_slice(&attrs.0);
        self.seq = self.seq.wrapping_add(1);
        if flags & NLM_F_ACK != 0 {
            self.acks += 1;
        }
    }

    /// Append an nf_tables message of `msg` on the `inet` family, asking
    /// for its acknowledgement.
    fn nft(&mut self, msg: u16, flags: u16, attrs: &Attrs) {
        self.push(
            (NFNL_SUBSYS_NFTABLES << 8) | msg,
            NLM_F_REQUEST | NLM_F_ACK | flags,
            NFPROTO_INET,
            0,
            attrs,
        );
    }

    fn finish(mut self) -> (Vec<u8>, usize) {
        self.push(
            NFNL_MSG_BATCH_END,
            NLM_F_REQUEST,
            0,
            NFNL_SUBSYS_NFTABLES,
            &Attrs::default(),
        );
        (self.buf, self.acks)
    }
}

/// The batch that makes table `inet NAME`, owned by the sending socket,
/// with `chains`.
fn table_batch(
    name: &str,
    chains: &[QueueChain],
    form: QueueForm,
    seq: u32,
) -> io::Result<(Vec<u8>, usize)> {
    let mut b = Batch::new(seq);
    b.nft(
        NFT_MSG_NEWTABLE,
        NLM_F_CREATE | NLM_F_EXCL,
        &Attrs::default()
            .str(NFTA_TABLE_NAME, name)
            .be32(NFTA_TABLE_FLAGS, NFT_TABLE_F_OWNER),
    );
    for c in chains {
        let chain = c.hook.name();
        b.nft(
            NFT_MSG_NEWCHAIN,
            NLM_F_CREATE | NLM_F_EXCL,
            &Attrs::default()
                .str(NFTA_CHAIN_TABLE, name)
                .str(NFTA_CHAIN_NAME, chain)
                .nested(
                    NFTA_CHAIN_HOOK,
                    Attrs::default()
                        .be32(NFTA_HOOK_HOOKNUM, c.hook.number())
                        .be32(NFTA_HOOK_PRIORITY, 0),
                )
                .be32(NFTA_CHAIN_POLICY, NF_ACCEPT)
                .str(NFTA_CHAIN_TYPE, "filter"),
        );
        let rule = |exprs: Vec<Attrs>| {
            Attrs::default()
                .str(NFTA_RULE_TABLE, name)
                .str(NFTA_RULE_CHAIN, chain)
                .nested(NFTA_RULE_EXPRESSIONS, expressions(exprs))
        };
        // The mark is a host-order u32 in the register.
        b.nft(
            NFT_MSG_NEWRULE,
            NLM_F_CREATE | NLM_F_APPEND,
            &rule(vec![
                meta(NFT_META_MARK),
                cmp_eq(&c.skip_mark.to_ne_bytes()),
                verdict_return(),
            ]),
        );
        let mut exprs = Vec::new();
        if let Some(dev) = &c.dev {
            let key = match c.hook {
                Hook::Prerouting | Hook::Input => NFT_META_IIFNAME,
                Hook::Output | Hook::Postrouting => NFT_META_OIFNAME,
            };
            exprs.push(meta(key));
            exprs.push(cmp_eq(&ifname(dev)?));
        }
        exprs.push(queue(c.queue, form));
        b.nft(NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND, &rule(exprs));
    }
    Ok(b.finish())
}

/// A netlink socket of the netfilter family, in the calling thread's
/// network namespace, that waits at most 5 s for a reply.
fn open_socket() -> io::Result<OwnedFd> {
    let fd = socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkNetFilter,
    )
    .map_err(io::Error::from)?;
    bind(fd.as_raw_fd(), &NetlinkAddr::new(0, 0)).map_err(io::Error::from)?;
    setsockopt(&fd, sockopt::ReceiveTimeout, &TimeVal::new(5, 0)).map_err(io::Error::from)?;
    Ok(fd)
}

/// Send `batch` and read the `acks` replies it asked for: the first
/// refusal's errno, if any.
fn transact(fd: &OwnedFd, batch: &[u8], acks: usize) -> io::Result<()> {
    send(fd.as_raw_fd(), batch, MsgFlags::empty()).map_err(io::Error::from)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut seen = 0;
    let mut first_err = None;
    while seen < acks {
        let n = match recv(fd.as_raw_fd(), &mut buf, MsgFlags::empty()) {
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(nix::errno::Errno::EAGAIN) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "nf_tables: no reply within 5 s",
                ))
            }
            Err(e) => return Err(e.into()),
        };
        let mut off = 0;
        while off + 16 <= n {
            let word = |at: usize| {
                buf.get(at..at + 4)
                    .and_then(|b| <[u8; 4]>::try_from(b).ok())
                    .map(u32::from_ne_bytes)
                    .unwrap_or(0)
            };
            let len = word(off) as usize;
            let ty = buf
                .get(off + 4..off + 6)
                .and_then(|b| <[u8; 2]>::try_from(b).ok())
                .map(u16::from_ne_bytes)
                .unwrap_or(0);
            if len < 16 || off + len > n {
                break;
            }
            if ty == NLMSG_ERROR && len >= 20 {
                seen += 1;
                let code = word(off + 16) as i32;
                if code < 0 && first_err.is_none() {
                    first_err = Some(io::Error::from_raw_os_error(-code));
                }
            }
            off += (len + 3) & !3;
        }
        if first_err.is_some() {
            break;
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// An nftables table `inet NAME` owned by this process's socket: the
/// kernel deletes it when the socket closes (on drop, or when the process
/// ends in any way). Nobody else can change or delete it meanwhile.
pub struct OwnedTable {
    fd: OwnedFd,
    name: String,
    form: QueueForm,
    seq: u32,
}

impl OwnedTable {
    /// Create table `inet NAME` with `chains`, in one transaction, in the
    /// calling thread's network namespace: with nftables' `queue`
    /// expression, else (a kernel without it) with the xtables `NFQUEUE`
    /// target. Refused if a table of that name exists. An error (an old
    /// kernel without owned tables, no `nft_compat`) leaves nothing.
    pub fn create(name: &str, chains: &[QueueChain]) -> io::Result<OwnedTable> {
        let mut last = None;
        for form in [QueueForm::Queue, QueueForm::XtTarget] {
            // A socket per try: a refused batch leaves nothing, and the
            // table is the socket's that made it.
            let fd = open_socket()?;
            let seq = 1;
            let (batch, acks) = table_batch(name, chains, form, seq)?;
            match transact(&fd, &batch, acks) {
                Ok(()) => {
                    return Ok(OwnedTable {
                        fd,
                        name: name.to_string(),
                        form,
                        seq: seq + 64,
                    })
                }
                // No such expression in this kernel: the next form.
                Err(e)
                    if e.raw_os_error() == Some(libc::ENOENT)
                        || e.raw_os_error() == Some(libc::EOPNOTSUPP) =>
                {
                    last = Some(e)
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no form of the queue was accepted")))
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How its rules queue packets.
    pub fn form(&self) -> QueueForm {
        self.form
    }

    /// Delete the table now (and wait for the kernel to say so); closing
    /// the socket would delete it too.
    pub fn delete(mut self) -> io::Result<()> {
        let mut b = Batch::new(self.seq);
        b.nft(
            NFT_MSG_DELTABLE,
            0,
            &Attrs::default().str(NFTA_TABLE_NAME, &self.name),
        );
        self.seq = self.seq.wrapping_add(8);
        let (batch, acks) = b.finish();
        transact(&self.fd, &batch, acks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves the attribute framing: length over the payload,
    /// padding to 4, the nested flag, strings NUL-terminated.
    #[test]
    fn attributes_are_framed_as_netlink_wants() {
        let a = Attrs::default().str(1, "ab").be32(2, 7);
        assert_eq!(
            a.0,
            [
                [7u16.to_ne_bytes(), 1u16.to_ne_bytes()].concat(),
                vec![b'a', b'b', 0, 0],
                [8u16.to_ne_bytes(), 2u16.to_ne_bytes()].concat(),
                vec![0, 0, 0, 7],
            ]
            .concat()
        );
        let n = Attrs::default().nested(4, Attrs::default().be16(1, 1));
        let mut head = 12u16.to_ne_bytes().to_vec();
        head.extend_from_slice(&(4 | NLA_F_NESTED).to_ne_bytes());
        assert_eq!(&n.0[..4], &head[..]);
        assert_eq!(n.0.len(), 12);
    }

    /// A batch begins and ends with the batch messages, counts the
    /// acknowledgements it asks for, and every message's length is its
    /// own.
    #[test]
    fn a_batch_is_framed_and_counts_its_acks() {
        let chains = [QueueChain {
            hook: Hook::Postrouting,
            dev: Some("eth0".into()),
            queue: 7500,
            skip_mark: 0x7069_6c62,
        }];
        let (buf, acks) = table_batch("pipelab_at_1", &chains, QueueForm::Queue, 1).expect("batch");
        // Table, chain, two rules.
        assert_eq!(acks, 4);
        let mut off = 0;
        let mut types = Vec::new();
        while off < buf.len() {
            let len = u32::from_ne_bytes(buf[off..off + 4].try_into().expect("4")) as usize;
            types.push(u16::from_ne_bytes(
                buf[off + 4..off + 6].try_into().expect("2"),
            ));
            assert!(len.is_multiple_of(4));
            off += len;
        }
        assert_eq!(off, buf.len());
        let nft = |m: u16| (NFNL_SUBSYS_NFTABLES << 8) | m;
        assert_eq!(
            types,
            [
                NFNL_MSG_BATCH_BEGIN,
                nft(NFT_MSG_NEWTABLE),
                nft(NFT_MSG_NEWCHAIN),
                nft(NFT_MSG_NEWRULE),
                nft(NFT_MSG_NEWRULE),
                NFNL_MSG_BATCH_END
            ]
        );
        assert!(ifname("a-name-too-long-for-linux").is_err());
    }

    /// `nft list table inet NAME` in namespace `ns`: its text, or `None`.
    fn listed(ns: &crate::netns::NetNs, name: &str) -> Option<String> {
        let name = name.to_string();
        ns.run(move || {
            let o = std::process::Command::new("nft")
                .args(["list", "table", "inet", &name])
                .output()?;
            Ok(o.status
                .success()
                .then(|| String::from_utf8_lossy(&o.stdout).into_owned()))
        })
        .expect("nft")
    }

    /// In a namespace of its own: the table is made with its two chains
    /// and rules, nobody else can delete it, it goes when deleted, and
    /// also when its socket closes without a word (as at `kill -9`).
    #[test]
    #[cfg_attr(
        not(pipelab_live),
        ignore = "live: needs root (CAP_NET_ADMIN) and nft; run as root or with PIPELAB_LIVE=1"
    )]
    fn an_owned_table_lives_as_long_as_its_socket() {
        let ns = crate::netns::NetNs::create().expect("namespace");
        let chains = vec![
            QueueChain {
                hook: Hook::Postrouting,
                dev: Some("lo".into()),
                queue: 7401,
                skip_mark: 0x7069_6c62,
            },
            QueueChain {
                hook: Hook::Prerouting,
                dev: Some("lo".into()),
                queue: 7401,
                skip_mark: 0x7069_6c62,
            },
        ];
        let c = chains.clone();
        let t = ns
            .run(move || OwnedTable::create("pl_owned_test", &c))
            .expect("owned table");
        let text = listed(&ns, "pl_owned_test").expect("listed");
        for want in [
            "flags owner",
            "type filter hook postrouting priority filter; policy accept;",
            "type filter hook prerouting priority filter; policy accept;",
            "meta mark 0x70696c62 return",
            "oifname \"lo\"",
            "iifname \"lo\"",
        ] {
            assert!(text.contains(want), "{want:?} in {text}");
        }
        assert!(
            text.contains("queue to 7401")
                || text.contains("NFQUEUE num 7401")
                || text.contains("queue num 7401"),
            "{text}"
        );
        // Another socket (the nft tool's) may not delete it.
        let refused = ns
            .run(|| {
                Ok(std::process::Command::new("nft")
                    .args(["delete", "table", "inet", "pl_owned_test"])
                    .stderr(std::process::Stdio::null())
                    .status()?
                    .success())
            })
            .expect("nft");
        assert!(!refused, "another socket deleted an owned table");
        t.delete().expect("delete");
        assert_eq!(listed(&ns, "pl_owned_test"), None);
        // Made again, and its socket closed without a word.
        let t = ns
            .run(move || OwnedTable::create("pl_owned_test", &chains))
            .expect("owned table again");
        assert!(listed(&ns, "pl_owned_test").is_some());
        drop(t);
        assert_eq!(listed(&ns, "pl_owned_test"), None, "gone with its socket");
    }
}
