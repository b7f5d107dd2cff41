//! Units of the command language: rates, durations, sizes, probabilities,
//! packet rates and decibels, parsed exactly from words such as
//! `1.5Mbit/s`, `20800us`, `100KB`, `5%`, `1.5kpps` or `20dB`.
//!
//! Unit names are case-insensitive, as in ipfw. Numbers may have decimals
//! and a decimal exponent (`1e6bit/s`, `2.5e-3s`), and are parsed with
//! integer arithmetic only (never `f64`): a value that is
//! not a whole number of the target unit (bit/s, ns, bytes, slots) is an
//! error, never silently rounded. Negative numbers and overflow are errors,
//! never panics. Common mistakes (`Mbps`, `MB/s`, `mbit`, `sec`) get a
//! "did you mean" hint.
//!
//! This module only turns one word into one value. It knows nothing about
//! commands, positions or defaults beyond each parameter's bare-number
//! meaning (ipfw: `bw 1000` is bit/s, `delay 10` is ms, `queue 20` is
//! slots; a time in an experiment file, [`parse_time`], is seconds; a
//! topology link's loss, [`parse_loss_rate`], is a probability). Errors are
//! [`UnitError`]s without a position; the parser adds it.
//!
//! It is the one unit layer of pipelab: configuration files, `--link`
//! words, topology files (GML, TOML), `topo gen`'s link classes, the
//! topology commands, the files a configuration names (distribution files,
//! loss and bandwidth traces, MAC profiles, Markov graphs:
//! [`crate::files`]) and the wireless words all read their values here, so
//! a spelling is accepted or refused, with the same message, wherever it
//! is written.

use core::fmt;

use pipelab_engine::config::QueueLimit;
use pipelab_engine::time::{Duration, Rate};

/// Why a word is not a valid value: a message and an optional hint.
///
/// The parser turns it into a [`crate::ParseError`] at the word's position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitError {
    /// What is wrong, quoting the word (`unknown unit 'Mbps' in '10Mbps'`).
    pub message: String,
    /// How to fix it, when we can tell (`did you mean Mbit/s?`).
    pub hint: Option<String>,
}

impl UnitError {
    fn new(message: impl Into<String>) -> Self {
        UnitError {
            message: message.into(),
            hint: None,
        }
    }
    fn with_hint(message: impl Into<String>, hint: impl Into<String>) -> Self {
        UnitError {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, ": {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for UnitError {}

/// A probability in parts per billion (`1_000_000_000` = always).
///
/// Kept as an integer so that `prob 0.2` prints back as `0.2` exactly. At
/// most nine decimals are representable; more is an error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Probability(u32);

impl Probability {
    /// Parts per billion meaning certainty.
    pub const ONE_PPB: u32 = 1_000_000_000;
    /// Never.
    pub const ZERO: Probability = Probability(0);
    /// Always.
    pub const ONE: Probability = Probability(Self::ONE_PPB);

    /// From parts per billion; `None` above [`Probability::ONE_PPB`].
    pub const fn from_ppb(ppb: u32) -> Option<Probability> {
        if ppb <= Self::ONE_PPB {
            Some(Probability(ppb))
        } else {
            None
        }
    }
    /// Parts per billion, `0..=1_000_000_000`.
    pub const fn ppb(self) -> u32 {
        self.0
    }
    /// As a float (for reports and random draws, never for printing).
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / Self::ONE_PPB as f64
    }
}

impl fmt::Display for Probability {
    /// The shortest exact decimal: `0.2`, `0.05`, `1`, `0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_decimal(f, self.0 as u64, 9)
    }
}

/// A non-negative decimal number with at most nine decimals, kept exact in
/// billionths so that it prints back as written: `0.125`, `1.25`, `2`.
/// Used for unitless parameters such as PIE's gains.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Decimal(u64);

impl Decimal {
    /// From billionths.
    pub const fn from_billionths(n: u64) -> Decimal {
        Decimal(n)
    }
    /// Billionths.
    pub const fn billionths(self) -> u64 {
        self.0
    }
    /// As a float (for the engine's models, never for printing).
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

impl fmt::Display for Decimal {
    /// The shortest exact decimal: `0.125`, `2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_decimal(f, self.0, 9)
    }
}

/// Parses a plain non-negative decimal number without unit: `0.125`, `2`.
pub fn parse_decimal(word: &str) -> Result<Decimal, UnitError> {
    let invalid = || {
        UnitError::with_hint(
            format!("invalid number '{word}'"),
            "write a decimal number like 0.125",
        )
    };
    let n = split_number(word).map_err(|e| number_error(word, e, invalid()))?;
    if !n.unit.is_empty() {
        return Err(invalid());
    }
    let v = exact(word, &n, 1_000_000_000, "billionths").map_err(|e| {
        if e.message.ends_with("too large") {
            e
        } else {
            UnitError::new(format!("'{word}' has more than 9 decimal places"))
        }
    })?;
    Ok(Decimal(v))
}

/// A level in decibels (a wireless link's signal-to-noise ratio), kept
/// exact in billionths of a dB, signed, so that it prints back as written:
/// `20dB`, `-3.5dB`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Decibels(i64);

impl Decibels {
    /// From billionths of a dB.
    pub const fn from_billionths(n: i64) -> Decibels {
        Decibels(n)
    }
    /// Billionths of a dB.
    pub const fn billionths(self) -> i64 {
        self.0
    }
    /// As a float (for the engine's models, never for printing): the
    /// nearest float to the decimal as written.
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

impl fmt::Display for Decibels {
    /// The shortest exact decimal with its unit: `20dB`, `-3.5dB`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 < 0 {
            f.write_str("-")?;
        }
        write_decimal(f, self.0.unsigned_abs(), 9)?;
        f.write_str("dB")
    }
}

/// Parses a level in decibels: `20dB`, `6.5dB`, `-3dB` (the unit in any
/// case); a bare number is dB. At most nine decimals.
pub fn parse_db(word: &str) -> Result<Decibels, UnitError> {
    const HINT: &str = "decibels are written like 20dB";
    let invalid = || UnitError::with_hint(format!("invalid decibel value '{word}'"), HINT);
    let (negative, magnitude) = match word.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, word),
    };
    let n = split_number(magnitude).map_err(|e| match e {
        NumberError::Negative => invalid(),
        other => number_error(word, other, invalid()),
    })?;
    if !n.unit.is_empty() && !n.unit.eq_ignore_ascii_case("db") {
        return Err(UnitError::with_hint(
            format!("unknown unit '{}' in '{word}'", n.unit),
            HINT,
        ));
    }
    let v = exact(word, &n, 1_000_000_000, "billionths").map_err(|e| {
        if e.message.ends_with("too large") {
            e
        } else {
            UnitError::new(format!("'{word}' has more than 9 decimal places"))
        }
    })?;
    let v = i64::try_from(v).map_err(|_| UnitError::new(format!("value '{word}' is too large")))?;
    Ok(Decibels(if negative { -v } else { v }))
}

/// A packet rate in milli-packets per second (so `0.5pps` is exact).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PacketRate(u64);

impl PacketRate {
    /// From milli-packets per second.
    pub const fn from_millipps(m: u64) -> PacketRate {
        PacketRate(m)
    }
    /// From whole packets per second (saturating).
    pub const fn from_pps(pps: u64) -> PacketRate {
        PacketRate(pps.saturating_mul(1000))
    }
    /// Milli-packets per second.
    pub const fn millipps(self) -> u64 {
        self.0
    }
}

impl fmt::Display for PacketRate {
    /// Packets per second with the shortest exact decimal: `1500pps`, `0.5pps`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_decimal(f, self.0, 3)?;
        f.write_str("pps")
    }
}

/// Writes `value / 10^scale` as the shortest exact decimal.
fn write_decimal(f: &mut fmt::Formatter<'_>, value: u64, scale: u32) -> fmt::Result {
    let div = 10u64.pow(scale);
    let int = value / div;
    let frac = value % div;
    if frac == 0 {
        return write!(f, "{int}");
    }
    let mut digits = format!("{frac:0width$}", width = scale as usize);
    while digits.ends_with('0') {
        digits.pop();
    }
    write!(f, "{int}.{digits}")
}

/// A non-negative decimal number `digits / 10^scale`, split from its unit.
struct Number<'a> {
    digits: u128,
    scale: u32,
    unit: &'a str,
}

/// What went wrong splitting a word into number and unit.
enum NumberError {
    /// The word starts with `-`.
    Negative,
    /// The word has no number at its start, or a malformed one.
    Invalid,
    /// More digits than fit in 128 bits.
    TooLarge,
    /// The word holds white space (`10 Mbit/s` in a file's string; a
    /// command line splits words at spaces).
    Spaced,
}

/// Splits `word` into a decimal number and the unit text after it.
fn split_number(word: &str) -> Result<Number<'_>, NumberError> {
    if word.contains(char::is_whitespace) {
        return Err(NumberError::Spaced);
    }
    if word.starts_with('-') {
        return Err(NumberError::Negative);
    }
    let end = word
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '.'))
        .map_or(word.len(), |(i, _)| i);
    let (num, rest) = word.split_at(end);
    let (exponent, unit) = split_exponent(rest)?;
    let mut parts = num.split('.');
    let int = parts.next().unwrap_or("");
    let frac = parts.next().unwrap_or("");
    if parts.next().is_some() || (int.is_empty() && frac.is_empty()) {
        return Err(NumberError::Invalid);
    }
    // Trailing zeros of the fraction do not change the value; dropping them
    // keeps the scale small.
    let frac = frac.trim_end_matches('0');
    let mut digits: u128 = 0;
    for c in int.chars().chain(frac.chars()) {
        let d = c.to_digit(10).ok_or(NumberError::Invalid)?;
        digits = digits
            .checked_mul(10)
            .and_then(|v| v.checked_add(d as u128))
            .ok_or(NumberError::TooLarge)?;
    }
    let mut scale = frac.len() as u32;
    if digits != 0 && exponent > 0 {
        // Move the decimal point right: fewer decimals, then more digits.
        let mut e = exponent.unsigned_abs();
        let dropped = e.min(scale);
        scale -= dropped;
        e -= dropped;
        let mult = 10u128.checked_pow(e).ok_or(NumberError::TooLarge)?;
        digits = digits.checked_mul(mult).ok_or(NumberError::TooLarge)?;
    } else if digits != 0 && exponent < 0 {
        scale = scale.saturating_add(exponent.unsigned_abs());
    }
    Ok(Number {
        digits,
        scale,
        unit,
    })
}

/// Splits a decimal exponent (`e6`, `E-3`, `e+2`) from the start of what
/// follows a number's digits; `e` not followed by digits starts the unit.
/// Exponents above 1000 are refused as too large (no value of any unit
/// comes near); below -1000 they are as small as -1001.
fn split_exponent(rest: &str) -> Result<(i32, &str), NumberError> {
    let Some(after) = rest.strip_prefix(['e', 'E']) else {
        return Ok((0, rest));
    };
    let (negative, digits) = match after.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, after.strip_prefix('+').unwrap_or(after)),
    };
    let end = digits
        .char_indices()
        .find(|&(_, c)| !c.is_ascii_digit())
        .map_or(digits.len(), |(i, _)| i);
    if end == 0 {
        return Ok((0, rest));
    }
    let (num, unit) = digits.split_at(end);
    let value = num.parse::<i32>().ok().filter(|v| *v <= 1000);
    match (value, negative) {
        (Some(v), false) => Ok((v, unit)),
        (Some(v), true) => Ok((-v, unit)),
        // Far more decimals than any unit has: never whole (unless zero).
        (None, true) => Ok((-1001, unit)),
        (None, false) => Err(NumberError::TooLarge),
    }
}

/// `n · mult`, which must be a whole number that fits in `u64`.
///
/// `what` names the target unit for the "not a whole number" message.
fn exact(word: &str, n: &Number<'_>, mult: u128, what: &str) -> Result<u64, UnitError> {
    let too_large = || UnitError::new(format!("value '{word}' is too large"));
    let not_whole = || UnitError::new(format!("'{word}' is not a whole number of {what}"));
    let scaled = n.digits.checked_mul(mult).ok_or_else(too_large)?;
    if n.scale == 0 {
        return u64::try_from(scaled).map_err(|_| too_large());
    }
    // mult < 10^20, so a value with more than 20 significant decimals can
    // never be whole (the last decimal digit is non-zero).
    if n.scale > 20 {
        return Err(not_whole());
    }
    let div = 10u128.pow(n.scale);
    if scaled % div != 0 {
        return Err(not_whole());
    }
    u64::try_from(scaled / div).map_err(|_| too_large())
}

fn number_error(word: &str, e: NumberError, invalid: UnitError) -> UnitError {
    match e {
        NumberError::Negative => UnitError::new(format!("negative value '{word}' is not allowed")),
        NumberError::TooLarge => UnitError::new(format!("value '{word}' is too large")),
        NumberError::Spaced => {
            let joined: String = word.split_whitespace().collect();
            UnitError::with_hint(
                format!("space in '{word}'"),
                format!("write the value as one word: {joined}"),
            )
        }
        NumberError::Invalid => invalid,
    }
}

fn lookup(table: &[(&str, u128)], unit: &str) -> Option<u128> {
    let lower = unit.to_lowercase();
    table.iter().find(|(u, _)| *u == lower).map(|&(_, m)| m)
}

/// Rate units and their multiplier to bit/s, as netem's `rate` takes the
/// language's words besides tc's. K, M, G are powers of 1000. The plurals
/// are ipfw's spellings (`1mbits/s`, `10KBytes/s`). `bw` reads more of
/// ipfw's spellings (see `ipfw_rate_unit`).
const RATE_UNITS: &[(&str, u128)] = &[
    ("bit/s", 1),
    ("kbit/s", 1_000),
    ("mbit/s", 1_000_000),
    ("gbit/s", 1_000_000_000),
    ("byte/s", 8),
    ("kbyte/s", 8_000),
    ("mbyte/s", 8_000_000),
    ("gbyte/s", 8_000_000_000),
    ("bits/s", 1),
    ("kbits/s", 1_000),
    ("mbits/s", 1_000_000),
    ("gbits/s", 1_000_000_000),
    ("bytes/s", 8),
    ("kbytes/s", 8_000),
    ("mbytes/s", 8_000_000),
    ("gbytes/s", 8_000_000_000),
];

/// tc's rate units (iproute2 `lib/utils_math.c`, compared without case):
/// `bit`, `kbit` … `tbit` (powers of 1000), `kibit` … `tibit` (powers of
/// 1024), and bytes per second `bps`, `kbps` … `tbps`, `kibps` …
/// `tibps`. In tc, `kbps` is kilo*bytes* per second.
const TC_RATE_UNITS: &[(&str, u128)] = &[
    ("bit", 1),
    ("kbit", 1_000),
    ("mbit", 1_000_000),
    ("gbit", 1_000_000_000),
    ("tbit", 1_000_000_000_000),
    ("kibit", 1 << 10),
    ("mibit", 1 << 20),
    ("gibit", 1 << 30),
    ("tibit", 1 << 40),
    ("bps", 8),
    ("kbps", 8_000),
    ("mbps", 8_000_000),
    ("gbps", 8_000_000_000),
    ("tbps", 8_000_000_000_000),
    ("kibps", 8 << 10),
    ("mibps", 8 << 20),
    ("gibps", 8 << 30),
    ("tibps", 8 << 40),
];

/// tc's rate units, as printed in hints.
pub const TC_RATE_UNIT_NAMES: &str =
    "bit, kbit, mbit, gbit, tbit, kibit, mibit, gibit, bps, kbps, mbps, gbps (bytes per second), kibps, mibps, gibps";

/// The rate units, as printed in hints.
pub const RATE_UNIT_NAMES: &str =
    "bit/s, Kbit/s, Mbit/s, Gbit/s, Byte/s, KByte/s, MByte/s, GByte/s";

/// Splits an optional K/M/G prefix (any case) from a unit.
fn si_prefix(unit: &str) -> (&'static str, &str) {
    let mut chars = unit.chars();
    match chars.next().map(|c| c.to_ascii_lowercase()) {
        Some('k') => ("K", chars.as_str()),
        Some('m') => ("M", chars.as_str()),
        Some('g') => ("G", chars.as_str()),
        _ => ("", unit),
    }
}

/// The rate unit the user probably meant by `unit`, if it is a common
/// spelling we do not accept (`Mbps`, `Mbit/sec`).
///
/// `bps` with a lower-case `b` (`Mbps`, `kbps`, `bps`) has two meanings:
/// ipfw reads it as bits per second, tc as *bytes* per second. The hint
/// names both rather than guessing.
fn rate_hint(unit: &str) -> Option<String> {
    let (prefix, rest) = si_prefix(unit);
    let lower = rest.to_lowercase();
    let upper_b = rest.starts_with('B');
    if lower == "bps" && !upper_b {
        return Some(format!(
            "did you mean {prefix}bit/s or {prefix}Byte/s? '{unit}' is {prefix}bit/s to ipfw, {prefix}Byte/s to tc (netem's rate takes tc's words)"
        ));
    }
    let bytes = match lower.as_str() {
        "byte" | "bytes" | "bytes/s" | "byte/sec" | "bytes/sec" | "byteps" => true,
        "bps" | "b/s" | "b" | "b/sec" => upper_b,
        "bit" | "bits" | "bits/s" | "bit/sec" | "bits/sec" | "" => false,
        _ => return None,
    };
    if prefix.is_empty() && lower.is_empty() {
        return None;
    }
    Some(format!(
        "did you mean {prefix}{}?",
        if bytes { "Byte/s" } else { "bit/s" }
    ))
}

/// Parses a link bandwidth: `10Mbit/s`, `1.5Mbit/s`, `640Kbit/s`,
/// `1MByte/s`; a bare number is bit/s (ipfw). `unlimited` (any case) is
/// no limit, and so is zero, as in dummynet (`bw 0`); a rate prints back
/// as `unlimited` ([`Rate`]'s `Display`), so `bw 0` reads back as what it
/// means.
pub fn parse_rate(word: &str) -> Result<Rate, UnitError> {
    if word.eq_ignore_ascii_case("unlimited") {
        return Ok(Rate::UNLIMITED);
    }
    let n = split_number(word).map_err(|e| {
        number_error(
            word,
            e,
            UnitError::with_hint(
                format!("invalid rate '{word}'"),
                "rates are written like 10Mbit/s",
            ),
        )
    })?;
    let mult = ipfw_rate_unit(word, n.unit)?;
    exact(word, &n, mult, "bit/s").map(Rate::from_bps)
}

/// The multiplier to bit/s of a rate unit as FreeBSD's dummynet reads it
/// (`sbin/ipfw/dummynet.c`, `read_bandwidth`): an optional `K`, `M` or `G`
/// (any case, powers of 1000), then bytes if what follows starts with `B`
/// but not `Bi`, or with `by`; bits otherwise. So `1Mbit/s`, `1Mb/s`,
/// `1Mbits`, `1M` and `1MBit/s` are bits, `1MB/s`, `1MBps`, `1Mbyte/s`
/// and `1KBytes/s` bytes. The words after the prefix are those of ipfw(8)
/// (`bit`, `bits`, `b`, `Byte`, `Bytes`, `B`, `byte`, `bytes`, each with or
/// without `/s`, and `Bps`); dummynet reads past anything else, which is
/// refused here. Two spellings dummynet reads against what they seem to
/// say are refused with a hint: `BIT/s` (a capital `B` before a capital
/// `I` is bytes to dummynet) and `bps` with a lower-case `b` (bits to
/// ipfw, bytes to tc).
fn ipfw_rate_unit(word: &str, unit: &str) -> Result<u128, UnitError> {
    if unit.is_empty() {
        return Ok(1);
    }
    let (prefix, rest) = si_prefix(unit);
    let scale: u128 = match prefix {
        "K" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        _ => 1,
    };
    let unknown = || {
        let hint =
            rate_hint(unit).unwrap_or_else(|| format!("known rate units: {RATE_UNIT_NAMES}"));
        UnitError::with_hint(format!("unknown unit '{unit}' in '{word}'"), hint)
    };
    if rest.is_empty() {
        return if prefix.is_empty() {
            Err(unknown())
        } else {
            Ok(scale)
        };
    }
    if rest.starts_with("BI") {
        return Err(UnitError::with_hint(
            format!("ambiguous unit '{unit}' in '{word}'"),
            format!(
                "dummynet reads a capital B not followed by a small i as bytes: write {prefix}bit/s or {prefix}Byte/s"
            ),
        ));
    }
    let (bytes, after) = if let Some(after) = rest.strip_prefix('B') {
        (!after.starts_with('i'), after)
    } else if let Some(after) = rest.strip_prefix('b') {
        (after.starts_with('y'), after)
    } else {
        return Err(unknown());
    };
    // What follows the first letter, compared without case.
    let after = after.to_ascii_lowercase();
    let known = if after == "ps" {
        // `Bps` is bytes to ipfw and to tc; `bps` is not known (two
        // meanings, see `rate_hint`).
        bytes
    } else {
        let word = after.strip_suffix("/s").unwrap_or(&after);
        if bytes {
            ["", "yte", "ytes"].contains(&word)
        } else {
            ["", "it", "its"].contains(&word)
        }
    };
    if !known {
        return Err(unknown());
    }
    Ok(if bytes { scale * 8 } else { scale })
}

/// Parses a rate in tc's dialect, as netem's `rate` takes it (tc(8),
/// iproute2 `get_rate64`): `100kbit`, `10mbit`, `1gbit`, `5mibit`, and
/// bytes per second `10mbps` (= 80 Mbit/s: in tc, `bps` is bytes); units
/// compared without case; a bare number is bit/s. The language's own
/// spellings (`10Mbit/s`, `1MByte/s`), which mean the same in both
/// dialects, are accepted too. A rate as a percentage of a device's speed
/// (`rate 10%`) is refused: a pipe has no device speed.
pub fn parse_tc_rate(word: &str) -> Result<Rate, UnitError> {
    let n = split_number(word).map_err(|e| {
        number_error(
            word,
            e,
            UnitError::with_hint(
                format!("invalid rate '{word}'"),
                "tc's rates are written like 10mbit or 100kbit",
            ),
        )
    })?;
    if n.unit == "%" {
        return Err(UnitError::with_hint(
            format!("rate '{word}' is a percentage of a device's speed"),
            "a pipe has no device: write the rate, e.g. 10mbit",
        ));
    }
    let mult = if n.unit.is_empty() {
        1
    } else {
        match lookup(TC_RATE_UNITS, n.unit).or_else(|| lookup(RATE_UNITS, n.unit)) {
            Some(m) => m,
            None => {
                return Err(UnitError::with_hint(
                    format!("unknown unit '{}' in '{word}'", n.unit),
                    format!("tc's rate units: {TC_RATE_UNIT_NAMES}"),
                ))
            }
        }
    };
    let bps = exact(word, &n, mult, "bit/s")?;
    if bps == 0 {
        return Err(UnitError::with_hint(
            format!("rate '{word}' is zero"),
            "netem's rate must be above zero; leave it out for no limit",
        ));
    }
    Ok(Rate::from_bps(bps))
}

/// Formats a rate in tc's words with the largest exact unit: `80Mbit`,
/// `5Kbit`, `1Gbit`, `1234bit` (what `tc qdisc show` prints).
pub fn format_tc_rate(r: Rate) -> String {
    let b = r.bps();
    for (div, unit) in [
        (1_000_000_000_000, "Tbit"),
        (1_000_000_000, "Gbit"),
        (1_000_000, "Mbit"),
        (1_000, "Kbit"),
    ] {
        if b != 0 && b.is_multiple_of(div) {
            return format!("{}{unit}", b / div);
        }
    }
    format!("{b}bit")
}

/// Duration units and their multiplier to nanoseconds; `sec`, `msec`,
/// `usec`, `nsec` (and plurals) are tc's spellings, which mean the same.
const DURATION_UNITS: &[(&str, u128)] = &[
    ("s", 1_000_000_000),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ns", 1),
    ("sec", 1_000_000_000),
    ("secs", 1_000_000_000),
    ("msec", 1_000_000),
    ("msecs", 1_000_000),
    ("usec", 1_000),
    ("usecs", 1_000),
    ("nsec", 1),
    ("nsecs", 1),
];

fn duration_hint(unit: &str) -> String {
    let h = match unit.to_lowercase().as_str() {
        "second" | "seconds" => "did you mean s?",
        "millisecond" | "milliseconds" => "did you mean ms?",
        "microsecond" | "microseconds" => "did you mean us?",
        "nanosecond" | "nanoseconds" => "did you mean ns?",
        "m" | "min" | "mins" | "minute" | "minutes" => {
            "did you mean ms? (minutes are written in seconds, e.g. 60s)"
        }
        "h" | "hour" | "hours" => "hours are written in seconds, e.g. 3600s",
        _ => "known duration units: s, ms, us, ns",
    };
    h.to_string()
}

fn duration_with(word: &str, bare: Option<u128>) -> Result<Duration, UnitError> {
    let n = split_number(word).map_err(|e| {
        number_error(
            word,
            e,
            UnitError::with_hint(
                format!("invalid duration '{word}'"),
                "durations are written like 20ms",
            ),
        )
    })?;
    let mult = if n.unit.is_empty() {
        match bare {
            Some(m) => m,
            None => {
                return Err(UnitError::with_hint(
                    format!("missing unit in '{word}'"),
                    format!("write e.g. {word}s or {word}ms"),
                ))
            }
        }
    } else {
        match lookup(DURATION_UNITS, n.unit) {
            Some(m) => m,
            None => {
                return Err(UnitError::with_hint(
                    format!("unknown unit '{}' in '{word}'", n.unit),
                    duration_hint(n.unit),
                ))
            }
        }
    };
    exact(word, &n, mult, "nanoseconds").map(Duration::from_nanos)
}

/// Parses a pipe delay: `30ms`, `1.5s`, `250us`, `100ns`; a bare number is
/// milliseconds (ipfw).
pub fn parse_delay(word: &str) -> Result<Duration, UnitError> {
    duration_with(word, Some(1_000_000))
}

/// Parses a duration whose unit is required: `10s`, `500ms`, `20us`, `7ns`.
pub fn parse_duration(word: &str) -> Result<Duration, UnitError> {
    duration_with(word, None)
}

/// Parses a time in tc's dialect, as netem's `slot` takes it: the units
/// of [`parse_delay`] (tc's `sec`, `msec`, `usec`, `nsec` among them); a
/// bare number is nanoseconds, as iproute2's `get_time64` reads it
/// (tc(8) says microseconds; the code is what netem users get).
pub fn parse_tc_time(word: &str) -> Result<Duration, UnitError> {
    duration_with(word, Some(1))
}

/// Parses a point in time of an experiment (`pipelab topo run`), counted
/// from its start: `1.5s`, `500ms`, `250us`; a bare number is seconds
/// (`10` = `10s`), the convention of timed command files, where a time
/// stands alone at the start of a line.
pub fn parse_time(word: &str) -> Result<Duration, UnitError> {
    duration_with(word, Some(1_000_000_000))
}

/// Size units and their multiplier to bytes. K and M are powers of 1024, as
/// in ipfw's dummynet (`queue 100KB` is 102400 bytes).
/// `bytes`, `Kbytes`, `KBytes` are ipfw's spellings (`queue 50KBytes`).
const SIZE_UNITS: &[(&str, u128)] = &[
    ("b", 1),
    ("kb", 1 << 10),
    ("mb", 1 << 20),
    ("gb", 1 << 30),
    ("kib", 1 << 10),
    ("mib", 1 << 20),
    ("gib", 1 << 30),
    ("byte", 1),
    ("bytes", 1),
    ("kbyte", 1 << 10),
    ("kbytes", 1 << 10),
    ("mbyte", 1 << 20),
    ("mbytes", 1 << 20),
    ("gbyte", 1 << 30),
    ("gbytes", 1 << 30),
];

/// tc's size units (iproute2 `get_size`, compared without case): `b`,
/// `k`/`kb`, `m`/`mb`, `g`/`gb` (powers of 1024), `kbit`, `mbit`, `gbit`
/// (1024-based bits, i.e. `/8`).
const TC_SIZE_UNITS: &[(&str, u128)] = &[
    ("b", 1),
    ("k", 1 << 10),
    ("kb", 1 << 10),
    ("m", 1 << 20),
    ("mb", 1 << 20),
    ("g", 1 << 30),
    ("gb", 1 << 30),
    ("kbit", 1 << 7),
    ("mbit", 1 << 17),
    ("gbit", 1 << 27),
];

/// Parses a size in tc's dialect, as netem's `slot ... bytes N` takes it:
/// `1500`, `64k`, `1mb` (K = 1024, as tc's `get_size`); a bare number is
/// bytes.
pub fn parse_tc_size(word: &str) -> Result<u64, UnitError> {
    let n = split_number(word).map_err(|e| {
        number_error(
            word,
            e,
            UnitError::with_hint(
                format!("invalid size '{word}'"),
                "sizes are written like 1500 or 64k",
            ),
        )
    })?;
    let mult = if n.unit.is_empty() {
        1
    } else {
        lookup(TC_SIZE_UNITS, n.unit).ok_or_else(|| {
            UnitError::with_hint(
                format!("unknown unit '{}' in '{word}'", n.unit),
                "tc's size units: b, k, kb, m, mb, g, gb, kbit, mbit, gbit",
            )
        })?
    };
    exact(word, &n, mult, "bytes")
}

fn size_hint(unit: &str) -> String {
    let (prefix, rest) = si_prefix(unit);
    match rest.to_lowercase().as_str() {
        "" | "byte" | "bytes" => format!("did you mean {prefix}B?"),
        "bit" | "bits" | "bit/s" | "bps" => {
            "sizes are in bytes (KB = 1024 bytes), e.g. 100KB".to_string()
        }
        _ => "known size units: B, KB, MB, GB, KiB, MiB, GiB".to_string(),
    }
}

fn parse_bytes(word: &str) -> Result<(Number<'_>, Option<u128>), UnitError> {
    let n = split_number(word).map_err(|e| {
        number_error(
            word,
            e,
            UnitError::with_hint(
                format!("invalid size '{word}'"),
                "sizes are written like 1500B or 100KB",
            ),
        )
    })?;
    if n.unit.is_empty() {
        return Ok((n, None));
    }
    match lookup(SIZE_UNITS, n.unit) {
        Some(m) => Ok((n, Some(m))),
        None => Err(UnitError::with_hint(
            format!("unknown unit '{}' in '{word}'", n.unit),
            size_hint(n.unit),
        )),
    }
}

/// Parses a queue bound: a bare number is slots (`queue 20`), a size is
/// bytes (`queue 100KB`, K = 1024 as in ipfw; also `KiB`, `MiB`). As
/// dummynet reads it (`sbin/ipfw/dummynet.c`, `ipfw_config_pipe`,
/// `TOK_QUEUE`), a `K` alone is KB too (`queue 100K` is 102400 bytes).
pub fn parse_queue(word: &str) -> Result<QueueLimit, UnitError> {
    if let Ok(n) = split_number(word) {
        if n.unit == "K" || n.unit == "k" {
            return exact(word, &n, 1 << 10, "bytes").map(QueueLimit::Bytes);
        }
    }
    let parsed = parse_bytes(word).map_err(|e| match split_number(word) {
        // `10slots`, `10pkts`: slots are written as a bare number.
        Ok(n)
            if ["slot", "slots", "pkt", "pkts", "packet", "packets"]
                .contains(&n.unit.to_ascii_lowercase().as_str()) =>
        {
            let number = &word[..word.len() - n.unit.len()];
            UnitError::with_hint(
                e.message,
                format!("a queue in slots is a bare number: write {number}"),
            )
        }
        _ => e,
    })?;
    match parsed {
        (n, None) => {
            let slots = exact(word, &n, 1, "slots")?;
            u32::try_from(slots)
                .map(QueueLimit::Slots)
                .map_err(|_| UnitError::new(format!("value '{word}' is too large")))
        }
        (n, Some(m)) => exact(word, &n, m, "bytes").map(QueueLimit::Bytes),
    }
}

/// Parses a size in bytes: `1500B`, `1KB` (1024), `1500` (bare = bytes).
pub fn parse_size(word: &str) -> Result<u64, UnitError> {
    let (n, m) = parse_bytes(word)?;
    exact(word, &n, m.unwrap_or(1), "bytes")
}

/// Parses a burst size as FreeBSD's `expand_number(3)` reads it (which
/// `sbin/ipfw/dummynet.c`, `ipfw_config_pipe`, `TOK_BURST`, calls): a
/// bare number is bytes, `K`, `M`, `G`, `T` (any case, with or without
/// a `B` after them) are powers of 1024; and the size words of
/// [`parse_size`] (`64KBytes`, `1KiB`).
pub fn parse_burst(word: &str) -> Result<u64, UnitError> {
    if let Ok(n) = split_number(word) {
        let mult = match n.unit.to_ascii_lowercase().as_str() {
            "k" => Some(1u128 << 10),
            "m" => Some(1 << 20),
            "g" => Some(1 << 30),
            "t" | "tb" => Some(1 << 40),
            _ => None,
        };
        if let Some(m) = mult {
            return exact(word, &n, m, "bytes");
        }
    }
    parse_size(word)
}

/// Formats a byte count with the largest exact unit: `100KB`, `1MB`, `1500B`.
pub fn format_size(bytes: u64) -> String {
    if bytes != 0 && bytes & ((1 << 20) - 1) == 0 {
        format!("{}MB", bytes >> 20)
    } else if bytes != 0 && bytes & ((1 << 10) - 1) == 0 {
        format!("{}KB", bytes >> 10)
    } else {
        format!("{bytes}B")
    }
}

/// Formats a queue bound as it is written: `50` (slots) or `100KB`.
pub fn format_queue(q: QueueLimit) -> String {
    match q {
        QueueLimit::Slots(n) => n.to_string(),
        QueueLimit::Bytes(b) => format_size(b),
    }
}

/// Parses a probability: `0.05`, `1`, `0` or a percentage `5%`.
pub fn parse_probability(word: &str) -> Result<Probability, UnitError> {
    let n = split_number(word).map_err(|e| {
        number_error(
            word,
            e,
            UnitError::with_hint(
                format!("invalid probability '{word}'"),
                "write a number between 0 and 1, or a percentage like 5%",
            ),
        )
    })?;
    let mult = match n.unit {
        "" => 1_000_000_000,
        "%" => 10_000_000,
        other => {
            return Err(UnitError::with_hint(
                format!("unknown unit '{other}' in '{word}'"),
                "write a number between 0 and 1, or a percentage like 5%",
            ))
        }
    };
    let outside = || UnitError::new(format!("probability '{word}' is outside 0..1"));
    let ppb = exact(word, &n, mult, "billionths").map_err(|e| {
        if e.message.ends_with("too large") {
            outside()
        } else {
            UnitError::new(format!(
                "probability '{word}' has more than 9 decimal places"
            ))
        }
    })?;
    u32::try_from(ppb)
        .ok()
        .and_then(Probability::from_ppb)
        .ok_or_else(outside)
}

/// Parses the loss rate of a topology link, as ModelNet's GML files and
/// pipelab's topology commands write it: a probability (`0.01`) or a
/// percentage (`1%`). A pipe's `loss` in the command language takes only
/// a percentage ([`parse_percent`], netem's); a link's `loss` is the
/// topology's own convention, and a bare number above 1 is refused with a
/// hint rather than read as a percentage.
pub fn parse_loss_rate(word: &str) -> Result<Probability, UnitError> {
    parse_probability(word).map_err(|e| {
        let bare_above_one = e.message.ends_with("outside 0..1")
            && split_number(word).is_ok_and(|n| n.unit.is_empty());
        if bare_above_one {
            UnitError::with_hint(
                e.message,
                format!("a loss rate is a probability (0.01) or a percentage ({word}%)"),
            )
        } else {
            e
        }
    })
}

/// Parses a netem percentage: `5%`, `0.5%`, `100%`, or a bare number
/// read as tc reads it, in percent (`loss 5` is 5 %, `loss 0.1` is
/// 0.1 %; iproute2 `parse_percent`). Only netem's own words (`loss`,
/// `duplicate`, `corrupt`, `reorder`, correlations) take it: ipfw's `plr`
/// and `prob` are probabilities ([`parse_probability`]).
pub fn parse_percent(word: &str) -> Result<Probability, UnitError> {
    const HINT: &str = "write a percentage like 5%";
    let n = split_number(word).map_err(|e| {
        number_error(
            word,
            e,
            UnitError::with_hint(format!("invalid percentage '{word}'"), HINT),
        )
    })?;
    match n.unit {
        "%" | "" => {}
        other => {
            return Err(UnitError::with_hint(
                format!("unknown unit '{other}' in '{word}'"),
                HINT,
            ))
        }
    }
    let over = || UnitError::new(format!("percentage '{word}' is more than 100%"));
    let ppb = exact(word, &n, 10_000_000, "billionths").map_err(|e| {
        if e.message.ends_with("too large") {
            over()
        } else {
            UnitError::new(format!(
                "percentage '{word}' has more than 7 decimal places"
            ))
        }
    })?;
    u32::try_from(ppb)
        .ok()
        .and_then(Probability::from_ppb)
        .ok_or_else(over)
}

/// Formats a probability as a percentage with the shortest exact decimal:
/// `5%`, `0.5%`, `100%`.
pub fn format_percent(p: Probability) -> String {
    struct Pct(u32);
    impl fmt::Display for Pct {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write_decimal(f, self.0 as u64, 7)?;
            f.write_str("%")
        }
    }
    Pct(p.ppb()).to_string()
}

/// A bit error rate in `[0, 1)`, kept as the decimal it was written as
/// (`mantissa · 10^exponent`, the mantissa without trailing zeros) so that
/// it prints back exactly: `1e-6`, `2.5e-7`, `0`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ber {
    mantissa: u64,
    exponent: i32,
}

impl Ber {
    /// The smallest decimal exponent accepted (far below any real link).
    pub const MIN_EXPONENT: i32 = -300;

    /// `mantissa · 10^exponent`; `None` unless it is in `[0, 1)` and not
    /// below `1e-300`.
    pub fn new(mut mantissa: u64, mut exponent: i32) -> Option<Ber> {
        if mantissa == 0 {
            return Some(Ber::default());
        }
        while mantissa.is_multiple_of(10) {
            mantissa /= 10;
            exponent = exponent.checked_add(1)?;
        }
        let digits = mantissa.to_string().len() as i32;
        let lead = exponent.checked_add(digits - 1)?;
        (Self::MIN_EXPONENT..0)
            .contains(&lead)
            .then_some(Ber { mantissa, exponent })
    }

    /// The rate as a float (for the engine's model).
    pub fn as_f64(self) -> f64 {
        if self.mantissa == 0 {
            return 0.0;
        }
        format!("{}e{}", self.mantissa, self.exponent)
            .parse()
            .unwrap_or(0.0)
    }
}

impl fmt::Display for Ber {
    /// Scientific notation with the shortest exact mantissa: `1e-6`,
    /// `2.5e-7`; zero is `0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mantissa == 0 {
            return f.write_str("0");
        }
        let digits = self.mantissa.to_string();
        let lead = self.exponent + digits.len() as i32 - 1;
        let (first, rest) = digits.split_at(1);
        if rest.is_empty() {
            write!(f, "{first}e{lead}")
        } else {
            write!(f, "{first}.{rest}e{lead}")
        }
    }
}

/// Parses a bit error rate: `1e-6`, `2.5E-7`, `0.000001`, `0`; it must be
/// in `[0, 1)`.
pub fn parse_ber(word: &str) -> Result<Ber, UnitError> {
    let invalid = || {
        UnitError::with_hint(
            format!("invalid bit error rate '{word}'"),
            "write a number below 1, e.g. 1e-6 or 0.000001",
        )
    };
    let (num, exp) = match word.find(['e', 'E']) {
        Some(i) => (&word[..i], Some(&word[i + 1..])),
        None => (word, None),
    };
    let n = split_number(num).map_err(|e| number_error(word, e, invalid()))?;
    if !n.unit.is_empty() {
        return Err(invalid());
    }
    let exp: i64 = match exp {
        None => 0,
        Some(e) => {
            let digits = e.strip_prefix(['-', '+']).unwrap_or(e);
            if !is_ascii_digits(digits) || digits.len() > 6 {
                return Err(invalid());
            }
            e.parse().map_err(|_| invalid())?
        }
    };
    let mut digits = n.digits;
    let mut exponent = exp - n.scale as i64;
    if digits == 0 {
        return Ok(Ber::default());
    }
    while digits.is_multiple_of(10) {
        digits /= 10;
        exponent += 1;
    }
    let mantissa = u64::try_from(digits)
        .ok()
        .filter(|&m| m < 1_000_000_000_000_000_000)
        .ok_or_else(|| UnitError::new(format!("bit error rate '{word}' has too many digits")))?;
    let exponent = i32::try_from(exponent).unwrap_or(i32::MIN);
    Ber::new(mantissa, exponent).ok_or_else(|| {
        let lead = exponent as i64 + mantissa.to_string().len() as i64 - 1;
        if lead >= 0 {
            UnitError::new(format!("bit error rate '{word}' is not below 1"))
        } else {
            UnitError::new(format!("bit error rate '{word}' is below 1e-300"))
        }
    })
}

fn is_ascii_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Packet-rate units and their multiplier to milli-packets per second.
const PACKET_RATE_UNITS: &[(&str, u128)] =
    &[("pps", 1_000), ("kpps", 1_000_000), ("mpps", 1_000_000_000)];

/// True if `word` ends in a packet-rate unit (`pps`, `kpps`, `Mpps`).
pub fn is_packet_rate(word: &str) -> bool {
    match split_number(word) {
        Ok(n) => lookup(PACKET_RATE_UNITS, n.unit).is_some(),
        Err(_) => false,
    }
}

/// Parses a packet rate: `1000pps`, `1.5kpps`, `0.5pps`, `2Mpps`.
pub fn parse_packet_rate(word: &str) -> Result<PacketRate, UnitError> {
    let n = split_number(word).map_err(|e| {
        number_error(
            word,
            e,
            UnitError::with_hint(
                format!("invalid packet rate '{word}'"),
                "packet rates are written like 1000pps",
            ),
        )
    })?;
    let Some(mult) = lookup(PACKET_RATE_UNITS, n.unit) else {
        return Err(UnitError::with_hint(
            format!("unknown unit '{}' in '{word}'", n.unit),
            "known packet-rate units: pps, kpps, Mpps",
        ));
    };
    exact(word, &n, mult, "milli-packets/s").map(PacketRate::from_millipps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(w: &str) -> u64 {
        parse_rate(w)
            .map(Rate::bps)
            .unwrap_or_else(|e| panic!("{w}: {e}"))
    }
    fn ns(w: &str) -> u64 {
        parse_delay(w)
            .map(Duration::as_nanos)
            .unwrap_or_else(|e| panic!("{w}: {e}"))
    }
    fn err<T: fmt::Debug>(r: Result<T, UnitError>) -> String {
        match r {
            Ok(v) => panic!("expected an error, got {v:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn every_rate_unit_scales_by_1000_and_bytes_by_8() {
        assert_eq!(rate("7bit/s"), 7);
        assert_eq!(rate("7Kbit/s"), 7_000);
        assert_eq!(rate("7Mbit/s"), 7_000_000);
        assert_eq!(rate("7Gbit/s"), 7_000_000_000);
        assert_eq!(rate("7Byte/s"), 56);
        assert_eq!(rate("7KByte/s"), 56_000);
        assert_eq!(rate("7MByte/s"), 56_000_000);
        assert_eq!(rate("7GByte/s"), 56_000_000_000);
        assert_eq!(rate("1234"), 1234, "bare number is bit/s");
        assert_eq!(rate("0"), 0);
    }

    /// `bw 0` is dummynet's "no limit": zero, `0Mbit/s` and the word
    /// `unlimited` are one rate, and it prints as the word.
    #[test]
    fn zero_and_unlimited_are_no_limit_and_print_as_unlimited() {
        for w in ["0", "0bit/s", "0Mbit/s", "unlimited", "UNLIMITED"] {
            let r = parse_rate(w).expect(w);
            assert!(r.is_unlimited(), "{w}");
            assert_eq!(r.to_string(), "unlimited", "{w}");
        }
        assert_eq!(
            err(parse_rate("unlimitd")),
            "invalid rate 'unlimitd': rates are written like 10Mbit/s"
        );
    }

    /// The prefix and the words after the first letter are read without
    /// case; the first letter is `B` (bytes) or `b` (bits), as dummynet's
    /// `read_bandwidth` reads it.
    #[test]
    fn rate_units_are_case_insensitive_but_for_the_b() {
        assert_eq!(rate("3mbit/s"), 3_000_000);
        assert_eq!(rate("3MbIT/S"), 3_000_000);
        assert_eq!(rate("3kbyte/S"), 24_000);
        assert_eq!(rate("3KBYTE/S"), 24_000);
        // `BI`: dummynet reads a B without a small i after it as bytes.
        assert_eq!(
            err(parse_rate("3MBIT/S")),
            "ambiguous unit 'MBIT/S' in '3MBIT/S': dummynet reads a capital B not followed by a small i as bytes: write Mbit/s or MByte/s"
        );
    }

    /// Every spelling dummynet's `read_bandwidth` reads
    /// (`sbin/ipfw/dummynet.c`): K, M, G are 1000s; bytes when the unit
    /// starts with `B` but not `Bi`, or with `by`.
    #[test]
    fn freebsd_rate_spellings() {
        for (w, bps) in [
            ("1Mbit/s", 1_000_000),
            ("1Mb/s", 1_000_000),
            ("1Mb", 1_000_000),
            ("1Mbit", 1_000_000),
            ("1Mbits", 1_000_000),
            ("1M", 1_000_000),
            ("1m", 1_000_000),
            ("1MBit/s", 1_000_000),
            ("1MBits/s", 1_000_000),
            ("1MB/s", 8_000_000),
            ("1MB", 8_000_000),
            ("1MBps", 8_000_000),
            ("1Mbyte/s", 8_000_000),
            ("1Mbytes", 8_000_000),
            ("1MByte", 8_000_000),
            ("1Kbytes/s", 8_000),
            ("1KB/s", 8_000),
            ("1K", 1_000),
            ("1k", 1_000),
            ("1Kb/s", 1_000),
            ("1G", 1_000_000_000),
            ("2Gb/s", 2_000_000_000),
            ("1000bit/s", 1_000),
            ("1000bits/s", 1_000),
            ("1000b/s", 1_000),
            ("1000b", 1_000),
            ("1000", 1_000),
            ("1000B/s", 8_000),
            ("1000B", 8_000),
            ("1000Bps", 8_000),
            ("1000bytes/s", 8_000),
            ("1000byte", 8_000),
        ] {
            assert_eq!(rate(w), bps, "{w}");
        }
    }

    #[test]
    fn decimal_rates_are_exact() {
        assert_eq!(rate("1.5Mbit/s"), 1_500_000);
        assert_eq!(rate("0.001Kbit/s"), 1);
        assert_eq!(rate("2.50Mbit/s"), 2_500_000);
        assert_eq!(rate(".5Kbit/s"), 500);
        assert_eq!(
            err(parse_rate("0.5bit/s")),
            "'0.5bit/s' is not a whole number of bit/s"
        );
        assert_eq!(
            err(parse_rate("1.0000000001Gbit/s")),
            "'1.0000000001Gbit/s' is not a whole number of bit/s"
        );
    }

    #[test]
    fn rate_mistakes_get_hints() {
        // Two meanings (ipfw: bits, tc: bytes): the hint names both.
        assert_eq!(
            err(parse_rate("10Mbps")),
            "unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)"
        );
        assert_eq!(
            err(parse_rate("10kbps")),
            "unknown unit 'kbps' in '10kbps': did you mean Kbit/s or KByte/s? 'kbps' is Kbit/s to ipfw, KByte/s to tc (netem's rate takes tc's words)"
        );
        // One meaning in both dialects: `MBps` is megabytes to ipfw too.
        assert_eq!(rate("10MBps"), 80_000_000);
        assert_eq!(rate("1mbits/s"), 1_000_000, "ipfw's plural");
        assert_eq!(rate("64Kbits/s"), 64_000);
        assert_eq!(rate("10KBytes/s"), 80_000);
        assert_eq!(rate("10MB/s"), 80_000_000, "dummynet's MB/s");
        assert_eq!(rate("10mbit"), 10_000_000, "dummynet's mbit");
        assert_eq!(rate("10Gbits"), 10_000_000_000, "dummynet's Gbits");
        assert_eq!(
            err(parse_rate("10Mbit/sec")),
            "unknown unit 'Mbit/sec' in '10Mbit/sec': did you mean Mbit/s?"
        );
        assert_eq!(
            err(parse_rate("10Mibit/s")),
            format!("unknown unit 'Mibit/s' in '10Mibit/s': known rate units: {RATE_UNIT_NAMES}")
        );
        assert_eq!(
            err(parse_rate("10furlongs")),
            format!("unknown unit 'furlongs' in '10furlongs': known rate units: {RATE_UNIT_NAMES}")
        );
    }

    #[test]
    fn rate_overflow_and_negatives_are_errors() {
        assert_eq!(
            err(parse_rate("99999999999Gbit/s")),
            "value '99999999999Gbit/s' is too large"
        );
        assert_eq!(
            err(parse_rate("999999999999999999999999999999999999999999")),
            "value '999999999999999999999999999999999999999999' is too large"
        );
        assert_eq!(
            err(parse_rate("-1Mbit/s")),
            "negative value '-1Mbit/s' is not allowed"
        );
        assert_eq!(
            err(parse_rate("1.2.3Mbit/s")),
            "invalid rate '1.2.3Mbit/s': rates are written like 10Mbit/s"
        );
        assert_eq!(
            err(parse_rate("Mbit/s")),
            "invalid rate 'Mbit/s': rates are written like 10Mbit/s"
        );
    }

    /// `1e30bit/s` used to be read as 1 with the unit `e30bit/s`.
    #[test]
    fn exponents_are_numbers_within_range_or_too_large() {
        assert_eq!(rate("1e6bit/s"), 1_000_000);
        assert_eq!(rate("2.5e3Kbit/s"), 2_500_000);
        assert_eq!(rate("1E+9"), 1_000_000_000);
        assert_eq!(rate("1e19bit/s"), 10_000_000_000_000_000_000);
        assert_eq!(ns("1e-3s"), 1_000_000);
        assert_eq!(ns("0e999ms"), 0);
        assert_eq!(parse_size("1e3KB"), Ok(1_024_000));
        assert_eq!(
            err(parse_rate("1e30bit/s")),
            "value '1e30bit/s' is too large"
        );
        assert_eq!(err(parse_rate("1e20")), "value '1e20' is too large");
        assert_eq!(
            err(parse_rate("1e99999Gbit/s")),
            "value '1e99999Gbit/s' is too large"
        );
        assert_eq!(
            err(parse_rate("1e-1bit/s")),
            "'1e-1bit/s' is not a whole number of bit/s"
        );
        assert_eq!(
            err(parse_rate("1e-9999bit/s")),
            "'1e-9999bit/s' is not a whole number of bit/s"
        );
        // `e` not followed by digits is the unit's.
        assert_eq!(
            err(parse_rate("1ebit/s")),
            format!("unknown unit 'ebit/s' in '1ebit/s': known rate units: {RATE_UNIT_NAMES}")
        );
        assert_eq!(
            parse_probability("5e-2").map(Probability::ppb),
            Ok(50_000_000)
        );
    }

    #[test]
    fn every_duration_unit() {
        assert_eq!(ns("2s"), 2_000_000_000);
        assert_eq!(ns("2ms"), 2_000_000);
        assert_eq!(ns("2us"), 2_000);
        assert_eq!(ns("2µs"), 2_000);
        assert_eq!(ns("2ns"), 2);
        assert_eq!(ns("2MS"), 2_000_000);
        assert_eq!(ns("2Us"), 2_000);
        assert_eq!(ns("30"), 30_000_000, "bare delay is ms");
        assert_eq!(ns("20.8ms"), 20_800_000);
        assert_eq!(ns("1.5s"), 1_500_000_000);
        assert_eq!(
            err(parse_delay("1.5ns")),
            "'1.5ns' is not a whole number of nanoseconds"
        );
        assert_eq!(
            err(parse_delay("-5ms")),
            "negative value '-5ms' is not allowed"
        );
        assert_eq!(
            err(parse_delay("99999999999s")),
            "value '99999999999s' is too large"
        );
        // tc's spellings mean the same in both dialects.
        assert_eq!(ns("5sec"), 5_000_000_000);
        assert_eq!(ns("5msecs"), 5_000_000);
        assert_eq!(ns("5usec"), 5_000);
        assert_eq!(
            err(parse_delay("5seconds")),
            "unknown unit 'seconds' in '5seconds': did you mean s?"
        );
        assert_eq!(
            err(parse_duration("10")),
            "missing unit in '10': write e.g. 10s or 10ms"
        );
    }

    #[test]
    fn spaces_inside_a_value_are_refused_with_a_hint() {
        assert_eq!(
            err(parse_rate("10 Mbit/s")),
            "space in '10 Mbit/s': write the value as one word: 10Mbit/s"
        );
        assert_eq!(
            err(parse_delay(" 5ms")),
            "space in ' 5ms': write the value as one word: 5ms"
        );
        assert_eq!(
            err(parse_probability("1 %")),
            "space in '1 %': write the value as one word: 1%"
        );
    }

    #[test]
    fn times_take_seconds_bare() {
        assert_eq!(parse_time("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_time("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_time("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(
            err(parse_time("1x")),
            "unknown unit 'x' in '1x': known duration units: s, ms, us, ns"
        );
        assert_eq!(
            err(parse_time("-1s")),
            "negative value '-1s' is not allowed"
        );
    }

    #[test]
    fn loss_rates_are_probabilities_or_percentages() {
        assert_eq!(parse_loss_rate("0.01").map(|p| p.ppb()), Ok(10_000_000));
        assert_eq!(parse_loss_rate("1%").map(|p| p.ppb()), Ok(10_000_000));
        assert_eq!(parse_loss_rate("0"), Ok(Probability::ZERO));
        assert_eq!(
            err(parse_loss_rate("5")),
            "probability '5' is outside 0..1: a loss rate is a probability (0.01) or a percentage (5%)"
        );
        assert_eq!(
            err(parse_loss_rate("150%")),
            "probability '150%' is outside 0..1"
        );
        assert_eq!(
            err(parse_loss_rate("1x")),
            "unknown unit 'x' in '1x': write a number between 0 and 1, or a percentage like 5%"
        );
    }

    #[test]
    fn sizes_and_queues() {
        assert_eq!(parse_queue("20"), Ok(QueueLimit::Slots(20)));
        assert_eq!(parse_queue("100KB"), Ok(QueueLimit::Bytes(102_400)));
        assert_eq!(parse_queue("100kb"), Ok(QueueLimit::Bytes(102_400)));
        assert_eq!(parse_queue("1MB"), Ok(QueueLimit::Bytes(1 << 20)));
        assert_eq!(parse_queue("2KiB"), Ok(QueueLimit::Bytes(2048)));
        assert_eq!(parse_queue("1MiB"), Ok(QueueLimit::Bytes(1 << 20)));
        assert_eq!(parse_queue("1500B"), Ok(QueueLimit::Bytes(1500)));
        assert_eq!(parse_queue("1.5KB"), Ok(QueueLimit::Bytes(1536)));
        assert_eq!(
            err(parse_queue("1.5")),
            "'1.5' is not a whole number of slots"
        );
        assert_eq!(
            err(parse_queue("99999999999")),
            "value '99999999999' is too large"
        );
        // dummynet: a K alone is KB (`TOK_QUEUE`).
        assert_eq!(parse_queue("10K"), Ok(QueueLimit::Bytes(10_240)));
        assert_eq!(parse_queue("10k"), Ok(QueueLimit::Bytes(10_240)));
        assert_eq!(parse_queue("10Kbytes"), Ok(QueueLimit::Bytes(10_240)));
        assert_eq!(parse_queue("1000bytes"), Ok(QueueLimit::Bytes(1000)));
        // expand_number(3) for burst: K, M, G, T with or without B.
        assert_eq!(parse_burst("64K"), Ok(65_536));
        assert_eq!(parse_burst("64kb"), Ok(65_536));
        assert_eq!(parse_burst("2M"), Ok(2 << 20));
        assert_eq!(parse_burst("1g"), Ok(1 << 30));
        assert_eq!(parse_burst("1T"), Ok(1 << 40));
        assert_eq!(parse_burst("1500"), Ok(1500));
        assert_eq!(parse_burst("64KBytes"), Ok(65_536));
        assert_eq!(
            err(parse_burst("64Kbit")),
            "unknown unit 'Kbit' in '64Kbit': sizes are in bytes (KB = 1024 bytes), e.g. 100KB"
        );
        assert_eq!(parse_size("1000B"), Ok(1000));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(format_size(102_400), "100KB");
        assert_eq!(format_size(1 << 20), "1MB");
        assert_eq!(format_size(1500), "1500B");
        assert_eq!(format_size(0), "0B");
    }

    #[test]
    fn probabilities() {
        assert_eq!(parse_probability("0.2").map(|p| p.ppb()), Ok(200_000_000));
        assert_eq!(parse_probability("5%").map(|p| p.ppb()), Ok(50_000_000));
        assert_eq!(parse_probability("1"), Ok(Probability::ONE));
        assert_eq!(parse_probability("0"), Ok(Probability::ZERO));
        assert_eq!(parse_probability("100%"), Ok(Probability::ONE));
        assert_eq!(
            err(parse_probability("1.5")),
            "probability '1.5' is outside 0..1"
        );
        assert_eq!(
            err(parse_probability("150%")),
            "probability '150%' is outside 0..1"
        );
        assert_eq!(
            err(parse_probability("99999999999999999999")),
            "probability '99999999999999999999' is outside 0..1"
        );
        assert_eq!(
            err(parse_probability("0.0000000001")),
            "probability '0.0000000001' has more than 9 decimal places"
        );
        assert_eq!(Probability(200_000_000).to_string(), "0.2");
        assert_eq!(Probability(50_000_000).to_string(), "0.05");
        assert_eq!(Probability(1).to_string(), "0.000000001");
        assert_eq!(Probability::ONE.to_string(), "1");
    }

    #[test]
    fn percentages_and_bit_error_rates() {
        assert_eq!(parse_percent("5%").map(|p| p.ppb()), Ok(50_000_000));
        assert_eq!(parse_percent("0.0000001%").map(|p| p.ppb()), Ok(1));
        assert_eq!(parse_percent("100%"), Ok(Probability::ONE));
        // tc reads a bare number as a percentage.
        assert_eq!(parse_percent("5").map(|p| p.ppb()), Ok(50_000_000));
        assert_eq!(parse_percent("0.1").map(|p| p.ppb()), Ok(1_000_000));
        assert_eq!(
            err(parse_percent("101")),
            "percentage '101' is more than 100%"
        );
        assert_eq!(
            err(parse_percent("101%")),
            "percentage '101%' is more than 100%"
        );
        assert_eq!(
            err(parse_percent("0.00000001%")),
            "percentage '0.00000001%' has more than 7 decimal places"
        );
        assert_eq!(format_percent(Probability(50_000_000)), "5%");
        assert_eq!(format_percent(Probability(1)), "0.0000001%");
        assert_eq!(format_percent(Probability::ONE), "100%");
        for (w, canon) in [
            ("1e-6", "1e-6"),
            ("1E-6", "1e-6"),
            ("0.000001", "1e-6"),
            ("25e-8", "2.5e-7"),
            ("0.5", "5e-1"),
            ("0", "0"),
            ("0e5", "0"),
            ("1.50e-3", "1.5e-3"),
            ("10e-7", "1e-6"),
        ] {
            let b = parse_ber(w).unwrap_or_else(|e| panic!("{w}: {e}"));
            assert_eq!(b.to_string(), canon, "{w}");
            assert_eq!(parse_ber(canon), Ok(b));
        }
        assert_eq!(parse_ber("1e-6").map(Ber::as_f64), Ok(1e-6));
        assert_eq!(err(parse_ber("1")), "bit error rate '1' is not below 1");
        assert_eq!(
            err(parse_ber("10e-1")),
            "bit error rate '10e-1' is not below 1"
        );
        assert_eq!(
            err(parse_ber("-1e-6")),
            "negative value '-1e-6' is not allowed"
        );
        assert_eq!(
            err(parse_ber("1e-")),
            "invalid bit error rate '1e-': write a number below 1, e.g. 1e-6 or 0.000001"
        );
        assert!(parse_ber("1e-999999").is_err());
        assert!(parse_ber("1e9999999999").is_err());
    }

    /// Pass proves: decibels take an optional sign and an optional `dB` in
    /// any case, print back as written, and other spellings are refused
    /// with a hint.
    #[test]
    fn decibels() {
        let db = |w: &str| parse_db(w).map(Decibels::billionths);
        assert_eq!(db("20dB"), Ok(20_000_000_000));
        assert_eq!(db("20"), Ok(20_000_000_000));
        assert_eq!(db("6.5db"), Ok(6_500_000_000));
        assert_eq!(db("-3.25DB"), Ok(-3_250_000_000));
        assert_eq!(parse_db("6.5dB").map(Decibels::as_f64), Ok(6.5));
        assert_eq!(
            parse_db("-0.1dB").map(Decibels::as_f64),
            Ok("-0.1".parse::<f64>().unwrap_or(0.0))
        );
        assert_eq!(
            Decibels::from_billionths(-3_500_000_000).to_string(),
            "-3.5dB"
        );
        assert_eq!(
            err(parse_db("loud")),
            "invalid decibel value 'loud': decibels are written like 20dB"
        );
        assert_eq!(
            err(parse_db("--3dB")),
            "invalid decibel value '--3dB': decibels are written like 20dB"
        );
        assert_eq!(
            err(parse_db("20dBm")),
            "unknown unit 'dBm' in '20dBm': decibels are written like 20dB"
        );
        assert_eq!(
            err(parse_db("0.0000000001dB")),
            "'0.0000000001dB' has more than 9 decimal places"
        );
    }

    /// Pass proves: tc's rate spellings take tc's meanings (`kbps` is
    /// kilobytes per second, `kibit` 1024 bits), case-insensitive, a bare
    /// number is bit/s, the language's spellings are accepted too, and
    /// the canonical form is tc's.
    #[test]
    fn tc_rates_take_tcs_meanings() {
        let tc = |w: &str| {
            parse_tc_rate(w)
                .map(Rate::bps)
                .unwrap_or_else(|e| panic!("{w}: {e}"))
        };
        for (w, bps) in [
            ("1kbps", 8_000),
            ("10mbps", 80_000_000),
            ("10MBps", 80_000_000),
            ("1gbps", 8_000_000_000),
            ("100kbit", 100_000),
            ("5Kbit", 5_000),
            ("10mbit", 10_000_000),
            ("1gbit", 1_000_000_000),
            ("1tbit", 1_000_000_000_000),
            ("1kibit", 1024),
            ("1mibit", 1 << 20),
            ("1kibps", 8192),
            ("1bps", 8),
            ("1000bit", 1000),
            ("1000", 1000),
            ("10Mbit/s", 10_000_000),
        ] {
            assert_eq!(tc(w), bps, "{w}");
        }
        assert_eq!(format_tc_rate(Rate::from_bps(80_000_000)), "80Mbit");
        assert_eq!(format_tc_rate(Rate::from_bps(1024)), "1024bit");
        assert_eq!(format_tc_rate(Rate::from_bps(5_000)), "5Kbit");
        assert!(err(parse_tc_rate("10%")).starts_with("rate '10%' is a percentage"));
        assert!(err(parse_tc_rate("10furlongs")).starts_with("unknown unit 'furlongs'"));
        assert_eq!(parse_tc_time("800us"), Ok(Duration::from_micros(800)));
        assert_eq!(parse_tc_time("100"), Ok(Duration(100)));
        assert_eq!(parse_tc_size("64k"), Ok(65_536));
        assert_eq!(parse_tc_size("1500"), Ok(1500));
        assert_eq!(parse_queue("50KBytes"), Ok(QueueLimit::Bytes(51_200)));
        assert_eq!(parse_queue("10Kbytes"), Ok(QueueLimit::Bytes(10_240)));
    }

    #[test]
    fn packet_rates() {
        assert_eq!(parse_packet_rate("1000pps"), Ok(PacketRate::from_pps(1000)));
        assert_eq!(parse_packet_rate("1.5kpps"), Ok(PacketRate::from_pps(1500)));
        assert_eq!(parse_packet_rate("0.5PPS").map(|r| r.millipps()), Ok(500));
        assert_eq!(PacketRate::from_millipps(500).to_string(), "0.5pps");
        assert_eq!(PacketRate::from_pps(1500).to_string(), "1500pps");
        assert!(is_packet_rate("3Mpps"));
        assert!(!is_packet_rate("3Mbit/s"));
    }
}
