//! GML, the graph modelling language ModelNet converts every topology
//! source to (ModelNet §2.1, Create phase):
//!
//! ```text
//! graph [
//!   node [ id 0 role "client" ]
//!   node [ id 1 role "stub" name "r1" ]
//!   edge [ source 0 target 1 bandwidth "2Mbit/s" delay 5 loss 0.001 queue 20 ]
//! ]
//! ```
//!
//! A small tokenizer (keys, numbers, quoted strings, `[`, `]`, `#` comments)
//! feeds a recursive reader of `key value` lists. Only `graph`, its `node`s
//! and `edge`s are interpreted; the graph's other keys (`directed`,
//! `Creator`, ...) are skipped. Attributes:
//!
//! * node: `id` (required, integer), `role` or `type` (`client`, `stub`,
//!   `transit`; default `stub`, `client` for a node with Shadow's host
//!   bandwidths), `name` or `label`; metadata
//!   ([`crate::attrs::is_metadata`]: capitalised keys, `graphics`, ...) is
//!   skipped, any other key refused with its line.
//! * edge: `source`, `target` (node ids, required); `bandwidth` or `bw`
//!   (a bare number is bit/s, or a string with a unit: `"10Mbit/s"`),
//!   `kbps` (a number of kbit/s); `delay` (a bare number is ms, or
//!   `"250us"`); `loss` (a probability `0.001`, or `"0.1%"`); `queue`
//!   (slots, or a size such as `"100KB"`); every other pipe word of the
//!   language (`jitter "5ms" distribution "normal" codel "" ecn 1`), read
//!   by [`crate::attrs`]; metadata skipped, any other key refused with
//!   its line and the nearest known keys. Missing attributes take
//!   [`GmlDefaults`].
//!
//! Every value is read by the command language's unit layer, through
//! [`crate::linkset::LinkSet`] (pipe words by the language's parser): a
//! spelling a `pipe N config` line refuses
//! (`"10Mbps"`, `"5 ms"`) is refused here with the same message and hint,
//! and the limits of a pipe (a queue of at least one packet, a delay of at
//! most 3600 s) apply. A number token is passed on as written (in plain
//! decimal if written with an exponent, `1e6` = `1000000`); an unquoted
//! word such as `10Mbit/s` is read like a string.
//!
//! Shadow's network graphs read too: its node keys `host_bandwidth_up`
//! and `host_bandwidth_down`, its edge keys `latency`, `packet_loss` and
//! `jitter` with their units, its self-loops and `directed 1`
//! ([`crate::dialects`]).
//!
//! Every error names the line and the field ([`GmlError`]). The reader
//! never panics on its input.

use core::fmt;
use std::collections::HashMap;

use pipelab_engine::{Duration, QueueLimit, Rate};

use crate::attrs::{build_link, read_link, reborrow, FileReader};
use crate::dialects::{
    apply_hosts, edge_attr, merge_directed, Dialect, Hosts, EDGE_KEYS, HOST_KEYS,
};
use crate::linkset::loss_probability;
use crate::model::{Link, Node, PipeWords, Role, Topology};

/// A GML (or GraphML) error: where, which field, what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GmlError {
    /// 1-based line number.
    pub line: usize,
    /// The key being read (`bandwidth`, `source`, ...), or `""` for syntax.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for GmlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "line {}: {}", self.line, self.message)
        } else {
            write!(
                f,
                "line {}: field `{}`: {}",
                self.line, self.field, self.message
            )
        }
    }
}

impl std::error::Error for GmlError {}

/// Two nodes of one name are refused at the second's line, naming the
/// first's (`node_line[i]` is node `i`'s line).
pub(crate) fn unique_names(topo: &Topology, node_line: &[usize]) -> Result<(), GmlError> {
    match topo.duplicate_name() {
        Some((a, b)) => Err(err(
            node_line[b],
            "name",
            format!(
                "{}; node {} is on line {}",
                topo.duplicate_name_message(a, b),
                topo.nodes[a].id,
                node_line[a]
            ),
        )),
        None => Ok(()),
    }
}

pub(crate) fn err(line: usize, field: &str, message: impl Into<String>) -> GmlError {
    GmlError {
        line,
        field: field.to_string(),
        message: message.into(),
    }
}

/// Attributes of edges that do not give them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GmlDefaults {
    /// Bandwidth (default unlimited).
    pub bw: Rate,
    /// Delay (default 0).
    pub delay: Duration,
    /// Loss (default 0).
    pub loss: f64,
    /// Queue (default 50 slots, ipfw's).
    pub queue: QueueLimit,
}

impl Default for GmlDefaults {
    fn default() -> Self {
        GmlDefaults {
            bw: Rate::UNLIMITED,
            delay: Duration::ZERO,
            loss: 0.0,
            queue: QueueLimit::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Key(String),
    Num(f64, String),
    Str(String),
    Open,
    Close,
}

fn tokenize(text: &str) -> Result<Vec<(Tok, usize)>, GmlError> {
    let mut out = Vec::new();
    let mut line = 1;
    let mut it = text.char_indices().peekable();
    while let Some(&(i, c)) = it.peek() {
        match c {
            '\n' => {
                line += 1;
                it.next();
            }
            c if c.is_whitespace() => {
                it.next();
            }
            '#' => {
                while let Some(&(_, c)) = it.peek() {
                    if c == '\n' {
                        break;
                    }
                    it.next();
                }
            }
            '[' => {
                out.push((Tok::Open, line));
                it.next();
            }
            ']' => {
                out.push((Tok::Close, line));
                it.next();
            }
            '"' => {
                let start_line = line;
                it.next();
                let mut s = String::new();
                let mut closed = false;
                for (_, c) in it.by_ref() {
                    if c == '"' {
                        closed = true;
                        break;
                    }
                    if c == '\n' {
                        line += 1;
                    }
                    s.push(c);
                }
                if !closed {
                    return Err(err(start_line, "", "unterminated string"));
                }
                out.push((Tok::Str(s), start_line));
            }
            c if c.is_ascii_digit() || c == '-' || c == '+' || c == '.' => {
                let mut end = i;
                while let Some(&(j, c)) = it.peek() {
                    if c.is_alphanumeric() || matches!(c, '.' | '-' | '+' | '/' | '%') {
                        end = j + c.len_utf8();
                        it.next();
                    } else {
                        break;
                    }
                }
                let raw = &text[i..end];
                // A number with a unit (`10Mbit/s` unquoted) is a word for
                // the attribute's parser, which says what is wrong with it.
                let tok = match raw.parse::<f64>() {
                    Ok(v) => Tok::Num(v, raw.to_string()),
                    Err(_) => Tok::Str(raw.to_string()),
                };
                out.push((tok, line));
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let mut end = i;
                while let Some(&(j, c)) = it.peek() {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        end = j + 1;
                        it.next();
                    } else {
                        break;
                    }
                }
                out.push((Tok::Key(text[i..end].to_string()), line));
            }
            c => return Err(err(line, "", format!("unexpected character `{c}`"))),
        }
    }
    Ok(out)
}

/// A parsed GML value.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Num(f64, String),
    Str(String),
    List(Vec<Entry>),
}

#[derive(Clone, Debug, PartialEq)]
struct Entry {
    key: String,
    value: Value,
    line: usize,
}

struct Reader {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    last_line: usize,
}

impl Reader {
    /// A list of `key value` pairs up to a `]` (`nested`) or the end.
    fn list(&mut self, nested: bool, depth: usize) -> Result<Vec<Entry>, GmlError> {
        if depth > 64 {
            return Err(err(self.last_line, "", "lists nested more than 64 deep"));
        }
        let mut entries = Vec::new();
        loop {
            let Some((tok, line)) = self.toks.get(self.pos).cloned() else {
                if nested {
                    return Err(err(self.last_line, "", "missing `]` at end of input"));
                }
                return Ok(entries);
            };
            self.pos += 1;
            let key = match tok {
                Tok::Close if nested => return Ok(entries),
                Tok::Key(k) => k,
                Tok::Close => return Err(err(line, "", "`]` without a matching `[`")),
                other => {
                    return Err(err(
                        line,
                        "",
                        format!("expected a key, found {}", show(&other)),
                    ))
                }
            };
            let Some((vt, vline)) = self.toks.get(self.pos).cloned() else {
                return Err(err(line, &key, "missing value at end of input"));
            };
            self.pos += 1;
            let value = match vt {
                Tok::Num(v, raw) => Value::Num(v, raw),
                Tok::Str(s) => Value::Str(s),
                Tok::Open => Value::List(self.list(true, depth + 1)?),
                other => {
                    return Err(err(
                        vline,
                        &key,
                        format!("expected a value, found {}", show(&other)),
                    ))
                }
            };
            entries.push(Entry { key, value, line });
        }
    }
}

fn show(t: &Tok) -> String {
    match t {
        Tok::Key(k) => format!("key `{k}`"),
        Tok::Num(_, raw) => format!("number `{raw}`"),
        Tok::Str(s) => format!("string \"{s}\""),
        Tok::Open => "`[`".into(),
        Tok::Close => "`]`".into(),
    }
}

fn as_id(e: &Entry) -> Result<u64, GmlError> {
    match &e.value {
        Value::Num(v, raw) if v.fract() == 0.0 && *v >= 0.0 && *v <= u64::MAX as f64 => {
            raw.parse::<u64>().or(Ok(*v as u64))
        }
        _ => Err(err(e.line, &e.key, "expected a non-negative integer id")),
    }
}

fn as_text(e: &Entry) -> Result<String, GmlError> {
    match &e.value {
        Value::Str(s) => Ok(s.clone()),
        Value::Num(_, raw) => Ok(raw.clone()),
        Value::List(_) => Err(err(e.line, &e.key, "expected a string, found a list")),
    }
}

/// The keys of a node.
const NODE_KEYS: &[&str] = &[
    "id",
    "role",
    "type",
    "name",
    "label",
    "host_bandwidth_up",
    "host_bandwidth_down",
];

/// A number token as the unit layer reads it: as written, or in plain
/// decimal if written with an exponent or a sign (`1e6` = `1000000`,
/// `+5` = `5`; a negative number stays negative and is refused there).
fn number(v: f64, raw: &str) -> String {
    let plain = raw
        .strip_prefix('-')
        .unwrap_or(raw)
        .bytes()
        .all(|b| b.is_ascii_digit() || b == b'.');
    if plain {
        raw.to_string()
    } else {
        // The shortest decimal that reads back as `v`, never with an
        // exponent.
        format!("{v}")
    }
}

/// Parse a GML topology with default link attributes.
pub fn parse_gml(text: &str) -> Result<Topology, GmlError> {
    parse_gml_with(text, &GmlDefaults::default())
}

/// Parse a GML topology; edges missing an attribute take it from
/// `defaults`. A link that names a file is refused (see
/// [`parse_gml_files`]).
pub fn parse_gml_with(text: &str, defaults: &GmlDefaults) -> Result<Topology, GmlError> {
    parse_gml_files(text, defaults, None)
}

/// Parse a GML topology; edges missing an attribute take it from
/// `defaults`; the files links name (`bw "trace:FILE"`, `profile "FILE"`,
/// ...) are read with `load` (the path as written: the caller resolves a
/// relative one from the topology file's directory) and kept in
/// [`Topology::files`]. A file that cannot be read or parsed is an error
/// of the key that named it.
pub fn parse_gml_files(
    text: &str,
    defaults: &GmlDefaults,
    load: Option<crate::attrs::Loader<'_>>,
) -> Result<Topology, GmlError> {
    use pipelab_lang::files::{first_content_line, quotes, starts_with_any};
    // An error on the first line of text that quotes it, where that line
    // is not GML's: the file may be any file (named by mistake, or to
    // have an error print a line of it), and nothing of it is shown.
    parse_gml_text(text, defaults, load).map_err(|e| match first_content_line(text) {
        Some((line, content))
            if e.line == line
                && quotes(&format!("{} {}", e.field, e.message), content)
                && !starts_with_any(content, &["graph", "creator", "version", "comment"]) =>
        {
            err(
                line,
                "",
                "not a GML topology (`graph [ ... ]`); the line is not shown",
            )
        }
        _ => e,
    })
}

fn parse_gml_text(
    text: &str,
    defaults: &GmlDefaults,
    mut load: Option<crate::attrs::Loader<'_>>,
) -> Result<Topology, GmlError> {
    let toks = tokenize(text)?;
    let last_line = toks.last().map_or(1, |t| t.1);
    let mut r = Reader {
        toks,
        pos: 0,
        last_line,
    };
    let top = r.list(false, 0)?;
    let graphs: Vec<&Entry> = top.iter().filter(|e| e.key == "graph").collect();
    let graph = match graphs.as_slice() {
        [g] => g,
        [] => return Err(err(1, "graph", "no `graph [ ... ]` in the input")),
        [_, g, ..] => return Err(err(g.line, "graph", "more than one graph")),
    };
    let Value::List(items) = &graph.value else {
        return Err(err(graph.line, "graph", "expected `[`"));
    };
    // Shadow's `directed 1`: an edge and its reverse are one link.
    let directed = items
        .iter()
        .any(|e| e.key == "directed" && matches!(&e.value, Value::Num(v, _) if *v != 0.0));
    let mut topo = Topology::new();
    let mut node_line = Vec::new();
    let mut hosts: Vec<Hosts> = Vec::new();
    // Node index by id: a lookup per node and per edge end, not a scan
    // (a scan made a 100,000-node file take seconds).
    let mut by_id: HashMap<u64, usize> = HashMap::new();
    for e in items.iter().filter(|e| e.key == "node") {
        let Value::List(attrs) = &e.value else {
            return Err(err(e.line, "node", "expected `[`"));
        };
        let mut id = None;
        let mut role = None;
        let mut name = String::new();
        let mut host = Hosts::default();
        for a in attrs {
            match a.key.as_str() {
                "id" => id = Some(as_id(a)?),
                "role" | "type" => {
                    let s = as_text(a)?;
                    role = Some(Role::parse(&s).ok_or_else(|| {
                        err(
                            a.line,
                            &a.key,
                            format!("unknown role \"{s}\" (client, stub or transit)"),
                        )
                    })?);
                }
                k if HOST_KEYS.contains(&k) => {
                    host.read(k, &as_text(a)?, a.line)?;
                }
                "name" | "label" => name = as_text(a)?,
                k if crate::attrs::is_metadata(k) => {}
                k => {
                    let e = crate::attrs::unknown(k, a.line, "node", NODE_KEYS);
                    return Err(err(e.line, &e.key, e.message));
                }
            }
        }
        let id = id.ok_or_else(|| err(e.line, "id", "node has no id"))?;
        if let Some(&k) = by_id.get(&id) {
            return Err(err(
                e.line,
                "id",
                format!("node id {id} already used on line {}", node_line[k]),
            ));
        }
        // A node where Shadow's hosts attach is a VN unless it says.
        let role = role.unwrap_or(if host.any() { Role::Client } else { Role::Stub });
        by_id.insert(id, topo.nodes.len());
        topo.nodes.push(Node { id, role, name });
        node_line.push(e.line);
        hosts.push(host);
    }
    unique_names(&topo, &node_line)?;
    let mut edge_line = Vec::new();
    for e in items.iter().filter(|e| e.key == "edge") {
        let Value::List(attrs) = &e.value else {
            return Err(err(e.line, "edge", "expected `[`"));
        };
        let mut src = None;
        let mut dst = None;
        let mut written = Vec::new();
        // The key each attribute was written as (Shadow's `latency` is
        // read as `delay`): errors name it.
        let mut as_written: Vec<&str> = Vec::new();
        for a in attrs {
            let line = a.line;
            let key = a.key.as_str();
            let value = match (key, &a.value) {
                ("source", _) => {
                    src = Some((as_id(a)?, line));
                    continue;
                }
                ("target", _) => {
                    dst = Some((as_id(a)?, line));
                    continue;
                }
                (k, Value::List(_)) if crate::attrs::is_metadata(k) => continue,
                (_, Value::List(_)) => {
                    return Err(err(
                        line,
                        key,
                        "expected a number or a string, found a list",
                    ))
                }
                (_, Value::Num(v, raw)) => number(*v, raw),
                (_, Value::Str(s)) => s.clone(),
            };
            if let Some(w) =
                edge_attr(Dialect::Gml, key, &value, line).map_err(|m| err(line, key, m))?
            {
                written.push(w);
                as_written.push(key);
            }
        }
        // An error of a rewritten key names the key as written.
        let named = |line: usize, key: &str| {
            written
                .iter()
                .zip(&as_written)
                .find(|(w, _)| w.line == line && w.key == key)
                .map_or(key.to_string(), |(_, k)| k.to_string())
        };
        let read = read_link(&written, EDGE_KEYS, false)
            .map_err(|e| err(e.line, &named(e.line, &e.key), e.message))?;
        let base = Link {
            a: 0,
            b: 0,
            bw: defaults.bw,
            delay: defaults.delay,
            loss: defaults.loss,
            queue: defaults.queue,
            words: PipeWords::default(),
        };
        let mut reader = FileReader::new(&topo.files, reborrow(&mut load));
        let mut link =
            build_link(&read, &written, &base, &mut reader).map_err(|x| match x.line {
                // A default refused: the edge's line.
                0 => err(e.line, "edge", x.message),
                line => err(line, &named(line, &x.key), x.message),
            })?;
        let read_files = reader.read;
        topo.files.extend(&read_files);
        let (s, sl) = src.ok_or_else(|| err(e.line, "source", "edge has no source"))?;
        let (t, tl) = dst.ok_or_else(|| err(e.line, "target", "edge has no target"))?;
        link.a = by_id
            .get(&s)
            .copied()
            .ok_or_else(|| err(sl, "source", format!("no node with id {s}")))?;
        link.b = by_id
            .get(&t)
            .copied()
            .ok_or_else(|| err(tl, "target", format!("no node with id {t}")))?;
        if link.a == link.b {
            // Shadow's loop: the path between two hosts of one node.
            if hosts[link.a].any() {
                continue;
            }
            return Err(err(tl, "target", format!("edge is a loop on node {s}")));
        }
        topo.links.push(link);
        edge_line.push(e.line);
    }
    if directed {
        merge_directed(&mut topo, &edge_line)?;
    }
    apply_hosts(&mut topo, &hosts, &node_line)?;
    Ok(topo)
}

/// Write a topology as GML that [`parse_gml`] reads back unchanged (a
/// loss is written to nine decimals, the unit layer's precision).
pub fn to_gml(topo: &Topology) -> String {
    use std::fmt::Write;
    let mut s = String::from("graph [\n");
    for n in &topo.nodes {
        let _ = write!(s, "  node [ id {} role \"{}\"", n.id, n.role.name());
        if !n.name.is_empty() {
            let _ = write!(s, " name \"{}\"", n.name.replace('"', "'"));
        }
        s.push_str(" ]\n");
    }
    for l in &topo.links {
        let (Some(a), Some(b)) = (topo.nodes.get(l.a), topo.nodes.get(l.b)) else {
            continue;
        };
        let _ = write!(
            s,
            "  edge [ source {} target {} bandwidth {} delay \"{}ns\" loss {} queue \"{}\"",
            a.id,
            b.id,
            l.bw.bps(),
            l.delay.as_nanos(),
            loss_probability(l.loss),
            pipelab_lang::units::format_queue(l.queue)
        );
        let (jitter, rest) = crate::attrs::written_words(&l.words);
        if let Some(j) = jitter {
            let _ = write!(s, " jitter \"{j}\"");
        }
        if let Some(r) = rest {
            let _ = write!(s, " pipe \"{}\"", r.replace('"', "'"));
        }
        s.push_str(" ]\n");
    }
    s.push_str("]\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"
# two VNs behind one router
graph [
  directed 0
  node [ id 1 role "client" name "a" ]
  node [ id 2 role "client" ]
  node [ id 7 role "stub" label "r" ]
  edge [ source 1 target 7 bandwidth 2000000 delay 5 loss 0.01 queue 20 ]
  edge [ source 2 target 7 bandwidth "10Mbit/s" delay "250us" loss "1%" queue "64KB" ]
]
"#;

    /// `topo up` refused two VNs of one name while `topo distill` took
    /// them. A pass proves the reader refuses two nodes of one name
    /// (routers too, and a name that is an unnamed node's `n<ID>`),
    /// naming both nodes and lines, so every command refuses them alike.
    #[test]
    fn duplicate_node_names_are_refused() {
        for (text, want) in [
            (
                "graph [\n node [ id 1 role \"client\" name \"a\" ]\n node [ id 2 role \"client\" name \"a\" ]\n]",
                "line 3: field `name`: nodes 1 and 2 are both named 'a' (names must be unique: commands name nodes by them); node 1 is on line 2",
            ),
            (
                "graph [\n node [ id 3 role \"stub\" ]\n node [ id 5 role \"stub\" name \"n3\" ]\n]",
                "line 3: field `name`: nodes 3 and 5 are both named 'n3' (node 3 has no name and goes by 'n3'; names must be unique: commands name nodes by them); node 3 is on line 2",
            ),
        ] {
            assert_eq!(parse_gml(text).map(|_| ()).map_err(|e| e.to_string()), Err(want.to_string()));
        }
    }

    /// A pass proves nodes, roles and edge attributes in both bare and
    /// unit forms are read as documented.
    #[test]
    fn reads_nodes_edges_and_units() {
        let t = parse_gml(SMALL).expect("parses");
        assert_eq!(t.nodes.len(), 3);
        assert_eq!(t.vns(), vec![0, 1]);
        assert_eq!(t.nodes[2].name, "r");
        let l0 = &t.links[0];
        assert_eq!((l0.a, l0.b), (0, 2));
        assert_eq!(l0.bw, Rate::from_bps(2_000_000));
        assert_eq!(l0.delay, Duration::from_millis(5));
        assert_eq!(l0.queue, QueueLimit::Slots(20));
        let l1 = &t.links[1];
        assert_eq!(l1.bw, Rate::from_bps(10_000_000));
        assert_eq!(l1.delay, Duration::from_micros(250));
        assert_eq!(l1.loss, 0.01);
        assert_eq!(l1.queue, QueueLimit::Bytes(65_536));
    }

    /// A pass proves `to_gml` and `parse_gml` round-trip a topology.
    #[test]
    fn round_trips() {
        let t = parse_gml(SMALL).expect("parses");
        let back = parse_gml(&to_gml(&t)).expect("re-parses");
        assert_eq!(t, back);
    }

    /// A pass proves each kind of error names its line and field.
    #[test]
    fn errors_name_line_and_field() {
        let cases: &[(&str, usize, &str)] = &[
            ("graph [\n node [ id 0 ]\n node [ id 1 ]\n edge [ source 0 target 1\n bandwidth \"fast\" ]\n]", 5, "bandwidth"),
            ("graph [\n node [ id 0 ]\n edge [ source 0 target 9 ]\n]", 3, "target"),
            ("graph [\n node [ id 0 role \"router\" ]\n node [ id 1\n role \"moon\" ]\n]", 4, "role"),
            ("graph [\n node [ id 0 ]\n node [ id 1 ]\n edge [ source 0 target 1 delay \"3 parsecs\" ]\n]", 4, "delay"),
            ("graph [\n node [ id 0 ]\n node [ id 1 ]\n edge [ source 0 target 1\n\n loss 1.5 ]\n]", 6, "loss"),
            ("graph [\n node [ id 0 ]\n node [ id 1 ]\n edge [ source 0 target 1 queue 0 ]\n]", 4, "queue"),
            ("graph [\n node [ id 0 ]\n node [ id 0 ]\n]", 3, "id"),
            ("graph [\n node [ role \"stub\" ]\n]", 2, "id"),
            ("graph [\n node [ id 0 ]\n edge [ target 0 ]\n]", 3, "source"),
        ];
        for (text, line, field) in cases {
            let e = parse_gml(text).expect_err(text);
            assert_eq!((e.line, e.field.as_str()), (*line, *field), "{e}");
            let shown = e.to_string();
            assert!(shown.contains(&format!("line {line}")), "{shown}");
            assert!(shown.contains(field), "{shown}");
        }
    }

    /// A pass proves syntax errors carry the line and never panic.
    #[test]
    fn syntax_errors_have_lines() {
        let e = parse_gml("graph [\n node [ id 0 \n").expect_err("unclosed");
        assert_eq!(e.line, 2);
        let e = parse_gml("graph [\n node [ id \"0 ]\n]").expect_err("string");
        assert_eq!(e.line, 2);
        let e = parse_gml("graph [\n\n ] ]").expect_err("extra ]");
        assert_eq!(e.line, 3);
        let e = parse_gml("graph [ node [ id 0 ] @ ]").expect_err("char");
        assert_eq!(e.line, 1);
        assert!(parse_gml("").is_err());
        for junk in [
            "[",
            "]",
            "graph",
            "graph 3",
            "graph [ node 3 ]",
            "\"",
            "-",
            "graph [ edge [ source -1 target 2 ] ]",
        ] {
            assert!(parse_gml(junk).is_err(), "{junk}");
        }
    }
}
