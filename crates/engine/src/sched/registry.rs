//! The scheduler registry: the one place that lists the built-in
//! schedulers (dummynet registers each with `DECLARE_DNSCHED_MODULE` and
//! looks it up by name, dummynet-revisited §3.6).
//!
//! Each entry of the `schedulers!` table below names a scheduler's file
//! and type, the words users write for it (`sched N config type NAME`,
//! aliases included), the parameters it takes, its own typed parameters
//! with their defaults, its constructor from a validated [`SchedConfig`],
//! and an optional check of that configuration. From the table the macro
//! generates:
//!
//! * the scheduler's module (`sched::NAME`, from its file);
//! * [`SchedKind`], the public enum of built-in kinds with their typed
//!   parameters;
//! * [`SCHEDULERS`], the table the command language reads (parser, printer,
//!   hints, round-trip tests) and that [`SchedKind::name`],
//!   [`SchedKind::from_name`], [`SchedConfig::new`],
//!   [`SchedConfig::from_params`] and `SchedConfig`'s `Display` consult;
//! * `Sched`, the enum over the built-ins that the pipe holds, with its
//!   statically dispatched `Scheduler` implementation (no indirect call on
//!   the hot path) and its constructor.
//!
//! Nothing else in the engine or the language matches on the kinds.
//!
//! | file | `type` | algorithm | cost per packet | source |
//! |---|---|---|---|---|
//! | [`fifo`] | `fifo` | one queue, flows ignored (the reference) | O(1) | `dn_sched_fifo.c` |
//! | [`rr`] | `rr` | weighted round robin, `weight` packets per turn | O(1) | classic WRR; DRR with unit cost |
//! | [`drr`] | `drr` | Deficit Round Robin, `quantum × weight` bytes per turn | O(1) | Shreedhar & Varghese, SIGCOMM '95; `dn_sched_rr.c` |
//! | [`wf2q`] | `wf2q+` (`wf2qp`) | WF2Q+ with virtual time | O(log N) | Bennett & Zhang, "Hierarchical Packet Fair Queueing Algorithms", SIGCOMM '96; `dn_sched_wf2q.c` |
//! | [`qfq`] | `qfq` | Quick Fair Queueing, grouped buckets; `quantum` = `Lmax` | O(1) | Checconi, Rizzo & Valente, "QFQ", IEEE/ACM ToN 2013; `dn_sched_qfq.c` |
//! | [`prio`] | `prio` | strict priority by weight | O(log N) | `dn_sched_prio.c` |
//! | [`fq_codel`] | `fq_codel` | DRR over flows, CoDel per flow | O(1) | RFC 8290, RFC 8289; `dn_sched_fq_codel.c` |
//! | [`fq_pie`] | `fq_pie` | DRR over flows, PIE per flow | O(1) | RFC 8033, RFC 8290; `dn_sched_fq_pie.c` |
//!
//! ## Adding a scheduler
//!
//! 1. Write `crates/engine/src/sched/NAME.rs`: a `//!` paragraph citing
//!    its paper, a type `T` implementing `crate::sched::Scheduler`
//!    (`add_flow`, `reweight`, `enqueue`, `dequeue_with`, `pop_dropped`,
//!    `remove_idle`, `backlog`; `Flows<S>` in `sched/mod.rs` gives the
//!    per-flow FIFOs, their tail drop and `pop_with`, through which a flow
//!    queue's CoDel drops at its head), and a constructor.
//! 2. Add one entry to the `schedulers!` table at the end of this file
//!    (and its row to the table above):
//!    ```text
//!    /// One line of documentation.
//!    Variant => NAME::T in "NAME.rs", names ["name", "alias"], takes [quantum],
//!        weights Bytes, new |c| NAME::T::new(c.quantum());
//!    ```
//!    `takes` lists what `sched N config` accepts for it besides `type`
//!    (a kind may carry typed parameters of its own, as `FqCodel` does;
//!    their names must be [`SchedParam`]s); `weights` says what a flow
//!    queue's weight means to it ([`WeightUse`]). That is all the engine
//!    and the language need: the parser, its hints, the printer, `Display`
//!    of [`SchedConfig`], and the tests that every scheduler must pass read
//!    [`SCHEDULERS`] (`sched/tests.rs`: `every_registered_scheduler_*`,
//!    `reweighting_*`, which check what `weights` claims; the engine's
//!    `tests/reconfigure.rs`; lang's `roundtrip.rs` and `errors.rs`).
//! 3. Add its name to README's `sched N config type T` row, in registry
//!    order (`readme_lists_every_scheduler` in
//!    `crates/lang/tests/readme_examples.rs` fails until it is there).
//!
//! Checked by adding a FIFO under another name: one new file, one entry
//! (two lines) here and one word in README; every test of the engine and
//! the language passed, the new type among them. A scheduler that needs a
//! parameter no scheduler takes yet also adds the [`SchedParam`] variant,
//! its field in [`SchedParams`] and its arm in `param!` (`sched/mod.rs`
//! and this file), and the parser's value for it (`crates/lang`:
//! `SchedSpec` and `Parser::sched`).

use crate::config::ConfigError;
use crate::packet::Pool;
use crate::sched::{
    Dequeue, FlowSlot, FlowSpec, HeadFilter, SchedConfig, SchedDrop, SchedParam, SchedParams,
    Scheduler,
};
use crate::time::{Duration, Instant};

/// What a flow queue's weight means to a scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WeightUse {
    /// Nothing (one queue for all).
    Ignored,
    /// Backlogged queues share the link in packets in proportion to it.
    Packets,
    /// Backlogged queues share the link in bytes in proportion to it.
    Bytes,
    /// It is a priority: the backlogged queue of highest weight is served.
    Priority,
}

/// One registered scheduler: what the command language needs to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedEntry {
    /// The name `type NAME` takes and the printer writes.
    pub name: &'static str,
    /// Other spellings `type` accepts (ipfw's `wf2qp` for `wf2q+`).
    pub aliases: &'static [&'static str],
    /// The parameters `sched N config` accepts for it besides `type`, in
    /// the order the printer writes them. `quantum` is accepted by every
    /// type (ipfw's flowset parameter) and used by those that list it.
    pub params: &'static [SchedParam],
    /// The kind with its default parameters (`type NAME` alone).
    pub default: SchedKind,
    /// What a flow queue's `weight` means to it.
    pub weight: WeightUse,
    /// Its documentation in the table, as the macro received it.
    doc: &'static str,
}

impl SchedEntry {
    /// Its one line of documentation.
    pub fn summary(&self) -> &'static str {
        self.doc.trim()
    }

    /// Does it take `param`?
    pub fn takes(&self, param: SchedParam) -> bool {
        self.params.contains(&param)
    }
}

/// The [`SchedParam`] named by a field or word of the table.
macro_rules! param {
    (quantum) => {
        SchedParam::Quantum
    };
    (target) => {
        SchedParam::Target
    };
    (interval) => {
        SchedParam::Interval
    };
    (ecn) => {
        SchedParam::Ecn
    };
}

/// A kind's check, or none.
macro_rules! check_or_ok {
    ($cfg:ident) => {
        Ok(())
    };
    ($cfg:ident, |$c:ident| $check:expr) => {{
        let $c = $cfg;
        $check
    }};
}

/// Generates the modules, [`SchedKind`], [`SCHEDULERS`] and `Sched` from
/// the table (see the module documentation).
macro_rules! schedulers {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident $({ $(
            $(#[doc = $fdoc:literal])*
            $field:ident: $fty:ty = $fdefault:expr
        ),* $(,)? })?
        => $module:ident :: $ty:ident in $file:literal,
        names [$name:literal $(, $alias:literal)*],
        takes [$($param:ident),*],
        weights $weight:ident,
        new |$c:ident| $new:expr
        $(, check |$cc:ident| $check:expr)?;
    )*) => {
        $(
            #[path = $file]
            pub mod $module;
        )*

        /// Which algorithm, with its own typed parameters (the kinds of
        /// the registry, one per entry of [`SCHEDULERS`]).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum SchedKind {
            $(
                $(#[doc = $doc])*
                $variant $({ $($(#[doc = $fdoc])* $field: $fty),* })?,
            )*
        }

        /// Every built-in scheduler, in the order hints list them.
        pub static SCHEDULERS: &[SchedEntry] = &[
            $(SchedEntry {
                name: $name,
                aliases: &[$($alias),*],
                params: &[$(param!($param)),*],
                default: SchedKind::$variant $({ $($field: $fdefault),* })?,
                weight: WeightUse::$weight,
                doc: concat!($($doc),*),
            },)*
        ];

        impl SchedKind {
            /// This kind with the parameters given in `p` replacing its own.
            pub fn with_params(self, p: &SchedParams) -> SchedKind {
                match self {
                    $(SchedKind::$variant $({ $($field),* })? => SchedKind::$variant $({
                        $($field: p.$field.unwrap_or($field)),*
                    })?,)*
                }
            }

            /// This kind's own parameters (`quantum` is the configuration's).
            pub fn params(self) -> SchedParams {
                match self {
                    $(SchedKind::$variant $({ $($field),* })? => SchedParams {
                        $($($field: Some($field),)*)?
                        ..SchedParams::default()
                    },)*
                }
            }
        }

        /// The checks a kind adds to [`SchedConfig::new`]'s.
        #[allow(unused_variables)]
        pub(crate) fn check(cfg: &SchedConfig) -> Result<(), ConfigError> {
            match cfg.kind() {
                $(SchedKind::$variant $({ $($field),* })? => check_or_ok!(cfg $(, |$cc| $check)?),)*
            }
        }

        /// The built-in schedulers, statically dispatched.
        #[derive(Debug)]
        pub(crate) enum Sched {
            $($variant($module::$ty),)*
        }

        impl Sched {
            /// A fresh scheduler for `cfg`.
            #[allow(unused_variables)]
            pub(crate) fn new(cfg: &SchedConfig) -> Sched {
                match cfg.kind() {
                    $(SchedKind::$variant $({ $($field),* })? => {
                        let $c = cfg;
                        Sched::$variant($new)
                    })*
                }
            }
        }

        impl Scheduler for Sched {
            #[inline]
            fn add_flow(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
                match self { $(Sched::$variant(s) => s.add_flow(flow, spec),)* }
            }
            #[inline]
            fn reweight(&mut self, flow: FlowSlot, spec: FlowSpec) -> bool {
                match self { $(Sched::$variant(s) => s.reweight(flow, spec),)* }
            }
            #[inline]
            fn enqueue(
                &mut self,
                pool: &mut Pool,
                flow: FlowSlot,
                pkt: u32,
                now: Instant,
            ) -> Result<(), SchedDrop> {
                match self { $(Sched::$variant(s) => s.enqueue(pool, flow, pkt, now),)* }
            }
            #[inline]
            fn dequeue_with<H: HeadFilter>(
                &mut self,
                pool: &mut Pool,
                now: Instant,
                head: &mut H,
            ) -> Dequeue {
                match self { $(Sched::$variant(s) => s.dequeue_with(pool, now, head),)* }
            }
            #[inline]
            fn pop_dropped(&mut self, pool: &mut Pool) -> Option<u32> {
                match self { $(Sched::$variant(s) => s.pop_dropped(pool),)* }
            }
            #[inline]
            fn remove_idle(&mut self, flow: FlowSlot) -> bool {
                match self { $(Sched::$variant(s) => s.remove_idle(flow),)* }
            }
            #[inline]
            fn backlog(&self) -> (u32, u64) {
                match self { $(Sched::$variant(s) => s.backlog(),)* }
            }
            #[inline]
            fn drops_at_dequeue(&self) -> bool {
                match self { $(Sched::$variant(s) => s.drops_at_dequeue(),)* }
            }
            #[inline]
            fn take_mark(&mut self) -> bool {
                match self { $(Sched::$variant(s) => s.take_mark(),)* }
            }
        }
    };
}

schedulers! {
    /// One FIFO for all flows.
    Fifo => fifo::Fifo in "fifo.rs", names ["fifo"], takes [], weights Ignored,
        new |c| fifo::Fifo::new();

    /// Weighted round robin: `weight` packets per turn.
    Rr => rr::Rr in "rr.rs", names ["rr"], takes [], weights Packets,
        new |c| rr::Rr::new();

    /// Deficit Round Robin: `quantum × weight` bytes per turn.
    Drr => drr::Drr in "drr.rs", names ["drr"], takes [quantum], weights Bytes,
        new |c| drr::Drr::new(c.quantum());

    /// WF2Q+.
    Wf2q => wf2q::Wf2q in "wf2q.rs", names ["wf2q+", "wf2qp"], takes [], weights Bytes,
        new |c| wf2q::Wf2q::new();

    /// Quick Fair Queueing.
    Qfq => qfq::Qfq in "qfq.rs", names ["qfq"], takes [quantum], weights Bytes,
        new |c| qfq::Qfq::new(c.quantum()),
        check |c| qfq::check(c.quantum());

    /// Strict priority: the backlogged flow of highest weight.
    Prio => prio::Prio in "prio.rs", names ["prio"], takes [], weights Priority,
        new |c| prio::Prio::new();

    /// FQ-CoDel (RFC 8290) with CoDel's `target` and `interval`.
    FqCodel {
        /// Acceptable standing queue delay (RFC 8289 default 5 ms).
        target: Duration = Duration::from_millis(5),
        /// Sliding window for the minimum delay (default 100 ms).
        interval: Duration = Duration::from_millis(100),
        /// Mark ECN-capable packets CE instead of dropping them (RFC 8290
        /// §4.1; ipfw's `ecn`, default off as `noecn`).
        ecn: bool = false,
    } => fq_codel::FqCodel in "fq_codel.rs", names ["fq_codel"], takes [quantum, target, interval, ecn], weights Bytes,
        new |c| fq_codel::FqCodel::new(c.quantum(), target, interval, ecn),
        check |c| fq_codel::check(target, interval);

    /// FQ-PIE (dummynet's fq_pie; RFC 8033 PIE per flow, RFC 8290's round robin) with PIE's `target`.
    FqPie {
        /// PIE's reference queue delay (RFC 8033 default 15 ms).
        target: Duration = Duration::from_millis(15),
        /// Mark ECN-capable packets CE instead of dropping them (RFC 8033
        /// §5.1; ipfw's `ecn`, default off).
        ecn: bool = false,
    } => fq_pie::FqPie in "fq_pie.rs", names ["fq_pie"], takes [quantum, target, ecn], weights Bytes,
        new |c| fq_pie::FqPie::new(c.quantum(), target, ecn),
        check |c| fq_pie::check(target);
}

impl SchedKind {
    /// fq_codel with RFC 8290's defaults: target 5 ms, interval 100 ms.
    pub const FQ_CODEL: SchedKind = SchedKind::FqCodel {
        target: Duration::from_millis(5),
        interval: Duration::from_millis(100),
        ecn: false,
    };

    /// This kind's entry in [`SCHEDULERS`].
    pub fn entry(self) -> &'static SchedEntry {
        let d = core::mem::discriminant(&self);
        SCHEDULERS
            .iter()
            .find(|e| core::mem::discriminant(&e.default) == d)
            .expect("every kind has an entry")
    }

    /// The ipfw name (`type NAME`).
    pub fn name(self) -> &'static str {
        self.entry().name
    }

    /// The kind named `name` or one of its aliases (ipfw's spellings,
    /// `wf2qp` too), with default parameters.
    pub fn from_name(name: &str) -> Option<SchedKind> {
        lookup(name).map(|e| e.default)
    }

    /// Does `sched N config type NAME` take `param`?
    pub fn takes(self, param: SchedParam) -> bool {
        self.entry().takes(param)
    }
}

/// The entry named `name` or one of its aliases.
pub fn lookup(name: &str) -> Option<&'static SchedEntry> {
    SCHEDULERS
        .iter()
        .find(|e| e.name == name || e.aliases.contains(&name))
}

/// The names of every scheduler, in registry order (hints, docs).
pub fn names() -> impl Iterator<Item = &'static str> {
    SCHEDULERS.iter().map(|e| e.name)
}

/// The types that take `param`, as a hint lists them: `fq_codel`, or
/// `drr, qfq or fq_codel`.
pub fn takers(param: SchedParam) -> String {
    let v: Vec<&str> = SCHEDULERS
        .iter()
        .filter(|e| e.takes(param))
        .map(|e| e.name)
        .collect();
    match v.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Passing proves the table is consistent: names and aliases are
    /// unique and find their entry, each kind finds its own entry, a
    /// kind's own parameters are among those it takes, and a configuration
    /// prints exactly the parameters its type takes.
    #[test]
    fn registry_is_consistent() {
        let mut words: Vec<&str> = SCHEDULERS
            .iter()
            .flat_map(|e| core::iter::once(e.name).chain(e.aliases.iter().copied()))
            .collect();
        let n = words.len();
        words.sort_unstable();
        words.dedup();
        assert_eq!(words.len(), n, "a name or alias is registered twice");
        for e in SCHEDULERS {
            assert_eq!(e.default.entry(), e, "{}", e.name);
            assert_eq!(lookup(e.name), Some(e));
            for a in e.aliases {
                assert_eq!(SchedKind::from_name(a), Some(e.default));
            }
            assert!(!e.summary().is_empty(), "{} has no documentation", e.name);
            let own = e.default.params();
            for p in SchedParam::ALL {
                if p != SchedParam::Quantum && own.given(p) {
                    assert!(
                        e.takes(p),
                        "{}: its kind has {} but does not take it",
                        e.name,
                        p.name()
                    );
                }
            }
            let text = SchedConfig::of(e.default).to_string();
            let words: Vec<&str> = text.split(' ').collect();
            assert_eq!(words[..2], ["type", e.name]);
            let printed: Vec<&str> = words[2..].iter().step_by(2).copied().collect();
            // Flags (`ecn`) are off by default, and then not printed.
            let taken: Vec<&str> = e
                .params
                .iter()
                .filter(|p| !p.is_flag())
                .map(|p| p.name())
                .collect();
            assert_eq!(printed, taken, "{text}");
        }
    }

    /// Passing proves written parameters replace a kind's own, and that a
    /// parameter of another type is refused with the types that take it.
    #[test]
    fn parameters_apply_and_foreign_ones_are_refused() {
        let p = SchedParams {
            quantum: Some(3000),
            target: Some(Duration::from_millis(2)),
            ..SchedParams::default()
        };
        let c = SchedConfig::from_params(SchedKind::FQ_CODEL, &p).expect("valid");
        assert_eq!(c.quantum(), 3000);
        assert_eq!(
            c.kind(),
            SchedKind::FqCodel {
                target: Duration::from_millis(2),
                interval: Duration::from_millis(100),
                ecn: false,
            }
        );
        let e = SchedConfig::from_params(SchedKind::Drr, &p).expect_err("drr takes no target");
        assert_eq!(e.param, "target");
        assert_eq!(
            e.reason,
            "'target' is a parameter of type fq_codel or fq_pie, not drr"
        );
        assert_eq!(takers(SchedParam::Quantum), "drr, qfq, fq_codel or fq_pie");
        let c = SchedConfig::from_params(SchedKind::Wf2q, &SchedParams::default()).expect("ok");
        assert_eq!(c, SchedConfig::of(SchedKind::Wf2q));
    }
}
