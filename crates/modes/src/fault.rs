//! `pipe N down [DURATION]` and `pipe N up`: a pipe black-holed for a
//! while, a command of every live mode's control plane (shell, bridge,
//! topology), not of the language: it changes the running emulation, not
//! its configuration (`save` does not print it, the journal does not
//! keep it).
//!
//! The window is the emulation's ([`pipelab_emu::Emulation::set_pipe_down`]):
//! an instant each arrival is compared with, set on every worker's
//! emulation, so the pipe passes again at its end without anyone waking
//! up for it, and no thread or timer can be lost. `pipe N down` without
//! a duration holds until `pipe N up`. Durations need their unit (`5s`,
//! `250ms`), read by the language's unit layer.

use pipelab_engine::Duration;
use pipelab_lang::lexer::{tokenize_line, TokenKind};
use pipelab_lang::{units, ParseError};
use std::fmt;

/// A black-hole command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipeFault {
    /// `pipe N down [DURATION]`: black-hole pipe `N`, for `duration`
    /// (positive) or until `pipe N up`.
    Down {
        /// The pipe's number.
        pipe: u32,
        /// How long; `None`: until `pipe N up`.
        duration: Option<Duration>,
    },
    /// `pipe N up`: end its black-hole now.
    Up {
        /// The pipe's number.
        pipe: u32,
    },
}

impl PipeFault {
    /// The pipe it names.
    pub fn pipe(&self) -> u32 {
        match *self {
            PipeFault::Down { pipe, .. } | PipeFault::Up { pipe } => pipe,
        }
    }

    /// The window to give the pipe: `Some(duration)` to go down
    /// (`Duration::MAX`: until `up`), `None` to come up.
    pub fn window(&self) -> Option<Duration> {
        match *self {
            PipeFault::Down { duration, .. } => Some(duration.unwrap_or(Duration(u64::MAX))),
            PipeFault::Up { .. } => None,
        }
    }
}

impl fmt::Display for PipeFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PipeFault::Down {
                pipe,
                duration: Some(d),
            } => write!(f, "pipe {pipe} down {d}"),
            PipeFault::Down {
                pipe,
                duration: None,
            } => write!(f, "pipe {pipe} down"),
            PipeFault::Up { pipe } => write!(f, "pipe {pipe} up"),
        }
    }
}

const USAGE: &str = "expected `pipe N down [DURATION]` or `pipe N up`";

/// Whether `line` is a black-hole command: `None` if it is not one (its
/// third word is not `down` or `up`: a command of the language, such as
/// `pipe 1 config ...`), else the command or why it is wrong, with its
/// column (`1:13: missing unit in '5': write e.g. 5s or 5ms`).
pub fn parse_pipe_fault(line: &str) -> Option<Result<PipeFault, ParseError>> {
    let toks = tokenize_line(line, 1);
    let words: Vec<_> = toks.iter().filter(|t| t.kind == TokenKind::Word).collect();
    let (first, act) = (words.first()?, words.get(2)?);
    if !first.text.eq_ignore_ascii_case("pipe")
        || !(act.text.eq_ignore_ascii_case("down") || act.text.eq_ignore_ascii_case("up"))
    {
        return None;
    }
    Some(parse(&toks))
}

fn parse(toks: &[pipelab_lang::lexer::Token<'_>]) -> Result<PipeFault, ParseError> {
    let err = |t: &pipelab_lang::lexer::Token<'_>, m: String, hint: Option<String>| {
        ParseError::new(1, t.column, t.text, m, hint)
    };
    if let Some(t) = toks.iter().find(|t| t.kind != TokenKind::Word) {
        return Err(err(
            t,
            format!("unexpected '{}'", t.text),
            Some(USAGE.into()),
        ));
    }
    let n = &toks[1];
    let pipe = match n.text.parse::<u32>() {
        Ok(p) if p >= 1 => p,
        _ => {
            return Err(err(
                n,
                format!("invalid pipe number '{}'", n.text),
                Some(USAGE.into()),
            ))
        }
    };
    let up = toks[2].text.eq_ignore_ascii_case("up");
    let duration = match toks.get(3) {
        Some(t) if !up => {
            let d = units::parse_duration(t.text)
                .map_err(|e| ParseError::new(1, t.column, t.text, e.message, e.hint))?;
            if d == Duration::ZERO {
                return Err(err(
                    t,
                    "a black-hole must last a positive time".into(),
                    Some(format!(
                        "e.g. `pipe {pipe} down 5s`; `pipe {pipe} down` holds until `pipe {pipe} up`"
                    )),
                ));
            }
            Some(d)
        }
        _ => None,
    };
    let used = if duration.is_some() { 4 } else { 3 };
    if let Some(t) = toks.get(used) {
        return Err(err(
            t,
            format!("unexpected '{}' at end of command", t.text),
            Some(USAGE.into()),
        ));
    }
    Ok(if up {
        PipeFault::Up { pipe }
    } else {
        PipeFault::Down { pipe, duration }
    })
}

/// Run `f` on every worker's runner: black-hole pipe `n` from now for
/// `window` (see [`PipeFault::window`]). Errors if no worker has pipe
/// `n`; the reply names what was done.
pub fn run(
    live: &crate::live::LiveRunner,
    f: PipeFault,
) -> Result<String, crate::error::ModeError> {
    let (n, window) = (f.pipe(), f.window());
    let found = live.with_each(move |r| r.set_pipe_down(n, window))?;
    if !found.iter().any(|&b| b) {
        return Err(crate::error::ModeError::Command(format!("no pipe {n}")));
    }
    Ok(match f {
        PipeFault::Down {
            duration: Some(d), ..
        } => format!("ok: pipe {n} down for {d}"),
        PipeFault::Down { duration: None, .. } => {
            format!("ok: pipe {n} down until `pipe {n} up`")
        }
        PipeFault::Up { .. } => format!("ok: pipe {n} up"),
    })
}

/// Whether pipe `n` exists in the running emulation (checked before any
/// command of a request runs).
pub fn exists(live: &crate::live::LiveRunner, n: u32) -> Result<bool, crate::error::ModeError> {
    live.with(move |r| r.emulation().pipe(n).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> PipeFault {
        match parse_pipe_fault(s) {
            Some(Ok(f)) => f,
            other => panic!("{s}: {other:?}"),
        }
    }

    fn bad(s: &str) -> String {
        match parse_pipe_fault(s) {
            Some(Err(e)) => format!("{}:{}: {}", e.line, e.column, e.message),
            other => panic!("{s}: {other:?}"),
        }
    }

    /// A pass proves the grammar: durations with units, `down` without
    /// one holds, `up`, case-insensitive words, and the canonical text
    /// reads back equal.
    #[test]
    fn black_hole_commands_parse_and_print() {
        assert_eq!(
            ok("pipe 1 down 5s"),
            PipeFault::Down {
                pipe: 1,
                duration: Some(Duration::from_secs(5))
            }
        );
        assert_eq!(
            ok("PIPE 65536 DOWN"),
            PipeFault::Down {
                pipe: 65536,
                duration: None
            }
        );
        assert_eq!(ok("pipe 2 up"), PipeFault::Up { pipe: 2 });
        for s in ["pipe 1 down 250ms", "pipe 3 down", "pipe 4 up"] {
            assert_eq!(ok(s).to_string(), s);
            assert_eq!(ok(&ok(s).to_string()), ok(s));
        }
        assert_eq!(ok("pipe 3 down").window(), Some(Duration(u64::MAX)));
        assert_eq!(ok("pipe 3 up").window(), None);
    }

    /// A pass proves the language's lines are left alone and bad ones are
    /// refused with the column of the word at fault.
    #[test]
    fn other_lines_are_not_claimed_and_errors_name_the_word() {
        for s in [
            "pipe 1 config delay 5ms",
            "pipe show",
            "add 100 pipe 1 ip from any to any",
            "",
        ] {
            assert!(parse_pipe_fault(s).is_none(), "{s}");
        }
        assert_eq!(bad("pipe x down 5s"), "1:6: invalid pipe number 'x'");
        assert_eq!(bad("pipe 0 down"), "1:6: invalid pipe number '0'");
        assert_eq!(bad("pipe 1 down 5"), "1:13: missing unit in '5'");
        assert_eq!(
            bad("pipe 1 down 0ms"),
            "1:13: a black-hole must last a positive time"
        );
        assert_eq!(
            bad("pipe 1 up 5s"),
            "1:11: unexpected '5s' at end of command"
        );
        assert_eq!(
            bad("pipe 1 down 5s now"),
            "1:16: unexpected 'now' at end of command"
        );
    }
}
