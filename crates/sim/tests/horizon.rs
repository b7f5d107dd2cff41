//! The horizon of virtual time: an instant is a `u64` of nanoseconds, so
//! the last one is 2⁶⁴ − 1 ns, about 584 years. An instant computed past
//! it saturates there; a run whose packets would leave after it must stop
//! with an error naming it, never spin at it (it did: the loop waited
//! forever for a window that could end after the last instant).

use std::sync::mpsc;
use std::time::Duration as StdDuration;

use pipelab_lang::{parse_traffic, Config};
use pipelab_sim::{simulate, Report, SimError, SimOptions};

/// Run `config` against `traffic` on `workers` workers, failing the test
/// if it takes longer than a minute (a hang).
fn sim_bounded(config: &str, traffic: &str, workers: usize) -> Result<Report, SimError> {
    let mut cfg = Config::new();
    cfg.apply_script(config).expect("config parses");
    let specs = vec![parse_traffic(traffic).expect("traffic parses")];
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let opts = SimOptions {
            workers,
            ..SimOptions::default()
        };
        let _ = tx.send(simulate(&cfg, &specs, &opts));
    });
    rx.recv_timeout(StdDuration::from_secs(60))
        .expect("the run ends within a minute (it spun forever at the horizon)")
}

/// 65,000-byte packets on a 1 bit/s link take 520,000 s each: the
/// 35,476th leaves after 2⁶⁴ ns. 35,400 of them finish (the last one 583
/// years late); 35,500 reached the horizon and looped forever. A pass
/// proves the run stops with an error that names the horizon and the
/// pipe still holding packets, on one worker and on two.
#[test]
fn a_run_past_the_last_instant_stops_with_an_error() {
    let config = "pipe 1 config bw 1bit/s queue 65537\nadd 100 pipe 1 ip from any to any\n";
    let ok = sim_bounded(config, "cbr rate 1000pps size 65000B duration 35400ms", 1)
        .expect("35,400 packets leave before the horizon");
    let f = &ok.flows[0];
    assert_eq!((f.sent, f.received), (35_400, 35_400));
    let max_years = f.delay_ms.expect("delays").max / 1e3 / (365.25 * 86_400.0);
    assert!((583.0..584.0).contains(&max_years), "{max_years} years");
    for workers in [1, 2] {
        let e = sim_bounded(
            config,
            "cbr rate 1000pps size 65000B duration 35500ms",
            workers,
        )
        .expect_err("past the horizon");
        let SimError::Horizon { holding, .. } = &e else {
            panic!("{e}");
        };
        assert_eq!(holding.len(), 1, "{holding:?}");
        assert_eq!(holding[0].0, 1);
        assert!(holding[0].1 > 0);
        let m = e.to_string();
        assert!(
            m.starts_with("virtual time overflow: packets would leave after 18446744073709551615 ns (about 584 years)"),
            "{m}"
        );
        assert!(m.contains("pipe 1 holds"), "{m}");
        // The last departure before the horizon: packet 35,475 at 584.5
        // years.
        let SimError::Horizon { reached, .. } = &e else {
            unreachable!()
        };
        let years = reached.as_nanos() as f64 / 1e9 / (365.25 * 86_400.0);
        assert!((584.0..584.6).contains(&years), "reached {years} years");
    }
}

/// A source may start at any instant: one that sends until 0.2 s before
/// the last, through a delay of 1 s, has packets that would leave after
/// it (it spun as well). A pass proves any instant past the horizon stops
/// the run, whatever put it there, and that a source two seconds earlier
/// runs.
#[test]
fn a_source_near_the_last_instant_stops_with_an_error() {
    let link = "pipe 1 config bw 10Mbit/s delay 1s\nadd 100 pipe 1 ip from any to any\n";
    let e = sim_bounded(
        link,
        "cbr rate 100pps size 1000B duration 500ms start 18446744073s",
        1,
    );
    match e {
        Err(SimError::Horizon { holding, .. }) => assert_eq!(holding.len(), 1),
        other => panic!("{:?}", other.map(|r| r.flows[0].received)),
    }
    let r = sim_bounded(
        link,
        "cbr rate 100pps size 1000B duration 1s start 18446744071s",
        1,
    )
    .expect("leaves before the horizon");
    assert_eq!((r.flows[0].sent, r.flows[0].received), (100, 100));
}

/// A source that would send past the last instant lost the packets it
/// would have sent after it, without a word (71 of 100 sent). A pass
/// proves it is refused before the run, naming the source.
#[test]
fn a_source_sending_past_the_last_instant_is_refused() {
    let e = sim_bounded(
        "pipe 1 config bw 10Mbit/s\nadd 100 pipe 1 ip from any to any\n",
        "cbr rate 100pps size 1000B duration 1s start 18446744073s",
        1,
    )
    .expect_err("refused");
    assert!(matches!(e, SimError::Traffic { flow: 0, .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "--traffic #1: it would send until 1.000 s after its start at 18446744073.000 s, past the last instant virtual time can hold (18446744073709551615 ns, about 584 years)"
    );
}
