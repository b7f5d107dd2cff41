//! The attributes of a topology link, as a GML edge, a TOML `[[link]]`,
//! a `link A B set ...` command or a `topo gen` link class writes them:
//! one reader for all of them ([`read_link`]) and one builder
//! ([`build_link`]), so a topology says everything a pipe can, in the
//! command language's own words, and refuses the same things everywhere.
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
//!   `noerror`, `accounting`, `overhead`, `wireless`, `profile`,
//!   `timevarying`, `timeline`, `limit`, `rate`, `slot`, `seed`, `gap` (GML keys
//!   cannot hold `-`: write `jitter_order`), and the forms of `bw`,
//!   `delay`, `loss` and `plr` that only the language has (`bw
//!   "trace:FILE"`, `delay "trace:FILE"`, `delay "20ms 5ms 25%"`, `loss "gemodel 1% 10% 70%
//!   0.1%"`, `plr "K,p,H,r"`). The value is the rest of the words (`codel
//!   "target 5ms interval 100ms"`, `codel ""` for the defaults); a flag
//!   (`ecn`, `noecn`, `noerror`) takes `1`/`true`/`yes` or
//!   `0`/`false`/`no`. The text `KEY VALUE` of every such key of a link
//!   is parsed in one go by the language's parser
//!   ([`pipelab_lang::parse_pipe_params`]), so a topology accepts exactly
//!   the language's words and values, with its messages, and refuses what
//!   it refuses (`codel` with `red`, a duplicated word);
//! * one of three spellings for convenience, each rewritten to pipe words
//!   before that parse: `jitter "5ms [25%]"` (the language writes it after
//!   the delay, `delay 20ms 5ms 25%`), `aqm "codel ..."` (the AQM's own
//!   word and its words) and `pipe "..."` (any pipe words as the language
//!   writes them);
//! * **metadata**, kept by the file and ignored here: any key that starts
//!   with a capital letter (Topology Zoo's `LinkLabel`, `LinkSpeed`,
//!   `LinkSpeedRaw`, `LinkType`, `LinkNote`, `Country`, `Latitude`,
//!   `Internal`, yEd's `LabelGraphics`) and the lower-case keys in
//!   [`METADATA_KEYS`] (`id`, `key`, `label`, `name`, `graphics`, ...) and
//!   those starting with `geocode_`;
//! * anything else: an error naming the key and its line, with the nearest
//!   known keys as a hint (`jiter`: did you mean jitter?).
//!
//! A command writes the same keys as words (`link A B set bw 10Mbit/s
//! delay 20ms 5ms codel target 5ms ecn`): a link attribute's value runs to
//! the next key, a pipe word's to the next link attribute
//! ([`command_attrs`]), and the pairs are read as a file's.
//!
//! What a topology link cannot be is refused in one place
//! ([`REFUSED`]): a dynamic pipe (`mask`, `buckets`: a topology link is
//! one static pipe per direction), the link's own attributes given as
//! language words under `pipe` (they are keys of their own), and a queue
//! kept on disk (`spill`: live topologies have no spill directories).
//!
//! **Files.** The words that name a file (`bw trace:FILE`, `loss
//! trace:FILE`, `distribution file:FILE` or a `.dist` table's path, a tc
//! table by name, `profile FILE`, `timevarying FILE`, `delay trace:FILE`,
//! `timeline FILE`) are read when the
//! link is built, through the caller's loader ([`FileReader`]: the CLI
//! reads relative paths from the topology file's directory with
//! [`pipelab_lang::files::read_named_file`]), and kept in the topology
//! ([`FileTexts`]): lowering reads no file. A file that cannot be read or
//! parsed is an error of the key that named it, on its line.
//!
//! Once a link's values are known (its defaults filled in), the whole
//! pipe (the link attributes and the pipe words, as [`crate::lower()`]
//! will build it for each direction) is built by the language's builder
//! ([`pipelab_lang::PipeSpec::to_config_with`]), so a link that would not
//! lower is refused when the file is read, naming the key that gave the
//! word.

use pipelab_lang::{parse_pipe_params, PipeSpec};

use crate::linkset::{LinkAttr, LinkSet};
use crate::model::{FileTexts, Link};

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

/// The topology's own link attributes and spellings (beside
/// `source`/`target` or `a`/`b`): in a command, each ends the words of a
/// pipe word before it.
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
    "timeline",
    "limit",
    "rate",
    "slot",
    "seed",
    "gap",
];

/// Flags: words that take no value in the language.
const FLAG_KEYS: &[&str] = &["ecn", "noecn", "noerror"];

/// What a topology link refuses, in one table: (language word, why). A
/// key of that name is refused as it is read; a word of that name in a
/// `pipe` key's words once they are parsed.
pub const REFUSED: &[(&str, &str)] = &[
    (
        "mask",
        "makes a dynamic pipe; a topology link is one pipe per direction",
    ),
    (
        "buckets",
        "makes a dynamic pipe; a topology link is one pipe per direction",
    ),
    (
        "bw",
        "is the link's own attribute: give it as a key (bw \"10Mbit/s\")",
    ),
    (
        "delay",
        "is the link's own attribute: give it as a key (delay \"20ms\"; a jitter as jitter \"5ms\")",
    ),
    (
        "queue",
        "is the link's own attribute: give it as a key (queue 50)",
    ),
    (
        "plr",
        "is the link's own attribute: give it as the key loss (loss 0.01)",
    ),
    (
        "spill",
        "keeps a queue on disk, which a topology does not (pipelab shell and bridge do, with --spill-dir)",
    ),
];

/// The first word of [`REFUSED`] that `spec` (a `pipe` key's words) holds.
fn refused_word(spec: &PipeSpec) -> Option<(&'static str, &'static str)> {
    let has = |w: &str| match w {
        "mask" => spec.mask.is_some(),
        "buckets" => spec.buckets.is_some(),
        "bw" => spec.bw.is_some(),
        // `delay 0` carries a jitter alone.
        "delay" => spec
            .delay
            .is_some_and(|d| d > pipelab_engine::Duration::ZERO),
        "queue" => spec.queue.is_some(),
        "plr" => spec.plr.is_some(),
        "spill" => spec.spill,
        _ => false,
    };
    REFUSED.iter().find(|(w, _)| has(w)).copied()
}

/// True if `key` is metadata (see the module documentation).
pub fn is_metadata(key: &str) -> bool {
    key.starts_with(|c: char| c.is_ascii_uppercase())
        || METADATA_KEYS.contains(&key)
        || key.starts_with("geocode_")
}

/// One attribute as written: its key, its value as text (a number as
/// written, a string's contents, `true`/`false`, a command's words), and
/// where: its 1-based line (0 if unknown) and, in a command, the 1-based
/// columns of the key and of the value (0 in a file).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Written {
    /// The key as written.
    pub key: String,
    /// The value as text.
    pub value: String,
    /// The 1-based line of the key (0: unknown).
    pub line: usize,
    /// The 1-based column of the key in a command (0: a file).
    pub column: usize,
    /// The 1-based column of the value in a command (0: a file).
    pub value_column: usize,
}

impl Written {
    /// A key and its value on `line` of a file.
    pub fn new(key: impl Into<String>, value: impl Into<String>, line: usize) -> Written {
        Written {
            key: key.into(),
            value: value.into(),
            line,
            ..Written::default()
        }
    }

    /// The column in a command of `part`, a slice of the value (0 in a
    /// file).
    fn column_at(&self, part: &str) -> usize {
        let off = (part.as_ptr() as usize).wrapping_sub(self.value.as_ptr() as usize);
        match self.value.get(..off) {
            Some(before) if self.value_column > 0 && off <= self.value.len() => {
                self.value_column + before.chars().count()
            }
            _ => 0,
        }
    }

    /// The column of `word` in a command: where the value holds it, else
    /// the key's (0 in a file).
    fn column_of(&self, word: &str) -> usize {
        match self.value.find(word) {
            Some(at) if !word.is_empty() && self.value_column > 0 => {
                self.value_column + self.value[..at].chars().count()
            }
            _ => self.column,
        }
    }
}

/// Why an attribute is refused: its line (0: unknown), column (0: a
/// file), key, the word at fault, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttrError {
    /// The 1-based line of the key (0: unknown).
    pub line: usize,
    /// The 1-based column of the word at fault in a command (0: a file).
    pub column: usize,
    /// The key as written.
    pub key: String,
    /// The word at fault (the key if none better).
    pub word: String,
    /// What is wrong, with the hint.
    pub message: String,
}

impl AttrError {
    fn of(a: &Written, word: &str, message: String) -> AttrError {
        AttrError {
            line: a.line,
            column: a.column_of(word),
            key: a.key.clone(),
            word: if word.is_empty() {
                a.key.clone()
            } else {
                word.to_string()
            },
            message,
        }
    }
}

/// A link's attributes as read: the topology's own and the language's
/// pipe words beyond them ([`LinkSet`]), and which key gave each.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkAttrsRead {
    /// `bw`, `delay`, `loss`, `queue` and the pipe words (`bw`, `delay`,
    /// `queue`, `plr` unset in the words: the link's own values stand for
    /// them).
    pub set: LinkSet,
    /// Where each [`LinkSet`] attribute was written: (attribute, index in
    /// the attributes read, the word given to the unit layer).
    pub written: Vec<(LinkAttr, usize, String)>,
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
        column: 0,
        key: key.to_string(),
        word: key.to_string(),
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

/// The key/value pairs of a command's link attributes, from the words
/// after `set` (each `(column, word)`, the words as the lexer split them,
/// commas included, on line `line`): a link attribute (`bw`, `delay`,
/// ... `pipe`: the topology's attributes) takes the words up to the next key of
/// either kind, a pipe word (`codel target 5ms`) the words up to the next
/// link attribute, as one `pipe` value. `key=value` is `key value`. A
/// first word that is no key is an unknown attribute.
pub fn command_attrs(words: &[(usize, &str)], line: usize) -> Result<Vec<Written>, AttrError> {
    let lower = |w: &str| w.to_ascii_lowercase().replace('_', "-");
    let mut out: Vec<Written> = Vec::new();
    // True while the last pair is a pipe word's (it runs to a link key).
    let mut piping = false;
    let add = |out: &mut Vec<Written>, col: usize, text: &str| {
        if let Some(last) = out.last_mut() {
            if last.value.is_empty() {
                last.value_column = col;
            } else {
                // Keep the words' spacing, so that a column inside the
                // value is the column in the command.
                let end = last.value_column + last.value.chars().count();
                last.value
                    .push_str(&" ".repeat(col.saturating_sub(end).max(1)));
            }
            last.value.push_str(text);
        }
    };
    for (n, &(col, word)) in words.iter().enumerate() {
        // A comma between words is white space (`bw=1Mbit/s, delay=5ms`),
        // one inside a word part of it (`plr 0.001,0.01,0.5,0.3`).
        if word == "," && words.get(n + 1).is_none_or(|&(next, _)| next != col + 1) {
            continue;
        }
        let (key, inline) = match word.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (word, None),
        };
        let k = lower(key);
        let own = LINK_KEYS.contains(&k.as_str());
        let pipe = PIPE_KEYS.contains(&k.as_str()) || REFUSED.iter().any(|r| r.0 == k);
        if own || (pipe && !piping) {
            piping = !own;
            out.push(Written {
                key: if own { key.to_string() } else { "pipe".into() },
                value: String::new(),
                line,
                column: col,
                value_column: 0,
            });
            if !own {
                add(&mut out, col, key);
            }
            if let Some(v) = inline.filter(|v| !v.is_empty()) {
                add(&mut out, col + key.chars().count() + 1, v);
            }
        } else if out.is_empty() {
            let mut e = unknown(key, line, "link", &link_keys(&[]));
            e.column = col;
            return Err(e);
        } else if let (true, Some(v)) = (pipe, inline) {
            add(&mut out, col, key);
            add(&mut out, col + key.chars().count() + 1, v);
        } else {
            add(&mut out, col, word);
        }
    }
    Ok(out)
}

/// Reads the attributes of one link (`source`/`target` or `a`/`b` taken
/// out by the caller; metadata is skipped here); `ranges`: `bw`, `delay`
/// and `loss` may be ranges `LO..HI` (an `every` line). Errors name the
/// key, its line and, in a command, the column.
pub fn read_link(
    attrs: &[Written],
    ends: &[&'static str],
    ranges: bool,
) -> Result<LinkAttrsRead, AttrError> {
    let mut out = LinkAttrsRead::default();
    // The text for the language's parser, and which key gave each piece
    // (its first column, 1-based, and the key's index).
    let mut text = String::new();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    // A piece is a word (`prefix`) and the words of the key (`body`); in
    // a command, the body is placed at its own column (`col`, when there
    // is room), so a column the parser names is the command's.
    let mut push = |text: &mut String, i: usize, prefix: &str, body: &str, col: usize| {
        if !text.is_empty() {
            text.push(' ');
        }
        spans.push((text.chars().count() + 1, i));
        text.push_str(prefix);
        if !prefix.is_empty() && !body.is_empty() {
            text.push(' ');
        }
        let now = text.chars().count();
        if col > now + 1 {
            text.push_str(&" ".repeat(col - now - 1));
        }
        text.push_str(body);
    };
    let mut pieces: Vec<(usize, &'static str)> = Vec::new();
    for (i, a) in attrs.iter().enumerate() {
        let err = |word: &str, message: String| AttrError::of(a, word, message);
        let key = a.key.as_str();
        let value = a.value.trim();
        let first = value.split_whitespace().next().unwrap_or("");
        let rest = value[first.len()..].trim();
        // GML keys cannot hold `-`: `jitter_order` is `jitter-order`.
        let lower = key.to_ascii_lowercase().replace('_', "-");
        let known = LINK_KEYS.contains(&lower.as_str()) || PIPE_KEYS.contains(&lower.as_str());
        if value.is_empty()
            && known
            && !FLAG_KEYS.contains(&lower.as_str())
            && !matches!(lower.as_str(), "codel" | "pie" | "pipe")
        {
            let example = LinkAttr::from_key(&lower).map_or("", |a| a.example());
            let mut e = err(
                "",
                format!(
                    "missing value after '{key}'{}",
                    if example.is_empty() {
                        String::new()
                    } else {
                        format!(": {example}")
                    }
                ),
            );
            if a.column > 0 {
                // Where the value goes, just after the key.
                e.column = a.column + key.chars().count();
            }
            return Err(e);
        }
        let set = |attr: LinkAttr, word: &str, out: &mut LinkAttrsRead| {
            if let Some(w) = out.written.iter().find(|w| w.0 == attr) {
                let before = &attrs[w.1];
                let at = match (before.line, before.column) {
                    (_, c) if c > 0 => format!("column {c}"),
                    (0, _) => "before".into(),
                    (l, _) => format!("line {l}"),
                };
                return Err(err(
                    "",
                    format!("duplicate attribute '{key}': '{attr}' was already given at {at}"),
                ));
            }
            match word.split_once("..") {
                Some((lo, hi)) if ranges => out.set.set_range(attr, lo, hi).map_err(|(at_hi, e)| {
                    err(if at_hi { hi } else { lo }, e.to_string())
                })?,
                Some(_) if a.column > 0 => {
                    return Err(err(
                        word,
                        format!("a range '{word}' is only for `every` lines: e.g. every 2s until 30s link A B set delay 5ms..50ms"),
                    ))
                }
                _ => out
                    .set
                    .set_word(attr, word)
                    .map_err(|e| err(word, e.to_string()))?,
            }
            out.written.push((attr, i, word.to_string()));
            Ok::<(), AttrError>(())
        };
        match lower.as_str() {
            "bw" | "bandwidth" if first.to_ascii_lowercase().starts_with("trace:") => {
                push(&mut text, i, "bw", value, a.column_at(value));
                pieces.push((i, "bw"));
            }
            "bw" | "bandwidth" => set(LinkAttr::Bw, value, &mut out)?,
            "delay" if first.to_ascii_lowercase().starts_with("trace:") => {
                push(&mut text, i, "delay", value, a.column_at(value));
                pieces.push((i, "delay"));
            }
            "kbps" => {
                if !value.bytes().all(|b| b.is_ascii_digit() || b == b'.') || value.is_empty() {
                    return Err(err(
                        value,
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
                if !rest.is_empty() && !spaced_unit {
                    // The jitter after the delay, as the language writes it;
                    // the mean is the link's delay.
                    push(&mut text, i, "delay 0", rest, a.column_at(rest));
                    pieces.push((i, "delay"));
                }
            }
            "jitter" => {
                push(&mut text, i, "delay 0", value, a.column_at(value));
                pieces.push((i, "delay"));
            }
            "loss" if !loss_model(first) && !rest.is_empty() && first.starts_with(|c: char| c.is_ascii_alphabetic()) => {
                return Err(err(
                    first,
                    format!("unknown loss model '{first}' (random, state, gemodel or trace:FILE, then its words; or a loss rate, e.g. loss 0.01)"),
                ))
            }
            "loss" if !loss_model(first) => set(LinkAttr::Loss, value, &mut out)?,
            "plr" if !value.contains(',') => set(LinkAttr::Loss, value, &mut out)?,
            "loss" => {
                push(&mut text, i, "loss", value, a.column_at(value));
                pieces.push((i, "loss"));
            }
            "plr" => {
                push(&mut text, i, "plr", value, a.column_at(value));
                pieces.push((i, "plr"));
            }
            "queue" => set(LinkAttr::Queue, value, &mut out)?,
            "aqm" => {
                if !["red", "gred", "codel", "pie"].contains(&first.to_ascii_lowercase().as_str()) {
                    return Err(err(first, format!(
                        "unknown queue management '{first}' (red, gred, codel or pie, then its words: e.g. aqm \"codel target 5ms\")"
                    )));
                }
                push(&mut text, i, "", value, a.column_at(value));
                pieces.push((i, "aqm"));
            }
            "pipe" => {
                push(&mut text, i, "", value, a.column_at(value));
                pieces.push((i, "pipe"));
            }
            k if FLAG_KEYS.contains(&k) => match value.to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "" => {
                    push(&mut text, i, k, "", 0);
                    pieces.push((i, pipe_key(k)));
                }
                "0" | "false" | "no" => {}
                _ => {
                    return Err(err(
                        value,
                        format!("'{key}' is a flag: 1 (or true, yes) or 0 (or false, no)"),
                    ))
                }
            },
            k if PIPE_KEYS.contains(&k) || REFUSED.iter().any(|r| r.0 == k) => {
                push(&mut text, i, k, value, a.column_at(value));
                pieces.push((i, pipe_key(k)));
            }
            _ if is_metadata(key) => {}
            _ => {
                let mut e = unknown(key, a.line, "link", &link_keys(ends));
                e.column = a.column;
                return Err(e);
            }
        }
    }
    if !text.is_empty() {
        // The language checks a distribution against the delay of its
        // line: here the link's delay is that delay, unknown yet (`delay
        // 0` stands for it, after the words, as a jitter's piece does).
        // Only an empirical one (`file:`): a table shapes a jitter, and
        // needs one.
        let words: Vec<String> = text
            .split_whitespace()
            .map(str::to_ascii_lowercase)
            .collect();
        let empirical = words
            .windows(2)
            .any(|w| w[0] == "distribution" && w[1].starts_with("file:"));
        if empirical && !words.iter().any(|w| w == "delay") {
            text.push_str(" delay 0");
        }
        let mut spec = parse_pipe_params(&text).map_err(|e| {
            // The key whose piece holds the error's column (a missing word
            // is reported just after the end: the last piece).
            let col = e.column as usize;
            let i = spans
                .iter()
                .rev()
                .find(|(start, _)| *start <= col)
                .map_or(0, |s| s.1);
            let mut x = AttrError::of(&attrs[i], &e.word, parse_message(&e));
            if attrs[i].column > 0 {
                // The words stood at their own columns.
                x.column = col;
            }
            x
        })?;
        // What a topology link cannot be, named by the key that gave it:
        // a key of its own name, else the `pipe` key.
        if let Some((word, why)) = refused_word(&spec) {
            let i = pieces
                .iter()
                .find(|p| p.1 == word)
                .or_else(|| pieces.iter().find(|p| p.1 == "pipe"))
                .map_or(0, |p| p.0);
            return Err(AttrError::of(&attrs[i], word, format!("'{word}' {why}")));
        }
        // The link's delay is the mean; `delay 0` only carried the jitter.
        spec.delay = None;
        out.set.words = spec;
    }
    out.pieces = pieces;
    Ok(out)
}

/// The name of a pipe key (`&'static` for [`LinkAttrsRead`]'s pieces).
fn pipe_key(k: &str) -> &'static str {
    PIPE_KEYS
        .iter()
        .chain(REFUSED.iter().map(|r| &r.0))
        .find(|p| **p == k)
        .copied()
        .unwrap_or("")
}

/// Reads a file a link names: the path as written to its text, or why
/// not.
pub type Loader<'l> = &'l mut dyn FnMut(&str) -> Result<String, String>;

/// The files a link reads when it is built: texts already read (the
/// topology's), those read since, and a loader for the others (a path as
/// written to its text or why not; `None`: naming a new file is an
/// error).
pub struct FileReader<'a, 'l> {
    /// The texts read before (the topology's).
    pub known: &'a FileTexts,
    /// The texts read here, for the caller to keep.
    pub read: FileTexts,
    /// Reads a file not yet known.
    pub load: Option<Loader<'l>>,
}

impl<'a, 'l> FileReader<'a, 'l> {
    /// A reader of `known` texts and, with `load`, of new files.
    pub fn new(known: &'a FileTexts, load: Option<Loader<'l>>) -> FileReader<'a, 'l> {
        FileReader {
            known,
            read: FileTexts::default(),
            load,
        }
    }

    /// The text of `path`: known or read before, else read now.
    pub fn text(&mut self, path: &str) -> Result<String, String> {
        if let Some(t) = self.known.get(path).or_else(|| self.read.get(path)) {
            return Ok(t.to_string());
        }
        match &mut self.load {
            Some(load) => {
                let t = load(path)?;
                self.read.insert(path, &t);
                Ok(t)
            }
            None => Err(no_reader(path)),
        }
    }
}

/// A shorter borrow of an optional loader, for one [`FileReader`] of
/// many.
pub fn reborrow<'s>(load: &'s mut Option<Loader<'_>>) -> Option<Loader<'s>> {
    match load {
        Some(f) => Some(&mut **f),
        None => None,
    }
}

/// The engine configuration of a link direction with these values and
/// words, built by the language's builder, files read through `files`:
/// the one way a topology pipe's words become an engine configuration
/// ([`build_link`] checks with it, [`crate::lower()`] lowers with it).
pub fn link_pipe(
    bw: pipelab_engine::Rate,
    delay: pipelab_engine::Duration,
    loss: f64,
    queue: pipelab_engine::QueueLimit,
    words: &PipeSpec,
    files: &mut FileReader<'_, '_>,
) -> Result<pipelab_engine::PipeConfig, pipelab_engine::config::ConfigError> {
    let spec = crate::lower::pipe_spec(bw, delay, loss, queue, words);
    if files.load.is_none() && files.known.is_empty() && files.read.is_empty() {
        // Nothing read and nothing to read with: a tc table by name is
        // pipelab's own (as a pipe without a file loader has it); a file
        // is an error.
        if let Some(&(param, path)) = spec.files().first() {
            return Err(pipelab_engine::config::ConfigError {
                param,
                reason: no_reader(path),
            });
        }
        return spec.to_config();
    }
    spec.to_config_with(&mut |p| files.text(p))
}

/// Why `path` is not read: no loader.
fn no_reader(path: &str) -> String {
    format!(
        "'{path}': no file is read here (a topology read from a file reads the files its links name, relative to its directory)"
    )
}

/// `base` with the attributes `read` (from `attrs`) given to it, built
/// whole: the values checked against the engine's limits for a pipe, then
/// the pipe built by [`link_pipe`] (the files it names read through
/// `files`). An error names the key that wrote the refused word, with its
/// line (and column in a command); a refused default names no key (its
/// line is 0).
pub fn build_link(
    read: &LinkAttrsRead,
    attrs: &[Written],
    base: &Link,
    files: &mut FileReader<'_, '_>,
) -> Result<Link, AttrError> {
    let by_index =
        |i: Option<usize>, word: &str, message: String| match i.and_then(|i| attrs.get(i)) {
            Some(a) => AttrError::of(a, word, message),
            None => AttrError {
                line: 0,
                column: 0,
                key: word.to_string(),
                word: word.to_string(),
                message,
            },
        };
    if let Err(limit) = read.set.check() {
        // The attribute was written (defaults are not checked here).
        let w = read.written.iter().find(|w| w.0 == limit.attr);
        let word = w.map_or("", |w| w.2.as_str());
        return Err(by_index(w.map(|w| w.1), word, limit.message(word)));
    }
    let mut link = base.clone();
    read.set.apply(&mut link);
    let built = link_pipe(
        link.bw,
        link.delay,
        link.loss,
        link.queue,
        &link.words,
        files,
    );
    if let Err(e) = built {
        let param = e.param;
        let by_set = read
            .written
            .iter()
            .find(|w| w.0.name() == param || (param == "plr" && w.0 == LinkAttr::Loss))
            .map(|w| w.1);
        let by_word = read
            .pieces
            .iter()
            .find(|p| {
                p.1 == param
                    || (p.1 == "aqm" && ["red", "gred", "codel", "pie"].contains(&param))
                    || (param == "plr" && p.1 == "loss")
            })
            .map(|p| p.0);
        let by_pipe = read.pieces.iter().find(|p| p.1 == "pipe").map(|p| p.0);
        let i = by_word
            .or(by_set)
            .or(by_pipe)
            .or_else(|| read.pieces.first().map(|p| p.0));
        let key = i.and_then(|i| attrs.get(i)).map_or(param, |a| {
            if a.key == "pipe" {
                param
            } else {
                a.key.as_str()
            }
        });
        return Err(by_index(i, param, format!("invalid {key}: {}", e.reason)));
    }
    Ok(link)
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
            let cfg = crate::lower::pipe_config(p, &d.files).expect("lowers");
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
            crate::lower::pipe_config(&d.pipes[0], &d.files)
                .unwrap_or_else(|e| panic!("{key}: {e}"));
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
            (
                "loss \"trace:drops.txt\"",
                5,
                "loss",
                "no file is read here",
            ),
            (
                "bw \"10Mbit/s\"\n rate \"5mbit\"",
                6,
                "rate",
                "'rate' and 'bw'",
            ),
            ("ecn \"maybe\"", 5, "ecn", "a flag"),
            ("pipe \"delay 5ms\"", 5, "pipe", "the link's own attribute"),
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
