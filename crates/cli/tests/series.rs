//! Live series (`--interval`, `--series`): what a shell's pipes did over
//! time, against the link's configured rate and against the report's own
//! counters; drawn by `pipelab plot`; refusals of flags that cannot work.

use serde_json::Value;
use std::process::{Command, Stdio};

mod common;
use common::{free_udp_port, live, run, tmp_path, BIN};

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// A pass proves that with `--interval 100ms` a shell's report has every
/// pipe's intervals; that each interval's counts add up to the pipe's
/// counters exactly (nothing sampled twice or missed); that the capacity
/// is the configured 20 Mbit/s; that while 30 Mbit/s of UDP is offered,
/// the intervals deliver the link's rate (16–21.5 Mbit/s each, the bound
/// of a shared machine) and drop the excess; that the `--series` CSV has
/// the same rows; and that `pipelab plot` draws the report.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn shell_series_follow_the_link() {
    let Some(_g) = live() else { return };
    let r = common::in_one_of_two(|| {
        let (stats, csv, png) = (
            tmp_path("series.json"),
            tmp_path("series.csv"),
            tmp_path("series.png"),
        );
        let port = free_udp_port().to_string();
        let mut server = Command::new("iperf3")
            .args(["-s", "-1", "-p", &port])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("iperf3 (Debian package iperf3)");
        std::thread::sleep(std::time::Duration::from_millis(300));
        let out = Command::new(BIN)
            .args([
                "shell",
                "--link",
                "bw 20Mbit/s delay 5ms",
                "--interval",
                "100ms",
            ])
            .args(["--stats", &stats, "--series", &csv, "--", "sh", "-c"])
            .arg(format!(
                "iperf3 -c $PIPELAB_OUTSIDE -p {port} -u -b 30M -l 1400 -t 2 >/dev/null"
            ))
            .stdin(Stdio::null())
            .output()
            .expect("pipelab shell");
        let _ = server.kill();
        let _ = server.wait();
        if !out.status.success() {
            return Err(format!(
                "shell failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let report = common::read_stats(&stats);
        let ts = &report["timeseries"];
        assert_eq!(f(&ts["interval_s"]), 0.1, "{ts}");
        let pipes = ts["pipes"].as_array().cloned().unwrap_or_default();
        assert_eq!(
            pipes.iter().map(|p| u(&p["id"])).collect::<Vec<_>>(),
            vec![1, 2]
        );
        let mut rows = 0;
        for p in &pipes {
            let id = u(&p["id"]);
            let ivs = p["timeseries"].as_array().cloned().unwrap_or_default();
            rows += ivs.len();
            // 2 s of traffic plus the set-up and the drain.
            assert!(
                (18..=60).contains(&ivs.len()),
                "pipe {id}: {} intervals",
                ivs.len()
            );
            let counters = report["pipes"]
                .as_array()
                .and_then(|a| a.iter().find(|c| u(&c["number"]) == id))
                .cloned()
                .unwrap_or_default();
            for key in [
                "arrivals",
                "arrival_bytes",
                "departures",
                "departure_bytes",
                "drops",
            ] {
                let sum: u64 = ivs.iter().map(|i| u(&i[key])).sum();
                assert_eq!(sum, u(&counters[key]), "pipe {id} {key}");
            }
            assert!(
                ivs.iter().all(|i| f(&i["capacity_bps"]) == 20e6),
                "pipe {id}: capacities {ivs:?}"
            );
            let t: Vec<f64> = ivs.iter().map(|i| f(&i["t_s"])).collect();
            assert!(t.windows(2).all(|w| w[1] > w[0]), "pipe {id}: t_s {t:?}");
        }
        // Pipe 1 (namespace → host) carries the flow: the intervals where
        // it was offered well above the link, not its first or last.
        let up = pipes[0]["timeseries"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let busy: Vec<&Value> = up.iter().filter(|i| f(&i["offered_bps"]) > 26e6).collect();
        let inner = busy
            .get(1..busy.len().saturating_sub(1))
            .unwrap_or_default();
        if inner.len() < 12 {
            return Err(format!("{} busy intervals of 2 s at 30 Mbit/s", busy.len()));
        }
        let rates: Vec<f64> = inner.iter().map(|i| f(&i["delivered_bps"]) / 1e6).collect();
        if rates.iter().any(|r| !(16.0..=21.5).contains(r)) {
            return Err(format!("delivered Mbit/s per interval {rates:?}"));
        }
        assert!(inner.iter().all(|i| u(&i["drops"]) > 0), "{inner:?}");

        let text = std::fs::read_to_string(&csv).expect("csv");
        let _ = std::fs::remove_file(&csv);
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some(
                "t_s,pipe,capacity_bps,offered_bps,delivered_bps,arrivals,arrival_bytes,\
departures,departure_bytes,backlog,backlog_bytes,drops,aqm_drops,loss_drops,link_drops,name"
            )
        );
        assert_eq!(lines.count(), rows);

        std::fs::write(&stats, serde_json::to_string(&report).unwrap_or_default()).expect("report");
        let (code, _, err) = run(&["plot", &stats, "-o", &png]);
        assert_eq!(code, 0, "{err}");
        let img = std::fs::read(&png).expect("png");
        assert!(img.starts_with(b"\x89PNG"), "not a PNG");
        let _ = std::fs::remove_file(&png);
        let _ = std::fs::remove_file(&stats);
        Ok(())
    });
    r.expect("series of a 20 Mbit/s link");
}

/// A pass proves the series flags refuse what cannot work, before
/// anything runs, naming the flag: an interval with nowhere to go, one
/// shorter than 1 ms or without a unit, and attach's recording flags.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn series_flags_refuse_what_cannot_work() {
    let Some(_g) = live() else { return };
    let csv = tmp_path("refused.csv");
    for (args, says) in [
        (
            vec![
                "shell",
                "--link",
                "delay 1ms",
                "--interval",
                "100ms",
                "--",
                "true",
            ],
            "--interval: nowhere to write the series",
        ),
        (
            vec![
                "shell",
                "--link",
                "delay 1ms",
                "--interval",
                "10us",
                "--series",
                &csv,
                "--",
                "true",
            ],
            "--interval 10us: give at least 1ms",
        ),
        (
            vec![
                "shell",
                "--link",
                "delay 1ms",
                "--interval",
                "100",
                "--series",
                &csv,
                "--",
                "true",
            ],
            "--interval 100",
        ),
        (
            vec!["attach", "lo", "--pcap", &csv, "--", "delay", "1ms"],
            "--pcap: pipelab attach does not record",
        ),
        (
            vec!["attach", "lo", "--interval", "1s", "--", "delay", "1ms"],
            "--interval: pipelab attach does not record",
        ),
    ] {
        let (code, _, err) = run(&args);
        assert!(code == 1 || code == 2, "{args:?}: exit {code}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let _ = std::fs::remove_file(&csv);
}
