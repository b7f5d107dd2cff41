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
