//! Escaping for the terminal. Task files, logs and error messages can hold
//! anything, and an ESC or CR printed raw can rewrite the screen, hide
//! lines, or set the window title (DESIGN.md: strings from an environment
//! are escaped for wherever they go).

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every control character shown as an escape (`\x1b`, `\r`,
/// `\t`, `\u{9b}`), and with the invisible characters that reorder or hide
/// text (bidi overrides, zero-width characters) shown as `\u{...}`.
pub fn escape_terminal(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && needs_escape(c) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    // C0, DEL and C1 (which includes the 8-bit CSI, U+009B).
    c.is_control()
        // Bidi embeddings, overrides and isolates ("Trojan Source").
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
        // Zero-width characters, line and paragraph separators.
        || matches!(c, '\u{200b}'..='\u{200d}' | '\u{2028}' | '\u{2029}' | '\u{feff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(escape_terminal("sobol-seq: ok ü 漢"), Cow::Borrowed(_)));
    }

    #[test]
    fn control_characters_are_shown_not_sent() {
        assert_eq!(escape_terminal("\x1b[2J\x1b]0;pwned\x07"), "\\x1b[2J\\x1b]0;pwned\\x07");
        assert_eq!(escape_terminal("a\rb\nc\td\0e\x7f"), "a\\rb\\nc\\td\\x00e\\x7f");
        assert_eq!(escape_terminal("\u{9b}31m"), "\\u{9b}31m");
    }

    #[test]
    fn invisible_reordering_is_shown() {
        assert_eq!(escape_terminal("ok\u{202e}txt.exe"), "ok\\u{202e}txt.exe");
        assert_eq!(escape_terminal("a\u{200b}b"), "a\\u{200b}b");
    }
}
