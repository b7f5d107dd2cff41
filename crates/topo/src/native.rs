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
//! Missing link attributes take [`crate::gml::GmlDefaults`]. Errors name
//! the entry and field.

use serde::{Deserialize, Serialize};

use crate::gml::GmlDefaults;
use crate::model::{
    check_loss, check_queue, delay_from_ms, format_queue, parse_delay, parse_loss, parse_queue,
    parse_rate, Link, Node, Role, Topology,
};
use crate::TopoError;
use pipelab_engine::{QueueLimit, Rate};

/// A number, or a string with a unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
enum NumOrStr {
    Int(i64),
    Float(f64),
    Str(String),
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
        let e = |f: &str| {
            let w = what.clone();
            let f = f.to_string();
            move |m: String| bad(w, &f, m)
        };
        let bw = match &l.bw {
            None => d.bw,
            Some(NumOrStr::Int(v)) if *v >= 0 => Rate::from_bps(*v as u64),
            Some(NumOrStr::Float(v)) if v.is_finite() && *v >= 0.0 && *v < 1e19 => {
                Rate::from_bps(v.round() as u64)
            }
            Some(NumOrStr::Str(s)) => parse_rate(s).map_err(e("bw"))?,
            Some(other) => return Err(e("bw")(format!("{other:?} is not a bandwidth"))),
        };
        let delay = match &l.delay {
            None => d.delay,
            Some(NumOrStr::Int(v)) => delay_from_ms(*v as f64).map_err(e("delay"))?,
            Some(NumOrStr::Float(v)) => delay_from_ms(*v).map_err(e("delay"))?,
            Some(NumOrStr::Str(s)) => parse_delay(s).map_err(e("delay"))?,
        };
        let loss = match &l.loss {
            None => d.loss,
            Some(NumOrStr::Int(v)) => check_loss(*v as f64).map_err(e("loss"))?,
            Some(NumOrStr::Float(v)) => check_loss(*v).map_err(e("loss"))?,
            Some(NumOrStr::Str(s)) => parse_loss(s).map_err(e("loss"))?,
        };
        let queue = match &l.queue {
            None => d.queue,
            Some(NumOrStr::Int(v)) if *v >= 1 && *v <= u32::MAX as i64 => {
                QueueLimit::Slots(*v as u32)
            }
            Some(NumOrStr::Str(s)) => parse_queue(s).map_err(e("queue"))?,
            Some(other) => return Err(e("queue")(format!("{other:?} is not a queue bound"))),
        };
        let queue = check_queue(queue).map_err(e("queue"))?;
        topo.links.push(Link {
            a,
            b,
            bw,
            delay,
            loss,
            queue,
        });
    }
    Ok(topo)
}

/// Write a topology in the native TOML format ([`parse_toml`] reads it
/// back unchanged).
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
                loss: Some(NumOrStr::Float(l.loss)),
                queue: Some(NumOrStr::Str(format_queue(l.queue))),
            })
            .collect(),
    };
    toml::to_string(&file).map_err(|e| TopoError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipelab_engine::Duration;

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
