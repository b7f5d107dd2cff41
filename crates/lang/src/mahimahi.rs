//! Mahimahi's shell chains as users type them: `mm-delay 20 mm-loss
//! uplink 0.01 mm-link up.trace down.trace` (`pipelab shell --mm`).
//!
//! Sources: Mahimahi's `src/frontend/delayshell.cc`, `lossshell.cc`,
//! `linkshell.cc` (its options and queue types) and
//! `src/packet/dropping_packet_queue.cc`, `codel_packet_queue.cc`,
//! `pie_packet_queue.cc` (the queue arguments), and the man pages
//! mm-delay(1), mm-loss(1), mm-link(1).
//!
//! Each shell becomes the words of pipelab's two pipes, uplink (from the
//! shell's command outwards) and downlink:
//!
//! | Mahimahi | pipelab, per direction |
//! |---|---|
//! | `mm-delay MS` | `delay MS` both ways (several add up) |
//! | `mm-loss uplink\|downlink RATE` | `loss RATE` on that direction (several combine: `1 − Π(1 − pᵢ)`) |
//! | `mm-link UP DOWN` | `bw trace:UP` up, `bw trace:DOWN` down, an unbounded queue (Mahimahi's `infinite`: pipelab's largest, 1,000,000 packets, under `--mem-cap`) |
//! | `--uplink-queue=droptail --uplink-queue-args=packets=N` (or `bytes=N`) | `queue N` (or `queue NB`) |
//! | `--uplink-queue=codel --uplink-queue-args=packets=N,target=T,interval=I` | `queue N codel target Tms interval Ims` |
//! | `--uplink-queue=pie --uplink-queue-args=packets=N,qdelay_ref=T,max_burst=B` | `queue N pie target Tms max_burst Bms` |
//!
//! (the same with `downlink`). One pipe per direction holds the whole
//! chain, in its order queue → link → delay: Mahimahi's nested shells
//! put an outer `mm-delay` before an inner `mm-link` on the downlink;
//! a fixed delay before or after a trace-driven link gives the same
//! throughput and delays, but not the same instant for each packet.
//!
//! Refused, each with the reason and what to use: `mm-onoff`, a second
//! `mm-link`, `--once` (pipelab's traces loop), `drophead` queues, both
//! `packets` and `bytes` on one queue, `--uplink-log` and the meters
//! (`--events`, `--pcap` and `pipelab plot` record and draw the run).

use pipelab_engine::config::{QueueLimit, MAX_QUEUE_SLOTS};
use pipelab_engine::time::Duration;

use crate::ast::{AqmSpec, Chance, LossSpec, PieSpec, PipeSpec};
use crate::error::ParseError;
use crate::units::{self, Probability};

/// The two pipes of a Mahimahi chain.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MmChain {
    /// From the shell's command outwards.
    pub uplink: PipeSpec,
    /// Towards the shell's command.
    pub downlink: PipeSpec,
}

/// One direction's `--*-queue=TYPE` word and `--*-queue-args=ARGS` (the
/// option's word and the arguments).
type QueueOptions<'a> = (Option<Word<'a>>, Option<(Word<'a>, String)>);

/// A word of the chain and its column (from 1, in characters).
#[derive(Clone, Copy)]
struct Word<'a> {
    text: &'a str,
    column: u32,
}

fn words(text: &str) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    let mut start: Option<(usize, u32)> = None;
    let mut column = 0u32;
    for (i, c) in text.char_indices() {
        column += 1;
        if c.is_whitespace() {
            if let Some((s, col)) = start.take() {
                out.push(Word {
                    text: &text[s..i],
                    column: col,
                });
            }
        } else if start.is_none() {
            start = Some((i, column));
        }
    }
    if let Some((s, col)) = start {
        out.push(Word {
            text: &text[s..],
            column: col,
        });
    }
    out
}

/// Reads a chain of Mahimahi shells (module docs) into two pipes' words.
/// An error names the word, at its column.
pub fn parse_mm_chain(text: &str) -> Result<MmChain, ParseError> {
    let ws = words(text);
    let end = text.chars().count() as u32 + 1;
    let at = |w: Word<'_>, message: String, hint: Option<&str>| {
        ParseError::new(1, w.column, w.text, message, hint.map(str::to_string))
    };
    let missing = |what: &str, hint: &str| {
        ParseError::new(
            1,
            end,
            "",
            format!("missing {what}"),
            Some(hint.to_string()),
        )
    };
    let mut chain = MmChain::default();
    let (mut delay, mut up_keep, mut down_keep) = (Duration::ZERO, 1.0f64, 1.0f64);
    let mut any_delay = false;
    let mut link: Option<Word<'_>> = None;
    let mut i = 0;
    if ws.is_empty() {
        return Err(missing(
            "a Mahimahi shell",
            "e.g. mm-delay 20 mm-loss uplink 0.01 mm-link up.trace down.trace",
        ));
    }
    while i < ws.len() {
        let w = ws[i];
        i += 1;
        match w.text {
            "mm-delay" => {
                let Some(&v) = ws.get(i) else {
                    return Err(missing("the delay after 'mm-delay'", "e.g. mm-delay 20 (milliseconds)"));
                };
                i += 1;
                let d = units::parse_delay(v.text)
                    .map_err(|e| at(v, e.to_string(), Some("mm-delay takes milliseconds, e.g. mm-delay 20")))?;
                delay = Duration(delay.0.saturating_add(d.0));
                any_delay = true;
            }
            "mm-loss" => {
                let (Some(&dir), Some(&rate)) = (ws.get(i), ws.get(i + 1)) else {
                    return Err(missing(
                        "'uplink|downlink RATE' after 'mm-loss'",
                        "e.g. mm-loss uplink 0.01",
                    ));
                };
                i += 2;
                let p = units::parse_probability(rate.text)
                    .map_err(|e| at(rate, e.to_string(), Some("a loss rate in 0..1, e.g. 0.01")))?
                    .as_f64();
                match dir.text {
                    "uplink" => up_keep *= 1.0 - p,
                    "downlink" => down_keep *= 1.0 - p,
                    _ => {
                        return Err(at(
                            dir,
                            format!("mm-loss takes uplink or downlink, not '{}'", dir.text),
                            Some("e.g. mm-loss downlink 0.05"),
                        ))
                    }
                }
            }
            "mm-link" => {
                if let Some(first) = link {
                    return Err(at(
                        w,
                        format!("a second mm-link (the first is at column {})", first.column),
                        Some("pipelab's shell has one link per direction: merge the traces into one"),
                    ));
                }
                link = Some(w);
                let (Some(&up), Some(&down)) = (ws.get(i), ws.get(i + 1)) else {
                    return Err(missing(
                        "'UPLINK-TRACE DOWNLINK-TRACE' after 'mm-link'",
                        "e.g. mm-link up.trace down.trace",
                    ));
                };
                for t in [up, down] {
                    if t.text.starts_with("--") || t.text.starts_with("mm-") {
                        return Err(at(
                            t,
                            "mm-link takes its two traces first".into(),
                            Some("e.g. mm-link up.trace down.trace --uplink-queue=droptail --uplink-queue-args=packets=100"),
                        ));
                    }
                }
                for t in [up, down] {
                    // The pipe's words must hold the path as it is (they
                    // are printed in reports and read back).
                    let line = format!("pipe 1 config bw trace:{}", t.text);
                    let held = matches!(
                        crate::parse_line(&line),
                        Ok(Some(crate::Command::PipeConfig { spec, .. }))
                            if spec.bw_trace.as_deref() == Some(t.text)
                    );
                    if !held {
                        return Err(at(
                            t,
                            format!("the trace path '{}' cannot be written as a pipe's word", t.text),
                            Some("rename the file without commas, quotes, braces or '#'"),
                        ));
                    }
                }
                i += 2;
                chain.uplink.bw_trace = Some(up.text.to_string());
                chain.downlink.bw_trace = Some(down.text.to_string());
                let mut queues: [QueueOptions<'_>; 2] =
                    [(None, None), (None, None)];
                while let Some(&o) = ws.get(i) {
                    if !o.text.starts_with("--") {
                        break;
                    }
                    i += 1;
                    let (name, value) = match o.text.split_once('=') {
                        Some((n, v)) => (n, Some(v)),
                        None => (o.text, None),
                    };
                    let side = if name.starts_with("--uplink") { 0 } else { 1 };
                    match (name, value) {
                        ("--uplink-queue" | "--downlink-queue", Some(v)) => {
                            queues[side].0 = Some(Word { text: v.trim_matches(['"', '\'']), column: o.column + name.len() as u32 + 1 });
                        }
                        ("--uplink-queue-args" | "--downlink-queue-args", Some(v)) => {
                            // "packets=100, target=5": the words up to
                            // the last that ends with a comma are one.
                            let mut args = v.to_string();
                            while args.ends_with(',') {
                                let Some(&more) = ws.get(i) else { break };
                                i += 1;
                                args.push_str(more.text);
                            }
                            let args = args.trim_matches(['"', '\'']).to_string();
                            queues[side].1 = Some((o, args));
                        }
                        ("--once", None) => {
                            return Err(at(o, "--once is not supported: pipelab's bandwidth traces always loop".into(), Some("write the trace out for as long as the run lasts")));
                        }
                        ("--uplink-log" | "--downlink-log", _) => {
                            return Err(at(o, format!("{name} is Mahimahi's own log"), Some("pipelab records every arrival, departure and drop with --events FILE (or --pcap FILE)")));
                        }
                        (m, None) if m.starts_with("--meter-") => {
                            return Err(at(o, format!("{m} opens Mahimahi's live graph"), Some("sample the run with --interval 100ms --stats FILE and draw it with pipelab plot")));
                        }
                        _ => {
                            return Err(at(o, format!("unknown mm-link option '{}'", o.text), Some("mm-link takes --uplink-queue=TYPE, --uplink-queue-args=ARGS and the same for --downlink")));
                        }
                    }
                }
                for (side, (kind, args)) in queues.into_iter().enumerate() {
                    let spec = if side == 0 { &mut chain.uplink } else { &mut chain.downlink };
                    link_queue(spec, kind, args)?;
                }
            }
            "mm-onoff" => {
                return Err(at(w, "mm-onoff is not supported".into(), Some("a timevarying graph switches a link between states (README: timevarying)")))
            }
            other if other.starts_with("mm-") => {
                return Err(at(w, format!("'{other}' is not one of Mahimahi's link shells"), Some("pipelab reads mm-delay, mm-loss and mm-link")))
            }
            _ => {
                return Err(at(
                    w,
                    format!("expected a Mahimahi shell, found '{}'", w.text),
                    Some("mm-delay MS, mm-loss uplink|downlink RATE or mm-link UP DOWN; the command goes after --"),
                ))
            }
        }
    }
    if any_delay {
        chain.uplink.delay = Some(delay);
        chain.downlink.delay = Some(delay);
    }
    for (keep, spec) in [
        (up_keep, &mut chain.uplink),
        (down_keep, &mut chain.downlink),
    ] {
        if keep < 1.0 {
            let ppb = ((1.0 - keep) * Probability::ONE_PPB as f64).round() as u32;
            let p = Probability::from_ppb(ppb).unwrap_or(Probability::ONE);
            spec.loss = Some(LossSpec::Random(Chance {
                p,
                correlation: None,
            }));
        }
    }
    if link.is_some() {
        for spec in [&mut chain.uplink, &mut chain.downlink] {
            // Mahimahi's default queue is `infinite`.
            spec.queue.get_or_insert(QueueLimit::Slots(MAX_QUEUE_SLOTS));
        }
    }
    // Each pipe must be one the language writes and reads back (it is
    // printed in reports and by `pipe show`): values Mahimahi takes that
    // a pipe refuses (a delay beyond the engine's range) are said here,
    // at the link (or the first shell), with the language's message.
    let w = link.unwrap_or(ws[0]);
    for (dir, spec) in [("uplink", &chain.uplink), ("downlink", &chain.downlink)] {
        let line = format!("pipe 1 config {spec}");
        let back = crate::parse_line(&line);
        let same =
            matches!(&back, Ok(Some(crate::Command::PipeConfig { spec: b, .. })) if b == spec);
        if !same {
            let why = match back {
                Err(e) => e.message,
                _ => "it does not read back as written".into(),
            };
            return Err(at(
                w,
                format!("the {dir} cannot be a pipe: {why}"),
                Some("see the values of the chain"),
            ));
        }
    }
    Ok(chain)
}

/// One direction's `--*-queue=TYPE` and `--*-queue-args=ARGS` onto its
/// pipe.
fn link_queue(
    spec: &mut PipeSpec,
    kind: Option<Word<'_>>,
    args: Option<(Word<'_>, String)>,
) -> Result<(), ParseError> {
    let err = |w: Word<'_>, m: String, h: &str| {
        ParseError::new(1, w.column, w.text, m, Some(h.to_string()))
    };
    let kind_text = kind.map_or("infinite", |k| k.text);
    let mut packets = None;
    let mut bytes = None;
    let mut times: Vec<(String, u64)> = Vec::new();
    if let Some((w, text)) = &args {
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((name, value)) = pair.split_once('=') else {
                return Err(err(
                    *w,
                    format!("queue argument '{pair}' is not NAME=NUMBER"),
                    "e.g. packets=100 or bytes=150000, target=5, interval=100",
                ));
            };
            let Ok(n) = value.trim().parse::<u64>() else {
                return Err(err(
                    *w,
                    format!("queue argument '{pair}': '{value}' is not a whole number"),
                    "Mahimahi's queue arguments are whole numbers (times in ms)",
                ));
            };
            match name.trim() {
                // 0 is no bound on that measure, as in Mahimahi.
                "packets" => packets = Some(n).filter(|&n| n > 0),
                "bytes" => bytes = Some(n).filter(|&n| n > 0),
                // 0 is not given, as Mahimahi reads it.
                t @ ("target" | "interval" | "qdelay_ref" | "max_burst") if n > 0 => {
                    times.push((t.to_string(), n))
                }
                "target" | "interval" | "qdelay_ref" | "max_burst" => {}
                other => {
                    return Err(err(
                        *w,
                        format!("unknown queue argument '{other}'"),
                        "packets, bytes, target, interval, qdelay_ref, max_burst",
                    ));
                }
            }
        }
    }
    // Errors point at the type, else at the arguments.
    let at_kind = kind.or(args.as_ref().map(|(w, _)| *w)).unwrap_or(Word {
        text: kind_text,
        column: 1,
    });
    let limit = match (packets, bytes) {
        (Some(_), Some(_)) => {
            return Err(err(
                at_kind,
                "a queue bounded both in packets and in bytes".into(),
                "pipelab bounds a queue in packets or in bytes: give one",
            ));
        }
        (Some(p), None) => Some(QueueLimit::Slots(
            u32::try_from(p)
                .unwrap_or(u32::MAX)
                .clamp(1, MAX_QUEUE_SLOTS),
        )),
        (None, Some(b)) => Some(QueueLimit::Bytes(b.max(1))),
        (None, None) => None,
    };
    let time = |name: &str| {
        times
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, v)| Duration(v.saturating_mul(1_000_000)))
    };
    match kind_text {
        "infinite" if args.is_some() => {
            return Err(err(at_kind, "an infinite queue takes no arguments".into(), "give a type with the limit, e.g. --uplink-queue=droptail --uplink-queue-args=packets=100"));
        }
        "infinite" => {}
        "droptail" | "codel" | "pie" if limit.is_none() => {
            return Err(err(
                at_kind,
                format!("a {kind_text} queue needs a limit"),
                "e.g. --uplink-queue-args=packets=100 (or bytes=150000), as Mahimahi requires",
            ));
        }
        "droptail" => {}
        "codel" => {
            let (Some(target), Some(interval)) = (time("target"), time("interval")) else {
                return Err(err(
                    at_kind,
                    "a codel queue needs target and interval".into(),
                    "e.g. --uplink-queue-args=packets=100,target=5,interval=100 (ms)",
                ));
            };
            spec.aqm = Some(AqmSpec::Codel {
                target: Some(target),
                interval: Some(interval),
            });
        }
        "pie" => {
            let (Some(target), Some(max_burst)) = (time("qdelay_ref"), time("max_burst")) else {
                return Err(err(
                    at_kind,
                    "a pie queue needs qdelay_ref and max_burst".into(),
                    "e.g. --uplink-queue-args=packets=100,qdelay_ref=15,max_burst=150 (ms)",
                ));
            };
            spec.aqm = Some(AqmSpec::Pie(PieSpec {
                target: Some(target),
                max_burst: Some(max_burst),
                ..PieSpec::default()
            }));
        }
        "drophead" => {
            return Err(err(
                at_kind,
                "drophead queues are not supported".into(),
                "use droptail, codel or pie",
            ));
        }
        other => {
            return Err(err(
                at_kind,
                format!("unknown queue type '{other}'"),
                "infinite, droptail, codel or pie",
            ));
        }
    }
    if kind_text != "infinite" {
        spec.queue = limit;
    }
    Ok(())
}
