//! A minimal XML well-formedness check for tests: balanced elements, one
//! root, quoted attributes, only the predefined and numeric entities, and
//! only XML 1.0 characters. Not a parser: enough to know that a JUnit
//! consumer or an XHTML-tolerant browser will read the whole file.
//! (Shared with cleanroom-cli's report tests through `#[path]`.)

/// The element names in document order, or what is wrong and where.
pub fn check_xml(doc: &str) -> Result<Vec<String>, String> {
    if let Some(c) = doc
        .chars()
        .find(|&c| (c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || c == '\u{fffe}' || c == '\u{ffff}')
    {
        return Err(format!("character U+{:04X} is not allowed in XML", c as u32));
    }
    let mut stack: Vec<String> = Vec::new();
    let mut names = Vec::new();
    let mut roots = 0;
    let mut rest = doc;
    let at = |rest: &str| doc.len() - rest.len();
    while !rest.is_empty() {
        let lt = rest.find('<').unwrap_or(rest.len());
        check_text(&rest[..lt]).map_err(|e| format!("{e} at byte {}", at(rest)))?;
        if !stack.is_empty() || rest[..lt].trim().is_empty() {
        } else {
            return Err(format!("text outside the root element at byte {}", at(rest)));
        }
        rest = &rest[lt..];
        if rest.is_empty() {
            break;
        }
        let skip = |rest: &str, open: &str, close: &str| -> Option<Result<usize, String>> {
            rest.starts_with(open)
                .then(|| rest.find(close).map(|i| i + close.len()).ok_or(format!("unclosed {open}")))
        };
        if let Some(n) = skip(rest, "<?", "?>")
            .or_else(|| skip(rest, "<!--", "-->"))
            .or_else(|| skip(rest, "<!DOCTYPE", ">"))
        {
            rest = &rest[n?..];
            continue;
        }
        let gt = tag_end(rest).ok_or(format!("unclosed tag at byte {}", at(rest)))?;
        let tag = &rest[1..gt];
        rest = &rest[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let name = name.trim();
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
            continue;
        }
        let self_closing = tag.ends_with('/');
        let body = tag.trim_end_matches('/');
        let name_end = body.find(|c: char| c.is_whitespace()).unwrap_or(body.len());
        let name = &body[..name_end];
        if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        {
            return Err(format!("bad element name {name:?}"));
        }
        check_attributes(&body[name_end..]).map_err(|e| format!("<{name}>: {e}"))?;
        if stack.is_empty() {
            roots += 1;
        }
        names.push(name.to_string());
        if !self_closing {
            stack.push(name.to_string());
        }
    }
    if let Some(open) = stack.pop() {
        return Err(format!("<{open}> never closed"));
    }
    if roots != 1 {
        return Err(format!("{roots} root elements"));
    }
    Ok(names)
}

/// The index of the `>` that ends the tag at the start of `s`, outside
/// quoted attribute values.
fn tag_end(s: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in s.char_indices().skip(1) {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some(i),
            (None, '<') => return None,
            _ => {}
        }
    }
    None
}

fn check_attributes(mut s: &str) -> Result<(), String> {
    loop {
        s = s.trim_start();
        if s.is_empty() {
            return Ok(());
        }
        let eq = s.find('=').ok_or(format!("attribute without value in {s:?}"))?;
        let name = s[..eq].trim();
        if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ':')) {
            return Err(format!("bad attribute name {name:?}"));
        }
        let value = s[eq + 1..].trim_start();
        let q = value.chars().next().filter(|c| matches!(c, '"' | '\'')).ok_or("unquoted attribute value")?;
        let end = value[1..].find(q).ok_or("unterminated attribute value")?;
        let v = &value[1..1 + end];
        if v.contains('<') {
            return Err(format!("`<` in attribute {name}"));
        }
        check_text(v)?;
        s = &value[end + 2..];
    }
}

/// Every `&` starts an entity that XML knows, and no `]]>` appears.
fn check_text(s: &str) -> Result<(), String> {
    if s.contains("]]>") {
        return Err("`]]>` in text".into());
    }
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        rest = &rest[i + 1..];
        let end = rest.find(';').ok_or("`&` without `;`")?;
        let entity = &rest[..end];
        let ok = matches!(entity, "amp" | "lt" | "gt" | "quot" | "apos")
            || entity
                .strip_prefix("#x")
                .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
            || entity
                .strip_prefix('#')
                .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
        if !ok {
            return Err(format!("unknown entity &{entity};"));
        }
        rest = &rest[end + 1..];
    }
    Ok(())
}

#[test]
fn the_checker_catches_what_it_should() {
    assert!(check_xml("<?xml version=\"1.0\"?>\n<a x=\"1 &amp; 2\"><b/>t&lt;<c></c></a>\n").is_ok());
    for bad in [
        "<a><b></a>",
        "<a>x & y</a>",
        "<a x=1/>",
        "<a/><b/>",
        "<a>\u{1b}</a>",
        "<a x=\"<\"/>",
        "<a>&nbsp;</a>",
        "<a>",
    ] {
        assert!(check_xml(bad).is_err(), "{bad}");
    }
}
