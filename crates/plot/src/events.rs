//! An event log (`--events FILE`, JSON lines or CSV) as graphs: the rate
//! of arrivals and departures per port over time (Mahimahi's throughput
//! graph without the capacity, which a log does not hold), each packet's
//! delay through the emulation (scatter, over time, CDF) and each flow's
//! share of the bytes delivered.
//!
//! A log names no packet, so a departure is matched to its arrival in
//! order within its flow (5-tuple): exact for a flow that no pipe
//! reorders. A drop at the instant of the flow's last arrival (a full
//! queue, a loss decided on entry) removes that arrival; any other drop
//! (queue management at dequeue) the oldest; a duplicate adds one more
//! arrival at the instant of the latest.

use crate::input::{empirical_cdf, steps, Data, Line, Role, Unit};
use crate::Kind;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, VecDeque};

/// The CSV header of an event log.
pub const CSV_HEADER: &str =
    "t_ns,port,event,reason,proto,src,dst,sport,dport,size,backlog_packets,backlog_bytes";

/// The most ports and flows drawn as lines (the busiest).
const MOST: usize = 4;

/// Bits per bin of one port: (arrivals, departures). Sums saturate: a
/// log may claim sizes no real run reaches (the value is drawn at the
/// axis' limit anyway).
type PortBits = (Vec<u64>, Vec<u64>);

/// The sum of `bits`, saturating.
fn total(bits: &[u64]) -> u64 {
    bits.iter().fold(0, |a, &b| a.saturating_add(b))
}

/// One event, as the log has it.
struct Event {
    t_ns: u64,
    port: String,
    kind: String,
    flow: String,
    size: u64,
}

/// Whether `first` (the input's first line) is a JSON event of a log.
pub fn is_json_event(first: &str) -> bool {
    serde_json::from_str::<Value>(first)
        .map(|v| v.get("t_ns").is_some() && v.get("event").is_some())
        .unwrap_or(false)
}

fn parse_csv(n: usize, line: &str) -> Result<Event, String> {
    let f: Vec<&str> = line.split(',').collect();
    let bad = || format!("line {n}: expected {CSV_HEADER}, got '{line}'");
    if f.len() != 12 {
        return Err(bad());
    }
    Ok(Event {
        t_ns: f[0].parse().map_err(|_| bad())?,
        port: f[1].to_string(),
        kind: f[2].to_string(),
        flow: format!("{} {}:{} > {}:{}", f[4], f[5], f[7], f[6], f[8]),
        size: f[9].parse().map_err(|_| bad())?,
    })
}

fn parse_json(n: usize, line: &str) -> Result<Event, String> {
    let bad = |why: &str| format!("line {n}: {why}: '{line}'");
    let v: Value = serde_json::from_str(line).map_err(|e| bad(&e.to_string()))?;
    let u = |k: &str| v.get(k).and_then(Value::as_u64);
    let s = |k: &str| {
        v.get(k)
            .map(|x| x.to_string().trim_matches('"').to_string())
    };
    Ok(Event {
        t_ns: u("t_ns").ok_or_else(|| bad("no t_ns"))?,
        port: s("port").unwrap_or_default(),
        kind: s("event").ok_or_else(|| bad("no event"))?,
        flow: format!(
            "{} {}:{} > {}:{}",
            s("proto").unwrap_or_default(),
            s("src").unwrap_or_default(),
            s("sport").unwrap_or_default(),
            s("dst").unwrap_or_default(),
            s("dport").unwrap_or_default()
        ),
        size: u("size").ok_or_else(|| bad("no size"))?,
    })
}

/// A bin width of about a hundredth of `span_ns`, rounded to 1, 2 or 5
/// times a power of ten (at least 1 µs).
fn bin_ns(span_ns: u64) -> u64 {
    let target = (span_ns / 100).max(1_000);
    let mut p = 1_000u64;
    loop {
        for m in [1, 2, 5] {
            if p.saturating_mul(m) >= target {
                return p.saturating_mul(m);
            }
        }
        p = p.saturating_mul(10);
    }
}

/// Read an event log (`csv`: with its CSV header first).
pub fn read(text: &str, csv: bool) -> Result<Data, String> {
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate().skip(usize::from(csv)) {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        events.push(if csv {
            parse_csv(i + 1, line)?
        } else {
            parse_json(i + 1, line)?
        });
    }
    if events.is_empty() {
        return Err("the event log has no events".into());
    }
    let t0 = events.iter().map(|e| e.t_ns).min().unwrap_or(0);
    let t1 = events.iter().map(|e| e.t_ns).max().unwrap_or(0);
    let bin = bin_ns(t1 - t0);
    let dt = bin as f64 / 1e9;
    let nbins = ((t1 - t0) / bin + 1) as usize;
    let secs = |t: u64| (t - t0) as f64 / 1e9;

    // Bits per bin, per port: (arrivals, departures).
    let mut rates: BTreeMap<&str, PortBits> = BTreeMap::new();
    // Arrival instants waiting for their fate, per flow.
    let mut waiting: HashMap<&str, VecDeque<u64>> = HashMap::new();
    // Matched delays, per flow: (departure s, delay ms).
    let mut delays: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    let mut delivered: BTreeMap<&str, u64> = BTreeMap::new();
    for e in &events {
        let k = ((e.t_ns - t0) / bin) as usize;
        let (arr, dep) = rates
            .entry(e.port.as_str())
            .or_insert_with(|| (vec![0; nbins], vec![0; nbins]));
        let q = waiting.entry(e.flow.as_str()).or_default();
        match e.kind.as_str() {
            "arrive" => {
                arr[k] = arr[k].saturating_add(e.size.saturating_mul(8));
                q.push_back(e.t_ns);
            }
            "depart" => {
                dep[k] = dep[k].saturating_add(e.size.saturating_mul(8));
                let bytes = delivered.entry(e.flow.as_str()).or_default();
                *bytes = bytes.saturating_add(e.size);
                if let Some(a) = q.pop_front() {
                    let ms = (e.t_ns.saturating_sub(a)) as f64 / 1e6;
                    delays
                        .entry(e.flow.as_str())
                        .or_default()
                        .push((secs(e.t_ns), ms));
                }
            }
            "drop" => {
                if q.back() == Some(&e.t_ns) {
                    q.pop_back();
                } else {
                    q.pop_front();
                }
            }
            "duplicate" => {
                if let Some(&a) = q.back() {
                    q.push_back(a);
                }
            }
            _ => {}
        }
    }

    let mut d = Data::new(
        "an event log",
        format!(
            "pipelab event log: {} events over {:.3} s",
            events.len(),
            (t1 - t0) as f64 / 1e9
        ),
    );
    let mut ports: Vec<(&str, &PortBits)> = rates.iter().map(|(p, r)| (*p, r)).collect();
    ports.sort_by_key(|(_, r)| std::cmp::Reverse(total(&r.0).saturating_add(total(&r.1))));
    ports.truncate(MOST);
    ports.sort_by_key(|(p, _)| *p);
    let line = |bits: &[u64]| {
        steps(
            bits.iter()
                .enumerate()
                .map(|(k, b)| (k as f64 * dt, Some(*b as f64 / dt))),
            dt,
        )
    };
    for (port, (arr, dep)) in ports {
        if arr.iter().any(|&b| b > 0) {
            d.throughput.push(Line {
                name: format!("{port} arrivals"),
                points: line(arr),
                role: Role::Line,
            });
        }
        if dep.iter().any(|&b| b > 0) {
            d.throughput.push(Line {
                name: format!("{port} departures"),
                points: line(dep),
                role: Role::Line,
            });
        }
    }

    // The busiest flows by packets delivered.
    let mut flows: Vec<(&str, &Vec<(f64, f64)>)> = delays.iter().map(|(f, v)| (*f, v)).collect();
    flows.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
    flows.truncate(MOST);
    for (flow, pts) in &flows {
        d.scatter.push(Line {
            name: flow.to_string(),
            points: pts.to_vec(),
            role: Role::Line,
        });
        d.cdf.push(Line {
            name: flow.to_string(),
            points: empirical_cdf(pts.iter().map(|p| p.1).collect()),
            role: Role::Line,
        });
    }
    // Mean and max delay per bin, over every flow.
    let mut per_bin: Vec<(f64, f64, u64)> = vec![(0.0, 0.0, 0); nbins];
    for (t, ms) in delays.values().flatten() {
        let b = &mut per_bin[((t / dt) as usize).min(nbins - 1)];
        b.0 += ms;
        b.1 = b.1.max(*ms);
        b.2 += 1;
    }
    if delays.values().any(|v| !v.is_empty()) {
        let pts = |f: &dyn Fn(&(f64, f64, u64)) -> f64| {
            steps(
                per_bin
                    .iter()
                    .enumerate()
                    .map(|(k, b)| (k as f64 * dt, (b.2 > 0).then(|| f(b)))),
                dt,
            )
        };
        d.delay.push(Line {
            name: "mean".into(),
            points: pts(&|b| b.0 / b.2 as f64),
            role: Role::Line,
        });
        d.delay.push(Line {
            name: "max".into(),
            points: pts(&|b| b.1),
            role: Role::Thin,
        });
    } else {
        let why = "no departure in the log matches an arrival";
        for k in [Kind::Delay, Kind::Scatter, Kind::Cdf] {
            d.why_not.push((k, why.into()));
        }
    }
    let mut shares: Vec<(String, f64)> = delivered
        .into_iter()
        .map(|(f, b)| (f.to_string(), b as f64))
        .collect();
    shares.sort_by(|a, b| b.1.total_cmp(&a.1));
    shares.truncate(10);
    d.shares = shares;
    d.shares_label = "bytes delivered".into();
    d.shares_unit = Unit::Bytes;
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves departures are matched to arrivals in order within
    /// a flow, a drop at an arrival's instant takes that arrival, and the
    /// rates are bits per bin over the bin's length.
    #[test]
    fn delays_are_matched_in_order_per_flow() {
        let text = format!(
            "{CSV_HEADER}\n\
             0,a,arrive,,17,1.1.1.1,2.2.2.2,1,2,1000,1,1000\n\
             1000000,a,arrive,,17,1.1.1.1,2.2.2.2,1,2,1000,2,2000\n\
             1000000,a,drop,queue,17,1.1.1.1,2.2.2.2,1,2,1000,1,1000\n\
             2000000,a,arrive,,17,1.1.1.1,2.2.2.2,1,2,1000,2,2000\n\
             10000000,b,depart,,17,1.1.1.1,2.2.2.2,1,2,1000,1,1000\n\
             13000000,b,depart,,17,1.1.1.1,2.2.2.2,1,2,1000,0,0\n"
        );
        let d = read(&text, true).expect("reads");
        let pts = &d.scatter[0].points;
        assert_eq!(pts, &vec![(0.01, 10.0), (0.013, 11.0)]);
        assert_eq!(
            d.shares,
            vec![("17 1.1.1.1:1 > 2.2.2.2:2".to_string(), 2000.0)]
        );
        assert_eq!(d.throughput[0].name, "a arrivals");
        // 13 ms span: bins of 200 µs; 8000 bits in the first bin.
        assert_eq!(d.throughput[0].points[0], (0.0, 8000.0 / 0.0002));
        let err = read(&format!("{CSV_HEADER}\n1,2,3\n"), true)
            .err()
            .unwrap_or_default();
        assert!(err.starts_with("line 2: expected t_ns,port"), "{err}");
    }

    /// A pass proves sizes no run reaches, which a log may claim, add up
    /// to the largest count rather than overflow: bits per bin, bytes
    /// per flow and the ports' totals.
    #[test]
    fn huge_sizes_saturate() {
        let max = u64::MAX;
        let text = format!(
            "{CSV_HEADER}\n\
             0,a,arrive,,17,1.1.1.1,2.2.2.2,1,2,{max},1,1\n\
             0,a,arrive,,17,1.1.1.1,2.2.2.2,1,2,{max},1,1\n\
             5,b,arrive,,17,1.1.1.1,2.2.2.2,1,2,1,1,1\n\
             9,a,depart,,17,1.1.1.1,2.2.2.2,1,2,{max},0,0\n\
             9,a,depart,,17,1.1.1.1,2.2.2.2,1,2,{max},0,0\n"
        );
        let d = read(&text, true).expect("reads");
        assert_eq!(
            d.shares,
            vec![("17 1.1.1.1:1 > 2.2.2.2:2".to_string(), max as f64)]
        );
        assert_eq!(d.throughput[0].name, "a arrivals");
        assert_eq!(d.throughput[0].points[0].1, max as f64 / 1e-6);
    }
}
