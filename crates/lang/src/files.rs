//! The files a configuration names, and the text formats they hold.
//!
//! Two halves, one per concern:
//!
//! * **Reading a file** ([`read_named_file`]): every file a configuration
//!   or a topology names (a pipe's `profile`, `bw trace:`, `loss trace:`,
//!   `distribution file:`, `timevarying`, and GML/TOML topologies) is read
//!   by this one function. It refuses anything that is not a regular file
//!   (a FIFO, a device such as `/dev/zero`, a directory, a socket) without
//!   blocking on it, refuses a file larger than [`MAX_FILE_BYTES`], reads
//!   at most that many bytes within [`READ_TIME_BUDGET`], and refuses text
//!   that is not UTF-8, naming the byte offset. Where a path is resolved
//!   (relative to a configuration file, absolute only for the daemon) is
//!   the caller's business.
//!
//! * **Reading a format** (the `parse_*` functions): the text of a
//!   distribution file, a loss trace, a Mahimahi bandwidth trace, a
//!   Dummynet MAC profile or a time-varying Markov graph, turned into the
//!   engine's validated object. Every value with a unit is read by
//!   [`crate::units`], so a rate, a duration or a probability is spelled
//!   (and refused, with the same hint) as in a configuration line; the
//!   engine's typed constructors check the invariants. Errors name the line
//!   ([`TextError`]); the caller adds the file's name.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration as StdDuration, Instant as StdInstant};

use pipelab_engine::models::{
    BwTrace, Dwell, EmpiricalDelay, GraphState, MarkovGraph, ModelError,
    Probability as ModelProbability, Profile, StateParams, TraceEntry, TraceLoss,
};
use pipelab_engine::time::{Duration, Instant};

use crate::units::{self, Probability, UnitError};

/// The largest file a configuration may name: 64 MiB. Larger files are
/// refused before anything is read (and a file that grows past it while
/// being read is refused too).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// How long reading one named file may take. Reading stops, and the file
/// is refused, when the budget is spent (a regular file on a stalled
/// network file system, say).
pub const READ_TIME_BUDGET: StdDuration = StdDuration::from_secs(10);

/// Bytes read at a time, between two looks at the time budget.
const CHUNK: usize = 1 << 20;

/// Why a named file cannot be read. Each variant names the path.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file cannot be opened or its metadata read (missing, no
    /// permission, ...).
    #[error("'{path}': {source}")]
    Open {
        /// The path as given.
        path: String,
        /// What the system said.
        source: io::Error,
    },
    /// The path names something other than a regular file.
    #[error("'{path}': {kind}, not a regular file")]
    NotRegular {
        /// The path as given.
        path: String,
        /// What it is: `a FIFO`, `a character device`, `a directory`, ...
        kind: &'static str,
    },
    /// The file is larger than [`MAX_FILE_BYTES`].
    #[error("'{path}': {size} bytes, more than the limit of {cap} bytes ({} MiB)", cap >> 20)]
    TooLarge {
        /// The path as given.
        path: String,
        /// Its size in bytes (at least, when it grew while being read).
        size: u64,
        /// The limit, [`MAX_FILE_BYTES`].
        cap: u64,
    },
    /// Reading failed part way.
    #[error("'{path}': reading failed: {source}")]
    Read {
        /// The path as given.
        path: String,
        /// What the system said.
        source: io::Error,
    },
    /// Reading took longer than [`READ_TIME_BUDGET`].
    #[error("'{path}': reading took longer than {}s; giving up", budget.as_secs())]
    TooSlow {
        /// The path as given.
        path: String,
        /// The budget, [`READ_TIME_BUDGET`].
        budget: StdDuration,
    },
    /// The bytes are not UTF-8 text.
    #[error("'{path}': not UTF-8 text (invalid byte at offset {offset})")]
    NotUtf8 {
        /// The path as given.
        path: String,
        /// The offset of the first byte that is not valid UTF-8.
        offset: usize,
    },
}

/// What a file type is, in words, for anything but a regular file.
fn kind_of(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Reads the text of a file a configuration or a topology names.
///
/// The file is opened with `O_NONBLOCK` (so that opening a FIFO cannot
/// wait for a writer) and `O_NOCTTY`, and its descriptor's type checked
/// (`fstat`): only a regular file is read. It must hold at most [`MAX_FILE_BYTES`] bytes,
/// be read within [`READ_TIME_BUDGET`], and be UTF-8 text. `path` is used
/// as given (the caller resolves relative paths); errors name it.
pub fn read_named_file(path: impl AsRef<Path>) -> Result<String, FileError> {
    let path = path.as_ref();
    let bytes = read_named_bytes(path)?;
    String::from_utf8(bytes).map_err(|e| FileError::NotUtf8 {
        path: path.display().to_string(),
        offset: e.utf8_error().valid_up_to(),
    })
}

/// [`read_named_file`]'s checks and reading, without the UTF-8 check (for
/// a caller that reports an invalid byte with its line and column,
/// [`crate::source::decode`]).
pub fn read_named_bytes(path: impl AsRef<Path>) -> Result<Vec<u8>, FileError> {
    let path = path.as_ref();
    let name = || path.display().to_string();
    let file = File::options()
        .read(true)
        // O_NONBLOCK: opening a FIFO does not wait for a writer;
        // O_NOCTTY: opening a terminal does not make it ours.
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|source| {
            // A Unix socket cannot be opened at all (ENXIO): say what it is.
            match std::fs::metadata(path) {
                Ok(m) if !m.is_file() => FileError::NotRegular {
                    path: name(),
                    kind: kind_of(m.file_type()),
                },
                _ => FileError::Open {
                    path: name(),
                    source,
                },
            }
        })?;
    let meta = file.metadata().map_err(|source| FileError::Open {
        path: name(),
        source,
    })?;
    if !meta.is_file() {
        return Err(FileError::NotRegular {
            path: name(),
            kind: kind_of(meta.file_type()),
        });
    }
    let too_large = |size: u64| FileError::TooLarge {
        path: name(),
        size,
        cap: MAX_FILE_BYTES,
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large(meta.len()));
    }
    let deadline = StdInstant::now() + READ_TIME_BUDGET;
    // Files under /proc say 0 bytes and still have text: read until the
    // end, never past the cap (one byte more tells a file that grew).
    let mut bytes: Vec<u8> = Vec::with_capacity(meta.len() as usize);
    let mut limited = (&file).take(MAX_FILE_BYTES + 1);
    let mut chunk = vec![0u8; CHUNK];
    loop {
        if StdInstant::now() > deadline {
            return Err(FileError::TooSlow {
                path: name(),
                budget: READ_TIME_BUDGET,
            });
        }
        match limited.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(FileError::Read {
                    path: name(),
                    source,
                })
            }
        }
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// An error in the text of a format: the 1-based line, when the error is
/// on one, and what is wrong. A value's error is the language's, hint
/// included (`unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)`).
/// The caller names the file: `'PATH': line N: ...`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", line.map(|l| format!("line {l}: ")).unwrap_or_default())]
pub struct TextError {
    /// The 1-based line, when the error is on one.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl TextError {
    fn at(line: usize, message: impl Into<String>) -> TextError {
        TextError {
            line: Some(line),
            message: message.into(),
        }
    }

    /// The engine's refusal, at the line of the entry it names (`lines[i]`
    /// is the line of the constructor's entry `i`), else at no line.
    fn model(e: ModelError, lines: &[usize]) -> TextError {
        TextError {
            line: e.index.and_then(|i| lines.get(i).copied()),
            message: e.message,
        }
    }

    /// The engine's refusal of what line `line` gave.
    fn model_at(line: usize) -> impl Fn(ModelError) -> TextError {
        move |e| TextError::at(line, e.message)
    }

    /// The language's refusal of a value on line `line`.
    fn unit_at(line: usize) -> impl Fn(UnitError) -> TextError {
        move |e| TextError::at(line, e.to_string())
    }
}

/// The keywords that start a profile's lines.
const PROFILE_KEYWORDS: &[&str] = &[
    "name",
    "bw",
    "bandwidth",
    "loss-level",
    "samples",
    "prob",
    "delay",
];

/// The keywords that start a Markov graph's lines.
const MARKOV_KEYWORDS: &[&str] = &["state", "dwell", "arc", "initial"];

/// `result`, unless it is an error on the first meaningful line of
/// `text` that quotes it (a word of it of three characters or more) while
/// the line is not recognised as one of the format's (`what`): its first
/// word is not one of `keywords` (a format of values alone, with no
/// keywords, recognises no first line it refused). The error then says
/// what was expected and quotes nothing: the file may be any file
/// (`/etc/shadow` named by mistake, or to have an error print a line of
/// it), so a line of it is shown only once the file has shown itself to
/// be of the format.
fn unquoted<T>(
    text: &str,
    result: Result<T, TextError>,
    keywords: &[&str],
    what: &str,
) -> Result<T, TextError> {
    result.map_err(|e| match first_content_line(text) {
        Some((line, content))
            if e.line == Some(line)
                && quotes(&e.message, content)
                && !starts_with_any(content, keywords) =>
        {
            TextError::at(line, format!("not {what}; the line is not shown"))
        }
        _ => e,
    })
}

/// The first meaningful line of `text` (`#` comments and blank lines
/// skipped): its number (from 1) and its content.
pub fn first_content_line(text: &str) -> Option<(usize, &str)> {
    content_lines(text).next()
}

/// Whether `message` quotes `content`, a line of a file: holds one of
/// its words (blank- or comma-separated) of three characters or more.
pub fn quotes(message: &str, content: &str) -> bool {
    content
        .split(|c: char| c.is_whitespace() || c == ',')
        .any(|w| w.len() >= 3 && message.contains(w))
}

/// Whether the first word of `content` is one of `keywords` (in any
/// case).
pub fn starts_with_any(content: &str, keywords: &[&str]) -> bool {
    content
        .split_whitespace()
        .next()
        .is_some_and(|w| keywords.iter().any(|k| w.eq_ignore_ascii_case(k)))
}

/// The meaningful lines of a text: `(1-based line number, content)` with
/// `#` comments and surrounding blanks removed and empty lines skipped.
pub(crate) fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter_map(|(i, raw)| {
        let content = match raw.find('#') {
            Some(hash) => &raw[..hash],
            None => raw,
        }
        .trim();
        (!content.is_empty()).then_some((i + 1, content))
    })
}

/// A count written as plain digits (a packet number, a table size).
fn count<T: std::str::FromStr>(word: &str) -> Option<T> {
    if word.is_empty() || !word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    word.parse().ok()
}

/// The engine's probability for a language one (exact to 1e-9: the
/// nearest float to the decimal as written).
fn model_p(p: Probability) -> ModelProbability {
    ModelProbability::new(p.as_f64()).unwrap_or(ModelProbability::ONE)
}

/// The directories where tc looks for its distribution tables, in order:
/// `$TC_LIB_DIR` when set (tc's own override), then where distributions
/// install iproute2's (`/usr/lib/tc`, Debian's multiarch
/// `/usr/lib/<triplet>/tc`, `/usr/lib64/tc`, `/usr/local/lib/tc`).
pub fn tc_lib_dirs() -> Vec<String> {
    let mut dirs = Vec::new();
    if let Ok(d) = std::env::var("TC_LIB_DIR") {
        if !d.is_empty() {
            dirs.push(d);
        }
    }
    dirs.push("/usr/lib/tc".into());
    if let Ok(entries) = std::fs::read_dir("/usr/lib") {
        let mut multiarch: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with("-linux-gnu") || n.ends_with("-linux-musl"))
            .map(|n| format!("/usr/lib/{n}/tc"))
            .collect();
        multiarch.sort();
        dirs.extend(multiarch);
    }
    dirs.push("/usr/lib64/tc".into());
    dirs.push("/usr/local/lib/tc".into());
    dirs
}

/// The installed `NAME.dist` of tc's library directories
/// ([`tc_lib_dirs`]), the first that is a file; `None` if none is.
/// `name` must be a plain word (no `/`, not empty, not `.` or `..`).
pub fn find_tc_table(name: &str) -> Option<std::path::PathBuf> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return None;
    }
    tc_lib_dirs()
        .into_iter()
        .map(|d| Path::new(&d).join(format!("{name}.dist")))
        .find(|p| p.is_file())
}

/// Reads a netem distribution table (`distribution NAME`, iproute2's
/// `normal.dist` and friends, or `maketable`'s output): `#` comment
/// lines, then integers separated by blanks (decimal, `0x` hex or `0`
/// octal, as `strtol` reads them), each in `-32768..=32767` (units of
/// 1/8192 of the jitter). tc stops silently at a word that is not a
/// number and truncates values to 16 bits; this reader refuses both,
/// naming the line.
pub fn parse_tc_table(text: &str) -> Result<Vec<i16>, TextError> {
    unquoted(
        text,
        parse_tc_table_lines(text),
        &[],
        "a tc distribution table (whole numbers)",
    )
}

fn parse_tc_table_lines(text: &str) -> Result<Vec<i16>, TextError> {
    let mut values = Vec::new();
    for (line, content) in content_lines(text) {
        for word in content.split_whitespace() {
            let (neg, digits) = match word.strip_prefix('-') {
                Some(d) => (true, d),
                None => (false, word.strip_prefix('+').unwrap_or(word)),
            };
            let parsed = if let Some(h) = digits
                .strip_prefix("0x")
                .or_else(|| digits.strip_prefix("0X"))
            {
                i64::from_str_radix(h, 16).ok()
            } else if digits.len() > 1 && digits.starts_with('0') {
                i64::from_str_radix(&digits[1..], 8).ok()
            } else if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                digits.parse::<i64>().ok()
            } else {
                None
            };
            let Some(v) = parsed.map(|v| if neg { -v } else { v }) else {
                return Err(TextError::at(
                    line,
                    format!("'{word}' is not a whole number"),
                ));
            };
            let v = i16::try_from(v).map_err(|_| {
                TextError::at(
                    line,
                    format!("{v} is outside a table entry's range -32768..32767"),
                )
            })?;
            values.push(v);
        }
    }
    if values.is_empty() {
        return Err(TextError {
            line: None,
            message: "no table entries".into(),
        });
    }
    Ok(values)
}

/// Reads an empirical delay distribution (`distribution file:PATH`).
///
/// One entry per line, `#` starts a comment, blank lines are skipped.
/// Either **samples**, one delay per line, or **CDF points**, `P VALUE`
/// per line (not both in one file): a delay is written as a pipe's
/// `delay` (`12.5ms`, `800us`, `2s`, `350ns`; a bare number is
/// milliseconds), `P` as a probability (`0.25` or `25%`). The engine's
/// [`EmpiricalDelay::from_samples`] and [`EmpiricalDelay::from_cdf`] check
/// the rest (points never decreasing, the last `P` equal to 1).
pub fn parse_distribution(text: &str) -> Result<EmpiricalDelay, TextError> {
    unquoted(
        text,
        parse_distribution_lines(text),
        &[],
        "a delay distribution (one delay per line, e.g. 12.5ms, or `P VALUE`)",
    )
}

fn parse_distribution_lines(text: &str) -> Result<EmpiricalDelay, TextError> {
    let mut samples: Vec<Duration> = Vec::new();
    let mut points: Vec<(ModelProbability, Duration)> = Vec::new();
    let mut point_lines: Vec<usize> = Vec::new();
    // The first line of each kind, to explain a mix.
    let (mut first_sample, mut first_point) = (None, None);
    for (line, content) in content_lines(text) {
        let unit = TextError::unit_at(line);
        let tokens: Vec<&str> = content.split_whitespace().collect();
        match tokens.as_slice() {
            [value] => {
                if let Some(p) = first_point {
                    return Err(TextError::at(
                        line,
                        format!(
                            "a single sample in a file of CDF points (first `P VALUE` at line {p})"
                        ),
                    ));
                }
                first_sample.get_or_insert(line);
                samples.push(units::parse_delay(value).map_err(unit)?);
            }
            [p, value] => {
                if let Some(s) = first_sample {
                    return Err(TextError::at(
                        line,
                        format!(
                            "a `P VALUE` point in a file of samples (first sample at line {s})"
                        ),
                    ));
                }
                first_point.get_or_insert(line);
                let prob = units::parse_probability(p).map_err(&unit)?;
                let delay = units::parse_delay(value).map_err(&unit)?;
                points.push((model_p(prob), delay));
                point_lines.push(line);
            }
            _ => {
                return Err(TextError::at(
                    line,
                    format!(
                        "expected one delay or `P VALUE`, found {} fields",
                        tokens.len()
                    ),
                ))
            }
        }
    }
    if points.is_empty() {
        EmpiricalDelay::from_samples(samples).map_err(|e| TextError::model(e, &[]))
    } else {
        EmpiricalDelay::from_cdf(points).map_err(|e| TextError::model(e, &point_lines))
    }
}

/// Reads a loss trace (`loss trace:PATH`, KauNet-style patterns).
///
/// Entries are separated by blanks, commas or newlines; `#` starts a
/// comment. An entry is `17` (drop the 17th packet that reaches the loss
/// stage, counting from 1), `100-120` (packets 100 to 120 inclusive) or
/// `@1.5s-2s` (every packet reaching the loss stage at a time `t` with
/// `1.5 s ≤ t < 2 s` since the start of the run; times are written as a
/// pipe's `delay`, a bare number being milliseconds). Entries may overlap
/// and come in any order; an empty trace drops nothing.
pub fn parse_loss_trace(text: &str) -> Result<TraceLoss, TextError> {
    unquoted(
        text,
        parse_loss_trace_lines(text),
        &[],
        "a loss trace (packet numbers, ranges `A-B`, intervals `@T1-T2`)",
    )
}

fn parse_loss_trace_lines(text: &str) -> Result<TraceLoss, TextError> {
    let mut entries: Vec<TraceEntry> = Vec::new();
    let mut lines: Vec<usize> = Vec::new();
    for (line, content) in content_lines(text) {
        let unit = TextError::unit_at(line);
        for token in content
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|t| !t.is_empty())
        {
            let entry = if let Some(times) = token.strip_prefix('@') {
                let Some((a, b)) = times.split_once('-') else {
                    return Err(TextError::at(
                        line,
                        format!("`{token}`: a time interval needs an end, as in `@1.5s-2s`"),
                    ));
                };
                let start = units::parse_delay(a).map_err(&unit)?;
                let end = units::parse_delay(b).map_err(&unit)?;
                TraceEntry::Interval {
                    start: Instant(start.as_nanos()),
                    end: Instant(end.as_nanos()),
                }
            } else {
                let (a, b) = token.split_once('-').unwrap_or((token, token));
                let (Some(first), Some(last)) = (count::<u64>(a), count::<u64>(b)) else {
                    return Err(TextError::at(
                        line,
                        format!(
                            "`{token}` is not a packet number, a range `A-B` or an interval `@T1-T2`"
                        ),
                    ));
                };
                TraceEntry::Packets { first, last }
            };
            entries.push(entry);
            lines.push(line);
        }
    }
    TraceLoss::new(entries).map_err(|e| TextError::model(e, &lines))
}

/// Reads a Mahimahi delivery-opportunity trace (`bw trace:PATH`).
///
/// One timestamp per line, the offset of a delivery opportunity from the
/// start of the link, written as a pipe's `delay`: a bare number is
/// milliseconds, Mahimahi's unit (`12`), and a unit may be given
/// (`12500us`). Blank lines and `#` comments are skipped. The engine's
/// [`BwTrace::new`] checks the rest (non-decreasing, a positive last
/// timestamp).
pub fn parse_bw_trace(text: &str) -> Result<BwTrace, TextError> {
    unquoted(
        text,
        parse_bw_trace_lines(text),
        &[],
        "a bandwidth trace (one timestamp per line, e.g. 12 or 12500us)",
    )
}

fn parse_bw_trace_lines(text: &str) -> Result<BwTrace, TextError> {
    let mut offsets: Vec<Duration> = Vec::new();
    let mut lines: Vec<usize> = Vec::new();
    for (line, content) in content_lines(text) {
        let words: Vec<&str> = content.split_whitespace().collect();
        let [word] = words.as_slice() else {
            return Err(TextError::at(
                line,
                format!(
                    "expected one timestamp per line, found {} words",
                    words.len()
                ),
            ));
        };
        offsets.push(units::parse_delay(word).map_err(TextError::unit_at(line))?);
        lines.push(line);
    }
    BwTrace::new(offsets).map_err(|e| TextError::model(e, &lines))
}

/// The tokens of a profile line up to a token that starts with `#`
/// (ipfw's rule: `200#x` is not a comment).
fn profile_tokens(line: &str) -> impl Iterator<Item = &str> {
    line.split([' ', '\t', '\r'])
        .filter(|t| !t.is_empty())
        .take_while(|t| !t.starts_with('#'))
}

/// Reads a Dummynet MAC-overhead profile (`profile PATH`), the format of
/// ipfw's `load_extra_delays`.
///
/// One `keyword argument` pair per line, whitespace separated; a token
/// that starts with `#` ends the line; blank lines are skipped; keywords
/// are case-insensitive. `name ID` (the rest of the line, at most once);
/// `bw RATE` or `bandwidth RATE` (a rate as a pipe's `bw`: `2Mbit/s`, a
/// bare number is bit/s); `loss-level L` (a probability: `0.99` or `99%`);
/// `samples N` (`1..=1024`); then `prob delay` or `delay prob`, which
/// starts the points, one `P D` (or `D P`) per line until the next
/// keyword, `P` a probability and `D` a delay as a pipe's `delay` (a bare
/// number is milliseconds, ipfw's unit). The engine's [`Profile::builder`]
/// checks the values and the curve.
pub fn parse_profile(text: &str) -> Result<Profile, TextError> {
    unquoted(
        text,
        parse_profile_lines(text),
        PROFILE_KEYWORDS,
        "a MAC profile (`name`, `bw`, `loss-level`, `samples`, `prob delay` lines)",
    )
}

fn parse_profile_lines(text: &str) -> Result<Profile, TextError> {
    let mut b = Profile::builder();
    let (mut has_name, mut has_bw, mut has_loss, mut has_samples) = (false, false, false, false);
    let mut delay_first = false;
    let mut do_points = false;
    let mut point_lines: Vec<usize> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |m: String| TextError::at(line, m);
        let (unit, model) = (TextError::unit_at(line), TextError::model_at(line));
        let mut toks = profile_tokens(raw);
        let Some(key) = toks.next() else {
            continue;
        };
        let Some(arg) = toks.next() else {
            return Err(err(format!("missing argument for `{key}`")));
        };
        let k = key.to_ascii_lowercase();
        // `name` takes the rest of the line (the paper writes `name
        // profile foo`); every other keyword takes one argument.
        if k == "name" {
            if std::mem::replace(&mut has_name, true) {
                return Err(err("duplicate `name` line".into()));
            }
            let mut full = arg.to_string();
            for t in toks {
                full.push(' ');
                full.push_str(t);
            }
            b.name(full);
            do_points = false;
            continue;
        }
        if toks.next().is_some() {
            return Err(err(format!("too many arguments for `{key}`")));
        }
        match k.as_str() {
            "samples" => {
                if std::mem::replace(&mut has_samples, true) {
                    return Err(err("duplicate `samples` line".into()));
                }
                let n = count::<usize>(arg)
                    .ok_or_else(|| err(format!("invalid number of samples `{arg}`")))?;
                b.samples(n).map_err(model)?;
                do_points = false;
            }
            "bw" | "bandwidth" => {
                if std::mem::replace(&mut has_bw, true) {
                    return Err(err(format!("duplicate `{key}` line")));
                }
                b.bandwidth(units::parse_rate(arg).map_err(unit)?)
                    .map_err(model)?;
            }
            "loss-level" => {
                if std::mem::replace(&mut has_loss, true) {
                    return Err(err("duplicate `loss-level` line".into()));
                }
                b.loss_level(model_p(units::parse_probability(arg).map_err(unit)?));
                do_points = false;
            }
            "delay" | "prob" => {
                if do_points {
                    return Err(err(format!("duplicate `{key}` header")));
                }
                let other = if k == "delay" { "prob" } else { "delay" };
                if !arg.eq_ignore_ascii_case(other) {
                    return Err(err(format!(
                        "expected `{key} {other}` to start the points, found `{key} {arg}`"
                    )));
                }
                delay_first = k == "delay";
                do_points = true;
            }
            _ if do_points => {
                let (p, d) = if delay_first { (arg, key) } else { (key, arg) };
                let prob = units::parse_probability(p).map_err(&unit)?;
                let delay = units::parse_delay(d).map_err(&unit)?;
                b.point(model_p(prob), delay).map_err(model)?;
                point_lines.push(line);
            }
            _ => return Err(err(format!("unrecognised keyword `{key}`"))),
        }
    }
    b.build().map_err(|e| TextError::model(e, &point_lines))
}

/// The parameters of a `state` line after its name: `[bw RATE] [loss P]
/// [snr DB] [netload P] [collision P] [delay D]`, each at most once.
pub(crate) fn state_params(words: &[&str]) -> Result<StateParams, String> {
    let mut p = StateParams::default();
    if let [.., last] = words {
        if !words.len().is_multiple_of(2) {
            return Err(format!("`{last}` needs a value"));
        }
    }
    for kv in words.chunks(2) {
        let (k, v) = (kv[0], kv[1]);
        let dup = || format!("`{k}` given twice");
        let unit = |e: UnitError| e.to_string();
        let taken = match k {
            "bw" | "bandwidth" => p
                .bandwidth
                .replace(units::parse_rate(v).map_err(unit)?)
                .is_some(),
            "loss" | "plr" => p
                .loss
                .replace(units::parse_loss_rate(v).map_err(unit)?.as_f64())
                .is_some(),
            "snr" => p
                .snr_db
                .replace(units::parse_db(v).map_err(unit)?.as_f64())
                .is_some(),
            "netload" => p
                .netload
                .replace(units::parse_probability(v).map_err(unit)?.as_f64())
                .is_some(),
            "collision" => p
                .collision
                .replace(units::parse_probability(v).map_err(unit)?.as_f64())
                .is_some(),
            "delay" => p
                .delay
                .replace(units::parse_delay(v).map_err(unit)?)
                .is_some(),
            _ => return Err(format!("unknown state parameter `{k}`")),
        };
        if taken {
            return Err(dup());
        }
    }
    Ok(p)
}

/// Reads a time-varying link's Markov graph (`timevarying PATH`,
/// PlanetLab-Dummynet §4.4).
///
/// Line oriented; `#` starts a comment; blank lines are skipped; words
/// are separated by blanks:
/// * `state NAME [bw RATE] [loss P] [snr DB] [netload P] [collision P]
///   [delay D]`: a state and the parameters it overrides, each written as
///   in a pipe's configuration (`bw 11Mbit/s`, `delay 10ms`, a bare delay
///   being milliseconds; `snr 20dB`, a bare number being dB; `loss`,
///   `netload` and `collision` a probability, `0.06` or `6%`). The first
///   state is the initial one unless `initial` says otherwise.
/// * `dwell NAME P1 D1 [P2 D2 ...]`: the corners of the state's
///   piecewise-linear dwell-time CDF (`P` a probability, `D` a duration
///   as above); exactly one per state.
/// * `arc FROM TO P`: move from `FROM` to `TO` with probability `P`.
/// * `initial NAME`: the state at time zero (at most once).
///
/// Arcs and dwells may name states declared later. The engine's
/// [`Dwell::new`], [`StateParams::check`] and [`MarkovGraph::new`] check
/// the values and the graph; every error names its line (for a state's
/// own problems, such as arcs that do not sum to 1, the line declaring
/// it).
pub fn parse_markov_graph(text: &str) -> Result<MarkovGraph, TextError> {
    unquoted(
        text,
        parse_markov_graph_lines(text),
        MARKOV_KEYWORDS,
        "a Markov graph (`state`, `dwell`, `arc`, `initial` lines)",
    )
}

fn parse_markov_graph_lines(text: &str) -> Result<MarkovGraph, TextError> {
    struct Draft {
        name: String,
        params: StateParams,
        line: usize,
        dwell: Option<Dwell>,
        arcs: Vec<(usize, ModelProbability)>,
    }
    let mut states: Vec<Draft> = Vec::new();
    let mut initial: Option<(String, usize)> = None;
    // Arcs and dwells may name states declared later: resolved after.
    let mut arcs: Vec<(String, String, ModelProbability, usize)> = Vec::new();
    let mut dwells: Vec<(String, Dwell, usize)> = Vec::new();
    for (line, content) in content_lines(text) {
        let err = |m: String| TextError::at(line, m);
        let unit = TextError::unit_at(line);
        let words: Vec<&str> = content.split_whitespace().collect();
        match words.as_slice() {
            ["state", rest @ ..] => {
                let [name, params @ ..] = rest else {
                    return Err(err("`state` needs a name".into()));
                };
                if states.iter().any(|s| s.name == *name) {
                    return Err(err(format!("state `{name}` is declared twice")));
                }
                let params = state_params(params).map_err(err)?;
                params.check().map_err(TextError::model_at(line))?;
                states.push(Draft {
                    name: name.to_string(),
                    params,
                    line,
                    dwell: None,
                    arcs: Vec::new(),
                });
            }
            ["dwell", rest @ ..] => {
                let [name, pairs @ ..] = rest else {
                    return Err(err("`dwell` needs a state name".into()));
                };
                if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
                    return Err(err("`dwell` needs pairs `P D`".into()));
                }
                let mut pts = Vec::with_capacity(pairs.len() / 2);
                for pair in pairs.chunks(2) {
                    let p = units::parse_probability(pair[0]).map_err(&unit)?;
                    let d = units::parse_delay(pair[1]).map_err(&unit)?;
                    pts.push((model_p(p), d));
                }
                let dwell = Dwell::new(pts).map_err(TextError::model_at(line))?;
                dwells.push((name.to_string(), dwell, line));
            }
            ["arc", from, to, p] => {
                let p = units::parse_probability(p).map_err(&unit)?;
                arcs.push((from.to_string(), to.to_string(), model_p(p), line));
            }
            ["arc", ..] => return Err(err("`arc` takes FROM TO P".into())),
            ["initial", name] => {
                if initial.is_some() {
                    return Err(err("duplicate `initial` line".into()));
                }
                initial = Some((name.to_string(), line));
            }
            ["initial", ..] => return Err(err("`initial` takes one state name".into())),
            [other, ..] => return Err(err(format!("unknown keyword `{other}`"))),
            [] => {}
        }
    }
    if states.is_empty() {
        return Err(TextError {
            line: None,
            message: "no `state` lines".into(),
        });
    }
    let find = |name: &str, states: &[Draft]| states.iter().position(|s| s.name == name);
    for (name, dwell, line) in dwells {
        let i = find(&name, &states)
            .ok_or_else(|| TextError::at(line, format!("unknown state `{name}`")))?;
        if states[i].dwell.is_some() {
            return Err(TextError::at(
                line,
                format!("second `dwell` for state `{name}`"),
            ));
        }
        states[i].dwell = Some(dwell);
    }
    for (from, to, p, line) in arcs {
        let unknown = |n: &str| TextError::at(line, format!("unknown state `{n}`"));
        let i = find(&from, &states).ok_or_else(|| unknown(&from))?;
        let j = find(&to, &states).ok_or_else(|| unknown(&to))?;
        states[i].arcs.push((j, p));
    }
    let initial = match initial {
        None => 0,
        Some((name, line)) => find(&name, &states)
            .ok_or_else(|| TextError::at(line, format!("unknown initial state `{name}`")))?,
    };
    let lines: Vec<usize> = states.iter().map(|s| s.line).collect();
    let mut out = Vec::with_capacity(states.len());
    for s in states {
        let Some(dwell) = s.dwell else {
            return Err(TextError::at(
                s.line,
                format!("state `{}` has no `dwell` line", s.name),
            ));
        };
        out.push(GraphState {
            name: s.name,
            params: s.params,
            dwell,
            arcs: s.arcs,
        });
    }
    MarkovGraph::new(out, initial).map_err(|e| TextError::model(e, &lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line of the error `read` gives on `text` (`None` for an error
    /// about the whole file); panics if `text` is accepted.
    fn error_line<T: std::fmt::Debug>(
        read: fn(&str) -> Result<T, TextError>,
        text: &str,
    ) -> Option<usize> {
        match read(text) {
            Ok(v) => panic!("accepted {text:?}: {v:?}"),
            Err(e) => e.line,
        }
    }

    /// Pass proves: each malformed distribution file is refused at the
    /// right line (or as a whole, when it holds nothing).
    #[test]
    fn distribution_errors_name_the_line() {
        for (text, line) in [
            ("1ms\n2ms\n\n# c\nfoo\n", Some(5)),
            ("1ms\n0.5 2ms\n", Some(2)),
            ("0.5 1ms\n3ms\n", Some(2)),
            ("0.5 1ms\n0.4 2ms\n1 3ms\n", Some(2)),
            ("0.5 2ms\n0.7 1ms\n1 3ms\n", Some(2)),
            ("0.5 1ms\n0.9 2ms\n", Some(2)),
            ("1.5 1ms\n", Some(1)),
            ("1 2 3\n", Some(1)),
            ("5 ms\n", Some(1)),
            ("x 5ms\n", Some(1)),
            ("0.0000001ms\n", Some(1)),
            ("# only comments\n", None),
        ] {
            assert_eq!(error_line(parse_distribution, text), line, "{text:?}");
        }
        assert_eq!(
            parse_distribution("1ms\n2Mbit/s\n").map_err(|e| e.to_string()),
            Err(
                "line 2: unknown unit 'Mbit/s' in '2Mbit/s': known duration units: s, ms, us, ns"
                    .into()
            )
        );
    }

    /// Pass proves: a file of another kind (a copy of /etc/shadow) named
    /// as any of these formats is refused at its first line of text
    /// quoting nothing of it, while a file recognised as the format (a
    /// line read, or a keyword of it first) has its bad value quoted.
    #[test]
    fn a_file_of_another_kind_is_not_quoted() {
        let shadow = "# made\n\nroot:$6$SECRET1$SECRET2:19000:0:99999:7:::\nSECRET3 SECRET4\n";
        let errors = [
            parse_tc_table(shadow).map(|_| ()),
            parse_distribution(shadow).map(|_| ()),
            parse_loss_trace(shadow).map(|_| ()),
            parse_bw_trace(shadow).map(|_| ()),
            parse_profile(shadow).map(|_| ()),
            parse_markov_graph(shadow).map(|_| ()),
        ];
        for e in errors {
            let e = e.expect_err("refused");
            assert_eq!(e.line, Some(3), "{e}");
            assert!(e.message.starts_with("not a"), "{e}");
            assert!(e.message.ends_with("; the line is not shown"), "{e}");
            assert!(!e.to_string().contains("SECRET"), "{e}");
        }
        assert_eq!(
            parse_bw_trace("root:x:0:0\n").map_err(|e| e.to_string()),
            Err("line 1: not a bandwidth trace (one timestamp per line, e.g. 12 or 12500us); the line is not shown".into())
        );
        // Recognised: a line read before, or a keyword first.
        assert!(parse_bw_trace("12\nfast\n")
            .is_err_and(|e| e.to_string().contains("invalid duration 'fast'")));
        assert!(parse_profile("bw 10Mbps\n").is_err_and(|e| e.to_string().contains("'10Mbps'")));
        assert!(parse_markov_graph("state a bw fast\n")
            .is_err_and(|e| e.to_string().contains("'fast'")));
        // A message that quotes nothing is kept.
        assert_eq!(
            parse_bw_trace("1 2\n").map_err(|e| e.to_string()),
            Err("line 1: expected one timestamp per line, found 2 words".into())
        );
    }

    /// Pass proves: malformed loss-trace entries are refused at their line.
    #[test]
    fn loss_trace_errors_name_the_line() {
        for (text, line) in [
            ("1\n2\nx\n", 3),
            ("1\n\n0\n", 3),
            ("# c\n5-3\n", 2),
            ("@1s\n", 1),
            ("@2s-1s\n", 1),
            ("@1parsec-2s\n", 1),
            ("1 2 3-\n", 1),
            ("1,2\n3, 4-2\n", 2),
        ] {
            assert_eq!(error_line(parse_loss_trace, text), Some(line), "{text:?}");
        }
    }

    /// Pass proves: empty, decreasing, zero-period and malformed bandwidth
    /// traces are refused (at the line when there is one), and no text
    /// makes the reader panic.
    #[test]
    fn bandwidth_trace_errors_and_garbage() {
        for (text, line) in [
            ("", None),
            ("# nothing\n\n", None),
            ("0\n0\n", None),
            ("1\n3\n2\n", Some(3)),
            ("1\n-2\n", Some(2)),
            ("1\n2 3\n", Some(2)),
            ("1\n2 bps\n", Some(2)),
            ("99999999999999999999\n", Some(1)),
        ] {
            assert_eq!(error_line(parse_bw_trace, text), line, "{text:?}");
        }
        let mut x: u64 = 7;
        for _ in 0..2000 {
            let mut s = String::new();
            for _ in 0..30 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                s.push(b"0123456789\n\n# x-.msu"[(x >> 33) as usize % 20] as char);
            }
            let _ = parse_bw_trace(&s);
        }
    }

    /// Pass proves: each of ipfw's profile errors, and each bad value, is
    /// refused at its line; a file without two points as a whole.
    #[test]
    fn profile_errors_name_the_line() {
        for (text, line) in [
            ("samples 10\nsamples 20\n", 2),
            ("samples 0\n", 1),
            ("samples 2000\n", 1),
            ("loss-level 1.5\n", 1),
            ("loss-level -0.1\n", 1),
            ("samples 1 2\n", 1),
            ("name a\nname b\n", 2),
            ("name\n", 1),
            ("frobnicate 3\n", 1),
            ("prob delay\n0.1 10\n0.2\n", 3),
            ("prob delay\n0.1 10\n1.2 20\n", 3),
            ("prob delay\nx 10\n", 2),
            ("prob delay\n0.1 10parsecs\n", 2),
            ("prob delay\nprob delay\n", 2),
            ("prob kelvin\n", 1),
            ("bw em0\n", 1),
            ("bw 0\n", 1),
            ("bw 2Mbps\n", 1),
            ("prob delay\n0.1 20\n0.5 10\n", 3),
            ("samples 10\n0.1 10\n", 2),
        ] {
            assert_eq!(error_line(parse_profile, text), Some(line), "{text:?}");
        }
        assert_eq!(error_line(parse_profile, "prob delay\n0.5 10\n"), None);
        assert_eq!(error_line(parse_profile, ""), None);
    }

    /// Pass proves: no text makes the profile reader panic (garbage,
    /// binary, huge numbers, odd unicode).
    #[test]
    fn profile_garbage_never_panics() {
        for s in [
            "\u{0}\u{1}\u{ff}",
            "prob delay\n1e400 1\n",
            "prob delay\n0.5 99999999999999999999999s\n",
            "prob delay\n. .\n",
            "samples 99999999999999999999999\n",
            "bw 99999999999999999999G\n",
            "bw 4294967295Gbit/s\n",
            "loss-level ..\n",
            "prob délai\n",
            "µ µ µ\n",
            "# only a comment\n\n",
        ] {
            let _ = parse_profile(s);
        }
        let mut x: u64 = 1;
        for _ in 0..2000 {
            let mut s = String::new();
            for _ in 0..40 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                s.push(b"0123456789. \n#abpdlsK"[(x >> 33) as usize % 21] as char);
            }
            let _ = parse_profile(&s);
            let _ = parse_profile(&format!("prob delay\n{s}"));
        }
    }

    /// Pass proves: every kind of error in a Markov graph names its line
    /// (a state's own problems, the line declaring it).
    #[test]
    fn markov_graph_errors_name_the_line() {
        assert!(parse_markov_graph("state a\ndwell a 1 1s\narc a a 1\n").is_ok());
        for (text, line) in [
            ("state a\nstate a\n", 2),
            ("state\n", 1),
            ("state a bw\n", 1),
            ("state a bw fast\n", 1),
            ("state a bw 0\n", 1),
            ("state a loss 1.5\n", 1),
            ("state a netload 100%\n", 1),
            ("state a snr loud\n", 1),
            ("state a delay 3parsecs\n", 1),
            ("state a color red\n", 1),
            ("state a loss 0.1 loss 0.2\n", 1),
            ("state a\ndwell a 0.5 1s\narc a a 1\n", 2),
            ("state a\ndwell a 1 0s\narc a a 1\n", 2),
            ("state a\ndwell a 0.5 2s 1 1s\narc a a 1\n", 2),
            ("state a\ndwell a 1\narc a a 1\n", 2),
            ("state a\ndwell a x 1s\narc a a 1\n", 2),
            ("state a\ndwell b 1 1s\n", 2),
            ("state a\ndwell a 1 1s\ndwell a 1 1s\n", 3),
            ("state a\ndwell a 1 1s\narc a b 1\n", 3),
            ("state a\ndwell a 1 1s\narc a a\n", 3),
            ("state a\ndwell a 1 1s\narc a a 2\n", 3),
            ("state a\ndwell a 1 1s\narc a a 0.5\n", 1),
            ("state a\narc a a 1\n", 1),
            ("state a\ndwell a 1 1s\n", 1),
            ("\n\nfrobnicate\n", 3),
            ("state a\ndwell a 1 1s\narc a a 1\ninitial b\n", 4),
            (
                "state a\ndwell a 1 1s\narc a a 1\ninitial a\ninitial a\n",
                5,
            ),
        ] {
            assert_eq!(error_line(parse_markov_graph, text), Some(line), "{text:?}");
        }
        assert_eq!(error_line(parse_markov_graph, "# nothing\n"), None);
    }

    /// Pass proves: a text error shows its line before the message.
    #[test]
    fn text_errors_show_the_line() {
        assert_eq!(TextError::at(3, "bad").to_string(), "line 3: bad");
        let whole = TextError {
            line: None,
            message: "bad".into(),
        };
        assert_eq!(whole.to_string(), "bad");
    }

    fn refused(path: &Path) -> String {
        match read_named_file(path) {
            Ok(t) => panic!("{} was read ({} bytes)", path.display(), t.len()),
            Err(e) => e.to_string(),
        }
    }

    fn temp_dir(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("pipelab-files-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    /// Pass proves: a regular UTF-8 file is read whole.
    #[test]
    fn reads_a_regular_file() {
        let dir = temp_dir("ok");
        let f = dir.join("t.txt");
        std::fs::write(&f, "1ms\n2ms\n").expect("write");
        assert_eq!(read_named_file(&f).expect("read"), "1ms\n2ms\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Pass proves: devices are refused before a byte is read, so
    /// `/dev/zero` and `/dev/urandom` cannot grow memory without bound.
    #[test]
    fn devices_are_refused() {
        for dev in ["/dev/zero", "/dev/urandom", "/dev/null"] {
            assert_eq!(
                refused(Path::new(dev)),
                format!("'{dev}': a character device, not a regular file")
            );
        }
    }

    /// Pass proves: a FIFO with no writer is refused at once (the open does
    /// not wait for a writer, the read never starts).
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = temp_dir("fifo");
        let f = dir.join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&f)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let t0 = StdInstant::now();
        assert_eq!(
            refused(&f),
            format!("'{}': a FIFO, not a regular file", f.display())
        );
        assert!(t0.elapsed() < StdDuration::from_secs(2));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Pass proves: directories, sockets and missing files are refused,
    /// each saying why.
    #[test]
    fn directories_sockets_and_missing_files_are_refused() {
        let dir = temp_dir("dir");
        assert_eq!(
            refused(&dir),
            format!("'{}': a directory, not a regular file", dir.display())
        );
        let sock = dir.join("s.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).expect("bind");
        assert_eq!(
            refused(&sock),
            format!("'{}': a socket, not a regular file", sock.display())
        );
        let missing = dir.join("missing");
        assert!(refused(&missing).starts_with(&format!("'{}': ", missing.display())));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Pass proves: a file over the cap is refused from its size alone (a
    /// sparse file: nothing is read), naming the size and the cap.
    #[test]
    fn a_file_over_the_cap_is_refused() {
        let dir = temp_dir("big");
        let f = dir.join("big.trace");
        let file = File::create(&f).expect("create");
        file.set_len(MAX_FILE_BYTES + 1).expect("set_len");
        assert_eq!(
            refused(&f),
            format!(
                "'{}': 67108865 bytes, more than the limit of 67108864 bytes (64 MiB)",
                f.display()
            )
        );
        file.set_len(MAX_FILE_BYTES).expect("set_len");
        assert_eq!(
            read_named_file(&f).map(|t| t.len() as u64).ok(),
            Some(MAX_FILE_BYTES)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Pass proves: bytes that are not UTF-8 are refused with the offset of
    /// the first bad byte.
    #[test]
    fn invalid_utf8_is_refused_with_its_offset() {
        let dir = temp_dir("utf8");
        let f = dir.join("bad.txt");
        std::fs::write(&f, b"1ms\n2m\xffs\n").expect("write");
        assert_eq!(
            refused(&f),
            format!(
                "'{}': not UTF-8 text (invalid byte at offset 6)",
                f.display()
            )
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
