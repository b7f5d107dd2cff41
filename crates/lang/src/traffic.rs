//! Traffic specs: the synthetic sources of `pipelab sim --traffic SPEC`.
//!
//! ```text
//! cbr     rate R size S duration D [COMMON]
//! poisson rate R size S duration D [COMMON]
//! onoff   rate R size S on P off P duration D [COMMON]
//!   R      = packets/s (1000pps, 1.5kpps) or bit/s (4Mbit/s)
//!   P      = a duration (1s) or an exponentially distributed one (exp:1s)
//!   COMMON = start D | from ADDR:PORT | to ADDR:PORT | proto udp|tcp | name NAME
//! ```
//!
//! Words may come in any order after the pattern, each at most once. A
//! spec only records what was written (`Option`s for the common words);
//! filling in defaults (source 10.0.0.1:10000+index, destination
//! 10.0.0.2:5001, udp, start 0) is the caller's job, since it depends on
//! the spec's position among several. A bit rate is kept as a bit rate:
//! [`TrafficSpec::interval`] gives the exact mean inter-packet time as a
//! fraction, so a source never accumulates rounding. This module does not
//! generate packets.

use core::fmt;
use core::str::FromStr;
use std::net::SocketAddr;

use pipelab_engine::time::{Duration, Rate, NS_PER_SEC};

use crate::error::ParseError;
use crate::lexer::{tokenize_line, Token, TokenKind};
use crate::units::{self, PacketRate, UnitError};

/// When packets are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// `cbr`: constant bit rate, one packet every interval.
    Cbr,
    /// `poisson`: exponentially distributed gaps with the given mean rate.
    Poisson,
    /// `onoff`: CBR during `on` periods, silent during `off` periods.
    OnOff {
        /// Length of each on period.
        on: Period,
        /// Length of each off period.
        off: Period,
    },
}

/// The length of an on or off period.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Period {
    /// Always this long (`1s`).
    Fixed(Duration),
    /// Exponentially distributed with this mean (`exp:1s`).
    Exp(Duration),
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Period::Fixed(d) => write!(f, "{d}"),
            Period::Exp(d) => write!(f, "exp:{d}"),
        }
    }
}

/// The sending rate of a source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TrafficRate {
    /// Packets per second (`1000pps`).
    Packets(PacketRate),
    /// Bits per second (`4Mbit/s`); packets/s = bits / (size · 8).
    Bits(Rate),
}

impl fmt::Display for TrafficRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrafficRate::Packets(p) => write!(f, "{p}"),
            TrafficRate::Bits(r) => write!(f, "{r}"),
        }
    }
}

/// The transport protocol of generated packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TrafficProto {
    /// `udp`.
    Udp,
    /// `tcp` (segments with TCP headers; no congestion control).
    Tcp,
}

impl fmt::Display for TrafficProto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TrafficProto::Udp => "udp",
            TrafficProto::Tcp => "tcp",
        })
    }
}

/// One synthetic traffic source.
///
/// New words become new `Option` fields; construct by parsing.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TrafficSpec {
    /// When packets are sent.
    pub pattern: Pattern,
    /// Mean sending rate (during on periods for `onoff`).
    pub rate: TrafficRate,
    /// Packet size in bytes, `1..=65535` (IP packet, headers included).
    pub size: u32,
    /// How long the source sends, from its start.
    pub duration: Duration,
    /// `start D`: when the source starts (caller's default: 0).
    pub start: Option<Duration>,
    /// `from ADDR:PORT` (caller's default: 10.0.0.1:10000+index).
    pub from: Option<SocketAddr>,
    /// `to ADDR:PORT` (caller's default: 10.0.0.2:5001).
    pub to: Option<SocketAddr>,
    /// `proto udp|tcp` (caller's default: udp).
    pub proto: Option<TrafficProto>,
    /// `name NAME`, for reports.
    pub name: Option<String>,
    /// `ecn`: packets are ECN-capable (ECT(0)), so a pipe with `ecn` marks
    /// them instead of dropping them.
    pub ecn: bool,
}

impl TrafficSpec {
    /// The words after the pattern.
    pub const WORDS: &'static [&'static str] = &[
        "rate", "size", "duration", "on", "off", "start", "from", "to", "proto", "name", "ecn",
    ];

    /// The mean time between packets in nanoseconds, as an exact fraction
    /// `(numerator, denominator)` (for `onoff`, within an on period).
    ///
    /// For a packet rate of `m` milli-packets/s it is `10¹² / m`; for a bit
    /// rate `B` it is `size · 8 · 10⁹ / B`. The denominator is never zero
    /// for a parsed spec.
    pub fn interval(&self) -> (u128, u128) {
        match self.rate {
            TrafficRate::Packets(p) => (NS_PER_SEC as u128 * 1000, p.millipps() as u128),
            TrafficRate::Bits(r) => (self.size as u128 * 8 * NS_PER_SEC as u128, r.bps() as u128),
        }
    }
}

impl fmt::Display for TrafficSpec {
    /// Canonical text: pattern, rate, size, on/off, duration, then the
    /// given common words.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.pattern {
            Pattern::Cbr => "cbr",
            Pattern::Poisson => "poisson",
            Pattern::OnOff { .. } => "onoff",
        };
        write!(f, "{name} rate {} size {}B", self.rate, self.size)?;
        if let Pattern::OnOff { on, off } = self.pattern {
            write!(f, " on {on} off {off}")?;
        }
        write!(f, " duration {}", self.duration)?;
        if let Some(s) = self.start {
            write!(f, " start {s}")?;
        }
        if let Some(a) = self.from {
            write!(f, " from {a}")?;
        }
        if let Some(a) = self.to {
            write!(f, " to {a}")?;
        }
        if let Some(p) = self.proto {
            write!(f, " proto {p}")?;
        }
        if let Some(n) = &self.name {
            write!(f, " name {n}")?;
        }
        if self.ecn {
            f.write_str(" ecn")?;
        }
        Ok(())
    }
}

impl FromStr for TrafficSpec {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        parse_traffic(s)
    }
}

const EXAMPLE: &str = "e.g. cbr rate 1000pps size 1000B duration 10s";

/// The words a traffic spec starts with.
const PATTERNS: &[&str] = &["cbr", "poisson", "onoff", "on-off"];
const ONOFF_EXAMPLE: &str = "e.g. onoff rate 1000pps size 1000B on 1s off 2s duration 10s";

fn err(tok: Token<'_>, message: impl Into<String>, hint: Option<String>) -> ParseError {
    ParseError::new(1, tok.column, tok.text, message, hint)
}

fn unit<T>(tok: Token<'_>, r: Result<T, UnitError>) -> Result<T, ParseError> {
    r.map_err(|e| err(tok, e.message, e.hint))
}

fn positive(tok: Token<'_>, what: &str, zero: bool) -> Result<(), ParseError> {
    if zero {
        Err(err(tok, format!("{what} must be greater than zero"), None))
    } else {
        Ok(())
    }
}

fn traffic_rate(tok: Token<'_>) -> Result<TrafficRate, ParseError> {
    let w = tok.text;
    let r = if units::is_packet_rate(w) {
        TrafficRate::Packets(unit(tok, units::parse_packet_rate(w))?)
    } else if w.bytes().all(|b| b.is_ascii_digit() || b == b'.') && !w.is_empty() {
        return Err(err(
            tok,
            format!("missing unit in '{w}'"),
            Some(format!("write e.g. {w}pps or {w}Kbit/s")),
        ));
    } else {
        let rate = units::parse_rate(w).map_err(|e| {
            let hint = if e.message.starts_with("unknown unit") {
                e.hint
                    .filter(|h| h.starts_with("did you mean"))
                    .or_else(|| {
                        Some(format!(
                            "known units: pps, kpps, Mpps, {}",
                            units::RATE_UNIT_NAMES
                        ))
                    })
            } else {
                e.hint
            };
            err(tok, e.message, hint)
        })?;
        TrafficRate::Bits(rate)
    };
    let zero = match r {
        TrafficRate::Packets(p) => p.millipps() == 0,
        TrafficRate::Bits(b) => b.bps() == 0,
    };
    positive(tok, "rate", zero)?;
    Ok(r)
}

fn period(tok: Token<'_>) -> Result<Period, ParseError> {
    let (exp, text) = match tok.text.get(..4) {
        Some(p) if p.eq_ignore_ascii_case("exp:") => (true, tok.text.get(4..).unwrap_or("")),
        _ => (false, tok.text),
    };
    let d = unit(tok, units::parse_duration(text))?;
    positive(tok, "a period", d == Duration::ZERO)?;
    Ok(if exp {
        Period::Exp(d)
    } else {
        Period::Fixed(d)
    })
}

fn socket_addr(tok: Token<'_>) -> Result<SocketAddr, ParseError> {
    tok.text.parse().map_err(|_| {
        err(
            tok,
            format!("invalid address '{}'", tok.text),
            Some("write ADDR:PORT, e.g. 10.0.0.1:5000 or [2001:db8::1]:5000".into()),
        )
    })
}

/// Parses a file of traffic specs (`pipelab sim --traffic-file`, the
/// Python package's `sim`): one spec per line, blank lines and `#`
/// comments skipped.
///
/// An error is at its line of `text` and its column in that line. A
/// file whose first spec does not start with a pattern is refused as not
/// a traffic file, quoting nothing of it.
pub fn parse_traffic_lines(text: &str) -> Result<Vec<TrafficSpec>, ParseError> {
    let mut specs = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let body = line.split('#').next().unwrap_or("");
        let spec = body.trim();
        if spec.is_empty() {
            continue;
        }
        let indent = body.chars().take_while(|c| c.is_whitespace()).count();
        let first_word = spec.split_whitespace().next().unwrap_or("");
        if specs.is_empty() && !PATTERNS.iter().any(|p| first_word.eq_ignore_ascii_case(p)) {
            // Not a traffic file (any file may be named, by mistake or
            // to have a line of it printed): nothing of it is quoted.
            return Err(ParseError::new(
                u32::try_from(n + 1).unwrap_or(u32::MAX),
                u32::try_from(indent + 1).unwrap_or(u32::MAX),
                "",
                "not a traffic file: its first line is not a traffic spec (the line is not shown)"
                    .to_string(),
                Some(format!(
                    "a spec starts with a pattern (cbr, poisson, onoff), {EXAMPLE}"
                )),
            ));
        }
        let spec = parse_traffic(spec).map_err(|mut e| {
            e.line = u32::try_from(n + 1).unwrap_or(u32::MAX);
            e.column = e
                .column
                .saturating_add(u32::try_from(indent).unwrap_or(u32::MAX));
            e
        })?;
        specs.push(spec);
    }
    Ok(specs)
}

/// Parses a traffic spec such as `cbr rate 1000pps size 1000B duration 10s`.
///
/// Errors are on line 1, columns counted in the spec string.
pub fn parse_traffic(spec: &str) -> Result<TrafficSpec, ParseError> {
    let toks = tokenize_line(spec, 1);
    let eol = toks.last().map_or(1, |t| t.end_column());
    let missing =
        |message: String, hint: Option<String>| ParseError::new(1, eol, "", message, hint);
    let mut it = toks.iter().copied();
    let Some(first) = it.next() else {
        return Err(missing("empty traffic spec".into(), Some(EXAMPLE.into())));
    };
    let kind = match first.text.to_ascii_lowercase().as_str() {
        "cbr" => 0,
        "poisson" => 1,
        "onoff" | "on-off" => 2,
        _ => {
            return Err(err(
                first,
                format!("unknown traffic pattern '{}'", first.text),
                Some("patterns: cbr, poisson, onoff".into()),
            ))
        }
    };
    let mut seen: Vec<(&'static str, u32)> = Vec::new();
    let mut rate = None;
    let mut size = None;
    let mut duration = None;
    let (mut on, mut off) = (None, None);
    let mut out = TrafficSpec {
        pattern: Pattern::Cbr,
        rate: TrafficRate::Bits(Rate::UNLIMITED),
        size: 0,
        duration: Duration::ZERO,
        start: None,
        from: None,
        to: None,
        proto: None,
        name: None,
        ecn: false,
    };
    while let Some(tok) = it.next() {
        if tok.kind != TokenKind::Word {
            return Err(err(tok, format!("unexpected '{}'", tok.text), None));
        }
        let lower = tok.text.to_ascii_lowercase();
        let Some(&word) = TrafficSpec::WORDS.iter().find(|w| **w == lower) else {
            return Err(err(
                tok,
                format!("unknown traffic parameter '{}'", tok.text),
                Some(format!(
                    "known parameters: {}",
                    TrafficSpec::WORDS.join(", ")
                )),
            ));
        };
        if (word == "on" || word == "off") && kind != 2 {
            return Err(err(
                tok,
                format!("'{word}' is only valid with onoff"),
                Some("write onoff rate .. size .. on 1s off 2s duration ..".into()),
            ));
        }
        if let Some(&(_, col)) = seen.iter().find(|(w, _)| *w == word) {
            return Err(err(
                tok,
                format!("duplicate parameter '{}'", tok.text),
                Some(format!("'{word}' was already given at column {col}")),
            ));
        }
        seen.push((word, tok.column));
        if word == "ecn" {
            out.ecn = true;
            continue;
        }
        let value = match it.next() {
            Some(v) if v.kind == TokenKind::Word => v,
            Some(v) => {
                return Err(err(
                    v,
                    format!("expected a value, found '{}'", v.text),
                    None,
                ))
            }
            None => {
                return Err(missing(
                    format!("missing value after '{}'", tok.text),
                    Some(EXAMPLE.into()),
                ))
            }
        };
        match word {
            "rate" => rate = Some(traffic_rate(value)?),
            "size" => {
                let s = unit(value, units::parse_size(value.text))?;
                match u32::try_from(s) {
                    Ok(s) if (1..=65_535).contains(&s) => size = Some(s),
                    _ => {
                        return Err(err(
                            value,
                            format!("packet size '{}' is outside 1..65535 bytes", value.text),
                            None,
                        ))
                    }
                }
            }
            "duration" => {
                let d = unit(value, units::parse_duration(value.text))?;
                positive(value, "duration", d == Duration::ZERO)?;
                duration = Some(d);
            }
            "on" => on = Some(period(value)?),
            "off" => off = Some(period(value)?),
            "start" => out.start = Some(unit(value, units::parse_duration(value.text))?),
            "from" => out.from = Some(socket_addr(value)?),
            "to" => out.to = Some(socket_addr(value)?),
            "proto" => {
                out.proto = Some(match value.text.to_ascii_lowercase().as_str() {
                    "udp" => TrafficProto::Udp,
                    "tcp" => TrafficProto::Tcp,
                    _ => {
                        return Err(err(
                            value,
                            format!("unknown protocol '{}'", value.text),
                            Some("expected udp or tcp".into()),
                        ))
                    }
                })
            }
            _ => {
                let ok = value
                    .text
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'));
                if !ok {
                    return Err(err(
                        value,
                        format!("invalid name '{}'", value.text),
                        Some("names use letters, digits, '_', '-' and '.'".into()),
                    ));
                }
                out.name = Some(value.text.to_string());
            }
        }
    }
    let example = if kind == 2 { ONOFF_EXAMPLE } else { EXAMPLE };
    let need = |what: &str| {
        missing(
            format!("missing '{what}' in traffic spec"),
            Some(example.into()),
        )
    };
    out.rate = rate.ok_or_else(|| need("rate"))?;
    out.size = size.ok_or_else(|| need("size"))?;
    out.duration = duration.ok_or_else(|| need("duration"))?;
    out.pattern = match kind {
        0 => Pattern::Cbr,
        1 => Pattern::Poisson,
        _ => Pattern::OnOff {
            on: on.ok_or_else(|| need("on"))?,
            off: off.ok_or_else(|| need("off"))?,
        },
    };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of specs: comments and blank lines skipped, and an error
    /// at its line and at its column in that line, indentation counted.
    #[test]
    fn traffic_lines_skip_comments_and_place_errors() {
        let text = "# flows\n\ncbr rate 10pps size 100B duration 1s # one\n  poisson rate 5pps size 64B duration 2s\n";
        let specs = parse_traffic_lines(text).expect("two specs");
        assert_eq!(specs.len(), 2);
        assert_eq!(specs[1].pattern, Pattern::Poisson);
        let e = parse_traffic_lines(
            "cbr rate 10pps size 100B duration 1s\n  cbr rate 10pps size 1XB duration 1s\n",
        )
        .expect_err("bad size");
        assert_eq!((e.line, e.column), (2, 23), "{e}");
        assert_eq!(parse_traffic_lines("# none\n").map(|v| v.len()), Ok(0));
    }

    fn ok(s: &str) -> TrafficSpec {
        parse_traffic(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }
    fn bad(s: &str) -> String {
        match parse_traffic(s) {
            Ok(t) => panic!("{s}: expected an error, got {t:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_four_documented_examples() {
        let t = ok("cbr rate 1000pps size 1000B duration 10s");
        assert_eq!(t.pattern, Pattern::Cbr);
        assert_eq!(t.rate, TrafficRate::Packets(PacketRate::from_pps(1000)));
        assert_eq!(t.size, 1000);
        assert_eq!(t.duration, Duration::from_secs(10));
        assert_eq!(t.interval(), (1_000_000_000_000, 1_000_000));
        assert_eq!(t.start, None);

        let t = ok("cbr rate 4Mbit/s size 1500B duration 10s");
        assert_eq!(t.rate, TrafficRate::Bits(Rate::from_bps(4_000_000)));
        // 1500 B at 4 Mbit/s: one packet every 3 ms.
        let (n, d) = t.interval();
        assert_eq!(n / d, 3_000_000);
        assert_eq!(n % d, 0);

        let t = ok("poisson rate 800pps size 500B duration 5s");
        assert_eq!(t.pattern, Pattern::Poisson);

        let t = ok("onoff rate 1000pps size 1000B on 1s off exp:2s duration 10s");
        assert_eq!(
            t.pattern,
            Pattern::OnOff {
                on: Period::Fixed(Duration::from_secs(1)),
                off: Period::Exp(Duration::from_secs(2)),
            }
        );
    }

    #[test]
    fn common_words_and_round_trip() {
        let s = "cbr rate 1.5kpps size 1000B duration 10s start 2s from 10.0.0.1:10000 \
                 to [2001:db8::2]:5001 proto tcp name bulk-1";
        let t = ok(s);
        assert_eq!(t.start, Some(Duration::from_secs(2)));
        assert_eq!(t.from, Some("10.0.0.1:10000".parse().unwrap()));
        assert_eq!(t.proto, Some(TrafficProto::Tcp));
        assert_eq!(t.name.as_deref(), Some("bulk-1"));
        assert_eq!(
            t.to_string(),
            "cbr rate 1500pps size 1000B duration 10s start 2s from 10.0.0.1:10000 \
             to [2001:db8::2]:5001 proto tcp name bulk-1"
        );
        assert_eq!(ok(&t.to_string()), t);
        // Any order after the pattern.
        assert_eq!(
            ok("cbr duration 10s size 1000 rate 1500pps"),
            ok("cbr rate 1500pps size 1000B duration 10s")
        );
    }

    #[test]
    fn bad_specs_say_what_and_where() {
        let cases = [
            ("", "1:1: empty traffic spec: e.g. cbr rate 1000pps size 1000B duration 10s"),
            ("vbr rate 1pps", "1:1: unknown traffic pattern 'vbr': patterns: cbr, poisson, onoff"),
            (
                "cbr rate 1000 size 1000B duration 10s",
                "1:10: missing unit in '1000': write e.g. 1000pps or 1000Kbit/s",
            ),
            (
                "cbr rate 4Mbps size 1000B duration 10s",
                "1:10: unknown unit 'Mbps' in '4Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)",
            ),
            (
                "cbr rate 0pps size 1000B duration 10s",
                "1:10: rate must be greater than zero",
            ),
            (
                "cbr rate 10pps size 1000B",
                "1:26: missing 'duration' in traffic spec: e.g. cbr rate 1000pps size 1000B duration 10s",
            ),
            (
                "cbr rate 10pps size 70000B duration 1s",
                "1:21: packet size '70000B' is outside 1..65535 bytes",
            ),
            (
                "cbr rate 10pps size 100B duration 10",
                "1:35: missing unit in '10': write e.g. 10s or 10ms",
            ),
            (
                "cbr rate 10pps rate 20pps",
                "1:16: duplicate parameter 'rate': 'rate' was already given at column 5",
            ),
            (
                "cbr rate 10pps on 1s",
                "1:16: 'on' is only valid with onoff: write onoff rate .. size .. on 1s off 2s duration ..",
            ),
            (
                "onoff rate 10pps size 100B on 1s duration 1s",
                "1:45: missing 'off' in traffic spec: e.g. onoff rate 1000pps size 1000B on 1s off 2s duration 10s",
            ),
            (
                "cbr rate 10pps size 100B duration 1s from 10.0.0.1",
                "1:43: invalid address '10.0.0.1': write ADDR:PORT, e.g. 10.0.0.1:5000 or [2001:db8::1]:5000",
            ),
            (
                "cbr rate 10pps size 100B duration 1s proto icmp",
                "1:44: unknown protocol 'icmp': expected udp or tcp",
            ),
            (
                "cbr rate 10pps size 100B duration 1s burst 3",
                "1:38: unknown traffic parameter 'burst': known parameters: rate, size, duration, on, off, start, from, to, proto, name, ecn",
            ),
            ("cbr rate", "1:9: missing value after 'rate': e.g. cbr rate 1000pps size 1000B duration 10s"),
        ];
        for (spec, want) in cases {
            assert_eq!(bad(spec), want, "spec: {spec}");
        }
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;
        use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

        fn dur() -> impl Strategy<Value = Duration> {
            prop_oneof![
                (1u64..=u64::MAX / 2).prop_map(Duration::from_nanos),
                (1u64..=100_000).prop_map(Duration::from_millis),
            ]
        }
        fn period() -> impl Strategy<Value = Period> {
            prop_oneof![dur().prop_map(Period::Fixed), dur().prop_map(Period::Exp)]
        }
        fn addr() -> impl Strategy<Value = SocketAddr> {
            prop_oneof![
                (any::<u32>(), any::<u16>())
                    .prop_map(|(a, p)| SocketAddr::new(IpAddr::V4(Ipv4Addr::from(a)), p)),
                (any::<u128>(), any::<u16>())
                    .prop_map(|(a, p)| SocketAddr::new(IpAddr::V6(Ipv6Addr::from(a)), p)),
            ]
        }
        fn spec() -> impl Strategy<Value = TrafficSpec> {
            let pattern = prop_oneof![
                Just(Pattern::Cbr),
                Just(Pattern::Poisson),
                (period(), period()).prop_map(|(on, off)| Pattern::OnOff { on, off }),
            ];
            let rate = prop_oneof![
                (1u64..=u64::MAX).prop_map(|m| TrafficRate::Packets(PacketRate::from_millipps(m))),
                (1u64..=u64::MAX).prop_map(|b| TrafficRate::Bits(Rate::from_bps(b))),
            ];
            (
                (pattern, rate, 1u32..=65_535, dur()),
                (
                    proptest::option::of(dur()),
                    proptest::option::of(addr()),
                    proptest::option::of(addr()),
                    proptest::option::of(prop_oneof![
                        Just(TrafficProto::Udp),
                        Just(TrafficProto::Tcp)
                    ]),
                    proptest::option::of("[a-zA-Z0-9_.-]{1,10}"),
                    any::<bool>(),
                ),
            )
                .prop_map(
                    |((pattern, rate, size, duration), (start, from, to, proto, name, ecn))| {
                        TrafficSpec {
                            pattern,
                            rate,
                            size,
                            duration,
                            start,
                            from,
                            to,
                            proto,
                            name,
                            ecn,
                        }
                    },
                )
        }

        proptest! {
            #[test]
            fn traffic_text_parses_back_to_the_spec(t in spec()) {
                let text = t.to_string();
                prop_assert_eq!(parse_traffic(&text), Ok(t), "text: {}", text);
            }
        }
    }
}
