//! Fuzz the topology readers with distillation and assignment: any text,
//! read as GML and as TOML, that parses must distil in every mode and be
//! assigned to cores by both methods, or be refused with an error, never
//! panic; the pipes come in reverse pairs, and every pipe gets a core.
//!
//! Bounded per input: topologies of more than 300 nodes or links are
//! left out (the readers still run on them), so that the all-pairs work
//! of distillation stays within milliseconds; the limit on pairs itself
//! (`distill::MAX_PAIRS`) has tests of its own.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipelab_topo::assign::{greedy_k_clusters, partition_balanced};
use pipelab_topo::{distill, parse_gml, parse_toml, Mode, Topology};

fn check(t: &Topology) {
    if t.nodes.len() > 300 || t.links.len() > 300 {
        return;
    }
    for mode in [
        Mode::HopByHop,
        Mode::EndToEnd,
        Mode::LastMile,
        Mode::WalkIn(2),
        Mode::WalkOut {
            walk_in: 1,
            walk_out: 1,
        },
    ] {
        let Ok(d) = distill(t, mode) else {
            continue;
        };
        assert_eq!(d.pipes.len() % 2, 0, "{mode}: pipes in pairs");
        for pair in d.pipes.chunks(2) {
            assert_eq!((pair[0].from, pair[0].to), (pair[1].to, pair[1].from), "{mode}");
        }
        let _ = d.stats();
        for k in [1, 3] {
            for a in [greedy_k_clusters(&d, k, 1), partition_balanced(&d, k, 1)] {
                assert_eq!(a.core_of_pipe.len(), d.pipes.len(), "{mode}");
                assert!(a.core_of_pipe.iter().all(|&c| (c as usize) < k), "{mode}");
                let _ = a.cross_fraction(&d.routes);
                let _ = a.handoffs(&d.routes);
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(t) = parse_gml(text) {
        check(&t);
    }
    if let Ok(t) = parse_toml(text) {
        check(&t);
    }
});
