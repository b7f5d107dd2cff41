//! The hostile suite of scale, through the real `pipelab`: inputs that
//! ask for more than a machine has or virtual time can hold. A run whose
//! packets would leave after the last instant (2⁶⁴ − 1 ns, about 584
//! years), 100,000 traffic sources, topologies of 100,000 nodes: each
//! runs within its time and memory bounds, or is refused with a message
//! naming the limit, before anything is allocated for it.
//!
//! Each case runs under a time bound (a hang fails) and an address-space
//! bound (`ulimit -v`: what aborted allocating gigabytes fails), and none
//! may panic. `case_count` counts the cases (docs/HOSTILE.md).

mod hostile;

use hostile::{all_pass, run_bounded, tally, verdict_with, Outcome, PIPELAB};
use std::process::Command;
use std::time::Duration;
use Outcome::{Accepted, Rejected};

/// Address space each case may use, in KiB (`ulimit -v`): 1.5 GiB. A
/// hundred thousand sources used to take 9 GB, a 100,000-VN star asked
/// for 240 GB.
const MEMORY_KIB: u64 = 1536 << 10;

/// (case, arguments, outcome). In the arguments `SLOW` stands for a
/// configuration of one pipe of 1 bit/s with a queue of 65,537 packets,
/// `CONF` for one of 10 Mbit/s and 10 ms, `SOURCES` for a traffic file
/// of 100,000 one-packet sources, `CHAIN` for a GML chain of 100,000
/// routers with a VN at each end, `STAR` for a star of 100,000 VNs.
const SCALE: &[(&str, &[&str], Outcome)] = &[
    (
        "sim whose last packets leave 583 years late",
        &["sim", "SLOW", "--traffic", "cbr rate 1000pps size 65000B duration 35400ms"],
        Accepted("35400"),
    ),
    (
        "sim whose packets would leave after 584 years (it spun forever)",
        &["sim", "SLOW", "--traffic", "cbr rate 1000pps size 65000B duration 35500ms"],
        Rejected(
            1,
            "error: virtual time overflow: packets would leave after 18446744073709551615 ns (about 584 years), the last instant virtual time can hold (pipe 1 holds …); the run had reached …: a bandwidth too low or a delay too long for this traffic",
        ),
    ),
    (
        "sim whose on-two-workers packets would leave after 584 years",
        &["sim", "SLOW", "--workers", "2", "--traffic", "cbr rate 1000pps size 65000B duration 35500ms"],
        Rejected(1, "error: virtual time overflow: packets would leave after 18446744073709551615 ns"),
    ),
    (
        "sim of a source starting half a second before the last instant, on a slow link",
        &["sim", "SLOW", "--traffic", "cbr rate 100pps size 1000B duration 500ms start 18446744073s"],
        Rejected(1, "error: virtual time overflow: packets would leave after 18446744073709551615 ns (about 584 years), the last instant virtual time can hold (pipe 1 holds "),
    ),
    (
        "sim of a source sending past the last instant (it lost its last packets unsaid)",
        &["sim", "CONF", "--traffic", "cbr rate 100pps size 1000B duration 1s start 18446744073s"],
        Rejected(2, "error: --traffic #1: it would send until 1.000 s after its start at 18446744073.000 s, past the last instant virtual time can hold (18446744073709551615 ns, about 584 years)"),
    ),
    (
        "sim of 100,000 one-packet sources",
        &["sim", "CONF", "--traffic-file", "SOURCES", "--json"],
        Accepted("\"flow\": 99999,"),
    ),
    (
        "topo distill of a chain of 100,000 nodes",
        &["topo", "distill", "CHAIN"],
        Accepted("nodes: 100000 (2 VNs), links: 99999\npipes: 199998 (99999 bidirectional)\nroutes: 2 (0 unreachable)\nhops per route: mean 99999.000, max 99999\n"),
    ),
    (
        "topo distill last-mile of a chain of 100,000 nodes (a mesh of 99,998)",
        &["topo", "distill", "CHAIN", "--mode", "last-mile"],
        Rejected(
            2,
            "the 99998 interior nodes a last-mile mesh joins make 9999500006 ordered pairs, more than the limit of 4194304 (the pairs of 2048 VNs)",
        ),
    ),
    (
        "topo distill of a star of 100,000 VNs",
        &["topo", "distill", "STAR"],
        Rejected(
            2,
            "100000 VNs make 9999900000 ordered pairs, more than the limit of 4194304 (the pairs of 2048 VNs): a distillation holds a route or a pipe for each",
        ),
    ),
    (
        "topo distill end-to-end of a star of 100,000 VNs",
        &["topo", "distill", "STAR", "--mode", "end-to-end"],
        Rejected(2, "100000 VNs make 9999900000 ordered pairs, more than the limit of 4194304"),
    ),
    (
        "topo assign of a star of 100,000 VNs",
        &["topo", "assign", "STAR", "--cores", "4"],
        Rejected(2, "100000 VNs make 9999900000 ordered pairs, more than the limit of 4194304"),
    ),
    (
        "topo assign of a chain of 100,000 nodes on 1024 cores",
        &["topo", "assign", "CHAIN", "--cores", "1024", "--method", "greedy"],
        Accepted("199998 pipes (99999 pairs)"),
    ),
];

/// A chain of `n` routers with a VN at each end, as GML.
fn chain(n: usize) -> String {
    let mut s = String::from("graph [\n");
    for i in 0..n {
        let role = if i == 0 || i == n - 1 {
            "client"
        } else {
            "stub"
        };
        s += &format!("  node [ id {i} role \"{role}\" ]\n");
    }
    for i in 1..n {
        s += &format!(
            "  edge [ source {} target {i} bandwidth \"10Mbit/s\" delay \"1ms\" ]\n",
            i - 1
        );
    }
    s + "]\n"
}

/// Each case of [`SCALE`].
#[test]
fn inputs_beyond_the_machine_run_within_bounds_or_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let slow = d.join("slow.conf");
    std::fs::write(
        &slow,
        "pipe 1 config bw 1bit/s queue 65537\nadd 100 pipe 1 ip from any to any\n",
    )
    .expect("write");
    let conf = d.join("ok.conf");
    std::fs::write(
        &conf,
        "pipe 1 config bw 10Mbit/s delay 10ms\nadd 100 pipe 1 ip from any to any\n",
    )
    .expect("write");
    let sources = d.join("sources.traffic");
    std::fs::write(
        &sources,
        "cbr rate 1pps size 100B duration 1s\n".repeat(100_000),
    )
    .expect("write");
    let chain_gml = d.join("chain.gml");
    std::fs::write(&chain_gml, chain(100_000)).expect("write");
    let star = d.join("star.gml");
    let mut gen = Command::new(PIPELAB);
    gen.args(["topo", "gen", "star", "--clients", "100000", "-o"])
        .arg(&star);
    let made = run_bounded(gen, Duration::from_secs(60));
    assert_eq!(made.code, Some(0), "topo gen star: {}", made.stderr);
    let sub = |s: &str| {
        let path = |p: &std::path::Path| p.display().to_string();
        s.replace("SLOW", &path(&slow))
            .replace("CONF", &path(&conf))
            .replace("SOURCES", &path(&sources))
            .replace("CHAIN", &path(&chain_gml))
            .replace("STAR", &path(&star))
    };
    let mut failures = Vec::new();
    for (case, args, want) in SCALE {
        // `ulimit -v` for the binary alone (the shell execs it).
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("ulimit -v {MEMORY_KIB} && exec \"$0\" \"$@\""))
            .arg(PIPELAB)
            .args(args.iter().map(|a| sub(a)));
        let bound = Duration::from_secs(30);
        let ran = run_bounded(cmd, bound);
        if let Err(e) = verdict_with(&ran, *want, &[], bound) {
            failures.push(format!("{case}: {e}"));
        }
    }
    all_pass(failures, SCALE.len());
}

/// The count of this file's cases (docs/HOSTILE.md).
#[test]
fn case_count() {
    let rejections = SCALE.iter().filter(|c| c.2.is_checked_rejection()).count();
    tally("hostile_scale", SCALE.len(), rejections, 12, 8);
}
