//! A journaled configuration whose named file went bad: its block is held
//! at once, with the reason (the daemon starts with the rest), instead of
//! hanging on a FIFO or reading a device without end.

use std::time::{Duration, Instant};

use pipelab_control::journal::Journal;
use pipelab_control::state::{State, Target};
use pipelab_control::{Access, ControlOnly, Server};
use pipelab_lang::Config;

/// The restore of `pipe 1 config profile PATH`, where PATH was a regular
/// file when the entry was journaled and is now `bad`: the error text.
fn restore_with(dir: &std::path::Path, bad: &str) -> String {
    let journal = Journal::open(&dir.join("journal")).expect("journal");
    let state = State::default()
        .exec(Target::Root, &format!("pipe 1 config profile {bad}\n"))
        .expect("the script applies")
        .next;
    journal.save(&state).expect("journaled");
    // The directory has one owner at a time: the first daemon is gone.
    drop(journal);
    let journal = Journal::open(&dir.join("journal")).expect("journal");
    assert!(journal.has_state());
    let t0 = Instant::now();
    let r = Server::new(
        "restore-test",
        Box::new(ControlOnly::default()),
        Config::new(),
        Access::Blocks,
        Some(journal),
    );
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "the restore took long"
    );
    // The daemon starts with what applies; the block that does not is
    // held, and said.
    match r {
        Ok(server) => {
            let said = server.notices().join("\n");
            assert!(said.contains("held"), "{said}");
            said
        }
        Err(other) => panic!("refused to start: {other}"),
    }
}

/// Pass proves: a FIFO or a device in place of a journaled pipe's profile
/// has its block held, said clearly and at once (it would block or read
/// forever otherwise).
#[test]
fn a_bad_named_file_holds_its_block_at_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fifo = dir.path().join("wlan.profile");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let fifo = fifo.display().to_string();
    let why = restore_with(&dir.path().join("a"), &fifo);
    assert!(
        why.contains(&format!("'{fifo}': a FIFO, not a regular file")),
        "{why}"
    );
    let why = restore_with(&dir.path().join("b"), "/dev/zero");
    assert!(
        why.contains("'/dev/zero': a character device, not a regular file"),
        "{why}"
    );
}
