//! `--pcap` and `--events` of a live mode: the writer started before the
//! runners (each gets a clone of its tap, so nothing that crosses is
//! missed) and finished after they stopped, when every record they sent
//! is in the files. See [`pipelab_io::capture`].

use pipelab_emu::Spec;
use pipelab_io::capture::{Files, Recorder, Summary, Tap};
use std::io;

/// Start writing `files` (if any) for the ports of `spec`, named as its
/// port plan names them.
pub fn start(files: Option<Files>, spec: &Spec) -> io::Result<(Option<Recorder>, Option<Tap>)> {
    let Some(files) = files.filter(|f| !f.is_empty()) else {
        return Ok((None, None));
    };
    let names: Vec<String> = spec.ports.iter().map(|p| p.name.clone()).collect();
    let (r, t) = Recorder::start(files, &names)?;
    Ok((Some(r), Some(t)))
}

/// Finish `recorder` (the runners stopped): flush and close its files,
/// and tell on stderr, prefixed `who`, what the user should know
/// (records lost, frames not recorded, an event log at its cap).
pub fn finish(recorder: Option<Recorder>, who: &str) -> io::Result<Option<Summary>> {
    let Some(r) = recorder else {
        return Ok(None);
    };
    let s = r.finish()?;
    for w in s.warnings() {
        eprintln!("{who}: warning: {w}");
    }
    Ok(Some(s))
}
