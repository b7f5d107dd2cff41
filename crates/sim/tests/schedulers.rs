//! Schedulers, flow queues and dynamic pipes end to end in virtual time
//! (dummynet-revisited §3.1 "dynamic pipes", §3.6 "packet scheduling",
//! Fig. 4): command-language text and traffic specs in, numbers out.

use pipelab_lang::{parse_traffic, Config};
use pipelab_sim::{simulate, Report, SimOptions};

fn sim(config: &str, traffic: &[String]) -> Report {
    let mut cfg = Config::new();
    cfg.apply_script(config).expect("config applies");
    let specs: Vec<_> = traffic
        .iter()
        .map(|t| parse_traffic(t).expect("traffic parses"))
        .collect();
    simulate(&cfg, &specs, &SimOptions::default()).expect("simulation runs")
}

fn within(x: f64, want: f64, rel: f64) -> bool {
    (x - want).abs() <= rel * want
}

/// Bytes each flow got delivered up to `until_s` is not in the report, so
/// shares are compared on delivered throughput while every source stays
/// backlogged (each offers more than its share for the whole run).
fn tput(r: &Report, i: usize) -> f64 {
    r.flows[i].throughput_bps
}

/// The §3.6 example: pipe 5 at 4 Mbit/s with a WF2Q+ scheduler, queue 10
/// (weight 20, UDP) and queue 8 (weight 10, one instance per source IP,
/// TCP from 10.8.5.0/24). With one UDP and two TCP sources, all
/// overloaded, the link splits 20:10:10: 2, 1 and 1 Mbit/s. A pass proves
/// the queue-to-scheduler binding, weights, and per-source instances of a
/// masked queue, each within 1 %.
#[test]
fn section_3_6_example_gives_two_to_one() {
    let config = "pipe 5 config bw 4Mbit/s\n\
                  sched 5 config type wf2q+\n\
                  queue 10 config weight 20 sched 5\n\
                  queue 8 config weight 10 sched 5 mask src-ip 0xffffffff\n\
                  add 1000 queue 10 udp from any to any\n\
                  add 1010 queue 8 tcp from 10.8.5.0/24 to any\n";
    let traffic = [
        "cbr rate 500pps size 1000B duration 10s proto udp from 10.0.0.1:1000 to 10.0.0.2:5001"
            .to_string(),
        "cbr rate 500pps size 1000B duration 10s proto tcp from 10.8.5.1:1000 to 10.0.0.2:80"
            .to_string(),
        "cbr rate 500pps size 1000B duration 10s proto tcp from 10.8.5.2:1000 to 10.0.0.2:80"
            .to_string(),
    ];
    let r = sim(config, &traffic);
    let (u, t1, t2) = (tput(&r, 0), tput(&r, 1), tput(&r, 2));
    assert!(within(u, 2e6, 0.01), "udp {u}");
    assert!(within(t1, 1e6, 0.01), "tcp1 {t1}");
    assert!(within(t2, 1e6, 0.01), "tcp2 {t2}");
    assert!(within(u / t1, 2.0, 0.01), "ratio {}", u / t1);
    let q8 = r
        .queues
        .iter()
        .find(|q| q.id == 8 && !q.default)
        .expect("queue 8");
    assert_eq!(q8.instances.created, 2, "one instance per source IP");
    let q10 = r
        .queues
        .iter()
        .find(|q| q.id == 10 && !q.default)
        .expect("queue 10");
    assert_eq!(
        q10.instances.created, 1,
        "an unmasked queue has one instance"
    );
}

/// `pipe 4 config mask src-ip 0x000000ff bw 1Mbit/s` with 10 sources
/// (10.0.0.1 .. 10.0.0.10) offering 2 Mbit/s each: 10 instances, each
/// delivering 1 Mbit/s within 1 % (a shared pipe would give 0.1 Mbit/s
/// each). A pass proves each masked key gets a full pipe of its own.
#[test]
fn dynamic_pipe_gives_each_source_its_own_1mbit() {
    let config =
        "pipe 4 config mask src-ip 0x000000ff bw 1Mbit/s\nadd 100 pipe 4 ip from any to any\n";
    let traffic: Vec<String> = (1..=10)
        .map(|i| {
            format!("cbr rate 250pps size 1000B duration 10s from 10.0.0.{i}:1000 to 10.0.1.1:80")
        })
        .collect();
    let r = sim(config, &traffic);
    for i in 0..10 {
        assert!(within(tput(&r, i), 1e6, 0.01), "flow {i}: {}", tput(&r, i));
    }
    let p = &r.pipes[0];
    let inst = p.instances.expect("a dynamic pipe");
    assert_eq!((inst.created, inst.overflow), (10, 0));
    assert_eq!(p.instance_list.len() as u32, inst.live);
    assert_eq!(p.arrivals, 10 * 2500, "totals add the instances");
}

/// DRR with 100 always-backlogged flows weighted 1..=100 through sim: over
/// 10 s each flow's delivered throughput is within 1 % of its weighted
/// share of the link (100 kbit/s per unit of weight, 505 Mbit/s in all).
/// A pass proves DRR's weights hold end to end (classifier → queue →
/// scheduler → link).
#[test]
fn drr_100_backlogged_flows_get_weighted_shares() {
    let mut config =
        String::from("pipe 1 config bw 505Mbit/s\nsched 1 config type drr quantum 1000\n");
    let mut traffic = Vec::new();
    for w in 1..=100u32 {
        // Room for two turns' worth of packets (a turn is `w` packets), so
        // each flow always has a full quantum's worth when its turn comes.
        let limit = 2 * w + 2;
        config.push_str(&format!(
            "queue {w} config weight {w} sched 1 queue {limit}\n"
        ));
        config.push_str(&format!(
            "add {} queue {w} udp from 10.0.0.{} to any\n",
            w * 10,
            w + 1
        ));
        // Offer 1.5 × the share (and a little more): always backlogged.
        let pps = w * 100_000 * 3 / 2 / 8000 + 2;
        traffic.push(format!(
            "cbr rate {pps}pps size 1000B duration 10s from 10.0.0.{}:1000 to 10.1.0.1:80",
            w + 1
        ));
    }
    let r = sim(&config, &traffic);
    for w in 1..=100u32 {
        let got = tput(&r, (w - 1) as usize);
        let want = w as f64 * 100_000.0;
        assert!(within(got, want, 0.01), "weight {w}: {got} vs {want}");
    }
}

/// Strict priority: queue 2 (weight 2) and queue 1 (weight 1) both
/// overloaded on a 1 Mbit/s pipe with `type prio`: the higher weight gets
/// the whole link, the lower nothing while the higher is backlogged. A
/// pass proves prio is strict end to end.
#[test]
fn prio_is_strict() {
    let config = "pipe 1 config bw 1Mbit/s\nsched 1 config type prio\n\
                  queue 1 config weight 1 sched 1\nqueue 2 config weight 2 sched 1\n\
                  add 100 queue 1 udp from 10.0.0.1 to any\nadd 200 queue 2 udp from 10.0.0.2 to any\n";
    let traffic = [
        "cbr rate 250pps size 1000B duration 5s from 10.0.0.1:1 to 10.0.0.9:9".to_string(),
        "cbr rate 250pps size 1000B duration 5s from 10.0.0.2:1 to 10.0.0.9:9".to_string(),
    ];
    let r = sim(config, &traffic);
    assert!(within(tput(&r, 1), 1e6, 0.01), "high {}", tput(&r, 1));
    let low = r
        .queues
        .iter()
        .find(|q| q.id == 1 && !q.default)
        .expect("queue 1");
    // The low flow gets at most the packet that found the link idle at
    // t = 0, then only what is left in its queue (50) after the high
    // flow stops.
    assert!(r.flows[0].received <= 51, "low {}", r.flows[0].received);
    assert_eq!(low.served, r.flows[0].received);
}

/// `buckets 1` bounds a dynamic pipe at 16 instances (dummynet's
/// `dn_max_ratio` × buckets). 20 always-backlogged sources: the first 16
/// get their own 1 Mbit/s instance, the other 4 share the overflow
/// instance, and every one of their 4 × 2500 packets is counted as
/// overflow. A pass proves the bound, the shared overflow instance and its
/// counter.
#[test]
fn instance_overflow_is_bounded_and_counted() {
    let config =
        "pipe 4 config mask src-ip 0x000000ff bw 1Mbit/s buckets 1\nadd 100 pipe 4 ip from any to any\n";
    let traffic: Vec<String> = (1..=20)
        .map(|i| {
            format!("cbr rate 250pps size 1000B duration 10s from 10.0.0.{i}:1000 to 10.0.1.1:80")
        })
        .collect();
    let r = sim(config, &traffic);
    let inst = r.pipes[0].instances.expect("a dynamic pipe");
    assert_eq!(inst.created, 17, "16 instances and the overflow instance");
    assert_eq!(inst.live, 17);
    assert_eq!(inst.overflow, 4 * 2500);
    for i in 0..16 {
        assert!(within(tput(&r, i), 1e6, 0.01), "flow {i}: {}", tput(&r, i));
    }
    let shared: u64 = (16..20).map(|i| r.flows[i].received_bytes).sum();
    let over = r.pipes[0]
        .instance_list
        .iter()
        .find(|p| p.key == "overflow")
        .expect("overflow instance");
    assert_eq!(over.departure_bytes, shared);
}

/// Ten sources send for 1 s, then an eleventh starts at 3 s. Its first
/// packet triggers the idle sweep (at most once per second): the ten
/// instances have held no packet and seen no arrival for over 1 s, so
/// they are freed, for a pipe's instances and for a queue's alike; their
/// counters stay in the totals. A pass proves idle expiry frees instances
/// without losing counts.
#[test]
fn idle_instances_expire() {
    let mut traffic: Vec<String> = (1..=10)
        .map(|i| {
            format!("cbr rate 250pps size 1000B duration 1s from 10.0.0.{i}:1000 to 10.0.1.1:80")
        })
        .collect();
    traffic.push(
        "cbr rate 250pps size 1000B duration 1s start 3s from 10.0.0.99:1000 to 10.0.1.1:80".into(),
    );
    let r = sim(
        "pipe 4 config mask src-ip 0x000000ff bw 1Mbit/s\nadd 100 pipe 4 ip from any to any\n",
        &traffic,
    );
    let inst = r.pipes[0].instances.expect("a dynamic pipe");
    assert_eq!((inst.created, inst.expired, inst.live), (11, 10, 1));
    assert_eq!(
        r.pipes[0].arrivals,
        11 * 250,
        "expired instances keep their counts"
    );
    let r = sim(
        "pipe 1 config bw 100Mbit/s\nqueue 7 config sched 1 mask src-ip 0xffffffff\n\
         add 100 queue 7 ip from any to any\n",
        &traffic,
    );
    let q = r
        .queues
        .iter()
        .find(|q| q.id == 7 && !q.default)
        .expect("queue 7");
    assert_eq!(
        (q.instances.created, q.instances.expired, q.instances.live),
        (11, 10, 1)
    );
    assert_eq!(q.arrivals, 11 * 250);
    assert_eq!(q.instance_list.len(), 1);
}
