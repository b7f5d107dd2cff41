//! The man pages' examples as whole configurations, checked (applied and
//! lowered with the files they name read, as `pipelab check` does) and
//! run in virtual time (as `pipelab sim` does), with the numbers each
//! example promises where it configures behaviour.
//!
//! * Every tc-netem(8) case of `crates/lang/tests/conformance/mod.rs` runs
//!   as `pipe 1 config WORDS` under 1000 pps for 2 s.
//! * Every ipfw(8)/dnctl(8) traffic-shaping example runs as the page
//!   groups it, with the traffic its rules select. Synthetic packets enter
//!   the rules as `in` packets (README), so an example's `out` rules are
//!   checked for acceptance and its `in` half for behaviour.
//! * Every form of FreeBSD's own parser in the table runs, and the units'
//!   meanings there (bytes by the B, K = 1000 in a rate, K = 1024 in a
//!   queue, bare milliseconds) hold in time.
//!
//! Tolerances: rates of a saturated link are exact up to one packet over
//! the run (throughput is measured between first and last delivery);
//! delays are exact (`l·8/B + delay`); loss counts are within 3 binomial
//! standard deviations.

#[path = "../../lang/tests/conformance/mod.rs"]
mod conformance;

use pipelab_lang::{files, parse_traffic, Config};
use pipelab_sim::{simulate_with_loader, Report, SimOptions};

fn run(config: &str, traffic: &[&str]) -> Report {
    let mut cfg = Config::new();
    cfg.apply_script(config)
        .unwrap_or_else(|e| panic!("config applies: {e:?}\n{config}"));
    let specs: Vec<_> = traffic
        .iter()
        .map(|t| parse_traffic(t).expect("traffic parses"))
        .collect();
    let mut load = |p: &str| files::read_named_file(p).map_err(|e| e.to_string());
    simulate_with_loader(&cfg, &specs, &SimOptions::default(), &mut load)
        .unwrap_or_else(|e| panic!("simulation runs: {e:?}\n{config}"))
}

fn close(what: &str, got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= tol,
        "{what}: {got}, expected {want} ± {tol}"
    );
}

/// Pass proves `pipelab check` and `pipelab sim` accept every tc-netem(8)
/// case as a pipe's words, and that each delivers what its loss allows.
#[test]
fn every_netem_case_runs_in_sim() {
    for c in conformance::NETEM {
        let config = format!(
            "pipe 1 config {}\nadd 100 pipe 1 ip from any to any\n",
            c.input
        );
        let r = run(&config, &["cbr rate 1000pps size 100B duration 2s"]);
        let f = &r.flows[0];
        assert_eq!(f.sent, 2000, "[{}] {}", c.source, c.input);
        assert!(
            f.received > 0,
            "[{}] {}: nothing delivered",
            c.source,
            c.input
        );
    }
}

/// Pass proves the examples of ipfw(8)'s TRAFFIC SHAPING part: `plr 0.05`
/// drops 5 % (3σ), the asymmetric 64 Kbit/s link delivers exactly 64
/// Kbit/s when overloaded, RED drops early at 500 Kbit/s, `delay 250ms bw
/// 1Mbit/s` delays a 1000-byte packet exactly 258 ms, `mask all` makes an
/// instance per flow, and per-host masks give each host 200 Kbit/s.
#[test]
fn ipfw_traffic_shaping_examples() {
    // "dnctl add pipe 10 ip from any to any" / "dnctl pipe 10 config plr 0.05"
    let r = run(
        "dnctl add pipe 10 ip from any to any\ndnctl pipe 10 config plr 0.05\n",
        &["cbr rate 1000pps size 100B duration 20s"],
    );
    let f = &r.flows[0];
    let sigma = (20_000.0f64 * 0.05 * 0.95).sqrt();
    close("plr 0.05 losses", f.lost as f64, 1000.0, 3.0 * sigma);
    // The probabilistic rule: "ipfw add prob 0.05 deny ip from any to any in".
    let r = run(
        "ipfw add prob 0.05 deny ip from any to any in\n",
        &["cbr rate 1000pps size 100B duration 20s"],
    );
    close(
        "prob 0.05 deny",
        r.flows[0].drops.rule as f64,
        1000.0,
        3.0 * sigma,
    );
    // Router limiting 192.168.2.0/24 (an `out` rule; sim packets are `in`).
    let r = run(
        "ipfw add pipe 1 ip from 192.168.2.0/24 to any out\n\
         dnctl pipe 1 config bw 300Kbit/s queue 50KBytes\n",
        &["cbr rate 100pps size 1000B duration 1s from 192.168.2.7:1000"],
    );
    assert_eq!(r.flows[0].received, 100);
    // The bidirectional 64 Kbit/s link, its `in` half overloaded at 128 Kbit/s.
    let r = run(
        "ipfw add pipe 1 ip from any to any out\n\
         ipfw add pipe 2 ip from any to any in\n\
         dnctl pipe 1 config bw 64Kbit/s queue 10Kbytes\n\
         dnctl pipe 2 config bw 64Kbit/s queue 10Kbytes\n",
        &["cbr rate 16pps size 1000B duration 30s"],
    );
    close("64Kbit/s", r.flows[0].throughput_bps, 64_000.0, 64.0);
    assert!(r.flows[0].drops.queue > 0);
    // RED at 500 Kbit/s, offered 1 Mbit/s.
    let r = run(
        "ipfw add pipe 1 ip from any to any\n\
         dnctl pipe 1 config bw 500Kbit/s queue 100 red 0.002/30/80/0.1\n",
        &["cbr rate 125pps size 1000B duration 30s"],
    );
    close("RED 500Kbit/s", r.flows[0].throughput_bps, 500_000.0, 500.0);
    assert!(r.flows[0].drops.aqm > 0, "RED drops early");
    // Delay: 1000 bytes at 1 Mbit/s = 8 ms, plus 250 ms.
    let r = run(
        "ipfw add pipe 1 ip from any to any out\n\
         ipfw add pipe 2 ip from any to any in\n\
         dnctl pipe 1 config delay 250ms bw 1Mbit/s\n\
         dnctl pipe 2 config delay 250ms bw 1Mbit/s\n",
        &["cbr rate 10pps size 1000B duration 1s"],
    );
    let d = r.flows[0].delay_ms.expect("delays");
    close("delay 250ms bw 1Mbit/s", d.min, 258.0, 1e-9);
    close("delay 250ms bw 1Mbit/s", d.max, 258.0, 1e-9);
    // Accounting per flow: three rules, `mask all`.
    let r = run(
        "ipfw add pipe 1 tcp from any to any\n\
         ipfw add pipe 1 udp from any to any\n\
         ipfw add pipe 1 ip from any to any\n\
         dnctl pipe 1 config mask all\n",
        &[
            "cbr rate 10pps size 100B duration 1s from 10.0.0.1:1000",
            "cbr rate 10pps size 100B duration 1s from 10.0.0.2:1000",
        ],
    );
    assert_eq!(r.flows.iter().map(|f| f.received).sum::<u64>(), 20);
    // Per-host limits: two hosts of 192.168.2.0/24, 400 Kbit/s offered each.
    let r = run(
        "ipfw add pipe 1 ip from 192.168.2.0/24 to any out\n\
         ipfw add pipe 2 ip from any to 192.168.2.0/24 in\n\
         dnctl pipe 1 config mask src-ip 0x000000ff bw 200Kbit/s queue 20Kbytes\n\
         dnctl pipe 2 config mask dst-ip 0x000000ff bw 200Kbit/s queue 20Kbytes\n",
        &[
            "cbr rate 50pps size 1000B duration 20s to 192.168.2.1:5001",
            "cbr rate 50pps size 1000B duration 20s to 192.168.2.2:5001",
        ],
    );
    for f in &r.flows {
        close("per-host 200Kbit/s", f.throughput_bps, 200_000.0, 200.0);
    }
}

/// Pass proves the LOOKUP TABLES example as the page writes it (table
/// T1, created by name) and numbered: the table's value picks the pipe,
/// 1000 KByte/s (8 Mbit/s) for 192.168.0.2 and 4000 KByte/s (32 Mbit/s)
/// for 192.168.0.5.
#[test]
fn ipfw_lookup_table_example() {
    for t in ["T1", "1"] {
        let create = if t == "T1" {
            "ipfw table T1 create type addr\n"
        } else {
            ""
        };
        let r = run(
            &format!(
                "dnctl pipe 1 config bw 1000Kbyte/s\n\
                 dnctl pipe 4 config bw 4000Kbyte/s\n\
                 {create}\
                 ipfw table {t} add 192.168.2.0/24 1\n\
                 ipfw table {t} add 192.168.0.0/27 4\n\
                 ipfw table {t} add 192.168.0.2 1\n\
                 ipfw add pipe tablearg ip from 'table({t})' to any\n"
            ),
            &[
                "cbr rate 16000pps size 1000B duration 5s from 192.168.0.2:1000",
                "cbr rate 16000pps size 1000B duration 5s from 192.168.0.5:1000",
            ],
        );
        close("table → pipe 1", r.flows[0].throughput_bps, 8e6, 8e3);
        close("table → pipe 4", r.flows[1].throughput_bps, 32e6, 32e3);
    }
}

/// Pass proves `keep-state`/`check-state` shape a flow's replies: with
/// `check-state` and `pipe 1 ... keep-state` for 10.0.0.1's packets, the
/// replies of 10.0.0.2:5001 cross pipe 1 too (50 ms + 0.8 ms for 100 bytes
/// at 1 Mbit/s, exactly), while another flow of 10.0.0.2 passes unshaped
/// (0 ms); without `keep-state` the replies pass unshaped; and after ipfw's
/// 10 s UDP lifetime without a packet the state has expired.
#[test]
fn keep_state_shapes_the_replies() {
    let conf = |keep: &str| {
        format!(
            "dnctl pipe 1 config bw 1Mbit/s delay 50ms\n\
             ipfw add 100 check-state\n\
             ipfw add 200 pipe 1 udp from 10.0.0.1 to any {keep}\n"
        )
    };
    let traffic = [
        "cbr rate 10pps size 100B duration 1s from 10.0.0.1:1000 to 10.0.0.2:5001",
        // The replies, from 0.15 s on (between the flow's packets, so
        // none waits for the link).
        "cbr rate 10pps size 100B duration 1s start 150ms from 10.0.0.2:5001 to 10.0.0.1:1000",
        // Another flow of the same host: no state.
        "cbr rate 10pps size 100B duration 1s start 150ms from 10.0.0.2:5002 to 10.0.0.1:1000",
        // Replies after 11 s of silence (the last packet left at 0.9 s).
        "cbr rate 10pps size 100B duration 1s start 12s from 10.0.0.2:5001 to 10.0.0.1:1000",
    ];
    let r = run(&conf("keep-state"), &traffic);
    let d = |i: usize| r.flows[i].delay_ms.expect("delivered");
    close("the flow", d(0).min, 50.8, 1e-9);
    close("its replies", d(1).min, 50.8, 1e-9);
    close("its replies", d(1).max, 50.8, 1e-9);
    close("another flow", d(2).max, 0.0, 1e-9);
    close("after expiry", d(3).max, 0.0, 1e-9);
    assert_eq!(r.flows[1].received, 10);
    let r = run(&conf(""), &traffic);
    close(
        "no keep-state",
        r.flows[1].delay_ms.expect("delivered").max,
        0.0,
        1e-9,
    );
}

/// Pass proves `layer2` in `pipelab sim`, which sees packets at layer 3
/// (as shell, host, attach and topologies): a `layer2` rule never matches,
/// a `not layer2` rule always does (bridge mode, at layer 2, is the
/// reverse: `crates/emu/tests/apply.rs`).
#[test]
fn layer2_rules_match_at_layer_2_only() {
    let conf = |l2: &str| {
        format!(
            "dnctl pipe 1 config delay 20ms\n\
             ipfw add 100 pipe 1 ip from any to any {l2}\n"
        )
    };
    let t = ["cbr rate 10pps size 100B duration 1s"];
    let r = run(&conf("layer2"), &t);
    close(
        "layer2",
        r.flows[0].delay_ms.expect("delays").max,
        0.0,
        1e-9,
    );
    let r = run(&conf("not layer2"), &t);
    close(
        "not layer2",
        r.flows[0].delay_ms.expect("delays").min,
        20.0,
        1e-9,
    );
}

/// Pass proves the AQM examples at 1 Mbit/s, offered 2 Mbit/s: each
/// configuration delivers the link's rate exactly, and its queue
/// management drops (or marks, with `ecn` and ECN-capable traffic).
#[test]
fn ipfw_aqm_examples() {
    let rule_pipe = "ipfw add 100 pipe 1 ip from 192.168.0.0/24 to any\n";
    let rule_queue = "ipfw add 100 queue 1 ip from 192.168.0.0/24 to any\n";
    let cases: [(&str, String, bool); 6] = [
        ("codel on a pipe", format!("dnctl pipe 1 config bw 1mbits/s codel\n{rule_pipe}"), false),
        (
            "codel on a queue, ecn",
            format!("dnctl pipe 1 config bw 1mbits/s\ndnctl queue 1 config pipe 1 codel target 8ms interval 160ms ecn\n{rule_queue}"),
            true,
        ),
        ("pie on a pipe", format!("dnctl pipe 1 config bw 1mbits/s pie\n{rule_pipe}"), false),
        (
            "pie on a queue, ecn",
            format!("dnctl pipe 1 config bw 1mbits/s\ndnctl queue 1 config pipe 1 pie target 20ms tupdate 30ms ecn\n{rule_queue}"),
            true,
        ),
        (
            "fq_codel",
            format!("dnctl pipe 1 config bw 1mbits/s\ndnctl sched 1 config pipe 1 type fq_codel target 10ms noecn\ndnctl queue 1 config sched 1\n{rule_queue}"),
            false,
        ),
        (
            "fq_pie",
            format!("dnctl pipe 1 config bw 1mbits/s\ndnctl sched 1 config pipe 1 type fq_pie\ndnctl queue 1 config sched 1\n{rule_queue}"),
            false,
        ),
    ];
    for (what, config, ecn) in cases {
        let ecn_word = if ecn { " ecn" } else { "" };
        let traffic =
            format!("cbr rate 250pps size 1000B duration 30s from 192.168.0.7:1000{ecn_word}");
        let r = run(&config, &[&traffic]);
        let f = &r.flows[0];
        close(what, f.throughput_bps, 1e6, 1e3);
        if ecn {
            assert!(f.ecn_marked > 0, "{what}: marks");
        } else {
            assert!(f.drops.aqm > 0, "{what}: AQM drops {:?}", f.drops);
        }
        let d = f.delay_ms.expect("delays");
        // Dropping, the queue is kept near the AQM's target, far below a
        // full 50-slot tail-drop queue (50 × 8 ms = 400 ms); marking, a
        // CBR source does not slow down, so the queue stays full.
        if !ecn {
            assert!(d.mean < 200.0, "{what}: mean delay {}", d.mean);
        }
    }
}

/// Pass proves ipfw's `reset` and `unreach` in virtual time: the packets
/// they answer are drops of their own reasons (not `rule`), each
/// answered, and the others pass.
#[test]
fn reset_and_unreach_drop_and_answer_in_sim() {
    let r = run(
        "ipfw add 100 reset tcp from any to any 80\n\
         ipfw add 200 unreach port udp from any to any 53\n",
        &[
            "cbr rate 100pps size 100B duration 1s proto tcp to 10.0.0.2:80",
            "cbr rate 100pps size 100B duration 1s to 10.0.0.2:53",
            "cbr rate 100pps size 100B duration 1s to 10.0.0.2:5001",
        ],
    );
    assert_eq!((r.flows[0].drops.reset, r.flows[0].answers), (100, 100));
    assert_eq!((r.flows[1].drops.unreach, r.flows[1].answers), (100, 100));
    assert_eq!(r.flows[0].drops.rule + r.flows[1].drops.rule, 0);
    assert_eq!(r.flows[2].received, 100);
}

/// Pass proves `pipelab check` and `pipelab sim` accept every form of
/// FreeBSD's own parser in the table (each on a configuration of pipes 1
/// and 2 at 10 Mbit/s and scheduler 1, with a rule sending to it), and
/// that the meanings FreeBSD gives the units hold in time: `bw 1MB/s` is
/// 8 Mbit/s (bytes by the B), `bw 64K` 64 Kbit/s (K = 1000), `queue
/// 10K` holds 10240 bytes (K = 1024: as many 1024-byte packets as
/// `queue 10240B`, one more than `queue 10000B`), and `delay 20` is 20
/// ms.
#[test]
fn every_freebsd_form_runs_in_sim_with_its_meaning() {
    const BASE: &str = "pipe 1 config bw 10Mbit/s\npipe 2 config bw 10Mbit/s\n\
                        sched 1 config pipe 1 type wf2q+\n";
    for c in conformance::FREEBSD {
        let rule = if c.canonical.starts_with("queue ") {
            "add 100 queue 1 ip from any to any\n"
        } else if c.canonical.starts_with("sched ") {
            "queue 1 config sched 1\nadd 100 queue 1 ip from any to any\n"
        } else if c.canonical.starts_with("add ") {
            ""
        } else {
            "add 100 pipe 1 ip from any to any\n"
        };
        let config = format!("{BASE}{}\n{rule}", c.input);
        let r = run(&config, &["cbr rate 100pps size 100B duration 1s"]);
        let f = &r.flows[0];
        assert_eq!(f.sent, 100, "[{}] {}", c.source, c.input);
        if c.canonical.ends_with("plr 1") {
            assert_eq!(f.received, 0, "[{}] {}: plr 1 loses all", c.source, c.input);
        } else {
            assert!(
                f.received > 0,
                "[{}] {}: nothing delivered",
                c.source,
                c.input
            );
        }
    }
    // bw 1MB/s: 8 Mbit/s, offered 16 Mbit/s.
    let r = run(
        "dnctl pipe 1 config bw 1MB/s\nipfw add 100 pipe 1 ip from any to any\n",
        &["cbr rate 2000pps size 1000B duration 5s"],
    );
    close("bw 1MB/s", r.flows[0].throughput_bps, 8_000_000.0, 8_000.0);
    // bw 64K: 64 Kbit/s, offered 128 Kbit/s.
    let r = run(
        "dnctl pipe 1 config bw 64K\nipfw add 100 pipe 1 ip from any to any\n",
        &["cbr rate 16pps size 1000B duration 30s"],
    );
    close("bw 64K", r.flows[0].throughput_bps, 64_000.0, 64.0);
    // queue 10K: a burst of 20 packets of 1024 bytes at 8 Kbit/s. Ten
    // fill 10240 bytes (the one on the wire among them), ten are dropped;
    // 10000 bytes would hold nine.
    let burst = ["cbr rate 20000pps size 1024B duration 1ms"];
    for (queue, drops) in [("10K", 10), ("10240B", 10), ("10000B", 11)] {
        let r = run(
            &format!(
                "dnctl pipe 1 config bw 8Kbit/s queue {queue}\nipfw add 100 pipe 1 ip from any to any\n"
            ),
            &burst,
        );
        assert_eq!(r.flows[0].sent, 20);
        assert_eq!(r.flows[0].drops.queue, drops, "queue {queue}");
    }
    // delay 20: milliseconds.
    let r = run(
        "dnctl pipe 1 config delay 20\nipfw add 100 pipe 1 ip from any to any\n",
        &["cbr rate 10pps size 100B duration 1s"],
    );
    let d = r.flows[0].delay_ms.expect("delays");
    close("delay 20", d.min, 20.0, 1e-9);
}
