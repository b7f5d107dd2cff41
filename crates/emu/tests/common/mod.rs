//! Pieces of topology specs the emulation's tests share.

use pipelab_emu::{Destinations, Paths, PipeDef, Spec, TOPO_PIPE_BASE};
use pipelab_engine::config::QueueLimit;
use pipelab_engine::{Duration, PipeConfig, Rate};
use std::net::Ipv4Addr;

/// Add topology pipes `TOPO_PIPE_BASE + i` to `s`, one per delay: 10
/// Mbit/s, a 50-slot queue.
pub fn add_plain_pipes(s: &mut Spec, delays_ms: &[u64]) {
    for (i, d) in delays_ms.iter().enumerate() {
        let cfg = PipeConfig::new(
            Rate::from_bps(10_000_000),
            Duration::from_millis(*d),
            QueueLimit::Slots(50),
        )
        .expect("valid");
        s.pipes
            .insert(TOPO_PIPE_BASE + i as u32, PipeDef::plain(cfg));
    }
}

/// Paths between `n` VNs, 10.0.0.1 and on, none set yet.
pub fn vn_paths(n: usize) -> Paths {
    Paths::new(
        n,
        Destinations::Range {
            base: Ipv4Addr::new(10, 0, 0, 1),
            base6: None,
            count: n as u32,
        },
    )
}
