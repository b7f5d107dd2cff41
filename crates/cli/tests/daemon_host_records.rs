//! pipelabd in host mode records what crosses it: `--pcap`, `--events`,
//! `--interval` and `--series`, read back after a ping through a pipe of
//! 20 ms, against the counters `pipelab stats` gives while it runs.

mod daemon_common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use daemon_common::{
    in_one_of_three, live, ok, open_dir, reads, steal_slack, Pld, TableGuard, TwoHosts, BIN,
};
use pipelab_control::protocol::Op;
use pipelab_io::pcapng;
use serde_json::Value;

/// Pings sent in each run.
const PINGS: usize = 20;

/// An ICMP echo's (type, id, sequence) in a frame (14-byte header, IPv4).
fn echo(data: &[u8]) -> Option<(u8, u16, u16)> {
    if data.len() < 42 || data[12..14] != [0x08, 0x00] || data[23] != 1 {
        return None;
    }
    let ihl = (data[14] & 0x0f) as usize * 4;
    let icmp = data.get(14 + ihl..14 + ihl + 8)?;
    (icmp[0] == 0 || icmp[0] == 8).then(|| {
        (
            icmp[0],
            u16::from_be_bytes([icmp[4], icmp[5]]),
            u16::from_be_bytes([icmp[6], icmp[7]]),
        )
    })
}

/// The sum of column `col` of the `--series` CSV's rows of pipe 1.
fn column_sum(csv: &str, col: &str) -> u64 {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let (i, p) = (
        header.iter().position(|h| *h == col).expect("column"),
        header.iter().position(|h| *h == "pipe").expect("pipe"),
    );
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[p] == "1")
        .map(|f| f[i].parse::<u64>().expect("a count"))
        .sum()
}

/// One run: the daemon, scoped to the host's address toward a test
/// namespace, with `delay 20ms` on both directions and every recording;
/// `PINGS` pings, the stats while it runs, then SIGTERM. Checks what must
/// hold exactly (panics) and returns Err with the figures if the delays
/// read from the capture are off (the machine's stalls).
fn run_once(dir: &Path, peer: &str) -> Result<(), String> {
    let (pcap, events, series) = (
        dir.join("host.pcapng"),
        dir.join("host.jsonl"),
        dir.join("host.csv"),
    );
    let _t = TableGuard("pltest_rec");
    let (mut d, _) = Pld::start(
        dir,
        &[
            "--plane",
            "host",
            "--table",
            "pltest_rec",
            "--queue-num",
            "7436",
            "--scope",
            peer,
            "--pcap",
            pcap.to_str().unwrap(),
            "--events",
            events.to_str().unwrap(),
            "--interval",
            "100ms",
            "--series",
            series.to_str().unwrap(),
        ],
    );
    let mut c = d.client();
    ok(
        &mut c,
        "pipe 1 config delay 20ms\nadd 100 pipe 1 ip from any to any",
    );
    let out = Command::new("ping")
        .args(["-c", &PINGS.to_string(), "-i", "0.05", "-W", "2", peer])
        .output()
        .expect("ping");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains(&format!("{PINGS} received")),
        "ping through the daemon: {text}"
    );
    // Read while it runs: the counters and the series so far.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let st = c
        .request(None, Op::Stats)
        .expect("stats")
        .data
        .expect("data");
    let plane = &st["plane"];
    let pipe = plane["pipes"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["number"] == 1))
        .expect("pipe 1")
        .clone();
    let ts = &plane["timeseries"];
    assert_eq!(ts["interval_s"], 0.1, "{ts}");
    let live_rows = ts["pipes"][0]["timeseries"].as_array().map_or(0, Vec::len);
    assert!(live_rows >= 10, "intervals read while running: {live_rows}");
    // Per flow too: the echo requests and the replies, each an ICMP flow.
    let flows: Vec<&str> = ts["flows"]
        .as_array()
        .map(|f| f.iter().filter_map(|f| f["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        flows.len() >= 2 && flows.iter().all(|n| n.starts_with("icmp ")),
        "flows: {flows:?}"
    );
    // `pipelab plot` draws the stats as `pipelab stats --json` prints them.
    let json = dir.join("stats.json");
    std::fs::write(&json, st.to_string()).expect("stats file");
    let svg = dir.join("stats.svg");
    let (plot_in, plot_out) = (json.to_str().unwrap(), svg.to_str().unwrap());
    let o = Command::new(BIN)
        .args(["plot", plot_in, "-o", plot_out])
        .output()
        .expect("pipelab plot");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(d.stop().success());
    let log = std::fs::read_to_string(&d.log).unwrap_or_default();
    assert!(
        log.contains(&format!("pipelabd: wrote capture {}", pcap.display())),
        "{log}"
    );

    // Two pings' worth of echoes, each crossing pipe 1 once.
    let n = 2 * PINGS as u64;
    assert_eq!(pipe["arrivals"], n, "{pipe}");
    assert_eq!(pipe["departures"], n, "{pipe}");
    assert_eq!(pipe["drops"], 0, "{pipe}");
    // The series add up to the counters (no traffic after the stats).
    let csv = std::fs::read_to_string(&series).expect("series");
    for col in ["arrivals", "departures", "arrival_bytes", "departure_bytes"] {
        assert_eq!(Some(column_sum(&csv, col)), pipe[col].as_u64(), "{col}");
    }
    // The event log: an arrival and a departure of each echo, with its flow.
    let log = std::fs::read_to_string(&events).expect("events");
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let of = |port: &str, event: &str| {
        lines
            .iter()
            .filter(|l| l["port"] == port && l["event"] == event && l["proto"] == 1)
            .count()
    };
    for port in ["output", "input"] {
        assert_eq!(of(port, "arrive"), PINGS, "{port} arrivals");
        assert_eq!(of(port, "depart"), PINGS, "{port} departures");
    }
    assert!(
        lines
            .iter()
            .any(|l| l["port"] == "output" && l["event"] == "depart" && l["dst"] == peer),
        "no echo request to {peer} in the event log"
    );
    // The capture: tcpdump reads it all; per direction in = out + drops,
    // every echo delayed 20 ms.
    let listed = reads("tcpdump", &["-r", pcap.to_str().unwrap(), "-n"]);
    let bytes = std::fs::read(&pcap).expect("capture");
    let cap = pcapng::read(&bytes).expect("pcapng");
    assert_eq!(listed.lines().count(), cap.packets.len());
    assert_eq!(
        cap.interfaces,
        vec!["output in", "output out", "input in", "input out"]
    );
    for f in [&pcap, &events, &series] {
        let mode = std::fs::metadata(f).expect("file").permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "{}", f.display());
    }
    let mut delays = Vec::new();
    // Echo requests leave by the output hook, replies come by input.
    for (kind, from, to) in [(8u8, 0u32, 1u32), (0, 2, 3)] {
        let (mut arrived, mut left, mut drops) = (BTreeMap::new(), BTreeMap::new(), 0);
        for p in &cap.packets {
            let Some((k, id, seq)) = echo(&p.data) else {
                continue;
            };
            assert!(p.iface == from || p.iface == to || k != kind);
            if k != kind {
                continue;
            }
            if p.comments.iter().any(|c| c.starts_with("dropped: ")) {
                drops += 1;
            } else if p.iface == from {
                arrived.insert((id, seq), p.ts_ns);
            } else {
                left.insert((id, seq), p.ts_ns);
            }
        }
        assert_eq!(arrived.len(), PINGS, "type {kind} in");
        assert_eq!(
            arrived.len(),
            left.len() + drops,
            "type {kind}: in = out + drops"
        );
        for (k, t_out) in &left {
            let t_in = arrived.get(k).expect("every departure arrived");
            delays.push((*t_out as f64 - *t_in as f64) / 1e6);
        }
    }
    delays.sort_by(f64::total_cmp);
    let q = |f: f64| delays[((delays.len() - 1) as f64 * f) as usize];
    let (min, median, p90, max) = (q(0.0), q(0.5), q(0.9), q(1.0));
    let late_ms = plane["lateness"]["max_us"].as_f64().expect("lateness") / 1e3;
    let summary = format!(
        "out − in of {} echoes: min {min:.3} ms, median {median:.3} ms, p90 {p90:.3} ms, \
         max {max:.3} ms; the runner's lateness at most {late_ms:.3} ms",
        delays.len()
    );
    eprintln!("{summary}");
    // Never early (one clock), the delay itself at the median, and
    // nothing later than the runner's own lateness meter says: the
    // capture shows the departures as they were.
    assert!(min >= 19.99, "{summary}");
    assert!(max - 20.0 <= late_ms + 0.2, "{summary}");
    // The median at the delay and 90% within 2 ms: later is the runner
    // waking late on a loaded, shared machine (a stalled virtual CPU),
    // in one of three runs.
    let slack = steal_slack();
    if median <= 20.5 + slack.mean_ms && p90 <= 22.0 + slack.p99_ms {
        Ok(())
    } else {
        Err(format!("{summary} (slack for steal {slack:?})"))
    }
}

/// A pass proves pipelabd's host mode records as the shell does: tcpdump
/// reads its capture, which has each direction as a port (`output`,
/// `input`) with every echo in = out + drops and out − in never below
/// 20 ms, 20 ms at the median, never later than the runner's lateness
/// meter says, and within 2 ms for 90% of them (in one of three runs: a
/// stalled virtual CPU delays a departure now and then); the event log has the echoes' arrivals and departures
/// with their flow; `pipelab stats` carries the series while it runs
/// (and `pipelab plot` draws them); the series CSV adds up to the
/// counters; the files are mode 0644, complete after SIGTERM.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn host_mode_records_captures_events_and_series() {
    let Some(_g) = live() else { return };
    let hosts = TwoHosts::new("plrec", "plrec", "10.231.14");
    // The host's own address toward namespace A: host mode shapes the
    // host's traffic, so the host is one end.
    let st = Command::new("ip")
        .args(["addr", "add", "10.231.14.3/24", "dev", &hosts.ports[0]])
        .status()
        .expect("ip");
    assert!(st.success());
    let peer = hosts.addr[0].clone();
    let r = in_one_of_three(|| run_once(open_dir(None).path(), &peer));
    if let Err(e) = r {
        panic!("{e}");
    }
}
