//! Host mode with real traffic: this host's packets to a test namespace go
//! through the netfilter queue and come out at their emulated time.
//!
//! Each test makes its own veth pair to a namespace with its own /30 in
//! 198.18.0.0/15 (the benchmarking range) and starts the plane scoped to
//! that /30, so nothing else of the machine's traffic is ever queued. Every
//! nftables table and link a test creates is removed on exit, also on
//! failure, and removed at start if an earlier run left it.

use pipelab_io::clock::monotonic_ns;
use pipelab_io::netlink::Netlink;
use pipelab_io::netns::NetNs;
use pipelab_io::runner::RunnerOptions;
use pipelab_lang::{Config, IpNet};
use pipelab_modes::host::{remove_table, rules_installed, HostOptions, HostPlane};
use std::io::{BufRead, BufReader};
use std::net::{IpAddr, Ipv4Addr, UdpSocket};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

static SERIAL: Mutex<()> = Mutex::new(());

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// The serialisation guard, or `None` (skipped) when not root; in CI not
/// being root fails.
fn live() -> Option<MutexGuard<'static, ()>> {
    let g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Without root these tests are built ignored (build.rs); a build
    // that runs them (as root, or PIPELAB_LIVE=1) without root is a
    // mistake to report, never a silent pass.
    assert!(
        is_root(),
        "live tests need root (CAP_NET_ADMIN, CAP_NET_RAW): run them as root, or build without PIPELAB_LIVE=1 to have them ignored"
    );
    Some(g)
}

fn table_exists(table: &str) -> bool {
    rules_installed(table)
}

/// A namespace behind a veth pair: the host side is 198.18.K.1/30, the
/// namespace side 198.18.K.2/30. Dropping it removes the link, the
/// namespace and the nftables table `table`.
struct TestNet {
    ns: NetNs,
    host_if: String,
    table: String,
    net: IpNet,
    peer: Ipv4Addr,
}

impl TestNet {
    fn new(k: u8, table: &str) -> TestNet {
        let host_if = format!("plhost{k}");
        let _ = remove_table(table);
        let nl = Netlink::connect().expect("netlink");
        if let Ok(i) = nl.index(&host_if) {
            let _ = nl.delete(i);
        }
        let ns = NetNs::create().expect("namespace");
        let t = TestNet {
            ns,
            host_if: host_if.clone(),
            table: table.to_string(),
            net: IpNet::new(IpAddr::V4(Ipv4Addr::new(198, 18, k, 0)), 30).expect("net"),
            peer: Ipv4Addr::new(198, 18, k, 2),
        };
        let peer_tmp = format!("plpeer{k}");
        nl.add_veth(&host_if, &peer_tmp).expect("veth");
        let pi = nl.index(&peer_tmp).expect("peer index");
        nl.move_to_ns(pi, t.ns.fd(), "eth0").expect("move peer");
        let hi = nl.index(&host_if).expect("host index");
        nl.add_addr(hi, IpAddr::V4(Ipv4Addr::new(198, 18, k, 1)), 30)
            .expect("host address");
        nl.up(hi, None).expect("host up");
        t.ns.run(move || {
            let nl = Netlink::connect()?;
            nl.loopback_up()?;
            let i = nl.index("eth0")?;
            nl.add_addr(i, IpAddr::V4(Ipv4Addr::new(198, 18, k, 2)), 30)?;
            nl.up(i, None)
        })
        .expect("namespace side");
        // Resolve the neighbour once, before any plane runs.
        let _ = ping(&[], t.peer, 1, "0.2");
        t
    }

    fn plane(&self, queue_num: u16) -> HostPlane {
        HostPlane::start_scoped(
            HostOptions {
                queue_num,
                runner: RunnerOptions {
                    priority: pipelab_io::runner::Priority::Realtime,
                    ..RunnerOptions::default()
                },
                table: self.table.clone(),
                ..HostOptions::default()
            },
            &[self.net],
        )
        .expect("host plane starts")
    }
}

impl Drop for TestNet {
    fn drop(&mut self) {
        let _ = remove_table(&self.table);
        if let Ok(nl) = Netlink::connect() {
            if let Ok(i) = nl.index(&self.host_if) {
                let _ = nl.delete(i);
            }
        }
    }
}

fn config(script: &str) -> Config {
    let mut c = Config::default();
    c.apply_script(script).expect("valid configuration");
    c
}

/// Ping results: counts, and round-trip times in ms (min, median, max).
/// The median, not the mean, is what the tests bound: a shared virtual
/// machine stalls every thread, real-time or not, for tens of ms now and
/// then (a `SCHED_FIFO` 1 ms sleep loop sees it too).
#[derive(Debug)]
struct PingResult {
    sent: u32,
    received: u32,
    min: f64,
    median: f64,
    max: f64,
}

/// Run `ping` (after `prefix`, e.g. `setpriv ...`) and parse its summary.
fn ping(prefix: &[&str], to: Ipv4Addr, count: u32, interval: &str) -> PingResult {
    // At real-time priority, as the plane's runner: on a loaded machine
    // the scheduler would otherwise add milliseconds to user-to-user times.
    let mut argv: Vec<String> = ["chrt", "-f", "5"].map(String::from).to_vec();
    argv.extend(prefix.iter().map(|s| s.to_string()));
    argv.extend(
        [
            "ping",
            // User-to-user times: the kernel stamps a reply when it
            // arrives, before the input hook holds it.
            "-U",
            "-n",
            "-W",
            "1",
            "-c",
            &count.to_string(),
            "-i",
            interval,
            &to.to_string(),
        ]
        .map(String::from),
    );
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .output()
        .expect("ping runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut r = PingResult {
        sent: 0,
        received: 0,
        min: f64::NAN,
        median: f64::NAN,
        max: f64::NAN,
    };
    let mut rtts: Vec<f64> = Vec::new();
    for line in text.lines() {
        if line.contains("packets transmitted") {
            let nums: Vec<u32> = line
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|w| w.parse().ok())
                .collect();
            r.sent = nums.first().copied().unwrap_or(0);
            r.received = nums.get(1).copied().unwrap_or(0);
        }
        if let Some(v) = line.split("time=").nth(1) {
            if let Some(t) = v.split_whitespace().next().and_then(|t| t.parse().ok()) {
                rtts.push(t);
            }
        }
    }
    rtts.sort_by(f64::total_cmp);
    if let (Some(a), Some(b)) = (rtts.first(), rtts.last()) {
        (r.min, r.median, r.max) = (*a, rtts[rtts.len() / 2], *b);
    }
    r
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn ping_rtt_is_twice_the_pipe_delay() {
    let Some(_g) = live() else { return };
    let net = TestNet::new(1, "pipelab_test_rtt");
    let plane = net.plane(7411);
    assert!(table_exists(&net.table));
    // The same path undelayed first: through the queue to user space and
    // back with no configuration (the default rule accepts). That queue
    // costs 0.05–0.6 ms of a round trip on this machine from one hour to
    // the next, pipes or not.
    let undelayed = ping(&[], net.peer, 20, "0.05");
    assert_eq!(undelayed.received, 20, "{undelayed:?}");
    plane
        .apply(&config(
            "pipe 1 config delay 20ms\nadd 100 pipe 1 ip from any to any\n",
        ))
        .expect("applies");
    // Request (output hook) and reply (input hook) each wait 20 ms. A
    // stall of this shared machine may move the median: one more round
    // then, and every packet of both counted below.
    let mut p = ping(&[], net.peer, 20, "0.05");
    let mut rounds = 1;
    let bound = 40.5 + undelayed.median;
    if p.median > bound {
        eprintln!("{p:?}: once more");
        p = ping(&[], net.peer, 20, "0.05");
        rounds += 1;
    }
    let s = plane.stats();
    eprintln!(
        "{p:?}, undelayed {undelayed:?}\n{}",
        serde_json::to_string(&s).unwrap_or_default()
    );
    assert_eq!((p.sent, p.received), (20, 20), "{p:?}");
    assert!(p.min >= 40.0, "{p:?}");
    assert!(p.median <= bound, "{p:?}, undelayed {undelayed:?}");
    let n = 40 * rounds;
    // The undelayed round: 40 packets more through the runner, by the
    // default rule.
    assert_eq!(s.verdicts.accepted, n + 40, "{s:?}");
    assert_eq!(s.verdicts.dropped, 0, "{s:?}");
    assert_eq!(s.verdicts.held, 0, "{s:?}");
    assert_eq!(s.runner.delivered, n + 40, "{s:?}");
    assert_eq!(s.rules.first().map(|r| (r.0, r.1)), Some((100, n)));
    assert_eq!(s.pipes.first().map(|p| p.departures), Some(n));
    plane.stop().expect("stops");
    assert!(!table_exists(&net.table), "stop removes the table");
    // Unshaped again.
    let p = ping(&[], net.peer, 5, "0.05");
    assert!(p.received == 5 && p.median < 5.0, "{p:?}");
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn reconfiguring_under_a_flow_loses_nothing_and_acts_within_one_rtt() {
    let Some(_g) = live() else { return };
    let net = TestNet::new(2, "pipelab_test_rc");
    let plane = net.plane(7412);
    let script = |d: u32| {
        format!("pipe 1 config delay {d}ms\nadd 100 pipe 1 udp from any to 198.18.2.2 9000\n")
    };
    plane.apply(&config(&script(10))).expect("applies");

    // Receiver in the namespace: (sequence, one-way delay in ns).
    const COUNT: u64 = 1500;
    let rx = net
        .ns
        .run(|| UdpSocket::bind("198.18.2.2:9000"))
        .expect("receiver socket");
    rx.set_read_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    let receiver = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        while let Ok(n) = rx.recv(&mut buf) {
            let now = monotonic_ns();
            if n >= 16 {
                let seq = u64::from_be_bytes(buf[..8].try_into().unwrap_or_default());
                let t = u64::from_be_bytes(buf[8..16].try_into().unwrap_or_default());
                got.push((seq, t, now.saturating_sub(t)));
            }
        }
        got
    });
    let tx = UdpSocket::bind("198.18.2.1:0").expect("sender socket");
    tx.connect("198.18.2.2:9000").expect("connect");
    let start = monotonic_ns();
    let mut t_apply = (0u64, 0u64);
    for seq in 0..COUNT {
        let due = start + seq * 1_000_000;
        let now = monotonic_ns();
        if due > now {
            std::thread::sleep(Duration::from_nanos(due - now));
        }
        if seq == COUNT / 3 {
            // Reconfigure from the sending thread between two packets: the
            // packets queued in the pipe stay, later ones see 50 ms.
            let a = monotonic_ns();
            plane.apply(&config(&script(50))).expect("reconfigures");
            t_apply = (a, monotonic_ns());
        }
        let mut pkt = [0u8; 64];
        pkt[..8].copy_from_slice(&seq.to_be_bytes());
        pkt[8..16].copy_from_slice(&monotonic_ns().to_be_bytes());
        tx.send(&pkt).expect("send");
    }
    let got = receiver.join().expect("receiver");
    let s = plane.stats();
    eprintln!("{}", serde_json::to_string(&s).unwrap_or_default());
    plane.stop().expect("stops");

    let mut seqs: Vec<u64> = got.iter().map(|g| g.0).collect();
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(got.len() as u64, COUNT, "every packet arrives exactly once");
    assert_eq!(seqs.len() as u64, COUNT, "no duplicates");
    let apply_ms = (t_apply.1 - t_apply.0) as f64 / 1e6;
    eprintln!("apply took {apply_ms:.3} ms");
    // Visible within one RTT of the old configuration (10 ms): apply
    // returns well within it, and every packet sent after it sees 50 ms.
    assert!(apply_ms < 10.0, "apply took {apply_ms} ms");
    let ms = |d: u64| d as f64 / 1e6;
    let before: Vec<f64> = got
        .iter()
        .filter(|g| g.1 < t_apply.0)
        .map(|g| ms(g.2))
        .collect();
    let after: Vec<f64> = got
        .iter()
        .filter(|g| g.1 > t_apply.1)
        .map(|g| ms(g.2))
        .collect();
    assert!(!before.is_empty() && !after.is_empty());
    // (min, median, max) of one-way delays.
    let summary = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        (v[0], v[v.len() / 2], v[v.len() - 1])
    };
    let (bmin, bmed, bmax) = summary(&before);
    let (amin, amed, amax) = summary(&after);
    eprintln!(
        "sent before apply: {} packets, {bmin:.3}/{bmed:.3}/{bmax:.3} ms; \
         after: {} packets, {amin:.3}/{amed:.3}/{amax:.3} ms (min/median/max)",
        before.len(),
        after.len()
    );
    // Every packet sent after apply returned has the new delay; every one
    // sent before it started, the old one.
    assert!(bmin >= 10.0 && bmed < 10.5, "before {bmin}/{bmed}/{bmax}");
    assert!(amin >= 50.0 && amed < 50.5, "after {amin}/{amed}/{amax}");
    assert!(s.lateness.p50_us < 100.0, "{:?}", s.lateness);
    assert_eq!(s.verdicts.dropped, 0, "{s:?}");
}

/// Run by `fail_closed_after_kill` as its child: start a plane from the
/// environment's `PIPELAB_HOST_CHILD` (`QUEUE TABLE NET`), say READY, wait
/// to be killed.
#[test]
#[ignore = "helper: the child process of fail_closed_after_kill"]
fn child_plane() {
    let Ok(spec) = std::env::var("PIPELAB_HOST_CHILD") else {
        return;
    };
    let w: Vec<&str> = spec.split_whitespace().collect();
    let queue_num: u16 = w[0].parse().expect("queue");
    let (addr, prefix) = w[2].split_once('/').expect("net");
    let net =
        IpNet::new(addr.parse().expect("addr"), prefix.parse().expect("prefix")).expect("net");
    let plane = HostPlane::start_scoped(
        HostOptions {
            queue_num,
            runner: RunnerOptions {
                priority: pipelab_io::runner::Priority::Realtime,
                ..RunnerOptions::default()
            },
            table: w[1].to_string(),
            ..HostOptions::default()
        },
        &[net],
    )
    .expect("plane");
    plane
        .apply(&config(
            "pipe 1 config delay 5ms\nadd 100 pipe 1 ip from any to any\n",
        ))
        .expect("apply");
    println!("READY");
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn fail_closed_after_kill() {
    let Some(_g) = live() else { return };
    let net = TestNet::new(3, "pipelab_test_fc");
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "child_plane", "--ignored", "--nocapture"])
        .env(
            "PIPELAB_HOST_CHILD",
            format!("7413 {} {}", net.table, net.net),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("child");
    let out = child.stdout.take().expect("stdout");
    let mut ready = false;
    for line in BufReader::new(out).lines() {
        match line {
            Ok(l) if l.trim() == "READY" => {
                ready = true;
                break;
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    assert!(ready, "the child plane started");
    let shaped = ping(&[], net.peer, 5, "0.05");
    assert!(shaped.received == 5 && shaped.min >= 10.0, "{shaped:?}");

    child.kill().expect("kill -9");
    let _ = child.wait();
    assert!(table_exists(&net.table), "the rules stay after a crash");
    let dead = ping(&[], net.peer, 5, "0.1");
    eprintln!("while no plane runs: {dead:?}");
    assert_eq!(dead.sent, 5);
    assert_eq!(dead.received, 0, "fail-closed: nothing passes unshaped");

    remove_table(&net.table).expect("cleanup");
    assert!(!table_exists(&net.table));
    let after = ping(&[], net.peer, 5, "0.05");
    assert!(after.received == 5 && after.median < 5.0, "{after:?}");
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn uid_rule_delays_only_that_users_traffic() {
    let Some(_g) = live() else { return };
    let net = TestNet::new(4, "pipelab_test_uid");
    let plane = net.plane(7414);
    plane
        .apply(&config(
            "pipe 1 config delay 30ms\nadd 100 pipe 1 ip from any to 198.18.4.0/30 uid 65534\n",
        ))
        .expect("applies");
    let root = ping(&[], net.peer, 10, "0.05");
    // `ping` keeps CAP_NET_RAW from its file capabilities: its raw socket
    // belongs to uid 65534.
    let user = ping(
        &[
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ],
        net.peer,
        10,
        "0.2",
    );
    eprintln!("root: {root:?}\nuid 65534: {user:?}");
    let s = plane.stats();
    eprintln!("{}", serde_json::to_string(&s).unwrap_or_default());
    plane.stop().expect("stops");
    assert_eq!(root.received, 10, "{root:?}");
    assert!(root.median < 5.0, "root's traffic is not delayed: {root:?}");
    assert_eq!(user.received, 10, "{user:?}");
    // Only the request carries the user's uid (the reply reaches no
    // socket at the input hook): one delay per round trip, over the
    // round trip of the same path undelayed (root's ping, measured
    // alongside: the queue to user space costs 0.05–0.6 ms of it on
    // this machine from one hour to the next).
    assert!(
        user.min >= 30.0 && user.median <= 30.5 + root.median,
        "{user:?}, undelayed {root:?}"
    );
    assert_eq!(s.rules.first().map(|r| (r.0, r.1)), Some((100, 10)));
}

/// A UDP receiver in `net`'s namespace on `port`: (sequence, send time,
/// one-way delay in ns) of each datagram, until `idle` passes without one.
fn receiver(
    net: &TestNet,
    port: u16,
    idle: Duration,
) -> std::thread::JoinHandle<Vec<(u64, u64, u64)>> {
    let addr = format!("{}:{port}", net.peer);
    let rx = net
        .ns
        .run(move || UdpSocket::bind(addr))
        .expect("receiver socket");
    rx.set_read_timeout(Some(idle)).expect("timeout");
    std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        while let Ok(n) = rx.recv(&mut buf) {
            let now = monotonic_ns();
            if n >= 16 {
                let seq = u64::from_be_bytes(buf[..8].try_into().unwrap_or_default());
                let t = u64::from_be_bytes(buf[8..16].try_into().unwrap_or_default());
                got.push((seq, t, now.saturating_sub(t)));
            }
        }
        got
    })
}

/// Send `count` stamped datagrams to `net`'s peer on `port`, one per ms.
fn send_flow(net: &TestNet, port: u16, count: u64) {
    let tx = UdpSocket::bind("0.0.0.0:0").expect("sender socket");
    tx.connect((net.peer, port)).expect("connect");
    let start = monotonic_ns();
    for seq in 0..count {
        let due = start + seq * 1_000_000;
        let now = monotonic_ns();
        if due > now {
            std::thread::sleep(Duration::from_nanos(due - now));
        }
        let mut pkt = [0u8; 64];
        pkt[..8].copy_from_slice(&seq.to_be_bytes());
        pkt[8..16].copy_from_slice(&monotonic_ns().to_be_bytes());
        tx.send(&pkt).expect("send");
    }
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn duplicates_are_reinjected_and_losses_get_drop_verdicts() {
    let Some(_g) = live() else { return };
    let net = TestNet::new(5, "pipelab_test_dup");
    let plane = net.plane(7415);
    plane
        .apply(&config(
            "pipe 1 config delay 5ms duplicate 100%\npipe 2 config delay 5ms plr 0.5\n\
             add 100 pipe 1 udp from any to 198.18.5.2 9001\n\
             add 200 pipe 2 udp from any to 198.18.5.2 9002\n",
        ))
        .expect("applies");
    let dup = receiver(&net, 9001, Duration::from_millis(500));
    let lossy = receiver(&net, 9002, Duration::from_millis(500));
    send_flow(&net, 9001, 200);
    send_flow(&net, 9002, 200);
    let dup = dup.join().expect("receiver");
    let lossy = lossy.join().expect("receiver");
    let s = plane.stats();
    eprintln!("{}", serde_json::to_string(&s).unwrap_or_default());
    plane.stop().expect("stops");

    // Every packet twice: the original by its verdict, the copy through
    // the raw socket (not queued again: its mark skips the rules).
    let mut per_seq = std::collections::BTreeMap::new();
    for g in &dup {
        *per_seq.entry(g.0).or_insert(0u32) += 1;
        assert!(g.2 >= 5_000_000, "delayed: {g:?}");
    }
    assert_eq!(per_seq.len(), 200);
    assert!(per_seq.values().all(|&c| c == 2), "{per_seq:?}");
    assert_eq!(s.verdicts.reinjected, 200, "{s:?}");
    // Lost packets got NF_DROP; nothing is held; every id had one verdict.
    let lost = 200 - lossy.len() as u64;
    assert!(lost > 50 && lost < 150, "plr 0.5 lost {lost} of 200");
    assert_eq!(s.verdicts.dropped, lost, "{s:?}");
    assert_eq!(s.verdicts.accepted, 400 - lost, "{s:?}");
    assert_eq!(s.verdicts.held, 0, "{s:?}");
    assert_eq!(s.runner.dropped_loss, lost, "{s:?}");
}

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn removed_pipes_and_stop_release_every_held_packet() {
    let Some(_g) = live() else { return };
    let net = TestNet::new(6, "pipelab_test_drain");
    let plane = net.plane(7416);
    let script = |d: u32| {
        format!("pipe 1 config delay {d}ms\nadd 100 pipe 1 udp from any to 198.18.6.2 9003\n")
    };
    plane.apply(&config(&script(200))).expect("applies");
    let rx = receiver(&net, 9003, Duration::from_millis(800));
    send_flow(&net, 9003, 50);
    // The pipe goes away while it holds the 50 packets: they still leave
    // at their time.
    plane.apply(&Config::default()).expect("removes the pipe");
    let got = rx.join().expect("receiver");
    assert_eq!(got.len(), 50, "every packet of the removed pipe arrives");
    assert!(got.iter().all(|g| g.2 >= 200_000_000), "{got:?}");

    // Stop while 20 packets are held: stop returns after releasing them.
    plane.apply(&config(&script(300))).expect("applies");
    let rx = receiver(&net, 9003, Duration::from_millis(800));
    send_flow(&net, 9003, 20);
    let s = plane.stop_with_stats().expect("stops");
    eprintln!("{}", serde_json::to_string(&s).unwrap_or_default());
    assert!(!table_exists(&net.table));
    let got = rx.join().expect("receiver");
    assert_eq!(got.len(), 20, "stop releases what is held");
    assert!(got.iter().all(|g| g.2 >= 300_000_000), "{got:?}");
    assert_eq!(s.verdicts.accepted, 70, "{s:?}");
    assert_eq!(s.verdicts.held, 0, "{s:?}");
}

/// Issue 27 item 8: in a namespace whose `table ip mangle` exists with a
/// `PREROUTING` chain only (as iptables-nft leaves one), the rules of
/// `pipelab attach`'s plane on `lo`'s egress, installed the unowned way
/// (the `nft` tool, or iptables where nftables lacks `queue`), and then
/// stopped, leave the ruleset as it was: no empty `POSTROUTING` chain
/// added to the table that was there.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn a_stopped_plane_leaves_a_table_that_was_there_as_it_was() {
    use pipelab_modes::host::Hooks;
    use pipelab_modes::ledger::{Change, Ledger};
    let Some(_g) = live() else { return };
    let ledger = tempfile::tempdir().expect("tempdir");
    let ns = NetNs::create().expect("namespace");
    let dir = ledger.path().to_path_buf();
    let (before, after) = ns
        .run(move || {
            let nft = |script: &str| {
                let mut c = Command::new("nft")
                    .args(["-f", "-"])
                    .stdin(Stdio::piped())
                    .spawn()?;
                use std::io::Write;
                c.stdin.take().expect("stdin").write_all(script.as_bytes())?;
                assert!(c.wait()?.success(), "{script}");
                Ok::<_, std::io::Error>(())
            };
            let ruleset = || {
                Command::new("nft")
                    .args(["list", "ruleset"])
                    .output()
                    .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            };
            nft("add table ip mangle\n\
                 add chain ip mangle PREROUTING { type filter hook prerouting priority -150; policy accept; }\n")?;
            let before = ruleset()?;
            let mut record = Ledger::at(&dir).begin("attach", "xtchain").expect("record");
            record.claim("lo").expect("claim");
            let table = "pipelab_at_xtc".to_string();
            let plane = HostPlane::start_recorded(
                HostOptions {
                    queue_num: 7431,
                    queue_search: 16,
                    table: table.clone(),
                    hooks: Hooks::Device {
                        dev: "lo".into(),
                        ingress: false,
                        egress: true,
                    },
                    owned: false,
                    ..HostOptions::default()
                },
                &[],
                record,
                Change::AttachRules {
                    table,
                    dev: "lo".into(),
                    netns_path: None,
                },
                Default::default(),
            )?;
            let during = ruleset()?;
            plane.stop()?;
            Ok((before, (during, ruleset()?)))
        })
        .expect("plane in the namespace");
    let (during, after) = after;
    assert_ne!(during, before, "the rules were installed");
    assert_eq!(after, before, "the ruleset is as it was");
}
