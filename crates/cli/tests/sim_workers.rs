//! `pipelab sim --workers K` as a user runs it: the ring of 20
//! routers and 400 VNs under cross traffic gives the same `--json`
//! report, byte for byte, with 1, 2 and 4 workers; a configuration runs
//! as before and the same on several workers; bad input is refused,
//! naming what and where.

use std::net::Ipv4Addr;

mod common;
use common::run;

/// The address of VN `k` under the default prefix 10.0.0.0/8.
fn vn(k: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 0, 0, 1)) + k)
}

fn ok(args: &[&str]) -> (String, String) {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "pipelab {}: {err}", args.join(" "));
    (out, err)
}

/// A pass proves the first "must show": `topo gen ring --routers
/// 20 --clients 20` (400 VNs, 840 pipes hop by hop) under a cross-traffic
/// matrix, with 60 flows between VNs all around the ring, gives one
/// `pipelab sim --json` report with `--workers 1`, `2` and `4`; the
/// flows crossed the ring and the report has the topology's pipes.
#[test]
fn ring_of_400_vns_is_byte_identical_for_1_2_4_workers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ring = dir.path().join("ring.gml");
    let ring = ring.to_str().expect("utf-8");
    ok(&[
        "topo",
        "gen",
        "ring",
        "--routers",
        "20",
        "--clients",
        "20",
        "-o",
        ring,
    ]);
    let mut flows = String::new();
    for i in 0..60u32 {
        let (s, d) = ((i * 7) % 400, (i * 131 + 200) % 400);
        let d = if d == s { (d + 1) % 400 } else { d };
        let pattern = if i % 2 == 0 { "poisson" } else { "cbr" };
        flows += &format!(
            "{pattern} rate 150pps size 1000B duration 500ms from {}:{} to {}:9\n",
            vn(s),
            1000 + i,
            vn(d)
        );
    }
    let file = dir.path().join("flows.traffic");
    std::fs::write(&file, flows).expect("write flows");
    let file = file.to_str().expect("utf-8");
    let args = |k: &'static str| {
        vec![
            "sim",
            "--topology",
            ring,
            "--cross",
            "vn0 vn210 1500Kbit/s vn17 vn333 1Mbit/s",
            "--cross",
            "vn150 vn20 1800Kbit/s",
            "--traffic-file",
            file,
            "--seed",
            "5",
            "--workers",
            k,
            "--json",
        ]
    };
    let (one, _) = ok(&args("1"));
    let report: serde_json::Value = serde_json::from_str(&one).expect("json");
    let pipes = report["pipes"].as_array().expect("pipes");
    assert_eq!(pipes.len(), 840, "every pipe of the ring is reported");
    let received: u64 = report["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .map(|f| f["received"].as_u64().unwrap_or(0))
        .sum();
    assert!(received > 3000, "{received} packets delivered");
    for k in ["2", "4"] {
        let (out, err) = ok(&args(k));
        assert!(out == one, "--workers {k}: the report differs");
        assert!(!err.contains("note:"), "--workers {k}: {err}");
    }
}

/// A pass proves `pipelab sim CONFIG --traffic` still runs a
/// configuration, and gives the same report on two workers.
#[test]
fn a_configuration_runs_the_same_on_two_workers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = dir.path().join("links.conf");
    std::fs::write(
        &conf,
        "pipe 1 config bw 2Mbit/s delay 10ms\npipe 2 config bw 1Mbit/s delay 30ms plr 0.02\n\
         add 100 pipe 1 udp from any to any dst-port 5001\nadd 200 pipe 2 udp from any to any dst-port 5002\n",
    )
    .expect("write");
    let conf = conf.to_str().expect("utf-8");
    let args = |k: &'static str| {
        vec![
            "sim",
            conf,
            "--traffic",
            "poisson rate 200pps size 1000B duration 2s to 10.0.0.2:5001",
            "--traffic",
            "cbr rate 100pps size 500B duration 2s to 10.0.0.2:5002",
            "--workers",
            k,
            "--json",
        ]
    };
    let (one, _) = ok(&args("1"));
    let (two, _) = ok(&args("2"));
    assert_eq!(one, two);
    assert!(one.contains("\"received\": 200") || one.contains("\"received\""));
}

/// A pass proves bad input is refused with the value and where it is:
/// `--workers 0`, a `--traffic` address that is no VN's, a topology that
/// cannot be read, a cross demand naming no VN, a topology without
/// traffic.
#[test]
fn bad_input_is_refused_naming_what_and_where() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ring = dir.path().join("ring.gml");
    let ring = ring.to_str().expect("utf-8");
    ok(&[
        "topo",
        "gen",
        "ring",
        "--routers",
        "3",
        "--clients",
        "2",
        "-o",
        ring,
    ]);
    let t = "cbr rate 10pps size 100B duration 1s from 10.0.0.1:9 to 10.0.0.3:9";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["sim", "--topology", ring, "--traffic", t, "--workers", "0"],
            "--workers",
        ),
        (
            vec![
                "sim",
                "--topology",
                ring,
                "--traffic",
                "cbr rate 10pps size 100B duration 1s from 10.9.9.9:9 to 10.0.0.3:9",
            ],
            "--traffic #1: from address 10.9.9.9 is no VN's",
        ),
        (
            vec![
                "sim",
                "--topology",
                ring,
                "--traffic",
                t,
                "--traffic",
                "cbr rate 10pps size 100B duration 1s from 10.0.0.1:9 to 192.168.1.1:9",
            ],
            "--traffic #2: to address 192.168.1.1 is no VN's",
        ),
        (
            vec!["sim", "--topology", "/nonexistent/ring.gml", "--traffic", t],
            "/nonexistent/ring.gml",
        ),
        (
            vec![
                "sim",
                "--topology",
                ring,
                "--cross",
                "vn0 nobody 1Mbit/s",
                "--traffic",
                t,
            ],
            "--cross #1: no VN 'nobody'",
        ),
    ];
    let failures: Vec<(Vec<&str>, &str, i32)> = vec![
        (vec!["sim", "--topology", ring], "no traffic", 1),
        (vec!["sim", "--traffic", t], "<CONFIG>", 2),
    ];
    let cases = cases.into_iter().map(|(a, w)| (a, w, 2)).chain(failures);
    for (args, want, exit) in cases {
        let (code, _, err) = run(&args);
        assert_eq!(code, exit, "pipelab {}: exit {code}, {err}", args.join(" "));
        assert!(
            err.contains(want),
            "pipelab {}: {err:?} should say {want:?}",
            args.join(" ")
        );
    }
}
