//! Per-interval series of a run (`pipelab sim --interval D`): what each
//! pipe and each flow did in every interval `[k·D, (k+1)·D)` of virtual
//! time, exactly, for graphs over time (Mahimahi's throughput and delay
//! graphs, `pipelab plot`).
//!
//! * **Flows** are counted by the driver from the packets' fates: a
//!   packet is *sent* in the interval of its birth, *received* (with its
//!   one-way delay) or *dropped* (by reason) in the interval of its exit.
//! * **Pipes** are sampled by the worker that owns them: at each
//!   interval's end, every event before it done and none at it, the
//!   pipe's counters ([`pipelab_engine::PipeStats`]) are read after
//!   [`pipelab_emu::Emulation::settle_before`]; an interval's counts are
//!   the differences of two samples, its backlog the queue at its end.
//!   Sampling reads, it decides nothing: the rest of the report is the
//!   same with or without `--interval` (a test checks it).
//! * **Capacity** comes from the pipe's configuration, not from the
//!   packets: a fixed rate as configured; a Mahimahi trace (`bw trace:`)
//!   as the bytes of the delivery opportunities that fall in the interval
//!   (idle opportunities included: capacity is what the link offered);
//!   a time-varying graph (`timevarying`) as the time-weighted mean of
//!   its states' rates over the interval, from a copy of the walk the
//!   pipe takes (the same seeded stream, so the same states at the same
//!   instants). `null` where the link has no rate of its own (unlimited,
//!   or a state that is) or a per-packet one (`wireless`, `profile`), and
//!   for a dynamic pipe with a time-varying graph (each instance walks
//!   its own).
//!
//! Rates are bits per second over the whole interval (`bytes·8/D`), the
//! last interval included (it ends after the last event).

use pipelab_engine::models::timevarying::TimeVarying;
use pipelab_engine::rng::{stage_rng, StageKind};
use pipelab_engine::{Instant, PipeConfig, PipeStats};

pub use pipelab_emu::series::{Capacity, FlowBucket, FlowInterval, IntervalDelay, PipeInterval};

/// The most intervals a run may be cut into (`--interval` against the
/// traffic's length).
pub const MAX_INTERVALS: u64 = 1_000_000;

/// The bucket of instant `t` in `buckets`, grown to hold it.
pub(crate) fn bucket(
    buckets: &mut Vec<FlowBucket>,
    t: Instant,
    interval_ns: u64,
) -> &mut FlowBucket {
    let k = (t.as_nanos() / interval_ns) as usize;
    if buckets.len() <= k {
        buckets.resize(k + 1, FlowBucket::default());
    }
    &mut buckets[k]
}

/// The intervals of a pipe from its samples (one per interval end) and
/// capacities (one per interval).
pub(crate) fn pipe_intervals(
    samples: &[PipeStats],
    capacity: &[Option<f64>],
    interval_ns: u64,
) -> Vec<PipeInterval> {
    let zero = PipeStats::default();
    samples
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let p = if k == 0 { &zero } else { &samples[k - 1] };
            let t_s = k as f64 * interval_ns as f64 / 1e9;
            PipeInterval::between(t_s, interval_ns, p, s, capacity.get(k).copied().flatten())
        })
        .collect()
}

/// The capacity of pipe `number` (configured as `cfg`, in a run seeded
/// `seed`) in each of `n` intervals of `interval_ns`; `dynamic` for a
/// pipe with a mask.
pub(crate) fn capacity(
    cfg: &PipeConfig,
    number: u32,
    seed: u64,
    dynamic: bool,
    n: usize,
    interval_ns: u64,
) -> Vec<Option<f64>> {
    let per_s = 1e9 / interval_ns as f64;
    if cfg.wireless().is_some() || cfg.profile().is_some() {
        return vec![None; n];
    }
    if let cap @ Capacity::Trace(_) = Capacity::of(cfg) {
        return (0..n as u64)
            .map(|k| {
                cap.over(
                    k.saturating_mul(interval_ns),
                    (k + 1).saturating_mul(interval_ns),
                )
            })
            .collect();
    }
    let base = cfg.link_rate();
    if let Some(graph) = cfg.timevarying() {
        if dynamic {
            return vec![None; n];
        }
        let rates: Vec<Option<u64>> = (0..graph.len())
            .map(|i| {
                let r = graph.params(i).bandwidth.unwrap_or(base);
                (!r.is_unlimited()).then(|| r.bps())
            })
            .collect();
        // The pipe's own walk: the same graph, stream and start
        // (`Channel::for_config`).
        let seed = cfg.seed().unwrap_or(seed);
        let mut walk = TimeVarying::new(
            graph.clone(),
            stage_rng(seed, StageKind::Variation, number as u64),
            Instant::ZERO,
        );
        return (0..n as u64)
            .map(|k| {
                let a = k.saturating_mul(interval_ns);
                let b = a.saturating_add(interval_ns);
                let (mut t, mut bits) = (a, 0u128);
                while t < b {
                    let (state, until) = walk.state_at(Instant(t));
                    let end = until.as_nanos().clamp(t + 1, b);
                    bits += rates[state]? as u128 * (end - t) as u128;
                    t = end;
                }
                Some(bits as f64 / 1e9 * per_s)
            })
            .collect();
    }
    if base.is_unlimited() {
        return vec![None; n];
    }
    vec![Some(base.bps() as f64); n]
}
