//! The typed syntax tree of the command language, and its canonical text.
//!
//! Every type here is plain data (`Clone + Debug + PartialEq`) and prints
//! back (`Display`) as canonical command text that [`crate::parse_line`]
//! parses to an equal value. Canonical means: ipfw word order
//! (`add N prob P ACTION log PROTO from SRC to DST OPTIONS`), aliases
//! folded (`accept`, `pass`, `permit` print as `allow`; `drop` as `deny`;
//! `all` as `ip`; an omitted `PROTO from .. to ..` as `ip from any to any`),
//! values in the largest exact unit (`20800us`, `3Mbit/s`, `100KB`).
//!
//! The tree only records what was written; it does not check references
//! between commands (that a pipe exists, that a rule number is free): that
//! is [`crate::state::Config::apply`]'s job. Value ranges that do not depend
//! on other commands (port ranges, prefix lengths, pipe and rule numbers)
//! are checked by the parser and, for types with invariants, by their
//! constructors.
//!
//! Extension points: [`PipeSpec`] and [`RuleSpec`] are `#[non_exhaustive]`
//! structs of optional fields, so new pipe parameters (loss, jitter, RED,
//! profile, ...) are new `Option` fields; build them with `default()` and
//! assign fields. [`OptionKind`] gets new variants for new rule options
//! (as `via`, `mac`, `iplen`, `tcpflags` were added), [`AddrMatch`] new
//! address forms (as `table(N)`), and [`Action`] new variants (as
//! `Action::PipeTablearg`, so that `Action::Pipe(u32)` keeps meaning a
//! concrete pipe).

use core::fmt;
use std::net::IpAddr;

use pipelab_engine::config::{Aqm, ConfigError, JitterOrder, PipeConfig, QueueLimit};
use pipelab_engine::mask::{FlowMask, MAX_BUCKETS};
use pipelab_engine::models::{
    Accounting, BurstConfig, CodelConfig, ModelError, NetemOverhead, PieConfig, Preamble,
    QueueMeasure, RedConfig, RedVariant, Standard, WirelessConfig,
};
use pipelab_engine::models::{
    BitErrorRate, CorruptConfig, DelayDist, Distribution, DuplicateConfig, FourState,
    GilbertElliott, LossConfig, NetemCorrupt, NetemTable, Probability as ModelProbability,
    ReorderConfig, SlotConfig, SlotDelay, SwapConfig, UniformLoss,
};
use pipelab_engine::sched::{FlowSpec, SchedConfig, SchedKind, SchedParams};
use pipelab_engine::time::{Duration, Rate};

use crate::files;
use crate::timeline;
use crate::units::UnitError;
use crate::units::{
    self, format_percent, format_queue, format_size, format_tc_rate, Ber, Decimal, Probability,
};

/// The smallest pipe number.
pub const MIN_PIPE: u32 = 1;
/// The largest pipe number (ipfw: 16 bits).
pub const MAX_PIPE: u32 = 65_535;
/// The smallest rule number a user may add.
pub const MIN_RULE: u32 = 1;
/// The largest rule number a user may add; 65535 is the default rule.
pub const MAX_RULE: u32 = 65_534;
/// The built-in default rule, always last. pipelab is an emulator, not a
/// firewall, so it is `allow ip from any to any` (ipfw's default is a
/// compile-time choice; pipelab always allows).
pub const DEFAULT_RULE: u32 = 65_535;
/// The step between automatically numbered rules (ipfw's
/// `net.inet.ip.fw.autoinc_step` default).
pub const AUTOINC_STEP: u32 = 100;

/// One command: one line of a script.
///
/// `PipeConfig` is much larger than the other variants (a pipe has many
/// optional parameters); commands are parsed once per line, never in a hot
/// path, so it stays unboxed for easy matching.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `pipe N config [bw RATE] [delay DUR ...] [queue N|SIZE] [loss ...]
    /// ...`: replaces the pipe's whole configuration (absent parameters
    /// take their defaults).
    PipeConfig {
        /// Pipe number, `1..=65535`.
        id: u32,
        /// The parameters as written.
        spec: PipeSpec,
    },
    /// `pipe N delete`.
    PipeDelete {
        /// Pipe number.
        id: u32,
    },
    /// `sched N config [type T] [quantum Q] [target D] [interval D]`: the
    /// scheduler of pipe `N` (replaces its whole configuration).
    SchedConfig {
        /// Scheduler number, `1..=65535` (that of the pipe it serves).
        id: u32,
        /// The parameters as written.
        spec: SchedSpec,
    },
    /// `sched N delete`.
    SchedDelete {
        /// Scheduler number.
        id: u32,
    },
    /// `queue N config [weight W] sched S|pipe P [queue L] [AQM] [mask
    /// ...] [buckets B]`: a flow queue (replaces its configuration).
    QueueConfig {
        /// Queue number, `1..=65535`.
        id: u32,
        /// The parameters as written.
        spec: QueueSpec,
    },
    /// `queue N delete`.
    QueueDelete {
        /// Queue number.
        id: u32,
    },
    /// `pipe show`, `pipe N show` (also `pipe list`, `pipe N list`).
    PipeShow {
        /// One pipe, or all of them.
        id: Option<u32>,
    },
    /// `add [N] [prob P] ACTION [log] [PROTO from SRC to DST] [OPTIONS]`.
    Add(RuleSpec),
    /// `delete N [N ...]`: deletes rules.
    Delete {
        /// Rule numbers, in the order written.
        numbers: Vec<u32>,
    },
    /// `flush`: deletes all rules (not pipes; the default rule stays).
    Flush,
    /// `list`: prints the rules.
    List,
    /// `show`: prints the rules (ipfw adds counters; see the CLI).
    Show,
    /// `set one_pass 0|1`: whether a packet leaving a pipe leaves the
    /// classifier (1, ipfw's default) or is reinjected after its rule (0).
    SetOnePass(bool),
    /// `table N add CIDR [VALUE]`: adds an entry to lookup table `N`
    /// (`0..=65535`, or a name); the value (default 0) is what `tablearg`
    /// takes. A table that does not exist is created (ipfw's compatible
    /// creation).
    TableAdd {
        /// The table.
        table: TableId,
        /// The address or network.
        net: IpNet,
        /// The value, as written (`None` means 0).
        value: Option<u32>,
    },
    /// `table N delete CIDR`.
    TableDelete {
        /// The table.
        table: TableId,
        /// The entry's address or network.
        net: IpNet,
    },
    /// `table N flush`, or `table all flush` (`None`): removes the
    /// entries (a table made by `create` stays, empty).
    TableFlush {
        /// One table, or all of them.
        table: Option<TableId>,
    },
    /// `table N list`, or `table all list` (`None`).
    TableList {
        /// One table, or all of them.
        table: Option<TableId>,
    },
    /// `table NAME create [type addr]` (ipfw): creates an empty table,
    /// which stays when its last entry is deleted. Address tables only.
    TableCreate {
        /// The table.
        table: TableId,
        /// `type addr` was written (the default; printed back as written).
        typed: bool,
    },
    /// `table NAME destroy` (ipfw): removes the table, entries and all;
    /// refused while a rule looks it up.
    TableDestroy {
        /// The table.
        table: TableId,
    },
}

/// The parameters of a `pipe N config` command, as written.
///
/// Each field is `None` when the parameter was not given; printing shows
/// exactly the given ones. [`PipeSpec::to_config`] fills in the defaults.
/// New parameters are added as new `Option` fields; construct with
/// `PipeSpec::default()` and assign.
///
/// Files named by the spec (`distribution file:PATH`, `loss trace:PATH`,
/// `bw trace:PATH`, `profile PATH`, `timevarying PATH`, `delay
/// trace:PATH`, `timeline PATH`) are kept as paths
/// as written. [`PipeSpec::to_config_with`] takes a loader that turns a
/// path into its text (resolving it as its front door does, and reading it
/// with [`crate::files::read_named_file`]), then reads the text's format
/// with [`crate::files`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct PipeSpec {
    /// `bw RATE`: link bandwidth (default unlimited).
    pub bw: Option<Rate>,
    /// `delay DUR`: propagation delay (default 0); with [`PipeSpec::jitter`]
    /// the mean (netem's `delay MU SIGMA`).
    pub delay: Option<Duration>,
    /// `delay MU SIGMA [CORR%]`: the jitter part of netem's `delay`; only
    /// meaningful with `delay`.
    pub jitter: Option<Jitter>,
    /// `distribution uniform|normal|pareto|paretonormal|file:PATH`: the
    /// shape of the jitter (default uniform, as netem without a table).
    pub distribution: Option<DistSpec>,
    /// `jitter-order keep|allow`: whether jitter may reorder (default keep).
    pub jitter_order: Option<JitterOrder>,
    /// `queue N|SIZE`: queue bound in slots or bytes (default 50 slots).
    pub queue: Option<QueueLimit>,
    /// `spill`: in a live run, frames waiting in this pipe may be kept on
    /// disk when the memory cap is short (NetPath's DiskQueue); a storage
    /// matter, with no effect on the emulation (none in virtual time).
    pub spill: bool,
    /// `plr P`: ipfw's packet loss rate, a uniform loss probability.
    pub plr: Option<Probability>,
    /// `loss ...`: netem's loss models.
    pub loss: Option<LossSpec>,
    /// `duplicate P% [CORR%]`.
    pub duplicate: Option<Chance>,
    /// `reorder P% [CORR%] [gap N]` or `reorder swap P%`.
    pub reorder: Option<ReorderSpec>,
    /// `corrupt P% [CORR%]`: one bit flipped per chosen packet.
    pub corrupt: Option<Chance>,
    /// `ber B`: independent bit errors, `B` in `[0, 1)`.
    pub ber: Option<Ber>,
    /// `red W/MIN/MAX/P`, `gred W/MIN/MAX/P`, `codel ...` or `pie ...`:
    /// the queue's active management (default: tail drop only).
    pub aqm: Option<AqmSpec>,
    /// `bw trace:PATH`: serve the queue at the delivery opportunities of a
    /// Mahimahi trace instead of at `bw` (excludes `bw RATE`).
    pub bw_trace: Option<String>,
    /// `profile PATH`: Dummynet's MAC-overhead profile file.
    pub profile: Option<String>,
    /// `burst SIZE`: bytes an idle pipe may send at line rate (ipfw).
    pub burst: Option<u64>,
    /// `ecn`: mark ECN-capable packets CE where the loss model or the AQM
    /// would drop them (netem's `ecn`, RFC 3168).
    pub ecn: bool,
    /// `accounting l3|l2 [...]`: which bytes the rate applies to.
    pub accounting: Option<AccountingSpec>,
    /// `overhead N [cellsize C [celloverhead O]]`: netem's per-packet and
    /// per-cell overheads (excludes `accounting`).
    pub overhead: Option<OverheadSpec>,
    /// `mask ...`: a dynamic pipe, one instance per masked flow key
    /// (dummynet-revisited §3.1).
    pub mask: Option<MaskSpec>,
    /// `buckets N`: the instance table's size (`1..=65536`, default 64);
    /// a dynamic pipe holds at most `16 × N` instances.
    pub buckets: Option<u32>,
    /// `wireless 802.11b rate 11Mbit/s [snr 20dB] ...` or `profile
    /// 802.11b-11 [...]`: an 802.11 channel (PlanetLab-Dummynet §4).
    pub wireless: Option<WirelessSpec>,
    /// `timevarying PATH`: the link follows the Markov graph in the file
    /// (PlanetLab-Dummynet §4.4).
    pub timevarying: Option<String>,
    /// `delay trace:PATH`: the one-way delay follows the trace in the
    /// file ([`crate::timeline`]; excludes `delay DUR`).
    pub delay_trace: Option<String>,
    /// `timeline PATH`: the link's bw, delay and loss change at the
    /// instants of the file's rows ([`crate::timeline`]).
    pub timeline: Option<String>,
    /// netem's `limit N`: at most `N` packets held by the pipe, delay
    /// line included.
    pub limit: Option<u32>,
    /// netem's `rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]`, in
    /// tc's units (excludes `bw`).
    pub rate: Option<NetemRate>,
    /// netem's `slot ...`.
    pub slot: Option<SlotSpec>,
    /// netem's `seed N`: the pipe's own random seed.
    pub seed: Option<u64>,
    /// netem's `gap N` written apart from `reorder` (tc-netem(8)'s
    /// example `gap 5 delay 10ms`: every 5th packet is sent at once).
    pub gap: Option<u32>,
    /// `noecn` (ipfw): no ECN marking, written out (the default).
    pub noecn: bool,
    /// ipfw's `plr K,p,H,r`: the Gilbert-Elliott channel (loss `K` in the
    /// good state, `p` good → bad, loss `H` in the bad state, `r` bad →
    /// good), as probabilities.
    pub plr_ge: Option<[Probability; 4]>,
    /// ipfw's `noerror`: a drop is not reported to the sender. pipelab
    /// never reports drops to a sender, so it changes nothing.
    pub noerror: bool,
    /// ipfw's `droptail`: the tail-drop queue, written out (the default;
    /// dummynet's `droptail` turns RED off, `sbin/ipfw/dummynet.c`,
    /// `TOK_DROPTAIL`). It cannot be given with a queue management.
    pub droptail: bool,
}

/// netem's `rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NetemRate {
    /// The rate, read in tc's units (`10mbit`; `10mbps` is 80 Mbit/s).
    pub rate: Rate,
    /// Bytes added to each packet (may be negative).
    pub overhead: Option<i32>,
    /// Cell size: the packet is carried in cells of this many bytes.
    pub cellsize: Option<u32>,
    /// Bytes added to each cell (may be negative).
    pub celloverhead: Option<i32>,
}

impl fmt::Display for NetemRate {
    /// `80Mbit`, `5Kbit 20 100 5`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_tc_rate(self.rate))?;
        // Positional, as tc reads them: each needs the ones before it.
        for v in [
            self.overhead.map(i64::from),
            self.cellsize.map(i64::from),
            self.celloverhead.map(i64::from),
        ]
        .into_iter()
        .map_while(|v| v)
        {
            write!(f, " {v}")?;
        }
        Ok(())
    }
}

/// How far apart netem's slots are.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SlotDelaySpec {
    /// `slot MIN [MAX]`.
    Range {
        /// `MIN`.
        min: Duration,
        /// `MAX` (`MIN` when absent).
        max: Option<Duration>,
    },
    /// `slot distribution D DELAY JITTER`.
    Dist {
        /// The distribution's name (or table path).
        dist: DistSpec,
        /// The mean delay.
        delay: Duration,
        /// The jitter (above zero).
        jitter: Duration,
    },
}

/// netem's `slot MIN [MAX] [packets N] [bytes N]` or `slot distribution
/// D DELAY JITTER [packets N] [bytes N]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SlotSpec {
    /// How far apart the slots are.
    pub delay: SlotDelaySpec,
    /// `packets N`: at most N packets per slot.
    pub packets: Option<u32>,
    /// `bytes N`: at most N bytes per slot.
    pub bytes: Option<u64>,
}

impl fmt::Display for SlotSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.delay {
            SlotDelaySpec::Range { min, max } => {
                write!(f, "{min}")?;
                if let Some(m) = max {
                    write!(f, " {m}")?;
                }
            }
            SlotDelaySpec::Dist {
                dist,
                delay,
                jitter,
            } => write!(f, "distribution {dist} {delay} {jitter}")?,
        }
        if let Some(p) = self.packets {
            write!(f, " packets {p}")?;
        }
        if let Some(b) = self.bytes {
            write!(f, " bytes {b}")?;
        }
        Ok(())
    }
}

/// The words of a wireless link as written, checked by the parser: the
/// head (`wireless STANDARD` then `rate RATE`, or `profile NAME`) and the
/// optional words (`snr`, `netload`, `collision`, `retries`, `cw`, `cwmax`,
/// `preamble`, `ack-rate`, `overhead`), each a `(word, value)` pair.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct WirelessSpec {
    /// `(word, value)` pairs in the order written.
    pub words: Vec<(String, String)>,
}

impl WirelessSpec {
    /// The optional words after the head.
    pub const OPTIONS: &'static [&'static str] = &[
        "snr",
        "netload",
        "collision",
        "retries",
        "cw",
        "cwmax",
        "preamble",
        "ack-rate",
        "overhead",
    ];

    /// The built-in link called `name`: `802.11b-11`, `802.11g-54`, ...
    /// (the standard, a dash, the rate in Mbit/s), with the standard's
    /// defaults; `None` for any other name.
    pub fn profile(name: &str) -> Option<WirelessConfig> {
        let (standard, rate) = name.rsplit_once('-')?;
        let standard = Standard::from_name(standard)?;
        let rate = units::parse_rate(&format!("{rate}Mbit/s")).ok()?;
        WirelessConfig::new(standard, rate).ok()
    }

    /// The engine's checked configuration of these words. Values are
    /// read as everywhere in the language: `rate` and `ack-rate` as a
    /// pipe's `bw` (`11Mbit/s`, `5.5Mbit/s`), `netload` and `collision` as
    /// probabilities (`0.06` or `6%`), `snr` in decibels (`20dB`, a bare
    /// number being dB); `retries`, `cw`, `cwmax` and `overhead` are
    /// counts, `preamble` is `long` or `short`. `cw` and `cwmax` may come
    /// in any order.
    pub fn to_config(&self) -> Result<WirelessConfig, WirelessError> {
        use WirelessError::{Link, Value};
        let link = |e: ModelError| Link(e.message);
        let mut words = self.words.iter();
        let mut cfg = match words.next() {
            Some((head, name)) if head == "profile" => Self::profile(name).ok_or_else(|| {
                Link(format!(
                    "unknown profile `{name}` (use 802.11b-1|2|5.5|11 or 802.11g-6..54)"
                ))
            })?,
            Some((head, std)) if head == "wireless" => {
                let standard = Standard::from_name(std)
                    .ok_or_else(|| Link(format!("unknown standard `{std}`")))?;
                match words.next() {
                    Some((k, rate)) if k == "rate" => {
                        WirelessConfig::new(standard, units::parse_rate(rate).map_err(Value)?)
                            .map_err(link)?
                    }
                    _ => return Err(Link("expected `rate RATE` after the standard".into())),
                }
            }
            _ => {
                return Err(Link(
                    "expected `wireless STANDARD rate RATE` or `profile NAME`".into(),
                ))
            }
        };
        let count = |v: &str| -> Result<u32, WirelessError> {
            if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
                return Err(Link(format!("`{v}` is not a non-negative integer")));
            }
            // Digits only: too large for a count if it does not parse.
            v.parse()
                .map_err(|_| Link(format!("`{v}` is out of range 0..{}", u32::MAX)))
        };
        let (mut cw, mut cwmax) = (None, None);
        for (k, v) in words {
            cfg = match k.as_str() {
                "snr" => cfg
                    .with_snr_db(units::parse_db(v).map_err(Value)?.as_f64())
                    .map_err(link)?,
                "netload" => cfg
                    .with_netload(units::parse_probability(v).map_err(Value)?.as_f64())
                    .map_err(link)?,
                "collision" => cfg
                    .with_collision(units::parse_probability(v).map_err(Value)?.as_f64())
                    .map_err(link)?,
                "retries" => cfg.with_retries(count(v)?).map_err(link)?,
                "cw" => {
                    cw = Some(count(v)?);
                    cfg
                }
                "cwmax" => {
                    cwmax = Some(count(v)?);
                    cfg
                }
                "preamble" => cfg.with_preamble(match v.as_str() {
                    "long" => Preamble::Long,
                    "short" => Preamble::Short,
                    _ => return Err(Link(format!("preamble `{v}` is not long or short"))),
                }),
                "ack-rate" => cfg
                    .with_ack_rate(units::parse_rate(v).map_err(Value)?)
                    .map_err(link)?,
                "overhead" => cfg.with_overhead(count(v)?).map_err(link)?,
                _ => return Err(Link(format!("unknown word `{k}`"))),
            };
        }
        if cw.is_some() || cwmax.is_some() {
            cfg = cfg.with_window(cw, cwmax).map_err(link)?;
        }
        Ok(cfg)
    }
}

/// Why the words of a wireless link do not make a link.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WirelessError {
    /// A value is not a valid value of its kind (`rate 11Mbps`): the
    /// language's error for that kind of value, as anywhere else.
    #[error("{0}")]
    Value(UnitError),
    /// The words do not make a link the engine accepts (`802.11b has no
    /// rate 7Mbit/s`), or a word is unknown.
    #[error("{0}")]
    Link(String),
}

impl fmt::Display for WirelessSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        for (w, v) in &self.words {
            write!(f, "{sep}{w} {v}")?;
            sep = " ";
        }
        Ok(())
    }
}

/// `red`/`gred W/MIN/MAX/P` as written (ipfw's words).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RedSpec {
    /// `gred` (gentle RED) rather than `red`.
    pub gentle: bool,
    /// The averaging weight `w_q`, in `(0, 1]`.
    pub w_q: Probability,
    /// The lower threshold, in the queue's unit (slots, or bytes with a
    /// queue in bytes, as ipfw).
    pub min_th: u64,
    /// The upper threshold, same unit, above `min_th`.
    pub max_th: u64,
    /// The drop probability at `max_th`, in `(0, 1]`.
    pub max_p: Probability,
}

/// PIE's parameters as written; absent ones take RFC 8033's defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PieSpec {
    /// `target D` (15ms).
    pub target: Option<Duration>,
    /// `tupdate D` (15ms).
    pub tupdate: Option<Duration>,
    /// `alpha A` in Hz, `[0, 2]` (0.125).
    pub alpha: Option<Decimal>,
    /// `beta B` in Hz, `[0, 2]` (1.25).
    pub beta: Option<Decimal>,
    /// `max_burst D` (150ms).
    pub max_burst: Option<Duration>,
}

/// The queue management words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AqmSpec {
    /// `red W/MIN/MAX/P` or `gred W/MIN/MAX/P`.
    Red(RedSpec),
    /// `codel [target D] [interval D]` (defaults 5ms, 100ms).
    Codel {
        /// `target D`.
        target: Option<Duration>,
        /// `interval D`.
        interval: Option<Duration>,
    },
    /// `pie [target D] [tupdate D] [alpha A] [beta B] [max_burst D]`.
    Pie(PieSpec),
}

impl AqmSpec {
    /// The command word: `red`, `gred`, `codel` or `pie`.
    pub fn word(&self) -> &'static str {
        match self {
            AqmSpec::Red(r) if r.gentle => "gred",
            AqmSpec::Red(_) => "red",
            AqmSpec::Codel { .. } => "codel",
            AqmSpec::Pie(_) => "pie",
        }
    }
}

impl AqmSpec {
    /// The engine's validated queue management for a queue bounded by
    /// `limit` (RED's thresholds count what the limit counts: packets or
    /// bytes).
    pub fn to_config(&self, limit: QueueLimit) -> Result<Aqm, ConfigError> {
        let err = |param: &'static str, reason: String| ConfigError { param, reason };
        Ok(match self {
            AqmSpec::Red(r) => {
                let measure = match limit {
                    QueueLimit::Slots(_) => QueueMeasure::Slots,
                    QueueLimit::Bytes(_) => QueueMeasure::Bytes,
                };
                let variant = if r.gentle {
                    RedVariant::Gentle
                } else {
                    RedVariant::Red
                };
                let param = if r.gentle { "gred" } else { "red" };
                let c = RedConfig::new(
                    variant,
                    r.w_q.as_f64(),
                    r.min_th,
                    r.max_th,
                    r.max_p.as_f64(),
                    measure,
                )
                .map_err(|e| err(param, e.message))?;
                Aqm::Red(c)
            }
            AqmSpec::Codel { target, interval } => {
                let d = CodelConfig::default();
                let c = CodelConfig::new(
                    target.unwrap_or(d.target()),
                    interval.unwrap_or(d.interval()),
                )
                .map_err(|e| err("codel", e.message))?;
                Aqm::Codel(c)
            }
            AqmSpec::Pie(p) => {
                let d = PieConfig::default();
                let c = PieConfig::new(
                    p.target.unwrap_or(d.target()),
                    p.tupdate.unwrap_or(d.tupdate()),
                    p.alpha.map_or(d.alpha(), Decimal::as_f64),
                    p.beta.map_or(d.beta(), Decimal::as_f64),
                    p.max_burst.unwrap_or(d.max_burst()),
                )
                .map_err(|e| err("pie", e.message))?;
                Aqm::Pie(c)
            }
        })
    }
}

impl fmt::Display for AqmSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())?;
        match self {
            AqmSpec::Red(r) => write!(f, " {}/{}/{}/{}", r.w_q, r.min_th, r.max_th, r.max_p),
            AqmSpec::Codel { target, interval } => {
                if let Some(t) = target {
                    write!(f, " target {t}")?;
                }
                if let Some(i) = interval {
                    write!(f, " interval {i}")?;
                }
                Ok(())
            }
            AqmSpec::Pie(p) => {
                if let Some(t) = p.target {
                    write!(f, " target {t}")?;
                }
                if let Some(t) = p.tupdate {
                    write!(f, " tupdate {t}")?;
                }
                if let Some(a) = p.alpha {
                    write!(f, " alpha {a}")?;
                }
                if let Some(b) = p.beta {
                    write!(f, " beta {b}")?;
                }
                if let Some(m) = p.max_burst {
                    write!(f, " max_burst {m}")?;
                }
                Ok(())
            }
        }
    }
}

/// The link-layer framing of `accounting l2`, each field as written; absent
/// ones take Ethernet's values (header 14, fcs 4, preamble 8, ifg 12,
/// minframe 64), in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct L2Spec {
    /// `header N`.
    pub header: Option<u32>,
    /// `fcs N`.
    pub fcs: Option<u32>,
    /// `preamble N` (with the start-of-frame delimiter).
    pub preamble: Option<u32>,
    /// `ifg N`: the inter-frame gap.
    pub ifg: Option<u32>,
    /// `minframe N`: shorter frames are padded to it (0: none).
    pub minframe: Option<u32>,
}

/// `accounting l3` (Dummynet: the IP length) or `accounting l2 [...]`
/// (the frame on the wire, NetEm-like).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccountingSpec {
    /// `l3`.
    L3,
    /// `l2 [header N] [fcs N] [preamble N] [ifg N] [minframe N]`.
    L2(L2Spec),
}

impl AccountingSpec {
    /// The words after `l2`, as listed in hints.
    pub const L2_WORDS: &'static [&'static str] = &["header", "fcs", "preamble", "ifg", "minframe"];
}

impl fmt::Display for AccountingSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccountingSpec::L3 => f.write_str("l3"),
            AccountingSpec::L2(l) => {
                f.write_str("l2")?;
                let fields = [l.header, l.fcs, l.preamble, l.ifg, l.minframe];
                for (w, v) in AccountingSpec::L2_WORDS.iter().zip(fields) {
                    if let Some(v) = v {
                        write!(f, " {w} {v}")?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// netem's `overhead N [cellsize C [celloverhead O]]`, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OverheadSpec {
    /// Bytes added to each packet (may be negative).
    pub overhead: i32,
    /// `cellsize C`: the packet is carried in cells of `C` bytes.
    pub cellsize: Option<u32>,
    /// `celloverhead O`: bytes added to each cell (only with a cell size).
    pub celloverhead: Option<i32>,
}

impl fmt::Display for OverheadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.overhead)?;
        if let Some(c) = self.cellsize {
            write!(f, " cellsize {c}")?;
            if let Some(o) = self.celloverhead {
                write!(f, " celloverhead {o}")?;
            }
        }
        Ok(())
    }
}

/// The `SIGMA [CORR%]` of netem's `delay MU SIGMA [CORR%]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Jitter {
    /// The spread `SIGMA`.
    pub sigma: Duration,
    /// Correlation with the previous draw, as written (`None`: not given).
    pub correlation: Option<Probability>,
}

/// A netem probability with an optional correlation: `P% [CORR%]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Chance {
    /// The probability.
    pub p: Probability,
    /// Correlation with the previous draw, as written.
    pub correlation: Option<Probability>,
}

impl Chance {
    /// `P%` without correlation.
    pub fn new(p: Probability) -> Chance {
        Chance {
            p,
            correlation: None,
        }
    }
}

impl fmt::Display for Chance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_percent(self.p))?;
        if let Some(c) = self.correlation {
            write!(f, " {}", format_percent(c))?;
        }
        Ok(())
    }
}

/// The word after `distribution`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DistSpec {
    /// `uniform`: `MU ± SIGMA`, uniformly.
    Uniform,
    /// `normal`.
    Normal,
    /// `pareto`.
    Pareto,
    /// `paretonormal`.
    ParetoNormal,
    /// `file:PATH`: an empirical distribution read from `PATH` (samples or
    /// CDF points), added to `MU`.
    File(String),
    /// Another netem table: a name looked up as `NAME.dist` in tc's
    /// library directories (`experimental`), or the path of a `.dist`
    /// file (a word with a `/`).
    Table(String),
}

impl DistSpec {
    /// The words after `distribution`, as listed in hints.
    pub const NAMES: &'static str =
        "uniform, normal, pareto, paretonormal, NAME (tc's NAME.dist), PATH.dist, file:PATH";
}

impl fmt::Display for DistSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DistSpec::Uniform => f.write_str("uniform"),
            DistSpec::Normal => f.write_str("normal"),
            DistSpec::Pareto => f.write_str("pareto"),
            DistSpec::ParetoNormal => f.write_str("paretonormal"),
            DistSpec::File(p) => write!(f, "file:{p}"),
            DistSpec::Table(t) => f.write_str(t),
        }
    }
}

/// netem's loss models, as written after `loss`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LossSpec {
    /// `loss P% [CORR%]`.
    Random(Chance),
    /// `loss gemodel P [R [1-H [1-K]]]`: 1 to 4 percentages; omitted ones
    /// take netem's defaults (`R = 1 − P`, `1-H = 100%`, `1-K = 0%`).
    Gemodel(Vec<Probability>),
    /// `loss state P13 [P31 [P32 [P23 [P14]]]]`: 1 to 5 percentages;
    /// omitted ones take netem's defaults (`P31 = 1 − P13`, `P32 = 0`,
    /// `P23 = 100%`, `P14 = 0`).
    State(Vec<Probability>),
    /// `loss trace:PATH`: drops listed in a file.
    Trace(String),
}

fn write_percents(f: &mut fmt::Formatter<'_>, ps: &[Probability]) -> fmt::Result {
    for p in ps {
        write!(f, " {}", format_percent(*p))?;
    }
    Ok(())
}

impl fmt::Display for LossSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LossSpec::Random(c) => write!(f, "{c}"),
            LossSpec::Gemodel(ps) => {
                f.write_str("gemodel")?;
                write_percents(f, ps)
            }
            LossSpec::State(ps) => {
                f.write_str("state")?;
                write_percents(f, ps)
            }
            LossSpec::Trace(p) => write!(f, "trace:{p}"),
        }
    }
}

/// The reordering models, as written after `reorder`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReorderSpec {
    /// netem's `reorder P% [CORR%] [gap N]`: chosen packets skip the delay.
    Netem {
        /// Probability and correlation.
        chance: Chance,
        /// `gap N` (≥ 1), as written.
        gap: Option<u32>,
    },
    /// NetPath's `reorder swap P%`: swap the two packets at the queue's head.
    Swap(Probability),
}

impl fmt::Display for ReorderSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReorderSpec::Netem { chance, gap } => {
                write!(f, "{chance}")?;
                if let Some(g) = gap {
                    write!(f, " gap {g}")?;
                }
                Ok(())
            }
            ReorderSpec::Swap(p) => write!(f, "swap {}", format_percent(*p)),
        }
    }
}

/// How [`PipeSpec`] reaches the files it names.
enum Files<'l> {
    /// Files are an error ("needs a file loader").
    Refuse,
    /// Files are not read; everything else is checked.
    Skip,
    /// Files are read with this loader.
    Load(&'l mut dyn FnMut(&str) -> Result<String, String>),
}

impl Files<'_> {
    /// The text of `path`, `None` when skipping.
    fn text(&mut self, param: &'static str, path: &str) -> Result<Option<String>, ConfigError> {
        match self {
            Files::Refuse => Err(ConfigError {
                param,
                reason: format!("'{path}': reading a file needs a file loader (to_config_with)"),
            }),
            Files::Skip => Ok(None),
            Files::Load(f) => f(path).map(Some).map_err(|e| ConfigError {
                param,
                // A loader's error names the path it read (the path as
                // written, resolved): name the written one once.
                reason: if e.starts_with(&format!("'{path}': ")) {
                    format!("cannot read {e}")
                } else {
                    format!("cannot read '{path}': {e}")
                },
            }),
        }
    }
}

/// netem's default `limit` (`tc_netem_qopt.limit = 1000`), taken with
/// netem's `rate` when neither `limit` nor `queue` is given.
pub const NETEM_LIMIT: u32 = 1000;

/// The netem table a distribution word names, as netem reads it: a name
/// (`normal`, `pareto`, `paretonormal`, `experimental`, …) is iproute2's
/// `NAME.dist` from tc's library directories ([`files::find_tc_table`]);
/// the three built-in shapes fall back to pipelab's own tables, generated
/// with iproute2's algorithm, when no file is installed (or no file
/// loader is at hand); a word with a `/` is the path of a `.dist` file.
/// `None` when files are skipped (checking only).
fn netem_table(
    param: &'static str,
    d: &DistSpec,
    files: &mut Files<'_>,
) -> Result<Option<Distribution>, ConfigError> {
    let err = |reason: String| ConfigError { param, reason };
    let name = match d {
        DistSpec::Normal => "normal",
        DistSpec::Pareto => "pareto",
        DistSpec::ParetoNormal => "paretonormal",
        DistSpec::Table(t) => t.as_str(),
        DistSpec::Uniform => return Ok(Some(Distribution::Uniform)),
        DistSpec::File(_) => return Err(err("file: is not a netem table".into())),
    };
    let path = if name.contains('/') {
        Some(name.to_string())
    } else {
        files::find_tc_table(name).map(|p| p.display().to_string())
    };
    let builtin = NetemTable::builtin(name);
    let text = match (&path, &files) {
        (Some(_), Files::Refuse) | (None, _) => None,
        (Some(p), _) => files.text(param, p)?,
    };
    if let (Some(text), Some(p)) = (text, &path) {
        let values = files::parse_tc_table(&text).map_err(|e| err(format!("'{p}': {e}")))?;
        let t = NetemTable::new(name, values).map_err(|e| err(format!("'{p}': {e}")))?;
        return Ok(Some(Distribution::Table(t)));
    }
    match (builtin, &files, &path) {
        (Some(b), _, _) => Ok(Some(Distribution::Table(b))),
        (None, Files::Skip, _) => Ok(Some(Distribution::Normal)),
        (None, Files::Refuse, Some(p)) => Err(err(format!(
            "'{p}': reading a file needs a file loader (to_config_with)"
        ))),
        (None, _, _) => Err(ConfigError {
            param,
            reason: format!(
                "no table '{name}.dist' in tc's library directories ({}); give its path, e.g. ./{name}.dist",
                files::tc_lib_dirs().join(", ")
            ),
        }),
    }
}

/// The engine's probability for a language one (ppb, exact to 1e-9).
fn model_p(p: Probability) -> ModelProbability {
    ModelProbability::new(p.as_f64()).unwrap_or(ModelProbability::ONE)
}

fn model_corr(c: Option<Probability>) -> ModelProbability {
    c.map_or(ModelProbability::ZERO, model_p)
}

impl PipeSpec {
    /// The parameter words of `pipe N config`, in canonical order
    /// (`droptail`, the default written out, is not listed).
    pub const PARAMS: &'static [&'static str] = &[
        "bw",
        "delay",
        "distribution",
        "jitter-order",
        "queue",
        "spill",
        "red",
        "gred",
        "codel",
        "pie",
        "plr",
        "loss",
        "duplicate",
        "reorder",
        "corrupt",
        "ber",
        "profile",
        "burst",
        "ecn",
        "accounting",
        "overhead",
        "mask",
        "buckets",
        "wireless",
        "timevarying",
        "timeline",
        "limit",
        "rate",
        "slot",
        "seed",
        "gap",
        "noecn",
        "noerror",
        "preset",
    ];

    /// Builds the engine's validated pipe configuration, with ipfw's
    /// defaults for absent parameters: unlimited bandwidth, no delay,
    /// 50 slots, no impairment.
    ///
    /// A spec that names a file (`distribution file:PATH`,
    /// `loss trace:PATH`) is an error here: use [`PipeSpec::to_config_with`].
    pub fn to_config(&self) -> Result<PipeConfig, ConfigError> {
        self.build(&mut Files::Refuse)
    }

    /// Like [`PipeSpec::to_config`], reading the files the spec names with
    /// `load` (a path as written to its text, or why it cannot be read).
    /// Errors name the file and, for a malformed file, the line.
    pub fn to_config_with(
        &self,
        load: &mut dyn FnMut(&str) -> Result<String, String>,
    ) -> Result<PipeConfig, ConfigError> {
        self.build(&mut Files::Load(load))
    }

    /// Checks everything [`PipeSpec::to_config_with`] checks except the
    /// contents of files (which need a loader).
    pub fn check(&self) -> Result<(), ConfigError> {
        self.build(&mut Files::Skip).map(|_| ())
    }

    /// The files this spec names, as written (`(param, path)`).
    pub fn files(&self) -> Vec<(&'static str, &str)> {
        let mut out = Vec::new();
        if let Some(DistSpec::File(p)) = &self.distribution {
            out.push(("distribution", p.as_str()));
        }
        if let Some(LossSpec::Trace(p)) = &self.loss {
            out.push(("loss", p.as_str()));
        }
        if let Some(p) = &self.bw_trace {
            out.push(("bw", p.as_str()));
        }
        if let Some(p) = &self.profile {
            out.push(("profile", p.as_str()));
        }
        if let Some(p) = &self.timevarying {
            out.push(("timevarying", p.as_str()));
        }
        if let Some(p) = &self.delay_trace {
            out.push(("delay", p.as_str()));
        }
        if let Some(p) = &self.timeline {
            out.push(("timeline", p.as_str()));
        }
        if let Some(DistSpec::Table(t)) = &self.distribution {
            if t.contains('/') {
                out.push(("distribution", t.as_str()));
            }
        }
        if let Some(SlotSpec {
            delay:
                SlotDelaySpec::Dist {
                    dist: DistSpec::Table(t),
                    ..
                },
            ..
        }) = &self.slot
        {
            if t.contains('/') {
                out.push(("slot", t.as_str()));
            }
        }
        out
    }

    /// The paths of the files this spec names, as [`PipeSpec::files`]
    /// lists them, to rewrite in place (a front door resolving relative
    /// paths before it hands the spec on).
    pub fn files_mut(&mut self) -> Vec<&mut String> {
        let mut out = Vec::new();
        fn table(d: &mut DistSpec) -> Option<&mut String> {
            match d {
                DistSpec::File(p) => Some(p),
                DistSpec::Table(t) if t.contains('/') => Some(t),
                _ => None,
            }
        }
        if let Some(p) = self.distribution.as_mut().and_then(table) {
            out.push(p);
        }
        if let Some(LossSpec::Trace(p)) = &mut self.loss {
            out.push(p);
        }
        out.extend(self.bw_trace.as_mut());
        out.extend(self.profile.as_mut());
        out.extend(self.timevarying.as_mut());
        out.extend(self.delay_trace.as_mut());
        out.extend(self.timeline.as_mut());
        if let Some(SlotSpec {
            delay: SlotDelaySpec::Dist { dist, .. },
            ..
        }) = &mut self.slot
        {
            out.extend(table(dist));
        }
        out
    }

    /// Gives this spec every word `top` gives, each replacing the same
    /// word here (`codel` replaces `red`: one queue management; `noecn`
    /// replaces `ecn`; `bw trace:` replaces `bw`); the words `top` leaves
    /// out keep their values. How a running link takes new words
    /// (`link A B set codel`).
    pub fn overlay(&mut self, top: &PipeSpec) {
        // Every field by name: a new word must say here how it replaces.
        let PipeSpec {
            bw,
            delay,
            jitter,
            distribution,
            jitter_order,
            queue,
            spill,
            plr,
            loss,
            duplicate,
            reorder,
            corrupt,
            ber,
            aqm,
            bw_trace,
            profile,
            burst,
            ecn,
            accounting,
            overhead,
            mask,
            buckets,
            wireless,
            timevarying,
            delay_trace,
            timeline,
            limit,
            rate,
            slot,
            seed,
            gap,
            noecn,
            plr_ge,
            noerror,
            droptail,
        } = top.clone();
        fn put<T>(to: &mut Option<T>, from: Option<T>) {
            if from.is_some() {
                *to = from;
            }
        }
        if bw.is_some() {
            self.bw_trace = None;
        }
        if bw_trace.is_some() {
            self.bw = None;
        }
        put(&mut self.bw, bw);
        put(&mut self.bw_trace, bw_trace);
        // One way of saying the delay, one way of changing the link over
        // time: each replaces the others.
        if delay.is_some() || jitter.is_some() {
            self.delay_trace = None;
        }
        if delay_trace.is_some() {
            (self.delay, self.jitter) = (None, None);
        }
        if timevarying.is_some() || timeline.is_some() || delay_trace.is_some() {
            (self.timevarying, self.timeline, self.delay_trace) = (None, None, None);
        }
        put(&mut self.delay_trace, delay_trace);
        put(&mut self.timeline, timeline);
        put(&mut self.delay, delay);
        put(&mut self.jitter, jitter);
        put(&mut self.distribution, distribution);
        put(&mut self.jitter_order, jitter_order);
        put(&mut self.queue, queue);
        self.spill |= spill;
        if plr.is_some() {
            self.plr_ge = None;
        }
        if plr_ge.is_some() {
            self.plr = None;
        }
        put(&mut self.plr, plr);
        put(&mut self.plr_ge, plr_ge);
        put(&mut self.loss, loss);
        put(&mut self.duplicate, duplicate);
        put(&mut self.reorder, reorder);
        put(&mut self.corrupt, corrupt);
        put(&mut self.ber, ber);
        if aqm.is_some() {
            self.droptail = false;
        }
        if droptail {
            self.aqm = None;
            self.droptail = true;
        }
        put(&mut self.aqm, aqm);
        put(&mut self.profile, profile);
        put(&mut self.burst, burst);
        if ecn || noecn {
            self.ecn = ecn;
            self.noecn = noecn;
        }
        put(&mut self.accounting, accounting);
        put(&mut self.overhead, overhead);
        put(&mut self.mask, mask);
        put(&mut self.buckets, buckets);
        put(&mut self.wireless, wireless);
        put(&mut self.timevarying, timevarying);
        put(&mut self.limit, limit);
        put(&mut self.rate, rate);
        put(&mut self.slot, slot);
        put(&mut self.seed, seed);
        put(&mut self.gap, gap);
        self.noerror |= noerror;
    }

    fn build(&self, files: &mut Files<'_>) -> Result<PipeConfig, ConfigError> {
        let err = |param: &'static str, reason: String| ConfigError { param, reason };
        let mut cfg = self.build_base(files)?;
        if let Some(w) = &self.wireless {
            let w = w.to_config().map_err(|e| err("wireless", e.to_string()))?;
            cfg = cfg.with_wireless(w)?;
        }
        // The link over time: a Markov graph, a timeline or a delay
        // trace, each read into the engine's graph (one at most).
        let over_time = [
            ("timevarying", "timevarying", &self.timevarying),
            ("timeline", "timeline", &self.timeline),
            ("delay", "delay trace:", &self.delay_trace),
        ];
        let given: Vec<&str> = over_time
            .iter()
            .filter(|(_, _, p)| p.is_some())
            .map(|(_, word, _)| *word)
            .collect();
        if given.len() > 1 {
            return Err(err(
                "timeline",
                format!(
                    "'{}' and '{}' both change the link over time: give one (a timeline can set the delay too)",
                    given[0], given[1]
                ),
            ));
        }
        for (param, _, path) in over_time {
            let Some(path) = path else { continue };
            if let Some(text) = files.text(param, path)? {
                let read = match param {
                    "timevarying" => files::parse_markov_graph(&text),
                    "timeline" => timeline::parse_timeline(&text),
                    _ => timeline::parse_delay_trace(&text),
                };
                let g = read.map_err(|e| err(param, format!("'{path}': {e}")))?;
                cfg = cfg.with_timevarying(g).map_err(|e| ConfigError {
                    param,
                    // A timeline's or a trace's states are its rows.
                    reason: match (param, e.reason.strip_prefix("state `line ")) {
                        ("timevarying", _) | (_, None) => e.reason,
                        (_, Some(rest)) => format!("'{path}': line {}", rest.replacen('`', ":", 1)),
                    },
                })?;
            }
        }
        Ok(cfg)
    }

    fn build_base(&self, files: &mut Files<'_>) -> Result<PipeConfig, ConfigError> {
        let err = |param: &'static str, reason: String| ConfigError { param, reason };
        check_buckets(self.buckets)?;
        if let (Some(_), Some(_)) = (self.rate, self.bw) {
            return Err(err(
                "rate",
                "'rate' and 'bw' cannot both be given (rate is netem's bw, in tc's units)".into(),
            ));
        }
        // netem's words bring netem's buffer: `limit N` (default 1000 with
        // `rate`) bounds what the pipe holds, and the queue before the
        // link is as large unless `queue` says otherwise.
        let limit = self.limit.or(self
            .rate
            .filter(|_| self.queue.is_none())
            .map(|_| NETEM_LIMIT));
        let queue = match (self.queue, limit) {
            (Some(q), _) => q,
            (None, Some(l)) => QueueLimit::Slots(l.min(pipelab_engine::config::MAX_QUEUE_SLOTS)),
            (None, None) => QueueLimit::default(),
        };
        let mut cfg = PipeConfig::new(
            self.rate
                .map(|r| r.rate)
                .or(self.bw)
                .unwrap_or(Rate::UNLIMITED),
            self.delay.unwrap_or(Duration::ZERO),
            queue,
        )?;
        if let Some(l) = limit {
            cfg = cfg.with_limit(l)?;
        }
        if let Some(seed) = self.seed {
            cfg = cfg.with_seed(seed);
        }
        if let Some(slot) = &self.slot {
            cfg = cfg.with_slot(self.slot_config(slot, files)?);
        }
        if self.delay.is_none() {
            if self.jitter.is_some() {
                return Err(err("delay", "a jitter needs a delay".into()));
            }
            if self.distribution.is_some() {
                return Err(err(
                    "distribution",
                    "a distribution needs a delay: write delay MU SIGMA distribution D".into(),
                ));
            }
        }
        let sigma = self.jitter.map_or(Duration::ZERO, |j| j.sigma);
        let corr = model_corr(self.jitter.and_then(|j| j.correlation));
        let dist = match &self.distribution {
            None | Some(DistSpec::Uniform) => Some(Distribution::Uniform),
            Some(
                d @ (DistSpec::Normal
                | DistSpec::Pareto
                | DistSpec::ParetoNormal
                | DistSpec::Table(_)),
            ) => netem_table("distribution", d, files)?,
            Some(DistSpec::File(path)) => {
                if self.jitter.is_some() {
                    return Err(err(
                        "distribution",
                        "a jitter has no meaning with file: (the file gives the spread); write delay MU distribution file:PATH".into(),
                    ));
                }
                match files.text("distribution", path)? {
                    None => None,
                    Some(text) => Some(Distribution::Empirical(
                        files::parse_distribution(&text)
                            .map_err(|e| err("distribution", format!("'{path}': {e}")))?,
                    )),
                }
            }
        };
        // netem's order (jitter may reorder, its tfifo) unless netem's
        // `rate` is given: netem then sends each packet after the one
        // ahead, never before it.
        let order = self.jitter_order.unwrap_or(if self.rate.is_some() {
            JitterOrder::Keep
        } else {
            JitterOrder::Allow
        });
        if let (Some(mu), Some(dist)) = (self.delay, dist) {
            if self.jitter.is_some() || self.distribution.is_some() {
                let d =
                    DelayDist::new(mu, sigma, corr, dist).map_err(|e| err("delay", e.message))?;
                cfg = cfg.with_jitter(d, order);
            }
        }
        cfg = cfg.with_jitter_order(order);
        if let Some([k, p, h, r]) = self.plr_ge {
            if self.plr.is_some() || self.loss.is_some() {
                return Err(err(
                    "plr",
                    "ipfw's 'plr K,p,H,r' is the loss model: no other plr or loss".into(),
                ));
            }
            let mut g = GilbertElliott::netem_defaults(model_p(p));
            g.r = model_p(r);
            g.one_minus_h = model_p(h);
            g.one_minus_k = model_p(k);
            cfg = cfg.with_loss(LossConfig::GilbertElliott(g));
        }
        match (self.plr, &self.loss) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "loss",
                    "'plr' and 'loss' cannot both be given (plr P is loss P·100%)".into(),
                ))
            }
            (Some(p), None) => {
                cfg = cfg.with_loss(LossConfig::Uniform(UniformLoss::new(
                    model_p(p),
                    ModelProbability::ZERO,
                )))
            }
            (None, Some(loss)) => {
                if let Some(l) = self.loss_config(loss, files)? {
                    cfg = cfg.with_loss(l);
                }
            }
            (None, None) => {}
        }
        if let Some(d) = self.duplicate {
            cfg = cfg.with_duplicate(DuplicateConfig::new(
                model_p(d.p),
                model_corr(d.correlation),
            ));
        }
        match (self.reorder, self.gap) {
            (Some(ReorderSpec::Netem { gap: Some(_), .. }), Some(_)) => {
                return Err(err(
                    "gap",
                    "'gap' is given twice (with reorder and alone)".into(),
                ))
            }
            (Some(ReorderSpec::Swap(_)), Some(_)) => {
                return Err(err(
                    "gap",
                    "'gap' goes with netem's reorder, not reorder swap".into(),
                ))
            }
            (Some(ReorderSpec::Netem { chance, gap }), alone) => {
                cfg = cfg.with_reorder(ReorderConfig::new(
                    model_p(chance.p),
                    model_corr(chance.correlation),
                    gap.or(alone).unwrap_or(1),
                ))
            }
            (Some(ReorderSpec::Swap(p)), None) => cfg = cfg.with_swap(SwapConfig { p: model_p(p) }),
            // tc-netem(8): `gap 5 delay 10ms` sends every 5th packet at
            // once (tc itself asks for a reorder probability; the man
            // page's meaning is `reorder 100% gap 5`).
            (None, Some(g)) => {
                cfg = cfg.with_reorder(ReorderConfig::new(
                    ModelProbability::ONE,
                    ModelProbability::ZERO,
                    g,
                ))
            }
            (None, None) => {}
        }

        match (self.corrupt, self.ber) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "ber",
                    "'corrupt' and 'ber' cannot both be given (both corrupt packets)".into(),
                ))
            }
            (Some(c), None) => {
                cfg = cfg.with_corrupt(CorruptConfig::Netem(NetemCorrupt {
                    p: model_p(c.p),
                    correlation: model_corr(c.correlation),
                }))
            }
            (None, Some(b)) => {
                let ber = BitErrorRate::new(b.as_f64()).map_err(|e| err("ber", e.message))?;
                cfg = cfg.with_corrupt(CorruptConfig::Ber(ber));
            }
            (None, None) => {}
        }
        self.link_extras(cfg, files)
    }

    fn loss_config(
        &self,
        loss: &LossSpec,
        files: &mut Files<'_>,
    ) -> Result<Option<LossConfig>, ConfigError> {
        let err = |reason: String| ConfigError {
            param: "loss",
            reason,
        };
        Ok(Some(match loss {
            LossSpec::Random(c) => {
                LossConfig::Uniform(UniformLoss::new(model_p(c.p), model_corr(c.correlation)))
            }
            LossSpec::Gemodel(ps) => {
                let Some(&p) = ps.first().filter(|_| ps.len() <= 4) else {
                    return Err(err("gemodel takes 1 to 4 percentages".into()));
                };
                let mut g = GilbertElliott::netem_defaults(model_p(p));
                let fields = [&mut g.r, &mut g.one_minus_h, &mut g.one_minus_k];
                for (slot, q) in fields.into_iter().zip(&ps[1..]) {
                    *slot = model_p(*q);
                }
                LossConfig::GilbertElliott(g)
            }
            LossSpec::State(ps) => {
                let Some(&p13) = ps.first().filter(|_| ps.len() <= 5) else {
                    return Err(err("state takes 1 to 5 percentages".into()));
                };
                let d = FourState::netem_defaults(model_p(p13));
                let mut v = [d.p31, d.p32, d.p23, d.p14];
                for (slot, q) in v.iter_mut().zip(&ps[1..]) {
                    *slot = model_p(*q);
                }
                LossConfig::FourState(
                    FourState::new(d.p13, v[0], v[1], v[2], v[3]).map_err(|e| err(e.message))?,
                )
            }
            LossSpec::Trace(path) => match files.text("loss", path)? {
                None => return Ok(None),
                Some(text) => LossConfig::Trace(
                    files::parse_loss_trace(&text).map_err(|e| err(format!("'{path}': {e}")))?,
                ),
            },
        }))
    }

    /// netem's slots, checked.
    fn slot_config(
        &self,
        slot: &SlotSpec,
        files: &mut Files<'_>,
    ) -> Result<SlotConfig, ConfigError> {
        let err = |reason: String| ConfigError {
            param: "slot",
            reason,
        };
        let delay = match &slot.delay {
            SlotDelaySpec::Range { min, max } => SlotDelay::Range {
                min: *min,
                max: max.unwrap_or(*min),
            },
            SlotDelaySpec::Dist {
                dist,
                delay,
                jitter,
            } => {
                let shape = match dist {
                    DistSpec::File(_) => {
                        return Err(err(
                            "a slot's distribution is a netem table, not file:".into()
                        ))
                    }
                    d => netem_table("slot", d, files)?.unwrap_or(Distribution::Uniform),
                };
                if *jitter == Duration::ZERO {
                    return Err(err("a slot distribution needs a jitter above zero".into()));
                }
                SlotDelay::Dist(
                    DelayDist::new(*delay, *jitter, ModelProbability::ZERO, shape)
                        .map_err(|e| err(e.message))?,
                )
            }
        };
        SlotConfig::new(delay, slot.packets, slot.bytes).map_err(|e| err(e.message))
    }

    /// The queue management, the link-server extras and the accounting.
    fn link_extras(
        &self,
        mut cfg: PipeConfig,
        files: &mut Files<'_>,
    ) -> Result<PipeConfig, ConfigError> {
        let err = |param: &'static str, reason: String| ConfigError { param, reason };
        if let Some(path) = &self.bw_trace {
            if self.bw.is_some() {
                return Err(err(
                    "bw",
                    "a bandwidth trace replaces the rate: give bw RATE or bw trace:FILE".into(),
                ));
            }
            if self.burst.is_some() {
                return Err(err(
                    "burst",
                    "a burst has no meaning with a bandwidth trace (bw trace:FILE)".into(),
                ));
            }
            if let Some(text) = files.text("bw", path)? {
                let t = files::parse_bw_trace(&text)
                    .map_err(|e| err("bw", format!("'{path}': {e}")))?;
                cfg = cfg.with_bw_trace(t);
            }
        }
        if let Some(a) = &self.aqm {
            let aqm = a.to_config(cfg.queue())?;
            cfg = cfg.with_aqm(aqm);
        }
        if let Some(path) = &self.profile {
            if let Some(text) = files.text("profile", path)? {
                let p = files::parse_profile(&text)
                    .map_err(|e| err("profile", format!("'{path}': {e}")))?;
                cfg = cfg.with_profile(p);
            }
        }
        if self.ecn && self.noecn {
            return Err(err("ecn", "'ecn' and 'noecn' cannot both be given".into()));
        }
        cfg = cfg.with_ecn(self.ecn);
        if let Some(b) = self.burst {
            let b = BurstConfig::new(b).map_err(|e| err("burst", e.message))?;
            cfg = cfg.with_burst(b);
        }
        let rate_overhead = self.rate.and_then(|r| {
            r.overhead.map(|o| OverheadSpec {
                overhead: o,
                cellsize: r.cellsize,
                celloverhead: r.celloverhead,
            })
        });
        let overhead = match (self.overhead, rate_overhead) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "overhead",
                    "the overhead is given twice (after rate and as overhead)".into(),
                ))
            }
            (a, b) => a.or(b),
        };
        match (self.accounting, overhead) {
            (Some(_), Some(_)) => return Err(err(
                "overhead",
                "'accounting' and 'overhead' cannot both be given (overhead is netem's accounting)"
                    .into(),
            )),
            (Some(AccountingSpec::L3), None) => cfg = cfg.with_accounting(Accounting::L3),
            (Some(AccountingSpec::L2(l)), None) => {
                let Accounting::L2 {
                    header,
                    fcs,
                    preamble,
                    ifg,
                    min_frame,
                } = Accounting::ETHERNET
                else {
                    return Ok(cfg);
                };
                cfg = cfg.with_accounting(Accounting::L2 {
                    header: l.header.unwrap_or(header),
                    fcs: l.fcs.unwrap_or(fcs),
                    preamble: l.preamble.unwrap_or(preamble),
                    ifg: l.ifg.unwrap_or(ifg),
                    min_frame: l.minframe.unwrap_or(min_frame),
                });
            }
            (None, Some(o)) => {
                let n = NetemOverhead::new(
                    o.overhead,
                    o.cellsize.unwrap_or(0),
                    o.celloverhead.unwrap_or(0),
                )
                .map_err(|e| err("overhead", e.message))?;
                cfg = cfg.with_accounting(Accounting::Netem(n));
            }
            (None, None) => {}
        }
        Ok(cfg)
    }

    /// True when no parameter was given.
    pub fn is_empty(&self) -> bool {
        *self == PipeSpec::default()
    }
}

impl fmt::Display for PipeSpec {
    /// The given parameters in canonical order: `bw 3Mbit/s delay 32ms
    /// 5ms 25% distribution normal jitter-order allow queue 20 loss 1%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        let mut word = |f: &mut fmt::Formatter<'_>, text: fmt::Arguments<'_>| {
            let r = write!(f, "{sep}{text}");
            sep = " ";
            r
        };
        if let Some(bw) = self.bw {
            word(f, format_args!("bw {bw}"))?;
        }
        if let Some(p) = &self.bw_trace {
            word(f, format_args!("bw trace:{p}"))?;
        }
        if let Some(p) = &self.delay_trace {
            word(f, format_args!("delay trace:{p}"))?;
        }
        if self.delay.is_some() || self.jitter.is_some() {
            let d = self.delay.unwrap_or(Duration::ZERO);
            word(f, format_args!("delay {d}"))?;
            if let Some(j) = self.jitter {
                write!(f, " {}", j.sigma)?;
                if let Some(c) = j.correlation {
                    write!(f, " {}", format_percent(c))?;
                }
            }
        }
        if let Some(d) = &self.distribution {
            word(f, format_args!("distribution {d}"))?;
        }
        if let Some(o) = self.jitter_order {
            let o = match o {
                JitterOrder::Keep => "keep",
                JitterOrder::Allow => "allow",
            };
            word(f, format_args!("jitter-order {o}"))?;
        }
        if let Some(q) = self.queue {
            word(f, format_args!("queue {}", format_queue(q)))?;
        }
        if self.spill {
            word(f, format_args!("spill"))?;
        }
        if self.droptail {
            word(f, format_args!("droptail"))?;
        }
        // netem's limit goes before the AQM: after `codel` or `pie`,
        // `limit` is read as a (refused) parameter of theirs.
        if let Some(l) = self.limit {
            word(f, format_args!("limit {l}"))?;
        }
        if let Some(a) = &self.aqm {
            word(f, format_args!("{a}"))?;
        }
        if let Some(p) = self.plr {
            word(f, format_args!("plr {p}"))?;
        }
        if let Some([k, p, h, r]) = self.plr_ge {
            word(f, format_args!("plr {k},{p},{h},{r}"))?;
        }
        if let Some(l) = &self.loss {
            word(f, format_args!("loss {l}"))?;
        }
        if let Some(d) = self.duplicate {
            word(f, format_args!("duplicate {d}"))?;
        }
        // netem's `gap` alone goes before `reorder`: after it, `gap` is
        // read as the reorder's own.
        if let Some(g) = self.gap {
            word(f, format_args!("gap {g}"))?;
        }
        if let Some(r) = self.reorder {
            word(f, format_args!("reorder {r}"))?;
        }
        if let Some(c) = self.corrupt {
            word(f, format_args!("corrupt {c}"))?;
        }
        if let Some(b) = self.ber {
            word(f, format_args!("ber {b}"))?;
        }
        if let Some(p) = &self.profile {
            word(f, format_args!("profile {p}"))?;
        }
        if let Some(b) = self.burst {
            word(f, format_args!("burst {}", format_size(b)))?;
        }
        if self.ecn {
            word(f, format_args!("ecn"))?;
        }
        if let Some(a) = &self.accounting {
            word(f, format_args!("accounting {a}"))?;
        }
        if let Some(o) = &self.overhead {
            word(f, format_args!("overhead {o}"))?;
        }
        if let Some(m) = &self.mask {
            word(f, format_args!("mask {m}"))?;
        }
        if let Some(b) = self.buckets {
            word(f, format_args!("buckets {b}"))?;
        }
        if let Some(w) = &self.wireless {
            word(f, format_args!("{w}"))?;
        }
        if let Some(p) = &self.timevarying {
            word(f, format_args!("timevarying {p}"))?;
        }
        if let Some(p) = &self.timeline {
            word(f, format_args!("timeline {p}"))?;
        }
        if let Some(r) = &self.rate {
            word(f, format_args!("rate {r}"))?;
        }
        if let Some(sl) = &self.slot {
            word(f, format_args!("slot {sl}"))?;
        }
        if let Some(sd) = self.seed {
            word(f, format_args!("seed {sd}"))?;
        }
        if self.noecn {
            word(f, format_args!("noecn"))?;
        }
        if self.noerror {
            word(f, format_args!("noerror"))?;
        }
        Ok(())
    }
}

/// `buckets N` must be in `1..=65536`.
fn check_buckets(b: Option<u32>) -> Result<(), ConfigError> {
    match b {
        Some(n) if n == 0 || n > MAX_BUCKETS => Err(ConfigError {
            param: "buckets",
            reason: format!("{n} is not in 1..={MAX_BUCKETS}"),
        }),
        _ => Ok(()),
    }
}

/// A `mask` as written: `mask all`, or any of `src-ip M dst-ip M src-ip6
/// /N dst-ip6 /N src-port M dst-port M proto M` (ipfw's words; an absent
/// field masks nothing). Printed in that order, masks in hex.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MaskSpec {
    /// `all`: every bit of the 5-tuple (the other fields then override).
    pub all: bool,
    /// `src-ip 0xffffff00` or `src-ip 255.255.255.0`.
    pub src_ip: Option<u32>,
    /// `dst-ip`.
    pub dst_ip: Option<u32>,
    /// `src-ip6 /N`: the IPv6 source prefix length kept, `0..=128`.
    pub src_ip6: Option<u8>,
    /// `dst-ip6 /N`.
    pub dst_ip6: Option<u8>,
    /// `src-port 0xffff` or `src-port 65535`.
    pub src_port: Option<u16>,
    /// `dst-port`.
    pub dst_port: Option<u16>,
    /// `proto 0xff` or `proto 255`.
    pub proto: Option<u8>,
}

impl MaskSpec {
    /// The mask words.
    pub const WORDS: &'static [&'static str] = &[
        "all", "src-ip", "dst-ip", "src-ip6", "dst-ip6", "src-port", "dst-port", "proto",
    ];

    /// The engine's mask.
    pub fn to_mask(&self) -> FlowMask {
        let base = if self.all {
            FlowMask::ALL
        } else {
            FlowMask::default()
        };
        FlowMask {
            proto: self.proto.unwrap_or(base.proto),
            src_ip: self.src_ip.unwrap_or(base.src_ip),
            dst_ip: self.dst_ip.unwrap_or(base.dst_ip),
            src_ip6: self.src_ip6.unwrap_or(base.src_ip6),
            dst_ip6: self.dst_ip6.unwrap_or(base.dst_ip6),
            src_port: self.src_port.unwrap_or(base.src_port),
            dst_port: self.dst_port.unwrap_or(base.dst_port),
        }
    }
}

impl fmt::Display for MaskSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut words: Vec<String> = Vec::new();
        if self.all {
            words.push("all".into());
        }
        if let Some(m) = self.src_ip {
            words.push(format!("src-ip 0x{m:08x}"));
        }
        if let Some(m) = self.dst_ip {
            words.push(format!("dst-ip 0x{m:08x}"));
        }
        if let Some(n) = self.src_ip6 {
            words.push(format!("src-ip6 /{n}"));
        }
        if let Some(n) = self.dst_ip6 {
            words.push(format!("dst-ip6 /{n}"));
        }
        if let Some(m) = self.src_port {
            words.push(format!("src-port 0x{m:04x}"));
        }
        if let Some(m) = self.dst_port {
            words.push(format!("dst-port 0x{m:04x}"));
        }
        if let Some(m) = self.proto {
            words.push(format!("proto 0x{m:02x}"));
        }
        f.write_str(&words.join(" "))
    }
}

/// The parameters of `sched N config`, as written. Which types exist and
/// which parameters each takes is the engine's scheduler registry
/// (`pipelab_engine::sched::registry`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SchedSpec {
    /// `type T`, a name of the registry (default `wf2q+`, as ipfw). The
    /// kind's own parameters are the defaults; `target` and `interval`
    /// below override them.
    pub kind: Option<SchedKind>,
    /// `quantum N` bytes: DRR's and fq_codel's credit per turn per unit
    /// of weight, QFQ's largest packet (default 1514).
    pub quantum: Option<u32>,
    /// `target D` (a type that takes it: fq_codel, default 5ms).
    pub target: Option<Duration>,
    /// `interval D` (a type that takes it: fq_codel, default 100ms).
    pub interval: Option<Duration>,
    /// `mask ...`: one instance of the scheduler, with its own link, per
    /// masked key (dummynet's scheduler mask; the same as a mask on pipe
    /// `N`, which is how it runs).
    pub mask: Option<MaskSpec>,
    /// `buckets N`: the instance table's size.
    pub buckets: Option<u32>,
    /// `pipe N` (ipfw's `sched N config pipe N type T`): the pipe the
    /// scheduler serves, which is pipe `N` (a scheduler takes its pipe's
    /// number); kept to print back as written.
    pub pipe: Option<u32>,
    /// `noecn` (ipfw's fq_codel/fq_pie word): drop, do not mark (the
    /// default).
    pub noecn: bool,
    /// `ecn` (ipfw's fq_codel/fq_pie word): the flow queues' CoDel or PIE
    /// marks ECN-capable packets CE instead of dropping them (RFC 8290
    /// §4.1, RFC 8033 §5.1).
    pub ecn: bool,
}

impl SchedSpec {
    /// The parameters as the engine takes them.
    pub fn params(&self) -> SchedParams {
        SchedParams {
            quantum: self.quantum,
            target: self.target,
            interval: self.interval,
            // `noecn` is the default: it changes nothing, for any type.
            ecn: self.ecn.then_some(true),
        }
    }

    /// The engine's validated configuration; a parameter the type does not
    /// take is refused.
    pub fn to_config(&self) -> Result<SchedConfig, ConfigError> {
        SchedConfig::from_params(self.kind.unwrap_or(SchedKind::Wf2q), &self.params())
    }
}

impl fmt::Display for SchedSpec {
    /// `type drr quantum 3000`, `type fq_codel target 5ms interval 100ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut words: Vec<String> = Vec::new();
        if let Some(p) = self.pipe {
            words.push(format!("pipe {p}"));
        }
        if let Some(k) = self.kind {
            words.push(format!("type {}", k.name()));
        }
        if let Some(q) = self.quantum {
            words.push(format!("quantum {q}"));
        }
        if let Some(t) = self.target {
            words.push(format!("target {t}"));
        }
        if let Some(i) = self.interval {
            words.push(format!("interval {i}"));
        }
        if let Some(m) = &self.mask {
            words.push(format!("mask {m}"));
        }
        if let Some(b) = self.buckets {
            words.push(format!("buckets {b}"));
        }
        if self.noecn {
            words.push("noecn".into());
        }
        if self.ecn {
            words.push("ecn".into());
        }
        f.write_str(&words.join(" "))
    }
}

/// What a flow queue feeds: `sched S` or `pipe P` (a pipe `N` implicitly
/// has scheduler `N`, ipfw's convention, so both name the pipe whose link
/// serves the queue).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueTarget {
    /// `sched S`.
    Sched(u32),
    /// `pipe P`.
    Pipe(u32),
}

impl QueueTarget {
    /// The number of the pipe (and scheduler) served.
    pub fn number(self) -> u32 {
        match self {
            QueueTarget::Sched(n) | QueueTarget::Pipe(n) => n,
        }
    }
}

impl fmt::Display for QueueTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueTarget::Sched(n) => write!(f, "sched {n}"),
            QueueTarget::Pipe(n) => write!(f, "pipe {n}"),
        }
    }
}

/// The parameters of `queue N config` (ipfw's flowset), as written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct QueueSpec {
    /// `weight W` (`1..=65536`, default 1; the priority under `prio`).
    pub weight: Option<u32>,
    /// `sched S` or `pipe P` (required).
    pub target: QueueTarget,
    /// `queue N|SIZE`: each instance's limit (default 50 slots).
    pub queue: Option<QueueLimit>,
    /// `red ...`, `gred ...`, `codel ...` or `pie ...` on each instance.
    pub aqm: Option<AqmSpec>,
    /// `mask ...`: one instance per masked flow key.
    pub mask: Option<MaskSpec>,
    /// `buckets N`: the instance table's size (at most `16 × N` instances).
    pub buckets: Option<u32>,
    /// `ecn` (true) or `noecn` (false): whether the queue management marks
    /// ECN-capable packets CE instead of dropping them (default no).
    pub ecn: Option<bool>,
    /// `droptail`: the tail-drop queue, written out (the default); not
    /// with a queue management.
    pub droptail: bool,
}

impl QueueSpec {
    /// A queue feeding `target` with every other parameter absent.
    pub fn new(target: QueueTarget) -> QueueSpec {
        QueueSpec {
            weight: None,
            target,
            queue: None,
            aqm: None,
            mask: None,
            buckets: None,
            ecn: None,
            droptail: false,
        }
    }

    /// The engine's validated flow queue parameters: weight, limit and
    /// the queue management each instance runs.
    pub fn to_flow_spec(&self) -> Result<FlowSpec, ConfigError> {
        check_buckets(self.buckets)?;
        let limit = self.queue.unwrap_or_default();
        let spec =
            FlowSpec::new(self.weight.unwrap_or(1), limit)?.with_ecn(self.ecn.unwrap_or(false));
        Ok(match &self.aqm {
            Some(a) => spec.with_aqm(a.to_config(limit)?),
            None => spec,
        })
    }
}

impl fmt::Display for QueueSpec {
    /// `weight 20 sched 5 queue 20 red ... mask src-ip 0xffffffff buckets 8`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(w) = self.weight {
            write!(f, "weight {w} ")?;
        }
        write!(f, "{}", self.target)?;
        if let Some(q) = self.queue {
            write!(f, " queue {}", format_queue(q))?;
        }
        if self.droptail {
            f.write_str(" droptail")?;
        }
        if let Some(a) = &self.aqm {
            write!(f, " {a}")?;
        }
        if let Some(m) = &self.mask {
            write!(f, " mask {m}")?;
        }
        if let Some(b) = self.buckets {
            write!(f, " buckets {b}")?;
        }
        match self.ecn {
            Some(true) => f.write_str(" ecn")?,
            Some(false) => f.write_str(" noecn")?,
            None => {}
        }
        Ok(())
    }
}

/// What a rule does with a matching packet.
/// What a rule does with a matching packet.
///
/// `pipe tablearg` and `skipto tablearg` are their own variants, so that
/// `Pipe(n)` and `Skipto(n)` always name a concrete number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// `allow` (also `accept`, `pass`, `permit`): leave the classifier.
    Allow,
    /// `deny` (also `drop`): drop the packet.
    Deny,
    /// `count`: update counters and continue with the next rule.
    Count,
    /// `skipto N`: continue at the first rule numbered `N` or more; `N`
    /// must be greater than the rule's own number.
    Skipto(u32),
    /// `pipe N`: send the packet through pipe `N`.
    Pipe(u32),
    /// `queue N`: send the packet to flow queue `N` (of a scheduler).
    Queue(u32),
    /// `pipe tablearg`: send the packet through the pipe numbered by the
    /// value of the rule's last matching `table(N)` lookup (the PlanetLab
    /// per-user dispatch, planetlab-dummynet-emulation §3.6). The rule must
    /// look up a table.
    PipeTablearg,
    /// `skipto tablearg`: continue at the first rule numbered at least the
    /// value of the rule's last matching `table(N)` lookup (a value not
    /// after the rule continues with the next rule).
    SkiptoTablearg,
    /// `reset` (ipfw): drop the packet and answer a TCP one with a reset.
    /// The classifier drops it (a rule drop); the answer is the live
    /// modes' to send.
    Reset,
    /// `unreach CODE` (ipfw; `reject` is `unreach host`): drop the packet
    /// and answer with an ICMP unreachable of that code (0..=255). The
    /// classifier drops it (a rule drop); the answer is the live modes'.
    Unreach(u8),
    /// `check-state [:NAME|:any]` (ipfw): a packet of a flow a `keep-state`
    /// rule saw (either direction) takes that rule's action; others go on
    /// with the next rule. The rule has no body; its flow name is
    /// [`RuleSpec::state_flow`].
    CheckState,
}

/// ipfw's names of the ICMP unreachable codes, by code (ipfw(8),
/// `unreach code`).
pub const UNREACH_CODES: [&str; 16] = [
    "net",
    "host",
    "protocol",
    "port",
    "needfrag",
    "srcfail",
    "net-unknown",
    "host-unknown",
    "isolated",
    "net-prohib",
    "host-prohib",
    "tosnet",
    "toshost",
    "filter-prohib",
    "host-precedence",
    "precedence-cutoff",
];

impl Action {
    /// True for the actions whose number comes from a table lookup.
    pub fn is_tablearg(self) -> bool {
        matches!(self, Action::PipeTablearg | Action::SkiptoTablearg)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Allow => f.write_str("allow"),
            Action::Deny => f.write_str("deny"),
            Action::Count => f.write_str("count"),
            Action::Skipto(n) => write!(f, "skipto {n}"),
            Action::Pipe(n) => write!(f, "pipe {n}"),
            Action::Queue(n) => write!(f, "queue {n}"),
            Action::PipeTablearg => f.write_str("pipe tablearg"),
            Action::SkiptoTablearg => f.write_str("skipto tablearg"),
            Action::Reset => f.write_str("reset"),
            Action::Unreach(c) => match UNREACH_CODES.get(*c as usize) {
                Some(name) => write!(f, "unreach {name}"),
                None => write!(f, "unreach {c}"),
            },
            Action::CheckState => f.write_str("check-state"),
        }
    }
}

/// The protocol a rule matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proto {
    /// `ip` (also `all`): any IPv4 or IPv6 packet.
    Ip,
    /// `ip4`: IPv4 only.
    Ip4,
    /// `ip6`: IPv6 only.
    Ip6,
    /// `tcp` (protocol 6).
    Tcp,
    /// `udp` (protocol 17).
    Udp,
    /// `icmp` (protocol 1).
    Icmp,
    /// A protocol number as written, `0..=255` (kept as written: `6` prints
    /// as `6`, not `tcp`).
    Number(u8),
}

/// The protocols database as FreeBSD ships it (`lib/libc/net/protocols`,
/// installed as `/etc/protocols`): each name and alias, in lower case,
/// with its number. ipfw looks a rule's protocol up there
/// (`sbin/ipfw/ipfw2.c`, `add_proto0`, `getprotobyname(3)`). `ip` (0) and
/// `ipv6` (41) are not here: ipfw reads them as any packet and as IPv6
/// packets (`add_proto_compat`); `divert` (258) is not an IP protocol.
pub const PROTOCOLS: &[(&str, u8)] = &[
    ("icmp", 1),
    ("igmp", 2),
    ("ggp", 3),
    ("ipencap", 4),
    ("ip-encap", 4),
    ("st2", 5),
    ("tcp", 6),
    ("cbt", 7),
    ("egp", 8),
    ("igp", 9),
    ("bbn-rcc", 10),
    ("bbn-rcc-mon", 10),
    ("nvp", 11),
    ("nvp-ii", 11),
    ("pup", 12),
    ("argus", 13),
    ("emcon", 14),
    ("xnet", 15),
    ("chaos", 16),
    ("udp", 17),
    ("mux", 18),
    ("dcn", 19),
    ("dcn-meas", 19),
    ("hmp", 20),
    ("prm", 21),
    ("xns-idp", 22),
    ("trunk-1", 23),
    ("trunk-2", 24),
    ("leaf-1", 25),
    ("leaf-2", 26),
    ("rdp", 27),
    ("irtp", 28),
    ("iso-tp4", 29),
    ("netblt", 30),
    ("mfe-nsp", 31),
    ("merit-inp", 32),
    ("dccp", 33),
    ("3pc", 34),
    ("idpr", 35),
    ("xtp", 36),
    ("ddp", 37),
    ("idpr-cmtp", 38),
    ("tp++", 39),
    ("il", 40),
    ("sdrp", 42),
    ("ipv6-route", 43),
    ("ipv6-frag", 44),
    ("idrp", 45),
    ("rsvp", 46),
    ("gre", 47),
    ("dsr", 48),
    ("bna", 49),
    ("esp", 50),
    ("ah", 51),
    ("i-nlsp", 52),
    ("swipe", 53),
    ("narp", 54),
    ("mobile", 55),
    ("tlsp", 56),
    ("skip", 57),
    ("ipv6-icmp", 58),
    ("icmp6", 58),
    ("ipv6-nonxt", 59),
    ("ipv6-opts", 60),
    ("cftp", 62),
    ("sat-expak", 64),
    ("kryptolan", 65),
    ("rvd", 66),
    ("ippc", 67),
    ("sat-mon", 69),
    ("visa", 70),
    ("ipcv", 71),
    ("cpnx", 72),
    ("cphb", 73),
    ("wsn", 74),
    ("pvp", 75),
    ("br-sat-mon", 76),
    ("sun-nd", 77),
    ("wb-mon", 78),
    ("wb-expak", 79),
    ("iso-ip", 80),
    ("vmtp", 81),
    ("secure-vmtp", 82),
    ("vines", 83),
    ("ttp", 84),
    ("nsfnet-igp", 85),
    ("dgp", 86),
    ("tcf", 87),
    ("eigrp", 88),
    ("ospf", 89),
    ("ospfigp", 89),
    ("sprite-rpc", 90),
    ("larp", 91),
    ("mtp", 92),
    ("ax.25", 93),
    ("ipip", 94),
    ("micp", 95),
    ("scc-sp", 96),
    ("etherip", 97),
    ("encap", 98),
    ("gmtp", 100),
    ("ifmp", 101),
    ("pnni", 102),
    ("pim", 103),
    ("aris", 104),
    ("scps", 105),
    ("qnx", 106),
    ("a/n", 107),
    ("ipcomp", 108),
    ("snp", 109),
    ("compaq-peer", 110),
    ("ipx-in-ip", 111),
    ("carp", 112),
    ("vrrp", 112),
    ("pgm", 113),
    ("l2tp", 115),
    ("ddx", 116),
    ("iatp", 117),
    ("stp", 118),
    ("srp", 119),
    ("uti", 120),
    ("smp", 121),
    ("sm", 122),
    ("ptp", 123),
    ("isis", 124),
    ("fire", 125),
    ("crtp", 126),
    ("crudp", 127),
    ("sscopmce", 128),
    ("iplt", 129),
    ("sps", 130),
    ("pipe", 131),
    ("sctp", 132),
    ("fc", 133),
    ("rsvp-e2e-ignore", 134),
    ("mobility-header", 135),
    ("udplite", 136),
    ("mpls-in-ip", 137),
    ("manet", 138),
    ("hip", 139),
    ("shim6", 140),
    ("wesp", 141),
    ("rohc", 142),
    ("pfsync", 240),
];

impl Proto {
    /// The protocol a name of the protocols database ([`PROTOCOLS`]) or
    /// one of ipfw's own words (`ip`, `all`, `ip4`, `ipv4`, `ip6`,
    /// `ipv6`) stands for, compared without case; `tcp`, `udp` and
    /// `icmp` are their own variants, any other name its number.
    pub fn from_name(name: &str) -> Option<Proto> {
        let lower = name.to_ascii_lowercase();
        Some(match lower.as_str() {
            "ip" | "all" => Proto::Ip,
            "ip4" | "ipv4" => Proto::Ip4,
            "ip6" | "ipv6" => Proto::Ip6,
            "tcp" => Proto::Tcp,
            "udp" => Proto::Udp,
            "icmp" => Proto::Icmp,
            w => {
                let &(_, n) = PROTOCOLS.iter().find(|(p, _)| *p == w)?;
                Proto::Number(n)
            }
        })
    }

    /// The IP protocol number, `None` for `ip`, `ip4`, `ip6`.
    pub fn number(self) -> Option<u8> {
        match self {
            Proto::Ip | Proto::Ip4 | Proto::Ip6 => None,
            Proto::Tcp => Some(6),
            Proto::Udp => Some(17),
            Proto::Icmp => Some(1),
            Proto::Number(n) => Some(n),
        }
    }

    /// True if port numbers make sense with this protocol (ipfw accepts
    /// ports with `ip`, meaning TCP, UDP or SCTP packets).
    pub fn allows_ports(self) -> bool {
        matches!(self.number(), None | Some(6) | Some(17) | Some(132))
    }
}

impl fmt::Display for Proto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Proto::Ip => f.write_str("ip"),
            Proto::Ip4 => f.write_str("ip4"),
            Proto::Ip6 => f.write_str("ip6"),
            Proto::Tcp => f.write_str("tcp"),
            Proto::Udp => f.write_str("udp"),
            Proto::Icmp => f.write_str("icmp"),
            Proto::Number(n) => write!(f, "{n}"),
        }
    }
}

/// An IPv4 or IPv6 network: an address and a prefix length, host bits zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

impl IpNet {
    /// The network of `addr` with `prefix` bits; host bits are cleared (as
    /// ipfw does with `10.0.0.1/8`). `None` if `prefix` is longer than the
    /// address (32 or 128).
    pub fn new(addr: IpAddr, prefix: u8) -> Option<IpNet> {
        let addr = match addr {
            IpAddr::V4(a) => {
                if prefix > 32 {
                    return None;
                }
                let mask = u32::MAX.checked_shl(32 - prefix as u32).unwrap_or(0);
                IpAddr::V4((u32::from(a) & mask).into())
            }
            IpAddr::V6(a) => {
                if prefix > 128 {
                    return None;
                }
                let mask = u128::MAX.checked_shl(128 - prefix as u32).unwrap_or(0);
                IpAddr::V6((u128::from(a) & mask).into())
            }
        };
        Some(IpNet { addr, prefix })
    }

    /// The single address `addr` (prefix 32 or 128).
    pub fn host(addr: IpAddr) -> IpNet {
        let prefix = if addr.is_ipv4() { 32 } else { 128 };
        IpNet { addr, prefix }
    }

    /// The network address (host bits zero).
    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    /// The prefix length.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// True if `ip` is inside this network (never across IPv4/IPv6).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => {
                IpNet::new(ip, self.prefix).is_some_and(|n| n.addr == self.addr)
            }
            _ => false,
        }
    }

    fn is_host(&self) -> bool {
        self.prefix == if self.addr.is_ipv4() { 32 } else { 128 }
    }
}

impl fmt::Display for IpNet {
    /// `10.0.0.1` for a host, `192.168.4.0/24` for a network.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_host() {
            write!(f, "{}", self.addr)
        } else {
            write!(f, "{}/{}", self.addr, self.prefix)
        }
    }
}

/// Which addresses a source or destination matches.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AddrMatch {
    /// `any`.
    Any,
    /// `me`: any address of the emulating host (resolved by the runner).
    Me,
    /// One address or network: `10.0.0.1`, `192.168.4.0/24`, `2001:db8::/32`.
    Net(IpNet),
    /// `{a,b,c}`: any of these addresses or networks (never empty).
    List(Vec<IpNet>),
    /// `table(N)` or `table(N,VALUE)`: an address in lookup table `N`
    /// (longest prefix match), whose value is `VALUE` if given. A matching
    /// lookup sets the rule's `tablearg`.
    Table {
        /// The table, a number `0..=65535` or a name.
        table: TableId,
        /// The value the entry must have, if given.
        value: Option<u32>,
    },
}

impl fmt::Display for AddrMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AddrMatch::Any => f.write_str("any"),
            AddrMatch::Me => f.write_str("me"),
            AddrMatch::Net(n) => write!(f, "{n}"),
            AddrMatch::List(l) => {
                f.write_str("{")?;
                for (i, n) in l.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{n}")?;
                }
                f.write_str("}")
            }
            AddrMatch::Table { table, value: None } => write!(f, "table({table})"),
            AddrMatch::Table {
                table,
                value: Some(v),
            } => write!(f, "table({table},{v})"),
        }
    }
}

/// An inclusive port range, `lo <= hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortRange {
    lo: u16,
    hi: u16,
}

impl PortRange {
    /// `lo-hi`; `None` if `lo > hi`.
    pub fn new(lo: u16, hi: u16) -> Option<PortRange> {
        (lo <= hi).then_some(PortRange { lo, hi })
    }
    /// A single port.
    pub fn single(port: u16) -> PortRange {
        PortRange { lo: port, hi: port }
    }
    /// The first port.
    pub fn lo(&self) -> u16 {
        self.lo
    }
    /// The last port.
    pub fn hi(&self) -> u16 {
        self.hi
    }
    /// True if `port` is in the range.
    pub fn contains(&self, port: u16) -> bool {
        self.lo <= port && port <= self.hi
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lo == self.hi {
            write!(f, "{}", self.lo)
        } else {
            write!(f, "{}-{}", self.lo, self.hi)
        }
    }
}

/// Writes a port list as `80,443,8000-8080`.
fn write_ports(f: &mut fmt::Formatter<'_>, ports: &[PortRange]) -> fmt::Result {
    for (i, p) in ports.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{p}")?;
    }
    Ok(())
}

/// The source or destination of a rule: `[not] ADDR [PORTS]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// `not`: match addresses *not* in `addr` (ports are not negated).
    pub not: bool,
    /// The addresses.
    pub addr: AddrMatch,
    /// The ports, any of which matches; empty means any port.
    pub ports: Vec<PortRange>,
}

impl Endpoint {
    /// `any`, any port.
    pub fn any() -> Endpoint {
        Endpoint {
            not: false,
            addr: AddrMatch::Any,
            ports: Vec::new(),
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.not {
            f.write_str("not ")?;
        }
        write!(f, "{}", self.addr)?;
        if !self.ports.is_empty() {
            f.write_str(" ")?;
            write_ports(f, &self.ports)?;
        }
        Ok(())
    }
}

/// The largest lookup table number (`table(N)`, `table N add ...`).
pub const MAX_TABLE: u32 = 65_535;

/// The longest table or state flow name (ipfw's object names: at most 63
/// characters).
pub const MAX_NAME_LEN: usize = 63;

/// Is `s` a valid ipfw object name (a table's, a state flow's): 1 to 63 of
/// `A-Z a-z 0-9 _ - .` (ipfw's `ipfw_check_object_name`)?
pub fn is_object_name(s: &str) -> bool {
    (1..=MAX_NAME_LEN).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// A lookup table: a number (`table 1 add ...`, `table(1)`) or a name
/// (ipfw's `table T1 create`, `table(T1)`). Since FreeBSD 10 ipfw keeps
/// every table by name and a number is a name of digits, so both are the
/// same object: the same commands apply to both, and the classifier looks
/// both up the same way. A word of digits only is a number.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TableId {
    /// `0..=65535`.
    Number(u32),
    /// An ipfw object name that is not all digits ([`is_object_name`]).
    Name(String),
}

impl From<u32> for TableId {
    fn from(n: u32) -> TableId {
        TableId::Number(n)
    }
}

impl fmt::Display for TableId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableId::Number(n) => write!(f, "{n}"),
            TableId::Name(s) => f.write_str(s),
        }
    }
}

/// An inclusive range of numbers, `lo <= hi`, for the options that take
/// lists of values or ranges (`mac-type`, `iplen`, `dscp`, `uid`). Each
/// option prints its own way (`mac-type` in hexadecimal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NumRange {
    lo: u32,
    hi: u32,
}

impl NumRange {
    /// `lo-hi`; `None` if `lo > hi`.
    pub fn new(lo: u32, hi: u32) -> Option<NumRange> {
        (lo <= hi).then_some(NumRange { lo, hi })
    }
    /// A single value.
    pub fn single(v: u32) -> NumRange {
        NumRange { lo: v, hi: v }
    }
    /// The first value.
    pub fn lo(&self) -> u32 {
        self.lo
    }
    /// The last value.
    pub fn hi(&self) -> u32 {
        self.hi
    }
    /// True if `v` is in the range.
    pub fn contains(&self, v: u32) -> bool {
        self.lo <= v && v <= self.hi
    }
}

/// Writes `1,5-9` (decimal) or `0x0800,0x86dd` (`hex`, 4 digits).
fn write_ranges(f: &mut fmt::Formatter<'_>, rs: &[NumRange], hex: bool) -> fmt::Result {
    for (i, r) in rs.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        let one = |f: &mut fmt::Formatter<'_>, v: u32| {
            if hex {
                write!(f, "{v:#06x}")
            } else {
                write!(f, "{v}")
            }
        };
        one(f, r.lo)?;
        if r.hi != r.lo {
            f.write_str("-")?;
            one(f, r.hi)?;
        }
    }
    Ok(())
}

/// One side of `mac DST SRC`: `any` or an Ethernet address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MacMatch {
    /// `any`.
    Any,
    /// `aa:bb:cc:dd:ee:ff`.
    Addr([u8; 6]),
}

impl fmt::Display for MacMatch {
    /// `any`, or six lower-case hex pairs separated by colons.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MacMatch::Any => f.write_str("any"),
            MacMatch::Addr(a) => write!(
                f,
                "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
                a[0], a[1], a[2], a[3], a[4], a[5]
            ),
        }
    }
}

/// The TCP flags of `tcpflags`: those that must be set and those that
/// must be clear (`!syn`). Bits as in the TCP header (FIN = 0x01 ...
/// CWR = 0x80); a flag is never in both sets, and at least one is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TcpFlags {
    set: u8,
    clear: u8,
}

impl TcpFlags {
    /// ipfw's flag words, in bit order (bit `i` is `1 << i`).
    pub const NAMES: [&'static str; 8] = ["fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr"];

    /// `None` if a flag is both set and clear, or no flag is named.
    pub fn new(set: u8, clear: u8) -> Option<TcpFlags> {
        (set & clear == 0 && (set | clear) != 0).then_some(TcpFlags { set, clear })
    }
    /// Flags that must be set.
    pub fn set(&self) -> u8 {
        self.set
    }
    /// Flags that must be clear.
    pub fn clear(&self) -> u8 {
        self.clear
    }
    /// True if the TCP header's flag byte `flags` satisfies both sets.
    pub fn matches(&self, flags: u8) -> bool {
        flags & self.set == self.set && flags & self.clear == 0
    }
}

impl fmt::Display for TcpFlags {
    /// `syn,!ack`: flags in bit order, clear ones with `!`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (i, name) in TcpFlags::NAMES.iter().enumerate() {
            let bit = 1u8 << i;
            if (self.set | self.clear) & bit == 0 {
                continue;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if self.clear & bit != 0 {
                f.write_str("!")?;
            }
            f.write_str(name)?;
        }
        Ok(())
    }
}

/// The user of `uid`: a number, or a name kept as written (the runner
/// resolves names; this crate reads no user database).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum UserMatch {
    /// `uid 1000`.
    Id(u32),
    /// `uid alice`.
    Name(String),
}

impl fmt::Display for UserMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UserMatch::Id(n) => write!(f, "{n}"),
            UserMatch::Name(s) => f.write_str(s),
        }
    }
}

/// A rule option (match condition), possibly negated with `not`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RuleOption {
    /// `not OPTION`.
    pub not: bool,
    /// The condition.
    pub kind: OptionKind,
}

impl RuleOption {
    /// A condition, not negated.
    pub fn new(kind: OptionKind) -> RuleOption {
        RuleOption { not: false, kind }
    }
}

impl fmt::Display for RuleOption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.not {
            f.write_str("not ")?;
        }
        write!(f, "{}", self.kind)
    }
}

/// The match conditions that may follow `from .. to ..`.
///
/// Conditions on the frame (addresses, ports, `proto`, `iplen`, `dscp`,
/// `tcpflags`, `mac`, `mac-type`) never match a frame that lacks the field
/// (a non-IP frame, a truncated header), negated or not; conditions on
/// where the packet was seen (`in`, `out`, `via`, `recv`, `xmit`, `uid`)
/// are simply false when unknown, so `not` makes them true. Other ipfw
/// options are rejected with "option 'X' is not supported yet".
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OptionKind {
    /// `in`: packets entering (ipfw: on the input path).
    In,
    /// `out`: packets leaving.
    Out,
    /// `proto P`.
    Proto(Proto),
    /// `src-ip ADDR`.
    SrcIp(AddrMatch),
    /// `dst-ip ADDR`.
    DstIp(AddrMatch),
    /// `src-port PORTS` (never empty).
    SrcPort(Vec<PortRange>),
    /// `dst-port PORTS` (never empty).
    DstPort(Vec<PortRange>),
    /// `via IFACE`: received or to be sent on interface `IFACE`.
    Via(String),
    /// `recv IFACE`: received on interface `IFACE`.
    Recv(String),
    /// `xmit IFACE`: to be sent on interface `IFACE`.
    Xmit(String),
    /// `mac DST SRC` (ipfw's order: destination first), each `any` or an
    /// address.
    Mac {
        /// Destination address.
        dst: MacMatch,
        /// Source address.
        src: MacMatch,
    },
    /// `mac-type T[,T..]`: the innermost ethertype (after VLAN tags), values
    /// or ranges, `0..=0xffff` (never empty). Matches non-IP frames.
    MacType(Vec<NumRange>),
    /// `iplen N[,A-B..]`: the IP packet's length (IPv4 total length, IPv6
    /// 40 + payload length), `0..=65575` (never empty).
    IpLen(Vec<NumRange>),
    /// `tcpflags [!]FLAG[,[!]FLAG..]`: TCP packets with these flags set and
    /// the `!` ones clear.
    TcpFlags(TcpFlags),
    /// `dscp N[,N..]` (`0..=63`; names like `ef`, `af11`, `cs1` fold to
    /// numbers; never empty).
    Dscp(Vec<u8>),
    /// `uid USER`: sent or received by a socket of this user (where the
    /// runner knows the owning socket).
    Uid(UserMatch),
    /// `keep-state [:NAME]` (ipfw): a packet the rule matches creates a
    /// dynamic state for its flow (both directions), under flow name
    /// `NAME` (`None`: ipfw's `default`); later packets of the flow take
    /// the rule's action at the first `check-state` or `keep-state` rule.
    /// Not negatable.
    KeepState(Option<String>),
    /// `layer2` (ipfw): the packet was seen at layer 2 (pipelab's bridge
    /// mode; ipfw's `ether_demux`/`ether_output` pass). `not layer2`: seen
    /// at layer 3 (every other mode).
    Layer2,
}

impl OptionKind {
    /// The option words the parser implements.
    pub const WORDS: &'static [&'static str] = &[
        "in",
        "out",
        "proto",
        "src-ip",
        "dst-ip",
        "src-port",
        "dst-port",
        "via",
        "recv",
        "xmit",
        "mac",
        "mac-type",
        "iplen",
        "tcpflags",
        "dscp",
        "uid",
        "keep-state",
        "layer2",
    ];
}

impl fmt::Display for OptionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionKind::In => f.write_str("in"),
            OptionKind::Out => f.write_str("out"),
            OptionKind::Proto(p) => write!(f, "proto {p}"),
            OptionKind::SrcIp(a) => write!(f, "src-ip {a}"),
            OptionKind::DstIp(a) => write!(f, "dst-ip {a}"),
            OptionKind::SrcPort(p) => {
                f.write_str("src-port ")?;
                write_ports(f, p)
            }
            OptionKind::DstPort(p) => {
                f.write_str("dst-port ")?;
                write_ports(f, p)
            }
            OptionKind::Via(i) => write!(f, "via {i}"),
            OptionKind::Recv(i) => write!(f, "recv {i}"),
            OptionKind::Xmit(i) => write!(f, "xmit {i}"),
            OptionKind::Mac { dst, src } => write!(f, "mac {dst} {src}"),
            OptionKind::MacType(r) => {
                f.write_str("mac-type ")?;
                write_ranges(f, r, true)
            }
            OptionKind::IpLen(r) => {
                f.write_str("iplen ")?;
                write_ranges(f, r, false)
            }
            OptionKind::TcpFlags(t) => write!(f, "tcpflags {t}"),
            OptionKind::Dscp(d) => {
                f.write_str("dscp ")?;
                for (i, v) in d.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{v}")?;
                }
                Ok(())
            }
            OptionKind::Uid(u) => write!(f, "uid {u}"),
            OptionKind::KeepState(None) => f.write_str("keep-state"),
            OptionKind::KeepState(Some(n)) => write!(f, "keep-state :{n}"),
            OptionKind::Layer2 => f.write_str("layer2"),
        }
    }
}

/// A classifier rule, as written after `add`.
///
/// An omitted `PROTO from SRC to DST` is stored as `ip from any to any`.
/// New rule-level words (`set N`, `tag N`, ...) are added as new fields;
/// construct with [`RuleSpec::new`] and assign.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RuleSpec {
    /// Rule number, `1..=65534`; `None` means "last rule + 100" when
    /// applied to a configuration.
    pub number: Option<u32>,
    /// `prob P`: the rule matches only with this probability.
    pub prob: Option<Probability>,
    /// What to do with a matching packet.
    pub action: Action,
    /// `log`: log matching packets.
    pub log: bool,
    /// The protocol.
    pub proto: Proto,
    /// `from SRC`.
    pub src: Endpoint,
    /// `to DST`.
    pub dst: Endpoint,
    /// Further conditions, all of which must match, in the order written.
    pub options: Vec<RuleOption>,
    /// `check-state :NAME`: the flow name whose states the rule checks
    /// (`None`: ipfw's `default`; `Some("any")`: every name).
    pub state_flow: Option<String>,
}

impl RuleSpec {
    /// `ACTION ip from any to any`, unnumbered, no options.
    pub fn new(action: Action) -> RuleSpec {
        RuleSpec {
            number: None,
            prob: None,
            action,
            log: false,
            proto: Proto::Ip,
            src: Endpoint::any(),
            dst: Endpoint::any(),
            options: Vec::new(),
            state_flow: None,
        }
    }

    /// The flow name of the rule's `keep-state`, if it has one (`Some(None)`
    /// for the default name).
    pub fn keep_state(&self) -> Option<Option<&str>> {
        self.options.iter().find_map(|o| match &o.kind {
            OptionKind::KeepState(n) => Some(n.as_deref()),
            _ => None,
        })
    }
}

impl fmt::Display for RuleSpec {
    /// `[N] [prob P] ACTION [log] PROTO from SRC to DST [OPTIONS]`, as
    /// written after `add`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(n) = self.number {
            write!(f, "{n} ")?;
        }
        if let Some(p) = self.prob {
            write!(f, "prob {p} ")?;
        }
        write!(f, "{}", self.action)?;
        if self.action == Action::CheckState {
            // ipfw's check-state has no body.
            if let Some(n) = &self.state_flow {
                write!(f, " :{n}")?;
            }
            if self.log {
                f.write_str(" log")?;
            }
            return Ok(());
        }
        if self.log {
            f.write_str(" log")?;
        }
        write!(f, " {} from {} to {}", self.proto, self.src, self.dst)?;
        for o in &self.options {
            write!(f, " {o}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Command {
    /// Canonical command text, which parses back to an equal command.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::PipeConfig { id, spec } => {
                write!(f, "pipe {id} config")?;
                if !spec.is_empty() {
                    write!(f, " {spec}")?;
                }
                Ok(())
            }
            Command::PipeDelete { id } => write!(f, "pipe {id} delete"),
            Command::SchedConfig { id, spec } => {
                write!(f, "sched {id} config")?;
                if *spec != SchedSpec::default() {
                    write!(f, " {spec}")?;
                }
                Ok(())
            }
            Command::SchedDelete { id } => write!(f, "sched {id} delete"),
            Command::QueueConfig { id, spec } => write!(f, "queue {id} config {spec}"),
            Command::QueueDelete { id } => write!(f, "queue {id} delete"),
            Command::PipeShow { id: None } => f.write_str("pipe show"),
            Command::PipeShow { id: Some(id) } => write!(f, "pipe {id} show"),
            Command::Add(r) => write!(f, "add {r}"),
            Command::Delete { numbers } => {
                f.write_str("delete")?;
                for n in numbers {
                    write!(f, " {n}")?;
                }
                Ok(())
            }
            Command::Flush => f.write_str("flush"),
            Command::List => f.write_str("list"),
            Command::Show => f.write_str("show"),
            Command::SetOnePass(b) => write!(f, "set one_pass {}", u8::from(*b)),
            Command::TableAdd { table, net, value } => {
                write!(f, "table {table} add {net}")?;
                if let Some(v) = value {
                    write!(f, " {v}")?;
                }
                Ok(())
            }
            Command::TableDelete { table, net } => write!(f, "table {table} delete {net}"),
            Command::TableFlush { table: Some(t) } => write!(f, "table {t} flush"),
            Command::TableFlush { table: None } => f.write_str("table all flush"),
            Command::TableList { table: Some(t) } => write!(f, "table {t} list"),
            Command::TableList { table: None } => f.write_str("table all list"),
            Command::TableCreate { table, typed } => {
                write!(f, "table {table} create")?;
                if *typed {
                    f.write_str(" type addr")?;
                }
                Ok(())
            }
            Command::TableDestroy { table } => write!(f, "table {table} destroy"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipnet_masks_host_bits_and_prints_hosts_bare() {
        let n = IpNet::new("10.1.2.3".parse().unwrap(), 8).unwrap();
        assert_eq!(n.to_string(), "10.0.0.0/8");
        assert!(n.contains("10.200.0.1".parse().unwrap()));
        assert!(!n.contains("11.0.0.1".parse().unwrap()));
        assert!(!n.contains("::1".parse().unwrap()));
        assert_eq!(IpNet::host("::1".parse().unwrap()).to_string(), "::1");
        assert_eq!(
            IpNet::new("2001:db8::1".parse().unwrap(), 0)
                .unwrap()
                .to_string(),
            "::/0"
        );
        assert!(IpNet::new("10.0.0.0".parse().unwrap(), 33).is_none());
    }

    #[test]
    fn pipe_spec_defaults_are_ipfw_defaults() {
        let c = PipeSpec::default().to_config().unwrap();
        assert_eq!(c, PipeConfig::default());
    }

    /// Passing proves a flow queue's queue management reaches the engine's
    /// FlowSpec as a pipe's reaches its PipeConfig: RED counting what the
    /// queue's limit counts (bytes here), CoDel with its parameters.
    #[test]
    fn queue_spec_carries_its_queue_management() {
        let parse = |s: &str| match crate::parse_line(s) {
            Ok(Some(Command::QueueConfig { spec, .. })) => spec,
            other => panic!("{s}: {other:?}"),
        };
        let red = parse("queue 1 config weight 3 sched 1 queue 64KB red 0.002/5000/15000/0.1");
        let f = red.to_flow_spec().unwrap();
        assert_eq!((f.weight(), f.limit()), (3, QueueLimit::Bytes(65_536)));
        match f.aqm() {
            Some(Aqm::Red(r)) => {
                assert_eq!(r.measure(), QueueMeasure::Bytes);
                assert_eq!((r.min_th(), r.max_th()), (5000, 15000));
            }
            other => panic!("{other:?}"),
        }
        let pipe = PipeSpec {
            queue: red.queue,
            aqm: red.aqm,
            ..PipeSpec::default()
        };
        assert_eq!(pipe.to_config().unwrap().aqm(), f.aqm());
        let codel = parse("queue 2 config sched 1 codel target 2ms interval 50ms");
        let f = codel.to_flow_spec().unwrap();
        assert_eq!(
            f.aqm(),
            Some(&Aqm::Codel(
                CodelConfig::new(Duration::from_millis(2), Duration::from_millis(50)).unwrap()
            ))
        );
        let plain = parse("queue 3 config sched 1");
        assert_eq!(plain.to_flow_spec().unwrap(), FlowSpec::default());
    }
}
