//! Delay traces and timelines in virtual time, through the engine: each
//! packet takes exactly the values in force at its instant (a packet's
//! delay starts when its transmission ends).

use pipelab_engine::engine::{EngineOptions, Fate, Output};
use pipelab_engine::{Engine, Instant, Packet, PipeConfig, Verdict};
use pipelab_lang::{parse_line, Command};

const MS: u64 = 1_000_000;

/// The pipe of `words`, its files read from `files` (name, text).
fn pipe(words: &str, files: &[(&str, &str)]) -> Result<PipeConfig, String> {
    let spec = match parse_line(&format!("pipe 1 config {words}")) {
        Ok(Some(Command::PipeConfig { spec, .. })) => spec,
        Ok(other) => return Err(format!("{words}: not a pipe config: {other:?}")),
        Err(e) => return Err(e.to_string()),
    };
    let mut load = |p: &str| {
        files
            .iter()
            .find(|(n, _)| *n == p)
            .map(|(_, t)| t.to_string())
            .ok_or_else(|| format!("no file {p}"))
    };
    spec.to_config_with(&mut load).map_err(|e| e.to_string())
}

/// `n` packets of `len` bytes, one every `gap` ns from 0: each packet's
/// arrival, verdict and output.
fn send(cfg: PipeConfig, n: u64, gap: u64, len: u32) -> (Vec<Verdict>, Vec<Output>) {
    let mut e = Engine::new(EngineOptions::default());
    let p = e.add_pipe(cfg);
    let Some(r) = e.pipe_route(p) else {
        panic!("no route")
    };
    let (mut out, mut verdicts) = (Vec::new(), Vec::new());
    for k in 0..n {
        let t = Instant(k * gap);
        e.advance(t, &mut out);
        let mut pkt = Packet::new(len);
        pkt.born = t;
        pkt.tag = k;
        verdicts.push(e.enqueue(t, pkt, r));
    }
    while let Some(d) = e.next_deadline() {
        e.advance(d, &mut out);
    }
    (verdicts, out)
}

/// Pass proves: with a delay trace, every packet leaves exactly the
/// trace's delay (at the instant its transmission ended) after that
/// instant, over two loops of the trace, rising and falling steps alike
/// (the packets are far enough apart that none waits behind another).
#[test]
fn every_packet_takes_the_trace_delay_at_its_instant() {
    // 1000-byte packets at 8 Mbit/s: 1 ms on the wire.
    let trace = "# ms  ms\n0 20\n100 35.5\n250 5\n300 12\n400 loop\n";
    let cfg = pipe("bw 8Mbit/s delay trace:rtt.trace", &[("rtt.trace", trace)]).expect("pipe");
    let (verdicts, out) = send(cfg, 160, 5 * MS, 1000);
    assert!(
        verdicts.iter().all(|v| *v == Verdict::Queued),
        "{verdicts:?}"
    );
    assert_eq!(out.len(), 160);
    let value = |t_ns: u64| -> u64 {
        let t = t_ns % (400 * MS);
        let ms = if t < 100 * MS {
            20.0
        } else if t < 250 * MS {
            35.5
        } else if t < 300 * MS {
            5.0
        } else {
            12.0
        };
        (ms * MS as f64) as u64
    };
    let mut exact = 0;
    let mut last = 0;
    for o in &out {
        assert_eq!(o.fate, Fate::Delivered);
        let tx_end = o.pkt.born.0 + MS;
        let want = tx_end + value(tx_end);
        // First in, first out: after a fall, a packet may wait for the
        // one ahead (leaving with it), never earlier than its own delay.
        assert_eq!(o.at.0, want.max(last), "packet {}", o.pkt.tag);
        exact += usize::from(o.at.0 == want);
        last = o.at.0;
    }
    // Only the fall from 35.5 to 5 ms holds packets behind: those whose
    // transmission ends in [250, 280.5) ms of each loop, 251, 256, ...,
    // 276 ms (6 per loop, 2 loops). All others are exact.
    assert_eq!(exact, 160 - 12);
}

/// Pass proves: a timeline changes the rate, the delay and the loss at
/// its rows' instants: a packet's transmission time is its row's rate,
/// its delay its row's delay, and a row with 100 % loss drops every
/// packet that arrives in it.
#[test]
fn a_timeline_changes_rate_delay_and_loss_at_its_rows() {
    let tl = "0 bw 8Mbit/s delay 10ms\n100ms bw 4Mbit/s\n200ms delay 30ms\n300ms loss 100%\n400ms loss 0%\n";
    let cfg = pipe("delay 1ms timeline t.tl", &[("t.tl", tl)]).expect("pipe");
    let (verdicts, out) = send(cfg, 100, 5 * MS, 1000);
    let mut delivered = out.iter();
    for (k, v) in verdicts.iter().enumerate() {
        let born = k as u64 * 5 * MS;
        if (300 * MS..400 * MS).contains(&born) {
            assert_ne!(*v, Verdict::Queued, "packet {k} arrived in the lossy row");
            continue;
        }
        assert_eq!(*v, Verdict::Queued, "packet {k}");
        let Some(o) = delivered.next() else {
            panic!("packet {k} never left")
        };
        assert_eq!(o.pkt.tag, k as u64);
        // The rate in force when the link takes the packet.
        let tx = if born < 100 * MS { MS } else { 2 * MS };
        let done = born + tx;
        let delay = if done < 200 * MS { 10 * MS } else { 30 * MS };
        assert_eq!(o.at.0, done + delay, "packet {k}");
    }
    assert!(delivered.next().is_none());
}

/// Pass proves: a delay trace and a timeline are refused beside words
/// that say the same thing, naming both, and a malformed file names its
/// path and line.
#[test]
fn conflicts_and_bad_files_are_refused() {
    let files = [
        ("t", "0 20\n"),
        ("tl", "0 delay 5ms\n"),
        ("bad", "0 20\n0 30\n"),
    ];
    for (words, says) in [
        (
            "delay trace:t timeline tl",
            "both change the link over time",
        ),
        (
            "timevarying t timeline tl",
            "both change the link over time",
        ),
        ("delay trace:bad", "line 2"),
        ("delay trace:missing", "no file missing"),
    ] {
        let e = pipe(words, &files).expect_err(words);
        assert!(e.contains(says), "{words}: {e}");
    }
    // `delay` is given once: a trace or a value.
    assert!(parse_line("pipe 1 config delay 5ms delay trace:t").is_err());
    // A timeline's delay beside a jitter is the engine's refusal.
    let e = pipe("delay 10ms 2ms timeline tl", &files).expect_err("jitter");
    assert!(e.contains("jitter"), "{e}");
}
