//! `pipelab sim --workers K` as a user runs it: the issue's ring of 20
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

/// A pass proves the issue's first "must show": `topo gen ring --routers
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
        (vec!["sim", "--topology", ring], "no traffic", 2),
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

/// One CBR flow of 2000 packets of 1000 B at 100 pps across the single
/// link of a 2-VN topology whose edge carries `attrs`; its report.
fn two_vn_flow(attrs: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let topo = dir.path().join("pair.gml");
    std::fs::write(
        &topo,
        format!(
            "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 LinkLabel \"test\" {attrs} ]\n]\n"
        ),
    )
    .expect("write topology");
    let flow = format!(
        "cbr rate 100pps size 1000B duration 20s from {}:1000 to {}:9",
        vn(0),
        vn(1)
    );
    let (out, _) = ok(&[
        "sim",
        "--topology",
        topo.to_str().expect("utf-8"),
        "--traffic",
        &flow,
        "--seed",
        "3",
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_str(&out).expect("json");
    report["flows"][0].clone()
}

/// A pass proves a topology link's `delay` and `loss` act through
/// `pipelab sim --topology`: with delay 20ms and loss 10% on a 10 Mbit/s
/// link, every delivered packet takes exactly 20 ms plus its 0.8 ms of
/// transmission (1000 B at 10 Mbit/s, no queueing at 100 pps), and the
/// delivered fraction of 2000 packets is within 4.5 standard deviations
/// of 90% (binomial: σ = √(2000·0.1·0.9) ≈ 13.4 packets).
#[test]
fn a_topology_links_delay_and_loss_act_in_sim() {
    let f = two_vn_flow(r#"bandwidth "10Mbit/s" delay "20ms" loss "10%" queue 1000"#);
    assert_eq!(f["sent"].as_u64(), Some(2000), "{f}");
    let lost = f["lost"].as_u64().expect("lost");
    assert!(
        (140..=260).contains(&lost),
        "{lost} of 2000 lost, expected 200 ± 60"
    );
    let d = &f["delay_ms"];
    for k in ["min", "max"] {
        let v = d[k].as_f64().expect("delay");
        assert!((v - 20.8).abs() < 1e-6, "{k} delay {v} ms, expected 20.8");
    }
}

/// A pass proves the language's words on a topology link act through
/// `pipelab sim --topology`: a jitter of 5 ms with a normal distribution
/// spreads the delays around 20.8 ms (mean within 0.5 ms, standard
/// deviation within 4..6 ms over 2000 packets; the standard error of the
/// mean is about 0.11 ms), and a Gilbert-Elliott loss model (netem's
/// `gemodel p r 1-h 1-k`) that never leaves its good state (p = 0%),
/// where it loses 5% (1-k), loses 100 ± 45 packets (σ ≈ 9.7).
#[test]
fn a_topology_links_pipe_words_act_in_sim() {
    let f = two_vn_flow(
        r#"bandwidth "10Mbit/s" delay "20ms" jitter "5ms" distribution "normal" queue 1000"#,
    );
    assert_eq!(f["received"].as_u64(), Some(2000), "{f}");
    let d = &f["delay_ms"];
    let mean = d["mean"].as_f64().expect("mean");
    let std = d["stddev"].as_f64().expect("stddev");
    assert!((mean - 20.8).abs() < 0.5, "mean delay {mean} ms");
    assert!((4.0..6.0).contains(&std), "delay deviation {std} ms");
    let f =
        two_vn_flow(r#"bandwidth "10Mbit/s" delay 20 loss "gemodel 0% 100% 100% 5%" queue 1000"#);
    let lost = f["lost"].as_u64().expect("lost");
    assert!(
        (55..=145).contains(&lost),
        "{lost} of 2000 lost, expected 100 ± 45"
    );
}
