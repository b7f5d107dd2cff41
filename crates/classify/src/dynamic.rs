//! Dynamic states: ipfw's `keep-state` and `check-state`, as far as they
//! matter for shaping (ipfw(8) "STATEFUL FIREWALL"; FreeBSD
//! `ipfw_dynamic.c`).
//!
//! A packet that a `keep-state` rule matches creates a state for its flow:
//! protocol and both endpoints, either direction, under the rule's flow
//! name. Later packets of the flow, in either direction, take the action of
//! the rule that created it (e.g. `pipe 1`) at the first `check-state` or
//! `keep-state` rule they reach, so the replies of a flow a rule shapes
//! cross the same pipe. A state lives for a lifetime refreshed by each of
//! its packets, ipfw's defaults (`net.inet.ip.fw.dyn_*_lifetime`): TCP 20 s
//! until both sides sent a SYN, then 300 s, 1 s after a RST or FINs both
//! ways; UDP 10 s; other protocols 5 s. A TCP flow whose flags are unknown
//! (a synthetic source) or picked up without its SYNs counts as
//! established (300 s).
//!
//! Time is the packet's (its arrival instant, passed in): nothing here
//! reads a clock, so a virtual-time run expires states exactly. The table
//! holds at most [`DYN_MAX`] states (ipfw's `dyn_max` default); when full,
//! expired states are reclaimed, and if none has expired the packet that
//! would create one is denied, as ipfw denies it. The table is a `BTreeMap`:
//! no iteration order depends on hashing.

use pipelab_engine::time::{Duration, Instant};
use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::PacketView;

/// The most states the table holds (ipfw's `net.inet.ip.fw.dyn_max`).
pub const DYN_MAX: usize = 16_384;
/// A TCP flow both sides opened with a SYN (`dyn_ack_lifetime`).
pub const ACK_LIFETIME: Duration = Duration::from_secs(300);
/// A TCP flow one side opened (`dyn_syn_lifetime`).
pub const SYN_LIFETIME: Duration = Duration::from_secs(20);
/// A TCP flow closed by FINs both ways (`dyn_fin_lifetime`).
pub const FIN_LIFETIME: Duration = Duration::from_secs(1);
/// A TCP flow reset (`dyn_rst_lifetime`).
pub const RST_LIFETIME: Duration = Duration::from_secs(1);
/// A UDP flow (`dyn_udp_lifetime`).
pub const UDP_LIFETIME: Duration = Duration::from_secs(10);
/// Any other protocol (`dyn_short_lifetime`).
pub const SHORT_LIFETIME: Duration = Duration::from_secs(5);

/// The flow name ipfw calls `default`.
pub(crate) const DEFAULT_FLOW: u32 = 0;

/// A flow, the same in both directions: protocol, the lower endpoint, the
/// higher, and the flow name's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    proto: u8,
    lo: (IpAddr, u16),
    hi: (IpAddr, u16),
    flow: u32,
}

// TCP flags seen, by direction (forward = as the creating packet went).
const SYN_FWD: u8 = 1;
const SYN_REV: u8 = 2;
const FIN_FWD: u8 = 4;
const FIN_REV: u8 = 8;
const RST: u8 = 16;

/// One state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct State {
    /// The creating rule's index in evaluation order.
    pub rule: usize,
    /// Its number (to carry states over a reconfiguration).
    pub number: u32,
    /// The `tablearg` the creating packet had (for `pipe tablearg`).
    pub arg: u32,
    /// The creating packet's source endpoint.
    fwd: (IpAddr, u16),
    /// TCP flags seen.
    tcp: u8,
    /// When it expires, unless a packet refreshes it.
    expire: Instant,
}

/// The endpoints of `pkt`: (source, destination), ports 0 without ports.
fn endpoints(pkt: &PacketView) -> ((IpAddr, u16), (IpAddr, u16)) {
    let (sp, dp) = if pkt.has_ports {
        (pkt.key.sport, pkt.key.dport)
    } else {
        (0, 0)
    };
    ((pkt.key.src, sp), (pkt.key.dst, dp))
}

fn key(pkt: &PacketView, flow: u32) -> Key {
    let (s, d) = endpoints(pkt);
    let (lo, hi) = if s <= d { (s, d) } else { (d, s) };
    Key {
        proto: pkt.key.proto,
        lo,
        hi,
        flow,
    }
}

/// The lifetime of a state of protocol `proto` after TCP flags `tcp`.
fn lifetime(proto: u8, tcp: u8) -> Duration {
    match proto {
        6 if tcp & RST != 0 => RST_LIFETIME,
        6 if tcp & (FIN_FWD | FIN_REV) == FIN_FWD | FIN_REV => FIN_LIFETIME,
        6 if tcp & (SYN_FWD | SYN_REV) == SYN_FWD => SYN_LIFETIME,
        6 if tcp & (SYN_FWD | SYN_REV) == SYN_REV => SYN_LIFETIME,
        6 => ACK_LIFETIME,
        17 => UDP_LIFETIME,
        _ => SHORT_LIFETIME,
    }
}

impl State {
    /// Account packet `pkt` at `now`: its TCP flags, and a new expiry.
    fn touch(&mut self, pkt: &PacketView, proto: u8, now: Instant) {
        if let Some(f) = pkt.tcp_flags {
            let fwd = endpoints(pkt).0 == self.fwd;
            let (syn, fin) = if fwd {
                (SYN_FWD, FIN_FWD)
            } else {
                (SYN_REV, FIN_REV)
            };
            if f & 0x02 != 0 {
                self.tcp |= syn;
            }
            if f & 0x01 != 0 {
                self.tcp |= fin;
            }
            if f & 0x04 != 0 {
                self.tcp |= RST;
            }
        }
        self.expire = now.saturating_add(lifetime(proto, self.tcp));
    }
}

/// Why a state could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Full;

/// The states of one classifier.
#[derive(Clone, Debug, Default)]
pub(crate) struct States {
    map: BTreeMap<Key, State>,
}

impl States {
    /// The state of `pkt`'s flow under flow name `flow` (`None`: any name,
    /// the lowest index first), refreshed at `now`; an expired one is
    /// removed and not found.
    pub fn lookup(&mut self, pkt: &PacketView, flow: Option<u32>, now: Instant) -> Option<State> {
        if !pkt.is_ip {
            return None;
        }
        let k = match flow {
            Some(f) => key(pkt, f),
            None => {
                let lo = key(pkt, 0);
                let hi = key(pkt, u32::MAX);
                let found = self
                    .map
                    .range(lo..=hi)
                    .find(|(_, s)| s.expire >= now)
                    .map(|(k, _)| *k);
                match found {
                    Some(k) => k,
                    None => {
                        // Only expired ones (if any): forget them.
                        self.map.retain(|k, s| {
                            !(k.proto == lo.proto && k.lo == lo.lo && k.hi == lo.hi)
                                || s.expire >= now
                        });
                        return None;
                    }
                }
            }
        };
        let s = self.map.get_mut(&k)?;
        if s.expire < now {
            self.map.remove(&k);
            return None;
        }
        s.touch(pkt, k.proto, now);
        Some(*s)
    }

    /// Make (or refresh) the state of `pkt`'s flow under flow name `flow`
    /// for rule `rule` (number `number`, tablearg `arg`) at `now`. A full
    /// table first drops its expired states; still full, it refuses.
    pub fn insert(
        &mut self,
        pkt: &PacketView,
        flow: u32,
        rule: usize,
        number: u32,
        arg: u32,
        now: Instant,
    ) -> Result<(), Full> {
        if !pkt.is_ip {
            return Ok(());
        }
        let k = key(pkt, flow);
        if let Some(s) = self.map.get_mut(&k) {
            if s.expire >= now {
                s.touch(pkt, k.proto, now);
                return Ok(());
            }
            self.map.remove(&k);
        }
        if self.map.len() >= DYN_MAX {
            self.map.retain(|_, s| s.expire >= now);
            if self.map.len() >= DYN_MAX {
                return Err(Full);
            }
        }
        let mut s = State {
            rule,
            number,
            arg,
            fwd: endpoints(pkt).0,
            tcp: 0,
            expire: now,
        };
        s.touch(pkt, k.proto, now);
        self.map.insert(k, s);
        Ok(())
    }

    /// How many states are held (expired ones not yet reclaimed included).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// The states whose rule `keep` maps to a new index and whose flow name
    /// `flow` maps to a new index; the others are dropped (a
    /// reconfiguration that removed or changed their rule).
    pub fn carried(
        &self,
        keep: impl Fn(&State) -> Option<usize>,
        flow: impl Fn(u32) -> Option<u32>,
    ) -> States {
        let mut map = BTreeMap::new();
        for (k, s) in &self.map {
            if let (Some(rule), Some(f)) = (keep(s), flow(k.flow)) {
                map.insert(Key { flow: f, ..*k }, State { rule, ..*s });
            }
        }
        States { map }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipelab_engine::FlowKey;

    fn udp(src: &str, sport: u16, dst: &str, dport: u16) -> PacketView {
        let key = FlowKey {
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            sport,
            dport,
            proto: 17,
        };
        PacketView::ip(key, 100)
    }

    fn tcp(src: &str, sport: u16, dst: &str, dport: u16, flags: u8) -> PacketView {
        let mut v = udp(src, sport, dst, dport);
        v.key.proto = 6;
        v.tcp_flags = Some(flags);
        v
    }

    const S: Instant = Instant(0);

    fn at(secs: u64) -> Instant {
        Instant(secs * 1_000_000_000)
    }

    /// Pass proves a state matches its flow both ways and no other, and
    /// that a UDP state expires after ipfw's 10 s without a packet, and is
    /// refreshed by one.
    #[test]
    fn states_match_both_directions_and_expire() {
        let mut t = States::default();
        let a = udp("10.0.0.1", 1000, "10.0.0.2", 5001);
        t.insert(&a, DEFAULT_FLOW, 3, 300, 0, S).unwrap();
        let back = udp("10.0.0.2", 5001, "10.0.0.1", 1000);
        assert_eq!(
            t.lookup(&back, Some(DEFAULT_FLOW), at(9)).map(|s| s.rule),
            Some(3)
        );
        // Refreshed at 9 s: alive at 18 s, gone after 29 s of silence.
        assert!(t.lookup(&a, Some(DEFAULT_FLOW), at(18)).is_some());
        assert!(t.lookup(&a, Some(DEFAULT_FLOW), at(29)).is_none());
        assert_eq!(t.len(), 0, "an expired state is removed when found");
        t.insert(&a, DEFAULT_FLOW, 3, 300, 0, S).unwrap();
        let other = udp("10.0.0.1", 1001, "10.0.0.2", 5001);
        assert!(t.lookup(&other, Some(DEFAULT_FLOW), S).is_none());
        assert!(t.lookup(&back, Some(7), S).is_none(), "another flow name");
        assert!(t.lookup(&back, None, S).is_some(), ":any");
    }

    /// Pass proves the TCP lifetimes: 20 s after one SYN, 300 s once both
    /// sides sent one, 1 s after a RST.
    #[test]
    fn tcp_lifetimes_follow_the_flags() {
        let mut t = States::default();
        let syn = tcp("10.0.0.1", 1000, "10.0.0.2", 80, 0x02);
        t.insert(&syn, DEFAULT_FLOW, 0, 100, 0, S).unwrap();
        assert!(t.lookup(&syn, Some(0), at(21)).is_none(), "SYN only: 20 s");
        t.insert(&syn, DEFAULT_FLOW, 0, 100, 0, S).unwrap();
        let synack = tcp("10.0.0.2", 80, "10.0.0.1", 1000, 0x12);
        assert!(t.lookup(&synack, Some(0), at(1)).is_some());
        assert!(
            t.lookup(&syn, Some(0), at(250)).is_some(),
            "established: 300 s"
        );
        let rst = tcp("10.0.0.2", 80, "10.0.0.1", 1000, 0x04);
        assert!(t.lookup(&rst, Some(0), at(251)).is_some());
        assert!(t.lookup(&syn, Some(0), at(253)).is_none(), "reset: 1 s");
    }

    /// Pass proves the cap: a full table refuses a new flow until states
    /// expire, and then reclaims them.
    #[test]
    fn a_full_table_refuses_then_reclaims() {
        let mut t = States::default();
        for i in 0..DYN_MAX {
            let p = udp(
                "10.0.0.1",
                (i % 60_000) as u16,
                "10.0.0.2",
                (i / 60_000) as u16,
            );
            t.insert(&p, DEFAULT_FLOW, 0, 100, 0, S).unwrap();
        }
        let new = udp("10.9.9.9", 1, "10.0.0.2", 1);
        assert_eq!(t.insert(&new, DEFAULT_FLOW, 0, 100, 0, at(5)), Err(Full));
        assert_eq!(t.insert(&new, DEFAULT_FLOW, 0, 100, 0, at(11)), Ok(()));
        assert_eq!(t.len(), 1);
    }
}
