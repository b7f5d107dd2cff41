//! Parse errors with positions, and their rustc-like rendering.
//!
//! A [`ParseError`] says where (1-based line and column, the column counted
//! in characters), which word, what is wrong and, when we can tell, how to
//! fix it. It is plain data: no source text is kept, so rendering with a
//! caret takes the source as an argument. Errors of applying a command to a
//! configuration live in [`crate::state`].

use core::fmt;

/// A value together with where it was written (1-based line and column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spanned<T> {
    /// Line number, from 1.
    pub line: u32,
    /// Column of the first character, from 1, counted in characters.
    pub column: u32,
    /// The value.
    pub node: T,
}

/// A syntax or value error in a command, at a position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// Line number, from 1 (always 1 for [`crate::parse_line`]).
    pub line: u32,
    /// Column of the offending word, from 1, counted in characters. For a
    /// missing word it is the column just after the end of the line.
    pub column: u32,
    /// The offending word as written; empty when a word is missing.
    pub word: String,
    /// What is wrong (`unknown unit 'Mbps' in '10Mbps'`).
    pub message: String,
    /// How to fix it (`did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)`).
    pub hint: Option<String>,
}

impl ParseError {
    /// An error at `line:column` about `word`.
    pub fn new(
        line: u32,
        column: u32,
        word: impl Into<String>,
        message: impl Into<String>,
        hint: Option<String>,
    ) -> Self {
        ParseError {
            line,
            column,
            word: word.into(),
            message: message.into(),
            hint,
        }
    }

    /// Renders the error like rustc, with the file name, the source line and
    /// a caret under the word:
    ///
    /// ```text
    /// error: unknown unit 'Mbps' in '10Mbps'
    ///  --> links.conf:3:18
    ///   |
    /// 3 | pipe 1 config bw 10Mbps
    ///   |                  ^^^^^^ did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)
    /// ```
    ///
    /// `source` is the whole text that was parsed (the line is looked up in
    /// it); if the line is not there, the snippet is left out.
    pub fn render(&self, file: &str, source: &str) -> String {
        self.render_in(file, &SourceLines::new(source))
    }

    /// [`ParseError::render`] with the source's lines already indexed, so
    /// that rendering many errors of one text costs one pass over it (see
    /// [`render_all`]).
    pub fn render_in(&self, file: &str, source: &SourceLines<'_>) -> String {
        let mut out = format!(
            "error: {}\n --> {}:{}:{}\n",
            shorten(&self.message, MAX_MESSAGE),
            file,
            self.line,
            self.column
        );
        let num = self.line.to_string();
        let pad = " ".repeat(num.len());
        match source.line(self.line) {
            Some(text) => {
                // Tabs are shown as single spaces so the caret lines up;
                // characters a terminal would not show (NUL, a BOM, other
                // controls) as U+FFFD, one column each. A long line is
                // shown around the column, elided with `…`.
                let chars: Vec<char> = text
                    .chars()
                    .map(|c| match c {
                        '\t' => ' ',
                        c if invisible(c) => '\u{fffd}',
                        c => c,
                    })
                    .collect();
                let col = (self.column as usize).saturating_sub(1);
                let start = if chars.len() > MAX_SHOWN {
                    col.saturating_sub(MAX_SHOWN / 4)
                        .min(chars.len() - MAX_SHOWN)
                } else {
                    0
                };
                let end = chars.len().min(start + MAX_SHOWN);
                let mut shown: String = chars.get(start..end).unwrap_or_default().iter().collect();
                let mut indent = col.saturating_sub(start);
                if start > 0 {
                    shown.insert(0, '…');
                    indent += 1;
                }
                if end < chars.len() {
                    shown.push('…');
                }
                let room = (end + 1).saturating_sub(col.max(start)).max(1);
                let carets = "^".repeat(self.word.chars().count().clamp(1, room));
                let indent = " ".repeat(indent);
                out.push_str(&format!(
                    "{pad} |\n{num} | {shown}\n{pad} | {indent}{carets}"
                ));
                if let Some(h) = &self.hint {
                    out.push(' ');
                    out.push_str(h);
                }
                out.push('\n');
            }
            None => {
                if let Some(h) = &self.hint {
                    out.push_str(&format!("{pad} = help: {h}\n"));
                }
            }
        }
        out
    }
}

/// A message longer than this (in characters) is shown elided in the
/// middle: a word of a megabyte is not echoed whole.
const MAX_MESSAGE: usize = 240;

/// The most characters of a source line shown under an error.
const MAX_SHOWN: usize = 160;

/// `text`, or its start and end around `…` if it is longer than `max`
/// characters.
fn shorten(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    let n = text.chars().count();
    if n <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let head: String = text.chars().take(max * 2 / 3).collect();
    let tail: String = text.chars().skip(n - max / 3).collect();
    std::borrow::Cow::Owned(format!("{head}…{tail}"))
}

/// Whether a terminal would show `c` as nothing (or move the cursor):
/// control characters other than tab, and the invisible format
/// characters (a byte order mark, zero-width spaces and joiners, bidi
/// controls).
pub fn invisible(c: char) -> bool {
    (c.is_control() && c != '\t')
        || matches!(
            c,
            '\u{feff}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// At most this many errors are rendered for one text; the rest are
/// counted (`and 39950 more errors`). A file of 40,000 bad lines thus
/// gives a message of a few kilobytes, rendered in milliseconds.
pub const MAX_RENDERED_ERRORS: usize = 50;

/// A text's lines, indexed once (line starts), so that looking up the
/// line of each of many errors does not scan the text again.
#[derive(Clone, Debug)]
pub struct SourceLines<'a> {
    source: &'a str,
    /// Byte offset of the start of each line.
    starts: Vec<usize>,
}

impl<'a> SourceLines<'a> {
    /// Indexes `source`'s lines (`\n`-terminated, as [`str::lines`]).
    pub fn new(source: &'a str) -> SourceLines<'a> {
        let mut starts = vec![0];
        starts.extend(
            source
                .bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i + 1)
                .filter(|&i| i < source.len()),
        );
        if source.is_empty() {
            starts.clear();
        }
        SourceLines { source, starts }
    }

    /// Line `n` (from 1) without its terminator (`\n` or `\r\n`), or
    /// `None` past the end (or for line 0).
    pub fn line(&self, n: u32) -> Option<&'a str> {
        let i = (n as usize).checked_sub(1)?;
        let start = *self.starts.get(i)?;
        let end = self.starts.get(i + 1).map_or(self.source.len(), |&e| e);
        let text = self.source.get(start..end)?;
        let text = text.strip_suffix('\n').unwrap_or(text);
        Some(text.strip_suffix('\r').unwrap_or(text))
    }
}

/// Renders errors of one text (each as [`ParseError::render`]) in one pass
/// over it: the first [`MAX_RENDERED_ERRORS`], then `and K more errors`
/// on a line of its own if there are more. Linear in the text's length
/// and the number of errors rendered.
pub fn render_all(errors: &[ParseError], file: &str, source: &str) -> String {
    let lines = SourceLines::new(source);
    let mut out = String::new();
    for e in errors.iter().take(MAX_RENDERED_ERRORS) {
        out.push_str(&e.render_in(file, &lines));
    }
    out.push_str(&more_errors(errors.len()));
    out
}

/// `and K more errors\n` for the errors past [`MAX_RENDERED_ERRORS`] of
/// `total`, or nothing.
pub fn more_errors(total: usize) -> String {
    match total.saturating_sub(MAX_RENDERED_ERRORS) {
        0 => String::new(),
        1 => "and 1 more error\n".to_string(),
        rest => format!("and {rest} more errors\n"),
    }
}

impl fmt::Display for ParseError {
    /// `line:column: message[: hint]`, e.g.
    /// `3:22: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)?;
        if let Some(h) = &self.hint {
            write!(f, ": {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_puts_a_caret_under_the_word() {
        let e = ParseError::new(
            2,
            18,
            "10Mbps",
            "unknown unit 'Mbps' in '10Mbps'",
            Some("did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)".into()),
        );
        let src = "# links\npipe 1 config bw 10Mbps\n";
        assert_eq!(
            e.render("links.conf", src),
            "error: unknown unit 'Mbps' in '10Mbps'\n --> links.conf:2:18\n  |\n\
             2 | pipe 1 config bw 10Mbps\n  |                  ^^^^^^ did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)\n"
        );
        assert_eq!(
            e.to_string(),
            "2:18: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)"
        );
    }

    #[test]
    fn a_long_line_and_a_long_word_are_shown_elided() {
        let word = "x".repeat(1_000_000);
        let src = format!("pipe 1 config bw {word} delay 5ms");
        let e = ParseError::new(1, 18, word.clone(), format!("invalid rate '{word}'"), None);
        let r = e.render("f", &src);
        assert!(r.len() < 1_500, "{}", r.len());
        assert!(
            r.starts_with(&format!("error: invalid rate '{}…", "x".repeat(146))),
            "{r}"
        );
        assert!(r.contains("1 | pipe 1 config bw xxx"), "{r}");
        let e = ParseError::new(1, 1_000_025, "5ms", "late", None);
        let r = e.render("f", &src);
        let lines: Vec<&str> = r.lines().collect();
        let shown = lines[3].strip_prefix("1 | …").expect("elided start");
        assert!(shown.ends_with("x delay 5ms"), "{r}");
        let caret = lines[4].strip_prefix("  | ").unwrap_or_default();
        let at = shown.chars().count() - 3 + 1;
        assert_eq!(caret, format!("{}^^^", " ".repeat(at)), "{r}");
    }

    #[test]
    fn render_without_the_line_does_not_panic() {
        let e = ParseError::new(9, 1, "", "oops", Some("fix it".into()));
        assert_eq!(
            e.render("f", ""),
            "error: oops\n --> f:9:1\n  = help: fix it\n"
        );
    }
}
