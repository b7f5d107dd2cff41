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
//! This module also holds the unit parsers shared by the GML and TOML
//! readers: bandwidths, delays, losses and queue bounds written as numbers
//! or with units.

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

    /// Parse a role name (`client`/`vn`, `stub`/`router`, `transit`).
    pub fn parse(s: &str) -> Option<Role> {
        match s.trim().to_ascii_lowercase().as_str() {
            "client" | "vn" | "host" => Some(Role::Client),
            "stub" | "router" => Some(Role::Stub),
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
}

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

/// A target topology: nodes and bidirectional links.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Topology {
    /// Nodes; a node's index is its position.
    pub nodes: Vec<Node>,
    /// Links; a link's index is its position.
    pub links: Vec<Link>,
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
    /// no self-loops, node ids unique, losses in `[0, 1]`, queues non-zero.
    pub fn validate(&self) -> Result<(), TopoError> {
        let mut ids: Vec<u64> = self.nodes.iter().map(|n| n.id).collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(TopoError::Invalid(format!(
                "node id {} is used twice",
                w[0]
            )));
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
        let adj = self.adjacency();
        let mut seen = vec![false; self.nodes.len()];
        let mut count = 0;
        for s in 0..self.nodes.len() {
            if seen[s] {
                continue;
            }
            count += 1;
            seen[s] = true;
            let mut stack = vec![s];
            while let Some(u) = stack.pop() {
                for &li in &adj[u] {
                    let v = self.links[li].other(u);
                    if !seen[v] {
                        seen[v] = true;
                        stack.push(v);
                    }
                }
            }
        }
        count
    }
}

/// Split `s` into its leading number and the unit after it.
fn split_number(s: &str) -> Result<(f64, &str), String> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || ((c == 'e' || c == 'E')
                    && i > 0
                    && s[i + 1..]
                        .starts_with(|d: char| d.is_ascii_digit() || d == '-' || d == '+'))
                || ((c == '-' || c == '+') && (i == 0 || s[..i].ends_with(['e', 'E']))))
        })
        .map_or(s.len(), |(i, _)| i);
    let (num, unit) = s.split_at(end);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` does not start with a number"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("`{s}` is not a finite non-negative number"));
    }
    Ok((v, unit.trim()))
}

/// A bandwidth: a number of bit/s, or a number with a unit (`bit/s`,
/// `bps`, `b/s`, `Kbit/s`, `kbps`, `Mbit/s`, `Mb/s`, `Mbps`, `Gbit/s`, ...;
/// `KB/s`, `MB/s` and `MBps` are bytes per second).
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    let (v, unit) = split_number(s)?;
    let u = unit.trim_end_matches("/s").trim_end_matches("ps");
    let (mult, bytes) = match u {
        "" | "bit" | "b" => (1.0, false),
        "K" | "k" | "Kbit" | "kbit" | "Kb" | "kb" => (1e3, false),
        "M" | "m" | "Mbit" | "mbit" | "Mb" | "mb" => (1e6, false),
        "G" | "g" | "Gbit" | "gbit" | "Gb" | "gb" => (1e9, false),
        "B" | "Byte" | "byte" => (1.0, true),
        "KB" | "kB" | "KByte" => (1e3, true),
        "MB" | "MByte" => (1e6, true),
        "GB" | "GByte" => (1e9, true),
        _ => return Err(format!("unknown bandwidth unit `{unit}` in `{}`", s.trim())),
    };
    let bps = v * mult * if bytes { 8.0 } else { 1.0 };
    if bps > u64::MAX as f64 {
        return Err(format!("bandwidth `{}` is too large", s.trim()));
    }
    Ok(Rate::from_bps(bps.round() as u64))
}

/// A delay: a number of milliseconds, or a number with a unit (`ns`, `us`,
/// `µs`, `ms`, `s`).
pub fn parse_delay(s: &str) -> Result<Duration, String> {
    let (v, unit) = split_number(s)?;
    let mult = match unit {
        "" | "ms" | "msec" => 1e6,
        "ns" => 1.0,
        "us" | "µs" | "usec" => 1e3,
        "s" | "sec" => 1e9,
        _ => return Err(format!("unknown delay unit `{unit}` in `{}`", s.trim())),
    };
    let ns = v * mult;
    if ns > 3600e9 {
        return Err(format!("delay `{}` is more than an hour", s.trim()));
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

/// A delay given as a bare number of milliseconds.
pub fn delay_from_ms(ms: f64) -> Result<Duration, String> {
    if !ms.is_finite() || !(0.0..=3_600_000.0).contains(&ms) {
        return Err(format!("delay {ms} ms is not in [0, 3600000]"));
    }
    Ok(Duration::from_nanos((ms * 1e6).round() as u64))
}

/// A loss: a probability in `[0, 1]`, or a percentage (`1%`).
pub fn parse_loss(s: &str) -> Result<f64, String> {
    let (v, unit) = split_number(s)?;
    let p = match unit {
        "" => v,
        "%" => v / 100.0,
        _ => return Err(format!("unknown loss unit `{unit}` in `{}`", s.trim())),
    };
    check_loss(p)
}

/// Check that `p` is a probability.
pub fn check_loss(p: f64) -> Result<f64, String> {
    if p.is_finite() && (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(format!("loss {p} is not a probability in [0, 1]"))
    }
}

/// A queue bound: a number of packet slots, or a size in bytes (`1500B`,
/// `100KB`, `1MB`; K = 1024 as in ipfw).
pub fn parse_queue(s: &str) -> Result<QueueLimit, String> {
    let (v, unit) = split_number(s)?;
    let q = match unit {
        "" | "slots" | "pkts" | "packets" => {
            if v.fract() != 0.0 || v < 1.0 || v > u32::MAX as f64 {
                return Err(format!(
                    "queue `{}` is not a whole number of slots >= 1",
                    s.trim()
                ));
            }
            QueueLimit::Slots(v as u32)
        }
        "B" | "bytes" => QueueLimit::Bytes(v.round() as u64),
        "KB" | "kB" | "K" => QueueLimit::Bytes((v * 1024.0).round() as u64),
        "MB" | "M" => QueueLimit::Bytes((v * 1024.0 * 1024.0).round() as u64),
        _ => return Err(format!("unknown queue unit `{unit}` in `{}`", s.trim())),
    };
    check_queue(q)
}

/// Check that a queue holds at least one packet.
pub fn check_queue(q: QueueLimit) -> Result<QueueLimit, String> {
    match q {
        QueueLimit::Slots(0) | QueueLimit::Bytes(0) => {
            Err("a queue must hold at least one packet".into())
        }
        q => Ok(q),
    }
}

/// A queue bound written back in [`parse_queue`]'s syntax.
pub fn format_queue(q: QueueLimit) -> String {
    match q {
        QueueLimit::Slots(n) => n.to_string(),
        QueueLimit::Bytes(b) => format!("{b}B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves bandwidths are read as bit/s bare and with each unit.
    #[test]
    fn rates_parse_with_and_without_units() {
        assert_eq!(parse_rate("2000000"), Ok(Rate::from_bps(2_000_000)));
        assert_eq!(parse_rate("2Mbit/s"), Ok(Rate::from_bps(2_000_000)));
        assert_eq!(parse_rate("2 Mbps"), Ok(Rate::from_bps(2_000_000)));
        assert_eq!(parse_rate("20Mb/s"), Ok(Rate::from_bps(20_000_000)));
        assert_eq!(parse_rate("1.5Gbit/s"), Ok(Rate::from_bps(1_500_000_000)));
        assert_eq!(parse_rate("100kbps"), Ok(Rate::from_bps(100_000)));
        assert_eq!(parse_rate("1MB/s"), Ok(Rate::from_bps(8_000_000)));
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("3furlongs").is_err());
    }

    /// A pass proves delays are read as ms bare and with each unit.
    #[test]
    fn delays_parse_with_and_without_units() {
        assert_eq!(parse_delay("10"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_delay("0.5"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_delay("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_delay("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_delay("7ms"), Ok(Duration::from_millis(7)));
        assert!(parse_delay("-1ms").is_err());
    }

    /// A pass proves losses and queues accept their documented forms.
    #[test]
    fn losses_and_queues_parse() {
        assert_eq!(parse_loss("0.01"), Ok(0.01));
        assert_eq!(parse_loss("1%"), Ok(0.01));
        assert!(parse_loss("2").is_err());
        assert_eq!(parse_queue("20"), Ok(QueueLimit::Slots(20)));
        assert_eq!(parse_queue("100KB"), Ok(QueueLimit::Bytes(102_400)));
        assert!(parse_queue("0").is_err());
        assert!(parse_queue("1.5").is_err());
    }
}
