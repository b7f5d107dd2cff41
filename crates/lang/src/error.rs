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
    /// How to fix it (`did you mean Mbit/s?`).
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
    ///   |                  ^^^^^^ did you mean Mbit/s?
    /// ```
    ///
    /// `source` is the whole text that was parsed (the line is looked up in
    /// it); if the line is not there, the snippet is left out.
    pub fn render(&self, file: &str, source: &str) -> String {
        let mut out = format!(
            "error: {}\n --> {}:{}:{}\n",
            self.message, file, self.line, self.column
        );
        let src_line = source
            .lines()
            .nth((self.line as usize).saturating_sub(1))
            .filter(|_| self.line > 0);
        let num = self.line.to_string();
        let pad = " ".repeat(num.len());
        match src_line {
            Some(text) => {
                let text = text.trim_end_matches('\r');
                // Tabs are shown as single spaces so the caret lines up.
                let shown: String = text
                    .chars()
                    .map(|c| if c == '\t' { ' ' } else { c })
                    .collect();
                let carets = "^".repeat(self.word.chars().count().max(1));
                let indent = " ".repeat((self.column as usize).saturating_sub(1));
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

impl fmt::Display for ParseError {
    /// `line:column: message[: hint]`, e.g.
    /// `3:22: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s?`.
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
            Some("did you mean Mbit/s?".into()),
        );
        let src = "# links\npipe 1 config bw 10Mbps\n";
        assert_eq!(
            e.render("links.conf", src),
            "error: unknown unit 'Mbps' in '10Mbps'\n --> links.conf:2:18\n  |\n\
             2 | pipe 1 config bw 10Mbps\n  |                  ^^^^^^ did you mean Mbit/s?\n"
        );
        assert_eq!(
            e.to_string(),
            "2:18: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s?"
        );
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
