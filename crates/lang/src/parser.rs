//! The parser: tokens of one line into a [`Command`].
//!
//! Grammar (one command per line, keywords case-insensitive, an optional
//! leading `ipfw` and `ipfw -q` ignored so pasted ipfw commands work):
//!
//! ```text
//! pipe N config [PARAM ...]                 (any order, each once)
//!     PARAM   = bw RATE | queue N|SIZE
//!             | delay DUR [SIGMA [CORR%]] | distribution uniform|normal|pareto
//!               |paretonormal|file:PATH | jitter-order keep|allow
//!             | plr P | loss P% [CORR%] | loss gemodel P% [R% [1-H% [1-K%]]]
//!             | loss state P13% [P31% [P32% [P23% [P14%]]]] | loss trace:PATH
//!             | duplicate P% [CORR%] | reorder P% [CORR%] [gap N]
//!             | reorder swap P% | corrupt P% [CORR%] | ber B
//! pipe N delete | pipe [N] show | pipe [N] list
//! add [N] [prob P] ACTION [prob P] [log] [[PROTO] from SRC to DST] [OPTION...]
//!     ACTION  = allow|accept|pass|permit | deny|drop | count
//!             | skipto N | pipe N | queue N
//!     PROTO   = ip|all | ip4 | ip6 | tcp | udp | icmp | 0..255
//!     SRC,DST = [not] (any | me | ADDR[/LEN] | {ADDR[/LEN],...}) [PORTS]
//!     PORTS   = PORT|LO-HI [,PORT|LO-HI ...]
//!     OPTION  = [not] (in | out | proto PROTO | src-ip A | dst-ip A
//!                      | src-port PORTS | dst-port PORTS)
//! delete N [N...] | flush | list | show | set one_pass 0|1
//! ```
//!
//! Values are checked as they are read (units, ranges, prefix lengths), and
//! a `pipe N config` is checked against the engine's [`PipeConfig`] limits,
//! so an error points at the offending word. The parser does not look at
//! other commands: whether a pipe exists or a rule number is free is
//! decided when the command is applied ([`crate::state`]). It never panics.
//!
//! [`PipeConfig`]: pipelab_engine::config::PipeConfig

use std::net::IpAddr;

use crate::ast::{
    Action, AddrMatch, Chance, Command, DistSpec, Endpoint, IpNet, Jitter, LossSpec, OptionKind,
    PipeSpec, PortRange, Proto, ReorderSpec, RuleOption, RuleSpec, DEFAULT_RULE, MAX_PIPE,
    MAX_RULE, MIN_PIPE, MIN_RULE,
};
use crate::error::{ParseError, Spanned};
use crate::lexer::{tokenize_line, Token, TokenKind};
use crate::units::{self, UnitError};
use pipelab_engine::config::JitterOrder;

/// The commands, as listed in hints.
const COMMANDS: &str = "pipe, add, delete, flush, list, show, set";

/// ipfw commands that pipelab will support later.
const LATER_COMMANDS: &[&str] = &[
    "queue", "sched", "table", "nat", "zero", "resetlog", "enable", "disable",
];

/// ipfw actions that pipelab does not support yet.
const LATER_ACTIONS: &[&str] = &[
    "reject",
    "unreach",
    "unreach6",
    "reset",
    "reset6",
    "fwd",
    "forward",
    "divert",
    "tee",
    "nat",
    "check-state",
    "netgraph",
    "ngtee",
    "setfib",
    "setdscp",
    "call",
    "return",
    "tag",
    "untag",
    "altq",
    "reass",
    "abort",
    "abort6",
];

/// ipfw rule options that pipelab does not support yet.
const LATER_OPTIONS: &[&str] = &[
    "via",
    "recv",
    "xmit",
    "mac",
    "mac-type",
    "iplen",
    "ipttl",
    "iptos",
    "ipid",
    "ipoptions",
    "ipprecedence",
    "ipversion",
    "tcpflags",
    "tcpoptions",
    "tcpseq",
    "tcpack",
    "tcpwin",
    "tcpdatalen",
    "tcpmss",
    "dscp",
    "uid",
    "gid",
    "jail",
    "table",
    "lookup",
    "keep-state",
    "record-state",
    "limit",
    "established",
    "setup",
    "frag",
    "icmptypes",
    "icmp6types",
    "layer2",
    "antispoof",
    "verrevpath",
    "versrcreach",
    "bridged",
    "diverted",
    "diverted-loopback",
    "diverted-output",
    "tagged",
    "sockarg",
    "src-ip6",
    "dst-ip6",
    "flow-id",
    "ext6hdr",
    "fib",
    "flow",
    "dst-mac",
    "src-mac",
];

/// ipfw/netem pipe parameters that pipelab will support later.
const LATER_PIPE_PARAMS: &[&str] = &[
    "mask", "buckets", "red", "gred", "droptail", "noerror", "burst", "profile", "sched", "weight",
    "lmax", "link", "type", "pipe", "flowset", "pri", "priority",
];

/// Parses one line. Returns `Ok(None)` for a blank or comment-only line.
///
/// Errors are reported on line 1. `text` should hold one line; if it holds
/// several, each is parsed and more than one command is an error.
pub fn parse_line(text: &str) -> Result<Option<Command>, ParseError> {
    let mut found: Option<Spanned<Command>> = None;
    for (i, line) in text.lines().enumerate() {
        let line_no = u32::try_from(i + 1).unwrap_or(u32::MAX);
        if let Some(cmd) = parse_tokens(&tokenize_line(line, line_no), line_no)? {
            if found.is_some() {
                return Err(ParseError::new(
                    cmd.line,
                    cmd.column,
                    "",
                    "expected one command, found more than one line",
                    None,
                ));
            }
            found = Some(cmd);
        }
    }
    Ok(found.map(|s| s.node))
}

/// Parses a script: one command per line, `#` comments, blank lines.
///
/// Returns the commands with their positions, or every error found (one
/// per bad line at most), in line order.
pub fn parse_script(text: &str) -> Result<Vec<Spanned<Command>>, Vec<ParseError>> {
    let mut cmds = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = u32::try_from(i + 1).unwrap_or(u32::MAX);
        match parse_tokens(&tokenize_line(line, line_no), line_no) {
            Ok(Some(c)) => cmds.push(c),
            Ok(None) => {}
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(cmds)
    } else {
        Err(errors)
    }
}

/// Parses the tokens of one line (line number `line`).
pub(crate) fn parse_tokens(
    toks: &[Token<'_>],
    line: u32,
) -> Result<Option<Spanned<Command>>, ParseError> {
    let mut p = Parser::new(toks, line);
    if p.peek().is_some_and(|t| t.is_word("ipfw")) {
        p.pos += 1;
        if p.peek().is_some_and(|t| t.is_word("-q")) {
            p.pos += 1;
        }
        if p.peek().is_none() {
            return Err(p.err_eol("missing command after 'ipfw'", Some(hint_commands())));
        }
    }
    let Some(first) = p.peek() else {
        return Ok(None);
    };
    let cmd = p.command()?;
    p.finish()?;
    Ok(Some(Spanned {
        line,
        column: first.column,
        node: cmd,
    }))
}

fn hint_commands() -> String {
    format!("commands: {COMMANDS}")
}

/// True if the word is all ASCII digits (and not empty).
fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn lower(tok: &Token<'_>) -> String {
    tok.text.to_ascii_lowercase()
}

/// A cursor over the tokens of one line.
struct Parser<'t, 'a> {
    toks: &'t [Token<'a>],
    pos: usize,
    line: u32,
}

impl<'t, 'a> Parser<'t, 'a> {
    fn new(toks: &'t [Token<'a>], line: u32) -> Self {
        Parser { toks, pos: 0, line }
    }

    fn peek(&self) -> Option<Token<'a>> {
        self.toks.get(self.pos).copied()
    }

    fn peek_is(&self, w: &str) -> bool {
        self.peek().is_some_and(|t| t.is_word(w))
    }

    fn next(&mut self) -> Option<Token<'a>> {
        let t = self.toks.get(self.pos).copied();
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    /// The text of the token before the cursor.
    fn prev_text(&self) -> &'a str {
        self.pos
            .checked_sub(1)
            .and_then(|i| self.toks.get(i))
            .map_or("", |t| t.text)
    }

    fn err_at(
        &self,
        tok: Token<'_>,
        message: impl Into<String>,
        hint: Option<String>,
    ) -> ParseError {
        ParseError::new(self.line, tok.column, tok.text, message, hint)
    }

    /// An error about something missing at the end of the line.
    fn err_eol(&self, message: impl Into<String>, hint: Option<String>) -> ParseError {
        let column = self.toks.last().map_or(1, |t| t.end_column());
        ParseError::new(self.line, column, "", message, hint)
    }

    fn unit<T>(&self, tok: Token<'_>, r: Result<T, UnitError>) -> Result<T, ParseError> {
        r.map_err(|e| self.err_at(tok, e.message, e.hint))
    }

    /// The next token, which must be a word; `what` names it in errors
    /// (`missing value after 'bw'`).
    fn expect_word(&mut self, what: &str, hint: Option<&str>) -> Result<Token<'a>, ParseError> {
        let prev = self.prev_text();
        match self.next() {
            Some(t) if t.kind == TokenKind::Word => Ok(t),
            Some(t) => Err(self.err_at(
                t,
                format!("expected {what}, found '{}'", t.text),
                hint.map(str::to_string),
            )),
            None => Err(self.err_eol(
                format!("missing {what} after '{prev}'"),
                hint.map(str::to_string),
            )),
        }
    }

    /// Fails if any token is left.
    fn finish(&self) -> Result<(), ParseError> {
        match self.peek() {
            Some(t) => Err(self.err_at(
                t,
                format!("unexpected '{}' at end of command", t.text),
                None,
            )),
            None => Ok(()),
        }
    }

    /// A number in `lo..=hi`, written in decimal; `what` is e.g. "pipe number".
    fn number(
        &self,
        tok: Token<'_>,
        what: &str,
        lo: u32,
        hi: u32,
        hint: Option<String>,
    ) -> Result<u32, ParseError> {
        if tok.kind != TokenKind::Word || !is_digits(tok.text) {
            return Err(self.err_at(tok, format!("invalid {what} '{}'", tok.text), None));
        }
        match tok.text.parse::<u64>() {
            Ok(n) if n >= lo as u64 && n <= hi as u64 => Ok(n as u32),
            _ => Err(self.err_at(
                tok,
                format!("{what} {} is out of range {lo}..{hi}", tok.text),
                hint,
            )),
        }
    }

    fn pipe_number(&self, tok: Token<'_>) -> Result<u32, ParseError> {
        self.number(tok, "pipe number", MIN_PIPE, MAX_PIPE, None)
    }

    fn rule_number(&self, tok: Token<'_>) -> Result<u32, ParseError> {
        let hint = tok
            .text
            .parse::<u64>()
            .ok()
            .filter(|&n| n == DEFAULT_RULE as u64)
            .map(|_| "65535 is the built-in default rule 'allow ip from any to any'".to_string());
        self.number(tok, "rule number", MIN_RULE, MAX_RULE, hint)
    }

    fn command(&mut self) -> Result<Command, ParseError> {
        let tok = self.expect_word("command", None)?;
        match lower(&tok).as_str() {
            "pipe" => self.pipe(),
            "add" => self.add(),
            "delete" => self.delete(),
            "flush" => Ok(Command::Flush),
            "list" => Ok(Command::List),
            "show" => Ok(Command::Show),
            "set" => self.set(),
            w if LATER_COMMANDS.contains(&w) => Err(self.err_at(
                tok,
                format!("command '{}' is not supported yet", tok.text),
                None,
            )),
            _ => Err(self.err_at(
                tok,
                format!("unknown command '{}'", tok.text),
                Some(hint_commands()),
            )),
        }
    }

    fn pipe(&mut self) -> Result<Command, ParseError> {
        const HINT: &str = "e.g. pipe 1 config bw 10Mbit/s delay 20ms";
        let tok = self.expect_word("pipe number", Some(HINT))?;
        match lower(&tok).as_str() {
            "show" | "list" => return Ok(Command::PipeShow { id: None }),
            "flush" => {
                return Err(self.err_at(tok, "command 'pipe flush' is not supported yet", None))
            }
            _ => {}
        }
        let id = self.pipe_number(tok)?;
        let sub = self.next();
        match sub {
            None => Err(self.err_eol(
                format!("missing 'config', 'delete' or 'show' after 'pipe {id}'"),
                None,
            )),
            Some(t) => match lower(&t).as_str() {
                "config" => Ok(Command::PipeConfig {
                    id,
                    spec: self.pipe_spec()?,
                }),
                "delete" => Ok(Command::PipeDelete { id }),
                "show" | "list" => Ok(Command::PipeShow { id: Some(id) }),
                _ => Err(self.err_at(
                    t,
                    format!("unknown pipe command '{}'", t.text),
                    Some("expected config, delete or show".into()),
                )),
            },
        }
    }

    fn pipe_spec(&mut self) -> Result<PipeSpec, ParseError> {
        let mut spec = PipeSpec::default();
        // (canonical name, keyword token, value token) of each parameter seen.
        let mut seen: Vec<(&'static str, Token<'a>, Token<'a>)> = Vec::new();
        while let Some(tok) = self.next() {
            if tok.kind != TokenKind::Word {
                return Err(self.err_at(tok, format!("unexpected '{}'", tok.text), None));
            }
            let (name, example): (&'static str, &str) = match lower(&tok).as_str() {
                "bw" | "bandwidth" => ("bw", "e.g. bw 10Mbit/s"),
                "delay" => ("delay", "e.g. delay 20ms or delay 20ms 5ms 25%"),
                "distribution" => (
                    "distribution",
                    "e.g. distribution normal or distribution file:delays.txt",
                ),
                "jitter-order" => ("jitter-order", "jitter-order keep or jitter-order allow"),
                "queue" => ("queue", "e.g. queue 50 or queue 100KB"),
                "plr" => ("plr", "e.g. plr 0.05"),
                "loss" => (
                    "loss",
                    "e.g. loss 5%, loss gemodel 1% 10%, loss state 1% or loss trace:FILE",
                ),
                "duplicate" => ("duplicate", "e.g. duplicate 1% or duplicate 1% 25%"),
                "reorder" => (
                    "reorder",
                    "e.g. reorder 25% 50%, reorder 25% gap 5 or reorder swap 1%",
                ),
                "corrupt" => ("corrupt", "e.g. corrupt 0.1%"),
                "ber" => ("ber", "e.g. ber 1e-6"),
                "jitter" => {
                    return Err(self.err_at(
                        tok,
                        "unknown pipe parameter 'jitter'",
                        Some("netem's jitter follows the delay: delay 20ms 5ms".into()),
                    ))
                }
                w if LATER_PIPE_PARAMS.contains(&w) => {
                    return Err(self.err_at(
                        tok,
                        format!("parameter '{}' is not supported yet", tok.text),
                        None,
                    ))
                }
                _ => {
                    return Err(self.err_at(
                        tok,
                        format!("unknown pipe parameter '{}'", tok.text),
                        Some(format!("known parameters: {}", PipeSpec::PARAMS.join(", "))),
                    ))
                }
            };
            if let Some((_, first, _)) = seen.iter().find(|(n, _, _)| *n == name) {
                return Err(self.err_at(
                    tok,
                    format!("duplicate parameter '{}'", tok.text),
                    Some(format!(
                        "'{name}' was already given at column {}",
                        first.column
                    )),
                ));
            }
            let value = self.expect_word("value", Some(example))?;
            match name {
                "bw" => spec.bw = Some(self.unit(value, units::parse_rate(value.text))?),
                "delay" => {
                    spec.delay = Some(self.unit(value, units::parse_delay(value.text))?);
                    if let Some(t) = self.next_number() {
                        let sigma = self.unit(t, units::parse_delay(t.text))?;
                        let correlation = self.opt_percent()?;
                        spec.jitter = Some(Jitter { sigma, correlation });
                    }
                }
                "distribution" => spec.distribution = Some(self.distribution(value)?),
                "jitter-order" => {
                    spec.jitter_order = Some(match lower(&value).as_str() {
                        "keep" => JitterOrder::Keep,
                        "allow" => JitterOrder::Allow,
                        _ => {
                            return Err(self.err_at(
                                value,
                                format!("invalid jitter-order '{}'", value.text),
                                Some("expected keep or allow".into()),
                            ))
                        }
                    })
                }
                "plr" => spec.plr = Some(self.unit(value, units::parse_probability(value.text))?),
                "loss" => spec.loss = Some(self.loss(value)?),
                "duplicate" => spec.duplicate = Some(self.chance(value)?),
                "reorder" => spec.reorder = Some(self.reorder(value)?),
                "corrupt" => spec.corrupt = Some(self.chance(value)?),
                "ber" => spec.ber = Some(self.unit(value, units::parse_ber(value.text))?),
                _ => spec.queue = Some(self.unit(value, units::parse_queue(value.text))?),
            }
            seen.push((name, tok, value));
        }
        if let Err(e) = spec.check() {
            let at = seen
                .iter()
                .find(|(n, _, _)| *n == e.param)
                .map(|&(_, _, v)| v);
            return Err(match at {
                Some(v) => self.err_at(
                    v,
                    format!("invalid {} '{}': {}", e.param, v.text, e.reason),
                    None,
                ),
                None => self.err_eol(e.to_string(), None),
            });
        }
        Ok(spec)
    }

    /// The next token if it is a word starting like a number (`5%`, `.5`,
    /// `20ms`): the optional values of netem's words.
    fn next_number(&mut self) -> Option<Token<'a>> {
        let t = self.peek()?;
        let first = t.text.chars().next()?;
        if t.kind == TokenKind::Word && (first.is_ascii_digit() || first == '.' || first == '-') {
            self.pos += 1;
            Some(t)
        } else {
            None
        }
    }

    /// An optional `CORR%` (or other percentage) after a value.
    fn opt_percent(&mut self) -> Result<Option<units::Probability>, ParseError> {
        match self.next_number() {
            Some(t) => self.unit(t, units::parse_percent(t.text)).map(Some),
            None => Ok(None),
        }
    }

    /// `P% [CORR%]`, `P%` being `value`.
    fn chance(&mut self, value: Token<'a>) -> Result<Chance, ParseError> {
        let p = self.unit(value, units::parse_percent(value.text))?;
        Ok(Chance {
            p,
            correlation: self.opt_percent()?,
        })
    }

    fn distribution(&self, value: Token<'a>) -> Result<DistSpec, ParseError> {
        let w = lower(&value);
        Ok(match w.as_str() {
            "uniform" => DistSpec::Uniform,
            "normal" => DistSpec::Normal,
            "pareto" => DistSpec::Pareto,
            "paretonormal" => DistSpec::ParetoNormal,
            _ if w.starts_with("file:") => {
                let path = &value.text["file:".len()..];
                if path.is_empty() {
                    return Err(self.err_at(
                        value,
                        "missing path after 'file:'",
                        Some("e.g. distribution file:delays.txt".into()),
                    ));
                }
                DistSpec::File(path.to_string())
            }
            _ => {
                return Err(self.err_at(
                    value,
                    format!("unknown distribution '{}'", value.text),
                    Some(format!("known distributions: {}", DistSpec::NAMES)),
                ))
            }
        })
    }

    fn loss(&mut self, value: Token<'a>) -> Result<LossSpec, ParseError> {
        let w = lower(&value);
        let (max, state) = match w.as_str() {
            "gemodel" => (4, false),
            "state" => (5, true),
            _ if w.starts_with("trace:") => {
                let path = &value.text["trace:".len()..];
                if path.is_empty() {
                    return Err(self.err_at(
                        value,
                        "missing path after 'trace:'",
                        Some("e.g. loss trace:drops.txt".into()),
                    ));
                }
                return Ok(LossSpec::Trace(path.to_string()));
            }
            _ if self.is_number_like(value) => return self.chance(value).map(LossSpec::Random),
            _ => {
                return Err(self.err_at(
                    value,
                    format!("unknown loss model '{}'", value.text),
                    Some("expected a percentage, gemodel, state or trace:FILE".into()),
                ))
            }
        };
        let example = if state {
            "e.g. loss state 1% 30% 10% 40% 0.5%"
        } else {
            "e.g. loss gemodel 1% 10% 70% 0.1%"
        };
        let first = self.expect_word("percentage", Some(example))?;
        let mut ps = vec![self.unit(first, units::parse_percent(first.text))?];
        while let Some(t) = self.next_number() {
            if ps.len() == max {
                return Err(self.err_at(
                    t,
                    format!("too many values for '{}'", value.text),
                    Some(format!(
                        "'{}' takes at most {max} percentages",
                        lower(&value)
                    )),
                ));
            }
            ps.push(self.unit(t, units::parse_percent(t.text))?);
        }
        Ok(if state {
            LossSpec::State(ps)
        } else {
            LossSpec::Gemodel(ps)
        })
    }

    fn reorder(&mut self, value: Token<'a>) -> Result<ReorderSpec, ParseError> {
        if value.is_word("swap") {
            let p = self.expect_word("percentage", Some("e.g. reorder swap 1%"))?;
            return Ok(ReorderSpec::Swap(
                self.unit(p, units::parse_percent(p.text))?,
            ));
        }
        let chance = self.chance(value)?;
        let mut gap = None;
        if self.peek_is("gap") {
            self.pos += 1;
            let t = self.expect_word("value", Some("e.g. gap 5"))?;
            gap = Some(self.number(t, "gap", 1, u32::MAX, None)?);
        }
        Ok(ReorderSpec::Netem { chance, gap })
    }

    fn is_number_like(&self, t: Token<'_>) -> bool {
        t.text
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '.' || c == '-')
    }

    fn add(&mut self) -> Result<Command, ParseError> {
        let mut rule = RuleSpec::new(Action::Allow);
        if let Some(t) = self
            .peek()
            .filter(|t| t.kind == TokenKind::Word && is_digits(t.text))
        {
            self.pos += 1;
            rule.number = Some(self.rule_number(t)?);
        }
        if self.peek_is("prob") {
            rule.prob = Some(self.prob()?);
        }
        rule.action = self.action()?;
        loop {
            if self.peek_is("prob") {
                if let (Some(_), Some(t)) = (rule.prob, self.peek()) {
                    return Err(self.err_at(t, "duplicate 'prob'", None));
                }
                rule.prob = Some(self.prob()?);
            } else if self.peek_is("log") {
                if let (true, Some(t)) = (rule.log, self.peek()) {
                    return Err(self.err_at(t, "duplicate 'log'", None));
                }
                self.pos += 1;
                rule.log = true;
            } else {
                break;
            }
        }
        self.body(&mut rule)?;
        self.options(&mut rule)?;
        Ok(Command::Add(rule))
    }

    fn prob(&mut self) -> Result<crate::units::Probability, ParseError> {
        self.pos += 1;
        let v = self.expect_word("probability", Some("e.g. prob 0.2 or prob 20%"))?;
        self.unit(v, units::parse_probability(v.text))
    }

    fn action(&mut self) -> Result<Action, ParseError> {
        const HINT: &str = "actions: allow, deny, count, skipto N, pipe N, queue N";
        let tok = self.expect_word("action", Some(HINT))?;
        let w = lower(&tok);
        Ok(match w.as_str() {
            "allow" | "accept" | "pass" | "permit" => Action::Allow,
            "deny" | "drop" => Action::Deny,
            "count" => Action::Count,
            "skipto" => Action::Skipto(self.target(tok, "rule number", MIN_RULE, DEFAULT_RULE)?),
            "pipe" => Action::Pipe(self.target(tok, "pipe number", MIN_PIPE, MAX_PIPE)?),
            "queue" => Action::Queue(self.target(tok, "queue number", MIN_PIPE, MAX_PIPE)?),
            w if LATER_ACTIONS.contains(&w) => {
                return Err(self.err_at(
                    tok,
                    format!("action '{}' is not supported yet", tok.text),
                    None,
                ))
            }
            _ => {
                return Err(self.err_at(
                    tok,
                    format!("unknown action '{}'", tok.text),
                    Some(HINT.into()),
                ))
            }
        })
    }

    /// The number after an action word (`pipe 5`, `skipto 1000`).
    fn target(
        &mut self,
        action: Token<'_>,
        what: &str,
        lo: u32,
        hi: u32,
    ) -> Result<u32, ParseError> {
        let t = self.expect_word(what, None)?;
        if t.is_word("tablearg") {
            return Err(self.err_at(
                t,
                format!("'{} tablearg' is not supported yet", action.text),
                None,
            ));
        }
        self.number(t, what, lo, hi, None)
    }

    fn proto(&self, tok: Token<'_>) -> Result<Proto, ParseError> {
        Ok(match lower(&tok).as_str() {
            "ip" | "all" => Proto::Ip,
            "ip4" | "ipv4" => Proto::Ip4,
            "ip6" | "ipv6" => Proto::Ip6,
            "tcp" => Proto::Tcp,
            "udp" => Proto::Udp,
            "icmp" => Proto::Icmp,
            w if is_digits(w) => match w.parse::<u64>() {
                Ok(n) if n <= 255 => Proto::Number(n as u8),
                _ => {
                    return Err(self.err_at(
                        tok,
                        format!("protocol number {} is out of range 0..255", tok.text),
                        None,
                    ))
                }
            },
            _ => {
                return Err(self.err_at(
                    tok,
                    format!("unknown protocol '{}'", tok.text),
                    Some("protocols: ip, all, ip4, ip6, tcp, udp, icmp, or a number 0..255".into()),
                ))
            }
        })
    }

    /// `[PROTO] from SRC to DST`, or nothing when options follow directly.
    fn body(&mut self, rule: &mut RuleSpec) -> Result<(), ParseError> {
        let Some(tok) = self.peek() else {
            return Ok(());
        };
        if !tok.is_word("from") {
            let next_is_from = self
                .toks
                .get(self.pos + 1)
                .is_some_and(|t| t.is_word("from"));
            let w = lower(&tok);
            let is_option = tok.kind != TokenKind::Word
                || w == "not"
                || OptionKind::WORDS.contains(&w.as_str())
                || LATER_OPTIONS.contains(&w.as_str());
            if is_option && !next_is_from {
                return Ok(());
            }
            let looks_like_proto = next_is_from
                || is_digits(&w)
                || matches!(
                    w.as_str(),
                    "ip" | "all" | "ip4" | "ipv4" | "ip6" | "ipv6" | "tcp" | "udp" | "icmp"
                );
            if !looks_like_proto {
                // An unknown word: report it as an option, the likelier intent.
                return Ok(());
            }
            self.pos += 1;
            rule.proto = self.proto(tok)?;
            match self.next() {
                Some(t) if t.is_word("from") => {}
                Some(t) => {
                    return Err(self.err_at(
                        t,
                        format!("expected 'from' after protocol, found '{}'", t.text),
                        None,
                    ))
                }
                None => {
                    return Err(self.err_eol(
                        format!("missing 'from' after '{}'", tok.text),
                        Some("e.g. ip from any to any".into()),
                    ))
                }
            }
        } else {
            self.pos += 1;
        }
        rule.src = self.endpoint(rule.proto)?;
        match self.next() {
            Some(t) if t.is_word("to") => {}
            Some(t) => {
                return Err(self.err_at(t, format!("expected 'to', found '{}'", t.text), None))
            }
            None => {
                return Err(self.err_eol(
                    "missing 'to' after source address",
                    Some("e.g. from any to any".into()),
                ))
            }
        }
        rule.dst = self.endpoint(rule.proto)?;
        Ok(())
    }

    /// `[not] ADDR [PORTS]` after `from` or `to`.
    fn endpoint(&mut self, proto: Proto) -> Result<Endpoint, ParseError> {
        let mut not = false;
        if self.peek_is("not") {
            self.pos += 1;
            not = true;
        }
        let addr = self.addr_match()?;
        let mut ports = Vec::new();
        if let Some(t) = self.peek().filter(|t| {
            t.kind == TokenKind::Word && t.text.starts_with(|c: char| c.is_ascii_digit())
        }) {
            if !proto.allows_ports() {
                return Err(self.err_at(
                    t,
                    format!("ports are not valid with protocol '{proto}'"),
                    Some("ports need tcp, udp or ip".into()),
                ));
            }
            ports = self.ports()?;
        }
        Ok(Endpoint { not, addr, ports })
    }

    /// `any`, `me`, an address or network, or a `{...}` list.
    fn addr_match(&mut self) -> Result<AddrMatch, ParseError> {
        let prev = self.prev_text();
        let Some(tok) = self.next() else {
            return Err(self.err_eol(
                format!("missing address after '{prev}'"),
                Some("write any, me, an address, a network like 10.0.0.0/8, or {a,b}".into()),
            ));
        };
        match tok.kind {
            TokenKind::LBrace => self.addr_list(tok).map(AddrMatch::List),
            TokenKind::Word if tok.is_word("any") => Ok(AddrMatch::Any),
            TokenKind::Word if tok.is_word("me") => Ok(AddrMatch::Me),
            TokenKind::Word => self.net(tok).map(AddrMatch::Net),
            _ => Err(self.err_at(
                tok,
                format!("expected an address, found '{}'", tok.text),
                None,
            )),
        }
    }

    /// The rest of `{a,b,c}` after `{`.
    fn addr_list(&mut self, open: Token<'_>) -> Result<Vec<IpNet>, ParseError> {
        let mut list = Vec::new();
        loop {
            match self.next() {
                Some(t) if t.kind == TokenKind::Word => list.push(self.net(t)?),
                Some(t) if t.kind == TokenKind::RBrace && list.is_empty() => {
                    return Err(self.err_at(open, "empty address list", None))
                }
                Some(t) => {
                    return Err(self.err_at(
                        t,
                        format!("expected an address in the list, found '{}'", t.text),
                        None,
                    ))
                }
                None => {
                    return Err(self.err_at(
                        open,
                        "unclosed '{'",
                        Some("expected '}' before the end of the line".into()),
                    ))
                }
            }
            match self.next() {
                Some(t) if t.kind == TokenKind::Comma => {}
                Some(t) if t.kind == TokenKind::RBrace => return Ok(list),
                Some(t) => {
                    return Err(self.err_at(
                        open,
                        "unclosed '{'",
                        Some(format!("expected ',' or '}}' before '{}'", t.text)),
                    ))
                }
                None => {
                    return Err(self.err_at(
                        open,
                        "unclosed '{'",
                        Some("expected '}' before the end of the line".into()),
                    ))
                }
            }
        }
    }

    /// An address with an optional prefix length: `10.0.0.1`, `10.0.0.0/8`.
    fn net(&self, tok: Token<'_>) -> Result<IpNet, ParseError> {
        let (addr_text, prefix_text) = match tok.text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (tok.text, None),
        };
        let addr: IpAddr = addr_text.parse().map_err(|_| {
            let hostname = tok.text.contains('.')
                && tok.text.chars().any(|c| c.is_ascii_alphabetic())
                && !tok.text.contains(':');
            let hint = if hostname {
                "host names are not resolved; write an IPv4 or IPv6 address"
            } else {
                "write any, me, an address, a network like 10.0.0.0/8, or {a,b}"
            };
            self.err_at(
                tok,
                format!("invalid address '{}'", tok.text),
                Some(hint.into()),
            )
        })?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix_text {
            None => max,
            Some(p) => match p.parse::<u8>() {
                Ok(n) if is_digits(p) && n <= max => n,
                Ok(n) if is_digits(p) => {
                    return Err(self.err_at(
                        tok,
                        format!(
                            "invalid prefix length {n} in '{}' (at most {max})",
                            tok.text
                        ),
                        None,
                    ))
                }
                _ if is_digits(p) => {
                    return Err(self.err_at(
                        tok,
                        format!(
                            "invalid prefix length {p} in '{}' (at most {max})",
                            tok.text
                        ),
                        None,
                    ))
                }
                _ => {
                    return Err(self.err_at(
                        tok,
                        format!("invalid prefix length '{p}' in '{}'", tok.text),
                        Some(format!("write a number 0..{max}, e.g. 10.0.0.0/8")),
                    ))
                }
            },
        };
        IpNet::new(addr, prefix).ok_or_else(|| {
            self.err_at(
                tok,
                format!("invalid prefix length in '{}'", tok.text),
                None,
            )
        })
    }

    /// `80`, `1000-2000`, or a comma list `80,443,8000-8080`.
    fn ports(&mut self) -> Result<Vec<PortRange>, ParseError> {
        let mut ports = Vec::new();
        loop {
            let t = self.expect_word("port", Some("e.g. 80, 1000-2000 or 80,443"))?;
            ports.push(self.port_range(t)?);
            if self.peek().is_some_and(|t| t.kind == TokenKind::Comma) {
                self.pos += 1;
            } else {
                return Ok(ports);
            }
        }
    }

    fn port(&self, tok: Token<'_>, text: &str) -> Result<u16, ParseError> {
        if !is_digits(text) {
            return Err(self.err_at(
                tok,
                format!("invalid port '{}'", tok.text),
                Some("ports are numbers 0..65535, ranges 1000-2000 or lists 80,443".into()),
            ));
        }
        match text.parse::<u64>() {
            Ok(n) if n <= 65_535 => Ok(n as u16),
            _ => Err(self.err_at(tok, format!("port {text} is out of range 0..65535"), None)),
        }
    }

    fn port_range(&self, tok: Token<'_>) -> Result<PortRange, ParseError> {
        match tok.text.split_once('-') {
            None => Ok(PortRange::single(self.port(tok, tok.text)?)),
            Some((a, b)) => {
                let lo = self.port(tok, a)?;
                let hi = self.port(tok, b)?;
                PortRange::new(lo, hi).ok_or_else(|| {
                    self.err_at(
                        tok,
                        format!("port range '{}' is reversed", tok.text),
                        Some(format!("write {hi}-{lo}")),
                    )
                })
            }
        }
    }

    /// The options after the body, to the end of the line.
    fn options(&mut self, rule: &mut RuleSpec) -> Result<(), ParseError> {
        while let Some(first) = self.next() {
            let mut tok = first;
            let mut not = false;
            if tok.is_word("not") {
                not = true;
                tok = match self.next() {
                    Some(t) => t,
                    None => return Err(self.err_eol("missing option after 'not'", None)),
                };
            }
            if tok.kind != TokenKind::Word {
                return Err(self.err_at(tok, format!("unexpected '{}'", tok.text), None));
            }
            let kind = match lower(&tok).as_str() {
                "in" => OptionKind::In,
                "out" => OptionKind::Out,
                "proto" => {
                    let p = self.expect_word("protocol", None)?;
                    OptionKind::Proto(self.proto(p)?)
                }
                "src-ip" => OptionKind::SrcIp(self.addr_match()?),
                "dst-ip" => OptionKind::DstIp(self.addr_match()?),
                "src-port" => OptionKind::SrcPort(self.ports()?),
                "dst-port" => OptionKind::DstPort(self.ports()?),
                w if LATER_OPTIONS.contains(&w) => {
                    return Err(self.err_at(
                        tok,
                        format!("option '{}' is not supported yet", tok.text),
                        None,
                    ))
                }
                "from" | "to" => {
                    return Err(self.err_at(
                        tok,
                        format!("unexpected '{}'", tok.text),
                        Some("write PROTO from SRC to DST before the options".into()),
                    ))
                }
                _ => {
                    return Err(self.err_at(
                        tok,
                        format!("unknown option '{}'", tok.text),
                        Some(format!(
                            "options: {} (each may follow 'not')",
                            OptionKind::WORDS.join(", ")
                        )),
                    ))
                }
            };
            rule.options.push(RuleOption { not, kind });
        }
        Ok(())
    }

    fn delete(&mut self) -> Result<Command, ParseError> {
        let mut numbers = Vec::new();
        let first = self.expect_word("rule number", Some("e.g. delete 100"))?;
        numbers.push(self.rule_number(first)?);
        while let Some(t) = self.next() {
            numbers.push(self.rule_number(t)?);
        }
        Ok(Command::Delete { numbers })
    }

    fn set(&mut self) -> Result<Command, ParseError> {
        let var = self.expect_word("variable", Some("e.g. set one_pass 0"))?;
        if is_digits(var.text) {
            return Err(self.err_at(var, "rule sets ('set N ...') are not supported yet", None));
        }
        if !var.is_word("one_pass") {
            return Err(self.err_at(
                var,
                format!("unknown set variable '{}'", var.text),
                Some("known variables: one_pass".into()),
            ));
        }
        let v = self.expect_word("value", Some("expected 0 or 1"))?;
        match v.text {
            "0" => Ok(Command::SetOnePass(false)),
            "1" => Ok(Command::SetOnePass(true)),
            _ => Err(self.err_at(
                v,
                format!("invalid value '{}' for one_pass", v.text),
                Some("expected 0 or 1".into()),
            )),
        }
    }
}
