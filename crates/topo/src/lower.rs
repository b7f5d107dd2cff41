//! The Binding phase's last step (ModelNet §2.1, §2.2): a distilled
//! topology lowered to the one emulation spec, so packets cross the
//! emulated topology by reference through the same
//! [`pipelab_emu::Emulation`] as every other mode, in virtual time (tests,
//! what-if studies) or real time (`topo up`).
//!
//! Distilled pipe `i` becomes spec pipe [`TOPO_PIPE_BASE`]` + i`, its
//! random stages seeded from that number (stable however many pipes there
//! are). Port `k` is the `k`-th VN (in [`RouteMatrix`](crate::RouteMatrix)
//! order); frames from it leave by the port of their destination address,
//! across the pipes of the pair's route.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use crate::linkset::loss_probability;
use crate::route::PathCache;
use pipelab_emu::{Destinations, PathSource, Paths, PipeDef, Spec, TOPO_PIPE_BASE};
use pipelab_engine::{Duration, PipeConfig, QueueLimit, Rate};

use crate::attrs::{link_pipe, FileReader};
use crate::cross::loaded;
use crate::distill::{Distilled, PipeSpec};
use crate::model::{FileTexts, PipeWords};
use crate::TopoError;

/// The language's pipe spec of a link direction: its bandwidth, delay,
/// loss and queue, and its pipe words ([`crate::attrs`]). An unlimited
/// bandwidth and a zero loss are left unset, so that the words that
/// replace them (`bw trace:`, netem's `rate`, a loss model) are not
/// refused as combined with them.
pub fn pipe_spec(
    bw: Rate,
    delay: Duration,
    loss: f64,
    queue: QueueLimit,
    words: &PipeWords,
) -> pipelab_lang::PipeSpec {
    let mut spec = words.clone();
    spec.bw = (!bw.is_unlimited()).then_some(bw);
    spec.delay = Some(delay);
    spec.queue = Some(queue);
    spec.plr = (loss > 0.0).then(|| loss_probability(loss));
    spec
}

/// The engine configuration of one distilled pipe, built by
/// [`crate::attrs::link_pipe`] (the one way a link's words become an
/// engine configuration), the files its words name served from `files`
/// (read with the topology: no file is read here).
pub fn pipe_config(p: &PipeSpec, files: &FileTexts) -> Result<PipeConfig, TopoError> {
    let mut reader = FileReader::new(files, None);
    link_pipe(p.bw, p.delay, p.loss, p.queue, &p.words, &mut reader)
        .map_err(|e| TopoError::Engine(e.to_string()))
}

/// The spec number of distilled pipe `i`.
pub fn pipe_number(i: u32) -> u32 {
    TOPO_PIPE_BASE + i
}

/// The spec of `d` with VN `k` (in route-matrix order) at address
/// `base + k` and, on a dual-stack topology, `base6 + k` (`None`: IPv4
/// only), named `names[k]`, and `loads[p]` bit/s of synthetic cross
/// traffic on pipe `p` (ModelNet §4.3; empty: none). Packets to either of
/// a VN's addresses take the same path. Rules see a VN's frames as
/// `out`, received on its port (`recv NAME`) and to be sent on the
/// destination's (`xmit NAME`).
pub fn lower(
    d: &Distilled,
    names: &[String],
    base: Ipv4Addr,
    base6: Option<Ipv6Addr>,
    loads: &[u64],
) -> Result<Spec, TopoError> {
    lower_with(d, names, base, base6, loads, None)
}

/// [`lower`] with paths on demand: the spec's paths hold no pair and ask
/// `cache` for each pair the first time a packet needs it
/// ([`pipelab_emu::Paths::on_demand`]); `cache` must route over `d`'s
/// pipes ([`crate::Network::path_cache`] of the network `d` is of). A
/// live topology whose VNs may send to any other, most never do.
pub fn lower_on_demand(
    d: &Distilled,
    names: &[String],
    base: Ipv4Addr,
    base6: Option<Ipv6Addr>,
    loads: &[u64],
    cache: Arc<PathCache>,
) -> Result<Spec, TopoError> {
    lower_with(d, names, base, base6, loads, Some(cache))
}

impl PathSource for PathCache {
    /// The route of the VN pair (by port, which is VN position) as spec
    /// pipe numbers ([`pipe_number`]).
    fn path(&self, src: usize, dst: usize) -> Option<Vec<u32>> {
        let r = self.route(src, dst);
        (!r.is_empty()).then(|| r.iter().map(|&p| pipe_number(p)).collect())
    }
}

fn lower_with(
    d: &Distilled,
    names: &[String],
    base: Ipv4Addr,
    base6: Option<Ipv6Addr>,
    loads: &[u64],
    cache: Option<Arc<PathCache>>,
) -> Result<Spec, TopoError> {
    let vns = d.routes.vns();
    let n = vns.len();
    let mut spec = Spec::default();
    for (i, p) in d.pipes.iter().enumerate() {
        let load = loads.get(i).copied().unwrap_or(0);
        let cfg = if p.up && load > 0 {
            pipe_config(&loaded(p, load), &d.files)?
        } else {
            pipe_config(p, &d.files)?
        };
        spec.pipes
            .insert(pipe_number(i as u32), PipeDef::plain(cfg));
    }
    let dest = Destinations::Range {
        base,
        base6,
        count: n as u32,
    };
    // The spec numbers of a route's pipes, in `hops`.
    fn numbered<'a>(r: &[u32], hops: &'a mut Vec<u32>) -> &'a [u32] {
        hops.clear();
        hops.extend(r.iter().map(|&p| pipe_number(p)));
        hops
    }
    let mut hops = Vec::new();
    let paths = if let Some(cache) = cache {
        Paths::on_demand(n, dest, cache)
    } else if d.routes.is_partial() {
        // The pairs routed, each held (with no path if it has no route).
        let mut paths = Paths::only(n, dest);
        for (sv, tv, r) in d.routes.held() {
            if let (Some(s), Some(t)) = (d.routes.position(sv), d.routes.position(tv)) {
                paths.set(s, t, Some(numbered(r, &mut hops)));
            }
        }
        paths
    } else {
        let mut paths = Paths::new(n, dest);
        for (s, &sv) in vns.iter().enumerate() {
            for (t, &tv) in vns.iter().enumerate() {
                let route = d.routes.route(sv, tv).map(|r| numbered(r, &mut hops));
                paths.set(s, t, route);
            }
        }
        paths
    };
    spec.paths = Some(paths);
    spec.ports = Spec::vn_ports(n, names);
    for (k, p) in spec.ports.iter().enumerate() {
        spec.env.ifaces.insert(p.name.clone(), k as u32);
    }
    Ok(spec)
}

/// How a report names each pipe of `d`'s spec (by spec number): its ends
/// and its parameters as lowered (with `loads[p]` bit/s of cross traffic,
/// as [`lower`] takes them), e.g. `r0 -> r1 bw 100Mbit/s delay 5ms queue
/// 50`.
pub fn pipe_texts(
    topo: &crate::Topology,
    d: &Distilled,
    loads: &[u64],
) -> std::collections::BTreeMap<u32, String> {
    d.pipes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let load = loads.get(i).copied().unwrap_or(0);
            let q = if p.up && load > 0 {
                loaded(p, load)
            } else {
                p.clone()
            };
            let mut text = format!(
                "{} -> {} bw {} delay {} queue {}",
                topo.node_name(p.from),
                topo.node_name(p.to),
                q.bw,
                q.delay,
                match q.queue {
                    pipelab_engine::config::QueueLimit::Slots(n) => n.to_string(),
                    pipelab_engine::config::QueueLimit::Bytes(b) => format!("{b}B"),
                }
            );
            if q.loss > 0.0 {
                text.push_str(&format!(" loss {}%", q.loss * 100.0));
            }
            if q.words != PipeWords::default() {
                text.push_str(&format!(" {}", q.words));
            }
            if !p.up {
                text.push_str(" down");
            }
            (pipe_number(i as u32), text)
        })
        .collect()
}

/// The partition of `d`'s spec pipes (by spec number) over `k` workers:
/// ModelNet's assignment refined to cut fewer route hand-offs
/// ([`crate::assign::partition_balanced`], weighted by route usage).
pub fn partition_hint(d: &Distilled, k: usize, seed: u64) -> std::collections::BTreeMap<u32, u32> {
    let a = crate::assign::partition_balanced(d, k, seed);
    a.core_of_pipe
        .iter()
        .enumerate()
        .map(|(i, &c)| (pipe_number(i as u32), c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distill::{distill, Mode};
    use crate::model::{Link, LinkAttrs, Role, Topology};
    use pipelab_classify::PacketView;
    use pipelab_emu::{Emulation, Exit, Ingress, Reason};
    use pipelab_engine::{EngineOptions, FlowKey, Instant, Packet};
    use std::net::IpAddr;

    /// a — r — b and r — s — c: one-way delays 10 ms from a to r, 3 ms
    /// from r to b, 1 ms from r to s and from s to c, all at 1 Gb/s.
    fn tree() -> Topology {
        let mut t = Topology::new();
        let a = t.add_node(Role::Client, "a");
        let r = t.add_node(Role::Stub, "r");
        let b = t.add_node(Role::Client, "b");
        let s = t.add_node(Role::Stub, "s");
        let c = t.add_node(Role::Client, "c");
        for (x, y, ms) in [(a, r, 10), (r, b, 3), (r, s, 1), (s, c, 1)] {
            t.links.push(Link::with_attrs(
                x,
                y,
                &LinkAttrs::new(Rate::from_bps(1_000_000_000), Duration::from_millis(ms)),
            ));
        }
        t
    }

    /// Send one 1000-byte UDP packet from port `from` to `dst` at 1 s;
    /// returns its fate at once, and where and after how long it left.
    fn send(spec: &Spec, from: u16, dst: IpAddr) -> (Ingress, Option<(u16, Duration)>) {
        let mut e = Emulation::with_spec(spec.clone(), EngineOptions::default()).expect("spec");
        let start = Instant(1_000_000_000);
        let mut p = Packet::new(1000);
        p.born = start;
        let src = match dst {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        };
        p.key = FlowKey {
            proto: 17,
            src,
            dst,
            ..FlowKey::default()
        };
        let mut view = PacketView::ip(p.key, p.len);
        let fate = e.ingress(start, p, from, &mut view);
        let mut out = Vec::new();
        let mut views = |p: &Packet| PacketView::ip(p.key, p.len);
        while let Some(t) = e.next_deadline() {
            e.advance(t, &mut out, &mut views);
        }
        let left = out.iter().find_map(|o| match o.exit {
            Exit::Deliver { port } => Some((port, o.at.saturating_since(start))),
            _ => None,
        });
        (fate, left)
    }

    /// A pass proves that on a dual-stack topology VN `k`'s IPv6 address
    /// `base6 + k` is steered to VN `k`'s port across the same pipes as
    /// its IPv4 address `base + k` (the same exact delay: the route's
    /// delays plus one 8 µs transmission per hop at 1 Gb/s), and that an
    /// IPv6 destination outside the topology is dropped for want of a
    /// route, as an IPv4 one is.
    #[test]
    fn ipv6_destinations_take_their_vns_path() {
        let t = tree();
        let d = distill(&t, Mode::HopByHop).expect("distils");
        assert_eq!(d.routes.vns().len(), 3);
        let base = Ipv4Addr::new(10, 0, 0, 1);
        let base6: Ipv6Addr = "fd12:3456:789a:4000::1".parse().expect("v6");
        let spec = lower(&d, &[], base, Some(base6), &[]).expect("lowers");
        let v4 = |k: u32| IpAddr::V4(Ipv4Addr::from(u32::from(base) + k));
        let v6 = |k: u128| IpAddr::V6(Ipv6Addr::from(u128::from(base6) + k));
        // a (port 0) to b (port 1): 10 + 3 ms and two transmissions; to
        // c (port 2): 12 ms and three.
        for (k, want) in [(1u16, 13_016_000u64), (2, 12_024_000)] {
            let by4 = send(&spec, 0, v4(u32::from(k)));
            let by6 = send(&spec, 0, v6(u128::from(k)));
            assert_eq!(
                by4,
                (Ingress::Queued, Some((k, Duration::from_nanos(want))))
            );
            assert_eq!(by6, by4, "IPv6 to VN {k}");
        }
        // Back from c to a, by IPv6.
        assert_eq!(
            send(&spec, 2, v6(0)),
            (Ingress::Queued, Some((0, Duration::from_nanos(12_024_000))))
        );
        // Outside the topology: past the last VN, another /64, below the
        // first VN; and without a base6, every IPv6 destination.
        let dropped = (Ingress::Dropped(Reason::NoRoute), None);
        assert_eq!(send(&spec, 0, v4(3)), dropped);
        for dst in [
            "fd12:3456:789a:4000::4",
            "fd12:3456:789a:4001::2",
            "fd12:3456:789a:4000::",
        ] {
            assert_eq!(send(&spec, 0, dst.parse().expect("v6")), dropped, "{dst}");
        }
        let v4_only = lower(&d, &[], base, None, &[]).expect("lowers");
        assert_eq!(send(&v4_only, 0, v6(1)), dropped);
        assert_eq!(
            send(&v4_only, 0, v4(1)).1,
            Some((1, Duration::from_nanos(13_016_000)))
        );
    }
    /// a — r1 — r2 — b (1 ms each) with a detour r1 — r3 — r2 (5 ms
    /// each) and c on r3 (1 ms); all at 1 Gb/s.
    fn detour() -> Topology {
        let mut t = Topology::new();
        let a = t.add_node(Role::Client, "a");
        let r1 = t.add_node(Role::Stub, "r1");
        let r2 = t.add_node(Role::Stub, "r2");
        let b = t.add_node(Role::Client, "b");
        let r3 = t.add_node(Role::Stub, "r3");
        let c = t.add_node(Role::Client, "c");
        for (x, y, ms) in [
            (a, r1, 1),
            (r1, r2, 1),
            (r2, b, 1),
            (r1, r3, 5),
            (r3, r2, 5),
            (r3, c, 1),
        ] {
            t.links.push(Link::with_attrs(
                x,
                y,
                &LinkAttrs::new(Rate::from_bps(1_000_000_000), Duration::from_millis(ms)),
            ));
        }
        t
    }

    /// A 1000-byte UDP packet to VN `k` (10.0.0.1 + k), sent at `at`.
    fn udp_to(k: u32, at: Instant) -> Packet {
        let mut p = Packet::new(1000);
        p.born = at;
        p.tag = u64::from(k);
        p.key = FlowKey {
            proto: 17,
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            dst: IpAddr::V4(Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 0, 0, 1)) + k)),
            ..FlowKey::default()
        };
        p
    }

    /// A pass proves paths on demand behave as a live topology needs: a
    /// pair's route is asked for at its first packet (the cache holds
    /// nothing before); after a failure on it (the network takes in the
    /// pairs in use, re-routes them, and a new cache serves the new spec)
    /// only the pair whose path changed is swapped, the packet already
    /// inside finishes on the route it entered (3 hops of 1 ms), and the
    /// next one takes the detour (1 + 5 + 5 + 1 ms).
    #[test]
    fn paths_on_demand_follow_faults_and_queued_packets_keep_their_route() {
        use crate::route::{Metric, Network, Routes};
        use std::sync::Arc;
        let mut net =
            Network::on_demand(detour(), Mode::HopByHop, Metric::Delay, Routes::Symmetric)
                .expect("network");
        let base = Ipv4Addr::new(10, 0, 0, 1);
        let cache = Arc::new(net.path_cache());
        let spec =
            lower_on_demand(net.distilled(), &[], base, None, &[], cache.clone()).expect("lowers");
        assert!(cache.is_empty());
        let mut e = Emulation::with_spec(spec, EngineOptions::default()).expect("spec");
        let mut out = Vec::new();
        let mut views = |p: &Packet| PacketView::ip(p.key, p.len);
        let t0 = Instant(1_000_000_000);
        for k in [1, 2] {
            let p = udp_to(k, t0);
            let mut v = PacketView::ip(p.key, p.len);
            assert_eq!(e.ingress(t0, p, 0, &mut v), Ingress::Queued);
        }
        // a -> b and a -> c, and (symmetric) their reverses.
        assert_eq!(cache.len(), 4);
        e.advance(t0 + Duration::from_micros(500), &mut out, &mut views);
        assert!(out.is_empty());
        assert_eq!(net.learn(&cache), 4);
        let (a, b) = (0, 3);
        let change = net.link_down(1, 2).expect("down");
        assert_eq!(change.routes, vec![(a, b), (b, a)]);
        assert_eq!(change.recomputed, 2, "only the pairs that crossed r1-r2");
        let cache = Arc::new(net.path_cache());
        let spec =
            lower_on_demand(net.distilled(), &[], base, None, &[], cache.clone()).expect("lowers");
        let applied = e.apply(pipelab_emu::Compiled::new(spec, 1).expect("compiles"));
        assert_eq!(applied.paths_changed, 1, "a -> b; a -> c is as it was");
        let t1 = t0 + Duration::from_millis(1);
        let p = udp_to(1, t1);
        let mut v = PacketView::ip(p.key, p.len);
        assert_eq!(e.ingress(t1, p, 0, &mut v), Ingress::Queued);
        while let Some(t) = e.next_deadline() {
            e.advance(t, &mut out, &mut views);
        }
        let left: Vec<(u64, Duration)> = out
            .iter()
            .map(|o| (o.pkt.tag, o.at.saturating_since(o.pkt.born)))
            .collect();
        // 8 µs per hop at 1 Gb/s; a -> c waits 8 µs more on a -> r1
        // behind a -> b, sent at the same instant.
        assert_eq!(
            left,
            vec![
                (1, Duration::from_nanos(3_024_000)),
                (2, Duration::from_nanos(7_032_000)),
                (1, Duration::from_nanos(12_032_000)),
            ]
        );
    }
}
