//! # pipelab-classify: the packet classifier
//!
//! ipfw's model (dummynet-revisited §3.2): a list of numbered rules,
//! evaluated in number order; the first rule whose conditions all match
//! decides the packet's fate. Rules are compiled once from the command
//! language's [`RuleSpec`]s into a [`Classifier`], an immutable program plus
//! per-rule counters and per-rule random generators (for `prob`).
//!
//! What it deliberately does not do: parse frames (callers hand it a
//! [`PacketView`] built from a parsed frame or a synthetic source), own
//! pipes, or read a clock. It depends on `pipelab-engine` for the flow key
//! and the seeded generators, and on `pipelab-lang` for the rule types.
//!
//! The built-in last rule, 65535, is `allow ip from any to any`: pipelab
//! is an emulator, not a firewall, so unmatched traffic passes unshaped.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod frame;
mod matcher;

use pipelab_engine::rng::{stage_rng, StageKind, StageRng};
use pipelab_engine::FlowKey;
use pipelab_lang::{Action, RuleSpec};
use rand::Rng;
use std::fmt;
use std::net::IpAddr;

pub use matcher::Matcher;

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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketView {
    /// Addresses, ports, protocol.
    pub key: FlowKey,
    /// `true` if the packet is IP (v4 or v6); non-IP frames match only
    /// rules that need no IP field.
    pub is_ip: bool,
    /// Direction, if the capture point knows it.
    pub dir: Option<Direction>,
    /// Length in bytes.
    pub len: u32,
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
    rng: StageRng,
    /// For `skipto N`: index of the first rule numbered `>= N`.
    skip_to: usize,
}

/// Compiled rules plus their state.
#[derive(Debug)]
pub struct Classifier {
    rules: Vec<CompiledRule>,
    counters: Vec<RuleCounters>,
}

impl Classifier {
    /// Compile `rules` (number → spec, e.g. a `Config`'s rule map), seeding
    /// each `prob` rule's generator from `(seed, rule number)`. `me` are the
    /// emulating host's addresses, for the `me` keyword. The default rule
    /// 65535 is appended.
    pub fn new<'a>(
        rules: impl IntoIterator<Item = (u32, &'a RuleSpec)>,
        me: &[IpAddr],
        seed: u64,
    ) -> Classifier {
        let mut list: Vec<(u32, RuleSpec)> =
            rules.into_iter().map(|(n, r)| (n, r.clone())).collect();
        list.sort_by_key(|(n, _)| *n);
        let mut default = RuleSpec::new(Action::Allow);
        default.number = Some(DEFAULT_RULE);
        list.push((DEFAULT_RULE, default));
        let numbers: Vec<u32> = list.iter().map(|(n, _)| *n).collect();
        let rules: Vec<CompiledRule> = list
            .into_iter()
            .map(|(number, spec)| {
                let skip_to = match spec.action {
                    Action::Skipto(n) => numbers.partition_point(|&m| m < n),
                    _ => 0,
                };
                CompiledRule {
                    number,
                    matcher: Matcher::compile(&spec, me),
                    prob: spec.prob.map(|p| {
                        (p.ppb() as u64 * (1u64 << 32)) / pipelab_lang::Probability::ONE_PPB as u64
                    }),
                    rng: stage_rng(seed, StageKind::Rule, number as u64),
                    skip_to,
                    spec,
                }
            })
            .collect();
        let counters = vec![RuleCounters::default(); rules.len()];
        Classifier { rules, counters }
    }

    /// Classify `pkt`, starting at rule index `start` (0 for a fresh packet;
    /// the deciding rule's index + 1 for a reinjected one).
    pub fn classify(&mut self, pkt: &PacketView, start: usize) -> Match {
        let mut i = start;
        while let Some(r) = self.rules.get_mut(i) {
            if !r.matcher.matches(pkt) {
                i += 1;
                continue;
            }
            if let Some(th) = r.prob {
                // Draw only for packets that match everything else, so the
                // stream of draws depends on this rule's traffic alone.
                if (r.rng.gen::<u32>() as u64) >= th {
                    i += 1;
                    continue;
                }
            }
            let c = &mut self.counters[i];
            c.packets += 1;
            c.bytes += pkt.len as u64;
            let decision = match r.spec.action {
                Action::Allow => Decision::Allow,
                Action::Deny => Decision::Deny,
                Action::Pipe(n) => Decision::Pipe(n),
                Action::Queue(n) => Decision::Queue(n),
                Action::Count => {
                    i += 1;
                    continue;
                }
                Action::Skipto(_) => {
                    // skipto targets are always later rules (the parser
                    // checks N > own number), so this terminates.
                    i = r.skip_to.max(i + 1);
                    continue;
                }
            };
            return Match { decision, rule: i };
        }
        // Unreachable while the default rule is last; allow, as it would.
        Match {
            decision: Decision::Allow,
            rule: self.rules.len().saturating_sub(1),
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
