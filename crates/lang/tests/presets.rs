//! Presets in the language: `preset NAME/SIDE` stands for the words of
//! that side, a side is taken from the place where it is plain, and what
//! cannot be meant is refused with the names and sides to choose from.

use pipelab_lang::{parse_line, parse_pipe_params, parse_side_params, Command, Side};

/// A pass proves a preset is its side's words (in a script line and in
/// link words, spelled `preset NAME` or `preset:NAME`), that link words
/// take the side they are given, and that words beside it add to it.
#[test]
fn a_preset_is_the_words_of_its_side() {
    let words = |t: &str| parse_pipe_params(t).expect(t);
    assert_eq!(
        words("preset nlc-3g/down"),
        words("bw 780Kbit/s delay 100ms")
    );
    assert_eq!(words("preset:NLC-3G/Up"), words("bw 330Kbit/s delay 100ms"));
    assert_eq!(
        parse_side_params("preset:nlc-3g", Side::Up).expect("up"),
        words("bw 330Kbit/s delay 100ms")
    );
    assert_eq!(
        parse_side_params("preset nlc-3g loss 1%", Side::Down).expect("down"),
        words("bw 780Kbit/s delay 100ms loss 1%")
    );
    // A side written wins over the place's.
    assert_eq!(
        parse_side_params("preset wpt-cable/down", Side::Up).expect("down"),
        words("bw 5Mbit/s delay 14ms")
    );
    match parse_line("pipe 7 config preset geo/up queue 100").expect("parses") {
        Some(Command::PipeConfig { id, spec }) => {
            assert_eq!(id, 7);
            assert_eq!(spec, words("bw 3Mbit/s delay 279ms queue 100"));
        }
        other => panic!("{other:?}"),
    }
}

/// A pass proves what a preset cannot mean is refused at its word: no
/// side in a pipe (the hint gives both sides' words), an unknown name
/// (the hint lists the names), an unknown side, a missing name, and a
/// word of the preset given again (the hint names the preset).
#[test]
fn what_a_preset_cannot_mean_is_refused_at_its_word() {
    let e = parse_pipe_params("queue 50 preset nlc-3g").expect_err("no side");
    assert_eq!(e.column, 17);
    assert!(e.message.contains("two sides"), "{e}");
    let hint = e.hint.unwrap_or_default();
    assert!(
        hint.contains("nlc-3g/down") && hint.contains("bw 330Kbit/s"),
        "{hint}"
    );

    let e = parse_pipe_params("preset 3g/down").expect_err("unknown");
    assert_eq!((e.column, e.message.as_str()), (8, "unknown preset '3g'"));
    assert!(e.hint.unwrap_or_default().contains("nlc-3g, nlc-dsl"));

    let e = parse_pipe_params("preset:nlc-3g/sideways").expect_err("side");
    assert!(e.message.contains("unknown side 'sideways'"), "{e}");

    let e = parse_pipe_params("delay 5ms preset").expect_err("no name");
    assert_eq!(e.column, 17);
    assert!(e.message.contains("missing the preset's name"), "{e}");

    let e = parse_side_params("preset nlc-3g delay 5ms", Side::Down).expect_err("duplicate");
    assert!(e.message.contains("duplicate parameter 'delay'"), "{e}");
    assert!(
        e.hint.unwrap_or_default().contains("preset nlc-3g/down"),
        "the hint names the preset"
    );
}
