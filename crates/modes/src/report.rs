//! What every live mode reports of its emulation, in one shape: the
//! counters of each rule and each flow queue (`--stats` files, a
//! topology's `status`, the control protocol's `stats`).

use pipelab_emu::Emulation;
use serde::Serialize;

/// Counters of one flow queue over the run (all its instances).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct QueueCounters {
    /// The queue's number.
    pub id: u32,
    /// Packets offered to it.
    pub arrivals: u64,
    /// Packets it dropped because an instance was full.
    pub drops: u64,
    /// Packets its queue management (RED, GRED, CoDel, PIE) dropped.
    pub aqm_drops: u64,
    /// Packets its scheduler served.
    pub served: u64,
    /// Bytes its scheduler served.
    pub served_bytes: u64,
    /// Instances created so far (one per masked key; 1 without a mask).
    pub instances: u64,
}

/// Per-rule counters: (number, packets, bytes), the default rule last.
pub fn rule_counters(emu: &Emulation) -> Vec<(u32, u64, u64)> {
    emu.rules()
        .map(|(n, _, c)| (n, c.packets, c.bytes))
        .collect()
}

/// Counters of every flow queue (`queue N`), in number order.
pub fn queue_counters(emu: &Emulation) -> Vec<QueueCounters> {
    emu.queue_numbers()
        .filter_map(|id| {
            let st = emu.queue_stats(emu.queue(id)?)?;
            let f = st.flows;
            Some(QueueCounters {
                id,
                arrivals: f.arrivals,
                drops: f.drops,
                aqm_drops: f.aqm_drops,
                served: f.served,
                served_bytes: f.served_bytes,
                instances: st.instances.created,
            })
        })
        .collect()
}

/// One pipe's counters (a dynamic pipe's totals over its instances).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PipeCounters {
    /// The pipe's number.
    pub number: u32,
    /// Packets that arrived (accepted or not).
    pub arrivals: u64,
    /// Bytes that arrived.
    pub arrival_bytes: u64,
    /// Packets that left the delay line.
    pub departures: u64,
    /// Bytes that left the delay line.
    pub departure_bytes: u64,
    /// Dropped at a full queue.
    pub drops: u64,
    /// Dropped by the loss model.
    pub loss_drops: u64,
    /// Dropped by queue management.
    pub aqm_drops: u64,
    /// Copies made by duplication.
    pub duplicated: u64,
    /// Packets queued now.
    pub backlog: u32,
    /// Packets in the delay line now.
    pub in_delay_line: u32,
}

/// Counters of every pipe of the configuration (below the topology's
/// numbers), in number order.
pub fn pipe_counters(emu: &Emulation) -> Vec<PipeCounters> {
    emu.pipe_numbers()
        .take_while(|&n| n < pipelab_emu::TOPO_PIPE_BASE)
        .filter_map(|number| {
            let t = emu.pipe_totals(number)?;
            Some(PipeCounters {
                number,
                arrivals: t.arrivals,
                arrival_bytes: t.arrival_bytes,
                departures: t.departures,
                departure_bytes: t.departure_bytes,
                drops: t.drops,
                loss_drops: t.loss_drops,
                aqm_drops: t.aqm_drops,
                duplicated: t.duplicated,
                backlog: t.backlog,
                in_delay_line: t.in_delay_line,
            })
        })
        .collect()
}

/// The counters of a runner's emulation in the control protocol's stats
/// format (`pipelab_control`'s "The stats format"): `plane` (the mode),
/// `pipes`, `rules`, `queues`, `runner` (the accounting) and `lateness`.
pub fn stats_json(mode: &str, r: &pipelab_io::runner::Runner) -> serde_json::Value {
    let e = r.emulation();
    serde_json::json!({
        "plane": mode,
        "pipes": pipe_counters(e),
        "rules": rule_counters(e),
        "queues": queue_counters(e),
        "runner": r.stats(),
        "lateness": r.lateness(),
        "seed": e.seed(),
    })
}
