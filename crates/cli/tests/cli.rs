//! The `pipelab` binary as a user runs it (no root needed): the Quick
//! start's demo, byte-identical reruns, errors with positions and exit
//! codes, and `topo distill` on the bundled example.

mod common;
use common::run;

/// `pipelab demo` runs the bundled example and prints every flow, pipe and
/// rule; its JSON parses and is byte-identical across runs.
#[test]
fn demo_runs_and_is_reproducible() {
    let (code, out, _) = run(&["demo"]);
    assert_eq!(code, 0);
    for word in ["download", "upload", "lan", "pipe", "65535"] {
        assert!(out.contains(word), "{word} missing from:\n{out}");
    }
    let (_, a, _) = run(&["demo", "--json"]);
    let (_, b, _) = run(&["demo", "--json"]);
    assert_eq!(a, b);
    let v: serde_json::Value = serde_json::from_str(&a).expect("json");
    assert_eq!(v["flows"].as_array().map(Vec::len), Some(3));
}

/// A bad configuration: exit code 2, the file, line, column, the word
/// under a caret, a hint, and "nothing was applied".
#[test]
fn config_errors_name_line_column_and_word() {
    let dir = std::env::temp_dir().join(format!("pipelab-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let f = dir.join("bad.conf");
    std::fs::write(&f, "# links\npipe 1 config bw 10Mbps\n").expect("write");
    let (code, _, err) = run(&[
        "sim",
        f.to_str().expect("path"),
        "--traffic",
        "cbr rate 10pps size 100B duration 1s",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("bad.conf:2:18"), "{err}");
    assert!(err.contains("^^^^^^ did you mean Mbit/s?"), "{err}");
    assert!(err.contains("nothing was applied"), "{err}");
    let (code, _, err) = run(&[
        "sim",
        f.to_str().expect("path"),
        "--traffic",
        "cbr rate 10pps size 100B",
    ]);
    assert_eq!(code, 2, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `pipelab topo distill` counts pipes and hops of the bundled dumbbell.
#[test]
fn topo_distill_reports_pipes_and_hops() {
    let gml = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/dumbbell.gml");
    let (code, out, err) = run(&["topo", "distill", gml, "--mode", "end-to-end"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("pipes: 12 (6 bidirectional)"), "{out}");
    assert!(out.contains("hops per route: mean 1.000, max 1"), "{out}");
    let (code, out, _) = run(&["topo", "distill", gml]);
    assert_eq!(code, 0);
    assert!(out.contains("max 3"), "{out}");
}
