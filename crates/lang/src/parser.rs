//! The parser: tokens of one line into a [`Command`].
//!
//! Grammar (one command per line, keywords case-insensitive, an optional
//! leading `ipfw` and `ipfw -q` ignored so pasted ipfw commands work):
//!
//! ```text
//! pipe N config [PARAM ...]                 (any order, each once)
//!     PARAM   = bw RATE | queue N|SIZE | spill
//!             | delay DUR [SIGMA [CORR%]] | distribution uniform|normal|pareto
//!               |paretonormal|file:PATH | jitter-order keep|allow
//!             | plr P | loss P% [CORR%] | loss gemodel P% [R% [1-H% [1-K%]]]
//!             | loss state P13% [P31% [P32% [P23% [P14%]]]] | loss trace:PATH
//!             | duplicate P% [CORR%] | reorder P% [CORR%] [gap N]
//!             | reorder swap P% | corrupt P% [CORR%] | ber B
//!             | red W/MIN/MAX/P | gred W/MIN/MAX/P   (thresholds in slots, or
//!               bytes with a queue in bytes; K = 1024)
//!             | codel [target D] [interval D]
//!             | pie [target D] [tupdate D] [alpha A] [beta B] [max_burst D]
//!             | bw trace:PATH | profile PATH | burst SIZE
//!             | delay trace:PATH | timeline PATH | timevarying PATH
//!             | accounting l3 | accounting l2 [header N] [fcs N] [preamble N]
//!               [ifg N] [minframe N] | overhead N [cellsize C [celloverhead O]]
//!             | mask MASK... | buckets N          (dynamic pipe; N in 1..65536)
//!     MASK    = all | src-ip M4 | dst-ip M4 | src-ip6 /LEN | dst-ip6 /LEN
//!             | src-port M16 | dst-port M16 | proto M8
//!     M4      = 0xffffff00 | 255.255.255.0       M16, M8 = 0xHEX | decimal
//! pipe N delete | pipe [N] show | pipe [N] list
//! sched N config [type T] [quantum BYTES] [target DUR] [interval DUR]
//!     T = a name of the engine's scheduler registry (fifo, rr, drr, wf2q+,
//!     qfq, prio, fq_codel, fq_pie); target/interval where T takes them
//!     [pipe N] (ipfw: the pipe served, N itself) [ecn|noecn] (fq_codel,
//!     fq_pie: mark ECN-capable packets instead of dropping them)
//! sched N delete
//! queue N config [weight W] sched S|pipe P [queue N|SIZE]
//!     [red ..|gred ..|codel ..|pie ..] [mask MASK...] [buckets N]
//! queue N delete
//! add [N] [prob P] ACTION [prob P] [log] [[PROTO] from SRC to DST] [OPTION...]
//! add [N] check-state [:FLOW|:any] [log]          (no body)
//!     ACTION  = allow|accept|pass|permit | deny|drop | count
//!             | skipto N | pipe N | queue N | reset | unreach CODE
//!             | pipe tablearg | skipto tablearg   (the rule needs a table(N))
//!     PROTO   = ip|all | ip4 | ip6 | tcp | udp | icmp | 0..255
//!     SRC,DST = [not] ADDR [PORTS]
//!     ADDR    = any | me | ADDR[/LEN] | {ADDR[/LEN],...} | table(T[,VALUE])
//!     PORTS   = PORT|LO-HI [,PORT|LO-HI ...]
//!     OPTION  = [not] (in | out | proto PROTO | src-ip ADDR | dst-ip ADDR
//!                      | src-port PORTS | dst-port PORTS
//!                      | via IFACE | recv IFACE | xmit IFACE
//!                      | mac DST SRC | mac-type T[,T..] | iplen N[,N..]
//!                      | tcpflags [!]FLAG[,..] | dscp D[,D..] | uid USER
//!                      | layer2) | keep-state [:FLOW]
//!     MAC     = any | aa:bb:cc:dd:ee:ff      T = 0x88b5 | 2048 | A-B | ip|ipv6|arp|vlan
//!     N       = 40 | 0-100                   FLAG = fin|syn|rst|psh|ack|urg|ece|cwr
//!     D       = 0..63 | be | ef | va | cs0..cs7 | af11..af43
//!     USER    = a number, or a name (resolved by the runner)
//! delete N [N...] | flush | list | show | set one_pass 0|1
//!     T, FLOW = a number 0..65535 (tables), or a name of 1..63 of
//!               A-Z a-z 0-9 _ - . (not all digits, not 'all')
//! table T add ADDR[/LEN] [VALUE] | table T delete ADDR[/LEN]
//! table T create [type addr] | table T destroy
//! table T|all flush | table T|all list
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

use crate::ast::{AccountingSpec, AqmSpec, L2Spec, OverheadSpec, PieSpec, RedSpec};
use crate::ast::{
    Action, AddrMatch, Chance, Command, DistSpec, Endpoint, IpNet, Jitter, LossSpec, MacMatch,
    NumRange, OptionKind, PipeSpec, PortRange, Proto, ReorderSpec, RuleOption, RuleSpec, TableId,
    TcpFlags, UserMatch, DEFAULT_RULE, MAX_PIPE, MAX_RULE, MAX_TABLE, MIN_PIPE, MIN_RULE,
};
use crate::ast::{MaskSpec, QueueSpec, QueueTarget, SchedSpec, WirelessError, WirelessSpec};
use crate::ast::{NetemRate, SlotDelaySpec, SlotSpec};
use crate::error::{ParseError, Spanned};
use crate::lexer::{tokenize_line, Token, TokenKind};
use crate::presets::{self, Side};
use crate::units::{self, UnitError};
use pipelab_engine::config::JitterOrder;
use pipelab_engine::mask::MAX_BUCKETS;
use pipelab_engine::models::Standard;
use pipelab_engine::sched::{registry, SchedKind, SchedParam, MAX_QUANTUM, MAX_WEIGHT};

/// The commands, as listed in hints.
pub const COMMANDS: &str = "pipe, sched, queue, add, delete, flush, list, show, set, table";

/// ipfw commands that pipelab will support later.
const LATER_COMMANDS: &[&str] = &["nat", "zero", "resetlog", "enable", "disable"];

/// Whether `word` is a command of the language (or one of ipfw's that
/// the language refuses as not supported yet): what a line of a
/// configuration starts with.
pub fn is_command(word: &str) -> bool {
    let w = word.to_ascii_lowercase();
    // `ipfw` and `dnctl` in front of a command are taken as written.
    COMMANDS.split(", ").any(|c| c == w)
        || LATER_COMMANDS.contains(&w.as_str())
        || w == "ipfw"
        || w == "dnctl"
}

/// ipfw actions that pipelab does not support yet.
const LATER_ACTIONS: &[&str] = &[
    "unreach6", "reset6", "fwd", "forward", "divert", "tee", "nat", "netgraph", "ngtee", "setfib",
    "setdscp", "call", "return", "tag", "untag", "altq", "reass", "abort", "abort6",
];

/// ipfw rule options that pipelab does not support yet.
const LATER_OPTIONS: &[&str] = &[
    "ipttl",
    "iptos",
    "ipid",
    "ipoptions",
    "ipprecedence",
    "ipversion",
    "tcpoptions",
    "tcpseq",
    "tcpack",
    "tcpwin",
    "tcpdatalen",
    "tcpmss",
    "gid",
    "jail",
    "table",
    "lookup",
    "record-state",
    "limit",
    "established",
    "setup",
    "frag",
    "icmptypes",
    "icmp6types",
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

/// The queue management words; a pipe takes at most one.
const AQM_WORDS: &[&str] = &["red", "gred", "codel", "pie"];

/// Words dummynet takes after `pipe N config` that belong to a flow
/// queue or a scheduler (`sbin/ipfw/dummynet.c`, `ipfw_config_pipe`: a
/// pipe's own FIFO queue and scheduler take them), with where pipelab
/// takes them instead.
const PIPE_ELSEWHERE: &[(&str, &str)] = &[
    ("weight", "a weight is a flow queue's: queue N config pipe P weight W"),
    ("lmax", LMAX_HINT),
    ("maxlen", LMAX_HINT),
    ("pri", PRI_HINT),
    ("priority", PRI_HINT),
    ("sched", "a pipe's queue feeds the pipe itself: a flow queue names its scheduler, queue N config sched S"),
    ("pipe", "a pipe's queue feeds the pipe itself: a flow queue names its pipe, queue N config pipe P"),
    ("type", "a pipe's scheduler is configured as a scheduler: sched N config pipe N type T"),
];

/// dummynet's `lmax` (QFQ's largest packet), where pipelab takes it.
const LMAX_HINT: &str =
    "QFQ's largest packet is its quantum: sched N config pipe N type qfq quantum BYTES";

/// dummynet's `pri`, where pipelab takes it.
const PRI_HINT: &str =
    "the prio scheduler takes a flow queue's priority from its weight, as dummynet's dn_sched_prio.c: queue N config sched S weight W";

/// Words of fq_codel and fq_pie (`sbin/ipfw/dummynet.c`,
/// `process_extra_parms`) that pipelab's schedulers do not take.
const FQ_LATER: &[&str] = &[
    "limit",
    "flows",
    "tupdate",
    "alpha",
    "beta",
    "max_burst",
    "max_ecnth",
    "capdrop",
    "nocapdrop",
    "onoff",
    "dre",
    "ts",
    "derand",
    "noderand",
];

/// Words of pie (`sbin/ipfw/dummynet.c`, `process_extra_parms`) that
/// pipelab's PIE does not take: its ECN threshold and its mode switches.
const PIE_LATER: &[&str] = &[
    "max_ecnth",
    "capdrop",
    "nocapdrop",
    "onoff",
    "dre",
    "ts",
    "derand",
    "noderand",
];

const WIRELESS_HINT: &str =
    "e.g. wireless 802.11b rate 11Mbit/s snr 20dB netload 1% collision 0.06 retries 7";

const MASK_HINT: &str = "e.g. mask src-ip 0xffffffff or mask src-ip6 /64 dst-port 0xffff";

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

/// Parses the parameters of a pipe alone: the words after `pipe N config`
/// (`bw 10Mbit/s delay 20ms queue 50`), as `pipelab shell --link` takes
/// them. Errors are on line 1 and their columns count from the start of
/// `text`; an empty text is a pipe with every default.
///
/// A preset among them (`preset nlc-3g/down`) must name its side: see
/// [`parse_side_params`] for words whose side is known.
pub fn parse_pipe_params(text: &str) -> Result<PipeSpec, ParseError> {
    params(text, None)
}

/// [`parse_pipe_params`] for the words of one direction of a link
/// (`--uplink`, `--downlink`, each direction of `--link`): a preset named
/// without a side takes `side` (`--link preset:nlc-3g`).
pub fn parse_side_params(text: &str, side: Side) -> Result<PipeSpec, ParseError> {
    params(text, Some(side))
}

fn params(text: &str, side: Option<Side>) -> Result<PipeSpec, ParseError> {
    let toks = tokenize_line(text, 1);
    let (toks, found) = match presets::expand(&toks, side)? {
        Some(x) => x,
        None => (toks, Vec::new()),
    };
    let mut p = Parser::new(&toks, 1);
    p.pipe_spec()
        .and_then(|spec| p.finish().map(|()| spec))
        .map_err(|e| presets::explain(e, &found))
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
    match presets::expand(toks, None)? {
        Some((toks, found)) => parse_expanded(&toks, line).map_err(|e| presets::explain(e, &found)),
        None => parse_expanded(toks, line),
    }
}

/// [`parse_tokens`] once presets are expanded.
fn parse_expanded(toks: &[Token<'_>], line: u32) -> Result<Option<Spanned<Command>>, ParseError> {
    let mut p = Parser::new(toks, line);
    if let Some(head) = p.peek().filter(|t| t.is_word("ipfw") || t.is_word("dnctl")) {
        p.pos += 1;
        if p.peek().is_some_and(|t| t.is_word("-q")) {
            p.pos += 1;
        }
        if p.peek().is_none() {
            return Err(p.err_eol(
                format!("missing command after '{}'", head.text),
                Some(hint_commands()),
            ));
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

    /// When `word` (just read) is a unit written apart from the number
    /// before it (`bw 10 Mbit/s`, `delay 5 ms`), the hint that joins them.
    fn unit_apart(&self, word: &str) -> Option<String> {
        let number = self.pos.checked_sub(2).and_then(|i| self.toks.get(i))?.text;
        let numeric = !number.is_empty()
            && number.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            && word.starts_with(|c: char| c.is_ascii_alphabetic());
        let joined = format!("{number}{word}");
        let is_value = units::parse_rate(&joined).is_ok()
            || units::parse_delay(&joined).is_ok()
            || units::parse_size(&joined).is_ok();
        (numeric && is_value)
            .then(|| format!("a unit follows its number without a space: write {joined}"))
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
            "sched" => self.sched(),
            "queue" => self.queue_cmd(),
            "add" => self.add(),
            "delete" => self.delete(),
            "flush" => Ok(Command::Flush),
            "list" => Ok(Command::List),
            "show" => Ok(Command::Show),
            "set" => self.set(),
            "table" => self.table(),
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
                "delay" | "latency" => (
                    "delay",
                    "e.g. delay 20ms, delay 20ms 5ms 25% or delay trace:FILE",
                ),
                "limit" => ("limit", "e.g. limit 1000"),
                "rate" => ("rate", "e.g. rate 10mbit or rate 5kbit 20 100 5"),
                "slot" => (
                    "slot",
                    "e.g. slot 800us 1ms packets 32 or slot distribution normal 1ms 200us",
                ),
                "seed" => ("seed", "e.g. seed 42"),
                "gap" => ("gap", "e.g. gap 5"),
                "noecn" => ("noecn", "noecn"),
                "noerror" => ("noerror", "noerror"),
                "droptail" => ("droptail", "droptail"),
                "distribution" => (
                    "distribution",
                    "e.g. distribution normal or distribution file:delays.txt",
                ),
                "jitter-order" => ("jitter-order", "jitter-order keep or jitter-order allow"),
                "queue" => ("queue", "e.g. queue 50 or queue 100KB"),
                "spill" => ("spill", "spill"),
                "plr" => ("plr", "e.g. plr 0.05"),
                "loss" | "drop" => (
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
                "red" => ("red", "e.g. red 0.002/5/15/0.1"),
                "gred" => ("gred", "e.g. gred 0.002/5/15/0.1"),
                "codel" => ("codel", "e.g. codel target 5ms interval 100ms"),
                "pie" => ("pie", "e.g. pie target 15ms tupdate 15ms"),
                "profile" => ("profile", "e.g. profile wlan.profile"),
                "burst" => ("burst", "e.g. burst 64KB"),
                "ecn" => ("ecn", "ecn"),
                "accounting" => ("accounting", "e.g. accounting l3 or accounting l2"),
                "overhead" => ("overhead", "e.g. overhead 10 cellsize 48 celloverhead 5"),
                "mask" | "sched_mask" | "flow_mask" => ("mask", MASK_HINT),
                "buckets" => ("buckets", "e.g. buckets 256"),
                "wireless" => ("wireless", WIRELESS_HINT),
                "timevarying" => ("timevarying", "e.g. timevarying link.markov"),
                "timeline" => ("timeline", "e.g. timeline handover.timeline"),
                "jitter" => {
                    return Err(self.err_at(
                        tok,
                        "unknown pipe parameter 'jitter'",
                        Some("netem's jitter follows the delay: delay 20ms 5ms".into()),
                    ))
                }
                w if PIPE_ELSEWHERE.iter().any(|(p, _)| *p == w) => {
                    let hint = PIPE_ELSEWHERE
                        .iter()
                        .find(|(p, _)| *p == w)
                        .map(|(_, h)| (*h).to_string());
                    return Err(self.err_at(
                        tok,
                        format!("'{}' is not a pipe's parameter", tok.text),
                        hint,
                    ));
                }
                _ => {
                    return Err(self.err_at(
                        tok,
                        format!("unknown pipe parameter '{}'", tok.text),
                        Some(self.unit_apart(tok.text).unwrap_or_else(|| {
                            format!("known parameters: {}", PipeSpec::PARAMS.join(", "))
                        })),
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
            if AQM_WORDS.contains(&name) {
                if let Some((other, first, _)) = seen.iter().find(|(n, _, _)| AQM_WORDS.contains(n))
                {
                    return Err(self.err_at(
                        tok,
                        format!("'{}' cannot be combined with '{other}'", tok.text),
                        Some(format!(
                            "a pipe has one queue management (red, gred, codel or pie); '{other}' was given at column {}",
                            first.column
                        )),
                    ));
                }
            }
            let tail_drop = |n: &str| n == "droptail";
            let conflict = if tail_drop(name) {
                seen.iter().find(|(n, _, _)| AQM_WORDS.contains(n))
            } else if AQM_WORDS.contains(&name) {
                seen.iter().find(|(n, _, _)| tail_drop(n))
            } else {
                None
            };
            if let Some((other, first, _)) = conflict {
                return Err(self.err_at(
                    tok,
                    format!("'{}' cannot be combined with '{other}'", tok.text),
                    Some(format!(
                        "droptail is the tail-drop queue, without red, gred, codel or pie; '{other}' was given at column {}",
                        first.column
                    )),
                ));
            }
            // codel and pie take only optional words: the keyword stands
            // for their value in error positions.
            if name == "ecn" || name == "noecn" {
                let other = if name == "ecn" { "noecn" } else { "ecn" };
                if let Some((_, first, _)) = seen.iter().find(|(n, _, _)| *n == other) {
                    return Err(self.err_at(
                        tok,
                        format!("'{}' cannot be combined with '{other}'", tok.text),
                        Some(format!("'{other}' was given at column {}", first.column)),
                    ));
                }
            }
            let value = if matches!(
                name,
                "codel"
                    | "pie"
                    | "mask"
                    | "ecn"
                    | "noecn"
                    | "noerror"
                    | "droptail"
                    | "slot"
                    | "spill"
            ) {
                tok
            } else {
                self.expect_word("value", Some(example))?
            };
            match name {
                "bw" if lower(&value).starts_with("trace:") => {
                    spec.bw_trace = Some(self.trace_path(value, "e.g. bw trace:link.trace")?);
                }
                "bw" => spec.bw = Some(self.unit(value, units::parse_rate(value.text))?),
                "red" | "gred" => spec.aqm = Some(AqmSpec::Red(self.red(value, name == "gred")?)),
                "codel" => spec.aqm = Some(self.codel()?),
                "pie" => spec.aqm = Some(self.pie()?),
                "profile" if WirelessSpec::profile(value.text).is_some() => {
                    // A built-in 802.11 profile: a wireless link.
                    if let Some((_, first, _)) = seen.iter().find(|(n, _, _)| *n == "wireless") {
                        return Err(self.err_at(
                            tok,
                            format!("duplicate wireless link '{}'", value.text),
                            Some(format!(
                                "a wireless link was already given at column {}",
                                first.column
                            )),
                        ));
                    }
                    spec.wireless = Some(self.wireless(tok, value)?);
                    seen.push(("wireless", tok, value));
                    continue;
                }
                "profile" => spec.profile = Some(value.text.to_string()),
                "wireless" => spec.wireless = Some(self.wireless(tok, value)?),
                "timevarying" => spec.timevarying = Some(value.text.to_string()),
                "timeline" => spec.timeline = Some(value.text.to_string()),
                "delay" if lower(&value).starts_with("trace:") => {
                    spec.delay_trace = Some(self.trace_path(value, "e.g. delay trace:rtt.trace")?);
                }
                "burst" => spec.burst = Some(self.unit(value, units::parse_burst(value.text))?),
                "ecn" => spec.ecn = true,
                "noecn" => spec.noecn = true,
                "limit" => {
                    spec.limit = Some(self.number(
                        value,
                        "limit",
                        1,
                        pipelab_engine::config::MAX_QUEUE_SLOTS,
                        Some("netem's limit is a number of packets".into()),
                    )?)
                }
                "rate" => spec.rate = Some(self.netem_rate(value)?),
                "slot" => spec.slot = Some(self.slot()?),
                "seed" => {
                    if !is_digits(value.text) {
                        return Err(self.err_at(
                            value,
                            format!("invalid seed '{}'", value.text),
                            Some("a seed is a whole number, e.g. seed 42".into()),
                        ));
                    }
                    spec.seed = Some(value.text.parse::<u64>().map_err(|_| {
                        self.err_at(
                            value,
                            format!("seed {} is out of range 0..{}", value.text, u64::MAX),
                            None,
                        )
                    })?)
                }
                "gap" => spec.gap = Some(self.number(value, "gap", 1, u32::MAX, None)?),
                "accounting" => spec.accounting = Some(self.accounting(value)?),
                "overhead" => spec.overhead = Some(self.overhead(value)?),
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
                "noerror" => spec.noerror = true,
                "droptail" => spec.droptail = true,
                "spill" => spec.spill = true,
                "plr" if self.peek().is_some_and(|t| t.kind == TokenKind::Comma) => {
                    // ipfw's `plr K,p,H,r` (Gilbert-Elliott).
                    let mut v = [self.unit(value, units::parse_probability(value.text))?; 4];
                    for slot in v.iter_mut().skip(1) {
                        match self.next() {
                            Some(t) if t.kind == TokenKind::Comma => {}
                            _ => {
                                return Err(self.err_at(
                                    value,
                                    "ipfw's Gilbert-Elliott plr takes four probabilities",
                                    Some("e.g. plr 0.001,0.01,0.5,0.3 (K,p,H,r)".into()),
                                ))
                            }
                        }
                        let t = self.expect_word(
                            "probability",
                            Some("e.g. plr 0.001,0.01,0.5,0.3 (K,p,H,r)"),
                        )?;
                        *slot = self.unit(t, units::parse_probability(t.text))?;
                    }
                    spec.plr_ge = Some(v);
                }
                "plr" => spec.plr = Some(self.unit(value, units::parse_probability(value.text))?),
                "loss" => spec.loss = Some(self.loss(value)?),
                "duplicate" => spec.duplicate = Some(self.chance(value)?),
                "reorder" => spec.reorder = Some(self.reorder(value)?),
                "corrupt" => spec.corrupt = Some(self.chance(value)?),
                "ber" => spec.ber = Some(self.unit(value, units::parse_ber(value.text))?),
                "mask" => spec.mask = Some(self.mask()?),
                "buckets" => {
                    spec.buckets = Some(self.number(value, "buckets", 1, MAX_BUCKETS, None)?)
                }
                _ => spec.queue = Some(self.unit(value, units::parse_queue(value.text))?),
            }
            seen.push((name, tok, value));
        }
        if let Err(e) = spec.check() {
            let at = seen
                .iter()
                .find(|(n, _, _)| *n == e.param)
                .map(|&(_, k, v)| (k, v));
            return Err(match at {
                // A word without a value of its own (codel, pie).
                Some((k, v)) if k.column == v.column => {
                    self.err_at(v, format!("invalid {}: {}", e.param, e.reason), None)
                }
                Some((_, v)) => self.err_at(
                    v,
                    format!("invalid {} '{}': {}", e.param, v.text, e.reason),
                    None,
                ),
                None => self.err_eol(e.to_string(), None),
            });
        }
        Ok(spec)
    }

    /// The words of a wireless link after its head (`wireless STANDARD`
    /// or `profile NAME`): `rate RATE` after a standard, then any of
    /// [`WirelessSpec::OPTIONS`]. Each value is checked as it is read, so an
    /// error points at the word that is wrong.
    fn wireless(&mut self, head: Token<'a>, value: Token<'a>) -> Result<WirelessSpec, ParseError> {
        let mut spec = WirelessSpec::default();
        let head_word = lower(&head);
        spec.words.push((head_word.clone(), value.text.to_string()));
        let check = |p: &Self, spec: &WirelessSpec, at: Token<'a>| match spec.to_config() {
            Ok(_) => Ok(()),
            // A value the language refuses: the same error as anywhere.
            Err(WirelessError::Value(e)) => Err(p.err_at(at, e.message, e.hint)),
            Err(WirelessError::Link(e)) => Err(p.err_at(
                at,
                format!("invalid wireless link: {e}"),
                Some(WIRELESS_HINT.into()),
            )),
        };
        if head_word == "wireless" {
            if Standard::from_name(value.text).is_none() {
                return Err(self.err_at(
                    value,
                    format!("unknown wireless standard '{}'", value.text),
                    Some("expected 802.11b or 802.11g".into()),
                ));
            }
            if !self.peek_is("rate") {
                return Err(self.err_eol(
                    format!("missing 'rate' after 'wireless {}'", value.text),
                    Some(WIRELESS_HINT.into()),
                ));
            }
            let kw = self.expect_word("rate", Some(WIRELESS_HINT))?;
            let rate = self.expect_word("value", Some(WIRELESS_HINT))?;
            spec.words.push((lower(&kw), rate.text.to_string()));
            check(self, &spec, rate)?;
        }
        while let Some(t) = self.peek() {
            let w = lower(&t);
            if !WirelessSpec::OPTIONS.contains(&w.as_str()) {
                break;
            }
            self.pos += 1;
            if spec.words.iter().any(|(k, _)| *k == w) {
                return Err(self.err_at(t, format!("duplicate wireless word '{}'", t.text), None));
            }
            let v = self.expect_word("value", Some(WIRELESS_HINT))?;
            spec.words.push((w, v.text.to_string()));
            check(self, &spec, v)?;
        }
        Ok(spec)
    }

    /// `W/MIN/MAX/P` after `red` or `gred`; thresholds are whole numbers
    /// with an optional `K` (×1024), as ipfw reads them.
    fn red(&self, value: Token<'a>, gentle: bool) -> Result<RedSpec, ParseError> {
        let word = if gentle { "gred" } else { "red" };
        let hint = || Some(format!("e.g. {word} 0.002/5/15/0.1"));
        let parts: Vec<&str> = value.text.split('/').collect();
        let [w_q, min_th, max_th, max_p] = parts[..] else {
            return Err(self.err_at(
                value,
                format!(
                    "invalid {word} '{}': expected w_q/min_th/max_th/max_p",
                    value.text
                ),
                hint(),
            ));
        };
        let threshold = |name: &str, t: &str| {
            let (digits, mult) = match t.strip_suffix(['K', 'k']) {
                Some(d) => (d, 1024),
                None => (t, 1),
            };
            is_digits(digits)
                .then(|| digits.parse::<u64>().ok()?.checked_mul(mult))
                .flatten()
                .ok_or_else(|| {
                    self.err_at(
                        value,
                        format!("invalid {name} '{t}' in '{}'", value.text),
                        Some(
                            "thresholds are whole numbers of slots, or of bytes with a queue in bytes (K = 1024)"
                                .into(),
                        ),
                    )
                })
        };
        Ok(RedSpec {
            gentle,
            w_q: self.unit(value, units::parse_probability(w_q))?,
            min_th: threshold("min_th", min_th)?,
            max_th: threshold("max_th", max_th)?,
            max_p: self.unit(value, units::parse_probability(max_p))?,
        })
    }

    /// The path of a `trace:PATH` value (`bw`, `delay`, `loss`), which
    /// must not be empty.
    fn trace_path(&self, value: Token<'a>, example: &str) -> Result<String, ParseError> {
        let path = &value.text["trace:".len()..];
        if path.is_empty() {
            return Err(self.err_at(value, "missing path after 'trace:'", Some(example.into())));
        }
        Ok(path.to_string())
    }

    /// A duration after one of codel's or pie's words, which must not repeat.
    fn aqm_duration(
        &mut self,
        word: Token<'a>,
        slot: &mut Option<pipelab_engine::time::Duration>,
        example: &str,
    ) -> Result<(), ParseError> {
        if slot.is_some() {
            return Err(self.err_at(word, format!("duplicate '{}'", word.text), None));
        }
        let v = self.expect_word("duration", Some(example))?;
        // A bare number is milliseconds, as dummynet's time_to_us reads it.
        *slot = Some(self.unit(v, units::parse_delay(v.text))?);
        Ok(())
    }

    /// `[target D] [interval D]` after `codel`, in any order.
    fn codel(&mut self) -> Result<AqmSpec, ParseError> {
        const EX: &str = "e.g. codel target 5ms interval 100ms";
        let (mut target, mut interval) = (None, None);
        while let Some(t) = self.peek() {
            let slot = match lower(&t).as_str() {
                "target" => &mut target,
                "interval" => &mut interval,
                x @ ("limit" | "flows" | "quantum") => {
                    return Err(self.err_at(
                        t,
                        format!("'{}' is not a parameter of codel", t.text),
                        Some(format!(
                            "dummynet: {x} is for fq_codel; a queue's limit is queue N"
                        )),
                    ))
                }
                _ => break,
            };
            self.pos += 1;
            self.aqm_duration(t, slot, EX)?;
        }
        Ok(AqmSpec::Codel { target, interval })
    }

    /// `[target D] [tupdate D] [alpha A] [beta B] [max_burst D]` after
    /// `pie`, in any order.
    fn pie(&mut self) -> Result<AqmSpec, ParseError> {
        const EX: &str = "e.g. pie target 15ms tupdate 15ms alpha 0.125 beta 1.25 max_burst 150ms";
        let mut p = PieSpec::default();
        while let Some(t) = self.peek() {
            let w = lower(&t);
            let gain = match w.as_str() {
                "target" | "tupdate" | "max_burst" => None,
                "alpha" => Some(&mut p.alpha),
                "beta" => Some(&mut p.beta),
                x if PIE_LATER.contains(&x) => {
                    return Err(self.err_at(
                        t,
                        format!("pie parameter '{}' is not supported yet", t.text),
                        Some(
                            "pipelab's PIE takes target, tupdate, alpha, beta and max_burst (and the pipe's ecn or noecn)"
                                .into(),
                        ),
                    ))
                }
                x @ ("limit" | "flows" | "quantum") => {
                    return Err(self.err_at(
                        t,
                        format!("'{}' is not a parameter of pie", t.text),
                        Some(format!("dummynet: {x} is for fq_pie; a queue's limit is queue N")),
                    ))
                }
                _ => break,
            };
            self.pos += 1;
            match gain {
                Some(slot) => {
                    if slot.is_some() {
                        return Err(self.err_at(t, format!("duplicate '{}'", t.text), None));
                    }
                    let v = self.expect_word("value", Some(EX))?;
                    *slot = Some(self.unit(v, units::parse_decimal(v.text))?);
                }
                None => {
                    let slot = match w.as_str() {
                        "target" => &mut p.target,
                        "tupdate" => &mut p.tupdate,
                        _ => &mut p.max_burst,
                    };
                    self.aqm_duration(t, slot, EX)?;
                }
            }
        }
        Ok(AqmSpec::Pie(p))
    }

    /// `l3` or `l2 [header N] [fcs N] [preamble N] [ifg N] [minframe N]`.
    fn accounting(&mut self, value: Token<'a>) -> Result<AccountingSpec, ParseError> {
        let l2_word = |t: &Token<'_>| AccountingSpec::L2_WORDS.iter().position(|w| t.is_word(w));
        match lower(&value).as_str() {
            "l3" => {
                if let Some(t) = self.peek().filter(|t| l2_word(t).is_some()) {
                    return Err(self.err_at(
                        t,
                        format!("'{}' needs accounting l2", t.text),
                        Some("accounting l3 charges the IP length only".into()),
                    ));
                }
                Ok(AccountingSpec::L3)
            }
            "l2" => {
                let mut l = L2Spec::default();
                while let Some(t) = self.peek() {
                    let Some(k) = l2_word(&t) else { break };
                    self.pos += 1;
                    let slot = match k {
                        0 => &mut l.header,
                        1 => &mut l.fcs,
                        2 => &mut l.preamble,
                        3 => &mut l.ifg,
                        _ => &mut l.minframe,
                    };
                    if slot.is_some() {
                        return Err(self.err_at(t, format!("duplicate '{}'", t.text), None));
                    }
                    let v = self.expect_word(
                        "value",
                        Some("e.g. accounting l2 header 14 fcs 4 preamble 8 ifg 12"),
                    )?;
                    *slot = Some(self.number(v, AccountingSpec::L2_WORDS[k], 0, 65_535, None)?);
                }
                Ok(AccountingSpec::L2(l))
            }
            _ => Err(self.err_at(
                value,
                format!("unknown accounting '{}'", value.text),
                Some("expected l3 (IP length, Dummynet) or l2 (Ethernet frame)".into()),
            )),
        }
    }

    /// A whole number of bytes that may be negative, `-65535..=65535`.
    fn signed(&self, tok: Token<'_>, what: &str) -> Result<i32, ParseError> {
        let digits = tok.text.strip_prefix('-').unwrap_or(tok.text);
        if !is_digits(digits) {
            return Err(self.err_at(
                tok,
                format!("invalid {what} '{}'", tok.text),
                Some("write a whole number of bytes, e.g. 14 or -4".into()),
            ));
        }
        match tok.text.parse::<i64>() {
            Ok(n) if (-65_535..=65_535).contains(&n) => Ok(n as i32),
            _ => Err(self.err_at(
                tok,
                format!("{what} {} is out of range -65535..65535", tok.text),
                None,
            )),
        }
    }

    /// `N [cellsize C [celloverhead O]]` after `overhead`.
    fn overhead(&mut self, value: Token<'a>) -> Result<OverheadSpec, ParseError> {
        let mut o = OverheadSpec {
            overhead: self.signed(value, "overhead")?,
            cellsize: None,
            celloverhead: None,
        };
        if self.peek_is("cellsize") {
            self.pos += 1;
            let v = self.expect_word("value", Some("e.g. cellsize 48"))?;
            o.cellsize = Some(self.number(v, "cellsize", 1, 65_535, None)?);
            if self.peek_is("celloverhead") {
                self.pos += 1;
                let v = self.expect_word("value", Some("e.g. celloverhead 5"))?;
                o.celloverhead = Some(self.signed(v, "celloverhead")?);
            }
        } else if let Some(t) = self.peek().filter(|t| t.is_word("celloverhead")) {
            return Err(self.err_at(
                t,
                "'celloverhead' needs a cellsize",
                Some("e.g. overhead 10 cellsize 48 celloverhead 5".into()),
            ));
        }
        Ok(o)
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
            _ if value.text.contains('/') && !w.starts_with("file:") => {
                DistSpec::Table(value.text.to_string())
            }
            _ if crate::files::find_tc_table(value.text).is_some() => {
                DistSpec::Table(value.text.to_string())
            }
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
            "random" => {
                let p = self.expect_word("percentage", Some("e.g. loss random 1%"))?;
                return self.chance(p).map(LossSpec::Random);
            }
            "gemodel" => (4, false),
            "state" => (5, true),
            _ if w.starts_with("trace:") => {
                return Ok(LossSpec::Trace(
                    self.trace_path(value, "e.g. loss trace:drops.txt")?,
                ));
            }
            _ if self.is_number_like(value) => return self.chance(value).map(LossSpec::Random),
            _ => {
                return Err(self.err_at(
                    value,
                    format!("unknown loss model '{}'", value.text),
                    Some("expected a percentage, random, gemodel, state or trace:FILE".into()),
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

    /// `RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]` after netem's
    /// `rate`, the rate in tc's units, the rest positional as tc reads
    /// them (signed, unsigned, signed).
    fn netem_rate(&mut self, value: Token<'a>) -> Result<NetemRate, ParseError> {
        let mut r = NetemRate {
            rate: self.unit(value, units::parse_tc_rate(value.text))?,
            overhead: None,
            cellsize: None,
            celloverhead: None,
        };
        let signed_next = |p: &Self| {
            p.peek().is_some_and(|t| {
                t.kind == TokenKind::Word && {
                    let d = t.text.strip_prefix('-').unwrap_or(t.text);
                    d.starts_with(|c: char| c.is_ascii_digit())
                }
            })
        };
        if signed_next(self) {
            let t = self.expect_word("packet overhead", None)?;
            r.overhead = Some(self.signed(t, "packet overhead")?);
            if self.peek().is_some_and(|t| is_digits(t.text)) {
                let t = self.expect_word("cell size", None)?;
                r.cellsize = Some(self.number(t, "cell size", 1, 65_535, None)?);
                if signed_next(self) {
                    let t = self.expect_word("cell overhead", None)?;
                    r.celloverhead = Some(self.signed(t, "cell overhead")?);
                }
            }
        }
        Ok(r)
    }

    /// The words after netem's `slot`: `MIN [MAX]` or `distribution D
    /// DELAY JITTER`, then `[packets N] [bytes N]`. Times in tc's units
    /// (a bare number is nanoseconds, as tc reads it).
    fn slot(&mut self) -> Result<SlotSpec, ParseError> {
        const EX: &str = "e.g. slot 800us 1ms packets 32 or slot distribution normal 1ms 200us";
        let first = self.expect_word("slot delay", Some(EX))?;
        let delay = if first.is_word("distribution") {
            let d = self.expect_word("distribution", Some(EX))?;
            let dist = self.distribution(d)?;
            let dl = self.expect_word("slot delay", Some(EX))?;
            let delay = self.unit(dl, units::parse_tc_time(dl.text))?;
            let j = self.expect_word("slot jitter", Some(EX))?;
            let jitter = self.unit(j, units::parse_tc_time(j.text))?;
            SlotDelaySpec::Dist {
                dist,
                delay,
                jitter,
            }
        } else if self.is_number_like(first) {
            let min = self.unit(first, units::parse_tc_time(first.text))?;
            let max = match self.next_number() {
                Some(t) => {
                    let m = self.unit(t, units::parse_tc_time(t.text))?;
                    if m < min {
                        return Err(self.err_at(
                            t,
                            format!("slot's longest delay {m} is below its shortest {min}"),
                            Some(EX.into()),
                        ));
                    }
                    Some(m)
                }
                None => None,
            };
            SlotDelaySpec::Range { min, max }
        } else {
            return Err(self.err_at(
                first,
                format!("unknown slot parameter '{}'", first.text),
                Some(EX.into()),
            ));
        };
        let mut spec = SlotSpec {
            delay,
            packets: None,
            bytes: None,
        };
        if self.peek_is("packets") {
            self.pos += 1;
            let t = self.expect_word("packets", Some("e.g. packets 32"))?;
            spec.packets = Some(self.number(t, "packets", 1, i32::MAX as u32, None)?);
        }
        if self.peek_is("bytes") {
            self.pos += 1;
            let t = self.expect_word("bytes", Some("e.g. bytes 64k"))?;
            let b = self.unit(t, units::parse_tc_size(t.text))?;
            if b == 0 || b > i32::MAX as u64 {
                return Err(self.err_at(
                    t,
                    format!("slot bytes {b} is out of range 1..{}", i32::MAX),
                    None,
                ));
            }
            spec.bytes = Some(b);
        }
        Ok(spec)
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
        let action_tok = self.peek();
        rule.action = self.action()?;
        if rule.action == Action::CheckState {
            return self.check_state(rule);
        }
        if let Some(t) = self.peek().filter(|t| t.is_word("tablearg")) {
            return Err(self.err_at(
                t,
                format!("'tablearg' cannot follow '{}'", rule.action),
                Some("tablearg works with pipe and skipto".into()),
            ));
        }
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
        if rule.action.is_tablearg() && !looks_up_a_table(&rule) {
            let msg = format!("'{}' needs a table(N) lookup in the rule", rule.action);
            let hint = Some(format!("e.g. add {} ip from table(1) to any", rule.action));
            return Err(match action_tok {
                Some(t) => self.err_at(t, msg, hint),
                None => self.err_eol(msg, hint),
            });
        }
        Ok(Command::Add(rule))
    }

    /// The rest of `add [N] check-state [:FLOW|:any] [log]`: no body, no
    /// options (ipfw: "check-state rules do not have a body").
    fn check_state(&mut self, mut rule: RuleSpec) -> Result<Command, ParseError> {
        if let Some(t) = self.peek().filter(|t| t.text.starts_with(':')) {
            self.pos += 1;
            rule.state_flow = self.flow_name(t, true)?;
        }
        if self.peek_is("log") {
            self.pos += 1;
            rule.log = true;
        }
        if let Some(t) = self.peek() {
            return Err(self.err_at(
                t,
                format!("unexpected '{}': check-state has no body", t.text),
                Some("write add N check-state [:FLOW] and match in the keep-state rule".into()),
            ));
        }
        Ok(Command::Add(rule))
    }

    /// A state flow name `:NAME` (the word `tok`), `None` for ipfw's
    /// `:default`; `:any` only where `any` is allowed (check-state).
    fn flow_name(&self, tok: Token<'_>, any: bool) -> Result<Option<String>, ParseError> {
        const HINT: &str = "a flow name is 1..63 of A-Z a-z 0-9 _ - ., e.g. keep-state :web";
        let name = tok.text.get(1..).unwrap_or("");
        if name.eq_ignore_ascii_case("default") {
            return Ok(None);
        }
        if name.eq_ignore_ascii_case("any") {
            if any {
                return Ok(Some("any".into()));
            }
            return Err(self.err_at(
                tok,
                "':any' names every flow: it is for check-state",
                Some("keep-state takes a name of its own, e.g. keep-state :web".into()),
            ));
        }
        if !crate::ast::is_object_name(name) {
            return Err(self.err_at(
                tok,
                format!("invalid flow name '{}'", tok.text),
                Some(HINT.into()),
            ));
        }
        Ok(Some(name.to_string()))
    }

    /// A table: digits are a number `0..=65535`, anything else an ipfw
    /// object name; `what` says where, for errors.
    fn table_id(&self, tok: Token<'_>, text: &str) -> Result<TableId, ParseError> {
        if is_digits(text) {
            return match text.parse::<u64>() {
                Ok(n) if n <= MAX_TABLE as u64 => Ok(TableId::Number(n as u32)),
                _ => Err(self.err_at(
                    tok,
                    format!("table number {text} is out of range 0..{MAX_TABLE}"),
                    None,
                )),
            };
        }
        if text.eq_ignore_ascii_case("all") || !crate::ast::is_object_name(text) {
            return Err(self.err_at(
                tok,
                format!("invalid table name '{text}'"),
                Some(
                    "a table is a number 0..65535 or a name of 1..63 of A-Z a-z 0-9 _ - . (not 'all')"
                        .into(),
                ),
            ));
        }
        Ok(TableId::Name(text.to_string()))
    }

    fn prob(&mut self) -> Result<crate::units::Probability, ParseError> {
        self.pos += 1;
        let v = self.expect_word("probability", Some("e.g. prob 0.2 or prob 20%"))?;
        self.unit(v, units::parse_probability(v.text))
    }

    fn action(&mut self) -> Result<Action, ParseError> {
        const HINT: &str =
            "actions: allow, deny, count, skipto N, pipe N, queue N, reset, unreach CODE, check-state";
        let tok = self.expect_word("action", Some(HINT))?;
        let w = lower(&tok);
        Ok(match w.as_str() {
            "allow" | "accept" | "pass" | "permit" => Action::Allow,
            "deny" | "drop" => Action::Deny,
            "count" => Action::Count,
            "skipto" if self.peek_is("tablearg") => {
                self.pos += 1;
                Action::SkiptoTablearg
            }
            "pipe" if self.peek_is("tablearg") => {
                self.pos += 1;
                Action::PipeTablearg
            }
            "skipto" => Action::Skipto(self.target(tok, "rule number", MIN_RULE, DEFAULT_RULE)?),
            "pipe" => Action::Pipe(self.target(tok, "pipe number", MIN_PIPE, MAX_PIPE)?),
            "queue" => Action::Queue(self.target(tok, "queue number", MIN_PIPE, MAX_PIPE)?),
            "reset" => Action::Reset,
            "check-state" => Action::CheckState,
            "reject" => Action::Unreach(1),
            "unreach" => {
                const CODES: &str = "a code 0..255 or net, host, protocol, port, needfrag, srcfail, net-unknown, host-unknown, isolated, net-prohib, host-prohib, tosnet, toshost, filter-prohib, host-precedence, precedence-cutoff";
                let c = self.expect_word("unreachable code", Some(CODES))?;
                let w = lower(&c);
                match crate::ast::UNREACH_CODES.iter().position(|n| *n == w) {
                    Some(i) => Action::Unreach(i as u8),
                    None => Action::Unreach(self.number(
                        c,
                        "unreachable code",
                        0,
                        255,
                        Some(CODES.into()),
                    )? as u8),
                }
            }
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
                format!("'{} tablearg' is not supported", action.text),
                Some("tablearg works with pipe and skipto".into()),
            ));
        }
        self.number(t, what, lo, hi, None)
    }

    fn proto(&self, tok: Token<'_>) -> Result<Proto, ParseError> {
        if let Some(p) = Proto::from_name(tok.text) {
            return Ok(p);
        }
        Ok(match lower(&tok).as_str() {
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
                    Some("protocols: ip, all, ip4, ip6, a name of FreeBSD's /etc/protocols (tcp, udp, icmp, sctp, gre, ipv6-icmp, ...), or a number 0..255".into()),
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
            TokenKind::Word if lower(&tok).starts_with("table(") => self.table_ref(tok),
            TokenKind::Word if lower(&tok).starts_with("'table(") => {
                // Pasted from a shell line ('table(1)'): the quotes are the
                // shell's.
                let unquoted = Token {
                    text: tok.text.trim_matches('\''),
                    column: tok.column + 1,
                    ..tok
                };
                self.table_ref(unquoted)
            }
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
                "via" => OptionKind::Via(self.iface()?),
                "recv" => OptionKind::Recv(self.iface()?),
                "xmit" => OptionKind::Xmit(self.iface()?),
                "mac" => {
                    const HINT: &str = "e.g. mac any 02:00:5e:00:53:01 (destination, then source)";
                    let d = self.expect_word("destination MAC address", Some(HINT))?;
                    let dst = self.mac(d)?;
                    let s = self.expect_word("source MAC address", Some(HINT))?;
                    let src = self.mac(s)?;
                    OptionKind::Mac { dst, src }
                }
                "mac-type" => OptionKind::MacType(self.list(
                    "mac-type",
                    "e.g. mac-type 0x88b5 or mac-type 0x0800-0x0806,ipv6",
                    Self::mac_type,
                )?),
                "iplen" => OptionKind::IpLen(self.list(
                    "length",
                    "e.g. iplen 40 or iplen 0-100,1500",
                    Self::ip_len,
                )?),
                "tcpflags" => OptionKind::TcpFlags(self.tcp_flags()?),
                "dscp" => OptionKind::Dscp(self.list(
                    "DSCP value",
                    "e.g. dscp 46, dscp ef or dscp af11,af12",
                    Self::dscp,
                )?),
                "uid" | "user" => OptionKind::Uid(self.user()?),
                "layer2" => OptionKind::Layer2,
                "keep-state" => {
                    if not {
                        return Err(self.err_at(
                            tok,
                            "'keep-state' cannot be negated",
                            Some("keep-state is an instruction, not a condition".into()),
                        ));
                    }
                    if rule.keep_state().is_some() {
                        return Err(self.err_at(tok, "duplicate 'keep-state'", None));
                    }
                    let name = match self.peek().filter(|t| t.text.starts_with(':')) {
                        Some(t) => {
                            self.pos += 1;
                            self.flow_name(t, false)?
                        }
                        None => None,
                    };
                    OptionKind::KeepState(name)
                }
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
                            "options: {} (each may follow 'not'), keep-state",
                            OptionKind::WORDS
                                .iter()
                                .filter(|w| **w != "keep-state")
                                .copied()
                                .collect::<Vec<_>>()
                                .join(", ")
                        )),
                    ))
                }
            };
            rule.options.push(RuleOption { not, kind });
        }
        Ok(())
    }

    /// `table(N)` or `table(N,VALUE)`, starting at the word `tok`; the
    /// lexer splits `table(1,5)` into `table(1`, `,`, `5)`.
    fn table_ref(&mut self, tok: Token<'a>) -> Result<AddrMatch, ParseError> {
        const HINT: &str = "write table(T) or table(T,VALUE), e.g. table(1) or table(T1)";
        let inner = tok.text.get("table(".len()..).unwrap_or("");
        let bad = |p: &Self, t: Token<'_>| {
            p.err_at(
                t,
                format!("invalid table reference '{}'", t.text),
                Some(HINT.into()),
            )
        };
        let (num, value) = if let Some(n) = inner.strip_suffix(')') {
            (n, None)
        } else if self.peek().is_some_and(|t| t.kind == TokenKind::Comma) {
            self.pos += 1;
            let v = match self.next() {
                Some(v) if v.kind == TokenKind::Word => v,
                _ => return Err(bad(self, tok)),
            };
            match v.text.trim_end_matches('\'').strip_suffix(')') {
                Some(text) => (inner, Some((v, text))),
                None => return Err(bad(self, v)),
            }
        } else {
            return Err(bad(self, tok));
        };
        if !is_digits(num) && !crate::ast::is_object_name(num) {
            return Err(bad(self, tok));
        }
        let table = self.table_id(tok, num)?;
        let value = match value {
            None => None,
            Some((v, text)) => {
                if !is_digits(text) {
                    return Err(bad(self, v));
                }
                match text.parse::<u32>() {
                    Ok(n) => Some(n),
                    Err(_) => {
                        return Err(self.err_at(
                            v,
                            format!("table value {text} is out of range 0..{}", u32::MAX),
                            None,
                        ))
                    }
                }
            }
        };
        Ok(AddrMatch::Table { table, value })
    }

    /// An interface name after `via`, `recv`, `xmit`.
    fn iface(&mut self) -> Result<String, ParseError> {
        let t = self.expect_word("interface name", Some("e.g. via eth0"))?;
        Ok(t.text.to_string())
    }

    /// `any` or `aa:bb:cc:dd:ee:ff`.
    fn mac(&self, tok: Token<'_>) -> Result<MacMatch, ParseError> {
        if tok.is_word("any") {
            return Ok(MacMatch::Any);
        }
        let mut a = [0u8; 6];
        let mut n = 0;
        let mut ok = true;
        for part in tok.text.split(':') {
            let valid =
                (1..=2).contains(&part.len()) && part.bytes().all(|b| b.is_ascii_hexdigit());
            match (a.get_mut(n), u8::from_str_radix(part, 16)) {
                (Some(slot), Ok(v)) if valid => *slot = v,
                _ => ok = false,
            }
            n += 1;
        }
        if ok && n == 6 {
            Ok(MacMatch::Addr(a))
        } else {
            Err(self.err_at(
                tok,
                format!("invalid MAC address '{}'", tok.text),
                Some("write any or six hex bytes like 02:00:5e:00:53:01".into()),
            ))
        }
    }

    /// A comma-separated list of at least one item, each read by `item`.
    fn list<T>(
        &mut self,
        what: &str,
        hint: &str,
        item: fn(&Self, Token<'a>) -> Result<T, ParseError>,
    ) -> Result<Vec<T>, ParseError> {
        let mut out = Vec::new();
        loop {
            let t = self.expect_word(what, Some(hint))?;
            out.push(item(self, t)?);
            if self.peek().is_some_and(|t| t.kind == TokenKind::Comma) {
                self.pos += 1;
            } else {
                return Ok(out);
            }
        }
    }

    /// A value or range after `mac-type`: `0x88b5`, `2048`, `ip`,
    /// `0x0800-0x0806`.
    fn mac_type(&self, tok: Token<'a>) -> Result<NumRange, ParseError> {
        let one = |text: &str| -> Result<u32, ParseError> {
            let v = match text.to_ascii_lowercase().as_str() {
                "ip" | "ipv4" => Some(0x0800),
                "ipv6" => Some(0x86dd),
                "arp" => Some(0x0806),
                "vlan" => Some(0x8100),
                t => match t.strip_prefix("0x") {
                    Some(h) if !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
                        Some(u64::from_str_radix(h, 16).unwrap_or(u64::MAX))
                    }
                    Some(_) => None,
                    None if is_digits(t) => Some(t.parse::<u64>().unwrap_or(u64::MAX)),
                    None => None,
                },
            };
            match v {
                Some(v) if v <= 0xffff => Ok(v as u32),
                Some(_) => Err(self.err_at(
                    tok,
                    format!("mac-type {text} is out of range 0..0xffff"),
                    None,
                )),
                None => Err(self.err_at(
                    tok,
                    format!("invalid mac-type '{}'", tok.text),
                    Some("write a number like 0x88b5 or 2048, a range 0x0800-0x0806, or ip, ipv6, arp, vlan".into()),
                )),
            }
        };
        self.range(tok, one, "mac-type")
    }

    /// `lo-hi` or a single value, each read by `one`.
    fn range(
        &self,
        tok: Token<'_>,
        one: impl Fn(&str) -> Result<u32, ParseError>,
        what: &str,
    ) -> Result<NumRange, ParseError> {
        match tok.text.split_once('-') {
            None => Ok(NumRange::single(one(tok.text)?)),
            Some((a, b)) => {
                let (lo, hi) = (one(a)?, one(b)?);
                NumRange::new(lo, hi).ok_or_else(|| {
                    self.err_at(
                        tok,
                        format!("{what} range '{}' is reversed", tok.text),
                        Some(format!("write {b}-{a}")),
                    )
                })
            }
        }
    }

    /// A length or range after `iplen`, `0..=65535`.
    fn ip_len(&self, tok: Token<'a>) -> Result<NumRange, ParseError> {
        let one = |text: &str| -> Result<u32, ParseError> {
            if !is_digits(text) {
                return Err(self.err_at(
                    tok,
                    format!("invalid iplen '{}'", tok.text),
                    Some("write a length like 40, a range 0-100 or a list 40,1500".into()),
                ));
            }
            match text.parse::<u64>() {
                Ok(n) if n <= 65_535 => Ok(n as u32),
                _ => Err(self.err_at(tok, format!("iplen {text} is out of range 0..65535"), None)),
            }
        };
        self.range(tok, one, "iplen")
    }

    /// A DSCP value after `dscp`: `0..=63` or a name (`ef`, `af11`, `cs1`).
    fn dscp(&self, tok: Token<'a>) -> Result<u8, ParseError> {
        let w = lower(&tok);
        let named = match w.as_str() {
            "be" => Some(0),
            "ef" => Some(46),
            "va" => Some(44),
            _ => {
                let b = w.as_bytes();
                match (w.len(), b.first(), b.get(1), b.get(2), b.get(3)) {
                    (3, Some(b'c'), Some(b's'), Some(d @ b'0'..=b'7'), None) => {
                        Some((d - b'0') * 8)
                    }
                    (4, Some(b'a'), Some(b'f'), Some(x @ b'1'..=b'4'), Some(y @ b'1'..=b'3')) => {
                        Some((x - b'0') * 8 + (y - b'0') * 2)
                    }
                    _ => None,
                }
            }
        };
        if let Some(v) = named {
            return Ok(v);
        }
        if !is_digits(&w) {
            return Err(self.err_at(
                tok,
                format!("invalid DSCP '{}'", tok.text),
                Some("write 0..63 or a name: be, ef, va, cs0..cs7, af11..af43".into()),
            ));
        }
        match w.parse::<u64>() {
            Ok(n) if n <= 63 => Ok(n as u8),
            _ => Err(self.err_at(tok, format!("DSCP {w} is out of range 0..63"), None)),
        }
    }

    /// `[!]flag[,[!]flag..]` after `tcpflags`.
    fn tcp_flags(&mut self) -> Result<TcpFlags, ParseError> {
        let items: Vec<(bool, u8, Token<'a>)> = self.list(
            "TCP flag",
            "e.g. tcpflags syn,!ack",
            |p: &Self, t: Token<'a>| {
                let w = lower(&t);
                let (clear, name) = match w.strip_prefix('!') {
                    Some(n) => (true, n),
                    None => (false, w.as_str()),
                };
                match TcpFlags::NAMES.iter().position(|f| *f == name) {
                    Some(i) => Ok((clear, 1u8 << i, t)),
                    None => Err(p.err_at(
                        t,
                        format!("unknown TCP flag '{}'", t.text),
                        Some(format!(
                            "flags: {} (! for clear)",
                            TcpFlags::NAMES.join(", ")
                        )),
                    )),
                }
            },
        )?;
        let (mut set, mut clear) = (0u8, 0u8);
        for (c, bit, t) in items {
            let (mine, other) = if c {
                (&mut clear, set)
            } else {
                (&mut set, clear)
            };
            if other & bit != 0 {
                let name = lower(&t);
                return Err(self.err_at(
                    t,
                    format!(
                        "TCP flag '{}' is both set and clear",
                        name.trim_start_matches('!')
                    ),
                    None,
                ));
            }
            *mine |= bit;
        }
        TcpFlags::new(set, clear).ok_or_else(|| self.err_eol("missing TCP flag", None))
    }

    /// A user after `uid`: a number, or a name kept as written.
    fn user(&mut self) -> Result<UserMatch, ParseError> {
        let t = self.expect_word("user", Some("e.g. uid 1000 or uid alice"))?;
        if is_digits(t.text) {
            return match t.text.parse::<u32>() {
                Ok(n) => Ok(UserMatch::Id(n)),
                Err(_) => Err(self.err_at(
                    t,
                    format!("uid {} is out of range 0..{}", t.text, u32::MAX),
                    None,
                )),
            };
        }
        Ok(UserMatch::Name(t.text.to_string()))
    }

    /// The words after `mask` (at least one).
    fn mask(&mut self) -> Result<MaskSpec, ParseError> {
        let mut m = MaskSpec::default();
        let mut any = false;
        while let Some(t) = self.peek() {
            // dummynet's spellings (`sbin/ipfw/dummynet.c`,
            // `dummynet_params`): `src-ipv6` is `src-ip6`.
            let w = match lower(&t).as_str() {
                "src-ipv6" => "src-ip6".to_string(),
                "dst-ipv6" => "dst-ip6".to_string(),
                w => w.to_string(),
            };
            if w == "flow-id" {
                return Err(self.err_at(
                    t,
                    "mask 'flow-id' is not supported yet",
                    Some(format!(
                        "pipelab's masks keep addresses, ports and the protocol: {}",
                        MaskSpec::WORDS.join(", ")
                    )),
                ));
            }
            // dummynet's `mask queue` (a flow per queue number) ends the
            // mask; a number after `queue` is the queue's size.
            if w == "queue"
                && !self
                    .toks
                    .get(self.pos + 1)
                    .is_some_and(|n| self.is_number_like(*n))
            {
                return Err(self.err_at(
                    t,
                    "mask 'queue' is not supported yet",
                    Some(
                        "pipelab's instances are keyed by addresses, ports and the protocol".into(),
                    ),
                ));
            }
            if !MaskSpec::WORDS.contains(&w.as_str()) {
                break;
            }
            self.pos += 1;
            any = true;
            if w == "all" {
                m.all = true;
                continue;
            }
            let v = self.expect_word("mask value", Some(MASK_HINT))?;
            match w.as_str() {
                "src-ip" => m.src_ip = Some(self.ip4_mask(v)?),
                "dst-ip" => m.dst_ip = Some(self.ip4_mask(v)?),
                "src-ip6" => m.src_ip6 = Some(self.prefix_len(v)?),
                "dst-ip6" => m.dst_ip6 = Some(self.prefix_len(v)?),
                "src-port" => m.src_port = Some(self.mask_bits(v, "port mask", 16)? as u16),
                "dst-port" => m.dst_port = Some(self.mask_bits(v, "port mask", 16)? as u16),
                _ => m.proto = Some(self.mask_bits(v, "proto mask", 8)? as u8),
            }
        }
        if !any {
            let hint = Some(format!(
                "mask words: {}; {MASK_HINT}",
                MaskSpec::WORDS.join(", ")
            ));
            return Err(match self.peek() {
                Some(t) => {
                    self.err_at(t, format!("expected a mask word, found '{}'", t.text), hint)
                }
                None => self.err_eol("missing mask after 'mask'", hint),
            });
        }
        Ok(m)
    }

    /// `0xHEX` or a decimal number, at most `max`.
    fn hex_or_dec(&self, tok: Token<'_>, what: &str, max: u32) -> Result<u32, ParseError> {
        let t = tok.text;
        let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            Some(h) if !h.is_empty() && h.len() <= 8 => u32::from_str_radix(h, 16).ok(),
            Some(_) => None,
            None if is_digits(t) => t.parse::<u32>().ok(),
            None => None,
        };
        match v {
            Some(v) if v <= max => Ok(v),
            _ => Err(self.err_at(
                tok,
                format!("invalid {what} '{t}'"),
                Some(format!("expected 0x0..0x{max:x} or 0..{max}")),
            )),
        }
    }

    /// A mask of `bits` bits: `0xHEX`, a decimal number, or dummynet's
    /// `/N`, which keeps the *low* `N` bits (`sbin/ipfw/dummynet.c`,
    /// `ipfw_config_pipe`, `TOK_MASK`: `(1 << N) - 1`, all bits for 32):
    /// `dst-port /8` is `0x00ff`, `src-ip /8` is `0x000000ff`.
    fn mask_bits(&self, tok: Token<'_>, what: &str, bits: u32) -> Result<u32, ParseError> {
        let max = if bits >= 32 {
            u32::MAX
        } else {
            (1u32 << bits) - 1
        };
        let Some(n) = tok.text.strip_prefix('/') else {
            return self.hex_or_dec(tok, what, max);
        };
        match n.parse::<u32>() {
            Ok(n) if is_digits(tok.text.get(1..).unwrap_or("")) && n <= bits => {
                Ok(if n >= 32 { u32::MAX } else { (1u32 << n) - 1 })
            }
            _ => Err(self.err_at(
                tok,
                format!("invalid {what} '{}'", tok.text),
                Some(format!(
                    "/N keeps the low N bits, N in 0..{bits} (dummynet's reading); or write 0x0..0x{max:x}"
                )),
            )),
        }
    }

    /// An IPv4 mask: `0xffffff00`, `255.255.255.0`, or dummynet's `/N`
    /// (the low `N` bits, see [`Parser::mask_bits`]).
    fn ip4_mask(&self, tok: Token<'_>) -> Result<u32, ParseError> {
        if let Ok(a) = tok.text.parse::<std::net::Ipv4Addr>() {
            return Ok(u32::from(a));
        }
        if tok.text.starts_with('/') {
            return self.mask_bits(tok, "address mask", 32);
        }
        self.hex_or_dec(tok, "address mask", u32::MAX).map_err(|_| {
            self.err_at(
                tok,
                format!("invalid address mask '{}'", tok.text),
                Some("e.g. 0xffffff00 or 255.255.255.0".into()),
            )
        })
    }

    /// An IPv6 prefix length: `/64` (or `64`), `0..=128`.
    fn prefix_len(&self, tok: Token<'_>) -> Result<u8, ParseError> {
        let t = tok.text.strip_prefix('/').unwrap_or(tok.text);
        match t.parse::<u8>() {
            Ok(n) if is_digits(t) && n <= 128 => Ok(n),
            _ => Err(self.err_at(
                tok,
                format!("invalid IPv6 prefix length '{}'", tok.text),
                Some("expected /0../128, e.g. src-ip6 /64".into()),
            )),
        }
    }

    /// Fails if `name` was already given (`seen`: names and keywords).
    fn once(
        &self,
        seen: &mut Vec<(&'static str, Token<'a>)>,
        name: &'static str,
        tok: Token<'a>,
    ) -> Result<(), ParseError> {
        if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
            return Err(self.err_at(
                tok,
                format!("duplicate parameter '{}'", tok.text),
                Some(format!(
                    "'{name}' was already given at column {}",
                    first.column
                )),
            ));
        }
        seen.push((name, tok));
        Ok(())
    }

    /// A configuration error placed at the word that gave parameter `key`
    /// (from `seen`), or at the end of the line if no word did.
    fn config_err(
        &self,
        seen: &[(&'static str, Token<'_>)],
        key: &str,
        e: &pipelab_engine::config::ConfigError,
    ) -> ParseError {
        match seen.iter().find(|(n, _)| *n == key) {
            Some(&(_, k)) => self.err_at(k, format!("invalid {}: {}", e.param, e.reason), None),
            None => self.err_eol(e.to_string(), None),
        }
    }

    /// `OBJECT N config` or `OBJECT N delete`: the number, and whether it
    /// is a delete.
    fn object_head(
        &mut self,
        object: &str,
        what: &str,
        hint: &str,
    ) -> Result<(u32, bool), ParseError> {
        let tok = self.expect_word(what, Some(hint))?;
        let id = self.number(tok, what, MIN_PIPE, MAX_PIPE, None)?;
        let Some(sub) = self.next() else {
            return Err(self.err_eol(
                format!("missing 'config' or 'delete' after '{object} {id}'"),
                Some(hint.into()),
            ));
        };
        match lower(&sub).as_str() {
            "config" => Ok((id, false)),
            "delete" => Ok((id, true)),
            _ => Err(self.err_at(
                sub,
                format!("unknown {object} command '{}'", sub.text),
                Some("expected config or delete".into()),
            )),
        }
    }

    /// `sched N config ...` or `sched N delete`.
    fn sched(&mut self) -> Result<Command, ParseError> {
        const HINT: &str = "e.g. sched 1 config type drr quantum 1514";
        let (id, delete) = self.object_head("sched", "scheduler number", HINT)?;
        if delete {
            return Ok(Command::SchedDelete { id });
        }
        let mut spec = SchedSpec::default();
        let mut seen: Vec<(&'static str, Token<'a>)> = Vec::new();
        while let Some(tok) = self.next() {
            let word = lower(&tok);
            let param = SchedParam::from_name(&word);
            let name: &'static str = match (word.as_str(), param) {
                ("pipe" | "link", _) => {
                    self.once(&mut seen, "pipe", tok)?;
                    let v = self.expect_word("pipe number", Some(HINT))?;
                    let n = self.pipe_number(v)?;
                    if n != id {
                        return Err(self.err_at(
                            v,
                            format!("sched {id} serves pipe {id}, not pipe {n}"),
                            Some(format!(
                                "a scheduler takes its pipe's number: sched {n} config pipe {n} ..."
                            )),
                        ));
                    }
                    spec.pipe = Some(n);
                    continue;
                }
                ("noecn" | "ecn", _) => {
                    // One of the two, once (the pipe's words' rule).
                    if let Some((_, first)) =
                        seen.iter().find(|(n, _)| *n == "ecn" || *n == "noecn")
                    {
                        return Err(self.err_at(
                            tok,
                            format!("duplicate parameter '{}'", tok.text),
                            Some(format!(
                                "'{}' was already given at column {}",
                                first.text, first.column
                            )),
                        ));
                    }
                    if word == "ecn" {
                        seen.push(("ecn", tok));
                        spec.ecn = true;
                    } else {
                        seen.push(("noecn", tok));
                        spec.noecn = true;
                    }
                    continue;
                }
                ("type", _) => "type",
                (_, Some(p)) => p.name(),
                ("mask" | "sched_mask" | "flow_mask", _) => {
                    self.once(&mut seen, "mask", tok)?;
                    spec.mask = Some(self.mask()?);
                    continue;
                }
                ("buckets", _) => "buckets",
                (w, _) if FQ_LATER.contains(&w) => {
                    return Err(self.err_at(
                        tok,
                        format!("sched parameter '{}' is not supported yet", tok.text),
                        Some(
                            "pipelab's fq_codel and fq_pie take quantum, target, interval, ecn and noecn"
                                .into(),
                        ),
                    ));
                }
                ("fq_codel" | "fq_pie", _) => {
                    return Err(self.err_at(
                        tok,
                        format!("unknown sched parameter '{}'", tok.text),
                        Some(format!("a scheduler's kind follows 'type': type {word}")),
                    ));
                }
                _ => {
                    let known: Vec<&str> = core::iter::once("type")
                        .chain(SchedParam::ALL.iter().map(|p| p.name()))
                        .chain(["mask", "buckets"])
                        .collect();
                    return Err(self.err_at(
                        tok,
                        format!("unknown sched parameter '{}'", tok.text),
                        Some(format!("known parameters: {}", known.join(", "))),
                    ));
                }
            };
            self.once(&mut seen, name, tok)?;
            let v = self.expect_word("value", Some(HINT))?;
            if name == "buckets" {
                spec.buckets = Some(self.number(v, "buckets", 1, MAX_BUCKETS, None)?);
                continue;
            }
            match param {
                None => {
                    let k = SchedKind::from_name(&lower(&v)).ok_or_else(|| {
                        let known: Vec<&str> = registry::names().collect();
                        self.err_at(
                            v,
                            format!("unknown scheduler type '{}'", v.text),
                            Some(format!("known types: {}", known.join(", "))),
                        )
                    })?;
                    spec.kind = Some(k);
                }
                Some(SchedParam::Quantum) => {
                    spec.quantum = Some(self.number(v, "quantum", 1, MAX_QUANTUM, None)?);
                }
                Some(SchedParam::Target) => {
                    spec.target = Some(self.unit(v, units::parse_delay(v.text))?)
                }
                Some(SchedParam::Interval) => {
                    spec.interval = Some(self.unit(v, units::parse_delay(v.text))?)
                }
                // Read above, as a word without a value.
                Some(SchedParam::Ecn) => {}
            }
        }
        if let Err(e) = spec.to_config() {
            return Err(self.config_err(&seen, e.param, &e));
        }
        Ok(Command::SchedConfig { id, spec })
    }

    /// `queue N config ...` or `queue N delete`.
    fn queue_cmd(&mut self) -> Result<Command, ParseError> {
        const HINT: &str = "e.g. queue 10 config weight 20 sched 5";
        let (id, delete) = self.object_head("queue", "queue number", HINT)?;
        if delete {
            return Ok(Command::QueueDelete { id });
        }
        let mut target: Option<QueueTarget> = None;
        let mut weight = None;
        let mut queue = None;
        let mut aqm = None;
        let mut mask = None;
        let mut buckets = None;
        let mut ecn = None;
        let mut droptail = false;
        let mut seen: Vec<(&'static str, Token<'a>)> = Vec::new();
        while let Some(tok) = self.next() {
            let name: &'static str = match lower(&tok).as_str() {
                "weight" => "weight",
                "sched" | "pipe" => "sched",
                "queue" => "queue",
                // droptail is the absence of a queue management.
                "red" | "gred" | "codel" | "pie" | "droptail" => "aqm",
                "mask" | "sched_mask" | "flow_mask" => "mask",
                "buckets" => "buckets",
                "ecn" | "noecn" => "ecn",
                w @ ("lmax" | "maxlen" | "pri" | "priority" | "plr" | "noerror") => {
                    let hint = match w {
                        "lmax" | "maxlen" => LMAX_HINT,
                        "pri" | "priority" => PRI_HINT,
                        _ => "a flow queue's losses are its pipe's: pipe P config plr X",
                    };
                    return Err(self.err_at(
                        tok,
                        format!("queue parameter '{}' is not supported yet", tok.text),
                        Some(hint.into()),
                    ));
                }
                _ => {
                    return Err(self.err_at(
                        tok,
                        format!("unknown queue parameter '{}'", tok.text),
                        Some(
                            "known parameters: weight, sched, pipe, queue, red, gred, codel, pie, mask, buckets, ecn, noecn"
                                .into(),
                        ),
                    ))
                }
            };
            if name == "aqm" {
                if let Some((_, first)) = seen.iter().find(|(n, _)| *n == "aqm") {
                    return Err(self.err_at(
                        tok,
                        format!("'{}' cannot be combined with '{}'", tok.text, first.text),
                        Some(if first.is_word("droptail") || tok.is_word("droptail") {
                            "droptail is the tail-drop queue, without red, gred, codel or pie"
                                .into()
                        } else {
                            "a queue has one queue management (red, gred, codel or pie)".into()
                        }),
                    ));
                }
            }
            if name == "sched" {
                if let Some((_, first)) = seen.iter().find(|(n, _)| *n == "sched") {
                    return Err(self.err_at(
                        tok,
                        format!("'{}' cannot be combined with '{}'", tok.text, first.text),
                        Some("a queue feeds one scheduler: sched S or pipe P".into()),
                    ));
                }
            }
            self.once(&mut seen, name, tok)?;
            let w = lower(&tok);
            match w.as_str() {
                "ecn" => ecn = Some(true),
                "noecn" => ecn = Some(false),
                "droptail" => droptail = true,
                "codel" => aqm = Some(self.codel()?),
                "pie" => aqm = Some(self.pie()?),
                "mask" | "sched_mask" | "flow_mask" => mask = Some(self.mask()?),
                _ => {
                    let v = self.expect_word("value", Some(HINT))?;
                    match w.as_str() {
                        "weight" => weight = Some(self.number(v, "weight", 1, MAX_WEIGHT, None)?),
                        "sched" => target = Some(QueueTarget::Sched(self.pipe_number(v)?)),
                        "pipe" => target = Some(QueueTarget::Pipe(self.pipe_number(v)?)),
                        "queue" => queue = Some(self.unit(v, units::parse_queue(v.text))?),
                        "red" | "gred" => aqm = Some(AqmSpec::Red(self.red(v, w == "gred")?)),
                        _ => buckets = Some(self.number(v, "buckets", 1, MAX_BUCKETS, None)?),
                    }
                }
            }
        }
        let Some(target) = target else {
            return Err(self.err_eol(
                format!("missing 'sched S' or 'pipe P' in 'queue {id} config'"),
                Some(HINT.into()),
            ));
        };
        let spec = QueueSpec {
            weight,
            target,
            queue,
            aqm,
            mask,
            buckets,
            ecn,
            droptail,
        };
        // The limit and the queue management are checked as a pipe's.
        let as_pipe = PipeSpec {
            queue,
            aqm,
            ..PipeSpec::default()
        };
        if let Err(e) = spec.to_flow_spec().and_then(|_| as_pipe.check()) {
            let key = match e.param {
                "red" | "gred" | "codel" | "pie" => "aqm",
                p => p,
            };
            return Err(self.config_err(&seen, key, &e));
        }
        Ok(Command::QueueConfig { id, spec })
    }

    /// `table T|all add|delete|flush|list|create|destroy ...`.
    fn table(&mut self) -> Result<Command, ParseError> {
        const HINT: &str = "e.g. table 1 add 10.0.0.0/8 5 or table T1 create type addr";
        let t = self.expect_word("table number or name", Some(HINT))?;
        let table = if t.is_word("all") {
            None
        } else {
            Some(self.table_id(t, t.text)?)
        };
        let name = match &table {
            Some(n) => n.to_string(),
            None => "all".to_string(),
        };
        let Some(sub) = self.next() else {
            return Err(self.err_eol(
                format!(
                    "missing 'add', 'delete', 'create', 'destroy', 'flush' or 'list' after 'table {name}'"
                ),
                Some(HINT.into()),
            ));
        };
        match (lower(&sub).as_str(), table) {
            ("flush", table) => Ok(Command::TableFlush { table }),
            ("list" | "show", table) => Ok(Command::TableList { table }),
            ("add", Some(table)) => {
                let a = self.expect_word("address", Some(HINT))?;
                let net = self.net(a)?;
                let value = match self.next() {
                    None => None,
                    Some(v) => Some(self.number(v, "table value", 0, u32::MAX, None)?),
                };
                Ok(Command::TableAdd { table, net, value })
            }
            ("delete", Some(table)) => {
                let a = self.expect_word("address", Some("e.g. table 1 delete 10.0.0.0/8"))?;
                let net = self.net(a)?;
                Ok(Command::TableDelete { table, net })
            }
            ("create", Some(table)) => {
                let mut typed = false;
                while let Some(w) = self.next() {
                    match lower(&w).as_str() {
                        "type" if !typed => {
                            let v = self.expect_word("table type", Some("type addr"))?;
                            if !v.is_word("addr") {
                                return Err(self.err_at(
                                    v,
                                    format!("table type '{}' is not supported yet", v.text),
                                    Some(
                                        "pipelab's tables hold addresses and networks: type addr"
                                            .into(),
                                    ),
                                ));
                            }
                            typed = true;
                        }
                        "type" => return Err(self.err_at(w, "duplicate 'type'", None)),
                        "valtype" | "algo" | "limit" | "locked" | "missing" | "or-flush" => {
                            return Err(self.err_at(
                                w,
                                format!("table option '{}' is not supported yet", w.text),
                                Some("write table NAME create [type addr]".into()),
                            ))
                        }
                        _ => {
                            return Err(self.err_at(
                                w,
                                format!("unknown table create option '{}'", w.text),
                                Some("write table NAME create [type addr]".into()),
                            ))
                        }
                    }
                }
                Ok(Command::TableCreate { table, typed })
            }
            ("destroy", Some(table)) => Ok(Command::TableDestroy { table }),
            ("add" | "delete" | "create" | "destroy", None) => Err(self.err_at(
                sub,
                format!("'table all {}' is not possible", sub.text),
                Some("'table all' takes flush or list".into()),
            )),
            (
                "swap" | "modify" | "lock" | "unlock" | "info" | "detail" | "lookup" | "atomic",
                _,
            ) => Err(self.err_at(
                sub,
                format!("table command '{}' is not supported yet", sub.text),
                Some("table commands: add, delete, create, destroy, flush, list".into()),
            )),
            _ => Err(self.err_at(
                sub,
                format!("unknown table command '{}'", sub.text),
                Some("expected add, delete, create, destroy, flush or list".into()),
            )),
        }
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

/// True if the rule looks up a table where a match sets `tablearg`: a
/// `table(N)` source, destination, `src-ip` or `dst-ip` that is not negated.
fn looks_up_a_table(rule: &RuleSpec) -> bool {
    let is_table = |a: &AddrMatch| matches!(a, AddrMatch::Table { .. });
    (!rule.src.not && is_table(&rule.src.addr))
        || (!rule.dst.not && is_table(&rule.dst.addr))
        || rule.options.iter().any(|o| {
            !o.not && matches!(&o.kind, OptionKind::SrcIp(a) | OptionKind::DstIp(a) if is_table(a))
        })
}
