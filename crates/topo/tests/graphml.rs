//! GraphML topologies as NetworkX writes them, and Shadow's network
//! graphs in GML: each reads into the topology its keys and units say,
//! with exact link parameters, and bad input is refused naming its line.

use pipelab_engine::{Duration, QueueLimit, Rate};
use pipelab_topo::gml::parse_gml;
use pipelab_topo::graphml::parse_graphml;
use pipelab_topo::model::Role;
use pipelab_topo::{GmlError, Topology};

/// `nx.write_graphml(G, path)` (NetworkX 3.x, the ElementTree writer) of
/// a Mininet-like graph:
///
/// ```text
/// G = nx.Graph(name="lab")
/// G.add_node("h1", type="host"); G.add_node("h2", type="host")
/// G.add_node("s1", type="switch"); G.add_node("s2", type="switch")
/// G.add_edge("h1", "s1", bw=10.0, delay="5ms", loss=1, max_queue_size=100, jitter="1ms")
/// G.add_edge("h2", "s2", bw=0.5, delay="250us")
/// G.add_edge("s1", "s2", bw=100.0, delay="10ms", loss=0.001)
/// ```
///
/// Keys are numbered as they are met and written last first; an
/// attribute with values of two Python types (`loss`: int, float) has a
/// key per type.
const NETWORKX: &str = r#"<?xml version='1.0' encoding='utf-8'?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">
  <key id="d7" for="edge" attr.name="loss" attr.type="double" />
  <key id="d6" for="edge" attr.name="jitter" attr.type="string" />
  <key id="d5" for="edge" attr.name="max_queue_size" attr.type="long" />
  <key id="d4" for="edge" attr.name="loss" attr.type="long" />
  <key id="d3" for="edge" attr.name="delay" attr.type="string" />
  <key id="d2" for="edge" attr.name="bw" attr.type="double" />
  <key id="d1" for="node" attr.name="type" attr.type="string" />
  <key id="d0" for="graph" attr.name="name" attr.type="string" />
  <graph edgedefault="undirected">
    <data key="d0">lab</data>
    <node id="h1">
      <data key="d1">host</data>
    </node>
    <node id="h2">
      <data key="d1">host</data>
    </node>
    <node id="s1">
      <data key="d1">switch</data>
    </node>
    <node id="s2">
      <data key="d1">switch</data>
    </node>
    <edge source="h1" target="s1">
      <data key="d2">10.0</data>
      <data key="d3">5ms</data>
      <data key="d4">1</data>
      <data key="d5">100</data>
      <data key="d6">1ms</data>
    </edge>
    <edge source="h2" target="s2">
      <data key="d2">0.5</data>
      <data key="d3">250us</data>
    </edge>
    <edge source="s1" target="s2">
      <data key="d2">100.0</data>
      <data key="d3">10ms</data>
      <data key="d7">0.001</data>
    </edge>
  </graph>
</graphml>
"#;

fn ends(t: &Topology, i: usize) -> (String, String) {
    let l = &t.links[i];
    (t.node_name(l.a), t.node_name(l.b))
}

/// A pass proves NetworkX's file reads node by node and link by link:
/// string ids become names, `type` the roles, `bw` Mbit/s, `loss` a
/// percentage, `max_queue_size` packets, `jitter` a jitter; the graph's
/// own data is skipped.
#[test]
fn networkx_file_reads_with_exact_parameters() {
    let t = parse_graphml(NETWORKX).expect("reads");
    let nodes: Vec<(u64, Role, &str)> = t
        .nodes
        .iter()
        .map(|n| (n.id, n.role, n.name.as_str()))
        .collect();
    assert_eq!(
        nodes,
        vec![
            (0, Role::Client, "h1"),
            (1, Role::Client, "h2"),
            (2, Role::Stub, "s1"),
            (3, Role::Stub, "s2"),
        ]
    );
    assert_eq!(t.links.len(), 3);
    assert_eq!(ends(&t, 0), ("h1".into(), "s1".into()));
    assert_eq!(ends(&t, 1), ("h2".into(), "s2".into()));
    assert_eq!(ends(&t, 2), ("s1".into(), "s2".into()));

    let l = &t.links[0];
    assert_eq!(l.bw, Rate::from_bps(10_000_000));
    assert_eq!(l.delay, Duration::from_millis(5));
    assert_eq!(l.loss, 0.01);
    assert_eq!(l.queue, QueueLimit::Slots(100));
    assert_eq!(
        l.words.jitter.map(|j| j.sigma),
        Some(Duration::from_millis(1))
    );

    let l = &t.links[1];
    assert_eq!(l.bw, Rate::from_bps(500_000));
    assert_eq!(l.delay, Duration::from_micros(250));
    assert_eq!(l.loss, 0.0);
    assert_eq!(l.queue, QueueLimit::default());
    assert_eq!(l.words, Default::default());

    let l = &t.links[2];
    assert_eq!(l.bw, Rate::from_bps(100_000_000));
    assert_eq!(l.delay, Duration::from_millis(10));
    assert_eq!(l.loss, 0.000_01);
    assert_eq!(l.words, Default::default());
    t.validate().expect("valid");
}

/// A pass proves whole-number ids are the nodes' ids, `<default>`s fill
/// what an element does not give, units written out are read as
/// written, Shadow's keys are read in GraphML too, and a directed
/// graph's edge and its reverse are one link.
#[test]
fn numeric_ids_defaults_units_and_directed_pairs() {
    let text = r#"<?xml version='1.0' encoding='utf-8'?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="d4" for="edge" attr.name="packet_loss" attr.type="double" />
  <key id="d3" for="edge" attr.name="latency" attr.type="string" />
  <key id="d2" for="edge" attr.name="bandwidth" attr.type="string">
    <default>2Mbit/s</default>
  </key>
  <key id="d1" for="node" attr.name="label" attr.type="string" />
  <key id="d0" for="node" attr.name="role" attr.type="string">
    <default>client</default>
  </key>
  <graph edgedefault="directed">
    <node id="7">
      <data key="d0">router</data>
      <data key="d1">r</data>
    </node>
    <node id="1" />
    <node id="2" />
    <edge source="1" target="7">
      <data key="d3">10 ms</data>
      <data key="d4">0.25</data>
    </edge>
    <edge source="7" target="1">
      <data key="d3">10 ms</data>
      <data key="d4">0.25</data>
    </edge>
    <edge source="2" target="7">
      <data key="d2">1Gbit/s</data>
      <data key="d3">0.002</data>
    </edge>
  </graph>
</graphml>
"#;
    let t = parse_graphml(text).expect("reads");
    let nodes: Vec<(u64, Role, String)> = (0..t.nodes.len())
        .map(|i| (t.nodes[i].id, t.nodes[i].role, t.node_name(i)))
        .collect();
    assert_eq!(
        nodes,
        vec![
            (7, Role::Stub, "r".into()),
            (1, Role::Client, "n1".into()),
            (2, Role::Client, "n2".into()),
        ]
    );
    assert_eq!(t.links.len(), 2, "an edge and its reverse are one link");
    let l = &t.links[0];
    assert_eq!((l.a, l.b), (1, 0));
    assert_eq!(l.bw, Rate::from_bps(2_000_000));
    assert_eq!(l.delay, Duration::from_millis(10));
    assert_eq!(l.loss, 0.25);
    let l = &t.links[1];
    assert_eq!((l.a, l.b), (2, 0));
    assert_eq!(l.bw, Rate::from_bps(1_000_000_000));
    assert_eq!(
        l.delay,
        Duration::from_millis(2),
        "a bare latency is seconds"
    );
    assert_eq!(l.loss, 0.0);
}

/// Shadow's example graph, as its network graph specification gives it.
const SHADOW_SPEC: &str = r#"graph [
  directed 0
  node [
    id 0
    label "node at 1.2.3.4"
    host_bandwidth_down "100 Mbit"
    host_bandwidth_up "100 Mbit"
  ]
  edge [
    source 0
    target 0
    label "path from 1.2.3.4 to 1.2.3.4"
    latency "10 ms"
    jitter "0 ms"
    packet_loss 0.0
  ]
]
"#;

/// A pass proves Shadow's example reads: its node is a VN named by its
/// label, and its loop (the path between two hosts of the node) is left
/// out.
#[test]
fn shadows_example_graph_reads() {
    let t = parse_gml(SHADOW_SPEC).expect("reads");
    assert_eq!(t.nodes.len(), 1);
    assert_eq!(t.nodes[0].id, 0);
    assert_eq!(t.nodes[0].role, Role::Client);
    assert_eq!(t.nodes[0].name, "node at 1.2.3.4");
    assert!(t.links.is_empty());
    t.validate().expect("valid");
}

/// Two of Shadow's nodes and the path between them.
fn shadow_pair(up: &str, down: &str, edge: &str) -> String {
    format!(
        r#"graph [
  directed 0
  node [
    id 0
    host_bandwidth_down "{down}"
    host_bandwidth_up "{up}"
  ]
  node [
    id 1
    host_bandwidth_down "100 Mbit"
    host_bandwidth_up "100 Mbit"
  ]
  edge [ source 0 target 0 latency "1 ms" packet_loss 0.0 ]
  edge [ source 1 target 1 latency "1 ms" packet_loss 0.0 ]
  edge [
    source 0
    target 1
    {edge}
  ]
]
"#
    )
}

/// A pass proves Shadow's keys keep their meaning: `latency` a time with
/// a space before its unit, `packet_loss` a fraction, `jitter` a time
/// (zero: none), host bandwidths the link's rate.
#[test]
fn shadows_keys_read_with_their_units() {
    let t = parse_gml(&shadow_pair(
        "100 Mbit",
        "100 Mbit",
        r#"latency "10 ms" jitter "0 ms" packet_loss 0.01"#,
    ))
    .expect("reads");
    assert_eq!(t.vns(), vec![0, 1]);
    assert_eq!(t.links.len(), 1);
    let l = &t.links[0];
    assert_eq!(l.bw, Rate::from_bps(100_000_000));
    assert_eq!(l.delay, Duration::from_millis(10));
    assert_eq!(l.loss, 0.01);
    assert_eq!(l.queue, QueueLimit::default());
    assert_eq!(l.words, Default::default());

    let t = parse_gml(&shadow_pair(
        "1 Gibit",
        "1 Gibit",
        r#"latency "250 us" jitter "2 ms" packet_loss 0.5"#,
    ))
    .expect("reads");
    let l = &t.links[0];
    assert_eq!(l.bw, Rate::from_bps(100_000_000), "the least of both ends");
    assert_eq!(l.delay, Duration::from_micros(250));
    assert_eq!(l.loss, 0.5);
    assert_eq!(
        l.words.jitter.map(|j| j.sigma),
        Some(Duration::from_millis(2))
    );

    // Different rates each way: refused, unless the edge's bw is less.
    let text = shadow_pair("18 Mbit", "140 Mbit", r#"latency "50 ms" packet_loss 0.01"#);
    let e = parse_gml(&text).expect_err("asymmetric");
    assert_eq!((e.line, e.field.as_str()), (6, "host_bandwidth_up"), "{e}");
    assert_eq!(
        e.message,
        "node 0's host_bandwidth_up (18Mbit/s) and host_bandwidth_down (140Mbit/s) give its link to node 1 18Mbit/s one way and 100Mbit/s the other; a link here has one rate for both directions: give both the same value, or give the edge a bw"
    );
    let t = parse_gml(&shadow_pair(
        "18 Mbit",
        "140 Mbit",
        r#"latency "50 ms" packet_loss 0.01 bw "10Mbit/s""#,
    ))
    .expect("a smaller bw");
    assert_eq!(t.links[0].bw, Rate::from_bps(10_000_000));
}

fn refused(e: Result<Topology, GmlError>) -> (usize, String, String) {
    let e = e.expect_err("refused");
    (e.line, e.field, e.message)
}

/// A pass proves Shadow's values are checked and refused naming the line
/// and the key as written.
#[test]
fn shadows_bad_values_name_line_and_key() {
    let cases: &[(&str, &str, &str)] = &[
        (
            r#"latency "10 parsecs""#,
            "latency",
            "invalid time '10 parsecs'",
        ),
        (r#"packet_loss 1.5"#, "packet_loss", "between 0 and 1"),
        (r#"packet_loss "1%""#, "packet_loss", "between 0 and 1"),
        (r#"jitter "5 fortnights""#, "jitter", "invalid time"),
        (r#"latency "7200 s""#, "latency", "delay"),
    ];
    for (edge, key, says) in cases {
        let (line, field, message) = refused(parse_gml(&shadow_pair("1 Mbit", "1 Mbit", edge)));
        assert_eq!((line, field.as_str()), (18, *key), "{edge}: {message}");
        assert!(message.contains(says), "{edge}: {message}");
    }
    let text = SHADOW_SPEC.replace(
        "\"100 Mbit\"\n    host_bandwidth_up",
        "\"100 Mbps\"\n    host_bandwidth_up",
    );
    let (line, field, message) = refused(parse_gml(&text));
    assert_eq!((line, field.as_str()), (6, "host_bandwidth_down"));
    assert!(
        message.starts_with("invalid bandwidth '100 Mbps'"),
        "{message}"
    );
}

/// A pass proves each kind of GraphML error names its line and what is
/// wrong.
#[test]
fn graphml_errors_name_their_line() {
    let head = "<?xml version='1.0' encoding='utf-8'?>\n<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\">\n  <key id=\"d0\" for=\"edge\" attr.name=\"bw\" attr.type=\"string\" />\n  <key id=\"d1\" for=\"edge\" attr.name=\"colour\" attr.type=\"string\" />\n  <key id=\"d2\" for=\"edge\" attr.name=\"max_queue_size\" attr.type=\"long\" />\n  <graph edgedefault=\"undirected\">\n    <node id=\"a\" />\n    <node id=\"b\" />\n";
    let tail = "  </graph>\n</graphml>\n";
    let with = |body: &str| format!("{head}{body}{tail}");
    let cases: Vec<(String, usize, &str, &str)> = vec![
        (
            with("    <edge source=\"a\" target=\"b\">\n      <data key=\"d0\">fast</data>\n    </edge>\n"),
            10,
            "bw",
            "invalid rate 'fast'",
        ),
        (
            with("    <edge source=\"a\" target=\"b\">\n      <data key=\"d1\">red</data>\n    </edge>\n"),
            10,
            "colour",
            "unknown link attribute 'colour'",
        ),
        (
            with("    <edge source=\"a\" target=\"b\">\n      <data key=\"d2\">lots</data>\n    </edge>\n"),
            10,
            "max_queue_size",
            "\"lots\" is not a long",
        ),
        (
            with("    <edge source=\"a\" target=\"b\">\n      <data key=\"d2\">0</data>\n    </edge>\n"),
            10,
            "max_queue_size",
            "a whole number above 0",
        ),
        (
            with("    <edge source=\"a\" target=\"c\" />\n"),
            9,
            "target",
            "no node with id \"c\"",
        ),
        (
            with("    <edge source=\"a\" target=\"b\">\n      <data key=\"d9\">1</data>\n    </edge>\n"),
            10,
            "data",
            "no <key> declares",
        ),
        (
            with("    <node id=\"a\" />\n"),
            9,
            "id",
            "already used on line 7",
        ),
        (
            with("    <edge source=\"a\" target=\"b\">\n    </edg>\n"),
            10,
            "",
            "not well-formed XML",
        ),
        (
            with("    <hyperedge />\n"),
            9,
            "hyperedge",
            "hyperedges are not read",
        ),
        (
            with("    <edge source=\"a\" target=\"a\" />\n"),
            9,
            "target",
            "loop on node \"a\"",
        ),
        (
            with("    <edge source=\"a\" target=\"b\">\n      <data key=\"d0\">1</data>\n    </edge>\n    <edge source=\"b\" target=\"a\" directed=\"true\">\n      <data key=\"d0\">2</data>\n    </edge>\n"),
            12,
            "edge",
            "its reverse on line 9 differ",
        ),
    ];
    for (text, line, field, says) in &cases {
        let (l, f, m) = refused(parse_graphml(text));
        assert_eq!((l, f.as_str()), (*line, *field), "{m}");
        assert!(m.contains(says), "{m}");
    }
    let (line, _, message) = refused(parse_graphml("graph [ ]"));
    assert_eq!(line, 1);
    assert!(message.contains("not well-formed XML"), "{message}");
    let (line, _, message) = refused(parse_graphml("<?xml version='1.0'?>\n<gexf />"));
    assert_eq!(line, 2);
    assert_eq!(
        message,
        "not a GraphML file: the root element is <gexf>, not <graphml>"
    );
}

/// A pass proves no prefix of either file, and no file with one byte
/// changed to a character that matters to XML or GML, makes a reader
/// panic (each is read or refused).
#[test]
fn cut_and_changed_files_never_panic() {
    for text in [NETWORKX, SHADOW_SPEC] {
        for (i, _) in text.char_indices() {
            let _ = parse_graphml(&text[..i]);
            let _ = parse_gml(&text[..i]);
            for c in ['<', '>', '"', '&', '[', ']', '0', ' '] {
                let mut changed = text.to_string();
                changed.replace_range(
                    i..i + text[i..].chars().next().map_or(0, char::len_utf8),
                    &c.to_string(),
                );
                let _ = parse_graphml(&changed);
                let _ = parse_gml(&changed);
            }
        }
    }
}

/// A pass proves a directed Shadow graph's edge and its reverse are one
/// link when they agree, and are refused naming both lines when not.
#[test]
fn shadows_directed_pairs_are_one_link() {
    let text = |back: &str| {
        shadow_pair("1 Mbit", "1 Mbit", r#"latency "5 ms" packet_loss 0.0"#)
            .replace("directed 0", "directed 1")
            .replace(
                "]\n]\n",
                &format!("]\n  edge [ source 1 target 0 latency \"{back}\" packet_loss 0.0 ]\n]\n"),
            )
    };
    let t = parse_gml(&text("5 ms")).expect("reads");
    assert_eq!(t.links.len(), 1);
    assert_eq!(t.links[0].delay, Duration::from_millis(5));
    assert_eq!(t.links[0].bw, Rate::from_bps(1_000_000));
    let (line, field, message) = refused(parse_gml(&text("6 ms")));
    assert_eq!((line, field.as_str()), (20, "edge"), "{message}");
    assert_eq!(
        message,
        "the edge from node 1 to node 0 and its reverse on line 15 differ; a link here carries both directions with one set of attributes: give both edges the same"
    );
}
