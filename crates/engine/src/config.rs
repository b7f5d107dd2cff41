//! Validated, immutable configuration of engine objects.
//!
//! A config is built once (by the command language or by code), checked by
//! its constructor, and then never changes: reconfiguring a pipe builds a new
//! [`PipeConfig`] and swaps it in, keeping the pipe's queued packets.

use crate::models::{
    Accounting, BurstConfig, BwTrace, CodelConfig, CorruptConfig, DelayDist, DuplicateConfig,
    LossConfig, MarkovGraph, Modulation, PieConfig, Profile, RedConfig, ReorderConfig, SlotConfig,
    SwapConfig, WirelessConfig,
};
use crate::time::{Duration, Rate};

/// Dummynet's default queue: 50 slots.
pub const DEFAULT_QUEUE_SLOTS: u32 = 50;

/// The largest queue in slots accepted (ipfw caps slots too; a larger
/// buffer is better written in bytes).
pub const MAX_QUEUE_SLOTS: u32 = 1_000_000;

/// The largest queue in bytes accepted: 4 GiB.
pub const MAX_QUEUE_BYTES: u64 = 4 << 30;

/// How much a pipe's queue may hold before arriving packets are dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueLimit {
    /// At most this many packets (ipfw `queue 20`).
    Slots(u32),
    /// At most this many bytes (ipfw `queue 100KB`).
    Bytes(u64),
}

impl Default for QueueLimit {
    fn default() -> Self {
        QueueLimit::Slots(DEFAULT_QUEUE_SLOTS)
    }
}

impl QueueLimit {
    /// Would a queue holding `pkts` packets and `bytes` bytes accept one
    /// more packet of `len` bytes?
    #[inline]
    pub fn admits(self, pkts: u32, bytes: u64, len: u32) -> bool {
        match self {
            QueueLimit::Slots(n) => pkts < n,
            QueueLimit::Bytes(b) => bytes + len as u64 <= b,
        }
    }
}

/// A configuration error: which parameter, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The parameter's name in the command language (`queue`, `bw`, ...).
    pub param: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.param, self.reason)
    }
}

impl std::error::Error for ConfigError {}

/// Whether delay jitter may reorder packets.
///
/// The default is netem's (`Allow`): jitter is written with netem's words
/// (`delay MU SIGMA`), so it means what netem makes of it, each packet
/// delayed by its own draw. `Keep` raises the mean: a packet that drew a
/// short delay waits for the one ahead (at 1000 pps, `delay 100ms 10ms
/// distribution normal` gives a mean of about 112 ms instead of 100 ms).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum JitterOrder {
    /// A packet never leaves before the one ahead of it (NetPath's
    /// head-of-line behaviour): its exit is `max(own due, previous exit)`.
    Keep,
    /// Each packet leaves at its own due time, so jitter larger than the
    /// gap between packets reorders them (netem's behaviour, its tfifo).
    #[default]
    Allow,
}

/// The active queue management scheme of a pipe or of a flow queue (at
/// most one; without one the queue only tail-drops). A few words, `Copy`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Aqm {
    /// RED or GRED (`red`/`gred w_q/min_th/max_th/max_p`), decided at
    /// enqueue.
    Red(RedConfig),
    /// CoDel (`codel target T interval I`), decided when the link takes the
    /// head packet.
    Codel(CodelConfig),
    /// PIE (`pie ...`), decided at enqueue.
    Pie(PieConfig),
}

/// The parameters of a Dummynet pipe (dummynet-revisited §3.1, Fig. 2):
/// a finite queue, a link of bandwidth `bw`, a delay line of `delay`, and
/// the impairment models of the link-and-path issue (jitter, loss,
/// duplication, reordering, corruption), the queue management of the
/// queue-management issue (RED/GRED, CoDel, PIE) and the link-server extras
/// (MAC profile, trace-driven bandwidth, burst, rate accounting).
#[derive(Clone, Debug, PartialEq)]
pub struct PipeConfig {
    bw: Rate,
    delay: Duration,
    queue: QueueLimit,
    jitter: Option<DelayDist>,
    jitter_order: JitterOrder,
    loss: Option<LossConfig>,
    duplicate: Option<DuplicateConfig>,
    reorder: Option<ReorderConfig>,
    swap: Option<SwapConfig>,
    corrupt: Option<CorruptConfig>,
    ecn: bool,
    aqm: Option<Aqm>,
    profile: Option<Profile>,
    bw_trace: Option<BwTrace>,
    burst: Option<BurstConfig>,
    accounting: Accounting,
    wireless: Option<WirelessConfig>,
    timevarying: Option<MarkovGraph>,
    limit: Option<u32>,
    slot: Option<SlotConfig>,
    seed: Option<u64>,
}

impl Default for PipeConfig {
    /// Unlimited bandwidth, no delay, 50 slots: ipfw's defaults.
    fn default() -> Self {
        PipeConfig {
            bw: Rate::UNLIMITED,
            delay: Duration::ZERO,
            queue: QueueLimit::default(),
            jitter: None,
            jitter_order: JitterOrder::Allow,
            loss: None,
            duplicate: None,
            reorder: None,
            swap: None,
            corrupt: None,
            ecn: false,
            aqm: None,
            profile: None,
            bw_trace: None,
            burst: None,
            accounting: Accounting::L3,
            wireless: None,
            timevarying: None,
            limit: None,
            slot: None,
            seed: None,
        }
    }
}

impl PipeConfig {
    /// A checked pipe configuration.
    pub fn new(bw: Rate, delay: Duration, queue: QueueLimit) -> Result<Self, ConfigError> {
        match queue {
            QueueLimit::Slots(0) | QueueLimit::Bytes(0) => {
                return Err(ConfigError {
                    param: "queue",
                    reason: "a queue must hold at least one packet".into(),
                })
            }
            QueueLimit::Slots(n) if n > MAX_QUEUE_SLOTS => {
                return Err(ConfigError {
                    param: "queue",
                    reason: format!(
                    "{n} slots is more than the maximum {MAX_QUEUE_SLOTS}; give the size in bytes"
                ),
                })
            }
            QueueLimit::Bytes(b) if b > MAX_QUEUE_BYTES => {
                return Err(ConfigError {
                    param: "queue",
                    reason: format!("{b} bytes is more than the maximum {MAX_QUEUE_BYTES}"),
                })
            }
            _ => {}
        }
        // One hour of delay is far beyond any path on Earth (or to the Moon);
        // a larger value is almost certainly a unit mistake.
        if delay > Duration::from_secs(3600) {
            return Err(ConfigError {
                param: "delay",
                reason: format!("{delay} is more than the maximum 3600s"),
            });
        }
        Ok(PipeConfig {
            bw,
            delay,
            queue,
            ..PipeConfig::default()
        })
    }

    /// Delay drawn per packet from `dist` (netem's `delay MU SIGMA [CORR]
    /// distribution D`); the fixed `delay` becomes the distribution's mean.
    pub fn with_jitter(mut self, dist: DelayDist, order: JitterOrder) -> Self {
        self.delay = dist.mu();
        self.jitter = (!dist.is_constant()).then_some(dist);
        self.jitter_order = order;
        self
    }

    /// How jitter may order packets (without jitter it changes nothing).
    pub fn with_jitter_order(mut self, order: JitterOrder) -> Self {
        self.jitter_order = order;
        self
    }

    /// A loss model applied to each arriving packet.
    pub fn with_loss(mut self, loss: LossConfig) -> Self {
        self.loss = Some(loss);
        self
    }

    /// Duplicate arriving packets with this model.
    pub fn with_duplicate(mut self, d: DuplicateConfig) -> Self {
        self.duplicate = Some(d);
        self
    }

    /// netem reordering: chosen packets skip the delay line.
    pub fn with_reorder(mut self, r: ReorderConfig) -> Self {
        self.reorder = Some(r);
        self
    }

    /// NetPath reordering: swap the two packets at the head of the queue.
    pub fn with_swap(mut self, s: SwapConfig) -> Self {
        self.swap = Some(s);
        self
    }

    /// `ecn`: where the loss model or the AQM would drop an ECN-capable
    /// packet, mark it Congestion Experienced instead (netem's `ecn`,
    /// RFC 3168 for RED, RFC 8289 and RFC 8033 for CoDel and PIE).
    pub fn with_ecn(mut self, on: bool) -> Self {
        self.ecn = on;
        self
    }

    /// True if drops of ECN-capable packets become CE marks.
    pub fn ecn(&self) -> bool {
        self.ecn
    }

    /// Corrupt packets (netem `corrupt` or a bit error rate).
    pub fn with_corrupt(mut self, c: CorruptConfig) -> Self {
        self.corrupt = Some(c);
        self
    }

    /// Active queue management (RED/GRED, CoDel or PIE).
    pub fn with_aqm(mut self, aqm: Aqm) -> Self {
        self.aqm = Some(aqm);
        self
    }

    /// Dummynet's MAC-overhead profile: each transmission keeps the link
    /// busy for an extra airtime drawn from it, and some packets are lost
    /// on the link. Without a `bw`, the profile's bandwidth is the link's.
    pub fn with_profile(mut self, profile: Profile) -> Self {
        self.profile = Some(profile);
        self
    }

    /// Serve the queue at the delivery opportunities of a Mahimahi trace
    /// instead of at `bw` (which is then ignored, as is `burst`).
    pub fn with_bw_trace(mut self, trace: BwTrace) -> Self {
        self.bw_trace = Some(trace);
        self
    }

    /// ipfw's `burst`: an idle link may send this many bytes at line rate.
    pub fn with_burst(mut self, burst: BurstConfig) -> Self {
        self.burst = Some(burst);
        self
    }

    /// Which bytes of a packet the link's rate applies to (default L3).
    pub fn with_accounting(mut self, accounting: Accounting) -> Self {
        self.accounting = accounting;
        self
    }

    /// An 802.11 channel (PlanetLab-Dummynet §4.1–§4.3): each packet keeps
    /// the link busy for the airtime of its attempts (MAC overheads,
    /// backoff, netload, retries) instead of `l/B`, and is lost on the link
    /// when its last attempt fails. The link's rate is the modulation's, so
    /// `bw`, a MAC profile, a bandwidth trace, `burst` and non-L3
    /// accounting are refused: each would define the link's timing twice.
    pub fn with_wireless(mut self, w: WirelessConfig) -> Result<Self, ConfigError> {
        let clash = if !self.bw.is_unlimited() {
            Some("bw")
        } else if self.profile.is_some() {
            Some("profile FILE")
        } else if self.bw_trace.is_some() {
            Some("bw trace:")
        } else if self.burst.is_some() {
            Some("burst")
        } else if self.accounting != Accounting::L3 {
            Some("accounting")
        } else {
            None
        };
        if let Some(c) = clash {
            return Err(ConfigError {
                param: "wireless",
                reason: format!(
                    "a wireless link takes its timing from the modulation and the MAC; remove `{c}`"
                ),
            });
        }
        self.wireless = Some(w);
        Ok(self)
    }

    /// A time-varying link (PlanetLab-Dummynet §4.4, Fig. 10): the pipe's
    /// bandwidth, delay, loss and wireless parameters follow the states of
    /// `graph`. Checked against the rest of the configuration: wireless
    /// parameters need a wireless link, a state's `bw` on a wireless link
    /// must be one of its standard's rates, `delay` cannot be combined with
    /// jitter, and `bw` not with a bandwidth trace.
    pub fn with_timevarying(mut self, graph: MarkovGraph) -> Result<Self, ConfigError> {
        let err = |reason: String| ConfigError {
            param: "timevarying",
            reason,
        };
        for i in 0..graph.len() {
            let p = graph.params(i);
            let name = graph.name(i);
            let radio = p.snr_db.is_some() || p.netload.is_some() || p.collision.is_some();
            if radio && self.wireless.is_none() {
                return Err(err(format!(
                    "state `{name}` sets snr, netload or collision, but the pipe has no `wireless` link"
                )));
            }
            if let (Some(bw), Some(w)) = (p.bandwidth, &self.wireless) {
                let std = w.standard();
                if Modulation::from_rate(std, bw).is_none() {
                    return Err(err(format!(
                        "state `{name}`: {std} has no rate of {} bit/s",
                        bw.bps()
                    )));
                }
            }
            if p.bandwidth.is_some() && self.bw_trace.is_some() {
                return Err(err(format!(
                    "state `{name}` sets bw, but the pipe follows a bandwidth trace"
                )));
            }
            if p.bandwidth.is_some() && self.burst.is_some() {
                return Err(err(format!(
                    "state `{name}` sets bw, but the pipe has a `burst` at its own rate"
                )));
            }
            if p.delay.is_some() && self.jitter.is_some() {
                return Err(err(format!(
                    "state `{name}` sets delay, but the pipe's delay has a jitter"
                )));
            }
        }
        self.timevarying = Some(graph);
        Ok(self)
    }

    /// netem's `limit N`: at most `N` packets held by the pipe, queued,
    /// on the wire and in the delay line together (a packet arriving when
    /// the pipe holds `N` is a tail drop). Independent of `queue`, which
    /// bounds the queue before the link only. Zero is refused.
    pub fn with_limit(mut self, limit: u32) -> Result<Self, ConfigError> {
        if limit == 0 {
            return Err(ConfigError {
                param: "limit",
                reason: "a pipe must hold at least one packet".into(),
            });
        }
        self.limit = Some(limit);
        Ok(self)
    }

    /// netem's slotting: packets leave the delay line only at
    /// transmission opportunities (`models::slot`).
    pub fn with_slot(mut self, slot: SlotConfig) -> Self {
        self.slot = Some(slot);
        self
    }

    /// netem's `seed`: the pipe's random stages draw from streams seeded
    /// by this value instead of the emulation's seed, so the pipe's
    /// decisions are the same whatever `--seed` says.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// netem's limit, if any.
    pub fn limit(&self) -> Option<u32> {
        self.limit
    }

    /// netem's slots, if any.
    pub fn slot(&self) -> Option<&SlotConfig> {
        self.slot.as_ref()
    }

    /// The pipe's own seed, if any.
    pub fn seed(&self) -> Option<u64> {
        self.seed
    }

    /// The wireless channel, if any.
    pub fn wireless(&self) -> Option<&WirelessConfig> {
        self.wireless.as_ref()
    }

    /// The time-varying graph, if any.
    pub fn timevarying(&self) -> Option<&MarkovGraph> {
        self.timevarying.as_ref()
    }

    /// Link bandwidth (0 = unlimited).
    pub fn bw(&self) -> Rate {
        self.bw
    }
    /// Propagation delay of the delay line.
    pub fn delay(&self) -> Duration {
        self.delay
    }
    /// Queue bound.
    pub fn queue(&self) -> QueueLimit {
        self.queue
    }
    /// Per-packet delay distribution, if the delay is not constant.
    pub fn jitter(&self) -> Option<&DelayDist> {
        self.jitter.as_ref()
    }
    /// How jitter may order packets.
    pub fn jitter_order(&self) -> JitterOrder {
        self.jitter_order
    }
    /// Loss model.
    pub fn loss(&self) -> Option<&LossConfig> {
        self.loss.as_ref()
    }
    /// Duplication model.
    pub fn duplicate(&self) -> Option<&DuplicateConfig> {
        self.duplicate.as_ref()
    }
    /// netem reordering.
    pub fn reorder(&self) -> Option<&ReorderConfig> {
        self.reorder.as_ref()
    }
    /// NetPath head-of-queue swap.
    pub fn swap(&self) -> Option<&SwapConfig> {
        self.swap.as_ref()
    }
    /// Corruption model.
    pub fn corrupt(&self) -> Option<&CorruptConfig> {
        self.corrupt.as_ref()
    }
    /// Active queue management, if any.
    pub fn aqm(&self) -> Option<&Aqm> {
        self.aqm.as_ref()
    }
    /// MAC-overhead profile, if any.
    pub fn profile(&self) -> Option<&Profile> {
        self.profile.as_ref()
    }
    /// Bandwidth trace, if any.
    pub fn bw_trace(&self) -> Option<&BwTrace> {
        self.bw_trace.as_ref()
    }
    /// Burst allowance, if any.
    pub fn burst(&self) -> Option<&BurstConfig> {
        self.burst.as_ref()
    }
    /// Rate accounting.
    pub fn accounting(&self) -> Accounting {
        self.accounting
    }
    /// The rate the link serialises at: `bw`, or the profile's bandwidth
    /// when `bw` is unlimited (ipfw takes the pipe's rate from the profile).
    /// A bandwidth trace replaces it (see [`PipeConfig::bw_trace`]); a
    /// wireless link's is its modulation's (its airtime model replaces it).
    pub fn link_rate(&self) -> Rate {
        if let Some(w) = &self.wireless {
            return w.modulation().rate();
        }
        match (&self.profile, self.bw) {
            (Some(p), bw) if bw.is_unlimited() => p.bandwidth().unwrap_or(bw),
            (_, bw) => bw,
        }
    }
    /// True if packets may leave the delay line out of arrival order.
    pub fn may_reorder(&self) -> bool {
        self.reorder.is_some() || (self.jitter.is_some() && self.jitter_order == JitterOrder::Allow)
    }
}
