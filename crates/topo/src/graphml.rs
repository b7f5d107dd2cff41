//! GraphML topologies, in the dialect NetworkX's `write_graphml` writes:
//!
//! ```text
//! <?xml version='1.0' encoding='utf-8'?>
//! <graphml xmlns="http://graphml.graphdrawing.org/xmlns">
//!   <key id="d2" for="edge" attr.name="delay" attr.type="string" />
//!   <key id="d1" for="edge" attr.name="bw" attr.type="double" />
//!   <key id="d0" for="node" attr.name="type" attr.type="string" />
//!   <graph edgedefault="undirected">
//!     <node id="h1">
//!       <data key="d0">host</data>
//!     </node>
//!     <node id="s1" />
//!     <edge source="h1" target="s1">
//!       <data key="d1">10.0</data>
//!       <data key="d2">5ms</data>
//!     </edge>
//!   </graph>
//! </graphml>
//! ```
//!
//! `<key>`s declare the attributes (`id`, `for` = `node`, `edge`, `graph`
//! or `all`, `attr.name`, `attr.type` = `boolean`, `int`, `long`,
//! `float`, `double` or `string`, and a `<default>` for the elements that
//! do not give one); a `<data key=..>` gives a node's or edge's value,
//! checked against its type. A key without `attr.name` (yEd's graphics)
//! and the graph's own data are skipped.
//!
//! * **Nodes.** If every node's `id` is a whole number, it is the node's
//!   id (its name from a `name` or `label` attribute, else `n<ID>`);
//!   otherwise nodes are numbered in file order from 0 and each is named
//!   by its `id` (`h1`, `s1`), or by its `name` or `label`. `role` or
//!   `type`: `client` (`vn`, `host`), `stub` (`router`, `switch`) or
//!   `transit`; `isSwitch` (Mininet's: true is a stub, false a client);
//!   default `stub`, or `client` for a node with Shadow's host bandwidths.
//! * **Edges.** `source` and `target` name nodes by `id`; the attributes
//!   are a GML edge's ([`crate::gml`]: `bandwidth`, `delay`, `queue`,
//!   `jitter` and every pipe word of the language), with Mininet's and
//!   Shadow's keys and units ([`crate::dialects`]): `bw` as a bare number
//!   is Mbit/s, `loss` as a bare number a percentage, `max_queue_size`
//!   packets, `latency` a time (bare: seconds), `packet_loss` a fraction.
//! * **Directed graphs** (`edgedefault="directed"`, or an edge's
//!   `directed="true"`): an edge and its reverse are one link
//!   ([`crate::dialects`]).
//! * Metadata (keys starting with a capital letter, `weight`, `id`,
//!   `key`, ..., [`crate::attrs::is_metadata`]) is skipped; any other
//!   attribute is refused with its line and the nearest known keys.
//!   Hyperedges, ports and nested graphs are refused.
//!
//! Errors are [`GmlError`]s: the line (of the element or `<data>` at
//! fault), the attribute, what is wrong. XML that is not well formed is
//! refused with roxmltree's message and position. The reader never
//! panics on its input.

use std::collections::{BTreeMap, HashMap};

use roxmltree::{Document, Node as XmlNode};

use crate::attrs::{build_link, read_link, reborrow, FileReader};
use crate::dialects::{
    apply_hosts, decimal, edge_attr, merge_directed, Dialect, Hosts, EDGE_KEYS, HOST_KEYS,
};
use crate::gml::{err, unique_names, GmlDefaults, GmlError};
use crate::model::{Link, Node, PipeWords, Role, Topology};

/// The keys of a node.
const NODE_KEYS: &[&str] = &[
    "role",
    "type",
    "name",
    "label",
    "isSwitch",
    "host_bandwidth_up",
    "host_bandwidth_down",
];

/// A `<key>` declaration.
struct Key<'a> {
    /// `attr.name` (`None`: not an attribute, e.g. yEd's graphics).
    name: Option<&'a str>,
    /// `node`, `edge`, `graph` or `all`.
    domain: &'a str,
    /// `attr.type` (default `string`).
    kind: &'a str,
    /// The `<default>`'s text and line.
    default: Option<(String, usize)>,
    /// The line of the declaration.
    line: usize,
}

/// One attribute of a node or an edge: its name, value and line.
struct Attr<'a> {
    name: &'a str,
    value: String,
    line: usize,
}

/// Parse a GraphML topology with default link attributes.
pub fn parse_graphml(text: &str) -> Result<Topology, GmlError> {
    parse_graphml_files(text, &GmlDefaults::default(), None)
}

/// Parse a GraphML topology; edges missing an attribute take it from
/// `defaults`; the files links name are read with `load`, as
/// [`crate::gml::parse_gml_files`] reads them (without `load`, a link
/// that names a file is refused).
pub fn parse_graphml_files(
    text: &str,
    defaults: &GmlDefaults,
    mut load: Option<crate::attrs::Loader<'_>>,
) -> Result<Topology, GmlError> {
    let doc = Document::parse(text).map_err(|e| {
        use roxmltree::Error as X;
        // Errors found at the end have no position of their own.
        let line = match e {
            X::UnexpectedEndOfStream | X::UnclosedRootNode => text.lines().count().max(1),
            _ => e.pos().row as usize,
        };
        err(line, "", format!("not well-formed XML: {e}"))
    })?;
    let line_of = |n: XmlNode| doc.text_pos_at(n.range().start).row as usize;
    let root = doc.root_element();
    if root.tag_name().name() != "graphml" {
        return Err(err(
            line_of(root),
            "",
            format!(
                "not a GraphML file: the root element is <{}>, not <graphml>",
                root.tag_name().name()
            ),
        ));
    }
    // The declared keys, by id.
    let mut keys: BTreeMap<&str, Key> = BTreeMap::new();
    let mut graphs = Vec::new();
    for c in root.children().filter(XmlNode::is_element) {
        match c.tag_name().name() {
            "key" => {
                let line = line_of(c);
                let id = c
                    .attribute("id")
                    .ok_or_else(|| err(line, "key", "<key> has no id"))?;
                let kind = c.attribute("attr.type").unwrap_or("string");
                if !["boolean", "int", "long", "float", "double", "string"].contains(&kind) {
                    return Err(err(
                        line,
                        "attr.type",
                        format!("unknown attr.type \"{kind}\" (boolean, int, long, float, double or string)"),
                    ));
                }
                let default = match c
                    .children()
                    .find(|d| d.is_element() && d.tag_name().name() == "default")
                {
                    Some(d) => {
                        let v = d.text().unwrap_or("").to_string();
                        let name = c.attribute("attr.name").unwrap_or(id);
                        check_type(kind, &v).map_err(|m| err(line_of(d), name, m))?;
                        Some((v, line_of(d)))
                    }
                    None => None,
                };
                let key = Key {
                    name: c.attribute("attr.name"),
                    domain: c.attribute("for").unwrap_or("all"),
                    kind,
                    default,
                    line,
                };
                if let Some(before) = keys.insert(id, key) {
                    return Err(err(
                        line,
                        "key",
                        format!("key id \"{id}\" already declared on line {}", before.line),
                    ));
                }
            }
            "graph" => graphs.push(c),
            "desc" | "data" => {}
            other => {
                return Err(err(
                    line_of(c),
                    "",
                    format!("unexpected <{other}> in <graphml> (<key>s and one <graph>)"),
                ))
            }
        }
    }
    let graph = match graphs.as_slice() {
        [g] => *g,
        [] => return Err(err(line_of(root), "graph", "no <graph> in the file")),
        [_, g, ..] => return Err(err(line_of(*g), "graph", "more than one <graph>")),
    };
    let directed_default = match graph.attribute("edgedefault") {
        None | Some("undirected") => false,
        Some("directed") => true,
        Some(other) => {
            return Err(err(
                line_of(graph),
                "edgedefault",
                format!("edgedefault is \"{other}\" (directed or undirected)"),
            ))
        }
    };
    // The attributes of an element: its `<data>`, then the defaults of
    // the keys of its domain it does not give.
    let attrs_of = |el: XmlNode<'_, '_>, domain: &str| -> Result<Vec<Attr<'_>>, GmlError> {
        let mut out: Vec<Attr> = Vec::new();
        let mut given: Vec<&str> = Vec::new();
        for c in el.children().filter(XmlNode::is_element) {
            let line = line_of(c);
            match c.tag_name().name() {
                "data" => {}
                "desc" => continue,
                "graph" => {
                    return Err(err(
                        line,
                        "graph",
                        "nested graphs are not read: a topology is one graph",
                    ))
                }
                "port" => return Err(err(line, "port", "ports are not read: an edge joins nodes")),
                other => return Err(err(line, "", format!("unexpected <{other}> in <{domain}>"))),
            }
            let id = c
                .attribute("key")
                .ok_or_else(|| err(line, "data", "<data> has no key"))?;
            let key = keys.get(id).ok_or_else(|| {
                err(
                    line,
                    "data",
                    format!("<data> names key \"{id}\", which no <key> declares"),
                )
            })?;
            if key.domain != domain && key.domain != "all" {
                return Err(err(
                    line,
                    key.name.unwrap_or(id),
                    format!(
                        "key \"{id}\" is declared for {}, not for {domain}",
                        key.domain
                    ),
                ));
            }
            if given.contains(&id) {
                return Err(err(
                    line,
                    key.name.unwrap_or(id),
                    format!("key \"{id}\" given twice"),
                ));
            }
            given.push(id);
            let Some(name) = key.name else { continue };
            let value: String = c
                .descendants()
                .filter(|t| t.is_text())
                .filter_map(|t| t.text())
                .collect();
            check_type(key.kind, &value).map_err(|m| err(line, name, m))?;
            out.push(Attr { name, value, line });
        }
        for (id, key) in &keys {
            if (key.domain == domain || key.domain == "all") && !given.contains(id) {
                if let (Some(name), Some((v, line))) = (key.name, &key.default) {
                    out.push(Attr {
                        name,
                        value: v.clone(),
                        line: *line,
                    });
                }
            }
        }
        Ok(out)
    };

    let xml_nodes: Vec<XmlNode> = graph
        .children()
        .filter(|c| c.is_element() && c.tag_name().name() == "node")
        .collect();
    for c in graph.children().filter(XmlNode::is_element) {
        match c.tag_name().name() {
            "node" | "edge" | "data" | "desc" => {}
            "hyperedge" => {
                return Err(err(
                    line_of(c),
                    "hyperedge",
                    "hyperedges are not read: a link joins two nodes",
                ))
            }
            other => {
                return Err(err(
                    line_of(c),
                    "",
                    format!("unexpected <{other}> in <graph>"),
                ))
            }
        }
    }
    // Whole-number ids are the nodes' ids; else nodes are numbered.
    let numeric = xml_nodes.iter().all(|n| {
        n.attribute("id")
            .is_some_and(|id| id.parse::<u64>().is_ok())
    });
    let mut topo = Topology::new();
    let mut node_line = Vec::new();
    let mut hosts: Vec<Hosts> = Vec::new();
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    let mut by_number: HashMap<u64, usize> = HashMap::new();
    for n in &xml_nodes {
        let line = line_of(*n);
        let xid = n
            .attribute("id")
            .ok_or_else(|| err(line, "id", "node has no id"))?;
        if let Some(&k) = by_id.get(xid) {
            return Err(err(
                line,
                "id",
                format!("node id \"{xid}\" already used on line {}", node_line[k]),
            ));
        }
        let mut role = None;
        let mut name = None;
        let mut host = Hosts::default();
        for a in attrs_of(*n, "node")? {
            let v = a.value.trim();
            match a.name {
                "role" | "type" => {
                    role = Some(Role::parse(v).ok_or_else(|| {
                        err(
                            a.line,
                            a.name,
                            format!("unknown role \"{v}\" (client, stub or transit)"),
                        )
                    })?);
                }
                "isSwitch" => {
                    role = Some(match v.to_ascii_lowercase().as_str() {
                        "true" | "1" => Role::Stub,
                        "false" | "0" => Role::Client,
                        _ => {
                            return Err(err(
                                a.line,
                                a.name,
                                format!("expected true or false, found \"{v}\""),
                            ))
                        }
                    });
                }
                "name" | "label" => name = Some(v.to_string()),
                k if HOST_KEYS.contains(&k) => {
                    host.read(k, v, a.line)?;
                }
                k if crate::attrs::is_metadata(k) => {}
                k => {
                    let e = crate::attrs::unknown(k, a.line, "node", NODE_KEYS);
                    return Err(err(e.line, &e.key, e.message));
                }
            }
        }
        let role = role.unwrap_or(if host.any() { Role::Client } else { Role::Stub });
        let (id, name) = if numeric {
            let id = xid.parse::<u64>().unwrap_or(0);
            // `01` and `1` are one id.
            if let Some(&k) = by_number.get(&id) {
                return Err(err(
                    line,
                    "id",
                    format!("node id {id} already used on line {}", node_line[k]),
                ));
            }
            by_number.insert(id, topo.nodes.len());
            (id, name.unwrap_or_default())
        } else {
            (
                topo.nodes.len() as u64,
                name.unwrap_or_else(|| xid.to_string()),
            )
        };
        by_id.insert(xid, topo.nodes.len());
        topo.nodes.push(Node { id, role, name });
        node_line.push(line);
        hosts.push(host);
    }
    unique_names(&topo, &node_line)?;
    let mut edge_line = Vec::new();
    let mut directed_any = false;
    for e in graph
        .children()
        .filter(|c| c.is_element() && c.tag_name().name() == "edge")
    {
        let line = line_of(e);
        let end = |which: &str| -> Result<usize, GmlError> {
            let id = e
                .attribute(which)
                .ok_or_else(|| err(line, which, format!("edge has no {which}")))?;
            by_id
                .get(id)
                .copied()
                .ok_or_else(|| err(line, which, format!("no node with id \"{id}\"")))
        };
        let (a, b) = (end("source")?, end("target")?);
        match e.attribute("directed") {
            None => directed_any |= directed_default,
            Some("true") => directed_any = true,
            Some("false") => {}
            Some(other) => {
                return Err(err(
                    line,
                    "directed",
                    format!("directed is \"{other}\" (true or false)"),
                ))
            }
        }
        let mut written = Vec::new();
        let mut as_written: Vec<&str> = Vec::new();
        for at in attrs_of(e, "edge")? {
            if let Some(w) = edge_attr(Dialect::Graphml, at.name, &at.value, at.line)
                .map_err(|m| err(at.line, at.name, m))?
            {
                written.push(w);
                as_written.push(at.name);
            }
        }
        let named = |l: usize, key: &str| {
            written
                .iter()
                .zip(&as_written)
                .find(|(w, _)| w.line == l && w.key == key)
                .map_or(key.to_string(), |(_, k)| k.to_string())
        };
        let read = read_link(&written, EDGE_KEYS, false)
            .map_err(|x| err(x.line, &named(x.line, &x.key), x.message))?;
        let base = Link {
            a,
            b,
            bw: defaults.bw,
            delay: defaults.delay,
            loss: defaults.loss,
            queue: defaults.queue,
            words: PipeWords::default(),
        };
        let mut reader = FileReader::new(&topo.files, reborrow(&mut load));
        let link = build_link(&read, &written, &base, &mut reader).map_err(|x| match x.line {
            0 => err(line, "edge", x.message),
            l => err(l, &named(l, &x.key), x.message),
        })?;
        let read_files = reader.read;
        topo.files.extend(&read_files);
        if a == b {
            // Shadow's loop: the path between two hosts of one node.
            if hosts[a].any() {
                continue;
            }
            return Err(err(
                line,
                "target",
                format!("edge is a loop on node \"{}\"", topo.node_name(a)),
            ));
        }
        topo.links.push(link);
        edge_line.push(line);
    }
    if directed_any {
        merge_directed(&mut topo, &edge_line)?;
    }
    apply_hosts(&mut topo, &hosts, &node_line)?;
    Ok(topo)
}

/// Checks a value against its key's `attr.type`.
fn check_type(kind: &str, value: &str) -> Result<(), String> {
    let v = value.trim();
    let ok = match kind {
        "int" | "long" => v.parse::<i64>().is_ok(),
        "float" | "double" => decimal(v).parse::<f64>().is_ok(),
        "boolean" => ["true", "false", "1", "0"].contains(&v.to_ascii_lowercase().as_str()),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("\"{v}\" is not a {kind} (the key's attr.type)"))
    }
}
