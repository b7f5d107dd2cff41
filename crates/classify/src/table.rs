//! Lookup tables: longest-prefix match in one binary search.
//!
//! ipfw's tables (dummynet-revisited §4.2 gives a lookup cost of
//! 220 ns + 11 ns·log E on a radix tree) map addresses and networks to a
//! value, which the `tablearg` actions use (the PlanetLab per-user pipe
//! dispatch, planetlab-dummynet-emulation §3.6).
//!
//! Design: prefixes form a laminar family (two prefixes are nested or
//! disjoint), so the address line splits into at most `2E + 1` intervals,
//! each covered by one longest prefix (or none). [`LpmTable::new`] computes
//! those intervals once, in `O(E log E)`, with a sweep over the prefixes in
//! address order and a stack of the enclosing ones; a lookup is then one
//! binary search over the interval starts, `O(log E)` whatever the mix of
//! prefix lengths. IPv4 and IPv6 have separate interval lists. Tables are
//! immutable: a change builds a new one (configuration is swapped whole).

use pipelab_lang::IpNet;
use std::net::IpAddr;

/// One address family's intervals: `starts[i]..starts[i+1]` has value
/// `values[i]` (`None`: no prefix covers it). `starts` is strictly
/// increasing; addresses before `starts[0]` have no value.
/// Keys are `u32` for IPv4 (half the memory of `u128`, so fewer cache
/// misses per search on large tables) and `u128` for IPv6.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Intervals<K> {
    starts: Vec<K>,
    values: Vec<Option<u32>>,
}

/// An address as a number: `u32` or `u128`.
trait Key: Copy + Ord + Default {
    const MAX: Self;
    fn succ(self) -> Self;
}

impl Key for u32 {
    const MAX: u32 = u32::MAX;
    fn succ(self) -> u32 {
        self.saturating_add(1)
    }
}

impl Key for u128 {
    const MAX: u128 = u128::MAX;
    fn succ(self) -> u128 {
        self.saturating_add(1)
    }
}

impl<K: Key> Intervals<K> {
    /// `prefixes`: (first address, last address, value), any order.
    fn build(mut prefixes: Vec<(K, K, u32)>) -> Intervals<K> {
        // Outer before inner when they start together: start ascending,
        // end descending.
        prefixes.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut out = Intervals::default();
        // Enclosing prefixes of the sweep position: (last address, value).
        let mut stack: Vec<(K, u32)> = Vec::new();
        for (start, end, value) in prefixes {
            while let Some(&(top_end, _)) = stack.last() {
                if top_end >= start {
                    break;
                }
                stack.pop();
                // top_end < start <= MAX, so top_end + 1 does not overflow.
                out.emit(top_end.succ(), stack.last().map(|s| s.1));
            }
            out.emit(start, Some(value));
            stack.push((end, value));
        }
        while let Some((top_end, _)) = stack.pop() {
            if top_end < K::MAX {
                out.emit(top_end.succ(), stack.last().map(|s| s.1));
            }
        }
        out
    }

    /// Starts a new interval at `at` (the sweep only moves forward).
    fn emit(&mut self, at: K, value: Option<u32>) {
        if self.starts.last() == Some(&at) {
            if let Some(v) = self.values.last_mut() {
                *v = value;
            }
            return;
        }
        if self.values.last() == Some(&value) || (self.values.is_empty() && value.is_none()) {
            return;
        }
        self.starts.push(at);
        self.values.push(value);
    }

    #[inline]
    fn get(&self, addr: K) -> Option<u32> {
        let i = self.starts.partition_point(|&s| s <= addr);
        i.checked_sub(1)
            .and_then(|i| self.values.get(i).copied().flatten())
    }
}

/// A compiled lookup table: the value of the longest prefix containing an
/// address, in `O(log E)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LpmTable {
    v4: Intervals<u32>,
    v6: Intervals<u128>,
    len: usize,
}

impl LpmTable {
    /// Compiles `(network, value)` entries (e.g. a `Config`'s table).
    pub fn new<'a>(entries: impl IntoIterator<Item = (&'a IpNet, &'a u32)>) -> LpmTable {
        let (mut v4, mut v6) = (Vec::new(), Vec::new());
        for (net, value) in entries {
            // The host part: all ones below the prefix (none for /32, /128).
            match net.addr() {
                IpAddr::V4(a) => {
                    let lo = u32::from(a);
                    let host = u32::MAX.checked_shr(u32::from(net.prefix())).unwrap_or(0);
                    v4.push((lo, lo | host, *value));
                }
                IpAddr::V6(a) => {
                    let lo = u128::from(a);
                    let host = u128::MAX.checked_shr(u32::from(net.prefix())).unwrap_or(0);
                    v6.push((lo, lo | host, *value));
                }
            }
        }
        let len = v4.len() + v6.len();
        LpmTable {
            v4: Intervals::build(v4),
            v6: Intervals::build(v6),
            len,
        }
    }

    /// The value of the longest prefix containing `addr`, if any.
    #[inline]
    pub fn lookup(&self, addr: IpAddr) -> Option<u32> {
        match addr {
            IpAddr::V4(a) => self.v4.get(u32::from(a)),
            IpAddr::V6(a) => self.v6.get(u128::from(a)),
        }
    }

    /// The number of entries it was built from.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if it was built from no entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn net(s: &str) -> IpNet {
        let (a, p) = s.split_once('/').unwrap_or((s, ""));
        let addr: IpAddr = a.parse().expect("addr");
        let p = p.parse().unwrap_or(if addr.is_ipv4() { 32 } else { 128 });
        IpNet::new(addr, p).expect("prefix")
    }

    fn brute(t: &BTreeMap<IpNet, u32>, a: IpAddr) -> Option<u32> {
        t.iter()
            .filter(|(n, _)| n.contains(a))
            .max_by_key(|(n, _)| n.prefix())
            .map(|(_, v)| *v)
    }

    /// Nested, adjacent and edge-of-space prefixes give the longest
    /// prefix's value; outside them, nothing.
    #[test]
    fn longest_prefix_wins_at_every_edge() {
        let entries: BTreeMap<IpNet, u32> = [
            ("0.0.0.0/0", 1),
            ("10.0.0.0/8", 2),
            ("10.1.0.0/16", 3),
            ("10.1.2.3", 4),
            ("10.255.255.255", 5),
            ("255.255.255.255", 6),
            ("2001:db8::/32", 7),
            ("2001:db8::/64", 8),
        ]
        .into_iter()
        .map(|(n, v)| (net(n), v))
        .collect();
        let t = LpmTable::new(&entries);
        for a in [
            "0.0.0.0",
            "9.255.255.255",
            "10.0.0.0",
            "10.1.2.2",
            "10.1.2.3",
            "10.1.2.4",
            "10.1.255.255",
            "10.2.0.0",
            "10.255.255.254",
            "10.255.255.255",
            "11.0.0.0",
            "255.255.255.254",
            "255.255.255.255",
            "::",
            "2001:db8::1",
            "2001:db8:0:1::1",
            "2001:db9::",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        ] {
            let ip: IpAddr = a.parse().expect("addr");
            assert_eq!(t.lookup(ip), brute(&entries, ip), "{a}");
        }
        assert_eq!(
            LpmTable::default().lookup("1.2.3.4".parse().expect("a")),
            None
        );
    }

    fn arb_net() -> impl Strategy<Value = IpNet> {
        prop_oneof![
            (any::<u32>(), 0u8..=32)
                .prop_map(|(a, p)| IpNet::new(IpAddr::V4(Ipv4Addr::from(a)), p)),
            // Few distinct high bits so that prefixes nest often.
            (0u32..4, 8u8..=32).prop_map(|(a, p)| IpNet::new(
                IpAddr::V4(Ipv4Addr::from(0x0a00_0000 | (a << 22))),
                p
            )),
            (any::<u128>(), 0u8..=128)
                .prop_map(|(a, p)| IpNet::new(IpAddr::V6(Ipv6Addr::from(a)), p)),
        ]
        .prop_map(|n| n.expect("prefix in range"))
    }

    proptest! {
        /// Any small table agrees with a brute-force longest-prefix scan.
        #[test]
        fn small_tables_agree_with_brute_force(
            entries in proptest::collection::btree_map(arb_net(), any::<u32>(), 0..40),
            probes in proptest::collection::vec(arb_net(), 1..40),
        ) {
            let t = LpmTable::new(&entries);
            for p in probes {
                let a = p.addr();
                prop_assert_eq!(t.lookup(a), brute(&entries, a), "{}", a);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4))]

        /// A 65536-entry table (the paper's large case) agrees with a
        /// brute-force scan on random addresses, half of them in the dense
        /// region where the entries nest.
        #[test]
        fn table_of_65536_entries_agrees_with_brute_force(seed in any::<u64>()) {
            use pipelab_engine::rng::{stage_rng, StageKind};
            use rand::Rng;
            let mut rng = stage_rng(seed, StageKind::Rule, 0);
            let mut entries = BTreeMap::new();
            while entries.len() < 65_536 {
                let a: u32 = rng.gen::<u32>() & 0x0fff_ffff;
                let p: u8 = rng.gen_range(8..=32);
                if let Some(n) = IpNet::new(IpAddr::V4(a.into()), p) {
                    entries.insert(n, rng.gen());
                }
            }
            let t = LpmTable::new(&entries);
            prop_assert_eq!(t.len(), 65_536);
            // A plain scan is 65536 steps per probe: the brute force looks
            // every prefix length up in an exact-match map instead.
            let mut by_len: Vec<BTreeMap<u32, u32>> = vec![BTreeMap::new(); 33];
            for (n, v) in &entries {
                if let IpAddr::V4(a) = n.addr() {
                    by_len[n.prefix() as usize].insert(u32::from(a), *v);
                }
            }
            let scan = |a: u32| {
                (0..=32u32).rev().find_map(|l| {
                    let mask = u32::MAX.checked_shl(32 - l).unwrap_or(0);
                    by_len[l as usize].get(&(a & mask)).copied()
                })
            };
            // The indexed scan agrees with the plain scan on a sample.
            for _ in 0..20 {
                let a: u32 = rng.gen::<u32>() & 0x0fff_ffff;
                prop_assert_eq!(scan(a), brute(&entries, IpAddr::V4(a.into())));
            }
            for i in 0..50_000u32 {
                let a: u32 = if i % 2 == 0 {
                    rng.gen::<u32>() & 0x0fff_ffff
                } else {
                    rng.gen()
                };
                prop_assert_eq!(t.lookup(IpAddr::V4(a.into())), scan(a), "{:#x}", a);
            }
        }
    }
}
