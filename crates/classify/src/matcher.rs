//! A rule's conditions compiled for matching: protocol, endpoints, options.

use crate::{Direction, PacketView};
use pipelab_lang::{AddrMatch, Endpoint, IpNet, OptionKind, PortRange, Proto, RuleSpec};
use std::net::IpAddr;

/// A set of addresses.
#[derive(Clone, Debug)]
enum Addrs {
    Any,
    Nets(Vec<IpNet>),
}

impl Addrs {
    fn compile(a: &AddrMatch, me: &[IpAddr]) -> Addrs {
        match a {
            AddrMatch::Any => Addrs::Any,
            AddrMatch::Me => Addrs::Nets(me.iter().map(|ip| IpNet::host(*ip)).collect()),
            AddrMatch::Net(n) => Addrs::Nets(vec![*n]),
            AddrMatch::List(l) => Addrs::Nets(l.clone()),
        }
    }

    #[inline]
    fn contains(&self, ip: IpAddr) -> bool {
        match self {
            Addrs::Any => true,
            Addrs::Nets(n) => n.iter().any(|n| n.contains(ip)),
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
    fn compile(e: &Endpoint, me: &[IpAddr]) -> End {
        End {
            not: e.not,
            addrs: Addrs::compile(&e.addr, me),
            ports: e.ports.clone(),
        }
    }

    #[inline]
    fn matches(&self, ip: IpAddr, port: Option<u16>) -> bool {
        if self.addrs.contains(ip) == self.not {
            return false;
        }
        ports_match(&self.ports, port)
    }
}

/// Ports match if none are required, or the packet has a port in the list.
#[inline]
fn ports_match(ports: &[PortRange], port: Option<u16>) -> bool {
    ports.is_empty() || port.is_some_and(|p| ports.iter().any(|r| r.contains(p)))
}

#[derive(Clone, Debug)]
enum Cond {
    Dir(Direction),
    Proto(Proto),
    Src(Addrs),
    Dst(Addrs),
    SrcPort(Vec<PortRange>),
    DstPort(Vec<PortRange>),
}

/// The compiled conditions of one rule.
#[derive(Clone, Debug)]
pub struct Matcher {
    proto: Proto,
    src: End,
    dst: End,
    conds: Vec<(bool, Cond)>,
}

fn proto_matches(p: Proto, pkt: &PacketView) -> bool {
    if !pkt.is_ip {
        return false;
    }
    match p {
        Proto::Ip => true,
        Proto::Ip4 => pkt.key.src.is_ipv4(),
        Proto::Ip6 => pkt.key.src.is_ipv6(),
        other => other.number() == Some(pkt.key.proto),
    }
}

/// The packet's port, if its protocol has ports (TCP, UDP, SCTP).
#[inline]
fn has_ports(pkt: &PacketView) -> bool {
    pkt.is_ip && matches!(pkt.key.proto, 6 | 17 | 132)
}

impl Matcher {
    /// Compile a rule's conditions; `me` resolves the `me` keyword.
    pub fn compile(spec: &RuleSpec, me: &[IpAddr]) -> Matcher {
        let conds = spec
            .options
            .iter()
            .map(|o| {
                let c = match &o.kind {
                    OptionKind::In => Cond::Dir(Direction::In),
                    OptionKind::Out => Cond::Dir(Direction::Out),
                    OptionKind::Proto(p) => Cond::Proto(*p),
                    OptionKind::SrcIp(a) => Cond::Src(Addrs::compile(a, me)),
                    OptionKind::DstIp(a) => Cond::Dst(Addrs::compile(a, me)),
                    OptionKind::SrcPort(p) => Cond::SrcPort(p.clone()),
                    OptionKind::DstPort(p) => Cond::DstPort(p.clone()),
                };
                (o.not, c)
            })
            .collect();
        Matcher {
            proto: spec.proto,
            src: End::compile(&spec.src, me),
            dst: End::compile(&spec.dst, me),
            conds,
        }
    }

    /// True if every condition holds for `pkt`.
    pub fn matches(&self, pkt: &PacketView) -> bool {
        // `ip from any to any` matches every frame, IP or not, as ipfw's
        // layer-2 pass does; anything more specific needs an IP packet.
        let trivial = matches!(self.proto, Proto::Ip)
            && matches!(self.src.addrs, Addrs::Any)
            && matches!(self.dst.addrs, Addrs::Any)
            && !self.src.not
            && !self.dst.not
            && self.src.ports.is_empty()
            && self.dst.ports.is_empty();
        if !trivial {
            if !proto_matches(self.proto, pkt) {
                return false;
            }
            let (sp, dp) = if has_ports(pkt) {
                (Some(pkt.key.sport), Some(pkt.key.dport))
            } else {
                (None, None)
            };
            if !self.src.matches(pkt.key.src, sp) || !self.dst.matches(pkt.key.dst, dp) {
                return false;
            }
        }
        self.conds.iter().all(|(not, c)| self.cond(c, pkt) != *not)
    }

    fn cond(&self, c: &Cond, pkt: &PacketView) -> bool {
        let ports = has_ports(pkt);
        match c {
            Cond::Dir(d) => pkt.dir == Some(*d),
            Cond::Proto(p) => proto_matches(*p, pkt),
            Cond::Src(a) => pkt.is_ip && a.contains(pkt.key.src),
            Cond::Dst(a) => pkt.is_ip && a.contains(pkt.key.dst),
            Cond::SrcPort(p) => ports_match(p, ports.then_some(pkt.key.sport)),
            Cond::DstPort(p) => ports_match(p, ports.then_some(pkt.key.dport)),
        }
    }
}
