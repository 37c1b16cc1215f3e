//! The frame every page shares: the report's stylesheet and a Content
//! Security Policy that allows no script and no request beyond this
//! server's own pages, a trail of links back to the runs, and the helpers
//! that escape what came out of an environment and build the links.

use std::fmt::Write;

use cleanroom_report::{escape_html, STYLE};
use cleanroom_store::TrialRecord;

/// Sent as a header and repeated in the page: no script, no frame, no
/// fetch; forms submit only here.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; \
form-action 'self'; frame-ancestors 'none'";

const VIEW_STYLE: &str = "
nav { font-size: 14px; margin-bottom: 10px; color: #555; }
nav a { color: #0a58ca; }
a { color: #0a58ca; text-decoration: none; } a:hover { text-decoration: underline; }
pre { background: #f6f6f6; padding: 8px 10px; overflow-x: auto; font-size: 12px; line-height: 1.35;
      white-space: pre-wrap; word-break: break-word; }
pre.log span { display: block; } pre.log span:target { background: #fff3b0; }
pre.log a.ln { color: #999; display: inline-block; min-width: 4em; user-select: none; }
.why { background: #fbe5e1; border-left: 4px solid #c0392b; padding: 8px 12px; margin: 12px 0; }
.why.ok { background: #e3f4ea; border-left-color: #2e8b57; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 13px; }
.badge.passed { background: #e3f4ea; } .badge.failed { background: #fbe5e1; }
.badge.infra_error { background: #fff2cc; } .badge.skipped, .badge.running { background: #eeeeee; }
.badge.stopped { background: #fff2cc; } .badge.finished { background: #e3f4ea; }
details { margin: 4px 0; } details summary { cursor: pointer; }
.step { border-left: 3px solid #ddd; padding: 2px 10px; margin: 8px 0; }
.step.agent { border-left-color: #4a7bd0; } .step.user { border-left-color: #2e8b57; }
.step.system { border-left-color: #999; }
.step .head { font-size: 13px; color: #555; }
form.filters { font-size: 14px; margin: 8px 0; } form.filters label { margin-right: 10px; }
ul.tree { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; padding-left: 18px; }
.progress { font-weight: 600; }
";

/// A whole page. `refresh`: seconds after which the browser reloads it
/// (live progress of a running run), by a meta tag, without script.
pub fn page(title: &str, trail: &[(String, String)], body: &str, refresh: Option<u32>) -> String {
    let mut o = String::with_capacity(body.len() + 4096);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\"/>\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
    );
    if let Some(seconds) = refresh {
        let _ = writeln!(o, "<meta http-equiv=\"refresh\" content=\"{seconds}\"/>");
    }
    let _ = write!(
        o,
        "<title>{} · cleanroom</title>\n<style>{STYLE}{VIEW_STYLE}</style>\n</head>\n<body>\n<main>\n<nav><a href=\"/\">runs</a>",
        h(title)
    );
    for (href, text) in trail {
        let _ = write!(o, " › <a href=\"{}\">{}</a>", h(href), h(text));
    }
    o.push_str("</nav>\n");
    o.push_str(body);
    o.push_str("</main>\n</body>\n</html>\n");
    o
}

/// Escaped for HTML text and quoted attributes, on one line.
pub fn h(text: &str) -> String {
    escape_html(text)
}

/// One line of a log, escaped, its tabs kept as tabs: harmless in a
/// `<pre>`, and columns of a log stay aligned.
pub fn h_log_line(line: &str) -> String {
    line.split('\t').map(escape_html).collect::<Vec<_>>().join("\t")
}

/// Escaped, keeping line breaks and tabs (for `<pre>`).
pub fn h_lines(text: &str) -> String {
    let mut o = String::with_capacity(text.len() + 64);
    for (i, line) in text.lines().enumerate() {
        if i > 0 {
            o.push('\n');
        }
        o.push_str(&h_log_line(line));
    }
    o
}

/// Text in a `<pre>`, folded behind its first line when it is long.
pub fn folded_pre(text: &str, fold_over_lines: usize) -> String {
    let lines = text.lines().count();
    if lines <= fold_over_lines && text.len() <= 4000 {
        return format!("<pre>{}</pre>", h_lines(text));
    }
    let first = text.lines().next().unwrap_or_default();
    let first: String = first.chars().take(120).collect();
    format!(
        "<details><summary><code>{}</code> … ({lines} lines)</summary><pre>{}</pre></details>",
        h(&first),
        h_lines(text)
    )
}

/// One path segment of a URL, percent-encoded.
pub fn seg(text: &str) -> String {
    let mut o = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            o.push(b as char);
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

pub fn run_href(run_id: &str) -> String {
    format!("/runs/{}", seg(run_id))
}

pub fn trial_href(run_id: &str, r: &TrialRecord) -> String {
    format!("{}/trials/{}/{}/{}", run_href(run_id), seg(&r.task), seg(&r.agent_id), r.trial)
}

/// A file of the trial, `NAME` or `outputs/a/b`, each component encoded.
pub fn file_href(trial: &str, name: &str) -> String {
    let parts: Vec<String> = name.split('/').map(seg).collect();
    format!("{trial}/files/{}", parts.join("/"))
}

/// A query string of the given pairs, for filter links.
pub fn query(pairs: &[(&str, &str)]) -> String {
    let parts: Vec<String> = pairs.iter().map(|(k, v)| format!("{}={}", seg(k), seg(v))).collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}

/// A page that says what was not found, or what went wrong.
pub fn message(title: &str, text: &str) -> String {
    page(title, &[], &format!("<h1>{}</h1>\n<p>{}</p>\n", h(title), h(text)), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_line_keeps_its_tabs_and_nothing_else_raw() {
        assert_eq!(h_log_line("a\t<b>\x1b[31m"), "a\t&lt;b&gt;\\x1b[31m");
        assert_eq!(h_lines("x\ny\"z"), "x\ny&quot;z");
    }

    #[test]
    fn links_encode_every_segment() {
        assert_eq!(seg("a b/c?"), "a%20b%2Fc%3F");
        assert_eq!(file_href("/t", "outputs/a b/c"), "/t/files/outputs/a%20b/c");
        assert_eq!(query(&[("a", "r/x&y")]), "?a=r%2Fx%26y");
    }
}
