//! Per-packet cost of the engine in virtual time (issue: foundation).
//!
//! * `pipe/1`: enqueue + advance of one packet through one pipe
//!   (10 Mbit/s, 20 ms), in steady state with the pipe backlogged.
//! * `pipe/1_of_1000`: the same through one of 1000 backlogged pipes, so the
//!   deadline heap holds 1000 entries (Dummynet's O(log N) term).
//! * `route/H`: one packet through a route of H pipes (ModelNet's per-hop cost).
//!
//! Each iteration is one packet (criterion reports time per packet); a
//! packet-hop is one enqueue, one transmission and one delay-line exit.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pipelab_engine::config::{PipeConfig, QueueLimit};
use pipelab_engine::engine::Output;
use pipelab_engine::{Duration, Engine, Instant, Packet, Rate, RouteId};

fn cfg() -> PipeConfig {
    PipeConfig::new(
        Rate(10_000_000),
        Duration::from_millis(20),
        QueueLimit::Slots(1000),
    )
    .expect("config")
}

fn wireless_cfg() -> PipeConfig {
    // wireless 802.11b rate 11Mbit/s snr 8dB netload 1% collision 0.06
    let w = pipelab_engine::models::WirelessConfig::new(
        pipelab_engine::models::Standard::B,
        Rate(11_000_000),
    )
    .and_then(|w| w.with_snr_db(8.0))
    .and_then(|w| w.with_netload(0.01))
    .and_then(|w| w.with_collision(0.06))
    .expect("wireless");
    PipeConfig::new(
        Rate::UNLIMITED,
        Duration::from_millis(2),
        QueueLimit::Slots(1000),
    )
    .and_then(|c| c.with_wireless(w))
    .expect("config")
}

/// Offer one 1000-byte packet every `gap` ns round-robin over `routes`,
/// advancing the engine to each arrival; returns the closure state.
struct Driver {
    engine: Engine,
    routes: Vec<RouteId>,
    t: u64,
    gap: u64,
    k: usize,
    out: Vec<Output>,
}

impl Driver {
    fn new(pipes: usize, hops: usize, gap: u64) -> Driver {
        Driver::with(pipes, hops, gap, cfg)
    }

    fn with(pipes: usize, hops: usize, gap: u64, cfg: fn() -> PipeConfig) -> Driver {
        let mut engine = Engine::default();
        let ids: Vec<_> = (0..pipes * hops).map(|_| engine.add_pipe(cfg())).collect();
        let routes = ids
            .chunks(hops)
            .map(|c| engine.add_route(c).expect("route"))
            .collect();
        let mut d = Driver {
            engine,
            routes,
            t: 0,
            gap,
            k: 0,
            out: Vec::with_capacity(4096),
        };
        // Warm up to steady state: fill the delay lines.
        for _ in 0..200_000 {
            d.step();
        }
        d
    }

    #[inline]
    fn step(&mut self) {
        self.t += self.gap;
        let now = Instant(self.t);
        self.engine.advance(now, &mut self.out);
        self.out.clear();
        let r = self.routes[self.k];
        self.k += 1;
        if self.k == self.routes.len() {
            self.k = 0;
        }
        black_box(self.engine.enqueue(now, Packet::new(1000), r));
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("pipe");
    g.throughput(Throughput::Elements(1));
    // One pipe at 10 Mbit/s serves 1250 pps; offer exactly that (800 us gap)
    // so the pipe is busy and never drops.
    let mut one = Driver::new(1, 1, 800_000);
    g.bench_function("1", |b| b.iter(|| one.step()));
    // 1000 pipes, each offered 1250 pps: a packet every 800 ns overall.
    let mut many = Driver::new(1000, 1, 800);
    g.bench_function("1_of_1000", |b| b.iter(|| many.step()));
    // An 802.11b 11 Mbit/s channel with noise and collisions (PER table
    // lookup, backoff and fate draws per attempt), offered ~1 packet per
    // airtime (1000 B: ~1.0 ms per attempt).
    let mut radio = Driver::with(1, 1, 1_100_000, wireless_cfg);
    g.bench_function("wireless_802.11b", |b| b.iter(|| radio.step()));
    g.finish();

    let mut g = c.benchmark_group("route");
    g.throughput(Throughput::Elements(1));
    for hops in [1usize, 2, 4, 8] {
        let mut d = Driver::new(1, hops, 800_000);
        g.bench_with_input(BenchmarkId::from_parameter(hops), &hops, |b, _| {
            b.iter(|| d.step())
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches, flow_benches);

/// dummynet-revisited §4.2's "a pipe with 1 and 1000 flows": one
/// scheduled pipe (DRR and WF2Q+) whose packets come from 1 or 1000 flow
/// queues, round robin, at the link's rate.
mod flows {
    use super::*;
    use pipelab_engine::engine::QueueId;
    use pipelab_engine::sched::{FlowSpec, SchedConfig, SchedKind};

    pub struct FlowDriver {
        engine: Engine,
        queues: Vec<QueueId>,
        t: u64,
        k: usize,
        out: Vec<Output>,
    }

    impl FlowDriver {
        pub fn new(kind: SchedKind, flows: usize) -> FlowDriver {
            let mut engine = Engine::default();
            let p = engine.add_scheduled_pipe(cfg(), SchedConfig::of(kind), 1);
            let queues = (0..flows)
                .map(|_| {
                    let spec = FlowSpec::new(1, QueueLimit::Slots(100)).expect("spec");
                    engine.add_queue(p, spec, None, 1).expect("queue")
                })
                .collect();
            let mut d = FlowDriver {
                engine,
                queues,
                t: 0,
                k: 0,
                out: Vec::with_capacity(4096),
            };
            for _ in 0..100_000 {
                d.step();
            }
            d
        }

        #[inline]
        pub fn step(&mut self) {
            self.t += 800_000;
            let now = Instant(self.t);
            self.engine.advance(now, &mut self.out);
            self.out.clear();
            let q = self.queues[self.k];
            self.k = (self.k + 1) % self.queues.len();
            black_box(self.engine.enqueue_to_queue(now, Packet::new(1000), q));
        }
    }
}

fn bench_flows(c: &mut Criterion) {
    use pipelab_engine::sched::SchedKind;
    let mut g = c.benchmark_group("sched");
    g.throughput(Throughput::Elements(1));
    for (name, kind) in [("drr", SchedKind::Drr), ("wf2q+", SchedKind::Wf2q)] {
        for n in [1usize, 1000] {
            let mut d = flows::FlowDriver::new(kind, n);
            g.bench_function(format!("{name}/{n}_flows"), |b| b.iter(|| d.step()));
        }
    }
    g.finish();
}

criterion_group!(flow_benches, bench_flows);
