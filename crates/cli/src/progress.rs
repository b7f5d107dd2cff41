//! Progress on a terminal (`indicatif`): long work says how far it is —
//! `pipelab sim` in virtual time, `topo up`/`down` VN by VN. Nothing is
//! drawn when stderr is not a terminal (a pipe, a file, a test), so
//! scripts and logs see exactly what they saw before.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// A bar on stderr, or nothing when stderr is not a terminal.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// A bar of `len` steps with `template` (indicatif's syntax), drawn
    /// on stderr only if it is a terminal.
    pub fn new(len: u64, template: &str) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress(Some(bar))
    }

    /// A spinner (no length) with `template`, drawn on stderr only if
    /// it is a terminal.
    pub fn spinner(template: &str) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress(Some(bar))
    }

    /// Whether anything is drawn.
    pub fn is_shown(&self) -> bool {
        self.0.is_some()
    }

    /// Set the position (clamped to the length).
    pub fn set(&self, pos: u64) {
        if let Some(b) = &self.0 {
            b.set_position(pos.min(b.length().unwrap_or(pos)));
        }
    }

    /// Set the text of `{msg}`.
    pub fn message(&self, text: String) {
        if let Some(b) = &self.0 {
            b.set_message(text);
        }
    }
}

impl Drop for Progress {
    /// The bar is erased when the work ends, whichever way it ends, so the
    /// report (or the error) is printed on a clean line.
    fn drop(&mut self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}
