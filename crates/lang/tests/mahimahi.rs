//! `pipelab shell --mm`: Mahimahi's shell chains read into the two
//! pipes' words (Mahimahi's `delayshell.cc`, `lossshell.cc`,
//! `linkshell.cc` and its queues).

use pipelab_lang::mahimahi::parse_mm_chain;
use pipelab_lang::parse_line;

/// `(uplink, downlink)` words of a chain, as pipelab prints them; each
/// pipe is one the language accepts.
fn chain(text: &str) -> (String, String) {
    match parse_mm_chain(text) {
        Ok(c) => {
            for spec in [&c.uplink, &c.downlink] {
                assert_eq!(spec.check(), Ok(()), "{text}: {spec}");
                let line = format!("pipe 1 config {spec}");
                assert!(parse_line(&line).is_ok(), "{line}");
            }
            (c.uplink.to_string(), c.downlink.to_string())
        }
        Err(e) => panic!("{text}: {e:?}"),
    }
}

/// Pass proves: each shell gives its words on the right direction:
/// delays add up on both, losses combine on theirs, mm-link's traces go
/// up and down with Mahimahi's unbounded queue, and its queue options
/// become pipelab's queue and AQM words.
#[test]
fn each_shell_gives_its_pipe_words() {
    for (text, up, down) in [
        ("mm-delay 20", "delay 20ms", "delay 20ms"),
        ("mm-delay 20 mm-delay 5", "delay 25ms", "delay 25ms"),
        ("mm-loss uplink 0.01", "loss 1%", ""),
        (
            "mm-loss downlink 0.5 mm-loss downlink 0.5",
            "",
            "loss 75%",
        ),
        (
            "mm-delay 20 mm-loss uplink 0.01 mm-link up.trace down.trace",
            "bw trace:up.trace delay 20ms queue 1000000 loss 1%",
            "bw trace:down.trace delay 20ms queue 1000000",
        ),
        (
            "mm-link u d --uplink-queue=droptail --uplink-queue-args=packets=100",
            "bw trace:u queue 100",
            "bw trace:d queue 1000000",
        ),
        (
            "mm-link u d --downlink-queue=droptail --downlink-queue-args=\"bytes=150000\"",
            "bw trace:u queue 1000000",
            "bw trace:d queue 150000B",
        ),
        (
            "mm-link u d --uplink-queue=codel --uplink-queue-args=\"packets=50, target=5, interval=100\"",
            "bw trace:u queue 50 codel target 5ms interval 100ms",
            "bw trace:d queue 1000000",
        ),
        (
            "mm-link u d --downlink-queue=pie --downlink-queue-args=packets=80,qdelay_ref=15,max_burst=150",
            "bw trace:u queue 1000000",
            "bw trace:d queue 80 pie target 15ms max_burst 150ms",
        ),
    ] {
        assert_eq!(chain(text), (up.to_string(), down.to_string()), "{text}");
    }
}

/// Pass proves: what pipelab cannot run as Mahimahi would, or that is
/// no shell of Mahimahi's, is refused at the word, with a hint.
#[test]
fn what_cannot_run_is_refused_at_its_word() {
    for (text, column, says) in [
        ("", 1, "missing a Mahimahi shell"),
        ("mm-delay", 9, "missing the delay"),
        ("mm-delay 20x", 10, "unknown unit"),
        ("mm-loss sideways 0.1", 9, "uplink or downlink"),
        ("mm-loss uplink 2", 16, ""),
        (
            "mm-link up.trace",
            17,
            "missing 'UPLINK-TRACE DOWNLINK-TRACE'",
        ),
        ("mm-link u d mm-link u d", 13, "a second mm-link"),
        ("mm-link u d --once", 13, "always loop"),
        ("mm-link u d --uplink-log=x", 13, "--events"),
        ("mm-link u d --meter-all", 13, "pipelab plot"),
        (
            "mm-link u d --uplink-queue=drophead --uplink-queue-args=packets=5",
            28,
            "drophead",
        ),
        ("mm-link u d --uplink-queue=droptail", 28, "needs a limit"),
        (
            "mm-link u d --uplink-queue=droptail --uplink-queue-args=packets=0",
            28,
            "needs a limit",
        ),
        (
            "mm-link u d --uplink-queue=codel --uplink-queue-args=packets=5",
            28,
            "target and interval",
        ),
        (
            "mm-link u d --uplink-queue=droptail --uplink-queue-args=packets=5,bytes=9",
            28,
            "both in packets and in bytes",
        ),
        (
            "mm-link u d --uplink-queue-args=packets=5",
            13,
            "no arguments",
        ),
        ("mm-link up.trace t=5,interval=100", 18, "cannot be written"),
        (
            "mm-link u d --uplink-queue=codel --uplink-queue-args=packets=50,target=0,interval=100",
            28,
            "target and interval",
        ),
        ("mm-delay 20747431s", 1, "cannot be a pipe"),
        ("mm-onoff uplink 1 1", 1, "not supported"),
        ("mm-webreplay dir", 1, "not one of Mahimahi's link shells"),
        ("ping 10.0.0.1", 1, "expected a Mahimahi shell"),
    ] {
        match parse_mm_chain(text) {
            Ok(c) => panic!("{text}: accepted as {c:?}"),
            Err(e) => {
                assert_eq!(e.column, column, "{text}: {e:?}");
                assert!(
                    e.message.contains(says) || e.hint.as_deref().is_some_and(|h| h.contains(says)),
                    "{text}: {e:?}"
                );
                assert!(e.hint.is_some(), "{text}: no hint");
            }
        }
    }
}
