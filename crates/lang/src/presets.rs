//! Named link conditions: the presets people start from (Apple's
//! Network Link Conditioner, Chrome DevTools, WebPageTest, a
//! geostationary satellite hop), each a pair of pipe words, one per
//! direction.
//!
//! A preset is written `preset NAME` (or `preset:NAME`) among a pipe's
//! words and stands for the words of one of its two sides: `NAME/down`
//! (from the network to the user: a shell's `--downlink`, what `attach`
//! receives) or `NAME/up` (from the user to the network). Where the side
//! is plain from the place (`--link`, `--uplink`, `--downlink`, attach's
//! words) the name alone will do; a pipe of a configuration carries one
//! direction and names its side. The words are the language's own, so a
//! preset prints, compiles and is checked as if they were written out;
//! words given beside it add to it (a preset's own word given again is
//! refused as any duplicate is).
//!
//! Each number keeps the meaning of its source. Sources that give a
//! round-trip time (DevTools, WebPageTest) have half of it in each
//! direction; DevTools' request-level adjustment factors (its download
//! × 0.8 or 0.9, latency × 5, 3.75 or 2.75) are not applied: they correct
//! DevTools' own request-level throttling towards these packet-level
//! targets, which is what a pipe emulates (as WebPageTest and Lighthouse's
//! packet-level settings do).

use crate::error::ParseError;
use crate::lexer::{tokenize_line, Token, TokenKind};

/// Which direction of a preset a pipe takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// From the user to the network.
    Up,
    /// From the network to the user.
    Down,
}

/// A named condition.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    /// Its name (`nlc-3g`).
    pub name: &'static str,
    /// The name its source gives it.
    pub title: &'static str,
    /// Where the numbers come from.
    pub source: &'static str,
    /// The pipe words of the direction from the network to the user.
    pub down: &'static str,
    /// The pipe words of the direction from the user to the network.
    pub up: &'static str,
}

impl Preset {
    /// The words of `side`.
    pub fn words(&self, side: Side) -> &'static str {
        match side {
            Side::Up => self.up,
            Side::Down => self.down,
        }
    }
}

const NLC: &str =
    "Apple Network Link Conditioner (Additional Tools for Xcode), its built-in profile";
const DEVTOOLS: &str = "Chrome DevTools throttling (devtools-frontend NetworkManager.ts): its targets, RTT halved each way";
const WPT: &str =
    "WebPageTest connectivity profiles (settings/connectivity.ini): RTT halved each way";

/// Every preset, in the order `pipelab presets` lists them.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "nlc-3g",
        title: "3G",
        source: NLC,
        down: "bw 780Kbit/s delay 100ms",
        up: "bw 330Kbit/s delay 100ms",
    },
    Preset {
        name: "nlc-dsl",
        title: "DSL",
        source: NLC,
        down: "bw 2Mbit/s delay 5ms",
        up: "bw 256Kbit/s delay 5ms",
    },
    Preset {
        name: "nlc-edge",
        title: "Edge",
        source: NLC,
        down: "bw 240Kbit/s delay 400ms",
        up: "bw 200Kbit/s delay 440ms",
    },
    Preset {
        name: "nlc-lte",
        title: "LTE",
        source: NLC,
        down: "bw 50Mbit/s delay 50ms",
        up: "bw 10Mbit/s delay 65ms",
    },
    Preset {
        name: "nlc-wifi",
        title: "WiFi",
        source: NLC,
        down: "bw 40Mbit/s delay 1ms",
        up: "bw 33Mbit/s delay 1ms",
    },
    Preset {
        name: "nlc-very-bad-network",
        title: "Very Bad Network",
        source: NLC,
        down: "bw 1Mbit/s delay 500ms loss 10%",
        up: "bw 1Mbit/s delay 500ms loss 10%",
    },
    Preset {
        name: "nlc-100-loss",
        title: "100% Loss",
        source: NLC,
        down: "loss 100%",
        up: "loss 100%",
    },
    Preset {
        name: "devtools-3g",
        title: "3G (formerly Slow 3G)",
        source: DEVTOOLS,
        down: "bw 500Kbit/s delay 200ms",
        up: "bw 500Kbit/s delay 200ms",
    },
    Preset {
        name: "devtools-slow-4g",
        title: "Slow 4G (formerly Fast 3G)",
        source: DEVTOOLS,
        down: "bw 1600Kbit/s delay 75ms",
        up: "bw 750Kbit/s delay 75ms",
    },
    Preset {
        name: "devtools-fast-4g",
        title: "Fast 4G",
        source: DEVTOOLS,
        down: "bw 9Mbit/s delay 30ms",
        up: "bw 1500Kbit/s delay 30ms",
    },
    Preset {
        name: "wpt-dial",
        title: "56K Dial-Up (49/30 Kbps 120ms RTT)",
        source: WPT,
        down: "bw 49Kbit/s delay 60ms",
        up: "bw 30Kbit/s delay 60ms",
    },
    Preset {
        name: "wpt-2g",
        title: "2G (280 Kbps/256 Kbps 800ms RTT)",
        source: WPT,
        down: "bw 280Kbit/s delay 400ms",
        up: "bw 256Kbit/s delay 400ms",
    },
    Preset {
        name: "wpt-fios",
        title: "FIOS (20/5 Mbps 4ms RTT)",
        source: WPT,
        down: "bw 20Mbit/s delay 2ms",
        up: "bw 5Mbit/s delay 2ms",
    },
    Preset {
        name: "wpt-cable",
        title: "Cable (5/1 Mbps 28ms RTT)",
        source: WPT,
        down: "bw 5Mbit/s delay 14ms",
        up: "bw 1Mbit/s delay 14ms",
    },
    Preset {
        name: "wpt-dsl",
        title: "DSL (1.5 Mbps/384 Kbps 50ms RTT)",
        source: WPT,
        down: "bw 1500Kbit/s delay 25ms",
        up: "bw 384Kbit/s delay 25ms",
    },
    Preset {
        name: "wpt-3g-slow",
        title: "Mobile 3G - Slow (400 Kbps 400ms RTT)",
        source: WPT,
        down: "bw 400Kbit/s delay 200ms",
        up: "bw 400Kbit/s delay 200ms",
    },
    Preset {
        name: "wpt-3g",
        title: "Mobile 3G (1.6 Mbps/768 Kbps 300ms RTT)",
        source: WPT,
        down: "bw 1600Kbit/s delay 150ms",
        up: "bw 768Kbit/s delay 150ms",
    },
    Preset {
        name: "wpt-3g-fast",
        title: "Mobile 3G - Fast (1.6 Mbps/768 Kbps 150ms RTT)",
        source: WPT,
        down: "bw 1600Kbit/s delay 75ms",
        up: "bw 768Kbit/s delay 75ms",
    },
    Preset {
        name: "wpt-4g",
        title: "Mobile 4G (9 Mbps 170ms RTT)",
        source: WPT,
        down: "bw 9Mbit/s delay 85ms",
        up: "bw 9Mbit/s delay 85ms",
    },
    Preset {
        name: "wpt-lte",
        title: "Mobile LTE (12 Mbps 70ms RTT)",
        source: WPT,
        down: "bw 12Mbit/s delay 35ms",
        up: "bw 12Mbit/s delay 35ms",
    },
    Preset {
        name: "wpt-edge",
        title: "Mobile Edge (240 Kbps/200 Kbps 840ms RTT)",
        source: WPT,
        down: "bw 240Kbit/s delay 420ms",
        up: "bw 200Kbit/s delay 420ms",
    },
    Preset {
        name: "geo",
        title: "A geostationary satellite hop",
        source: "propagation: ground to a satellite 35,786 km up and down again is 239 ms at the sub-satellite point and 279 ms at the edge of its coverage (slant range 41,679 km), at the speed of light; bandwidths of a consumer plan (25/3 Mbit/s)",
        down: "bw 25Mbit/s delay 279ms",
        up: "bw 3Mbit/s delay 279ms",
    },
];

/// The preset called `name` (any case).
pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name.eq_ignore_ascii_case(name))
}

/// Where a preset stood in a line: its column, the name and side as
/// written and its words (for the hint of an error among them).
#[derive(Clone, Debug)]
pub(crate) struct Expanded {
    pub column: u32,
    pub written: String,
    pub words: &'static str,
}

/// A line's tokens with its presets expanded, and where they stood.
pub(crate) type Expansion<'a> = (Vec<Token<'a>>, Vec<Expanded>);

/// `toks` with each `preset NAME[/SIDE]` (or `preset:NAME[/SIDE]`)
/// replaced by the words of that side of the preset, every word at the
/// preset's column; a name without a side takes `side` (none: refused).
/// `None` when the line names no preset.
pub(crate) fn expand<'a>(
    toks: &[Token<'a>],
    side: Option<Side>,
) -> Result<Option<Expansion<'a>>, ParseError> {
    let is_preset = |t: &Token<'_>| {
        t.kind == TokenKind::Word
            && (t.text.eq_ignore_ascii_case("preset")
                || t.text
                    .get(..7)
                    .is_some_and(|h| h.eq_ignore_ascii_case("preset:")))
    };
    if !toks.iter().any(is_preset) {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(toks.len() + 8);
    let mut found = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        i += 1;
        if !is_preset(&t) {
            out.push(t);
            continue;
        }
        let (name, at) = if t.text.len() > 7 {
            (&t.text[7..], t)
        } else {
            match toks.get(i) {
                Some(n) if n.kind == TokenKind::Word => {
                    i += 1;
                    (n.text, *n)
                }
                _ => {
                    return Err(ParseError::new(
                        t.line,
                        t.end_column(),
                        "",
                        "missing the preset's name after 'preset'",
                        Some(names_hint()),
                    ))
                }
            }
        };
        let (base, given) = match name.rsplit_once('/') {
            Some((b, s)) if s.eq_ignore_ascii_case("up") => (b, Some(Side::Up)),
            Some((b, s)) if s.eq_ignore_ascii_case("down") => (b, Some(Side::Down)),
            Some((b, s)) => {
                return Err(ParseError::new(
                    at.line,
                    at.column,
                    at.text,
                    format!("unknown side '{s}' of preset '{b}'"),
                    Some(format!("a preset's sides are {b}/up and {b}/down")),
                ))
            }
            None => (name, None),
        };
        let Some(p) = find(base) else {
            return Err(ParseError::new(
                at.line,
                at.column,
                at.text,
                format!("unknown preset '{base}'"),
                Some(names_hint()),
            ));
        };
        let Some(s) = given.or(side) else {
            return Err(ParseError::new(
                at.line,
                at.column,
                at.text,
                format!("preset '{}' has two sides and a pipe carries one", p.name),
                Some(format!(
                    "write {0}/down (from the network: {1}) or {0}/up (to it: {2})",
                    p.name, p.down, p.up
                )),
            ));
        };
        let words = p.words(s);
        for mut w in tokenize_line(words, t.line) {
            w.column = t.column;
            out.push(w);
        }
        found.push(Expanded {
            column: t.column,
            written: format!("{}/{}", p.name, if s == Side::Up { "up" } else { "down" }),
            words,
        });
    }
    Ok(Some((out, found)))
}

/// An error in a line whose presets were expanded: a duplicate of a
/// preset's word names the preset.
pub(crate) fn explain(mut e: ParseError, found: &[Expanded]) -> ParseError {
    if let Some(x) = found
        .iter()
        .find(|x| x.column == e.column || e.message.starts_with("duplicate parameter"))
    {
        let note = format!(
            "preset {} at column {} stands for '{}'; write its words out to change one",
            x.written, x.column, x.words
        );
        e.hint = Some(match e.hint {
            Some(h) => format!("{h}; {note}"),
            None => note,
        });
    }
    e
}

fn names_hint() -> String {
    let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
    format!(
        "presets: {} (`pipelab presets` lists them)",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves every preset's words parse as a pipe's, both sides.
    #[test]
    fn every_presets_words_are_the_language() {
        for p in PRESETS {
            for w in [p.up, p.down] {
                if let Err(e) = crate::parse_pipe_params(w) {
                    panic!("{}: '{w}': {e}", p.name);
                }
            }
        }
        let mut names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PRESETS.len(), "names are unique");
    }
}
