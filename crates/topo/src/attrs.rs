//! The attributes of a topology link as a GML edge or a TOML `[[link]]`
//! writes them: one reader for both formats, so a topology file says
//! everything a pipe can, in the command language's own words.
//!
//! A key is either
//!
//! * a **link attribute** of the topology: `bw` (`bandwidth`), `kbps`,
//!   `delay`, `loss` (`plr`), `queue`, read by [`LinkSet`] with the
//!   topology dialect ([`crate::linkset`]: a bare delay is ms, a loss is a
//!   probability `0.01` or a percentage `1%`). These feed routing and
//!   distillation as well as the pipes;
//! * a **pipe word** of the language (`pipe N config` and `--link`):
//!   `distribution`, `jitter-order`, `red`, `gred`, `codel`, `pie`,
//!   `duplicate`, `reorder`, `corrupt`, `ber`, `burst`, `ecn`, `noecn`,
//!   `noerror`, `accounting`, `overhead`, `wireless`, `profile`, `limit`,
//!   `rate`, `slot`, `seed`, `gap` (GML keys cannot hold `-`: write
//!   `jitter_order`), and the forms of `bw`, `delay`, `loss`
//!   and `plr` that only the language has (`bw "trace:FILE"`, `delay "20ms
//!   5ms 25%"`, `loss "gemodel 1% 10% 70% 0.1%"`, `plr "K,p,H,r"`). The
//!   value is the rest of the words (`codel "target 5ms interval 100ms"`,
//!   `codel ""` for the defaults); a flag (`ecn`, `noecn`, `noerror`) takes
//!   `1`/`true`/`yes` or `0`/`false`/`no`. The text `KEY VALUE` of every
//!   such key of a link is parsed in one go by the language's parser
//!   ([`pipelab_lang::parse_pipe_params`]), so a topology accepts exactly
//!   the language's words and values, with its messages, and refuses
//!   what it refuses (`codel` with `red`, a duplicated word);
//! * one of two spellings for convenience, each rewritten to a pipe word
//!   before that parse: `jitter "5ms [25%]"` (the language writes it after
//!   the delay, `delay 20ms 5ms 25%`) and `aqm "codel ..."` (the AQM's own
//!   word and its words);
//! * **metadata**, kept by the file and ignored here: any key that starts
//!   with a capital letter (Topology Zoo's `LinkLabel`, `LinkSpeed`,
//!   `LinkSpeedRaw`, `LinkType`, `LinkNote`, `Country`, `Latitude`,
//!   `Internal`, yEd's `LabelGraphics`) and the lower-case keys in
//!   [`METADATA_KEYS`] (`id`, `key`, `label`, `name`, `graphics`, ...) and
//!   those starting with `geocode_`;
//! * anything else: an error naming the key and its line, with the nearest
//!   known keys as a hint (`jiter`: did you mean jitter?).
//!
//! The words `mask` and `buckets` are refused: a topology link is one
//! static pipe per direction, never a dynamic pipe. Words that name a file
//! (`bw trace:`, `loss trace:`, `distribution file:`, `profile FILE`,
//! `timevarying`) are refused too, for now: a topology's pipes are built
//! from the topology alone.
//!
//! Once a link's values are known (its defaults filled in), the whole
//! pipe (the link attributes and the pipe words, as [`crate::lower()`] will
//! build it for each direction) is checked by the language's builder
//! ([`pipelab_lang::PipeSpec::check`]), so a link that would not lower is
//! refused when the file is read, naming the key that gave the word.

use pipelab_lang::{parse_pipe_params, PipeSpec};

use crate::linkset::{LinkAttr, LinkSet};
use crate::model::Link;

/// Lower-case keys that are metadata on a node or a link (besides every key
/// that starts with a capital letter, and `geocode_*`).
pub const METADATA_KEYS: &[&str] = &[
    "id",
    "key",
    "label",
    "name",
    "graphics",
    "comment",
    "description",
    "hyperedge",
    "weight",
];

/// The topology's own link attributes (beside `source`/`target` or `a`/`b`).
const LINK_KEYS: &[&str] = &[
    "bw",
    "bandwidth",
    "kbps",
    "delay",
    "loss",
    "plr",
    "queue",
    "jitter",
    "aqm",
    "pipe",
];

/// Pipe words of the language that a topology link takes as keys as they
/// are (the value is the rest of the words).
const PIPE_KEYS: &[&str] = &[
    "distribution",
    "jitter-order",
    "red",
    "gred",
    "codel",
    "pie",
    "duplicate",
    "reorder",
    "corrupt",
    "ber",
    "burst",
    "ecn",
    "noecn",
    "noerror",
    "accounting",
    "overhead",
    "wireless",
    "profile",
    "timevarying",
    "limit",
    "rate",
    "slot",
    "seed",
    "gap",
];

/// Flags: words that take no value in the language.
const FLAG_KEYS: &[&str] = &["ecn", "noecn", "noerror"];

/// True if `key` is metadata (see the module documentation).
pub fn is_metadata(key: &str) -> bool {
    key.starts_with(|c: char| c.is_ascii_uppercase())
        || METADATA_KEYS.contains(&key)
        || key.starts_with("geocode_")
}

/// One attribute as written: its key, its value as text (a number as
/// written, a string's contents, `true`/`false`), and its 1-based line
/// (0 if unknown).
#[derive(Clone, Debug, PartialEq)]
pub struct Written {
    /// The key as written.
    pub key: String,
    /// The value as text.
    pub value: String,
    /// The 1-based line of the key (0: unknown).
    pub line: usize,
}

/// Why an attribute is refused: its line (0: unknown), its key, and what
/// is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttrError {
    /// The 1-based line of the key (0: unknown).
    pub line: usize,
    /// The key as written.
    pub key: String,
    /// What is wrong, with the hint.
    pub message: String,
}

/// A link's attributes as read: the topology's own ([`LinkSet`]) and the
/// language's pipe words beyond them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkAttrsRead {
    /// `bw`, `delay`, `loss`, `queue`.
    pub set: LinkSet,
    /// Where each [`LinkSet`] attribute was written: (attribute, index in
    /// the attributes read, the word given to the unit layer).
    pub written: Vec<(LinkAttr, usize, String)>,
    /// The pipe words, parsed by the language (`bw`, `delay`, `queue`,
    /// `plr` left unset: the link's own values stand for them).
    pub words: PipeSpec,
    /// Which key (index) gave each pipe word's text, for errors found once
    /// the link is whole.
    pieces: Vec<(usize, &'static str)>,
}

/// Damerau-free edit distance (Levenshtein), for hints.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == cb {
                prev
            } else {
                1 + prev.min(row[j]).min(row[j + 1])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

/// The known keys nearest `key` (at most 2 edits, 1 for short keys), for
/// a hint.
fn near(key: &str, known: &[&str]) -> Vec<String> {
    let lower = key.to_ascii_lowercase();
    let limit = if lower.chars().count() <= 3 { 1 } else { 2 };
    let mut all: Vec<(usize, &str)> = known
        .iter()
        .chain(METADATA_KEYS)
        .map(|k| (distance(&lower, k), *k))
        .filter(|(d, _)| *d <= limit)
        .collect();
    all.sort();
    all.dedup();
    all.into_iter()
        .take(3)
        .map(|(_, k)| k.to_string())
        .collect()
}

/// The error for a key of a `what` (`node`, `link`) that is neither one of
/// its `known` keys nor metadata: the nearest keys as a hint, or the list.
pub fn unknown(key: &str, line: usize, what: &str, known: &[&str]) -> AttrError {
    let near = near(key, known);
    let hint = if near.is_empty() {
        format!(
            "{what} attributes: {}; metadata: keys starting with a capital letter, {}, geocode_*",
            known.join(", "),
            METADATA_KEYS.join(", ")
        )
    } else {
        format!("did you mean {}?", near.join(" or "))
    };
    AttrError {
        line,
        key: key.to_string(),
        message: format!("unknown {what} attribute '{key}' ({hint})"),
    }
}

/// Every key a link takes: its `ends` (`source`, `target` or `a`, `b`),
/// the topology's attributes and the pipe words.
pub fn link_keys(ends: &[&'static str]) -> Vec<&'static str> {
    ends.iter()
        .chain(LINK_KEYS)
        .chain(PIPE_KEYS)
        .copied()
        .collect()
}

/// True if `word` names one of netem's loss models (`random`, `state`,
/// `gemodel`, `trace:FILE`): a `loss` key's value is then the language's,
/// else a loss rate of the topology.
fn loss_model(word: &str) -> bool {
    let w = word.to_ascii_lowercase();
    matches!(w.as_str(), "random" | "state" | "gemodel") || w.starts_with("trace:")
}

/// The message of a language parse error, with its hint.
fn parse_message(e: &pipelab_lang::ParseError) -> String {
    match &e.hint {
        Some(h) => format!("{} ({h})", e.message),
        None => e.message.clone(),
    }
}

/// Reads the attributes of one link (`source`/`target` or `a`/`b` taken
/// out by the caller; metadata is skipped here). Errors name the key and
/// its line.
pub fn read_link(attrs: &[Written], ends: &[&'static str]) -> Result<LinkAttrsRead, AttrError> {
    let mut out = LinkAttrsRead::default();
    // The text for the language's parser, and which key gave each piece
    // (its index, its first column, 1-based, and the word it stands for).
    let mut text = String::new();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut push = |text: &mut String, i: usize, piece: &str| {
        if !text.is_empty() {
            text.push(' ');
        }
        spans.push((text.chars().count() + 1, i));
        text.push_str(piece);
    };
    let mut pieces: Vec<(usize, &'static str)> = Vec::new();
    for (i, a) in attrs.iter().enumerate() {
        let err = |message: String| AttrError {
            line: a.line,
            key: a.key.clone(),
            message,
        };
        let key = a.key.as_str();
        let value = a.value.trim();
        let first = value.split_whitespace().next().unwrap_or("");
        let rest = value[first.len()..].trim();
        // GML keys cannot hold `-`: `jitter_order` is `jitter-order`.
        let lower = key.to_ascii_lowercase().replace('_', "-");
        let set = |attr: LinkAttr, word: &str, out: &mut LinkAttrsRead| {
            out.set
                .set_word(attr, word)
                .map_err(|e| err(e.to_string()))?;
            out.written.retain(|w| w.0 != attr);
            out.written.push((attr, i, word.to_string()));
            Ok::<(), AttrError>(())
        };
        match lower.as_str() {
            "bw" | "bandwidth" if first.to_ascii_lowercase().starts_with("trace:") => {
                push(&mut text, i, &format!("bw {value}"));
                pieces.push((i, "bw"));
            }
            "bw" | "bandwidth" => set(LinkAttr::Bw, value, &mut out)?,
            "kbps" => {
                if !value.bytes().all(|b| b.is_ascii_digit() || b == b'.') || value.is_empty() {
                    return Err(err(
                        "expected a number of kbit/s (or use `bandwidth \"10Mbit/s\"`)".into(),
                    ));
                }
                set(LinkAttr::Bw, &format!("{value}Kbit/s"), &mut out)?;
            }
            "delay" => {
                // `5 ms`: a unit apart from its number is the unit layer's
                // error ("space in ..."), as everywhere else, not a jitter.
                let spaced_unit = rest
                    .split_whitespace()
                    .next()
                    .is_some_and(|w| w.starts_with(|c: char| c.is_ascii_alphabetic()));
                set(
                    LinkAttr::Delay,
                    if spaced_unit { value } else { first },
                    &mut out,
                )?;
                if !rest.is_empty() {
                    // The jitter after the delay, as the language writes it;
                    // the mean is the link's delay.
                    push(&mut text, i, &format!("delay 0 {rest}"));
                    pieces.push((i, "delay"));
                }
            }
            "jitter" => {
                push(&mut text, i, &format!("delay 0 {value}"));
                pieces.push((i, "delay"));
            }
            "loss" if !loss_model(first) => set(LinkAttr::Loss, value, &mut out)?,
            "plr" if !value.contains(',') => set(LinkAttr::Loss, value, &mut out)?,
            "loss" => {
                push(&mut text, i, &format!("loss {value}"));
                pieces.push((i, "loss"));
            }
            "plr" => {
                push(&mut text, i, &format!("plr {value}"));
                pieces.push((i, "plr"));
            }
            "queue" => set(LinkAttr::Queue, value, &mut out)?,
            "aqm" => {
                if !["red", "gred", "codel", "pie"].contains(&first.to_ascii_lowercase().as_str()) {
                    return Err(err(format!(
                        "unknown queue management '{first}' (red, gred, codel or pie, then its words: e.g. aqm \"codel target 5ms\")"
                    )));
                }
                push(&mut text, i, value);
                pieces.push((i, "aqm"));
            }
            "pipe" => {
                push(&mut text, i, value);
                pieces.push((i, "pipe"));
            }
            "mask" | "buckets" => {
                return Err(err(format!(
                    "'{key}' makes a dynamic pipe; a topology link is one pipe per direction"
                )))
            }
            k if FLAG_KEYS.contains(&k) => match value.to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "" => {
                    push(&mut text, i, k);
                    pieces.push((i, flag_name(k)));
                }
                "0" | "false" | "no" => {}
                _ => {
                    return Err(err(format!(
                        "'{key}' is a flag: 1 (or true, yes) or 0 (or false, no)"
                    )))
                }
            },
            k if PIPE_KEYS.contains(&k) => {
                push(&mut text, i, &format!("{k} {value}"));
                pieces.push((i, pipe_key(k)));
            }
            _ if is_metadata(key) => {}
            _ => return Err(unknown(key, a.line, "link", &link_keys(ends))),
        }
    }
    if !text.is_empty() {
        let spec = parse_pipe_params(&text).map_err(|e| {
            // The key whose piece holds the error's column (a missing word
            // is reported just after the end: the last piece).
            let col = e.column as usize;
            let i = spans
                .iter()
                .rev()
                .find(|(start, _)| *start <= col)
                .map_or(0, |s| s.1);
            AttrError {
                line: attrs[i].line,
                key: attrs[i].key.clone(),
                message: parse_message(&e),
            }
        })?;
        let mut spec = spec;
        // Only a `pipe` key can set these (every other key's text is
        // built above): they are the link's own keys.
        let own = spec.bw.is_some()
            || spec.queue.is_some()
            || spec.plr.is_some()
            || spec
                .delay
                .is_some_and(|d| d > pipelab_engine::Duration::ZERO);
        let dynamic = spec.mask.is_some() || spec.buckets.is_some();
        if let (true, Some(&(i, _))) = (own || dynamic, pieces.iter().find(|p| p.1 == "pipe")) {
            return Err(AttrError {
                line: attrs[i].line,
                key: attrs[i].key.clone(),
                message: if own {
                    "bw, delay, queue and plr are the link's own attributes: give them as keys (a jitter as jitter \"5ms\")".into()
                } else {
                    "'mask' and 'buckets' make a dynamic pipe; a topology link is one pipe per direction".into()
                },
            });
        }
        // The link's delay is the mean; `delay 0` only carried the jitter.
        spec.delay = None;
        if !spec.files().is_empty() {
            let (param, path) = spec.files()[0];
            let i = pieces
                .iter()
                .find(|p| p.1 == param)
                .map_or(pieces[0].0, |p| p.0);
            return Err(AttrError {
                line: attrs[i].line,
                key: attrs[i].key.clone(),
                message: format!(
                    "'{path}' names a file: files are not read for topology links yet (give the values in the topology)"
                ),
            });
        }
        out.words = spec;
    }
    out.pieces = pieces;
    Ok(out)
}

fn flag_name(k: &str) -> &'static str {
    match k {
        "ecn" => "ecn",
        "noecn" => "noecn",
        _ => "noerror",
    }
}

fn pipe_key(k: &str) -> &'static str {
    PIPE_KEYS.iter().find(|p| **p == k).copied().unwrap_or("")
}

impl LinkAttrsRead {
    /// Checks the whole pipe `link` lowers to (its values and its pipe
    /// words) with the language's builder; an error names the key that
    /// wrote the refused word (`None` if no key of `attrs` did: a default).
    pub fn check(&self, link: &Link, attrs: &[Written]) -> Result<(), (Option<usize>, String)> {
        let spec = crate::lower::pipe_spec(link.bw, link.delay, link.loss, link.queue, &link.words);
        spec.check().map_err(|e| {
            let param = e.param;
            let by_set = self
                .written
                .iter()
                .find(|w| w.0.name() == param || (param == "plr" && w.0 == LinkAttr::Loss))
                .map(|w| w.1);
            let by_word = self
                .pieces
                .iter()
                .find(|p| {
                    p.1 == param
                        || (p.1 == "aqm" && ["red", "gred", "codel", "pie"].contains(&param))
                        || (param == "plr" && p.1 == "loss")
                })
                .map(|p| p.0);
            let by_pipe = self.pieces.iter().find(|p| p.1 == "pipe").map(|p| p.0);
            let i = by_word
                .or(by_set)
                .or(by_pipe)
                .or_else(|| self.pieces.first().map(|p| p.0));
            let key = i
                .and_then(|i| attrs.get(i))
                .map_or(param, |a| a.key.as_str());
            (i, format!("invalid {key}: {}", e.reason))
        })
    }
}

/// A link's pipe words as written back to a file: the jitter (`5ms 25%`)
/// and the other words (`distribution normal loss gemodel 1% 10%`), each
/// `None` if empty. [`read_link`] reads them back equal, as `jitter` and
/// `pipe`.
pub fn written_words(words: &PipeSpec) -> (Option<String>, Option<String>) {
    let jitter = words.jitter.map(|j| {
        let mut one = PipeSpec::default();
        one.delay = Some(pipelab_engine::Duration::ZERO);
        one.jitter = Some(j);
        // `delay 0ns SIGMA [CORR]`: the words after the mean.
        let text = one.to_string();
        text.split_whitespace()
            .skip(2)
            .collect::<Vec<_>>()
            .join(" ")
    });
    let mut rest = words.clone();
    rest.jitter = None;
    rest.delay = None;
    let rest = (rest != PipeSpec::default()).then(|| rest.to_string());
    (jitter, rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gml::parse_gml;
    use crate::native::parse_toml;
    use pipelab_engine::{Duration, QueueLimit, Rate};
    use pipelab_lang::{AqmSpec, DistSpec, LossSpec};

    /// A GML topology of two VNs and one edge with `attrs`.
    fn gml(attrs: &str) -> String {
        format!(
            "graph [\n  node [ id 0 role \"client\" ]\n  node [ id 1 role \"client\" ]\n  edge [ source 0 target 1\n    {attrs} ]\n]\n"
        )
    }

    /// A TOML topology of two VNs and one link with `attrs` (one per line).
    fn toml(attrs: &str) -> String {
        format!("[[node]]\nid = 0\nrole = \"client\"\n[[node]]\nid = 1\nrole = \"client\"\n[[link]]\na = 0\nb = 1\n{attrs}\n")
    }

    /// The words the language's parser gives `text`, without the delay's
    /// mean (a link's delay stands for it).
    fn language(text: &str) -> PipeSpec {
        let mut spec = parse_pipe_params(text).expect(text);
        spec.delay = None;
        spec
    }

    #[test]
    fn distance_counts_edits() {
        assert_eq!(distance("jiter", "jitter"), 1);
        assert_eq!(distance("codle", "codel"), 2);
        assert_eq!(distance("", "bw"), 2);
    }

    /// A pass proves the issue's example edge reads as the language reads
    /// its words, keeps bw, delay and queue as the link's values, and
    /// lowers to an engine pipe (jitter, distribution, Gilbert-Elliott
    /// loss, CoDel with ECN).
    #[test]
    fn the_issue_example_reads_every_word() {
        let t = parse_gml(&gml(
            r#"bandwidth "10Mbit/s" delay "20ms" jitter "5ms" distribution "normal" loss "gemodel 1% 10% 70% 0.1%" aqm "codel" ecn 1"#,
        ))
        .expect("parses");
        let l = &t.links[0];
        assert_eq!(l.bw, Rate::from_bps(10_000_000));
        assert_eq!(l.delay, Duration::from_millis(20));
        assert_eq!(l.loss, 0.0);
        assert_eq!(l.queue, QueueLimit::default());
        assert_eq!(
            l.words.jitter.map(|j| j.sigma),
            Some(Duration::from_millis(5))
        );
        assert_eq!(l.words.distribution, Some(DistSpec::Normal));
        assert!(
            matches!(l.words.loss, Some(LossSpec::Gemodel(_))),
            "{:?}",
            l.words.loss
        );
        assert!(
            matches!(l.words.aqm, Some(AqmSpec::Codel { .. })),
            "{:?}",
            l.words.aqm
        );
        assert!(l.words.ecn);
        assert_eq!(
            l.words,
            language("delay 0 5ms distribution normal loss gemodel 1% 10% 70% 0.1% codel ecn")
        );
        let d = crate::distill::distill(&t, crate::distill::Mode::HopByHop).expect("distils");
        for p in &d.pipes {
            let cfg = crate::lower::pipe_config(p).expect("lowers");
            assert_eq!(cfg.bw(), Rate::from_bps(10_000_000));
            assert!(
                cfg.min_delay() < Duration::from_millis(20),
                "jitter lowers the least delay"
            );
        }
    }

    /// Every family of pipe words, as a GML key and as a TOML key, gives
    /// exactly the words the language's parser gives (`KEY VALUE` written
    /// in a `pipe N config` line), and the link still lowers. A pass
    /// proves a topology takes each family and reads it as the language.
    #[test]
    fn every_family_reads_as_the_language() {
        let cases: &[(&str, &str, &str)] = &[
            // (key, value, the language's words)
            ("delay", "20ms 5ms 25%", "delay 0 5ms 25%"),
            ("jitter", "5ms", "delay 0 5ms"),
            ("distribution", "pareto", "delay 0 1ms distribution pareto"),
            ("jitter-order", "keep", "jitter-order keep"),
            ("loss", "random 2%", "loss random 2%"),
            (
                "loss",
                "state 1% 10% 70% 0.1%",
                "loss state 1% 10% 70% 0.1%",
            ),
            ("loss", "gemodel 1% 10%", "loss gemodel 1% 10%"),
            ("plr", "0.001,0.01,0.5,0.3", "plr 0.001,0.01,0.5,0.3"),
            ("red", "0.002/5/15/0.1", "red 0.002/5/15/0.1"),
            ("gred", "0.002/5/15/0.1", "gred 0.002/5/15/0.1"),
            (
                "codel",
                "target 5ms interval 100ms",
                "codel target 5ms interval 100ms",
            ),
            ("pie", "target 15ms", "pie target 15ms"),
            ("aqm", "pie target 15ms", "pie target 15ms"),
            ("duplicate", "1% 25%", "duplicate 1% 25%"),
            ("reorder", "25% 50%", "reorder 25% 50%"),
            ("corrupt", "0.1%", "corrupt 0.1%"),
            ("ber", "1e-6", "ber 1e-6"),
            ("burst", "64KB", "burst 64KB"),
            ("ecn", "true", "ecn"),
            ("noerror", "1", "noerror"),
            ("accounting", "l2", "accounting l2"),
            ("overhead", "10 cellsize 48", "overhead 10 cellsize 48"),
            (
                "wireless",
                "802.11b rate 11Mbit/s snr 20dB",
                "wireless 802.11b rate 11Mbit/s snr 20dB",
            ),
            ("profile", "802.11b-11", "profile 802.11b-11"),
            ("limit", "1000", "limit 1000"),
            ("slot", "800us 1ms packets 32", "slot 800us 1ms packets 32"),
            ("seed", "42", "seed 42"),
            ("gap", "5", "gap 5"),
            (
                "pipe",
                "duplicate 1% corrupt 0.1%",
                "duplicate 1% corrupt 0.1%",
            ),
        ];
        for (key, value, words) in cases {
            // A distribution needs a jitter to shape.
            let extra = if *key == "distribution" {
                "jitter \"1ms\" "
            } else {
                ""
            };
            let delay = if *key == "delay" { "" } else { "delay 20 " };
            let gkey = key.replace('-', "_");
            let g = parse_gml(&gml(&format!("{delay}{extra}{gkey} \"{value}\"")))
                .unwrap_or_else(|e| panic!("GML {key} {value}: {e}"));
            assert_eq!(g.links[0].words, language(words), "GML {key} {value}");
            assert_eq!(g.links[0].delay, Duration::from_millis(20), "GML {key}");
            let extra = if *key == "distribution" {
                "jitter = \"1ms\"\n"
            } else {
                ""
            };
            let delay = if *key == "delay" { "" } else { "delay = 20\n" };
            let t = parse_toml(&toml(&format!("{delay}{extra}{key} = \"{value}\"")))
                .unwrap_or_else(|e| panic!("TOML {key} {value}: {e}"));
            assert_eq!(t.links[0].words, language(words), "TOML {key} {value}");
            let d = crate::distill::distill(&g, crate::distill::Mode::HopByHop).expect("distils");
            crate::lower::pipe_config(&d.pipes[0]).unwrap_or_else(|e| panic!("{key}: {e}"));
        }
        // netem's rate replaces the bandwidth: a link without `bw`.
        let g = parse_gml(&gml(r#"rate "10mbit" delay 5"#)).expect("rate");
        assert_eq!(g.links[0].words, language("rate 10mbit"));
        // A bare number and a boolean are values too.
        let t = parse_toml(&toml("ecn = true\nseed = 7\nnoecn = false")).expect("flags");
        assert_eq!(t.links[0].words, language("ecn seed 7"));
    }

    /// A pass proves unknown keys are refused naming their line and key,
    /// with near spellings; metadata (capitalised keys, `id`, `label`,
    /// `graphics` lists) is accepted; the language's refusals (two AQMs,
    /// a dynamic pipe, a value it refuses) are errors of the key that
    /// wrote them; a whole-pipe refusal (a jitter larger than what the
    /// delay allows is not one, but `rate` with `bw` is) names its key.
    #[test]
    fn refusals_name_line_and_key() {
        let cases: &[(&str, usize, &str, &str)] = &[
            (
                "delay 5\n jiter \"5ms\"",
                6,
                "jiter",
                "did you mean jitter?",
            ),
            (
                "colour \"red\"",
                5,
                "colour",
                "unknown link attribute 'colour'",
            ),
            (
                "codel \"\"\n red \"0.002/5/15/0.1\"",
                6,
                "red",
                "cannot be combined with 'codel'",
            ),
            ("mask \"src-ip 0xffffffff\"", 5, "mask", "dynamic pipe"),
            ("pipe \"buckets 4\"", 5, "pipe", "dynamic pipe"),
            ("loss \"gemodle 1%\"", 5, "loss", "gemodle"),
            ("delay 5\n\n jitter \"5 parsecs\"", 7, "jitter", "parsecs"),
            ("loss \"trace:drops.txt\"", 5, "loss", "names a file"),
            (
                "bw \"10Mbit/s\"\n rate \"5mbit\"",
                6,
                "rate",
                "'rate' and 'bw'",
            ),
            ("ecn \"maybe\"", 5, "ecn", "a flag"),
            ("pipe \"delay 5ms\"", 5, "pipe", "the link's own attributes"),
            ("distribution \"normal\"", 5, "distribution", "needs"),
        ];
        for (attrs, line, key, says) in cases {
            let e = parse_gml(&gml(attrs)).expect_err(attrs);
            assert_eq!((e.line, e.field.as_str()), (*line, *key), "{attrs}: {e}");
            assert!(e.message.contains(says), "{attrs}: {e}");
        }
        let e = parse_gml("graph [\n node [ id 0\n rol \"client\" ]\n]").expect_err("node key");
        assert_eq!((e.line, e.field.as_str()), (3, "rol"), "{e}");
        assert!(e.message.contains("did you mean role?"), "{e}");
        let e = parse_toml(&toml("delay = 5\njiter = \"5ms\"")).expect_err("toml");
        let e = e.to_string();
        assert!(
            e.starts_with("line 11: link 1 (between 0 and 1): field `jiter`"),
            "{e}"
        );
        assert!(e.contains("did you mean jitter?"), "{e}");
        // Metadata stays accepted (Topology Zoo, yEd, networkx).
        let t = parse_gml(
            "graph [\n node [ id 0 label \"a\" Country \"NL\" Latitude 52.3 hyperedge 1 geocode_id \"x\" graphics [ x 1 y 2 ] ]\n node [ id 1 ]\n edge [ source 0 target 1 id 7 key 0 LinkLabel \"OC-48\" LinkSpeed \"2.5\" LinkSpeedUnits \"G\" LinkSpeedRaw 2500000000.0 LinkType \"fibre\" LinkNote \"\" weight 3 graphics [ width 2 ] LabelGraphics [ text \"l\" ] ]\n]",
        )
        .expect("metadata");
        assert_eq!(t.links[0].words, PipeSpec::default());
        let t = parse_toml(&toml("LinkLabel = \"x\"\nlabel = \"y\"")).expect("toml metadata");
        assert_eq!(t.links[0].words, PipeSpec::default());
    }

    /// A pass proves a link's words survive `to_gml` and `to_toml` and
    /// read back equal.
    #[test]
    fn words_round_trip_through_both_formats() {
        let t = parse_gml(&gml(
            r#"bw "10Mbit/s" delay "20ms 5ms 25%" distribution "normal" loss "gemodel 1% 10% 70% 0.1%" codel "target 5ms" ecn 1 duplicate "1%" limit 500"#,
        ))
        .expect("parses");
        let back = parse_gml(&crate::gml::to_gml(&t)).expect("GML reads back");
        assert_eq!(back, t);
        let toml = crate::native::to_toml(&t).expect("writes");
        let back = parse_toml(&toml).expect("TOML reads back");
        assert_eq!(back, t);
    }

    /// A pass proves a collapsed path takes the words of its one link
    /// that has any, and two such links on one path are refused.
    #[test]
    fn collapsed_paths_keep_one_links_words() {
        let text = |second: &str| {
            format!(
                "graph [\n node [ id 0 role \"client\" ]\n node [ id 1 ]\n node [ id 2 role \"client\" ]\n edge [ source 0 target 1 delay 5 duplicate \"1%\" ]\n edge [ source 1 target 2 delay 5 {second} ]\n]"
            )
        };
        let t = parse_gml(&text("")).expect("parses");
        let d = crate::distill::distill(&t, crate::distill::Mode::EndToEnd).expect("distils");
        assert!(d.pipes.iter().all(|p| p.words == language("duplicate 1%")));
        let t = parse_gml(&text("corrupt \"1%\"")).expect("parses");
        let e = crate::distill::distill(&t, crate::distill::Mode::EndToEnd).expect_err("two");
        assert!(e.to_string().contains("both have pipe words"), "{e}");
        crate::distill::distill(&t, crate::distill::Mode::HopByHop).expect("hop by hop");
    }
}
