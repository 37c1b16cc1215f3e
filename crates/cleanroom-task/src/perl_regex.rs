//! A check's `regex` (Rust's `regex` syntax, multi-line mode) as a Perl
//! pattern with the same matches, for the checker a Harbor export runs
//! inside its environment (harbor_checks.pl compiles it with `/mu`).
//!
//! The two syntaxes mostly agree; where they differ, the pattern is
//! rewritten (`^`, `\v`, `\u{..}`, `\<`, `\b{start}`, POSIX classes) or,
//! where no rewrite says the same, refused with the reason.

/// POSIX classes as Rust reads them: ASCII only (Perl's are Unicode).
const POSIX_CLASSES: [(&str, &str); 14] = [
    ("alnum", "0-9A-Za-z"),
    ("alpha", "A-Za-z"),
    ("ascii", "\\x00-\\x7F"),
    ("blank", "\\t "),
    ("cntrl", "\\x00-\\x1F\\x7F"),
    ("digit", "0-9"),
    ("graph", "!-~"),
    ("lower", "a-z"),
    ("print", " -~"),
    ("punct", "!-/:-@\\[-`{-~"),
    ("space", "\\t\\n\\x0B\\f\\r "),
    ("upper", "A-Z"),
    ("word", "0-9A-Za-z_"),
    ("xdigit", "0-9A-Fa-f"),
];

/// `pattern`, which Rust's regex crate compiled, as a Perl pattern.
pub(crate) fn perl_regex(pattern: &str) -> Result<String, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let mut in_class = false;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '\\' => {
                let Some(&e) = chars.get(i) else { return Err("it ends with a lone backslash".into()) };
                i += 1;
                out.push_str(&escape(e, &chars, &mut i, in_class)?);
            }
            '[' if in_class => match posix_class(&chars, &mut i)? {
                Some(ranges) => out.push_str(ranges),
                None => return Err("a class inside a class, which Perl reads as a literal `[`".into()),
            },
            '[' => {
                in_class = true;
                out.push('[');
                if chars.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                // A `]` first in a class is literal in both.
                if chars.get(i) == Some(&']') {
                    out.push_str("\\]");
                    i += 1;
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '&' | '-' | '~' if in_class && chars.get(i) == Some(&c) => {
                return Err(format!("the class operation `{c}{c}`, which Perl does not have"));
            }
            '^' if !in_class => {
                // Start of the text or of a line, also after a final line
                // break (Perl's /m `^` is not there).
                out.push_str("(?<![^\\n])");
            }
            '(' if !in_class && chars.get(i) == Some(&'?') => {
                i += 1;
                out.push_str(&group_start(&chars, &mut i)?);
            }
            _ => out.push(c),
        }
    }
    Ok(out)
}

/// `[:name:]` inside a class (the `[` already read), as ASCII ranges; None
/// when `[` starts something else.
fn posix_class(chars: &[char], i: &mut usize) -> Result<Option<&'static str>, String> {
    if chars.get(*i) != Some(&':') {
        return Ok(None);
    }
    let rest: String = chars[*i + 1..].iter().collect();
    let Some(end) = rest.find(":]") else { return Ok(None) };
    let name = &rest[..end];
    if name.starts_with('^') {
        return Err(format!("the negated POSIX class [:{name}:], which Perl reads differently"));
    }
    let ranges = POSIX_CLASSES.iter().find(|(n, _)| *n == name).map(|(_, r)| *r);
    let Some(ranges) = ranges else { return Err(format!("the POSIX class [:{name}:]")) };
    *i += 1 + name.chars().count() + 2;
    Ok(Some(ranges))
}

/// The escape `\e` (and what it takes after it), in or out of a class.
fn escape(e: char, chars: &[char], i: &mut usize, in_class: bool) -> Result<String, String> {
    let braced = |i: &mut usize| -> Option<String> {
        if chars.get(*i) != Some(&'{') {
            return None;
        }
        let end = chars[*i..].iter().position(|c| *c == '}')?;
        let inner: String = chars[*i + 1..*i + end].iter().collect();
        *i += end + 1;
        Some(inner)
    };
    let fixed = |i: &mut usize, n: usize| -> Result<String, String> {
        let digits: String = chars.get(*i..*i + n).unwrap_or_default().iter().collect();
        if digits.len() != n || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("the escape \\{e} without {n} hex digits"));
        }
        *i += n;
        Ok(digits)
    };
    Ok(match e {
        'd' | 'D' | 's' | 'S' | 'w' | 'W' | 'n' | 't' | 'r' | 'f' | 'a' => format!("\\{e}"),
        // Perl's \v is a class of vertical space.
        'v' => "\\x0B".into(),
        'x' => match braced(i) {
            Some(hex) => format!("\\x{{{hex}}}"),
            None => format!("\\x{{{}}}", fixed(i, 2)?),
        },
        'u' | 'U' => match braced(i) {
            Some(hex) => format!("\\x{{{hex}}}"),
            None => format!("\\x{{{}}}", fixed(i, if e == 'u' { 4 } else { 8 })?),
        },
        'p' | 'P' => match braced(i) {
            Some(name) => format!("\\{e}{{{name}}}"),
            None => {
                let Some(&letter) = chars.get(*i) else { return Err(format!("a lone \\{e}")) };
                *i += 1;
                format!("\\{e}{letter}")
            }
        },
        'A' | 'z' | 'B' if !in_class => format!("\\{e}"),
        'b' if !in_class => match braced(i).as_deref() {
            None => "\\b".into(),
            Some("start") => "\\b(?=\\w)".into(),
            Some("end") => "\\b(?<=\\w)".into(),
            Some("start-half") => "(?<!\\w)".into(),
            Some("end-half") => "(?!\\w)".into(),
            Some(other) => return Err(format!("the assertion \\b{{{other}}}")),
        },
        '<' if !in_class => "\\b(?=\\w)".into(),
        '>' if !in_class => "\\b(?<=\\w)".into(),
        c if c.is_ascii_punctuation() || c == ' ' => format!("\\{c}"),
        c => return Err(format!("the escape \\{c}")),
    })
}

/// A group after its `(?`: a name, non-capturing, or flags. Flags `i` and
/// `s` mean the same in Perl; `m` and `u` are already on (the checker
/// compiles with `/mu`); the others, or turning `m` or `u` off, differ.
fn group_start(chars: &[char], i: &mut usize) -> Result<String, String> {
    if chars.get(*i) == Some(&'P') && chars.get(*i + 1) == Some(&'<') {
        *i += 1;
    }
    if chars.get(*i) == Some(&'<') {
        *i += 1;
        return Ok("(?<".into());
    }
    let end = chars[*i..].iter().position(|c| *c == ':' || *c == ')');
    let Some(end) = end else { return Err("an unclosed group".into()) };
    let flags: String = chars[*i..*i + end].iter().collect();
    let closer = chars[*i + end];
    *i += end + 1;
    let (on, off) = flags.split_once('-').unwrap_or((&flags, ""));
    if let Some(f) = off.chars().find(|f| !matches!(f, 'i' | 's')) {
        return Err(format!("the flag -{f}, which the checker cannot turn off"));
    }
    if let Some(f) = on.chars().find(|f| !matches!(f, 'i' | 's' | 'm' | 'u')) {
        return Err(format!("the flag {f}, which Perl does not read the same"));
    }
    let on: String = on.chars().filter(|f| matches!(f, 'i' | 's')).collect();
    let flags = if off.is_empty() { on } else { format!("{on}-{off}") };
    Ok(match (flags.is_empty(), closer) {
        (true, ')') => String::new(),
        (_, ')') => format!("(?{flags})"),
        (_, _) => format!("(?{flags}:"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_syntax_is_kept() {
        for same in [
            r"checksum: ([0-9a-f]+)",
            r"err=([-+0-9.eE]+)\s*$",
            r"(?P<n>\d+) (\w+)",
            r"(?:a|b)(c{2,3}?)",
            r"[^\]x](\.)",
            r"\x{41}(\x{263A})\p{Greek}\pL",
        ] {
            assert_eq!(perl_regex(same).unwrap(), same.replace("(?P<", "(?<"));
        }
    }

    #[test]
    fn differences_are_rewritten() {
        assert_eq!(perl_regex(r"^pi = (.*)$").unwrap(), r"(?<![^\n])pi = (.*)$");
        assert_eq!(perl_regex(r"[\v\u00e9](\U0001F600)\x41").unwrap(), r"[\x0B\x{00e9}](\x{0001F600})\x{41}");
        assert_eq!(perl_regex(r"\<(\w+)\b{end}").unwrap(), r"\b(?=\w)(\w+)\b(?<=\w)");
        assert_eq!(perl_regex(r"([[:digit:]x]+)").unwrap(), r"([0-9x]+)");
        assert_eq!(perl_regex(r"(?imu)(a)(?s-i:b)").unwrap(), r"(?i)(a)(?s-i:b)");
        assert_eq!(perl_regex(r"(?u)(a)").unwrap(), r"(a)");
        assert_eq!(perl_regex(r"[]a](b)").unwrap(), r"[\]a](b)");
    }

    #[test]
    fn what_perl_cannot_say_is_refused() {
        for (pattern, why) in [
            (r"(?x)(a b)", "the flag x"),
            (r"(?U)(a+)", "the flag U"),
            (r"(?-m)^(a)", "the flag -m"),
            (r"([a-z&&[^aeiou]])", "class operation `&&`"),
            (r"([a[bc]])", "a class inside a class"),
            (r"([[:^alpha:]])", "negated POSIX class"),
        ] {
            let e = perl_regex(pattern).unwrap_err();
            assert!(e.contains(why), "{pattern}: {e}");
        }
    }
}
