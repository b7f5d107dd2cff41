//! ECN (`ecn` on a pipe, `ecn` on a traffic source): where the loss model
//! or the AQM would drop an ECN-capable packet, the pipe marks it CE and
//! sends it on; packets that are not ECN-capable are still dropped.

use pipelab_lang::{parse_traffic, Config};
use pipelab_sim::{simulate, Report, SimOptions};

fn sim(config: &str, traffic: &[&str]) -> Report {
    let mut cfg = Config::new();
    cfg.apply_script(config).expect("config parses");
    let specs: Vec<_> = traffic
        .iter()
        .map(|t| parse_traffic(t).expect("traffic"))
        .collect();
    simulate(&cfg, &specs, &SimOptions::default()).expect("runs")
}

/// `loss 10% ecn`: an ECN-capable flow loses nothing and has 10 % of its
/// packets marked (within 3σ over 50k); a flow that is not ECN-capable
/// loses 10 % (within 3σ); the pipe counts the marks.
#[test]
fn loss_model_marks_ecn_capable_packets() {
    let r = sim(
        "pipe 1 config loss 10% ecn\nadd 100 pipe 1 ip from any to any\n",
        &[
            "cbr rate 10000pps size 100B duration 5s ecn",
            "cbr rate 10000pps size 100B duration 5s",
        ],
    );
    let (ect, plain) = (&r.flows[0], &r.flows[1]);
    let n = 50_000.0;
    let sigma = (n * 0.1 * 0.9f64).sqrt();
    assert_eq!(ect.lost, 0);
    assert!(
        (ect.ecn_marked as f64 - n * 0.1).abs() < 3.0 * sigma,
        "marked {}",
        ect.ecn_marked
    );
    assert_eq!(plain.ecn_marked, 0);
    assert!(
        (plain.lost as f64 - n * 0.1).abs() < 3.0 * sigma,
        "lost {}",
        plain.lost
    );
    assert_eq!(r.pipes[0].ecn_marks, ect.ecn_marked);
}

/// RED with `ecn` under overload: the ECN-capable flow is marked, never
/// dropped by the AQM; without `ecn` on the pipe the same flow is dropped.
#[test]
fn red_marks_instead_of_dropping() {
    let conf = |ecn: &str| {
        format!("pipe 1 config bw 1Mbit/s queue 100 red 0.002/10/40/0.1 {ecn}\nadd 100 pipe 1 ip from any to any\n")
    };
    let t = ["cbr rate 1100Kbit/s size 1000B duration 20s ecn"];
    let marked = sim(&conf("ecn"), &t);
    let dropped = sim(&conf(""), &t);
    assert!(marked.flows[0].ecn_marked > 0);
    assert_eq!(marked.flows[0].drops.aqm, 0);
    assert_eq!(dropped.flows[0].ecn_marked, 0);
    assert!(dropped.flows[0].drops.aqm > 0);
}

/// fq_codel and fq_pie with `ecn` (ipfw's `sched N config type fq_codel
/// ecn`; RFC 8290 §4.1, RFC 8033 §5.1): at 1 Mbit/s offered 2 Mbit/s, the
/// ECN-capable flow's queue management marks and never drops (its only
/// losses are tail drops of the full flow queue); with `noecn`, or for a
/// flow that is not ECN-capable, it drops and marks nothing. The pipe's
/// and the flow's mark counts agree.
#[test]
fn fq_codel_and_fq_pie_mark_with_ecn() {
    for kind in ["fq_codel", "fq_pie"] {
        let conf = |ecn: &str| {
            format!(
                "pipe 1 config bw 1Mbit/s
\
                 sched 1 config pipe 1 type {kind} {ecn}
\
                 queue 1 config sched 1
\
                 add 100 queue 1 ip from any to any
"
            )
        };
        let ect = ["cbr rate 250pps size 1000B duration 30s ecn"];
        let marked = sim(&conf("ecn"), &ect);
        let f = &marked.flows[0];
        assert!(f.ecn_marked > 100, "{kind} ecn: marks {}", f.ecn_marked);
        assert_eq!(f.drops.aqm, 0, "{kind} ecn: no AQM drop");
        assert_eq!(marked.pipes[0].ecn_marks, f.ecn_marked, "{kind}");
        // The link still carries exactly its rate.
        assert!(
            (f.throughput_bps - 1e6).abs() <= 1e3,
            "{kind}: {}",
            f.throughput_bps
        );
        let dropped = sim(&conf("noecn"), &ect);
        let f = &dropped.flows[0];
        assert_eq!(f.ecn_marked, 0, "{kind} noecn");
        assert!(f.drops.aqm > 0, "{kind} noecn: AQM drops {:?}", f.drops);
        let plain = sim(&conf("ecn"), &["cbr rate 250pps size 1000B duration 30s"]);
        let f = &plain.flows[0];
        assert_eq!(f.ecn_marked, 0, "{kind}: not ECN-capable");
        assert!(f.drops.aqm > 0, "{kind}: not ECN-capable, dropped");
    }
}
