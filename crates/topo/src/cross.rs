//! Synthetic cross traffic (ModelNet §4.3): a matrix of bandwidth demands
//! between VN pairs is propagated through the routes to a load on every
//! pipe, and each loaded pipe gets the parameters a flow would see when
//! competing with that load, from a simple analytical queueing model.
//! No packet of cross traffic is ever made: the cost does not grow with
//! the cross-traffic rate.
//!
//! # The queueing model
//! A pipe of capacity `C` bit/s carrying cross traffic of `λ` bit/s is an
//! M/M/1 queue with utilisation `ρ = λ/C` and mean packet size `S` (1500
//! bytes, so one service time is `s = 8·S/C`). The emulated flow sees:
//!
//! * **bandwidth** `C·(1 − ρ)`: what the cross traffic leaves;
//! * **delay** `d + ρ/(1 − ρ)·s`: the M/M/1 mean waiting time `W_q`
//!   added to the propagation delay;
//! * **queue** `Q − ⌈L_q⌉` slots (at least 1), `L_q = ρ²/(1 − ρ)` the
//!   mean number of cross-traffic packets waiting, or `Q − ⌈L_q⌉·S` bytes
//!   (at least `S`): the buffer the cross traffic holds on average.
//!
//! `ρ` is capped at [`RHO_MAX`] = 0.95: an overloaded link still gives
//! the emulated flow 5 % of its capacity and a finite delay, rather than
//! none (the cross traffic is not responsive to congestion, as in
//! ModelNet, so the error grows with the utilisation). A pipe with
//! unlimited bandwidth is not affected.
//!
//! # Demand matrices
//! A matrix is written `SRC DST RATE [SRC DST RATE ...]` (VNs by name or
//! id, rates with a unit), a `cross` command of the topology command
//! grammar ([`crate::command`], which parses and resolves it to
//! [`Demand`]s); the running emulator takes one with `cross ...`
//! (replacing the previous one; `cross clear` ends it), and an
//! experiment file gives one per time step:
//!
//! ```text
//! 0s   cross c1 c7 500Kbit/s c2 c9 1Mbit/s
//! 10s  cross c1 c7 2Mbit/s
//! 20s  cross clear
//! ```
//!
//! Loads follow the routes in force: after a fault reroutes a pair, its
//! demand loads the new path.

use pipelab_engine::config::QueueLimit;
use pipelab_engine::{Duration, Rate};

use crate::distill::{Distilled, PipeSpec};

/// The largest utilisation the model gives a pipe.
pub const RHO_MAX: f64 = 0.95;

/// Mean packet size of the cross traffic, bytes.
pub const MEAN_PACKET: u64 = 1500;

/// One demand: `rate` from VN `src` to VN `dst` (topology node indices).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Demand {
    /// Source VN (node index).
    pub src: usize,
    /// Destination VN (node index).
    pub dst: usize,
    /// Offered rate.
    pub rate: Rate,
}

/// The load on each directed pipe (bit/s) of `d` from `demands`: each
/// demand adds its rate to every pipe of its route. Pairs without a route
/// (partitioned by faults) carry nothing.
pub fn pipe_loads(d: &Distilled, demands: &[Demand]) -> Vec<u64> {
    let mut load = vec![0u64; d.pipes.len()];
    for dm in demands {
        if let Some(route) = d.routes.route(dm.src, dm.dst) {
            for &p in route {
                if let Some(l) = load.get_mut(p as usize) {
                    *l = l.saturating_add(dm.rate.bps());
                }
            }
        }
    }
    load
}

/// The parameters of pipe `p` under a cross load of `load` bit/s (module
/// documentation). Returns `p` unchanged without load or bandwidth limit.
pub fn loaded(p: &PipeSpec, load: u64) -> PipeSpec {
    let c = p.bw.bps();
    if load == 0 || p.bw.is_unlimited() || c == 0 {
        return p.clone();
    }
    let rho = (load as f64 / c as f64).min(RHO_MAX);
    let mut out = p.clone();
    out.bw = Rate(((c as f64) * (1.0 - rho)).round().max(1.0) as u64);
    let service_ns = (MEAN_PACKET * 8) as f64 * 1e9 / c as f64;
    let wait = rho / (1.0 - rho) * service_ns;
    out.delay = p.delay + Duration(wait.round() as u64);
    let lq = (rho * rho / (1.0 - rho)).ceil() as u64;
    out.queue = match p.queue {
        QueueLimit::Slots(n) => QueueLimit::Slots((n as u64).saturating_sub(lq).max(1) as u32),
        QueueLimit::Bytes(b) => {
            QueueLimit::Bytes(b.saturating_sub(lq * MEAN_PACKET).max(MEAN_PACKET.min(b)))
        }
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{parse_command, Resolved};
    use crate::distill::Mode;
    use crate::gen;
    use crate::model::Topology;
    use crate::route::{Metric, Network};

    fn dumbbell() -> Topology {
        match gen::dumbbell(2, 2, &crate::model::RoleAttrs::default()) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    fn spec(bw: u64, delay_ms: u64, queue: QueueLimit) -> PipeSpec {
        PipeSpec {
            from: 0,
            to: 1,
            bw: Rate(bw),
            delay: Duration::from_millis(delay_ms),
            loss: 0.0,
            queue,
            words: Default::default(),
            hops: 1,
            up: true,
        }
    }

    /// Pass proves: the M/M/1 figures of the module documentation, at
    /// ρ = 0.5 on 10 Mbit/s (W_q = 1.2 ms, L_q = 0.5 → 1 slot) and at the
    /// cap (ρ = 0.95 for any overload).
    #[test]
    fn mm1_parameters() {
        let p = spec(10_000_000, 5, QueueLimit::Slots(50));
        let l = loaded(&p, 5_000_000);
        assert_eq!(l.bw, Rate(5_000_000));
        assert_eq!(
            l.delay,
            Duration::from_millis(5) + Duration::from_micros(1200)
        );
        assert_eq!(l.queue, QueueLimit::Slots(49));
        let over = loaded(&p, 50_000_000);
        assert_eq!(over.bw, Rate(500_000));
        // W_q = 19 · 1.2 ms = 22.8 ms; L_q = 0.9025/0.05 = 18.05 → 19.
        assert_eq!(
            over.delay,
            Duration::from_millis(5) + Duration::from_micros(22_800)
        );
        assert_eq!(over.queue, QueueLimit::Slots(31));
        let bytes = loaded(&spec(10_000_000, 0, QueueLimit::Bytes(3000)), 9_000_000);
        assert_eq!(bytes.queue, QueueLimit::Bytes(1500));
        assert_eq!(loaded(&p, 0), p);
        let unlimited = spec(0, 1, QueueLimit::Slots(5));
        assert_eq!(loaded(&unlimited, 1_000_000), unlimited);
    }

    /// Pass proves: demands add up on every pipe of their routes, in the
    /// direction they flow: on a dumbbell, two flows from the left to the
    /// right share the bottleneck's left-to-right pipe (sum), its reverse
    /// pipe carries nothing, each access pipe carries its own flow.
    #[test]
    fn loads_follow_the_routes() {
        let topo = dumbbell();
        let net = match Network::new(topo, Mode::HopByHop, Metric::Delay) {
            Ok(n) => n,
            Err(e) => panic!("{e}"),
        };
        let t = net.topology();
        let vns = t.vns();
        let name = |i: usize| t.nodes[vns[i]].name.clone();
        let (a, b, c, d) = (name(0), name(1), name(2), name(3));
        let line = format!("cross {a} {c} 2Mbit/s {b} {d} 3Mbit/s");
        let dm = match parse_command(&line).map(|c| c.resolve(t)) {
            Ok(Ok(Resolved::Cross(d))) => d,
            other => panic!("{line}: {other:?}"),
        };
        let dist = net.distilled();
        let loads = pipe_loads(dist, &dm);
        let r1 = dist
            .routes
            .route(dm[0].src, dm[0].dst)
            .unwrap_or(&[])
            .to_vec();
        let r2 = dist
            .routes
            .route(dm[1].src, dm[1].dst)
            .unwrap_or(&[])
            .to_vec();
        let shared: Vec<u32> = r1.iter().copied().filter(|p| r2.contains(p)).collect();
        assert!(!shared.is_empty(), "the flows share the bottleneck");
        for &p in &shared {
            assert_eq!(loads[p as usize], 5_000_000);
            assert_eq!(loads[(p ^ 1) as usize], 0, "reverse direction");
        }
        for &p in r1.iter().filter(|p| !shared.contains(p)) {
            assert_eq!(loads[p as usize], 2_000_000);
        }
        let total: u64 = loads.iter().sum();
        assert_eq!(
            total,
            2_000_000 * r1.len() as u64 + 3_000_000 * r2.len() as u64
        );
    }
}
