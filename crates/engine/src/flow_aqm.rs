//! Queue management on one flow queue instance (ipfw `queue N config ...
//! red|gred|codel|pie`): the models of [`crate::models`] run on the
//! instance's own backlog and sojourn times, as dummynet runs a flowset's
//! RED (`red_drops` on `q->ni.length`) or AQM module per queue
//! (dummynet-revisited §3.5–3.6; FreeBSD `ip_dn_io.c`, `dn_aqm_codel.c`,
//! `dn_aqm_pie.c`).
//!
//! * RED/GRED decide when a packet arrives at the instance, on the average
//!   of the packets (or bytes) waiting in it; an empty instance decays the
//!   average for the time since it last emptied (dummynet's `q_time`).
//! * PIE decides at arrival too, on the instance's queue delay: Linux's
//!   default estimate, the sojourn of the last packet the link took from the
//!   instance, 0 when it left the instance empty.
//! * CoDel decides when the scheduler takes a packet from the instance, on
//!   that packet's sojourn in the instance and the bytes waiting behind it
//!   there; the scheduler then takes the instance's next packet
//!   (`Scheduler::dequeue_with`).
//!
//! The pipe owns the state (one per instance, in its slot) and does the
//! counting and the ECN marking; this module holds the decisions. Random
//! draws come from the instance's own stream, seeded from the pipe's stage,
//! the queue and the instance's number, so that instances never share one.

use crate::config::Aqm;
use crate::models::{Codel, Pie, QueueMeasure, Red};
use crate::pipe::LINK_MTU;
use crate::rng::{mix64, stage_rng, StageKind};
use crate::time::{Duration, Instant};

/// The model of one instance. RED's decay table makes its variant the
/// largest; the whole state is boxed once in its slot, so it is not boxed
/// again here.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
enum Model {
    Red(Red),
    Codel(Codel),
    Pie(Pie),
}

/// The queue management state of one flow queue instance.
#[derive(Clone, Debug)]
pub(crate) struct FlowAqm {
    cfg: Aqm,
    ecn: bool,
    model: Model,
    /// When the instance last became empty (RED's idle decay).
    idle_since: Instant,
    /// PIE's queue delay estimate.
    last_qdelay: Duration,
}

/// The stream id of the queue management of instance `n` of queue `q` in
/// the pipe (or pipe instance) of stage `stage`.
pub(crate) fn stage_id(stage: u64, q: u32, n: u64) -> u64 {
    stage ^ mix64(((q as u64 + 1) << 40) ^ n)
}

impl FlowAqm {
    /// Fresh state for `cfg`, created at `now` (an empty instance), drawing
    /// from stream `(seed, Aqm, id)`.
    pub fn new(cfg: Aqm, ecn: bool, seed: u64, id: u64, now: Instant) -> FlowAqm {
        let rng = || stage_rng(seed, StageKind::Aqm, id);
        let model = match cfg {
            Aqm::Red(r) => Model::Red(Red::new(r, rng())),
            Aqm::Codel(c) => Model::Codel(Codel::new(c)),
            Aqm::Pie(p) => Model::Pie(Pie::new(p, rng())),
        };
        FlowAqm {
            cfg,
            ecn,
            model,
            idle_since: now,
            last_qdelay: Duration::ZERO,
        }
    }

    /// The configuration it runs.
    pub fn config(&self) -> &Aqm {
        &self.cfg
    }

    /// Change the `ecn` switch; the model's state stands.
    pub fn set_ecn(&mut self, on: bool) {
        self.ecn = on;
    }

    /// Mark ECN-capable packets instead of dropping them.
    #[inline]
    pub fn ecn(&self) -> bool {
        self.ecn
    }

    /// Does it decide at dequeue (CoDel)?
    pub fn at_dequeue(&self) -> bool {
        matches!(self.model, Model::Codel(_))
    }

    /// RED/GRED or PIE's verdict on a packet of `len` bytes arriving at
    /// `now` at an instance holding `pkts` packets and `bytes` bytes:
    /// `true` = drop it (or mark it). `pkt_tx` is the transmission time of
    /// RED's typical packet at the link rate.
    #[inline]
    pub fn on_arrival(
        &mut self,
        now: Instant,
        len: u32,
        pkts: u32,
        bytes: u64,
        pkt_tx: Duration,
    ) -> bool {
        match &mut self.model {
            Model::Red(r) => {
                let q = match r.config().measure() {
                    QueueMeasure::Slots => pkts as u64,
                    QueueMeasure::Bytes => bytes,
                };
                let idle_since = (pkts == 0).then_some(self.idle_since);
                r.on_enqueue(now, q, len, idle_since, pkt_tx)
            }
            Model::Pie(p) => p.on_enqueue(now, self.last_qdelay, bytes, LINK_MTU),
            Model::Codel(_) => false,
        }
    }

    /// CoDel's verdict on the packet the scheduler takes from the instance
    /// at `now`, after `sojourn` in it, with `behind` bytes waiting behind
    /// it there: `true` = drop it (or mark it). Never true with `behind`
    /// at most one MTU, so an instance's last packet is never taken.
    #[inline]
    pub fn on_head(&mut self, now: Instant, sojourn: Duration, behind: u64) -> bool {
        match &mut self.model {
            Model::Codel(c) => c.on_dequeue(now, sojourn, behind, LINK_MTU),
            _ => false,
        }
    }

    /// The link took a packet from the instance at `now` after `sojourn`,
    /// leaving `left` packets in it.
    #[inline]
    pub fn on_served(&mut self, now: Instant, sojourn: Duration, left: u32) {
        self.last_qdelay = if left > 0 { sojourn } else { Duration::ZERO };
        if left == 0 {
            self.idle_since = now;
        }
    }

    /// A packet left the instance otherwise (dropped at its head), leaving
    /// `left` packets.
    #[inline]
    pub fn on_removed(&mut self, now: Instant, left: u32) {
        if left == 0 {
            self.idle_since = now;
        }
    }
}
