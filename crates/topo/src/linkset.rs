//! Link attributes written as words: `bw 10Mbit/s delay 20ms loss 1%
//! queue 50`, any subset. One type, [`LinkSet`], serves every place a
//! topology link's attributes are written: GML and TOML edges
//! ([`crate::gml`], [`crate::native`]), `topo gen`'s link classes
//! (`--access 'bw 2Mbit/s delay 1ms'`), and the topology commands
//! `link A B set ...` and `every ... link A B set ...`
//! ([`crate::command`]), where `bw`, `delay` and `loss` may also be ranges
//! `LO..HI` drawn at each step ([`LinkSet::draw`]).
//!
//! Every value is parsed by the command language's unit layer
//! ([`pipelab_lang::units`]), so a word is accepted or refused here
//! exactly as in a `pipe N config` line, with the same message and hint
//! (`10Mbps`: "unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)"):
//!
//! | attribute | values | as in the language |
//! |---|---|---|
//! | `bw` (`bandwidth`) | [`units::parse_rate`]: `10Mbit/s`; a bare number is bit/s | `bw` |
//! | `delay` | [`units::parse_delay`]: `20ms`, `250us`; a bare number is ms | `delay` |
//! | `loss` (`plr`) | [`units::parse_loss_rate`]: a probability `0.01` or a percentage `1%` | `plr`, or `loss P%` |
//! | `queue` | [`units::parse_queue`]: slots `50`, or bytes `100KB` (K = 1024) | `queue` |
//!
//! A link's loss is ModelNet's loss rate (a probability, or a percentage
//! with `%`); a pipe's `loss` in the language takes only a percentage.
//! Values are also checked against the engine's limits for a pipe ([`LinkSet::check`]:
//! a queue holds at least one packet, a delay is at most 3600 s), with the
//! language's message.
//!
//! This module knows nothing of node names, commands or files; it depends
//! on the language's units, the engine's value types and [`crate::model`].

use core::fmt;

use pipelab_engine::rng::StageRng;
use pipelab_engine::{Duration, PipeConfig, QueueLimit, Rate};
use pipelab_lang::units::{self, Probability, UnitError};
use rand::Rng;

use crate::model::{Link, LinkAttrs, PipeWords};

/// One attribute of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkAttr {
    /// Bandwidth of each direction.
    Bw,
    /// One-way propagation delay.
    Delay,
    /// Loss rate.
    Loss,
    /// Queue bound of each direction.
    Queue,
}

impl LinkAttr {
    /// The attributes, in canonical order.
    pub const ALL: [LinkAttr; 4] = [
        LinkAttr::Bw,
        LinkAttr::Delay,
        LinkAttr::Loss,
        LinkAttr::Queue,
    ];

    /// The attribute a key names (`bw`/`bandwidth`, `delay`, `loss`/`plr`,
    /// `queue`; any case).
    pub fn from_key(key: &str) -> Option<LinkAttr> {
        match key.to_ascii_lowercase().as_str() {
            "bw" | "bandwidth" => Some(LinkAttr::Bw),
            "delay" => Some(LinkAttr::Delay),
            "loss" | "plr" => Some(LinkAttr::Loss),
            "queue" => Some(LinkAttr::Queue),
            _ => None,
        }
    }

    /// The canonical key: `bw`, `delay`, `loss`, `queue`.
    pub fn name(self) -> &'static str {
        match self {
            LinkAttr::Bw => "bw",
            LinkAttr::Delay => "delay",
            LinkAttr::Loss => "loss",
            LinkAttr::Queue => "queue",
        }
    }

    /// An example of the attribute, for hints.
    pub fn example(self) -> &'static str {
        match self {
            LinkAttr::Bw => "e.g. bw 10Mbit/s",
            LinkAttr::Delay => "e.g. delay 20ms",
            LinkAttr::Loss => "e.g. loss 1% or loss 0.01",
            LinkAttr::Queue => "e.g. queue 50 or queue 100KB",
        }
    }

    /// True if the attribute may be a range `LO..HI` in an `every` line.
    pub fn takes_range(self) -> bool {
        self != LinkAttr::Queue
    }
}

impl fmt::Display for LinkAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The attribute names, as listed in hints.
pub const ATTR_NAMES: &str = "bw, delay, loss, queue";

/// A value, or a range of values to draw from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Setting<T> {
    /// This value.
    Value(T),
    /// A value drawn uniformly from `lo..=hi` at each step of an `every`
    /// line (`lo <= hi`).
    Range(T, T),
}

impl<T: Copy> Setting<T> {
    /// The value, or the low end of a range.
    pub fn low(self) -> T {
        match self {
            Setting::Value(v) | Setting::Range(v, _) => v,
        }
    }

    /// The value, or the high end of a range.
    pub fn high(self) -> T {
        match self {
            Setting::Value(v) | Setting::Range(_, v) => v,
        }
    }
}

/// New attributes for a link: any subset of bandwidth, delay, loss and
/// queue, and any pipe words of the language; the others keep their
/// values (a pipe word replaces the same word of the link:
/// [`pipelab_lang::PipeSpec::overlay`]).
///
/// Built by [`LinkSet::set_word`] (one `ATTR VALUE` pair at a time) or by
/// the one reader of link attributes ([`crate::attrs::read_link`], which
/// the command grammar's [`crate::command::parse_link_set`] calls); prints
/// back in canonical order (`bw 10Mbit/s delay 20ms loss 1% queue 50`,
/// ranges as `5ms..50ms`, then the pipe words), which parses back equal.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LinkSet {
    /// New bandwidth.
    pub bw: Option<Setting<Rate>>,
    /// New one-way delay.
    pub delay: Option<Setting<Duration>>,
    /// New loss rate.
    pub loss: Option<Setting<Probability>>,
    /// New queue bound (never a range).
    pub queue: Option<QueueLimit>,
    /// New pipe words (`bw`, `delay`, `queue` and `plr` unset: the
    /// attributes above stand for them).
    pub words: PipeWords,
}

/// Why a [`LinkSet`]'s values are refused by the engine's limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitError {
    /// The attribute whose value is out of bounds.
    pub attr: LinkAttr,
    /// Why (`a queue must hold at least one packet`).
    pub reason: String,
}

impl LimitError {
    /// The message a `pipe N config` line gives for this value written as
    /// `word`: `invalid queue '0': a queue must hold at least one packet`.
    pub fn message(&self, word: &str) -> String {
        format!("invalid {} '{word}': {}", self.attr, self.reason)
    }
}

impl LinkSet {
    /// True if no attribute is set.
    pub fn is_empty(&self) -> bool {
        *self == LinkSet::default()
    }

    /// True if the attribute is set.
    pub fn has(&self, attr: LinkAttr) -> bool {
        match attr {
            LinkAttr::Bw => self.bw.is_some(),
            LinkAttr::Delay => self.delay.is_some(),
            LinkAttr::Loss => self.loss.is_some(),
            LinkAttr::Queue => self.queue.is_some(),
        }
    }

    /// True if no attribute is a range.
    pub fn is_fixed(&self) -> bool {
        !matches!(self.bw, Some(Setting::Range(..)))
            && !matches!(self.delay, Some(Setting::Range(..)))
            && !matches!(self.loss, Some(Setting::Range(..)))
    }

    /// Sets `attr` to the value written `word`, parsed by the language's
    /// unit layer (module documentation); errors are the language's.
    pub fn set_word(&mut self, attr: LinkAttr, word: &str) -> Result<(), UnitError> {
        match attr {
            LinkAttr::Bw => self.bw = Some(Setting::Value(units::parse_rate(word)?)),
            LinkAttr::Delay => self.delay = Some(Setting::Value(units::parse_delay(word)?)),
            LinkAttr::Loss => self.loss = Some(Setting::Value(units::parse_loss_rate(word)?)),
            LinkAttr::Queue => self.queue = Some(units::parse_queue(word)?),
        }
        Ok(())
    }

    /// Sets `attr` (not `queue`) to the range `lo..=hi`, each end parsed
    /// as by [`LinkSet::set_word`]. Errors: the end that is wrong (`false`
    /// for `lo`, `true` for `hi`) and why; an empty range is an error of
    /// `hi`, a bandwidth range from 0 (unlimited) one of `lo`.
    pub fn set_range(
        &mut self,
        attr: LinkAttr,
        lo: &str,
        hi: &str,
    ) -> Result<(), (bool, UnitError)> {
        fn both<T: Ord + Copy>(
            lo: &str,
            hi: &str,
            f: fn(&str) -> Result<T, UnitError>,
        ) -> Result<Setting<T>, (bool, UnitError)> {
            let l = f(lo).map_err(|e| (false, e))?;
            let h = f(hi).map_err(|e| (true, e))?;
            if h < l {
                return Err((
                    true,
                    UnitError {
                        message: format!("empty range '{lo}..{hi}'"),
                        hint: Some("write the low end first, e.g. 5ms..50ms".into()),
                    },
                ));
            }
            Ok(Setting::Range(l, h))
        }
        match attr {
            LinkAttr::Bw => {
                let r = both(lo, hi, units::parse_rate)?;
                if r.low() == Rate::UNLIMITED {
                    return Err((
                        false,
                        UnitError {
                            message: format!("a bandwidth range cannot start at '{lo}'"),
                            hint: Some("0 is unlimited; start the range above 0".into()),
                        },
                    ));
                }
                self.bw = Some(r);
            }
            LinkAttr::Delay => self.delay = Some(both(lo, hi, units::parse_delay)?),
            LinkAttr::Loss => self.loss = Some(both(lo, hi, units::parse_loss_rate)?),
            LinkAttr::Queue => {
                return Err((
                    false,
                    UnitError {
                        message: "'queue' takes no range (bw, delay, loss do)".into(),
                        hint: None,
                    },
                ))
            }
        }
        Ok(())
    }

    /// Checks the values (both ends of ranges) against the engine's
    /// limits for a pipe, as `pipe N config` does: a queue holds at least
    /// one packet and at most the engine's maximum, a delay is at most
    /// 3600 s.
    pub fn check(&self) -> Result<(), LimitError> {
        let ends = [
            (
                self.bw.map(Setting::low),
                self.delay.map(Setting::low),
                self.queue,
            ),
            (
                self.bw.map(Setting::high),
                self.delay.map(Setting::high),
                self.queue,
            ),
        ];
        for (bw, delay, queue) in ends {
            PipeConfig::new(
                bw.unwrap_or(Rate::UNLIMITED),
                delay.unwrap_or(Duration::ZERO),
                queue.unwrap_or_default(),
            )
            .map_err(|e| LimitError {
                attr: if e.param == "queue" {
                    LinkAttr::Queue
                } else {
                    LinkAttr::Delay
                },
                reason: e.reason,
            })?;
        }
        Ok(())
    }

    /// A copy with every range replaced by a value drawn uniformly from it
    /// (bandwidth in bit/s, delay in ns, loss in parts per billion).
    pub fn draw(&self, rng: &mut StageRng) -> LinkSet {
        fn pick<T: Copy>(
            s: Option<Setting<T>>,
            rng: &mut StageRng,
            to: fn(T) -> u64,
            from: fn(u64) -> T,
        ) -> Option<Setting<T>> {
            s.map(|s| match s {
                Setting::Value(v) => Setting::Value(v),
                Setting::Range(l, h) => {
                    let (l, h) = (to(l), to(h));
                    Setting::Value(from(if h > l { rng.gen_range(l..=h) } else { l }))
                }
            })
        }
        LinkSet {
            bw: pick(self.bw, rng, Rate::bps, Rate::from_bps),
            delay: pick(self.delay, rng, Duration::as_nanos, Duration::from_nanos),
            loss: pick(
                self.loss,
                rng,
                |p| u64::from(p.ppb()),
                |n| {
                    Probability::from_ppb(u32::try_from(n).unwrap_or(Probability::ONE_PPB))
                        .unwrap_or(Probability::ONE)
                },
            ),
            queue: self.queue,
            words: self.words.clone(),
        }
    }

    /// Gives the set attributes to `attrs` (a range gives its low end:
    /// draw first with [`LinkSet::draw`]); the pipe words are the link's
    /// ([`LinkSet::apply`]).
    pub fn apply_to_attrs(&self, attrs: &mut LinkAttrs) {
        if let Some(v) = self.bw {
            attrs.bw = v.low();
        }
        if let Some(v) = self.delay {
            attrs.delay = v.low();
        }
        if let Some(v) = self.loss {
            attrs.loss = v.low().as_f64();
        }
        if let Some(v) = self.queue {
            attrs.queue = v;
        }
    }

    /// Gives the set attributes and pipe words to `link` (a range gives
    /// its low end: draw first with [`LinkSet::draw`]).
    pub fn apply(&self, link: &mut Link) {
        let mut a = LinkAttrs {
            bw: link.bw,
            delay: link.delay,
            loss: link.loss,
            queue: link.queue,
        };
        self.apply_to_attrs(&mut a);
        link.bw = a.bw;
        link.delay = a.delay;
        link.loss = a.loss;
        link.queue = a.queue;
        // A word of the same kind as an attribute replaces it, and the
        // other way round: a trace or netem's rate the bandwidth, a loss
        // model the loss rate.
        // (Both given at once, they stay both, for the pipe's check to
        // refuse.)
        let w = &self.words;
        let serve = w.bw_trace.is_some() || w.rate.is_some();
        let model = w.loss.is_some() || w.plr_ge.is_some();
        if serve && self.bw.is_none() {
            link.bw = Rate::UNLIMITED;
        }
        if self.bw.is_some() && !serve {
            link.words.bw_trace = None;
            link.words.rate = None;
        }
        if model && self.loss.is_none() {
            link.loss = 0.0;
        }
        if self.loss.is_some() && !model {
            link.words.loss = None;
            link.words.plr_ge = None;
        }
        link.words.overlay(w);
    }
}

fn write_setting<T: Copy>(
    f: &mut fmt::Formatter<'_>,
    s: Setting<T>,
    show: impl Fn(T) -> String,
) -> fmt::Result {
    match s {
        Setting::Value(v) => f.write_str(&show(v)),
        Setting::Range(l, h) => write!(f, "{}..{}", show(l), show(h)),
    }
}

impl fmt::Display for LinkSet {
    /// `bw 10Mbit/s delay 5ms..50ms loss 1% queue 50`: the set attributes
    /// in canonical order, loss as a percentage; empty if none is set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        if let Some(v) = self.bw {
            write!(f, "{sep}bw ")?;
            write_setting(f, v, |r| r.to_string())?;
            sep = " ";
        }
        if let Some(v) = self.delay {
            write!(f, "{sep}delay ")?;
            write_setting(f, v, |d| d.to_string())?;
            sep = " ";
        }
        if let Some(v) = self.loss {
            write!(f, "{sep}loss ")?;
            write_setting(f, v, units::format_percent)?;
            sep = " ";
        }
        if let Some(q) = self.queue {
            write!(f, "{sep}queue {}", units::format_queue(q))?;
            sep = " ";
        }
        // The pipe words as a file writes them: the jitter as `jitter`,
        // a random loss as `loss random` (a bare `loss 1%` is the link's
        // loss rate), the others as the language writes them.
        let mut words = self.words.clone();
        let random = match words.loss.take() {
            Some(pipelab_lang::LossSpec::Random(c)) => Some(c),
            other => {
                words.loss = other;
                None
            }
        };
        let (jitter, rest) = crate::attrs::written_words(&words);
        if let Some(j) = jitter {
            write!(f, "{sep}jitter {j}")?;
            sep = " ";
        }
        if let Some(c) = random {
            write!(f, "{sep}loss random {c}")?;
            sep = " ";
        }
        if let Some(r) = rest {
            write!(f, "{sep}{r}")?;
        }
        Ok(())
    }
}

/// The loss probability nearest to `loss` (clamped to `[0, 1]`), for
/// writing a link's loss exactly as the unit layer reads it back.
pub fn loss_probability(loss: f64) -> Probability {
    let ppb = (loss.clamp(0.0, 1.0) * f64::from(Probability::ONE_PPB)).round();
    // In 0..=1e9 after the clamp; NaN clamps to NaN and becomes 0.
    Probability::from_ppb(if ppb.is_nan() { 0 } else { ppb as u32 }).unwrap_or(Probability::ONE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves each attribute takes the language's values and
    /// prints back in canonical order.
    #[test]
    fn words_parse_with_the_language_units_and_print_canonically() {
        let mut s = LinkSet::default();
        s.set_word(LinkAttr::Queue, "100KB").expect("queue");
        s.set_word(LinkAttr::Loss, "0.01").expect("loss");
        s.set_word(LinkAttr::Delay, "1.5ms").expect("delay");
        s.set_word(LinkAttr::Bw, "10Mbit/s").expect("bw");
        assert_eq!(
            s.to_string(),
            "bw 10Mbit/s delay 1500us loss 1% queue 100KB"
        );
        assert_eq!(
            s.set_word(LinkAttr::Bw, "10Mbps")
                .map_err(|e| e.to_string()),
            Err("unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)".into())
        );
        assert!(s.is_fixed());
        s.set_range(LinkAttr::Delay, "5ms", "50ms").expect("range");
        assert!(!s.is_fixed());
        assert_eq!(
            s.to_string(),
            "bw 10Mbit/s delay 5ms..50ms loss 1% queue 100KB"
        );
    }

    /// A pass proves ranges refuse `queue`, empty ranges and a bandwidth
    /// from 0, naming the end that is wrong.
    #[test]
    fn ranges_are_checked() {
        let mut s = LinkSet::default();
        let e = s.set_range(LinkAttr::Queue, "1", "5").expect_err("queue");
        assert!(e.1.message.contains("takes no range"), "{e:?}");
        let e = s
            .set_range(LinkAttr::Delay, "9ms", "1ms")
            .expect_err("empty");
        assert!(e.0 && e.1.message.contains("empty range"), "{e:?}");
        let e = s.set_range(LinkAttr::Bw, "0", "1Mbit/s").expect_err("zero");
        assert!(!e.0, "{e:?}");
        let e = s.set_range(LinkAttr::Loss, "0", "5").expect_err("bad hi");
        assert!(e.0 && e.1.message.contains("outside 0..1"), "{e:?}");
    }

    /// A pass proves draws stay in their ranges, are reproducible from the
    /// seed, and leave fixed values alone.
    #[test]
    fn draws_stay_in_range() {
        let mut s = LinkSet::default();
        s.set_range(LinkAttr::Delay, "5ms", "50ms").expect("delay");
        s.set_range(LinkAttr::Loss, "0", "1%").expect("loss");
        s.set_word(LinkAttr::Bw, "1Mbit/s").expect("bw");
        let mut rng = pipelab_engine::rng::rng_from_seed(7);
        let mut again = pipelab_engine::rng::rng_from_seed(7);
        for _ in 0..100 {
            let d = s.draw(&mut rng);
            assert!(d.is_fixed());
            assert_eq!(d, s.draw(&mut again));
            let delay = d.delay.map(Setting::low).unwrap_or_default();
            assert!((Duration::from_millis(5)..=Duration::from_millis(50)).contains(&delay));
            let loss = d.loss.map(Setting::low).unwrap_or_default();
            assert!(loss.ppb() <= 10_000_000);
            assert_eq!(d.bw, Some(Setting::Value(Rate::from_bps(1_000_000))));
        }
    }

    /// A pass proves values beyond the engine's limits are refused with
    /// the language's message.
    #[test]
    fn limits_are_the_engines() {
        let mut s = LinkSet::default();
        s.set_word(LinkAttr::Queue, "0").expect("parses");
        let e = s.check().expect_err("empty queue");
        assert_eq!(
            e.message("0"),
            "invalid queue '0': a queue must hold at least one packet"
        );
        let mut s = LinkSet::default();
        s.set_word(LinkAttr::Delay, "7200s").expect("parses");
        assert_eq!(s.check().map_err(|e| e.attr), Err(LinkAttr::Delay));
        assert_eq!(loss_probability(0.01).ppb(), 10_000_000);
        assert_eq!(loss_probability(f64::NAN), Probability::ZERO);
        assert_eq!(loss_probability(2.0), Probability::ONE);
    }
}
