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
    assert!(
        err.contains("^^^^^^ did you mean Mbit/s or MByte/s?"),
        "{err}"
    );
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

/// `--seed random` draws a fresh seed, says it in the report, and that
/// seed replays the run byte for byte; two random runs differ.
#[test]
fn a_random_seed_is_recorded_and_replays_the_run() {
    let conf = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/two-links.conf");
    let traffic = "poisson rate 2000pps size 500B duration 2s";
    let sim = |seed: &str| {
        let (code, out, err) = run(&["sim", conf, "--traffic", traffic, "--seed", seed, "--json"]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("json");
        let seed = v["seed"].as_u64().expect("the report says its seed");
        (seed, out)
    };
    let (s1, a) = sim("random");
    let (s2, b) = sim("random");
    assert_ne!(s1, s2, "two random seeds in a row");
    assert_ne!(a, b, "two random runs gave the same report");
    let (r1, replay) = sim(&s1.to_string());
    assert_eq!(r1, s1);
    assert_eq!(replay, a, "seed {s1} did not replay its run");
    // The table says it too.
    let (code, out, _) = run(&["sim", conf, "--traffic", traffic, "--seed", &s2.to_string()]);
    assert_eq!(code, 0);
    assert!(out.contains(&format!("seed {s2}")), "{out}");
}

/// `pipelab man DIR` writes a page per subcommand (nested ones too) and
/// pipelabd(8), each a roff page naming its command; `pipelab completions
/// SHELL` prints a script that names every subcommand; an unknown shell
/// is refused naming the ones there are.
#[test]
fn manual_pages_and_completions_come_from_the_cli() {
    let dir = tempfile::tempdir().expect("dir");
    let (code, out, err) = run(&["man", dir.path().to_str().expect("path")]);
    assert_eq!(code, 0, "{err}");
    let pages: Vec<String> = std::fs::read_dir(dir.path())
        .expect("pages")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        out.contains(&format!("{} manual pages", pages.len())),
        "{out}"
    );
    for p in [
        "pipelab.1",
        "pipelab-shell.1",
        "pipelab-sim.1",
        "pipelab-topo-up.1",
        "pipelabd.8",
    ] {
        assert!(pages.iter().any(|x| x == p), "no {p} in {pages:?}");
    }
    let shell = std::fs::read_to_string(dir.path().join("pipelab-shell.1")).expect("page");
    assert!(shell.contains(".TH PIPELAB-SHELL 1"), "{shell}");
    assert!(shell.contains("\\-\\-link"), "{shell}");
    let daemon = std::fs::read_to_string(dir.path().join("pipelabd.8")).expect("page");
    assert!(daemon.contains(".TH PIPELABD 8"), "{daemon}");
    for (sh, needle) in [
        ("bash", "complete -F _pipelab"),
        ("zsh", "#compdef pipelab"),
        ("fish", "complete -c pipelab"),
    ] {
        let (code, out, err) = run(&["completions", sh]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(needle), "{sh}: {out}");
        for sub in ["shell", "bridge", "topo", "sim", "probe"] {
            assert!(out.contains(sub), "{sh} completion lacks {sub}");
        }
    }
    let (code, _, err) = run(&["completions", "tcsh"]);
    assert_eq!(code, 2);
    assert!(err.contains("bash") && err.contains("fish"), "{err}");
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

/// Runs `pipelab ARGS`, killing it after `secs` seconds: exit code (`None`
/// when it had to be killed), stderr.
fn run_within(args: &[&str], secs: u64) -> (Option<i32>, String) {
    use std::io::Read;
    let mut child = std::process::Command::new(common::BIN)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run pipelab");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let code = loop {
        match child.try_wait().expect("wait") {
            Some(status) => break status.code(),
            None if std::time::Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return (None, String::new());
            }
            None => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    (code, err)
}

/// A file a configuration or a topology names must be a regular UTF-8
/// file under 64 MiB: `/dev/zero`, `/dev/urandom`, a FIFO, a directory, a
/// sparse file over the cap and invalid UTF-8 are each refused at once,
/// with the reason, by `pipelab check`, `pipelab sim` and `pipelab topo
/// distill` (none may hang or grow without bound; each run is killed
/// after 20 s, which fails the test).
#[test]
fn named_files_must_be_small_regular_text_files() {
    let dir = std::env::temp_dir().join(format!("pipelab-cli-files-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("adir")).expect("dir");
    let fifo = dir.join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let big = std::fs::File::create(dir.join("big.trace")).expect("big");
    big.set_len((64 << 20) + 1).expect("sparse");
    std::fs::write(dir.join("bad.markov"), b"st\xe9te a\n").expect("write");
    let d = dir.display();
    let cases = [
        (
            "profile /dev/zero".to_string(),
            "'/dev/zero': a character device, not a regular file".to_string(),
        ),
        (
            "bw trace:/dev/urandom".to_string(),
            "'/dev/urandom': a character device, not a regular file".to_string(),
        ),
        (
            "bw trace:fifo".to_string(),
            format!("'{d}/fifo': a FIFO, not a regular file"),
        ),
        (
            "delay 5ms distribution file:adir".to_string(),
            format!("'{d}/adir': a directory, not a regular file"),
        ),
        (
            "loss trace:big.trace".to_string(),
            format!(
                "'{d}/big.trace': 67108865 bytes, more than the limit of 67108864 bytes (64 MiB)"
            ),
        ),
        (
            "bw 1Mbit/s timevarying bad.markov".to_string(),
            format!("'{d}/bad.markov': not UTF-8 text (invalid byte at offset 2)"),
        ),
    ];
    let conf = dir.join("links.conf");
    let conf_s = conf.display().to_string();
    for (words, want) in &cases {
        std::fs::write(&conf, format!("pipe 1 config {words}\n")).expect("conf");
        let (code, err) = run_within(&["check", &conf_s], 20);
        assert_eq!(code, Some(2), "check with {words}: {err}");
        assert!(err.contains(want), "check with {words}: {err}");
        let (code, err) = run_within(
            &[
                "sim",
                &conf_s,
                "--traffic",
                "cbr rate 10pps size 100B duration 1s",
            ],
            20,
        );
        assert!(code.is_some_and(|c| c != 0), "sim with {words}: {err}");
        assert!(err.contains(want), "sim with {words}: {err}");
    }
    for (topo, want) in [
        (
            "/dev/zero".to_string(),
            "'/dev/zero': a character device".to_string(),
        ),
        (fifo.display().to_string(), "': a FIFO".to_string()),
    ] {
        let (code, err) = run_within(&["topo", "distill", &topo], 20);
        assert!(code.is_some_and(|c| c != 0), "topo distill {topo}: {err}");
        assert!(err.contains(&want), "topo distill {topo}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
