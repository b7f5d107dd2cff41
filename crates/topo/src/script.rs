//! Experiment files for `pipelab topo run`: commands at times.
//!
//! ```text
//! # time  command
//! 0s      exec r1 iperf3 -s -D
//! 1s      exec c3 iperf3 -c 10.0.0.5 -t 10 --json > out.json
//! 5s      link A B down
//! 8s      link A B up
//! 9.5s    node N down
//! ```
//!
//! One command per line; `#` starts a comment. The time is a number with
//! a unit (`s`, `ms`, `us`; a bare number is seconds), counted from the
//! start of the run; lines run in time order (lines with equal times in
//! file order). Commands:
//!
//! * `exec VN SHELL-TEXT`: run `sh -c SHELL-TEXT` in VN's namespace, in
//!   the background (redirections and pipes work; the run waits for it at
//!   the end);
//! * `link A B down|up`, `node N down|up`: fault injection through the
//!   running emulator (node names or ids);
//! * `link A B set bw 1Mbit/s delay 10ms loss 1% queue 20` (any subset):
//!   new link attributes;
//! * `every PERIOD until END link A B set ATTR VALUE ...`: scheduled
//!   changes (ModelNet §4.3, the ACDC experiment): the change at the
//!   line's time and every PERIOD after it up to END, where a value
//!   `LO..HI` (of `bw`, `delay` or `loss`) is drawn uniformly at each
//!   step, from a generator seeded by the line number (a run is
//!   reproducible);
//! * `cross SRC DST RATE [SRC DST RATE ...]` / `cross clear`: the
//!   synthetic cross-traffic matrix from this time on (ModelNet §4.3,
//!   [`crate::cross`]); each `cross` line replaces the previous matrix.

use pipelab_engine::Duration;

use crate::model::parse_delay;
use crate::TopoError;

/// What a script line does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Run shell text in a VN.
    Exec {
        /// The VN (name, id or address).
        vn: String,
        /// The shell text.
        command: String,
    },
    /// A control command for the emulator (`link A B down`, ...).
    Control(String),
}

/// One timed line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Offset from the start.
    pub at: Duration,
    /// Line number (1-based).
    pub line: usize,
    /// What to do.
    pub action: Action,
}

fn err(line: usize, msg: impl core::fmt::Display) -> TopoError {
    TopoError::Invalid(format!("line {line}: {msg}"))
}

fn parse_time(s: &str) -> Result<Duration, String> {
    if s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let v: f64 = s.parse().map_err(|_| format!("bad time `{s}`"))?;
        if !(0.0..=86_400.0).contains(&v) {
            return Err(format!("time `{s}` is not in [0, 86400] s"));
        }
        return Ok(Duration::from_nanos((v * 1e9).round() as u64));
    }
    parse_delay(s)
}

/// Parse an experiment file; steps come back sorted by time (stable).
pub fn parse_script(text: &str) -> Result<Vec<Step>, TopoError> {
    let mut steps = Vec::new();
    for (k, raw) in text.lines().enumerate() {
        let line = k + 1;
        let body = raw.trim();
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let (time, rest) = body
            .split_once(char::is_whitespace)
            .ok_or_else(|| err(line, format!("expected `TIME COMMAND`, got `{body}`")))?;
        let at = parse_time(time).map_err(|e| err(line, e))?;
        let rest = rest.trim_start();
        if let Some(sched) = rest.strip_prefix("every ") {
            steps.extend(parse_every(line, at, sched)?);
            continue;
        }
        let (verb, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let args = args.trim();
        let words: Vec<&str> = args.split_whitespace().collect();
        let action = match verb {
            "exec" => {
                let (vn, command) = args
                    .split_once(char::is_whitespace)
                    .ok_or_else(|| err(line, "expected `exec VN COMMAND...`"))?;
                Action::Exec {
                    vn: vn.to_string(),
                    command: command.trim().to_string(),
                }
            }
            "link" => match words.as_slice() {
                [a, b, s @ ("up" | "down")] => Action::Control(format!("link {a} {b} {s}")),
                [_, _, "set", rest @ ..]
                    if !rest.is_empty() && rest.chunks_exact(2).remainder().is_empty() =>
                {
                    Action::Control(format!("link {args}"))
                }
                _ => {
                    return Err(err(
                        line,
                        "expected `link A B down|up` or `link A B set ATTR VALUE...`",
                    ))
                }
            },
            "cross" if !words.is_empty() => Action::Control(format!("cross {args}")),
            "node" => match words.as_slice() {
                [n, s @ ("up" | "down")] => Action::Control(format!("node {n} {s}")),
                _ => return Err(err(line, "expected `node N down|up`")),
            },
            other => {
                return Err(err(
                    line,
                    format!("unknown command `{other}` (exec, link, node, cross)"),
                ))
            }
        };
        steps.push(Step { at, line, action });
    }
    steps.sort_by_key(|s| s.at);
    Ok(steps)
}

/// `every PERIOD until END link A B set ATTR VALUE...` starting at `at`,
/// where a value `LO..HI` is drawn uniformly at each step.
fn parse_every(line: usize, at: Duration, text: &str) -> Result<Vec<Step>, TopoError> {
    use rand::Rng;
    let w: Vec<&str> = text.split_whitespace().collect();
    let usage = "expected `every PERIOD until END link A B set ATTR VALUE|LO..HI ...`";
    let [period, "until", end, "link", a, b, "set", attrs @ ..] = w.as_slice() else {
        return Err(err(line, usage));
    };
    if attrs.is_empty() || !attrs.chunks_exact(2).remainder().is_empty() {
        return Err(err(line, usage));
    }
    let period = parse_time(period).map_err(|e| err(line, e))?;
    let end = parse_time(end).map_err(|e| err(line, e))?;
    if period == Duration::ZERO {
        return Err(err(line, "the period must be positive"));
    }
    if end < at {
        return Err(err(line, "`until` is before the start"));
    }
    // Each attribute: a fixed text, or a range of numbers to draw from,
    // with how to print a drawn number.
    enum Val {
        Fixed(String),
        Range(f64, f64, fn(f64) -> String),
    }
    let mut vals = Vec::new();
    for kv in attrs.chunks_exact(2) {
        let (k, v) = (kv[0], kv[1]);
        let Some((lo, hi)) = v.split_once("..") else {
            vals.push((k, Val::Fixed(v.to_string())));
            continue;
        };
        let bad = |e: String| err(line, format!("{k} `{v}`: {e}"));
        let (l, h, fmt): (f64, f64, fn(f64) -> String) = match k {
            "delay" => (
                parse_delay(lo).map_err(bad)?.as_nanos() as f64,
                parse_delay(hi).map_err(bad)?.as_nanos() as f64,
                |x| format!("{}ns", x.round() as u64),
            ),
            "bw" => (
                crate::model::parse_rate(lo).map_err(bad)?.bps() as f64,
                crate::model::parse_rate(hi).map_err(bad)?.bps() as f64,
                |x| format!("{}bit/s", x.round().max(1.0) as u64),
            ),
            "loss" => (
                crate::model::parse_loss(lo).map_err(bad)?,
                crate::model::parse_loss(hi).map_err(bad)?,
                |x| format!("{x:.6}"),
            ),
            _ => {
                return Err(err(
                    line,
                    format!("`{k}` takes no range (bw, delay, loss do)"),
                ))
            }
        };
        if h < l {
            return Err(err(line, format!("{k} `{v}`: empty range")));
        }
        vals.push((k, Val::Range(l, h, fmt)));
    }
    // Reproducible: the draws depend on the line number only.
    let mut rng = pipelab_engine::rng::rng_from_seed(0x5eed_0000 + line as u64);
    let mut out = Vec::new();
    let mut t = at;
    while t <= end {
        let mut cmd = format!("link {a} {b} set");
        for (k, v) in &vals {
            let text = match v {
                Val::Fixed(s) => s.clone(),
                Val::Range(l, h, fmt) => fmt(if h > l { rng.gen_range(*l..*h) } else { *l }),
            };
            cmd += &format!(" {k} {text}");
        }
        out.push(Step {
            at: t,
            line,
            action: Action::Control(cmd),
        });
        t += period;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_sorts() {
        let s = parse_script(
            "# comment\n5s link A B down\n6s link A B set bw 1Mbit/s delay 4ms\n0s exec r1 iperf3 -s -D\n\n1.5 exec c3 iperf3 -c 10.0.0.5 > out.json\n500ms node 7 up\n",
        )
        .unwrap();
        assert_eq!(s.len(), 5);
        assert_eq!(
            s[4].action,
            Action::Control("link A B set bw 1Mbit/s delay 4ms".into())
        );
        assert_eq!(s[0].at, Duration::ZERO);
        assert_eq!(
            s[0].action,
            Action::Exec {
                vn: "r1".into(),
                command: "iperf3 -s -D".into()
            }
        );
        assert_eq!(s[1].at, Duration::from_millis(500));
        assert_eq!(s[1].action, Action::Control("node 7 up".into()));
        assert_eq!(s[2].at, Duration::from_millis(1500));
        assert_eq!(s[2].line, 6);
        assert_eq!(s[3].action, Action::Control("link A B down".into()));
    }

    #[test]
    fn every_draws_values_in_range() {
        let s = parse_script(
            "1s every 2s until 9s link r0 r1 set delay 5ms..50ms bw 1Mbit/s loss 0..1%\n",
        )
        .unwrap();
        assert_eq!(s.len(), 5);
        for (k, st) in s.iter().enumerate() {
            assert_eq!(st.at, Duration::from_secs(1 + 2 * k as u64));
            let Action::Control(c) = &st.action else {
                panic!("{st:?}")
            };
            let w: Vec<&str> = c.split_whitespace().collect();
            assert_eq!(&w[..4], ["link", "r0", "r1", "set"]);
            let d = parse_delay(w[5]).unwrap();
            assert!(
                d >= Duration::from_millis(5) && d < Duration::from_millis(50),
                "{c}"
            );
            assert_eq!(w[7], "1Mbit/s");
            let l: f64 = w[9].parse().unwrap();
            assert!((0.0..0.01).contains(&l), "{c}");
        }
        // The same text draws the same values.
        assert_eq!(
            s,
            parse_script(
                "1s every 2s until 9s link r0 r1 set delay 5ms..50ms bw 1Mbit/s loss 0..1%\n"
            )
            .unwrap()
        );
        for (text, want) in [
            ("0s every 0s until 5s link a b set delay 1ms", "positive"),
            (
                "5s every 1s until 2s link a b set delay 1ms",
                "before the start",
            ),
            (
                "0s every 1s until 2s link a b set queue 1..5",
                "takes no range",
            ),
            (
                "0s every 1s until 2s link a b set delay 9ms..1ms",
                "empty range",
            ),
            ("0s every 1s link a b set delay 1ms", "expected `every"),
        ] {
            let e = parse_script(text).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains("line 1"), "{text}: {e}");
        }
    }

    #[test]
    fn errors_name_the_line() {
        for (text, want) in [
            ("0s exec r1", "line 1"),
            ("\n1s link A down", "line 2"),
            ("1s node N sideways", "line 1: expected `node"),
            ("1x exec a b", "line 1: unknown delay unit"),
            ("2s fly away", "unknown command `fly`"),
            ("exec", "line 1: expected `TIME COMMAND`"),
        ] {
            let e = parse_script(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
