//! `spill` in virtual time: a storage matter, not a timing one. The
//! same configuration with and without `spill` on its pipes gives the
//! same `pipelab sim --json` report (series included), but for the
//! pipes' configurations echoed in it; and `pipelab check` prints the
//! word back. (The live runner's spilling is tested in virtual time
//! against a pool that holds everything in `pipelab-io`'s
//! `tests/spill.rs`, and with real packets in `tests/spill.rs` here.)

mod common;
use common::run;

/// A pass proves a slow pipe with a queue of 256 MB, jitter and loss,
/// overloaded three times over beside a second pipe, reports the same
/// flows, pipes, rules and series with `spill` as without.
#[test]
fn spill_changes_nothing_in_virtual_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base =
        "pipe 1 config bw 10Mbit/s delay 20ms 2ms distribution normal queue 256MB loss 0.5%\n\
                pipe 2 config bw 50Mbit/s delay 5ms queue 100\n\
                add 100 pipe 2 udp from any 2000 to any\n\
                add 200 pipe 1 ip from any to any\n";
    let spilled = base
        .replace("loss 0.5%\n", "loss 0.5% spill\n")
        .replace("queue 100\n", "queue 100 spill\n");
    assert_ne!(base, spilled);
    let sim = |text: &str, name: &str| {
        let f = dir.path().join(name);
        std::fs::write(&f, text).expect("write");
        let (code, out, err) = run(&[
            "sim",
            f.to_str().expect("utf-8"),
            "--traffic",
            "cbr rate 30Mbit/s size 1400B duration 3s",
            "--traffic",
            "poisson rate 2000pps size 500B duration 3s from 10.0.0.1:2000",
            "--interval",
            "100ms",
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        out
    };
    let plain = sim(base, "plain.conf");
    let with = sim(&spilled, "spill.conf");
    assert_ne!(plain, with, "the configurations are echoed");
    assert_eq!(
        with.replace(" spill", ""),
        plain,
        "the same report but for the echoed words"
    );
    let v: serde_json::Value = serde_json::from_str(&with).expect("json");
    let drops = v["pipes"][0]["drops"].as_u64().unwrap_or(u64::MAX);
    assert_eq!(
        drops, 0,
        "a queue of 256 MB drops nothing: {}",
        v["pipes"][0]
    );
    let (code, out, err) = run(&[
        "check",
        dir.path().join("spill.conf").to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("pipe 1 config bw 10Mbit/s delay 20ms 2ms distribution normal queue 256MB spill loss 0.5%"),
        "{out}"
    );
}
