//! The topology model of the Create phase (ModelNet §2.1): a graph whose
//! nodes are clients (virtual nodes, VNs), stubs or transits, and whose
//! edges are bidirectional links with a bandwidth, a propagation delay, a
//! loss probability and a queue bound.
//!
//! Each direction of a link becomes its own pipe when the topology is
//! distilled ([`mod@crate::distill`]). Node and link indices are positions in
//! [`Topology::nodes`] and [`Topology::links`]; a node's `id` is the name
//! its source file gave it (GML `id`), kept for messages and round trips.
//!
//! Values are parsed elsewhere, by the command language's unit layer
//! ([`pipelab_lang::units`], through [`crate::linkset`]); this module only
//! holds them.

use std::collections::BTreeMap;
use std::sync::Arc;

use pipelab_engine::{Duration, QueueLimit, Rate};

use crate::TopoError;

/// What a node is in the topology (ModelNet borrows the terms from GT-ITM).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// A virtual edge node (VN): where traffic starts and ends. Never a
    /// transit point of a route.
    Client,
    /// A router of a stub domain.
    Stub,
    /// A router of a transit domain.
    Transit,
}

impl Role {
    /// The lower-case name used by GML and TOML files.
    pub fn name(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Stub => "stub",
            Role::Transit => "transit",
        }
    }

    /// Parse a role name (`client`/`vn`/`host`, `stub`/`router`/`switch`,
    /// `transit`).
    pub fn parse(s: &str) -> Option<Role> {
        match s.trim().to_ascii_lowercase().as_str() {
            "client" | "vn" | "host" => Some(Role::Client),
            "stub" | "router" | "switch" => Some(Role::Stub),
            "transit" => Some(Role::Transit),
            _ => None,
        }
    }
}

/// A node of the target topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The id its source gave it (unique within a topology).
    pub id: u64,
    /// Client (VN), stub or transit.
    pub role: Role,
    /// A human-readable name (may be empty).
    pub name: String,
}

/// A bidirectional link between nodes `a` and `b` (indices into
/// [`Topology::nodes`]); both directions have these attributes.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// One end (node index).
    pub a: usize,
    /// The other end (node index).
    pub b: usize,
    /// Bandwidth of each direction ([`Rate::UNLIMITED`] = no limit).
    pub bw: Rate,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Probability in `[0, 1]` that a packet is lost on this link.
    pub loss: f64,
    /// Queue bound of each direction's pipe.
    pub queue: QueueLimit,
    /// The language's pipe words beyond these four (jitter, loss models,
    /// AQM, netem and wireless words: [`crate::attrs`]), applied to both
    /// directions' pipes; `bw`, `delay`, `queue` and `plr` stay unset (the
    /// fields above stand for them).
    pub words: PipeWords,
}

/// A link's pipe words, as the language's parser read them.
pub type PipeWords = pipelab_lang::PipeSpec;

impl Link {
    /// A link with the attributes `attrs`.
    pub fn with_attrs(a: usize, b: usize, attrs: &LinkAttrs) -> Link {
        Link {
            a,
            b,
            bw: attrs.bw,
            delay: attrs.delay,
            loss: attrs.loss,
            queue: attrs.queue,
            words: PipeWords::default(),
        }
    }

    /// The end that is not `n` (or `a` if `n` is neither end).
    pub fn other(&self, n: usize) -> usize {
        if self.a == n {
            self.b
        } else {
            self.a
        }
    }
}

/// Attributes of one link, as generators assign them by link class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkAttrs {
    /// Bandwidth.
    pub bw: Rate,
    /// One-way delay.
    pub delay: Duration,
    /// Loss probability.
    pub loss: f64,
    /// Queue bound.
    pub queue: QueueLimit,
}

impl LinkAttrs {
    /// A lossless link with the default queue.
    pub const fn new(bw: Rate, delay: Duration) -> LinkAttrs {
        LinkAttrs {
            bw,
            delay,
            loss: 0.0,
            queue: QueueLimit::Slots(pipelab_engine::config::DEFAULT_QUEUE_SLOTS),
        }
    }
}

/// The class of a link by the roles of its ends (ModelNet's GT-ITM derived
/// topologies annotate links this way).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkClass {
    /// A VN's access link (client to any router, or client to client).
    ClientStub,
    /// Inside a stub domain.
    StubStub,
    /// A stub domain's uplink to a transit domain.
    StubTransit,
    /// Inside or between transit domains.
    TransitTransit,
}

impl LinkClass {
    /// The class of a link between roles `a` and `b`.
    pub fn of(a: Role, b: Role) -> LinkClass {
        use Role::*;
        match (a, b) {
            (Client, _) | (_, Client) => LinkClass::ClientStub,
            (Stub, Stub) => LinkClass::StubStub,
            (Transit, Transit) => LinkClass::TransitTransit,
            _ => LinkClass::StubTransit,
        }
    }
}

/// Link attributes by class, used by the generators.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoleAttrs {
    /// Client–stub (access) links.
    pub client_stub: LinkAttrs,
    /// Stub–stub links.
    pub stub_stub: LinkAttrs,
    /// Stub–transit links.
    pub stub_transit: LinkAttrs,
    /// Transit–transit links.
    pub transit_transit: LinkAttrs,
}

impl Default for RoleAttrs {
    /// Internet-like defaults: 10 Mb/s 1 ms access, 100 Mb/s 5 ms stub,
    /// 100 Mb/s 10 ms uplinks, 1 Gb/s 20 ms transit.
    fn default() -> Self {
        RoleAttrs {
            client_stub: LinkAttrs::new(Rate::from_bps(10_000_000), Duration::from_millis(1)),
            stub_stub: LinkAttrs::new(Rate::from_bps(100_000_000), Duration::from_millis(5)),
            stub_transit: LinkAttrs::new(Rate::from_bps(100_000_000), Duration::from_millis(10)),
            transit_transit: LinkAttrs::new(
                Rate::from_bps(1_000_000_000),
                Duration::from_millis(20),
            ),
        }
    }
}

impl RoleAttrs {
    /// The attributes of a link of class `c`.
    pub fn get(&self, c: LinkClass) -> &LinkAttrs {
        match c {
            LinkClass::ClientStub => &self.client_stub,
            LinkClass::StubStub => &self.stub_stub,
            LinkClass::StubTransit => &self.stub_transit,
            LinkClass::TransitTransit => &self.transit_transit,
        }
    }
}

/// The texts of the files a topology's links name (`bw trace:FILE`,
/// `profile FILE`, `distribution file:FILE`, ...), by path as the link
/// writes it: each read once, when a link naming it is read or set
/// ([`crate::attrs::FileReader`]), and lowered from here, so lowering
/// reads no file and a running topology never reads one again. Cloning
/// shares the texts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileTexts(BTreeMap<String, Arc<str>>);

impl FileTexts {
    /// The text of `path`, if read.
    pub fn get(&self, path: &str) -> Option<&str> {
        self.0.get(path).map(|t| &**t)
    }

    /// Keeps `text` as the text of `path`.
    pub fn insert(&mut self, path: &str, text: &str) {
        self.0.insert(path.to_string(), Arc::from(text));
    }

    /// True if no file was read.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The paths read, in order.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// Gives `other`'s texts to these (a path in both keeps `other`'s).
    pub fn extend(&mut self, other: &FileTexts) {
        for (p, t) in &other.0 {
            self.0.insert(p.clone(), Arc::clone(t));
        }
    }
}

/// A target topology: nodes and bidirectional links.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Topology {
    /// Nodes; a node's index is its position.
    pub nodes: Vec<Node>,
    /// Links; a link's index is its position.
    pub links: Vec<Link>,
    /// The texts of the files its links name.
    pub files: FileTexts,
}

impl Topology {
    /// An empty topology.
    pub fn new() -> Topology {
        Topology::default()
    }

    /// Add a node with id = its index; returns the index.
    pub fn add_node(&mut self, role: Role, name: impl Into<String>) -> usize {
        let i = self.nodes.len();
        self.nodes.push(Node {
            id: i as u64,
            role,
            name: name.into(),
        });
        i
    }

    /// Add a link between node indices `a` and `b` with the attributes of
    /// its class in `attrs`; returns the link's index.
    pub fn add_link_by_role(&mut self, a: usize, b: usize, attrs: &RoleAttrs) -> usize {
        let class = match (self.nodes.get(a), self.nodes.get(b)) {
            (Some(x), Some(y)) => LinkClass::of(x.role, y.role),
            _ => LinkClass::StubStub,
        };
        self.links.push(Link::with_attrs(a, b, attrs.get(class)));
        self.links.len() - 1
    }

    /// Indices of the client nodes (VNs), in node order.
    pub fn vns(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].role == Role::Client)
            .collect()
    }

    /// The index of the node whose id is `id`.
    pub fn node_by_id(&self, id: u64) -> Option<usize> {
        self.nodes.iter().position(|n| n.id == id)
    }

    /// The name node `i` goes by: its own, or `n<ID>` for a node without
    /// one (`n3`). Commands, `topo status` and a VN's namespace all use
    /// this name.
    pub fn node_name(&self, i: usize) -> String {
        match self.nodes.get(i) {
            Some(n) if n.name.is_empty() => format!("n{}", n.id),
            Some(n) => n.name.clone(),
            None => String::new(),
        }
    }

    /// The index of the node a command names by `key`: the node that goes
    /// by the name `key` ([`Topology::node_name`]: its own, or `n<ID>`
    /// for an unnamed node), or else whose id is `key` written in decimal.
    pub fn find_node(&self, key: &str) -> Option<usize> {
        // `n<ID>`'s id, read once (no name is built per node).
        let unnamed = key
            .strip_prefix('n')
            .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<u64>().ok());
        self.nodes
            .iter()
            .position(|n| {
                if n.name.is_empty() {
                    unnamed == Some(n.id) && key == format!("n{}", n.id)
                } else {
                    n.name == key
                }
            })
            .or_else(|| key.parse::<u64>().ok().and_then(|id| self.node_by_id(id)))
    }

    /// The first node (index) that goes by the name of an earlier one, and
    /// that earlier one: `(earlier, later)`.
    pub fn duplicate_name(&self) -> Option<(usize, usize)> {
        let mut seen = std::collections::HashMap::with_capacity(self.nodes.len());
        (0..self.nodes.len()).find_map(|i| seen.insert(self.node_name(i), i).map(|prev| (prev, i)))
    }

    /// Why nodes `a` and `b` cannot share their name (see
    /// [`Topology::duplicate_name`]).
    pub fn duplicate_name_message(&self, a: usize, b: usize) -> String {
        let name = self.node_name(b);
        let (na, nb) = (&self.nodes[a], &self.nodes[b]);
        let unnamed = match (na.name.is_empty(), nb.name.is_empty()) {
            (true, _) => format!("node {} has no name and goes by '{name}'; ", na.id),
            (_, true) => format!("node {} has no name and goes by '{name}'; ", nb.id),
            _ => String::new(),
        };
        format!(
            "nodes {} and {} are both named '{name}' ({unnamed}names must be unique: commands name nodes by them)",
            na.id, nb.id
        )
    }

    /// The index of the link between node indices `a` and `b` (either
    /// orientation), the first if there are parallel links.
    pub fn find_link(&self, a: usize, b: usize) -> Option<usize> {
        self.links
            .iter()
            .position(|l| (l.a == a && l.b == b) || (l.a == b && l.b == a))
    }

    /// For each node, the indices of its links, in link order.
    pub fn adjacency(&self) -> Vec<Vec<usize>> {
        let mut adj = vec![Vec::new(); self.nodes.len()];
        for (i, l) in self.links.iter().enumerate() {
            if l.a < adj.len() && l.b < adj.len() {
                adj[l.a].push(i);
                if l.b != l.a {
                    adj[l.b].push(i);
                }
            }
        }
        adj
    }

    /// Check the invariants every other module relies on: link ends exist,
    /// no self-loops, node ids and names unique, losses in `[0, 1]`,
    /// queues non-zero.
    pub fn validate(&self) -> Result<(), TopoError> {
        let mut ids: Vec<u64> = self.nodes.iter().map(|n| n.id).collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(TopoError::Invalid(format!(
                "node id {} is used twice",
                w[0]
            )));
        }
        if let Some((a, b)) = self.duplicate_name() {
            return Err(TopoError::Invalid(self.duplicate_name_message(a, b)));
        }
        for (i, l) in self.links.iter().enumerate() {
            if l.a >= self.nodes.len() || l.b >= self.nodes.len() {
                return Err(TopoError::Invalid(format!(
                    "link {i} joins node index {} and {}, but there are {} nodes",
                    l.a,
                    l.b,
                    self.nodes.len()
                )));
            }
            if l.a == l.b {
                return Err(TopoError::Invalid(format!(
                    "link {i} is a loop on node {}",
                    self.nodes[l.a].id
                )));
            }
            if !(0.0..=1.0).contains(&l.loss) {
                return Err(TopoError::Invalid(format!(
                    "link {i} has loss {} outside [0, 1]",
                    l.loss
                )));
            }
            if matches!(l.queue, QueueLimit::Slots(0) | QueueLimit::Bytes(0)) {
                return Err(TopoError::Invalid(format!("link {i} has an empty queue")));
            }
        }
        Ok(())
    }

    /// True if every node can reach every other over the links.
    pub fn is_connected(&self) -> bool {
        self.component_count() <= 1
    }

    /// The number of connected components (0 for an empty topology).
    pub fn component_count(&self) -> usize {
        self.components().len()
    }

    /// The connected components: node indices, each component in node
    /// order, components in the order of their first node.
    pub fn components(&self) -> Vec<Vec<usize>> {
        let adj = self.adjacency();
        let mut seen = vec![false; self.nodes.len()];
        let mut out = Vec::new();
        for s in 0..self.nodes.len() {
            if seen[s] {
                continue;
            }
            seen[s] = true;
            let mut comp = vec![s];
            let mut stack = vec![s];
            while let Some(u) = stack.pop() {
                for &li in &adj[u] {
                    let v = self.links[li].other(u);
                    if !seen[v] {
                        seen[v] = true;
                        comp.push(v);
                        stack.push(v);
                    }
                }
            }
            comp.sort_unstable();
            out.push(comp);
        }
        out
    }

    /// A warning for a topology that is not connected, or `None`: how
    /// many of the routes between VNs (ordered pairs) have no path, and
    /// the components by the names of their nodes (at most 4 components
    /// of at most 6 names are spelled out). Routes inside a component may
    /// still be missing where only a path through a VN joins two nodes
    /// (a VN never forwards); `topo distill` counts those among its
    /// unreachable routes.
    pub fn disconnected_warning(&self) -> Option<String> {
        const COMPONENTS: usize = 4;
        const NAMES: usize = 6;
        let comps = self.components();
        if comps.len() <= 1 {
            return None;
        }
        let vns = |c: &Vec<usize>| {
            c.iter()
                .filter(|&&i| self.nodes[i].role == Role::Client)
                .count()
        };
        let n = self.vns().len();
        let pairs = |k: usize| k * k.saturating_sub(1);
        let apart = pairs(n) - comps.iter().map(|c| pairs(vns(c))).sum::<usize>();
        let mut shown: Vec<String> = comps
            .iter()
            .take(COMPONENTS)
            .map(|c| {
                let mut names: Vec<String> =
                    c.iter().take(NAMES).map(|&i| self.node_name(i)).collect();
                if c.len() > NAMES {
                    names.push(format!("{} more", c.len() - NAMES));
                }
                format!("[{}]", names.join(", "))
            })
            .collect();
        if comps.len() > COMPONENTS {
            shown.push(format!("{} more", comps.len() - COMPONENTS));
        }
        Some(format!(
            "the topology is not connected: {apart} of {} routes between its {n} VNs have no path ({} components: {})",
            pairs(n),
            comps.len(),
            shown.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(t: &mut Topology, a: usize, b: usize) {
        t.links.push(Link::with_attrs(
            a,
            b,
            &LinkAttrs::new(Rate::from_bps(1_000_000), Duration::from_millis(1)),
        ));
    }

    /// A pass proves a topology in two pieces is reported with the count
    /// of VN routes that have no path and its components by name (an
    /// unnamed node as `n<ID>`), and a connected one is not.
    #[test]
    fn a_disconnected_topology_is_named_in_a_warning() {
        let mut t = Topology::new();
        let r0 = t.add_node(Role::Stub, "r0");
        let a = t.add_node(Role::Client, "a");
        let b = t.add_node(Role::Client, "b");
        let r1 = t.add_node(Role::Stub, "");
        let c = t.add_node(Role::Client, "c");
        link(&mut t, r0, a);
        link(&mut t, r0, b);
        link(&mut t, r1, c);
        assert_eq!(
            t.disconnected_warning().as_deref(),
            Some("the topology is not connected: 4 of 6 routes between its 3 VNs have no path (2 components: [r0, a, b], [n3, c])")
        );
        link(&mut t, r0, r1);
        assert_eq!(t.disconnected_warning(), None);
    }

    /// Many components: at most 4 are spelled out, 6 names each.
    #[test]
    fn a_long_warning_is_cut() {
        let mut t = Topology::new();
        let hub = t.add_node(Role::Stub, "hub");
        for i in 0..8 {
            let v = t.add_node(Role::Client, format!("v{i}"));
            link(&mut t, hub, v);
        }
        for i in 0..5 {
            t.add_node(Role::Client, format!("lone{i}"));
        }
        assert_eq!(
            t.disconnected_warning().as_deref(),
            Some("the topology is not connected: 100 of 156 routes between its 13 VNs have no path (6 components: [hub, v0, v1, v2, v3, v4, 3 more], [lone0], [lone1], [lone2], 2 more)")
        );
    }
}
