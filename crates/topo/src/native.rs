//! pipelab's native topology format: TOML with the same attributes as GML
//! ([`crate::gml`]), for people who write topologies by hand.
//!
//! ```toml
//! [[node]]
//! id = 0
//! role = "client"
//! name = "vn0"
//!
//! [[node]]
//! id = 1
//! role = "stub"
//!
//! [[link]]
//! a = 0                 # node ids
//! b = 1
//! bw = "2Mbit/s"        # or an integer in bit/s
//! delay = "5ms"         # or a number of ms
//! loss = 0.001          # or "0.1%"
//! queue = 20            # slots, or "64KB"
//! jitter = "5ms"        # any pipe word of the language ([`crate::attrs`])
//! codel = "target 5ms"
//! ecn = true
//! ```
//!
//! Missing link attributes take [`crate::gml::GmlDefaults`]. A link's keys
//! are read as a GML edge's, by [`crate::attrs`] (an integer or a float is
//! passed on as its plain decimal text, a boolean as `true`/`false`):
//! `bw = "10Mbps"` is refused with the language's message and hint, an
//! unknown key (`jiter`) with the nearest known ones. Errors name the
//! line (found from the key's place in the file), the entry and the key.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::attrs::{build_link, read_link, reborrow, FileReader, Written};
use crate::gml::GmlDefaults;
use crate::linkset::loss_probability;
use crate::model::{Link, Node, PipeWords, Role, Topology};
use crate::TopoError;

/// A number, or a string with a unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
enum NumOrStr {
    Int(i64),
    Float(f64),
    Str(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    node: Vec<NodeEntry>,
    #[serde(default)]
    link: Vec<LinkEntry>,
}

/// A link as read: every key with where it is, so that each is checked
/// by [`crate::attrs`] and an error names its line.
type LinkEntry = BTreeMap<Spanned<String>, Spanned<toml::Value>>;

#[derive(Debug, Serialize)]
struct FileOut {
    node: Vec<NodeEntry>,
    link: Vec<LinkOut>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeEntry {
    id: u64,
    #[serde(default = "default_role")]
    role: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    name: String,
}

fn default_role() -> String {
    "stub".into()
}

#[derive(Debug, Serialize)]
struct LinkOut {
    a: u64,
    b: u64,
    bw: NumOrStr,
    delay: NumOrStr,
    loss: NumOrStr,
    queue: NumOrStr,
    #[serde(skip_serializing_if = "Option::is_none")]
    jitter: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pipe: Option<String>,
}

fn bad(what: String, field: &str, m: String) -> TopoError {
    TopoError::Invalid(format!("{what}: field `{field}`: {m}"))
}

/// The 1-based line of byte `at` of `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.get(..at).map_or(0, |t| t.matches('\n').count() + 1)
}

/// The line of any byte offset of a text, found by a binary search of
/// its line ends (counting newlines from the start for every key made
/// reading a 10,000-VN file quadratic: seconds of `topo up`).
struct LineIndex(Vec<usize>);

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        LineIndex(
            text.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i)
                .collect(),
        )
    }

    /// The 1-based line of byte `at` ([`line_of`]'s answer).
    fn line(&self, at: usize) -> usize {
        self.0.partition_point(|&nl| nl < at) + 1
    }
}

/// A TOML error as the toml crate renders it (the line shown, a caret
/// under the column), unless it is on the file's first line of text: the
/// file may then be any file (named by mistake, or to have an error
/// print a line of it), so the line is not shown, and if the message
/// quotes it, neither is the message.
fn syntax(text: &str, e: &toml::de::Error) -> String {
    use pipelab_lang::files::{first_content_line, quotes};
    let at = e.span().map_or(0, |s| s.start);
    let line = line_of(text, at);
    match first_content_line(text) {
        Some((first, content)) if first == line => {
            let message = e.message().trim();
            if quotes(message, content) {
                format!("line {line}: not a topology in TOML (`[[node]]` and `[[link]]` tables); the line is not shown")
            } else {
                format!("line {line}: {message}")
            }
        }
        _ => e.to_string(),
    }
}

/// Parse the native TOML format.
pub fn parse_toml(text: &str) -> Result<Topology, TopoError> {
    parse_toml_with(text, &GmlDefaults::default())
}

/// A node id given as `a` or `b`.
fn end_id(l: &LinkEntry, key: &str, what: &str, text: &str) -> Result<u64, TopoError> {
    match l.get(key).map(|v| (v.get_ref(), v.span())) {
        Some((toml::Value::Integer(i), _)) if *i >= 0 => Ok(*i as u64),
        Some((_, span)) => Err(bad(
            format!("line {}: {what}", line_of(text, span.start)),
            key,
            "expected a node id (a non-negative integer)".into(),
        )),
        None => {
            // The line of the entry's first key.
            let at = l.keys().map(|k| k.span().start).min().unwrap_or(0);
            Err(bad(
                format!("line {}: {what}", line_of(text, at)),
                key,
                "missing (a link joins two nodes: a = ID, b = ID)".into(),
            ))
        }
    }
}

/// Parse the native TOML format with the given defaults for links. A
/// link that names a file is refused (see [`parse_toml_files`]).
pub fn parse_toml_with(text: &str, d: &GmlDefaults) -> Result<Topology, TopoError> {
    parse_toml_files(text, d, None)
}

/// Parse the native TOML format with the given defaults for links; the
/// files links name are read with `load`, as
/// [`crate::gml::parse_gml_files`] reads them.
pub fn parse_toml_files(
    text: &str,
    d: &GmlDefaults,
    mut load: Option<crate::attrs::Loader<'_>>,
) -> Result<Topology, TopoError> {
    let file: File = toml::from_str(text).map_err(|e| TopoError::Invalid(syntax(text, &e)))?;
    let mut topo = Topology::new();
    // Node index by id: a lookup per node and per link end, not a scan.
    let mut by_id: HashMap<u64, usize> = HashMap::new();
    let lines = LineIndex::new(text);
    for (i, n) in file.node.iter().enumerate() {
        let what = format!("node {} (entry {})", n.id, i + 1);
        let role = Role::parse(&n.role)
            .ok_or_else(|| bad(what.clone(), "role", format!("unknown role \"{}\"", n.role)))?;
        if by_id.contains_key(&n.id) {
            return Err(bad(what, "id", "already used".into()));
        }
        by_id.insert(n.id, topo.nodes.len());
        topo.nodes.push(Node {
            id: n.id,
            role,
            name: n.name.clone(),
        });
    }
    for (i, l) in file.link.iter().enumerate() {
        let entry = format!("link {}", i + 1);
        let la = end_id(l, "a", &entry, text)?;
        let lb = end_id(l, "b", &entry, text)?;
        let what = format!("link {} (between {la} and {lb})", i + 1);
        let a = by_id
            .get(&la)
            .copied()
            .ok_or_else(|| bad(what.clone(), "a", format!("no node with id {la}")))?;
        let b = by_id
            .get(&lb)
            .copied()
            .ok_or_else(|| bad(what.clone(), "b", format!("no node with id {lb}")))?;
        if a == b {
            return Err(bad(what, "b", "a link cannot join a node to itself".into()));
        }
        let mut written = Vec::new();
        for (k, v) in l {
            let key = k.get_ref().as_str();
            if key == "a" || key == "b" {
                continue;
            }
            let line = lines.line(k.span().start);
            let value = match v.get_ref() {
                toml::Value::Integer(n) => n.to_string(),
                toml::Value::Float(f) => format!("{f}"),
                toml::Value::String(s) => s.clone(),
                toml::Value::Boolean(b) => b.to_string(),
                _ if crate::attrs::is_metadata(key) => continue,
                _ => {
                    return Err(bad(
                        format!("line {line}: {what}"),
                        key,
                        "expected a number, a string or a boolean".into(),
                    ))
                }
            };
            written.push(Written::new(key, value, line));
        }
        let at = |line: usize| format!("line {line}: {what}");
        let read = read_link(&written, &["a", "b"], false)
            .map_err(|e| bad(at(e.line), &e.key, e.message))?;
        let base = Link {
            a,
            b,
            bw: d.bw,
            delay: d.delay,
            loss: d.loss,
            queue: d.queue,
            words: PipeWords::default(),
        };
        let mut reader = FileReader::new(&topo.files, reborrow(&mut load));
        let link = build_link(&read, &written, &base, &mut reader).map_err(|x| match x.line {
            // A default refused: no line names it.
            0 => bad(at(0), "link", x.message),
            line => bad(at(line), &x.key, x.message),
        })?;
        let read_files = reader.read;
        topo.files.extend(&read_files);
        topo.links.push(link);
    }
    Ok(topo)
}
/// Write a topology in the native TOML format ([`parse_toml`] reads it
/// back unchanged; a loss is written to nine decimals, the unit layer's
/// precision).
pub fn to_toml(topo: &Topology) -> Result<String, TopoError> {
    topo.validate()?;
    let file = FileOut {
        node: topo
            .nodes
            .iter()
            .map(|n| NodeEntry {
                id: n.id,
                role: n.role.name().into(),
                name: n.name.clone(),
            })
            .collect(),
        link: topo
            .links
            .iter()
            .map(|l| {
                let (jitter, pipe) = crate::attrs::written_words(&l.words);
                LinkOut {
                    a: topo.nodes[l.a].id,
                    b: topo.nodes[l.b].id,
                    bw: NumOrStr::Str(format!("{}bit/s", l.bw.bps())),
                    delay: NumOrStr::Str(format!("{}ns", l.delay.as_nanos())),
                    loss: NumOrStr::Float(loss_probability(l.loss).as_f64()),
                    queue: NumOrStr::Str(pipelab_lang::units::format_queue(l.queue)),
                    jitter,
                    pipe,
                }
            })
            .collect(),
    };
    toml::to_string(&file).map_err(|e| TopoError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipelab_engine::{Duration, QueueLimit, Rate};

    /// A pass proves the line index agrees with counting newlines, at
    /// every offset of a text with empty lines and no final newline.
    #[test]
    fn line_index_agrees_with_counting() {
        let text = "a = 1\n\n[[node]]\nid = 0\n\n\nname = \"x\"";
        let index = LineIndex::new(text);
        for at in 0..=text.len() {
            assert_eq!(index.line(at), line_of(text, at), "offset {at}");
        }
    }

    /// A pass proves the documented example parses with its units.
    #[test]
    fn reads_the_documented_example() {
        let t = parse_toml(
            r#"
[[node]]
id = 0
role = "client"
name = "vn0"
[[node]]
id = 1
[[link]]
a = 0
b = 1
bw = "2Mbit/s"
delay = 5
loss = "0.1%"
queue = "64KB"
"#,
        )
        .expect("parses");
        assert_eq!(t.nodes[1].role, Role::Stub);
        let l = &t.links[0];
        assert_eq!(l.bw, Rate::from_bps(2_000_000));
        assert_eq!(l.delay, Duration::from_millis(5));
        assert!((l.loss - 0.001).abs() < 1e-15);
        assert_eq!(l.queue, QueueLimit::Bytes(65_536));
    }

    /// A pass proves `to_toml` and `parse_toml` round-trip a generated
    /// topology exactly.
    #[test]
    fn round_trips() {
        let t = crate::gen::transit_stub(&crate::gen::TransitStub {
            transit: 3,
            stubs: 2,
            clients: 2,
            seed: 5,
            ..Default::default()
        })
        .expect("generates");
        let back = parse_toml(&to_toml(&t).expect("writes")).expect("reads back");
        assert_eq!(t, back);
    }

    /// A pass proves errors name the entry and the field.
    #[test]
    fn errors_name_the_field() {
        let e = parse_toml(
            "[[node]]\nid = 0\n[[node]]\nid = 1\n[[link]]\na = 0\nb = 1\nbw = \"lots\"\n",
        )
        .expect_err("bad bw");
        assert!(e.to_string().contains("`bw`"), "{e}");
        let e = parse_toml("[[node]]\nid = 0\n[[link]]\na = 0\nb = 3\n").expect_err("bad b");
        assert!(e.to_string().contains("`b`"), "{e}");
        let e = parse_toml("[[node]]\nid = 0\ncolour = 3\n").expect_err("unknown key");
        assert!(e.to_string().contains("colour"), "{e}");
    }
}
