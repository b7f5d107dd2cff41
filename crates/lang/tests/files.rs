//! The text formats a configuration names (distribution files, loss
//! traces, Mahimahi bandwidth traces, Dummynet MAC profiles, time-varying
//! Markov graphs) and the wireless words, read by `pipelab_lang::files`
//! and `WirelessSpec` with the language's units.
//!
//! Two kinds of proof: each format's example files give exactly the engine
//! objects they gave when the engine read the text itself (the values the
//! engine exposes, written out here), and a bad value in each format is
//! refused with the language's own error for that value, naming the file
//! and the line.

use std::collections::BTreeMap;

use pipelab_engine::models::{
    BwTrace, EmpiricalDelay, MarkovGraph, Modulation, Preamble, Probability, Profile,
    ProfileSampling, Standard, StateParams, WirelessConfig,
};
use pipelab_engine::time::{Duration, Instant, Rate};
use pipelab_lang::files::{
    parse_bw_trace, parse_distribution, parse_loss_trace, parse_markov_graph, parse_profile,
    TextError,
};
use pipelab_lang::units;
use pipelab_lang::{parse_line, Command, PipeSpec, WirelessSpec};

fn ok<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

fn p(x: f64) -> Probability {
    ok(Probability::new(x))
}

const MS: u64 = 1_000_000;

// ---- the example files of each format ----

const SAMPLES: &str = "# four samples\n1ms\n2ms\n2ms\n7.5\n12.5ms\n800us\n2s\n350ns\n";
const CDF: &str = "0.1 5ms\n0.5 10ms # middle\n0.9 12ms\n1 30ms\n";
const CDF_BARE: &str = "0 1\n0.25 2.5\n\n1 40\n";
const LOSS: &str =
    "# KauNet-style pattern\n17\n100-103, 5\n3-4 4-6 # overlapping\n@1.5s-2s\n@250-300ms\n@0-10us\n";
const TRACE: &str = "# comment\n1\n1\n\n3 # three\n";
const TRACE_LONG: &str = "0\n2\n5\n5\n12\n";
/// The paper's example (dummynet-revisited §3.7), with the unit its
/// comment intends.
const PAPER: &str = "name profile foo
bandwidth 2Mbit/s
loss-level 0.99
samples 5
prob delay # delay in us
0.2 100us
0.4 130us
0.5 130us
0.8 1500us
0.98 2000us
";
/// ipfw's own example profile: bare delays are milliseconds.
const IPFW: &str = "name bla_bla_bla\nsamples 100\nloss-level 0.86\nprob delay\n\
                    0 200 # minimum overhead is 200ms\n0.5 200\n0.5 300\n0.8 1000\n0.9 1300\n1 1300\n";
const REVERSED: &str = "DELAY PROB\n5 1\n1 0\n\tBW 8000\n";
/// Fig. 10 in miniature: a good and a bad state.
const TWO: &str = "# a two-state link
state good bw 11Mbit/s snr 25dB netload 1% collision 0 delay 2ms
state bad  bw 2Mbit/s loss 5% snr 6dB collision 0.06 delay 10ms
dwell good 0 1s 1 3s      # uniform 1..3 s, mean 2 s
dwell bad  0 500ms 1 1500ms  # mean 1 s
arc good good 0.5
arc good bad 0.5
arc bad good 1
";
const INITIAL: &str =
    "state a\nstate b plr 0.25\ninitial b\ndwell a 1 2s\ndwell b 0.5 1 1 1500\narc a b 1\narc b a 100%\n";
const WIRELESS: &[&str] = &[
    "wireless 802.11b rate 11Mbit/s snr 20dB netload 1% collision 0.06 retries 7",
    "profile 802.11b-11 cw 16",
    "wireless 802.11g rate 54Mbit/s preamble long ack-rate 24Mbit/s cwmax 512 overhead 40",
    "profile 802.11g-6 cw 2000",
    "wireless 802.11b rate 5.5Mbit/s snr 8.5dB cwmax 64 cw 8 preamble long",
    "wireless 802.11b rate 5.5Mbit/s snr -3.5dB netload 2.5% collision 6% retries 3 \
     cw 2048 cwmax 4096 preamble long ack-rate 2Mbit/s overhead 30",
];

/// Pass proves: distribution files of samples (every unit, a bare number
/// in ms) and of CDF points give the distributions they always gave.
#[test]
fn distribution_files_give_the_same_distributions() {
    let d = ok(parse_distribution(SAMPLES));
    let want = ok(EmpiricalDelay::from_samples(
        [
            MS,
            2 * MS,
            2 * MS,
            7_500_000,
            12_500_000,
            800_000,
            2_000_000_000,
            350,
        ]
        .map(Duration),
    ));
    assert_eq!(d, want);
    assert!(!d.is_cdf());
    assert_eq!(d.len(), 8);
    assert_eq!(d.quantile(0.0), Duration(350));
    assert_eq!(d.quantile(1.0), Duration(2_000_000_000));
    let c = ok(parse_distribution(CDF));
    let want = ok(EmpiricalDelay::from_cdf([
        (p(0.1), Duration(5 * MS)),
        (p(0.5), Duration(10 * MS)),
        (p(0.9), Duration(12 * MS)),
        (p(1.0), Duration(30 * MS)),
    ]));
    assert_eq!(c, want);
    assert!(c.is_cdf());
    assert_eq!(c.quantile(0.7), Duration(11 * MS));
    let b = ok(parse_distribution(CDF_BARE));
    let want = ok(EmpiricalDelay::from_cdf([
        (p(0.0), Duration(MS)),
        (p(0.25), Duration(2_500_000)),
        (p(1.0), Duration(40 * MS)),
    ]));
    assert_eq!(b, want);
}

/// Pass proves: a loss trace lists the same packets and intervals (merged)
/// as before.
#[test]
fn loss_traces_give_the_same_traces() {
    let t = ok(parse_loss_trace(LOSS));
    assert_eq!(t.packet_ranges(), &[(3, 6), (17, 17), (100, 103)]);
    let intervals: Vec<(Instant, Instant)> = t.time_intervals().collect();
    assert_eq!(
        intervals,
        vec![
            (Instant(0), Instant(10_000)),
            (Instant(250 * MS), Instant(300 * MS)),
            (Instant(1_500 * MS), Instant(2_000 * MS)),
        ]
    );
    assert_eq!(t.listed_packets(), 9);
    assert!(t.drops_packet(17) && !t.drops_packet(18));
    assert!(t.drops_at(Instant(1_999 * MS)) && !t.drops_at(Instant(2_000 * MS)));
    let empty = ok(parse_loss_trace("# nothing\n"));
    assert_eq!(empty.listed_packets(), 0);
    assert_eq!(empty.intervals(), 0);
}

/// Pass proves: a Mahimahi trace's bare numbers are millisecond timestamps,
/// as always: the same offsets, period and rate.
#[test]
fn bandwidth_traces_give_the_same_traces() {
    let t = ok(parse_bw_trace(TRACE));
    let offsets: Vec<Duration> = t.offsets().collect();
    assert_eq!(offsets, [1, 1, 3].map(|m| Duration(m * MS)));
    assert_eq!(t.period(), Duration(3 * MS));
    assert_eq!(t.opportunities_per_period(), 3);
    assert_eq!(t.mean_rate(), Rate::from_bps(12_000_000));
    assert_eq!(t, ok(BwTrace::new([1, 1, 3].map(|m| Duration(m * MS)))));
    let long = ok(parse_bw_trace(TRACE_LONG));
    assert_eq!(
        long,
        ok(BwTrace::new([0, 2, 5, 5, 12].map(|m| Duration(m * MS))))
    );
    assert_eq!(long.to_string(), TRACE_LONG);
    // Units are now accepted, and print back.
    let fine = ok(parse_bw_trace("1\n2500us\n3ms\n"));
    assert_eq!(fine.to_string(), "1\n2500us\n3\n");
    assert_eq!(ok(parse_bw_trace(&fine.to_string())), fine);
}

/// Pass proves: MAC profiles keep their documented meaning (bare delays in
/// milliseconds, `bw` a rate, points sorted): the same name, bandwidth,
/// loss level, samples, points and dummynet table as before.
#[test]
fn profiles_give_the_same_profiles() {
    let paper = ok(parse_profile(PAPER));
    assert_eq!(paper.name(), Some("profile foo"));
    assert_eq!(paper.bandwidth(), Some(Rate::from_bps(2_000_000)));
    assert_eq!(paper.loss_level(), 0.99);
    assert_eq!(paper.samples(), 5);
    let pts: Vec<(f64, u64)> = paper
        .points()
        .iter()
        .map(|x| (x.prob, x.delay.as_nanos()))
        .collect();
    assert_eq!(
        pts,
        vec![
            (0.2, 100_000),
            (0.4, 130_000),
            (0.5, 130_000),
            (0.8, 1_500_000),
            (0.98, 2_000_000)
        ]
    );
    let table: Vec<u64> = paper.dummynet_table().map(Duration::as_nanos).collect();
    // ipfw's interpolation over 5 entries (entries outside the corners
    // stay 0), as the engine always built it.
    assert_eq!(table, vec![0, 100_000, 0, 586_667, 0]);
    assert_eq!(ok(parse_profile(&paper.to_string())), paper);

    let ipfw = ok(parse_profile(IPFW)).with_sampling(ProfileSampling::DummynetTable);
    assert_eq!(ipfw.name(), Some("bla_bla_bla"));
    assert_eq!(ipfw.bandwidth(), None);
    assert_eq!((ipfw.loss_level(), ipfw.samples()), (0.86, 100));
    let t: Vec<Duration> = ipfw.dummynet_table().collect();
    assert_eq!(t[0], Duration(200 * MS));
    assert_eq!(t[50], Duration(300 * MS));
    assert_eq!(t[65], Duration(650 * MS));
    assert_eq!(t[95], Duration(1300 * MS));

    let rev = ok(parse_profile(REVERSED));
    assert_eq!(rev.bandwidth(), Some(Rate::from_bps(8_000)));
    assert_eq!((rev.loss_level(), rev.samples()), (1.0, 100));
    assert_eq!(rev.points()[0].delay, Duration(MS));
    assert_eq!(rev.quantile(0.5), Duration(3 * MS));

    let mut b = Profile::builder();
    ok(b.bandwidth(Rate::from_bps(8_000)));
    ok(b.point(p(1.0), Duration(5 * MS)));
    ok(b.point(p(0.0), Duration(MS)));
    assert_eq!(ok(b.build()), rev);
}

fn params(g: &MarkovGraph, name: &str) -> Option<StateParams> {
    g.index_of(name).map(|i| *g.params(i))
}

/// Pass proves: Markov graphs keep every state's parameters (rates, a
/// fraction or a percentage, dB, a bare delay in ms), dwell corners, arcs
/// and initial state.
#[test]
fn markov_graphs_give_the_same_graphs() {
    let g = ok(parse_markov_graph(TWO));
    assert_eq!((g.len(), g.initial()), (2, 0));
    assert_eq!((g.name(0), g.name(1)), ("good", "bad"));
    assert_eq!(
        params(&g, "good"),
        Some(StateParams {
            bandwidth: Some(Rate::from_bps(11_000_000)),
            loss: None,
            snr_db: Some(25.0),
            netload: Some(0.01),
            collision: Some(0.0),
            delay: Some(Duration(2 * MS)),
        })
    );
    assert_eq!(
        params(&g, "bad"),
        Some(StateParams {
            bandwidth: Some(Rate::from_bps(2_000_000)),
            loss: Some(0.05),
            snr_db: Some(6.0),
            netload: None,
            collision: Some(0.06),
            delay: Some(Duration(10 * MS)),
        })
    );
    let dwell: Vec<(f64, Duration)> = g.dwell(0).points().collect();
    assert_eq!(
        dwell,
        vec![(0.0, Duration(1_000 * MS)), (1.0, Duration(3_000 * MS))]
    );
    assert_eq!(g.dwell(1).mean_ns(), 1e9);
    assert_eq!(g.arcs(0), &[(0, 0.5), (1, 0.5)]);
    assert_eq!(g.arcs(1), &[(0, 1.0)]);
    assert_eq!(ok(parse_markov_graph(&g.to_string())), g);

    let h = ok(parse_markov_graph(INITIAL));
    assert_eq!(h.initial(), 1);
    assert_eq!(h.params(1).loss, Some(0.25));
    let dwell: Vec<(f64, Duration)> = h.dwell(1).points().collect();
    assert_eq!(
        dwell,
        vec![(0.5, Duration(MS)), (1.0, Duration(1_500 * MS))]
    );
    assert_eq!(h.arcs(1), &[(0, 1.0)]);
}

/// Pass proves: the wireless words give the same links as before (every
/// word, `cw` above the default `cwmax`, `cw` and `cwmax` in either
/// order), and a link's words print back to the same link.
#[test]
fn wireless_words_give_the_same_links() {
    let link = |words: &str| -> WirelessConfig {
        match parse_line(&format!("pipe 1 config {words}")) {
            Ok(Some(Command::PipeConfig { spec, .. })) => match spec.wireless {
                Some(w) => ok(w.to_config()),
                None => panic!("{words}: no wireless link"),
            },
            other => panic!("{words}: {other:?}"),
        }
    };
    let b = link(WIRELESS[0]);
    assert_eq!(b.modulation(), Modulation::Cck11);
    assert_eq!(b.snr_db(), Some(20.0));
    assert_eq!((b.netload(), b.collision(), b.retries()), (0.01, 0.06, 7));
    assert_eq!((b.cw(), b.cwmax(), b.overhead()), (32, 1024, 36));
    assert_eq!(b.to_string(), WIRELESS[0]);
    let want = ok(ok(ok(
        ok(WirelessConfig::new(Standard::B, Rate::from_bps(11_000_000))).with_snr_db(20.0),
    )
    .with_netload(0.01))
    .with_collision(0.06));
    assert_eq!(b, want);

    let p11 = link(WIRELESS[1]);
    assert_eq!(
        (p11.modulation(), p11.cw(), p11.cwmax()),
        (Modulation::Cck11, 16, 1024)
    );
    assert_eq!(p11.snr_db(), None);

    let g = link(WIRELESS[2]);
    assert_eq!(g.modulation(), Modulation::Ofdm54);
    assert_eq!(g.ack_modulation(), Modulation::Ofdm24);
    assert_eq!((g.cw(), g.cwmax(), g.overhead()), (16, 512, 40));
    assert_eq!(g.preamble(), Preamble::Long);

    let wide = link(WIRELESS[3]);
    assert_eq!((wide.cw(), wide.cwmax()), (2000, 2000));

    let full = link(WIRELESS[5]);
    assert_eq!(full.snr_db(), Some(-3.5));
    assert_eq!((full.netload(), full.collision()), (0.025, 0.06));
    assert_eq!((full.cw(), full.cwmax(), full.retries()), (2048, 4096, 3));
    assert_eq!(full.ack_modulation(), Modulation::Dqpsk2);
    assert_eq!(full.overhead(), 30);

    let cck = link(WIRELESS[4]);
    assert_eq!(cck.modulation(), Modulation::Cck5_5);
    assert_eq!((cck.cw(), cck.cwmax()), (8, 64));
    assert_eq!(cck.snr_db(), Some(8.5));
    assert_eq!(cck.preamble(), Preamble::Long);

    for words in WIRELESS {
        let cfg = link(words);
        let again = link(&cfg.to_string());
        assert_eq!(again.to_string(), cfg.to_string(), "{words}");
        if cfg.standard() == Standard::B {
            // (802.11g ignores the preamble, and does not print it.)
            assert_eq!(again, cfg, "{words}");
        }
    }
}

/// Every format's reader, by the parameter that names its file.
fn read(param: &str, text: &str) -> Result<(), TextError> {
    match param {
        "distribution" => parse_distribution(text).map(|_| ()),
        "loss" => parse_loss_trace(text).map(|_| ()),
        "bw" => parse_bw_trace(text).map(|_| ()),
        "profile" => parse_profile(text).map(|_| ()),
        "timevarying" => parse_markov_graph(text).map(|_| ()),
        other => panic!("no format for {other}"),
    }
}

/// Pass proves: a bad value in each format is refused with exactly the
/// language's error for that value (as `units` words it, hint included),
/// naming the file and the line, through the pipe's configuration.
#[test]
fn a_bad_value_gives_the_languages_error_with_file_and_line() {
    let rate = |w: &str| units::parse_rate(w).map(|_| ()).map_err(|e| e.to_string());
    let delay = |w: &str| units::parse_delay(w).map(|_| ()).map_err(|e| e.to_string());
    let prob = |w: &str| {
        units::parse_probability(w)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let db = |w: &str| units::parse_db(w).map(|_| ()).map_err(|e| e.to_string());
    let loss_rate = |w: &str| {
        units::parse_loss_rate(w)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    type Case<'a> = (&'a str, &'a str, &'a str, usize, Result<(), String>);
    let cases: Vec<Case> = vec![
        // (words, file, text, line, the language's verdict on the value)
        (
            "delay 5ms distribution file:d.txt",
            "d.txt",
            "1ms\n2parsecs\n",
            2,
            delay("2parsecs"),
        ),
        (
            "delay 5ms distribution file:d.txt",
            "d.txt",
            "1ms\n\n-2ms\n",
            3,
            delay("-2ms"),
        ),
        (
            "delay 5ms distribution file:d.txt",
            "d.txt",
            "1ms\n2 sec\n",
            2,
            Err("a `P VALUE` point in a file of samples (first sample at line 1)".into()),
        ),
        (
            "delay 5ms distribution file:d.txt",
            "d.txt",
            "0.5 1ms\n1.5 2ms\n",
            2,
            prob("1.5"),
        ),
        (
            "delay 5ms distribution file:d.txt",
            "d.txt",
            "0.5 1ms\n1 2Secondes\n",
            2,
            delay("2Secondes"),
        ),
        (
            "loss trace:l.txt",
            "l.txt",
            "1\n@1s-2secondes\n",
            2,
            delay("2secondes"),
        ),
        (
            "bw trace:t.trace",
            "t.trace",
            "1\n2\nfast\n",
            3,
            delay("fast"),
        ),
        ("bw trace:t.trace", "t.trace", "1\n-2\n", 2, delay("-2")),
        (
            "profile p.prof",
            "p.prof",
            "bw 2Mbps\nprob delay\n0 1\n1 2\n",
            1,
            rate("2Mbps"),
        ),
        (
            "profile p.prof",
            "p.prof",
            "bw 1KBIT/s\nprob delay\n0 1\n1 2\n",
            1,
            rate("1KBIT/s"),
        ),
        (
            "profile p.prof",
            "p.prof",
            "loss-level 1.5\nprob delay\n0 1\n1 2\n",
            1,
            prob("1.5"),
        ),
        (
            "profile p.prof",
            "p.prof",
            "prob delay\n0 1\n1 2minutes\n",
            3,
            delay("2minutes"),
        ),
        (
            "profile p.prof",
            "p.prof",
            "prob delay\n0 1\n1.25 2\n",
            3,
            prob("1.25"),
        ),
        (
            "bw 1Mbit/s timevarying g.markov",
            "g.markov",
            "state a bw 11Mbps\n",
            1,
            rate("11Mbps"),
        ),
        (
            "bw 1Mbit/s timevarying g.markov",
            "g.markov",
            "state a loss 5\n",
            1,
            loss_rate("5"),
        ),
        (
            "bw 1Mbit/s timevarying g.markov",
            "g.markov",
            "state a delay 3parsecs\n",
            1,
            delay("3parsecs"),
        ),
        (
            "wireless 802.11b rate 11Mbit/s timevarying g.markov",
            "g.markov",
            "state a snr loud\n",
            1,
            db("loud"),
        ),
        (
            "bw 1Mbit/s timevarying g.markov",
            "g.markov",
            "state a\ndwell a 1 5seconds\n",
            2,
            delay("5seconds"),
        ),
        (
            "bw 1Mbit/s timevarying g.markov",
            "g.markov",
            "state a\ndwell a 1 1s\narc a a 2\n",
            3,
            prob("2"),
        ),
    ];
    for (words, file, text, line, verdict) in cases {
        let spec: PipeSpec = match parse_line(&format!("pipe 1 config {words}")) {
            Ok(Some(Command::PipeConfig { spec, .. })) => spec,
            other => panic!("{words}: {other:?}"),
        };
        let files: BTreeMap<&str, &str> = [(file, text)].into();
        let mut load = |path: &str| {
            files
                .get(path)
                .map(|t| t.to_string())
                .ok_or_else(|| format!("no file {path}"))
        };
        let e = match spec.to_config_with(&mut load) {
            Ok(_) => panic!("{words} with {text:?}: accepted"),
            Err(e) => e,
        };
        let why = match verdict {
            Ok(()) => panic!("{words}: the language accepts the value"),
            Err(why) => why,
        };
        let param = e.param;
        assert_eq!(
            e.to_string(),
            format!("{param}: '{file}': line {line}: {why}"),
            "{text:?}"
        );
        // The format's reader alone says the same, with the line.
        assert_eq!(
            read(param, text),
            Err(TextError {
                line: Some(line),
                message: why.clone()
            })
        );
    }
}

/// Pass proves: a wireless value is read exactly as the same value after
/// `bw` or `plr`: refused with the same message, hint and column (`rate
/// 11Mbps` as `bw 11Mbps`), or accepted by both (`netload 1e-2` as `plr
/// 1e-2`).
#[test]
fn wireless_values_are_refused_as_anywhere_else() {
    for (wireless, same) in [
        (
            "pipe 1 config wireless 802.11b rate 11Mbps",
            "pipe 1 config bw 11Mbps",
        ),
        (
            "pipe 1 config wireless 802.11b rate 11M",
            "pipe 1 config bw 11M",
        ),
        (
            "pipe 1 config wireless 802.11g rate 54Mbit/s ack-rate 6Mbps",
            "pipe 1 config bw 6Mbps",
        ),
        (
            "pipe 1 config wireless 802.11b rate 11Mbit/s collision 150%",
            "pipe 1 config plr 150%",
        ),
        (
            "pipe 1 config profile 802.11g-54 netload 1e-2",
            "pipe 1 config plr 1e-2",
        ),
    ] {
        let (a, b) = match (parse_line(wireless), parse_line(same)) {
            (Err(a), Err(b)) => (a, b),
            (Ok(_), Ok(_)) => continue,
            other => panic!("{wireless} / {same}: {other:?}"),
        };
        assert_eq!((&a.message, &a.hint), (&b.message, &b.hint), "{wireless}");
        assert_eq!(a.word, b.word);
        assert_eq!(
            a.column as usize,
            wireless.rfind(&a.word).map_or(0, |i| i + 1),
            "{wireless}"
        );
    }
    assert!(WirelessSpec::profile("802.11b-5.5").is_some());
    assert!(WirelessSpec::profile("802.11b-7").is_none());
}

/// Pass proves: words that make no link are refused (unknown standard or
/// profile, a rate the standard lacks, values out of range, unknown
/// words).
#[test]
fn bad_wireless_words_are_refused() {
    for words in [
        "",
        "wireless 802.11b rate 54Mbit/s",
        "wireless 802.11n rate 11Mbit/s",
        "wireless 802.11b 11Mbit/s",
        "wireless 802.11b rate 11Mbit/s netload 100%",
        "wireless 802.11b rate 11Mbit/s collision 1.5",
        "wireless 802.11b rate 11Mbit/s cw 0",
        "wireless 802.11b rate 11Mbit/s cwmax 8",
        "wireless 802.11b rate 11Mbit/s ack-rate 6Mbit/s",
        "wireless 802.11b rate 11Mbit/s retries -1",
        "wireless 802.11b rate 11Mbit/s preamble medium",
        "wireless 802.11b rate 11Mbit/s frobnicate 3",
        "profile 802.11b-12",
        "profile whatever",
    ] {
        let w: Vec<&str> = words.split_whitespace().collect();
        let spec = WirelessSpec {
            words: w
                .chunks(2)
                .map(|kv| (kv[0].to_string(), kv.get(1).unwrap_or(&"").to_string()))
                .collect(),
        };
        assert!(spec.to_config().is_err(), "{words:?}");
    }
}
