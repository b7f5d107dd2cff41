//! The text of a configuration before it is parsed: bytes to UTF-8, and
//! the characters a reader cannot see.
//!
//! A configuration is UTF-8 text. Invalid UTF-8, a NUL byte, a byte order
//! mark, a control character or an invisible format character (a
//! zero-width space, a bidi override) would otherwise end up inside a word
//! and give a message that shows nothing where the problem is. Each is
//! refused here with its line and column (characters, from 1), its byte
//! offset (from 0) and what was found, as a [`ParseError`] that renders
//! like any other.
//!
//! [`decode`] turns a file's bytes into text; [`check_text`] finds the
//! characters that are not allowed. [`crate::Config::apply_script`] runs
//! [`check_text`] before parsing, so every front door (a file, `-f`, a
//! control request) refuses them the same way. This module reads no file.

use crate::error::{invisible, ParseError};

/// `bytes` as text, or an error at the first byte that is not UTF-8: its
/// line and column, its byte offset and the bytes found.
pub fn decode(bytes: &[u8]) -> Result<&str, ParseError> {
    let e = match std::str::from_utf8(bytes) {
        Ok(text) => return Ok(text),
        Err(e) => e,
    };
    let at = e.valid_up_to();
    let before = bytes.get(..at).unwrap_or_default();
    // What comes before is valid UTF-8 (from_utf8 said so).
    let before = std::str::from_utf8(before).unwrap_or_default();
    let (line, column) = position(before);
    let len = e.error_len().unwrap_or(bytes.len() - at).max(1);
    let found: Vec<String> = bytes
        .iter()
        .skip(at)
        .take(len.min(4))
        .map(|b| format!("0x{b:02x}"))
        .collect();
    let what = match e.error_len() {
        Some(_) => format!("byte {} is not UTF-8", found.join(" ")),
        None => format!(
            "the text ends inside a character (bytes {})",
            found.join(" ")
        ),
    };
    Err(ParseError::new(
        line,
        column,
        "",
        format!("invalid UTF-8 at line {line}, column {column} (byte {at}): {what}"),
        Some("a configuration is UTF-8 text".to_string()),
    ))
}

/// The 1-based line and column (in characters) just after `before`.
fn position(before: &str) -> (u32, u32) {
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (
        u32::try_from(line).unwrap_or(u32::MAX),
        u32::try_from(column).unwrap_or(u32::MAX),
    )
}

/// What `c` is called in a message.
fn describe(c: char, at: usize) -> (String, Option<String>) {
    let code = format!("U+{:04X}", u32::from(c));
    match c {
        '\0' => (
            format!("NUL byte ({code})"),
            Some("a configuration is text; is this a binary file?".to_string()),
        ),
        '\u{feff}' if at == 0 => (
            format!("byte order mark ({code})"),
            Some("save the file as UTF-8 without a byte order mark".to_string()),
        ),
        '\u{feff}' => (
            format!("invisible character {code} (zero width no-break space)"),
            None,
        ),
        '\r' => (
            format!("carriage return ({code}) not followed by a line feed"),
            Some("end lines with \\n or \\r\\n".to_string()),
        ),
        c if c.is_control() => (format!("control character {code}"), None),
        _ => (format!("invisible character {code}"), None),
    }
}

/// Every character of `text` a reader cannot see (see the module's
/// documentation), each as an error with its position, in order. Tabs,
/// line feeds and the carriage return of a `\r\n` are allowed.
pub fn check_text(text: &str) -> Vec<ParseError> {
    let mut errors = Vec::new();
    let mut line: u32 = 1;
    let mut column: u32 = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        column = column.saturating_add(1);
        if c == '\n' {
            line = line.saturating_add(1);
            column = 0;
            continue;
        }
        if c == '\r' && matches!(chars.peek(), Some((_, '\n'))) {
            continue;
        }
        if !invisible(c) {
            continue;
        }
        let (what, hint) = describe(c, at);
        errors.push(ParseError::new(
            line,
            column,
            c.to_string(),
            format!("{what} at line {line}, column {column} (byte {at}) is not allowed"),
            hint,
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_names_line_column_byte_and_bytes() {
        let e = decode(b"pipe 1 config\npipe 2 \xff config").unwrap_err();
        assert_eq!((e.line, e.column), (2, 8));
        assert_eq!(
            e.message,
            "invalid UTF-8 at line 2, column 8 (byte 21): byte 0xff is not UTF-8"
        );
        let e = decode(b"delay 5\xc2").unwrap_err();
        assert_eq!(
            e.message,
            "invalid UTF-8 at line 1, column 8 (byte 7): the text ends inside a character (bytes 0xc2)"
        );
        assert_eq!(decode("µs ok".as_bytes()), Ok("µs ok"));
    }

    #[test]
    fn invisible_characters_are_found_with_their_position() {
        let e = check_text("pipe 1 config\npipe\0 2 config");
        assert_eq!(e.len(), 1);
        assert_eq!(
            e[0].to_string(),
            "2:5: NUL byte (U+0000) at line 2, column 5 (byte 18) is not allowed: a configuration is text; is this a binary file?"
        );
        let e = check_text("\u{feff}pipe 1 config");
        assert_eq!(
            e[0].to_string(),
            "1:1: byte order mark (U+FEFF) at line 1, column 1 (byte 0) is not allowed: save the file as UTF-8 without a byte order mark"
        );
        assert!(check_text("pipe 1 config\r\n\tadd 1 pipe 1\n").is_empty());
        let e = check_text("a\rb \u{202e}x \u{1b}[31m");
        let at: Vec<(u32, u32)> = e.iter().map(|e| (e.line, e.column)).collect();
        assert_eq!(at, vec![(1, 2), (1, 5), (1, 8)]);
    }

    #[test]
    fn the_rendered_line_shows_what_cannot_be_seen() {
        let src = "pipe\0 1";
        let e = &check_text(src)[0];
        let r = e.render("f.conf", src);
        assert!(r.contains(" --> f.conf:1:5\n"), "{r}");
        assert!(r.contains("1 | pipe\u{fffd} 1\n"), "{r}");
        assert!(!r.contains('\0'));
    }
}
