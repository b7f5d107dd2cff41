//! Flow masks: which bits of a packet's [`FlowKey`] tell its flows apart
//! (dummynet-revisited §3.1 "dynamic pipes", §3.6 queues; ipfw's
//! `mask src-ip 0x000000ff dst-ip ... src-port ... dst-port ... proto ...
//! src-ip6 /N dst-ip6 /N`).
//!
//! A dynamic object (a pipe or a queue with a mask) keeps one *instance*
//! per distinct masked key: `mask src-ip 0x000000ff` gives one instance per
//! value of the last byte of the source address. A zero mask (the default)
//! maps every packet to the same key, hence to a single instance.
//!
//! IPv4 addresses are masked bitwise by `src_ip`/`dst_ip`, IPv6 addresses
//! keep their first `src_ip6`/`dst_ip6` bits (ipfw also accepts a full
//! IPv6 mask; a prefix length covers every use seen in practice). The
//! address family is kept, so an IPv4 and an IPv6 flow never share an
//! instance.
//!
//! The instance tables live in the engine ([`crate::engine`]); this module
//! only computes keys. Applying a mask does not allocate.

use crate::packet::FlowKey;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// ipfw's default `buckets`: the size of a dynamic object's hash table.
pub const DEFAULT_BUCKETS: u32 = 64;

/// The largest `buckets` accepted (ipfw's `DN_MAX_HASH_SIZE`).
pub const MAX_BUCKETS: u32 = 65_536;

/// Instances allowed per bucket before new keys overflow (dummynet's
/// `dn_max_ratio`): a dynamic object holds at most `16 × buckets`
/// instances, 1024 by default.
pub const INSTANCES_PER_BUCKET: u32 = 16;

/// The most instances a dynamic object with `buckets` buckets holds.
pub fn max_instances(buckets: u32) -> u32 {
    buckets
        .clamp(1, MAX_BUCKETS)
        .saturating_mul(INSTANCES_PER_BUCKET)
}

/// The bits of a flow key that identify an instance. `Default` is the
/// zero mask: one instance for all packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowMask {
    /// Mask of the IP protocol number.
    pub proto: u8,
    /// Mask of an IPv4 source address (`0xffffffff`: every bit).
    pub src_ip: u32,
    /// Mask of an IPv4 destination address.
    pub dst_ip: u32,
    /// Prefix length kept of an IPv6 source address (`0..=128`).
    pub src_ip6: u8,
    /// Prefix length kept of an IPv6 destination address (`0..=128`).
    pub dst_ip6: u8,
    /// Mask of the source port.
    pub src_port: u16,
    /// Mask of the destination port.
    pub dst_port: u16,
}

impl FlowMask {
    /// ipfw's `mask all`: every bit of the 5-tuple.
    pub const ALL: FlowMask = FlowMask {
        proto: 0xff,
        src_ip: u32::MAX,
        dst_ip: u32::MAX,
        src_ip6: 128,
        dst_ip6: 128,
        src_port: u16::MAX,
        dst_port: u16::MAX,
    };

    /// True when the mask keeps no bit (a single instance).
    pub fn is_zero(&self) -> bool {
        *self == FlowMask::default()
    }

    /// The most distinct keys the mask can give: `2^b` for the `b` bits
    /// it keeps of an IPv4 key plus `2^b` for those of an IPv6 key (the
    /// families never share an instance; a non-IP frame's key is an IPv4
    /// one), saturating at `u64::MAX`.
    pub fn max_keys(&self) -> u64 {
        let ports =
            self.proto.count_ones() + self.src_port.count_ones() + self.dst_port.count_ones();
        let v4 = ports + self.src_ip.count_ones() + self.dst_ip.count_ones();
        let v6 = ports + u32::from(self.src_ip6.min(128)) + u32::from(self.dst_ip6.min(128));
        let pow = |b: u32| 1u64.checked_shl(b).filter(|_| b < 64).unwrap_or(u64::MAX);
        pow(v4).saturating_add(pow(v6))
    }

    /// The most instances a dynamic object with this mask and `buckets`
    /// buckets can hold at once: its distinct keys up to
    /// [`max_instances`]`(buckets)`, plus the shared overflow instance
    /// when there can be more keys than that (see `crate::engine`). What
    /// a mask can grow to, for whoever bounds memory.
    pub fn instance_bound(&self, buckets: u32) -> u64 {
        let table = u64::from(max_instances(buckets));
        let keys = self.max_keys();
        if keys > table {
            table + 1
        } else {
            keys
        }
    }

    /// The masked key: the identity of `key`'s instance.
    #[inline]
    pub fn apply(&self, key: &FlowKey) -> FlowKey {
        FlowKey {
            proto: key.proto & self.proto,
            src: mask_addr(key.src, self.src_ip, self.src_ip6),
            dst: mask_addr(key.dst, self.dst_ip, self.dst_ip6),
            sport: key.sport & self.src_port,
            dport: key.dport & self.dst_port,
        }
    }
}

#[inline]
fn mask_addr(a: IpAddr, v4: u32, v6_len: u8) -> IpAddr {
    match a {
        IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a) & v4)),
        IpAddr::V6(a) => {
            let bits = match v6_len.min(128) {
                0 => 0,
                n => u128::MAX << (128 - n as u32),
            };
            IpAddr::V6(Ipv6Addr::from(u128::from(a) & bits))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(src: &str, dst: &str, sport: u16, dport: u16) -> FlowKey {
        FlowKey {
            proto: 17,
            src: src.parse().expect("address"),
            dst: dst.parse().expect("address"),
            sport,
            dport,
        }
    }

    #[test]
    fn src_ip_low_byte_groups_by_last_octet() {
        let m = FlowMask {
            src_ip: 0x0000_00ff,
            ..FlowMask::default()
        };
        let a = m.apply(&key("10.0.1.7", "10.0.0.2", 1, 2));
        let b = m.apply(&key("10.9.9.7", "10.0.0.3", 3, 4));
        let c = m.apply(&key("10.0.1.8", "10.0.0.2", 1, 2));
        assert_eq!(a, b, "same last octet, same instance");
        assert_ne!(a, c);
        assert_eq!(a.src, "0.0.0.7".parse::<IpAddr>().expect("address"));
        assert_eq!((a.proto, a.sport, a.dport), (0, 0, 0));
    }

    /// A pass proves the bound on instances counts what a mask can tell
    /// apart, up to the table's bound and its overflow instance.
    #[test]
    fn instance_bound_counts_keys_up_to_the_table() {
        let low_byte = FlowMask {
            src_ip: 0x0000_00ff,
            ..FlowMask::default()
        };
        // 256 IPv4 keys, 1 IPv6 key (no IPv6 bit kept).
        assert_eq!(low_byte.max_keys(), 257);
        assert_eq!(low_byte.instance_bound(64), 257);
        assert_eq!(low_byte.instance_bound(8), 8 * 16 + 1);
        assert_eq!(FlowMask::default().instance_bound(64), 2);
        assert_eq!(FlowMask::ALL.max_keys(), u64::MAX);
        assert_eq!(FlowMask::ALL.instance_bound(65_536), 1_048_577);
        assert_eq!(FlowMask::ALL.instance_bound(0), 17);
        let port_bit = FlowMask {
            dst_port: 1,
            ..FlowMask::default()
        };
        assert_eq!(port_bit.instance_bound(65_536), 4);
    }

    #[test]
    fn ipv6_prefix_and_family_are_kept() {
        let m = FlowMask {
            src_ip6: 64,
            ..FlowMask::default()
        };
        let a = m.apply(&key("2001:db8:0:1::5", "::1", 0, 0));
        assert_eq!(a.src, "2001:db8:0:1::".parse::<IpAddr>().expect("address"));
        let v4 = FlowMask::default().apply(&key("10.0.0.1", "10.0.0.2", 0, 0));
        let v6 = FlowMask::default().apply(&key("::1", "::2", 0, 0));
        assert_ne!(v4, v6, "families never share an instance");
        assert_eq!(FlowMask::ALL.apply(&key("::1", "::2", 5, 6)).sport, 5);
    }
}
