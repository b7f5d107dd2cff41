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
//! ```
//!
//! Missing link attributes take [`crate::gml::GmlDefaults`]. Values are
//! read as in GML, by the command language's unit layer through
//! [`crate::linkset::LinkSet`] (an integer or a float is passed on as its
//! plain decimal text): `bw = "10Mbps"` is refused with the language's
//! message and hint. Errors name the entry and the key.

use serde::{Deserialize, Serialize};

use crate::gml::GmlDefaults;
use crate::linkset::{loss_probability, LinkAttr, LinkSet};
use crate::model::{Link, Node, Role, Topology};
use crate::TopoError;

/// A number, or a string with a unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
enum NumOrStr {
    Int(i64),
    Float(f64),
    Str(String),
}

impl NumOrStr {
    /// The value as the unit layer reads it: a string as written, a
    /// number as its plain decimal (the shortest that reads back as the
    /// float, never with an exponent).
    fn word(&self) -> String {
        match self {
            NumOrStr::Int(v) => v.to_string(),
            NumOrStr::Float(v) => format!("{v}"),
            NumOrStr::Str(s) => s.clone(),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    node: Vec<NodeEntry>,
    #[serde(default)]
    link: Vec<LinkEntry>,
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

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkEntry {
    a: u64,
    b: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bw: Option<NumOrStr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delay: Option<NumOrStr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    loss: Option<NumOrStr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    queue: Option<NumOrStr>,
}

fn bad(what: String, field: &str, m: String) -> TopoError {
    TopoError::Invalid(format!("{what}: field `{field}`: {m}"))
}

/// Parse the native TOML format.
pub fn parse_toml(text: &str) -> Result<Topology, TopoError> {
    parse_toml_with(text, &GmlDefaults::default())
}

/// Parse the native TOML format with the given defaults for links.
pub fn parse_toml_with(text: &str, d: &GmlDefaults) -> Result<Topology, TopoError> {
    let file: File = toml::from_str(text).map_err(|e| TopoError::Invalid(e.to_string()))?;
    let mut topo = Topology::new();
    for (i, n) in file.node.iter().enumerate() {
        let what = format!("node {} (entry {})", n.id, i + 1);
        let role = Role::parse(&n.role)
            .ok_or_else(|| bad(what.clone(), "role", format!("unknown role \"{}\"", n.role)))?;
        if topo.node_by_id(n.id).is_some() {
            return Err(bad(what, "id", "already used".into()));
        }
        topo.nodes.push(Node {
            id: n.id,
            role,
            name: n.name.clone(),
        });
    }
    for (i, l) in file.link.iter().enumerate() {
        let what = format!("link {} (between {} and {})", i + 1, l.a, l.b);
        let a = topo
            .node_by_id(l.a)
            .ok_or_else(|| bad(what.clone(), "a", format!("no node with id {}", l.a)))?;
        let b = topo
            .node_by_id(l.b)
            .ok_or_else(|| bad(what.clone(), "b", format!("no node with id {}", l.b)))?;
        if a == b {
            return Err(bad(what, "b", "a link cannot join a node to itself".into()));
        }
        let mut set = LinkSet::default();
        let given = [
            (LinkAttr::Bw, &l.bw),
            (LinkAttr::Delay, &l.delay),
            (LinkAttr::Loss, &l.loss),
            (LinkAttr::Queue, &l.queue),
        ];
        for (attr, value) in &given {
            if let Some(v) = value {
                set.set_word(*attr, &v.word())
                    .map_err(|e| bad(what.clone(), attr.name(), e.to_string()))?;
            }
        }
        if let Err(limit) = set.check() {
            let word = given
                .iter()
                .find(|(attr, _)| *attr == limit.attr)
                .and_then(|(_, v)| v.as_ref())
                .map(NumOrStr::word)
                .unwrap_or_default();
            return Err(bad(what, limit.attr.name(), limit.message(&word)));
        }
        let mut link = Link {
            a,
            b,
            bw: d.bw,
            delay: d.delay,
            loss: d.loss,
            queue: d.queue,
        };
        set.apply(&mut link);
        topo.links.push(link);
    }
    Ok(topo)
}
/// Write a topology in the native TOML format ([`parse_toml`] reads it
/// back unchanged; a loss is written to nine decimals, the unit layer's
/// precision).
pub fn to_toml(topo: &Topology) -> Result<String, TopoError> {
    topo.validate()?;
    let file = File {
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
            .map(|l| LinkEntry {
                a: topo.nodes[l.a].id,
                b: topo.nodes[l.b].id,
                bw: Some(NumOrStr::Str(format!("{}bit/s", l.bw.bps()))),
                delay: Some(NumOrStr::Str(format!("{}ns", l.delay.as_nanos()))),
                loss: Some(NumOrStr::Float(loss_probability(l.loss).as_f64())),
                queue: Some(NumOrStr::Str(pipelab_lang::units::format_queue(l.queue))),
            })
            .collect(),
    };
    toml::to_string(&file).map_err(|e| TopoError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipelab_engine::{Duration, QueueLimit, Rate};

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
