//! `pipelab sim --interval` series and `pipelab plot` as a user runs
//! them (no root needed): a trace-driven link's capacity per interval is
//! the trace's, exactly; sampling changes nothing else in the report;
//! the images are valid SVG and PNG of the requested size; every refusal
//! names what and where; nothing is drawn on a stderr that is not a
//! terminal.

mod common;
use common::run;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pipelab-plot-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).expect("dir");
    d
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// A Mahimahi trace of three 100 ms steps, then its loop point: 100
/// opportunities in [0, 100 ms) (12 Mbit/s), 200 in [100, 200) (24
/// Mbit/s), 50 in [200, 300) (6 Mbit/s), one at 300 ms (the period).
/// Offsets sit half-way between milliseconds, off the interval ends.
fn step_trace() -> Vec<u64> {
    let mut us = Vec::new();
    us.extend((0..100).map(|i| i * 1000 + 500));
    us.extend((0..200).map(|i| 100_000 + i * 500 + 250));
    us.extend((0..50).map(|i| 200_000 + i * 2000 + 500));
    us.push(300_000);
    us
}

/// Opportunities of the looping trace `us` (µs offsets, period the last)
/// in [a, b) µs, counted one by one.
fn count(us: &[u64], a: u64, b: u64) -> u64 {
    let period = *us.last().expect("trace");
    let mut n = 0;
    for cycle in 0..=(b / period) {
        for &o in us {
            let t = cycle * period + o;
            if t >= a && t < b {
                n += 1;
            }
        }
    }
    n
}

/// The trace file, the configuration and a report of 1 s of 15 Mbit/s
/// CBR through the link, with `extra` arguments.
fn trace_run(d: &Path, extra: &[&str]) -> (i32, String, String) {
    let trace: String = step_trace().iter().map(|u| format!("{u}us\n")).collect();
    std::fs::write(d.join("steps.trace"), trace).expect("trace");
    std::fs::write(
        d.join("link.conf"),
        "pipe 1 config bw trace:steps.trace delay 10ms queue 200\nadd 100 pipe 1 ip from any to any\n",
    )
    .expect("conf");
    let conf = s(&d.join("link.conf"));
    let mut args = vec![
        "sim",
        &conf,
        "--traffic",
        "cbr rate 15Mbit/s size 1500B duration 1s",
        "--json",
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// `pipelab sim` of [`trace_run`]'s link with a short traffic, without
/// --json, and `extra`.
fn link_run(d: &Path, extra: &[&str]) -> (i32, String, String) {
    let conf = s(&d.join("link.conf"));
    let mut args = vec![
        "sim",
        &conf,
        "--traffic",
        "cbr rate 1Mbit/s size 1500B duration 1s",
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// A pass proves the capacity series of a trace-driven link is the
/// trace's rate in every interval, exactly (virtual time): 12, 24 and 6
/// Mbit/s in the first three 100 ms intervals, and in every interval the
/// opportunities counted one by one from the file, times 1500 bytes;
/// and that the intervals add up to the report's totals.
#[test]
fn capacity_series_is_the_trace() {
    let d = dir("capacity");
    let (code, out, err) = trace_run(&d, &["--interval", "100ms"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "", "stderr stays clean when it is not a terminal");
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["interval_s"].as_f64(), Some(0.1));
    let pipe = &v["pipes"][0];
    let ts = pipe["timeseries"].as_array().expect("pipe series");
    let end = v["end_s"].as_f64().expect("end");
    assert_eq!(ts.len(), (end / 0.1).floor() as usize + 1, "end {end}");
    assert!(ts.len() >= 10, "{} intervals", ts.len());
    let cap: Vec<f64> = ts
        .iter()
        .map(|i| i["capacity_bps"].as_f64().expect("capacity"))
        .collect();
    assert_eq!(&cap[..3], &[12e6, 24e6, 6e6]);
    let trace = step_trace();
    for (k, c) in cap.iter().enumerate() {
        let k = k as u64;
        let ops = count(&trace, k * 100_000, (k + 1) * 100_000);
        assert_eq!(*c, ops as f64 * 1500.0 * 8.0 * 10.0, "interval {k}");
        assert_eq!(ts[k as usize]["t_s"].as_f64(), Some(k as f64 / 10.0));
    }
    // The intervals add up to the totals.
    let sum = |key: &str| ts.iter().map(|i| i[key].as_u64().expect(key)).sum::<u64>();
    assert_eq!(
        sum("arrivals"),
        pipe["arrivals"].as_u64().expect("arrivals")
    );
    assert_eq!(
        sum("departure_bytes"),
        pipe["departure_bytes"].as_u64().expect("bytes")
    );
    assert_eq!(sum("drops"), pipe["drops"].as_u64().expect("drops"));
    // The backlog at each interval's end, from first principles: 125
    // packets arrive in each 100 ms (one every 0.8 ms) and each
    // opportunity takes one; 100 go at 12 Mbit/s (25 left), the 24 Mbit/s
    // step empties the queue, 50 go at 6 Mbit/s (75 left).
    let backlog: Vec<u64> = ts[..3]
        .iter()
        .map(|i| i["backlog"].as_u64().expect("backlog"))
        .collect();
    assert_eq!(backlog, vec![25, 0, 75]);
    assert_eq!(ts[0]["arrivals"].as_u64(), Some(125));
    assert_eq!(ts.last().map(|i| &i["backlog"]), Some(&Value::from(0)));
    let flow = &v["flows"][0];
    let fts = flow["timeseries"].as_array().expect("flow series");
    assert_eq!(fts.len(), ts.len());
    let fsum = |key: &str| fts.iter().map(|i| i[key].as_u64().expect(key)).sum::<u64>();
    assert_eq!(fsum("sent"), flow["sent"].as_u64().expect("sent"));
    assert_eq!(
        fsum("received"),
        flow["received"].as_u64().expect("received")
    );
    // 15 Mbit/s offered in every full interval of the source.
    assert_eq!(fts[0]["offered_bps"].as_f64(), Some(15e6));
    let cdf = flow["delay_cdf"].as_array().expect("cdf");
    assert_eq!(cdf.len(), 101);
    assert_eq!(cdf[0][1].as_f64(), flow["delay_ms"]["min"].as_f64());
    assert_eq!(cdf[100][1].as_f64(), flow["delay_ms"]["max"].as_f64());
    let _ = std::fs::remove_dir_all(&d);
}

/// A pass proves sampling decides nothing: the report with `--interval`,
/// its series taken out, is the report without it, byte for byte; and
/// `--workers 2` with it says it runs one partition.
#[test]
fn series_change_nothing_else() {
    let d = dir("same");
    let (_, plain, _) = trace_run(&d, &[]);
    let (code, with, err) = trace_run(&d, &["--interval", "30ms"]);
    assert_eq!(code, 0, "{err}");
    let mut v: Value = serde_json::from_str(&with).expect("json");
    v.as_object_mut().expect("object").remove("interval_s");
    for key in ["flows", "pipes"] {
        for x in v[key].as_array_mut().expect(key) {
            let o = x.as_object_mut().expect("object");
            o.remove("timeseries");
            o.remove("delay_cdf");
        }
    }
    let plain: Value = serde_json::from_str(&plain).expect("json");
    assert_eq!(v, plain);
    let (code, _, err) = trace_run(&d, &["--interval", "30ms", "--workers", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("one partition"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A pass proves `--series FILE` writes the report's pipe intervals as
/// CSV, one row each with its values (capacity of the trace, rates,
/// counts) in the header's order, the same columns a live mode writes;
/// and that `--interval` with neither `--json` nor `--series` is refused.
#[test]
fn sim_series_csv_is_the_report() {
    let d = dir("csv");
    let csv = s(&d.join("series.csv"));
    let (code, out, err) = trace_run(&d, &["--interval", "100ms", "--series", &csv]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    let text = std::fs::read_to_string(&csv).expect("csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    assert_eq!(&header[..3], ["t_s", "pipe", "capacity_bps"]);
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    let ivs = v["pipes"][0]["timeseries"].as_array().expect("series");
    assert_eq!(rows.len(), ivs.len());
    for (row, iv) in rows.iter().zip(ivs) {
        assert_eq!(row.len(), header.len());
        assert_eq!(row[1], "1");
        for (col, key) in header.iter().zip(row) {
            if *col == "pipe" || *col == "name" {
                // A configuration's pipe has no name.
                assert!(*col == "pipe" || key.is_empty(), "{key}");
                continue;
            }
            let want = iv[*col].as_f64().expect(col);
            assert_eq!(key.parse::<f64>().ok(), Some(want), "{col} of {iv}");
        }
    }
    let (code, _, err) = link_run(&d, &["--interval", "100ms"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--interval: nowhere to write the series"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A pass proves `pipelab sim --flow-series FILE` writes the report's
/// flow intervals as CSV in the header's order (the columns of a live
/// mode's --flow-series), the flow by its report name, and that the rows'
/// counts add up to the flow's totals; and that it needs --interval.
#[test]
fn sim_flow_series_csv_is_the_report() {
    let d = dir("flowcsv");
    let csv = s(&d.join("flows.csv"));
    // A second flow overloads the link, so drops have rows too.
    let extra = [
        "--interval",
        "100ms",
        "--flow-series",
        &csv,
        "--traffic",
        "cbr rate 20Mbit/s size 1000B duration 1s name bulk",
    ];
    let (code, out, err) = trace_run(&d, &extra);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    let text = std::fs::read_to_string(&csv).expect("csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    assert_eq!(
        &header[..4],
        ["t_s", "flow", "offered_bps", "delivered_bps"]
    );
    let mut rows = lines.map(|l| l.split(',').map(str::to_string).collect::<Vec<_>>());
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let flows = v["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), 2);
    let mut lost = 0;
    for flow in flows {
        let ivs = flow["timeseries"].as_array().expect("series");
        assert!(ivs.len() >= 10, "{} intervals", ivs.len());
        let (mut sent, mut received, mut drops) = (0u64, 0u64, 0u64);
        for iv in ivs {
            let row = rows.next().expect("a row per interval");
            assert_eq!(row.len(), header.len());
            assert_eq!(row[1], flow["name"].as_str().expect("name"));
            for key in ["t_s", "offered_bps", "delivered_bps", "sent", "received"] {
                let want = iv[key].as_f64().expect(key);
                assert_eq!(
                    row[col(key)].parse::<f64>().ok(),
                    Some(want),
                    "{key} of {iv}"
                );
            }
            match iv["delay_ms"].as_object() {
                Some(dl) => {
                    // serde_json's float parsing may be one ulp off.
                    let mean = dl["mean"].as_f64().expect("mean");
                    let got: f64 = row[col("delay_mean_ms")].parse().expect("mean");
                    assert!((got - mean).abs() <= 1e-9 * mean, "{got} vs {mean}");
                }
                None => assert_eq!(row[col("delay_mean_ms")], ""),
            }
            sent += row[col("sent")].parse::<u64>().expect("sent");
            received += row[col("received")].parse::<u64>().expect("received");
            drops += row[col("drops")].parse::<u64>().expect("drops");
        }
        assert_eq!(Some(sent), flow["sent"].as_u64());
        assert_eq!(Some(received), flow["received"].as_u64());
        assert_eq!(Some(drops), flow["lost"].as_u64());
        assert!(received > 0, "{flow}");
        lost += drops;
    }
    assert!(
        rows.next().is_none(),
        "no row beyond the report's intervals"
    );
    assert!(lost > 0, "the overloaded link dropped");
    let (code, _, err) = link_run(&d, &["--flow-series", &csv]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--interval"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Width and height from a PNG's IHDR chunk, after checking the
/// signature; and the decoded RGB pixels.
fn png_image(path: &Path) -> (u32, u32, Vec<u8>) {
    let bytes = std::fs::read(path).expect("png");
    assert!(bytes.len() > 1000, "{} bytes", bytes.len());
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR");
    let w = u32::from_be_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]);
    let h = u32::from_be_bytes([bytes[20], bytes[21], bytes[22], bytes[23]]);
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("png header");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("png data");
    assert_eq!((info.width, info.height), (w, h));
    buf.truncate(info.buffer_size());
    (w, h, buf)
}

/// Whether `svg` is well formed as far as tags go: every element opened
/// is closed, in order.
fn balanced(svg: &str) -> bool {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find('<') {
        let Some(j) = rest[i..].find('>') else {
            return false;
        };
        let tag = &rest[i + 1..i + j];
        rest = &rest[i + j + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '/')
            .collect();
        if tag.starts_with('/') {
            if stack.pop().as_deref() != Some(name.as_str()) {
                return false;
            }
        } else if !tag.ends_with('/') {
            stack.push(name);
        }
    }
    stack.is_empty()
}

/// A pass proves `pipelab plot` draws the trace-driven link's report as
/// an SVG (well formed, the requested size, axes with units, the three
/// series in the legend, lines drawn) and a PNG (a valid image of the
/// requested size, with the grey of the capacity area, the colours of
/// the two lines and dark text on white).
#[test]
fn plots_of_a_trace_driven_link() {
    let d = dir("images");
    let (code, out, err) = trace_run(&d, &["--interval", "50ms"]);
    assert_eq!(code, 0, "{err}");
    let report = d.join("report.json");
    std::fs::write(&report, out).expect("report");
    let svg = d.join("t.svg");
    let (code, out, err) = run(&["plot", &s(&report), "-o", &s(&svg), "--size", "640x400"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "");
    assert!(out.contains("throughput graph"), "{out}");
    let text = std::fs::read_to_string(&svg).expect("svg");
    assert!(text.contains("<svg"), "{text}");
    assert!(balanced(&text), "not well formed");
    assert!(text.contains("width=\"640\"") && text.contains("height=\"400\""));
    for label in [
        "time (s)",
        "rate (Mbit/s)",
        "pipe 1 capacity",
        "pipe 1 arrivals",
        "pipe 1 departures",
    ] {
        assert!(text.contains(label), "{label} missing");
    }
    assert!(text.contains("<polyline"), "no line");
    assert!(
        text.contains("<polygon") || text.contains("<path"),
        "no area"
    );

    let png = d.join("t.png");
    let (code, _, err) = run(&["plot", &s(&report), "-o", &s(&png), "--size", "640x400"]);
    assert_eq!(code, 0, "{err}");
    let (w, h, px) = png_image(&png);
    assert_eq!((w, h), (640, 400));
    assert_eq!(px.len(), 640 * 400 * 3);
    let has = |f: &dyn Fn(&[u8]) -> bool| px.chunks(3).filter(|p| f(p)).count();
    let white = has(&|p| p == [255, 255, 255]);
    assert!(white > 640 * 400 / 3, "a white background: {white}");
    // Dark text (the axes' labels).
    assert!(has(&|p| p.iter().all(|&c| c < 80)) > 500, "no text");
    // The departures' orange (213, 94, 0) and the arrivals' blue (0, 114, 178).
    assert!(has(&|p| p == [213, 94, 0]) > 200, "no departures line");
    assert!(has(&|p| p == [0, 114, 178]) > 200, "no arrivals line");
    // The capacity area: grey, mixed with white.
    assert!(
        has(&|p| p[0] == p[1] && p[1] == p[2] && (190..=230).contains(&p[0])) > 10_000,
        "no capacity area"
    );

    // The other kinds of this report draw too.
    for kind in ["delay", "cdf", "shares"] {
        let out = d.join(format!("{kind}.png"));
        let (code, _, err) = run(&["plot", &s(&report), "-o", &s(&out), "--kind", kind]);
        assert_eq!(code, 0, "{kind}: {err}");
        assert_eq!(png_image(&out).0, 800, "{kind}: the default size");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A pass proves the other inputs are told by their content and drawn:
/// the probe's per-packet CSV (scatter, the default), samples (a CDF),
/// a probe report (a CDF from its histogram), a `--stats` file (shares).
#[test]
fn other_inputs_are_recognised() {
    let d = dir("inputs");
    let csv = d.join("series.csv");
    let mut text = String::from("run,seq,sent_unix_ns,received_unix_ns,delay_ms\n");
    for i in 0..200u64 {
        let sent = 1_000_000_000 + i * 1_000_000;
        let delay = 10_000_000 + (i % 7) * 100_000;
        text += &format!("3,{i},{sent},{},{:.6}\n", sent + delay, delay as f64 / 1e6);
    }
    std::fs::write(&csv, text).expect("csv");
    let samples = d.join("samples.json");
    std::fs::write(
        &samples,
        r#"{"title": "shares", "label": "throughput", "unit": "bit/s", "of": "flows",
            "samples": [{"name": "a", "values": [1e6, 2e6, 1.5e6]}, {"name": "b", "values": [0.5e6, 1e6]}]}"#,
    )
    .expect("samples");
    let probe = d.join("probe.json");
    std::fs::write(
        &probe,
        r#"{"sent": 10, "received": 10, "lost": 0, "duplicated": 0, "reordered": 0,
            "delay_ms": {"min": 1.0, "mean": 1.5, "p50": 1.5, "p99": 2.0, "p999": 2.0, "max": 2.0, "stddev": 0.1},
            "throughput_bps": 1000.0, "histogram": [[1.5, 5], [2.0, 5]]}"#,
    )
    .expect("probe");
    let stats = d.join("stats.json");
    std::fs::write(
        &stats,
        r#"{"plane": "shell", "runner": {}, "pipes": [{"number": 1, "departure_bytes": 1500000}, {"number": 2, "departure_bytes": 500000}]}"#,
    )
    .expect("stats");
    for (input, kind) in [
        (&csv, "scatter"),
        (&samples, "cdf"),
        (&probe, "cdf"),
        (&stats, "shares"),
    ] {
        let out = d.join(format!("{kind}.svg"));
        let (code, said, err) = run(&["plot", &s(input), "-o", &s(&out)]);
        assert_eq!(code, 0, "{}: {err}", input.display());
        assert!(said.contains(&format!("{kind} graph")), "{said}");
        assert!(balanced(&std::fs::read_to_string(&out).expect("svg")));
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A pass proves an event log of `pipelab sim --events`, CSV or JSON
/// lines, holds each packet's arrival and its departure 11.2 ms later
/// (10 ms delay + 1.2 ms at 10 Mbit/s), exactly, and that `pipelab plot`
/// reads it as an event log and draws every kind from it (the matching
/// of departures to arrivals is `plot::events`' unit test).
#[test]
fn event_logs_are_plotted() {
    let d = dir("events");
    std::fs::write(
        d.join("p.conf"),
        "pipe 1 config bw 10Mbit/s delay 10ms\nadd 100 pipe 1 ip from any to any\n",
    )
    .expect("conf");
    for ext in ["csv", "jsonl"] {
        let log = d.join(format!("events.{ext}"));
        let (code, _, err) = run(&[
            "sim",
            &s(&d.join("p.conf")),
            "--traffic",
            "cbr rate 100pps size 1500B duration 1s",
            "--events",
            &s(&log),
        ]);
        assert_eq!(code, 0, "{err}");
        let text = std::fs::read_to_string(&log).expect("log");
        let (mut arr, mut dep) = (Vec::new(), Vec::new());
        for l in text.lines() {
            let t = |v: &str| v.parse::<u64>().expect("t_ns");
            if ext == "csv" {
                let f: Vec<&str> = l.split(',').collect();
                match f[2] {
                    "arrive" => arr.push(t(f[0])),
                    "depart" => dep.push(t(f[0])),
                    _ => {}
                }
            } else {
                let v: Value = serde_json::from_str(l).expect("json line");
                let at = v["t_ns"].as_u64().expect("t_ns");
                match v["event"].as_str() {
                    Some("arrive") => arr.push(at),
                    Some("depart") => dep.push(at),
                    _ => {}
                }
            }
        }
        assert_eq!(arr.len(), 100);
        assert_eq!(dep.len(), 100);
        assert!(arr.iter().zip(&dep).all(|(a, b)| b - a == 11_200_000));
        for kind in ["throughput", "scatter", "delay", "cdf", "shares"] {
            let out = d.join(format!("{ext}-{kind}.svg"));
            let (code, said, err) = run(&["plot", &s(&log), "-o", &s(&out), "--kind", kind]);
            assert_eq!(code, 0, "{ext} {kind}: {err}");
            assert!(said.contains("(an event log)"), "{said}");
            assert!(balanced(&std::fs::read_to_string(&out).expect("svg")));
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A pass proves each refusal names the file and what was expected, with
/// exit status 2 for what the user gave and 1 for an output that cannot
/// be written: a kind the input lacks, a report without series, an
/// input of no known kind, an empty series, an unknown extension, an
/// unwritable output, a bad size, a zero interval.
#[test]
fn refusals_name_what_and_where() {
    let d = dir("refusals");
    let (_, plain, _) = trace_run(&d, &[]);
    let report = d.join("plain.json");
    std::fs::write(&report, plain).expect("report");
    let r = s(&report);
    let out = s(&d.join("x.png"));
    let (code, _, err) = run(&["plot", &r, "-o", &out, "--kind", "scatter"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("plain.json (a sim report) has no scatter graph"),
        "{err}"
    );
    let (code, _, err) = run(&["plot", &r, "-o", &out, "--kind", "throughput"]);
    assert_eq!(code, 2);
    assert!(err.contains("--interval"), "{err}");
    assert!(err.contains("it has shares"), "{err}");
    let junk = d.join("junk.json");
    std::fs::write(&junk, "{\"hello\": 1}").expect("junk");
    let (code, _, err) = run(&["plot", &s(&junk), "-o", &out]);
    assert_eq!(code, 2);
    assert!(
        err.contains("junk.json: JSON with none of the keys"),
        "{err}"
    );
    assert!(err.contains("pipelab sim --json"), "{err}");
    let empty = d.join("empty.csv");
    std::fs::write(&empty, "run,seq,sent_unix_ns,received_unix_ns,delay_ms\n").expect("csv");
    let (code, _, err) = run(&["plot", &s(&empty), "-o", &out]);
    assert_eq!(code, 2);
    assert!(
        err.contains("empty.csv (a probe series): nothing to plot"),
        "{err}"
    );
    let (code, _, err) = run(&["plot", &r, "-o", &s(&d.join("x.jpg"))]);
    assert_eq!(code, 2);
    assert!(err.contains("x.jpg: unknown image format"), "{err}");
    let (code, _, err) = run(&["plot", &r, "-o", "/nonexistent-dir/x.svg"]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot write /nonexistent-dir/x.svg"), "{err}");
    let (code, _, err) = run(&["plot", &r, "-o", &out, "--size", "10x10"]);
    assert_eq!(code, 2);
    assert!(err.contains("200 to 8000"), "{err}");
    let (code, _, err) = run(&["plot", &s(&d.join("missing.json")), "-o", &out]);
    assert_eq!(code, 2);
    assert!(err.contains("missing.json"), "{err}");
    let (code, _, err) = trace_run(&d, &["--interval", "0ms"]);
    assert_eq!(code, 2);
    assert!(err.contains("--interval"), "{err}");
    let (code, _, err) = trace_run(&d, &["--interval", "1ns"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("at most 1000000"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A pass proves a long simulation prints nothing on a stderr that is
/// not a terminal (the progress bar is for terminals only): 60 s of
/// virtual time.
#[test]
fn progress_is_silent_off_a_terminal() {
    let conf = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/two-links.conf");
    let (code, out, err) = run(&[
        "sim",
        conf,
        "--traffic",
        "cbr rate 200pps size 500B duration 60s",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "");
    assert!(out.contains("virtual time 59.995"), "{out}");
}
