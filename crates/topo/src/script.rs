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
//! One command per line; `#` starts a comment. The time is a duration
//! read by the language's unit layer ([`pipelab_lang::units::parse_time`]:
//! `s`, `ms`, `us`, `ns`; a bare number is seconds), counted from the
//! start of the run; lines run in time order (lines with equal times in
//! file order). Commands:
//!
//! * `exec VN SHELL-TEXT`: run `sh -c SHELL-TEXT` in VN's namespace, in
//!   the background (redirections and pipes work; the run waits for it at
//!   the end);
//! * the topology commands of [`crate::command`] (one grammar with the
//!   control socket and the CLI): `link A B down|up`, `node N down|up`
//!   (fault injection, node names or ids), `link A B down DURATION` (a
//!   black-hole of the link's pipes, no reroute), `link A B set bw 1Mbit/s
//!   delay 10ms loss 1% queue 20` (any subset: new link attributes),
//!   `cross SRC DST RATE [SRC DST RATE ...]` / `cross clear` (the
//!   synthetic cross-traffic matrix from this time on, ModelNet §4.3,
//!   [`crate::cross`]; each `cross` line replaces the previous matrix);
//! * `every PERIOD until END link A B set ATTR VALUE ...`: scheduled
//!   changes (ModelNet §4.3, the ACDC experiment): the change at the
//!   line's time and every PERIOD after it up to END, where a value
//!   `LO..HI` (of `bw`, `delay` or `loss`) is drawn uniformly at each
//!   step, from a generator seeded by the line number (a run is
//!   reproducible). The file is expanded into one `link A B set` step per
//!   change, at most [`MAX_STEPS`] in all.
//!
//! `status` and `stop` are commands of the control socket, not of
//! experiments. Errors ([`ScriptError`]) name the line and column.

use core::fmt;

use pipelab_engine::Duration;
use pipelab_lang::lexer::tokenize_line;
use pipelab_lang::units;
use pipelab_lang::ParseError;

use crate::command::{parse_command_tokens, LinkAction, TopoCommand};

/// The most steps an experiment file may expand to (`every` lines
/// included).
pub const MAX_STEPS: usize = 1_000_000;

/// The commands of an experiment file, as listed in hints.
pub const SCRIPT_COMMANDS: &str = "exec, link, node, cross, every";

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
    /// A topology command for the running emulator: `link`, `node` or
    /// `cross` (never `every`, which is expanded, nor `status` or `stop`).
    Control(TopoCommand),
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

/// An error in an experiment file: the language's positioned error (line,
/// column, word, message, hint).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptError(pub ParseError);

impl fmt::Display for ScriptError {
    /// `line 3: message[: hint]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.0.line, self.0.message)?;
        if let Some(h) = &self.0.hint {
            write!(f, ": {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ScriptError {}

impl ScriptError {
    /// The error with the line of `source` (the file's text) and a caret
    /// under the word:
    ///
    /// ```text
    /// exp.txt: line 2: unknown unit 'Mbps' in '1Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)
    ///   2 | 5s link a b set bw 1Mbps
    ///     |                    ^^^^^
    /// ```
    ///
    /// An error at column 0 shows no line: the file's first line was not
    /// of an experiment, and nothing of the file is quoted.
    pub fn render(&self, file: &str, source: &str) -> String {
        let e = &self.0;
        let mut out = format!("{file}: {self}");
        let shown = (e.column > 0)
            .then(|| source.lines().nth((e.line as usize).saturating_sub(1)))
            .flatten();
        if let Some(text) = shown {
            let num = e.line.to_string();
            let shown: String = text
                .chars()
                .map(|c| if c == '\t' { ' ' } else { c })
                .collect();
            out += &format!(
                "\n  {num} | {}\n  {} | {}{}",
                shown.trim_end(),
                " ".repeat(num.len()),
                " ".repeat((e.column as usize).saturating_sub(1)),
                "^".repeat(e.word.chars().count().max(1))
            );
        }
        out
    }
}

fn err(
    line: u32,
    column: u32,
    word: &str,
    message: impl Into<String>,
    hint: Option<String>,
) -> ScriptError {
    ScriptError(ParseError::new(line, column, word, message, hint))
}

/// The commands of an experiment's lines, after the time.
const VERBS: &[&str] = &["exec", "link", "node", "cross", "every"];

/// Parse an experiment file; steps come back sorted by time (stable).
pub fn parse_script(text: &str) -> Result<Vec<Step>, ScriptError> {
    let mut steps = Vec::new();
    for (k, raw) in text.lines().enumerate() {
        let line = k + 1;
        let line_no = u32::try_from(line).unwrap_or(u32::MAX);
        let toks = tokenize_line(raw, line_no);
        let Some(time) = toks.first() else {
            continue;
        };
        // A first line that is not `TIME COMMAND`: the file is not an
        // experiment (any file may be named, by mistake or to have a line
        // of it printed), and nothing of it is quoted.
        let verb = |i: usize| {
            toks.get(i)
                .is_some_and(|v| VERBS.iter().any(|k| v.text.eq_ignore_ascii_case(k)))
        };
        if steps.is_empty() && !verb(0) && !verb(1) && units::parse_time(time.text).is_err() {
            return Err(err(
                line_no,
                0,
                "",
                "not an experiment file: its first line is not `TIME COMMAND` (the line is not shown)",
                Some("e.g. 5s link r0 r1 down".into()),
            ));
        }
        let Some(verb) = toks.get(1) else {
            return Err(err(
                line_no,
                time.end_column(),
                "",
                format!("expected `TIME COMMAND`, got `{}`", raw.trim()),
                Some("e.g. 5s link r0 r1 down".into()),
            ));
        };
        let at = units::parse_time(time.text)
            .map_err(|e| err(line_no, time.column, time.text, e.message, e.hint))?;
        let action = match verb.text.to_ascii_lowercase().as_str() {
            "exec" => {
                let usage = "expected `exec VN COMMAND...`";
                let Some(vn) = toks.get(2) else {
                    return Err(err(line_no, verb.end_column(), "", usage, None));
                };
                // The shell text is the rest of the line as written (a `#`
                // in it is the shell's).
                let after = char_offset(raw, vn.end_column());
                let command = raw[after..].trim();
                if command.is_empty() {
                    return Err(err(line_no, vn.end_column(), "", usage, None));
                }
                Action::Exec {
                    vn: vn.text.to_string(),
                    command: command.to_string(),
                }
            }
            "link" | "node" | "cross" | "every" => {
                match parse_command_tokens(&toks[1..]).map_err(ScriptError)? {
                    TopoCommand::Every(e) => {
                        if e.until < at {
                            return Err(err(
                                line_no,
                                verb.column,
                                verb.text,
                                format!(
                                    "`until {}` is before the start of the line ({at})",
                                    e.until
                                ),
                                None,
                            ));
                        }
                        let mut t = at;
                        // Reproducible: the draws depend on the line number only.
                        let mut rng = pipelab_engine::rng::rng_from_seed(0x5eed_0000 + line as u64);
                        while t <= e.until {
                            if steps.len() >= MAX_STEPS {
                                return Err(too_many(line_no, verb.column, verb.text));
                            }
                            steps.push(Step {
                                at: t,
                                line,
                                action: Action::Control(TopoCommand::Link {
                                    a: e.a.clone(),
                                    b: e.b.clone(),
                                    action: LinkAction::Set(Box::new(e.set.draw(&mut rng))),
                                }),
                            });
                            t += e.period;
                        }
                        continue;
                    }
                    cmd => Action::Control(cmd),
                }
            }
            _ => {
                return Err(err(
                    line_no,
                    verb.column,
                    verb.text,
                    format!("unknown command `{}`", verb.text),
                    Some(format!("experiment commands: {SCRIPT_COMMANDS}")),
                ))
            }
        };
        if steps.len() >= MAX_STEPS {
            return Err(too_many(line_no, verb.column, verb.text));
        }
        steps.push(Step { at, line, action });
    }
    steps.sort_by_key(|s| s.at);
    Ok(steps)
}

fn too_many(line: u32, column: u32, word: &str) -> ScriptError {
    err(
        line,
        column,
        word,
        format!("the file makes more than {MAX_STEPS} steps"),
        Some("give `every` a longer period".into()),
    )
}

/// The byte offset of the character at 1-based `column` of `text` (its
/// length if the column is past the end).
fn char_offset(text: &str, column: u32) -> usize {
    text.char_indices()
        .nth((column as usize).saturating_sub(1))
        .map_or(text.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::parse_command;
    use crate::linkset::Setting;
    use pipelab_engine::Rate;

    fn control(line: &str) -> Action {
        Action::Control(parse_command(line).unwrap_or_else(|e| panic!("{line}: {e}")))
    }

    #[test]
    fn parses_and_sorts() {
        let s = parse_script(
            "# comment\n5s link A B down\n6s link A B set bw 1Mbit/s delay 4ms\n0s exec r1 iperf3 -s -D\n\n1.5 exec c3 iperf3 -c 10.0.0.5 > out.json\n500ms node 7 up\n",
        )
        .unwrap();
        assert_eq!(s.len(), 5);
        assert_eq!(s[4].action, control("link A B set bw 1Mbit/s delay 4ms"));
        assert_eq!(s[0].at, Duration::ZERO);
        assert_eq!(
            s[0].action,
            Action::Exec {
                vn: "r1".into(),
                command: "iperf3 -s -D".into()
            }
        );
        assert_eq!(s[1].at, Duration::from_millis(500));
        assert_eq!(s[1].action, control("node 7 up"));
        assert_eq!(s[2].at, Duration::from_millis(1500));
        assert_eq!(s[2].line, 6);
        assert_eq!(s[3].action, control("link A B down"));
    }

    /// A pass proves `cross clear` is the command that ends the cross
    /// traffic, not a demand from a node called `clear`, and that `cross`
    /// lines keep their demands.
    #[test]
    fn cross_lines_parse() {
        let s =
            parse_script("15s cross vn1 vn7 2Mbit/s vn2 vn9 500Kbit/s\n25s cross clear\n").unwrap();
        assert_eq!(
            s[0].action,
            control("cross vn1 vn7 2Mbit/s vn2 vn9 500Kbit/s")
        );
        assert_eq!(s[1].action, Action::Control(TopoCommand::CrossClear));
    }

    /// A pass proves `exec` keeps the rest of the line for the shell,
    /// `#` and all.
    #[test]
    fn exec_keeps_the_shell_text() {
        let s = parse_script("0s  exec vn5 iperf3 -s -D   # in the background\n").unwrap();
        assert_eq!(
            s[0].action,
            Action::Exec {
                vn: "vn5".into(),
                command: "iperf3 -s -D   # in the background".into()
            }
        );
    }

    #[test]
    fn every_draws_values_in_range() {
        let text = "1s every 2s until 9s link r0 r1 set delay 5ms..50ms bw 1Mbit/s loss 0..1%\n";
        let s = parse_script(text).unwrap();
        assert_eq!(s.len(), 5);
        for (k, st) in s.iter().enumerate() {
            assert_eq!(st.at, Duration::from_secs(1 + 2 * k as u64));
            let Action::Control(TopoCommand::Link {
                a,
                b,
                action: LinkAction::Set(set),
            }) = &st.action
            else {
                panic!("{st:?}")
            };
            assert_eq!((a.as_str(), b.as_str()), ("r0", "r1"));
            assert!(set.is_fixed(), "{set}");
            let d = set.delay.map(Setting::low).unwrap_or_default();
            assert!(
                d >= Duration::from_millis(5) && d <= Duration::from_millis(50),
                "{set}"
            );
            assert_eq!(set.bw, Some(Setting::Value(Rate::from_bps(1_000_000))));
            let l = set.loss.map(Setting::low).unwrap_or_default();
            assert!(l.ppb() <= 10_000_000, "{set}");
        }
        // The same text draws the same values.
        assert_eq!(s, parse_script(text).unwrap());
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
            (
                "0s every 1ns until 1s link a b set delay 1ms",
                "more than 1000000 steps",
            ),
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
            ("1x exec a b", "line 1: unknown unit 'x' in '1x'"),
            ("2s fly away", "unknown command `fly`"),
            ("2s stop", "unknown command `stop`"),
            ("exec", "line 1: expected `TIME COMMAND`"),
            (
                "5s link a b set bw 10Mbps",
                "line 1: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)",
            ),
        ] {
            let e = parse_script(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    /// A pass proves a file whose first line is not an experiment's (a
    /// line of /etc/shadow) is refused quoting nothing of it, while a
    /// first line that is one with a mistake is quoted.
    #[test]
    fn a_file_of_another_kind_is_not_quoted() {
        let text = "root:$6$salt$secret:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n";
        let r = parse_script(text).unwrap_err().render("f", text);
        assert_eq!(
            r,
            "f: line 1: not an experiment file: its first line is not `TIME COMMAND` (the line is not shown): e.g. 5s link r0 r1 down"
        );
        let text = "# secret words\n\nroot:x secret\n";
        let r = parse_script(text).unwrap_err().render("f", text);
        assert!(r.starts_with("f: line 3: not an experiment file"), "{r}");
        assert!(!r.contains("secret"), "{r}");
        let text = "soon link a b down\n";
        let r = parse_script(text).unwrap_err().render("f", text);
        assert!(r.contains("invalid duration 'soon'"), "{r}");
    }

    /// A pass proves a rendered error shows the line and a caret under
    /// the word.
    #[test]
    fn errors_render_with_a_caret() {
        let text = "0s exec a true\n5s link a b set bw 1Mbps\n";
        let e = parse_script(text).unwrap_err();
        assert_eq!(
            e.render("exp.txt", text),
            "exp.txt: line 2: unknown unit 'Mbps' in '1Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)\n  2 | 5s link a b set bw 1Mbps\n    |                    ^^^^^"
        );
    }
}
