//! Per-packet cost of the emulation core around the engine, in virtual
//! time: what a packet pays for the port plan, the rules and the stage
//! bookkeeping beside what the bare engine costs for the same pipe.
//!
//! * `engine/pipe`: the baseline — one 1000-byte packet through one
//!   10 Mbit/s, 20 ms pipe, straight into the engine (as the engine's own
//!   `pipe/1` bench).
//! * `emu/one_rule`: the same pipe reached through `Emulation::ingress`
//!   and one rule (`add 100 pipe 1 ip from any to any`).
//! * `emu/shell`: a shell's two rules (`out` → pipe 1, `in` → pipe 2),
//!   half the packets each way.
//! * `emu/one_pass_0`: two pipes chained by reinjection (`one_pass 0`).
//! * `emu/path_4`: a topology's path of 4 pipes (ModelNet's per-hop cost).
//!
//! Each iteration is one packet, in steady state (delay lines full).

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use pipelab_classify::{Direction, PacketView};
use pipelab_emu::{
    lower_config, Compiled, Departure, Destinations, Emulation, Paths, PipeDef, PortDef, Spec,
    TOPO_PIPE_BASE,
};
use pipelab_engine::config::{PipeConfig, QueueLimit};
use pipelab_engine::engine::{EngineOptions, Output};
use pipelab_engine::{Duration, Engine, FlowKey, Instant, Packet, Rate, RouteId};
use pipelab_lang::Config;
use std::net::{IpAddr, Ipv4Addr};

/// One packet every 800 µs: exactly the pipe's rate.
const GAP: u64 = 800_000;

fn cfg() -> PipeConfig {
    PipeConfig::new(
        Rate(10_000_000),
        Duration::from_millis(20),
        QueueLimit::Slots(1000),
    )
    .expect("config")
}

fn key(dst: u8) -> FlowKey {
    FlowKey {
        proto: 17,
        src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
        dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, dst)),
        sport: 1000,
        dport: 5001,
    }
}

struct Bare {
    engine: Engine,
    route: RouteId,
    t: u64,
    out: Vec<Output>,
}

impl Bare {
    fn new() -> Bare {
        let mut engine = Engine::default();
        let p = engine.add_pipe(cfg());
        let route = engine.pipe_route(p).expect("route");
        let mut b = Bare {
            engine,
            route,
            t: 0,
            out: Vec::with_capacity(4096),
        };
        for _ in 0..100_000 {
            b.step();
        }
        b
    }

    #[inline]
    fn step(&mut self) {
        self.t += GAP;
        let now = Instant(self.t);
        self.engine.advance(now, &mut self.out);
        self.out.clear();
        let mut p = Packet::new(1000);
        p.born = now;
        black_box(self.engine.enqueue(now, p, self.route));
    }
}

struct Emu {
    emu: Emulation,
    t: u64,
    k: u64,
    ports: u16,
    dst: u8,
    out: Vec<Departure>,
}

fn view(p: &Packet) -> PacketView {
    PacketView::ip(p.key, p.len)
}

impl Emu {
    fn new(spec: Spec, dst: u8) -> Emu {
        let ports = spec.ports.len() as u16;
        let c = Compiled::new(spec, 1).expect("spec");
        let mut emu = Emulation::new(EngineOptions::default());
        emu.apply(c);
        let mut e = Emu {
            emu,
            t: 0,
            k: 0,
            ports,
            dst,
            out: Vec::with_capacity(4096),
        };
        for _ in 0..100_000 {
            e.step();
        }
        e
    }

    fn from_config(text: &str, ports: Vec<PortDef>) -> Emu {
        let mut c = Config::new();
        c.apply_script(text).expect("config");
        let mut spec = lower_config(&c, &mut |_| Err(String::new())).expect("lower");
        spec.ports = ports;
        Emu::new(spec, 2)
    }

    #[inline]
    fn step(&mut self) {
        self.t += GAP;
        self.k += 1;
        let now = Instant(self.t);
        self.emu.advance(now, &mut self.out, &mut view);
        self.out.clear();
        let mut p = Packet::new(1000);
        p.born = now;
        p.key = key(self.dst);
        let mut v = view(&p);
        let port = (self.k % self.ports as u64) as u16;
        black_box(self.emu.ingress(now, p, port, &mut v));
    }
}

fn path_spec(hops: u32) -> Spec {
    let mut s = Spec::default();
    let pipes: Vec<u32> = (0..hops).map(|i| TOPO_PIPE_BASE + i).collect();
    for &n in &pipes {
        s.pipes.insert(n, PipeDef::plain(cfg()));
    }
    let mut paths = Paths::new(
        2,
        Destinations::Range {
            base: Ipv4Addr::new(10, 0, 0, 1),
            base6: None,
            count: 2,
        },
    );
    paths.set(0, 1, Some(&pipes));
    s.paths = Some(paths);
    s.ports = Spec::vn_ports(2, &[]);
    // Only port 0 sends (to 10.0.0.2, port 1).
    s.ports.truncate(2);
    s
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("emulation");
    g.throughput(Throughput::Elements(1));
    let mut b = Bare::new();
    g.bench_function("engine/pipe", |x| x.iter(|| b.step()));
    let one = Spec::single_port("sim", Some(Direction::In));
    let mut e = Emu::from_config(
        "pipe 1 config bw 10Mbit/s delay 20ms queue 1000\nadd 100 pipe 1 ip from any to any\n",
        one.clone(),
    );
    g.bench_function("emu/one_rule", |x| x.iter(|| e.step()));
    let mut e = Emu::from_config(
        "pipe 1 config bw 10Mbit/s delay 20ms queue 1000\npipe 2 config bw 10Mbit/s delay 20ms queue 1000\n\
         add 65000 pipe 1 ip from any to any out\nadd 65010 pipe 2 ip from any to any in\n",
        Spec::two_ports(("inside", Some(Direction::Out)), ("outside", Some(Direction::In))),
    );
    g.bench_function("emu/shell", |x| x.iter(|| e.step()));
    let mut e = Emu::from_config(
        "pipe 1 config bw 10Mbit/s delay 20ms queue 1000\npipe 2 config delay 5ms queue 1000\n\
         add 100 pipe 1 ip from any to any\nadd 200 pipe 2 ip from any to any\nset one_pass 0\n",
        one,
    );
    g.bench_function("emu/one_pass_0", |x| x.iter(|| e.step()));
    let mut e = Emu::new(path_spec(4), 2);
    e.ports = 1;
    g.bench_function("emu/path_4", |x| x.iter(|| e.step()));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
