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

use std::net::Ipv4Addr;

use crate::linkset::loss_probability;
use pipelab_classify::Direction;
use pipelab_emu::{Destinations, Egress, Paths, PipeDef, PortDef, Spec, TOPO_PIPE_BASE};
use pipelab_engine::{Duration, PipeConfig, QueueLimit, Rate};

use crate::cross::loaded;
use crate::distill::{Distilled, PipeSpec};
use crate::model::PipeWords;
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

/// The engine configuration of one distilled pipe, built by the
/// language's builder from [`pipe_spec`] (the one way a pipe's words
/// become an engine configuration).
pub fn pipe_config(p: &PipeSpec) -> Result<PipeConfig, TopoError> {
    pipe_spec(p.bw, p.delay, p.loss, p.queue, &p.words)
        .to_config()
        .map_err(|e| TopoError::Engine(e.to_string()))
}

/// The spec number of distilled pipe `i`.
pub fn pipe_number(i: u32) -> u32 {
    TOPO_PIPE_BASE + i
}

/// The spec of `d` with VN `k` (in route-matrix order) at address
/// `base + k`, named `names[k]`, and `loads[p]` bit/s of synthetic cross
/// traffic on pipe `p` (ModelNet §4.3; empty: none). Rules see a VN's
/// frames as `out`, received on its port (`recv NAME`) and to be sent on
/// the destination's (`xmit NAME`).
pub fn lower(
    d: &Distilled,
    names: &[String],
    base: Ipv4Addr,
    loads: &[u64],
) -> Result<Spec, TopoError> {
    let vns = d.routes.vns();
    let n = vns.len();
    let mut spec = Spec::default();
    for (i, p) in d.pipes.iter().enumerate() {
        let load = loads.get(i).copied().unwrap_or(0);
        let cfg = if p.up && load > 0 {
            pipe_config(&loaded(p, load))?
        } else {
            pipe_config(p)?
        };
        spec.pipes
            .insert(pipe_number(i as u32), PipeDef::plain(cfg));
    }
    let mut paths = Paths::new(
        n,
        Destinations::V4Range {
            base,
            count: n as u32,
        },
    );
    let mut hops = Vec::new();
    for (s, &sv) in vns.iter().enumerate() {
        for (t, &tv) in vns.iter().enumerate() {
            let route = d.routes.route(sv, tv).map(|r| {
                hops.clear();
                hops.extend(r.iter().map(|&p| pipe_number(p)));
                hops.as_slice()
            });
            paths.set(s, t, route);
        }
    }
    spec.paths = Some(paths);
    spec.ports = (0..n)
        .map(|k| PortDef {
            name: names.get(k).cloned().unwrap_or_else(|| format!("vn{k}")),
            dir: Some(Direction::Out),
            iface: Some(k as u32),
            egress: Egress::ByDestination,
        })
        .collect();
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
