//! One unit layer: the same value words through the five ways a link's
//! rate, delay, loss or queue reach pipelab, each read by
//! `pipelab_lang::units`:
//!
//! * (a) a configuration line, `pipe 1 config bw X` (`parse_line`);
//! * (b) the parameters alone, as `pipelab shell --link 'bw X'` passes
//!   them (`parse_pipe_params`);
//! * (c) a GML edge attribute, `bandwidth "X"`;
//! * (d) a TOML link key, `bw = "X"`;
//! * (e) a topology control line, `link a b set bw X` (the grammar of the
//!   control socket, experiment files and `pipelab topo link`).
//!
//! A pass proves that each word gives the same value, or the same error
//! message and hint, in all five, except where the table says why an
//! input reads it differently:
//!
//! * a bare loss (`0.01`) is a probability in a topology (GML, TOML and
//!   `link ... set`, ModelNet's convention), while a pipe's `loss` takes a
//!   percentage only (netem's; ipfw's probability is `plr`);
//! * a value with a space (`10 Mbit/s`) is two words on a line, (a) and
//!   (b) (the second is then an unknown parameter), but one string in a
//!   file, (c) and (d), and one value in a link set, (e) (a value runs to
//!   the next key), which the unit layer refuses with a hint.
//!
//! Errors also carry their place: the column of the word on a line, the
//! line and attribute in GML, the link and key in TOML.

use pipelab_engine::{Duration, QueueLimit, Rate};
use pipelab_lang::{parse_line, parse_pipe_params, Command, LossSpec, ParseError, PipeSpec};
use pipelab_topo::gml::parse_gml;
use pipelab_topo::native::parse_toml;
use pipelab_topo::{parse_command, LinkAction, LinkSet, Setting, TopoCommand};

/// A value as every input gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum V {
    Bps(u64),
    Ns(u64),
    Ppb(u32),
    Queue(QueueLimit),
}

/// What an input gives for a word: a value, or `message[: hint]`.
type Got = Result<V, String>;

/// The parameter of a row.
#[derive(Clone, Copy, Debug)]
enum P {
    Bw,
    Delay,
    Loss,
    Queue,
}

impl P {
    fn word(self) -> &'static str {
        match self {
            P::Bw => "bw",
            P::Delay => "delay",
            P::Loss => "loss",
            P::Queue => "queue",
        }
    }
    fn gml_key(self) -> &'static str {
        match self {
            P::Bw => "bandwidth",
            other => other.word(),
        }
    }
}

/// What every input should give, or (for the rows where inputs read a
/// word differently) what each gives, in the order (a) to (e), and why.
/// An expected error ending in `…` is a prefix.
enum Want {
    All(Got),
    Each([Got; 5], &'static str),
}
use Want::{All, Each};

const MBPS: &str = "unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)";

fn table() -> Vec<(P, &'static str, Want)> {
    vec![
        (P::Bw, "10Mbit/s", All(Ok(V::Bps(10_000_000)))),
        (P::Bw, "10Mbps", All(Err(MBPS.into()))),
        (P::Bw, "2Gbit/s", All(Ok(V::Bps(2_000_000_000)))),
        (P::Bw, "100Kbit/s", All(Ok(V::Bps(100_000)))),
        (P::Bw, "1.5Mbit/s", All(Ok(V::Bps(1_500_000)))),
        (P::Bw, "1MByte/s", All(Ok(V::Bps(8_000_000)))),
        (P::Bw, "1000000", All(Ok(V::Bps(1_000_000)))),
        (
            P::Bw,
            "1e30bit/s",
            All(Err("value '1e30bit/s' is too large".into())),
        ),
        (
            P::Bw,
            "99999999999Gbit/s",
            All(Err("value '99999999999Gbit/s' is too large".into())),
        ),
        // ipfw's spellings (dummynet.c read_bandwidth): `B` is bytes.
        (P::Bw, "10MB/s", All(Ok(V::Bps(80_000_000)))),
        (P::Bw, "10Mb/s", All(Ok(V::Bps(10_000_000)))),
        (
            P::Bw,
            "fast",
            All(Err(
                "invalid rate 'fast': rates are written like 10Mbit/s".into()
            )),
        ),
        (
            P::Bw,
            "10 Mbit/s",
            Each(
                [
                    Err("unknown pipe parameter 'Mbit/s': a unit follows its number without a space: write 10Mbit/s".into()),
                    Err("unknown pipe parameter 'Mbit/s': a unit follows its number without a space: write 10Mbit/s".into()),
                    Err("space in '10 Mbit/s': write the value as one word: 10Mbit/s".into()),
                    Err("space in '10 Mbit/s': write the value as one word: 10Mbit/s".into()),
                    Err("space in '10 Mbit/s': write the value as one word: 10Mbit/s".into()),
                ],
                "a configuration line splits words at spaces (`10` is then the value \
                 and `Mbit/s` a stray word); a file's string keeps the space, and a \
                 link set's value runs to the next key",
            ),
        ),
        (P::Delay, "1.5ms", All(Ok(V::Ns(1_500_000)))),
        (P::Delay, "250us", All(Ok(V::Ns(250_000)))),
        (P::Delay, "20", All(Ok(V::Ns(20_000_000)))),
        (
            P::Delay,
            "-1ms",
            All(Err("negative value '-1ms' is not allowed".into())),
        ),
        (
            P::Delay,
            "5seconds",
            All(Err("unknown unit 'seconds' in '5seconds': did you mean s?".into())),
        ),
        (
            P::Delay,
            "7200s",
            All(Err(
                "invalid delay '7200s': 7200s is more than the maximum 3600s".into(),
            )),
        ),
        (
            P::Delay,
            "1.5ns",
            All(Err("'1.5ns' is not a whole number of nanoseconds".into())),
        ),
        (
            P::Queue,
            "1500B",
            All(Ok(V::Queue(QueueLimit::Bytes(1500)))),
        ),
        (
            P::Queue,
            "100KB",
            All(Ok(V::Queue(QueueLimit::Bytes(102_400)))),
        ),
        (P::Queue, "50", All(Ok(V::Queue(QueueLimit::Slots(50))))),
        (
            P::Queue,
            "0",
            All(Err(
                "invalid queue '0': a queue must hold at least one packet".into(),
            )),
        ),
        // ipfw's `queue 10K` (TOK_QUEUE): KB, K = 1024.
        (P::Queue, "10K", All(Ok(V::Queue(QueueLimit::Bytes(10_240))))),
        (P::Loss, "5%", All(Ok(V::Ppb(50_000_000)))),
        (P::Loss, "0.5%", All(Ok(V::Ppb(5_000_000)))),
        (
            P::Loss,
            "101%",
            Each(
                [
                    Err("percentage '101%' is more than 100%".into()),
                    Err("percentage '101%' is more than 100%".into()),
                    Err("probability '101%' is outside 0..1".into()),
                    Err("probability '101%' is outside 0..1".into()),
                    Err("probability '101%' is outside 0..1".into()),
                ],
                "a pipe's loss is a percentage; a link's a probability or a percentage",
            ),
        ),
        (
            P::Loss,
            "0.01",
            Each(
                [
                    Ok(V::Ppb(100_000)),
                    Ok(V::Ppb(100_000)),
                    Ok(V::Ppb(10_000_000)),
                    Ok(V::Ppb(10_000_000)),
                    Ok(V::Ppb(10_000_000)),
                ],
                "a bare loss is a probability in a topology (ModelNet's convention); a \
                 pipe's loss is netem's word, a bare number in percent as tc reads it \
                 (ipfw's probability is plr)",
            ),
        ),
    ]
}

fn with_hint(e: &ParseError) -> String {
    match &e.hint {
        Some(h) => format!("{}: {h}", e.message),
        None => e.message.clone(),
    }
}

fn from_spec(p: P, spec: &PipeSpec) -> Got {
    Ok(match p {
        P::Bw => V::Bps(spec.bw.map_or(0, Rate::bps)),
        P::Delay => V::Ns(spec.delay.map_or(0, Duration::as_nanos)),
        P::Queue => V::Queue(spec.queue.ok_or("no queue")?),
        P::Loss => match &spec.loss {
            Some(LossSpec::Random(c)) => V::Ppb(c.p.ppb()),
            other => return Err(format!("not a random loss: {other:?}")),
        },
    })
}

fn from_link(p: P, l: &pipelab_topo::Link) -> Got {
    Ok(match p {
        P::Bw => V::Bps(l.bw.bps()),
        P::Delay => V::Ns(l.delay.as_nanos()),
        P::Queue => V::Queue(l.queue),
        P::Loss => V::Ppb((l.loss * 1e9).round() as u32),
    })
}

fn fixed<T: std::fmt::Debug>(o: Option<Setting<T>>) -> Result<T, String> {
    match o {
        Some(Setting::Value(v)) => Ok(v),
        other => Err(format!("not one value: {other:?}")),
    }
}

fn from_set(p: P, s: &LinkSet) -> Got {
    Ok(match p {
        P::Bw => V::Bps(fixed(s.bw)?.bps()),
        P::Delay => V::Ns(fixed(s.delay)?.as_nanos()),
        P::Queue => V::Queue(s.queue.ok_or("no queue")?),
        P::Loss => V::Ppb(fixed(s.loss)?.ppb()),
    })
}

/// (a) `pipe 1 config P W`: the value, or the error with its column
/// checked against the word's.
fn config_line(p: P, w: &str) -> Got {
    let line = format!("pipe 1 config {} {w}", p.word());
    match parse_line(&line) {
        Ok(Some(Command::PipeConfig { spec, .. })) => from_spec(p, &spec),
        Ok(other) => panic!("{line}: {other:?}"),
        Err(e) => {
            assert_eq!(e.line, 1, "{line}: {e}");
            word_at(&line, e.column, w, &e);
            Err(with_hint(&e))
        }
    }
}

/// (b) `--link 'P W'`.
fn pipe_params(p: P, w: &str) -> Got {
    let text = format!("{} {w}", p.word());
    match parse_pipe_params(&text) {
        Ok(spec) => from_spec(p, &spec),
        Err(e) => {
            word_at(&text, e.column, w, &e);
            Err(with_hint(&e))
        }
    }
}

/// (c) a GML edge with `KEY "W"` on line 5: errors name line 5 and the key.
fn gml(p: P, w: &str) -> Got {
    let text = format!(
        "graph [\n  node [ id 0 ]\n  node [ id 1 ]\n  edge [ source 0 target 1\n    {} \"{w}\" ]\n]\n",
        p.gml_key()
    );
    match parse_gml(&text) {
        Ok(t) => from_link(p, &t.links[0]),
        Err(e) => {
            assert_eq!((e.line, e.field.as_str()), (5, p.gml_key()), "{e}");
            Err(e.message)
        }
    }
}

/// (d) a TOML link with `KEY = "W"`: errors name the line, the link and
/// the key.
fn toml(p: P, w: &str) -> Got {
    let text = format!(
        "[[node]]\nid = 0\n[[node]]\nid = 1\n[[link]]\na = 0\nb = 1\n{} = \"{w}\"\n",
        p.word()
    );
    match parse_toml(&text) {
        Ok(t) => from_link(p, &t.links[0]),
        Err(e) => {
            let e = e.to_string();
            let prefix = format!("line 8: link 1 (between 0 and 1): field `{}`: ", p.word());
            match e.strip_prefix(&prefix) {
                Some(rest) => Err(rest.to_string()),
                None => panic!("{e}: does not start with {prefix}"),
            }
        }
    }
}

/// (e) `link a b set P W`.
fn control(p: P, w: &str) -> Got {
    let line = format!("link a b set {} {w}", p.word());
    match parse_command(&line) {
        Ok(TopoCommand::Link {
            action: LinkAction::Set(s),
            ..
        }) => from_set(p, &s),
        Ok(other) => panic!("{line}: {other:?}"),
        Err(e) => {
            word_at(&line, e.column, w, &e);
            Err(with_hint(&e))
        }
    }
}

/// The error's column is that of the value word (or of the second word
/// of a spaced value, which a line reads as a parameter of its own).
fn word_at(line: &str, column: u32, w: &str, e: &ParseError) {
    let at = line.rfind(w).map(|b| line[..b].chars().count() as u32 + 1);
    let second = w
        .split_once(' ')
        .and_then(|(_, tail)| line.rfind(tail))
        .map(|b| line[..b].chars().count() as u32 + 1);
    assert!(
        Some(column) == at || Some(column) == second,
        "{line}: column {column} is not at '{w}': {e}"
    );
}

#[test]
fn every_input_reads_a_word_the_same_way() {
    const INPUTS: [&str; 5] = ["config line", "--link", "GML", "TOML", "link set"];
    for (p, w, want) in table() {
        let got = [
            config_line(p, w),
            pipe_params(p, w),
            gml(p, w),
            toml(p, w),
            control(p, w),
        ];
        let wants: [Got; 5] = match want {
            All(g) => [g.clone(), g.clone(), g.clone(), g.clone(), g],
            Each(each, why) => {
                assert!(!why.is_empty());
                each
            }
        };
        for ((input, got), want) in INPUTS.iter().zip(&got).zip(&wants) {
            match (got, want) {
                (Err(g), Err(prefix)) if prefix.ends_with('…') => {
                    assert!(
                        g.starts_with(prefix.trim_end_matches('…')),
                        "{} {w} via {input}: {g}",
                        p.word()
                    );
                }
                _ => assert_eq!(got, want, "{} {w} via {input}", p.word()),
            }
        }
    }
}

/// A pass proves a GML number (unquoted) is read like the same word
/// written bare in a line: bit/s, ms, slots, a probability; an exponent
/// is its plain decimal.
#[test]
fn gml_numbers_are_bare_words() {
    let text = "graph [\n node [ id 0 ]\n node [ id 1 ]\n edge [ source 0 target 1 bandwidth 1.5e6 delay 0.25 loss 0.001 queue 20 ]\n edge [ source 0 target 1 kbps 640 ]\n]";
    let t = parse_gml(text).expect("parses");
    let l = &t.links[0];
    assert_eq!(l.bw, Rate::from_bps(1_500_000));
    assert_eq!(l.delay, Duration::from_micros(250));
    assert_eq!((l.loss * 1e9).round(), 1e6);
    assert_eq!(l.queue, QueueLimit::Slots(20));
    assert_eq!(t.links[1].bw, Rate::from_bps(640_000));
    // Unquoted words with a unit are read like strings.
    let e = parse_gml("graph [\n node [ id 0 ]\n node [ id 1 ]\n edge [ source 0 target 1\n bandwidth 10Mbps ]\n]")
        .expect_err("Mbps");
    assert_eq!(
        (e.line, e.field.as_str(), e.message.as_str()),
        (5, "bandwidth", MBPS)
    );
}
