//! A rule's conditions compiled for matching: protocol, endpoints, options.
//!
//! Each condition evaluates to `Some(true)`, `Some(false)`, or `None` when
//! the packet lacks the field it reads (not IP, a truncated header, no
//! Ethernet addresses). `None` fails the rule whether or not the condition
//! is negated, so a truncated frame never matches a rule through a field
//! it does not have. Metadata (direction, interfaces, user) is never
//! `None`: unknown is `false`.

use crate::table::LpmTable;
use crate::{Context, Direction, PacketView};
use pipelab_lang::{
    AddrMatch, Endpoint, IpNet, MacMatch, NumRange, OptionKind, PortRange, Proto, RuleSpec,
    TableId, TcpFlags, UserMatch,
};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

/// What compiling needs: names and tables resolved.
pub(crate) struct Env<'a> {
    pub(crate) ctx: &'a Context,
    pub(crate) tables: &'a BTreeMap<TableId, Arc<LpmTable>>,
}

/// A set of addresses.
#[derive(Clone, Debug)]
enum Addrs {
    Any,
    Nets(Vec<Net>),
    /// `table(N[,V])`: the table (empty if it does not exist) and the
    /// value the entry must have.
    Table(Arc<LpmTable>, Option<u32>),
}

/// A network as masks, so a test is one AND and one compare.
#[derive(Clone, Copy, Debug)]
enum Net {
    V4 { base: u32, mask: u32 },
    V6 { base: u128, mask: u128 },
}

impl Net {
    fn new(n: &IpNet) -> Net {
        let bits = u32::from(n.prefix());
        match n.addr() {
            IpAddr::V4(a) => Net::V4 {
                base: u32::from(a),
                mask: u32::MAX
                    .checked_shl(32u32.saturating_sub(bits))
                    .unwrap_or(0),
            },
            IpAddr::V6(a) => Net::V6 {
                base: u128::from(a),
                mask: u128::MAX
                    .checked_shl(128u32.saturating_sub(bits))
                    .unwrap_or(0),
            },
        }
    }

    #[inline]
    fn contains(&self, ip: IpAddr) -> bool {
        match (self, ip) {
            (Net::V4 { base, mask }, IpAddr::V4(a)) => u32::from(a) & mask == *base,
            (Net::V6 { base, mask }, IpAddr::V6(a)) => u128::from(a) & mask == *base,
            _ => false,
        }
    }
}

fn nets<'a>(l: impl IntoIterator<Item = &'a IpNet>) -> Vec<Net> {
    l.into_iter().map(Net::new).collect()
}

/// The outcome of an address test: no, or yes with the table value found
/// (`None` when no table was looked up).
type Hit = Option<Option<u32>>;

impl Addrs {
    fn compile(a: &AddrMatch, env: &Env<'_>) -> Addrs {
        match a {
            AddrMatch::Any => Addrs::Any,
            AddrMatch::Me => Addrs::Nets(
                env.ctx
                    .me
                    .iter()
                    .map(|ip| Net::new(&IpNet::host(*ip)))
                    .collect(),
            ),
            AddrMatch::Net(n) => Addrs::Nets(nets([n])),
            AddrMatch::List(l) => Addrs::Nets(nets(l)),
            AddrMatch::Table { table, value } => {
                Addrs::Table(env.tables.get(table).cloned().unwrap_or_default(), *value)
            }
        }
    }

    #[inline]
    fn test(&self, ip: IpAddr) -> Hit {
        match self {
            Addrs::Any => Some(None),
            Addrs::Nets(n) => n.iter().any(|n| n.contains(ip)).then_some(None),
            Addrs::Table(t, want) => match (t.lookup(ip), want) {
                (Some(v), None) => Some(Some(v)),
                (Some(v), Some(w)) if v == *w => Some(Some(v)),
                _ => None,
            },
        }
    }
}

#[derive(Clone, Debug)]
struct End {
    not: bool,
    addrs: Addrs,
    ports: Vec<PortRange>,
}

impl End {
    fn compile(e: &Endpoint, env: &Env<'_>) -> End {
        End {
            not: e.not,
            addrs: Addrs::compile(&e.addr, env),
            ports: e.ports.clone(),
        }
    }

    /// `None`: no match; `Some(arg)`: match, with the table value if the
    /// (not negated) address came from a table.
    #[inline]
    fn test(&self, ip: IpAddr, l4: L4, is_src: bool) -> Hit {
        let hit = match (self.addrs.test(ip), self.not) {
            (Some(arg), false) => Some(arg),
            (None, true) => Some(None),
            _ => None,
        }?;
        if self.ports.is_empty() {
            return Some(hit);
        }
        l4.test(&self.ports, is_src)?.then_some(hit)
    }
}

#[inline]
fn ports_match(ports: &[PortRange], port: u16) -> bool {
    ports.iter().any(|r| r.contains(port))
}

#[inline]
fn in_ranges(r: &[NumRange], v: u32) -> bool {
    r.iter().any(|r| r.contains(v))
}

/// What the packet says about ports.
#[derive(Clone, Copy, Debug)]
enum L4 {
    /// (source, destination).
    Ports((u16, u16)),
    /// An IP protocol without ports (ICMP, ...): port conditions are false.
    NotApplicable,
    /// Not IP, or the transport header could not be read.
    Unknown,
}

impl L4 {
    #[inline]
    fn of(pkt: &PacketView) -> L4 {
        if !pkt.is_ip {
            L4::Unknown
        } else if pkt.has_ports {
            L4::Ports((pkt.key.sport, pkt.key.dport))
        } else if matches!(pkt.key.proto, 6 | 17 | 132) {
            L4::Unknown
        } else {
            L4::NotApplicable
        }
    }

    /// Source (`src`) or destination port test.
    #[inline]
    fn test(self, ports: &[PortRange], src: bool) -> Option<bool> {
        match self {
            L4::Ports((s, d)) => Some(ports_match(ports, if src { s } else { d })),
            L4::NotApplicable => Some(false),
            L4::Unknown => None,
        }
    }
}

/// Which interface an interface condition reads.
#[derive(Clone, Copy, Debug)]
enum IfWhich {
    Via,
    Recv,
    Xmit,
}

#[derive(Clone, Debug)]
enum Cond {
    Dir(Direction),
    Proto(Proto),
    Src(Addrs),
    Dst(Addrs),
    SrcPort(Vec<PortRange>),
    DstPort(Vec<PortRange>),
    /// The interface id, `None` if the name is unknown (never matches).
    Iface(IfWhich, Option<u32>),
    Mac(MacMatch, MacMatch),
    MacType(Vec<NumRange>),
    IpLen(Vec<NumRange>),
    TcpFlags(TcpFlags),
    Dscp(u64),
    /// The uid, `None` if the user name is unknown (never matches).
    Uid(Option<u32>),
    /// A property of the whole emulation (`layer2`: whether it sees frames
    /// at layer 2), decided when the rule is compiled.
    Fixed(bool),
}

/// The compiled conditions of one rule.
#[derive(Clone, Debug)]
pub struct Matcher {
    proto: Proto,
    /// `ip from any to any` without ports or `not`: needs no IP header.
    trivial: bool,
    src: End,
    dst: End,
    conds: Vec<(bool, Cond)>,
}

/// `None` if the packet is not IP.
#[inline]
fn proto_matches(p: Proto, pkt: &PacketView) -> Option<bool> {
    if !pkt.is_ip {
        return None;
    }
    Some(match p {
        Proto::Ip => true,
        Proto::Ip4 => pkt.key.src.is_ipv4(),
        Proto::Ip6 => pkt.key.src.is_ipv6(),
        other => other.number() == Some(pkt.key.proto),
    })
}

#[inline]
fn mac_is(m: MacMatch, a: [u8; 6]) -> bool {
    match m {
        MacMatch::Any => true,
        MacMatch::Addr(x) => x == a,
    }
}

impl Matcher {
    /// Compile a rule's conditions; `me` resolves the `me` keyword. Tables,
    /// interfaces and user names are unknown (see [`crate::Context`]).
    pub fn compile(spec: &RuleSpec, me: &[IpAddr]) -> Matcher {
        let ctx = Context {
            me: me.to_vec(),
            ..Context::default()
        };
        Matcher::compile_in(
            spec,
            &Env {
                ctx: &ctx,
                tables: &BTreeMap::new(),
            },
        )
    }

    pub(crate) fn compile_in(spec: &RuleSpec, env: &Env<'_>) -> Matcher {
        let iface = |w: IfWhich, name: &str| Cond::Iface(w, env.ctx.ifaces.get(name).copied());
        let conds = spec
            .options
            .iter()
            // `keep-state` is an instruction to the classifier, not a
            // condition.
            .filter(|o| !matches!(o.kind, OptionKind::KeepState(_)))
            .map(|o| {
                let c = match &o.kind {
                    OptionKind::In => Cond::Dir(Direction::In),
                    OptionKind::Out => Cond::Dir(Direction::Out),
                    OptionKind::Proto(p) => Cond::Proto(*p),
                    OptionKind::SrcIp(a) => Cond::Src(Addrs::compile(a, env)),
                    OptionKind::DstIp(a) => Cond::Dst(Addrs::compile(a, env)),
                    OptionKind::SrcPort(p) => Cond::SrcPort(p.clone()),
                    OptionKind::DstPort(p) => Cond::DstPort(p.clone()),
                    OptionKind::Via(n) => iface(IfWhich::Via, n),
                    OptionKind::Recv(n) => iface(IfWhich::Recv, n),
                    OptionKind::Xmit(n) => iface(IfWhich::Xmit, n),
                    OptionKind::Mac { dst, src } => Cond::Mac(*dst, *src),
                    OptionKind::MacType(r) => Cond::MacType(r.clone()),
                    OptionKind::IpLen(r) => Cond::IpLen(r.clone()),
                    OptionKind::TcpFlags(t) => Cond::TcpFlags(*t),
                    // DSCP values are 0..=63: a 64-bit set.
                    OptionKind::Dscp(d) => {
                        Cond::Dscp(d.iter().fold(0u64, |m, v| m | 1u64 << (v & 63)))
                    }
                    OptionKind::Uid(UserMatch::Id(n)) => Cond::Uid(Some(*n)),
                    OptionKind::Uid(UserMatch::Name(s)) => Cond::Uid(env.ctx.users.get(s).copied()),
                    OptionKind::Layer2 => Cond::Fixed(env.ctx.layer2),
                    OptionKind::KeepState(_) => Cond::Fixed(true),
                };
                (o.not, c)
            })
            .collect();
        let src = End::compile(&spec.src, env);
        let dst = End::compile(&spec.dst, env);
        let trivial = matches!(spec.proto, Proto::Ip)
            && matches!(src.addrs, Addrs::Any)
            && matches!(dst.addrs, Addrs::Any)
            && !src.not
            && !dst.not
            && src.ports.is_empty()
            && dst.ports.is_empty();
        Matcher {
            proto: spec.proto,
            trivial,
            src,
            dst,
            conds,
        }
    }

    /// True if every condition holds for `pkt`.
    pub fn matches(&self, pkt: &PacketView) -> bool {
        self.matches_arg(pkt).is_some()
    }

    /// `Some(tablearg)` if every condition holds for `pkt`: the value of
    /// the last matching table lookup (source, destination, then options in
    /// the order written), 0 if the rule looked up no table.
    pub fn matches_arg(&self, pkt: &PacketView) -> Option<u32> {
        let mut arg = None;
        let l4 = L4::of(pkt);
        // `ip from any to any` matches every frame, IP or not, as ipfw's
        // layer-2 pass does; anything more specific needs an IP packet.
        if !self.trivial {
            if !proto_matches(self.proto, pkt)? {
                return None;
            }
            let s = self.src.test(pkt.key.src, l4, true)?;
            let d = self.dst.test(pkt.key.dst, l4, false)?;
            arg = d.or(s);
        }
        for (not, c) in &self.conds {
            let (hit, a) = self.cond(c, pkt, l4)?;
            if hit == *not {
                return None;
            }
            if hit {
                arg = a.or(arg);
            }
        }
        Some(arg.unwrap_or(0))
    }

    /// `None`: the packet lacks the field. Otherwise whether the condition
    /// holds, and the table value if it looked one up and found it.
    #[inline]
    fn cond(&self, c: &Cond, pkt: &PacketView, l4: L4) -> Option<(bool, Option<u32>)> {
        let ip = |b: bool| pkt.is_ip.then_some((b, None));
        let addr = |a: &Addrs, at: IpAddr| {
            if !pkt.is_ip {
                return None;
            }
            Some(match a.test(at) {
                Some(v) => (true, v),
                None => (false, None),
            })
        };
        match c {
            Cond::Dir(d) => Some((pkt.dir == Some(*d), None)),
            Cond::Proto(p) => proto_matches(*p, pkt).map(|b| (b, None)),
            Cond::Src(a) => addr(a, pkt.key.src),
            Cond::Dst(a) => addr(a, pkt.key.dst),
            Cond::SrcPort(p) => l4.test(p, true).map(|b| (b, None)),
            Cond::DstPort(p) => l4.test(p, false).map(|b| (b, None)),
            Cond::Iface(w, id) => {
                let hit = id.is_some_and(|id| match w {
                    IfWhich::Recv => pkt.in_if == Some(id),
                    IfWhich::Xmit => pkt.out_if == Some(id),
                    IfWhich::Via => pkt.in_if == Some(id) || pkt.out_if == Some(id),
                });
                Some((hit, None))
            }
            Cond::Mac(d, s) => {
                let (pd, ps) = (pkt.dst_mac?, pkt.src_mac?);
                Some((mac_is(*d, pd) && mac_is(*s, ps), None))
            }
            Cond::MacType(r) => Some((in_ranges(r, u32::from(pkt.ether_type?)), None)),
            Cond::IpLen(r) => ip(in_ranges(r, pkt.ip_len)),
            Cond::Dscp(set) => ip(set & (1u64 << (pkt.dscp & 63)) != 0),
            Cond::TcpFlags(t) => {
                if !pkt.is_ip {
                    return None;
                }
                if pkt.key.proto != 6 {
                    return Some((false, None));
                }
                Some((t.matches(pkt.tcp_flags?), None))
            }
            Cond::Uid(u) => Some((u.is_some() && pkt.uid == *u, None)),
            Cond::Fixed(b) => Some((*b, None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn addr() -> impl Strategy<Value = IpAddr> {
        prop_oneof![
            any::<u32>().prop_map(|a| IpAddr::V4(Ipv4Addr::from(a))),
            any::<u128>().prop_map(|a| IpAddr::V6(Ipv6Addr::from(a))),
        ]
    }

    proptest! {
        /// Passes if the mask form of a network contains exactly the
        /// addresses `IpNet::contains` does, at every prefix length and
        /// across families.
        #[test]
        fn compiled_net_agrees_with_ipnet(a in addr(), p in 0u8..=128, probe in addr(), near in any::<bool>()) {
            let Some(n) = IpNet::new(a, if a.is_ipv4() { p % 33 } else { p }) else {
                return Ok(());
            };
            // Half the probes share the network's high bits.
            let probe = match (near, a, probe) {
                (true, IpAddr::V4(x), IpAddr::V4(y)) => IpAddr::V4((u32::from(x) ^ (u32::from(y) >> 20)).into()),
                (true, IpAddr::V6(x), IpAddr::V6(y)) => IpAddr::V6((u128::from(x) ^ (u128::from(y) >> 100)).into()),
                _ => probe,
            };
            prop_assert_eq!(Net::new(&n).contains(probe), n.contains(probe));
        }
    }
}
