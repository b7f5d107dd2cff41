//! A link that changes on a schedule: one-way delay traces (`delay
//! trace:PATH`) and timelines (`timeline PATH`).
//!
//! Both are read into the engine's [`MarkovGraph`], the graph a
//! `timevarying` link follows (PlanetLab-Dummynet §4.4), as a chain with
//! one state per row, each held for exactly the time to the next row
//! (a constant dwell) and followed by the next row with probability one.
//! The engine's channel then applies each row at its instant, exactly in
//! virtual time and within the runner's precision live; a change never
//! touches a queued packet, and a packet takes the delay in force when
//! its transmission ends. A shorter delay never lets a packet overtake
//! the one ahead of it (the delay line stays first in, first out, as on
//! a cellular link, whose base delay such traces record).
//!
//! # Delay trace, text
//! One row per line, `TIME DELAY`, both written as a pipe's `delay` (a
//! bare number is milliseconds, `2500us` and `1.5s` take their unit):
//! from `TIME` on, a packet is delayed by `DELAY`. The first row is at
//! time 0 and times increase. A last line `TIME loop` repeats the trace
//! every `TIME` (past the last row); without it the last delay holds.
//!
//! ```text
//! # time  one-way delay
//! 0       20
//! 1000    35.5
//! 2500    21
//! 4000    loop
//! ```
//!
//! # Delay trace, JSON (Rattan's)
//! Rattan's delay replay reads the `netem-trace` crate's configurations:
//! `{"StaticDelayConfig": {"delay": "10ms", "duration": "1s"}}` (a delay
//! held for a duration, forever when `duration` is absent) and
//! `{"RepeatedDelayPatternConfig": {"pattern": [...], "count": N}}` (the
//! pattern's items in turn, `N` times; forever when `N` is 0), nested at
//! will. A duration is text (`"10ms"`, `"1s 500ms"`) or
//! `{"secs": S, "nanos": N}`. When the trace ends, its last delay holds.
//!
//! # Timeline
//! One row per line, `TIME WORD VALUE ...`: from `TIME` on the link has
//! the words' values, each held until a later row changes it. Words:
//! `bw`, `delay`, `loss`, and on a wireless link `snr`, `netload` and
//! `collision`, written as in a pipe's configuration. Times increase;
//! before the first row the pipe has its own configuration. A last line
//! `TIME loop` repeats the timeline every `TIME`.
//!
//! ```text
//! # time  from this instant on
//! 0       bw 10Mbit/s delay 20ms
//! 2s      delay 40ms loss 1%
//! 5.5s    bw 2Mbit/s
//! 10s     loop
//! ```

use pipelab_engine::models::{Dwell, GraphState, MarkovGraph, Probability, StateParams};
use pipelab_engine::time::Duration;

use crate::files::{content_lines, state_params, TextError};
use crate::units;

/// The most rows a trace or timeline may expand to (a Rattan pattern
/// repeated `count` times is written out): 1,000,000 states of the
/// engine's graph, about 100 MB.
pub const MAX_ROWS: usize = 1_000_000;

/// One row: the parameters in force from its instant on, for `dwell`
/// (`None`: for ever), and the line it came from (0: none).
struct Row {
    params: StateParams,
    dwell: Option<Duration>,
    line: usize,
}

/// Reads a one-way delay trace (module docs): text rows or Rattan's
/// JSON.
pub fn parse_delay_trace(text: &str) -> Result<MarkovGraph, TextError> {
    if text.trim_start().starts_with('{') {
        return parse_rattan_delay(text);
    }
    let rows = read_rows(text, "a delay trace", |line, words| match words {
        [d] => {
            let delay = units::parse_delay(d).map_err(|e| at(line, e.to_string()))?;
            Ok(StateParams {
                delay: Some(delay),
                ..StateParams::default()
            })
        }
        _ => Err(at(
            line,
            format!(
                "expected `TIME DELAY` (or `TIME loop`), found {} words",
                words.len() + 1
            ),
        )),
    })?;
    if rows.first_at_zero {
        chain(rows.rows, rows.loop_to_first)
    } else {
        Err(at(
            rows.first_line,
            "a delay trace starts at time 0 (it gives the delay from the start)",
        ))
    }
}

/// Reads a timeline (module docs).
pub fn parse_timeline(text: &str) -> Result<MarkovGraph, TextError> {
    let mut acc = StateParams::default();
    let read = read_rows(text, "a timeline", |line, words| {
        if words.is_empty() {
            return Err(at(
                line,
                "a row needs words after its time, e.g. 2s delay 40ms",
            ));
        }
        if let Some(w) = words
            .iter()
            .step_by(2)
            .find(|w| LATER.contains(&w.to_ascii_lowercase().as_str()))
        {
            return Err(at(
                line,
                format!(
                    "`{w}` cannot change along a timeline yet: a row changes bw, delay and loss (and a wireless link's snr, netload and collision)"
                ),
            ));
        }
        let p = state_params(words).map_err(|m| at(line, m))?;
        acc = StateParams {
            bandwidth: p.bandwidth.or(acc.bandwidth),
            loss: p.loss.or(acc.loss),
            snr_db: p.snr_db.or(acc.snr_db),
            netload: p.netload.or(acc.netload),
            collision: p.collision.or(acc.collision),
            delay: p.delay.or(acc.delay),
        };
        acc.check().map_err(|e| at(line, e.message))?;
        Ok(acc)
    })?;
    let mut rows = read.rows;
    if !read.first_at_zero {
        // Before the first row, the pipe's own configuration.
        let first = rows[0].dwell_from;
        rows.insert(
            0,
            Timed {
                row: Row {
                    params: StateParams::default(),
                    dwell: None,
                    line: 0,
                },
                dwell_from: Duration::ZERO,
            },
        );
        rows[0].row.dwell = Some(first);
    }
    chain(rows, read.loop_to_first)
}

/// Pipe words a timeline row does not take yet (the engine's channel
/// changes rate, delay and loss).
const LATER: &[&str] = &[
    "jitter",
    "duplicate",
    "reorder",
    "corrupt",
    "queue",
    "limit",
    "rate",
    "ber",
];

fn at(line: usize, message: impl Into<String>) -> TextError {
    TextError {
        line: Some(line),
        message: message.into(),
    }
}

/// A row and the instant it starts.
struct Timed {
    row: Row,
    dwell_from: Duration,
}

/// The rows of a text trace or timeline, each row's dwell set to the time
/// to the next one.
struct Rows {
    rows: Vec<Timed>,
    first_at_zero: bool,
    first_line: usize,
    /// A `TIME loop` line closed the file: the last row's dwell ends there
    /// and the first row follows.
    loop_to_first: bool,
}

/// Reads `TIME WORDS...` lines, `words` turning a row's words (after its
/// time) into its parameters; a last `TIME loop` line repeats them.
fn read_rows(
    text: &str,
    what: &str,
    mut words: impl FnMut(usize, &[&str]) -> Result<StateParams, TextError>,
) -> Result<Rows, TextError> {
    let mut rows: Vec<Timed> = Vec::new();
    let mut end: Option<(Duration, usize)> = None;
    for (line, content) in content_lines(text) {
        if let Some((_, loop_line)) = end {
            return Err(at(
                line,
                format!("nothing may follow the `loop` line (line {loop_line})"),
            ));
        }
        let all: Vec<&str> = content.split_whitespace().collect();
        let Some((time, rest)) = all.split_first() else {
            continue;
        };
        let t = units::parse_delay(time).map_err(|e| {
            at(
                line,
                format!("a row starts with its time (e.g. 0, 250ms, 2s): {e}"),
            )
        })?;
        if let Some(prev) = rows.last() {
            if t <= prev.dwell_from {
                return Err(at(
                    line,
                    format!(
                        "time {t} is not after the row before (line {}, {})",
                        prev.row.line, prev.dwell_from
                    ),
                ));
            }
        }
        if let [w] = rest {
            if w.eq_ignore_ascii_case("loop") {
                if rows.is_empty() {
                    return Err(at(line, format!("{what} needs a row before `loop`")));
                }
                end = Some((t, line));
                continue;
            }
        }
        if rows.len() >= MAX_ROWS {
            return Err(at(line, format!("more than {MAX_ROWS} rows")));
        }
        let params = words(line, rest)?;
        rows.push(Timed {
            row: Row {
                params,
                dwell: None,
                line,
            },
            dwell_from: t,
        });
    }
    let Some(first) = rows.first() else {
        return Err(TextError {
            line: None,
            message: format!("{what} with no rows (e.g. `0 20ms`)"),
        });
    };
    let (first_at_zero, first_line) = (first.dwell_from == Duration::ZERO, first.row.line);
    for i in 1..rows.len() {
        let gap = Duration(rows[i].dwell_from.0 - rows[i - 1].dwell_from.0);
        rows[i - 1].row.dwell = Some(gap);
    }
    if let (Some((t, _)), Some(last)) = (end, rows.last_mut()) {
        last.row.dwell = Some(Duration(t.0 - last.dwell_from.0));
    }
    // A loop back to time 0 when the first row is later: the pipe's own
    // configuration comes first again, so the chain loops to state 0.
    Ok(Rows {
        rows,
        first_at_zero,
        first_line,
        loop_to_first: end.is_some(),
    })
}

/// The chain of `rows` as a graph: each row's state held for its dwell,
/// then the next; after the last, the first again (`looped`) or the last
/// held for ever.
fn chain(rows: Vec<Timed>, looped: bool) -> Result<MarkovGraph, TextError> {
    let rows: Vec<Row> = rows.into_iter().map(|t| t.row).collect();
    chain_rows(rows, looped.then_some(0))
}

fn chain_rows(rows: Vec<Row>, loop_to: Option<usize>) -> Result<MarkovGraph, TextError> {
    let n = rows.len();
    let lines: Vec<usize> = rows.iter().map(|r| r.line).collect();
    let mut states = Vec::with_capacity(n);
    for (i, r) in rows.into_iter().enumerate() {
        let last = i + 1 == n;
        let (dwell, next) = match (r.dwell, last, loop_to) {
            (Some(d), false, _) => (d, i + 1),
            (Some(d), true, Some(first)) => (d, first),
            // The last row holds for ever (the engine's walk stops at the
            // end of time).
            (_, true, _) | (None, false, _) => (Duration(u64::MAX), i),
        };
        let dwell = Dwell::new(vec![(Probability::ONE, dwell)]).map_err(|e| TextError {
            line: (r.line > 0).then_some(r.line),
            message: e.message,
        })?;
        let name = if r.line > 0 {
            format!("line {}", r.line)
        } else {
            format!("row {}", i + 1)
        };
        states.push(GraphState {
            name,
            params: r.params,
            dwell,
            arcs: vec![(next, Probability::ONE)],
        });
    }
    MarkovGraph::new(states, 0).map_err(|e| TextError {
        line: e
            .index
            .and_then(|i| lines.get(i).copied())
            .filter(|&l| l > 0),
        message: e.message,
    })
}

/// Rattan's delay trace: `netem-trace`'s JSON (module docs).
fn parse_rattan_delay(text: &str) -> Result<MarkovGraph, TextError> {
    let whole = |message: String| TextError {
        line: None,
        message,
    };
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| TextError {
        line: Some(e.line()),
        message: format!("not JSON: {e}"),
    })?;
    let mut rows: Vec<Row> = Vec::new();
    let tail = rattan_items(&v, &mut rows, "the trace").map_err(whole)?;
    if rows.is_empty() {
        return Err(whole("a delay trace with no delay in it".into()));
    }
    let loop_to = match tail {
        Tail::Loop(from) if from < rows.len() => Some(from),
        _ => None,
    };
    chain_rows(rows, loop_to)
}

/// How a Rattan trace goes on after the rows written so far.
enum Tail {
    /// The trace ends there (or goes on with what follows).
    Ends,
    /// The last row holds for ever: nothing after it happens.
    Holds,
    /// The rows from this index repeat for ever.
    Loop(usize),
}

fn rattan_items(v: &serde_json::Value, rows: &mut Vec<Row>, at: &str) -> Result<Tail, String> {
    let obj = v
        .as_object()
        .filter(|o| o.len() == 1)
        .ok_or_else(|| format!("{at}: expected {{\"StaticDelayConfig\": ...}} or {{\"RepeatedDelayPatternConfig\": ...}}"))?;
    let (kind, body) = obj
        .iter()
        .next()
        .ok_or_else(|| format!("{at}: empty object"))?;
    match kind.as_str() {
        "StaticDelayConfig" => {
            let delay = body
                .get("delay")
                .ok_or_else(|| format!("{at}: StaticDelayConfig without a delay"))
                .and_then(|d| rattan_duration(d).map_err(|e| format!("{at}: delay: {e}")))?;
            let dwell = match body.get("duration") {
                None | Some(serde_json::Value::Null) => None,
                Some(d) => Some(rattan_duration(d).map_err(|e| format!("{at}: duration: {e}"))?),
            };
            if dwell == Some(Duration::ZERO) {
                return Ok(Tail::Ends);
            }
            if rows.len() >= MAX_ROWS {
                return Err(format!("the trace expands to more than {MAX_ROWS} rows"));
            }
            rows.push(Row {
                params: StateParams {
                    delay: Some(delay),
                    ..StateParams::default()
                },
                dwell,
                line: 0,
            });
            Ok(if dwell.is_none() {
                Tail::Holds
            } else {
                Tail::Ends
            })
        }
        "RepeatedDelayPatternConfig" => {
            let pattern = body
                .get("pattern")
                .and_then(|p| p.as_array())
                .ok_or_else(|| format!("{at}: RepeatedDelayPatternConfig without a pattern list"))?;
            let count = match body.get("count") {
                None => 0,
                Some(c) => c
                    .as_u64()
                    .ok_or_else(|| format!("{at}: count must be a whole number"))?,
            };
            let from = rows.len();
            let mut n = 0u64;
            loop {
                for (k, item) in pattern.iter().enumerate() {
                    match rattan_items(item, rows, &format!("{at}, pattern item {}", k + 1))? {
                        Tail::Ends => {}
                        t @ (Tail::Holds | Tail::Loop(_)) => return Ok(t),
                    }
                }
                n += 1;
                if rows.len() == from {
                    // Nothing but empty items: nothing to repeat.
                    return Ok(Tail::Ends);
                }
                if count == 0 {
                    return Ok(Tail::Loop(from));
                }
                if n >= count {
                    return Ok(Tail::Ends);
                }
                if rows.len() >= MAX_ROWS {
                    return Err(format!("the trace expands to more than {MAX_ROWS} rows"));
                }
            }
        }
        other => Err(format!(
            "{at}: `{other}` is not a delay trace configuration (StaticDelayConfig or RepeatedDelayPatternConfig)"
        )),
    }
}

/// A duration as `netem-trace` writes one: text with units (`"10ms"`,
/// `"1s 500ms"`) or `{"secs": S, "nanos": N}`.
fn rattan_duration(v: &serde_json::Value) -> Result<Duration, String> {
    match v {
        serde_json::Value::String(s) => {
            let mut total = Duration::ZERO;
            let mut any = false;
            for part in s.split_whitespace() {
                let d = units::parse_delay(part).map_err(|e| e.to_string())?;
                total = Duration(total.0.checked_add(d.0).ok_or("too long")?);
                any = true;
            }
            if any {
                Ok(total)
            } else {
                Err("empty duration".into())
            }
        }
        serde_json::Value::Object(o) => {
            let secs = o.get("secs").and_then(|s| s.as_u64()).unwrap_or(0);
            let nanos = o.get("nanos").and_then(|s| s.as_u64()).unwrap_or(0);
            if nanos >= 1_000_000_000 || !o.keys().all(|k| k == "secs" || k == "nanos") {
                return Err(format!("expected {{\"secs\": S, \"nanos\": N}}, found {v}"));
            }
            secs.checked_mul(1_000_000_000)
                .and_then(|s| s.checked_add(nanos))
                .map(Duration)
                .ok_or_else(|| "too long".into())
        }
        _ => Err(format!("expected a duration such as \"10ms\", found {v}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipelab_engine::models::TimeVarying;
    use pipelab_engine::rng::{stage_rng, StageKind};
    use pipelab_engine::time::Instant;

    fn ms(n: u64) -> Duration {
        Duration(n * 1_000_000)
    }

    /// The delay in force at each of `times` (ms).
    fn delays(g: MarkovGraph, times: &[u64]) -> Vec<Option<Duration>> {
        let mut walk = TimeVarying::new(g, stage_rng(1, StageKind::Link, 0), Instant::ZERO);
        times
            .iter()
            .map(|&t| walk.params_at(Instant::ZERO + ms(t)).0.delay)
            .collect()
    }

    /// Pass proves: a text delay trace gives each row's delay from its
    /// instant to the next, loops with `loop`, and holds the last delay
    /// without it.
    #[test]
    fn text_delay_trace_steps_and_loops() {
        let g = parse_delay_trace("# t d\n0 20\n1000 35.5\n2500us 21\n").map_err(|e| e.to_string());
        assert!(g.is_err(), "times must increase: {g:?}");
        let g = parse_delay_trace("0 20\n1000 35.5\n2500 21\n4000 loop\n").expect("trace");
        let d = delays(g, &[0, 999, 1000, 2499, 2500, 3999, 4000, 5000, 8000]);
        let want = [20.0, 20.0, 35.5, 35.5, 21.0, 21.0, 20.0, 35.5, 20.0];
        for (got, w) in d.iter().zip(want) {
            assert_eq!(*got, Some(Duration((w * 1e6) as u64)));
        }
        let g = parse_delay_trace("0 20\n1000 30\n").expect("trace");
        assert_eq!(
            delays(g, &[0, 1000, 1_000_000]),
            vec![Some(ms(20)), Some(ms(30)), Some(ms(30))]
        );
    }

    /// Pass proves: each malformed text trace or timeline is refused at
    /// its line with a message saying what is wrong.
    #[test]
    fn errors_name_the_line() {
        for (text, line, says) in [
            ("10 20\n", Some(1), "starts at time 0"),
            ("0 20\n0 30\n", Some(2), "not after"),
            ("0 20 5\n", Some(1), "expected `TIME DELAY`"),
            ("0 x\n", Some(1), "x"),
            ("0 20\n0 loop\n", Some(2), "not after"),
            ("0 20\n100 loop\n200 30\n", Some(3), "nothing may follow"),
            ("# none\n", None, "no rows"),
        ] {
            let e = parse_delay_trace(text).expect_err(text);
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.message.contains(says), "{text:?}: {e}");
        }
        for (text, line, says) in [
            (
                "0 duplicate 1%\n",
                Some(1),
                "cannot change along a timeline",
            ),
            ("0 bw\n", Some(1), "needs a value"),
            ("0 loss 200%\n", Some(1), ""),
            ("1s\n", Some(1), "needs words"),
        ] {
            let e = parse_timeline(text).expect_err(text);
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.message.contains(says), "{text:?}: {e}");
        }
    }

    /// Pass proves: a timeline's rows accumulate (a word holds until
    /// changed), the pipe's own configuration comes before a first row
    /// after 0, and `loop` repeats from time 0.
    #[test]
    fn timeline_rows_accumulate() {
        let g = parse_timeline("1s bw 10Mbit/s delay 20ms\n2s delay 40ms loss 1%\n3s loop\n")
            .expect("timeline");
        let mut walk = TimeVarying::new(g, stage_rng(1, StageKind::Link, 0), Instant::ZERO);
        let at = |w: &mut TimeVarying, t: u64| *w.params_at(Instant::ZERO + ms(t)).0;
        assert_eq!(at(&mut walk, 500), StateParams::default());
        let p = at(&mut walk, 1500);
        assert_eq!(
            (p.bandwidth.map(|b| b.bps()), p.delay, p.loss),
            (Some(10_000_000), Some(ms(20)), None)
        );
        let p = at(&mut walk, 2500);
        assert_eq!(
            (p.bandwidth.map(|b| b.bps()), p.delay, p.loss),
            (Some(10_000_000), Some(ms(40)), Some(0.01))
        );
        assert_eq!(at(&mut walk, 3500), StateParams::default());
        assert_eq!(at(&mut walk, 4500).delay, Some(ms(20)));
    }

    /// Pass proves: Rattan's JSON (netem-trace's configurations) gives
    /// the delays it describes: a repeated pattern `count` times then the
    /// last delay held, `count` 0 for ever, durations as text or
    /// `secs`/`nanos`.
    #[test]
    fn rattan_json_delay_traces() {
        let twice = r#"{"RepeatedDelayPatternConfig":{"pattern":[
            {"StaticDelayConfig":{"delay":"10ms","duration":"1s"}},
            {"StaticDelayConfig":{"delay":{"secs":0,"nanos":20000000},"duration":{"secs":1,"nanos":0}}}],
            "count":2}}"#;
        let g = parse_delay_trace(twice).expect("json");
        assert_eq!(
            delays(g, &[0, 1000, 2000, 3000, 4000, 60_000]),
            vec![
                Some(ms(10)),
                Some(ms(20)),
                Some(ms(10)),
                Some(ms(20)),
                Some(ms(20)),
                Some(ms(20))
            ]
        );
        let forever = twice.replace("\"count\":2", "\"count\":0");
        let g = parse_delay_trace(&forever).expect("json");
        assert_eq!(
            delays(g, &[0, 1000, 4000, 5000, 60_001]),
            vec![
                Some(ms(10)),
                Some(ms(20)),
                Some(ms(10)),
                Some(ms(20)),
                Some(ms(10))
            ]
        );
        let held = r#"{"StaticDelayConfig":{"delay":"7ms"}}"#;
        assert_eq!(
            delays(parse_delay_trace(held).expect("json"), &[0, 99_999]),
            vec![Some(ms(7)); 2]
        );
        for bad in [
            r#"{"StaticBwConfig":{"bw":"1Mbps"}}"#,
            r#"{"StaticDelayConfig":{"duration":"1s"}}"#,
            r#"{"RepeatedDelayPatternConfig":{"pattern":[],"count":1}}"#,
            r#"{"RepeatedDelayPatternConfig":{"pattern":[{"StaticDelayConfig":{"delay":"1ms","duration":"1ms"}}],"count":2000000}}"#,
            "{ not json",
        ] {
            assert!(parse_delay_trace(bad).is_err(), "{bad}");
        }
    }
}
