//! pipelabd in host mode: this host's own traffic (to 127.0.0.1) is
//! delayed as configured, reconfigured under load without loss, and held
//! (fail-closed) while no daemon runs.

mod daemon_common;

use std::net::SocketAddr;
use std::time::Duration;

use daemon_common::{live, ok, open_dir, ping_ms, Pld, TableGuard};
use pipelab_modes::probe::{self, SendOptions};

#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn host_mode_delays_ping_and_fails_closed() {
    let Some(_g) = live() else { return };
    let dir = open_dir(None);
    let _t = TableGuard("pltest_ping");
    let (mut d, _) = Pld::start(
        dir.path(),
        &[
            "--plane",
            "host",
            "--table",
            "pltest_ping",
            "--queue-num",
            "7433",
            "--scope",
            "127.0.0.1",
            "--seed",
            "4242",
        ],
    );
    // The seed is said at start and in the stats.
    let log = std::fs::read_to_string(&d.log).unwrap_or_default();
    assert!(log.contains("seed 4242"), "{log}");
    let st = d
        .client()
        .request(None, pipelab_control::protocol::Op::Stats)
        .unwrap()
        .data
        .unwrap();
    assert!(st.to_string().contains("\"seed\":4242"), "{st}");
    // After start-up only CAP_NET_ADMIN (12) and CAP_NET_RAW (13) are
    // left, in every thread, with no_new_privs.
    let pid = d.child.as_ref().unwrap().id();
    let tasks: Vec<_> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(tasks.len() >= 3, "{tasks:?}");
    let mut checked = 0;
    for t in &tasks {
        // A short-lived thread may have ended since the listing.
        let Ok(status) = std::fs::read_to_string(t.join("status")) else {
            continue;
        };
        checked += 1;
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .map(str::trim)
                .unwrap_or_default()
                .to_string()
        };
        for k in ["CapEff:", "CapPrm:", "CapBnd:"] {
            assert_eq!(field(k), "0000000000003000", "{} {k}", t.display());
        }
        assert_eq!(field("CapInh:"), "0000000000000000");
        assert_eq!(field("CapAmb:"), "0000000000000000");
        assert_eq!(field("NoNewPrivs:"), "1");
    }
    assert!(checked >= 3, "threads checked: {checked} of {tasks:?}");
    let mut c = d.client();
    let base = ping_ms("127.0.0.1", 5, None);
    // Echo request and echo reply both leave through the output hook.
    ok(
        &mut c,
        "pipe 1 config delay 10ms\nadd 100 pipe 1 ip from any to any out",
    );
    let m10 = ping_ms("127.0.0.1", 10, None);
    ok(&mut c, "pipe 1 config delay 25ms");
    let m25 = ping_ms("127.0.0.1", 10, None);
    eprintln!(
        "ping 127.0.0.1: unshaped {base:.2} ms, delay 10ms {m10:.2} ms, delay 25ms {m25:.2} ms"
    );
    assert!((20.0..23.0).contains(&m10), "{m10}");
    assert!((50.0..53.0).contains(&m25), "{m25}");

    // kill -9: the queue has no listener, the kernel drops: no reply.
    d.kill9();
    let out = std::process::Command::new("ping")
        .args(["-c", "2", "-i", "0.2", "-W", "1", "127.0.0.1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(" 0 received"),
        "traffic passed while no daemon ran: {text}"
    );
    // Restarted: the journaled delay is back.
    let up = d.kill9_and_restart();
    let again = ping_ms("127.0.0.1", 5, None);
    eprintln!("restarted in {up:?}; ping {again:.2} ms");
    assert!((50.0..53.0).contains(&again), "{again}");
    assert!(d.stop().success());
}

/// A probe flow at 200 packets/s through a pipe of 10 ms; the delay is
/// changed to 50 ms in the middle: no packet is lost, and the delays seen
/// span both settings.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn reconfiguring_delay_under_a_probe_flow_loses_nothing() {
    let Some(_g) = live() else { return };
    let dir = open_dir(None);
    let _t = TableGuard("pltest_probe");
    let (mut d, _) = Pld::start(
        dir.path(),
        &[
            "--plane",
            "host",
            "--table",
            "pltest_probe",
            "--queue-num",
            "7434",
            "--scope",
            "127.0.0.1",
        ],
    );
    let port = 40000 + (std::process::id() % 10000) as u16;
    let mut c = d.client();
    ok(
        &mut c,
        &format!(
            "pipe 1 config delay 10ms\nadd 100 pipe 1 udp from any to any dst-port {port} out"
        ),
    );
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let rx = std::thread::spawn(move || probe::receive(addr, true, None));
    std::thread::sleep(Duration::from_millis(200));
    let tx = std::thread::spawn(move || {
        probe::send(
            addr,
            SendOptions {
                rate_pps: 200.0,
                size: 200,
                duration: Duration::from_secs(3),
            },
        )
    });
    std::thread::sleep(Duration::from_millis(1500));
    ok(&mut c, "pipe 1 config delay 50ms");
    let report = tx.join().unwrap().expect("probe send");
    rx.join().unwrap().expect("probe receive");
    let delay = report.delay_ms.expect("delays");
    eprintln!(
        "probe: sent {} received {} lost {} reordered {}; delay min {:.2} mean {:.2} p99 {:.2} max {:.2} ms",
        report.sent, report.received, report.lost, report.reordered, delay.min, delay.mean, delay.p99, delay.max
    );
    assert!(report.sent >= 500, "{}", report.sent);
    assert_eq!(report.lost, 0);
    assert_eq!(report.received, report.sent);
    assert!((10.0..11.5).contains(&delay.min), "{}", delay.min);
    // The largest includes the host's scheduling latency (2 cores, shared).
    assert!((50.0..100.0).contains(&delay.max), "{}", delay.max);
    // About half the packets before the change, half after.
    assert!((20.0..40.0).contains(&delay.mean), "{}", delay.mean);
    assert!((50.0..60.0).contains(&delay.p99), "{}", delay.p99);
    assert!(d.stop().success());
}
