//! Files named by topology links (`bw "trace:FILE"`, `distribution
//! "file:FILE"`, `loss "trace:FILE"`): read through the caller's loader
//! when the topology is read, kept in the topology, lowered without
//! reading again; errors name the line, the key and the file. Also
//! `link A B set` with pipe words at run time, files included.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use pipelab_classify::PacketView;
use pipelab_emu::{Emulation, Exit, Ingress};
use pipelab_engine::{Duration, EngineOptions, FlowKey, Instant, Packet};
use pipelab_lang::files::read_named_file;
use pipelab_topo::command::{execute, execute_with, Outcome};
use pipelab_topo::gml::{parse_gml, parse_gml_files, GmlDefaults};
use pipelab_topo::native::parse_toml_files;
use pipelab_topo::{distill, Metric, Mode, Network};

/// A fresh directory for one test's files.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pipelab-topo-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// A loader as the CLI's: relative paths from `base`, read with the one
/// file reader.
fn loader(base: &Path) -> impl FnMut(&str) -> Result<String, String> + '_ {
    move |p: &str| read_named_file(base.join(p)).map_err(|e| e.to_string())
}

/// Two VNs and one edge with `attrs`.
fn gml(attrs: &str) -> String {
    format!(
        "graph [\n node [ id 0 role \"client\" ]\n node [ id 1 role \"client\" ]\n edge [ source 0 target 1\n  {attrs} ]\n]\n"
    )
}

/// Sends `n` 1500-byte packets from VN 0 to VN 1 at 1 s over the lowered
/// topology; returns when each arrived, from 1 s.
fn arrivals(d: &pipelab_topo::Distilled, n: usize) -> Vec<Duration> {
    let base = Ipv4Addr::new(10, 0, 0, 1);
    let spec = pipelab_topo::lower(d, &[], base, None, &[]).expect("lowers");
    let mut e = Emulation::with_spec(spec, EngineOptions::default()).expect("spec");
    let start = Instant(1_000_000_000);
    for _ in 0..n {
        let mut p = Packet::new(1500);
        p.born = start;
        p.key = FlowKey {
            proto: 17,
            src: IpAddr::V4(base),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            ..FlowKey::default()
        };
        let mut view = PacketView::ip(p.key, p.len);
        assert_eq!(e.ingress(start, p, 0, &mut view), Ingress::Queued);
    }
    let mut out = Vec::new();
    let mut views = |p: &Packet| PacketView::ip(p.key, p.len);
    while let Some(t) = e.next_deadline() {
        e.advance(t, &mut out, &mut views);
    }
    out.iter()
        .filter(|o| matches!(o.exit, Exit::Deliver { port: 1 }))
        .map(|o| o.at.saturating_since(start))
        .collect()
}

/// A pass proves a GML link's `bw "trace:FILE"` is read relative to the
/// topology's directory, kept in the topology, and lowered from there:
/// with one 1500-byte delivery opportunity every 10 ms (Mahimahi's
/// format: a line `10`), three packets queued at once leave 10 ms apart,
/// each 5 ms of delay later; the same topology without the trace's text
/// does not lower.
#[test]
fn a_bandwidth_trace_is_read_with_the_topology() {
    let d = dir("trace");
    std::fs::create_dir_all(d.join("traces")).expect("dir");
    std::fs::write(
        d.join("traces/slow.trace"),
        "# one opportunity per 10 ms\n10\n",
    )
    .expect("trace");
    let text = gml(r#"bw "trace:traces/slow.trace" delay 5"#);
    let mut load = loader(&d);
    let t = parse_gml_files(&text, &GmlDefaults::default(), Some(&mut load)).expect("reads");
    assert_eq!(
        t.files.get("traces/slow.trace"),
        Some("# one opportunity per 10 ms\n10\n")
    );
    let dist = distill(&t, Mode::HopByHop).expect("distils");
    let got = arrivals(&dist, 3);
    assert_eq!(got.len(), 3, "{got:?}");
    for w in got.windows(2) {
        assert_eq!(w[1].as_nanos() - w[0].as_nanos(), 10_000_000, "{got:?}");
    }
    assert!(got[0] >= Duration::from_millis(5), "{got:?}");
    assert!(got[0] <= Duration::from_millis(15), "{got:?}");
    let mut bare = dist.clone();
    bare.files = Default::default();
    let e = pipelab_topo::lower(&bare, &[], Ipv4Addr::new(10, 0, 0, 1), None, &[])
        .expect_err("no text, no pipe");
    assert!(e.to_string().contains("traces/slow.trace"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A pass proves TOML links read files as GML ones do (an empirical
/// delay distribution and a loss trace, each read once though two links
/// name it; written back, the topology reads back equal), and that every way a file can be wrong is an error naming
/// the line, the key and the file: missing, a directory, malformed (with
/// the file's own line).
#[test]
fn toml_links_read_files_and_errors_name_line_key_and_file() {
    let d = dir("toml");
    std::fs::write(d.join("delays.txt"), "1ms\n2ms\n3ms\n").expect("delays");
    std::fs::write(d.join("drops.txt"), "3\n7-9\n").expect("drops");
    std::fs::write(d.join("bad.trace"), "10\n5\nfast\n").expect("bad");
    std::fs::create_dir_all(d.join("adir")).expect("dir");
    let text = |extra: &str| {
        format!(
            "[[node]]\nid = 0\nrole = \"client\"\n[[node]]\nid = 1\nrole = \"stub\"\n[[node]]\nid = 2\nrole = \"client\"\n\
             [[link]]\na = 0\nb = 1\ndelay = 10\ndistribution = \"file:delays.txt\"\nloss = \"trace:drops.txt\"\n\
             [[link]]\na = 1\nb = 2\ndelay = 10\ndistribution = \"file:delays.txt\"\n{extra}"
        )
    };
    let mut reads = 0;
    let mut load = |p: &str| {
        reads += 1;
        read_named_file(d.join(p)).map_err(|e| e.to_string())
    };
    let t = parse_toml_files(&text(""), &GmlDefaults::default(), Some(&mut load)).expect("reads");
    assert_eq!(reads, 2, "each file once");
    assert_eq!(
        t.files.paths().collect::<Vec<_>>(),
        vec!["delays.txt", "drops.txt"]
    );
    let dist = distill(&t, Mode::HopByHop).expect("distils");
    for p in &dist.pipes {
        let cfg = pipelab_topo::pipe_config(p, &dist.files).expect("lowers");
        assert!(cfg.jitter().is_some());
    }
    // Written back (the words under `pipe`), it reads back equal.
    let mut load = loader(&d);
    let back = parse_toml_files(
        &pipelab_topo::to_toml(&t).expect("writes"),
        &GmlDefaults::default(),
        Some(&mut load),
    )
    .expect("reads back");
    assert_eq!(back, t);
    for (extra, line, key, says) in [
        ("bw = \"trace:nowhere.trace\"\n", 21, "bw", "nowhere.trace"),
        ("bw = \"trace:adir\"\n", 21, "bw", "not a regular file"),
        ("bw = \"trace:bad.trace\"\n", 21, "bw", "line 2"),
        (
            "profile = \"nowhere.profile\"\n",
            21,
            "profile",
            "nowhere.profile",
        ),
    ] {
        let mut load = loader(&d);
        let e = parse_toml_files(&text(extra), &GmlDefaults::default(), Some(&mut load))
            .expect_err(extra)
            .to_string();
        assert!(
            e.starts_with(&format!(
                "line {line}: link 2 (between 1 and 2): field `{key}`"
            )),
            "{extra}: {e}"
        );
        assert!(e.contains(says), "{extra}: {e}");
    }
    // Read from text alone, a topology names no file.
    let e = parse_gml(&gml(r#"bw "trace:x.trace""#)).expect_err("no loader");
    assert!(e.message.contains("no file is read here"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A pass proves `link A B set` takes every pipe word at run time: the
/// words replace the same words of the link and keep the others (a
/// jitter stays when codel comes), a refused whole pipe changes nothing
/// (netem's overhead beside ipfw's accounting), a trace replaces the
/// link's bandwidth, and a file is read by the
/// command's loader and lowered (without one, it is refused).
#[test]
fn link_set_takes_pipe_words_and_files_at_run_time() {
    let d = dir("set");
    std::fs::write(d.join("slow.trace"), "10\n").expect("trace");
    let t = parse_gml(&gml(r#"bw "10Mbit/s" delay 5 jitter "1ms""#)).expect("parses");
    let mut net = Network::new(t, Mode::HopByHop, Metric::Delay).expect("net");
    let mut cross = Vec::new();
    let set = "link 0 1 set codel target 5ms ecn duplicate 1%";
    assert!(matches!(
        execute(set, &mut net, &mut cross),
        Ok(Outcome::Changed(c)) if c.pipes.len() == 2
    ));
    let l = &net.topology().links[0];
    assert!(l.words.jitter.is_some(), "the jitter stays");
    assert!(l.words.aqm.is_some() && l.words.ecn && l.words.duplicate.is_some());
    let before = net.topology().clone();
    let e = execute(
        "link 0 1 set accounting l2 overhead 10",
        &mut net,
        &mut cross,
    )
    .expect_err("overhead and accounting");
    assert!(e.contains("overhead"), "{e}");
    assert_eq!(net.topology(), &before, "nothing changed");
    let path = d.join("slow.trace").display().to_string();
    let line = format!("link 0 1 set bw trace:{path}");
    let e = execute(&line, &mut net, &mut cross).expect_err("no loader");
    assert!(e.contains("no file is read here"), "{e}");
    let mut load = |p: &str| read_named_file(p).map_err(|e| e.to_string());
    assert!(execute_with(&line, &mut net, &mut cross, Some(&mut load)).is_ok());
    assert_eq!(net.topology().files.get(&path), Some("10\n"));
    let l = &net.topology().links[0];
    assert!(l.bw.is_unlimited(), "the trace replaces the bandwidth");
    let dist = net.distilled();
    for p in &dist.pipes {
        let cfg = pipelab_topo::pipe_config(p, &dist.files).expect("lowers");
        assert!(cfg.bw_trace().is_some() && cfg.aqm().is_some());
    }
    let _ = std::fs::remove_dir_all(&d);
}
