//! # pipelab-classify: the packet classifier
//!
//! ipfw's model (dummynet-revisited §3.2): a list of numbered rules,
//! evaluated in number order; the first rule whose conditions all match
//! decides the packet's fate. Rules are compiled once from the command
//! language's [`RuleSpec`]s into a [`Classifier`], an immutable program plus
//! per-rule counters and per-rule random generators (for `prob`).
//!
//! Matches cover ipfw's words for an emulator (dummynet-revisited
//! §3.2–3.3): protocol, addresses (`any`, `me`, networks, `{a,b}` lists,
//! `table(N)`), ports, `in`/`out`, `via`/`recv`/`xmit`, `mac`, `mac-type`
//! (non-IP frames), `iplen`, `tcpflags`, `dscp`, `uid`, each negatable.
//! Lookup tables ([`table::LpmTable`]) answer in one binary search, and
//! `pipe tablearg`/`skipto tablearg` take the value of the rule's last
//! matching lookup (planetlab-dummynet-emulation §3.6).
//!
//! Dynamic states ([`dynamic`]): a `keep-state` rule makes a state for the
//! flows it matches, and their later packets, either direction, take its
//! action at the first `check-state` or `keep-state` rule; the states
//! expire in the packets' own time ([`Classifier::classify_at`]).
//! `layer2` is a property of the emulation ([`Context::layer2`]).
//!
//! A frame field the packet lacks (no IP header, a truncated transport
//! header, no Ethernet addresses) fails every condition on it, negated or
//! not; so a truncated or non-IP frame matches only rules that need no
//! missing field. Where the packet was seen (`in`/`out`, interfaces, the
//! owning user) is metadata: unknown means false, and `not` makes it true.
//!
//! What it deliberately does not do: read frames beyond [`frame`]'s
//! etherparse view (callers may also build a [`PacketView`] from a
//! synthetic source), own pipes, resolve user or interface names (the
//! runner passes them in a [`Context`]), or read a clock. It depends on
//! `pipelab-engine` for the flow key and the seeded generators, and on
//! `pipelab-lang` for the rule types.
//!
//! The built-in last rule, 65535, is `allow ip from any to any`: pipelab
//! is an emulator, not a firewall, so unmatched traffic passes unshaped.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod answer;
pub mod dynamic;
pub mod frame;
mod matcher;
pub mod table;

use pipelab_engine::rng::{stage_rng, StageKind, StageRng};
use pipelab_engine::time::Instant;
use pipelab_engine::FlowKey;
use pipelab_lang::{Action, RuleSpec, Table, TableId};
use rand::Rng;
use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

pub use answer::Answer;
pub use matcher::Matcher;
pub use table::LpmTable;

/// The number of the built-in default rule.
pub const DEFAULT_RULE: u32 = 65535;

/// Direction of a packet relative to the emulator (ipfw's `in` / `out`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Entering (ipfw: the input path).
    In,
    /// Leaving (ipfw: the output path).
    Out,
}

/// What the classifier looks at in a packet.
///
/// Fill what the source knows and leave the rest at its default
/// ([`PacketView::ip`] for a synthetic IP packet, [`frame::parse_ethernet`]
/// for a frame): an absent field makes conditions on it fail.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketView {
    /// Addresses, ports, protocol (the protocol after IPv6 extension
    /// headers). Ports are meaningful only when `has_ports`.
    pub key: FlowKey,
    /// `true` if the packet is IP (v4 or v6); non-IP frames match only
    /// rules that need no IP field. `key`'s addresses and protocol,
    /// `ip_len` and `dscp` are meaningful only when set.
    pub is_ip: bool,
    /// `true` if `key`'s ports were read (a TCP or UDP header was present).
    pub has_ports: bool,
    /// Direction, if the capture point knows it.
    pub dir: Option<Direction>,
    /// Length in bytes (what the rule's byte counter adds).
    pub len: u32,
    /// The innermost ethertype (after VLAN tags), if known.
    pub ether_type: Option<u16>,
    /// Ethernet source address, if the packet came as a frame.
    pub src_mac: Option<[u8; 6]>,
    /// Ethernet destination address, if the packet came as a frame.
    pub dst_mac: Option<[u8; 6]>,
    /// The IP packet's length: IPv4 total length, IPv6 40 + payload length.
    pub ip_len: u32,
    /// The DSCP (upper six bits of the IPv4 TOS / IPv6 traffic class).
    pub dscp: u8,
    /// The TCP flag byte (FIN = 0x01 ... CWR = 0x80), if a TCP header was
    /// read.
    pub tcp_flags: Option<u8>,
    /// The receiving interface, as an id of [`Context::ifaces`].
    pub in_if: Option<u32>,
    /// The transmitting interface, as an id of [`Context::ifaces`].
    pub out_if: Option<u32>,
    /// The user owning the local socket, where the backend knows it.
    pub uid: Option<u32>,
    /// The ICMP or ICMPv6 type, if an ICMP header was read.
    pub icmp_type: Option<u8>,
    /// `true` if the packet is a fragment of a larger IP packet (IPv4
    /// more-fragments or a fragment offset, an IPv6 fragment header).
    pub fragment: bool,
}

impl PacketView {
    /// An IP packet of `len` bytes with flow `key` (ports read if the
    /// protocol has them); `ip_len` is `len`, the ethertype follows the
    /// address family; everything else unknown.
    pub fn ip(key: FlowKey, len: u32) -> PacketView {
        PacketView {
            key,
            is_ip: true,
            has_ports: matches!(key.proto, 6 | 17 | 132),
            len,
            ether_type: Some(if key.src.is_ipv4() { 0x0800 } else { 0x86dd }),
            ip_len: len,
            ..PacketView::default()
        }
    }
}

/// What rules refer to by name or number, resolved when they are compiled:
/// the host's addresses (`me`), the lookup tables, interface names and
/// user names. The runner fills it; [`Classifier::new`] uses an empty one
/// with only `me`.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// The emulating host's addresses, for `me`.
    pub me: Vec<IpAddr>,
    /// Lookup tables by number or name (a `Config`'s `tables`). A rule
    /// naming a missing table finds nothing in it.
    pub tables: BTreeMap<TableId, Table>,
    /// Interface name → the id in [`PacketView::in_if`]/[`PacketView::out_if`].
    /// A rule naming an unknown interface never sees it.
    pub ifaces: BTreeMap<String, u32>,
    /// User name → uid, for `uid NAME`. An unknown name matches no packet.
    pub users: BTreeMap<String, u32>,
    /// The emulation sees frames at layer 2 (bridge mode): `layer2` rules
    /// match, `not layer2` rules do not. Elsewhere packets are seen at
    /// layer 3 and it is the other way round (ipfw's two passes, of
    /// which a pipelab emulation has one).
    pub layer2: bool,
}

/// The classifier's verdict on a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Let the packet go on unshaped.
    Allow,
    /// Drop the packet.
    Deny,
    /// Send the packet through pipe `N` (the user's pipe number).
    Pipe(u32),
    /// Send the packet to flow queue `N`.
    Queue(u32),
    /// Drop the packet and answer it (`reset`, `unreach CODE`), if
    /// [`Answer::allowed`] lets it be answered.
    Answer(Answer),
}

/// The decision and the position of the rule that took it (to resume after
/// it when a packet is reinjected, `one_pass 0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Match {
    /// What to do.
    pub decision: Decision,
    /// Index of the deciding rule in [`Classifier::rules`] order.
    pub rule: usize,
}

/// Packets and bytes a rule matched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuleCounters {
    /// Packets that matched (all conditions, `prob` included).
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
}

#[derive(Debug)]
struct CompiledRule {
    number: u32,
    spec: RuleSpec,
    matcher: Matcher,
    /// `prob P` as a threshold on a uniform `u32`: matches if draw < threshold.
    prob: Option<u64>,
    /// The `prob` stream of context 0 (the first port's fresh packets).
    rng: StageRng,
    /// The `prob` streams of the other contexts, made on first use.
    streams: BTreeMap<u64, StageRng>,
    /// For `skipto N`: index of the first rule numbered `>= N`.
    skip_to: usize,
    /// `keep-state :NAME`: the flow name's index.
    keep_flow: Option<u32>,
    /// `check-state :NAME`: the flow name's index, `None` for `:any`.
    check_flow: Option<u32>,
}

/// Compiled rules plus their state.
///
/// A `prob` rule draws from one stream per *context*, the place the
/// packets it judges come from ([`Classifier::classify_in`]: an ingress
/// port, or the rule that sent a reinjected packet into the pipe it
/// left), so the draws a rule makes for one context depend on that
/// context's packets alone, whatever else is classified in between: the
/// same packets give the same draws when their contexts are classified in
/// different places (the partitions of `pipelab sim --workers K`).
#[derive(Debug)]
pub struct Classifier {
    seed: u64,
    rules: Vec<CompiledRule>,
    counters: Vec<RuleCounters>,
    /// Rule numbers in evaluation order, for `skipto tablearg`.
    numbers: Vec<u32>,
    /// The dynamic states of `keep-state` rules.
    states: dynamic::States,
    /// State flow names by index; index 0 is ipfw's `default`.
    flow_names: Vec<String>,
    /// Packets denied because the state table was full.
    state_full: u64,
}

/// The index of flow name `name` (`None`: `default`) in `names`.
fn flow_index(names: &[String], name: Option<&str>) -> u32 {
    let name = name.unwrap_or("default");
    names
        .iter()
        .position(|n| n == name)
        .map_or(dynamic::DEFAULT_FLOW, |i| i as u32)
}

impl Classifier {
    /// Compile `rules` (number → spec, e.g. a `Config`'s rule map), seeding
    /// each `prob` rule's generator from `(seed, rule number)`. `me` are the
    /// emulating host's addresses, for the `me` keyword. The default rule
    /// 65535 is appended. No tables, interfaces or users: see
    /// [`Classifier::with_context`].
    pub fn new<'a>(
        rules: impl IntoIterator<Item = (u32, &'a RuleSpec)>,
        me: &[IpAddr],
        seed: u64,
    ) -> Classifier {
        let ctx = Context {
            me: me.to_vec(),
            ..Context::default()
        };
        Classifier::with_context(rules, &ctx, seed)
    }

    /// Like [`Classifier::new`], resolving tables, interface and user names
    /// through `ctx`. Each table is compiled once and shared by the rules
    /// that name it.
    pub fn with_context<'a>(
        rules: impl IntoIterator<Item = (u32, &'a RuleSpec)>,
        ctx: &Context,
        seed: u64,
    ) -> Classifier {
        let tables: BTreeMap<TableId, Arc<LpmTable>> = ctx
            .tables
            .iter()
            .map(|(n, t)| (n.clone(), Arc::new(LpmTable::new(t))))
            .collect();
        let env = matcher::Env {
            ctx,
            tables: &tables,
        };
        let mut list: Vec<(u32, RuleSpec)> =
            rules.into_iter().map(|(n, r)| (n, r.clone())).collect();
        list.sort_by_key(|(n, _)| *n);
        let mut default = RuleSpec::new(Action::Allow);
        default.number = Some(DEFAULT_RULE);
        list.push((DEFAULT_RULE, default));
        let numbers: Vec<u32> = list.iter().map(|(n, _)| *n).collect();
        // Flow names: `default` first, then the others in name order.
        let mut names: Vec<String> = list
            .iter()
            .filter_map(|(_, r)| match r.action {
                Action::CheckState => r.state_flow.clone(),
                _ => r.keep_state().flatten().map(str::to_string),
            })
            .filter(|n| n != "any" && n != "default")
            .collect();
        names.sort();
        names.dedup();
        names.insert(0, "default".to_string());
        let rules: Vec<CompiledRule> = list
            .into_iter()
            .map(|(number, spec)| {
                let skip_to = match spec.action {
                    Action::Skipto(n) => numbers.partition_point(|&m| m < n),
                    _ => 0,
                };
                CompiledRule {
                    number,
                    matcher: Matcher::compile_in(&spec, &env),
                    prob: spec.prob.map(|p| {
                        (p.ppb() as u64 * (1u64 << 32)) / pipelab_lang::Probability::ONE_PPB as u64
                    }),
                    rng: stage_rng(seed, StageKind::Rule, number as u64),
                    streams: BTreeMap::new(),
                    skip_to,
                    keep_flow: spec.keep_state().map(|n| flow_index(&names, n)),
                    check_flow: match spec.state_flow.as_deref() {
                        Some("any") => None,
                        n => Some(flow_index(&names, n)),
                    },
                    spec,
                }
            })
            .collect();
        let counters = vec![RuleCounters::default(); rules.len()];
        Classifier {
            seed,
            rules,
            counters,
            numbers,
            states: dynamic::States::default(),
            flow_names: names,
            state_full: 0,
        }
    }

    /// The context of a fresh packet that arrived by port `port`
    /// ([`Classifier::classify_in`]); port 0's is 0.
    pub fn port_context(port: u16) -> u64 {
        (port as u64) << 1
    }

    /// The context of a packet reinjected after the pipe rule number
    /// `rule` sent it to ([`Classifier::classify_in`]).
    pub fn reinjection_context(rule: u32) -> u64 {
        ((rule as u64) << 1) | 1
    }

    /// The number of the rule at index `i` of the evaluation order.
    pub fn number_at(&self, i: usize) -> Option<u32> {
        self.numbers.get(i).copied()
    }

    /// Classify `pkt`, starting at rule index `start` (0 for a fresh packet;
    /// the deciding rule's index + 1 for a reinjected one), in context 0.
    pub fn classify(&mut self, pkt: &PacketView, start: usize) -> Match {
        self.classify_in(pkt, start, 0)
    }

    /// [`Classifier::classify`] in context `ctx` ([`Classifier::port_context`],
    /// [`Classifier::reinjection_context`]): `prob` rules draw from the
    /// context's own stream, seeded from `(seed, rule number, ctx)`
    /// (context 0's from `(seed, rule number)`). Dynamic states are
    /// judged at instant 0 ([`Classifier::classify_at`]).
    pub fn classify_in(&mut self, pkt: &PacketView, start: usize, ctx: u64) -> Match {
        self.classify_at(pkt, start, ctx, Instant::ZERO)
    }

    /// [`Classifier::classify_in`] for a packet seen at `now` (its arrival
    /// instant, in the driver's time): the instant dynamic states are
    /// made, refreshed and expired at.
    ///
    /// States are consulted and made for packets entering the rules
    /// (`start` 0); a packet reinjected after a pipe (`one_pass 0`) passes
    /// `check-state` rules, and `keep-state` rules match it as plain rules,
    /// so a state never sends a packet back to a rule before the one it
    /// resumes after, and every partition of a virtual-time run (which
    /// reinjects in its own classifier) sees the same states.
    pub fn classify_at(&mut self, pkt: &PacketView, start: usize, ctx: u64, now: Instant) -> Match {
        let mut i = start;
        let seed = self.seed;
        // ipfw looks the dynamic table up once per packet, at the first
        // check-state or keep-state rule.
        let mut looked = start != 0;
        while let Some(r) = self.rules.get_mut(i) {
            let stateful = r.spec.action == Action::CheckState || r.keep_flow.is_some();
            if stateful && !looked {
                looked = true;
                let flow = match r.keep_flow {
                    Some(f) => Some(f),
                    None => r.check_flow,
                };
                if let Some(s) = self.states.lookup(pkt, flow, now) {
                    // The rule that made the state acts, body skipped.
                    match self.act(pkt, s.rule, s.arg) {
                        Ok(m) => return m,
                        Err(next) => {
                            i = next;
                            continue;
                        }
                    }
                }
            }
            let Some(r) = self.rules.get_mut(i) else {
                break;
            };
            if r.spec.action == Action::CheckState {
                i += 1;
                continue;
            }
            let Some(arg) = r.matcher.matches_arg(pkt) else {
                i += 1;
                continue;
            };
            if let Some(th) = r.prob {
                // Draw only for packets that match everything else, so the
                // stream of draws depends on this rule's traffic alone.
                let number = r.number as u64;
                let rng = if ctx == 0 {
                    &mut r.rng
                } else {
                    r.streams
                        .entry(ctx)
                        .or_insert_with(|| stage_rng(seed, StageKind::Rule, number | (ctx << 16)))
                };
                if (rng.gen::<u32>() as u64) >= th {
                    i += 1;
                    continue;
                }
            }
            if let (Some(flow), true) = (r.keep_flow, start == 0) {
                let number = r.number;
                if self.states.insert(pkt, flow, i, number, arg, now).is_err() {
                    // ipfw denies a packet whose state it cannot make.
                    self.state_full += 1;
                    if let Some(c) = self.counters.get_mut(i) {
                        c.packets += 1;
                        c.bytes += pkt.len as u64;
                    }
                    return Match {
                        decision: Decision::Deny,
                        rule: i,
                    };
                }
            }
            match self.act(pkt, i, arg) {
                Ok(m) => return m,
                Err(next) => i = next,
            }
        }
        // Unreachable while the default rule is last; allow, as it would.
        Match {
            decision: Decision::Allow,
            rule: self.rules.len().saturating_sub(1),
        }
    }

    /// Rule `i` matched `pkt` with `tablearg` `arg`: count it and take its
    /// action. `Err(next)`: go on at rule index `next` (`count`, `skipto`),
    /// always after `i`.
    fn act(&mut self, pkt: &PacketView, i: usize, arg: u32) -> Result<Match, usize> {
        let Some(r) = self.rules.get(i) else {
            return Err(i + 1);
        };
        if let Some(c) = self.counters.get_mut(i) {
            c.packets += 1;
            c.bytes += pkt.len as u64;
        }
        let decision = match r.spec.action {
            Action::Allow => Decision::Allow,
            Action::Deny => Decision::Deny,
            Action::Reset => Decision::Answer(Answer::Reset),
            Action::Unreach(c) => Decision::Answer(Answer::Unreach(c)),
            Action::Pipe(n) => Decision::Pipe(n),
            Action::Queue(n) => Decision::Queue(n),
            Action::Count | Action::CheckState => return Err(i + 1),
            // skipto targets are always later rules (the parser checks
            // N > own number), so the walk moves forward and ends.
            Action::Skipto(_) => return Err(r.skip_to.max(i + 1)),
            Action::PipeTablearg => Decision::Pipe(arg),
            // A value not after this rule continues with the next one.
            Action::SkiptoTablearg => {
                return Err(self.numbers.partition_point(|&m| m < arg).max(i + 1))
            }
        };
        Ok(Match { decision, rule: i })
    }

    /// Dynamic states held (expired ones not yet reclaimed included).
    pub fn dynamic_states(&self) -> usize {
        self.states.len()
    }

    /// Packets denied because the state table held [`dynamic::DYN_MAX`]
    /// live states.
    pub fn state_table_full(&self) -> u64 {
        self.state_full
    }

    /// Take over the state of `old`'s rules that this classifier has
    /// unchanged (same number, same text): their counters and their `prob`
    /// streams, so that reconfiguring a running emulation neither resets
    /// the counters of the rules it did not touch nor replays their draws.
    /// Both lists are in number order (rules that share a number in the
    /// order added), so this is one merge. A dynamic state goes on under
    /// the first unchanged rule of its number.
    pub fn inherit(&mut self, old: &Classifier) {
        // Rule number → index here, of the rules that stand unchanged.
        let mut kept: BTreeMap<u32, usize> = BTreeMap::new();
        let mut j = 0;
        for (i, r) in self.rules.iter_mut().enumerate() {
            while old.rules.get(j).is_some_and(|o| o.number < r.number) {
                j += 1;
            }
            let Some(o) = old.rules.get(j) else { break };
            if o.number == r.number && o.spec == r.spec {
                kept.entry(r.number).or_insert(i);
                r.rng = o.rng.clone();
                r.streams = o.streams.clone();
                if let (Some(c), Some(oc)) = (self.counters.get_mut(i), old.counters.get(j)) {
                    *c = *oc;
                }
                // Taken: the next rule of a shared number meets the next
                // old one.
                j += 1;
            }
        }
        // Dynamic states whose rule stands unchanged go on, under their
        // flow name's new index (ipfw keeps the states of rules it keeps).
        let names = &self.flow_names;
        self.states = old.states.carried(
            |s| kept.get(&s.number).copied(),
            |f| {
                let name = old.flow_names.get(f as usize)?;
                names.iter().position(|n| n == name).map(|i| i as u32)
            },
        );
        self.state_full = old.state_full;
    }

    /// True if some rule may send a packet to a pipe or a flow queue.
    pub fn shapes(&self) -> bool {
        self.rules.iter().any(|r| {
            matches!(
                r.spec.action,
                Action::Pipe(_) | Action::Queue(_) | Action::PipeTablearg
            )
        })
    }

    /// Add `other`'s rule counters to these (classifiers of one
    /// configuration that classified different packets: the partitions of
    /// a run). Rules are matched by position; `other` must have the same
    /// rules.
    pub fn add_counters(&mut self, other: &Classifier) {
        for (c, o) in self.counters.iter_mut().zip(&other.counters) {
            c.packets += o.packets;
            c.bytes += o.bytes;
        }
    }

    /// Count rule `i` (in [`Classifier::rules`] order) as matched by one
    /// more packet of `len` bytes, as classifying it would: for a caller
    /// that knows the rules decide a packet as they decided one that
    /// looked the same (no `prob`, no dynamic state: see
    /// `pipelab_emu::Emulation::admit_memo`).
    #[inline]
    pub fn count_match(&mut self, i: usize, len: u32) {
        if let Some(c) = self.counters.get_mut(i) {
            c.packets += 1;
            c.bytes += len as u64;
        }
    }

    /// The rules in evaluation order: (number, spec, counters).
    pub fn rules(&self) -> impl Iterator<Item = (u32, &RuleSpec, &RuleCounters)> {
        self.rules
            .iter()
            .zip(&self.counters)
            .map(|(r, c)| (r.number, &r.spec, c))
    }
}

impl fmt::Display for Classifier {
    /// ipfw's `show`: number, packets, bytes, rule text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, spec, c) in self.rules() {
            let mut s = spec.clone();
            s.number = None;
            writeln!(f, "{n:05} {:>10} {:>12} {s}", c.packets, c.bytes)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
