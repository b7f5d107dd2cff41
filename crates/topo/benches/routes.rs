//! Routes on demand, in figures (docs/scale.md): what a live topology's
//! emulation costs per VN, per pipe and per cached route, and how long
//! the first packet of a pair waits for its route, without namespaces or
//! TAPs (the live figures are `benches/topo.sh`'s).
//!
//! 1. **First lookup.** On a star and a transit-stub of 10,000 VNs, the
//!    time of a route cache's miss (a search from one VN that stops at
//!    the other, [`pipelab_topo::PathCache::route`]) for 2000 random
//!    pairs: median, 99th percentile, largest.
//! 2. **Memory per VN and per pipe.** The heap bytes (a counting
//!    allocator) the network, its route cache, its spec and an emulation of
//!    it take, built as `topo up` builds them (routes on demand, no pair
//!    routed), for stars of 2500 to 10,000 VNs (a VN and its two pipes)
//!    and chains of 5000 to 20,000 routers (two pipes a router, two VNs).
//! 3. **Memory per cached route.** 100,000 pairs of the 10,000-VN star
//!    each send a packet through the emulation (each pair's route asked
//!    of the cache, held there and in the emulation's tables, with its
//!    engine route), then the network takes them in as before a change.
//!
//! `cargo bench -p pipelab-topo --bench routes`

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Instant;

use pipelab_classify::PacketView;
use pipelab_emu::{Compiled, Emulation, Ingress};
use pipelab_engine::rng::rng_from_seed;
use pipelab_engine::{EngineOptions, FlowKey, Packet};
use pipelab_topo::gen::{star, transit_stub, TransitStub};
use pipelab_topo::model::{Role, RoleAttrs, Topology};
use pipelab_topo::route::{Metric, Network, Routes};
use pipelab_topo::Mode;
use rand::Rng;

/// The system allocator, counting the bytes live: memory deltas that
/// freed and reused pages do not blur (as resident memory's do).
struct Counting;

static LIVE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

// SAFETY: every call is passed on to `System` unchanged; the counter is
// only read.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), std::sync::atomic::Ordering::Relaxed);
        // SAFETY: the caller's layout, passed on.
        unsafe { std::alloc::System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        LIVE.fetch_sub(l.size(), std::sync::atomic::Ordering::Relaxed);
        // SAFETY: `p` was allocated by `alloc` above with `l`.
        unsafe { std::alloc::System.dealloc(p, l) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Bytes allocated and not freed now (heap; what a process's resident
/// memory holds of it, give or take the allocator's own overhead).
fn rss() -> u64 {
    LIVE.load(std::sync::atomic::Ordering::Relaxed) as u64
}

fn mb(b: i64) -> f64 {
    b as f64 / (1 << 20) as f64
}

fn must<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

fn chain(routers: usize) -> Topology {
    let attrs = RoleAttrs::default();
    let mut t = Topology::new();
    for i in 0..routers + 2 {
        let role = if i == 0 || i == routers + 1 {
            Role::Client
        } else {
            Role::Stub
        };
        t.add_node(role, format!("n{i}"));
        if i > 0 {
            t.add_link_by_role(i - 1, i, &attrs);
        }
    }
    t
}

/// What `topo up` holds for `t` (without its namespaces): the network on
/// demand, its cache, and an emulation of its spec.
fn built(t: Topology) -> (Network, Arc<pipelab_topo::PathCache>, Emulation) {
    let net = must(Network::on_demand(
        t,
        Mode::HopByHop,
        Metric::Delay,
        Routes::Symmetric,
    ));
    let cache = Arc::new(net.path_cache());
    let spec = must(pipelab_topo::lower_on_demand(
        net.distilled(),
        &[],
        Ipv4Addr::new(10, 0, 0, 1),
        None,
        &[],
        cache.clone(),
    ));
    let mut e = Emulation::new(EngineOptions::default());
    e.apply(must(Compiled::new(spec, 1)));
    (net, cache, e)
}

fn first_lookups() {
    println!("## First lookup of a pair (route cache miss), 2000 random pairs");
    println!();
    println!("| topology | nodes | pipes | median µs | p99 µs | max µs |");
    println!("|---|---|---|---|---|---|");
    let ts = TransitStub {
        transit: 10,
        stubs: 10,
        clients: 100,
        ..TransitStub::default()
    };
    let mut rng = rng_from_seed(11);
    for (name, t) in [
        (
            "star, 10,000 VNs",
            must(star(10_000, &RoleAttrs::default())),
        ),
        ("transit-stub, 10,000 VNs", must(transit_stub(&ts))),
    ] {
        let nodes = t.nodes.len();
        let net = must(Network::on_demand(
            t,
            Mode::HopByHop,
            Metric::Delay,
            Routes::Symmetric,
        ));
        let cache = net.path_cache();
        let mut us = Vec::new();
        while us.len() < 2000 {
            let (s, d) = (rng.gen_range(0..10_000), rng.gen_range(0..10_000));
            let before = cache.computed();
            let t0 = Instant::now();
            let r = cache.route(s, d);
            let took = t0.elapsed().as_secs_f64() * 1e6;
            if cache.computed() > before && s != d {
                assert!(!r.is_empty());
                us.push(took);
            }
        }
        us.sort_by(f64::total_cmp);
        println!(
            "| {name} | {nodes} | {} | {:.1} | {:.1} | {:.1} |",
            net.distilled().pipes.len(),
            us[us.len() / 2],
            us[us.len() * 99 / 100],
            us[us.len() - 1]
        );
    }
    println!();
}

fn per_vn_and_pipe() {
    println!("## Heap bytes of a topology's emulation as `topo up` builds it (no pair routed)");
    println!();
    println!("| topology | VNs | pipes | MB | build s |");
    println!("|---|---|---|---|---|");
    let mut stars = Vec::new();
    for n in [2500, 5000, 10_000] {
        let r0 = rss();
        let t0 = Instant::now();
        let b = built(must(star(n, &RoleAttrs::default())));
        let secs = t0.elapsed().as_secs_f64();
        let used = rss() as i64 - r0 as i64;
        println!("| star | {n} | {} | {:.1} | {secs:.2} |", 2 * n, mb(used));
        stars.push((n as f64, used as f64));
        drop(b);
    }
    let mut chains = Vec::new();
    for n in [5000, 10_000, 20_000] {
        let r0 = rss();
        let t0 = Instant::now();
        let b = built(chain(n));
        let secs = t0.elapsed().as_secs_f64();
        let used = rss() as i64 - r0 as i64;
        println!(
            "| chain | 2 | {} | {:.1} | {secs:.2} |",
            2 * (n + 1),
            mb(used)
        );
        chains.push((2.0 * (n as f64 + 1.0), used as f64));
        drop(b);
    }
    let slope = |v: &[(f64, f64)]| (v[2].1 - v[0].1) / (v[2].0 - v[0].0);
    let per_pipe = slope(&chains);
    let per_star_vn = slope(&stars);
    println!();
    println!(
        "Slopes: {:.0} bytes per pipe (chains); {:.0} bytes per star VN (a VN, its port and its two pipes): {:.0} bytes per VN beyond its pipes.",
        per_pipe,
        per_star_vn,
        per_star_vn - 2.0 * per_pipe
    );
    println!();
}

fn per_route() {
    const PAIRS: usize = 100_000;
    println!("## Memory per cached route: {PAIRS} pairs of the 10,000-VN star send a packet");
    println!();
    let (mut net, cache, mut e) = built(must(star(10_000, &RoleAttrs::default())));
    let r0 = rss();
    let mut rng = rng_from_seed(3);
    let mut out = Vec::new();
    let mut views = |p: &Packet| PacketView::ip(p.key, p.len);
    let base = u32::from(Ipv4Addr::new(10, 0, 0, 1));
    let mut now = pipelab_engine::Instant(1_000_000_000);
    let mut sent = 0;
    let t0 = Instant::now();
    while sent < PAIRS {
        for _ in 0..1000 {
            let (s, d) = (rng.gen_range(0..10_000u32), rng.gen_range(0..10_000u32));
            if s == d {
                continue;
            }
            let mut p = Packet::new(100);
            p.born = now;
            p.key = FlowKey {
                proto: 17,
                src: IpAddr::V4(Ipv4Addr::from(base + s)),
                dst: IpAddr::V4(Ipv4Addr::from(base + d)),
                ..FlowKey::default()
            };
            let mut v = PacketView::ip(p.key, p.len);
            let fate = e.ingress(now, p, s as u16, &mut v);
            assert!(matches!(fate, Ingress::Queued | Ingress::Dropped(_)));
            sent += 1;
        }
        now += pipelab_engine::Duration::from_secs(1);
        e.advance(now, &mut out, &mut views);
        out.clear();
    }
    let secs = t0.elapsed().as_secs_f64();
    let held = cache.len();
    let r1 = rss();
    net.learn(&cache);
    let r2 = rss();
    println!(
        "{sent} packets of random pairs in {secs:.2} s: {held} routes in the cache (a pair and, symmetric, its reverse). Heap +{:.1} MB: **{:.0} bytes per route cached** (cache, emulation tables, engine route); the network taking them in before a change, +{:.1} MB ({:.0} bytes per route held).",
        mb(r1 as i64 - r0 as i64),
        (r1 as f64 - r0 as f64) / held.max(1) as f64,
        mb(r2 as i64 - r1 as i64),
        (r2 as f64 - r1 as f64) / held.max(1) as f64,
    );
    println!();
}

fn main() {
    // `cargo bench` passes `--bench`; anything else is ignored.
    first_lookups();
    per_vn_and_pipe();
    per_route();
}
