//! The offline topology commands as a user runs them (no root needed):
//! `topo gen` writes topologies the crate's parsers read back and `topo
//! distill` accepts, with ModelNet's counts; `topo assign` reports loads
//! and cross-core routes; `--metric` changes the routes; `--routes
//! asymmetric` routes each direction on its own; bad values name their
//! option.

use pipelab_engine::{Duration, QueueLimit, Rate};
use pipelab_topo::gml::parse_gml;
use pipelab_topo::model::{LinkClass, Role};
use pipelab_topo::native::parse_toml;
use pipelab_topo::Topology;
use std::path::Path;

mod common;
use common::run;

/// Run and require success; returns stdout.
fn ok(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "pipelab {}: {err}", args.join(" "));
    out
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn count(t: &Topology, role: Role) -> usize {
    t.nodes.iter().filter(|n| n.role == role).count()
}

fn class(t: &Topology, l: &pipelab_topo::Link) -> LinkClass {
    LinkClass::of(t.nodes[l.a].role, t.nodes[l.b].role)
}

/// ModelNet §4.1's ring, generated on the command line: 20 routers at
/// 20 Mb/s with 20 VNs each on 2 Mb/s links. End to end it distils to the
/// paper's 79,800 pipes (one pair per VN pair), hop by hop to 420 pairs
/// averaging 2798/399 = 7.013 hops, last-mile to 400 + 190 pairs with at
/// most 3 hops.
#[test]
fn generated_ring_distills_to_the_papers_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("ring.gml");
    let out = ok(&[
        "topo",
        "gen",
        "ring",
        "--routers",
        "20",
        "--clients",
        "20",
        "--access",
        "bw 2Mbit/s delay 1ms",
        "--stub-link",
        "bw 20Mbit/s delay 5ms",
        "-o",
        path(&f),
    ]);
    assert!(
        out.contains("420 nodes (400 VNs, 20 stub, 0 transit), 420 links"),
        "{out}"
    );
    let t = parse_gml(&std::fs::read_to_string(&f).expect("read")).expect("parses back");
    assert_eq!((count(&t, Role::Client), count(&t, Role::Stub)), (400, 20));
    for l in &t.links {
        let (bw, ms) = match class(&t, l) {
            LinkClass::ClientStub => (2_000_000, 1),
            LinkClass::StubStub => (20_000_000, 5),
            c => panic!("unexpected link class {c:?}"),
        };
        assert_eq!(
            (l.bw, l.delay),
            (Rate::from_bps(bw), Duration::from_millis(ms))
        );
    }

    let e2e = ok(&["topo", "distill", path(&f), "--mode", "end-to-end"]);
    assert!(e2e.contains("pipes: 159600 (79800 bidirectional)"), "{e2e}");
    assert!(e2e.contains("routes: 159600 (0 unreachable)"), "{e2e}");
    assert!(e2e.contains("hops per route: mean 1.000, max 1"), "{e2e}");
    let hbh = ok(&["topo", "distill", path(&f)]);
    assert!(
        hbh.starts_with("distillation: hop-by-hop (routes by delay)\n"),
        "{hbh}"
    );
    assert!(hbh.contains("pipes: 840 (420 bidirectional)"), "{hbh}");
    assert!(hbh.contains("hops per route: mean 7.013, max 12"), "{hbh}");
    let lm = ok(&["topo", "distill", path(&f), "--mode", "last-mile"]);
    assert!(lm.contains("pipes: 1180 (590 bidirectional)"), "{lm}");
    assert!(lm.contains("max 3"), "{lm}");
}

/// `topo gen transit-stub` makes T transit, T·S stub and T·S·C client
/// nodes, gives every link the attributes of its class, writes the same
/// topology as GML and TOML (by `-o FILE.toml` or `--format toml`), and is
/// reproducible from its seed.
#[test]
fn generated_transit_stub_has_counts_by_role_and_attributes_by_class() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = [
        "topo",
        "gen",
        "transit-stub",
        "--transit",
        "4",
        "--stubs",
        "3",
        "--clients",
        "10",
        "--seed",
        "7",
        "--access",
        "bw 2Mbit/s delay 1ms loss 1.5%",
        "--uplink",
        "bw 45Mbit/s delay 8ms",
        "--transit-link",
        "delay 30ms queue 100",
    ];
    let gml = ok(&args);
    assert_eq!(ok(&args), gml, "same seed, same file");
    let t = parse_gml(&gml).expect("GML parses back");
    assert_eq!(count(&t, Role::Transit), 4);
    assert_eq!(count(&t, Role::Stub), 12);
    assert_eq!(count(&t, Role::Client), 120);
    assert!(t.is_connected());
    for l in &t.links {
        match class(&t, l) {
            LinkClass::ClientStub => {
                assert_eq!(l.bw, Rate::from_bps(2_000_000));
                assert_eq!(l.delay, Duration::from_millis(1));
                assert!((l.loss - 0.015).abs() < 1e-12, "{}", l.loss);
            }
            LinkClass::StubTransit => {
                assert_eq!(l.bw, Rate::from_bps(45_000_000));
                assert_eq!(l.delay, Duration::from_millis(8));
            }
            LinkClass::TransitTransit => {
                // The bandwidth keeps the class default (1 Gb/s).
                assert_eq!(l.bw, Rate::from_bps(1_000_000_000));
                assert_eq!(l.delay, Duration::from_millis(30));
                assert_eq!(l.queue, QueueLimit::Slots(100));
            }
            LinkClass::StubStub => panic!("transit-stub has no stub-stub links"),
        }
    }
    // One access link per VN, one uplink per stub, a ring (plus chords)
    // of transits.
    let n = |c: LinkClass| t.links.iter().filter(|l| class(&t, l) == c).count();
    assert_eq!(
        (n(LinkClass::ClientStub), n(LinkClass::StubTransit)),
        (120, 12)
    );
    assert!(n(LinkClass::TransitTransit) >= 4);

    let toml_file = dir.path().join("ts.toml");
    let mut to_file = args.to_vec();
    to_file.extend(["-o", path(&toml_file)]);
    let summary = ok(&to_file);
    assert!(
        summary.contains("136 nodes (120 VNs, 12 stub, 4 transit)"),
        "{summary}"
    );
    let from_toml =
        parse_toml(&std::fs::read_to_string(&toml_file).expect("read")).expect("TOML parses back");
    assert_eq!(from_toml, t);
    let mut to_stdout = args.to_vec();
    to_stdout.extend(["--format", "toml"]);
    assert_eq!(parse_toml(&ok(&to_stdout)).expect("TOML on stdout"), t);

    let d = ok(&["topo", "distill", path(&toml_file)]);
    assert!(d.contains("nodes: 136 (120 VNs)"), "{d}");
    assert!(d.contains("routes: 14280 (0 unreachable)"), "{d}");
}

/// Every generator writes a file `topo distill` accepts, with the node
/// count its sizes ask for and every VN pair routed.
#[test]
fn every_generator_output_distills() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases: &[(&[&str], usize, usize)] = &[
        (&["ring", "--routers", "3", "--clients", "2"], 9, 6),
        (&["star", "--clients", "5"], 6, 5),
        (&["dumbbell", "--left", "2", "--right", "3"], 7, 5),
        (
            &["tree", "--depth", "2", "--fanout", "3", "--clients", "1"],
            13 + 9,
            9,
        ),
        (
            &["waxman", "--routers", "10", "--clients", "2", "--seed", "3"],
            30,
            20,
        ),
        (
            &[
                "transit-stub",
                "--transit",
                "3",
                "--stubs",
                "2",
                "--clients",
                "2",
            ],
            3 + 6 + 12,
            12,
        ),
    ];
    for (i, (gen, nodes, vns)) in cases.iter().enumerate() {
        let f = dir.path().join(format!("t{i}.gml"));
        let mut args = vec!["topo", "gen"];
        args.extend_from_slice(gen);
        args.extend(["-o", path(&f)]);
        ok(&args);
        let t = parse_gml(&std::fs::read_to_string(&f).expect("read")).expect("parses");
        assert_eq!((t.nodes.len(), t.vns().len()), (*nodes, *vns), "{gen:?}");
        let d = ok(&["topo", "distill", path(&f)]);
        assert!(
            d.contains(&format!("nodes: {nodes} ({vns} VNs)")),
            "{gen:?}: {d}"
        );
        assert!(
            d.contains(&format!("routes: {} (0 unreachable)", vns * (vns - 1))),
            "{gen:?}: {d}"
        );
    }
}

fn assign_json(file: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["topo", "assign", path(file), "--json"];
    args.extend_from_slice(extra);
    serde_json::from_str(&ok(&args)).expect("JSON")
}

fn method<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["methods"]
        .as_array()
        .and_then(|m| m.iter().find(|x| x["method"] == name))
        .unwrap_or_else(|| panic!("no {name} in {v}"))
}

fn loads(m: &serde_json::Value) -> Vec<u64> {
    m["loads"]
        .as_array()
        .expect("loads")
        .iter()
        .map(|x| x.as_u64().expect("load"))
        .collect()
}

/// `topo assign` on a generated transit-stub (99 links): one core means
/// no route crosses cores; on two cores every link is placed once,
/// greedy k-clusters is balanced to one link, and the refined partition
/// (which only makes moves that lower the hand-off count) has no more
/// hand-offs than greedy from the same seed and, on this topology, no
/// larger share of cross-core routes.
#[test]
fn assign_reports_loads_and_cross_core_routes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("ts.gml");
    ok(&[
        "topo",
        "gen",
        "transit-stub",
        "--transit",
        "6",
        "--stubs",
        "3",
        "--clients",
        "4",
        "--seed",
        "4",
        "-o",
        path(&f),
    ]);
    let one = assign_json(&f, &["--cores", "1"]);
    assert_eq!(one["pipe_pairs"], 99);
    assert_eq!(one["routes"], 72 * 71);
    for m in ["greedy", "partition"] {
        let r = method(&one, m);
        assert_eq!(loads(r), vec![99]);
        assert_eq!(r["cross_fraction"].as_f64(), Some(0.0));
        assert_eq!(r["handoffs"].as_u64(), Some(0));
    }

    let two = assign_json(&f, &["--cores", "2", "--seed", "1"]);
    let (g, p) = (method(&two, "greedy"), method(&two, "partition"));
    let (lg, lp) = (loads(g), loads(p));
    assert_eq!((lg.iter().sum::<u64>(), lp.iter().sum::<u64>()), (99, 99));
    assert!(
        lg.iter().max().unwrap_or(&0) - lg.iter().min().unwrap_or(&0) <= 1,
        "{lg:?}"
    );
    // Within 5 % of the mean: ceil(99 / 2 · 1.05) = 52.
    assert!(lp.iter().all(|&l| l <= 52), "{lp:?}");
    let hg = g["handoffs"].as_u64().expect("handoffs");
    let hp = p["handoffs"].as_u64().expect("handoffs");
    assert!(hg > 0 && hp <= hg, "partition {hp} vs greedy {hg}");
    let fg = g["cross_fraction"].as_f64().expect("fraction");
    let fp = p["cross_fraction"].as_f64().expect("fraction");
    assert!(fg > 0.0 && fg < 1.0, "{fg}");
    assert!(fp <= fg, "partition {fp} vs greedy {fg}");

    // The table: one row per method, or only the chosen one.
    let table = ok(&["topo", "assign", path(&f), "--cores", "2"]);
    assert!(table.contains("cores: 2, seed 1"), "{table}");
    assert!(table.contains(&format!("{fg:.4}")), "{table}");
    assert!(table.lines().any(|l| l.starts_with("greedy")), "{table}");
    assert!(table.lines().any(|l| l.starts_with("partition")), "{table}");
    let only = ok(&[
        "topo",
        "assign",
        path(&f),
        "--cores",
        "2",
        "--method",
        "greedy",
    ]);
    assert!(!only.lines().any(|l| l.starts_with("partition")), "{only}");
    // End to end every route is one pipe: nothing crosses cores.
    let e2e = assign_json(&f, &["--cores", "3", "--mode", "end-to-end"]);
    assert_eq!(method(&e2e, "greedy")["cross_fraction"].as_f64(), Some(0.0));
}

/// Two VNs behind routers r0 and r1, joined directly by a slow 100 ms
/// link and around by three 1 ms links: by delay the route takes the
/// long way (5 hops), by hops the direct link (3 hops).
const DETOUR: &str = r#"
[[node]]
id = 0
role = "client"
name = "a"
[[node]]
id = 1
role = "client"
name = "b"
[[node]]
id = 2
name = "r0"
[[node]]
id = 3
name = "r1"
[[node]]
id = 4
name = "r2"
[[node]]
id = 5
name = "r3"
[[link]]
a = 0
b = 2
delay = "1ms"
[[link]]
a = 1
b = 3
delay = "1ms"
[[link]]
a = 2
b = 3
delay = "100ms"
[[link]]
a = 2
b = 4
delay = "1ms"
[[link]]
a = 4
b = 5
delay = "1ms"
[[link]]
a = 5
b = 3
delay = "1ms"
"#;

/// `--metric hops` routes by link count, `--metric delay` (the default)
/// by total delay; `topo assign` takes the same option.
#[test]
fn metric_hops_and_delay_choose_different_routes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("detour.toml");
    std::fs::write(&f, DETOUR).expect("write");
    let by_delay = ok(&["topo", "distill", path(&f)]);
    assert!(by_delay.contains("(routes by delay)"), "{by_delay}");
    assert!(
        by_delay.contains("hops per route: mean 5.000, max 5"),
        "{by_delay}"
    );
    assert_eq!(
        ok(&["topo", "distill", path(&f), "--metric", "delay"]),
        by_delay
    );
    let by_hops = ok(&["topo", "distill", path(&f), "--metric", "hops"]);
    assert!(by_hops.contains("(routes by hops)"), "{by_hops}");
    assert!(
        by_hops.contains("hops per route: mean 3.000, max 3"),
        "{by_hops}"
    );
    let v = assign_json(&f, &["--cores", "1", "--metric", "hops"]);
    assert_eq!(v["metric"], "hops");
}

/// `--routes asymmetric` (on `topo distill` and `topo assign`) routes each
/// direction on its own and says so; on a 4-ring with one VN per router
/// the pipes and hop figures (16 pipes, 12 routes, mean 3.333, max 4)
/// are those of the symmetric default, which prints as before. A bad
/// value exits 2 naming `--routes`, on `distill`, `assign` and `up`.
#[test]
fn routes_asymmetric_is_an_option() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("ring4.gml");
    ok(&[
        "topo",
        "gen",
        "ring",
        "--routers",
        "4",
        "--clients",
        "1",
        "-o",
        path(&f),
    ]);
    let sym = ok(&["topo", "distill", path(&f)]);
    assert_eq!(
        ok(&["topo", "distill", path(&f), "--routes", "symmetric"]),
        sym
    );
    let asym = ok(&["topo", "distill", path(&f), "--routes", "asymmetric"]);
    let (first, rest) = asym.split_once('\n').expect("lines");
    assert_eq!(
        first,
        "distillation: hop-by-hop (routes by delay, asymmetric)"
    );
    assert!(
        sym.starts_with("distillation: hop-by-hop (routes by delay)\n"),
        "{sym}"
    );
    assert_eq!(sym.split_once('\n').map(|x| x.1), Some(rest));
    assert!(rest.contains("pipes: 16 (8 bidirectional)"), "{rest}");
    assert!(rest.contains("routes: 12 (0 unreachable)"), "{rest}");
    assert!(rest.contains("hops per route: mean 3.333, max 4"), "{rest}");
    let v = assign_json(&f, &["--cores", "2", "--routes", "asymmetric"]);
    assert_eq!(v["routing"], "asymmetric");
    assert_eq!(v["routes"], 12);
    assert_eq!(assign_json(&f, &["--cores", "2"])["routing"], "symmetric");
    let file = path(&f);
    let cases: [&[&str]; 3] = [
        &["topo", "distill", file, "--routes", "both"],
        &["topo", "assign", file, "--cores", "2", "--routes", "both"],
        &["topo", "up", file, "--routes", "both"],
    ];
    for args in cases {
        let (code, out, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            err.contains("--routes") && err.contains("'both'") && err.contains("asymmetric"),
            "{args:?}: {err}"
        );
    }
}

/// Bad values: exit status 2, a message naming the option and the value,
/// never a panic.
#[test]
fn bad_values_name_their_option() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("star.gml");
    ok(&["topo", "gen", "star", "--clients", "3", "-o", path(&f)]);
    let file = path(&f);
    let cases: &[(&[&str], &[&str])] = &[
        (&["gen", "ring", "--routers", "0"], &["--routers", "'0'"]),
        (
            &["gen", "ring", "--clients", "many"],
            &["--clients", "'many'"],
        ),
        (
            &["gen", "ring", "--access", "bw fast"],
            &["--access", "fast"],
        ),
        (
            &["gen", "ring", "--access", "bw 2Mbit/s delay"],
            &["--access"],
        ),
        (
            &["gen", "ring", "--access", "jiter 3ms"],
            &["--access", "jiter", "did you mean jitter?"],
        ),
        (
            &["gen", "ring", "--access", "distribution normal"],
            &["distribution", "needs"],
        ),
        (
            &["gen", "dumbbell", "--stub-link", "delay 3parsecs"],
            &["--stub-link", "parsecs"],
        ),
        (
            &["gen", "ring", "--stub-link", "loss 150%"],
            &["--stub-link", "150%"],
        ),
        (
            &["gen", "transit-stub", "--transit-link", "queue 0"],
            &["--transit-link", "queue"],
        ),
        (
            &["gen", "transit-stub", "--chord-prob", "1.5"],
            &["--chord-prob", "1.5"],
        ),
        (&["gen", "waxman", "--beta=0"], &["--beta", "'0'"]),
        (&["gen", "waxman", "--alpha", "-0.5"], &["--alpha", "-0.5"]),
        (
            &["gen", "ring", "--transit-link", "bw 1Gbit/s"],
            &["--transit-link"],
        ),
        (
            &["gen", "ring", "--routers", "1000", "--clients", "1000"],
            &["--routers 1000", "--clients 1000", "1001000 nodes"],
        ),
        (
            &["gen", "tree", "--depth", "40", "--fanout", "3"],
            &["--depth 40", "--fanout 3"],
        ),
        (&["gen", "ring", "--format", "yaml"], &["--format", "yaml"]),
        (
            &["distill", file, "--metric", "latency"],
            &["--metric", "latency"],
        ),
        (
            &["distill", file, "--mode", "sideways"],
            &["--mode", "sideways"],
        ),
        (&["assign", file, "--cores", "0"], &["--cores", "'0'"]),
        (&["assign", file, "--cores", "-2"], &["--cores", "'-2'"]),
        (&["gen", "star", "--clients", "-1"], &["--clients", "'-1'"]),
        (&["assign", file, "--cores", "99999"], &["--cores", "99999"]),
        (&["assign", file], &["--cores"]),
        (
            &["assign", file, "--cores", "2", "--method", "magic"],
            &["--method", "magic"],
        ),
        (
            &["assign", file, "--cores", "2", "--mode", "walk-in"],
            &["--mode", "walk-in"],
        ),
        (&["up", file, "--metric", "bogus"], &["--metric", "bogus"]),
    ];
    for (args, words) in cases {
        let mut all = vec!["topo"];
        all.extend_from_slice(args);
        let (code, out, err) = run(&all);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        for w in *words {
            assert!(err.contains(w), "{args:?}: `{w}` missing from: {err}");
        }
    }
    // An unwritable output file is named.
    let bad = dir.path().join("no-such-dir").join("x.gml");
    let (code, _, err) = run(&["topo", "gen", "star", "-o", path(&bad)]);
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot write") && err.contains("no-such-dir"),
        "{err}"
    );
}

/// A pass proves `pipelab sim --topology` reads a file a link names
/// (`bw "trace:sub/slow.trace"`) relative to the topology file's
/// directory, whatever the working directory: with one 1500-byte
/// delivery opportunity every 10 ms, 2 Mbit/s of 1500-byte packets for
/// 5 s get exactly 1.2 Mbit/s through (549 packets in the 5.495 s the
/// run lasts, the first after 10 ms of wait and 5 ms of delay); a file
/// that is not there is an error naming the topology file, the line, the
/// key and the file.
#[test]
fn sim_reads_the_files_a_topology_names_from_its_directory() {
    let dir = std::env::temp_dir().join(format!("pipelab-topo-files-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).expect("dir");
    std::fs::write(dir.join("sub/slow.trace"), "10\n").expect("trace");
    let gml = |trace: &str| {
        format!("graph [\n node [ id 0 role \"client\" ]\n node [ id 1 role \"client\" ]\n edge [ source 0 target 1 bw \"trace:{trace}\" delay 5 ]\n]\n")
    };
    std::fs::write(dir.join("t.gml"), gml("sub/slow.trace")).expect("topology");
    std::fs::write(dir.join("bad.gml"), gml("sub/nowhere.trace")).expect("topology");
    let sim = |topo: &str| {
        std::process::Command::new(common::BIN)
            .current_dir("/")
            .args(["sim", "--topology", path(&dir.join(topo)), "--json"])
            .args([
                "--traffic",
                "cbr rate 2Mbit/s size 1500B duration 5s from 10.0.0.1:9 to 10.0.0.2:9",
            ])
            .output()
            .expect("pipelab sim")
    };
    let o = sim("t.gml");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let f = &v["flows"][0];
    assert_eq!(f["received"], 549, "{f}");
    assert_eq!(f["throughput_bps"], 1_200_000.0, "{f}");
    assert_eq!(f["delay_ms"]["min"], 15.0, "{f}");
    let o = sim("bad.gml");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("bad.gml: line 4: field `bw`") && err.contains("sub/nowhere.trace"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pass proves `topo gen`'s link classes take pipe words as `link A B
/// set` does: `--access 'jitter 3ms codel ecn'` gives every access link
/// (and only those) the jitter, CoDel and ECN, written to the GML file
/// and read back by the crate's parser.
#[test]
fn gen_classes_take_pipe_words() {
    let out = ok(&[
        "topo",
        "gen",
        "ring",
        "--routers",
        "3",
        "--clients",
        "2",
        "--access",
        "bw 2Mbit/s jitter 3ms codel ecn",
    ]);
    let t = parse_gml(&out).expect("parses back");
    for l in &t.links {
        let access = class(&t, l) == LinkClass::ClientStub;
        assert_eq!(
            l.words.jitter.map(|j| j.sigma),
            access.then_some(Duration::from_millis(3)),
            "{l:?}"
        );
        assert_eq!(l.words.aqm.is_some() && l.words.ecn, access, "{l:?}");
        if access {
            assert_eq!(l.bw, Rate::from_bps(2_000_000));
        }
    }
}

/// A NetworkX graph as `nx.write_graphml` writes it: two hosts behind two
/// switches, Mininet's link keys (`bw` in Mbit/s, `loss` in per cent).
const NETWORKX: &str = r#"<?xml version='1.0' encoding='utf-8'?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">
  <key id="d3" for="edge" attr.name="loss" attr.type="long" />
  <key id="d2" for="edge" attr.name="delay" attr.type="string" />
  <key id="d1" for="edge" attr.name="bw" attr.type="double" />
  <key id="d0" for="node" attr.name="type" attr.type="string" />
  <graph edgedefault="undirected">
    <node id="h1">
      <data key="d0">host</data>
    </node>
    <node id="h2">
      <data key="d0">host</data>
    </node>
    <node id="s1">
      <data key="d0">switch</data>
    </node>
    <node id="s2">
      <data key="d0">switch</data>
    </node>
    <edge source="h1" target="s1">
      <data key="d1">10.0</data>
      <data key="d2">5ms</data>
      <data key="d3">1</data>
    </edge>
    <edge source="h2" target="s2">
      <data key="d1">10.0</data>
      <data key="d2">5ms</data>
    </edge>
    <edge source="s1" target="s2">
      <data key="d1">100.0</data>
      <data key="d2">10ms</data>
    </edge>
  </graph>
</graphml>
"#;

/// `topo distill` reads a `.graphml` file (and a file of another name
/// that is XML) as GraphML and a Shadow graph as GML; a bad value is
/// refused naming the file, the line and the key.
#[test]
fn graphml_and_shadow_files_distill() {
    let dir = tempfile::tempdir().expect("tempdir");
    let want = "distillation: hop-by-hop (routes by delay)\nnodes: 4 (2 VNs), links: 3\npipes: 6 (3 bidirectional)\nroutes: 2 (0 unreachable)\nhops per route: mean 3.000, max 3\n";
    for name in ["lab.graphml", "lab.net"] {
        let f = dir.path().join(name);
        std::fs::write(&f, NETWORKX).expect("write");
        assert_eq!(ok(&["topo", "distill", path(&f)]), want, "{name}");
    }
    let f = dir.path().join("lab.graphml");
    let v = assign_json(&f, &["--cores", "1"]);
    assert_eq!(
        (v["pipe_pairs"].as_u64(), v["routes"].as_u64()),
        (Some(3), Some(2))
    );

    let bad = dir.path().join("bad.graphml");
    std::fs::write(&bad, NETWORKX.replace(">100.0<", ">fast<")).expect("write");
    let (code, _, err) = run(&["topo", "distill", path(&bad)]);
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!("{}: line 30: field `bw`", bad.display())),
        "{err}"
    );
    assert!(err.contains("\"fast\" is not a double"), "{err}");

    let shadow = dir.path().join("shadow.gml");
    std::fs::write(
        &shadow,
        r#"graph [
  directed 0
  node [ id 0 host_bandwidth_down "100 Mbit" host_bandwidth_up "100 Mbit" ]
  node [ id 1 host_bandwidth_down "100 Mbit" host_bandwidth_up "100 Mbit" ]
  edge [ source 0 target 0 latency "1 ms" packet_loss 0.0 ]
  edge [ source 1 target 1 latency "1 ms" packet_loss 0.0 ]
  edge [ source 0 target 1 latency "10 ms" jitter "0 ms" packet_loss 0.01 ]
]
"#,
    )
    .expect("write");
    assert_eq!(
        ok(&["topo", "distill", path(&shadow)]),
        "distillation: hop-by-hop (routes by delay)\nnodes: 2 (2 VNs), links: 1\npipes: 2 (1 bidirectional)\nroutes: 2 (0 unreachable)\nhops per route: mean 1.000, max 1\n"
    );
}
