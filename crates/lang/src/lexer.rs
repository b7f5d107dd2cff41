//! The lexer: one line of text into positioned tokens.
//!
//! Commands are one per line. A token is a word (a run of characters other
//! than white space and `{ } , #`), or one of the punctuation tokens `{`,
//! `}` and `,` used by address lists (`{10.0.0.1,10.0.0.2}`) and port lists
//! (`80,443,8000-8080`). `#` starts a comment that runs to the end of the
//! line. Every token knows its 1-based line and column, the column counted
//! in characters (not bytes), so that carets line up under non-ASCII text.
//!
//! The lexer never fails: every character is part of some token, a comment
//! or white space. Deciding what a word means is the parser's job.

/// What kind of token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    /// A word: a keyword, number, value with unit, address or range.
    Word,
    /// `{`, which opens an address list.
    LBrace,
    /// `}`, which closes an address list.
    RBrace,
    /// `,`, which separates list elements.
    Comma,
}

/// A token: its kind, its text (borrowed from the line) and its position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token<'a> {
    /// What kind of token.
    pub kind: TokenKind,
    /// The text as written.
    pub text: &'a str,
    /// Line number, from 1.
    pub line: u32,
    /// Column of the first character, from 1, in characters.
    pub column: u32,
}

impl Token<'_> {
    /// The column just after the token's last character.
    pub fn end_column(&self) -> u32 {
        self.column.saturating_add(self.text.chars().count() as u32)
    }

    /// True if this is the word `w`, compared case-insensitively.
    pub fn is_word(&self, w: &str) -> bool {
        self.kind == TokenKind::Word && self.text.eq_ignore_ascii_case(w)
    }
}

fn is_punct(c: char) -> bool {
    matches!(c, '{' | '}' | ',' | '#')
}

/// Splits one line (without its line terminator) into tokens, dropping
/// white space and a trailing `#` comment.
pub fn tokenize_line(text: &str, line: u32) -> Vec<Token<'_>> {
    let mut tokens = Vec::new();
    let mut iter = text.char_indices().peekable();
    let mut column: u32 = 0;
    while let Some((start, c)) = iter.next() {
        column = column.saturating_add(1);
        let kind = match c {
            '#' => break,
            c if c.is_whitespace() => continue,
            '{' => TokenKind::LBrace,
            '}' => TokenKind::RBrace,
            ',' => TokenKind::Comma,
            _ => TokenKind::Word,
        };
        let token_column = column;
        let mut end = start + c.len_utf8();
        if kind == TokenKind::Word {
            while let Some(&(i, d)) = iter.peek() {
                if d.is_whitespace() || is_punct(d) {
                    break;
                }
                iter.next();
                column = column.saturating_add(1);
                end = i + d.len_utf8();
            }
        }
        tokens.push(Token {
            kind,
            text: text.get(start..end).unwrap_or(""),
            line,
            column: token_column,
        });
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<(&str, u32)> {
        tokenize_line(line, 1)
            .into_iter()
            .map(|t| (t.text, t.column))
            .collect()
    }

    #[test]
    fn words_punctuation_and_columns() {
        assert_eq!(
            words("add 100 pipe 1 ip from {10.0.0.1, 10.0.0.2} 80,443 to any"),
            vec![
                ("add", 1),
                ("100", 5),
                ("pipe", 9),
                ("1", 14),
                ("ip", 16),
                ("from", 19),
                ("{", 24),
                ("10.0.0.1", 25),
                (",", 33),
                ("10.0.0.2", 35),
                ("}", 43),
                ("80", 45),
                (",", 47),
                ("443", 48),
                ("to", 52),
                ("any", 55),
            ]
        );
    }

    #[test]
    fn comments_and_blank_lines() {
        assert!(words("   # nothing here").is_empty());
        assert!(words("").is_empty());
        assert_eq!(words("flush # all rules"), vec![("flush", 1)]);
        assert_eq!(words("a#b"), vec![("a", 1)]);
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        assert_eq!(
            words("delay 5µs x"),
            vec![("delay", 1), ("5µs", 7), ("x", 11)]
        );
        assert_eq!(words("\tpipe"), vec![("pipe", 2)]);
    }
}
