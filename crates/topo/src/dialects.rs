//! Keys of other tools' network graphs, read as this crate's: Shadow's
//! (the GML network graph of the Shadow simulator) in GML and GraphML
//! files, and Mininet's link parameters in GraphML files
//! ([`crate::graphml`]). Each is rewritten to the crate's own key and a
//! value in the command language's words before the link is read
//! ([`crate::attrs::read_link`]), so a value is checked once, the same
//! way as everywhere.
//!
//! **Edge keys** (both formats unless said):
//!
//! * `latency` (Shadow): the one-way delay; a time `"10 ms"` (a space
//!   between number and unit is allowed, as Shadow writes it; units `ns`,
//!   `us`, `ms`, `s`, `sec`, `min`, `h` and their long forms), a bare
//!   number is **seconds** (Shadow's base unit). Becomes `delay`.
//! * `packet_loss` (Shadow): a **fraction** in `[0, 1]`. Becomes `loss`.
//! * `jitter` written as Shadow writes it (`"2 ms"`): the jitter, as
//!   `jitter "2ms"`; a zero jitter (`"0 ms"`) is none. Other forms are
//!   the crate's own `jitter` key.
//! * `max_queue_size` (Mininet): the queue in **packets**. Becomes
//!   `queue`.
//! * GraphML only, as Mininet's `TCLink` reads them: `bw` as a bare
//!   number is **Mbit/s** (`10` = `10Mbit/s`; a value with a unit is read
//!   as written); `loss` as a bare number is a **percentage** (`1` = 1 %;
//!   `"1%"` and the loss models are read as written).
//!
//! **Node keys** (Shadow): `host_bandwidth_up` and `host_bandwidth_down`,
//! a rate `"10 Mbit"` (Shadow's units: `bit`, `Kbit`, `Mbit`, `Gbit`,
//! `Tbit`, the binary `Kibit`, `Mibit`, `Gibit`, `Tibit`, the long
//! prefixes `kilo`..`tebi`, `bits` for `bit`; a bare number is bit/s). A
//! node that has them is where hosts attach: it is a client (a VN)
//! unless its `role` says otherwise. A link of this topology has one rate
//! for both directions; the rate of a link is the least of its own
//! bandwidth (if it has one) and, each way, the sending end's
//! `host_bandwidth_up` and the receiving end's `host_bandwidth_down`. If
//! the two directions come out different (a node whose up and down rates
//! differ, and an edge that gives no smaller `bw`), the file is refused,
//! naming the node: give both rates the same value, or give its edges a
//! `bw`. For a node with one link (an access link) the rate is Shadow's
//! exactly; for a node with several, each link gets the host's rate (in
//! Shadow the host's links share it).
//!
//! **Self-loops.** Shadow's graph gives every node a loop: the path
//! between two hosts at that node. A node here is one VN, so a loop on a
//! node with host bandwidths is read (its values are checked) and left
//! out; any other loop is refused.
//!
//! **Directed graphs** (GML `directed 1`, GraphML
//! `edgedefault="directed"`): a link carries both directions, so an edge
//! and its reverse are one link, and must have the same attributes (else
//! both lines are named); an edge without its reverse is a link of both
//! directions.

use pipelab_engine::Rate;

use crate::attrs::Written;
use crate::gml::{err, GmlError};
use crate::model::{Link, Topology};

/// Which file's reading of the keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// A GML file: Shadow's keys besides the crate's own.
    Gml,
    /// A GraphML file: Mininet's and Shadow's keys besides the crate's own.
    Graphml,
}

/// The edge keys of other tools that are taken here (for hints).
pub(crate) const EDGE_KEYS: &[&str] = &[
    "source",
    "target",
    "latency",
    "packet_loss",
    "max_queue_size",
];

/// The node keys of Shadow.
pub(crate) const HOST_KEYS: &[&str] = &["host_bandwidth_up", "host_bandwidth_down"];

/// True if `s` is a plain decimal number (`10`, `0.5`, `-1`), no unit.
fn plain_number(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    !s.is_empty()
        && s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && s.bytes().filter(|&b| b == b'.').count() <= 1
}

/// `value` in plain decimal when it is a number written with an exponent
/// (`1e-05` = `0.00001`, as Python writes small floats), else as it is.
pub(crate) fn decimal(value: &str) -> String {
    let v = value.trim();
    let exp = v.contains(['e', 'E'])
        && !v
            .chars()
            .any(|c| c.is_ascii_alphabetic() && c != 'e' && c != 'E');
    match v.parse::<f64>() {
        Ok(x) if exp && x.is_finite() => format!("{x}"),
        _ => v.to_string(),
    }
}

/// A number and its unit (`"10 ms"`, `"1.5Mbit"`, `"10"`): the digits as
/// an integer, the count of decimals, the unit.
fn split(value: &str) -> Option<(u128, u32, &str)> {
    let v = value.trim();
    let end = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, unit) = v.split_at(end);
    if !plain_number(num) {
        return None;
    }
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits = format!("{int}{frac}");
    if digits.len() > 30 {
        return None;
    }
    let mantissa = digits.parse::<u128>().ok()?;
    Some((mantissa, frac.len() as u32, unit.trim()))
}

/// `mantissa / 10^scale * mult`, if whole.
fn exact(mantissa: u128, scale: u32, mult: u128) -> Option<u64> {
    let den = 10u128.checked_pow(scale)?;
    let num = mantissa.checked_mul(mult)?;
    (num % den == 0)
        .then(|| u64::try_from(num / den).ok())
        .flatten()
}

/// A time as Shadow writes it, in nanoseconds (a bare number is seconds).
pub(crate) fn shadow_time(value: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "invalid time '{value}' (Shadow's times are written like \"10 ms\": ns, us, ms, s, min, h; a bare number is seconds)"
        )
    };
    let (m, scale, unit) = split(value).ok_or_else(bad)?;
    let mult: u128 = match unit {
        "ns" | "nanosecond" | "nanoseconds" => 1,
        "us" | "μs" | "µs" | "microsecond" | "microseconds" => 1_000,
        "ms" | "millisecond" | "milliseconds" => 1_000_000,
        "" | "s" | "sec" | "secs" | "second" | "seconds" => 1_000_000_000,
        "m" | "min" | "mins" | "minute" | "minutes" => 60_000_000_000,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600_000_000_000,
        _ => return Err(bad()),
    };
    exact(m, scale, mult)
        .ok_or_else(|| format!("time '{value}' is not a whole number of nanoseconds"))
}

/// A rate as Shadow writes it (`"10 Mbit"`; a bare number is bit/s).
pub(crate) fn shadow_rate(value: &str) -> Result<Rate, String> {
    let bad = || {
        format!(
            "invalid bandwidth '{value}' (Shadow's bandwidths are written like \"10 Mbit\": bit, Kbit, Mbit, Gbit, Tbit, Kibit, Mibit, Gibit, Tibit)"
        )
    };
    let (m, scale, unit) = split(value).ok_or_else(bad)?;
    let prefix = unit
        .strip_suffix("bits")
        .or_else(|| unit.strip_suffix("bit"))
        .unwrap_or(if unit.is_empty() { "" } else { "?" });
    let mult: u128 = match prefix {
        "" => 1,
        "K" | "kilo" => 1_000,
        "Ki" | "kibi" => 1 << 10,
        "M" | "mega" => 1_000_000,
        "Mi" | "mebi" => 1 << 20,
        "G" | "giga" => 1_000_000_000,
        "Gi" | "gibi" => 1 << 30,
        "T" | "tera" => 1_000_000_000_000,
        "Ti" | "tebi" => 1 << 40,
        _ => return Err(bad()),
    };
    let bps = exact(m, scale, mult)
        .ok_or_else(|| format!("bandwidth '{value}' is not a whole number of bit/s"))?;
    if bps == 0 {
        return Err(format!("bandwidth '{value}' is zero (a host needs a rate)"));
    }
    Ok(Rate::from_bps(bps))
}

/// One edge attribute in the crate's own words: `None` if it says
/// nothing (a zero jitter); else the key and value given to the link's
/// reader. `Err` is the message for the attribute's own key.
pub(crate) fn edge_attr(
    dialect: Dialect,
    key: &str,
    value: &str,
    line: usize,
) -> Result<Option<Written>, String> {
    let v = decimal(value);
    // `"2 ms"`: a number, a space, a unit (the language has no spaces
    // there: `"5ms 25%"` is its jitter and correlation).
    let shadow_spaced = |s: &str| {
        let w: Vec<&str> = s.split_whitespace().collect();
        matches!(w.as_slice(), [n, u] if plain_number(n) && u.chars().all(char::is_alphabetic))
    };
    let word = |k: &str, v: String| Ok(Some(Written::new(k, v, line)));
    match key {
        "latency" => word("delay", format!("{}ns", shadow_time(&v)?)),
        "packet_loss" => match v.parse::<f64>() {
            Ok(p) if plain_number(&v) && (0.0..=1.0).contains(&p) => word("loss", v),
            _ => Err(format!(
                "expected a fraction between 0 and 1 (Shadow's packet_loss), found '{value}'"
            )),
        },
        "jitter" if shadow_spaced(&v) => match shadow_time(&v)? {
            0 => Ok(None),
            ns => word("jitter", format!("{ns}ns")),
        },
        "max_queue_size" => match v.parse::<u64>() {
            Ok(n) if n > 0 => word("queue", n.to_string()),
            _ => Err(format!(
                "expected a queue size in packets (a whole number above 0), found '{value}'"
            )),
        },
        "bw" if dialect == Dialect::Graphml && plain_number(&v) => word(key, format!("{v}Mbit/s")),
        "loss" if dialect == Dialect::Graphml && plain_number(&v) => word(key, format!("{v}%")),
        _ => word(key, v),
    }
}

/// A node's host bandwidths (Shadow's), each with its line.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Hosts {
    /// `host_bandwidth_up`.
    pub up: Option<(Rate, usize)>,
    /// `host_bandwidth_down`.
    pub down: Option<(Rate, usize)>,
}

impl Hosts {
    /// True if the node gives either.
    pub fn any(&self) -> bool {
        self.up.is_some() || self.down.is_some()
    }

    /// Reads a node key; false if it is not one of Shadow's.
    pub fn read(&mut self, key: &str, value: &str, line: usize) -> Result<bool, GmlError> {
        let slot = match key {
            "host_bandwidth_up" => &mut self.up,
            "host_bandwidth_down" => &mut self.down,
            _ => return Ok(false),
        };
        if let Some((_, before)) = slot {
            return Err(err(
                line,
                key,
                format!("given twice (first on line {before})"),
            ));
        }
        let rate = shadow_rate(value).map_err(|m| err(line, key, m))?;
        *slot = Some((rate, line));
        Ok(true)
    }
}

/// The lesser of two rates (unlimited is the greatest).
fn least(a: Rate, b: Rate) -> Rate {
    match (a.is_unlimited(), b.is_unlimited()) {
        (true, _) => b,
        (_, true) => a,
        _ => Rate::from_bps(a.bps().min(b.bps())),
    }
}

fn rate_of(h: Option<(Rate, usize)>) -> Rate {
    h.map_or(Rate::UNLIMITED, |h| h.0)
}

/// Gives each link the rate its ends' host bandwidths allow (see the
/// module documentation); `hosts` by node index, `node_line` the line of
/// each node.
pub(crate) fn apply_hosts(
    topo: &mut Topology,
    hosts: &[Hosts],
    node_line: &[usize],
) -> Result<(), GmlError> {
    let none = Hosts::default();
    for l in &mut topo.links {
        let (ha, hb) = (
            hosts.get(l.a).unwrap_or(&none),
            hosts.get(l.b).unwrap_or(&none),
        );
        if !ha.any() && !hb.any() {
            continue;
        }
        let fwd = least(least(l.bw, rate_of(ha.up)), rate_of(hb.down));
        let back = least(least(l.bw, rate_of(hb.up)), rate_of(ha.down));
        if fwd != back {
            // The node whose own rates differ (or the first end).
            let (n, h) = if rate_of(ha.up) != rate_of(ha.down) {
                (l.a, ha)
            } else {
                (l.b, hb)
            };
            let other = l.other(n);
            let line =
                h.up.or(h.down)
                    .map_or(node_line.get(n).copied().unwrap_or(0), |x| x.1);
            let node = &topo.nodes[n];
            return Err(err(
                line,
                "host_bandwidth_up",
                format!(
                    "node {}'s host_bandwidth_up ({}) and host_bandwidth_down ({}) give its link to node {} {} one way and {} the other; a link here has one rate for both directions: give both the same value, or give the edge a bw",
                    node.id,
                    rate_of(h.up),
                    rate_of(h.down),
                    topo.nodes[other].id,
                    fwd,
                    back
                ),
            ));
        }
        if fwd != l.bw && l.words.rate.is_some() {
            return Err(err(
                node_line.get(l.a).copied().unwrap_or(0),
                "host_bandwidth_up",
                "a host bandwidth sets the rate of a link whose edge gives netem's rate: give one",
            ));
        }
        l.bw = fwd;
    }
    Ok(())
}

/// In a directed graph, makes an edge and its reverse one link (the link
/// at `lines[i]` came from the edge on that line); refuses a pair whose
/// attributes differ.
pub(crate) fn merge_directed(topo: &mut Topology, lines: &[usize]) -> Result<(), GmlError> {
    let same = |x: &Link, y: &Link| {
        x.bw == y.bw
            && x.delay == y.delay
            && x.loss == y.loss
            && x.queue == y.queue
            && x.words == y.words
    };
    let mut keep: Vec<bool> = vec![true; topo.links.len()];
    let mut paired: Vec<bool> = vec![false; topo.links.len()];
    let mut by_ends: std::collections::HashMap<(usize, usize), Vec<usize>> = Default::default();
    for (i, l) in topo.links.iter().enumerate() {
        let reverse = by_ends
            .get(&(l.b, l.a))
            .and_then(|js| js.iter().copied().find(|&j| !paired[j]));
        if let Some(j) = reverse {
            if !same(l, &topo.links[j]) {
                let (na, nb) = (topo.nodes[l.a].id, topo.nodes[l.b].id);
                return Err(err(
                    lines.get(i).copied().unwrap_or(0),
                    "edge",
                    format!(
                        "the edge from node {na} to node {nb} and its reverse on line {} differ; a link here carries both directions with one set of attributes: give both edges the same",
                        lines.get(j).copied().unwrap_or(0)
                    ),
                ));
            }
            paired[j] = true;
            paired[i] = true;
            keep[i] = false;
        }
        by_ends.entry((l.a, l.b)).or_default().push(i);
    }
    let mut i = 0;
    topo.links.retain(|_| {
        i += 1;
        keep[i - 1]
    });
    Ok(())
}
