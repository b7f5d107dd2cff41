//! tc-netem(8) as written: every example and option form of the page,
//! after `pipe 1 config` and as `--link` words (the same function), each
//! parsed, printed back canonically (the expected text is in the table)
//! and parsed back equal; the refusals with their exact messages; and the
//! distribution tables as iproute2 ships them (`normal.dist` read from
//! tc's library directory, a KS test of the delays against it at
//! α = 0.01, and pipelab's generated fallback equal to it).
//!
//! The behaviour in virtual time is checked in
//! `crates/sim/tests/conformance.rs` and `crates/sim/tests/netem.rs`.

mod conformance;

use conformance::{NETEM, NETEM_REJECT};
use pipelab_engine::models::{DelayModel, Distribution, NetemTable};
use pipelab_engine::rng::rng_from_seed;
use pipelab_lang::{files, parse_line, parse_pipe_params, Command};

/// Pass proves: every netem example parses after `pipe 1 config` and as
/// `--link` words to the same spec, prints back as the table says, and
/// the printed text parses back to the same command.
#[test]
fn every_netem_example_reads_back_canonically() {
    let mut failures = Vec::new();
    for c in NETEM {
        let line = format!("pipe 1 config {}", c.input);
        let cmd = match parse_line(&line) {
            Ok(Some(cmd)) => cmd,
            other => {
                failures.push(format!("[{}] {line}: {other:?}", c.source));
                continue;
            }
        };
        let printed = cmd.to_string();
        if printed != c.canonical {
            failures.push(format!(
                "[{}] {line}\n   printed {printed}\n  expected {}",
                c.source, c.canonical
            ));
        }
        match parse_line(&printed) {
            Ok(Some(back)) if back == cmd => {}
            other => failures.push(format!("[{}] {printed} reads back as {other:?}", c.source)),
        }
        let Command::PipeConfig { spec, .. } = &cmd else {
            failures.push(format!("{line}: not a pipe config"));
            continue;
        };
        match parse_pipe_params(c.input) {
            Ok(link) if &link == spec => {}
            other => failures.push(format!("--link '{}': {other:?}", c.input)),
        }
        if let Err(e) = spec.to_config() {
            failures.push(format!("[{}] {line}: {e}", c.source));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        NETEM.len(),
        failures.join("\n")
    );
    println!("{} netem cases read back", NETEM.len());
}

/// Pass proves: each refusal gives its exact message, line, column and
/// hint.
#[test]
fn netem_refusals_have_their_messages() {
    let mut failures = Vec::new();
    for r in NETEM_REJECT {
        match parse_line(r.input) {
            Err(e) if e.to_string() == r.error => {}
            other => failures.push(format!(
                "[{}] {}\n  got  {:?}\n  want {}",
                r.source,
                r.input,
                other.map_err(|e| e.to_string()),
                r.error
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The Kolmogorov-Smirnov critical value at α = 0.01 for `n` samples.
fn ks_critical_001(n: usize) -> f64 {
    1.6276 / (n as f64).sqrt()
}

/// Pass proves: `distribution normal` reads iproute2's `normal.dist`
/// when it is installed (the table the configuration builds is the
/// file's, entry for entry), pipelab's generated table equals that file
/// (so the fallback changes nothing), and 100 000 delays drawn by the
/// engine from the configuration pass a two-sided KS test at α = 0.01
/// against the table's own CDF (a step function: both one-sided limits
/// are compared at every value). `sigma = 8192ns` makes each delay `mu +
/// T[i]` ns exactly, so the test sees the table itself.
#[test]
fn normal_reads_tcs_table_and_passes_ks() {
    let Some(path) = files::find_tc_table("normal") else {
        println!(
            "no normal.dist in {:?}: pipelab's generated table is used",
            files::tc_lib_dirs()
        );
        return;
    };
    let text = files::read_named_file(&path).expect("readable");
    let shipped = files::parse_tc_table(&text).expect("a table");
    assert_eq!(shipped.len(), 4096);
    assert_eq!(
        NetemTable::normal().values(),
        &shipped[..],
        "pipelab's generated table is iproute2's normal.dist"
    );
    assert_eq!(NetemTable::pareto().values().len(), 4096);
    for (name, generated) in [
        ("pareto", NetemTable::pareto()),
        ("paretonormal", NetemTable::paretonormal()),
    ] {
        if let Some(p) = files::find_tc_table(name) {
            let t = files::parse_tc_table(&files::read_named_file(&p).expect("readable"))
                .expect("a table");
            assert_eq!(generated.values(), &t[..], "{name}");
        }
    }

    let spec = match parse_line("pipe 1 config delay 1s 8192ns distribution normal") {
        Ok(Some(Command::PipeConfig { spec, .. })) => spec,
        other => panic!("{other:?}"),
    };
    let mut read = Vec::new();
    let mut load = |p: &str| {
        read.push(p.to_string());
        files::read_named_file(p).map_err(|e| e.to_string())
    };
    let cfg = spec.to_config_with(&mut load).expect("valid");
    assert_eq!(read, [path.display().to_string()], "the file tc reads");
    let dist = cfg.jitter().expect("a jitter").clone();
    match dist.distribution() {
        Distribution::Table(t) => assert_eq!(t.values(), &shipped[..]),
        other => panic!("{other:?}"),
    }
    let mut m = DelayModel::new(dist, rng_from_seed(11));
    let n = 100_000;
    let mut xs: Vec<f64> = (0..n).map(|_| m.sample().as_nanos() as f64 - 1e9).collect();
    xs.sort_by(|a, b| a.total_cmp(b));
    let mut table: Vec<f64> = shipped.iter().map(|&v| v as f64).collect();
    table.sort_by(|a, b| a.total_cmp(b));
    let frac = |sorted: &[f64], v: f64, strict: bool| {
        let k = if strict {
            sorted.partition_point(|&x| x < v)
        } else {
            sorted.partition_point(|&x| x <= v)
        };
        k as f64 / sorted.len() as f64
    };
    let d = table
        .iter()
        .flat_map(|&v| [(v, false), (v, true)])
        .map(|(v, strict)| (frac(&xs, v, strict) - frac(&table, v, strict)).abs())
        .fold(0.0f64, f64::max);
    let crit = ks_critical_001(n);
    println!(
        "KS against {}: D = {d:.5}, critical {crit:.5} (α = 0.01, n = {n})",
        path.display()
    );
    assert!(d < crit, "D = {d}");
    // The test can tell tables apart: the same delays against pareto's.
    let mut pareto: Vec<f64> = NetemTable::pareto()
        .values()
        .iter()
        .map(|&v| v as f64)
        .collect();
    pareto.sort_by(|a, b| a.total_cmp(b));
    let wrong = pareto
        .iter()
        .map(|&v| (frac(&xs, v, false) - frac(&pareto, v, false)).abs())
        .fold(0.0f64, f64::max);
    assert!(wrong > crit, "KS cannot tell normal from pareto");
}

/// Pass proves: a table given by path (a word with a `/`) is read from
/// that file with the language's reader, and a malformed one is refused
/// naming the line.
#[test]
fn a_table_by_path_is_read_and_checked() {
    let dir = std::env::temp_dir().join(format!("pipelab-dist-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tempdir");
    let good = dir.join("two.dist");
    std::fs::write(&good, "# two values\n -8192 8192\n").expect("write");
    let bad = dir.join("bad.dist");
    std::fs::write(&bad, "# x\n1 2\n3 40000\n").expect("write");
    let cfg_of = |p: &std::path::Path| {
        let line = format!("pipe 1 config delay 10ms 1ms distribution {}", p.display());
        let spec = match parse_line(&line) {
            Ok(Some(Command::PipeConfig { spec, .. })) => spec,
            other => panic!("{other:?}"),
        };
        assert!(parse_line(&format!("pipe 1 config {spec}")).is_ok());
        spec.to_config_with(&mut |p: &str| files::read_named_file(p).map_err(|e| e.to_string()))
    };
    let c = cfg_of(&good).expect("valid");
    let mut m = DelayModel::new(c.jitter().expect("jitter").clone(), rng_from_seed(1));
    for _ in 0..100 {
        let d = m.sample().as_nanos();
        assert!(d == 9_000_000 || d == 11_000_000, "{d}");
    }
    let e = cfg_of(&bad).expect_err("refused");
    assert_eq!(
        e.to_string(),
        format!(
            "distribution: '{}': line 3: 40000 is outside a table entry's range -32768..32767",
            bad.display()
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
}
