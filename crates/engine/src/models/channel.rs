//! The link's channel: what a pipe's link is at each instant when it is a
//! wireless channel (`wireless ...`, PlanetLab-Dummynet §4.1–§4.3) and/or
//! follows a time-varying graph (`timevarying FILE`, §4.4, Fig. 10).
//!
//! A pipe without either never builds one (its fast path is untouched).
//! With one, the pipe asks the channel, at each decision and at the
//! decision's own instant:
//!
//! * at an arrival: the loss probability of the state in force (a state's
//!   `loss` replaces the pipe's loss model while the state lasts);
//! * when the link takes a packet: the rate (`l/B`), or, on a wireless
//!   link, the airtime of the packet's attempts and whether the last one
//!   failed ([`WirelessModel::transmit`]);
//! * when a transmission ends: the propagation delay.
//!
//! The state is settled lazily ([`Channel::sync`] walks the graph up to the
//! instant asked), so a state change costs nothing until a packet meets it,
//! and a change never touches a queued packet: the packet on the wire
//! finishes at the old rate, queued ones are served at the new one, which
//! is the "reconfigure without losing queued packets" of §4.4. The walk
//! draws from its own stream ([`StageKind::Variation`]) in the same order
//! whatever the traffic, so the sequence of states and change instants
//! depends only on the seed.
//!
//! Each state that changes the radio (its `bw` picks another rate of the
//! standard; `snr`, `netload`, `collision`) gets its own [`WirelessModel`],
//! built with its PER table when the pipe is configured: a state change is
//! an index switch, never a table computation.

use rand::Rng;

use crate::config::PipeConfig;
use crate::models::{TimeVarying, WirelessModel};
use crate::rng::{stage_rng, StageKind, StageRng};
use crate::time::{Duration, Instant, Rate};

/// What the link is in one state.
#[derive(Clone, Copy, Debug, PartialEq)]
struct LinkState {
    rate: Rate,
    delay: Duration,
    /// A loss probability replacing the pipe's loss model.
    loss: Option<f64>,
    /// Index into `Channel::radios` (wireless links only).
    radio: Option<usize>,
}

/// See the module documentation.
#[derive(Debug)]
pub struct Channel {
    walk: Option<TimeVarying>,
    /// Per graph state (empty without a walk).
    states: Vec<LinkState>,
    /// The state in force, and its index in `states`.
    cur: LinkState,
    cur_idx: usize,
    radios: Vec<WirelessModel>,
    loss_rng: StageRng,
}

impl Channel {
    /// The channel of `cfg` (`None` when it has neither a wireless link nor
    /// a time-varying graph), its streams seeded from `(seed, stage)`.
    ///
    /// The configuration was checked by [`PipeConfig::with_timevarying`]; a
    /// state whose radio parameters are still refused by the wireless model
    /// (which cannot happen for a checked config) keeps the base radio.
    pub fn for_config(cfg: &PipeConfig, seed: u64, stage: u64) -> Option<Channel> {
        if cfg.wireless().is_none() && cfg.timevarying().is_none() {
            return None;
        }
        let mut radios = Vec::new();
        if let Some(w) = cfg.wireless() {
            radios.push(WirelessModel::new(
                w.clone(),
                stage_rng(seed, StageKind::Link, stage),
            ));
        }
        let base = LinkState {
            rate: cfg.link_rate(),
            delay: cfg.delay(),
            loss: None,
            radio: cfg.wireless().map(|_| 0),
        };
        let mut states = Vec::new();
        let walk = cfg.timevarying().map(|g| {
            for i in 0..g.len() {
                let p = g.params(i);
                let mut s = base;
                s.delay = p.delay.unwrap_or(base.delay);
                s.loss = p.loss;
                match cfg.wireless() {
                    Some(w) => {
                        let radio_changes = p.bandwidth.is_some()
                            || p.snr_db.is_some()
                            || p.netload.is_some()
                            || p.collision.is_some();
                        if radio_changes {
                            let mut c = Ok(w.clone());
                            if let Some(bw) = p.bandwidth {
                                c = c.and_then(|c| c.with_rate(bw));
                            }
                            if let Some(db) = p.snr_db {
                                c = c.and_then(|c| c.with_snr_db(db));
                            }
                            if let Some(n) = p.netload {
                                c = c.and_then(|c| c.with_netload(n));
                            }
                            if let Some(x) = p.collision {
                                c = c.and_then(|c| c.with_collision(x));
                            }
                            if let Ok(c) = c {
                                s.rate = c.modulation().rate();
                                // Each state's radio its own stream.
                                let rng = stage_rng(
                                    seed,
                                    StageKind::Link,
                                    stage ^ ((i as u64 + 1) << 40),
                                );
                                s.radio = Some(radios.len());
                                radios.push(WirelessModel::new(c, rng));
                            }
                        }
                    }
                    None => s.rate = p.bandwidth.unwrap_or(base.rate),
                }
                states.push(s);
            }
            TimeVarying::new(
                g.clone(),
                stage_rng(seed, StageKind::Variation, stage),
                Instant::ZERO,
            )
        });
        let cur_idx = walk.as_ref().map_or(0, |w| w.graph().initial());
        let cur = states.get(cur_idx).copied().unwrap_or(base);
        Some(Channel {
            walk,
            states,
            cur,
            cur_idx,
            radios,
            loss_rng: stage_rng(seed, StageKind::Variation, stage ^ (1 << 63)),
        })
    }

    /// Brings the state up to `at` (no effect for an earlier instant).
    #[inline]
    pub fn sync(&mut self, at: Instant) {
        if let Some(w) = &mut self.walk {
            let (i, _) = w.state_at(at);
            if i != self.cur_idx {
                self.cur_idx = i;
                self.cur = self.states[i];
            }
        }
    }

    /// The index of the state in force (0 without a walk).
    pub fn state(&self) -> usize {
        self.cur_idx
    }

    /// The link rate in force.
    #[inline]
    pub fn rate(&self) -> Rate {
        self.cur.rate
    }

    /// The propagation delay in force.
    #[inline]
    pub fn delay(&self) -> Duration {
        self.cur.delay
    }

    /// `Some(lost)` when the state in force has its own loss probability
    /// (one draw), `None` when the pipe's loss model applies.
    #[inline]
    pub fn state_loss(&mut self) -> Option<bool> {
        let p = self.cur.loss?;
        Some(self.loss_rng.gen::<f64>() < p)
    }

    /// The wireless channel in force, if the link is wireless.
    #[inline]
    pub fn radio(&mut self) -> Option<&mut WirelessModel> {
        let i = self.cur.radio?;
        self.radios.get_mut(i)
    }
}
