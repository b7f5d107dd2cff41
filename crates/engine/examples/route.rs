//! One 1000-byte packet every 800 µs through a route of H pipes (10
//! Mbit/s, 20 ms: each pipe busy, none dropping), N times: the `route/H`
//! case of `benches/pipe.rs` as a plain program, for an instruction
//! count that the machine's noise does not move
//! (`benches/instructions.sh` runs it under `cachegrind`).
//!
//! Usage: `route H N` (default 8 and 1000000); prints the packets still
//! inside at the end.

use pipelab_engine::config::{PipeConfig, QueueLimit};
use pipelab_engine::engine::Output;
use pipelab_engine::{Duration, Engine, Instant, Packet, Rate};
use std::process::ExitCode;

fn arg(i: usize, default: u64) -> Result<u64, String> {
    match std::env::args().nth(i) {
        None => Ok(default),
        Some(s) => s
            .parse()
            .map_err(|_| format!("argument {i}: '{s}' is not a number")),
    }
}

fn run() -> Result<u32, String> {
    let hops = arg(1, 8)?.clamp(1, 1000) as usize;
    let n = arg(2, 1_000_000)?;
    let cfg = PipeConfig::new(
        Rate(10_000_000),
        Duration::from_millis(20),
        QueueLimit::Slots(1000),
    )
    .map_err(|e| e.to_string())?;
    let mut engine = Engine::default();
    let pipes: Vec<_> = (0..hops).map(|_| engine.add_pipe(cfg.clone())).collect();
    let route = engine.add_route(&pipes).map_err(|e| e.to_string())?;
    let mut out: Vec<Output> = Vec::with_capacity(4096);
    let mut t = 0u64;
    for _ in 0..n {
        t += 800_000;
        engine.advance(Instant(t), &mut out);
        out.clear();
        std::hint::black_box(engine.enqueue(Instant(t), Packet::new(1000), route));
    }
    Ok(engine.in_flight())
}

fn main() -> ExitCode {
    match run() {
        Ok(inside) => {
            println!("{inside} packets inside");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("route: {e}");
            ExitCode::FAILURE
        }
    }
}
