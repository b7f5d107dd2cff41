//! `netconfig`: the one-line link configurations of
//! planetlab-dummynet-emulation §3.4 (Figs. 4–5).
//!
//! ```text
//! netconfig client 80,443@10.21.0.0/24 IN bw 512kbit/s delay 8ms OUT bw 10Mbit/s delay 3ms
//! netconfig server 22@10.0.0.0/8 SHARED bw 11Mbit/s
//! netconfig delete client 80,443@10.21.0.0/24
//! netconfig list
//! ```
//!
//! A configuration names the traffic by `PORTS@ADDR[/MASK]` (ports as in
//! rules: `80,443,8000-8080`; either part may be left out, `any` meaning
//! any) and the link by the pipe parameters after `IN` (downstream, packets
//! coming into the node) and `OUT` (upstream), or after `SHARED` (one pipe
//! for both directions, e.g. a WiFi channel). The words after
//! `IN`/`OUT`/`SHARED` are exactly those of `pipe N config`.
//!
//! * `client`: the node's applications talk to servers at `ADDR` on
//!   `PORTS` (in: `src-ip ADDR src-port PORTS`; out: `dst-ip ADDR dst-port
//!   PORTS`).
//! * `server`: the node serves `PORTS` to clients at `ADDR` (in: `src-ip
//!   ADDR dst-port PORTS`; out: `dst-ip ADDR src-port PORTS`).
//! * `service`: both at once (a P2P application), sharing the same pipes.
//!
//! [`NetSpec::translate`] turns a configuration into `pipe N config` and
//! `add` commands, given the pipe and rule numbers to use (the daemon
//! assigns them; the paper's backend did the same). The selector (kind,
//! ports, address), printed by [`NetSpec::key`], identifies a link: the
//! same selector again reconfigures it.

use core::fmt;
use std::net::IpAddr;

use crate::ast::{
    Action, AddrMatch, Command, IpNet, OptionKind, PipeSpec, PortRange, RuleOption, RuleSpec,
};
use crate::error::ParseError;
use crate::parser::parse_line;

/// Which side of the conversation the node is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NetKind {
    /// The node's applications connect to remote servers.
    Client,
    /// The node serves local ports.
    Server,
    /// Both (peers of one distributed application).
    Service,
}

impl fmt::Display for NetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NetKind::Client => "client",
            NetKind::Server => "server",
            NetKind::Service => "service",
        })
    }
}

/// The traffic a link applies to: kind, ports, address.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Selector {
    /// Client, server or service.
    pub kind: NetKind,
    /// The ports (remote for a client, local for a server); empty means
    /// any port.
    pub ports: Vec<PortRange>,
    /// The remote address or network; `None` means any.
    pub addr: Option<IpNet>,
}

impl fmt::Display for Selector {
    /// `client 80,443@10.21.0.0/24`, `server 22@any`, `client any@10.0.0.1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ", self.kind)?;
        if self.ports.is_empty() {
            f.write_str("any")?;
        }
        for (i, p) in self.ports.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{p}")?;
        }
        match &self.addr {
            Some(a) => write!(f, "@{a}"),
            None => f.write_str("@any"),
        }
    }
}

/// The emulated link: two pipes, or one shared by both directions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetLinks {
    /// `IN ... OUT ...`.
    Split {
        /// Downstream: packets coming into the node.
        inbound: Box<PipeSpec>,
        /// Upstream: packets leaving the node.
        outbound: Box<PipeSpec>,
    },
    /// `SHARED ...`.
    Shared(Box<PipeSpec>),
}

/// One `netconfig client|server|service` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetSpec {
    /// Which traffic.
    pub selector: Selector,
    /// Which link.
    pub links: NetLinks,
}

/// A parsed `netconfig` command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetCommand {
    /// Create or reconfigure a link.
    Config(NetSpec),
    /// `delete SELECTOR`.
    Delete(Selector),
    /// `list`.
    List,
}

fn spec_text(s: &PipeSpec) -> String {
    s.to_string()
}

impl fmt::Display for NetSpec {
    /// The canonical command (without the leading `netconfig`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.selector)?;
        match &self.links {
            NetLinks::Split { inbound, outbound } => {
                f.write_str(" IN")?;
                if !inbound.is_empty() {
                    write!(f, " {}", spec_text(inbound))?;
                }
                f.write_str(" OUT")?;
                if !outbound.is_empty() {
                    write!(f, " {}", spec_text(outbound))?;
                }
                Ok(())
            }
            NetLinks::Shared(s) => {
                f.write_str(" SHARED")?;
                if !s.is_empty() {
                    write!(f, " {}", spec_text(s))?;
                }
                Ok(())
            }
        }
    }
}

impl NetSpec {
    /// The selector as text: what identifies this link.
    pub fn key(&self) -> String {
        self.selector.to_string()
    }

    /// How many pipes the link needs (1 for `SHARED`, else 2).
    pub fn pipes_needed(&self) -> usize {
        match self.links {
            NetLinks::Split { .. } => 2,
            NetLinks::Shared(_) => 1,
        }
    }

    /// How many rules the link needs (2, or 4 for a service).
    pub fn rules_needed(&self) -> usize {
        self.selector.rules_needed()
    }

    /// The commands that create the link: the pipes (`pipes[0]` inbound or
    /// shared, `pipes[1]` outbound), then the rules numbered `rules[i]`,
    /// inbound rules first. `extra` is appended to every rule's options
    /// (the daemon confines a user's rules with `uid N`). `None` if too few
    /// numbers are given.
    pub fn translate(
        &self,
        pipes: &[u32],
        rules: &[u32],
        extra: &[RuleOption],
    ) -> Option<Vec<Command>> {
        if pipes.len() < self.pipes_needed() || rules.len() < self.rules_needed() {
            return None;
        }
        let (pin, pout) = match &self.links {
            NetLinks::Split { .. } => (pipes[0], pipes[1]),
            NetLinks::Shared(_) => (pipes[0], pipes[0]),
        };
        let mut out = Vec::new();
        match &self.links {
            NetLinks::Split { inbound, outbound } => {
                out.push(Command::PipeConfig {
                    id: pin,
                    spec: (**inbound).clone(),
                });
                out.push(Command::PipeConfig {
                    id: pout,
                    spec: (**outbound).clone(),
                });
            }
            NetLinks::Shared(s) => out.push(Command::PipeConfig {
                id: pin,
                spec: (**s).clone(),
            }),
        }
        let sel = &self.selector;
        // (direction, remote side's ports?) for each rule.
        let shapes: &[(bool, bool)] = match sel.kind {
            NetKind::Client => &[(true, true), (false, true)],
            NetKind::Server => &[(true, false), (false, false)],
            NetKind::Service => &[(true, true), (true, false), (false, true), (false, false)],
        };
        for (i, &(inbound, remote_ports)) in shapes.iter().enumerate() {
            let mut r = RuleSpec::new(Action::Pipe(if inbound { pin } else { pout }));
            r.number = Some(rules[i]);
            r.options.push(RuleOption::new(if inbound {
                OptionKind::In
            } else {
                OptionKind::Out
            }));
            if let Some(a) = sel.addr {
                let m = AddrMatch::Net(a);
                r.options.push(RuleOption::new(if inbound {
                    OptionKind::SrcIp(m)
                } else {
                    OptionKind::DstIp(m)
                }));
            }
            if !sel.ports.is_empty() {
                let p = sel.ports.clone();
                // Remote ports are the source of inbound packets; local
                // ports are their destination.
                r.options.push(RuleOption::new(if inbound == remote_ports {
                    OptionKind::SrcPort(p)
                } else {
                    OptionKind::DstPort(p)
                }));
            }
            r.options.extend_from_slice(extra);
            out.push(Command::Add(r));
        }
        Some(out)
    }
}

impl Selector {
    /// How many rules a link with this selector needs.
    pub fn rules_needed(&self) -> usize {
        match self.kind {
            NetKind::Service => 4,
            _ => 2,
        }
    }
}

/// A word of the command and its 1-based column.
struct Word<'a> {
    text: &'a str,
    column: u32,
    /// Byte offset in the line.
    start: usize,
}

fn words(line: &str) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut col = 0u32;
    let mut start_col = 0u32;
    for (i, c) in line.char_indices() {
        col = col.saturating_add(1);
        if c.is_whitespace() {
            if let Some(s) = start.take() {
                out.push(Word {
                    text: &line[s..i],
                    column: start_col,
                    start: s,
                });
            }
        } else if start.is_none() {
            start = Some(i);
            start_col = col;
        }
    }
    if let Some(s) = start {
        out.push(Word {
            text: &line[s..],
            column: start_col,
            start: s,
        });
    }
    out
}

fn err(w: &Word<'_>, message: impl Into<String>, hint: Option<&str>) -> ParseError {
    ParseError::new(1, w.column, w.text, message, hint.map(str::to_string))
}

const USAGE: &str = "netconfig client|server|service PORTS@ADDR[/MASK] (IN ... OUT ... | SHARED ...), netconfig delete client|server|service PORTS@ADDR[/MASK], netconfig list";

/// Parses the words after `netconfig` (one line; columns are counted in
/// that text, from 1). A leading `config` is accepted (Fig. 5 writes
/// `netconfig config client ...`).
pub fn parse_netconfig(text: &str) -> Result<NetCommand, ParseError> {
    if text.contains('\n') {
        return Err(ParseError::new(1, 1, "", "netconfig takes one line", None));
    }
    let ws = words(text);
    let mut i = 0;
    let Some(first) = ws.first() else {
        return Err(ParseError::new(
            1,
            1,
            "",
            "netconfig needs a command",
            Some(USAGE.into()),
        ));
    };
    if first.text == "config" {
        i = 1;
    }
    let Some(w) = ws.get(i) else {
        return Err(ParseError::new(
            1,
            first.column,
            first.text,
            "netconfig config needs client, server or service",
            Some(USAGE.into()),
        ));
    };
    match w.text {
        "list" if i == 0 => {
            if let Some(extra) = ws.get(1) {
                return Err(err(extra, "netconfig list takes no arguments", None));
            }
            Ok(NetCommand::List)
        }
        "delete" if i == 0 => {
            let sel = parse_selector(&ws, 1, w)?;
            if let Some(extra) = ws.get(3) {
                return Err(err(
                    extra,
                    format!("unexpected '{}' after the selector", extra.text),
                    Some("netconfig delete KIND PORTS@ADDR"),
                ));
            }
            Ok(NetCommand::Delete(sel))
        }
        _ => {
            let selector = parse_selector(&ws, i, w)?;
            let links = parse_links(text, &ws, i + 2)?;
            Ok(NetCommand::Config(NetSpec { selector, links }))
        }
    }
}

fn parse_kind(w: &Word<'_>) -> Result<NetKind, ParseError> {
    match w.text {
        "client" => Ok(NetKind::Client),
        "server" => Ok(NetKind::Server),
        "service" => Ok(NetKind::Service),
        other => Err(err(
            w,
            format!("unknown netconfig kind '{other}': expected client, server or service"),
            Some(USAGE),
        )),
    }
}

/// `KIND PORTS@ADDR` at `ws[i]`, `ws[i+1]`.
fn parse_selector(ws: &[Word<'_>], i: usize, before: &Word<'_>) -> Result<Selector, ParseError> {
    let Some(kw) = ws.get(i) else {
        return Err(ParseError::new(
            1,
            before.column + before.text.chars().count() as u32 + 1,
            "",
            "expected client, server or service",
            Some(USAGE.into()),
        ));
    };
    let kind = parse_kind(kw)?;
    let Some(sw) = ws.get(i + 1) else {
        return Err(ParseError::new(
            1,
            kw.column + kw.text.chars().count() as u32 + 1,
            "",
            format!("{kind} needs PORTS@ADDR[/MASK], e.g. 80,443@10.21.0.0/24"),
            None,
        ));
    };
    let (ports_text, addr_text) = match sw.text.split_once('@') {
        Some((p, a)) => (p, a),
        None => (sw.text, ""),
    };
    let ports = parse_ports(ports_text, sw)?;
    let addr = if addr_text.is_empty() || addr_text == "any" {
        None
    } else {
        let col = sw.column + ports_text.chars().count() as u32 + 1;
        Some(parse_net(addr_text, col)?)
    };
    if ports.is_empty() && addr.is_none() {
        return Err(err(
            sw,
            "the selector matches everything: give ports, an address, or both",
            Some("e.g. 80,443@10.21.0.0/24, 22, any@192.0.2.0/24"),
        ));
    }
    Ok(Selector { kind, ports, addr })
}

fn parse_ports(text: &str, w: &Word<'_>) -> Result<Vec<PortRange>, ParseError> {
    if text.is_empty() || text == "any" {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut col = w.column;
    for part in text.split(',') {
        let bad = |msg: String| ParseError::new(1, col, part, msg, None);
        let num = |s: &str| -> Result<u16, ParseError> {
            s.parse::<u16>()
                .map_err(|_| bad(format!("'{part}' is not a port (0..65535) or range A-B")))
        };
        let range = match part.split_once('-') {
            Some((a, b)) => PortRange::new(num(a)?, num(b)?)
                .ok_or_else(|| bad(format!("port range '{part}' goes backwards")))?,
            None => PortRange::single(num(part)?),
        };
        out.push(range);
        col += part.chars().count() as u32 + 1;
    }
    Ok(out)
}

fn parse_net(text: &str, column: u32) -> Result<IpNet, ParseError> {
    let bad = |msg: String| ParseError::new(1, column, text, msg, None);
    let (a, prefix) = match text.split_once('/') {
        Some((a, m)) => {
            let p = m
                .parse::<u8>()
                .map_err(|_| bad(format!("'{m}' is not a mask length")))?;
            (a, Some(p))
        }
        None => (text, None),
    };
    let addr: IpAddr = a.parse().map_err(|_| {
        bad(format!(
            "'{a}' is not an IPv4 or IPv6 address (host names are not resolved)"
        ))
    })?;
    match prefix {
        None => Ok(IpNet::host(addr)),
        Some(p) => IpNet::new(addr, p).ok_or_else(|| {
            bad(format!(
                "mask /{p} is longer than the address ({} bits)",
                if addr.is_ipv4() { 32 } else { 128 }
            ))
        }),
    }
}

fn is_section(w: &str) -> bool {
    matches!(w, "IN" | "OUT" | "SHARED" | "in" | "out" | "shared")
}

/// The `IN ... OUT ...` or `SHARED ...` part, from `ws[i]`.
fn parse_links(line: &str, ws: &[Word<'_>], i: usize) -> Result<NetLinks, ParseError> {
    let Some(first) = ws.get(i) else {
        let last = &ws[ws.len() - 1];
        return Err(ParseError::new(
            1,
            last.column + last.text.chars().count() as u32 + 1,
            "",
            "expected IN ... OUT ... or SHARED ... (the link's pipe parameters)",
            None,
        ));
    };
    let mut inbound = None;
    let mut outbound = None;
    let mut shared = None;
    let mut j = i;
    while let Some(w) = ws.get(j) {
        if !is_section(w.text) {
            return Err(err(
                w,
                format!("expected IN, OUT or SHARED, found '{}'", w.text),
                None,
            ));
        }
        let end = (j + 1..ws.len())
            .find(|&k| is_section(ws[k].text))
            .unwrap_or(ws.len());
        let spec = parse_params(line, &ws[j + 1..end], w)?;
        let slot = match w.text.to_ascii_uppercase().as_str() {
            "IN" => &mut inbound,
            "OUT" => &mut outbound,
            _ => &mut shared,
        };
        if slot.is_some() {
            return Err(err(w, format!("{} is given twice", w.text), None));
        }
        *slot = Some((spec, w));
        j = end;
    }
    match (inbound, outbound, shared) {
        (Some((i, _)), Some((o, _)), None) => Ok(NetLinks::Split {
            inbound: Box::new(i),
            outbound: Box::new(o),
        }),
        (None, None, Some((s, _))) => Ok(NetLinks::Shared(Box::new(s))),
        (_, _, Some((_, w))) => Err(err(
            w,
            "SHARED cannot be combined with IN or OUT",
            Some("SHARED gives one pipe for both directions"),
        )),
        (Some(_), None, None) => Err(err(
            first,
            "OUT is missing: give both IN and OUT, or SHARED",
            None,
        )),
        (None, Some(_), None) => Err(err(
            first,
            "IN is missing: give both IN and OUT, or SHARED",
            None,
        )),
        (None, None, None) => Err(err(first, "expected IN, OUT or SHARED", None)),
    }
}

/// Pipe parameters: the words of `pipe N config`, parsed by the command
/// parser with positions mapped back into the netconfig line.
fn parse_params(
    line: &str,
    params: &[Word<'_>],
    section: &Word<'_>,
) -> Result<PipeSpec, ParseError> {
    const PREFIX: &str = "pipe 1 config ";
    let (Some(first), Some(last)) = (params.first(), params.last()) else {
        return Ok(PipeSpec::default());
    };
    let text = &line[first.start..last.start + last.text.len()];
    let cmd = format!("{PREFIX}{text}");
    match parse_line(&cmd) {
        Ok(Some(Command::PipeConfig { spec, .. })) => Ok(spec),
        Ok(_) => Err(err(section, "expected pipe parameters", None)),
        Err(mut e) => {
            let prefix = PREFIX.chars().count() as u32;
            e.line = 1;
            e.column = if e.column > prefix {
                first.column + (e.column - prefix - 1)
            } else {
                section.column
            };
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::UserMatch;
    use crate::state::Config;

    fn config(text: &str) -> NetSpec {
        match parse_netconfig(text) {
            Ok(NetCommand::Config(s)) => s,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn script(cmds: &[Command]) -> String {
        cmds.iter().map(|c| format!("{c}\n")).collect()
    }

    /// Fig. 5: a client link translates into two pipes and two rules, in
    /// on the servers' source ports, out on their destination ports.
    #[test]
    fn client_translates_as_figure_5() {
        let s = config("config client 22,80@192.0.2.1 IN bw 6Mbit/s OUT bw 256Kbit/s");
        let uid = [RuleOption::new(OptionKind::Uid(UserMatch::Id(50)))];
        let cmds = s.translate(&[10000, 10001], &[1050, 1051], &uid).unwrap();
        assert_eq!(
            script(&cmds),
            "pipe 10000 config bw 6Mbit/s\n\
             pipe 10001 config bw 256Kbit/s\n\
             add 1050 pipe 10000 ip from any to any in src-ip 192.0.2.1 src-port 22,80 uid 50\n\
             add 1051 pipe 10001 ip from any to any out dst-ip 192.0.2.1 dst-port 22,80 uid 50\n"
        );
        // The translation is valid input of the language.
        let mut c = Config::new();
        c.apply_script(&script(&cmds)).unwrap();
        assert_eq!(c.pipes.len(), 2);
        assert_eq!(c.rules.len(), 2);
    }

    #[test]
    fn figure_4_lines_parse() {
        let s = config(
            "client 80,443@10.21.0.0/24 IN bw 512kbit/s delay 8ms OUT bw 10Mbit/s delay 3ms",
        );
        assert_eq!(s.key(), "client 80,443@10.21.0.0/24");
        assert_eq!(
            s.to_string(),
            "client 80,443@10.21.0.0/24 IN bw 512Kbit/s delay 8ms OUT bw 10Mbit/s delay 3ms"
        );
        assert_eq!(s.pipes_needed(), 2);
        // Canonical text parses back equal.
        assert_eq!(config(&s.to_string()), s);
    }

    #[test]
    fn server_service_and_shared() {
        let s = config("server 8000-8080@any SHARED bw 11Mbit/s delay 2ms");
        assert_eq!(s.pipes_needed(), 1);
        let cmds = s.translate(&[5], &[100, 101], &[]).unwrap();
        assert_eq!(
            script(&cmds),
            "pipe 5 config bw 11Mbit/s delay 2ms\n\
             add 100 pipe 5 ip from any to any in dst-port 8000-8080\n\
             add 101 pipe 5 ip from any to any out src-port 8000-8080\n"
        );
        let s = config("service 4000@10.0.0.0/8 IN delay 5ms OUT delay 7ms");
        assert_eq!(s.rules_needed(), 4);
        assert!(
            s.translate(&[1, 2], &[10, 11], &[]).is_none(),
            "too few numbers"
        );
        let cmds = s.translate(&[1, 2], &[10, 11, 12, 13], &[]).unwrap();
        assert_eq!(
            script(&cmds),
            "pipe 1 config delay 5ms\npipe 2 config delay 7ms\n\
             add 10 pipe 1 ip from any to any in src-ip 10.0.0.0/8 src-port 4000\n\
             add 11 pipe 1 ip from any to any in src-ip 10.0.0.0/8 dst-port 4000\n\
             add 12 pipe 2 ip from any to any out dst-ip 10.0.0.0/8 dst-port 4000\n\
             add 13 pipe 2 ip from any to any out dst-ip 10.0.0.0/8 src-port 4000\n"
        );
        let s = config("client any@2001:db8::/32 IN OUT bw 1Mbit/s");
        assert_eq!(s.key(), "client any@2001:db8::/32");
        assert!(matches!(&s.links, NetLinks::Split { inbound, .. } if inbound.is_empty()));
    }

    #[test]
    fn delete_and_list() {
        assert_eq!(parse_netconfig("list"), Ok(NetCommand::List));
        match parse_netconfig("delete client 80,443@10.21.0.0/24") {
            Ok(NetCommand::Delete(sel)) => {
                assert_eq!(sel.to_string(), "client 80,443@10.21.0.0/24")
            }
            other => panic!("{other:?}"),
        }
    }

    /// Errors name the word and its column in the netconfig text.
    #[test]
    fn errors_have_positions() {
        let cases: &[(&str, u32, &str)] = &[
            ("", 1, "needs a command"),
            (
                "cleint 80@1.2.3.4 SHARED",
                1,
                "unknown netconfig kind 'cleint'",
            ),
            ("client", 8, "needs PORTS@ADDR"),
            ("client 80,x@1.2.3.4 SHARED", 11, "'x' is not a port"),
            ("client 90-80 SHARED", 8, "goes backwards"),
            ("client 80@10.0.0.0/33 SHARED", 11, "mask /33 is longer"),
            (
                "client 80@example.org SHARED",
                11,
                "host names are not resolved",
            ),
            ("client any SHARED", 8, "matches everything"),
            ("client 80", 11, "expected IN ... OUT"),
            (
                "client 80 bw 1Mbit/s",
                11,
                "expected IN, OUT or SHARED, found 'bw'",
            ),
            ("client 80 IN bw 1Mbit/s", 11, "OUT is missing"),
            ("client 80 IN OUT SHARED", 18, "SHARED cannot be combined"),
            ("client 80 IN OUT IN", 18, "IN is given twice"),
            ("client 80 IN bw 1Mbps OUT", 17, "unknown unit 'Mbps'"),
            ("client 80 IN delay -5ms OUT", 20, ""),
            ("list all", 6, "takes no arguments"),
            ("delete client 80 IN", 18, "unexpected 'IN'"),
        ];
        for (text, col, msg) in cases {
            let e = parse_netconfig(text).unwrap_err();
            assert_eq!(e.column, *col, "{text}: {e}");
            assert!(e.message.contains(msg), "{text}: {e}");
        }
    }
}
