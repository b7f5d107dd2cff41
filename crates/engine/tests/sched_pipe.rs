//! The engine's scheduled and dynamic pipes against the plain pipe
//! (dummynet-revisited §3.1, §3.6).

use pipelab_engine::engine::{Fate, Output};
use pipelab_engine::sched::{FlowSpec, SchedConfig, SchedKind};
use pipelab_engine::{
    Duration, Engine, EngineOptions, FlowKey, FlowMask, Instant, Packet, PipeConfig, QueueLimit,
    Rate,
};
use std::net::{IpAddr, Ipv4Addr};

fn pkt(i: u64, src: u8) -> Packet {
    Packet {
        tag: i,
        key: FlowKey {
            proto: 17,
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, src)),
            ..FlowKey::default()
        },
        ..Packet::new(1000 + (i % 7) as u32 * 50)
    }
}

/// Drive `n` packets, one every 500 µs, from 3 sources into the pipe's
/// route, and collect every output.
fn drive(e: &mut Engine, route: pipelab_engine::RouteId, n: u64) -> Vec<Output> {
    let mut out = Vec::new();
    for i in 0..n {
        let t = Instant::ZERO + Duration::from_micros(500 * i);
        e.advance(t, &mut out);
        let _ = e.enqueue(t, pkt(i, (i % 3) as u8 + 1), route);
    }
    while let Some(t) = e.next_deadline() {
        e.advance(t, &mut out);
    }
    out
}

fn cfg_slots(n: u32) -> PipeConfig {
    PipeConfig::new(
        Rate::from_bps(10_000_000),
        Duration::from_millis(5),
        QueueLimit::Slots(n),
    )
    .expect("valid")
}

fn cfg() -> PipeConfig {
    cfg_slots(20)
}

/// A pipe with a FIFO scheduler (its default queue: weight 1, the pipe's
/// limit of 20) delivers and drops exactly what a plain pipe of 21 slots
/// does, at the same nanoseconds: a plain pipe's queue counts the packet
/// on the wire, a flow queue only the packets waiting (the scheduler
/// hands the packet it sends to the link, as in dummynet). A pass proves
/// the scheduler path keeps the pipe's timing and tail drop exactly.
#[test]
fn fifo_scheduled_pipe_matches_plain_pipe_bit_for_bit() {
    let mut plain = Engine::new(EngineOptions::default());
    let p = plain.add_pipe_with_stage(cfg_slots(21), 1);
    let mut sched = Engine::new(EngineOptions::default());
    let s = sched.add_scheduled_pipe(cfg(), SchedConfig::default(), 1);
    let (rp, rs) = (plain.pipe_route(p), sched.pipe_route(s));
    let a = drive(&mut plain, rp.expect("route"), 2000);
    let b = drive(&mut sched, rs.expect("route"), 2000);
    if let Some(i) = (0..a.len().min(b.len())).find(|&i| a[i] != b[i]) {
        panic!("first difference at {i}: {:?} vs {:?}", a[i], b[i]);
    }
    assert_eq!(a.len(), b.len());
    let (sa, sb) = (
        plain.pipe_stats(p).expect("p"),
        sched.pipe_stats(s).expect("s"),
    );
    assert_eq!(
        (sa.arrivals, sa.departures, sa.drops, sa.max_backlog),
        (sb.arrivals, sb.departures, sb.drops, sb.max_backlog)
    );
    assert!(sa.drops > 0, "the run overflows the queue");
    let q = sched.default_queue(s).expect("default queue");
    let qs = sched.queue_stats(q).expect("stats");
    assert_eq!((qs.flows.arrivals, qs.flows.drops), (sb.arrivals, sb.drops));
}

/// A masked queue on a DRR pipe makes one instance per source; a masked
/// pipe makes one pipe instance per source, and its totals add up.
#[test]
fn masks_make_instances_per_source() {
    let mut e = Engine::new(EngineOptions::default());
    let s = e.add_scheduled_pipe(cfg(), SchedConfig::of(SchedKind::Drr), 1);
    let mask = FlowMask {
        src_ip: u32::MAX,
        ..FlowMask::default()
    };
    let q = e
        .add_queue(s, FlowSpec::default(), Some(mask), 1024)
        .expect("queue");
    let mut out = Vec::new();
    for i in 0..30u64 {
        let t = Instant::ZERO + Duration::from_micros(500 * i);
        e.advance(t, &mut out);
        e.enqueue_to_queue(t, pkt(i, (i % 3) as u8 + 1), q);
    }
    let st = e.queue_stats(q).expect("stats");
    assert_eq!((st.instances.live, st.instances.created), (3, 3));
    assert_eq!(st.flows.arrivals, 30);

    let mut d = Engine::new(EngineOptions::default());
    let p = d.add_pipe_with_stage(cfg(), 2);
    d.set_pipe_mask(p, mask, 2).expect("mask");
    let r = d.pipe_route(p).expect("route");
    let out = drive(&mut d, r, 30);
    let inst = d.pipe_instances(p).expect("dynamic");
    assert_eq!(
        (inst.created, inst.live),
        (3, 3),
        "2 + the overflow instance"
    );
    assert_eq!(inst.overflow, 10, "every packet of the third source");
    let tot = d.pipe_totals(p).expect("totals");
    assert_eq!(tot.arrivals, 30);
    assert_eq!(
        tot.departures as usize,
        out.iter().filter(|o| o.fate == Fate::Delivered).count()
    );
    assert!(out.iter().all(|o| match o.fate {
        Fate::Dropped { pipe, .. } => pipe == p,
        _ => true,
    }));
}
