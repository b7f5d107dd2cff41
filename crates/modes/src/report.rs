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
