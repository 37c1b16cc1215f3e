//! Escaping for the terminal, HTML, XML and Markdown. Task files, logs and
//! error messages can hold anything: an ESC or CR printed raw can rewrite
//! the screen, hide lines, or set the window title; a `<script>` in an
//! evidence line must not run in the HTML report, and a stray `&` or a
//! control character must not make the JUnit file invalid XML (DESIGN.md:
//! strings from an environment are escaped for wherever they go).
//!
//! Every markup escaper first applies `escape_terminal`, so control and
//! invisible characters show up as visible escapes in every format.

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

/// `text` for HTML element content and quoted attribute values: the
/// characters that start markup or end an attribute become entities.
pub fn escape_html(text: &str) -> String {
    markup(&escape_terminal(text))
}

/// `text` for XML 1.0 content and quoted attributes. After
/// `escape_terminal` only characters that XML allows remain: no control
/// character at all (tab, CR and LF are shown as `\t`, `\r`, `\n`), and
/// the non-characters U+FFFE and U+FFFF are shown as escapes too.
pub fn escape_xml(text: &str) -> String {
    let shown = escape_terminal(text);
    let shown = shown.replace('\u{fffe}', "\\u{fffe}").replace('\u{ffff}', "\\u{ffff}");
    markup(&shown)
}

/// Multi-line `text` for XML element content: each line escaped as by
/// `escape_xml`, joined by real newlines.
pub fn escape_xml_lines(text: &str) -> String {
    text.lines().map(escape_xml).collect::<Vec<_>>().join("\n")
}

fn markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` for a Markdown paragraph or table cell: no raw HTML, no links,
/// images, emphasis or code spans, no `|` that would split a cell, and
/// everything on one line. Intraword underscores are left alone (they
/// cannot start emphasis), so ids like `abbrev_venue23` stay readable.
pub fn escape_md(text: &str) -> String {
    let shown = escape_terminal(text);
    let chars: Vec<char> = shown.chars().collect();
    let mut out = String::with_capacity(shown.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '[' | ']' | '|' | '~' | '!' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '_' => {
                let word =
                    |j: Option<usize>| j.and_then(|j| chars.get(j)).is_some_and(|c| c.is_alphanumeric());
                if !(word(i.checked_sub(1)) && word(Some(i + 1))) {
                    out.push('\\');
                }
                out.push('_');
            }
            c => out.push(c),
        }
    }
    out
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
    fn html_has_no_markup_left() {
        assert_eq!(
            escape_html("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(escape_html("a\x1b[31mb"), "a\\x1b[31mb");
    }

    #[test]
    fn xml_keeps_only_xml_characters() {
        assert_eq!(escape_xml("a\0b\x0bc<d>&\u{fffe}"), "a\\x00b\\x0bc&lt;d&gt;&amp;\\u{fffe}");
        assert_eq!(escape_xml_lines("one <1>\ntwo\x07"), "one &lt;1&gt;\ntwo\\x07");
    }

    #[test]
    fn markdown_cannot_inject_markup() {
        assert_eq!(escape_md("<img src=x onerror=alert(1)>"), "&lt;img src=x onerror=alert(1)&gt;");
        assert_eq!(escape_md("![t](http://x) a|b `c` *d*"), "\\!\\[t\\](http://x) a\\|b \\`c\\` \\*d\\*");
        assert_eq!(escape_md("abbrev_venue23 _x_ a\nb"), "abbrev_venue23 \\_x\\_ a\\\\nb");
    }

    #[test]
    fn invisible_reordering_is_shown() {
        assert_eq!(escape_terminal("ok\u{202e}txt.exe"), "ok\\u{202e}txt.exe");
        assert_eq!(escape_terminal("a\u{200b}b"), "a\\u{200b}b");
    }
}
